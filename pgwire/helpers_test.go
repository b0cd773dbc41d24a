package pgwire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/catalog"
)

var ctx = context.Background()

// Polling of conditions that become true soon (not timing assertions).
const (
	time30s   = 30 * time.Second
	pollEvery = 20 * time.Millisecond
)

// password is every test user's password.
const password = "correct horse battery staple"

// fixture is a server on 127.0.0.1 (an OS-chosen port) over a new
// catalog, with TLS from a self-signed certificate and the users alice
// (admin), bob (reader), carol (curator) and eve (labels-only: reads
// table labels only).
type fixture struct {
	srv   *Server
	addr  string
	root  string
	roots *x509.CertPool
	users string
	stop  func()
}

func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	root := filepath.Join(t.TempDir(), "lake")
	cat, err := catalog.Create(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { cat.Close() })
	usersFile := filepath.Join(t.TempDir(), "users.json")
	u, err := LoadUsers(usersFile)
	require.NoError(t, err)
	u.Roles = map[string]Role{"labels-only": {Grants: []Grant{{Tables: []string{"labels"}, Refs: []string{"*"}, Rights: []string{RightRead}}}}}
	for name, role := range map[string]string{"alice": "admin", "bob": "reader", "carol": "curator", "eve": "labels-only"} {
		require.NoError(t, u.AddUser(name, role, password))
	}
	require.NoError(t, u.Save(usersFile))
	if opts.Users == nil {
		opts.Users, err = LoadUsers(usersFile)
		require.NoError(t, err)
	}
	cert, pool := selfSigned(t)
	if opts.TLS == nil {
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := New(cat, opts)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	f := &fixture{srv: srv, addr: ln.Addr().String(), root: root, roots: pool, users: usersFile}
	f.stop = func() {
		cancel()
		require.NoError(t, <-done)
	}
	t.Cleanup(func() {
		if sctx.Err() == nil {
			f.stop()
		}
	})
	return f
}

// connect opens a pgx connection as user over TLS (the server's
// certificate verified).
func (f *fixture) connect(t testing.TB, user, pw string) (*pgx.Conn, error) {
	t.Helper()
	cfg, err := pgx.ParseConfig("postgres://" + f.addr + "/lake?sslmode=require")
	require.NoError(t, err)
	cfg.User, cfg.Password = user, pw
	cfg.TLSConfig = &tls.Config{RootCAs: f.roots, ServerName: "127.0.0.1"}
	cfg.ConnectTimeout = 30 * time.Second
	return pgx.ConnectConfig(ctx, cfg)
}

func (f *fixture) mustConnect(t testing.TB, user string) *pgx.Conn {
	t.Helper()
	c, err := f.connect(t, user, password)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close(ctx) })
	return c
}

// selfSigned makes a certificate for 127.0.0.1 and a pool that trusts it.
func selfSigned(t testing.TB) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "loch test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(c)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

// seed creates table frames through alice's connection and inserts n rows.
func seed(t testing.TB, c *pgx.Conn, n int) {
	t.Helper()
	_, err := c.Exec(ctx, "CREATE TABLE frames (id BIGINT, caption TEXT, emb EMBEDDING(3), meta JSON)")
	require.NoError(t, err)
	_, err = c.Exec(ctx, "INSERT INTO frames SELECT i, 'caption ' || i, [i, 1, 0]::FLOAT[3], json_object('split', CASE WHEN i % 2 = 0 THEN 'train' ELSE 'val' END) FROM range($1::BIGINT) t(i)", n)
	require.NoError(t, err)
}

// makeRefs makes tags and branches of table at its main head, through
// the catalog (SQL makes no refs), and returns that version.
func (f *fixture) makeRefs(t testing.TB, table string, tags, branches []string) string {
	t.Helper()
	cat, err := catalog.Open(ctx, f.root)
	require.NoError(t, err)
	defer cat.Close()
	d, err := cat.OpenTable(ctx, table)
	require.NoError(t, err)
	defer d.Close()
	for _, tag := range tags {
		_, err = d.CreateTag(ctx, tag, "main")
		require.NoError(t, err)
	}
	for _, b := range branches {
		_, err = d.CreateBranch(ctx, b, "main")
		require.NoError(t, err)
	}
	return d.Version()
}
