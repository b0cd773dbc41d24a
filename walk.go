package loch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
)

// walkVisitor is what a walk does with the objects it reaches; GC marks
// them, Verify checks them. Its methods are called concurrently.
type walkVisitor interface {
	// reach reports whether key is reached for the first time: a walk
	// reads an object and goes on from it only then.
	reach(key string) bool
	// read reads and decodes metadata object key, of kind, into out; via
	// names the object that named key.
	read(ctx context.Context, key, via string, kind byte, out any) error
	// fragment reads what it needs of the objects of a fragment reference
	// (fragment, extensions, deletion vector) and returns the chunk
	// references to go on to.
	fragment(ctx context.Context, ref manifest.FragmentRef, via string) ([]manifest.ChunkRef, error)
	// manifest is told of each manifest read, after its fragments have
	// been handed to the walk.
	manifest(key string, m *manifest.Manifest) error
	// chunk is called once per chunk reached.
	chunk(ctx context.Context, ref manifest.ChunkRef) error
	// keep is told of each commit read and reports whether the walk goes
	// on to its parents and manifest (version retention, docs/format.md
	// §5.2, expires some).
	keep(key string, c *manifest.Commit) bool
	// failed is told that the object under key failed; it returns the
	// error that ends the walk, or nil to go on without what lies below
	// that object.
	failed(key string, err error) error
}

// walk visits, each once, the objects reachable from some commits
// (docs/format.md, section 2): a commit, its parents and its manifest; a
// manifest's fragment references; each reference's fragment, extension and
// deletion objects (as the visitor reads them) and the chunks they name.
// Tasks run in an errgroup, at most gcParallelism at once; a fragment's
// chunks are visited in its task, so that a walk starts no goroutine per
// chunk.
type walk struct {
	d   *Dataset
	v   walkVisitor
	eg  *errgroup.Group
	ctx context.Context
	sem chan struct{}
}

// walkRoot is a commit a walk starts from.
type walkRoot struct {
	id   string
	ref  string // what names it, for messages: "heads/main in log/<seq>"
	name string // the reference's name in the log: "heads/main"; "" for none
	// selection: id is a saved selection's hash (docs/format.md §2.7),
	// which the walk reads and goes on from to its version.
	selection bool
}

// walkFrom walks d's objects from roots with v and returns the error that
// ended the walk, if any. A parent commit collected by version retention
// (docs/format.md §5.2) is passed over.
func walkFrom(ctx context.Context, d *Dataset, v walkVisitor, roots []walkRoot) error {
	eg, ectx := errgroup.WithContext(ctx)
	w := &walk{d: d, v: v, eg: eg, ctx: ectx, sem: make(chan struct{}, gcParallelism)}
	for _, r := range roots {
		if r.selection {
			w.selection(r.id, r.ref)
			continue
		}
		w.commit(r.id, r.ref)
	}
	return eg.Wait()
}

// task runs fn in the walk's group, holding one of its slots; an error of
// fn goes to the visitor's failed for key.
func (w *walk) task(key string, fn func() error) {
	w.eg.Go(func() error {
		select {
		case w.sem <- struct{}{}:
		case <-w.ctx.Done():
			return w.ctx.Err()
		}
		err := fn()
		<-w.sem
		var stop walkStopped
		switch {
		case err == nil:
			return nil
		case errors.As(err, &stop):
			return stop.err
		}
		return w.v.failed(key, err)
	})
}

// walkStopped carries an error that the visitor's failed already returned,
// so that it ends the walk as it is.
type walkStopped struct{ err error }

func (s walkStopped) Error() string { return s.err.Error() }

func (w *walk) commit(id, via string) {
	key := keys.Make(keys.Commit, id)
	if !w.v.reach(key) {
		return
	}
	w.task(key, func() error {
		if !keys.ValidID(id) {
			return fmt.Errorf("%s names %q, which is not a version id: %w", via, id, ErrCorrupt)
		}
		var c manifest.Commit
		if err := w.v.read(w.ctx, key, via, manifest.KindCommit, &c); err != nil {
			if strings.HasPrefix(via, keys.Commit.Prefix()) && errors.Is(err, ErrNotFound) && w.d.collected(w.ctx, id) {
				return nil // a parent whose history was collected
			}
			return err
		}
		if !w.v.keep(key, &c) {
			return nil
		}
		for _, p := range c.Parents {
			w.commit(p, key)
		}
		w.manifest(c.Manifest, key)
		return nil
	})
}

// selection reads a saved selection, checks its row ids and goes on to
// the version it ran on.
func (w *walk) selection(hash, via string) {
	if !keys.ValidID(hash) {
		w.task(via, func() error {
			return fmt.Errorf("%s names %q, which is not a selection hash: %w", via, hash, ErrCorrupt)
		})
		return
	}
	key := keys.Make(keys.Selection, hash)
	if !w.v.reach(key) {
		return
	}
	w.task(key, func() error {
		var s manifest.Selection
		if err := w.v.read(w.ctx, key, via, manifest.KindSelection, &s); err != nil {
			return err
		}
		if _, _, err := decodeSelection(s); err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
		w.commit(s.Version, key)
		return nil
	})
}

func (w *walk) manifest(key, via string) {
	if !w.v.reach(key) {
		return
	}
	w.task(key, func() error {
		var m manifest.Manifest
		if err := w.v.read(w.ctx, key, via, manifest.KindManifest, &m); err != nil {
			return err
		}
		for _, f := range m.Fragments {
			w.fragment(f, key)
		}
		return w.v.manifest(key, &m)
	})
}

func (w *walk) fragment(ref manifest.FragmentRef, via string) {
	w.task(ref.Key, func() error {
		chunks, err := w.v.fragment(w.ctx, ref, via)
		if err != nil {
			return err
		}
		for _, c := range chunks {
			if c.Key == "" || !w.v.reach(c.Key) {
				continue
			}
			if err := w.v.chunk(w.ctx, c); err != nil {
				if err := w.v.failed(c.Key, err); err != nil {
					return walkStopped{err}
				}
			}
		}
		return nil
	})
}
