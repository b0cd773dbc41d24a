package sqlcat

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestTypes: each SQL type makes the schema.Column written out here.
func TestTypes(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want schema.Column
	}{
		{"BOOLEAN", schema.Column{DType: schema.Bool, Shape: schema.Shape{}}},
		{"INT", schema.Column{DType: schema.Int32, Shape: schema.Shape{}}},
		{"UBIGINT", schema.Column{DType: schema.Uint64, Shape: schema.Shape{}}},
		{"REAL", schema.Column{DType: schema.Float32, Shape: schema.Shape{}}},
		{"DOUBLE", schema.Column{DType: schema.Float64, Shape: schema.Shape{}}},
		{"VARCHAR", schema.Column{DType: schema.Text, Kind: schema.TextKind}},
		{"JSON", schema.Column{DType: schema.JSON, Kind: schema.JSONKind}},
		{"BLOB", schema.Column{DType: schema.Bytes}},
		{"FLOAT[4]", schema.Column{DType: schema.Float32, Shape: schema.Shape{4}}},
		{"INTEGER[]", schema.Column{DType: schema.Int32, Shape: schema.Shape{-1}}},
		{"FLOAT[3][2]", schema.Column{DType: schema.Float32, Shape: schema.Shape{2, 3}}},
		{"FLOAT[4][]", schema.Column{DType: schema.Float32, Shape: schema.Shape{-1, 4}}},
		{"IMAGE", schema.Column{Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG}},
		{"IMAGE('jpeg')", schema.Column{Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.JPEG}},
		{"IMAGE('zstd', 4)", schema.Column{Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 4}, ChunkCompression: schema.Zstd}},
		{"VIDEO", schema.Column{Kind: schema.Video, DType: schema.Uint8, Shape: schema.Shape{-1, -1, -1, 3}}},
		{"AUDIO(int16, 2)", schema.Column{Kind: schema.Audio, DType: schema.Int16, Shape: schema.Shape{-1, 2}}},
		{"MASK(uint8)", schema.Column{Kind: schema.Mask, DType: schema.Uint8, Shape: schema.Shape{-1, -1}}},
		{"BBOX('xywh', NORMALIZED)", schema.Column{Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}, BBoxFormat: "xywh", BBoxNormalized: true}},
		{"BBOX", schema.Column{Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}, BBoxFormat: "xyxy"}},
		{"CLASS_LABEL('cat', 'dog')", schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{}, ClassNames: []string{"cat", "dog"}}},
		{"CLASS_LABELS('cat')", schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{-1}, ClassNames: []string{"cat"}}},
		{"EMBEDDING(768, float16)", schema.Column{Kind: schema.Embedding, DType: schema.Float16, Shape: schema.Shape{768}}},
		{"TENSOR(float32, [3, NULL])", schema.Column{Kind: schema.Generic, DType: schema.Float32, Shape: schema.Shape{3, -1}}},
		{"TENSOR(uint8)", schema.Column{Kind: schema.Generic, DType: schema.Uint8}},
		{"POINT_CLOUD(3)", schema.Column{Kind: schema.PointCloud, DType: schema.Float32, Shape: schema.Shape{-1, 3}}},
		{"LINK", schema.Column{Kind: schema.Link, DType: schema.Text}},
		{"TEXT WITH (chunk_bytes = '4MiB', chunk_compression = 'zstd')", schema.Column{Kind: schema.TextKind, DType: schema.Text, ChunkBytes: 4 << 20, ChunkCompression: schema.Zstd}},
		{"IMAGE WITH (chunk_compression = 'lz4')", schema.Column{Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, ChunkCompression: schema.LZ4}},
	} {
		p, err := newParser("CREATE TABLE x (c " + tc.sql + ")")
		require.NoError(t, err)
		st, err := p.parseCreate()
		require.NoError(t, err, tc.sql)
		s, err := st.schemaOf()
		require.NoError(t, err, tc.sql)
		want := tc.want
		want.Name = "c"
		require.NoError(t, want.Normalize())
		require.Equal(t, want, s.Columns[0], tc.sql)
	}
}

