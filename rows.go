package loch

// Rows: the live rows of snapshots joined by stable row id, shared by Diff
// and Merge.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/lochdata/loch/internal/manifest"
)

// rowLoc is where a live row of a snapshot is stored.
type rowLoc struct {
	id   uint64
	frag int   // index into the snapshot's frags
	off  int64 // offset in the fragment
}

// changedRows lists, sorted by id, the live rows of each snapshot that are
// not in a fragment all the snapshots hold with the same rows. It also
// returns the rowsKeys of the fragments it skipped.
func (d *Dataset) changedRows(ctx context.Context, snaps ...*snapshot) ([][]rowLoc, map[string]bool, error) {
	count := map[string]int{}
	for _, s := range snaps {
		for _, f := range s.frags {
			count[f.rowsKey()]++
		}
	}
	same := map[string]bool{}
	for k, n := range count {
		if n >= len(snaps) {
			same[k] = true
		}
	}
	out := make([][]rowLoc, len(snaps))
	for i, s := range snaps {
		rows, err := d.liveRows(ctx, s, func(f *fragState) bool { return !same[f.rowsKey()] })
		if err != nil {
			return nil, nil, err
		}
		out[i] = rows
	}
	return out, same, nil
}

// liveRows lists the live rows of the fragments that include selects,
// sorted by row id.
func (d *Dataset) liveRows(ctx context.Context, s *snapshot, include func(*fragState) bool) ([]rowLoc, error) {
	n := int64(0)
	for _, f := range s.frags {
		if include(f) {
			n += f.ref.Live()
		}
	}
	out := make([]rowLoc, 0, n)
	for k, f := range s.frags {
		if !include(f) {
			continue
		}
		if err := f.load(ctx, d); err != nil {
			return nil, err
		}
		del := f.deleted
		emit := func(off int64, id uint64) {
			if len(del) > 0 && del[0] == off {
				del = del[1:]
				return
			}
			out = append(out, rowLoc{id: id, frag: k, off: off})
		}
		if f.ref.IDStart != nil {
			for off := int64(0); off < f.ref.Rows; off++ {
				emit(off, *f.ref.IDStart+uint64(off))
			}
			continue
		}
		var off int64
		for _, r := range f.ids {
			for j := uint64(0); j < r[1]; j++ {
				emit(off, r[0]+j)
				off++
			}
		}
	}
	byID := func(x, y rowLoc) int { return cmp.Compare(x.id, y.id) }
	if !slices.IsSortedFunc(out, byID) {
		slices.SortFunc(out, byID)
	}
	for i := 1; i < len(out); i++ {
		if out[i].id == out[i-1].id {
			return nil, fmt.Errorf("version %s holds row id %d twice: %w", s.commitID, out[i].id, ErrCorrupt)
		}
	}
	return out, nil
}

// changedColumns lists the columns (of cols) whose samples differ between
// a row at x in snapshot a and at y in snapshot b.
func (d *Dataset) changedColumns(ctx context.Context, a *snapshot, x *rowLoc, b *snapshot, y *rowLoc, cols []column) ([]string, error) {
	var out []string
	for _, c := range cols {
		same, err := d.sameSample(ctx, a.frags[x.frag], x.off, b.frags[y.frag], y.off, c.uid)
		if err != nil {
			return nil, fmt.Errorf("row id %d: column %q: %w", x.id, c.name, err)
		}
		if !same {
			out = append(out, c.name)
		}
	}
	return out, nil
}

// sameSample compares the stored samples of a column at two locations.
func (d *Dataset) sameSample(ctx context.Context, fa *fragState, offA int64, fb *fragState, offB int64, uid int) (bool, error) {
	refsA, refsB := fa.cols[uid], fb.cols[uid]
	if len(refsA) > 0 && len(refsB) > 0 {
		ka, kb := searchRef(refsA, offA), searchRef(refsB, offB)
		if refsA[ka].Key == refsB[kb].Key && refsA[ka].Parts == 0 && offA-refsA[ka].First == offB-refsB[kb].First {
			return true, nil
		}
	}
	sa, err := d.sampleIn(ctx, refsA, offA)
	if err != nil {
		return false, err
	}
	sb, err := d.sampleIn(ctx, refsB, offB)
	if err != nil {
		return false, err
	}
	return sa.Null == sb.Null && equalShape(sa.Shape, sb.Shape) && bytes.Equal(sa.Data, sb.Data), nil
}

// sampleIn reads the stored (encoded) sample at a fragment offset from a
// column's chunk refs; no refs means null.
func (d *Dataset) sampleIn(ctx context.Context, refs []manifest.ChunkRef, off int64) (Sample, error) {
	if len(refs) == 0 {
		return Sample{Null: true}, nil
	}
	k := searchRef(refs, off)
	return d.readSample(ctx, refs, k, off-refs[k].First, true)
}

// joinRows calls fn for every row id in any of the lists (each sorted by
// id), in id order, with its location in each list (nil where absent). at
// is reused between calls.
func joinRows(lists [][]rowLoc, fn func(id uint64, at []*rowLoc) error) error {
	next := make([]int, len(lists))
	at := make([]*rowLoc, len(lists))
	for {
		id, any := uint64(math.MaxUint64), false
		for i, l := range lists {
			if next[i] < len(l) && (!any || l[next[i]].id < id) {
				id, any = l[next[i]].id, true
			}
		}
		if !any {
			return nil
		}
		for i, l := range lists {
			at[i] = nil
			if next[i] < len(l) && l[next[i]].id == id {
				at[i] = &l[next[i]]
				next[i]++
			}
		}
		if err := fn(id, at); err != nil {
			return err
		}
	}
}
