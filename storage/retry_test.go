package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/storage"
)

// scripted is a Store over a memory bucket whose Get, PutIfAbsent and List
// fail as its script says: fail(n) gives the error for attempt n (from 1),
// or nil to go through.
type scripted struct {
	storage.Store
	calls atomic.Int64
	fail  func(n int64, ctx context.Context) error
	// afterWrite makes PutIfAbsent fail after writing, not before.
	afterWrite bool
}

func (s *scripted) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.fail(s.calls.Add(1), ctx); err != nil {
		return nil, err
	}
	return s.Store.Get(ctx, key)
}

func (s *scripted) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	n := s.calls.Add(1)
	if !s.afterWrite {
		if err := s.fail(n, ctx); err != nil {
			return err
		}
		return s.Store.PutIfAbsent(ctx, key, data)
	}
	if err := s.Store.PutIfAbsent(ctx, key, data); err != nil {
		return err
	}
	return s.fail(n, ctx)
}

func (s *scripted) List(ctx context.Context, prefix string, fn func(storage.Attrs) error) error {
	n := s.calls.Add(1)
	err := s.fail(n, ctx)
	if err == nil {
		return s.Store.List(ctx, prefix, fn)
	}
	// Fail after delivering n entries.
	delivered := int64(0)
	lerr := s.Store.List(ctx, prefix, func(a storage.Attrs) error {
		if delivered == n {
			return err
		}
		delivered++
		return fn(a)
	})
	if lerr == nil {
		return err
	}
	return lerr
}

var errFlaky = fmt.Errorf("flaky: %w", storage.ErrTransient)

func memStore(t *testing.T) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), fmt.Sprintf("mem://retry-%d", memCount.Add(1)), storage.WithRetryPolicy(storage.RetryPolicy{MaxAttempts: 1}))
	require.NoError(t, err)
	return st
}

// fast is a policy with next to no backoff.
var fast = storage.RetryPolicy{MaxAttempts: 5, BaseDelay: time.Microsecond, MaxDelay: time.Microsecond}

