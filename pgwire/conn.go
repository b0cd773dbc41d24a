package pgwire

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/lochdata/loch/sqlcat"
)

// serverVersion is the PostgreSQL version the server reports: clients
// (psql) pick their catalog queries by it.
const serverVersion = "16.4"

// keepEngines makes each connection keep one query engine across its
// statements (sqlcat.Session.KeepEngine); benchmarks turn it off to
// measure the engine per statement it replaced.
var keepEngines = true

// startupTimeout bounds the startup and authentication of a connection.
const startupTimeout = 30 * time.Second

// conn is one client connection. Its goroutine (handle) reads and answers
// messages; a pump goroutine reads the socket so that a client that goes
// away cancels what runs for it; cancelStatement, stopIdle and abort may
// be called from other goroutines.
type conn struct {
	srv         *Server
	nc0         net.Conn // as accepted
	nc          net.Conn // nc0, or TLS over it
	be          *pgproto3.Backend
	pid, secret uint32
	user        string
	roleName    string
	role        Role
	sess        *sqlcat.Session

	ctx  context.Context // ends when the client goes away or the server aborts
	stop context.CancelFunc

	mu         sync.Mutex
	stmtCancel context.CancelFunc // of the running statement
	busy       bool
	draining   bool

	stmts   map[string]*prepared
	portals map[string]*portal
	cursors map[string]*cursor
	// txStatus is what ReadyForQuery reports: 'I' idle, 'T' in a
	// transaction (sess.Begin), 'E' after an error in one (tx.go).
	txStatus byte
}

// handle serves one connection to its end.
func (s *Server) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	c := &conn{srv: s, nc0: nc, nc: nc, stmts: map[string]*prepared{}, portals: map[string]*portal{}, cursors: map[string]*cursor{}}
	nc.SetDeadline(time.Now().Add(startupTimeout))
	params, err := c.negotiate(isLoopback(nc.LocalAddr()))
	if err != nil || params == nil {
		s.mu.Lock()
		delete(s.raw, nc)
		s.mu.Unlock()
		if err != nil && !errors.Is(err, io.EOF) {
			s.logf("%s: startup: %v", nc.RemoteAddr(), err)
		}
		return
	}
	ok, full := s.register(c)
	if !ok {
		s.unregister(c)
		code, msg := "57P03", "the server is shutting down"
		if full {
			code, msg = "53300", fmt.Sprintf("sorry, too many clients already (at most %d connections)", s.opts.MaxConns)
		}
		c.fatal(code, msg)
		return
	}
	defer s.unregister(c)
	c.ctx, c.stop = context.WithCancel(context.Background())
	defer c.stop()
	p := newPump(c.ctx, c.nc, c.stop)
	c.be = pgproto3.NewBackend(p, c.nc)
	c.user = params["user"]
	if err := c.authenticate(); err != nil {
		s.logf("%s: user %q: login refused: %v", nc.RemoteAddr(), c.user, err)
		return
	}
	nc.SetDeadline(time.Time{})
	s.logf("%s: user %s (role %s) connected", nc.RemoteAddr(), c.user, c.roleName)
	c.sess = sqlcat.NewSession(s.cat)
	c.sess.Sandbox = true
	c.sess.SampleData = true // images and tensors as bytea (types.go)
	c.sess.Threads = s.opts.Threads
	c.sess.MemoryLimit = s.opts.MemoryLimit
	c.sess.Message = ""
	c.sess.KeepEngine = keepEngines
	c.greet(params)
	c.loop()
	c.closeCursors()
	for _, p := range c.portals {
		if p.res != nil {
			p.res.close()
		}
	}
	c.sess.Close()
	s.logf("%s: user %s disconnected", nc.RemoteAddr(), c.user)
}

// negotiate reads the startup packets: TLS when asked and offered, a
// CancelRequest (served, then nil params), else the StartupMessage's
// parameters.
func (c *conn) negotiate(loopback bool) (map[string]string, error) {
	be := pgproto3.NewBackend(c.nc, c.nc)
	secure := false
	for {
		msg, err := be.ReceiveStartupMessage()
		if err != nil {
			return nil, err
		}
		switch m := msg.(type) {
		case *pgproto3.SSLRequest:
			if c.srv.opts.TLS == nil || secure {
				if _, err := c.nc.Write([]byte{'N'}); err != nil {
					return nil, err
				}
				continue
			}
			if _, err := c.nc.Write([]byte{'S'}); err != nil {
				return nil, err
			}
			tc := tls.Server(c.nc, c.srv.opts.TLS)
			if err := tc.Handshake(); err != nil {
				return nil, fmt.Errorf("tls: %w", err)
			}
			c.nc, secure = tc, true
			be = pgproto3.NewBackend(c.nc, c.nc)
		case *pgproto3.GSSEncRequest:
			if _, err := c.nc.Write([]byte{'N'}); err != nil {
				return nil, err
			}
		case *pgproto3.CancelRequest:
			if len(m.SecretKey) == 4 {
				c.srv.cancel(m.ProcessID, uint32(m.SecretKey[0])<<24|uint32(m.SecretKey[1])<<16|uint32(m.SecretKey[2])<<8|uint32(m.SecretKey[3]))
			}
			return nil, nil
		case *pgproto3.StartupMessage:
			c.be = be
			if c.srv.opts.TLS != nil && !loopback && !secure {
				c.fatal("28000", "TLS is required: connect with sslmode=require")
				return nil, errors.New("a connection without TLS to an address that is not loopback")
			}
			return m.Parameters, nil
		default:
			return nil, fmt.Errorf("unexpected startup message %T", msg)
		}
	}
}

