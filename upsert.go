package loch

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/lochdata/loch/schema"
)

// Upsert actions (UpsertOptions).
const (
	UpsertUpdate  = "update"  // a matched row takes the input row's columns
	UpsertInsert  = "insert"  // an unmatched input row is appended
	UpsertNothing = "nothing" // leave it: no update, or no insert
)

// UpsertOptions configures Upsert.
type UpsertOptions struct {
	// On names the key columns: an input row matches the rows of the
	// dataset whose values in every key column equal its own (stored
	// bytes compared; a null never matches). At least one.
	On []string
	// WhenMatched is UpsertUpdate (the default) or UpsertNothing.
	WhenMatched string
	// WhenNotMatched is UpsertInsert (the default) or UpsertNothing.
	WhenNotMatched string
	// Message is the commit message (default "upsert").
	Message string
}

// UpsertReport says what an Upsert did.
type UpsertReport struct {
	// Version is the commit written (the unchanged version when nothing
	// changed).
	Version string `json:"version"`
	// Updated counts the dataset's rows updated (an input row that
	// matches several rows updates each), Inserted the input rows
	// appended.
	Updated  int64 `json:"updated"`
	Inserted int64 `json:"inserted"`
}

// Upsert merges rows into the handle's branch by key (SQL's MERGE, Lance's
// merge_insert) as one commit: each input row that matches existing rows
// on the key columns updates them in place (their ids and positions kept;
// the columns the input row has are set, the others kept), and each that
// matches none is appended, in input order. Two input rows with the same
// key are refused (ErrInvalidArgument naming the key and both rows), as
// are key columns that do not exist or hold encoded images or media, and
// input rows without every key column. It reads the key columns of every
// row once, holding the input's keys in memory, not the dataset's.
//
// With writes staged on the handle Upsert fails with ErrInvalidArgument:
// commit or discard them first. A commit that loses a race with another
// writer is rebased and retried as Commit's are; on error nothing is
// committed and nothing stays staged.
func (d *Dataset) Upsert(ctx context.Context, rows []Row, opts UpsertOptions) (*UpsertReport, error) {
	if err := opts.fill(d.url); err != nil {
		return nil, err
	}
	if d.ReadOnly() {
		return nil, d.readOnlyErr("upsert")
	}
	d.wmu.Lock()
	staged := d.stage != nil && !d.stage.empty()
	d.wmu.Unlock()
	if staged {
		return nil, invalidf("upsert into %s: writes are staged; commit or discard them first", d.url)
	}
	snap := d.current()
	keyCols, err := upsertKeys(d.url, snap.man.Schema, opts.On)
	if err != nil {
		return nil, err
	}
	matched, err := d.matchKeys(ctx, snap, keyCols, rows)
	if err != nil {
		return nil, err
	}
	rep := &UpsertReport{}
	var inserts []Row
	for i, r := range rows {
		if len(matched[i]) == 0 {
			if opts.WhenNotMatched == UpsertInsert {
				inserts = append(inserts, r)
			}
			continue
		}
		if opts.WhenMatched != UpsertUpdate {
			continue
		}
		set := make(Row, len(r)) // the key columns hold the same values already
		for name, v := range r {
			if !slices.Contains(opts.On, name) {
				set[name] = v
			}
		}
		if len(set) == 0 {
			continue
		}
		for _, id := range matched[i] {
			if err := d.Update(ctx, id, set); err != nil {
				d.Discard()
				return nil, fmt.Errorf("upsert into %s: input row %d: %w", d.url, i, err)
			}
			rep.Updated++
		}
	}
	if len(inserts) > 0 {
		if err := d.Extend(ctx, inserts); err != nil {
			d.Discard()
			return nil, fmt.Errorf("upsert into %s: %w", d.url, err)
		}
		rep.Inserted = int64(len(inserts))
	}
	if rep.Version, err = d.Commit(ctx, opts.Message); err != nil {
		// An upsert is one operation: what it staged goes with its failure
		// (a conflict's rows are named in err; the caller upserts again).
		d.Discard()
		return nil, err
	}
	return rep, nil
}

// fill gives the options their defaults and checks them.
func (opts *UpsertOptions) fill(url string) error {
	if opts.WhenMatched == "" {
		opts.WhenMatched = UpsertUpdate
	}
	if opts.WhenNotMatched == "" {
		opts.WhenNotMatched = UpsertInsert
	}
	if opts.Message == "" {
		opts.Message = "upsert"
	}
	if opts.WhenMatched != UpsertUpdate && opts.WhenMatched != UpsertNothing {
		return invalidf("upsert into %s: when matched %q: want %q or %q", url, opts.WhenMatched, UpsertUpdate, UpsertNothing)
	}
	if opts.WhenNotMatched != UpsertInsert && opts.WhenNotMatched != UpsertNothing {
		return invalidf("upsert into %s: when not matched %q: want %q or %q", url, opts.WhenNotMatched, UpsertInsert, UpsertNothing)
	}
	return nil
}

