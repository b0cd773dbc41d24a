package loch

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// Fragment limits: an append fragment is sealed when it reaches either.
const (
	maxFragmentRows   = 1 << 20
	maxFragmentChunks = 4096
	maxCommitAttempts = 64
)

// staging holds the writes of a handle until Commit.
type staging struct {
	d       *Dataset
	base    *snapshot
	cols    []schema.Column // base columns then added ones (definitions, no stats)
	added   int             // number of added columns at the end of cols
	nextUID int
	deltas  map[int]*colDelta

	open    *fragWriter                 // current append fragment
	sealed  []*fragWriter               // full append fragments
	patches map[uint64]map[int]prepared // updates in place: row id -> column uid -> value (update.go)
	nonce   string                      // of a staged write's or a compaction's fragments

	// deletes holds the rows deleted, by id, with their location in base.
	// conflicts holds the rows deleted or updated here that a Refresh
	// found deleted or changed on the branch since (they block Commit
	// until discarded; their updates stay in patches until then).
	deletes   map[uint64]rowLoc
	conflicts map[uint64]bool

	builders builderPool      // recycled after encoding
	buffers  freeList[[]byte] // encoded chunk buffers

	// uploads encodes and uploads flushed chunks in the background, at
	// most 2×parallelism at once (bounding memory). The first failure
	// cancels ctx with itself as the cause; an aborted or committed stage
	// cancels it too. Nothing more is submitted once ctx is done.
	uploads errgroup.Group
	slots   chan struct{} // the uploads' semaphore (submit)
	// encoders bounds the uploads encoding at once to parallelism: more
	// would not encode faster, and each holds an encoding's working
	// memory (chunk.Builder.EncodeInPlace).
	encoders chan struct{}
	ctx      context.Context
	cancel   context.CancelCauseFunc

	// lease is the handle's lease, begun for this stage: it keeps the
	// stage's objects from garbage collection (docs/format.md §5.1); nil
	// when putting it failed, which Commit treats as a lapsed lease.
	lease *lease
}

// colDelta accumulates statistics of staged samples of one column. Its
// StoredBytes stays zero: chunks are encoded concurrently and count their
// bytes in stored.
type colDelta struct {
	schema.Stats
	stored atomic.Int64
}

type fragWriter struct {
	rows int64
	ids  [][2]uint64
	cols map[int]*colWriter
}

type colWriter struct {
	col    *schema.Column
	b      *chunk.Builder
	first  int64 // fragment offset of the builder's first sample
	refs   []*manifest.ChunkRef
	chunks int
}

// stagingLocked returns the handle's stage, starting one (and its lease,
// before anything of it is put) if there is none.
func (d *Dataset) stagingLocked(ctx context.Context) (*staging, error) {
	if d.ReadOnly() {
		return nil, d.readOnlyErr("write")
	}
	if d.stage == nil {
		st := d.newStaging(d.current())
		// A lease that cannot be put leaves the stage unleased: its
		// commit then checks its chunks (docs/format.md §5.1).
		st.lease = d.beginLease(ctx)
		d.stage = st
	}
	return d.stage, d.stage.firstErr()
}

// beginLease starts (or renews) the handle's writer lease before a stage
// puts anything, and returns it; nil when it cannot be put, which makes
// the stage's commit check its chunks (docs/format.md §5.1). d.wmu is
// held.
func (d *Dataset) beginLease(ctx context.Context) *lease {
	if d.lease == nil {
		d.lease = newLease(d.store, d.opts.leaseTTL, d.opts.leaseRenew)
	}
	if d.lease.begin(ctx) != nil {
		return nil
	}
	return d.lease
}

// newStaging returns an empty stage of writes on base, without a lease.
// Its uploads run until it is committed or aborted.
func (d *Dataset) newStaging(base *snapshot) *staging {
	ctx, cancel := context.WithCancelCause(context.Background())
	st := &staging{d: d, base: base, nextUID: base.man.NextColumnUID, deltas: map[int]*colDelta{}, nonce: randomID(),
		deletes: map[uint64]rowLoc{}, conflicts: map[uint64]bool{}, ctx: ctx, cancel: cancel}
	st.slots = make(chan struct{}, 2*d.opts.parallelism)
	// Spares: builders and encoding buffers come back from the uploads
	// for the next chunks. Every builder is kept: there are never more
	// than the open chunks (one per column) and the uploads in flight
	// (slots) use at once, so they bound the stage's memory, in chunks,
	// whatever the number of rows; one dropped would be made again, and
	// its garbage grow the heap (Go's collector lets it reach twice the
	// live bytes) as the rows grow. A buffer is kept per slot.
	st.buffers = make(freeList[[]byte], 2*d.opts.parallelism)
	st.encoders = make(chan struct{}, d.opts.parallelism)
	st.cols = append(st.cols, base.man.Schema.Columns...)
	return st
}

