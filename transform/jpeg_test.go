package transform

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

func jpegImage(data []byte, shape []int) Image {
	return Image{Encoded: "jpeg", Shape: shape, DType: schema.Uint8, Data: data}
}

var jpegSizes = [][2]int{{1, 1}, {7, 5}, {17, 33}, {224, 224}, {257, 131}, {512, 512}}

// Decoding JPEGs that Go's encoder wrote gives Go's own decode within a
// few levels. Grayscale differs only by the IDCT. In colour, libjpeg-turbo
// also upsamples chroma smoothly (as Pillow and torchvision) where Go
// repeats each chroma sample, which moves pixels at sharp colour changes by
// more: on tiny images with fast colour swings, up to 25 levels. The IDCT
// alone is checked in colour by TestTurboIDCTMatchesStdlib.
func TestDecodeJPEGMatchesStdlib(t *testing.T) {
	for _, c := range []int{1, 3} {
		for _, sz := range jpegSizes {
			w, h := sz[0], sz[1]
			t.Run(fmt.Sprintf("%dx%dx%d", w, h, c), func(t *testing.T) {
				data := encodeJPEG(t, photo(w, h, c, uint64(w*h)), w, h, c, 90)
				want := stdDecode(t, data, c)
				for _, shape := range [][]int{nil, {h, w, c}} {
					out := apply(t, "decode", jpegImage(data, shape), 0)
					require.Equal(t, []int{h, w, c}, out.Shape)
					maxd, mean := diff(want, out.Data)
					t.Logf("turbo=%v: max diff %d, mean %.3f", TurboJPEG, maxd, mean)
					switch {
					case c == 1:
						require.LessOrEqual(t, maxd, 2)
						require.Less(t, mean, 0.5)
					case w*h >= 64*64:
						require.LessOrEqual(t, maxd, 12)
						require.Less(t, mean, 1.0)
					default:
						require.LessOrEqual(t, maxd, 32)
						require.Less(t, mean, 8.0)
					}
				}
			})
		}
	}
}

// decode converts to the declared channel count.
func TestDecodeJPEGChannels(t *testing.T) {
	const w, h = 37, 21
	colour := encodeJPEG(t, photo(w, h, 3, 1), w, h, 3, 90)
	gray := encodeJPEG(t, photo(w, h, 1, 2), w, h, 1, 90)

	rgb := apply(t, "decode", jpegImage(colour, []int{h, w, 3}), 0)
	rgba := apply(t, "decode", jpegImage(colour, []int{h, w, 4}), 0)
	require.Equal(t, []int{h, w, 4}, rgba.Shape)
	for i := 0; i < w*h; i++ {
		require.Equal(t, rgb.Data[3*i:3*i+3], rgba.Data[4*i:4*i+3])
		require.Equal(t, byte(255), rgba.Data[4*i+3], "opaque alpha")
	}
	luma := apply(t, "decode", jpegImage(colour, []int{h, w, 1}), 0)
	maxd, mean := diff(stdDecode(t, colour, 1), luma.Data)
	require.LessOrEqual(t, maxd, 3)
	require.Less(t, mean, 1.0)

	g1 := apply(t, "decode", jpegImage(gray, nil), 0)
	require.Equal(t, []int{h, w, 1}, g1.Shape, "a grayscale file decodes to 1 channel")
	g3 := apply(t, "decode", jpegImage(gray, []int{h, w, 3}), 0)
	for i := 0; i < w*h; i++ {
		require.Equal(t, []byte{g1.Data[i], g1.Data[i], g1.Data[i]}, g3.Data[3*i:3*i+3])
	}
}

// Before a resize, decode shrinks in the DCT domain by the largest of 1/2,
// 1/4, 1/8 that keeps the image at least as large as the resize target.
func TestDecodeScaleChoice(t *testing.T) {
	tests := []struct {
		w, h   int
		resize Step
		denom  int
	}{
		{512, 512, ResizeShorter(256), 2},
		{512, 512, ResizeShorter(257), 1},
		{512, 512, ResizeShorter(100), 4},
		{512, 512, ResizeShorter(64), 8},
		{2000, 1500, ResizeShorter(256), 4},
		{500, 375, ResizeShorter(256), 1},
		{257, 131, ResizeShorter(64), 2}, // 131/2 rounds up to 66 >= 64; 257/2 -> 129 >= 125
		{640, 480, Resize(320, 240), 2},
		{640, 480, Resize(321, 240), 1},
		{640, 480, Resize(100, 20), 4},
	}
	for _, tt := range tests {
		data := encodeJPEG(t, make([]byte, tt.w*tt.h), tt.w, tt.h, 1, 50)
		r := tt.resize.(resizeStep)
		_, _, _, denom, err := decodeStep{then: &r}.header(jpegImage(data, nil))
		require.NoError(t, err)
		if !TurboJPEG {
			tt.denom = 1
		}
		require.Equal(t, tt.denom, denom, "%dx%d then %s", tt.w, tt.h, tt.resize)
	}
}

