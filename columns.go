package loch

import (
	"context"
	"fmt"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/schema"
)

// ColumnData is the samples of one column for ExtendColumns, given at once.
type ColumnData struct {
	// Name is the column's.
	Name string
	// Values holds the samples' bytes one after the other. A numeric
	// column of a fixed shape (a scalar: one element) has sample i's
	// elements, little-endian, at Values[i*size:(i+1)*size], a null
	// sample's bytes ignored; a text, json or bytes column has sample i
	// at Values[Offsets[i]:Offsets[i+1]], a null sample's range empty.
	Values []byte
	// Offsets, for text, json and bytes columns only, has one entry more
	// than there are rows, ascending.
	Offsets []int
	// Nulls marks the null samples; nil when none is.
	Nulls []bool
}

// SampleError is ExtendColumns' error for an invalid sample: its row (from
// 0, in the rows given) and what is wrong with it, which names the column.
type SampleError struct {
	Row int
	Err error
}

func (e *SampleError) Error() string { return fmt.Sprintf("row %d: %v", e.Row, e.Err) }

func (e *SampleError) Unwrap() error { return e.Err }

// ExtendColumns stages rows rows given column by column, in order: each
// of cols is a column of the dataset (at most once), the others are null.
// It takes the columns whose samples are stored as they are: numeric
// columns of a fixed shape, and text, json and bytes columns, without
// sample compression; another is an ErrInvalidArgument error. Like Extend
// it checks every sample (shape, UTF-8, JSON, class indexes) and stages
// nothing when one is invalid, naming its row; it copies the bytes
// before it returns.
func (d *Dataset) ExtendColumns(ctx context.Context, rows int, cols []ColumnData) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	st, err := d.stagingLocked(ctx)
	if err != nil {
		return err
	}
	byCol, err := st.checkColumns(rows, cols)
	if err != nil {
		return err
	}
	for lo := 0; lo < rows; {
		fw := st.openFragment()
		n := min(rows-lo, int(maxFragmentRows-fw.rows))
		for _, cw := range fw.cols {
			n = min(n, max(1, maxFragmentChunks-cw.chunks))
		}
		if err := st.addRun(ctx, fw, byCol, lo, lo+n); err != nil {
			return err
		}
		lo += n
	}
	return st.firstErr()
}

// checkColumns checks ExtendColumns' arguments and returns the data of
// each column of the stage (nil for those not given).
func (st *staging) checkColumns(rows int, cols []ColumnData) ([]*ColumnData, error) {
	byCol := make([]*ColumnData, len(st.cols))
	for i := range cols {
		cd := &cols[i]
		k := -1
		for j := range st.cols {
			if st.cols[j].Name == cd.Name {
				k = j
			}
		}
		switch {
		case k < 0:
			return nil, fmt.Errorf("%s: unknown column %q (have %v): %w", st.d.url, cd.Name, colNames(st.cols), ErrInvalidArgument)
		case byCol[k] != nil:
			return nil, fmt.Errorf("%s: column %q given twice: %w", st.d.url, cd.Name, ErrInvalidArgument)
		}
		if err := checkColumnData(&st.cols[k], rows, cd); err != nil {
			return nil, fmt.Errorf("%s: %w", st.d.url, err)
		}
		byCol[k] = cd
	}
	return byCol, nil
}

// checkColumnData checks one column's data for ExtendColumns.
func checkColumnData(c *schema.Column, rows int, cd *ColumnData) error {
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("column %q: %s: %w", c.Name, fmt.Sprintf(format, a...), ErrInvalidArgument)
	}
	if c.SampleCompression != schema.SampleNone || !c.DType.Variable() && !fixedShape(c.Shape) {
		return invalid("a %s column of %s samples of shape %s is not given by columns (want numbers of a fixed shape, text, json or bytes, stored as they are)",
			c.Kind, c.SampleCompression, schema.FormatShape(c.Shape))
	}
	if cd.Nulls != nil && len(cd.Nulls) != rows {
		return invalid("%d null flags for %d rows", len(cd.Nulls), rows)
	}
	if !c.DType.Variable() {
		if size := schema.NumElements(c.Shape) * c.DType.Size(); len(cd.Values) != rows*size || cd.Offsets != nil {
			return invalid("%d bytes (and %d offsets) for %d samples of %d bytes", len(cd.Values), len(cd.Offsets), rows, size)
		}
		return checkFixed(c, rows, cd)
	}
	if len(cd.Offsets) != rows+1 || cd.Offsets[0] < 0 || cd.Offsets[rows] > len(cd.Values) {
		return invalid("%d offsets into %d bytes for %d samples", len(cd.Offsets), len(cd.Values), rows)
	}
	shape := []int{0}
	for i := range rows {
		lo, hi := cd.Offsets[i], cd.Offsets[i+1]
		switch null := cd.Nulls != nil && cd.Nulls[i]; {
		case hi < lo:
			return invalid("row %d: offsets descend (%d to %d)", i, lo, hi)
		case null && hi > lo:
			return invalid("row %d: a null sample of %d bytes", i, hi-lo)
		case null:
			continue
		}
		shape[0] = hi - lo
		if err := c.CheckSample(shape, cd.Values[lo:hi]); err != nil {
			return &SampleError{Row: i, Err: err}
		}
	}
	return nil
}

