package query

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/lochdata/loch/schema"
)

// Filter pushdown. DuckDB's C API gives a table function no filters, so
// the engine finds them itself: pushdown parses a query with DuckDB's own
// parser (json_serialize_sql) and, for each SELECT whose FROM is one loch
// table (a view that Attach or New made: ds, the URL's name, a catalog
// table), takes the conjuncts of its WHERE that it can judge row by row
// (pushable) and rewrites that table reference, in the query's text, as a
// call of loch_scan_at with them as its filter argument (filter.go). The
// rest of the text is left as written, so result columns keep their names.
//
// The rule (docs/query.md, "Filter pushdown"): a top-level AND conjunct
// is pushed when it is
//
//   - col op constant (or constant op col), col BETWEEN c1 AND c2,
//     col IN (c1, ...), with op one of = <> < <= > >=, over a numeric
//     column and numeric constants;
//   - col = / <> / IN over a text column or a class-label ENUM and string
//     constants (only while DuckDB's default collation is binary);
//   - (col->>'key') = / <> / IN strings over a json column, key a plain
//     name;
//   - col IS [NOT] NULL; a bool column alone, NOT col, col = true/false.
//
// col names a column of that table only (unqualified, or qualified by the
// table's name or alias). In a FROM of INNER or CROSS joins, a conjunct
// over one loch table's columns, qualified, is pushed into that table;
// nothing is pushed through any other join, into a subquery or table
// function, into a table reference that a CTE or temp object of the same
// name shadows, or with a SAMPLE clause. DuckDB keeps the whole WHERE: the
// pushed predicates only spare it rows.

// pushdown returns q with its pushable filters passed to the scans, or q
// as given when it has none (or DuckDB cannot serialize it).
func (e *Engine) pushdown(ctx context.Context, q string) string {
	if e.noPushdown {
		return q
	}
	tree, err := e.parse(ctx, q)
	if err != nil || tree.Error || len(tree.Statements) != 1 {
		return q // rewrite reports it
	}
	stmt, err := decodeStatement(tree.Statements[0])
	if err != nil {
		return q
	}
	// Names that do not reach the engine's views: CTEs, and objects in
	// DuckDB's temp schema (searched first).
	// Only a WHERE or an ORDER BY (a nearest-neighbour search) is pushed:
	// a statement with neither spares the session's query (about 2 ms, the
	// largest part of a small statement's fixed cost).
	if !filtersOrOrders(stmt) {
		return q
	}
	shadowed := map[string]bool{}
	collectCTEs(stmt, shadowed)
	binary, ok := e.session(ctx, shadowed)
	if !ok {
		return q
	}
	var splices []textEdit
	walkSelects(stmt, func(node map[string]any) {
		if edit, ok := e.knnInto(ctx, q, node, shadowed); ok {
			splices = append(splices, edit)
			return
		}
		where, _ := node["where_clause"].(map[string]any)
		if where == nil || node["sample"] != nil {
			return
		}
		leaves, joined := innerLeaves(node["from_table"])
		for _, from := range leaves {
			if edit, ok := e.pushInto(q, from, where, shadowed, pushTable{binary: binary, joined: joined}); ok {
				splices = append(splices, edit)
			}
		}
	})
	return splice(q, splices)
}

