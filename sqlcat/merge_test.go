package sqlcat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// seedMerge makes table t (id, name, n) with ids 0..4 and returns the
// row id of each id.
func seedMerge(t *testing.T, s *Session) map[float64]float64 {
	t.Helper()
	run(t, s, "CREATE TABLE t (id BIGINT, name TEXT, n INTEGER)")
	run(t, s, "INSERT INTO t SELECT i, 'row ' || i, i FROM range(5) r(i)")
	ids := map[float64]float64{}
	for _, r := range rowsOf(t, s, "SELECT _rowid, id FROM t") {
		ids[r["id"].(float64)] = r["_rowid"].(float64)
	}
	return ids
}

// version is table t's head.
func version(t *testing.T, s *Session) string {
	t.Helper()
	d, err := s.cat.OpenTable(ctx, "t")
	require.NoError(t, err)
	defer d.Close()
	return d.Version()
}

// commits is the number of commits of table t.
func commits(t *testing.T, s *Session) int {
	t.Helper()
	d, err := s.cat.OpenTable(ctx, "t")
	require.NoError(t, err)
	defer d.Close()
	log, err := d.Log(ctx)
	require.NoError(t, err)
	return len(log)
}

// TestMerge upserts a source into a target by id: matched rows are updated
// in place (row id, position and the columns not set kept), the others
// appended in source order, all in one commit.
func TestMerge(t *testing.T) {
	for name, root := range backends {
		t.Run(name, func(t *testing.T) {
			s := newSession(t, root(t))
			rowids := seedMerge(t, s)
			before := commits(t, s)
			r := run(t, s, `MERGE INTO t USING (VALUES (3, 'three'), (9, 'nine'), (1, 'one'), (7, 'seven')) AS s(id, name)
				ON t.id = s.id
				WHEN MATCHED THEN UPDATE SET name = s.name
				WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)`)
			require.Equal(t, Result{Statement: "MERGE", Table: "t", Rows: 4, Updated: 2, Inserted: 2, Version: version(t, s)}, r)
			require.Equal(t, "MERGE 4 (2 updated, 0 deleted, 2 inserted) t (version "+r.Version+")", r.String())
			require.Equal(t, before+1, commits(t, s), "one commit")
			got := rowsOf(t, s, "SELECT _rowid, _pos, id, name, n FROM t ORDER BY _pos")
			require.Equal(t, []map[string]any{
				{"_rowid": rowids[0], "_pos": 0.0, "id": 0.0, "name": "row 0", "n": 0.0},
				{"_rowid": rowids[1], "_pos": 1.0, "id": 1.0, "name": "one", "n": 1.0},
				{"_rowid": rowids[2], "_pos": 2.0, "id": 2.0, "name": "row 2", "n": 2.0},
				{"_rowid": rowids[3], "_pos": 3.0, "id": 3.0, "name": "three", "n": 3.0},
				{"_rowid": rowids[4], "_pos": 4.0, "id": 4.0, "name": "row 4", "n": 4.0},
				{"_rowid": got[5]["_rowid"], "_pos": 5.0, "id": 9.0, "name": "nine", "n": nil},
				{"_rowid": got[6]["_rowid"], "_pos": 6.0, "id": 7.0, "name": "seven", "n": nil},
			}, got)

			// A target row matched by two source rows is refused, naming its
			// row id; nothing of the statement is committed.
			v := version(t, s)
			_, err := s.Run(ctx, `MERGE INTO t USING (VALUES (2, 'a'), (2, 'b'), (100, 'new')) s(id, name) ON t.id = s.id
				WHEN MATCHED THEN UPDATE SET name = s.name WHEN NOT MATCHED THEN INSERT (id, name) VALUES (s.id, s.name)`, Output{})
			require.ErrorIs(t, err, loch.ErrInvalidArgument)
			require.ErrorContains(t, err, "target row _rowid 2 is matched by more than one source row")
			require.Equal(t, v, version(t, s))
			require.Len(t, rowsOf(t, s, "SELECT * FROM t"), 7)
		})
	}
}

