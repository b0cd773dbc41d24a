package query

import (
	"reflect"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch/schema"
)

// rawWrites turns on writing fixed-size scalars straight into DuckDB's
// vector memory (vectorData). Tests turn it off to check the fallback,
// duckdb-go's typed setters, gives the same answers.
var rawWrites = true

// probe, when set by a test, is told whether each column fill found the
// vector's memory.
var probe func(found bool)

// vectorData returns the data pointer of a chunk's column ci, where a
// scalar column's values lie one after the other, or nil when it cannot
// be had. duckdb-go does not export it: this reads its unexported field
// by reflection (a DuckDB vector's data pointer is valid while the chunk
// is), and any change to that layout makes it nil and the caller falls
// back to SetChunkValue, about 3 times slower.
func vectorData(chunk duckdb.DataChunk, ci int) unsafe.Pointer {
	if !rawWrites {
		return nil
	}
	vec, err := chunk.GetVector(ci)
	if err != nil {
		return nil
	}
	v := reflect.ValueOf(vec)
	if v.Kind() != reflect.Struct {
		return nil
	}
	inner := v.FieldByName("v")
	if !inner.IsValid() || inner.Kind() != reflect.Pointer || inner.IsNil() {
		return nil
	}
	data := inner.Elem().FieldByName("dataPtr")
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
