package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/vector"
)

// Nearest-neighbour ORDER BY. A SELECT over one loch table, without
// GROUP BY, aggregates or DISTINCT, ordered (ascending) by one distance
// operator between the table's embedding column and a constant vector,
// with a constant LIMIT k (and OFFSET o):
//
//	SELECT id, caption FROM t WHERE label = 3 ORDER BY e <=> '[0.1, ...]' LIMIT 10
//
// is served by package vector (vector.Search: the column's index for that
// metric when one serves the version, else an exact search; the engine
// keeps the indexes it opened, a vector.Searcher per handle): the k + o
// nearest rows' ids are found first, among the rows that pass the WHERE
// when there is one (SELECT _rowid FROM t WHERE ..., run first, makes the
// search's Allow set, as vector_search's filter does), and the table
// reference is rewritten (pushdown's textEdit) as a scan of those rows
// only (a pred of op opRowIDs). DuckDB then applies the WHERE again,
// computes the ORDER BY's distances exactly for those rows, orders and
// limits them: with an index, the result is the index's candidates
// re-ranked exactly, as pgvector's index scans are approximate. Any other
// form (a join, a vector that is not a constant, DESC) is computed by
// DuckDB over every row, exactly.

// opRowIDs is the op of the pred that restricts a scan to the rows whose
// ids it lists (IDs), in the table's order.
const opRowIDs = "rowids"

// distanceMetrics are the operators of query/pg.go and their metrics.
var distanceMetrics = map[string]vector.Metric{L2DistanceOp: vector.L2, CosineDistanceOp: vector.Cosine, NegInnerProductOp: vector.Dot}

// knnQuery is a nearest-neighbour ORDER BY found in a SELECT node.
type knnQuery struct {
	node   map[string]any // the SELECT node
	from   map[string]any
	where  map[string]any // nil: none
	name   string         // the table's name in the query
	column string
	metric vector.Metric
	vec    []float32
	k      int
}

// knnInto returns the edit that makes the table reference of node a scan
// of the rows its nearest-neighbour ORDER BY needs, when node is one
// (see above) and the search succeeds; else false, and DuckDB computes it.
func (e *Engine) knnInto(ctx context.Context, q string, node map[string]any, shadowed map[string]bool) (textEdit, bool) {
	kq, ok := knnOf(node, shadowed)
	if !ok {
		return textEdit{}, false
	}
	url, ok := e.viewURL(kq.name)
	if !ok {
		return textEdit{}, false
	}
	d := e.attached[url]
	if url == handleURL {
		d = e.d
	}
	var opts vector.Options
	if kq.where != nil {
		allow, ok := e.knnAllowed(ctx, q, kq)
		if !ok {
			return textEdit{}, false
		}
		opts.Allow = vector.NewRowSet(allow)
	}
	if e.searchers == nil {
		e.searchers = map[*loch.Dataset]*vector.Searcher{}
	}
	sr := e.searchers[d]
	if sr == nil {
		sr = vector.NewSearcher(d)
		e.searchers[d] = sr
	}
	res, err := sr.Search(ctx, kq.column, kq.metric, [][]float32{kq.vec}, kq.k, opts)
	if err != nil {
		return textEdit{}, false // not an embedding column, a wrong dimension, ...: DuckDB says so
	}
	ids := make([]uint64, len(res.Hits[0]))
	for i, h := range res.Hits[0] {
		ids[i] = h.RowID
	}
	at, ok := location(kq.from)
	if !ok {
		return textEdit{}, false
	}
	end, ok := identEnd(q, at, kq.name)
	if !ok {
		return textEdit{}, false
	}
	js, err := json.Marshal([]pred{{Col: RowIDColumn, Op: opRowIDs, IDs: ids}})
	if err != nil {
		return textEdit{}, false
	}
	text := fmt.Sprintf("%s(%s, '', '', %s)", scanAt, quoteString(url), quoteString(string(js)))
	if alias, _ := kq.from["alias"].(string); alias == "" {
		text += " AS " + quoteIdent(kq.name)
	}
	return textEdit{at: at, end: end, text: text}, true
}

