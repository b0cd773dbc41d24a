package transform

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

func TestFlipExact(t *testing.T) {
	tests := []struct {
		name string
		in   Image
		want Image
	}{
		{"gray", u8(2, 3, 1, 1, 2, 3, 4, 5, 6), u8(2, 3, 1, 3, 2, 1, 6, 5, 4)},
		{"rgb", u8(1, 2, 3, 1, 2, 3, 4, 5, 6), u8(1, 2, 3, 4, 5, 6, 1, 2, 3)},
		{"rgba", u8(1, 2, 4, 1, 2, 3, 4, 5, 6, 7, 8), u8(1, 2, 4, 5, 6, 7, 8, 1, 2, 3, 4)},
		{"float chw", f32([]int{2, 1, 2}, CHW, 1, 2, 3, 4), f32([]int{2, 1, 2}, CHW, 2, 1, 4, 3)},
		{"float hwc", f32([]int{1, 2, 2}, HWC, 1, 2, 3, 4), f32([]int{1, 2, 2}, HWC, 3, 4, 1, 2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, apply(t, "hflip", tt.in, 1))
			require.Equal(t, tt.want, apply(t, "flip=1", tt.in, 1))
			require.Equal(t, tt.in, apply(t, "flip=0", tt.in, 1))
		})
	}
}

