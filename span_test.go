package loch

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

var spanCodecs = []schema.ChunkCodec{schema.CodecNone, schema.LZ4, schema.Zstd}

// spanDataset makes a dataset of one ragged uint8 column "v" of the given
// codec: n samples of 1 to 6000 random (incompressible, so that chunks
// stay large after compression) bytes, every 11th null, in chunks of about
// 1 MiB, so of many checksum blocks. want[i] is row i's bytes, nil when
// null.
func spanDataset(t *testing.T, r *rand.Rand, codec schema.ChunkCodec, n int) (d *Dataset, dir string, want [][]byte) {
	t.Helper()
	d, dir = mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "v", DType: schema.Uint8, Shape: schema.Shape{-1}, ChunkBytes: 1 << 20, ChunkCompression: codec},
	}})
	want = make([][]byte, n)
	rows := make([]Row, n)
	for i := range rows {
		if i%11 == 3 {
			rows[i] = Row{}
			continue
		}
		b := make([]byte, 1+r.IntN(6000))
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		want[i] = b
		rows[i] = Row{"v": Tensor([]int{len(b)}, b)}
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	return d, dir, want
}

// scanOf loads a scan of d and returns it with column v's uid.
func scanOf(t *testing.T, d *Dataset) (*Scan, int) {
	t.Helper()
	sc := loadedScan(t, d, 2)
	sch := sc.Schema()
	c, ok := sch.Column("v")
	require.True(t, ok)
	return sc, c.UID
}

// chunkRows returns, for each chunk of column uid, the positions of its
// rows (a dataset without deletions: position = fragment offset).
func chunkRows(sc *Scan, uid int) (ids []ChunkID, first []int64) {
	for _, id := range sc.Chunks(uid) {
		ids = append(ids, id)
		first = append(first, sc.ref(id).First)
	}
	return ids, first
}

func requireSample(t *testing.T, want []byte, got Sample, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if want == nil {
		require.True(t, got.Null, msg)
		return
	}
	require.False(t, got.Null, msg)
	require.True(t, bytes.Equal(want, got.Data), msg)
	require.Equal(t, []int{len(want)}, got.Shape, msg)
}

// TestSpanReadsMatchWholeReads reads random spans of chunks of every codec
// by range and compares each sample with the whole chunk's; a span holds
// only its samples, costs fewer bytes than the whole chunk and is bounded
// by its estimate.
func TestSpanReadsMatchWholeReads(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 21))
	for _, codec := range spanCodecs {
		d, _, want := spanDataset(t, r, codec, 1000)
		sc, uid := scanOf(t, d)
		ids, first := chunkRows(sc, uid)
		require.Greater(t, len(ids), 1, "codec %s: several chunks", codec)
		for c, id := range ids {
			whole, err := sc.Fetch(ctx, Read{Chunk: id})
			require.NoError(t, err)
			require.True(t, whole.Whole())
			n := whole.Len()
			for range 20 {
				lo := r.IntN(n)
				hi := lo + 1 + r.IntN(min(n-lo, 40))
				msg := fmt.Sprintf("codec %s chunk %d span [%d, %d) (seed %d)", codec, c, lo, hi, seed)
				read := sc.Span(id, lo, hi)
				if hi-lo == n {
					require.Equal(t, Read{Chunk: id}, read, msg)
					continue
				}
				estimate := sc.Estimate(read)
				f, err := sc.Fetch(ctx, read)
				require.NoError(t, err, msg)
				require.False(t, f.Whole(), msg)
				require.Equal(t, hi-lo, f.Len(), msg)
				require.LessOrEqual(t, f.Mem(), estimate, msg)
				require.Less(t, f.Bytes, whole.Bytes, msg)
				for j := lo; j < hi; j++ {
					got, err := f.sample(sc.ref(id), j)
					require.NoError(t, err, msg)
					requireSample(t, want[first[c]+int64(j)], got, "%s sample %d", msg, j)
				}
				if lo > 0 {
					_, err := f.sample(sc.ref(id), lo-1)
					require.ErrorIs(t, err, ErrInvalidArgument, "a span holds only its samples")
				}
			}
		}
		// Full-shuffle plans: one sample by range, through Slot and Sample.
		for range 50 {
			pos := r.Int64N(sc.Len())
			slot := sc.Slot(mustLocate(t, sc, pos), uid)
			reads := sc.Reads(slot, true)
			require.Len(t, reads, 1)
			require.Equal(t, sc.Span(slot.Chunk(0), slot.Index(), slot.Index()+1), reads[0])
			f, err := sc.Fetch(ctx, reads[0])
			require.NoError(t, err)
			require.False(t, f.Whole(), "codec %s: a sample of a large chunk is read by range", codec)
			got, err := sc.Sample(slot, []*Fetched{f})
			require.NoError(t, err)
			requireSample(t, want[pos], got, "codec %s row %d", codec, pos)
			other := sc.Slot(mustLocate(t, sc, (pos+1)%sc.Len()), uid)
			if other.Chunk(0) == slot.Chunk(0) {
				_, err = sc.Sample(other, []*Fetched{f})
				require.ErrorIs(t, err, ErrInvalidArgument, "a span that does not hold the slot's sample")
			} else {
				_, err = sc.Sample(other, []*Fetched{f})
				require.ErrorIs(t, err, ErrInvalidArgument, "a fetch of another chunk")
			}
		}
	}
}

