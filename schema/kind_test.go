package schema

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestKindRulesHoldForColumnsAndSamples: every kind has a rule, and a
// shape that breaks a kind's rule is refused alike as a column's declared
// shape and as a sample's shape, with the same "want" phrase.
func TestKindRulesHoldForColumnsAndSamples(t *testing.T) {
	for _, k := range Kinds() {
		_, ok := kindRules[k]
		require.True(t, ok, "kind %s has no rule", k)
	}
	for _, tc := range []struct {
		kind      Kind
		dtype     DType
		good, bad Shape
	}{
		{Image, Uint8, Shape{8, 6, 3}, Shape{8, 6, 2}},
		{Video, Uint8, Shape{2, 8, 6, 3}, Shape{8, 6, 3}},
		{Audio, Float32, Shape{100, 2}, Shape{1, 100, 2}},
		{ClassLabel, Int64, Shape{}, Shape{2, 2}},
		{BBox, Float32, Shape{5, 4}, Shape{5, 5}},
		{Mask, Bool, Shape{8, 6}, Shape{8}},
		{Embedding, Float32, Shape{16}, Shape{4, 4}},
		{PointCloud, Float32, Shape{100, 3}, Shape{100, 2}},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			want := fmt.Sprintf("shape %v, want %s", tc.bad, kindRules[tc.kind].shapeWant)
			declared := Column{Name: "c", Kind: tc.kind, DType: tc.dtype, Shape: tc.bad}
			require.ErrorIs(t, declared.Normalize(), ErrInvalid)
			require.ErrorContains(t, declared.Normalize(), want)

			free := Column{Name: "c", Kind: tc.kind, DType: tc.dtype}
			require.NoError(t, free.Normalize())
			require.NoError(t, free.CheckSample(tc.good, nil))
			err := free.CheckSample(tc.bad, nil)
			require.ErrorIs(t, err, ErrInvalid)
			require.ErrorContains(t, err, want)

			ok := Column{Name: "c", Kind: tc.kind, DType: tc.dtype, Shape: tc.good}
			require.NoError(t, ok.Normalize())
		})
	}
}
