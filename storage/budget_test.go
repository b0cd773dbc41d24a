package storage_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/storage"
)

// fakeClock is a clock whose sleeps take no time: each one moves it on,
// and then calls onSleep with the new time.
type fakeClock struct {
	mu      sync.Mutex
	t       time.Time
	slept   []time.Duration
	onSleep func(now time.Time)
}

func newFakeClock() *fakeClock { return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.slept = append(c.slept, d)
	now, on := c.t, c.onSleep
	c.mu.Unlock()
	if on != nil {
		on(now)
	}
	return ctx.Err() // cancelled while "sleeping"
}

// outageStore returns a memory store holding key "k", behind a Faulty
// that is down, and a retrying store over it on c under p.
func outageStore(t *testing.T, c *fakeClock, p storage.RetryPolicy) (*storage.Faulty, *storage.RetryStore) {
	t.Helper()
	inner := memStore(t)
	require.NoError(t, inner.Put(context.Background(), "k", []byte("v")))
	f := storage.NewFaulty(inner, storage.FaultConfig{})
	f.SetOutage(true)
	return f, storage.NewRetryStoreOnClock(f, p, c.Now, c.Sleep)
}

// TestRetryBudgetRidesOutAnOutage: with the default policy, a store that
// is down for 45 s is waited for, however many attempts that takes, and
// the wait is counted.
func TestRetryBudgetRidesOutAnOutage(t *testing.T) {
	for _, outage := range []time.Duration{2 * time.Second, 10 * time.Second, 30 * time.Second, 45 * time.Second} {
		t.Run(outage.String(), func(t *testing.T) {
			c := newFakeClock()
			f, st := outageStore(t, c, storage.RetryPolicy{})
			back := c.Now().Add(outage)
			c.onSleep = func(now time.Time) {
				if !now.Before(back) {
					f.SetOutage(false)
				}
			}
			got, err := st.Get(context.Background(), "k")
			require.NoError(t, err)
			require.Equal(t, "v", string(got))
			for i, d := range c.slept {
				require.LessOrEqual(t, d, 2*time.Second, "sleep %d: capped at MaxDelay", i)
			}
			stats := st.RetryStats()
			require.Equal(t, int64(len(c.slept)), stats.Retries)
			require.Equal(t, f.Injected(), stats.Retries, "every failure retried")
			require.Equal(t, int64(1), stats.Retried)
			require.Zero(t, stats.GaveUp)
			require.Equal(t, c.Now().Sub(back.Add(-outage)), stats.Wait, "the wait: from the first failure to the success")
			require.GreaterOrEqual(t, stats.Wait, outage)
			sub, err := storage.Sub(st, "p")
			require.NoError(t, err)
			require.Equal(t, stats, storage.RetryStatsOf(sub), "a view reports its parent's counters")
			require.Equal(t, storage.RetryStats{}, storage.RetryStatsOf(f), "a store that does not retry reports none")
		})
	}
}

// TestRetryBudgetGivesUp: an outage longer than the budget ends the
// operation when the budget is spent, not before nor a backoff later, with
// an error that says how long and how often it tried.
func TestRetryBudgetGivesUp(t *testing.T) {
	c := newFakeClock()
	f, st := outageStore(t, c, storage.RetryPolicy{Budget: 10 * time.Second})
	start := c.Now()
	_, err := st.Get(context.Background(), "k")
	require.ErrorIs(t, err, storage.ErrTransient)
	require.Equal(t, 10*time.Second, c.Now().Sub(start), "the last retry is at the budget's end")
	n := len(c.slept) + 1
	require.Equal(t, int64(n), f.Injected())
	require.Contains(t, err.Error(), fmt.Sprintf("gave up after 10s (%d attempts): ", n))
	require.Contains(t, err.Error(), "injected outage")
	stats := st.RetryStats()
	require.Equal(t, int64(1), stats.GaveUp)
	require.Equal(t, 10*time.Second, stats.Wait)
}