// knnOf reads node's nearest-neighbour ORDER BY, if it has one.
func knnOf(node map[string]any, shadowed map[string]bool) (knnQuery, bool) {
	var kq knnQuery
	if node["having"] != nil || node["sample"] != nil || len(anySlice(node["group_expressions"])) > 0 {
		return kq, false
	}
	if h, _ := node["aggregate_handling"].(string); h != "STANDARD_HANDLING" {
		return kq, false
	}
	from, _ := node["from_table"].(map[string]any)
	name, ok := plainTable(from, shadowed)
	if !ok {
		return kq, false
	}
	kq.from, kq.name = from, name
	kq.where, _ = node["where_clause"].(map[string]any)
	if callsRandom(kq.where) { // the engine's random() is rewritten after pushdown
		return kq, false
	}
	kq.node = node
	var order map[string]any
	for _, x := range anySlice(node["modifiers"]) {
		m, _ := x.(map[string]any)
		switch m["type"] {
		case "ORDER_MODIFIER":
			order = m
		case "LIMIT_MODIFIER":
			if kq.k, ok = limitOf(m); !ok {
				return kq, false
			}
		default: // DISTINCT, a percentage LIMIT
			return kq, false
		}
	}
	if order == nil || kq.k <= 0 {
		return kq, false
	}
	return kq, kq.orderBy(order)
}

// orderBy reads the one key of an ORDER BY: column op vector, ascending.
func (kq *knnQuery) orderBy(order map[string]any) bool {
	orders := anySlice(order["orders"])
	if len(orders) != 1 {
		return false
	}
	o, _ := orders[0].(map[string]any)
	if t := o["type"]; t != "ORDER_DEFAULT" && t != "ASCENDING" {
		return false
	}
	f, _ := o["expression"].(map[string]any)
	if f == nil || f["class"] != "FUNCTION" {
		return false
	}
	name, _ := f["function_name"].(string)
	m, ok := distanceMetrics[name]
	ch := anySlice(f["children"])
	if !ok || len(ch) != 2 {
		return false
	}
	col, _ := ch[0].(map[string]any)
	names := anySlice(col["column_names"])
	if col["class"] != "COLUMN_REF" || len(names) == 0 || len(names) > 2 {
		return false
	}
	if len(names) == 2 {
		binding, _ := kq.from["alias"].(string)
		if binding == "" {
			binding = kq.name
		}
		if q, _ := names[0].(string); !strings.EqualFold(q, binding) {
			return false
		}
	}
	kq.column, _ = names[len(names)-1].(string)
	kq.metric = m
	kq.vec, ok = constVector(ch[1])
	return ok && len(kq.vec) > 0
}

// knnAllowed returns the ids of the rows of kq's table that pass its
// WHERE: SELECT _rowid FROM t WHERE ..., made from kq's node (DuckDB
// deserializes it) and run with its own filters pushed down.
func (e *Engine) knnAllowed(ctx context.Context, q string, kq knnQuery) ([]uint64, bool) {
	node := make(map[string]any, len(kq.node))
	for k, v := range kq.node {
		node[k] = v
	}
	id := colRef(RowIDColumn)
	if alias, _ := kq.from["alias"].(string); alias != "" {
		id["column_names"] = []any{alias, RowIDColumn}
	} else {
		id["column_names"] = []any{kq.name, RowIDColumn}
	}
	node["select_list"], node["modifiers"] = []any{id}, []any{}
	sql, err := e.deserialize(ctx, q, map[string]any{"node": node, "named_param_map": []any{}})
	if err != nil {
		return nil, false
	}
	rows, err := e.conn.QueryContext(ctx, e.pushdown(ctx, sql))
	if err != nil {
		return nil, false // the query itself reports it
	}
	defer rows.Close()
	ids := []uint64{}
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, rows.Err() == nil
}

