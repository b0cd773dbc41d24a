//go:build cgo && !noffmpeg

package media

/*
#cgo pkg-config: libavformat libavcodec libswscale libswresample libavutil
#include "ffmpeg.h"
*/
import "C"

import (
	"errors"
	"io"
	"runtime/cgo"
	"time"
	"unsafe"

	"github.com/lochdata/loch/internal/base"
)

// FFmpeg reports whether this build decodes media (true: built with cgo
// and without the noffmpeg tag).
const FFmpeg = true

// source is what the C callbacks reach through a cgo.Handle.
type source struct {
	r     io.ReaderAt
	err   error     // the first read error other than io.EOF
	audio []float32 // lm_audio's output
}

//export lochMediaRead
func lochMediaRead(h C.uintptr_t, pos C.int64_t, buf *C.uint8_t, n C.int) C.int {
	s := cgo.Handle(h).Value().(*source)
	got, err := s.r.ReadAt(unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n)), int64(pos))
	if err != nil && !errors.Is(err, io.EOF) {
		if s.err == nil {
			s.err = err
		}
		return -1
	}
	return C.int(got)
}

//export lochMediaAudio
func lochMediaAudio(h C.uintptr_t, buf *C.float, n C.int) {
	s := cgo.Handle(h).Value().(*source)
	s.audio = append(s.audio, unsafe.Slice((*float32)(unsafe.Pointer(buf)), int(n))...)
}

// decoder is one open demuxer and decoder.
type decoder struct {
	c   *C.lm_ctx
	h   cgo.Handle
	src *source
}

const errLen = 256

func open(r io.ReaderAt, size int64, kind C.int) (*decoder, error) {
	d := &decoder{src: &source{r: r}}
	d.h = cgo.NewHandle(d.src)
	var msg [errLen]C.char
	if C.lm_open(&d.c, C.uintptr_t(d.h), C.int64_t(size), kind, &msg[0], errLen) < 0 {
		err := d.fail(&msg[0])
		d.close()
		return nil, err
	}
	return d, nil
}

// fail is the error for a failed C call: the read error that caused it,
// if any, else ErrDecode with FFmpeg's message.
func (d *decoder) fail(msg *C.char) error {
	if d.src.err != nil {
		return d.src.err
	}
	return decodef("%s", C.GoString(msg))
}

func (d *decoder) close() {
	C.lm_close(d.c)
	d.c = nil
	d.h.Delete()
}

func (d *decoder) info() Info {
	var in C.lm_info
	C.lm_get_info(d.c, &in)
	return Info{
		Container:  C.GoString(&in.container[0]),
		Codec:      C.GoString(&in.codec[0]),
		Frames:     int(in.frames),
		Height:     int(in.height),
		Width:      int(in.width),
		FPSNum:     int(in.fps_num),
		FPSDen:     int(in.fps_den),
		SampleRate: int(in.sample_rate),
		Channels:   int(in.channels),
		Duration:   time.Duration(in.duration_us) * time.Microsecond,
	}
}

// ProbeVideo reads a video's container and stream headers: its frame
// count, frame size, frame rate, codec and duration. It demuxes every
// packet (without decoding) to count frames where the container declares
// none and to find truncated files (fewer packets than declared frames).
// r must hold size bytes.
func ProbeVideo(r io.ReaderAt, size int64) (Info, error) {
	d, err := open(r, size, 0)
	if err != nil {
		return Info{}, err
	}
	defer d.close()
	in := d.info()
	packets := int(C.lm_count_packets(d.c))
	if d.src.err != nil {
		return Info{}, d.src.err
	}
	switch {
	case in.Frames <= 0:
		in.Frames = packets
	case packets < in.Frames:
		return Info{}, decodef("truncated: the container declares %d frames, its data holds %d", in.Frames, packets)
	}
	if in.Frames <= 0 || in.Width <= 0 || in.Height <= 0 || in.FPSNum <= 0 || in.FPSDen <= 0 {
		return Info{}, decodef("video stream has %d frames of %dx%d at %d/%d fps", in.Frames, in.Width, in.Height, in.FPSNum, in.FPSDen)
	}
	return in, nil
}

