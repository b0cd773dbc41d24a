package imaging_test

import (
	"fmt"
	"image"

	"github.com/lochdata/loch/imaging"
)

// Resize a 2x2 gray image to 4x1 with the transforms' kernel, then compute
// only the middle two pixels of that result.
func ExampleResize() {
	src := []byte{
		0, 255,
		0, 255,
	}
	dst := make([]byte, 4)
	if err := imaging.Resize(dst, src, 2, 2, 1, 4, 1, imaging.Bilinear); err != nil {
		panic(err)
	}
	fmt.Println(dst)
	mid := make([]byte, 2)
	win := imaging.Region{Dst: image.Rect(1, 0, 3, 1)}
	if err := imaging.ResizeRegion(mid, src, 2, 2, 1, 4, 1, imaging.Bilinear, win); err != nil {
		panic(err)
	}
	fmt.Println(mid)
	// Output:
	// [0 64 191 255]
	// [64 191]
}

// Convert RGB pixels to gray and to RGBA.
func ExampleConvertChannels() {
	rgb := []byte{255, 0, 0, 10, 20, 30}
	gray := make([]byte, 2)
	rgba := make([]byte, 8)
	if err := imaging.ConvertChannels(gray, rgb, 3, 1); err != nil {
		panic(err)
	}
	if err := imaging.ConvertChannels(rgba, rgb, 3, 4); err != nil {
		panic(err)
	}
	fmt.Println(gray, rgba)
	// Output: [76 18] [255 0 0 255 10 20 30 255]
}
