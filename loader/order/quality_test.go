package order_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/loader/order"
)

// quality measures how far an order of 0..n-1 is from the identity.
type quality struct {
	meanDisp  float64 // mean |position - delivery index| / n: 0 in order, 1/3 for a uniform permutation
	lag1      float64 // Pearson (= Spearman: the values are ranks) correlation of consecutive positions
	sameBlock float64 // share of consecutive positions in the same block
}

func measure(rows []int64, blockSize int64) quality {
	n := float64(len(rows))
	var q quality
	var sx, sy, sxx, syy, sxy float64
	for i, p := range rows {
		q.meanDisp += math.Abs(float64(p - int64(i)))
		if i == 0 {
			continue
		}
		x, y := float64(rows[i-1]), float64(p)
		sx, sy, sxx, syy, sxy = sx+x, sy+y, sxx+x*x, syy+y*y, sxy+x*y
		if rows[i-1]/blockSize == p/blockSize {
			q.sameBlock++
		}
	}
	q.meanDisp /= n * n
	k := n - 1
	q.lag1 = (k*sxy - sx*sy) / math.Sqrt((k*sxx-sx*sx)*(k*syy-sy*sy))
	q.sameBlock /= k
	return q
}

// TestShuffleQuality compares block mode with full and none for 100,000
// rows in blocks of 100 and windows of 16 blocks. Block mode moves rows as
// far as a full shuffle does (blocks go anywhere); what it keeps is that
// neighbours come from the same 16 blocks, so their correlation is about
// 1/16 instead of 0, and about 1/16 of them share a block.
func TestShuffleQuality(t *testing.T) {
	const n, size = 100_000, 100
	got := map[order.Mode]quality{}
	for _, mode := range modes {
		s := order.Spec{Blocks: blocks(n, size), Mode: mode, Seed: 1, WindowRows: 16 * size, BatchSize: 256}
		p, err := order.Plan(s)
		require.NoError(t, err)
		q := measure(flat(batches(t, p)), size)
		got[mode] = q
		t.Logf("shuffle quality %-5s n=%d block=%d window=%d: mean |displacement|/n %.4f, lag-1 correlation %+.4f, neighbours in one block %.4f",
			mode, n, size, 16*size, q.meanDisp, q.lag1, q.sameBlock)
	}
	none, full, block := got[order.ModeNone], got[order.ModeFull], got[order.ModeBlock]
	require.Zero(t, none.meanDisp)
	require.InDelta(t, 1.0, none.lag1, 1e-9)
	require.InDelta(t, 1.0/3, full.meanDisp, 0.01, "a uniform permutation moves rows n/3 on average")
	require.InDelta(t, 0, full.lag1, 0.02)
	require.InDelta(t, full.meanDisp, block.meanDisp, 0.2*full.meanDisp, "block moves rows as far as full")
	require.Less(t, block.lag1, 0.15, "block's neighbours are nearly uncorrelated")
	require.Less(t, block.lag1, none.lag1/5)
	require.Less(t, block.sameBlock, 0.1)
}

// TestRankLocality: in block mode each rank reads its own blocks: only
// the blocks cut by the edges of the ranks' ranges (and by the padding) are
// read by two ranks. In full mode nearly every block is read by every rank.
func TestRankLocality(t *testing.T) {
	const n, size = 100_000, 100
	for _, world := range []int{7, 8} {
		shared := map[order.Mode]float64{}
		for _, mode := range []order.Mode{order.ModeBlock, order.ModeFull} {
			s := order.Spec{Blocks: blocks(n, size), Mode: mode, Seed: 5, WindowRows: 16 * size, WorldSize: world, BatchSize: 32}
			readers := map[int64]map[int]bool{}
			for r, rank := range allRanks(t, s) {
				for _, p := range flat(rank) {
					b := p / size
					if readers[b] == nil {
						readers[b] = map[int]bool{}
					}
					readers[b][r] = true
				}
			}
			var many int
			for _, rs := range readers {
				if len(rs) > 1 {
					many++
				}
			}
			shared[mode] = float64(many) / float64(len(readers))
			t.Logf("rank locality %-5s n=%d block=%d world=%d: %d of %d blocks (%.2f%%) read by more than one rank",
				mode, n, size, world, many, len(readers), 100*shared[mode])
		}
		require.LessOrEqual(t, shared[order.ModeBlock], float64(world)/1000, "at most one block per rank boundary, and the padding")
		require.Greater(t, shared[order.ModeFull], 0.9)
	}
}

// TestClassMixing measures what a training run sees of a class-sorted
// dataset (50,000 rows, 20 classes of 2,500 consecutive rows, blocks of
// 21 rows: the loader's segments of 64x64x3 images) in batches of 64: the
// mean number of classes per batch. With the default window (256 blocks)
// block mode reaches at least 0.95 of a full permutation's.
func TestClassMixing(t *testing.T) {
	const n, size, classes, batch = 50_000, 85, 20, 64 // 85 rows of 12 KiB: a 1 MiB segment
	perClass := int64(n / classes)
	mean := func(mode order.Mode, window int64) float64 {
		var sum float64
		var count int
		for epoch := range 3 {
			p, err := order.Plan(order.Spec{Blocks: blocks(n, size), Mode: mode, Seed: 7, Epoch: epoch, WindowRows: window, BatchSize: batch})
			require.NoError(t, err)
			for _, rows := range p.All() {
				seen := map[int64]bool{}
				for _, r := range rows {
					seen[r/perClass] = true
				}
				sum += float64(len(seen))
				count++
			}
		}
		return sum / float64(count)
	}
	full := mean(order.ModeFull, 0)
	block := mean(order.ModeBlock, 0)
	small := mean(order.ModeBlock, 8*size)
	t.Logf("classes per batch of %d (of %d): full %.2f, block %.2f (%.3f of full), block with 8-block windows %.2f",
		batch, classes, full, block, block/full, small)
	require.InDelta(t, classes*(1-math.Pow(1-1.0/classes, batch)), full, 0.1, "a full permutation draws classes nearly independently")
	require.GreaterOrEqual(t, block/full, 0.95)
	require.Less(t, small, block, "larger windows mix better")
}
