package loader

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// benchSet is an image-like dataset: 20,000 rows of uint8 [64, 64, 3]
// (240 MiB decoded) and an int64 label, stored with the given codec.
func benchSet(b *testing.B, codec schema.ChunkCodec) *loch.Dataset {
	return benchSetAt(b, filepath.Join(b.TempDir(), "ds"), codec)
}

// benchSetAt is benchSet created at url.
func benchSetAt(b *testing.B, url string, codec schema.ChunkCodec) *loch.Dataset {
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "image", Kind: schema.Image, Shape: schema.Shape{64, 64, 3}, ChunkCompression: codec},
		{Name: "label", Kind: schema.ClassLabel},
	}})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	pix := make([]byte, 64*64*3)
	rows := make([]loch.Row, 0, 1000)
	for i := 0; i < 20000; i++ {
		for k := range pix {
			pix[k] = byte(k/3) + byte(r.IntN(8)) // smooth with noise: compressible like photos
		}
		rows = append(rows, loch.Row{"image": loch.Tensor([]int{64, 64, 3}, append([]byte(nil), pix...)), "label": loch.Scalar(int64(i % 10))})
		if len(rows) == cap(rows) {
			if err := d.Extend(ctx, rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if _, err := d.Commit(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkLoader streams an epoch (MB/s of decoded sample bytes) beside
// the raw baseline: every chunk of the same columns read from the same
// store and decoded (decompressed, checksums verified) on all cores, with
// no sample extraction or collation.
func BenchmarkLoader(b *testing.B) {
	for _, codec := range []schema.ChunkCodec{schema.CodecNone, schema.LZ4} {
		d := benchSet(b, codec)
		bytes := int64(20000 * (64*64*3 + 8))
		for _, shuffle := range []order.Mode{order.ModeNone, order.ModeBlock, order.ModeFull, "full-uncoalesced"} {
			b.Run(string(codec)+"/loader/"+string(shuffle), func(b *testing.B) {
				defer func(v bool) { coalesceReads = v }(coalesceReads)
				if shuffle == "full-uncoalesced" { // the baseline: a read per run of samples
					shuffle, coalesceReads = order.ModeFull, false
				}
				b.SetBytes(bytes)
				cpu0 := cpuTime()
				defer func() { b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/op") }()
				for i := 0; i < b.N; i++ {
					l, err := New(ctx, d.Scan(), Config{BatchSize: 256, Shuffle: shuffle, Seed: uint64(i)})
					if err != nil {
						b.Fatal(err)
					}
					if err := stream(l); err != nil {
						b.Fatal(err)
					}
					l.Close()
				}
			})
		}
		b.Run(string(codec)+"/raw", func(b *testing.B) {
			v := d.Scan()
			if err := v.Load(ctx, 4); err != nil {
				b.Fatal(err)
			}
			var ids []loch.ChunkID
			sch := v.Schema()
			for _, c := range sch.Columns {
				ids = append(ids, v.Chunks(c.UID)...)
			}
			b.SetBytes(bytes)
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				next := make(chan loch.ChunkID)
				for w := 0; w < runtime.GOMAXPROCS(0); w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for id := range next {
							if _, err := v.Fetch(ctx, loch.Read{Chunk: id}); err != nil {
								b.Error(err)
							}
						}
					}()
				}
				for _, id := range ids {
					next <- id
				}
				close(next)
				wg.Wait()
			}
		})
	}
}

// BenchmarkEpochStart measures an epoch's wait for its first batch (the
// first_batch_ms metric) and the whole epoch: as the baselines, with the
// first window's reads in whole runs, then cut into segments (split);
// then with the first batch planned and read alone before the rest of its
// window (split+first-alone, the default). On the image-like set, whose
// default window holds more than half the dataset, block shuffle, batch
// 64.
func BenchmarkEpochStart(b *testing.B) {
	d := benchSet(b, schema.LZ4)
	for _, mode := range []struct {
		name         string
		split, alone bool
	}{{"whole-runs", false, false}, {"split", true, false}, {"split+first-alone", true, true}} {
		b.Run(mode.name, func(b *testing.B) {
			defer func(v, a bool) { splitFirstWindow, firstBatchAlone = v, a }(splitFirstWindow, firstBatchAlone)
			splitFirstWindow, firstBatchAlone = mode.split, mode.alone
			var first time.Duration
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				l, err := New(ctx, d.Scan(), Config{BatchSize: 64, Shuffle: order.ModeBlock, Epoch: i})
				if err != nil {
					b.Fatal(err)
				}
				for k := 0; ; k++ {
					bt, err := l.Next(ctx)
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					if k == 0 {
						first += time.Since(t0)
					}
					l.Release(bt)
				}
				l.Close()
			}
			b.ReportMetric(float64(first)/float64(time.Millisecond)/float64(b.N), "first_batch_ms")
		})
	}
}

// BenchmarkLocate times resolving the first window of an epoch to its
// reads (locate: the loader's serial work before its first fetch) on the
// image-like set, block shuffle, batch 64, both columns, beside the
// baseline of the same run: resolving the same rows to their slots alone
// (Scan.Locate and Scan.Slot), which locate does first. ns/row is per row
// of the window.
func BenchmarkLocate(b *testing.B) {
	d := benchSet(b, schema.LZ4)
	cfg := Config{BatchSize: 64, Shuffle: order.ModeBlock}
	cfg.defaults()
	l, err := newLoader(ctx, []*loch.Scan{d.Scan()}, cfg)
	if err != nil {
		b.Fatal(err)
	}
	p, err := makePlan(l.scans[0], cfg)
	if err != nil {
		b.Fatal(err)
	}
	l.prepare(single{p})
	defer l.cancel()
	var index []int
	var items [][]order.Item
	rows := 0
	for bi, its := range l.plan.items() {
		if bi >= l.wins[0].end {
			break
		}
		index, items = append(index, bi), append(items, slices.Clone(its))
		rows += len(its)
	}
	perRow := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(rows), "ns/row")
		b.ReportMetric(float64(len(index)), "batches")
	}
	b.Run("baseline=slots", func(b *testing.B) {
		sc := l.scans[0]
		var sink int
		for b.Loop() {
			for _, its := range items {
				for _, it := range its {
					row, err := sc.Locate(it.Pos)
					if err != nil {
						b.Fatal(err)
					}
					for _, cp := range l.cols[0] {
						sink += sc.Slot(row, cp.col.UID).Index()
					}
				}
			}
		}
		_ = sink
		perRow(b)
	})
	b.Run("locate", func(b *testing.B) {
		for b.Loop() {
			l.chunks = map[entryKey]*chunkEntry{}
			if _, err := l.locate(index, items, 0, true); err != nil {
				b.Fatal(err)
			}
		}
		perRow(b)
	})
}

