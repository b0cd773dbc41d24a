package imaging

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The rules of ConvertChannels, one pixel each.
func TestConvertChannelsRules(t *testing.T) {
	for _, tc := range []struct {
		from, to int
		in, want []uint8
	}{
		{1, 1, []uint8{7}, []uint8{7}},
		{1, 3, []uint8{7}, []uint8{7, 7, 7}},
		{1, 4, []uint8{7}, []uint8{7, 7, 7, 255}},
		{3, 1, []uint8{255, 0, 0}, []uint8{76}},  // 76.245
		{3, 1, []uint8{0, 255, 0}, []uint8{150}}, // 149.685
		{3, 1, []uint8{0, 0, 255}, []uint8{29}},  // 29.07
		{3, 1, []uint8{1, 1, 2}, []uint8{1}},     // 1.114
		{3, 1, []uint8{0, 0, 5}, []uint8{1}},     // 0.57, rounded up
		{3, 1, []uint8{255, 255, 255}, []uint8{255}},
		{4, 1, []uint8{10, 20, 30, 0}, []uint8{18}}, // alpha ignored
		{3, 3, []uint8{1, 2, 3}, []uint8{1, 2, 3}},
		{3, 4, []uint8{1, 2, 3}, []uint8{1, 2, 3, 255}},
		{4, 3, []uint8{1, 2, 3, 4}, []uint8{1, 2, 3}},
		{4, 4, []uint8{1, 2, 3, 4}, []uint8{1, 2, 3, 4}},
	} {
		got := make([]uint8, len(tc.want))
		require.NoError(t, ConvertChannels(got, tc.in, tc.from, tc.to))
		require.Equal(t, tc.want, got, "%v from %d to %d channels", tc.in, tc.from, tc.to)
	}
	f := make([]float32, 4)
	require.NoError(t, ConvertChannels(f, []float32{0.5}, 1, 4))
	require.Equal(t, []float32{0.5, 0.5, 0.5, 1}, f, "float32 opaque alpha is 1")
	require.NoError(t, ConvertChannels(f[:1], []float32{1, 0, 0}, 3, 1))
	require.Equal(t, float32(0.299), f[0])

	require.Error(t, ConvertChannels(make([]uint8, 2), make([]uint8, 2), 1, 2), "2 channels")
	require.Error(t, ConvertChannels(make([]uint8, 3), make([]uint8, 2), 1, 3), "dst too long")
	require.Error(t, ConvertChannels(make([]uint8, 3), make([]uint8, 4), 3, 3), "src not whole pixels")
}

// referenceConvert is ConvertChannels written from its rules, one pixel
// at a time through (r, g, b, a).
func referenceConvert[T Pixel](src []T, from, to int, luma func(r, g, b T) T, opaque T) []T {
	n := len(src) / from
	out := make([]T, n*to)
	for i := 0; i < n; i++ {
		p := src[i*from : (i+1)*from]
		r, g, b, a := p[0], p[0], p[0], opaque
		if from >= 3 {
			g, b = p[1], p[2]
		}
		if from == 4 {
			a = p[3]
		}
		o := out[i*to : (i+1)*to]
		switch to {
		case 1:
			o[0] = luma(r, g, b)
			if from == 1 {
				o[0] = r
			}
		case 3:
			o[0], o[1], o[2] = r, g, b
		case 4:
			o[0], o[1], o[2], o[3] = r, g, b, a
		}
	}
	return out
}

// Random images of odd sizes, every pair of channel counts, both pixel
// types: the same as the reference, exactly.
func TestConvertChannelsMatchesReference(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	lumaU8 := func(r, g, b uint8) uint8 { return uint8((299*int(r) + 587*int(g) + 114*int(b) + 500) / 1000) }
	lumaF32 := func(r, g, b float32) float32 { return 0.299*r + 0.587*g + 0.114*b }
	for _, sz := range [][2]int{{1, 1}, {7, 5}, {33, 17}, {64, 31}} {
		n := sz[0] * sz[1]
		for _, from := range []int{1, 3, 4} {
			pix := make([]uint8, n*from)
			fl := make([]float32, n*from)
			for i := range pix {
				pix[i] = uint8(rng.Uint32())
				fl[i] = rng.Float32()*2 - 0.5
			}
			for _, to := range []int{1, 3, 4} {
				name := fmt.Sprintf("%dx%d from %d to %d", sz[1], sz[0], from, to)
				got := make([]uint8, n*to)
				require.NoError(t, ConvertChannels(got, pix, from, to))
				require.Equal(t, referenceConvert(pix, from, to, lumaU8, 255), got, name)
				gotF := make([]float32, n*to)
				require.NoError(t, ConvertChannels(gotF, fl, from, to))
				require.Equal(t, referenceConvert(fl, from, to, lumaF32, 1), gotF, name+" float32")
			}
		}
	}
}

func BenchmarkConvertChannels(b *testing.B) {
	const n = 224 * 224
	for _, c := range [][2]int{{3, 1}, {1, 3}, {4, 3}, {3, 4}} {
		src, dst := make([]uint8, n*c[0]), make([]uint8, n*c[1])
		b.Run(fmt.Sprintf("%dto%d", c[0], c[1]), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if err := ConvertChannels(dst, src, c[0], c[1]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
