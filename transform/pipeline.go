package transform

import (
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// A Step is one transform of a sample. Implementations are immutable values:
// every method is safe to call from many goroutines at once.
type Step interface {
	// String returns the step as written in a spec ("resize=256"); Parse
	// reads the String of every built-in step back to an equal step.
	String() string
	// Random reports whether Apply draws from its rng.
	Random() bool
	// Out describes the image the step makes from in: Shape, DType, Layout
	// and Encoded, with Data nil. It may read in.Data (decode reads an
	// encoded image's header) but never depends on randomness, so a caller
	// can size the output before Apply. Unknown (-1) dimensions of in give
	// -1 wherever the output depends on them. An input the step cannot take
	// gives an error that wraps ErrInput or ErrDecode.
	Out(in Image) (Image, error)
	// Apply writes the step's output for in into out.Data, where out is
	// what Out(in) returned with Data set to exactly out.Size() bytes that
	// do not overlap in.Data. rng is the sample's random source (nil when
	// no step of the pipeline is random). Apply keeps no reference to in or
	// out after it returns.
	Apply(in, out Image, rng *rand.Rand) error
}

// A Pipeline is a list of steps applied to one sample. It is built once
// (by Parse or New) and then used from many goroutines concurrently: it
// holds no mutable state, and each Apply takes its scratch buffers from a
// sync.Pool. The zero Pipeline has no steps and copies its input.
type Pipeline struct {
	steps  []Step // as given, for String and Steps
	plan   []Step // what Apply runs: steps with neighbours fused
	random bool
}

// New builds a pipeline from steps, in order. Neighbouring steps are fused
// where that is faster and gives the same shapes: decode followed by resize
// decodes a JPEG at 1/2, 1/4 or 1/8 scale in the DCT domain when the resize
// target is at most that size (unless decode is "decode=full"); resize
// followed by a crop computes only the pixels that the crop keeps; and
// to_float with a following normalize and chw becomes one pass. Only the
// DCT-domain decode changes pixel values.
func New(steps ...Step) (Pipeline, error) {
	p := Pipeline{steps: append([]Step(nil), steps...)}
	for i, s := range steps {
		if s == nil {
			return Pipeline{}, base.Markf(ErrSpec, "step %d is nil", i+1)
		}
		if v, ok := s.(interface{ validate() error }); ok {
			if err := v.validate(); err != nil {
				return Pipeline{}, base.Markf(ErrSpec, "step %d %q: %v", i+1, s, err)
			}
		}
		p.random = p.random || s.Random()
	}
	for i := 0; i < len(steps); i++ {
		switch s := steps[i].(type) {
		case decodeStep:
			if r, ok := next[resizeStep](steps, i); ok && !s.full {
				s.then = &r
			}
			p.plan = append(p.plan, s)
		case resizeStep:
			if c, ok := next[cropStep](steps, i); ok {
				p.plan = append(p.plan, resizeCrop{resize: s, crop: c})
				i++
				continue
			}
			p.plan = append(p.plan, s)
		case toFloatStep:
			f, n, err := fuseFloat(steps[i:])
			if err != nil {
				return Pipeline{}, err
			}
			p.plan = append(p.plan, f)
			i += n - 1
		case AudioStep:
			f, n := fuseAudio(steps[i:])
			p.plan = append(p.plan, f)
			i += n - 1
		default:
			p.plan = append(p.plan, s)
		}
	}
	return p, nil
}

func next[T Step](steps []Step, i int) (T, bool) {
	if i+1 < len(steps) {
		t, ok := steps[i+1].(T)
		return t, ok
	}
	var zero T
	return zero, false
}

// Steps returns the pipeline's steps in order (a copy).
func (p Pipeline) Steps() []Step { return append([]Step(nil), p.steps...) }

// String returns the pipeline as a spec that Parse reads back.
func (p Pipeline) String() string {
	names := make([]string, len(p.steps))
	for i, s := range p.steps {
		names[i] = s.String()
	}
	return strings.Join(names, ",")
}

// Random reports whether Apply needs a random source.
func (p Pipeline) Random() bool { return p.random }

// Out describes the pipeline's output for in (see Step.Out): an error, a
// *StepError naming the step and its input, means Apply would fail too.
func (p Pipeline) Out(in Image) (Image, error) {
	cur := in // with its Data: decode may read the header
	for _, s := range p.plan {
		o, err := s.Out(cur)
		if err != nil {
			return Image{}, stepError(s, cur, err)
		}
		o.Data = nil
		cur = o
	}
	cur.Data = nil
	return cur, nil
}

// OutShape returns the shape and dtype of the pipeline's output for uint8
// HWC pixels (or a png or jpeg image that decodes to them) of shape in, so
// that the loader can allocate batch buffers. Dimensions of in may be -1
// (unknown, as in a ragged column); the output is fixed when none of its
// dimensions is -1, for example after resize=WxH or a crop. A crop larger
// than a known input is an error; with unknown dimensions it can only fail
// later, in Apply.
func (p Pipeline) OutShape(in []int) ([]int, schema.DType, error) {
	out, err := p.Out(Image{Shape: in, DType: schema.Uint8})
	if err != nil {
		return nil, 0, err
	}
	return out.Shape, out.DType, nil
}

// Apply runs the pipeline on one sample. rng is the sample's random source
// (the loader derives it from the seed, epoch and row, so runs repeat); it
// may be nil when the pipeline is not Random.
//
// The output's Data is dst[:n] when cap(dst) >= n, and otherwise a new
// slice: it never aliases in.Data or the pipeline's pooled scratch, so it
// stays valid for as long as the caller keeps it. dst must not overlap
// in.Data. Errors are *StepError values that wrap ErrInput or ErrDecode.
func (p Pipeline) Apply(in Image, rng *rand.Rand, dst []byte) (Image, error) {
	if p.random && rng == nil {
		return Image{}, base.Markf(ErrInput, "transform %s is random and needs an rng, got nil", p)
	}
	if in.Encoded == "" {
		if n := in.Size(); n < 0 || n != len(in.Data) {
			return Image{}, base.Markf(ErrInput, "image of %s %v %s has %d bytes", in.DType, in.Shape, in.Layout, len(in.Data))
		}
	} else if len(in.Data) == 0 && in.Source == nil {
		return Image{}, base.Markf(ErrDecode, "decode image: empty %s image", in.Encoded)
	}
	if len(p.plan) == 0 {
		out := in
		out.Data = grow(dst, len(in.Data))
		copy(out.Data, in.Data)
		return out, nil
	}
	sc := scratchPool.Get().(*scratch)
	defer sc.release()
	cur := in
	for i, s := range p.plan {
		o, err := s.Out(cur)
		if err != nil {
			return Image{}, stepError(s, cur, err)
		}
		n := o.Size()
		if n < 0 {
			return Image{}, stepError(s, cur, base.Markf(ErrInput, "output %v has unknown dimensions", o.Shape))
		}
		if i == len(p.plan)-1 {
			o.Data = grow(dst, n)
		} else {
			sc.buf[i%2] = grow(sc.buf[i%2], n)
			o.Data = sc.buf[i%2]
		}
		if err := s.Apply(cur, o, rng); err != nil {
			return Image{}, stepError(s, cur, err)
		}
		cur = o
	}
	return cur, nil
}

// grow returns b[:n] when b has room, and otherwise a new slice.
func grow(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]byte, n)
}

// scratch holds the two buffers that a pipeline's intermediate images
// alternate between.
type scratch struct{ buf [2][]byte }

// maxPooled keeps a huge image's buffers out of the pool.
const maxPooled = 64 << 20

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func (s *scratch) release() {
	for i, b := range s.buf {
		if cap(b) > maxPooled {
			s.buf[i] = nil
		}
	}
	scratchPool.Put(s)
}
