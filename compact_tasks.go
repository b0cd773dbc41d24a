package loch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// This file is compaction in several processes (docs/format.md §8): one
// plans (PlanCompaction), any number rewrite one group each
// (CompactGroup), and the planner commits what they wrote
// (CommitCompaction) through the commit of Compact.

// CompactTaskFormat is the format version of compaction plans and group
// descriptions.
const CompactTaskFormat = "1.9"

// CompactPlan is a compaction planned on one version of a branch: the runs
// of fragments that Compact would rewrite there. It is plain data: encode
// it with json.Marshal and hand it to the processes that run CompactGroup.
type CompactPlan struct {
	Format  string   `json:"format"`
	Dataset string   `json:"dataset"`
	Branch  string   `json:"branch"`
	Base    string   `json:"base"`
	Groups  [][2]int `json:"groups"`
	Message string   `json:"message"`
	// Report is what a dry run reports of the plan.
	Report CompactReport `json:"report"`
}

// CompactedGroup describes group Group of a plan rewritten by CompactGroup
// into the fragment Key: plain data for CommitCompaction.
type CompactedGroup struct {
	Format  string `json:"format"`
	Dataset string `json:"dataset"`
	Base    string `json:"base"`
	Group   [2]int `json:"group"`
	Key     string `json:"key"`
	Rows    int64  `json:"rows"`
}

// PlanCompaction plans a compaction of the handle's branch at its head as
// Compact would (opts.DryRun is ignored) and returns the plan; it writes
// nothing. The plan's groups are rewritten with CompactGroup, by this
// process or others, and committed with CommitCompaction. A plan with no
// groups has nothing to compact.
func (d *Dataset) PlanCompaction(ctx context.Context, opts CompactOptions) (*CompactPlan, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.ReadOnly() {
		return nil, d.readOnlyErr("compact")
	}
	if err := checkCompactOptions(d.url, opts); err != nil {
		return nil, err
	}
	opts.DryRun = true
	opts = opts.withDefaults()
	if err := d.refreshLocked(ctx); err != nil {
		return nil, err
	}
	id, err := d.datasetID(ctx)
	if err != nil {
		return nil, err
	}
	base := d.current()
	groups, rep, err := d.planOn(ctx, base, opts)
	if err != nil {
		return nil, err
	}
	if groups == nil {
		groups = [][2]int{}
	}
	return &CompactPlan{Format: CompactTaskFormat, Dataset: id, Branch: d.Branch(), Base: base.commitID, Groups: groups,
		Message: opts.Message, Report: *rep}, nil
}

// CompactGroup rewrites group i of plan into one fragment, as Compact
// does, and returns its description; the fragment is unreferenced until
// CommitCompaction publishes it (garbage collection deletes it after its
// grace period otherwise). Any handle on the plan's dataset may run it,
// read-only ones included; it reads the plan's base version whatever the
// handle's.
func (d *Dataset) CompactGroup(ctx context.Context, plan *CompactPlan, i int) (*CompactedGroup, error) {
	base, err := d.planBase(ctx, plan)
	if err != nil {
		return nil, err
	}
	if i < 0 || i >= len(plan.Groups) {
		return nil, invalidf("compact %s: group %d of a plan of %d groups", d.url, i, len(plan.Groups))
	}
	g := plan.Groups[i]
	cw, err := d.rewriteGroups(ctx, base, [][2]int{g})
	if err != nil {
		return nil, err
	}
	grp := cw.groups[0]
	return &CompactedGroup{Format: CompactTaskFormat, Dataset: plan.Dataset, Base: plan.Base, Group: g, Key: grp.key, Rows: grp.live}, nil
}

