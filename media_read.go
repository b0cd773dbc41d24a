package loch

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
)

// MediaInfo is what a video or audio sample's chunk header records of it
// (docs/format.md §3.2), known without decoding.
type MediaInfo struct {
	Shape     []int  // decoded: [frames, height, width, 3] or [samples, channels]
	Container string // "mp4", "webm", "mkv", "wav", "flac", "mp3", "ogg", ...
	Codec     string // FFmpeg's codec name: "h264", "vp9", "flac", ...
	// RateNum/RateDen is the frame rate (video) or sample rate (audio, RateDen 1).
	RateNum, RateDen int
	Bytes            int64 // stored (container) bytes
}

// Rate is RateNum/RateDen: frames or samples per second.
func (m MediaInfo) Rate() float64 {
	if m.RateDen == 0 {
		return 0
	}
	return float64(m.RateNum) / float64(m.RateDen)
}

// Duration is frames/fps or samples/sample rate.
func (m MediaInfo) Duration() time.Duration {
	if len(m.Shape) == 0 || m.RateNum == 0 {
		return 0
	}
	return time.Duration(float64(m.Shape[0]) * float64(m.RateDen) / float64(m.RateNum) * float64(time.Second))
}

// MediaSample is one stored media sample opened for reading by range: an
// io.ReaderAt over its container bytes that reads (and verifies) only the
// 4 KiB blocks of the chunks it is asked for, through the storage layer of
// the reader that opened it (its retries; for a Scan with a chunk cache,
// the cached chunk when the cache holds it, read by range: a range read
// never fills the cache, which would mean reading the whole chunk). It is
// safe for one goroutine at a time; it holds no resources to close.
type MediaSample struct {
	MediaInfo
	ctx      context.Context
	rd       *chunkReader
	pieces   []mediaPiece
	read     atomic.Int64
	readNs   atomic.Int64
	ahead    []byte // the bytes the last range read fetched, from sample offset aheadOff
	aheadOff int64
}

// mediaPiece is the part of a sample stored in one chunk.
type mediaPiece struct {
	ref    manifest.ChunkRef
	hdr    *chunk.Header
	off    int64 // offset of the piece in the sample
	rawOff int64 // offset of the piece's bytes in the chunk's raw data
	n      int64
}

// BytesRead is the number of chunk bytes read from storage through ReadAt
// (not counting those read from a chunk cache).
func (m *MediaSample) BytesRead() int64 { return m.read.Load() }

// ReadTime is the time ReadAt has spent waiting for storage (or cache).
func (m *MediaSample) ReadTime() time.Duration { return time.Duration(m.readNs.Load()) }

// Key is the storage key of the (first) chunk that holds the sample, for
// messages.
func (m *MediaSample) Key() string { return m.pieces[0].ref.Key }

// mediaReadAhead is the least a range read of a media sample fetches: the
// demuxer's own buffer (64 KiB). Reading further ahead saves round trips
// but costs bytes: the mp4 demuxer jumps between the index and the
// packets, and with 512 KiB a 16-frame clip of a 1.9 MB video read 1 MB
// instead of 135 KB (TestClipReadsByRange).
const mediaReadAhead = 64 << 10

// MediaRangeMin is the stored size above which a reader that decodes part
// of a media sample (the loader's clip step) does better reading it by
// range than whole: a clip read by range fetches at least two
// mediaReadAhead reads (the container's index, then the packets) and
// usually four, so a sample of at most four of them costs no more bytes
// read whole, in one request.
const MediaRangeMin = 4 * mediaReadAhead

// ReadAt reads the sample's container bytes [off, off+len(p)), from the
// bytes the last range read fetched when they hold them.
func (m *MediaSample) ReadAt(p []byte, off int64) (int, error) {
	if off >= m.Bytes {
		return 0, io.EOF
	}
	want := len(p)
	if rest := m.Bytes - off; int64(want) > rest {
		p = p[:rest]
	}
	done := 0
	for done < len(p) {
		at := off + int64(done)
		if at < m.aheadOff || at >= m.aheadOff+int64(len(m.ahead)) {
			if err := m.fetch(at, max(int64(len(p)-done), mediaReadAhead)); err != nil {
				return done, err
			}
		}
		done += copy(p[done:], m.ahead[at-m.aheadOff:])
	}
	if done < want {
		return done, io.EOF
	}
	return done, nil
}

