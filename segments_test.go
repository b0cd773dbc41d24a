package loch

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// TestSegments: segments tile the live rows, cut each chunk of the largest
// column before the first row that starts at or after each multiple of
// SegmentBytes, and count only live rows.
func TestSegments(t *testing.T) {
	const rowBytes = 64 * 64 * 3
	s := schema.Schema{Columns: []schema.Column{
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
		{Name: "img", DType: schema.Uint8, Shape: schema.Shape{64, 64, 3}, ChunkBytes: 4 << 20},
	}}
	d, _ := mustCreate(t, s)
	for i := range 1000 {
		require.NoError(t, d.Append(ctx, Row{"label": Tensor([]int{}, []int64{int64(i)}), "img": Tensor([]int{64, 64, 3}, make([]uint8, rowBytes))}))
	}
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)

	sc := loadedScan(t, d, 4)
	sch := sc.Schema()
	img, ok := sch.Column("img")
	require.True(t, ok)
	var want []int64
	for _, rows := range sc.Blocks(img.UID) {
		at := int64(0)
		for j := int64(1); ; j++ {
			cut := (j*SegmentBytes + rowBytes - 1) / rowBytes
			if cut >= rows {
				break
			}
			want = append(want, cut-at)
			at = cut
		}
		want = append(want, rows-at)
	}
	require.Greater(t, len(want), len(sc.Blocks(img.UID)), "several segments per chunk")
	require.Equal(t, want, sc.Segments())

	// Deleted rows are not counted; the cuts stay where they were.
	require.NoError(t, d.Delete(ctx, 0, 1, 2, 100))
	_, err = d.Commit(ctx, "delete")
	require.NoError(t, err)
	sc = d.Scan()
	require.NoError(t, sc.Load(ctx, 4))
	got := sc.Segments()
	var sum int64
	for _, n := range got {
		require.Positive(t, n)
		sum += n
	}
	require.Equal(t, sc.Len(), sum)
	require.Equal(t, want[0]-3, got[0])
	require.Equal(t, want[1]-1, got[1])
	require.Equal(t, want[2:], got[2:])
}
