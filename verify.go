package loch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/seqlog"
)

// Problem is one broken object found by Verify.
type Problem struct {
	Key string
	Err error
}

func (p Problem) String() string { return p.Key + ": " + p.Err.Error() }

// Verify reads every object reachable from the handle's snapshot (for a
// branch handle: from every branch and tag of the newest log entry) and
// checks its checksums and that manifests, fragments and chunks agree. It
// first reads every entry of the log, as VerifyLog does. It returns the
// number of objects checked and the problems found, sorted by key; err is
// reserved for failures that stop the check (a cancelled context).
// Objects are read several at a time. A Progress in ctx (see
// WithProgress) gets phase "verify" with the objects checked so far (the
// total is not known before the walk ends: -1).
func (d *Dataset) Verify(ctx context.Context) (checked int, problems []Problem, err error) {
	v := newVerifier(ctx, d)
	if err := v.verifyLog(ctx); err != nil {
		return v.checked, v.sorted(), err
	}
	var roots []walkRoot
	if d.ReadOnly() {
		roots = []walkRoot{{id: d.Version(), ref: d.Version()}}
	} else {
		root, err := d.latestRoot(ctx)
		if err != nil {
			if len(v.problems) == 0 { // else the log's problems say why
				v.failed(keys.LogPrefix, err)
			}
			return v.checked, v.sorted(), nil
		}
		roots = refCommits(nil, root)
	}
	if err := walkFrom(ctx, d, v, roots); err != nil {
		return v.checked, v.sorted(), err
	}
	if err := v.verifyIndexes(ctx); err != nil {
		return v.checked, v.sorted(), err
	}
	return v.checked, v.sorted(), ctx.Err()
}

// VerifyLog reads every entry of the log of the dataset at url and checks
// that none is missing: none between 1 and the highest entry, none above
// it up to the entry log/_latest names (docs/format.md §2.2). It reports
// as Verify does, without opening the dataset, so it serves one whose log
// is too damaged to open (Open fails with ErrCorrupt). The options are
// Open's (WithStore, settings); references are not used.
func VerifyLog(ctx context.Context, url string, opts ...Option) (checked int, problems []Problem, err error) {
	d, err := newDataset(ctx, url, buildOptions(opts))
	if err != nil {
		return 0, nil, err
	}
	defer d.Close()
	v := newVerifier(ctx, d)
	err = v.verifyLog(ctx)
	return v.checked, v.sorted(), err
}

// RepairLog accepts the loss of the newest entries of the log of the
// dataset at url, which Open reports with ErrCorrupt when log/_latest
// names an entry above the highest one there: it points log/_latest at
// the highest entry, so that the dataset opens at it and the next change
// takes the first lost number. The changes of the lost entries are gone
// (gc collects what only they named). It returns the entry log/_latest
// named and the highest entry's number (equal when nothing was lost; then
// nothing is written). The options are Open's.
func RepairLog(ctx context.Context, url string, opts ...Option) (hint, high uint64, err error) {
	d, err := newDataset(ctx, url, buildOptions(opts))
	if err != nil {
		return 0, 0, err
	}
	defer d.Close()
	hint, high, err = d.log.Repair(ctx)
	if errors.Is(err, seqlog.ErrEmpty) {
		return 0, 0, d.logErr(err)
	} else if err != nil {
		return 0, 0, fmt.Errorf("repair the log of %s: %w", d.url, err)
	}
	return hint, high, nil
}

// verifier checks as a walkVisitor: it reads every object, records each
// failure as a Problem and goes on.
type verifier struct {
	d *Dataset

	mu       sync.Mutex
	seen     map[string]bool // objects, and fragment references by refKey
	checked  int
	problems []Problem
	progress Progress // called under mu
}

var _ walkVisitor = (*verifier)(nil)

func newVerifier(ctx context.Context, d *Dataset) *verifier {
	return &verifier{d: d, seen: map[string]bool{}, progress: progressOf(ctx)}
}

