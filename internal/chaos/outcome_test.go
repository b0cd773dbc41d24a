package chaos

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestPanicked(t *testing.T) {
	for out, want := range map[string]bool{
		"panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:": true,
		"goroutine 17 [chan receive]:":                                           true,
		"loch: internal error: assignment to entry in nil map":                   true,
		"fatal error: runtime: out of memory":                                    true,
		"loch serve: http: panic serving 127.0.0.1:5050: boom":                   true,
		"loch: read chunks/3d/3d0f: corrupt chunk: checksum 1, want 2":           false,
		"loch: open ./ds: no loch dataset there: not found":                      false,
		"ok: 49 objects checked":                                                 false,
		"loch: a query that panics is refused (the word panic alone is no sign)": false,
	} {
		require.Equal(t, want, panicked(out), out)
	}
}

func TestClearDamage(t *testing.T) {
	const key = "tables/t-1/chunks/3d/3d0f9a1b2c3d4e5f60718293a4b5c6d7"
	for msg, want := range map[string]bool{
		"loch: read chunks/3d/3d0f9a1b2c3d4e5f60718293a4b5c6d7: short read": true, // names it
		"loch: fragment 2: checksum 5, want 6":                              true,
		"loch: open ./t: read _loch/dataset: corrupt metadata":              true,
		"loch: no version 12ab: not found":                                  true,
		"loch: read extensions/e969: context canceled":                      false,
		"loch: something went wrong":                                        false,
	} {
		require.Equal(t, want, clearDamage(msg, []string{key}), msg)
	}
	require.True(t, clearOutage("loch: put log/00000000000000000004: gave up after 2.1s (9 attempts): connection refused"))
	require.False(t, clearOutage("loch: something went wrong"))
}

func TestClassify(t *testing.T) {
	truth := reading{parts: map[string]string{"output": "n 10", "GET /": "200 ab"}}
	d := damage{changed: []string{"tables/t-1/fragments/0123456789abcdef0123456789abcdef"}}
	for _, c := range []struct {
		name       string
		got        reading
		mustReport bool
		want       Outcome
	}{
		{"unaffected", reading{parts: map[string]string{"output": "n 10"}}, false, OK},
		{"wrong", reading{parts: map[string]string{"output": "n 9"}}, false, Wrong},
		{"verify says ok over damage", reading{parts: map[string]string{"output": "ok"}}, true, Wrong},
		{"clear refusal", reading{failed: true, message: "loch: read fragments/0123456789abcdef0123456789abcdef: corrupt"}, true, ClearError},
		{"unclear refusal", reading{failed: true, message: "loch: context canceled"}, false, Unclear},
		{"a page wrong, another refused", reading{failed: true, message: "GET /x: 500 corrupt", parts: map[string]string{"GET /": "200 cd"}}, false, Wrong},
		{"a page right, another refused", reading{failed: true, message: "GET /x: 500 corrupt", parts: map[string]string{"GET /": "200 ab"}}, false, ClearError},
		{"panic beats all", reading{failed: true, message: "panic: boom\n\ngoroutine 1 [running]:"}, false, Panic},
		{"hung", reading{failed: true, timedOut: true}, false, Hung},
	} {
		got, _ := classify(c.got, truth, d, c.mustReport)
		require.Equal(t, c.want, got, c.name)
	}
}

func TestTable(t *testing.T) {
	var tb Table
	tb.Add("damage", "query", OK, "", "")
	tb.Add("damage", "query", ClearError, "chunks: delete", "")
	tb.Add("damage", "verify", Wrong, "log (newest): delete", "exit 0: ok")
	tb.Add("crash", "merge", Lost, "kill -9 after 5ms", "gone")
	require.Equal(t, 2, tb.Failed())
	require.Len(t, tb.Failures(), 2, "ok and clear errors are not listed")
	rows := tb.Rows()
	require.Equal(t, []string{"query", "verify", "merge"}, []string{rows[0].Reader, rows[1].Reader, rows[2].Reader})
	require.Equal(t, 2, rows[0].Tried())
	var out bytes.Buffer
	tb.Print(&out)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 6, "head, rule, three rows, total")
	require.Contains(t, lines[0], "| clear error |")
	require.Regexp(t, `^\| total +\| +\| +4 \| +1 \| +1 \| +0 \| +0 \| +0 \| +1 \| +1 \|$`, lines[5])
	out.Reset()
	tb.PrintFailures(&out)
	require.Contains(t, out.String(), "WRONG: damage / verify: log (newest): delete\n    exit 0: ok")
}

func TestPrintedVersion(t *testing.T) {
	const v = "8e6272ff5afdfde84e82b84ffc6e4859"
	for _, out := range []string{
		"ingested 200 rows, 11 KiB in 178ms into ds, version " + v + " (created)\n",
		"{\n  \"statement\": \"INSERT\",\n  \"version\": \"" + v + "\"\n}",
		"{\n  \"url\": \"file:///x\",\n  \"commit\": \"" + v + "\",\n  \"base\": \"1e6272ff5afdfde84e82b84ffc6e4850\"\n}",
	} {
		require.Equal(t, v, printedVersion(out), out)
	}
	require.Empty(t, printedVersion("loch: interrupted"))
}

func TestMutations(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{"k/a": "0123456789", "k/b": "abcdefghij", "k/c": "short"}
	reset := func() {
		for k, v := range files {
			require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(k)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, k), []byte(v), 0o644))
		}
	}
	read := func(k string) string {
		b, err := os.ReadFile(filepath.Join(root, k))
		if err != nil {
			return "(gone)"
		}
		return string(b)
	}
	siblings := []string{"k/a", "k/b", "k/c"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		reset()
		d, ok, err := flipByte(r, root, "k/a", siblings)
		require.NoError(t, err)
		require.True(t, ok)
		got, diff := read("k/a"), 0
		for i := range got {
			if got[i] != files["k/a"][i] {
				diff++
			}
		}
		require.Equal(t, 1, diff, d.what)

		reset()
		_, ok, err = truncate(r, root, "k/a", siblings)
		require.NoError(t, err)
		require.True(t, ok)
		require.Less(t, len(read("k/a")), 10)
		require.True(t, strings.HasPrefix(files["k/a"], read("k/a")))

		reset()
		d, ok, err = swapSibling(r, root, "k/a", siblings)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, files["k/b"], read("k/a"), "a sibling of the same size is preferred")
		require.Equal(t, files["k/a"], read("k/b"))
		require.Equal(t, []string{"k/a", "k/b"}, d.changed)
	}
	reset()
	_, ok, err := swapSibling(r, root, "k/c", []string{"k/c"})
	require.NoError(t, err)
	require.False(t, ok, "no sibling to swap with")
	_, ok, err = deleteObject(r, root, "k/c", nil)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "(gone)", read("k/c"))
}

func TestFuzzTargets(t *testing.T) {
	targets, err := fuzzTargets(filepath.Join("..", ".."))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(targets), 20)
	require.True(t, slices.Contains(targets, fuzzTarget{pkg: "./internal/keys", name: "FuzzParse"}), "%v", targets)
	require.True(t, slices.Contains(targets, fuzzTarget{pkg: ".", name: "FuzzParseStaged"}), "%v", targets)
}
