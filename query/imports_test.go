package query

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOnlyQueryImportsDuckDB: the query package is the only one that
// imports DuckDB, so the rest of loch builds without it, and capi's
// shared library, which cannot carry DuckDB's thread-local storage
// itself, has it only with the tag duckdb_arrow, linked as libduckdb.so
// (capi/sql.go).
func TestOnlyQueryImportsDuckDB(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/lochdata/loch/...").CombinedOutput()
	require.NoError(t, err, string(out))
	var importers []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		if strings.Contains(" "+imports, " github.com/duckdb/") {
			importers = append(importers, pkg)
		}
	}
	require.Equal(t, []string{"github.com/lochdata/loch/query"}, importers)
}
