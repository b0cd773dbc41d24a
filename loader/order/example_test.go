package order_test

import (
	"fmt"

	"github.com/lochdata/loch/loader/order"
)

// Rank 1 of 2 in a block-shuffled epoch: 10 rows in blocks of 4, 4 and 2,
// batches of 3. The 10 rows are padded to 2 ranks of 5.
func ExamplePlan() {
	p, err := order.Plan(order.Spec{
		Blocks: []int64{4, 4, 2}, Mode: order.ModeBlock, Seed: 7, Epoch: 0,
		WorldSize: 2, Rank: 1, BatchSize: 3,
	})
	if err != nil {
		panic(err)
	}
	for i, batch := range p.All() {
		fmt.Println(i, batch)
	}
	// Output:
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
	fmt.Printf("%+v\n", st)

	s.WorldSize, s.Rank = 3, 0
	q, err := order.Resume(s, st)
	if err != nil {
		panic(err)
	}
	fmt.Println(q.Rows(), "rows in", q.Batches(), "batches on each of 3 ranks")
	// Output:
}

// Two datasets mixed 3:1: the epoch ends when the first has delivered each
// of its rows once.
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
}
