package loch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// This file is the two-phase write of docs/format.md §7: writers that do
// not commit (Stage) and one committer (CommitStaged) that publishes what
// any number of them wrote through the ordinary commit loop (updateRoot).

// StagedFormat is the format version of the descriptions this loch writes
// and the newest it commits.
const StagedFormat = "1.6"

// Staged describes the rows one writer staged without committing: the
// fragments it wrote, their row counts and column statistics, and the
// dataset and schema they were written for (docs/format.md §7). It is
// plain data: encode it with json.Marshal, decode it with ParseStaged, and
// hand it to the committer by any means. The zero value is not valid.
type Staged struct {
	Format    string                  `json:"format"`
	ID        string                  `json:"id"`
	Dataset   string                  `json:"dataset"`
	URL       string                  `json:"url"`
	Base      string                  `json:"base"`
	Columns   []schema.Column         `json:"columns"`
	Fragments []StagedFragment        `json:"fragments"`
	Rows      int64                   `json:"rows"`
	Stats     map[string]schema.Stats `json:"stats"`
	Checksum  string                  `json:"checksum"`
}

// stagedJSON is the JSON form of a Staged: each column is an object with
// the statistics' fields, zero (min_shape and max_shape null), as staged
// writes were written before columns and statistics were kept apart, so
// that the checksum of a description is the same.
type stagedJSON struct {
	Format    string                  `json:"format"`
	ID        string                  `json:"id"`
	Dataset   string                  `json:"dataset"`
	URL       string                  `json:"url"`
	Base      string                  `json:"base"`
	Columns   []schema.Entry          `json:"columns"`
	Fragments []StagedFragment        `json:"fragments"`
	Rows      int64                   `json:"rows"`
	Stats     map[string]schema.Stats `json:"stats"`
	Checksum  string                  `json:"checksum"`
}

// MarshalJSON writes the description in its JSON form (stagedJSON).
func (s Staged) MarshalJSON() ([]byte, error) {
	w := stagedJSON{Format: s.Format, ID: s.ID, Dataset: s.Dataset, URL: s.URL, Base: s.Base,
		Fragments: s.Fragments, Rows: s.Rows, Stats: s.Stats, Checksum: s.Checksum}
	if s.Columns != nil {
		w.Columns = make([]schema.Entry, len(s.Columns))
		for i, c := range s.Columns {
			w.Columns[i].Column = c
		}
	}
	return json.Marshal(w)
}

// StagedFragment is one fragment of a staged write.
type StagedFragment struct {
	Key  string `json:"key"`
	Rows int64  `json:"rows"`
}

// sum returns the checksum of s: the XXH3-128 of its JSON with Checksum
// empty.
func (s Staged) sum() (string, error) {
	s.Checksum = ""
	b, err := json.Marshal(s)
	if err != nil {
		return "", fmt.Errorf("encode staged write %s: %w", s.ID, err)
	}
	return manifest.Hash(b), nil
}

// ParseStaged decodes a description written by json.Marshal of a Staged
// and checks its format version and checksum (ErrNewerFormat,
// ErrCorrupt). Whether it fits a dataset is checked by CommitStaged.
func ParseStaged(b []byte) (*Staged, error) {
	var s Staged
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("staged write: not a loch staged-write description (%v): %w", err, ErrCorrupt)
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return &s, nil
}

// check validates the description on its own (rule 1 of §7).
func (s *Staged) check() error {
	major, minor, ok := strings.Cut(s.Format, ".")
	mj, err1 := strconv.Atoi(major)
	mn, err2 := strconv.Atoi(minor)
	if !ok || err1 != nil || err2 != nil {
		return fmt.Errorf("staged write %s: format %q, want a version like %s: %w", s.ID, s.Format, StagedFormat, ErrCorrupt)
	}
	if mj != manifest.Major || mn > 6 {
		return fmt.Errorf("staged write %s: format %s is newer than this loch commits (%s); upgrade loch: %w", s.ID, s.Format, StagedFormat, ErrNewerFormat)
	}
	sum, err := s.sum()
	if err != nil {
		return err
	}
	if sum != s.Checksum {
		return fmt.Errorf("staged write %s: checksum %s, want %s (the description was altered): %w", s.ID, s.Checksum, sum, ErrCorrupt)
	}
	if !keys.ValidID(s.ID) {
		return fmt.Errorf("staged write: id %q is not 32 hex digits: %w", s.ID, ErrCorrupt)
	}
	var rows int64
	for _, f := range s.Fragments {
		if f.Rows < 0 || !strings.HasPrefix(f.Key, keys.Fragment.Prefix()) || !keys.ValidID(strings.TrimPrefix(f.Key, keys.Fragment.Prefix())) {
			return fmt.Errorf("staged write %s: fragment %q with %d rows: %w", s.ID, f.Key, f.Rows, ErrCorrupt)
		}
		rows += f.Rows
	}
	if rows != s.Rows {
		return fmt.Errorf("staged write %s: says %d rows, its fragments hold %d: %w", s.ID, s.Rows, rows, ErrCorrupt)
	}
	return nil
}

