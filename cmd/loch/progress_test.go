package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// onTerminal runs the CLI with args and its standard error on a new
// pseudo-terminal, and returns what the terminal received and the exit
// status. Standard output is a buffer, which must not get progress.
func onTerminal(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	got := make(chan []byte)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, ptmx) // ends with EIO once tty is closed and drained
		got <- b.Bytes()
	}()
	var stdout bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, tty)
	require.NoError(t, tty.Close())
	out := <-got
	require.NotContains(t, stdout.String(), "\r", "progress went to stdout")
	return string(out), code
}

// inFile runs the CLI with args and its standard error on a regular file
// (not a terminal), and returns what the file received.
func inFile(t *testing.T, args ...string) (string, int) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	defer f.Close()
	var stdout bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &stdout, f)
	b, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	return string(b), code
}

// TestProgressTerminalRule checks the rule of progress.go on a real
// pseudo-terminal: progress is shown when standard error is a terminal or
// with --progress, never with --quiet, and never when standard error is
// not a terminal.
func TestProgressTerminalRule(t *testing.T) {
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	_, _, err := makeTestData(context.Background(), ds)
	require.NoError(t, err)
	_, code := inFile(t, "branch", ds, "dev")
	require.Zero(t, code)

	for _, tc := range []struct {
		what  string
		args  []string
		count string // the count the display shows
	}{
		{"verify", []string{"verify", ds}, " objects"},
		{"scan", []string{"scan", ds}, " rows"},
		{"export", []string{"export", ds, "OUT"}, " rows"},
		{"gc", []string{"gc", ds, "--dry-run"}, " objects"},
		{"merge", []string{"merge", ds, "dev"}, ""},
		{"compact", []string{"compact", ds, "--dry-run"}, ""},
		{"bench", []string{"bench", ds, "--no-raw", "--columns", "label"}, ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			n := 0
			args := func(extra ...string) []string {
				n++
				a := append([]string(nil), tc.args...)
				for i, s := range a {
					if s == "OUT" {
						a[i] = filepath.Join(dir, tc.what+string(rune('0'+n)))
					}
				}
				return append(a, extra...)
			}

			shown, code := onTerminal(t, args()...)
			require.Zero(t, code, shown)
			require.Contains(t, shown, tc.what, "a terminal shows progress")
			require.Contains(t, shown, tc.count, "with a count")

			shown, code = onTerminal(t, args("--quiet")...)
			require.Zero(t, code, shown)
			require.Empty(t, shown, "--quiet shows nothing on a terminal")

			shown, code = onTerminal(t, args("--progress", "-q")...)
			require.Zero(t, code, shown)
			require.Empty(t, shown, "--quiet wins over --progress")

			shown, code = inFile(t, args()...)
			require.Zero(t, code, shown)
			require.Empty(t, shown, "a file is not a terminal: no progress")

			shown, code = inFile(t, args("--progress")...)
			require.Zero(t, code, shown)
			require.Contains(t, shown, tc.what, "--progress shows it in a file")
		})
	}
}