// BenchmarkWindowReadAhead streams epochs of the image-like set (lz4,
// block shuffle, batch 64) with the next window's reads started ahead
// (the default) beside the baseline of the same run, where each window's
// reads start when its first batch is admitted: on this machine's disk,
// then with 2 ms added to every read as an object store would (whole runs,
// as on one), then on MinIO (whole runs too). Besides ns/op (an epoch), window_wait_ms is the consumer's
// wait in Next before the first batch of each window after the first,
// summed over an epoch, and first_batch_ms the wait for an epoch's first.
// Windows of 2,048 rows (ten an epoch, as a dataset many times the
// default window has), then the default (two an epoch here: 128 segments,
// 11,000 rows).
func BenchmarkWindowReadAhead(b *testing.B) {
	d := benchSet(b, schema.LZ4)
	slow, err := loch.Open(ctx, d.URL(), loch.WithStore(storage.NewFaulty(d.Store(), storage.FaultConfig{Latency: 2 * time.Millisecond})))
	if err != nil {
		b.Fatal(err)
	}
	defer slow.Close()
	remote := benchSetAt(b, testserver.MinIO(b).URL, schema.LZ4)
	defer remote.Close()
	for _, store := range []struct {
		name string
		d    *loch.Dataset
	}{{"local", d}, {"latency=2ms", slow}, {"minio", remote}} {
		for _, window := range []int64{2048, 0} {
			for _, ahead := range []bool{false, true} {
				name := fmt.Sprintf("%s/window=%d/baseline=no-read-ahead", store.name, window)
				if ahead {
					name = fmt.Sprintf("%s/window=%d/read-ahead", store.name, window)
				}
				b.Run(name, func(b *testing.B) {
					defer func(a, s bool) { readAhead, splitFirstWindow = a, s }(readAhead, splitFirstWindow)
					readAhead, splitFirstWindow = ahead, store.d == d
					var first, boundary time.Duration
					var fetched, peak int64
					cpu0 := cpuTime()
					for i := 0; i < b.N; i++ {
						t0 := time.Now()
						l, err := New(ctx, store.d.Scan(), Config{BatchSize: 64, Shuffle: order.ModeBlock, Epoch: i, WindowRows: window})
						if err != nil {
							b.Fatal(err)
						}
						starts := map[int]bool{}
						for _, w := range l.wins[1:] {
							starts[w.start] = true
						}
						for k := 0; ; k++ {
							t1 := time.Now()
							bt, err := l.Next(ctx)
							if errors.Is(err, io.EOF) {
								break
							}
							if err != nil {
								b.Fatal(err)
							}
							switch {
							case k == 0:
								first += time.Since(t0)
							case starts[k]:
								boundary += time.Since(t1)
							}
							l.Release(bt)
						}
						l.Close()
						st := l.Stats()
						fetched += st.BytesFetched
						peak = max(peak, st.PeakInFlight)
					}
					b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu_ms")
					b.ReportMetric(float64(fetched)/1e6/float64(b.N), "MB_read")
					b.ReportMetric(float64(peak)/1e6, "MB_peak")
					b.ReportMetric(float64(first)/float64(time.Millisecond)/float64(b.N), "first_batch_ms")
					b.ReportMetric(float64(boundary)/float64(time.Millisecond)/float64(b.N), "window_wait_ms")
				})
			}
		}
	}
}

