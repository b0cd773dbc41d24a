package order_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/loader/order"
)

// mixBatches returns a mixture plan's batches, copied.
func mixBatches(t testing.TB, p *order.MixPlan) [][]order.Item {
	t.Helper()
	var out [][]order.Item
	for i, b := range p.All() {
		require.Equal(t, len(out), i)
		out = append(out, slices.Clone(b))
	}
	require.Len(t, out, p.Batches())
	return out
}

// mixRanks returns the batches of every rank of s, resumed from st when
// st is not nil.
func mixRanks(t testing.TB, s order.MixSpec, st *order.State) [][][]order.Item {
	t.Helper()
	out := make([][][]order.Item, max(s.WorldSize, 1))
	for r := range out {
		s.Rank = r
		var p *order.MixPlan
		var err error
		if st == nil {
			p, err = order.PlanMix(s)
		} else {
			p, err = order.ResumeMix(s, *st)
		}
		require.NoError(t, err)
		out[r] = mixBatches(t, p)
	}
	return out
}

func threeDatasets() order.MixSpec {
	return order.MixSpec{
		Parts: []order.Spec{
			{Blocks: blocks(1000, 50), Mode: order.ModeBlock, WindowRows: 200},
			{Blocks: blocks(3000, 100), Mode: order.ModeFull},
			{Blocks: blocks(500, 10), Mode: order.ModeNone},
		},
		Weights:   []float64{0.5, 0.3, 0.2},
		Seed:      11,
		BatchSize: 16,
	}
}

// TestMixProportions: an epoch ends when the dataset with the largest
// size over weight (the second: 3000/0.3 = 10,000 rows) has delivered each
// of its rows once; the others are cycled, each cycle a new shuffle, and
// the counts are exactly the weights' shares of the epoch, in a random
// order whose running proportions converge to the weights.
func TestMixProportions(t *testing.T) {
	s := threeDatasets()
	items := flat(mixRanks(t, s, nil)...)
	require.Len(t, items, 10_000)
	per := make([][]int64, 3)
	for _, it := range items {
		per[it.Dataset] = append(per[it.Dataset], it.Pos)
	}
	for d, cycles := range []int{5, 1, 4} {
		c := counts(per[d])
		require.Len(t, c, []int{1000, 3000, 500}[d], "dataset %d: every row", d)
		for p, k := range c {
			require.Equal(t, cycles, k, "dataset %d row %d", d, p)
		}
	}
	// Cycles of the none-mode dataset are in order; of the block-mode one,
	// each cycle is another shuffle.
	require.Equal(t, per[2][:500], per[2][500:1000])
	require.NotEqual(t, per[0][:1000], per[0][1000:2000])

	for _, n := range []int{100, 1000, 10_000} {
		var c [3]int
		for _, it := range items[:n] {
			c[it.Dataset]++
		}
		var worst float64
		for d, w := range s.Weights {
			worst = max(worst, math.Abs(float64(c[d])/float64(n)-w))
		}
		t.Logf("mixture proportions after %5d rows: %.4f %.4f %.4f (largest error %.4f)",
			n, float64(c[0])/float64(n), float64(c[1])/float64(n), float64(c[2])/float64(n), worst)
		require.Less(t, worst, 3/math.Sqrt(float64(n)))
	}
}

func TestMixShape(t *testing.T) {
	s := threeDatasets()
	s.WorldSize, s.EpochRows = 3, 1000
	for _, dropLast := range []bool{false, true} {
		s.DropLast = dropLast
		got := mixRanks(t, s, nil)
		for r := range got {
			require.Len(t, got[r], len(got[0]))
			for i, b := range got[r] {
				require.Len(t, b, len(got[0][i]))
				if dropLast || i < len(got[r])-1 {
					require.Len(t, b, s.BatchSize)
				}
				for j, it := range b {
					require.Equal(t, got[0][i][j].Dataset, it.Dataset, "every rank draws the same datasets")
				}
			}
		}
		rows := len(flat(got[0]))
		if dropLast {
			require.Equal(t, 334/16*16, rows)
		} else {
			require.Equal(t, 334, rows, "EpochRows over 3 ranks, rounded up")
		}
		// Each dataset's rows are sharded: no rank repeats another's
		// within a cycle.
		seen := map[order.Item]int{}
		for _, it := range flat(got...) {
			if it.Dataset == 1 {
				seen[it]++
			}
		}
		for it, n := range seen {
			require.Equal(t, 1, n, "%+v", it)
		}
	}
}

func TestMixDeterminism(t *testing.T) {
	s := threeDatasets()
	first := mixRanks(t, s, nil)
	require.Equal(t, first, mixRanks(t, s, nil))
	other := s
	other.Seed++
	require.NotEqual(t, first, mixRanks(t, other, nil))
	other = s
	other.Epoch++
	require.NotEqual(t, first, mixRanks(t, other, nil))
}

func TestMixResume(t *testing.T) {
	s := threeDatasets()
	s.WorldSize, s.EpochRows, s.Version = 2, 1200, "v7"
	want := mixRanks(t, s, nil)
	for r := range 2 {
		s.Rank = r
		p, err := order.PlanMix(s)
		require.NoError(t, err)
		for k := 0; k <= p.Batches(); k++ {
			st := p.State(k)
			q, err := order.ResumeMix(s, st)
			require.NoError(t, err)
			if k == p.Batches() {
				require.Equal(t, s.Epoch+1, st.Epoch)
				next := s
				next.Epoch++
				pn, err := order.PlanMix(next)
				require.NoError(t, err)
				require.Equal(t, mixBatches(t, pn), mixBatches(t, q))
				continue
			}
			require.Equal(t, want[r][k:], mixBatches(t, q), "rank %d resumed after %d batches", r, k)
		}
	}
}

