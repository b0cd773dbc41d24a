package vector

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
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
type unit struct {
	reads []loch.Read
	slots []loch.Slot
	ids   []uint64
}

// batch is the vectors of a unit's non-null rows: n x dim float32.
type batch struct {
	ids  []uint64
	vecs []float32
}

// locateBatch is the number of rows located at a time.
const locateBatch = 4096

// each streams the vectors of the rows at the given position ranges
// (sorted, disjoint) whose ids keep accepts (nil: all), on parallelism
// goroutines: fn(w, b) is called by worker w (0 <= w < parallelism) for
// each batch; calls with the same w never overlap. Null samples are
// skipped. Memory is bounded by two chunks per worker.
func (c *column) each(ctx context.Context, ranges [][2]int64, keep func(uint64) bool, parallelism int, fn func(w int, b batch) error) error {
	if parallelism <= 0 {
		parallelism = runtime.GOMAXPROCS(0)
	}
	g, ctx := errgroup.WithContext(ctx)
	units := make(chan unit, parallelism)
	g.Go(func() error {
		defer close(units)
		return c.plan(ctx, ranges, keep, units)
	})
	for w := range parallelism {
		g.Go(func() error {
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
	return g.Wait()
}

// plan groups the rows of ranges into units, one per chunk, and sends
// them in row order.
func (c *column) plan(ctx context.Context, ranges [][2]int64, keep func(uint64) bool, out chan<- unit) error {
	uid := c.col.UID
	cur := c.sc.SlotCursor(uid)
	var u unit
	var have bool
	var chunk loch.ChunkID
	send := func() error {
		if !have {
			return nil
		}
		have = false
		select {
		case out <- u:
			u = unit{}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var rows []loch.RowLoc
	for _, r := range ranges {
		for lo := r[0]; lo < r[1]; lo += locateBatch {
			var err error
			if rows, err = c.sc.LocateRange(lo, min(lo+locateBatch, r[1]), rows[:0]); err != nil {
				return err
			}
			for _, row := range rows {
				if keep != nil && !keep(row.ID) {
					continue
				}
				slot := cur.Slot(row)
				if slot.Null() {
					continue
				}
				if slot.Pieces() > 1 || !have || slot.Chunk(0) != chunk {
					if err := send(); err != nil {
						return err
					}
					u.reads = c.sc.Reads(slot, false)
					chunk, have = slot.Chunk(0), true
				}
				u.slots = append(u.slots, slot)
				u.ids = append(u.ids, row.ID)
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

// fetch reads a unit's chunk and decodes its rows' vectors into b's
// buffers (reused).
func (c *column) fetch(ctx context.Context, u unit, b batch) (batch, error) {
	got := make([]*loch.Fetched, len(u.reads))
	defer func() {
		for _, f := range got {
			if f != nil {
				f.Recycle()
			}
		}
	}()
	for i, r := range u.reads {
		f, err := c.sc.Fetch(ctx, r)
		if err != nil {
			return b, err
		}
		got[i] = f
	}
	b.ids, b.vecs = b.ids[:0], slices.Grow(b.vecs[:0], len(u.slots)*c.dim)
	size := c.col.DType.Size()
	for i, slot := range u.slots {
		s, err := c.sc.Sample(slot, got)
		if err != nil {
			return b, err
		}
		if s.Null {
			continue
		}
		if len(s.Data) != c.dim*size {
			return b, fmt.Errorf("row %d of column %q: %d bytes, want %d: %w", u.ids[i], c.col.Name, len(s.Data), c.dim*size, loch.ErrCorrupt)
		}
		b.ids = append(b.ids, u.ids[i])
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
