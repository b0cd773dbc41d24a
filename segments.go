package loch

import (
	"math/bits"
	"slices"
)

// SegmentBytes is the size that segments aim at in their fragment's
// largest column (see Scan.Segments).
const SegmentBytes = 1 << 20

// Segments returns the sizes in live rows of the snapshot's segments, in
// row order: consecutive runs of rows that tile the positions, the blocks
// of the streaming loader's block shuffle. They depend on the snapshot
// alone, not on the columns a reader loads, so that an order built on them
// is the same whatever is read:
//
//   - a fragment's rows are cut where its largest column (the most raw
//     bytes in the fragment, the lowest uid among equals) starts a chunk
//     and, within each chunk, before the first row that starts at or after
//     each multiple of SegmentBytes of the chunk's raw data (its samples
//     taken at their average size: exact for fixed-size samples), so that
//     a segment of that column reads as about SegmentBytes, its checksum
//     blocks aligned;
//   - a split sample is a segment of its own row;
//   - a fragment without stored bytes is one segment;
//   - deleted rows are not counted, and a segment of deleted rows only is
//     left out.
func (sc *Scan) Segments() []int64 {
	var out []int64
	for k, f := range sc.s.frags {
		if sc.s.cum[k+1] == sc.s.cum[k] {
			continue
		}
		cuts := f.segmentCuts()
		for i, a := range cuts {
			b := f.ref.Rows
			if i+1 < len(cuts) {
				b = cuts[i+1]
			}
			if n := (b - a) - countIn(f.deleted, a, b); n > 0 {
				out = append(out, n)
			}
		}
	}
	return out
}

// segmentCuts returns the fragment offsets where its segments start,
// ascending from 0.
func (f *fragState) segmentCuts() []int64 {
	cuts := []int64{0}
	add := func(c int64) {
		if c > cuts[len(cuts)-1] && c < f.ref.Rows {
			cuts = append(cuts, c)
		}
	}
	for _, r := range f.cols[f.largestColumn()] {
		if r.Parts > 0 {
			if r.Part == 0 {
				add(r.First)
				add(r.First + 1)
			}
			continue
		}
		add(r.First)
		for j := uint64(1); r.Raw > 0; j++ {
			// The first row at or after j*SegmentBytes: ceil(j*S*Rows/Raw).
			hi, lo := bits.Mul64(j*SegmentBytes, uint64(r.Rows))
			if hi >= uint64(r.Raw) {
				break
			}
			q, rem := bits.Div64(hi, lo, uint64(r.Raw))
			if rem > 0 {
				q++
			}
			if q >= uint64(r.Rows) {
				break
			}
			add(r.First + int64(q))
		}
		add(r.First + r.Rows)
	}
	return cuts
}

// largestColumn returns the uid of the fragment's column with the most raw
// bytes (the lowest among equals), or -1 when it stores none.
func (f *fragState) largestColumn() int {
	uids := make([]int, 0, len(f.cols))
	for uid := range f.cols {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	best, most := -1, int64(0)
	for _, uid := range uids {
		var n int64
		for _, r := range f.cols[uid] {
			n += r.Raw
		}
		if n > most {
			best, most = uid, n
		}
	}
	return best
}
