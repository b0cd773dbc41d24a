package loader

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

var ctx = context.Background()

// testDataset writes n rows with a fixed tensor, a ragged tensor, a png
// image, text and a label, in small chunks.
func testDataset(t testing.TB, n int) *loch.Dataset {
	t.Helper()
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{4}, ChunkBytes: 1024, ChunkCompression: schema.LZ4},
		{Name: "r", DType: schema.Int16, Shape: schema.Shape{-1, 2}, ChunkBytes: 2048},
		{Name: "img", Kind: schema.Image, SampleCompression: schema.PNG, ChunkBytes: 4096},
		{Name: "t", Kind: schema.TextKind, ChunkBytes: 1024, ChunkCompression: schema.Zstd},
		{Name: "label", Kind: schema.ClassLabel},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	var rows []loch.Row
	for i := 0; i < n; i++ {
		r := make([]int16, 2*(i%5))
		for k := range r {
			r[k] = int16(i)
		}
		pix := bytes.Repeat([]byte{byte(i), byte(i * 3), byte(i * 7)}, 4*3)
		row := loch.Row{
			"x":     loch.Tensor([]int{4}, []float32{float32(i), 1, 2, 3}),
			"r":     loch.Tensor([]int{i % 5, 2}, r),
			"img":   loch.Tensor([]int{4, 3, 3}, pix),
			"label": loch.Scalar(int64(i % 3)),
		}
		if i%7 != 0 {
			row["t"] = loch.String(fmt.Sprintf("row %d", i))
		}
		rows = append(rows, row)
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	return d
}

func drain(t testing.TB, l *Loader) []*Batch {
	var out []*Batch
	for {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, b)
	}
}

// TestBatchesMatchRows checks every collated value against ColumnReader.Read,
// under several concurrency and prefetch settings.
func TestBatchesMatchRows(t *testing.T) {
	d := testDataset(t, 103)
	for _, cfg := range []Config{
		{BatchSize: 8, Shuffle: "full", Seed: 4},
		{BatchSize: 8, Shuffle: "block", Seed: 4, WindowRows: 30},
		{BatchSize: 8, Workers: 1, FetchConcurrency: 1, PrefetchBatches: 1, PrefetchBytes: 1},
		{BatchSize: 8, Workers: 4, FetchConcurrency: 8},
		{BatchSize: 32, Workers: 2, PrefetchBytes: 10 << 10},
	} {
		ordered := cfg.Shuffle == ""
		if ordered {
			cfg.Shuffle = "none"
		}
		l, err := New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		batches := drain(t, l)
		require.NoError(t, l.Close())
		require.Len(t, batches, (103+cfg.BatchSize-1)/cfg.BatchSize)
		var pos int64
		seen := map[int64]bool{}
		for _, b := range batches {
			for k, p := range b.Positions {
				if ordered {
					require.Equal(t, pos, p)
				}
				require.False(t, seen[p])
				seen[p] = true
				pos++
				for name, tns := range b.Columns {
					col, _ := d.Column(name)
					want, err := col.Read(ctx, p, nil)
					require.NoError(t, err)
					if want.Null {
						require.True(t, tns.Null != nil && tns.Null[k], "%s row %d null", name, p)
						continue
					}
					if tns.Items != nil {
						require.Equal(t, want.Data, tns.Items[k])
						continue
					}
					per := len(tns.Data) / b.Len()
					got := tns.Data[k*per : (k+1)*per]
					if tns.Shapes != nil {
						require.Equal(t, want.Shape, tns.Shapes[k])
						// the sample is the leading part of each padded row
						require.Equal(t, want.Shape[0]*2*2, countPrefix(got, want.Data))
					} else {
						require.Equal(t, want.Data, got, "%s row %d", name, p)
					}
				}
			}
			l.Release(b)
		}
		require.EqualValues(t, 103, pos)
	}
}

func countPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func TestResumeSameBatches(t *testing.T) {
	d := testDataset(t, 50)
	cfg := Config{BatchSize: 6, Shuffle: "none", Seed: 3}
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	all := drain(t, l)
	l.Close()
	st := stateAfter(t, d, cfg, 3)
	require.Equal(t, 3, st.Stages[len(st.Stages)-1].BatchesDone)
	cfg.Resume = &st
	l, err = New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	rest := drain(t, l)
	l.Close()
	require.Len(t, rest, len(all)-3)
	for i, b := range rest {
		require.Equal(t, all[i+3].Positions, b.Positions)
	}
}

// TestResumeOtherVersion: a state records the version it read; resuming it
// on another version is refused unless AllowVersionChange is set, which
// continues at the same batch count.
func TestResumeOtherVersion(t *testing.T) {
	d := testDataset(t, 50)
	cfg := Config{BatchSize: 5, Shuffle: "block", Seed: 3}
	st := stateAfter(t, d, cfg, 2)
	require.Equal(t, d.Version(), st.Version)
	require.NoError(t, d.Append(ctx, loch.Row{"label": loch.Scalar(int64(1))}))
	_, err := d.Commit(ctx, "one more row")
	require.NoError(t, err)
	cfg.Resume = &st
	_, err = New(ctx, d.Scan(), cfg)
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, st.Version)
	cfg.AllowVersionChange = true
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	rest := drain(t, l)
	l.Close()
	require.Len(t, rest, 11-2, "51 rows in batches of 5, two delivered before")
	require.Equal(t, d.Version(), l.State().Version)
}

func positions(t testing.TB, d *loch.Dataset, cfg Config) [][]int64 {
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	defer l.Close()
	var out [][]int64
	for _, b := range drain(t, l) {
		out = append(out, b.Positions)
	}
	return out
}

// TestOrderIndependentOfConcurrency: the same seed and epoch give the same
// batches whatever the goroutines and prefetch depth.
func TestOrderIndependentOfConcurrency(t *testing.T) {
	d := testDataset(t, 150)
	for _, mode := range []order.Mode{"block", "full"} {
		base := Config{BatchSize: 8, Shuffle: mode, Seed: 11, Epoch: 2, WindowRows: 40}
		want := positions(t, d, base)
		for _, v := range []Config{{Workers: 1, FetchConcurrency: 1, PrefetchBatches: 1}, {Workers: 4, FetchConcurrency: 16, PrefetchBatches: 8}} {
			c := base
			c.Workers, c.FetchConcurrency, c.PrefetchBatches = v.Workers, v.FetchConcurrency, v.PrefetchBatches
			require.Equal(t, want, positions(t, d, c), mode)
		}
		other := base
		other.Epoch = 3
		require.NotEqual(t, want, positions(t, d, other), "another epoch, another order")
	}
}

// TestRanksCoverEpoch: three ranks get equal batch counts and together
// every row, a different split each epoch.
func TestRanksCoverEpoch(t *testing.T) {
	d := testDataset(t, 100)
	var rank0 [2][][]int64
	for epoch := 0; epoch < 2; epoch++ {
		seen := map[int64]int{}
		var counts []int
		for r := 0; r < 3; r++ {
			ps := positions(t, d, Config{BatchSize: 7, Shuffle: "block", Seed: 5, Epoch: epoch, WorldSize: 3, Rank: r})
			counts = append(counts, len(ps))
			for _, b := range ps {
				for _, p := range b {
					seen[p]++
				}
			}
			if r == 0 {
				rank0[epoch] = ps
			}
		}
		require.Equal(t, counts[0], counts[1])
		require.Equal(t, counts[0], counts[2])
		require.Len(t, seen, 100, "every row, each epoch")
	}
	require.NotEqual(t, rank0[0], rank0[1], "a rank sees other rows in another epoch")
}

