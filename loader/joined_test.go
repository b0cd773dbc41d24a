package loader

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

// joinedRows picks every third row of d, in descending position order, and
// joined columns whose values are functions of the row id: int64 id*3+1
// (null for ids divisible by 5), float32[2] {id, -id}, text "v<id>"
// (null for ids divisible by 4).
func joinedRows(t *testing.T, d *loch.Dataset) ([]uint64, []loch.JoinedColumn) {
	var ids []uint64
	for p := d.Len() - 1; p >= 0; p -= 3 {
		id, err := d.RowID(ctx, p)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	n := len(ids)
	ints := loch.JoinedColumn{Name: "lbl", DType: schema.Int64, Data: make([]byte, 8*n), Null: make([]bool, n)}
	vecs := loch.JoinedColumn{Name: "vec", DType: schema.Float32, Shape: []int{2}, Data: make([]byte, 8*n)}
	text := loch.JoinedColumn{Name: "note", DType: schema.Text, Items: make([][]byte, n)}
	for i, id := range ids {
		if id%5 == 0 {
			ints.Null[i] = true
		} else {
			binary.LittleEndian.PutUint64(ints.Data[8*i:], id*3+1)
		}
		binary.LittleEndian.PutUint32(vecs.Data[8*i:], math.Float32bits(float32(id)))
		binary.LittleEndian.PutUint32(vecs.Data[8*i+4:], math.Float32bits(-float32(id)))
		if id%4 != 0 {
			text.Items[i] = []byte(fmt.Sprintf("v%d", id))
		}
	}
	return ids, []loch.JoinedColumn{ints, vecs, text}
}

// checkJoinedBatch checks that every row of b carries its own joined
// values, and the dataset column x its own row's.
func checkJoinedBatch(t *testing.T, d *loch.Dataset, b *Batch) {
	lbl, vec, note := b.Columns["lbl"], b.Columns["vec"], b.Columns["note"]
	require.Equal(t, []int{b.Len()}, lbl.Shape)
	require.Equal(t, []int{b.Len(), 2}, vec.Shape)
	require.Equal(t, schema.Text, note.DType)
	for k, id := range b.RowIDs {
		if id%5 == 0 {
			require.True(t, lbl.Null[k], "row %d", id)
		} else {
			require.Equal(t, id*3+1, binary.LittleEndian.Uint64(lbl.Data[8*k:]), "row %d", id)
			require.True(t, lbl.Null == nil || !lbl.Null[k])
		}
		require.Equal(t, float32(id), math.Float32frombits(binary.LittleEndian.Uint32(vec.Data[8*k:])))
		require.Equal(t, -float32(id), math.Float32frombits(binary.LittleEndian.Uint32(vec.Data[8*k+4:])))
		if id%4 == 0 {
			require.Nil(t, note.Items[k])
		} else {
			require.Equal(t, fmt.Sprintf("v%d", id), string(note.Items[k]))
		}
		// x[0] is the row's position in testDataset.
		pos := float32(b.Positions[k])
		require.Equal(t, pos, math.Float32frombits(binary.LittleEndian.Uint32(b.Columns["x"].Data[16*k:])))
	}
}

// TestJoinedColumns: a selection's joined columns come with their rows
// under every shuffle mode and world size 1 to 8: the ranks' batches
// cover the selection exactly (each row once, but for padding), and each
// row holds its own values.
func TestJoinedColumns(t *testing.T) {
	d := testDataset(t, 150)
	ids, joined := joinedRows(t, d)
	for _, mode := range []order.Mode{order.ModeNone, order.ModeBlock, order.ModeFull} {
		for world := 1; world <= 8; world++ {
			seen := map[uint64]int{}
			total := 0
			for rank := range world {
				l, err := New(ctx, d.Scan(), Config{Columns: []string{"x"}, BatchSize: 4, Shuffle: mode, Seed: 3, WorldSize: world, Rank: rank, Rows: ids, Joined: joined, Query: "q"})
				require.NoError(t, err)
				for _, b := range drain(t, l) {
					checkJoinedBatch(t, d, b)
					for _, id := range b.RowIDs {
						seen[id]++
						total++
					}
				}
				l.Close()
			}
			require.Len(t, seen, len(ids), "mode %s, world %d: every selected row", mode, world)
			require.Less(t, total-len(ids), world*4, "mode %s, world %d: repeats only as padding", mode, world)
		}
	}
}

// TestJoinedResume: a run over a joined selection saved mid-epoch on 3
// ranks resumes on 5 with every row delivered and each with its values; a
// resume with other joined values is refused.
func TestJoinedResume(t *testing.T) {
	d := testDataset(t, 200)
	ids, joined := joinedRows(t, d)
	cfg := Config{Columns: []string{"x"}, BatchSize: 3, Shuffle: order.ModeBlock, Seed: 8, Rows: ids, Joined: joined, Query: "q"}
	seen := map[uint64]int{}
	var saved State
	for rank := range 3 {
		c := cfg
		c.WorldSize, c.Rank = 3, rank
		l, err := New(ctx, d.Scan(), c)
		require.NoError(t, err)
		for range 2 {
			b, err := l.Next(ctx)
			require.NoError(t, err)
			checkJoinedBatch(t, d, b)
			for _, id := range b.RowIDs {
				seen[id]++
			}
		}
		saved = l.State()
		l.Close()
	}
	require.Contains(t, saved.Selection, "joined columns xxh3")
	for rank := range 5 {
		c := cfg
		st := saved
		c.WorldSize, c.Rank, c.Resume = 5, rank, &st
		l, err := New(ctx, d.Scan(), c)
		require.NoError(t, err)
		for _, b := range drain(t, l) {
			checkJoinedBatch(t, d, b)
			for _, id := range b.RowIDs {
				seen[id]++
			}
		}
		l.Close()
	}
	require.Len(t, seen, len(ids))

	other := append([]loch.JoinedColumn(nil), joined...)
	other[1] = loch.JoinedColumn{Name: "vec", DType: schema.Float32, Shape: []int{2}, Data: make([]byte, len(joined[1].Data))}
	c := cfg
	st := saved
	c.Joined, c.Resume = other, &st
	_, err := New(ctx, d.Scan(), c)
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "row selection")
}

// TestJoinedRefuses: joined columns without rows, of another row count,
// named like a dataset column or twice, and in a mixture, are refused.
func TestJoinedRefuses(t *testing.T) {
	d := testDataset(t, 30)
	ids, joined := joinedRows(t, d)
	for name, tc := range map[string]struct {
		rows   []uint64
		joined []loch.JoinedColumn
		msg    string
	}{
		"no rows": {nil, joined, "need the rows"},
		"count":   {ids[1:], joined, "values for 9 rows"},
		"clash":   {ids, []loch.JoinedColumn{{Name: "Label", DType: schema.Int8, Data: make([]byte, len(ids))}}, "name of a column of the dataset"},
		"twice":   {ids, []loch.JoinedColumn{joined[0], joined[0]}, "appears twice"},
		"checked": {ids, []loch.JoinedColumn{{Name: "b", DType: schema.Bytes, Items: make([][]byte, len(ids))}}, "dtype bytes"},
	} {
		_, err := New(ctx, d.Scan(), Config{Rows: tc.rows, Joined: tc.joined})
		require.ErrorIs(t, err, loch.ErrInvalidArgument, name)
		require.ErrorContains(t, err, tc.msg, name)
	}
	_, err := NewMix(ctx, []*loch.Scan{d.Scan(), d.Scan()}, []float64{1, 1}, 0, Config{Joined: joined})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
}
