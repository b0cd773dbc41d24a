package chunk

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/schema"
)

// recycleChunk is one chunk of TestRecycledBuilderKeepsNoState: its
// column's dtype and codec, and its samples.
type recycleChunk struct {
	dtype   schema.DType
	codec   uint8
	samples []sample
	byRuns  bool // added by AddVar/AddFixed rather than Add
}

// randomRecycleChunk draws a chunk of one of the kinds a stage's builder
// goes through: text (few distinct values: a dictionary; or many), with
// nulls first, later or none, or int64 scalars (ascending or not, with
// nulls or not), of up to a few 64 KiB blocks.
func randomRecycleChunk(r *rand.Rand) recycleChunk {
	c := recycleChunk{codec: []uint8{CodecNone, CodecLZ4, CodecZstd}[r.IntN(3)], byRuns: r.IntN(2) == 0}
	n := 1 + r.IntN([]int{10, 1000, 30000}[r.IntN(3)])
	nulls := []float64{0, 0, 0.05, 0.5}[r.IntN(4)]
	c.samples = make([]sample, n)
	if r.IntN(2) == 0 {
		c.dtype = schema.Text
		distinct := []int{3, 30, 1 << 20}[r.IntN(3)]
		for i := range c.samples {
			v := fmt.Sprintf("v%d", r.IntN(distinct))
			c.samples[i] = sample{shape: []int{len(v)}, data: []byte(v)}
		}
	} else {
		c.dtype = schema.Int64
		step := int64(r.IntN(3))
		for i := range c.samples {
			v := int64(i)*step + int64(r.IntN(1+int(step)*100))
			b := make([]byte, 8)
			for k := range b {
				b[k] = byte(v >> (8 * k))
			}
			c.samples[i] = sample{shape: []int{}, data: b}
		}
	}
	for i := range c.samples {
		if r.Float64() < nulls {
			c.samples[i] = sample{shape: make([]int, len(c.samples[i].shape)), null: true}
		}
	}
	return c
}

// add adds c's samples to b.
func (c recycleChunk) add(b *Builder) error {
	if !c.byRuns {
		for _, s := range c.samples {
			if err := b.Add(s.shape, s.data, s.null); err != nil {
				return err
			}
		}
		return nil
	}
	var data []byte
	offs, nulls := []int{0}, make([]bool, len(c.samples))
	for i, s := range c.samples {
		nulls[i] = s.null
		if s.null && c.dtype != schema.Text {
			data = append(data, make([]byte, 8)...) // a null's bytes, skipped
		} else {
			data = append(data, s.data...)
		}
		offs = append(offs, len(data))
	}
	if c.dtype == schema.Text {
		return b.AddVar(data, offs, nulls)
	}
	return b.AddFixed([]int{}, data, len(c.samples), nulls)
}

// TestRecycledBuilderKeepsNoState encodes a random run of chunks of
// different columns in one Builder, Reinit between them, into one
// recycled buffer, as a stage does (the encoding's scratch memory
// recycled too), and requires each chunk byte for byte equal to a new
// Builder's: nothing of a chunk before (nulls, offsets, lengths, shapes,
// dictionary, block checksums, room) leaks into the next.
func TestRecycledBuilderKeepsNoState(t *testing.T) {
	r := testseed.Rand(t, 39)
	b := NewBuilder(schema.Int64, SampleNone, CodecNone, 1<<16)
	var buf []byte
	for k := range 24 {
		c := randomRecycleChunk(r)
		b.Reinit(c.dtype, SampleNone, c.codec)
		require.NoError(t, c.add(b))
		fresh := NewBuilder(c.dtype, SampleNone, c.codec, 0)
		require.NoError(t, c.add(fresh))
		want, err := fresh.Encode()
		require.NoError(t, err)
		got, inPlace, err := b.EncodeInPlace(buf)
		require.NoError(t, err)
		require.Equal(t, want, got, "chunk %d: %s, codec %d, %d samples, runs %v", k, c.dtype, c.codec, len(c.samples), c.byRuns)
		if !inPlace {
			buf = got[:0]
		}
		_, err = Decode(got, nil)
		require.NoError(t, err)
		b.Reset()
	}
}