func TestCropExact(t *testing.T) {
	grid := func(h, w int) Image { // value = 10*y + x
		im := u8(h, w, 1)
		for y := 0; y < h; y++ {
			for x := 0; x < w; x++ {
				im.Data = append(im.Data, byte(10*y+x))
			}
		}
		return im
	}
	// Offsets round half to even, as torchvision's center_crop.
	require.Equal(t, u8(2, 2, 1, 11, 12, 21, 22), apply(t, "center_crop=2", grid(4, 4), 0))
	require.Equal(t, u8(2, 2, 1, 0, 1, 10, 11), apply(t, "center_crop=2", grid(3, 3), 0)) // (3-2)/2 = 0.5 -> 0
	require.Equal(t, u8(1, 2, 1, 22, 23), apply(t, "center_crop=2x1", grid(5, 5), 0))     // 1.5 -> 2
	require.Equal(t, u8(3, 1, 1, 2, 12, 22), apply(t, "center_crop=1x3", grid(3, 5), 0))  // width 1, height 3
	rgb := u8(2, 2, 3, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	require.Equal(t, u8(1, 1, 3, 10, 11, 12), apply(t, "center_crop=1", u8(3, 3, 3, append(make([]byte, 12), 10, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)...), 0))
	require.Equal(t, rgb, apply(t, "center_crop=2", rgb, 0))
	chw := f32([]int{2, 2, 3}, CHW, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12)
	require.Equal(t, f32([]int{2, 1, 1}, CHW, 2, 8), apply(t, "center_crop=1", chw, 0))
}

func TestCHWExact(t *testing.T) {
	require.Equal(t, Image{Shape: []int{3, 1, 2}, DType: schema.Uint8, Layout: CHW, Data: []byte{1, 4, 2, 5, 3, 6}},
		apply(t, "chw", u8(1, 2, 3, 1, 2, 3, 4, 5, 6), 0))
	require.Equal(t, f32([]int{2, 2, 1}, CHW, 1, 3, 2, 4), apply(t, "chw", f32([]int{2, 1, 2}, HWC, 1, 2, 3, 4), 0))
}

func TestToFloatAndNormalizeExact(t *testing.T) {
	out := apply(t, "to_float", u8(1, 3, 1, 0, 51, 255), 0)
	require.Equal(t, []int{1, 3, 1}, out.Shape)
	require.Equal(t, schema.Float32, out.DType)
	require.Equal(t, []float32{0, 0.2, 1}, floats(out))

	in := f32([]int{1, 1, 3}, HWC, 0.5, 0.25, 1)
	require.Equal(t, []float32{0, 0, 0.5}, floats(apply(t, "normalize=0.5:0.25:0/0.5:0.5:2", in, 0)))
	require.Equal(t, []float32{0, -0.5, 1}, floats(apply(t, "normalize=0.5/0.5", in, 0)))
	chw := f32([]int{3, 1, 2}, CHW, 0.5, 1, 0.25, 0.75, 0, 1)
	require.Equal(t, []float32{0, 1, 0, 1, 0, 0.5}, floats(apply(t, "normalize=0.5:0.25:0/0.5:0.5:2", chw, 0)))
}

// The fused to_float+normalize+chw pass gives exactly what the separate
// steps give, in every order New fuses.
func TestFusedFloatMatchesSteps(t *testing.T) {
	in := u8(4, 5, 3, photo(5, 4, 3, 1)...)
	sep := apply(t, "chw", apply(t, "normalize=imagenet", apply(t, "to_float", in, 0), 0), 0)
	for _, spec := range []string{"to_float,normalize=imagenet,chw", "to_float,chw,normalize=imagenet"} {
		p, err := Parse(spec)
		require.NoError(t, err)
		require.Len(t, p.plan, 1, "fused")
		require.Equal(t, sep, apply(t, spec, in, 0), spec)
	}
	require.Equal(t, apply(t, "normalize=imagenet", apply(t, "to_float", in, 0), 0), apply(t, "to_float,normalize=imagenet", in, 0))
	chwFirst := apply(t, "chw", in, 0)
	require.Equal(t, sep, apply(t, "to_float,normalize=imagenet", chwFirst, 0))

	// An unaligned destination gets the same little-endian bytes.
	p, err := Parse("to_float,normalize=imagenet,chw")
	require.NoError(t, err)
	buf := make([]byte, len(sep.Data)+1)
	out, err := p.Apply(in, nil, buf[1:])
	require.NoError(t, err)
	require.Same(t, &buf[1], &out.Data[0])
	require.Equal(t, sep, out)
}

func TestChannelConversionsExact(t *testing.T) {
	rgb := u8(1, 4, 3, 255, 0, 0, 0, 255, 0, 0, 0, 255, 10, 20, 30)
	require.Equal(t, u8(1, 4, 1, 76, 150, 29, 18), apply(t, "grayscale", rgb, 0))
	require.Equal(t, u8(1, 1, 1, 18), apply(t, "grayscale", u8(1, 1, 4, 10, 20, 30, 99), 0))
	require.Equal(t, u8(1, 2, 3, 7, 7, 7, 9, 9, 9), apply(t, "rgb", u8(1, 2, 1, 7, 9), 0))
	require.Equal(t, u8(1, 1, 3, 1, 2, 3), apply(t, "rgb", u8(1, 1, 4, 1, 2, 3, 4), 0))
	require.Equal(t, rgb, apply(t, "rgb", rgb, 0))
	require.Equal(t, f32([]int{1, 1, 3}, HWC, 0.5, 0.5, 0.5), apply(t, "rgb", f32([]int{1, 1, 1}, HWC, 0.5), 0))
	require.InDelta(t, float32(0.299), floats(apply(t, "grayscale", f32([]int{1, 1, 3}, HWC, 1, 0, 0), 0))[0], 1e-7)
}

func TestResizeExact(t *testing.T) {
	// Upscale: bilinear between pixel centres, edges clamped.
	require.Equal(t, u8(1, 4, 1, 0, 64, 191, 255), apply(t, "resize=4x1", u8(1, 2, 1, 0, 255), 0))
	// Downscale by 2: a triangle of half-width 2 input pixels (antialiased).
	// Output 0 is centred on input 1.0: weights .75 .75 .25 over inputs 0..2.
	require.Equal(t, u8(1, 2, 1, 71, 209), apply(t, "resize=2x1", u8(1, 4, 1, 0, 100, 200, 255), 0))
	// Vertical works like horizontal.
	require.Equal(t, u8(4, 1, 1, 0, 64, 191, 255), apply(t, "resize=1x4", u8(2, 1, 1, 0, 255), 0))
	// Same size copies.
	in := u8(3, 2, 3, photo(2, 3, 3, 2)...)
	require.Equal(t, in, apply(t, "resize=2x3", in, 0))
}

func TestResizeShapes(t *testing.T) {
	tests := []struct {
		spec      string
		h, w, c   int
		wantShape []int
	}{
		{"resize=256", 300, 400, 3, []int{256, 341, 3}}, // 256*400/300 = 341.3, rounded down
		{"resize=256", 400, 300, 1, []int{341, 256, 1}},
		{"resize=256", 256, 256, 4, []int{256, 256, 4}},
		{"resize=100x50", 31, 17, 3, []int{50, 100, 3}},
		{"resize=7", 13, 1000, 3, []int{7, 538, 3}},
	}
	for _, tt := range tests {
		in := u8(tt.h, tt.w, tt.c, photo(tt.w, tt.h, tt.c, 3)...)
		out := apply(t, tt.spec, in, 0)
		require.Equal(t, tt.wantShape, out.Shape, tt.spec)
		require.Len(t, out.Data, out.Size())
	}
}

// Resizing a smooth gradient gives a smooth gradient: constant rows stay
// exactly constant, and a horizontal ramp stays a monotone ramp close to
// the ideal line, shrinking and growing.
func TestResizeGradient(t *testing.T) {
	const h, w = 40, 120
	in := u8(h, w, 3)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			in.Data = append(in.Data, byte(x*2), 200, byte(x*2))
		}
	}
	for _, tw := range []int{37, 60, 119, 250} {
		out := apply(t, "resize="+strconv.Itoa(tw)+"x23", in, 0)
		for y := 0; y < 23; y++ {
			prev := -1
			for x := 0; x < tw; x++ {
				p := out.Data[(y*tw+x)*3:]
				require.Equal(t, byte(200), p[1], "constant channel")
				require.Equal(t, p[0], p[2])
				require.GreaterOrEqual(t, int(p[0]), prev, "monotone")
				prev = int(p[0])
				ideal := 2 * ((float64(x)+0.5)*float64(w)/float64(tw) - 0.5)
				ideal = max(0, min(2*(w-1), ideal))
				margin := 1.5
				if x == 0 || x == tw-1 {
					margin = 2 * float64(w) / float64(tw) // edge clamping
				}
				require.InDelta(t, ideal, float64(p[0]), margin, "x=%d of %d", x, tw)
			}
		}
	}
}

