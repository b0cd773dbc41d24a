package loch

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// Scan is the engine's read API for subsystems that schedule their own
// reads: the streaming loader, the benchmarks, and readers to come (the SQL
// table function, vector search). It is one immutable snapshot at chunk
// granularity:
//
//   - rows are addressed by position (Locate) and identified by their
//     stable ids (RowID, Positions);
//   - the samples of a column live in chunks named by opaque ChunkIDs
//     (Slot, Chunks, Blocks);
//   - a read is planned (Reads, Span: a whole chunk, or the checksum
//     blocks that hold a span of its samples), fetched (Fetch, verified
//     against its checksums and its fragment) and its samples taken out
//     (Sample) and decoded into the caller's buffers (Sample.DecodeInto).
//
// Chunk byte layouts, codecs, checksums and split samples stay inside the
// engine. Errors come back wrapped with the engine's sentinels (ErrNotFound,
// ErrCorrupt, ErrPermission, ...) and name the object.
//
// A Scan is safe for concurrent use once Load has returned. Unlike Column
// reads, Fetch does not keep chunks in the Dataset's in-memory chunk cache
// (only their parsed headers, which span reads need): a caller that
// schedules reads bounds its own memory.
type Scan struct {
	d  *Dataset
	s  *snapshot
	rd *chunkReader
}

// Scan returns a scan of the handle's current snapshot. Call Load before
// the other methods.
func (d *Dataset) Scan() *Scan { return &Scan{d: d, s: d.current(), rd: &chunkReader{d: d}} }

// WithCache returns a scan of the same snapshot whose fetches go through
// cache (for example a chunkcache.Disk shared by the ranks of a node).
// Cache failures count as misses; a chunk whose data is damaged is never
// put there.
//
// A whole-chunk fetch reads the chunk from the cache on a hit; on a miss
// it reads it from the store and puts it in the cache once it passes its
// checks. A span fetch (Span) reads its header and blocks from the cache
// by range when the cache is a chunkcache.RangeReader and holds the chunk
// (the blocks' checksums verify them; a cached chunk that fails them is
// verified whole by the cache's Get, which drops it if it is damaged, and
// the fetch goes on as a miss). On a miss it fetches the whole chunk object
// once, puts it in the cache and takes the span from it, so that the first
// pass over a dataset reads each chunk once from the store and later passes
// read locally; the fetch briefly holds the whole object. Concurrent
// fetches of one chunk on the returned Scan wait for one read of it.
func (sc *Scan) WithCache(cache chunkcache.Cache) *Scan {
	return &Scan{d: sc.d, s: sc.s, rd: &chunkReader{d: sc.d, cache: cache, bufs: sc.rd.bufs}}
}

// Mapped returns a scan of the same snapshot whose span fetches (Span) of
// a dataset on this machine's disk take their bytes from the chunk file
// mapped into memory, read-only, instead of copying them into a buffer:
// spans of at least 64 KiB, or of a chunk mapped already; smaller ones,
// other stores and a scan with a cache read as before. A span's checksum
// blocks are verified the first time a span of the mapping reads them;
// the Dataset keeps a chunk mapped while a fetched span holds it and the
// 128 it used last once idle, and unmaps them when closed.
//
// The caller keeps the Fetched of a mapped span while it uses its
// samples, whose Data aliases the mapping (reading it after the span is
// recycled, or collected, faults), and calls Recycle once done: its pages
// then leave the process's memory (they stay in the page cache), so that
// Fetched.Mem of the spans held counts the mapped memory in use. A chunk
// file must not be rewritten in place while it is mapped (a Store never
// does).
func (sc *Scan) Mapped() *Scan {
	rd := &chunkReader{d: sc.d, cache: sc.rd.cache, mapped: sc.rd.cache == nil, bufs: sc.rd.bufs}
	return &Scan{d: sc.d, s: sc.s, rd: rd}
}

// WithBuffers returns a scan of the same snapshot whose span fetches take
// their buffers from p and hand them back to it when recycled
// (Fetched.Recycle), so that its owner can bound the idle ones with the
// spans it holds (a loader keeps both within its memory budget). Other
// scans hand them to a process-wide sync.Pool, which the garbage
// collector empties.
func (sc *Scan) WithBuffers(p *BufferPool) *Scan {
	rd := &chunkReader{d: sc.d, cache: sc.rd.cache, mapped: sc.rd.mapped, bufs: p}
	return &Scan{d: sc.d, s: sc.s, rd: rd}
}

