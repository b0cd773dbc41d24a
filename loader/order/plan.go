package order

import (
	"fmt"
	"iter"
	"slices"
	"sort"

	"github.com/lochdata/loch/internal/base"
)

// State is what a training run saves to resume its order: where it is in
// which epoch. It is the same on every rank of a synchronous run, and it
// is plain data (JSON tags included) for a checkpoint.
type State struct {
	// Version is the snapshot's Spec.Version.
	Version string `json:"version"`
	Seed    uint64 `json:"seed"`
	Epoch   int    `json:"epoch"`
	// Setup is the rest of what the order depends on (shuffle mode,
	// window, DropLast, row selection; a mixture's weights): Resume
	// refuses a state saved under another.
	Setup
	// Stages are the parts of the epoch run so far, oldest first, with the
	// batches every rank delivered in each: a new stage begins when a run
	// resumes with another world size or batch size than the last stage's.
	// No stages means the epoch has not started.
	Stages []Stage `json:"stages,omitempty"`
}

// Stage is a part of an epoch run under one world size and batch size.
type Stage struct {
	WorldSize int `json:"world_size"`
	BatchSize int `json:"batch_size"`
	// BatchesDone is the number of batches each rank delivered in the
	// stage.
	BatchesDone int `json:"batches_done"`
}

// Span is a range [Start, End) of a plan's delivery indices.
type Span struct{ Start, End int64 }

// EpochPlan is the order in which one rank receives its rows in one epoch,
// from the point where the plan starts (the epoch's start, or a resumed
// State) to the epoch's end. It is immutable and safe for concurrent use.
// In none mode it shares the Spec's Subset, which the caller must not
// modify while the plan is in use. Its memory is in the package
// documentation, section Memory.
type EpochPlan struct {
	st         *stage
	rank       int
	lo         int64   // padded position of the rank's first row
	from       int64   // rank delivery index of the plan's first row
	startBatch int     // batches the rank delivered in this stage before the plan
	wins       []span  // the rank's windows, in its delivery indices
	prev       []Stage // the epoch's earlier stages
	setup      Setup
	version    string
	seed       uint64
	epoch      int
}

// Plan returns the order of rank s.Rank in epoch s.Epoch.
func Plan(s Spec) (*EpochPlan, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	r := resolve(s)
	return newPlan(&r, firstStage(&r, r.WorldSize, r.BatchSize, r.Rank), nil, 0), nil
}

// Resume returns the order of rank s.Rank for the rest of the epoch saved
// in st: st's Epoch replaces s's (a state is a position in an epoch), and
// s's Seed must be st's. If s has the world size and batch
// size of st's last stage, the plan's batches are exactly the batches that
// follow the saved ones in the run that saved st; otherwise the rows that
// no rank delivered are spread over s.WorldSize ranks (see the package
// documentation). Everything else in s (seed, mode, window,
// DropLast, Selection: the State's Setup; blocks and subset through
// Version and Selection) must be what the saved run used; the error names
// the first that is not, with its saved and its new value.
//
// Resuming in another world size or batch size than the last stage's, or
// from a state with more than one stage, costs O(rows) time and memory.
func Resume(s Spec, st State) (*EpochPlan, error) {
	s.Epoch = st.Epoch
	if err := checkResume(s, s.Version, s.Seed, st); err != nil {
		return nil, err
	}
	r := resolve(s)
	stg, prev, done, err := replay(&r, st.Stages, r.Rank)
	if err != nil {
		return nil, err
	}
	return newPlan(&r, stg, prev, done), nil
}

// resumable is a spec that a saved state resumes: Spec or MixSpec.
type resumable interface {
	Validate() error
	setup() Setup
}

