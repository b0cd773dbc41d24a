package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/lochdata/loch"
)

// randomMacro replaces random(): a hash of the row id and the seed.
const randomMacro = "loch_random"

// rewritten is a query as the engine runs it.
type rewritten struct {
	sql string
	// selectStmt: sql is one SELECT statement (json_serialize_sql took
	// it), which can be the subquery of another (writeJSON)
	selectStmt bool
	random     bool // the query called random()
	star       bool // its SELECT list has *
	// the SELECT list as given, the qualifier of the row id it names and
	// the FROM clause: which result columns are the dataset's (joined.go)
	list []any
	qual []any
	from any
}

// rewrite pushes q's filters into its scans (pushdown), parses it with
// DuckDB (json_serialize_sql) and rewrites its syntax tree: a SELECT with
// no FROM reads the dataset; random() becomes
// loch_random(_rowid); and, for a selection, _rowid is added to the
// SELECT list and _pos becomes the last ORDER BY key, so that rows that
// tie come in the dataset's order. A statement other than one SELECT
// (a UNION, a PRAGMA, ...) is run as given, unless a selection is asked.
func (e *Engine) rewrite(ctx context.Context, q string, selection bool) (rewritten, error) {
	if err := e.define(ctx, q); err != nil {
		return rewritten{}, err
	}
	run := e.pushdown(ctx, q)
	tree, err := e.parse(ctx, run)
	if err != nil {
		return rewritten{}, err
	}
	if tree.Error {
		return e.unserialized(ctx, q, run, tree, selection)
	}
	if len(tree.Statements) != 1 {
		return rewritten{}, fmt.Errorf("query %s: %d statements, want one: %w", oneLineSQL(q), len(tree.Statements), loch.ErrInvalidArgument)
	}
	stmt, err := decodeStatement(tree.Statements[0])
	if err != nil {
		return rewritten{}, err
	}
	node, _ := stmt["node"].(map[string]any)
	if node == nil || node["type"] != "SELECT_NODE" {
		if selection {
			return rewritten{}, fmt.Errorf("query %s: a selection needs a plain SELECT (not a UNION or other set operation): %w", oneLineSQL(q), loch.ErrInvalidArgument)
		}
		return rewritten{sql: run, selectStmt: true}, nil
	}
	changed := selection
	if from, _ := node["from_table"].(map[string]any); from != nil && from["type"] == "EMPTY" && e.d != nil {
		changed = true
		node["from_table"] = map[string]any{"type": "BASE_TABLE", "alias": "", "sample": nil, "query_location": from["query_location"],
			"schema_name": "", "table_name": TableName, "column_name_alias": []any{}, "catalog_name": "", "at_clause": nil}
	}
	out, hasRowID := readSelectList(node)
	out.selectStmt = true
	// random() hashes the row id the SELECT names (f._rowid in a join),
	// else the one row id of a single table.
	out.random = replaceRandom(node, out.qual)
	changed = replaceFTS(node, out.qual) || changed || out.random
	if mentionsJSONText(q) {
		shadowed := map[string]bool{}
		collectCTEs(stmt, shadowed)
		if binary, ok := e.session(ctx, shadowed); ok {
			jt, err := e.replaceJSONText(ctx, stmt, shadowed, binary)
			if err != nil {
				return rewritten{}, err
			}
			changed = jt || changed
		}
	}
	if selection {
		if err := e.asSelection(ctx, q, node, out, hasRowID); err != nil {
			return rewritten{}, err
		}
	}
	if !changed { // as given: DuckDB names result columns after their text
		out.sql = run
		return out, nil
	}
	if out.sql, err = e.deserialize(ctx, q, stmt); err != nil {
		return rewritten{}, err
	}
	return out, nil
}

// unserialized handles a query DuckDB could not serialize: a parser error,
// or a statement other than a SELECT (EXPLAIN, PRAGMA, COPY, ...), run as
// given when it only reads.
func (e *Engine) unserialized(ctx context.Context, q, run string, tree parsed, selection bool) (rewritten, error) {
	if tree.Type == "parser" {
		msg := "Parser Error: " + tree.Message
		if tree.Position != "" {
			msg += " at position " + tree.Position
		}
		return rewritten{}, fmt.Errorf("query %s: %s: %w", oneLineSQL(q), msg, loch.ErrInvalidArgument)
	}
	if selection {
		return rewritten{}, fmt.Errorf("query %s: a selection needs one SELECT statement (%s): %w", oneLineSQL(q), tree.Message, loch.ErrInvalidArgument)
	}
	if err := e.checkRead(ctx, q); err != nil {
		return rewritten{}, err
	}
	return rewritten{sql: run}, nil
}

