package imaging

import (
	"fmt"
	"image"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/image/draw"
)

// xImageResize is what ingest resized with before imaging had Resize:
// golang.org/x/image/draw's CatmullRom from the tensor wrapped as an
// image (Gray, or NRGBA with alpha 255 for RGB) into an NRGBA, whose
// first c channels are kept.
func xImageResize(t testing.TB, pix []byte, h, w, c, th, tw int) []byte {
	img, err := ToImage(pix, []int{h, w, c})
	require.NoError(t, err)
	dst := image.NewNRGBA(image.Rect(0, 0, tw, th))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	out := make([]byte, th*tw*c)
	for i := 0; i < th*tw; i++ {
		copy(out[i*c:(i+1)*c], dst.Pix[i*4:i*4+c])
	}
	return out
}

// randomImage is h x w x c of noise, of a photo, or of a few flat areas
// with hard edges (where Catmull-Rom overshoots), with random alpha.
func randomImage(rng *rand.Rand, h, w, c int) []byte {
	pix := make([]byte, h*w*c)
	switch rng.IntN(3) {
	case 0:
		for i := range pix {
			pix[i] = byte(rng.Uint32())
		}
	case 1:
		pix = photo(w, h, c, rng.Uint64())
		for i := 3; c == 4 && i < len(pix); i += 4 {
			pix[i] = byte(rng.IntN(256))
		}
	default:
		vals := []byte{0, 255, byte(rng.Uint32()), byte(rng.Uint32())}
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				for k := 0; k < c; k++ {
					pix[(y*w+x)*c+k] = vals[((x*3/w)+(y*2/h)+k)%len(vals)]
				}
			}
		}
	}
	return pix
}

// resizeCases are sizes from and to: odd, up, down, one axis each way,
// strong shrinks, 1-pixel images.
func resizeCases(rng *rand.Rand) [][4]int {
	cases := [][4]int{
		{1, 1, 5, 3}, {5, 3, 1, 1}, {7, 5, 7, 5}, {17, 33, 31, 9}, {224, 224, 256, 256},
		{375, 500, 256, 341}, {61, 47, 13, 11}, {40, 40, 3, 97}, {9, 300, 9, 17},
	}
	for range 12 {
		cases = append(cases, [4]int{1 + rng.IntN(90), 1 + rng.IntN(90), 1 + rng.IntN(90), 1 + rng.IntN(90)})
	}
	return cases
}

// CatmullRom gives exactly what x/image's CatmullRom gives, at every size
// and channel count it takes.
func TestCatmullRomMatchesXImage(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, sz := range resizeCases(rng) {
		h, w, th, tw := sz[0], sz[1], sz[2], sz[3]
		for _, c := range []int{1, 3, 4} {
			pix := randomImage(rng, h, w, c)
			got := make([]byte, th*tw*c)
			require.NoError(t, Resize(got, pix, h, w, th, tw, c, CatmullRom))
			want := xImageResize(t, pix, h, w, c, th, tw)
			require.Equal(t, want, got, "%dx%dx%d to %dx%d", w, h, c, tw, th)
		}
	}
}

func TestResizeRejects(t *testing.T) {
	src := make([]byte, 4*4*3)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"short dst", Resize(make([]byte, 5), src, 4, 4, 2, 2, 3, Bilinear)},
		{"short src", Resize(make([]byte, 12), src[:47], 4, 4, 2, 2, 3, Bilinear)},
		{"2 channels catmull-rom", Resize(make([]byte, 8), src[:32], 4, 4, 2, 2, 2, CatmullRom)},
		{"5 channels", Resize(make([]byte, 20), make([]byte, 80), 4, 4, 2, 2, 5, Bilinear)},
		{"unknown kernel", Resize(make([]byte, 12), src, 4, 4, 2, 2, 3, Kernel(9))},
		{"zero size", Resize(nil, src, 4, 4, 0, 2, 3, Bilinear)},
		{"region outside", ResizeRegion(make([]byte, 12), src, 4, 4, 2, 2, 3, Bilinear, Region{Src: image.Rect(1, 1, 5, 3)})},
		{"window outside", ResizeRegion(make([]byte, 12), src, 4, 4, 2, 2, 3, Bilinear, Region{Dst: image.Rect(1, 1, 3, 3)})},
	} {
		require.Error(t, tc.err, tc.name)
	}
}

// BenchmarkResize: RGB photos resized with each kernel, beside
// golang.org/x/image/draw's CatmullRom through image types (what ingest
// did before). MB/s counts source pixel bytes.
func BenchmarkResize(b *testing.B) {
	for _, sz := range [][4]int{{224, 224, 256, 256}, {375, 500, 256, 341}, {768, 1024, 256, 341}} {
		h, w, th, tw := sz[0], sz[1], sz[2], sz[3]
		pix := photo(w, h, 3, 1)
		dst := make([]byte, th*tw*3)
		name := fmt.Sprintf("%dx%d-to-%dx%d", w, h, tw, th)
		for _, k := range []Kernel{Bilinear, CatmullRom} {
			b.Run(name+"/"+k.String(), func(b *testing.B) {
				b.SetBytes(int64(len(pix)))
				b.ReportAllocs()
				for b.Loop() {
					if err := Resize(dst, pix, h, w, th, tw, 3, k); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(name+"/x-image", func(b *testing.B) {
			b.SetBytes(int64(len(pix)))
			b.ReportAllocs()
			for b.Loop() {
				xImageResize(b, pix, h, w, 3, th, tw)
			}
		})
	}
}
