package chaos

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
)

// objectKind is one kind of object the damage family mutates: where to
// pick the object from, and its siblings for a swap.
type objectKind struct {
	name string
	// keys are the objects of the kind one is picked from, and siblings
	// those of the same kind it may be swapped with (keys relative to
	// the catalog's root).
	keys, siblings []string
	// harmless are the mutations that damage nothing reachable, which
	// verify need not report (readers must still survive them or refuse
	// clearly): any of a hint (log/_latest), whose entry readers check;
	// deleting what is found by listing, not named by another (a vector
	// index descriptor: the search is then exact); deleting or swapping
	// the dataset marker, which is informative (docs/format.md §2.1: a
	// dataset whose creator died before writing it is a dataset, and its
	// id is recorded nowhere else).
	harmless []string
}

// lake is the damage family's catalog: tables t and u, t with every kind
// of object a dataset has.
type lake struct {
	root     string // the catalog's root directory
	table    string // t's URL
	tableKey string // t's prefix under root, "tables/<dir>/"
	name     string // t's name in the viewer of the dataset: its directory
	version  string // t's head
	query    string // the query vector of t's embedding column, a .npy file
	u        string // u's prefix under root
	rows     int    // t's rows
}

// makeLake builds the damage family's catalog in dir/lake.
func (c *campaign) makeLake(dir string) *lake {
	imgs := filepath.Join(dir, "imgs")
	c.check(writeImages(imgs, 0, 20, 16))
	l := &lake{root: filepath.Join(dir, "lake"), query: filepath.Join(dir, "q", "emb.npy")}
	sql := func(stmt string) { c.must(nil, "sql", l.root, stmt) }
	sql("CREATE TABLE t (id BIGINT, label CLASS_LABEL('cat', 'dog', 'bird'), caption TEXT, image IMAGE, emb EMBEDDING(8)) WITH (chunk_bytes = '2KiB')")
	for b := range 3 {
		id := fmt.Sprintf("(n + %d)", 60*b)
		sql(fmt.Sprintf("INSERT INTO t SELECT %[1]s, %[1]s %% 3, 'row ' || %[1]s, loch_file(file), list_transform(range(8), k -> sin(%[1]s * 0.37 + k * 1.3)::FLOAT) FROM (SELECT row_number() OVER (ORDER BY file) - 1 AS n, file FROM glob('%[2]s/*/*.png'))", id, imgs))
	}
	sql("DELETE FROM t WHERE id % 10 = 3")
	sql("UPDATE t SET caption = 'updated ' || id WHERE id % 7 = 0")
	sql("ALTER TABLE t ADD COLUMN score DOUBLE")
	sql("UPDATE t SET score = id * 1.5 WHERE id < 50")
	sql("CREATE TABLE u (id BIGINT, weight DOUBLE)")
	sql("INSERT INTO u SELECT i, i * 0.5 FROM range(0, 200, 2) r(i)")
	c.must(nil, "query", l.root, "SELECT _rowid, id FROM t WHERE label = 'cat'", "--table", "t", "--save", "cats")
	c.must(nil, "query", l.root, "SELECT _rowid, id FROM t WHERE label = 'dog' ORDER BY random()", "--table", "t", "--save", "dogs")
	l.table = c.tableURL(l.root, "t")
	c.must(nil, "index", "create", l.table, "--column", "emb", "--nlist", "4")
	c.must(nil, "index", "create", l.table, "--column", "emb", "--nlist", "4", "--metric", "l2")
	c.must(nil, "show", l.table, "--row", "0", "--column", "emb", "--out", filepath.Dir(l.query))
	l.name = filepath.Base(l.table)
	l.tableKey = keys.MakeTable(l.name)
	u := c.tableURL(l.root, "u")
	l.u = keys.MakeTable(filepath.Base(u))
	var err error
	if l.version, l.rows, err = c.head(nil, l.table); err != nil {
		c.fatalf("%v", err)
	}
	gc := c.must(nil, "gc", l.table, "--grace", "0s", "--dry-run", "--json")
	var report struct{ Deleted struct{ Objects int } }
	c.check(json.Unmarshal([]byte(gc.stdout), &report))
	if report.Deleted.Objects != 0 {
		c.fatalf("the damage template holds unreachable objects, whose damage is no damage:\n%s", gc.stdout)
	}
	return l
}

// lakeKeys are the keys of a lake's objects, sorted.
type lakeKeys []string

