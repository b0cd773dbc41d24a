package sqlcat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

// joinedLake makes frames (id, episode_id, x) and labels (episode_id,
// label, note, w, v, meta): frame i is of episode i % 7; episode e is
// labelled dog when e is odd, noted "e<e>" (NULL for 0), weighed e/4,
// with v = [e, e+1, e+2] and meta {"e": e}; episode 6 has no label.
func joinedLake(t *testing.T) *Session {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE frames (id BIGINT, episode_id BIGINT, x FLOAT[2])")
	run(t, s, "CREATE TABLE labels (episode_id BIGINT, label CLASS_LABEL('cat', 'dog'), note TEXT, w DOUBLE, v FLOAT[3], meta JSON)")
	run(t, s, "INSERT INTO frames SELECT i, i % 7, [i, -i] FROM range(100) r(i)")
	run(t, s, `INSERT INTO labels SELECT e, CASE WHEN e % 2 = 1 THEN 'dog' ELSE 'cat' END, CASE WHEN e > 0 THEN 'e' || e END,
		e / 4, [e, e + 1, e + 2], json_object('e', e) FROM range(6) r(e)`)
	return s
}

// TestJoinedSelect: a selection of a join carries the other table's
// columns and expressions, one value per row, with their types; the base
// table's columns stay its own; the selection saves and reads back.
func TestJoinedSelect(t *testing.T) {
	s := joinedLake(t)
	q := `SELECT f._rowid, f.id, f.x, l.label, l.note, l.w * 2 AS w2, l.v, l.meta FROM frames f JOIN labels l USING (episode_id) ORDER BY f.id DESC`
	sel, table, err := s.Select(ctx, q, nil, "frames")
	require.NoError(t, err)
	require.Equal(t, "frames", table)
	require.Equal(t, []string{"id", "x"}, sel.Columns)
	var names []string
	for _, c := range sel.Joined {
		names = append(names, c.Name)
		require.Equal(t, len(sel.RowIDs), c.Rows(), c.Name)
	}
	require.Equal(t, []string{"label", "note", "w2", "v", "meta"}, names)
	label, note, w2, v, meta := sel.Joined[0], sel.Joined[1], sel.Joined[2], sel.Joined[3], sel.Joined[4]
	require.Equal(t, schema.Int64, label.DType)
	require.Equal(t, []string{"cat", "dog"}, label.ClassNames)
	require.Equal(t, schema.Text, note.DType)
	require.Equal(t, schema.Float64, w2.DType)
	require.Equal(t, schema.Float32, v.DType)
	require.Equal(t, []int{3}, v.Shape)
	require.Equal(t, schema.JSON, meta.DType)

	// Rows in result order: ids 98, 97, ... of episodes 0..5.
	var ids []int64
	for id := int64(99); id >= 0; id-- {
		if id%7 != 6 {
			ids = append(ids, id)
		}
	}
	require.Len(t, sel.RowIDs, len(ids))
	for k, id := range ids {
		e := id % 7
		require.EqualValues(t, e%2, binary.LittleEndian.Uint64(label.Data[8*k:]), "row %d", k)
		if e == 0 {
			require.True(t, note.IsNull(k))
		} else {
			require.Equal(t, fmt.Sprintf("e%d", e), string(note.Items[k]))
		}
		require.Equal(t, float64(e)/2, math.Float64frombits(binary.LittleEndian.Uint64(w2.Data[8*k:])))
		for j := range 3 {
			require.Equal(t, float32(e+int64(j)), math.Float32frombits(binary.LittleEndian.Uint32(v.Data[12*k+4*j:])))
		}
		require.JSONEq(t, fmt.Sprintf(`{"e": %d}`, e), string(meta.Items[k]))
	}

	d, err := s.cat.OpenTable(ctx, "frames")
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.SaveSelection(ctx, "joined", sel))
	back, err := d.Selection(ctx, "joined")
	require.NoError(t, err)
	require.Equal(t, sel.Joined, back.Joined)

	// f.* is the base table's columns; an expression over the base table
	// is carried too.
	sel, _, err = s.Select(ctx, "SELECT f.*, l.label FROM frames f JOIN labels l USING (episode_id)", nil, "frames")
	require.NoError(t, err)
	require.Nil(t, sel.Columns)
	require.Len(t, sel.Joined, 1)
	sel, _, err = s.Select(ctx, "SELECT id, id * 10 AS tenfold FROM frames WHERE id < 3", nil, "")
	require.NoError(t, err)
	require.Equal(t, []string{"id"}, sel.Columns)
	require.Equal(t, "tenfold", sel.Joined[0].Name)
	require.Equal(t, []int64{0, 10, 20}, int64s(sel.Joined[0].Data))
}

