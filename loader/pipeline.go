package loader

import (
	"cmp"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/transform"
)

// batchJob is a batch between scheduling and collation: its rows, where
// their samples live and the reads they need.
type batchJob struct {
	index     int
	positions []int64
	rowIDs    []uint64
	datasets  []int             // for mixtures
	slots     [][]loch.Slot     // [column][sample]
	ranged    [][]bool          // [column][sample]: read by range and transformed in a fetcher (rangedSample)
	reads     [][][]*chunkEntry // [column][sample]: the reads of the sample's slot, or its ranged entry
	entries   []*chunkEntry     // distinct reads the batch holds a use of
}

func (l *Loader) start() {
	jobs := make(chan *batchJob, l.cfg.PrefetchBatches)
	// FetchConcurrency long-lived fetchers: a goroutine per read cost full
	// shuffle (a read per sample) about a tenth of its throughput.
	// The reads of admitted batches come first; those read ahead
	// (readAhead) wait in a queue of their own, taken when none is waiting.
	fetches := make(chan *chunkEntry)
	ahead := make(chan *chunkEntry, l.cfg.FetchConcurrency)
	l.aheadQ = ahead
	for range l.cfg.FetchConcurrency {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.fetcher(fetches, ahead)
		}()
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(jobs)
		defer close(fetches)
		defer close(ahead)
		l.schedule(jobs, fetches)
	}()
	for w := 0; w < l.cfg.Workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for job := range jobs {
				l.collate(job)
			}
		}()
	}
}

// fetcher performs reads until both queues are closed and drained: an
// admitted batch's reads first, then those read ahead. Each read that
// ends wakes the scheduler (fetch), which may have more to read ahead.
func (l *Loader) fetcher(fetches, ahead <-chan *chunkEntry) {
	for fetches != nil || ahead != nil {
		var e *chunkEntry
		ok := false
		select {
		case e, ok = <-fetches:
		default:
			select {
			case e, ok = <-fetches:
			case e, ok = <-ahead:
				if !ok {
					ahead = nil
					continue
				}
			}
		}
		if !ok {
			fetches = nil
			continue
		}
		l.fetch(e)
	}
}

// fail records the first error and wakes the consumer.
func (l *Loader) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// schedule walks the plan in order a window at a time, skipping the
// windows of other splits: it plans the reads of each window's batches,
// then admits them one by one when the prefetch bounds allow, handing the
// fetches each needs to the fetchers and the batch to the collators.
// Once a window's first batches are admitted it plans the next window's
// reads, which are started ahead, after the rest of the window's, within
// the prefetch bytes (readAhead), so that a window's first batch does not
// wait for its reads.
//
// On a store on this machine, the loader's first window is read in
// pieces of about a segment (splitFirstWindow), and in a block shuffle its
// first batch is planned and admitted alone, before the rest of its
// window (firstBatchAlone).
//
// Not on an object store, where each read is a request: there the extra
// requests cost more throughput than they save of the first batch's wait
// when a window holds much of the dataset. On MinIO on the same two cores
// (20,000 rows of lz4 images, 2 epochs; bench/RESULTS.md, issue 17),
// whole runs gave 54,000-59,000 samples/s through ds.pytorch(), the
// split window 45,000-50,000 and the first batch alone besides
// 33,000-39,000, for a first batch at 152-200, 130-148 and 127-161 ms.
func (l *Loader) schedule(jobs chan<- *batchJob, fetches chan<- *chunkEntry) {
	next, stop := iter.Pull2(l.plan.items())
	defer stop()
	w := 0 // the window of the batch at hand
	// window returns the next window of this loader's split: its batches'
	// indices in the plan and their items (none at the end).
	window := func() (index []int, items [][]order.Item) {
		for {
			bi, its, ok := next()
			if !ok {
				return index, items
			}
			for bi >= l.wins[w].end {
				w++
			}
			if w%l.cfg.Split.Count != l.cfg.Split.Index {
				continue // another split's window
			}
			index, items = append(index, bi), append(items, slices.Clone(its))
			if bi == l.wins[w].end-1 {
				return index, items
			}
		}
	}
	k := 0 // l.mine index of the next batch to admit
	admit := func(batch []*batchJob) bool {
		for _, job := range batch {
			if !l.admit(job, k, fetches, jobs) {
				return false
			}
			k++
		}
		return true
	}
	locate := func(index []int, items [][]order.Item, from int, split bool) []*batchJob {
		batch, err := l.locate(index, items, from, split)
		if err != nil {
			l.fail(err)
		}
		return batch
	}
	index, items := window()
	if len(index) == 0 {
		return
	}
	first, from := !slices.ContainsFunc(l.scans, func(sc *loch.Scan) bool { return !sc.Local() }), 0
	if first && firstBatchAlone && l.cfg.Shuffle == order.ModeBlock && len(index) > 1 {
		batch := locate(index[:1], items[:1], 0, false)
		if batch == nil || !admit(batch) {
			return
		}
		from = 1
	}
	cur := locate(index, items, from, first)
	for cur != nil {
		head := min(len(cur), l.cfg.PrefetchBatches)
		if !admit(cur[:head]) {
			return
		}
		var ahead []*batchJob
		if index, items := window(); len(index) > 0 {
			if ahead = locate(index, items, 0, false); ahead == nil {
				return
			}
			if readAhead {
				// The rest of this window's reads first: in a full
				// shuffle a window's runs of samples are started by the
				// first batch that needs them, all through the window.
				queue := make([]*batchJob, 0, len(cur)-head+len(ahead))
				queue = append(append(queue, cur[head:]...), ahead...)
				l.mu.Lock()
				l.ahead, l.aheadAt = queue, 0
				l.mu.Unlock()
			}
		}
		if !admit(cur[head:]) {
			return
		}
		cur = ahead
	}
}

