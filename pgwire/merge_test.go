package pgwire

import (
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestMergeRight: CALL loch_merge needs the merge right on the branch it
// merges into: a curator writes to curation/x but cannot merge it into
// main, a reader cannot either, an admin can (one row: what was merged
// and the new head), and a refusal writes nothing.
func TestMergeRight(t *testing.T) {
	f := newFixture(t, Options{})
	alice := f.mustConnect(t, "alice")
	seed(t, alice, 4)
	main := f.makeRefs(t, "frames", nil, []string{"curation/x"})

	carol := f.mustConnect(t, "carol")
	_, err := carol.Exec(ctx, "SET loch_branch = 'curation/x'")
	require.NoError(t, err)
	_, err = carol.Exec(ctx, "UPDATE frames SET caption = $1 WHERE id = $2", "curated", int64(1))
	require.NoError(t, err)

	const merge = "CALL loch_merge('frames', 'curation/x', 'main')"
	_, err = carol.Exec(ctx, merge)
	pe := pgError(t, err)
	require.Equal(t, "42501", pe.Code)
	require.Contains(t, pe.Message, "permission denied: user carol (role curator) lacks the merge right on table frames on branch main")
	// Into the session's branch (curation/x): the curator may write it,
	// but merging needs the merge right there too.
	_, err = carol.Exec(ctx, "CALL loch_merge('frames', 'main')")
	require.Contains(t, pgError(t, err).Message, "lacks the merge right on table frames on branch curation/x")
	bob := f.mustConnect(t, "bob")
	_, err = bob.Exec(ctx, merge)
	pe = pgError(t, err)
	require.Equal(t, "42501", pe.Code)
	require.Contains(t, pe.Message, "role reader")
	require.Contains(t, pe.Message, "merge right on table frames")
	var caption string
	require.NoError(t, alice.QueryRow(ctx, "SELECT caption FROM frames WHERE id = 1").Scan(&caption))
	require.Equal(t, "caption 1", caption, "nothing merged")

	// The admin merges, in the extended protocol (described row) and the
	// simple one.
	var table, source, into, version string
	var added, deleted, modified int64
	require.NoError(t, alice.QueryRow(ctx, merge).Scan(&table, &source, &into, &version, &added, &deleted, &modified))
	require.Equal(t, []any{"frames", "curation/x", "main", int64(0), int64(0), int64(1)}, []any{table, source, into, added, deleted, modified})
	require.NotEqual(t, main, version)
	require.NoError(t, alice.QueryRow(ctx, "SELECT caption FROM frames WHERE id = 1").Scan(&caption))
	require.Equal(t, "curated", caption)
	rows, err := alice.Query(ctx, merge, pgx.QueryExecModeSimpleProtocol)
	require.NoError(t, err)
	require.True(t, rows.Next())
	require.NoError(t, rows.Scan(&table, &source, &into, &version, &added, &deleted, &modified))
	require.False(t, rows.Next())
	require.NoError(t, rows.Err())
	require.Equal(t, "CALL 1", rows.CommandTag().String())
	require.EqualValues(t, 0, modified, "up to date")

	// A conflict is refused and names the table and branches.
	_, err = carol.Exec(ctx, "UPDATE frames SET caption = 'carol' WHERE id = 2")
	require.NoError(t, err)
	_, err = alice.Exec(ctx, "UPDATE frames SET caption = 'alice' WHERE id = 2")
	require.NoError(t, err)
	_, err = alice.Exec(ctx, merge)
	require.Contains(t, pgError(t, err).Message, "table frames: merge curation/x into main")
	require.NoError(t, alice.QueryRow(ctx, "SELECT caption FROM frames WHERE id = 2").Scan(&caption))
	require.Equal(t, "alice", caption)
}
