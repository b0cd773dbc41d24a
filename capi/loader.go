package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/loader"
)

// loaderConfig is the JSON that loch_loader_new takes: loader.Config's own
// JSON form plus the chunk cache to open.
type loaderConfig struct {
	loader.Config
	// CacheDir and CacheBytes open a chunkcache.Disk shared by the
	// processes of the machine (CacheBytes default 10 GiB).
	CacheDir   string `json:"cache_dir"`
	CacheBytes int64  `json:"cache_bytes"`
	// PinnedPool is the handle of a pool of page-locked memory
	// (loch_pinned_pool_new, ABI 26) that batch buffers come from.
	PinnedPool uint64 `json:"pinned_pool"`
}

// loaderObj is the object behind a loader handle.
type loaderObj struct {
	l     *loader.Loader
	alloc *loaderAlloc
	names []string

	cache *chunkcache.Disk // owned; nil without a cache_dir

	lostWait atomic.Int64 // ns spent in calls that timed out, which loader.Stats does not count

	stream        atomic.Pointer[stream] // set once by loch_loader_stream (under mu)
	prefetchBytes int64                  // the loader's PrefetchBytes, with its default

	mu     sync.Mutex // one Next at a time; guards closed
	closed atomic.Bool
}

func loaderOf(h C.uintptr_t) (*loaderObj, error) { return lookup[*loaderObj](h, "loader") }

// loch_loader_new starts a loader over the handle's current snapshot and
// stores its handle in *out. config is the JSON form of loader.Config
// ({"columns", "batch_size", "shuffle", "seed", "epoch", "world_size",
// "rank", "drop_last", "window_rows", "rows", "joined" (a selection's
// joined columns, docs/format.md §2.7), "query", "prefetch_batches",
// "prefetch_bytes", "fetch_concurrency", "workers", "skip_bad_samples",
// "resume" (a state from loch_loader_state), "allow_version_change",
// "ragged_as_list", "split" ({"index", "count"}), "transforms" ({column:
// spec}), "encoded" ([column], png/jpeg columns delivered as their stored
// bytes, dtype bytes: ABI 27)) plus "cache_dir", "cache_bytes" and
// "pinned_pool" (ABI 26: a pool handle that batch buffers come from,
// loch_pinned_pool_new); absent fields take the Go
// loader's defaults, unknown ones are refused.
//
//export loch_loader_new
func loch_loader_new(dsh C.uintptr_t, config *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	ds, err := datasetOf(dsh)
	if err != nil {
		return fail(errOut, err)
	}
	scan := ds.d.Scan()
	return startLoader(config, []*loch.Scan{scan}, out, errOut, func(cfg loader.Config) (*loader.Loader, error) {
		return loader.New(context.Background(), scan, cfg)
	})
}

// loch_loader_new_mix starts a loader that mixes the current snapshots of
// n datasets (handles[0..n)), drawing rows from dataset i in proportion to
// weights[i] (loader.NewMix, order.PlanMix), and stores its handle in
// *out. epoch_rows is the number of rows of an epoch over all ranks (0:
// enough for every dataset to deliver each of its rows at least once).
// config is loch_loader_new's JSON; "rows" and "joined" are refused. The datasets must
// have the loaded columns (each names them, "columns", or all have the
// same ones) with the same dtypes: otherwise LOCH_INVALID_ARGUMENT, with a
// message naming the dataset (by index and URL) and the column. Each batch
// gives the dataset of each row in datasets (and its row id in that
// dataset in row_ids).
//
//export loch_loader_new_mix
func loch_loader_new_mix(handles *C.uintptr_t, n C.int32_t, weights *C.double, epochRows C.int64_t, config *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	if n <= 0 {
		return fail(errOut, invalidf("mixture of %d datasets: want at least one", int(n)))
	}
	w := make([]float64, n)
	for i, v := range unsafe.Slice(weights, int(n)) {
		w[i] = float64(v)
	}
	return loaderNewMix(unsafe.Slice(handles, int(n)), w, int64(epochRows), config, out, errOut)
}

// loaderNewMix is loch_loader_new_mix over Go slices (one weight per
// handle), for it and for the loader service.
func loaderNewMix(handles []C.uintptr_t, weights []float64, epochRows int64, config *C.char, out *C.uintptr_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	if len(handles) == 0 {
		return fail(errOut, invalidf("mixture of 0 datasets: want at least one"))
	}
	scans := make([]*loch.Scan, len(handles))
	for i, h := range handles {
		ds, err := datasetOf(h)
		if err != nil {
			return fail(errOut, fmt.Errorf("mixture dataset %d: %w", i, err))
		}
		scans[i] = ds.d.Scan()
	}
	return startLoader(config, scans, out, errOut, func(cfg loader.Config) (*loader.Loader, error) {
		if err := mixColumns(scans, cfg.Columns); err != nil {
			return nil, err
		}
		return loader.NewMix(context.Background(), scans, weights, epochRows, cfg)
	})
}

