package sqlcat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/query"
)

var ctx = context.Background()

func TestMain(m *testing.M) {
	defer testserver.StopAll()
	m.Run()
}

// newSession makes an empty catalog at root.
func newSession(t testing.TB, root string) *Session {
	t.Helper()
	cat, err := catalog.Create(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { cat.Close() })
	s := NewSession(cat)
	s.Threads = 2
	return s
}

func run(t *testing.T, s *Session, stmt string) Result {
	t.Helper()
	r, err := s.Run(ctx, stmt, Output{})
	require.NoError(t, err, stmt)
	return r
}

// rowsOf runs a query and returns its rows as JSON objects.
// mustRefuse runs stmt, which must fail with an error that is sentinel
// and contains msg, and returns the error.
func mustRefuse(t *testing.T, s *Session, stmt string, sentinel error, msg string) error {
	t.Helper()
	_, err := s.Run(ctx, stmt, Output{})
	require.ErrorIs(t, err, sentinel, stmt)
	require.ErrorContains(t, err, msg, stmt)
	return err
}

func rowsOf(t *testing.T, s *Session, q string) []map[string]any {
	t.Helper()
	var b bytes.Buffer
	_, err := s.Run(ctx, q, Output{W: &b, Format: "json"})
	require.NoError(t, err, q)
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		out = append(out, m)
	}
	return out
}

func TestSmoke(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE frames (id BIGINT, caption TEXT, e FLOAT[3], label CLASS_LABEL('cat', 'dog'), meta JSON)")
	r := run(t, s, "INSERT INTO frames VALUES (1, 'a', [1,2,3], 'cat', '{\"q\": 1}'), (2, 'b', [4,5,6], 'dog', NULL)")
	require.EqualValues(t, 2, r.Rows)
	require.NotEmpty(t, r.Version)
	got := rowsOf(t, s, "SELECT id, caption, e, label FROM frames ORDER BY id")
	require.Len(t, got, 2)
	require.Equal(t, "dog", got[1]["label"])
	r = run(t, s, "UPDATE frames SET label = 'cat', caption = caption || '!' WHERE id = 2")
	require.EqualValues(t, 1, r.Rows)
	got = rowsOf(t, s, "SELECT id, caption, label FROM frames ORDER BY id")
	require.Equal(t, "b!", got[1]["caption"])
	require.Equal(t, "cat", got[1]["label"])
	r = run(t, s, "DELETE FROM frames WHERE id = 1")
	require.EqualValues(t, 1, r.Rows)
	require.Len(t, rowsOf(t, s, "SELECT * FROM frames"), 1)
	run(t, s, "ALTER TABLE frames ADD COLUMN score DOUBLE")
	run(t, s, "CREATE TABLE other (id BIGINT, n INTEGER)")
	run(t, s, "INSERT INTO other SELECT id, 7 FROM frames")
	got = rowsOf(t, s, "SELECT f.id, o.n, f.score FROM frames f JOIN other o USING (id)")
	require.Len(t, got, 1)
	require.EqualValues(t, 7, got[0]["n"])
	require.Nil(t, got[0]["score"])
	run(t, s, "DROP TABLE other")
	_, err := s.Run(ctx, "DROP TABLE other", Output{})
	require.True(t, errors.Is(err, loch.ErrNotFound), "%v", err)
	run(t, s, "DROP TABLE IF EXISTS other")
}

