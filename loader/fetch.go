package loader

import (
	"fmt"
	"io"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/transform"
)

// fetcher performs reads until both queues are closed and drained: an
// admitted batch's reads first, then those read ahead. Each read that
// ends wakes the scheduler (fetch), which may have more to read ahead.
func (l *Loader) fetcher(fetches, ahead <-chan *chunkEntry) {
	for fetches != nil || ahead != nil {
		var e *chunkEntry
		ok := false
		select {
		case e, ok = <-fetches:
		default:
			select {
			case e, ok = <-fetches:
			case e, ok = <-ahead:
				if !ok {
					ahead = nil
					continue
				}
			}
		}
		if !ok {
			fetches = nil
			continue
		}
		l.fetch(e)
	}
}

// entry returns the table entry of a read: the one in use, else the one
// kept from earlier batches, else a new idle one (l.mu held).
func (l *Loader) entry(k entryKey) *chunkEntry {
	e, ok := l.chunks[k]
	if !ok {
		if e, ok = l.kept.Get(k); ok {
			l.kept.Remove(k)
		} else {
			e = &chunkEntry{key: k}
		}
		l.chunks[k] = e
	}
	return e
}

// fetch performs one read.
func (l *Loader) fetch(e *chunkEntry) {
	defer close(e.ready)
	if e.part != nil {
		l.fetchPart(e)
		return
	}
	if l.fill != nil {
		l.fill.wait(l.ctx, chunkRef{e.key.ds, e.key.read.Chunk})
	}
	f, err := l.scans[e.key.ds].Fetch(l.ctx, e.key.read)
	if err != nil {
		e.err = err
		return
	}
	e.f = f
	l.fetchNs.Add(int64(f.ReadTime))
	l.decodeNs.Add(int64(f.DecodeTime))
	l.fetched.Add(f.Bytes)
	if f.Cached {
		l.hits.Add(1)
	} else if f.Whole() {
		l.nchunks.Add(1)
	}
	// Correct the estimate made at admission, and wake the scheduler: the
	// bounds may allow more now, and the read-ahead queue has room.
	l.mu.Lock()
	l.inflight += f.Mem() - e.size
	e.size = f.Mem()
	l.cond.Broadcast()
	l.mu.Unlock()
}

// forget drops an idle entry's data, handing its read buffer back for
// later reads (no batch aliases it: collation copies every sample), so
// that the next batch that needs it fetches it again (l.mu held).
func (e *chunkEntry) forget() {
	if e.f != nil {
		e.f.Recycle()
	}
	e.ready, e.f, e.out, e.err, e.size, e.held = nil, nil, value{}, nil, 0, false
}

// rangedPart is a media sample (a video clip's, an audio segment's) that a
// fetcher reads by range and transforms as it reads it.
type rangedPart struct {
	slot  loch.Slot
	rowID uint64
	col   int
}

// rangedSample reports whether column c's sample at slot is read by range
// and transformed in a fetcher: the column's pipeline decodes part of it
// (a clip step first, or a segment in its first audio steps:
// transform.Pipeline.DecodesPart) and the sample is larger than
// loch.MediaRangeMin (judged by its chunk's mean sample, which the
// snapshot gives without a read; a sample split across chunks always is).
// Smaller ones cost no more bytes fetched whole, in one request shared
// with their neighbours.
func (l *Loader) rangedSample(sc *loch.Scan, c int, slot loch.Slot) bool {
	if _, ok := l.ranged[c]; !ok || slot.Null() {
		return false
	}
	return slot.Pieces() > 1 || sc.MeanSampleBytes(slot) > rangeMin
}

// rangeMin is loch.MediaRangeMin; the benchmarks raise it to compare
// whole reads on the same data.
var rangeMin int64 = loch.MediaRangeMin

// rangedEstimateUnknown is the memory budgeted for a decoded clip or
// segment whose size depends on frame sizes or channels the column's
// statistics do not give; the fetch corrects it.
const rangedEstimateUnknown = 4 << 20

// rangedEstimate is the memory one of column col's clips or audio
// segments holds decoded through p, from its largest sample's shape
// (maxShape) when the statistics give it.
func rangedEstimate(p transform.Pipeline, col schema.Column, maxShape []int) int64 {
	shape := []int{-1, -1, -1, 3}
	if col.SampleCompression == schema.AudioCompression {
		shape = []int{-1, -1}
	}
	if len(maxShape) == len(shape) {
		shape = maxShape
	}
	out, err := p.Out(transform.Image{Shape: shape, DType: col.DType, Encoded: string(col.SampleCompression)})
	if n := out.Size(); err == nil && n >= 0 {
		return int64(n)
	}
	return rangedEstimateUnknown
}

// fetchPart reads a media sample by range (its chunk headers, then the
// byte ranges the decoder asks for) and applies its column's pipeline as
// it reads. Errors name the chunk.
func (l *Loader) fetchPart(e *chunkEntry) {
	t0 := time.Now()
	sc := l.scans[e.key.ds]
	m, err := sc.OpenMedia(l.ctx, e.part.slot)
	if err != nil {
		e.err = err
		return
	}
	col := l.cols[e.key.ds][e.part.col].col
	in := transform.Image{Shape: m.Shape, DType: col.DType, Encoded: string(col.SampleCompression),
		Source: io.NewSectionReader(m, 0, m.Bytes)}
	s, dtype, err := l.transform(l.transforms[e.part.col], in, e.part.rowID)
	read := m.ReadTime()
	l.fetchNs.Add(int64(read))
	l.decodeNs.Add(int64(time.Since(t0) - read))
	l.fetched.Add(m.BytesRead())
	if err != nil {
		e.err = fmt.Errorf("%s chunk %s: %w", sc.URL(), m.Key(), err)
		return
	}
	e.out = value{s: s, dtype: dtype}
	l.mu.Lock()
	l.inflight += int64(cap(s.Data)) - e.size
	e.size = int64(cap(s.Data))
	l.cond.Broadcast()
	l.mu.Unlock()
}
