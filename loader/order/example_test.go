package order_test

import (
	"encoding/json"
	"fmt"

	"github.com/lochdata/loch/loader/order"
)

// Rank 1 of 2 in a block-shuffled epoch of 10 rows in blocks of 4, 4 and
// 2, in batches of 3. The blocks' order is 1 2 0: rank 0 has rows 4 to 8,
// rank 1 rows 9 and 0 to 3, one window, shuffled.
func ExamplePlan() {
	p, err := order.Plan(order.Spec{
		Blocks: []int64{4, 4, 2}, Mode: order.ModeBlock, Seed: 3, Epoch: 0,
		WorldSize: 2, Rank: 1, BatchSize: 3,
	})
	if err != nil {
		panic(err)
	}
	for i, batch := range p.All() {
		fmt.Println(i, batch)
	}
	// Output:
	// 0 [9 1 2]
	// 1 [0 3]
}

// A run saves its state after a batch and resumes, here in another world
// size: the rest of the epoch is spread over the new ranks.
func ExampleResume() {
	s := order.Spec{Blocks: []int64{100}, Mode: order.ModeFull, Seed: 1, WorldSize: 4, BatchSize: 8, Version: "snap-1"}
	p, err := order.Plan(s)
	if err != nil {
		panic(err)
	}
	st := p.State(2) // each of the 4 ranks delivered 2 batches: 64 rows
	saved, _ := json.Marshal(st)
	fmt.Println(string(saved))

	s.WorldSize, s.Rank = 3, 0
	q, err := order.Resume(s, st)
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Rows(), "rows in", q.Batches(), "batches on each of 3 ranks")
	// Output:
	// {"version":"snap-1","seed":1,"epoch":0,"mode":"full","stages":[{"world_size":4,"batch_size":8,"batches_done":2}]}
	// 12 rows in 2 batches on each of 3 ranks
}

// Two datasets mixed 3:1: the epoch ends when the second, the largest for
// its weight (5 rows at 1/4), has delivered each of its rows once; the
// first is cycled, each cycle another shuffle. An item is {dataset row}.
func ExamplePlanMix() {
	p, err := order.PlanMix(order.MixSpec{
		Parts: []order.Spec{
			{Blocks: []int64{6}, Mode: order.ModeFull},
			{Blocks: []int64{5}, Mode: order.ModeNone},
		},
		Weights:   []float64{3, 1},
		Seed:      2,
		BatchSize: 4,
	})
	if err != nil {
		panic(err)
	}
	for i, batch := range p.All() {
		fmt.Println(i, batch)
	}
	// Output:
	// 0 [{0 3} {0 0} {0 1} {1 0}]
	// 1 [{1 1} {0 2} {0 5} {0 4}]
	// 2 [{0 3} {0 0} {0 1} {0 4}]
	// 3 [{0 5} {0 2} {1 2} {0 3}]
	// 4 [{1 3} {0 0} {0 2} {1 4}]
}
