package storage

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"gocloud.dev/blob/s3blob"
)

// openS3 opens s3://bucket/prefix through the aws-sdk-go-v2 default
// configuration chain (environment, shared config and credentials files,
// AWS_PROFILE, web identity, IMDS), with the URL's parameters on top, and
// the settings (WithSettings) on top of those.
//
// The SDK's own retries are turned off: the retrying Store does all the
// retrying, so that attempts are bounded and counted in one place.
func openS3(ctx context.Context, loc location, settings Settings) (*bucketStore, error) {
	opts, err := s3LoadOptions(loc, settings)
	if err != nil {
		return nil, err
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}

	endpoint := settings.Endpoint
	if endpoint == "" {
		endpoint = loc.param("endpoint")
	}
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	}
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL")
	}
	pathStyle, err := usePathStyle(endpoint, loc.param("use_path_style"))
	if err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		if endpoint == "" {
			return nil, invalidURL("no AWS region: set AWS_REGION or add ?region= to the URL", nil)
		}
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.Retryer = aws.NopRetryer{}
		o.UsePathStyle = pathStyle
		// An object without a checksum (most, on S3-compatible stores) is
		// read as any other; the SDK would log a warning to stderr for each.
		o.DisableLogOutputChecksumValidationSkipped = true
		// Responses are not checksummed by the SDK (see "Integrity" in
		// the package documentation): every object loch reads carries its
		// own CRC-32C or content hash, checked by the reader.
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	})
	b, err := s3blob.OpenBucket(ctx, client, loc.bucket, &s3blob.Options{
		RequestChecksumCalculation: cfg.RequestChecksumCalculation,
	})
	if err != nil {
		return nil, err
	}
	probe := func(ctx context.Context) error {
		_, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(loc.bucket)})
		return err
	}
	return &bucketStore{b: b, name: loc.bucket, prefix: loc.prefix, url: loc.String(), probe: probe}, nil
}

// s3LoadOptions are the AWS configuration options of the URL's parameters
// and the settings: region, credentials, profile, anonymous access and
// checksums; retries are loch's own.
func s3LoadOptions(loc location, settings Settings) ([]func(*config.LoadOptions) error, error) {
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if r := loc.param("region"); r != "" {
		opts = append(opts, config.WithRegion(r))
	}
	if settings.Region != "" {
		opts = append(opts, config.WithRegion(settings.Region))
	}
	if settings.AccessKeyID != "" {
		opts = append(opts, config.WithCredentialsProvider(aws.CredentialsProviderFunc(
			func(context.Context) (aws.Credentials, error) {
				return aws.Credentials{AccessKeyID: settings.AccessKeyID, SecretAccessKey: settings.SecretAccessKey,
					SessionToken: settings.SessionToken, Source: "loch storage settings"}, nil
			})))
	}
	if settings.Anonymous {
		opts = append(opts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	if p := loc.param("profile"); p != "" {
		opts = append(opts, config.WithSharedConfigProfile(p))
	}
	if v := loc.param("anonymous"); v != "" {
		anon, err := strconv.ParseBool(v)
		if err != nil {
			return nil, invalidURL("bad value for anonymous", err)
		}
		if anon {
			opts = append(opts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
		}
	}
	if v := loc.param("request_checksum_calculation"); v != "" {
		switch strings.ToLower(v) {
		case "when_supported":
			opts = append(opts, config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenSupported))
		case "when_required":
			opts = append(opts, config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired))
		default:
			return nil, invalidURL(fmt.Sprintf("bad value %q for request_checksum_calculation (want when_supported or when_required)", v), nil)
		}
	}
	return opts, nil
}

// usePathStyle decides between path-style (http://host/bucket/key) and
// virtual-host (http://bucket.host/key) addressing: path style when the
// endpoint is an IP address or localhost, where virtual hosts cannot work,
// or when AWS_S3_USE_PATH_STYLE=true; the URL's use_path_style, when
// given, overrides both.
func usePathStyle(endpoint, param string) (bool, error) {
	pathStyle := false
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return false, invalidURL(fmt.Sprintf("bad S3 endpoint %q (want http(s)://host[:port])", endpoint), nil)
		}
		if host := u.Hostname(); host == "localhost" || net.ParseIP(host) != nil {
			pathStyle = true
		}
	}
	if v, _ := strconv.ParseBool(os.Getenv("AWS_S3_USE_PATH_STYLE")); v {
		pathStyle = true
	}
	if param != "" {
		b, err := strconv.ParseBool(param)
		if err != nil {
			return false, invalidURL("bad value for use_path_style", err)
		}
		pathStyle = b
	}
	return pathStyle, nil
}
