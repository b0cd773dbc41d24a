package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/schema"
)

// benchResult is what `loch bench --json` prints.
type benchResult struct {
	URL     string `json:"url"`
	Version string `json:"version"`

	// A mixture's datasets (URL and Version are the first's), weights,
	// rows per epoch (0: the default) and rows delivered from each.
	URLs           []string  `json:"urls,omitempty"`
	Versions       []string  `json:"versions,omitempty"`
	Weights        []float64 `json:"weights,omitempty"`
	EpochRows      int64     `json:"epoch_rows,omitempty"`
	DatasetSamples []int64   `json:"dataset_samples,omitempty"`

	Columns      []string `json:"columns"`
	Shuffle      string   `json:"shuffle"`
	BatchSize    int      `json:"batch_size"`
	WorldSize    int      `json:"world_size"`
	Rank         int      `json:"rank"`
	Epochs       int      `json:"epochs"`
	Warmup       int      `json:"warmup_epochs"`
	StepMS       float64  `json:"step_ms"`
	Batches      int64    `json:"batches"`
	Samples      int64    `json:"samples"`
	Seconds      float64  `json:"seconds"`
	SamplesPerS  float64  `json:"samples_per_s"`
	MBPerS       float64  `json:"mb_per_s"`
	FirstBatchMS float64  `json:"first_batch_ms"`
	WaitShare    float64  `json:"wait_share"`
	PeakRSSMB    float64  `json:"peak_rss_mb"`
	RawMBPerS    float64  `json:"raw_mb_per_s"`
	RawSeconds   float64  `json:"raw_seconds"`
	RawObjectMB  float64  `json:"raw_object_mb"`
	DecodedMB    float64  `json:"decoded_mb"`
	Retries      int64    `json:"retries"`
	RetryWaitS   float64  `json:"retry_wait_s"`
	CacheHits    int64    `json:"cache_hits"`
	Chunks       int64    `json:"chunks_fetched"`
	FetchedMB    float64  `json:"fetched_mb"`
	FillMS       float64  `json:"fill_ms,omitempty"`
	Skipped      int64    `json:"skipped"`
	Ratio        float64  `json:"ratio_to_raw"`
	// Partial says the run stopped at --max-seconds: the figures are of
	// the batches delivered by then.
	Partial bool `json:"partial"`
}

// benchFlags are the flags of "loch bench".
type benchFlags struct {
	rankFlags
	columns            string
	selection          string
	refs               refFlags
	mix                mixFlags
	epochs             int
	warmup             int
	stepMS, maxSeconds float64
	asJSON, skipRaw    bool
	prefetch           int
	cacheDir           string
	cacheBytes         sizeFlag
	transforms         []string
	cpuProfile         string
	prog               progressFlags
}

