package main

/*
#include "loch.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"

	"github.com/lochdata/loch/hybrid"
	"github.com/lochdata/loch/vector"
)

// The hybrid search export (ABI 21): a vector and a full-text query fused
// into one ranking (package hybrid), with the handle's vector and
// full-text searchers. The filter arrives as the allowed row ids, as for
// vector search.

// hybridOptionsJSON are the options of loch_hybrid_search.
type hybridOptionsJSON struct {
	Column     string  `json:"column"`
	TextColumn string  `json:"text_column"`
	Metric     string  `json:"metric"`
	Fusion     string  `json:"fusion"`
	Weight     float64 `json:"weight"`
	RRFK       float64 `json:"rrf_k"`
	RankWindow int     `json:"rank_window"`
	NProbe     int     `json:"nprobe"`
	Rerank     int     `json:"rerank"`
	Exact      bool    `json:"exact"`
	// Where is the SQL filter the allowed ids came from, for the
	// result's SQL (its selection's text).
	Where string `json:"where"`
}

// hybridInfoJSON is the info of loch_hybrid_search.
type hybridInfoJSON struct {
	Version      string   `json:"version"`
	VectorColumn string   `json:"vector_column"`
	TextColumn   string   `json:"text_column"`
	VectorIndex  string   `json:"vector_index"`
	TextIndex    string   `json:"text_index"`
	Warnings     []string `json:"warnings"`
	SQL          string   `json:"sql"`
}

// hybridQuery is the hybrid.Query of a call's arguments.
func hybridQuery(o hybridOptionsJSON, q *C.float, d C.int64_t, text *C.char, k C.int64_t) (hybrid.Query, error) {
	hq := hybrid.Query{VectorColumn: o.Column, TextColumn: o.TextColumn, Metric: vector.Metric(o.Metric), Text: goString(text),
		K: int(k), Window: o.RankWindow}
	if o.Metric == "" {
		hq.Metric = vector.Cosine
	}
	if _, err := vector.ParseMetric(string(hq.Metric)); err != nil {
		return hq, err
	}
	var err error
	if hq.Fusion, err = hybrid.ParseFusion(o.Fusion, o.RRFK, o.Weight); err != nil {
		return hq, err
	}
	if q != nil {
		if d <= 0 {
			return hq, invalidf("a query vector of %d dimensions: want at least 1", d)
		}
		hq.Vector = append([]float32(nil), unsafe.Slice((*float32)(unsafe.Pointer(q)), int(d))...)
	}
	return hq, nil
}

// loch_hybrid_search finds the k best rows of a hybrid search: the query
// vector q of d floats (NULL: no vector side) and the full-text query
// text (NULL or "": no text side), with options (JSON {"column",
// "text_column", "metric", "fusion", "weight", "rrf_k", "rank_window",
// "nprobe", "rerank", "exact", "where"}, all optional, or NULL). allowed
// holds nallowed row ids a filter lets through; nallowed < 0 means no
// filter. It writes *count (at most k) hits, best first, to ids, scores
// (fused), vranks and dists (the vector side's rank from 1, 0 when it did
// not rank the row, and distance), tranks and tscores (the text side's);
// info gets JSON {"version", "vector_column", "text_column",
// "vector_index", "text_index", "warnings", "sql"}.
//
//export loch_hybrid_search
func loch_hybrid_search(h C.uintptr_t, options *C.char, q *C.float, d C.int64_t, text *C.char, k C.int64_t,
	allowed *C.uint64_t, nallowed C.int64_t, ids *C.uint64_t, scores *C.double, vranks *C.int64_t, dists *C.float,
	tranks *C.int64_t, tscores *C.double, count *C.int64_t, info **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var o hybridOptionsJSON
		if s := goString(options); s != "" {
			if err := json.Unmarshal([]byte(s), &o); err != nil {
				return invalidf("hybrid search options JSON: %v", err)
			}
		}
		if k <= 0 {
			return invalidf("k = %d: want k >= 1", k)
		}
		hq, err := hybridQuery(o, q, d, text, k)
		if err != nil {
			return err
		}
		opts := hybrid.Options{Allow: allowSet(allowed, nallowed), NProbe: o.NProbe, Rerank: o.Rerank, Exact: o.Exact}
		ctx, done := interruptible()
		defer done()
		res, err := hybrid.NewSearcherWith(ds.d, ds.vectorSearcher(), ds.textSearcher()).Search(ctx, hq, opts)
		if err != nil {
			return err
		}
		n := int(k)
		outIDs, outS := unsafe.Slice((*uint64)(unsafe.Pointer(ids)), n), unsafe.Slice((*float64)(unsafe.Pointer(scores)), n)
		outVR, outD := unsafe.Slice((*int64)(unsafe.Pointer(vranks)), n), unsafe.Slice((*float32)(unsafe.Pointer(dists)), n)
		outTR, outTS := unsafe.Slice((*int64)(unsafe.Pointer(tranks)), n), unsafe.Slice((*float64)(unsafe.Pointer(tscores)), n)
		for i, hit := range res.Hits {
			outIDs[i], outS[i] = hit.RowID, hit.Score
			outVR[i], outD[i] = int64(hit.VectorRank), hit.Distance
			outTR[i], outTS[i] = int64(hit.TextRank), hit.TextScore
		}
		*count = C.int64_t(len(res.Hits))
		warnings := res.Warnings
		if warnings == nil {
			warnings = []string{}
		}
		return setJSON(info, hybridInfoJSON{Version: res.Version, VectorColumn: res.Query.VectorColumn, TextColumn: res.Query.TextColumn,
			VectorIndex: res.VectorIndex, TextIndex: res.TextIndex, Warnings: warnings, SQL: res.SQL(o.Where)})
	})
}
