package funclen

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoNewLongFunctions fails on a function over Limit lines that is not on
// allow.txt, on an allowed function that grew past its recorded length, and
// on an entry that is no longer needed (the function was split or removed):
// the list only shrinks.
func TestNoNewLongFunctions(t *testing.T) {
	allowed := readAllow(t, "allow.txt")
	long, err := Long(filepath.Join("..", ".."), Limit)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, f := range long {
		max, ok := allowed[f.Key()]
		seen[f.Key()] = true
		if !ok {
			t.Errorf("%s is %d lines, over the limit of %d: split it (see CONTRIBUTING.md)", f.Key(), f.Lines, Limit)
		} else if f.Lines > max {
			t.Errorf("%s grew to %d lines; allow.txt lets it keep %d at most: split it", f.Key(), f.Lines, max)
		}
	}
	for k := range allowed {
		if !seen[k] {
			t.Errorf("allow.txt lists %s, which is no longer over %d lines: remove the entry", k, Limit)
		}
	}
}

func TestLongFindsLongFunctions(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("package p\n\n// doc\nfunc short() {}\n\ntype T struct{}\n\nfunc (t *T) long() {\n")
	for i := 0; i < 10; i++ {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(b.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte(strings.Replace(b.String(), "long", "longTest", 1)), 0o644))
	got, err := Long(dir, 11)
	require.NoError(t, err)
	require.Equal(t, []Func{{File: "p.go", Name: "T.long", Lines: 12}}, got)
	got, err = Long(dir, 12)
	require.NoError(t, err)
	require.Empty(t, got)
}

// readAllow reads "file Name lines" entries; # starts a comment.
func readAllow(t *testing.T, path string) map[string]int {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "allow.txt: %q is not \"file Name lines\"", line)
		n, err := strconv.Atoi(fields[2])
		require.NoError(t, err, "allow.txt: %q", line)
		out[fields[0]+" "+fields[1]] = n
	}
	require.NoError(t, sc.Err())
	return out
}
