package loch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/storage"
)

// This file is the writer's side of docs/format.md §5.1: a stage holds a
// lease that garbage collection respects, and a commit whose lease may
// have lapsed checks that the chunks it is about to publish still exist.

// defaultLeaseTTL is how long a lease lives after its last renewal. A
// writer renews it every quarter of that and trusts it for half: the
// other half is the room for clock skew between a collector and the store.
const defaultLeaseTTL = 10 * time.Minute

// leaseMargin widens what a live lease keeps, for the clocks of a store's
// several servers (docs/format.md §5.1).
const leaseMargin = time.Minute

// leaseBody is a lease object's JSON (docs/format.md §5.1).
type leaseBody struct {
	// Since is the stored time of the lease's first version; nil in that
	// first version, which stands for its own stored time.
	Since      *time.Time `json:"since,omitempty"`
	TTLSeconds float64    `json:"ttl_seconds"`
	Writer     string     `json:"writer,omitempty"`
}

// lease is a writer handle's lease (docs/format.md §5.1). A stage begins
// it, with one put before the stage puts anything; a goroutine renews it
// while the stage lives; the stage's end stops the renewals and deletes
// it, unless the stage was handed to another committer (Stage); the next
// stage begins it afresh. begin and end are called under the handle's
// wmu; held, live and the renewals may run at once.
type lease struct {
	store      storage.Store
	key        string
	ttl, every time.Duration

	putMu sync.Mutex // serializes the puts of the lease

	mu         sync.Mutex
	since      time.Time // stored time of the stage's first put; valid when sinceKnown
	sinceKnown bool
	last       time.Time // start of the last successful put, with its monotonic reading
	lapsed     bool      // some renewal came more than ttl/2 after the previous put

	stop context.CancelFunc // nil while no stage runs
	done chan struct{}      // closed when the renewing goroutine has returned
}

// newLease returns the lease of a handle, not yet begun: a random key,
// renewed every `every` (ttl/4 when zero), living ttl (defaultLeaseTTL when
// zero) after its last renewal.
func newLease(store storage.Store, ttl, every time.Duration) *lease {
	if ttl <= 0 {
		ttl = defaultLeaseTTL
	}
	if every <= 0 {
		every = ttl / 4
	}
	return &lease{store: store, key: keys.MakeLease(randomID()), ttl: ttl, every: every}
}

// begin starts the lease of a new stage: it puts the lease without since
// (its stored time is since) and starts renewing it. The goroutine it
// starts is the lease's; end stops it.
func (l *lease) begin(ctx context.Context) error {
	start := time.Now()
	l.putMu.Lock()
	err := l.put(ctx, nil)
	l.putMu.Unlock()
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.sinceKnown, l.last, l.lapsed = false, start, false
	l.mu.Unlock()
	rctx, cancel := context.WithCancel(context.Background())
	l.stop, l.done = cancel, make(chan struct{})
	go l.renewEvery(rctx)
	return nil
}

// put writes the lease with the given since.
func (l *lease) put(ctx context.Context, since *time.Time) error {
	host, _ := os.Hostname()
	b, err := json.Marshal(leaseBody{Since: since, TTLSeconds: l.ttl.Seconds(), Writer: fmt.Sprintf("%s:%d", host, os.Getpid())})
	if err != nil {
		return fmt.Errorf("encode lease %s: %w", l.key, err)
	}
	if err := l.store.Put(ctx, l.key, b); err != nil {
		return fmt.Errorf("write lease %s: %w", l.key, err)
	}
	return nil
}

func (l *lease) renewEvery(ctx context.Context) {
	defer close(l.done)
	t := time.NewTicker(l.every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = l.renew(ctx) // a failed renewal shows as a gap: held says so
		}
	}
}

// renew puts the lease again, with since (read back, the first time, from
// the stored time of begin's put); it records a lapse when the previous
// successful put began more than ttl/2 ago, or the lease was gone.
func (l *lease) renew(ctx context.Context) error {
	l.putMu.Lock()
	defer l.putMu.Unlock()
	l.mu.Lock()
	since, known := l.since, l.sinceKnown
	l.mu.Unlock()
	if !known {
		a, err := l.store.Stat(ctx, l.key)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			// Deleted as dead: what the stage put before is unprotected.
			a.ModTime = time.Now()
			l.mu.Lock()
			l.lapsed = true
			l.mu.Unlock()
		case err != nil:
			return fmt.Errorf("read back lease %s: %w", l.key, err)
		}
		since = a.ModTime
		l.mu.Lock()
		l.since, l.sinceKnown = since, true
		l.mu.Unlock()
	}
	start := time.Now()
	if err := l.put(ctx, &since); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gap(start) > l.ttl/2 {
		l.lapsed = true
	}
	l.last = start
	return nil
}

