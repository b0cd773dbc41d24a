package query

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
)

// TestDuckDBInternals pins what duckdb.go takes from DuckDB and duckdb-go
// beyond their documented APIs. After an upgrade of either, this is the
// test that fails: check each behaviour below against the new version,
// fix duckdb.go where one changed, then update duckdbVersion.
func TestDuckDBInternals(t *testing.T) {
	const duckdbVersion = "v1.5.6"
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "one"), propSchema)
	require.NoError(t, err)
	defer d.Close()
	js, err := loch.JSON(map[string]any{"q": "x"})
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, loch.Row{"i": loch.Scalar(int64(7)), "t": loch.String("seven"), "j": js}))
	_, err = d.Commit(ctx, "one")
	require.NoError(t, err)
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	require.Equal(t, [][]string{{duckdbVersion}}, e.answer(t, "SELECT version()"),
		"DuckDB was upgraded: check the behaviours this test pins, then update duckdbVersion")

	t.Run("connection handle", func(t *testing.T) {
		// Stream's streaming results need the C API's connection.
		require.NoError(t, e.conn.Raw(func(c any) error {
			h, err := connHandle(c)
			require.NoError(t, err, "duckdb-go's Conn keeps its duckdb_connection in the field conn")
			require.NotNil(t, h.Ptr)
			return nil
		}))
		_, err := connHandle(struct{ conn int }{})
		require.ErrorIs(t, err, errors.ErrUnsupported)
	})

	t.Run("json_serialize_sql", func(t *testing.T) {
		q := `SELECT i FROM  ds AS d WHERE i > 1`
		tree, err := e.parse(ctx, q)
		require.NoError(t, err)
		require.False(t, tree.Error)
		require.Len(t, tree.Statements, 1)
		stmt, err := decodeStatement(tree.Statements[0])
		require.NoError(t, err)
		var node map[string]any
		walkSelects(stmt, func(n map[string]any) { node = n })
		require.NotNil(t, node, "a SELECT_NODE under the statement")
		from, _ := node["from_table"].(map[string]any)
		require.Equal(t, "BASE_TABLE", from["type"])
		require.Equal(t, "ds", from["table_name"])
		require.Equal(t, "d", from["alias"])
		at, ok := location(from)
		require.True(t, ok, "a table reference has its query_location")
		require.Equal(t, strings.Index(q, "ds"), at, "query_location is the byte offset of the table's name")
		end, ok := identEnd(q, at, "ds")
		require.True(t, ok)
		require.Equal(t, "SELECT i FROM  loch_scan_at(...) AS d WHERE i > 1", splice(q, []textEdit{{at: at, end: end, text: "loch_scan_at(...)"}}))
		where, _ := node["where_clause"].(map[string]any)
		require.Equal(t, "COMPARE_GREATERTHAN", where["type"])
		col, _ := where["left"].(map[string]any)
		require.Equal(t, "COLUMN_REF", col["class"])
		require.Equal(t, []any{"i"}, col["column_names"])
		c, _ := where["right"].(map[string]any)
		require.Equal(t, "CONSTANT", c["class"])
		v, _ := c["value"].(map[string]any)
		require.Equal(t, json.Number("1"), v["value"])
		// rewrite and pushdown hand the tree back to DuckDB
		rw, err := e.rewrite(ctx, q, true)
		require.NoError(t, err)
		require.Contains(t, rw.sql, RowIDColumn)
		bad, err := e.parse(ctx, "INSERT INTO ds VALUES (1)")
		require.NoError(t, err)
		require.True(t, bad.Error, "only SELECTs serialize")
	})

	t.Run("parser errors", func(t *testing.T) {
		for _, q := range []string{"SELECT 'a", "SELECT E'a\\'", `SELECT "a`, "SELECT $$a", "SELECT $t$a$$", "SELECT /* a /* b */", "SELECT X'0", "SELECT B'0"} {
			_, err := Parse(q)
			require.ErrorIs(t, err, ErrIncomplete, q)
			require.ErrorIs(t, err, base.ErrInvalidArgument, q)
		}
		for q, want := range map[string]int{"": 0, "-- c": 0, "SELECT 1; SELECT $$;$$": 2, "SELECT 1 -- c;": 1} {
			n, err := Parse(q)
			require.NoError(t, err, q)
			require.Equal(t, want, n, q)
		}
		_, err := Parse("SELEC 1")
		require.ErrorIs(t, err, base.ErrInvalidArgument)
		require.NotErrorIs(t, err, ErrIncomplete)
	})

	t.Run("Prepare refuses several statements", func(t *testing.T) {
		_, err := e.statementType("SELECT 1; SELECT 2")
		require.ErrorContains(t, err, "multi-statement")
		typ, err := e.statementType("SELECT 1")
		require.NoError(t, err)
		require.Equal(t, duckdb.STATEMENT_TYPE_SELECT, typ)
	})

	// The fast paths find DuckDB's vector memory (a scalar's data
	// pointer, a text or json vector's handle) in duckdb-go's unexported
	// fields; else every value takes duckdb-go's setters.
	for col, what := range map[string]string{"i": "vectorData found no data pointer", "t": "vectorHandle found no text vector", "j": "vectorHandle found no json vector"} {
		t.Run("vector of "+col, func(t *testing.T) {
			found := false
			probe = func(p bool) { found = found || p }
			defer func() { probe = nil }()
			require.Len(t, e.answer(t, "SELECT "+col+" FROM ds"), 1)
			require.True(t, found, what)
		})
	}
}
