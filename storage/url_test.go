package storage

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseLocation(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{"/data/ds", "file:///data/ds"},
		{"/data/ds/", "file:///data/ds"},
		{"file:///data/ds", "file:///data/ds"},
		{"file://localhost/data/ds", "file:///data/ds"},
		{"mem://x", "mem://x"},
		{"mem://x/a/b/", "mem://x/a/b"},
		{"s3://bkt", "s3://bkt"},
		{"s3://bkt/", "s3://bkt"},
		{"s3://bkt/a/b", "s3://bkt/a/b"},
		{"S3://bkt/a", "s3://bkt/a"},
		{"s3://bkt/p?use_path_style=true&endpoint=http://127.0.0.1:9000&region=us-east-1", "s3://bkt/p?endpoint=http://127.0.0.1:9000&region=us-east-1&use_path_style=true"},
		{"s3://bkt/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000", "s3://bkt/p?endpoint=http://127.0.0.1:9000"},
		{"gs://bkt/p?anonymous=true", "gs://bkt/p?anonymous=true"},
		{"az://ctr/p?endpoint=https://acct.blob.core.windows.net", "az://ctr/p?endpoint=https://acct.blob.core.windows.net"},
	} {
		loc, err := parseLocation(tc.raw)
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, loc.String(), tc.raw)
		again, err := parseLocation(loc.String())
		require.NoError(t, err, "reparse %s", loc.String())
		require.Equal(t, loc.String(), again.String(), "the canonical form is stable")
	}
	loc, err := parseLocation("relative/dir")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(loc.String(), "file:///"), "a relative path becomes absolute: %s", loc)
}

func TestParseLocationRejects(t *testing.T) {
	for _, tc := range []struct {
		raw, why string
	}{
		{"", "empty URL"},
		{"ftp://host/x", `unsupported scheme "ftp"`},
		{"s3://", "without a bucket"},
		{"s3:///key", "without a bucket"},
		{"s3://AKIA:s3cr3t@bkt/p", "credentials in the URL"},
		{"s3://bkt/p?secret_key=s3cr3t", `unknown query parameter "secret_key"`},
		{"s3://bkt/p?region=a&region=b", "given 2 times"},
		{"gs://bkt/p?endpoint=x", `unknown query parameter "endpoint"`},
		{"mem://x?anything=1", "unknown query parameter"},
		{"s3://bkt/a/../b", "bad key prefix"},
		{"s3://bkt/a//b", "bad key prefix"},
		{"s3://bkt/p#frag", "malformed"},
		{"file://remote/x", `host "remote"`},
		{"s3://bkt:99/p", "bad bucket name"},
		{"s3://bkt/p?endpoint=http://user:s3cr3t@127.0.0.1:9000", "endpoint with credentials"},
	} {
		_, err := parseLocation(tc.raw)
		require.ErrorIs(t, err, ErrInvalidURL, tc.raw)
		require.ErrorContains(t, err, tc.why, tc.raw)
		require.NotContains(t, err.Error(), "s3cr3t", "no secret in the message")
	}
}

func TestRedact(t *testing.T) {
	require.Equal(t, "s3://bkt/p?region=x&token=REDACTED", redact("s3://AKIA:pw@bkt/p?region=x&token=abc"))
	require.Equal(t, "/some/path", redact("/some/path"))
	require.Equal(t, "s3://bkt/p?endpoint=http%3A%2F%2F127.0.0.1%3A9000", redact("s3://bkt/p?endpoint=http://u:pw@127.0.0.1:9000"))
	require.Equal(t, "(malformed URL)", redact("s3://bkt/%zz"))
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ raw, dir, key string }{
		{"data/a.jpg", "data", "a.jpg"},
		{"a.jpg", ".", "a.jpg"},
		{"/abs/dir/a.jpg", "/abs/dir", "a.jpg"},
		{"file:///abs/dir/a.jpg", "file:///abs/dir", "a.jpg"},
		{"file:///a.jpg", "file:///", "a.jpg"},
		{"s3://bkt/images/a.jpg?region=eu-west-1", "s3://bkt/images?region=eu-west-1", "a.jpg"},
		{"s3://bkt/a.jpg", "s3://bkt", "a.jpg"},
		{"mem://m/x/y", "mem://m/x", "y"},
	} {
		dir, key, err := Split(tc.raw)
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.dir, dir, tc.raw)
		require.Equal(t, tc.key, key, tc.raw)
	}
	for _, raw := range []string{"", "s3://bkt", "s3://bkt/", "data/", "s3://bkt/dir/..", "data/.."} {
		_, _, err := Split(raw)
		require.Error(t, err, raw)
	}
}