func int64s(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// TestJoinedRefused: a joined column named like a base column or like
// another result column, an unqualified * over a join, and types a
// selection cannot carry are refused with a message naming the column.
func TestJoinedRefused(t *testing.T) {
	s := joinedLake(t)
	for q, msg := range map[string]string{
		"SELECT f._rowid, l.label AS x FROM frames f JOIN labels l USING (episode_id)":                 `result column "x" is not frames's own column x`,
		"SELECT f._rowid, f.id, l.episode_id + 1 AS id FROM frames f JOIN labels l USING (episode_id)": `result column "id" is not frames's own column`,
		"SELECT f._rowid, l.w AS a, l.note AS a FROM frames f JOIN labels l USING (episode_id)":        `two columns named "a"`,
		"SELECT * FROM frames f JOIN (VALUES (1, 'a')) v(episode_id, tag) USING (episode_id)":          "an unqualified * mixes the tables' columns",
		"SELECT f._rowid, DATE '2020-01-01' AS d FROM frames f JOIN labels l USING (episode_id)":       `result column "d" is DATE`,
		"SELECT f._rowid, [1, 2] AS lst FROM frames f JOIN labels l USING (episode_id)":                "a LIST, of variable length",
		"SELECT f._rowid, 1::HUGEINT AS h FROM frames f JOIN labels l USING (episode_id)":              `result column "h" is HUGEINT`,
		"SELECT f._rowid, 'x'::BLOB AS b FROM frames f JOIN labels l USING (episode_id)":               `result column "b" is BLOB`,
	} {
		_, _, err := s.Select(ctx, q, nil, "frames")
		require.ErrorIs(t, err, loch.ErrInvalidArgument, q)
		require.ErrorContains(t, err, msg, q)
	}
}

// TestJoinedLoader: the loader over a join's selection delivers each
// row's joined values with the row under every world size from 1 to 8,
// covering the selection exactly, and resumes elastically.
func TestJoinedLoader(t *testing.T) {
	s := joinedLake(t)
	q := "SELECT f._rowid, f.x, l.label, l.note FROM frames f JOIN labels l USING (episode_id) WHERE f.id % 3 <> 0 ORDER BY random()"
	seed := uint64(2)
	sel, _, err := s.Select(ctx, q, &seed, "frames")
	require.NoError(t, err)
	d, err := s.cat.OpenTable(ctx, "frames", loch.WithVersion(sel.Version))
	require.NoError(t, err)
	defer d.Close()
	cfg := loader.Config{Columns: sel.Columns, BatchSize: 5, Shuffle: order.ModeFull, Seed: 1, Rows: sel.RowIDs, Joined: sel.Joined, Query: sel.SQL}
	check := func(b *loader.Batch, seen map[uint64]int) {
		for k, id := range b.RowIDs {
			seen[id]++
			// x = [i, -i] names the frame; its episode is i % 7.
			i := int64(math.Float32frombits(binary.LittleEndian.Uint32(b.Columns["x"].Data[8*k:])))
			e := i % 7
			require.EqualValues(t, e%2, binary.LittleEndian.Uint64(b.Columns["label"].Data[8*k:]), "frame %d", i)
			if e == 0 {
				require.Nil(t, b.Columns["note"].Items[k])
			} else {
				require.Equal(t, fmt.Sprintf("e%d", e), string(b.Columns["note"].Items[k]))
			}
		}
	}
	drainAll := func(l *loader.Loader, seen map[uint64]int, limit int) {
		for n := 0; limit < 0 || n < limit; n++ {
			b, err := l.Next(ctx)
			if errors.Is(err, io.EOF) {
				return
			}
			require.NoError(t, err)
			check(b, seen)
		}
	}
	for world := 1; world <= 8; world++ {
		seen := map[uint64]int{}
		for rank := range world {
			c := cfg
			c.WorldSize, c.Rank = world, rank
			l, err := loader.New(ctx, d.Scan(), c)
			require.NoError(t, err)
			drainAll(l, seen, -1)
			l.Close()
		}
		require.Len(t, seen, len(sel.RowIDs), "world %d", world)
	}
	// Saved on 2 ranks after 3 batches each, resumed on 3.
	seen := map[uint64]int{}
	var saved loader.State
	for rank := range 2 {
		c := cfg
		c.WorldSize, c.Rank = 2, rank
		l, err := loader.New(ctx, d.Scan(), c)
		require.NoError(t, err)
		drainAll(l, seen, 3)
		saved = l.State()
		l.Close()
	}
	for rank := range 3 {
		c := cfg
		st := saved
		c.WorldSize, c.Rank, c.Resume = 3, rank, &st
		l, err := loader.New(ctx, d.Scan(), c)
		require.NoError(t, err)
		drainAll(l, seen, -1)
		l.Close()
	}
	require.Len(t, seen, len(sel.RowIDs))
}
