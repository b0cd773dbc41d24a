package query

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"
)

// A json column's key read as text, once per distinct document.
//
// DuckDB evaluates (col->>'key') by parsing each row's document, and a
// scan of loch's dictionary chunks hands it the same few documents over
// and over (DuckDB's C API cannot hand a table function's vector over as
// a dictionary with a size, which is what lets DuckDB evaluate a function
// once per dictionary entry on its own Parquet reader). rewrite therefore
// turns (col->>'key') over a json column of a loch table, key a plain
// name, into
//
//	coalesce(loch_json_text(col, 'key'), col->>'key')
//
// loch_json_text answers once per distinct document of a vector, and only
// where it is sure to give DuckDB's answer (jsonTextOf); elsewhere it
// answers NULL, and COALESCE, which evaluates its second argument only for
// the rows its first left NULL, asks DuckDB. A rewritten SELECT item keeps
// the name the item had (jsonTextNames), so results look as they did.

// jsonTextFunction is the scalar function of the rewrite above:
// loch_json_text(doc, key) is doc->>key where it is sure, else NULL.
const jsonTextFunction = "loch_json_text"

type jsonTextFunc struct{}

func (jsonTextFunc) Config() duckdb.ScalarFuncConfig {
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{str, str}, ResultTypeInfo: str, SpecialNullHandling: true}
}

func (jsonTextFunc) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{ChunkContextExecutor: func(_ context.Context, st *duckdb.ChunkIteratorState) error {
		in := st.GetInputChunk()
		doc, key, out := handleOf(in.GetVector(0)), handleOf(in.GetVector(1)), handleOf(st.GetResultVector(), nil)
		if doc.Ptr == nil || key.Ptr == nil || out.Ptr == nil {
			// No raw access: NULL everywhere, and DuckDB answers.
			for row, err := range st.Rows() {
				if err != nil {
					return err
				}
				if err := row.SetResult(nil); err != nil {
					return err
				}
			}
			return nil
		}
		jsonTexts(doc, key, out, in.GetSize())
		return nil
	}}
}

// handleOf is DuckDB's handle of a duckdb-go vector (vectorHandle), or a
// zero handle.
func handleOf(v duckdb.Vector, err error) mapping.Vector {
	if !rawWrites {
		return mapping.Vector{}
	}
	return rawHandle(innerVector(v, err))
}

// duckString is DuckDB's duckdb_string_t: up to 12 bytes inline, longer
// ones through ptr.
type duckString struct {
	n   uint32
	pre [4]byte
	ptr unsafe.Pointer
}

func (s *duckString) bytes() []byte {
	if s.n <= 12 {
		return unsafe.Slice((*byte)(unsafe.Pointer(&s.pre[0])), s.n)
	}
	return unsafe.Slice((*byte)(s.ptr), s.n)
}

// jsonTexts fills out's n rows with loch_json_text of doc's and key's:
// one answer per distinct document of the vector (textMemo).
func jsonTexts(doc, key, out mapping.Vector, n int) {
	docs := unsafe.Slice((*duckString)(mapping.VectorGetData(doc)), n)
	keys := unsafe.Slice((*duckString)(mapping.VectorGetData(key)), n)
	docValid, keyValid := validMask(doc, n), validMask(key, n)
	m := textMemos.Get().(*textMemo)
	defer m.release()
	if !m.repeats(docs, docValid) {
		// DuckDB parses faster than loch_json_text does once per row.
		mapping.VectorEnsureValidityWritable(out)
		clear(unsafe.Slice((*uint64)(mapping.VectorGetValidity(out)), (n+63)/64))
		return
	}
	for r := range n {
		if !isValid(docValid, r) || !isValid(keyValid, r) || !m.answer(&docs[r], keys[r].bytes(), r) {
			m.nulls = append(m.nulls, r)
		}
	}
	m.strs.assign(out)
	if len(m.nulls) > 0 {
		mapping.VectorEnsureValidityWritable(out)
		mask := unsafe.Slice((*uint64)(mapping.VectorGetValidity(out)), (n+63)/64)
		for _, r := range m.nulls {
			mask[r/64] &^= 1 << (r % 64)
		}
	}
}