// stream takes every batch of l's epoch, releasing each.
func stream(l *Loader) error {
	for {
		bt, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		l.Release(bt)
	}
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkNodeCacheRanks runs the first epoch of 4 ranks of one node at
// once (world size 4, block shuffle, batch 64), each with its own handles
// on the dataset (on MinIO) and on one fresh disk cache directory, as the
// processes of a node are: with fill turns (the default), then with the
// cache's turns hidden, the baseline. MB_read is the bytes the ranks
// fetched from the store together, per epoch (the dataset is 257 MB).
func BenchmarkNodeCacheRanks(b *testing.B) {
	src := benchSetAt(b, testserver.MinIO(b).URL, schema.LZ4)
	defer src.Close()
	const ranks = 4
	for _, turns := range []bool{false, true} {
		name := "baseline=no-turns"
		if turns {
			name = "turns"
		}
		b.Run(name, func(b *testing.B) {
			var fetched int64
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				var wg sync.WaitGroup
				errs := make(chan error, ranks)
				var mu sync.Mutex
				for r := range ranks {
					d, err := loch.Open(ctx, src.URL())
					if err != nil {
						b.Fatal(err)
					}
					c, err := chunkcache.Open(dir, 4<<30, nil)
					if err != nil {
						b.Fatal(err)
					}
					var cache chunkcache.Cache = c
					if !turns {
						cache = struct {
							chunkcache.Cache
							chunkcache.RangeReader
						}{c, c}
					}
					wg.Go(func() {
						defer d.Close()
						defer c.Close()
						l, err := New(ctx, d.Scan(), Config{BatchSize: 64, Shuffle: order.ModeBlock, WorldSize: ranks, Rank: r, Cache: cache})
						if err != nil {
							errs <- err
							return
						}
						defer l.Close()
						if err := stream(l); err != nil {
							errs <- err
							return
						}
						mu.Lock()
						fetched += l.Stats().BytesFetched
						mu.Unlock()
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(fetched)/1e6/float64(b.N), "MB_read")
		})
	}
}
