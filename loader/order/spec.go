package order

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/lochdata/loch/internal/base"
)

// Errors that callers branch on with errors.Is.
var (
	// ErrInvalid: a Spec, MixSpec or State field is out of its range. It
	// matches loch.ErrInvalidArgument too.
	ErrInvalid = base.Mark(base.ErrInvalidArgument, "order: invalid argument", nil)
	// ErrMismatch: a State does not belong to the Spec it is resumed with
	// (another snapshot, or progress beyond the end of its epoch). It
	// matches loch.ErrInvalidArgument too.
	ErrMismatch = base.Mark(base.ErrInvalidArgument, "order: state does not match the spec", nil)
)

// Mode is a shuffle mode.
type Mode string

// The shuffle modes (see the package documentation for their exact
// definitions).
const (
	// ModeNone delivers the rows in order.
	ModeNone Mode = "none"
	// ModeFull delivers a uniform random permutation of the rows.
	ModeFull Mode = "full"
	// ModeBlock shuffles the order of the blocks and the rows within
	// windows of consecutive shuffled blocks.
	ModeBlock Mode = "block"
)

// DefaultWindowBlocks is the window when Spec.WindowRows is 0: this many
// times the largest block, in rows. With the loader's segments (about 1 MiB
// of the largest column) a batch of 64 rows drawn from a window of 128
// blocks takes its rows from about 50 blocks, and a class-sorted dataset's
// batches hold 0.96 of a full permutation's classes (TestClassMixing).
const DefaultWindowBlocks = 128

// Spec is everything the order of one dataset depends on. The zero value
// of Mode, WorldSize and WindowRows means their default; BatchSize must be
// set.
type Spec struct {
	// Blocks are the sizes in rows of the dataset's consecutive blocks
	// (chunk-aligned row groups: reading a block costs one chunk fetch per
	// column). Positions run from 0 to the sum of the sizes minus 1.
	// Empty blocks are allowed and ignored.
	Blocks []int64
	// Subset, when not nil, replaces "every row" by these positions, in
	// this order (the order of ModeNone). Each must be a position of
	// Blocks and none may repeat. An empty non-nil Subset has no rows.
	Subset []int64
	// Version identifies the snapshot (opaque here). It is copied into
	// each State, and Resume refuses a State of another Version.
	Version string
	// Selection identifies the rows Subset selects (opaque here: a loader
	// derives it from the rows' stable ids, which outlive positions); ""
	// means every row. It is copied into each State, and Resume refuses a
	// State of another Selection.
	Selection string
	// Seed and Epoch select the shuffle. Epoch must not be negative.
	Seed  uint64
	Epoch int
	// Mode is the shuffle mode (default ModeNone).
	Mode Mode
	// WindowRows is the smallest number of rows of a block-mode window
	// (default DefaultWindowBlocks times the largest block). A window
	// always holds whole blocks, so a value below one block means one
	// block per window. Other modes ignore it.
	WindowRows int64
	// WorldSize is the number of data-parallel ranks (default 1) and Rank
	// this process's rank, in [0, WorldSize).
	WorldSize int
	Rank      int
	// BatchSize is the number of rows per batch, at least 1.
	BatchSize int
	// DropLast drops the end of the epoch's order so that every rank gets
	// the same number of full batches. Without it the order is padded by
	// repeating its start, and the last batch of each rank may be short.
	DropLast bool
}

// Setup is what an order depends on besides its snapshot (Version), Seed,
// Epoch, world size and batch size: a State records it, and Resume refuses
// a State whose Setup differs, naming the first field that does (world
// size and batch size may change between stages; see Resuming in the
// package documentation). A mixture's Setup holds its datasets' in Parts.
type Setup struct {
	Mode Mode `json:"mode"`
	// WindowRows is Spec.WindowRows in block mode (0 in other modes, where
	// the window does not change the order).
	WindowRows int64  `json:"window_rows,omitempty"`
	DropLast   bool   `json:"drop_last,omitempty"`
	Selection  string `json:"selection,omitempty"`
	// Weights and EpochRows are a mixture's (MixSpec), Parts its datasets'
	// setups (Mode of a mixture is "mix").
	Weights   []float64 `json:"weights,omitempty"`
	EpochRows int64     `json:"epoch_rows,omitempty"`
	Parts     []Setup   `json:"parts,omitempty"`
}

// setup returns the Setup of a validated spec.
func (s Spec) setup() Setup {
	st := Setup{Mode: s.Mode, DropLast: s.DropLast, Selection: s.Selection}
	if st.Mode == "" {
		st.Mode = ModeNone
	}
	if st.Mode == ModeBlock {
		st.WindowRows = s.WindowRows
	}
	return st
}

// check reports, wrapping ErrMismatch, the first field in which saved (a
// State's) differs from s (the Spec it is resumed with).
func (s Setup) check(saved Setup) error {
	return s.checkIn("", saved)
}

