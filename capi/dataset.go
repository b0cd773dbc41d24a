package main

/*
#include "loch.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
	"unsafe"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/fts"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/vector"
)

// dataset is the object behind a dataset handle.
type dataset struct {
	d *loch.Dataset

	mu     sync.Mutex
	scan   *loch.Scan // loaded scan of the current snapshot, for row ids
	closed bool
	// searcher keeps the vector indexes searches opened (vector.go).
	searcher *vector.Searcher
	// ftsSearcher keeps the full-text indexes searches opened (fts.go).
	ftsSearcher *fts.Searcher

	// release, when not nil, is called once the dataset is closed: a table
	// gives its catalog back (see catalogObj).
	release func()
}

// openOptions are the options of loch_dataset_open and loch_dataset_create,
// as JSON.
type openOptions struct {
	Version     string `json:"version"`
	Ref         string `json:"ref"`
	AsOf        string `json:"as_of"` // loch.ParseTime
	Parallelism int    `json:"parallelism"`
	Author      string `json:"author"`
	CacheBytes  *int64 `json:"cache_bytes"`
	// Links is the link policy (loch.LinkPolicy); absent: the default.
	Links *linkOptions `json:"links"`
	// Storage is the store's connection settings (storage.Settings) by
	// name; see storage.ParseOptions.
	Storage map[string]string `json:"storage_options"`
	// AutoCompact is true, false or an object of compaction options
	// (ABI 16; see autoCompactOption).
	AutoCompact json.RawMessage `json:"auto_compact"`
}

// linkOptions is loch.LinkPolicy as JSON: {"schemes": [...],
// "hosts": [...], "allow": [...], "local_roots": [...], "max_bytes": n,
// "timeout_seconds": s, "max_attempts": n}. An absent list takes the
// default; an empty one allows nothing (more).
type linkOptions struct {
	Schemes        []string `json:"schemes"`
	Hosts          []string `json:"hosts"`
	Allow          []string `json:"allow"`
	LocalRoots     []string `json:"local_roots"`
	MaxBytes       int64    `json:"max_bytes"`
	TimeoutSeconds float64  `json:"timeout_seconds"`
	MaxAttempts    int      `json:"max_attempts"`
}

// linkAllowEnv returns the entries of $LOCH_LINK_ALLOW as the process's
// environment has them now, and whether that differs from Go's copy of
// the environment, made when the library was loaded, which misses what
// the caller set or unset since (Python's os.environ).
func linkAllowEnv() (allow []string, changed bool) {
	name := C.CString(loch.EnvLinkAllow)
	defer C.free(unsafe.Pointer(name))
	v := C.getenv(name)
	goValue, goSet := os.LookupEnv(loch.EnvLinkAllow)
	if v == nil {
		return []string{}, goSet
	}
	value := C.GoString(v)
	return loch.SplitLinkAllow(value), !goSet || value != goValue
}

func (l *linkOptions) policy() (loch.LinkPolicy, error) {
	if l.TimeoutSeconds < 0 || l.MaxAttempts < 0 {
		return loch.LinkPolicy{}, invalidf("dataset options: links: negative timeout_seconds or max_attempts")
	}
	p := loch.LinkPolicy{Schemes: l.Schemes, Hosts: l.Hosts, Allow: l.Allow, LocalRoots: l.LocalRoots, MaxBytes: l.MaxBytes}
	if l.TimeoutSeconds > 0 || l.MaxAttempts > 0 {
		p.Retry = storage.DefaultRetryPolicy()
		p.Retry.MaxAttempts = loch.DefaultLinkAttempts
		if l.TimeoutSeconds > 0 {
			p.Retry.ReadTimeout = time.Duration(l.TimeoutSeconds * float64(time.Second))
		}
		if l.MaxAttempts > 0 {
			p.Retry.MaxAttempts = l.MaxAttempts
		}
	}
	return p, nil
}

func (o openOptions) options() ([]loch.Option, error) {
	var out []loch.Option
	if o.Version != "" {
		out = append(out, loch.WithVersion(o.Version))
	}
	if o.Ref != "" {
		out = append(out, loch.WithRef(o.Ref))
	}
	if o.AsOf != "" {
		t, err := loch.ParseTime(o.AsOf)
		if err != nil {
			return nil, fmt.Errorf("as_of: %w", err)
		}
		out = append(out, loch.WithAsOf(t))
	}
	if o.Parallelism > 0 {
		out = append(out, loch.WithParallelism(o.Parallelism))
	}
	if o.Author != "" {
		out = append(out, loch.WithAuthor(o.Author))
	}
	if o.CacheBytes != nil {
		out = append(out, loch.WithCacheBytes(*o.CacheBytes))
	}
	if len(o.Storage) > 0 {
		s, err := storage.ParseOptions(o.Storage)
		if err != nil {
			return nil, err
		}
		out = append(out, loch.WithStorageSettings(s))
	}
	links := o.Links
	if allow, changed := linkAllowEnv(); changed && (links == nil || links.Allow == nil) {
		if err := (&loch.LinkPolicy{Allow: allow}).Validate(); err != nil {
			return nil, invalidf("dataset options: links: $%s: %v", loch.EnvLinkAllow, err)
		}
		l := linkOptions{}
		if links != nil {
			l = *links
		}
		l.Allow = allow
		links = &l
	}
	if links != nil {
		p, err := links.policy()
		if err != nil {
			return nil, err
		}
		out = append(out, loch.WithLinkPolicy(p))
	}
	if o.AutoCompact != nil {
		opt, err := autoCompactOption(o.AutoCompact)
		if err != nil {
			return nil, err
		}
		if opt != nil {
			out = append(out, opt)
		}
	}
	return out, nil
}

// decodeStrict decodes JSON, refusing unknown fields; empty input leaves v
// as is.
func decodeStrict(what, s string, v any) error {
	if s == "" {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return invalidf("%s: %v", what, err)
	}
	return nil
}

func datasetOf(h C.uintptr_t) (*dataset, error) { return lookup[*dataset](h, "dataset") }

// loadedScan returns a loaded scan of the handle's current snapshot.
func (ds *dataset) loadedScan(ctx context.Context) (*loch.Scan, error) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.scan != nil && ds.scan.Version() == ds.d.Version() {
		return ds.scan, nil
	}
	v := ds.d.Scan()
	if err := v.Load(ctx, 16); err != nil {
		return nil, err
	}
	ds.scan = v
	return v, nil
}

// loch_dataset_create makes a dataset at url with a schema given as JSON
// or YAML (the format of `loch create --schema`) and stores its handle in
// *out. options is JSON ({"parallelism": n, "author": s, "cache_bytes": n})
// or NULL.
//
//export loch_dataset_create
func loch_dataset_create(url, schemaText, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	var o openOptions
	if err := decodeStrict("dataset options", goString(options), &o); err != nil {
		return fail(errOut, err)
	}
	if o.Version != "" || o.Ref != "" || o.AsOf != "" {
		return fail(errOut, invalidf("dataset options: version, ref and as_of are options of open, not create"))
	}
	opts, err := o.options()
	if err != nil {
		return fail(errOut, err)
	}
	s, err := schema.Parse([]byte(goString(schemaText)))
	if err != nil {
		return fail(errOut, err)
	}
	ctx, done := interruptible()
	defer done()
	d, err := loch.Create(ctx, goString(url), s, opts...)
	if err != nil {
		return fail(errOut, err)
	}
	*out = newHandle(&dataset{d: d})
	return C.LOCH_OK
}

// loch_dataset_open opens the dataset at url and stores its handle in *out.
// options is JSON or NULL: {"ref": a branch (the handle writes there; default
// main), a tag, a version id or a unique prefix of one (read-only);
// "version": a version id (read-only; not with ref); "as_of": a time as
// loch.ParseTime reads it: the version ref (default main) named then
// (read-only);
// "parallelism": n, "author": s, "cache_bytes": n, "links": the link policy
// of loch_dataset_fetch, {"schemes": [...], "hosts": [...], "allow": [...], "local_roots": [...],
// "max_bytes": n, "timeout_seconds": s, "max_attempts": n} (see
// loch.LinkPolicy; absent fields take its defaults)}.
//
//export loch_dataset_open
func loch_dataset_open(url, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	var o openOptions
	if err := decodeStrict("dataset options", goString(options), &o); err != nil {
		return fail(errOut, err)
	}
	opts, err := o.options()
	if err != nil {
		return fail(errOut, err)
	}
	ctx, done := interruptible()
	defer done()
	d, err := loch.Open(ctx, goString(url), opts...)
	if err != nil {
		return fail(errOut, err)
	}
	*out = newHandle(&dataset{d: d})
	return C.LOCH_OK
}

// loch_dataset_close releases a dataset handle, discarding uncommitted
// writes. Loaders made from it must be closed first.
//
//export loch_dataset_close
func loch_dataset_close(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ds.mu.Lock()
		if ds.closed {
			ds.mu.Unlock()
			return nil
		}
		ds.closed = true
		ds.mu.Unlock()
		deleteHandle(h)
		err := ds.d.Close()
		if ds.release != nil {
			ds.release()
		}
		return err
	})
}

// loch_dataset_len stores the number of rows of the handle's snapshot.
//
//export loch_dataset_len
func loch_dataset_len(h C.uintptr_t, out *C.int64_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		*out = C.int64_t(ds.d.Len())
		return nil
	})
}

// loch_dataset_schema stores the schema, with column statistics, as JSON.
//
//export loch_dataset_schema
func loch_dataset_schema(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		cols := ds.d.Columns()
		if cols == nil {
			cols = []schema.Entry{}
		}
		b, err := json.Marshal(schema.Snapshot{Columns: cols})
		if err != nil {
			return err
		}
		return setString(out, string(b))
	})
}

// loch_dataset_version stores the id of the handle's snapshot.
//
//export loch_dataset_version
func loch_dataset_version(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return setString(out, ds.d.Version())
	})
}

// loch_dataset_url stores the dataset's URL, without secrets.
//
//export loch_dataset_url
func loch_dataset_url(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return setString(out, ds.d.URL())
	})
}

// rowConflictDetail is what loch_dataset_commit stores in *out with
// LOCH_CONFLICT when staged rows conflict (ABI 18).
type rowConflictDetail struct {
	RowIDs []uint64 `json:"row_ids"`
}

// loch_dataset_commit commits the staged writes and stores the new
// version id. When rows it deletes or updates were deleted or changed by
// another commit, the status is LOCH_CONFLICT and *out is set too, to
// {"row_ids": [...]} (all of them, ascending): the caller frees *out
// whenever it is not NULL, whatever the status.
//
//export loch_dataset_commit
func loch_dataset_commit(h C.uintptr_t, message *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ctx, done := interruptible()
		defer done()
		v, err := ds.d.Commit(ctx, goString(message))
		if err != nil {
			var ce *loch.RowConflictError
			if errors.As(err, &ce) && out != nil {
				if jerr := setJSON(out, rowConflictDetail{RowIDs: ce.IDs}); jerr != nil {
					*out = nil
				}
			}
			return err
		}
		return setString(out, v)
	})
}

// loch_dataset_refresh moves the handle to the newest snapshot of its
// branch (LOCH_READ_ONLY on a read-only handle), and its staged writes onto
// it (loch.Dataset.Refresh).
//
//export loch_dataset_refresh
func loch_dataset_refresh(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ctx, done := interruptible()
		defer done()
		return ds.d.Refresh(ctx)
	})
}

// loch_dataset_discard drops the handle's staged writes (ABI 18).
//
//export loch_dataset_discard
func loch_dataset_discard(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ds.d.Discard()
		return nil
	})
}

// loch_dataset_discard_conflicts drops the staged deletions and updates of
// the rows that the last loch_dataset_refresh found deleted or changed by
// another commit, keeps the other staged writes, and stores the dropped row
// ids in *out as a JSON list, ascending (ABI 18).
//
//export loch_dataset_discard_conflicts
func loch_dataset_discard_conflicts(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ids := ds.d.DiscardConflicts()
		if ids == nil {
			ids = []uint64{}
		}
		return setJSON(out, ids)
	})
}

// loch_dataset_log stores the commits reachable from the handle's version
// through all parents (a merge brings in both sides), newest first, as a
// JSON list of {"id", "parents", "message", "author", "time" (RFC 3339),
// "rows", "branch"}.
//
//export loch_dataset_log
func loch_dataset_log(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		log, err := ds.d.Log(context.Background())
		if err != nil {
			return err
		}
		b, err := json.Marshal(log)
		if err != nil {
			return err
		}
		return setString(out, string(b))
	})
}

// loch_dataset_row_ids stores the stable ids of the rows at positions
// [start, end) into out, which has room for end-start ids.
//
//export loch_dataset_row_ids
func loch_dataset_row_ids(h C.uintptr_t, start, end C.int64_t, out *C.uint64_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ctx := context.Background()
		v, err := ds.loadedScan(ctx)
		if err != nil {
			return err
		}
		if start < 0 || end < start || int64(end) > v.Len() {
			return invalidf("rows [%d, %d) outside [0, %d)", start, end, v.Len())
		}
		if end == start {
			return nil
		}
		ids := unsafeSlice(out, int(end-start))
		for i := int64(start); i < int64(end); i++ {
			id, err := v.RowID(i)
			if err != nil {
				return err
			}
			ids[i-int64(start)] = C.uint64_t(id)
		}
		return nil
	})
}

// loch_dataset_add_column stages a new column, given as the JSON of one
// schema column ({"name": ..., "kind": ..., "dtype": ...}).
//
//export loch_dataset_add_column
func loch_dataset_add_column(h C.uintptr_t, column *C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var col schema.Column
		if err := decodeStrict("column", goString(column), &col); err != nil {
			return err
		}
		return ds.d.AddColumn(context.Background(), col)
	})
}

// loch_dataset_delete stages the deletion of n rows by id.
//
//export loch_dataset_delete
func loch_dataset_delete(h C.uintptr_t, ids *C.uint64_t, n C.int64_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		if n < 0 || (n > 0 && ids == nil) {
			return invalidf("delete: %d ids at %p", n, ids)
		}
		list := make([]uint64, n)
		for i, id := range unsafeSlice(ids, int(n)) {
			list[i] = uint64(id)
		}
		return ds.d.Delete(context.Background(), list...)
	})
}

// loch_dtypes stores the data types as JSON: a list of {"code", "name",
// "size"} (size 0 for text, json and bytes).
//
//export loch_dtypes
func loch_dtypes(out **C.char, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	type dt struct {
		Code uint8  `json:"code"`
		Name string `json:"name"`
		Size int    `json:"size"`
	}
	var list []dt
	for _, d := range schema.DTypes() {
		list = append(list, dt{uint8(d), d.String(), d.Size()})
	}
	b, err := json.Marshal(list)
	if err != nil {
		return fail(errOut, err)
	}
	return result(errOut, setString(out, string(b)))
}

// made returns *p, made by mk from the handle's dataset on first use;
// ds.mu guards *p.
func made[T any](ds *dataset, p **T, mk func(*loch.Dataset) *T) *T {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if *p == nil {
		*p = mk(ds.d)
	}
	return *p
}
