package sqlcat

import (
	"context"
	"errors"
	"fmt"

	"github.com/lochdata/loch"
)

// KindBranchMerge is the Kind (and Result.Statement) of
// CALL loch_merge('table', 'source' [, 'into']): a merge of a table's
// branch, tag or version into one of its branches (docs/sql.md §5).
const KindBranchMerge = "CALL LOCH_MERGE"

// BranchMerge is what a CALL loch_merge names: the table, the source ref
// and the branch merged into ("" for the session's branch, else main).
type BranchMerge struct {
	Table, Source, Into string
}

// branchMergeForm is how a CALL loch_merge is spelled, for errors.
const branchMergeForm = "CALL loch_merge('table', 'source' [, 'into branch'])"

// ParseBranchMerge reads a CALL loch_merge statement.
func ParseBranchMerge(stmt string) (BranchMerge, error) {
	p, err := newParser(stmt)
	if err != nil {
		return BranchMerge{}, err
	}
	if err := p.expect("call", "loch_merge", "("); err != nil {
		return BranchMerge{}, err
	}
	var args []string
	for {
		t := p.peek()
		if t.kind != tokString || t.text == "" {
			return BranchMerge{}, p.errorf("%s: want a non-empty 'string'", branchMergeForm)
		}
		p.next()
		args = append(args, t.text)
		if p.accept(")") {
			break
		}
		if err := p.expect(","); err != nil {
			return BranchMerge{}, err
		}
	}
	if len(args) < 2 || len(args) > 3 {
		return BranchMerge{}, fmt.Errorf("sql: %s: got %d arguments, want 2 or 3: %w", branchMergeForm, len(args), loch.ErrInvalidArgument)
	}
	m := BranchMerge{Table: args[0], Source: args[1]}
	if len(args) == 3 {
		m.Into = args[2]
	}
	return m, p.end()
}

// IntoBranch is the branch the merge m changes in this session: m.Into,
// else the session's branch, else main.
func (s *Session) IntoBranch(m BranchMerge) string {
	switch {
	case m.Into != "":
		return m.Into
	case s.Branch != "":
		return s.Branch
	}
	return "main"
}

// mergeBranch runs a CALL loch_merge: loch.Dataset.Merge with strategy
// fail and no fast forward, so that the branch moves by exactly one
// commit, or by none when a row changed on both sides (the error names
// the table, the branches and the rows) or when it is up to date.
func (s *Session) mergeBranch(ctx context.Context, stmt string) (Result, error) {
	m, err := ParseBranchMerge(PostgresOperators(stmt))
	if err != nil {
		return Result{}, err
	}
	into := s.IntoBranch(m)
	res := Result{Statement: KindBranchMerge, Table: m.Table, Source: m.Source, Into: into}
	d, err := s.cat.OpenTable(ctx, m.Table, loch.WithRef(into))
	if err != nil {
		if errors.Is(err, loch.ErrNotFound) {
			if _, terr := s.cat.Table(ctx, m.Table); terr == nil {
				return res, fmt.Errorf("merge %s into %s of table %s: table %s has no branch %q: %w", m.Source, into, m.Table, m.Table, into, loch.ErrNotFound)
			}
		}
		return res, fmt.Errorf("merge %s into %s of table %s: %w", m.Source, into, m.Table, err)
	}
	defer d.Close()
	if d.ReadOnly() {
		return res, fmt.Errorf("merge %s into %s of table %s: %q is not a branch: %w", m.Source, into, m.Table, into, loch.ErrReadOnly)
	}
	msg, err := s.message(stmt)
	if err != nil {
		return res, err
	}
	r, err := d.Merge(ctx, m.Source, loch.MergeOptions{Strategy: loch.MergeFail, Message: msg, NoFastForward: true})
	if err != nil {
		return res, fmt.Errorf("table %s: %w", m.Table, err)
	}
	res.Version, res.UpToDate = r.Commit, r.UpToDate
	res.Inserted, res.Deleted, res.Updated = r.Added, r.Deleted, r.Modified
	res.Rows = r.Added + r.Deleted + r.Modified
	return res, nil
}

// branchMergeString is the CLI's line for a CALL loch_merge.
func branchMergeString(r Result) string {
	if r.UpToDate {
		return fmt.Sprintf("MERGE %s into %s of %s: up to date, nothing to merge (version %s)", r.Source, r.Into, r.Table, r.Version)
	}
	return fmt.Sprintf("MERGE %s into %s of %s: %d rows added, %d deleted, %d modified (version %s)",
		r.Source, r.Into, r.Table, r.Inserted, r.Deleted, r.Updated, r.Version)
}
