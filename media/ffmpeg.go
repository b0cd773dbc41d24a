//go:build cgo && !noffmpeg

package media

/*
#cgo pkg-config: libavformat libavcodec libswscale libswresample libavutil
// pkg-config is for FFmpeg's headers: the libraries load at the first probe
// or decode (ffmpeg_load.go), and --as-needed keeps the -l flags it adds
// from linking them at start (no function of theirs is referenced).
#cgo linux LDFLAGS: -Wl,--as-needed
#include "ffmpeg.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/cgo"
	"time"
	"unsafe"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
)

// FFmpeg reports whether this build decodes media (true: built with cgo
// and without the noffmpeg tag).
const FFmpeg = true

// source is what the C callbacks reach through a cgo.Handle.
type source struct {
	r   io.ReaderAt
	err error // the first read error other than io.EOF
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

// decoder is one open demuxer and decoder.
type decoder struct {
	c   *C.lm_ctx
	h   cgo.Handle
	src *source
}

const errLen = 256

func open(r io.ReaderAt, size int64, kind C.int) (*decoder, error) {
	if err := load(); err != nil {
		return nil, err
	}
	d := &decoder{src: &source{r: r}}
	d.h = cgo.NewHandle(d.src)
	var msg [errLen]C.char
	// FFmpeg's decoders refuse to allocate frames of more pixels than an
	// RGB24 frame within the decode limit holds (its max_pixels), from the
	// first frames that reading the stream info decodes on.
	maxPixels := decodelimit.Max() / 3
	switch C.lm_open(&d.c, C.uintptr_t(d.h), C.int64_t(size), kind, C.int64_t(maxPixels), &msg[0], errLen) {
	case 0:
	case C.LM_TOO_LARGE:
		in := d.info()
		err := CheckFrames(1, in.Height, in.Width)
		if err == nil { // the limit was raised meanwhile
			err = base.Markf(ErrTooLarge, "video frames of %dx%d pixels: more than the decode limit of %d pixels", in.Width, in.Height, maxPixels)
		}
		d.close()
		return nil, err
	default:
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
// r must hold size bytes. A frame larger than the decode limit is
// ErrTooLarge (CheckFrames); the frame count is not checked, as clips of
// a long video decode only their frames.
func ProbeVideo(r io.ReaderAt, size int64) (Info, error) {
	d, err := open(r, size, 0)
	if err != nil {
		return Info{}, err
	}
	defer d.close()
	in := d.info()
	if err := CheckFrames(1, in.Height, in.Width); err != nil {
		return Info{}, err
	}
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
// containers' declared durations are often estimates). Audio whose
// declared or decoded samples are more than the decode limit is
// ErrTooLarge (CheckAudio), as for All.
func ProbeAudio(r io.ReaderAt, size int64) (Info, error) {
	_, in, err := DecodeAudio(r, size, 0)
	return in, err
}

// DecodeAudio decodes the first audio stream to interleaved float32
// [samples, channels], resampled to rate (0 keeps the stream's). The
// returned Info describes the output (its SampleRate is rate).
func DecodeAudio(r io.ReaderAt, size int64, rate int) ([]float32, Info, error) {
	a, err := OpenAudio(r, size)
	if err != nil {
		return nil, Info{}, err
	}
	defer a.Close()
	pcm, err := a.All(rate)
	if err != nil {
		return nil, Info{}, err
	}
	in := a.Info()
	if rate > 0 {
		in.SampleRate = rate
	}
	in.Samples = len(pcm) / in.Channels
	in.Duration = time.Duration(float64(in.Samples) / float64(in.SampleRate) * float64(time.Second))
	return pcm, in, nil
}

// Audio is an open audio decoder. It holds C memory: Close it.
type Audio struct {
	d       *decoder // nil until FFmpeg is needed (a wav file read as is)
	r       io.ReaderAt
	size    int64
	in      Info
	preroll int64
	wav     *wavPCM // a PCM wav file: read without FFmpeg when not resampled
	used    bool    // decoded from: the next decode reopens
	closed  bool
}

// errUnplaced is lm_audio_begin's and lm_audio_read's LM_UNPLACED: the
// decoder could not be placed at a sample by seeking.
var errUnplaced = errors.New("media: audio seek could not be placed")

// OpenAudio opens the first audio stream of r (size bytes) for decoding.
// It reads the container's headers only. A stream without channels or a
// sample rate is ErrDecode. A PCM wav file (8 to 32-bit integers or 32-bit
// floats) is read without FFmpeg unless it is resampled: its segments are
// one range read each.
func OpenAudio(r io.ReaderAt, size int64) (*Audio, error) {
	if w, ok := parseWAV(r, size); ok {
		return &Audio{r: r, size: size, wav: &w, in: Info{
			Container: "wav", Codec: w.codec, SampleRate: w.rate, Channels: w.channels,
			Duration: time.Duration(float64(w.frames) / float64(w.rate) * float64(time.Second)),
		}}, nil
	}
	a := &Audio{r: r, size: size}
	if err := a.open(); err != nil {
		return nil, err
	}
	a.in = a.d.info()
	if a.in.Channels <= 0 || a.in.SampleRate <= 0 || a.in.SampleRate > MaxSampleRate {
		a.Close()
		return nil, decodef("audio stream has %d channels at %d Hz (want 1 to %d Hz)", a.in.Channels, a.in.SampleRate, MaxSampleRate)
	}
	return a, nil
}

// open opens (or reopens) the FFmpeg decoder.
func (a *Audio) open() error {
	d, err := open(a.r, a.size, 1)
	if err != nil {
		return err
	}
	if a.d != nil {
		a.d.close()
	}
	a.d, a.preroll, a.used = d, int64(C.lm_audio_preroll(d.c)), false
	return nil
}

// Info is what the container declares: codec, sample rate, channels and
// an estimated duration (Samples is 0: only a decode counts them).
func (a *Audio) Info() Info { return a.in }

// direct reports whether a decode at rate reads the wav samples as they
// are.
func (a *Audio) direct(rate int) bool {
	return a.wav != nil && (rate <= 0 || rate == a.wav.rate)
}

// begin positions a freshly opened decoder (opening it, or reopening it if
// it has decoded before) at output sample start at rate (0: the stream's);
// with seek false it decodes from the stream's start and drops the samples
// before start.
//
// Without resampling, decoding starts at input sample start (the demuxer
// seeks to start minus the codec's preroll, and the samples before start
// are dropped). With resampling, swresample starts afresh on an input
// sample k*in/g (g the GCD of the two rates) that maps to the whole output
// sample k*out/g, at least resampleMargin input samples (scaled by the
// rate ratio when downsampling) before the segment, so that every output
// sample of the segment sees the input that it sees in a decode of the
// whole file, and the output before start is dropped.
func (a *Audio) begin(rate, start int, seek bool) error {
	if a.d == nil || a.used {
		if err := a.open(); err != nil {
			return err
		}
	}
	a.used = true
	rin := a.in.SampleRate
	inFirst, skip := int64(start), int64(0)
	if rate > 0 && rate != rin {
		g := gcd(rin, rate)
		unitIn, unitOut := int64(rin/g), int64(rate/g)
		margin := int64(resampleMargin * max(1, (rin+rate-1)/rate))
		k := (int64(start)*int64(rin)/int64(rate) - margin) / unitIn
		k = max(k, 0)
		inFirst, skip = k*unitIn, int64(start)-k*unitOut
	}
	preroll := a.preroll
	if !seek || preroll < 0 {
		preroll = inFirst // no seek
	}
	var msg [errLen]C.char
	switch C.lm_audio_begin(a.d.c, C.int(rate), C.int64_t(inFirst), C.int64_t(skip), C.int64_t(preroll), &msg[0], errLen) {
	case 0:
		return nil
	case C.LM_UNPLACED:
		return errUnplaced
	}
	return a.d.fail(&msg[0])
}

// resampleMargin is how many input samples (times the downsampling ratio)
// before a resampled segment swresample starts: more than its filter
// reaches (32 taps by default).
const resampleMargin = 256

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// read decodes into dst until it is full or the stream ends, and returns
// the number of sample frames written.
func (a *Audio) read(dst []float32) (int, error) {
	ch := a.in.Channels
	if len(dst) < ch {
		return 0, nil
	}
	var msg [errLen]C.char
	n := C.lm_audio_read(a.d.c, (*C.float)(unsafe.Pointer(&dst[0])), C.int64_t(len(dst)/ch), &msg[0], errLen)
	switch {
	case n == C.LM_UNPLACED:
		return 0, errUnplaced
	case n < 0:
		return 0, a.d.fail(&msg[0])
	}
	return int(n), nil
}

// Read decodes len(dst)/channels sample frames from output sample start
// at rate (0: the stream's) into dst, interleaved, and returns how many it
// wrote: fewer when the audio ends first (the rest of dst is left as it
// was). It decodes only from the segment (less the codec's preroll) on,
// and reads through r only the bytes the demuxer needs from there, where
// the container can seek (wav, flac, mp3, ogg, opus); for other codecs
// (aac), where the demuxer cannot seek, or when the first frame after the
// seek has no timestamp, it decodes from the start.
// The samples equal those of All(rate) from start: bit for bit for PCM,
// FLAC, mp3 and vorbis, and for opus within 1e-5 (package doc).
func (a *Audio) Read(dst []float32, rate, start int) (int, error) {
	if start < 0 || rate < 0 || rate > MaxSampleRate {
		return 0, base.Markf(base.ErrInvalidArgument, "audio segment from sample %d at %d Hz (rates up to %d Hz)", start, rate, MaxSampleRate)
	}
	if a.closed {
		return 0, errClosed
	}
	if a.direct(rate) {
		return a.wav.read(a.r, dst, int64(start))
	}
	n, err := a.readFrom(dst, rate, start, true)
	if errors.Is(err, errUnplaced) {
		n, err = a.readFrom(dst, rate, start, false)
	}
	return n, err
}

func (a *Audio) readFrom(dst []float32, rate, start int, seek bool) (int, error) {
	if err := a.begin(rate, start, seek); err != nil {
		return 0, err
	}
	return a.read(dst)
}

// All decodes the whole stream at rate (0: the stream's), interleaved. A
// stream without samples is ErrDecode. A stream whose declared duration,
// or whose decode, holds more samples than the decode limit allows is
// ErrTooLarge (CheckAudio): the first is refused before anything is
// decoded, the second as soon as the decode passes the limit, with never
// more than the limit allocated.
func (a *Audio) All(rate int) ([]float32, error) {
	if rate < 0 || rate > MaxSampleRate {
		return nil, base.Markf(base.ErrInvalidArgument, "audio at %d Hz (rates up to %d Hz)", rate, MaxSampleRate)
	}
	if a.closed {
		return nil, errClosed
	}
	if a.direct(rate) {
		if err := CheckAudio(int(a.wav.frames), a.in.Channels); err != nil {
			return nil, err
		}
		pcm := make([]float32, a.wav.frames*int64(a.in.Channels))
		n, err := a.wav.read(a.r, pcm, 0)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, decodef("audio stream has no samples (%d channels at %d Hz)", a.in.Channels, a.in.SampleRate)
		}
		return pcm, nil
	}
	if err := a.begin(rate, 0, false); err != nil {
		return nil, err
	}
	r := a.in.SampleRate
	if rate > 0 {
		r = rate
	}
	ch := a.in.Channels
	// Size the buffer from the declared duration (exact for wav and
	// flac), and grow it if the stream is longer, up to one sample past
	// the decode limit (which tells that the stream is longer than it).
	declared := a.in.Duration.Seconds() * float64(r)
	if err := CheckAudio(int(min(declared, 1<<62)), ch); err != nil {
		return nil, err
	}
	bound := math.MaxInt // floats, whole sample frames
	if m := decodelimit.Max(); m > 0 {
		bound = (int(m/4)/ch + 1) * ch
	}
	est := int(declared) + r/8 + 1024
	pcm := make([]float32, min(est*ch, bound))
	n := 0
	for {
		got, err := a.read(pcm[n*ch:])
		if err != nil {
			return nil, err
		}
		n += got
		if err := CheckAudio(n, ch); err != nil {
			return nil, fmt.Errorf("decode past the declared %d samples: %w", int(declared), err)
		}
		if n*ch < len(pcm) {
			break
		}
		pcm = append(pcm, make([]float32, min(len(pcm), bound-len(pcm)))...)
	}
	if n == 0 {
		return nil, decodef("audio stream has no samples (%d channels at %d Hz)", ch, r)
	}
	return pcm[: n*ch : n*ch], nil
}

// Close frees the decoder. Reading after Close is an error.
func (a *Audio) Close() {
	if a.d != nil {
		a.d.close()
		a.d = nil
	}
	a.closed = true
}

var errClosed = base.Markf(base.ErrInvalidArgument, "media: audio decoder used after Close")

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
	if err := CheckFrames(1, got.Height, got.Width); err != nil {
		d.close()
		return nil, err
	}
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
	if err := CheckFrames(count, h, w); err != nil {
		return err
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