// matchKeys returns, for each input row, the ids of the rows of snap with
// its key (none for a row whose key has a null); two input rows with one
// key are refused.
func (d *Dataset) matchKeys(ctx context.Context, snap *snapshot, keyCols []*schema.Column, rows []Row) ([][]uint64, error) {
	// The input's keys, in their stored form.
	byKey := map[string]int{}
	for i, r := range rows {
		key, null, err := inputKey(keyCols, r)
		if err != nil {
			return nil, fmt.Errorf("upsert into %s: input row %d: %w", d.url, i, err)
		}
		if null {
			continue
		}
		if j, dup := byKey[key]; dup {
			return nil, invalidf("upsert into %s: input rows %d and %d have the same key %s; give each key once", d.url, j, i, showKey(keyCols, rows[i]))
		}
		byKey[key] = i
	}
	matched := make([][]uint64, len(rows))
	if len(byKey) > 0 {
		if err := d.eachKey(ctx, snap, keyCols, func(id uint64, key string) {
			if i, ok := byKey[key]; ok {
				matched[i] = append(matched[i], id)
			}
		}); err != nil {
			return nil, fmt.Errorf("upsert into %s: %w", d.url, err)
		}
	}
	return matched, nil
}

// upsertKeys checks and returns the key columns named by on.
func upsertKeys(url string, sch schema.Schema, on []string) ([]*schema.Column, error) {
	if len(on) == 0 {
		return nil, invalidf("upsert into %s: no key column (On); name one or more of %v", url, sch.Names())
	}
	var out []*schema.Column
	for _, name := range on {
		c, ok := sch.Column(name)
		if !ok {
			return nil, invalidf("upsert into %s: no key column %q (have %v)", url, name, sch.Names())
		}
		if c.SampleCompression != "" && c.SampleCompression != schema.SampleNone {
			return nil, invalidf("upsert into %s: key column %q holds %s samples; a key is a scalar, text or tensor column", url, name, c.SampleCompression)
		}
		for _, o := range out {
			if o.Name == c.Name {
				return nil, invalidf("upsert into %s: key column %q named twice", url, name)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// appendKeyPart appends one key column's stored bytes, length first, so
// that composite keys never run together.
func appendKeyPart(key []byte, data []byte) []byte {
	key = binary.AppendUvarint(key, uint64(len(data)))
	return append(key, data...)
}

// inputKey is an input row's key in stored form; null is set when a key
// column is null (such a row matches nothing).
func inputKey(cols []*schema.Column, r Row) (key string, null bool, err error) {
	var b []byte
	for _, c := range cols {
		s, ok := r[c.Name]
		if !ok {
			return "", false, invalidf("no value for key column %q", c.Name)
		}
		p, err := prepare(c, s)
		if err != nil {
			return "", false, err
		}
		if p.null {
			return "", true, nil
		}
		b = appendKeyPart(b, p.data)
	}
	return string(b), false, nil
}

// showKey prints a row's key values for messages, each cut short: text
// quoted, numbers as numbers (a tensor's in brackets).
func showKey(cols []*schema.Column, r Row) string {
	var parts []string
	for _, c := range cols {
		data := r[c.Name].Data
		var v string
		switch size := c.DType.Size(); {
		case size == 0:
			v = fmt.Sprintf("%q", data)
		case len(data) == size && len(r[c.Name].Shape) == 0:
			v = c.DType.FormatElem(data, 0)
		default:
			elems := make([]string, min(len(data)/size, 16))
			for i := range elems {
				elems[i] = c.DType.FormatElem(data, i)
			}
			v = "[" + strings.Join(elems, " ") + "]"
		}
		if len(v) > 64 {
			v = v[:64] + "..."
		}
		parts = append(parts, c.Name+"="+v)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// eachKey calls fn with the id and stored key of every live row of s
// whose key columns are all non-null, a fragment at a time: the key
// columns' chunks are read whole, one at a time.
func (d *Dataset) eachKey(ctx context.Context, s *snapshot, cols []*schema.Column, fn func(id uint64, key string)) error {
	for _, f := range s.frags {
		if f.ref.Live() == 0 {
			continue
		}
		if err := f.load(ctx, d); err != nil {
			return err
		}
		keys := make([][]byte, f.ref.Rows)
		null := make([]bool, f.ref.Rows)
		for _, c := range cols {
			refs := f.cols[c.UID]
			if len(refs) == 0 { // null in every row of the fragment
				clear(keys)
				for i := range null {
					null[i] = true
				}
				break
			}
			for _, u := range unitsOf(refs) {
				err := d.readUnit(ctx, c, refs, u, func(off int64, p prepared) error {
					if p.null {
						null[off] = true
					} else if !null[off] {
						keys[off] = appendKeyPart(keys[off], p.data)
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("column %q: %w", c.Name, err)
				}
			}
		}
		for off := range keys {
			if !null[off] && !f.isDeleted(int64(off)) {
				fn(f.rowID(int64(off)), string(keys[off]))
			}
		}
	}
	return nil
}
