package loch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/manifest"
)

// This file (with fetched.go) is the engine's one chunk reader: every
// read of chunk bytes (Column reads, Scan fetches, Verify) goes through
// chunkReader (whole chunks and spans of samples, through a chunk cache or
// not), decodeChunk, assemble and Fetched.sample, which check what the
// fragment says against what the chunk says and name the chunk in every
// error (whose kind, from internal/base, callers test with errors.Is).

// errWhole is chunkReader.span's answer for a chunk whose header says it
// cannot be read by range (a format 1.0 compressed chunk): the caller
// reads it whole instead.
var errWhole = errors.New("chunk cannot be read by range")

// spanWorth reports whether reading some samples of a chunk by range is
// worth planning: not for a piece of a split sample (assembled from whole
// pieces), not for a chunk of at most two checksum blocks (the header read
// and the blocks would cost as much as the whole), and not for a chunk
// whose header the Dataset knows to be not range-readable.
func (d *Dataset) spanWorth(ref manifest.ChunkRef) bool {
	if ref.Parts > 0 || ref.Size <= 2*chunk.BlockSize {
		return false
	}
	if e := d.chunks.get(ref.Key); e != nil && !e.header.RangeReadable() {
		return false
	}
	return true
}

// spanEstimate bounds the memory a fetched span of samples [lo, hi) holds
// (the raw bytes of the blocks that hold it): exactly, from the header,
// when the Dataset knows it; else, when maxSample (the column's largest
// sample in bytes; negative if unknown) is known, the span's largest size
// plus the two partial blocks at its ends, at most the chunk's raw size;
// else the span's share of the chunk plus two blocks. A span that Fetch
// reads whole after all holds more: the whole chunk.
func (d *Dataset) spanEstimate(ref manifest.ChunkRef, lo, hi int, maxSample int64) int64 {
	if e := d.chunks.get(ref.Key); e != nil && e.header.RangeReadable() {
		h := e.header
		a, b := h.SpanBlocks(lo, hi)
		if a == b {
			return 0
		}
		return min(h.BlockStart(b), h.RawLen) - h.BlockStart(a)
	}
	if maxSample >= 0 {
		return min(int64(hi-lo)*maxSample+2*chunk.BlockSize, ref.Raw)
	}
	rows := max(ref.Rows, 1)
	share := (int64(hi-lo)*ref.Raw + rows - 1) / rows
	return min(share+2*chunk.BlockSize, ref.Raw+ref.Size)
}

// chunkReader reads chunks for a Scan or a ColumnReader: whole chunk
// objects from the store, or from cache when one is set; spans of samples
// by range. With a cache, concurrent reads of one chunk object wait for
// one fetch (flight), as do those of other processes sharing the cache
// when it takes turns (chunkcache.Filler), and a fetched object that
// passes its checks is put in the cache. It is safe for concurrent use; a
// chunkReader without a cache is free to make.
type chunkReader struct {
	d      *Dataset
	cache  chunkcache.Cache // nil: none
	mapped bool             // spans from mapped chunk files where the store can map (mapped.go)
	bufs   *BufferPool      // span buffers; nil: defaultBuffers
	flight singleflight.Group
}

// pool is the BufferPool the reader's spans take their buffers from.
func (r *chunkReader) pool() *BufferPool {
	if r.bufs == nil {
		return defaultBuffers
	}
	return r.bufs
}

// fetchedObject is one whole chunk object and where it came from.
type fetchedObject struct {
	obj    []byte
	cached bool
}

