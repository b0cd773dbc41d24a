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
	return New(st, prefix, manifest.KindCatalog, func(e *manifest.Catalog) uint64 { return e.Seq }), st
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

// TestLatestWithoutHint checks that a missing, stale, too new or garbled
// hint costs reads, never the answer.
func TestLatestWithoutHint(t *testing.T) {
	l, st := newLog(t, keys.LogPrefix)
	for s := uint64(1); s <= 5; s++ {
		require.NoError(t, l.Put(ctx, entry(s, fmt.Sprint(s))))
	}
	for _, hint := range []string{"", "1", "3", "5", "9", "garbage", "0"} {
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
