// Package seqlog is the sequence-numbered log that both a dataset's root
// entries (docs/format.md §2.2) and a catalog's entries (§6) are kept in:
// entry n at <prefix><n, 20 decimal digits>, each an envelope written with
// put-if-absent, so that of two writers racing for one number exactly one
// wins, and a best-effort hint <prefix>_latest naming a recent entry. The
// hint is written after the entry it names, so the highest entry is never
// below it: when it is, the newest entries were lost, and reading the
// newest entry fails with ErrLost rather than step back (format 1.10).
//
// A Log only reads and appends; what an entry means is its user's. It is
// safe for concurrent use (it holds no state but its configuration).
package seqlog

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// ErrEmpty is the error of Latest on a log with no entry: nothing was
// created there. It matches base.ErrNotFound.
var ErrEmpty = base.Mark(base.ErrNotFound, "empty log", nil)

// ErrLost is the error of a log whose hint names an entry above the
// highest one there: its newest entries were deleted, or the hint was
// damaged. It matches base.ErrCorrupt.
var ErrLost = base.Mark(base.ErrCorrupt, "lost log entries", nil)

// Log is the log of entries E under one prefix of a store.
type Log[E any] struct {
	store  storage.Store
	prefix string
	kind   byte
	seq    func(*E) uint64
	link   func(*E) *string
}

// New returns the log under prefix ("log/", "_catalog/log/") of st, whose
// entries are envelopes of the given kind (manifest.KindRoot, ...) holding
// E; seq returns an entry's own sequence number, and link the field in
// which an entry records the content hash of the entry it follows (format
// 1.10): Append fills it, Check verifies the chain, so that an entry
// copied from another log is found.
func New[E any](st storage.Store, prefix string, kind byte, seq func(*E) uint64, link func(*E) *string) *Log[E] {
	return &Log[E]{store: st, prefix: prefix, kind: kind, seq: seq, link: link}
}

// Key returns the key of entry seq.
func (l *Log[E]) Key(seq uint64) string { return keys.MakeLogIn(l.prefix, seq) }

// Read reads and checks entry seq. A missing entry gives an error matching
// base.ErrNotFound; one whose body names another number is corrupt.
func (l *Log[E]) Read(ctx context.Context, seq uint64) (*E, error) {
	e, _, err := l.readHashed(ctx, seq)
	return e, err
}

// getHashed reads and checks entry seq and returns its content hash, with
// errors that do not name the entry.
func (l *Log[E]) getHashed(ctx context.Context, seq uint64) (*E, string, error) {
	obj, err := l.store.Get(ctx, l.Key(seq))
	if err != nil {
		return nil, "", err
	}
	var e E
	if err := manifest.Decode(l.kind, obj, &e); err != nil {
		return nil, "", err
	}
	if got := l.seq(&e); got != seq {
		return nil, "", fmt.Errorf("entry says sequence %d: %w", got, base.ErrCorrupt)
	}
	return &e, manifest.Hash(obj), nil
}

// readHashed is Read that also returns the entry's content hash.
func (l *Log[E]) readHashed(ctx context.Context, seq uint64) (*E, string, error) {
	e, h, err := l.getHashed(ctx, seq)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", l.Key(seq), err)
	}
	return e, h, nil
}

// hint returns the number the hint names, 0 when it is missing or
// garbled: a reader does without it.
func (l *Log[E]) hint(ctx context.Context) (uint64, error) {
	b, err := l.store.Get(ctx, keys.LatestIn(l.prefix))
	if storage.IsBucketNotFound(err) {
		return 0, err // not an empty log: no bucket to hold one
	} else if err != nil {
		return 0, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, nil
	}
	return n, nil
}

