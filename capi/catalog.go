package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"sync"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/schema"
)

// catalogObj is the object behind a catalog handle. The tables opened from
// it use its store, so closing the handle closes the catalog only once the
// last of them is closed too.
type catalogObj struct {
	c *catalog.Catalog

	mu     sync.Mutex
	tables int  // open dataset handles made from it
	closed bool // the handle was closed
}

func catalogOf(h C.uintptr_t) (*catalogObj, error) { return lookup[*catalogObj](h, "catalog") }

// retain counts a table handle; release gives it back, closing the
// catalog after its handle and its last table are closed.
func (co *catalogObj) retain() {
	co.mu.Lock()
	co.tables++
	co.mu.Unlock()
}

func (co *catalogObj) release() {
	co.mu.Lock()
	co.tables--
	last := co.closed && co.tables == 0
	co.mu.Unlock()
	if last {
		co.c.Close()
	}
}

// table wraps a dataset opened from the catalog in a dataset handle.
func (co *catalogObj) table(d *loch.Dataset) C.uintptr_t {
	co.retain()
	return newHandle(&dataset{d: d, release: co.release})
}

// catalogOptions are the options of loch_catalog_open, as JSON.
type catalogOptions struct {
	Create bool `json:"create"`
}

// loch_catalog_open opens the catalog at root and stores its handle in
// *out. options is JSON ({"create": true makes an empty catalog when root
// holds none}) or NULL. Without create, a root with no catalog is
// LOCH_NOT_FOUND.
//
//export loch_catalog_open
func loch_catalog_open(root, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	var o catalogOptions
	if err := decodeStrict("catalog options", goString(options), &o); err != nil {
		return fail(errOut, err)
	}
	var opts []catalog.Option
	if o.Create {
		opts = append(opts, catalog.WithCreate())
	}
	c, err := catalog.Open(context.Background(), goString(root), opts...)
	if err != nil {
		return fail(errOut, err)
	}
	*out = newHandle(&catalogObj{c: c})
	return C.LOCH_OK
}

// loch_catalog_close releases a catalog handle. Tables opened from it stay
// usable until they are closed: the catalog's store is released with the
// last of them.
//
//export loch_catalog_close
func loch_catalog_close(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		co.mu.Lock()
		if co.closed {
			co.mu.Unlock()
			return nil
		}
		co.closed = true
		last := co.tables == 0
		co.mu.Unlock()
		deleteHandle(h)
		if last {
			return co.c.Close()
		}
		return nil
	})
}

// loch_catalog_url stores the catalog's root URL, without secrets.
//
//export loch_catalog_url
func loch_catalog_url(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		return setString(out, co.c.URL())
	})
}

// loch_catalog_tables stores the tables, sorted by name case-insensitively,
// as a JSON list of {"name", "dir", "url", "created" (RFC 3339)}. It reads
// the catalog's log only, never the tables.
//
//export loch_catalog_tables
func loch_catalog_tables(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		ts, err := co.c.Tables(context.Background())
		if err != nil {
			return err
		}
		return setJSON(out, ts)
	})
}

// loch_catalog_open_table opens table name (compared case-insensitively)
// and stores a dataset handle in *out. options is the JSON of
// loch_dataset_open's options or NULL. LOCH_NOT_FOUND when there is no such
// table.
//
//export loch_catalog_open_table
func loch_catalog_open_table(h C.uintptr_t, name, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		var o openOptions
		if err := decodeStrict("dataset options", goString(options), &o); err != nil {
			return err
		}
		opts, err := o.options()
		if err != nil {
			return err
		}
		d, err := co.c.OpenTable(context.Background(), goString(name), opts...)
		if err != nil {
			return err
		}
		*out = co.table(d)
		return nil
	})
}

// loch_catalog_create_table creates table name with a schema given as JSON
// or YAML (as loch_dataset_create) and stores its dataset handle, on branch
// main, in *out. options is JSON ({"parallelism": n, "author": s,
// "cache_bytes": n}) or NULL. LOCH_EXISTS when a table of that name exists.
//
//export loch_catalog_create_table
func loch_catalog_create_table(h C.uintptr_t, name, schemaText, options *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		var o openOptions
		if err := decodeStrict("dataset options", goString(options), &o); err != nil {
			return err
		}
		if o.Version != "" || o.Ref != "" || o.AsOf != "" {
			return invalidf("dataset options: version, ref and as_of are options of open, not create")
		}
		opts, err := o.options()
		if err != nil {
			return err
		}
		s, err := schema.Parse([]byte(goString(schemaText)))
		if err != nil {
			return err
		}
		d, err := co.c.CreateTable(context.Background(), goString(name), s, opts...)
		if err != nil {
			return err
		}
		*out = co.table(d)
		return nil
	})
}

// loch_catalog_drop_table removes table name from the catalog
// (LOCH_NOT_FOUND when there is none). Its data stays, readable through
// handles already open, until loch_catalog_gc runs after the grace period.
//
//export loch_catalog_drop_table
func loch_catalog_drop_table(h C.uintptr_t, name *C.char, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		return co.c.DropTable(context.Background(), goString(name))
	})
}

// loch_catalog_rename_table renames table from to to (LOCH_NOT_FOUND when
// there is no table from, LOCH_EXISTS when another table is called to).
//
//export loch_catalog_rename_table
func loch_catalog_rename_table(h C.uintptr_t, from, to *C.char, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		return co.c.RenameTable(context.Background(), goString(from), goString(to))
	})
}

// loch_catalog_gc deletes the directories of tables dropped longer ago than
// the grace period, then collects every table, and stores the report as
// JSON: {"dry_run", "deleted", "young" (each a list of {"dir", "objects",
// "bytes"}), "tables": {name: a loch_dataset_gc report}, "log_entries":
// old catalog entries deleted}. options is JSON
// ({"grace_seconds": s (default 86400), "dry_run": bool}) or NULL.
//
//export loch_catalog_gc
func loch_catalog_gc(h C.uintptr_t, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withCatalog(h, errOut, func(co *catalogObj) error {
		opts, err := parseGCOptions(goString(options))
		if err != nil {
			return err
		}
		rep, err := co.c.GC(context.Background(), opts)
		if err != nil {
			return err
		}
		return setJSON(out, rep)
	})
}
