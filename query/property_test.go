package query

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// propSchema has a column of each mapping the property test compares.
var propSchema = schema.Schema{Columns: []schema.Column{
	{Name: "i", DType: schema.Int64, Shape: schema.Shape{}, ChunkBytes: 1024},
	{Name: "f", DType: schema.Float32, Shape: schema.Shape{}, ChunkCompression: schema.LZ4, ChunkBytes: 1024},
	{Name: "d", DType: schema.Float64, Shape: schema.Shape{}, ChunkBytes: 1024},
	{Name: "b", DType: schema.Bool, Shape: schema.Shape{}},
	{Name: "u", DType: schema.Uint16, Shape: schema.Shape{}},
	{Name: "t", Kind: schema.TextKind, ChunkCompression: schema.Zstd, ChunkBytes: 2048},
	{Name: "j", Kind: schema.JSONKind},
	{Name: "label", Kind: schema.ClassLabel, Shape: schema.Shape{}, ClassNames: []string{"a", "b", "c"}},
	{Name: "emb", Kind: schema.Embedding, Shape: schema.Shape{4}, ChunkBytes: 1024},
	{Name: "boxes", Kind: schema.BBox, Shape: schema.Shape{-1, 4}},
}}

// propRow is one row of the model: nil for a null value.
type propRow struct {
	i     *int64
	f     *float32
	d     *float64
	b     *bool
	u     *uint16
	t     *string
	j     *string // JSON text
	label *int64
	emb   []float32 // nil: null
	boxes [][4]float32
	nobox bool // boxes null
}

func ptr[T any](v T) *T { return &v }

func randomRow(r *rand.Rand) propRow {
	null := func() bool { return r.IntN(10) == 0 }
	var p propRow
	if !null() {
		p.i = ptr(int64(r.IntN(200) - 100))
		if r.IntN(8) == 0 {
			p.i = ptr(specialI64[r.IntN(len(specialI64))])
		}
	}
	if !null() {
		p.f = ptr(float32(r.IntN(64)) / 4)
		if r.IntN(4) == 0 { // the values pushed comparisons must get right
			p.f = ptr(specialF32[r.IntN(len(specialF32))])
		}
	}
	if !null() {
		p.d = ptr(float64(r.IntN(40)-20) / 10)
		if r.IntN(4) == 0 {
			p.d = ptr(specialF64[r.IntN(len(specialF64))])
		}
	}
	if !null() {
		p.b = ptr(r.IntN(2) == 0)
	}
	if !null() {
		p.u = ptr(uint16(r.IntN(1000)))
	}
	if !null() {
		p.t = ptr([]string{"apple", "avocado", "banana", "cherry", "", "a'b"}[r.IntN(6)] + fmt.Sprint(r.IntN(3)))
	}
	if !null() {
		p.j = ptr(fmt.Sprintf(`{"q":%q,"n":%d,"tags":["x%d"]}`, []string{"high", "low", "mid"}[r.IntN(3)], r.IntN(10), r.IntN(3)))
		if r.IntN(4) == 0 { // documents the pushed (j->>'q') must not misjudge
			p.j = ptr(specialJSON[r.IntN(len(specialJSON))])
		}
	}
	if !null() {
		p.label = ptr(int64(r.IntN(3)))
	}
	if !null() {
		p.emb = []float32{float32(r.IntN(8)) / 2, float32(r.IntN(8)) / 2, float32(r.IntN(8)) / 2, 1}
	}
	if null() {
		p.nobox = true
	} else {
		for range r.IntN(4) {
			p.boxes = append(p.boxes, [4]float32{float32(r.IntN(10)), float32(r.IntN(10)), float32(r.IntN(10) + 10), float32(r.IntN(10) + 10)})
		}
	}
	return p
}

func (p propRow) row() loch.Row {
	row := loch.Row{}
	if p.i != nil {
		row["i"] = loch.Scalar(*p.i)
	}
	if p.f != nil {
		row["f"] = loch.Scalar(*p.f)
	}
	if p.d != nil {
		row["d"] = loch.Scalar(*p.d)
	}
	if p.b != nil {
		row["b"] = loch.Scalar(*p.b)
	}
	if p.u != nil {
		row["u"] = loch.Scalar(*p.u)
	}
	if p.t != nil {
		row["t"] = loch.String(*p.t)
	}
	if p.j != nil {
		row["j"] = loch.Sample{Shape: []int{len(*p.j)}, Data: []byte(*p.j)}
	}
	if p.label != nil {
		row["label"] = loch.Scalar(*p.label)
	}
	if p.emb != nil {
		row["emb"] = loch.Tensor([]int{4}, p.emb)
	}
	if !p.nobox {
		flat := make([]float32, 0, 4*len(p.boxes))
		for _, b := range p.boxes {
			flat = append(flat, b[:]...)
		}
		row["boxes"] = loch.Tensor([]int{len(p.boxes), 4}, flat)
	}
	return row
}