// pushInto returns the edit of q that passes the pushable conjuncts of
// where to the scan of table reference from, when from is a plain loch
// view and some are pushable. t has binary and joined set.
func (e *Engine) pushInto(q string, from, where map[string]any, shadowed map[string]bool, t pushTable) (textEdit, bool) {
	name, ok := plainTable(from, shadowed)
	if !ok {
		return textEdit{}, false
	}
	url, ok := e.viewURL(name)
	if !ok {
		return textEdit{}, false
	}
	sc, err := e.scan(url, "", "")
	if err != nil {
		return textEdit{}, false // the query reports it
	}
	for _, c := range sc.Columns() {
		t.cols = append(t.cols, mapColumn(c))
	}
	t.name = name
	t.alias, _ = from["alias"].(string)
	var preds []pred
	size := 0 // predicates and constants, at most maxFilter (decodeFilter)
	for _, c := range conjuncts(where) {
		for _, p := range t.pushable(c) {
			// pushing is optional: a predicate that does not fit is left to DuckDB
			if n := 1 + len(p.Num) + len(p.Str); size+n <= maxFilter {
				preds, size = append(preds, p), size+n
			}
		}
	}
	if len(preds) == 0 {
		return textEdit{}, false
	}
	at, ok := location(from)
	if !ok {
		return textEdit{}, false
	}
	end, ok := identEnd(q, at, name)
	if !ok {
		return textEdit{}, false
	}
	js, err := json.Marshal(preds)
	if err != nil {
		return textEdit{}, false
	}
	text := fmt.Sprintf("%s(%s, '', '', %s)", scanAt, quoteString(url), quoteString(string(js)))
	if t.alias == "" {
		text += " AS " + quoteIdent(name)
	}
	return textEdit{at: at, end: end, text: text}, true
}

// plainTable returns the name of table reference from when it is a plain
// name (no schema, catalog, column aliases, SAMPLE or AT clause) that no
// CTE or temp object shadows.
func plainTable(from map[string]any, shadowed map[string]bool) (string, bool) {
	if from["type"] != "BASE_TABLE" || from["sample"] != nil || from["at_clause"] != nil {
		return "", false
	}
	name, _ := from["table_name"].(string)
	if s, _ := from["schema_name"].(string); s != "" {
		return "", false
	}
	if c, _ := from["catalog_name"].(string); c != "" {
		return "", false
	}
	if aliases, _ := from["column_name_alias"].([]any); len(aliases) > 0 || shadowed[strings.ToLower(name)] {
		return "", false
	}
	return name, true
}

// session reads what pushdown depends on in the connection's state:
// whether DuckDB compares strings bytewise (no default collation is set),
// and the names of the temp schema's tables and views, which it adds to
// shadowed. ok is false when a plain name may not reach the engine's views
// (another database or schema is the default). The state is read at the
// first statement that pushes a filter and kept (two DuckDB queries,
// 0.8 ms, spared the statements after): an engine runs only reads
// (statement.go) and its own views and macros in the main schema, none
// of which changes the collation, the default database or schema, or the
// temp schema.
func (e *Engine) session(ctx context.Context, shadowed map[string]bool) (binary, ok bool) {
	if e.sess == nil {
		s, ok := e.readSession(ctx)
		if !ok {
			return false, false
		}
		e.sess = s
	}
	for _, n := range e.sess.temp {
		shadowed[n] = true
	}
	return e.sess.binary, e.sess.ok
}

// sessionState is what session reads of the connection's state.
type sessionState struct {
	binary, ok bool
	temp       []string // lower-cased names of the temp schema's tables and views
}

// readSession reads the session's state; ok is false when it could not be
// read (then nothing is kept, and nothing pushed).
func (e *Engine) readSession(ctx context.Context) (*sessionState, bool) {
	// Two plain queries: one with the names as scalar subqueries took
	// twice their time (1.5 ms against 0.8), planning the subqueries.
	var coll, db, schema string
	err := e.conn.QueryRowContext(ctx, `SELECT current_setting('default_collation')::VARCHAR, current_database(), current_schema()`).Scan(&coll, &db, &schema)
	if err != nil {
		return nil, false
	}
	s := &sessionState{binary: coll == "", ok: db == "memory" && schema == "main"}
	rows, err := e.conn.QueryContext(ctx, `SELECT lower(table_name) FROM duckdb_tables() WHERE database_name = 'temp'
		UNION ALL SELECT lower(view_name) FROM duckdb_views() WHERE database_name = 'temp'`)
	if err != nil {
		return nil, false
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		if rows.Scan(&n) != nil {
			return nil, false
		}
		s.temp = append(s.temp, n)
	}
	if rows.Err() != nil {
		return nil, false
	}
	return s, true
}

