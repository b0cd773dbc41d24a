package loader

import (
	"iter"
	"slices"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
)

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
	wins := &windowIter{l: l, next: next}
	window := wins.window
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
				l.setAhead(cur[head:], ahead)
			}
		}
		if !admit(cur[head:]) {
			return
		}
		cur = ahead
	}
}

// windowIter walks the windows of a loader's split through the plan's
// batches (next, from iter.Pull2).
type windowIter struct {
	l    *Loader
	next func() (int, []order.Item, bool)
	w    int // the window of the batch at hand
}

// window returns the next window of this loader's split: its batches'
// indices in the plan and their items (none at the end).
func (wi *windowIter) window() (index []int, items [][]order.Item) {
	l := wi.l
	for {
		bi, its, ok := wi.next()
		if !ok {
			return index, items
		}
		for bi >= l.wins[wi.w].end {
			wi.w++
		}
		if wi.w%l.cfg.Split.Count != l.cfg.Split.Index {
			continue // another split's window
		}
		index, items = append(index, bi), append(items, slices.Clone(its))
		if bi == l.wins[wi.w].end-1 {
			return index, items
		}
	}
}

// setAhead queues the reads of rest, the jobs of this window not yet
// admitted, then those of the next window's jobs (ahead) to be started
// ahead of their batches: in a full shuffle a window's runs of samples
// are started by the first batch that needs them, all through the window.
func (l *Loader) setAhead(rest, ahead []*batchJob) {
	queue := make([]*batchJob, 0, len(rest)+len(ahead))
	queue = append(append(queue, rest...), ahead...)
	l.mu.Lock()
	l.ahead, l.aheadAt = queue, 0
	l.mu.Unlock()
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
	jobs, wc, err := l.slotJobs(index, items)
	if err != nil {
		return nil, err
	}
	runs := l.sampleRuns(wc, first)
	l.mu.Lock()
	defer l.mu.Unlock()
	for b, job := range jobs[from:] {
		l.attach(job, runs, wc.chunkOf[b+from])
	}
	return jobs[from:], nil
}

// windowChunks are the chunks a window takes whole samples of, numbered
// as met, with the samples it takes of each (need); chunkOf[b][c*n+i] is
// the number of the chunk of job b's sample i of column c (of n).
type windowChunks struct {
	refs    []chunkRef
	need    [][]int
	chunkOf [][]int32
}

// slotJobs makes the window's jobs, with the slots of their samples, and
// numbers the chunks they take whole samples of.
func (l *Loader) slotJobs(index []int, items [][]order.Item) ([]*batchJob, *windowChunks, error) {
	ncols := len(l.cols[0])
	jobs := make([]*batchJob, len(items))
	ids := map[chunkRef]int32{}
	// Each column's last chunk and its id: a window's rows come in
	// segments, so a row's chunk is mostly the one before it's.
	last := make([]chunkRef, ncols)
	lastID := make([]int32, ncols)
	for c := range lastID {
		lastID[c] = -1
	}
	wc := &windowChunks{chunkOf: make([][]int32, len(items))}
	for b, its := range items {
		job := newJob(index[b], len(its), ncols, l.mixed, len(l.ranged) > 0)
		n := len(its)
		wc.chunkOf[b] = make([]int32, ncols*n)
		for i, it := range its {
			sc := l.scans[it.Dataset]
			row, err := sc.Locate(it.Pos)
			if err != nil {
				return nil, nil, err
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
					id := lastID[c]
					if id < 0 || k != last[c] {
						var ok bool
						if id, ok = ids[k]; !ok {
							id = int32(len(wc.refs))
							ids[k] = id
							wc.refs, wc.need = append(wc.refs, k), append(wc.need, nil)
						}
						last[c], lastID[c] = k, id
					}
					wc.need[id] = append(wc.need[id], slot.Index())
					wc.chunkOf[b][c*n+i] = id
				}
			}
		}
		jobs[b] = job
	}
	return jobs, wc, nil
}

// sampleRuns cuts the samples the window takes of each chunk into runs
// of consecutive samples, merges runs of one chunk whose gaps cost less
// to read than another request (coalesce), and makes each run one read
// or more (appendRuns).
func (l *Loader) sampleRuns(wc *windowChunks, first bool) [][]sampleRun {
	runs := make([][]sampleRun, len(wc.need))
	var spans [][2]int
	budget := l.cfg.PrefetchBytes / 2 // bytes coalesced reads may hold (coalesce)
	var marks []bool
	for id, idx := range wc.need {
		spans, marks = runsOf(spans[:0], idx, marks)
		if coalesceReads && l.cfg.Shuffle == order.ModeFull {
			spans = l.coalesce(wc.refs[id], spans, &budget)
		}
		var rs []sampleRun
		for _, sp := range spans {
			rs = l.appendRuns(rs, wc.refs[id], sp[0], sp[1], first && splitFirstWindow)
		}
		runs[id] = rs
	}
	return runs
}