// TestMergeClauses: conditions pick the first clause that holds; DELETE,
// DO NOTHING, USING (cols), a catalog table as the source, and the star
// forms (columns by name).
func TestMergeClauses(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	rowids := seedMerge(t, s)
	run(t, s, "CREATE TABLE src (id BIGINT, name TEXT)")
	run(t, s, "INSERT INTO src VALUES (0, 'del'), (1, 'skip'), (2, 'two'), (50, 'fifty'), (200, 'big')")
	r := run(t, s, `MERGE INTO t AS a USING src b USING (id)
		WHEN MATCHED AND b.name = 'del' THEN DELETE
		WHEN MATCHED AND b.name = 'skip' THEN DO NOTHING
		WHEN MATCHED THEN UPDATE SET name = CASE WHEN b.name = 'two' THEN 'TWO' ELSE b.name END, n = a.n * 10
		WHEN NOT MATCHED AND b.id > 100 THEN DO NOTHING
		WHEN NOT MATCHED THEN INSERT VALUES (b.id, b.name, -1)`)
	require.Equal(t, [4]int64{3, 1, 1, 1}, [4]int64{r.Rows, r.Updated, r.Deleted, r.Inserted})
	require.Equal(t, []map[string]any{
		{"_rowid": rowids[1], "id": 1.0, "name": "row 1", "n": 1.0},
		{"_rowid": rowids[2], "id": 2.0, "name": "TWO", "n": 20.0},
		{"_rowid": rowids[3], "id": 3.0, "name": "row 3", "n": 3.0},
		{"_rowid": rowids[4], "id": 4.0, "name": "row 4", "n": 4.0},
	}, rowsOf(t, s, "SELECT _rowid, id, name, n FROM t WHERE id < 50 ORDER BY _pos"))
	require.Equal(t, []map[string]any{{"id": 50.0, "name": "fifty", "n": -1.0}}, rowsOf(t, s, "SELECT id, name, n FROM t WHERE id >= 50"))

	// UPDATE SET * and INSERT * take the source's columns by name (its
	// _rowid and _pos are not data); the other columns are kept or NULL.
	r = run(t, s, `MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT BY NAME *`)
	require.Equal(t, [4]int64{5, 3, 0, 2}, [4]int64{r.Rows, r.Updated, r.Deleted, r.Inserted})
	require.Equal(t, []map[string]any{
		{"id": 1.0, "name": "skip", "n": 1.0},
		{"id": 2.0, "name": "two", "n": 20.0},
		{"id": 3.0, "name": "row 3", "n": 3.0},
		{"id": 4.0, "name": "row 4", "n": 4.0},
		{"id": 50.0, "name": "fifty", "n": -1.0},
		{"id": 0.0, "name": "del", "n": nil},
		{"id": 200.0, "name": "big", "n": nil},
	}, rowsOf(t, s, "SELECT id, name, n FROM t ORDER BY _pos"))

	// A MERGE that changes nothing commits nothing.
	v := version(t, s)
	r = run(t, s, `MERGE INTO t USING src ON t.id = src.id WHEN MATCHED THEN DO NOTHING`)
	require.Equal(t, Result{Statement: "MERGE", Table: "t", Version: v}, r)
	// A null key matches nothing: the row is inserted.
	r = run(t, s, `MERGE INTO t USING (SELECT NULL::BIGINT AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)`)
	require.EqualValues(t, 1, r.Inserted)
	// The table as its own source: a self-merge on equal ids updates every row once.
	r = run(t, s, `MERGE INTO t USING t AS o ON t._rowid = o._rowid WHEN MATCHED THEN UPDATE SET n = 1`)
	require.EqualValues(t, 8, r.Updated)

	// WHEN NOT MATCHED BY SOURCE: the target rows the source lacks (a
	// sync: update what matches, delete or mark what the source dropped).
	r = run(t, s, `MERGE INTO t USING (VALUES (1), (2), (3), (4)) s(id) ON t.id = s.id
		WHEN MATCHED THEN UPDATE SET n = 2
		WHEN NOT MATCHED BY SOURCE AND t.id IS NULL THEN UPDATE SET n = -2
		WHEN NOT MATCHED BY SOURCE AND t.id < 100 THEN DELETE`)
	require.Equal(t, [4]int64{7, 5, 2, 0}, [4]int64{r.Rows, r.Updated, r.Deleted, r.Inserted})
	require.Equal(t, []map[string]any{
		{"id": 1.0, "n": 2.0}, {"id": 2.0, "n": 2.0}, {"id": 3.0, "n": 2.0}, {"id": 4.0, "n": 2.0},
		{"id": 200.0, "n": 1.0}, {"id": nil, "n": -2.0},
	}, rowsOf(t, s, "SELECT id, n FROM t ORDER BY _pos"))
}

// TestMergeErrors: each refusal names what was wrong and changes nothing.
func TestMergeErrors(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	seedMerge(t, s)
	v := version(t, s)
	for _, tc := range []struct{ stmt, want string }{
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id", "want WHEN MATCHED or WHEN NOT MATCHED"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN UPDATE", "WHEN NOT MATCHED BY SOURCE has no source row to UPDATE SET * from"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN NOT MATCHED BY SOURCE THEN INSERT VALUES (1)", "want UPDATE, DELETE or DO NOTHING"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE RETURNING *", "RETURNING is not supported"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE BY POSITION", "BY POSITION is not supported"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN INSERT VALUES (1)", "WHEN MATCHED or NOT MATCHED BY SOURCE: want UPDATE, DELETE or DO NOTHING"},
		{"MERGE INTO t USING (SELECT 1 AS id) s WHEN MATCHED THEN DELETE", "want ON or USING after the source"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET nope = 1", `no column "nope" (have id, name, n)`},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = 1, n = 2", "column n is set twice"},
		{"MERGE INTO t USING (SELECT 9 AS id, 1 AS extra) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *", `the source's column "extra" is not a column of t`},
		{"MERGE INTO t USING (SELECT 9 AS id) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id)", "INSERT VALUES has 1 values, the table 3 columns (id, name, n)"},
		{"MERGE INTO t USING (SELECT 9 AS id) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id)", "INSERT names 2 columns and has 1 values"},
		{"MERGE INTO t USING (SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN UPDATE SET n = 'x'", "_rowid 1, column n"},
		{"MERGE INTO t USING (VALUES (9, 'ok'), (10, 'x')) s(id, n) ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id, n) VALUES (s.id, s.n)", "row 1, column n"},
	} {
		mustRefuse(t, s, tc.stmt, loch.ErrInvalidArgument, tc.want)
	}
	_, err := s.Run(ctx, "MERGE INTO nope USING t ON nope.id = t.id WHEN MATCHED THEN DELETE", Output{})
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.Equal(t, v, version(t, s))
	require.True(t, !IsQuery("MERGE INTO t USING s ON t.id = s.id WHEN MATCHED THEN DELETE"))
}