// literal is the row as SQL values for the reference table.
func (p propRow) literal(id uint64, pos int) string {
	lit := func(ok bool, s string) string {
		if !ok {
			return "NULL"
		}
		return s
	}
	v := []string{fmt.Sprint(id), fmt.Sprint(pos)}
	v = append(v, lit(p.i != nil, fmt.Sprintf("%d", deref(p.i))))
	v = append(v, lit(p.f != nil, floatLiteral(float64(deref(p.f)), "FLOAT")))
	v = append(v, lit(p.d != nil, floatLiteral(deref(p.d), "DOUBLE")))
	v = append(v, lit(p.b != nil, fmt.Sprint(deref(p.b))))
	v = append(v, lit(p.u != nil, fmt.Sprintf("%d::USMALLINT", deref(p.u))))
	v = append(v, lit(p.t != nil, quoteString(deref(p.t))))
	v = append(v, lit(p.j != nil, quoteString(deref(p.j))+"::JSON"))
	v = append(v, lit(p.label != nil, quoteString([]string{"a", "b", "c"}[max(deref(p.label), 0)])))
	var emb []string
	for _, x := range p.emb {
		emb = append(emb, fmt.Sprintf("%g", x))
	}
	v = append(v, lit(p.emb != nil, "["+strings.Join(emb, ",")+"]::FLOAT[4]"))
	var boxes []string
	for _, b := range p.boxes {
		boxes = append(boxes, fmt.Sprintf("[%g,%g,%g,%g]", b[0], b[1], b[2], b[3]))
	}
	v = append(v, lit(!p.nobox, "["+strings.Join(boxes, ",")+"]::FLOAT[][]"))
	return "(" + strings.Join(v, ", ") + ")"
}