// CommitCompaction publishes the groups of plan that CompactGroup
// rewrote, as one commit on the plan's branch (which must be the handle's),
// as Compact does: rebased onto the head, yielding the groups whose
// fragments changed since the plan. It checks every group against the
// base (docs/format.md §8): a description of another plan is
// ErrInvalidArgument, a written fragment that does not hold the group's
// rows ErrCorrupt. Groups of the plan without a description are not
// compacted. With writes staged on the handle it fails with
// ErrInvalidArgument.
func (d *Dataset) CommitCompaction(ctx context.Context, plan *CompactPlan, done []CompactedGroup) (*CompactReport, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if err := d.compactable(); err != nil {
		return nil, err
	}
	if plan.Branch != d.Branch() {
		return nil, invalidf("compact %s: the plan is of branch %q, the handle is on %q", d.url, plan.Branch, d.Branch())
	}
	base, err := d.planBase(ctx, plan)
	if err != nil {
		return nil, err
	}
	cw := &compactWrite{d: d, st: d.newStaging(base), base: base}
	defer cw.st.cancel(nil)
	seen := map[[2]int]bool{}
	for _, g := range done {
		if g.Format != CompactTaskFormat || g.Dataset != plan.Dataset || g.Base != plan.Base || !slices.Contains(plan.Groups, g.Group) {
			return nil, invalidf("compact %s: group %v (format %q, dataset %s, base %s) is not of the plan (format %s, dataset %s, base %s, groups %v)",
				d.url, g.Group, g.Format, g.Dataset, g.Base, CompactTaskFormat, plan.Dataset, plan.Base, plan.Groups)
		}
		if seen[g.Group] {
			return nil, invalidf("compact %s: group %v described twice", d.url, g.Group)
		}
		seen[g.Group] = true
		grp, err := cw.described(ctx, g)
		if err != nil {
			return nil, err
		}
		cw.groups = append(cw.groups, grp)
	}
	rep := &CompactReport{Version: base.commitID, FragmentsBefore: len(base.frags), FragmentsAfter: len(base.frags)}
	if len(cw.groups) == 0 {
		return rep, nil
	}
	message := plan.Message
	if message == "" {
		message = CompactOptions{}.withDefaults().Message
	}
	return d.commitCompaction(ctx, cw, message, rep, nil)
}

// planBase checks that plan is of d's dataset and loads its base.
func (d *Dataset) planBase(ctx context.Context, plan *CompactPlan) (*snapshot, error) {
	if plan.Format != CompactTaskFormat {
		return nil, fmt.Errorf("compact %s: plan format %q, want %s: %w", d.url, plan.Format, CompactTaskFormat, ErrInvalidArgument)
	}
	id, err := d.datasetID(ctx)
	if err != nil {
		return nil, err
	}
	if plan.Dataset != id {
		return nil, invalidf("compact %s: the plan is of dataset %s, this is dataset %s", d.url, plan.Dataset, id)
	}
	base, err := d.loadSnapshot(ctx, plan.Base, 0)
	if err != nil {
		return nil, err
	}
	for _, g := range plan.Groups {
		if g[0] < 0 || g[1] <= g[0] || g[1] > len(base.frags) {
			return nil, invalidf("compact %s: group %v is not a run of the base's %d fragments", d.url, g, len(base.frags))
		}
	}
	return base, nil
}

// described rebuilds a written group from its description and the base,
// checking the fragment it names (docs/format.md §8).
func (cw *compactWrite) described(ctx context.Context, g CompactedGroup) (*compactGroup, error) {
	d := cw.d
	grp := &compactGroup{lo: g.Group[0], hi: g.Group[1], old: cw.base.frags[g.Group[0]:g.Group[1]], fw: &fragWriter{cols: map[int]*colWriter{}},
		oldBytes: map[int]int64{}}
	if err := cw.layout(ctx, grp); err != nil {
		return nil, err
	}
	if g.Rows != grp.live {
		return nil, fmt.Errorf("compact %s: group %v: fragment %s says %d rows, the group has %d live rows: %w", d.url, g.Group, g.Key, g.Rows, grp.live, ErrCorrupt)
	}
	if g.Key == "" && grp.live == 0 {
		return grp, nil // every row deleted: no fragment replaces the run
	}
	if !strings.HasPrefix(g.Key, keys.Fragment.Prefix()) || !keys.ValidID(strings.TrimPrefix(g.Key, keys.Fragment.Prefix())) {
		return nil, invalidf("compact %s: group %v: %q is not a fragment key", d.url, g.Group, g.Key)
	}
	f := newFragState(manifest.FragmentRef{Key: g.Key, Rows: grp.live, IDStart: grp.idStart})
	if err := f.load(ctx, d); err != nil {
		return nil, fmt.Errorf("compact %s: group %v: %w", d.url, g.Group, err)
	}
	if grp.idStart == nil && !slices.Equal(f.ids, grp.fw.ids) {
		return nil, fmt.Errorf("compact %s: group %v: fragment %s holds other row ids than the group's: %w", d.url, g.Group, g.Key, ErrCorrupt)
	}
	for uid, refs := range f.cols {
		if !slices.ContainsFunc(cw.st.cols, func(c schema.Column) bool { return c.UID == uid }) {
			return nil, fmt.Errorf("compact %s: group %v: fragment %s has column uid %d, not in the base's schema: %w", d.url, g.Group, g.Key, uid, ErrCorrupt)
		}
		w := &colWriter{}
		for i := range refs {
			w.refs = append(w.refs, &refs[i])
		}
		grp.fw.cols[uid] = w
	}
	grp.key = g.Key
	return grp, nil
}
