package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/lochdata/loch"
)

// Progress. Every command that does long work (ingest, verify, scan,
// export, gc, merge, compact, bench) shows its progress the same way, with one
// mechanism: a progressbar on standard error, never on standard output
// (which holds the result, and the --json document), erased when the work
// ends. The rules, the same for every command:
//
//   - shown when standard error is a terminal;
//   - --progress shows it even when it is not (a log file, a CI job);
//   - --quiet never shows it, whatever else is given.
//
// TestProgressTerminalRule checks these rules on a real pseudo-terminal.
//
// Work whose amount is known (rows to scan or export, bytes to ingest,
// objects gc deletes, rows merge decides, rows compact copies) shows a bar with a count, a rate
// and an ETA; work whose amount is not known beforehand (verify's and gc's
// walks, the loader's epochs in bench) shows a spinner with the elapsed
// time and the count so far. verify, gc and merge learn their counts from
// the library (loch.WithProgress; see report).

// progressFlags are the --progress and --quiet flags.
type progressFlags struct {
	force, quiet bool
}

// add adds the flags to fs.
func (p *progressFlags) add(fs *pflag.FlagSet) {
	fs.BoolVar(&p.force, "progress", false, "show progress on standard error even when it is not a terminal")
	fs.BoolVarP(&p.quiet, "quiet", "q", false, "show no progress")
}

// shown reports whether progress is shown on w, the command's standard
// error.
func (p *progressFlags) shown(w io.Writer) bool {
	return !p.quiet && (p.force || isTerminal(w))
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Units of a progress display.
const (
	unitRows    = "rows"
	unitBytes   = "bytes"
	unitObjects = "objects"
)

// newBar returns a progress bar on w described by desc, over max units
// (-1: a spinner, for work of unknown size). It is drawn at once, so that
// even work that ends quickly shows it.
func newBar(w io.Writer, desc string, max int64, unit string) *progressbar.ProgressBar {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetPredictTime(max >= 0),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionSetRenderBlankState(true),
	}
	switch unit {
	case unitBytes:
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionUseIECUnits(true))
	case unitRows, unitObjects:
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
	}
	return progressbar.NewOptions64(max, opts...)
}

// progress is a running progress display; a nil *progress shows nothing,
// so that commands call its methods unconditionally. Its methods are safe
// for concurrent use.
type progress struct {
	bar  *progressbar.ProgressBar
	desc string
}

// start returns the progress display of a command's work on w (its
// standard error), or nil when p's rules say it is not shown. max is the
// amount of work in unit, or -1 when unknown.
func (p *progressFlags) start(w io.Writer, desc string, max int64, unit string) *progress {
	if !p.shown(w) {
		return nil
	}
	return &progress{bar: newBar(w, desc, max, unit), desc: desc}
}

// report returns ctx carrying a loch.Progress that shows a library call's
// reports on p: the count of each phase, as a bar once the phase's total
// is known (a spinner while it is not). With a nil p, ctx as it is.
func (p *progress) report(ctx context.Context) context.Context {
	if p == nil {
		return ctx
	}
	phase, max := "", int64(-1)
	return loch.WithProgress(ctx, func(ph string, done, total int64) {
		if ph != phase {
			phase = ph
			if ph == p.desc {
				p.bar.Describe(p.desc)
			} else {
				p.bar.Describe(p.desc + ": " + ph)
			}
		}
		if total != max {
			max = total
			p.bar.ChangeMax64(total)
		}
		_ = p.bar.Set64(done)
	})
}

// add records n more units done.
func (p *progress) add(n int64) {
	if p != nil {
		_ = p.bar.Add64(n)
	}
}

// describe changes the description, for work in phases.
func (p *progress) describe(desc string) {
	if p != nil {
		p.bar.Describe(desc)
	}
}

// done erases the display, leaving the line to the result or the error.
// It may be called more than once.
func (p *progress) done() {
	if p != nil {
		_ = p.bar.Clear()
		_ = p.bar.Exit()
	}
}
