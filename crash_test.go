package loch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

const crashBatch = 300

// TestMain lets the test binary act as the writer process of TestCrash.
func TestMain(m *testing.M) {
	if dir := os.Getenv("LOCH_CRASH_WRITER"); dir != "" {
		crashWriter(dir)
		return
	}
	if spec := os.Getenv(envWriter); spec != "" {
		versionsWriter(spec)
		return
	}
	if url := os.Getenv(envMergeWriter); url != "" {
		mergeWriter(url)
		return
	}
	if spec := os.Getenv(envProcWriter); spec != "" {
		procWriter(spec)
		return
	}
	os.Exit(m.Run())
}

// crashWriter appends batches of rows whose values encode (batch, index)
// and commits after each, until killed.
func crashWriter(dir string) {
	d, err := Open(ctx, dir, WithParallelism(2))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for b := int64(d.Len() / crashBatch); ; b++ {
		rows := make([]Row, crashBatch)
		for i := range rows {
			v := make([]float32, 512)
			for k := range v {
				v[k] = float32(b*crashBatch + int64(i))
			}
			rows[i] = Row{"v": Tensor([]int{512}, v), "n": Scalar(b*crashBatch + int64(i))}
		}
		if err := d.Extend(ctx, rows); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		if _, err := d.Commit(ctx, "batch "+strconv.FormatInt(b, 10)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
	}
}

// TestCrash kills a writer process at random moments, over and over, and
// checks after each kill that the dataset opens at its last commit, holds
// exactly the committed batches and verifies clean.
func TestCrash(t *testing.T) {
	r := testseed.Rand(t, 9)
	_, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "v", DType: schema.Float32, Shape: schema.Shape{512}, ChunkCompression: schema.LZ4, ChunkBytes: 64 << 10},
		{Name: "n", DType: schema.Int64},
	}})
	exe, err := os.Executable()
	require.NoError(t, err)
	var lastLen int64
	for round := 0; round < 12; round++ {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "LOCH_CRASH_WRITER="+dir)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		time.Sleep(time.Duration(20+r.IntN(400)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		d, err := Open(ctx, dir)
		require.NoError(t, err, "round %d: the dataset must open after a kill", round)
		require.Zero(t, d.Len()%crashBatch, "round %d: only whole commits are visible", round)
		require.GreaterOrEqual(t, d.Len(), lastLen, "round %d: no committed row is lost", round)
		lastLen = d.Len()
		n, _ := d.Column("n")
		v, _ := d.Column("v")
		for i := int64(0); i < d.Len(); i += 97 {
			s, err := n.Read(ctx, i, nil)
			require.NoError(t, err)
			got, _ := As[int64](s.Data)
			require.Equal(t, i, got[0])
			s, err = v.Read(ctx, i, nil)
			require.NoError(t, err)
			f, _ := As[float32](s.Data)
			require.Equal(t, float32(i), f[511])
		}
		_, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		require.Empty(t, problems, "round %d", round)
		d.Close()
	}
	t.Logf("%d rows committed across kills", lastLen)
	entries, _ := filepath.Glob(filepath.Join(dir, "log", "*"))
	require.NotEmpty(t, entries)
}

// gatedStore holds every chunk upload until gate is closed (or the
// upload's context ends): an object store too slow to finish a commit.
type gatedStore struct {
	storage.Store
	gate    chan struct{}
	waiting chan struct{} // a value for each upload held, when it has room
}

func (g *gatedStore) Put(ctx context.Context, key string, data []byte) error {
	if strings.HasPrefix(key, keys.Chunk.Prefix()) {
		select {
		case g.waiting <- struct{}{}:
		default:
		}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Store.Put(ctx, key, data)
}

// TestCommitInterruptedWhileUploading: a commit whose context ends (Ctrl-C)
// while its chunks are still uploading returns then, without waiting for
// the uploads, and commits nothing; the staged writes stay, and the next
// commit, once the uploads can finish, commits them.
func TestCommitInterruptedWhileUploading(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "commit-interrupted")
	inner, err := storage.Open(ctx, dir)
	require.NoError(t, err)
	gs := &gatedStore{Store: inner, gate: make(chan struct{})}
	s := schema.Schema{Columns: []schema.Column{{Name: "x", DType: schema.Float32, Shape: schema.Shape{3}}}}
	d, err := Create(ctx, dir, s, WithStore(gs))
	require.NoError(t, err)
	defer d.Close()
	v0 := d.Version()
	for i := range 10 {
		require.NoError(t, d.Append(ctx, Row{"x": Tensor([]int{3}, []float32{float32(i), 0, 0})}))
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		time.Sleep(50 * time.Millisecond)
		cancel() // the uploads are held: a commit that waited for them would never return
	}()
	_, err = d.Commit(cctx, "interrupted")
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, v0, d.Version())
	require.EqualValues(t, 0, d.Len())

	close(gs.gate)
	v1, err := d.Commit(ctx, "after")
	require.NoError(t, err)
	require.NotEqual(t, v0, v1)
	require.EqualValues(t, 10, d.Len())
}

// TestExtendInterruptedWhileUploadsAreFull: an Extend that waits for upload
// slots (a slow store holds them all) returns when it is interrupted,
// having staged all its rows or none, and the stage commits whole once the
// store answers.
func TestExtendInterruptedWhileUploadsAreFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "extend-interrupted")
	inner, err := storage.Open(ctx, dir)
	require.NoError(t, err)
	gs := &gatedStore{Store: inner, gate: make(chan struct{}), waiting: make(chan struct{}, 2)}
	s := schema.Schema{Columns: []schema.Column{{Name: "x", DType: schema.Float32, Shape: schema.Shape{256}, ChunkBytes: 1024}}}
	d, err := Create(ctx, dir, s, WithStore(gs), WithParallelism(1))
	require.NoError(t, err)
	defer d.Close()
	rows := make([]Row, 40) // a chunk each: far more than the 2 upload slots
	for i := range rows {
		rows[i] = Row{"x": Tensor([]int{256}, make([]float32, 256))}
	}
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		<-gs.waiting
		<-gs.waiting
		cancel() // both slots are held: an Extend that waited for one would never return
	}()
	require.NoError(t, d.Extend(cctx, rows), "the rows were prepared before the interrupt: all are staged")
	close(gs.gate)
	_, err = d.Commit(ctx, "after")
	require.NoError(t, err)
	require.EqualValues(t, 40, d.Len())
}
