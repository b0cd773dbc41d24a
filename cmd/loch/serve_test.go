package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestServeToken runs 'loch serve' on every interface: it prints a URL
// with a token, refuses requests without it, and stops on cancel.
func TestServeToken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	_, _, err := makeTestData(context.Background(), dir)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", dir, "--addr", "0.0.0.0:0"}, strings.NewReader(""), pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	require.True(t, strings.HasPrefix(line, "loch serve: http://"), line)
	u, err := url.Parse(strings.TrimSpace(strings.TrimPrefix(line, "loch serve: ")))
	require.NoError(t, err)
	token := u.Query().Get("token")
	require.Len(t, token, 64)
	_, port, err := net.SplitHostPort(u.Host)
	require.NoError(t, err)
	base := "http://127.0.0.1:" + port

	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	jar := &cookieJar{}
	c := &http.Client{Jar: jar, Timeout: time.Minute}
	resp, err = c.Get(base + "/?token=" + token)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	require.Contains(t, string(body), "rows")
	require.NotContains(t, string(body), token)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, exitOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("loch serve did not stop on cancel")
	}
}

// TestServeOpensBeforeItListens: a path that is no dataset is the error
// 'loch serve' reports even when the address is taken (issue 35 item 13:
// it bound the port first, so a busy port hid it); a dataset on a busy
// port names the address; and on a free loopback port (the system's pick,
// never a fixed one) only its own Host names are served.
func TestServeOpensBeforeItListens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	_, _, err := makeTestData(context.Background(), dir)
	require.NoError(t, err)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	addr := busy.Addr().String()
	var stderr strings.Builder
	code := run(context.Background(), []string{"serve", filepath.Join(t.TempDir(), "nothing-here"), "--addr", addr}, nil, io.Discard, &stderr)
	require.Equal(t, exitError, code)
	require.Contains(t, stderr.String(), "neither a catalog nor a dataset")
	stderr.Reset()
	code = run(context.Background(), []string{"serve", dir, "--addr", addr}, nil, io.Discard, &stderr)
	require.Equal(t, exitError, code)
	require.Contains(t, stderr.String(), "--addr "+addr+": ")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", dir, "--addr", "127.0.0.1:0"}, nil, pw, io.Discard)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	go io.Copy(io.Discard, pr)
	u, err := url.Parse(strings.TrimSpace(strings.TrimPrefix(line, "loch serve: ")))
	require.NoError(t, err)
	require.Empty(t, u.Query().Get("token"), "loopback needs no token")
	resp, err := http.Get(u.String())
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	req, err := http.NewRequest(http.MethodGet, u.String(), nil)
	require.NoError(t, err)
	req.Host = "rebound.example:" + u.Port()
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode, "another Host name")
	cancel()
	require.Equal(t, exitOK, <-done)
}

// cookieJar keeps cookies for one host, enough for the token cookie.
type cookieJar struct{ cookies []*http.Cookie }

func (j *cookieJar) SetCookies(_ *url.URL, cs []*http.Cookie) { j.cookies = append(j.cookies, cs...) }
func (j *cookieJar) Cookies(*url.URL) []*http.Cookie          { return j.cookies }

// TestServeLinkAllow: the viewer of 'loch serve' refuses a link to a
// loopback address by default, and follows it with --link-allow naming it.
func TestServeLinkAllow(t *testing.T) {
	t.Setenv(loch.EnvLinkAllow, "")
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("internal bytes"))
	}))
	t.Cleanup(internal.Close)
	dir := filepath.Join(t.TempDir(), "ds")
	d, err := loch.Create(context.Background(), dir, schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}}})
	require.NoError(t, err)
	require.NoError(t, d.Append(context.Background(), loch.Row{"ref": loch.String(internal.URL + "/x")}))
	_, err = d.Commit(context.Background(), "an internal link")
	require.NoError(t, err)
	sample := "/t/ds/sample?v=" + d.Version() + "&col=ref&row=0"
	require.NoError(t, d.Close())

	for _, tc := range []struct {
		flags  []string
		status int
		body   string
	}{
		{nil, http.StatusForbidden, "127.0.0.1 is a loopback address"},
		{[]string{"--link-allow", "10.0.0.0/8," + internal.Listener.Addr().String()}, http.StatusOK, "internal bytes"},
		{[]string{"--link-allow", "s3://b", "--link-allow", "127.0.0.1"}, http.StatusOK, "internal bytes"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		pr, pw := io.Pipe()
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, append([]string{"serve", dir, "--addr", "127.0.0.1:0"}, tc.flags...), strings.NewReader(""), pw, io.Discard)
			pw.Close()
		}()
		line, err := bufio.NewReader(pr).ReadString('\n')
		require.NoError(t, err)
		go io.Copy(io.Discard, pr)
		base := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(line, "loch serve: ")), "/")
		resp, err := http.Get(base + sample)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, tc.status, resp.StatusCode, "%v: %s", tc.flags, body)
		require.Contains(t, string(body), tc.body, tc.flags)
		cancel()
		require.Equal(t, exitOK, <-done)
	}
}