func TestSpanPlans(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "small", DType: schema.Uint8, Shape: schema.Shape{100}, ChunkCompression: schema.LZ4},
		{Name: "v", DType: schema.Uint8, Shape: schema.Shape{1000}, ChunkBytes: 1 << 20},
	}})
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		b := make([]byte, 1000)
		for k := range b {
			b[k] = byte(r.Uint32())
		}
		require.NoError(t, d.Append(ctx, Row{"small": Tensor([]int{100}, b[:100]), "v": Tensor([]int{1000}, b)}))
	}
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	sc, uid := scanOf(t, d)
	sch := sc.Schema()
	small, _ := sch.Column("small")
	id := sc.Chunks(uid)[0]
	require.Equal(t, Read{Chunk: id, lo: 3, hi: 9}, sc.Span(id, 3, 9))
	for _, span := range [][2]int{{0, 500}, {5, 5}, {6, 5}, {-1, 3}, {499, 501}} {
		require.Equal(t, Read{Chunk: id}, sc.Span(id, span[0], span[1]), "span %v: the whole chunk", span)
	}
	sid := sc.Chunks(small.UID)[0]
	require.Less(t, sc.ref(sid).Size, int64(2*chunk.BlockSize))
	require.Equal(t, Read{Chunk: sid}, sc.Span(sid, 3, 4), "a chunk of two blocks or less is read whole")
	require.Equal(t, []Read{{Chunk: id}}, sc.Reads(sc.Slot(mustLocate(t, sc, 7), uid), false), "a dense plan reads whole chunks")
	require.Equal(t, 7, sc.Slot(mustLocate(t, sc, 7), uid).Index())
}

// TestSpanEstimateBoundsBeforeTheHeader: before the Dataset knows a
// chunk's header, a span's estimate still bounds what its fetch holds (from
// the column's largest sample), and far less than the whole chunk's.
func TestSpanEstimateBoundsBeforeTheHeader(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 26))
	for _, codec := range spanCodecs {
		_, dir, _ := spanDataset(t, r, codec, 600)
		for range 20 {
			d, err := Open(ctx, dir)
			require.NoError(t, err)
			sc, uid := scanOf(t, d)
			id := sc.Chunks(uid)[0]
			lo := r.IntN(int(sc.ref(id).Rows) - 3)
			read := sc.Span(id, lo, lo+1+r.IntN(3))
			estimate := sc.Estimate(read)
			require.Less(t, 4*estimate, sc.Estimate(Read{Chunk: id}))
			f, err := sc.Fetch(ctx, read)
			require.NoError(t, err)
			require.False(t, f.Whole())
			require.LessOrEqual(t, f.Mem(), estimate, "codec %s", codec)
			require.NoError(t, d.Close())
		}
	}
}