// fetch reads, by one range read of the verified blocks of the piece that
// holds offset at, up to n sample bytes from at into m.ahead.
func (m *MediaSample) fetch(at, n int64) error {
	t0 := time.Now()
	defer func() { m.readNs.Add(int64(time.Since(t0))) }()
	for _, pc := range m.pieces {
		if at < pc.off || at >= pc.off+pc.n {
			continue
		}
		s := pc.rawOff + at - pc.off
		e := min(pc.rawOff+pc.n, s+n)
		bs := int64(pc.hdr.BlockSize)
		a, b := int(s/bs), int((e+bs-1)/bs)
		raw, n, err := m.rd.blocks(m.ctx, pc.ref, pc.hdr, a, b)
		m.read.Add(n)
		if err != nil {
			return fmt.Errorf("read media chunk %s: %w", pc.ref.Key, err)
		}
		base := pc.hdr.BlockStart(a)
		m.ahead, m.aheadOff = raw[s-base:e-base], at
		return nil
	}
	return fmt.Errorf("media sample offset %d outside its %d bytes: %w", at, m.Bytes, ErrCorrupt)
}

// blocks returns the raw bytes of blocks [a, b) of a range-readable chunk
// of codec none whose header is h, verified against their checksums: from
// the cache by range when it is a chunkcache.RangeReader holding the chunk
// (a cached copy that fails its checksums is dropped if damaged, and the
// read goes to the store), else by one range read of the store. n is the
// number of bytes read from the store.
func (r *chunkReader) blocks(ctx context.Context, ref manifest.ChunkRef, h *chunk.Header, a, b int) (raw []byte, n int64, err error) {
	lo, hi := h.BlockRange(a, b)
	stored := make([]byte, hi-lo)
	if rr, ok := r.cache.(chunkcache.RangeReader); ok && r.cache != nil {
		if ok, err := rr.ReadRange(ctx, ref.Key, lo, stored); err == nil && ok {
			if raw, err := h.DecodeBlocks(stored, a, b, nil); err == nil {
				return raw, 0, nil
			}
			r.dropIfDamaged(ctx, ref)
		}
	}
	if err := r.d.store.ReadRange(ctx, ref.Key, lo, stored); err != nil {
		return nil, 0, err
	}
	raw, err = h.DecodeBlocks(stored, a, b, nil)
	return raw, int64(len(stored)), err
}

// OpenMedia opens row i's sample of a video or audio column for reading by
// range (chunk headers only are read here). A null sample is ErrNotFound.
func (c *ColumnReader) OpenMedia(ctx context.Context, i int64) (*MediaSample, error) {
	if !c.col.SampleCompression.Media() {
		return nil, fmt.Errorf("%s: column %q is %s, not a video or audio column: %w", c.d.url, c.col.Name, c.col.SampleCompression, ErrInvalidArgument)
	}
	f, off, err := c.d.position(ctx, c.snap, i)
	if err != nil {
		return nil, err
	}
	refs := f.cols[c.col.UID]
	if len(refs) == 0 {
		return nil, fmt.Errorf("%s: column %q row %d: the sample is null: %w", c.d.url, c.col.Name, i, ErrNotFound)
	}
	k := searchRef(refs, off)
	j := 0
	if refs[k].Parts == 0 {
		j = int(off - refs[k].First)
	}
	m, err := openMedia(ctx, &chunkReader{d: c.d}, refs[k:], j)
	if err != nil {
		return nil, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	return m, nil
}

// OpenMedia opens slot's sample of a video or audio column for reading by
// range through the scan's storage (and chunk cache, if it has one): only
// its chunk headers are read here, by range unless the Dataset knows them.
// A null slot, or one that is not a media sample, is ErrInvalidArgument.
func (sc *Scan) OpenMedia(ctx context.Context, slot Slot) (*MediaSample, error) {
	if slot.pieces == 0 {
		return nil, fmt.Errorf("%s: open media: the sample is null: %w", sc.d.url, ErrInvalidArgument)
	}
	refs := sc.s.frags[slot.first.frag].cols[int(slot.first.uid)][slot.first.k:]
	m, err := openMedia(ctx, sc.rd, refs, slot.index)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", sc.d.url, err)
	}
	return m, nil
}