// Stage writes the rows this handle has staged (with Append or Extend) as
// chunks and fragments, without committing, and returns their
// description; the handle's stage is then empty. The rows become visible
// when some handle on the same dataset passes the description to
// CommitStaged. Only appended rows can be staged this way: staged updates,
// deletions or new columns are an ErrInvalidArgument error (commit them
// with Commit). With nothing staged it returns a description of no rows.
// Until it is committed, what Stage wrote is unreferenced and garbage
// collection deletes it after its grace period.
func (d *Dataset) Stage(ctx context.Context) (*Staged, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.ReadOnly() {
		return nil, d.readOnlyErr("stage")
	}
	id, err := d.datasetID(ctx)
	if err != nil {
		return nil, err
	}
	base := d.current()
	st := d.stage
	out := &Staged{Format: StagedFormat, Dataset: id, URL: d.url, Base: base.commitID, Stats: map[string]schema.Stats{}, Fragments: []StagedFragment{}}
	if st == nil {
		out.ID = randomID()
		for _, c := range base.man.Schema.Columns {
			out.Columns = append(out.Columns, c)
		}
		return out, out.seal()
	}
	if len(st.deletes) > 0 || len(st.conflicts) > 0 || len(st.patches) > 0 || st.added > 0 {
		return nil, invalidf("stage %s: only appended rows can be staged for another committer; this handle has staged updates, deletions or new columns (commit them with Commit)", d.url)
	}
	if err := st.finish(ctx); err != nil {
		return nil, err
	}
	frags, err := st.putFragmentsNonce(ctx, nil, true)
	if err != nil {
		return nil, err
	}
	out.ID, out.Base, out.Columns = st.nonce, st.base.commitID, st.cols
	for _, f := range frags {
		out.Fragments = append(out.Fragments, StagedFragment{Key: f.key, Rows: f.rows})
		out.Rows += f.rows
	}
	for uid, dl := range st.deltas {
		s := dl.Stats
		s.StoredBytes = dl.stored.Load()
		out.Stats[strconv.Itoa(uid)] = s
	}
	if err := out.seal(); err != nil {
		return nil, err
	}
	st.cancel(nil)
	// The lease stays, unrenewed: it keeps what this stage wrote for one
	// more ttl, while a committer publishes it (docs/format.md §5.1).
	st.lease.end(true)
	d.stage = nil
	return out, nil
}

func (s *Staged) seal() error {
	sum, err := s.sum()
	s.Checksum = sum
	return err
}

