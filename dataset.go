package loch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/user"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/seqlog"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// mainBranch is the branch every dataset starts with.
const mainBranch = "main"

type options struct {
	version     string
	ref         string
	asOf        time.Time
	branch      string
	parallelism int
	author      string
	store       storage.Store
	cacheBytes  int64
	links       *LinkPolicy // nil: the default policy
	settings    storage.Settings
	direct      bool            // storage.WithDirectWrites
	autoCompact *CompactOptions // nil: no automatic compaction
	// leaseTTL and leaseRenew are a stage's lease's time to live and
	// renewal period (docs/format.md §5.1; zero: defaultLeaseTTL and a
	// quarter of it); tests shorten them.
	leaseTTL, leaseRenew time.Duration
}

// Option configures Create and Open.
type Option func(*options)

// WithVersion opens the dataset at the snapshot (commit) with this id. The
// handle is read-only.
func WithVersion(id string) Option { return func(o *options) { o.version = id } }

// WithRef opens the dataset at a reference: a branch (the handle writes
// there, and commits advance it), a tag or a version id or unique prefix of
// one (the handle is read-only). The default is branch main.
func WithRef(ref string) Option { return func(o *options) { o.ref = ref } }

// WithAsOf opens, read-only, the version that the reference (WithRef, a
// branch by default main) named at time t.
func WithAsOf(t time.Time) Option { return func(o *options) { o.asOf = t } }

// ParseTime reads a time as every interface takes it for WithAsOf (the
// CLI's --as-of, SQL's as_of, the C ABI's and so Python's as_of): RFC 3339
// ("2024-05-01T12:00:00Z", "2024-05-01T14:00:00.5+02:00"), a date and
// time in UTC ("2024-05-01 12:00:00", as loch log prints it, or with a
// "T"), or a date, which is 00:00 UTC of that day ("2024-05-01"). Anything
// else is an ErrInvalidArgument naming the forms.
func ParseTime(s string) (time.Time, error) {
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339 (2024-05-01T12:00:00Z), '2024-05-01 12:00:00' (UTC) or a date (2024-05-01, 00:00 UTC): %w", s, ErrInvalidArgument)
}

// timeLayouts are the forms ParseTime accepts; those without a zone are
// UTC.
var timeLayouts = []string{time.RFC3339Nano, time.DateTime, "2006-01-02T15:04:05", time.DateOnly}

// WithParallelism bounds the goroutines that encode chunks and images
// (default GOMAXPROCS; at most MaxParallelism).
func WithParallelism(n int) Option { return func(o *options) { o.parallelism = n } }

// MaxParallelism is the largest number of goroutines a setting may ask
// for: WithParallelism, ingest's Parallelism and the loader's Workers and
// FetchConcurrency. A larger value is refused with ErrInvalidArgument
// (rather than starting, or sizing channels for, that many).
const MaxParallelism = 4096

// WithAuthor sets the author recorded in commits (default $LOCH_AUTHOR, then
// $USER, then the name of the user the process runs as).
func WithAuthor(name string) Option { return func(o *options) { o.author = name } }

// WithStorageSettings opens the dataset's store with these connection
// settings (endpoint, region, credentials; see storage.Settings) instead
// of, or on top of, the environment's, so that datasets of one process can
// live in different clouds or accounts. Not with WithStore.
func WithStorageSettings(s storage.Settings) Option { return func(o *options) { o.settings = s } }

// WithDirectWrites makes a dataset in a local directory write its chunks
// past the page cache (storage.WithDirectWrites): what a bulk load such as
// ingest wants, since it does not read them back, but a chunk's first read
// then comes from the disk. Not with WithStore; other schemes ignore it.
func WithDirectWrites() Option { return func(o *options) { o.direct = true } }

// WithStore uses an already opened store instead of opening the URL; the
// Dataset does not close it.
func WithStore(s storage.Store) Option { return func(o *options) { o.store = s } }

// WithCacheBytes bounds the memory used to cache decoded chunks for reads
// (default 256 MiB; 0 disables the cache).
func WithCacheBytes(n int64) Option { return func(o *options) { o.cacheBytes = n } }