// viewURL is the loch_scan URL of a view the engine made (ds, the URL's
// name, an attached table), by name as DuckDB resolves it (without case).
func (e *Engine) viewURL(name string) (string, bool) {
	n := strings.ToLower(name)
	if url := attachPrefix + n; e.attached[url] != nil {
		return url, true
	}
	if e.d != nil && (n == TableName || n == strings.ToLower(urlTableName(e.d.URL()))) {
		return handleURL, true
	}
	return "", false
}

// innerLeaves returns the table references a WHERE filters row by row
// before anything else: the FROM itself, or the leaves of a tree of INNER
// and CROSS joins (joined set; a leaf may be any reference, which the
// caller skips unless it is a loch view). Any other join (outer, ASOF,
// POSITIONAL, LATERAL, NATURAL, USING-merged columns aside) gives none.
func innerLeaves(x any) (leaves []map[string]any, joined bool) {
	n, _ := x.(map[string]any)
	if n == nil {
		return nil, false
	}
	if n["type"] != "JOIN" {
		return []map[string]any{n}, false
	}
	var walk func(n map[string]any) bool
	walk = func(n map[string]any) bool {
		if n["type"] != "JOIN" {
			leaves = append(leaves, n)
			return true
		}
		if n["join_type"] != "INNER" || (n["ref_type"] != "REGULAR" && n["ref_type"] != "CROSS") {
			return false
		}
		l, _ := n["left"].(map[string]any)
		r, _ := n["right"].(map[string]any)
		return l != nil && r != nil && walk(l) && walk(r)
	}
	if !walk(n) {
		return nil, true
	}
	return leaves, true
}

// filtersOrOrders reports whether a SELECT node of the statement's tree
// has a WHERE clause or an ORDER BY (knnOf): what pushdown can pass to a
// scan.
func filtersOrOrders(stmt map[string]any) bool {
	found := false
	walkSelects(stmt, func(node map[string]any) {
		found = found || node["where_clause"] != nil
		for _, x := range anySlice(node["modifiers"]) {
			m, _ := x.(map[string]any)
			found = found || m["type"] == "ORDER_MODIFIER"
		}
	})
	return found
}

// walkSelects calls fn with every SELECT node of a statement's tree.
func walkSelects(x any, fn func(map[string]any)) {
	switch v := x.(type) {
	case map[string]any:
		if v["type"] == "SELECT_NODE" {
			fn(v)
		}
		for _, c := range v {
			walkSelects(c, fn)
		}
	case []any:
		for _, c := range v {
			walkSelects(c, fn)
		}
	}
}

// collectCTEs adds the (lower-case) names of every CTE in the tree.
func collectCTEs(x any, out map[string]bool) {
	switch v := x.(type) {
	case map[string]any:
		if m, _ := v["cte_map"].(map[string]any); m != nil {
			entries, _ := m["map"].([]any)
			for _, en := range entries {
				if kv, _ := en.(map[string]any); kv != nil {
					if k, ok := kv["key"].(string); ok {
						out[strings.ToLower(k)] = true
					}
				}
			}
		}
		for _, c := range v {
			collectCTEs(c, out)
		}
	case []any:
		for _, c := range v {
			collectCTEs(c, out)
		}
	}
}

// conjuncts flattens nested ANDs.
func conjuncts(x map[string]any) []map[string]any {
	if x["type"] != "CONJUNCTION_AND" {
		return []map[string]any{x}
	}
	var out []map[string]any
	ch, _ := x["children"].([]any)
	for _, c := range ch {
		if m, _ := c.(map[string]any); m != nil {
			out = append(out, conjuncts(m)...)
		}
	}
	return out
}

// pushTable is the table of one SELECT that filters may be pushed into.
type pushTable struct {
	name, alias string
	cols        []column
	binary      bool // strings compare bytewise
	joined      bool // one of the tables of inner joins: columns must be qualified
}

