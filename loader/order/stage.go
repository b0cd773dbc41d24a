package order

import (
	"sort"
)

// A stage is the order of one part of an epoch run under one world size
// and batch size: the sequence S of its rows (the whole epoch's order for
// the first stage, the rows left by the previous stage for a later one),
// padded or cut to world*per rows, rank r delivering padded positions
// [r*per, (r+1)*per). Padded position j holds S[j mod m].
//
// A stage is immutable once built and safe for concurrent use.
type stage struct {
	kind  kind
	m     int64 // rows in S
	world int
	batch int
	per   int64 // rows per rank

	list []int64  // kindList: S, or nil for S = 0..m-1
	expl posSlice // kindExplicit: S, or only padded positions [base, base+per) when part
	part bool
	base int64
	grp  *groups // kindGroups

	// minWin is the resolved WindowRows: a rank's windows are its
	// delivery indices cut every minWin rows rounded up to whole batches.
	minWin   int64
	shuffled bool // rows within each window are shuffled (block mode's first stage)
	wide     bool // positions may need more than 32 bits
	seed     uint64
	epoch    uint64
}

type kind uint8

const (
	kindList     kind = iota // S is the rows (or subset) in order
	kindExplicit             // S is stored (full mode, later stages)
	kindGroups               // S is shuffled groups of rows (block mode)
)

// span is a range [start, end) of delivery indices.
type span struct{ start, end int64 }

// firstStage builds the epoch's first stage under world and batch. With
// keep >= 0 only rank keep's rows are stored in full mode.
func firstStage(r *resolved, world, batch, keep int) *stage {
	st := &stage{
		m:      r.items(),
		world:  world,
		batch:  batch,
		minWin: r.window,
		wide:   r.rows > 1<<32,
		seed:   r.Seed,
		epoch:  uint64(r.Epoch),
	}
	st.per = perRank(st.m, world, batch, r.DropLast)
	switch r.Mode {
	case ModeNone:
		st.kind, st.list = kindList, r.Subset
	case ModeFull:
		st.kind = kindExplicit
		st.expl = makePos(st.m, st.wide)
		if r.Subset != nil {
			for i, p := range r.Subset {
				st.expl.set(int64(i), p)
			}
		} else {
			for i := range st.m {
				st.expl.set(i, i)
			}
		}
		g := newRNG(r.Seed, uint64(r.Epoch), streamFull, 0)
		st.expl.shuffle(&g)
		if keep >= 0 && st.per < st.m {
			st.base = int64(keep) * st.per
			st.expl = st.expl.padded(st.base, st.per)
			st.part = true
		}
	case ModeBlock:
		st.kind, st.grp = kindGroups, newGroups(r)
		st.shuffled = true
	}
	return st
}

// restStage builds the stage that spreads what prev's ranks have not
// delivered after done rows each over world ranks: every rank's remaining
// rows in prev's delivery order, rank 0 first, keeping the first copy of
// each row and no row delivered in prev.
func restStage(prev *stage, done int64, world, batch int, dropLast bool) *stage {
	done = min(done, prev.per)
	delivered, taken := newBitset(prev.m), newBitset(prev.m)
	var idx, pos []int64
	for r := range prev.world {
		for _, w := range prev.windows(r) {
			if w.start >= done {
				break
			}
			idx = prev.unitIdx(idx[:0], r, w)
			for _, x := range idx[:min(done-w.start, int64(len(idx)))] {
				delivered.set(x)
			}
		}
	}
	var rest []int64
	for r := range prev.world {
		for _, w := range prev.windows(r) {
			if w.end <= done {
				continue
			}
			idx = prev.unitIdx(idx[:0], r, w)
			pos = prev.unitPos(pos[:0], r, w)
			for i := max(done-w.start, 0); i < int64(len(idx)); i++ {
				if x := idx[i]; !delivered.has(x) && !taken.has(x) {
					taken.set(x)
					rest = append(rest, pos[i])
				}
			}
		}
	}
	m := int64(len(rest))
	expl := makePos(m, prev.wide)
	for i, p := range rest {
		expl.set(int64(i), p)
	}
	return &stage{
		kind:   kindExplicit,
		m:      m,
		world:  world,
		batch:  batch,
		per:    perRank(m, world, batch, dropLast),
		expl:   expl,
		minWin: prev.minWin,
		wide:   prev.wide,
		seed:   prev.seed,
		epoch:  prev.epoch,
	}
}

// windows returns rank r's windows in its delivery indices: its range cut
// every minWin rows rounded up to a multiple of the batch size (so that no
// batch spans two windows), the last window shorter.
func (st *stage) windows(r int) []span {
	n := st.per
	if st.minWin < st.per {
		b := int64(st.batch)
		n = (max(st.minWin, 1) + b - 1) / b * b
	}
	var ws []span
	for a := int64(0); a < st.per; a += n {
		ws = append(ws, span{a, min(a+n, st.per)})
	}
	return ws
}

// unitPos appends the positions rank r delivers in its delivery indices w
// (a whole window of a shuffled stage), in delivery order.
func (st *stage) unitPos(dst []int64, r int, w span) []int64 {
	lo := int64(r) * st.per
	n := len(dst)
	dst = st.fillPos(dst, lo+w.start, lo+w.end)
	if st.shuffled {
		g := newRNG(st.seed, st.epoch, streamWindow, uint64(lo+w.start))
		shuffle(&g, dst[n:])
	}
	return dst
}

