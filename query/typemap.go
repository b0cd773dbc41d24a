package query

import (
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch/schema"
)

// duckScalar is one row of the table between loch's dtypes and DuckDB's
// scalar types: the DuckDB type, its name as DuckDB writes it, and the
// other names DuckDB accepts for it.
type duckScalar struct {
	dtype   schema.DType
	duck    duckdb.Type
	name    string
	aliases []string
}

// duckScalars is the one table between dtypes and DuckDB types, read in
// both directions. DuckDB has no 16-bit float: float16 and bfloat16 read
// as FLOAT, and a FLOAT is stored as float32 (the first row of a DuckDB
// type is the dtype it maps to). json is DuckDB's VARCHAR with the JSON
// alias. Note that DuckDB's INT8 is a BIGINT.
var duckScalars = []duckScalar{
	{schema.Bool, duckdb.TYPE_BOOLEAN, "BOOLEAN", []string{"bool", "logical"}},
	{schema.Int8, duckdb.TYPE_TINYINT, "TINYINT", []string{"int1"}},
	{schema.Int16, duckdb.TYPE_SMALLINT, "SMALLINT", []string{"int2", "short"}},
	{schema.Int32, duckdb.TYPE_INTEGER, "INTEGER", []string{"int", "int4", "signed"}},
	{schema.Int64, duckdb.TYPE_BIGINT, "BIGINT", []string{"int8", "long"}},
	{schema.Uint8, duckdb.TYPE_UTINYINT, "UTINYINT", nil},
	{schema.Uint16, duckdb.TYPE_USMALLINT, "USMALLINT", nil},
	{schema.Uint32, duckdb.TYPE_UINTEGER, "UINTEGER", nil},
	{schema.Uint64, duckdb.TYPE_UBIGINT, "UBIGINT", nil},
	{schema.Float32, duckdb.TYPE_FLOAT, "FLOAT", []string{"real", "float4"}},
	{schema.Float64, duckdb.TYPE_DOUBLE, "DOUBLE", []string{"float8"}},
	{schema.Text, duckdb.TYPE_VARCHAR, "VARCHAR", []string{"text", "string", "char", "bpchar"}},
	{schema.JSON, duckdb.TYPE_VARCHAR, "JSON", nil},
	{schema.Bytes, duckdb.TYPE_BLOB, "BLOB", []string{"bytea", "binary", "varbinary"}},
	{schema.Float16, duckdb.TYPE_FLOAT, "FLOAT", nil},
	{schema.BFloat16, duckdb.TYPE_FLOAT, "FLOAT", nil},
}

// DuckType is the DuckDB type of one element of dtype d and its name as
// DuckDB writes it (FLOAT for float16 and bfloat16; JSON, DuckDB's alias
// of VARCHAR, for json). An invalid dtype is TYPE_INVALID and "".
func DuckType(d schema.DType) (duckdb.Type, string) {
	for _, r := range duckScalars {
		if r.dtype == d {
			return r.duck, r.name
		}
	}
	return duckdb.TYPE_INVALID, ""
}

// DTypeOf is the dtype that holds DuckDB values of type t, a scalar type
// (a VARCHAR with the JSON alias is json); ok is false for a type no dtype
// holds as it is (DECIMAL, ENUM, dates, nested types).
func DTypeOf(t duckdb.TypeInfo) (d schema.DType, ok bool) {
	it := t.InternalType()
	if it == duckdb.TYPE_VARCHAR && strings.EqualFold(t.Alias(), "JSON") {
		return schema.JSON, true
	}
	for _, r := range duckScalars {
		if r.duck == it && r.dtype != schema.JSON {
			return r.dtype, true
		}
	}
	return schema.Invalid, false
}

// DTypeNamed is the dtype of the DuckDB scalar type named name (DuckDB's
// name or one of its aliases, in any case: "int4", "FLOAT8"); ok is false
// for another name.
func DTypeNamed(name string) (d schema.DType, ok bool) {
	for _, r := range duckScalars {
		if strings.EqualFold(r.name, name) {
			return r.dtype, true
		}
		for _, a := range r.aliases {
			if strings.EqualFold(a, name) {
				return r.dtype, true
			}
		}
	}
	return schema.Invalid, false
}
