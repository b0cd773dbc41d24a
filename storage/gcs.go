package storage

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"
)

// openGCS opens gs://bucket/prefix with Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the metadata server),
// or with no authentication when STORAGE_EMULATOR_HOST names an emulator
// (the Cloud Storage client honours that variable itself) or the URL says
// ?anonymous=true. The settings (WithSettings) come first: an endpoint, a
// service account key (file or JSON) instead of ADC, or anonymous.
//
// The client's own retries are turned off: the retrying Store does all the
// retrying.
func openGCS(ctx context.Context, loc location, settings Settings) (*bucketStore, error) {
	var opts []option.ClientOption
	anon := settings.Anonymous
	if v := loc.param("anonymous"); v != "" {
		a, err := strconv.ParseBool(v)
		if err != nil {
			return nil, invalidURL("bad value for anonymous", err)
		}
		anon = anon || a
	}
	switch {
	case anon:
		opts = append(opts, option.WithoutAuthentication())
	case settings.GoogleCredentialsFile != "":
		opts = append(opts, option.WithAuthCredentialsFile(option.ServiceAccount, settings.GoogleCredentialsFile))
	case settings.GoogleCredentialsJSON != "":
		opts = append(opts, option.WithAuthCredentialsJSON(option.ServiceAccount, []byte(settings.GoogleCredentialsJSON)))
	}
	if settings.Endpoint != "" {
		u, err := url.Parse(settings.Endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, invalidURL(fmt.Sprintf("bad GCS endpoint %q (want http(s)://host[:port][/path])", settings.Endpoint), nil)
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/storage/v1/"
		}
		opts = append(opts, option.WithEndpoint(u.String()))
	}
	client, err := storage.NewClient(ctx, opts...)
	if err != nil && settings.GoogleCredentialsJSON != "" {
		return nil, denied("unusable google_service_account_key", nil) // the cause may quote the key
	}
	if err != nil {
		return nil, denied("no usable Google credentials (set GOOGLE_APPLICATION_CREDENTIALS or run gcloud auth application-default login)", err)
	}
	client.SetRetry(storage.WithPolicy(storage.RetryNever))
	b, err := gcsblob.OpenBucket(ctx, nil, loc.bucket, &gcsblob.Options{Client: client})
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	probe := func(ctx context.Context) error {
		_, err := client.Bucket(loc.bucket).Attrs(ctx)
		return err
	}
	return &bucketStore{b: b, name: loc.bucket, prefix: loc.prefix, url: loc.String(), closeFn: client.Close, probe: probe}, nil
}
