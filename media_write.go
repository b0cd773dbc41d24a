package loch

import (
	"slices"
	"strings"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
)

// Media returns a sample holding a media file's bytes (mp4, webm, wav,
// flac, mp3, ...) for a column of sample compression video or audio
// (docs/format.md §3.2). The writer probes the bytes (FFmpeg) for their
// decoded shape and media entry and stores them unchanged.
func Media(kind schema.SampleCompression, data []byte) Sample {
	return Sample{Data: data, Encoding: kind}
}

// prepareMedia probes a media sample for a video or audio column: the bytes
// are stored as they are, with the decoded shape and the media entry the
// probe finds.
func prepareMedia(c *schema.Column, s Sample) (prepared, error) {
	if s.Encoding != c.SampleCompression {
		have := string(s.Encoding)
		if have == "" {
			have = "a tensor"
		}
		return prepared{}, invalidf("column %q stores %s files as they are; the sample is %s (make it with loch.Media)", c.Name, c.SampleCompression, have)
	}
	var in media.Info
	var err error
	if c.SampleCompression == schema.VideoCompression {
		in, err = media.ProbeVideoBytes(s.Data)
	} else {
		in, err = media.ProbeAudioBytes(s.Data)
	}
	if err != nil {
		return prepared{}, invalidf("column %q: %s sample of %d bytes: %v", c.Name, c.SampleCompression, len(s.Data), err)
	}
	shape := in.Shape()
	if s.Shape != nil && !equalShape(s.Shape, shape) {
		return prepared{}, invalidf("column %q: the %s decodes to shape %v, the sample says %v", c.Name, c.SampleCompression, shape, s.Shape)
	}
	if err := c.CheckSample(shape, nil); err != nil {
		return prepared{}, invalidf("%v", err)
	}
	raw := int64(schema.NumElements(shape)) * int64(c.DType.Size())
	return prepared{shape: shape, data: s.Data, raw: raw, media: mediaEntry(in)}, nil
}

// mediaEntry is the chunk media table entry of a probed sample.
func mediaEntry(in media.Info) chunk.Media {
	m := chunk.Media{Container: containerName(in.Container), Codec: in.Codec}
	if m.Container == "mkv" && slices.Contains([]string{"vp8", "vp9", "av1", "opus", "vorbis"}, in.Codec) {
		m.Container = "webm" // FFmpeg's one demuxer reads both
	}
	if in.SampleRate > 0 {
		m.RateNum, m.RateDen = uint32(in.SampleRate), 1
	} else {
		m.RateNum, m.RateDen = uint32(in.FPSNum), uint32(in.FPSDen)
	}
	return m
}

// containerName shortens FFmpeg's demuxer names ("mov,mp4,m4a,3gp,3g2,mj2",
// "matroska,webm") to the format's 8-byte container field: "mp4", "mkv",
// else the first name (mediaEntry makes matroska with web codecs "webm").
func containerName(demuxer string) string {
	switch {
	case strings.HasPrefix(demuxer, "mov,"):
		return "mp4"
	case strings.HasPrefix(demuxer, "matroska"):
		return "mkv"
	}
	name, _, _ := strings.Cut(demuxer, ",")
	if len(name) > 8 {
		name = name[:8]
	}
	return name
}
