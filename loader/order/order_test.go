package order_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/loader/order"
)

var modes = []order.Mode{order.ModeNone, order.ModeFull, order.ModeBlock}

// TestGolden pins the order for a few specs: the Python SDK and `loch
// order` print exactly these, so a change here is a change of the
// documented algorithm, not a refactoring.
func TestGolden(t *testing.T) {
	base := order.Spec{Blocks: []int64{4, 4, 0, 3, 5}, Seed: 42, Epoch: 1, WindowRows: 6, WorldSize: 2, BatchSize: 3}
	tests := []struct {
		name string
		edit func(*order.Spec)
		want [][][]int64 // per rank, its batches
	}{
		{"none", func(s *order.Spec) { s.Mode = order.ModeNone },
			[][][]int64{{{0, 1, 2}, {3, 4, 5}, {6, 7}}, {{8, 9, 10}, {11, 12, 13}, {14, 15}}}},
		{"full", func(s *order.Spec) { s.Mode = order.ModeFull },
			[][][]int64{{{9, 8, 10}, {0, 11, 12}, {2, 14}}, {{5, 3, 4}, {6, 13, 1}, {15, 7}}}},
		// Blocks 1 and 4, then 0 and 3; windows of two batches (6 rows):
		// rows 4-7 11 12, then 13 14 on rank 0; 15 0-3 8, then 9 10 on rank 1.
		{"block", func(s *order.Spec) { s.Mode = order.ModeBlock },
			[][][]int64{{{6, 12, 11}, {4, 7, 5}, {14, 13}}, {{0, 1, 3}, {15, 8, 2}, {9, 10}}}},
		// Blocks 4, 1, 0 and 3; 8 and 9 dropped.
		{"block subset drop_last", func(s *order.Spec) {
			s.Mode, s.Subset, s.DropLast = order.ModeBlock, []int64{15, 3, 8, 0, 9, 12, 1, 5}, true
		}, [][][]int64{{{12, 15, 5}}, {{0, 1, 3}}}},
		// The permutation 0 2 1, padded with 0 2.
		{"full padded", func(s *order.Spec) { s.Mode, s.Blocks, s.WorldSize = order.ModeFull, []int64{3}, 5 },
			[][][]int64{{{0}}, {{2}}, {{1}}, {{0}}, {{2}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			tt.edit(&s)
			require.Equal(t, tt.want, allRanks(t, s))
		})
	}
}

func TestValidate(t *testing.T) {
	ok := order.Spec{Blocks: []int64{3, 4}, BatchSize: 2}
	require.NoError(t, ok.Validate())
	tests := []struct {
		name string
		edit func(*order.Spec)
		msg  string
	}{
		{"mode", func(s *order.Spec) { s.Mode = "random" }, `shuffle mode "random"`},
		{"batch", func(s *order.Spec) { s.BatchSize = 0 }, "batch size 0"},
		{"world", func(s *order.Spec) { s.WorldSize = -1 }, "world size -1"},
		{"rank", func(s *order.Spec) { s.WorldSize, s.Rank = 2, 2 }, "rank 2 outside world size 2"},
		{"rank of default world", func(s *order.Spec) { s.Rank = 1 }, "rank 1 outside world size 1"},
		{"epoch", func(s *order.Spec) { s.Epoch = -1 }, "epoch -1"},
		{"window", func(s *order.Spec) { s.WindowRows = -5 }, "window of -5 rows"},
		{"block", func(s *order.Spec) { s.Blocks = []int64{3, -1} }, "block 1 has -1 rows"},
		{"subset range", func(s *order.Spec) { s.Subset = []int64{0, 7} }, "subset[1] is row 7, want a row in [0, 7)"},
		{"subset negative", func(s *order.Spec) { s.Subset = []int64{-1} }, "subset[0] is row -1"},
		{"subset repeat", func(s *order.Spec) { s.Subset = []int64{2, 5, 2} }, "subset repeats row 2"},
		{"sparse subset repeat", func(s *order.Spec) { s.Blocks, s.Subset = []int64{1 << 20}, []int64{9, 1 << 19, 9} }, "subset repeats row 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.edit(&s)
			err := s.Validate()
			require.ErrorIs(t, err, order.ErrInvalid)
			require.ErrorContains(t, err, tt.msg)
			_, err = order.Plan(s)
			require.ErrorIs(t, err, order.ErrInvalid)
		})
	}
}

