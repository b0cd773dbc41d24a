package media

import (
	"encoding/binary"
	"io"
	"math"
)

// wavPCM is the layout of a RIFF WAVE file of integer PCM (8, 16, 24 or
// 32 bits) or IEEE float (32 bits) samples: where its samples are and how
// to convert them. Such a file is read without FFmpeg: a segment is one
// range read of its bytes (Audio.Read), converted to float32 as FFmpeg's
// decoder and swresample convert them (x/128 - 1 for 8 bits, x/2^15,
// x/2^31 after shifting 24 bits up to 32, floats as they are), so that
// the samples equal FFmpeg's bit for bit (TestWAVMatchesFFmpeg).
type wavPCM struct {
	float                 bool
	bits, channels, rate  int
	dataOff, frames       int64
	codec                 string // FFmpeg's name for it, as a probe reports it
	blockAlign, frameSize int
}

// maxWAVChunks bounds the chunks read before "data".
const maxWAVChunks = 64

// parseWAV reads the header chunks of a RIFF WAVE file of size bytes and
// returns its layout, or false for anything else (another container,
// another codec, RF64, a malformed header): FFmpeg then reads it.
func parseWAV(r io.ReaderAt, size int64) (wavPCM, bool) {
	var h [12]byte
	if size < 12 {
		return wavPCM{}, false
	}
	if _, err := r.ReadAt(h[:], 0); err != nil || string(h[0:4]) != "RIFF" || string(h[8:12]) != "WAVE" {
		return wavPCM{}, false
	}
	var w wavPCM
	haveFmt := false
	off := int64(12)
	for range maxWAVChunks {
		var ch [8]byte
		if off+8 > size {
			return wavPCM{}, false
		}
		if _, err := r.ReadAt(ch[:], off); err != nil {
			return wavPCM{}, false
		}
		id, n := string(ch[0:4]), int64(binary.LittleEndian.Uint32(ch[4:8]))
		body := off + 8
		switch id {
		case "fmt ":
			if n < 16 || n > 4096 || body+n > size {
				return wavPCM{}, false
			}
			f := make([]byte, n)
			if _, err := r.ReadAt(f, body); err != nil {
				return wavPCM{}, false
			}
			if !w.setFormat(f) {
				return wavPCM{}, false
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return wavPCM{}, false
			}
			avail := size - body
			if n == 0 || n == 0xFFFFFFFF || n > avail {
				n = avail // a streamed or truncated file: what is there
			}
			w.dataOff, w.frames = body, n/int64(w.blockAlign)
			return w, true
		}
		off = body + n + n&1
	}
	return wavPCM{}, false
}

// setFormat reads a fmt chunk: WAVE_FORMAT_PCM (1), IEEE_FLOAT (3) or
// EXTENSIBLE (0xFFFE) of one of those.
func (w *wavPCM) setFormat(f []byte) bool {
	tag := binary.LittleEndian.Uint16(f[0:2])
	w.channels = int(binary.LittleEndian.Uint16(f[2:4]))
	w.rate = int(binary.LittleEndian.Uint32(f[4:8]))
	w.blockAlign = int(binary.LittleEndian.Uint16(f[12:14]))
	w.bits = int(binary.LittleEndian.Uint16(f[14:16]))
	if tag == 0xFFFE {
		if len(f) < 26 {
			return false
		}
		tag = binary.LittleEndian.Uint16(f[24:26]) // the sub-format GUID's first bytes
	}
	switch {
	case tag == 1 && (w.bits == 8 || w.bits == 16 || w.bits == 24 || w.bits == 32):
		w.codec = map[int]string{8: "pcm_u8", 16: "pcm_s16le", 24: "pcm_s24le", 32: "pcm_s32le"}[w.bits]
	case tag == 3 && w.bits == 32:
		w.float, w.codec = true, "pcm_f32le"
	default:
		return false
	}
	w.frameSize = w.channels * w.bits / 8
	return w.channels >= 1 && w.channels <= maxChannels && w.rate > 0 && w.rate <= MaxSampleRate && w.blockAlign == w.frameSize
}

// maxChannels is the most channels decoded (ffmpeg.c's LM_MAX_PLANES).
const maxChannels = 64

// MaxSampleRate is the highest sample rate decoded or resampled to, in Hz
// (768 kHz, the highest rate audio interfaces record at). A stream that
// declares more is refused when opened: resampling a declared 800 MHz to
// 8 kHz would read and convert 100,000 input samples for each one out.
const MaxSampleRate = 768000

// wavChunk is the most bytes read (and held) at a time.
const wavChunk = 256 << 10

// read converts the sample frames [start, start+len(dst)/channels) (cut
// at the end) into dst, reading just their bytes (in pieces of at most
// wavChunk), and returns how many it converted.
func (w wavPCM) read(r io.ReaderAt, dst []float32, start int64) (int, error) {
	n := min(int64(len(dst)/w.channels), w.frames-start)
	if n <= 0 {
		return 0, nil
	}
	fs := int64(w.frameSize)
	per := max(1, wavChunk/fs) // frames per piece
	raw := make([]byte, min(n, per)*fs)
	for done := int64(0); done < n; {
		k := min(n-done, per)
		b := raw[:k*fs]
		got, err := r.ReadAt(b, w.dataOff+(start+done)*fs)
		if got < len(b) {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
		w.convert(dst[done*int64(w.channels):], b)
		done += k
	}
	return int(n), nil
}

// convert converts the samples in raw into dst.
func (w wavPCM) convert(dst []float32, raw []byte) {
	switch {
	case w.float:
		for i := range len(raw) / 4 {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	case w.bits == 8:
		for i, b := range raw {
			dst[i] = float32(int(b)-0x80) * (1.0 / (1 << 7))
		}
	case w.bits == 16:
		for i := range len(raw) / 2 {
			dst[i] = float32(int16(binary.LittleEndian.Uint16(raw[2*i:]))) * (1.0 / (1 << 15))
		}
	case w.bits == 24:
		for i := range len(raw) / 3 {
			v := int32(uint32(raw[3*i])<<8 | uint32(raw[3*i+1])<<16 | uint32(raw[3*i+2])<<24)
			dst[i] = float32(v) * (1.0 / (1 << 31))
		}
	default:
		for i := range len(raw) / 4 {
			dst[i] = float32(int32(binary.LittleEndian.Uint32(raw[4*i:]))) * (1.0 / (1 << 31))
		}
	}
}
