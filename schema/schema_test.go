package schema

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseForms(t *testing.T) {
	yaml := `
columns:
  - {name: image, kind: image, sample_compression: png}
  - {name: label, kind: class_label, class_names: [cat, dog]}
  - {name: angles, dtype: float32, shape: [7]}
  - {name: boxes, kind: bbox, shape: [null, 4]}
`
	s, err := Parse([]byte(yaml))
	require.NoError(t, err)
	require.Equal(t, []string{"image", "label", "angles", "boxes"}, s.Names())
	img, _ := s.Column("image")
	require.Equal(t, Uint8, img.DType)
	require.Equal(t, CodecNone, img.ChunkCompression)
	boxes, _ := s.Column("boxes")
	require.Equal(t, Shape{-1, 4}, boxes.Shape)
	require.Equal(t, BBoxXYXY, boxes.BBoxFormat)

	js := `[{"name": "t", "kind": "text"}, {"name": "x", "dtype": "int16", "shape": []}]`
	s, err = Parse([]byte(js))
	require.NoError(t, err)
	x, _ := s.Column("x")
	require.NotNil(t, x.Shape, "an empty shape (scalar) is not 'any shape'")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back Schema
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, s, back)
}

func TestParseErrors(t *testing.T) {
	cases := map[string]string{
		`[{"name": "a", "dtype": "float33"}]`:                              `column 1 ("a"): unknown dtype "float33"`,
		`[{"name": "a", "dtype": "uint8", "kind": "imagee"}]`:              `unknown kind "imagee"`,
		`[{"name": "a", "kind": "image", "dtype": "int64"}]`:               `dtype int64, want uint8`,
		`[{"name": "a b", "dtype": "int8"}]`:                               `column name "a b"`,
		`[{"name": "a", "dtype": "int8"}, {"name": "a", "dtype": "int8"}]`: `appears twice`,
		`[{"name": "a", "kind": "bbox", "shape": [3, 5]}]`:                 `want [boxes, 4]`,
		`[{"name": "a", "dtype": "int8", "colour": 1}]`:                    `unknown field "colour"`,
		`[]`: `no columns`,
		// values of the wrong kind are named by field and kind, not by Go type
		`"hello"`:        `the document is a string, want an object`,
		`{"columns": 5}`: `field "columns" is a number, want a list`,
		`[{"name": "a", "kind": "class_label", "class_names": 5}]`:                                  `column 1 ("a"): field "class_names" is a number, want a list`,
		`[{"name": "a", "kind": "image", "sample_compression": "png", "chunk_compression": "lz4"}]`: `exclusive`,
	}
	for in, want := range cases {
		_, err := Parse([]byte(in))
		require.ErrorIs(t, err, ErrInvalid, in)
		require.Contains(t, err.Error(), want, in)
		require.NotContains(t, err.Error(), "Go ", in)
	}
}

func TestCheckSample(t *testing.T) {
	c := Column{Name: "l", Kind: ClassLabel, ClassNames: []string{"a", "b"}}
	require.NoError(t, c.Normalize())
	require.NoError(t, c.CheckSample([]int{}, []byte{1, 0, 0, 0, 0, 0, 0, 0}))
	require.ErrorContains(t, c.CheckSample([]int{}, []byte{2, 0, 0, 0, 0, 0, 0, 0}), "out of range")
	img := Column{Name: "i", Kind: Image}
	require.NoError(t, img.Normalize())
	require.ErrorContains(t, img.CheckSample([]int{2, 2, 2}, make([]byte, 8)), "want [height, width, 1|3|4]")
	j := Column{Name: "j", Kind: JSONKind}
	require.NoError(t, j.Normalize())
	require.ErrorContains(t, j.CheckSample([]int{3}, []byte("{x}")), "not valid JSON")
}

