package order_test

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/loader/order"
)

// FuzzPlan checks the order's invariants on small random specs: the
// sharding contract of an epoch, random access equal to streaming, exact
// resumption in the same world size and the contract of an elastic
// resumption in another.
func FuzzPlan(f *testing.F) {
	// seed, rows, block size, window, mode, world, batch, drop_last,
	// subset (every k-th row in a shuffled order; 0: none), batches done,
	// world and batch after the resize.
	f.Add(uint64(0), uint16(0), uint8(1), uint16(0), uint8(0), uint8(1), uint8(1), false, uint8(0), uint16(0), uint8(1), uint8(1))
	f.Add(uint64(1), uint16(1), uint8(1), uint16(0), uint8(1), uint8(8), uint8(3), false, uint8(0), uint16(0), uint8(3), uint8(2))
	f.Add(uint64(2), uint16(97), uint8(10), uint16(30), uint8(2), uint8(4), uint8(5), false, uint8(0), uint16(2), uint8(3), uint8(5))
	f.Add(uint64(3), uint16(1001), uint8(64), uint16(200), uint8(2), uint8(3), uint8(7), true, uint8(0), uint16(10), uint8(5), uint8(4))
	f.Add(uint64(4), uint16(250), uint8(7), uint16(0), uint8(2), uint8(2), uint8(4), false, uint8(3), uint16(5), uint8(7), uint8(1))
	f.Add(uint64(5), uint16(300), uint8(33), uint16(1), uint8(1), uint8(7), uint8(2), true, uint8(2), uint16(9), uint8(1), uint8(6))
	f.Add(uint64(6), uint16(64), uint8(8), uint16(16), uint8(2), uint8(8), uint8(1), false, uint8(1), uint16(3), uint8(2), uint8(3))
	f.Fuzz(func(t *testing.T, seed uint64, rows uint16, blockSize uint8, window uint16, mode uint8,
		world, batch uint8, dropLast bool, every uint8, done uint16, world2, batch2 uint8) {
		s := order.Spec{
			Blocks:     blocks(int64(rows%1200), 1+int64(blockSize%100)),
			Seed:       seed,
			Epoch:      int(seed % 3),
			Mode:       modes[mode%3],
			WindowRows: int64(window % 400),
			WorldSize:  1 + int(world%8),
			BatchSize:  1 + int(batch%8),
			DropLast:   dropLast,
		}
		if every%8 > 0 {
			rng := rand.New(rand.NewPCG(seed, 4))
			s.Subset = []int64{}
			for p := range int64(rows % 1200) {
				if p%int64(every%8) == 0 {
					s.Subset = append(s.Subset, p)
				}
			}
			rng.Shuffle(len(s.Subset), func(i, j int) { s.Subset[i], s.Subset[j] = s.Subset[j], s.Subset[i] })
		}
		got := allRanks(t, s)
		requireEpoch(t, s, got)

		k := int(done) % (len(got[0]) + 1)
		p, err := order.Plan(s)
		require.NoError(t, err)
		for i := range p.Batches() {
			require.Equal(t, got[0][i], p.Batch(nil, i), "batch %d", i)
		}
		st := p.State(k)
		resumed := resumeAll(t, s, st)
		for r := range got {
			if k < len(got[r]) {
				require.Equal(t, got[r][k:], resumed[r], "rank %d resumed after %d", r, k)
			}
		}
		now := s
		now.WorldSize, now.BatchSize = 1+int(world2%8), 1+int(batch2%8)
		if k == len(got[0]) || now.WorldSize == s.WorldSize && now.BatchSize == s.BatchSize {
			return // the next epoch's start, or the run continued exactly
		}
		delivered := firstBatches(got, k)
		requireRest(t, now, flat(got...), delivered, resumeAll(t, now, st))
	})
}