func buildOptions(opts []Option) options {
	o := options{branch: mainBranch, parallelism: runtime.GOMAXPROCS(0), cacheBytes: 256 << 20}
	o.author = os.Getenv("LOCH_AUTHOR")
	if o.author == "" {
		o.author = os.Getenv("USER")
	}
	for _, f := range opts {
		f(&o)
	}
	if o.author == "" { // containers and CI often have no $USER
		if u, err := user.Current(); err == nil {
			o.author = u.Username
		}
	}
	if o.parallelism < 1 {
		o.parallelism = 1
	}
	return o
}

// Dataset is a handle on a dataset at one snapshot, with a staging area for
// writes. It is safe for concurrent use. Close releases it.
type Dataset struct {
	store     storage.Store
	log       *seqlog.Log[manifest.Root]
	ownsStore bool
	url       string
	opts      options
	chunks    *chunkCache

	mu       sync.RWMutex // guards snap, readOnly, pin and opts.branch
	snap     *snapshot
	readOnly bool
	pin      string // what a read-only handle was opened at, for messages

	wmu   sync.Mutex // guards stage, lease and autoCompacted; held for the whole of Commit
	stage *staging
	lease *lease // the handle's writer lease (docs/format.md §5.1); nil before its first stage
	// autoCompacted is the outcome of the last automatic compaction
	// (WithAutoCompact).
	autoCompacted struct {
		rep *CompactReport
		err error
	}

	fragBytes sync.Map // fragment identity (fragIdent) -> chunk bytes (compaction's planning)

	links *links // the link policy of ColumnReader.Fetch

	maps chunkMaps // chunk files mapped for span reads (mapped.go)
}

// Create makes a new dataset with the given schema at url and commits its
// empty first snapshot on branch main. It fails with ErrExists, changing
// nothing, when a dataset is already there.
func Create(ctx context.Context, url string, s schema.Schema, opts ...Option) (*Dataset, error) {
	o := buildOptions(opts)
	if o.version != "" {
		return nil, invalidf("create %s: a new dataset has no version to open", storage.Redact(url))
	}
	s = s.Clone()
	if err := s.Normalize(); err != nil {
		return nil, fmt.Errorf("create %s: %w", storage.Redact(url), err)
	}
	for i := range s.Columns {
		s.Columns[i].UID = i + 1
	}
	d, err := newDataset(ctx, url, o)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Dataset, error) {
		d.Close()
		return nil, err
	}
	if err := d.checkPlace(ctx, url); err != nil {
		return fail(fmt.Errorf("create %s: %w", d.url, err))
	}
	if _, err := d.store.Stat(ctx, keys.MakeLog(1)); err == nil {
		return fail(fmt.Errorf("create %s: a dataset already exists there: %w", d.url, ErrExists))
	} else if !errors.Is(err, storage.ErrNotFound) || storage.IsBucketNotFound(err) {
		return fail(fmt.Errorf("create %s: %w", d.url, err))
	}
	man := manifest.Manifest{Schema: s, NextColumnUID: len(s.Columns) + 1, Fragments: []manifest.FragmentRef{}}
	c := manifest.Commit{Parents: []string{}, Message: "create dataset", Author: o.author, Time: time.Now().UTC(), Branch: mainBranch}
	id, err := d.writeCommit(ctx, man, c)
	if err != nil {
		return fail(fmt.Errorf("create %s: %w", d.url, err))
	}
	root := manifest.Root{Seq: 1, Time: c.Time, Refs: map[string]string{headsPrefix + mainBranch: id}, NextColumnUID: man.NextColumnUID, Op: "create"}
	if err := d.putRoot(ctx, &root); err != nil {
		if errors.Is(err, storage.ErrExists) {
			return fail(fmt.Errorf("create %s: a dataset already exists there: %w", d.url, ErrExists))
		}
		return fail(fmt.Errorf("create %s: %w", d.url, err))
	}
	mark, err := manifest.Encode(manifest.KindDataset, manifest.Dataset{
		Format: fmt.Sprintf("%d.%d", manifest.Major, manifest.Minor), ID: randomID(), Created: c.Time})
	if err != nil {
		return fail(err)
	}
	// The marker is informative; log/1 above is the point of creation, and
	// only its winner gets here, so a plain put (which a retry may repeat)
	// is right where put-if-absent could fail on its own retried success.
	if err := d.store.Put(ctx, keys.MarkerKey, mark); err != nil {
		return fail(fmt.Errorf("create %s: write marker: %w", d.url, err))
	}
	d.writeHint(ctx, 1)
	snap, err := d.loadSnapshot(ctx, id, 1)
	if err != nil {
		return fail(err)
	}
	d.snap = snap
	return d, nil
}

