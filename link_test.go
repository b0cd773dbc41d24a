package loch

import (
	"bytes"
	"errors"
	"fmt"
	"net"
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

// countingServer answers body to every request, and counts them.
func countingServer(t *testing.T, body string) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
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
	col := mustColumn(t, r, "ref")
	return col
}

var fastRetry = storage.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, ReadTimeout: 5 * time.Second}

// loopback allows the test servers, which listen on loopback addresses
// that links may not reach by default.
var loopback = []string{"127.0.0.1", "::1"}

func TestLinkFetchHTTP(t *testing.T) {
	srv, flaky := linkServer(t)
	col := linkDataset(t, []string{srv.URL + "/ok", srv.URL + "/flaky", srv.URL + "/gone", srv.URL + "/secret",
		srv.URL + "/big", srv.URL + "/stream", srv.URL + "/ok?sig=s3cr3t-token"},
		WithLinkPolicy(LinkPolicy{Allow: loopback, MaxBytes: 2048, Retry: fastRetry}))

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
	col := linkDataset(t, []string{srv.URL + "/gone?X-Amz-Signature=s3cr3t"}, WithLinkPolicy(LinkPolicy{Allow: loopback, Retry: fastRetry}))
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
	col := linkDataset(t, []string{srv.URL + "/slow"}, WithLinkPolicy(LinkPolicy{Allow: loopback, Retry: p}))
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
// empty root, an Allow entry that is neither an address, a host nor a
// bucket) are refused when the dataset is opened.
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
		{LinkPolicy{Allow: []string{"http://10.0.0.1:80"}}, `allow: "http://10.0.0.1:80": give an http(s) host as host or host:port, not a URL`},
		{LinkPolicy{Allow: []string{"ftp://host"}}, `allow: "ftp://host": want an address, a host or a bucket`},
		{LinkPolicy{Allow: []string{"s3://bucket/key"}}, `allow: "s3://bucket/key": want a bucket, not an object or a prefix in it`},
		{LinkPolicy{Allow: []string{"s3://bucket?nope=1"}}, `allow: "s3://bucket?nope=REDACTED": not a bucket URL`},
		{LinkPolicy{Allow: []string{"10.0.0.0/33"}}, `allow: "10.0.0.0/33": want *, an IP address, a CIDR prefix or a host name`},
		{LinkPolicy{Allow: []string{""}}, `allow: "": want *, an IP address`},
	} {
		_, err := Open(ctx, dir, WithLinkPolicy(tc.p))
		require.ErrorIs(t, err, ErrInvalidArgument, tc.want)
		require.ErrorContains(t, err, "link policy: "+tc.want)
	}
	ok, err := Open(ctx, dir, WithLinkPolicy(LinkPolicy{Schemes: []string{"https"}, Hosts: []string{"example.com:8443"}, LocalRoots: []string{"/data"},
		Allow: []string{"*", "127.0.0.1:7474", "[::1]:80", "10.0.0.0/8", "minio.internal:9000", "s3://b", "gs://*", "az://c?endpoint=http://10.0.0.5:10000", "s3://b/"}}))
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
	col := mustColumn(t, d, "ref")
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, "beside", string(b))
	_, err = col.Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrPermission)

	r := mustOpen(t, dir, WithLinkPolicy(LinkPolicy{MaxBytes: 99}))
	rc := mustColumn(t, r, "ref")
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
	col := mustColumn(t, d, "ref")
	_, err = col.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission)
	require.True(t, errors.Is(err, ErrPermission))
}