// runsOf appends to spans the runs [lo, hi) of consecutive values that
// the sample indices idx (unordered, repeated, >= 0) hold, in order; idx
// is left in any order. Where idx spans few more values than it holds (a
// block shuffle's window takes whole segments of a chunk) it marks them in
// marks (a scratch slice that it returns, grown if need be) rather than
// sorting them: a sort was 1.5% of ds.numpy()'s time.
func runsOf(spans [][2]int, idx []int, marks []bool) ([][2]int, []bool) {
	if len(idx) == 0 {
		return spans, marks
	}
	lo, hi := slices.Min(idx), slices.Max(idx)+1
	if hi-lo > 4*len(idx) {
		slices.Sort(idx)
		for a := 0; a < len(idx); {
			b := a + 1
			for b < len(idx) && idx[b] <= idx[b-1]+1 {
				b++
			}
			spans = append(spans, [2]int{idx[a], idx[b-1] + 1})
			a = b
		}
		return spans, marks
	}
	marks = slices.Grow(marks[:0], hi-lo)[:hi-lo]
	clear(marks)
	for _, i := range idx {
		marks[i-lo] = true
	}
	for a := 0; a < len(marks); {
		if !marks[a] {
			a++
			continue
		}
		b := a + 1
		for b < len(marks) && marks[b] {
			b++
		}
		spans = append(spans, [2]int{lo + a, lo + b})
		a = b
	}
	return spans, marks
}

// coalesceReads makes a full shuffle's window's runs of one chunk's
// samples merge into fewer reads where the gaps between them are small
// (see coalesce); tests and benchmarks turn it off for a baseline. Other
// orders read runs as they are: in a block shuffle or in order a window's
// runs are whole segments already, and the gaps between them are other
// windows' segments.
var coalesceReads = true

// Bounds of coalesce: a gap between two runs of a chunk's samples is
// read with them when it holds at most gapMax bytes, and while the bytes
// read for nothing stay within wasteRatio times the bytes of the samples
// needed (so that a window's reads hold at most 1+wasteRatio times its
// samples' bytes). On this machine a request is a system call and a read
// of its own (a checksum block decoded again when two runs share one):
// about what copying a checksum block of 64 KiB costs. On an object store
// it is a round trip of a millisecond or more, in which a few MiB arrive.
const (
	gapMaxLocal      = 64 << 10
	wasteRatioLocal  = 1
	gapMaxRemote     = 4 << 20
	wasteRatioRemote = 3
)

// coalesce merges consecutive spans [lo, hi) of chunk k's samples (sorted,
// disjoint) where reading the gap between two costs less than a request
// of its own, within the bounds above: on a store on this machine, or on
// an object store (more, as a request costs more there). The bytes are
// the scan's estimates of each read (exact once the chunk's header is
// known). A full shuffle whose window holds many of a chunk's rows reads
// them in a few requests instead of one a sample.
//
// A merged read serves batches all through the window, so it is held
// until the window's last batch that needs it is collated, where a read
// of one sample is held for its batch alone: the merged reads of a window
// hold at most *budget bytes (half the prefetch bytes, charged as chunks
// are met; merging stops when it is spent), so that memory stays within
// the prefetch bound however large the dataset and its window.
func (l *Loader) coalesce(k chunkRef, spans [][2]int, budget *int64) [][2]int {
	if len(spans) < 2 {
		return spans
	}
	sc := l.scans[k.ds]
	gapMax, ratio := int64(gapMaxRemote), int64(wasteRatioRemote)
	if sc.Local() {
		gapMax, ratio = gapMaxLocal, wasteRatioLocal
	}
	est := func(lo, hi int) int64 { return sc.Estimate(sc.Span(k.id, lo, hi)) }
	out := spans[:1]
	cur := est(spans[0][0], spans[0][1])
	used, waste := cur, int64(0)
	single := true // out's last span is one of spans, not charged yet
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		next := est(sp[0], sp[1])
		merged := est(last[0], sp[1])
		extra := merged - cur - next
		charge := merged - cur // the held bytes the merge adds
		if single {
			charge = merged
		}
		if extra <= gapMax && waste+extra <= ratio*(used+next) && charge <= *budget {
			*budget -= charge
			last[1], cur, single = sp[1], merged, false
			used, waste = used+next, waste+max(extra, 0)
			continue
		}
		out = append(out, sp)
		cur, used, waste, single = next, next, 0, true
	}
	return out
}

// attach gives each sample of job the entries it reads: its media part,
// the entry of its run (chunkOf numbers its chunk, as windowChunks), or
// one per piece. l.mu is held.
func (l *Loader) attach(job *batchJob, runs [][]sampleRun, chunkOf []int32) {
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
	for c := range job.slots {
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
				rs := runs[chunkOf[c*n+i]]
				j := runOf(rs, slot.Index())
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

// runOf returns the index of the run of rs (in order, disjoint) that
// holds sample x: the first whose hi is above x.
func runOf(rs []sampleRun, x int) int {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if rs[m].hi <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
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