// readSelectList reads node's SELECT list: whether it has * and the
// qualifier of the row id it names (f in f._rowid), which the tie-break
// on _pos takes too: in a join, an unqualified _pos is ambiguous.
func readSelectList(node map[string]any) (out rewritten, hasRowID bool) {
	list, _ := node["select_list"].([]any)
	for _, x := range list {
		m, _ := x.(map[string]any)
		switch m["class"] {
		case "STAR":
			out.star = true
		case "COLUMN_REF":
			if names, _ := m["column_names"].([]any); len(names) > 0 && names[len(names)-1] == RowIDColumn && m["alias"] == "" {
				hasRowID = true
				out.qual = names[:len(names)-1]
			}
		}
	}
	out.list, out.from = list, node["from_table"]
	return out, hasRowID
}

// asSelection makes node a selection: rows of the dataset (no grouping,
// no DISTINCT), with the row id in its SELECT list and ordered by _pos
// last.
func (e *Engine) asSelection(ctx context.Context, q string, node map[string]any, out rewritten, hasRowID bool) error {
	if why, err := e.grouping(ctx, node); err != nil {
		return err
	} else if why != "" {
		return fmt.Errorf("query %s: a selection is rows of the dataset, and %s makes rows of its own: "+
			"run it for its result instead (loch query without --save or --format selection; ds.sql in Python, cat.sql on a catalog): %w",
			oneLineSQL(q), why, loch.ErrInvalidArgument)
	}
	if !hasRowID && !out.star {
		node["select_list"] = append([]any{colRef(RowIDColumn)}, out.list...)
	}
	mods, _ := node["modifiers"].([]any)
	var order map[string]any
	for _, x := range mods {
		m, _ := x.(map[string]any)
		switch m["type"] {
		case "DISTINCT_MODIFIER":
			return fmt.Errorf("query %s: a selection's rows are dataset rows: DISTINCT does not apply: %w", oneLineSQL(q), loch.ErrInvalidArgument)
		case "ORDER_MODIFIER":
			order = m
		}
	}
	if order == nil {
		order = map[string]any{"type": "ORDER_MODIFIER", "orders": []any{}}
		node["modifiers"] = append([]any{order}, mods...)
	}
	orders, _ := order["orders"].([]any)
	pos := colRef(PosColumn)
	pos["column_names"] = append(append([]any(nil), out.qual...), PosColumn)
	order["orders"] = append(orders, map[string]any{"type": "ASCENDING", "null_order": "ORDER_DEFAULT", "expression": pos})
	return nil
}

// deserialize turns the rewritten statement back into SQL with DuckDB's
// json_deserialize_sql.
func (e *Engine) deserialize(ctx context.Context, q string, stmt map[string]any) (string, error) {
	stmt["node"] = keepFloatConstants(stmt["node"])
	b, err := json.Marshal(map[string]any{"error": false, "statements": []any{stmt}})
	if err != nil {
		return "", fmt.Errorf("query: rewrite: %w", err)
	}
	if sql, ok := e.texts.sql.Get(string(b)); ok {
		return sql, nil
	}
	var sql string
	if err := e.conn.QueryRowContext(ctx, "SELECT json_deserialize_sql(?::JSON)", string(b)).Scan(&sql); err != nil {
		return "", fmt.Errorf("query %s: rewrite: %s: %w", oneLineSQL(q), oneLine(err), loch.ErrInvalidArgument)
	}
	e.texts.sql.Add(string(b), sql, int64(len(b)+len(sql)))
	return sql, nil
}

func colRef(name string) map[string]any {
	return map[string]any{"class": "COLUMN_REF", "type": "COLUMN_REF", "alias": "", "query_location": json.Number("18446744073709551615"),
		"column_names": []any{name}}
}

// rowIDRef is a reference to the row id column, qualified by qual (f in
// f._rowid; none when empty).
func rowIDRef(qual []any) map[string]any {
	id := colRef(RowIDColumn)
	id["column_names"] = append(append([]any(nil), qual...), RowIDColumn)
	return id
}

// replaceCalls calls replace on every FUNCTION node of the serialized
// expression x, each before the nodes below it (as replace leaves them),
// and reports whether any call of replace replaced its node.
func replaceCalls(x any, replace func(fn map[string]any) bool) bool {
	found := false
	switch v := x.(type) {
	case map[string]any:
		if v["class"] == "FUNCTION" {
			found = replace(v)
		}
		for _, c := range v {
			found = replaceCalls(c, replace) || found
		}
	case []any:
		for _, c := range v {
			found = replaceCalls(c, replace) || found
		}
	}
	return found
}

