package loader

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunk"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/manifest"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
	"github.com/lochdata/loch/transform"
)

// sampleLoc says where one sample of one column lives.
type sampleLoc struct {
	entries []*chunkEntry // the chunk, or the pieces of a split sample; nil: null
	idx     int           // sample index in the chunk
}

type batchJob struct {
	index     int
	positions []int64
	rowIDs    []uint64
	datasets  []int         // for mixtures
	locs      [][]sampleLoc // [column][sample]
	entries   []*chunkEntry // distinct chunks the batch holds a use of
}

func (l *Loader) start() {
	jobs := make(chan *batchJob, l.cfg.PrefetchBatches)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(jobs)
		l.schedule(jobs)
	}()
	for w := 0; w < l.cfg.Workers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for job := range jobs {
				l.collate(job)
			}
		}()
	}
}

// fail records the first error and wakes the consumer.
func (l *Loader) fail(err error) {
	l.mu.Lock()
	if l.err == nil {
		l.err = err
	}
	l.cond.Broadcast()
	l.mu.Unlock()
}

// schedule walks the plan in order, admitting a batch when the prefetch
// bounds allow, starting the fetches of the chunks it needs and handing it
// to the collators.
func (l *Loader) schedule(jobs chan<- *batchJob) {
	sem := make(chan struct{}, l.cfg.FetchConcurrency)
	for bi, items := range l.plan.items() {
		if bi%l.cfg.Split.Count != l.cfg.Split.Index {
			continue // another worker's batch
		}
		job, err := l.locate(bi, slices.Clone(items))
		if err != nil {
			l.fail(err)
			return
		}
		l.mu.Lock()
		for l.ctx.Err() == nil && l.err == nil && bi > l.next &&
			((bi-l.next)/l.cfg.Split.Count >= l.cfg.PrefetchBatches || l.inflight >= l.cfg.PrefetchBytes) {
			l.cond.Wait()
		}
		if l.ctx.Err() != nil || l.err != nil {
			l.mu.Unlock()
			return
		}
		var start []*chunkEntry
		for _, e := range job.entries {
			if e.users == 0 {
				// Idle: new, or released by the batches before this one
				// since locate found it (its data is still good).
				if e.ready == nil {
					e.ready = make(chan struct{})
					e.size = e.ref.Raw + e.ref.Size
					if e.sample >= 0 {
						e.size = e.ref.Raw/max(e.ref.Rows, 1) + chunk.BlockSize
					}
					start = append(start, e)
				}
				if _, ok := l.chunks[e.key]; !ok {
					l.chunks[e.key] = e
				}
				l.inflight += e.size
			}
			e.users++
		}
		l.peak = max(l.peak, l.inflight)
		l.mu.Unlock()
		for _, e := range start {
			select {
			case sem <- struct{}{}:
			case <-l.ctx.Done():
				return
			}
			l.wg.Add(1)
			go func() {
				defer l.wg.Done()
				defer func() { <-sem }()
				l.fetch(e)
			}()
		}
		select {
		case jobs <- job:
		case <-l.ctx.Done():
			return
		}
	}
}

