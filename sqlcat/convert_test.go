package sqlcat

import (
	"encoding/hex"
	"math"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// decimal stands for DuckDB's DECIMAL, which database/sql gives as a
// value with a Float64 method.
type decimal float64

func (d decimal) Float64() float64 { return float64(d) }

// TestAppendNumber: each Go value DuckDB gives is stored in each dtype
// family as written here (little-endian, hex), or refused with its error.
func TestAppendNumber(t *testing.T) {
	big70 := new(big.Int).Lsh(big.NewInt(1), 70)
	for _, tc := range []struct {
		dt   schema.DType
		v    any
		want string // hex bytes, or the error
	}{
		{schema.Bool, true, "01"},
		{schema.Bool, false, "00"},
		{schema.Bool, int64(1), "01"},
		{schema.Bool, 0.0, "00"},
		{schema.Bool, int64(2), "error: 2 is out of range of bool"},
		{schema.Int8, int64(-128), "80"},
		{schema.Int8, int64(128), "error: 128 is out of range of int8"},
		{schema.Int8, " 12 ", "0c"},
		{schema.Int8, "x", `error: "x" is not a number (a int8 column)`},
		{schema.Int16, int8(-1), "ffff"},
		{schema.Uint16, uint8(255), "ff00"},
		{schema.Uint16, int32(-1), "error: -1 is out of range of uint16"},
		{schema.Int32, true, "01000000"},
		{schema.Int32, 2.5, "error: 2.5 has a fraction (a int32 column takes integers)"},
		{schema.Int32, math.NaN(), "error: NaN has a fraction (a int32 column takes integers)"},
		{schema.Int32, decimal(3), "03000000"},
		{schema.Int64, big.NewInt(-5), "fbffffffffffffff"},
		{schema.Int64, big70, "error: 1180591620717411303424 is out of range of int64"},
		{schema.Int64, uint64(math.MaxUint64), "error: 18446744073709551615 is out of range of int64"},
		{schema.Int64, -9.3e18, "error: -9.3e+18 is out of range of int64"},
		{schema.Uint64, uint64(math.MaxUint64), "ffffffffffffffff"},
		{schema.Uint64, "18446744073709551615", "ffffffffffffffff"},
		{schema.Uint64, float64(1 << 63), "0000000000000080"},
		{schema.Uint64, 1.8446744073709552e19, "error: 1.8446744073709552e+19 is out of range of uint64"},
		{schema.Float16, 1.0, "003c"},
		{schema.BFloat16, float32(1), "803f"},
		{schema.Float32, int64(3), "00004040"},
		{schema.Float32, "2.5", "00002040"},
		{schema.Float64, true, "000000000000f03f"},
		{schema.Float64, uint64(math.MaxUint64), "000000000000f043"},
		{schema.Float64, decimal(0.5), "000000000000e03f"},
		{schema.Float32, nil, "error: NULL inside a list (a float32 column takes no nulls in a tensor)"},
		{schema.Int32, struct{}{}, "error: a struct {} is not a number (a int32 column)"},
	} {
		got, err := appendNumber([]byte{0xaa}, tc.dt, tc.v)
		if err != nil {
			require.Equal(t, tc.want, "error: "+err.Error(), "%s %#v", tc.dt, tc.v)
			continue
		}
		require.Equal(t, tc.want, hex.EncodeToString(got[1:]), "%s %#v", tc.dt, tc.v)
		require.Equal(t, byte(0xaa), got[0], "appends to dst")
	}
}

// TestVectorText: pgvector's text of a vector ('[1, 2.5, -3]', nested for
// a tensor) converts into array columns; other text is refused as before.
func TestVectorText(t *testing.T) {
	emb := &schema.Column{Name: "e", Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{3}}
	smp, err := toSample(emb, " [1, 2.5, -3] ")
	require.NoError(t, err)
	require.Equal(t, []int{3}, smp.Shape)
	require.Equal(t, "0000803f00002040000040c0", hex.EncodeToString(smp.Data))
	grid := &schema.Column{Name: "g", DType: schema.Int64, Shape: schema.Shape{2, 2}}
	smp, err = toSample(grid, "[[1, 2], [3, 4]]")
	require.NoError(t, err)
	require.Equal(t, []int{2, 2}, smp.Shape)
	for _, bad := range []string{"[1, 2,", "[1, \"x\"]", "1, 2, 3"} {
		_, err := toSample(emb, bad)
		require.Error(t, err, bad)
	}
}