// checkPlace refuses, wrapping ErrInvalidArgument, a new dataset at a
// catalog's root (loch serve and loch sql would see the catalog, not the
// dataset) or inside one of its reserved folders (keys.CatalogFolder:
// tables are made by the catalog). The parents are looked at only when the
// handle opened its store from url (a catalog makes its tables WithStore)
// and only those whose next element is reserved; one that cannot be
// opened or read is passed over.
func (d *Dataset) checkPlace(ctx context.Context, url string) error {
	for parent, name := range storage.Parents(url) {
		if !d.ownsStore || !keys.CatalogFolder(name) {
			continue
		}
		st, err := storage.Open(ctx, parent, storage.WithSettings(d.opts.settings))
		if err != nil {
			continue
		}
		found, _ := isCatalog(ctx, st)
		st.Close()
		if found {
			return invalidf("inside the folder %s/ that the catalog at %s keeps its own objects in: make it a table of the catalog, or give another folder", name, storage.Redact(parent))
		}
	}
	if found, err := isCatalog(ctx, d.store); err != nil {
		return err
	} else if found {
		return invalidf("a loch catalog is there (%s): a dataset cannot share a catalog's folder; make it a table of the catalog, or give another folder", keys.CatalogLogPrefix)
	}
	return nil
}

// isCatalog reports whether st's root holds a loch catalog: an entry of
// its log (docs/format.md §6; a damaged one counts, as an error).
func isCatalog(ctx context.Context, st storage.Store) (bool, error) {
	_, err := seqlog.New(st, keys.CatalogLogPrefix, manifest.KindCatalog, func(e *manifest.Catalog) uint64 { return e.Seq }, func(e *manifest.Catalog) *string { return &e.PrevHash }).Latest(ctx)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, seqlog.ErrEmpty):
		return false, nil
	}
	return false, err
}

// Open opens the dataset at url at the newest snapshot of branch main, or
// at the reference named by WithRef, WithVersion or WithAsOf. It fails with
// ErrNotFound when there is no dataset at url or no such reference.
func Open(ctx context.Context, url string, opts ...Option) (*Dataset, error) {
	o := buildOptions(opts)
	d, err := newDataset(ctx, url, o)
	if err != nil {
		return nil, err
	}
	if err := d.checkMarker(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.openRef(ctx); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// openRef points a new handle at the reference its options name.
func (d *Dataset) openRef(ctx context.Context) error {
	o := d.opts
	ref := o.ref
	if o.version != "" {
		if ref != "" {
			return invalidf("open %s: give a version or a reference, not both", d.url)
		}
		if !keys.ValidID(o.version) {
			return fmt.Errorf("open %s: version %q is not a version id: %w", d.url, o.version, ErrNotFound)
		}
		ref = o.version
	}
	if o.asOf.IsZero() {
		if ref == "" {
			return d.Refresh(ctx)
		}
		return d.moveToRef(ctx, ref)
	}
	if ref == "" {
		ref = mainBranch
	}
	root, err := d.rootAsOf(ctx, o.asOf)
	if err != nil {
		return err
	}
	t, err := d.resolveIn(ctx, root, ref)
	if err != nil {
		return fmt.Errorf("open %s as of %s: %w", d.url, o.asOf.UTC().Format(time.RFC3339), err)
	}
	if err := d.moveTo(ctx, target{commit: t.commit, seq: t.seq}); err != nil {
		return err
	}
	d.mu.Lock()
	d.pin = fmt.Sprintf("%s as of %s (version %s)", ref, o.asOf.UTC().Format(time.RFC3339), t.commit)
	d.mu.Unlock()
	return nil
}

func newDataset(ctx context.Context, url string, o options) (*Dataset, error) {
	if o.parallelism > MaxParallelism {
		return nil, invalidf("open %s: parallelism %d: want at most %d", storage.Redact(url), o.parallelism, MaxParallelism)
	}
	if o.links != nil {
		if err := o.links.Validate(); err != nil {
			return nil, fmt.Errorf("open %s: link policy: %w", storage.Redact(url), err)
		}
	}
	d := &Dataset{opts: o, chunks: newChunkCache(o.cacheBytes)}
	if o.store != nil {
		d.store = o.store
	} else {
		s, err := storage.Open(ctx, url, storage.WithSettings(o.settings), storage.WithDirectWrites(o.direct))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", storage.Redact(url), err)
		}
		d.store, d.ownsStore = s, true
	}
	d.url = d.store.URL()
	d.log = rootLog(d.store)
	links, err := newLinks(o.links, d.url)
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("open %s: link policy: %w", d.url, err)
	}
	d.links = links
	return d, nil
}