// Load reads every fragment object of the snapshot, with at most
// parallelism reads at once.
func (sc *Scan) Load(ctx context.Context, parallelism int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallelism, 1))
	for _, f := range sc.s.frags {
		g.Go(func() error { return f.load(gctx, sc.d) })
	}
	return g.Wait()
}

// URL is the dataset's URL.
func (sc *Scan) URL() string { return sc.d.url }

// Local reports whether the dataset is stored on this machine (a local
// directory or memory: storage.Local), where a read costs no request.
func (sc *Scan) Local() bool { return storage.Local(sc.d.url) }

// Version is the snapshot's id.
func (sc *Scan) Version() string { return sc.s.commitID }

// Len is the number of live rows.
func (sc *Scan) Len() int64 { return sc.s.man.Rows }

// Schema returns a copy of the snapshot's schema: the columns' definitions
// (their statistics are in Columns).
func (sc *Scan) Schema() schema.Schema { return sc.s.man.Schema.Clone() }

// Columns returns the snapshot's columns, in schema order, each with the
// statistics of its samples there (copies).
func (sc *Scan) Columns() []schema.Entry { return sc.s.man.Entries() }

// Retries is the number of reads the dataset's store has retried so far
// (all scans of the dataset together).
func (sc *Scan) Retries() int64 { return storage.Retries(sc.d.store) }

// RetryStats returns the retry counters of the dataset's store so far (all
// scans of the dataset together): how often and how long it rode out
// storage failures.
func (sc *Scan) RetryStats() storage.RetryStats { return storage.RetryStatsOf(sc.d.store) }

// RowLoc is a located row: where its samples are. Its zero value is not a
// row.
type RowLoc struct {
	frag int
	off  int64
	// ID is the row's stable id.
	ID uint64
}

// Locate finds the row at position pos.
func (sc *Scan) Locate(pos int64) (RowLoc, error) {
	if pos < 0 || pos >= sc.s.man.Rows {
		return RowLoc{}, fmt.Errorf("row %d of %s out of range [0, %d): %w", pos, sc.d.url, sc.s.man.Rows, ErrNotFound)
	}
	k := sort.Search(len(sc.s.frags), func(k int) bool { return sc.s.cum[k+1] > pos })
	f := sc.s.frags[k]
	off := physical(f.deleted, pos-sc.s.cum[k])
	return RowLoc{frag: k, off: off, ID: f.rowID(off)}, nil
}

// RowID returns the stable id of the row at position pos.
func (sc *Scan) RowID(pos int64) (uint64, error) {
	r, err := sc.Locate(pos)
	return r.ID, err
}

// Positions maps row ids to their positions, in the order given. An id
// given twice is ErrInvalidArgument; an id that is not a live row of the
// snapshot is ErrNotFound.
func (sc *Scan) Positions(ids []uint64) ([]int64, error) {
	want := make(map[uint64]int, len(ids))
	for i, id := range ids {
		if _, dup := want[id]; dup {
			return nil, fmt.Errorf("row id %d appears twice: %w", id, ErrInvalidArgument)
		}
		want[id] = i
	}
	out := make([]int64, len(ids))
	found := 0
	for k, f := range sc.s.frags {
		if found == len(ids) {
			break
		}
		d, pos := 0, sc.s.cum[k]
		for off := int64(0); pos < sc.s.cum[k+1]; off++ {
			if d < len(f.deleted) && f.deleted[d] == off {
				d++
				continue
			}
			if i, ok := want[f.rowID(off)]; ok {
				out[i] = pos
				found++
			}
			pos++
		}
	}
	if found != len(ids) {
		return nil, fmt.Errorf("%d of the %d row ids are not in version %s of %s: %w", len(ids)-found, len(ids), sc.s.commitID, sc.d.url, ErrNotFound)
	}
	return out, nil
}

// ChunkID names one chunk object of a Scan's snapshot. It is comparable
// (usable as a map key) and meaningful only to the Scan that made it.
type ChunkID struct {
	frag int32
	uid  int32
	k    int32 // index in the fragment's chunk list of the column
}

