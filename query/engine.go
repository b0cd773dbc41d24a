package query

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/vector"
)

// TableName is the name a query gives the handle's version; the last
// element of the dataset's URL names it too, when it is an identifier.
const TableName = "ds"

// scanFunction is the table macro that reads a dataset, with optional
// ref and as_of; scanAt is the table function it calls, with all three
// (DuckDB's C API cannot make a table function's named argument optional).
// tableFunction reads a table Attach added, by name, at an optional ref
// or time: loch_table('frames', ref => 'v1').
const (
	scanFunction  = "loch_scan"
	scanAt        = "loch_scan_at"
	tableFunction = "loch_table"
)

// Options configure an Engine. The zero value is valid.
type Options struct {
	// Seed seeds random(): the engine replaces it with a hash of the row
	// id and the seed, so ORDER BY random() is a reproducible shuffle
	// (docs/query.md). Nil means seed 0.
	Seed *uint64
	// Threads is the number of DuckDB threads (default GOMAXPROCS).
	Threads int
	// Open are the options loch_scan opens other datasets and versions
	// with (loch.WithStore, ...). Versions of the engine's own dataset
	// are opened on its store.
	Open []loch.Option
	// Cache, when set, keeps the chunks scans read (for example a
	// chunkcache.Disk shared with the loader), so that a second query, or
	// a training run after it, reads them locally.
	Cache chunkcache.Cache
	// FileBase is the directory loch_file resolves relative paths
	// against (default the process's working directory).
	FileBase string
	// FileOpts are the storage options loch_file reads URLs with.
	FileOpts []storage.Option
	// MemoryLimit is DuckDB's memory_limit for the engine ("4GB"; "":
	// DuckDB's default, 80% of the machine's memory).
	MemoryLimit string
	// Sandbox confines SQL to the engine's own tables (its dataset, its
	// versions, and what Attach adds), for SQL from people who may not
	// read the machine's files or the server's other stores (loch serve's
	// query box): DuckDB's external access is off (no file reading
	// functions, COPY, ATTACH or extensions) and its configuration is
	// locked; loch_scan of any other URL and loch_file fail with
	// ErrPermission.
	Sandbox bool
	// SampleData adds a field data BLOB to the STRUCT of image, video,
	// audio and large-tensor columns (docs/query.md): each sample's bytes
	// as stored, read with its row when the query projects the column
	// (sampledata.go). For clients that want the bytes themselves (loch
	// serve --pg sends them as bytea).
	SampleData bool
}

// Engine runs SQL over one dataset handle (and, through loch_scan, any
// other). It owns one in-memory DuckDB database and one connection to it.
// Its methods are safe for concurrent use; queries run one at a time.
// Close releases it.
type Engine struct {
	d    *loch.Dataset
	opts Options

	mu       sync.Mutex
	db       *sql.DB
	conn     *sql.Conn
	jsonType duckdb.TypeInfo
	ctx      context.Context // the running query's, for the table function
	// noPushdown turns filter pushdown off, noPrune the skipping of
	// chunks by their statistics (tests compare the answers).
	noPushdown, noPrune bool
	opened              map[string]*loch.Scan
	handles             []*loch.Dataset
	attached            map[string]*loch.Dataset // by loch_scan URL (attachPrefix + name)
	emitted             atomic.Int64             // rows the scans have handed DuckDB (tests count them)
	fetches             atomic.Int64             // chunks the scans have fetched (tests count them)
	located             atomic.Int64             // morsels the scans have located (tests count them)
	spans               atomic.Int64             // spans of chunks the scans have fetched by range (tests count them)
	failed              scanFailure              // the running query's first scan error (queryError)
	aggregates          map[string]bool          // DuckDB's aggregate function names (grouping)
	// searchers keep the vector indexes a nearest-neighbour ORDER BY
	// opened (knn.go), by handle, for the engine's life
	searchers map[*loch.Dataset]*vector.Searcher
	fts       ftsState      // fts_match and fts_score (fts.go)
	texts     textCache     // DuckDB's answers on statement text (duckdb.go)
	sess      *sessionState // the connection's state pushdown reads, once (pushdown.go)
	defined   definedSets   // the sets of functions and macros defined at first use (define.go)
}