// TestElasticResume saves on 2 ranks mid-epoch and resumes on 3: the rows
// delivered before and after cover the epoch with none repeated except
// padding.
func TestElasticResume(t *testing.T) {
	d := testDataset(t, 97)
	delivered := map[int64]int{}
	var saved State
	for r := 0; r < 2; r++ {
		l, err := New(ctx, d.Scan(), Config{BatchSize: 5, Shuffle: "block", Seed: 9, WorldSize: 2, Rank: r})
		require.NoError(t, err)
		for i := 0; i < 4; i++ {
			b, err := l.Next(ctx)
			require.NoError(t, err)
			for _, p := range b.Positions {
				delivered[p]++
			}
		}
		saved = l.State()
		l.Close()
	}
	var counts []int
	for r := 0; r < 3; r++ {
		st := saved
		l, err := New(ctx, d.Scan(), Config{BatchSize: 5, Shuffle: "block", Seed: 9, WorldSize: 3, Rank: r, Resume: &st})
		require.NoError(t, err)
		bs := drain(t, l)
		counts = append(counts, len(bs))
		for _, b := range bs {
			for _, p := range b.Positions {
				delivered[p]++
			}
		}
		l.Close()
	}
	require.Equal(t, counts[0], counts[1])
	require.Equal(t, counts[1], counts[2])
	require.Len(t, delivered, 97, "no row lost")
	extra := 0
	for _, n := range delivered {
		extra += n - 1
	}
	require.Less(t, extra, 3*5, "repeats only as padding for equal batches")
}

// TestSplit: n split loaders deliver the rank's batches between them, each
// once, a window of whole batches at a time, round robin.
func TestSplit(t *testing.T) {
	d := testDataset(t, 77)
	cfg := Config{BatchSize: 5, Shuffle: "block", Seed: 1, WindowRows: 10} // windows of 2 batches
	all := positions(t, d, cfg)
	got := make([][]int64, len(all))
	for i := 0; i < 3; i++ {
		c := cfg
		c.Split = Split{i, 3}
		l, err := New(ctx, d.Scan(), c)
		require.NoError(t, err)
		bs := drain(t, l)
		require.Len(t, bs, l.Batches())
		for _, b := range bs {
			require.Equal(t, i, b.Index/2%3, "batch %d is in window %d", b.Index, b.Index/2)
			got[b.Index] = b.Positions
		}
		l.Close()
	}
	require.Equal(t, all, got)
}

func TestRaggedAsList(t *testing.T) {
	d := testDataset(t, 20)
	l, err := New(ctx, d.Scan(), Config{BatchSize: 6, Shuffle: "none", Columns: []string{"r", "x"}, RaggedAsList: true})
	require.NoError(t, err)
	defer l.Close()
	col, _ := d.Column("r")
	for _, b := range drain(t, l) {
		r := b.Columns["r"]
		require.Nil(t, r.Data)
		require.NotNil(t, b.Columns["x"].Data, "fixed columns stay stacked")
		for k, p := range b.Positions {
			want, err := col.Read(ctx, p, nil)
			require.NoError(t, err)
			require.Equal(t, want.Shape, r.Shapes[k])
			require.Equal(t, want.Data, r.Items[k])
		}
	}
}

// noiseImages is a dataset at url of about 14 MiB of noise images (which lz4 cannot shrink,
// so that their chunks are read by range): 1,200 rows of uint8 [64, 64,
// 3] in four chunks of four segments, all in one default window.
func noiseImages(t *testing.T, url string) *loch.Dataset {
	t.Helper()
	return randomImages(t, url, 1200, 64, 1, 4<<20, schema.LZ4, rand.NewPCG(1, 2))
}

// randomImages is a dataset at url of rows uint8 [side, side, 3] images
// whose first share noise of bytes are random (from src) and the rest
// zero, in chunks of chunkBytes stored with codec.
func randomImages(t *testing.T, url string, rows, side int, noise float64, chunkBytes int, codec schema.ChunkCodec, src rand.Source) *loch.Dataset {
	t.Helper()
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "image", DType: schema.Uint8, Shape: schema.Shape{side, side, 3}, ChunkBytes: chunkBytes, ChunkCompression: codec},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	r := rand.New(src)
	all := make([]loch.Row, rows)
	for i := range all {
		pix := make([]byte, side*side*3)
		for k := range pix[:int(float64(len(pix))*noise)] {
			pix[k] = byte(r.Uint32())
		}
		all[i] = loch.Row{"image": loch.Tensor([]int{side, side, 3}, pix)}
	}
	require.NoError(t, d.Extend(ctx, all))
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	return d
}

