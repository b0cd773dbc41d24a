// Package loader streams batches from a loch snapshot to a training loop:
// concurrent chunk fetches, decoding on all cores, collation into recycled
// batch buffers, bounded prefetch, deterministic order and exact sharding
// for data-parallel training.
package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/lru"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/transform"
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("loader closed")

// Config configures a Loader. The zero value of each field means its
// default. It is declared once: the C ABI (and so the Python SDK) decodes
// its JSON form directly, and Validate is the only check of its values.
type Config struct {
	// Columns to load (default: all).
	Columns []string `json:"columns,omitempty"`
	// BatchSize is the number of rows per batch (default 32, at most
	// MaxBatchSize).
	BatchSize int `json:"batch_size,omitempty"`
	// Order: shuffle mode (default order.ModeBlock), seed, epoch, sharding.
	Shuffle   order.Mode `json:"shuffle,omitempty"`
	Seed      uint64     `json:"seed,omitempty"`
	Epoch     int        `json:"epoch,omitempty"`
	WorldSize int        `json:"world_size,omitempty"` // default 1
	Rank      int        `json:"rank,omitempty"`
	DropLast  bool       `json:"drop_last,omitempty"`
	// WindowRows is the window in rows (default: order.DefaultWindowBlocks
	// segments' worth, about 128 MiB of the largest column; rounded up to
	// whole batches). In block mode each window's rows are a shuffle of
	// the rows of about that many segments (loch.Scan.Segments) from all
	// over the dataset: larger windows mix better, and the window sets the
	// memory its reads hold. In every mode workers under a Split share the
	// batches a window at a time.
	WindowRows int64 `json:"window_rows,omitempty"`
	// Rows restricts the loader to these row ids, in this order before
	// shuffling (default: every row).
	Rows []uint64 `json:"rows,omitempty"`
	// Joined are columns delivered beside the dataset's: a selection's
	// joined columns (loch.Selection.Joined), each holding one value per
	// row of Rows, which it needs. A batch holds each row's own value
	// (shuffled, sharded and resumed with its row) under the column's
	// name, collated as a dataset column of its dtype and shape. Their
	// names may not be the dataset's column names.
	Joined []loch.JoinedColumn `json:"joined,omitempty"`
	// Query is the SQL that chose Rows (a loch.Selection's), recorded in
	// the saved state with them: a resume under another query is refused,
	// quoting both, unless AllowVersionChange is set.
	Query string `json:"query,omitempty"`
	// PrefetchBatches bounds the batches prepared ahead of the consumer
	// (default twice Workers, at least 4: each worker collates a batch of
	// its own, so fewer leave cores idle, while more on few cores only
	// hold more memory: bench/RESULTS.md, issue 17); PrefetchBytes bounds the memory they and the chunks they
	// need may hold (default 256 MiB), the next window's reads started
	// ahead included (a window's reads are held until its last batch, so
	// the next one's overlap it fully only where PrefetchBytes holds two
	// windows). At least one batch is always in flight, whatever its
	// size. PrefetchBatches is at most MaxPrefetchBatches.
	PrefetchBatches int   `json:"prefetch_batches,omitempty"`
	PrefetchBytes   int64 `json:"prefetch_bytes,omitempty"`
	// FetchConcurrency bounds concurrent chunk fetches (default 16:
	// object stores want many requests in flight; 128 in a full shuffle,
	// which reads each sample alone, so that its reads are not bound by
	// the store's latency: with 2 ms a read an epoch of 20,000 rows took
	// 3.3 s at 16 and 0.64 s at 128, and the same 0.26-0.27 s on local
	// disk, bench/RESULTS.md; but 16 where a transform reads video clips
	// or audio segments, which the fetchers decode); Workers bounds the
	// goroutines that decode and collate (default GOMAXPROCS). Video clips
	// and audio segments read by range (see Transforms) are decoded by the
	// fetchers instead, up to FetchConcurrency at once. Both are at most
	// loch.MaxParallelism.
	FetchConcurrency int `json:"fetch_concurrency,omitempty"`
	Workers          int `json:"workers,omitempty"`
	// SkipBadSamples skips rows whose samples cannot be read or decoded,
	// counting them in Stats, instead of stopping with an error.
	SkipBadSamples bool `json:"skip_bad_samples,omitempty"`
	// Resume restarts from a saved state (see State). A state records the
	// version (commit id) it was read from and is refused on another
	// version unless AllowVersionChange is set; it is refused under
	// another Seed, Shuffle, WindowRows, DropLast, Rows, Query or Joined
	// too (order.Resume), the error naming the setting with both values.
	// WorldSize, Rank, BatchSize and Columns may change; Epoch is the
	// state's.
	Resume *State `json:"resume,omitempty"`
	// AllowVersionChange resumes a state saved on another version (or
	// another query's rows): the loader continues at the same epoch and
	// batch count over this version's order, which holds other rows; rows
	// may be seen twice or not at all in that epoch.
	AllowVersionChange bool `json:"allow_version_change,omitempty"`
	// RaggedAsList returns the columns whose declared shape is not fixed
	// as lists (Collated.Items with Collated.Shapes) instead of zero-padded
	// tensors.
	RaggedAsList bool `json:"ragged_as_list,omitempty"`
	// Split makes this loader deliver only the batches of the windows w
	// of the rank's epoch (order.EpochPlan.Windows: runs of whole batches
	// whose rows come from a few hundred segments) with w % Split.Count ==
	// Split.Index, fetching nothing for the others: for Count data-loading
	// workers of one rank, each with its own loader (the PyTorch
	// DataLoader pattern), each reading only its windows' bytes. The
	// workers' batches interleaved one by one (as a DataLoader does) are
	// the rank's batches in another order: window by window, round robin.
	// Zero value: every batch. State is not meaningful under a split.
	Split Split `json:"split"`
	// Transforms maps column names to image transform pipelines in the
	// grammar of transform.Parse, e.g. "decode,resize=256,center_crop=224,
	// to_float,normalize=imagenet,chw". They run in the loader's workers;
	// random steps draw from (Seed, Epoch, row id). A png/jpeg column's
	// pipeline that does not start with decode gets one. A video column's
	// pipeline that starts with a clip step, or an audio column's whose
	// first audio steps take a segment ("segment=N", "resample=R,
	// segment=N"), reads the samples larger than loch.MediaRangeMin (by
	// their chunk's mean sample) by range, only the byte ranges the decoder
	// asks for, and decodes them in the fetchers as it reads them (up to
	// FetchConcurrency at once, so that reads overlap decoding); smaller
	// samples are fetched whole with their neighbours and decoded by the
	// workers. Both give the same samples.
	Transforms map[string]string `json:"transforms,omitempty"`
	// Encoded names png and jpeg columns (sample compression png or jpeg)
	// delivered as their stored, still-compressed bytes instead of decoded
	// pixels: one byte string per sample (Collated.Items, dtype
	// schema.Bytes), for a consumer that decodes them itself (the Python
	// SDK's decode="gpu", which hands JPEG to nvJPEG). Such a column has no
	// transform, and a sample is not checked beyond what its write checked
	// (its header): its decoder applies the skip rule.
	Encoded []string `json:"encoded,omitempty"`
	// Cache, when set, keeps the chunk objects the loader fetches (for
	// example a chunkcache.Disk shared by the ranks of a node), so that
	// epochs after the first read them locally. Cache errors are not fatal:
	// the loader falls back to the store.
	Cache chunkcache.Cache `json:"-"`
	// Allocator supplies the batch buffers (Collated.Data). The default
	// allocates Go memory and reuses what Release returns; the Python SDK
	// passes one that allocates memory numpy then owns.
	Allocator Allocator `json:"-"`
}