func newBenchCmd() *cobra.Command {
	b := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench URL [URL...]",
		Short: "Measure the loader against a raw read of the same chunks",
		Long: `Bench runs the streaming loader over a version and reports samples/s,
MB/s of decoded sample bytes delivered, time to first batch, the share of
the run the consumer waited for batches (with --step-ms, the consumer
spends that long on each batch, like a training step), and peak RSS.

In the same run it measures a raw baseline: the same chunk objects read from
the same backend with no decoding (and, for compressed columns, decompressed
with the same codec on all cores), reported as MB/s of the same decoded
bytes. The baseline runs first.

With several URLs and --weights, bench runs a weighted mixture of the
datasets (the Go loader's NewMix, in the order 'loch order' prints with the
same flags) and reports the rows delivered from each; the raw baseline reads
every chunk of every dataset. The datasets must have the requested columns
with the same dtypes.

--warmup runs that many epochs first, in the same process, and leaves
them out of every figure: so that the figures are of a loader whose
process has warmed up (memory, pools, page cache), as in a long training
run or a harness that warms up before it measures.

--max-seconds stops the run early; the figures are then of the batches
delivered by then (and "partial" is true in --json).

With --json it prints one JSON object with the fields url, version (and
for a mixture urls, versions, weights, epoch_rows, dataset_samples),
columns, shuffle, batch_size, world_size, rank, epochs, warmup_epochs,
step_ms, batches,
samples, seconds, samples_per_s, mb_per_s, first_batch_ms, wait_share,
peak_rss_mb, raw_mb_per_s, raw_seconds, raw_object_mb, decoded_mb,
retries, cache_hits, chunks_fetched, fetched_mb, fill_ms, skipped,
ratio_to_raw and partial. fill_ms is given for a full shuffle with --cache
on object storage, whose first epoch fills the cache ahead of its reads:
the time from the start of the run until every chunk was in the cache.
Its rates and sizes are in MB (10^6 bytes), the unit of loch's
benchmark results.

A spinner with the phase, the samples delivered and the elapsed time is
shown on standard error when that is a terminal, or with --progress; never
with --quiet.`,
		Example: `  loch bench ./pets --batch-size 64 --shuffle block
  loch bench s3://bucket/pets --columns image,label --step-ms 20 --json
  loch bench ./web ./books --weights 0.8,0.2 --epoch-rows 100000 --columns image,label`,
		Args: minArgs("URL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return b.run(cmd, args)
		},
	}
	f := cmd.Flags()
	f.StringVar(&b.columns, "columns", "", "comma-separated columns (default all)")
	b.rankFlags.add(cmd)
	f.IntVar(&b.epochs, "epochs", 1, "epochs to run")
	f.IntVar(&b.warmup, "warmup", 0, "epochs to run first and leave out of the figures")
	f.Float64Var(&b.stepMS, "step-ms", 0, "milliseconds the consumer spends on each batch, like a training step")
	f.Float64Var(&b.maxSeconds, "max-seconds", 0, "stop after this many seconds of loading (0: run every epoch)")
	f.IntVar(&b.prefetch, "prefetch", 0, "batches to prepare ahead (default twice the workers, at least 4)")
	f.BoolVar(&b.asJSON, "json", false, "print one JSON object")
	f.BoolVar(&b.skipRaw, "no-raw", false, "skip the raw baseline")
	f.StringArrayVar(&b.transforms, "transform", nil, "COLUMN=SPEC image transform run in the loader (repeatable), e.g. image=decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw")
	f.StringVar(&b.cacheDir, "cache", "", "directory of a local chunk cache (shared by processes; epochs after the first read from it)")
	b.cacheBytes = 10 << 30
	f.Var(&b.cacheBytes, "cache-bytes", "size bound of the chunk cache, e.g. 10GiB")
	f.StringVar(&b.cpuProfile, "cpuprofile", "", "write a CPU profile of the loader's epochs (not the raw baseline) to this file, for go tool pprof")
	b.prog.add(f)
	f.StringVar(&b.selection, "selection", "", "load the rows of this saved selection (loch query --save), at its version")
	b.mix.add(cmd)
	b.refs.add(cmd, "bench")
	return cmd
}

// run benchmarks the dataset at urls[0], or the mixture of urls: the raw
// baseline, unless skipped, then the loader's epochs; it prints the result.
func (b *benchFlags) run(cmd *cobra.Command, urls []string) error {
	cfg, err := b.config()
	if err != nil {
		return err
	}
	weights, err := b.mix.parse(len(urls))
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if b.columns != "" {
		cfg.Columns = splitList(b.columns)
	}
	ds, scans, err := openSources(ctx, urls, &b.refs, b.selection, &cfg)
	if err != nil {
		return err
	}
	defer closeAll(ds)
	cols := cfg.Columns
	if weights != nil {
		if cols, err = mixColumns(ds, urls, cols); err != nil {
			return err
		}
	} else if cols == nil {
		sch := ds[0].Schema()
		cols = sch.Names()
	}
	res := b.result(ds, cols, weights)
	bar := b.prog.start(cmd.ErrOrStderr(), "bench: raw baseline", -1, unitRows)
	defer bar.done()
	if !b.skipRaw {
		if err := rawBaseline(ctx, scans, cols, &res); err != nil {
			return err
		}
	}
	bar.describe("bench: loader")
	var cache chunkcache.Cache
	if b.cacheDir != "" {
		c, err := chunkcache.Open(b.cacheDir, int64(b.cacheBytes), nil)
		if err != nil {
			return err
		}
		defer c.Close()
		cache = c
	}
	cfg.Columns, cfg.Cache = cols, cache
	if err := b.load(ctx, scans, weights, cfg, &res, bar); err != nil {
		return err
	}
	// The stores' retries over the whole run, the open included: a stall
	// anywhere shows.
	for _, d := range ds {
		r := d.Scan().RetryStats()
		res.Retries += r.Retries
		res.RetryWaitS += r.Wait.Seconds()
	}
	if b.asJSON {
		return printJSON(cmd.OutOrStdout(), res)
	}
	printBench(cmd.OutOrStdout(), res, cache != nil, !b.skipRaw)
	return nil
}

