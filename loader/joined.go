package loader

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch"
)

// joinedColumns checks cfg.Joined against the rows and the dataset's
// columns and indexes the rows for it.
func (l *Loader) joinedColumns() error {
	if len(l.cfg.Joined) == 0 {
		return nil
	}
	if l.cfg.Rows == nil {
		return fmt.Errorf("loader: joined columns need the rows they hold values for: %w", loch.ErrInvalidArgument)
	}
	sch := l.scans[0].Schema()
	names := sch.Names()
	seen := map[string]bool{}
	for i := range l.cfg.Joined {
		c := &l.cfg.Joined[i]
		if err := c.Check(); err != nil {
			return fmt.Errorf("loader: %w", err)
		}
		if n := c.Rows(); n != len(l.cfg.Rows) {
			return fmt.Errorf("loader: joined column %q has %d values for %d rows: %w", c.Name, n, len(l.cfg.Rows), loch.ErrInvalidArgument)
		}
		if slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, c.Name) }) {
			return fmt.Errorf("loader: joined column %q has the name of a column of the dataset (%v): rename it (AS) in the query: %w", c.Name, names, loch.ErrInvalidArgument)
		}
		if seen[strings.ToLower(c.Name)] {
			return fmt.Errorf("loader: joined column %q appears twice: %w", c.Name, loch.ErrInvalidArgument)
		}
		seen[strings.ToLower(c.Name)] = true
	}
	l.joinedAt = make(map[uint64]int, len(l.cfg.Rows))
	for i, id := range l.cfg.Rows {
		l.joinedAt[id] = i
	}
	return nil
}

// joined collates a joined column for the batch's rows: each row's own
// value, found by its row id.
func (l *Loader) joined(c *loch.JoinedColumn, rowIDs []uint64) *Collated {
	n := len(rowIDs)
	t := &Collated{DType: c.DType}
	anyNull := false
	for _, id := range rowIDs {
		if c.IsNull(l.joinedAt[id]) {
			anyNull = true
			break
		}
	}
	if anyNull {
		t.Null = make([]bool, n)
		for k, id := range rowIDs {
			t.Null[k] = c.IsNull(l.joinedAt[id])
		}
	}
	if c.DType.Variable() {
		t.Shape = []int{n}
		t.Items = make([][]byte, n)
		for k, id := range rowIDs {
			if it := c.Items[l.joinedAt[id]]; it != nil {
				t.Items[k] = slices.Clone(it)
			}
		}
		return t
	}
	per := c.DType.Size()
	for _, d := range c.Shape {
		per *= d
	}
	t.Shape = append([]int{n}, c.Shape...)
	t.Data = l.cfg.Allocator.Alloc(n * per)
	for k, id := range rowIDs {
		i := l.joinedAt[id]
		copy(t.Data[k*per:(k+1)*per], c.Data[i*per:(i+1)*per])
	}
	return t
}

// joinedDigest names joined columns by their names, dtypes, shapes and
// values: the XXH3 of them all.
func joinedDigest(joined []loch.JoinedColumn) string {
	h := xxh3.New()
	var n [8]byte
	put := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	for i := range joined {
		c := &joined[i]
		put([]byte(fmt.Sprintf("%s %s %v", c.Name, c.DType, c.Shape)))
		put(c.Data)
		for k := range c.Rows() {
			null := []byte{0}
			if c.IsNull(k) {
				null[0] = 1
			}
			h.Write(null)
			if c.Items != nil {
				put(c.Items[k])
			}
		}
	}
	return fmt.Sprintf("joined columns xxh3 %016x", h.Sum64())
}
