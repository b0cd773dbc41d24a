package query

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// A selection's joined columns (loch.Selection.Joined, docs/sql.md §8):
// the result columns that are not the dataset's own columns taken whole.
// Which ones are is read from the query's syntax tree (rewrite.go):
//
//   - a column reference to a dataset column, not renamed, is the
//     dataset's when it is qualified by the dataset's table (the
//     qualifier of the row id the SELECT names, f in f._rowid, else the
//     dataset's name or alias in FROM), or unqualified when the FROM is
//     one source or names the dataset's table directly (DuckDB resolves
//     a name two tables have only through USING, to the same value);
//   - * is the dataset's columns when the FROM is one source; t.* when t
//     qualifies the dataset; an unqualified * over a join is refused
//     (what it expands to cannot be told apart);
//   - everything else (another table's column, an expression, a renamed
//     column) is joined: its values are read into the selection.
//
// A joined column named like a dataset column, or like another result
// column, is refused: the loader delivers it beside the dataset's columns,
// by name.

// joinedPlan is how Select reads a query's joined columns.
type joinedPlan struct {
	cols  []joinedCol
	exprs []string // the SQL that reads each, over the query's result
}

// joinedCol is one joined column being read.
type joinedCol struct {
	loch.JoinedColumn
	values int // numbers per row (arrays)
	row    int // rows read
}

// resultColumns returns the names and types of q's result columns, as
// DuckDB names them (duplicates kept).
func (e *Engine) resultColumns(ctx context.Context, q string) ([]string, []duckdb.TypeInfo, error) {
	var names []string
	var types []duckdb.TypeInfo
	err := e.conn.Raw(func(dc any) error {
		s, done, err := prepareRaw(ctx, dc, q)
		if err != nil {
			return err
		}
		defer done()
		names, types, err = stmtColumns(s)
		return err
	})
	return names, types, err
}

// baseViews are the names under which the engine's dataset is a view.
func (e *Engine) baseViews() []string {
	out := []string{TableName}
	if n := urlTableName(e.d.URL()); n != "" {
		out = append(out, n)
	}
	for url, d := range e.attached {
		if d == e.d {
			out = append(out, strings.TrimPrefix(url, attachPrefix))
		}
	}
	return out
}

// baseName names the dataset in messages: the catalog table's name, else
// its URL.
func (e *Engine) baseName() string {
	for url, d := range e.attached {
		if d == e.d {
			return strings.TrimPrefix(url, attachPrefix)
		}
	}
	return e.d.URL()
}

// fromTables returns the aliases (or names) of the tables of a FROM
// clause that are views of the dataset, and whether the clause is a join.
func fromTables(from any, views []string) (quals []string, join bool) {
	m, _ := from.(map[string]any)
	switch m["type"] {
	case "JOIN":
		l, _ := fromTables(m["left"], views)
		r, _ := fromTables(m["right"], views)
		return append(l, r...), true
	case "BASE_TABLE":
		name, _ := m["table_name"].(string)
		if !slices.ContainsFunc(views, func(v string) bool { return strings.EqualFold(v, name) }) {
			return nil, false
		}
		if alias, _ := m["alias"].(string); alias != "" {
			return []string{alias}, false
		}
		return []string{name}, false
	}
	return nil, false
}

// baseColumns counts, by lower-cased name, the result columns that are
// the dataset's own columns (see the rules above).
func (e *Engine) baseColumns(q string, rw rewritten) (map[string]int, error) {
	sch := e.d.Schema()
	own := func(col string) (string, bool) {
		for _, n := range append(sch.Names(), RowIDColumn, PosColumn) {
			if strings.EqualFold(n, col) {
				return n, true
			}
		}
		return "", false
	}
	direct, join := fromTables(rw.from, e.baseViews())
	quals := direct
	if len(rw.qual) > 0 {
		quals = []string{fmt.Sprint(rw.qual[len(rw.qual)-1])}
	}
	isBase := func(q string) bool {
		if q == "" {
			return !join || len(direct) > 0
		}
		return slices.ContainsFunc(quals, func(b string) bool { return strings.EqualFold(b, q) })
	}
	out := map[string]int{}
	for _, x := range rw.list {
		m, _ := x.(map[string]any)
		switch m["class"] {
		case "STAR":
			rel, _ := m["relation_name"].(string)
			if rel == "" && join {
				return nil, fmt.Errorf("query %s: a selection of a join names its columns (SELECT f._rowid, f.image, l.label ...) or takes the dataset's as f.*: an unqualified * mixes the tables' columns: %w", oneLineSQL(q), loch.ErrInvalidArgument)
			}
			if rel == "" || isBase(rel) {
				for _, n := range append(sch.Names(), RowIDColumn, PosColumn) {
					out[strings.ToLower(n)]++
				}
			}
		case "COLUMN_REF":
			names, _ := m["column_names"].([]any)
			if len(names) == 0 {
				continue
			}
			col, ok := own(fmt.Sprint(names[len(names)-1]))
			alias, _ := m["alias"].(string)
			qual := ""
			if len(names) > 1 {
				qual = fmt.Sprint(names[len(names)-2])
			}
			if ok && (alias == "" || strings.EqualFold(alias, col)) && isBase(qual) {
				out[strings.ToLower(col)]++
			}
		}
	}
	return out, nil
}

