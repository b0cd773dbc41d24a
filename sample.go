package loch

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/lochdata/loch/schema"
)

// Sample is one value of one column: a tensor's bytes with its shape, a byte
// string (text, json, bytes), or null.
//
// Data holds the element bytes, C-contiguous and little-endian. For text,
// json and bytes columns Data holds the bytes and Shape is [len(Data)]. When
// Encoding is png or jpeg, Data holds an encoded image and Shape its decoded
// shape [height, width, channels]: a writer stores such bytes unchanged in a
// column with the same sample compression and decodes them otherwise.
type Sample struct {
	Shape    []int
	Data     []byte
	Null     bool
	Encoding schema.SampleCompression
}

// Row maps column names to samples. A column missing from a Row is null.
type Row map[string]Sample

// Number is the set of Go element types that map to loch dtypes.
type Number interface {
	~bool | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// DTypeOf returns the dtype of a Go element type.
func DTypeOf[T Number]() schema.DType {
	var z T
	switch any(z).(type) {
	case bool:
		return schema.Bool
	case int8:
		return schema.Int8
	case int16:
		return schema.Int16
	case int32:
		return schema.Int32
	case int64:
		return schema.Int64
	case uint8:
		return schema.Uint8
	case uint16:
		return schema.Uint16
	case uint32:
		return schema.Uint32
	case uint64:
		return schema.Uint64
	case float32:
		return schema.Float32
	case float64:
		return schema.Float64
	}
	return schema.Invalid
}

// Tensor returns a sample holding data with the given shape. The sample
// aliases data's memory (no copy); do not modify data until the sample has
// been appended.
func Tensor[T Number](shape []int, data []T) Sample {
	return Sample{Shape: shape, Data: AsBytes(data)}
}

// Scalar returns a sample holding one value, shape [].
func Scalar[T Number](v T) Sample {
	return Sample{Shape: []int{}, Data: AsBytes([]T{v})}
}

// AsBytes views a numeric slice as its bytes (no copy).
func AsBytes[T Number](data []T) []byte {
	if len(data) == 0 {
		return []byte{}
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), len(data)*int(unsafe.Sizeof(z)))
}

// As views a sample's bytes as a slice of T: without a copy when the bytes
// are aligned for T, as a copy when they are not. It fails when the length
// is not a whole number of elements.
func As[T Number](b []byte) ([]T, error) {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b)%size != 0 {
		return nil, fmt.Errorf("%d bytes are not a whole number of %d-byte elements: %w", len(b), size, ErrInvalidArgument)
	}
	if len(b) == 0 {
		return []T{}, nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%uintptr(unsafe.Alignof(z)) != 0 {
		out := make([]T, len(b)/size)
		copy(AsBytes(out), b)
		return out, nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size), nil
}

// String returns a text sample.
func String(s string) Sample {
	return Sample{Shape: []int{len(s)}, Data: []byte(s)}
}

// Bytes returns a bytes sample (no copy).
func Bytes(b []byte) Sample {
	return Sample{Shape: []int{len(b)}, Data: b}
}

// JSON returns a json sample holding v encoded as JSON.
func JSON(v any) (Sample, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Sample{}, fmt.Errorf("json value: %v: %w", err, ErrInvalidArgument)
	}
	return Sample{Shape: []int{len(b)}, Data: b}, nil
}

// Null returns an empty sample.
func Null() Sample { return Sample{Null: true} }

// Encoded returns a sample holding an encoded image (png or jpeg) whose
// decoded shape is shape.
func Encoded(format schema.SampleCompression, data []byte, shape []int) Sample {
	return Sample{Shape: shape, Data: data, Encoding: format}
}
