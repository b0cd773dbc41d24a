package loch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// Reference namespaces in a root entry's refs map (docs/format.md, 2.2).
const (
	headsPrefix = "heads/"
	tagsPrefix  = "tags/"
)

// Ref kinds reported in Ref.Kind.
const (
	RefBranch = "branch"
	RefTag    = "tag"
)

// Ref is a named reference: a branch (which commits advance) or a tag (which
// never moves).
type Ref struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Commit string `json:"commit"`
}

// maxRefName bounds the length of branch and tag names.
const maxRefName = 200

// checkRefName validates a branch or tag name: 1 to 200 characters from
// [A-Za-z0-9._/-], no empty, "." or ".." path segment, not starting with
// '-', and not 32 hex digits (which would read as a version id).
func checkRefName(kind, name string) error {
	bad := func(why string) error {
		return invalidf("%s name %q %s", kind, name, why)
	}
	if name == "" || len(name) > maxRefName {
		return bad(fmt.Sprintf("must have 1 to %d characters", maxRefName))
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '/') {
			return bad(fmt.Sprintf("has the character %q (allowed: letters, digits, . _ - /)", c))
		}
	}
	if name[0] == '-' {
		return bad("starts with '-'")
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return bad("has an empty, '.' or '..' segment")
		}
	}
	if keys.ValidID(name) {
		return bad("looks like a version id (32 hex digits)")
	}
	if strings.HasPrefix(name, headsPrefix) || strings.HasPrefix(name, tagsPrefix) {
		return bad("starts with a reserved prefix (heads/ or tags/)")
	}
	return nil
}

// target is what a reference string resolved to.
type target struct {
	commit string
	branch string // set when the reference names a branch
	tag    string // set when it names a tag
	seq    uint64 // root entry it was resolved in; 0 for a version id
}

// describe names the target for messages: `branch "x"`, `tag "v1"` or
// `version <id>`.
func (t target) describe() string {
	switch {
	case t.branch != "":
		return fmt.Sprintf("branch %q", t.branch)
	case t.tag != "":
		return fmt.Sprintf("tag %q (version %s)", t.tag, t.commit)
	}
	return "version " + t.commit
}

// resolveIn resolves a reference against a root entry: a branch name, a tag
// name, "heads/<name>", "tags/<name>", a version id, or a unique prefix of
// at least 6 hex digits of a version id. Branches win over tags of the same
// name (which loch does not create).
func (d *Dataset) resolveIn(ctx context.Context, root *manifest.Root, ref string) (target, error) {
	switch {
	case ref == "":
		return target{}, invalidf("%s: empty reference (want a branch, tag or version id)", d.url)
	case strings.HasPrefix(ref, headsPrefix):
		if id, ok := root.Refs[ref]; ok {
			return target{commit: id, branch: strings.TrimPrefix(ref, headsPrefix), seq: root.Seq}, nil
		}
	case strings.HasPrefix(ref, tagsPrefix):
		if id, ok := root.Refs[ref]; ok {
			return target{commit: id, tag: strings.TrimPrefix(ref, tagsPrefix), seq: root.Seq}, nil
		}
	default:
		if id, ok := root.Refs[headsPrefix+ref]; ok {
			t := target{commit: id, branch: ref, seq: root.Seq}
			d.warnAmbiguous(ctx, ref, t, headsPrefix)
			return t, nil
		}
		if id, ok := root.Refs[tagsPrefix+ref]; ok {
			t := target{commit: id, tag: ref, seq: root.Seq}
			d.warnAmbiguous(ctx, ref, t, tagsPrefix)
			return t, nil
		}
		if keys.ValidID(ref) {
			if _, err := d.store.Stat(ctx, keys.Make(keys.Commit, ref)); err != nil {
				if errors.Is(err, storage.ErrNotFound) {
					if d.collected(ctx, ref) {
						return target{}, fmt.Errorf("%s: version %s was collected by gc's version retention (--keep-last, --older-than): %w", d.url, ref, ErrNotFound)
					}
					return target{}, fmt.Errorf("%s: no version %s: %w", d.url, ref, ErrNotFound)
				}
				return target{}, fmt.Errorf("%s: resolve %s: %w", d.url, ref, err)
			}
			return target{commit: ref}, nil
		}
		if isVersionPrefix(ref) {
			found, err := d.versionsWithPrefix(ctx, ref, 2)
			if err != nil {
				return target{}, fmt.Errorf("%s: resolve %s: %w", d.url, ref, err)
			}
			switch len(found) {
			case 1:
				return target{commit: found[0]}, nil
			case 2:
				return target{}, invalidf("%s: version prefix %q is ambiguous (%s, %s, ...); give more digits", d.url, ref, found[0], found[1])
			}
		}
	}
	hint := ""
	if len(ref) < 6 && keys.IsHex(ref) {
		hint = "; a version prefix needs at least 6 hex digits"
	}
	// A reference is echoed cut short: it came from outside, and names
	// are at most 200 bytes.
	return target{}, fmt.Errorf("%s: no branch, tag or version %q (branches: %v, tags: %v%s): %w",
		d.url, cut(ref, 200), refNames(root, headsPrefix), refNames(root, tagsPrefix), hint, ErrNotFound)
}