// replaceRandom replaces every random() call below x by
// loch_random(_rowid), the row id qualified by qual (f in f._rowid), and
// reports whether it found one.
func replaceRandom(x any, qual []any) bool {
	return replaceCalls(x, func(v map[string]any) bool {
		if ch, _ := v["children"].([]any); len(ch) > 0 || !strings.EqualFold(fmt.Sprint(v["function_name"]), "random") {
			return false
		}
		v["function_name"], v["children"] = randomMacro, []any{rowIDRef(qual)}
		return true
	})
}

// oneLine makes a DuckDB error one line: its message without the LINE
// and caret lines it adds for syntax errors, and without the list of
// every overload of a function it could not match.
func oneLine(err error) string {
	var parts []string
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "Candidate functions:") {
			break // DuckDB lists every overload: dozens of lines
		}
		if l == "" || strings.HasPrefix(l, "LINE ") || strings.Trim(l, "^ ") == "" {
			continue
		}
		parts = append(parts, l)
	}
	return strings.Join(parts, "; ")
}

// oneLineSQL quotes a query's text on one line, shortened.
func oneLineSQL(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 120 {
		q = q[:117] + "..."
	}
	return fmt.Sprintf("%q", q)
}

// keepFloatConstants wraps every non-null DOUBLE or FLOAT constant of the
// syntax tree x in a cast to its own type, and returns x.
// json_deserialize_sql renders the DOUBLE 2.5e0 as 2.5, which DuckDB reads
// back as a DECIMAL; a FLOAT column is compared with a DOUBLE as a DOUBLE
// but with a DECIMAL as a FLOAT, so `f IN (0.1, 2.5e0)` would change its
// answer once rewritten.
func keepFloatConstants(x any) any {
	switch v := x.(type) {
	case map[string]any:
		if v["class"] == "CONSTANT" {
			val, _ := v["value"].(map[string]any)
			if val == nil || val["is_null"] != false {
				return v
			}
			typ, _ := val["type"].(map[string]any)
			if typ == nil || (typ["id"] != "DOUBLE" && typ["id"] != "FLOAT") {
				return v
			}
			child := make(map[string]any, len(v))
			for k, c := range v {
				child[k] = c
			}
			child["alias"] = ""
			return map[string]any{"class": "CAST", "type": "OPERATOR_CAST", "alias": v["alias"],
				"query_location": v["query_location"], "child": child, "cast_type": typ, "try_cast": false}
		}
		for k, c := range v {
			v[k] = keepFloatConstants(c)
		}
		return v
	case []any:
		for i, c := range v {
			v[i] = keepFloatConstants(c)
		}
		return v
	}
	return x
}

// grouping names what makes a SELECT node's rows groups rather than rows
// of its tables: GROUP BY, HAVING, or an aggregate function in its SELECT
// list or ORDER BY (not in a window or a subquery, which keep rows); ""
// when nothing does.
func (e *Engine) grouping(ctx context.Context, node map[string]any) (string, error) {
	if g, _ := node["group_expressions"].([]any); len(g) > 0 {
		return "GROUP BY", nil
	}
	if h, ok := node["aggregate_handling"].(string); ok && h != "STANDARD_HANDLING" {
		return "GROUP BY ALL", nil
	}
	if node["having"] != nil {
		return "HAVING", nil
	}
	aggs, err := e.aggregateNames(ctx)
	if err != nil {
		return "", err
	}
	var found string
	var walk func(x any)
	walk = func(x any) {
		switch v := x.(type) {
		case map[string]any:
			switch v["class"] {
			case "WINDOW", "SUBQUERY":
				return
			case "FUNCTION":
				if name, _ := v["function_name"].(string); aggs[name] && found == "" {
					found = name + "(...)"
					if name == "count_star" {
						found = "count(*)"
					}
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(node["select_list"])
	for _, m := range anySlice(node["modifiers"]) {
		if mm, _ := m.(map[string]any); mm["type"] == "ORDER_MODIFIER" {
			walk(mm["orders"])
		}
	}
	if found != "" {
		return "the aggregate " + found, nil
	}
	return "", nil
}

// anySlice is x as a list, or nil.
func anySlice(x any) []any {
	s, _ := x.([]any)
	return s
}

// aggregateNames are DuckDB's aggregate functions, read once per engine.
func (e *Engine) aggregateNames(ctx context.Context) (map[string]bool, error) {
	if e.aggregates != nil {
		return e.aggregates, nil
	}
	rows, err := e.conn.QueryContext(ctx, "SELECT DISTINCT function_name FROM duckdb_functions() WHERE function_type = 'aggregate'")
	if err != nil {
		return nil, fmt.Errorf("query: list aggregate functions: %w", err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("query: list aggregate functions: %w", err)
		}
		names[n] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query: list aggregate functions: %w", err)
	}
	e.aggregates = names
	return names, nil
}
