package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/schema"
)

// mixData makes a dataset of n rows at a temporary path whose two numeric
// columns are chunked differently ("big": 8 rows a chunk, "x": 64), so
// that the columns a loader reads choose its blocks, and deletes every
// fifth row, so that positions and row ids differ.
func mixData(t *testing.T, n int) (string, *loch.Dataset) {
	t.Helper()
	ctx := context.Background()
	url := filepath.Join(t.TempDir(), "ds")
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{4}, ChunkBytes: 1024},
		{Name: "big", DType: schema.Float32, Shape: schema.Shape{32}, ChunkBytes: 1024},
		{Name: "label", Kind: schema.ClassLabel},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	var rows []loch.Row
	for i := range n {
		rows = append(rows, loch.Row{
			"x":     loch.Tensor([]int{4}, []float32{float32(i), 0, 0, 0}),
			"big":   loch.Tensor([]int{32}, make([]float32, 32)),
			"label": loch.Scalar(int64(i % 3)),
		})
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	for id := uint64(0); id < uint64(n); id += 5 {
		require.NoError(t, d.Delete(ctx, id))
	}
	_, err = d.Commit(ctx, "delete every fifth")
	require.NoError(t, err)
	return url, d
}

// cli runs loch with args and returns its exit status, stdout and stderr.
func cli(args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, nil, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// cliExit runs loch with args, requires the exit status want and returns
// stdout and stderr.
func cliExit(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	code, stdout, stderr := cli(args...)
	require.Equal(t, want, code, "loch %v: %s", args, stderr)
	return stdout, stderr
}

// delivered runs the loader to the end and returns its rows as loch order
// prints a mixture's ("DATASET ROW" lines), and its state after the first
// stopAt batches (the end's when stopAt is negative).
func delivered(t *testing.T, l *loader.Loader, stopAt int) (string, loader.State) {
	t.Helper()
	defer l.Close()
	var out strings.Builder
	st := loader.State{}
	for i := 0; ; i++ {
		if i == stopAt {
			st = l.State()
		}
		b, err := l.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for k, id := range b.RowIDs {
			fmt.Fprintf(&out, "%d %d\n", b.Datasets[k], id)
		}
		l.Release(b)
	}
	if stopAt < 0 {
		st = l.State()
	}
	return out.String(), st
}

// TestOrderMixMatchesLoader checks that loch order prints a mixture's rows
// exactly as loader.NewMix delivers them, over shuffle modes, ranks, the
// columns read, the epoch's rows and a resumed epoch, and that the weights
// hold: the datasets' shares of an epoch are the weights'.
func TestOrderMixMatchesLoader(t *testing.T) {
	ctx := context.Background()
	urlA, a := mixData(t, 150)
	urlB, b := mixData(t, 70)
	scans := func() []*loch.Scan { return []*loch.Scan{a.Scan(), b.Scan()} }
	for _, tc := range []struct {
		name      string
		cfg       loader.Config
		weights   []float64
		epochRows int64
	}{
		{"block", loader.Config{BatchSize: 8, Shuffle: "block", Seed: 3, Columns: []string{"x", "big", "label"}}, []float64{0.75, 0.25}, 400},
		{"block, blocks of x", loader.Config{BatchSize: 8, Shuffle: "block", Seed: 3, Columns: []string{"x", "label"}}, []float64{0.75, 0.25}, 400},
		{"full, rank 1 of 3", loader.Config{BatchSize: 5, Shuffle: "full", Seed: 9, Epoch: 2, WorldSize: 3, Rank: 1, Columns: []string{"x", "big", "label"}}, []float64{1, 3}, 0},
		{"none, drop last, window", loader.Config{BatchSize: 7, Shuffle: "none", DropLast: true, WindowRows: 20, Columns: []string{"x", "big", "label"}}, []float64{0.5, 0.5}, 301},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			args := []string{"order", urlA, urlB, "--weights", fmt.Sprintf("%g,%g", tc.weights[0], tc.weights[1]),
				"--epoch-rows", strconv.FormatInt(tc.epochRows, 10), "--batch-size", strconv.Itoa(cfg.BatchSize), "--shuffle", string(cfg.Shuffle),
				"--seed", strconv.FormatUint(cfg.Seed, 10), "--epoch", strconv.Itoa(cfg.Epoch), "--world-size", strconv.Itoa(max(cfg.WorldSize, 1)),
				"--rank", strconv.Itoa(cfg.Rank), "--columns", strings.Join(cfg.Columns, ","), "--window-rows", strconv.FormatInt(cfg.WindowRows, 10)}
			if cfg.DropLast {
				args = append(args, "--drop-last")
			}
			l, err := loader.NewMix(ctx, scans(), tc.weights, tc.epochRows, cfg)
			require.NoError(t, err)
			want, st := delivered(t, l, 3)
			code, got, stderr := cli(args...)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, want, got)

			// Weights: over all ranks the shares are the weights' (rank r
			// draws the same datasets as every other, so one rank shows it).
			lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
			var fromA int
			for _, line := range lines {
				if strings.HasPrefix(line, "0 ") {
					fromA++
				}
			}
			share := tc.weights[0] / (tc.weights[0] + tc.weights[1])
			require.InDelta(t, share, float64(fromA)/float64(len(lines)), 1.0/float64(len(lines))+1e-9, "dataset 0's share")

			// Resume after 3 batches: the rest, as the loader delivers it.
			stateFile := filepath.Join(t.TempDir(), "state.json")
			js, err := json.Marshal(st)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(stateFile, js, 0o644))
			cfg.Resume = &st
			l, err = loader.NewMix(ctx, scans(), tc.weights, tc.epochRows, cfg)
			require.NoError(t, err)
			rest, _ := delivered(t, l, -1)
			code, gotRest, stderr := cli(append(args, "--resume", stateFile)...)
			require.Equal(t, 0, code, stderr)
			require.Equal(t, rest, gotRest)
			require.True(t, strings.HasSuffix(got, rest), "the resumed epoch is the end of the whole")

			// --state-after prints the state the loader holds then.
			code, stateOut, stderr := cli(append(args, "--state-after", "3")...)
			require.Equal(t, 0, code, stderr)
			require.JSONEq(t, string(js), stateOut)
		})
	}
}

// TestOrderResumesPythonState resumes one dataset's epoch from a state
// saved as the Python SDK's state_dict() saves it.
func TestOrderResumesPythonState(t *testing.T) {
	url, d := mixData(t, 100)
	cfg := loader.Config{BatchSize: 4, Shuffle: "block", Seed: 5, Columns: []string{"x", "big", "label"}}
	l, err := loader.New(context.Background(), d.Scan(), cfg)
	require.NoError(t, err)
	for range 2 {
		b, err := l.Next(context.Background())
		require.NoError(t, err)
		l.Release(b)
	}
	st := l.State()
	var rest strings.Builder
	for {
		b, err := l.Next(context.Background())
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, id := range b.RowIDs {
			fmt.Fprintf(&rest, "%d\n", id)
		}
		l.Release(b)
	}
	l.Close()
	js, err := json.Marshal(map[string]any{"epoch": 0, "loader": st})
	require.NoError(t, err)
	stateFile := filepath.Join(t.TempDir(), "state_dict.json")
	require.NoError(t, os.WriteFile(stateFile, js, 0o644))
	code, got, stderr := cli("order", url, "--batch-size", "4", "--seed", "5", "--resume", stateFile)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, rest.String(), got)
}