func (s Setup) checkIn(where string, saved Setup) error {
	differ := func(field string, was, now any) error {
		return base.Markf(ErrMismatch, "the state was saved with %s%s %v, resumed with %v", where, field, was, now)
	}
	switch {
	case saved.Mode == "":
		return base.Markf(ErrMismatch, "the state records no shuffle mode (saved by a loch older than this one, whose states do not record what the order depends on): start the epoch again")
	case saved.Mode != s.Mode:
		return differ("shuffle mode", saved.Mode, s.Mode)
	case saved.WindowRows != s.WindowRows:
		return differ("window_rows", saved.WindowRows, s.WindowRows)
	case saved.DropLast != s.DropLast:
		return differ("drop_last", saved.DropLast, s.DropLast)
	case saved.Selection != s.Selection:
		return differ("row selection", describe(saved.Selection), describe(s.Selection))
	case !slices.Equal(saved.Weights, s.Weights):
		return differ("mixture weights", saved.Weights, s.Weights)
	case saved.EpochRows != s.EpochRows:
		return differ("epoch_rows", saved.EpochRows, s.EpochRows)
	case len(saved.Parts) != len(s.Parts):
		return differ("number of mixed datasets", len(saved.Parts), len(s.Parts))
	}
	for d := range s.Parts {
		if err := s.Parts[d].checkIn(fmt.Sprintf("dataset %d's ", d), saved.Parts[d]); err != nil {
			return err
		}
	}
	return nil
}

// describe names a Selection for a message.
func describe(sel string) string {
	if sel == "" {
		return "(every row)"
	}
	return sel
}

// Validate reports the first field of s that is out of range, wrapping
// ErrInvalid. It costs O(len(Subset)) time and at most 8 bytes per subset
// position of memory.
func (s Spec) Validate() error {
	if err := s.validateOrder(); err != nil {
		return err
	}
	if s.BatchSize < 1 {
		return base.Markf(ErrInvalid, "batch size %d, want at least 1", s.BatchSize)
	}
	return validateRank(s.WorldSize, s.Rank)
}

// validateOrder checks the fields that define the rows and their shuffle.
func (s Spec) validateOrder() error {
	switch s.Mode {
	case "", ModeNone, ModeFull, ModeBlock:
	default:
		return base.Markf(ErrInvalid, "shuffle mode %q, want none, full or block", s.Mode)
	}
	if s.Epoch < 0 {
		return base.Markf(ErrInvalid, "epoch %d, want at least 0", s.Epoch)
	}
	if s.WindowRows < 0 {
		return base.Markf(ErrInvalid, "window of %d rows, want at least 0", s.WindowRows)
	}
	if len(s.Blocks) > math.MaxInt32 {
		return base.Markf(ErrInvalid, "%d blocks, want at most 2^31-1", len(s.Blocks))
	}
	var n int64
	for i, b := range s.Blocks {
		if b < 0 {
			return base.Markf(ErrInvalid, "block %d has %d rows, want at least 0", i, b)
		}
		if n += b; n < 0 || n > 1<<62 {
			return base.Markf(ErrInvalid, "blocks hold more than 2^62 rows")
		}
	}
	return validateSubset(s.Subset, n)
}

func validateRank(world, rank int) error {
	if world < 0 {
		return base.Markf(ErrInvalid, "world size %d, want at least 1", world)
	}
	if rank < 0 || rank >= max(world, 1) {
		return base.Markf(ErrInvalid, "rank %d outside world size %d", rank, max(world, 1))
	}
	return nil
}

// validateSubset checks that the subset's positions are in [0, n) and
// distinct: with a bitset of n bits when that is no larger than a sorted
// copy, else with a sorted copy.
func validateSubset(sub []int64, n int64) error {
	for i, p := range sub {
		if p < 0 || p >= n {
			return base.Markf(ErrInvalid, "subset[%d] is row %d, want a row in [0, %d)", i, p, n)
		}
	}
	if n/64 <= int64(len(sub)) {
		seen := newBitset(n)
		for _, p := range sub {
			if seen.has(p) {
				return base.Markf(ErrInvalid, "subset repeats row %d", p)
			}
			seen.set(p)
		}
		return nil
	}
	sorted := slices.Clone(sub)
	slices.Sort(sorted)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return base.Markf(ErrInvalid, "subset repeats row %d", sorted[i])
		}
	}
	return nil
}

// resolved is a validated Spec with its defaults applied.
type resolved struct {
	Spec
	rows   int64 // N: rows of the dataset
	window int64 // block-mode window in rows
}

func resolve(s Spec) resolved {
	r := resolved{Spec: s}
	if r.Mode == "" {
		r.Mode = ModeNone
	}
	r.WorldSize = max(r.WorldSize, 1)
	var largest int64
	for _, b := range r.Blocks {
		r.rows += b
		largest = max(largest, b)
	}
	r.window = r.WindowRows
	if r.window == 0 {
		r.window = DefaultWindowBlocks * largest
	}
	return r
}

// items is M: the number of rows the order arranges.
func (r *resolved) items() int64 {
	if r.Subset != nil {
		return int64(len(r.Subset))
	}
	return r.rows
}

// perRank is the number of rows each of world ranks delivers from an
// order of m rows: ceil(m/world) with padding, else the largest multiple
// of batch with world times it at most m.
func perRank(m int64, world, batch int, dropLast bool) int64 {
	w, b := int64(world), int64(batch)
	if dropLast {
		hi, lo := bits.Mul64(uint64(w), uint64(b))
		if hi != 0 || lo > uint64(m) {
			return 0
		}
		return m / int64(lo) * b
	}
	return (m + w - 1) / w
}

// batchCount is the number of batches of at most batch rows in rows.
func batchCount(rows int64, batch int) int {
	return int((rows + int64(batch) - 1) / int64(batch))
}

// bitset is a set of integers in [0, n).
type bitset []uint64

func newBitset(n int64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i int64) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b bitset) set(i int64)      { b[i>>6] |= 1 << (i & 63) }