func TestStatsMerge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		s, o     Stats
		min, max []int
	}{
		{"empty takes the other's", Stats{}, Stats{MinShape: []int{2, 3}, MaxShape: []int{4, 3}, Samples: 2}, []int{2, 3}, []int{4, 3}},
		{"widens", Stats{MinShape: []int{2, 3}, MaxShape: []int{4, 3}}, Stats{MinShape: []int{1, 5}, MaxShape: []int{1, 9}}, []int{1, 3}, []int{4, 9}},
		{"nothing to merge", Stats{MinShape: []int{2}, MaxShape: []int{2}}, Stats{Samples: 0}, []int{2}, []int{2}},
		{"another rank is left out", Stats{MinShape: []int{2}, MaxShape: []int{2}}, Stats{MinShape: []int{1, 1}, MaxShape: []int{1, 1}}, []int{2}, []int{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			s.Samples, s.RawBytes, s.StoredBytes = 1, 10, 5
			o := tc.o
			o.RawBytes, o.StoredBytes = 7, 3
			s.Merge(o)
			require.Equal(t, tc.min, s.MinShape)
			require.Equal(t, tc.max, s.MaxShape)
			require.Equal(t, 1+tc.o.Samples, s.Samples)
			require.EqualValues(t, 17, s.RawBytes)
			require.EqualValues(t, 8, s.StoredBytes)
			if o.MinShape != nil && tc.s.MinShape == nil {
				o.MinShape[0] = -1
				require.NotEqual(t, -1, s.MinShape[0], "taken bounds are copies")
			}
		})
	}
}

func TestEntryJSONIsFlat(t *testing.T) {
	c := Entry{Column{Name: "x", DType: Float32, Shape: Shape{3}}, Stats{MinShape: []int{3}, MaxShape: []int{3}, Samples: 4}}
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.Equal(t, `{"name":"x","dtype":"float32","shape":[3],"min_shape":[3],"max_shape":[3],"samples":4}`, string(b))
	var back Entry
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, c, back)
	b, err = json.Marshal(c.Column)
	require.NoError(t, err)
	require.Equal(t, `{"name":"x","dtype":"float32","shape":[3]}`, string(b), "a definition has no statistics")
}

func TestColumnEqual(t *testing.T) {
	c := Column{UID: 1, Name: "x", DType: Int64, Kind: ClassLabel, Shape: Shape{}, ClassNames: []string{"a"}, ChunkBytes: 1024}
	for _, tc := range []struct {
		name string
		o    func(*Column)
		want bool
	}{
		{"same", func(*Column) {}, true},
		{"shape", func(o *Column) { o.Shape = Shape{2} }, false},
		{"class names", func(o *Column) { o.ClassNames = []string{"b"} }, false},
		{"chunk bytes", func(o *Column) { o.ChunkBytes = 2048 }, false},
		{"uid", func(o *Column) { o.UID = 2 }, false},
		{"bbox format", func(o *Column) { o.BBoxFormat = BBoxXYWH }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := c
			o.ClassNames = slices.Clone(c.ClassNames)
			tc.o(&o)
			require.Equal(t, tc.want, c.Equal(o))
			require.Equal(t, tc.want, o.Equal(c))
		})
	}
}

// TestColumnKeys: key and serial columns are integer or text scalars (a
// serial one an integer), at most one primary key per schema.
func TestColumnKeys(t *testing.T) {
	for _, tc := range []struct {
		col Column
		ok  bool
	}{
		{Column{Name: "id", DType: Int64, Shape: Shape{}, Key: KeyPrimary, Serial: true}, true},
		{Column{Name: "name", DType: Text, Kind: TextKind, Key: KeyUnique}, true},
		{Column{Name: "n", DType: Int32, Shape: Shape{}, Serial: true}, true},
		{Column{Name: "f", DType: Float32, Shape: Shape{}, Key: KeyUnique}, false},
		{Column{Name: "v", DType: Int64, Shape: Shape{3}, Key: KeyUnique}, false},
		{Column{Name: "t", DType: Text, Kind: TextKind, Serial: true}, false},
		{Column{Name: "x", DType: Int64, Shape: Shape{}, Key: "foreign"}, false},
	} {
		s := Schema{Columns: []Column{tc.col}}
		err := s.Normalize()
		if tc.ok {
			require.NoError(t, err, tc.col.Name)
		} else {
			require.ErrorIs(t, err, ErrInvalid, tc.col.Name)
		}
	}
	two := Schema{Columns: []Column{
		{Name: "a", DType: Int64, Shape: Shape{}, Key: KeyPrimary},
		{Name: "b", DType: Int64, Shape: Shape{}, Key: KeyPrimary}}}
	require.ErrorContains(t, two.Normalize(), "at most one")
}
