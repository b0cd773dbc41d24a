package loch

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
)

// mapEverySpan has span reads of mapped scans map their chunk whatever
// the span's size, for the length of a test.
func mapEverySpan(t *testing.T) {
	old := mapMinSpan
	mapMinSpan = 0
	t.Cleanup(func() { mapMinSpan = old })
}

// liveMaps counts d's mappings held by a fetched span, and all of them.
func liveMaps(d *Dataset) (live, all int) {
	d.maps.mu.Lock()
	defer d.maps.mu.Unlock()
	for _, c := range d.maps.all {
		if c.refs > 0 {
			live++
		}
	}
	return live, len(d.maps.all)
}

// TestMappedSpansMatchReadSpans reads random spans of chunks of every
// codec from mapped chunk files and by range: the same samples, within the
// same estimate; each chunk is mapped once however often it is read, a
// span holds its mapping until recycled (or collected), and closing the
// dataset unmaps them all.
func TestMappedSpansMatchReadSpans(t *testing.T) {
	mapEverySpan(t)
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 39))
	for _, codec := range spanCodecs {
		d, _, want := spanDataset(t, r, codec, 1000)
		plain, uid := scanOf(t, d)
		mapped := plain.Mapped()
		ids, first := chunkRows(plain, uid)
		var held []*Fetched
		for round := range 2 {
			for c, id := range ids {
				n := int(plain.ref(id).Rows)
				for range 10 {
					lo := r.IntN(n)
					hi := lo + 1 + r.IntN(min(n-lo, 40))
					if hi-lo == n {
						continue
					}
					msg := fmt.Sprintf("codec %s chunk %d span [%d, %d) round %d (seed %d)", codec, c, lo, hi, round, seed)
					read := mapped.Span(id, lo, hi)
					f, err := mapped.Fetch(ctx, read)
					require.NoError(t, err, msg)
					g, err := plain.Fetch(ctx, read)
					require.NoError(t, err, msg)
					require.Equal(t, g.Mem(), f.Mem(), msg)
					require.LessOrEqual(t, f.Mem(), mapped.Estimate(read), msg)
					for j := lo; j < hi; j++ {
						got, err := f.sample(mapped.ref(id), j)
						require.NoError(t, err, msg)
						requireSample(t, want[first[c]+int64(j)], got, "%s sample %d", msg, j)
					}
					g.Recycle()
					if r.IntN(4) == 0 {
						held = append(held, f) // recycled later
					} else {
						f.Recycle()
					}
				}
			}
		}
		live, all := liveMaps(d)
		if codec == "none" {
			require.Positive(t, live, "held spans of codec none hold their mappings")
		} else {
			require.Zero(t, live, "a decompressed span holds no mapping")
		}
		require.Equal(t, len(ids), all, "one mapping a chunk, kept when idle")
		require.EqualValues(t, len(ids), d.maps.made.Load(), "each chunk mapped once in two rounds")
		for _, f := range held {
			f.Recycle()
			f.Recycle() // a second call does nothing
		}
		live, _ = liveMaps(d)
		require.Zero(t, live)
		require.NoError(t, d.Close())
		_, all = liveMaps(d)
		require.Zero(t, all, "closing the dataset unmaps its idle mappings")
	}
}

// TestMappedDamagedBlockFailsEveryRead flips a byte of one block of a
// chunk: every sample read over it from a mapped span fails with
// ErrCorrupt naming the chunk, however often it is read (a block that
// fails is never recorded as verified), while the samples around it read
// back intact. A compressed chunk's span fails when it is fetched; a
// plain chunk's blocks are checked as its samples are taken, so its
// sample fails (and PlainSample declines it).
func TestMappedDamagedBlockFailsEveryRead(t *testing.T) {
	mapEverySpan(t)
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 40))
	for _, codec := range spanCodecs {
		d, dir, want := spanDataset(t, r, codec, 600)
		plain, uid := scanOf(t, d)
		sc := plain.Mapped()
		ids, first := chunkRows(sc, uid)
		id := ids[0]
		dc := damageChunk(t, d, sc, dir, id, r)
		msg := fmt.Sprintf("codec %s block %d (seed %d)", codec, dc.k, seed)
		for round := range 3 {
			for j := range int(sc.ref(id).Rows) {
				f, err := sc.Fetch(ctx, sc.Span(id, j, j+1))
				var got Sample
				if err == nil {
					got, err = f.sample(sc.ref(id), j)
				}
				if dc.overlaps(j) {
					require.ErrorIs(t, err, ErrCorrupt, "%s sample %d round %d", msg, j, round)
					require.ErrorContains(t, err, dc.key)
					if f != nil {
						_, ok := f.plain(j, got.Shape)
						require.False(t, ok, "%s sample %d: not taken plainly", msg, j)
					}
					continue
				}
				require.NoError(t, err, "%s sample %d round %d", msg, j, round)
				requireSample(t, want[first[0]+int64(j)], got, "%s sample %d", msg, j)
				f.Recycle()
			}
		}
		require.Positive(t, d.maps.made.Load(), msg)
	}
}
