// Package addrpolicy says which network addresses a dataset's links may
// reach: Classify names the kind of an internal address (loopback,
// private, link-local, cloud metadata, ...), and a Rule is one entry of
// the link policy's allow list that lets links reach some of them anyway.
//
// It is pure: it resolves no names and opens no connections. The caller
// resolves a host, classifies every address it is about to connect to, and
// connects to that very address (see storage.NewHTTPClient), so that a name
// cannot answer one address when checked and another when dialed.
//
// Not covered: addresses that route to internal ones only through a
// gateway loch cannot see (6to4, Teredo, an HTTP proxy's own network); a
// NAT64 address (64:ff9b::/96) is classified by the IPv4 address it embeds.
package addrpolicy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// The kinds of internal addresses, as Classify names them.
const (
	Metadata    = "cloud metadata"
	Unspecified = "unspecified"
	Loopback    = "loopback"
	Private     = "private"
	LinkLocal   = "link-local"
	Shared      = "shared (CGNAT)"
	Multicast   = "multicast"
	Reserved    = "reserved"
)

var (
	// metadataAddrs are the cloud metadata services: AWS, GCP and Azure
	// (169.254.169.254), AWS over IPv6 (fd00:ec2::254), AWS ECS task
	// credentials (169.254.170.2) and Alibaba Cloud (100.100.100.200).
	metadataAddrs = []netip.Addr{
		netip.MustParseAddr("169.254.169.254"),
		netip.MustParseAddr("fd00:ec2::254"),
		netip.MustParseAddr("169.254.170.2"),
		netip.MustParseAddr("100.100.100.200"),
	}
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	reserved4   = netip.MustParsePrefix("240.0.0.0/4") // 255.255.255.255 included
	siteLocal   = netip.MustParsePrefix("fec0::/10")   // deprecated private IPv6
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
)

// Classify returns the kind of an internal address (one of the constants
// above), or "" for a public one. An IPv4-mapped IPv6 address
// (::ffff:127.0.0.1) is classified as the IPv4 address, and so is a NAT64
// one (64:ff9b::7f00:1); the zone is ignored. An invalid Addr is Reserved.
func Classify(a netip.Addr) string {
	if !a.IsValid() {
		return Reserved
	}
	a = a.WithZone("").Unmap()
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:16]))
	}
	for _, m := range metadataAddrs {
		if a == m {
			return Metadata
		}
	}
	switch {
	case a.IsUnspecified() || thisNetwork.Contains(a):
		return Unspecified
	case a.IsLoopback():
		return Loopback
	case a.IsPrivate() || siteLocal.Contains(a):
		return Private
	case a.IsLinkLocalUnicast():
		return LinkLocal
	case cgnat.Contains(a):
		return Shared
	case a.IsMulticast():
		return Multicast
	case reserved4.Contains(a):
		return Reserved
	}
	return ""
}

// metadataHosts are the host names of cloud metadata services, refused by
// name whatever they resolve to.
var metadataHosts = []string{"metadata.google.internal"}

// MetadataHost reports whether host (a name, compared without regard to
// case or a final dot) names a cloud metadata service.
func MetadataHost(host string) bool {
	host = normName(host)
	for _, m := range metadataHosts {
		if host == m {
			return true
		}
	}
	return false
}

// ErrSyntax is the cause of ParseRule's errors.
var ErrSyntax = errors.New("want *, an IP address, a CIDR prefix or a host name, each but the prefix optionally with :port")

// Rule is one allowed destination: every address ("*"), an IP address or
// CIDR prefix ("10.0.0.5", "::1", "10.0.0.0/8", "fc00::/7"), or a host
// name as links write it ("minio.internal"), each but the prefix
// optionally with a port ("127.0.0.1:7474", "[::1]:7474",
// "localhost:7474"). The zero Rule allows nothing.
type Rule struct {
	all    bool
	prefix netip.Prefix // an address is a full-length prefix
	name   string       // lowercase, without a final dot
	port   string       // "" for any port
}

// ParseRule parses one rule (see Rule). Its error wraps ErrSyntax.
func ParseRule(s string) (Rule, error) {
	bad := func() (Rule, error) { return Rule{}, fmt.Errorf("%q: %w", s, ErrSyntax) }
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "@?# \t") || strings.Contains(s, "://") {
		return bad()
	}
	if s == "*" {
		return Rule{all: true}, nil
	}
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return bad()
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		return Rule{prefix: p.Masked()}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(s, "[]")); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return Rule{prefix: netip.PrefixFrom(a, a.BitLen())}, nil
	}
	host, port := s, ""
	if strings.Contains(s, ":") {
		h, p, err := net.SplitHostPort(s)
		if n, perr := strconv.Atoi(p); err != nil || perr != nil || n < 1 || n > 65535 || p != strconv.Itoa(n) {
			return bad()
		}
		host, port = h, p
	}
	if a, err := netip.ParseAddr(strings.TrimSuffix(host, ".")); err == nil && a.Zone() == "" {
		a = a.Unmap()
		return Rule{prefix: netip.PrefixFrom(a, a.BitLen()), port: port}, nil
	}
	if !validName(host) {
		return bad()
	}
	return Rule{name: normName(host), port: port}, nil
}

// Allows reports whether the rule lets a connection to addr, on port, for
// a link naming host (a name or an address, without brackets) through.
func (r Rule) Allows(host, port string, addr netip.Addr) bool {
	if r.port != "" && r.port != port {
		return false
	}
	switch {
	case r.all:
		return true
	case r.prefix.IsValid():
		return addr.IsValid() && r.prefix.Contains(addr.WithZone("").Unmap())
	case r.name != "":
		return normName(host) == r.name
	}
	return false
}

// String returns the rule as ParseRule reads it.
func (r Rule) String() string {
	var s string
	switch {
	case r.all:
		return "*"
	case r.prefix.IsValid() && r.prefix.IsSingleIP():
		s = r.prefix.Addr().String()
		if r.port != "" && r.prefix.Addr().Is6() {
			s = "[" + s + "]"
		}
	case r.prefix.IsValid():
		return r.prefix.String()
	default:
		s = r.name
	}
	if r.port != "" {
		s += ":" + r.port
	}
	return s
}

// Rules is an allow list: it allows what any of its rules allows.
type Rules []Rule

// Allows reports whether one of the rules allows the connection (see
// Rule.Allows).
func (rs Rules) Allows(host, port string, addr netip.Addr) bool {
	for _, r := range rs {
		if r.Allows(host, port, addr) {
			return true
		}
	}
	return false
}

// HostPort is how a message names a destination to allow: host:port, an
// IPv6 address in brackets.
func HostPort(host, port string) string {
	if port == "" {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, port)
}

func normName(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// validName reports whether h looks like a DNS host name: labels of
// letters, digits, '-' and '_' between dots, a final dot allowed.
func validName(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
