package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/json"

	"github.com/lochdata/loch/vector"
)

// A vector index built by several processes (ABI 23; vector/parts.go):
// one trains (loch_vector_train), tasks each encode a range of rows
// (loch_vector_encode_part) and merge a range of lists
// (loch_vector_merge_lists), and one commits (loch_vector_commit).
// Every handle must be at the trained version; the trained index, the
// parts and the lists travel as JSON.

// loch_vector_train trains the index of column at the handle's version
// (options as loch_vector_build's, plus "part_rows": rows a planned part,
// 0 for about 512 MiB of vectors) and stores its centroids and codebook;
// out = the trained index {"format", "version", "column", "uid",
// "metric", "kind", "dim", "nlist", "m", "seed", "centroids", "codebook",
// "rows", "parts": [[start, stop], ...], "bytes"}. Nothing is committed.
//
//export loch_vector_train
func loch_vector_train(h C.uintptr_t, column, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withIndexOptions(h, column, options, out, errOut, func(ctx context.Context, ds *dataset, o vector.BuildOptions) (any, error) {
		return vector.Train(ctx, ds.d, goString(column), o)
	})
}

// loch_vector_encode_part assigns and encodes the rows at positions
// [start, stop) of the trained index and stores the lists' shares; out =
// the part {"version", "start", "stop", "lists": [{"list", "key",
// "rows"}]}. Running it again writes the same objects.
//
//export loch_vector_encode_part
func loch_vector_encode_part(h C.uintptr_t, trained *C.char, start, stop C.int64_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var t vector.Trained
		if err := decodeJSON("trained index", trained, &t); err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		p, err := vector.EncodePart(ctx, ds.d, &t, int64(start), int64(stop), vector.Options{})
		if err != nil {
			return err
		}
		return setJSON(out, p)
	})
}

// loch_vector_merge_lists stores each list in [lo, hi) of the parts (a
// JSON list of loch_vector_encode_part's answers; shares of other lists
// may be left out) as one object; out = [{"list", "key", "rows"}].
//
//export loch_vector_merge_lists
func loch_vector_merge_lists(h C.uintptr_t, trained, parts *C.char, lo, hi C.int64_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		t, ps, err := trainedAndParts(trained, parts)
		if err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		ls, err := vector.MergeLists(ctx, ds.d.Store(), t, ps, int(lo), int(hi), vector.Options{})
		if err != nil {
			return err
		}
		return setJSON(out, ls)
	})
}

// loch_vector_commit writes the index's descriptor from every part and
// every merged list (the answers of loch_vector_merge_lists,
// concatenated); out as loch_vector_build's. LOCH_INVALID_ARGUMENT when
// the parts do not tile the version's rows or disagree with the lists.
//
//export loch_vector_commit
func loch_vector_commit(h C.uintptr_t, trained, parts, lists *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		t, ps, err := trainedAndParts(trained, parts)
		if err != nil {
			return err
		}
		var ls []vector.PartList
		if err := decodeJSON("index lists", lists, &ls); err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		info, err := vector.Commit(ctx, ds.d, t, ps, ls)
		if err != nil {
			return err
		}
		return setJSON(out, info)
	})
}

// decodeJSON decodes the JSON argument s, which must be given, into v.
func decodeJSON(what string, s *C.char, v any) error {
	if err := json.Unmarshal([]byte(goString(s)), v); err != nil {
		return invalidf("%s JSON: %v", what, err)
	}
	return nil
}

// trainedAndParts decodes a trained index and its parts.
func trainedAndParts(trained, parts *C.char) (*vector.Trained, []*vector.Part, error) {
	var t vector.Trained
	var ps []*vector.Part
	if err := decodeJSON("trained index", trained, &t); err != nil {
		return nil, nil, err
	}
	if err := decodeJSON("index parts", parts, &ps); err != nil {
		return nil, nil, err
	}
	return &t, ps, nil
}
