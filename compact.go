package loch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// Compaction defaults (docs/format.md §8).
const (
	DefaultCompactTargetRows  = 1 << 20
	DefaultCompactTargetBytes = 512 << 20
	DefaultCompactDeleted     = 0.1
	DefaultCompactFanout      = 8
)

// CompactOptions configures Compact. The zero value compacts fully with the
// defaults.
type CompactOptions struct {
	// TargetRows and TargetBytes size a compacted fragment: a group of
	// fragments is cut before its live rows pass TargetRows or its stored
	// chunk bytes pass TargetBytes, and a fragment below half of both is
	// small. Zero means DefaultCompactTargetRows and
	// DefaultCompactTargetBytes.
	TargetRows  int64
	TargetBytes int64
	// MaxDeleted is the fraction of deleted rows above which a fragment is
	// rewritten (its deleted rows dropped) even when it is not small. Zero
	// means DefaultCompactDeleted; a negative value never rewrites a
	// fragment for its deletions alone.
	MaxDeleted float64
	// Fanout, when positive, makes compaction tiered: only runs of at
	// least Fanout consecutive small fragments of one size class are
	// merged (and single fragments with too many deleted rows rewritten),
	// so that each row is rewritten about log_Fanout(target / commit size)
	// times. Automatic compaction (WithAutoCompact) is tiered. Zero merges
	// every run of small fragments up to the target at once.
	Fanout int
	// DryRun plans and reports, and writes nothing.
	DryRun bool
	// Message is the commit message (default "compact").
	Message string
}

func (o CompactOptions) withDefaults() CompactOptions {
	if o.TargetRows <= 0 {
		o.TargetRows = DefaultCompactTargetRows
	}
	if o.TargetBytes <= 0 {
		o.TargetBytes = DefaultCompactTargetBytes
	}
	if o.MaxDeleted == 0 {
		o.MaxDeleted = DefaultCompactDeleted
	}
	if o.Message == "" {
		o.Message = "compact"
	}
	return o
}

// CompactReport says what a compaction did (or, in a dry run, would do).
type CompactReport struct {
	DryRun bool `json:"dry_run"`
	// Version is the commit written, or the unchanged head when there was
	// nothing to compact (or in a dry run).
	Version string `json:"version"`
	// FragmentsBefore and FragmentsAfter count the branch's fragments.
	FragmentsBefore int `json:"fragments_before"`
	FragmentsAfter  int `json:"fragments_after"`
	// Groups is the number of runs of fragments rewritten, each into one
	// fragment; Rewritten the number of fragments they replaced.
	Groups    int `json:"groups"`
	Rewritten int `json:"rewritten"`
	// Rows is the number of live rows copied; Dropped the deleted rows
	// purged.
	Rows    int64 `json:"rows"`
	Dropped int64 `json:"dropped"`
	// BytesBefore is the chunk bytes of the replaced fragments,
	// BytesAfter those of the fragments written.
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
	// Yielded is the number of groups left out because a concurrent
	// commit changed their fragments (a later compaction takes them).
	Yielded int `json:"yielded"`
}

// fragInfo is what planning knows of a manifest's fragment.
type fragInfo struct {
	live, rows int64
	bytes      int64
}

// weight is the fragment's share of a full fragment.
func (f fragInfo) weight(o CompactOptions) float64 {
	return max(float64(f.live)/float64(o.TargetRows), float64(f.bytes)/float64(o.TargetBytes))
}

func (f fragInfo) small(o CompactOptions) bool { return f.weight(o) < 0.5 }

func (f fragInfo) tooDeleted(o CompactOptions) bool {
	return o.MaxDeleted >= 0 && f.rows > 0 && float64(f.rows-f.live) > o.MaxDeleted*float64(f.rows)
}

// sizeClass is floor(log_fanout(1/weight)): fragments within a factor of
// fanout of each other share a class.
func (f fragInfo) sizeClass(o CompactOptions) int {
	w := f.weight(o)
	if w <= 0 {
		return math.MaxInt32 // empty: the smallest class
	}
	return int(math.Floor(math.Log(1/w)/math.Log(float64(o.Fanout)) + 1e-9))
}

