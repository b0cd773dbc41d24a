package sqlcat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
)

// raceStore runs race (once, then clears it) when a statement writes its
// first chunk or deletion vector: another writer's statement then commits
// between this one's read and its commit.
type raceStore struct {
	storage.Store
	mu   sync.Mutex
	race func()
}

func (r *raceStore) Put(ctx context.Context, key string, data []byte) error {
	if strings.Contains(key, "chunks/") || strings.Contains(key, "deletions/") {
		r.mu.Lock()
		f := r.race
		r.race = nil
		r.mu.Unlock()
		if f != nil {
			f()
		}
	}
	return r.Store.Put(ctx, key, data)
}

// writersTable makes table t (id, v) with rows id = 0..n-1, v = 0 (row ids
// 0..n-1) at a new catalog root and returns the root.
func writersTable(t *testing.T, root string, n int) {
	t.Helper()
	s := newSession(t, root)
	run(t, s, "CREATE TABLE t (id BIGINT, v BIGINT)")
	run(t, s, fmt.Sprintf("INSERT INTO t SELECT range, 0 FROM range(%d)", n))
}

func openSession(t *testing.T, root string, opts ...catalog.Option) *Session {
	t.Helper()
	cat, err := catalog.Open(ctx, root, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { cat.Close() })
	s := NewSession(cat)
	s.Threads = 2
	return s
}

// TestStatementsRebaseOntoOtherWriters: every UPDATE and DELETE of one
// writer loses the race to another writer's UPDATE of other rows or INSERT
// (committed between the statement's read and its commit); each rebases
// and lands. A statement whose rows the other writer changed fails with
// ErrConflict naming them, and changes nothing.
func TestStatementsRebaseOntoOtherWriters(t *testing.T) {
	root := t.TempDir() + "/lake"
	writersTable(t, root, 20)
	st, err := storage.Open(ctx, root)
	require.NoError(t, err)
	defer st.Close()
	rs := &raceStore{Store: st}
	a := openSession(t, root, catalog.WithStore(rs))
	b := openSession(t, root)
	var raceErr error
	for i := 0; i < 10; i++ {
		other := fmt.Sprintf("UPDATE t SET v = v + 10 WHERE id = %d", 10+i)
		if i%3 == 0 {
			other = fmt.Sprintf("INSERT INTO t VALUES (%d, 0)", 100+i)
		}
		rs.race = func() { _, raceErr = b.Run(ctx, other, Output{}) }
		mine := fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id = %d", i)
		if i == 9 {
			mine = "DELETE FROM t WHERE id = 9"
		}
		r, err := a.Run(ctx, mine, Output{})
		require.NoError(t, err, mine)
		require.NoError(t, raceErr, other)
		require.EqualValues(t, 1, r.Rows)
		require.Nil(t, rs.race, "the other writer's statement ran in between")
	}
	got := rowsOf(t, b, "SELECT id, v FROM t ORDER BY id")
	want := map[int64]int64{}
	for id := int64(0); id < 20; id++ {
		want[id] = 0
		if id < 9 {
			want[id] = 1
		}
		if id >= 10 && (id-10)%3 != 0 {
			want[id] = 10
		}
	}
	delete(want, 9)
	for _, id := range []int64{100, 103, 106, 109} {
		want[id] = 0
	}
	have := map[int64]int64{}
	for _, r := range got {
		have[int64(r["id"].(float64))] = int64(r["v"].(float64))
	}
	require.Equal(t, want, have)

	// A real overlap: the other writer deletes the row this UPDATE
	// changes (row id 3 holds id 3).
	rs.race = func() { _, raceErr = b.Run(ctx, "DELETE FROM t WHERE id = 3", Output{}) }
	_, err = a.Run(ctx, "UPDATE t SET v = 5 WHERE id = 3 OR id = 4", Output{})
	require.NoError(t, raceErr)
	require.ErrorIs(t, err, loch.ErrConflict)
	require.EqualError(t, err, "update t: another commit deleted or changed row ids 3 since this statement read them; nothing was changed: run the statement again")
	require.Equal(t, []map[string]any{{"v": float64(1)}}, rowsOf(t, b, "SELECT v FROM t WHERE id = 4"), "nothing was changed")
}

// TestConcurrentStatements: two writers in goroutines, each with its own
// catalog handle, run 20 UPDATEs of their own rows while a third inserts
// rows, on local disk and MinIO: every statement succeeds, none is lost.
func TestConcurrentStatements(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"local": func(t *testing.T) string { return t.TempDir() + "/lake" },
		"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
	}
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			const writers, updates, inserts = 2, 20, 5
			root := backends[backend](t)
			writersTable(t, root, writers)
			var wg sync.WaitGroup
			errs := make([]error, writers+1)
			for w := 0; w <= writers; w++ {
				s := openSession(t, root)
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := updates
					if w == writers {
						n = inserts
					}
					for i := 0; i < n; i++ {
						stmt := fmt.Sprintf("UPDATE t SET v = v + 1 WHERE id = %d", w)
						if w == writers {
							stmt = fmt.Sprintf("INSERT INTO t VALUES (%d, 0)", 100+i)
						}
						if _, err := s.Run(ctx, stmt, Output{}); err != nil {
							errs[w] = fmt.Errorf("writer %d statement %d: %w", w, i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
			got := rowsOf(t, openSession(t, root), "SELECT id, v FROM t ORDER BY id")
			require.Len(t, got, writers+inserts)
			for w := 0; w < writers; w++ {
				require.Equal(t, map[string]any{"id": float64(w), "v": float64(updates)}, got[w])
			}
		})
	}
}