// TestFirstWindowReadBySegment checks that a loader's first window reads
// chunks in pieces of about a segment, so that the epoch's first batch
// waits only for the segments its rows are in, and that the batches are
// the same as with whole-run reads.
func TestFirstWindowReadBySegment(t *testing.T) {
	d := noiseImages(t, filepath.Join(t.TempDir(), "ds"))

	epoch := func(split bool) ([]*Batch, Stats) {
		defer func(v, a bool) { splitFirstWindow, firstBatchAlone = v, a }(splitFirstWindow, firstBatchAlone)
		splitFirstWindow, firstBatchAlone = split, false // the window's reads alone (TestFirstBatchReadAlone has the other)
		l, err := New(ctx, d.Scan(), Config{BatchSize: 64, Seed: 3, Workers: 2})
		require.NoError(t, err)
		defer l.Close()
		return drain(t, l), l.Stats()
	}
	whole, wholeStats := epoch(false)
	split, splitStats := epoch(true)
	t.Logf("whole chunks read: %d with whole runs, %d split", wholeStats.ChunksFetched, splitStats.ChunksFetched)
	require.GreaterOrEqual(t, wholeStats.ChunksFetched, int64(3), "one window holding every row reads its large chunks whole")
	require.LessOrEqual(t, splitStats.ChunksFetched, int64(1), "split, only a chunk of at most two segments is read whole")
	sameImageBatches(t, whole, split)
}

// TestFirstBatchReadAlone: a loader's first batch reads only its own
// samples (the rest of its window is planned after it), and the epoch's
// batches are the same either way.
func TestFirstBatchReadAlone(t *testing.T) {
	d := noiseImages(t, filepath.Join(t.TempDir(), "ds"))
	cfg := Config{BatchSize: 64, Seed: 3, Workers: 2}
	job, before, own := firstScheduled(t, d, cfg, true)
	require.Equal(t, own, job.readSet(), "alone, the first batch reads runs of its own samples only")
	require.Equal(t, own, before, "and its reads are the first scheduled")
	job, _, own = firstScheduled(t, d, cfg, false)
	require.NotEqual(t, own, job.readSet(), "planned with its window, it reads the window's runs")
	// Only in a block shuffle: in order, and in a full shuffle, the first
	// batch is read with its window either way.
	for _, mode := range []order.Mode{order.ModeNone, order.ModeFull} {
		c := cfg
		c.Shuffle = mode
		alone, _, _ := firstScheduled(t, d, c, true)
		with, _, _ := firstScheduled(t, d, c, false)
		require.Equal(t, with.readSet(), alone.readSet(), mode)
	}

	epoch := func(alone bool) []*Batch {
		defer func(v bool) { firstBatchAlone = v }(firstBatchAlone)
		firstBatchAlone = alone
		l, err := New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		defer l.Close()
		return drain(t, l)
	}
	sameImageBatches(t, epoch(false), epoch(true))
}

// schedRead is a read of a dataset of a loader (entryKey's ds and read).
type schedRead struct {
	ds int
	r  loch.Read
}

// readSet is the set of the job's reads.
func (job *batchJob) readSet() map[schedRead]bool {
	out := map[schedRead]bool{}
	for _, e := range job.entries {
		out[schedRead{e.key.ds, e.key.read}] = true
	}
	return out
}

// prepared is a loader over d with cfg, its plan made but nothing
// started (the caller cancels it).
func prepared(t *testing.T, d *loch.Dataset, cfg Config) *Loader {
	t.Helper()
	cfg.defaults()
	l, err := newLoader(ctx, []*loch.Scan{d.Scan()}, cfg)
	require.NoError(t, err)
	p, err := makePlan(l.scans[0], cfg)
	require.NoError(t, err)
	l.prepare(single{p})
	return l
}

