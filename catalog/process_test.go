package catalog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// envCreator makes the test binary a creator process (see TestMain):
// root|creator|names|start, start being a Unix time in nanoseconds to wait
// for, so that the processes race.
const envCreator = "LOCH_CATALOG_CREATOR"

// creation is what a creator process reports of one CreateTable.
type creation struct {
	Name   string `json:"name"`
	Won    bool   `json:"won"`
	Exists bool   `json:"exists"` // lost with loch.ErrExists
	Err    string `json:"err,omitempty"`
}

// creator creates every table of names (comma-separated) in a catalog,
// writes its own number into those it wins, and prints one JSON line per
// name.
func creator(spec string) {
	parts := strings.Split(spec, "|")
	root, names := parts[0], strings.Split(parts[2], ",")
	w, _ := strconv.Atoi(parts[1])
	start, _ := strconv.ParseInt(parts[3], 10, 64)
	c, err := Open(ctx, root)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer c.Close()
	time.Sleep(time.Until(time.Unix(0, start)))
	enc := json.NewEncoder(os.Stdout)
	for _, name := range names {
		rec := creation{Name: name}
		d, err := c.CreateTable(ctx, name, rowsSchema)
		switch {
		case err == nil:
			rec.Won = true
			if err := d.Append(ctx, loch.Row{"n": loch.Scalar(int64(w))}); err == nil {
				_, err = d.Commit(ctx, "winner")
				if err != nil {
					rec.Err = err.Error()
				}
			}
			d.Close()
		case errors.Is(err, loch.ErrExists):
			rec.Exists = true
		default:
			rec.Err = err.Error()
		}
		_ = enc.Encode(rec)
	}
}

// TestCreateProcesses has several processes create the same table names
// at once, on local disk and on MinIO: each name is won by exactly one
// process, every other gets ErrExists, and the table holds the winner's
// row.
func TestCreateProcesses(t *testing.T) {
	onBackends(t, []string{"local", "s3"}, func(t *testing.T, root string) {
		c := mustCreate(t, root)
		exe, err := os.Executable()
		require.NoError(t, err)
		const procs = 3
		tables := []string{"frames", "Labels", "episodes", "x"}
		start := time.Now().Add(time.Second).UnixNano()
		var cmds []*exec.Cmd
		var outs []*bytes.Buffer
		for w := range procs {
			order := append([]string{}, tables...)
			if w%2 == 1 { // some race in another order
				for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
					order[i], order[j] = order[j], order[i]
				}
			}
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%d|%s|%d", envCreator, root, w, strings.Join(order, ","), start))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			require.NoError(t, cmd.Start())
			cmds, outs = append(cmds, cmd), append(outs, &out)
		}
		winners := map[string]int{}
		for w, cmd := range cmds {
			require.NoError(t, cmd.Wait(), "creator %d", w)
			sc := bufio.NewScanner(outs[w])
			n := 0
			for sc.Scan() {
				var rec creation
				require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
				require.Empty(t, rec.Err, "creator %d, table %s", w, rec.Name)
				n++
				if rec.Won {
					prev, seen := winners[rec.Name]
					require.False(t, seen, "table %s won by creators %d and %d", rec.Name, prev, w)
					winners[rec.Name] = w
				} else {
					require.True(t, rec.Exists, "creator %d lost %s with ErrExists", w, rec.Name)
				}
			}
			require.Equal(t, len(tables), n, "creator %d reported every table", w)
		}
		require.Len(t, winners, len(tables))
		require.Equal(t, []string{"episodes", "frames", "Labels", "x"}, names(t, c))
		for _, tb := range tables {
			d, err := c.OpenTable(ctx, tb)
			require.NoError(t, err)
			require.Equal(t, []int64{int64(winners[tb])}, readRows(t, d), tb)
			require.NoError(t, d.Close())
		}
	})
}