// repeats reports whether the documents of a vector repeat: whether at
// most half of the first 64 valid rows have documents of their own, by
// the copy a document longer than 12 bytes points to (the scan writes the
// rows of one value as one copy) or a shorter one's bytes.
func (m *textMemo) repeats(docs []duckString, valid []uint64) bool {
	seen := m.seen
	rows := 0
	for r := 0; r < len(docs) && rows < 64; r++ {
		if !isValid(valid, r) {
			continue
		}
		rows++
		if s := &docs[r]; s.n > 12 {
			seen[s.ptr] = true
		} else {
			seen[string(s.bytes())] = true
		}
	}
	return len(seen)*2 <= rows
}

// textMemos are textMemos for reuse: a selective filter leaves DuckDB
// vectors of a few rows, so each call's setup counts.
var textMemos = sync.Pool{New: func() any { return &textMemo{byDoc: map[string]textAnswer{}, seen: make(map[any]bool, 64)} }}

// release forgets m's answers and puts it back in textMemos.
func (m *textMemo) release() {
	m.strs.reset()
	m.key, m.nulls, m.hits = nil, m.nulls[:0], 0
	clear(m.byPtr[:])
	clear(m.byDoc)
	clear(m.seen)
	textMemos.Put(m)
}

// textAnswer is loch_json_text's answer for a document: bytes
// [start, end) of the batch, or none (NULL) when ok is false.
type textAnswer struct {
	start, end int64
	ok         bool
}

// textMemo gathers a vector's answers (strs) and remembers them for the
// key of its first row (the rewrite's key is a constant): by the address
// of a document longer than 12 bytes (DuckDB's strings of rows of one
// value often share one copy: loch's scan writes a dictionary entry's
// rows so), else by its bytes, until documents turn out not to repeat.
type textMemo struct {
	strs  stringBatch
	key   []byte
	byPtr [128]struct {
		ptr unsafe.Pointer
		n   uint32
		a   textAnswer
	}
	byDoc map[string]textAnswer
	seen  map[any]bool // repeats' documents
	hits  int
	nulls []int // the rows answered NULL
}

// answer gathers row r's answer for document s and key k, and reports
// whether it has one.
func (m *textMemo) answer(s *duckString, k []byte, r int) bool {
	if m.key == nil {
		m.key = k
	}
	memoize := bytes.Equal(k, m.key) && (m.hits > 0 || len(m.byDoc) < 64)
	slot := &m.byPtr[(uintptr(s.ptr)>>4)%uintptr(len(m.byPtr))]
	var a textAnswer
	seen := false
	switch {
	case !memoize:
	case s.n > 12 && slot.ptr == s.ptr && slot.n == s.n:
		a, seen = slot.a, true
	default:
		a, seen = m.byDoc[string(s.bytes())]
	}
	if seen {
		m.hits++
		if a.ok {
			m.strs.addRef(r, a.start, a.end)
		}
	} else {
		if v, ok := jsonTextOf(s.bytes(), k); ok {
			a.start, a.end = m.strs.add(r, v)
			a.ok = true
		}
		if memoize {
			m.byDoc[string(s.bytes())] = a
		}
	}
	if memoize && s.n > 12 {
		slot.ptr, slot.n, slot.a = s.ptr, s.n, a
	}
	return a.ok
}

// validMask is a vector's validity mask over n rows, nil when all are
// valid.
func validMask(v mapping.Vector, n int) []uint64 {
	p := mapping.VectorGetValidity(v)
	if p == nil {
		return nil
	}
	return unsafe.Slice((*uint64)(p), (n+63)/64)
}

