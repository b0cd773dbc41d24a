package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// RetryPolicy bounds how a RetryStore retries transient failures: by time
// (Budget), by count (MaxAttempts), or both, whichever ends first.
//
// The zero value of Budget, BaseDelay and MaxDelay means the default; the
// zero value of MaxAttempts means no bound on the count, and of a timeout
// no timeout. The zero RetryPolicy is thus DefaultRetryPolicy less its
// ReadTimeout.
type RetryPolicy struct {
	// MaxAttempts bounds the tries of one operation, the first included:
	// 1 means no retries. Zero means no bound on the count: Budget alone
	// bounds the retries.
	MaxAttempts int
	// Budget bounds the time an operation goes on retrying, counted from
	// its first transient failure: a failure after that long is the last,
	// and the sleep before a retry is cut short so that the last retry
	// starts when the budget ends, not after. A store that stops answering
	// for less than Budget is thus ridden out. Zero means DefaultRetryBudget
	// (60 s); negative means no bound on the time (then only MaxAttempts
	// and the caller's context stop the retries).
	Budget time.Duration
	// BaseDelay and MaxDelay shape the backoff ("full jitter"): before retry
	// n (1, 2, ...) the store sleeps a uniformly random time in
	// [0, min(MaxDelay, BaseDelay·2^(n-1))]. Zero means 50 ms and 2 s, so
	// that a store that comes back is found again within 2 s.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// ReadTimeout bounds each attempt of Get, ReadRange and Stat; an attempt
	// that runs out of time is retried like any transient failure. Zero
	// means none; DefaultRetryPolicy sets 30 s. A Get reads the whole object
	// within one attempt: raise it for very large objects on slow links.
	ReadTimeout time.Duration
	// WriteTimeout bounds each attempt of Put, PutIfAbsent and Delete. Zero
	// means none, the default: a large object on a slow link takes what it
	// takes, and the caller's context still bounds the whole.
	WriteTimeout time.Duration
}

// DefaultRetryBudget is the time an operation goes on retrying a failing
// store by default (RetryPolicy.Budget): twice the 30-second outage (a
// server restarting, a failover) that loaders, ingests and commits are to
// ride out, so that the server's own start-up fits too.
const DefaultRetryBudget = 60 * time.Second

// timedOutError is an attempt that ran out of its time: its message says
// so alone, and it unwraps to what the attempt returned.
type timedOutError struct {
	timeout time.Duration
	err     error
}

func (e *timedOutError) Error() string {
	return fmt.Sprintf("no answer within %v (the attempt's timeout)", e.timeout)
}
func (e *timedOutError) Unwrap() []error { return []error{e.err, ErrTransient} }

// DefaultRetryPolicy returns the policy Open uses unless told otherwise:
// retries for up to DefaultRetryBudget (60 s) from the first failure,
// whatever their count, 50 ms base delay, 2 s cap, 30 s per read attempt,
// no write timeout.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Budget: DefaultRetryBudget, BaseDelay: 50 * time.Millisecond, MaxDelay: 2 * time.Second, ReadTimeout: 30 * time.Second}
}

// EnvRetryPolicy is DefaultRetryPolicy with the environment's overrides,
// the policy Open uses unless told otherwise: $LOCH_STORAGE_RETRY_BUDGET
// (how long an operation goes on retrying, a duration such as 5m; 0 for
// no bound on the time), $LOCH_STORAGE_ATTEMPTS (tries of one operation,
// at least 1; 1 turns retries off), $LOCH_STORAGE_READ_TIMEOUT and
// $LOCH_STORAGE_WRITE_TIMEOUT (per attempt, a duration such as 10s; 0 for
// none). The budget and the attempts both bound the retries: the first
// reached stops them. A value that does not parse is an error naming the
// variable.
func EnvRetryPolicy() (RetryPolicy, error) {
	p := DefaultRetryPolicy()
	if v := os.Getenv("LOCH_STORAGE_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("LOCH_STORAGE_ATTEMPTS=%q: want a whole number, 1 or more", v)
		}
		p.MaxAttempts = n
	}
	if v := os.Getenv("LOCH_STORAGE_RETRY_BUDGET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return p, fmt.Errorf("LOCH_STORAGE_RETRY_BUDGET=%q: want a duration such as 60s or 5m, or 0 for no bound on the time", v)
		}
		p.Budget = d
		if d == 0 {
			p.Budget = -1
		}
	}
	for _, t := range []struct {
		name string
		to   *time.Duration
	}{{"LOCH_STORAGE_READ_TIMEOUT", &p.ReadTimeout}, {"LOCH_STORAGE_WRITE_TIMEOUT", &p.WriteTimeout}} {
		if v := os.Getenv(t.name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return p, fmt.Errorf("%s=%q: want a duration such as 10s or 2m, or 0 for none", t.name, v)
			}
			*t.to = d
		}
	}
	return p, nil
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.MaxAttempts < 0 {
		p.MaxAttempts = 0
	}
	if p.Budget == 0 {
		p.Budget = d.Budget
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = d.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = d.MaxDelay
	}
	return p
}