// TestMixElastic: a mixture epoch resized from 4 to 3 ranks mid-epoch
// keeps equal batches on the new ranks, about the same number of rows in
// the epoch, and each dataset's rows delivered evenly (a dataset's rows
// left in its current cycle are spread over the new ranks, as for one
// dataset).
func TestMixElastic(t *testing.T) {
	s := threeDatasets()
	s.Parts[0].Blocks = blocks(1200, 50)
	s.Parts[1].Blocks = blocks(3600, 100)
	s.Parts[2].Blocks = blocks(600, 10)
	s.WorldSize = 4
	before := mixRanks(t, s, nil)
	total := len(flat(before...))
	k := len(before[0]) / 3
	delivered := firstBatches(before, k)
	p, err := order.PlanMix(s)
	require.NoError(t, err)
	st := p.State(k)

	now := s
	now.WorldSize = 3
	after := mixRanks(t, now, &st)
	for r := range after {
		require.Len(t, after[r], len(after[0]))
	}
	all := append(delivered, flat(after...)...)
	require.InDelta(t, total, len(all), 3, "the epoch keeps its rows")

	per := map[int]map[int64]int{}
	for _, it := range all {
		if per[it.Dataset] == nil {
			per[it.Dataset] = map[int64]int{}
		}
		per[it.Dataset][it.Pos]++
	}
	for d, c := range per {
		lo, hi := math.MaxInt, 0
		for _, n := range c {
			lo, hi = min(lo, n), max(hi, n)
		}
		require.LessOrEqual(t, hi-lo, 2, "dataset %d's rows are delivered %d to %d times", d, lo, hi)
	}

	// The resized run saved and resumed in 3 ranks continues exactly.
	now.Rank = 1
	q, err := order.ResumeMix(now, st)
	require.NoError(t, err)
	st2 := q.State(2)
	require.Len(t, st2.Stages, 2)
	q2, err := order.ResumeMix(now, st2)
	require.NoError(t, err)
	require.Equal(t, after[1][2:], mixBatches(t, q2))
}

func TestMixValidate(t *testing.T) {
	ok := threeDatasets()
	require.NoError(t, ok.Validate())
	tests := []struct {
		name string
		edit func(*order.MixSpec)
		msg  string
	}{
		{"no datasets", func(s *order.MixSpec) { s.Parts, s.Weights = nil, nil }, "0 datasets with 0 weights"},
		{"weights", func(s *order.MixSpec) { s.Weights = s.Weights[:2] }, "3 datasets with 2 weights"},
		{"negative", func(s *order.MixSpec) { s.Weights[1] = -1 }, "weight 1 is -1"},
		{"nan", func(s *order.MixSpec) { s.Weights[2] = math.NaN() }, "weight 2 is NaN"},
		{"all zero", func(s *order.MixSpec) { s.Weights = []float64{0, 0, 0} }, "every weight is 0"},
		{"tiny", func(s *order.MixSpec) { s.Weights[0] = 1.0 / 3e15 }, "below 2^-41 of the largest"},
		{"dataset", func(s *order.MixSpec) { s.Parts[1].Mode = "shuffle" }, `dataset 1: shuffle mode "shuffle"`},
		{"batch", func(s *order.MixSpec) { s.BatchSize = 0 }, "batch size 0"},
		{"rank", func(s *order.MixSpec) { s.WorldSize, s.Rank = 2, 3 }, "rank 3 outside world size 2"},
		{"epoch rows", func(s *order.MixSpec) { s.EpochRows = -1 }, "epoch of -1 rows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := threeDatasets()
			tt.edit(&s)
			_, err := order.PlanMix(s)
			require.ErrorIs(t, err, order.ErrInvalid)
			require.ErrorContains(t, err, tt.msg)
		})
	}
	t.Run("empty dataset", func(t *testing.T) {
		s := threeDatasets()
		s.Parts[2].Subset = []int64{}
		_, err := order.PlanMix(s)
		require.ErrorIs(t, err, order.ErrInvalid)
		require.ErrorContains(t, err, "dataset 2 (0 rows) gives each of 1 ranks no rows")
		s.Weights[2] = 0
		_, err = order.PlanMix(s)
		require.NoError(t, err, "a dataset of weight 0 may be empty")
	})
}

// TestMixResumeSetup: a mixture's state records its weights, epoch length
// and each dataset's setup, and a resume that changes one is refused.
func TestMixResumeSetup(t *testing.T) {
	s := threeDatasets()
	s.Version = "v"
	p, err := order.PlanMix(s)
	require.NoError(t, err)
	st := p.State(1)
	tests := []mismatch[order.MixSpec]{
		{"seed", func(s *order.MixSpec) { s.Seed++ }, fmt.Sprintf("seed %d, resumed with seed %d", s.Seed, s.Seed+1)},
		{"drop last", func(s *order.MixSpec) { s.DropLast = !s.DropLast }, "drop_last"},
		{"weights", func(s *order.MixSpec) { s.Weights = []float64{1, 1, 1} }, "mixture weights"},
		{"epoch rows", func(s *order.MixSpec) { s.EpochRows = 99 }, "epoch_rows 0, resumed with 99"},
		{"part mode", func(s *order.MixSpec) {
			s.Parts = slices.Clone(s.Parts)
			s.Parts[1].Mode = order.ModeNone
		}, "dataset 1's shuffle mode"},
		{"parts", func(s *order.MixSpec) { s.Parts, s.Weights = s.Parts[:2], s.Weights[:2] }, "mixture weights"},
	}
	requireMismatches(t, s, tests, func(s order.MixSpec) error {
		_, err := order.ResumeMix(s, st)
		return err
	})
	_, err = order.ResumeMix(s, st)
	require.NoError(t, err)
}
