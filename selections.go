package loch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// selectionsPrefix is the namespace of saved selections in a root entry's
// refs map (docs/format.md §2.7): selections/<name> -> object hash.
const selectionsPrefix = "selections/"

// Selection is the result of a query over one version of a dataset: the
// rows it kept, by stable row id, in result order, with what made it. The
// query package makes them; the loader streams them (loader.Config.Rows
// and Query); a saved selection (SaveSelection) reproduces a run without
// running the query again.
type Selection struct {
	// Name is the name it was saved or loaded under; "" for a fresh one.
	Name string `json:"name,omitempty"`
	// Version is the version (commit id) the query ran on.
	Version string `json:"version"`
	// SQL is the query's text as given.
	SQL string `json:"sql"`
	// Seed is the seed of the query's random() when it was given one.
	Seed *uint64 `json:"seed,omitempty"`
	// Columns are the dataset columns the query's SELECT named, in order;
	// nil means every column.
	Columns []string `json:"columns,omitempty"`
	// RowIDs are the rows in result order, each once.
	RowIDs []uint64 `json:"-"`
	// Joined are the values of the result's columns that are not the
	// dataset's own columns taken whole (another table's, or
	// expressions), one per row of RowIDs; nil when there are none.
	Joined []JoinedColumn `json:"joined,omitempty"`
}

// Len is the number of rows.
func (s *Selection) Len() int { return len(s.RowIDs) }

// SelectionInfo describes a saved selection without its row ids.
type SelectionInfo struct {
	Name    string  `json:"name"`
	Key     string  `json:"key"`
	Version string  `json:"version"`
	SQL     string  `json:"sql"`
	Seed    *uint64 `json:"seed,omitempty"`
	Rows    int     `json:"rows"`
}

// SaveSelection stores s as an immutable object and names it name in the
// dataset's log, like a tag: garbage collection keeps it and the version
// it ran on. It fails with ErrExists when a selection of that name exists,
// with ErrNotFound when s's version does not exist, and with
// ErrInvalidArgument for a bad name, a row id given twice, or joined
// columns that are malformed, named twice or of another row count.
func (d *Dataset) SaveSelection(ctx context.Context, name string, s *Selection) error {
	if err := checkRefName("selection", name); err != nil {
		return fmt.Errorf("%s: %w", d.url, err)
	}
	if !keys.ValidID(s.Version) {
		return invalidf("save selection %q in %s: version %q is not a version id", name, d.url, s.Version)
	}
	seen := make(map[uint64]struct{}, len(s.RowIDs))
	for _, id := range s.RowIDs {
		if _, dup := seen[id]; dup {
			return invalidf("save selection %q in %s: row id %d appears twice", name, d.url, id)
		}
		seen[id] = struct{}{}
	}
	if err := checkJoined(s.Joined, len(s.RowIDs), nil); err != nil {
		return fmt.Errorf("save selection %q in %s: %w", name, d.url, err)
	}
	if err := d.checkVersion(ctx, s.Version); err != nil {
		return fmt.Errorf("save selection %q: %w", name, err)
	}
	obj := manifest.Selection{Version: s.Version, SQL: s.SQL, Seed: s.Seed, Columns: s.Columns,
		Rows: len(s.RowIDs), RowIDs: manifest.EncodeRowIDs(s.RowIDs)}
	if len(s.Joined) > 0 {
		var err error
		if obj.Joined, err = json.Marshal(s.Joined); err != nil {
			return fmt.Errorf("save selection %q: %w", name, err)
		}
	}
	key, err := d.putObject(ctx, keys.Selection, manifest.KindSelection, obj)
	if err != nil {
		return fmt.Errorf("save selection %q: %w", name, err)
	}
	_, err = d.updateRoot(ctx, "save selection "+name, func(root, next *manifest.Root) error {
		if _, ok := root.Refs[selectionsPrefix+name]; ok {
			return fmt.Errorf("save selection %q in %s: a selection of that name exists (delete it first): %w", name, d.url, ErrExists)
		}
		next.Refs[selectionsPrefix+name] = strings.TrimPrefix(key, keys.Selection.Prefix())
		return nil
	})
	if err == nil {
		s.Name = name
	}
	return err
}

