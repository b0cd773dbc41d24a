package query

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	loch "github.com/lochdata/loch"
)

// TestScanErrorKeepsClass: a chunk that is missing or damaged fails the
// query with loch's error for it (ErrNotFound, ErrCorrupt) and its
// message, once, not as a DuckDB error classed as a bad argument.
func TestScanErrorKeepsClass(t *testing.T) {
	url := filepath.Join(t.TempDir(), "ds")
	d := makeImages(t, url, mustOpen(t, url), 20)
	defer d.Close()
	var chunks []string
	require.NoError(t, filepath.WalkDir(filepath.Join(url, "chunks"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			chunks = append(chunks, p)
		}
		return err
	}))
	require.NotEmpty(t, chunks)
	for _, p := range chunks { // every column's chunks: whichever the query reads is damaged
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		b[len(b)-5] ^= 0xff
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	const q = "SELECT count(*) FROM ds WHERE enum_code(label) >= 0"
	_, err = e.Write(ctx, q, FormatCSV, 0, io.Discard)
	require.ErrorIs(t, err, loch.ErrCorrupt)
	require.NotErrorIs(t, err, loch.ErrInvalidArgument)
	require.Contains(t, err.Error(), "chunks/")
	_, err = e.Select(ctx, "SELECT * FROM ds WHERE enum_code(label) >= 0")
	require.ErrorIs(t, err, loch.ErrCorrupt)

	for _, p := range chunks {
		require.NoError(t, os.Remove(p))
	}
	_, err = e.Write(ctx, q, FormatCSV, 0, io.Discard)
	require.ErrorIs(t, err, loch.ErrNotFound)

	// The engine is not left failing: a query that reads no chunk runs.
	_, err = e.Write(ctx, "SELECT 1", FormatCSV, 0, io.Discard)
	require.NoError(t, err)
}

// TestInvalidUTF8Query: a query that is not UTF-8 text is a bad argument
// (the viewer answered it with 500 until make chaos's fuzzing found it).
func TestInvalidUTF8Query(t *testing.T) {
	url := filepath.Join(t.TempDir(), "ds")
	d := makeImages(t, url, mustOpen(t, url), 5)
	defer d.Close()
	e, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Write(ctx, "SELECT\xe4", FormatCSV, 0, io.Discard)
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "not valid UTF-8")
	_, err = e.Select(ctx, "SELECT * FROM ds WHERE caption = '\xff'")
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	_, err = Parse("SELECT\xe4; SELECT 1")
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
}
