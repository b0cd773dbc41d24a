package half

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestToFloat32(t *testing.T) {
	for bits, want := range map[uint16]float32{
		0x3c00: 1, 0xc000: -2, 0x0000: 0, 0x3555: 0.33325195, 0x7bff: 65504, 0x0001: 5.9604645e-08,
	} {
		require.Equal(t, want, ToFloat32(bits), "%#04x", bits)
	}
}