// TestRetryBounds: the attempts bound the retries too, whichever of them
// and the budget comes first; a negative budget leaves the attempts (or
// nothing) to bound them.
func TestRetryBounds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        storage.RetryPolicy
		outage   time.Duration // 0: for ever
		attempts int           // when it gives up; 0 when it rides the outage out
	}{
		{"attempts first", storage.RetryPolicy{MaxAttempts: 3}, 0, 3},
		{"one attempt: no retries", storage.RetryPolicy{MaxAttempts: 1}, 0, 1},
		{"attempts alone", storage.RetryPolicy{MaxAttempts: 4, Budget: -1}, 0, 4},
		{"no bound but the context", storage.RetryPolicy{Budget: -1}, time.Hour, 0},
		{"budget first", storage.RetryPolicy{MaxAttempts: 1000, Budget: time.Second, BaseDelay: 200 * time.Millisecond, MaxDelay: 200 * time.Millisecond}, 0, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeClock()
			f, st := outageStore(t, c, tc.p)
			if tc.outage > 0 {
				back := c.Now().Add(tc.outage)
				c.onSleep = func(now time.Time) {
					if !now.Before(back) {
						f.SetOutage(false)
					}
				}
			}
			start := c.Now()
			_, err := st.Get(context.Background(), "k")
			switch {
			case tc.attempts == 0:
				require.NoError(t, err)
				require.GreaterOrEqual(t, c.Now().Sub(start), tc.outage)
			case tc.attempts > 0:
				require.ErrorIs(t, err, storage.ErrTransient)
				require.Equal(t, int64(tc.attempts), f.Injected())
				require.Contains(t, err.Error(), fmt.Sprintf("(%d attempt", tc.attempts))
			default:
				require.ErrorIs(t, err, storage.ErrTransient)
				require.Equal(t, time.Second, c.Now().Sub(start))
				require.Less(t, f.Injected(), int64(1000))
			}
		})
	}
}

// TestRetryBudgetCancelled: cancelling the caller's context during an
// outage stops the retries at once.
func TestRetryBudgetCancelled(t *testing.T) {
	c := newFakeClock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, st := outageStore(t, c, storage.RetryPolicy{})
	c.onSleep = func(now time.Time) {
		if len(c.slept) == 3 {
			cancel()
		}
	}
	_, err := st.Get(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, storage.ErrTransient, "the last failure is kept")
	require.Equal(t, int64(3), f.Injected(), "no attempt after the cancellation")
}

// TestRetryWaitCountsOverlapsOnce: 8 reads riding out one outage together
// add the outage's time to Wait once, not 8 times.
func TestRetryWaitCountsOverlapsOnce(t *testing.T) {
	inner := memStore(t)
	require.NoError(t, inner.Put(context.Background(), "k", []byte("v")))
	f := storage.NewFaulty(inner, storage.FaultConfig{})
	st := storage.NewRetryStore(f, storage.RetryPolicy{BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond})
	f.SetOutage(true)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = st.Get(context.Background(), "k") })
	}
	for f.Injected() < 16 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	f.SetOutage(false)
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		require.NoError(t, err)
	}
	stats := st.RetryStats()
	require.Equal(t, int64(8), stats.Retried)
	require.Positive(t, stats.Wait)
	require.LessOrEqual(t, stats.Wait, wall, "overlapping waits count once")
}

// TestRetryPutIfAbsentUnknownOutcome: when a put-if-absent's first attempt
// may have written the object, the key is then found present, and reading
// it back fails too, the outcome is unknown: the error says so, and is
// not ErrExists, which would make a committer take its own commit for
// another writer's.
func TestRetryPutIfAbsentUnknownOutcome(t *testing.T) {
	inner := &scripted{Store: memStore(t), afterWrite: true, fail: func(n int64, _ context.Context) error {
		if n == 2 {
			return nil // the second put-if-absent finds the key present
		}
		return errFlaky // the first put-if-absent's reply, and every read back
	}}
	st := storage.NewRetryStore(inner, fast)
	err := st.PutIfAbsent(context.Background(), "log/1", []byte("mine"))
	require.Error(t, err)
	require.NotErrorIs(t, err, storage.ErrExists)
	require.ErrorIs(t, err, storage.ErrTransient)
	require.ErrorContains(t, err, "outcome unknown")
	got, gerr := inner.Store.Get(context.Background(), "log/1")
	require.NoError(t, gerr)
	require.Equal(t, "mine", string(got), "it was written")
}

func TestSettingsRetryBudget(t *testing.T) {
	st, err := storage.Open(context.Background(), "mem://settings-budget", storage.WithSettings(storage.Settings{RetryBudget: 5 * time.Minute}))
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, 5*time.Minute, st.(*storage.RetryStore).Policy().Budget)
	require.Contains(t, storage.Settings{RetryBudget: 5 * time.Minute}.String(), "retry_budget=5m0s")
}
