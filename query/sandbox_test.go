package query

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/storage"
)

// TestSandbox: a sandboxed engine reads its own dataset and versions and
// nothing else: no files through DuckDB or loch_file, no other dataset
// through loch_scan, no SET.
func TestSandbox(t *testing.T) {
	dir := t.TempDir()
	url := filepath.Join(dir, "ds")
	st, err := storage.Open(ctx, url)
	require.NoError(t, err)
	defer st.Close()
	d := makeImages(t, url, st, 20)
	defer d.Close()
	other := makeImages(t, filepath.Join(dir, "other"), mustOpen(t, filepath.Join(dir, "other")), 5)
	defer other.Close()
	secret := filepath.Join(dir, "secret.csv")
	require.NoError(t, os.WriteFile(secret, []byte("a,b\n1,2\n"), 0o600))

	// Unsandboxed, the same statements read the file and the other dataset:
	// the refusals below are the sandbox's.
	open, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer open.Close()
	for _, q := range []string{
		"SELECT * FROM read_csv('" + secret + "')",
		"SELECT count(*) FROM loch_scan('" + other.URL() + "')",
		"SELECT octet_length(loch_file('" + secret + "'))",
	} {
		_, err := open.Write(ctx, q, FormatCSV, 0, io.Discard)
		require.NoError(t, err, q)
	}

	e, err := New(ctx, d, Options{Sandbox: true})
	require.NoError(t, err)
	defer e.Close()
	sel, err := e.Select(ctx, "SELECT * FROM ds WHERE enum_code(label) = 1")
	require.NoError(t, err)
	require.NotEmpty(t, sel.RowIDs)
	for _, q := range []string{
		"SELECT * FROM read_csv('" + secret + "')",
		"SELECT * FROM read_text('" + secret + "')",
		"SELECT count(*) FROM loch_scan('" + other.URL() + "')",
		"SELECT octet_length(loch_file('" + secret + "'))",
		"COPY (SELECT 1) TO '" + filepath.Join(dir, "out.csv") + "'",
		"SET enable_external_access = true",
		"ATTACH '" + filepath.Join(dir, "x.db") + "'",
	} {
		_, err := e.Write(ctx, q, FormatCSV, 0, io.Discard)
		require.Error(t, err, q)
	}
	_, err = e.Write(ctx, "SELECT count(*) FROM loch_scan('"+other.URL()+"')", FormatCSV, 0, io.Discard)
	require.ErrorContains(t, err, "only this engine's own tables can be read here")
	_, err = os.Stat(filepath.Join(dir, "out.csv"))
	require.True(t, os.IsNotExist(err), "COPY wrote a file")
}

func mustOpen(t *testing.T, url string) storage.Store {
	st, err := storage.Open(ctx, url)
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSandboxVectorFilter: vector_search's filter runs in an engine of its
// own, sandboxed like the one that called it.
func TestSandboxVectorFilter(t *testing.T) {
	d, vecs := vectorDataset(t)
	secret := filepath.Join(t.TempDir(), "secret.csv")
	require.NoError(t, os.WriteFile(secret, []byte("label\n2\n"), 0o600))
	q := fmt.Sprintf("SELECT _rowid FROM vector_search('embedding', %s, k := 4, filter := 'label IN (SELECT label FROM read_csv(''%s''))')", sqlVector(vecs[3]), secret)

	open, err := New(ctx, d, Options{})
	require.NoError(t, err)
	defer open.Close()
	sel, err := open.Select(ctx, q)
	require.NoError(t, err, "unsandboxed, the filter reads the file")
	require.Len(t, sel.RowIDs, 4)

	e, err := New(ctx, d, Options{Sandbox: true})
	require.NoError(t, err)
	defer e.Close()
	_, err = e.Select(ctx, q)
	require.Error(t, err)
}
