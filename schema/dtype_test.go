package schema

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/half"
)

// TestDTypeElements decodes element 1 of a two-element sample of every
// dtype: Int, Float64, Value and FormatElem agree with each other.
func TestDTypeElements(t *testing.T) {
	le := binary.LittleEndian
	pair := func(size int, put func(b []byte)) []byte {
		b := make([]byte, 2*size)
		put(b[size:])
		return b
	}
	cases := []struct {
		d     DType
		data  []byte
		int   int64
		float float64
		value any
		text  string
	}{
		{Bool, []byte{0, 1}, 1, 1, true, "true"},
		{Int8, []byte{0, 0xfe}, -2, -2, int8(-2), "-2"},
		{Uint8, []byte{0, 0xfe}, 254, 254, uint8(254), "254"},
		{Int16, pair(2, func(b []byte) { le.PutUint16(b, 0xfffd) }), -3, -3, int16(-3), "-3"},
		{Uint16, pair(2, func(b []byte) { le.PutUint16(b, 0xfffd) }), 65533, 65533, uint16(65533), "65533"},
		{Int32, pair(4, func(b []byte) { le.PutUint32(b, 0xfffffffc) }), -4, -4, int32(-4), "-4"},
		{Uint32, pair(4, func(b []byte) { le.PutUint32(b, 0xfffffffc) }), 1<<32 - 4, 1<<32 - 4, uint32(1<<32 - 4), "4294967292"},
		{Int64, pair(8, func(b []byte) { le.PutUint64(b, math.MaxUint64-4) }), -5, -5, int64(-5), "-5"},
		{Uint64, pair(8, func(b []byte) { le.PutUint64(b, math.MaxUint64-4) }), -5, math.MaxUint64 - 4, uint64(math.MaxUint64 - 4), "18446744073709551611"},
		{Float16, pair(2, func(b []byte) { le.PutUint16(b, half.Float16(-1.5)) }), 0, -1.5, float32(-1.5), "-1.5"},
		{BFloat16, pair(2, func(b []byte) { le.PutUint16(b, half.BFloat16(2.5)) }), 0, 2.5, float32(2.5), "2.5"},
		{Float32, pair(4, func(b []byte) { le.PutUint32(b, math.Float32bits(0.1)) }), 0, float64(float32(0.1)), float32(0.1), "0.1"},
		{Float64, pair(8, func(b []byte) { le.PutUint64(b, math.Float64bits(0.1)) }), 0, 0.1, 0.1, "0.1"},
		{Text, []byte("ab"), 0, math.NaN(), nil, "?"},
		{JSON, []byte("{}"), 0, math.NaN(), nil, "?"},
		{Bytes, []byte{1, 2}, 0, math.NaN(), nil, "?"},
	}
	seen := map[DType]bool{}
	for _, c := range cases {
		seen[c.d] = true
		require.Equal(t, c.int, c.d.Int(c.data, 1), "%s Int", c.d)
		if math.IsNaN(c.float) {
			require.True(t, math.IsNaN(c.d.Float64(c.data, 1)), "%s Float64", c.d)
		} else {
			require.Equal(t, c.float, c.d.Float64(c.data, 1), "%s Float64", c.d)
		}
		require.Equal(t, c.value, c.d.Value(c.data, 1), "%s Value", c.d)
		require.Equal(t, c.text, c.d.FormatElem(c.data, 1), "%s FormatElem", c.d)
		if c.d.Size() > 0 {
			require.Zero(t, c.d.Float64(c.data, 0), "%s element 0", c.d)
		}
	}
	for _, d := range DTypes() {
		require.True(t, seen[d], "dtype %s has no case", d)
	}
}

func TestClassName(t *testing.T) {
	c := &Column{Kind: ClassLabel, DType: Int64, ClassNames: []string{"cat", "dog"}}
	for v, want := range map[int64]string{0: "cat", 1: "dog", 2: "", -1: ""} {
		n, ok := c.ClassName(v)
		require.Equal(t, want, n, "class %d", v)
		require.Equal(t, want != "", ok, "class %d", v)
	}
}
