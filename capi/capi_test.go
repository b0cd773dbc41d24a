package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/transform"
)

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{0, 4096}, {1, 4096}, {4096, 4096}, {4097, 8192}, {65536, 65536},
		{65537, 73728}, {1 << 20, 1 << 20}, {1<<20 + 1, 1<<20 + 1<<17},
	} {
		require.Equal(t, tc.want, sizeClass(tc.n), "sizeClass(%d)", tc.n)
	}
	for n := 1; n < 1<<26; n = n*3 + 7 {
		c := sizeClass(n)
		require.GreaterOrEqual(t, c, n)
		require.LessOrEqual(t, float64(c), max(float64(n)*1.125, float64(n+4095)), "slack of sizeClass(%d) = %d", n, c)
	}
}

func TestPoolReusesBuffers(t *testing.T) {
	p := &bufPool{live: map[unsafe.Pointer]int{}, free: map[int][]unsafe.Pointer{}, limit: 1 << 20}
	a := p.alloc(10000)
	require.Len(t, a, 10000)
	require.Zero(t, uintptr(ptrOf(a))%bufAlign)
	require.True(t, p.release(ptrOf(a)))
	require.False(t, p.release(ptrOf(a)), "a second release is refused")
	b := p.alloc(9000) // same class
	require.Equal(t, ptrOf(a), ptrOf(b))
	big := p.alloc(2 << 20) // over the pool's limit: freed, not kept
	require.True(t, p.release(ptrOf(big)))
	live, free := p.stats()
	require.Equal(t, sizeClass(9000), live)
	require.Zero(t, free)
	p.release(ptrOf(b))
	p.trim()
	_, free = p.stats()
	require.Zero(t, free)
}

func TestPoolReleasesMany(t *testing.T) {
	p := &bufPool{live: map[unsafe.Pointer]int{}, free: map[int][]unsafe.Pointer{}, limit: 3 * 4096}
	bufs := []unsafe.Pointer{ptrOf(p.alloc(4096)), ptrOf(p.alloc(4096)), ptrOf(p.alloc(4096)), ptrOf(p.alloc(4096))}
	// NULL and a pointer given twice are skipped, as release skips them.
	p.releaseAll([]unsafe.Pointer{bufs[0], nil, bufs[1], bufs[0], bufs[2], bufs[3]})
	live, free := p.stats()
	require.Zero(t, live)
	require.Equal(t, 3*4096, free, "the pool keeps what its limit allows and frees the rest")
	require.False(t, p.release(bufs[1]), "each buffer was given back once")
	got := map[unsafe.Pointer]bool{}
	for range 3 {
		got[ptrOf(p.alloc(4096))] = true
	}
	require.Len(t, got, 3, "the kept buffers are served again, each once")
	p.releaseAll(nil)
	live, _ = p.stats()
	require.Equal(t, 3*4096, live)
}

func TestCallerProcIsAddedOnceForCallsPerBatch(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(procs) })
	var c callerProc
	require.Zero(t, c.added.Load(), "no P before a call per batch")
	c.add()
	c.add()
	if os.Getenv("GOMAXPROCS") != "" {
		// Set by the user: left as it is.
		require.Zero(t, c.added.Load())
		require.Equal(t, procs, runtime.GOMAXPROCS(0))
		return
	}
	require.EqualValues(t, 1, c.added.Load(), "one P, however many calls")
	require.Equal(t, procs+1, runtime.GOMAXPROCS(0))
}

func TestLoaderWorkersLeaveTheCallerAProc(t *testing.T) {
	// One worker per P of the process as it was: the P added for calling
	// threads (if any) is not a worker's.
	require.Equal(t, max(runtime.GOMAXPROCS(0)-int(callerProcs.added.Load()), 1), loaderWorkers())
	require.GreaterOrEqual(t, loaderWorkers(), 1)
	procs, added := runtime.GOMAXPROCS(0), callerProcs.added.Load()
	t.Cleanup(func() {
		callerProcs.added.Store(added)
		runtime.GOMAXPROCS(procs)
	})
	callerProcs.added.Store(added + 1)
	runtime.GOMAXPROCS(procs + 1)
	require.Equal(t, max(procs-int(added), 1), loaderWorkers())
}

func TestLoaderAllocReleasesWhatItOwns(t *testing.T) {
	a := newLoaderAlloc()
	kept, dropped := a.Alloc(100), a.Alloc(100)
	a.handOff(kept)
	a.releaseAll()
	require.False(t, pool.release(ptrOf(dropped)), "releaseAll gave back the undelivered buffer")
	require.True(t, pool.release(ptrOf(kept)), "the caller owns the delivered one")
}

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0}, {errors.New("x"), 1}, {io.EOF, 10}, {errTimeout, 11}, {loader.ErrClosed, 12},
		{fmt.Errorf("a: %w", loch.ErrNotFound), 2}, {loch.ErrExists, 3}, {loch.ErrCorrupt, 4},
		{loch.ErrConflict, 5}, {loch.ErrInvalidArgument, 6}, {loch.ErrNewerFormat, 7},
		{fmt.Errorf("%w: %w", loch.ErrReadOnly, loch.ErrInvalidArgument), 8}, {loch.ErrPermission, 9},
		{errNotImplemented, 13}, {fmt.Errorf("next: %w", context.Canceled), 15},
		{fmt.Errorf("get chunk: %w", context.DeadlineExceeded), 1}, // an error, not loch_loader_next's timeout
		{fmt.Errorf("x handle is closed: %w", errClosed), 12},
	} {
		require.Equal(t, tc.want, int(status(tc.err)), "%v", tc.err)
	}
}

