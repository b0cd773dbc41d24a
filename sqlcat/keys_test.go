package sqlcat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// mustRefuseNoCommit is mustRefuse, checking too that table t's version
// did not move.
func mustRefuseNoCommit(t *testing.T, s *Session, stmt string, sentinel error, msg string) {
	t.Helper()
	before := version(t, s)
	mustRefuse(t, s, stmt, sentinel, msg)
	require.Equal(t, before, version(t, s), "%s: nothing committed", stmt)
}

// TestKeysRecorded: column and table constraints become the columns' keys,
// serial types serial integer columns; keys of several columns, other
// constraints and keys on columns that cannot be keys are refused.
func TestKeysRecorded(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE a (id SERIAL PRIMARY KEY, name TEXT UNIQUE, n BIGSERIAL, m SMALLSERIAL, code INT, CONSTRAINT c UNIQUE (code))")
	d, err := s.cat.OpenTable(ctx, "a")
	require.NoError(t, err)
	sch := d.Schema()
	d.Close()
	want := map[string]struct {
		key    string
		dtype  schema.DType
		serial bool
	}{
		"id": {schema.KeyPrimary, schema.Int32, true}, "name": {schema.KeyUnique, schema.Text, false},
		"n": {"", schema.Int64, true}, "m": {"", schema.Int16, true}, "code": {schema.KeyUnique, schema.Int32, false},
	}
	for _, c := range sch.Columns {
		w := want[c.Name]
		require.Equal(t, w.key, c.Key, c.Name)
		require.Equal(t, w.dtype, c.DType, c.Name)
		require.Equal(t, w.serial, c.Serial, c.Name)
	}
	run(t, s, "CREATE TABLE b (id BIGINT, PRIMARY KEY (id))")
	for stmt, msg := range map[string]string{
		"CREATE TABLE c (a INT, b INT, PRIMARY KEY (a, b))":     "a key of several columns (a, b) is not supported",
		"CREATE TABLE c (a INT, CHECK (a > 0))":                 "CHECK constraints are not supported",
		"CREATE TABLE c (a INT PRIMARY KEY, b INT PRIMARY KEY)": "at most one",
		"CREATE TABLE c (a FLOAT UNIQUE)":                       "a unique key is an integer or text scalar",
		"CREATE TABLE c (a INT, UNIQUE (b))":                    `key column "b" is not a column`,
		"CREATE TABLE c (a INT NOT NULL)":                       "NOT NULL is not supported",
	} {
		mustRefuse(t, s, stmt, loch.ErrInvalidArgument, msg)
	}
	_, err = s.Run(ctx, "ALTER TABLE b ADD COLUMN u INT UNIQUE", Output{})
	require.ErrorContains(t, err, "UNIQUE is not supported")
}

// TestSerialFills: serial columns take max + 1 where the INSERT gives no
// value or NULL, an explicit value is kept, and numbering goes on from
// the largest value.
func TestSerialFills(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id SERIAL PRIMARY KEY, name TEXT)")
	run(t, s, "INSERT INTO t (name) VALUES ('a'), ('b')")
	run(t, s, "INSERT INTO t VALUES (10, 'c'), (NULL, 'd')")
	run(t, s, "INSERT INTO t (name) SELECT 'e'")
	got := rowsOf(t, s, "SELECT id, name FROM t ORDER BY id")
	var ids []float64
	for _, r := range got {
		ids = append(ids, r["id"].(float64))
	}
	require.Equal(t, []float64{1, 2, 3, 10, 11}, ids)
	require.Equal(t, "d", got[2]["name"])
}

