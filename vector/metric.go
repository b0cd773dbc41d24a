package vector

import (
	"fmt"
	"math"

	"github.com/viterin/vek/vek32"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// Metric is a distance between vectors.
type Metric string

// The metrics.
const (
	Cosine Metric = "cosine"
	L2     Metric = "l2"
	Dot    Metric = "dot"
)

// ParseMetric returns the metric of that name ("cosine", "l2", "dot").
func ParseMetric(s string) (Metric, error) {
	switch m := Metric(s); m {
	case Cosine, L2, Dot:
		return m, nil
	}
	return "", fmt.Errorf("metric %q: want cosine, l2 or dot: %w", s, loch.ErrInvalidArgument)
}

// query is one query vector prepared for a metric: for cosine, scaled to
// unit length; its squared norm for l2.
type query struct {
	v    []float32
	norm float32 // |q|^2
}

func prepare(m Metric, q []float32) query {
	v := append([]float32(nil), q...)
	n := vek32.Dot(v, v)
	if m == Cosine && n > 0 {
		vek32.MulNumber_Inplace(v, float32(1/math.Sqrt(float64(n))))
		n = 1
	}
	return query{v: v, norm: n}
}

// distance is the metric's distance from x to a prepared query; xx is
// |x|^2 (needed by cosine and l2).
func distance(m Metric, q *query, x []float32, xx float32) float32 {
	return dotDistance(m, q, vek32.Dot(x, q.v), xx)
}

// dotDistance is distance given the dot product <x, q>.
func dotDistance(m Metric, q *query, dot, xx float32) float32 {
	switch m {
	case Cosine:
		if xx == 0 || q.norm == 0 {
			return 1
		}
		return 1 - dot/float32(math.Sqrt(float64(xx)))
	case L2:
		return float32(math.Sqrt(float64(max(xx-2*dot+q.norm, 0))))
	default:
		return -dot
	}
}

// needsNorm reports whether distance uses |x|^2.
func needsNorm(m Metric) bool { return m != Dot }

// checkColumn returns the dimension of a searchable column, or an
// ErrInvalidArgument error naming it.
func checkColumn(c schema.Column) (int, error) {
	want := "an embedding column (fixed shape [d] of float32, float16 or bfloat16)"
	if len(c.Shape) != 1 || c.Shape[0] < 1 {
		return 0, fmt.Errorf("column %q has shape %v, want %s: %w", c.Name, []int(c.Shape), want, loch.ErrInvalidArgument)
	}
	switch c.DType {
	case schema.Float32, schema.Float16, schema.BFloat16:
	default:
		return 0, fmt.Errorf("column %q has dtype %s, want %s: %w", c.Name, c.DType, want, loch.ErrInvalidArgument)
	}
	return c.Shape[0], nil
}

// Searchable reports whether vector search takes column c: an embedding
// column, as checkColumn requires.
func Searchable(c schema.Column) bool {
	_, err := checkColumn(c)
	return err == nil
}

// checkQueries validates query vectors against a dimension.
func checkQueries(queries [][]float32, dim int) error {
	if len(queries) == 0 {
		return fmt.Errorf("no query vectors: %w", loch.ErrInvalidArgument)
	}
	for i, q := range queries {
		if len(q) != dim {
			return fmt.Errorf("query vector %d has %d dimensions, the column has %d: %w", i, len(q), dim, loch.ErrInvalidArgument)
		}
		for j, f := range q {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("query vector %d holds %v at %d, want finite numbers: %w", i, f, j, loch.ErrInvalidArgument)
			}
		}
	}
	return nil
}
