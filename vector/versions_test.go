package vector

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/schema"
)

func TestMain(m *testing.M) {
	defer testserver.StopAll()
	m.Run()
}

// TestIndexLifecycle: an index survives branch, tag, merge and gc as
// docs/format.md §2.8 says, on local disk and on MinIO, for both kinds
// (an ivf-pq index reads its lists by range from either).
func TestIndexLifecycle(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"local": func(t *testing.T) string { return filepath.Join(t.TempDir(), "ds") },
		"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
	} {
		for _, kind := range []string{KindFlat, KindPQ} {
			t.Run(name+"/"+kind, func(t *testing.T) { lifecycle(t, url(t), kind) })
		}
	}
}

func lifecycle(t *testing.T, url, kind string) {
	ctx := context.Background()
	mx := newMixture(3, 8, 6, 0.5)
	m := newModel(t, url, 8, schema.Float32)
	m.append(mx.drawN(400))
	v1 := m.commit("v1")
	i1, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, NList: 8, Kind: kind})
	require.NoError(t, err)
	_, err = m.ds.CreateTag(ctx, "t1", v1)
	require.NoError(t, err)
	_, err = m.ds.CreateBranch(ctx, "b", v1)
	require.NoError(t, err)

	// main moves on and updates its index.
	m.append(mx.drawN(100))
	m.commit("v2")
	i2, err := Update(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(t, err)
	require.Equal(t, v1, i2.Base)

	// The branch shares v1's index and searches its own rows exactly.
	b, err := loch.Open(ctx, url, loch.WithRef("b"))
	require.NoError(t, err)
	defer b.Close()
	extra := mx.drawN(50)
	rows := make([]loch.Row, len(extra))
	for i, v := range extra {
		rows[i] = loch.Row{"embedding": loch.Tensor([]int{8}, v), "label": loch.Scalar(int64(0))}
	}
	require.NoError(t, b.Extend(ctx, rows))
	_, err = b.Commit(ctx, "branch rows")
	require.NoError(t, err)
	res, err := Search(ctx, b, "embedding", L2, [][]float32{extra[7]}, 3, Options{})
	require.NoError(t, err)
	require.Equal(t, i1.Key, res.Index)
	require.Zero(t, res.Hits[0][0].Distance)

	// Merge: main's newest indexed ancestor serves the merge commit, and
	// with every list probed the answer is exact.
	mr, err := m.ds.Merge(ctx, "b", loch.MergeOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, mr)
	ix, err := Open(ctx, m.ds, "embedding", L2, Options{})
	require.NoError(t, err)
	require.Equal(t, i2.Key, ix.Key())
	require.Equal(t, int64(50), ix.Uncovered())
	q := extra[11]
	hits, err := ix.Search(ctx, [][]float32{q}, 5, Options{NProbe: ix.NList(), Rerank: 1 << 30})
	require.NoError(t, err)
	require.Zero(t, hits[0][0].Distance)
	require.Len(t, hits[0], 5)

	// An index of a commit no reference reaches is collected; the tag's and
	// main's are kept, and the tag still searches with its own.
	_, err = m.ds.CreateBranch(ctx, "tmp", m.ds.Version())
	require.NoError(t, err)
	tmp, err := loch.Open(ctx, url, loch.WithRef("tmp"))
	require.NoError(t, err)
	defer tmp.Close()
	require.NoError(t, tmp.Delete(ctx, 0, 1, 2))
	_, err = tmp.Commit(ctx, "tmp")
	require.NoError(t, err)
	itmp, err := Build(ctx, tmp, "embedding", BuildOptions{Metric: L2, NList: 3, Seed: 9})
	require.NoError(t, err)
	require.NoError(t, m.ds.DeleteBranch(ctx, "tmp"))

	report, err := m.ds.GC(ctx, loch.GCOptions{})
	require.NoError(t, err)
	require.Equal(t, int64(1), report.ByKind["indexes"].Objects)
	require.Positive(t, report.ByKind["vectors"].Objects)
	for key, want := range map[string]bool{i1.Key: true, i2.Key: true, itmp.Key: false} {
		_, err := m.ds.Store().Stat(ctx, key)
		require.Equal(t, want, err == nil, key)
	}
	tag, err := loch.Open(ctx, url, loch.WithRef("t1"))
	require.NoError(t, err)
	defer tag.Close()
	res, err = Search(ctx, tag, "embedding", L2, [][]float32{mx.draw()}, 4, Options{})
	require.NoError(t, err)
	require.Equal(t, i1.Key, res.Index)
	require.Empty(t, res.Warnings)

	// Verify checks the kept indexes and finds a damaged list.
	_, problems, err := m.ds.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
	obj, err := m.ds.Store().Get(ctx, i2.Key)
	require.NoError(t, err)
	d, err := vindex.DecodeDescriptor(i2.Key, obj)
	require.NoError(t, err)
	var victim string
	for _, l := range d.Lists {
		if l.Key != "" {
			victim = l.Key
		}
	}
	lst, err := m.ds.Store().Get(ctx, victim)
	require.NoError(t, err)
	lst[len(lst)-1] ^= 1
	require.NoError(t, m.ds.Store().Put(ctx, victim, lst))
	_, problems, err = m.ds.Verify(ctx)
	require.NoError(t, err)
	require.Len(t, problems, 1)
	require.Equal(t, victim, problems[0].Key)
	require.True(t, strings.Contains(problems[0].Err.Error(), "checksum"), problems[0].Err.Error())
}

