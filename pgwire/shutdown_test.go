package pgwire

import (
	"net"
	"testing"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/catalog"
)

// rowsOf is the row count of table name's head at main, read from storage.
func rowsOf(t *testing.T, root, name string) (int64, string) {
	t.Helper()
	cat, err := catalog.Open(ctx, root)
	require.NoError(t, err)
	defer cat.Close()
	d, err := cat.OpenTable(ctx, name)
	require.NoError(t, err)
	defer d.Close()
	return d.Len(), d.Version()
}

// TestShutdownAbortsInflightWrite stops the server while a large INSERT
// stages its rows: past the grace period the write is cancelled and
// commits nothing; the table keeps its rows and version.
func TestShutdownAbortsInflightWrite(t *testing.T) {
	f := newFixture(t, Options{ShutdownGrace: 1})
	alice := f.mustConnect(t, "alice")
	seed(t, alice, 10)
	n0, v0 := rowsOf(t, f.root, "frames")
	errc := make(chan error, 1)
	go func() {
		_, err := alice.Exec(ctx, "INSERT INTO frames SELECT r.range, 'x', [1, 2, 3]::FLOAT[3], '{}' FROM range(2000000000) r")
		errc <- err
	}()
	require.Eventually(t, func() bool { return f.srv.running() == 1 }, time30s, pollEvery)
	f.stop()
	require.Error(t, <-errc)
	n1, v1 := rowsOf(t, f.root, "frames")
	require.Equal(t, n0, n1)
	require.Equal(t, v0, v1, "nothing committed")
}

// TestClientGoneCancelsQuery closes a client's socket while its query
// runs, before any row: the server cancels the query and ends the
// connection.
func TestClientGoneCancelsQuery(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 10)
	c, err := f.connect(t, "bob", password)
	require.NoError(t, err)
	go func() {
		_, err := c.Exec(ctx, "SELECT count(*) FROM frames a, range(100000000000) r WHERE r.range % 7 = a.id")
		t.Logf("query ended: %v", err)
	}()
	require.Eventually(t, func() bool { return f.srv.running() == 1 }, time30s, pollEvery)
	require.NoError(t, c.PgConn().Conn().Close())
	require.Eventually(t, func() bool { return f.srv.Connections() == 1 }, time30s, pollEvery) // alice's is left
	nc, err := net.Dial("tcp", f.addr)
	require.NoError(t, err, "still serving")
	nc.Close()
}

// TestRefRights: a reader reads main and tags, not a curation branch nor a
// version id; a curator writes its branch, and the write lands there only.
func TestRefRights(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 4)
	version := f.makeRefs(t, "frames", []string{"v1"}, []string{"curation/cats"})

	bob := f.mustConnect(t, "bob")
	var n int64
	for _, ref := range []string{"v1", "main"} {
		_, err := bob.Exec(ctx, "SET loch_branch = '"+ref+"'")
		require.NoError(t, err)
		require.NoError(t, bob.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n), ref)
		require.Equal(t, int64(4), n)
	}
	for _, ref := range []string{"curation/cats", version} {
		_, err := bob.Exec(ctx, "SET loch_branch = '"+ref+"'")
		require.NoError(t, err)
		err = bob.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n)
		pe := pgError(t, err)
		require.Equal(t, "42501", pe.Code, ref)
		require.Contains(t, pe.Message, "lacks the read right on table frames at "+ref)
	}

	carol := f.mustConnect(t, "carol")
	_, err := carol.Exec(ctx, "SET loch_branch = 'curation/cats'")
	require.NoError(t, err)
	_, err = carol.Exec(ctx, "DELETE FROM frames WHERE id = $1", int64(0))
	require.NoError(t, err)
	require.NoError(t, carol.QueryRow(ctx, "SELECT count(*) FROM frames").Scan(&n))
	require.Equal(t, int64(3), n)
	main, _ := rowsOf(t, f.root, "frames")
	require.Equal(t, int64(4), main, "main untouched")
}

// TestLogHasNoSecrets: the log names users and what they did, never a
// password, a verifier or a parameter.
func TestLogHasNoSecrets(t *testing.T) {
	var log testserver.Buffer
	f := newFixture(t, Options{Log: &log})
	_, err := f.connect(t, "alice", "not the password")
	require.Error(t, err)
	c := f.mustConnect(t, "alice")
	seed(t, c, 2)
	_, err = c.Exec(ctx, "UPDATE frames SET caption = $1 WHERE id = $2", "secret-caption-value", int64(1))
	require.NoError(t, err)
	c.Close(ctx)
	f.stop()
	out := log.String()
	require.Contains(t, out, "user alice")
	require.Contains(t, out, "login refused")
	for _, secret := range []string{password, "not the password", "secret-caption-value", "SCRAM-SHA-256$"} {
		require.NotContains(t, out, secret)
	}
}