// backoff returns the sleep before retry n (n >= 1).
func (p RetryPolicy) backoff(n int) time.Duration {
	ceil := p.MaxDelay
	if n-1 < 32 {
		if d := p.BaseDelay << (n - 1); d > 0 && d < ceil {
			ceil = d
		}
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// RetryStats counts a RetryStore's work since it was made.
type RetryStats struct {
	// Calls is the number of operations started.
	Calls int64
	// Retries is the number of attempts beyond the first.
	Retries int64
	// Retried is the number of operations retried at least once.
	Retried int64
	// GaveUp is the number of operations that still failed with a
	// transient error when the policy's budget or attempts ran out.
	GaveUp int64
	// Wait is the wall-clock time during which at least one operation was
	// failing and being retried: from its first transient failure to its
	// end (success, giving up, cancellation). Overlapping operations count
	// once, so an outage of 10 s seen by 64 concurrent reads adds about
	// 10 s: it is how long the store's users were stalled.
	Wait time.Duration
}

// RetryCounter is implemented by stores that count their retries, such as
// the one Open returns and the views Sub makes of it.
type RetryCounter interface {
	// RetryCount returns RetryStats().Retries.
	RetryCount() int64
	// RetryStats returns the counters so far.
	RetryStats() RetryStats
}

// Retries returns s's retry count if s is a RetryCounter, else 0.
func Retries(s Store) int64 {
	if rc, ok := s.(RetryCounter); ok {
		return rc.RetryCount()
	}
	return 0
}

// RetryStatsOf returns s's retry counters if s is a RetryCounter, else
// zeros.
func RetryStatsOf(s Store) RetryStats {
	if rc, ok := s.(RetryCounter); ok {
		return rc.RetryStats()
	}
	return RetryStats{}
}

// clock is the time a RetryStore reads and sleeps by; tests give it a
// fake one.
type clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends; it returns ctx's error then.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryStore wraps a Store and retries each operation that fails with an
// error wrapping ErrTransient, or whose attempt ran out of its per-attempt
// timeout, with capped exponential backoff and full jitter, until it
// succeeds or its RetryPolicy's budget (time since the first failure) or
// attempts run out; the error then says how long it tried and how often
// ("gave up after 1m0.4s (41 attempts): ..."). Other errors (not found,
// exists, permission, invalid key) are returned at once. Cancelling the
// caller's context stops it at once, sleeping included; the error then
// wraps the context's error.
//
// Two operations need more than repeating:
//
//   - PutIfAbsent: an attempt that failed transiently may have written the
//     object all the same (the reply was lost). If a later attempt finds the
//     key present, the store reads it back, and an object with exactly the
//     bytes being written counts as this call's success; other bytes are
//     another writer's (ErrExists). If the read back fails, the outcome is
//     unknown: the error says so and does not wrap ErrExists, so that a
//     caller never takes its own write for another's.
//   - List resumes after the last key handed to fn, so fn never sees a key
//     twice. An error returned by fn is never retried.
//
// A RetryStore is safe for concurrent use; its counters are atomic.
type RetryStore struct {
	inner   Store
	policy  RetryPolicy
	clock   clock
	calls   atomic.Int64
	retries atomic.Int64
	retried atomic.Int64
	gaveUp  atomic.Int64

	// wait is the union of the operations' retrying spans (RetryStats.Wait).
	waitMu  sync.Mutex
	waiting int       // operations between their first failure and their end
	since   time.Time // when waiting last went from 0 to 1
	waited  time.Duration
}

// NewRetryStore returns inner wrapped in retries under policy (zero fields
// take their defaults, see RetryPolicy). Closing it closes inner.
func NewRetryStore(inner Store, policy RetryPolicy) *RetryStore {
	return &RetryStore{inner: inner, policy: policy.withDefaults(), clock: realClock{}}
}

// Unwrap returns the wrapped store.
func (s *RetryStore) Unwrap() Store { return s.inner }

// Policy returns the policy in force, defaults filled in.
func (s *RetryStore) Policy() RetryPolicy { return s.policy }

// RetryCount returns the number of retries so far (RetryStats().Retries).
func (s *RetryStore) RetryCount() int64 { return s.retries.Load() }

// RetryStats returns the counters so far.
func (s *RetryStore) RetryStats() RetryStats {
	s.waitMu.Lock()
	wait := s.waited
	if s.waiting > 0 {
		wait += s.clock.Now().Sub(s.since)
	}
	s.waitMu.Unlock()
	return RetryStats{Calls: s.calls.Load(), Retries: s.retries.Load(), Retried: s.retried.Load(), GaveUp: s.gaveUp.Load(), Wait: wait}
}

// startWaiting and stopWaiting bracket an operation's retrying span.
func (s *RetryStore) startWaiting(now time.Time) {
	s.waitMu.Lock()
	if s.waiting == 0 {
		s.since = now
	}
	s.waiting++
	s.waitMu.Unlock()
}

func (s *RetryStore) stopWaiting() {
	s.waitMu.Lock()
	s.waiting--
	if s.waiting == 0 {
		s.waited += s.clock.Now().Sub(s.since)
	}
	s.waitMu.Unlock()
}

// permanent marks an error that do must return as is, transient or not.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

// do runs attempt until it succeeds, fails permanently, the policy gives
// up, or ctx ends. onTransient, if set, is called after each transient
// failure.
func (s *RetryStore) do(ctx context.Context, timeout time.Duration, attempt func(context.Context) error, onTransient func()) error {
	s.calls.Add(1)
	start := s.clock.Now()
	var firstFailure time.Time
	for n := 1; ; n++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			actx, cancel = context.WithTimeout(ctx, timeout)
		}
		err := attempt(actx)
		timedOut := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return p.err
		}
		if cerr := ctx.Err(); cerr != nil {
			if !errors.Is(err, cerr) {
				err = fmt.Errorf("%w: %w", err, cerr)
			}
			return err
		}
		if !timedOut && !errors.Is(err, ErrTransient) {
			return err
		}
		if timedOut {
			// What the driver says of a request it gave up on is noise
			// ("StatusCode: 0, canceled, ..."): say what happened.
			err = &timedOutError{timeout: timeout, err: err}
		}
		if onTransient != nil {
			onTransient()
		}
		now := s.clock.Now()
		if n == 1 {
			firstFailure = now
			s.startWaiting(now)
			defer s.stopWaiting()
		}
		left := s.policy.Budget - now.Sub(firstFailure) // time left to retry in
		if (s.policy.MaxAttempts > 0 && n >= s.policy.MaxAttempts) || (s.policy.Budget > 0 && left <= 0) {
			s.gaveUp.Add(1)
			return fmt.Errorf("gave up after %s (%d %s): %w", roundElapsed(now.Sub(start)), n, plural(n, "attempt", "attempts"), err)
		}
		if n == 1 {
			s.retried.Add(1)
		}
		s.retries.Add(1)
		sleep := s.policy.backoff(n)
		if s.policy.Budget > 0 {
			sleep = min(sleep, left)
		}
		if serr := s.clock.Sleep(ctx, sleep); serr != nil {
			return fmt.Errorf("retry stopped: %w: %w", serr, err)
		}
	}
}

