//go:build duckdb_arrow

package main

/*
#include "loch.h"
*/
import "C"

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/cdata"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/sqlcat"
)

// SQL in the library (ABI 22): a SQL handle (loch_sql_open) runs DuckDB
// in this process, on one connection kept for the handle's life, over a
// dataset handle's version (loch query URL) or a catalog's tables (loch
// sql ROOT), and hands a query's result over as Arrow through the Arrow
// C data interface (an ArrowArrayStream), with no copy per value. The
// library links DuckDB as a shared library of its own (libduckdb.so
// beside it, linked by setup.py; build tags duckdb_arrow and
// duckdb_use_lib): DuckDB's thread-local storage does not fit the static
// TLS block that a dlopen'ed Go library takes, but a library it needs
// gets dynamic TLS. Without the tag duckdb_arrow the library has no
// DuckDB and these functions are LOCH_NOT_IMPLEMENTED (sql_off.go):
// Python then runs SQL in the loch command.

// sqlObj is the object behind a SQL handle: an engine over a dataset
// handle (ds, e), or a session over a catalog (cat, s).
type sqlObj struct {
	mu sync.Mutex
	// ds is the dataset handle's object; e reads its version, version.
	ds      *dataset
	e       *query.Engine
	version string
	// cat and s: a catalog's session (one kept engine; each statement
	// reads the tables it names at their heads, so it sees every commit).
	cat     *catalogObj
	s       *sqlcat.Session
	closed  bool
	threads int
}

func sqlOf(h C.uintptr_t) (*sqlObj, error) { return lookup[*sqlObj](h, "SQL") }

// sqlOpenOptions are the options of loch_sql_open, as JSON.
type sqlOpenOptions struct {
	// Threads are DuckDB's threads (0: all cores).
	Threads int `json:"threads"`
}

// sqlRunOptions are the options of one statement, as JSON.
type sqlRunOptions struct {
	Seed *uint64 `json:"seed"`
	// Branch, Message and Pins: a catalog statement's branch, commit
	// message and pinned table versions (sqlcat.Session), for this
	// statement only; SET loch_branch and SET loch_message last.
	Branch  *string           `json:"branch"`
	Message *string           `json:"message"`
	Pins    map[string]string `json:"pins"`
	// Table is the table a catalog selection selects ("" the only one the
	// query names).
	Table string `json:"table"`
	// JSON, for a read: its rows go in out's "result" as loch sql --json
	// prints them (one object per row, JSON values parsed), not as Arrow.
	JSON bool `json:"json"`
}

// sqlResult is what loch_sql_run stores in out: what a statement did and,
// for a read with "json", its rows.
type sqlResult struct {
	sqlcat.Result
	Values []json.RawMessage `json:"result,omitempty"`
}

// loch_sql_open opens a SQL handle over target, a dataset or a catalog
// handle, and stores it in *out; options is JSON ({"threads": N}) or NULL.
// The SQL handle must be closed before its target.
//
//export loch_sql_open
func loch_sql_open(target C.uintptr_t, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	var o sqlOpenOptions
	if err := decodeStrict("SQL options", goString(options), &o); err != nil {
		return fail(errOut, err)
	}
	var obj *sqlObj
	var err error
	if ds, derr := datasetOf(target); derr == nil {
		obj, err = openSQL(ds, o)
	} else if co, cerr := catalogOf(target); cerr == nil {
		obj, err = openSQL(co, o)
	} else {
		err = fmt.Errorf("SQL over handle %d: not a dataset or catalog handle: %w", uint64(target), errClosed)
	}
	if err != nil {
		return fail(errOut, err)
	}
	*out = newHandle(obj)
	return C.LOCH_OK
}

// openSQL opens a SQL handle's object over target, a *dataset or a
// *catalogObj.
func openSQL(target any, o sqlOpenOptions) (*sqlObj, error) {
	obj := &sqlObj{threads: o.Threads}
	switch t := target.(type) {
	case *dataset:
		e, err := query.New(context.Background(), t.d, query.Options{Threads: o.Threads})
		if err != nil {
			return nil, err
		}
		obj.ds, obj.e, obj.version = t, e, t.d.Version()
	case *catalogObj:
		// The catalog's store stays open until this handle is closed,
		// as for a table opened from it (catalogObj.retain).
		t.retain()
		obj.cat, obj.s = t, sqlcat.NewSession(t.c)
		obj.s.Threads = o.Threads
		// One engine for the handle's life, each table refreshed when a
		// commit moved it (sqlcat.Session.KeepEngine).
		obj.s.KeepEngine = true
	default:
		return nil, fmt.Errorf("SQL over a %T: want a dataset or a catalog: %w", target, loch.ErrInvalidArgument)
	}
	return obj, nil
}