// MeanSampleBytes is the mean stored size of the samples of slot's chunk
// (its raw bytes over its rows), or for a split sample the bytes of its
// pieces: known from the snapshot alone, without reading anything. A null
// slot gives 0.
func (sc *Scan) MeanSampleBytes(slot Slot) int64 {
	if slot.pieces == 0 {
		return 0
	}
	refs := sc.s.frags[slot.first.frag].cols[int(slot.first.uid)][slot.first.k:][:slot.pieces]
	if slot.pieces > 1 {
		var n int64
		for _, r := range refs {
			n += r.Raw
		}
		return n
	}
	return refs[0].Raw / max(refs[0].Rows, 1)
}

// openMedia opens sample j of refs[0] (or, when refs[0] is the first piece
// of a split sample, the sample its pieces hold) for reading by range
// through rd. Errors name the chunk.
func openMedia(ctx context.Context, rd *chunkReader, refs []manifest.ChunkRef, j int) (*MediaSample, error) {
	m := &MediaSample{ctx: ctx, rd: rd}
	parts := refs[:1]
	if refs[0].Parts > 0 {
		parts = refs[:refs[0].Parts]
		j = 0
	}
	for _, ref := range parts {
		h, n, err := rd.d.header(ctx, ref)
		m.read.Add(n)
		if err != nil {
			return nil, err
		}
		if !chunk.IsMedia(h.SampleCompression) || h.Codec != chunk.CodecNone || h.BlockSize == 0 {
			return nil, fmt.Errorf("chunk %s: not a media chunk of codec none with blocks: %w", ref.Key, ErrCorrupt)
		}
		if h.Null(j) {
			return nil, fmt.Errorf("chunk %s: the sample is null: %w", ref.Key, ErrNotFound)
		}
		s, e := h.Range(j)
		pc := mediaPiece{ref: ref, hdr: h, off: m.Bytes, rawOff: s, n: e - s}
		if refs[0].Parts > 0 {
			pc.off = int64(h.Partial.Offset)
		}
		m.pieces = append(m.pieces, pc)
		m.Bytes += e - s
		if len(m.pieces) == 1 {
			me := h.Media(j)
			m.Shape, m.Container, m.Codec = h.Shape(j), me.Container, me.Codec
			m.RateNum, m.RateDen = int(me.RateNum), int(me.RateDen)
		}
	}
	return m, nil
}

// probeInfo is the media.Info that the chunk header records.
func (m *MediaSample) probeInfo() media.Info {
	in := media.Info{Container: m.Container, Codec: m.Codec}
	if len(m.Shape) == 4 {
		in.Frames, in.Height, in.Width = m.Shape[0], m.Shape[1], m.Shape[2]
		in.FPSNum, in.FPSDen = m.RateNum, m.RateDen
	}
	return in
}