// format10 rewrites chunk ref of d's store as the format 1.0 writer wrote
// it (for lz4 and zstd: one block of all the data, no block checksums)
// and returns the reference to the rewritten object.
func format10(t *testing.T, d *Dataset, ref manifest.ChunkRef) manifest.ChunkRef {
	t.Helper()
	obj, err := d.store.Get(ctx, ref.Key)
	require.NoError(t, err)
	c, err := chunk.Decode(obj, nil)
	require.NoError(t, err)
	b := chunk.NewBuilder(c.DType, c.SampleCompression, c.Codec, 0)
	for i := range c.N {
		require.NoError(t, b.Add(c.Shape(i), c.Sample(i), c.Null(i)))
	}
	old, err := b.EncodeFormat10()
	require.NoError(t, err)
	h, err := chunk.ParseHeader(old)
	require.NoError(t, err)
	require.False(t, h.RangeReadable())
	key := keys.Make(keys.Chunk, manifest.Hash(old))
	require.NoError(t, d.store.Put(ctx, key, old))
	ref.Key, ref.Header, ref.Size, ref.HCRC = key, h.Len, h.Size(), 0 // a fragment of format 1.0 has no hcrc
	return ref
}

// TestSpanOfFormat10ChunkReadsWhole: a planned span of a format 1.0
// compressed chunk, whose header the Dataset does not know yet, is fetched
// whole; once the header is known, Span plans the whole chunk.
func TestSpanOfFormat10ChunkReadsWhole(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 22))
	for _, codec := range []schema.ChunkCodec{schema.LZ4, schema.Zstd} {
		d, _, want := spanDataset(t, r, codec, 400)
		sc, uid := scanOf(t, d)
		id := sc.Chunks(uid)[0]
		refs := sc.s.frags[id.frag].cols[uid]
		refs[id.k] = format10(t, d, refs[id.k]) // this test's snapshot only

		read := sc.Span(id, 5, 8)
		require.NotEqual(t, Read{Chunk: id}, read, "the header is not known yet")
		f, err := sc.Fetch(ctx, read)
		require.NoError(t, err)
		require.True(t, f.Whole(), "codec %s: a 1.0 chunk cannot be read by range", codec)
		for j := 5; j < 8; j++ {
			got, err := f.sample(sc.ref(id), j)
			require.NoError(t, err)
			requireSample(t, want[j], got, "codec %s sample %d", codec, j)
		}
		require.Equal(t, Read{Chunk: id}, sc.Span(id, 5, 8), "now the Dataset knows")

		// ColumnReader's single-sample reads fall back alike.
		d.chunks = newChunkCache(1 << 30)
		col := mustColumn(t, d, "v")
		col.snap = sc.s
		got, err := col.ReadEncoded(ctx, 6)
		require.NoError(t, err)
		requireSample(t, want[6], got, "codec %s column read", codec)
	}
}

// countingReads counts the store reads of objects; reads counts those of
// chunks.
type countingReads struct {
	storage.Store
	mu     sync.Mutex
	gets   map[string]int
	ranges map[string]int
}

func countReads(d *Dataset) *countingReads {
	c := &countingReads{Store: d.store, gets: map[string]int{}, ranges: map[string]int{}}
	d.store = c
	return c
}

func (c *countingReads) Get(ctx context.Context, key string) ([]byte, error) {
	c.mu.Lock()
	c.gets[key]++
	c.mu.Unlock()
	return c.Store.Get(ctx, key)
}

func (c *countingReads) ReadRange(ctx context.Context, key string, off int64, buf []byte) error {
	c.mu.Lock()
	c.ranges[key]++
	c.mu.Unlock()
	return c.Store.ReadRange(ctx, key, off, buf)
}

func (c *countingReads) reads() (gets, ranges int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.gets {
		if strings.HasPrefix(k, keys.Chunk.Prefix()) {
			gets += n
		}
	}
	for k, n := range c.ranges {
		if strings.HasPrefix(k, keys.Chunk.Prefix()) {
			ranges += n
		}
	}
	return gets, ranges
}