// mixColumns checks that every dataset of a mixture has the columns to
// load. The loader reports a missing one as a column not found in a
// version; to a mixture it is a bad argument, and the user knows the
// dataset by its place in the mixture and its URL, not by its version.
func mixColumns(scans []*loch.Scan, names []string) error {
	for i, v := range scans {
		sch := v.Schema()
		for _, name := range names {
			if _, ok := sch.Column(name); !ok {
				return invalidf("mixture: dataset %d (%s) has no column %q (it has %v); load the columns all the datasets have", i, v.URL(), name, sch.Names())
			}
		}
	}
	return nil
}

// startLoader makes a loader handle: it decodes the configuration
// (loch_loader_new's JSON), opens its chunk cache, starts the loader with
// start and stores the handle in *out.
func startLoader(config *C.char, scans []*loch.Scan, out *C.uintptr_t, errOut **C.char, start func(loader.Config) (*loader.Loader, error)) C.int {
	var c loaderConfig
	if err := decodeStrict("loader config", goString(config), &c); err != nil {
		return fail(errOut, err)
	}
	cfg := c.Config
	if cfg.Workers == 0 {
		cfg.Workers = loaderWorkers()
	}
	lo := &loaderObj{alloc: newLoaderAlloc(), names: cfg.Columns, prefetchBytes: cfg.WithDefaults().PrefetchBytes}
	if c.PinnedPool != 0 {
		pp, err := pinnedOf(C.uintptr_t(c.PinnedPool))
		if err != nil {
			return fail(errOut, fmt.Errorf("loader config pinned_pool: %w", err))
		}
		lo.alloc.pinned = pp
	}
	if c.CacheDir != "" {
		n := c.CacheBytes
		if n <= 0 {
			n = 10 << 30
		}
		cache, err := chunkcache.Open(c.CacheDir, n, nil)
		if err != nil {
			return fail(errOut, err)
		}
		lo.cache, cfg.Cache = cache, cache
	}
	cfg.Allocator = lo.alloc
	if len(lo.names) == 0 {
		sch := scans[0].Schema()
		lo.names = sch.Names()
	}
	for _, j := range cfg.Joined {
		lo.names = append(slices.Clip(lo.names), j.Name)
	}
	l, err := start(cfg)
	if err != nil {
		if lo.cache != nil {
			lo.cache.Close()
		}
		return fail(errOut, err)
	}
	lo.l = l
	*out = newHandle(lo)
	return C.LOCH_OK
}

// loch_loader_config checks a loader configuration (the JSON object
// loch_loader_new takes) without starting a loader, with the same checks
// (loader.Config.Validate): a setting out of range fails with
// LOCH_INVALID_ARGUMENT and a message naming it. Otherwise it stores in
// *out, as JSON, the configuration with every default filled in. Settings
// that depend on the data (columns, rows, transforms, a resumed state) are
// checked only by loch_loader_new.
//
//export loch_loader_config
func loch_loader_config(config *C.char, out **C.char, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	var c loaderConfig
	if err := decodeStrict("loader config", goString(config), &c); err != nil {
		return fail(errOut, err)
	}
	if err := c.Validate(); err != nil {
		return fail(errOut, err)
	}
	if c.Workers == 0 {
		c.Workers = loaderWorkers()
	}
	c.Config = c.WithDefaults()
	b, err := json.Marshal(c)
	if err != nil {
		return fail(errOut, err)
	}
	return result(errOut, setString(out, string(b)))
}

// loch_loader_next stores the next batch in *out (freed with
// loch_batch_free; its tensors' data with loch_buffer_free). It returns
// LOCH_EOF at the end of the epoch and LOCH_TIMEOUT when no batch was ready
// within timeout_ms milliseconds (<= 0: no limit); a call after a timeout
// goes on waiting for the same batch.
//
//export loch_loader_next
func loch_loader_next(h C.uintptr_t, timeoutMs C.int64_t, out **C.loch_batch, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	return loaderNext(h, timeoutMs, out, errOut)
}

// loch_loader_next_batch is loch_loader_next for a consumer that takes one
// batch after another (ABI 11): in the same call it first frees prev (a
// batch description that loch_loader_next or this function returned, as
// loch_batch_free; NULL: none) and gives back the nrelease sample buffers
// at release (as loch_buffer_free each; NULL entries are skipped), whatever
// the status, then stores the next batch in *out (NULL unless LOCH_OK).
// One call per batch instead of 2 + one per column: each call into Go from
// a thread that Go did not start has to find a free processor of the Go
// runtime first, which the loader's workers are keeping busy.
//
//export loch_loader_next_batch
func loch_loader_next_batch(h C.uintptr_t, timeoutMs C.int64_t, prev *C.loch_batch, release *unsafe.Pointer, nrelease C.int64_t, out **C.loch_batch, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	if prev != nil {
		freeBatch(prev)
	}
	if release != nil && nrelease > 0 {
		pool.releaseAll(unsafe.Slice(release, int(nrelease)))
	}
	if out != nil {
		*out = nil
	}
	return loaderNext(h, timeoutMs, out, errOut)
}

