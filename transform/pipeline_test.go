package transform

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/schema"
)

// OutShape and Out agree with what Apply produces, for pixels and for
// encoded images (where decode may shrink a JPEG in the DCT domain).
func TestOutShapeMatchesApply(t *testing.T) {
	specs := []string{
		"",
		"decode",
		"decode,resize=64",
		"decode,resize=40x30,chw",
		"decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw",
		"decode=full,resize=48,random_crop=32x16,flip,to_float",
		"random_resized_crop=24,hflip,grayscale,to_float,normalize=0.5/0.5",
		"rgb,to_float,chw,normalize=imagenet",
		"grayscale,chw,center_crop=8",
		"decode,to_float,chw,flip,center_crop=10x12",
	}
	inputs := []struct {
		name string
		im   Image
	}{
		{"rgb", u8(90, 130, 3, photo(130, 90, 3, 1)...)},
		{"gray", u8(131, 90, 1, photo(90, 131, 1, 2)...)},
		{"jpeg", Image{Encoded: "jpeg", Shape: []int{300, 200, 3}, DType: schema.Uint8, Data: encodeJPEG(t, photo(200, 300, 3, 3), 200, 300, 3, 90)}},
		{"jpeg without shape", Image{Encoded: "jpeg", Data: encodeJPEG(t, photo(257, 129, 3, 4), 257, 129, 3, 90)}},
		{"png", Image{Encoded: "png", Shape: []int{40, 50, 3}, DType: schema.Uint8, Data: mustPNG(t, photo(50, 40, 3, 5), []int{40, 50, 3})}},
	}
	for _, spec := range specs {
		p, err := Parse(spec)
		require.NoError(t, err)
		for _, in := range inputs {
			t.Run(fmt.Sprintf("%s/%s", spec, in.name), func(t *testing.T) {
				if in.im.Encoded != "" && !contains(p.Steps()[:min(1, len(p.Steps()))], Step(Decode())) && !contains(p.Steps()[:min(1, len(p.Steps()))], Step(FullDecode())) {
					t.Skip("needs decode")
				}
				decoded := in.im.Shape
				if decoded == nil {
					decoded = []int{129, 257, 3}
				}
				out, err := p.Apply(in.im, rand.New(rand.NewPCG(1, 2)), nil)
				desc, outErr := p.Out(in.im)
				shape, dt, shapeErr := p.OutShape(decoded)
				if err != nil { // then all three fail alike
					require.ErrorIs(t, err, ErrInput)
					require.Equal(t, err.Error(), outErr.Error())
					require.Equal(t, err.Error(), shapeErr.Error())
					return
				}
				require.NoError(t, outErr)
				require.NoError(t, shapeErr)
				require.Equal(t, out.Shape, desc.Shape)
				require.Equal(t, out.DType, desc.DType)
				require.Equal(t, out.Layout, desc.Layout)
				require.Nil(t, desc.Data)
				require.Len(t, out.Data, out.Size())
				require.Equal(t, out.Shape, shape)
				require.Equal(t, out.DType, dt)
			})
		}
	}
}

func mustPNG(t testing.TB, pix []byte, shape []int) []byte {
	b, err := imaging.Encode("png", pix, shape, 0)
	require.NoError(t, err)
	return b
}

func TestOutShapeUnknownDims(t *testing.T) {
	tests := []struct {
		spec  string
		in    []int
		shape []int
		dtype schema.DType
	}{
		{"decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw", []int{-1, -1, 3}, []int{3, 224, 224}, schema.Float32},
		{"decode,resize=256", []int{-1, -1, 3}, []int{-1, -1, 3}, schema.Uint8},
		{"decode,resize=256", []int{480, -1, 3}, []int{-1, -1, 3}, schema.Uint8},
		{"decode,resize=300x200,grayscale", []int{-1, -1, 3}, []int{200, 300, 1}, schema.Uint8},
		{"random_resized_crop=64,chw", []int{-1, 500, 4}, []int{4, 64, 64}, schema.Uint8},
		{"center_crop=10,to_float", []int{-1, -1, -1}, []int{10, 10, -1}, schema.Float32},
		{"rgb", []int{-1, -1, -1}, []int{-1, -1, 3}, schema.Uint8},
	}
	for _, tt := range tests {
		p, err := Parse(tt.spec)
		require.NoError(t, err)
		shape, dt, err := p.OutShape(tt.in)
		require.NoError(t, err, tt.spec)
		require.Equal(t, tt.shape, shape, tt.spec)
		require.Equal(t, tt.dtype, dt, tt.spec)
	}
}