// TestKeysRefuseDuplicates: a duplicate key within one statement or
// against existing rows, or a NULL primary key, is refused by INSERT,
// UPDATE and MERGE with the table, column and value named, and nothing is
// committed; an UPDATE that moves keys among the rows it updates, and a
// MERGE that deletes a row and inserts its key again, pass.
func TestKeysRefuseDuplicates(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT PRIMARY KEY, name TEXT UNIQUE, v INT)")
	run(t, s, "INSERT INTO t VALUES (1, 'a', 0), (2, 'b', 0), (3, NULL, 0), (4, NULL, 0)")
	for _, tc := range []struct{ stmt, msg string }{
		{"INSERT INTO t VALUES (5, 'x', 0), (5, 'y', 0)", "duplicate key: table t column id (primary key): rows 1 and 2 of the statement both have 5"},
		{"INSERT INTO t VALUES (5, 'x', 0), (2, 'y', 0)", "duplicate key: table t column id (primary key): 2 already exists (row _rowid 1)"},
		{"INSERT INTO t VALUES (5, 'it''s', 0), (6, 'it''s', 0)", "column name (unique key): rows 1 and 2 of the statement both have 'it''s'"},
		{"INSERT INTO t VALUES (5, 'a', 0)", "column name (unique key): 'a' already exists"},
		{"INSERT INTO t (name) VALUES ('z')", "column id is the primary key of table t and cannot be NULL"},
		{"UPDATE t SET id = 1 WHERE id = 2", "column id (primary key): 1 already exists (row _rowid 0)"},
		{"UPDATE t SET name = 'q' WHERE id >= 3", "rows 1 and 2 of the statement both have 'q'"},
		{"MERGE INTO t USING (SELECT 9 AS id, 'b' AS name) s ON t.id = s.id WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.name, 0)", "column name (unique key): 'b' already exists"},
	} {
		sentinel := loch.ErrExists
		if tc.stmt == "INSERT INTO t (name) VALUES ('z')" {
			sentinel = loch.ErrInvalidArgument
		}
		mustRefuseNoCommit(t, s, tc.stmt, sentinel, tc.msg)
	}
	run(t, s, "UPDATE t SET id = 5 - id WHERE id <= 4") // 1..4 become 4..1: no duplicate at the end
	run(t, s, "UPDATE t SET name = 'c' WHERE id = 1")
	run(t, s, "MERGE INTO t USING (SELECT 3 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE")
	run(t, s, "INSERT INTO t VALUES (3, 'again', 1)")
	got := rowsOf(t, s, "SELECT id, name FROM t ORDER BY id")
	require.Len(t, got, 4)
	require.Equal(t, "again", got[2]["name"])
}

// TestSerialConcurrentWriters: a second session commits rows between a
// first INSERT's key check and its commit; the first commits nothing on
// that version, runs again, and the two sessions' ids are distinct.
func TestSerialConcurrentWriters(t *testing.T) {
	root := t.TempDir() + "/lake"
	a := newSession(t, root)
	run(t, a, "CREATE TABLE t (id SERIAL PRIMARY KEY, who TEXT)")
	b := NewSession(a.cat)
	calls := 0
	beforeKeyedCommit = func() {
		calls++
		if calls == 1 {
			beforeKeyedCommit = nil // b's own commit runs without the hook
			run(t, b, "INSERT INTO t (who) VALUES ('b'), ('b')")
			beforeKeyedCommit = func() { calls++ }
		}
	}
	defer func() { beforeKeyedCommit = nil }()
	run(t, a, "INSERT INTO t (who) VALUES ('a'), ('a')")
	require.Equal(t, 2, calls, "a's INSERT ran twice")
	got := rowsOf(t, a, "SELECT id, who FROM t ORDER BY id")
	require.Len(t, got, 4)
	for i, who := range []string{"b", "b", "a", "a"} {
		require.EqualValues(t, i+1, got[i]["id"])
		require.Equal(t, who, got[i]["who"])
	}
}

// TestSerialSample: a serial value is stored as loch.Scalar stores the
// column's integer type, for every integer dtype.
func TestSerialSample(t *testing.T) {
	for dt, want := range map[schema.DType]loch.Sample{
		schema.Int8:   loch.Scalar(int8(-5)),
		schema.Int16:  loch.Scalar(int16(-300)),
		schema.Int32:  loch.Scalar(int32(70000)),
		schema.Int64:  loch.Scalar(int64(1) << 40),
		schema.Uint8:  loch.Scalar(uint8(200)),
		schema.Uint16: loch.Scalar(uint16(60000)),
		schema.Uint32: loch.Scalar(uint32(1) << 31),
		schema.Uint64: loch.Scalar(uint64(1) << 63),
	} {
		n := dt.Int(want.Data, 0)
		require.Equal(t, want, serialSample(dt, n), "%s %d", dt, n)
	}
}