// checkFixed checks the samples of a fixed-shape numeric column: its
// shape once, each sample's class index when the column names classes.
func checkFixed(c *schema.Column, rows int, cd *ColumnData) error {
	shape := append([]int{}, c.Shape...)
	if err := c.CheckSample(shape, nil); err != nil {
		return err
	}
	if c.Kind != schema.ClassLabel || len(c.ClassNames) == 0 {
		return nil
	}
	size := len(cd.Values) / max(rows, 1)
	for i := range rows {
		if cd.Nulls != nil && cd.Nulls[i] {
			continue
		}
		if err := c.CheckSample(shape, cd.Values[i*size:(i+1)*size]); err != nil {
			return &SampleError{Row: i, Err: err}
		}
	}
	return nil
}

func fixedShape(s schema.Shape) bool {
	for _, d := range s {
		if d < 0 {
			return false
		}
	}
	return true
}

// addRun adds rows lo to hi of the columns' data (byCol, by stage
// column; nil: null) to the fragment fw, sealing it when full.
func (st *staging) addRun(ctx context.Context, fw *fragWriter, byCol []*ColumnData, lo, hi int) error {
	for k := range st.cols {
		cw, err := st.writerOf(ctx, fw, &st.cols[k])
		if err != nil {
			return err
		}
		if byCol[k] == nil {
			for r := range int64(hi - lo) {
				if err := st.addSample(ctx, cw, fw.rows+r, prepared{null: true}); err != nil {
					return err
				}
			}
			continue
		}
		run := columnRun{ColumnData: byCol[k], col: cw.col, size: -1}
		if !cw.col.DType.Variable() {
			run.size = schema.NumElements(cw.col.Shape) * cw.col.DType.Size()
		}
		if err := st.addColumnRun(ctx, cw, fw.rows, run, lo, hi); err != nil {
			return err
		}
	}
	fw.rows += int64(hi - lo)
	if st.fragmentFull(fw) {
		st.seal(ctx, fw)
		st.sealed = append(st.sealed, fw)
		st.open = nil
	}
	return nil
}

// columnRun is one column's data with what addColumnRun needs of it.
type columnRun struct {
	*ColumnData
	col  *schema.Column
	size int // of a fixed-size sample; -1 for text, json and bytes
}

func (r columnRun) null(i int) bool { return r.Nulls != nil && r.Nulls[i] }

// sample is sample i's bytes (empty for a null).
func (r columnRun) sample(i int) []byte {
	switch {
	case r.null(i):
		return nil
	case r.size >= 0:
		return r.Values[i*r.size : (i+1)*r.size]
	}
	return r.Values[r.Offsets[i]:r.Offsets[i+1]]
}

// shape is sample i's shape (a null's: the column's).
func (r columnRun) shape(i int) []int {
	if r.size >= 0 {
		return append([]int{}, r.col.Shape...)
	}
	return []int{len(r.sample(i))}
}

// addTo adds samples lo to hi to b.
func (r columnRun) addTo(b *chunk.Builder, lo, hi int) error {
	var nulls []bool
	if r.Nulls != nil {
		nulls = r.Nulls[lo:hi]
	}
	if r.size >= 0 {
		return b.AddFixed(r.shape(lo), r.Values[lo*r.size:hi*r.size], hi-lo, nulls)
	}
	return b.AddVar(r.Values, r.Offsets[lo:hi+1], nulls)
}

// addColumnRun adds samples lo to hi of one column's data, the first at
// fragment offset off, cutting chunks where addSample would: after the
// sample that fills one, and around a sample bigger than a chunk (split).
func (st *staging) addColumnRun(ctx context.Context, cw *colWriter, off int64, r columnRun, lo, hi int) error {
	c := cw.col
	if cw.b != nil && cw.b.Len() > 0 && !cw.sameNDim(len(r.shape(lo))) {
		st.flush(ctx, cw)
	}
	st.countRun(c, r, lo, hi)
	for i := lo; i < hi; {
		if cw.b == nil {
			cw.b = st.newBuilder(c, c.ChunkBytes+c.ChunkBytes/8)
		}
		if cw.b.Len() == 0 {
			cw.first = off + int64(i-lo)
		}
		room, end, big := c.ChunkBytes-cw.b.RawBytes(), i, false
		for acc := 0; end < hi && acc < room; end++ {
			n := len(r.sample(end))
			if n > c.ChunkBytes {
				big = true
				break
			}
			acc += n
		}
		if err := r.addTo(cw.b, i, end); err != nil {
			return fmt.Errorf("%s: column %q: %w", st.d.url, c.Name, err)
		}
		if cw.b.RawBytes() >= c.ChunkBytes {
			st.flush(ctx, cw)
		}
		if i = end; big {
			st.flush(ctx, cw)
			data := r.sample(i)
			st.addSplit(ctx, cw, off+int64(i-lo), prepared{shape: r.shape(i), data: data, raw: int64(len(data))})
			i++
		}
	}
	return nil
}

// countRun counts samples lo to hi of a column in the stage's statistics
// of it, as addSample counts each.
func (st *staging) countRun(c *schema.Column, r columnRun, lo, hi int) {
	dl := st.delta(c.UID)
	shortest, longest := -1, 0
	for i := lo; i < hi; i++ {
		if r.null(i) {
			continue
		}
		data := r.sample(i)
		dl.Samples++
		dl.RawBytes += int64(len(data))
		if shortest < 0 || len(data) < shortest {
			shortest = len(data)
		}
		longest = max(longest, len(data))
		if dl.Classes != nil {
			dl.CountLabels(c, data, 1)
		}
	}
	switch {
	case shortest < 0: // nulls only
	case r.size >= 0:
		dl.MergeShape(r.shape(lo), r.shape(lo))
	default:
		dl.MergeShape([]int{shortest}, []int{longest})
	}
}
