package addrpolicy

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		addr, kind string
	}{
		// public
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"100.63.255.255", ""}, // just below CGNAT
		{"100.128.0.0", ""},    // just above
		{"172.15.255.255", ""}, // just below 172.16/12
		{"172.32.0.0", ""},
		{"169.253.255.255", ""},
		{"2606:4700::1111", ""},
		{"2002:808:808::", ""}, // 6to4 of a public address
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""}, // NAT64 of 8.8.8.8
		// cloud metadata
		{"169.254.169.254", Metadata},
		{"::ffff:169.254.169.254", Metadata},
		{"fd00:ec2::254", Metadata},
		{"169.254.170.2", Metadata},
		{"100.100.100.200", Metadata},
		{"64:ff9b::a9fe:a9fe", Metadata}, // NAT64 of 169.254.169.254
		// unspecified
		{"0.0.0.0", Unspecified},
		{"0.1.2.3", Unspecified},
		{"::", Unspecified},
		// loopback
		{"127.0.0.1", Loopback},
		{"127.255.255.254", Loopback},
		{"::1", Loopback},
		{"::ffff:127.0.0.1", Loopback},
		{"64:ff9b::7f00:1", Loopback},
		// private
		{"10.0.0.1", Private},
		{"10.255.255.255", Private},
		{"172.16.0.1", Private},
		{"172.31.255.255", Private},
		{"192.168.1.1", Private},
		{"fc00::1", Private},
		{"fd12:3456::1", Private},
		{"fec0::1", Private},
		{"::ffff:10.1.2.3", Private},
		// link-local
		{"169.254.0.1", LinkLocal},
		{"169.254.255.255", LinkLocal},
		{"fe80::1", LinkLocal},
		{"fe80::1%eth0", LinkLocal},
		// shared address space
		{"100.64.0.1", Shared},
		{"100.127.255.255", Shared},
		// multicast
		{"224.0.0.1", Multicast},
		{"239.255.255.250", Multicast},
		{"ff02::1", Multicast},
		{"ff0e::1", Multicast},
		// reserved
		{"240.0.0.1", Reserved},
		{"255.255.255.255", Reserved},
	} {
		require.Equal(t, tc.kind, Classify(netip.MustParseAddr(tc.addr)), tc.addr)
	}
	require.Equal(t, Reserved, Classify(netip.Addr{}), "the zero Addr is not public")
}

func TestMetadataHost(t *testing.T) {
	for host, want := range map[string]bool{
		"metadata.google.internal":  true,
		"Metadata.Google.Internal.": true,
		"metadata.google.internal2": false,
		"google.internal":           false,
		"example.com":               false,
	} {
		require.Equal(t, want, MetadataHost(host), host)
	}
}

func TestParseRule(t *testing.T) {
	for _, tc := range []struct {
		in, out string // out: String(); "" for a syntax error
	}{
		{"*", "*"},
		{"127.0.0.1", "127.0.0.1"},
		{" 127.0.0.1 ", "127.0.0.1"},
		{"127.0.0.1:7474", "127.0.0.1:7474"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"[::1]:7474", "[::1]:7474"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8", "10.0.0.0/8"},
		{"fc00::/7", "fc00::/7"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"localhost", "localhost"},
		{"LocalHost.", "localhost"},
		{"localhost:7474", "localhost:7474"},
		{"minio.internal:9000", "minio.internal:9000"},
		{"my_host-1.lan", "my_host-1.lan"},
		// errors
		{"", ""},
		{"http://127.0.0.1", ""},
		{"127.0.0.1/x", ""},
		{"10.0.0.0/33", ""},
		{"10.0.0.0/8:80", ""},
		{"localhost:0", ""},
		{"localhost:65536", ""},
		{"localhost:080", ""},
		{"localhost:http", ""},
		{"localhost:", ""},
		{"user@host", ""},
		{"host?x", ""},
		{"a b", ""},
		{"fe80::1%eth0", ""},
		{"a..b", ""},
		{"*.example.com", ""},
		{"::1:7474:", ""},
		{"s3://bucket", ""},
	} {
		r, err := ParseRule(tc.in)
		if tc.out == "" {
			require.ErrorIs(t, err, ErrSyntax, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		require.Equal(t, tc.out, r.String(), "%q", tc.in)
	}
}

func TestRuleAllows(t *testing.T) {
	type conn struct {
		host, port, addr string
	}
	lo := conn{"127.0.0.1", "7474", "127.0.0.1"}
	loOther := conn{"127.0.0.1", "8080", "127.0.0.1"}
	lo2 := conn{"127.0.0.2", "7474", "127.0.0.2"}
	named := conn{"localhost", "7474", "127.0.0.1"}
	v6 := conn{"::1", "7474", "::1"}
	mapped := conn{"::ffff:127.0.0.1", "7474", "::ffff:127.0.0.1"}
	ten := conn{"minio.internal", "9000", "10.1.2.3"}
	for _, tc := range []struct {
		rule  string
		allow []conn
		deny  []conn
	}{
		{"*", []conn{lo, loOther, lo2, named, v6, ten}, nil},
		{"127.0.0.1", []conn{lo, loOther, named, mapped}, []conn{lo2, v6, ten}},
		{"127.0.0.1:7474", []conn{lo, named, mapped}, []conn{loOther, lo2, v6}},
		{"127.0.0.0/8", []conn{lo, loOther, lo2, named, mapped}, []conn{v6, ten}},
		{"[::1]:7474", []conn{v6}, []conn{lo, named}},
		{"localhost", []conn{named}, []conn{lo, lo2, v6}},
		{"localhost:8080", nil, []conn{named}},
		{"minio.internal", []conn{ten}, []conn{lo}},
		{"10.0.0.0/8", []conn{ten}, []conn{lo, named}},
	} {
		r, err := ParseRule(tc.rule)
		require.NoError(t, err)
		for _, c := range tc.allow {
			require.True(t, r.Allows(c.host, c.port, netip.MustParseAddr(c.addr)), "%s allows %v", tc.rule, c)
		}
		for _, c := range tc.deny {
			require.False(t, r.Allows(c.host, c.port, netip.MustParseAddr(c.addr)), "%s refuses %v", tc.rule, c)
		}
	}
	require.False(t, Rule{}.Allows("localhost", "80", netip.MustParseAddr("127.0.0.1")), "the zero Rule allows nothing")
	require.False(t, Rules(nil).Allows("localhost", "80", netip.MustParseAddr("127.0.0.1")))
}

func TestHostPort(t *testing.T) {
	require.Equal(t, "127.0.0.1:80", HostPort("127.0.0.1", "80"))
	require.Equal(t, "[::1]:80", HostPort("::1", "80"))
	require.Equal(t, "[::1]", HostPort("::1", ""))
	require.Equal(t, "localhost", HostPort("localhost", ""))
}

// FuzzParseRule: a rule that parses prints as a rule that parses to the
// same rule.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"*", "127.0.0.1:80", "[::1]:7474", "10.0.0.0/8", "localhost", "::ffff:1.2.3.4", "a.b:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		again, err := ParseRule(r.String())
		require.NoError(t, err, "%q printed as %q", s, r.String())
		require.Equal(t, r, again)
	})
}
