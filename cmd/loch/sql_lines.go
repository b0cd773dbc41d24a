package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/term"
)

// lineReader gives loch sql's shell its input one line at a time (without
// the newline); io.EOF ends it.
type lineReader interface {
	ReadLine(prompt string) (string, error)
}

// scanLines reads lines from a file or pipe, with no prompt.
type scanLines struct{ sc *bufio.Scanner }

func newScanLines(in io.Reader) *scanLines {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	return &scanLines{sc}
}

func (s *scanLines) ReadLine(string) (string, error) {
	if s.sc.Scan() {
		return s.sc.Text(), nil
	}
	if err := s.sc.Err(); err != nil {
		return "", err
	}
	return "", io.EOF
}

// sqlHistoryLen is the number of lines the shell's history keeps.
const sqlHistoryLen = 1000

// lineEditor reads lines from a terminal with x/term's line editor: arrow
// keys move in the line and through the history, which is the lines typed
// in this and earlier sessions (the history file). The terminal is in raw
// mode only while a line is read, so that a statement's output prints as
// usual; Ctrl-D on an empty line or Ctrl-C ends the input.
type lineEditor struct {
	tty *os.File
	t   *term.Terminal
}

// newLineEditor edits lines read from tty, echoing them (and the prompt)
// to echo, with the history kept in the file at path ("": none).
func newLineEditor(tty *os.File, echo io.Writer, path string) *lineEditor {
	t := term.NewTerminal(struct {
		io.Reader
		io.Writer
	}{tty, echo}, "")
	t.History = openHistory(path, sqlHistoryLen)
	return &lineEditor{tty: tty, t: t}
}

func (e *lineEditor) ReadLine(prompt string) (string, error) {
	state, err := term.MakeRaw(int(e.tty.Fd()))
	if err != nil {
		return "", fmt.Errorf("terminal: %w", err)
	}
	defer term.Restore(int(e.tty.Fd()), state)
	e.t.SetPrompt(prompt)
	line, err := e.t.ReadLine()
	if errors.Is(err, term.ErrPasteIndicator) { // a pasted line is a line
		err = nil
	}
	return line, err
}

// sqlHistoryPath is the shell's history file in the user's cache
// directory, or "" where there is none.
func sqlHistoryPath() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "loch", "sql_history")
}

// fileHistory is a term.History of at most limit lines, loaded from a file
// (one line each, oldest first) and appended to it as lines are entered.
// The file is cut back to the last limit lines when it has grown past twice
// that. A file that cannot be read or written leaves the history to this
// session.
type fileHistory struct {
	path  string
	limit int
	lines []string // oldest first
}

func openHistory(path string, limit int) *fileHistory {
	h := &fileHistory{path: path, limit: limit}
	if path == "" {
		return h
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return h
	}
	all := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	all = slices.DeleteFunc(all, func(s string) bool { return strings.TrimSpace(s) == "" })
	h.lines = all[max(0, len(all)-limit):]
	if len(all) > 2*limit {
		_ = os.WriteFile(path, []byte(strings.Join(h.lines, "\n")+"\n"), 0o600)
	}
	return h
}

// Add records a line entered, unless it is blank or repeats the last one.
func (h *fileHistory) Add(line string) {
	if strings.TrimSpace(line) == "" || (len(h.lines) > 0 && h.lines[len(h.lines)-1] == line) {
		return
	}
	h.lines = append(h.lines, line)
	if len(h.lines) > h.limit {
		h.lines = slices.Delete(h.lines, 0, len(h.lines)-h.limit)
	}
	if h.path == "" || os.MkdirAll(filepath.Dir(h.path), 0o755) != nil {
		return
	}
	f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = fmt.Fprintln(f, line)
}

// Len is the number of lines kept.
func (h *fileHistory) Len() int { return len(h.lines) }

// At is the line i entries back: 0 is the latest.
func (h *fileHistory) At(i int) string { return h.lines[len(h.lines)-1-i] }
