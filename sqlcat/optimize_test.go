package sqlcat

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

// fragments is the number of fragments of table name at main's head.
func fragments(t *testing.T, s *Session, name string) int {
	t.Helper()
	d, err := s.cat.OpenTable(ctx, name)
	require.NoError(t, err)
	defer d.Close()
	return len(d.FragmentRows())
}

func TestOptimize(t *testing.T) {
	for name, root := range backends {
		t.Run(name, func(t *testing.T) {
			s := newSession(t, root(t))
			run(t, s, "CREATE TABLE t (id BIGINT, note TEXT, v FLOAT[2])")
			for i := range 10 {
				run(t, s, fmt.Sprintf("INSERT INTO t VALUES (%d, 'a%d', [%d, 1]), (%d, 'b%d', [%d, 2])", 2*i, i, i, 2*i+1, i, i))
			}
			run(t, s, "DELETE FROM t WHERE id IN (3, 4, 17)")
			const all = "SELECT _rowid, _pos, id, note, v FROM t ORDER BY _pos"
			before := rowsOf(t, s, all)
			require.Len(t, before, 17)
			require.Equal(t, 10, fragments(t, s, "t"))

			// a dry run reports and writes nothing
			r := run(t, s, "OPTIMIZE t WITH (dry_run = true)")
			head := r.Version
			require.Equal(t, "OPTIMIZE", r.Statement)
			require.NotNil(t, r.Compaction)
			require.True(t, r.Compaction.DryRun)
			require.Equal(t, 10, r.Compaction.FragmentsBefore)
			require.Equal(t, 1, r.Compaction.FragmentsAfter)
			require.EqualValues(t, 17, r.Rows)
			require.EqualValues(t, 3, r.Compaction.Dropped)
			require.Equal(t, 10, fragments(t, s, "t"))
			require.Contains(t, r.String(), "OPTIMIZE t (dry run, nothing written): 10 -> 1 fragments, 17 rows copied, 3 deleted rows dropped")

			// options: fragments of 2 live rows (weight 0.4 of 5 rows) or 1
			// (0.2), cut greedily at a weight of 1: [.4 .2 .2] [.4 .4]
			// [.4 .4] [.4 .2 .4]
			r = run(t, s, "-- loch: message \"pairs\"\nOPTIMIZE TABLE t WITH (target_rows = 5, target_bytes = '1GiB', max_deleted = 0.6, fanout = 0)")
			require.NotEqual(t, head, r.Version)
			require.Equal(t, 4, r.Compaction.FragmentsAfter)
			require.Equal(t, 4, fragments(t, s, "t"))
			require.Equal(t, before, rowsOf(t, s, all))

			// the whole table, one commit
			r = run(t, s, "optimize t")
			require.False(t, r.Compaction.DryRun)
			require.Equal(t, 1, r.Compaction.FragmentsAfter)
			require.Equal(t, 1, fragments(t, s, "t"))
			require.Equal(t, before, rowsOf(t, s, all))
			require.Contains(t, r.String(), "OPTIMIZE t: 4 -> 1 fragments, 17 rows copied, 0 deleted rows dropped, ")
			require.Contains(t, r.String(), "(version "+r.Version+")")
			d, err := s.cat.OpenTable(ctx, "t")
			require.NoError(t, err)
			log, err := d.Log(ctx)
			require.NoError(t, err)
			require.Equal(t, "optimize t", log[0].Message)
			require.Equal(t, "pairs", log[1].Message)
			require.Equal(t, r.Version, d.Version())
			d.Close()

			// nothing left: no commit
			again := run(t, s, "OPTIMIZE t")
			require.Equal(t, r.Version, again.Version)
			require.Zero(t, again.Compaction.Groups)
			require.Equal(t, "OPTIMIZE t: nothing to compact (1 fragment) (version "+r.Version+")", again.String())
		})
	}
}

func TestOptimizeErrors(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT)")
	for stmt, want := range map[string]string{
		"OPTIMIZE":                                 "want a table name",
		"OPTIMIZE t WITH (fanout = 1)":             "option fanout: want 0 (merge every run) or 2 or more",
		"OPTIMIZE t WITH (target_rows = 0)":        "option target_rows: want a number of rows, 1 or more",
		"OPTIMIZE t WITH (target_bytes = 'lots')":  "option target_bytes: want a number of bytes or a size",
		"OPTIMIZE t WITH (max_deleted = 1)":        "option max_deleted: want a fraction above 0 and below 1",
		"OPTIMIZE t WITH (dry_run = 'yes')":        "option dry_run: want true or false",
		"OPTIMIZE t WITH (speed = 3)":              "unknown option speed (known: target_rows, target_bytes, max_deleted, fanout, dry_run)",
		"OPTIMIZE t WITH (fanout = 2, fanout = 4)": "option fanout given twice",
		"OPTIMIZE t extra":                         "extra",
	} {
		mustRefuse(t, s, stmt, loch.ErrInvalidArgument, want)
	}
	require.False(t, IsQuery("OPTIMIZE t"))
	_, err := s.Run(ctx, "OPTIMIZE nope", Output{})
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.ErrorContains(t, err, `optimize nope: catalog `)
	s.Branch = "dev"
	_, err = s.Run(ctx, "OPTIMIZE t", Output{})
	require.ErrorIs(t, err, loch.ErrNotFound)
	require.ErrorContains(t, err, `table t has no branch "dev"`)
}

// TestAutoCompactWrites: a session with AutoCompact compacts its tables
// after writes, keeping every row.
func TestAutoCompactWrites(t *testing.T) {
	s := newSession(t, t.TempDir()+"/lake")
	run(t, s, "CREATE TABLE t (id BIGINT)")
	for i := range 3 {
		run(t, s, fmt.Sprintf("INSERT INTO t VALUES (%d)", i))
	}
	require.Equal(t, 3, fragments(t, s, "t"))
	s.AutoCompact = &loch.CompactOptions{Fanout: 4}
	ids := rowsOf(t, s, "SELECT _rowid, id FROM t ORDER BY _pos")
	r := run(t, s, "INSERT INTO t VALUES (3)")
	require.Equal(t, 1, fragments(t, s, "t"), "4 small fragments: one tier compacted")
	got := rowsOf(t, s, "SELECT _rowid, id FROM t ORDER BY _pos")
	require.Equal(t, ids, got[:3])
	require.Len(t, got, 4)
	d, err := s.cat.OpenTable(ctx, "t")
	require.NoError(t, err)
	defer d.Close()
	log, err := d.Log(ctx)
	require.NoError(t, err)
	require.Equal(t, r.Version, log[1].ID, "the write, then its compaction")
	require.Equal(t, "compact", log[0].Message)
}