// firstBatchAlone makes a loader plan the reads of its first batch alone,
// then those of the rest of its first window: so that the first batch
// waits neither for the plan of the whole window (5-6 ms on two cores for
// the 11,000 rows of the benchmark set's first window) nor for the reads
// of the segments it shares with other batches, only for its own samples
// (one small read per run of them: in a block shuffle, a sample or two
// from each of about 50 segments, each read with the checksum blocks that
// hold it). The rest of the window reads those samples again with their
// segments: a checksum block or two (64 KiB each) per run, decoded twice
// an epoch. Only on a store on this machine (see schedule), and only in a
// block shuffle, where a batch's rows share their segments with the
// window's other batches: in order ("none") the first batch's rows are
// the window's first segments' (with the split window, its first reads),
// and a full shuffle reads each sample alone anyway, so reading them
// alone first would only read them twice (and hold both reads at once).
// Tests and benchmarks turn it off for a baseline.
var firstBatchAlone = true

// readAhead makes a loader start the reads of the batches of its window
// at hand and of the next before they are admitted (see Loader.readAhead);
// tests and benchmarks turn it off for a baseline.
var readAhead = true

// readAhead queues the reads of the batches not admitted yet (l.ahead:
// the rest of the window at hand, then the next window) for the fetchers
// (l.aheadQ), in the order their batches come, marked as started and
// held, and reports whether it queued any (l.mu held). It never waits for
// room in the queue, so that the batches of the window at hand are
// admitted meanwhile; each read a fetcher ends wakes the scheduler to
// queue more.
//
// It reads ahead while the in-flight bytes, with room for twice
// PrefetchBatches of the largest batch collated so far, stay within the
// budget that admission keeps (PrefetchBytes less the bytes kept), so
// that those batches are never held back by the reads ahead either; and
// not before the first batch is collated (which sizes the room). In a
// block shuffle a window's first batch takes its rows from segments all
// over the window, so without reading ahead it waits for most of the
// window's reads at each window's start.
func (l *Loader) readAhead() bool {
	if l.batchMax == 0 {
		return false
	}
	limit := l.cfg.PrefetchBytes - l.keepMax - 2*int64(l.cfg.PrefetchBatches)*l.batchMax
	started := false
	for len(l.ahead) > 0 {
		job := l.ahead[0]
		if l.aheadAt >= len(job.entries) {
			l.ahead, l.aheadAt = l.ahead[1:], 0
			continue
		}
		e := job.entries[l.aheadAt]
		if e.held || e.ready != nil {
			l.aheadAt++ // started, or read and kept
			continue
		}
		size := l.estimate(e)
		if l.inflight+size > limit {
			break
		}
		e.ready, e.size = make(chan struct{}), size
		select {
		case l.aheadQ <- e:
		default: // the queue is full
			e.ready, e.size = nil, 0
			return started
		}
		e.held, started = true, true
		if _, ok := l.chunks[e.key]; !ok {
			l.chunks[e.key] = e
		}
		l.inflight += size
		l.peak = max(l.peak, l.inflight)
		l.aheadAt++
	}
	return started
}

