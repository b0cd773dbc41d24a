package main

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// Progress. Every command that does long work (ingest, verify, scan,
// export, gc, merge, bench) shows its progress the same way, with one
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
// Work whose amount is known (rows to scan or export, bytes to ingest)
// shows a bar with a rate and an ETA; work whose amount the library does
// not report (verify, gc, merge, the loader's epochs in bench) shows a
// spinner with the elapsed time and, where known, a count.

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
	unitRows  = "rows"
	unitBytes = "bytes"
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
	case unitRows:
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
	}
	return progressbar.NewOptions64(max, opts...)
}

// progress is a running progress display; a nil *progress shows nothing,
// so that commands call its methods unconditionally. Its methods are safe
// for concurrent use.
type progress struct {
	bar *progressbar.ProgressBar
}

// start returns the progress display of a command's work on w (its
// standard error), or nil when p's rules say it is not shown. max is the
// amount of work in unit, or -1 when unknown.
func (p *progressFlags) start(w io.Writer, desc string, max int64, unit string) *progress {
	if !p.shown(w) {
		return nil
	}
	return &progress{bar: newBar(w, desc, max, unit)}
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
