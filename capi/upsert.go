package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"

	"github.com/lochdata/loch"
)

// upsertOptions are loch_dataset_upsert's options, as JSON.
type upsertOptions struct {
	On             []string `json:"on"`
	WhenMatched    string   `json:"when_matched"`
	WhenNotMatched string   `json:"when_not_matched"`
	Message        string   `json:"message"`
}

// loch_dataset_upsert (ABI 17) merges n rows, given column by column as
// for loch_dataset_extend, into the handle's branch by key as one commit
// (loch.Dataset.Upsert): a row whose key columns equal an existing row's
// updates it in place (the columns given), the others are appended.
// options is JSON: {"on": [key columns] (required), "when_matched":
// "update" (default) or "nothing", "when_not_matched": "insert" (default)
// or "nothing", "message": the commit message}. out gets the report as
// JSON: {"version", "updated", "inserted"}. Keys given twice, and writes
// staged on the handle, are LOCH_INVALID_ARGUMENT; nothing is committed on
// error.
//
//export loch_dataset_upsert
func loch_dataset_upsert(h C.uintptr_t, n C.int64_t, cols *C.loch_column_in, ncols C.int32_t, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*loch.UpsertReport, error) {
		var o upsertOptions
		if err := decodeStrict("upsert options", goString(options), &o); err != nil {
			return nil, err
		}
		rows, err := rowsOf(ds, int(n), unsafeSlice(cols, int(ncols)))
		if err != nil {
			return nil, err
		}
		return ds.d.Upsert(ctx, rows, loch.UpsertOptions{On: o.On, WhenMatched: o.WhenMatched, WhenNotMatched: o.WhenNotMatched, Message: o.Message})
	})
}
