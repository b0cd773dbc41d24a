package loader

import (
	"fmt"

	"github.com/lochdata/loch"
)

// epochPlan is the batches of positions this rank receives in the epoch.
type epochPlan struct {
	batches    [][]int64
	firstBatch int // first batch to produce (after a resume)
}

// makePlan computes the rank's batches. (Temporary: mode none with
// contiguous sharding and padding; the order package replaces it.)
func makePlan(view *loch.View, refUID int, cfg Config) (*epochPlan, error) {
	n := view.Len()
	W, B := int64(cfg.WorldSize), int64(cfg.BatchSize)
	if cfg.Rank < 0 || int64(cfg.Rank) >= W {
		return nil, fmt.Errorf("loader: rank %d outside world size %d: %w", cfg.Rank, W, loch.ErrInvalidArgument)
	}
	per := (n + W - 1) / W
	if cfg.DropLast {
		per = n / (W * B) * B
	}
	var rows []int64
	for i := int64(0); i < per; i++ {
		rows = append(rows, (int64(cfg.Rank)*per+i)%max(n, 1))
	}
	p := &epochPlan{}
	for lo := int64(0); lo < int64(len(rows)); lo += B {
		p.batches = append(p.batches, rows[lo:min(lo+B, int64(len(rows)))])
	}
	if cfg.Resume != nil {
		p.firstBatch = cfg.Resume.BatchesDone
	}
	return p, nil
}