// unitIdx is unitPos giving positions in S instead of rows.
func (st *stage) unitIdx(dst []int64, r int, w span) []int64 {
	lo := int64(r) * st.per
	n := len(dst)
	for j := lo + w.start; j < lo+w.end; j++ {
		dst = append(dst, j%st.m)
	}
	if st.shuffled {
		g := newRNG(st.seed, st.epoch, streamWindow, uint64(lo+w.start))
		shuffle(&g, dst[n:])
	}
	return dst
}

// fillPos appends the rows at padded positions [j0, j1) in sequence order.
func (st *stage) fillPos(dst []int64, j0, j1 int64) []int64 {
	if st.part {
		return st.expl.appendRange(dst, j0-st.base, j1-st.base)
	}
	for j0 < j1 {
		x := j0 % st.m
		n := min(j1-j0, st.m-x)
		dst = st.fillS(dst, x, x+n)
		j0 += n
	}
	return dst
}

// fillS appends S[a:b].
func (st *stage) fillS(dst []int64, a, b int64) []int64 {
	switch st.kind {
	case kindExplicit:
		return st.expl.appendRange(dst, a, b)
	case kindGroups:
		return st.grp.fill(dst, a, b)
	}
	if st.list != nil {
		return append(dst, st.list[a:b]...)
	}
	for x := a; x < b; x++ {
		dst = append(dst, x)
	}
	return dst
}

// groups is the block-mode sequence: the rows of each non-empty block (or
// the subset's positions in it, in subset order), the blocks in shuffled
// order.
type groups struct {
	first []int64 // per group, then a sentinel: its first row (items == nil) or its first index in items
	items []int64 // the subset grouped by block; nil without a subset
	order []int   // group ids in shuffled order
	cum   []int64 // cum[i] is the position in S of group order[i]'s first row; cum[len(order)] = m
}

func newGroups(r *resolved) *groups {
	g := &groups{}
	if r.Subset == nil {
		var at int64
		for _, n := range r.Blocks {
			if n > 0 {
				g.first = append(g.first, at)
			}
			at += n
		}
		g.first = append(g.first, at)
	} else {
		// Counting sort of the subset by block, stable.
		ends := make([]int64, len(r.Blocks))
		var at int64
		for i, n := range r.Blocks {
			at += n
			ends[i] = at
		}
		block := make([]int32, len(r.Subset))
		count := make([]int64, len(r.Blocks)+1)
		for i, p := range r.Subset {
			b := sort.Search(len(ends), func(k int) bool { return ends[k] > p })
			block[i] = int32(b)
			count[b+1]++
		}
		for b := range r.Blocks {
			if count[b+1] > 0 {
				g.first = append(g.first, count[b])
			}
			count[b+1] += count[b]
		}
		g.first = append(g.first, int64(len(r.Subset)))
		g.items = make([]int64, len(r.Subset))
		for i, p := range r.Subset {
			b := block[i]
			g.items[count[b]] = p
			count[b]++
		}
	}
	n := len(g.first) - 1
	g.order = make([]int, n)
	for i := range g.order {
		g.order[i] = i
	}
	rg := newRNG(r.Seed, uint64(r.Epoch), streamBlocks, 0)
	shuffle(&rg, g.order)
	g.cum = make([]int64, n+1)
	for i, id := range g.order {
		g.cum[i+1] = g.cum[i] + g.first[id+1] - g.first[id]
	}
	return g
}

// fill appends S[a:b].
func (g *groups) fill(dst []int64, a, b int64) []int64 {
	i := sort.Search(len(g.order), func(k int) bool { return g.cum[k+1] > a })
	for a < b {
		id := g.order[i]
		lo := g.first[id] + a - g.cum[i]
		hi := g.first[id] + min(b, g.cum[i+1]) - g.cum[i]
		if g.items != nil {
			dst = append(dst, g.items[lo:hi]...)
		} else {
			for p := lo; p < hi; p++ {
				dst = append(dst, p)
			}
		}
		a += hi - lo
		i++
	}
	return dst
}

// posSlice stores positions in 32 bits each when they fit, else 64.
type posSlice struct {
	u32 []uint32
	i64 []int64
}

func makePos(n int64, wide bool) posSlice {
	if wide {
		return posSlice{i64: make([]int64, n)}
	}
	return posSlice{u32: make([]uint32, n)}
}

func (p posSlice) set(i, v int64) {
	if p.i64 != nil {
		p.i64[i] = v
	} else {
		p.u32[i] = uint32(v)
	}
}

func (p posSlice) len() int64 {
	if p.i64 != nil {
		return int64(len(p.i64))
	}
	return int64(len(p.u32))
}

func (p posSlice) appendRange(dst []int64, a, b int64) []int64 {
	if p.i64 != nil {
		return append(dst, p.i64[a:b]...)
	}
	for _, v := range p.u32[a:b] {
		dst = append(dst, int64(v))
	}
	return dst
}

func (p posSlice) shuffle(r *rng) {
	if p.i64 != nil {
		shuffle(r, p.i64)
	} else {
		shuffle(r, p.u32)
	}
}

// padded returns a copy of n padded positions from base: p[(base+i) mod len].
func (p posSlice) padded(base, n int64) posSlice {
	out := makePos(n, p.i64 != nil)
	m := p.len()
	var buf []int64
	for i := int64(0); i < n; {
		x := (base + i) % m
		k := min(n-i, m-x, 1<<16)
		buf = p.appendRange(buf[:0], x, x+k)
		for t, v := range buf {
			out.set(i+int64(t), v)
		}
		i += k
	}
	return out
}
