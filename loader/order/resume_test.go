package order_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/loader/order"
)

// TestResumeContinues: a plan resumed from the state after k batches, in
// the same world size, yields exactly batches k, k+1, ... of the
// uninterrupted run, on every rank, for k at the epoch's ends, its middle
// and at random (the state going through JSON, as a checkpoint would).
func TestResumeContinues(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 40 {
		s := order.Spec{
			Blocks:     blocks(int64(rng.IntN(600)), int64(1+rng.IntN(50))),
			Version:    "v1",
			Seed:       rng.Uint64(),
			Epoch:      rng.IntN(5),
			Mode:       modes[rng.IntN(3)],
			WindowRows: int64(rng.IntN(200)),
			WorldSize:  1 + rng.IntN(6),
			BatchSize:  1 + rng.IntN(9),
			DropLast:   rng.IntN(2) == 0,
		}
		for r := range s.WorldSize {
			s.Rank = r
			p, err := order.Plan(s)
			require.NoError(t, err)
			want := batches(t, p)
			for _, k := range []int{0, 1, rng.IntN(len(want) + 1), len(want) / 2, len(want) - 1, len(want)} {
				if k < 0 || k > len(want) {
					continue
				}
				st := p.State(k)
				raw, err := json.Marshal(st)
				require.NoError(t, err)
				var back order.State
				require.NoError(t, json.Unmarshal(raw, &back))
				q, err := order.Resume(s, back)
				require.NoError(t, err)
				if k == len(want) {
					require.Equal(t, s.Epoch+1, back.Epoch, "the state at the end is the next epoch's start")
					next := s
					next.Epoch++
					pn, err := order.Plan(next)
					require.NoError(t, err)
					require.Equal(t, batches(t, pn), batches(t, q), "%+v: resumed at the epoch boundary", s)
					continue
				}
				got := batches(t, q)
				require.Equal(t, want[k:], got, "%+v rank %d resumed after %d batches", s, r, k)
				if len(got) > 0 {
					require.Equal(t, st, q.State(0), "a resumed plan's state is the state it resumed from")
				}
			}
		}
	}
}

// TestElastic: after k batches on W ranks the run resumes on W' ranks; the
// rows delivered before and after cover the epoch with no row lost or
// repeated beyond padding, and the new ranks have equal batches.
func TestElastic(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	resizes := []struct{ from, to, batchFrom, batchTo int }{
		{4, 3, 4, 4}, {2, 5, 3, 3}, {8, 1, 2, 2}, {1, 8, 5, 5}, {3, 3, 4, 7}, {5, 2, 1, 6},
	}
	for _, rs := range resizes {
		for _, mode := range modes {
			for _, dropLast := range []bool{false, true} {
				for _, n := range []int64{1, 13, 97, 1001} {
					name := fmt.Sprintf("%d-%d/b%d-%d/%s/drop_last=%v/n=%d", rs.from, rs.to, rs.batchFrom, rs.batchTo, mode, dropLast, n)
					old := order.Spec{Blocks: blocks(n, 10), Seed: rng.Uint64(), Epoch: 2, Mode: mode, WindowRows: 25,
						WorldSize: rs.from, BatchSize: rs.batchFrom, DropLast: dropLast}
					before := allRanks(t, old)
					// (After the last batch the state is the next epoch's start.)
					for _, k := range []int{0, 1, len(before[0]) / 2, len(before[0]) - 1} {
						if k < 0 || k >= len(before[0]) {
							continue
						}
						delivered := firstBatches(before, k)
						now := old
						now.WorldSize, now.BatchSize = rs.to, rs.batchTo
						old.Rank = 0
						p, err := order.Plan(old)
						require.NoError(t, err)
						got := resumeAll(t, now, p.State(k))
						t.Run(fmt.Sprintf("%s/k=%d", name, k), func(t *testing.T) {
							requireRest(t, now, flat(before...), delivered, got)
						})
					}
				}
			}
		}
	}
}