// estimate is the memory a read not started yet will hold.
func (l *Loader) estimate(e *chunkEntry) int64 {
	if e.part != nil {
		return l.ranged[e.key.media-1]
	}
	return l.scans[e.key.ds].Estimate(e.key.read)
}

// admit waits until the prefetch bounds allow job (the k-th batch this
// loader delivers), hands the fetches it needs that are not fetched or
// under way to the fetchers (waiting for one to be free), and hands the
// job to the collators. While it waits it starts the reads of later
// batches that the bounds allow (readAhead). It reports false when the
// loader stops.
func (l *Loader) admit(job *batchJob, k int, fetches chan<- *chunkEntry, jobs chan<- *batchJob) bool {
	l.mu.Lock()
	for l.ctx.Err() == nil && l.err == nil && k > l.k &&
		(k-l.k >= l.cfg.PrefetchBatches || l.inflight >= l.cfg.PrefetchBytes-l.keepMax) {
		if !l.readAhead() {
			l.cond.Wait()
		}
	}
	if l.ctx.Err() != nil || l.err != nil {
		l.mu.Unlock()
		return false
	}
	var start []*chunkEntry
	for _, e := range job.entries {
		e.pending--
		if !e.held {
			// New, kept from earlier batches, or forgotten.
			if e.ready == nil {
				e.ready = make(chan struct{})
				e.size = l.estimate(e)
				start = append(start, e)
			}
			l.kept.Remove(e.key)
			if _, ok := l.chunks[e.key]; !ok {
				l.chunks[e.key] = e
			}
			e.held = true
			l.inflight += e.size
		}
		e.users++
	}
	l.peak = max(l.peak, l.inflight)
	l.mu.Unlock()
	for _, e := range start {
		select {
		case fetches <- e:
		case <-l.ctx.Done():
			return false
		}
	}
	select {
	case jobs <- job:
		return true
	case <-l.ctx.Done():
		return false
	}
}

// chunkRef names a chunk of one of the loader's datasets.
type chunkRef struct {
	ds int
	id loch.ChunkID
}

// sampleRun is a run [lo, hi) of samples of one chunk that a window
// takes, read at once.
type sampleRun struct {
	lo, hi int
	read   loch.Read
	e      *chunkEntry // its entry (locate)
}

