package fts

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBM25HandComputed checks scores against the formula worked by hand
// (docs/format.md §2.9: k1 = 1.2, b = 0.75, idf = ln(1 + (N - n + 0.5) /
// (n + 0.5))), with and without an index.
//
// Rows, as analysed: 0 "red car" (dl 2), 1 "red red truck" (dl 3),
// 2 "blue car car car" (dl 4), 3 "green bicycle" (dl 2, "bicycl").
// N = 4, tokens 11, avgdl = 2.75. Lengths under 24 are exact norms.
//
// "red": n = 2, idf = ln(1 + 2.5/2.5) = ln 2 = 0.693147.
//
//	row 0: tf 1, dl 2: 1 + 1.2 * (0.25 + 0.75*2/2.75) = 1.954545;
//	       2.2 / 1.954545 = 1.125581; x idf = 0.780194
//	row 1: tf 2, dl 3: 2 + 1.2 * (0.25 + 0.75*3/2.75) = 3.281818;
//	       4.4 / 3.281818 = 1.340720; x idf = 0.929316
//
// "car": n = 2, idf = ln 2.
//
//	row 0: 0.780194 as above
//	row 2: tf 3, dl 4: 3 + 1.2 * (0.25 + 0.75*4/2.75) = 4.609091;
//	       6.6 / 4.609091 = 1.431953; x idf = 0.992554
//
// "red car" (OR, scores summed): row 0 0.780194 * 2 = 1.560387, row 2
// 0.992554, row 1 0.929316.
//
// "bicycle": n = 1, idf = ln(1 + 3.5/1.5) = 1.203973; row 3: 1.125581
// x 1.203973 = 1.355169.
func TestBM25HandComputed(t *testing.T) {
	ds := newText(t, "Red car", "red, RED truck", "Blue car car car.", "green bicycles")
	commit(t, ds, "v1")
	check := func(name string) {
		for _, c := range []struct {
			q    string
			want []Hit
		}{
			{"red", []Hit{{1, 0.929316}, {0, 0.780194}}},
			{"car", []Hit{{2, 0.992554}, {0, 0.780194}}},
			{"red car", []Hit{{0, 1.560387}, {2, 0.992554}, {1, 0.929316}}},
			{"bicycle", []Hit{{3, 1.355169}}},
			{"the", nil},
			{"airplane", nil},
		} {
			got := search(t, ds, c.q, 10).Hits
			require.Len(t, got, len(c.want), "%s: %q", name, c.q)
			for i, h := range c.want {
				require.Equal(t, h.RowID, got[i].RowID, "%s: %q hit %d", name, c.q, i)
				require.InDelta(t, h.Score, got[i].Score, 1e-5, "%s: %q hit %d", name, c.q, i)
			}
		}
	}
	check("no index")
	info, err := Build(context.Background(), ds, "caption", BuildOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(4), info.Docs)
	require.Equal(t, int64(11), info.Tokens)
	require.Equal(t, info.Key, search(t, ds, "red", 1).Index)
	check("index")
	require.Len(t, search(t, ds, "red car", 1).Hits, 1)
}

func TestPhrase(t *testing.T) {
	ds := indexedText(t,
		"the red car is fast",  // 0
		"car red",              // 1
		"a red fast car",       // 2
		"red car, red car",     // 3
		"red a car",            // 4: "a" is a stop word, its place kept
		"red cars in the rain", // 5: "cars" stems to "car"
	)
	require.ElementsMatch(t, []uint64{0, 3, 5}, ids(search(t, ds, `"red car"`, 10).Hits))
	// A stop word in a phrase keeps its place and matches any word.
	require.ElementsMatch(t, []uint64{2, 4}, ids(search(t, ds, `"red the car"`, 10).Hits))
	require.ElementsMatch(t, []uint64{1, 3}, ids(search(t, ds, `"car red"`, 10).Hits)) // 3: "car, red"
	require.ElementsMatch(t, []uint64{0}, ids(search(t, ds, `"red car is fast"`, 10).Hits))
	// Row 3 holds the phrase twice; same length as row 5 would be: ranks first.
	require.Equal(t, uint64(3), search(t, ds, `"red car"`, 1).Hits[0].RowID)
}

func TestBoolean(t *testing.T) {
	ds := indexedText(t,
		"red car",         // 0
		"red fast car",    // 1
		"blue fast truck", // 2
		"green bicycle",   // 3
		"red bicycle",     // 4
	)
	for _, c := range []struct {
		q    string
		want []uint64
	}{
		{"red fast", []uint64{0, 1, 2, 4}},
		{"red OR fast", []uint64{0, 1, 2, 4}},
		{"red AND fast", []uint64{1}},
		{"red && fast", []uint64{1}},
		{"+red fast", []uint64{0, 1, 4}},
		{"red -car", []uint64{4}},
		{"red NOT car", []uint64{4}},
		{"red AND NOT car", []uint64{4}},
		{"(blue OR green) AND (truck OR bicycle)", []uint64{2, 3}},
		{`+"fast car" -blue`, []uint64{1}},
		{`"fast car" OR bicycle`, []uint64{1, 3, 4}},
		{"+bicycle +red", []uint64{4}},
		{"the AND red", []uint64{0, 1, 4}}, // a stop word matches nothing and constrains nothing
	} {
		got := ids(search(t, ds, c.q, 10).Hits)
		require.ElementsMatch(t, c.want, got, "%q", c.q)
	}
	// +red fast: rows with both rank above those with red alone.
	require.Equal(t, uint64(1), search(t, ds, "+red fast", 1).Hits[0].RowID)
	for _, bad := range []string{`"red car`, "red)", "(red", "NOT red", "-red", "red AND", "red OR -car", "AND"} {
		_, err := Search(context.Background(), ds, "caption", bad, 10, Options{})
		require.ErrorIs(t, err, errInvalid, "%q", bad)
	}
}

// TestFlatPathAgrees: a plain OR of words, scored into the accumulator,
// gives the scores of the general evaluation, with and without stale rows
// and an index, dense and sparse.
func TestFlatPathAgrees(t *testing.T) {
	ctx := context.Background()
	ds := indexedText(t, "red car", "red red truck", "blue car car car", "green bicycle", "a red bicycle", "cars and trucks")
	require.NoError(t, ds.Delete(ctx, 1))
	appendText(t, ds, "red truck again")
	commit(t, ds, "v2")
	ix, err := Open(ctx, ds, "caption", Options{})
	require.NoError(t, err)
	for _, q := range []string{"red", "red car", "car truck bicycle", "red red", "nothing here"} {
		n, err := parse(q)
		require.NoError(t, err)
		want, err := ix.newEval(ctx).node(n)
		require.NoError(t, err)
		ts, ok := n.flatTerms()
		require.True(t, ok, q)
		for _, maxID := range []uint64{ix.maxID, maxDense} { // dense, then sparse
			saved := ix.maxID
			ix.maxID = maxID
			got, err := ix.newEval(ctx).orTerms(ts, 0)
			ix.maxID = saved
			require.NoError(t, err)
			require.ElementsMatch(t, want, got, q)
			top, err := ix.newEval(ctx).orTerms(ts, 2)
			require.NoError(t, err)
			require.Equal(t, topK(append([]Hit{}, want...), 2), append([]Hit{}, top...), q)
		}
	}
}
