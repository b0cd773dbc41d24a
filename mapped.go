package loch

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/lru"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// Span reads of a Scan made with Mapped, on a store on this machine's
// disk (storage.Mappable), take the bytes of a span of at least
// mapMinSpan stored bytes from the chunk's file mapped into memory
// (storage.Map) rather than copying them out of the page cache into a
// buffer: the one copy left is the reader's, out of the mapping into its
// batch. The Dataset keeps the mappings (chunkMaps):
//
//   - a mapping lives while any fetched span holds it (its refs), and
//     stays mapped once idle among the mapIdle most recently used, so
//     that a chunk read again (a later span, the next epoch) is not mapped
//     anew; an idle mapping evicted, or any mapping once the Dataset is
//     closed and its last span released, is unmapped;
//   - a fetched span's samples alias the mapping: they are valid while the
//     span is (Fetched.Recycle releases it; a span dropped without it is
//     released when the collector finds it unreachable);
//   - a span released drops its pages from the process's memory
//     (storage.Mapped.Drop; they stay in the page cache), so that the
//     resident bytes of the mappings are those of the spans in use, which
//     their Fetched.Mem counts as a buffer's would be: a loader's memory
//     budget bounds them (a compressed span is decompressed into a buffer
//     of its own, and releases its mapping at once);
//   - each checksum block is verified the first time a span of the
//     mapping reads it (chunk.Verified); the chunk's bytes cannot change
//     under the mapping (objects are immutable), so a later read of the
//     block is not checked again. A block that fails fails every read.
//     Blocks stored as they are (codec none, no dictionary) are checked
//     when a sample over them is first taken from the span (Fetched.check)
//     rather than when the span is read: the checksum then brings the
//     sample's bytes into the CPU's cache just before the reader copies
//     them, instead of a pass over the whole span from memory first and
//     the copy's own pass later; a sample over a failing block is
//     ErrCorrupt, the rest of the span reads.
//
// Smaller spans (a full shuffle's single samples) are read by range as
// before: a mapping, a page fault per 64 KiB and a system call to drop
// the pages cost more than copying a few KiB.
const mapIdle = 128

// mapMinSpan is a const but for the tests, which map every span.
var mapMinSpan int64 = 64 << 10

// chunkMaps is a Dataset's mapped chunk files, by key.
type chunkMaps struct {
	mu     sync.Mutex
	all    map[string]*chunkMap          // in use or idle
	idle   *lru.Cache[string, *chunkMap] // those no span holds, sized 1 each
	closed bool                          // the Dataset is closed: map no more, unmap when idle
	made   atomic.Int64                  // mappings made, for tests
}

// chunkMap is one mapped chunk file.
type chunkMap struct {
	key      string
	m        *storage.Mapped
	refs     int // fetched spans holding it (chunkMaps.mu)
	verified *chunk.Verified
}

// acquire returns the mapping of ref's chunk with a reference taken
// (release gives it back): the one in use or idle, else, when create is
// set, a new one. It returns nil and no error when the chunk is not
// mapped: create is not set and none is kept, the store cannot map, or the
// Dataset is closed. A file whose size is not the fragment's is
// ErrCorrupt, naming the chunk.
func (cm *chunkMaps) acquire(ctx context.Context, st storage.Store, ref manifest.ChunkRef, h *chunk.Header, create bool) (*chunkMap, error) {
	cm.mu.Lock()
	if c := cm.take(ref.Key); c != nil || !create || cm.closed {
		cm.mu.Unlock()
		return c, nil
	}
	cm.mu.Unlock()
	m, ok, err := storage.Map(ctx, st, ref.Key)
	if err != nil {
		return nil, fmt.Errorf("read chunk %s: %w", ref.Key, err)
	}
	if !ok {
		return nil, nil
	}
	if int64(len(m.Data)) != ref.Size {
		_ = m.Close()
		return nil, fmt.Errorf("read chunk %s: object is %d bytes, fragment says %d: %w", ref.Key, len(m.Data), ref.Size, ErrCorrupt)
	}
	cm.made.Add(1)
	cm.mu.Lock()
	defer cm.mu.Unlock()
	if c := cm.take(ref.Key); c != nil || cm.closed { // mapped meanwhile by another read
		_ = m.Close()
		return c, nil
	}
	c := &chunkMap{key: ref.Key, m: m, refs: 1, verified: chunk.NewVerified(h.Blocks())}
	cm.all[ref.Key] = c
	return c, nil
}

