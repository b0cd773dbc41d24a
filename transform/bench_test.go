package transform

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"testing"

	"golang.org/x/image/draw"

	"github.com/lochdata/loch/imaging"
)

// Benchmarks print their baselines in the same run as sibling
// sub-benchmarks. MB/s counts decoded pixel bytes (width x height x 3 of
// the source image), so every line of one size counts the same bytes.
//
//	stdlib      image/jpeg's Decode alone (to its YCbCr image, no conversion)
//	stdlib-hwc  imaging.Decode: image/jpeg plus conversion to HWC RGB bytes,
//	            what the noturbojpeg build does
//	loch        the decode step (libjpeg-turbo unless built with noturbojpeg)

var benchPhotos = [][2]int{{224, 224}, {512, 512}, {500, 375}}

func benchJPEG(b testing.TB, w, h int) []byte {
	return encodeJPEG(b, photo(w, h, 3, uint64(w*h)), w, h, 3, 90)
}

func BenchmarkDecodeJPEG(b *testing.B) {
	for _, sz := range benchPhotos {
		w, h := sz[0], sz[1]
		data := benchJPEG(b, w, h)
		pixels := int64(w * h * 3)
		b.Run(fmt.Sprintf("%dx%d/stdlib", w, h), func(b *testing.B) {
			b.SetBytes(pixels)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jpeg.Decode(bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dx%d/stdlib-hwc", w, h), func(b *testing.B) {
			b.SetBytes(pixels)
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := imaging.Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dx%d/loch", w, h), func(b *testing.B) {
			p, err := Parse("decode")
			if err != nil {
				b.Fatal(err)
			}
			in := jpegImage(data, []int{h, w, 3})
			dst := make([]byte, pixels)
			b.SetBytes(pixels)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Apply(in, nil, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipeline: the ImageNet evaluation pipeline per image, into a
// recycled batch slot, beside the same work done with the standard library
// and golang.org/x/image (imaging.Decode, xImageResize, then crop,
// normalise and transpose in plain loops), and beside decode alone.
func BenchmarkPipeline(b *testing.B) {
	const spec = "decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw"
	for _, sz := range benchPhotos {
		w, h := sz[0], sz[1]
		data := benchJPEG(b, w, h)
		in := jpegImage(data, []int{h, w, 3})
		pixels := int64(w * h * 3)
		for _, variant := range []struct{ name, spec string }{
			{"loch", spec},
			{"loch-decode=full", "decode=full" + spec[len("decode"):]},
			{"decode-only", "decode"},
		} {
			b.Run(fmt.Sprintf("%dx%d/%s", w, h, variant.name), func(b *testing.B) {
				p, err := Parse(variant.spec)
				if err != nil {
					b.Fatal(err)
				}
				dst := make([]byte, max(3*224*224*4, int(pixels)))
				b.SetBytes(pixels)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := p.Apply(in, nil, dst); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(fmt.Sprintf("%dx%d/stdlib", w, h), func(b *testing.B) {
			dst := make([]float32, 3*224*224)
			mean, std := presets["imagenet"][0], presets["imagenet"][1]
			b.SetBytes(pixels)
			b.ReportAllocs()
			for b.Loop() {
				pix, shape, err := imaging.Decode(data)
				if err != nil {
					b.Fatal(err)
				}
				th, tw := ResizeShorter(256).(resizeStep).target(shape[0], shape[1])
				pix, shape = xImageResize(b, pix, shape, tw, th)
				top, left := (shape[0]-224)/2, (shape[1]-224)/2
				for y := 0; y < 224; y++ {
					for x := 0; x < 224; x++ {
						p := pix[((top+y)*shape[1]+left+x)*3:]
						for c := 0; c < 3; c++ {
							dst[(c*224+y)*224+x] = (float32(p[c])/255 - mean[c]) / std[c]
						}
					}
				}
			}
		})
	}
}

// BenchmarkResize: resize=256 of uint8 RGB pixels (up from 224x224, down
// from 500x375 and 1024x768) beside golang.org/x/image's Catmull-Rom
// (xImageResize) to the same size. MB/s counts the source pixel bytes.
func BenchmarkResize(b *testing.B) {
	for _, sz := range [][2]int{{224, 224}, {500, 375}, {1024, 768}} {
		w, h := sz[0], sz[1]
		in := u8(h, w, 3, photo(w, h, 3, 1)...)
		p, err := Parse("resize=256")
		if err != nil {
			b.Fatal(err)
		}
		out, err := p.Out(in)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%dx%d/loch", w, h), func(b *testing.B) {
			dst := make([]byte, out.Size())
			b.SetBytes(int64(len(in.Data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Apply(in, nil, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%dx%d/x-image", w, h), func(b *testing.B) {
			b.SetBytes(int64(len(in.Data)))
			b.ReportAllocs()
			for b.Loop() {
				xImageResize(b, in.Data, in.Shape, out.Shape[1], out.Shape[0])
			}
		})
	}
}

// xImageResize scales HWC pixels to tw x th with golang.org/x/image/draw's
// CatmullRom through image types, as ingest did before imaging.Resize.
func xImageResize(b *testing.B, pix []byte, shape []int, tw, th int) ([]byte, []int) {
	img, err := imaging.ToImage(pix, shape)
	if err != nil {
		b.Fatal(err)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, tw, th))
	draw.CatmullRom.Scale(dst, dst.Bounds(), img, img.Bounds(), draw.Src, nil)
	out := make([]byte, th*tw*shape[2])
	if err := imaging.ConvertChannels(out, dst.Pix, 4, shape[2]); err != nil {
		b.Fatal(err)
	}
	return out, []int{th, tw, shape[2]}
}

// BenchmarkToFloat: to_float,normalize=imagenet,chw on a 224x224 RGB crop
// (one fused pass) beside a plain loop that computes the same into a
// []float32.
func BenchmarkToFloat(b *testing.B) {
	in := u8(224, 224, 3, photo(224, 224, 3, 1)...)
	b.Run("loch", func(b *testing.B) {
		p, err := Parse("to_float,normalize=imagenet,chw")
		if err != nil {
			b.Fatal(err)
		}
		dst := make([]byte, len(in.Data)*4)
		b.SetBytes(int64(len(in.Data)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Apply(in, nil, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("loop", func(b *testing.B) {
		dst := make([]float32, len(in.Data))
		mean, std := presets["imagenet"][0], presets["imagenet"][1]
		b.SetBytes(int64(len(in.Data)))
		for b.Loop() {
			for i := 0; i < 224*224; i++ {
				for c := 0; c < 3; c++ {
					dst[c*224*224+i] = (float32(in.Data[i*3+c])/255 - mean[c]) / std[c]
				}
			}
		}
	})
}
