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
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunk"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/manifest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("loader closed")

// Config configures a Loader. The zero value of each field means its
// default.
type Config struct {
	// Columns to load (default: all).
	Columns []string
	// BatchSize is the number of rows per batch (default 32).
	BatchSize int
	// Order: shuffle mode, seed, epoch, sharding.
	Shuffle   string // "none", "block" or "full" (default "block")
	Seed      uint64
	Epoch     int
	WorldSize int // default 1
	Rank      int
	DropLast  bool
	// WindowRows is the block-shuffle window in rows (default 16 chunks'
	// worth of rows).
	WindowRows int64
	// Rows restricts the loader to these row ids, in this order before
	// shuffling (default: every row).
	Rows []uint64
	// PrefetchBatches bounds the batches prepared ahead of the consumer
	// (default 4); PrefetchBytes bounds the memory they and the chunks they
	// need may hold (default 512 MiB). At least one batch is always in
	// flight, whatever its size.
	PrefetchBatches int
	PrefetchBytes   int64
	// FetchConcurrency bounds concurrent chunk fetches (default 16:
	// object stores want many requests in flight); Workers bounds the
	// goroutines that decode and collate (default GOMAXPROCS).
	FetchConcurrency int
	Workers          int
	// SkipBadSamples skips rows whose samples cannot be read or decoded,
	// counting them in Stats, instead of stopping with an error.
	SkipBadSamples bool
	// Resume restarts from a saved state (see State).
	Resume *State
	// Cache, when set, keeps the chunk objects the loader fetches (for
	// example a chunkcache.Disk shared by the ranks of a node), so that
	// epochs after the first read them locally. Cache errors are not fatal:
	// the loader falls back to the store. Full-shuffle sample reads bypass
	// it.
	Cache chunkcache.Cache
	// Allocator supplies the batch buffers (Tensor.Data). The default
	// allocates Go memory and reuses what Release returns; the Python SDK
	// passes one that allocates memory numpy then owns.
	Allocator Allocator
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

func (c *Config) defaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 32
	}
	if c.Shuffle == "" {
		c.Shuffle = "block"
	}
	if c.WorldSize <= 0 {
		c.WorldSize = 1
	}
	if c.PrefetchBatches <= 0 {
		c.PrefetchBatches = 4
	}
	if c.PrefetchBytes <= 0 {
		c.PrefetchBytes = 512 << 20
	}
	if c.FetchConcurrency <= 0 {
		c.FetchConcurrency = 16
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	if c.Allocator == nil {
		c.Allocator = &goAllocator{}
	}
}

// Stats are the loader's counters, readable while it runs.
type Stats struct {
	Batches       int64         `json:"batches"`
	Samples       int64         `json:"samples"`
	BytesFetched  int64         `json:"bytes_fetched"`
	ChunksFetched int64         `json:"chunks_fetched"`
	CacheHits     int64         `json:"cache_hits"`
	Retries       int64         `json:"retries"`
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
}

// Loader streams the batches of one epoch on one rank. Next is meant for
// one consumer goroutine; Stats and State may be called from any goroutine.
// Close stops its goroutines.
type Loader struct {
	view  *loch.View
	store storage.Store
	cfg   Config
	cols  []colPlan
	plan  *order.EpochPlan
	base  int // epoch index of the plan's first batch (after a resume)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	cond     *sync.Cond
	ready    map[int]*Batch // collated batches by index
	failed   map[int]error  // batches that failed, by index: reported in order
	err      error          // a failure that stops everything after the next batch
	next     int            // index of the next batch Next returns
	inflight int64
	peak     int64
	chunks   map[string]*chunkEntry

	hmu     sync.Mutex
	headers map[string]*chunk.Header // parsed chunk headers, for sample reads

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
	skipped    []uint64
	retries0   int64
}

type colPlan struct {
	name string
	col  schema.Column
}

// chunkEntry is a chunk needed by batches in flight.
type chunkEntry struct {
	key    string // ref.Key, or ref.Key#sample
	sample int    // -1: the whole chunk; else one sample read by range
	hdr    *chunk.Header
	data   []byte // the sample's bytes, for sample entries
	ref    manifest.ChunkRef
	ready  chan struct{}
	ch     *chunk.Chunk
	err    error
	users  int // batches still needing it
	size   int64
}