// Bounds of the settings that size the loader's buffers, channels and
// goroutines: Validate refuses a value above them (issue 35: a batch size
// of 2^40 or a prefetch of 2^40 batches aborted the process), so that a
// typo is an error naming the setting rather than an out-of-memory abort.
// Each is far above any useful value. Workers and FetchConcurrency are
// bounded by loch.MaxParallelism.
const (
	// MaxBatchSize is the largest BatchSize: 2^31-1 rows.
	MaxBatchSize = 1<<31 - 1
	// MaxPrefetchBatches is the largest PrefetchBatches (each is a slot
	// of a channel made when the loader starts).
	MaxPrefetchBatches = 1 << 16
)

// Validate reports the first setting that is out of range, wrapping
// loch.ErrInvalidArgument; zero values (defaults) are valid. The loader
// calls it; callers that want to check settings before opening anything
// (command-line flags) may too. Settings that depend on the data (column
// names, row ids, a resumed state) are checked when the loader starts.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("loader: %w: %s", loch.ErrInvalidArgument, fmt.Sprintf(format, a...))
	}
	switch c.Shuffle {
	case "", order.ModeNone, order.ModeBlock, order.ModeFull:
	default:
		return bad("shuffle %q: want none, block or full", c.Shuffle)
	}
	switch {
	case c.BatchSize < 0 || c.BatchSize > MaxBatchSize:
		return bad("batch size %d: want 1 to %d", c.BatchSize, MaxBatchSize)
	case c.WorldSize < 0:
		return bad("world size %d: want at least 1", c.WorldSize)
	case c.Rank < 0 || c.Rank >= max(c.WorldSize, 1):
		return bad("rank %d: want 0 <= rank < world size %d", c.Rank, max(c.WorldSize, 1))
	case c.Epoch < 0:
		return bad("epoch %d: want at least 0", c.Epoch)
	case c.WindowRows < 0:
		return bad("window of %d rows: want at least 0", c.WindowRows)
	case c.PrefetchBatches < 0 || c.PrefetchBytes < 0 || c.FetchConcurrency < 0 || c.Workers < 0:
		return bad("prefetch batches %d, prefetch bytes %d, fetch concurrency %d and workers %d: want none negative",
			c.PrefetchBatches, c.PrefetchBytes, c.FetchConcurrency, c.Workers)
	case c.PrefetchBatches > MaxPrefetchBatches:
		return bad("prefetch batches %d: want at most %d", c.PrefetchBatches, MaxPrefetchBatches)
	case c.FetchConcurrency > loch.MaxParallelism:
		return bad("fetch concurrency %d: want at most %d", c.FetchConcurrency, loch.MaxParallelism)
	case c.Workers > loch.MaxParallelism:
		return bad("workers %d: want at most %d", c.Workers, loch.MaxParallelism)
	case c.Split.Count < 0 || c.Split.Index < 0 || c.Split.Index >= max(c.Split.Count, 1):
		return bad("split %d of %d: want 0 <= index < count", c.Split.Index, c.Split.Count)
	}
	// A spec's grammar is checked now; whether its column is loaded, and
	// what its steps do to that column's samples, when the loader starts.
	for _, name := range slices.Sorted(maps.Keys(c.Transforms)) {
		if _, err := transform.Parse(c.Transforms[name]); err != nil {
			return bad("transform for column %q: %v", name, err)
		}
	}
	return nil
}

