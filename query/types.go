package query

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// MaxInline is the most elements a numeric tensor column may have (by its
// declared or largest shape) to be a DuckDB ARRAY or LIST of its values;
// larger ones, and image, video and audio columns, are a STRUCT describing
// each sample (shape, dtype, stored bytes) taken from chunk headers.
const MaxInline = 4096

// How a loch column maps to a DuckDB column (docs/query.md).
type mapKind int

const (
	mapScalar mapKind = iota // one number or bool
	mapArray                 // fixed [d]: T[d]
	mapList                  // other small tensors: nested LISTs, one per dimension
	mapText                  // VARCHAR
	mapJSON                  // JSON
	mapBlob                  // BLOB
	mapEnum                  // class label with names: ENUM
	mapInfo                  // STRUCT(shape INTEGER[], dtype VARCHAR, bytes BIGINT)
)

// column is one table column: a dataset column and how it maps.
type column struct {
	name  string
	uid   int
	col   schema.Column
	kind  mapKind
	ndim  int // mapList: dimensions
	dim   int // mapArray: elements
	names []string
	data  bool // mapInfo, mapMedia: the STRUCT has a data BLOB (Options.SampleData)
}

// mapColumn decides how c maps, from its definition and, where that
// declares any shape, its statistics in the snapshot.
func mapColumn(c schema.Entry) column {
	out := column{name: c.Name, uid: c.UID, col: c.Column}
	shape := c.Shape
	if shape == nil && c.MaxShape != nil {
		shape = c.MaxShape // any shape declared: the snapshot's statistics
		if c.MinShape == nil || !slices.Equal(c.MinShape, c.MaxShape) {
			shape = make(schema.Shape, len(c.MaxShape))
			for i := range shape {
				shape[i] = -1
			}
		}
	}
	switch {
	case c.DType == schema.Text:
		out.kind = mapText
		return out
	case c.DType == schema.JSON:
		out.kind = mapJSON
		return out
	case c.DType == schema.Bytes:
		out.kind = mapBlob
		return out
	case c.SampleCompression.Media(): // issue 16: media.go
		out.kind = mapMedia
		return out
	case c.Kind == schema.Image || c.Kind == schema.Video || c.Kind == schema.Audio || c.SampleCompression != schema.SampleNone:
		out.kind = mapInfo
		return out
	}
	if shape != nil && len(shape) == 0 {
		out.kind = mapScalar
		if c.Kind == schema.ClassLabel && len(c.ClassNames) > 0 && distinct(c.ClassNames) {
			out.kind, out.names = mapEnum, c.ClassNames
		}
		return out
	}
	elems := -1
	switch {
	case shape != nil && shape.Fixed():
		elems = schema.NumElements(shape)
	case c.MaxShape != nil && len(c.MaxShape) == len(shape):
		elems = schema.NumElements(c.MaxShape)
	case c.Samples == 0 && shape != nil:
		elems = 0 // no samples yet: a list of what is declared
	}
	switch {
	case shape == nil || elems < 0 || elems > MaxInline:
		out.kind = mapInfo
	case len(shape) == 1 && shape.Fixed():
		out.kind, out.dim = mapArray, shape[0]
	default:
		out.kind, out.ndim = mapList, len(shape)
	}
	return out
}

func distinct(names []string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || n == "" {
			return false
		}
		seen[n] = true
	}
	return true
}