// locate resolves batch bi's rows to chunks, registering the chunk
// entries it needs (under l.mu).
func (l *Loader) locate(bi int, items []order.Item) (*batchJob, error) {
	ncols := len(l.cols[0])
	job := &batchJob{index: bi, positions: make([]int64, len(items)), rowIDs: make([]uint64, len(items)), locs: make([][]sampleLoc, ncols)}
	if l.mixed {
		job.datasets = make([]int, len(items))
	}
	for c := range ncols {
		job.locs[c] = make([]sampleLoc, len(items))
	}
	seen := map[*chunkEntry]bool{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, it := range items {
		v := l.views[it.Dataset]
		job.positions[i] = it.Pos
		if job.datasets != nil {
			job.datasets[i] = it.Dataset
		}
		frag, off, err := v.Locate(it.Pos)
		if err != nil {
			return nil, err
		}
		job.rowIDs[i] = v.RowID(frag, off)
		for c, cp := range l.cols[it.Dataset] {
			refs := v.Chunks(frag, cp.col.UID)
			k := v.ChunkIndex(frag, cp.col.UID, off)
			if k < 0 {
				continue // null
			}
			ref := refs[k]
			n := 1
			if ref.Parts > 0 {
				n = ref.Parts
			}
			loc := sampleLoc{idx: int(off - ref.First)}
			if ref.Parts > 0 {
				loc.idx = 0
			}
			for p := 0; p < n; p++ {
				sample := -1
				if l.cfg.Shuffle == "full" && uncompressed(ref) && ref.Parts == 0 {
					// A full shuffle touches a chunk per sample: read just
					// the sample's checksum blocks, not the whole chunk.
					sample = loc.idx
				}
				e := l.entry(refs[k+p], sample, v)
				loc.entries = append(loc.entries, e)
				if !seen[e] {
					seen[e] = true
					job.entries = append(job.entries, e)
				}
			}
			job.locs[c][i] = loc
		}
	}
	return job, nil
}

// uncompressed reports whether a chunk's data is stored as is (codec none).
func uncompressed(ref manifest.ChunkRef) bool { return ref.Size == int64(ref.Header)+ref.Raw+4 }

// entry returns the table entry of a chunk, or of one sample of it when
// sample >= 0, creating an idle one (l.mu held).
func (l *Loader) entry(ref manifest.ChunkRef, sample int, v *loch.View) *chunkEntry {
	key := ref.Key
	if sample >= 0 {
		key += "#" + strconv.Itoa(sample)
	}
	e, ok := l.chunks[key]
	if !ok {
		e = &chunkEntry{ref: ref, key: key, sample: sample, store: v.Store()}
		l.chunks[key] = e
	}
	return e
}

// fetch reads and decodes one chunk, or one sample of it.
func (l *Loader) fetch(e *chunkEntry) {
	defer close(e.ready)
	if e.sample >= 0 {
		l.fetchSample(e)
		return
	}
	t0 := time.Now()
	obj, cached := l.cached(e.ref.Key)
	var err error
	if !cached {
		obj, err = e.store.Get(l.ctx, e.ref.Key)
	}
	l.fetchNs.Add(int64(time.Since(t0)))
	if err != nil {
		e.err = fmt.Errorf("fetch chunk %s: %w", e.ref.Key, err)
		return
	}
	if !cached {
		l.fetched.Add(int64(len(obj)))
		l.nchunks.Add(1)
	}
	t1 := time.Now()
	e.ch, e.err = loch.DecodeChunk(obj, e.ref)
	l.decodeNs.Add(int64(time.Since(t1)))
	if e.err == nil && !cached && l.cfg.Cache != nil {
		// Only verified chunks enter the cache. A failed Put (a full disk)
		// only costs the next epoch a fetch.
		_ = l.cfg.Cache.Put(l.ctx, e.ref.Key, obj)
	}
	if e.err == nil && e.ch.Codec == chunk.CodecNone {
		// The decoded data aliases the object: correct the estimate made
		// at admission, which counted both.
		l.mu.Lock()
		l.inflight -= e.ref.Raw
		e.size -= e.ref.Raw
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// cached returns a chunk object from the cache, if there is one and it
// holds the key. Cache failures count as misses.
func (l *Loader) cached(key string) ([]byte, bool) {
	if l.cfg.Cache == nil {
		return nil, false
	}
	obj, ok, err := l.cfg.Cache.Get(l.ctx, key)
	if err != nil || !ok {
		return nil, false
	}
	l.hits.Add(1)
	return obj, true
}

// fetchSample reads one sample of an uncompressed chunk: the chunk's
// header (once per loader) and the checksum blocks holding the sample.
func (l *Loader) fetchSample(e *chunkEntry) {
	t0 := time.Now()
	defer func() { l.fetchNs.Add(int64(time.Since(t0))) }()
	h, err := l.header(e.store, e.ref)
	if err != nil {
		e.err = err
		return
	}
	if e.sample >= h.N {
		e.err = fmt.Errorf("chunk %s: sample %d of %d: %w", e.ref.Key, e.sample, h.N, loch.ErrCorrupt)
		return
	}
	s, end := h.Range(e.sample)
	a, b := h.BlockSpan(s, end)
	span := make([]byte, b-a)
	if len(span) > 0 {
		if err := e.store.ReadRange(l.ctx, e.ref.Key, a, span); err != nil {
			e.err = fmt.Errorf("fetch chunk %s: %w", e.ref.Key, err)
			return
		}
	}
	data, err := h.VerifyBlocks(span, s, end)
	if err != nil {
		e.err = fmt.Errorf("fetch chunk %s: %w: %w", e.ref.Key, loch.ErrCorrupt, err)
		return
	}
	l.fetched.Add(int64(len(span)))
	e.hdr, e.data = h, data
}

// header returns a chunk's parsed header, read once per loader.
func (l *Loader) header(store storage.Store, ref manifest.ChunkRef) (*chunk.Header, error) {
	l.hmu.Lock()
	h, ok := l.headers[ref.Key]
	l.hmu.Unlock()
	if ok {
		return h, nil
	}
	buf := make([]byte, ref.Header)
	if err := store.ReadRange(l.ctx, ref.Key, 0, buf); err != nil {
		return nil, fmt.Errorf("fetch chunk %s header: %w", ref.Key, err)
	}
	h, err := chunk.ParseHeader(buf)
	if err != nil {
		return nil, fmt.Errorf("fetch chunk %s: %w: %w", ref.Key, loch.ErrCorrupt, err)
	}
	if int64(h.N) != ref.Rows || h.Size() != ref.Size {
		return nil, fmt.Errorf("fetch chunk %s: header disagrees with its fragment: %w", ref.Key, loch.ErrCorrupt)
	}
	l.hmu.Lock()
	l.headers[ref.Key] = h
	l.hmu.Unlock()
	return h, nil
}

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
		if e.users == 0 {
			if l.chunks[e.key] == e {
				delete(l.chunks, e.key)
			}
			l.inflight -= e.size
		}
	}
	if err != nil {
		l.failed[job.index] = err
		l.cond.Broadcast()
		return
	}
	l.ready[job.index] = b
	l.inflight += batchBytes(b)
	l.peak = max(l.peak, l.inflight)
	l.batches.Add(1)
	l.samples.Add(int64(b.Len()))
	l.cond.Broadcast()
}

// sample returns the stored bytes and header of one located sample.
func sampleBytes(loc sampleLoc) ([]byte, *chunk.Header, error) {
	for _, e := range loc.entries {
		if e.err != nil {
			return nil, nil, e.err
		}
	}
	if e := loc.entries[0]; e.sample >= 0 {
		return e.data, e.hdr, nil
	}
	first := loc.entries[0].ch
	if len(loc.entries) == 1 {
		return first.Sample(loc.idx), first.Header, nil
	}
	var data []byte
	for _, e := range loc.entries {
		data = append(data, e.ch.Raw...)
	}
	return data, first.Header, nil
}

// build collates a batch. A row whose sample fails is skipped (with
// SkipBadSamples) or fails the batch with an error naming the row, the
// column and the object.
func (l *Loader) build(job *batchJob) (*Batch, error) {
	type got struct {
		data  []byte
		shape []int
		dtype schema.DType
		null  bool
	}
	cols := l.cols[0] // names and dtypes agree across datasets
	vals := make([][]got, len(cols))
	bad := make([]bool, len(job.positions))
	for c, cp := range cols {
		vals[c] = make([]got, len(job.positions))
		for i, loc := range job.locs[c] {
			if loc.entries == nil {
				vals[c][i] = got{null: true}
				continue
			}
			data, h, err := sampleBytes(loc)
			if err == nil && loc.entries[0].sample >= 0 {
				loc.idx = loc.entries[0].sample
			}
			if err == nil && h.Null(loc.idx) {
				vals[c][i] = got{null: true}
				continue
			}
			var shape []int
			dtype := cp.col.DType
			if err == nil {
				shape = h.Shape(loc.idx)
				if tf, ok := l.transforms[c]; ok {
					data, shape, dtype, err = l.transform(tf, h, data, shape, cp.col.DType, job.rowIDs[i])
				} else if h.SampleCompression != chunk.SampleNone {
					data, shape, err = decodeImage(data, shape)
				}
			}
			if err != nil {
				if !l.cfg.SkipBadSamples {
					return nil, fmt.Errorf("loader: row id %d (position %d), column %q: %w", job.rowIDs[i], job.positions[i], cp.name, err)
				}
				bad[i] = true
				continue
			}
			vals[c][i] = got{data: data, shape: shape, dtype: dtype}
		}
	}
	keep := make([]int, 0, len(job.positions))
	var skipped []uint64
	for i := range job.positions {
		if bad[i] {
			skipped = append(skipped, job.rowIDs[i])
		} else {
			keep = append(keep, i)
		}
	}
	if len(skipped) > 0 {
		l.mu.Lock()
		l.skipped = append(l.skipped, skipped...)
		l.mu.Unlock()
	}
	b := &Batch{Epoch: l.cfg.Epoch, Index: l.base + job.index, Columns: map[string]*Tensor{}}
	for _, i := range keep {
		b.Positions = append(b.Positions, job.positions[i])
		b.RowIDs = append(b.RowIDs, job.rowIDs[i])
		if job.datasets != nil {
			b.Datasets = append(b.Datasets, job.datasets[i])
		}
	}
	for c, cp := range cols {
		t := &Tensor{DType: cp.col.DType}
		for _, i := range keep {
			if v := vals[c][i]; !v.null {
				t.DType = v.dtype // a transform may change it (to_float)
				break
			}
		}
		n := len(keep)
		anyNull := false
		for _, i := range keep {
			anyNull = anyNull || vals[c][i].null
		}
		if anyNull {
			t.Null = make([]bool, n)
			for k, i := range keep {
				t.Null[k] = vals[c][i].null
			}
		}
		if cp.col.DType.Variable() || (l.cfg.RaggedAsList && !cp.col.Shape.Fixed()) {
			t.Shape = []int{n}
			t.Items = make([][]byte, n)
			if !cp.col.DType.Variable() {
				t.Shapes = make([][]int, n)
			}
			for k, i := range keep {
				if !vals[c][i].null {
					t.Items[k] = append([]byte(nil), vals[c][i].data...)
					if t.Shapes != nil {
						t.Shapes[k] = vals[c][i].shape
					}
				}
			}
			b.Columns[cp.name] = t
			continue
		}
		// The batch shape: the elementwise max of the samples' shapes.
		var maxShape []int
		ragged := false
		for _, i := range keep {
			v := vals[c][i]
			if v.null {
				continue
			}
			if maxShape == nil {
				maxShape = append([]int(nil), v.shape...)
				continue
			}
			if len(v.shape) != len(maxShape) {
				return nil, fmt.Errorf("loader: column %q: samples with %d and %d dimensions in one batch (rows %v); such columns can only be read row by row", cp.name, len(maxShape), len(v.shape), b.RowIDs)
			}
			for d := range maxShape {
				if v.shape[d] != maxShape[d] {
					ragged = true
					maxShape[d] = max(maxShape[d], v.shape[d])
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
		for k, i := range keep {
			v := vals[c][i]
			if ragged {
				t.Shapes[k] = v.shape
				if v.null {
					t.Shapes[k] = make([]int, len(maxShape))
				}
			}
			if v.null {
				continue
			}
			dst := t.Data[k*per : (k+1)*per]
			if !ragged {
				copy(dst, v.data)
			} else {
				padCopy(dst, v.data, v.shape, maxShape, size)
			}
			l.decoded.Add(int64(len(v.data)))
		}
		b.Columns[cp.name] = t
	}
	return b, nil
}

// transform applies a column's transform pipeline to one sample. The
// pipeline's randomness comes from (seed, epoch, row id): the same row
// gets the same crop and flip in the same epoch whatever the concurrency.
func (l *Loader) transform(p transform.Pipeline, h *chunk.Header, data []byte, shape []int, dtype schema.DType, rowID uint64) ([]byte, []int, schema.DType, error) {
	in := transform.Image{Shape: shape, DType: dtype, Data: data}
	switch h.SampleCompression {
	case chunk.SamplePNG:
		in.Encoded = "png"
	case chunk.SampleJPEG:
		in.Encoded = "jpeg"
	}
	var rng *rand.Rand
	if p.Random() {
		rng = rand.New(rand.NewPCG(l.cfg.Seed^(uint64(l.cfg.Epoch)*0x9e3779b97f4a7c15), rowID))
	}
	out, err := p.Apply(in, rng, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	// Shape is in layout order: [C, H, W] after chw.
	return out.Data, out.Shape, out.DType, nil
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

// decodeImage decodes a png/jpeg sample to the channels its shape records.
func decodeImage(data []byte, shape []int) ([]byte, []int, error) {
	if len(shape) != 3 {
		return nil, nil, fmt.Errorf("image sample shape %v, want [height, width, channels]", shape)
	}
	pix, got, err := imaging.DecodeAs(data, shape[2])
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", loch.ErrCorrupt, err)
	}
	return pix, got, nil
}