// firstErr returns the first failure of a background upload, if any.
func (st *staging) firstErr() error {
	if st.ctx.Err() == nil {
		return nil
	}
	return context.Cause(st.ctx)
}

// errDiscarded is the cause of an aborted stage's cancellation.
var errDiscarded = errors.New("staged writes discarded")

// abort stops the uploads, waits for those in flight and ends the
// stage's lease.
func (st *staging) abort() {
	st.cancel(errDiscarded)
	_ = st.uploads.Wait()
	st.lease.end(false)
}

func (st *staging) column(name string) (*schema.Column, bool) {
	for i := range st.cols {
		if st.cols[i].Name == name {
			return &st.cols[i], true
		}
	}
	return nil, false
}

func (st *staging) delta(uid int) *colDelta {
	dl := st.deltas[uid]
	if dl == nil {
		dl = &colDelta{}
		if c, ok := (&schema.Schema{Columns: st.cols}).ByUID(uid); ok && c.Kind == schema.ClassLabel {
			dl.Classes = &schema.ClassCounts{}
		}
		st.deltas[uid] = dl
	}
	return dl
}

// prepared is a sample converted to its stored form.
type prepared struct {
	shape []int
	data  []byte
	null  bool
	raw   int64       // decoded bytes
	media chunk.Media // media samples' table entry (media_write.go)
}

// prepare validates a sample against its column and converts it to the
// column's stored form (encoding or decoding images as needed).
func prepare(c *schema.Column, s Sample) (prepared, error) {
	if s.Null {
		return prepared{null: true}, nil
	}
	if c.SampleCompression.Media() {
		return prepareMedia(c, s)
	}
	bad := func(err error) (prepared, error) {
		if strings.HasPrefix(err.Error(), fmt.Sprintf("column %q", c.Name)) {
			return prepared{}, err // named already (schema's checks)
		}
		return prepared{}, fmt.Errorf("column %q: %w", c.Name, err)
	}
	enc := s.Encoding
	if enc == "" {
		enc = schema.SampleNone
	}
	shape, data := s.Shape, s.Data
	if c.DType.Variable() && shape == nil {
		shape = []int{len(data)}
	}
	if enc != schema.SampleNone {
		if enc != schema.PNG && enc != schema.JPEG {
			return prepared{}, invalidf("column %q: unknown sample encoding %q", c.Name, enc)
		}
		format, cshape, err := imaging.Config(data)
		if err != nil || format != string(enc) {
			return prepared{}, invalidf("column %q: sample says %s but its bytes are not a %s image (%v)", c.Name, enc, enc, err)
		}
		if shape == nil {
			shape = cshape
		}
		if !equalShape(shape, cshape) {
			return prepared{}, invalidf("column %q: %s image has shape %v, sample says %v", c.Name, enc, cshape, shape)
		}
		// Kept or converted, what no reader could decode is not stored.
		if err := imaging.CheckSize(string(enc), cshape[0], cshape[1], cshape[2]); err != nil {
			return prepared{}, fmt.Errorf("column %q: %w", c.Name, err)
		}
		if err := c.CheckSample(shape, nil); err != nil {
			return bad(err)
		}
		raw := int64(schema.NumElements(shape))
		if c.SampleCompression == enc {
			return prepared{shape: shape, data: data, raw: raw}, nil
		}
		pix, dshape, err := imaging.Decode(data)
		if err != nil {
			return prepared{}, invalidf("column %q: %v", c.Name, err)
		}
		shape, data = dshape, pix
	}
	if err := c.CheckSample(shape, data); err != nil {
		return bad(err)
	}
	raw := int64(len(data))
	if c.SampleCompression != schema.SampleNone {
		encoded, err := imaging.Encode(string(c.SampleCompression), data, shape, 0)
		if err != nil {
			return prepared{}, invalidf("column %q: %v", c.Name, err)
		}
		data = encoded
	}
	return prepared{shape: shape, data: data, raw: raw}, nil
}