func isValid(mask []uint64, r int) bool {
	return mask == nil || mask[r/64]&(1<<(r%64)) != 0
}

// jsonTextOf returns doc->>key as DuckDB reads it, and whether it is sure
// of it: key is a plain name (jsonKeyRE), doc a valid UTF-8 JSON object
// that names key once and has no \u escapes, and its value a string
// (DuckDB unescapes it as encoding/json does), an integer of at most 18 digits,
// true or false (DuckDB writes these as they are written). An absent key,
// a null, any other value or document is not sure: DuckDB answers those.
func jsonTextOf(doc, key []byte) ([]byte, bool) {
	if !jsonKeyRE.Match(key) || !utf8.Valid(doc) || bytes.Contains(doc, []byte(`\u`)) || !json.Valid(doc) {
		return nil, false
	}
	v, kind := jsonMember(doc, key)
	switch kind {
	case jsonString:
		return v, true
	case jsonOther:
		return v, plainInteger(v) || string(v) == "true" || string(v) == "false"
	}
	return nil, false
}

// plainInteger reports whether b is -?(0|[1-9][0-9]*) of at most 18
// digits, not -0.
func plainInteger(b []byte) bool {
	digits := bytes.TrimPrefix(b, []byte("-"))
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0' && (len(digits) > 1 || len(b) > 1)) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// registerJSONText registers loch_json_text.
func registerJSONText(conn *sql.Conn) error {
	if err := duckdb.RegisterScalarUDF(conn, jsonTextFunction, jsonTextFunc{}); err != nil {
		return fmt.Errorf("query: register %s: %w", jsonTextFunction, err)
	}
	return nil
}

// mentionsJSONText reports whether q may use (col->>'key'): what
// rewrite turns into loch_json_text.
func mentionsJSONText(q string) bool {
	return strings.Contains(q, "->>") || strings.Contains(q, JSONTextOp) || strings.Contains(strings.ToLower(q), pgJSONTextFunction)
}

// replaceJSONText rewrites, in each SELECT of stmt whose FROM is one loch
// table, (col->>'key') over a json column of that table as above, and
// reports whether it rewrote any. An item of a SELECT list it changes,
// unless aliased, is aliased by the name DuckDB gave it as written.
func (e *Engine) replaceJSONText(ctx context.Context, stmt map[string]any, shadowed map[string]bool, binary bool) (bool, error) {
	changed := false
	var err error
	walkSelects(stmt, func(node map[string]any) {
		t, ok := e.jsonTable(node["from_table"], shadowed)
		if !ok || err != nil {
			return
		}
		t.binary = binary
		for k, x := range node {
			switch k {
			case "select_list", "from_table", "cte_map":
			case "where_clause":
				from, _ := node["from_table"].(map[string]any)
				changed = t.jsonTextWhere(x, from["type"] == "TABLE_FUNCTION") || changed
			default:
				changed = t.jsonText(x) || changed
			}
		}
		for _, x := range anySlice(node["select_list"]) {
			item, _ := x.(map[string]any)
			orig, cerr := deepCopy(item)
			if cerr != nil || !t.jsonText(item) {
				continue
			}
			changed = true
			if item["alias"] == "" {
				if item["alias"], err = e.itemName(ctx, orig); err != nil {
					return
				}
			}
		}
	})
	return changed, err
}

// jsonTextMinRows is the rows below which a table's (col->>'key') is
// left as written: a statement the rewrite changes is printed again by
// DuckDB (json_deserialize_sql), a round trip of about 1 ms the first
// time the engine sees its text, which DuckDB's parse of that many
// documents (about 150 ns each) would not repay. Tests lower it.
var jsonTextMinRows int64 = 1 << 16

// jsonTable is the loch table a SELECT reads when its FROM is one (a
// plain view of the engine, or the loch_scan_at call pushdown made of
// one) of at least jsonTextMinRows rows.
func (e *Engine) jsonTable(x any, shadowed map[string]bool) (pushTable, bool) {
	from, _ := x.(map[string]any)
	if from == nil {
		return pushTable{}, false
	}
	var t pushTable
	var url string
	t.alias, _ = from["alias"].(string)
	switch from["type"] {
	case "BASE_TABLE":
		name, ok := plainTable(from, shadowed)
		if !ok {
			return pushTable{}, false
		}
		if url, ok = e.viewURL(name); !ok {
			return pushTable{}, false
		}
		t.name = name
	case "TABLE_FUNCTION":
		fn, _ := from["function"].(map[string]any)
		ch := anySlice(fn["children"])
		if fn == nil || fn["function_name"] != scanAt || len(ch) == 0 || t.alias == "" {
			return pushTable{}, false
		}
		var ok bool
		if url, ok = stringConst(ch[0]); !ok {
			return pushTable{}, false
		}
		t.name = t.alias
	default:
		return pushTable{}, false
	}
	sc, err := e.scan(url, "", "")
	if err != nil || sc.Len() < jsonTextMinRows {
		return pushTable{}, false
	}
	for _, c := range sc.Columns() {
		t.cols = append(t.cols, mapColumn(c))
	}
	return t, true
}

// jsonText rewrites the (col->>'key') of t's json columns in expression
// x, not in its subqueries, and reports whether it found any.
func (t pushTable) jsonText(x any) bool {
	found := false
	switch v := x.(type) {
	case map[string]any:
		if v["class"] == "SUBQUERY" {
			return false
		}
		if o, ok := t.operand(v); ok && o.key != "" {
			call, asked := maps.Clone(v), maps.Clone(v)
			call["function_name"], call["is_operator"], call["alias"] = jsonTextFunction, false, ""
			asked["alias"] = ""
			alias := v["alias"]
			clear(v)
			v["class"], v["type"], v["alias"] = "OPERATOR", "OPERATOR_COALESCE", alias
			v["query_location"], v["children"] = json.Number("18446744073709551615"), []any{call, asked}
			return true
		}
		for _, c := range v {
			found = t.jsonText(c) || found
		}
	case []any:
		for _, c := range v {
			found = t.jsonText(c) || found
		}
	}
	return found
}

// jsonTextWhere rewrites the (col->>'key') of a WHERE clause but for
// the conjuncts that pushdown passed to t's scan (when pushed, t is a
// loch_scan_at call): DuckDB sees only the few rows that passed them, and
// a call of loch_json_text per vector of a few rows costs more than
// parsing them.
func (t pushTable) jsonTextWhere(x any, pushed bool) bool {
	where, _ := x.(map[string]any)
	if where == nil {
		return false
	}
	found := false
	for _, c := range conjuncts(where) {
		if !pushed || len(t.pushable(c)) == 0 {
			found = t.jsonText(c) || found
		}
	}
	return found
}

// itemName is the name DuckDB gives a SELECT item written as item: its
// text as DuckDB prints it.
func (e *Engine) itemName(ctx context.Context, item map[string]any) (string, error) {
	tree, err := e.parse(ctx, "SELECT 1")
	if err != nil || len(tree.Statements) != 1 {
		return "", fmt.Errorf("query: name a SELECT item: %w", err)
	}
	stmt, err := decodeStatement(tree.Statements[0])
	if err != nil {
		return "", err
	}
	node, _ := stmt["node"].(map[string]any)
	node["select_list"] = []any{item}
	text, err := e.deserialize(ctx, "SELECT 1", stmt)
	if err != nil {
		return "", err
	}
	name, ok := strings.CutPrefix(text, "SELECT ")
	if !ok {
		return "", fmt.Errorf("query: name a SELECT item: DuckDB printed %q", text)
	}
	return name, nil
}

// deepCopy copies a syntax tree's node.
func deepCopy(x map[string]any) (map[string]any, error) {
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return decodeStatement(b)
}