// ReadFrames decodes frames start, start+stride, ... (count of them) of row
// i's video as uint8 [count, h, w, 3] (w, h 0: the video's size), reading
// by range only the chunk blocks the decoder asks for: the container's
// index and the packets from the keyframe before start.
func (c *ColumnReader) ReadFrames(ctx context.Context, i int64, start, count, stride, w, h int) (Sample, error) {
	m, err := c.OpenMedia(ctx, i)
	if err != nil {
		return Sample{}, err
	}
	if c.col.SampleCompression != schema.VideoCompression {
		return Sample{}, fmt.Errorf("%s: column %q holds audio, not video: %w", c.d.url, c.col.Name, ErrInvalidArgument)
	}
	fail := func(err error) (Sample, error) {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	v, err := media.OpenVideo(m, m.Bytes, m.probeInfo())
	if err != nil {
		return fail(err)
	}
	defer v.Close()
	if w <= 0 || h <= 0 {
		w, h = m.Shape[2], m.Shape[1]
	}
	if err := media.CheckFrames(count, h, w); err != nil {
		return fail(err)
	}
	dst := make([]byte, count*h*w*3)
	if err := v.Frames(dst, start, count, stride, w, h); err != nil {
		return fail(err)
	}
	return Sample{Shape: []int{count, h, w, 3}, Data: dst}, nil
}

// ReadAudio decodes row i's audio as float32 [samples, channels]
// (little-endian bytes), resampled to rate (0 keeps the stored rate).
func (c *ColumnReader) ReadAudio(ctx context.Context, i int64, rate int) (Sample, error) {
	m, err := c.OpenMedia(ctx, i)
	if err != nil {
		return Sample{}, err
	}
	pcm, in, err := media.DecodeAudio(m, m.Bytes, rate)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	return Sample{Shape: []int{in.Samples, in.Channels}, Data: float32Bytes(pcm)}, nil
}

// ReadAudioSegment decodes n samples of row i's audio from sample start
// (at rate; 0 keeps the stored rate) as float32 [samples, channels]
// (little-endian bytes): n samples, or fewer where the audio ends first. It
// reads by range only the chunk blocks the decoder asks for: for a PCM wav
// file its header and the segment's bytes, for others the headers and the
// packets from the segment less the codec's preroll (media.Audio.Read).
// The samples are those of ReadAudio's whole decode from start.
func (c *ColumnReader) ReadAudioSegment(ctx context.Context, i int64, rate, start, n int) (Sample, error) {
	m, err := c.OpenMedia(ctx, i)
	if err != nil {
		return Sample{}, err
	}
	fail := func(err error) (Sample, error) {
		return Sample{}, fmt.Errorf("%s: column %q row %d: %w", c.d.url, c.col.Name, i, err)
	}
	if c.col.SampleCompression != schema.AudioCompression || n < 0 {
		return fail(fmt.Errorf("an audio segment of %d samples from a %s column: %w", n, c.col.SampleCompression, ErrInvalidArgument))
	}
	a, err := media.OpenAudio(m, m.Bytes)
	if err != nil {
		return fail(err)
	}
	defer a.Close()
	ch := a.Info().Channels
	if sr := a.Info().SampleRate; len(m.Shape) == 2 && sr > 0 { // no buffer past the end for a huge n
		r := int64(max(rate, sr))
		n = int(min(int64(n), max(int64(m.Shape[0])*r/int64(sr)+r-int64(start), 0)))
	}
	if err := media.CheckAudio(n, ch); err != nil {
		return fail(err)
	}
	pcm := make([]float32, n*ch)
	got, err := a.Read(pcm, rate, start)
	if err != nil {
		return fail(err)
	}
	return Sample{Shape: []int{got, ch}, Data: float32Bytes(pcm[:got*ch])}, nil
}

// decodeMedia decodes a whole media sample (Column.Read's decoded form).
func decodeMedia(s Sample, dst []byte) error {
	switch s.Encoding {
	case schema.VideoCompression:
		in, err := media.ProbeVideoBytes(s.Data)
		if err != nil {
			return err
		}
		v, err := media.OpenVideo(bytesReader(s.Data), int64(len(s.Data)), in)
		if err != nil {
			return err
		}
		defer v.Close()
		return v.Frames(dst, 0, s.Shape[0], 1, s.Shape[2], s.Shape[1])
	default:
		pcm, _, err := media.DecodeAudio(bytesReader(s.Data), int64(len(s.Data)), 0)
		if err != nil {
			return err
		}
		if got := float32Bytes(pcm); len(got) != len(dst) {
			return fmt.Errorf("audio decodes to %d bytes, its shape %v says %d", len(got), s.Shape, len(dst))
		} else {
			copy(dst, got)
		}
		return nil
	}
}

func bytesReader(b []byte) io.ReaderAt { return bytes.NewReader(b) }

// float32Bytes is pcm as little-endian bytes.
func float32Bytes(pcm []float32) []byte {
	out := make([]byte, 4*len(pcm))
	for k, v := range pcm {
		binary.LittleEndian.PutUint32(out[4*k:], math.Float32bits(v))
	}
	return out
}
