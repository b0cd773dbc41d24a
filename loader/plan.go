package loader

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
)

// State is what a training run saves to resume the loader mid-epoch (or at
// an epoch boundary): the snapshot, seed, epoch and the batches delivered,
// per world size (see order.State). It marshals to JSON.
type State = order.State

// spec builds the order specification of cfg over scan. It depends on
// the snapshot and cfg's order fields only, never on the columns loaded:
// blocks are the snapshot's segments (loch.Scan.Segments), and a row
// subset is named by its row ids (selection).
func spec(scan *loch.Scan, cfg Config) (order.Spec, error) {
	s := order.Spec{Blocks: scan.Segments(), Version: scan.Version(), Seed: cfg.Seed, Epoch: cfg.Epoch, Mode: cfg.Shuffle,
		WindowRows: cfg.WindowRows, WorldSize: cfg.WorldSize, Rank: cfg.Rank, BatchSize: cfg.BatchSize, DropLast: cfg.DropLast}
	if cfg.Rows != nil {
		sub, err := scan.Positions(cfg.Rows)
		if err != nil {
			return order.Spec{}, fmt.Errorf("loader: row subset: %w", err)
		}
		s.Subset = sub
	}
	s.Selection, _ = specSelection(cfg)
	return s, nil
}

// selection names a row subset by its ids, in order: their count and the
// XXH3 of their little-endian bytes. It outlives positions, which another
// version of the dataset may change.
func selection(ids []uint64) string {
	h := xxh3.New()
	var b [8]byte
	for _, id := range ids {
		binary.LittleEndian.PutUint64(b[:], id)
		h.Write(b[:])
	}
	return fmt.Sprintf("%d rows, xxh3 %016x", len(ids), h.Sum64())
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
	if _, err := columns(view, cfg.Columns); err != nil {
		return nil, err // the order does not depend on them, but they must exist
	}
	return makePlan(view, cfg)
}

func makePlan(view *loch.Scan, cfg Config) (*order.EpochPlan, error) {
	s, err := spec(view, cfg)
	if err != nil {
		return nil, err
	}
	return planned(cfg, s.Version, false, s, order.Plan, order.Resume)
}

// OrderMix returns the plan of a mixture's batches that rank cfg.Rank
// receives (or, with cfg.Resume, the rest of the saved epoch): the order
// NewMix delivers, without loading any data.
func OrderMix(ctx context.Context, scans []*loch.Scan, weights []float64, epochRows int64, cfg Config) (*order.MixPlan, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	for _, sc := range scans {
		if err := sc.Load(ctx, cfg.FetchConcurrency); err != nil {
			return nil, err
		}
		if _, err := columns(sc, cfg.Columns); err != nil {
			return nil, err
		}
	}
	return makeMixPlan(scans, weights, epochRows, cfg)
}

// makeMixPlan plans a mixture of loaded scans (see NewMix).
func makeMixPlan(scans []*loch.Scan, weights []float64, epochRows int64, cfg Config) (*order.MixPlan, error) {
	if len(scans) == 0 || len(scans) != len(weights) {
		return nil, fmt.Errorf("loader: %d datasets and %d weights: %w", len(scans), len(weights), loch.ErrInvalidArgument)
	}
	ms := order.MixSpec{Weights: weights, EpochRows: epochRows, Seed: cfg.Seed, Epoch: cfg.Epoch,
		WorldSize: cfg.WorldSize, Rank: cfg.Rank, BatchSize: cfg.BatchSize, DropLast: cfg.DropLast}
	var versions []string
	for _, v := range scans {
		sp, err := spec(v, cfg)
		if err != nil {
			return nil, err
		}
		ms.Parts = append(ms.Parts, sp)
		versions = append(versions, v.Version())
	}
	ms.Version = strings.Join(versions, "+")
	return planned(cfg, ms.Version, true, ms, order.PlanMix, order.ResumeMix)
}

// planned is plan(s), or with cfg.Resume the rest of the saved epoch,
// resume(s, state), for the plan of version (mix: of a mixture).
func planned[S, P any](cfg Config, version string, mix bool, s S, plan func(S) (P, error), resume func(S, order.State) (P, error)) (P, error) {
	var p, none P
	var err error
	if cfg.Resume != nil {
		var st order.State
		if st, err = resumed(cfg, version, mix); err != nil {
			return none, err
		}
		p, err = resume(s, st)
	} else {
		p, err = plan(s)
	}
	if err != nil {
		return none, fmt.Errorf("loader: %w: %w", loch.ErrInvalidArgument, err)
	}
	return p, nil
}

// resumed returns the state cfg resumes, refused when it was saved on
// another version than version (the snapshots' of a mixture) unless cfg
// allows a version change, which makes it this version's.
func resumed(cfg Config, version string, mixture bool) (order.State, error) {
	st := *cfg.Resume
	if cfg.AllowVersionChange && cfg.Query != "" && !mixture {
		// A query's rows change with the version (and the query): the
		// state follows this run's.
		st.Setup.Selection, _ = specSelection(cfg)
	}
	if st.Version == version {
		return st, nil
	}
	if !cfg.AllowVersionChange {
		if mixture {
			return st, fmt.Errorf("loader: the saved state is for versions %s, the datasets are at %s (open the saved versions, or allow a version change): %w", st.Version, version, loch.ErrInvalidArgument)
		}
		return st, fmt.Errorf("loader: the saved state is for version %s, the dataset is at %s (open the saved version, or allow a version change): %w", st.Version, version, loch.ErrInvalidArgument)
	}
	st.Version = version
	return st, nil
}

// specSelection is the Selection that spec records for cfg's rows and
// query (without loading anything).
func specSelection(cfg Config) (string, error) {
	if len(cfg.Joined) > 0 {
		// The joined values are part of what a run reads: a resume with
		// other values (the query run again over changed tables) is
		// another selection.
		s, err := specSelection(Config{Rows: cfg.Rows, Query: cfg.Query})
		return s + ", " + joinedDigest(cfg.Joined), err
	}
	switch {
	case cfg.Query == "" && cfg.Rows == nil:
		return "", nil
	case cfg.Query == "":
		return selection(cfg.Rows), nil
	case cfg.Rows == nil:
		return fmt.Sprintf("every row, query %q", cfg.Query), nil
	}
	return fmt.Sprintf("%s of query %q", selection(cfg.Rows), cfg.Query), nil
}
