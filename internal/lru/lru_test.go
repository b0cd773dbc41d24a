package lru_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/lru"
	"github.com/lochdata/loch/internal/testseed"
)

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	var evicted []string
	c := lru.New[string, int](10, func(k string, _ int, _ int64) { evicted = append(evicted, k) })
	require.True(t, c.Add("a", 1, 4))
	require.True(t, c.Add("b", 2, 4))
	_, ok := c.Get("a") // a is now the most recent
	require.True(t, ok)
	require.True(t, c.Add("c", 3, 4)) // 12 > 10: b goes
	require.Equal(t, []string{"b"}, evicted)
	_, ok = c.Get("b")
	require.False(t, ok)
	v, ok := c.Get("a")
	require.True(t, ok)
	require.Equal(t, 1, v)
	require.Equal(t, int64(8), c.Size())
	require.Equal(t, 2, c.Len())
}

func TestReplaceAndTooLarge(t *testing.T) {
	c := lru.New[string, string](10, nil)
	require.True(t, c.Add("k", "small", 2))
	require.True(t, c.Add("k", "bigger", 6)) // replaces, size follows
	require.Equal(t, int64(6), c.Size())
	require.False(t, c.Add("k", "huge", 11)) // not stored, and the old value is gone
	_, ok := c.Get("k")
	require.False(t, ok)
	require.Equal(t, int64(0), c.Size())
	c.Remove("absent") // no-op
	require.Equal(t, 0, c.Len())
}

// TestMatchesModel runs random operations against a slice model of the
// recency order.
func TestMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	const max = 64
	c := lru.New[int, int](max, nil)
	var model []item // front = most recent
	find := func(k int) int {
		return slices.IndexFunc(model, func(it item) bool { return it.k == k })
	}
	for step := 0; step < 20000; step++ {
		k := rng.IntN(32)
		switch rng.IntN(3) {
		case 0:
			v, ok := c.Get(k)
			i := find(k)
			require.Equal(t, i >= 0, ok, "step %d get %d", step, k)
			if i >= 0 {
				require.Equal(t, model[i].v, v)
				it := model[i]
				model = append([]item{it}, slices.Delete(model, i, i+1)...)
			}
		case 1:
			size, v := rng.IntN(max+8), rng.Int()
			if i := find(k); i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
			require.Equal(t, size <= max, c.Add(k, v, int64(size)))
			if size <= max {
				model = append([]item{{k, v, size}}, model...)
				for total(model) > max {
					model = model[:len(model)-1]
				}
			}
		case 2:
			c.Remove(k)
			if i := find(k); i >= 0 {
				model = slices.Delete(model, i, i+1)
			}
		}
		require.Equal(t, len(model), c.Len())
		require.Equal(t, int64(total(model)), c.Size())
	}
}

type item struct{ k, v, size int }

func total(items []item) int {
	n := 0
	for _, it := range items {
		n += it.size
	}
	return n
}
