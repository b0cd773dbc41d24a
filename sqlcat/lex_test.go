package sqlcat

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/query"
)

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
