package query

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch/hybrid"
	"github.com/lochdata/loch/vector"
)

// HybridSearchFunction is the table function of hybrid search over the
// engine's dataset (package hybrid, docs/search.md):
//
//	hybrid_search(vector_column, query_vector, text_column, text_query,
//	    k := 10, metric := 'cosine', filter := '', fusion := 'rrf',
//	    weight := 0.5, rrf_k := 60, rank_window := 0, nprobe := 0, exact := false)
//
// returns the k best rows of the fused ranking as (_rowid UBIGINT, _pos
// BIGINT, rank BIGINT, score DOUBLE, vector_rank BIGINT, distance FLOAT,
// text_rank BIGINT, text_score DOUBLE), the component columns NULL for a
// side that did not rank the row. A NULL query vector or text query
// leaves that side out; an empty column name is the dataset's only one of its
// kind. Its rows carry _rowid, so a query over it is a selection; ORDER
// BY rank for the fused order.
const HybridSearchFunction = "hybrid_search"

// hybridSearchAt is the table function behind the hybrid_search macro,
// the vector as text as for vector_search, NULLs as empty strings (duckdb-go cannot
// bind a NULL argument).
const hybridSearchAt = "loch_hybrid_search"

// registerSearch registers the search functions: vector_search, fts_match
// and fts_score, hybrid_search.
func (e *Engine) registerSearch(ctx context.Context, conn *sql.Conn) error {
	if err := e.registerVector(ctx, conn); err != nil {
		return err
	}
	if err := e.registerFTS(ctx, conn); err != nil {
		return err
	}
	return e.registerHybrid(ctx, conn)
}

func (e *Engine) registerHybrid(ctx context.Context, conn *sql.Conn) error {
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	f64, _ := duckdb.NewTypeInfo(duckdb.TYPE_DOUBLE)
	boolean, _ := duckdb.NewTypeInfo(duckdb.TYPE_BOOLEAN)
	f := duckdb.RowTableFunction{
		Config: duckdb.TableFunctionConfig{Arguments: []duckdb.TypeInfo{
			str, str, str, str, i64, str, str, str, f64, f64, i64, i64, boolean}},
		BindArgumentsContext: e.bindHybrid,
	}
	macro := fmt.Sprintf("CREATE MACRO %s(vcol, q, tcol, text, k := 10, metric := 'cosine', filter := '', fusion := 'rrf', "+
		"weight := 0.5, rrf_k := 60, rank_window := 0, nprobe := 0, exact := false) AS TABLE "+
		"SELECT * FROM %s(coalesce(vcol, ''), coalesce(CAST(q::FLOAT[] AS VARCHAR), ''), coalesce(tcol, ''), coalesce(text, ''), "+
		"k, metric, coalesce(filter, ''), fusion, weight, rrf_k, rank_window, nprobe, exact)",
		HybridSearchFunction, hybridSearchAt)
	return registerTableMacro(ctx, conn, hybridSearchAt, f, HybridSearchFunction, macro)
}

// hybridArgs reads the arguments of loch_hybrid_search.
func hybridArgs(args []any) (hybrid.Query, hybrid.Options, string, error) {
	var q hybrid.Query
	var opts hybrid.Options
	q.VectorColumn, _ = args[0].(string)
	if text, _ := args[1].(string); text != "" {
		v, err := parseVector(text)
		if err != nil {
			return q, opts, "", err
		}
		q.Vector = append(make([]float32, 0, len(v)), v...)
	}
	q.TextColumn, _ = args[2].(string)
	q.Text, _ = args[3].(string)
	k, _ := args[4].(int64)
	metric, _ := args[5].(string)
	where, _ := args[6].(string)
	method, _ := args[7].(string)
	weight, _ := args[8].(float64)
	rrfK, _ := args[9].(float64)
	window, _ := args[10].(int64)
	nprobe, _ := args[11].(int64)
	opts.Exact, _ = args[12].(bool)
	q.K, q.Window, opts.NProbe = int(k), int(window), int(nprobe)
	m, err := vector.ParseMetric(metric)
	if err != nil {
		return q, opts, "", err
	}
	q.Metric = m
	if q.Fusion, err = hybrid.ParseFusion(method, rrfK, weight); err != nil {
		return q, opts, "", err
	}
	return q, opts, where, nil
}

// bindHybrid runs the search when DuckDB binds the call: its answer is
// small (k rows).
func (e *Engine) bindHybrid(ctx context.Context, _ map[string]any, args ...any) (duckdb.RowTableSource, error) {
	fail := func(err error) (duckdb.RowTableSource, error) {
		return nil, fmt.Errorf("%s: %w", HybridSearchFunction, err)
	}
	if e.d == nil {
		return fail(fmt.Errorf("the engine has no dataset"))
	}
	q, opts, where, err := hybridArgs(args)
	if err != nil {
		return fail(err)
	}
	opts.Cache, opts.Parallelism = e.opts.Cache, e.opts.Threads
	if opts.Allow, err = e.allowed(ctx, where); err != nil {
		return fail(err)
	}
	res, err := hybrid.Search(ctx, e.d, q, opts)
	if err != nil {
		return fail(err)
	}
	cols := []hitColumn{{"rank", duckdb.TYPE_BIGINT}, {"score", duckdb.TYPE_DOUBLE}, {"vector_rank", duckdb.TYPE_BIGINT},
		{"distance", duckdb.TYPE_FLOAT}, {"text_rank", duckdb.TYPE_BIGINT}, {"text_score", duckdb.TYPE_DOUBLE}}
	src, err := e.hitsSource(ctx, res.RowIDs(), cols, func(i int) []any {
		h := res.Hits[i]
		vals := []any{int64(i + 1), h.Score, nil, nil, nil, nil}
		if h.VectorRank > 0 {
			vals[2], vals[3] = int64(h.VectorRank), h.Distance
		}
		if h.TextRank > 0 {
			vals[4], vals[5] = int64(h.TextRank), h.TextScore
		}
		return vals
	})
	if err != nil {
		return fail(err)
	}
	return src, nil
}