// requireDictChunks checks that some chunks of each of the columns are
// dictionary chunks (docs/format.md §3.3), which the scan reads by entry.
func requireDictChunks(t *testing.T, d *loch.Dataset, cols ...string) {
	t.Helper()
	sc := d.Scan()
	require.NoError(t, sc.Load(ctx, 2))
	for _, name := range cols {
		dict := 0
		for _, c := range sc.Schema().Columns {
			if c.Name != name {
				continue
			}
			for _, id := range sc.Chunks(c.UID) {
				f, err := sc.Fetch(ctx, loch.Read{Chunk: id})
				require.NoError(t, err)
				if f.DictLen() > 0 {
					dict++
				}
			}
		}
		require.Positive(t, dict, "column %s has no dictionary chunk", name)
	}
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// TestMatchesParquet is the result-equality property: random datasets
// (several fragments, nulls, deleted and updated rows) and random
// filters, orders and aggregates give the same answer from loch as from
// DuckDB over the same rows written to Parquet; and a selection's row ids
// are the rows of the Parquet answer, in its order.
func TestMatchesParquet(t *testing.T) {
	seed := testseed.Seed(t)
	for round := range 3 {
		r := rand.New(rand.NewPCG(seed, uint64(round)))
		t.Run(fmt.Sprint(round), func(t *testing.T) { matchParquet(t, r) })
	}
}

func matchParquet(t *testing.T, r *rand.Rand) {
	// Small morsels: many per query, filled by several threads, reusing
	// DuckDB's output chunks.
	defer func(n int) { morselRows = n }(morselRows)
	morselRows = 16 + r.IntN(48)
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "prop"), propSchema)
	require.NoError(t, err)
	defer d.Close()
	model := map[uint64]propRow{}
	ids := func() []uint64 {
		var out []uint64
		for p := range d.Len() {
			id, err := d.RowID(ctx, p)
			require.NoError(t, err)
			out = append(out, id)
		}
		return out
	}
	for frag := range 2 + r.IntN(3) { // several fragments
		n := 20 + r.IntN(80)
		if frag == 0 { // enough rows that t and j are stored in dictionary chunks
			n = 400 + r.IntN(200)
		}
		rows := make([]loch.Row, n)
		added := make([]propRow, n)
		for k := range rows {
			added[k] = randomRow(r)
			rows[k] = added[k].row()
		}
		before := d.Len()
		require.NoError(t, d.Extend(ctx, rows))
		_, err := d.Commit(ctx, "append")
		require.NoError(t, err)
		all := ids()
		for k := range added {
			model[all[int(before)+k]] = added[k]
		}
		// delete and update a few
		all = ids()
		for range r.IntN(5) {
			id := all[r.IntN(len(all))]
			if _, ok := model[id]; !ok {
				continue
			}
			if r.IntN(2) == 0 {
				require.NoError(t, d.Delete(ctx, id))
				delete(model, id)
			} else {
				p := randomRow(r)
				require.NoError(t, d.Update(ctx, id, p.row()))
				full := p.row()
				for _, c := range propSchema.Columns { // an update leaves absent columns as they were
					if _, ok := full[c.Name]; !ok {
						p = mergeAbsent(p, model[id], c.Name)
					}
				}
				model[id] = p
			}
			_, err := d.Commit(ctx, "change")
			require.NoError(t, err)
			all = ids()
		}
	}
	order := ids()
	require.Len(t, order, len(model))
	requireDictChunks(t, d, "t", "j")

	e, err := New(ctx, d, Options{Threads: 2})
	require.NoError(t, err)
	defer e.Close()
	// The reference: the model's rows in a native table, written to Parquet.
	exec := func(q string) {
		_, err := e.conn.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	exec("CREATE TABLE ref (_rowid UBIGINT, _pos BIGINT, i BIGINT, f FLOAT, d DOUBLE, b BOOLEAN, u USMALLINT, t VARCHAR, j JSON, label ENUM('a', 'b', 'c'), emb FLOAT[4], boxes FLOAT[][])")
	var vals []string
	for pos, id := range order {
		vals = append(vals, model[id].literal(id, pos))
	}
	exec("INSERT INTO ref VALUES " + strings.Join(vals, ",\n"))
	pq := filepath.Join(t.TempDir(), "ref.parquet")
	exec(fmt.Sprintf("COPY ref TO %s (FORMAT parquet)", quoteString(pq)))
	exec(fmt.Sprintf("CREATE VIEW pq AS SELECT * REPLACE (label::ENUM('a', 'b', 'c') AS label, emb::FLOAT[4] AS emb) FROM read_parquet(%s)", quoteString(pq)))

	pushed := 0
	for range 40 {
		q := randomQuery(r)
		got := e.answer(t, strings.ReplaceAll(q, "$T", "ds"))
		want := e.answer(t, strings.ReplaceAll(q, "$T", "pq"))
		require.Equal(t, want, got, "query %s", q)
		// The same answer with no filter pushed into the scan.
		if e.pushdown(ctx, strings.ReplaceAll(q, "$T", "ds")) != strings.ReplaceAll(q, "$T", "ds") {
			pushed++
			e.noPushdown = true
			off := e.answer(t, strings.ReplaceAll(q, "$T", "ds"))
			e.noPushdown = false
			require.Equal(t, off, got, "query %s without pushdown", q)
		}
	}
	require.Positive(t, pushed, "no query pushed a filter")
	for range 10 {
		pred := randomPredicate(r)
		q := "SELECT i, t FROM ds WHERE " + strings.ReplaceAll(pred, "$T", "ds") + " ORDER BY f DESC NULLS LAST"
		sel, err := e.selectLocked(q)
		require.NoError(t, err, q)
		want := e.answer(t, "SELECT _rowid FROM pq WHERE "+strings.ReplaceAll(pred, "$T", "pq")+" ORDER BY f DESC NULLS LAST, _pos")
		var got [][]string
		for _, id := range sel.RowIDs {
			got = append(got, []string{fmt.Sprint(id)})
		}
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, got, "selection %s", q)
		require.Equal(t, []string{"i", "t"}, sel.Columns)
	}
}

// mergeAbsent takes column name's value from old into p.
func mergeAbsent(p, old propRow, name string) propRow {
	switch name {
	case "i":
		p.i = old.i
	case "f":
		p.f = old.f
	case "d":
		p.d = old.d
	case "b":
		p.b = old.b
	case "u":
		p.u = old.u
	case "t":
		p.t = old.t
	case "j":
		p.j = old.j
	case "label":
		p.label = old.label
	case "emb":
		p.emb = old.emb
	case "boxes":
		p.boxes, p.nobox = old.boxes, old.nobox
	}
	return p
}

func (e *Engine) selectLocked(q string) (*loch.Selection, error) { return e.Select(ctx, q) }