// TestZeroValues: Mode "" is none, WorldSize 0 is one rank, WindowRows 0
// the default window.
func TestZeroValues(t *testing.T) {
	s := order.Spec{Blocks: blocks(50, 7), BatchSize: 4, Seed: 3}
	explicit := s
	explicit.Mode, explicit.WorldSize = order.ModeNone, 1
	require.Equal(t, allRanks(t, explicit), allRanks(t, s))

	s.Mode, explicit.Mode = order.ModeBlock, order.ModeBlock
	explicit.WindowRows = order.DefaultWindowBlocks * 7
	require.Equal(t, allRanks(t, explicit), allRanks(t, s))
}

func TestDeterminism(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			s := order.Spec{Blocks: blocks(1000, 37), Mode: mode, Seed: 7, Epoch: 3, WindowRows: 100, WorldSize: 3, BatchSize: 8}
			first := allRanks(t, s)
			require.Equal(t, first, allRanks(t, s), "same inputs, same order")

			// Batch (random access) agrees with All (streaming).
			for r := range 3 {
				s.Rank = r
				p, err := order.Plan(s)
				require.NoError(t, err)
				for i := range p.Batches() {
					require.Equal(t, first[r][i], p.Batch(nil, i), "rank %d batch %d", r, i)
				}
			}
			s.Rank = 0

			other := s
			other.Epoch++
			other2 := s
			other2.Seed++
			if mode == order.ModeNone {
				require.Equal(t, first, allRanks(t, other), "none ignores the epoch")
				require.Equal(t, first, allRanks(t, other2), "none ignores the seed")
				return
			}
			require.NotEqual(t, first, allRanks(t, other), "another epoch, another order")
			require.NotEqual(t, first, allRanks(t, other2), "another seed, another order")
			// Shard after shuffling: a rank sees other rows each epoch.
			require.NotEqual(t, counts(flat(first[0])), counts(flat(allRanks(t, other)[0])))
		})
	}
}

// TestCoverage checks the sharding contract over world sizes, dataset
// sizes that do not divide evenly, batch sizes, modes and drop_last.
func TestCoverage(t *testing.T) {
	for _, n := range []int64{0, 1, 7, 97, 1000, 1001} {
		for _, mode := range modes {
			for _, dropLast := range []bool{false, true} {
				t.Run(fmt.Sprintf("n=%d/%s/drop_last=%v", n, mode, dropLast), func(t *testing.T) {
					for world := 1; world <= 8; world++ {
						for batch := 1; batch <= 7; batch++ {
							s := order.Spec{Blocks: blocks(n, 10), Mode: mode, Seed: uint64(n), Epoch: world,
								WindowRows: 30, WorldSize: world, BatchSize: batch, DropLast: dropLast}
							requireEpoch(t, s, allRanks(t, s))
						}
					}
				})
			}
		}
	}
}

func TestSubset(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	n := int64(2000)
	var sub []int64
	for p := range n {
		if rng.IntN(3) == 0 {
			sub = append(sub, p)
		}
	}
	rng.Shuffle(len(sub), func(i, j int) { sub[i], sub[j] = sub[j], sub[i] })
	for _, mode := range modes {
		for _, world := range []int{1, 3, 8} {
			for _, dropLast := range []bool{false, true} {
				s := order.Spec{Blocks: blocks(n, 50), Subset: sub, Mode: mode, Seed: seed, WindowRows: 150,
					WorldSize: world, BatchSize: 5, DropLast: dropLast}
				got := allRanks(t, s)
				requireEpoch(t, s, got)
				if mode == order.ModeNone && !dropLast {
					require.Equal(t, sub, flat(got...)[:len(sub)], "none keeps the subset's order")
				}
			}
		}
	}
	t.Run("empty", func(t *testing.T) {
		p, err := order.Plan(order.Spec{Blocks: []int64{10}, Subset: []int64{}, Mode: order.ModeBlock, BatchSize: 3})
		require.NoError(t, err)
		require.Zero(t, p.Batches())
		require.Zero(t, p.Rows())
	})
}