// planGroups cuts the fragments into the runs [lo, hi) that compaction
// rewrites, in manifest order (docs/format.md §8). It is pure.
func planGroups(frags []fragInfo, o CompactOptions) [][2]int {
	var out [][2]int
	emit := func(lo, hi int) {
		if hi-lo >= 2 || (hi-lo == 1 && frags[lo].live < frags[lo].rows) {
			out = append(out, [2]int{lo, hi})
		}
	}
	needy := func(f fragInfo) bool { return f.small(o) || f.tooDeleted(o) }
	if o.Fanout > 0 {
		return planTiered(frags, o)
	}
	lo, w := -1, 0.0
	for i, f := range frags {
		if !needy(f) {
			if lo >= 0 {
				emit(lo, i)
			}
			lo = -1
			continue
		}
		fw := f.weight(o)
		if lo >= 0 && w+fw > 1 {
			emit(lo, i)
			lo = -1
		}
		if lo < 0 {
			lo, w = i, 0
		}
		w += fw
	}
	if lo >= 0 {
		emit(lo, len(frags))
	}
	return out
}

// planTiered is planGroups with a fanout: runs of at least o.Fanout
// consecutive small fragments of one size class, cut into groups of at
// most o.Fanout·(o.Fanout-1)... fragments whose weight stays within 1, and
// single fragments with too many deleted rows.
func planTiered(frags []fragInfo, o CompactOptions) [][2]int {
	var out [][2]int
	i := 0
	for i < len(frags) {
		f := frags[i]
		if !f.small(o) {
			if f.tooDeleted(o) {
				out = append(out, [2]int{i, i + 1})
			}
			i++
			continue
		}
		class := f.sizeClass(o)
		j := i + 1
		for j < len(frags) && frags[j].small(o) && frags[j].sizeClass(o) == class {
			j++
		}
		if j-i >= o.Fanout {
			// Cut the run into groups of weight at most 1.
			lo, w := i, 0.0
			for k := i; k < j; k++ {
				fw := frags[k].weight(o)
				if k > lo && w+fw > 1 {
					if k-lo >= 2 {
						out = append(out, [2]int{lo, k})
					}
					lo, w = k, 0
				}
				w += fw
			}
			if j-lo >= 2 {
				out = append(out, [2]int{lo, j})
			}
		} else {
			for k := i; k < j; k++ {
				if frags[k].tooDeleted(o) {
					out = append(out, [2]int{k, k + 1})
				}
			}
		}
		i = j
	}
	return out
}

// Compact rewrites runs of small fragments, and fragments with many deleted
// rows, of the handle's branch into fragments of the target size, as one
// new version (docs/format.md §8), and moves the handle to it. Every live
// row keeps its row id, its values and its position; deleted rows are
// dropped. Samples are copied as stored, never decoded.
//
// Compaction is incremental (fragments that need no rewriting are not
// read), holds one chunk per column in memory at a time besides the
// chunks it is writing, and writes nothing visible until its commit point:
// interrupted (ctx), it leaves the dataset as it was. It never makes a
// concurrent commit fail: if the branch moved while it ran, it rebases
// onto the new head (carrying over rows deleted meanwhile), and leaves out
// the groups whose fragments the head no longer holds as they were
// (CompactReport.Yielded).
//
// With writes staged on the handle Compact fails with ErrInvalidArgument:
// commit or discard them first. A Progress in ctx (see WithProgress) gets
// phase "compact" with the rows copied out of those to copy.
func (d *Dataset) Compact(ctx context.Context, opts CompactOptions) (*CompactReport, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.compactable(); err != nil {
		return nil, err
	}
	if err := checkCompactOptions(d.url, opts); err != nil {
		return nil, err
	}
	return d.compactLocked(ctx, opts.withDefaults())
}

// compactable refuses a compaction's commit on a read-only handle or one
// with staged writes. With d.wmu held.
func (d *Dataset) compactable() error {
	if d.ReadOnly() {
		return d.readOnlyErr("compact")
	}
	if d.stage != nil && !d.stage.empty() {
		return invalidf("compact %s: writes are staged; commit or discard them first", d.url)
	}
	return nil
}

// checkCompactOptions refuses the options no compaction of url takes.
func checkCompactOptions(url string, opts CompactOptions) error {
	if opts.Fanout == 1 || opts.Fanout < 0 {
		return invalidf("compact %s: fanout %d: want 0 (full compaction) or 2 or more", url, opts.Fanout)
	}
	if opts.MaxDeleted >= 1 {
		return invalidf("compact %s: deleted fraction %g: want less than 1", url, opts.MaxDeleted)
	}
	return nil
}