// ref is the chunk's fragment reference.
func (sc *Scan) ref(id ChunkID) manifest.ChunkRef {
	return sc.s.frags[id.frag].cols[int(id.uid)][id.k]
}

// ChunkBounds returns bounds of the non-null values of chunk id, lo <= v
// <= hi (format 1.14 chunk statistics, docs/format.md §3.4); ok is false
// when the fragment records none (older writers, dtypes without them, a
// chunk with a NaN, an infinity or no non-null value). A reader may skip a chunk that
// no value in [lo, hi] can match.
func (sc *Scan) ChunkBounds(id ChunkID) (lo, hi float64, ok bool) {
	ref := sc.ref(id)
	if ref.Min == nil || ref.Max == nil {
		return 0, 0, false
	}
	return *ref.Min, *ref.Max, true
}

// ChunkRows returns the positions [lo, hi) of the live rows whose samples
// chunk id holds (for a piece of a split sample, its one row); lo == hi
// when every row of the chunk is deleted. A reader that skips the chunk
// (ChunkBounds) may skip those positions without locating them.
func (sc *Scan) ChunkRows(id ChunkID) (lo, hi int64) {
	ref := sc.ref(id)
	f := sc.s.frags[id.frag]
	first, end := ref.First, ref.First+ref.Rows
	if ref.Parts > 0 {
		end = first + 1
	}
	base := sc.s.cum[id.frag]
	lo = base + first - countIn(f.deleted, 0, first)
	hi = base + end - countIn(f.deleted, 0, end)
	return lo, hi
}

// ChunkBytes is the size of chunk id's object in the store: what a fetch
// of the whole chunk reads (Fill holds no more).
func (sc *Scan) ChunkBytes(id ChunkID) int64 { return sc.ref(id).Size }

// ChunkKey is the chunk's storage key, for messages and tools.
func (sc *Scan) ChunkKey(id ChunkID) string { return sc.ref(id).Key }

// Chunks returns every chunk object of column uid, in row order (each piece
// of a split sample is one chunk).
func (sc *Scan) Chunks(uid int) []ChunkID {
	var out []ChunkID
	for k, f := range sc.s.frags {
		for j := range f.cols[uid] {
			out = append(out, ChunkID{frag: int32(k), uid: int32(uid), k: int32(j)})
		}
	}
	return out
}

// Blocks returns, in row order, the number of live rows of each chunk of
// column uid that holds any (a split sample is one chunk of one row); a
// fragment where the column is empty counts as one block. The blocks tile
// the snapshot's positions: they are the units a block shuffle keeps
// together so that each costs one chunk fetch.
func (sc *Scan) Blocks(uid int) []int64 {
	var blocks []int64
	for k, f := range sc.s.frags {
		refs := f.cols[uid]
		if len(refs) == 0 {
			if live := sc.s.cum[k+1] - sc.s.cum[k]; live > 0 {
				blocks = append(blocks, live)
			}
			continue
		}
		for _, r := range refs {
			if r.Parts > 0 && r.Part > 0 {
				continue
			}
			lo, hi := r.First, r.First+r.Rows
			if r.Parts > 0 {
				hi = lo + 1
			}
			if n := (hi - lo) - countIn(f.deleted, lo, hi); n > 0 {
				blocks = append(blocks, n)
			}
		}
	}
	return blocks
}

// countIn counts the values of a sorted slice in [lo, hi).
func countIn(sorted []int64, lo, hi int64) int64 {
	a := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= lo })
	b := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= hi })
	return int64(b - a)
}

// Slot says where the sample of one row in one column lives: a chunk and
// the sample's index in it, or the pieces of a split sample, or nowhere
// (the column is empty in the row's fragment: the sample is null).
type Slot struct {
	first  ChunkID
	pieces int // 0: null; 1: one chunk; more: a split sample's pieces
	index  int
}

// Null reports whether the column holds nothing for the row.
func (s Slot) Null() bool { return s.pieces == 0 }

// Pieces is the number of chunks the sample spans: 0 when null, more than
// one for a sample split across chunks.
func (s Slot) Pieces() int { return s.pieces }

// Chunk returns the p-th chunk of the sample, 0 <= p < Pieces.
func (s Slot) Chunk(p int) ChunkID {
	id := s.first
	id.k += int32(p)
	return id
}

