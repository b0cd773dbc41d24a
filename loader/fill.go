package loader

import (
	"context"
	"sync"
	"time"

	"github.com/lochdata/loch/loader/order"
)

// fillAhead makes a full shuffle on an object store with a chunk cache
// fill the cache ahead of its reads (see filler); tests and benchmarks
// turn it off for a baseline.
var fillAhead = true

// Bounds of a filler: at most fillConcurrency whole chunk objects are
// fetched at once, and no more than a quarter of the prefetch bytes are
// held by them (each fetch holds its object until the cache has it; see
// fillWorkers), counted in flight with the batches' reads.
const fillConcurrency = 8

// filler fetches the chunks a loader's epoch reads, whole, into the
// scans' chunk cache, in the order the epoch first touches them, a few at
// a time, ahead of the reads that need them (a full shuffle with a cache
// on an object store; see startFill). A read of a chunk the filler has
// listed waits for its fill (wait) and then takes its span from the
// cache, so that the epoch's requests are a few whole-object GETs in
// flight at a time, in need order, instead of a GET per chunk for every
// chunk the window's samples touch, all at once; a read of a chunk not
// listed yet fetches it itself (the same single fetch: the Scan's reads
// of one chunk wait for one another). Its goroutines stop with the
// loader's context.
type filler struct {
	mu   sync.Mutex
	done map[chunkRef]chan struct{} // closed once filled (or failed: the read then fetches itself)
	// pending counts the chunks listed and not filled yet; listed says
	// every chunk of the epoch is; took is the time from the loader's
	// start until both were so, 0 before (mu)
	pending int
	listed  bool
	took    time.Duration
	// held and peak are the estimated bytes of the fills under way, now
	// and at most (Loader.mu)
	held, peak int64
}

// startFill starts filling the cache ahead of a full shuffle's reads, on
// the loader's datasets that are not on this machine's disk, when the
// loader has a cache; it returns nil otherwise.
func (l *Loader) startFill() *filler {
	if !fillAhead || l.cfg.Cache == nil || l.cfg.Shuffle != order.ModeFull {
		return nil
	}
	remote := false
	for _, sc := range l.scans {
		remote = remote || !sc.Local()
	}
	if !remote {
		return nil
	}
	f := &filler{done: map[chunkRef]chan struct{}{}}
	queue := make(chan chunkRef, fillConcurrency)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(queue)
		l.fillOrder(f, queue)
	}()
	for range l.fillWorkers() {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for k := range queue {
				f.fill(l, k)
			}
		}()
	}
	return f
}

// fillWorkers is the number of chunks filled at once: fillConcurrency,
// fewer where that many of the largest chunk object would hold more than
// a quarter of the prefetch bytes, at least one.
func (l *Loader) fillWorkers() int {
	var largest int64 = 1
	for ds, sc := range l.scans {
		for _, cp := range l.cols[ds] {
			for _, id := range sc.Chunks(cp.col.UID) {
				largest = max(largest, sc.ChunkBytes(id))
			}
		}
	}
	return int(max(1, min(fillConcurrency, l.cfg.PrefetchBytes/4/largest)))
}

// fillOrder walks this loader's windows of the epoch in order and queues
// the chunks their samples read (whole or in part, not the media samples
// read by range in the fetchers) in the order they are first touched,
// listing a window's chunks before it queues any, so that the window's
// reads wait for the filler rather than fetch them themselves.
func (l *Loader) fillOrder(f *filler, queue chan<- chunkRef) {
	local := make([]bool, len(l.scans))
	for ds, sc := range l.scans {
		local[ds] = sc.Local()
	}
	w := 0
	var batch []chunkRef
	for bi, its := range l.plan.items() {
		for bi >= l.wins[w].end {
			if !f.queue(l.ctx, batch, queue) {
				return
			}
			batch, w = batch[:0], w+1
		}
		if w%l.cfg.Split.Count != l.cfg.Split.Index {
			continue
		}
		for _, it := range its {
			sc := l.scans[it.Dataset]
			if local[it.Dataset] {
				continue
			}
			row, err := sc.Locate(it.Pos)
			if err != nil {
				return // the scheduler reports it
			}
			for c, cp := range l.cols[it.Dataset] {
				slot := sc.Slot(row, cp.col.UID)
				if l.rangedSample(sc, c, slot) {
					continue
				}
				for p := range slot.Pieces() {
					if k := (chunkRef{it.Dataset, slot.Chunk(p)}); f.list(k) {
						batch = append(batch, k)
					}
				}
			}
		}
	}
	if f.queue(l.ctx, batch, queue) {
		f.mu.Lock()
		f.listed = true
		f.ended(l)
		f.mu.Unlock()
	}
}

// queue hands chunks to the fill workers in order; false: ctx ended.
func (f *filler) queue(ctx context.Context, ks []chunkRef, queue chan<- chunkRef) bool {
	for _, k := range ks {
		select {
		case queue <- k:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// list records chunk k as to be filled and reports whether it is new.
func (f *filler) list(k chunkRef) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.done[k]; ok {
		return false
	}
	f.done[k] = make(chan struct{})
	f.pending++
	return true
}

// fill fetches chunk k into the cache and marks it filled. While it
// fetches, the chunk's object counts as in flight (against the prefetch
// bytes, like the reads of admitted batches). A failed fill is left to
// the reads, which fetch the chunk themselves and report the error with
// the row it stops.
func (f *filler) fill(l *Loader, k chunkRef) {
	size := l.scans[k.ds].ChunkBytes(k.id)
	l.mu.Lock()
	l.inflight += size
	l.peak = max(l.peak, l.inflight)
	f.held += size
	f.peak = max(f.peak, f.held)
	l.mu.Unlock()
	n, err := l.scans[k.ds].Fill(l.ctx, k.id)
	if err == nil && n > 0 {
		l.fetched.Add(n)
		l.nchunks.Add(1)
	}
	l.mu.Lock()
	l.inflight -= size
	f.held -= size
	l.cond.Broadcast()
	l.mu.Unlock()
	f.mu.Lock()
	f.pending--
	f.ended(l)
	close(f.done[k])
	f.mu.Unlock()
}

// ended records the time the fill took once every chunk of the epoch is
// listed and filled (f.mu held).
func (f *filler) ended(l *Loader) {
	if f.listed && f.pending == 0 && f.took == 0 {
		f.took = time.Since(l.started)
	}
}

// fillTime is the time the fill took, 0 until it has ended.
func (f *filler) fillTime() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.took
}

// wait waits until chunk k is filled when the filler has listed it, or
// until ctx ends.
func (f *filler) wait(ctx context.Context, k chunkRef) {
	f.mu.Lock()
	ch := f.done[k]
	f.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}
