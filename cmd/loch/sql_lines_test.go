package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/stretchr/testify/require"
)

// TestSQLShellHistory runs loch sql's shell on a pseudo-terminal: the
// up arrow recalls a line of an earlier session from the history file,
// and the lines typed are added to it.
func TestSQLShellHistory(t *testing.T) {
	root := filepath.Join(t.TempDir(), "lake")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"sql", root, "CREATE TABLE t (id BIGINT)"}, strings.NewReader(""), &stdout, &stderr)
	require.Zero(t, code, stderr.String())

	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	t.Setenv("HOME", cache)
	hist := filepath.Join(cache, "loch", "sql_history")
	require.NoError(t, os.MkdirAll(filepath.Dir(hist), 0o755))
	require.NoError(t, os.WriteFile(hist, []byte("SELECT 40 + 2 AS answer;\n"), 0o600))

	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	var shown testserver.Buffer
	go func() { _, _ = io.Copy(&shown, ptmx) }()
	var out testserver.Buffer
	done := make(chan int)
	go func() {
		done <- run(context.Background(), []string{"sql", root}, tty, &out, tty)
	}()
	// prompt waits for the n-th prompt: the terminal is then in raw mode
	// and reads keys.
	prompt := func(n int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for strings.Count(shown.String(), "loch> ") < n {
			require.True(t, time.Now().Before(deadline), "no prompt %d; the terminal shows %q", n, shown.String())
			time.Sleep(10 * time.Millisecond)
		}
	}
	prompt(1)
	_, err = ptmx.WriteString("\x1b[A\r") // up arrow, enter
	require.NoError(t, err)
	prompt(2)
	_, err = ptmx.WriteString("SELECT 'typed' AS word;\r")
	require.NoError(t, err)
	prompt(3)
	_, err = ptmx.WriteString("\x04") // Ctrl-D ends the shell
	require.NoError(t, err)
	require.Zero(t, <-done, shown.String())
	require.NoError(t, tty.Close())

	require.Contains(t, out.String(), "42", "the recalled statement ran")
	require.Contains(t, out.String(), "typed")
	b, err := os.ReadFile(hist)
	require.NoError(t, err)
	require.Equal(t, "SELECT 40 + 2 AS answer;\nSELECT 'typed' AS word;\n", string(b))
}

// TestFileHistory checks the history's bounds: blank lines and repeats
// are not kept, and a file grown past twice the bound is cut back to it.
func TestFileHistory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h")
	h := openHistory(path, 3)
	for _, l := range []string{"a", "", "b", "b", "c", "d"} {
		h.Add(l)
	}
	require.Equal(t, 3, h.Len())
	require.Equal(t, []string{"d", "c", "b"}, []string{h.At(0), h.At(1), h.At(2)})
	for _, l := range []string{"e", "f", "g"} {
		h.Add(l)
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "a\nb\nc\nd\ne\nf\ng\n", string(b))
	h = openHistory(path, 3)
	require.Equal(t, "g", h.At(0))
	require.Equal(t, "e", h.At(2))
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "e\nf\ng\n", string(b))
}
