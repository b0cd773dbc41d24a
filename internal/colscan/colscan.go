// Package colscan holds what the vector and full-text indexes share when
// they read one column of a dataset: planning the rows of a scan into
// per-chunk units, and finding the stored index that serves a version.
package colscan

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// Unit is one fetch's worth of rows: the reads of one chunk (or of a
// value split over several chunks) and the rows' slots and ids.
type Unit struct {
	Reads []loch.Read
	Slots []loch.Slot
	IDs   []uint64
}

// locateBatch is the number of rows located at a time.
const locateBatch = 4096

// Parallelism is n, or GOMAXPROCS when n <= 0.
func Parallelism(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// Each plans the rows of ranges in column uid of sc into units (plan)
// and hands them to par workers (Parallelism): worker w ranges over
// units until it is closed, then returns. The first error stops all and
// is returned; ctx given to the workers is cancelled then.
func Each(ctx context.Context, sc *loch.Scan, uid int, ranges [][2]int64, keep func(uint64) bool, skipNull bool, par int, worker func(ctx context.Context, w int, units <-chan Unit) error) error {
	par = Parallelism(par)
	g, ctx := errgroup.WithContext(ctx)
	units := make(chan Unit, par)
	g.Go(func() error {
		defer close(units)
		return plan(ctx, sc, uid, ranges, keep, skipNull, units)
	})
	for w := range par {
		g.Go(func() error { return worker(ctx, w, units) })
	}
	return g.Wait()
}

// plan groups the rows of ranges in column uid of sc into units, one per
// chunk (a value split over chunks is a unit of its own), and sends them
// on out in row order. Rows keep rejects (when keep is not nil) are left
// out; null rows too when skipNull, else they join the current unit.
func plan(ctx context.Context, sc *loch.Scan, uid int, ranges [][2]int64, keep func(uint64) bool, skipNull bool, out chan<- Unit) error {
	cur := sc.SlotCursor(uid)
	var u Unit
	var chunk loch.ChunkID
	have := false
	send := func() error {
		if len(u.IDs) == 0 {
			return nil
		}
		select {
		case out <- u:
			u, have = Unit{}, false
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var rows []loch.RowLoc
	for _, r := range ranges {
		for lo := r[0]; lo < r[1]; lo += locateBatch {
			var err error
			if rows, err = sc.LocateRange(lo, min(lo+locateBatch, r[1]), rows[:0]); err != nil {
				return err
			}
			for _, row := range rows {
				if keep != nil && !keep(row.ID) {
					continue
				}
				slot := cur.Slot(row)
				if skipNull && slot.Null() {
					continue
				}
				if !slot.Null() && (slot.Pieces() > 1 || !have || slot.Chunk(0) != chunk) {
					if err := send(); err != nil {
						return err
					}
					u.Reads = sc.Reads(slot, false)
					chunk, have = slot.Chunk(0), true
				}
				u.Slots = append(u.Slots, slot)
				u.IDs = append(u.IDs, row.ID)
				if slot.Pieces() > 1 {
					if err := send(); err != nil {
						return err
					}
				}
			}
		}
	}
	return send()
}

// Fetch fetches reads with sc, for loch.Scan.Sample; the caller
// passes them to Recycle when done. On an error it recycles what it got.
func Fetch(ctx context.Context, sc *loch.Scan, reads []loch.Read) ([]*loch.Fetched, error) {
	got := make([]*loch.Fetched, len(reads))
	for i, r := range reads {
		f, err := sc.Fetch(ctx, r)
		if err != nil {
			Recycle(got)
			return nil, err
		}
		got[i] = f
	}
	return got, nil
}

// Recycle recycles what Fetch returned (nil entries are skipped).
func Recycle(got []*loch.Fetched) {
	for _, f := range got {
		if f != nil {
			f.Recycle()
		}
	}
}

// FindIndex returns the key of the stored index of column and metric
// (keys.ParseIndex's metric field) that serves ds's version: its own,
// else its newest ancestor's (in Dataset.Log order). It returns "" when
// none does, with stored telling whether any index of the column and
// metric is stored at all. what names the index in errors ("index").
func FindIndex(ctx context.Context, ds *loch.Dataset, what, column, metric string) (key string, stored bool, err error) {
	uid := -1
	for _, col := range ds.Schema().Columns {
		if col.Name == column {
			uid = col.UID
		}
	}
	if uid < 0 {
		return "", false, fmt.Errorf("%s of %s: no column %q: %w", what, ds.URL(), column, loch.ErrNotFound)
	}
	have := map[string]string{}
	err = ds.Store().List(ctx, keys.Index.Prefix(), func(a storage.Attrs) error {
		if v, u, m, ok := keys.ParseIndex(a.Key); ok && u == uid && m == metric {
			have[v] = a.Key
		}
		return nil
	})
	if err != nil {
		return "", false, fmt.Errorf("%s of %s column %q: %w", what, ds.URL(), column, err)
	}
	if key, ok := have[ds.Version()]; ok || len(have) == 0 {
		return key, ok, nil
	}
	log, err := ds.Log(ctx)
	if err != nil {
		return "", true, fmt.Errorf("%s of %s column %q: %w", what, ds.URL(), column, err)
	}
	for _, ci := range log {
		if key, ok := have[ci.ID]; ok {
			return key, true, nil
		}
	}
	return "", true, nil
}

// Cover splits the live rows of sc's fragments by the coverage list of
// an index of column uid (docs/format.md §2.8): a fragment is covered
// when the list names it as it is, or names it with other extensions but
// the same chunks of the column (an update in place of its other
// columns). It returns the ids of the rows of covered fragments that
// stored holds, in scan order; the positions of the other live rows as
// ranges (adjacent ones merged); and how many positions those are.
func Cover(ctx context.Context, sc *loch.Scan, uid int, list []vindex.Covered, stored func(uint64) bool) (valid []uint64, uncovered [][2]int64, n int64, err error) {
	isCovered := coveredFunc(ctx, sc, uid, list)
	add := func(lo, hi int64) {
		if k := len(uncovered); k > 0 && uncovered[k-1][1] == lo {
			uncovered[k-1][1] = hi
		} else {
			uncovered = append(uncovered, [2]int64{lo, hi})
		}
		n += hi - lo
	}
	var rows []loch.RowLoc
	for k, f := range sc.Fragments() {
		if f.Start == f.End {
			continue
		}
		if ok, err := isCovered(k, f); err != nil {
			return nil, nil, 0, err
		} else if !ok {
			add(f.Start, f.End)
			continue
		}
		for lo := f.Start; lo < f.End; lo += locateBatch {
			if rows, err = sc.LocateRange(lo, min(lo+locateBatch, f.End), rows[:0]); err != nil {
				return nil, nil, 0, err
			}
			for i, r := range rows {
				if stored(r.ID) {
					valid = append(valid, r.ID)
				} else {
					add(lo+int64(i), lo+int64(i)+1)
				}
			}
		}
	}
	return valid, uncovered, n, nil
}

// coveredFunc returns whether fragment k, f, of sc is covered by list.
func coveredFunc(ctx context.Context, sc *loch.Scan, uid int, list []vindex.Covered) func(k int, f loch.Fragment) (bool, error) {
	covered := map[string]bool{}
	chunks := map[string]string{}
	for _, f := range list {
		covered[loch.Fragment{Key: f.Key, IDStart: f.IDStart, Extensions: f.Extensions}.Ident()] = true
		if f.Chunks != "" {
			chunks[loch.Fragment{Key: f.Key, IDStart: f.IDStart}.Ident()] = f.Chunks
		}
	}
	return func(k int, f loch.Fragment) (bool, error) {
		if covered[f.Ident()] {
			return true, nil
		}
		want, ok := chunks[loch.Fragment{Key: f.Key, IDStart: f.IDStart}.Ident()]
		if !ok {
			return false, nil
		}
		got, err := sc.ColumnChunks(ctx, k, uid)
		return got == want, err
	}
}
