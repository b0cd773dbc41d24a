package transform

// Temporary: resample (the bilinear resize transform had) against
// imaging.ResizeRegion's Bilinear, before resample is deleted.

import (
	"image"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging"
)

func TestImagingBilinearMatchesResample(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 400 {
		h, w, c := 1+rng.IntN(120), 1+rng.IntN(120), 1+rng.IntN(4)
		th, tw := 1+rng.IntN(150), 1+rng.IntN(150)
		src := make([]byte, h*w*c)
		if rng.IntN(2) == 0 {
			for i := range src {
				src[i] = byte(rng.Uint32())
			}
		} else if c == 1 || c == 3 {
			src = photo(w, h, c, rng.Uint64())
		}
		// A source region and an output window, or the whole of each.
		x0, y0, rw, rh := 0, 0, w, h
		ox, oy, ow, oh := 0, 0, tw, th
		if rng.IntN(2) == 0 {
			x0, y0 = rng.IntN(w), rng.IntN(h)
			rw, rh = 1+rng.IntN(w-x0), 1+rng.IntN(h-y0)
		}
		if rng.IntN(2) == 0 {
			ox, oy = rng.IntN(tw), rng.IntN(th)
			ow, oh = 1+rng.IntN(tw-ox), 1+rng.IntN(th-oy)
		}
		want := make([]byte, ow*oh*c)
		resample(want, tw, th, ox, oy, ow, oh, src, w*c, x0, y0, rw, rh, c)
		got := make([]byte, ow*oh*c)
		r := imaging.Region{Src: image.Rect(x0, y0, x0+rw, y0+rh), Dst: image.Rect(ox, oy, ox+ow, oy+oh)}
		require.NoError(t, imaging.ResizeRegion(got, src, h, w, th, tw, c, imaging.Bilinear, r))
		require.Equal(t, want, got, "%dx%dx%d region %v to %dx%d window %v", w, h, c, r.Src, tw, th, r.Dst)
	}
}
