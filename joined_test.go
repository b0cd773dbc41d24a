package loch

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// joinedFixture is one joined column of every form: int64 class labels
// with a null, float32 arrays, text with a null, json.
func joinedFixture() []JoinedColumn {
	labels := make([]byte, 3*8)
	binary.LittleEndian.PutUint64(labels[0:], 1)
	binary.LittleEndian.PutUint64(labels[16:], 0)
	vec := make([]byte, 3*2*4)
	for i := range 6 {
		binary.LittleEndian.PutUint32(vec[i*4:], math.Float32bits(float32(i)+0.5))
	}
	return []JoinedColumn{
		{Name: "label", DType: schema.Int64, ClassNames: []string{"cat", "dog"}, Data: labels, Null: []bool{false, true, false}},
		{Name: "vec", DType: schema.Float32, Shape: []int{2}, Data: vec},
		{Name: "note", DType: schema.Text, Items: [][]byte{[]byte("a"), nil, []byte("ü")}},
		{Name: "meta", DType: schema.JSON, Items: [][]byte{[]byte(`{"q":1}`), []byte(`[]`), []byte(`"x"`)}},
	}
}

// TestJoinedSelection: a selection with joined columns saves and reads
// back equal, written with minor version 4; one without is written with
// minor version 2, as before; verify reads it.
func TestJoinedSelection(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	m := &model{}
	v := gcAppend(t, d, m, gcRows(0, 10))
	s := &Selection{Version: v, SQL: "SELECT f._rowid, l.label FROM ...", RowIDs: []uint64{m.ids[9], m.ids[2], m.ids[5]}, Joined: joinedFixture()}
	require.NoError(t, d.SaveSelection(ctx, "joined", s))
	got, err := d.Selection(ctx, "joined")
	require.NoError(t, err)
	require.Equal(t, s, got)
	require.NoError(t, d.SaveSelection(ctx, "plain", &Selection{Version: v, SQL: "x", RowIDs: []uint64{m.ids[1]}}))

	minors := map[string]byte{}
	infos, err := d.Selections(ctx)
	require.NoError(t, err)
	for _, info := range infos {
		obj, err := d.store.Get(ctx, info.Key)
		require.NoError(t, err)
		minors[info.Name] = obj[6]
	}
	require.Equal(t, map[string]byte{"joined": 4, "plain": 2}, minors)
	requireVerified(t, d)

	// Wrong row counts, bad names and duplicates are refused.
	for name, j := range map[string][]JoinedColumn{
		"count":  {{Name: "n", DType: schema.Int64, Data: make([]byte, 16)}},
		"hidden": {{Name: "_rowid", DType: schema.Int64, Data: make([]byte, 24)}},
		"twice":  {{Name: "n", DType: schema.Bool, Data: make([]byte, 3)}, {Name: "N", DType: schema.Bool, Data: make([]byte, 3)}},
		"bytes":  {{Name: "b", DType: schema.Bytes, Items: make([][]byte, 3)}},
	} {
		err := d.SaveSelection(ctx, "bad-"+name, &Selection{Version: v, RowIDs: s.RowIDs, Joined: j})
		require.ErrorIs(t, err, ErrInvalidArgument, name)
	}
}

// TestJoinedCorrupt: a stored selection whose joined columns contradict
// its rows is ErrCorrupt, naming the object.
func TestJoinedCorrupt(t *testing.T) {
	d, _ := mustCreate(t, gcSchema)
	m := &model{}
	v := gcAppend(t, d, m, gcRows(0, 4))
	raw, err := json.Marshal(joinedFixture())
	require.NoError(t, err)
	obj := manifest.Selection{Version: v, SQL: "x", Rows: 2, RowIDs: manifest.EncodeRowIDs(m.ids[:2]), Joined: raw}
	key, err := d.putObject(ctx, keys.Selection, manifest.KindSelection, obj)
	require.NoError(t, err)
	_, _, err = decodeSelection(obj)
	require.ErrorIs(t, err, ErrCorrupt)
	hash := key[len(keys.Selection.Prefix()):]
	_, err = d.updateRoot(ctx, "test", func(_, next *manifest.Root) error {
		next.Refs[selectionsPrefix+"bad"] = hash
		return nil
	})
	require.NoError(t, err)
	_, err = d.Selection(ctx, "bad")
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "has 3 values for 2 rows")
}

// TestJoinedJSONRefuses: each malformed form of docs/format.md §2.7 is
// refused with ErrInvalidArgument.
func TestJoinedJSONRefuses(t *testing.T) {
	for name, js := range map[string]string{
		"dtype":            `{"name":"a","dtype":"bytes","items":[]}`,
		"unknown dtype":    `{"name":"a","dtype":"int3"}`,
		"no name":          `{"name":"","dtype":"int64"}`,
		"data length":      `{"name":"a","dtype":"int64","data":"AAAA"}`,
		"shape on text":    `{"name":"a","dtype":"text","shape":[2],"items":["x"]}`,
		"data on text":     `{"name":"a","dtype":"text","data":"AA==","items":["x"]}`,
		"items on numbers": `{"name":"a","dtype":"int8","items":["x"]}`,
		"zero dimension":   `{"name":"a","dtype":"int8","shape":[0]}`,
		"huge shape":       `{"name":"a","dtype":"int8","shape":[1048576,2]}`,
		"nine dimensions":  `{"name":"a","dtype":"int8","shape":[1,1,1,1,1,1,1,1,1]}`,
		"bitmap length":    `{"name":"a","dtype":"int8","data":"AAA=","nulls":"AAA="}`,
		"bitmap padding":   `{"name":"a","dtype":"int8","data":"AAA=","nulls":"/w=="}`,
		"bad json item":    `{"name":"a","dtype":"json","items":["{"]}`,
		"class names":      `{"name":"a","dtype":"int32","class_names":["x"]}`,
		"bad base64":       `{"name":"a","dtype":"int8","data":"!!"}`,
	} {
		var c JoinedColumn
		err := json.Unmarshal([]byte(js), &c)
		require.ErrorIs(t, err, ErrInvalidArgument, name)
	}
}

// FuzzJoinedColumn: the decoder never panics, refuses with
// ErrInvalidArgument, never holds more values than it decoded bytes for,
// and what it accepts encodes back to itself.
func FuzzJoinedColumn(f *testing.F) {
	for _, c := range joinedFixture() {
		b, err := json.Marshal(c)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(`{"name":"a","dtype":"int8","shape":[1048576],"data":""}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c JoinedColumn
		if err := c.UnmarshalJSON(b); err != nil {
			require.ErrorIs(t, err, ErrInvalidArgument)
			return
		}
		require.NoError(t, c.Check())
		require.LessOrEqual(t, len(c.Null), len(b)*8)
		require.LessOrEqual(t, len(c.Items), len(b))
		again, err := json.Marshal(c)
		require.NoError(t, err)
		var c2 JoinedColumn
		require.NoError(t, json.Unmarshal(again, &c2))
		require.Equal(t, c.Rows(), c2.Rows())
		for i := range c.Rows() {
			require.Equal(t, c.IsNull(i), c2.IsNull(i))
		}
	})
}