// Index is the sample's index in its chunk Chunk(0): 0 for a split
// sample (each piece is a chunk of one sample) and for a null slot.
func (s Slot) Index() int { return s.index }

// Slot locates row r's sample of column uid.
func (sc *Scan) Slot(r RowLoc, uid int) Slot {
	refs := sc.s.frags[r.frag].cols[uid]
	if len(refs) == 0 {
		return Slot{}
	}
	k := searchRef(refs, r.off)
	id := ChunkID{frag: int32(r.frag), uid: int32(uid), k: int32(k)}
	if p := refs[k].Parts; p > 0 {
		return Slot{first: id, pieces: p}
	}
	return Slot{first: id, pieces: 1, index: int(r.off - refs[k].First)}
}

// Read is one planned fetch: a whole chunk, or the checksum blocks that
// hold a span of its samples (Span). Read{Chunk: id} reads the whole
// chunk. Reads are comparable: equal reads fetch the same bytes, so a
// caller fetches each once.
type Read struct {
	Chunk  ChunkID
	lo, hi int32 // samples [lo, hi) read by range; hi == 0: the whole chunk
}

// Span plans a read of samples [lo, hi) of chunk id: the checksum blocks
// that hold them, each decoded alone (decompressed, for a chunk of codec
// lz4 or zstd of format 1.1) and verified against its checksum. It plans
// the whole chunk instead when a range read would not pay or cannot be
// made: a chunk of at most two checksum blocks, a piece of a split sample,
// a span of every sample, an empty or out-of-range span, and a chunk that
// the Dataset has already found to be not range-readable (a format 1.0
// compressed chunk). Fetch falls back to the whole chunk for one it finds
// so.
func (sc *Scan) Span(id ChunkID, lo, hi int) Read {
	ref := sc.ref(id)
	if lo < 0 || hi > int(ref.Rows) || lo >= hi || hi-lo == int(ref.Rows) || !sc.d.spanWorth(ref) {
		return Read{Chunk: id}
	}
	return Read{Chunk: id, lo: int32(lo), hi: int32(hi)}
}

// Reads plans the fetches that slot's sample needs, one per piece. sparse
// says the caller will take few samples of the chunk (a random-access
// order): the plan for a one-piece sample is then Span of the sample
// alone; otherwise it reads whole chunks.
func (sc *Scan) Reads(slot Slot, sparse bool) []Read {
	if sparse && slot.pieces == 1 {
		return []Read{sc.Span(slot.first, slot.index, slot.index+1)}
	}
	out := make([]Read, slot.pieces)
	for p := range out {
		out[p] = Read{Chunk: slot.Chunk(p)}
	}
	return out
}

// Estimate bounds the memory a fetched read holds, for budgeting before
// the fetch; Fetched.Mem is the exact figure after it. For a whole chunk
// it is an upper bound. For a span it is one too, exact once the Dataset
// knows the chunk's header (after any read of the chunk), and from the
// column's largest sample otherwise (for png/jpeg columns, whose stored
// sizes the statistics do not give, the span's share of the chunk plus two
// checksum blocks: an estimate); except that a span that Fetch reads whole
// after all, a format 1.0 compressed chunk read for the first time, holds
// the whole chunk.
func (sc *Scan) Estimate(r Read) int64 {
	ref := sc.ref(r.Chunk)
	if r.hi > 0 {
		return sc.d.spanEstimate(ref, int(r.lo), int(r.hi), sc.maxSampleBytes(int(r.Chunk.uid)))
	}
	return ref.Raw + ref.Size
}

// maxSampleBytes is the stored size of column uid's largest sample, from
// the snapshot's statistics, or -1 when they do not give it (no
// statistics, or png/jpeg samples).
func (sc *Scan) maxSampleBytes(uid int) int64 {
	for _, c := range sc.s.man.Schema.Columns {
		if c.UID != uid {
			continue
		}
		st := sc.s.man.Stats[uid]
		if st == nil || st.MaxShape == nil || (c.SampleCompression != schema.SampleNone && c.SampleCompression != "") {
			return -1
		}
		return int64(schema.NumElements(st.MaxShape)) * int64(max(c.DType.Size(), 1))
	}
	return -1
}