// lakeKeys lists the keys of the lake's objects, from its files.
func (c *campaign) lakeKeys(l *lake) lakeKeys {
	var all []string
	c.check(filepath.WalkDir(l.root, func(path string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(l.root, path)
			all = append(all, filepath.ToSlash(rel))
		}
		return err
	}))
	slices.Sort(all)
	return all
}

// of returns the keys of table prefix (t's or u's) whose kind is k.
func (all lakeKeys) of(prefix string, k keys.Kind) []string {
	var out []string
	for _, key := range all {
		if rel, ok := strings.CutPrefix(key, prefix); ok {
			if kind, _, ok := keys.Parse(rel); ok && kind == k {
				out = append(out, key)
			}
		}
	}
	return out
}

// newest parts a log's keys into its newest entry and the older ones.
func newest(log []string) ([]string, []string) { return log[len(log)-1:], log[:len(log)-1] }

// catalogKinds are the kinds of the catalog's log entries.
func (all lakeKeys) catalogKinds() []objectKind {
	var catalog []string
	for _, key := range all {
		if _, ok := keys.ParseLogIn(keys.CatalogLogPrefix, key); ok {
			catalog = append(catalog, key)
		}
	}
	catNewest, catOlder := newest(catalog)
	if len(catOlder) > 1 {
		// The oldest catalog entry may be deleted by gc: deleting it is
		// no damage.
		catOlder = catOlder[1:]
	}
	return []objectKind{
		{name: "catalog log (newest)", keys: catNewest, siblings: catalog},
		{name: "catalog log (older)", keys: catOlder, siblings: catalog},
		{name: "_catalog/log/_latest", keys: []string{keys.LatestIn(keys.CatalogLogPrefix)}, harmless: allMutations},
	}
}

// kinds lists the kinds of object of the lake, from its files.
func (c *campaign) kinds(l *lake) []objectKind {
	all := c.lakeKeys(l)
	of := all.of
	both := func(k keys.Kind) []string { return append(of(l.tableKey, k), of(l.u, k)...) }

	head, err := headObjects(l)
	c.check(err)
	headCommit := l.tableKey + keys.Make(keys.Commit, l.version)
	without := func(keys []string, key string) []string {
		return slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == key })
	}
	// split parts a kind's keys into those the head reads and the others.
	split := func(k keys.Kind) (inHead, older []string) {
		for _, key := range of(l.tableKey, k) {
			if head[key] {
				inHead = append(inHead, key)
			} else {
				older = append(older, key)
			}
		}
		return inHead, older
	}
	headManifest, _ := split(keys.Manifest)

	logs := of(l.tableKey, keys.Log)
	logNewest, logOlder := newest(logs)
	kinds := []objectKind{
		{name: "_loch/dataset", keys: of(l.tableKey, keys.Marker), siblings: both(keys.Marker), harmless: []string{"delete", "swap with a sibling"}},
		{name: "log (newest)", keys: logNewest, siblings: both(keys.Log)},
		{name: "log (older)", keys: logOlder, siblings: both(keys.Log)},
		{name: "log/_latest", keys: of(l.tableKey, keys.Latest), siblings: both(keys.Latest), harmless: allMutations},
		{name: "commit (head)", keys: []string{headCommit}, siblings: both(keys.Commit)},
		{name: "commit (older)", keys: without(of(l.tableKey, keys.Commit), headCommit), siblings: both(keys.Commit)},
		{name: "manifest (head)", keys: headManifest, siblings: both(keys.Manifest)},
		{name: "manifest (older)", keys: without(of(l.tableKey, keys.Manifest), headManifest[0]), siblings: both(keys.Manifest)},
	}
	for _, k := range []keys.Kind{keys.Fragment, keys.Extension, keys.Deletion, keys.Chunk} {
		inHead, older := split(k)
		kinds = append(kinds, objectKind{name: k.String() + " (head)", keys: inHead, siblings: both(k)})
		if len(older) > 0 {
			kinds = append(kinds, objectKind{name: k.String() + " (older)", keys: older, siblings: both(k)})
		}
	}
	for _, k := range []keys.Kind{keys.Selection, keys.Index, keys.Vectors} {
		kind := objectKind{name: k.String(), keys: of(l.tableKey, k), siblings: both(k)}
		if k == keys.Index {
			kind.harmless = []string{"delete"}
		}
		kinds = append(kinds, kind)
	}
	kinds = append(kinds, all.catalogKinds()...)
	for _, k := range kinds {
		if len(k.keys) == 0 {
			c.fatalf("the damage template has no object of kind %s", k.name)
		}
	}
	return kinds
}

