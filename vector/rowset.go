package vector

import "slices"

// RowSet is a set of row ids: the rows a filter allows. Its zero value
// is empty; a nil *RowSet allows every row.
type RowSet struct {
	ids  []uint64 // sorted, distinct
	base uint64   // bits[i] holds ids base+64i .. base+64i+63
	bits []uint64 // nil when the ids span too wide a range
}

// maxBitmapWords bounds a RowSet's bitmap (64 MiB, 2^29 ids of range).
const maxBitmapWords = 1 << 23

// NewRowSet returns the set of the given ids (in any order, repeats
// ignored). It keeps ids, sorted; when they span at most 2^29 ids it
// also keeps a bitmap of them, so that Contains costs one load.
func NewRowSet(ids []uint64) *RowSet {
	slices.Sort(ids)
	s := &RowSet{ids: slices.Compact(ids)}
	if n := len(s.ids); n > 0 {
		if words := (s.ids[n-1]-s.ids[0])/64 + 1; words <= maxBitmapWords {
			s.base, s.bits = s.ids[0], make([]uint64, words)
			for _, id := range s.ids {
				s.bits[(id-s.base)/64] |= 1 << ((id - s.base) % 64)
			}
		}
	}
	return s
}

// Len is the number of ids.
func (s *RowSet) Len() int { return len(s.ids) }

// Contains reports whether id is in the set; a nil set contains every id.
func (s *RowSet) Contains(id uint64) bool {
	if s == nil {
		return true
	}
	if s.bits != nil {
		if id < s.base {
			return false
		}
		w := (id - s.base) / 64
		return w < uint64(len(s.bits)) && s.bits[w]&(1<<((id-s.base)%64)) != 0
	}
	_, ok := slices.BinarySearch(s.ids, id)
	return ok
}

// keep is Contains as a function, nil for a nil set.
func (s *RowSet) keep() func(uint64) bool {
	if s == nil {
		return nil
	}
	return s.Contains
}
