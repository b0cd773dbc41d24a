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

// psql runs Debian's psql (postgresql-client, installed by make sysdeps)
// against f as user with the commands cmds; a missing psql fails the test.
func psql(t *testing.T, f *fixture, user string, cmds ...string) string {
	t.Helper()
	bin, err := exec.LookPath("psql")
	require.NoError(t, err, "psql is missing: install postgresql-client (make sysdeps)")
	host, port, _ := strings.Cut(f.addr, ":")
	args := []string{"--no-psqlrc", "-X", "-v", "ON_ERROR_STOP=1",
		"host=" + host + " port=" + port + " user=" + user + " dbname=lake sslmode=require"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password, "PGCONNECT_TIMEOUT=30")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "psql: %s", out)
	return string(out)
}

func TestPSQLDescribes(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 5)
	out := psql(t, f, "bob", `\dt`)
	require.Regexp(t, `public\s+\|\s+frames\s+\|\s+table`, out)

	out = psql(t, f, "bob", `\d frames`)
	require.Contains(t, out, `Table "public.frames"`)
	for col, typ := range map[string]string{"_rowid": "bigint", "_pos": "bigint", "id": "bigint", "caption": "text", "emb": "vector", "meta": "json"} {
		require.Regexp(t, `(?m)^\s*`+col+`\s+\|\s+`+typ+`\s+\|`, out)
	}

	out = psql(t, f, "bob", "SELECT id, meta->>'split' AS split FROM frames WHERE id < 2 ORDER BY id")
	require.Regexp(t, `0 \| train`, out)
	require.Regexp(t, `1 \| val`, out)
	require.Contains(t, out, "(2 rows)")

	out = psql(t, f, "bob", `\copy (SELECT id, caption FROM frames ORDER BY id LIMIT 2) TO STDOUT WITH (FORMAT csv)`)
	require.Equal(t, "0,caption 0\n1,caption 1\n", out)
}

func TestPSQLCopyFrom(t *testing.T) {
	f := newFixture(t, Options{})
	seed(t, f.mustConnect(t, "alice"), 0)
	dir := t.TempDir()
	text := filepath.Join(dir, "rows.txt")
	require.NoError(t, os.WriteFile(text, []byte("1\ttab\\there\t[1,2,3]\t{\"split\": \"train\"}\n2\t\\N\t\\N\t\\N\n"), 0o644))
	csvFile := filepath.Join(dir, "rows.csv")
	require.NoError(t, os.WriteFile(csvFile, []byte("id,caption\n3,\"a, quoted \"\"one\"\"\"\n4,\n5,\"\"\n"), 0o644))
	out := psql(t, f, "alice", `\copy frames FROM '`+text+`'`, `\copy frames (id, caption) FROM '`+csvFile+`' WITH (FORMAT csv, HEADER true)`,
		`SELECT id, coalesce(caption, '<null>') AS c, emb, meta->>'split' AS s FROM frames ORDER BY id`)
	require.Contains(t, out, "COPY 2\nCOPY 3\n")
	require.Regexp(t, `1 \| tab\s+here\s+\| \[1,2,3\] \| train`, out)
	require.Regexp(t, `2 \| <null>`, out)
	require.Contains(t, out, `a, quoted "one"`)
	require.Regexp(t, `4 \| <null>`, out)
	require.Regexp(t, `5 \|\s+\|`, out)

	// a reader may not
	cmd := exec.Command("psql", "--no-psqlrc", "-X", "-v", "ON_ERROR_STOP=1",
		"host=127.0.0.1 port="+strings.Split(f.addr, ":")[1]+" user=bob dbname=lake sslmode=require", "-c", `\copy frames FROM '`+text+`'`)
	cmd.Env = append(os.Environ(), "PGPASSWORD="+password)
	b, err := cmd.CombinedOutput()
	require.Error(t, err)
	require.Contains(t, string(b), "lacks the write right on table frames")
}

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
