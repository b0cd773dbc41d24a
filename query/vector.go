package query

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch/vector"
)

// VectorSearchFunction is the table function of nearest-neighbour search
// over the engine's dataset (package vector): vector_search(column, query,
// k := 10, metric := 'cosine', nprobe := 0, exact := false, filter := ”)
// returns the k rows nearest to the query vector (a FLOAT[] literal or
// expression) in the embedding column, as (_rowid UBIGINT, _pos BIGINT,
// distance FLOAT), through the column's index when one serves the version. Its
// rows carry _rowid, so a query over it is a selection (Select) that a
// loader trains on: join it to ds for other columns, ORDER BY distance
// for nearest first. A WHERE after it filters its k rows (and may leave
// fewer); filter := 'SQL over ds' gives the top k among the rows that pass.
const VectorSearchFunction = "vector_search"

// vectorSearchAt is the table function behind the vector_search macro: it
// takes the query vector as text (duckdb-go binds no LIST arguments),
// which the macro makes with CAST(q::FLOAT[] AS VARCHAR).
const vectorSearchAt = "loch_vector_search"

func (e *Engine) registerVector(ctx context.Context, conn *sql.Conn) error {
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	boolean, _ := duckdb.NewTypeInfo(duckdb.TYPE_BOOLEAN)
	f := duckdb.RowTableFunction{
		Config:               duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{str, str, i64, str, i64, boolean, str}},
		BindArgumentsContext: e.bindVector,
	}
	macro := fmt.Sprintf("CREATE MACRO %s(col, q, k := 10, metric := 'cosine', nprobe := 0, exact := false, filter := '') AS TABLE "+
		"SELECT * FROM %s(col, CAST(q::FLOAT[] AS VARCHAR), k, metric, nprobe, exact, filter)", VectorSearchFunction, vectorSearchAt)
	return registerTableMacro(ctx, conn, vectorSearchAt, f, VectorSearchFunction, macro)
}

// registerTableMacro registers f as the table function at and defines the
// table macro name over it with the statement macro.
func registerTableMacro(ctx context.Context, conn *sql.Conn, at string, f duckdb.RowTableFunction, name, macro string) error {
	if err := duckdb.RegisterTableUDF(conn, at, f); err != nil {
		return fmt.Errorf("query: register %s: %w", at, err)
	}
	if _, err := conn.ExecContext(ctx, macro); err != nil {
		return fmt.Errorf("query: define %s: %w", name, err)
	}
	return nil
}

// parseVector reads DuckDB's text of a FLOAT[]: "[1.0, 2.5, -3.0]".
func parseVector(s string) ([]float32, error) {
	body, ok := strings.CutPrefix(strings.TrimSpace(s), "[")
	if body, ok = strings.CutSuffix(body, "]"); !ok {
		return nil, fmt.Errorf("query vector %q: want a list of numbers", s)
	}
	if strings.TrimSpace(body) == "" {
		return nil, nil
	}
	var out []float32
	for i, p := range strings.Split(body, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 32)
		if err != nil {
			return nil, fmt.Errorf("query vector element %d is %q, want a number", i, strings.TrimSpace(p))
		}
		out = append(out, float32(f))
	}
	return out, nil
}

// bindVector runs the search when DuckDB binds the call: its answer is
// small (k rows).
func (e *Engine) bindVector(ctx context.Context, _ map[string]any, args ...any) (duckdb.RowTableSource, error) {
	fail := func(err error) (duckdb.RowTableSource, error) {
		return nil, fmt.Errorf("%s: %w", VectorSearchFunction, err)
	}
	if e.d == nil {
		return fail(fmt.Errorf("the engine has no dataset"))
	}
	column, _ := args[0].(string)
	text, _ := args[1].(string)
	q, err := parseVector(text)
	if err != nil {
		return fail(err)
	}
	k, _ := args[2].(int64)
	metric, _ := args[3].(string)
	nprobe, _ := args[4].(int64)
	exact, _ := args[5].(bool)
	opts := vector.Options{NProbe: int(nprobe), Cache: e.opts.Cache}
	m, err := vector.ParseMetric(metric)
	if err != nil {
		return fail(err)
	}
	where, _ := args[6].(string)
	if opts.Allow, err = e.allowed(ctx, where); err != nil {
		return fail(err)
	}
	if k <= 0 {
		return fail(fmt.Errorf("k = %d, want k >= 1", k))
	}
	var hits [][]vector.Hit
	if exact {
		hits, err = vector.Exact(ctx, e.d.Scan(), column, m, [][]float32{q}, int(k), opts)
	} else {
		var res *vector.Result
		if res, err = vector.Search(ctx, e.d, column, m, [][]float32{q}, int(k), opts); err == nil {
			hits = res.Hits
		}
	}
	if err != nil {
		return fail(err)
	}
	ids := make([]uint64, len(hits[0]))
	for i, h := range hits[0] {
		ids[i] = h.RowID
	}
	src, err := e.hitsSource(ctx, ids, []hitColumn{{"distance", duckdb.TYPE_FLOAT}}, func(i int) []any {
		return []any{hits[0][i].Distance}
	})
	if err != nil {
		return fail(err)
	}
	return src, nil
}

// allowed is the set of rows of the engine's dataset that pass where, an
// SQL condition over ds (the filter := of the search functions); nil
// (every row) for "".
func (e *Engine) allowed(ctx context.Context, where string) (*vector.RowSet, error) {
	if where == "" {
		return nil, nil
	}
	ids, err := Filter(ctx, e.d, where, Options{Threads: e.opts.Threads, Open: e.opts.Open, Cache: e.opts.Cache, Sandbox: e.opts.Sandbox})
	if err != nil {
		return nil, err
	}
	return vector.NewRowSet(ids), nil
}

// hitColumn is a column of a search function's result after _rowid and
// _pos.
type hitColumn struct {
	name string
	t    duckdb.Type
}

// hitsSource returns the source of a search function's answer: a row for
// each hit, in order, of its row id ids[i] (_rowid), its position (_pos,
// for ties in an ORDER BY: see rewrite) and the values vals(i) of cols.
func (e *Engine) hitsSource(ctx context.Context, ids []uint64, cols []hitColumn, vals func(i int) []any) (*hitRows, error) {
	sc := e.d.Scan()
	if err := sc.Load(ctx, 16); err != nil {
		return nil, err
	}
	pos, err := sc.Positions(ids)
	if err != nil {
		return nil, err
	}
	u64, _ := duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	s := &hitRows{cols: []duckdb.ColumnInfo{{Name: RowIDColumn, T: u64}, {Name: PosColumn, T: i64}}, rows: make([][]any, len(ids))}
	for _, c := range cols {
		t, _ := duckdb.NewTypeInfo(c.t)
		s.cols = append(s.cols, duckdb.ColumnInfo{Name: c.name, T: t})
	}
	for i, id := range ids {
		s.rows[i] = append([]any{id, pos[i]}, vals(i)...)
	}
	return s, nil
}

// hitRows hands DuckDB the rows of one search's hits.
type hitRows struct {
	cols []duckdb.ColumnInfo
	rows [][]any
	next int
}

func (s *hitRows) ColumnInfos() []duckdb.ColumnInfo { return s.cols }

func (s *hitRows) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(len(s.rows)), Exact: true}
}

func (s *hitRows) Init() {}

func (s *hitRows) FillRow(row duckdb.Row) (bool, error) {
	if s.next >= len(s.rows) {
		return false, nil
	}
	vals := s.rows[s.next]
	s.next++
	for c, v := range vals {
		if err := row.SetRowValue(c, v); err != nil {
			return false, err
		}
	}
	return true, nil
}