// expired is a context that has ended: a Next under it returns a batch
// that is ready, and its error otherwise, without waiting.
var expired = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// loaderNext is loch_loader_next.
func loaderNext(h C.uintptr_t, timeoutMs C.int64_t, out **C.loch_batch, errOut **C.char) C.int {
	callerProcs.add() // a caller per batch: a P of its own (procs.go)
	lo, err := loaderOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	lo.mu.Lock()
	defer lo.mu.Unlock()
	if lo.closed.Load() {
		return fail(errOut, fmt.Errorf("loader is closed: %w", errClosed))
	}
	if lo.stream.Load() != nil {
		return fail(errOut, invalidf("loader streams its batches (loch_loader_stream): read them from its pipe"))
	}
	// Most batches are ready when asked for: take one without setting up
	// a timer. Any error (not ready, or a real one, which the wait below
	// meets again) goes on to the wait.
	b, err := lo.l.Next(expired)
	if err != nil {
		ctx := context.Background()
		if timeoutMs > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(timeoutMs)*time.Millisecond)
			defer cancel()
		}
		t0 := time.Now()
		b, err = lo.l.Next(ctx)
		if err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				lo.lostWait.Add(int64(time.Since(t0)))
				return fail(errOut, fmt.Errorf("no batch within %d ms: %w", timeoutMs, errTimeout))
			}
			return fail(errOut, err)
		}
	}
	*out = lo.cBatch(b)
	return C.LOCH_OK
}

// cBatch converts a batch, handing its buffers over to the caller.
func (lo *loaderObj) cBatch(b *loader.Batch) *C.loch_batch {
	cb := (*C.loch_batch)(C.calloc(1, C.size_t(unsafe.Sizeof(C.loch_batch{}))))
	cb.epoch, cb.index, cb.n = C.int64_t(b.Epoch), C.int64_t(b.Index), C.int64_t(b.Len())
	cb.positions = cArray(b.Positions, i64)
	cb.row_ids = cArray(b.RowIDs, func(v uint64) C.uint64_t { return C.uint64_t(v) })
	cb.datasets = cArray(b.Datasets, i64)
	var names []string
	for _, n := range lo.names {
		if b.Columns[n] != nil {
			names = append(names, n)
		}
	}
	if len(names) > 0 {
		cb.cols = (*C.loch_tensor)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof(C.loch_tensor{}))))
		cb.ncols = C.int32_t(len(names))
		cols := unsafe.Slice(cb.cols, len(names))
		for i, n := range names {
			batchTensor(&cols[i], n, b.Columns[n], lo.alloc)
		}
	}
	return cb
}

// loch_loader_len stores the number of batches this loader delivers from
// where it started (after a resumed state; its share under a split).
//
//export loch_loader_len
func loch_loader_len(h C.uintptr_t, out *C.int64_t, errOut **C.char) (st C.int) {
	return withLoader(h, errOut, func(lo *loaderObj) error {
		*out = C.int64_t(lo.l.Batches())
		return nil
	})
}

// loch_loader_state stores, as JSON, the state from which a new loader
// (config "resume") continues after the batches delivered so far.
//
//export loch_loader_state
func loch_loader_state(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withLoader(h, errOut, func(lo *loaderObj) error {
		b, err := json.Marshal(lo.l.State())
		if err != nil {
			return err
		}
		return setString(out, string(b))
	})
}

// loch_loader_stats stores the loader's statistics as JSON (loader.Stats;
// wait_ns and wait_share include the time spent in calls that timed out).
//
//export loch_loader_stats
func loch_loader_stats(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withLoader(h, errOut, func(lo *loaderObj) error {
		s := lo.l.Stats()
		s.WaitTime += time.Duration(lo.lostWait.Load())
		if s.Elapsed > 0 {
			s.WaitShare = float64(s.WaitTime) / float64(s.Elapsed)
		}
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return setString(out, string(b))
	})
}

// loch_loader_close stops the loader and releases its handle and the
// buffers of batches it had not delivered. Batches already delivered stay
// valid. It may be called while another thread waits in loch_loader_next,
// which then returns LOCH_CLOSED.
//
//export loch_loader_close
func loch_loader_close(h C.uintptr_t, errOut **C.char) (st C.int) {
	return withLoader(h, errOut, func(lo *loaderObj) error {
		if lo.closed.Swap(true) {
			return nil
		}
		err := lo.l.Close()
		lo.mu.Lock() // wait for a Next in flight, or for loch_loader_stream
		s := lo.stream.Load()
		lo.mu.Unlock()
		if s != nil {
			s.close() // its feeder takes lo.mu
		}
		lo.mu.Lock()
		lo.alloc.releaseAll()
		lo.mu.Unlock()
		if lo.cache != nil {
			err = errors.Join(err, lo.cache.Close())
		}
		deleteHandle(h)
		return err
	})
}