// Errors name the step and the input's dtype, shape and layout, and wrap
// ErrInput, both from OutShape and from Apply.
func TestStepErrors(t *testing.T) {
	tests := []struct {
		spec string
		in   Image
		msg  string
	}{
		{"center_crop=224", u8(100, 120, 3, make([]byte, 100*120*3)...),
			"transform center_crop=224x224 on uint8 [100 120 3] hwc: the image (120x100) is smaller than the 224x224 crop"},
		{"normalize=imagenet", u8(2, 2, 3, make([]byte, 12)...),
			"transform normalize=imagenet on uint8 [2 2 3] hwc: want float32 pixels, got uint8: put to_float before normalize"},
		{"to_float,normalize=imagenet", u8(2, 2, 1, make([]byte, 4)...),
			"transform to_float,normalize=imagenet on uint8 [2 2 1] hwc: 3 mean and std values for 1 channels"},
		{"chw,resize=4", u8(2, 2, 3, make([]byte, 12)...),
			"transform resize=4 on uint8 [3 2 2] chw: want hwc layout, got chw"},
		{"to_float,resize=4", u8(2, 2, 3, make([]byte, 12)...),
			"transform resize=4 on float32 [2 2 3] hwc: want uint8 pixels, got float32"},
		{"chw,chw", u8(2, 2, 3, make([]byte, 12)...), "transform chw on uint8 [3 2 2] chw: want hwc layout"},
		{"to_float,to_float", u8(1, 1, 1, 0), "transform to_float on float32 [1 1 1] hwc: want uint8 pixels, got float32"},
		{"flip", Image{Shape: []int{2, 2}, DType: schema.Uint8, Data: make([]byte, 4)}, "want a 3-dimensional image, got shape [2 2]"},
		{"hflip", u8(1, 1, 5, 1, 2, 3, 4, 5), "want height, width >= 1 and 1 to 4 channels, got [1 1 5] hwc"},
		{"grayscale", u8(1, 1, 2, 1, 2), "2 channels (gray and alpha?) are not supported"},
		{"resize=10", Image{Shape: []int{1, 1, 1}, DType: schema.Int16, Data: make([]byte, 2)}, "want uint8 pixels, got int16"},
		{"hflip", Image{Encoded: "jpeg", Data: []byte{1}}, "transform hflip on jpeg (1 bytes): the image is jpeg-encoded: decode it first"},
		{"decode", Image{Encoded: "webp", Data: []byte{1}}, `unknown image encoding "webp"`},
		{"resize=60000", u8(1, 3000, 1, make([]byte, 3000)...), "resizing 3000x1 to 180000000x60000 pixels, 1 channel: 10800000000000 bytes, more than the decode limit of 536870912 bytes"},
		{"decode", Image{Encoded: "png", Shape: []int{2, 2}, Data: []byte{1}}, "transform decode on png [2 2]: declared shape [2 2], want [height, width, 1|3|4]"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			p, err := Parse(tt.spec)
			require.NoError(t, err)
			_, err = p.Apply(tt.in, rand.New(rand.NewPCG(1, 1)), nil)
			require.ErrorIs(t, err, ErrInput)
			require.Contains(t, err.Error(), tt.msg)
			var se *StepError
			require.True(t, errors.As(err, &se))
			require.Nil(t, se.Input.Data)
		})
	}
	// Apply checks the data against the shape before any step.
	p, _ := Parse("hflip")
	_, err := p.Apply(u8(2, 2, 3, 1, 2, 3), nil, nil)
	require.ErrorIs(t, err, ErrInput)
	require.Contains(t, err.Error(), "image of uint8 [2 2 3] hwc has 3 bytes")
	// A random pipeline needs an rng.
	p, _ = Parse("decode,flip")
	_, err = p.Apply(u8(1, 1, 1, 1), nil, nil)
	require.ErrorIs(t, err, ErrInput)
	require.Contains(t, err.Error(), "transform decode,flip is random and needs an rng, got nil")
	require.True(t, p.Random())
	p, _ = Parse("decode,hflip,center_crop=1")
	require.False(t, p.Random())
	_, err = p.Apply(u8(1, 1, 1, 1), nil, nil)
	require.NoError(t, err)
}

