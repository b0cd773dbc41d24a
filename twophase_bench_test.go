package loch

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkCommitStaged commits the descriptions of F fragments written
// by simulated writers (4 goroutines, each fragment its own Stage), with
// R rows in each fragment, onto a fresh branch per iteration. The cost
// should follow F and not F×R: compare frags=1000/rows=1 with
// frags=1000/rows=1000; frags=10 is the baseline of a small commit.
func BenchmarkCommitStaged(b *testing.B) {
	for _, tc := range []struct{ frags, rows int }{{10, 1}, {1000, 1}, {1000, 1000}, {10000, 1}} {
		b.Run(fmt.Sprintf("frags=%d/rows=%d", tc.frags, tc.rows), func(b *testing.B) {
			url := benchURL(b)
			d, err := Create(ctx, url, stagedSchema)
			require.NoError(b, err)
			defer d.Close()
			descs := stageFragments(b, url, tc.frags, tc.rows)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				name := fmt.Sprintf("b%d", i)
				_, err := d.CreateBranch(ctx, name, "main")
				require.NoError(b, err)
				require.NoError(b, d.Checkout(ctx, name))
				b.StartTimer()
				_, err = d.CommitStaged(ctx, "bench", descs...)
				require.NoError(b, err)
			}
			b.StopTimer()
			require.EqualValues(b, tc.frags*tc.rows, d.Len())
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tc.frags), "ns/fragment")
		})
	}
}

// stageFragments stages frags fragments of rows rows each from 4
// concurrent writers.
func stageFragments(b *testing.B, url string, frags, rows int) []*Staged {
	out := make([]*Staged, frags)
	var wg sync.WaitGroup
	const writers = 4
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := Open(ctx, url, WithParallelism(1))
			require.NoError(b, err)
			defer d.Close()
			batch := make([]Row, rows)
			for f := w; f < frags; f += writers {
				for i := range batch {
					batch[i] = Row{"w": Scalar(int32(w)), "n": Scalar(int64(f*rows + i))}
				}
				require.NoError(b, d.Extend(ctx, batch))
				s, err := d.Stage(ctx)
				require.NoError(b, err)
				out[f] = s
			}
		}()
	}
	wg.Wait()
	return out
}
