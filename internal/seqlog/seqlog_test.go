package seqlog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

var ctx = context.Background()

var memCount atomic.Int64

func newLog(t *testing.T, prefix string) (*Log[manifest.Catalog], storage.Store) {
	t.Helper()
	st, err := storage.Open(ctx, fmt.Sprintf("mem://seqlog-%d", memCount.Add(1)))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return New(st, prefix, manifest.KindCatalog, func(e *manifest.Catalog) uint64 { return e.Seq },
		func(e *manifest.Catalog) *string { return &e.PrevHash }), st
}

func entry(seq uint64, op string) *manifest.Catalog {
	return &manifest.Catalog{Seq: seq, Tables: map[string]manifest.CatalogTable{}, Op: op}
}

func TestEmptyAndFirst(t *testing.T) {
	l, st := newLog(t, keys.CatalogLogPrefix)
	_, err := l.Latest(ctx)
	require.ErrorIs(t, err, ErrEmpty)
	require.ErrorIs(t, err, base.ErrNotFound)
	require.NoError(t, l.Put(ctx, entry(1, "one")))
	require.ErrorIs(t, l.Put(ctx, entry(1, "again")), storage.ErrExists)
	e, err := l.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, "one", e.Op)
	_, err = st.Stat(ctx, "_catalog/log/00000000000000000001")
	require.NoError(t, err, "entries are where docs/format.md §6 says")
}

// TestLatestWithoutHint checks that a missing, stale or garbled hint costs
// reads, never the answer.
func TestLatestWithoutHint(t *testing.T) {
	l, st := newLog(t, keys.LogPrefix)
	for s := uint64(1); s <= 5; s++ {
		require.NoError(t, l.Put(ctx, entry(s, fmt.Sprint(s))))
	}
	for _, hint := range []string{"", "1", "3", "5", "garbage", "0"} {
		if hint == "" {
			require.NoError(t, st.Delete(ctx, keys.LatestKey))
		} else {
			require.NoError(t, st.Put(ctx, keys.LatestKey, []byte(hint)))
		}
		e, err := l.Latest(ctx)
		require.NoError(t, err, "hint %q", hint)
		require.Equal(t, uint64(5), e.Seq, "hint %q", hint)
	}
}

func TestReadChecksSequence(t *testing.T) {
	l, st := newLog(t, keys.LogPrefix)
	obj, err := manifest.Encode(manifest.KindCatalog, entry(7, "liar"))
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, keys.MakeLog(2), obj))
	_, err = l.Read(ctx, 2)
	require.ErrorIs(t, err, base.ErrCorrupt)
	require.ErrorContains(t, err, "entry says sequence 7")
	_, err = l.Read(ctx, 3)
	require.ErrorIs(t, err, base.ErrNotFound)
	// An entry of another kind is corrupt too.
	obj, err = manifest.Encode(manifest.KindRoot, entry(3, "root"))
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, keys.MakeLog(3), obj))
	_, err = l.Read(ctx, 3)
	require.ErrorIs(t, err, base.ErrCorrupt)
}

// TestAppendRace appends from many goroutines: every append lands on its
// own number, none is lost, and each saw the entry before its own.
func TestAppendRace(t *testing.T) {
	l, _ := newLog(t, keys.CatalogLogPrefix)
	require.NoError(t, l.Put(ctx, entry(1, "create")))
	const writers, each = 8, 5
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				_, err := l.Append(ctx, 1000, func(latest *manifest.Catalog) (*manifest.Catalog, error) {
					return &manifest.Catalog{Seq: latest.Seq + 1, Prev: latest.Seq, Tables: map[string]manifest.CatalogTable{},
						Op: fmt.Sprintf("w%d-%d", w, i)}, nil
				})
				require.NoError(t, err)
			}
		})
	}
	wg.Wait()
	e, err := l.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1+writers*each), e.Seq)
	ops := map[string]bool{}
	for s := uint64(2); s <= e.Seq; s++ {
		r, err := l.Read(ctx, s)
		require.NoError(t, err)
		require.Equal(t, s-1, r.Prev)
		require.False(t, ops[r.Op], "append %s landed twice", r.Op)
		ops[r.Op] = true
	}
	require.Len(t, ops, writers*each)
}

