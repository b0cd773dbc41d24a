package loch

import (
	"context"
	"hash/crc32"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

// stableStore counts the Puts whose bytes changed while the Put ran.
type stableStore struct {
	storageStore
	puts, changed atomic.Int64
}

func (s *stableStore) Put(ctx context.Context, key string, data []byte) error {
	before := crc32.ChecksumIEEE(data)
	time.Sleep(time.Millisecond) // a window for a writer that reused the bytes too soon
	err := s.storageStore.Put(ctx, key, data)
	if crc32.ChecksumIEEE(data) != before {
		s.changed.Add(1)
	}
	s.puts.Add(1)
	return err
}

// TestChunksUploadedFromStableMemory: a stage uploads a codec none chunk
// from the memory its builder filled (the header put before the data,
// chunk.Builder.EncodeInPlace), so the builder must not take new samples
// until the Put returns, however many chunks are in flight.
func TestChunksUploadedFromStableMemory(t *testing.T) {
	r := testseed.Rand(t, 39)
	col := schema.Column{Name: "x", DType: schema.Uint8, Shape: schema.Shape{-1}, ChunkBytes: 4096, ChunkCompression: schema.CodecNone}
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{col}}, WithParallelism(2))
	s := &stableStore{storageStore: d.store}
	d.store = s
	m := &model{}
	for range 4 {
		rows := make([]Row, 300)
		for i := range rows {
			b := make([]byte, 1+r.IntN(1500))
			for k := range b {
				b[k] = byte(r.Uint32())
			}
			rows[i] = Row{"x": Tensor([]int{len(b)}, b)}
		}
		require.NoError(t, d.Extend(ctx, rows))
		m.add(uint64(len(m.rows)), rows)
	}
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	require.Greater(t, s.puts.Load(), int64(50))
	require.Zero(t, s.changed.Load(), "chunk bytes changed during their Put")
	checkModel(t, d, m)
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// TestBuilderPoolGivesAColumnItsOwn: a column gets back the builder it
// held before when one is spare (its buffers fit its chunks), else the
// one put last; no builder is dropped.
func TestBuilderPoolGivesAColumnItsOwn(t *testing.T) {
	var p builderPool
	require.Nil(t, p.get(1))
	a, b, c := chunk.NewBuilder(schema.Text, 0, 0, 0), chunk.NewBuilder(schema.Int64, 0, 0, 0), chunk.NewBuilder(schema.Text, 0, 0, 0)
	p.put(a, 1)
	p.put(b, 2)
	p.put(c, 3)
	require.Same(t, a, p.get(1))
	require.Same(t, c, p.get(7)) // none of column 7: the last put
	require.Same(t, b, p.get(3))
	require.Nil(t, p.get(2))
}
