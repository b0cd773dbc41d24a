package loader

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

const memBudget = 24 << 20

func TestMain(m *testing.M) {
	if dir := os.Getenv("LOCH_MEMORY_CHILD"); dir != "" {
		memoryChild(dir)
		return
	}
	os.Exit(m.Run())
}

func vm(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), field+":") {
			kb, _ := strconv.ParseInt(strings.Fields(s.Text())[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// memoryChild streams the whole dataset with a prefetch budget of
// memBudget and prints its resident memory before and at peak.
func memoryChild(dir string) {
	debug.SetGCPercent(50)
	d, err := loch.Open(ctx, dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	view := d.Scan()
	if err := view.Load(ctx, 4); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	base := vm("VmRSS")
	l, err := New(ctx, view, Config{BatchSize: 16, Shuffle: "none", PrefetchBytes: memBudget, PrefetchBatches: 64})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	var rows int
	for {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		rows += b.Len()
		l.Release(b)
	}
	fmt.Println(rows, base, vm("VmHWM"), l.Stats().PeakInFlight)
}

// TestBoundedMemory streams a dataset ten times larger than the prefetch
// budget in a child process: its peak RSS stays within its starting RSS
// plus twice the budget (Go's heap may hold garbage up to GOGC) plus a
// fixed margin, and the loader's own accounting stays near the budget.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 256 MB")
	}
	dir := filepath.Join(t.TempDir(), "big")
	d, err := loch.Create(ctx, dir, schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{256, 256}},
	}})
	require.NoError(t, err)
	v := make([]float32, 256*256)
	const rows = 1000 // 256 MiB: more than 10x the budget
	for i := 0; i < rows; i++ {
		v[0] = float32(i)
		require.NoError(t, d.Append(ctx, loch.Row{"x": loch.Tensor([]int{256, 256}, v)}))
	}
	_, err = d.Commit(ctx, "big")
	require.NoError(t, err)
	d.Close()

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCH_MEMORY_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	var n, base, peak, inflight int64
	_, err = fmt.Sscan(string(out), &n, &base, &peak, &inflight)
	require.NoError(t, err, string(out))
	require.EqualValues(t, rows, n)
	// The margin covers the runtime, the dataset's metadata and the
	// heap's growth between collections, which varies from run to run:
	// peaks of 150-192 MiB were seen on a 2-vCPU VM, where 64 MiB of margin
	// failed once in about ten CI runs. The bound stays well under the
	// dataset's 256 MiB, which a loader that held what it read would reach.
	const margin = 96 << 20
	t.Logf("dataset %d MiB, budget %d MiB: RSS %d MiB before, %d MiB at peak; loader in-flight peak %d MiB",
		rows*256*256*4>>20, memBudget>>20, base>>20, peak>>20, inflight>>20)
	if !raceEnabled {
		require.Less(t, peak, base+2*memBudget+margin)
	}
	// A batch is admitted while the in-flight bytes are under the budget,
	// so the budget can be exceeded by one batch's chunks and buffer: here
	// at most 2 chunks of 8 MiB and 16 segments of 1 MiB.
	require.LessOrEqual(t, inflight, int64(memBudget+2*(8<<20)+16*(loch.SegmentBytes)+(1<<20)))
}