// ProbeAudio reads an audio sample's stream headers and decodes it once to
// count its samples exactly (audio decodes at hundreds of times real time;
// containers' declared durations are often estimates).
func ProbeAudio(r io.ReaderAt, size int64) (Info, error) {
	_, in, err := DecodeAudio(r, size, 0)
	return in, err
}

// DecodeAudio decodes the first audio stream to interleaved float32
// [samples, channels], resampled to rate (0 keeps the stream's). The
// returned Info describes the output (its SampleRate is rate).
func DecodeAudio(r io.ReaderAt, size int64, rate int) ([]float32, Info, error) {
	d, err := open(r, size, 1)
	if err != nil {
		return nil, Info{}, err
	}
	defer d.close()
	in := d.info()
	var msg [errLen]C.char
	n := C.lm_audio(d.c, C.int(rate), &msg[0], errLen)
	if n < 0 {
		return nil, Info{}, d.fail(&msg[0])
	}
	if rate > 0 {
		in.SampleRate = rate
	}
	in.Samples = int(n)
	if in.Samples == 0 || in.Channels <= 0 || in.SampleRate <= 0 {
		return nil, Info{}, decodef("audio stream has %d samples of %d channels at %d Hz", in.Samples, in.Channels, in.SampleRate)
	}
	in.Duration = time.Duration(float64(in.Samples) / float64(in.SampleRate) * float64(time.Second))
	return d.src.audio, in, nil
}

// Video is an open video decoder. It holds C memory: Close it.
type Video struct {
	d  *decoder
	in Info
}

// OpenVideo opens a video for frame-range decoding. It reads the
// container's headers (for mp4, the moov index) but no frames; in (from a
// probe at ingest) gives the frame count, which the container may not
// declare.
func OpenVideo(r io.ReaderAt, size int64, in Info) (*Video, error) {
	d, err := open(r, size, 0)
	if err != nil {
		return nil, err
	}
	got := d.info()
	got.Frames = in.Frames
	if got.Frames <= 0 {
		got.Frames = 1 << 30
	}
	return &Video{d: d, in: got}, nil
}

// Info is what the container declares, with the frame count given to
// OpenVideo.
func (v *Video) Info() Info { return v.in }

// Frames decodes frames start, start+stride, ..., count of them, as RGB24
// of w x h pixels (0 keeps the video's size) into dst, which must hold
// count*h*w*3 bytes. A frame range past the end of the video is an
// ErrInvalidArgument naming the frames.
func (v *Video) Frames(dst []byte, start, count, stride, w, h int) error {
	if w <= 0 || h <= 0 {
		w, h = v.in.Width, v.in.Height
	}
	if stride < 1 || count < 1 || start < 0 || start+(count-1)*stride >= v.in.Frames {
		return clipError(start, count, stride, v.in.Frames)
	}
	if len(dst) != count*h*w*3 {
		return base.Markf(base.ErrInvalidArgument, "frame buffer of %d bytes, want %d for %d frames of %dx%dx3", len(dst), count*h*w*3, count, h, w)
	}
	var msg [errLen]C.char
	n := C.lm_video(v.d.c, C.int64_t(start), C.int(count), C.int(stride), C.int(w), C.int(h), (*C.uint8_t)(unsafe.Pointer(&dst[0])), &msg[0], errLen)
	if n < 0 {
		return v.d.fail(&msg[0])
	}
	if int(n) < count {
		return decodef("the video ended after %d of %d frames from frame %d (stride %d)", n, count, start, stride)
	}
	return nil
}

// Close frees the decoder.
func (v *Video) Close() {
	if v.d != nil {
		v.d.close()
		v.d = nil
	}
}
