package loch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

// envProcWriter starts a writer process of BenchmarkWriterProcesses
// (TestMain): url|writer|owned|seconds.
const envProcWriter = "LOCH_BENCH_PROC_WRITER"

// procWriterReport is what a writer process prints when its time is up.
type procWriterReport struct {
	Commits int              `json:"commits"`
	Failed  int              `json:"failed"`
	Rows    []int64          `json:"rows"` // n of the rows it appended
	Last    map[uint64]int64 `json:"last"` // its owned rows' last v
}

// procWriter appends 5 rows and updates one of its own rows (ids
// [writer*owned, (writer+1)*owned)) per commit until its time is up, and
// prints a procWriterReport. A failed commit is counted, not retried.
func procWriter(spec string) {
	p := strings.Split(spec, "|")
	url := p[0]
	w, _ := strconv.Atoi(p[1])
	owned, _ := strconv.Atoi(p[2])
	secs, _ := strconv.Atoi(p[3])
	d, err := Open(ctx, url, WithParallelism(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	r := rand.New(rand.NewPCG(uint64(w), 34))
	rep := procWriterReport{Last: map[uint64]int64{}}
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for c := 0; time.Now().Before(deadline); c++ {
		var rows []int64
		for i := 0; i < 5; i++ {
			n := int64(w)<<40 | int64(c*5+i)
			rows = append(rows, n)
			if err := d.Append(ctx, Row{"w": Scalar(int32(w)), "n": Scalar(n), "v": Scalar(int64(0))}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(3)
			}
		}
		id := uint64(w*owned + r.IntN(owned))
		if err := d.Update(ctx, id, Row{"v": Scalar(int64(c + 1))}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if _, err := d.Commit(ctx, fmt.Sprintf("writer %d commit %d", w, c)); err != nil {
			fmt.Fprintln(os.Stderr, "commit:", err)
			rep.Failed++
			d.Discard()
			continue
		}
		rep.Commits++
		rep.Rows = append(rep.Rows, rows...)
		rep.Last[id] = int64(c + 1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(rep)
	os.Exit(0)
}

// BenchmarkWriterProcesses runs 8 writer processes on one dataset for
// LOCH_BENCH_WRITERS_SECONDS (default 20; bench/RESULTS.md has 120), each
// appending rows and updating its own rows in every commit, on local disk
// and on MinIO, and checks that no commit failed and no row was lost or
// duplicated: every appended row once, every owned row with its writer's
// last value. It prints commits/s.
func BenchmarkWriterProcesses(b *testing.B) {
	secs := 20
	if v, err := strconv.Atoi(os.Getenv("LOCH_BENCH_WRITERS_SECONDS")); err == nil && v > 0 {
		secs = v
	}
	const writers, owned = 8, 50
	for _, where := range testserver.Stores {
		b.Run(where, func(b *testing.B) {
			url := testserver.StoreURL(b, where)
			d, err := Create(ctx, url, schema.Schema{Columns: []schema.Column{
				{Name: "w", DType: schema.Int32}, {Name: "n", DType: schema.Int64}, {Name: "v", DType: schema.Int64}}})
			require.NoError(b, err)
			defer d.Close()
			var seed []Row
			for i := 0; i < writers*owned; i++ {
				seed = append(seed, Row{"w": Scalar(int32(i / owned)), "n": Scalar(int64(-1 - i)), "v": Scalar(int64(0))})
			}
			require.NoError(b, d.Extend(ctx, seed))
			_, err = d.Commit(ctx, "owned rows")
			require.NoError(b, err)
			exe, err := os.Executable()
			require.NoError(b, err)
			var procs []*exec.Cmd
			var outs []*bytes.Buffer
			start := time.Now()
			for w := 0; w < writers; w++ {
				cmd := exec.Command(exe, "-test.run=^$")
				cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%d|%d", envProcWriter, url, w, owned, secs))
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, os.Stderr
				require.NoError(b, cmd.Start())
				procs, outs = append(procs, cmd), append(outs, &out)
			}
			var commits, failed int
			want := map[int64]int{}
			last := map[uint64]int64{}
			for w, cmd := range procs {
				require.NoError(b, cmd.Wait(), "writer %d", w)
				var rep procWriterReport
				sc := bufio.NewScanner(outs[w])
				require.True(b, sc.Scan(), "writer %d printed no report", w)
				require.NoError(b, json.Unmarshal(sc.Bytes(), &rep))
				commits += rep.Commits
				failed += rep.Failed
				for _, n := range rep.Rows {
					want[n]++
				}
				for id, v := range rep.Last {
					last[id] = v
				}
			}
			elapsed := time.Since(start)
			require.NoError(b, d.Refresh(ctx))
			col, err := d.Column("n")
			require.NoError(b, err)
			ns, err := col.ReadRange(ctx, 0, d.Len())
			require.NoError(b, err)
			vcol, err := d.Column("v")
			require.NoError(b, err)
			vs, err := vcol.ReadRange(ctx, 0, d.Len())
			require.NoError(b, err)
			got := map[int64]int{}
			for i, s := range ns {
				n, _ := As[int64](s.Data)
				got[n[0]]++
				if n[0] < 0 { // an owned row: its writer's last value
					id, err := d.RowID(ctx, int64(i))
					require.NoError(b, err)
					v, _ := As[int64](vs[i].Data)
					require.Equal(b, last[id], v[0], "owned row %d", id)
				}
			}
			lost, dup := 0, 0
			for n, k := range want {
				switch {
				case got[n] == 0:
					lost++
				case got[n] > k:
					dup++
				}
			}
			require.Zero(b, failed, "failed commits")
			require.Zero(b, lost, "lost rows")
			require.Zero(b, dup, "duplicated rows")
			require.EqualValues(b, len(want)+writers*owned, d.Len())
			fmt.Printf("%s: %d writer processes for %v: %d commits (%.1f commits/s), %d failed, %d rows appended, 0 lost, 0 duplicated, every updated row holds its writer's last value\n",
				where, writers, elapsed.Round(time.Second), commits, float64(commits)/elapsed.Seconds(), failed, len(want))
		})
	}
}
