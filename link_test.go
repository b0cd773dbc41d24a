package loch

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// linkServer serves /ok (a body), /big (more than the test's limit, with
// Content-Length), /stream (more than the limit, chunked, without
// Content-Length), /flaky (503 twice, then a body), /gone (404) and
// /secret (403). It counts the requests to /flaky.
func linkServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var flaky atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello over http")) })
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "4096")
		w.Write(bytes.Repeat([]byte("x"), 4096))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, r *http.Request) {
		for range 64 {
			w.Write(bytes.Repeat([]byte("y"), 1024))
			w.(http.Flusher).Flush()
		}
	})
	mux.HandleFunc("/flaky", func(w http.ResponseWriter, r *http.Request) {
		if flaky.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("third time lucky"))
	})
	mux.HandleFunc("/gone", http.NotFound)
	mux.HandleFunc("/secret", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) })
	srv := httptest.NewServer(mux) // listens on 127.0.0.1
	t.Cleanup(srv.Close)
	return srv, &flaky
}

// linkDataset makes a dataset at DIR/ds whose link column "ref" holds
// links, in order, opened again with opts.
func linkDataset(t *testing.T, links []string, opts ...Option) *ColumnReader {
	t.Helper()
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}}})
	for _, l := range links {
		require.NoError(t, d.Append(ctx, Row{"ref": String(l)}))
	}
	_, err := d.Commit(ctx, "links")
	require.NoError(t, err)
	r, err := Open(ctx, dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	col, err := r.Column("ref")
	require.NoError(t, err)
	return col
}

var fastRetry = storage.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, ReadTimeout: 5 * time.Second}

func TestLinkFetchHTTP(t *testing.T) {
	srv, flaky := linkServer(t)
	col := linkDataset(t, []string{srv.URL + "/ok", srv.URL + "/flaky", srv.URL + "/gone", srv.URL + "/secret",
		srv.URL + "/big", srv.URL + "/stream", srv.URL + "/ok?sig=s3cr3t-token"},
		WithLinkPolicy(LinkPolicy{MaxBytes: 2048, Retry: fastRetry}))

	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, "hello over http", string(b))

	b, err = col.Fetch(ctx, 1)
	require.NoError(t, err, "503s are retried")
	require.Equal(t, "third time lucky", string(b))
	require.EqualValues(t, 3, flaky.Load())

	_, err = col.Fetch(ctx, 2)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = col.Fetch(ctx, 3)
	require.ErrorIs(t, err, ErrPermission)

	_, err = col.Fetch(ctx, 4)
	require.ErrorContains(t, err, "4096 bytes", "refused by its Content-Length")
	for _, row := range []int64{4, 5} {
		_, err = col.Fetch(ctx, row)
		require.ErrorIs(t, err, storage.ErrTooLarge, "row %d", row)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.Contains(t, err.Error(), "over the limit of 2048")
	}

	b, err = col.Fetch(ctx, 6)
	require.NoError(t, err)
	require.Equal(t, "hello over http", string(b))
}

func TestLinkFetchHTTPErrorsHideQuery(t *testing.T) {
	srv, _ := linkServer(t)
	col := linkDataset(t, []string{srv.URL + "/gone?X-Amz-Signature=s3cr3t"}, WithLinkPolicy(LinkPolicy{Retry: fastRetry}))
	_, err := col.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrNotFound)
	require.NotContains(t, err.Error(), "s3cr3t")
}

func TestLinkFetchHTTPTimeout(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(block); srv.Close() })
	p := fastRetry
	p.MaxAttempts, p.ReadTimeout = 2, 50*time.Millisecond
	col := linkDataset(t, []string{srv.URL + "/slow"}, WithLinkPolicy(LinkPolicy{Retry: p}))
	_, err := col.Fetch(ctx, 0)
	require.Error(t, err)
	require.Regexp(t, `gave up after \S+ \(2 attempts\)`, err.Error())
}

func TestLinkPolicySchemes(t *testing.T) {
	srv, _ := linkServer(t)
	col := linkDataset(t, []string{srv.URL + "/ok", "mem://bucket/key"},
		WithLinkPolicy(LinkPolicy{Schemes: []string{"https"}, Retry: fastRetry}))
	_, err := col.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission)
	require.Contains(t, err.Error(), "http:// links are not allowed (allowed: https")
	_, err = col.Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrPermission, "mem:// is not a default scheme")
}

func TestLinkEmpty(t *testing.T) {
	col := linkDataset(t, []string{"", "  "})
	for i := range int64(2) {
		_, err := col.Fetch(ctx, i)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.ErrorContains(t, err, "the link is empty")
	}
}