// object returns a chunk object's bytes, read-only: from the cache when it
// has them, else from the store, putting it in the cache when it passes
// its checks (a damaged chunk is never cached). n is the number of bytes
// this call read from the store.
func (r *chunkReader) object(ctx context.Context, ref manifest.ChunkRef) (o fetchedObject, n int64, err error) {
	if r.cache == nil {
		obj, err := r.d.store.Get(ctx, ref.Key)
		if err != nil {
			return fetchedObject{}, 0, fmt.Errorf("read chunk %s: %w", ref.Key, err)
		}
		return fetchedObject{obj: obj}, int64(len(obj)), nil
	}
	for {
		ran := false
		v, err, _ := r.flight.Do(ref.Key, func() (any, error) {
			ran = true
			if obj, ok, err := r.cache.Get(ctx, ref.Key); err == nil && ok {
				return fetchedObject{obj: obj, cached: true}, nil
			}
			// Another process sharing the cache may be fetching it: wait
			// for its turn to end, then look again. A turn that cannot be
			// taken (an unwritable cache) only costs a fetch of our own.
			if f, ok := r.cache.(chunkcache.Filler); ok {
				done, err := f.FillTurn(ctx, ref.Key)
				if err != nil && ctx.Err() != nil {
					return nil, fmt.Errorf("read chunk %s: %w", ref.Key, ctx.Err())
				}
				if err == nil {
					defer done()
					if obj, ok, err := r.cache.Get(ctx, ref.Key); err == nil && ok {
						return fetchedObject{obj: obj, cached: true}, nil
					}
				}
			}
			obj, err := r.d.store.Get(ctx, ref.Key)
			if err != nil {
				return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
			}
			if h, err := chunk.Check(obj); err == nil && checkHeader(h, ref) == nil {
				// A failed Put (a full disk) only costs a later fetch.
				_ = r.cache.Put(ctx, ref.Key, obj)
			}
			return fetchedObject{obj: obj}, nil
		})
		if err != nil {
			if !ran && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
				continue // the fetch we waited for was cancelled by its caller
			}
			return fetchedObject{}, 0, err
		}
		o = v.(fetchedObject)
		if ran && !o.cached {
			n = int64(len(o.obj))
		}
		return o, n, nil
	}
}