// authenticate runs SCRAM-SHA-256 for c.user. An unknown user goes
// through the same exchange, with a verifier no password matches, so the
// client cannot tell it from a wrong password.
func (c *conn) authenticate() error {
	u, known := c.srv.opts.Users.Users[c.user]
	v, err := ParseVerifier(u.SCRAM)
	role, roleOK := c.srv.opts.Users.role(u.Role)
	if !known || err != nil || !roleOK {
		v, _ = NewVerifier(randomString(), DefaultIterations)
		known = false
	}
	c.be.Send(&pgproto3.AuthenticationSASL{AuthMechanisms: []string{scramMechanism}})
	if err := c.be.Flush(); err != nil {
		return err
	}
	sc := &scramServer{v: v}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASL); err != nil {
		return err
	}
	msg, err := c.be.Receive()
	if err != nil {
		return err
	}
	init, ok := msg.(*pgproto3.SASLInitialResponse)
	if !ok || init.AuthMechanism != scramMechanism {
		c.fatal("28000", "want SASL authentication with SCRAM-SHA-256")
		return fmt.Errorf("client sent %T, want SCRAM-SHA-256", msg)
	}
	first, err := sc.first(init.Data)
	if err != nil {
		c.fatal("08P01", err.Error())
		return err
	}
	c.be.Send(&pgproto3.AuthenticationSASLContinue{Data: []byte(first)})
	if err := c.be.Flush(); err != nil {
		return err
	}
	if err := c.be.SetAuthType(pgproto3.AuthTypeSASLContinue); err != nil {
		return err
	}
	if msg, err = c.be.Receive(); err != nil {
		return err
	}
	resp, ok := msg.(*pgproto3.SASLResponse)
	if !ok {
		return fmt.Errorf("client sent %T, want a SASLResponse", msg)
	}
	final, err := sc.final(resp.Data)
	if err != nil || !known {
		c.fatal("28P01", fmt.Sprintf("password authentication failed for user %q", c.user))
		if err == nil {
			err = errors.New("no such user, or no users file")
		}
		return err
	}
	c.roleName, c.role = u.Role, role
	c.be.Send(&pgproto3.AuthenticationSASLFinal{Data: []byte(final)})
	c.be.Send(&pgproto3.AuthenticationOk{})
	return nil
}

// greet sends the parameters clients expect, the cancel key and the
// first ReadyForQuery.
func (c *conn) greet(params map[string]string) {
	for _, kv := range [][2]string{
		{"server_version", serverVersion}, {"server_encoding", "UTF8"}, {"client_encoding", "UTF8"},
		{"DateStyle", "ISO, MDY"}, {"TimeZone", "UTC"}, {"integer_datetimes", "on"},
		{"standard_conforming_strings", "on"}, {"IntervalStyle", "postgres"}, {"is_superuser", "off"},
		{"session_authorization", c.user}, {"application_name", params["application_name"]},
	} {
		c.be.Send(&pgproto3.ParameterStatus{Name: kv[0], Value: kv[1]})
	}
	c.be.Send(&pgproto3.BackendKeyData{ProcessID: c.pid, SecretKey: []byte{byte(c.secret >> 24), byte(c.secret >> 16), byte(c.secret >> 8), byte(c.secret)}})
	c.ready()
}

// ready sends ReadyForQuery with the transaction status clients track
// and flushes.
func (c *conn) ready() {
	if c.txStatus == 0 {
		c.txStatus = 'I'
	}
	c.be.Send(&pgproto3.ReadyForQuery{TxStatus: c.txStatus})
	c.be.Flush()
}

// fatal sends a FATAL error and flushes; the caller closes.
func (c *conn) fatal(code, msg string) {
	c.be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: code, Message: msg})
	c.be.Flush()
}

// cancelStatement cancels the running statement, if any.
func (c *conn) cancelStatement() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stmtCancel != nil {
		c.stmtCancel()
	}
}

// stopIdle closes the connection when no statement runs, else marks it
// to close when its statement ends (server shutdown).
func (c *conn) stopIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.draining = true
	if !c.busy {
		c.nc.Close()
	}
}

// abort cancels what runs and closes the connection.
func (c *conn) abort() {
	if c.stop != nil {
		c.stop()
	}
	c.nc.Close()
}

// begin starts a statement: its context ends at the statement timeout, a
// CancelRequest, the client's going away or the server's abort. end
// releases it; it reports whether the server is draining.
func (c *conn) begin() (context.Context, func() bool) {
	ctx, cancel := context.WithCancel(c.ctx)
	if t := c.srv.opts.StatementTimeout; t > 0 {
		ctx, cancel = context.WithTimeoutCause(c.ctx, t, errStatementTimeout)
	}
	c.mu.Lock()
	c.stmtCancel, c.busy = cancel, true
	c.mu.Unlock()
	return ctx, func() bool {
		cancel()
		c.mu.Lock()
		defer c.mu.Unlock()
		c.stmtCancel, c.busy = nil, false
		return c.draining
	}
}

var errStatementTimeout = errors.New("canceling statement due to statement timeout")

// pump reads the socket on its own goroutine, so that the end of the
// connection is seen (and cancels what runs for it) while a statement
// runs; the backend reads what it read.
type pump struct {
	ch  chan []byte
	cur []byte
	err error
}

func newPump(ctx context.Context, r io.Reader, onEnd func()) *pump {
	p := &pump{ch: make(chan []byte, 4)}
	go func() {
		for {
			buf := make([]byte, 16<<10)
			n, err := r.Read(buf)
			if n > 0 {
				select {
				case p.ch <- buf[:n]:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				p.err = err
				close(p.ch)
				onEnd()
				return
			}
		}
	}()
	return p
}

func (p *pump) Read(b []byte) (int, error) {
	if len(p.cur) == 0 {
		var ok bool
		if p.cur, ok = <-p.ch; !ok {
			return 0, p.err
		}
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}