// TestSpanReadsThroughCache: with a cache, the first pass of span reads
// fetches each chunk once, concurrent spans of one chunk included, and
// later passes (by another handle, as another process would) read every
// span from the cache by range, without touching the store.
func TestSpanReadsThroughCache(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 23))
	caches := map[string]func(t *testing.T) chunkcache.Cache{
		"memory": func(t *testing.T) chunkcache.Cache { return chunkcache.NewMemory(1 << 30) },
		"disk": func(t *testing.T) chunkcache.Cache {
			c, err := chunkcache.Open(t.TempDir(), 1<<30, nil)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			return c
		},
	}
	for name, open := range caches {
		for _, codec := range spanCodecs {
			t.Run(name+"/"+string(codec), func(t *testing.T) {
				d, dir, want := spanDataset(t, r, codec, 1000)
				cache := open(t)
				counts := countReads(d)
				sc, uid := scanOf(t, d)
				sc = sc.WithCache(cache)
				ids, first := chunkRows(sc, uid)
				epoch := func(sc *Scan) {
					var wg sync.WaitGroup
					errs := make(chan error, 8*len(ids))
					for c, id := range ids {
						n := int(sc.ref(id).Rows)
						for g := range 8 {
							j := (g * 37) % n
							wg.Go(func() {
								f, err := sc.Fetch(ctx, sc.Span(id, j, j+1))
								if err != nil {
									errs <- err
									return
								}
								got, err := f.sample(sc.ref(id), j)
								if err != nil {
									errs <- err
									return
								}
								if w := want[first[c]+int64(j)]; !bytes.Equal(w, got.Data) || (w == nil) != got.Null {
									errs <- fmt.Errorf("chunk %d sample %d: wrong bytes", c, j)
								}
							})
						}
					}
					wg.Wait()
					close(errs)
					for err := range errs {
						require.NoError(t, err)
					}
				}
				epoch(sc)
				gets, _ := counts.reads()
				require.Equal(t, len(ids), gets, "each chunk is fetched once (seed %d)", seed)
				require.Equal(t, int64(len(ids)), cache.Stats().Puts)

				// Another handle (an empty header cache), as another process.
				d2 := mustOpen(t, dir)
				counts2 := countReads(d2)
				sc2, _ := scanOf(t, d2)
				sc2 = sc2.WithCache(cache)
				before := cache.Stats().Hits
				epoch(sc2)
				gets, ranges := counts2.reads()
				require.Zero(t, gets+ranges, "a later pass reads from the cache")
				require.Greater(t, cache.Stats().Hits, before)
				f, err := sc2.Fetch(ctx, sc2.Span(ids[0], 1, 2))
				require.NoError(t, err)
				require.True(t, f.Cached)
				require.Zero(t, f.Bytes)
				require.False(t, f.Whole())
			})
		}
	}
}

