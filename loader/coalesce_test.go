package loader

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/zeebo/xxh3"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// shuffleSet writes 3,000 rows of a 1 KiB float32 vector of random
// values whose first is the row's index, in chunks of 256 KiB (about 250
// rows, several checksum blocks each, so that spans of them are read by
// range) at url.
func shuffleSet(t testing.TB, url string, codec schema.ChunkCodec) *loch.Dataset {
	t.Helper()
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{256}, ChunkBytes: 256 << 10, ChunkCompression: codec},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	rows := make([]loch.Row, 0, 500)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		v := make([]float32, 256)
		for k := range v {
			v[k] = r.Float32() // incompressible: chunks of many checksum blocks
		}
		v[0] = float32(i)
		rows = append(rows, loch.Row{"x": loch.Tensor([]int{256}, v)})
		if len(rows) == cap(rows) {
			require.NoError(t, d.Extend(ctx, rows))
			rows = rows[:0]
		}
	}
	_, err = d.Commit(ctx, "rows")
	require.NoError(t, err)
	return d
}

// deliveredDigest runs a loader to its end, checks every sample against
// its row, and returns the XXH3 of the positions delivered, in order.
func deliveredDigest(t testing.TB, scan *loch.Scan, cfg Config) (string, []int64) {
	t.Helper()
	l, err := New(ctx, scan, cfg)
	require.NoError(t, err)
	defer l.Close()
	return drainDigest(t, l)
}

// drainDigest is deliveredDigest of a loader made.
func drainDigest(t testing.TB, l *Loader) (string, []int64) {
	t.Helper()
	h := xxh3.New()
	var pos []int64
	var b [8]byte
	for _, bt := range drain(t, l) {
		x := bt.Columns["x"]
		per := len(x.Data) / bt.Len()
		for k, p := range bt.Positions {
			f, _ := loch.As[float32](x.Data[k*per : (k+1)*per])
			require.Equal(t, float32(p), f[0], "sample at position %d", p)
			binary.LittleEndian.PutUint64(b[:], uint64(p))
			h.Write(b[:])
			pos = append(pos, p)
		}
	}
	return fmt.Sprintf("%d %016x", len(pos), h.Sum64()), pos
}

// TestFullShuffleOrderUnchanged: the positions a full shuffle delivers
// for a seed, on one rank, on each of two ranks and resumed mid-epoch,
// are the ones captured before windows' reads were coalesced (the
// digests below), and those of the plan (Order), whatever the reads.
func TestFullShuffleOrderUnchanged(t *testing.T) {
	d := shuffleSet(t, filepath.Join(t.TempDir(), "ds"), schema.LZ4)
	cases := []struct {
		name string
		cfg  Config
		want string
	}{
		{"one rank", Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 11, WindowRows: 1024}, "3000 0678e68c98a9d292"},
		{"rank 0 of 2", Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 11, WorldSize: 2, WindowRows: 1024}, "1500 6b5af81601d69e65"},
		{"rank 1 of 2", Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 11, WorldSize: 2, Rank: 1, WindowRows: 1024}, "1500 108815e69785db16"},
		{"epoch 3, default window", Config{BatchSize: 50, Shuffle: order.ModeFull, Seed: 4, Epoch: 3}, "3000 101e1516e8ed8297"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, pos := deliveredDigest(t, d.Scan(), c.cfg)
			require.Equal(t, c.want, got)
			plan, err := Order(ctx, d.Scan(), c.cfg)
			require.NoError(t, err)
			var want []int64
			for _, b := range plan.All() {
				want = append(want, b...)
			}
			require.Equal(t, want, pos)
		})
	}
	// Resumed after 7 batches: the rest of the same sequence.
	cfg := cases[0].cfg
	_, whole := deliveredDigest(t, d.Scan(), cfg)
	st := stateAfter(t, d, cfg, 7)
	cfg.Resume = &st
	_, rest := deliveredDigest(t, d.Scan(), cfg)
	require.Equal(t, whole[7*32:], rest)
}