// TestBadInput: each refused statement fails with its kind and a message
// naming the problem, and changes nothing.
func TestBadInput(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT, e FLOAT[2], label CLASS_LABEL('a', 'b'), img IMAGE)")
	run(t, s, "INSERT INTO t (id, e, label) VALUES (1, [1, 2], 'a')")
	for _, tc := range []struct {
		sql  string
		kind error
		msg  string
	}{
		{"INSERT INTO nope VALUES (1)", loch.ErrNotFound, `no table "nope"`},
		{"UPDATE nope SET a = 1", loch.ErrNotFound, `no table "nope"`},
		{"DELETE FROM nope", loch.ErrNotFound, `no table "nope"`},
		{"SELECT * FROM nope", loch.ErrInvalidArgument, "nope does not exist"},
		{"CREATE TABLE T (x INT)", loch.ErrExists, `already exists`},
		{"CREATE TABLE \"a/b\" (x INT)", loch.ErrInvalidArgument, `a/b`},
		{"CREATE TABLE \"..\" (x INT)", loch.ErrInvalidArgument, `".."`},
		{"CREATE TABLE u (d DATE)", loch.ErrInvalidArgument, "column d: type DATE is not supported (supported: BOOLEAN"},
		{"CREATE TABLE u (d DECIMAL(10, 2))", loch.ErrInvalidArgument, "column d: type DECIMAL is not supported"},
		{"CREATE TABLE u (d VARCHAR[])", loch.ErrInvalidArgument, "arrays must be of numbers"},
		{"CREATE TABLE u (d FOO)", loch.ErrInvalidArgument, "column d: type FOO is not supported"},
		{"CREATE TABLE u (d INT NOT NULL)", loch.ErrInvalidArgument, "NOT NULL is not supported"},
		{"CREATE TABLE u (d EMBEDDING(0))", loch.ErrInvalidArgument, "EMBEDDING takes (dimensions [, dtype])"},
		{"CREATE TABLE u (d IMAGE(float64))", loch.ErrInvalidArgument, "IMAGE takes a compression in quotes"},
		{"CREATE TABLE u (d TEXT WITH (sample_compression = 'png'))", loch.ErrInvalidArgument, "option sample_compression does not apply"},
		{"CREATE TABLE u (d TEXT WITH (colour = 'red'))", loch.ErrInvalidArgument, "unknown option colour"},
		{"CREATE TABLE u (d IMAGE('jpeg') WITH (sample_compression = 'png'))", loch.ErrInvalidArgument, "conflicts with the column's type"},
		{"CREATE TABLE u (d INT) WITH (colour = 'red')", loch.ErrInvalidArgument, "unknown option colour"},
		{"CREATE TABLE u (d INT, d INT)", loch.ErrInvalidArgument, "twice"},
		{"INSERT INTO t VALUES (2, [1, 2])", loch.ErrInvalidArgument, "the source has 2 columns, the target 4"},
		{"INSERT INTO t (id, nope) VALUES (2, 1)", loch.ErrInvalidArgument, `no column "nope"`},
		{"INSERT INTO t (id, e) VALUES (2, [1, 2]), (3, [1, 2, 3])", loch.ErrInvalidArgument, "row 2, column \"e\""},
		{"INSERT INTO t (id, e) VALUES (2, [1, 2]), (3, 'x')", loch.ErrInvalidArgument, "can't be cast"}, // DuckDB's error: VALUES has one type per column
		{"INSERT INTO t (id) VALUES (2), (2.5)", loch.ErrInvalidArgument, "row 2, column id: duckdb.Decimal 2.5"},
		{"INSERT INTO t (id, label) VALUES (2, 'a'), (3, 'z')", loch.ErrInvalidArgument, `row 2, column label: VARCHAR "z", want one of the class names "a", "b"`},
		{"INSERT INTO t (id, label) VALUES (2, 5)", loch.ErrInvalidArgument, "row 1, column label: int32 5, want a class index in [0, 2)"},
		{"UPDATE t SET e = [1, 2, 3]", loch.ErrInvalidArgument, "row 1, column \"e\" (generic float32): shape [3], want [2]"},
		{"UPDATE t SET nope = 1", loch.ErrInvalidArgument, `no column "nope"`},
		{"UPDATE t SET id = 1 FROM t", loch.ErrInvalidArgument, "FROM, USING and RETURNING are not supported"},
		{"DROP TABLE nope", loch.ErrNotFound, `no table "nope"`},
		{"ALTER TABLE t ADD COLUMN id INT", loch.ErrInvalidArgument, "id"},
		{"ALTER TABLE t DROP COLUMN id", loch.ErrInvalidArgument, "want ADD [COLUMN] or RENAME TO"},
		{"CREATE VIEW v AS SELECT 1", loch.ErrInvalidArgument, "CREATE VIEW is not supported"},
		{"SET loch_colour = 'red'", loch.ErrInvalidArgument, "unknown setting loch_colour"},
	} {
		err := mustRefuse(t, s, tc.sql, tc.kind, tc.msg)
		require.NotContains(t, err.Error(), "\n", tc.sql)
	}
	// nothing changed
	got := rowsOf(t, s, "SELECT id, e, label FROM t")
	require.Equal(t, []map[string]any{{"id": 1.0, "e": []any{1.0, 2.0}, "label": "a"}}, got)
	tables, err := s.cat.Tables(ctx)
	require.NoError(t, err)
	require.Len(t, tables, 1)
}

