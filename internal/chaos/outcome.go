package chaos

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Outcome is how one scenario ended for one reader or operation.
type Outcome int

// The outcomes, from good to bad. Panic, Hung, Wrong and Lost fail the
// campaign; Unclear is reported but does not.
const (
	// OK: success with the right data, or a reader that did not need
	// the damaged object (unaffected).
	OK Outcome = iota
	// ClearError: a refusal that names the object or says what is wrong
	// (corrupt, not found, a storage failure), with nothing lost.
	ClearError
	// Unclear: a refusal whose message names neither the object nor the
	// kind of failure.
	Unclear
	// Panic: a Go panic, a fatal runtime error or a stack trace in the
	// output, or a failed fuzz target.
	Panic
	// Hung: the command outlived its time limit.
	Hung
	// Wrong: data read back that differs from the truth with a success
	// status, verify saying ok over a damaged object, a dataset left
	// unsound (verify fails) or unreadable after a crash or an outage, or
	// a next writer that fails.
	Wrong
	// Lost: a commit acknowledged (its command exited 0) that is gone or
	// lacks its rows afterwards.
	Lost
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "clear error", "unclear", "panic", "hung", "wrong", "lost"}

func (o Outcome) String() string { return outcomeNames[o] }

// Failed reports whether o fails the campaign.
func (o Outcome) Failed() bool { return o >= Panic }

// panicRE matches what a Go program prints when it panics or dies of a
// fatal runtime error, what loch's CLI prints for a panic it recovered,
// and what net/http logs for a panic in a handler.
var panicRE = regexp.MustCompile(`(?m)^panic: |fatal error: |goroutine \d+ \[|loch: internal error|runtime error: |http: panic serving|\[signal SIG`)

// panicked reports whether a command's output shows a panic.
func panicked(output string) bool { return panicRE.MatchString(output) }

// clearRE matches messages that say what is wrong with an object.
var clearRE = regexp.MustCompile(`(?i)corrupt|not found|no such file|missing|checksum|does not match|truncated|unexpected EOF`)

// outageRE matches messages that say that storage failed.
var outageRE = regexp.MustCompile(`(?i)gave up after|connection refused|outcome (is )?unknown|unavailable|timeout|deadline exceeded|connection reset`)

// clearDamage reports whether message names one of the damaged keys (by
// key or by its last element) or says what is wrong.
func clearDamage(message string, damaged []string) bool {
	for _, k := range damaged {
		if strings.Contains(message, k) || strings.Contains(message, k[strings.LastIndexByte(k, '/')+1:]) {
			return true
		}
	}
	return clearRE.MatchString(message)
}

// clearOutage reports whether message says that storage failed.
func clearOutage(message string) bool {
	return outageRE.MatchString(message) || clearRE.MatchString(message)
}

// Row is one line of the campaign's table: one family and one reader (or
// operation), and how many scenarios ended in each outcome.
type Row struct {
	Family, Reader string
	Counts         [numOutcomes]int
}

// Tried is the number of scenarios counted in r.
func (r Row) Tried() int {
	n := 0
	for _, c := range r.Counts {
		n += c
	}
	return n
}

// Failure is one scenario whose outcome fails the campaign, or is
// unclear: what was done, and what came out, to reproduce it.
type Failure struct {
	Family, Reader string
	Outcome        Outcome
	Scenario       string // what was done: object, mutation, delay, ...
	Detail         string // what came out: status, output, truth
}

// Table tallies the outcomes of a campaign. It is safe for concurrent use.
type Table struct {
	mu       sync.Mutex
	rows     []Row
	failures []Failure
}

// Add counts one outcome; a failed or unclear one is kept with its
// scenario and detail.
func (t *Table) Add(family, reader string, o Outcome, scenario, detail string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := slices.IndexFunc(t.rows, func(r Row) bool { return r.Family == family && r.Reader == reader })
	if i < 0 {
		t.rows = append(t.rows, Row{Family: family, Reader: reader})
		i = len(t.rows) - 1
	}
	t.rows[i].Counts[o]++
	if o != OK && o != ClearError {
		t.failures = append(t.failures, Failure{family, reader, o, scenario, detail})
	}
}

// Rows returns the table's rows in the order first counted.
func (t *Table) Rows() []Row {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.rows)
}

// Failures returns the failed and unclear scenarios in the order found.
func (t *Table) Failures() []Failure {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.failures)
}

// Failed is the number of scenarios that fail the campaign.
func (t *Table) Failed() int {
	n := 0
	for _, r := range t.Rows() {
		for o := Panic; o < numOutcomes; o++ {
			n += r.Counts[o]
		}
	}
	return n
}

// Print writes the table as aligned text (a Markdown table), a line of
// totals last.
func (t *Table) Print(w io.Writer) {
	rows := t.Rows()
	total := Row{Family: "total"}
	for _, r := range rows {
		for o, c := range r.Counts {
			total.Counts[o] += c
		}
	}
	rows = append(rows, total)
	head := []string{"family", "reader / operation", "tried"}
	for o := OK; o < numOutcomes; o++ {
		head = append(head, o.String())
	}
	cells := [][]string{head}
	for _, r := range rows {
		line := []string{r.Family, r.Reader, fmt.Sprint(r.Tried())}
		for _, c := range r.Counts {
			line = append(line, fmt.Sprint(c))
		}
		cells = append(cells, line)
	}
	width := make([]int, len(head))
	for _, line := range cells {
		for i, c := range line {
			width[i] = max(width[i], len(c))
		}
	}
	for k, line := range cells {
		var b strings.Builder
		for i, c := range line {
			if i < 2 {
				fmt.Fprintf(&b, "| %-*s ", width[i], c)
			} else {
				fmt.Fprintf(&b, "| %*s ", width[i], c)
			}
		}
		fmt.Fprintln(w, b.String()+"|")
		if k == 0 {
			b.Reset()
			for i := range line {
				if i < 2 {
					fmt.Fprintf(&b, "|-%s-", strings.Repeat("-", width[i]))
				} else {
					fmt.Fprintf(&b, "|-%s:", strings.Repeat("-", width[i]))
				}
			}
			fmt.Fprintln(w, b.String()+"|")
		}
	}
}

// PrintFailures writes every failed and unclear scenario with its details.
func (t *Table) PrintFailures(w io.Writer) {
	for _, f := range t.Failures() {
		fmt.Fprintf(w, "%s: %s / %s: %s\n    %s\n", strings.ToUpper(f.Outcome.String()), f.Family, f.Reader, f.Scenario,
			strings.ReplaceAll(strings.TrimSpace(f.Detail), "\n", "\n    "))
	}
}
