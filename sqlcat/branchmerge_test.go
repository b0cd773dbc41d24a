package sqlcat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// headOf is table name's head commit on branch.
func headOf(t *testing.T, s *Session, name, branch string) loch.CommitInfo {
	t.Helper()
	d, err := s.cat.OpenTable(ctx, name, loch.WithRef(branch))
	require.NoError(t, err)
	defer d.Close()
	log, err := d.Log(ctx)
	require.NoError(t, err)
	require.Equal(t, d.Version(), log[0].ID)
	return log[0]
}

// newBranch makes branch on table name at its main head.
func newBranch(t *testing.T, s *Session, name, branch string) {
	t.Helper()
	d, err := s.cat.OpenTable(ctx, name)
	require.NoError(t, err)
	defer d.Close()
	_, err = d.CreateBranch(ctx, branch, "")
	require.NoError(t, err)
}

func TestKindBranchMerge(t *testing.T) {
	require.Equal(t, KindBranchMerge, Kind("CALL loch_merge('t', 'dev')"))
	require.Equal(t, KindQuery, Kind("CALL pragma_version()"))
	m, err := ParseBranchMerge("call LOCH_MERGE('t', 'curation/x', 'release');")
	require.NoError(t, err)
	require.Equal(t, BranchMerge{Table: "t", Source: "curation/x", Into: "release"}, m)
	target, err := Target("CALL loch_merge('t', 'dev')")
	require.NoError(t, err)
	require.Equal(t, "t", target)
	for _, bad := range []string{"CALL loch_merge('t')", "CALL loch_merge('t', 'a', 'b', 'c')", "CALL loch_merge(t, 'dev')", "CALL loch_merge('t', '')", "CALL loch_merge('t', 'dev') x"} {
		_, err := ParseBranchMerge(bad)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, bad)
	}
}

// TestBranchMerge: CALL loch_merge merges a branch into main (the
// session's branch) as exactly one commit, and into a named branch.
func TestBranchMerge(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT, label TEXT)")
	run(t, s, "INSERT INTO t VALUES (1, 'a'), (2, 'b')")
	newBranch(t, s, "t", "curation/x")
	s.Branch = "curation/x"
	run(t, s, "INSERT INTO t VALUES (3, 'c')")
	run(t, s, "UPDATE t SET label = 'B' WHERE id = 2")
	s.Branch = ""
	before := headOf(t, s, "t", "main")
	src := headOf(t, s, "t", "curation/x")

	r := run(t, s, "CALL loch_merge('t', 'curation/x')")
	require.Equal(t, KindBranchMerge, r.Statement)
	require.Equal(t, "main", r.Into)
	require.EqualValues(t, 1, r.Inserted)
	require.EqualValues(t, 1, r.Updated)
	after := headOf(t, s, "t", "main")
	require.Equal(t, []string{before.ID, src.ID}, after.Parents, "one merge commit on main's head")
	require.Equal(t, "CALL loch_merge('t', 'curation/x')", after.Message)
	require.Equal(t, after.ID, r.Version)
	require.Equal(t, "MERGE curation/x into main of t: 1 rows added, 0 deleted, 1 modified (version "+after.ID+")", r.String())
	got := rowsOf(t, s, "SELECT label FROM t ORDER BY id")
	require.Equal(t, []map[string]any{{"label": "a"}, {"label": "B"}, {"label": "c"}}, got)

	r = run(t, s, "CALL loch_merge('t', 'curation/x')")
	require.True(t, r.UpToDate)
	require.Equal(t, after.ID, headOf(t, s, "t", "main").ID, "nothing to merge, no commit")

	// Into a named branch, and into the session's branch.
	newBranch(t, s, "t", "release")
	s.Branch = "curation/x"
	run(t, s, "DELETE FROM t WHERE id = 1")
	s.Branch = ""
	r = run(t, s, "CALL loch_merge('t', 'curation/x', 'release')")
	require.Equal(t, "release", r.Into)
	require.EqualValues(t, 1, r.Deleted)
	run(t, s, "SET loch_branch = 'release'")
	require.Len(t, rowsOf(t, s, "SELECT * FROM t"), 2)
	require.Equal(t, after.ID, headOf(t, s, "t", "main").ID, "main untouched")
}

// TestBranchMergeRefused: a conflict, an unknown branch or table, and a
// tag as the target change nothing, with errors that name them.
func TestBranchMergeRefused(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT, label TEXT)")
	run(t, s, "INSERT INTO t VALUES (1, 'a')")
	newBranch(t, s, "t", "dev")
	d, err := s.cat.OpenTable(ctx, "t")
	require.NoError(t, err)
	_, err = d.CreateTag(ctx, "v1", d.Version())
	require.NoError(t, err)
	d.Close()
	s.Branch = "dev"
	run(t, s, "UPDATE t SET label = 'dev'")
	s.Branch = ""
	run(t, s, "UPDATE t SET label = 'main'")
	head := headOf(t, s, "t", "main").ID

	err = mustRefuse(t, s, "CALL loch_merge('t', 'dev')", loch.ErrConflict, "table t: merge dev into main")
	require.ErrorContains(t, err, "merge dev into main: 1 rows changed on both sides")
	require.ErrorContains(t, err, "nothing was changed")
	mustRefuse(t, s, "CALL loch_merge('t', 'nope')", loch.ErrNotFound, "nope")
	mustRefuse(t, s, "CALL loch_merge('t', 'dev', 'nope')", loch.ErrNotFound, `table t has no branch "nope"`)
	mustRefuse(t, s, "CALL loch_merge('u', 'dev')", loch.ErrNotFound, "of table u")
	mustRefuse(t, s, "CALL loch_merge('t', 'dev', 'v1')", loch.ErrReadOnly, `"v1" is not a branch`)
	require.Equal(t, head, headOf(t, s, "t", "main").ID)
	require.Equal(t, "main", rowsOf(t, s, "SELECT label FROM t")[0]["label"])
}

// TestBranchMergeInTransaction: a transaction that writes the table
// refuses a merge of it; one that writes another table lets it commit at
// once.
func TestBranchMergeInTransaction(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT)")
	run(t, s, "CREATE TABLE u (id BIGINT)")
	run(t, s, "INSERT INTO t VALUES (1)")
	newBranch(t, s, "t", "dev")
	s.Branch = "dev"
	run(t, s, "INSERT INTO t VALUES (2)")
	s.Branch = ""
	s.Begin()
	run(t, s, "INSERT INTO t VALUES (3)")
	mustRefuse(t, s, "CALL loch_merge('t', 'dev')", ErrTxTable, "CALL LOCH_MERGE t inside a transaction that writes t")
	require.NoError(t, s.Rollback(ctx))
	s.Begin()
	run(t, s, "INSERT INTO u VALUES (1)")
	run(t, s, "CALL loch_merge('t', 'dev')")
	_, err := s.Commit(ctx)
	require.NoError(t, err)
	require.Len(t, rowsOf(t, s, "SELECT * FROM t"), 2)
	require.Len(t, rowsOf(t, s, "SELECT * FROM u"), 1)
}