// TestLinkRedirects: a redirect is followed only to a scheme and host that
// the policy allows; a refused one is not retried, reaches nothing, and
// its error hides the target's query.
func TestLinkRedirects(t *testing.T) {
	other, away := countingServer(t, "from elsewhere")
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
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Hosts: []string{"127.0.0.1"}, Allow: loopback, Retry: fastRetry}))
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
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Schemes: []string{"http"}, Allow: loopback, Retry: fastRetry}))
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

	t.Run("any host", func(t *testing.T) {
		away.Store(0)
		col := linkDataset(t, links, WithLinkPolicy(LinkPolicy{Allow: loopback, Retry: fastRetry}))
		b, err := col.Fetch(ctx, 1)
		require.NoError(t, err, "any host when Hosts is nil")
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
	t.Setenv(EnvLinkAllow, "127.0.0.1") // the default policy, but for loopback
	col := linkDataset(t, []string{srv.URL + "/down"})
	_, err := col.Fetch(ctx, 0)
	require.ErrorIs(t, err, storage.ErrTransient)
	require.Regexp(t, fmt.Sprintf(`gave up after \S+ \(%d attempts\)`, DefaultLinkAttempts), err.Error())
	require.Equal(t, int64(DefaultLinkAttempts), calls.Load())
}

// TestLinkInternalAddressesRefused: by default a link reaches no internal
// address (loopback, private, link-local, metadata, ...), whether the link
// names the address or a host that resolves to it; the refusal names the
// row, the column, the address and how to allow it, reaches nothing and is
// not retried.
func TestLinkInternalAddressesRefused(t *testing.T) {
	t.Setenv(EnvLinkAllow, "")
	srv, hits := countingServer(t, "internal")
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	for _, tc := range []struct {
		link, want string
	}{
		{srv.URL + "/x", "127.0.0.1 is a loopback address"},
		{fmt.Sprintf("http://localhost:%d/x", port), " is a loopback address"}, // a name resolving to 127.0.0.1 (or ::1)
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/x", port), "127.0.0.1 is a loopback address"},
		{"http://[::1]:7474/", "::1 is a loopback address"},
		{"http://10.1.2.3/", "10.1.2.3 is a private address"},
		{"http://192.168.0.1:8080/", "192.168.0.1 is a private address"},
		{"http://[fd12::1]/", "fd12::1 is a private address"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254 is a cloud metadata address"},
		{"http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254 is a cloud metadata address"},
		{"http://metadata.google.internal/computeMetadata/v1/", `host "metadata.google.internal" is a cloud metadata service`},
		{"http://169.254.1.1/", "169.254.1.1 is a link-local address"},
		{"http://100.64.0.1/", "100.64.0.1 is a shared (CGNAT) address"},
		{fmt.Sprintf("http://0.0.0.0:%d/", port), "0.0.0.0 is an unspecified address"},
		{"http://224.0.0.1/", "224.0.0.1 is a multicast address"},
	} {
		col := linkDataset(t, []string{tc.link})
		_, err := col.Fetch(ctx, 0)
		require.ErrorIs(t, err, ErrPermission, tc.link)
		require.NotErrorIs(t, err, storage.ErrTransient, tc.link)
		require.ErrorContains(t, err, `column "ref" row 0: follow link "`+tc.link, tc.link)
		require.ErrorContains(t, err, tc.want, tc.link)
		require.ErrorContains(t, err, "allow it with LOCH_LINK_ALLOW=", tc.link)
	}
	require.EqualValues(t, 0, hits.Load(), "nothing reached the server")

	// Allowed by address, by address and port, by prefix, by name.
	for _, allow := range []string{"127.0.0.1", fmt.Sprintf("127.0.0.1:%d", port), "127.0.0.0/8", "*"} {
		col := linkDataset(t, []string{srv.URL + "/x"}, WithLinkPolicy(LinkPolicy{Allow: []string{allow}}))
		b, err := col.Fetch(ctx, 0)
		require.NoError(t, err, allow)
		require.Equal(t, "internal", string(b))
	}
	col := linkDataset(t, []string{fmt.Sprintf("http://localhost:%d/x", port)}, WithLinkPolicy(LinkPolicy{Allow: []string{"localhost"}}))
	_, err := col.Fetch(ctx, 0)
	require.NoError(t, err, "allowed by name")
	col = linkDataset(t, []string{srv.URL + "/x"}, WithLinkPolicy(LinkPolicy{Allow: []string{"127.0.0.1:1"}}))
	_, err = col.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission, "another port")
	require.EqualValues(t, 5, hits.Load())
}

// TestLinkRedirectToInternalRefused: a server that links may reach (here
// named in Allow by address and port) cannot redirect the reader to an
// internal address that Allow does not name, by address or by name.
func TestLinkRedirectToInternalRefused(t *testing.T) {
	inner, hits := countingServer(t, "inner secret")
	innerPort := inner.Listener.Addr().(*net.TCPAddr).Port
	outer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("outer"))
		case "/by-address":
			http.Redirect(w, r, inner.URL+"/secret", http.StatusFound)
		case "/by-name":
			http.Redirect(w, r, fmt.Sprintf("http://localhost:%d/secret", innerPort), http.StatusFound)
		}
	}))
	t.Cleanup(outer.Close)
	outerOnly := LinkPolicy{Allow: []string{outer.Listener.Addr().String()}, Retry: fastRetry}
	col := linkDataset(t, []string{outer.URL + "/ok", outer.URL + "/by-address", outer.URL + "/by-name"}, WithLinkPolicy(outerOnly))
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err, "the allowed server itself")
	require.Equal(t, "outer", string(b))
	for _, row := range []int64{1, 2} {
		_, err := col.Fetch(ctx, row)
		require.ErrorIs(t, err, ErrPermission, "row %d", row)
		require.ErrorContains(t, err, fmt.Sprintf("after a redirect: connect to %s", map[int64]string{1: "127.0.0.1", 2: "localhost"}[row]))
		require.ErrorContains(t, err, fmt.Sprintf(":%d", innerPort))
		require.ErrorContains(t, err, "is a loopback address")
	}
	require.EqualValues(t, 0, hits.Load(), "nothing reached the inner server")

	both := outerOnly
	both.Allow = append(both.Allow, inner.Listener.Addr().String())
	col = linkDataset(t, []string{outer.URL + "/by-address", outer.URL + "/by-name"}, WithLinkPolicy(both))
	for _, row := range []int64{0, 1} {
		b, err := col.Fetch(ctx, row)
		require.NoError(t, err, "row %d: the redirect is followed once Allow names its target", row)
		require.Equal(t, "inner secret", string(b))
	}
}

