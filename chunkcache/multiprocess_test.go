//go:build unix

package chunkcache_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/testseed"
)

// The multi-process tests run this test binary again as child processes,
// which TestMain sends to childMain when childEnv is set.
const childEnv = "CHUNKCACHE_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	os.Exit(m.Run())
}

// Children share a pool of objects: the same keys in every process.
const (
	poolSize    = 48
	poolSeed    = 1000
	childBudget = 128 << 10
	maxObjSize  = 24 << 10
	fillBudget  = 8 << 20 // the whole pool: nothing is evicted
)

func pool() []object {
	objs := make([]object, poolSize)
	rng := rand.New(rand.NewPCG(poolSeed, 0))
	for i := range objs {
		objs[i] = chunk(poolSeed+uint64(i), 1+rng.IntN(maxObjSize))
	}
	return objs
}

// childMain runs one child: mode "mix" does CHILD_OPS random Puts and Gets
// and prints its Stats as JSON; "loop" does them until killed, printing a
// line after each; "fill" fills every object of the pool in its turn
// (fillAll) and prints how many it fetched; "fsize" limits its file size (RLIMIT_FSIZE) so that a
// Put fails in the middle of its write.
func childMain(mode string) int {
	if err := runChild(mode); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}

func runChild(mode string) error {
	ctx := context.Background()
	dir := os.Getenv("CHILD_DIR")
	seed, _ := strconv.ParseUint(os.Getenv("CHILD_SEED"), 10, 64)
	if mode == "fsize" {
		var lim syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			return err
		}
		lim.Cur = 16 << 10
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			return err
		}
	}
	budget := int64(childBudget)
	if mode == "fill" {
		budget = fillBudget
	}
	c, err := chunkcache.Open(dir, budget, nil)
	if err != nil {
		return err
	}
	defer c.Close()
	if mode == "fill" {
		objs := pool()
		rng := rand.New(rand.NewPCG(seed, 2))
		rng.Shuffle(len(objs), func(i, j int) { objs[i], objs[j] = objs[j], objs[i] })
		n, err := fillAll(ctx, c, objs)
		if err != nil {
			return err
		}
		return json.NewEncoder(os.Stdout).Encode(n)
	}

	if mode == "fsize" {
		small, big := chunk(1, 8<<10), chunk(2, 32<<10)
		if err := c.Put(ctx, small.key, small.data); err != nil {
			return err
		}
		err := c.Put(ctx, big.key, big.data)
		if !errors.Is(err, chunkcache.ErrCacheWrite) || !errors.Is(err, syscall.EFBIG) {
			return fmt.Errorf("put of 32 KiB under a 16 KiB file size limit: got %v, want ErrCacheWrite and EFBIG", err)
		}
		if _, ok, err := c.Get(ctx, big.key); ok || err != nil {
			return fmt.Errorf("get after a failed put: ok %v, err %v", ok, err)
		}
		return json.NewEncoder(os.Stdout).Encode(c.Stats())
	}

	objs := pool()
	rng := rand.New(rand.NewPCG(seed, 1))
	ops, _ := strconv.Atoi(os.Getenv("CHILD_OPS"))
	out := bufio.NewWriter(os.Stdout)
	for i := 0; mode == "loop" || i < ops; i++ {
		o := objs[rng.IntN(len(objs))]
		switch rng.IntN(3) {
		case 0:
			if err := c.Put(ctx, o.key, o.data); err != nil {
				return err
			}
		case 1: // through the held files, which other processes evict
			off := rng.IntN(len(o.data))
			buf := make([]byte, rng.IntN(len(o.data)-off)+1)
			ok, err := c.ReadRange(ctx, o.key, int64(off), buf)
			if err != nil {
				return err
			}
			if ok && string(buf) != string(o.data[off:off+len(buf)]) {
				return fmt.Errorf("read range %d+%d of %s: wrong bytes", off, len(buf), o.key)
			}
		default:
			got, ok, err := c.Get(ctx, o.key)
			if err != nil {
				return err
			}
			if ok && string(got) != string(o.data) {
				return fmt.Errorf("get %s: wrong bytes", o.key)
			}
		}
		if mode == "loop" {
			fmt.Fprintln(out, i)
			out.Flush()
		}
	}
	if err := json.NewEncoder(out).Encode(c.Stats()); err != nil {
		return err
	}
	return out.Flush()
}

func child(t *testing.T, mode, dir string, seed uint64, ops int) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		childEnv+"="+mode,
		"CHILD_DIR="+dir,
		"CHILD_SEED="+strconv.FormatUint(seed, 10),
		"CHILD_OPS="+strconv.Itoa(ops),
	)
	cmd.Stderr = os.Stderr
	return cmd
}