var errStopList = errors.New("stop listing")

// isVersionPrefix reports whether ref reads as a prefix of a version id:
// 6 to 31 hex digits.
func isVersionPrefix(ref string) bool {
	return len(ref) >= 6 && len(ref) < keys.IDLen && keys.IsHex(ref)
}

// versionsWithPrefix lists up to n version ids that start with prefix.
func (d *Dataset) versionsWithPrefix(ctx context.Context, prefix string, n int) ([]string, error) {
	var found []string
	err := d.store.List(ctx, keys.Make(keys.Commit, prefix), func(a storage.Attrs) error {
		found = append(found, strings.TrimPrefix(a.Key, keys.Commit.Prefix()))
		if len(found) >= n {
			return errStopList
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStopList) {
		return nil, err
	}
	return found, nil
}

// warnAmbiguous reports to the context's Warnings, as git warns "refname
// is ambiguous", when ref, which names t (a branch or tag, under prefix),
// also reads as a prefix of a version id that exists: the branch or tag
// is used, and the warning says so and how to name either. CreateBranch
// and CreateTag refuse such names; an older one, or a version made later
// whose id happens to start with the name, still meets this. It costs a
// listing only for names of 6 to 31 hex digits; a failed listing warns
// of nothing (the name resolved).
func (d *Dataset) warnAmbiguous(ctx context.Context, ref string, t target, prefix string) {
	if !isVersionPrefix(ref) {
		return
	}
	if found, err := d.versionsWithPrefix(ctx, ref, 1); err == nil && len(found) > 0 {
		warningsOf(ctx)(fmt.Sprintf("%s: reference %q is ambiguous: it names %s and is a prefix of version %s; using %s (write %s%s for it, or more digits of the version id for the version)",
			d.url, ref, t.describe(), found[0], t.describe(), prefix, ref))
	}
}

// refNames lists the names under one namespace of a root entry, sorted.
func refNames(root *manifest.Root, prefix string) []string {
	out := []string{}
	for k := range root.Refs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, strings.TrimPrefix(k, prefix))
		}
	}
	slices.Sort(out)
	return out
}

// Resolve returns the version id (commit id) that a reference names now: a
// branch, a tag, a version id or a unique prefix of one (6 or more digits).
func (d *Dataset) Resolve(ctx context.Context, ref string) (string, error) {
	root, err := d.latestRoot(ctx)
	if err != nil {
		return "", err
	}
	t, err := d.resolveIn(ctx, root, ref)
	return t.commit, err
}

// Refs lists the branches and then the tags of the dataset, each sorted by
// name, as of the newest log entry.
func (d *Dataset) Refs(ctx context.Context) ([]Ref, error) {
	root, err := d.latestRoot(ctx)
	if err != nil {
		return nil, err
	}
	var out []Ref
	for _, n := range refNames(root, headsPrefix) {
		out = append(out, Ref{Name: n, Kind: RefBranch, Commit: root.Refs[headsPrefix+n]})
	}
	for _, n := range refNames(root, tagsPrefix) {
		out = append(out, Ref{Name: n, Kind: RefTag, Commit: root.Refs[tagsPrefix+n]})
	}
	return out, nil
}

// Branch returns the name of the branch the handle writes to, or "" when
// the handle is read-only (opened at a tag, a version id or a time).
func (d *Dataset) Branch() string {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.readOnly {
		return ""
	}
	return d.opts.branch
}

// ReadOnly reports whether the handle refuses writes.
func (d *Dataset) ReadOnly() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.readOnly
}

