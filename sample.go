package loch

import (
	"encoding/json"
	"fmt"
	"unsafe"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/memcopy"
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

// DecodedLen is the number of bytes of the sample decoded: for an encoded
// image, its pixels (the product of Shape); otherwise len(Data).
func (s Sample) DecodedLen() int {
	if !s.encoded() {
		return len(s.Data)
	}
	if s.Encoding == schema.AudioCompression {
		return 4 * schema.NumElements(s.Shape) // float32
	}
	return schema.NumElements(s.Shape)
}

func (s Sample) encoded() bool { return s.Encoding != schema.SampleNone && s.Encoding != "" }

// MaxDecodeBytes returns the decode limit: the most bytes that one decode
// may produce (an image's height x width x channels, video frames' count x
// height x width x 3, audio's samples x channels x 4), 0 for none. Every
// decoder of loch checks the size a sample or file declares against it
// before allocating, and refuses a larger one with ErrTooLarge. It is
// process-wide: $LOCH_MAX_DECODE_BYTES (a size such as 512MiB; 0 for no
// limit), else 512 MiB (Pillow's decompression-bomb threshold for RGB
// images), unless SetMaxDecodeBytes changed it.
func MaxDecodeBytes() int64 { return decodelimit.Max() }

// SetMaxDecodeBytes sets the decode limit (see MaxDecodeBytes) to n bytes,
// 0 for none, for the whole process, and returns the previous limit. A
// negative n is ErrInvalidArgument. Safe for concurrent use; decodes
// already past their check keep the limit they were checked against.
func SetMaxDecodeBytes(n int64) (old int64, err error) { return decodelimit.Set(n) }

// CheckDecode checks the sample's decoded size (DecodedLen, from the shape
// its chunk header records) against the decode limit: an ErrTooLarge error
// naming both sizes when it is more. Decode and DecodeInto check it first;
// a caller that sizes a buffer from DecodedLen checks it before
// allocating.
func (s Sample) CheckDecode() error {
	if !s.encoded() {
		return nil // as stored: nothing to decode
	}
	var what string
	switch s.Encoding {
	case schema.VideoCompression:
		what = "video"
	case schema.AudioCompression:
		what = "audio"
	default:
		what = string(s.Encoding) + " image"
	}
	n := decodelimit.Size(1, s.Shape...)
	if s.Encoding == schema.AudioCompression {
		n = decodelimit.Size(4, s.Shape...)
	}
	return decodelimit.Check(fmt.Sprintf("%s sample of shape %v", what, s.Shape), n)
}

// Decode returns the sample decoded into a new buffer of DecodedLen bytes
// (see DecodeInto), after CheckDecode.
func (s Sample) Decode() (Sample, error) {
	if err := s.CheckDecode(); err != nil {
		return Sample{}, err
	}
	return s.DecodeInto(make([]byte, s.DecodedLen()))
}

// DecodeInto returns the sample decoded into dst, which must hold exactly
// DecodedLen bytes: png/jpeg images are decoded to HWC uint8 pixels with the
// channels Shape records, other samples are copied. The result's Data is
// dst. A sample that does not decode to its recorded shape is ErrCorrupt.
func (s Sample) DecodeInto(dst []byte) (Sample, error) {
	if err := s.CheckDecode(); err != nil {
		return Sample{}, err
	}
	if len(dst) != s.DecodedLen() {
		return Sample{}, fmt.Errorf("decode sample of shape %v: buffer of %d bytes, want %d: %w", s.Shape, len(dst), s.DecodedLen(), ErrInvalidArgument)
	}
	out := Sample{Shape: s.Shape, Data: dst, Null: s.Null}
	if !s.encoded() {
		memcopy.Copy(dst, s.Data) // from a mapped chunk, at any alignment
		return out, nil
	}
	if s.Encoding.Media() {
		if err := decodeMedia(s, dst); err != nil {
			return Sample{}, base.Mark(ErrCorrupt, fmt.Sprintf("decode %s sample of shape %v", s.Encoding, s.Shape), err)
		}
		return out, nil
	}
	if len(s.Shape) != 3 {
		return Sample{}, fmt.Errorf("image sample shape %v, want [height, width, channels]: %w", s.Shape, ErrCorrupt)
	}
	// The image must decode to the shape the chunk header records.
	if err := imaging.DecodeInto(dst, s.Data, s.Shape[0], s.Shape[1], s.Shape[2]); err != nil {
		return Sample{}, base.Mark(ErrCorrupt, fmt.Sprintf("decode image sample of shape %v", s.Shape), err)
	}
	return out, nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
