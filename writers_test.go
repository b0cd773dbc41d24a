package loch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// Writer processes for TestWriterProcesses and TestCrashDuringMerge are
// started by TestMain (crash_test.go) from these environment variables.
const (
	envWriter      = "LOCH_VERSIONS_WRITER"       // url|writer|commits
	envMergeWriter = "LOCH_VERSIONS_MERGE_WRITER" // url
)

// writerCommit is what a writer process reports of one winning commit.
type writerCommit struct {
	ID      string  `json:"id"`
	Rows    []int64 `json:"rows"`    // values of n appended
	Deleted []int64 `json:"deleted"` // values of n deleted
}

// versionsWriter appends rows whose n encodes (writer, sequence) to main,
// commits, and now and then deletes one of its own rows; it prints every
// winning commit as a JSON line. A delete that meets a moved branch gets
// ErrConflict: the writer refreshes and tries again.
func versionsWriter(spec string) {
	parts := strings.Split(spec, "|")
	writer, _ := strconv.Atoi(parts[1])
	commits, _ := strconv.Atoi(parts[2])
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	d, err := Open(ctx, parts[0], WithParallelism(1))
	if err != nil {
		fail(err)
	}
	r := rand.New(rand.NewPCG(uint64(writer), 3))
	out := json.NewEncoder(os.Stdout)
	var mine []int64
	for c := 0; c < commits; c++ {
		var rec writerCommit
		for i := 0; i < 10; i++ {
			n := int64(writer)<<32 | int64(c*10+i)
			rec.Rows = append(rec.Rows, n)
			if err := d.Append(ctx, Row{"w": Scalar(int32(writer)), "n": Scalar(n)}); err != nil {
				fail(err)
			}
		}
		id, err := d.Commit(ctx, fmt.Sprintf("writer %d commit %d", writer, c))
		if err != nil {
			fail(err)
		}
		rec.ID = id
		out.Encode(rec)
		mine = append(mine, rec.Rows...)
		if r.IntN(3) > 0 {
			continue
		}
		// Delete one of this writer's rows: may conflict, then retry.
		victim := mine[r.IntN(len(mine))]
		for attempt := 0; ; attempt++ {
			if err := d.Refresh(ctx); err != nil {
				fail(err)
			}
			id, err := rowWithValue(d, victim)
			if err != nil {
				fail(err)
			}
			if err := d.Delete(ctx, id); err != nil {
				fail(err)
			}
			cid, err := d.Commit(ctx, "delete")
			if errors.Is(err, ErrConflict) && attempt < 50 {
				d.Discard()
				time.Sleep(time.Duration(r.IntN(20)) * time.Millisecond)
				continue
			}
			if err != nil {
				fail(err)
			}
			out.Encode(writerCommit{ID: cid, Deleted: []int64{victim}})
			mine = removeValue(mine, victim)
			break
		}
	}
}

func removeValue(s []int64, v int64) []int64 {
	for i, x := range s {
		if x == v {
			return append(s[:i:i], s[i+1:]...)
		}
	}
	return s
}

// rowWithValue finds the row id whose column n holds v.
func rowWithValue(d *Dataset, v int64) (uint64, error) {
	col, err := d.Column("n")
	if err != nil {
		return 0, err
	}
	all, err := col.ReadRange(ctx, 0, d.Len())
	if err != nil {
		return 0, err
	}
	for i, s := range all {
		if got, _ := As[int64](s.Data); len(got) == 1 && got[0] == v {
			return d.RowID(ctx, int64(i))
		}
	}
	return 0, fmt.Errorf("no row with n=%d: %w", v, ErrNotFound)
}

