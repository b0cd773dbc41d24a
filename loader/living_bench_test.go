package loader

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
)

// This file measures a living dataset (issue 34): many small commits,
// compaction, and a writer appending while a reader streams epochs.

// dirStats counts the objects and bytes under a local dataset.
func dirStats(b *testing.B, dir string) (objects, bytes int64) {
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		objects++
		bytes += info.Size()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return objects, bytes
}

// smallRows is n rows of (float32[256], int64) from row first on.
func smallRows(first, n int) []loch.Row {
	rows := make([]loch.Row, n)
	for i := range rows {
		v := make([]float32, 256)
		for k := range v {
			v[k] = float32(first+i) + float32(k)/256
		}
		rows[i] = loch.Row{"v": loch.Tensor([]int{256}, v), "n": loch.Scalar(int64(first + i))}
	}
	return rows
}

var smallSchema = schema.Schema{Columns: []schema.Column{
	{Name: "v", DType: schema.Float32, Shape: schema.Shape{256}},
	{Name: "n", DType: schema.Int64},
}}

// epochSeconds streams one epoch of d's head (a fresh handle, block
// shuffle, batch 256) and returns its wall time and rows.
func epochSeconds(b *testing.B, url string) (time.Duration, int64) {
	d, err := loch.Open(ctx, url, loch.WithCacheBytes(0))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	start := time.Now()
	l, err := New(ctx, d.Scan(), Config{BatchSize: 256, Shuffle: order.ModeBlock, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	if err := stream(l); err != nil {
		b.Fatal(err)
	}
	l.Close()
	return time.Since(start), d.Len()
}

// BenchmarkSmallCommits reproduces issue 34's first finding: 1,000 commits
// of 20 rows (float32[256] + int64) against the same rows in one commit,
// then the same after `Compact`: objects, bytes, and an epoch's time on
// local disk (median of 5).
func BenchmarkSmallCommits(b *testing.B) {
	const commits, per = 1000, 20
	one := filepath.Join(b.TempDir(), "one")
	d, err := loch.Create(ctx, one, smallSchema)
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Extend(ctx, smallRows(0, commits*per)); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Commit(ctx, "all"); err != nil {
		b.Fatal(err)
	}
	d.Close()
	many := filepath.Join(b.TempDir(), "many")
	d, err = loch.Create(ctx, many, smallSchema)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	for c := 0; c < commits; c++ {
		if err := d.Extend(ctx, smallRows(c*per, per)); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Commit(ctx, "small"); err != nil {
			b.Fatal(err)
		}
	}
	median := func(url string) time.Duration {
		var ts []time.Duration
		for range 5 {
			t, _ := epochSeconds(b, url)
			ts = append(ts, t)
		}
		slices.Sort(ts)
		return ts[2]
	}
	type line struct {
		name         string
		objects, mib int64
		epoch        time.Duration
	}
	var lines []line
	add := func(name, url string) {
		o, n := dirStats(b, url)
		lines = append(lines, line{name, o, n, median(url)})
	}
	add("one commit of 20,000 rows (baseline)", one)
	add("1,000 commits of 20 rows", many)
	start := time.Now()
	rep, err := d.Compact(ctx, loch.CompactOptions{})
	if err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	add("1,000 commits, then compact", many)
	if _, err := d.GC(ctx, loch.GCOptions{KeepLast: 1}); err != nil {
		b.Fatal(err)
	}
	add("1,000 commits, compact, gc --keep-last 1 --grace 0", many)
	b.Logf("compact: %d fragments -> %d in %v (%d rows copied, %d -> %d chunk bytes)", rep.FragmentsBefore, rep.FragmentsAfter, took.Round(time.Millisecond), rep.Rows, rep.BytesBefore, rep.BytesAfter)
	base := lines[0]
	fmt.Printf("\n| dataset | objects | bytes | x baseline | epoch (median of 5) | x baseline |\n|---|---|---|---|---|---|\n")
	for _, l := range lines {
		fmt.Printf("| %s | %d | %.1f MiB | %.2f | %v | %.2f |\n", l.name, l.objects, float64(l.mib)/(1<<20), float64(l.mib)/float64(base.mib),
			l.epoch.Round(100*time.Microsecond), float64(l.epoch)/float64(base.epoch))
	}
	fmt.Printf("(until gc, objects and bytes include every old version's; the log's %d entries stay)\n", commits+1)
}

// BenchmarkStreamingAppends: one writer appends one row (JSON + text +
// float32[16]) per commit at a target rate with automatic compaction on,
// while a reader streams epochs of the head; then the same rows,
// compacted, are read as the baseline. Duration and rate come from
// LOCH_BENCH_STREAM_SECONDS (default 20) and LOCH_BENCH_STREAM_RATE
// (commits/s, default 50).
func BenchmarkStreamingAppends(b *testing.B) {
	seconds, rate := envInt(b, "LOCH_BENCH_STREAM_SECONDS", 20), envInt(b, "LOCH_BENCH_STREAM_RATE", 50)
	url := filepath.Join(b.TempDir(), "stream")
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "meta", DType: schema.JSON},
		{Name: "text", DType: schema.Text},
		{Name: "v", DType: schema.Float32, Shape: schema.Shape{16}},
	}}, loch.WithAutoCompact(loch.CompactOptions{}))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	// Rows to start from, so that an epoch is more than its fixed costs.
	const seeded = 100000
	seed := make([]loch.Row, seeded)
	for i := range seed {
		seed[i] = streamRow(i)
	}
	if err := d.Extend(ctx, seed); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Commit(ctx, "seed"); err != nil {
		b.Fatal(err)
	}
	var (
		stop      atomic.Bool
		mu        sync.Mutex
		readings  []string
		latencies []time.Duration
		wg        sync.WaitGroup
		readRows  atomic.Int64
		readTime  atomic.Int64
	)
	wg.Add(1)
	go func() { // the reader
		defer wg.Done()
		for !stop.Load() {
			t, n := epochSeconds(b, url)
			readRows.Add(n)
			readTime.Add(int64(t))
		}
	}()
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	next := seeded
	sample := time.Now()
	for time.Since(start) < time.Duration(seconds)*time.Second {
		<-tick.C
		t0 := time.Now()
		if err := d.Append(ctx, streamRow(next)); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Commit(ctx, "row"); err != nil {
			b.Fatal(err)
		}
		latencies = append(latencies, time.Since(t0))
		if _, err := d.LastAutoCompaction(); err != nil {
			b.Fatal(err)
		}
		next++
		if time.Since(sample) >= time.Duration(seconds)*time.Second/5 {
			sample = time.Now()
			o, _ := dirStats(b, url)
			rows, rt := readRows.Swap(0), time.Duration(readTime.Swap(0))
			mu.Lock()
			readings = append(readings, fmt.Sprintf("| %v | %d | %d | %d | %.0f |", time.Since(start).Round(time.Second), next, len(d.Scan().Fragments()), o, float64(rows)/rt.Seconds()))
			mu.Unlock()
		}
	}
	stop.Store(true)
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		return latencies[int(p*float64(len(latencies)-1))].Round(10 * time.Microsecond)
	}
	fmt.Printf("\n%d commits of one row in %v (%.1f commits/s), automatic compaction (fanout %d): commit latency p50 %v, p99 %v, max %v\n",
		len(latencies), elapsed.Round(time.Second), float64(len(latencies))/elapsed.Seconds(), loch.DefaultCompactFanout, pct(0.5), pct(0.99), latencies[len(latencies)-1].Round(time.Millisecond))
	fmt.Printf("\n| time | rows | fragments | objects | reader rows/s (epochs since last line) |\n|---|---|---|---|---|\n")
	for _, r := range readings {
		fmt.Println(r)
	}
	// The rows as automatic compaction left them, then fully compacted
	// (the baseline), read the same way with the writer stopped.
	rowsPerSecond := func() float64 {
		var rows int64
		var took time.Duration
		for range 5 {
			t, n := epochSeconds(b, url)
			rows += n
			took += t
		}
		return float64(rows) / took.Seconds()
	}
	asLeft, frags := rowsPerSecond(), len(d.Scan().Fragments())
	if _, err := d.Compact(ctx, loch.CompactOptions{}); err != nil {
		b.Fatal(err)
	}
	compacted := rowsPerSecond()
	fmt.Printf("writer stopped: as automatic compaction left it (%d fragments) %.0f rows/s; fully compacted (%d fragments, baseline) %.0f rows/s; ratio %.2f\n",
		frags, asLeft, len(d.Scan().Fragments()), compacted, asLeft/compacted)
}

func streamRow(i int) loch.Row {
	meta, _ := loch.JSON(map[string]any{"step": i, "agent": "a" + strconv.Itoa(i%7), "ok": i%3 == 0})
	v := make([]float32, 16)
	for k := range v {
		v[k] = float32(i*16 + k)
	}
	return loch.Row{"meta": meta, "text": loch.String(fmt.Sprintf("observation %d: the robot moved %d cm", i, i%97)), "v": loch.Tensor([]int{16}, v)}
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive whole number", name, v)
	}
	return n
}