// gap is the time from the last successful put's start to now, by the
// larger of the monotonic and the wall clock (the monotonic clock stops
// while the machine sleeps); the caller holds mu.
func (l *lease) gap(now time.Time) time.Duration {
	return max(now.Sub(l.last), now.Round(0).Sub(l.last.Round(0)))
}

// held reports whether the lease stayed live since the stage began: every
// renewal came within ttl/2 of the previous put, and so does now (it
// renews first unless the last put is recent). A nil lease (begin failed)
// was never held.
func (l *lease) held(ctx context.Context) bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	fresh := !l.lapsed && l.gap(time.Now()) <= l.ttl/4
	l.mu.Unlock()
	if fresh {
		return true
	}
	if err := l.renew(ctx); err != nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lapsed
}

// live reports, without renewing, whether the lease has stayed live so
// far: no lapse, and the last successful put began within ttl/2. A nil
// lease was never live.
func (l *lease) live() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.lapsed && l.gap(time.Now()) <= l.ttl/2
}

// end ends the stage's lease: the renewals stop and the object is
// deleted, best-effort (a lease left behind only keeps objects for one more
// ttl), unless the stage's objects were handed to another committer
// (Stage): then the object stays, protecting them until it expires, and
// the next stage puts a lease of another key.
func (l *lease) end(handedOff bool) {
	if l == nil || l.stop == nil {
		return
	}
	l.stop()
	<-l.done
	l.stop = nil
	if handedOff {
		// The next stage's lease is another object, so that this one
		// lives out its ttl.
		l.key = keys.MakeLease(randomID())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.store.Delete(ctx, l.key)
}

// checkChunks reads the stored time of every chunk the stage uploaded and
// reports whether some are gone (docs/format.md §5.1: a collection deleted
// them while this writer's lease had lapsed), with an ErrNotFound error
// naming them; err alone is a failure to check.
func (st *staging) checkChunks(ctx context.Context) (gone bool, err error) {
	var ks []string
	for _, fw := range st.writers() {
		for _, cw := range fw.cols {
			for _, r := range cw.refs {
				if r.Key != "" {
					ks = append(ks, r.Key)
				}
			}
		}
	}
	missing, err := st.d.missingObjects(ctx, ks)
	if err != nil {
		return false, fmt.Errorf("commit %s: check the staged chunks: %w", st.d.url, err)
	}
	if len(missing) > 0 {
		return true, fmt.Errorf("commit %s: %s; the staged writes are discarded (their rows cannot be published without these chunks): write them again: %w",
			st.d.url, goneByGC(missing, "this writer's lease had lapsed"), ErrNotFound)
	}
	return false, nil
}

// goneByGC describes objects a commit would publish that a garbage
// collection deleted.
func goneByGC(missing []string, why string) string {
	names := strings.Join(missing, ", ")
	if len(missing) > 3 {
		names = strings.Join(missing[:3], ", ") + ", ..."
	}
	return fmt.Sprintf("%d objects this commit would publish are gone (%s): a garbage collection deleted them while they waited to be committed (%s)",
		len(missing), names, why)
}

// missingObjects returns, sorted, the keys of ks (duplicates allowed) that
// the store does not hold, reading their stored times gcParallelism at a
// time.
func (d *Dataset) missingObjects(ctx context.Context, ks []string) ([]string, error) {
	slices.Sort(ks)
	ks = slices.Compact(ks)
	var (
		mu      sync.Mutex
		missing []string
	)
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(gcParallelism)
	for _, k := range ks {
		eg.Go(func() error {
			_, err := d.store.Stat(ectx, k)
			if errors.Is(err, storage.ErrNotFound) {
				mu.Lock()
				missing = append(missing, k)
				mu.Unlock()
				return nil
			}
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	slices.Sort(missing)
	return missing, nil
}
