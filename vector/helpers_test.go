package vector

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/half"
	"github.com/lochdata/loch/schema"
)

// mixture draws vectors from a Gaussian mixture: comps centres N(0, 1)
// per coordinate, points centre + N(0, sigma^2).
type mixture struct {
	r       *rand.Rand
	dim     int
	centres [][]float64
	sigma   float64
}

func newMixture(seed uint64, dim, comps int, sigma float64) *mixture {
	m := &mixture{r: rand.New(rand.NewPCG(seed, 1)), dim: dim, sigma: sigma}
	for range comps {
		c := make([]float64, dim)
		for j := range c {
			c[j] = m.r.NormFloat64()
		}
		m.centres = append(m.centres, c)
	}
	return m
}

func (m *mixture) draw() []float32 {
	c := m.centres[m.r.IntN(len(m.centres))]
	v := make([]float32, m.dim)
	for j := range v {
		v[j] = float32(c[j] + m.r.NormFloat64()*m.sigma)
	}
	return v
}

// drawN draws n vectors.
func (m *mixture) drawN(n int) [][]float32 {
	vs := make([][]float32, n)
	for i := range vs {
		vs[i] = m.draw()
	}
	return vs
}

// filled is a local model of n float32 vectors drawn from mx, committed
// as one version; vs are the vectors by row id.
func filled(t testing.TB, mx *mixture, n int) (m *model, vs [][]float32) {
	return filledChunks(t, mx, n, 16<<10)
}

// filledChunks is filled with chunks of chunkBytes (0: the default).
func filledChunks(t testing.TB, mx *mixture, n, chunkBytes int) (m *model, vs [][]float32) {
	m = newModelChunks(t, filepath.Join(t.TempDir(), "ds"), mx.dim, schema.Float32, chunkBytes)
	vs = mx.drawN(n)
	m.append(vs)
	m.commit("rows")
	return m, vs
}

// eachKind runs test as a subtest for each index kind.
func eachKind(t *testing.T, test func(t *testing.T, kind string)) {
	for _, kind := range []string{KindFlat, KindPQ} {
		t.Run(kind, func(t *testing.T) { test(t, kind) })
	}
}

// model is a dataset under test with the live vectors it should hold, by
// row id, as stored (after rounding to the column's dtype).
type model struct {
	t    testing.TB
	ds   *loch.Dataset
	url  string
	dt   schema.DType
	live map[uint64][]float32
	next uint64 // ids are assigned in order from 0
	// label of each live row (id % 5), for filters
}

func newModel(t testing.TB, url string, dim int, dt schema.DType) *model {
	return newModelChunks(t, url, dim, dt, 16<<10)
}

// newModelChunks is newModel with chunks of chunkBytes (0: the default).
func newModelChunks(t testing.TB, url string, dim int, dt schema.DType, chunkBytes int) *model {
	t.Helper()
	ctx := context.Background()
	ds, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "embedding", Kind: schema.Embedding, DType: dt, Shape: schema.Shape{dim}, ChunkBytes: chunkBytes},
		{Name: "label", DType: schema.Int64, Shape: schema.Shape{}},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { ds.Close() })
	return &model{t: t, ds: ds, url: url, dt: dt, live: map[uint64][]float32{}}
}

// sample returns v stored in the model's dtype and the values it reads
// back as.
func (m *model) sample(v []float32) (loch.Sample, []float32) {
	back := make([]float32, len(v))
	switch m.dt {
	case schema.Float16:
		h := make([]uint16, len(v))
		for i, f := range v {
			h[i] = half.Float16(f)
			back[i] = half.ToFloat32(h[i])
		}
		s := loch.Tensor([]int{len(v)}, h)
		s.Data = s.Data[:len(v)*2]
		return loch.Sample{Shape: []int{len(v)}, Data: loch.AsBytes(h)}, back
	case schema.BFloat16:
		h := make([]uint16, len(v))
		for i, f := range v {
			h[i] = half.BFloat16(f)
			back[i] = math.Float32frombits(uint32(h[i]) << 16)
		}
		return loch.Sample{Shape: []int{len(v)}, Data: loch.AsBytes(h)}, back
	}
	copy(back, v)
	return loch.Tensor([]int{len(v)}, v), back
}

func (m *model) append(vs [][]float32) {
	m.t.Helper()
	rows := make([]loch.Row, len(vs))
	for i, v := range vs {
		s, back := m.sample(v)
		id := m.next + uint64(i)
		rows[i] = loch.Row{"embedding": s, "label": loch.Scalar(int64(id % 5))}
		m.live[id] = back
	}
	m.next += uint64(len(vs))
	require.NoError(m.t, m.ds.Extend(context.Background(), rows))
}

func (m *model) delete(ids ...uint64) {
	m.t.Helper()
	require.NoError(m.t, m.ds.Delete(context.Background(), ids...))
	for _, id := range ids {
		delete(m.live, id)
	}
}

func (m *model) update(id uint64, v []float32) {
	m.t.Helper()
	s, back := m.sample(v)
	require.NoError(m.t, m.ds.Update(context.Background(), id, loch.Row{"embedding": s}))
	m.live[id] = back
}

func (m *model) commit(msg string) string {
	m.t.Helper()
	v, err := m.ds.Commit(context.Background(), msg)
	require.NoError(m.t, err)
	return v
}

// brute is the reference: every live row's distance in float64, sorted.
func (m *model) brute(metric Metric, q []float32, k int, allow func(uint64) bool) []Hit {
	var hits []Hit
	for id, v := range m.live {
		if allow != nil && !allow(id) {
			continue
		}
		hits = append(hits, Hit{RowID: id, Distance: float32(refDistance(metric, v, q))})
	}
	sort.Slice(hits, func(i, j int) bool { return before(hits[i], hits[j]) })
	return hits[:min(k, len(hits))]
}

func refDistance(m Metric, x, q []float32) float64 {
	var dot, xx, qq, d2 float64
	for i := range x {
		a, b := float64(x[i]), float64(q[i])
		dot += a * b
		xx += a * a
		qq += b * b
		d2 += (a - b) * (a - b)
	}
	switch m {
	case Cosine:
		if xx == 0 || qq == 0 {
			return 1
		}
		return 1 - dot/math.Sqrt(xx*qq)
	case L2:
		return math.Sqrt(d2)
	}
	return -dot
}

// requireSameHits checks got against the reference want: the same
// number of hits, distinct live rows, each with its true distance, and the
// i-th distance equal to the reference's i-th (so got is a true top k up to
// float32 rounding, which may swap near-ties).
func (m *model) requireSameHits(metric Metric, q []float32, want, got []Hit, msg string) {
	t := m.t
	t.Helper()
	require.Len(t, got, len(want), msg)
	seen := map[uint64]bool{}
	for i, h := range got {
		tol := 1e-3 * math.Max(1, math.Abs(float64(want[i].Distance)))
		v, ok := m.live[h.RowID]
		require.True(t, ok, "%s: hit %d is row %d, not a live row", msg, i, h.RowID)
		require.False(t, seen[h.RowID], "%s: row %d twice", msg, h.RowID)
		seen[h.RowID] = true
		require.InDelta(t, refDistance(metric, v, q), h.Distance, tol, "%s: distance of row %d", msg, h.RowID)
		require.InDelta(t, want[i].Distance, h.Distance, tol, "%s: hit %d", msg, i)
	}
}

// recall is |got ∩ want| / |want|.
func recall(want, got []Hit) float64 {
	n := 0
	for _, h := range got {
		if slices.ContainsFunc(want, func(w Hit) bool { return w.RowID == h.RowID }) {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

func nan() float64 { return math.NaN() }