func TestRandomCropDeterministic(t *testing.T) {
	const h, w = 16, 16
	in := u8(h, w, 1)
	for i := 0; i < h*w; i++ {
		in.Data = append(in.Data, byte(i)) // value = 16*y + x
	}
	seen := map[byte]bool{}
	for seed := uint64(0); seed < 50; seed++ {
		a := apply(t, "random_crop=4x3", in, seed)
		require.Equal(t, a, apply(t, "random_crop=4x3", in, seed), "same seed, same crop")
		require.Equal(t, []int{3, 4, 1}, a.Shape)
		top, left := int(a.Data[0])/16, int(a.Data[0])%16
		require.LessOrEqual(t, top, h-3)
		require.LessOrEqual(t, left, w-4)
		for y := 0; y < 3; y++ {
			for x := 0; x < 4; x++ {
				require.Equal(t, byte((top+y)*16+left+x), a.Data[y*4+x])
			}
		}
		// The draws are documented: top, then left, each uniform.
		r := rand.New(rand.NewPCG(seed, 0))
		require.Equal(t, r.IntN(h-3+1), top)
		require.Equal(t, r.IntN(w-4+1), left)
		seen[a.Data[0]] = true
	}
	require.Greater(t, len(seen), 20, "offsets vary with the seed")
}

