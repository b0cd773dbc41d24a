package query

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// jsonTextDocs are documents whose (j->>'q') loch_json_text answers, and
// ones it leaves to DuckDB: numbers DuckDB writes its own way, \u
// escapes, nested values, duplicate keys, arrays, scalars.
var jsonTextDocs = append([]string{`{"q":"high","n":3}`, `{"q":"a\nb\"c\\/"}`, `{"q":-0}`, `{"q":0}`, `{"q":-12}`, `{"q":1.50}`,
	`{"q":1e2}`, `{"q":123456789012345678}`, `{"q":12345678901234567890}`, `{"q":true}`, `{"q":false}`, `{ "n" : 1 , "q" : "x" }`,
	`{"q":"\u00e9"}`, `{"q":"é"}`, `{"q":""}`, `{"q":[1, 2]}`, `{"q":{"a":1}}`, `{"Q":"upper"}`}, specialJSON...)

func jsonTextEngine(t *testing.T) *Engine {
	old := jsonTextMinRows
	jsonTextMinRows = 0
	t.Cleanup(func() { jsonTextMinRows = old })
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "jt"), schema.Schema{Columns: []schema.Column{
		{Name: "k", DType: schema.Int64, Shape: schema.Shape{}},
		{Name: "j", Kind: schema.JSONKind},
		{Name: "u", Kind: schema.JSONKind}, // every row's document its own
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	var rows []loch.Row
	for i := range 3000 { // more than one vector, each document many times
		u := fmt.Sprintf(`{"q":"v%d","n":%d}`, i, i)
		row := loch.Row{"k": loch.Scalar(int64(i % 7)), "u": loch.Sample{Shape: []int{len(u)}, Data: []byte(u)}}
		if i%50 != 49 {
			js := jsonTextDocs[i%len(jsonTextDocs)]
			row["j"] = loch.Sample{Shape: []int{len(js)}, Data: []byte(js)}
		}
		rows = append(rows, row)
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "docs")
	require.NoError(t, err)
	e, err := New(ctx, d, Options{Threads: 2})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// TestJSONTextAsDuckDB: (j->>'key') over a json column is rewritten into
// loch_json_text, and answers as DuckDB's own (j::VARCHAR->>'key', which
// is not rewritten) in every clause, under the names the items had.
func TestJSONTextAsDuckDB(t *testing.T) {
	e := jsonTextEngine(t)
	for _, c := range []struct{ q, ref string }{
		{"SELECT _pos, j->>'q' AS v FROM ds ORDER BY _pos", "SELECT _pos, (j::VARCHAR)->>'q' AS v FROM ds ORDER BY _pos"},
		{"SELECT j->>'q', count(*) FROM ds GROUP BY j->>'q' ORDER BY 1 NULLS FIRST", "SELECT (j::VARCHAR)->>'q', count(*) FROM ds GROUP BY 1 ORDER BY 1 NULLS FIRST"},
		{"SELECT k, max(j->>'q'), min(json_extract_string(j, 'n')) FROM ds GROUP BY k ORDER BY k", "SELECT k, max((j::VARCHAR)->>'q'), min((j::VARCHAR)->>'n') FROM ds GROUP BY k ORDER BY k"},
		{"SELECT count(*) FROM ds WHERE (j->>'q') = 'high' OR (j->>'q') IS NULL", "SELECT count(*) FROM ds WHERE ((j::VARCHAR)->>'q') = 'high' OR ((j::VARCHAR)->>'q') IS NULL"},
		{"SELECT k FROM ds GROUP BY k HAVING max(j->>'q') > 'a' ORDER BY k", "SELECT k FROM ds GROUP BY k HAVING max((j::VARCHAR)->>'q') > 'a' ORDER BY k"},
		{"SELECT k, max(u->>'q'), sum((u->>'n')::INT), count(u->>'x') FROM ds GROUP BY k ORDER BY k", "SELECT k, max((u::VARCHAR)->>'q'), sum(((u::VARCHAR)->>'n')::INT), count((u::VARCHAR)->>'x') FROM ds GROUP BY k ORDER BY k"},
		{"SELECT (SELECT max(j->>'Q') FROM ds) AS s, j->>'n' AS n FROM ds WHERE _pos < 30 ORDER BY _pos", "SELECT (SELECT max((j::VARCHAR)->>'Q') FROM ds) AS s, (j::VARCHAR)->>'n' AS n FROM ds WHERE _pos < 30 ORDER BY _pos"},
	} {
		rw, err := e.rewrite(ctx, c.q, false)
		require.NoError(t, err)
		require.Contains(t, rw.sql, jsonTextFunction, c.q)
		require.Equal(t, e.answer(t, c.ref), e.answer(t, c.q), c.q)
	}
	// A conjunct pushed into the scan is left to DuckDB: the scan passes
	// it few rows.
	q := "SELECT count(*), max(j->>'n') FROM ds WHERE (j->>'q') = 'high' AND k > 2"
	rw, err := e.rewrite(ctx, q, false)
	require.NoError(t, err)
	require.Contains(t, rw.sql, "max(COALESCE("+jsonTextFunction, q)
	require.Contains(t, rw.sql, "((j ->> 'q') = 'high')", q)
	require.Equal(t, e.answer(t, "SELECT count(*), max((j::VARCHAR)->>'n') FROM ds WHERE ((j::VARCHAR)->>'q') = 'high' AND k > 2"), e.answer(t, q))
	// The names DuckDB gives the items as written (a FROM that is not a
	// loch table: not rewritten).
	items := "j->>'q', max(j->>'n') AS m, min(json_extract_string(j, 'q')), upper(j->>'q' || 'x')"
	names, _, err := e.resultColumns(ctx, "SELECT "+items+" FROM ds GROUP BY j")
	require.NoError(t, err)
	want, _, err := e.resultColumns(ctx, "SELECT "+items+" FROM (SELECT j FROM ds) GROUP BY j")
	require.NoError(t, err)
	require.Equal(t, want, names)
	require.Equal(t, "(j ->> 'q')", names[0])
}

// TestJSONTextLeftToDuckDB: what is not a json column of the SELECT's
// own loch table, or not a plain key, is not rewritten.
func TestJSONTextLeftToDuckDB(t *testing.T) {
	e := jsonTextEngine(t)
	for _, q := range []string{
		"SELECT (j::VARCHAR)->>'q' FROM ds",
		"SELECT j->>'$.q' FROM ds",
		"SELECT j->>'a b' FROM ds",
		"SELECT x->>'q' FROM (SELECT j AS x FROM ds)",
		"SELECT '{\"q\":1}'->>'q'",
	} {
		rw, err := e.rewrite(ctx, q, false)
		require.NoError(t, err)
		require.NotContains(t, rw.sql, jsonTextFunction, q)
	}
	jsonTextMinRows = 3001 // a table of fewer rows
	rw, err := e.rewrite(ctx, "SELECT max(j->>'q') FROM ds", false)
	require.NoError(t, err)
	require.NotContains(t, rw.sql, jsonTextFunction)
}

func TestJSONTextOf(t *testing.T) {
	for doc, want := range map[string]string{
		`{"q":"high","n":3}`: "high", `{"q":"a\nb"}`: "a\nb", `{"q":0}`: "0", `{"q":-12}`: "-12", `{"q":true}`: "true",
		`{"q":-0}`: "?", `{"q":1.5}`: "?", `{"q":1e2}`: "?", `{"q":12345678901234567890}`: "?", `{"q":"\u00e9"}`: "?",
		`{"q":null}`: "?", `{}`: "?", `[1]`: "?", `{"q":"a"}x`: "?", `{"q":"a","q":"b"}`: "?", "{\"q\":\"\xff\"}": "?", `{"q":[1]}`: "?",
	} {
		v, ok := jsonTextOf([]byte(doc), []byte("q"))
		got := string(v)
		if !ok {
			got = "?"
		}
		require.Equal(t, want, got, doc)
	}
	_, ok := jsonTextOf([]byte(`{"$.q":"x"}`), []byte("$.q"))
	require.False(t, ok)
	require.True(t, strings.Contains(fmt.Sprint(jsonTextDocs), `1.50`))
}

// TestJSONTextWithoutRawAccess: without DuckDB's vector memory,
// loch_json_text answers NULL and DuckDB answers every row.
func TestJSONTextWithoutRawAccess(t *testing.T) {
	e := jsonTextEngine(t)
	want := e.answer(t, "SELECT k, max((j::VARCHAR)->>'q'), count((j::VARCHAR)->>'n') FROM ds GROUP BY k ORDER BY k")
	rawWrites = false
	defer func() { rawWrites = true }()
	require.Equal(t, want, e.answer(t, "SELECT k, max(j->>'q'), count(j->>'n') FROM ds GROUP BY k ORDER BY k"))
	require.Equal(t, [][]string{{"0"}}, e.answer(t, "SELECT count(loch_json_text(j, 'q')) FROM ds"))
}

// BenchmarkJSONText: max(j->>'s') over 200,000 rows (rewritten into
// loch_json_text) against DuckDB's own parse (j::VARCHAR->>'s'), with 20
// distinct documents (a dictionary chunk) and with every row's its own;
// beside wall time the process's CPU time (cpu-ns/op), which a loaded
// machine inflates less.
func BenchmarkJSONText(b *testing.B) {
	for _, distinct := range []int{20, 200_000} {
		d, err := loch.Create(ctx, filepath.Join(b.TempDir(), "jt"), schema.Schema{Columns: []schema.Column{{Name: "j", Kind: schema.JSONKind}}})
		require.NoError(b, err)
		var rows []loch.Row
		for i := range 200_000 {
			js := fmt.Sprintf(`{"src":"%c","s":"name-%08d","tags":["x","y"]}`, 'a'+i%20, i%distinct)
			rows = append(rows, loch.Row{"j": loch.Sample{Shape: []int{len(js)}, Data: []byte(js)}})
		}
		require.NoError(b, d.Extend(ctx, rows))
		_, err = d.Commit(ctx, "docs")
		require.NoError(b, err)
		e, err := New(ctx, d, Options{Threads: 1})
		require.NoError(b, err)
		for _, c := range []struct{ name, q string }{{"loch_json_text", "SELECT max(j->>'s') FROM ds"}, {"duckdb", "SELECT max((j::VARCHAR)->>'s') FROM ds"}} {
			b.Run(fmt.Sprintf("distinct=%d/%s", distinct, c.name), func(b *testing.B) {
				cpu0 := processCPU(b)
				for b.Loop() {
					e.answer(&testing.T{}, c.q)
				}
				b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
		e.Close()
		d.Close()
	}
}

// processCPU is the process's CPU time (user and system), in ns.
func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return ru.Utime.Nano() + ru.Stime.Nano()
}