// New starts a loader over view (which it loads). The loader reads the
// view's snapshot only: it never mixes snapshots.
func New(ctx context.Context, view *loch.View, cfg Config) (*Loader, error) {
	cfg.defaults()
	retries0 := storage.Retries(view.Store())
	if err := view.Load(ctx, cfg.FetchConcurrency); err != nil {
		return nil, err
	}
	cols, err := columns(view, cfg.Columns)
	if err != nil {
		return nil, err
	}
	l := &Loader{view: view, store: view.Store(), cfg: cfg, cols: cols, ready: map[int]*Batch{}, failed: map[int]error{}, chunks: map[string]*chunkEntry{}, headers: map[string]*chunk.Header{}}
	if l.plan, err = makePlan(view, refColumn(cols), cfg); err != nil {
		return nil, err
	}
	if st := l.plan.State(0); len(st.Stages) > 0 {
		l.base = st.Stages[len(st.Stages)-1].BatchesDone
	}
	l.cfg.Epoch = l.plan.State(0).Epoch
	l.cond = sync.NewCond(&l.mu)
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.retries0 = retries0
	l.started = time.Now()
	l.start()
	return l, nil
}

// columns resolves column names (all when none are given).
func columns(view *loch.View, names []string) ([]colPlan, error) {
	sch := view.Schema()
	if len(names) == 0 {
		names = sch.Names()
	}
	var out []colPlan
	for _, n := range names {
		c, ok := sch.Column(n)
		if !ok {
			return nil, fmt.Errorf("loader: column %q: no such column in version %s (have %v): %w", n, view.Version(), sch.Names(), loch.ErrNotFound)
		}
		out = append(out, colPlan{name: n, col: *c})
	}
	return out, nil
}

// refColumn picks the column whose chunks define the blocks of the order:
// the requested column with the most stored bytes.
func refColumn(cols []colPlan) int {
	best, uid := int64(-1), 0
	for _, c := range cols {
		if c.col.StoredBytes > best {
			best, uid = c.col.StoredBytes, c.col.UID
		}
	}
	return uid
}

// Batches is the number of batches this loader delivers (after a resume:
// the rest of the epoch).
func (l *Loader) Batches() int { return l.plan.Batches() }

// State returns the state to save for resuming after the batches returned
// so far. A loader built with it as Config.Resume, with the same or
// another world size, delivers the rest of the epoch.
func (l *Loader) State() State {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.plan.State(l.next)
}

// Next returns the next batch, or io.EOF at the end of the epoch. It
// blocks until the batch is ready; the time it blocks is the wait time in
// Stats.
func (l *Loader) Next(ctx context.Context) (*Batch, error) {
	t0 := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		if l.next >= l.plan.Batches() {
			return nil, io.EOF
		}
		if b, ok := l.ready[l.next]; ok {
			delete(l.ready, l.next)
			l.next++
			l.inflight -= batchBytes(b) // the consumer owns it now
			l.cond.Broadcast()
			w := time.Since(t0)
			l.wait.Add(int64(w))
			if l.firstBatch == 0 {
				l.firstBatch = time.Since(l.started)
			}
			return b, nil
		}
		if err, ok := l.failed[l.next]; ok {
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
	return nil
}

// Stats returns the loader's counters so far.
func (l *Loader) Stats() Stats {
	l.mu.Lock()
	skipped := append([]uint64(nil), l.skipped...)
	peak := l.peak
	first := l.firstBatch
	l.mu.Unlock()
	s := Stats{
		Batches: l.batches.Load(), Samples: l.samples.Load(), BytesFetched: l.fetched.Load(), ChunksFetched: l.nchunks.Load(), CacheHits: l.hits.Load(),
		Retries: storage.Retries(l.store) - l.retries0, Skipped: int64(len(skipped)), SkippedRows: skipped,
		FetchTime: time.Duration(l.fetchNs.Load()), DecodeTime: time.Duration(l.decodeNs.Load()),
		WaitTime: time.Duration(l.wait.Load()), Elapsed: time.Since(l.started), FirstBatch: first,
		DecodedBytes: l.decoded.Load(), PeakInFlight: peak,
	}
	if s.Elapsed > 0 {
		s.WaitShare = float64(s.WaitTime) / float64(s.Elapsed)
	}
	return s
}

func batchBytes(b *Batch) int64 {
	var n int64
	for _, t := range b.Columns {
		n += int64(cap(t.Data))
	}
	return n
}
