package vector

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/schema"
)

// TestIndexRecall: on clustered data the index's default nprobe finds at
// least 90% of the exact top 10, for both kinds (ivf-pq with its default
// re-ranking).
func TestIndexRecall(t *testing.T) {
	eachKind(t, testIndexRecall)
}

func testIndexRecall(t *testing.T, kind string) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	mx := newMixture(seed, 32, 40, 1.0)
	m, _ := filled(t, mx, 6000)
	for _, metric := range []Metric{Cosine, L2, Dot} {
		info, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: metric, Seed: seed, Kind: kind})
		require.NoError(t, err)
		require.Equal(t, kind, info.Type)
		require.Equal(t, int64(6000), info.Rows)
		require.Equal(t, 310, info.NList) // round(4 x sqrt(6000))
		ix, err := Open(ctx, m.ds, "embedding", metric, Options{})
		require.NoError(t, err)
		require.Zero(t, ix.Uncovered())
		queries := mx.drawN(50)
		got, err := ix.Search(ctx, queries, 10, Options{})
		require.NoError(t, err)
		total := 0.0
		for i, q := range queries {
			total += recall(m.brute(metric, q, 10, nil), got[i])
		}
		t.Logf("%s: recall@10 %.3f at nprobe %d of %d", metric, total/50, ix.DefaultNProbe(), ix.NList())
		require.GreaterOrEqual(t, total/50, 0.9, metric)
	}
}

// TestIndexVersions: rows appended, updated and deleted after the build
// are searched correctly before and after Update; with every list probed
// the index search is exact.
func TestIndexVersions(t *testing.T) {
	eachKind(t, testIndexVersions)
}

func testIndexVersions(t *testing.T, kind string) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	mx := newMixture(seed, 8, 10, 0.5)
	m := newModel(t, filepath.Join(t.TempDir(), "ds"), 8, schema.Float32)
	vs := mx.drawN(1500)
	m.append(vs[:1000])
	v1 := m.commit("first")
	_, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, Seed: seed, NList: 20, Kind: kind, M: 4})
	require.NoError(t, err)

	m.append(vs[1000:])
	m.commit("appended")
	m.delete(1, 2, 500, 1200)
	m.update(7, mx.draw())
	m.update(1100, mx.draw())
	m.commit("second")

	queries := [][]float32{m.live[1400], m.live[7], vs[1], vs[500], mx.draw()}
	check := func(stage string, wantUncovered int64) {
		ix, err := Open(ctx, m.ds, "embedding", L2, Options{})
		require.NoError(t, err)
		require.Equal(t, wantUncovered, ix.Uncovered(), stage)
		all, err := ix.Search(ctx, queries, 25, Options{NProbe: ix.NList(), Rerank: 1 << 30})
		require.NoError(t, err)
		def, err := ix.Search(ctx, queries, 25, Options{})
		require.NoError(t, err)
		for i, q := range queries {
			msg := fmt.Sprintf("%s query %d", stage, i)
			m.requireSameHits(L2, q, m.brute(L2, q, 25, nil), all[i], msg)
			for _, h := range def[i] {
				_, live := m.live[h.RowID]
				require.True(t, live, "%s: row %d is not live", msg, h.RowID)
			}
		}
		// An appended row and an updated row are their own nearest rows.
		require.Equal(t, uint64(1400), def[0][0].RowID, stage)
		require.Zero(t, def[0][0].Distance, stage)
		require.Equal(t, uint64(7), def[1][0].RowID, stage)
	}
	// Uncovered: the appended rows less one deleted (499), and the first
	// fragment, whose embedding chunks row 7's update in place rewrote
	// (1000 rows less the three deleted).
	check("before update", 499+997)
	info, err := Update(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(t, err)
	require.Equal(t, v1, info.Base)
	require.Equal(t, int64(len(m.live)), info.Rows)
	check("after update", 0)

	// Updating again writes nothing new.
	again, err := Update(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(t, err)
	require.Equal(t, info.Key, again.Key)

	// An update in place of another column leaves the index covering the
	// fragment: its embedding chunks are the same.
	require.NoError(t, m.ds.Update(ctx, 10, loch.Row{"label": loch.Scalar(int64(-1))}))
	m.commit("relabel")
	check("after a label update", 0)
}

// TestFilteredSearch: a filtered index search equals exact filtered
// search with every list probed, and with the default nprobe when the
// filter is narrow enough that nprobe/share covers every list; it is
// never short.
func TestFilteredSearch(t *testing.T) {
	eachKind(t, testFilteredSearch)
}

func testFilteredSearch(t *testing.T, kind string) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	mx := newMixture(seed, 16, 20, 0.5)
	m, _ := filled(t, mx, 3000)
	_, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: Cosine, Seed: seed, Kind: kind})
	require.NoError(t, err)
	ix, err := Open(ctx, m.ds, "embedding", Cosine, Options{})
	require.NoError(t, err)
	queries := [][]float32{mx.draw(), mx.draw(), mx.draw()}
	for name, pred := range map[string]func(uint64) bool{
		"label 2 (20%)":   func(id uint64) bool { return id%5 == 2 },
		"one in 100 (1%)": func(id uint64) bool { return id%100 == 42 },
		"three rows":      func(id uint64) bool { return id == 5 || id == 900 || id == 2999 },
	} {
		var ids []uint64
		for id := range m.live {
			if pred(id) {
				ids = append(ids, id)
			}
		}
		allow := NewRowSet(ids)
		k := 10
		exact := 1 << 30 // every candidate re-ranked (ivf-pq)
		all, err := ix.Search(ctx, queries, k, Options{Allow: allow, NProbe: ix.NList(), Rerank: exact})
		require.NoError(t, err)
		def, err := ix.Search(ctx, queries, k, Options{Allow: allow, Rerank: exact})
		require.NoError(t, err)
		for i, q := range queries {
			want := m.brute(Cosine, q, k, allow.Contains)
			m.requireSameHits(Cosine, q, want, all[i], name)
			require.Len(t, def[i], len(want), name)
			for _, h := range def[i] {
				require.True(t, allow.Contains(h.RowID), name)
			}
			if float64(ix.DefaultNProbe())*3000 >= float64(ix.NList()*allow.Len()) { // every list scanned: exact
				m.requireSameHits(Cosine, q, want, def[i], name+" default nprobe")
			}
		}
	}
}

