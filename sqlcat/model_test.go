package sqlcat

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/testserver"
)

// backends are the catalog roots the model test runs on.
var backends = map[string]func(t *testing.T) string{
	"local": func(t *testing.T) string { return t.TempDir() + "/lake" },
	"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
}

// modelRow is a row of the model: what the table should read back.
type modelRow struct {
	label string
	v     [2]float64
	note  string
	score *float64 // after ALTER TABLE ADD COLUMN score
}

// TestModel runs random CREATE/INSERT/UPDATE/DELETE/ALTER/DROP statements
// from a seed against a model (a map of id to row) and, after each, reads
// the table back through SQL and compares; row ids stay with their rows.
func TestModel(t *testing.T) {
	for name, root := range backends {
		t.Run(name, func(t *testing.T) {
			seed := testseed.Seed(t)
			rng := rand.New(rand.NewPCG(seed, 1))
			s := newSession(t, root(t))
			labels := []string{"a", "b", "c"}
			run(t, s, "CREATE TABLE t (id BIGINT, label CLASS_LABEL('a', 'b', 'c'), v FLOAT[2], note TEXT) WITH (chunk_bytes = '4KiB')")
			model := map[int64]modelRow{}
			rowids := map[int64]uint64{} // id -> _rowid, stable across updates
			next := int64(0)
			altered := false
			steps := 25
			if name == "s3" {
				steps = 12
			}
			for step := range steps {
				var stmt string
				switch op := rng.IntN(11); {
				case op < 4 || len(model) == 0: // INSERT VALUES
					var vals []string
					for range 1 + rng.IntN(20) {
						r := modelRow{label: labels[rng.IntN(3)], v: [2]float64{float64(rng.IntN(100)), float64(rng.IntN(100)) / 4}, note: fmt.Sprintf("n'%d", rng.IntN(1000))}
						model[next] = r
						vals = append(vals, fmt.Sprintf("(%d, '%s', [%g, %g], '%s')", next, r.label, r.v[0], r.v[1], strings.ReplaceAll(r.note, "'", "''")))
						next++
					}
					stmt = "INSERT INTO t (id, label, v, note) VALUES " + strings.Join(vals, ", ")
				case op < 5: // INSERT SELECT from the table itself
					m := 2 + rng.IntN(4)
					off := next
					for id, r := range maps.Clone(model) {
						if id%int64(m) == 0 {
							r.score = nil
							model[id+off] = r
							next = max(next, id+off+1)
						}
					}
					stmt = fmt.Sprintf("INSERT INTO t (id, label, v, note) SELECT id + %d, label, v, note FROM t WHERE id %% %d = 0", off, m)
				case op < 7: // UPDATE
					m, k := 2+rng.IntN(4), rng.IntN(2)
					l := labels[rng.IntN(3)]
					set := fmt.Sprintf("label = '%s', v = [v[2], v[1] + 1]", l)
					score := float64(rng.IntN(10))
					if altered && rng.IntN(2) == 0 {
						set += fmt.Sprintf(", score = %g", score)
					}
					for id, r := range model {
						if id%int64(m) == int64(k) {
							r.label = l
							r.v = [2]float64{r.v[1], r.v[0] + 1}
							if strings.Contains(set, "score") {
								r.score = &score
							}
							model[id] = r
						}
					}
					stmt = fmt.Sprintf("UPDATE t SET %s WHERE id %% %d = %d", set, m, k)
				case op < 9: // DELETE
					m, k := 3+rng.IntN(5), rng.IntN(3)
					for id := range model {
						if id%int64(m) == int64(k) {
							delete(model, id)
							delete(rowids, id)
						}
					}
					stmt = fmt.Sprintf("DELETE FROM t WHERE id %% %d = %d", m, k)
				case op == 10: // MERGE: ids old and new, each once; some deleted
					l := labels[rng.IntN(3)]
					var vals []string
					for range 1 + rng.IntN(8) {
						id := rng.Int64N(next + 5)
						if slices.ContainsFunc(vals, func(v string) bool { return strings.HasPrefix(v, fmt.Sprintf("(%d,", id)) }) {
							continue
						}
						vals = append(vals, fmt.Sprintf("(%d, '%s')", id, l))
						r, ok := model[id]
						switch {
						case ok && id%3 == 0:
							delete(model, id)
							delete(rowids, id)
						case ok:
							r.label, r.note = l, r.note+"+"
							model[id] = r
						default:
							model[id] = modelRow{label: l, note: "merged"}
							next = max(next, id+1)
						}
					}
					stmt = "MERGE INTO t USING (VALUES " + strings.Join(vals, ", ") + ") AS s(id, label) ON t.id = s.id " +
						"WHEN MATCHED AND t.id % 3 = 0 THEN DELETE " +
						"WHEN MATCHED THEN UPDATE SET label = s.label, note = note || '+' " +
						"WHEN NOT MATCHED THEN INSERT (id, label, v, note) VALUES (s.id, s.label, [0, 0], 'merged')"
				default: // ALTER TABLE, once; then a table created and dropped
					if !altered {
						altered = true
						stmt = "ALTER TABLE t ADD COLUMN score DOUBLE"
					} else {
						run(t, s, "CREATE TABLE scratch (x INTEGER)")
						run(t, s, "INSERT INTO scratch SELECT count(*) FROM t")
						stmt = "DROP TABLE scratch"
					}
				}
				run(t, s, stmt)
				checkModel(t, s, step, stmt, model, rowids, altered)
				if step%5 == 4 { // compaction keeps values, row ids and order
					order := rowsOf(t, s, "SELECT _rowid FROM t ORDER BY _pos")
					opt := "OPTIMIZE t WITH (target_rows = 40)"
					run(t, s, opt)
					checkModel(t, s, step, opt, model, rowids, altered)
					require.Equal(t, order, rowsOf(t, s, "SELECT _rowid FROM t ORDER BY _pos"), "step %d: %s keeps the order", step, opt)
				}
			}
		})
	}
}

func checkModel(t *testing.T, s *Session, step int, stmt string, model map[int64]modelRow, rowids map[int64]uint64, altered bool) {
	t.Helper()
	cols := "_rowid, id, label, v, note"
	if altered {
		cols += ", score"
	}
	got := rowsOf(t, s, "SELECT "+cols+" FROM t ORDER BY id")
	ids := slices.Sorted(maps.Keys(model))
	require.Len(t, got, len(ids), "step %d: %s", step, stmt)
	for i, id := range ids {
		g, want := got[i], model[id]
		where := fmt.Sprintf("step %d (%s), id %d", step, stmt, id)
		require.EqualValues(t, id, g["id"], where)
		require.Equal(t, want.label, g["label"], where)
		require.Equal(t, []any{want.v[0], want.v[1]}, g["v"], where)
		require.Equal(t, want.note, g["note"], where)
		if altered {
			if want.score == nil {
				require.Nil(t, g["score"], where)
			} else {
				require.Equal(t, *want.score, g["score"], where)
			}
		}
		rid := uint64(g["_rowid"].(float64))
		if old, ok := rowids[id]; ok {
			require.Equal(t, old, rid, "%s: the row keeps its row id", where)
		}
		rowids[id] = rid
	}
}
