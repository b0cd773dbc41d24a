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
	if where, _ := args[6].(string); where != "" {
		ids, err := Filter(ctx, e.d, where, Options{Threads: e.opts.Threads, Open: e.opts.Open, Cache: e.opts.Cache, Sandbox: e.opts.Sandbox})
		if err != nil {
			return fail(err)
		}
		opts.Allow = vector.NewRowSet(ids)
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
	sc := e.d.Scan()
	if err := sc.Load(ctx, 16); err != nil {
		return fail(err)
	}
	pos, err := sc.Positions(ids)
	if err != nil {
		return fail(err)
	}
	return &vectorSource{hits: hits[0], pos: pos}, nil
}

// vectorSource hands DuckDB the hits of one search.
type vectorSource struct {
	hits []vector.Hit
	pos  []int64 // each hit's position, for ties in an ORDER BY (see rewrite)
	next int
}

func (s *vectorSource) ColumnInfos() []duckdb.ColumnInfo {
	u64, _ := duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	f32, _ := duckdb.NewTypeInfo(duckdb.TYPE_FLOAT)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	return []duckdb.ColumnInfo{{Name: RowIDColumn, T: u64}, {Name: PosColumn, T: i64}, {Name: "distance", T: f32}}
}

func (s *vectorSource) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(len(s.hits)), Exact: true}
}

func (s *vectorSource) Init() {}

func (s *vectorSource) FillRow(row duckdb.Row) (bool, error) {
	if s.next >= len(s.hits) {
		return false, nil
	}
	h := s.hits[s.next]
	s.next++
	if err := row.SetRowValue(0, h.RowID); err != nil {
		return false, err
	}
	if err := row.SetRowValue(1, s.pos[s.next-1]); err != nil {
		return false, err
	}
	return true, row.SetRowValue(2, h.Distance)
}