// result is the result of a run over ds reading cols, before anything
// is measured.
func (b *benchFlags) result(ds []*loch.Dataset, cols []string, weights []float64) benchResult {
	res := benchResult{URL: ds[0].URL(), Version: ds[0].Version(), Columns: cols, Shuffle: b.shuffle, BatchSize: b.batch,
		WorldSize: b.world, Rank: b.rank, Epochs: b.epochs, Warmup: b.warmup, StepMS: b.stepMS}
	if weights != nil {
		for _, d := range ds {
			res.URLs = append(res.URLs, d.URL())
			res.Versions = append(res.Versions, d.Version())
		}
		res.Weights, res.EpochRows, res.DatasetSamples = weights, b.mix.epochRows, make([]int64, len(ds))
	}
	return res
}

// load runs the loader's epochs over scans (their mixture when weights
// is not nil): the warm-up epochs, then the measured ones, under the CPU
// profile when one is asked for; it records the figures in res.
func (b *benchFlags) load(ctx context.Context, scans []*loch.Scan, weights []float64, cfg loader.Config, res *benchResult, bar *progress) error {
	open := func(cfg loader.Config) (*loader.Loader, error) {
		if weights != nil {
			return loader.NewMix(ctx, scans, weights, b.mix.epochRows, cfg)
		}
		return loader.New(ctx, scans[0], cfg)
	}
	step, limit := time.Duration(b.stepMS*float64(time.Millisecond)), time.Duration(b.maxSeconds*float64(time.Second))
	if b.warmup > 0 {
		// The same epochs as the measured ones start with (cfg.Epoch from
		// 0), measured into a result that is dropped.
		bar.describe("bench: warm-up")
		var warm benchResult
		warm.DatasetSamples = slices.Clone(res.DatasetSamples)
		if err := runEpochs(ctx, open, cfg, b.warmup, step, 0, &warm, bar); err != nil {
			return err
		}
		bar.describe("bench: loader")
	}
	stop, err := startCPUProfile(b.cpuProfile)
	if err != nil {
		return err
	}
	err = runEpochs(ctx, open, cfg, b.epochs, step, limit, res, bar)
	bar.done()
	return errors.Join(err, stop())
}

// config returns the loader configuration the flags ask for (without the
// columns and the cache), checking the flags.
func (b *benchFlags) config() (loader.Config, error) {
	cfg := b.rankFlags.config()
	cfg.PrefetchBatches = b.prefetch
	tf, err := parseTransforms(b.transforms)
	if err != nil {
		return cfg, err
	}
	cfg.Transforms = tf
	if err := checkConfig(cfg); err != nil {
		return cfg, err
	}
	if b.epochs < 1 || b.warmup < 0 || b.stepMS < 0 || b.maxSeconds < 0 {
		return cfg, usagef("need --epochs >= 1, --warmup >= 0, --step-ms >= 0 and --max-seconds >= 0")
	}
	return cfg, nil
}

// batchPayload counts the decoded sample bytes a batch delivers (not its
// padding).
func batchPayload(b *loader.Batch) int64 {
	var n int64
	for _, t := range b.Columns {
		if t.Items != nil {
			for _, it := range t.Items {
				n += int64(len(it))
			}
			continue
		}
		if t.Shapes == nil {
			n += int64(len(t.Data))
			for _, isNull := range t.Null {
				if isNull && b.Len() > 0 {
					n -= int64(len(t.Data) / b.Len())
				}
			}
			continue
		}
		for _, s := range t.Shapes {
			k := int64(t.DType.Size())
			for _, d := range s {
				k *= int64(d)
			}
			n += k
		}
	}
	return n
}

// parseTransforms parses --transform COLUMN=SPEC flags.
func parseTransforms(flags []string) (map[string]string, error) {
	tf := map[string]string{}
	for _, t := range flags {
		col, spec, ok := strings.Cut(t, "=")
		if !ok || col == "" {
			return nil, usagef("--transform %q: want COLUMN=SPEC, e.g. image=decode,resize=256,center_crop=224", t)
		}
		tf[col] = spec
	}
	return tf, nil
}

// splitList splits a comma-separated flag value, trimming spaces.
func splitList(v string) []string {
	var out []string
	for _, c := range strings.Split(v, ",") {
		out = append(out, strings.TrimSpace(c))
	}
	return out
}

// runEpochs runs the loaders that open makes for epochs epochs (cfg.Epoch
// counts up from 0), the consumer spending step on each batch, until limit
// (when not 0) has passed after a batch, and records the figures in res;
// bar counts the samples.
func runEpochs(ctx context.Context, open func(loader.Config) (*loader.Loader, error), cfg loader.Config, epochs int, step, limit time.Duration, res *benchResult, bar *progress) error {
	start := time.Now()
	var wait time.Duration
	var decoded int64
	first := time.Duration(-1)
	for e := 0; e < epochs && !res.Partial; e++ {
		cfg.Epoch = e
		opened := time.Since(start)
		l, err := open(cfg)
		if err != nil {
			return err
		}
		for i := 0; ; i++ {
			t0 := time.Now()
			b, err := l.Next(ctx)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				l.Close()
				return err
			}
			wait += time.Since(t0)
			if first < 0 {
				first = time.Since(start)
			}
			res.Batches++
			res.Samples += int64(b.Len())
			bar.add(int64(b.Len()))
			for _, d := range b.Datasets {
				res.DatasetSamples[d]++
			}
			decoded += batchPayload(b)
			if step > 0 {
				time.Sleep(step)
			}
			l.Release(b)
			// At least one batch; partial only when batches are left.
			if limit > 0 && time.Since(start) >= limit && (i+1 < l.Batches() || e+1 < epochs) {
				res.Partial = true
				break
			}
		}
		st := l.Stats()
		res.CacheHits += st.CacheHits
		res.Chunks += st.ChunksFetched
		res.FetchedMB += float64(st.BytesFetched) / 1e6
		if st.FillTime > 0 && res.FillMS == 0 {
			res.FillMS = float64(opened+st.FillTime) / float64(time.Millisecond)
		}
		res.Skipped += st.Skipped
		l.Close()
	}
	el := time.Since(start)
	res.Seconds = el.Seconds()
	res.SamplesPerS = float64(res.Samples) / res.Seconds
	res.MBPerS = float64(decoded) / 1e6 / res.Seconds
	res.FirstBatchMS = float64(max(first, 0)) / float64(time.Millisecond) // 0: no batch at all
	res.WaitShare = float64(wait) / float64(el)
	res.PeakRSSMB = peakRSSMB()
	if res.RawMBPerS > 0 {
		res.Ratio = res.MBPerS / res.RawMBPerS
	}
	return nil
}

