package viewer

import (
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// videoTypes maps the container of a stored video (docs/format.md §3.2)
// to the MIME type it is served as; another container is served as
// application/octet-stream.
var videoTypes = map[string]string{
	"mp4":  "video/mp4",
	"webm": "video/webm",
	"mkv":  "video/x-matroska",
	"ogg":  "video/ogg",
	"avi":  "video/x-msvideo",
}

// audioTypes maps the container of a stored audio sample to its MIME type
// and the codecs browsers play in it. A sample of another container or
// codec is served decoded, as a WAV file at its own sample rate.
var audioTypes = map[string]struct {
	mime   string
	codecs []string
}{
	"mp3":  {"audio/mpeg", []string{"mp3"}},
	"wav":  {"audio/wav", []string{"pcm_u8", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le"}},
	"flac": {"audio/flac", []string{"flac"}},
	"ogg":  {"audio/ogg", []string{"vorbis", "opus", "flac"}},
	"webm": {"audio/webm", []string{"vorbis", "opus"}},
	"mp4":  {"audio/mp4", []string{"aac", "mp3", "flac", "opus"}},
	"aac":  {"audio/aac", []string{"aac"}},
}

// mediaPiece is the most bytes of a stored media sample read at a time
// (one range read of its chunk's blocks) while it is sent.
const mediaPiece = 1 << 20

// serveMedia answers a request for a sample of a video or audio column
// (sample compression video or audio) with the file as it was ingested,
// read by range, with its container's Content-Type and Range support
// (http.ServeContent): a browser's player seeks in it. Audio that
// browsers do not play is sent decoded as WAV at the sample rate its
// chunk records. It fails, having written nothing, only before the
// response starts.
func (s *Server) serveMedia(w http.ResponseWriter, r *http.Request, ref sampleRef) error {
	cr, err := ref.d.Column(ref.col.Name)
	if err != nil {
		return err
	}
	m, err := cr.OpenMedia(r.Context(), ref.pos)
	if err != nil {
		return err
	}
	var ct string
	if ref.col.SampleCompression == schema.VideoCompression {
		ct = videoTypes[m.Container]
		if ct == "" {
			ct = "application/octet-stream"
		}
	} else {
		a, ok := audioTypes[m.Container]
		if !ok || !slices.Contains(a.codecs, m.Codec) {
			smp, err := cr.Read(r.Context(), ref.pos, nil)
			if err != nil {
				return err
			}
			data, err := wav(ref.col, smp, m.RateNum)
			if err != nil {
				return err
			}
			sendSample(w, r, "audio/wav", data)
			return nil
		}
		ct = a.mime
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", sampleCSP)
	http.ServeContent(w, r, "", time.Time{}, &mediaFile{m: m})
	return nil
}

// mediaFile is a stored media sample as the io.ReadSeeker that
// http.ServeContent sends: it reads pieces of mediaPiece bytes, so a
// sample is sent in few reads of the store.
type mediaFile struct {
	m      *loch.MediaSample
	off    int64
	buf    []byte // the sample's bytes from bufOff
	bufOff int64
}

func (f *mediaFile) Read(p []byte) (int, error) {
	if f.off >= f.m.Bytes {
		return 0, io.EOF
	}
	if f.off < f.bufOff || f.off >= f.bufOff+int64(len(f.buf)) {
		n := min(mediaPiece, f.m.Bytes-f.off)
		if int64(cap(f.buf)) < n {
			f.buf = make([]byte, n)
		}
		got, err := f.m.ReadAt(f.buf[:n], f.off)
		if int64(got) < n {
			if err == nil || err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			f.buf = f.buf[:0]
			return 0, err
		}
		f.buf, f.bufOff = f.buf[:n], f.off
	}
	n := copy(p, f.buf[f.off-f.bufOff:])
	f.off += int64(n)
	return n, nil
}

func (f *mediaFile) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += f.m.Bytes
	}
	if offset < 0 {
		return 0, errors.New("seek before the start of the sample")
	}
	f.off = offset
	return offset, nil
}

// plainAudioRate is the sample rate a waveform tensor (an audio column
// without sample compression, which records no rate) is played at.
const plainAudioRate = 16000

// wav encodes an audio sample ([samples] or [samples, channels], values
// in [-1, 1] for floats) as a 16-bit PCM WAV file at rate samples per
// second. A sample too long for WAV's 32-bit sizes is ErrInvalidArgument.
func wav(c *schema.Column, smp loch.Sample, rate int) ([]byte, error) {
	v := numbers(c.DType, smp)
	ch := 1
	if len(smp.Shape) == 2 && smp.Shape[1] > 0 {
		ch = smp.Shape[1]
	}
	if 36+2*int64(len(v)) > math.MaxUint32 || rate <= 0 || ch > math.MaxUint16/2 || 2*int64(rate)*int64(ch) > math.MaxUint32 {
		return nil, badf("column %q: %d samples of %d channels at %d Hz do not fit a WAV file", c.Name, len(v), ch, rate)
	}
	scale := 32767.0
	if c.DType.Integer() {
		scale = 1
	}
	b := make([]byte, 44+2*len(v))
	le := binary.LittleEndian
	copy(b, "RIFF")
	le.PutUint32(b[4:], uint32(36+2*len(v)))
	copy(b[8:], "WAVEfmt ")
	le.PutUint32(b[16:], 16)
	le.PutUint16(b[20:], 1)
	le.PutUint16(b[22:], uint16(ch))
	le.PutUint32(b[24:], uint32(rate))
	le.PutUint32(b[28:], uint32(rate*ch*2))
	le.PutUint16(b[32:], uint16(ch*2))
	le.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	le.PutUint32(b[40:], uint32(2*len(v)))
	for i, x := range v {
		le.PutUint16(b[44+2*i:], uint16(int16(max(-32768, min(32767, x*scale)))))
	}
	return b, nil
}