// whole reads a whole chunk, verifies it and decodes it. A chunk whose
// data fails its checksum but whose blocks have checksums comes back
// salvaged (Fetched.damaged tells its bad samples).
func (r *chunkReader) whole(ctx context.Context, ref manifest.ChunkRef) (*Fetched, error) {
	t0 := time.Now()
	o, n, err := r.object(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.wholeFrom(ref, o, n, time.Since(t0))
}

// wholeFrom decodes a whole chunk object.
func (r *chunkReader) wholeFrom(ref manifest.ChunkRef, o fetchedObject, n int64, readTime time.Duration) (*Fetched, error) {
	t1 := time.Now()
	ch, err := decodeChunk(o.obj, ref, true)
	if err != nil {
		return nil, err
	}
	f := &Fetched{ch: ch, key: ref.Key, Bytes: n, Cached: o.cached, ReadTime: readTime, DecodeTime: time.Since(t1)}
	f.mem = int64(len(o.obj))
	if ch.Codec != chunk.CodecNone {
		f.mem += int64(len(ch.Raw))
	}
	return f, nil
}

// span reads samples [lo, hi) of a chunk by range: its header (known to the
// Dataset, or one range read) and the blocks that hold the samples, each
// decoded alone and checked against its checksum. A block that fails is an
// error for the span. errWhole: the chunk is not range-readable. With a
// cache, the range comes from the cached object, or the whole object is
// fetched once, put in the cache and the span served from it.
func (r *chunkReader) span(ctx context.Context, ref manifest.ChunkRef, lo, hi int) (*Fetched, error) {
	if lo < 0 || hi > int(ref.Rows) || lo >= hi {
		return nil, fmt.Errorf("read chunk %s: samples [%d, %d) of %d: %w", ref.Key, lo, hi, ref.Rows, ErrInvalidArgument)
	}
	if r.cache != nil {
		return r.spanCached(ctx, ref, lo, hi)
	}
	t0 := time.Now()
	h, n, err := r.d.header(ctx, ref)
	if err != nil {
		return nil, err
	}
	if !h.RangeReadable() {
		return nil, errWhole
	}
	if r.mapped {
		if f, err := r.spanMapped(ctx, ref, h, lo, hi); f != nil || err != nil {
			if f != nil {
				f.Bytes += n
			}
			return f, err
		}
	}
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	bufs := r.pool()
	stored := bufs.get(int(end - start))
	if len(stored) > 0 {
		if err := r.d.store.ReadRange(ctx, ref.Key, start, stored); err != nil {
			bufs.put(stored)
			return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
		}
	}
	f, err := spanFrom(bufs, ref, h, lo, hi, stored)
	if err != nil {
		return nil, err
	}
	f.Bytes, f.ReadTime = n+int64(len(stored)), time.Since(t0)-f.DecodeTime
	return f, nil
}

// spanCached is span through the cache: a range read of the cached object
// when the cache can (a chunkcache.RangeReader) and has it, else the whole
// object, fetched once for all concurrent readers and cached.
func (r *chunkReader) spanCached(ctx context.Context, ref manifest.ChunkRef, lo, hi int) (*Fetched, error) {
	if rr, ok := r.cache.(chunkcache.RangeReader); ok {
		if f, err := r.spanFromCache(ctx, rr, ref, lo, hi); f != nil || err != nil {
			return f, err
		}
	}
	t0 := time.Now()
	o, n, err := r.object(ctx, ref)
	if err != nil {
		return nil, err
	}
	readTime := time.Since(t0)
	h, err := chunk.ParseHeader(o.obj)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(h, ref); err != nil {
		return nil, err
	}
	r.d.chunks.put(ref.Key, nil, h)
	if !h.RangeReadable() {
		return r.wholeFrom(ref, o, n, readTime)
	}
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	if end > int64(len(o.obj)) {
		return nil, fmt.Errorf("read chunk %s: object is %d bytes, header says %d: %w", ref.Key, len(o.obj), h.Size(), ErrCorrupt)
	}
	// A copy: the span must not keep the whole object alive.
	bufs := r.pool()
	stored := bufs.get(int(end - start))
	copy(stored, o.obj[start:end])
	f, err := spanFrom(bufs, ref, h, lo, hi, stored)
	if err != nil {
		return nil, err
	}
	f.Bytes, f.Cached, f.ReadTime = n, o.cached, readTime
	return f, nil
}

// fill puts a chunk object in the cache unless it holds it (looked up by
// reading its header by range, which the Dataset then knows), fetching it
// whole once for all concurrent readers (object); n is the bytes read
// from the store. The fetched object's header is kept by the Dataset, so
// that spans read from the cache need no header read.
func (r *chunkReader) fill(ctx context.Context, ref manifest.ChunkRef) (n int64, err error) {
	if r.cache == nil {
		return 0, nil
	}
	if rr, ok := r.cache.(chunkcache.RangeReader); ok && ref.Header > 0 {
		buf := make([]byte, ref.Header)
		if ok, err := rr.ReadRange(ctx, ref.Key, 0, buf); err == nil && ok {
			if h, err := chunk.ParseHeader(buf); err == nil && checkHeader(h, ref) == nil {
				r.d.chunks.put(ref.Key, nil, h)
				return 0, nil
			}
		}
	}
	o, n, err := r.object(ctx, ref)
	if err != nil {
		return n, err
	}
	if h, err := chunk.ParseHeader(o.obj); err == nil && checkHeader(h, ref) == nil {
		r.d.chunks.put(ref.Key, nil, h)
	}
	return n, nil
}

// spanFromCache reads a span from the cached object by range: the header
// (unless the Dataset knows it) and the blocks. It returns nil and no error
// on a miss, including a cached object that fails its checks (then Get,
// which verifies it whole, drops it if it is damaged), and errWhole for a
// chunk that is not range-readable.
func (r *chunkReader) spanFromCache(ctx context.Context, rr chunkcache.RangeReader, ref manifest.ChunkRef, lo, hi int) (*Fetched, error) {
	t0 := time.Now()
	var h *chunk.Header
	if e := r.d.chunks.get(ref.Key); e != nil {
		h = e.header
	} else {
		buf := make([]byte, ref.Header)
		if ok, err := rr.ReadRange(ctx, ref.Key, 0, buf); err != nil || !ok {
			return nil, nil
		}
		var err error
		if h, err = chunk.ParseHeader(buf); err != nil || checkHeader(h, ref) != nil {
			r.dropIfDamaged(ctx, ref)
			return nil, nil
		}
		r.d.chunks.put(ref.Key, nil, h)
	}
	if !h.RangeReadable() {
		return nil, errWhole
	}
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	bufs := r.pool()
	stored := bufs.get(int(end - start))
	if ok, err := rr.ReadRange(ctx, ref.Key, start, stored); err != nil || !ok {
		bufs.put(stored)
		return nil, nil
	}
	readTime := time.Since(t0)
	f, err := spanFrom(bufs, ref, h, lo, hi, stored)
	if err != nil {
		r.dropIfDamaged(ctx, ref)
		return nil, nil
	}
	f.Cached, f.ReadTime = true, readTime
	return f, nil
}

// dropIfDamaged has the cache verify its copy of a chunk whole (Get drops
// an object that fails its content hash), after a range of it failed its
// checksums.
func (r *chunkReader) dropIfDamaged(ctx context.Context, ref manifest.ChunkRef) {
	_, _, _ = r.cache.Get(ctx, ref.Key)
}

// spanFrom decodes samples [lo, hi) of a range-readable chunk from stored,
// the bytes of the blocks that hold them in a buffer from bufs, which it
// takes over: the span's raw data is stored itself (codec none) or a
// buffer from bufs it is decoded into, stored then handed back.
func spanFrom(bufs *BufferPool, ref manifest.ChunkRef, h *chunk.Header, lo, hi int, stored []byte) (*Fetched, error) {
	t0 := time.Now()
	a, b := h.SpanBlocks(lo, hi)
	buf, decompress := stored, h.Codec != chunk.CodecNone && a < b
	if decompress {
		buf = bufs.get(int(min(h.BlockStart(b), h.RawLen) - h.BlockStart(a)))
	}
	raw, err := h.DecodeBlocks(stored, a, b, buf)
	if decompress {
		bufs.put(stored)
	}
	if err != nil {
		bufs.put(buf)
		return nil, fmt.Errorf("read chunk %s: samples [%d, %d): %w", ref.Key, lo, hi, err)
	}
	return &Fetched{hdr: h, key: ref.Key, lo: lo, hi: hi, raw: raw, rawOff: h.BlockStart(a), buf: buf, bufs: bufs,
		mem: int64(len(raw)), DecodeTime: time.Since(t0)}, nil
}

// header returns a chunk's parsed header, with one range read unless the
// Dataset's cache has it; n is the number of bytes read.
func (d *Dataset) header(ctx context.Context, ref manifest.ChunkRef) (h *chunk.Header, n int64, err error) {
	if e := d.chunks.get(ref.Key); e != nil {
		return e.header, 0, nil
	}
	buf := make([]byte, ref.Header)
	if err := d.store.ReadRange(ctx, ref.Key, 0, buf); err != nil {
		return nil, 0, fmt.Errorf("read chunk %s header: %w", ref.Key, err)
	}
	h, err = chunk.ParseHeader(buf)
	if err != nil {
		return nil, 0, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(h, ref); err != nil {
		return nil, 0, err
	}
	d.chunks.put(ref.Key, nil, h)
	return h, int64(len(buf)), nil
}

// decodeChunk verifies and decodes a chunk object against its reference.
// With salvage, a chunk whose data is damaged but whose blocks have
// checksums is returned with its bad blocks (chunk.DecodeDamaged).
func decodeChunk(obj []byte, ref manifest.ChunkRef, salvage bool) (*chunk.Chunk, error) {
	dec := chunk.Decode
	if salvage {
		dec = chunk.DecodeDamaged
	}
	ch, err := dec(obj, nil)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if err := checkHeader(ch.Header, ref); err != nil {
		return nil, err
	}
	return ch, nil
}

// checkHeader verifies that a chunk agrees with the fragment's reference:
// its counts and, for fragments of format 1.10, its header checksum, which
// tells a sound chunk stored under another chunk's name (docs/format.md
// §2.5 `hcrc`). Every header a reader parses passes through it.
func checkHeader(h *chunk.Header, ref manifest.ChunkRef) error {
	if int64(h.N) != ref.Rows || h.Len != ref.Header || h.Size() != ref.Size || h.RawLen != ref.Raw {
		return fmt.Errorf("read chunk %s: header says %d samples, %d header bytes, %d bytes, %d raw; fragment says %d, %d, %d, %d: %w",
			ref.Key, h.N, h.Len, h.Size(), h.RawLen, ref.Rows, ref.Header, ref.Size, ref.Raw, ErrCorrupt)
	}
	if ref.HCRC != 0 && h.CRC != ref.HCRC {
		return fmt.Errorf("read chunk %s: the object is another chunk (header checksum %08x, fragment says %08x): %w",
			ref.Key, h.CRC, ref.HCRC, ErrCorrupt)
	}
	return nil
}