// requireConsistent checks a cache directory that no process uses: every
// object complete and verified, within budget, the recorded total exact, no
// temporary file left.
func requireConsistent(t *testing.T, dir string, budget int64) map[string][]byte {
	t.Helper()
	objs := walkObjects(t, dir)
	total := totalLen(objs)
	require.LessOrEqual(t, total, budget, "objects within budget")
	require.Equal(t, total, recordedTotal(t, dir), "recorded total")
	require.Empty(t, tempFiles(t, dir), "temporary files")
	return objs
}

// TestMultiProcess: processes Put and Get overlapping keys in one small
// cache directory. Afterwards every file is a complete verified object, the
// total is within budget and recorded exactly, no temporary file remains,
// and the processes' counters add up: what they wrote minus what they
// evicted is what the directory holds.
func TestMultiProcess(t *testing.T) {
	dir := t.TempDir()
	seed := testseed.Seed(t)
	const procs, ops = 6, 400
	outs := make([][]byte, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { outs[i], errs[i] = child(t, "mix", dir, seed+uint64(i), ops).Output() })
	}
	wg.Wait()
	var sum chunkcache.Stats
	for i := range procs {
		require.NoError(t, errs[i], "child %d (seed %d)", i, seed+uint64(i))
		var st chunkcache.Stats
		require.NoError(t, json.Unmarshal(outs[i], &st))
		sum.Hits += st.Hits
		sum.Misses += st.Misses
		sum.ReadBytes += st.ReadBytes
		sum.Puts += st.Puts
		sum.WrittenBytes += st.WrittenBytes
		sum.Evictions += st.Evictions
		sum.EvictedBytes += st.EvictedBytes
		sum.Corrupt += st.Corrupt
	}
	t.Logf("children together: %+v", sum)
	objs := requireConsistent(t, dir, childBudget)
	require.Zero(t, sum.Corrupt)
	require.Equal(t, int64(len(objs)), sum.Puts-sum.Evictions, "objects stored minus evicted")
	require.Equal(t, totalLen(objs), sum.WrittenBytes-sum.EvictedBytes, "bytes stored minus evicted")
	require.Positive(t, sum.Hits)
	require.Positive(t, sum.Evictions)
}

// TestFillTurnsAcrossProcesses: processes that all miss the same objects
// at once, each filling them in its turn, fetch each object once between
// them.
func TestFillTurnsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	seed := testseed.Seed(t)
	const procs = 4
	outs := make([][]byte, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i := range procs {
		wg.Go(func() { outs[i], errs[i] = child(t, "fill", dir, seed+uint64(i), 0).Output() })
	}
	wg.Wait()
	fetched := 0
	for i := range procs {
		require.NoError(t, errs[i], "child %d (seed %d)", i, seed+uint64(i))
		var n int
		require.NoError(t, json.Unmarshal(outs[i], &n))
		fetched += n
	}
	require.Equal(t, poolSize, fetched, "each object fetched by one process (seed %d)", seed)
	require.Len(t, requireConsistent(t, dir, fillBudget), poolSize)
}

// TestKilledProcesses: processes killed at arbitrary points leave only
// complete objects, a recorded total no smaller than the truth, and at most
// a temporary file each; the next Open (no other user) cleans up and
// recounts.
func TestKilledProcesses(t *testing.T) {
	dir := t.TempDir()
	seed := testseed.Seed(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		cmd := child(t, "loop", dir, seed+uint64(i), 0)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		// Let it run a while, then kill it wherever it is.
		target := 100 + int((seed+uint64(i))%100)
		wg.Go(func() {
			sc := bufio.NewScanner(stdout)
			for n := 0; sc.Scan(); n++ {
				if n == target {
					errs[i] = cmd.Process.Kill()
				}
			}
			_ = cmd.Wait()
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	objs := walkObjects(t, dir) // complete, verified objects only
	require.GreaterOrEqual(t, recordedTotal(t, dir), totalLen(objs), "the recorded total never falls below the truth")
	require.LessOrEqual(t, len(tempFiles(t, dir)), 3, "at most a temporary file per killed process")

	d := openDisk(t, dir, childBudget, nil)
	after := requireConsistent(t, dir, childBudget)
	size, err := d.Size()
	require.NoError(t, err)
	require.Equal(t, totalLen(after), size)
	for key := range after {
		require.Contains(t, objs, key, "Open only removes")
	}
}

// TestFailedWriteInChild: a Put whose write fails half way (the process's
// file size limit, a real EFBIG from the kernel, like a full disk) returns
// ErrCacheWrite and leaves no trace.
func TestFailedWriteInChild(t *testing.T) {
	dir := t.TempDir()
	out, err := child(t, "fsize", dir, 0, 0).Output()
	require.NoError(t, err)
	var st chunkcache.Stats
	require.NoError(t, json.Unmarshal(out, &st))
	require.Equal(t, int64(1), st.Puts)
	objs := requireConsistent(t, dir, childBudget)
	require.Len(t, objs, 1)
	require.Equal(t, int64(8<<10), totalLen(objs))
}
