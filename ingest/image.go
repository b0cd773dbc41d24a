package ingest

import (
	"fmt"
	"path"
	"slices"
	"strings"

	// Register the decoders of the other formats image columns accept; png
	// and jpeg come with the imaging package.
	_ "image/gif"

	_ "golang.org/x/image/bmp"
	_ "golang.org/x/image/tiff"
	_ "golang.org/x/image/webp"

	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/schema"
)

// imageExts are the file extensions (lower case, with the dot) read as
// images.
var imageExts = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".bmp": true,
	".webp": true, ".tif": true, ".tiff": true,
}

// isImageFile reports whether name has an image extension.
func isImageFile(name string) bool {
	return imageExts[strings.ToLower(path.Ext(name))]
}

// imageColumn returns the schema of an image column as o asks for it.
func (o *Options) imageColumn(name string) schema.Column {
	c := schema.Column{Name: name, Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, -1}}
	switch o.ImageCompression {
	case "", CompressPNG:
		c.SampleCompression = schema.PNG
	case CompressJPEG:
		c.SampleCompression = schema.JPEG
	case CompressLZ4:
		c.ChunkCompression = schema.LZ4
	case CompressZstd:
		c.ChunkCompression = schema.Zstd
	case CompressNone:
		c.ChunkCompression = schema.CodecNone
	}
	if o.Resize.Width > 0 {
		c.Shape[0], c.Shape[1] = o.Resize.Height, o.Resize.Width
	}
	if o.Channels > 0 {
		c.Shape[2] = o.Channels
	}
	return c
}

// imageConverter turns encoded image files into samples of one image column.
// It is safe for concurrent use.
type imageConverter struct {
	col        *schema.Column
	target     schema.SampleCompression // png, jpeg or none (pixels)
	quality    int
	resize     Size
	channels   int
	validation string // Options.ImageValidation
}

func newImageConverter(c *schema.Column, o *Options) *imageConverter {
	return &imageConverter{col: c, target: c.SampleCompression, quality: o.JPEGQuality, resize: o.Resize,
		channels: o.Channels, validation: o.ImageValidation}
}

// convert decodes data (the file name, for errors) and returns the sample
// to store: data itself when it already has the column's sample
// compression and needs no change, re-encoded or raw pixels otherwise.
// Undecodable data gives an error wrapping ErrBadImage, as does an image
// larger than the decode limit (checked from its header before it is
// decoded; the error matches loch.ErrTooLarge too); an image whose
// shape the column does not accept, one wrapping ErrInvalidSource.
func (ic *imageConverter) convert(name string, data []byte) (loch.Sample, error) {
	s, err := ic.sample(name, data)
	if err != nil {
		return s, err
	}
	if err := ic.col.CheckSample(s.Shape, nil); err != nil {
		return loch.Sample{}, fmt.Errorf("%s: %w: %w", name, ErrInvalidSource, err)
	}
	return s, nil
}

func (ic *imageConverter) sample(name string, data []byte) (loch.Sample, error) {
	if s, ok, err := ic.keep(name, data); ok || err != nil {
		return s, err
	}
	format, cshape, err := imaging.Config(data)
	if err != nil {
		return loch.Sample{}, fmt.Errorf("%w: %s: %w", ErrBadImage, name, err)
	}
	// Decode fully: a truncated file must fail here, not in the middle of
	// a training run.
	pix, shape, err := imaging.Decode(data)
	if err != nil {
		if _, ierr := imaging.Inspect(data); ierr != nil && format != "webp" {
			return loch.Sample{}, fmt.Errorf("%w: %s: %w (%s)", ErrBadImage, name, err, strings.TrimPrefix(ierr.Error(), "decode image: "))
		}
		return loch.Sample{}, fmt.Errorf("%w: %s: %w", ErrBadImage, name, err)
	}
	channels := ic.channels
	if channels == 0 {
		channels = shape[2]
	}
	if ic.target == schema.JPEG && channels == 4 {
		channels = 3
	}
	resize := ic.resize.Width > 0 && (ic.resize.Width != shape[1] || ic.resize.Height != shape[0])
	// The bytes are kept only when the shape their header announces is the
	// decoded one: readers check that too. (keep took the files it could
	// prove so without decoding.)
	if !resize && channels == shape[2] && string(ic.target) == format && slices.Equal(cshape, shape) {
		return loch.Encoded(ic.target, data, shape), nil
	}
	if channels != shape[2] {
		out := make([]byte, shape[0]*shape[1]*channels)
		if err := imaging.ConvertChannels(out, pix, shape[2], channels); err != nil {
			return loch.Sample{}, fmt.Errorf("%s: %w", name, err)
		}
		pix, shape = out, []int{shape[0], shape[1], channels}
	}
	if resize {
		th, tw := ic.resize.Height, ic.resize.Width
		out := make([]byte, th*tw*shape[2])
		if err := imaging.Resize(out, pix, shape[0], shape[1], th, tw, shape[2], imaging.CatmullRom); err != nil {
			return loch.Sample{}, fmt.Errorf("resize %s: %w", name, err)
		}
		pix, shape = out, []int{th, tw, shape[2]}
	}
	if ic.target == schema.SampleNone {
		return loch.Tensor(shape, pix), nil
	}
	enc, err := imaging.Encode(string(ic.target), pix, shape, ic.quality)
	if err != nil {
		return loch.Sample{}, fmt.Errorf("encode %s: %w", name, err)
	}
	return loch.Encoded(ic.target, enc, shape), nil
}

// keep returns data as the sample when it is kept byte for byte (its
// format is the column's, no resize or channel conversion) and Inspect
// proves its header and structure sound and that the header settles the
// decoded shape for every reader (Exact). ValidateFull, and ValidateSample
// for its share, then decode it too (imaging.Validate: a JPEG at 1/8
// scale, every coefficient still entropy-decoded). ok is false when the
// file goes the way of converted files, a full decode that decides: a file
// Inspect doubts, any file converted.
func (ic *imageConverter) keep(name string, data []byte) (s loch.Sample, ok bool, err error) {
	if ic.target != schema.PNG && ic.target != schema.JPEG {
		return s, false, nil
	}
	h, err := imaging.Inspect(data)
	if err != nil || !h.Exact || h.Format != string(ic.target) ||
		(ic.resize.Width > 0 && (ic.resize.Width != h.Width || ic.resize.Height != h.Height)) ||
		(ic.channels != 0 && ic.channels != h.Channels) {
		return s, false, nil
	}
	// What no reader could decode is not kept either.
	if err := imaging.CheckSize(h.Format, h.Height, h.Width, h.Channels); err != nil {
		return s, false, fmt.Errorf("%w: %s: %w", ErrBadImage, name, err)
	}
	if ic.validation == ValidateFull || (ic.validation != ValidateHeader && sampled(data)) {
		if err := imaging.Validate(data, h); err != nil {
			return s, false, fmt.Errorf("%w: %s: %w", ErrBadImage, name, err)
		}
	}
	return loch.Encoded(ic.target, data, []int{h.Height, h.Width, h.Channels}), true, nil
}

// sampled reports whether ValidateSample decodes a kept file: one in
// SampleEvery, by a hash of its bytes.
func sampled(data []byte) bool { return xxh3.Hash(data)%SampleEvery == 0 }
