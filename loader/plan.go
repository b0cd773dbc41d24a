package loader

import (
	"context"
	"fmt"
	"sort"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
)

// State is what a training run saves to resume the loader mid-epoch (or at
// an epoch boundary): the snapshot, seed, epoch and the batches delivered,
// per world size (see order.State). It marshals to JSON.
type State = order.State

// defaultWindowBlocks is the default block-shuffle window, in blocks.
const defaultWindowBlocks = 8

// spec builds the order specification of cfg over view: blocks are the
// chunks of the column refUID (the largest requested one), so that a block
// costs one chunk fetch; a fragment where that column is empty is one block.
func spec(view *loch.View, refUID int, cfg Config) (order.Spec, error) {
	var blocks []int64
	for k := 0; k < view.Fragments(); k++ {
		_, live := view.FragmentStart(k)
		refs := view.Chunks(k, refUID)
		if len(refs) == 0 {
			if live > 0 {
				blocks = append(blocks, live)
			}
			continue
		}
		del := view.Deleted(k)
		for _, r := range refs {
			if r.Parts > 0 && r.Part > 0 {
				continue
			}
			lo, hi := r.First, r.First+r.Rows
			if r.Parts > 0 {
				hi = lo + 1
			}
			n := (hi - lo) - int64(countIn(del, lo, hi))
			if n > 0 {
				blocks = append(blocks, n)
			}
		}
	}
	window := cfg.WindowRows
	if window <= 0 {
		var largest int64
		for _, b := range blocks {
			largest = max(largest, b)
		}
		window = defaultWindowBlocks * largest
	}
	s := order.Spec{Blocks: blocks, Version: view.Version(), Seed: cfg.Seed, Epoch: cfg.Epoch, Mode: order.Mode(cfg.Shuffle),
		WindowRows: window, WorldSize: cfg.WorldSize, Rank: cfg.Rank, BatchSize: cfg.BatchSize, DropLast: cfg.DropLast}
	if cfg.Rows != nil {
		sub, err := positionsOf(view, cfg.Rows)
		if err != nil {
			return order.Spec{}, err
		}
		s.Subset = sub
	}
	return s, nil
}

// countIn counts the sorted values in [lo, hi).
func countIn(sorted []int64, lo, hi int64) int {
	a := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= lo })
	b := sort.Search(len(sorted), func(i int) bool { return sorted[i] >= hi })
	return b - a
}

// positionsOf maps row ids to positions, in the given order.
func positionsOf(view *loch.View, ids []uint64) ([]int64, error) {
	want := make(map[uint64]int, len(ids))
	for i, id := range ids {
		if _, dup := want[id]; dup {
			return nil, fmt.Errorf("loader: row id %d appears twice in the row subset: %w", id, loch.ErrInvalidArgument)
		}
		want[id] = i
	}
	out := make([]int64, len(ids))
	found := 0
	for k := 0; k < view.Fragments() && found < len(ids); k++ {
		start, live := view.FragmentStart(k)
		del := view.Deleted(k)
		d := 0
		for off, pos := int64(0), start; pos < start+live; off++ {
			if d < len(del) && del[d] == off {
				d++
				continue
			}
			if i, ok := want[view.RowID(k, off)]; ok {
				out[i] = pos
				found++
			}
			pos++
		}
	}
	if found != len(ids) {
		return nil, fmt.Errorf("loader: %d of the %d row ids are not in version %s: %w", len(ids)-found, len(ids), view.Version(), loch.ErrNotFound)
	}
	return out, nil
}

// Order returns the plan of batches that rank cfg.Rank receives in epoch
// cfg.Epoch (or, with cfg.Resume, the rest of the saved epoch): the order
// the loader delivers, without loading any data.
func Order(ctx context.Context, view *loch.View, cfg Config) (*order.EpochPlan, error) {
	cfg.defaults()
	if err := view.Load(ctx, cfg.FetchConcurrency); err != nil {
		return nil, err
	}
	cols, err := columns(view, cfg.Columns)
	if err != nil {
		return nil, err
	}
	return makePlan(view, refColumn(cols), cfg)
}

func makePlan(view *loch.View, refUID int, cfg Config) (*order.EpochPlan, error) {
	s, err := spec(view, refUID, cfg)
	if err != nil {
		return nil, err
	}
	var p *order.EpochPlan
	if cfg.Resume != nil {
		st := *cfg.Resume
		if st.Version != view.Version() {
			if !cfg.AllowVersionChange {
				return nil, fmt.Errorf("loader: the saved state is for version %s, the dataset is at %s (open the saved version, or allow a version change): %w", st.Version, view.Version(), loch.ErrInvalidArgument)
			}
			st.Version = view.Version()
		}
		p, err = order.Resume(s, st)
	} else {
		p, err = order.Plan(s)
	}
	if err != nil {
		return nil, fmt.Errorf("loader: %w: %w", loch.ErrInvalidArgument, err)
	}
	return p, nil
}
