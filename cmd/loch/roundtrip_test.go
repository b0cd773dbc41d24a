package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/imaging"
)

// TestIngestShowPixelExact ingests a folder of png images (RGB, gray and
// RGBA with transparency) with lossless storage, then writes every row back
// with `loch show --out`: the pixels equal the source's, for png kept as
// sample compression and for images decoded into lz4 tensors.
func TestIngestShowPixelExact(t *testing.T) {
	src := t.TempDir()
	var files []string
	for i := 0; i < 12; i++ {
		class := fmt.Sprintf("c%d", i%3)
		require.NoError(t, os.MkdirAll(filepath.Join(src, class), 0o755))
		var img image.Image
		r := image.Rect(0, 0, 7+i, 5+i%4)
		switch i % 3 {
		case 0:
			m := image.NewRGBA(r)
			for k := range m.Pix {
				m.Pix[k] = byte(k * (i + 3))
				if k%4 == 3 {
					m.Pix[k] = 255
				}
			}
			img = m
		case 1:
			m := image.NewGray(r)
			for k := range m.Pix {
				m.Pix[k] = byte(k * 7)
			}
			img = m
		case 2:
			m := image.NewNRGBA(r)
			for y := r.Min.Y; y < r.Max.Y; y++ {
				for x := r.Min.X; x < r.Max.X; x++ {
					m.SetNRGBA(x, y, color.NRGBA{uint8(x * 20), uint8(y * 30), uint8(x + y), uint8(40 * x)})
				}
			}
			img = m
		}
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, img))
		p := filepath.Join(src, class, fmt.Sprintf("%03d.png", i))
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		files = append(files, p)
	}
	sort.Strings(files) // the ingest order: class folder, then file name
	for _, comp := range []string{"png", "lz4"} {
		t.Run(comp, func(t *testing.T) {
			ds := filepath.Join(t.TempDir(), "ds")
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"ingest", "imagefolder", src, ds, "--image-compression", comp}, nil, &out, &errb)
			require.Equal(t, 0, code, errb.String())
			for row, f := range files {
				dir := t.TempDir()
				out.Reset()
				code := run(context.Background(), []string{"show", ds, "--row", fmt.Sprint(row), "--column", "image", "--out", dir}, nil, &out, &errb)
				require.Equal(t, 0, code, errb.String())
				srcBytes, err := os.ReadFile(f)
				require.NoError(t, err)
				wantPix, wantShape, err := imaging.Decode(srcBytes)
				require.NoError(t, err)
				got, err := os.ReadFile(filepath.Join(dir, "image.png"))
				require.NoError(t, err)
				gotPix, gotShape, err := imaging.DecodeAs(got, wantShape[2])
				require.NoError(t, err)
				require.Equal(t, wantShape, gotShape, "row %d (%s)", row, f)
				require.True(t, bytes.Equal(wantPix, gotPix), "row %d (%s): pixels differ", row, f)
			}
		})
	}
}
