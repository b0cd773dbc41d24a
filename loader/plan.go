package loader

import (
	"context"
	"fmt"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
)

// State is what a training run saves to resume the loader mid-epoch (or at
// an epoch boundary): the snapshot, seed, epoch and the batches delivered,
// per world size (see order.State). It marshals to JSON.
type State = order.State

// spec builds the order specification of cfg over scan: blocks are the
// chunks of the column refUID (the largest requested one), so that a block
// costs one chunk fetch; a fragment where that column is empty is one block.
func spec(scan *loch.Scan, refUID int, cfg Config) (order.Spec, error) {
	s := order.Spec{Blocks: scan.Blocks(refUID), Version: scan.Version(), Seed: cfg.Seed, Epoch: cfg.Epoch, Mode: cfg.Shuffle,
		WindowRows: cfg.WindowRows, WorldSize: cfg.WorldSize, Rank: cfg.Rank, BatchSize: cfg.BatchSize, DropLast: cfg.DropLast}
	if cfg.Rows != nil {
		sub, err := scan.Positions(cfg.Rows)
		if err != nil {
			return order.Spec{}, fmt.Errorf("loader: row subset: %w", err)
		}
		s.Subset = sub
	}
	return s, nil
}

// Order returns the plan of batches that rank cfg.Rank receives in epoch
// cfg.Epoch (or, with cfg.Resume, the rest of the saved epoch): the order
// the loader delivers, without loading any data.
func Order(ctx context.Context, view *loch.Scan, cfg Config) (*order.EpochPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
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

func makePlan(view *loch.Scan, refUID int, cfg Config) (*order.EpochPlan, error) {
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