// TestIndexRetention: gc's version retention (docs/format.md §5.2) keeps
// the index a kept version searches with, and the versions between them,
// so that the search still finds it; once the head has its own index the
// old one and its versions are collected. On local disk and on MinIO.
func TestIndexRetention(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"local": func(t *testing.T) string { return filepath.Join(t.TempDir(), "ds") },
		"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			url := url(t)
			mx := newMixture(3, 8, 6, 0.5)
			m := newModel(t, url, 8, schema.Float32)
			m.append(mx.drawN(300))
			v1 := m.commit("v1")
			i1, err := Build(ctx, m.ds, "embedding", BuildOptions{Metric: L2, NList: 4})
			require.NoError(t, err)
			m.append(mx.drawN(50))
			v2 := m.commit("v2")
			m.append(mx.drawN(50))
			m.commit("v3")

			report, err := m.ds.GC(ctx, loch.GCOptions{KeepLast: 1})
			require.NoError(t, err)
			require.Zero(t, report.ByKind["indexes"].Objects)
			require.EqualValues(t, 1, report.ByKind["commits"].Objects, "only the create commit expires")
			res, err := Search(ctx, m.ds, "embedding", L2, [][]float32{mx.draw()}, 3, Options{})
			require.NoError(t, err)
			require.Equal(t, i1.Key, res.Index)
			require.Empty(t, res.Warnings)
			for _, v := range []string{v1, v2} {
				old, err := loch.Open(ctx, url, loch.WithVersion(v))
				require.NoError(t, err, "a version between the head and its index is kept")
				require.NoError(t, old.Close())
			}

			i3, err := Update(ctx, m.ds, "embedding", L2, Options{})
			require.NoError(t, err)
			report, err = m.ds.GC(ctx, loch.GCOptions{KeepLast: 1})
			require.NoError(t, err)
			require.EqualValues(t, 1, report.ByKind["indexes"].Objects)
			require.EqualValues(t, 2, report.ByKind["commits"].Objects)
			_, err = m.ds.Store().Stat(ctx, i1.Key)
			require.Error(t, err)
			res, err = Search(ctx, m.ds, "embedding", L2, [][]float32{mx.draw()}, 3, Options{})
			require.NoError(t, err)
			require.Equal(t, i3.Key, res.Index)
			require.Empty(t, res.Warnings)
			_, problems, err := m.ds.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}
