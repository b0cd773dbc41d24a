package loch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// DefaultLinkMaxBytes is the largest object Fetch reads by default.
const DefaultLinkMaxBytes = 256 << 20

// DefaultLinkAttempts bounds the tries of one link fetch by default: a
// link may name any host, and a dead one should cost a reader a second or
// two, not the minute the dataset's own store is given to come back.
const DefaultLinkAttempts = 6

// DefaultLinkSchemes are the URL schemes links may use by default.
var DefaultLinkSchemes = []string{"http", "https", "s3", "gs", "az"}

// LinkPolicy says which objects the links of a dataset may make
// ColumnReader.Fetch read, so that a dataset from elsewhere cannot make its
// reader open arbitrary files. Give it with WithLinkPolicy; the zero value
// is the default policy.
//
// The rule: a link is a URL or a local path. A URL is followed only when
// its scheme is in Schemes, and an http(s) URL only when its host is in
// Hosts (when Hosts is given). An http(s) link that redirects is followed
// only to a target that passes the same two checks, so an allowed server
// cannot send the reader elsewhere. A local path (relative paths are relative to
// the working directory) or file:// URL is followed only when the file,
// with symbolic links resolved, lies under one of LocalRoots (also
// resolved). By default (LocalRoots nil) the one local root is the
// directory that holds the dataset, when the dataset is itself local (a
// dataset at /data/pets may link to /data/images/cat.jpg, not to
// /etc/passwd or ~/.ssh/id_rsa); a dataset on object storage may link to no
// local file. A refused link is an error wrapping ErrPermission that names
// the rule; nothing is read.
//
// The check resolves symbolic links and then reads the resolved path: a
// link swapped between the two by someone who can write under a root is
// not caught, so a root should be a directory that only trusted writers
// change.
type LinkPolicy struct {
	// Schemes lists the URL schemes links may use, lowercase: any of
	// "http", "https", "s3", "gs", "az" and "mem". Nil means
	// DefaultLinkSchemes; an empty non-nil list allows none. Local files
	// are governed by LocalRoots, not by "file".
	Schemes []string
	// Hosts lists the hosts http(s) links and their redirects may reach:
	// a host name or IP address (matching any port) or host:port,
	// compared without regard to case. Nil means any host; an empty
	// non-nil list allows no http(s) link.
	Hosts []string
	// LocalRoots lists the directories whose files links may name. Nil
	// means the dataset's own parent directory for a local dataset, none
	// otherwise; an empty non-nil list allows no local file.
	LocalRoots []string
	// MaxBytes bounds the size of one fetched object: a larger one is an
	// error wrapping ErrInvalidArgument (and storage.ErrTooLarge), read no
	// further than the limit. Zero means DefaultLinkMaxBytes; negative, no
	// limit.
	MaxBytes int64
	// Retry is the storage retry policy of fetches: attempts, backoff and
	// the per-attempt ReadTimeout (an http request included). Its zero
	// value means storage.DefaultRetryPolicy with DefaultLinkAttempts
	// (6 attempts, 30 s each).
	Retry storage.RetryPolicy
}

// validate refuses a policy whose entries cannot mean what they seem to: a
// scheme links cannot use ("file": local files are LocalRoots'), a host
// given as a URL or with a path, an empty local root.
func (p *LinkPolicy) validate() error {
	for _, s := range p.Schemes {
		if !slices.Contains([]string{"http", "https", "s3", "gs", "az", "mem"}, s) {
			hint := ""
			if s == "file" {
				hint = "; local files are allowed by the local roots"
			}
			return fmt.Errorf("scheme %q: want http, https, s3, gs, az or mem%s: %w", s, hint, ErrInvalidArgument)
		}
	}
	for _, h := range p.Hosts {
		if h == "" || strings.ContainsAny(h, "/@?#") {
			return fmt.Errorf("host %q: want a host name or address, optionally with :port, not a URL: %w", h, ErrInvalidArgument)
		}
	}
	for _, r := range p.LocalRoots {
		if r == "" {
			return fmt.Errorf("an empty local root: want a directory: %w", ErrInvalidArgument)
		}
	}
	return nil
}

// WithLinkPolicy sets the policy that ColumnReader.Fetch follows (see
// LinkPolicy; without this option, the default policy).
func WithLinkPolicy(p LinkPolicy) Option {
	return func(o *options) { o.links = &p }
}

// Fetch reads the object that a link column's row i refers to, through the
// storage layer: an http(s) URL, an s3://, gs:// or az:// URL, or a local
// path or file:// URL, as the dataset's LinkPolicy allows (see LinkPolicy
// for the rule and its default). Credentials come from the same standard
// places as for datasets.
func (c *ColumnReader) Fetch(ctx context.Context, i int64) ([]byte, error) {
	if c.col.Kind != schema.Link {
		return nil, fmt.Errorf("%s: column %q is a %s column, not a link column: %w", c.d.url, c.col.Name, c.col.Kind, ErrInvalidArgument)
	}
	s, err := c.Read(ctx, i, nil)
	if err != nil {
		return nil, err
	}
	if s.Null {
		return nil, fmt.Errorf("%s: column %q row %d: the link is empty: %w", c.d.url, c.col.Name, i, ErrNotFound)
	}
	link := string(s.Data)
	b, err := c.d.fetchLink(ctx, link)
	if err != nil {
		return nil, fmt.Errorf("%s: column %q row %d: follow link %q: %w", c.d.url, c.col.Name, i, storage.Redact(link), err)
	}
	return b, nil
}

