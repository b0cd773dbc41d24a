package query

import (
	"context"
	"strings"
)

// Two sets of the engine's functions and macros are defined at the first
// statement that may use them rather than at New: PostgreSQL's operators
// (registerPG, 5 macros) and search (registerSearch: vector_search,
// fts_match and fts_score, hybrid_search). Each DuckDB statement that
// defines one costs about 0.3 ms, and a statement that names neither
// (most; `loch query DS "SELECT 1"`, a process per statement) is spared
// them: 3.4 ms of that command's 49 ms of CPU. The test is on the
// statement's text, conservatively (a name in a string or a comment
// defines the set too): whatever reaches DuckDB passes rewrite, which
// calls define first.

// definedSets records which sets are defined.
type definedSets struct{ pg, search, jsonText bool }

// pgOperators are the spellings of the operators of registerPG (pg.go);
// "~>" is in "~>>" too.
var pgOperators = []string{L2DistanceOp, CosineDistanceOp, NegInnerProductOp, JSONOp}

// define defines the sets that statement q may use and are not defined
// yet; all of them with q "" (a mirror, whose statements do not pass
// rewrite).
func (e *Engine) define(ctx context.Context, q string) error {
	if !e.defined.pg && (q == "" || containsAny(q, pgOperators)) {
		if err := registerPG(ctx, e.conn); err != nil {
			return err
		}
		e.defined.pg = true
	}
	if !e.defined.jsonText && (q == "" || mentionsJSONText(q)) {
		if err := registerJSONText(e.conn); err != nil {
			return err
		}
		e.defined.jsonText = true
	}
	if !e.defined.search && (q == "" || mentionsSearch(q)) {
		if err := e.registerSearch(ctx, e.conn); err != nil {
			return err
		}
		e.defined.search = true
	}
	return nil
}

// mentionsSearch reports whether q may call a search function:
// vector_search, hybrid_search (and their loch_ forms), fts_match,
// fts_score, loch_fts.
func mentionsSearch(q string) bool {
	l := strings.ToLower(q)
	return strings.Contains(l, "_search") || strings.Contains(l, "fts")
}

func containsAny(q string, subs []string) bool {
	for _, s := range subs {
		if strings.Contains(q, s) {
			return true
		}
	}
	return false
}