// Split selects every Count-th batch starting at Index.
type Split struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// Allocator allocates batch buffers. Alloc returns a slice of length n
// (its contents need not be zeroed); Free takes back a slice Alloc returned
// whose batch was released. Both are called from several goroutines.
type Allocator interface {
	Alloc(n int) []byte
	Free(b []byte)
}

// goAllocator recycles Go memory through a sync.Pool.
type goAllocator struct{ free sync.Pool }

func (a *goAllocator) Alloc(n int) []byte {
	if p, ok := a.free.Get().(*[]byte); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]byte, n)
}

func (a *goAllocator) Free(b []byte) {
	b = b[:0]
	a.free.Put(&b)
}

// WithDefaults returns c with each zero field set to its default: the
// configuration New runs with. It does not validate c.
func (c Config) WithDefaults() Config {
	c.defaults()
	return c
}

func (c *Config) defaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 32
	}
	if c.Shuffle == "" {
		c.Shuffle = order.ModeBlock
	}
	if c.WorldSize <= 0 {
		c.WorldSize = 1
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.PrefetchBatches <= 0 {
		c.PrefetchBatches = max(4, 2*c.Workers)
	}
	if c.PrefetchBytes <= 0 {
		c.PrefetchBytes = 256 << 20
	}
	if c.FetchConcurrency <= 0 {
		c.FetchConcurrency = 16
		if c.Shuffle == order.ModeFull && !c.decodesParts() {
			c.FetchConcurrency = 128
		}
	}
	if c.Split.Count <= 0 {
		c.Split = Split{0, 1}
	}
	if c.Allocator == nil {
		c.Allocator = &goAllocator{}
	}
}