// answer runs q and returns its rows as text.
func (e *Engine) answer(t *testing.T, q string) [][]string {
	t.Helper()
	var out [][]string
	for _, vals := range queryRows(t, e, q) {
		row := make([]string, len(vals))
		for i, v := range vals {
			row[i] = format(v)
		}
		out = append(out, row)
	}
	return out
}

// Values at the edges of pushed comparisons: NaN (above every number in
// DuckDB, equal to itself), infinities, float32 roundings of decimals (0.9
// is 0.89999998 as a FLOAT), subnormals, integers past 2^53. (Not -0 in
// rows: DuckDB's reference table turns it into 0; -0.0 is a constant.)
var (
	specialF32  = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, 0.9, 0.1, 2.25, math.Nextafter32(0.9, 1), math.Nextafter32(0.9, 0), math.SmallestNonzeroFloat32, math.MaxFloat32}
	specialF64  = []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, 0.1, 0.3, 0.1 + 0.2, 1e300, -1e-300, math.SmallestNonzeroFloat64, math.Nextafter(0.3, 1)}
	specialI64  = []int64{math.MaxInt64, math.MinInt64, 1 << 53, 1<<53 + 1, -(1 << 53) - 1, 16777217, 0}
	specialJSON = []string{`{"q":"hi\u0067h"}`, `{"q":null,"n":1}`, `{"n":"3"}`, `{"q":3}`, `[1,2]`, `"high"`, `{}`, `{"q":"high","q":"low"}`, `{"\u0071":"low"}`, `{"q":{"q":"high"}}`, `{"q":"mid", "x":[{"q":"low"}]}`, `{"q":"high\"x"}`}
	// constants of pushed comparisons (min and max add 0: -0 and 0 tie,
	// and which comes out depends on the order rows arrive in)
	numConsts = []string{"0", "-0.0", "0.9", "0.1", "0.3", "2.25", "2.5e0", "-1", "3", "100", "1e300", "16777217", "9007199254740993", "9223372036854775807", "-9223372036854775808", "1.401298464324817e-45", "3.4028234663852886e38"}
)

// floatLiteral is x as a SQL value of type typ.
func floatLiteral(x float64, typ string) string {
	switch {
	case math.IsNaN(x):
		return "'NaN'::" + typ
	case math.IsInf(x, 1):
		return "'Infinity'::" + typ
	case math.IsInf(x, -1):
		return "'-Infinity'::" + typ
	}
	return fmt.Sprintf("'%s'::%s", strconv.FormatFloat(x, 'g', -1, 64), typ)
}

func randomPredicate(r *rand.Rand) string {
	num := func() string { return numConsts[r.IntN(len(numConsts))] }
	cmp := func() string { return []string{"=", "<>", "<", "<=", ">", ">="}[r.IntN(6)] }
	col := func() string { return []string{"i", "f", "d", "u", "$T.i", "$T.f"}[r.IntN(6)] }
	atoms := []func() string{
		// pushed forms, over every pushed type
		func() string { return fmt.Sprintf("%s %s %s", col(), cmp(), num()) },
		func() string { return fmt.Sprintf("%s %s %s", num(), cmp(), col()) },
		func() string { return fmt.Sprintf("%s BETWEEN %s AND %s", col(), num(), num()) },
		func() string { return fmt.Sprintf("%s IN (%s, %s)", col(), num(), num()) },
		func() string { return fmt.Sprintf("b = %v", r.IntN(2) == 0) },
		func() string {
			return fmt.Sprintf("t %s '%s'", []string{"=", "<>"}[r.IntN(2)], []string{"apple1", "banana0", "a''b2", ""}[r.IntN(4)])
		},
		func() string { return "t IN ('cherry0', 'avocado1', 'x')" },
		func() string {
			return fmt.Sprintf("(j->>'%s') %s '%s'", []string{"q", "n", "x"}[r.IntN(3)], []string{"=", "<>"}[r.IntN(2)], []string{"high", "low", "3", `high"x`}[r.IntN(4)])
		},
		func() string { return "json_extract_string(j, 'q') IN ('mid', 'high')" },
		func() string {
			return fmt.Sprintf("label %s '%s'", []string{"=", "<>"}[r.IntN(2)], []string{"a", "b", "c"}[r.IntN(3)])
		},
		func() string {
			return fmt.Sprintf("%s IS NOT NULL", []string{"i", "f", "d", "b", "u", "t", "j", "label"}[r.IntN(8)])
		},
		// others
		func() string { return fmt.Sprintf("i > %d", r.IntN(200)-100) },
		func() string { return fmt.Sprintf("i > %d", r.IntN(200)-100) },
		func() string { return fmt.Sprintf("f <= %g", float32(r.IntN(64))/4) },
		func() string { return "b" },
		func() string { return "NOT b" },
		func() string { return fmt.Sprintf("u %% %d = 0", 2+r.IntN(4)) },
		func() string { return fmt.Sprintf("t LIKE '%s%%'", []string{"a", "b", "ch", "av"}[r.IntN(4)]) },
		func() string { return fmt.Sprintf("(j->>'q') = '%s'", []string{"high", "low", "mid"}[r.IntN(3)]) },
		func() string { return fmt.Sprintf("(j->>'n')::INT < %d", r.IntN(10)) },
		func() string { return fmt.Sprintf("label = '%s'", []string{"a", "b", "c"}[r.IntN(3)]) },
		func() string { return "label IN ('a', 'c')" },
		func() string { return fmt.Sprintf("emb[%d] > %g", 1+r.IntN(4), float32(r.IntN(8))/2) },
		func() string { return fmt.Sprintf("len(boxes) >= %d", r.IntN(3)) },
		func() string { return fmt.Sprintf("boxes[1][3] > %d", 10+r.IntN(10)) },
		func() string {
			return fmt.Sprintf("%s IS NULL", []string{"i", "f", "d", "b", "u", "t", "j", "label", "emb", "boxes"}[r.IntN(10)])
		},
	}
	p := atoms[r.IntN(len(atoms))]()
	for range r.IntN(3) {
		p = fmt.Sprintf("(%s %s %s)", p, []string{"AND", "OR"}[r.IntN(2)], atoms[r.IntN(len(atoms))]())
	}
	return p
}

