package loader

import (
	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/memcopy"
	"github.com/lochdata/loch/schema"
)

// A plain column's batch is collated straight from the fetched chunks:
// when every sample of the batch is stored as is (no image, video or
// audio compression, no transform, not null, one read) in one shape, each
// is copied from its read (a mapped chunk file, or the span a codec
// decoded into a buffer) into the batch buffer, with none of a Sample's
// per-sample work (its shape, a value, the checks for nulls and ragged
// shapes). The batch is the one stack would build. Any other batch of the
// column (a null, a failed read, another shape) goes through build's
// general path, which reports or skips what it must.

// plainCollation turns plain collation on; tests turn it off for the
// general path's batches.
var plainCollation = true

// plainColumn is a column's batch collated plainly: its samples' bytes,
// by row, and their shape (nil srcs: collated by the general path).
type plainColumn struct {
	srcs  [][]byte
	shape []int
}

// plainSources returns the bytes of column c's sample of each row of job
// (aliasing its reads), with their shape, when the column's batch may be
// collated plainly; nil otherwise.
func (l *Loader) plainSources(job *batchJob, c int) ([][]byte, []int) {
	cp := l.cols[0][c]
	if _, tf := l.transforms[c]; !plainCollation || tf || cp.encoded || l.mixed || cp.col.DType.Variable() ||
		(l.cfg.RaggedAsList && !cp.col.Shape.Fixed()) || len(job.positions) == 0 {
		return nil, nil
	}
	if _, ranged := l.ranged[c]; ranged {
		return nil, nil
	}
	sc := l.scans[0]
	first, ok := job.plainRead(c, 0)
	if !ok {
		return nil, nil
	}
	s, err := sc.Sample(job.slots[c][0], []*loch.Fetched{first})
	if err != nil || s.Null || s.Encoding != "" {
		return nil, nil
	}
	srcs := make([][]byte, len(job.positions))
	srcs[0] = s.Data
	for i := 1; i < len(srcs); i++ {
		f, ok := job.plainRead(c, i)
		if !ok {
			return nil, nil
		}
		if srcs[i], ok = sc.PlainSample(job.slots[c][i], f, s.Shape); !ok {
			return nil, nil
		}
	}
	return srcs, s.Shape
}

// plainRead returns the one read that row i's sample of column c needs,
// done without error.
func (job *batchJob) plainRead(c, i int) (*loch.Fetched, bool) {
	reads := job.reads[c][i]
	if len(reads) != 1 || reads[0].err != nil || reads[0].f == nil {
		return nil, false
	}
	return reads[0].f, true
}

// stackPlain collates the kept rows' samples (srcs, each of shape) into
// one buffer from the allocator: stack's batch, copied without decoding.
func (l *Loader) stackPlain(cp colPlan, srcs [][]byte, shape []int, keep []int) *Collated {
	n := len(keep)
	t := &Collated{DType: cp.col.DType, Shape: append([]int{n}, shape...)}
	per := schema.NumElements(shape) * t.DType.Size()
	t.Data = l.cfg.Allocator.Alloc(n * per)
	for k, i := range keep {
		memcopy.Copy(t.Data[k*per:(k+1)*per], srcs[i])
	}
	l.decoded.Add(int64(n * per))
	l.plainCols.Add(1)
	return t
}
