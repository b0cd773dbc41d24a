package media

import (
	"bytes"
	"fmt"
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
)

var (
	// ErrDecode marks media bytes that cannot be demuxed or decoded
	// (truncated, corrupt, an unsupported codec, no stream of the kind).
	ErrDecode = base.Mark(base.ErrCorrupt, "cannot decode media", nil)
	// ErrNoFFmpeg is returned by every probe and decode of a build
	// without FFmpeg (no cgo, or the noffmpeg tag).
	ErrNoFFmpeg = base.Mark(base.ErrInvalidArgument,
		"media: this loch was built without FFmpeg (libavformat, libavcodec, libswscale, libswresample): install Debian's libavcodec-dev libavformat-dev libswscale-dev libswresample-dev libavutil-dev (make sysdeps) and rebuild without the noffmpeg tag", nil)
)

// Info is what a probe learns of a media sample without decoding its
// pixels. Video fields are zero for audio and the reverse.
type Info struct {
	Container string // demuxer name, e.g. "mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "wav"
	Codec     string // e.g. "h264", "vp9", "pcm_s16le", "flac", "mp3"

	Frames, Height, Width int // video: frame count and frame size
	FPSNum, FPSDen        int // video: average frame rate FPSNum/FPSDen

	Samples, SampleRate, Channels int // audio

	Duration time.Duration // the stream's (or container's) duration
}

// FPS is the frame rate as a float (0 when unknown).
func (i Info) FPS() float64 {
	if i.FPSDen == 0 {
		return 0
	}
	return float64(i.FPSNum) / float64(i.FPSDen)
}

// Shape is the decoded shape: [frames, height, width, 3] for video,
// [samples, channels] for audio.
func (i Info) Shape() []int {
	if i.SampleRate > 0 {
		return []int{i.Samples, i.Channels}
	}
	return []int{i.Frames, i.Height, i.Width, 3}
}

// ProbeVideoBytes is ProbeVideo over bytes in memory.
func ProbeVideoBytes(b []byte) (Info, error) {
	return ProbeVideo(bytes.NewReader(b), int64(len(b)))
}

// ProbeAudioBytes is ProbeAudio over bytes in memory.
func ProbeAudioBytes(b []byte) (Info, error) {
	return ProbeAudio(bytes.NewReader(b), int64(len(b)))
}

// ClipError is the error for a frame range outside a video.
func clipError(start, count, stride, frames int) error {
	return base.Markf(base.ErrInvalidArgument, "clip of %d frames from frame %d with stride %d needs frame %d, the video has %d frames",
		count, start, stride, start+(count-1)*stride, frames)
}

// ErrTooLarge marks video frames or audio whose decoded size is more than
// the decode limit (loch.MaxDecodeBytes, $LOCH_MAX_DECODE_BYTES). It
// matches loch.ErrTooLarge and loch.ErrInvalidArgument, not ErrDecode.
var ErrTooLarge = decodelimit.ErrTooLarge

// CheckFrames checks count RGB24 frames of w x h pixels, what Frames
// writes, against the decode limit: an ErrTooLarge error naming both sizes
// when they are more. The decoders check it before they decode (a probe
// and OpenVideo for one frame of the stream's size); a caller that sizes a
// frame buffer from a header checks it before allocating.
func CheckFrames(count, h, w int) error {
	return decodelimit.Check(fmt.Sprintf("%d video %s of %dx%d pixels (RGB)", count, plural(count, "frame", "frames"), w, h), decodelimit.Size(3, count, h, w))
}

// CheckAudio checks samples x channels of float32, what a decode of audio
// writes, against the decode limit, as CheckFrames does for video.
func CheckAudio(samples, channels int) error {
	return decodelimit.Check(fmt.Sprintf("audio of %d samples x %d %s (float32)", samples, channels, plural(channels, "channel", "channels")), decodelimit.Size(4, samples, channels))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func decodef(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrDecode, fmt.Sprintf(format, a...))
}