func TestAppendGivesUp(t *testing.T) {
	l, _ := newLog(t, keys.CatalogLogPrefix)
	require.NoError(t, l.Put(ctx, entry(1, "create")))
	stop := fmt.Errorf("no thanks: %w", base.ErrExists)
	_, err := l.Append(ctx, 3, func(*manifest.Catalog) (*manifest.Catalog, error) { return nil, stop })
	require.ErrorIs(t, err, stop)
	// A writer that always loses the race gets a conflict after its attempts.
	calls := 0
	_, err = l.Append(ctx, 3, func(latest *manifest.Catalog) (*manifest.Catalog, error) {
		calls++
		require.NoError(t, l.Put(ctx, entry(latest.Seq+1, "rival"))) // a rival takes the number first
		return entry(latest.Seq+1, "mine"), nil
	})
	require.ErrorIs(t, err, base.ErrConflict)
	require.ErrorContains(t, err, "lost the race for the log 3 times")
	require.Equal(t, 3, calls)
}

// TestLatestLost deletes the newest entries of a log whose hint names the
// newest: Latest, and so Append, fail with ErrLost naming the missing entry
// and the hint, rather than step back to the entry before and let a writer
// take the lost number again. A hint that lags (a writer died between its
// entry and the hint) is no loss.
func TestLatestLost(t *testing.T) {
	l, st := newLog(t, keys.LogPrefix)
	for s := uint64(1); s <= 5; s++ {
		require.NoError(t, l.Put(ctx, entry(s, fmt.Sprint(s))))
	}
	require.NoError(t, l.Put(ctx, entry(6, "no hint")))
	l.Hint(ctx, 5)
	e, err := l.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(6), e.Seq, "a lagging hint is normal")

	for _, hint := range []string{"6", "9"} {
		require.NoError(t, st.Delete(ctx, l.Key(6)))
		require.NoError(t, st.Put(ctx, keys.LatestKey, []byte(hint)))
		_, err = l.Latest(ctx)
		require.ErrorIs(t, err, ErrLost, "hint %s", hint)
		require.ErrorIs(t, err, base.ErrCorrupt)
		require.ErrorContains(t, err, "read log/00000000000000000006: missing (entries 6 to "+hint+"), though log/_latest names entry "+hint+" and the highest entry is 5")
		_, err = l.Append(ctx, 3, func(latest *manifest.Catalog) (*manifest.Catalog, error) {
			return entry(latest.Seq+1, "reuse"), nil
		})
		require.ErrorIs(t, err, ErrLost)
		_, err = st.Stat(ctx, l.Key(6))
		require.ErrorIs(t, err, base.ErrNotFound, "no writer takes the lost number")
		require.NoError(t, l.Put(ctx, entry(6, "restored")))
	}

	// Repair accepts the loss: the hint names the highest entry left, and
	// the next writer goes on from it.
	require.NoError(t, st.Delete(ctx, l.Key(6)))
	hint, high, err := l.Repair(ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{9, 5}, []uint64{hint, high})
	e, err = l.Latest(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(5), e.Seq)
	hint, high, err = l.Repair(ctx)
	require.NoError(t, err)
	require.Equal(t, []uint64{5, 5}, []uint64{hint, high}, "nothing lost, nothing written")
	require.NoError(t, l.Put(ctx, entry(6, "after repair")))

	// Every entry gone, the hint left: lost, not empty.
	for s := uint64(1); s <= 6; s++ {
		require.NoError(t, st.Delete(ctx, l.Key(s)))
	}
	_, err = l.Latest(ctx)
	require.ErrorIs(t, err, ErrLost)
	require.NotErrorIs(t, err, ErrEmpty)
}

