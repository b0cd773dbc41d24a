package ingest

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
)

// ErrBadMedia marks a video or audio file that cannot be demuxed or
// decoded (truncated, corrupt, an unsupported codec, no stream of the
// kind, no samples). Options.SkipBad skips the rows holding one.
var ErrBadMedia = errors.New("undecodable media")

// Media file extensions, by the sample compression that keeps them.
var (
	videoExts = map[string]bool{".mp4": true, ".m4v": true, ".mov": true, ".webm": true, ".mkv": true, ".avi": true}
	audioExts = map[string]bool{".wav": true, ".flac": true, ".mp3": true, ".ogg": true, ".opus": true, ".m4a": true}
)

// mediaKind returns the sample compression of a media file by its
// extension, or "" for another file.
func mediaKind(name string) schema.SampleCompression {
	ext := strings.ToLower(path.Ext(name))
	switch {
	case videoExts[ext]:
		return schema.VideoCompression
	case audioExts[ext]:
		return schema.AudioCompression
	}
	return ""
}

// MediaColumn is the schema of a video or audio column that keeps files
// as they are (docs/format.md §3.2): kind video, uint8
// [frames, height, width, 3], or kind audio, float32 [samples, channels].
func MediaColumn(name string, kind schema.SampleCompression) schema.Column {
	if kind == schema.VideoCompression {
		return schema.Column{Name: name, Kind: schema.Video, DType: schema.Uint8, Shape: schema.Shape{-1, -1, -1, 3}, SampleCompression: kind}
	}
	return schema.Column{Name: name, Kind: schema.Audio, DType: schema.Float32, Shape: schema.Shape{-1, -1}, SampleCompression: kind}
}

// mediaSample probes a media file (so that a bad one is named, and skipped
// with SkipBad, before staging) and returns it as a sample kept as is.
func mediaSample(name string, kind schema.SampleCompression, data []byte) (loch.Sample, error) {
	var in media.Info
	var err error
	if kind == schema.VideoCompression {
		in, err = media.ProbeVideoBytes(data)
	} else {
		in, err = media.ProbeAudioBytes(data)
	}
	if errors.Is(err, media.ErrNoFFmpeg) {
		return loch.Sample{}, fmt.Errorf("%s: %w", name, err)
	}
	if err != nil {
		return loch.Sample{}, fmt.Errorf("%s: %w: not a readable %s file (%d bytes): %w", name, ErrBadMedia, kind, len(data), err)
	}
	s := loch.Media(kind, data)
	s.Shape = in.Shape()
	return s, nil
}

// ReadMedia reads the media file ref (a path, relative to base, a
// directory path or URL, or a URL) and probes it: the sample of a column
// of sample compression kind that keeps the file as it is. A file that
// cannot be read fails naming it; one FFmpeg cannot demux or decode is
// ErrBadMedia, naming it (a row to skip with SkipBad).
func ReadMedia(ctx context.Context, base, ref string, kind schema.SampleCompression) (loch.Sample, error) {
	ref = resolve(base, ref)
	data, err := readAll(ctx, ref)
	if err != nil {
		return loch.Sample{}, err
	}
	return mediaSample(ref, kind, data)
}

// MediaFolder ingests a classification tree of video or audio files, as
// ImageFolder does images: src/<class>/<file>, a local directory or a
// store URL. kind is schema.VideoCompression (mp4, m4v, mov, webm, mkv,
// avi) or schema.AudioCompression (wav, flac, mp3, ogg, opus, m4a). Each
// file becomes one row of two columns:
//
//	video  kind video, uint8 [frames, height, width, 3], the file kept as is
//	       (or audio: kind audio, float32 [samples, channels])
//	label  kind class_label, int64: the index of the class folder
//
// Each file is probed (FFmpeg) for its shape, codec and rate; one that
// cannot be read fails the ingest naming it, or with SkipBad is skipped
// and counted.
func MediaFolder(ctx context.Context, src, url string, kind schema.SampleCompression, o Options) (Result, error) {
	files := fileKind{"video", videoExts}
	col := "video"
	if kind == schema.AudioCompression {
		files, col = fileKind{"audio", audioExts}, "audio"
	} else if kind != schema.VideoCompression {
		return Result{}, fmt.Errorf("media folder %s: kind %q, want video or audio: %w", src, kind, ErrInvalidSource)
	}
	return classFolder(ctx, src, url, col+"folder", files, o, MediaColumn(col, kind),
		func(schema.Column, *Options) func(name string, data []byte) (loch.Sample, error) {
			return func(name string, data []byte) (loch.Sample, error) { return mediaSample(name, kind, data) }
		})
}

// mediaFields returns the names of the media fields of a kind ("" for
// all), sorted.
func (o *Options) mediaFields(kind schema.SampleCompression) []string {
	var out []string
	for f, k := range o.MediaFields {
		if kind == "" || k == kind {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
