package storage

import (
	"context"
	"strconv"

	"cloud.google.com/go/storage"
	"gocloud.dev/blob/gcsblob"
	"google.golang.org/api/option"
)

// openGCS opens gs://bucket/prefix with Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's ADC file, the metadata server),
// or with no authentication when STORAGE_EMULATOR_HOST names an emulator
// (the Cloud Storage client honours that variable itself) or the URL says
// ?anonymous=true.
//
// The client's own retries are turned off: the retrying Store does all the
// retrying.
func openGCS(ctx context.Context, loc location) (*bucketStore, error) {
	var opts []option.ClientOption
	if v := loc.param("anonymous"); v != "" {
		anon, err := strconv.ParseBool(v)
		if err != nil {
			return nil, invalidURL("bad value for anonymous", err)
		}
		if anon {
			opts = append(opts, option.WithoutAuthentication())
		}
	}
	client, err := storage.NewClient(ctx, opts...)
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