// planJoined finds the joined columns of q's result (rewritten as rw,
// its result columns' names and types as resultColumns gave them) and
// how to read them.
func (e *Engine) planJoined(ctx context.Context, q string, rw rewritten, names []string, types []duckdb.TypeInfo) (*joinedPlan, error) {
	base, err := e.baseColumns(q, rw)
	if err != nil {
		return nil, err
	}
	sch := e.d.Schema()
	count := map[string]int{}
	for _, name := range names {
		count[strings.ToLower(name)]++
	}
	p := &joinedPlan{}
	for i, name := range names {
		key := strings.ToLower(name)
		if name == RowIDColumn || name == PosColumn || base[key] >= count[key] {
			continue
		}
		if base[key] > 0 || slices.ContainsFunc(sch.Names(), func(n string) bool { return strings.EqualFold(n, name) }) {
			return nil, fmt.Errorf("query %s: result column %q is not %s's own column %s (it is another table's, or an expression): a selection delivers it beside %s's columns, under its name: rename it (AS): %w",
				oneLineSQL(q), name, e.baseName(), name, e.baseName(), loch.ErrInvalidArgument)
		}
		if count[key] > 1 {
			return nil, fmt.Errorf("query %s: the result has two columns named %q: a selection delivers its columns by name: rename one (AS): %w", oneLineSQL(q), name, loch.ErrInvalidArgument)
		}
		c, expr, err := joinedType(name, types[i], func() string { return e.typeName(ctx, rw.sql, i) })
		if err != nil {
			return nil, fmt.Errorf("query %s: %w", oneLineSQL(q), err)
		}
		p.cols = append(p.cols, c)
		p.exprs = append(p.exprs, expr)
	}
	return p, nil
}

// joinedType is the joined column of a result column of DuckDB type t,
// and the SQL that reads its values as the Go types add takes.
func joinedType(name string, t duckdb.TypeInfo, typeName func() string) (joinedCol, string, error) {
	c := joinedCol{JoinedColumn: loch.JoinedColumn{Name: name}, values: 1}
	expr := quoteIdent(name)
	it := t.InternalType()
	for it == duckdb.TYPE_ARRAY {
		d, _ := t.Details().(*duckdb.ArrayDetails)
		if d == nil || d.Size == 0 || d.Size > maxJoinedValues || c.values*int(d.Size) > maxJoinedValues {
			return c, "", fmt.Errorf("result column %q: an array of more than %d values per row: %w", name, maxJoinedValues, loch.ErrInvalidArgument)
		}
		c.Shape = append(c.Shape, int(d.Size))
		c.values *= int(d.Size)
		t, it = d.Child, d.Child.InternalType()
	}
	// ARRAY(ARRAY(T, m), n) is n arrays of m: the outer size first.
	dt, ok := DTypeOf(t)
	switch {
	case ok && !dt.Variable():
		c.DType = dt
	case it == duckdb.TYPE_DECIMAL:
		c.DType = schema.Float64
		if c.Shape == nil {
			expr = "CAST(" + expr + " AS DOUBLE)"
		} else {
			expr = "CAST(" + expr + " AS DOUBLE" + strings.Repeat("[]", len(c.Shape)) + ")"
		}
	case c.Shape == nil && it == duckdb.TYPE_VARCHAR:
		c.DType = dt // text or json
		expr = "CAST(" + expr + " AS VARCHAR)"
	case c.Shape == nil && it == duckdb.TYPE_ENUM:
		c.DType = schema.Int64
		if d, _ := t.Details().(*duckdb.EnumDetails); d != nil {
			c.ClassNames = d.Values
		}
		expr = "CAST(enum_code(" + expr + ") AS BIGINT)"
	case it == duckdb.TYPE_STRUCT:
		return c, "", fmt.Errorf("result column %q is a STRUCT (an image, video, audio or large tensor reads in SQL as its shape and dtype, without its pixels): a selection carries the numbers, booleans, text, json, class labels and fixed-size numeric arrays of the columns that are not its dataset's; select such a column from the selection's table: %w", name, loch.ErrInvalidArgument)
	default:
		return c, "", fmt.Errorf("result column %q is %s: a selection carries the numbers, booleans, text, json, class labels (ENUM) and fixed-size numeric arrays (FLOAT[n]) of the columns that are not its dataset's; cast it (::VARCHAR, ::DOUBLE, ::FLOAT[n]): %w", name, typeName(), loch.ErrInvalidArgument)
	}
	if c.DType.Variable() {
		c.Items = [][]byte{}
	}
	return c, expr, nil
}

