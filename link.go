package loch

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lochdata/loch/internal/addrpolicy"
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
// cannot send the reader elsewhere. An http(s) link, and each of its
// redirects, connects only to a public address unless Allow names it: the
// host is resolved, every address is checked before it is connected to,
// and the connection goes to the checked address (so that DNS cannot
// answer a public address to the check and an internal one to the
// connection). Internal addresses are loopback (127.0.0.0/8, ::1),
// private (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7),
// link-local (169.254.0.0/16, fe80::/10), unspecified, multicast, shared
// (100.64.0.0/10) and reserved ones, and the cloud metadata services
// (169.254.169.254, fd00:ec2::254, metadata.google.internal, ...): a
// dataset from elsewhere cannot make its reader query the machine's own
// services or its network. An s3://, gs://, az:// or mem:// link reads,
// with the reader's credentials, only the dataset's own bucket, and the
// buckets Allow names. A local path (relative paths are relative to
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
	// compared without regard to case. Nil means any host (at a public
	// address, or one Allow names); an empty non-nil list allows no
	// http(s) link.
	Hosts []string
	// Allow lists what links may reach besides public addresses and the
	// dataset's own bucket. Each entry is one of
	//
	//   - an internal address or host http(s) links may connect to: "*"
	//     (every address), an IP address or CIDR prefix ("127.0.0.1",
	//     "10.0.0.0/8", "fc00::/7") or a host name as links write it
	//     ("minio.internal"), each but a prefix optionally with a port
	//     ("127.0.0.1:7474", "[::1]:7474", "localhost:8080");
	//   - a bucket other than the dataset's own: "s3://name" (or gs://,
	//     az://, mem://), or "s3://*" for any. Its links may give endpoint=
	//     and profile= parameters only as the dataset's own URL does, or as
	//     the entry does ("s3://name?endpoint=http://10.0.0.5:9000"): a link
	//     may not send the reader's credentials to a server of its choosing.
	//
	// Nil means the comma-separated entries of $LOCH_LINK_ALLOW (none when
	// unset); an empty non-nil list allows nothing more.
	Allow []string
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

// Validate refuses a policy whose entries cannot mean what they seem to: a
// scheme links cannot use ("file": local files are LocalRoots'), a host
// given as a URL or with a path, an empty local root, an Allow entry that
// is neither an address, a host nor a bucket. Its errors wrap
// ErrInvalidArgument. Open and Create call it.
func (p *LinkPolicy) Validate() error {
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
	_, _, err := parseAllow(p.Allow)
	return err
}

// EnvLinkAllow is the environment variable that gives LinkPolicy.Allow
// when the policy leaves it nil: entries separated by commas.
const EnvLinkAllow = "LOCH_LINK_ALLOW"