// compactLocked is Compact with d.wmu held and opts defaulted.
func (d *Dataset) compactLocked(ctx context.Context, opts CompactOptions) (*CompactReport, error) {
	if err := d.refreshLocked(ctx); err != nil {
		return nil, err
	}
	base := d.current()
	groups, rep, err := d.planOn(ctx, base, opts)
	if err != nil || len(groups) == 0 || opts.DryRun {
		return rep, err
	}
	// The rewrite's objects are protected from garbage collection by the
	// handle's writer lease, as a stage's are (docs/format.md §5.1).
	lease := d.beginLease(ctx)
	defer lease.end(false)
	cw, err := d.rewriteGroups(ctx, base, groups)
	if err != nil {
		return nil, err
	}
	return d.commitCompaction(ctx, cw, opts.Message, rep, lease)
}

// planOn plans a compaction of snapshot s: the runs of fragments to
// rewrite, and the report of a dry run.
func (d *Dataset) planOn(ctx context.Context, s *snapshot, opts CompactOptions) ([][2]int, *CompactReport, error) {
	rep := &CompactReport{DryRun: opts.DryRun, Version: s.commitID, FragmentsBefore: len(s.frags), FragmentsAfter: len(s.frags)}
	infos, err := d.fragInfos(ctx, s, opts)
	if err != nil {
		return nil, nil, err
	}
	groups := planGroups(infos, opts)
	for _, g := range groups {
		rep.Groups++
		rep.Rewritten += g[1] - g[0]
		rep.FragmentsAfter -= g[1] - g[0]
		var live int64
		for _, f := range infos[g[0]:g[1]] {
			live += f.live
			rep.Dropped += f.rows - f.live
			rep.BytesBefore += f.bytes
		}
		rep.Rows += live
		if live > 0 { // a group of deleted rows only leaves no fragment
			rep.FragmentsAfter++
		}
	}
	return groups, rep, nil
}

// commitCompaction commits the written groups of cw on the handle's
// branch (commitOnto) and moves the handle to the result; rep is filled
// in. With d.wmu held.
//
// lease is the writer lease that protected the groups' objects while they
// were written (nil: none did, as when other processes wrote them): unless
// it stayed live, the commit first checks that they all still exist
// (docs/format.md §5.1).
func (d *Dataset) commitCompaction(ctx context.Context, cw *compactWrite, message string, rep *CompactReport, lease *lease) (*CompactReport, error) {
	checked := false
	check := func() error {
		if checked {
			return nil
		}
		checked = true
		return cw.checkObjects(ctx)
	}
	if !lease.held(ctx) {
		if err := check(); err != nil {
			return nil, err
		}
	}
	branch := d.Branch()
	var id string
	next, err := d.updateRoot(ctx, "compact "+branch, func(root, next *manifest.Root) error {
		if !lease.live() {
			if err := check(); err != nil {
				return err
			}
		}
		var err error
		id, err = cw.commitOnto(ctx, branch, message, root, next, rep)
		return err
	})
	if errors.Is(err, errNothingLeft) {
		// Every group yielded: the handle moves to the head that made them.
		if err := d.refreshLocked(ctx); err != nil {
			return nil, err
		}
		rep.Version, rep.FragmentsAfter = d.Version(), len(d.current().frags)
		return rep, nil
	}
	if err != nil {
		return nil, err
	}
	rep.Version = id
	if err := d.moveToCommit(ctx, id, next.Seq); err != nil {
		return nil, err
	}
	rep.FragmentsAfter = len(d.current().frags)
	return rep, nil
}