func TestRetryTransientIsRetriedAndCounted(t *testing.T) {
	inner := &scripted{Store: memStore(t), fail: func(n int64, _ context.Context) error {
		if n <= 3 {
			return errFlaky
		}
		return nil
	}}
	require.NoError(t, inner.Store.Put(context.Background(), "k", []byte("v")))
	st := storage.NewRetryStore(inner, fast)
	got, err := st.Get(context.Background(), "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	require.Equal(t, int64(4), inner.calls.Load())
	require.Equal(t, int64(3), st.RetryCount())
	require.Equal(t, int64(3), storage.Retries(st))
	stats := st.RetryStats()
	require.Positive(t, stats.Wait)
	stats.Wait = 0
	require.Equal(t, storage.RetryStats{Calls: 1, Retries: 3, Retried: 1}, stats)
}

func TestRetryPermanentIsNotRetried(t *testing.T) {
	for _, sentinel := range []error{storage.ErrNotFound, storage.ErrExists, storage.ErrPermission, storage.ErrInvalidKey, errors.New("unclassified")} {
		inner := &scripted{Store: memStore(t), fail: func(int64, context.Context) error {
			return fmt.Errorf("scripted: %w", sentinel)
		}}
		st := storage.NewRetryStore(inner, fast)
		_, err := st.Get(context.Background(), "k")
		require.ErrorIs(t, err, sentinel)
		require.Equal(t, int64(1), inner.calls.Load(), "%v: tried once", sentinel)
		require.Equal(t, int64(0), st.RetryCount())
	}
}

func TestRetryIsBounded(t *testing.T) {
	inner := &scripted{Store: memStore(t), fail: func(int64, context.Context) error { return errFlaky }}
	st := storage.NewRetryStore(inner, fast)
	_, err := st.Get(context.Background(), "k")
	require.ErrorIs(t, err, storage.ErrTransient)
	require.Regexp(t, `gave up after \S+ \(5 attempts\): `, err.Error())
	require.Equal(t, int64(5), inner.calls.Load())
	stats := st.RetryStats()
	stats.Wait = 0
	require.Equal(t, storage.RetryStats{Calls: 1, Retries: 4, Retried: 1, GaveUp: 1}, stats)
}

func TestRetryDefaults(t *testing.T) {
	st := storage.NewRetryStore(memStore(t), storage.RetryPolicy{})
	require.Zero(t, st.Policy().MaxAttempts, "bounded by time alone")
	require.Equal(t, storage.DefaultRetryBudget, st.Policy().Budget)
	require.Equal(t, 60*time.Second, st.Policy().Budget)
	require.Equal(t, 50*time.Millisecond, st.Policy().BaseDelay)
	require.Equal(t, 2*time.Second, st.Policy().MaxDelay)
}

func TestRetryStopsWhenContextIsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inner := &scripted{Store: memStore(t), fail: func(n int64, _ context.Context) error {
		if n == 2 {
			cancel()
		}
		return errFlaky
	}}
	// A backoff of an hour: the test only ends if cancelling cuts it short.
	st := storage.NewRetryStore(inner, storage.RetryPolicy{MaxAttempts: 100, BaseDelay: time.Hour, MaxDelay: time.Hour})
	go func() {
		// Cancel during the first backoff too, in case it is long.
		for inner.calls.Load() < 1 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	_, err := st.Get(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, storage.ErrTransient, "the last failure is kept")
	require.LessOrEqual(t, inner.calls.Load(), int64(2))
}

func TestRetryCancelledAttemptIsNotRetried(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	inner := &scripted{Store: memStore(t), fail: func(_ int64, ctx context.Context) error {
		cancel()
		return ctx.Err()
	}}
	st := storage.NewRetryStore(inner, fast)
	_, err := st.Get(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, int64(1), inner.calls.Load())
}

func TestRetryAttemptTimeout(t *testing.T) {
	inner := &scripted{Store: memStore(t), fail: func(n int64, ctx context.Context) error {
		if n == 1 {
			<-ctx.Done() // the first attempt hangs until its timeout
			return ctx.Err()
		}
		return nil
	}}
	require.NoError(t, inner.Store.Put(context.Background(), "k", []byte("v")))
	p := fast
	p.ReadTimeout = 10 * time.Millisecond
	st := storage.NewRetryStore(inner, p)
	got, err := st.Get(context.Background(), "k")
	require.NoError(t, err)
	require.Equal(t, "v", string(got))
	require.Equal(t, int64(1), st.RetryCount())
}

// TestRetryAttemptTimeoutMessage: attempts that never answer give up with
// a message that says so, not the driver's text about a canceled request,
// and the error still matches ErrTransient and the deadline.
func TestRetryAttemptTimeoutMessage(t *testing.T) {
	inner := &scripted{Store: memStore(t), fail: func(_ int64, ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("operation error S3: GetObject, https response error StatusCode: 0, canceled: %w: %w", storage.ErrTransient, ctx.Err())
	}}
	p := fast
	p.MaxAttempts, p.ReadTimeout = 2, 10*time.Millisecond
	_, err := storage.NewRetryStore(inner, p).Get(context.Background(), "k")
	require.ErrorIs(t, err, storage.ErrTransient)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Regexp(t, `gave up after \S+ \(2 attempts\): no answer within 10ms \(the attempt's timeout\)`, err.Error())
	require.NotContains(t, err.Error(), "StatusCode")
}

func TestEnvRetryPolicy(t *testing.T) {
	t.Setenv("LOCH_STORAGE_ATTEMPTS", "2")
	t.Setenv("LOCH_STORAGE_READ_TIMEOUT", "5s")
	t.Setenv("LOCH_STORAGE_WRITE_TIMEOUT", "1m")
	p, err := storage.EnvRetryPolicy()
	require.NoError(t, err)
	want := storage.DefaultRetryPolicy()
	want.MaxAttempts, want.ReadTimeout, want.WriteTimeout = 2, 5*time.Second, time.Minute
	require.Equal(t, want, p, "the attempts bound the retries as before, within the default budget")
	t.Setenv("LOCH_STORAGE_READ_TIMEOUT", "0")
	t.Setenv("LOCH_STORAGE_RETRY_BUDGET", "5m")
	p, err = storage.EnvRetryPolicy()
	require.NoError(t, err)
	require.Zero(t, p.ReadTimeout, "0: none")
	require.Equal(t, 5*time.Minute, p.Budget)
	t.Setenv("LOCH_STORAGE_RETRY_BUDGET", "0")
	p, err = storage.EnvRetryPolicy()
	require.NoError(t, err)
	require.Negative(t, p.Budget, "0: no bound on the time")
	for name, bad := range map[string]string{"LOCH_STORAGE_ATTEMPTS": "0", "LOCH_STORAGE_WRITE_TIMEOUT": "soon", "LOCH_STORAGE_RETRY_BUDGET": "-1s"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			_, err := storage.EnvRetryPolicy()
			require.ErrorContains(t, err, name+"=")
			_, err = storage.Open(context.Background(), "mem://env-policy")
			require.ErrorIs(t, err, storage.ErrInvalidURL)
			require.ErrorContains(t, err, name)
		})
	}
}