// TestAtomicInsert: an INSERT whose row k is bad leaves the table's
// version unchanged, for k in the first batch, at a batch boundary and in
// the last batch; the error names row k.
func TestAtomicInsert(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT, e FLOAT[2])")
	for _, k := range []int{1, 200, batchRows, batchRows + 1, 700} {
		q := "INSERT INTO t SELECT i, CASE WHEN i = " + itoa(k) + " THEN [1, 2, 3] ELSE [i, i] END FROM range(1, 701) r(i)"
		mustRefuseNoCommit(t, s, q, loch.ErrInvalidArgument, "row "+itoa(k)+", column \"e\"")
	}
	r := run(t, s, "INSERT INTO t SELECT i, [i, i] FROM range(1, 701) r(i)")
	require.EqualValues(t, 700, r.Rows)
}

func itoa(i int) string { return fmtInt(int64(i)) }

// TestReadOnlyAndBranches: writes go to --branch; a tag is read-only; a
// table without the branch cannot be written there and reads main.
func TestReadOnlyAndBranches(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT)")
	run(t, s, "CREATE TABLE u (id BIGINT)")
	run(t, s, "INSERT INTO t VALUES (1)")
	d, err := s.cat.OpenTable(ctx, "t")
	require.NoError(t, err)
	_, err = d.CreateTag(ctx, "v1", d.Version())
	require.NoError(t, err)
	_, err = d.CreateBranch(ctx, "dev", d.Version())
	require.NoError(t, err)
	d.Close()

	s.Branch = "v1"
	for _, q := range []string{"INSERT INTO t VALUES (2)", "UPDATE t SET id = 3", "DELETE FROM t", "ALTER TABLE t ADD COLUMN x INT"} {
		mustRefuse(t, s, q, loch.ErrReadOnly, `table t is read-only at "v1"`)
	}
	s.Branch = "dev"
	run(t, s, "INSERT INTO t VALUES (2)")
	_, err = s.Run(ctx, "INSERT INTO u VALUES (2)", Output{})
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.ErrorContains(t, err, `table u has no branch "dev"`)
	require.Len(t, rowsOf(t, s, "SELECT * FROM t"), 2)
	require.Len(t, rowsOf(t, s, "SELECT * FROM u"), 0)
	run(t, s, "SET loch_branch = 'main'")
	require.Equal(t, "main", s.Branch)
	require.Len(t, rowsOf(t, s, "SELECT * FROM t"), 1)
	run(t, s, "RESET loch_branch")
	require.Equal(t, "", s.Branch)
}

// TestMessages: -- loch: message, /* loch: message */, SET loch_message and
// the statement's text name the commits.
func TestMessages(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT)")
	run(t, s, "-- loch: message \"first \\\"one\\\"\"\nINSERT INTO t VALUES (1)")
	run(t, s, "/* loch: message \"second\" */ INSERT INTO t VALUES (2)")
	run(t, s, "SET loch_message = 'third'")
	run(t, s, "INSERT INTO t VALUES (3)")
	run(t, s, "RESET loch_message")
	run(t, s, "INSERT   INTO t\n VALUES (4)")
	d, err := s.cat.OpenTable(ctx, "t")
	require.NoError(t, err)
	defer d.Close()
	log, err := d.Log(ctx)
	require.NoError(t, err)
	var msgs []string
	for _, c := range log {
		msgs = append(msgs, c.Message)
	}
	require.Equal(t, []string{"INSERT INTO t VALUES (4)", "third", "second", `first "one"`, "create dataset"}, msgs)
}