// list returns the numbers of the entries a listing of the log finds,
// in ascending order.
func (l *Log[E]) list(ctx context.Context) ([]uint64, error) {
	var seqs []uint64
	err := l.store.List(ctx, l.prefix, func(a storage.Attrs) error {
		if n, ok := keys.ParseLogIn(l.prefix, a.Key); ok {
			seqs = append(seqs, n)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", l.prefix, err)
	}
	slices.Sort(seqs)
	return seqs, nil
}

// lost is the error of a hint naming entry hint above the highest, high,
// to be said of entry high+1.
func (l *Log[E]) lost(hint, high uint64) error {
	return fmt.Errorf("missing (entries %d to %d), though %s names entry %d and the highest entry is %d (the newest entries were deleted, or the hint damaged): %w",
		high+1, hint, keys.LatestIn(l.prefix), hint, high, ErrLost)
}

// Latest finds the entry with the highest sequence number: from the hint
// if it names an entry that exists, else from a listing of the log, then
// forward until an entry is missing. An empty log gives ErrEmpty; a hint
// naming an entry above the highest listed gives ErrLost.
func (l *Log[E]) Latest(ctx context.Context) (*E, error) {
	e, _, err := l.latest(ctx)
	return e, err
}

// latest is Latest that also returns the entry's content hash.
func (l *Log[E]) latest(ctx context.Context) (*E, string, error) {
	start, err := l.hint(ctx)
	if err != nil {
		return nil, "", err
	}
	var best *E
	var hash string
	if start > 0 {
		e, h, err := l.readHashed(ctx, start)
		if err == nil {
			best, hash = e, h
		} else if !errors.Is(err, base.ErrNotFound) {
			return nil, "", err
		}
	}
	if best == nil { // no usable hint: list the log
		seqs, err := l.list(ctx)
		if err != nil {
			return nil, "", err
		}
		var high uint64
		if len(seqs) > 0 {
			high = seqs[len(seqs)-1]
		}
		switch {
		case start > high:
			return nil, "", fmt.Errorf("read %s: %w", l.Key(high+1), l.lost(start, high))
		case high == 0:
			return nil, "", ErrEmpty
		}
		if best, hash, err = l.readHashed(ctx, high); err != nil {
			return nil, "", err
		}
	}
	for {
		next, h, err := l.readHashed(ctx, l.seq(best)+1)
		if errors.Is(err, base.ErrNotFound) {
			return best, hash, nil
		}
		if err != nil {
			return nil, "", err
		}
		best, hash = next, h
	}
}

// checkParallelism bounds the entries Check reads at once.
const checkParallelism = 16

// Check reads every entry of the log, a few at a time, and calls found
// (from several goroutines at once) with each entry's number and either
// the entry or why it is broken. Missing entries are reported too, once
// per run of them, at the first one's number: those between from (the
// lowest listed when from is 0) and the highest listed, with an error
// matching base.ErrNotFound, and those up to the entry the hint names,
// with ErrLost. It reads the hint before it lists, so that an entry
// appended meanwhile is never taken for a lost one. An entry that records
// the hash of the entry it follows (format 1.10) and follows another than
// the one before it in this log is corrupt: one of the two was copied from
// another log. It returns the error of the listing, or ctx's.
func (l *Log[E]) Check(ctx context.Context, from uint64, found func(seq uint64, e *E, err error)) error {
	hint, err := l.hint(ctx)
	if err != nil {
		return err
	}
	seqs, err := l.list(ctx)
	if err != nil {
		return err
	}
	next := from // the next entry expected
	if next == 0 && len(seqs) > 0 {
		next = seqs[0]
	}
	for _, s := range seqs {
		if s > next {
			found(next, nil, base.Markf(base.ErrNotFound, "missing (entries %d to %d), though entry %d exists", next, s-1, s))
		}
		next = max(next, s+1)
	}
	var high uint64
	if len(seqs) > 0 {
		high = seqs[len(seqs)-1]
	}
	if hint > high {
		found(high+1, nil, l.lost(hint, high))
	}
	type entry struct {
		e    *E
		hash string
		err  error
	}
	got := make([]entry, len(seqs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(checkParallelism)
	for i, s := range seqs {
		g.Go(func() error {
			e, h, err := l.getHashed(gctx, s)
			got[i] = entry{e, h, err}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, s := range seqs {
		r := got[i]
		if r.err == nil && i > 0 && seqs[i-1] == s-1 && got[i-1].err == nil {
			if want := *l.link(r.e); want != "" && want != got[i-1].hash {
				r.e, r.err = nil, fmt.Errorf("follows an entry whose hash is %s, but %s hashes to %s: one of the two is another log's entry: %w",
					want, l.Key(s-1), got[i-1].hash, base.ErrCorrupt)
			}
		}
		found(s, r.e, r.err)
	}
	return ctx.Err()
}

// Repair accepts the loss that ErrLost reports: it points the hint at the
// highest entry left, so that readers and writers go on from it (the next
// entry written takes the first lost number). It returns the number the
// hint named and the highest entry's; when the first is not above the
// second nothing was lost and nothing is written. An empty log gives
// ErrEmpty.
func (l *Log[E]) Repair(ctx context.Context) (hint, high uint64, err error) {
	if hint, err = l.hint(ctx); err != nil {
		return 0, 0, err
	}
	seqs, err := l.list(ctx)
	if err != nil {
		return 0, 0, err
	}
	if len(seqs) == 0 {
		return hint, 0, ErrEmpty
	}
	high = seqs[len(seqs)-1]
	if hint <= high {
		return hint, high, nil
	}
	key := keys.LatestIn(l.prefix)
	if err := l.store.Put(ctx, key, []byte(strconv.FormatUint(high, 10))); err != nil {
		return 0, 0, fmt.Errorf("write %s: %w", key, err)
	}
	return hint, high, nil
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
// costs readers a few extra reads. Call it only once entry seq exists: a
// hint above the highest entry means lost entries (ErrLost).
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
		latest, hash, err := l.latest(ctx)
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
		*l.link(e) = hash
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
