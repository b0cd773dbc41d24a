// Package seqlog is the sequence-numbered log that both a dataset's root
// entries (docs/format.md §2.2) and a catalog's entries (§6) are kept in:
// entry n at <prefix><n, 20 decimal digits>, each an envelope written with
// put-if-absent, so that of two writers racing for one number exactly one
// wins, and a best-effort hint <prefix>_latest naming a recent entry.
//
// A Log only reads and appends; what an entry means is its user's. It is
// safe for concurrent use (it holds no state but its configuration).
package seqlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// ErrEmpty is the error of Latest on a log with no entry: nothing was
// created there. It matches base.ErrNotFound.
var ErrEmpty = base.Mark(base.ErrNotFound, "empty log", nil)

// Log is the log of entries E under one prefix of a store.
type Log[E any] struct {
	store  storage.Store
	prefix string
	kind   byte
	seq    func(*E) uint64
}

// New returns the log under prefix ("log/", "_catalog/log/") of st, whose
// entries are envelopes of the given kind (manifest.KindRoot, ...) holding
// E; seq returns an entry's own sequence number.
func New[E any](st storage.Store, prefix string, kind byte, seq func(*E) uint64) *Log[E] {
	return &Log[E]{store: st, prefix: prefix, kind: kind, seq: seq}
}

// Key returns the key of entry seq.
func (l *Log[E]) Key(seq uint64) string { return keys.MakeLogIn(l.prefix, seq) }

// Read reads and checks entry seq. A missing entry gives an error matching
// base.ErrNotFound; one whose body names another number is corrupt.
func (l *Log[E]) Read(ctx context.Context, seq uint64) (*E, error) {
	key := l.Key(seq)
	obj, err := l.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	var e E
	if err := manifest.Decode(l.kind, obj, &e); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if got := l.seq(&e); got != seq {
		return nil, fmt.Errorf("read %s: entry says sequence %d: %w", key, got, base.ErrCorrupt)
	}
	return &e, nil
}

// Latest finds the entry with the highest sequence number: from the hint
// if it names an entry that exists, else from a listing of the log, then
// forward until an entry is missing. An empty log gives ErrEmpty.
func (l *Log[E]) Latest(ctx context.Context) (*E, error) {
	start := uint64(0)
	if b, err := l.store.Get(ctx, keys.LatestIn(l.prefix)); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			start = n
		}
	} else if storage.IsBucketNotFound(err) {
		return nil, err // not an empty log: no bucket to hold one
	}
	var best *E
	if start > 0 {
		e, err := l.Read(ctx, start)
		if err == nil {
			best = e
		} else if !errors.Is(err, base.ErrNotFound) {
			return nil, err
		}
	}
	if best == nil { // no usable hint: list the log
		var max uint64
		err := l.store.List(ctx, l.prefix, func(a storage.Attrs) error {
			if n, ok := keys.ParseLogIn(l.prefix, a.Key); ok && n > max {
				max = n
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", l.prefix, err)
		}
		if max == 0 {
			return nil, ErrEmpty
		}
		var err2 error
		if best, err2 = l.Read(ctx, max); err2 != nil {
			return nil, err2
		}
	}
	for {
		next, err := l.Read(ctx, l.seq(best)+1)
		if errors.Is(err, base.ErrNotFound) {
			return best, nil
		}
		if err != nil {
			return nil, err
		}
		best = next
	}
}

// Put writes entry e at its own sequence number if that number is free:
// the conditional write (put-if-absent) that makes a change visible. It
// fails with an error matching storage.ErrExists when another writer took
// the number.
func (l *Log[E]) Put(ctx context.Context, e *E) error {
	obj, err := manifest.Encode(l.kind, e)
	if err != nil {
		return err
	}
	return l.store.PutIfAbsent(ctx, l.Key(l.seq(e)), obj)
}

// Hint records seq as a recent entry, best effort: a stale or missing hint
// costs readers a few extra reads.
func (l *Log[E]) Hint(ctx context.Context, seq uint64) {
	_ = l.store.Put(ctx, keys.LatestIn(l.prefix), []byte(strconv.FormatUint(seq, 10)))
}

// Backoff after a lost race: a random wait below retryBase doubled per
// loss, capped at retryCap, so that writers that keep racing spread out
// instead of losing to each other in lock step.
const (
	retryBase = time.Millisecond
	retryCap  = 250 * time.Millisecond
)

// Append writes the entry that next makes from the newest one, with
// put-if-absent, and returns it; when another writer takes the number
// first it waits a little (a random, growing backoff), reads the newer
// entry and calls next again, up to attempts times in all (then the error
// matches base.ErrConflict). next returns the entry to write (whose
// sequence number must be the newest's plus one) or an error to give up
// with, returned as is. After a win the hint is updated.
func (l *Log[E]) Append(ctx context.Context, attempts int, next func(latest *E) (*E, error)) (*E, error) {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			wait := rand.N(min(retryCap, retryBase<<min(attempt, 16)))
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		}
		latest, err := l.Latest(ctx)
		if err != nil {
			return nil, err
		}
		e, err := next(latest)
		if err != nil {
			return nil, err
		}
		if l.seq(e) != l.seq(latest)+1 {
			panic(fmt.Sprintf("seqlog: appending entry %d after entry %d", l.seq(e), l.seq(latest)))
		}
		err = l.Put(ctx, e)
		if errors.Is(err, storage.ErrExists) {
			if attempt+1 >= attempts {
				return nil, fmt.Errorf("lost the race for the log %d times: %w", attempts, base.ErrConflict)
			}
			continue // another writer took this number: re-read and retry
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", l.Key(l.seq(e)), err)
		}
		l.Hint(ctx, l.seq(e))
		return e, nil
	}
}