// countingStore counts the reads that reach a store: whole objects (in
// all and by key) and ranges.
type countingStore struct {
	storage.Store
	gets, ranges atomic.Int64
	mu           sync.Mutex
	byKey        map[string]int // whole-object reads of each key
}

func (s *countingStore) Get(ctx context.Context, key string) ([]byte, error) {
	s.gets.Add(1)
	s.mu.Lock()
	if s.byKey == nil {
		s.byKey = map[string]int{}
	}
	s.byKey[key]++
	s.mu.Unlock()
	return s.Store.Get(ctx, key)
}

func (s *countingStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	s.ranges.Add(1)
	return s.Store.ReadRange(ctx, key, off, dst)
}

// requests runs one full-shuffle epoch over MinIO through a counting
// store and returns the requests it made for chunk data, with the
// delivered digest.
func requests(t *testing.T, url string, cfg Config) (int64, string) {
	t.Helper()
	scan, cs := countedScan(t, url)
	digest, _ := deliveredDigest(t, scan, cfg)
	return cs.gets.Load() + cs.ranges.Load(), digest
}

// countedScan opens the dataset at url through a counting store and
// returns its loaded scan, with the counts of the reads made since.
func countedScan(t *testing.T, url string) (*loch.Scan, *countingStore) {
	t.Helper()
	st, err := storage.Open(ctx, url)
	require.NoError(t, err)
	cs := &countingStore{Store: st}
	d, err := loch.Open(ctx, url, loch.WithStore(cs))
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	scan := d.Scan()
	require.NoError(t, scan.Load(ctx, 4))
	cs.byKey = nil
	cs.gets.Store(0)
	cs.ranges.Store(0)
	return scan, cs
}

// TestCoalescedRequestsOnMinIO: on a real S3 server, a full shuffle whose
// window holds many rows of each chunk reads each chunk's rows of the
// window in a few requests, not one per run of rows: at most a third of
// the requests of the same epoch read run by run, with the same order.
func TestCoalescedRequestsOnMinIO(t *testing.T) {
	b := testserver.MinIO(t)
	shuffleSet(t, b.URL, schema.LZ4)
	cfg := Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 11, WindowRows: 1024}
	n, digest := requests(t, b.URL, cfg)
	require.Equal(t, "3000 0678e68c98a9d292", digest)
	defer func(v bool) { coalesceReads = v }(coalesceReads)
	coalesceReads = false
	runs, digest := requests(t, b.URL, cfg)
	require.Equal(t, "3000 0678e68c98a9d292", digest)
	t.Logf("requests for 3,000 rows: %d coalesced, %d run by run", n, runs)
	require.Less(t, 3*n, runs)
}

// TestCoalescedMemoryBounded: a full shuffle of 3 MiB in windows of a
// third of it, under a prefetch bound of 512 KiB, holds no more
// in flight with its reads coalesced than read run by run and the half
// of the bound that a window's merged reads may hold besides, and
// delivers the same order. A first epoch runs before both, so that both
// know the chunks' headers: before, the in-flight figure counts a read's
// estimate until it is fetched, two 64 KiB blocks a sample.
func TestCoalescedMemoryBounded(t *testing.T) {
	d := shuffleSet(t, filepath.Join(t.TempDir(), "ds"), schema.CodecNone)
	cfg := Config{BatchSize: 32, Shuffle: order.ModeFull, Seed: 11, WindowRows: 1024, PrefetchBytes: 512 << 10, PrefetchBatches: 4}
	peak := func() (int64, []int64) {
		l, err := New(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		defer l.Close()
		var pos []int64
		for _, bt := range drain(t, l) {
			pos = append(pos, bt.Positions...)
		}
		return l.Stats().PeakInFlight, pos
	}
	peak()
	got, pos := peak()
	defer func(v bool) { coalesceReads = v }(coalesceReads)
	coalesceReads = false
	runs, want := peak()
	require.Equal(t, want, pos)
	t.Logf("peak in flight: %d KiB coalesced, %d KiB run by run (bound %d KiB)", got>>10, runs>>10, cfg.PrefetchBytes>>10)
	require.LessOrEqual(t, got, runs+cfg.PrefetchBytes/2)
}
