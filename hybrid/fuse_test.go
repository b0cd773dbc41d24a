package hybrid_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/hybrid"
	"github.com/lochdata/loch/vector"
)

// The lists of the hand-computed examples: rows 10, 20, 30 nearest first
// at distances 0.1, 0.3, 0.5; rows 30, 40, 10 best first at BM25 4, 2, 1.
var (
	handVec  = []vector.Hit{{RowID: 10, Distance: 0.1}, {RowID: 20, Distance: 0.3}, {RowID: 30, Distance: 0.5}}
	handText = []fts.Hit{{RowID: 30, Score: 4}, {RowID: 40, Score: 2}, {RowID: 10, Score: 1}}
)

// scores returns the hits' row ids and fused scores.
func scores(hs []hybrid.Hit) ([]uint64, []float64) {
	ids, ss := make([]uint64, len(hs)), make([]float64, len(hs))
	for i, h := range hs {
		ids[i], ss[i] = h.RowID, h.Score
	}
	return ids, ss
}

func TestFuseRRFHandComputed(t *testing.T) {
	hs, err := hybrid.Fuse(handVec, handText, 0, hybrid.Fusion{})
	require.NoError(t, err)
	ids, ss := scores(hs)
	// 10: 1/61 + 1/63 = 0.032267; 30: 1/63 + 1/61 (the same: rank 1 in
	// text, 3 in vector) then 10 first by row id; 20: 1/62; 40: 1/62.
	require.Equal(t, []uint64{10, 30, 20, 40}, ids)
	require.InDeltaSlice(t, []float64{0.0322664, 0.0322664, 0.0161290, 0.0161290}, ss, 1e-6)
	require.Equal(t, hybrid.Hit{RowID: 10, Score: ss[0], VectorRank: 1, Distance: 0.1, TextRank: 3, TextScore: 1}, hs[0])
	require.Equal(t, hybrid.Hit{RowID: 40, Score: ss[3], TextRank: 2, TextScore: 2}, hs[3])

	// rrf_k = 1, the text list without row 10: 30: 1/4 + 1/2, 10: 1/2,
	// 20 and 40: 1/3 (20 first by row id); k = 3 keeps the first three.
	hs, err = hybrid.Fuse(handVec, handText[:2], 3, hybrid.RRF(1))
	require.NoError(t, err)
	ids, ss = scores(hs)
	require.Equal(t, []uint64{30, 10, 20}, ids)
	require.InDeltaSlice(t, []float64{0.75, 0.5, 1.0 / 3}, ss, 1e-12)
}

func TestFuseWeightedHandComputed(t *testing.T) {
	// Min-max: vector 10: 1, 20: 0.5, 30: 0 (distance inverted);
	// text 30: 1, 40: 1/3, 10: 0.
	hs, err := hybrid.Fuse(handVec, handText, 0, hybrid.Weighted(0.7))
	require.NoError(t, err)
	ids, ss := scores(hs)
	// 10: 0.7, 20: 0.35, 30: 0.3, 40: 0.1
	require.Equal(t, []uint64{10, 20, 30, 40}, ids)
	require.InDeltaSlice(t, []float64{0.7, 0.35, 0.3, 0.1}, ss, 1e-7)

	hs, err = hybrid.Fuse(handVec, handText, 2, hybrid.Weighted(0.2))
	require.NoError(t, err)
	ids, ss = scores(hs)
	// 30: 0.8, 40: 0.8/3, 10: 0.2, 20: 0.1
	require.Equal(t, []uint64{30, 40}, ids)
	require.InDeltaSlice(t, []float64{0.8, 0.8 / 3}, ss, 1e-7)
}

func TestFuseOneSide(t *testing.T) {
	// One list alone keeps its order, whatever the method.
	for _, f := range []hybrid.Fusion{{}, hybrid.Weighted(0), hybrid.Weighted(1)} {
		hs, err := hybrid.Fuse(handVec, nil, 0, f)
		require.NoError(t, err)
		ids, _ := scores(hs)
		require.Equal(t, []uint64{10, 20, 30}, ids, "%+v", f)
		hs, err = hybrid.Fuse(nil, handText, 0, f)
		require.NoError(t, err)
		ids, _ = scores(hs)
		require.Equal(t, []uint64{30, 40, 10}, ids, "%+v", f)
	}
	// A list of equal scores normalises to 1.
	hs, err := hybrid.Fuse(nil, []fts.Hit{{RowID: 5, Score: 2}, {RowID: 6, Score: 2}}, 0, hybrid.Weighted(0.5))
	require.NoError(t, err)
	_, ss := scores(hs)
	require.Equal(t, []float64{0.5, 0.5}, ss)
}

func TestFuseBadFusion(t *testing.T) {
	for _, f := range []hybrid.Fusion{{Method: "max"}, hybrid.Weighted(1.5), hybrid.Weighted(-0.1), hybrid.RRF(-1)} {
		_, err := hybrid.Fuse(handVec, handText, 0, f)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, "%+v", f)
	}
	_, err := hybrid.ParseFusion("sum", 0, 0)
	require.ErrorContains(t, err, `fusion "sum", want rrf or weighted`)
	f, err := hybrid.ParseFusion("", 0, 0)
	require.NoError(t, err)
	require.Equal(t, hybrid.MethodRRF, f.Method)
}
