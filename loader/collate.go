package loader

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/transform"
)

// collate waits for a batch's chunks, builds its tensors and publishes it.
func (l *Loader) collate(job *batchJob) {
	for _, e := range job.entries {
		select {
		case <-e.ready:
		case <-l.ctx.Done():
			return
		}
	}
	t0 := time.Now()
	b, err := l.build(job)
	l.decodeNs.Add(int64(time.Since(t0)))
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range job.entries {
		e.users--
		if e.users == 0 && e.pending == 0 {
			// No batch admitted or located needs it any more. (One that
			// a located batch needs stays held for it.)
			if l.chunks[e.key] == e {
				delete(l.chunks, e.key)
			}
			e.held = false
			l.inflight -= e.size
			// Kept for later batches that read it again (a small column's
			// chunk, a run cut by a window's end), within keepMax bytes;
			// else forgotten, so that the jobs located but not admitted
			// yet that name it do not keep its memory (they fetch it
			// again if admitted).
			if e.err != nil || e.part != nil || !l.kept.Add(e.key, e, e.size) {
				l.bufRoom()
				e.forget()
			}
		}
	}
	if err != nil {
		l.failed[job.index] = err
		l.cond.Broadcast()
		return
	}
	l.ready[job.index] = b
	n := batchBytes(b)
	l.inflight += n
	l.batchMax = max(l.batchMax, n)
	l.peak = max(l.peak, l.inflight)
	l.batches.Add(1)
	l.samples.Add(int64(b.Len()))
	l.cond.Broadcast()
}

// sample returns row i's sample of column c as stored (Data aliases the
// fetched chunk), or the error of a read it needs.
func (l *Loader) sample(job *batchJob, c, i int) (loch.Sample, error) {
	slot := job.slots[c][i]
	if slot.Null() {
		return loch.Sample{Null: true}, nil
	}
	reads := job.reads[c][i]
	got := make([]*loch.Fetched, len(reads))
	for p, e := range reads {
		if e.err != nil {
			return loch.Sample{}, e.err
		}
		got[p] = e.f
	}
	ds := 0
	if job.datasets != nil {
		ds = job.datasets[i]
	}
	return l.scans[ds].Sample(slot, got)
}

// value is one sample on its way into a batch: as stored (still encoded
// when Encoding is set: it is decoded straight into the batch buffer), or
// as a transform left it.
type value struct {
	s     loch.Sample
	dtype schema.DType
}

// build collates a batch. A row whose sample fails to read, transform or
// decode is skipped (with SkipBadSamples) or fails the batch with an error
// naming the row, the column and the object.
func (l *Loader) build(job *batchJob) (*Batch, error) {
	cols := l.cols[0] // names and dtypes agree across datasets
	vals := make([][]value, len(cols))
	plain := make([]plainColumn, len(cols))
	bad := make([]bool, len(job.positions))
	for c, cp := range cols {
		if plain[c].srcs, plain[c].shape = l.plainSources(job, c); plain[c].srcs != nil {
			continue // plain.go
		}
		vals[c] = make([]value, len(job.positions))
		for i := range job.positions {
			if job.ranged != nil && job.ranged[c][i] {
				e := job.reads[c][i][0]
				if err := e.err; err != nil {
					if err := l.badRow(job, i, cp.name, err); err != nil {
						return nil, err
					}
					bad[i] = true
					continue
				}
				vals[c][i] = e.out
				continue
			}
			s, err := l.sample(job, c, i)
			dtype := cp.col.DType
			if tf, ok := l.transforms[c]; ok && err == nil && !s.Null {
				in := transform.Image{Shape: s.Shape, DType: dtype, Data: s.Data, Encoded: string(s.Encoding)}
				if s, dtype, err = l.transform(tf, in, job.rowIDs[i]); err != nil && cp.col.SampleCompression.Media() {
					sc := l.scans[job.dataset(i)]
					err = fmt.Errorf("%s chunk %s: %w", sc.URL(), sc.ChunkKey(job.slots[c][i].Chunk(0)), err)
				}
			}
			if err != nil {
				if err := l.badRow(job, i, cp.name, err); err != nil {
					return nil, err
				}
				bad[i] = true
				continue
			}
			if cp.encoded && !s.Null {
				// As stored: the bytes themselves (copied out of the chunk
				// by items), not the pixels they decode to.
				s, dtype = loch.Sample{Shape: []int{len(s.Data)}, Data: s.Data}, schema.Bytes
			}
			vals[c][i] = value{s: s, dtype: dtype}
		}
	}
	for {
		b, badRow, err := l.collateRows(job, vals, plain, bad)
		if badRow < 0 {
			return b, err
		}
		// A sample failed to decode: collate again without its row.
		l.Release(b)
		bad[badRow] = true
	}
}

