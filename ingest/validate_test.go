package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
)

// badScan makes a JPEG whose structure is sound but that no decoder
// reads: the middle of its entropy-coded data is overwritten with 0xfe
// bytes, which are no Huffman code. A COM segment holding tag comes first,
// to vary the bytes (and so whether ValidateSample decodes the file).
func badScan(t *testing.T, good []byte, tag int) []byte {
	t.Helper()
	i := bytes.Index(good, []byte{0xff, 0xda})
	require.Positive(t, i)
	start := i + 2 + int(good[i+2])<<8 + int(good[i+3])
	end := bytes.LastIndex(good, []byte{0xff, 0xd9})
	bad := bytes.Clone(good)
	for k := start + (end-start)/3; k < start+2*(end-start)/3; k++ {
		bad[k] = 0xfe
	}
	com := fmt.Appendf(nil, "tag %d", tag)
	seg := append([]byte{0xff, 0xfe, 0, byte(len(com) + 2)}, com...)
	return append(append(bytes.Clone(bad[:2]), seg...), bad[2:]...)
}

// undecodable returns a badScan JPEG that ValidateSample decodes (want
// true) or does not.
func undecodable(t *testing.T, good []byte, want bool) []byte {
	t.Helper()
	for tag := range 100 * SampleEvery {
		if b := badScan(t, good, tag); sampled(b) == want {
			return b
		}
	}
	t.Fatal("no tag gives the sample wanted")
	return nil
}

// validationFolder writes a folder of 40 JPEGs and one more, extra, at
// cat/zz.jpg; it returns the folder and the extra file's path.
func validationFolder(t *testing.T, extra []byte) (root, path string) {
	root = t.TempDir()
	for i := range 40 {
		writeFile(t, filepath.Join(root, []string{"cat", "dog"}[i%2], fmt.Sprintf("%02d.jpg", i)),
			encodeJPEG(t, testImage(uint64(i), 16+i, 9, 3)))
	}
	path = filepath.Join(root, "cat", "zz.jpg")
	writeFile(t, path, extra)
	return root, path
}

// Kept JPEGs are proven by their structure; a decode comes only with
// ValidateFull, or for the share ValidateSample picks: a file sound in
// structure that no decoder reads is refused by full always, by sample
// only when it is picked, by header never (the price of not decoding).
func TestImageValidationDecodesWhatItSays(t *testing.T) {
	ctx := context.Background()
	good := encodeJPEG(t, testImage(99, 24, 16, 3))
	_, _, err := imaging.Decode(good)
	require.NoError(t, err)
	h, err := imaging.Inspect(badScan(t, good, 0))
	require.NoError(t, err)
	require.True(t, h.Exact)
	_, _, err = imaging.Decode(badScan(t, good, 0))
	require.ErrorIs(t, err, imaging.ErrDecode)
	for _, picked := range []bool{false, true} {
		root, bad := validationFolder(t, undecodable(t, good, picked))
		for _, v := range []string{ValidateHeader, ValidateSample, "", ValidateFull} {
			url := memURL(t)
			res, err := ImageFolder(ctx, root, url, Options{ImageCompression: CompressJPEG, ImageValidation: v})
			refused := v == ValidateFull || (picked && v != ValidateHeader)
			if !refused {
				require.NoError(t, err, "validation %q, picked %v", v, picked)
				require.EqualValues(t, 41, res.Rows)
				continue
			}
			require.ErrorIs(t, err, ErrBadImage, "validation %q, picked %v", v, picked)
			require.ErrorContains(t, err, bad)
			require.ErrorContains(t, err, "decode image")
			require.EqualValues(t, 0, openDataset(t, url).Len(), "nothing is committed")
		}
	}
}