func (d *Dataset) checkMarker(ctx context.Context) error {
	obj, err := d.store.Get(ctx, keys.MarkerKey)
	if errors.Is(err, storage.ErrNotFound) && !storage.IsBucketNotFound(err) {
		// A dataset whose creator died between log/1 and the marker is still
		// a dataset; no marker and no log/1 is none.
		if _, err2 := d.store.Stat(ctx, keys.MakeLog(1)); err2 == nil {
			return nil
		}
		return fmt.Errorf("open %s: %w", d.url, ErrNoDataset)
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", d.url, err)
	}
	var m manifest.Dataset
	if err := manifest.Decode(manifest.KindDataset, obj, &m); err != nil {
		return fmt.Errorf("open %s: read %s: %w", d.url, keys.MarkerKey, err)
	}
	return nil
}

// Close releases the handle. Staged, uncommitted writes are discarded.
func (d *Dataset) Close() error {
	d.wmu.Lock()
	if d.stage != nil {
		d.stage.abort()
		d.stage = nil
	}
	d.wmu.Unlock()
	d.maps.close()
	if d.links != nil {
		d.links.client.Close()
	}
	if d.ownsStore && d.store != nil {
		return d.store.Close()
	}
	return nil
}

// Store returns the dataset's store (owned by the Dataset).
func (d *Dataset) Store() storage.Store { return d.store }

// URL returns the dataset's URL with any secrets removed.
func (d *Dataset) URL() string { return d.url }

// Version returns the id of the snapshot (commit) the handle reads.
func (d *Dataset) Version() string { return d.current().commitID }

// Len returns the number of rows of the snapshot.
func (d *Dataset) Len() int64 { return d.current().man.Rows }

// Schema returns a copy of the snapshot's schema: the columns' definitions
// (their statistics are in Columns).
func (d *Dataset) Schema() schema.Schema { return d.current().man.Schema.Clone() }

// Columns returns the snapshot's columns, in schema order, each with the
// statistics of its samples there (copies).
func (d *Dataset) Columns() []schema.Entry { return d.current().man.Entries() }

func (d *Dataset) current() *snapshot {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.snap
}