// checkObjects fails with ErrNotFound, naming them, when fragments or
// chunks that the compaction would publish are gone.
func (cw *compactWrite) checkObjects(ctx context.Context) error {
	var ks []string
	for _, grp := range cw.groups {
		if grp.key != "" {
			ks = append(ks, grp.key)
		}
		for _, w := range grp.fw.cols {
			for _, r := range w.refs {
				ks = append(ks, r.Key)
			}
		}
	}
	missing, err := cw.d.missingObjects(ctx, ks)
	if err != nil {
		return fmt.Errorf("compact %s: check the rewritten objects: %w", cw.d.url, err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("compact %s: %s; nothing is committed: compact again: %w", cw.d.url, goneByGC(missing, "no live writer lease protected them"), ErrNotFound)
	}
	return nil
}

// errNothingLeft ends a compaction whose every group was yielded.
var errNothingLeft = errors.New("every group changed concurrently")

// fragInfos returns the planning facts of every fragment of s. A
// fragment's chunk bytes need its objects: they are read only for
// fragments that are small by their rows, in parallel, and remembered by
// the Dataset (fragment objects never change).
func (d *Dataset) fragInfos(ctx context.Context, s *snapshot, o CompactOptions) ([]fragInfo, error) {
	out := make([]fragInfo, len(s.frags))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(gcParallelism)
	for i, f := range s.frags {
		out[i] = fragInfo{live: f.ref.Live(), rows: f.ref.Rows}
		if float64(out[i].live) >= float64(o.TargetRows)/2 && !out[i].tooDeleted(o) {
			continue // not small, whatever its bytes
		}
		g.Go(func() error {
			n, err := d.fragmentBytes(gctx, f)
			out[i].bytes = n
			return err
		})
	}
	return out, g.Wait()
}

// fragmentBytes is the stored size of the chunks a fragment (with its
// extensions) names.
func (d *Dataset) fragmentBytes(ctx context.Context, f *fragState) (int64, error) {
	key := f.ident() // its object and extensions name its chunks
	if v, ok := d.fragBytes.Load(key); ok {
		return v.(int64), nil
	}
	if err := f.load(ctx, d); err != nil {
		return 0, err
	}
	var n int64
	for _, refs := range f.cols {
		for _, r := range refs {
			n += r.Size
		}
	}
	d.fragBytes.Store(key, n)
	return n, nil
}

// compactGroup is one run of fragments of the base and the fragment that
// replaces it.
type compactGroup struct {
	lo, hi int          // the run in the base's fragments
	old    []*fragState // base.frags[lo:hi]
	fw     *fragWriter
	// newOff[k][off] is the offset in the new fragment of offset off of
	// old[k], or -1 for a row deleted in the base.
	newOff   [][]int64
	idStart  *uint64 // the rows' ids are one run from here (then fw.ids is nil)
	key      string  // the written fragment
	live     int64
	dropped  int64
	oldBytes map[int]int64 // stored chunk bytes by column uid
}

// compactWrite is a compaction's written groups, ready to commit.
type compactWrite struct {
	d      *Dataset
	st     *staging
	base   *snapshot
	groups []*compactGroup
}

// rewriteGroups copies the live rows of each group into a new fragment,
// column by column, and writes the fragment objects.
func (d *Dataset) rewriteGroups(ctx context.Context, base *snapshot, groups [][2]int) (*compactWrite, error) {
	st := d.newStaging(base)
	cw := &compactWrite{d: d, st: st, base: base}
	var total int64
	for _, g := range groups {
		for _, f := range base.frags[g[0]:g[1]] {
			total += f.ref.Live()
		}
	}
	progress := progressOf(ctx)
	progress("compact", 0, total)
	var done int64
	for _, g := range groups {
		grp := &compactGroup{lo: g[0], hi: g[1], old: base.frags[g[0]:g[1]], fw: &fragWriter{cols: map[int]*colWriter{}},
			oldBytes: map[int]int64{}}
		if err := cw.layout(ctx, grp); err != nil {
			st.abort()
			return nil, err
		}
		for ci := range st.cols {
			if err := cw.copyColumn(ctx, grp, &st.cols[ci]); err != nil {
				st.abort()
				return nil, err
			}
		}
		st.seal(ctx, grp.fw)
		cw.groups = append(cw.groups, grp)
		done += grp.live
		progress("compact", done, total)
		if err := st.firstErr(); err != nil {
			st.abort()
			return nil, err
		}
	}
	if err := st.finish(ctx); err != nil {
		st.abort()
		return nil, err
	}
	for _, grp := range cw.groups {
		st.sealed = []*fragWriter{grp.fw}
		frags, err := st.putFragmentsNonce(ctx, nil, true)
		if err != nil {
			return nil, err
		}
		if len(frags) == 1 {
			grp.key = frags[0].key
		}
	}
	st.sealed = nil
	return cw, nil
}

// layout loads a group's fragments and computes the offsets and ids of
// their live rows in the new fragment.
func (cw *compactWrite) layout(ctx context.Context, grp *compactGroup) error {
	var ids [][2]uint64
	for _, f := range grp.old {
		if err := f.load(ctx, cw.d); err != nil {
			return err
		}
		m := make([]int64, f.ref.Rows)
		di := 0
		for off := int64(0); off < f.ref.Rows; off++ {
			if di < len(f.deleted) && f.deleted[di] == off {
				di++
				m[off] = -1
				grp.dropped++
				continue
			}
			m[off] = grp.live
			grp.live++
			id := f.rowID(off)
			if n := len(ids); n > 0 && ids[n-1][0]+ids[n-1][1] == id {
				ids[n-1][1]++
			} else {
				ids = append(ids, [2]uint64{id, 1})
			}
		}
		grp.newOff = append(grp.newOff, m)
		for uid, refs := range f.cols {
			for _, r := range refs {
				grp.oldBytes[uid] += r.Size
			}
		}
	}
	grp.fw.rows = grp.live
	if len(ids) == 1 {
		s := ids[0][0]
		grp.idStart = &s
	} else {
		grp.fw.ids = ids
	}
	return nil
}

// copyColumn copies column c's live samples of a group, in order, into
// the group's new fragment: whole chunks are read one at a time and their
// samples added as stored.
func (cw *compactWrite) copyColumn(ctx context.Context, grp *compactGroup, c *schema.Column) error {
	st := cw.st
	held := false
	for _, f := range grp.old {
		if len(f.cols[c.UID]) > 0 {
			held = true
		}
	}
	if !held {
		return nil // null in every row: absent from the new fragment too
	}
	w := &colWriter{col: c}
	grp.fw.cols[c.UID] = w
	var off int64 // offset in the new fragment
	for k, f := range grp.old {
		refs := f.cols[c.UID]
		if len(refs) == 0 {
			for o := int64(0); o < f.ref.Rows; o++ {
				if grp.newOff[k][o] >= 0 {
					if err := st.addSample(ctx, w, off, prepared{null: true}); err != nil {
						return err
					}
					off++
				}
			}
			continue
		}
		for _, u := range unitsOf(refs) {
			err := cw.d.readUnit(ctx, c, refs, u, func(o int64, p prepared) error {
				if grp.newOff[k][o] < 0 {
					return nil
				}
				off++
				return st.addSample(ctx, w, off-1, p)
			})
			if err != nil {
				return fmt.Errorf("compact %s: column %q: %w", cw.d.url, c.Name, err)
			}
		}
	}
	if off != grp.live {
		return fmt.Errorf("compact %s: column %q: copied %d samples for %d live rows: %w", cw.d.url, c.Name, off, grp.live, ErrCorrupt)
	}
	return nil
}

// mediaOf is sample j's media table entry in a media chunk (zero in
// others).
func mediaOf(h *chunk.Header, j int) chunk.Media {
	if !chunk.IsMedia(h.SampleCompression) || h.Null(j) {
		return chunk.Media{}
	}
	return h.Media(j)
}

// preparedOf is a sample read as stored, ready to be staged again.
func preparedOf(c *schema.Column, shape []int, data []byte, null bool, m chunk.Media) prepared {
	if null {
		return prepared{null: true}
	}
	return prepared{shape: shape, data: data, raw: rawOf(c, shape, int64(len(data))), media: m}
}

// rawOf is the decoded size of a stored sample of column c (as the
// column's statistics count it): for images its pixels, for media its
// decoded elements, else its stored bytes n.
func rawOf(c *schema.Column, shape []int, n int64) int64 {
	switch {
	case shape == nil || c.SampleCompression == schema.SampleNone || c.SampleCompression == "":
		return n
	case c.SampleCompression.Media():
		return int64(schema.NumElements(shape)) * int64(c.DType.Size())
	default:
		return int64(schema.NumElements(shape))
	}
}

// commitOnto builds the compaction's commit on the branch as root has it:
// each group replaces its run of fragments in the head's manifest, with
// rows deleted since the base carried over; groups whose run the head no
// longer holds as it was are yielded.
func (cw *compactWrite) commitOnto(ctx context.Context, branch, message string, root, next *manifest.Root, rep *CompactReport) (string, error) {
	d := cw.d
	ref := headsPrefix + branch
	headID, ok := root.Refs[ref]
	if !ok {
		return "", fmt.Errorf("compact %s: branch %q does not exist (branches: %v): %w", d.url, branch, refNames(root, headsPrefix), ErrNotFound)
	}
	head := cw.base
	if headID != cw.base.commitID {
		var err error
		if head, err = d.loadSnapshot(ctx, headID, root.Seq); err != nil {
			return "", err
		}
	}
	*rep = CompactReport{Version: rep.Version, FragmentsBefore: len(head.frags)}
	use, err := cw.place(ctx, head, rep)
	if err != nil {
		return "", err
	}
	if len(use) == 0 {
		return "", errNothingLeft
	}
	man, err := cw.manifestOnto(head, use, rep)
	if err != nil {
		return "", err
	}
	c := manifest.Commit{Parents: []string{headID}, Message: message, Author: d.opts.author, Time: next.Time, Rows: man.Rows, Branch: branch,
		Compaction: &manifest.Compaction{Fragments: rep.Rewritten, Into: rep.Groups}}
	id, err := d.writeCommit(ctx, man, c)
	if err != nil {
		return "", err
	}
	next.Refs[ref] = id
	return id, nil
}

// placedGroup is a compaction group that still fits the head: the first
// of its fragments there (lo) and the deletions carried over to its new
// fragment.
type placedGroup struct {
	grp       *compactGroup
	lo        int
	deletions string
	deleted   int64
}

// place finds the groups whose run of fragments the head still holds as
// the base had it, puts the deletions carried over to each, and returns
// them in the head's fragment order; it counts the others in rep.Yielded.
func (cw *compactWrite) place(ctx context.Context, head *snapshot, rep *CompactReport) ([]placedGroup, error) {
	sameSchema := sameColumns(head.man.Schema.Columns, cw.st.cols)
	// Where each base fragment sits in the head, by identity.
	at := map[string]int{}
	for i, f := range head.frags {
		at[f.ident()] = i
	}
	var use []placedGroup
	for _, grp := range cw.groups {
		lo, ok := at[grp.old[0].ident()]
		if !ok || !sameSchema || lo+len(grp.old) > len(head.frags) {
			rep.Yielded++
			continue
		}
		dels, fits, err := cw.carryDeletions(ctx, grp, head.frags[lo:lo+len(grp.old)])
		if err != nil {
			return nil, err
		}
		if !fits {
			rep.Yielded++
			continue
		}
		p := placedGroup{grp: grp, lo: lo}
		if len(dels) > 0 {
			key, err := cw.d.putObject(ctx, keys.Deletion, manifest.KindDeletion, manifest.Deletion{Offsets: dels})
			if err != nil {
				return nil, err
			}
			p.deletions, p.deleted = key, int64(len(dels))
		}
		use = append(use, p)
	}
	slices.SortFunc(use, func(a, b placedGroup) int { return a.lo - b.lo })
	return use, nil
}

// manifestOnto is the head's manifest with each placed group's run of
// fragments replaced by its new fragment, and the columns' statistics
// adjusted; it counts the groups in rep.
func (cw *compactWrite) manifestOnto(head *snapshot, use []placedGroup, rep *CompactReport) (manifest.Manifest, error) {
	man := manifest.Manifest{Schema: head.man.Schema.Clone(), Stats: head.man.CloneStats(), Rows: head.man.Rows, NextColumnUID: head.man.NextColumnUID}
	i := 0
	for _, p := range use {
		for ; i < p.lo; i++ {
			man.Fragments = append(man.Fragments, head.man.Fragments[i])
		}
		var liveBefore int64
		for _, f := range head.frags[p.lo : p.lo+len(p.grp.old)] {
			liveBefore += f.ref.Live()
		}
		fr := manifest.FragmentRef{Key: p.grp.key, Rows: p.grp.live, IDStart: p.grp.idStart, Deletions: p.deletions, Deleted: p.deleted}
		if fr.Live() != liveBefore {
			return manifest.Manifest{}, fmt.Errorf("compact %s: fragments %d..%d hold %d live rows, their compaction %d: %w", cw.d.url, p.lo, p.lo+len(p.grp.old)-1, liveBefore, fr.Live(), ErrCorrupt)
		}
		if p.grp.key != "" { // a group whose every row was deleted leaves no fragment
			man.Fragments = append(man.Fragments, fr)
		}
		i = p.lo + len(p.grp.old)
		rep.count(p.grp)
		cw.adjustStats(&man, p.grp)
	}
	man.Fragments = append(man.Fragments, head.man.Fragments[i:]...)
	rep.FragmentsAfter = len(man.Fragments)
	return man, nil
}

// count adds a group that went into the commit to the report.
func (rep *CompactReport) count(grp *compactGroup) {
	rep.Groups++
	rep.Rewritten += len(grp.old)
	rep.Rows += grp.live
	rep.Dropped += grp.dropped
	for _, n := range grp.oldBytes {
		rep.BytesBefore += n
	}
	for _, w := range grp.fw.cols {
		for _, r := range w.refs {
			rep.BytesAfter += r.Size
		}
	}
}

// carryDeletions checks that the head's fragments are the group's base
// fragments (same identity and extensions, in order) and returns the
// offsets in the new fragment of the rows the head deleted since the
// base. fits is false when they are not, or when the head revived a row
// the base had deleted.
func (cw *compactWrite) carryDeletions(ctx context.Context, grp *compactGroup, now []*fragState) (dels []int64, fits bool, err error) {
	for k, f := range now {
		old := grp.old[k]
		if f.ident() != old.ident() || !slices.Equal(f.ref.Extensions, old.ref.Extensions) {
			return nil, false, nil
		}
		if f.ref.Deletions == old.ref.Deletions {
			continue
		}
		if err := f.load(ctx, cw.d); err != nil {
			return nil, false, err
		}
		for _, off := range old.deleted {
			if !f.isDeleted(off) {
				return nil, false, nil
			}
		}
		for _, off := range f.deleted {
			if n := grp.newOff[k][off]; n >= 0 {
				dels = append(dels, n)
			}
		}
	}
	slices.Sort(dels)
	return dels, true, nil
}

// adjustStats moves the columns' stored bytes from the group's old
// fragments' chunks to its new one's. Sample counts and raw bytes count
// live rows (deletes took the dropped rows out of them), so they stay.
func (cw *compactWrite) adjustStats(man *manifest.Manifest, grp *compactGroup) {
	for _, col := range man.Schema.Columns {
		c := man.StatsOf(col.UID)
		c.StoredBytes -= grp.oldBytes[col.UID]
		if w := grp.fw.cols[col.UID]; w != nil {
			for _, r := range w.refs {
				c.StoredBytes += r.Size
			}
		}
		c.StoredBytes = max(c.StoredBytes, 0)
	}
}

// autoCompact runs the handle's automatic compaction policy
// (WithAutoCompact) after a commit, with d.wmu held. Its outcome is kept
// for LastAutoCompaction: a failed compaction does not undo the commit,
// and the next commit tries again.
func (d *Dataset) autoCompact(ctx context.Context) {
	o := d.opts.autoCompact
	if o == nil {
		return
	}
	small := 0
	for _, f := range d.current().frags {
		if float64(f.ref.Live()) < float64(o.TargetRows)/2 {
			small++
		}
	}
	if small < o.Fanout {
		return
	}
	d.autoCompacted.rep, d.autoCompacted.err = d.compactLocked(ctx, *o)
}

// LastAutoCompaction returns the report and error of the last compaction
// that WithAutoCompact ran after a commit of this handle (nil, nil if none
// ran yet).
func (d *Dataset) LastAutoCompaction() (*CompactReport, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	return d.autoCompacted.rep, d.autoCompacted.err
}

// WithAutoCompact makes every commit of the handle end with a tiered
// compaction (CompactOptions.Fanout, default DefaultCompactFanout) when
// the branch holds at least Fanout small fragments, so that a dataset that
// grows by many small commits keeps few fragments. A compaction that fails
// does not undo the commit before it.
func WithAutoCompact(opts CompactOptions) Option {
	return func(o *options) {
		if opts.Fanout < 2 {
			opts.Fanout = DefaultCompactFanout
		}
		opts = opts.withDefaults()
		o.autoCompact = &opts
	}
}
