package schema

import "github.com/lochdata/loch/internal/base"

// Media reports whether a sample compression keeps media container bytes
// (video or audio, docs/format.md §3.2).
func (s SampleCompression) Media() bool {
	return s == VideoCompression || s == AudioCompression
}

// checkMediaCompression checks the kind and dtype of a column with video or
// audio sample compression: video is a uint8 video column
// [frames, height, width, 3], audio a float32 audio column
// [samples, channels]. Other columns pass.
func (c *Column) checkMediaCompression() error {
	switch c.SampleCompression {
	case VideoCompression:
		if c.Kind != Video || c.DType != Uint8 {
			return base.Markf(ErrInvalid, "column %q: video compression needs a uint8 video column, got %s %s", c.Name, c.Kind, c.DType)
		}
	case AudioCompression:
		if c.Kind != Audio || c.DType != Float32 {
			return base.Markf(ErrInvalid, "column %q: audio compression needs a float32 audio column, got %s %s", c.Name, c.Kind, c.DType)
		}
		if len(c.Shape) == 1 {
			return base.Markf(ErrInvalid, "column %q: audio compression decodes to [samples, channels], the declared shape is %s", c.Name, FormatShape(c.Shape))
		}
	}
	return nil
}