// TestLinkPolicyRefusesWhatCannotMeanWhatItSays: entries that look like
// rules but match nothing (a "file" scheme, a host written as a URL, an
// empty root) are refused when the dataset is opened.
func TestLinkPolicyRefusesWhatCannotMeanWhatItSays(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	d, err := Create(ctx, dir, schema.Schema{Columns: []schema.Column{{Name: "l", Kind: schema.Link}}})
	require.NoError(t, err)
	d.Close()
	for _, tc := range []struct {
		p    LinkPolicy
		want string
	}{
		{LinkPolicy{Schemes: []string{"https", "file"}}, `scheme "file": want http, https, s3, gs, az or mem; local files are allowed by the local roots`},
		{LinkPolicy{Hosts: []string{"http://example.com"}}, `host "http://example.com": want a host name or address`},
		{LinkPolicy{LocalRoots: []string{""}}, "an empty local root"},
	} {
		_, err := Open(ctx, dir, WithLinkPolicy(tc.p))
		require.ErrorIs(t, err, ErrInvalidArgument, tc.want)
		require.ErrorContains(t, err, "link policy: "+tc.want)
	}
	ok, err := Open(ctx, dir, WithLinkPolicy(LinkPolicy{Schemes: []string{"https"}, Hosts: []string{"example.com:8443"}, LocalRoots: []string{"/data"}}))
	require.NoError(t, err)
	ok.Close()
}

func TestLinkPolicyLocalRoots(t *testing.T) {
	base := t.TempDir()
	allowed := filepath.Join(base, "allowed")
	outside := filepath.Join(base, "outside")
	require.NoError(t, os.MkdirAll(allowed, 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	inFile := filepath.Join(allowed, "in.bin")
	outFile := filepath.Join(outside, "secret.bin")
	require.NoError(t, os.WriteFile(inFile, []byte("inside"), 0o644))
	require.NoError(t, os.WriteFile(outFile, []byte("secret"), 0o644))
	escape := filepath.Join(allowed, "escape")
	require.NoError(t, os.Symlink(outFile, escape))

	links := []string{
		inFile,                               // 0: under the root
		"file://" + filepath.ToSlash(inFile), // 1: the same as a file URL
		outFile,                              // 2: outside
		filepath.Join(allowed, "..", "outside", "secret.bin"), // 3: outside through ..
		escape,                                // 4: a symbolic link leading outside
		"/etc/passwd",                         // 5: far outside
		filepath.Join(allowed, "missing.bin"), // 6: under the root, missing
		allowed,                               // 7: a directory
	}
	col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{LocalRoots: []string{allowed}}))
	for _, row := range []int64{0, 1} {
		b, err := col.Fetch(ctx, row)
		require.NoError(t, err, "row %d", row)
		require.Equal(t, "inside", string(b))
	}
	for _, row := range []int64{2, 3, 4, 5} {
		_, err := col.Fetch(ctx, row)
		require.ErrorIs(t, err, ErrPermission, "row %d", row)
		require.Contains(t, err.Error(), "outside the allowed roots", "row %d", row)
		require.NotContains(t, err.Error(), "secret\"", "row %d", row)
	}
	_, err := col.Fetch(ctx, 6)
	require.ErrorIs(t, err, ErrNotFound)
	_, err = col.Fetch(ctx, 7)
	require.ErrorIs(t, err, ErrInvalidArgument)

	// No local roots: no local file at all.
	none := linkDataset(t, []string{inFile}, WithLinkPolicy(LinkPolicy{LocalRoots: []string{}}))
	_, err = none.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission)
	require.Contains(t, err.Error(), "links to local files are not allowed")
}

// TestLinkPolicyDefault: by default a local dataset may link to files
// beside it (under its parent directory), not elsewhere; too-large local
// files are refused too.
func TestLinkPolicyDefault(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}}})
	beside := filepath.Join(filepath.Dir(dir), "img.bin")
	require.NoError(t, os.WriteFile(beside, []byte("beside"), 0o644))
	elsewhere := filepath.Join(t.TempDir(), "other.bin")
	require.NoError(t, os.WriteFile(elsewhere, []byte("elsewhere"), 0o644))
	big := filepath.Join(filepath.Dir(dir), "big.bin")
	require.NoError(t, os.WriteFile(big, make([]byte, 100), 0o644))
	for _, l := range []string{beside, elsewhere, big} {
		require.NoError(t, d.Append(ctx, Row{"ref": String(l)}))
	}
	_, err := d.Commit(ctx, "links")
	require.NoError(t, err)
	col, err := d.Column("ref")
	require.NoError(t, err)
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, "beside", string(b))
	_, err = col.Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrPermission)

	r, err := Open(ctx, dir, WithLinkPolicy(LinkPolicy{MaxBytes: 99}))
	require.NoError(t, err)
	defer r.Close()
	rc, err := r.Column("ref")
	require.NoError(t, err)
	_, err = rc.Fetch(ctx, 2)
	require.ErrorIs(t, err, storage.ErrTooLarge)
	_, err = rc.Fetch(ctx, 0)
	require.NoError(t, err)
}

