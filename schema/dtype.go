package schema

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/half"
)

// DType is the element type of a column. Its numeric value is the code
// stored in chunk headers (docs/format.md, section 2.4).
type DType uint8

// The data types.
const (
	Invalid  DType = 0
	Bool     DType = 1
	Int8     DType = 2
	Int16    DType = 3
	Int32    DType = 4
	Int64    DType = 5
	Uint8    DType = 6
	Uint16   DType = 7
	Uint32   DType = 9
	Uint64   DType = 10
	Float16  DType = 11
	BFloat16 DType = 12
	Float32  DType = 13
	Float64  DType = 14
	Text     DType = 15
	JSON     DType = 16
	Bytes    DType = 17
)

var dtypeNames = map[DType]string{
	Bool: "bool", Int8: "int8", Int16: "int16", Int32: "int32", Int64: "int64",
	Uint8: "uint8", Uint16: "uint16", Uint32: "uint32", Uint64: "uint64",
	Float16: "float16", BFloat16: "bfloat16", Float32: "float32", Float64: "float64",
	Text: "text", JSON: "json", Bytes: "bytes",
}

// DTypes lists every valid data type in code order.
func DTypes() []DType {
	return []DType{Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64,
		Float16, BFloat16, Float32, Float64, Text, JSON, Bytes}
}

// String returns the dtype's name, as written in schemas.
func (d DType) String() string {
	if n, ok := dtypeNames[d]; ok {
		return n
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Valid reports whether d is a known data type.
func (d DType) Valid() bool { _, ok := dtypeNames[d]; return ok }

// Size is the size of one element in bytes, or 0 for variable-size dtypes
// (text, json, bytes).
func (d DType) Size() int {
	switch d {
	case Bool, Int8, Uint8:
		return 1
	case Int16, Uint16, Float16, BFloat16:
		return 2
	case Int32, Uint32, Float32:
		return 4
	case Int64, Uint64, Float64:
		return 8
	}
	return 0
}

// FormatElem formats element i of little-endian data of numeric dtype d
// ("?" for another dtype); data must hold it.
func (d DType) FormatElem(data []byte, i int) string {
	le := binary.LittleEndian
	switch d {
	case Bool:
		return strconv.FormatBool(data[i] != 0)
	case Int8:
		return strconv.FormatInt(int64(int8(data[i])), 10)
	case Uint8:
		return strconv.FormatUint(uint64(data[i]), 10)
	case Int16:
		return strconv.FormatInt(int64(int16(le.Uint16(data[2*i:]))), 10)
	case Uint16:
		return strconv.FormatUint(uint64(le.Uint16(data[2*i:])), 10)
	case Int32:
		return strconv.FormatInt(int64(int32(le.Uint32(data[4*i:]))), 10)
	case Uint32:
		return strconv.FormatUint(uint64(le.Uint32(data[4*i:])), 10)
	case Int64:
		return strconv.FormatInt(int64(le.Uint64(data[8*i:])), 10)
	case Uint64:
		return strconv.FormatUint(le.Uint64(data[8*i:]), 10)
	case Float16:
		return strconv.FormatFloat(float64(half.ToFloat32(le.Uint16(data[2*i:]))), 'g', -1, 32)
	case BFloat16:
		return strconv.FormatFloat(float64(math.Float32frombits(uint32(le.Uint16(data[2*i:]))<<16)), 'g', -1, 32)
	case Float32:
		return strconv.FormatFloat(float64(math.Float32frombits(le.Uint32(data[4*i:]))), 'g', -1, 32)
	case Float64:
		return strconv.FormatFloat(math.Float64frombits(le.Uint64(data[8*i:])), 'g', -1, 64)
	}
	return "?"
}

// Variable reports whether samples of d are byte strings (text, json, bytes).
func (d DType) Variable() bool { return d == Text || d == JSON || d == Bytes }

// Integer reports whether d is a signed or unsigned integer type.
func (d DType) Integer() bool {
	switch d {
	case Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64:
		return true
	}
	return false
}

// Float reports whether d is a floating-point type.
func (d DType) Float() bool {
	return d == Float16 || d == BFloat16 || d == Float32 || d == Float64
}

// ParseDType parses a dtype name. It accepts the names of String and the
// numpy spellings "float"/"double"/"half"/"str"/"string".
func ParseDType(s string) (DType, error) {
	for d, n := range dtypeNames {
		if n == s {
			return d, nil
		}
	}
	switch s {
	case "float", "double":
		return Float64, nil
	case "half":
		return Float16, nil
	case "str", "string":
		return Text, nil
	case "int":
		return Int64, nil
	case "bool_":
		return Bool, nil
	}
	return Invalid, base.Markf(ErrInvalid, "unknown dtype %q (want one of bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64, text, json, bytes)", s)
}

// MarshalJSON writes the dtype's name.
func (d DType) MarshalJSON() ([]byte, error) {
	if !d.Valid() {
		return nil, base.Markf(ErrInvalid, "dtype code %d", uint8(d))
	}
	return json.Marshal(d.String())
}

// UnmarshalJSON parses a dtype name.
func (d *DType) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return base.Markf(ErrInvalid, "dtype must be a string, got %s", b)
	}
	v, err := ParseDType(s)
	if err != nil {
		return err
	}
	*d = v
	return nil
}
