package transform

// Temporary: writes imaging/testdata/bilinear.golden from resample, the
// bilinear resize transform had, before it is deleted.

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging/imagingtest"
)

func TestWriteBilinearGolden(t *testing.T) {
	if os.Getenv("WRITE_GOLDEN") == "" {
		t.Skip()
	}
	var b strings.Builder
	b.WriteString("# Bilinear resizes pinned to the pixels transform's resample gave before imaging.Resize.\n")
	b.WriteString("# src: h w c (noise|photo) seed; region x0 y0 w h; to th tw; window ox oy ow oh; sha256 of the output\n")
	rng := rand.New(rand.NewPCG(2024, 9))
	fixed := [][5]int{{224, 224, 3, 256, 256}, {375, 500, 3, 256, 341}, {500, 375, 3, 341, 256}, {5, 3, 1, 1, 1}, {1, 1, 4, 5, 3}, {64, 64, 4, 7, 200}}
	for i := range 200 {
		var h, w, c, th, tw int
		if i < len(fixed) {
			h, w, c, th, tw = fixed[i][0], fixed[i][1], fixed[i][2], fixed[i][3], fixed[i][4]
		} else {
			h, w, c = 1+rng.IntN(120), 1+rng.IntN(120), 1+rng.IntN(4)
			th, tw = 1+rng.IntN(150), 1+rng.IntN(150)
		}
		kind, seed := "noise", rng.Uint64()
		src := imagingtest.Noise(h*w*c, seed)
		if i%2 == 1 {
			kind, src = "photo", imagingtest.Photo(w, h, c, seed)
		}
		x0, y0, rw, rh := 0, 0, w, h
		ox, oy, ow, oh := 0, 0, tw, th
		if i >= len(fixed) && rng.IntN(2) == 0 {
			x0, y0 = rng.IntN(w), rng.IntN(h)
			rw, rh = 1+rng.IntN(w-x0), 1+rng.IntN(h-y0)
		}
		if i >= len(fixed) && rng.IntN(2) == 0 {
			ox, oy = rng.IntN(tw), rng.IntN(th)
			ow, oh = 1+rng.IntN(tw-ox), 1+rng.IntN(th-oy)
		}
		out := make([]byte, ow*oh*c)
		resample(out, tw, th, ox, oy, ow, oh, src, w*c, x0, y0, rw, rh, c)
		fmt.Fprintf(&b, "%d %d %d %s %d  %d %d %d %d  %d %d  %d %d %d %d  %x\n", h, w, c, kind, seed, x0, y0, rw, rh, th, tw, ox, oy, ow, oh, sha256.Sum256(out))
	}
	require.NoError(t, os.MkdirAll("../imaging/testdata", 0o755))
	require.NoError(t, os.WriteFile("../imaging/testdata/bilinear.golden", []byte(b.String()), 0o644))
}