func TestRetryPutIfAbsentLostReply(t *testing.T) {
	ctx := context.Background()
	lostOnce := func(n int64, _ context.Context) error {
		if n == 1 {
			return errFlaky
		}
		return nil
	}
	// The first attempt wrote, but its reply was lost: the retry finds the
	// key present with our bytes, which counts as success.
	inner := &scripted{Store: memStore(t), afterWrite: true, fail: lostOnce}
	st := storage.NewRetryStore(inner, fast)
	require.NoError(t, st.PutIfAbsent(ctx, "k", []byte("mine")))
	require.Equal(t, int64(1), st.RetryCount())

	// The first attempt failed before writing, and meanwhile someone else
	// wrote: that is a lost race.
	inner = &scripted{Store: memStore(t), fail: func(n int64, ctx context.Context) error {
		if n == 1 {
			return errFlaky
		}
		return nil
	}}
	require.NoError(t, inner.Store.Put(ctx, "k", []byte("theirs")))
	st = storage.NewRetryStore(inner, fast)
	require.ErrorIs(t, st.PutIfAbsent(ctx, "k", []byte("mine")), storage.ErrExists)

	// Without a failed attempt, present is present, whatever the bytes.
	inner = &scripted{Store: memStore(t), fail: func(int64, context.Context) error { return nil }}
	require.NoError(t, inner.Store.Put(ctx, "k", []byte("mine")))
	st = storage.NewRetryStore(inner, fast)
	require.ErrorIs(t, st.PutIfAbsent(ctx, "k", []byte("mine")), storage.ErrExists)
}

func TestRetryListResumes(t *testing.T) {
	ctx := context.Background()
	inner := &scripted{Store: memStore(t), fail: func(n int64, _ context.Context) error {
		if n <= 2 {
			return errFlaky // fail after delivering n entries
		}
		return nil
	}}
	var want []string
	for i := range 6 {
		k := fmt.Sprintf("k%d", i)
		want = append(want, k)
		require.NoError(t, inner.Store.Put(ctx, k, nil))
	}
	st := storage.NewRetryStore(inner, fast)
	var got []string
	require.NoError(t, st.List(ctx, "", func(a storage.Attrs) error {
		got = append(got, a.Key)
		return nil
	}))
	require.Equal(t, want, got, "each key once, in order")
	require.Equal(t, int64(2), st.RetryCount())
}

func TestRetryListCallbackErrorIsNotRetried(t *testing.T) {
	ctx := context.Background()
	inner := &scripted{Store: memStore(t), fail: func(int64, context.Context) error { return nil }}
	require.NoError(t, inner.Store.Put(ctx, "a", nil))
	st := storage.NewRetryStore(inner, fast)
	calls := 0
	err := st.List(ctx, "", func(storage.Attrs) error {
		calls++
		return errFlaky // transient, but the caller's: not the store's to retry
	})
	require.ErrorIs(t, err, errFlaky)
	require.Equal(t, 1, calls)
	require.Equal(t, int64(0), st.RetryCount())
}

func TestFaultyIsDeterministic(t *testing.T) {
	ctx := context.Background()
	pattern := func(seed int64) []bool {
		inner := memStore(t)
		for i := range 7 {
			require.NoError(t, inner.Put(ctx, fmt.Sprintf("k%d", i), nil))
		}
		f := storage.NewFaulty(inner, storage.FaultConfig{ReadErrorRate: 0.3, Seed: seed})
		var out []bool
		for i := range 200 {
			_, err := f.Stat(ctx, fmt.Sprintf("k%d", i%7))
			if err != nil {
				require.ErrorIs(t, err, storage.ErrTransient)
			}
			out = append(out, err != nil)
		}
		return out
	}
	require.Equal(t, pattern(42), pattern(42), "same seed, same faults")
	require.NotEqual(t, pattern(42), pattern(43), "another seed, other faults")
}

func TestFaultyRate(t *testing.T) {
	ctx := context.Background()
	inner := memStore(t)
	require.NoError(t, inner.Put(ctx, "k", []byte("v")))
	f := storage.NewFaulty(inner, storage.FaultConfig{ReadErrorRate: 0.1, Seed: 7})
	failed := 0
	for range 5000 {
		if _, err := f.Get(ctx, "k"); err != nil {
			require.ErrorIs(t, err, storage.ErrTransient)
			failed++
		}
	}
	require.Equal(t, int64(failed), f.Injected())
	require.InDelta(t, 500, failed, 100, "about a tenth of the reads fail")

	// Wrapped in retries, every read succeeds and the retries are counted.
	st := storage.NewRetryStore(storage.NewFaulty(inner, storage.FaultConfig{ReadErrorRate: 0.1, Seed: 7}), fast)
	for range 5000 {
		_, err := st.Get(ctx, "k")
		require.NoError(t, err)
	}
	require.InDelta(t, 555, st.RetryCount(), 120)
}

func TestFaultyLatencyRespectsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	f := storage.NewFaulty(memStore(t), storage.FaultConfig{Latency: time.Hour})
	cancel()
	_, err := f.Get(ctx, "k")
	require.ErrorIs(t, err, context.Canceled)
}