// TestCheck damages a log in each way Check reports: an entry whose bytes
// are flipped, one that names another number, a run of missing entries
// below the highest, and the newest entries lost below the hint. Each is
// reported once, at its entry's number; sound entries come with their
// value.
func TestCheck(t *testing.T) {
	type report struct {
		op  string
		err error
	}
	check := func(l *Log[manifest.Catalog], from uint64) map[uint64]report {
		var mu sync.Mutex
		got := map[uint64]report{}
		var twice []uint64
		require.NoError(t, l.Check(ctx, from, func(seq uint64, e *manifest.Catalog, err error) {
			mu.Lock()
			defer mu.Unlock()
			if _, dup := got[seq]; dup {
				twice = append(twice, seq)
			}
			r := report{err: err}
			if e != nil {
				r.op = e.Op
			}
			got[seq] = r
		}))
		require.Empty(t, twice, "entries reported twice")
		return got
	}
	l, st := newLog(t, keys.LogPrefix)
	for s := uint64(1); s <= 10; s++ {
		require.NoError(t, l.Put(ctx, entry(s, fmt.Sprint(s))))
	}
	l.Hint(ctx, 10)
	got := check(l, 1)
	require.Len(t, got, 10)
	for s, r := range got {
		require.NoError(t, r.err)
		require.Equal(t, fmt.Sprint(s), r.op)
	}

	obj, err := st.Get(ctx, l.Key(2))
	require.NoError(t, err)
	obj[len(obj)/2] ^= 0x20
	require.NoError(t, st.Put(ctx, l.Key(2), obj))
	liar, err := manifest.Encode(manifest.KindCatalog, entry(7, "liar"))
	require.NoError(t, err)
	require.NoError(t, st.Put(ctx, l.Key(3), liar))
	for _, s := range []uint64{5, 6, 9, 10} {
		require.NoError(t, st.Delete(ctx, l.Key(s)))
	}
	got = check(l, 1)
	require.ErrorIs(t, got[2].err, base.ErrCorrupt)
	require.ErrorContains(t, got[3].err, "entry says sequence 7")
	require.ErrorIs(t, got[5].err, base.ErrNotFound)
	require.EqualError(t, got[5].err, "missing (entries 5 to 6), though entry 7 exists")
	require.ErrorIs(t, got[9].err, ErrLost)
	require.ErrorContains(t, got[9].err, "missing (entries 9 to 10), though log/_latest names entry 10 and the highest entry is 8")
	for _, s := range []uint64{1, 4, 7, 8} {
		require.NoError(t, got[s].err)
	}
	require.Len(t, got, 8, "six entries listed, two runs missing")

	// A log whose oldest entries are collected (a catalog's) is checked
	// from its lowest entry; one that keeps them all, from 1.
	require.NoError(t, st.Delete(ctx, l.Key(1)))
	require.NoError(t, st.Delete(ctx, l.Key(2)))
	require.NotContains(t, check(l, 0), uint64(1))
	require.ErrorContains(t, check(l, 1)[1].err, "missing (entries 1 to 2), though entry 3 exists")
}

// TestCheckChain: appended entries record their predecessor's hash, so an
// entry copied from another log (a sound object of the right number, which
// every other check accepts) is found by Check; the untouched log passes.
func TestCheckChain(t *testing.T) {
	build := func(tag string) (*Log[manifest.Catalog], storage.Store) {
		l, st := newLog(t, keys.LogPrefix)
		require.NoError(t, l.Put(ctx, entry(1, tag+"1")))
		for range 4 {
			_, err := l.Append(ctx, 3, func(latest *manifest.Catalog) (*manifest.Catalog, error) {
				return entry(latest.Seq+1, fmt.Sprint(tag, latest.Seq+1)), nil
			})
			require.NoError(t, err)
		}
		return l, st
	}
	a, sta := build("a")
	_, stb := build("b")
	last, err := a.Latest(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, last.PrevHash, "an appended entry names the one it follows")
	errs := func() map[uint64]error {
		out := map[uint64]error{}
		require.NoError(t, a.Check(ctx, 1, func(seq uint64, _ *manifest.Catalog, err error) { out[seq] = err }))
		return out
	}
	for s, err := range errs() {
		require.NoError(t, err, "entry %d", s)
	}
	for _, s := range []uint64{1, 3, 5} { // the first, a middle and the newest entry
		own, err := sta.Get(ctx, a.Key(s))
		require.NoError(t, err)
		other, err := stb.Get(ctx, a.Key(s))
		require.NoError(t, err)
		require.NoError(t, sta.Put(ctx, a.Key(s), other))
		got := errs()
		bad := got[s]
		if s == 1 {
			bad = got[2] // the first entry follows none: its successor says so
		}
		require.ErrorIs(t, bad, base.ErrCorrupt, "entry %d swapped", s)
		require.ErrorContains(t, bad, "another log's entry")
		require.NoError(t, sta.Put(ctx, a.Key(s), own))
	}
}