// TestWindows checks that the delivery order is a sequence of windows of
// whole batches, WindowRows rounded up to a batch but for a rank's last,
// and that in block mode each is a shuffle of a contiguous run of the
// shuffled blocks (whole blocks but at its two ends).
func TestWindows(t *testing.T) {
	const n, size, window, batch = 5000, 40, 130, 16
	const winLen = 144 // 130 rounded up to whole batches of 16
	for _, mode := range modes {
		for _, world := range []int{1, 4} {
			s := order.Spec{Blocks: blocks(n, size), Mode: mode, Seed: 9, WindowRows: window, WorldSize: world, BatchSize: batch}
			for r := range world {
				s.Rank = r
				p, err := order.Plan(s)
				require.NoError(t, err)
				rows := flat(batches(t, p))
				ws := p.Windows()
				require.NotEmpty(t, ws)
				require.Equal(t, int64(0), ws[0].Start)
				require.Equal(t, p.Rows(), ws[len(ws)-1].End)
				for i, w := range ws {
					if i > 0 {
						require.Equal(t, ws[i-1].End, w.Start, "windows are consecutive")
					}
					require.Zero(t, w.Start%batch, "window %d starts at a batch", i)
					if i < len(ws)-1 {
						require.Equal(t, int64(winLen), w.End-w.Start)
					}
					in := rows[w.Start:w.End]
					if mode != order.ModeBlock {
						continue
					}
					perBlock := map[int64]int{}
					for _, x := range in {
						perBlock[x/size]++
					}
					partial := 0
					for _, c := range perBlock {
						if c != size {
							partial++
						}
					}
					require.LessOrEqual(t, partial, 3, "window %d: whole blocks but at its ends (and the dataset's short last block)", i)
					require.False(t, slices.IsSorted(in), "window %d is shuffled", i)
				}
			}
		}
	}
}

// TestConcurrentUse: a plan serves Batch and All from many goroutines at
// once (run with -race).
func TestConcurrentUse(t *testing.T) {
	for _, mode := range modes {
		p, err := order.Plan(order.Spec{Blocks: blocks(3000, 64), Mode: mode, Seed: 4, WindowRows: 200, WorldSize: 2, BatchSize: 7})
		require.NoError(t, err)
		want := batches(t, p)
		var wg sync.WaitGroup
		got := make([][][]int64, 8)
		for g := range got {
			wg.Go(func() {
				if g%2 == 0 {
					for _, b := range p.All() {
						got[g] = append(got[g], slices.Clone(b))
					}
					return
				}
				for i := range p.Batches() {
					got[g] = append(got[g], p.Batch(nil, i))
				}
			})
		}
		wg.Wait()
		for g := range got {
			require.Equal(t, want, got[g], "%s goroutine %d", mode, g)
		}
	}
}

// TestBatchLargerThanEpoch: a batch size far beyond the epoch's rows (a
// typo, 2^40) gives one batch of every row, in every mode, with memory
// for the rows and not for the batch size asked for.
func TestBatchLargerThanEpoch(t *testing.T) {
	for _, mode := range modes {
		t.Run(string(mode), func(t *testing.T) {
			p, err := order.Plan(order.Spec{Blocks: blocks(10, 3), Mode: mode, Seed: 1, BatchSize: 1 << 40})
			require.NoError(t, err)
			require.Equal(t, 1, p.Batches())
			n := 0
			for _, pos := range p.All() {
				require.Len(t, pos, 10)
				require.LessOrEqual(t, cap(pos), 10)
				n++
			}
			require.Equal(t, 1, n)
		})
	}
}