// maxJoinedValues bounds the numbers per row of a joined array
// (docs/format.md §2.7).
const maxJoinedValues = 1 << 20

// typeName names the type of q's result column i for a message, as
// DuckDB writes it.
func (e *Engine) typeName(ctx context.Context, q string, i int) string {
	rows, err := e.conn.QueryContext(ctx, fmt.Sprintf("SELECT * FROM (%s) LIMIT 0", q))
	if err != nil {
		return "of an unknown type"
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil || i >= len(types) {
		return "of an unknown type"
	}
	name := types[i].DatabaseTypeName()
	if strings.HasSuffix(name, "[]") {
		return name + " (a LIST, of variable length)"
	}
	return name
}

// add appends one row's value v (as the plan's SQL reads it).
func (c *joinedCol) add(v any) error {
	c.row++
	if c.DType.Variable() {
		switch x := v.(type) {
		case nil:
			c.Items = append(c.Items, nil)
		case string:
			c.Items = append(c.Items, []byte(x))
		default:
			return fmt.Errorf("joined column %q, row %d: a %T, want a string", c.Name, c.row, v)
		}
		return nil
	}
	if v == nil {
		if c.Null == nil {
			c.Null = make([]bool, c.row-1, c.row)
		}
		c.Null = append(c.Null, true)
		c.Data = append(c.Data, make([]byte, c.values*c.DType.Size())...)
		return nil
	}
	if c.Null != nil {
		c.Null = append(c.Null, false)
	}
	n := len(c.Data)
	if err := c.appendValue(v, 0); err != nil {
		return err
	}
	if len(c.Data)-n != c.values*c.DType.Size() {
		return fmt.Errorf("joined column %q, row %d: %d bytes, want %d", c.Name, c.row, len(c.Data)-n, c.values*c.DType.Size())
	}
	return nil
}

// appendValue appends a number, or the numbers of nested arrays, as the
// column's dtype: DuckDB gives each the Go type of that dtype.
func (c *joinedCol) appendValue(v any, depth int) error {
	le := binary.LittleEndian
	switch x := v.(type) {
	case []any:
		if depth >= len(c.Shape) || len(x) != c.Shape[depth] {
			return fmt.Errorf("joined column %q, row %d: an array of %d values at depth %d, want shape %v", c.Name, c.row, len(x), depth, c.Shape)
		}
		for _, y := range x {
			if err := c.appendValue(y, depth+1); err != nil {
				return err
			}
		}
		return nil
	case nil:
		return fmt.Errorf("joined column %q, row %d: a NULL inside an array: %w", c.Name, c.row, loch.ErrInvalidArgument)
	case bool:
		b := byte(0)
		if x {
			b = 1
		}
		c.Data = append(c.Data, b)
	case int8:
		c.Data = append(c.Data, byte(x))
	case uint8:
		c.Data = append(c.Data, x)
	case int16:
		c.Data = le.AppendUint16(c.Data, uint16(x))
	case uint16:
		c.Data = le.AppendUint16(c.Data, x)
	case int32:
		c.Data = le.AppendUint32(c.Data, uint32(x))
	case uint32:
		c.Data = le.AppendUint32(c.Data, x)
	case int64:
		c.Data = le.AppendUint64(c.Data, uint64(x))
	case uint64:
		c.Data = le.AppendUint64(c.Data, x)
	case float32:
		c.Data = le.AppendUint32(c.Data, math.Float32bits(x))
	case float64:
		c.Data = le.AppendUint64(c.Data, math.Float64bits(x))
	default:
		return fmt.Errorf("joined column %q, row %d: a %T, want a %s", c.Name, c.row, v, c.DType)
	}
	return nil
}