// SplitLinkAllow splits a list of LinkPolicy.Allow entries separated by
// commas (the form of $LOCH_LINK_ALLOW and of loch serve --link-allow),
// dropping empty ones. The result is not nil: as LinkPolicy.Allow, it
// replaces the environment's.
func SplitLinkAllow(s string) []string {
	out := []string{}
	for _, e := range strings.Split(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// bucketRule is one bucket entry of LinkPolicy.Allow.
type bucketRule struct {
	bucket string // "s3://name", or "s3://*" for any bucket of the scheme
	conn   string // its endpoint= and profile= (see storage.BucketOf)
}

// parseAllow parses the entries of LinkPolicy.Allow into address rules
// and bucket rules.
func parseAllow(entries []string) (addrpolicy.Rules, []bucketRule, error) {
	var rules addrpolicy.Rules
	var buckets []bucketRule
	for _, e := range entries {
		scheme, rest, isURL := strings.Cut(e, "://")
		if !isURL {
			r, err := addrpolicy.ParseRule(e)
			if err != nil {
				return nil, nil, fmt.Errorf("allow: %w (or a bucket, s3://name): %w", err, ErrInvalidArgument)
			}
			rules = append(rules, r)
			continue
		}
		quoted := strconv.Quote(storage.Redact(e))
		switch strings.ToLower(scheme) {
		case "s3", "gs", "az", "mem":
		case "http", "https":
			return nil, nil, fmt.Errorf("allow: %s: give an http(s) host as host or host:port, not a URL: %w", quoted, ErrInvalidArgument)
		default:
			return nil, nil, fmt.Errorf("allow: %s: want an address, a host or a bucket (s3://, gs://, az:// or mem://): %w", quoted, ErrInvalidArgument)
		}
		if name, _, _ := strings.Cut(rest, "?"); strings.Contains(strings.TrimSuffix(name, "/"), "/") {
			return nil, nil, fmt.Errorf("allow: %s: want a bucket, not an object or a prefix in it: %w", quoted, ErrInvalidArgument)
		}
		bucket, conn, ok := storage.BucketOf(e)
		if !ok {
			return nil, nil, fmt.Errorf("allow: %s: not a bucket URL: %w", quoted, ErrInvalidArgument)
		}
		buckets = append(buckets, bucketRule{bucket: bucket, conn: conn})
	}
	return rules, buckets, nil
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
	l := d.links
	target, err := l.check(link)
	if err != nil {
		return nil, err
	}
	opts := []storage.Option{storage.WithRetryPolicy(l.Retry), storage.WithRedirectCheck(l.checkRedirect), storage.WithHTTPClient(l.client)}
	if l.MaxBytes > 0 {
		opts = append(opts, storage.WithMaxBytes(l.MaxBytes))
	}
	return storage.ReadURL(ctx, target, opts...)
}

// links is a dataset's link policy made ready: defaults filled in, Allow
// parsed, and the http client whose connections it checks. It is
// immutable but for the client's connections, and safe for concurrent use.
type links struct {
	LinkPolicy
	internal addrpolicy.Rules
	buckets  []bucketRule
	own      bucketRule          // the dataset's bucket; bucket "" for a local dataset
	client   *storage.HTTPClient // closed by Dataset.Close
}

// newLinks makes the policy p (nil: the default) of the dataset at
// datasetURL ready. It fails on a policy or a $LOCH_LINK_ALLOW that cannot
// mean what it seems to.
func newLinks(pp *LinkPolicy, datasetURL string) (*links, error) {
	var p LinkPolicy
	if pp != nil {
		p = *pp
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if p.Allow == nil {
		p.Allow = SplitLinkAllow(os.Getenv(EnvLinkAllow))
		if _, _, err := parseAllow(p.Allow); err != nil {
			return nil, fmt.Errorf("$%s: %w", EnvLinkAllow, err)
		}
	}
	if p.Schemes == nil {
		p.Schemes = DefaultLinkSchemes
	}
	if p.LocalRoots == nil {
		p.LocalRoots = []string{}
		if dir, ok := localDir(datasetURL); ok {
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
	l := &links{LinkPolicy: p}
	l.internal, l.buckets, _ = parseAllow(p.Allow)
	l.own.bucket, l.own.conn, _ = storage.BucketOf(datasetURL)
	l.client = storage.NewHTTPClient(l.checkAddr)
	return l, nil
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
func (p *links) check(link string) (string, error) {
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
		} else if err := p.checkBucket(link); err != nil {
			return "", err
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
func (p *links) checkRedirect(target *url.URL) error {
	scheme := strings.ToLower(target.Scheme)
	if !slices.Contains(p.Schemes, scheme) {
		return fmt.Errorf("%s:// links are not allowed (allowed: %s; see loch.LinkPolicy): %w", scheme, schemeList(p.Schemes), ErrPermission)
	}
	return p.checkHost(target)
}

// checkHost refuses an http(s) URL whose host is not in Hosts (when Hosts
// is given), or that names a cloud metadata service Allow does not name.
func (p *links) checkHost(u *url.URL) error {
	if addrpolicy.MetadataHost(u.Hostname()) && !p.internal.Allows(u.Hostname(), u.Port(), netip.Addr{}) {
		return fmt.Errorf("host %q is a cloud metadata service, which links may not reach by default; %s: %w", u.Hostname(), allowHint(u.Host), ErrPermission)
	}
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

// checkAddr is the storage.DialCheck of the dataset's http client: it
// refuses a connection to an internal address that Allow does not name.
func (p *links) checkAddr(host, port string, addr netip.Addr) error {
	kind := addrpolicy.Classify(addr)
	if kind == "" || p.internal.Allows(host, port, addr) {
		return nil
	}
	if !addr.IsValid() {
		return fmt.Errorf("links may reach a host they cannot check only when it is allowed by name; %s: %w", allowHint(addrpolicy.HostPort(host, port)), ErrPermission)
	}
	return fmt.Errorf("%s is %s %s address, which links may not reach by default; %s: %w",
		addr.WithZone(""), article(kind), kind, allowHint(addrpolicy.HostPort(addr.WithZone("").Unmap().String(), port)), ErrPermission)
}

// checkBucket refuses an object-store link to a bucket other than the
// dataset's own that Allow does not name, or with an endpoint= or profile=
// that neither the dataset's URL nor the bucket's Allow entry gives.
func (p *links) checkBucket(link string) error {
	bucket, conn, ok := storage.BucketOf(link)
	if !ok {
		return nil // not a bucket URL: storage.ReadURL says what is wrong
	}
	scheme, _, _ := strings.Cut(bucket, "://")
	named := func(r bucketRule) bool { return r.bucket == bucket || r.bucket == scheme+"://*" }
	if !named(p.own) && !slices.ContainsFunc(p.buckets, named) {
		own := "a local dataset has none"
		if p.own.bucket != "" {
			own = "the dataset's is " + p.own.bucket
		}
		return fmt.Errorf("bucket %s is not the dataset's own (%s), and links read other buckets only when the link policy names them; %s: %w", bucket, own, allowHint(bucket), ErrPermission)
	}
	sameConn := func(r bucketRule) bool { return named(r) && r.conn == conn }
	if conn == "" || (strings.HasPrefix(p.own.bucket, scheme+"://") && p.own.conn == conn) || slices.ContainsFunc(p.buckets, sameConn) {
		return nil
	}
	return fmt.Errorf("the link chooses its server or credentials (%s), not as the dataset's URL does; %s: %w", conn, allowHint(bucket+"?"+conn), ErrPermission)
}

// allowHint says how to allow entry.
func allowHint(entry string) string {
	return fmt.Sprintf("allow it with %s=%s (or loch serve --link-allow, LinkPolicy.Allow, Python LinkPolicy(allow=[...]))", EnvLinkAllow, entry)
}

// article is "an" before a kind of address that starts with a vowel.
func article(kind string) string {
	if strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an"
	}
	return "a"
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
