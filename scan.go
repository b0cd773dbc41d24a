package loch

import (
	"context"
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
//   - a read is planned (Reads: a whole chunk, or the checksum blocks of one
//     sample), fetched (Fetch, verified against its checksums and its
//     fragment) and its samples taken out (Sample) and decoded into the
//     caller's buffers (Sample.DecodeInto).
//
// Chunk byte layouts, codecs, checksums and split samples stay inside the
// engine. Errors come back wrapped with the engine's sentinels (ErrNotFound,
// ErrCorrupt, ErrPermission, ...) and name the object.
//
// A Scan is safe for concurrent use once Load has returned. Unlike Column
// reads, Fetch does not go through the Dataset's in-memory chunk cache: a
// caller that schedules reads bounds its own memory.
type Scan struct {
	d     *Dataset
	s     *snapshot
	cache chunkcache.Cache
}

// Scan returns a scan of the handle's current snapshot. Call Load before
// the other methods.
func (d *Dataset) Scan() *Scan { return &Scan{d: d, s: d.current()} }

// WithCache returns a scan of the same snapshot whose whole-chunk fetches
// go through cache (for example a chunkcache.Disk shared by the ranks of a
// node): hits are read locally, fetched chunks are put there once they are
// verified, and cache failures count as misses.
func (sc *Scan) WithCache(cache chunkcache.Cache) *Scan {
	return &Scan{d: sc.d, s: sc.s, cache: cache}
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

// Version is the snapshot's id.
func (sc *Scan) Version() string { return sc.s.commitID }

// Len is the number of live rows.
func (sc *Scan) Len() int64 { return sc.s.man.Rows }

// Schema returns a copy of the snapshot's schema.
func (sc *Scan) Schema() schema.Schema { return sc.s.man.Schema.Clone() }

// Retries is the number of reads the dataset's store has retried so far
// (all scans of the dataset together).
func (sc *Scan) Retries() int64 { return storage.Retries(sc.d.store) }

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
// hold one sample of it. Read{Chunk: id} reads the whole chunk. Reads are
// comparable: equal reads fetch the same bytes, so a caller fetches each
// once.
type Read struct {
	Chunk  ChunkID
	sample int32 // 0: the whole chunk; else 1 + the sample read by range
}

// Reads plans the fetches that slot's sample needs, one per piece. sparse
// says the caller will take few samples of the chunk (a random-access
// order): the plan then reads just the sample's checksum blocks by range
// where the chunk's data is stored as is, and the whole chunk otherwise.
func (sc *Scan) Reads(slot Slot, sparse bool) []Read {
	out := make([]Read, slot.pieces)
	for p := range out {
		out[p] = Read{Chunk: slot.Chunk(p)}
	}
	if sparse && slot.pieces == 1 && storedAsIs(sc.ref(slot.first)) {
		out[0].sample = int32(slot.index) + 1
	}
	return out
}

// storedAsIs reports whether a chunk's fragment reference says its data is
// stored without a codec (data bytes equal raw bytes). Only a plan relies on
// it: the fetch reads the header and falls back to the whole chunk when the
// header says otherwise.
func storedAsIs(ref manifest.ChunkRef) bool { return ref.Size == int64(ref.Header)+ref.Raw+4 }

// Estimate is an upper bound on the memory a fetched read holds, for
// budgeting before the fetch; Fetched.Mem is the exact figure after it.
func (sc *Scan) Estimate(r Read) int64 {
	ref := sc.ref(r.Chunk)
	if r.sample > 0 {
		return sampleEstimate(ref)
	}
	return ref.Raw + ref.Size
}

// Fetch performs a planned read: it reads the bytes (from the scan's cache
// when it has them), verifies them against their checksums and their
// fragment reference and decodes them.
func (sc *Scan) Fetch(ctx context.Context, r Read) (*Fetched, error) {
	ref := sc.ref(r.Chunk)
	if r.sample > 0 {
		f, err := sc.d.readSampleBlocks(ctx, ref, int(r.sample)-1)
		if err == nil || !errorsIsCompressed(err) {
			return f, err
		}
		// The header says the data is compressed after all.
	}
	return sc.d.readChunk(ctx, ref, sc.cache)
}

// Sample returns slot's sample as stored, from the fetched reads that
// Reads(slot, ...) planned, in that order. Data aliases the fetched
// memory: it stays valid while the caller holds the Fetched values and
// must not be modified. Null slots need no reads.
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
