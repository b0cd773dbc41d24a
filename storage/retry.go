package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// RetryPolicy bounds how a RetryStore retries transient failures.
//
// The zero value of MaxAttempts, BaseDelay and MaxDelay means the default;
// the zero value of a timeout means no timeout.
type RetryPolicy struct {
	// MaxAttempts bounds the tries of one operation, the first included:
	// 1 means no retries. Zero means 6.
	MaxAttempts int
	// BaseDelay and MaxDelay shape the backoff ("full jitter"): before retry
	// n (1, 2, ...) the store sleeps a uniformly random time in
	// [0, min(MaxDelay, BaseDelay·2^(n-1))]. Zero means 50 ms and 2 s.
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

// DefaultRetryPolicy returns the policy Open uses unless told otherwise: 6
// attempts, 50 ms base delay, 2 s cap, 30 s per read attempt, no write
// timeout.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: 6, BaseDelay: 50 * time.Millisecond, MaxDelay: 2 * time.Second, ReadTimeout: 30 * time.Second}
}

// EnvRetryPolicy is DefaultRetryPolicy with the environment's overrides,
// the policy Open uses unless told otherwise: $LOCH_STORAGE_ATTEMPTS (tries
// of one operation, at least 1), $LOCH_STORAGE_READ_TIMEOUT and
// $LOCH_STORAGE_WRITE_TIMEOUT (per attempt, a duration such as 10s; 0 for
// none). A value that does not parse is an error naming the variable.
func EnvRetryPolicy() (RetryPolicy, error) {
	p := DefaultRetryPolicy()
	if v := os.Getenv("LOCH_STORAGE_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("LOCH_STORAGE_ATTEMPTS=%q: want a whole number, 1 or more", v)
		}
		p.MaxAttempts = n
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
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = d.MaxAttempts
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
	// GaveUp is the number of operations that still failed with a
	// transient error after MaxAttempts.
	GaveUp int64
}

// RetryCounter is implemented by stores that count their retries, such as
// the one Open returns.
type RetryCounter interface {
	RetryCount() int64
}

// Retries returns s's retry count if s is a RetryCounter, else 0.
func Retries(s Store) int64 {
	if rc, ok := s.(RetryCounter); ok {
		return rc.RetryCount()
	}
	return 0
}

// RetryStore wraps a Store and retries each operation that fails with an
// error wrapping ErrTransient, or whose attempt ran out of its per-attempt
// timeout, with exponential backoff and full jitter, within its
// RetryPolicy. Other errors (not found, exists, permission, invalid key)
// are returned at once. Cancelling the caller's context stops it at once,
// sleeping included; the error then wraps the context's error.
//
// Two operations need more than repeating:
//
//   - PutIfAbsent: an attempt that failed transiently may have written the
//     object all the same (the reply was lost). If a later attempt finds the
//     key present, the store reads it back, and an object with exactly the
//     bytes being written counts as this call's success.
//   - List resumes after the last key handed to fn, so fn never sees a key
//     twice. An error returned by fn is never retried.
//
// A RetryStore is safe for concurrent use; its counters are atomic.
type RetryStore struct {
	inner   Store
	policy  RetryPolicy
	calls   atomic.Int64
	retries atomic.Int64
	gaveUp  atomic.Int64
}

// NewRetryStore returns inner wrapped in retries under policy (zero fields
// take their defaults, see RetryPolicy). Closing it closes inner.
func NewRetryStore(inner Store, policy RetryPolicy) *RetryStore {
	return &RetryStore{inner: inner, policy: policy.withDefaults()}
}

// Unwrap returns the wrapped store.
func (s *RetryStore) Unwrap() Store { return s.inner }

// Policy returns the policy in force, defaults filled in.
func (s *RetryStore) Policy() RetryPolicy { return s.policy }

// RetryCount returns the number of retries so far (Stats().Retries).
func (s *RetryStore) RetryCount() int64 { return s.retries.Load() }

// Stats returns the counters so far.
func (s *RetryStore) Stats() RetryStats {
	return RetryStats{Calls: s.calls.Load(), Retries: s.retries.Load(), GaveUp: s.gaveUp.Load()}
}

// permanent marks an error that do must return as is, transient or not.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }

// do runs attempt until it succeeds, fails permanently, the policy gives
// up, or ctx ends. onTransient, if set, is called after each transient
// failure.
func (s *RetryStore) do(ctx context.Context, timeout time.Duration, attempt func(context.Context) error, onTransient func()) error {
	s.calls.Add(1)
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
		if n >= s.policy.MaxAttempts {
			s.gaveUp.Add(1)
			return fmt.Errorf("gave up after %d attempts: %w", n, err)
		}
		s.retries.Add(1)
		t := time.NewTimer(s.policy.backoff(n))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("retry stopped: %w: %w", ctx.Err(), err)
		}
	}
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
	if gerr == nil && bytes.Equal(got, data) {
		return nil
	}
	return err
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