// TestCorruptIndexFallsBack: a damaged list object makes Search exact,
// with a warning naming the object; Update fails naming it.
func TestCorruptIndexFallsBack(t *testing.T) {
	eachKind(t, testCorruptIndexFallsBack)
}

func testCorruptIndexFallsBack(t *testing.T, kind string) {
	ctx := context.Background()
	mx := newMixture(1, 8, 4, 0.5)
	m, _ := filled(t, mx, 300)
	info, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, NList: 4, Kind: kind})
	require.NoError(t, err)
	obj, err := m.ds.Store().Get(ctx, info.Key)
	require.NoError(t, err)
	d, err := vindex.DecodeDescriptor(info.Key, obj)
	require.NoError(t, err)
	victim := d.Lists[0].Key
	if victim == "" {
		victim = d.Lists[1].Key
	}
	lst, err := m.ds.Store().Get(ctx, victim)
	require.NoError(t, err)
	lst[20] ^= 0xff
	require.NoError(t, m.ds.Store().Put(ctx, victim, lst))

	q := [][]float32{mx.draw()}
	res, err := Search(ctx, m.ds, "embedding", L2, q, 5, Options{})
	require.NoError(t, err)
	require.Empty(t, res.Index)
	require.Len(t, res.Warnings, 1)
	require.Contains(t, res.Warnings[0], victim)
	m.requireSameHits(L2, q[0], m.brute(L2, q[0], 5, nil), res.Hits[0], "fallback")

	if kind == KindPQ {
		// An ivf-pq index reads its lists only when the update changes them.
		m.delete(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19)
		m.commit("deletes")
	}
	_, err = Update(ctx, m.ds, "embedding", L2, Options{})
	require.ErrorIs(t, err, loch.ErrCorrupt)
	require.ErrorContains(t, err, victim)

	// No index at all: Search is exact without a warning.
	res, err = Search(ctx, m.ds, "embedding", Cosine, q, 5, Options{})
	require.NoError(t, err)
	require.Empty(t, res.Warnings)
	require.Len(t, res.Hits[0], 5)
}

