package transform

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	tests := []struct {
		spec  string
		steps []Step
		str   string // canonical form, when it differs from spec
	}{
		{"", nil, ""},
		{"decode", []Step{Decode()}, ""},
		{"decode=full", []Step{FullDecode()}, ""},
		{"resize=256", []Step{ResizeShorter(256)}, ""},
		{"resize=320x240", []Step{Resize(320, 240)}, ""},
		{"resize = 320 x 240", []Step{Resize(320, 240)}, "resize=320x240"},
		{"center_crop=224", []Step{CenterCrop(224, 224)}, "center_crop=224x224"},
		{"center_crop=224x200", []Step{CenterCrop(224, 200)}, ""},
		{"random_crop=32", []Step{RandomCrop(32, 32)}, "random_crop=32x32"},
		{"random_resized_crop=224", []Step{RandomResizedCrop(224, 224, [2]float64{}, [2]float64{})}, "random_resized_crop=224x224"},
		{"random_resized_crop=224x192:scale=0.25-1:ratio=0.5-2", []Step{RandomResizedCrop(224, 192, [2]float64{0.25, 1}, [2]float64{0.5, 2})}, ""},
		{"random_resized_crop=64:ratio=1-1", []Step{RandomResizedCrop(64, 64, defaultScale, [2]float64{1, 1})}, "random_resized_crop=64x64:ratio=1-1"},
		{"flip", []Step{Flip(0.5)}, ""},
		{"flip=0.25", []Step{Flip(0.25)}, ""},
		{"hflip", []Step{HFlip()}, ""},
		{"to_float", []Step{ToFloat()}, ""},
		{"normalize=imagenet", []Step{mustPreset(t, "imagenet")}, ""},
		{"normalize=clip", []Step{mustPreset(t, "clip")}, ""},
		{"normalize=0.5/0.25", []Step{Normalize([]float32{0.5}, []float32{0.25})}, ""},
		{"normalize=0.485:0.456:0.406/0.229:0.224:0.225", []Step{Normalize([]float32{0.485, 0.456, 0.406}, []float32{0.229, 0.224, 0.225})}, ""},
		{"chw", []Step{ToCHW()}, ""},
		{"grayscale", []Step{Grayscale()}, ""},
		{"rgb", []Step{RGB()}, ""},
		{
			"decode, resize=256, center_crop=224, flip, to_float, normalize=imagenet, chw",
			[]Step{Decode(), ResizeShorter(256), CenterCrop(224, 224), Flip(0.5), ToFloat(), mustPreset(t, "imagenet"), ToCHW()},
			"decode,resize=256,center_crop=224x224,flip,to_float,normalize=imagenet,chw",
		},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			p, err := Parse(tt.spec)
			require.NoError(t, err)
			require.Equal(t, tt.steps, p.Steps())
			want := tt.str
			if want == "" {
				want = tt.spec
			}
			require.Equal(t, want, p.String())
			again, err := Parse(p.String())
			require.NoError(t, err)
			require.Equal(t, p.Steps(), again.Steps(), "String reads back")
		})
	}
}

func TestParseBlank(t *testing.T) {
	p, err := Parse(" \t ")
	require.NoError(t, err)
	require.Empty(t, p.Steps())
	require.Equal(t, "", p.String())
}

func mustPreset(t *testing.T, name string) Step {
	s, err := NormalizePreset(name)
	require.NoError(t, err)
	return s
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ spec, msg string }{
		{"decode,,chw", `step 2 "": empty step`},
		{"decode,", `step 2 "": empty step`},
		{"blur=3", `step 1 "blur=3": unknown step "blur" (want one of decode, resize,`},
		{"decode=fast", `decode takes no argument or "full"`},
		{"resize", `resize needs an argument: resize=S or WxH`},
		{"resize=", `resize needs an argument`},
		{"resize=abc", `size "abc", want N or WxH with positive integers`},
		{"resize=0", `size "0" out of range`},
		{"resize=-3x4", `size "-3x4" out of range`},
		{"resize=10x", `size "10x", want N or WxH`},
		{"center_crop=99999", `out of range 1 to 65536`},
		{"random_crop", `random_crop needs an argument`},
		{"random_resized_crop=224:scale=0-1", `scale [0 1], want 0 < LO <= HI <= 1`},
		{"random_resized_crop=224:scale=0.5", `scale "0.5", want LO-HI`},
		{"random_resized_crop=224:ratio=2-1", `ratio [2 1], want 0 < LO <= HI`},
		{"random_resized_crop=224:size=1-2", `unknown option "size"`},
		{"random_resized_crop=224:scale=0.5-1:scale=0.5-1", `scale given twice`},
		{"flip=2", `flip probability "2", want a number in [0, 1]`},
		{"flip=NaN", `flip probability "NaN"`},
		{"hflip=1", `hflip takes no argument`},
		{"to_float=1", `to_float takes no argument`},
		{"chw=x", `chw takes no argument`},
		{"normalize", `normalize needs an argument`},
		{"normalize=coco", `normalize "coco", want imagenet, clip or MEAN/STD`},
		{"normalize=0.5:0.5/0.5", `2 mean and 1 std values`},
		{"normalize=0.5/0", `std [0], want no zero`},
		{"normalize=a/1", `mean: "a" is not a number`},
		{"normalize=1/1:x", `std: "x" is not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			_, err := Parse(tt.spec)
			require.Error(t, err)
			require.True(t, errors.Is(err, ErrSpec), "%v", err)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestNewValidates(t *testing.T) {
	for _, s := range []Step{Resize(0, 3), CenterCrop(3, -1), Flip(1.5), Normalize(nil, nil), Normalize([]float32{1}, []float32{0}),
		RandomResizedCrop(4, 4, [2]float64{0.5, 0.1}, defaultRatio), nil} {
		_, err := New(s)
		require.ErrorIs(t, err, ErrSpec)
	}
	_, err := NormalizePreset("nope")
	require.ErrorIs(t, err, ErrSpec)
}

// FuzzParse: Parse never panics, and what it accepts it prints in a form
// it reads back to the same steps.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw",
		"random_resized_crop=224x192:scale=0.25-1:ratio=0.5-2,flip=0.3",
		"normalize=0.5:0.25/1:2", "resize=3x4,grayscale,rgb,hflip", "decode=full", "",
		"clip=16:stride=2:start=3:size=128x96:random_crop=112:float", "clip=8:fps=5:crop=64x48",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := Parse(spec)
		if err != nil {
			require.ErrorIs(t, err, ErrSpec)
			return
		}
		again, err := Parse(p.String())
		require.NoError(t, err, "spec %q printed as %q", spec, p.String())
		require.Equal(t, p.String(), again.String())
	})
}
