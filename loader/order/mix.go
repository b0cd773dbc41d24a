package order

import (
	"fmt"
	"iter"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/lochdata/loch/internal/base"
)

// MixSpec is everything the order of a weighted mixture of datasets
// depends on. The zero value of WorldSize and EpochRows means their
// default; BatchSize must be set.
type MixSpec struct {
	// Parts are the datasets. Of each, Blocks, Subset, Mode, WindowRows
	// and DropLast are used; the mixture sets the other fields.
	Parts []Spec
	// Weights are the datasets' sampling proportions: finite, not
	// negative, at least one positive; they need not sum to 1. They are
	// taken exactly as decimals (0.7 and 0.3 are 7 to 3) when their
	// shortest decimal forms make integers of at most 2^53 at a common
	// scale, else with 41 bits of precision, a weight below 2^-41 of the
	// largest being then too small.
	Weights []float64
	// EpochRows is the number of rows of an epoch over all ranks (default:
	// enough for the dataset with the largest size over weight to deliver
	// all its rows once, see the package documentation).
	EpochRows int64
	// Version identifies the snapshots (opaque here), as Spec.Version.
	Version string
	Seed    uint64
	Epoch   int
	// WorldSize, Rank, BatchSize and DropLast are those of the mixture's
	// batches, as in Spec.
	WorldSize int
	Rank      int
	BatchSize int
	DropLast  bool
}

// maxDraws bounds the rows per rank of one mixture epoch (2 bytes each).
const maxDraws = 1 << 32

// Validate reports the first field of s that is out of range, wrapping
// ErrInvalid.
func (s MixSpec) Validate() error {
	_, err := weightUnits(s.Weights, len(s.Parts))
	if err != nil {
		return err
	}
	for d, p := range s.Parts {
		if err := p.validateOrder(); err != nil {
			return fmt.Errorf("dataset %d: %w", d, err)
		}
	}
	if s.EpochRows < 0 {
		return base.Markf(ErrInvalid, "epoch of %d rows, want at least 0", s.EpochRows)
	}
	if s.Epoch < 0 {
		return base.Markf(ErrInvalid, "epoch %d, want at least 0", s.Epoch)
	}
	if s.BatchSize < 1 {
		return base.Markf(ErrInvalid, "batch size %d, want at least 1", s.BatchSize)
	}
	return validateRank(s.WorldSize, s.Rank)
}

// weightUnits converts weights to integers in the same proportions:
// exactly from their shortest decimal forms (0.7 and 0.3 become 7 and 3)
// when these give integers of at most 2^53 (summing to at most 2^62), else
// round(w * 2^k) with k making the largest weight 2^40 to 2^41.
func weightUnits(weights []float64, parts int) ([]uint64, error) {
	if parts == 0 || len(weights) != parts || parts > math.MaxUint16+1 {
		return nil, base.Markf(ErrInvalid, "%d datasets with %d weights, want 1 to 65536 of each", parts, len(weights))
	}
	var top float64
	for d, w := range weights {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil, base.Markf(ErrInvalid, "weight %d is %v, want a finite number >= 0", d, w)
		}
		top = max(top, w)
	}
	if top == 0 {
		return nil, base.Markf(ErrInvalid, "every weight is 0")
	}
	if units, ok := decimalUnits(weights); ok {
		return units, nil
	}
	_, exp := math.Frexp(top) // top = f * 2^exp, f in [0.5, 1)
	units := make([]uint64, len(weights))
	for d, w := range weights {
		units[d] = uint64(math.Round(math.Ldexp(w, 41-exp)))
		if w > 0 && units[d] == 0 {
			return nil, base.Markf(ErrInvalid, "weight %d is %v, below 2^-41 of the largest", d, w)
		}
	}
	return units, nil
}

// decimalUnits returns the weights' shortest decimal forms scaled by a
// common power of ten to integers, if they fit in 53 bits each.
func decimalUnits(weights []float64) ([]uint64, bool) {
	mant := make([]uint64, len(weights))
	exps := make([]int, len(weights))
	low := math.MaxInt
	for d, w := range weights {
		if w == 0 {
			continue
		}
		// d.ddddde±x: digits and the exponent of the last one.
		text := strconv.FormatFloat(w, 'e', -1, 64)
		e := strings.IndexByte(text, 'e')
		x, _ := strconv.Atoi(text[e+1:])
		digits := strings.Replace(text[:e], ".", "", 1)
		mant[d], _ = strconv.ParseUint(digits, 10, 64)
		exps[d] = x - (len(digits) - 1)
		low = min(low, exps[d])
	}
	var sum uint64
	for d := range mant {
		for range exps[d] - low {
			if mant[d] > 1<<53/10 {
				return nil, false
			}
			mant[d] *= 10
		}
		if sum += mant[d]; mant[d] > 1<<53 || sum > 1<<62 {
			return nil, false
		}
	}
	return mant, true
}

