// Package decodelimit bounds what one decode may produce: the decode
// limit, in bytes of decoded output, that every decoder of loch checks
// before it allocates. The png and jpeg decoders (package imaging), the
// video and audio decoders (package media), the transforms' decode and
// clip steps, and the engine's whole-sample reads all compare the size a
// file declares (a png's IHDR, a jpeg's SOF, a video stream's frame size
// times the frames asked for, an audio stream's samples times channels)
// with the one limit here, so that a small file declaring a huge size (a
// decompression bomb) is refused with ErrTooLarge instead of taking
// gigabytes of memory.
//
// The decoded sizes compared: an image's height x width x channels
// (uint8), video frames' count x height x width x 3 (RGB24), audio's
// samples x channels x 4 (float32).
//
// The limit is process-wide, as Pillow's MAX_IMAGE_PIXELS is: $LOCH_MAX_DECODE_BYTES
// (read once, at the first check; a size such as 536870912, 512MiB or 2GB;
// 0 for no limit), overridden by Set (the CLI's --max-decode-bytes, the
// Python SDK's loch.set_max_decode_bytes, loch.SetMaxDecodeBytes). Default
// is 512 MiB: Pillow's own bomb error threshold for RGB images (2 x
// MAX_IMAGE_PIXELS = 178,956,970 pixels of 3 bytes is 512 MiB), and the
// old jpeg cap of 2^27 pixels for RGBA.
//
// Every function is safe for concurrent use.
package decodelimit

import (
	"math"
	"math/bits"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dustin/go-humanize"

	"github.com/lochdata/loch/internal/base"
)

// Default is the limit when neither $LOCH_MAX_DECODE_BYTES nor Set says
// otherwise: 512 MiB of decoded output.
const Default int64 = 512 << 20

// Env is the environment variable that sets the limit.
const Env = "LOCH_MAX_DECODE_BYTES"

// ErrTooLarge marks a sample or file whose decoded size is more than the
// decode limit. It matches base.ErrInvalidArgument too (never
// base.ErrCorrupt: the bytes may be sound, the limit refuses them).
var ErrTooLarge = base.Mark(base.ErrInvalidArgument, "too large to decode", nil)

// setting is the limit in force, or the error of a $LOCH_MAX_DECODE_BYTES
// that does not parse (every check then fails with it).
type setting struct {
	max int64 // 0: no limit
	err error
}

var (
	current  atomic.Pointer[setting]
	loadOnce sync.Once
)

// get returns the setting, reading the environment the first time.
func get() *setting {
	loadOnce.Do(func() {
		s := &setting{max: Default}
		if v := os.Getenv(Env); v != "" {
			n, err := Parse(v)
			if err != nil {
				s.err = base.Markf(base.ErrInvalidArgument, "%s=%q: %v", Env, v, err)
			}
			s.max = n
		}
		current.CompareAndSwap(nil, s) // a Set before the first check wins
	})
	return current.Load()
}

// Parse reads a limit: a byte count such as 536870912, or a size with a
// binary (512MiB) or decimal (2GB) unit; 0 means no limit.
func Parse(v string) (int64, error) {
	v = strings.TrimSpace(v)
	n, err := humanize.ParseBytes(v)
	if err != nil || n > math.MaxInt64 || strings.HasPrefix(v, "-") {
		return 0, base.Markf(base.ErrInvalidArgument, "decode limit %q: want a byte count like 536870912 or 512MiB, or 0 for no limit", v)
	}
	return int64(n), nil
}

// Max returns the limit in bytes (0: no limit).
func Max() int64 { return get().max }

// Set sets the limit to n bytes (0: no limit) and returns the one it
// replaces. A negative n is an ErrInvalidArgument error and changes
// nothing.
func Set(n int64) (old int64, err error) {
	if n < 0 {
		return Max(), base.Markf(base.ErrInvalidArgument, "decode limit %d: want 0 (no limit) or more bytes", n)
	}
	prev := get()
	current.Store(&setting{max: n})
	return prev.max, nil
}

// Save returns a function that puts back the setting in force now (the
// limit, or the error of a $LOCH_MAX_DECODE_BYTES that does not parse):
// for a command or a test that sets the limit for its own run.
func Save() (restore func()) {
	s := get()
	return func() { current.Store(s) }
}

// Size is the product of an element size and dimensions, saturating at
// math.MaxInt64; a negative dimension counts as 0.
func Size(elem int, dims ...int) int64 {
	p := uint64(max(elem, 0))
	for _, d := range dims {
		hi, lo := bits.Mul64(p, uint64(max(d, 0)))
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		p = lo
	}
	return int64(p)
}

// Check returns nil when a decode of n bytes is within the limit, and
// otherwise an ErrTooLarge error that says what (for example "png image of
// 30000x30000 pixels, 1 channel"), its decoded size and the limit. Callers
// put the name of the file, row or sample before it.
func Check(what string, n int64) error {
	s := get()
	if s.err != nil {
		return s.err
	}
	if s.max > 0 && n > s.max {
		return base.Markf(ErrTooLarge, "%s: %d bytes, more than the decode limit of %d bytes (%s or --max-decode-bytes sets it)", what, n, s.max, Env)
	}
	return nil
}
