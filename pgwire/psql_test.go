package pgwire

import (
	"os"
	"os/exec"
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