// TestNodeCacheFetchesOnce: processes of a node (here handles of their
// own on the dataset and on the cache directory) that read the same
// chunks at once through one disk cache fetch each chunk from the store
// once between them: the others wait for its turn and read it from the
// cache (chunkcache.Filler).
func TestNodeCacheFetchesOnce(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 25))
	d, dir, want := spanDataset(t, r, schema.LZ4, 1000)
	cacheDir := t.TempDir()
	type proc struct {
		sc     *Scan
		counts *countingReads
	}
	var procs []proc
	var ids []ChunkID
	var first []int64
	for i := range 3 {
		h := d
		if i > 0 {
			var err error
			h, err = Open(ctx, dir)
			require.NoError(t, err)
			t.Cleanup(func() { h.Close() })
		}
		cache, err := chunkcache.Open(cacheDir, 1<<30, nil)
		require.NoError(t, err)
		t.Cleanup(func() { cache.Close() })
		counts := countReads(h)
		sc, uid := scanOf(t, h)
		ids, first = chunkRows(sc, uid)
		procs = append(procs, proc{sc.WithCache(cache), counts})
	}
	require.Greater(t, len(ids), 2)
	var wg sync.WaitGroup
	errs := make(chan error, len(procs)*len(ids))
	for _, p := range procs {
		for c, id := range ids {
			wg.Go(func() {
				f, err := p.sc.Fetch(ctx, p.sc.Span(id, 1, 2))
				if err == nil {
					var got Sample
					if got, err = f.sample(p.sc.ref(id), 1); err == nil && !bytes.Equal(want[first[c]+1], got.Data) {
						err = fmt.Errorf("chunk %d sample 1: wrong bytes", c)
					}
				}
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	gets := 0
	for _, p := range procs {
		g, ranges := p.counts.reads()
		require.Zero(t, ranges, "through the cache, chunks are fetched whole")
		gets += g
	}
	require.Equal(t, len(ids), gets, "each chunk fetched once by the three")
}

// TestSpanReadsCacheWithoutRanges: a cache that cannot read ranges serves
// spans from the whole cached object.
func TestSpanReadsCacheWithoutRanges(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 24))
	d, _, want := spanDataset(t, r, schema.LZ4, 300)
	cache := struct{ chunkcache.Cache }{chunkcache.NewMemory(1 << 30)} // hides ReadRange
	sc, uid := scanOf(t, d)
	sc = sc.WithCache(cache)
	id := sc.Chunks(uid)[0]
	for range 2 {
		f, err := sc.Fetch(ctx, sc.Span(id, 4, 6))
		require.NoError(t, err)
		require.False(t, f.Whole())
		got, err := f.sample(sc.ref(id), 5)
		require.NoError(t, err)
		requireSample(t, want[5], got, "sample 5")
	}
	require.Equal(t, int64(1), cache.Stats().Hits)
}

// damage flips one byte in the middle of block k of the chunk object on
// disk, and returns the raw range of that block.
// damagedChunk is a chunk with one byte of its inner block k flipped in
// the store (damage), which spans the bytes [bs, be) of its data.
type damagedChunk struct {
	key    string
	h      *chunk.Header
	k      int
	bs, be int64
}

// damageChunk flips a byte of a random inner block of chunk id of sc, in
// the store at dir.
func damageChunk(t *testing.T, d *Dataset, sc *Scan, dir string, id ChunkID, r *rand.Rand) damagedChunk {
	t.Helper()
	key := sc.ChunkKey(id)
	h, _, err := d.header(ctx, sc.ref(id))
	require.NoError(t, err)
	k := 1 + r.IntN(h.Blocks()-2)
	bs, be := damage(t, dir, key, k)
	return damagedChunk{key: key, h: h, k: k, bs: bs, be: be}
}

// overlaps reports whether sample j of the chunk overlaps the damaged
// block.
func (c damagedChunk) overlaps(j int) bool {
	s, e := c.h.Range(j)
	return s < e && s < c.be && e > c.bs
}

func damage(t *testing.T, dir string, key string, k int) (start, end int64) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(key))
	obj, err := os.ReadFile(path)
	require.NoError(t, err)
	h, err := chunk.ParseHeader(obj)
	require.NoError(t, err)
	require.Less(t, k, h.Blocks())
	s, e := h.BlockRange(k, k+1)
	obj[(s+e)/2] ^= 0x20
	require.NoError(t, os.WriteFile(path, obj, 0o644))
	return h.BlockStart(k), min(h.BlockStart(k+1), h.RawLen)
}