// Refresh moves the handle to the newest snapshot of its branch. It fails
// with ErrReadOnly on a read-only handle (opened at a tag, version or time).
//
// Staged changes move onto the new snapshot: appends as they are; deleted
// and updated rows by row id when they are live and unchanged there; the
// rows that other commits deleted or changed since they were staged stay
// staged as conflicts, which Commit refuses (a *RowConflictError) until
// DiscardConflicts or Discard drops them. Staged columns whose name the
// branch added too keep the whole stage on its old snapshot (Commit
// reports it; Discard drops it). Refresh waits for a Commit of the handle
// in progress.
func (d *Dataset) Refresh(ctx context.Context) error {
	if d.ReadOnly() {
		return d.readOnlyErr("refresh")
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return d.refreshLocked(ctx)
}

// refreshLocked is Refresh with d.wmu held, on a writable handle.
func (d *Dataset) refreshLocked(ctx context.Context) error {
	root, err := d.latestRoot(ctx)
	if err != nil {
		return err
	}
	branch := d.Branch()
	id, ok := root.Refs[headsPrefix+branch]
	if !ok {
		return fmt.Errorf("open %s: no branch %q (branches: %v): %w", d.url, branch, refNames(root, headsPrefix), ErrNotFound)
	}
	if cur := d.current(); cur != nil && cur.commitID == id && (d.stage == nil || d.stage.base.commitID == id) {
		return nil
	}
	snap, err := d.loadSnapshot(ctx, id, root.Seq)
	if err != nil {
		return err
	}
	if d.stage != nil {
		if err := d.rebaseStage(ctx, d.stage, snap); err != nil {
			return err
		}
	}
	d.mu.Lock()
	d.snap = snap
	d.mu.Unlock()
	return nil
}

// putObject encodes v and stores it as an object of kind k named by its
// content hash.
func (d *Dataset) putObject(ctx context.Context, k keys.Kind, kind byte, v any) (string, error) {
	obj, err := manifest.Encode(kind, v)
	if err != nil {
		return "", err
	}
	key := keys.Make(k, manifest.Hash(obj))
	if err := d.store.Put(ctx, key, obj); err != nil {
		return "", fmt.Errorf("write %s: %w", key, err)
	}
	return key, nil
}

// getObject reads and decodes the metadata object at key, checking that a
// content-addressed one is the object its name says (manifest.CheckName).
func (d *Dataset) getObject(ctx context.Context, key string, kind byte, v any) error {
	obj, err := d.store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if err := manifest.Decode(kind, obj, v); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if k, _, ok := keys.Parse(key); !ok || !k.ContentAddressed() {
		return nil
	}
	if err := manifest.CheckName(key, obj); err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	return nil
}

func randomID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("loch: crypto/rand: %v", err))
	}
	return hex.EncodeToString(b[:])
}

// CommitInfo describes one commit (snapshot).
type CommitInfo struct {
	ID      string    `json:"id"`
	Parents []string  `json:"parents"`
	Message string    `json:"message"`
	Author  string    `json:"author"` // "" when none was known
	Time    time.Time `json:"time"`
	Rows    int64     `json:"rows"`
	Branch  string    `json:"branch"` // "" when the commit is no branch's head
	// Expired lists the parents that gc's version retention collected
	// (docs/format.md §5.2): the history before them is gone. Absent
	// when none.
	Expired []string `json:"expired,omitempty"`
}

// Log returns the commits reachable from the handle's version through all
// parents (merges bring in both sides), newest first by commit time. It
// ends at parents that gc's version retention collected, which the
// commits naming them list in Expired.
func (d *Dataset) Log(ctx context.Context) ([]CommitInfo, error) {
	return d.logFrom(ctx, d.Version())
}

// logFrom walks the commit graph from id, newest first.
func (d *Dataset) logFrom(ctx context.Context, id string) ([]CommitInfo, error) {
	var out []CommitInfo
	seen := map[string]bool{id: true}
	var frontier []CommitInfo // sorted oldest first; the newest is popped
	load := func(id string, child *CommitInfo) error {
		var c manifest.Commit
		if child != nil {
			p, err := d.readParent(ctx, id)
			if err != nil {
				return err
			}
			if p == nil {
				child.Expired = append(child.Expired, id)
				return nil
			}
			c = *p
		} else if err := d.getObject(ctx, keys.Make(keys.Commit, id), manifest.KindCommit, &c); err != nil {
			return err
		}
		ci := CommitInfo{ID: id, Parents: c.Parents, Message: c.Message, Author: c.Author, Time: c.Time, Rows: c.Rows, Branch: c.Branch}
		k := sort.Search(len(frontier), func(k int) bool { return laterCommit(frontier[k], ci) })
		frontier = slices.Insert(frontier, k, ci)
		return nil
	}
	if err := load(id, nil); err != nil {
		return nil, err
	}
	for len(frontier) > 0 {
		c := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		for _, p := range c.Parents {
			if seen[p] {
				continue
			}
			seen[p] = true
			if err := load(p, &c); err != nil {
				return nil, err
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// laterCommit orders commits by time, then id, for a stable log.
func laterCommit(a, b CommitInfo) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.After(b.Time)
	}
	return a.ID > b.ID
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