// TestLinkAllowFromEnvironment: $LOCH_LINK_ALLOW gives Allow when the
// policy leaves it nil; an explicit Allow replaces it; a bad value fails
// the open, naming the variable.
func TestLinkAllowFromEnvironment(t *testing.T) {
	srv, _ := linkServer(t)
	t.Setenv(EnvLinkAllow, " s3://elsewhere , 127.0.0.1,")
	col := linkDataset(t, []string{srv.URL + "/ok"})
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, "hello over http", string(b))

	col = linkDataset(t, []string{srv.URL + "/ok"}, WithLinkPolicy(LinkPolicy{Allow: []string{}}))
	_, err = col.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission, "an explicit Allow replaces the environment's")

	dir := filepath.Join(t.TempDir(), "ds")
	d, err := Create(ctx, dir, schema.Schema{Columns: []schema.Column{{Name: "l", Kind: schema.Link}}})
	require.NoError(t, err)
	require.NoError(t, d.Close())
	t.Setenv(EnvLinkAllow, "127.0.0.1,http://10.0.0.1")
	_, err = Open(ctx, dir)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.ErrorContains(t, err, `link policy: $LOCH_LINK_ALLOW: allow: "http://10.0.0.1": give an http(s) host as host or host:port`)
	r, err := Open(ctx, dir, WithLinkPolicy(LinkPolicy{Allow: loopback}))
	require.NoError(t, err, "the environment is not read when Allow is given")
	require.NoError(t, r.Close())
}

// TestLinkBuckets: an object-store link reads the dataset's own bucket;
// another bucket only when Allow names it (or its scheme's "*"); a local
// dataset has no bucket of its own.
func TestLinkBuckets(t *testing.T) {
	t.Setenv(EnvLinkAllow, "")
	own := "mem://" + strings.ReplaceAll(t.Name(), "/", "-")
	other := own + "-other"
	for _, b := range []string{own, other} {
		st, err := storage.Open(ctx, b)
		require.NoError(t, err)
		require.NoError(t, st.Put(ctx, "obj", []byte("in "+b)))
		require.NoError(t, st.Close())
	}
	d, err := Create(ctx, own+"/ds", schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}}})
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, Row{"ref": String(own + "/obj")}))
	require.NoError(t, d.Append(ctx, Row{"ref": String(other + "/obj")}))
	_, err = d.Commit(ctx, "two buckets")
	require.NoError(t, err)
	require.NoError(t, d.Close())
	open := func(allow ...string) *ColumnReader {
		r, err := Open(ctx, own+"/ds", WithLinkPolicy(LinkPolicy{Schemes: []string{"mem"}, Allow: allow}))
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		col := mustColumn(t, r, "ref")
		return col
	}

	col := open()
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err, "the dataset's own bucket")
	require.Equal(t, "in "+own, string(b))
	_, err = col.Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, fmt.Sprintf("bucket %s is not the dataset's own (the dataset's is %s)", other, own))
	require.ErrorContains(t, err, "allow it with LOCH_LINK_ALLOW="+other)

	for _, allow := range []string{other, other + "/", "mem://*"} {
		b, err = open(allow).Fetch(ctx, 1)
		require.NoError(t, err, allow)
		require.Equal(t, "in "+other, string(b))
	}
	_, err = open("s3://*", own+"-third").Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrPermission, "another scheme's * or another bucket")

	local := linkDataset(t, []string{other + "/obj"}, WithLinkPolicy(LinkPolicy{Schemes: []string{"mem"}}))
	_, err = local.Fetch(ctx, 0)
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, "a local dataset has none")
}