// typeInfo is the DuckDB type of a mapped column; jsonType is DuckDB's
// JSON type (a VARCHAR with the JSON alias, which only DuckDB can make).
func (c column) typeInfo(jsonType duckdb.TypeInfo) (duckdb.TypeInfo, error) {
	switch c.kind {
	case mapJSON:
		return jsonType, nil
	case mapEnum:
		return duckdb.NewEnumInfo(c.names[0], c.names[1:]...)
	case mapInfo, mapMedia:
		return c.structType()
	}
	el, _ := DuckType(c.col.DType)
	t, err := duckdb.NewTypeInfo(el)
	if err != nil {
		return nil, err
	}
	switch c.kind {
	case mapArray:
		return duckdb.NewArrayInfo(t, uint64(c.dim))
	case mapList:
		for range c.ndim {
			if t, err = duckdb.NewListInfo(t); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// structField is a field of a DuckDB STRUCT.
type structField struct {
	name string
	t    duckdb.TypeInfo
}

// infoFields are infoType's fields, which mediaType extends.
func infoFields() ([]structField, error) {
	i32, _ := duckdb.NewTypeInfo(duckdb.TYPE_INTEGER)
	shape, err := duckdb.NewListInfo(i32)
	if err != nil {
		return nil, err
	}
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	return []structField{{"shape", shape}, {"dtype", str}, {"bytes", i64}}, nil
}

// structOf is the DuckDB STRUCT of fields (at least one), in order.
func structOf(fields []structField) (duckdb.TypeInfo, error) {
	entries := make([]duckdb.StructEntry, len(fields))
	for i, f := range fields {
		e, err := duckdb.NewStructEntry(f.t, f.name)
		if err != nil {
			return nil, err
		}
		entries[i] = e
	}
	return duckdb.NewStructInfo(entries[0], entries[1:]...)
}

// sqlType names the DuckDB type for documentation and `loch query`'s
// schema listing.
func (c column) sqlType() string {
	_, el := DuckType(c.col.DType)
	switch c.kind {
	case mapEnum:
		return "ENUM"
	case mapInfo, mapMedia:
		return c.structSQLType()
	case mapArray:
		return fmt.Sprintf("%s[%d]", el, c.dim)
	case mapList:
		for range c.ndim {
			el += "[]"
		}
	}
	return el
}

// value converts a sample to the Go value SetChunkValue writes into the
// column's DuckDB type. Data is read, not kept, except by the value
// returned for mapBlob (a copy).
func (c column) value(s loch.Sample) (any, error) {
	if s.Null {
		return nil, nil
	}
	switch c.kind {
	case mapText:
		return string(s.Data), nil
	case mapJSON:
		if len(s.Data) == 0 {
			return nil, nil
		}
		return json.RawMessage(slices.Clone(s.Data)), nil
	case mapBlob:
		return slices.Clone(s.Data), nil
	}
	d := c.col.DType
	size := d.Size()
	n := schema.NumElements(s.Shape)
	if len(s.Data) != n*size {
		return nil, fmt.Errorf("column %q: sample of shape %v has %d bytes, want %d", c.name, s.Shape, len(s.Data), n*size)
	}
	switch c.kind {
	case mapScalar:
		if n != 1 || len(s.Shape) != 0 {
			return nil, fmt.Errorf("column %q: sample of shape %v where a scalar was expected", c.name, s.Shape)
		}
		return d.Value(s.Data, 0), nil
	case mapEnum:
		v := d.Value(s.Data, 0)
		i, ok := asIndex(v)
		if !ok || i >= len(c.names) {
			return nil, nil // a label outside the class names: NULL
		}
		return c.names[i], nil
	case mapArray:
		if len(s.Shape) != 1 || s.Shape[0] != c.dim {
			return nil, fmt.Errorf("column %q: sample of shape %v, want [%d]", c.name, s.Shape, c.dim)
		}
		return elements(d, s.Data, n), nil
	case mapList:
		if len(s.Shape) != c.ndim {
			return nil, fmt.Errorf("column %q: sample of shape %v, want %d dimensions", c.name, s.Shape, c.ndim)
		}
		return nest(d, s.Data, s.Shape), nil
	}
	return nil, fmt.Errorf("column %q: no value for map kind %d", c.name, c.kind)
}

// infoValue is a mapInfo column's value.
func (c column) infoValue(shape []int, stored int64) any {
	sh := make([]int32, len(shape))
	for i, v := range shape {
		sh[i] = int32(v)
	}
	return map[string]any{"shape": sh, "dtype": c.col.DType.String(), "bytes": stored}
}

func asIndex(v any) (int, bool) {
	switch x := v.(type) {
	case int8:
		return int(x), x >= 0
	case int16:
		return int(x), x >= 0
	case int32:
		return int(x), x >= 0
	case int64:
		return int(x), x >= 0 && x <= math.MaxInt32
	case uint8:
		return int(x), true
	case uint16:
		return int(x), true
	case uint32:
		return int(x), true
	case uint64:
		return int(x), x <= math.MaxInt32
	}
	return 0, false
}

// elements decodes n elements into a []any, what DuckDB's ARRAY and LIST
// setters take.
func elements(d schema.DType, b []byte, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = d.Value(b, i)
	}
	return out
}

// nest decodes a C-contiguous tensor of shape into nested []any.
func nest(d schema.DType, b []byte, shape []int) []any {
	if len(shape) == 1 {
		return elements(d, b, shape[0])
	}
	inner := schema.NumElements(shape[1:]) * d.Size()
	out := make([]any, shape[0])
	for i := range out {
		out[i] = nest(d, b[i*inner:(i+1)*inner], shape[1:])
	}
	return out
}

// direct reports whether the column's values are written from their bytes
// alone (setDirect): scalars of a fixed-size dtype, text and json.
func (c column) direct() bool {
	return c.kind == mapScalar || c.kind == mapText || c.kind == mapJSON
}

// setDirect writes one value of a direct column from its stored bytes,
// without boxing scalars.
func (c column) setDirect(chunk duckdb.DataChunk, ci, row int, b []byte, null bool) error {
	if null || (c.kind == mapJSON && len(b) == 0) {
		return chunk.SetValue(ci, row, nil)
	}
	switch c.kind {
	case mapText:
		return duckdb.SetChunkValue(chunk, ci, row, string(b))
	case mapJSON:
		return duckdb.SetChunkValue(chunk, ci, row, json.RawMessage(b))
	}
	if len(b) != c.col.DType.Size() {
		return fmt.Errorf("column %q: a sample of %d bytes where a scalar %s was expected", c.name, len(b), c.col.DType)
	}
	switch c.col.DType {
	case schema.Bool:
		return duckdb.SetChunkValue(chunk, ci, row, b[0] != 0)
	case schema.Int8:
		return duckdb.SetChunkValue(chunk, ci, row, int8(b[0]))
	case schema.Uint8:
		return duckdb.SetChunkValue(chunk, ci, row, b[0])
	case schema.Int16:
		return duckdb.SetChunkValue(chunk, ci, row, int16(binary.LittleEndian.Uint16(b)))
	case schema.Uint16:
		return duckdb.SetChunkValue(chunk, ci, row, binary.LittleEndian.Uint16(b))
	case schema.Int32:
		return duckdb.SetChunkValue(chunk, ci, row, int32(binary.LittleEndian.Uint32(b)))
	case schema.Uint32:
		return duckdb.SetChunkValue(chunk, ci, row, binary.LittleEndian.Uint32(b))
	case schema.Int64:
		return duckdb.SetChunkValue(chunk, ci, row, int64(binary.LittleEndian.Uint64(b)))
	case schema.Uint64:
		return duckdb.SetChunkValue(chunk, ci, row, binary.LittleEndian.Uint64(b))
	case schema.Float32:
		return duckdb.SetChunkValue(chunk, ci, row, math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case schema.Float64:
		return duckdb.SetChunkValue(chunk, ci, row, math.Float64frombits(binary.LittleEndian.Uint64(b)))
	}
	return duckdb.SetChunkValue(chunk, ci, row, c.col.DType.Value(b, 0))
}