// The shrunk decode never changes the size that the resize after it makes,
// even where halving rounds up (a shorter-side resize keeps the aspect
// ratio of the full image).
func TestDecodeScaleKeepsResizeSize(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	chosen := map[int]int{}
	for range 20000 {
		h, w := 1+r.IntN(3000), 1+r.IntN(3000)
		for _, rs := range []resizeStep{{size{s: 1 + r.IntN(400)}}, {size{w: 1 + r.IntN(400), h: 1 + r.IntN(400)}}} {
			d := decodeStep{then: &rs}.scale(h, w)
			chosen[d]++
			th, tw := rs.target(h, w)
			sh, sw := scaled(h, d), scaled(w, d)
			require.True(t, d == 1 || (sh >= th && sw >= tw), "%dx%d at 1/%d is smaller than %dx%d", w, h, d, tw, th)
			h2, w2 := rs.target(sh, sw)
			require.Equal(t, [2]int{th, tw}, [2]int{h2, w2}, "%dx%d at 1/%d then %s", w, h, d, rs)
		}
	}
	t.Logf("scales chosen: %v", chosen)
	require.Len(t, chosen, 4)
}

func TestDecodeScaled(t *testing.T) {
	const w, h = 512, 384
	pix := photo(w, h, 3, 5)
	data := encodeJPEG(t, pix, w, h, 3, 90)
	p, err := Parse("decode,resize=100")
	require.NoError(t, err)
	dec, err := p.plan[0].Out(jpegImage(data, nil))
	require.NoError(t, err)
	out := apply(t, "decode,resize=100", jpegImage(data, nil), 0)
	require.Equal(t, []int{100, 133, 3}, out.Shape)
	if !TurboJPEG {
		require.Equal(t, []int{h, w, 3}, dec.Shape)
		return
	}
	require.Equal(t, []int{h / 2, w / 2, 3}, dec.Shape)
	half, err := New(p.plan[0])
	require.NoError(t, err)
	got, err := half.Apply(jpegImage(data, nil), nil, nil)
	require.NoError(t, err)
	// A 1/2 DCT-domain decode is close to a 2x2 box average of the full
	// decode.
	full := stdDecode(t, data, 3)
	box := make([]byte, 0, len(got.Data))
	for y := 0; y < h/2; y++ {
		for x := 0; x < w/2; x++ {
			for k := 0; k < 3; k++ {
				s := 0
				for _, o := range [][2]int{{0, 0}, {0, 1}, {1, 0}, {1, 1}} {
					s += int(full[((2*y+o[0])*w+2*x+o[1])*3+k])
				}
				box = append(box, byte((s+2)/4))
			}
		}
	}
	maxd, mean := diff(box, got.Data)
	t.Logf("1/2 DCT decode vs 2x2 box of the full decode: max diff %d, mean %.3f", maxd, mean)
	require.Less(t, mean, 2.0)
	require.LessOrEqual(t, maxd, 24)

	// decode=full does not shrink, and the result is as large.
	fullOut := apply(t, "decode=full,resize=100", jpegImage(data, nil), 0)
	require.Equal(t, out.Shape, fullOut.Shape)
	_, mean = diff(out.Data, fullOut.Data)
	require.Less(t, mean, 2.0)
}

func TestDecodePNG(t *testing.T) {
	for _, c := range []int{1, 3, 4} {
		pix := photo(13, 9, c, uint64(c))
		data := mustPNG(t, pix, []int{9, 13, c})
		for _, shape := range [][]int{nil, {9, 13, c}} {
			out := apply(t, "decode", Image{Encoded: "png", Shape: shape, Data: data}, 0)
			require.Equal(t, u8(9, 13, c, pix...), out)
		}
	}
	// An opaque 4-channel tensor stored as png decodes back to 4 channels.
	pix := bytes.Repeat([]byte{1, 2, 3, 255}, 6)
	data := mustPNG(t, pix, []int{2, 3, 4})
	require.Equal(t, u8(2, 3, 4, pix...), apply(t, "decode", Image{Encoded: "png", Shape: []int{2, 3, 4}, Data: data}, 0))
}

