package loch

import (
	"math/rand/v2"
	"runtime"
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
	p := NewBufferPool(64 << 20)
	for range 100 {
		n := 1 + r.IntN(1<<20)
		b := p.get(n)
		require.Len(t, b, n)
		_, size := bufClass(n)
		require.Equal(t, size, cap(b))
		p.put(b)
	}
	// A buffer of another capacity is not pooled (and does not panic).
	idle := p.Idle()
	p.put(make([]byte, 5000))
	p.put(nil)
	require.Equal(t, idle, p.Idle())
}

// TestBufferPoolReusesWithinItsRoom: a buffer handed back is the next one
// of its class handed out, across garbage collections (a sync.Pool's are
// dropped by them), and the idle bytes never exceed the room.
func TestBufferPoolReusesWithinItsRoom(t *testing.T) {
	p := NewBufferPool(3 << 20)
	a := p.get(1 << 20)
	a[0] = 7
	p.put(a)
	runtime.GC()
	runtime.GC()
	b := p.get(1<<20 - 100)
	require.Equal(t, &a[:1][0], &b[:1][0], "the same buffer, reused")
	gets, fresh := p.Counts()
	require.EqualValues(t, 2, gets)
	require.EqualValues(t, 1, fresh)

	var bufs [][]byte
	for range 5 {
		bufs = append(bufs, p.get(1<<20))
	}
	for _, b := range bufs {
		p.put(b)
	}
	require.EqualValues(t, 3<<20, p.Idle(), "three of 1 MiB kept, two left to the sync.Pool")
	p.SetRoom(1 << 20)
	p.put(p.get(4096)) // beyond the room: to the sync.Pool
	require.EqualValues(t, 3<<20, p.Idle())
	p.Trim()
	require.EqualValues(t, 1<<20, p.Idle())
	p.SetRoom(0)
	p.Trim()
	require.Zero(t, p.Idle())
}
