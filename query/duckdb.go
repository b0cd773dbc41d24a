package query

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/lru"
)

// This file holds everything loch takes from DuckDB and duckdb-go beyond
// their documented APIs, so that an upgrade that changes one of them
// fails TestDuckDBInternals (duckdb_test.go), which pins each, and not a
// user's query:
//
//   - json_serialize_sql's syntax tree (parse, decodeStatement): the
//     node fields rewrite.go and pushdown.go read and write, and
//     json_deserialize_sql taking the tree back;
//   - query_location, a node's byte offset in the query's text (location),
//     where pushdown splices a table reference (identEnd, splice);
//   - DuckDB's parser errors for an unterminated string, quoted name,
//     dollar-quoted string or comment, which Parse reports as
//     ErrIncomplete;
//   - duckdb.Conn.Prepare refusing several statements (statementType);
//   - duckdb-go's unexported vector fields, read by reflection
//     (vectorHandle, vectorData). duckdb-go's public VectorWriter cannot
//     replace them: it writes VARCHAR only (not JSON), one value per C
//     call, and exposes no data pointer for the scalars.

// parsed is json_serialize_sql's answer.
type parsed struct {
	Error      bool              `json:"error"`
	Message    string            `json:"error_message"`
	Type       string            `json:"error_type"`
	Position   string            `json:"position"`
	Statements []json.RawMessage `json:"statements"`
}

// parse parses q with DuckDB's parser into its syntax tree.
func (e *Engine) parse(ctx context.Context, q string) (parsed, error) {
	if !utf8.ValidString(q) {
		return parsed{}, fmt.Errorf("query %s: not valid UTF-8 text: %w", oneLineSQL(strings.ToValidUTF8(q, "\uFFFD")), base.ErrInvalidArgument)
	}
	// A statement is parsed by pushdown and again by rewrite, the same
	// text when pushdown changed nothing, and a long-lived engine sees the
	// same statements again: answers are kept by text (their statements
	// are raw JSON, decoded afresh by each user).
	if tree, ok := e.texts.parsed.Get(q); ok {
		return tree, nil
	}
	var js string
	if err := e.conn.QueryRowContext(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", q).Scan(&js); err != nil {
		return parsed{}, fmt.Errorf("query: parse: %w", err)
	}
	var tree parsed
	if err := json.Unmarshal([]byte(js), &tree); err != nil {
		return parsed{}, fmt.Errorf("query: parse: %w", err)
	}
	e.texts.parsed.Add(q, tree, int64(len(q)+len(js)))
	return tree, nil
}

// textCacheBytes bounds each of an engine's caches of DuckDB's answers
// on statement text (textCache).
const textCacheBytes = 1 << 20

// textCache keeps DuckDB's answers that depend on a statement's text
// alone: its syntax tree (json_serialize_sql, by the text) and the SQL
// of a rewritten tree (json_deserialize_sql, by the tree's JSON). Both
// are pure functions of their input (DuckDB's parser reads no setting
// that a read-only statement can change), so they are kept for the
// engine's life, least recently used dropped beyond textCacheBytes each:
// a statement run again (a loader's query each epoch, a notebook cell)
// skips two to three of its DuckDB round trips. Guarded by Engine.mu.
type textCache struct {
	parsed *lru.Cache[string, parsed]
	sql    *lru.Cache[string, string]
}

func newTextCache() textCache {
	return textCache{parsed: lru.New[string, parsed](textCacheBytes, nil), sql: lru.New[string, string](textCacheBytes, nil)}
}

// decodeStatement decodes one statement's tree, numbers as json.Number
// (constants and locations keep every digit).
func decodeStatement(raw json.RawMessage) (map[string]any, error) {
	var stmt map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&stmt); err != nil {
		return nil, fmt.Errorf("query: parse: %w", err)
	}
	return stmt, nil
}

// location is a node's byte offset in the query text.
func location(n map[string]any) (int, bool) {
	num, ok := n["query_location"].(json.Number)
	if !ok {
		return 0, false
	}
	at, err := strconv.ParseInt(string(num), 10, 64)
	if err != nil || at < 0 || at > math.MaxInt32 {
		return 0, false
	}
	return int(at), true
}