func TestRandomFlipDeterministic(t *testing.T) {
	in := u8(1, 2, 1, 1, 2)
	flipped := 0
	for seed := uint64(0); seed < 200; seed++ {
		a := apply(t, "flip", in, seed)
		require.Equal(t, a, apply(t, "flip", in, seed))
		r := rand.New(rand.NewPCG(seed, 0))
		if r.Float64() < 0.5 {
			require.Equal(t, []byte{2, 1}, a.Data)
			flipped++
		} else {
			require.Equal(t, []byte{1, 2}, a.Data)
		}
	}
	require.InDelta(t, 100, flipped, 30)
}

func TestRandomResizedCrop(t *testing.T) {
	in := u8(60, 80, 3, photo(80, 60, 3, 4)...)
	seen := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		a := apply(t, "random_resized_crop=32x24", in, seed)
		require.Equal(t, []int{24, 32, 3}, a.Shape)
		require.Equal(t, a, apply(t, "random_resized_crop=32x24", in, seed))
		seen[string(a.Data)] = true
	}
	require.Greater(t, len(seen), 15)

	// The crop region follows torchvision's rules.
	s := rrcStep{w: 10, h: 10, scale: defaultScale, ratio: defaultRatio}
	for seed := uint64(0); seed < 1000; seed++ {
		top, left, ch, cw := s.region(60, 80, rand.New(rand.NewPCG(seed, 0)))
		require.True(t, top >= 0 && left >= 0 && ch > 0 && cw > 0 && top+ch <= 60 && left+cw <= 80)
		area := float64(ch*cw) / (60 * 80)
		require.True(t, area >= 0.07 && area <= 1.01, "area %v", area)
	}
	// A ratio no crop can meet falls back to the centre, clamped to it.
	s = rrcStep{w: 10, h: 10, scale: [2]float64{1, 1}, ratio: [2]float64{10, 20}}
	top, left, ch, cw := s.region(60, 80, rand.New(rand.NewPCG(1, 0)))
	require.Equal(t, [4]int{26, 0, 8, 80}, [4]int{top, left, ch, cw}) // h = round(80/10)

	// A constant image stays constant.
	flat := u8(50, 70, 1)
	for range 50 * 70 {
		flat.Data = append(flat.Data, 77)
	}
	a := apply(t, "random_resized_crop=13", flat, 9)
	for _, v := range a.Data {
		require.Equal(t, byte(77), v)
	}
}

// resize fused with the crop after it computes only the kept pixels, with
// exactly the values of the separate steps, and the same rng draws.
func TestResizeCropFusedMatchesSteps(t *testing.T) {
	for _, sz := range [][3]int{{300, 200, 3}, {97, 131, 1}, {64, 64, 4}, {500, 375, 3}, {256, 300, 3}} {
		w, h, c := sz[0], sz[1], sz[2]
		in := u8(h, w, c, photo(w, h, c, uint64(w))...)
		for _, pair := range [][2]string{
			{"resize=64", "center_crop=56"}, {"resize=256", "center_crop=224"}, {"resize=256", "random_crop=200x150"},
			{"resize=80x40", "center_crop=33x21"}, {"resize=" + strconv.Itoa(min(w, h)), "center_crop=31"},
		} {
			spec := pair[0] + "," + pair[1]
			p, err := Parse(spec)
			require.NoError(t, err)
			require.IsType(t, resizeCrop{}, p.plan[0])
			for seed := uint64(0); seed < 3; seed++ {
				want := apply(t, pair[1], apply(t, pair[0], in, 0), seed)
				require.Equal(t, want, apply(t, spec, in, seed), "%s on %v", spec, in.Shape)
			}
		}
	}
	// Errors still name the step that failed and its own input.
	p, err := Parse("resize=10,center_crop=20")
	require.NoError(t, err)
	_, err = p.Apply(u8(20, 40, 1, make([]byte, 800)...), nil, nil)
	require.ErrorIs(t, err, ErrInput)
	require.Contains(t, err.Error(), "transform center_crop=20x20 on uint8 [10 20 1] hwc: the image (20x10) is smaller than the 20x20 crop")
	_, _, err = p.OutShape([]int{20, 40, 1})
	require.Contains(t, err.Error(), "transform center_crop=20x20 on uint8 [10 20 1] hwc")
}