// What every mode refuses, without a decode: a JPEG cut short or a PNG
// with a changed byte. The error names the file and says what the
// structure lacks; with SkipBad the row is skipped.
func TestImageValidationRefusesBrokenStructure(t *testing.T) {
	ctx := context.Background()
	jpg := encodeJPEG(t, testImage(5, 30, 20, 3))
	png := encodePNG(t, testImage(6, 30, 20, 3))
	flipped := bytes.Clone(png)
	flipped[len(png)/2] ^= 4
	cases := []struct {
		data []byte
		why  string
	}{
		{jpg[:len(jpg)*2/3], "the file ends before its EOI marker"},
		{flipped, "fails its CRC-32 check"},
	}
	for _, c := range cases {
		root, bad := validationFolder(t, c.data)
		for _, v := range []string{ValidateHeader, ValidateSample, ValidateFull} {
			comp := map[bool]string{true: CompressPNG, false: CompressJPEG}[c.data[0] == 0x89]
			_, err := ImageFolder(ctx, root, memURL(t), Options{ImageCompression: comp, ImageValidation: v})
			require.ErrorIs(t, err, ErrBadImage, v)
			require.ErrorContains(t, err, bad)
			require.ErrorContains(t, err, c.why, v)
			res, err := ImageFolder(ctx, root, memURL(t), Options{ImageCompression: comp, ImageValidation: v, SkipBad: true})
			require.NoError(t, err)
			require.Equal(t, []string{bad}, res.SkippedNames)
		}
	}
}

// Kept files are stored byte for byte with the shape a decode gives,
// whatever the validation: real files of every kind (Pillow's progressive,
// restart-marker, 4:4:4, gray and CMYK JPEGs; PNGs of every colour type).
// A gray PNG with a tRNS chunk decodes with alpha its header does not
// announce: it is converted, never kept.
func TestImageValidationKeepsRealFiles(t *testing.T) {
	ctx := context.Background()
	for _, comp := range []string{CompressJPEG, CompressPNG} {
		ext := map[string]string{CompressJPEG: ".jpg", CompressPNG: ".png"}[comp]
		files, err := filepath.Glob("../imaging/testdata/inspect/*" + ext)
		require.NoError(t, err)
		require.GreaterOrEqual(t, len(files), 6)
		root := t.TempDir()
		for _, f := range files {
			writeFile(t, filepath.Join(root, "c", filepath.Base(f)), readTestFile(t, f))
		}
		for _, v := range []string{ValidateHeader, ValidateSample, ValidateFull} {
			url := memURL(t)
			_, err := ImageFolder(ctx, root, url, Options{ImageCompression: comp, ImageValidation: v})
			require.NoError(t, err)
			tree, err := listFolder(ctx, root, imageFiles)
			require.NoError(t, err)
			enc := column(t, openDataset(t, url), "image", true)
			for i, f := range tree.files {
				name := tree.name(f)
				require.Equal(t, filepath.Join(root, "c", f.base), name)
				data := readTestFile(t, name)
				_, shape := decoded(t, data)
				require.Equal(t, shape, enc[i].Shape, "%s, %s", v, name)
				require.Equal(t, f.base != "gray-trns.png", bytes.Equal(data, enc[i].Data), "%s, %s kept", v, name)
			}
		}
	}
}

func TestImageValidationOption(t *testing.T) {
	err := Options{ImageValidation: "most"}.Validate()
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, `image validation "most" (want sample, header or full)`)
}

// Jobs take consecutive files, at most maxGroupFiles and maxGroupBytes
// (one file alone when it is bigger), every file once, in order.
func TestGroupFiles(t *testing.T) {
	var files []folderFile
	for i, size := range []int64{10, maxGroupBytes + 1, 5, 5} {
		files = append(files, folderFile{base: fmt.Sprint(i), size: size})
	}
	for range 2 * maxGroupFiles {
		files = append(files, folderFile{size: 1})
	}
	var sizes []int
	var all []folderFile
	for g := range groupFiles(files) {
		sizes = append(sizes, len(g))
		all = append(all, g...)
	}
	require.Equal(t, files, all)
	require.Equal(t, []int{1, 1, maxGroupFiles, maxGroupFiles, 2}, sizes)
}

// readLocal reads what the file holds, whatever size the listing said: a
// file that grew or shrank since is read whole; a missing one names itself.
func TestReadLocalSizeIsAHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat([]byte("loch"), 5000)
	writeFile(t, path, data)
	for _, size := range []int64{-1, 0, 7, int64(len(data)), 1 << 20} {
		got, err := readLocal(path, size)
		require.NoError(t, err)
		require.Equal(t, data, got, "size %d", size)
	}
	_, err := readLocal(path+"x", 10)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "read "+path+"x: no such file or directory")
	_, err = readLocal(filepath.Dir(path), 10)
	require.ErrorContains(t, err, "is a directory")
}