// locate resolves the batches of one window (their indices in the plan
// and their items) to the reads their samples need: in each column, the
// samples the window takes from each chunk, in runs of consecutive
// samples, one read per run (the engine plans the read of a whole chunk
// where reading by range would not pay), cut into reads of about a
// segment in the loader's first window (first; see appendRuns). It
// returns the jobs of the batches from index from on: the runs count the
// samples of those before too (planned already, see firstBatchAlone), so
// that they do not break the runs of the others. The entries are
// registered under l.mu.
func (l *Loader) locate(index []int, items [][]order.Item, from int, first bool) ([]*batchJob, error) {
	ncols := len(l.cols[0])
	jobs := make([]*batchJob, len(items))
	// The chunks the window takes whole samples of, numbered as met, with
	// the samples it takes of each (need); chunkOf[b][c*n+i] is the number
	// of the chunk of job b's sample i of column c (of n).
	ids := map[chunkRef]int32{}
	var refs []chunkRef
	var need [][]int
	chunkOf := make([][]int32, len(items))
	for b, its := range items {
		job := newJob(index[b], len(its), ncols, l.mixed, len(l.ranged) > 0)
		n := len(its)
		chunkOf[b] = make([]int32, ncols*n)
		for i, it := range its {
			sc := l.scans[it.Dataset]
			row, err := sc.Locate(it.Pos)
			if err != nil {
				return nil, err
			}
			job.positions[i], job.rowIDs[i] = it.Pos, row.ID
			if job.datasets != nil {
				job.datasets[i] = it.Dataset
			}
			for c, cp := range l.cols[it.Dataset] {
				slot := sc.Slot(row, cp.col.UID)
				job.slots[c][i] = slot
				if l.rangedSample(sc, c, slot) {
					job.ranged[c][i] = true
					continue
				}
				if slot.Pieces() == 1 {
					k := chunkRef{it.Dataset, slot.Chunk(0)}
					id, ok := ids[k]
					if !ok {
						id = int32(len(refs))
						ids[k] = id
						refs, need = append(refs, k), append(need, nil)
					}
					need[id] = append(need[id], slot.Index())
					chunkOf[b][c*n+i] = id
				}
			}
		}
		jobs[b] = job
	}
	runs := make([][]sampleRun, len(need))
	for id, idx := range need {
		slices.Sort(idx)
		idx = slices.Compact(idx)
		var rs []sampleRun
		for a := 0; a < len(idx); {
			b := a + 1
			for b < len(idx) && idx[b] == idx[b-1]+1 {
				b++
			}
			lo, hi := idx[a], idx[b-1]+1
			rs = l.appendRuns(rs, refs[id], lo, hi, first && splitFirstWindow)
			a = b
		}
		runs[id] = rs
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for b, job := range jobs[from:] {
		b += from
		l.located++ // this job's mark on the entries it holds
		add := func(c, i int, e *chunkEntry) {
			job.reads[c][i] = append(job.reads[c][i], e)
			if e.mark != l.located {
				e.mark = l.located
				e.pending++
				job.entries = append(job.entries, e)
			}
		}
		n := len(job.positions)
		for c := range ncols {
			for i, slot := range job.slots[c] {
				ds := job.dataset(i)
				switch {
				case job.ranged != nil && job.ranged[c][i]:
					e := l.entry(entryKey{ds: ds, media: c + 1, pos: job.positions[i]})
					if e.part == nil {
						e.part = &rangedPart{slot: slot, rowID: job.rowIDs[i], col: c}
					}
					add(c, i, e)
				case slot.Pieces() == 1:
					rs := runs[chunkOf[b][c*n+i]]
					j, _ := slices.BinarySearchFunc(rs, slot.Index(), func(r sampleRun, x int) int { return cmp.Compare(r.hi-1, x) })
					if rs[j].e == nil { // its entry, looked up once
						rs[j].e = l.entry(entryKey{ds: ds, read: rs[j].read})
					}
					add(c, i, rs[j].e)
				case slot.Pieces() > 1:
					for p := range slot.Pieces() {
						add(c, i, l.entry(entryKey{ds: ds, read: loch.Read{Chunk: slot.Chunk(p)}}))
					}
				}
			}
		}
	}
	return jobs[from:], nil
}

// splitFirstWindow makes the reads of a loader's first window about a
// segment each (see appendRuns), on a store on this machine (see
// schedule); tests and benchmarks turn it off for a baseline.
var splitFirstWindow = true

// appendRuns appends the run [lo, hi) of chunk k's samples to rs: one
// read, or, when split is set and the read would hold more than two
// segments' bytes, reads of at most about a segment each
// (loch.SegmentBytes; the estimate of a whole chunk counts its stored
// bytes too, so such reads may be smaller).
//
// The first window of a loader is split so: a batch of 64 rows drawn from
// a window of 128 segments takes its rows from about 50 of them, so the
// first batch of an epoch waits for those reads, and a run that merges a
// chunk's neighbouring segments of the window into one read makes it wait
// for most of the window instead (bench/RESULTS.md, issue 17: 28 ms of a
// 77 ms epoch on two cores, 18 ms with the window's reads split). Later
// windows are read while earlier ones are consumed, in fewer, larger
// reads.
func (l *Loader) appendRuns(rs []sampleRun, k chunkRef, lo, hi int, split bool) []sampleRun {
	sc := l.scans[k.ds]
	read := sc.Span(k.id, lo, hi)
	if split && hi-lo > 1 {
		if est := sc.Estimate(read); est > 2*loch.SegmentBytes {
			n := int((est + loch.SegmentBytes - 1) / loch.SegmentBytes)
			step := (hi - lo + n - 1) / n
			for a := lo; a < hi; a += step {
				b := min(a+step, hi)
				rs = append(rs, sampleRun{lo: a, hi: b, read: sc.Span(k.id, a, b)})
			}
			return rs
		}
	}
	return append(rs, sampleRun{lo: lo, hi: hi, read: read})
}

// newJob returns a job for n rows of ncols columns.
func newJob(index, n, ncols int, mixed, ranged bool) *batchJob {
	job := &batchJob{index: index, positions: make([]int64, n), rowIDs: make([]uint64, n),
		slots: make([][]loch.Slot, ncols), reads: make([][][]*chunkEntry, ncols)}
	if mixed {
		job.datasets = make([]int, n)
	}
	if ranged {
		job.ranged = make([][]bool, ncols)
	}
	// Most samples need one read: their reads share one backing array,
	// each with room for one (a sample in pieces grows its own).
	one := make([]*chunkEntry, ncols*n)
	for c := range ncols {
		job.slots[c] = make([]loch.Slot, n)
		job.reads[c] = make([][]*chunkEntry, n)
		for i := range n {
			k := c*n + i
			job.reads[c][i] = one[k : k : k+1]
		}
		if ranged {
			job.ranged[c] = make([]bool, n)
		}
	}
	return job
}

// dataset returns the dataset of row i.
func (job *batchJob) dataset(i int) int {
	if job.datasets == nil {
		return 0
	}
	return job.datasets[i]
}

// entry returns the table entry of a read: the one in use, else the one
// kept from earlier batches, else a new idle one (l.mu held).
func (l *Loader) entry(k entryKey) *chunkEntry {
	e, ok := l.chunks[k]
	if !ok {
		if e, ok = l.kept.Get(k); ok {
			l.kept.Remove(k)
		} else {
			e = &chunkEntry{key: k}
		}
		l.chunks[k] = e
	}
	return e
}

// fetch performs one read.
func (l *Loader) fetch(e *chunkEntry) {
	defer close(e.ready)
	if e.part != nil {
		l.fetchPart(e)
		return
	}
	f, err := l.scans[e.key.ds].Fetch(l.ctx, e.key.read)
	if err != nil {
		e.err = err
		return
	}
	e.f = f
	l.fetchNs.Add(int64(f.ReadTime))
	l.decodeNs.Add(int64(f.DecodeTime))
	l.fetched.Add(f.Bytes)
	if f.Cached {
		l.hits.Add(1)
	} else if f.Whole() {
		l.nchunks.Add(1)
	}
	// Correct the estimate made at admission, and wake the scheduler: the
	// bounds may allow more now, and the read-ahead queue has room.
	l.mu.Lock()
	l.inflight += f.Mem() - e.size
	e.size = f.Mem()
	l.cond.Broadcast()
	l.mu.Unlock()
}

// forget drops an idle entry's data, handing its read buffer back for
// later reads (no batch aliases it: collation copies every sample), so
// that the next batch that needs it fetches it again (l.mu held).
func (e *chunkEntry) forget() {
	if e.f != nil {
		e.f.Recycle()
	}
	e.ready, e.f, e.out, e.err, e.size, e.held = nil, nil, value{}, nil, 0, false
}

// collate waits for a batch's chunks, builds its tensors and publishes it.
func (l *Loader) collate(job *batchJob) {
	for _, e := range job.entries {
		select {
		case <-e.ready:
		case <-l.ctx.Done():
			return
		}
	}
	t0 := time.Now()
	b, err := l.build(job)
	l.decodeNs.Add(int64(time.Since(t0)))
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range job.entries {
		e.users--
		if e.users == 0 && e.pending == 0 {
			// No batch admitted or located needs it any more. (One that
			// a located batch needs stays held for it.)
			if l.chunks[e.key] == e {
				delete(l.chunks, e.key)
			}
			e.held = false
			l.inflight -= e.size
			// Kept for later batches that read it again (a small column's
			// chunk, a run cut by a window's end), within keepMax bytes;
			// else forgotten, so that the jobs located but not admitted
			// yet that name it do not keep its memory (they fetch it
			// again if admitted).
			if e.err != nil || e.part != nil || !l.kept.Add(e.key, e, e.size) {
				e.forget()
			}
		}
	}
	if err != nil {
		l.failed[job.index] = err
		l.cond.Broadcast()
		return
	}
	l.ready[job.index] = b
	n := batchBytes(b)
	l.inflight += n
	l.batchMax = max(l.batchMax, n)
	l.peak = max(l.peak, l.inflight)
	l.batches.Add(1)
	l.samples.Add(int64(b.Len()))
	l.cond.Broadcast()
}

// sample returns row i's sample of column c as stored (Data aliases the
// fetched chunk), or the error of a read it needs.
func (l *Loader) sample(job *batchJob, c, i int) (loch.Sample, error) {
	slot := job.slots[c][i]
	if slot.Null() {
		return loch.Sample{Null: true}, nil
	}
	reads := job.reads[c][i]
	got := make([]*loch.Fetched, len(reads))
	for p, e := range reads {
		if e.err != nil {
			return loch.Sample{}, e.err
		}
		got[p] = e.f
	}
	ds := 0
	if job.datasets != nil {
		ds = job.datasets[i]
	}
	return l.scans[ds].Sample(slot, got)
}

// value is one sample on its way into a batch: as stored (still encoded
// when Encoding is set: it is decoded straight into the batch buffer), or
// as a transform left it.
type value struct {
	s     loch.Sample
	dtype schema.DType
}

// build collates a batch. A row whose sample fails to read, transform or
// decode is skipped (with SkipBadSamples) or fails the batch with an error
// naming the row, the column and the object.
func (l *Loader) build(job *batchJob) (*Batch, error) {
	cols := l.cols[0] // names and dtypes agree across datasets
	vals := make([][]value, len(cols))
	bad := make([]bool, len(job.positions))
	for c, cp := range cols {
		vals[c] = make([]value, len(job.positions))
		for i := range job.positions {
			if job.ranged != nil && job.ranged[c][i] {
				e := job.reads[c][i][0]
				if err := e.err; err != nil {
					if err := l.badRow(job, i, cp.name, err); err != nil {
						return nil, err
					}
					bad[i] = true
					continue
				}
				vals[c][i] = e.out
				continue
			}
			s, err := l.sample(job, c, i)
			dtype := cp.col.DType
			if tf, ok := l.transforms[c]; ok && err == nil && !s.Null {
				in := transform.Image{Shape: s.Shape, DType: dtype, Data: s.Data, Encoded: string(s.Encoding)}
				if s, dtype, err = l.transform(tf, in, job.rowIDs[i]); err != nil && cp.col.SampleCompression.Media() {
					sc := l.scans[job.dataset(i)]
					err = fmt.Errorf("%s chunk %s: %w", sc.URL(), sc.ChunkKey(job.slots[c][i].Chunk(0)), err)
				}
			}
			if err != nil {
				if err := l.badRow(job, i, cp.name, err); err != nil {
					return nil, err
				}
				bad[i] = true
				continue
			}
			vals[c][i] = value{s: s, dtype: dtype}
		}
	}
	for {
		b, badRow, err := l.collateRows(job, vals, bad)
		if badRow < 0 {
			return b, err
		}
		// A sample failed to decode: collate again without its row.
		l.Release(b)
		bad[badRow] = true
	}
}

// badRow reports a row whose sample failed: nil when the row is to be
// skipped (recorded in Stats), else the batch's error.
func (l *Loader) badRow(job *batchJob, i int, column string, err error) error {
	if !l.cfg.SkipBadSamples {
		return fmt.Errorf("loader: row id %d (position %d), column %q: %w", job.rowIDs[i], job.positions[i], column, err)
	}
	return nil
}

// collateRows builds the batch of the rows not marked bad. When a sample
// fails to decode and bad samples are skipped, it returns that row's index
// (and a batch to release); otherwise badRow is -1.
func (l *Loader) collateRows(job *batchJob, vals [][]value, bad []bool) (b *Batch, badRow int, err error) {
	keep := make([]int, 0, len(job.positions))
	var skipped []uint64
	for i := range job.positions {
		if bad[i] {
			skipped = append(skipped, job.rowIDs[i])
		} else {
			keep = append(keep, i)
		}
	}
	b = &Batch{Epoch: l.cfg.Epoch, Index: l.base + job.index, Columns: map[string]*Collated{}}
	for _, i := range keep {
		b.Positions = append(b.Positions, job.positions[i])
		b.RowIDs = append(b.RowIDs, job.rowIDs[i])
		if job.datasets != nil {
			b.Datasets = append(b.Datasets, job.datasets[i])
		}
	}
	for c, cp := range l.cols[0] {
		t, i, err := l.tensor(cp, vals[c], keep, b.RowIDs)
		b.Columns[cp.name] = t
		if err != nil && i >= 0 {
			if err := l.badRow(job, i, cp.name, err); err != nil {
				return nil, -1, err
			}
			return b, i, nil
		}
		if err != nil {
			return nil, -1, err
		}
	}
	for i := range l.cfg.Joined {
		c := &l.cfg.Joined[i]
		b.Columns[c.Name] = l.joined(c, b.RowIDs)
	}
	if len(skipped) > 0 {
		l.mu.Lock()
		l.skipped = append(l.skipped, skipped...)
		l.mu.Unlock()
	}
	return b, -1, nil
}

// tensor collates one column of the kept rows. A sample that fails to
// decode is reported with its row index; other errors with -1.
func (l *Loader) tensor(cp colPlan, vals []value, keep []int, rowIDs []uint64) (*Collated, int, error) {
	t := &Collated{DType: cp.col.DType}
	n := len(keep)
	anyNull := false
	for _, i := range keep {
		if v := vals[i]; v.s.Null {
			anyNull = true
		} else {
			t.DType = v.dtype // a transform may change it (to_float)
		}
	}
	if anyNull {
		t.Null = make([]bool, n)
		for k, i := range keep {
			t.Null[k] = vals[i].s.Null
		}
	}
	if cp.col.DType.Variable() || (l.cfg.RaggedAsList && !cp.col.Shape.Fixed()) {
		bad, err := l.items(t, cp, vals, keep)
		return t, bad, err
	}
	bad, err := l.stack(t, cp, vals, keep, anyNull, rowIDs)
	return t, bad, err
}

// items fills t with the kept samples as a list (Items, and Shapes for
// tensors), each decoded into its own buffer.
func (l *Loader) items(t *Collated, cp colPlan, vals []value, keep []int) (int, error) {
	n := len(keep)
	t.Shape = []int{n}
	t.Items = make([][]byte, n)
	if !cp.col.DType.Variable() {
		t.Shapes = make([][]int, n)
	}
	for k, i := range keep {
		v := vals[i]
		if v.s.Null {
			continue
		}
		s, err := v.s.Decode()
		if err != nil {
			return i, err
		}
		t.Items[k] = s.Data
		if t.Shapes != nil {
			t.Shapes[k] = s.Shape
		}
		l.decoded.Add(int64(len(s.Data)))
	}
	return -1, nil
}

// stack fills t with the kept samples stacked in one buffer from the
// allocator, zero-padded to the largest shape when they differ (Shapes then
// records each one). Samples are decoded straight into the buffer.
func (l *Loader) stack(t *Collated, cp colPlan, vals []value, keep []int, anyNull bool, rowIDs []uint64) (int, error) {
	n := len(keep)
	// The batch shape: the elementwise max of the samples' shapes.
	var maxShape []int
	ragged := false
	for _, i := range keep {
		v := vals[i]
		if v.s.Null {
			continue
		}
		if err := v.s.CheckDecode(); err != nil { // before the batch is allocated
			return i, err
		}
		if maxShape == nil {
			maxShape = append([]int(nil), v.s.Shape...)
			continue
		}
		if len(v.s.Shape) != len(maxShape) {
			return -1, fmt.Errorf("loader: column %q: samples with %d and %d dimensions in one batch (rows %v); such columns can only be read row by row", cp.name, len(maxShape), len(v.s.Shape), rowIDs)
		}
		for d := range maxShape {
			if v.s.Shape[d] != maxShape[d] {
				ragged = true
				maxShape[d] = max(maxShape[d], v.s.Shape[d])
			}
		}
	}
	if maxShape == nil {
		maxShape = nullShape(cp.col)
	}
	size := t.DType.Size()
	per := schema.NumElements(maxShape) * size
	t.Shape = append([]int{n}, maxShape...)
	t.Data = l.cfg.Allocator.Alloc(n * per)
	if ragged || anyNull {
		clear(t.Data)
	}
	if ragged {
		t.Shapes = make([][]int, n)
	}
	for k, i := range keep {
		v := vals[i]
		if ragged {
			t.Shapes[k] = v.s.Shape
			if v.s.Null {
				t.Shapes[k] = make([]int, len(maxShape))
			}
		}
		if v.s.Null {
			continue
		}
		dst := t.Data[k*per : (k+1)*per]
		if ragged {
			// Decode aside, then lay out with padding.
			s, err := v.s.Decode()
			if err != nil {
				return i, err
			}
			padCopy(dst, s.Data, s.Shape, maxShape, size)
		} else if _, err := v.s.DecodeInto(dst); err != nil {
			return i, err
		}
		l.decoded.Add(int64(v.s.DecodedLen()))
	}
	return -1, nil
}

// transform applies a column's transform pipeline to one stored sample.
// The pipeline's randomness comes from (seed, epoch, row id): the same row
// gets the same crop and flip in the same epoch whatever the concurrency.
func (l *Loader) transform(p transform.Pipeline, in transform.Image, rowID uint64) (loch.Sample, schema.DType, error) {
	var rng *rand.Rand
	if p.Random() {
		rng = rand.New(rand.NewPCG(l.cfg.Seed^(uint64(l.cfg.Epoch)*0x9e3779b97f4a7c15), rowID))
	}
	out, err := p.Apply(in, rng, nil)
	if err != nil {
		return loch.Sample{}, 0, err
	}
	// Shape is in layout order: [C, H, W] after chw.
	return loch.Sample{Shape: out.Shape, Data: out.Data}, out.DType, nil
}

// nullShape is the per-sample shape of an all-null column in a batch.
func nullShape(c schema.Column) []int {
	out := make([]int, len(c.Shape))
	for i, d := range c.Shape {
		out[i] = max(d, 0)
	}
	return out
}

// padCopy copies a C-contiguous sample of shape src into dst, laid out with
// shape dstShape (each dimension >= src's), leaving the padding untouched.
func padCopy(dst, data []byte, src, dstShape []int, size int) {
	if len(src) == 0 {
		copy(dst, data)
		return
	}
	inner := size
	for _, d := range src[1:] {
		inner *= d
	}
	dstInner := size
	for _, d := range dstShape[1:] {
		dstInner *= d
	}
	for r := 0; r < src[0]; r++ {
		part := data[r*inner : (r+1)*inner]
		out := dst[r*dstInner : (r+1)*dstInner]
		if len(src) == 1 {
			copy(out, part)
		} else {
			padCopy(out, part, src[1:], dstShape[1:], size)
		}
	}
}

// rangedPart is a media sample (a video clip's, an audio segment's) that a
// fetcher reads by range and transforms as it reads it.
type rangedPart struct {
	slot  loch.Slot
	rowID uint64
	col   int
}

// rangedSample reports whether column c's sample at slot is read by range
// and transformed in a fetcher: the column's pipeline decodes part of it
// (a clip step first, or a segment in its first audio steps:
// transform.Pipeline.DecodesPart) and the sample is larger than
// loch.MediaRangeMin (judged by its chunk's mean sample, which the
// snapshot gives without a read; a sample split across chunks always is).
// Smaller ones cost no more bytes fetched whole, in one request shared
// with their neighbours.
func (l *Loader) rangedSample(sc *loch.Scan, c int, slot loch.Slot) bool {
	if _, ok := l.ranged[c]; !ok || slot.Null() {
		return false
	}
	return slot.Pieces() > 1 || sc.MeanSampleBytes(slot) > rangeMin
}

// rangeMin is loch.MediaRangeMin; the benchmarks raise it to compare
// whole reads on the same data.
var rangeMin int64 = loch.MediaRangeMin

// rangedEstimateUnknown is the memory budgeted for a decoded clip or
// segment whose size depends on frame sizes or channels the column's
// statistics do not give; the fetch corrects it.
const rangedEstimateUnknown = 4 << 20

// rangedEstimate is the memory one of column col's clips or audio
// segments holds decoded through p, from its largest sample's shape when
// the statistics give it.
func rangedEstimate(p transform.Pipeline, col schema.Column) int64 {
	shape := []int{-1, -1, -1, 3}
	if col.SampleCompression == schema.AudioCompression {
		shape = []int{-1, -1}
	}
	if len(col.MaxShape) == len(shape) {
		shape = col.MaxShape
	}
	out, err := p.Out(transform.Image{Shape: shape, DType: col.DType, Encoded: string(col.SampleCompression)})
	if n := out.Size(); err == nil && n >= 0 {
		return int64(n)
	}
	return rangedEstimateUnknown
}

// fetchPart reads a media sample by range (its chunk headers, then the
// byte ranges the decoder asks for) and applies its column's pipeline as
// it reads. Errors name the chunk.
func (l *Loader) fetchPart(e *chunkEntry) {
	t0 := time.Now()
	sc := l.scans[e.key.ds]
	m, err := sc.OpenMedia(l.ctx, e.part.slot)
	if err != nil {
		e.err = err
		return
	}
	col := l.cols[e.key.ds][e.part.col].col
	in := transform.Image{Shape: m.Shape, DType: col.DType, Encoded: string(col.SampleCompression),
		Source: io.NewSectionReader(m, 0, m.Bytes)}
	s, dtype, err := l.transform(l.transforms[e.part.col], in, e.part.rowID)
	read := m.ReadTime()
	l.fetchNs.Add(int64(read))
	l.decodeNs.Add(int64(time.Since(t0) - read))
	l.fetched.Add(m.BytesRead())
	if err != nil {
		e.err = fmt.Errorf("%s chunk %s: %w", sc.URL(), m.Key(), err)
		return
	}
	e.out = value{s: s, dtype: dtype}
	l.mu.Lock()
	l.inflight += int64(cap(s.Data)) - e.size
	e.size = int64(cap(s.Data))
	l.cond.Broadcast()
	l.mu.Unlock()
}