// readOnlyErr is the error of a write through a read-only handle.
func (d *Dataset) readOnlyErr(op string) error {
	d.mu.RLock()
	pin := d.pin
	d.mu.RUnlock()
	return fmt.Errorf("%s %s: the handle is read-only, opened at %s; open or check out a branch to write: %w", op, d.url, pin, ErrReadOnly)
}

// CreateBranch makes a branch named name at the version from names (a
// branch, tag or version id; "" for the handle's version) and returns that
// version's id. No data or row metadata is copied: the branch is one entry
// in the next log entry. It fails with ErrExists when a branch or tag of
// that name exists.
func (d *Dataset) CreateBranch(ctx context.Context, name, from string) (string, error) {
	return d.createRef(ctx, RefBranch, name, from)
}

// CreateTag makes a tag named name at the version ref names ("" for the
// handle's version) and returns that version's id. Tags never move; a
// handle opened at a tag is read-only. It fails with ErrExists when a
// branch or tag of that name exists.
func (d *Dataset) CreateTag(ctx context.Context, name, ref string) (string, error) {
	return d.createRef(ctx, RefTag, name, ref)
}

func (d *Dataset) createRef(ctx context.Context, kind, name, from string) (string, error) {
	if err := checkRefName(kind, name); err != nil {
		return "", fmt.Errorf("%s: %w", d.url, err)
	}
	// A name that reads as a prefix of an existing version would hide
	// that version from every --ref (git warns "refname is ambiguous").
	if isVersionPrefix(name) {
		found, err := d.versionsWithPrefix(ctx, name, 1)
		if err != nil {
			return "", fmt.Errorf("create %s %q in %s: %w", kind, name, d.url, err)
		}
		if len(found) > 0 {
			return "", invalidf("create %s %q in %s: the name is a prefix of version %s, which it would hide from references; choose another name (one not all hex digits never is)",
				kind, name, d.url, found[0])
		}
	}
	var id string
	_, err := d.updateRoot(ctx, "create "+kind+" "+name, func(root, next *manifest.Root) error {
		if _, ok := root.Refs[headsPrefix+name]; ok {
			return fmt.Errorf("create %s %q in %s: a branch of that name exists: %w", kind, name, d.url, ErrExists)
		}
		if _, ok := root.Refs[tagsPrefix+name]; ok {
			return fmt.Errorf("create %s %q in %s: a tag of that name exists: %w", kind, name, d.url, ErrExists)
		}
		ref := from
		if ref == "" {
			ref = d.Version() // checked like any version id: gc may have removed it
		}
		t, err := d.resolveIn(ctx, root, ref)
		if err != nil {
			return err
		}
		id = t.commit
		prefix := headsPrefix
		if kind == RefTag {
			prefix = tagsPrefix
		}
		next.Refs[prefix+name] = id
		return nil
	})
	return id, err
}

// DeleteBranch removes a branch. Its commits stay readable by id until
// garbage collection removes those no other reference reaches. Branch main
// cannot be deleted.
func (d *Dataset) DeleteBranch(ctx context.Context, name string) error {
	if name == mainBranch {
		return invalidf("delete branch %q of %s: main is the default branch and cannot be deleted", name, d.url)
	}
	return d.deleteRef(ctx, RefBranch, headsPrefix, name)
}

// DeleteTag removes a tag.
func (d *Dataset) DeleteTag(ctx context.Context, name string) error {
	return d.deleteRef(ctx, RefTag, tagsPrefix, name)
}

func (d *Dataset) deleteRef(ctx context.Context, kind, prefix, name string) error {
	_, err := d.updateRoot(ctx, "delete "+kind+" "+name, func(root, next *manifest.Root) error {
		if _, ok := root.Refs[prefix+name]; !ok {
			return fmt.Errorf("delete %s %q of %s: no such %s (have %v): %w", kind, name, d.url, kind, refNames(root, prefix), ErrNotFound)
		}
		delete(next.Refs, prefix+name)
		return nil
	})
	return err
}

// Checkout moves the handle to another reference: a branch (the handle then
// writes there) or a tag or version id (read-only). It fails with
// ErrInvalidArgument while writes are staged.
func (d *Dataset) Checkout(ctx context.Context, ref string) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.stage != nil && !d.stage.empty() {
		return invalidf("checkout %s in %s: writes are staged on %s; commit or discard them first", ref, d.url, d.Version())
	}
	return d.moveToRef(ctx, ref)
}

