package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/json"

	"github.com/lochdata/loch"
)

// The staged-write exports (ABI 9, docs/format.md §7): a writer stages
// its rows without committing and gets a description; a committer
// publishes any number of descriptions in one commit.

// loch_dataset_stage writes the handle's staged appends as fragments
// without committing them and stores their description (the JSON of
// loch.Staged) in out.
//
//export loch_dataset_stage
func loch_dataset_stage(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*loch.Staged, error) {
		return ds.d.Stage(ctx)
	})
}

// loch_dataset_commit_staged publishes the descriptions in descs (a JSON
// list of loch.Staged) as one commit with the given message and stores
// the JSON of loch.StagedCommit ({"version", "published", "skipped",
// "rows"}) in out.
//
//export loch_dataset_commit_staged
func loch_dataset_commit_staged(h C.uintptr_t, message, descs *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*loch.StagedCommit, error) {
		var raw []json.RawMessage
		if err := json.Unmarshal([]byte(goString(descs)), &raw); err != nil {
			return nil, invalidf("staged-write descriptions: want a JSON list (%v)", err)
		}
		staged := make([]*loch.Staged, len(raw))
		for i, r := range raw {
			s, err := loch.ParseStaged(r)
			if err != nil {
				return nil, err
			}
			staged[i] = s
		}
		return ds.d.CommitStaged(ctx, goString(message), staged...)
	})
}

// loch_dataset_fragment_rows stores the live rows of each fragment of the
// handle's version, in row order, as a JSON list of integers.
//
//export loch_dataset_fragment_rows
func loch_dataset_fragment_rows(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return setJSON(out, ds.d.FragmentRows())
	})
}