// Append stages one row. Columns missing from row are null; an unknown
// column, a wrong dtype or shape is an ErrInvalidArgument error and stages
// nothing. The row is visible after Commit. Sample bytes are copied before
// Append returns.
func (d *Dataset) Append(ctx context.Context, row Row) error {
	return d.Extend(ctx, []Row{row})
}

// Extend stages rows in order, preparing their samples (validation, image
// encoding) in parallel. If any row is invalid, none is staged.
func (d *Dataset) Extend(ctx context.Context, rows []Row) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	st, err := d.stagingLocked(ctx)
	if err != nil {
		return err
	}
	preps, err := st.prepareRows(ctx, rows)
	if err != nil {
		return err
	}
	for _, p := range preps {
		if err := st.addRow(ctx, p); err != nil {
			return err
		}
	}
	return st.firstErr()
}

// prepareRows converts rows into per-column prepared samples, in parallel.
func (st *staging) prepareRows(ctx context.Context, rows []Row) ([][]prepared, error) {
	if err := st.checkNames(rows); err != nil {
		return nil, err
	}
	// One allocation for every row's samples: a row of scalars costs
	// less to prepare than to allocate apart.
	n := len(st.cols)
	all := make([]prepared, len(rows)*n)
	out := make([][]prepared, len(rows))
	for i := range rows {
		out[i] = all[i*n : (i+1)*n : (i+1)*n]
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(st.d.opts.parallelism)
	// The error reported is the first bad row's, whichever run finds one
	// first: a run stops past the lowest bad row found so far, and runs
	// before it go on.
	var (
		mu     sync.Mutex
		badErr error
		bad    atomic.Int64
	)
	bad.Store(int64(len(rows)))
	// Runs of rows, a few per worker: a goroutine per row costs more than
	// preparing a row of scalars (its start and its stack's growth).
	run := max(1, len(rows)/(4*max(st.d.opts.parallelism, 1)))
	for lo := 0; lo < len(rows); lo += run {
		g.Go(func() error {
			for i := lo; i < min(lo+run, len(rows)) && int64(i) < bad.Load(); i++ {
				if err := gctx.Err(); err != nil {
					return err
				}
				for k := range st.cols {
					c := &st.cols[k]
					s, ok := rows[i][c.Name]
					if !ok {
						out[i][k] = prepared{null: true}
						continue
					}
					p, err := prepare(c, s)
					if err != nil {
						mu.Lock()
						if int64(i) < bad.Load() {
							bad.Store(int64(i))
							badErr = fmt.Errorf("%s: row %d: %w", st.d.url, i, err)
						}
						mu.Unlock()
						return nil
					}
					out[i][k] = p
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if badErr != nil {
		return nil, badErr
	}
	return out, nil
}

// checkNames fails with ErrInvalidArgument, naming it, on the first
// column of a row that the stage has no column for. A row holds no
// unknown column when each of its names is one of the columns': it has as
// many names as it has columns of the stage.
func (st *staging) checkNames(rows []Row) error {
	for i, r := range rows {
		known := 0
		for k := range st.cols {
			if _, ok := r[st.cols[k].Name]; ok {
				known++
			}
		}
		if known == len(r) {
			continue
		}
		for name := range r {
			if _, ok := st.column(name); !ok {
				return fmt.Errorf("%s: row %d: unknown column %q (have %v): %w", st.d.url, i, name, colNames(st.cols), ErrInvalidArgument)
			}
		}
	}
	return nil
}

func colNames(cols []schema.Column) []string {
	var out []string
	for _, c := range cols {
		out = append(out, c.Name)
	}
	return out
}

// addRow appends prepared samples to the open append fragment.
func (st *staging) addRow(ctx context.Context, p []prepared) error {
	fw := st.openFragment()
	for k := range st.cols {
		cw, err := st.writerOf(ctx, fw, &st.cols[k])
		if err != nil {
			return err
		}
		var s prepared
		if k < len(p) {
			s = p[k]
		} else {
			s = prepared{null: true}
		}
		if err := st.addSample(ctx, cw, fw.rows, s); err != nil {
			return err
		}
	}
	fw.rows++
	if st.fragmentFull(fw) {
		st.seal(ctx, fw)
		st.sealed = append(st.sealed, fw)
		st.open = nil
	}
	return nil
}

// openFragment returns the open append fragment, opened if there is none.
func (st *staging) openFragment() *fragWriter {
	if st.open == nil {
		st.open = &fragWriter{cols: map[int]*colWriter{}}
	}
	return st.open
}

// writerOf returns the fragment's writer of column c, made (with nulls
// for the fragment's rows before, when the column was added after them)
// if it has none.
func (st *staging) writerOf(ctx context.Context, fw *fragWriter, c *schema.Column) (*colWriter, error) {
	if cw := fw.cols[c.UID]; cw != nil {
		return cw, nil
	}
	cw := &colWriter{col: c}
	fw.cols[c.UID] = cw
	for r := int64(0); r < fw.rows; r++ {
		if err := st.addSample(ctx, cw, r, prepared{null: true}); err != nil {
			return nil, err
		}
	}
	return cw, nil
}

func (st *staging) fragmentFull(fw *fragWriter) bool {
	if fw.rows >= maxFragmentRows {
		return true
	}
	for _, cw := range fw.cols {
		if cw.chunks >= maxFragmentChunks {
			return true
		}
	}
	return false
}

// addSample adds one prepared sample at fragment offset off.
func (st *staging) addSample(ctx context.Context, cw *colWriter, off int64, p prepared) error {
	c := cw.col
	dl := st.delta(c.UID)
	if !p.null {
		dl.Samples++
		dl.RawBytes += p.raw
		dl.MergeShape(p.shape, p.shape)
		dl.CountLabels(c, p.data, 1)
	}
	if cw.b != nil && !p.null && cw.b.Len() > 0 && !cw.sameNDim(len(p.shape)) {
		st.flush(ctx, cw)
	}
	if !p.null && len(p.data) > c.ChunkBytes {
		st.flush(ctx, cw)
		st.addSplit(ctx, cw, off, p)
		return nil
	}
	if cw.b == nil {
		cw.b = st.newBuilder(c, c.ChunkBytes+c.ChunkBytes/8)
		cw.first = off
	}
	shape := p.shape
	if p.null {
		shape = cw.nullShape()
	}
	if err := cw.b.AddMedia(shape, p.data, p.null, p.media); err != nil {
		return fmt.Errorf("%s: column %q: %w", st.d.url, c.Name, err)
	}
	if cw.b.RawBytes() >= c.ChunkBytes {
		st.flush(ctx, cw)
	}
	return nil
}

// sameNDim reports whether a sample of ndim dimensions fits the open chunk.
func (cw *colWriter) sameNDim(ndim int) bool { return len(cw.nullShape()) == ndim }

// nullShape is the shape recorded for a null sample: zeros of the chunk's
// dimensionality (or the declared one).
func (cw *colWriter) nullShape() []int {
	if cw.b != nil && cw.b.Len() > 0 {
		return make([]int, cw.b.NDim())
	}
	if cw.col.DType.Variable() {
		return []int{0}
	}
	return make([]int, len(cw.col.Shape))
}

// addSplit stores a sample bigger than a chunk as consecutive pieces.
func (st *staging) addSplit(ctx context.Context, cw *colWriter, off int64, p prepared) {
	c := cw.col
	n := (len(p.data) + c.ChunkBytes - 1) / c.ChunkBytes
	for i := 0; i < n; i++ {
		lo, hi := i*c.ChunkBytes, min((i+1)*c.ChunkBytes, len(p.data))
		b := st.newBuilder(c, 0)
		// Builder.Add checks nothing about sizes, so a piece carries the
		// whole sample's shape.
		_ = b.AddMedia(p.shape, p.data[lo:hi], false, p.media)
		b.SetPartial(chunk.Partial{Total: uint64(len(p.data)), Offset: uint64(lo), Index: uint32(i), Count: uint32(n)})
		ref := &manifest.ChunkRef{First: off, Rows: 1, Part: i, Parts: n}
		cw.refs = append(cw.refs, ref)
		cw.chunks++
		st.submit(ctx, c.UID, b, ref)
	}
}

// newBuilder returns a recycled or new chunk builder for column c.
func (st *staging) newBuilder(c *schema.Column, sizeHint int) *chunk.Builder {
	sc, codec := chunk.SampleCode(c.SampleCompression), chunk.CodecCode(c.ChunkCompression)
	if b := st.builders.get(c.UID); b != nil {
		b.Reinit(c.DType, sc, codec)
		return b
	}
	return chunk.NewBuilder(c.DType, sc, codec, sizeHint)
}

// flush hands the open chunk of a column to the encoders.
func (st *staging) flush(ctx context.Context, cw *colWriter) {
	if cw.b == nil || cw.b.Len() == 0 {
		return
	}
	ref := &manifest.ChunkRef{First: cw.first, Rows: int64(cw.b.Len())}
	cw.refs = append(cw.refs, ref)
	cw.chunks++
	st.submit(ctx, cw.col.UID, cw.b, ref)
	cw.b = nil
}

// submit encodes and uploads a chunk in the background, at most
// 2×parallelism at once so that memory stays bounded: it waits for a slot,
// unless the call that staged the chunk is interrupted (ctx), which then
// finishes staging its rows (already in memory) without waiting, so that
// Ctrl-C is not held up by a slow link and the stage stays whole.
func (st *staging) submit(ctx context.Context, uid int, b *chunk.Builder, ref *manifest.ChunkRef) {
	if st.ctx.Err() != nil {
		return // failed or aborted: nothing more is uploaded
	}
	slot := false
	select {
	case st.slots <- struct{}{}:
		slot = true
	case <-ctx.Done():
	}
	dl := st.delta(uid)
	st.uploads.Go(func() error {
		if slot {
			defer func() { <-st.slots }()
		}
		fail := func(err error) error {
			st.cancel(err)
			return err
		}
		buf, _ := st.buffers.get()
		st.encoders <- struct{}{}
		obj, inPlace, err := b.EncodeInPlace(buf)
		<-st.encoders
		if lo, hi, ok := b.Stats(); ok && err == nil {
			ref.Min, ref.Max = &lo, &hi
		}
		// A chunk encoded in place is the builder's memory: the builder
		// is reused after the Put (which does not retain its argument),
		// as obj is when it is not.
		recycle := func() {
			b.Reset()
			st.builders.put(b, uid)
		}
		if !inPlace {
			recycle()
			recycle = func() {}
			if obj != nil {
				buf = obj[:0]
			}
		}
		defer func() {
			recycle()
			if buf != nil {
				st.buffers.put(buf)
			}
		}()
		if err != nil {
			return fail(fmt.Errorf("%s: encode chunk: %w", st.d.url, err))
		}
		h, err := chunk.ParseSizes(obj)
		if err != nil {
			return fail(fmt.Errorf("%s: encode chunk: %w", st.d.url, err))
		}
		hash := manifest.Hash(obj)
		key := keys.Make(keys.Chunk, hash)
		if err := st.d.store.Put(st.ctx, key, obj); err != nil {
			return fail(fmt.Errorf("write chunk %s: %w", key, err))
		}
		ref.Key, ref.Header, ref.Size, ref.Raw, ref.HCRC = key, h.Len, h.Size(), h.RawLen, h.CRC
		dl.stored.Add(h.Size())
		return nil
	})
}

// builderPool keeps the spare chunk builders of a stage, each with the
// column it last held. A builder's memory grows to fit its chunks (the
// data, and for text a length a value: 6 MiB for a chunk of 5-byte
// values), so get gives a column the builder that held it before when
// one is spare, rather than one that would grow again. It is safe for
// concurrent use.
type builderPool struct {
	mu    sync.Mutex
	spare []spareBuilder
}

type spareBuilder struct {
	b   *chunk.Builder
	uid int
}

// get returns a spare builder, the last one of column uid if there is
// one, else the one put last; nil when none is spare.
func (p *builderPool) get(uid int) *chunk.Builder {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.spare) == 0 {
		return nil
	}
	k := len(p.spare) - 1
	for i := k; i >= 0; i-- {
		if p.spare[i].uid == uid {
			k = i
			break
		}
	}
	b := p.spare[k].b
	p.spare = slices.Delete(p.spare, k, k+1)
	return b
}

// put keeps b, last used for column uid, for a later get.
func (p *builderPool) put(b *chunk.Builder, uid int) {
	p.mu.Lock()
	p.spare = append(p.spare, spareBuilder{b, uid})
	p.mu.Unlock()
}

// freeList keeps up to cap spare values for reuse. Unlike a sync.Pool,
// it keeps them across garbage collections: a stage's chunk builders and
// encoding buffers (a chunk's size each, 8 MiB by default) would
// otherwise be allocated, and their pages faulted in, again after every
// collection, which an ingest triggers every few chunks. It is safe for
// concurrent use; get and put never block.
type freeList[T any] chan T

// get returns a spare value, or ok false when there is none.
func (f freeList[T]) get() (v T, ok bool) {
	select {
	case v = <-f:
		return v, true
	default:
		return v, false
	}
}

// put keeps v for a later get, or drops it when the list is full.
func (f freeList[T]) put(v T) {
	select {
	case f <- v:
	default:
	}
}

// seal flushes every column of a fragment.
func (st *staging) seal(ctx context.Context, fw *fragWriter) {
	for _, uid := range sortedUIDs(fw.cols) {
		st.flush(ctx, fw.cols[uid])
	}
}

func sortedUIDs(m map[int]*colWriter) []int { return slices.Sorted(maps.Keys(m)) }

// Delete stages the deletion of rows by id. Ids not in the handle's
// snapshot fail with ErrNotFound and stage nothing.
func (d *Dataset) Delete(ctx context.Context, ids ...uint64) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	st, err := d.stagingLocked(ctx)
	if err != nil {
		return err
	}
	locs := make([]rowLoc, 0, len(ids))
	for _, id := range ids {
		if err := st.checkUnstaged(id); err != nil {
			return err
		}
		if st.patches[id] != nil {
			return fmt.Errorf("%s: row id %d is updated in this commit; commit the update before deleting the row: %w", d.url, id, ErrInvalidArgument)
		}
		k, off, err := d.findRow(ctx, st.base, id)
		if err != nil {
			return err
		}
		locs = append(locs, rowLoc{id: id, frag: k, off: off})
	}
	for _, l := range locs {
		st.deletes[l.id] = l
	}
	return nil
}

// checkUnstaged fails with ErrInvalidArgument if the stage deletes the
// row id already, or holds it as a conflict.
func (st *staging) checkUnstaged(id uint64) error {
	if _, ok := st.deletes[id]; ok {
		return fmt.Errorf("%s: row id %d is already deleted in this commit: %w", st.d.url, id, ErrInvalidArgument)
	}
	if st.conflicts[id] {
		return fmt.Errorf("%s: row id %d is staged here and was deleted or changed by another commit since; discard the conflicting changes first: %w", st.d.url, id, ErrInvalidArgument)
	}
	return nil
}

func searchRef(refs []manifest.ChunkRef, off int64) int {
	lo, hi := 0, len(refs)
	for lo < hi {
		m := (lo + hi) / 2
		if refs[m].First > off {
			hi = m
		} else {
			lo = m + 1
		}
	}
	k := lo - 1
	for k > 0 && refs[k].Parts > 0 && refs[k].Part > 0 {
		k--
	}
	return k
}

// AddColumn stages a new column. Existing rows have it empty (null) until
// updated; no existing data is rewritten.
func (d *Dataset) AddColumn(ctx context.Context, col schema.Column) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	st, err := d.stagingLocked(ctx)
	if err != nil {
		return err
	}
	col.UID = 0
	if err := col.Normalize(); err != nil {
		return fmt.Errorf("%s: add column: %w", d.url, err)
	}
	if _, ok := st.column(col.Name); ok {
		return fmt.Errorf("%s: add column %q: a column of that name exists: %w", d.url, col.Name, ErrInvalidArgument)
	}
	// Column pointers held by open writers point into st.cols: re-point
	// them after the append may have moved the slice.
	col.UID = st.nextUID
	st.nextUID++
	st.cols = append(st.cols, col)
	st.added++
	for _, fw := range st.writers() {
		for _, cw := range fw.cols {
			cw.col, _ = (&schema.Schema{Columns: st.cols}).ByUID(cw.col.UID)
		}
	}
	return nil
}

func (st *staging) writers() []*fragWriter {
	out := append([]*fragWriter(nil), st.sealed...)
	if st.open != nil {
		out = append(out, st.open)
	}
	return out
}

func (st *staging) empty() bool {
	return st.open == nil && len(st.sealed) == 0 && len(st.deletes) == 0 && len(st.patches) == 0 && len(st.conflicts) == 0 && st.added == 0
}

// Discard drops the staged writes: appends, updates, deletions and added
// columns. The handle stays at its snapshot.
func (d *Dataset) Discard() {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.stage != nil {
		d.stage.abort()
		d.stage = nil
	}
}
