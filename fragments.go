package loch

import (
	"context"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Fragment describes one fragment of a Scan's snapshot (docs/format.md
// §2.4): the identity of its rows and the positions of its live rows.
type Fragment struct {
	// Key is the fragment object's key.
	Key string
	// IDStart is the first row id of an appended fragment's rows; nil for
	// a fragment written by an update (its ids are in the object).
	IDStart *uint64
	// Extensions are the fragment's extension objects, which name the
	// chunks of columns added or updated in place since it was written.
	Extensions []string
	// Start and End bound the positions of its live rows: [Start, End).
	Start, End int64
}

// Ident names the fragment's rows with their data: its key, for an
// appended fragment "@" and its first row id (two identical appends share
// an object, not ids), and "+" and its extensions if it has any (an update
// in place gives it new ones). A row's data is fixed by its fragment's
// Ident and its id.
func (f Fragment) Ident() string { return fragIdent(f.Key, f.IDStart, f.Extensions) }

// Fragments returns the snapshot's fragments in row order. It needs no
// Load.
func (sc *Scan) Fragments() []Fragment {
	out := make([]Fragment, len(sc.s.frags))
	for k, f := range sc.s.frags {
		out[k] = Fragment{Key: f.ref.Key, IDStart: f.ref.IDStart, Extensions: f.ref.Extensions, Start: sc.s.cum[k], End: sc.s.cum[k+1]}
	}
	return out
}

// ColumnChunks returns a digest of the chunks that fragment k (an index
// into Fragments) names for the column with this uid ("" when it names
// none: the column is null there): two fragments of one key and id_start
// with one digest hold the same samples in that column, whatever their
// extensions (an update in place of other columns leaves it as it was).
// It loads the fragment if Load has not.
func (sc *Scan) ColumnChunks(ctx context.Context, k, uid int) (string, error) {
	if k < 0 || k >= len(sc.s.frags) {
		return "", fmt.Errorf("fragment %d of %d: %w", k, len(sc.s.frags), ErrInvalidArgument)
	}
	f := sc.s.frags[k]
	if err := f.load(ctx, sc.d); err != nil {
		return "", err
	}
	refs := f.cols[uid]
	if len(refs) == 0 {
		return "", nil
	}
	h := xxh3.New()
	for _, r := range refs {
		_, _ = h.WriteString(r.Key)
		_, _ = h.WriteString("\n")
	}
	return fmt.Sprintf("%016x", h.Sum64()), nil
}