// decodesParts reports whether a transform may read video clips or audio
// segments by range, which the fetchers decode (so that more fetchers
// would be more decoders than cores).
func (c *Config) decodesParts() bool {
	for _, spec := range c.Transforms {
		if p, err := transform.Parse(spec); err == nil && p.DecodesPart() != "" {
			return true
		}
	}
	return false
}

// Stats are the loader's counters, readable while it runs.
//
// Retries and RetryWait are those of the datasets' stores since the loader
// was made: the attempts beyond the first, and the time they spent riding
// out storage failures (storage.RetryStats.Wait: from an operation's first
// failure to its end, overlapping operations counted once). A storage
// outage the loader waited through shows there.
type Stats struct {
	Batches       int64         `json:"batches"`
	Samples       int64         `json:"samples"`
	BytesFetched  int64         `json:"bytes_fetched"`
	ChunksFetched int64         `json:"chunks_fetched"`
	CacheHits     int64         `json:"cache_hits"`
	Retries       int64         `json:"retries"`
	RetryWait     time.Duration `json:"retry_wait_ns"`
	Skipped       int64         `json:"skipped"`
	SkippedRows   []uint64      `json:"skipped_rows,omitempty"`
	FetchTime     time.Duration `json:"fetch_ns"`
	DecodeTime    time.Duration `json:"decode_ns"`
	WaitTime      time.Duration `json:"wait_ns"`
	Elapsed       time.Duration `json:"elapsed_ns"`
	FirstBatch    time.Duration `json:"first_batch_ns"`
	WaitShare     float64       `json:"wait_share"`
	DecodedBytes  int64         `json:"decoded_bytes"`
	PeakInFlight  int64         `json:"peak_inflight_bytes"`
	// FillTime is how long the loader took, from its start, to fill its
	// cache with every chunk the epoch reads, where it fills the cache
	// ahead of its reads (a full shuffle's epoch with a cache on object
	// storage; every chunk, cached or not, counts; a chunk whose fill
	// failed counts as filled, its reads fetch it); 0 where it does not,
	// and until the fill has ended.
	FillTime time.Duration `json:"fill_ns,omitempty"`
}

// Loader streams the batches of one epoch on one rank. Next is meant for
// one consumer goroutine; Stats and State may be called from any goroutine.
// Close stops its goroutines.
type Loader struct {
	scans []*loch.Scan // the datasets: one, or several mixed
	cfg   Config
	cols  [][]colPlan // [dataset][column]: the same names in every dataset
	// joinedAt maps a row id to its index in cfg.Rows, for cfg.Joined
	joinedAt map[uint64]int
	plan     planner
	// transforms by column index
	transforms map[int]transform.Pipeline
	// ranged holds the columns whose clip or audio segment step decodes
	// large samples by range in the fetchers, with the memory a decoded
	// clip or segment is estimated to hold before it is decoded (see
	// rangedSample)
	ranged map[int]int64
	base   int // epoch index of the plan's first batch (after a resume)
	mixed  bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	wins []batchSpan // the plan's windows, in batches
	mine []int       // the plan batches this loader delivers, in order

	mu       sync.Mutex
	cond     *sync.Cond
	ready    map[int]*Batch // collated batches by plan index
	failed   map[int]error  // batches that failed, by plan index: reported in order
	err      error          // a failure that stops everything after the next batch
	k        int            // index in mine of the next batch Next returns
	inflight int64
	peak     int64
	chunks   map[entryKey]*chunkEntry // reads that admitted batches use
	kept     *lru.Cache[entryKey, *chunkEntry]
	keepMax  int64              // bytes kept of reads no batch in flight uses
	bufs     *loch.BufferPool   // the scans' span buffers, kept for reuse within the budget (bufRoom)
	located  int64              // jobs locate has resolved (chunkEntry.mark)
	ahead    []*batchJob        // the next window's batches, whose reads readAhead starts
	aheadAt  int                // the next of ahead[0]'s entries to consider
	aheadQ   chan<- *chunkEntry // reads started ahead, for the fetchers
	batchMax int64              // the largest batch collated so far, in bytes
	fill     *filler            // fills the cache ahead of a full shuffle's reads (fill.go); nil if not

	started    time.Time
	firstBatch time.Duration
	wait       atomic.Int64
	fetchNs    atomic.Int64
	decodeNs   atomic.Int64
	fetched    atomic.Int64
	nchunks    atomic.Int64
	hits       atomic.Int64
	batches    atomic.Int64
	samples    atomic.Int64
	decoded    atomic.Int64
	plainCols  atomic.Int64 // columns of batches collated plainly (plain.go), for tests
	skipped    []uint64
	retry0     storage.RetryStats // the stores' counters when the loader was made (Retries and Wait)
}