// headObjects returns the keys (under the lake's root) of the objects t's
// head reads: its commit, manifest, fragments, extensions, deletions and
// chunks.
func headObjects(l *lake) (map[string]bool, error) {
	head := map[string]bool{}
	read := func(kind byte, key string, out any) error {
		head[l.tableKey+key] = true
		obj, err := os.ReadFile(filepath.Join(l.root, l.tableKey, key))
		if err != nil {
			return err
		}
		return manifest.Decode(kind, obj, out)
	}
	var commit manifest.Commit
	if err := read(manifest.KindCommit, keys.Make(keys.Commit, l.version), &commit); err != nil {
		return nil, err
	}
	var man manifest.Manifest
	if err := read(manifest.KindManifest, commit.Manifest, &man); err != nil {
		return nil, err
	}
	for _, ref := range man.Fragments {
		var frags []manifest.Fragment
		for i, key := range append([]string{ref.Key}, ref.Extensions...) {
			kind := manifest.KindFragment
			if i > 0 {
				kind = manifest.KindExtension
			}
			var f manifest.Fragment
			if err := read(kind, key, &f); err != nil {
				return nil, err
			}
			frags = append(frags, f)
		}
		if ref.Deletions != "" {
			head[l.tableKey+ref.Deletions] = true
		}
		for _, f := range frags {
			for _, chunks := range f.Columns {
				for _, ch := range chunks {
					head[l.tableKey+ch.Key] = true
				}
			}
		}
	}
	return head, nil
}

// damage is what a mutation did.
type damage struct {
	what    string   // e.g. "flip byte 17 of 301 (^0x5a) of tables/t-.../chunks/3d/3d..."
	changed []string // the keys whose content changed, relative to the root
	// harmless: no reachable object was damaged (a hint, or an object
	// found by listing deleted): verify may say ok.
	harmless bool
}

// mutation damages one object of a kind; ok is false when it does not
// apply (an empty object, no sibling to swap with).
type mutation struct {
	name  string
	apply func(r *rand.Rand, root, key string, siblings []string) (d damage, ok bool, err error)
}

var mutations = []mutation{
	{"flip a byte", flipByte},
	{"truncate", truncate},
	{"delete", deleteObject},
	{"swap with a sibling", swapSibling},
}

// allMutations names every mutation: the harmless ones of a hint.
var allMutations = func() []string {
	var names []string
	for _, m := range mutations {
		names = append(names, m.name)
	}
	return names
}()

func flipByte(r *rand.Rand, root, key string, _ []string) (damage, bool, error) {
	path := filepath.Join(root, key)
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return damage{}, false, err
	}
	off, x := r.IntN(len(b)), byte(1+r.IntN(255))
	b[off] ^= x
	d := damage{what: fmt.Sprintf("flip byte %d of %d (^0x%02x) of %s", off, len(b), x, key), changed: []string{key}}
	return d, true, os.WriteFile(path, b, 0o644)
}

func truncate(r *rand.Rand, root, key string, _ []string) (damage, bool, error) {
	path := filepath.Join(root, key)
	fi, err := os.Stat(path)
	if err != nil || fi.Size() == 0 {
		return damage{}, false, err
	}
	n := r.Int64N(fi.Size())
	d := damage{what: fmt.Sprintf("truncate %s from %d to %d bytes", key, fi.Size(), n), changed: []string{key}}
	return d, true, os.Truncate(path, n)
}

func deleteObject(_ *rand.Rand, root, key string, _ []string) (damage, bool, error) {
	return damage{what: "delete " + key, changed: []string{key}}, true, os.Remove(filepath.Join(root, key))
}