// roundElapsed rounds d for a message: to 0.1 s from a second on, else to
// the millisecond.
func roundElapsed(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Get implements Store.
func (s *RetryStore) Get(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := s.do(ctx, s.policy.ReadTimeout, func(ctx context.Context) error {
		b, err := s.inner.Get(ctx, key)
		out = b
		return err
	}, nil)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ReadRange implements Store.
func (s *RetryStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	return s.do(ctx, s.policy.ReadTimeout, func(ctx context.Context) error {
		return s.inner.ReadRange(ctx, key, off, dst)
	}, nil)
}

// Put implements Store.
func (s *RetryStore) Put(ctx context.Context, key string, data []byte) error {
	return s.do(ctx, s.policy.WriteTimeout, func(ctx context.Context) error {
		return s.inner.Put(ctx, key, data)
	}, nil)
}

// PutIfAbsent implements Store; see RetryStore for how a lost reply is
// told apart from a lost race.
func (s *RetryStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	uncertain := false
	err := s.do(ctx, s.policy.WriteTimeout, func(ctx context.Context) error {
		return s.inner.PutIfAbsent(ctx, key, data)
	}, func() { uncertain = true })
	if err == nil || !uncertain || !errors.Is(err, ErrExists) {
		return err
	}
	got, gerr := s.Get(ctx, key)
	switch {
	case gerr == nil && bytes.Equal(got, data):
		return nil // our own write, whose reply was lost
	case gerr == nil || errors.Is(gerr, ErrNotFound):
		return err // another writer's
	}
	return fmt.Errorf("put-if-absent %s: outcome unknown: an attempt may have written the object before the key was found present, and reading it back failed: %w", key, gerr)
}

// Delete implements Store.
func (s *RetryStore) Delete(ctx context.Context, key string) error {
	return s.do(ctx, s.policy.WriteTimeout, func(ctx context.Context) error {
		return s.inner.Delete(ctx, key)
	}, nil)
}

// Stat implements Store.
func (s *RetryStore) Stat(ctx context.Context, key string) (Attrs, error) {
	var out Attrs
	err := s.do(ctx, s.policy.ReadTimeout, func(ctx context.Context) error {
		a, err := s.inner.Stat(ctx, key)
		out = a
		return err
	}, nil)
	return out, err
}

// List implements Store. It resumes after the last key delivered.
func (s *RetryStore) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	var last string
	delivered := false
	return s.do(ctx, 0, func(ctx context.Context) error {
		var fnErr error
		err := s.inner.List(ctx, prefix, func(a Attrs) error {
			if delivered && a.Key <= last {
				return nil
			}
			if err := fn(a); err != nil {
				fnErr = err
				return err
			}
			last, delivered = a.Key, true
			return nil
		})
		if fnErr != nil {
			return permanent{fnErr}
		}
		return err
	}, nil)
}

// URL implements Store.
func (s *RetryStore) URL() string { return s.inner.URL() }

// Close implements Store; it closes the wrapped store.
func (s *RetryStore) Close() error { return s.inner.Close() }
