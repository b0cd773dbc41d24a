package storage

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
)

// Option configures Open and ReadURL.
type Option func(*openConfig)

type openConfig struct {
	retry    RetryPolicy
	maxBytes int64
	settings Settings
	redirect func(*url.URL) error
	client   *HTTPClient
	direct   bool
}

// WithDirectWrites makes a local store (file://) write each object of
// 1 MiB or more past the page cache (O_DIRECT, then fsync as always): for
// bulk writers such as ingest, which would otherwise pay for filling and
// reclaiming cache pages they never read back. The objects are then not in
// the page cache, so their first read comes from the disk; for that reason
// it is off unless asked for. $LOCH_STORAGE_DIRECT_WRITES set to 0 or 1
// overrides it either way. Other schemes ignore it.
func WithDirectWrites(on bool) Option {
	return func(c *openConfig) { c.direct = on }
}

// WithRetryPolicy sets the retry policy of the returned store; zero fields
// take their defaults (see RetryPolicy), and Settings.RetryBudget, when
// set, replaces its Budget. RetryPolicy{MaxAttempts: 1} turns retries off.
func WithRetryPolicy(p RetryPolicy) Option {
	return func(c *openConfig) { c.retry = p }
}

// WithMaxBytes makes ReadURL refuse an object larger than n bytes (n > 0)
// with an error wrapping ErrTooLarge, without reading more than n+1 bytes
// of it where the size is not known beforehand (an http response without
// Content-Length). Zero or less means no limit, the default. Open ignores
// it.
func WithMaxBytes(n int64) Option {
	return func(c *openConfig) { c.maxBytes = n }
}

// WithRedirectCheck makes ReadURL call check with the target of each
// redirect of an http(s) read before following it. An error from check
// stops the read, which then fails with an error wrapping ErrPermission
// and check's error (not retried). The target's query is part of the URL
// check sees; an error should not quote it. Open ignores it.
func WithRedirectCheck(check func(target *url.URL) error) Option {
	return func(c *openConfig) { c.redirect = check }
}

// Open returns the Store at rawURL:
//
//	/data/ds, ./ds, file:///data/ds   a local directory, made on the first write
//	mem://name                        a memory bucket, shared by name within the process
//	s3://bucket/prefix                Amazon S3 or an S3-compatible store (MinIO)
//	gs://bucket/prefix                Google Cloud Storage
//	az://container/prefix             Azure Blob Storage
//
// The prefix, optional, is prepended to every key ("/" between). Query
// parameters, each optional:
//
//	s3://  endpoint=http://127.0.0.1:9000  region=us-east-1  use_path_style=true
//	       profile=name  anonymous=true  request_checksum_calculation=when_required
//	gs://  anonymous=true
//	az://  endpoint=https://account.blob.core.windows.net
//
// Credentials and endpoints otherwise come from each cloud's standard
// settings, never from the URL: for S3 the aws-sdk-go-v2 default chain
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE,
// the shared config and credentials files, AWS_REGION or
// AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL); path-style
// addressing is used when the endpoint is an IP address or localhost, when
// AWS_S3_USE_PATH_STYLE=true, or when the URL says use_path_style=true; the
// region defaults to us-east-1 when an endpoint is set and no region is.
// For GCS, Application Default Credentials, or STORAGE_EMULATOR_HOST for an
// emulator. For Azure, AZURE_STORAGE_CONNECTION_STRING, or
// AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or Azure AD credentials.
//
// Open does not contact the service: a missing bucket or refused
// credentials show up on the first operation, as errors wrapping
// ErrNotFound (naming the bucket) or ErrPermission. A malformed URL gives
// an error wrapping ErrInvalidURL; missing credentials may give
// ErrPermission at once.
//
// The store returned retries transient failures (see RetryStore, with
// EnvRetryPolicy unless WithRetryPolicy says otherwise, the budget
// replaced by Settings.RetryBudget when that is set): by default an
// operation rides out a store that stops answering for up to 60 s. It
// implements RetryCounter. Its URL() is the canonical form of rawURL, without
// secrets. The caller closes it.
func Open(ctx context.Context, rawURL string, opts ...Option) (Store, error) {
	policy, err := EnvRetryPolicy()
	if err != nil {
		return nil, &Error{Op: "open", URL: redact(rawURL), Err: fmt.Errorf("%w: %w", ErrInvalidURL, err)}
	}
	cfg := openConfig{retry: policy}
	for _, o := range opts {
		o(&cfg)
	}
	st, err := openRaw(ctx, rawURL, cfg.settings, cfg.direct)
	if err != nil {
		return nil, err
	}
	if cfg.settings.RetryBudget != 0 {
		cfg.retry.Budget = cfg.settings.RetryBudget
	}
	return NewRetryStore(st, cfg.retry), nil
}

