package sqlcat

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// stageBoth stages source into a new dataset (the schema SourceSchema
// gives it) by columns and again value by value (byColumns off), commits
// both, and returns them with what each Stage said.
func stageBoth(t *testing.T, dir, source string) (cols, rows *loch.Dataset, rc, rr IngestResult) {
	t.Helper()
	sch, err := SourceSchema(ctx, source, IngestOptions{})
	require.NoError(t, err)
	stageOne := func(name string) (*loch.Dataset, IngestResult) {
		d, err := loch.Create(ctx, filepath.Join(dir, name), sch)
		require.NoError(t, err)
		t.Cleanup(func() { d.Close() })
		res, err := Stage(ctx, d, source, IngestOptions{})
		require.NoError(t, err)
		_, err = d.Commit(ctx, name)
		require.NoError(t, err)
		return d, res
	}
	cols, rc = stageOne("by-columns")
	byColumns = false
	defer func() { byColumns = true }()
	rows, rr = stageOne("by-rows")
	return cols, rows, rc, rr
}

// TestStageByColumnsAsByRows: a Parquet file with a column of each type
// stored as it is (the integers, floats, boolean, text short and long,
// json, blob; nulls in most) is staged by columns, in chunks of DuckDB's
// rows, into the dataset that the value-by-value path makes: the same
// samples and the same statistics.
func TestStageByColumnsAsByRows(t *testing.T) {
	dir := t.TempDir()
	s := newSession(t, filepath.Join(dir, "lake"))
	pq := filepath.Join(dir, "all.parquet")
	null := func(expr string) string { return fmt.Sprintf("CASE WHEN i %% 7 = 3 THEN NULL ELSE %s END", expr) }
	run(t, s, fmt.Sprintf(`COPY (SELECT i AS id, %s AS b, %s AS i8, %s AS i16, %s AS i32, %s AS u8, %s AS u16,
		%s AS u32, %s AS u64, %s AS f32, %s AS f64, %s AS t, %s AS j, %s AS bl
		FROM range(5000) t(i)) TO '%s' (FORMAT parquet)`,
		null("i % 3 = 0"), null("(i % 100)::TINYINT"), null("(-i)::SMALLINT"), null("(i * 1000)::INTEGER"),
		null("(i % 250)::UTINYINT"), null("i::USMALLINT"), null("i::UINTEGER"), null("(i * 1000000000)::UBIGINT"),
		null("(i / 3)::FLOAT"), null("i / 7"), null("CASE WHEN i % 2 = 0 THEN 's' || i ELSE 'a string past twelve bytes ' || i END"),
		null("json_object('i', i)"), null("('blob' || i)::BLOB"), pq))
	cols, rows, rc, rr := stageBoth(t, dir, ParquetSource(pq, nil))
	require.True(t, rc.ByColumns)
	require.False(t, rr.ByColumns)
	require.EqualValues(t, 5000, rc.Rows)
	require.Equal(t, rr.Rows, rc.Rows)
	dtypes := map[string]schema.DType{}
	for _, c := range cols.Schema().Columns {
		dtypes[c.Name] = c.DType
	}
	require.Equal(t, map[string]schema.DType{"id": schema.Int64, "b": schema.Bool, "i8": schema.Int8, "i16": schema.Int16,
		"i32": schema.Int32, "u8": schema.Uint8, "u16": schema.Uint16, "u32": schema.Uint32, "u64": schema.Uint64,
		"f32": schema.Float32, "f64": schema.Float64, "t": schema.Text, "j": schema.JSON, "bl": schema.Bytes}, dtypes)
	requireSameRows(t, cols, rows)
}

// requireSameRows checks two datasets hold the same samples and column
// statistics.
func requireSameRows(t *testing.T, a, b *loch.Dataset) {
	t.Helper()
	require.Equal(t, b.Len(), a.Len())
	ea, eb := a.Columns(), b.Columns()
	require.Len(t, ea, len(eb))
	for k, c := range a.Schema().Columns {
		require.Equal(t, eb[k].Stats.Samples, ea[k].Stats.Samples, c.Name)
		require.Equal(t, eb[k].Stats.RawBytes, ea[k].Stats.RawBytes, c.Name)
		require.Equal(t, eb[k].Stats.MinShape, ea[k].Stats.MinShape, c.Name)
		require.Equal(t, eb[k].Stats.MaxShape, ea[k].Stats.MaxShape, c.Name)
		ra, err := a.Column(c.Name)
		require.NoError(t, err)
		rb, err := b.Column(c.Name)
		require.NoError(t, err)
		sa, err := ra.ReadRange(ctx, 0, a.Len())
		require.NoError(t, err)
		sb, err := rb.ReadRange(ctx, 0, b.Len())
		require.NoError(t, err)
		require.Equal(t, sb, sa, c.Name)
	}
}