// Fetch performs a planned read: it reads the bytes (through the scan's
// cache, if it has one: see WithCache), verifies them against their
// checksums and their fragment reference and decodes them. A span whose
// blocks fail their checksums is an ErrCorrupt error; a whole chunk whose
// data is damaged but whose sound blocks can be told apart comes back, and
// Sample fails for the samples in its damaged blocks only.
func (sc *Scan) Fetch(ctx context.Context, r Read) (*Fetched, error) {
	ref := sc.ref(r.Chunk)
	if r.hi > 0 {
		f, err := sc.rd.span(ctx, ref, int(r.lo), int(r.hi))
		if !errors.Is(err, errWhole) {
			return f, err
		}
	}
	return sc.rd.whole(ctx, ref)
}

// Fill puts chunk id's object in the scan's cache (see WithCache),
// fetching it whole from the store unless the cache holds it already, and
// returns the bytes it read from the store: 0 for a cached chunk or a scan
// without a cache. Fetches of the chunk on the same Scan made meanwhile
// wait for this one read. The object is not kept: a loader fills the cache
// ahead of its reads (a full shuffle's first epoch) and its reads take
// their spans from the cache.
func (sc *Scan) Fill(ctx context.Context, id ChunkID) (int64, error) {
	return sc.rd.fill(ctx, sc.ref(id))
}

// Sample returns slot's sample as stored, from the fetched reads that
// Reads(slot, ...) planned, in that order (for a one-piece slot, any
// fetched whole chunk or span that holds slot.Index() will do; another is
// ErrInvalidArgument). Data aliases the fetched memory: it stays valid
// while the caller holds the Fetched values and must not be modified. Null
// slots need no reads. A sample that overlaps a damaged block of a fetched
// whole chunk is ErrCorrupt, naming the chunk and the sample.
func (sc *Scan) Sample(slot Slot, got []*Fetched) (Sample, error) {
	if slot.pieces == 0 {
		return Sample{Null: true}, nil
	}
	if len(got) != slot.pieces {
		return Sample{}, fmt.Errorf("sample of chunk %s: %d fetched reads for %d pieces: %w", sc.ref(slot.first).Key, len(got), slot.pieces, ErrInvalidArgument)
	}
	if slot.pieces > 1 {
		refs := sc.s.frags[slot.first.frag].cols[int(slot.first.uid)][slot.first.k:][:slot.pieces]
		return assemble(refs, got)
	}
	return got[0].sample(sc.ref(slot.first), slot.index)
}

// PlainSample returns the bytes of slot's sample, which f (the read of
// its chunk) holds, when it is stored as is in shape shape (C-contiguous,
// as Sample's Data would be, aliasing f, without a Sample's allocations);
// ok is false for any other sample (null, split into pieces, encoded,
// another shape, damaged, not in f), which Sample gives instead.
func (sc *Scan) PlainSample(slot Slot, f *Fetched, shape []int) (data []byte, ok bool) {
	if slot.pieces != 1 || f == nil || f.key != sc.ref(slot.first).Key {
		return nil, false
	}
	return f.plain(slot.index, shape)
}

// LocateRange appends the located rows at positions [lo, hi) to buf, in
// order, and returns it: Locate for each, in time linear in the rows.
func (sc *Scan) LocateRange(lo, hi int64, buf []RowLoc) ([]RowLoc, error) {
	if lo >= hi {
		return buf, nil
	}
	r, err := sc.Locate(lo)
	if err != nil {
		return buf, err
	}
	if hi > sc.s.man.Rows {
		return buf, fmt.Errorf("rows [%d, %d) of %s out of range [0, %d): %w", lo, hi, sc.d.url, sc.s.man.Rows, ErrNotFound)
	}
	k, off := r.frag, r.off
	f := sc.s.frags[k]
	d := sort.Search(len(f.deleted), func(i int) bool { return f.deleted[i] > off })
	for pos := lo; pos < hi; pos++ {
		for pos >= sc.s.cum[k+1] { // next fragment
			k++
			f, off, d = sc.s.frags[k], 0, 0
		}
		if d == len(f.deleted) && f.ref.IDStart != nil {
			// No deleted row ahead in the fragment, ids by offset: the
			// rows up to its end at once.
			end, id0 := min(hi, sc.s.cum[k+1]), *f.ref.IDStart
			for ; pos < end; pos++ {
				buf = append(buf, RowLoc{frag: k, off: off, ID: id0 + uint64(off)})
				off++
			}
			pos--
			continue
		}
		for d < len(f.deleted) && f.deleted[d] == off {
			off++
			d++
		}
		buf = append(buf, RowLoc{frag: k, off: off, ID: f.rowID(off)})
		off++
	}
	return buf, nil
}

