package sqlcat

import (
	"context"
	"errors"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/query"
)

// keptCacheBytes bounds the chunk cache of each table a kept engine holds
// open (loch.WithCacheBytes), so that a session's memory between
// statements stays small whatever it read.
const keptCacheBytes = 16 << 20

// kept is the query engine a session keeps across statements
// (Session.KeepEngine) with the tables its statements named, each open at
// the version its view reads.
type kept struct {
	e      *query.Engine
	opts   query.Options
	tables map[string]*keptTable // by name without case
	// busy: a statement's engine is in use (Rows not yet closed); the
	// next statement starts an engine of its own meanwhile
	busy bool
}

// keptTable is one attached table of a kept engine.
type keptTable struct {
	name, dir string // as the catalog has them (a re-created table has another dir)
	want      string // the pin or branch the session asked for ("" for main)
	pinned    bool
	d         *loch.Dataset // nil: the view is a write's handle, stale after the statement
	version   string        // the version the view reads
}

// close releases the engine and the tables.
func (k *kept) close() {
	k.e.Close()
	for _, t := range k.tables {
		if t.d != nil {
			t.d.Close()
		}
	}
	k.tables = nil
}

// sameOptions reports whether an engine started with a answers as one
// started with b would, but for the seed of random(), which
// query.Engine.SetSeed changes in place.
func sameOptions(a, b query.Options) bool {
	return a.Threads == b.Threads && a.FileBase == b.FileBase && a.Sandbox == b.Sandbox &&
		a.MemoryLimit == b.MemoryLimit
}

// keptEngine is Session.engine on the kept engine: each table q names is
// attached at its current version, re-opened or refreshed only when a
// commit (of this session or another) moved it since the last statement;
// tables dropped from the catalog are detached. On an error the kept
// engine is closed: the next statement starts a new one.
func (s *Session) keptEngine(ctx context.Context, tables []catalog.Table, named map[string]bool, name string, target *loch.Dataset) (*query.Engine, func(), error) {
	opts := s.engineOptions()
	if s.kept != nil && !sameOptions(s.kept.opts, opts) {
		s.kept.close()
		s.kept = nil
	}
	if s.kept == nil {
		e, err := query.New(ctx, nil, opts)
		if err != nil {
			return nil, nil, err
		}
		s.kept = &kept{e: e, opts: opts, tables: map[string]*keptTable{}}
	}
	k := s.kept
	if err := k.e.SetSeed(ctx, opts.Seed); err != nil {
		k.close()
		s.kept = nil
		return nil, nil, err
	}
	k.opts.Seed = opts.Seed
	if err := s.attachKept(ctx, k, tables, named, name, target); err != nil {
		k.close()
		s.kept = nil
		return nil, nil, err
	}
	k.busy = true
	return k.e, func() { k.busy = false }, nil
}

// attachKept brings k's views of the catalog's tables up to date for a
// statement that names the tables in named (nil: every table); target,
// when not nil, is attached as table name for this statement only.
func (s *Session) attachKept(ctx context.Context, k *kept, tables []catalog.Table, named map[string]bool, name string, target *loch.Dataset) error {
	k.e.Forget()
	live := make(map[string]catalog.Table, len(tables))
	for _, t := range tables {
		live[strings.ToLower(t.Name)] = t
	}
	for n, kt := range k.tables {
		if t, ok := live[n]; !ok || t.Dir != kt.dir || t.Name != kt.name {
			if err := k.detach(ctx, n); err != nil {
				return err
			}
		}
	}
	for _, t := range tables {
		n := strings.ToLower(t.Name)
		if named != nil && !named[n] {
			continue
		}
		if target != nil && strings.EqualFold(t.Name, name) {
			if err := k.detach(ctx, n); err != nil {
				return err
			}
			if err := k.e.Attach(ctx, t.Name, target); err != nil {
				return err
			}
			k.tables[n] = &keptTable{name: t.Name, dir: t.Dir}
			continue
		}
		if err := s.keepCurrent(ctx, k, t); err != nil {
			return err
		}
	}
	return nil
}

// detach drops table n (lower-case) from k's engine and closes its handle.
func (k *kept) detach(ctx context.Context, n string) error {
	kt, ok := k.tables[n]
	if !ok {
		return nil
	}
	delete(k.tables, n)
	if kt.d != nil {
		defer kt.d.Close()
	}
	return k.e.Detach(ctx, kt.name)
}

// keepCurrent attaches table t to k at the version the session reads it
// at now: the handle it holds when that is still current (a branch head
// refreshed in place when another commit moved it), else a new one.
func (s *Session) keepCurrent(ctx context.Context, k *kept, t catalog.Table) error {
	n := strings.ToLower(t.Name)
	want, pinned := s.readWant(t.Name)
	if kt := k.tables[n]; kt != nil && kt.d != nil && kt.want == want && kt.pinned == pinned {
		moved, ok, err := kt.current(ctx)
		if err != nil {
			return err
		}
		if ok && !moved {
			return nil
		}
		if ok { // the same handle, refreshed to the branch's new head
			kt.version = kt.d.Version()
			return k.e.Attach(ctx, t.Name, kt.d)
		}
	}
	if err := k.detach(ctx, n); err != nil {
		return err
	}
	d, err := s.openRead(ctx, t.Name, loch.WithCacheBytes(keptCacheBytes))
	if err != nil {
		return err
	}
	if err := k.e.Attach(ctx, t.Name, d); err != nil {
		d.Close()
		return err
	}
	k.tables[n] = &keptTable{name: t.Name, dir: t.Dir, want: want, pinned: pinned, d: d, version: d.Version()}
	return nil
}

// readWant is what openRead opens table name at: its pin (pinned), else
// the session's branch ("" for main).
func (s *Session) readWant(name string) (string, bool) {
	for t, v := range s.Pins {
		if strings.EqualFold(t, name) {
			return v, true
		}
	}
	return s.readBranch(name), false
}

// current reports whether kt's handle still reads what the session asks
// for (ok), and whether it moved to a newer head of its branch to do so.
func (kt *keptTable) current(ctx context.Context) (moved, ok bool, err error) {
	if kt.pinned {
		return false, true, nil
	}
	want := kt.want
	if want == "" {
		want = "main"
	}
	switch b := kt.d.Branch(); {
	case b == "": // a tag or version id: current while the name resolves to it
		v, err := kt.d.Resolve(ctx, want)
		return false, err == nil && v == kt.version, nil
	case b != want: // the session's branch was missing: it may exist now
		return false, false, nil
	}
	if err := kt.d.Refresh(ctx); err != nil {
		if errors.Is(err, loch.ErrNotFound) {
			return false, false, nil // the branch is gone: open again, which says so
		}
		return false, false, err
	}
	return kt.d.Version() != kt.version, true, nil
}

// Close releases what the session keeps: its query engine and the tables
// it holds open (Session.KeepEngine), and the transaction's branches
// when a transaction is open (Rollback). A Session may be used after
// Close: it starts again.
func (s *Session) Close() error {
	if s.kept != nil {
		s.kept.close()
		s.kept = nil
	}
	return s.Rollback(context.Background())
}