// TestSelect: a SELECT over one catalog table makes a selection of its
// version, rows in result order; a query over two tables cannot.
func TestSelect(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE frames (id BIGINT, label CLASS_LABEL('cat', 'dog'))")
	run(t, s, "CREATE TABLE other (id BIGINT)")
	run(t, s, "INSERT INTO frames SELECT i, CASE WHEN i % 3 = 0 THEN 'dog' ELSE 'cat' END FROM range(10) r(i)")
	sel, table, err := s.Select(ctx, "SELECT id FROM frames WHERE label = 'dog' ORDER BY id DESC", nil, "")
	require.NoError(t, err)
	require.Equal(t, "frames", table)
	d, err := s.cat.OpenTable(ctx, "frames")
	require.NoError(t, err)
	defer d.Close()
	require.Equal(t, d.Version(), sel.Version)
	require.Equal(t, []string{"id"}, sel.Columns)
	want := rowsOf(t, s, "SELECT _rowid FROM frames WHERE label = 'dog' ORDER BY id DESC")
	require.Len(t, sel.RowIDs, 4)
	for i, r := range want {
		require.EqualValues(t, r["_rowid"], sel.RowIDs[i])
	}
	_, _, err = s.Select(ctx, "SELECT f.id FROM frames f JOIN other o USING (id)", nil, "")
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "a selection is of one table: the query names 2")

	// a join selects the base table's rows: other filters them
	run(t, s, "INSERT INTO other VALUES (3), (4), (6)")
	sel, table, err = s.Select(ctx, "SELECT f._rowid, f.id FROM frames f JOIN other o USING (id) ORDER BY f.id", nil, "FRAMES")
	require.NoError(t, err)
	require.Equal(t, "frames", table)
	want = rowsOf(t, s, "SELECT _rowid FROM frames WHERE id IN (3, 4, 6) ORDER BY id")
	require.Len(t, sel.RowIDs, 3)
	for i, r := range want {
		require.EqualValues(t, r["_rowid"], sel.RowIDs[i])
	}
	// random() in a join hashes the selected table's row id
	seed := uint64(4)
	sel, _, err = s.Select(ctx, "SELECT f._rowid FROM frames f JOIN other o USING (id) ORDER BY random()", &seed, "frames")
	require.NoError(t, err)
	require.ElementsMatch(t, sel.RowIDs, []uint64{uint64(want[0]["_rowid"].(float64)), uint64(want[1]["_rowid"].(float64)), uint64(want[2]["_rowid"].(float64))})
	_, _, err = s.Select(ctx, "SELECT _rowid FROM frames", nil, "other")
	require.ErrorContains(t, err, "a selection of table other: the query does not read it")
	_, _, err = s.Select(ctx, "SELECT _rowid FROM frames", nil, "nope")
	require.ErrorIs(t, err, loch.ErrNotFound)
	run(t, s, "INSERT INTO other VALUES (3)")
	_, _, err = s.Select(ctx, "SELECT f._rowid FROM frames f JOIN other o USING (id)", nil, "frames")
	require.ErrorContains(t, err, "comes twice")
}

// TestLochTable: loch_table('name', ref => ...) reads a table at a tag, a
// branch or a version, so one query compares versions.
func TestLochTable(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE Frames (id BIGINT)")
	run(t, s, "INSERT INTO frames VALUES (1), (2)")
	d, err := s.cat.OpenTable(ctx, "frames")
	require.NoError(t, err)
	_, err = d.CreateTag(ctx, "v1", d.Version())
	require.NoError(t, err)
	d.Close()
	run(t, s, "DELETE FROM frames WHERE id = 1")
	run(t, s, "INSERT INTO frames VALUES (3)")
	got := rowsOf(t, s, "SELECT id FROM loch_table('frames', ref => 'v1') EXCEPT SELECT id FROM frames")
	require.Equal(t, []map[string]any{{"id": 1.0}}, got)
	require.Len(t, rowsOf(t, s, "SELECT * FROM loch_table('FRAMES')"), 2)
	_, err = s.Run(ctx, "SELECT * FROM loch_table('nope')", Output{})
	require.ErrorContains(t, err, `no table "nope"`)
}