// Item is one row of a mixture: a position of dataset Dataset.
type Item struct {
	Dataset int
	Pos     int64
}

// MixPlan is the order in which one rank receives its rows of a mixture
// in one epoch, from the point where the plan starts to the epoch's end.
// It is immutable and safe for concurrent use. It holds 2 bytes per row of
// the rank's epoch, and the plan of each dataset's current cycle (see
// EpochPlan for their memory).
type MixPlan struct {
	mx         *mixer
	st         *mixStage
	rank       int
	from       int64 // draws of st done before the plan
	startBatch int
	parts      []*EpochPlan // each dataset's cycle at the plan's start
	prev       []Stage
}

// PlanMix returns the order of rank s.Rank in epoch s.Epoch of the
// mixture.
func PlanMix(s MixSpec) (*MixPlan, error) {
	return ResumeMix(s, State{Version: s.Version, Seed: s.Seed, Epoch: s.Epoch, Setup: s.setup()})
}

// modeMix is the Mode of a mixture's Setup.
const modeMix Mode = "mix"

// setup returns the Setup of a mixture spec.
func (s MixSpec) setup() Setup {
	st := Setup{Mode: modeMix, DropLast: s.DropLast, Weights: s.Weights, EpochRows: s.EpochRows}
	for _, p := range s.Parts {
		st.Parts = append(st.Parts, p.setup())
	}
	return st
}

// ResumeMix returns the order of rank s.Rank of the mixture for the rest
// of the epoch saved in st, as Resume does for one dataset: st's Epoch
// replaces s's and s's Seed must be st's; in the world size and batch size of st's last stage
// the plan continues the saved run exactly; in others the rest of the
// epoch is spread over s.WorldSize ranks.
func ResumeMix(s MixSpec, st State) (*MixPlan, error) {
	s.Epoch = st.Epoch
	if err := checkResume(s, s.Version, s.Seed, st); err != nil {
		return nil, err
	}
	mx := newMixer(s)
	world := max(s.WorldSize, 1)
	ms, parts, prev, done, err := mx.replay(st.Stages, world, s.BatchSize)
	if err != nil {
		return nil, err
	}
	p := &MixPlan{mx: mx, st: ms, rank: s.Rank, from: min(int64(done)*int64(ms.batch), ms.usable),
		startBatch: done, prev: prev, parts: make([]*EpochPlan, len(parts))}
	for d, ps := range parts {
		if mx.units[d] > 0 {
			if p.parts[d], err = mx.partPlan(d, world, s.Rank, ps); err != nil {
				return nil, err
			}
		}
	}
	return p, nil
}