// loch_sql_close releases a SQL handle (its DuckDB); closing it twice is
// no error.
//
//export loch_sql_close
func loch_sql_close(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withHandle(h, errOut, sqlOf, func(o *sqlObj) error {
		first, err := o.close()
		if first {
			deleteHandle(h)
		}
		return err
	})
}

// close releases the engine; it reports whether this was the first close.
func (o *sqlObj) close() (bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false, nil
	}
	o.closed = true
	if o.e != nil {
		return true, o.e.Close()
	}
	err := o.s.Close()
	o.cat.release()
	return true, err
}

// use runs fn on the open handle, one statement at a time.
func (o *sqlObj) use(fn func() error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return fmt.Errorf("SQL handle is closed: %w", errClosed)
	}
	return fn()
}

// withSQL runs fn on the SQL handle h, one statement at a time, in an
// interruptible context, with the statement's options parsed.
func withSQL(h C.uintptr_t, options *C.char, errOut **C.char, fn func(context.Context, *sqlObj, sqlRunOptions) error) C.int {
	return withHandle(h, errOut, sqlOf, func(o *sqlObj) error {
		var opts sqlRunOptions
		if err := decodeStrict("SQL statement options", goString(options), &opts); err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		return o.use(func() error { return fn(ctx, o, opts) })
	})
}

// loch_sql_run runs one statement. A read (a query) stores its result in
// *stream, an ArrowArrayStream the caller allocated and then imports
// (pyarrow.RecordBatchReader._import_from_c) or releases, and in *out
// {"statement": "QUERY", "rows": N}; a catalog's write (docs/sql.md) is
// one commit, *stream is left as it was, and *out is what it did
// ({"statement", "table", "rows", "version", ...}, as loch sql --json).
//
//export loch_sql_run
func loch_sql_run(h C.uintptr_t, sql, options *C.char, stream unsafe.Pointer, out **C.char, errOut **C.char) (st C.int) {
	return withSQL(h, options, errOut, func(ctx context.Context, o *sqlObj, opts sqlRunOptions) error {
		if stream == nil {
			return invalidf("loch_sql_run: the ArrowArrayStream pointer is NULL")
		}
		if opts.JSON {
			return o.runJSON(ctx, goString(sql), opts, out)
		}
		sch, recs, res, err := o.arrow(ctx, goString(sql), opts)
		if err != nil {
			return err
		}
		if sch != nil {
			if err := exportStream(sch, recs, (*cdata.CArrowArrayStream)(stream)); err != nil {
				return err
			}
		}
		return setJSON(out, res)
	})
}

// arrow runs statement q; a read's result comes as Arrow: its schema
// (nil for a write) and record batches, which the caller releases.
func (o *sqlObj) arrow(ctx context.Context, q string, opts sqlRunOptions) (*arrow.Schema, []arrow.RecordBatch, sqlcat.Result, error) {
	var sch *arrow.Schema
	var recs []arrow.RecordBatch
	read := func(conn driver.Conn, q string) (err error) {
		sch, recs, err = query.ArrowRecords(ctx, conn, q)
		return err
	}
	res, err := o.run(ctx, q, opts, sqlcat.Output{Read: read})
	if err != nil {
		return nil, nil, res, err
	}
	if sch != nil {
		res.Rows = 0
		for _, r := range recs {
			res.Rows += r.NumRows()
		}
	}
	return sch, recs, res, nil
}

// exportStream hands sch and recs (released here) over as the Arrow C
// stream out.
func exportStream(sch *arrow.Schema, recs []arrow.RecordBatch, out *cdata.CArrowArrayStream) error {
	rr, err := array.NewRecordReader(sch, recs)
	for _, r := range recs {
		r.Release()
	}
	if err != nil {
		return fmt.Errorf("sql: result: %w", err)
	}
	cdata.ExportRecordReader(rr, out)
	rr.Release()
	return nil
}

// runJSON runs statement q with a read's rows as JSON in out's "result".
func (o *sqlObj) runJSON(ctx context.Context, q string, opts sqlRunOptions, out **C.char) error {
	r, err := o.json(ctx, q, opts)
	if err != nil {
		return err
	}
	return setJSON(out, r)
}

// json runs statement q with a read's rows as JSON values.
func (o *sqlObj) json(ctx context.Context, q string, opts sqlRunOptions) (sqlResult, error) {
	var buf bytes.Buffer
	res, err := o.run(ctx, q, opts, sqlcat.Output{W: &buf, Format: query.FormatJSON})
	if err != nil {
		return sqlResult{}, err
	}
	r := sqlResult{Result: res}
	if res.Statement == sqlcat.KindQuery {
		r.Values = []json.RawMessage{}
		for _, line := range bytes.Split(buf.Bytes(), []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 {
				r.Values = append(r.Values, json.RawMessage(line))
			}
		}
		r.Rows = int64(len(r.Values))
	}
	return r, nil
}

