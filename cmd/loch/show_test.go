package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestShowByID shows a row by its stable id after an update (in place)
// and a delete shifted the rows: --id finds it where --row of its old
// position now finds another row.
func TestShowByID(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "ds")
	d, err := loch.Create(ctx, dir, schema.Schema{Columns: []schema.Column{{Name: "n", DType: schema.Int64, Shape: schema.Shape{}}}})
	require.NoError(t, err)
	for i := range 4 {
		require.NoError(t, d.Append(ctx, loch.Row{"n": loch.Scalar(int64(10 * i))}))
	}
	_, err = d.Commit(ctx, "four rows")
	require.NoError(t, err)
	require.NoError(t, d.Update(ctx, 1, loch.Row{"n": loch.Scalar(int64(11))}))
	require.NoError(t, d.Delete(ctx, 0))
	_, err = d.Commit(ctx, "update row 1, delete row 0")
	require.NoError(t, err)
	require.NoError(t, d.Close())

	show := func(args ...string) showJSON {
		var stdout, stderr bytes.Buffer
		code := run(ctx, append([]string{"show", dir, "--json"}, args...), nil, &stdout, &stderr)
		require.Equal(t, exitOK, code, stderr.String())
		var doc showJSON
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &doc))
		return doc
	}
	byID := show("--id", "1")
	require.Equal(t, uint64(1), byID.ID)
	require.Equal(t, int64(0), byID.Row, "row id 1 is now first")
	require.Equal(t, json.Number("11"), json.Number(string(mustJSON(t, byID.Columns[0].Value))))
	byRow := show("--row", "1")
	require.Equal(t, uint64(2), byRow.ID)
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