// swapSibling exchanges the object with a sibling of its kind, one of the
// same size when there is one.
func swapSibling(r *rand.Rand, root, key string, siblings []string) (damage, bool, error) {
	size := func(key string) int64 {
		fi, err := os.Stat(filepath.Join(root, key))
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	var same, any []string
	for _, s := range siblings {
		if s == key {
			continue
		}
		any = append(any, s)
		if size(s) == size(key) {
			same = append(same, s)
		}
	}
	pool := same
	if len(pool) == 0 {
		pool = any
	}
	if len(pool) == 0 {
		return damage{}, false, nil
	}
	other := pool[r.IntN(len(pool))]
	a, err := os.ReadFile(filepath.Join(root, key))
	if err != nil {
		return damage{}, false, err
	}
	b, err := os.ReadFile(filepath.Join(root, other))
	if err != nil {
		return damage{}, false, err
	}
	if err := os.WriteFile(filepath.Join(root, key), b, 0o644); err != nil {
		return damage{}, false, err
	}
	d := damage{what: fmt.Sprintf("swap %s (%d bytes) with %s (%d bytes)", key, len(a), other, len(b)),
		changed: []string{key, other}}
	return d, true, os.WriteFile(filepath.Join(root, other), a, 0o644)
}

// damages mutates every kind of object of a catalog and its table, each
// way, and reads the result through every reader.
func (c *campaign) damages(r *rand.Rand) {
	dir := filepath.Join(c.dir, "damage")
	work := filepath.Join(dir, "work")
	c.check(os.MkdirAll(work, 0o755))
	l := c.makeLake(work)
	template := filepath.Join(dir, "template")
	c.check(copyDir(work, template))
	rows := []int{0, l.rows / 3, l.rows - 1} // the rows show and the viewer read
	readers := c.readers(l)
	// truthOf names the truth of a reader of a row; a reader of no row
	// has one.
	truthOf := func(rd reader, row int) string {
		if !rd.perRow {
			row = rows[0]
		}
		return fmt.Sprintf("%s@%d", rd.name, row)
	}
	c.logf("damage: reading the undamaged catalog (the truth), twice")
	truth := map[string]reading{}
	for _, rd := range readers {
		for _, row := range rows {
			if _, done := truth[truthOf(rd, row)]; done {
				continue
			}
			a, b := rd.read(row), rd.read(row)
			if a.failed || len(a.parts) == 0 || !maps.Equal(a.parts, b.parts) {
				c.fatalf("damage: reader %s on the undamaged catalog fails or is not deterministic:\n%s\n%s", rd.name, a.detail, b.detail)
			}
			truth[truthOf(rd, row)] = a
		}
	}
	kinds := c.kinds(l)
	rounds := max(1, c.cfg.N/6)
	for round := range rounds {
		for _, k := range kinds {
			for _, m := range mutations {
				c.check(copyDir(template, work))
				key := k.keys[r.IntN(len(k.keys))]
				d, ok, err := m.apply(r, l.root, key, k.siblings)
				c.check(err)
				if !ok {
					continue
				}
				d.harmless = slices.Contains(k.harmless, m.name)
				row := rows[r.IntN(len(rows))]
				var summary []string
				for _, rd := range readers {
					got := rd.read(row)
					o, why := classify(got, truth[truthOf(rd, row)], d, rd.mustReport(d))
					scenario := fmt.Sprintf("%s: %s: %s", k.name, m.name, d.what)
					if rd.perRow {
						scenario += fmt.Sprintf(" (row %d)", row)
					}
					detail := ""
					if o != OK && o != ClearError {
						detail = why + "\n" + got.detail
					}
					c.table.Add("damage", rd.name, o, scenario, detail)
					if o != OK {
						summary = append(summary, rd.name+" "+o.String())
					}
				}
				if len(summary) == 0 {
					summary = []string{"every reader unaffected"}
				}
				c.logf("damage %d/%d %s, %s: %s", round+1, rounds, k.name, m.name, strings.Join(summary, ", "))
			}
		}
	}
}

// classify compares a reading of a damaged catalog with the truth. A
// reader that must report the damage (verify) and says ok read wrongly.
func classify(got, truth reading, d damage, mustReport bool) (Outcome, string) {
	switch {
	case panicked(got.message):
		return Panic, "a panic"
	case got.timedOut:
		return Hung, "no answer in time"
	}
	for _, name := range slices.Sorted(maps.Keys(got.parts)) {
		if got.parts[name] != truth.parts[name] {
			return Wrong, fmt.Sprintf("%s differs from the truth:\n%s\nwant:\n%s", name, cut(got.parts[name], 1500), cut(truth.parts[name], 1500))
		}
	}
	if got.failed {
		if clearDamage(got.message, d.changed) {
			return ClearError, ""
		}
		return Unclear, "an error that names neither the object nor what is wrong"
	}
	if mustReport {
		return Wrong, "says ok while a reachable object is damaged"
	}
	return OK, ""
}
