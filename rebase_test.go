package loch

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

// rebaseSchema is the schema of the rebase tests: k names a row (its value
// at creation, kept through updates), v is what writers change.
var rebaseTestSchema = schema.Schema{Columns: []schema.Column{{Name: "k", DType: schema.Int64}, {Name: "v", DType: schema.Int64}}}

// rebaseDataset creates a dataset at url with rows k = 0..n-1, v = 0, whose
// row ids are 0..n-1, in two commits (two fragments, which compaction
// merges).
func rebaseDataset(t *testing.T, url string, n int) {
	t.Helper()
	d, err := Create(ctx, url, rebaseTestSchema)
	require.NoError(t, err)
	defer d.Close()
	for _, half := range [][2]int{{0, n / 2}, {n / 2, n}} {
		var rows []Row
		for i := half[0]; i < half[1]; i++ {
			rows = append(rows, Row{"k": Scalar(int64(i)), "v": Scalar(int64(0))})
		}
		require.NoError(t, d.Extend(ctx, rows))
		_, err = d.Commit(ctx, "rows")
		require.NoError(t, err)
	}
}

func mustOpen(t *testing.T, url string, opts ...Option) *Dataset {
	t.Helper()
	d, err := Open(ctx, url, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

// mustColumn returns a reader of column name of d.
func mustColumn(t testing.TB, d *Dataset, name string) *ColumnReader {
	t.Helper()
	c, err := d.Column(name)
	require.NoError(t, err)
	return c
}

// mustRowID returns the row id of the row at position pos of d.
func mustRowID(t testing.TB, d *Dataset, pos int64) uint64 {
	t.Helper()
	id, err := d.RowID(ctx, pos)
	require.NoError(t, err)
	return id
}

// openNewBranch creates branch name at the head of d (at url) and opens
// it, closed when the test ends.
func openNewBranch(t *testing.T, d *Dataset, url, name string) *Dataset {
	t.Helper()
	_, err := d.CreateBranch(ctx, name, "")
	require.NoError(t, err)
	return mustOpen(t, url, WithRef(name))
}

// loadedScan returns a scan of d's version with its manifests loaded by
// up to parallel requests at a time.
func loadedScan(t *testing.T, d *Dataset, parallel int) *Scan {
	t.Helper()
	sc := d.Scan()
	require.NoError(t, sc.Load(ctx, parallel))
	return sc
}

// rowsByID reads the newest version of url: k and v of every live row, by
// row id. It also checks that the version verifies.
func rowsByID(t *testing.T, url string) map[uint64][2]int64 {
	t.Helper()
	d := mustOpen(t, url)
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
	out := map[uint64][2]int64{}
	cols := make([]*ColumnReader, 2)
	for i, name := range []string{"k", "v"} {
		c := mustColumn(t, d, name)
		cols[i] = c
	}
	for i := int64(0); i < d.Len(); i++ {
		id := mustRowID(t, d, i)
		var kv [2]int64
		for j, c := range cols {
			s, err := c.Read(ctx, i, nil)
			require.NoError(t, err)
			v, _ := As[int64](s.Data)
			kv[j] = v[0]
		}
		_, dup := out[id]
		require.False(t, dup, "row id %d twice", id)
		out[id] = kv
	}
	return out
}

// TestCommitRebasesDisjointChanges: a handle stages an update, a delete
// and an append, another only an append; a third writer commits first (an append, an update or a
// delete of other rows, a rewrite that moves every row, a new column); the
// handles' commits rebase by row id and land, on local disk and MinIO.
func TestCommitRebasesDisjointChanges(t *testing.T) {
	others := map[string]func(t *testing.T, url string){
		"append": func(t *testing.T, url string) {
			o := mustOpen(t, url)
			require.NoError(t, o.Append(ctx, Row{"k": Scalar(int64(100)), "v": Scalar(int64(7))}))
			_, err := o.Commit(ctx, "append")
			require.NoError(t, err)
		},
		"update": func(t *testing.T, url string) {
			o := mustOpen(t, url)
			require.NoError(t, o.Update(ctx, 8, Row{"v": Scalar(int64(7))}))
			_, err := o.Commit(ctx, "update")
			require.NoError(t, err)
		},
		"delete": func(t *testing.T, url string) {
			o := mustOpen(t, url)
			require.NoError(t, o.Delete(ctx, 9))
			_, err := o.Commit(ctx, "delete")
			require.NoError(t, err)
		},
		"compact": func(t *testing.T, url string) {
			// Rows move to a new fragment with the same ids and values.
			o := mustOpen(t, url)
			rep, err := o.Compact(ctx, CompactOptions{})
			require.NoError(t, err)
			require.NotZero(t, rep.Rewritten, "%+v", rep)
		},
		"add-column": func(t *testing.T, url string) {
			o := mustOpen(t, url)
			require.NoError(t, o.AddColumn(ctx, schema.Column{Name: "extra", DType: schema.Int32}))
			_, err := o.Commit(ctx, "add column")
			require.NoError(t, err)
		},
	}
	for _, backend := range sortedKeys(localAndS3) {
		for _, other := range sortedKeys(others) {
			t.Run(backend+"/"+other, func(t *testing.T) {
				url := localAndS3[backend](t)
				rebaseDataset(t, url, 10)
				d := mustOpen(t, url)
				require.NoError(t, d.Update(ctx, 1, Row{"v": Scalar(int64(100))}))
				require.NoError(t, d.Delete(ctx, 2))
				require.NoError(t, d.Append(ctx, Row{"k": Scalar(int64(200)), "v": Scalar(int64(1))}))
				appender := mustOpen(t, url)
				require.NoError(t, appender.Append(ctx, Row{"k": Scalar(int64(300)), "v": Scalar(int64(3))}))

				others[other](t, url)
				theirs := rowsByID(t, url)
				_, err := d.Commit(ctx, "mine")
				require.NoError(t, err)
				_, err = appender.Commit(ctx, "a pure append")
				require.NoError(t, err)

				// Theirs, then mine: row 1 updated, row 2 gone, two rows appended.
				want := theirs
				want[1] = [2]int64{1, 100}
				delete(want, 2)
				got := rowsByID(t, url)
				for _, kv := range [][2]int64{{200, 1}, {300, 3}} {
					var appended []uint64
					for id, g := range got {
						if g == kv {
							appended = append(appended, id)
						}
					}
					require.Len(t, appended, 1, "row %v", kv)
					want[appended[0]] = kv
				}
				require.Equal(t, want, got)
				require.EqualValues(t, len(got)-1, d.Len(), "the handle is at its commit, before the append")
			})
		}
	}
}

// TestCommitConflictNamesRows: rows that another writer updated or deleted
// since they were staged make the commit fail with ErrConflict naming them,
// and commit nothing.
func TestCommitConflictNamesRows(t *testing.T) {
	url := t.TempDir() + "/ds"
	rebaseDataset(t, url, 30)
	d := mustOpen(t, url)
	for id := uint64(0); id < 15; id++ {
		require.NoError(t, d.Update(ctx, id, Row{"v": Scalar(int64(1))}))
	}
	require.NoError(t, d.Delete(ctx, 20, 21))
	o := mustOpen(t, url)
	require.NoError(t, o.Delete(ctx, 3, 21))
	for id := uint64(4); id < 17; id++ {
		require.NoError(t, o.Update(ctx, id, Row{"v": Scalar(int64(2))}))
	}
	_, err := o.Commit(ctx, "theirs")
	require.NoError(t, err)
	theirs := rowsByID(t, url)

	_, err = d.Commit(ctx, "mine")
	require.ErrorIs(t, err, ErrConflict)
	var ce *RowConflictError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, []uint64{3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 21}, ce.IDs)
	require.Contains(t, err.Error(), "13 staged row(s)")
	require.Contains(t, err.Error(), "row ids 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 and 3 more")
	require.Equal(t, theirs, rowsByID(t, url), "a conflicting commit changes nothing")
}

// TestRefreshAfterConflict: after a conflict, Refresh moves the changes
// that do not conflict onto the new head, Commit keeps refusing the
// conflicting rows until DiscardConflicts drops them, and then a commit
// with a new append lands. Discard instead drops everything, and a pure
// append commits.
func TestRefreshAfterConflict(t *testing.T) {
	setup := func(t *testing.T) (*Dataset, string) {
		url := t.TempDir() + "/ds"
		rebaseDataset(t, url, 10)
		d := mustOpen(t, url)
		require.NoError(t, d.Update(ctx, 1, Row{"v": Scalar(int64(100))}))
		require.NoError(t, d.Update(ctx, 3, Row{"v": Scalar(int64(300))}))
		require.NoError(t, d.Delete(ctx, 5, 6))
		o := mustOpen(t, url)
		require.NoError(t, o.Update(ctx, 1, Row{"v": Scalar(int64(-1))}))
		require.NoError(t, o.Delete(ctx, 6))
		require.NoError(t, o.Append(ctx, Row{"k": Scalar(int64(10)), "v": Scalar(int64(0))}))
		_, err := o.Commit(ctx, "theirs")
		require.NoError(t, err)
		_, err = d.Commit(ctx, "mine")
		var ce *RowConflictError
		require.True(t, errors.As(err, &ce), "%v", err)
		require.Equal(t, []uint64{1, 6}, ce.IDs)
		return d, url
	}
	t.Run("discard-conflicts", func(t *testing.T) {
		d, url := setup(t)
		require.NoError(t, d.Refresh(ctx))
		require.EqualValues(t, 10, d.Len(), "the handle reads the new head")
		_, err := d.Commit(ctx, "again")
		var ce *RowConflictError
		require.True(t, errors.As(err, &ce), "%v", err)
		require.Equal(t, []uint64{1, 6}, ce.IDs)
		require.Equal(t, []uint64{1, 6}, d.DiscardConflicts())
		require.Nil(t, d.DiscardConflicts())
		require.NoError(t, d.Append(ctx, Row{"k": Scalar(int64(11)), "v": Scalar(int64(0))}))
		_, err = d.Commit(ctx, "the rest")
		require.NoError(t, err)
		got := rowsByID(t, url)
		require.Equal(t, [2]int64{1, -1}, got[1], "theirs")
		require.Equal(t, [2]int64{3, 300}, got[3], "mine, rebased")
		require.NotContains(t, got, uint64(5))
		require.NotContains(t, got, uint64(6))
		require.Len(t, got, 10)
	})
	t.Run("discarded-row-again", func(t *testing.T) {
		// A row whose update was discarded can be updated again, from the
		// new head's values, in the same stage.
		d, url := setup(t)
		require.NoError(t, d.Refresh(ctx))
		require.ErrorIs(t, d.Update(ctx, 1, Row{"v": Scalar(int64(101))}), ErrInvalidArgument, "a conflict until discarded")
		require.Equal(t, []uint64{1, 6}, d.DiscardConflicts())
		require.NoError(t, d.Update(ctx, 1, Row{"v": Scalar(int64(101))}))
		_, err := d.Commit(ctx, "the rest")
		require.NoError(t, err)
		got := rowsByID(t, url)
		require.Equal(t, [2]int64{1, 101}, got[1])
		require.Equal(t, [2]int64{3, 300}, got[3])
	})
	t.Run("stage-refuses-conflicts", func(t *testing.T) {
		// Staging the appends for another committer would drop the
		// conflicting deletion: refused.
		url := t.TempDir() + "/ds"
		rebaseDataset(t, url, 10)
		d, o := mustOpen(t, url), mustOpen(t, url)
		require.NoError(t, d.Delete(ctx, 7))
		require.NoError(t, o.Delete(ctx, 7))
		_, err := o.Commit(ctx, "theirs")
		require.NoError(t, err)
		_, err = d.Commit(ctx, "mine")
		require.ErrorIs(t, err, ErrConflict)
		require.NoError(t, d.Refresh(ctx))
		require.NoError(t, d.Append(ctx, Row{"k": Scalar(int64(10))}))
		_, err = d.Stage(ctx)
		require.ErrorIs(t, err, ErrInvalidArgument)
		require.Equal(t, []uint64{7}, d.DiscardConflicts())
		staged, err := d.Stage(ctx)
		require.NoError(t, err)
		require.EqualValues(t, 1, staged.Rows)
	})
	t.Run("refresh-then-update", func(t *testing.T) {
		// A row another writer appended can be updated after Refresh.
		d, url := setup(t)
		require.NoError(t, d.Refresh(ctx))
		require.Equal(t, []uint64{1, 6}, d.DiscardConflicts())
		require.NoError(t, d.Update(ctx, 10, Row{"v": Scalar(int64(1000))}))
		_, err := d.Commit(ctx, "the rest")
		require.NoError(t, err)
		require.Equal(t, [2]int64{10, 1000}, rowsByID(t, url)[10])
	})
}

// TestRefreshRebasesAddedColumns: a handle adds a column, another writer
// adds a different one; after Refresh the handle's rows carry both, with
// distinct uids. The same name added on both sides is a conflict.
func TestRefreshRebasesAddedColumns(t *testing.T) {
	url := t.TempDir() + "/ds"
	rebaseDataset(t, url, 3)
	d := mustOpen(t, url)
	require.NoError(t, d.Append(ctx, Row{"k": Scalar(int64(3))}))
	require.NoError(t, d.AddColumn(ctx, schema.Column{Name: "mine", DType: schema.Int64}))
	require.NoError(t, d.Update(ctx, 0, Row{"mine": Scalar(int64(5))}))
	o := mustOpen(t, url)
	require.NoError(t, o.AddColumn(ctx, schema.Column{Name: "theirs", DType: schema.Int64}))
	require.NoError(t, o.Update(ctx, 1, Row{"theirs": Scalar(int64(6))}))
	_, err := o.Commit(ctx, "theirs")
	require.NoError(t, err)

	require.NoError(t, d.Refresh(ctx))
	require.NoError(t, d.Append(ctx, Row{"k": Scalar(int64(4)), "mine": Scalar(int64(7)), "theirs": Scalar(int64(8))}))
	_, err = d.Commit(ctx, "mine")
	require.NoError(t, err)
	r := mustOpen(t, url)
	sch := r.Schema()
	require.Equal(t, []string{"k", "v", "theirs", "mine"}, sch.Names())
	uids := map[int]bool{}
	for _, c := range sch.Columns {
		require.False(t, uids[c.UID], "uid %d twice", c.UID)
		uids[c.UID] = true
	}
	read := func(col string) []string {
		c := mustColumn(t, r, col)
		var out []string
		for i := int64(0); i < r.Len(); i++ {
			s, err := c.Read(ctx, i, nil)
			require.NoError(t, err)
			if s.Null {
				out = append(out, "-")
				continue
			}
			v, _ := As[int64](s.Data)
			out = append(out, fmt.Sprint(v[0]))
		}
		return out
	}
	// Updated rows keep their places.
	require.Equal(t, []string{"0", "1", "2", "3", "4"}, read("k"))
	require.Equal(t, []string{"-", "6", "-", "-", "8"}, read("theirs"))
	require.Equal(t, []string{"5", "-", "-", "-", "7"}, read("mine"))

	// The same column name added on both sides: a conflict.
	require.NoError(t, d.AddColumn(ctx, schema.Column{Name: "both", DType: schema.Int64}))
	require.NoError(t, o.Refresh(ctx))
	require.NoError(t, o.AddColumn(ctx, schema.Column{Name: "both", DType: schema.Int32}))
	_, err = o.Commit(ctx, "theirs")
	require.NoError(t, err)
	_, err = d.Commit(ctx, "mine")
	require.ErrorIs(t, err, ErrConflict)
	require.Contains(t, err.Error(), `column "both" was added both there and in this commit`)
	require.NoError(t, d.Refresh(ctx))
	_, err = d.Commit(ctx, "mine")
	require.ErrorIs(t, err, ErrConflict)
	d.Discard()
	require.NoError(t, d.Append(ctx, Row{"k": Scalar(int64(9))}))
	_, err = d.Commit(ctx, "append")
	require.NoError(t, err)
}

// TestConcurrentDisjointUpdates: two writers, each with its own handle,
// update their own rows 20 times each, concurrently, one commit per
// update, on local disk and MinIO; their rows alternate, so both update
// every fragment in place: every commit lands, nothing is lost.
func TestConcurrentDisjointUpdates(t *testing.T) {
	for _, backend := range sortedKeys(localAndS3) {
		t.Run(backend, func(t *testing.T) {
			const writers, updates = 2, 20
			url := localAndS3[backend](t)
			rebaseDataset(t, url, writers*updates)
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := Open(ctx, url)
					if err != nil {
						errs[w] = err
						return
					}
					defer d.Close()
					for i := 0; i < updates; i++ {
						id := uint64(i*writers + w) // rows of both in every fragment
						if err := d.Update(ctx, id, Row{"v": Scalar(int64(1000 + id))}); err != nil {
							errs[w] = err
							return
						}
						if _, err := d.Commit(ctx, fmt.Sprintf("writer %d update %d", w, i)); err != nil {
							errs[w] = fmt.Errorf("writer %d update %d: %w", w, i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...))
			got := rowsByID(t, url)
			require.Len(t, got, writers*updates)
			for id, kv := range got {
				require.Equal(t, [2]int64{int64(id), int64(1000 + id)}, kv, "row id %d", id)
			}
			log, err := mustOpen(t, url).Log(ctx)
			require.NoError(t, err)
			require.Len(t, log, writers*updates+3, "create, two of rows, one commit per update")
		})
	}
}

// TestRebaseConflictMessage pins the message of a RowConflictError.
func TestRebaseConflictMessage(t *testing.T) {
	e := &RowConflictError{URL: "file:///ds", Branch: "main", Head: "abc", IDs: []uint64{7}}
	require.True(t, strings.HasPrefix(e.Error(), "commit file:///ds: 1 staged row(s) this commit deletes or updates were deleted or changed on branch main by another commit (head abc): row ids 7; nothing was committed"), e.Error())
	require.ErrorIs(t, e, ErrConflict)
}

// BenchmarkConcurrentWriters: 8 writers, each with its own handle, commit
// in turn an append of one row and an update of one of their own rows, on
// local disk and MinIO; b.N commits in all. Every commit must land; it
// reports commits/s and the commits' mean latency.
func BenchmarkConcurrentWriters(b *testing.B) {
	backends := map[string]func(b *testing.B) string{
		"local": func(b *testing.B) string { return b.TempDir() + "/ds" },
		"s3":    func(b *testing.B) string { return testserver.MinIO(b).URL },
	}
	for _, backend := range []string{"local", "s3"} {
		b.Run(backend, func(b *testing.B) {
			const writers = 8
			url := backends[backend](b)
			d, err := Create(ctx, url, rebaseTestSchema)
			require.NoError(b, err)
			rows := make([]Row, writers)
			for i := range rows {
				rows[i] = Row{"k": Scalar(int64(i)), "v": Scalar(int64(0))}
			}
			require.NoError(b, d.Extend(ctx, rows))
			_, err = d.Commit(ctx, "one row per writer")
			require.NoError(b, err)
			d.Close()
			var wg sync.WaitGroup
			errs := make([]error, writers)
			b.ResetTimer()
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					h, err := Open(ctx, url)
					if err != nil {
						errs[w] = err
						return
					}
					defer h.Close()
					for i := w; i < b.N; i += writers {
						if i%2 == 0 {
							err = h.Append(ctx, Row{"k": Scalar(int64(1000 + i)), "v": Scalar(int64(w))})
						} else {
							err = h.Update(ctx, uint64(w), Row{"v": Scalar(int64(i))})
						}
						if err == nil {
							_, err = h.Commit(ctx, "writer")
						}
						if err != nil {
							errs[w] = fmt.Errorf("writer %d commit %d: %w", w, i, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			require.NoError(b, errors.Join(errs...))
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// TestCommitUnmovedRefusesAMovedHead: CommitUnmoved commits when the branch
// is where the changes were staged, and when another writer committed in
// between it commits nothing, keeps the changes staged and returns a
// *HeadMovedError (ErrConflict); Commit then rebases them.
func TestCommitUnmovedRefusesAMovedHead(t *testing.T) {
	url := t.TempDir()
	rebaseDataset(t, url, 4)
	a := mustOpen(t, url)
	require.NoError(t, a.Append(ctx, Row{"k": Scalar(int64(10)), "v": Scalar(int64(1))}))
	_, err := a.CommitUnmoved(ctx, "unmoved")
	require.NoError(t, err)

	require.NoError(t, a.Append(ctx, Row{"k": Scalar(int64(11)), "v": Scalar(int64(1))}))
	base := a.Version()
	o := mustOpen(t, url)
	require.NoError(t, o.Append(ctx, Row{"k": Scalar(int64(12)), "v": Scalar(int64(2))}))
	other, err := o.Commit(ctx, "other")
	require.NoError(t, err)

	_, err = a.CommitUnmoved(ctx, "unmoved")
	var hm *HeadMovedError
	require.ErrorAs(t, err, &hm)
	require.ErrorIs(t, err, ErrConflict)
	require.Equal(t, base, hm.Base)
	require.Equal(t, other, hm.Head)
	require.Len(t, rowsByID(t, url), 6, "nothing committed")
	_, err = a.Commit(ctx, "rebased")
	require.NoError(t, err)
	require.Len(t, rowsByID(t, url), 7)
}