// New starts an engine over d's current version. d may be nil: then the
// engine has no ds view, and tables are the ones Attach adds.
func New(ctx context.Context, d *loch.Dataset, opts Options) (*Engine, error) {
	if opts.Threads <= 0 {
		opts.Threads = defaultThreads()
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, fmt.Errorf("query: start DuckDB: %w", err)
	}
	e := &Engine{d: d, opts: opts, db: db, opened: map[string]*loch.Scan{}, attached: map[string]*loch.Dataset{}, ctx: ctx,
		texts: newTextCache()}
	if err := e.init(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Engine) init(ctx context.Context) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("query: connect to DuckDB: %w", err)
	}
	e.conn = conn
	// Nothing may be installed or loaded: json, parquet and icu are built in.
	for _, q := range []string{
		"SET autoinstall_known_extensions = false",
		"SET autoload_known_extensions = false",
		"SET allow_community_extensions = false",
		fmt.Sprintf("SET threads = %d", e.opts.Threads),
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("query: %s: %w", q, err)
		}
	}
	if e.opts.MemoryLimit != "" {
		q := "SET memory_limit = " + quoteString(e.opts.MemoryLimit)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("query: %s: %w", q, err)
		}
	}
	e.jsonType, err = e.typeOf(ctx, "SELECT NULL::JSON")
	if err != nil {
		return err
	}
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	f := duckdb.ParallelChunkTableFunction{
		Config: duckdb.TableFunctionConfig{
			Arguments: []duckdb.TypeInfo{str, str, str, str}, // url, ref, as_of, filter
		},
		BindArguments: e.bind,
	}
	if err := duckdb.RegisterTableUDF(conn, scanAt, f); err != nil {
		return fmt.Errorf("query: register %s: %w", scanAt, err)
	}
	macro := fmt.Sprintf("CREATE MACRO %s(url, ref := '', as_of := '') AS TABLE SELECT * FROM %s(url, ref, as_of, '')", scanFunction, scanAt)
	if _, err := conn.ExecContext(ctx, macro); err != nil {
		return fmt.Errorf("query: define %s: %w", scanFunction, err)
	}
	macro = fmt.Sprintf("CREATE MACRO %s(name, ref := '', as_of := '') AS TABLE SELECT * FROM %s(%s || lower(name), ref, as_of, '')", tableFunction, scanAt, quoteString(attachPrefix))
	if _, err := conn.ExecContext(ctx, macro); err != nil {
		return fmt.Errorf("query: define %s: %w", tableFunction, err)
	}
	if err := e.defineRandom(ctx, "CREATE MACRO", e.opts.Seed); err != nil {
		return err
	}
	if err := e.registerFile(conn); err != nil {
		return err
	}
	if err := e.createViews(ctx, conn); err != nil {
		return err
	}
	// Statements that change settings are refused (statement.go); a
	// sandbox's settings are locked too, without external access.
	if e.opts.Sandbox {
		for _, q := range []string{"SET enable_external_access = false", "SET lock_configuration = true"} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("query: %s: %w", q, err)
			}
		}
	}
	return nil
}

// createViews makes the engine's own dataset readable as ds and under the
// last element of its URL.
func (e *Engine) createViews(ctx context.Context, conn *sql.Conn) error {
	if e.d == nil {
		return nil
	}
	views := []string{TableName}
	if n := urlTableName(e.d.URL()); n != "" && n != TableName {
		views = append(views, n)
	}
	for _, v := range views {
		q := fmt.Sprintf("CREATE VIEW %s AS SELECT * FROM %s(%s)", quoteIdent(v), scanFunction, quoteString(handleURL))
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("query: create view %s: %w", v, err)
		}
	}
	return nil
}

// handleURL is what the views pass loch_scan for the engine's own handle;
// attachPrefix + name, for a handle Attach added.
const (
	handleURL    = "loch:handle"
	attachPrefix = "loch:table:"
)

// Attach makes d's current version readable as the view name (replacing
// a view of that name), so that one query can join several datasets: a
// catalog's tables, each by its name. The engine does not close d; d must
// stay open until the engine is closed.
func (e *Engine) Attach(ctx context.Context, name string, d *loch.Dataset) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ctx = ctx // creating the view binds loch_scan, which loads the scan
	url := attachPrefix + strings.ToLower(name)
	e.forgetTable(url)
	e.attached[url] = d
	q := fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM %s(%s)", quoteIdent(name), scanFunction, quoteString(url))
	if _, err := e.conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("query: create view %s: %w", name, err)
	}
	return nil
}

// Detach removes the view name that Attach made and forgets the scans
// and vector indexes of its dataset (which the engine does not close).
// A name that is not attached is not an error.
func (e *Engine) Detach(ctx context.Context, name string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	url := attachPrefix + strings.ToLower(name)
	e.forgetTable(url)
	delete(e.attached, url)
	q := fmt.Sprintf("DROP VIEW IF EXISTS %s", quoteIdent(name))
	if _, err := e.conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("query: drop view %s: %w", name, err)
	}
	return nil
}

// forgetTable forgets the loaded scans of the table attached at url (at
// every ref and time) and the vector indexes of its handle, so that the
// next query reads the handle's version as it is then.
func (e *Engine) forgetTable(url string) {
	if d, ok := e.attached[url]; ok {
		delete(e.searchers, d)
	}
	for k := range e.opened {
		if strings.HasPrefix(k, url+"\x00") {
			delete(e.opened, k)
		}
	}
}

