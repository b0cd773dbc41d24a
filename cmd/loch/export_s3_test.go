package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/storage"
)

// TestExportToObjectStorage exports a dataset as WebDataset shards and as
// .npy arrays into prefixes of a real MinIO bucket, ingests the shards
// back from there, and checks that a prefix holding objects is refused
// without a write.
func TestExportToObjectStorage(t *testing.T) {
	ctx := context.Background()
	bkt := testserver.MinIO(t)
	at := func(prefix string) string { return strings.Replace(bkt.URL, "/prefix?", "/"+prefix+"?", 1) }
	dir := t.TempDir()
	src := filepath.Join(dir, "ds")
	_, _, err := makeTestData(ctx, src)
	require.NoError(t, err)
	cli := func(want int, args ...string) (string, string) {
		t.Helper()
		return cliExit(t, want, args...)
	}

	out, _ := cli(exitOK, "export", src, at("wds"), "--shard-rows", "3", "--json")
	var sum exportJSON
	require.NoError(t, json.Unmarshal([]byte(out), &sum))
	require.Equal(t, 2, *sum.Shards)
	require.Equal(t, []string{
		strings.Replace(at("wds"), "?", "/shard-000000.tar?", 1),
		strings.Replace(at("wds"), "?", "/shard-000001.tar?", 1),
	}, sum.Files, "the shards' URLs, with the bucket's query")

	// The shards are objects that ingest reads back as the same columns.
	back := filepath.Join(dir, "back")
	cli(exitOK, "ingest", "webdataset", sum.Files[0], sum.Files[1], back)
	before, _ := cli(exitOK, "info", src, "--json")
	after, _ := cli(exitOK, "info", back, "--json")
	var a, b infoJSON
	require.NoError(t, json.Unmarshal([]byte(before), &a))
	require.NoError(t, json.Unmarshal([]byte(after), &b))
	require.Equal(t, a.Rows, b.Rows)
	require.Equal(t, len(a.Columns), len(b.Columns))
	for i := range a.Columns {
		require.Equal(t, a.Columns[i].Name, b.Columns[i].Name)
		require.Equal(t, a.Columns[i].Kind, b.Columns[i].Kind)
		require.Equal(t, a.Columns[i].DType, b.Columns[i].DType)
	}

	// .npy arrays too: one object per column.
	out, _ = cli(exitOK, "export", src, at("npy"), "--format", "npy", "--columns", "vec,label", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &sum))
	st, err := storage.Open(ctx, at("npy"))
	require.NoError(t, err)
	defer st.Close()
	data, err := st.Get(ctx, "vec.npy")
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(data, []byte("\x93NUMPY")), "an .npy file")
	require.Len(t, sum.Files, 2)

	// A prefix that holds objects is refused, and nothing is written.
	_, stderr := cli(exitError, "export", src, at("npy"), "--format", "npy", "--columns", "vec")
	require.Contains(t, stderr, "is not empty")
	var keys []string
	require.NoError(t, st.List(ctx, "", func(a storage.Attrs) error { keys = append(keys, a.Key); return nil }))
	require.Equal(t, []string{"label.npy", "vec.npy"}, keys)

	// A failed export deletes the objects it wrote (here vec.npy and
	// label.npy, before the damaged thumb column stops it).
	_, err = flipChunk(src)
	require.NoError(t, err)
	_, stderr = cli(exitError, "export", src, at("failed"), "--format", "npy", "--columns", "vec,label,thumb")
	require.Contains(t, stderr, "corrupt chunk")
	failed, err := storage.Open(ctx, at("failed"))
	require.NoError(t, err)
	defer failed.Close()
	keys = nil
	require.NoError(t, failed.List(ctx, "", func(a storage.Attrs) error { keys = append(keys, a.Key); return nil }))
	require.Empty(t, keys)
}
