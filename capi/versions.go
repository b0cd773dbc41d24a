package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"

	"github.com/lochdata/loch"
)

// The version-control exports: references (branches and tags), checkout,
// revert, diff, merge and garbage collection. Structured results cross as
// JSON strings that the caller frees with loch_free_string.

// setJSON stores the JSON of v in *out.
func setJSON(out **C.char, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return setString(out, string(b))
}

// setIndexInfo stores in *out the JSON {"index", "warnings"} of a search
// or index open: the index's key and the warnings (an empty list, not
// null, when there are none).
func setIndexInfo(out **C.char, index string, warnings []string) error {
	if warnings == nil {
		warnings = []string{}
	}
	return setJSON(out, map[string]any{"index": index, "warnings": warnings})
}

// loch_dataset_create_branch makes a branch named name at the version that
// from names (a branch, tag, version id or unique prefix; NULL or "" for the
// handle's version) and stores that version's id in *out. A branch or tag
// of that name already existing is LOCH_EXISTS.
//
//export loch_dataset_create_branch
func loch_dataset_create_branch(h C.uintptr_t, name, from *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		id, err := ds.d.CreateBranch(context.Background(), goString(name), goString(from))
		if err != nil {
			return err
		}
		return setString(out, id)
	})
}

// loch_dataset_create_tag makes a tag named name at the version that ref
// names (NULL or "" for the handle's version) and stores that version's id
// in *out. A branch or tag of that name already existing is LOCH_EXISTS.
//
//export loch_dataset_create_tag
func loch_dataset_create_tag(h C.uintptr_t, name, ref *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		id, err := ds.d.CreateTag(context.Background(), goString(name), goString(ref))
		if err != nil {
			return err
		}
		return setString(out, id)
	})
}

// loch_dataset_delete_branch removes a branch (LOCH_NOT_FOUND when there
// is none of that name; main cannot be deleted). Its commits stay readable
// by id until loch_dataset_gc removes those no reference reaches.
//
//export loch_dataset_delete_branch
func loch_dataset_delete_branch(h C.uintptr_t, name *C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return ds.d.DeleteBranch(context.Background(), goString(name))
	})
}

// loch_dataset_delete_tag removes a tag (LOCH_NOT_FOUND when there is none
// of that name).
//
//export loch_dataset_delete_tag
func loch_dataset_delete_tag(h C.uintptr_t, name *C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return ds.d.DeleteTag(context.Background(), goString(name))
	})
}

// loch_dataset_refs stores the branches and then the tags, each sorted by
// name, as a JSON list of {"name", "kind" ("branch" or "tag"), "commit"}.
//
//export loch_dataset_refs
func loch_dataset_refs(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		refs, err := ds.d.Refs(context.Background())
		if err != nil {
			return err
		}
		if refs == nil {
			refs = []loch.Ref{}
		}
		return setJSON(out, refs)
	})
}

// loch_dataset_resolve stores the version id that ref (a branch, tag,
// version id or unique prefix of 6 or more digits) names now.
//
//export loch_dataset_resolve
func loch_dataset_resolve(h C.uintptr_t, ref *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		id, err := ds.d.Resolve(context.Background(), goString(ref))
		if err != nil {
			return err
		}
		return setString(out, id)
	})
}

// loch_dataset_current_branch stores the name of the branch the handle
// writes to, or "" when the handle is read-only.
//
//export loch_dataset_current_branch
func loch_dataset_current_branch(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return setString(out, ds.d.Branch())
	})
}

// loch_dataset_read_only stores 1 in *out when the handle refuses writes
// (opened or checked out at a tag, a version id or a time), else 0.
//
//export loch_dataset_read_only
func loch_dataset_read_only(h C.uintptr_t, out *C.int32_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		if out == nil {
			return invalidf("output pointer is NULL")
		}
		*out = 0
		if ds.d.ReadOnly() {
			*out = 1
		}
		return nil
	})
}

// loch_dataset_checkout moves the handle to ref: a branch (the handle then
// writes there) or a tag or version id (read-only). Staged writes are
// LOCH_INVALID_ARGUMENT: commit them first.
//
//export loch_dataset_checkout
func loch_dataset_checkout(h C.uintptr_t, ref *C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return ds.d.Checkout(context.Background(), goString(ref))
	})
}

// loch_dataset_revert makes a new commit on the handle's branch with the
// contents of the version ref names (message NULL or "" for the default
// message), moves the handle there and stores the new version id in *out.
//
//export loch_dataset_revert
func loch_dataset_revert(h C.uintptr_t, ref, message *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ctx, done := interruptible()
		defer done()
		id, err := ds.d.Revert(ctx, goString(ref), goString(message))
		if err != nil {
			return err
		}
		return setString(out, id)
	})
}

// diffOptions are loch_dataset_diff's options, as JSON.
type diffOptions struct {
	Start uint64 `json:"start"`
	Limit int    `json:"limit"`
}

