package ingest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/stretchr/testify/require"
)

func TestOrderedKeepsOrderAndBoundsMemory(t *testing.T) {
	rng := testseed.Rand(t, 1)
	for _, n := range []int{1, 2, 5} {
		var emitted, consumed, maxInFlight atomic.Int64
		const jobs = 500
		spins := make([]int, jobs)
		for i := range spins {
			spins[i] = rng.IntN(2000)
		}
		var got []int
		err := ordered(context.Background(), n, func(ctx context.Context, emit func(job[int]) error) error {
			for i := range jobs {
				if inFlight := emitted.Add(1) - consumed.Load(); inFlight > maxInFlight.Load() {
					maxInFlight.Store(inFlight)
				}
				err := emit(func(ctx context.Context) (int, error) {
					for range spins[i] { // uneven work, so jobs finish out of order
						runtime.Gosched()
					}
					return i, nil
				})
				if err != nil {
					return err
				}
			}
			return nil
		}, func(v int) error {
			consumed.Add(1)
			got = append(got, v)
			return nil
		})
		require.NoError(t, err)
		require.Len(t, got, jobs)
		for i, v := range got {
			require.Equal(t, i, v)
		}
		require.LessOrEqual(t, maxInFlight.Load(), int64(2*n+2), "n=%d", n)
	}
}

func TestOrderedErrors(t *testing.T) {
	boom := errors.New("boom")
	produce := func(failAt int) func(ctx context.Context, emit func(job[int]) error) error {
		return func(ctx context.Context, emit func(job[int]) error) error {
			for i := 0; ; i++ {
				err := emit(func(ctx context.Context) (int, error) {
					if i == failAt {
						return 0, boom
					}
					return i, nil
				})
				if err != nil {
					return err
				}
			}
		}
	}
	var got []int
	err := ordered(context.Background(), 3, produce(100), func(v int) error { got = append(got, v); return nil })
	require.ErrorIs(t, err, boom)
	require.Len(t, got, 100, "every job before the failed one is consumed, in order")

	err = ordered(context.Background(), 3, produce(-1), func(v int) error {
		if v == 10 {
			return boom
		}
		return nil
	})
	require.ErrorIs(t, err, boom)

	err = ordered(context.Background(), 2, func(ctx context.Context, emit func(job[int]) error) error {
		return boom
	}, func(int) error { return nil })
	require.ErrorIs(t, err, boom)

	ctx, cancel := context.WithCancel(context.Background())
	err = ordered(ctx, 2, produce(-1), func(v int) error {
		if v == 5 {
			cancel()
		}
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
}

// TestParallelismDoesNotChangeRows ingests the same sources with 1 and 4
// goroutines and compares every stored sample.
func TestParallelismDoesNotChangeRows(t *testing.T) {
	ctx := context.Background()
	root, _ := makeFolder(t)
	wds, _ := wdsShards(t)
	dir := t.TempDir()
	var sb strings.Builder
	for i := range 700 {
		img := ""
		if i%50 == 0 {
			name := fmt.Sprintf("img%d.png", i)
			writeFile(t, filepath.Join(dir, name), encodePNG(t, testImage(uint64(i), 5, 4, 3)))
			img = fmt.Sprintf(`, "img": %q`, name)
		}
		fmt.Fprintf(&sb, "{\"i\": %d, \"v\": [%d, %d]%s}\n", i, i, -i, img)
	}
	jsonl := filepath.Join(dir, "d.jsonl")
	writeFile(t, jsonl, []byte(sb.String()))

	for name, ingest := range map[string]func(url string, o Options) error{
		"imagefolder": func(url string, o Options) error { _, err := ImageFolder(ctx, root, url, o); return err },
		"imagefolder jpeg": func(url string, o Options) error {
			o.ImageCompression, o.Resize = CompressJPEG, Size{Width: 7, Height: 3}
			_, err := ImageFolder(ctx, root, url, o)
			return err
		},
		"jsonl": func(url string, o Options) error {
			o.ImageFields = []string{"img"}
			_, err := JSONL(ctx, jsonl, url, o)
			return err
		},
		"webdataset": func(url string, o Options) error {
			_, err := WebDataset(ctx, []string{filepath.Join(wds, "shard-{00..01}.tar"), filepath.Join(wds, "shard-02.tar.gz")}, url, o)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			one, four := memURL(t), memURL(t)
			require.NoError(t, ingest(one, Options{Parallelism: 1}))
			require.NoError(t, ingest(four, Options{Parallelism: 4}))
			a, b := openDataset(t, one), openDataset(t, four)
			sa, sb := a.Schema(), b.Schema()
			require.Equal(t, sa.Names(), sb.Names())
			require.Equal(t, contents(t, a), contents(t, b))
		})
	}
}