// TestElasticChain: an epoch resized twice (4 -> 3 -> 5 ranks) still
// covers every row once, beyond padding, and a run resumed in the middle
// of the second stage continues it exactly.
func TestElasticChain(t *testing.T) {
	seed := testSeed(t)
	for _, mode := range modes {
		s0 := order.Spec{Blocks: blocks(1003, 17), Seed: seed, Mode: mode, WindowRows: 60, WorldSize: 4, BatchSize: 8}
		stage0 := allRanks(t, s0)
		k0 := 9
		delivered := firstBatches(stage0, k0)
		p0, err := order.Plan(s0)
		require.NoError(t, err)
		st0 := p0.State(k0)

		s1 := s0
		s1.WorldSize, s1.BatchSize = 3, 5
		stage1 := resumeAll(t, s1, st0)
		requireRest(t, s1, flat(stage0...), delivered, stage1)
		k1 := 7
		var planned1 []int64
		for r := range stage1 {
			delivered = append(delivered, flat(stage1[r][:k1])...)
			planned1 = append(planned1, flat(stage1[r])...)
		}
		p1, err := order.Resume(s1, st0)
		require.NoError(t, err)
		st1 := p1.State(k1)
		require.Equal(t, []order.Stage{{4, 8, 9}, {3, 5, 7}}, st1.Stages)

		// Continue stage 1 on rank 2 exactly.
		s1.Rank = 2
		p1r2, err := order.Resume(s1, st1)
		require.NoError(t, err)
		require.Equal(t, stage1[2][k1:], batches(t, p1r2))

		s2 := s0
		s2.WorldSize, s2.BatchSize = 5, 6
		stage2 := resumeAll(t, s2, st1)
		requireRest(t, s2, append(flat(stage0...), planned1...), delivered, stage2)
		all := counts(append(delivered, flat(stage2...)...))
		require.Len(t, all, 1003, "%s: every row once the epoch ends", mode)
	}
}

func TestResumeErrors(t *testing.T) {
	s := order.Spec{Blocks: blocks(100, 10), Version: "snap-a", Mode: order.ModeFull, WorldSize: 2, BatchSize: 10}
	p, err := order.Plan(s)
	require.NoError(t, err)
	st := p.State(2)

	other := s
	other.Version = "snap-b"
	_, err = order.Resume(other, st)
	require.ErrorIs(t, err, order.ErrMismatch)
	require.ErrorContains(t, err, `snapshot "snap-a" resumed on snapshot "snap-b"`)

	st.Stages[0].BatchesDone = 6
	_, err = order.Resume(s, st)
	require.ErrorIs(t, err, order.ErrMismatch)
	require.ErrorContains(t, err, "stage 0 records 6 batches done of 5")

	st.Stages[0] = order.Stage{WorldSize: 0, BatchSize: 10}
	_, err = order.Resume(s, st)
	require.ErrorIs(t, err, order.ErrInvalid)

	require.Panics(t, func() { p.State(6) })
	require.Panics(t, func() { p.Batch(nil, 5) })
}

// TestResumeSetup: a state records everything the order depends on but the
// world size and batch size, and a resume that changes any of it is refused
// with a message naming what differs (the seed too: issue 35 item 8).
func TestResumeSetup(t *testing.T) {
	s := order.Spec{Blocks: blocks(300, 30), Version: "v", Selection: "sel-a", Subset: []int64{5, 1, 9, 200},
		Mode: order.ModeBlock, WindowRows: 60, Seed: 3, BatchSize: 2}
	p, err := order.Plan(s)
	require.NoError(t, err)
	st := p.State(1)
	require.Equal(t, order.Setup{Mode: order.ModeBlock, WindowRows: 60, Selection: "sel-a"}, st.Setup)
	require.Equal(t, st.Setup, p.State(0).Setup, "a state taken before the first batch records it too")
	require.Equal(t, st.Setup, p.State(p.Batches()).Setup, "so does the state at the epoch's end")
	_, err = order.Resume(s, st)
	require.NoError(t, err)

	tests := []mismatch[order.Spec]{
		{"seed", func(s *order.Spec) { s.Seed = 4 }, "saved with seed 3, resumed with seed 4"},
		{"version", func(s *order.Spec) { s.Version = "w" }, `state of snapshot "v" resumed on snapshot "w"`},
		{"mode", func(s *order.Spec) { s.Mode = order.ModeFull }, "shuffle mode block, resumed with full"},
		{"default mode", func(s *order.Spec) { s.Mode = "" }, "shuffle mode block, resumed with none"},
		{"window", func(s *order.Spec) { s.WindowRows = 90 }, "window_rows 60, resumed with 90"},
		{"drop last", func(s *order.Spec) { s.DropLast = true }, "drop_last false, resumed with true"},
		{"selection", func(s *order.Spec) { s.Selection, s.Subset = "", nil }, "row selection sel-a, resumed with (every row)"},
	}
	requireMismatches(t, s, tests, func(s order.Spec) error {
		_, err := order.Resume(s, st)
		return err
	})

	// World size and batch size stay elastic.
	elastic := s
	elastic.WorldSize, elastic.BatchSize = 2, 3
	_, err = order.Resume(elastic, st)
	require.NoError(t, err)

	// A window changes nothing outside block mode, so it is not recorded.
	full := s
	full.Mode = order.ModeFull
	pf, err := order.Plan(full)
	require.NoError(t, err)
	full.WindowRows = 7
	_, err = order.Resume(full, pf.State(1))
	require.NoError(t, err)

	// A state from before states recorded their setup is refused.
	old := st
	old.Setup = order.Setup{}
	_, err = order.Resume(s, old)
	require.ErrorIs(t, err, order.ErrMismatch)
	require.ErrorContains(t, err, "records no shuffle mode")
}