// The errors of the packages under the engine get their class from the
// shared sentinels they match, with no entry of their own in the table.
func TestStatusOfLowerLayers(t *testing.T) {
	ctx := context.Background()
	store, err := storage.Open(ctx, "mem://capi-status-test")
	require.NoError(t, err)
	defer store.Close()
	_, missing := store.Get(ctx, "nope")
	_, badKey := store.Get(ctx, "../nope")
	require.NoError(t, store.Put(ctx, "k", nil))
	exists := store.PutIfAbsent(ctx, "k", nil)
	_, badChunk := chunk.ParseHeader([]byte("LCHK"))
	badSpec := order.Spec{BatchSize: 0, WorldSize: 1}.Validate()
	_, badTransform := transform.Parse("sideways")
	for _, tc := range []struct {
		err  error
		want int
	}{
		{missing, 2}, {exists, 3}, {badKey, 6}, {badChunk, 4}, {fmt.Errorf("read chunk k: %w", badChunk), 4},
		{badSpec, 6}, {order.ErrMismatch, 6}, {schema.ErrInvalid, 6}, {badTransform, 6},
		{transform.ErrInput, 6}, {transform.ErrDecode, 4}, {storage.ErrInvalidURL, 6}, {storage.ErrTransient, 1},
	} {
		require.Equal(t, tc.want, int(status(tc.err)), "%v", tc.err)
	}
}

func TestLoaderConfig(t *testing.T) {
	var c loaderConfig
	require.ErrorIs(t, decodeStrict("loader config", `{"batch_sise": 3}`, &c), loch.ErrInvalidArgument)
	require.NoError(t, decodeStrict("loader config", `{"batch_size": 3, "shuffle": "full", "resume": {"epoch": 2},
		"split": {"index": 1, "count": 2}, "transforms": {"image": "decode"}, "cache_dir": "/tmp/c", "ragged_as_list": true}`, &c))
	require.Equal(t, 3, c.BatchSize)
	require.Equal(t, order.ModeFull, c.Shuffle)
	require.Equal(t, 2, c.Resume.Epoch)
	require.Equal(t, loader.Split{Index: 1, Count: 2}, c.Split)
	require.Equal(t, "decode", c.Transforms["image"])
	require.True(t, c.RaggedAsList)
	require.Equal(t, "/tmp/c", c.CacheDir)
	require.NoError(t, c.Validate())
	c.Split.Index = 2
	require.ErrorIs(t, c.Validate(), loch.ErrInvalidArgument)
}

func TestOpenOptions(t *testing.T) {
	var o openOptions
	require.NoError(t, decodeStrict("dataset options", `{"ref": "dev", "as_of": "2024-05-01T12:00:00.5+02:00"}`, &o))
	opts, err := o.options()
	require.NoError(t, err)
	require.Len(t, opts, 2)
	for _, good := range []string{"2024-05-01", "2024-05-01 12:00:00"} { // as the CLI and SQL read them (loch.ParseTime)
		_, err := openOptions{AsOf: good}.options()
		require.NoError(t, err, "as_of %q", good)
	}
	for _, bad := range []string{"yesterday", "2024-05-01T12:00", "05/01/2024"} {
		_, err := openOptions{AsOf: bad}.options()
		require.ErrorIs(t, err, loch.ErrInvalidArgument, "as_of %q", bad)
		require.ErrorContains(t, err, "as_of: ")
	}
	require.ErrorIs(t, decodeStrict("dataset options", `{"branch": "dev"}`, &o), loch.ErrInvalidArgument)

	var l openOptions
	require.NoError(t, decodeStrict("dataset options", `{"links": {"schemes": ["https"], "hosts": ["cdn.example.com"], "allow": ["10.0.0.0/8", "s3://other"], "local_roots": [], "max_bytes": 1024, "timeout_seconds": 2.5, "max_attempts": 3}}`, &l))
	p, err := l.Links.policy()
	require.NoError(t, err)
	require.Equal(t, []string{"https"}, p.Schemes)
	require.Equal(t, []string{"cdn.example.com"}, p.Hosts)
	require.Equal(t, []string{"10.0.0.0/8", "s3://other"}, p.Allow)
	require.NotNil(t, p.LocalRoots)
	require.Empty(t, p.LocalRoots, "an empty list allows no local file")
	require.EqualValues(t, 1024, p.MaxBytes)
	require.Equal(t, 2500*time.Millisecond, p.Retry.ReadTimeout)
	require.Equal(t, 3, p.Retry.MaxAttempts)
	opts, err = l.options()
	require.NoError(t, err)
	require.Len(t, opts, 1)
	require.ErrorIs(t, decodeStrict("dataset options", `{"links": {"roots": ["/"]}}`, &l), loch.ErrInvalidArgument)
	_, err = (&linkOptions{TimeoutSeconds: -1}).policy()
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	p, err = (&linkOptions{TimeoutSeconds: 1}).policy()
	require.NoError(t, err)
	require.Equal(t, loch.DefaultLinkAttempts, p.Retry.MaxAttempts, "links keep their bound on attempts")
}

