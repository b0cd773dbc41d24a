package query

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// A pushed filter is what the planner (pushdown.go) hands loch_scan_at as
// its fourth argument: a JSON list of predicates, each true of every row
// that DuckDB's WHERE keeps. The scan drops the rows that fail one (they
// never reach DuckDB, and their other columns are never converted);
// DuckDB applies the whole WHERE again to the rows that pass. So a
// predicate may keep rows that the WHERE drops, never the reverse: each is
// evaluated conservatively (keepRow's cases), and a row whose value the
// scan cannot judge is kept.
//
//	[{"col":"score","op":">","num":[0.9]},
//	 {"col":"meta","key":"src","op":"=","str":["b"]},
//	 {"col":"label","op":"in","str":["cat","dog"]},
//	 {"col":"b","op":"true"}, {"col":"t","op":"notnull"}]
type pred struct {
	Col string    `json:"col"`
	Key string    `json:"key,omitempty"` // json columns: the top-level key of (col->>'key')
	Op  string    `json:"op"`
	Num []float64 `json:"num,omitempty"`
	Str []string  `json:"str,omitempty"`
	// IDs are the row ids of op opRowIDs (col _rowid, knn.go): the scan
	// reads those rows only.
	IDs []uint64 `json:"ids,omitempty"`
}

// Operators of a pushed predicate.
const (
	opEQ      = "="
	opNE      = "<>"
	opLT      = "<"
	opLE      = "<="
	opGT      = ">"
	opGE      = ">="
	opIn      = "in"
	opNull    = "null"
	opNotNull = "notnull"
	opTrue    = "true"
	opFalse   = "false"
)

// maxFilter bounds a filter argument's predicates and constants.
const maxFilter = 4096

