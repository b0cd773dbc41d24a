package query

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// typeEngine is an engine over an empty dataset, to ask DuckDB what a
// type name means.
func typeEngine(t *testing.T) *Engine {
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "types"), schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64, Shape: schema.Shape{}}}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	return e
}

// duckTypeString writes a DuckDB type with its details, to compare two.
func duckTypeString(t duckdb.TypeInfo) string {
	s := fmt.Sprintf("%d", t.InternalType())
	if t.Alias() != "" {
		s += "/" + strings.ToUpper(t.Alias())
	}
	switch d := t.Details().(type) {
	case *duckdb.ArrayDetails:
		s += fmt.Sprintf("[%d]%s", d.Size, duckTypeString(d.Child))
	case *duckdb.ListDetails:
		s += "[]" + duckTypeString(d.Child)
	case *duckdb.StructDetails:
		var f []string
		for _, e := range d.Entries {
			f = append(f, e.Name()+" "+duckTypeString(e.Info()))
		}
		s += "(" + strings.Join(f, ", ") + ")"
	case *duckdb.EnumDetails:
		s += fmt.Sprintf("%q", d.Values)
	}
	return s
}

// TestDuckTypeMap: the table between dtypes and DuckDB types, read both
// ways, agrees with DuckDB: each dtype's name, and each alias, is a name
// DuckDB reads as that type, and the type reads back as the dtype
// (float16 and bfloat16, which DuckDB lacks, as float32).
func TestDuckTypeMap(t *testing.T) {
	e := typeEngine(t)
	for _, d := range schema.DTypes() {
		typ, name := DuckType(d)
		ti, err := e.typeOf(ctx, "SELECT NULL::"+name)
		require.NoError(t, err, "%s: %s", d, name)
		require.Equal(t, typ, ti.InternalType(), "%s: %s", d, name)
		want := d
		if d == schema.Float16 || d == schema.BFloat16 {
			want = schema.Float32
		}
		got, ok := DTypeOf(ti)
		require.True(t, ok, "%s: %s", d, name)
		require.Equal(t, want, got, "%s: DTypeOf(%s)", d, name)
		got, ok = DTypeNamed(strings.ToLower(name))
		require.True(t, ok, "%s: %s", d, name)
		require.Equal(t, want, got, "%s: DTypeNamed(%s)", d, name)
	}
	for _, r := range duckScalars {
		for _, a := range r.aliases {
			ti, err := e.typeOf(ctx, "SELECT NULL::"+a)
			require.NoError(t, err, a)
			require.Equal(t, r.duck, ti.InternalType(), "alias %s of %s", a, r.name)
			got, ok := DTypeNamed(strings.ToUpper(a))
			require.True(t, ok, a)
			require.Equal(t, r.dtype, got, "alias %s", a)
		}
	}
	for _, q := range []string{"SELECT 1.5::DECIMAL(4, 1)", "SELECT DATE '2024-05-01'", "SELECT [1]", "SELECT 1::HUGEINT"} {
		ti, err := e.typeOf(ctx, q)
		require.NoError(t, err, q)
		_, ok := DTypeOf(ti)
		require.False(t, ok, q)
	}
	for _, n := range []string{"hugeint", "decimal", "date", "float16", "bfloat16", "uint8"} {
		_, ok := DTypeNamed(n)
		require.False(t, ok, n)
	}
}

// TestColumnTypesOverKinds: every column that schema accepts, of every
// kind and dtype, maps to the DuckDB type that DuckDB reads from the
// name sqlType gives it, with DuckType's type for its elements.
func TestColumnTypesOverKinds(t *testing.T) {
	e := typeEngine(t)
	shapes := []schema.Shape{nil, {}, {4}, {-1}, {2, 4}, {-1, 4}, {-1, -1}, {-1, -1, 3}, {2, -1, -1, 3}, {5000}}
	kinds := map[schema.Kind]int{}
	var cols []schema.Column
	for _, k := range schema.Kinds() {
		for _, d := range schema.DTypes() {
			for _, sh := range shapes {
				c := schema.Column{Name: "c", Kind: k, DType: d, Shape: sh}
				if c.Normalize() == nil {
					cols = append(cols, c)
				}
			}
		}
	}
	cols = append(cols, schema.Column{Name: "c", Kind: schema.ClassLabel, DType: schema.Int16, Shape: schema.Shape{}, ClassNames: []string{"cat", "dog"}})
	for _, c := range cols {
		what := fmt.Sprintf("%s %s %v", c.Kind, c.DType, c.Shape)
		m := mapColumn(schema.Entry{Column: c})
		ti, err := m.typeInfo(e.jsonType)
		require.NoError(t, err, what)
		kinds[c.Kind]++
		if m.kind == mapEnum {
			require.Equal(t, "ENUM", m.sqlType(), what)
			require.Equal(t, duckdb.TYPE_ENUM, ti.InternalType(), what)
			continue
		}
		named, err := e.typeOf(ctx, "SELECT NULL::"+m.sqlType())
		require.NoError(t, err, "%s: %s", what, m.sqlType())
		require.Equal(t, duckTypeString(named), duckTypeString(ti), "%s: %s", what, m.sqlType())
		switch m.kind {
		case mapScalar, mapArray, mapList, mapText, mapJSON, mapBlob:
			el := ti
			for el.InternalType() == duckdb.TYPE_ARRAY || el.InternalType() == duckdb.TYPE_LIST {
				switch d := el.Details().(type) {
				case *duckdb.ArrayDetails:
					el = d.Child
				case *duckdb.ListDetails:
					el = d.Child
				}
			}
			typ, _ := DuckType(c.DType)
			require.Equal(t, typ, el.InternalType(), what)
		}
	}
	for _, k := range schema.Kinds() {
		require.NotZero(t, kinds[k], "kind %s has no column", k)
	}
}
