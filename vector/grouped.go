package vector

import (
	"math"

	"github.com/viterin/vek/vek32"
)

// groupBlock is the number of rows a grouped quantizer assigns at a time:
// enough that each of the about sqrt(nlist) groups is probed by a few
// dozen of them, so that a group's share is one matrix product.
const groupBlock = 1024

// groupScratch is the memory nearestAll of a grouped quantizer reuses
// from block to block.
type groupScratch struct {
	gs   []float32 // the block's scores against the groups' centroids
	rows [][]int32 // per group: the block's rows that probe it
	buf  []float32 // a group's rows, gathered
	sc   []float32 // their scores against the group's centroids
	best []float32 // each row's best score so far
}

// grown returns s resliced to n, reallocated when too short.
func grown(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// nearestAll sets out[i] to the centroid nearest to row i of xs (n x dim)
// as nearest does (exactly, or among the members of the row's groupProbe
// nearest groups), in matrix products: a block of rows against the
// groups' centroids, then each group's probing rows against its members.
// s is reused when not nil; the scratch used is returned.
func (q *quantizer) nearestAll(xs []float32, out []int32, s *groupScratch) *groupScratch {
	if q.exact != nil {
		q.exact.nearestAll(xs, out, nil)
		return s
	}
	if q.groupT == nil {
		for i := range out {
			x := xs[i*q.dim : (i+1)*q.dim]
			out[i] = int32(q.nearest(x, vek32.Dot(x, x)))
		}
		return s
	}
	if s == nil {
		s = &groupScratch{rows: make([][]int32, q.groupT.k)}
	}
	n := len(xs) / q.dim
	for lo := 0; lo < n; lo += groupBlock {
		hi := min(lo+groupBlock, n)
		q.assignBlock(xs[lo*q.dim:hi*q.dim], out[lo:hi], s)
	}
	return s
}

// assignBlock is nearestAll of one block of rows.
func (q *quantizer) assignBlock(xs []float32, out []int32, s *groupScratch) {
	dim, g := q.dim, q.groupT
	n := len(xs) / dim
	s.gs = grown(s.gs, n*g.kp)
	g.scores(xs, n, dim, s.gs)
	for i := range s.rows {
		s.rows[i] = s.rows[i][:0]
	}
	var top [groupProbe]int32
	for i := range n {
		for _, gi := range q.probed(s.gs[i*g.kp:i*g.kp+g.k], top[:]) {
			s.rows[gi] = append(s.rows[gi], int32(i))
		}
	}
	s.best = grown(s.best, n)
	for i := range n {
		s.best[i] = float32(math.Inf(-1))
		out[i] = 0
	}
	for gi, rows := range s.rows {
		mt := q.memT[gi]
		if len(rows) == 0 || mt == nil {
			continue
		}
		s.buf = grown(s.buf, len(rows)*dim)
		for j, r := range rows {
			copy(s.buf[j*dim:(j+1)*dim], xs[int(r)*dim:(int(r)+1)*dim])
		}
		s.sc = grown(s.sc, len(rows)*mt.kp)
		mt.scores(s.buf, len(rows), dim, s.sc)
		for j, r := range rows {
			row := s.sc[j*mt.kp : j*mt.kp+mt.k]
			a := vek32.ArgMax(row)
			c := q.member[gi][a]
			if row[a] > s.best[r] || (row[a] == s.best[r] && c < out[r]) {
				s.best[r], out[r] = row[a], c
			}
		}
	}
}

// probed returns the groupProbe groups (at most) with the largest scores
// of sc, in top's memory (at least groupProbe long).
func (q *quantizer) probed(sc []float32, top []int32) []int32 {
	return top[:topScores(sc, top[:groupProbe])]
}
