package viewer

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzRequests sends arbitrary paths and query strings to a server of the
// fixture: every answer is a success or a 4xx with a one-line message,
// never a 500 or a panic.
func FuzzRequests(f *testing.F) {
	u := filepath.Join(f.TempDir(), "pets")
	makeFixture(f, u)
	s, err := New(ctx, u, Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	for _, seed := range [][2]string{
		{"/t/pets/", "ref=v1"},
		{"/t/pets/grid", "v=x&start=-1"},
		{"/t/pets/thumb", "v=&col=image&row=0"},
		{"/t/pets/thumb", "col=image&row=1e9&size=-5"},
		{"/t/pets/row/0", "v=00000000000000000000000000000000"},
		{"/t/pets/diff", "from=..&to=%00"},
		{"/t/pets/log", ""},
		{"/t/pets/grid", "q=SELECT+*+FROM+ds&sel=x"},
		{"/t/pets/", "q=SELECT+1"},
		{"/t/pets/", "sel=..%2F..%2Fetc"},
		{"/t/%2e%2e/", ""},
		{"/static/../../", ""},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, path, query string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: path, RawQuery: query}, Header: http.Header{}, Host: "127.0.0.1"}
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("GET %s?%s: %d %s", path, query, rec.Code, rec.Body.String())
		}
	})
}