// SampleInfo returns the shape of slot's sample and the bytes it takes as
// stored (for png/jpeg, the encoded image), from its chunk's header alone:
// one range read of the header, which the Dataset then keeps, and none of
// the sample's data (but for a text or json value of a dictionary chunk,
// whose index is read by range: its value's length is its shape and its
// stored bytes). A null slot gives a nil shape.
func (sc *Scan) SampleInfo(ctx context.Context, slot Slot) (shape []int, stored int64, err error) {
	if slot.pieces == 0 {
		return nil, 0, nil
	}
	ref := sc.ref(slot.first)
	h, _, err := sc.d.header(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	if slot.pieces > 1 {
		return h.Shape(0), int64(h.Partial.Total), nil
	}
	if h.Null(slot.index) {
		return nil, 0, nil
	}
	if h.Dict() {
		// A text or json value of a dictionary chunk: its shape is its
		// length, which its index, read by range, gives.
		f, err := sc.Fetch(ctx, sc.Span(slot.first, slot.index, slot.index+1))
		if err != nil {
			return nil, 0, err
		}
		defer f.Recycle()
		s, err := sc.Sample(slot, []*Fetched{f})
		if err != nil {
			return nil, 0, err
		}
		return s.Shape, int64(len(s.Data)), nil
	}
	a, b := h.Range(slot.index)
	return h.Shape(slot.index), b - a, nil
}

// SlotCursor locates the samples of one column for rows taken in
// increasing position order, as Slot does, with the fragment's chunk list
// and the last chunk found kept between calls: a table scan's per-row
// lookup. It is not safe for concurrent use; make one per goroutine.
type SlotCursor struct {
	sc   *Scan
	uid  int
	frag int
	refs []manifest.ChunkRef
	k    int
}

// SlotCursor returns a cursor over column uid.
func (sc *Scan) SlotCursor(uid int) *SlotCursor { return &SlotCursor{sc: sc, uid: uid, frag: -1} }

// Run returns the slot of locs[0] (Slot(locs[0])) and the number n >= 1
// of rows at the start of locs whose samples follow it one after another
// in its chunk: locs[j]'s sample is sample Index()+j of Chunk(0), for j <
// n. n is 1 for a null or split sample. A table scan takes the rows of a
// run at once (Fetched.Fixed) instead of one by one.
func (c *SlotCursor) Run(locs []RowLoc) (Slot, int) {
	first := c.Slot(locs[0])
	if first.pieces != 1 {
		return first, 1
	}
	r := locs[0]
	ref := c.refs[c.k]
	end := ref.First + ref.Rows - r.off // samples of the chunk from r on
	m := int(min(int64(len(locs)), end))
	// Rows in increasing position order have increasing (fragment, offset):
	// locs[n] follows r one after another for a prefix of n, found by
	// bisection.
	n := 1 + sort.Search(m-1, func(j int) bool {
		l := locs[j+1]
		return l.frag != r.frag || l.off != r.off+int64(j+1)
	})
	return first, n
}

// Slot is Scan.Slot(r, uid).
func (c *SlotCursor) Slot(r RowLoc) Slot {
	if r.frag != c.frag {
		c.frag, c.refs, c.k = r.frag, c.sc.s.frags[r.frag].cols[c.uid], 0
	}
	refs := c.refs
	if len(refs) == 0 {
		return Slot{}
	}
	if k := c.k; k >= len(refs) || refs[k].First > r.off || r.off >= refs[k].First+max(refs[k].Rows, 1) || (refs[k].Parts > 0 && refs[k].Part > 0) {
		c.k = searchRef(refs, r.off)
	}
	id := ChunkID{frag: int32(r.frag), uid: int32(c.uid), k: int32(c.k)}
	if p := refs[c.k].Parts; p > 0 {
		return Slot{first: id, pieces: p}
	}
	return Slot{first: id, pieces: 1, index: int(r.off - refs[c.k].First)}
}