// firstScheduled runs the scheduler of a loader over d until it admits
// its first batch (firstBatchAlone set to alone), and returns that batch,
// the reads scheduled before it, and the reads of runs of its own samples
// only (one per run of consecutive samples of a chunk, in each column).
func firstScheduled(t *testing.T, d *loch.Dataset, cfg Config, alone bool) (job *batchJob, before, own map[schedRead]bool) {
	t.Helper()
	defer func(v bool) { firstBatchAlone = v }(firstBatchAlone)
	firstBatchAlone = alone
	l := prepared(t, d, cfg)
	jobs, fetches, done := make(chan *batchJob), make(chan *chunkEntry), make(chan struct{})
	go func() {
		defer close(done)
		l.schedule(jobs, fetches)
	}()
	before = map[schedRead]bool{}
	for job == nil {
		select {
		case e := <-fetches:
			before[schedRead{e.key.ds, e.key.read}] = true
		case job = <-jobs:
		}
	}
	l.cancel() // and wake an admit waiting for room, as Close does
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
	for stop := false; !stop; {
		select {
		case <-fetches:
		case <-jobs:
		case <-done:
			stop = true
		}
	}
	own = map[schedRead]bool{}
	for _, slots := range job.slots {
		idx := map[loch.ChunkID][]int{}
		for _, sl := range slots {
			idx[sl.Chunk(0)] = append(idx[sl.Chunk(0)], sl.Index())
		}
		for id, ix := range idx {
			slices.Sort(ix)
			for a := 0; a < len(ix); {
				b := a + 1
				for b < len(ix) && ix[b] == ix[b-1]+1 {
					b++
				}
				own[schedRead{0, l.scans[0].Span(id, ix[a], ix[b-1]+1)}] = true
				a = b
			}
		}
	}
	return job, before, own
}

// TestNextWindowReadAhead: while the consumer is still in a window, the
// loader starts every read of the next window (in a block shuffle its
// first batch takes its rows from segments all over it), and the epoch's
// batches are the same as without reading ahead.
func TestNextWindowReadAhead(t *testing.T) {
	d := noiseImages(t, filepath.Join(t.TempDir(), "ds"))
	// Windows of 4 batches; 2 prepared ahead, so the next window's first
	// batch is not admitted while the consumer holds the first.
	cfg := Config{BatchSize: 64, Seed: 3, Workers: 2, WindowRows: 256, PrefetchBatches: 2}
	epoch := func(ahead bool, check func(l *Loader)) []*Batch {
		defer func(v bool) { readAhead = v }(readAhead)
		readAhead = ahead
		l, err := New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		defer l.Close()
		if check != nil {
			check(l)
		}
		return drain(t, l)
	}
	want := windowReads(t, d, cfg, 1)
	require.NotEmpty(t, want)
	var first *Batch
	got := epoch(true, func(l *Loader) {
		b, err := l.Next(ctx)
		require.NoError(t, err)
		first = b
		require.Eventually(t, func() bool {
			l.mu.Lock()
			defer l.mu.Unlock()
			for r := range want {
				if e, ok := l.chunks[entryKey{ds: r.ds, read: r.r}]; !ok || e.ready == nil {
					return false
				}
			}
			return true
		}, 30*time.Second, time.Millisecond, "the second window's reads start while the consumer holds the first batch")
		l.mu.Lock()
		require.Equal(t, 1, l.k, "the consumer has taken one batch")
		l.mu.Unlock()
	})
	sameImageBatches(t, epoch(false, nil), append([]*Batch{first}, got...))
}

// sameImageBatches requires got to be want's batches: the same rows, in
// the same order, with the same image data.
func sameImageBatches(t *testing.T, want, got []*Batch) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].RowIDs, got[i].RowIDs, "batch %d", i)
		require.Equal(t, want[i].Columns["image"].Data, got[i].Columns["image"].Data, "batch %d", i)
	}
}

// windowReads is the set of reads window w of a loader over d with cfg
// needs, planned as a later window (not split).
func windowReads(t *testing.T, d *loch.Dataset, cfg Config, w int) map[schedRead]bool {
	t.Helper()
	l := prepared(t, d, cfg)
	defer l.cancel()
	require.Greater(t, len(l.wins), w+1)
	var index []int
	var items [][]order.Item
	for bi, its := range l.plan.items() {
		if bi >= l.wins[w].start && bi < l.wins[w].end {
			index, items = append(index, bi), append(items, slices.Clone(its))
		}
	}
	jobs, err := l.locate(index, items, 0, false)
	require.NoError(t, err)
	out := map[schedRead]bool{}
	for _, job := range jobs {
		maps.Copy(out, job.readSet())
	}
	return out
}
