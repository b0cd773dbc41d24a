package storage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// recordingCheck allows the ports in allow and records every call.
type recordingCheck struct {
	mu    sync.Mutex
	allow []string
	calls []string // host port addr
}

func (c *recordingCheck) check(host, port string, addr netip.Addr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("%s %s %s", host, port, addr))
	for _, p := range c.allow {
		if p == port {
			return nil
		}
	}
	return fmt.Errorf("not on the list: %w", ErrPermission)
}

func portOf(t *testing.T, srv *httptest.Server) string {
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	return u.Port()
}

// countingServer answers "hello" and counts its requests.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Write([]byte("hello"))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestHTTPClientChecksEachConnection: the check sees the address each
// connection is made to, after the name is resolved; a refusal reaches
// nothing, is ErrPermission and is not retried.
func TestHTTPClientChecksEachConnection(t *testing.T) {
	ctx := context.Background()
	srv, hits := countingServer(t)
	port := portOf(t, srv)

	chk := &recordingCheck{}
	c := NewHTTPClient(chk.check)
	defer c.Close()
	opts := []Option{WithHTTPClient(c), WithRetryPolicy(quickRetry)}

	_, err := ReadURL(ctx, srv.URL+"/x?sig=s3cr3t", opts...)
	require.ErrorIs(t, err, ErrPermission)
	require.NotErrorIs(t, err, ErrTransient, "a refusal is not retried")
	require.ErrorContains(t, err, "connect to 127.0.0.1:"+port+" refused: not on the list")
	require.NotContains(t, err.Error(), "s3cr3t")
	require.EqualValues(t, 0, hits.Load())
	require.Equal(t, []string{"127.0.0.1 " + port + " 127.0.0.1"}, chk.calls, "one call: not retried")

	// A name: every address it resolves to is checked, none connected.
	chk.calls = nil
	_, err = ReadURL(ctx, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)+"/x", opts...)
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, "connect to localhost:"+port+" (")
	require.NotEmpty(t, chk.calls)
	for _, call := range chk.calls {
		f := strings.Fields(call)
		require.Equal(t, []string{"localhost", port}, f[:2])
		require.True(t, netip.MustParseAddr(f[2]).IsLoopback(), call)
	}
	require.EqualValues(t, 0, hits.Load())

	// Allowed: read, and the connection is kept for the next read.
	chk.allow = []string{port}
	chk.calls = nil
	for range 3 {
		b, err := ReadURL(ctx, srv.URL+"/x", opts...)
		require.NoError(t, err)
		require.Equal(t, "hello", string(b))
	}
	require.Len(t, chk.calls, 1, "idle connections are reused")
}

// TestHTTPClientChecksRedirects: a redirect's connection is checked too;
// an allowed server cannot send the read to an address the check refuses.
func TestHTTPClientChecksRedirects(t *testing.T) {
	ctx := context.Background()
	other, hits := countingServer(t)
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/elsewhere", http.StatusFound)
	}))
	t.Cleanup(home.Close)
	chk := &recordingCheck{allow: []string{portOf(t, home)}}
	c := NewHTTPClient(chk.check)
	defer c.Close()
	_, err := ReadURL(ctx, home.URL+"/start", WithHTTPClient(c), WithRetryPolicy(quickRetry))
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, "after a redirect: connect to 127.0.0.1:"+portOf(t, other)+" refused")
	require.EqualValues(t, 0, hits.Load())

	chk.allow = append(chk.allow, portOf(t, other))
	b, err := ReadURL(ctx, home.URL+"/start", WithHTTPClient(c), WithRetryPolicy(quickRetry))
	require.NoError(t, err)
	require.Equal(t, "hello", string(b))
}

// TestHTTPClientThroughAProxy: through a proxy, the request's host is
// resolved and checked before the request goes to the proxy, which is
// connected to unchecked.
func TestHTTPClientThroughAProxy(t *testing.T) {
	ctx := context.Background()
	var seen atomic.Value
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.String()) // a proxy request names the absolute URL
		w.Write([]byte("via the proxy"))
	}))
	t.Cleanup(proxy.Close)
	proxyURL, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	old := proxyFromEnvironment
	proxyFromEnvironment = func(*http.Request) (*url.URL, error) { return proxyURL, nil }
	t.Cleanup(func() { proxyFromEnvironment = old })

	ln, err := net.Listen("tcp", "127.0.0.1:0") // a port nothing answers on, never dialed
	require.NoError(t, err)
	target := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, port, _ := net.SplitHostPort(target)

	chk := &recordingCheck{}
	c := NewHTTPClient(chk.check)
	defer c.Close()
	opts := []Option{WithHTTPClient(c), WithRetryPolicy(quickRetry)}
	_, err = ReadURL(ctx, "http://"+target+"/x", opts...)
	require.ErrorIs(t, err, ErrPermission)
	require.Nil(t, seen.Load(), "nothing reached the proxy")
	require.Equal(t, []string{"127.0.0.1 " + port + " 127.0.0.1"}, chk.calls, "the proxy itself is not checked")

	_, err = ReadURL(ctx, "http://no-such-host.invalid/x", opts...)
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, "no-such-host.invalid does not resolve here")

	chk.allow = []string{port}
	b, err := ReadURL(ctx, "http://"+target+"/x", opts...)
	require.NoError(t, err)
	require.Equal(t, "via the proxy", string(b))
	require.Equal(t, "http://"+target+"/x", seen.Load())
}
