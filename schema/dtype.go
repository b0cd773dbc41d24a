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

// Int returns element i of little-endian data of dtype d as an int64: a
// bool is 0 or 1 and a uint64 above math.MaxInt64 wraps to a negative
// value. data must hold element i; a float or variable-size dtype reads 0.
func (d DType) Int(data []byte, i int) int64 {
	le := binary.LittleEndian
	switch d {
	case Bool:
		if data[i] != 0 {
			return 1
		}
		return 0
	case Int8:
		return int64(int8(data[i]))
	case Uint8:
		return int64(data[i])
	case Int16:
		return int64(int16(le.Uint16(data[2*i:])))
	case Uint16:
		return int64(le.Uint16(data[2*i:]))
	case Int32:
		return int64(int32(le.Uint32(data[4*i:])))
	case Uint32:
		return int64(le.Uint32(data[4*i:]))
	case Int64, Uint64:
		return int64(le.Uint64(data[8*i:]))
	}
	return 0
}

// Float64 returns element i of little-endian data of dtype d as a float64
// (exact but for integers beyond 2^53 in magnitude; a bool is 0 or 1;
// float16 and bfloat16 through internal/half). data must hold element i; a
// variable-size dtype reads NaN.
func (d DType) Float64(data []byte, i int) float64 {
	le := binary.LittleEndian
	switch d {
	case Uint64:
		return float64(le.Uint64(data[8*i:]))
	case Float16:
		return float64(half.ToFloat32(le.Uint16(data[2*i:])))
	case BFloat16:
		return float64(half.BFloat16ToFloat32(le.Uint16(data[2*i:])))
	case Float32:
		return float64(math.Float32frombits(le.Uint32(data[4*i:])))
	case Float64:
		return math.Float64frombits(le.Uint64(data[8*i:]))
	}
	if d.Integer() || d == Bool {
		return float64(d.Int(data, i))
	}
	return math.NaN()
}

// Value returns element i of little-endian data of dtype d as the Go type
// of its dtype: bool, int8..int64, uint8..uint64, float32 (float16 and
// bfloat16 too, widened exactly) or float64. data must hold element i; a
// variable-size dtype reads nil.
func (d DType) Value(data []byte, i int) any {
	le := binary.LittleEndian
	switch d {
	case Bool:
		return data[i] != 0
	case Int8:
		return int8(data[i])
	case Uint8:
		return data[i]
	case Int16:
		return int16(le.Uint16(data[2*i:]))
	case Uint16:
		return le.Uint16(data[2*i:])
	case Int32:
		return int32(le.Uint32(data[4*i:]))
	case Uint32:
		return le.Uint32(data[4*i:])
	case Int64:
		return int64(le.Uint64(data[8*i:]))
	case Uint64:
		return le.Uint64(data[8*i:])
	case Float16, BFloat16, Float32:
		return float32(d.Float64(data, i))
	case Float64:
		return d.Float64(data, i)
	}
	return nil
}

// FormatElem formats element i of little-endian data of numeric dtype d
// ("?" for another dtype); data must hold it.
func (d DType) FormatElem(data []byte, i int) string {
	switch {
	case d == Bool:
		return strconv.FormatBool(data[i] != 0)
	case d == Uint64:
		return strconv.FormatUint(uint64(d.Int(data, i)), 10)
	case d.Integer():
		return strconv.FormatInt(d.Int(data, i), 10)
	case d == Float64:
		return strconv.FormatFloat(d.Float64(data, i), 'g', -1, 64)
	case d.Float():
		return strconv.FormatFloat(d.Float64(data, i), 'g', -1, 32)
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