// checkResume reports why s, a spec of snapshot version with seed and with
// st's Epoch already set, cannot resume st: st is of another snapshot or
// was saved with another seed (a resume continues the saved run's
// shuffle), both wrapping ErrMismatch; s is not valid; or s's setup is
// not st's. (The epoch is not an input here but where st is, like its
// stages: a state taken at an epoch's end is the next epoch's start.)
func checkResume(s resumable, version string, seed uint64, st State) error {
	if st.Version != version {
		return base.Markf(ErrMismatch, "state of snapshot %q resumed on snapshot %q", st.Version, version)
	}
	if st.Seed != seed {
		return base.Markf(ErrMismatch, "the state was saved with seed %d, resumed with seed %d", st.Seed, seed)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	return s.setup().check(st.Setup)
}

// replay rebuilds the stage that follows stages under r's world size and
// batch size. It returns the stage, the stages before it and the batches
// each rank delivered in it: when r continues the last stage, that stage
// itself with its count, else a new stage with none. With rank >= 0 only
// that rank's rows need to be kept.
func replay(r *resolved, stages []Stage, rank int) (*stage, []Stage, int, error) {
	if len(stages) == 0 {
		return firstStage(r, r.WorldSize, r.BatchSize, rank), nil, 0, nil
	}
	if err := checkStages(stages); err != nil {
		return nil, nil, 0, err
	}
	last := len(stages) - 1
	cont := stages[last].WorldSize == r.WorldSize && stages[last].BatchSize == r.BatchSize
	keep := -1
	if last == 0 && cont {
		keep = rank
	}
	stg := firstStage(r, stages[0].WorldSize, stages[0].BatchSize, keep)
	for i, sg := range stages {
		if err := checkDone(i, sg, stg.per); err != nil {
			return nil, nil, 0, err
		}
		if i == last && cont {
			return stg, stages[:last], sg.BatchesDone, nil
		}
		world, batch := r.WorldSize, r.BatchSize
		if i < last {
			world, batch = stages[i+1].WorldSize, stages[i+1].BatchSize
		}
		stg = restStage(stg, int64(sg.BatchesDone)*int64(sg.BatchSize), world, batch, r.DropLast)
	}
	return stg, stages, 0, nil
}

// checkStages reports the first stage with a field out of range.
func checkStages(stages []Stage) error {
	for i, sg := range stages {
		if sg.WorldSize < 1 || sg.BatchSize < 1 || sg.BatchesDone < 0 {
			return base.Markf(ErrInvalid, "stage %d has world size %d, batch size %d, %d batches done",
				i, sg.WorldSize, sg.BatchSize, sg.BatchesDone)
		}
	}
	return nil
}

// checkDone fails if stage i records more batches than its ranks have
// (per rows each).
func checkDone(i int, sg Stage, per int64) error {
	if n := batchCount(per, sg.BatchSize); sg.BatchesDone > n {
		return base.Markf(ErrMismatch, "stage %d records %d batches done of %d", i, sg.BatchesDone, n)
	}
	return nil
}

// newPlan returns rank r.Rank's plan of stg, after the epoch's earlier
// stages prev and done batches of stg.
func newPlan(r *resolved, stg *stage, prev []Stage, done int) *EpochPlan {
	return &EpochPlan{
		st:         stg,
		rank:       r.Rank,
		lo:         int64(r.Rank) * stg.per,
		from:       min(int64(done)*int64(stg.batch), stg.per),
		startBatch: done,
		wins:       stg.windows(r.Rank),
		prev:       prev,
		setup:      r.Spec.setup(),
		version:    r.Version,
		seed:       r.Seed,
		epoch:      r.Epoch,
	}
}

// Rows returns the number of rows the plan delivers, padding included.
func (p *EpochPlan) Rows() int64 { return p.st.per - p.from }

// Batches returns the number of batches the plan delivers: the same on
// every rank.
func (p *EpochPlan) Batches() int { return batchCount(p.Rows(), p.st.batch) }

// BatchLen returns the number of rows in batch i: the batch size, except
// for a short last batch without DropLast (of the same length on every
// rank).
func (p *EpochPlan) BatchLen(i int) int {
	return int(min(int64(p.st.batch), p.Rows()-int64(i)*int64(p.st.batch)))
}

// Batch appends the positions of batch i (0 is the plan's first batch) to
// dst in delivery order and returns the extended slice. In block mode it
// shuffles the window(s) the batch lies in, O(window) time and memory per
// call; All streams the plan in O(1) time per row.
func (p *EpochPlan) Batch(dst []int64, i int) []int64 {
	if i < 0 || i >= p.Batches() {
		panic(fmt.Sprintf("order: batch %d of a plan with %d batches", i, p.Batches()))
	}
	a := p.from + int64(i)*int64(p.st.batch)
	b := a + int64(p.BatchLen(i))
	if !p.st.shuffled {
		return p.st.fillPos(dst, p.lo+a, p.lo+b)
	}
	k := sort.Search(len(p.wins), func(k int) bool { return p.wins[k].end > a })
	var buf []int64
	for ; a < b; k++ {
		w := p.wins[k]
		buf = p.st.unitPos(buf[:0], p.rank, w)
		dst = append(dst, buf[a-w.start:min(b, w.end)-w.start]...)
		a = min(b, w.end)
	}
	return dst
}

// All iterates over the plan's batches in order: the batch's index and its
// positions. The slice is reused: it is valid until the next iteration.
// Each iteration shuffles one window at a time (block mode) and keeps
// O(window + batch) memory.
func (p *EpochPlan) All() iter.Seq2[int, []int64] {
	return func(yield func(int, []int64) bool) {
		rd := p.reader()
		// Sized by what the plan delivers, not by the batch size asked
		// for, which may exceed the rows (the first batch is the largest).
		var batch []int64
		if p.Batches() > 0 {
			batch = make([]int64, 0, p.BatchLen(0))
		}
		for i := range p.Batches() {
			batch = rd.read(batch[:0], int64(p.BatchLen(i)))
			if !yield(i, batch) {
				return
			}
		}
	}
}

// Windows returns the plan's windows in its delivery indices: consecutive
// spans of whole batches that tile the plan (see the package
// documentation), the first perhaps the rest of a window begun before a
// resume. In block mode a window's rows are a shuffle of a few hundred
// blocks' rows; in every mode a loader reads by window, and data-loading
// workers that share a rank's batches share them a window at a time, so
// that each reads only its windows' blocks.
func (p *EpochPlan) Windows() []Span {
	var out []Span
	for _, w := range p.wins {
		if w.end > p.from {
			out = append(out, Span{max(w.start, p.from) - p.from, w.end - p.from})
		}
	}
	return out
}

// State returns the state after the plan's first done batches. At
// done == Batches() it is the start of the next epoch. It panics unless
// 0 <= done <= Batches().
func (p *EpochPlan) State(done int) State {
	start := State{Version: p.version, Seed: p.seed, Epoch: p.epoch, Setup: p.setup}
	return start.after(done, p.Batches(), p.prev, Stage{p.st.world, p.st.batch, p.startBatch})
}

// after returns s, a state without stages, moved done batches into the
// stage cur, whose BatchesDone are the batches delivered in it before a
// plan of batches batches, after the epoch's earlier stages prev; done ==
// batches is the start of the next epoch. It panics unless 0 <= done <=
// batches.
func (s State) after(done, batches int, prev []Stage, cur Stage) State {
	if done < 0 || done > batches {
		panic(fmt.Sprintf("order: state after %d batches of a plan with %d", done, batches))
	}
	if done == batches {
		s.Epoch++
		return s
	}
	cur.BatchesDone += done
	s.Stages = append(slices.Clip(prev), cur)
	return s
}

// reader streams a plan's positions.
type reader struct {
	p    *EpochPlan
	next int64   // rank delivery index of the next row
	buf  []int64 // the rows of rank delivery indices [at, at+len(buf))
	at   int64
	win  int // the window after the one in buf
}

func (p *EpochPlan) reader() *reader {
	rd := &reader{p: p, next: p.from, at: p.from}
	rd.win = sort.Search(len(p.wins), func(k int) bool { return p.wins[k].end > p.from })
	return rd
}

// read appends the next n positions to dst.
func (rd *reader) read(dst []int64, n int64) []int64 {
	st := rd.p.st
	for n > 0 {
		if rd.next == rd.at+int64(len(rd.buf)) {
			if st.shuffled {
				w := rd.p.wins[rd.win]
				rd.buf = st.unitPos(rd.buf[:0], rd.p.rank, w)
				rd.at = w.start
				rd.win++
			} else {
				end := min(rd.next+4096, st.per)
				rd.buf = st.fillPos(rd.buf[:0], rd.p.lo+rd.next, rd.p.lo+end)
				rd.at = rd.next
			}
		}
		k := min(n, rd.at+int64(len(rd.buf))-rd.next)
		i := rd.next - rd.at
		dst = append(dst, rd.buf[i:i+k]...)
		rd.next += k
		n -= k
	}
	return dst
}
