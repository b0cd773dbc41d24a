package vector

import "slices"

// RowSet is a set of row ids: the rows a filter allows. Its zero value
// is empty; a nil *RowSet allows every row.
type RowSet struct {
	ids []uint64 // sorted, distinct
}

// NewRowSet returns the set of the given ids (in any order, repeats
// ignored). It keeps ids, sorted.
func NewRowSet(ids []uint64) *RowSet {
	slices.Sort(ids)
	return &RowSet{ids: slices.Compact(ids)}
}

// Len is the number of ids.
func (s *RowSet) Len() int { return len(s.ids) }

// Contains reports whether id is in the set; a nil set contains every id.
func (s *RowSet) Contains(id uint64) bool {
	if s == nil {
		return true
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