// openRaw opens the backend store without retries, with settings (see
// WithSettings) and, for a local one, direct writes as asked (see
// WithDirectWrites).
func openRaw(ctx context.Context, rawURL string, settings Settings, direct bool) (Store, error) {
	loc, err := parseLocation(rawURL)
	if err != nil {
		return nil, &Error{Op: "open", URL: redact(rawURL), Err: err}
	}
	if err := settings.check(loc.scheme); err != nil {
		return nil, &Error{Op: "open", URL: loc.String(), Err: err}
	}
	var st Store
	switch loc.scheme {
	case "file":
		st, err = openLocal(loc, directWrites(direct))
	case "mem":
		st = openMem(loc)
	case "s3":
		st, err = openS3(ctx, loc, settings)
	case "gs":
		st, err = openGCS(ctx, loc, settings)
	case "az":
		st, err = openAzure(ctx, loc, settings)
	}
	if err != nil {
		return nil, &Error{Op: "open", URL: loc.String(), Err: err}
	}
	return st, nil
}

// readStores caches the stores ReadURL opens, one per bucket root, for the
// life of the process: opening an object-store client is costly, and link
// columns read many objects from few buckets.
var readStores struct {
	sync.Mutex
	m map[string]Store
}

// ReadURL reads one whole object given its full URL: a local path,
// file:///path/to/obj, mem://name/key, s3://bucket/key, gs://bucket/key,
// az://container/key (with the query parameters Open accepts), or an
// http:// or https:// URL (read with GET; its query is part of the object's
// name, and is hidden in errors, as it may hold a signature). It goes
// through the same layer as Open: the RetryPolicy (WithRetryPolicy, by
// default DefaultRetryPolicy) retries transient failures, an http 5xx, 408
// or 429 included, and bounds each attempt by its ReadTimeout. Clients for
// object stores are opened once per bucket (and query) and kept for the
// life of the process. A missing object gives an error wrapping
// ErrNotFound; one larger than WithMaxBytes, ErrTooLarge.
func ReadURL(ctx context.Context, rawURL string, opts ...Option) ([]byte, error) {
	cfg := configOf(opts)
	if isHTTP(rawURL) {
		origin, key, err := splitHTTP(rawURL)
		if err != nil {
			return nil, &Error{Op: "get", URL: redact(rawURL), Err: err}
		}
		b, err := NewRetryStore(&httpStore{origin: origin, maxBytes: cfg.maxBytes, redirect: cfg.redirect, client: cfg.client}, cfg.retry).Get(ctx, key)
		if err != nil {
			return nil, &Error{Op: "get", URL: redact(rawURL), Err: err}
		}
		return b, nil
	}
	loc, err := parseLocation(rawURL)
	if err != nil {
		return nil, &Error{Op: "get", URL: redact(rawURL), Err: err}
	}
	if loc.scheme == "file" {
		dir, key, err := Split(rawURL)
		if err != nil {
			return nil, &Error{Op: "get", URL: redact(rawURL), Err: err}
		}
		st, err := Open(ctx, dir, opts...)
		if err != nil {
			return nil, err
		}
		defer st.Close()
		return getLimited(ctx, st, key, cfg.maxBytes)
	}
	if loc.prefix == "" {
		return nil, &Error{Op: "get", URL: loc.String(), Err: invalidURL("URL names no object", nil)}
	}
	key := strings.TrimSuffix(loc.prefix, "/")
	loc.prefix = ""
	root := loc.String()
	readStores.Lock()
	raw, ok := readStores.m[root]
	if !ok {
		raw, err = openRaw(ctx, root, Settings{}, false)
		if err != nil {
			readStores.Unlock()
			return nil, err
		}
		if readStores.m == nil {
			readStores.m = make(map[string]Store)
		}
		readStores.m[root] = raw
	}
	readStores.Unlock()
	return getLimited(ctx, NewRetryStore(raw, cfg.retry), key, cfg.maxBytes)
}

// getLimited gets the object key of st, refusing it when it is larger
// than limit (> 0) by its attributes, before reading it, or as read.
func getLimited(ctx context.Context, st Store, key string, limit int64) ([]byte, error) {
	if limit > 0 {
		a, err := st.Stat(ctx, key)
		if err != nil {
			return nil, err
		}
		if a.Size > limit {
			return nil, &Error{Op: "get", URL: st.URL(), Key: key, Err: tooLarge(a.Size, limit)}
		}
	}
	b, err := st.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, &Error{Op: "get", URL: st.URL(), Key: key, Err: tooLarge(int64(len(b)), limit)}
	}
	return b, nil
}

func configOf(opts []Option) openConfig {
	cfg := openConfig{retry: DefaultRetryPolicy()}
	for _, o := range opts {
		o(&cfg)
	}
	return cfg
}
