package chunk

import (
	"testing"

	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

// TestRunsEncodeAsAdds: AddFixed and AddVar make the chunk that the same
// samples added one by one make, with and without nulls, and after
// samples added before (of the same or another shape).
func TestRunsEncodeAsAdds(t *testing.T) {
	fixed := []byte{1, 0, 2, 0, 3, 0, 4, 0, 5, 0}
	text := []byte("ab" + "" + "cde" + "" + "fghi")
	offs := []int{0, 2, 2, 5, 5, 9}
	cases := []struct {
		name  string
		dtype schema.DType
		pre   []sample // added one by one first
		nulls []bool
	}{
		{"fixed", schema.Int16, nil, nil},
		{"fixed with nulls", schema.Int16, nil, []bool{false, true, false, false, true}},
		{"fixed, first null", schema.Int16, nil, []bool{true, false, false, false, false}},
		{"fixed after others", schema.Int16, []sample{{shape: []int{}, data: []byte{9, 9}}}, nil},
		{"text", schema.Text, nil, nil},
		{"text with nulls", schema.Text, nil, []bool{false, true, false, true, false}},
		{"text after others", schema.Text, []sample{{shape: []int{2}, data: []byte("zz")}, {null: true, shape: []int{0}}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			one, run := NewBuilder(tc.dtype, 0, 0, 0), NewBuilder(tc.dtype, 0, 0, 0)
			for _, s := range tc.pre {
				require.NoError(t, one.Add(s.shape, s.data, s.null))
				require.NoError(t, run.Add(s.shape, s.data, s.null))
			}
			for i := range 5 {
				null := tc.nulls != nil && tc.nulls[i]
				if tc.dtype.Variable() {
					require.NoError(t, one.Add([]int{offs[i+1] - offs[i]}, text[offs[i]:offs[i+1]], null))
				} else {
					require.NoError(t, one.Add([]int{}, fixed[2*i:2*i+2], null))
				}
			}
			if tc.dtype.Variable() {
				require.NoError(t, run.AddVar(text, offs, tc.nulls))
			} else {
				require.NoError(t, run.AddFixed([]int{}, fixed, 5, tc.nulls))
			}
			want, err := one.Encode()
			require.NoError(t, err)
			got, err := run.Encode()
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}

func TestRunsRefuseBadInput(t *testing.T) {
	b := NewBuilder(schema.Int32, 0, 0, 0)
	require.ErrorContains(t, b.AddFixed([]int{}, make([]byte, 7), 2, nil), "2 samples in 7 bytes")
	require.ErrorContains(t, b.AddFixed([]int{}, make([]byte, 8), 2, []bool{false}), "1 null flags")
	v := NewBuilder(schema.Text, 0, 0, 0)
	require.ErrorContains(t, v.AddVar([]byte("abc"), []int{0, 2, 5}, nil), "last offset 5")
	require.ErrorContains(t, v.AddVar([]byte("abcd"), []int{0, 1, 3}, []bool{false, true}), "null but has 2 bytes")
}
