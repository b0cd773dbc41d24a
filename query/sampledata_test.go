package query

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestSampleData: with Options.SampleData the STRUCT of a video, an audio
// and a large tensor column ends with data, the sample as ReadEncoded
// returns it (NULL rows: a NULL STRUCT); without it the STRUCT has no
// data field.
func TestSampleData(t *testing.T) {
	tensor := make([]int16, 80*60)
	for i := range tensor {
		tensor[i] = int16(i - 300)
	}
	d := mediaDataset(t, []schema.Column{{Name: "t", Kind: schema.Generic, DType: schema.Int16, Shape: schema.Shape{80, 60}}},
		loch.Row{"t": loch.Tensor([]int{80, 60}, tensor)})

	structs := func(opts Options) [][]any {
		e, err := New(ctx, d, opts)
		require.NoError(t, err)
		defer e.Close()
		rows, done, err := e.Rows(ctx, "SELECT clip, sound, t FROM ds ORDER BY _pos")
		require.NoError(t, err)
		defer done()
		var out [][]any
		for rows.Next() {
			var c, s, x any
			require.NoError(t, rows.Scan(&c, &s, &x))
			out = append(out, []any{c, s, x})
		}
		require.NoError(t, rows.Err())
		return out
	}
	got := structs(Options{SampleData: true})
	require.Len(t, got, 2)
	for i, col := range []string{"clip", "sound", "t"} {
		r, err := d.Column(col)
		require.NoError(t, err)
		s, err := r.ReadEncoded(ctx, 0)
		require.NoError(t, err)
		m := got[0][i].(map[string]any)
		require.Equal(t, s.Data, m[SampleDataField], col)
		require.Nil(t, got[1][i], col)
	}
	require.Equal(t, "int16", got[0][2].(map[string]any)["dtype"])
	require.Len(t, got[0][2].(map[string]any)[SampleDataField], 2*80*60)

	plain := structs(Options{})
	for i := range 3 {
		require.NotContains(t, plain[0][i].(map[string]any), SampleDataField)
	}
}