func randomQuery(r *rand.Rand) string {
	pred := randomPredicate(r)
	switch r.IntN(7) {
	case 0:
		return "SELECT _rowid, i, f, d, t, j, label, emb, boxes FROM $T WHERE " + pred + " ORDER BY _pos"
	case 1:
		cols := []string{"i", "f", "d", "u", "t", "label"}
		c := cols[r.IntN(len(cols))]
		return fmt.Sprintf("SELECT _rowid, %s FROM $T WHERE %s ORDER BY %s %s NULLS FIRST, _rowid LIMIT %d", c, pred, c, []string{"ASC", "DESC"}[r.IntN(2)], 1+r.IntN(30))
	case 2:
		g := []string{"label", "b", "(j->>'q')", "u % 3", "len(boxes)"}[r.IntN(5)]
		return fmt.Sprintf("SELECT %s AS g, count(*), count(i), sum(i), min(f) + 0, max(t), avg(u), count(j), bool_or(b) FROM $T WHERE %s GROUP BY g ORDER BY g NULLS FIRST", g, pred)
	case 3:
		return "SELECT count(*), sum(f), min(i), max(i), min(d) + 0, max(d) + 0, sum(len(boxes)), sum(emb[2]), count(DISTINCT label) FROM $T WHERE " + pred
	case 4:
		return "SELECT _rowid, round(list_sum(emb::FLOAT[]), 3) AS s, [x[1] for x in boxes] AS xs FROM $T WHERE " + pred + " ORDER BY _pos"
	case 6: // an inner join: each side's qualified conjuncts are pushed into it
		cmp := func() string { return []string{"=", "<>", "<", "<=", ">", ">="}[r.IntN(6)] }
		num := func() string { return numConsts[r.IntN(len(numConsts))] }
		return fmt.Sprintf("SELECT a._rowid, b._rowid FROM $T AS a JOIN $T AS b ON a.label = b.label WHERE a.i %s %s AND b.f %s %s AND (a.j->>'q') <> 'low' ORDER BY 1, 2 LIMIT 300",
			cmp(), num(), cmp(), num())
	}
	return fmt.Sprintf("SELECT (j->>'q') AS q, list(i ORDER BY _rowid) FROM $T WHERE %s GROUP BY q ORDER BY q NULLS LAST", pred)
}

// TestMatchesParquetTypedSetters runs the property with scalars written
// through duckdb-go's typed setters instead of into vector memory.
func TestMatchesParquetTypedSetters(t *testing.T) {
	rawWrites = false
	defer func() { rawWrites = true }()
	r := rand.New(rand.NewPCG(testseed.Seed(t), 99))
	matchParquet(t, r)
}
