package loader

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
)

// TestRunsOf checks runsOf against the runs of the sorted, deduplicated
// indices, on dense sets (marked) and sparse ones (sorted), with repeats.
func TestRunsOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		idx  []int
		want [][2]int
	}{
		{"empty", nil, nil},
		{"one", []int{7}, [][2]int{{7, 8}}},
		{"repeats", []int{3, 3, 4, 6, 6}, [][2]int{{3, 5}, {6, 7}}},
		{"shuffled segment", []int{12, 10, 11, 14, 13}, [][2]int{{10, 15}}},
		{"sparse", []int{900, 1, 2, 400}, [][2]int{{1, 3}, {400, 401}, {900, 901}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := runsOf(nil, slices.Clone(tc.idx), nil)
			require.Equal(t, tc.want, got)
		})
	}
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	var marks []bool
	for range 500 {
		idx := make([]int, rng.IntN(50))
		span := 1 + rng.IntN(400)
		for i := range idx {
			idx[i] = rng.IntN(span)
		}
		got, m := runsOf([][2]int{{-5, -4}}, slices.Clone(idx), marks)
		marks = m
		require.Equal(t, append([][2]int{{-5, -4}}, sortedRuns(idx)...), got, "indices %v", idx)
	}
}

// sortedRuns is the runs of idx by sorting: what runsOf replaced.
func sortedRuns(idx []int) [][2]int {
	idx = slices.Compact(slices.Sorted(slices.Values(idx)))
	var out [][2]int
	for _, i := range idx {
		if n := len(out); n > 0 && out[n-1][1] == i {
			out[n-1][1]++
		} else {
			out = append(out, [2]int{i, i + 1})
		}
	}
	return out
}