// printBench prints a bench result as text.
func printBench(w io.Writer, res benchResult, cached, raw bool) {
	partial := ""
	if res.Partial {
		partial = " (stopped at --max-seconds)"
	}
	fmt.Fprintf(w, "loader:   %d samples in %d batches, %.2fs%s: %.0f samples/s, %.1f MB/s\n", res.Samples, res.Batches, res.Seconds, partial, res.SamplesPerS, res.MBPerS)
	fmt.Fprintf(w, "          first batch %.1f ms, wait share %.1f%%, peak RSS %.0f MB, retries %d, skipped %d\n", res.FirstBatchMS, 100*res.WaitShare, res.PeakRSSMB, res.Retries, res.Skipped)
	if res.RetryWaitS > 0 {
		fmt.Fprintf(w, "          storage failures ridden out: %.1fs of retrying\n", res.RetryWaitS)
	}
	if cached {
		fmt.Fprintf(w, "          cache hits %d\n", res.CacheHits)
	}
	for d, n := range res.DatasetSamples {
		fmt.Fprintf(w, "mixture:  dataset %d (%s), weight %g: %d samples (%.1f%%)\n", d, res.URLs[d], res.Weights[d], n, 100*float64(n)/float64(max(res.Samples, 1)))
	}
	if raw {
		fmt.Fprintf(w, "raw:      %.1f MB of chunk objects read and decoded in %.2fs: %.1f MB/s of the same %.1f MB decoded bytes\n", res.RawObjectMB, res.RawSeconds, res.RawMBPerS, res.DecodedMB)
		fmt.Fprintf(w, "ratio:    loader / raw = %.2f\n", res.Ratio)
	}
}

// rawBaseline reads every chunk of the columns of every scan from its
// store with the same concurrency and decodes (decompresses) it on all
// cores, without extracting or collating samples (but decoding png/jpeg
// images).
func rawBaseline(ctx context.Context, scans []*loch.Scan, cols []string, res *benchResult) error {
	var reads []rawRead
	for _, scan := range scans {
		if err := scan.Load(ctx, 16); err != nil {
			return err
		}
		sch := scan.Schema()
		for _, name := range cols {
			c, ok := sch.Column(name)
			if !ok {
				return fmt.Errorf("bench: no column %q: %w", name, loch.ErrNotFound)
			}
			for _, id := range scan.Chunks(c.UID) {
				reads = append(reads, rawRead{scan, id, c.SampleCompression != schema.SampleNone})
			}
		}
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
	sizes := make([]int64, len(reads))
	decoded := make([]int64, len(reads))
	cpu := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, r := range reads {
		g.Go(func() error {
			f, err := r.scan.Fetch(gctx, loch.Read{Chunk: r.chunk})
			if err != nil {
				return err
			}
			sizes[i] = f.Bytes
			if !r.images {
				decoded[i] = f.DataLen()
				return nil
			}
			cpu <- struct{}{}
			defer func() { <-cpu }()
			for s := 0; s < f.Len(); s++ {
				smp, err := f.At(s)
				if err != nil {
					return err
				}
				if smp.Null {
					continue
				}
				if _, err := smp.Decode(); err != nil {
					return fmt.Errorf("chunk %s sample %d: %w", r.scan.ChunkKey(r.chunk), s, err)
				}
				decoded[i] += int64(smp.DecodedLen())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	el := time.Since(start)
	var obj, dec int64
	for i := range reads {
		obj += sizes[i]
		dec += decoded[i]
	}
	res.RawSeconds = el.Seconds()
	res.RawObjectMB = float64(obj) / 1e6
	res.DecodedMB = float64(dec) / 1e6
	res.RawMBPerS = float64(dec) / 1e6 / el.Seconds()
	return nil
}

type rawRead struct {
	scan   *loch.Scan
	chunk  loch.ChunkID
	images bool
}

// peakRSSMB reads the process's peak resident set size (Linux VmHWM).
func peakRSSMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseFloat(f[1], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// startCPUProfile starts a CPU profile written to path ("" profiles
// nothing); stop ends it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile %s: %w", path, err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("--cpuprofile %s: %w", path, err)
		}
		return nil
	}, nil
}