// planner is an epoch plan over one dataset or a mixture.
type planner interface {
	Batches() int
	State(done int) State
	Windows() []order.Span
	items() iter.Seq2[int, []order.Item]
}

// batchSpan is a run [start, end) of a plan's batches.
type batchSpan struct{ start, end int }

// mixWindowRows is the length of a mixture's windows: its batches are
// read and split among workers in runs of about this many rows.
const mixWindowRows = 4096

// single adapts a one-dataset plan.
type single struct{ *order.EpochPlan }

func (p single) items() iter.Seq2[int, []order.Item] {
	return func(yield func(int, []order.Item) bool) {
		var buf []order.Item
		for i, pos := range p.All() {
			buf = buf[:0]
			for _, x := range pos {
				buf = append(buf, order.Item{Pos: x})
			}
			if !yield(i, buf) {
				return
			}
		}
	}
}

type mix struct {
	*order.MixPlan
	batch int
}

func (p mix) items() iter.Seq2[int, []order.Item] { return p.All() }

// Windows cuts a mixture's plan into runs of whole batches of about
// mixWindowRows rows.
func (p mix) Windows() []order.Span {
	n := (mixWindowRows + int64(p.batch) - 1) / int64(p.batch) * int64(p.batch)
	var out []order.Span
	for a := int64(0); a < p.Rows(); a += n {
		out = append(out, order.Span{Start: a, End: min(a+n, p.Rows())})
	}
	return out
}

type colPlan struct {
	name string
	col  schema.Column
	// maxShape is the elementwise largest shape of the column's samples
	// in the snapshot, from its statistics (nil when they do not give it).
	maxShape []int
	// encoded: delivered as stored bytes (Config.Encoded); set in
	// l.cols[0], which collation reads.
	encoded bool
}

// entryKey names a read of one of the loader's datasets: a chunk read, or
// (media > 0) the by-range decode of column media-1's sample of the row
// at position pos.
type entryKey struct {
	ds    int
	read  loch.Read
	media int
	pos   int64
}

// chunkEntry is a read needed by batches in flight: a chunk read (f), or
// a media sample read by range and transformed as it is read (part, out).
// ready is closed when f or out, or err, is set.
type chunkEntry struct {
	key     entryKey
	ready   chan struct{}
	f       *loch.Fetched
	part    *rangedPart
	out     value
	err     error
	users   int   // admitted batches still needing it
	pending int   // located batches not admitted yet that need it
	held    bool  // its size counts in the loader's in-flight bytes
	size    int64 // memory it holds (an estimate until fetched)
	mark    int64 // the last job locate counted it for (Loader.located)
}

// New starts a loader over scan (which it loads). The loader reads the
// scan's snapshot only: it never mixes snapshots.
func New(ctx context.Context, scan *loch.Scan, cfg Config) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	l, err := newLoader(ctx, []*loch.Scan{scan}, cfg)
	if err != nil {
		return nil, err
	}
	p, err := makePlan(l.scans[0], cfg)
	if err != nil {
		return nil, err
	}
	l.begin(single{p})
	return l, nil
}

