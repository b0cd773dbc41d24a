//go:build duckdb_arrow

package main

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
)

// readArrow runs the read q on o and returns its result as it crosses
// the ABI: exported as an Arrow C stream and imported back.
func readArrow(t *testing.T, o *sqlObj, q string, opts sqlRunOptions) arrow.Table {
	t.Helper()
	sch, recs, res, err := o.arrow(context.Background(), q, opts)
	require.NoError(t, err, q)
	require.NotNil(t, sch, "a read has a result: %s", q)
	require.Equal(t, "QUERY", res.Statement)
	var s cdata.CArrowArrayStream
	require.NoError(t, exportStream(sch, recs, &s))
	rr, err := cdata.ImportCRecordReader(&s, nil)
	require.NoError(t, err)
	var got []arrow.RecordBatch
	for {
		rec, err := rr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		rec.Retain()
		got = append(got, rec)
	}
	require.EqualValues(t, res.Rows, batchRows(got))
	tbl := array.NewTableFromRecords(sch, got)
	for _, r := range got {
		r.Release()
	}
	t.Cleanup(tbl.Release)
	return tbl
}

func batchRows(recs []arrow.RecordBatch) (n int64) {
	for _, r := range recs {
		n += r.NumRows()
	}
	return n
}

// write runs the write q on o and returns what it did.
func write(t *testing.T, o *sqlObj, q string) sqlResult {
	t.Helper()
	sch, _, res, err := o.arrow(context.Background(), q, sqlRunOptions{})
	require.NoError(t, err, q)
	require.Nil(t, sch, "a write has no result: %s", q)
	return sqlResult{Result: res}
}

func count(t *testing.T, o *sqlObj, q string) int64 {
	t.Helper()
	tbl := readArrow(t, o, q, sqlRunOptions{})
	require.EqualValues(t, 1, tbl.NumRows())
	return tbl.Column(0).Data().Chunk(0).(*array.Int64).Value(0)
}

func TestSQLOverACatalog(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cat, err := catalog.Open(ctx, root, catalog.WithCreate())
	require.NoError(t, err)
	defer cat.Close()
	o, err := openSQL(&catalogObj{c: cat}, sqlOpenOptions{Threads: 1})
	require.NoError(t, err)

	require.Equal(t, "CREATE TABLE", write(t, o, "CREATE TABLE t (id BIGINT, name VARCHAR, score DOUBLE, m JSON, e FLOAT[2])").Statement)
	w := write(t, o, `INSERT INTO t VALUES (1, 'a', 0.5, '{"k": 1}', [1, 2]), (2, NULL, NULL, NULL, NULL), (3, 'c', 2.5, '[1, 2]', [3, 4])`)
	require.Equal(t, "INSERT", w.Statement)
	require.EqualValues(t, 3, w.Rows)
	require.NotEmpty(t, w.Version, "a write is one commit")

	tbl := readArrow(t, o, "SELECT id, name, score, m, e FROM t ORDER BY id", sqlRunOptions{})
	require.EqualValues(t, 3, tbl.NumRows())
	ids := tbl.Column(0).Data().Chunk(0).(*array.Int64)
	require.Equal(t, []int64{1, 2, 3}, ids.Int64Values())
	names := tbl.Column(1).Data().Chunk(0).(*array.String)
	require.Equal(t, "a", names.Value(0))
	require.True(t, names.IsNull(1), "NULL crosses as null")
	scores := tbl.Column(2).Data().Chunk(0).(*array.Float64)
	require.Equal(t, 2.5, scores.Value(2))
	require.Equal(t, `{"k": 1}`, tbl.Column(3).Data().Chunk(0).(*array.String).Value(0))
	require.Equal(t, arrow.FIXED_SIZE_LIST, tbl.Column(4).DataType().ID(), "FLOAT[2] crosses as a fixed-size list")

	// As loch sql --json: JSON values parsed, one object per row.
	j, err := o.json(ctx, "SELECT id, m FROM t WHERE id = 1", sqlRunOptions{})
	require.NoError(t, err)
	require.Len(t, j.Values, 1)
	require.JSONEq(t, `{"id": 1, "m": {"k": 1}}`, string(j.Values[0]))

	// A commit through another handle is seen by the next statement.
	other, err := catalog.Open(ctx, root)
	require.NoError(t, err)
	defer other.Close()
	o2, err := openSQL(&catalogObj{c: other}, sqlOpenOptions{Threads: 1})
	require.NoError(t, err)
	write(t, o2, "INSERT INTO t (id) VALUES (4)")
	require.EqualValues(t, 4, count(t, o, "SELECT count(*) FROM t"))

	// Pins read a table at an older version.
	pinned := readArrow(t, o, "SELECT count(*) FROM t", sqlRunOptions{Pins: map[string]string{"t": w.Version}})
	require.EqualValues(t, 3, pinned.Column(0).Data().Chunk(0).(*array.Int64).Value(0))

	// A selection of one table: its row ids, version, name and URL.
	sel, table, url, err := o.selection(ctx, "SELECT id FROM t WHERE id > 1 ORDER BY id DESC", sqlRunOptions{})
	require.NoError(t, err)
	require.Equal(t, "t", table)
	require.NotEmpty(t, url)
	require.Len(t, sel.RowIDs, 3)

	// Errors keep their class and name the statement.
	_, _, _, err = o.arrow(ctx, "SELEC 1", sqlRunOptions{})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "syntax error")
	_, _, _, err = o.arrow(ctx, "SELECT * FROM nope", sqlRunOptions{})
	require.ErrorContains(t, err, "nope")

	first, err := o.close()
	require.NoError(t, err)
	require.True(t, first)
	first, _ = o.close()
	require.False(t, first, "a second close is no error and does nothing")
	require.ErrorIs(t, o.use(func() error { return nil }), errClosed)
	_, err = o2.close()
	require.NoError(t, err)
}