// Forget closes the datasets that loch_scan and loch_table opened at a
// URL, ref or time of their own and forgets every scan but those of the
// attached handles' own versions, so that a long-lived engine (sqlcat's
// kept engine) neither grows nor serves a branch's old head to the next
// statement. Call it between statements, never while Rows are open.
func (e *Engine) Forget() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.opened {
		url, rest, _ := strings.Cut(k, "\x00")
		if _, ok := e.attached[url]; !(ok || url == handleURL) || rest != "\x00" {
			delete(e.opened, k)
		}
	}
	for _, h := range e.handles {
		delete(e.searchers, h)
		h.Close()
	}
	e.handles = nil
}

// typeOf returns the type DuckDB gives the first column of q.
func (e *Engine) typeOf(ctx context.Context, q string) (duckdb.TypeInfo, error) {
	_, types, err := e.resultColumns(ctx, q)
	if err == nil && len(types) == 0 {
		err = errors.New("no result columns")
	}
	if err != nil {
		return nil, fmt.Errorf("query: type of %q: %w", q, err)
	}
	return types[0], nil
}

// Close releases DuckDB and the datasets loch_scan opened.
func (e *Engine) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.conn != nil {
		e.conn.Close()
		e.conn = nil
	}
	for _, h := range e.handles {
		h.Close()
	}
	e.handles = nil
	return e.db.Close()
}

// bind resolves loch_scan's arguments to a loaded scan.
func (e *Engine) bind(_ map[string]any, args ...any) (duckdb.ParallelChunkTableSource, error) {
	url, _ := args[0].(string)
	ref, _ := args[1].(string)
	asOf, _ := args[2].(string)
	filt, _ := args[3].(string)
	ps, err := decodeFilter(filt)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %w", scanAt, err, loch.ErrInvalidArgument)
	}
	sc, err := e.scan(url, ref, asOf)
	if err != nil {
		return nil, err
	}
	ps, only, err := rowPositions(ps, sc)
	if err != nil {
		return nil, fmt.Errorf("%s(%s): %w", scanAt, quoteString(url), err)
	}
	s, err := newSource(e.ctx, sc, e.jsonType, e.opts.Threads, e.opts.SampleData)
	if err != nil {
		return nil, err
	}
	s.only = only
	if s.filter, err = compileFilter(ps, s.cols); err != nil {
		return nil, fmt.Errorf("%s(%s): %w", scanAt, quoteString(url), err)
	}
	s.emitted, s.failed, s.fetches, s.spanReads, s.located = &e.emitted, &e.failed, &e.fetches, &e.spans, &e.located
	if e.noPrune && s.filter != nil {
		for i := range s.filter.preds {
			s.filter.preds[i].num = nil
		}
	}
	return s, nil
}

// scan opens (once per engine) the version loch_scan names.
func (e *Engine) scan(url, ref, asOf string) (*loch.Scan, error) {
	key := url + "\x00" + ref + "\x00" + asOf
	if sc, ok := e.opened[key]; ok {
		return sc, nil
	}
	ctx := e.ctx
	var d *loch.Dataset
	// base is the handle whose versions url names ("" if none).
	var base *loch.Dataset
	if a, ok := e.attached[url]; ok {
		base = a
	} else if e.d != nil && (url == handleURL || url == e.d.URL()) {
		base = e.d
	} else if url == handleURL {
		return nil, fmt.Errorf("query: no dataset: %w", loch.ErrInvalidArgument)
	} else if name, ok := strings.CutPrefix(url, attachPrefix); ok {
		return nil, fmt.Errorf("%s(%s): no table %q: %w", tableFunction, quoteString(name), name, loch.ErrNotFound)
	} else if e.opts.Sandbox {
		return nil, fmt.Errorf("%s(%s): only this engine's own tables can be read here: %w", scanFunction, quoteString(url), loch.ErrPermission)
	}
	if base != nil && ref == "" && asOf == "" {
		d = base
	} else {
		opts := append([]loch.Option(nil), e.opts.Open...)
		if base != nil {
			url = base.URL()
			opts = append(opts, loch.WithStore(base.Store()))
		}
		if ref != "" {
			opts = append(opts, loch.WithRef(ref))
		}
		if asOf != "" {
			t, err := loch.ParseTime(asOf)
			if err != nil {
				return nil, fmt.Errorf("as_of: %w", err)
			}
			opts = append(opts, loch.WithAsOf(t))
		}
		h, err := loch.Open(ctx, url, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s(%s): %w", scanFunction, quoteString(url), err)
		}
		e.handles = append(e.handles, h)
		d = h
	}
	sc := d.Scan()
	if e.opts.Cache != nil {
		sc = sc.WithCache(e.opts.Cache)
	}
	if err := sc.Load(ctx, 16); err != nil {
		return nil, fmt.Errorf("%s(%s): %w", scanFunction, quoteString(url), err)
	}
	e.opened[key] = sc
	return sc, nil
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// urlTableName is the last element of a dataset URL when it is a plain
// identifier ("" otherwise).
func urlTableName(url string) string {
	u := url
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	n := path.Base(strings.TrimRight(u, "/"))
	if identRE.MatchString(n) && !strings.EqualFold(n, TableName) {
		return n
	}
	return ""
}

func quoteIdent(s string) string  { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }
