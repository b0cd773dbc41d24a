package imaging

import (
	"bytes"
	"image"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	_ "golang.org/x/image/webp" // the reference decoder of the webp files
)

// inspectFiles are real files of each kind (written by Pillow, which
// libjpeg, libpng and libwebp encode for): testdata/inspect/*.
func inspectFiles(t testing.TB) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob("testdata/inspect/*")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	files := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		files[filepath.Base(p)] = data
	}
	return files
}

// What Inspect reads from the header is what a decode gives: the size and
// the channels of Decode (of image.DecodeConfig for webp), exactly when
// Exact says so.
func TestInspectMatchesDecode(t *testing.T) {
	notExact := map[string]bool{"gray-trns.png": true, "lossy.webp": true, "lossless.webp": true, "alpha.webp": true}
	for name, data := range inspectFiles(t) {
		h, err := Inspect(data)
		require.NoError(t, err, name)
		require.Equal(t, map[string]string{".jpg": "jpeg", ".png": "png", ".webp": "webp"}[filepath.Ext(name)], h.Format, name)
		require.Equal(t, !notExact[name], h.Exact, name)
		require.Equal(t, []int{23, 37}, []int{h.Height, h.Width}, name)
		if h.Format == "webp" {
			cfg, _, err := image.DecodeConfig(bytes.NewReader(data))
			require.NoError(t, err, name)
			require.Equal(t, []int{cfg.Height, cfg.Width}, []int{h.Height, h.Width}, name)
			continue
		}
		_, shape, err := Decode(data)
		require.NoError(t, err, name)
		if h.Exact {
			require.Equal(t, shape, []int{h.Height, h.Width, h.Channels}, name)
			_, cshape, err := Config(data)
			require.NoError(t, err, name)
			require.Equal(t, cshape, shape, name)
		} else {
			require.NotEqual(t, shape[2], h.Channels, "%s: not exact, yet the header tells the channels", name)
		}
	}
}

// Every variant the tests rely on is there: progressive and restart
// markers in the JPEGs, a 4-component CMYK frame, a VP8X WebP.
func TestInspectFilesCoverVariants(t *testing.T) {
	files := inspectFiles(t)
	require.Contains(t, string(files["progressive.jpg"]), "\xff\xc2")
	require.Contains(t, string(files["restart.jpg"]), "\xff\xdd")
	require.Contains(t, string(files["restart.jpg"]), "\xff\xd1")
	require.Contains(t, string(files["alpha.webp"]), "VP8X")
	h, err := Inspect(files["cmyk.jpg"])
	require.NoError(t, err)
	require.Equal(t, 3, h.Channels)
	h, err = Inspect(files["gray.jpg"])
	require.NoError(t, err)
	require.Equal(t, 1, h.Channels)
}

// Every strict prefix of every file fails: a truncated file is found
// without decoding it. So does a JPEG or PNG whose tail was overwritten
// with zeros (a download preallocated and cut short).
func TestInspectTruncated(t *testing.T) {
	for name, data := range inspectFiles(t) {
		for n := range len(data) {
			_, err := Inspect(data[:n])
			require.ErrorIs(t, err, ErrDecode, "%s cut to %d of %d bytes", name, n, len(data))
		}
		if filepath.Ext(name) == ".webp" {
			continue // the VP8 data has no structure to check: webp is always decoded
		}
		zeroed := bytes.Clone(data)
		clear(zeroed[len(zeroed)*3/4:])
		_, err := Inspect(zeroed)
		require.ErrorIs(t, err, ErrDecode, "%s with its last quarter zeroed", name)
	}
	_, err := Inspect(nil)
	require.ErrorContains(t, err, "not a jpeg, png or webp file")
}

// A PNG's CRCs catch any change to any byte.
func TestInspectPNGCatchesEveryFlip(t *testing.T) {
	for name, data := range inspectFiles(t) {
		if filepath.Ext(name) != ".png" {
			continue
		}
		for i := range data {
			bad := bytes.Clone(data)
			bad[i] ^= 0x10
			_, err := Inspect(bad)
			require.ErrorIs(t, err, ErrDecode, "%s with byte %d changed", name, i)
		}
	}
}

// Errors say what is wrong and where.
func TestInspectErrors(t *testing.T) {
	files := inspectFiles(t)
	jpg := files["baseline.jpg"]
	cases := map[string][]byte{
		"the file ends before its EOI marker": jpg[:len(jpg)-2],
		"where a marker should start":         append(bytes.Clone(jpg[:2]), 0, 0, 0),
		"a scan before the frame header":      append([]byte{0xff, 0xd8, 0xff, 0xda, 0, 8, 1, 1, 0, 0, 63, 0}, jpg[2:]...),
		"restart marker 1 where 0 was due":    swapRST(t, files["restart.jpg"]),
		"fails its CRC-32 check":              flip(files["rgb.png"], 40),
		"IEND before any IDAT chunk":          pngWithout(t, files["rgb.png"], "IDAT"),
		"the RIFF header declares":            files["lossy.webp"][:40],
	}
	for want, data := range cases {
		_, err := Inspect(data)
		require.ErrorIs(t, err, ErrDecode, want)
		require.ErrorContains(t, err, want)
	}
}

