package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// httpClient is the client of every http(s) read: no cookies, at most
// maxRedirects redirects, only to http(s), each one passed to the check
// that the request's context carries (see WithRedirectCheck). Each
// attempt's time is bounded by the RetryPolicy's ReadTimeout through its
// context.
var httpClient = &http.Client{
	Transport: func() http.RoundTripper {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = time.Minute
		return t
	}(),
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("more than %d redirects", maxRedirects)
		}
		if s := req.URL.Scheme; s != "http" && s != "https" {
			return denied(fmt.Sprintf("redirect to %s %s:// URL", article(s), s), nil)
		}
		if check, _ := req.Context().Value(redirectCheckKey{}).(func(*url.URL) error); check != nil {
			if err := check(req.URL); err != nil {
				return denied("redirect refused", err)
			}
		}
		return nil
	},
}

// redirectCheckKey is the context key of an httpStore's redirect check.
type redirectCheckKey struct{}

const maxRedirects = 5

// isHTTP reports whether raw is an http:// or https:// URL.
func isHTTP(raw string) bool {
	s, _, ok := strings.Cut(raw, "://")
	return ok && (strings.EqualFold(s, "http") || strings.EqualFold(s, "https"))
}

// httpStore reads the objects of one http(s) origin: the key is the path
// and query of the URL after the origin. It only reads (Get, ReadRange,
// Stat); the other operations fail with ErrPermission. Status codes map to
// the package's sentinels: 404 and 410 to ErrNotFound, 401 and 403 to
// ErrPermission, 408, 425, 429 and 5xx, like connection failures and
// bodies cut short, to ErrTransient, so that a RetryStore retries them.
type httpStore struct {
	origin   string               // scheme://host[:port]
	maxBytes int64                // > 0: a larger object is ErrTooLarge
	redirect func(*url.URL) error // nil, or the check of each redirect's target
	client   *HTTPClient          // nil: the shared httpClient
}

var _ Store = (*httpStore)(nil)

// splitHTTP checks an http(s) URL and splits it into its origin and the
// key (path and query) an httpStore takes.
func splitHTTP(raw string) (origin, key string, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", invalidURL("malformed URL", nil)
	}
	if u.User != nil {
		return "", "", invalidURL("credentials in the URL are not supported", nil)
	}
	if u.Host == "" {
		return "", "", invalidURL("http URL without a host", nil)
	}
	key = u.EscapedPath()
	if key == "" {
		key = "/"
	}
	if u.RawQuery != "" {
		key += "?" + u.RawQuery
	}
	return strings.ToLower(u.Scheme) + "://" + u.Host, key, nil
}

func (s *httpStore) URL() string  { return s.origin }
func (s *httpStore) Close() error { return nil }

func (s *httpStore) do(ctx context.Context, method, key string, header http.Header) (*http.Response, error) {
	if s.redirect != nil {
		ctx = context.WithValue(ctx, redirectCheckKey{}, s.redirect)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.origin+key, nil)
	if err != nil {
		return nil, invalidURL("malformed URL", nil)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	client := httpClient
	if s.client != nil {
		client = s.client.client
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL may hold a signed query; keep it out
		}
		if ref := (*dialRefused)(nil); errors.As(err, &ref) {
			msg := ""
			if ue != nil {
				if u, perr := url.Parse(ue.URL); perr == nil && !strings.EqualFold(s.origin, strings.ToLower(u.Scheme)+"://"+u.Host) {
					msg = "after a redirect"
				}
			}
			return nil, denied(msg, ref)
		}
		var ne net.Error
		if errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, transient(err)
		}
		return nil, err
	}
	if err := statusError(resp); err != nil {
		resp.Body.Close()
		return nil, err
	}
	return resp, nil
}

// statusError maps an unsuccessful status to an error, nil for 2xx.
func statusError(resp *http.Response) error {
	code := resp.StatusCode
	cause := fmt.Errorf("http status %s", resp.Status)
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return notFound(cause)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return denied("permission denied ("+resp.Status+")", nil)
	case code == http.StatusRequestTimeout || code == http.StatusTooEarly || code == http.StatusTooManyRequests || code >= 500:
		return transient(cause)
	}
	return cause
}

func (s *httpStore) Get(ctx context.Context, key string) ([]byte, error) {
	resp, err := s.do(ctx, http.MethodGet, key, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if s.maxBytes > 0 && resp.ContentLength > s.maxBytes {
		return nil, tooLarge(resp.ContentLength, s.maxBytes)
	}
	r := io.Reader(resp.Body)
	if s.maxBytes > 0 {
		r = io.LimitReader(resp.Body, s.maxBytes+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, transient(err)
	}
	if s.maxBytes > 0 && int64(len(b)) > s.maxBytes {
		return nil, tooLarge(-1, s.maxBytes)
	}
	if resp.ContentLength >= 0 && int64(len(b)) != resp.ContentLength {
		return nil, truncated(len(b), int(resp.ContentLength))
	}
	return b, nil
}

func (s *httpStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	if len(dst) == 0 {
		return nil
	}
	h := http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+int64(len(dst))-1)}}
	resp, err := s.do(ctx, http.MethodGet, key, h)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		return fmt.Errorf("http status %s to a range request", resp.Status)
	}
	n, err := io.ReadFull(resp.Body, dst)
	if err != nil {
		return truncated(n, len(dst))
	}
	return nil
}

func (s *httpStore) Stat(ctx context.Context, key string) (Attrs, error) {
	resp, err := s.do(ctx, http.MethodHead, key, nil)
	if err != nil {
		return Attrs{}, err
	}
	resp.Body.Close()
	a := Attrs{Key: key, Size: resp.ContentLength}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		a.ModTime = t
	}
	return a, nil
}

func (s *httpStore) readOnly() error { return denied("http(s) URLs are read-only", nil) }

func (s *httpStore) Put(context.Context, string, []byte) error         { return s.readOnly() }
func (s *httpStore) PutIfAbsent(context.Context, string, []byte) error { return s.readOnly() }
func (s *httpStore) Delete(context.Context, string) error              { return s.readOnly() }
func (s *httpStore) List(context.Context, string, func(Attrs) error) error {
	return s.readOnly()
}

// article is the article before a scheme read aloud: "an" for those
// spelled out from a vowel sound (an s3://, an http:// URL), "a" otherwise
// (a gs://, a file:// URL).
func article(scheme string) string {
	switch scheme {
	case "s3", "az", "http", "https", "ftp", "sftp":
		return "an"
	}
	return "a"
}