// badRow reports a row whose sample failed: nil when the row is to be
// skipped (recorded in Stats), else the batch's error.
func (l *Loader) badRow(job *batchJob, i int, column string, err error) error {
	if !l.cfg.SkipBadSamples {
		return fmt.Errorf("loader: row id %d (position %d), column %q: %w", job.rowIDs[i], job.positions[i], column, err)
	}
	return nil
}

// collateRows builds the batch of the rows not marked bad. When a sample
// fails to decode and bad samples are skipped, it returns that row's index
// (and a batch to release); otherwise badRow is -1.
func (l *Loader) collateRows(job *batchJob, vals [][]value, plain []plainColumn, bad []bool) (b *Batch, badRow int, err error) {
	keep := make([]int, 0, len(job.positions))
	var skipped []uint64
	for i := range job.positions {
		if bad[i] {
			skipped = append(skipped, job.rowIDs[i])
		} else {
			keep = append(keep, i)
		}
	}
	b = &Batch{Epoch: l.cfg.Epoch, Index: l.base + job.index, Columns: map[string]*Collated{}}
	for _, i := range keep {
		b.Positions = append(b.Positions, job.positions[i])
		b.RowIDs = append(b.RowIDs, job.rowIDs[i])
		if job.datasets != nil {
			b.Datasets = append(b.Datasets, job.datasets[i])
		}
	}
	for c, cp := range l.cols[0] {
		if plain[c].srcs != nil {
			b.Columns[cp.name] = l.stackPlain(cp, plain[c].srcs, plain[c].shape, keep)
			continue
		}
		t, i, err := l.tensor(cp, vals[c], keep, b.RowIDs)
		b.Columns[cp.name] = t
		if err != nil && i >= 0 {
			if err := l.badRow(job, i, cp.name, err); err != nil {
				return nil, -1, err
			}
			return b, i, nil
		}
		if err != nil {
			return nil, -1, err
		}
	}
	for i := range l.cfg.Joined {
		c := &l.cfg.Joined[i]
		b.Columns[c.Name] = l.joined(c, b.RowIDs)
	}
	if len(skipped) > 0 {
		l.mu.Lock()
		l.skipped = append(l.skipped, skipped...)
		l.mu.Unlock()
	}
	return b, -1, nil
}

// tensor collates one column of the kept rows. A sample that fails to
// decode is reported with its row index; other errors with -1.
func (l *Loader) tensor(cp colPlan, vals []value, keep []int, rowIDs []uint64) (*Collated, int, error) {
	t := &Collated{DType: cp.col.DType}
	if cp.encoded {
		t.DType = schema.Bytes
	}
	n := len(keep)
	anyNull := false
	for _, i := range keep {
		if v := vals[i]; v.s.Null {
			anyNull = true
		} else {
			t.DType = v.dtype // a transform may change it (to_float)
		}
	}
	if anyNull {
		t.Null = make([]bool, n)
		for k, i := range keep {
			t.Null[k] = vals[i].s.Null
		}
	}
	if t.DType.Variable() || (l.cfg.RaggedAsList && !cp.col.Shape.Fixed()) {
		bad, err := l.items(t, cp, vals, keep)
		return t, bad, err
	}
	bad, err := l.stack(t, cp, vals, keep, anyNull, rowIDs)
	return t, bad, err
}

// items fills t with the kept samples as a list (Items, and Shapes for
// tensors), each decoded into its own buffer.
func (l *Loader) items(t *Collated, cp colPlan, vals []value, keep []int) (int, error) {
	n := len(keep)
	t.Shape = []int{n}
	t.Items = make([][]byte, n)
	if !t.DType.Variable() {
		t.Shapes = make([][]int, n)
	}
	var decoded int64
	defer func() { l.decoded.Add(decoded) }()
	for k, i := range keep {
		v := vals[i]
		if v.s.Null {
			continue
		}
		s, err := v.s.Decode()
		if err != nil {
			return i, err
		}
		t.Items[k] = s.Data
		if t.Shapes != nil {
			t.Shapes[k] = s.Shape
		}
		decoded += int64(len(s.Data))
	}
	return -1, nil
}

