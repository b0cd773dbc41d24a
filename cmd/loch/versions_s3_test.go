package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/testserver"
)

// TestVersionCommandsS3 runs the version commands against an s3:// dataset
// on a real MinIO server: ingest on main and on a branch, tag, diff, merge,
// log, read at a tag, revert, gc, verify.
func TestVersionCommandsS3(t *testing.T) {
	url := testserver.MinIO(t).URL
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	cli := func(args ...string) string {
		t.Helper()
		stdout, _ := cliExit(t, exitOK, args...)
		return stdout
	}
	jsonOf := func(v any, args ...string) {
		t.Helper()
		require.NoError(t, json.Unmarshal([]byte(cli(args...)), v))
	}
	first := write("a.jsonl", "{\"n\": 1}\n{\"n\": 2}\n{\"n\": 3}\n")
	more := write("b.jsonl", "{\"n\": 4}\n{\"n\": 5}\n")
	cli("ingest", "jsonl", first, url)
	cli("branch", url, "dev")
	cli("ingest", "jsonl", more, url, "--append", "--branch", "dev")
	cli("tag", url, "v1")

	var df loch.Diff
	jsonOf(&df, "diff", url, "main", "dev", "--json")
	require.EqualValues(t, 2, df.Added)
	require.Zero(t, df.Deleted)

	var res loch.MergeResult
	jsonOf(&res, "merge", url, "dev", "--into", "main", "--json")
	require.True(t, res.FastForward)

	var info struct {
		Rows int64 `json:"rows"`
	}
	jsonOf(&info, "info", url, "--json")
	require.EqualValues(t, 5, info.Rows)
	jsonOf(&info, "info", url, "--ref", "v1", "--json")
	require.EqualValues(t, 3, info.Rows, "the tag still reads the first three rows")

	cli("revert", url, "--to", "v1")
	jsonOf(&info, "info", url, "--json")
	require.EqualValues(t, 3, info.Rows)
	var log logJSON
	jsonOf(&log, "log", url, "--json")
	require.GreaterOrEqual(t, len(log.Commits), 4, "create, ingest, the branch's ingest, revert")

	cli("branch", url, "--delete", "dev")
	var rep loch.GCReport
	jsonOf(&rep, "gc", url, "--grace", "0s", "--json")
	require.False(t, rep.DryRun)
	cli("verify", url)
	jsonOf(&info, "info", url, "--ref", "v1", "--json")
	require.EqualValues(t, 3, info.Rows)
}
