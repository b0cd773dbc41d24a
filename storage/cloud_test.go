package storage_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
)

// requireBucketMissing checks that every operation on st names the missing
// bucket and wraps ErrNotFound.
func requireBucketMissing(t *testing.T, st storage.Store, bucket string) {
	t.Helper()
	ctx := context.Background()
	want := fmt.Sprintf("bucket %q not found", bucket)
	_, err := st.Get(ctx, "k")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, want)
	_, err = st.Stat(ctx, "k")
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, want)
	err = st.Put(ctx, "k", []byte("x"))
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, want)
	err = st.List(ctx, "", func(storage.Attrs) error { return nil })
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.ErrorContains(t, err, want)
	err = st.Delete(ctx, "k")
	require.ErrorIs(t, err, storage.ErrNotFound, "deleting from a missing bucket is an error")
	require.Equal(t, int64(0), storage.Retries(st), "not found is not retried")
}

func TestS3MissingBucket(t *testing.T) {
	b := testserver.MinIO(t)
	st := open(t, strings.Replace(b.URL, b.Name, "loch-no-such-bucket", 1))
	defer st.Close()
	requireBucketMissing(t, st, "loch-no-such-bucket")
}

func TestGCSMissingBucket(t *testing.T) {
	testserver.GCS(t)
	st := open(t, "gs://loch-no-such-bucket/prefix")
	defer st.Close()
	requireBucketMissing(t, st, "loch-no-such-bucket")
}

func TestAzureMissingContainer(t *testing.T) {
	testserver.Azurite(t)
	st := open(t, "az://loch-no-such-container/prefix")
	defer st.Close()
	requireBucketMissing(t, st, "loch-no-such-container")
}

// requireRefused checks that st's credentials are refused, with an error
// that names the bucket and shows no secret, at once.
func requireRefused(t *testing.T, st storage.Store, bucket, secret string) {
	t.Helper()
	ctx := context.Background()
	for name, op := range map[string]func() error{
		"get":  func() error { _, err := st.Get(ctx, "k"); return err },
		"put":  func() error { return st.Put(ctx, "k", []byte("x")) },
		"list": func() error { return st.List(ctx, "", func(storage.Attrs) error { return nil }) },
	} {
		err := op()
		require.ErrorIs(t, err, storage.ErrPermission, name)
		require.ErrorContains(t, err, fmt.Sprintf("permission denied on bucket %q", bucket), name)
		require.NotContains(t, err.Error(), secret, name)
	}
	require.Equal(t, int64(0), storage.Retries(st), "permission errors are not retried")
}

func TestS3WrongCredentials(t *testing.T) {
	b := testserver.MinIO(t)
	t.Run("secret", func(t *testing.T) {
		t.Setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret-4f2a")
		st := open(t, b.URL)
		defer st.Close()
		requireRefused(t, st, b.Name, "not-the-secret-4f2a")
	})
	t.Run("access key", func(t *testing.T) {
		t.Setenv("AWS_ACCESS_KEY_ID", "nobody")
		st := open(t, b.URL)
		defer st.Close()
		requireRefused(t, st, b.Name, testserver.MinIOSecretKey)
	})
}

func TestAzureWrongKey(t *testing.T) {
	b := testserver.Azurite(t)
	wrong := "d3JvbmcgYnV0IHZhbGlkIGJhc2U2NCBrZXkgZm9yIGF6dXJpdGU="
	t.Setenv("AZURE_STORAGE_CONNECTION_STRING", strings.Replace(b.Env["AZURE_STORAGE_CONNECTION_STRING"], testserver.AzuriteKey, wrong, 1))
	st := open(t, b.URL)
	defer st.Close()
	requireRefused(t, st, b.Name, wrong)
}

func TestS3EndpointFromEnvironment(t *testing.T) {
	b := testserver.MinIO(t)
	// No endpoint in the URL: AWS_ENDPOINT_URL_S3 names it, and path-style
	// addressing follows from its IP address.
	t.Setenv("AWS_ENDPOINT_URL_S3", b.Endpoint)
	st := open(t, "s3://"+b.Name+"/env")
	defer st.Close()
	ctx := context.Background()
	require.NoError(t, st.Put(ctx, "k", []byte("v")))
	got, err := st.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	require.Equal(t, "s3://"+b.Name+"/env", st.URL())
}

func TestS3PathStyleFromEnvironment(t *testing.T) {
	b := testserver.MinIO(t)
	// "localhost" would get path style by itself; AWS_S3_USE_PATH_STYLE
	// is checked with the URL forcing virtual hosts off and on.
	ep := strings.Replace(b.Endpoint, "127.0.0.1", "localhost", 1)
	ctx := context.Background()
	st := open(t, "s3://"+b.Name+"/p?endpoint="+ep)
	require.NoError(t, st.Put(ctx, "k", []byte("v")))
	require.NoError(t, st.Close())

	// Forced virtual-host style cannot reach <bucket>.localhost.
	st = open(t, "s3://"+b.Name+"/p?use_path_style=false&endpoint="+ep)
	st = storage.NewRetryStore(st.(*storage.RetryStore).Unwrap(), storage.RetryPolicy{MaxAttempts: 1})
	_, err := st.Get(ctx, "k")
	require.Error(t, err)
	require.NoError(t, st.Close())

	t.Setenv("AWS_S3_USE_PATH_STYLE", "true")
	st = open(t, "s3://"+b.Name+"/p?endpoint="+ep)
	got, err := st.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	require.NoError(t, st.Close())
}

