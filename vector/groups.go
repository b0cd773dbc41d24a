package vector

import (
	"cmp"
	"math"
	"slices"

	"github.com/viterin/vek/vek32"
)

// Groups of a grouped quantizer. k-means of the centroids alone gives, at
// 16,384 lists into 128 groups, groups of 1 to 952 centroids, the largest
// with their centres near the middle of the data and among the nearest
// groups of nearly every row (bench/history/2026-11-30-nl.md): a row was
// compared with 3,686 centroids instead of about 1,024. Here there are
// about sqrt(groupsPerList x nlist) groups, each bounded to groupSlack
// times the mean where a centroid's groupChoices nearest groups allow; a
// centroid is always in one of them (its nearest when all are full), so
// that the rows near it, which probe groupProbe groups ranked much as it
// ranks them, reach it (a bound alone moved centroids into groups their
// rows do not probe: empty lists). The groups near the middle still
// overflow (at 16,384 lists from the bench's mixture, 362 groups of 1 to
// 431, median 20), but a row is compared with 1,914 centroids, not 3,352,
// and is assigned its exact nearest more often (0.990 against 0.985).
// Pricing the groups instead (a per-group bias raised while a group is
// over its share, so that the rows rank it lower too) balanced them
// exactly but assigned far fewer rows exactly (0.86 to 0.97). Measured
// in bench/history/2026-11-30-nl2-2.md.

// groupSlack bounds a group's centroids, in multiples of the mean.
const groupSlack = 1.2

// groupsPerList sets the number of groups: sqrt(groupsPerList x nlist).
// More groups than sqrt(nlist) cost more to rank, but each is tighter:
// fewer centroids compared for the same share of rows assigned exactly.
const groupsPerList = 8

// groupChoices is the number of a centroid's nearest groups it may be
// placed in when nearer ones are full.
const groupChoices = 3

// groupRounds is the number of placements of the centroids into groups;
// between two, each group's centre moves to the mean of its members.
const groupRounds = 3

// balancedGroups places the centroids (nlist x dim) into the groups whose
// centres are gc (k1 x dim), each group holding at most groupSlack times
// the mean where each centroid's groupChoices nearest groups allow. It
// returns the groups' centres the last placement ranked against (the ones
// rows are to probe) and each group's centroids, in ascending order;
// groups left empty are dropped.
func balancedGroups(m Metric, cents, gc []float32, dim, par int) ([]float32, [][]int32) {
	nlist, k1 := len(cents)/dim, len(gc)/dim
	capacity := int(math.Ceil(groupSlack * float64(nlist) / float64(k1)))
	var member [][]int32
	for round := range groupRounds {
		if round > 0 {
			gc = groupMeans(m, cents, member, gc, dim)
		}
		member = placeCentroids(m, cents, gc, dim, capacity, par)
	}
	kept := 0
	for g, mem := range member {
		if len(mem) > 0 {
			copy(gc[kept*dim:(kept+1)*dim], gc[g*dim:(g+1)*dim])
			member[kept] = mem
			kept++
		}
	}
	return gc[:kept*dim], member[:kept]
}

// placeCentroids is one placement of balancedGroups: centroids that lose
// most by leaving their nearest group (the largest gap between their
// nearest and second-nearest group's score) are placed first, each into
// the first of its groupChoices nearest groups with room, else into its
// nearest (over the bound).
func placeCentroids(m Metric, cents, gc []float32, dim, capacity, par int) [][]int32 {
	nlist, k1 := len(cents)/dim, len(gc)/dim
	const nch = groupChoices
	gt := newCentroidsT(m, gc, dim)
	choice := make([]int32, nlist*nch)
	nchoice := make([]int, nlist)
	regret := make([]float32, nlist)
	parallelFor(nlist, par, func(_, lo, hi int) {
		sc := make([]float32, gemmBlock*gt.kp)
		for b := lo; b < hi; b += gemmBlock {
			n := min(gemmBlock, hi-b)
			gt.scores(cents[b*dim:], n, dim, sc)
			for i := range n {
				top := choice[(b+i)*nch : (b+i+1)*nch]
				row := sc[i*gt.kp : i*gt.kp+gt.k]
				nchoice[b+i] = topScores(row, top)
				if nchoice[b+i] > 1 {
					regret[b+i] = row[top[0]] - row[top[1]]
				}
			}
		}
	})
	order := make([]int32, nlist)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(regret[b], regret[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	member := make([][]int32, k1)
	for _, c := range order {
		ch := choice[int(c)*nch : int(c)*nch+nchoice[c]]
		pick := ch[0]
		for _, g := range ch {
			if len(member[g]) < capacity {
				pick = g
				break
			}
		}
		member[pick] = append(member[pick], c)
	}
	for _, mem := range member {
		slices.Sort(mem)
	}
	return member
}

// groupMeans returns each group's centre moved to the mean of its members
// (normalized for cosine); a group without members keeps its centre.
func groupMeans(m Metric, cents []float32, member [][]int32, gc []float32, dim int) []float32 {
	out := slices.Clone(gc)
	for g, mem := range member {
		if len(mem) == 0 {
			continue
		}
		c := out[g*dim : (g+1)*dim]
		clear(c)
		for _, i := range mem {
			vek32.Add_Inplace(c, cents[int(i)*dim:(int(i)+1)*dim])
		}
		vek32.MulNumber_Inplace(c, 1/float32(len(mem)))
	}
	if m == Cosine {
		normalize(out, dim)
	}
	return out
}

// maxTop bounds topScores's len(top).
const maxTop = 64

// topScores sets top to the indexes of the len(top) largest scores of sc
// (at most len(sc)), largest first, ties to the lower index, and returns
// how many it set.
func topScores(sc []float32, top []int32) int {
	k, nt := len(top), 0
	var buf [maxTop]float32
	topd := buf[:k]
	for c, d := range sc {
		if nt < k {
			top[nt], topd[nt] = int32(c), d
			nt++
		} else if d > topd[k-1] {
			top[k-1], topd[k-1] = int32(c), d
		} else {
			continue
		}
		for j := nt - 1; j > 0 && topd[j] > topd[j-1]; j-- {
			top[j], top[j-1], topd[j], topd[j-1] = top[j-1], top[j], topd[j-1], topd[j]
		}
	}
	return nt
}