// callsRandom reports whether the syntax tree x calls random().
func callsRandom(x any) bool {
	switch v := x.(type) {
	case map[string]any:
		if v["class"] == "FUNCTION" && strings.EqualFold(fmt.Sprint(v["function_name"]), "random") {
			return true
		}
		for _, c := range v {
			if callsRandom(c) {
				return true
			}
		}
	case []any:
		for _, c := range v {
			if callsRandom(c) {
				return true
			}
		}
	}
	return false
}

// limitOf reads a LIMIT modifier's constant limit plus offset.
func limitOf(m map[string]any) (int, bool) {
	limit, ok := constNumber(m["limit"])
	if !ok || limit < 1 || limit >= maxFilter || limit != math.Trunc(limit) {
		return 0, false
	}
	offset := 0.0
	if m["offset"] != nil {
		if offset, ok = constNumber(m["offset"]); !ok || offset < 0 || limit+offset >= maxFilter || offset != math.Trunc(offset) {
			return 0, false
		}
	}
	return int(limit + offset), true
}

// constVector reads a constant vector: a string ('[1, 2]'), a list of
// numbers ([1, 2]), or a cast of one.
func constVector(x any) ([]float32, bool) {
	n, _ := x.(map[string]any)
	switch n["class"] {
	case "CAST":
		return constVector(n["child"])
	case "CONSTANT":
		val, _ := n["value"].(map[string]any)
		typ, _ := val["type"].(map[string]any)
		s, ok := val["value"].(string)
		if !ok || typ["id"] != "VARCHAR" {
			return nil, false
		}
		v, err := parseVector(s)
		return v, err == nil
	case "FUNCTION":
		if f, _ := n["function_name"].(string); f != "list_value" && f != "array_value" {
			return nil, false
		}
		var out []float32
		for _, c := range anySlice(n["children"]) {
			f, ok := constNumber(c)
			if !ok {
				return nil, false
			}
			out = append(out, float32(f))
		}
		return out, true
	}
	return nil, false
}

// constNumber reads a numeric constant (a DECIMAL by its scale), a cast
// of one, or its negation.
func constNumber(x any) (float64, bool) {
	n, _ := x.(map[string]any)
	switch n["class"] {
	case "CAST":
		return constNumber(n["child"])
	case "FUNCTION":
		if ch := anySlice(n["children"]); n["function_name"] == "-" && len(ch) == 1 {
			f, ok := constNumber(ch[0])
			return -f, ok
		}
		return 0, false
	case "CONSTANT":
	default:
		return 0, false
	}
	val, _ := n["value"].(map[string]any)
	num, ok := val["value"].(json.Number)
	if !ok || val["is_null"] != false {
		return 0, false
	}
	f, err := strconv.ParseFloat(num.String(), 64)
	if err != nil {
		return 0, false
	}
	typ, _ := val["type"].(map[string]any)
	if typ["id"] == "DECIMAL" {
		info, _ := typ["type_info"].(map[string]any)
		scale, _ := info["scale"].(json.Number)
		s, err := scale.Int64()
		if err != nil {
			return 0, false
		}
		f /= math.Pow10(int(s))
	}
	return f, true
}

// rowPositions splits the opRowIDs pred off a scan's filter and returns
// the positions of its rows in sc, ascending (nil without one).
func rowPositions(ps []pred, sc *loch.Scan) ([]pred, []int64, error) {
	i := slices.IndexFunc(ps, func(p pred) bool { return p.Op == opRowIDs })
	if i < 0 {
		return ps, nil, nil
	}
	pos, err := sc.Positions(ps[i].IDs)
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(pos)
	if pos == nil {
		pos = []int64{} // no rows: the scan reads none, not all
	}
	return slices.Delete(slices.Clone(ps), i, i+1), slices.Compact(pos), nil
}