// TestDamagedBlockSpoilsItsSamplesOnly flips one byte of one block of a
// chunk in a real store: exactly the samples that overlap the block fail
// with ErrCorrupt naming the chunk and the sample, through Scan.Fetch and
// Scan.Sample (whole and span reads) and through ColumnReader; every other
// sample of the chunk reads back intact; the damaged chunk enters no
// cache; Verify reports it.
func TestDamagedBlockSpoilsItsSamplesOnly(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 25))
	for _, codec := range spanCodecs {
		d, dir, want := spanDataset(t, r, codec, 600)
		sc, uid := scanOf(t, d)
		ids, first := chunkRows(sc, uid)
		id := ids[0]
		dc := damageChunk(t, d, sc, dir, id, r)
		key, overlaps := dc.key, dc.overlaps
		msg := fmt.Sprintf("codec %s block %d (seed %d)", codec, dc.k, seed)

		cache := chunkcache.NewMemory(1 << 30)
		for _, sc := range []*Scan{d.Scan(), d.Scan().WithCache(cache)} {
			require.NoError(t, sc.Load(ctx, 1))
			whole, err := sc.Fetch(ctx, Read{Chunk: id})
			require.NoError(t, err, msg)
			nbad := 0
			for j := range whole.Len() {
				row := first[0] + int64(j)
				slot := sc.Slot(mustLocate(t, sc, row), uid)
				got, err := sc.Sample(slot, []*Fetched{whole})
				at, atErr := whole.At(j)
				span, spanErr := sc.Fetch(ctx, sc.Span(id, j, j+1))
				if overlaps(j) {
					nbad++
					for _, err := range []error{err, atErr, spanErr} {
						require.ErrorIs(t, err, ErrCorrupt, "%s sample %d", msg, j)
						require.ErrorContains(t, err, key)
					}
					require.ErrorContains(t, err, fmt.Sprintf("sample %d", j))
					continue
				}
				require.NoError(t, err, "%s sample %d", msg, j)
				require.NoError(t, atErr, "%s sample %d", msg, j)
				requireSample(t, want[row], got, "%s sample %d", msg, j)
				requireSample(t, want[row], at, "%s sample %d", msg, j)
				require.NoError(t, spanErr, "%s sample %d", msg, j)
				got, err = sc.Sample(slot, []*Fetched{span})
				require.NoError(t, err)
				requireSample(t, want[row], got, "%s sample %d by range", msg, j)
			}
			require.Positive(t, nbad, msg)
			require.Less(t, nbad, whole.Len()/2, msg)
		}
		require.Zero(t, cache.Stats().Puts, "a damaged chunk is never cached")

		// ColumnReader: single reads (by range) and range reads (whole).
		d.chunks = newChunkCache(1 << 30)
		col := mustColumn(t, d, "v")
		n := int(sc.ref(id).Rows)
		for _, whole := range []bool{false, true} {
			for j := range n {
				row := first[0] + int64(j)
				var got Sample
				var err error
				if whole {
					var s []Sample
					if s, err = col.ReadEncodedRange(ctx, row, row+1); err == nil {
						got = s[0]
					}
				} else {
					got, err = col.ReadEncoded(ctx, row)
				}
				if overlaps(j) {
					require.ErrorIs(t, err, ErrCorrupt, "%s column sample %d", msg, j)
					require.ErrorContains(t, err, key)
					continue
				}
				require.NoError(t, err, "%s column sample %d", msg, j)
				requireSample(t, want[row], got, "%s column sample %d", msg, j)
			}
			e := d.chunks.get(key)
			require.True(t, e == nil || e.chunk == nil, "a damaged chunk is not cached in memory")
		}

		_, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		require.Len(t, problems, 1, msg)
		require.Equal(t, key, problems[0].Key)
		require.ErrorIs(t, problems[0].Err, ErrCorrupt)
	}
}

// TestColumnReadsSamplesByRange: ColumnReader's single-sample reads of a
// large chunk read its header and the sample's blocks by range, whatever
// the codec, and keep no whole chunk in memory.
func TestColumnReadsSamplesByRange(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 27))
	for _, codec := range spanCodecs {
		_, dir, want := spanDataset(t, r, codec, 600)
		d := mustOpen(t, dir)
		counts := countReads(d)
		col := mustColumn(t, d, "v")
		for _, row := range []int64{5, 6, 300} {
			got, err := col.ReadEncoded(ctx, row)
			require.NoError(t, err)
			requireSample(t, want[row], got, "codec %s row %d", codec, row)
		}
		gets, ranges := counts.reads()
		require.Zero(t, gets, "codec %s: no whole chunk is read", codec)
		require.LessOrEqual(t, ranges, 3+2, "codec %s: a header per chunk and the blocks of each sample", codec)
		for k := range counts.ranges {
			if e := d.chunks.get(k); e != nil {
				require.Nil(t, e.chunk)
			}
		}
	}
}
