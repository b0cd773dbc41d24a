package vector

import "slices"

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

// add offers x: it enters when fewer than k are held or it comes before
// the worst held (the heap's root), which it then replaces. No allocation
// once k are held.
func (t *topK) add(x Hit) {
	h := t.h
	if len(h) < t.k {
		h = append(h, x)
		for j := len(h) - 1; j > 0; {
			p := (j - 1) / 2
			if !before(h[p], h[j]) {
				break
			}
			h[p], h[j] = h[j], h[p]
			j = p
		}
		t.h = h
		return
	}
	if !before(x, h[0]) {
		return
	}
	h[0] = x
	for j := 0; ; {
		a := 2*j + 1
		if a >= len(h) {
			break
		}
		if b := a + 1; b < len(h) && before(h[a], h[b]) {
			a = b
		}
		if !before(h[j], h[a]) {
			break
		}
		h[j], h[a] = h[a], h[j]
		j = a
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