// Apply writes into dst when it has room, and never returns memory that it
// keeps or that the input owns.
func TestApplyBuffers(t *testing.T) {
	in := u8(8, 8, 3, photo(8, 8, 3, 1)...)
	p, err := Parse("center_crop=4,to_float,chw")
	require.NoError(t, err)
	dst := make([]byte, 4*4*3*4, 1000)
	out, err := p.Apply(in, nil, dst[:0])
	require.NoError(t, err)
	require.Same(t, &dst[0], &out.Data[0])
	small := make([]byte, 10)
	out2, err := p.Apply(in, nil, small)
	require.NoError(t, err)
	require.NotSame(t, &small[0], &out2.Data[0])
	require.Equal(t, out.Data, out2.Data)

	var empty Pipeline
	same, err := empty.Apply(in, nil, nil)
	require.NoError(t, err)
	require.Equal(t, in, same)
	require.NotSame(t, &in.Data[0], &same.Data[0])

	// Results of one call are not disturbed by the next (scratch is reused).
	q, err := Parse("resize=16,hflip,grayscale")
	require.NoError(t, err)
	a, err := q.Apply(in, nil, nil)
	require.NoError(t, err)
	keep := append([]byte(nil), a.Data...)
	_, err = q.Apply(u8(8, 8, 3, make([]byte, 192)...), nil, nil)
	require.NoError(t, err)
	require.Equal(t, keep, a.Data)
}

// Apply from 8 goroutines at once gives exactly the sequential results
// (run with -race).
func TestConcurrentApply(t *testing.T) {
	jpegs := make([]Image, 6)
	for i := range jpegs {
		w, h := 90+17*i, 70+13*i
		jpegs[i] = Image{Encoded: "jpeg", Data: encodeJPEG(t, photo(w, h, 3, uint64(i)), w, h, 3, 90)}
	}
	specs := []string{
		"decode,resize=64,random_crop=48,flip,to_float,normalize=imagenet,chw",
		"decode,random_resized_crop=40x32,grayscale,hflip",
	}
	for _, spec := range specs {
		p, err := Parse(spec)
		require.NoError(t, err)
		const workers, per = 8, 8
		want := make([][]byte, workers*per)
		run := func(k int, dst []byte) ([]byte, error) {
			out, err := p.Apply(jpegs[k%len(jpegs)], rand.New(rand.NewPCG(uint64(k), 42)), dst)
			return out.Data, err
		}
		for k := range want {
			want[k], err = run(k, nil)
			require.NoError(t, err)
		}
		got := make([][]byte, len(want))
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 0, 1<<16)
				for k := g; k < len(want); k += workers {
					out, err := run(k, buf)
					if err != nil {
						errs[g] = err
						return
					}
					got[k] = append([]byte(nil), out...)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			require.NoError(t, err)
		}
		for k := range want {
			require.Equal(t, want[k], got[k], "%s sample %d", spec, k)
		}
	}
}

func Example() {
	p, err := Parse("decode,resize=256,center_crop=224,flip,to_float,normalize=imagenet,chw")
	if err != nil {
		panic(err)
	}
	shape, dtype, _ := p.OutShape([]int{-1, -1, 3}) // any size of RGB image
	fmt.Println(shape, dtype, p.Random())

	img := Image{Shape: []int{300, 400, 3}, DType: schema.Uint8, Data: make([]byte, 300*400*3)}
	batch := make([]byte, 2*3*224*224*4)
	for i := range 2 {
		rng := rand.New(rand.NewPCG(7, uint64(i))) // per sample: seed, row
		out, err := p.Apply(img, rng, batch[i*3*224*224*4:])
		if err != nil {
			panic(err)
		}
		fmt.Println(out.Shape, out.DType, out.Layout, len(out.Data))
	}
	// Output:
	// [3 224 224] float32 true
	// [3 224 224] float32 chw 602112
	// [3 224 224] float32 chw 602112
}