// An arithmetic-coded or 12-bit JPEG, one whose scan uses a Huffman table
// no DHT defines, one with a subsampling image/jpeg refuses, is well
// formed but not Exact: only a decode says whether a reader can read it.
func TestInspectJPEGVariantsNotExact(t *testing.T) {
	jpg := inspectFiles(t)["baseline.jpg"]
	i := bytes.Index(jpg, []byte{0xff, 0xc0})
	require.Positive(t, i)
	arith := bytes.Clone(jpg)
	arith[i+1] = 0xc9
	twelve := bytes.Clone(jpg)
	twelve[i+4] = 12
	thirds := bytes.Clone(jpg)
	thirds[i+11] = 0x31 // the first component sampled 3x1
	noTable := bytes.Clone(jpg)
	k := bytes.Index(jpg, []byte{0xff, 0xda})
	noTable[k+6] = 0x33 // DC and AC tables from slot 3, which no DHT fills
	h, err := Inspect(jpg)
	require.NoError(t, err)
	require.True(t, h.Exact)
	for _, data := range [][]byte{arith, twelve, thirds, noTable} {
		h, err := Inspect(data)
		require.NoError(t, err)
		require.False(t, h.Exact)
	}
}

func flip(data []byte, i int) []byte {
	b := bytes.Clone(data)
	b[i] ^= 1
	return b
}

// swapRST makes the first restart marker of a JPEG RST1 instead of RST0.
func swapRST(t *testing.T, data []byte) []byte {
	i := bytes.Index(data, []byte{0xff, 0xd0})
	require.Positive(t, i)
	return flip(data, i+1)
}

// pngWithout drops every chunk of type typ from a PNG.
func pngWithout(t *testing.T, data []byte, typ string) []byte {
	out := bytes.Clone(data[:8])
	for pos := 8; pos < len(data); {
		n := int(be32(data[pos:]))
		if string(data[pos+4:pos+8]) != typ {
			out = append(out, data[pos:pos+12+n]...)
		}
		pos += 12 + n
	}
	require.Less(t, len(out), len(data))
	return out
}

// FuzzInspect: Inspect never panics; what it accepts has a size and 1, 3
// or 4 channels; and an Exact JPEG or PNG that decodes decodes to the
// shape Inspect read, and passes Validate.
func FuzzInspect(f *testing.F) {
	for _, data := range inspectFiles(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Inspect(data)
		if err != nil {
			require.ErrorIs(t, err, ErrDecode)
			return
		}
		require.Positive(t, h.Height)
		require.Positive(t, h.Width)
		require.Contains(t, []int{1, 3, 4}, h.Channels)
		if !h.Exact || h.Format == "webp" || h.Height*h.Width > 1<<16 {
			return
		}
		if _, shape, err := Decode(data); err == nil {
			require.Equal(t, []int{h.Height, h.Width, h.Channels}, shape)
			require.NoError(t, Validate(data, h), "a file that decodes validates")
		}
	})
}

// Validate passes every real file, and though it decodes JPEGs at 1/8
// scale it judges damage inside the entropy-coded data as a full decode
// does: damage to the first scan fails both, progressive files included;
// damage to the last scan (of a progressive file, refinement bits that
// any value fits) the same way for both.
func TestValidate(t *testing.T) {
	for name, data := range inspectFiles(t) {
		h, err := Inspect(data)
		require.NoError(t, err)
		if !h.Exact {
			continue
		}
		require.NoError(t, Validate(data, h), name)
		if h.Format != "jpeg" {
			continue
		}
		for _, first := range []bool{true, false} {
			bad := damageScan(data, first)
			hb, err := Inspect(bad)
			require.NoError(t, err, name)
			_, _, derr := Decode(bad)
			verr := Validate(bad, hb)
			if first {
				require.ErrorIs(t, verr, ErrDecode, name)
			}
			require.Equal(t, derr == nil, verr == nil, "%s, first scan %v: decode says %v, validate %v", name, first, derr, verr)
		}
	}
}

// damageScan overwrites the second half of a JPEG's first or last scan's
// entropy-coded data with 0xfe bytes, which are no Huffman code.
func damageScan(data []byte, first bool) []byte {
	sos := bytes.LastIndex(data, []byte{0xff, 0xda})
	if first {
		sos = bytes.Index(data, []byte{0xff, 0xda})
	}
	start := sos + 2 + be16(data[sos+2:])
	end := start
	for end < len(data)-1 && (data[end] != 0xff || data[end+1] == 0 || data[end+1]&0xf8 == 0xd0) {
		end++
	}
	bad := bytes.Clone(data)
	for k := (start + end) / 2; k < end; k++ {
		if bad[k] != 0xff && (k == 0 || bad[k-1] != 0xff) {
			bad[k] = 0xfe
		}
	}
	return bad
}