// run runs statement q with the result read by read.
func (o *sqlObj) run(ctx context.Context, q string, opts sqlRunOptions, output sqlcat.Output) (sqlcat.Result, error) {
	if o.e != nil {
		if err := o.refresh(ctx, opts.Seed); err != nil {
			return sqlcat.Result{}, err
		}
		q = sqlcat.PostgresOperators(q)
		if !sqlcat.IsQuery(q) {
			return sqlcat.Result{}, invalidf("query %s: a dataset's SQL only reads; write through a catalog's SQL (loch.connect(root).sql)", oneLine(q))
		}
		if output.Read == nil {
			n, err := o.e.Write(ctx, q, output.Format, 0, output.W)
			return sqlcat.Result{Statement: sqlcat.KindQuery, Rows: n}, err
		}
		return sqlcat.Result{Statement: sqlcat.KindQuery}, o.e.Raw(ctx, q, output.Read)
	}
	restore := o.apply(opts)
	defer restore()
	return o.s.Run(ctx, q, output)
}

// refresh points the engine at its dataset handle's version, when a
// commit or checkout moved it, and at seed.
func (o *sqlObj) refresh(ctx context.Context, seed *uint64) error {
	o.ds.mu.Lock()
	closed := o.ds.closed
	o.ds.mu.Unlock()
	if closed {
		return fmt.Errorf("SQL over %s: the dataset handle is closed: %w", o.ds.d.URL(), errClosed)
	}
	if v := o.ds.d.Version(); v != o.version {
		if err := o.e.SetDataset(o.ds.d); err != nil {
			return err
		}
		o.version = v
	}
	return o.e.SetSeed(ctx, seed)
}

// apply sets the session's fields that opts names for one statement, and
// returns the function that restores them.
func (o *sqlObj) apply(opts sqlRunOptions) func() {
	s := o.s
	branch, message, pins, seed := s.Branch, s.Message, s.Pins, s.Seed
	if opts.Branch != nil {
		s.Branch = *opts.Branch
	}
	if opts.Message != nil {
		s.Message = *opts.Message
	}
	if opts.Pins != nil {
		s.Pins = maps.Clone(opts.Pins)
	}
	s.Seed = opts.Seed
	return func() {
		// SET loch_branch and SET loch_message last beyond the statement.
		if opts.Branch != nil && s.Branch == *opts.Branch {
			s.Branch = branch
		}
		if opts.Message != nil && s.Message == *opts.Message {
			s.Message = message
		}
		s.Pins, s.Seed = pins, seed
	}
}

// tableSelectionJSON is a selection of a catalog table, as loch sql
// --format selection prints it.
type tableSelectionJSON struct {
	selectionJSON
	Rows  int    `json:"rows"`
	Table string `json:"table,omitempty"`
	URL   string `json:"url,omitempty"`
}

// loch_sql_select runs a SELECT and stores its result as a selection in
// *out: JSON {"version", "sql", "seed", "columns", "rows", "row_ids",
// "joined"}, as loch query --format selection prints it; over a catalog
// with the "table" it selects and its "url" (options "table" names it
// when the query names several).
//
//export loch_sql_select
func loch_sql_select(h C.uintptr_t, sql, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withSQL(h, options, errOut, func(ctx context.Context, o *sqlObj, opts sqlRunOptions) error {
		sel, table, url, err := o.selection(ctx, goString(sql), opts)
		if err != nil {
			return err
		}
		ids := sel.RowIDs
		if ids == nil {
			ids = []uint64{}
		}
		return setJSON(out, tableSelectionJSON{
			selectionJSON: selectionJSON{Name: sel.Name, Version: sel.Version, SQL: sel.SQL, Seed: sel.Seed, Columns: sel.Columns, RowIDs: ids, Joined: sel.Joined},
			Rows:          len(ids), Table: table, URL: url,
		})
	})
}

// selection runs the SELECT q as a selection; over a catalog it also
// returns the table's name and URL.
func (o *sqlObj) selection(ctx context.Context, q string, opts sqlRunOptions) (*loch.Selection, string, string, error) {
	if o.e != nil {
		if opts.Table != "" {
			return nil, "", "", invalidf("query %s: \"table\" is for a catalog's SQL", oneLine(q))
		}
		if err := o.refresh(ctx, opts.Seed); err != nil {
			return nil, "", "", err
		}
		sel, err := o.e.Select(ctx, sqlcat.PostgresOperators(q))
		return sel, "", "", err
	}
	restore := o.apply(opts)
	defer restore()
	sel, table, err := o.s.Select(ctx, q, opts.Seed, opts.Table)
	if err != nil {
		return nil, "", "", err
	}
	t, err := o.cat.c.Table(ctx, table)
	if err != nil {
		return nil, "", "", err
	}
	return sel, t.Name, t.URL, nil
}

// oneLine is a statement on one line, cut to 200 characters, for a
// message.
func oneLine(q string) string {
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 200 {
		q = q[:200] + "..."
	}
	return q
}
