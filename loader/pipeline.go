package loader

import (
	"github.com/lochdata/loch"
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

// start starts the loader's pipeline: the scheduler (schedule.go), which
// plans batches and admits them, FetchConcurrency fetchers (fetch.go),
// which read their chunks, and Workers collators (collate.go), which
// build them.
func (l *Loader) start() {
	jobs := make(chan *batchJob, l.cfg.PrefetchBatches)
	// FetchConcurrency long-lived fetchers: a goroutine per read cost full
	// shuffle (a read per sample) about a tenth of its throughput.
	// The reads of admitted batches come first; those read ahead
	// (readAhead) wait in a queue of their own, taken when none is waiting.
	fetches := make(chan *chunkEntry)
	ahead := make(chan *chunkEntry, l.cfg.FetchConcurrency)
	l.aheadQ = ahead
	l.fill = l.startFill()
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

// fail records the first error and wakes the consumer.
func (l *Loader) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
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
