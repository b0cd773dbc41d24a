package vector

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/colscan"
	"github.com/lochdata/loch/internal/half"
	"github.com/lochdata/loch/schema"
)

// column is a searchable column of a loaded scan.
type column struct {
	sc  *loch.Scan
	col schema.Column
	dim int
}

// openColumn loads the scan's fragments and checks the column.
func openColumn(ctx context.Context, sc *loch.Scan, name string, parallelism int) (*column, error) {
	if err := sc.Load(ctx, parallelism); err != nil {
		return nil, fmt.Errorf("vector search of %s: %w", sc.URL(), err)
	}
	var col *schema.Column
	s := sc.Schema()
	for i := range s.Columns {
		if s.Columns[i].Name == name {
			col = &s.Columns[i]
		}
	}
	if col == nil {
		return nil, fmt.Errorf("vector search of %s: no column %q: %w", sc.URL(), name, loch.ErrNotFound)
	}
	dim, err := checkColumn(*col)
	if err != nil {
		return nil, fmt.Errorf("vector search of %s: %w", sc.URL(), err)
	}
	return &column{sc: sc, col: *col, dim: dim}, nil
}

// unit is one fetch's worth of rows: the reads of one chunk (or of a
// split sample's pieces) and the rows whose samples they hold.
type unit = colscan.Unit

// batch is the vectors of a unit's non-null rows: n x dim float32.
type batch struct {
	ids  []uint64
	vecs []float32
}

// each streams the vectors of the rows at the given position ranges
// (sorted, disjoint) whose ids keep accepts (nil: all), on parallelism
// goroutines: fn(w, b) is called by worker w (0 <= w < parallelism) for
// each batch; calls with the same w never overlap. Null samples are
// skipped. Memory is bounded by two chunks per worker.
func (c *column) each(ctx context.Context, ranges [][2]int64, keep func(uint64) bool, parallelism int, fn func(w int, b batch) error) error {
	return colscan.Each(ctx, c.sc, c.col.UID, ranges, keep, true, parallelism, func(ctx context.Context, w int, units <-chan unit) error {
		var b batch
		for u := range units {
			var err error
			if b, err = c.fetch(ctx, u, b); err != nil {
				return err
			}
			if len(b.ids) == 0 {
				continue
			}
			if err := fn(w, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// fetch reads a unit's chunk and decodes its rows' vectors into b's
// buffers (reused).
func (c *column) fetch(ctx context.Context, u unit, b batch) (batch, error) {
	got, err := colscan.Fetch(ctx, c.sc, u.Reads)
	if err != nil {
		return b, err
	}
	defer colscan.Recycle(got)
	b.ids, b.vecs = b.ids[:0], slices.Grow(b.vecs[:0], len(u.Slots)*c.dim)
	size := c.col.DType.Size()
	for i, slot := range u.Slots {
		s, err := c.sc.Sample(slot, got)
		if err != nil {
			return b, err
		}
		if s.Null {
			continue
		}
		if len(s.Data) != c.dim*size {
			return b, fmt.Errorf("row %d of column %q: %d bytes, want %d: %w", u.IDs[i], c.col.Name, len(s.Data), c.dim*size, loch.ErrCorrupt)
		}
		b.ids = append(b.ids, u.IDs[i])
		b.vecs = appendFloats(b.vecs, c.col.DType, s.Data)
	}
	return b, nil
}

// littleEndian: the machine's floats are laid out as loch stores them, so
// aligned float32 samples are copied as they are.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// appendFloats appends the little-endian samples of dtype dt in data to
// dst as float32.
func appendFloats(dst []float32, dt schema.DType, data []byte) []float32 {
	switch dt {
	case schema.Float32:
		if littleEndian && len(data) >= 4 && uintptr(unsafe.Pointer(&data[0]))%4 == 0 {
			return append(dst, unsafe.Slice((*float32)(unsafe.Pointer(&data[0])), len(data)/4)...)
		}
		for i := 0; i+4 <= len(data); i += 4 {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(data[i:])))
		}
	case schema.Float16:
		for i := 0; i+2 <= len(data); i += 2 {
			dst = append(dst, half.ToFloat32(binary.LittleEndian.Uint16(data[i:])))
		}
	case schema.BFloat16:
		for i := 0; i+2 <= len(data); i += 2 {
			dst = append(dst, half.BFloat16ToFloat32(binary.LittleEndian.Uint16(data[i:])))
		}
	}
	return dst
}
