package query

import (
	"reflect"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/lochdata/loch/schema"
)

// rawWrites turns on writing fixed-size scalars straight into DuckDB's
// vector memory (vectorData). Tests turn it off to check the fallback,
// duckdb-go's typed setters, gives the same answers.
var rawWrites = true

// probe, when set by a test, is told whether each column fill found the
// vector's memory.
var probe func(found bool)

// vectorHandle returns DuckDB's handle of a chunk's column ci (duckdb-go's
// unexported field, read as vectorData reads its data pointer), or a zero
// handle when it cannot be had: text and json are assigned through it,
// one C call per value, without duckdb-go's setters (which marshal a JSON
// value again with encoding/json).
func vectorHandle(chunk duckdb.DataChunk, ci int) mapping.Vector {
	inner := vectorStruct(chunk, ci)
	if !inner.IsValid() {
		return mapping.Vector{}
	}
	vec := inner.FieldByName("vec")
	if !vec.IsValid() || vec.Kind() != reflect.Struct {
		return mapping.Vector{}
	}
	ptr := vec.FieldByName("Ptr")
	if !ptr.IsValid() || ptr.Kind() != reflect.UnsafePointer {
		return mapping.Vector{}
	}
	return mapping.Vector{Ptr: ptr.UnsafePointer()}
}

// vectorStruct is duckdb-go's unexported vector struct of column ci.
func vectorStruct(chunk duckdb.DataChunk, ci int) reflect.Value {
	if !rawWrites {
		return reflect.Value{}
	}
	vec, err := chunk.GetVector(ci)
	if err != nil {
		return reflect.Value{}
	}
	v := reflect.ValueOf(vec)
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	inner := v.FieldByName("v")
	if !inner.IsValid() || inner.Kind() != reflect.Pointer || inner.IsNil() {
		return reflect.Value{}
	}
	return inner.Elem()
}

// vectorData returns the data pointer of a chunk's column ci, where a
// scalar column's values lie one after the other, or nil when it cannot
// be had. duckdb-go does not export it: this reads its unexported field
// by reflection (a DuckDB vector's data pointer is valid while the chunk
// is), and any change to that layout makes it nil and the caller falls
// back to SetChunkValue, about 3 times slower.
func vectorData(chunk duckdb.DataChunk, ci int) unsafe.Pointer {
	inner := vectorStruct(chunk, ci)
	if !inner.IsValid() {
		return nil
	}
	data := inner.FieldByName("dataPtr")
	if !data.IsValid() || data.Kind() != reflect.UnsafePointer {
		return nil
	}
	return data.UnsafePointer()
}

// rawScalar reports whether column c's values can be copied as stored into
// its DuckDB vector: scalars whose dtype has the DuckDB type's width.
func (c column) rawScalar() bool {
	if c.kind != mapScalar {
		return false
	}
	switch c.col.DType {
	case schema.Float16, schema.BFloat16:
		return false
	}
	return c.col.DType.Size() > 0
}
