package vector

import (
	"container/heap"
	"slices"
)

// Hit is one result: a row and its distance to the query.
type Hit struct {
	RowID    uint64  `json:"row_id"`
	Distance float32 `json:"distance"`
}

// before orders hits: nearer first, then by row id.
func before(a, b Hit) bool {
	if a.Distance != b.Distance {
		return a.Distance < b.Distance
	}
	return a.RowID < b.RowID
}

// topK keeps the k best hits seen: a max-heap on (distance, id).
type topK struct {
	k int
	h []Hit
}

func (t *topK) Len() int           { return len(t.h) }
func (t *topK) Less(i, j int) bool { return before(t.h[j], t.h[i]) }
func (t *topK) Swap(i, j int)      { t.h[i], t.h[j] = t.h[j], t.h[i] }
func (t *topK) Push(x any)         { t.h = append(t.h, x.(Hit)) }
func (t *topK) Pop() any           { x := t.h[len(t.h)-1]; t.h = t.h[:len(t.h)-1]; return x }

// worst is the distance a hit must beat (at equal distance, by id) to
// enter; ok is false while fewer than k are held.
func (t *topK) full() bool { return len(t.h) >= t.k }

func (t *topK) add(x Hit) {
	if len(t.h) < t.k {
		heap.Push(t, x)
		return
	}
	if before(x, t.h[0]) {
		t.h[0] = x
		heap.Fix(t, 0)
	}
}

// sorted returns the hits, best first.
func (t *topK) sorted() []Hit {
	out := slices.Clone(t.h)
	slices.SortFunc(out, func(a, b Hit) int {
		if before(a, b) {
			return -1
		}
		if before(b, a) {
			return 1
		}
		return 0
	})
	return out
}