// decodeFilter reads a filter argument ("" is none).
func decodeFilter(s string) ([]pred, error) {
	if s == "" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var ps []pred
	if err := dec.Decode(&ps); err != nil {
		return nil, fmt.Errorf("filter %q: want a JSON list of predicates: %w", short(s), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("filter %q: text after the list", short(s))
	}
	n := len(ps)
	for _, p := range ps {
		n += len(p.Num) + len(p.Str) + len(p.IDs)
	}
	if n > maxFilter {
		return nil, fmt.Errorf("filter %q: %d predicates and constants, at most %d", short(s), n, maxFilter)
	}
	return ps, nil
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// filter is a compiled pushed filter: its predicates in the order the scan
// evaluates them (scalars first, json last: each sees only the rows that
// passed the ones before).
type filter struct {
	preds []cpred
}

// cpred is a predicate compiled against its column.
type cpred struct {
	pred
	col  column
	keep func(b []byte, null bool) bool
	// run, for a numeric comparison, judges a run of values at once (see
	// numTest.run); nil for the others.
	run func(data []byte, rows, out []int32) []int32
	// num, for a numeric comparison, judges a chunk by its statistics
	// (numTest.overlaps); nil for the others.
	num *numTest
}

// prunes reports whether chunk id of the predicate's column can hold no
// row the predicate keeps, by the chunk's statistics: its non-null
// values lie outside every range kept (a null one never passes a
// numeric comparison).
func (p *cpred) prunes(sc *loch.Scan, id loch.ChunkID) bool {
	if p.num == nil {
		return false
	}
	lo, hi, ok := sc.ChunkBounds(id)
	return ok && !p.num.overlaps(lo, hi)
}

// compileFilter checks ps against the table's columns and compiles them.
func compileFilter(ps []pred, cols []column) (*filter, error) {
	if len(ps) == 0 {
		return nil, nil
	}
	f := &filter{}
	for _, p := range ps {
		i := slices.IndexFunc(cols, func(c column) bool { return c.name == p.Col })
		if i < 0 {
			return nil, fmt.Errorf("filter on column %q: no such column: %w", p.Col, loch.ErrInvalidArgument)
		}
		c := cols[i]
		keep, err := compilePred(p, c)
		if err != nil {
			return nil, fmt.Errorf("filter on column %q (%s): %w: %w", p.Col, c.sqlType(), err, loch.ErrInvalidArgument)
		}
		cp := cpred{pred: p, col: c, keep: keep}
		if c.kind == mapScalar && c.col.DType != schema.Bool {
			if t, err := numPred(p, c); err == nil {
				cp.run, cp.num = t.run, t
			}
		}
		f.preds = append(f.preds, cp)
	}
	rank := func(p cpred) int {
		switch p.col.kind {
		case mapScalar, mapEnum:
			return 0
		case mapText:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(f.preds, func(a, b cpred) int { return rank(a) - rank(b) })
	return f, nil
}

// compilePred returns the function that says whether a row whose value
// is b (or null) may pass p.
func compilePred(p pred, c column) (func([]byte, bool) bool, error) {
	if p.Key != "" && c.kind != mapJSON {
		return nil, fmt.Errorf("a key applies to json columns only")
	}
	if p.Op == opNull || p.Op == opNotNull {
		return nullPred(p, c)
	}
	switch c.kind {
	case mapScalar:
		if c.col.DType == schema.Bool {
			return boolPred(p)
		}
		t, err := numPred(p, c)
		if err != nil {
			return nil, err
		}
		return t.keep, nil
	case mapEnum, mapText:
		return strPred(p, c)
	case mapJSON:
		return jsonPred(p)
	}
	return nil, fmt.Errorf("no pushed predicates on this column type")
}

// wantArgs checks that p has nums numbers and strs strings.
func wantArgs(p pred, nums, strs int) error {
	if len(p.Num) != nums || len(p.Str) != strs {
		return fmt.Errorf("op %q takes %d numbers and %d strings, have %d and %d", p.Op, nums, strs, len(p.Num), len(p.Str))
	}
	return nil
}

// nullPred compiles IS NULL and IS NOT NULL.
func nullPred(p pred, c column) (func([]byte, bool) bool, error) {
	if err := wantArgs(p, 0, 0); err != nil {
		return nil, err
	}
	if p.Key != "" {
		return nil, fmt.Errorf("op %q of a json key is not pushed", p.Op)
	}
	isNull, err := nullTest(c)
	if err != nil {
		return nil, err
	}
	if p.Op == opNull {
		return isNull, nil
	}
	return func(b []byte, null bool) bool { return !isNull(b, null) }, nil
}

// boolPred compiles a bool column's test: true or false.
func boolPred(p pred) (func([]byte, bool) bool, error) {
	if p.Op != opTrue && p.Op != opFalse {
		return nil, fmt.Errorf("op %q on a bool column", p.Op)
	}
	if err := wantArgs(p, 0, 0); err != nil {
		return nil, err
	}
	v := byte(0)
	if p.Op == opTrue {
		v = 1
	}
	return func(b []byte, null bool) bool {
		return !null && len(b) == 1 && (b[0] != 0) == (v != 0)
	}, nil
}

// strPred compiles a string comparison of a text column, or of a class
// label's name.
func strPred(p pred, c column) (func([]byte, bool) bool, error) {
	if err := strOp(p); err != nil {
		return nil, err
	}
	match := strMatcher(p)
	if c.kind == mapText {
		return func(b []byte, null bool) bool { return !null && match(b) }, nil
	}
	names := make([][]byte, len(c.names))
	for i, n := range c.names {
		names[i] = []byte(n)
	}
	return func(b []byte, null bool) bool {
		i, ok := enumIndex(c.col.DType, b, null)
		return ok && i < len(names) && match(names[i])
	}, nil
}

// jsonPred compiles a string comparison of a json column's key.
func jsonPred(p pred) (func([]byte, bool) bool, error) {
	if p.Key == "" || !jsonKeyRE.MatchString(p.Key) {
		return nil, fmt.Errorf("a json column is filtered by a key such as \"src\" (have %q)", p.Key)
	}
	if err := strOp(p); err != nil {
		return nil, err
	}
	match := strMatcher(p)
	key := []byte(p.Key)
	return func(b []byte, null bool) bool {
		if null || len(b) == 0 {
			return false // SQL NULL: (j->>'k') is NULL
		}
		v, kind := jsonMember(b, key)
		switch kind {
		case jsonAbsent, jsonNull:
			return false
		case jsonString:
			return match(v)
		}
		return true // another kind of value, or not sure: keep
	}, nil
}

// strOp checks a string comparison's operator and constants.
func strOp(p pred) error {
	switch p.Op {
	case opEQ, opNE:
		if len(p.Str) != 1 || len(p.Num) != 0 {
			return fmt.Errorf("op %q takes one string", p.Op)
		}
	case opIn:
		if len(p.Str) == 0 || len(p.Num) != 0 {
			return fmt.Errorf("op %q takes strings", p.Op)
		}
	default:
		return fmt.Errorf("op %q on strings is not pushed", p.Op)
	}
	return nil
}

// strMatcher compares a value's bytes with p's strings, bytewise (DuckDB's
// default, binary collation: the planner pushes nothing under another).
func strMatcher(p pred) func([]byte) bool {
	strs := make([][]byte, len(p.Str))
	for i, s := range p.Str {
		strs[i] = []byte(s)
	}
	if p.Op == opNE {
		return func(b []byte) bool { return !bytes.Equal(b, strs[0]) }
	}
	return func(b []byte) bool {
		for _, s := range strs {
			if bytes.Equal(b, s) {
				return true
			}
		}
		return false
	}
}

// nullTest says whether a value of column c reads as NULL in DuckDB: a
// null sample; a json sample with no bytes; a class label outside the
// class names.
func nullTest(c column) (func([]byte, bool) bool, error) {
	switch c.kind {
	case mapScalar, mapText:
		return func(_ []byte, null bool) bool { return null }, nil
	case mapJSON:
		return func(b []byte, null bool) bool { return null || len(b) == 0 }, nil
	case mapEnum:
		n := len(c.names)
		return func(b []byte, null bool) bool {
			i, ok := enumIndex(c.col.DType, b, null)
			return !ok || i >= n
		}, nil
	}
	return nil, fmt.Errorf("IS NULL is not pushed on this column type")
}

// enumIndex reads a class label as an index; ok is false for null and for
// a negative or unreadable label (both NULL in DuckDB).
func enumIndex(d schema.DType, b []byte, null bool) (int, bool) {
	if null || len(b) != d.Size() || len(b) == 0 {
		return 0, false
	}
	return asIndex(d.Value(b, 0))
}

// Slack of a numeric bound: DuckDB may compare a column with a constant
// in the column's type (a FLOAT column with 0.9 cast to FLOAT), in DOUBLE
// or exactly (an integer column with a DECIMAL), and the scan compares in
// float64; widening each bound by more than any of those roundings (2^-24
// relative for FLOAT, 2^-53 for DOUBLE and for large integers in float64,
// 2^-150 absolute for FLOAT subnormals) keeps every row that any of them
// keeps.
const (
	relSlack = 0x1p-20
	absSlack = 0x1p-140
)

// numTest is a compiled comparison of a numeric column: keep a value in
// any [lo[k], hi[k]], and NaN; or, for <>, any value but x.
type numTest struct {
	d      schema.DType
	lo, hi []float64
	ne     bool
	x      float64 // ne: the value dropped (NaN: none)
}

func (t *numTest) keepValue(v float64) bool {
	if t.ne {
		return v != t.x
	}
	if v != v {
		return true // NaN
	}
	for k := range t.lo {
		if v >= t.lo[k] && v <= t.hi[k] {
			return true
		}
	}
	return false
}

// overlaps reports whether some value in [lo, hi] may be kept.
func (t *numTest) overlaps(lo, hi float64) bool {
	if t.ne {
		return lo != hi || lo != t.x
	}
	for k := range t.lo {
		if t.hi[k] >= lo && t.lo[k] <= hi {
			return true
		}
	}
	return false
}

// keep judges one stored value.
func (t *numTest) keep(b []byte, null bool) bool {
	if null {
		return false
	}
	if len(b) != t.d.Size() {
		return true // not a scalar: DuckDB's conversion reports it
	}
	return t.keepValue(t.d.Float64(b, 0))
}

// run judges len(rows) values stored one after another in data, appending
// the rows kept to out (which may share rows' memory up to the row read).
func (t *numTest) run(data []byte, rows, out []int32) []int32 {
	switch t.d {
	case schema.Float32:
		for j, li := range rows {
			if t.keepValue(float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*j:])))) {
				out = append(out, li)
			}
		}
	case schema.Float64:
		for j, li := range rows {
			if t.keepValue(math.Float64frombits(binary.LittleEndian.Uint64(data[8*j:]))) {
				out = append(out, li)
			}
		}
	case schema.Int64:
		for j, li := range rows {
			if t.keepValue(float64(int64(binary.LittleEndian.Uint64(data[8*j:])))) {
				out = append(out, li)
			}
		}
	case schema.Int32:
		for j, li := range rows {
			if t.keepValue(float64(int32(binary.LittleEndian.Uint32(data[4*j:])))) {
				out = append(out, li)
			}
		}
	default:
		for j, li := range rows {
			if t.keepValue(t.d.Float64(data, j)) {
				out = append(out, li)
			}
		}
	}
	return out
}

