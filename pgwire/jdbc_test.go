package pgwire

import (
	"encoding/hex"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// pgjdbc is PostgreSQL's JDBC driver jar: $LOCH_PGJDBC, else where make
// sysdeps-jdbc puts it.
func pgjdbc(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("LOCH_PGJDBC"); p != "" {
		return p
	}
	home, err := os.UserHomeDir()
	require.NoError(t, err)
	p := filepath.Join(home, ".cache", "loch", "tools", "pgjdbc", "postgresql-42.7.14.jar")
	_, err = os.Stat(p)
	require.NoError(t, err, "PostgreSQL's JDBC driver is missing: make sysdeps-jdbc, or set LOCH_PGJDBC")
	return p
}

// TestJDBC runs testdata/jdbc/JdbcBrowse.java with PostgreSQL's JDBC
// driver: SCRAM over TLS (the certificate verified), the
// DatabaseMetaData calls of a BI tool's table browser, a prepared SELECT
// with a parameter reading a bytea, and a fetch size.
func TestJDBC(t *testing.T) {
	jar := pgjdbc(t)
	javac, err := exec.LookPath("javac")
	require.NoError(t, err, "javac is missing: make sysdeps-jdbc (default-jdk-headless)")
	java, err := exec.LookPath("java")
	require.NoError(t, err, "java is missing: make sysdeps-jdbc (default-jdk-headless)")
	f := newFixture(t, Options{})
	seedPics(t, f.mustConnect(t, "alice"))
	_, err = f.mustConnect(t, "alice").Exec(ctx, "UPDATE pics SET image = NULL WHERE id = 1")
	require.NoError(t, err)

	dir := t.TempDir()
	build := exec.Command(javac, "-cp", jar, "-d", dir, filepath.Join("testdata", "jdbc", "JdbcBrowse.java"))
	out, err := build.CombinedOutput()
	require.NoError(t, err, "javac: %s", out)
	cert := filepath.Join(dir, "root.crt")
	der := f.srv.opts.TLS.Certificates[0].Certificate[0]
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	url := "jdbc:postgresql://" + f.addr + "/lake?sslmode=verify-full&sslrootcert=" + cert
	run := exec.Command(java, "-cp", jar+string(os.PathListSeparator)+dir, "JdbcBrowse", url, "bob", password)
	b, err := run.CombinedOutput()
	require.NoError(t, err, "java: %s", b)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	has := func(want string) {
		t.Helper()
		require.Contains(t, lines, want, "JdbcBrowse printed:\n%s", b)
	}
	has("schema public")
	has("tabletype TABLE")
	has("table public.pics TABLE")
	has("column pics.id int8 -5 3 YES")
	has("column pics.image bytea -2 4 YES")
	has("column pics.t bytea -2 6 YES")
	has("row 0 pic 0 bytea " + hex.EncodeToString(storedSample(t, f, "image", 0)))
	has("row 1 pic 1 bytea null")
	has("privileges listed")
	has("count 5")
	require.NotContains(t, lines, "schema main", "the mirror's own schema is hidden")
}
