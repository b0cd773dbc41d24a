package storage

import (
	"context"
	"time"
)

// funcClock is a clock made of two functions, a test's.
type funcClock struct {
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

func (c funcClock) Now() time.Time                                   { return c.now() }
func (c funcClock) Sleep(ctx context.Context, d time.Duration) error { return c.sleep(ctx, d) }

// NewRetryStoreOnClock is NewRetryStore reading the time from now and
// sleeping with sleep, for tests of the time budget that take no time.
func NewRetryStoreOnClock(inner Store, p RetryPolicy, now func() time.Time, sleep func(context.Context, time.Duration) error) *RetryStore {
	s := NewRetryStore(inner, p)
	s.clock = funcClock{now: now, sleep: sleep}
	return s
}