// numPred compiles a comparison of a numeric column with numbers. NaN,
// which DuckDB orders above every number and equal to itself, is always
// kept.
func numPred(p pred, c column) (*numTest, error) {
	d := c.col.DType
	if d.Size() <= 0 {
		return nil, fmt.Errorf("dtype %s is not numeric", d)
	}
	for _, x := range p.Num {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("constant %v is not pushed", x)
		}
	}
	if len(p.Str) != 0 {
		return nil, fmt.Errorf("op %q on a numeric column takes numbers", p.Op)
	}
	slack := func(x float64) float64 { return math.Abs(x)*relSlack + absSlack }
	t := &numTest{d: d}
	switch p.Op {
	case opGT, opGE:
		if len(p.Num) != 1 {
			return nil, fmt.Errorf("op %q takes one number", p.Op)
		}
		t.lo, t.hi = []float64{p.Num[0] - slack(p.Num[0])}, []float64{math.Inf(1)}
	case opLT, opLE:
		if len(p.Num) != 1 {
			return nil, fmt.Errorf("op %q takes one number", p.Op)
		}
		t.lo, t.hi = []float64{math.Inf(-1)}, []float64{p.Num[0] + slack(p.Num[0])}
	case opEQ, opIn:
		if len(p.Num) == 0 || (p.Op == opEQ && len(p.Num) != 1) {
			return nil, fmt.Errorf("op %q takes numbers", p.Op)
		}
		for _, x := range p.Num {
			t.lo, t.hi = append(t.lo, x-slack(x)), append(t.hi, x+slack(x))
		}
	case opNE:
		if len(p.Num) != 1 {
			return nil, fmt.Errorf("op %q takes one number", p.Op)
		}
		// Drop only a value certainly equal to the constant in any type
		// DuckDB may compare in: an integer below 2^24 in magnitude, which
		// every numeric type holds exactly (values beyond 2^53 that
		// float64 rounds are far from it).
		t.ne, t.x = true, p.Num[0]
		if t.x != math.Trunc(t.x) || math.Abs(t.x) >= 1<<24 {
			t.x = math.NaN() // drop nothing but nulls
		}
	default:
		return nil, fmt.Errorf("op %q on a numeric column", p.Op)
	}
	return t, nil
}