func TestSQLOverADatasetFollowsItsHandle(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	cat, err := catalog.Open(ctx, root, catalog.WithCreate())
	require.NoError(t, err)
	defer cat.Close()
	co := &catalogObj{c: cat}
	w, err := openSQL(co, sqlOpenOptions{Threads: 1})
	require.NoError(t, err)
	defer w.close()
	write(t, w, "CREATE TABLE frames (n BIGINT)")
	write(t, w, "INSERT INTO frames SELECT range FROM range(5)")

	d, err := cat.OpenTable(ctx, "frames")
	require.NoError(t, err)
	defer d.Close()
	ds := &dataset{d: d}
	o, err := openSQL(ds, sqlOpenOptions{Threads: 1})
	require.NoError(t, err)
	defer o.close()
	require.EqualValues(t, 5, count(t, o, "SELECT count(*) FROM ds"))
	require.EqualValues(t, 10, count(t, o, "SELECT sum(n)::BIGINT FROM ds"))

	// The handle stays at its version until it moves; then the engine
	// reads the new one.
	write(t, w, "INSERT INTO frames VALUES (5)")
	require.EqualValues(t, 5, count(t, o, "SELECT count(*) FROM ds"))
	require.NoError(t, d.Refresh(ctx))
	require.EqualValues(t, 6, count(t, o, "SELECT count(*) FROM ds"))

	// Selections: the handle's version; a seeded random() is reproducible.
	sel, _, _, err := o.selection(ctx, "SELECT n WHERE n >= 3 ORDER BY n", sqlRunOptions{})
	require.NoError(t, err)
	require.Equal(t, d.Version(), sel.Version)
	require.Len(t, sel.RowIDs, 3)
	seed := uint64(7)
	a, _, _, err := o.selection(ctx, "SELECT n ORDER BY random()", sqlRunOptions{Seed: &seed})
	require.NoError(t, err)
	b, _, _, err := o.selection(ctx, "SELECT n ORDER BY random()", sqlRunOptions{Seed: &seed})
	require.NoError(t, err)
	require.Equal(t, a.RowIDs, b.RowIDs)
	require.Equal(t, seed, *a.Seed)

	// A dataset's SQL reads only; a closed dataset handle is an error.
	_, _, _, err = o.arrow(ctx, "INSERT INTO ds VALUES (1)", sqlRunOptions{})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "only reads")
	ds.closed = true
	_, _, _, err = o.arrow(ctx, "SELECT 1", sqlRunOptions{})
	require.ErrorIs(t, err, errClosed)
}

func TestSQLKeepsItsCatalogOpen(t *testing.T) {
	ctx := context.Background()
	cat, err := catalog.Open(ctx, t.TempDir(), catalog.WithCreate())
	require.NoError(t, err)
	co := &catalogObj{c: cat}
	o, err := openSQL(co, sqlOpenOptions{Threads: 1})
	require.NoError(t, err)
	write(t, o, "CREATE TABLE t (id BIGINT)")
	// The catalog's handle closed first (as loch_catalog_close does): the
	// SQL handle still works, and closing it closes the catalog.
	co.mu.Lock()
	co.closed = true
	co.mu.Unlock()
	write(t, o, "INSERT INTO t VALUES (1)")
	require.EqualValues(t, 1, count(t, o, "SELECT count(*) FROM t"))
	co.mu.Lock()
	users := co.tables
	co.mu.Unlock()
	require.Equal(t, 1, users, "the SQL handle holds the catalog")
	_, err = o.close()
	require.NoError(t, err)
	co.mu.Lock()
	users = co.tables
	co.mu.Unlock()
	require.Zero(t, users, "closing the SQL handle gives the catalog back (closed with its last user)")
}
