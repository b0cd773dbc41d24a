package storage

import (
	"fmt"
	"iter"
	"net/url"

	"path/filepath"
	"slices"
	"strings"
)

// location is a parsed store URL.
type location struct {
	scheme string // "file", "mem", "s3", "gs" or "az"
	bucket string // bucket, container or memory-bucket name; the directory for "file"
	prefix string // "" or a key prefix ending in '/'
	query  url.Values
}

// queryParams lists the query parameters each scheme accepts. Anything else
// is rejected, so that a typo does not silently fall back to a default.
var queryParams = map[string][]string{
	"file": nil,
	"mem":  nil,
	"s3":   {"anonymous", "endpoint", "profile", "region", "request_checksum_calculation", "use_path_style"},
	"gs":   {"anonymous"},
	"az":   {"endpoint"},
}

// isPath reports whether raw is a plain local path rather than a URL.
func isPath(raw string) bool {
	return !strings.Contains(raw, "://")
}

// parseLocation parses a store URL (see Open). Its errors never quote raw,
// which may hold secrets.
func parseLocation(raw string) (location, error) {
	if raw == "" {
		return location{}, invalidURL("empty URL", nil)
	}
	if isPath(raw) {
		abs, err := filepath.Abs(raw)
		if err != nil {
			return location{}, invalidURL("bad local path", err)
		}
		return location{scheme: "file", bucket: abs}, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return location{}, invalidURL("malformed URL", nil)
	}
	if u.User != nil {
		return location{}, invalidURL("credentials in the URL are not supported; use the environment", nil)
	}
	if u.Opaque != "" || u.Fragment != "" || u.RawFragment != "" {
		return location{}, invalidURL("malformed URL", nil)
	}
	loc := location{scheme: strings.ToLower(u.Scheme), query: u.Query()}
	allowed, ok := queryParams[loc.scheme]
	if !ok {
		return location{}, invalidURL(fmt.Sprintf("unsupported scheme %q (want a path, file://, mem://, s3://, gs:// or az://)", u.Scheme), nil)
	}
	for name, values := range loc.query {
		if !slices.Contains(allowed, name) {
			return location{}, invalidURL(fmt.Sprintf("unknown query parameter %q for %s://", name, loc.scheme), nil)
		}
		if len(values) != 1 {
			return location{}, invalidURL(fmt.Sprintf("query parameter %q given %d times", name, len(values)), nil)
		}
	}
	if ep := loc.query.Get("endpoint"); ep != "" {
		if e, err := url.Parse(ep); err == nil && e.User != nil {
			return location{}, invalidURL("endpoint with credentials: give credentials through the environment", nil)
		}
	}
	if loc.scheme == "file" {
		if u.Host != "" && u.Host != "localhost" {
			return location{}, invalidURL(fmt.Sprintf("file URL with host %q", u.Host), nil)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return location{}, invalidURL("file URL path must be absolute", nil)
		}
		loc.bucket = filepath.Clean(filepath.FromSlash(u.Path))
		return loc, nil
	}
	if u.Host == "" {
		return location{}, invalidURL(fmt.Sprintf("%s:// URL without a bucket name", loc.scheme), nil)
	}
	if strings.ContainsAny(u.Host, ":@") {
		return location{}, invalidURL(fmt.Sprintf("bad bucket name %q", u.Host), nil)
	}
	loc.bucket = u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		if err := validatePath(p); err != nil {
			return location{}, invalidURL("bad key prefix", err)
		}
		loc.prefix = p + "/"
	}
	return loc, nil
}

// String returns the canonical URL: no secrets (the accepted query
// parameters hold none), parameters sorted, ':' and '/' left unescaped.
func (l location) String() string {
	if l.scheme == "file" {
		return (&url.URL{Scheme: "file", Path: filepath.ToSlash(l.bucket)}).String()
	}
	s := l.scheme + "://" + l.bucket
	if l.prefix != "" {
		s += "/" + strings.TrimSuffix(l.prefix, "/")
	}
	if len(l.query) > 0 {
		names := make([]string, 0, len(l.query))
		for name := range l.query {
			names = append(names, name)
		}
		slices.Sort(names)
		for i, name := range names {
			sep := "&"
			if i == 0 {
				sep = "?"
			}
			s += sep + queryEscape(name) + "=" + queryEscape(l.query.Get(name))
		}
	}
	return s
}

func queryEscape(s string) string {
	s = url.QueryEscape(s)
	return strings.NewReplacer("%3A", ":", "%2F", "/").Replace(s)
}

// param returns the query parameter name, or "".
func (l location) param(name string) string {
	return l.query.Get(name)
}

// Redact returns a URL fit for a message: user info dropped, and the
// values of query parameters that no scheme accepts (for http(s) URLs, all
// of them: they may hold a signature) replaced by REDACTED. A local path is
// returned as it is.
func Redact(raw string) string { return redact(raw) }

