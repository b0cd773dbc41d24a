package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/viewer"
)

// defaultServeAddr is where 'loch serve' listens unless --addr says.
const defaultServeAddr = "127.0.0.1:7474"

// serveOptions are the arguments and flags of loch serve.
type serveOptions struct {
	streams
	url          string
	addr         string
	linkAllow    []string
	linkAllowSet bool // --link-allow given
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve URL|ROOT",
		Short: "Look at a dataset or a catalog in the browser",
		Long: `Serve starts a local web viewer of a dataset (URL) or of a catalog's tables
(ROOT) and prints its address: the tables with their rows, size and last
commit; a dataset's schema with per-column statistics (class histograms,
shape ranges, nulls, stored bytes and ratio) and a ref switcher; a grid of
samples that loads a page at a time as it scrolls (image thumbnails with
boxes and masks drawn on, labels by name, text and JSON, tensor summaries,
audio and video players, link targets); a row at full size; a SQL query box
whose result is the same grid, shareable as a URL and savable as a named
selection; the commit graph; and the diff of two refs.

Link columns are followed as the link policy allows: by default to public
addresses and the dataset's own bucket only, never to loopback, private,
link-local or cloud metadata addresses. --link-allow (or $LOCH_LINK_ALLOW,
which it replaces) names more: addresses, CIDR prefixes and host[:port]
("127.0.0.1:8000,10.0.0.0/8,minio.internal"), and other buckets
("s3://images"); see docs/cli.md, "Links".

It listens on 127.0.0.1 (port 7474) unless --addr names another address
(port 0: one the system picks), after it has opened URL|ROOT, so that a
path that is no dataset is reported as such even where the port is taken.
Any address that is not loopback needs the token that serve prints at
start: open the printed URL once, and the browser keeps it as a cookie.
The viewer is read-only except for saving selections, and reads through
the same storage layer as every other command (local paths, s3://, gs://,
az://). Ctrl-C stops it.`,
		Example: `  loch serve ./pets
  loch serve s3://lake/tables --addr 127.0.0.1:8080
  loch serve ./lake --addr 0.0.0.0:7474   # prints a URL with a token
  loch serve ./pets --link-allow 127.0.0.1:8000,s3://images`,
		Args: exactArgs("URL|ROOT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.streams, o.url, o.linkAllowSet = streamsOf(cmd), args[0], cmd.Flags().Changed("link-allow")
			return runServe(cmd.Context(), &o)
		},
	}
	cmd.Flags().StringVar(&o.addr, "addr", defaultServeAddr, "listen on this host:port (a non-loopback address requires the printed token)")
	cmd.Flags().StringArrayVar(&o.linkAllow, "link-allow", nil, "addresses, CIDR prefixes, host[:port] and buckets (s3://name) that links may reach besides public hosts and the dataset's own bucket, comma-separated or repeated; replaces $LOCH_LINK_ALLOW")
	return cmd
}

// runServe serves the viewer of o.url until ctx ends.
func runServe(ctx context.Context, o *serveOptions) error {
	if err := checkURL(o.url); err != nil {
		return err
	}
	var open []loch.Option
	if o.linkAllowSet {
		p := loch.LinkPolicy{Allow: []string{}}
		for _, v := range o.linkAllow {
			p.Allow = append(p.Allow, loch.SplitLinkAllow(v)...)
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("--link-allow: %w", err)
		}
		open = append(open, loch.WithLinkPolicy(p))
	}
	// The target first: a path that is no dataset is the error
	// to report, even where the address is taken (issue 35).
	srv, err := viewer.New(ctx, o.url, viewer.Options{Log: o.stderr, Open: open})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", o.addr, err)
	}
	defer ln.Close()
	token := srv.GuardFor(ln.Addr())
	u := "http://" + printAddr(ln.Addr()) + "/"
	if token != "" {
		u += "?token=" + token
	}
	fmt.Fprintf(o.stdout, "loch serve: %s\n", u)
	return serve(ctx, ln, srv)
}

// printAddr is the host:port to print for a listener: the machine's name
// for an unspecified address (0.0.0.0, ::), which no browser can open.
func printAddr(a net.Addr) string {
	ta, ok := a.(*net.TCPAddr)
	if !ok || !ta.IP.IsUnspecified() {
		return a.String()
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(ta.Port))
}

// serve runs h on ln until ctx ends, then shuts down gracefully.
func serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		<-done
		return nil
	}
}
