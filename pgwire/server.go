package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/query"
)

// Options configure a Server. The zero value refuses every login.
type Options struct {
	// Users are the logins and roles; nil or empty refuses every login.
	Users *Users
	// TLS, when set, is offered to clients (SSLRequest); it is required
	// to serve an address that is not loopback, and then every
	// connection must use it.
	TLS *tls.Config
	// MaxConns bounds the open connections (default 64); one more is
	// refused with SQLSTATE 53300.
	MaxConns int
	// StatementTimeout cancels a statement that runs longer (0: none),
	// with SQLSTATE 57014.
	StatementTimeout time.Duration
	// MemoryLimit is DuckDB's memory_limit of each connection's query
	// engine, which its statements share ("4GB"; "": DuckDB's default).
	MemoryLimit string
	// Threads is DuckDB's threads of each connection's query engine
	// (0: GOMAXPROCS).
	Threads int
	// ShutdownGrace is how long Serve waits, once its context ends, for
	// running statements to finish before it cancels them (default 10s).
	ShutdownGrace time.Duration
	// Log receives one line per connection event and error (never a
	// password, verifier or statement parameter); nil: io.Discard.
	Log io.Writer
}

// Server answers PostgreSQL clients over one catalog. Serve runs it.
type Server struct {
	cat  *catalog.Catalog
	opts Options

	mu      sync.Mutex
	conns   map[uint32]*conn  // by process id
	raw     map[net.Conn]bool // accepted, not yet registered (startup)
	mirror  *query.Mirror
	mirKey  string
	ddlGen  int
	stopped bool
	wg      sync.WaitGroup
	logMu   sync.Mutex
}

// New makes a server over cat; it does not close cat.
func New(cat *catalog.Catalog, opts Options) *Server {
	if opts.MaxConns <= 0 {
		opts.MaxConns = 64
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 10 * time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Users == nil {
		opts.Users = &Users{}
	}
	return &Server{cat: cat, opts: opts, conns: map[uint32]*conn{}, raw: map[net.Conn]bool{}}
}

// ErrTLSRequired is Serve's error for an address that is not loopback
// without Options.TLS.
var ErrTLSRequired = errors.New("pgwire: TLS (a certificate and key) is required to listen on an address that is not loopback")

// Serve answers connections on ln until ctx ends, then stops accepting,
// lets running statements finish for Options.ShutdownGrace and cancels
// the rest (a cancelled write commits nothing), closes every connection
// and returns nil. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer ln.Close()
	if !isLoopback(ln.Addr()) && s.opts.TLS == nil {
		return ErrTLSRequired
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				s.shutdown()
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.shutdown()
			return fmt.Errorf("pgwire: accept: %w", err)
		}
		s.mu.Lock()
		if len(s.raw) >= s.opts.MaxConns { // clients that do not finish their startup
			s.mu.Unlock()
			nc.Close()
			continue
		}
		s.raw[nc] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.handle(ctx, nc)
		}()
	}
}

// shutdown drains the connections: statements get the grace period,
// idle connections are told and closed at once.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.stopped = true
	conns := make([]*conn, 0, len(s.conns))
	for _, c := range s.conns {
		conns = append(conns, c)
	}
	for nc := range s.raw {
		nc.Close() // in startup: nothing runs for it yet
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.stopIdle()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.opts.ShutdownGrace):
		for _, c := range conns {
			c.abort()
		}
		<-done
	}
	s.mu.Lock()
	if s.mirror != nil {
		s.mirror.Close()
		s.mirror = nil
	}
	s.mu.Unlock()
}

// register adds c under a fresh process id and secret key; false when the
// server is full or stopping.
func (s *Server) register(c *conn) (ok bool, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.raw, c.nc0)
	if s.stopped {
		return false, false
	}
	if len(s.conns) >= s.opts.MaxConns {
		return false, true
	}
	for {
		var b [8]byte
		rand.Read(b[:])
		c.pid, c.secret = binary.BigEndian.Uint32(b[:4])&0x7fffffff, binary.BigEndian.Uint32(b[4:])
		if _, taken := s.conns[c.pid]; !taken && c.pid != 0 {
			break
		}
	}
	s.conns[c.pid] = c
	return true, false
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.raw, c.nc0)
	delete(s.conns, c.pid)
	s.mu.Unlock()
}

// cancel cancels the running statement of process pid when secret is its
// key (a CancelRequest); a wrong key does nothing, as in PostgreSQL.
func (s *Server) cancel(pid, secret uint32) {
	s.mu.Lock()
	c := s.conns[pid]
	s.mu.Unlock()
	if c != nil && c.secret == secret {
		c.cancelStatement()
	}
}

// Connections is the number of open connections (authenticated or not
// yet).
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// running is the number of connections with a statement running.
func (s *Server) running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.conns {
		c.mu.Lock()
		if c.busy {
			n++
		}
		c.mu.Unlock()
	}
	return n
}

// logf writes one log line.
func (s *Server) logf(format string, a ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	fmt.Fprintf(s.opts.Log, "loch pg: "+format+"\n", a...)
}

// getMirror returns the mirror of the catalog's current tables, making it
// again when the tables or their schemas (a DDL through this server)
// changed. The caller must not close it; release with the returned func.
func (s *Server) getMirror(ctx context.Context) (*query.Mirror, error) {
	tables, err := s.cat.Tables(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := fmt.Sprint(s.ddlGen)
	for _, t := range tables {
		key += "\x00" + t.Name + "\x00" + t.URL
	}
	if s.mirror != nil && s.mirKey == key {
		return s.mirror, nil
	}
	open := map[string]*loch.Dataset{}
	defer func() {
		for _, d := range open {
			d.Close()
		}
	}()
	for _, t := range tables {
		d, err := s.cat.OpenTable(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		open[t.Name] = d
	}
	setup := pgCatalogSetup
	if s.opts.MemoryLimit != "" {
		setup = append(slices.Clone(setup), "SET memory_limit = "+quote(s.opts.MemoryLimit))
	}
	m, err := query.NewMirror(ctx, open, setup, true)
	if err != nil {
		return nil, err
	}
	if s.mirror != nil {
		old := s.mirror
		go func() { old.Close() }() // after statements that hold it: Close waits for its lock
	}
	s.mirror, s.mirKey = m, key
	return m, nil
}

// schemaChanged makes the next getMirror rebuild.
func (s *Server) schemaChanged() {
	s.mu.Lock()
	s.ddlGen++
	s.mu.Unlock()
}

// isLoopback reports whether a listener's address is a loopback one.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return a.Network() == "unix"
	}
	return ta.IP.IsLoopback()
}
