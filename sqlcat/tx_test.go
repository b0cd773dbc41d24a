package sqlcat

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
)

// txFixture is a catalog with table frames (ids 1, 2) and labels, a
// session s that keeps its engine, and a second session other on its own
// catalog handle (another writer).
func txFixture(t *testing.T) (s, other *Session, cat2 *catalog.Catalog) {
	root := t.TempDir() + "/lake"
	s = newSession(t, root)
	s.KeepEngine = true
	t.Cleanup(func() { s.Close() })
	run(t, s, "CREATE TABLE frames (id BIGINT PRIMARY KEY, caption TEXT)")
	run(t, s, "CREATE TABLE labels (id BIGINT)")
	run(t, s, "INSERT INTO frames VALUES (1, 'a'), (2, 'b')")
	cat2, err := catalog.Open(ctx, root)
	require.NoError(t, err)
	t.Cleanup(func() { cat2.Close() })
	return s, NewSession(cat2), cat2
}

// branches lists frames' branches.
func branches(t *testing.T, cat *catalog.Catalog) []string {
	d, err := cat.OpenTable(ctx, "frames")
	require.NoError(t, err)
	defer d.Close()
	refs, err := d.Refs(ctx)
	require.NoError(t, err)
	var out []string
	for _, r := range refs {
		if r.Kind == loch.RefBranch {
			out = append(out, r.Name)
		}
	}
	return out
}

// TestTransactionCommit: a transaction's writes are seen by its own
// statements, by no one else until COMMIT, and become one commit of main.
func TestTransactionCommit(t *testing.T) {
	s, other, cat2 := txFixture(t)
	log := func() int {
		d, err := cat2.OpenTable(ctx, "frames")
		require.NoError(t, err)
		defer d.Close()
		l, err := d.Log(ctx)
		require.NoError(t, err)
		byID := map[string]loch.CommitInfo{}
		for _, c := range l {
			byID[c.ID] = c
		}
		n := 0 // the first-parent history: the commits main moved by
		for c, ok := byID[d.Version()]; ok; c, ok = byID[c.Parents[0]] {
			n++
			if len(c.Parents) == 0 {
				break
			}
		}
		return n
	}
	before := log()
	require.True(t, s.Begin())
	require.False(t, s.Begin(), "one transaction at a time")
	run(t, s, "INSERT INTO frames VALUES (3, 'c')")
	run(t, s, "UPDATE frames SET caption = 'C' WHERE id = 3")
	run(t, s, "DELETE FROM frames WHERE id = 1")
	require.EqualValues(t, 2, count(t, s, "frames"), "its own writes")
	require.Equal(t, "C", rowsOf(t, s, "SELECT caption FROM frames WHERE id = 3")[0]["caption"])
	require.EqualValues(t, 2, count(t, other, "frames"), "not yet committed")
	require.Equal(t, []any{1.0, 2.0}, ids(t, other))
	_, err := s.Run(ctx, "INSERT INTO frames VALUES (3, 'again')", Output{})
	require.ErrorIs(t, err, loch.ErrExists, "the key check sees the transaction's rows")

	// another writer commits meanwhile, to other rows
	run(t, other, "INSERT INTO frames VALUES (4, 'd')")
	r, err := s.Commit(ctx)
	require.NoError(t, err)
	require.Equal(t, "frames", r.Table)
	require.NotEmpty(t, r.Version)
	require.False(t, s.InTransaction())
	require.Equal(t, before+2, log(), "the other writer's commit and the transaction's one commit")
	require.Equal(t, []any{2.0, 3.0, 4.0}, ids(t, other))
	require.Equal(t, []any{2.0, 3.0, 4.0}, ids(t, s))
	require.Equal(t, []string{"main"}, branches(t, cat2), "the transaction's branch is gone")

	// no other writer: still one commit (NoFastForward), not the
	// statements' two
	require.True(t, s.Begin())
	run(t, s, "INSERT INTO frames VALUES (5, 'e')")
	run(t, s, "DELETE FROM frames WHERE id = 2")
	_, err = s.Commit(ctx)
	require.NoError(t, err)
	require.Equal(t, before+3, log())
	require.Equal(t, []any{3.0, 4.0, 5.0}, ids(t, other))

	// a transaction without writes commits nothing
	require.True(t, s.Begin())
	require.EqualValues(t, 3, count(t, s, "frames"))
	r, err = s.Commit(ctx)
	require.NoError(t, err)
	require.Empty(t, r.Version)
	require.Equal(t, before+3, log())
}

func ids(t *testing.T, s *Session) []any {
	var out []any
	for _, r := range rowsOf(t, s, "SELECT id FROM frames ORDER BY id") {
		out = append(out, r["id"])
	}
	return out
}

// TestTransactionRollback: ROLLBACK discards the writes, and Close does
// too.
func TestTransactionRollback(t *testing.T) {
	s, other, cat2 := txFixture(t)
	s.Begin()
	run(t, s, "INSERT INTO frames VALUES (3, 'c')")
	require.EqualValues(t, 3, count(t, s, "frames"))
	require.NoError(t, s.Rollback(ctx))
	require.EqualValues(t, 2, count(t, s, "frames"))
	require.EqualValues(t, 2, count(t, other, "frames"))
	require.Equal(t, []string{"main"}, branches(t, cat2))

	s.Begin()
	run(t, s, "DELETE FROM frames")
	require.NoError(t, s.Close())
	require.EqualValues(t, 2, count(t, other, "frames"))
	require.Equal(t, []string{"main"}, branches(t, cat2))
}

// TestTransactionRefusals: a second table, DDL of the transaction's table
// and SET are refused and change nothing; COMMIT after a conflicting
// change commits nothing.
func TestTransactionRefusals(t *testing.T) {
	s, other, cat2 := txFixture(t)
	s.Begin()
	run(t, s, "UPDATE frames SET caption = 'mine' WHERE id = 1")
	for _, q := range []string{"INSERT INTO labels VALUES (1)", "ALTER TABLE frames ADD COLUMN x BIGINT", "DROP TABLE frames", "SET loch_branch = 'dev'"} {
		_, err := s.Run(ctx, q, Output{})
		require.ErrorIs(t, err, ErrTxTable, q)
		require.ErrorContains(t, err, "COMMIT", q)
	}
	require.EqualValues(t, 0, count(t, other, "labels"))
	run(t, other, "UPDATE frames SET caption = 'theirs' WHERE id = 1")
	_, err := s.Commit(ctx)
	require.ErrorIs(t, err, loch.ErrConflict)
	require.False(t, s.InTransaction())
	require.Equal(t, "theirs", rowsOf(t, s, "SELECT caption FROM frames WHERE id = 1")[0]["caption"])
	require.Equal(t, []string{"main"}, branches(t, cat2))

	// CREATE TABLE runs at once, inside a transaction too
	s.Begin()
	run(t, s, "CREATE TABLE more (id BIGINT)")
	run(t, s, "INSERT INTO more VALUES (1)")
	require.NoError(t, s.Rollback(ctx))
	require.EqualValues(t, 0, count(t, other, "more"))
	tables, err := s.Tables(ctx, "SELECT * FROM more")
	require.NoError(t, err)
	require.Equal(t, []string{"more"}, tables)
	require.False(t, errors.Is(err, ErrTxTable) || strings.Contains(strings.Join(branches(t, cat2), ","), TxBranchPrefix))
}
