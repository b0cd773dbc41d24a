package order_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/loader/order"
)

// BenchmarkPlan times planning an epoch of 10M rows (blocks of 1,000 rows,
// windows of 16 blocks, on 1 and 8 ranks) and planning and streaming one
// rank's order, beside the baseline of the same run: math/rand/v2's Perm
// of 10M. ns/row is per row of the epoch (a rank streams 1/world of them).
func BenchmarkPlan(b *testing.B) {
	const n = 10_000_000
	b.Run("baseline=rand.Perm", func(b *testing.B) {
		b.ReportAllocs()
		rng := rand.New(rand.NewPCG(1, 2))
		for b.Loop() {
			_ = rng.Perm(n)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
	})
	for _, world := range []int{1, 8} {
		for _, mode := range modes {
			s := order.Spec{Blocks: blocks(n, 1000), Mode: mode, Seed: 1, WindowRows: 16_000, WorldSize: world, BatchSize: 256}
			b.Run(fmt.Sprintf("plan/%s/world=%d", mode, world), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := order.Plan(s); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
			})
			b.Run(fmt.Sprintf("plan+stream/%s/world=%d", mode, world), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					p, err := order.Plan(s)
					if err != nil {
						b.Fatal(err)
					}
					for range p.All() {
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/row")
			})
		}
	}
}
