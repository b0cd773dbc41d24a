package vector

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// TestExactMatchesBruteForce: exact search equals a float64 brute force
// over the live rows, for every metric and dtype, with deletes, updates
// and several fragments, one query or a batch, with and without a filter.
func TestExactMatchesBruteForce(t *testing.T) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	for _, dt := range []schema.DType{schema.Float32, schema.Float16, schema.BFloat16} {
		t.Run(fmt.Sprint(dt), func(t *testing.T) {
			mx := newMixture(seed, 16, 8, 0.5)
			m := newModel(t, filepath.Join(t.TempDir(), "ds"), 16, dt)
			vs := mx.drawN(700)
			m.append(vs[:400])
			m.commit("first")
			m.append(vs[400:])
			m.delete(3, 17, 399, 250)
			m.commit("more, some deleted")
			m.update(5, mx.draw())
			m.update(420, mx.draw())
			m.commit("updates")

			queries := [][]float32{mx.draw(), mx.draw(), mx.draw(), m.live[5]}
			var allowed []uint64
			for id := range m.live {
				if id%5 == 2 {
					allowed = append(allowed, id)
				}
			}
			allow := NewRowSet(allowed)
			for _, metric := range []Metric{Cosine, L2, Dot} {
				for _, k := range []int{1, 10, 1000} {
					got, err := Exact(ctx, m.ds.Scan(), "embedding", metric, queries, k, Options{Parallelism: 3})
					require.NoError(t, err)
					filtered, err := Exact(ctx, m.ds.Scan(), "embedding", metric, queries, k, Options{Allow: allow})
					require.NoError(t, err)
					for i, q := range queries {
						msg := fmt.Sprintf("%s k=%d query %d", metric, k, i)
						m.requireSameHits(metric, q, m.brute(metric, q, k, nil), got[i], msg)
						m.requireSameHits(metric, q, m.brute(metric, q, k, allow.Contains), filtered[i], msg+" filtered")
					}
				}
			}
		})
	}
}

func TestExactBadInput(t *testing.T) {
	ctx := context.Background()
	m := newModel(t, filepath.Join(t.TempDir(), "ds"), 4, schema.Float32)
	m.append([][]float32{{1, 2, 3, 4}})
	m.commit("one")
	q := [][]float32{{1, 0, 0, 0}}
	for name, tc := range map[string]struct {
		column  string
		metric  Metric
		queries [][]float32
		k       int
		want    error
		msg     string
	}{
		"k zero":        {"embedding", L2, q, 0, loch.ErrInvalidArgument, "k = 0"},
		"wrong dim":     {"embedding", L2, [][]float32{{1, 2}}, 1, loch.ErrInvalidArgument, "has 2 dimensions, the column has 4"},
		"nan":           {"embedding", L2, [][]float32{{1, float32(nan()), 0, 0}}, 1, loch.ErrInvalidArgument, "NaN"},
		"no queries":    {"embedding", L2, nil, 1, loch.ErrInvalidArgument, "no query vectors"},
		"not embedding": {"label", L2, q, 1, loch.ErrInvalidArgument, `column "label" has shape []`},
		"no column":     {"nope", L2, q, 1, loch.ErrNotFound, `no column "nope"`},
		"metric":        {"embedding", "hamming", q, 1, loch.ErrInvalidArgument, `metric "hamming"`},
	} {
		_, err := Exact(ctx, m.ds.Scan(), tc.column, tc.metric, tc.queries, tc.k, Options{})
		require.ErrorIs(t, err, tc.want, name)
		require.ErrorContains(t, err, tc.msg, name)
	}
}