// column resolves a COLUMN_REF to one of the table's columns.
func (t pushTable) column(x any) (column, bool) {
	n, _ := x.(map[string]any)
	if n == nil || n["class"] != "COLUMN_REF" {
		return column{}, false
	}
	names, _ := n["column_names"].([]any)
	var name string
	switch len(names) {
	case 1:
		if t.joined {
			return column{}, false // which table's? (or a USING column)
		}
		name, _ = names[0].(string)
	case 2:
		q, _ := names[0].(string)
		binding := t.alias
		if binding == "" {
			binding = t.name
		}
		if !strings.EqualFold(q, binding) {
			return column{}, false
		}
		name, _ = names[1].(string)
	default:
		return column{}, false
	}
	var found []column
	for _, c := range t.cols {
		if strings.EqualFold(c.name, name) {
			found = append(found, c)
		}
	}
	if len(found) != 1 || strings.EqualFold(name, RowIDColumn) || strings.EqualFold(name, PosColumn) {
		return column{}, false
	}
	return found[0], true
}

// operand is what a pushed comparison compares: a column, or a json
// column's key.
type operand struct {
	col column
	key string
}

func (t pushTable) operand(x any) (operand, bool) {
	if c, ok := t.column(x); ok {
		return operand{col: c}, true
	}
	n, _ := x.(map[string]any)
	if n == nil || n["class"] != "FUNCTION" {
		return operand{}, false
	}
	switch fn, _ := n["function_name"].(string); strings.ToLower(fn) {
	case "->>", pgJSONTextFunction, JSONTextOp:
	default:
		return operand{}, false
	}
	if s, _ := n["schema"].(string); s != "" {
		return operand{}, false
	}
	if n["filter"] != nil || n["distinct"] == true {
		return operand{}, false
	}
	ch, _ := n["children"].([]any)
	if len(ch) != 2 {
		return operand{}, false
	}
	c, ok := t.column(ch[0])
	if !ok || c.kind != mapJSON {
		return operand{}, false
	}
	key, ok := stringConst(ch[1])
	if !ok || !jsonKeyRE.MatchString(key) {
		return operand{}, false
	}
	return operand{col: c, key: key}, true
}

// constant is a non-null constant of the query: a number or a string.
type constant struct {
	num   float64
	str   string
	isNum bool
	isStr bool
	isBool,
	b bool
}

func constOf(x any) (constant, bool) {
	n, _ := x.(map[string]any)
	if n != nil && n["class"] == "CAST" && n["try_cast"] == false {
		// true and false parse as 't'::BOOLEAN and 'f'::BOOLEAN
		typ, _ := n["cast_type"].(map[string]any)
		if c, ok := constOf(n["child"]); ok && c.isStr && typ["id"] == "BOOLEAN" && (c.str == "t" || c.str == "f") {
			return constant{b: c.str == "t", isBool: true}, true
		}
		return constant{}, false
	}
	if n == nil || n["class"] != "CONSTANT" {
		return constant{}, false
	}
	v, _ := n["value"].(map[string]any)
	if v == nil || v["is_null"] != false {
		return constant{}, false
	}
	typ, _ := v["type"].(map[string]any)
	id, _ := typ["id"].(string)
	switch id {
	case "VARCHAR":
		s, ok := v["value"].(string)
		return constant{str: s, isStr: true}, ok
	case "BOOLEAN":
		b, ok := v["value"].(bool)
		return constant{b: b, isBool: true}, ok
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL":
	default:
		return constant{}, false
	}
	num, ok := v["value"].(json.Number)
	if !ok {
		return constant{}, false // a HUGEINT-backed DECIMAL, ...
	}
	text := string(num)
	if id == "DECIMAL" {
		info, _ := typ["type_info"].(map[string]any)
		scale, ok := info["scale"].(json.Number)
		if !ok {
			return constant{}, false
		}
		text += "e-" + string(scale)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return constant{}, false
	}
	return constant{num: f, isNum: true}, true
}

func stringConst(x any) (string, bool) {
	c, ok := constOf(x)
	return c.str, ok && c.isStr
}

