package loch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// columnsSchema has a column of each shape ExtendColumns takes, with
// chunks of a few samples, and text samples bigger than a chunk.
func columnsSchema() schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "id", DType: schema.Int32, ChunkBytes: 1024},
		{Name: "vec", DType: schema.Float32, Shape: schema.Shape{3}, ChunkBytes: 1024},
		{Name: "t", Kind: schema.TextKind, DType: schema.Text, ChunkBytes: 1024},
		{Name: "lab", Kind: schema.ClassLabel, DType: schema.Int64, ClassNames: []string{"a", "b", "c"}},
		{Name: "other", DType: schema.Float64},
	}}
}

// columnsRows are n rows as Extend takes them and as ExtendColumns does
// (other left out: null).
func columnsRows(n int) ([]Row, []ColumnData) {
	rows := make([]Row, n)
	cols := []ColumnData{{Name: "id"}, {Name: "vec", Nulls: make([]bool, n)}, {Name: "t", Offsets: []int{0}, Nulls: make([]bool, n)}, {Name: "lab"}}
	for i := range rows {
		id := binary.LittleEndian.AppendUint32(nil, uint32(i))
		vec := make([]byte, 0, 12)
		for k := range 3 {
			vec = binary.LittleEndian.AppendUint32(vec, math.Float32bits(float32(i*k)))
		}
		text := []byte(fmt.Sprintf("row %d", i) + strings.Repeat("!", i%50))
		if i%97 == 5 { // bigger than a chunk
			text = []byte(strings.Repeat("big", 700))
		}
		lab := binary.LittleEndian.AppendUint64(nil, uint64(i%3))
		rows[i] = Row{"id": {Shape: []int{}, Data: id}, "vec": {Shape: []int{3}, Data: vec}, "t": {Shape: []int{len(text)}, Data: text}, "lab": {Shape: []int{}, Data: lab}}
		cols[0].Values = append(cols[0].Values, id...)
		cols[1].Values = append(cols[1].Values, vec...)
		if i%5 == 1 {
			rows[i]["vec"] = Sample{Null: true}
			cols[1].Nulls[i] = true
		}
		if i%7 == 2 {
			rows[i]["t"] = Sample{Null: true}
			cols[2].Nulls[i] = true
		} else {
			cols[2].Values = append(cols[2].Values, text...)
		}
		cols[2].Offsets = append(cols[2].Offsets, len(cols[2].Values))
		cols[3].Values = append(cols[3].Values, lab...)
	}
	return rows, cols
}

// TestExtendColumnsAsExtend: rows given by columns, in two calls, make
// the dataset that Extend makes of the same rows: the same samples, and
// the same statistics (stored bytes too: the same chunks), with samples
// bigger than a chunk split and absent columns null.
func TestExtendColumnsAsExtend(t *testing.T) {
	dir := t.TempDir()
	rows, cols := columnsRows(3000)
	a, err := Create(ctx, filepath.Join(dir, "rows"), columnsSchema())
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.Extend(ctx, rows))
	_, err = a.Commit(ctx, "rows")
	require.NoError(t, err)

	b, err := Create(ctx, filepath.Join(dir, "cols"), columnsSchema())
	require.NoError(t, err)
	defer b.Close()
	first, rest := sliceColumns(cols, 0, 1000), sliceColumns(cols, 1000, 3000)
	require.NoError(t, b.ExtendColumns(ctx, 1000, first))
	require.NoError(t, b.ExtendColumns(ctx, 2000, rest))
	_, err = b.Commit(ctx, "cols")
	require.NoError(t, err)

	require.Equal(t, a.Len(), b.Len())
	ea, eb := a.Columns(), b.Columns()
	for k, c := range a.Schema().Columns {
		require.Equal(t, ea[k].Stats, eb[k].Stats, c.Name)
		require.Equal(t, allSamples(t, a, c.Name), allSamples(t, b, c.Name), c.Name)
	}
}

// allSamples reads the whole of column name.
func allSamples(t *testing.T, d *Dataset, name string) []Sample {
	t.Helper()
	r, err := d.Column(name)
	require.NoError(t, err)
	s, err := r.ReadRange(ctx, 0, d.Len())
	require.NoError(t, err)
	return s
}

// sliceColumns is rows lo to hi of cols.
func sliceColumns(cols []ColumnData, lo, hi int) []ColumnData {
	out := make([]ColumnData, len(cols))
	for k, c := range cols {
		out[k].Name = c.Name
		if c.Nulls != nil {
			out[k].Nulls = c.Nulls[lo:hi]
		}
		if c.Offsets != nil {
			out[k].Values, out[k].Offsets = c.Values, c.Offsets[lo:hi+1]
			continue
		}
		size := len(c.Values) / len(cols[0].Values) * 4
		out[k].Values = c.Values[lo*size : hi*size]
	}
	return out
}

// TestExtendColumnsRefuses: bad arguments and invalid samples are
// ErrInvalidArgument errors, the samples' naming their row, and stage
// nothing.
func TestExtendColumnsRefuses(t *testing.T) {
	d, err := Create(ctx, filepath.Join(t.TempDir(), "ds"), columnsSchema())
	require.NoError(t, err)
	defer d.Close()
	_, cols := columnsRows(10)
	badText := sliceColumns(cols, 0, 10)
	badText[2].Values = append([]byte{}, badText[2].Values...)
	badText[2].Values[badText[2].Offsets[4]] = 0xff
	badLabel := sliceColumns(cols, 0, 10)
	badLabel[3].Values = append([]byte{}, badLabel[3].Values...)
	badLabel[3].Values[8*6] = 3
	for _, tc := range []struct {
		name string
		cols []ColumnData
		want string
		row  int
	}{
		{"unknown column", []ColumnData{{Name: "nope"}}, `unknown column "nope"`, -1},
		{"twice", []ColumnData{cols[0], cols[0]}, `column "id" given twice`, -1},
		{"short", []ColumnData{{Name: "id", Values: cols[0].Values[:36]}}, "36 bytes (and 0 offsets) for 10 samples of 4 bytes", -1},
		{"null flags", []ColumnData{{Name: "id", Values: cols[0].Values, Nulls: make([]bool, 3)}}, "3 null flags for 10 rows", -1},
		{"offsets", []ColumnData{{Name: "t", Values: cols[2].Values, Offsets: cols[2].Offsets[:5]}}, "5 offsets", -1},
		{"invalid UTF-8", badText, "not valid UTF-8", 4},
		{"class index", badLabel, "class", 6},
	} {
		err := d.ExtendColumns(ctx, 10, tc.cols)
		require.ErrorIs(t, err, ErrInvalidArgument, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
		var se *SampleError
		require.Equal(t, tc.row >= 0, errors.As(err, &se), tc.name)
		if tc.row >= 0 {
			require.Equal(t, tc.row, se.Row, tc.name)
		}
	}
	img := schema.Schema{Columns: []schema.Column{{Name: "im", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG}}}
	di, err := Create(ctx, filepath.Join(t.TempDir(), "img"), img)
	require.NoError(t, err)
	defer di.Close()
	require.ErrorContains(t, di.ExtendColumns(ctx, 1, []ColumnData{{Name: "im", Values: []byte{1}, Offsets: []int{0, 1}}}), "not given by columns")

	require.NoError(t, d.ExtendColumns(ctx, 10, cols))
	_, err = d.Commit(ctx, "ten")
	require.NoError(t, err)
	require.EqualValues(t, 10, d.Len())
}
