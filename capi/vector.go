package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"unsafe"

	"github.com/lochdata/loch/vector"
)

// The vector search exports (ABI 8): build and update an embedding
// column's index, and search it (package vector). Filters arrive as the
// allowed row ids: the SQL that makes them runs in the loch command, as
// queries do (see selections.go).

// indexOptionsJSON are the options of loch_vector_build.
type indexOptionsJSON struct {
	Metric     string `json:"metric"`
	NList      int    `json:"nlist"`
	Sample     int    `json:"sample"`
	Iterations int    `json:"iterations"`
	Seed       uint64 `json:"seed"`
	Kind       string `json:"kind"`
	M          int    `json:"m"`
	PartRows   int64  `json:"part_rows"`
}

// indexOptions decodes and checks the options of loch_vector_build.
func indexOptions(options *C.char) (*indexOptionsJSON, error) {
	var o indexOptionsJSON
	if s := goString(options); s != "" {
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			return nil, invalidf("index options JSON: %v", err)
		}
	}
	if o.NList < 0 || o.Sample < 0 || o.Iterations < 0 || o.M < 0 || o.PartRows < 0 {
		return nil, invalidf("index options: nlist, sample, iterations, m and part_rows must not be negative")
	}
	return &o, nil
}

func (o *indexOptionsJSON) build() vector.BuildOptions {
	return vector.BuildOptions{Metric: vector.Metric(o.Metric), NList: o.NList, Sample: o.Sample, Iterations: o.Iterations,
		Seed: o.Seed, Kind: o.Kind, M: o.M, PartRows: o.PartRows}
}

// loch_vector_build builds the index of column at the handle's version
// with options (JSON {"metric", "nlist", "sample", "iterations", "seed",
// "kind", "m"}, all optional) and stores its description (JSON {"key", "version",
// "column", "metric", "dim", "rows", "nlist", "bytes"}) in out.
//
//export loch_vector_build
func loch_vector_build(h C.uintptr_t, column, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withIndexOptions(h, column, options, out, errOut, func(ctx context.Context, ds *dataset, o vector.BuildOptions) (any, error) {
		return vector.Build(ctx, ds.d, goString(column), o)
	})
}

// withIndexOptions decodes the options of loch_vector_build and stores
// fn's answer in out as JSON.
func withIndexOptions(h C.uintptr_t, column, options *C.char, out **C.char, errOut **C.char,
	fn func(context.Context, *dataset, vector.BuildOptions) (any, error)) C.int {
	return withDataset(h, errOut, func(ds *dataset) error {
		o, err := indexOptions(options)
		if err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		v, err := fn(ctx, ds, o.build())
		if err != nil {
			return err
		}
		return setJSON(out, v)
	})
}

// loch_vector_update writes the index of column and metric at the
// handle's version from its newest indexed ancestor's (vector.Update) and
// stores its description, as loch_vector_build does, in out.
//
//export loch_vector_update
func loch_vector_update(h C.uintptr_t, column, metric *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		m, err := vector.ParseMetric(goString(metric))
		if err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		info, err := vector.Update(ctx, ds.d, goString(column), m, vector.Options{})
		if err != nil {
			return err
		}
		return setJSON(out, info)
	})
}

// searchOptionsJSON are the options of loch_vector_search.
type searchOptionsJSON struct {
	Metric string `json:"metric"`
	NProbe int    `json:"nprobe"`
	Rerank int    `json:"rerank"`
	Exact  bool   `json:"exact"`
	// Held: search only with an index the handle already holds open
	// (vector.Searcher.SearchOpen); when it holds none that serves the
	// version, write nothing and set "retry" in info, for the caller to
	// search again without it (interruptibly).
	Held bool `json:"held"`
}

// loch_vector_search finds the k nearest rows to each of the n query
// vectors of d floats at queries (row-major) in column. allowed holds
// nallowed row ids a filter lets through; nallowed < 0 means no filter.
// For query i it writes counts[i] (at most k) hits to ids[i*k:] and
// dists[i*k:], nearest first; info gets JSON {"index", "warnings"}.
//
//export loch_vector_search
func loch_vector_search(h C.uintptr_t, column, options *C.char, queries *C.float, n, d, k C.int64_t,
	allowed *C.uint64_t, nallowed C.int64_t, ids *C.uint64_t, dists *C.float, counts *C.int64_t,
	info **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var o searchOptionsJSON
		if s := goString(options); s != "" {
			if err := json.Unmarshal([]byte(s), &o); err != nil {
				return invalidf("search options JSON: %v", err)
			}
		}
		if o.Metric == "" {
			o.Metric = string(vector.Cosine)
		}
		m, err := vector.ParseMetric(o.Metric)
		if err != nil {
			return err
		}
		if n <= 0 || d <= 0 || k <= 0 {
			return invalidf("%d query vectors of %d dimensions, k = %d: want each >= 1", n, d, k)
		}
		flat := unsafe.Slice((*float32)(unsafe.Pointer(queries)), int(n*d))
		qs := make([][]float32, n)
		for i := range qs {
			qs[i] = append([]float32(nil), flat[i*int(d):(i+1)*int(d)]...)
		}
		opts := vector.Options{NProbe: o.NProbe, Rerank: o.Rerank}
		opts.Allow = allowSet(allowed, nallowed)
		ctx, done := interruptible()
		defer done()
		var res *vector.Result
		if o.Held && !o.Exact {
			var ok bool
			if res, ok = ds.vectorSearcher().SearchOpen(ctx, goString(column), m, qs, int(k), opts); !ok {
				return setJSON(info, map[string]any{"index": "", "warnings": []string{}, "retry": true})
			}
		} else if o.Exact {
			hits, err := vector.Exact(ctx, ds.d.Scan(), goString(column), m, qs, int(k), opts)
			if err != nil {
				return err
			}
			res = &vector.Result{Hits: hits}
		} else if res, err = ds.vectorSearcher().Search(ctx, goString(column), m, qs, int(k), opts); err != nil {
			return err
		}
		outIDs := unsafe.Slice((*uint64)(unsafe.Pointer(ids)), int(n*k))
		outD := unsafe.Slice((*float32)(unsafe.Pointer(dists)), int(n*k))
		outN := unsafe.Slice((*int64)(unsafe.Pointer(counts)), int(n))
		for i, hits := range res.Hits {
			outN[i] = int64(len(hits))
			for j, hit := range hits {
				outIDs[i*int(k)+j], outD[i*int(k)+j] = hit.RowID, hit.Distance
			}
		}
		return setIndexInfo(info, res.Index, res.Warnings)
	})
}

// vectorSearcher returns the handle's searcher, made on first use.
func (ds *dataset) vectorSearcher() *vector.Searcher {
	return made(ds, &ds.searcher, vector.NewSearcher)
}

// allowSet is the row set of the nallowed ids at allowed (copied), or
// nil (every row) when nallowed < 0.
func allowSet(allowed *C.uint64_t, nallowed C.int64_t) *vector.RowSet {
	if nallowed < 0 {
		return nil
	}
	var set []uint64
	if nallowed > 0 {
		set = append(set, unsafe.Slice((*uint64)(unsafe.Pointer(allowed)), int(nallowed))...)
	}
	return vector.NewRowSet(set)
}