// verifyLog checks every entry of the log (none is missing, each reads),
// counting each entry read as an object checked. A failed listing is a
// problem of the log; only a cancelled context stops the check.
func (v *verifier) verifyLog(ctx context.Context) error {
	err := v.d.log.Check(ctx, 1, func(seq uint64, _ *manifest.Root, err error) {
		key := v.d.log.Key(seq)
		if !errors.Is(err, ErrNotFound) && !errors.Is(err, seqlog.ErrLost) {
			v.reach(key)
		}
		if err != nil {
			v.failed(key, err)
		}
	})
	if err != nil && ctx.Err() == nil {
		v.failed(keys.LogPrefix, err)
		return nil
	}
	return err
}

// reach marks the object key as seen and checked and reports whether it is
// new.
func (v *verifier) reach(key string) bool { return v.first(key, 1) }

// first marks key as seen, counting it as checked objects, and reports
// whether it is new.
func (v *verifier) first(key string, objects int) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.seen[key] {
		return false
	}
	v.seen[key] = true
	v.checked += objects
	if objects > 0 {
		v.progress("verify", int64(v.checked), -1)
	}
	return true
}

// failed records a problem; the walk goes on.
func (v *verifier) failed(key string, err error) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.problems = append(v.problems, Problem{Key: key, Err: err})
	return nil
}

func (v *verifier) sorted() []Problem {
	slices.SortStableFunc(v.problems, func(a, b Problem) int { return cmp.Compare(a.Key, b.Key) })
	return v.problems
}

// read reads and decodes a metadata object and checks that its name is its
// hash.
func (v *verifier) read(ctx context.Context, key, _ string, kind byte, out any) error {
	obj, err := v.d.store.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := manifest.Decode(kind, obj, out); err != nil {
		return err
	}
	return manifest.CheckName(key, obj)
}

// keep goes on from every commit: Verify checks what exists.
func (v *verifier) keep(string, *manifest.Commit) bool { return true }

// manifest checks that the fragments hold the rows the manifest counts.
func (v *verifier) manifest(key string, m *manifest.Manifest) error {
	var live int64
	for _, f := range m.Fragments {
		live += f.Live()
	}
	if live != m.Rows {
		return fmt.Errorf("fragments hold %d live rows, manifest says %d: %w", live, m.Rows, ErrCorrupt)
	}
	return nil
}

// fragment checks a fragment reference's objects (fragment, extensions,
// deletions) and that they agree with it, once per distinct reference, and
// returns its chunks. A failure is blamed on the object that failed, or on
// the fragment when the objects disagree with each other.
func (v *verifier) fragment(ctx context.Context, ref manifest.FragmentRef, _ string) ([]manifest.ChunkRef, error) {
	if !v.first(refKey(ref), 0) { // a reference is not an object
		return nil, nil
	}
	fs := &fragState{ref: ref}
	var failed string
	err := fs.loadWith(ctx, func(ctx context.Context, key string, kind byte, out any) error {
		v.reach(key)
		err := v.read(ctx, key, "", kind, out)
		if err != nil {
			failed = key
		}
		return err
	})
	if err != nil {
		if failed == "" {
			failed = ref.Key
		}
		return nil, v.failed(failed, err)
	}
	var chunks []manifest.ChunkRef
	for _, refs := range fs.cols {
		chunks = append(chunks, refs...)
	}
	return chunks, nil
}

// refKey names a fragment reference by everything in it.
func refKey(ref manifest.FragmentRef) string {
	id := "-"
	if ref.IDStart != nil {
		id = strconv.FormatUint(*ref.IDStart, 10)
	}
	return fmt.Sprintf("ref %s %d %s %s %s %d", ref.Key, ref.Rows, id, strings.Join(ref.Extensions, ","), ref.Deletions, ref.Deleted)
}

// chunk reads a chunk and checks its name, checksums and agreement with its
// reference.
func (v *verifier) chunk(ctx context.Context, ref manifest.ChunkRef) error {
	obj, err := v.d.store.Get(ctx, ref.Key)
	if err != nil {
		return err
	}
	if err := manifest.CheckName(ref.Key, obj); err != nil {
		return err
	}
	_, err = decodeChunk(obj, ref, false)
	return err
}
