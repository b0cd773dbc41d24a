package order_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/loader/order"
)

// testSeed returns the seed of a property test (see internal/testseed:
// replay a failure with LOCH_TEST_SEED).
func testSeed(t testing.TB) uint64 { return testseed.Seed(t) }

// blocks splits n rows into blocks of size rows, the last one shorter.
func blocks(n, size int64) []int64 {
	var out []int64
	for ; n > 0; n -= size {
		out = append(out, min(n, size))
	}
	return out
}

// batches returns a plan's batches, copied, checking that its windows (if
// any) are consecutive non-empty spans covering the plan.
func batches(t testing.TB, p *order.EpochPlan) [][]int64 {
	t.Helper()
	var out [][]int64
	for i, b := range p.All() {
		require.Equal(t, len(out), i)
		out = append(out, slices.Clone(b))
	}
	require.Len(t, out, p.Batches())
	if ws := p.Windows(); ws != nil {
		var at int64
		for _, w := range ws {
			require.Equal(t, at, w.Start, "windows %v", ws)
			require.Greater(t, w.End, w.Start, "windows %v", ws)
			at = w.End
		}
		require.Equal(t, p.Rows(), at, "windows %v", ws)
	}
	return out
}

// allRanks returns the batches of every rank of s.
func allRanks(t testing.TB, s order.Spec) [][][]int64 {
	t.Helper()
	out := make([][][]int64, max(s.WorldSize, 1))
	for r := range out {
		s.Rank = r
		p, err := order.Plan(s)
		require.NoError(t, err)
		out[r] = batches(t, p)
	}
	return out
}

// resumeAll returns the batches of every rank of s resumed from st.
func resumeAll(t testing.TB, s order.Spec, st order.State) [][][]int64 {
	t.Helper()
	out := make([][][]int64, max(s.WorldSize, 1))
	for r := range out {
		s.Rank = r
		p, err := order.Resume(s, st)
		require.NoError(t, err)
		out[r] = batches(t, p)
	}
	return out
}

// rowsOf returns the rows an order of s arranges: the subset, or every
// row.
func rowsOf(s order.Spec) []int64 {
	if s.Subset != nil {
		return s.Subset
	}
	var n int64
	for _, b := range s.Blocks {
		n += b
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i)
	}
	return out
}

// flat concatenates the batches of some ranks.
func flat[T any](ranks ...[][]T) []T {
	var out []T
	for _, r := range ranks {
		for _, b := range r {
			out = append(out, b...)
		}
	}
	return out
}

// firstBatches returns the items of the first k batches of each rank, rank
// by rank: what the ranks delivered before a state taken after k batches.
func firstBatches[T any](ranks [][][]T, k int) []T {
	var out []T
	for _, r := range ranks {
		out = append(out, flat(r[:k])...)
	}
	return out
}

// counts counts the occurrences of each row.
func counts(rows []int64) map[int64]int {
	c := map[int64]int{}
	for _, r := range rows {
		c[r]++
	}
	return c
}

// requireEqualShape asserts that every rank has the same number of
// batches, batch i of the same length on each, all full but the last
// (which is full too with dropLast).
func requireEqualShape(t testing.TB, got [][][]int64, batch int, dropLast bool) {
	t.Helper()
	shape := func(r int) []int {
		lens := make([]int, len(got[r]))
		for i, b := range got[r] {
			lens[i] = len(b)
		}
		return lens
	}
	want := shape(0)
	for i := range want {
		if i < len(want)-1 || dropLast {
			require.Equal(t, batch, want[i], "rank 0 batch %d is short", i)
		}
		require.NotZero(t, want[i], "batch %d is empty", i)
	}
	for r := range got {
		require.Equal(t, want, shape(r), "rank %d's batches", r)
	}
}

// requireEpoch asserts the sharding contract of one epoch of s given every
// rank's batches: equal shapes; with padding, every row at least once and
// the repeats spread evenly (W*ceil(M/W) rows in all); with DropLast, no
// row twice and fewer than W*B rows dropped.
func requireEpoch(t testing.TB, s order.Spec, got [][][]int64) {
	t.Helper()
	w, b := int64(max(s.WorldSize, 1)), int64(s.BatchSize)
	requireEqualShape(t, got, s.BatchSize, s.DropLast)
	rows := rowsOf(s)
	m := int64(len(rows))
	all := flat(got...)
	c := counts(all)
	valid := counts(rows)
	var alien []int64
	for p := range c {
		if valid[p] == 0 {
			alien = append(alien, p)
		}
	}
	require.Empty(t, alien, "rows not in the order")
	if s.DropLast {
		require.Len(t, all, int(m/(w*b)*w*b))
		require.Len(t, c, len(all), "no row twice with drop_last")
		require.Less(t, m-int64(len(all)), w*b, "rows dropped")
		return
	}
	per := (m + w - 1) / w
	require.Len(t, all, int(w*per))
	if m == 0 {
		return
	}
	lo, hi := int(w*per/m), int((w*per+m-1)/m)
	var uneven []int64
	for _, p := range rows {
		if c[p] < lo || c[p] > hi {
			uneven = append(uneven, p)
		}
	}
	require.Empty(t, uneven, "rows delivered other than %d to %d times", lo, hi)
}

// requireRest asserts the contract of an elastic resume: the new ranks'
// batches (got, under s) hold no row delivered before (delivered) and,
// with padding, every row of the epoch's plan (planned) not delivered
// before, padded to an equal count per rank with repeats of the rest's
// start only; with DropLast at most fewer than WorldSize*BatchSize rows of
// that rest are dropped.
func requireRest(t testing.TB, s order.Spec, planned, delivered []int64, got [][][]int64) {
	t.Helper()
	requireEqualShape(t, got, s.BatchSize, s.DropLast)
	done := counts(delivered)
	rest := map[int64]bool{}
	for p := range counts(planned) {
		if done[p] == 0 {
			rest[p] = true
		}
	}
	all := flat(got...)
	c := counts(all)
	var again, alien []int64
	for p := range c {
		if done[p] > 0 {
			again = append(again, p)
		}
		if !rest[p] && done[p] == 0 {
			alien = append(alien, p)
		}
	}
	require.Empty(t, again, "rows delivered again after the resize")
	require.Empty(t, alien, "rows not in the epoch's plan")
	w, b := int64(max(s.WorldSize, 1)), int64(s.BatchSize)
	r := int64(len(rest))
	if s.DropLast {
		require.Len(t, all, int(r/(w*b)*w*b))
		require.Len(t, c, len(all), "no repeats with drop_last")
		return
	}
	require.Len(t, c, len(rest), "every row left is delivered")
	per := (r + w - 1) / w
	require.Len(t, all, int(w*per), "padded to an equal count per rank")
}

// mismatch is a change to a spec that a resume of a saved state refuses
// with an error containing msg.
type mismatch[S any] struct {
	name string
	edit func(*S)
	msg  string
}

// requireMismatches resumes, by resume, s changed by each of tests, and
// checks that each is refused with ErrMismatch naming the change.
func requireMismatches[S any](t *testing.T, s S, tests []mismatch[S], resume func(S) error) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := s
			tt.edit(&other)
			err := resume(other)
			require.ErrorIs(t, err, order.ErrMismatch)
			require.ErrorContains(t, err, tt.msg)
		})
	}
}