func TestS3UnreachableEndpointIsRetried(t *testing.T) {
	testserver.MinIO(t) // for its credentials
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	st, err := storage.Open(context.Background(), "s3://bkt/p?endpoint=http://"+addr,
		storage.WithRetryPolicy(storage.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}))
	require.NoError(t, err)
	defer st.Close()
	_, err = st.Get(context.Background(), "k")
	require.ErrorIs(t, err, storage.ErrTransient)
	require.Regexp(t, `gave up after \S+ \(3 attempts\)`, err.Error())
	require.Equal(t, int64(2), storage.Retries(st))
}

func TestReadURL(t *testing.T) {
	ctx := context.Background()
	put := func(t *testing.T, storeURL, key, data string) {
		st := open(t, storeURL)
		defer st.Close()
		require.NoError(t, st.Put(ctx, key, []byte(data)))
	}
	t.Run("local", func(t *testing.T) {
		dir := t.TempDir()
		put(t, dir, "img/a.jpg", "local")
		for _, u := range []string{dir + "/img/a.jpg", "file://" + dir + "/img/a.jpg"} {
			got, err := storage.ReadURL(ctx, u)
			require.NoError(t, err, u)
			require.Equal(t, "local", string(got))
		}
		_, err := storage.ReadURL(ctx, dir+"/img/missing.jpg")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
	t.Run("mem", func(t *testing.T) {
		put(t, "mem://readurl/x", "y/z", "mem")
		got, err := storage.ReadURL(ctx, "mem://readurl/x/y/z")
		require.NoError(t, err)
		require.Equal(t, "mem", string(got))
	})
	t.Run("s3", func(t *testing.T) {
		b := testserver.MinIO(t)
		put(t, b.URL, "dir/obj", "s3")
		u := strings.Replace(b.URL, "/prefix?", "/prefix/dir/obj?", 1)
		got, err := storage.ReadURL(ctx, u)
		require.NoError(t, err)
		require.Equal(t, "s3", string(got))
		_, err = storage.ReadURL(ctx, strings.Replace(u, "/obj?", "/nothing?", 1))
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
	for _, tc := range []struct {
		scheme string
		server func(testing.TB) testserver.Bucket
	}{{"gs", testserver.GCS}, {"az", testserver.Azurite}} {
		t.Run(tc.scheme, func(t *testing.T) {
			b := tc.server(t)
			put(t, b.URL, "dir/obj", tc.scheme)
			got, err := storage.ReadURL(ctx, b.URL+"/dir/obj")
			require.NoError(t, err)
			require.Equal(t, tc.scheme, string(got))
		})
	}
	t.Run("no object", func(t *testing.T) {
		_, err := storage.ReadURL(ctx, "s3://bucket-only")
		require.ErrorIs(t, err, storage.ErrInvalidURL)
		_, err = storage.ReadURL(ctx, "s3://bkt/a/../../etc/passwd")
		require.ErrorIs(t, err, storage.ErrInvalidURL)
	})
}

// TestS3ReadsWithoutChecksumQuietly: reading an object stored without a
// checksum (as other clients and S3-compatible stores leave most) writes
// nothing to standard error; the SDK logged a warning per read.
func TestS3ReadsWithoutChecksumQuietly(t *testing.T) {
	ctx := context.Background()
	b := testserver.MinIO(t)
	plain := strings.Replace(b.URL, "?", "?request_checksum_calculation=when_required&", 1)
	st, err := storage.Open(ctx, plain)
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, "plain", []byte("no checksum")))
	st.Close()

	r, w, err := os.Pipe()
	require.NoError(t, err)
	stderr := os.Stderr
	os.Stderr = w // the SDK's logger takes os.Stderr when a store is opened
	st, err = storage.Open(ctx, b.URL)
	if err == nil {
		var got []byte
		got, err = st.Get(ctx, "plain")
		require.Equal(t, "no checksum", string(got))
		st.Close()
	}
	os.Stderr = stderr
	w.Close()
	require.NoError(t, err)
	logged, _ := io.ReadAll(r)
	require.Empty(t, string(logged))
}

// TestS3ChecksumsOnlyOnUpload: on S3 the SDK sends a checksum with each
// upload, which the server verifies, and does not ask for one with each
// read (loch's readers check their own, storage's "Integrity"). A proxy in
// front of MinIO records the headers.
func TestS3ChecksumsOnlyOnUpload(t *testing.T) {
	ctx := context.Background()
	b := testserver.MinIO(t)
	target, err := url.Parse(b.Endpoint)
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[string][]http.Header{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Method] = append(seen[r.Method], r.Header.Clone())
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	st, err := storage.Open(ctx, strings.Replace(b.URL, b.Endpoint, srv.URL, 1))
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Put(ctx, "k", []byte("checked by its reader")))
	got, err := st.Get(ctx, "k")
	require.NoError(t, err)
	require.Equal(t, "checked by its reader", string(got))

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen[http.MethodPut])
	for _, h := range seen[http.MethodPut] {
		require.True(t, hasChecksum(h), "upload without a checksum: %v", h)
	}
	require.NotEmpty(t, seen[http.MethodGet])
	for _, h := range seen[http.MethodGet] {
		require.Empty(t, h.Get("X-Amz-Checksum-Mode"), "a read asked for the object's checksum")
	}
}

// hasChecksum reports whether a request carries a checksum of its body, in a
// header or announced as a trailer.
func hasChecksum(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, "X-Amz-Checksum-") || strings.Contains(h.Get("X-Amz-Trailer"), "checksum") {
			return true
		}
	}
	return false
}
