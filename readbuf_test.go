package loch

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
)

func TestBufClass(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	check := func(n int) {
		c, size := bufClass(n)
		if n > 1<<maxBufShift {
			require.Equal(t, -1, c, "n=%d", n)
			return
		}
		require.GreaterOrEqual(t, size, n, "n=%d", n)
		if n > 1<<minBufShift {
			require.Less(t, float64(size), 1.25*float64(n), "n=%d: class size %d", n, size)
		}
		require.GreaterOrEqual(t, c, 0)
		require.Less(t, c, bufClasses)
		// A class's size is in its own class, and a byte more is in the next.
		c2, size2 := bufClass(size)
		require.Equal(t, c, c2, "n=%d size=%d", n, size)
		require.Equal(t, size, size2)
		if size < 1<<maxBufShift {
			c3, _ := bufClass(size + 1)
			require.Equal(t, c+1, c3, "n=%d size=%d", n, size)
		}
	}
	for _, n := range []int{1, 4095, 4096, 4097, 5120, 5121, 8192, 8193, 1 << 20, 1<<20 + 1, 1 << maxBufShift, 1<<maxBufShift + 1} {
		check(n)
	}
	for range 10000 {
		check(1 + rng.IntN(1<<maxBufShift+1000))
	}
}

func TestBufPoolRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		n := 1 + r.IntN(1<<20)
		b := getBuf(n)
		require.Len(t, b, n)
		_, size := bufClass(n)
		require.Equal(t, size, cap(b))
		putBuf(b)
	}
	// A buffer of another capacity is not pooled (and does not panic).
	putBuf(make([]byte, 5000))
	putBuf(nil)
}