// stack fills t with the kept samples stacked in one buffer from the
// allocator, zero-padded to the largest shape when they differ (Shapes then
// records each one). Samples are decoded straight into the buffer.
func (l *Loader) stack(t *Collated, cp colPlan, vals []value, keep []int, anyNull bool, rowIDs []uint64) (int, error) {
	n := len(keep)
	// The batch shape: the elementwise max of the samples' shapes.
	var maxShape []int
	ragged := false
	for _, i := range keep {
		v := vals[i]
		if v.s.Null {
			continue
		}
		if err := v.s.CheckDecode(); err != nil { // before the batch is allocated
			return i, err
		}
		if maxShape == nil {
			maxShape = append([]int(nil), v.s.Shape...)
			continue
		}
		if len(v.s.Shape) != len(maxShape) {
			return -1, fmt.Errorf("loader: column %q: samples with %d and %d dimensions in one batch (rows %v); such columns can only be read row by row", cp.name, len(maxShape), len(v.s.Shape), rowIDs)
		}
		for d := range maxShape {
			if v.s.Shape[d] != maxShape[d] {
				ragged = true
				maxShape[d] = max(maxShape[d], v.s.Shape[d])
			}
		}
	}
	if maxShape == nil {
		maxShape = nullShape(cp.col)
	}
	size := t.DType.Size()
	per := schema.NumElements(maxShape) * size
	t.Shape = append([]int{n}, maxShape...)
	t.Data = l.cfg.Allocator.Alloc(n * per)
	if ragged || anyNull {
		clear(t.Data)
	}
	if ragged {
		t.Shapes = make([][]int, n)
	}
	// Counted once a batch: an atomic add per sample waits, after each
	// sample's copy, for the copy's stores to drain (4% of ds.numpy()'s
	// time over 12 KiB images).
	var decoded int64
	defer func() { l.decoded.Add(decoded) }()
	for k, i := range keep {
		v := vals[i]
		if ragged {
			t.Shapes[k] = v.s.Shape
			if v.s.Null {
				t.Shapes[k] = make([]int, len(maxShape))
			}
		}
		if v.s.Null {
			continue
		}
		dst := t.Data[k*per : (k+1)*per]
		if ragged {
			// Decode aside, then lay out with padding.
			s, err := v.s.Decode()
			if err != nil {
				return i, err
			}
			padCopy(dst, s.Data, s.Shape, maxShape, size)
		} else if _, err := v.s.DecodeInto(dst); err != nil {
			return i, err
		}
		decoded += int64(v.s.DecodedLen())
	}
	return -1, nil
}

// transform applies a column's transform pipeline to one stored sample.
// The pipeline's randomness comes from (seed, epoch, row id): the same row
// gets the same crop and flip in the same epoch whatever the concurrency.
func (l *Loader) transform(p transform.Pipeline, in transform.Image, rowID uint64) (loch.Sample, schema.DType, error) {
	var rng *rand.Rand
	if p.Random() {
		rng = rand.New(rand.NewPCG(l.cfg.Seed^(uint64(l.cfg.Epoch)*0x9e3779b97f4a7c15), rowID))
	}
	out, err := p.Apply(in, rng, nil)
	if err != nil {
		return loch.Sample{}, 0, err
	}
	// Shape is in layout order: [C, H, W] after chw.
	return loch.Sample{Shape: out.Shape, Data: out.Data}, out.DType, nil
}

// nullShape is the per-sample shape of an all-null column in a batch.
func nullShape(c schema.Column) []int {
	out := make([]int, len(c.Shape))
	for i, d := range c.Shape {
		out[i] = max(d, 0)
	}
	return out
}

// padCopy copies a C-contiguous sample of shape src into dst, laid out with
// shape dstShape (each dimension >= src's), leaving the padding untouched.
func padCopy(dst, data []byte, src, dstShape []int, size int) {
	if len(src) == 0 {
		copy(dst, data)
		return
	}
	inner := size
	for _, d := range src[1:] {
		inner *= d
	}
	dstInner := size
	for _, d := range dstShape[1:] {
		dstInner *= d
	}
	for r := 0; r < src[0]; r++ {
		part := data[r*inner : (r+1)*inner]
		out := dst[r*dstInner : (r+1)*dstInner]
		if len(src) == 1 {
			copy(out, part)
		} else {
			padCopy(out, part, src[1:], dstShape[1:], size)
		}
	}
}