// NewMix starts a loader that mixes several datasets, drawing rows from
// each in proportion to weights, deterministically (see order.PlanMix).
// Every dataset must have the requested columns with the same dtypes.
// epochRows is the number of rows of an epoch over all ranks (0: enough for
// every dataset to deliver all its rows at least once). cfg's order fields
// apply to the mixture; cfg.Rows is not supported. Batches carry the
// dataset of each row in Batch.Datasets.
func NewMix(ctx context.Context, scans []*loch.Scan, weights []float64, epochRows int64, cfg Config) (*Loader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	if len(scans) == 0 || len(scans) != len(weights) {
		return nil, fmt.Errorf("loader: %d datasets and %d weights: %w", len(scans), len(weights), loch.ErrInvalidArgument)
	}
	if cfg.Rows != nil || cfg.Joined != nil {
		return nil, fmt.Errorf("loader: a row subset cannot be combined with a mixture: %w", loch.ErrInvalidArgument)
	}
	l, err := newLoader(ctx, scans, cfg)
	if err != nil {
		return nil, err
	}
	for d := 1; d < len(scans); d++ {
		for c, cp := range l.cols[d] {
			if first := l.cols[0][c]; cp.col.DType != first.col.DType || cp.col.DType.Variable() != first.col.DType.Variable() {
				return nil, fmt.Errorf("loader: column %q is %s in dataset 0 and %s in dataset %d: %w", cp.name, first.col.DType, cp.col.DType, d, loch.ErrInvalidArgument)
			}
		}
	}
	p, err := makeMixPlan(l.scans, weights, epochRows, cfg)
	if err != nil {
		return nil, err
	}
	l.mixed = true
	l.begin(mix{p, cfg.BatchSize})
	return l, nil
}

// mapChunks has a loader read spans of a local dataset from its mapped
// chunk files (loch.Scan.Mapped); tests and benchmarks turn it off for a
// baseline.
var mapChunks = true

// newLoader loads the scans and resolves the columns.
func newLoader(ctx context.Context, scans []*loch.Scan, cfg Config) (*Loader, error) {
	l := &Loader{cfg: cfg, ready: map[int]*Batch{}, failed: map[int]error{}, chunks: map[entryKey]*chunkEntry{},
		keepMax: cfg.PrefetchBytes / 4, bufs: loch.NewBufferPool(0)}
	l.kept = lru.New(l.keepMax, func(_ entryKey, e *chunkEntry, _ int64) {
		l.bufRoom()
		e.forget()
	})
	for _, v := range scans {
		v = v.WithBuffers(l.bufs)
		if cfg.Cache != nil {
			v = v.WithCache(cfg.Cache)
		} else if mapChunks {
			// Spans straight from the chunk files' pages on a local disk:
			// every entry's Fetched is recycled (forget) once no batch
			// needs it, and collation copies each sample out first.
			v = v.Mapped()
		}
		l.scans = append(l.scans, v)
		r := v.RetryStats()
		l.retry0.Retries += r.Retries
		l.retry0.Wait += r.Wait
		if err := v.Load(ctx, cfg.FetchConcurrency); err != nil {
			return nil, err
		}
		cols, err := columns(v, cfg.Columns)
		if err != nil {
			return nil, err
		}
		if len(l.cols) > 0 && len(cols) != len(l.cols[0]) {
			return nil, fmt.Errorf("loader: the datasets have different columns (%d and %d); name the columns to load: %w", len(l.cols[0]), len(cols), loch.ErrInvalidArgument)
		}
		l.cols = append(l.cols, cols)
	}
	if err := l.joinedColumns(); err != nil {
		return nil, err
	}
	if err := l.encodedColumns(); err != nil {
		return nil, err
	}
	l.transforms = map[int]transform.Pipeline{}
	l.ranged = map[int]int64{}
	for name, spec := range cfg.Transforms {
		c := slices.IndexFunc(l.cols[0], func(cp colPlan) bool { return cp.name == name })
		if c < 0 {
			return nil, fmt.Errorf("loader: transform for column %q, which is not loaded: %w", name, loch.ErrInvalidArgument)
		}
		cp := l.cols[0][c]
		col := cp.col
		if col.SampleCompression != schema.SampleNone && !col.SampleCompression.Media() && !strings.HasPrefix(strings.TrimSpace(spec), "decode") {
			spec = "decode," + spec
		}
		p, err := transform.Parse(spec)
		if err != nil {
			return nil, fmt.Errorf("loader: transform for column %q: %w: %w", name, loch.ErrInvalidArgument, err)
		}
		l.transforms[c] = p
		if part := p.DecodesPart(); part != "" && part == string(col.SampleCompression) {
			l.ranged[c] = rangedEstimate(p, col, cp.maxShape)
		}
	}
	return l, nil
}