// checkVersion checks that commit id exists.
func (d *Dataset) checkVersion(ctx context.Context, id string) error {
	if _, err := d.store.Stat(ctx, keys.Make(keys.Commit, id)); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("%s: no version %s: %w", d.url, id, ErrNotFound)
		}
		return fmt.Errorf("%s: version %s: %w", d.url, id, err)
	}
	return nil
}

// Selection reads the saved selection name. It fails with ErrNotFound,
// naming the saved selections, when there is none of that name, and when
// the version it ran on no longer exists.
func (d *Dataset) Selection(ctx context.Context, name string) (*Selection, error) {
	root, err := d.latestRoot(ctx)
	if err != nil {
		return nil, err
	}
	hash, ok := root.Refs[selectionsPrefix+name]
	if !ok {
		return nil, fmt.Errorf("%s: no saved selection %q (have %v): %w", d.url, name, refNames(root, selectionsPrefix), ErrNotFound)
	}
	obj, err := d.readSelection(ctx, hash)
	if err != nil {
		return nil, fmt.Errorf("selection %q: %w", name, err)
	}
	ids, joined, err := decodeSelection(obj)
	if err != nil {
		return nil, fmt.Errorf("selection %q: read %s: %w", name, keys.Make(keys.Selection, hash), err)
	}
	if err := d.checkVersion(ctx, obj.Version); err != nil {
		return nil, fmt.Errorf("selection %q ran on version %s, which is gone: %w", name, obj.Version, err)
	}
	return &Selection{Name: name, Version: obj.Version, SQL: obj.SQL, Seed: obj.Seed, Columns: obj.Columns, RowIDs: ids, Joined: joined}, nil
}

// decodeSelection decodes a selection object's row ids and joined
// columns (docs/format.md §2.7); a malformed one is ErrCorrupt.
func decodeSelection(obj manifest.Selection) ([]uint64, []JoinedColumn, error) {
	ids, err := manifest.DecodeRowIDs(obj.RowIDs, obj.Rows)
	if err != nil {
		return nil, nil, err
	}
	if len(obj.Joined) == 0 {
		return ids, nil, nil
	}
	var joined []JoinedColumn
	if err := json.Unmarshal(obj.Joined, &joined); err != nil {
		return nil, nil, base.Markf(base.ErrCorrupt, "corrupt metadata: joined columns: %v", err)
	}
	if err := checkJoined(joined, len(ids), nil); err != nil {
		return nil, nil, base.Markf(base.ErrCorrupt, "corrupt metadata: %v", err)
	}
	return ids, joined, nil
}

func (d *Dataset) readSelection(ctx context.Context, hash string) (manifest.Selection, error) {
	var obj manifest.Selection
	if !keys.ValidID(hash) {
		return obj, fmt.Errorf("%s: reference names %q, not a selection hash: %w", d.url, hash, ErrCorrupt)
	}
	err := d.getObject(ctx, keys.Make(keys.Selection, hash), manifest.KindSelection, &obj)
	return obj, err
}

// Selections lists the saved selections, sorted by name, as of the newest
// log entry.
func (d *Dataset) Selections(ctx context.Context) ([]SelectionInfo, error) {
	root, err := d.latestRoot(ctx)
	if err != nil {
		return nil, err
	}
	out := []SelectionInfo{}
	for _, n := range refNames(root, selectionsPrefix) {
		hash := root.Refs[selectionsPrefix+n]
		obj, err := d.readSelection(ctx, hash)
		if err != nil {
			return nil, fmt.Errorf("selection %q: %w", n, err)
		}
		out = append(out, SelectionInfo{Name: n, Key: keys.Make(keys.Selection, hash), Version: obj.Version, SQL: obj.SQL, Seed: obj.Seed, Rows: obj.Rows})
	}
	return out, nil
}

// DeleteSelection removes the name of a saved selection; its object stays
// until garbage collection.
func (d *Dataset) DeleteSelection(ctx context.Context, name string) error {
	return d.deleteRef(ctx, "selection", selectionsPrefix, name)
}
