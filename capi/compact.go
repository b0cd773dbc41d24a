package main

/*
#include "loch.h"
*/
import "C"

import (
	"bytes"
	"context"
	"encoding/json"
	"math"

	"github.com/lochdata/loch"
)

// The compaction exports (ABI 16, docs/format.md §8): loch_dataset_compact
// compacts the handle's branch; the "auto_compact" option of
// loch_dataset_open and loch_dataset_create makes every commit of the
// handle end with a tiered compaction, whose outcome
// loch_dataset_last_auto_compaction reports.

// compactOptions are the JSON options of loch_dataset_compact and of
// "auto_compact": absent or 0 fields take loch's defaults.
type compactOptions struct {
	TargetRows  int64    `json:"target_rows"`
	TargetBytes int64    `json:"target_bytes"`
	MaxDeleted  *float64 `json:"max_deleted"` // nil: the default; negative: never for deletions alone
	Fanout      int      `json:"fanout"`
	DryRun      bool     `json:"dry_run"`
	Message     string   `json:"message"`
}

// compact converts o to loch's options, checking them; what names them in
// errors ("compact options", "auto_compact").
func (o compactOptions) compact(what string) (loch.CompactOptions, error) {
	switch {
	case o.TargetRows < 0:
		return loch.CompactOptions{}, invalidf("%s: target_rows %d: want 1 or more (0: the default)", what, o.TargetRows)
	case o.TargetBytes < 0:
		return loch.CompactOptions{}, invalidf("%s: target_bytes %d: want 1 or more (0: the default)", what, o.TargetBytes)
	case o.Fanout == 1 || o.Fanout < 0:
		return loch.CompactOptions{}, invalidf("%s: fanout %d: want 0 (merge every run) or 2 or more", what, o.Fanout)
	}
	opts := loch.CompactOptions{TargetRows: o.TargetRows, TargetBytes: o.TargetBytes, Fanout: o.Fanout, DryRun: o.DryRun, Message: o.Message}
	if m := o.MaxDeleted; m != nil {
		if *m == 0 || *m >= 1 || math.IsNaN(*m) {
			return loch.CompactOptions{}, invalidf("%s: max_deleted %v: want a fraction above 0 and below 1, or a negative value (never)", what, *m)
		}
		opts.MaxDeleted = *m
	}
	return opts, nil
}

// parseCompactOptions reads the JSON options of loch_dataset_compact and
// loch_dataset_plan_compaction.
func parseCompactOptions(text string) (loch.CompactOptions, error) {
	var o compactOptions
	if err := decodeStrict("compact options", text, &o); err != nil {
		return loch.CompactOptions{}, err
	}
	return o.compact("compact options")
}

// autoCompactOption is the Open option of "auto_compact": true (the
// defaults), false or null (none), or an object of compactOptions without
// dry_run.
func autoCompactOption(raw json.RawMessage) (loch.Option, error) {
	switch string(bytes.TrimSpace(raw)) {
	case "", "null", "false":
		return nil, nil
	case "true":
		return loch.WithAutoCompact(loch.CompactOptions{}), nil
	}
	if bytes.TrimSpace(raw)[0] != '{' {
		return nil, invalidf("auto_compact: want true, false or an object of compaction options, got %s", raw)
	}
	var o compactOptions
	if err := decodeStrict("auto_compact", string(raw), &o); err != nil {
		return nil, err
	}
	if o.DryRun {
		return nil, invalidf("auto_compact: dry_run: automatic compaction always writes (use loch_dataset_compact to plan)")
	}
	opts, err := o.compact("auto_compact")
	if err != nil {
		return nil, err
	}
	return loch.WithAutoCompact(opts), nil
}

// loch_dataset_compact rewrites the small fragments, and the fragments
// with many deleted rows, of the handle's branch into fragments of the
// target size as one commit, and moves the handle to it (loch.Dataset.
// Compact). options is JSON ({"target_rows", "target_bytes",
// "max_deleted", "fanout", "dry_run", "message"}, each optional) or NULL.
// *out is the report: {"dry_run", "version", "fragments_before",
// "fragments_after", "groups", "rewritten", "rows", "dropped",
// "bytes_before", "bytes_after", "yielded"}. LOCH_INVALID_ARGUMENT while
// writes are staged; LOCH_READ_ONLY on a read-only handle.
//
//export loch_dataset_compact
func loch_dataset_compact(h C.uintptr_t, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withOptions(h, options, out, errOut, parseCompactOptions, (*loch.Dataset).Compact)
}

// loch_dataset_last_auto_compaction reports the last compaction that the
// handle's "auto_compact" option ran after a commit: *out is its report
// (as loch_dataset_compact's), or "null" when none ran. When that
// compaction failed (which did not undo the commit before it), the status
// and message are its error and *out is not set.
//
//export loch_dataset_last_auto_compaction
func loch_dataset_last_auto_compaction(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		rep, err := ds.d.LastAutoCompaction()
		if err != nil {
			return err
		}
		return setJSON(out, rep)
	})
}

// loch_dataset_plan_compaction plans a compaction of the handle's branch
// for several processes (loch.Dataset.PlanCompaction; docs/format.md §8):
// options as loch_dataset_compact's ("dry_run" ignored); *out is the plan:
// {"format", "dataset", "branch", "base", "groups": [[i, j], ...],
// "message", "report"}. It writes nothing.
//
//export loch_dataset_plan_compaction
func loch_dataset_plan_compaction(h C.uintptr_t, options *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withOptions(h, options, out, errOut, parseCompactOptions, (*loch.Dataset).PlanCompaction)
}

// loch_dataset_compact_group rewrites group index of plan (the JSON of
// loch_dataset_plan_compaction) into one fragment, unreferenced until
// loch_dataset_commit_compaction publishes it, and sets *out to its
// description: {"format", "dataset", "base", "group", "key", "rows"}.
// Any handle on the plan's dataset may
// run it, read-only ones included.
//
//export loch_dataset_compact_group
func loch_dataset_compact_group(h C.uintptr_t, plan *C.char, index C.int64_t, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*loch.CompactedGroup, error) {
		var p loch.CompactPlan
		if err := decodeStrict("compaction plan", goString(plan), &p); err != nil {
			return nil, err
		}
		return ds.d.CompactGroup(ctx, &p, int(index))
	})
}

// loch_dataset_commit_compaction publishes the groups of plan that
// loch_dataset_compact_group rewrote (groups: a JSON list of their
// descriptions) as one commit on the handle's branch, and sets *out to the
// report (as loch_dataset_compact's). LOCH_INVALID_ARGUMENT for a
// description of another plan; LOCH_CORRUPT when a written fragment does
// not hold its group's rows.
//
//export loch_dataset_commit_compaction
func loch_dataset_commit_compaction(h C.uintptr_t, plan, groups *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withResult(h, out, errOut, func(ctx context.Context, ds *dataset) (*loch.CompactReport, error) {
		var p loch.CompactPlan
		if err := decodeStrict("compaction plan", goString(plan), &p); err != nil {
			return nil, err
		}
		var gs []loch.CompactedGroup
		if err := decodeStrict("compacted groups", goString(groups), &gs); err != nil {
			return nil, err
		}
		return ds.d.CommitCompaction(ctx, &p, gs)
	})
}