// TestWriterProcesses starts N processes that append, delete and commit to
// one branch at once, on local disk and on MinIO. Afterwards every row of
// every winning commit is there exactly once (unless a winning commit
// deleted it), and the history is a valid graph holding every winning
// commit.
func TestWriterProcesses(t *testing.T) {
	for _, name := range sortedKeys(localAndS3) {
		t.Run(name, func(t *testing.T) {
			url := localAndS3[name](t)
			d, err := Create(ctx, url, schema.Schema{Columns: []schema.Column{
				{Name: "w", DType: schema.Int32}, {Name: "n", DType: schema.Int64}}})
			require.NoError(t, err)
			defer d.Close()
			exe, err := os.Executable()
			require.NoError(t, err)
			const writers, commits = 4, 6
			var procs []*exec.Cmd
			var outs []*bytes.Buffer
			for w := 0; w < writers; w++ {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d", envWriter, url, w, commits))
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, os.Stderr
				require.NoError(t, cmd.Start())
				procs, outs = append(procs, cmd), append(outs, &out)
			}
			want := map[int64]bool{}
			winners := map[string]bool{}
			for w, cmd := range procs {
				require.NoError(t, cmd.Wait(), "writer %d", w)
				sc := bufio.NewScanner(outs[w])
				for sc.Scan() {
					var rec writerCommit
					require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
					require.False(t, winners[rec.ID], "commit %s reported twice", rec.ID)
					winners[rec.ID] = true
					for _, n := range rec.Rows {
						want[n] = true
					}
					for _, n := range rec.Deleted {
						require.True(t, want[n])
						delete(want, n)
					}
				}
			}
			require.NoError(t, d.Refresh(ctx))
			col := mustColumn(t, d, "n")
			all, err := col.ReadRange(ctx, 0, d.Len())
			require.NoError(t, err)
			got := map[int64]bool{}
			for _, s := range all {
				v, err := As[int64](s.Data)
				require.NoError(t, err)
				require.False(t, got[v[0]], "row n=%d twice", v[0])
				got[v[0]] = true
			}
			require.Equal(t, want, got)

			// The history of main is a chain through every winning commit,
			// each commit's parent existing and older.
			log, err := d.Log(ctx)
			require.NoError(t, err)
			inLog := map[string]bool{}
			for i, c := range log {
				require.False(t, inLog[c.ID])
				inLog[c.ID] = true
				if i+1 < len(log) {
					require.Equal(t, []string{log[i+1].ID}, c.Parents, "linear history on one branch")
				}
			}
			for id := range winners {
				require.True(t, inLog[id], "winning commit %s is in the history", id)
			}
			require.Len(t, log, len(winners)+1) // and the create commit
			_, problems, err := d.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

// mergeWriter loops forever: appends to branch side, commits, merges side
// into main, appends to main, deletes a row on main, merges main into side,
// tags now and then. Killed at random by TestCrashDuringMerge.
func mergeWriter(url string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	next := rand.Int64N(1<<40) << 20 // values of n unique across kills
	for i := 0; ; i++ {
		for _, br := range []string{"side", "main"} {
			d, err := Open(ctx, url, WithRef(br), WithParallelism(2))
			if err != nil {
				fail(err)
			}
			rows := make([]Row, 50)
			for k := range rows {
				v := make([]float32, 256)
				for j := range v {
					v[j] = float32(k)
				}
				rows[k] = Row{"v": Tensor([]int{256}, v), "n": Scalar(next)}
				next++
			}
			if err := d.Extend(ctx, rows); err != nil {
				fail(err)
			}
			if br == "main" && d.Len() > 0 {
				id, err := d.RowID(ctx, int64(i)%d.Len())
				if err != nil {
					fail(err)
				}
				if err := d.Delete(ctx, id); err != nil {
					fail(err)
				}
			}
			if _, err := d.Commit(ctx, br); err != nil {
				fail(err)
			}
			src := map[string]string{"main": "side", "side": "main"}[br]
			if _, err := d.Merge(ctx, src, MergeOptions{Strategy: MergeTheirs}); err != nil {
				fail(err)
			}
			if i%3 == 0 {
				if _, err := d.CreateTag(ctx, fmt.Sprintf("t%d-%s", i, br), ""); err != nil && !errors.Is(err, ErrExists) {
					fail(err)
				}
			}
			d.Close()
		}
	}
}

// TestCrashDuringMerge kills a process that commits, merges and tags on two
// branches at random moments, and checks after each kill that every branch
// and tag opens and reads, that rows are unique, and that verify is clean.
// When every random kill came before the first merge (a loaded machine can
// be that slow to start the writer), one more writer runs until it has
// merged, and is killed then.
func TestCrashDuringMerge(t *testing.T) {
	r := testseed.Rand(t, 13)
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "v", DType: schema.Float32, Shape: schema.Shape{256}, ChunkCompression: schema.LZ4, ChunkBytes: 32 << 10},
		{Name: "n", DType: schema.Int64},
	}})
	_, err := d.CreateBranch(ctx, "side", "main")
	require.NoError(t, err)
	for round := 0; round < 10; round++ {
		cmd := startMergeWriter(t, dir)
		time.Sleep(time.Duration(30+r.IntN(500)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		checkAfterKill(t, d, dir, round)
	}
	if merges, err := countMerges(d); err == nil && merges == 0 {
		cmd := startMergeWriter(t, dir)
		require.Eventually(t, func() bool {
			n, err := countMerges(d)
			return err != nil || n > 0
		}, 5*time.Minute, 20*time.Millisecond, "the writer merges")
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		checkAfterKill(t, d, dir, 10)
	}
	merges, err := countMerges(d)
	require.NoError(t, err)
	t.Logf("%d merges on main", merges)
	require.NotZero(t, merges, "the writer got as far as a merge")
}

// startMergeWriter starts mergeWriter on the dataset at dir in a process of
// its own (this test binary, run again).
func startMergeWriter(t *testing.T, dir string) *exec.Cmd {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envMergeWriter+"="+dir)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	return cmd
}

// checkAfterKill checks, after the writer's kill in round, that every ref
// of the dataset at dir opens and reads, that no value of n is held twice
// on one ref, and that verify is clean.
func checkAfterKill(t *testing.T, d *Dataset, dir string, round int) {
	refs, err := d.Refs(ctx)
	require.NoError(t, err)
	for _, ref := range refs {
		h, err := Open(ctx, dir, WithRef(ref.Name))
		require.NoError(t, err, "round %d: %s %s opens after a kill", round, ref.Kind, ref.Name)
		col := mustColumn(t, h, "n")
		all, err := col.ReadRange(ctx, 0, h.Len())
		require.NoError(t, err, "round %d: %s reads", round, ref.Name)
		seen := map[int64]bool{}
		for _, s := range all {
			v, _ := As[int64](s.Data)
			require.False(t, seen[v[0]], "round %d: %s holds n=%d twice", round, ref.Name, v[0])
			seen[v[0]] = true
		}
		h.Close()
	}
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems, "round %d", round)
}

// countMerges counts the merge commits (two parents) in main's history as
// it is now.
func countMerges(d *Dataset) (int, error) {
	if err := d.Refresh(ctx); err != nil {
		return 0, err
	}
	log, err := d.Log(ctx)
	if err != nil {
		return 0, err
	}
	merges := 0
	for _, c := range log {
		if len(c.Parents) == 2 {
			merges++
		}
	}
	return merges, nil
}