// identEnd returns the end of the identifier name written at q[at:]
// (bare, without case, or double-quoted), or false when it is not there.
func identEnd(q string, at int, name string) (int, bool) {
	if at >= len(q) {
		return 0, false
	}
	if quoted := quoteIdent(name); strings.HasPrefix(q[at:], quoted) {
		return at + len(quoted), true
	}
	end := at + len(name)
	if end > len(q) || !strings.EqualFold(q[at:end], name) || !identRE.MatchString(name) {
		return 0, false
	}
	if end < len(q) {
		if c := q[end]; c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80 {
			return 0, false
		}
	}
	return end, true
}

// textEdit replaces q[at:end] with text.
type textEdit struct {
	at, end int
	text    string
}

// splice applies edits to q, or returns q as it is when two overlap (not
// expected: nothing is changed then).
func splice(q string, edits []textEdit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].at > edits[j].at })
	for k, s := range edits {
		if k > 0 && s.end > edits[k-1].at {
			return q
		}
	}
	for _, s := range edits {
		q = q[:s.at] + s.text + q[s.end:]
	}
	return q
}

// ErrIncomplete marks a statement that ends inside a string, quoted name,
// dollar-quoted string or comment: more text may complete it.
var ErrIncomplete = base.Mark(base.ErrInvalidArgument, "incomplete statement", nil)

// parser is an empty DuckDB database whose connection only ever parses
// (Parse): nothing is bound or run on it. DuckDB connections are not
// safe for concurrent use, hence the lock.
var parser struct {
	once sync.Once
	mu   sync.Mutex
	db   mapping.Database
	conn mapping.Connection
	err  error
}

// Parse parses sql with DuckDB's parser, binding and running nothing, and
// returns how many statements it holds (0 for only spaces and comments).
// The error is DuckDB's parser error, marked ErrIncomplete when sql ends
// inside a string, quoted name, dollar-quoted string or /* comment, and
// loch.ErrInvalidArgument otherwise. Parse is safe for concurrent use.
func Parse(sql string) (int, error) {
	if !utf8.ValidString(sql) {
		return 0, fmt.Errorf("query %s: not valid UTF-8 text: %w", oneLineSQL(strings.ToValidUTF8(sql, "\uFFFD")), base.ErrInvalidArgument)
	}
	parser.once.Do(func() {
		var cfg mapping.Config
		mapping.CreateConfig(&cfg)
		mapping.SetConfig(cfg, "threads", "1")
		var msg string
		state := mapping.OpenExt("", &parser.db, cfg, &msg)
		mapping.DestroyConfig(&cfg)
		if state == mapping.StateError {
			parser.err = fmt.Errorf("query: open DuckDB's parser: %s", msg)
			return
		}
		if mapping.Connect(parser.db, &parser.conn) == mapping.StateError {
			mapping.Close(&parser.db)
			parser.err = fmt.Errorf("query: connect to DuckDB's parser")
		}
	})
	if parser.err != nil {
		return 0, parser.err
	}
	parser.mu.Lock()
	defer parser.mu.Unlock()
	var stmts mapping.ExtractedStatements
	n := mapping.ExtractStatements(parser.conn, sql, &stmts)
	defer mapping.DestroyExtracted(&stmts)
	if n > 0 {
		return int(n), nil
	}
	msg := mapping.ExtractStatementsError(stmts)
	switch {
	case msg == "":
		return 0, nil
	case strings.Contains(msg, "unterminated "):
		return 0, base.Markf(ErrIncomplete, "%s", oneLineMsg(msg))
	}
	return 0, base.Markf(base.ErrInvalidArgument, "%s", oneLineMsg(msg))
}

// oneLineMsg is the first line of a DuckDB error message (the rest
// quotes the statement with a caret under the error).
func oneLineMsg(msg string) string {
	first, _, _ := strings.Cut(msg, "\n")
	return first
}