// TestLinkPolicyRemoteDataset: a dataset on object storage (here a memory
// bucket) may link to no local file by default.
func TestLinkPolicyRemoteDataset(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f.bin")
	require.NoError(t, os.WriteFile(f, []byte("local"), 0o644))
	url := "mem://" + strings.ReplaceAll(t.Name(), "/", "-")
	d, err := Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}}})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.Append(ctx, Row{"ref": String(f)}))
	_, err = d.Commit(ctx, "a local link")
	require.NoError(t, err)
	col, err := d.Column("ref")
	require.NoError(t, err)
	_, err = col.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission)
	require.True(t, errors.Is(err, ErrPermission))
}

// TestLinkRedirects: a redirect is followed only to a scheme and host that
// the policy allows; a refused one is not retried, reaches nothing, and
// its error hides the target's query.
func TestLinkRedirects(t *testing.T) {
	var away atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		away.Add(1)
		w.Write([]byte("from elsewhere"))
	}))
	t.Cleanup(other.Close)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("tls")) }))
	t.Cleanup(secure.Close)
	// other as "localhost:port": another host name than 127.0.0.1.
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	var bounces atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("home")) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/away", func(w http.ResponseWriter, r *http.Request) {
		bounces.Add(1)
		http.Redirect(w, r, otherURL+"/x?sig=s3cr3t-token", http.StatusFound)
	})
	mux.HandleFunc("/secure", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secure.URL+"/x", http.StatusMovedPermanently)
	})
	home := httptest.NewServer(mux)
	t.Cleanup(home.Close)
	links := []string{home.URL + "/same", home.URL + "/away", otherURL + "/x", home.URL + "/secure"}

	t.Run("hosts", func(t *testing.T) {
		away.Store(0)
		bounces.Store(0)
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Hosts: []string{"127.0.0.1"}, Retry: fastRetry}))
		b, err := col.Fetch(ctx, 0)
		require.NoError(t, err, "a redirect within an allowed host")
		require.Equal(t, "home", string(b))

		_, err = col.Fetch(ctx, 1)
		require.ErrorIs(t, err, ErrPermission)
		require.ErrorContains(t, err, "redirect refused")
		require.ErrorContains(t, err, "host \"localhost:")
		require.NotContains(t, err.Error(), "s3cr3t")
		require.EqualValues(t, 1, bounces.Load(), "a refused redirect is not retried")

		_, err = col.Fetch(ctx, 2)
		require.ErrorIs(t, err, ErrPermission, "a link straight to a host not allowed")
		require.EqualValues(t, 0, away.Load(), "nothing reached the host not allowed")
	})

	t.Run("schemes", func(t *testing.T) {
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Schemes: []string{"http"}, Retry: fastRetry}))
		_, err := col.Fetch(ctx, 3)
		require.ErrorIs(t, err, ErrPermission)
		require.ErrorContains(t, err, "https:// links are not allowed")
	})

	t.Run("no hosts", func(t *testing.T) {
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Hosts: []string{}, Retry: fastRetry}))
		_, err := col.Fetch(ctx, 0)
		require.ErrorIs(t, err, ErrPermission)
		require.ErrorContains(t, err, "allowed: none")
	})

	t.Run("default", func(t *testing.T) {
		away.Store(0)
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Retry: fastRetry}))
		b, err := col.Fetch(ctx, 1)
		require.NoError(t, err, "any host by default")
		require.Equal(t, "from elsewhere", string(b))
		require.EqualValues(t, 1, away.Load())
	})
}

// TestLinkFetchDefaultAttempts: by default a link fetch gives up after
// DefaultLinkAttempts tries, not after the dataset store's 60-second
// budget: a link may name a host that is gone for good.
func TestLinkFetchDefaultAttempts(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	col := linkDataset(t, []string{srv.URL + "/down"})
	_, err := col.Fetch(ctx, 0)
	require.ErrorIs(t, err, storage.ErrTransient)
	require.Regexp(t, fmt.Sprintf(`gave up after \S+ \(%d attempts\)`, DefaultLinkAttempts), err.Error())
	require.Equal(t, int64(DefaultLinkAttempts), calls.Load())
}