// redact returns raw fit for an error message: user info dropped (the
// endpoint's too), and the values of parameters that no scheme accepts
// hidden.
func redact(raw string) string {
	if isPath(raw) {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(malformed URL)"
	}
	u.User = nil
	q := u.Query()
	known := queryParams[strings.ToLower(u.Scheme)]
	for name := range q {
		if !slices.Contains(known, name) {
			q.Set(name, "REDACTED")
		}
	}
	if ep, err := url.Parse(q.Get("endpoint")); err == nil && ep.User != nil {
		ep.User = nil
		q.Set("endpoint", ep.String())
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Local reports whether rawURL names a store on this machine (a path, a
// file:// or a mem:// URL), whose reads are system calls or copies rather
// than requests to a server; false for an object store and for a URL that
// does not parse.
func Local(rawURL string) bool {
	loc, err := parseLocation(rawURL)
	return err == nil && (loc.scheme == "file" || loc.scheme == "mem")
}

// BucketOf returns the bucket of an object-store URL (s3://, gs://, az://
// or mem://) as "scheme://bucket", and conn, its query parameters that
// choose where its requests go and with which credentials (endpoint= and
// profile=, sorted, as "endpoint=...&profile=..."; "" when it has none).
// ok is false for a local path, a file:// or http(s) URL and a URL that
// does not parse.
func BucketOf(rawURL string) (bucket, conn string, ok bool) {
	loc, err := parseLocation(rawURL)
	if err != nil || loc.scheme == "file" {
		return "", "", false
	}
	var q []string
	for _, name := range []string{"endpoint", "profile"} {
		if v := loc.param(name); v != "" {
			q = append(q, queryEscape(name)+"="+queryEscape(v))
		}
	}
	return loc.scheme + "://" + loc.bucket, strings.Join(q, "&"), true
}

// LocalPath returns the directory of this machine's file system that
// rawURL names, absolute, for a path or a file:// URL; false for mem://, an
// object store and a URL that does not parse. For callers that write
// ordinary files there rather than objects through a Store.
func LocalPath(rawURL string) (string, bool) {
	loc, err := parseLocation(rawURL)
	if err != nil || loc.scheme != "file" {
		return "", false
	}
	return loc.bucket, true
}

// Parents yields the stores that hold the store at rawURL, outermost
// first: each one's URL and the name of the element below it on the way
// down ("s3://bkt/a/b?region=r" yields "s3://bkt?region=r" and "a", then
// "s3://bkt/a?region=r" and "b"; a path or file:// URL yields absolute
// paths from the root directory down). Nothing is opened; a URL that does
// not parse yields nothing.
func Parents(rawURL string) iter.Seq2[string, string] {
	type step struct{ parent, name string }
	var up []step // nearest first
	if dir, ok := LocalPath(rawURL); ok {
		for p := filepath.Clean(dir); filepath.Dir(p) != p; p = filepath.Dir(p) {
			up = append(up, step{filepath.Dir(p), filepath.Base(p)})
		}
	} else if u, err := url.Parse(rawURL); err == nil {
		u.Path, u.RawPath = strings.TrimRight(u.Path, "/"), ""
		for next := u.String(); ; {
			parent, name, err := Split(next)
			if err != nil {
				break
			}
			up = append(up, step{parent, name})
			next = parent
		}
	}
	return func(yield func(parent, name string) bool) {
		for i := len(up) - 1; i >= 0; i-- {
			if !yield(up[i].parent, up[i].name) {
				return
			}
		}
	}
}

// Split splits the URL (or local path) of one object into the URL of the
// store holding it and the object's key, the last path segment: Split of
// "s3://bkt/images/a.jpg?region=eu-west-1" is "s3://bkt/images?region=eu-west-1"
// and "a.jpg"; Split of "data/a.jpg" is "data" and "a.jpg". The key is
// validated like any key (ErrInvalidKey); a URL naming no object is an error
// wrapping ErrInvalidURL.
func Split(rawURL string) (dirURL, key string, err error) {
	if rawURL == "" {
		return "", "", invalidURL("empty URL", nil)
	}
	if isPath(rawURL) {
		dir, base := filepath.Split(rawURL)
		if base == "" {
			return "", "", invalidURL("path names a directory, not a file", nil)
		}
		if dir == "" {
			dir = "."
		}
		if err := ValidateKey(base); err != nil {
			return "", "", err
		}
		return filepath.Clean(dir), base, nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", "", invalidURL("malformed URL", nil)
	}
	i := strings.LastIndex(u.Path, "/")
	if i < 0 || i == len(u.Path)-1 {
		return "", "", invalidURL("URL names no object", nil)
	}
	key = u.Path[i+1:]
	if err := ValidateKey(key); err != nil {
		return "", "", err
	}
	u.Path = u.Path[:i]
	u.RawPath = ""
	if u.Path == "" && strings.EqualFold(u.Scheme, "file") {
		u.Path = "/"
	}
	return u.String(), key, nil
}
