package query

import (
	"context"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch/schema"
)

// ResultColumn is one result column of a query and the loch column that
// holds its values.
type ResultColumn struct {
	// Column is the loch column, its Name the result column's; its DType
	// is schema.Invalid when no loch column holds DuckDB's type.
	schema.Column
	// DuckType is DuckDB's name of the type (DATE, VARCHAR[]), for a
	// message.
	DuckType string
}

// ResultColumns returns the result columns of the read q (as Rows takes
// it), hidden ones included, from DuckDB's types of them (prepared, not
// run), mapped as CREATE TABLE maps a type (docs/sql.md §2): a scalar as
// DTypeOf maps it, a DECIMAL as float64, arrays T[n] and lists T[] of
// numbers as fixed and variable dimensions, outermost first.
func (e *Engine) ResultColumns(ctx context.Context, q string) ([]ResultColumn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ctx = ctx
	rw, err := e.rewrite(ctx, q, false)
	if err != nil {
		return nil, err
	}
	names, types, err := e.resultColumns(ctx, rw.sql)
	if err != nil {
		return nil, e.queryError(q, err)
	}
	out := make([]ResultColumn, len(names))
	for i, t := range types {
		out[i].Column = columnOf(names[i], t)
		if out[i].DType == schema.Invalid {
			out[i].DuckType = e.typeName(ctx, rw.sql, i)
		}
	}
	return out, nil
}

// columnOf is the loch column named name that holds DuckDB values of type
// t, with DType schema.Invalid when there is none.
func columnOf(name string, t duckdb.TypeInfo) schema.Column {
	var dims schema.Shape
	for {
		if d, ok := t.Details().(*duckdb.ArrayDetails); ok {
			dims, t = append(dims, int(d.Size)), d.Child
		} else if d, ok := t.Details().(*duckdb.ListDetails); ok {
			dims, t = append(dims, -1), d.Child
		} else {
			break
		}
	}
	dt, ok := DTypeOf(t)
	if !ok && t.InternalType() == duckdb.TYPE_DECIMAL {
		dt, ok = schema.Float64, true
	}
	c := schema.Column{Name: name}
	if !ok || len(dims) > 0 && dt.Variable() {
		return c
	}
	c.DType = dt
	switch {
	case dt == schema.Text:
		c.Kind = schema.TextKind
	case dt == schema.JSON:
		c.Kind = schema.JSONKind
	case len(dims) > 0:
		c.Shape = dims
	case !dt.Variable():
		c.Shape = schema.Shape{}
	}
	return c
}
