package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/lochdata/loch/fts"
)

// The full-text search exports (ABI 20): build and update a text or json
// column's BM25 index, and search it (package fts). Filters arrive as the
// allowed row ids, as for vector search.

// loch_fts_build builds the full-text index of column at the handle's
// version and stores its description (JSON {"key", "version", "column",
// "docs", "tokens", "segments", "bytes"}) in out.
//
//export loch_fts_build
func loch_fts_build(h C.uintptr_t, column *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*fts.Info, error) {
		return fts.Build(ctx, ds.d, goString(column), fts.BuildOptions{})
	})
}

// loch_fts_update writes the full-text index of column at the handle's
// version from its newest indexed ancestor's (fts.Update) and stores its
// description, as loch_fts_build does, in out.
//
//export loch_fts_update
func loch_fts_update(h C.uintptr_t, column *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*fts.Info, error) {
		return fts.Update(ctx, ds.d, goString(column), fts.BuildOptions{})
	})
}

// loch_fts_open opens (and keeps, for the handle's searches) the
// full-text index of column that serves the handle's version, analysing
// the rows it does not cover, so that loch_fts_search need not: a call
// made interruptible where loch_fts_search is not. info gets JSON
// {"index", "warnings"}.
//
//export loch_fts_open
func loch_fts_open(h C.uintptr_t, column *C.char, info **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		ctx, done := interruptible()
		defer done()
		ix, warnings, err := ds.textSearcher().Index(ctx, goString(column), fts.Options{})
		if err != nil {
			return err
		}
		return setIndexInfo(info, ix.Key(), warnings)
	})
}

// loch_fts_search finds the k best rows for a full-text query in column.
// allowed holds nallowed row ids a filter lets through; nallowed < 0
// means no filter. It writes *count (at most k) hits to ids and scores,
// best first; info gets JSON {"index", "warnings"}.
//
//export loch_fts_search
func loch_fts_search(h C.uintptr_t, column, query *C.char, k C.int64_t, allowed *C.uint64_t, nallowed C.int64_t,
	ids *C.uint64_t, scores *C.double, count *C.int64_t, info **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		if k <= 0 {
			return invalidf("k = %d: want k >= 1", k)
		}
		var opts fts.Options
		opts.Allow = allowSet(allowed, nallowed)
		ctx, done := interruptible()
		defer done()
		res, err := ds.textSearcher().Search(ctx, goString(column), goString(query), int(k), opts)
		if err != nil {
			return err
		}
		outIDs := unsafe.Slice((*uint64)(unsafe.Pointer(ids)), int(k))
		outS := unsafe.Slice((*float64)(unsafe.Pointer(scores)), int(k))
		for i, hit := range res.Hits {
			outIDs[i], outS[i] = hit.RowID, hit.Score
		}
		*count = C.int64_t(len(res.Hits))
		return setIndexInfo(info, res.Index, res.Warnings)
	})
}

// textSearcher returns the handle's full-text searcher, made on first use.
func (ds *dataset) textSearcher() *fts.Searcher {
	return made(ds, &ds.ftsSearcher, fts.NewSearcher)
}
