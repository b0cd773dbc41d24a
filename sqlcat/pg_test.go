package sqlcat

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPGOperatorsRewrite: ->>, -> before a key and <#> are respelled;
// strings, quoted names, comments, dollar-quoted bodies, lambdas and
// longer operators are not.
func TestPGOperatorsRewrite(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT m->>'q' FROM t":                         "SELECT m ~>> 'q' FROM t",
		"SELECT a->'b'->>'c'":                           "SELECT a ~> 'b' ~>> 'c'",
		"SELECT a -> 0, a->$1":                          "SELECT a ~> 0, a ~> $1",
		"SELECT e <#> '[1,2]', e <=> q, e <-> q":        "SELECT e <!> '[1,2]', e <=> q, e <-> q",
		"SELECT '->>', \"a->>b\", $$x->>'y'$$":          "SELECT '->>', \"a->>b\", $$x->>'y'$$",
		"SELECT 1 -- m->>'q'\n/* a <#> b */":            "SELECT 1 -- m->>'q'\n/* a <#> b */",
		"SELECT list_transform(l, x -> x + 1)":          "SELECT list_transform(l, x -> x + 1)",
		"SELECT E'it\\'s ->>' || m->>'k'":               "SELECT E'it\\'s ->>' || m ~>> 'k'",
		"SELECT a - > 'b', a <# > b, a <<#> b":          "SELECT a - > 'b', a <# > b, a <<#> b",
		"SELECT 'unterminated ->>":                      "SELECT 'unterminated ->>",
		"UPDATE t SET v = 1 WHERE m->>'q' = 'x'":        "UPDATE t SET v = 1 WHERE m ~>> 'q' = 'x'",
		"SELECT * FROM t ORDER BY e <#> [1, 2] LIMIT 3": "SELECT * FROM t ORDER BY e <!> [1, 2] LIMIT 3",
	} {
		require.Equal(t, want, PostgresOperators(in), in)
	}
}

// TestPGJSONPrecedence: ->> and -> bind as in PostgreSQL, tighter than
// comparisons and AND, in either order of the conjuncts, nested, and in
// UPDATE and DELETE.
func TestPGJSONPrecedence(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT, label INT, metadata JSONB)")
	run(t, s, `INSERT INTO t VALUES (1, 0, '{"quality": "high", "src": {"cam": "a"}}'), (2, 1, '{"quality": "low", "src": {"cam": "b"}}'),
		(3, 5, '{"quality": "high", "src": {"cam": "a"}}'), (4, 2, '{"quality": "high", "src": {"cam": "b"}}')`)
	ids := func(q string) []float64 {
		var out []float64
		for _, r := range rowsOf(t, s, q) {
			out = append(out, r["id"].(float64))
		}
		return out
	}
	for _, q := range []string{
		"SELECT id FROM t WHERE label IN (0, 1, 2) AND metadata->>'quality' = 'high' ORDER BY id",
		"SELECT id FROM t WHERE metadata->>'quality' = 'high' AND label IN (0, 1, 2) ORDER BY id",
		"SELECT id FROM t WHERE label <= 2 AND metadata->'quality' = '\"high\"' ORDER BY id",
	} {
		require.Equal(t, []float64{1, 4}, ids(q), q)
	}
	require.Equal(t, []float64{1, 3}, ids("SELECT id FROM t WHERE label >= 0 AND metadata->'src'->>'cam' = 'a' ORDER BY id"))
	require.Equal(t, []float64{3}, ids("SELECT id FROM t WHERE metadata->'src'->>'cam' = 'a' AND label = 5"))
	run(t, s, "UPDATE t SET label = 9 WHERE id > 1 AND metadata->>'quality' = 'low'")
	require.Equal(t, []float64{2}, ids("SELECT id FROM t WHERE label = 9"))
	run(t, s, "DELETE FROM t WHERE label = 9 OR metadata->'src'->>'cam' = 'b'")
	require.Equal(t, []float64{1, 3}, ids("SELECT id FROM t ORDER BY id"))
}

// TestPGVectorOperators: <->, <=> and <#> over an embedding column and
// vector literals (a string, a list) give the L2 distance, the cosine
// distance and the negative inner product as computed here, in SELECT
// lists, WHERE and ORDER BY ... LIMIT.
func TestPGVectorOperators(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE v (id INT, e VECTOR(3))")
	vecs := [][]float64{{1, 0, 0}, {0, 2, 0}, {1, 1, 1}, {-1, 0.5, 3}, {0.25, -2, 1}}
	var rows []string
	for i, v := range vecs {
		rows = append(rows, fmt.Sprintf("(%d, [%g, %g, %g])", i, v[0], v[1], v[2]))
	}
	run(t, s, "INSERT INTO v VALUES "+strings.Join(rows, ", "))
	q := []float64{0.5, 1, -1.5}
	dist := map[string]func(a, b []float64) float64{
		"<->": func(a, b []float64) float64 {
			var d float64
			for i := range a {
				d += (a[i] - b[i]) * (a[i] - b[i])
			}
			return math.Sqrt(d)
		},
		"<=>": func(a, b []float64) float64 {
			var dot, na, nb float64
			for i := range a {
				dot, na, nb = dot+a[i]*b[i], na+a[i]*a[i], nb+b[i]*b[i]
			}
			return 1 - dot/math.Sqrt(na*nb)
		},
		"<#>": func(a, b []float64) float64 {
			var dot float64
			for i := range a {
				dot += a[i] * b[i]
			}
			return -dot
		},
	}
	for op, f := range dist {
		for _, lit := range []string{"'[0.5, 1, -1.5]'", "[0.5, 1, -1.5]"} {
			got := rowsOf(t, s, fmt.Sprintf("SELECT id, e %s %s AS d FROM v ORDER BY id", op, lit))
			require.Len(t, got, len(vecs))
			for i, r := range got {
				require.InDelta(t, f(vecs[i], q), r["d"].(float64), 1e-6, "%s row %d", op, i)
			}
		}
		// nearest first, k = 2, and a WHERE on the distance
		best := []int{0, 1, 2, 3, 4}
		sortBy(best, func(i int) float64 { return f(vecs[i], q) })
		got := rowsOf(t, s, fmt.Sprintf("SELECT id FROM v ORDER BY e %s '[0.5, 1, -1.5]' LIMIT 2", op))
		require.EqualValues(t, best[0], got[0]["id"], op)
		require.EqualValues(t, best[1], got[1]["id"], op)
		cut := f(vecs[best[1]], q)
		got = rowsOf(t, s, fmt.Sprintf("SELECT id FROM v WHERE e %s '[0.5, 1, -1.5]' <= %v + 1e-9 AND id >= 0 ORDER BY id", op, cut))
		require.Len(t, got, 2, op)
	}
}

// sortBy sorts ids by key, ascending (insertion sort: a handful of ids).
func sortBy(ids []int, key func(int) float64) {
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && key(ids[j]) < key(ids[j-1]); j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
}
