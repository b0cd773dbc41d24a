package sqlcat

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/catalog"
)

// counts runs SELECT count(*) and returns it.
func count(t *testing.T, s *Session, table string) float64 {
	t.Helper()
	got := rowsOf(t, s, "SELECT count(*) AS n FROM "+table)
	require.Len(t, got, 1)
	return got[0]["n"].(float64)
}

// TestKeepEngineSeesCommits: a session that keeps its engine sees, in its
// next statement, commits of its own and of another writer, a dropped and
// re-created table, and its branch when it sets one.
func TestKeepEngineSeesCommits(t *testing.T) {
	root := t.TempDir() + "/lake"
	s := newSession(t, root)
	s.KeepEngine = true
	defer s.Close()
	run(t, s, "CREATE TABLE frames (id BIGINT, caption TEXT)")
	run(t, s, "INSERT INTO frames VALUES (1, 'a')")
	require.EqualValues(t, 1, count(t, s, "frames"))
	e := s.kept.e
	require.EqualValues(t, 1, count(t, s, "frames"))
	require.Same(t, e, s.kept.e, "the engine is kept across statements")

	// its own write
	run(t, s, "INSERT INTO frames VALUES (2, 'b')")
	require.EqualValues(t, 2, count(t, s, "frames"))
	run(t, s, "UPDATE frames SET caption = 'B' WHERE id = 2")
	require.Equal(t, "B", rowsOf(t, s, "SELECT caption FROM frames WHERE id = 2")[0]["caption"])

	run(t, s, "ALTER TABLE frames ADD COLUMN score DOUBLE")
	run(t, s, "UPDATE frames SET score = 0.5 WHERE id = 2")
	require.Equal(t, 0.5, rowsOf(t, s, "SELECT score FROM frames WHERE id = 2")[0]["score"])

	// another writer's commit
	cat2, err := catalog.Open(ctx, root)
	require.NoError(t, err)
	defer cat2.Close()
	other := NewSession(cat2)
	run(t, other, "INSERT INTO frames (id, caption) VALUES (3, 'c')")
	require.EqualValues(t, 3, count(t, s, "frames"))
	run(t, other, "DELETE FROM frames WHERE id = 1")
	require.EqualValues(t, 2, count(t, s, "frames"))

	// dropped and re-created by the other writer
	run(t, other, "DROP TABLE frames")
	_, err = s.Run(ctx, "SELECT count(*) FROM frames", Output{})
	require.Error(t, err, "a dropped table is not read from the kept engine")
	run(t, other, "CREATE TABLE frames (id BIGINT, caption TEXT)")
	require.EqualValues(t, 0, count(t, s, "frames"))
	_, err = s.Run(ctx, "SELECT score FROM frames", Output{})
	require.Error(t, err, "the re-created table's columns")

	// a branch, made after the session read main
	run(t, other, "INSERT INTO frames VALUES (10, 'x')")
	run(t, s, "SET loch_branch = 'dev'")
	require.EqualValues(t, 1, count(t, s, "frames"), "no branch dev yet: main")
	d, err := cat2.OpenTable(ctx, "frames")
	require.NoError(t, err)
	_, err = d.CreateBranch(ctx, "dev", "")
	require.NoError(t, err)
	d.Close()
	run(t, s, "INSERT INTO frames VALUES (11, 'y')")
	require.EqualValues(t, 2, count(t, s, "frames"), "branch dev")
	run(t, s, "RESET loch_branch")
	require.EqualValues(t, 1, count(t, s, "frames"), "main again")
	require.Same(t, e, s.kept.e)

	// a seed of its own is set in the kept engine (query.Engine.SetSeed)
	seed := uint64(7)
	s.Seed = &seed
	require.EqualValues(t, 1, count(t, s, "frames"))
	require.Same(t, e, s.kept.e)
	require.Equal(t, &seed, s.kept.opts.Seed)
}

// TestKeepEngineOpenRows: a statement run while another's rows are open
// gets an engine of its own, and both answer.
func TestKeepEngineOpenRows(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	s.KeepEngine = true
	defer s.Close()
	run(t, s, "CREATE TABLE t (id BIGINT)")
	run(t, s, "INSERT INTO t SELECT range FROM range(10)")
	rows, release, err := s.Rows(ctx, "SELECT id FROM t ORDER BY id")
	require.NoError(t, err)
	require.EqualValues(t, 10, count(t, s, "t"))
	run(t, s, "INSERT INTO t VALUES (10)")
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	release()
	require.Equal(t, 10, n, "the open rows read the version they started on")
	require.EqualValues(t, 11, count(t, s, "t"))
}
