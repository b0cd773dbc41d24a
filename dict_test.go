package loch

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/schema"
)

// TestDictChunks writes text and json columns of few distinct values
// (with nulls and empty strings) in every codec, checks that the writer
// stored them in dictionary chunks (docs/format.md §3.3), and that every
// read path gives back every row: Column reads one by one and by range,
// Scan plans dense (whole chunks) and sparse (spans read by range), the
// whole fetched chunk's samples and its dictionary indices, and
// SampleInfo's shapes.
func TestDictChunks(t *testing.T) {
	cols := []schema.Column{
		{Name: "label", Kind: schema.TextKind, ChunkCompression: schema.LZ4, ChunkBytes: 4096},
		{Name: "meta", Kind: schema.JSONKind, ChunkCompression: schema.Zstd, ChunkBytes: 8192},
		{Name: "plain", Kind: schema.TextKind, ChunkBytes: 2048},
	}
	d, _ := mustCreate(t, schema.Schema{Columns: cols})
	r := rand.New(rand.NewPCG(1, 2))
	labels := []string{"", "cat", "dog", "a longer label than twelve bytes"}
	var want []Row
	for i := range 3000 {
		row := Row{
			"label": String(labels[r.IntN(len(labels))]),
			"meta":  mustJSON(t, map[string]any{"src": string("abc"[i%3]), "q": i % 10}),
			"plain": String(fmt.Sprintf("class-%02d", r.IntN(20))),
		}
		if r.IntN(9) == 0 {
			row["meta"] = Null()
		}
		want = append(want, row)
	}
	require.NoError(t, d.Extend(ctx, want))
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)

	sc := loadedScan(t, d, 4)
	for _, c := range sc.Schema().Columns {
		ids := sc.Chunks(c.UID)
		require.Greater(t, len(ids), 2, "column %s", c.Name)
		for _, id := range ids {
			f, err := sc.Fetch(ctx, Read{Chunk: id})
			require.NoError(t, err)
			require.Positive(t, f.DictLen(), "column %s: a dictionary chunk", c.Name)
			idx, ok := f.DictRun(0, f.Len(), nil)
			require.True(t, ok)
			for j, k := range idx {
				data, null, err := f.Data(j)
				require.NoError(t, err)
				require.Equal(t, null, k < 0)
				if k >= 0 {
					require.Equal(t, data, f.Entry(int(k)))
				}
				s, err := f.At(j)
				require.NoError(t, err)
				require.True(t, bytes.Equal(data, s.Data))
			}
		}
		col := mustColumn(t, d, c.Name)
		all, err := col.ReadRange(ctx, 0, d.Len())
		require.NoError(t, err)
		for p := range sc.Len() {
			w := want[p][c.Name]
			got, err := col.Read(ctx, p, nil)
			require.NoError(t, err)
			loc, err := sc.Locate(p)
			require.NoError(t, err)
			shape, stored, err := sc.SampleInfo(ctx, sc.Slot(loc, c.UID))
			require.NoError(t, err)
			if w.Null {
				require.Nil(t, shape)
			} else {
				require.Equal(t, []int{len(w.Data)}, shape, "column %s row %d", c.Name, p)
				require.EqualValues(t, len(w.Data), stored)
			}
			dense, _ := scanSample(t, sc, p, c.UID, false)
			sparse, _ := scanSample(t, sc, p, c.UID, true)
			for _, g := range []Sample{got, all[p], dense, sparse} {
				require.Equal(t, w.Null, g.Null, "column %s row %d", c.Name, p)
				if !w.Null {
					require.Equal(t, string(w.Data), string(g.Data), "column %s row %d", c.Name, p)
					require.Equal(t, []int{len(w.Data)}, g.Shape)
				}
			}
		}
	}
	n, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
	require.Positive(t, n)
}

func mustJSON(t *testing.T, v any) Sample {
	s, err := JSON(v)
	require.NoError(t, err)
	return s
}