// datasetID reads the dataset's id from its marker. Its creator writes
// the marker just after log/1, so a handle opened in between (a writer
// racing the creator, as the tasks of loch.ray.write do) waits for it a
// little: up to about two seconds.
func (d *Dataset) datasetID(ctx context.Context) (string, error) {
	var m manifest.Dataset
	var err error
	for attempt := 0; attempt < 40; attempt++ {
		if err = d.getObject(ctx, keys.MarkerKey, manifest.KindDataset, &m); !errors.Is(err, ErrNotFound) {
			break
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err != nil {
		return "", fmt.Errorf("%s: dataset id: %w", d.url, err)
	}
	return m.ID, nil
}

// StagedCommit is what CommitStaged did.
type StagedCommit struct {
	// Version is the id of the new commit, or of the branch head when
	// every description was published before.
	Version string `json:"version"`
	// Published and Skipped are the ids of the descriptions this commit
	// published and of those the branch held already.
	Published []string `json:"published"`
	Skipped   []string `json:"skipped"`
	// Rows is the number of rows added.
	Rows int64 `json:"rows"`
}

// errNothingNew ends the commit loop of CommitStaged when every
// description was published before.
var errNothingNew = errors.New("every staged write is committed already")

// CommitStaged publishes the rows of the staged writes as one commit on
// the handle's branch and returns the version id (docs/format.md §7).
// Descriptions the branch head already holds are skipped, so committing
// the same descriptions again adds nothing; when nothing is left, it
// returns the head's version and writes nothing. A description of another
// dataset (ErrInvalidArgument), of a newer format (ErrNewerFormat), with a
// missing (ErrNotFound) or altered (ErrCorrupt) fragment, or written
// against another schema than the head's (ErrConflict) refuses the whole
// call: nothing is committed. It reads each fragment object once and
// writes one manifest, one commit and one root entry. The handle's own
// staged writes are left staged; the handle moves to the new version.
func (d *Dataset) CommitStaged(ctx context.Context, message string, staged ...*Staged) (*StagedCommit, error) {
	res := &StagedCommit{Published: []string{}, Skipped: []string{}}
	var err error
	res.Version, err = d.commitStaged(ctx, message, staged, res)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// checkStaged checks that the staged writes are sound, of this dataset,
// each given once, and that their fragments are there.
func (d *Dataset) checkStaged(ctx context.Context, staged []*Staged) error {
	id, err := d.datasetID(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, s := range staged {
		if err := s.check(); err != nil {
			return err
		}
		if s.Dataset != id {
			return invalidf("commit %s: staged write %s is of dataset %s (%s), this is dataset %s", d.url, s.ID, s.Dataset, s.URL, id)
		}
		if seen[s.ID] {
			return invalidf("commit %s: staged write %s is given twice", d.url, s.ID)
		}
		seen[s.ID] = true
	}
	return d.checkStagedFragments(ctx, staged)
}

// tally records which of the staged writes the commit publishes (those
// of todo) and which it skips, and the rows it adds.
func (res *StagedCommit) tally(staged, todo []*Staged) {
	res.Published, res.Skipped, res.Rows = res.Published[:0], res.Skipped[:0], 0
	for _, s := range staged {
		if slices.Contains(todo, s) {
			res.Published = append(res.Published, s.ID)
			res.Rows += s.Rows
		} else {
			res.Skipped = append(res.Skipped, s.ID)
		}
	}
}

// publishInto adds the staged write to man: its statistics to its
// columns', its fragments after man's, their rows numbered from nextID on.
// It returns the next row id.
func (s *Staged) publishInto(man *manifest.Manifest, nextID uint64) uint64 {
	for _, c := range man.Schema.Columns {
		if st, ok := s.Stats[strconv.Itoa(c.UID)]; ok {
			man.StatsOf(c.UID).Merge(st)
		}
	}
	for _, f := range s.Fragments {
		start := nextID
		man.Fragments = append(man.Fragments, manifest.FragmentRef{Key: f.Key, Rows: f.Rows, IDStart: &start})
		nextID += uint64(f.Rows)
		man.Rows += f.Rows
	}
	return nextID
}

func (d *Dataset) commitStaged(ctx context.Context, message string, staged []*Staged, res *StagedCommit) (string, error) {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.ReadOnly() {
		return "", d.readOnlyErr("commit")
	}
	if err := d.checkStaged(ctx, staged); err != nil {
		return "", err
	}
	branch := d.Branch()
	ref := headsPrefix + branch
	var cid string
	next, err := d.updateRoot(ctx, "commit "+branch, func(root, next *manifest.Root) error {
		head, ok := root.Refs[ref]
		if !ok {
			return fmt.Errorf("commit %s: branch %q does not exist: %w", d.url, branch, ErrNotFound)
		}
		base, err := d.loadSnapshot(ctx, head, root.Seq)
		if err != nil {
			return err
		}
		todo, err := unpublished(base, staged)
		if err != nil {
			return fmt.Errorf("commit %s: %w", d.url, err)
		}
		res.tally(staged, todo)
		if len(todo) == 0 {
			cid = head
			return errNothingNew
		}
		man := manifest.Manifest{Schema: base.man.Schema.Clone(), Stats: base.man.CloneStats(), Rows: base.man.Rows, NextColumnUID: base.man.NextColumnUID,
			Fragments: append([]manifest.FragmentRef(nil), base.man.Fragments...)}
		c := manifest.Commit{Parents: []string{head}, Message: message, Author: d.opts.author, Time: next.Time, Branch: branch}
		nextID := root.NextRowID
		for _, s := range todo {
			if !sameColumns(base.man.Schema.Columns, s.Columns) {
				return fmt.Errorf("commit %s: staged write %s was written for the columns of version %s, and branch %s has other columns at %s; write it again: %w",
					d.url, s.ID, s.Base, branch, head, ErrConflict)
			}
			nextID = s.publishInto(&man, nextID)
			c.Staged = append(c.Staged, s.ID)
		}
		c.Rows = man.Rows
		cid, err = d.writeCommit(ctx, man, c)
		if err != nil {
			return err
		}
		next.Refs[ref] = cid
		next.NextRowID = nextID
		return nil
	})
	if errors.Is(err, errNothingNew) {
		return cid, nil
	}
	if err != nil {
		return "", err
	}
	return cid, d.moveToCommit(ctx, cid, next.Seq)
}

// unpublished returns the descriptions none of whose fragments base's
// manifest holds; one it holds in part is ErrConflict.
func unpublished(base *snapshot, staged []*Staged) ([]*Staged, error) {
	have := make(map[string]bool, len(base.man.Fragments))
	for _, f := range base.man.Fragments {
		have[f.Key] = true
	}
	var out []*Staged
	for _, s := range staged {
		n := 0
		for _, f := range s.Fragments {
			if have[f.Key] {
				n++
			}
		}
		switch {
		case n == 0:
			out = append(out, s)
		case n < len(s.Fragments):
			return nil, fmt.Errorf("staged write %s: %d of its %d fragments are committed already, the others are not: %w", s.ID, n, len(s.Fragments), ErrConflict)
		}
	}
	return out, nil
}

// checkStagedFragments reads every fragment of the descriptions, in
// parallel, and checks it against its description (rule 3 of §7); then it
// checks that every chunk they name exists (format 1.9, §5.1): the
// writers' leases may have expired, and a collection deleted them.
func (d *Dataset) checkStagedFragments(ctx context.Context, staged []*Staged) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.opts.parallelism)
	var (
		mu     sync.Mutex
		chunks []string
	)
	for _, s := range staged {
		uids := map[string]bool{}
		for _, c := range s.Columns {
			uids[strconv.Itoa(c.UID)] = true
		}
		for _, f := range s.Fragments {
			g.Go(func() error {
				ks, err := d.checkStagedFragment(gctx, s, f, uids)
				mu.Lock()
				chunks = append(chunks, ks...)
				mu.Unlock()
				return err
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	missing, err := d.missingObjects(ctx, chunks)
	if err != nil {
		return fmt.Errorf("commit %s: check the staged chunks: %w", d.url, err)
	}
	if len(missing) > 0 {
		return fmt.Errorf("commit %s: %s; write those staged writes again: %w",
			d.url, goneByGC(missing, "the staged writes waited longer than the grace period, and their writers' leases had expired"), ErrNotFound)
	}
	return nil
}

// checkStagedFragment checks one fragment of a description and returns
// the keys of the chunks it names.
func (d *Dataset) checkStagedFragment(ctx context.Context, s *Staged, f StagedFragment, uids map[string]bool) ([]string, error) {
	bad := func(format string, a ...any) ([]string, error) {
		return nil, fmt.Errorf("commit %s: staged write %s: fragment %s %s: %w", d.url, s.ID, f.Key, fmt.Sprintf(format, a...), ErrCorrupt)
	}
	obj, err := d.store.Get(ctx, f.Key)
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("commit %s: staged write %s: fragment %s is missing (deleted, or written to another store?): %w", d.url, s.ID, f.Key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("commit %s: staged write %s: %w", d.url, s.ID, err)
	}
	if h := manifest.Hash(obj); keys.Make(keys.Fragment, h) != f.Key {
		return bad("was altered: its bytes hash to %s", h)
	}
	var fr manifest.Fragment
	if err := manifest.Decode(manifest.KindFragment, obj, &fr); err != nil {
		return bad("%v", err)
	}
	switch {
	case fr.Rows != f.Rows:
		return bad("holds %d rows, the description says %d", fr.Rows, f.Rows)
	case fr.Nonce != s.ID:
		return bad("has nonce %q, not the staged write's id", fr.Nonce)
	case len(fr.IDs) > 0:
		return bad("carries row ids (an update fragment)")
	}
	var chunks []string
	for uid, refs := range fr.Columns {
		if !uids[uid] {
			return bad("has column uid %s, which the description does not define", uid)
		}
		for _, r := range refs {
			chunks = append(chunks, r.Key)
		}
	}
	return chunks, nil
}

// FragmentRows returns the number of live rows of each fragment of the
// handle's version, in row order (they sum to Len): the natural units of a
// parallel read, each a run of consecutive positions whose chunks no
// other fragment shares.
func (d *Dataset) FragmentRows() []int64 {
	s := d.current()
	out := make([]int64, len(s.man.Fragments))
	for i, f := range s.man.Fragments {
		out[i] = f.Live()
	}
	return out
}