// flipped is op with its operands swapped (c < x is x > c).
var flipped = map[string]string{opEQ: opEQ, opNE: opNE, opLT: opGT, opLE: opGE, opGT: opLT, opGE: opLE}

var comparisons = map[string]string{
	"COMPARE_EQUAL": opEQ, "COMPARE_NOTEQUAL": opNE, "COMPARE_LESSTHAN": opLT,
	"COMPARE_LESSTHANOREQUALTO": opLE, "COMPARE_GREATERTHAN": opGT, "COMPARE_GREATERTHANOREQUALTO": opGE,
}

// pushable returns the predicates one WHERE conjunct pushes (none when it
// is not of the rule's forms).
func (t pushTable) pushable(x map[string]any) []pred {
	switch x["class"] {
	case "COMPARISON":
		op, ok := comparisons[fmt.Sprint(x["type"])]
		if !ok {
			return nil
		}
		o, okL := t.operand(x["left"])
		c, okC := constOf(x["right"])
		if !okL || !okC {
			if o, okL = t.operand(x["right"]); !okL {
				return nil
			}
			if c, okC = constOf(x["left"]); !okC {
				return nil
			}
			op = flipped[op]
		}
		return t.compare(o, op, []constant{c})
	case "BETWEEN":
		o, ok := t.operand(x["input"])
		lo, okLo := constOf(x["lower"])
		hi, okHi := constOf(x["upper"])
		if !ok || !okLo || !okHi {
			return nil
		}
		return append(t.compare(o, opGE, []constant{lo}), t.compare(o, opLE, []constant{hi})...)
	case "OPERATOR":
		ch, _ := x["children"].([]any)
		switch x["type"] {
		case "COMPARE_IN":
			if len(ch) < 2 {
				return nil
			}
			o, ok := t.operand(ch[0])
			if !ok {
				return nil
			}
			var cs []constant
			for _, c := range ch[1:] {
				k, ok := constOf(c)
				if !ok {
					return nil
				}
				cs = append(cs, k)
			}
			return t.compare(o, opIn, cs)
		case "OPERATOR_IS_NULL", "OPERATOR_IS_NOT_NULL":
			if len(ch) != 1 {
				return nil
			}
			c, ok := t.column(ch[0])
			if !ok || (c.kind != mapScalar && c.kind != mapText && c.kind != mapJSON && c.kind != mapEnum) {
				return nil
			}
			op := opNull
			if x["type"] == "OPERATOR_IS_NOT_NULL" {
				op = opNotNull
			}
			return []pred{{Col: c.name, Op: op}}
		case "OPERATOR_NOT":
			if len(ch) != 1 {
				return nil
			}
			if c, ok := t.column(ch[0]); ok && isBool(c) {
				return []pred{{Col: c.name, Op: opFalse}}
			}
		}
	case "COLUMN_REF":
		if c, ok := t.column(x); ok && isBool(c) {
			return []pred{{Col: c.name, Op: opTrue}}
		}
	}
	return nil
}

func isBool(c column) bool { return c.kind == mapScalar && c.col.DType == schema.Bool }

// compare is the predicate of o op constants, if the rule pushes it.
func (t pushTable) compare(o operand, op string, cs []constant) []pred {
	p := pred{Col: o.col.name, Key: o.key, Op: op}
	switch {
	case o.key != "" || o.col.kind == mapText || o.col.kind == mapEnum:
		if !t.binary || (op != opEQ && op != opNE && op != opIn) {
			return nil
		}
		for _, c := range cs {
			if !c.isStr {
				return nil
			}
			p.Str = append(p.Str, c.str)
		}
	case isBool(o.col):
		if op != opEQ || len(cs) != 1 || !cs[0].isBool {
			return nil
		}
		p.Op = opFalse
		if cs[0].b {
			p.Op = opTrue
		}
	case o.col.kind == mapScalar:
		for _, c := range cs {
			if !c.isNum {
				return nil
			}
			p.Num = append(p.Num, c.num)
		}
	default:
		return nil
	}
	if _, err := compilePred(p, o.col); err != nil {
		return nil
	}
	return []pred{p}
}