// replay rebuilds the mixture stage that follows stages under world and
// batch, as replay does for one dataset, and each dataset's state at the
// point where the plan starts.
func (mx *mixer) replay(stages []Stage, world, batch int) (*mixStage, []State, []Stage, int, error) {
	parts := make([]State, len(mx.parts))
	for d := range parts {
		parts[d] = State{Seed: mx.parts[d].Seed}
	}
	if len(stages) == 0 {
		ms, err := mx.firstStage(world, batch)
		return ms, parts, nil, 0, err
	}
	if err := checkStages(stages); err != nil {
		return nil, nil, nil, 0, err
	}
	last := len(stages) - 1
	ms, err := mx.firstStage(stages[0].WorldSize, stages[0].BatchSize)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	for i, sg := range stages {
		if err := checkDone(i, sg, ms.usable); err != nil {
			return nil, nil, nil, 0, err
		}
		drawn := min(int64(sg.BatchesDone)*int64(sg.BatchSize), ms.usable)
		counts := make([]int64, len(parts))
		for _, d := range ms.draws[:drawn] {
			counts[d]++
		}
		for d := range parts {
			if parts[d], err = mx.advance(d, ms.world, parts[d], counts[d]); err != nil {
				return nil, nil, nil, 0, err
			}
		}
		if i == last && sg.WorldSize == world && sg.BatchSize == batch {
			return ms, parts, stages[:last], sg.BatchesDone, nil
		}
		nw, nb := world, batch
		if i < last {
			nw, nb = stages[i+1].WorldSize, stages[i+1].BatchSize
		}
		if ms, err = mx.restStage(ms, drawn, nw, nb, i+1); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	return ms, parts, stages, 0, nil
}

// Rows returns the number of rows the plan delivers.
func (p *MixPlan) Rows() int64 { return p.st.usable - p.from }

// Batches returns the number of batches the plan delivers: the same on
// every rank.
func (p *MixPlan) Batches() int { return batchCount(p.Rows(), p.st.batch) }

// BatchLen returns the number of rows in batch i, as EpochPlan.BatchLen.
func (p *MixPlan) BatchLen(i int) int {
	return int(min(int64(p.st.batch), p.Rows()-int64(i)*int64(p.st.batch)))
}

// All iterates over the plan's batches in order: the batch's index and its
// items. The slice is reused: it is valid until the next iteration.
func (p *MixPlan) All() iter.Seq2[int, []Item] {
	return func(yield func(int, []Item) bool) {
		cur := make([]partCursor, len(p.parts))
		for d, pp := range p.parts {
			if pp != nil {
				cur[d] = partCursor{plan: pp, rd: pp.reader(), left: pp.Rows()}
			}
		}
		batch := make([]Item, 0, p.st.batch)
		var one []int64
		t := p.from
		for i := range p.Batches() {
			batch = batch[:0]
			for range p.BatchLen(i) {
				d := int(p.st.draws[t])
				t++
				c := &cur[d]
				for c.left == 0 {
					c.plan = p.mx.freshPlan(d, p.st.world, p.rank, c.plan.epoch+1)
					c.rd, c.left = c.plan.reader(), c.plan.Rows()
				}
				one = c.rd.read(one[:0], 1)
				c.left--
				batch = append(batch, Item{d, one[0]})
			}
			if !yield(i, batch) {
				return
			}
		}
	}
}

// State returns the state after the plan's first done batches, as
// EpochPlan.State.
func (p *MixPlan) State(done int) State {
	start := State{Version: p.mx.version, Seed: p.mx.seed, Epoch: p.mx.epoch, Setup: p.mx.setup}
	return start.after(done, p.Batches(), p.prev, Stage{p.st.world, p.st.batch, p.startBatch})
}

type partCursor struct {
	plan *EpochPlan
	rd   *reader
	left int64
}

// mixer is a validated MixSpec.
type mixer struct {
	parts     []resolved // the datasets, their seeds set
	units     []uint64   // integer weights
	epochRows int64
	dropLast  bool
	version   string
	setup     Setup
	seed      uint64
	epoch     int
}

// mixStage is the draws of one stage of a mixture epoch: the dataset of
// each row a rank delivers, the same on every rank.
type mixStage struct {
	world, batch int
	draws        []uint16
	usable       int64 // draws delivered: all, or whole batches with DropLast
}

func newMixer(s MixSpec) *mixer {
	units, _ := weightUnits(s.Weights, len(s.Parts))
	mx := &mixer{units: units, epochRows: s.EpochRows, dropLast: s.DropLast, version: s.Version, setup: s.setup(), seed: s.Seed, epoch: s.Epoch}
	for d, p := range s.Parts {
		r := resolve(Spec{Blocks: p.Blocks, Subset: p.Subset, Mode: p.Mode, WindowRows: p.WindowRows, DropLast: p.DropLast})
		r.Seed = key(s.Seed, uint64(s.Epoch), streamPart, uint64(d))
		r.BatchSize = 1
		mx.parts = append(mx.parts, r)
	}
	return mx
}

// perRank is the rows of one cycle of dataset d on each of world ranks.
func (mx *mixer) perRank(d, world int) int64 {
	return perRank(mx.parts[d].items(), world, 1, mx.parts[d].DropLast)
}

// checkWorld fails unless every dataset with a weight gives each of world
// ranks at least one row per cycle.
func (mx *mixer) checkWorld(world int) error {
	for d, u := range mx.units {
		if u > 0 && mx.perRank(d, world) == 0 {
			return base.Markf(ErrInvalid, "dataset %d (%d rows) gives each of %d ranks no rows", d, mx.parts[d].items(), world)
		}
	}
	return nil
}

// firstStage draws the first stage of the epoch.
func (mx *mixer) firstStage(world, batch int) (*mixStage, error) {
	if err := mx.checkWorld(world); err != nil {
		return nil, err
	}
	var t uint64
	if mx.epochRows > 0 {
		t = uint64((mx.epochRows + int64(world) - 1) / int64(world))
	} else {
		var total uint64
		for _, u := range mx.units {
			total += u
		}
		for d, u := range mx.units {
			if u == 0 {
				continue
			}
			// ceil(rows * total / u)
			hi, lo := bits.Mul64(uint64(mx.perRank(d, world)), total)
			if hi >= u {
				return nil, mx.tooLong()
			}
			q, rem := bits.Div64(hi, lo, u)
			if rem > 0 {
				q++
			}
			t = max(t, q)
		}
	}
	if t > maxDraws {
		return nil, mx.tooLong()
	}
	return mx.draw(world, batch, apportion(t, mx.units), 0), nil
}

func (mx *mixer) tooLong() error {
	return base.Markf(ErrInvalid, "a mixture epoch of more than %d rows per rank: set EpochRows", maxDraws)
}

// restStage draws the stage that spreads the draws prev's ranks left
// after done over world ranks.
func (mx *mixer) restStage(prev *mixStage, done int64, world, batch, index int) (*mixStage, error) {
	if err := mx.checkWorld(world); err != nil {
		return nil, err
	}
	left := make([]uint64, len(mx.units))
	for _, d := range prev.draws[done:prev.usable] {
		left[d]++
	}
	n := uint64(prev.usable-done) * uint64(prev.world)
	t := (n + uint64(world) - 1) / uint64(world)
	if t > maxDraws {
		return nil, mx.tooLong()
	}
	return mx.draw(world, batch, apportion(t, left), index), nil
}

// draw returns the stage whose draws are quota[d] times d for each d in a
// uniform random order.
func (mx *mixer) draw(world, batch int, quota []uint64, index int) *mixStage {
	var t uint64
	for _, q := range quota {
		t += q
	}
	ms := &mixStage{world: world, batch: batch, draws: make([]uint16, 0, t), usable: int64(t)}
	for d, q := range quota {
		for range q {
			ms.draws = append(ms.draws, uint16(d))
		}
	}
	g := newRNG(mx.seed, uint64(mx.epoch), streamDraws, uint64(index))
	shuffle(&g, ms.draws)
	if mx.dropLast {
		ms.usable = ms.usable / int64(batch) * int64(batch)
	}
	return ms
}

// apportion splits t in proportion to weights (not all zero): floor(t *
// w / sum) each, plus one for the t - sum(floors) weights with the largest
// remainders (t * w mod sum), the lower index first among equals.
func apportion(t uint64, weights []uint64) []uint64 {
	var sum uint64
	for _, w := range weights {
		sum += w
	}
	quota := make([]uint64, len(weights))
	if sum == 0 {
		return quota
	}
	rems := make([]uint64, len(weights))
	left := t
	for d, w := range weights {
		hi, lo := bits.Mul64(t, w)
		quota[d], rems[d] = bits.Div64(hi, lo, sum)
		left -= quota[d]
	}
	idx := make([]int, len(weights))
	for d := range idx {
		idx[d] = d
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case rems[a] > rems[b]:
			return -1
		case rems[a] < rems[b]:
			return 1
		}
		return 0
	})
	for _, d := range idx[:left] {
		quota[d]++
	}
	return quota
}

