package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch/fts"
)

// Full-text search in SQL (package fts, docs/search.md):
// fts_match(column, 'query') is true for the rows of ds that the query
// matches, and fts_score(column, 'query') is their BM25 score (NULL for
// the rows it does not match), so that
//
//	SELECT * FROM ds WHERE fts_match(caption, 'red car')
//	ORDER BY fts_score(caption, 'red car') DESC LIMIT 10
//
// ranks by relevance. The rewrite of a SELECT (rewrite.go) makes them
// calls of the scalar function loch_fts(column name, query, _rowid) (and
// of the macro loch_fts_match, its IS NOT NULL), the row id qualified as
// the SELECT names it: the first call for a column and query answers the
// query from the column's full-text index (every row analysed when there
// is none) and keeps the matching rows' scores for the rest of the
// engine's life; later rows cost a map lookup.
const (
	FTSMatchFunction = "fts_match"
	FTSScoreFunction = "fts_score"
	ftsAt            = "loch_fts"
	ftsMatchAt       = "loch_fts_match"
)

// ftsState holds the engine's full-text searcher and answered queries.
type ftsState struct {
	mu       sync.Mutex
	searcher *fts.Searcher
	answers  map[[2]string]map[uint64]float64 // by column and query
}

type ftsFunc struct{ e *Engine }

func (f ftsFunc) Config() duckdb.ScalarFuncConfig {
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	u64, _ := duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	f64, _ := duckdb.NewTypeInfo(duckdb.TYPE_DOUBLE)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{str, str, u64}, ResultTypeInfo: f64, SpecialNullHandling: true}
}

func (f ftsFunc) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (any, error) {
		column, _ := values[0].(string)
		q, _ := values[1].(string)
		id, ok := values[2].(uint64)
		if !ok {
			return nil, nil
		}
		scores, err := f.e.ftsAnswer(column, q)
		if err != nil {
			return nil, err
		}
		if s, ok := scores[id]; ok {
			return s, nil
		}
		return nil, nil
	}}
}

func (e *Engine) registerFTS(ctx context.Context, conn *sql.Conn) error {
	if err := duckdb.RegisterScalarUDF(conn, ftsAt, ftsFunc{e}); err != nil {
		return fmt.Errorf("query: register %s: %w", ftsAt, err)
	}
	m := fmt.Sprintf("CREATE MACRO %s(c, q, r) AS %s(c, q, r) IS NOT NULL", ftsMatchAt, ftsAt)
	if _, err := conn.ExecContext(ctx, m); err != nil {
		return fmt.Errorf("query: define %s: %w", ftsMatchAt, err)
	}
	return nil
}

// replaceFTS replaces every fts_match(a, q) and fts_score(a, q) call
// below x by loch_fts_match(alias(a), q, _rowid) and loch_fts(alias(a),
// q, _rowid), the row id qualified by qual, and reports whether it found
// one.
func replaceFTS(x any, qual []any) bool {
	return replaceCalls(x, func(v map[string]any) bool {
		name := strings.ToLower(fmt.Sprint(v["function_name"]))
		ch, _ := v["children"].([]any)
		if (name != FTSMatchFunction && name != FTSScoreFunction) || len(ch) != 2 {
			return false
		}
		alias := maps.Clone(v)
		alias["function_name"], alias["children"], alias["alias"] = "alias", []any{ch[0]}, ""
		v["function_name"], v["children"] = ftsAt, []any{alias, ch[1], rowIDRef(qual)}
		if name == FTSMatchFunction {
			v["function_name"] = ftsMatchAt
		}
		return true
	})
}

// ftsAnswer returns the scores of the rows a query matches in a column.
func (e *Engine) ftsAnswer(column, q string) (map[uint64]float64, error) {
	if e.d == nil {
		return nil, fmt.Errorf("%s: the engine has no dataset", FTSMatchFunction)
	}
	st := &e.fts
	st.mu.Lock()
	defer st.mu.Unlock()
	if a, ok := st.answers[[2]string{column, q}]; ok {
		return a, nil
	}
	if st.searcher == nil {
		st.searcher, st.answers = fts.NewSearcher(e.d), map[[2]string]map[uint64]float64{}
	}
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	opts := fts.Options{Parallelism: e.opts.Threads, Cache: e.opts.Cache}
	ix, _, err := st.searcher.Index(ctx, column, opts)
	if err != nil {
		return nil, fmt.Errorf("%s(%s, %s): %w", FTSMatchFunction, column, quoteString(q), err)
	}
	hits, err := ix.Match(ctx, q, opts)
	if err != nil {
		return nil, fmt.Errorf("%s(%s, %s): %w", FTSMatchFunction, column, quoteString(q), err)
	}
	a := make(map[uint64]float64, len(hits))
	for _, h := range hits {
		a[h.RowID] = h.Score
	}
	st.answers[[2]string{column, q}] = a
	return a, nil
}