// fetchLink reads the object link names, if the policy allows it.
func (d *Dataset) fetchLink(ctx context.Context, link string) ([]byte, error) {
	p := d.linkPolicy()
	target, err := p.check(link)
	if err != nil {
		return nil, err
	}
	opts := []storage.Option{storage.WithRetryPolicy(p.Retry), storage.WithRedirectCheck(p.checkRedirect)}
	if p.MaxBytes > 0 {
		opts = append(opts, storage.WithMaxBytes(p.MaxBytes))
	}
	return storage.ReadURL(ctx, target, opts...)
}

// linkPolicy returns the dataset's policy with its defaults filled in.
func (d *Dataset) linkPolicy() LinkPolicy {
	var p LinkPolicy
	if d.opts.links != nil {
		p = *d.opts.links
	}
	if p.Schemes == nil {
		p.Schemes = DefaultLinkSchemes
	}
	if p.LocalRoots == nil {
		p.LocalRoots = []string{}
		if dir, ok := localDir(d.url); ok {
			p.LocalRoots = []string{filepath.Dir(dir)}
		}
	}
	switch {
	case p.MaxBytes == 0:
		p.MaxBytes = DefaultLinkMaxBytes
	case p.MaxBytes < 0:
		p.MaxBytes = 0 // storage's "no limit"
	}
	if p.Retry == (storage.RetryPolicy{}) {
		p.Retry = storage.DefaultRetryPolicy()
		p.Retry.MaxAttempts = DefaultLinkAttempts
	}
	return p
}

// localDir returns the directory of a file:// dataset URL.
func localDir(datasetURL string) (string, bool) {
	u, err := url.Parse(datasetURL)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	return filepath.FromSlash(u.Path), true
}

// check applies the policy to link and returns what to read: the link
// itself, or for a local file its resolved path.
func (p *LinkPolicy) check(link string) (string, error) {
	if strings.TrimSpace(link) == "" {
		return "", fmt.Errorf("the link is empty: %w", ErrInvalidArgument)
	}
	scheme, _, isURL := strings.Cut(link, "://")
	scheme = strings.ToLower(scheme)
	if isURL && scheme != "file" {
		if !slices.Contains(p.Schemes, scheme) {
			return "", fmt.Errorf("%s:// links are not allowed (allowed: %s; see loch.LinkPolicy): %w", scheme, schemeList(p.Schemes), ErrPermission)
		}
		if scheme == "http" || scheme == "https" {
			u, err := url.Parse(link)
			if err != nil {
				return "", fmt.Errorf("malformed URL: %w", ErrInvalidArgument)
			}
			if err := p.checkHost(u); err != nil {
				return "", err
			}
		}
		return link, nil
	}
	path := link
	if isURL {
		u, err := url.Parse(link)
		if err != nil || (u.Host != "" && u.Host != "localhost") {
			return "", fmt.Errorf("malformed file URL: %w", ErrInvalidArgument)
		}
		path = filepath.FromSlash(u.Path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("local path: %w: %v", ErrInvalidArgument, err)
	}
	if len(p.LocalRoots) == 0 {
		return "", fmt.Errorf("links to local files are not allowed (no local roots; see loch.LinkPolicy): %w", ErrPermission)
	}
	// Refuse by the path as written first, so that a refused link tells
	// nothing about whether its file exists.
	if !underAny(abs, p.LocalRoots, filepath.Abs) {
		return "", fmt.Errorf("local path outside the allowed roots (%s; see loch.LinkPolicy): %w", strings.Join(p.LocalRoots, ", "), ErrPermission)
	}
	real, err := filepath.EvalSymlinks(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s: %w", abs, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("local path: %w", err)
	}
	if !underAny(real, p.LocalRoots, resolve) {
		return "", fmt.Errorf("local path leads (through a symbolic link) outside the allowed roots (%s; see loch.LinkPolicy): %w", strings.Join(p.LocalRoots, ", "), ErrPermission)
	}
	if fi, err := os.Stat(real); err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file: %w", abs, ErrInvalidArgument)
	}
	return real, nil
}

// checkRedirect applies the policy to the target of an http(s) redirect:
// its scheme and its host (the storage layer says that it was a redirect).
// Its errors name neither path nor query.
func (p *LinkPolicy) checkRedirect(target *url.URL) error {
	scheme := strings.ToLower(target.Scheme)
	if !slices.Contains(p.Schemes, scheme) {
		return fmt.Errorf("%s:// links are not allowed (allowed: %s; see loch.LinkPolicy): %w", scheme, schemeList(p.Schemes), ErrPermission)
	}
	return p.checkHost(target)
}

// checkHost refuses an http(s) URL whose host is not in Hosts (when Hosts
// is given).
func (p *LinkPolicy) checkHost(u *url.URL) error {
	if p.Hosts == nil {
		return nil
	}
	for _, h := range p.Hosts {
		if strings.EqualFold(h, u.Host) || strings.EqualFold(h, u.Hostname()) {
			return nil
		}
	}
	allowed := "none"
	if len(p.Hosts) > 0 {
		allowed = strings.Join(p.Hosts, ", ")
	}
	return fmt.Errorf("host %q is not allowed (allowed: %s; see loch.LinkPolicy): %w", u.Host, allowed, ErrPermission)
}

// resolve makes a root absolute and resolves its symbolic links.
func resolve(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(abs)
}

// underAny reports whether path lies under one of roots, each made
// comparable by norm first (roots it fails on are skipped).
func underAny(path string, roots []string, norm func(string) (string, error)) bool {
	for _, r := range roots {
		r, err := norm(r)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(r, path)
		if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

func schemeList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
