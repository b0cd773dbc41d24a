package loader

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

func mixRun(t *testing.T, views []*loch.Scan, cfg Config) (batches []*Batch, st State) {
	l, err := NewMix(ctx, views, []float64{0.75, 0.25}, 400, cfg)
	require.NoError(t, err)
	defer l.Close()
	return drain(t, l), l.State()
}

// TestMixture draws from two datasets in proportion, deterministically,
// with every value coming from the dataset the batch says.
func TestMixture(t *testing.T) {
	a, b := testDataset(t, 120), testDataset(t, 50)
	views := []*loch.Scan{a.Scan(), b.Scan()}
	cfg := Config{BatchSize: 16, Shuffle: "block", Seed: 2, Columns: []string{"x", "label"}}
	bs, _ := mixRun(t, views, cfg)
	again, _ := mixRun(t, views, cfg)
	counts := [2]int{}
	for i, bt := range bs {
		require.Equal(t, again[i].Positions, bt.Positions)
		require.Equal(t, again[i].Datasets, bt.Datasets)
		for k, d := range bt.Datasets {
			counts[d]++
			ds := []*loch.Dataset{a, b}[d]
			col, _ := ds.Column("x")
			want, err := col.Read(ctx, bt.Positions[k], nil)
			require.NoError(t, err)
			x := bt.Columns["x"]
			per := len(x.Data) / bt.Len()
			require.Equal(t, want.Data, x.Data[k*per:(k+1)*per])
		}
	}
	require.Equal(t, 400, counts[0]+counts[1])
	require.Equal(t, 300, counts[0], "exact proportions over an epoch")

	// Resume after 5 batches gives the rest.
	l, err := NewMix(ctx, views, []float64{0.75, 0.25}, 400, cfg)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		_, err := l.Next(ctx)
		require.NoError(t, err)
	}
	st := l.State()
	l.Close()
	cfg.Resume = &st
	rest, _ := mixRun(t, views, cfg)
	require.Len(t, rest, len(bs)-5)
	for i, bt := range rest {
		require.Equal(t, bs[i+5].Positions, bt.Positions)
		require.Equal(t, bs[i+5].Datasets, bt.Datasets)
	}
}