// TestSearcherKeepsIndex: a Searcher opens an index once per version and
// opens the new one after a commit and an update.
func TestSearcherKeepsIndex(t *testing.T) {
	ctx := context.Background()
	mx := newMixture(2, 8, 4, 0.5)
	m, vs := filled(t, mx, 200)
	info, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, NList: 4})
	require.NoError(t, err)
	s := NewSearcher(m.ds)
	q := [][]float32{vs[3]}
	r1, err := s.Search(ctx, "embedding", L2, q, 2, Options{})
	require.NoError(t, err)
	first := s.open["embedding\x00l2"]
	r2, err := s.Search(ctx, "embedding", L2, q, 2, Options{})
	require.NoError(t, err)
	require.Same(t, first, s.open["embedding\x00l2"])
	require.Equal(t, r1, r2)
	require.Equal(t, info.Key, r2.Index)

	m.append([][]float32{vs[3]})
	m.commit("a copy of row 3")
	r3, err := s.Search(ctx, "embedding", L2, q, 2, Options{})
	require.NoError(t, err)
	require.NotSame(t, first, s.open["embedding\x00l2"])
	require.ElementsMatch(t, []uint64{3, 200}, []uint64{r3.Hits[0][0].RowID, r3.Hits[0][1].RowID})
	up, err := Update(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(t, err)
	r4, err := s.Search(ctx, "embedding", L2, q, 2, Options{})
	require.NoError(t, err)
	require.Equal(t, up.Key, r4.Index)
}

// TestSearchOpen: SearchOpen answers only with an index the Searcher
// holds for the handle's version (as Search would), and does nothing
// before a Search opened it, with no index, and after a commit moved the
// version on.
func TestSearchOpen(t *testing.T) {
	ctx := context.Background()
	mx := newMixture(3, 8, 4, 0.5)
	m, vs := filled(t, mx, 200)
	s := NewSearcher(m.ds)
	q := [][]float32{vs[5]}
	_, ok := s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.False(t, ok, "no index stored")
	info, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, NList: 4})
	require.NoError(t, err)
	_, ok = s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.False(t, ok, "an index stored but not open")
	want, err := s.Search(ctx, "embedding", L2, q, 3, Options{})
	require.NoError(t, err)
	got, ok := s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.True(t, ok)
	require.Equal(t, want, got)
	require.Equal(t, info.Key, got.Index)
	_, ok = s.SearchOpen(ctx, "embedding", L2, q, 0, Options{})
	require.False(t, ok, "k = 0 is Search's error to give")

	m.append([][]float32{vs[5]})
	m.commit("a copy of row 5")
	_, ok = s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.False(t, ok, "the version moved on")

	_, err = s.Search(ctx, "embedding", L2, q, 3, Options{})
	require.NoError(t, err)
	got, ok = s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.True(t, ok)
	require.Equal(t, info.Key, got.Index, "the ancestor's index serves the new version")
	up, err := Update(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(t, err)
	_, ok = s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.False(t, ok, "the version's own index %s now serves it, not the one held", up.Key)
	_, err = s.Search(ctx, "embedding", L2, q, 3, Options{})
	require.NoError(t, err)
	got, ok = s.SearchOpen(ctx, "embedding", L2, q, 3, Options{})
	require.True(t, ok)
	require.Equal(t, up.Key, got.Index)
}

// TestNearestFirst: the n nearest centroids come first, in the order of a
// full sort by distance then list, on distances with many ties.
func TestNearestFirst(t *testing.T) {
	r := testseed.Rand(t, 7)
	for range 200 {
		cs := make([]centroidRank, 1+r.IntN(400))
		for l := range cs {
			cs[l] = centroidRank{l: l, d: float32(r.IntN(1 + len(cs)/3))}
		}
		r.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		want := slices.Clone(cs)
		slices.SortFunc(want, compareNearer)
		n := 1 + r.IntN(len(cs))
		nearestFirst(cs, n)
		require.Equal(t, want[:n], cs[:n], "n %d of %d", n, len(cs))
		require.ElementsMatch(t, want[n:], cs[n:])
	}
}