// loch_dataset_diff compares the versions that from and to name (NULL or
// "" for the handle's version) and stores the difference as JSON: {"from",
// "to", "schema": [{"name", "change", "from", "to"}], "added", "deleted",
// "modified", "modified_by_column": {column: n}, "rows": [{"id", "change",
// "columns"}], "next"}. options is JSON ({"start": first row id listed,
// "limit": most rows listed, 0 for 1000, negative for none}) or NULL;
// "next", when present, is the "start" of the next page.
//
//export loch_dataset_diff
func loch_dataset_diff(h C.uintptr_t, from, to, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var o diffOptions
		if err := decodeStrict("diff options", goString(options), &o); err != nil {
			return err
		}
		d, err := ds.d.Diff(context.Background(), goString(from), goString(to), loch.DiffOptions{Start: o.Start, Limit: o.Limit})
		if err != nil {
			return err
		}
		return setJSON(out, d)
	})
}

// mergeOptions are loch_dataset_merge's options, as JSON.
type mergeOptions struct {
	Strategy string `json:"strategy"`
	Message  string `json:"message"`
}

// conflictDetail is what loch_dataset_merge stores in *out with
// LOCH_CONFLICT.
type conflictDetail struct {
	Src       string          `json:"src"`
	Dst       string          `json:"dst"`
	Conflicts []loch.Conflict `json:"conflicts"`
}

// loch_dataset_merge merges the version src names into the handle's branch
// and moves the handle to the result. options is JSON ({"strategy": "fail"
// (default), "ours" or "theirs", "message": s}) or NULL. On success *out
// is the JSON of the result: {"commit", "base", "fast_forward",
// "up_to_date", "added", "deleted", "modified", "columns_added",
// "conflicts" (those the strategy resolved)}. When rows changed on both
// sides and the strategy is "fail", nothing changes, the status is
// LOCH_CONFLICT and *out is set too, to {"src", "dst", "conflicts": [{"id",
// "ours", "theirs", "ours_columns", "theirs_columns"}]}: the caller frees
// *out whenever it is not NULL, whatever the status.
//
//export loch_dataset_merge
func loch_dataset_merge(h C.uintptr_t, src, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var o mergeOptions
		if err := decodeStrict("merge options", goString(options), &o); err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		res, err := ds.d.Merge(ctx, goString(src), loch.MergeOptions{Strategy: o.Strategy, Message: o.Message})
		if err != nil {
			var ce *loch.ConflictError
			if errors.As(err, &ce) && out != nil {
				conflicts := ce.Conflicts
				if conflicts == nil {
					conflicts = []loch.Conflict{}
				}
				if jerr := setJSON(out, conflictDetail{Src: ce.Src, Dst: ce.Dst, Conflicts: conflicts}); jerr != nil {
					*out = nil
				}
			}
			return err
		}
		if res.Conflicts == nil {
			res.Conflicts = []loch.Conflict{}
		}
		return setJSON(out, res)
	})
}

// gcOptions are loch_dataset_gc's options, as JSON.
type gcOptions struct {
	GraceSeconds     *float64 `json:"grace_seconds"`
	DryRun           bool     `json:"dry_run"`
	KeepLast         int      `json:"keep_last"`
	OlderThanSeconds float64  `json:"older_than_seconds"`
}

// parseGCOptions reads the JSON options of loch_dataset_gc and
// loch_catalog_gc.
func parseGCOptions(text string) (loch.GCOptions, error) {
	var o gcOptions
	if err := decodeStrict("gc options", text, &o); err != nil {
		return loch.GCOptions{}, err
	}
	opts := loch.GCOptions{Grace: loch.DefaultGCGrace, DryRun: o.DryRun}
	if g := o.GraceSeconds; g != nil {
		if *g < 0 || math.IsNaN(*g) || *g > math.MaxInt64/float64(time.Second) {
			return loch.GCOptions{}, invalidf("gc grace %v s: want a duration of 0 s or more", *g)
		}
		opts.Grace = time.Duration(*g * float64(time.Second))
	}
	o2 := o.OlderThanSeconds
	if o.KeepLast < 0 || o2 < 0 || math.IsNaN(o2) || o2 > math.MaxInt64/float64(time.Second) {
		return loch.GCOptions{}, invalidf("gc keep_last %d, older_than_seconds %v: want 0 or more", o.KeepLast, o2)
	}
	opts.KeepLast, opts.OlderThan = o.KeepLast, time.Duration(o2*float64(time.Second))
	return opts, nil
}

// loch_dataset_gc deletes the objects that no branch or tag reaches and
// that are older than the grace period, and stores the report as JSON:
// {"dry_run", "reachable", "young", "leased", "deleted" (each {"objects",
// "bytes"}), "by_kind": {prefix: {"objects", "bytes"}}, "expired",
// "dead_leases"}. options is JSON ({"grace_seconds": s (default 86400),
// "dry_run": bool, "keep_last": n, "older_than_seconds": s}: version
// retention, docs/format.md §5.2) or NULL.
//
//export loch_dataset_gc
func loch_dataset_gc(h C.uintptr_t, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withOptions(h, options, out, errOut, parseGCOptions, (*loch.Dataset).GC)
}