// take returns key's mapping, in use or idle, with a reference taken, or
// nil (cm.mu held).
func (cm *chunkMaps) take(key string) *chunkMap {
	if cm.all == nil {
		cm.all = map[string]*chunkMap{}
		cm.idle = lru.New(mapIdle, func(k string, c *chunkMap, _ int64) {
			delete(cm.all, k)
			_ = c.m.Close()
		})
	}
	c, ok := cm.all[key]
	if !ok {
		return nil
	}
	if c.refs == 0 {
		cm.idle.Remove(key)
	}
	c.refs++
	return c
}

// release gives back a reference taken by acquire, for a span of the
// mapping's bytes [off, off+n) that is no longer read.
func (cm *chunkMaps) release(c *chunkMap, off, n int64) {
	c.m.Drop(off, n)
	cm.mu.Lock()
	defer cm.mu.Unlock()
	c.refs--
	if c.refs > 0 {
		return
	}
	if cm.closed {
		delete(cm.all, c.key)
		_ = c.m.Close()
		return
	}
	cm.idle.Add(c.key, c, 1)
}

// close unmaps the idle mappings; those in use are unmapped when their
// last span is released.
func (cm *chunkMaps) close() {
	cm.mu.Lock()
	defer cm.mu.Unlock()
	cm.closed = true
	for k, c := range cm.all {
		if c.refs == 0 {
			cm.idle.Remove(k)
			delete(cm.all, k)
			_ = c.m.Close()
		}
	}
}

// mapRef is a fetched span's reference to its mapping, released once: by
// Fetched.Recycle, or when the collector finds the Fetched unreachable.
type mapRef struct {
	maps    *chunkMaps
	c       *chunkMap
	off, n  int64
	release atomic.Bool
}

func (r *mapRef) done() {
	if r.release.CompareAndSwap(false, true) {
		r.maps.release(r.c, r.off, r.n)
	}
}

// spanMapped is span from the chunk's mapped file (see mapMinSpan): nil
// and no error when the span is not read so.
func (r *chunkReader) spanMapped(ctx context.Context, ref manifest.ChunkRef, h *chunk.Header, lo, hi int) (*Fetched, error) {
	t0 := time.Now()
	a, b := h.SpanBlocks(lo, hi)
	start, end := h.BlockRange(a, b)
	if a == b {
		return nil, nil
	}
	maps := &r.d.maps
	c, err := maps.acquire(ctx, r.d.store, ref, h, end-start >= mapMinSpan)
	if c == nil || err != nil {
		return nil, err
	}
	if end > int64(len(c.m.Data)) {
		maps.release(c, 0, 0)
		return nil, fmt.Errorf("read chunk %s: object is %d bytes, header says %d: %w", ref.Key, len(c.m.Data), h.Size(), ErrCorrupt)
	}
	stored := c.m.Data[start:end:end]
	var buf []byte
	bufs := r.pool()
	if h.Codec != chunk.CodecNone {
		buf = bufs.get(int(min(h.BlockStart(b), h.RawLen) - h.BlockStart(a)))
	}
	t1 := time.Now()
	var raw []byte
	if h.Deferrable() {
		raw, err = h.UncheckedBlocks(stored, a, b) // checked sample by sample (Fetched.check)
	} else {
		raw, err = h.DecodeBlocksOnce(stored, a, b, buf, c.verified)
	}
	if err != nil {
		if buf != nil {
			bufs.put(buf)
		}
		maps.release(c, start, end-start)
		return nil, fmt.Errorf("read chunk %s: samples [%d, %d): %w", ref.Key, lo, hi, err)
	}
	f := &Fetched{hdr: h, key: ref.Key, lo: lo, hi: hi, raw: raw, rawOff: h.BlockStart(a), buf: buf, bufs: bufs,
		mem: int64(len(raw)), Bytes: end - start, DecodeTime: time.Since(t1), ReadTime: t1.Sub(t0)}
	if buf != nil {
		// Decompressed into buf, which the span holds: the stored bytes
		// are not read again, and leave the process's memory now.
		maps.release(c, start, end-start)
		return f, nil
	}
	f.mapped = &mapRef{maps: maps, c: c, off: start, n: end - start}
	if h.Deferrable() {
		f.unchecked = c.verified
	}
	runtime.AddCleanup(f, (*mapRef).done, f.mapped)
	return f, nil
}
