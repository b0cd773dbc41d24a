package catalog

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/seqlog"
)

// Verify checks the catalog at root (docs/format.md §6) and every table
// its newest entry names. It reads every entry of the catalog log: each
// must read and hold valid names, and none may be missing between the
// oldest one that gc left and the newest, nor above the newest up to the
// entry the hint names (the newest entries lost). It lists the table
// directories that no entry names: the tables of a lost entry, or what a
// failed creation or an old drop left (gc deletes those after the grace
// period), or a table being created. Then it verifies each table of the
// newest entry it read as a dataset (loch.Dataset.Verify; loch.VerifyLog
// for one whose log is too damaged to open), with the table's keys under
// tables/<dir>/. It returns the number of objects checked and the
// problems, sorted by key; err is reserved for failures that stop the
// check (a cancelled context), and is ErrNoCatalog when root holds no
// catalog log. It does not open the catalog, so it serves one whose log
// is damaged. The options are Open's.
func Verify(ctx context.Context, root string, opts ...Option) (checked int, problems []loch.Problem, err error) {
	c, err := newCatalog(ctx, root, buildOptions(opts))
	if err != nil {
		return 0, nil, err
	}
	defer c.Close()
	v := &catalogVerifier{c: c, named: map[string]bool{}}
	if err := v.verifyLog(ctx); err != nil {
		return v.checked, v.sorted(), err
	}
	if v.checked == 0 && len(v.problems) == 0 {
		return 0, nil, fmt.Errorf("verify catalog %s: %w", c.url, ErrNoCatalog)
	}
	if err := v.unnamedDirs(ctx); err != nil {
		return v.checked, v.sorted(), err
	}
	if v.newest != nil {
		for _, name := range sortedKeys(v.newest.Tables) {
			if err := v.verifyTable(ctx, v.newest.Tables[name].Dir); err != nil {
				return v.checked, v.sorted(), err
			}
		}
	}
	return v.checked, v.sorted(), ctx.Err()
}

// RepairLog accepts the loss of the newest entries of the catalog log at
// root, which Open reports with loch.ErrCorrupt when the hint names an
// entry above the highest one there, as loch.RepairLog does for a
// dataset's log: the catalog goes on from the highest entry, without the
// tables that only the lost entries named (Verify lists their directories;
// gc deletes them after the grace period). It returns the entry the hint
// named and the highest entry's number (equal when nothing was lost).
func RepairLog(ctx context.Context, root string, opts ...Option) (hint, high uint64, err error) {
	c, err := newCatalog(ctx, root, buildOptions(opts))
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	hint, high, err = c.log.Repair(ctx)
	if errors.Is(err, seqlog.ErrEmpty) {
		return 0, 0, fmt.Errorf("repair catalog %s: %w", c.url, ErrNoCatalog)
	} else if err != nil {
		return 0, 0, fmt.Errorf("repair catalog %s: %w", c.url, err)
	}
	return hint, high, nil
}

type catalogVerifier struct {
	c *Catalog

	mu       sync.Mutex
	checked  int
	problems []loch.Problem
	named    map[string]bool   // directories some entry names
	newest   *manifest.Catalog // the newest entry that reads
}

func (v *catalogVerifier) failed(key string, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.problems = append(v.problems, loch.Problem{Key: key, Err: err})
}

func (v *catalogVerifier) sorted() []loch.Problem {
	slices.SortStableFunc(v.problems, func(a, b loch.Problem) int { return cmp.Compare(a.Key, b.Key) })
	return v.problems
}

// verifyLog reads every entry of the catalog log.
func (v *catalogVerifier) verifyLog(ctx context.Context) error {
	err := v.c.log.Check(ctx, 0, func(seq uint64, e *manifest.Catalog, err error) {
		key := v.c.log.Key(seq)
		if err == nil {
			err = checkEntry(e)
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		if !errors.Is(err, loch.ErrNotFound) && !errors.Is(err, seqlog.ErrLost) {
			v.checked++
		}
		if err != nil {
			v.problems = append(v.problems, loch.Problem{Key: key, Err: err})
			return
		}
		for _, t := range e.Tables {
			v.named[t.Dir] = true
		}
		if v.newest == nil || e.Seq > v.newest.Seq {
			v.newest = e
		}
	})
	if err != nil && ctx.Err() == nil {
		v.failed(keys.CatalogLogPrefix, err)
		return nil
	}
	return err
}

// unnamedDirs reports the table directories no entry names: those listed
// under tables/ that neither the entries read nor those written since
// (a table created meanwhile) name.
func (v *catalogVerifier) unnamedDirs(ctx context.Context) error {
	dirs, err := v.c.listDirs(ctx, v.named)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.failed(keys.TablesPrefix, err)
		return nil
	}
	if len(dirs) > 0 && v.newest != nil {
		// A log that fails to read again has had its problems reported.
		_, _ = v.c.readSince(ctx, v.newest.Seq, func(e *manifest.Catalog) {
			for _, t := range e.Tables {
				delete(dirs, t.Dir)
			}
		})
	}
	for _, dir := range sortedKeys(dirs) {
		v.failed(keys.MakeTable(dir), fmt.Errorf("named by no catalog entry (%d objects): the table of a lost entry, or left by a failed creation or an old drop (gc deletes those after the grace period), or a table being created", len(dirs[dir])))
	}
	return nil
}

// verifyTable verifies the table in dir as a dataset.
func (v *catalogVerifier) verifyTable(ctx context.Context, dir string) error {
	st, err := v.c.tableStore(dir)
	if err != nil {
		return err
	}
	root := keys.MakeTable(dir)
	add := func(checked int, problems []loch.Problem) {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.checked += checked
		for _, p := range problems {
			v.problems = append(v.problems, loch.Problem{Key: root + p.Key, Err: p.Err})
		}
	}
	d, err := loch.Open(ctx, st.URL(), loch.WithStore(st), loch.WithCacheBytes(0))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		checked, problems, lerr := loch.VerifyLog(ctx, st.URL(), loch.WithStore(st))
		if lerr != nil {
			return lerr
		}
		if len(problems) == 0 {
			problems = []loch.Problem{{Key: "", Err: err}}
		}
		add(checked, problems)
		return nil
	}
	defer d.Close()
	checked, problems, err := d.Verify(ctx)
	add(checked, problems)
	return err
}