// TestCreateAs: CREATE TABLE ... AS SELECT infers the schema from DuckDB's
// types and inserts the rows in one commit.
func TestCreateAs(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT, e FLOAT[2], note TEXT)")
	run(t, s, "INSERT INTO t VALUES (1, [1, 2], 'x'), (2, [3, 4], 'y')")
	r := run(t, s, "CREATE TABLE c AS SELECT * FROM t WHERE id > 1")
	require.EqualValues(t, 1, r.Rows)
	d, err := s.cat.OpenTable(ctx, "c")
	require.NoError(t, err)
	sch := d.Schema()
	require.Equal(t, []string{"id", "e", "note"}, sch.Names())
	d.Close()
	require.Equal(t, []map[string]any{{"id": 2.0, "e": []any{3.0, 4.0}, "note": "y"}}, rowsOf(t, s, "SELECT id, e, note FROM c"))
	_, err = s.Run(ctx, "CREATE TABLE bad AS SELECT DATE '2020-01-01' AS d", Output{})
	require.ErrorContains(t, err, "column d: type DATE is not supported")
	_, err = s.cat.Table(ctx, "bad")
	require.ErrorIs(t, err, loch.ErrNotFound)
}

// TestCreateAsTypes: CREATE TABLE ... AS maps each result column by
// DuckDB's type of it (a DECIMAL as float64, arrays outermost first,
// lists as variable dimensions), and refuses one no loch column holds.
func TestCreateAsTypes(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, `CREATE TABLE c AS SELECT 1.5 AS dec, [[1, 2, 3], [4, 5, 6]]::FLOAT[3][2] AS arr, [1, 2]::INT[] AS lst,
		'{"a": 1}'::JSON AS j, 'x' AS t, 'b'::BLOB AS b, true AS ok, 7::UTINYINT AS u, 2::INT8 AS i8`)
	d, err := s.cat.OpenTable(ctx, "c")
	require.NoError(t, err)
	defer d.Close()
	var got []string
	for _, c := range d.Schema().Columns {
		got = append(got, fmt.Sprintf("%s %s %s %v", c.Name, c.Kind, c.DType, c.Shape))
	}
	require.Equal(t, []string{
		"dec generic float64 []", "arr generic float32 [2 3]", "lst generic int32 [-1]", "j json json []",
		"t text text []", "b generic bytes []", "ok generic bool []", "u generic uint8 []", "i8 generic int64 []",
	}, got)
	for q, msg := range map[string]string{
		"SELECT ['a']::VARCHAR[] AS v":        "column v: type VARCHAR[]",
		"SELECT 'a'::ENUM('a', 'b') AS e":     "column e: type ENUM",
		"SELECT {'a': 1} AS st":               "column st: type STRUCT",
		"SELECT TIMESTAMP '2020-01-01' AS ts": "column ts: type TIMESTAMP is not supported (supported: ",
	} {
		_, err := s.Run(ctx, "CREATE TABLE bad AS "+q, Output{})
		require.ErrorIs(t, err, loch.ErrInvalidArgument, q)
		require.ErrorContains(t, err, msg, q)
	}
}

func fmtInt(i int64) string { return strconv.FormatInt(i, 10) }

// TestRefusedTypes: every DuckDB type loch cannot store is refused, naming
// the column and the supported types.
func TestRefusedTypes(t *testing.T) {
	for name := range refused {
		p, err := newParser("CREATE TABLE x (c " + name + ")")
		require.NoError(t, err)
		_, err = p.parseCreate()
		require.ErrorIs(t, err, loch.ErrInvalidArgument, name)
		require.ErrorContains(t, err, "column c: type "+strings.ToUpper(name)+" is not supported (supported: ", name)
	}
}
