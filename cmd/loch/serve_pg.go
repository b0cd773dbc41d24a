package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/pgwire"
)

// servePGOptions are loch serve --pg's settings.
type servePGOptions struct {
	streams
	root, addr, users, cert, key string
	maxConns                     int
	timeout                      time.Duration
	memory                       string
}

// addServePGFlags adds the flags of loch serve --pg to serve's.
func addServePGFlags(cmd *cobra.Command, o *servePGOptions) {
	f := cmd.Flags()
	f.StringVar(&o.addr, "pg", "", "answer PostgreSQL clients on this host:port (docs/pg.md) instead of serving the viewer")
	f.StringVar(&o.users, "users", "", "with --pg: the users file (loch user add); without it every login is refused")
	f.StringVar(&o.cert, "tls-cert", "", "with --pg: TLS certificate file (PEM); TLS is required on an address that is not loopback")
	f.StringVar(&o.key, "tls-key", "", "with --pg: TLS private key file (PEM)")
	f.IntVar(&o.maxConns, "max-conns", 64, "with --pg: most open connections")
	f.DurationVar(&o.timeout, "statement-timeout", 0, "with --pg: cancel a statement that runs longer (0: never)")
	f.StringVar(&o.memory, "query-memory", "", "with --pg: DuckDB memory_limit of each statement (e.g. 4GB; default DuckDB's)")
}

// runServePG serves the catalog at o.root over the PostgreSQL protocol
// until ctx ends (SIGINT, SIGTERM): then running statements get 10
// seconds to finish before they are cancelled (a cancelled write commits
// nothing).
func runServePG(ctx context.Context, o *servePGOptions) error {
	stdout, stderr := o.stdout, o.stderr
	if err := checkURL(o.root); err != nil {
		return err
	}
	if (o.cert == "") != (o.key == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	opts := pgwire.Options{MaxConns: o.maxConns, StatementTimeout: o.timeout, MemoryLimit: o.memory, Log: stderr}
	if o.users != "" {
		u, err := pgwire.LoadUsers(o.users)
		if err != nil {
			return err
		}
		opts.Users = u
	} else {
		fmt.Fprintln(stderr, "loch serve --pg: no --users file: every login is refused")
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	}
	cat, err := catalog.Open(ctx, o.root)
	if err != nil {
		return err
	}
	defer cat.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--pg %s: %w", o.addr, err)
	}
	srv := pgwire.New(cat, opts)
	fmt.Fprintf(stdout, "loch serve: postgresql://%s/ (tls: %v)\n", printAddr(ln.Addr()), opts.TLS != nil)
	return srv.Serve(ctx, ln)
}