func TestParents(t *testing.T) {
	wd, err := filepath.Abs(".")
	require.NoError(t, err)
	type pn struct{ parent, name string }
	collect := func(raw string) []pn {
		var out []pn
		for p, n := range Parents(raw) {
			out = append(out, pn{p, n})
		}
		return out
	}
	require.Equal(t, []pn{{"s3://bkt?region=r", "a"}, {"s3://bkt/a?region=r", "b"}}, collect("s3://bkt/a/b/?region=r"))
	require.Equal(t, []pn{{"mem://m", "x"}, {"mem://m/x", "y"}}, collect("mem://m/x/y"))
	require.Equal(t, []pn{{"/", "abs"}, {"/abs", "dir"}, {"/abs/dir", "ds"}}, collect("file:///abs/dir/ds"))
	require.Equal(t, []pn{{"/", "abs"}, {"/abs", "dir"}}, collect("/abs/dir/"))
	rel := collect("ds")
	require.Equal(t, pn{wd, "ds"}, rel[len(rel)-1], "a relative path is made absolute")
	require.Equal(t, pn{"/", strings.Split(wd, "/")[1]}, rel[0])
	require.Empty(t, collect("s3://bkt"))
	require.Empty(t, collect("/"))
	for range Parents("/a/b/c") {
		break // stopping early is allowed
	}
}

func TestUsePathStyle(t *testing.T) {
	for _, tc := range []struct {
		endpoint, env, param string
		want                 bool
	}{
		{"", "", "", false},
		{"https://s3.example.com", "", "", false},
		{"http://127.0.0.1:9000", "", "", true},
		{"http://[::1]:9000", "", "", true},
		{"http://localhost:9000", "", "", true},
		{"https://s3.example.com", "true", "", true},
		{"", "true", "", true},
		{"https://s3.example.com", "", "true", true},
		{"http://127.0.0.1:9000", "", "false", false},
		{"https://s3.example.com", "true", "false", false},
	} {
		t.Setenv("AWS_S3_USE_PATH_STYLE", tc.env)
		got, err := usePathStyle(tc.endpoint, tc.param)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "%+v", tc)
	}
	_, err := usePathStyle("127.0.0.1:9000", "")
	require.ErrorIs(t, err, ErrInvalidURL, "an endpoint needs a scheme")
	_, err = usePathStyle("", "maybe")
	require.ErrorIs(t, err, ErrInvalidURL)
}

func TestValidateKey(t *testing.T) {
	for _, key := range []string{"a", "a/b", "chunks/ab/cd.chk", "é", "a b", "a.b", ".hidden", "a/.b", "..a", "a..", "#%?&=+"} {
		require.NoError(t, ValidateKey(key), key)
	}
	for _, key := range []string{"", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "a/../b", `a\b`, "a\x00b", "a\tb", "\xff", ".loch-tmp-1", strings.Repeat("x", 1025)} {
		require.ErrorIs(t, ValidateKey(key), ErrInvalidKey, "%q", key)
	}
}

func TestLocal(t *testing.T) {
	for url, want := range map[string]bool{
		"data/ds":                      true,
		"/abs/ds":                      true,
		"file:///abs/ds":               true,
		"mem://bucket":                 true,
		"s3://bkt/ds?region=eu-west-1": false,
		"gs://bkt/ds":                  false,
		"az://container/ds":            false,
		"http://host/ds":               false, // not a store URL
		"":                             false,
	} {
		require.Equal(t, want, Local(url), url)
	}
}

func TestLocalPath(t *testing.T) {
	abs, err := filepath.Abs("data/ds")
	require.NoError(t, err)
	for url, want := range map[string]string{
		"data/ds":           abs,
		"/abs/ds":           "/abs/ds",
		"file:///abs/ds":    "/abs/ds",
		"file:///abs/../ds": "/ds",
		"mem://bucket":      "",
		"s3://bkt/ds":       "",
		"az://container/ds": "",
		"file://host/ds":    "", // not this machine
		"":                  "",
	} {
		got, ok := LocalPath(url)
		require.Equal(t, want != "", ok, url)
		require.Equal(t, want, got, url)
	}
}

func TestBucketOf(t *testing.T) {
	for _, tc := range []struct {
		in, bucket, conn string
		ok               bool
	}{
		{"s3://bkt/a/b.jpg", "s3://bkt", "", true},
		{"s3://bkt/a.jpg?region=eu-west-1&anonymous=true", "s3://bkt", "", true},
		{"s3://bkt/a.jpg?profile=p&endpoint=http://127.0.0.1:9000", "s3://bkt", "endpoint=http://127.0.0.1:9000&profile=p", true},
		{"gs://bkt/a.jpg", "gs://bkt", "", true},
		{"az://container/a.jpg?endpoint=https://acct.blob.core.windows.net", "az://container", "endpoint=https://acct.blob.core.windows.net", true},
		{"mem://name/k", "mem://name", "", true},
		{"/data/a.jpg", "", "", false},
		{"file:///data/a.jpg", "", "", false},
		{"https://example.com/a.jpg", "", "", false},
		{"s3://bkt/a.jpg?nope=1", "", "", false},
	} {
		bucket, conn, ok := BucketOf(tc.in)
		require.Equal(t, tc.ok, ok, tc.in)
		require.Equal(t, tc.bucket, bucket, tc.in)
		require.Equal(t, tc.conn, conn, tc.in)
	}
}