// encodedColumns marks the columns of Config.Encoded, refusing one that
// is not loaded, not png or jpeg, or also transformed.
func (l *Loader) encodedColumns() error {
	for _, name := range l.cfg.Encoded {
		c := slices.IndexFunc(l.cols[0], func(cp colPlan) bool { return cp.name == name })
		if c < 0 {
			return fmt.Errorf("loader: encoded column %q, which is not loaded: %w", name, loch.ErrInvalidArgument)
		}
		if sc := l.cols[0][c].col.SampleCompression; sc != schema.PNG && sc != schema.JPEG {
			return fmt.Errorf("loader: encoded column %q: its samples are stored with sample compression %q, want png or jpeg: %w", name, sc, loch.ErrInvalidArgument)
		}
		if _, ok := l.cfg.Transforms[name]; ok {
			return fmt.Errorf("loader: column %q is both encoded and transformed: a column delivered as stored bytes takes no transform: %w", name, loch.ErrInvalidArgument)
		}
		l.cols[0][c].encoded = true
	}
	return nil
}

// begin starts the pipeline on plan p.
func (l *Loader) begin(p planner) {
	l.prepare(p)
	l.started = time.Now()
	l.start()
}

// prepare sets the loader up for plan p: its windows and batches, and
// the state its goroutines share.
func (l *Loader) prepare(p planner) {
	l.plan = p
	if st := p.State(0); len(st.Stages) > 0 {
		l.base = st.Stages[len(st.Stages)-1].BatchesDone
	}
	l.cfg.Epoch = p.State(0).Epoch
	b := int64(l.cfg.BatchSize)
	for w, sp := range p.Windows() {
		bs := batchSpan{int(sp.Start / b), int((sp.End + b - 1) / b)}
		l.wins = append(l.wins, bs)
		if w%l.cfg.Split.Count == l.cfg.Split.Index {
			for i := bs.start; i < bs.end; i++ {
				l.mine = append(l.mine, i)
			}
		}
	}
	l.cond = sync.NewCond(&l.mu)
	l.ctx, l.cancel = context.WithCancel(context.Background())
}

// columns resolves column names (all when none are given).
func columns(view *loch.Scan, names []string) ([]colPlan, error) {
	sch, cols := view.Schema(), view.Columns()
	if len(names) == 0 {
		names = sch.Names()
	}
	var out []colPlan
	for _, n := range names {
		k := slices.IndexFunc(cols, func(c schema.Entry) bool { return c.Name == n })
		if k < 0 {
			return nil, fmt.Errorf("loader: column %q: no such column in version %s (have %v): %w", n, view.Version(), sch.Names(), loch.ErrNotFound)
		}
		out = append(out, colPlan{name: n, col: cols[k].Column, maxShape: cols[k].MaxShape})
	}
	return out, nil
}

// Batches is the number of batches this loader delivers (after a resume:
// the rest of the epoch; under a split: its share).
func (l *Loader) Batches() int { return len(l.mine) }

// State returns the state to save for resuming after the batches returned
// so far. A loader built with it as Config.Resume, with the same or
// another world size, delivers the rest of the epoch.
func (l *Loader) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.k < len(l.mine) {
		return l.plan.State(l.mine[l.k])
	}
	return l.plan.State(l.plan.Batches())
}

// StateAt is the state after the first taken batches this loader delivered
// (0 <= taken <= the batches delivered so far): State for a consumer that
// holds batches it has taken from Next but not yet used, such as the C
// ABI's stream.
func (l *Loader) StateAt(taken int) (State, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if taken < 0 || taken > l.k {
		return State{}, fmt.Errorf("loader: state after %d batches: %d delivered so far: %w", taken, l.k, loch.ErrInvalidArgument)
	}
	if taken < len(l.mine) {
		return l.plan.State(l.mine[taken]), nil
	}
	return l.plan.State(l.plan.Batches()), nil
}