// statementType is DuckDB's type of the one statement q, from preparing
// it (which binds it, and runs nothing). duckdb.Conn.Prepare, unlike
// PrepareContext, refuses several statements instead of running all but
// the last.
func (e *Engine) statementType(q string) (duckdb.StmtType, error) {
	t := duckdb.STATEMENT_TYPE_INVALID
	err := e.conn.Raw(func(dc any) error {
		c, ok := dc.(*duckdb.Conn)
		if !ok {
			return fmt.Errorf("query: DuckDB connection is a %T", dc)
		}
		st, err := c.Prepare(q)
		if err != nil {
			return err
		}
		defer st.Close()
		s, ok := st.(*duckdb.Stmt)
		if !ok {
			return fmt.Errorf("query: DuckDB statement is a %T", st)
		}
		t, err = s.StatementType()
		return err
	})
	return t, err
}

// rawWrites turns on writing fixed-size scalars straight into DuckDB's
// vector memory (vectorData). Tests turn it off to check the fallback,
// duckdb-go's typed setters, gives the same answers.
var rawWrites = true

// probe, when set by a test, is told whether each column fill found the
// vector's memory.
var probe func(found bool)

// vectorHandle returns DuckDB's handle of a chunk's column ci (duckdb-go's
// unexported field, read as vectorData reads its data pointer), or a zero
// handle when it cannot be had: text and json are assigned through it,
// one C call per value, without duckdb-go's setters (which marshal a JSON
// value again with encoding/json).
func vectorHandle(chunk duckdb.DataChunk, ci int) mapping.Vector {
	return rawHandle(vectorStruct(chunk, ci))
}

// rawHandle is the handle that duckdb-go's unexported vector struct inner
// keeps, or a zero handle.
func rawHandle(inner reflect.Value) mapping.Vector {
	if !inner.IsValid() {
		return mapping.Vector{}
	}
	vec := inner.FieldByName("vec")
	if !vec.IsValid() || vec.Kind() != reflect.Struct {
		return mapping.Vector{}
	}
	ptr := vec.FieldByName("Ptr")
	if !ptr.IsValid() || ptr.Kind() != reflect.UnsafePointer {
		return mapping.Vector{}
	}
	return mapping.Vector{Ptr: ptr.UnsafePointer()}
}

// vectorStruct is duckdb-go's unexported vector struct of column ci.
func vectorStruct(chunk duckdb.DataChunk, ci int) reflect.Value {
	if !rawWrites {
		return reflect.Value{}
	}
	return innerVector(chunk.GetVector(ci))
}

// innerVector is duckdb-go's unexported vector struct behind vec.
func innerVector(vec duckdb.Vector, err error) reflect.Value {
	if err != nil {
		return reflect.Value{}
	}
	v := reflect.ValueOf(vec)
	if v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	inner := v.FieldByName("v")
	if !inner.IsValid() || inner.Kind() != reflect.Pointer || inner.IsNil() {
		return reflect.Value{}
	}
	return inner.Elem()
}

// vectorData returns the data pointer of a chunk's column ci, where a
// scalar column's values lie one after the other, or nil when it cannot
// be had. duckdb-go does not export it: this reads its unexported field
// by reflection (a DuckDB vector's data pointer is valid while the chunk
// is), and any change to that layout makes it nil and the caller falls
// back to SetChunkValue, about 3 times slower.
func vectorData(chunk duckdb.DataChunk, ci int) unsafe.Pointer {
	inner := vectorStruct(chunk, ci)
	if !inner.IsValid() {
		return nil
	}
	data := inner.FieldByName("dataPtr")
	if !data.IsValid() || data.Kind() != reflect.UnsafePointer {
		return nil
	}
	return data.UnsafePointer()
}

// connHandle is DuckDB's handle of a duckdb-go connection, for the C
// API's streaming results (Stream), which duckdb-go does not offer: its
// unexported field conn, read by reflection, its type checked; a change
// of that layout is an error, not a crash.
func connHandle(c any) (mapping.Connection, error) {
	v := reflect.ValueOf(c)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("conn"); f.IsValid() && f.Type() == reflect.TypeFor[mapping.Connection]() && f.CanAddr() {
			return *(*mapping.Connection)(unsafe.Pointer(f.UnsafeAddr())), nil
		}
	}
	return mapping.Connection{}, fmt.Errorf("query: streaming: DuckDB's connection is a %T without the handle duckdb-go keeps: %w", c, errors.ErrUnsupported)
}
