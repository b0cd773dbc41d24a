package storage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// DialCheck decides whether an http(s) read may connect to addr on port,
// an address that host (the request's host as its URL names it: a name, or
// an address without brackets) resolved to. A non-nil error refuses the
// connection. addr is the zero Addr when host could not be resolved before
// a request sent through a proxy (see NewHTTPClient): the check can then
// only allow host by its name.
type DialCheck func(host, port string, addr netip.Addr) error

// HTTPClient reads the http(s) URLs of ReadURL (WithHTTPClient) through
// connections of its own, each made only where its DialCheck allows. It is
// safe for concurrent use; Close releases its idle connections, and reads
// may still use it afterwards.
type HTTPClient struct {
	client  *http.Client
	check   DialCheck
	proxies sync.Map // host:port of the proxies the environment named -> struct{}
}

// proxyFromEnvironment is the proxy of a request: HTTPS_PROXY,
// HTTP_PROXY and NO_PROXY, read once. Tests replace it.
var proxyFromEnvironment = http.ProxyFromEnvironment

// NewHTTPClient returns an HTTPClient whose every connection, to a URL's
// host and to each redirect's, goes only to an address check allows: the
// host is resolved, check is called with each address before connecting
// to it (from the dialer's Control function), and the connection is made
// to that very address, so that a name cannot answer one address to the
// check and another to the connection. An address check refuses is passed
// over for the next one the host resolved to; when none is left, the read
// fails with an error wrapping ErrPermission and check's error, and is not
// retried. Redirects are limited as in every http(s) read (at most 5, to
// http(s) only, and WithRedirectCheck).
//
// Through a proxy (HTTPS_PROXY or HTTP_PROXY, unless NO_PROXY exempts the
// host) the proxy connects, not the client: the proxy, which the
// environment names, is connected to unchecked, and the request's host is
// resolved before the request is sent, each of its addresses passed to
// check. The proxy resolves the name again, so a name that changes its
// answer in between is not caught there.
func NewHTTPClient(check DialCheck) *HTTPClient {
	c := &HTTPClient{check: check}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = time.Minute
	t.DialContext = c.dial
	t.Proxy = c.proxy
	c.client = &http.Client{Transport: t, CheckRedirect: httpClient.CheckRedirect}
	return c
}

// Close closes the client's idle connections.
func (c *HTTPClient) Close() { c.client.CloseIdleConnections() }

// WithHTTPClient makes ReadURL read http(s) URLs with c instead of the
// process's shared client, whose connections go anywhere. Open ignores it.
func WithHTTPClient(c *HTTPClient) Option {
	return func(cfg *openConfig) { cfg.client = c }
}

// dialRefused is a connection that the DialCheck refused.
type dialRefused struct {
	host, port string
	addr       netip.Addr // the zero Addr: host did not resolve
	err        error
}

func (e *dialRefused) Error() string {
	to := net.JoinHostPort(e.host, e.port)
	if e.addr.IsValid() && e.addr.String() != e.host {
		to += " (" + e.addr.String() + ")"
	}
	return fmt.Sprintf("connect to %s refused: %v", to, e.err)
}

func (e *dialRefused) Unwrap() error { return e.err }

// dial connects to addr, host:port as the request names it, checking the
// address each connection attempt is made to; a proxy's address is
// connected to unchecked.
func (c *HTTPClient) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if _, ok := c.proxies.Load(addr); ok {
		return d.DialContext(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	d.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &dialRefused{host: host, port: port, err: fmt.Errorf("unreadable address %q", address)}
		}
		if err := c.check(host, port, ap.Addr()); err != nil {
			return &dialRefused{host: host, port: port, addr: ap.Addr(), err: err}
		}
		return nil
	}
	return d.DialContext(ctx, network, addr)
}

// proxy returns the environment's proxy for req, having checked every
// address req's host resolves to, and marks the proxy's address to be
// connected to unchecked.
func (c *HTTPClient) proxy(req *http.Request) (*url.URL, error) {
	p, err := proxyFromEnvironment(req)
	if err != nil || p == nil {
		return p, err
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[req.URL.Scheme]
	}
	addrs := []netip.Addr{{}}
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if found, err := net.DefaultResolver.LookupNetIP(req.Context(), "ip", host); err == nil && len(found) > 0 {
		addrs = found
	}
	for _, a := range addrs {
		if err := c.check(host, port, a); err != nil {
			if !a.IsValid() {
				err = fmt.Errorf("%s does not resolve here, so its addresses cannot be checked before the request goes to the proxy: %w", host, err)
			}
			return nil, &dialRefused{host: host, port: port, addr: a, err: err}
		}
	}
	pport := p.Port()
	if pport == "" {
		pport = map[string]string{"http": "80", "https": "443", "socks5": "1080", "socks5h": "1080"}[p.Scheme]
	}
	c.proxies.Store(net.JoinHostPort(p.Hostname(), pport), struct{}{})
	return p, nil
}
