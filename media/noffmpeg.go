//go:build !cgo || noffmpeg

package media

import "io"

// FFmpeg reports whether this build decodes media. It is false here: the
// package was built without cgo or with the noffmpeg tag, and every probe
// and decode returns ErrNoFFmpeg.
const FFmpeg = false

// ProbeVideo returns ErrNoFFmpeg in this build.
func ProbeVideo(r io.ReaderAt, size int64) (Info, error) { return Info{}, ErrNoFFmpeg }

// ProbeAudio returns ErrNoFFmpeg in this build.
func ProbeAudio(r io.ReaderAt, size int64) (Info, error) { return Info{}, ErrNoFFmpeg }

// DecodeAudio returns ErrNoFFmpeg in this build.
func DecodeAudio(r io.ReaderAt, size int64, rate int) ([]float32, Info, error) {
	return nil, Info{}, ErrNoFFmpeg
}

// Video is an open video decoder (never opened in this build).
type Video struct{}

// OpenVideo returns ErrNoFFmpeg in this build.
func OpenVideo(r io.ReaderAt, size int64, in Info) (*Video, error) { return nil, ErrNoFFmpeg }

// Info returns the zero Info.
func (v *Video) Info() Info { return Info{} }

// Frames returns ErrNoFFmpeg.
func (v *Video) Frames(dst []byte, start, count, stride, w, h int) error { return ErrNoFFmpeg }

// Close does nothing.
func (v *Video) Close() {}

// Audio is an open audio decoder (never opened in this build).
type Audio struct{}

// OpenAudio returns ErrNoFFmpeg in this build.
func OpenAudio(r io.ReaderAt, size int64) (*Audio, error) { return nil, ErrNoFFmpeg }

// Info returns the zero Info.
func (a *Audio) Info() Info { return Info{} }

// Read returns ErrNoFFmpeg.
func (a *Audio) Read(dst []float32, rate, start int) (int, error) { return 0, ErrNoFFmpeg }

// All returns ErrNoFFmpeg.
func (a *Audio) All(rate int) ([]float32, error) { return nil, ErrNoFFmpeg }

// Close does nothing.
func (a *Audio) Close() {}