// TestConcurrentInserts: INSERTs from sessions on separate catalog handles
// at once all land, each whole (an append rebases onto the winner).
func TestConcurrentInserts(t *testing.T) {
	root := t.TempDir() + "/lake"
	s := newSession(t, root)
	run(t, s, "CREATE TABLE t (id BIGINT, n INTEGER)")
	const writers, each = 4, 3
	errs := make(chan error, writers*each)
	done := make(chan struct{})
	for w := range writers {
		go func() {
			defer func() { done <- struct{}{} }()
			cat, err := catalog.Open(ctx, root)
			if err != nil {
				errs <- err
				return
			}
			defer cat.Close()
			ws := NewSession(cat)
			ws.Threads = 1
			for k := range each {
				_, err := ws.Run(ctx, "INSERT INTO t SELECT i, "+itoa(w*each+k)+" FROM range(10) r(i)", Output{})
				errs <- err
			}
		}()
	}
	for range writers {
		<-done
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got := rowsOf(t, s, "SELECT count(*) AS rows, count(DISTINCT n) AS inserts FROM t")
	require.Equal(t, []map[string]any{{"rows": float64(writers * each * 10), "inserts": float64(writers * each)}}, got)
}

// TestSplitFollowsDuckDB: statements end where DuckDB's parser ends them,
// not at a ';' in a dollar-quoted string (with or without a tag), an
// E” string with \' in it, a nested comment, a quoted name or a --
// comment; loch's own statements that DuckDB cannot parse (OPTIMIZE, a
// typo) split by the same rules (issue 36 item 4).
func TestSplitFollowsDuckDB(t *testing.T) {
	for _, tc := range []struct {
		script string
		stmts  []string
		rest   string
	}{
		{"SELECT $$a;b$$;", []string{"SELECT $$a;b$$"}, ""},
		{"SELECT $t$a;$$;b$t$; SELECT 2;", []string{"SELECT $t$a;$$;b$t$", "SELECT 2"}, ""},
		{`SELECT E'a\';b';`, []string{`SELECT E'a\';b'`}, ""},
		{"SELECT /* a /* b; */ c; */ 1;", []string{"SELECT /* a /* b; */ c; */ 1"}, ""},
		{`SELECT 1 AS "a;b";`, []string{`SELECT 1 AS "a;b"`}, ""},
		{"SELECT 'it''s;';", []string{"SELECT 'it''s;'"}, ""},
		{"SELECT 1; -- one; two\nSELECT 2;", []string{"SELECT 1", "-- one; two\nSELECT 2"}, ""},
		{"SELECT $1, 2; SELECT 3", []string{"SELECT $1, 2"}, " SELECT 3"},
		{"OPTIMIZE t WITH (target_bytes = '1;2'); SELECT 1;", []string{"OPTIMIZE t WITH (target_bytes = '1;2')", "SELECT 1"}, ""},
		{"OPTIMIZE t WITH (x = $$a;b$$) -- c;d\n;", []string{"OPTIMIZE t WITH (x = $$a;b$$) -- c;d"}, ""},
		{"CREATE TABLE t (l CLASS_LABEL('a;b'), x TENSOR(float32, [3]));", []string{"CREATE TABLE t (l CLASS_LABEL('a;b'), x TENSOR(float32, [3]))"}, ""},
		{"SELEC 1; SELECT 2;", []string{"SELEC 1", "SELECT 2"}, ""},
		{";; -- only a comment;\n;", nil, ""},
		{"SELECT 1;  \n", []string{"SELECT 1"}, ""},
	} {
		stmts, rest, err := Split(tc.script)
		require.NoError(t, err, tc.script)
		require.Equal(t, tc.stmts, stmts, tc.script)
		require.Equal(t, tc.rest, rest, tc.script)
	}
	for _, script := range []string{
		"SELECT 1; SELECT $$a;",
		"SELECT $t$a;$$;",
		`SELECT E'a\';`,
		"SELECT /* a /* b */ ;",
		`SELECT 1 AS "a;`,
		"OPTIMIZE t WITH (x = 'a;",
	} {
		stmts, rest, err := Split(script)
		require.ErrorIs(t, err, query.ErrIncomplete, script)
		require.Nil(t, stmts, script)
		require.Equal(t, script, rest, script)
	}
}

// TestLexAgreesWithDuckDB: loch's lexer (which reads the frames of its
// own statements) finds a statement complete exactly when DuckDB's parser
// does, for every prefix of statements with each of DuckDB's lexical
// forms.
func TestLexAgreesWithDuckDB(t *testing.T) {
	for _, stmt := range []string{
		"SELECT $$a;'b$$, $t$ $$ x $t$, $1",
		`SELECT E'a\'b\\', e'c''d', 'e''f', X'00', B'01'`,
		`SELECT "a""b;", 1 -- c ' d` + "\n",
		"SELECT /* a /* 'b */ \"c */ 1",
		"SELECT a$b, _c$1 FROM t",
	} {
		for i := 0; i <= len(stmt); i++ {
			p := stmt[:i]
			_, derr := query.Parse(p)
			_, lerr := lex(p)
			require.Equal(t, errors.Is(derr, query.ErrIncomplete), lerr != nil, "%q: DuckDB says %v, lex %v", p, derr, lerr)
		}
	}
}

// TestKind: one classifier routes every statement.
func TestKind(t *testing.T) {
	for stmt, want := range map[string]string{
		"":                                       "",
		"-- only a comment":                      "",
		"SELECT 1":                               KindQuery,
		"/* c /* d */ */ create table t (a INT)": "CREATE TABLE",
		"ALTER TABLE t ADD COLUMN c INT":         "ALTER TABLE",
		"drop table t":                           "DROP TABLE",
		"CREATE VIEW v AS SELECT 1":              KindDDL,
		"INSERT INTO t VALUES (1)":               "INSERT",
		"UPDATE t SET a = 1":                     "UPDATE",
		"DELETE FROM t":                          "DELETE",
		"MERGE INTO t USING s ON true WHEN MATCHED THEN DELETE": "MERGE",
		"OPTIMIZE t":                           "OPTIMIZE",
		"COPY (SELECT 1) TO 'x.csv'":           "COPY",
		"SET loch_branch = 'b'":                "SET",
		"RESET loch_message":                   "SET",
		"SET threads = 1":                      KindQuery,
		"WITH x AS (SELECT 1) SELECT * FROM x": KindQuery,
		"(SELECT 1)":                           KindQuery,
		"SELECT 'open":                         KindQuery,
	} {
		require.Equal(t, want, Kind(stmt), stmt)
	}
}