// TestStageByColumnsFallsBack: a source with a column that is not stored
// as it is (DECIMAL, converted to float64) is staged value by value, the
// whole of it.
func TestStageByColumnsFallsBack(t *testing.T) {
	dir := t.TempDir()
	cols, rows, rc, _ := stageBoth(t, dir, "SELECT i AS id, (i / 8)::DECIMAL(9, 3) AS d FROM range(3000) t(i)")
	require.False(t, rc.ByColumns)
	requireSameRows(t, cols, rows)
}

// TestStageByColumnsErrors: an invalid sample names its source row as the
// value-by-value path names it, DuckDB's error past the first chunks
// fails the ingest, and neither leaves rows to commit.
func TestStageByColumnsErrors(t *testing.T) {
	dir := t.TempDir()
	sch := schema.Schema{Columns: []schema.Column{{Name: "lab", Kind: schema.ClassLabel, DType: schema.Int64, ClassNames: []string{"a", "b", "c"}}}}
	require.NoError(t, sch.Normalize())
	for i, tc := range []struct{ source, want string }{
		{"SELECT (i % 4)::BIGINT AS lab FROM range(5000) t(i)", "row 4, column"},
		{"SELECT (i % 3 + CASE WHEN i = 4900 THEN 3 ELSE 0 END)::BIGINT AS lab FROM range(5000) t(i)", "row 4901, column"},
		{"SELECT CASE WHEN i < 4500 THEN i % 3 ELSE error('boom')::BIGINT END AS lab FROM range(5000) t(i)", "boom"},
	} {
		d, err := loch.Create(ctx, filepath.Join(dir, fmt.Sprint(i)), sch)
		require.NoError(t, err)
		res, err := Stage(ctx, d, tc.source, IngestOptions{})
		require.ErrorIs(t, err, loch.ErrInvalidArgument, tc.source)
		require.ErrorContains(t, err, "(nothing written)", tc.source)
		require.ErrorContains(t, err, tc.want, tc.source)
		require.True(t, res.ByColumns, tc.source)
		require.NoError(t, d.Close()) // discards what was staged
		d, err = loch.Open(ctx, filepath.Join(dir, fmt.Sprint(i)))
		require.NoError(t, err)
		require.Zero(t, d.Len())
		d.Close()
	}
}

// TestStageByColumnsLarge: three million rows stream through in chunks
// (DuckDB's streaming result; memory is measured by the ingest benchmark)
// into several chunks per column, in order.
func TestStageByColumnsLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("three million rows")
	}
	dir := t.TempDir()
	src := "SELECT i AS id, 'name-' || i AS name FROM range(3000000) t(i)"
	sch, err := SourceSchema(ctx, src, IngestOptions{})
	require.NoError(t, err)
	d, err := loch.Create(ctx, filepath.Join(dir, "ds"), sch)
	require.NoError(t, err)
	defer d.Close()
	res, err := Stage(ctx, d, src, IngestOptions{})
	require.NoError(t, err)
	require.True(t, res.ByColumns)
	require.EqualValues(t, 3000000, res.Rows)
	_, err = d.Commit(ctx, "large")
	require.NoError(t, err)
	ids, err := d.Column("id")
	require.NoError(t, err)
	names, err := d.Column("name")
	require.NoError(t, err)
	for _, at := range []int64{0, 1234567, 2999999} {
		got, err := ids.ReadRange(ctx, at, at+1)
		require.NoError(t, err)
		require.Equal(t, uint64(at), leUint64(got[0].Data))
		got, err = names.ReadRange(ctx, at, at+1)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("name-%d", at), string(got[0].Data))
	}
}

func leUint64(b []byte) uint64 {
	var v uint64
	for k := len(b) - 1; k >= 0; k-- {
		v = v<<8 | uint64(b[k])
	}
	return v
}