func TestVersionControlOptions(t *testing.T) {
	for _, tc := range []struct {
		what, good, bad string
		v               any
	}{
		{"diff options", `{"start": 5, "limit": -1}`, `{"offset": 5}`, &diffOptions{}},
		{"merge options", `{"strategy": "theirs", "message": "m"}`, `{"strategy": "theirs", "force": true}`, &mergeOptions{}},
		{"gc options", `{"grace_seconds": 0.5, "dry_run": true}`, `{"grace": 3600}`, &gcOptions{}},
	} {
		require.NoError(t, decodeStrict(tc.what, tc.good, tc.v), tc.what)
		require.ErrorIs(t, decodeStrict(tc.what, tc.bad, tc.v), loch.ErrInvalidArgument, tc.what)
	}
	var c loaderConfig
	require.NoError(t, decodeStrict("loader config", `{"allow_version_change": true}`, &c))
	require.True(t, c.AllowVersionChange)
}

// The conflicts that loch_dataset_merge returns beside LOCH_CONFLICT are
// the JSON the Python SDK parses into loch.Conflict.conflicts.
func TestConflictDetail(t *testing.T) {
	ce := &loch.ConflictError{Src: "dev", Dst: "main", Conflicts: []loch.Conflict{
		{ID: 7, Ours: loch.ChangeModified, Theirs: loch.ChangeDeleted, OursColumns: []string{"label"}},
	}}
	err := fmt.Errorf("merge: %w", ce)
	require.Equal(t, 5, int(status(err)))
	b, jerr := json.Marshal(conflictDetail{Src: ce.Src, Dst: ce.Dst, Conflicts: ce.Conflicts})
	require.NoError(t, jerr)
	require.JSONEq(t, `{"src": "dev", "dst": "main", "conflicts": [{"id": 7, "ours": "modified",
		"theirs": "deleted", "ours_columns": ["label"]}]}`, string(b))
}

// A mixture whose dataset lacks a loaded column is a bad argument that
// names the dataset by its place and URL.
func TestMixColumns(t *testing.T) {
	ctx := context.Background()
	open := func(url string, cols ...string) *loch.Scan {
		var sch schema.Schema
		for _, c := range cols {
			sch.Columns = append(sch.Columns, schema.Column{Name: c, DType: schema.Float32, Shape: schema.Shape{2}})
		}
		ds, err := loch.Create(ctx, url, sch)
		require.NoError(t, err)
		t.Cleanup(func() { ds.Close() })
		return ds.Scan()
	}
	a, b := open("mem://capi-mix-a", "x", "emb.npy"), open("mem://capi-mix-b", "x")
	require.NoError(t, mixColumns([]*loch.Scan{a, b}, []string{"x"}))
	err := mixColumns([]*loch.Scan{a, b}, []string{"x", "emb.npy"})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.Equal(t, 6, int(status(err)))
	require.Contains(t, err.Error(), `dataset 1 (mem://capi-mix-b) has no column "emb.npy"`)
}

func TestAutoCompactOption(t *testing.T) {
	for _, tc := range []struct {
		json string
		on   bool
	}{
		{`{"auto_compact": true}`, true},
		{`{"auto_compact": {"fanout": 4, "target_rows": 1000, "max_deleted": -1, "message": "auto"}}`, true},
		{`{"auto_compact": {}}`, true},
		{`{"auto_compact": false}`, false},
		{`{"auto_compact": null}`, false},
		{`{}`, false},
	} {
		var o openOptions
		require.NoError(t, decodeStrict("dataset options", tc.json, &o), tc.json)
		opts, err := o.options()
		require.NoError(t, err, tc.json)
		require.Equal(t, tc.on, len(opts) == 1, tc.json)
	}
	for _, bad := range []string{`1`, `"yes"`, `[]`, `{"fanout": 1}`, `{"dry_run": true}`, `{"fanot": 4}`,
		`{"max_deleted": 0}`, `{"max_deleted": 1}`, `{"target_rows": -5}`, `{"target_bytes": -1}`} {
		var o openOptions
		require.NoError(t, decodeStrict("dataset options", `{"auto_compact": `+bad+`}`, &o), bad)
		_, err := o.options()
		require.ErrorIs(t, err, loch.ErrInvalidArgument, bad)
		require.ErrorContains(t, err, "auto_compact", bad)
	}
}