// moveToRef points the handle at what ref names in the newest log entry.
func (d *Dataset) moveToRef(ctx context.Context, ref string) error {
	root, err := d.latestRoot(ctx)
	if err != nil {
		return err
	}
	t, err := d.resolveIn(ctx, root, ref)
	if err != nil {
		return err
	}
	return d.moveTo(ctx, t)
}

// moveTo loads the target's snapshot and points the handle at it.
func (d *Dataset) moveTo(ctx context.Context, t target) error {
	snap, err := d.loadSnapshot(ctx, t.commit, t.seq)
	if err != nil {
		return err
	}
	if d.stage != nil {
		d.stage.abort()
		d.stage = nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.snap = snap
	if t.branch != "" {
		d.opts.branch, d.readOnly, d.pin = t.branch, false, ""
	} else {
		d.readOnly, d.pin = true, t.describe()
	}
	return nil
}

// rootAsOf returns the newest root entry written at or before t, by binary
// search over the log (entry times come from the writers' clocks; with
// skewed clocks the answer is an entry near t).
func (d *Dataset) rootAsOf(ctx context.Context, t time.Time) (*manifest.Root, error) {
	latest, err := d.latestRoot(ctx)
	if err != nil {
		return nil, err
	}
	if !latest.Time.After(t) {
		return latest, nil
	}
	first, err := d.readRoot(ctx, 1)
	if err != nil {
		return nil, err
	}
	if first.Time.After(t) {
		return nil, fmt.Errorf("%s: the dataset was created at %s, after %s: %w", d.url, first.Time.Format(time.RFC3339), t.Format(time.RFC3339), ErrNotFound)
	}
	lo, hi := first, latest // lo.Time <= t < hi.Time
	for hi.Seq-lo.Seq > 1 {
		mid, err := d.readRoot(ctx, lo.Seq+(hi.Seq-lo.Seq)/2)
		if err != nil {
			return nil, err
		}
		if mid.Time.After(t) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo, nil
}

// Revert makes a new commit on the handle's branch whose contents are those
// of the version ref names, and returns its id. History is kept: the new
// commit's parent is the branch head. It fails with ErrInvalidArgument
// while writes are staged.
func (d *Dataset) Revert(ctx context.Context, ref, message string) (string, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.ReadOnly() {
		return "", d.readOnlyErr("revert")
	}
	if d.stage != nil && !d.stage.empty() {
		return "", invalidf("revert %s to %s: writes are staged; commit or discard them first", d.url, ref)
	}
	branch := d.Branch()
	var id string
	root, err := d.updateRoot(ctx, "revert "+branch, func(root, next *manifest.Root) error {
		head, ok := root.Refs[headsPrefix+branch]
		if !ok {
			return fmt.Errorf("revert %s: branch %q does not exist: %w", d.url, branch, ErrNotFound)
		}
		t, err := d.resolveIn(ctx, root, ref)
		if err != nil {
			return err
		}
		var to, cur manifest.Commit
		if err := d.getObject(ctx, keys.Make(keys.Commit, t.commit), manifest.KindCommit, &to); err != nil {
			return err
		}
		if err := d.getObject(ctx, keys.Make(keys.Commit, head), manifest.KindCommit, &cur); err != nil {
			return err
		}
		var man, curMan manifest.Manifest
		if err := d.getObject(ctx, to.Manifest, manifest.KindManifest, &man); err != nil {
			return err
		}
		if err := d.getObject(ctx, cur.Manifest, manifest.KindManifest, &curMan); err != nil {
			return err
		}
		// Column ids are never reused on a branch, even for columns the
		// revert removes.
		man.NextColumnUID = max(man.NextColumnUID, curMan.NextColumnUID)
		msg := message
		if msg == "" {
			msg = fmt.Sprintf("revert %s to %s", branch, t.commit)
		}
		c := manifest.Commit{Parents: []string{head}, Message: msg, Author: d.opts.author, Time: next.Time, Rows: man.Rows, Branch: branch}
		if id, err = d.writeCommit(ctx, man, c); err != nil {
			return err
		}
		next.Refs[headsPrefix+branch] = id
		return nil
	})
	if err != nil {
		return "", err
	}
	return id, d.moveTo(ctx, target{commit: id, branch: branch, seq: root.Seq})
}