// Next returns the next batch, or io.EOF at the end of the epoch. It
// blocks until the batch is ready; the time it blocks is the wait time in
// Stats.
func (l *Loader) Next(ctx context.Context) (*Batch, error) {
	t0 := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.k >= len(l.mine) {
			return nil, io.EOF
		}
		bi := l.mine[l.k]
		if b, ok := l.ready[bi]; ok {
			delete(l.ready, bi)
			l.k++
			l.inflight -= batchBytes(b) // the consumer owns it now
			l.cond.Broadcast()
			w := time.Since(t0)
			l.wait.Add(int64(w))
			if l.firstBatch == 0 {
				l.firstBatch = time.Since(l.started)
			}
			return b, nil
		}
		if err, ok := l.failed[bi]; ok {
			return nil, err
		}
		if l.err != nil {
			return nil, l.err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if l.ctx.Err() != nil {
			return nil, ErrClosed
		}
		waitCond(ctx, l.cond)
	}
}

// waitCond waits on c (whose lock is held) until signalled or ctx ends.
func waitCond(ctx context.Context, c *sync.Cond) {
	stop := context.AfterFunc(ctx, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
	c.Wait()
	stop()
}

// Release returns a batch's buffers for reuse. The batch must not be used
// afterwards. Calling it is optional: an unreleased batch is garbage
// collected.
func (l *Loader) Release(b *Batch) {
	for _, t := range b.Columns {
		if t.Data != nil {
			l.cfg.Allocator.Free(t.Data)
		}
		t.Data = nil
	}
}

// Close stops the loader's goroutines and waits for them.
func (l *Loader) Close() error {
	l.cancel()
	l.mu.Lock()
	l.cond.Broadcast()
	l.mu.Unlock()
	l.wg.Wait()
	l.mu.Lock()
	l.recycle()
	l.mu.Unlock()
	l.bufs.SetRoom(0)
	l.bufs.Trim()
	return nil
}

// recycle forgets every read the loader still holds, in use by batches
// it will not collate now or kept (l.mu held, its goroutines stopped), so
// that their buffers go back to the pool for the next loader (the next
// epoch's) rather than to the garbage collector: no batch aliases them.
func (l *Loader) recycle() {
	for k, e := range l.chunks {
		delete(l.chunks, k)
		e.forget()
	}
	l.kept.Clear()
}

// bufRoom lets the loader's buffer pool keep idle what its memory budget
// leaves beside the bytes in flight and kept (l.mu held), before a span
// is recycled: the spans a loader holds and the buffers it keeps for the
// next reads stay within PrefetchBytes together.
func (l *Loader) bufRoom() {
	l.bufs.SetRoom(max(l.cfg.PrefetchBytes-l.inflight-l.kept.Size(), 0))
}

// Stats returns the loader's counters so far.
func (l *Loader) Stats() Stats {
	l.mu.Lock()
	skipped := append([]uint64(nil), l.skipped...)
	peak := l.peak
	first := l.firstBatch
	l.mu.Unlock()
	retry := l.retryStats()
	s := Stats{
		Batches: l.batches.Load(), Samples: l.samples.Load(), BytesFetched: l.fetched.Load(), ChunksFetched: l.nchunks.Load(), CacheHits: l.hits.Load(),
		Retries: retry.Retries - l.retry0.Retries, RetryWait: retry.Wait - l.retry0.Wait, Skipped: int64(len(skipped)), SkippedRows: skipped,
		FetchTime: time.Duration(l.fetchNs.Load()), DecodeTime: time.Duration(l.decodeNs.Load()),
		WaitTime: time.Duration(l.wait.Load()), Elapsed: time.Since(l.started), FirstBatch: first,
		DecodedBytes: l.decoded.Load(), PeakInFlight: peak,
	}
	if l.fill != nil {
		s.FillTime = l.fill.fillTime()
	}
	if s.Elapsed > 0 {
		s.WaitShare = float64(s.WaitTime) / float64(s.Elapsed)
	}
	return s
}

// retryStats sums the Retries and Wait of the scans' stores.
func (l *Loader) retryStats() storage.RetryStats {
	var sum storage.RetryStats
	for _, v := range l.scans {
		r := v.RetryStats()
		sum.Retries += r.Retries
		sum.Wait += r.Wait
	}
	return sum
}

func batchBytes(b *Batch) int64 {
	var n int64
	for _, t := range b.Columns {
		n += int64(cap(t.Data))
	}
	return n
}