func TestDecodeErrors(t *testing.T) {
	data := encodeJPEG(t, photo(20, 10, 3, 1), 20, 10, 3, 90)
	p, err := Parse("decode")
	require.NoError(t, err)
	good, err := p.Apply(jpegImage(data, nil), nil, nil)
	require.NoError(t, err)
	// A failure leaves no trace on later images (libjpeg-turbo handles
	// that have failed are not reused).
	defer func() {
		again, err := p.Apply(jpegImage(data, nil), nil, nil)
		require.NoError(t, err)
		require.Equal(t, good, again)
	}()
	bad := func(t *testing.T, in Image, msg string) {
		t.Helper()
		_, err := p.Apply(in, nil, nil)
		require.ErrorIs(t, err, ErrDecode)
		require.Contains(t, err.Error(), msg)
		_, err = p.Out(in)
		require.ErrorIs(t, err, ErrDecode)
	}
	bad(t, jpegImage(data, []int{10, 10, 3}), "transform decode on jpeg [10 10 3]: decode image: jpeg is 20x10, declared shape [10 10 3]")
	bad(t, jpegImage([]byte("not a jpeg at all"), nil), "decode image")
	bad(t, Image{Encoded: "png", Data: data}, "declared png, the data is jpeg")
	bad(t, jpegImage(mustPNG(t, make([]byte, 3), []int{1, 1, 3}), nil), "decode image")

	// A header whose decode is more than the decode limit is refused
	// before any allocation: patch the SOF0 frame size to 65000x65000.
	huge := append([]byte(nil), data...)
	sof := bytes.Index(huge, []byte{0xFF, 0xC0})
	require.Positive(t, sof)
	huge[sof+5], huge[sof+6], huge[sof+7], huge[sof+8] = 0xFD, 0xE8, 0xFD, 0xE8
	for _, in := range []Image{jpegImage(huge, nil), jpegImage(huge, []int{65000, 65000, 3})} {
		for _, step := range []func(Image) error{
			func(in Image) error { _, err := p.Apply(in, nil, nil); return err },
			func(in Image) error { _, err := p.Out(in); return err },
		} {
			err := step(in)
			require.ErrorIs(t, err, ErrTooLarge)
			require.NotErrorIs(t, err, ErrDecode)
			require.ErrorContains(t, err, "jpeg image of 65000x65000 pixels, 3 channels: 12675000000 bytes, more than the decode limit of 536870912 bytes")
		}
	}

	// Every truncation is an error, not a crash or a half-grey image.
	for n := 0; n < len(data); n++ {
		_, err := p.Apply(jpegImage(data[:n], nil), nil, nil)
		require.ErrorIs(t, err, ErrDecode, "truncated to %d of %d bytes", n, len(data))
		_, err = p.Apply(jpegImage(data[:n], []int{10, 20, 3}), nil, nil)
		require.Error(t, err, "truncated to %d of %d bytes", n, len(data))
	}
	_, err = p.Apply(jpegImage(data[:len(data)-40], []int{10, 20, 3}), nil, nil)
	t.Logf("a jpeg truncated in its scan: %v", err)

	// Corrupt bytes anywhere: an error or an image, never a crash.
	r := rand.New(rand.NewPCG(1, 1))
	big := encodeJPEG(t, photo(64, 48, 3, 2), 64, 48, 3, 90)
	for range 2000 {
		c := append([]byte(nil), big...)
		for range 1 + r.IntN(4) {
			c[r.IntN(len(c))] = byte(r.Uint32())
		}
		out, err := p.Apply(jpegImage(c, nil), nil, nil)
		if err == nil {
			require.Len(t, out.Data, out.Size())
		}
	}
}

// FuzzDecodeJPEG: any bytes, decoded at full size or shrunk, give an error
// (ErrDecode, or ErrTooLarge for a header that declares more than the
// decode limit) or an image of the size its shape says; never a crash.
func FuzzDecodeJPEG(f *testing.F) {
	for i, sz := range [][3]int{{8, 8, 1}, {16, 9, 3}, {33, 17, 3}, {1, 1, 3}} {
		w, h, c := sz[0], sz[1], sz[2]
		data := encodeJPEG(f, photo(w, h, c, uint64(i)), w, h, c, 30+20*i)
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(data[:len(data)-2]) // no EOI
	}
	f.Add([]byte{})
	f.Add([]byte{0xFF, 0xD8, 0xFF})
	pipelines := make([]Pipeline, 0, 3)
	for _, spec := range []string{"decode", "decode,resize=4", "decode,resize=3x2"} {
		p, err := Parse(spec)
		require.NoError(f, err)
		pipelines = append(pipelines, p)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, p := range pipelines {
			out, err := p.Apply(jpegImage(data, nil), nil, nil)
			if err != nil {
				if !errors.Is(err, ErrTooLarge) {
					require.ErrorIs(t, err, ErrDecode)
				}
				continue
			}
			require.Len(t, out.Data, out.Size())
		}
	})
}
