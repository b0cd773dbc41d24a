package imaging

// Temporary: the three channel conversions that ConvertChannels replaces,
// copied verbatim (imaging.decodeAsStd's loop, transform's channelStep,
// ingest's convertChannels), compared with it on random images before the
// copies are deleted.

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func oldImaging(pix []byte, shape []int, channels int) []byte {
	n := shape[0] * shape[1]
	out := make([]byte, n*channels)
	from := shape[2]
	for i := 0; i < n; i++ {
		src := pix[i*from : (i+1)*from]
		dst := out[i*channels : (i+1)*channels]
		switch {
		case from == 1:
			for k := range dst {
				dst[k] = src[0]
			}
			if channels == 4 {
				dst[3] = 255
			}
		case channels == 1:
			dst[0] = uint8((299*int(src[0]) + 587*int(src[1]) + 114*int(src[2]) + 500) / 1000)
		default:
			copy(dst, src[:min(3, channels)])
			if channels == 4 {
				dst[3] = 255
			}
		}
	}
	return out
}

func oldIngest(pix []byte, shape []int, to int) []byte {
	from := shape[2]
	n := shape[0] * shape[1]
	out := make([]byte, n*to)
	for i := 0; i < n; i++ {
		src := pix[i*from : i*from+from]
		dst := out[i*to : i*to+to]
		var r, g, b, a byte
		switch from {
		case 1:
			r, g, b, a = src[0], src[0], src[0], 255
		case 3:
			r, g, b, a = src[0], src[1], src[2], 255
		default:
			r, g, b, a = src[0], src[1], src[2], src[3]
		}
		switch to {
		case 1:
			dst[0] = byte((299*int(r) + 587*int(g) + 114*int(b) + 500) / 1000)
		case 3:
			dst[0], dst[1], dst[2] = r, g, b
		default:
			dst[0], dst[1], dst[2], dst[3] = r, g, b, a
		}
	}
	return out
}

func putF32(b []byte, i int, v float32) { binary.LittleEndian.PutUint32(b[i*4:], math.Float32bits(v)) }
func getF32(b []byte, i int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
}

// oldTransform is channelStep.Apply: to is 1 or 3, es 1 (uint8) or 4 (float32).
func oldTransform(in []byte, h, w, c, to, es int) []byte {
	out := make([]byte, h*w*to*es)
	n := h * w
	switch {
	case c == to:
		copy(out, in)
	case to == 3 && c == 1:
		for i := 0; i < n; i++ {
			v := in[i*es : (i+1)*es]
			for k := 0; k < 3; k++ {
				copy(out[(i*3+k)*es:], v)
			}
		}
	case to == 3: // 4 to 3
		for i := 0; i < n; i++ {
			copy(out[i*3*es:(i+1)*3*es], in[i*4*es:])
		}
	case es == 1: // 3 or 4 to gray
		for i := 0; i < n; i++ {
			p := in[i*c : i*c+3]
			out[i] = uint8((299*int(p[0]) + 587*int(p[1]) + 114*int(p[2]) + 500) / 1000)
		}
	default:
		for i := 0; i < n; i++ {
			r, g, b := getF32(in, i*c), getF32(in, i*c+1), getF32(in, i*c+2)
			putF32(out, i, 0.299*r+0.587*g+0.114*b)
		}
	}
	return out
}

func TestConvertChannelsMatchesOldCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 6))
	for _, sz := range [][2]int{{1, 1}, {7, 5}, {33, 17}, {64, 31}} {
		h, w := sz[0], sz[1]
		for _, from := range []int{1, 3, 4} {
			pix := make([]byte, h*w*from)
			for i := range pix {
				pix[i] = byte(rng.Uint32())
			}
			fl := make([]float32, h*w*from)
			flb := make([]byte, 4*len(fl))
			for i := range fl {
				fl[i] = rng.Float32()*2 - 0.5
				putF32(flb, i, fl[i])
			}
			for _, to := range []int{1, 3, 4} {
				t.Run(fmt.Sprintf("%dx%d/%dto%d", w, h, from, to), func(t *testing.T) {
					got := make([]byte, h*w*to)
					require.NoError(t, ConvertChannels(got, pix, from, to))
					shape := []int{h, w, from}
					if from != to {
						require.Equal(t, oldImaging(pix, shape, to), got, "imaging.decodeAsStd")
					}
					require.Equal(t, oldIngest(pix, shape, to), got, "ingest.convertChannels")
					if to == 4 {
						return // transform has no rgba step
					}
					require.Equal(t, oldTransform(pix, h, w, from, to, 1), got, "transform uint8")
					gotF := make([]float32, h*w*to)
					require.NoError(t, ConvertChannels(gotF, fl, from, to))
					old := oldTransform(flb, h, w, from, to, 4)
					for i, v := range gotF {
						require.Equal(t, math.Float32bits(getF32(old, i)), math.Float32bits(v), "transform float32 at %d", i)
					}
				})
			}
		}
	}
}
