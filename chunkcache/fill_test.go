//go:build unix

package chunkcache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
)

var ctx = context.Background()

// fillAll fills each object as a reader of the cache does on a miss: a
// lookup, then in its turn another lookup and, on a miss, a fetch (a pause
// that leaves others time to miss too) and a Put. It returns how many it
// fetched.
func fillAll(ctx context.Context, c *chunkcache.Disk, objs []object) (int, error) {
	fetched := 0
	for _, o := range objs {
		if _, ok, err := c.Get(ctx, o.key); err != nil || ok {
			if err != nil {
				return fetched, err
			}
			continue
		}
		done, err := c.FillTurn(ctx, o.key)
		if err != nil {
			return fetched, err
		}
		_, ok, err := c.Get(ctx, o.key)
		if err == nil && !ok {
			fetched++
			time.Sleep(2 * time.Millisecond)
			err = c.Put(ctx, o.key, o.data)
		}
		done()
		if err != nil {
			return fetched, err
		}
	}
	return fetched, nil
}

// TestFillTurns: users of one cache directory through handles of their own
// (as processes are), several goroutines each, all missing the same
// objects at once, fetch each object once between them.
func TestFillTurns(t *testing.T) {
	dir := t.TempDir()
	objs := make([]object, 24)
	for i := range objs {
		objs[i] = chunk(uint64(500+i), 1+i*100)
	}
	var fetched atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 12)
	for h := range 4 {
		c, err := chunkcache.Open(dir, 1<<20, nil)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		for g := range 3 {
			order := append([]object(nil), objs...)
			for i := range order { // each goroutine in its own order
				j := (i*7 + h*5 + g*3) % len(order)
				order[i], order[j] = order[j], order[i]
			}
			wg.Go(func() {
				n, err := fillAll(ctx, c, order)
				fetched.Add(int64(n))
				errs <- err
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, len(objs), fetched.Load(), "each object fetched once")
}

// TestFillTurnWaits: a turn held by another handle keeps FillTurn waiting
// until it ends, until the caller's context ends (its error), or until the
// cache's fill wait has passed (a hung holder); closing the Disk refuses it.
func TestFillTurnWaits(t *testing.T) {
	dir := t.TempDir()
	o := chunk(7, 100)
	a, err := chunkcache.Open(dir, 1<<20, nil)
	require.NoError(t, err)
	defer a.Close()
	b, err := chunkcache.Open(dir, 1<<20, &chunkcache.Options{FillWait: 50 * time.Millisecond})
	require.NoError(t, err)
	defer b.Close()
	c, err := chunkcache.Open(dir, 1<<20, nil)
	require.NoError(t, err)
	defer c.Close()

	done, err := a.FillTurn(ctx, o.key)
	require.NoError(t, err)

	// Until the holder's turn ends.
	got := make(chan error, 1)
	go func() {
		d, err := c.FillTurn(ctx, o.key)
		if err == nil {
			d()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("FillTurn returned (%v) while another handle had the turn", err)
	case <-time.After(100 * time.Millisecond):
	}

	// A cancelled wait.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = a.FillTurn(cctx, o.key) // the same handle: its turn is another open file's
	require.ErrorIs(t, err, context.Canceled)

	// A hung holder is waited for no longer than the fill wait.
	db, err := b.FillTurn(ctx, o.key)
	require.NoError(t, err)
	db()

	done()
	done() // twice is harmless
	require.NoError(t, <-got, "the turn is the waiter's once the holder's ends")

	// Invalid keys and closed caches.
	_, err = a.FillTurn(ctx, "../x")
	require.ErrorIs(t, err, chunkcache.ErrInvalidKey)
	require.NoError(t, c.Close())
	_, err = c.FillTurn(ctx, o.key)
	require.ErrorIs(t, err, chunkcache.ErrClosed)
}