// part returns dataset d's cycle as a Spec for rank of world.
func (mx *mixer) part(d, world, rank, cycle int) resolved {
	r := mx.parts[d]
	r.WorldSize, r.Rank, r.Epoch = world, rank, cycle
	return r
}

// partPlan returns dataset d's plan for rank of world from st, a state
// of one of its cycles.
func (mx *mixer) partPlan(d, world, rank int, st State) (*EpochPlan, error) {
	r := mx.part(d, world, rank, st.Epoch)
	stg, prev, done, err := replay(&r, st.Stages, rank)
	if err != nil {
		return nil, fmt.Errorf("dataset %d: %w", d, err)
	}
	return newPlan(&r, stg, prev, done), nil
}

// freshPlan returns the plan of dataset d's cycle from its start.
func (mx *mixer) freshPlan(d, world, rank, cycle int) *EpochPlan {
	r := mx.part(d, world, rank, cycle)
	return newPlan(&r, firstStage(&r, world, 1, rank), nil, 0)
}

// advance returns the state of dataset d's stream after n more rows on
// each of world ranks from st.
func (mx *mixer) advance(d, world int, st State, n int64) (State, error) {
	for n > 0 {
		if len(st.Stages) == 0 {
			per := mx.perRank(d, world)
			st.Epoch += int(n / per)
			if n %= per; n > 0 {
				st.Stages = []Stage{{WorldSize: world, BatchSize: 1, BatchesDone: int(n)}}
			}
			return st, nil
		}
		p, err := mx.partPlan(d, world, 0, st)
		if err != nil {
			return st, err
		}
		if n < p.Rows() {
			return p.State(int(n)), nil
		}
		n -= p.Rows()
		st = p.State(p.Batches())
	}
	return st, nil
}
