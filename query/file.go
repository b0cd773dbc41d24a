package query

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/storage"
)

// FileFunction is the scalar function that reads a file's bytes:
// loch_file(url) is the BLOB at a local path or a storage URL (s3://,
// gs://, az://, http(s)://), read through the storage layer. A relative
// path is taken from Options.FileBase. NULL in, NULL out.
const FileFunction = "loch_file"

type fileFunc struct{ e *Engine }

func (f fileFunc) Config() duckdb.ScalarFuncConfig {
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	blob, _ := duckdb.NewTypeInfo(duckdb.TYPE_BLOB)
	return duckdb.ScalarFuncConfig{InputTypeInfos: []duckdb.TypeInfo{str}, ResultTypeInfo: blob, Volatile: true}
}

func (f fileFunc) Executor() duckdb.ScalarFuncExecutor {
	return duckdb.ScalarFuncExecutor{RowExecutor: func(values []driver.Value) (any, error) {
		u, _ := values[0].(string)
		return f.e.readFile(u)
	}}
}

func (e *Engine) registerFile(conn *sql.Conn) error {
	if err := duckdb.RegisterScalarUDF(conn, FileFunction, fileFunc{e}); err != nil {
		return fmt.Errorf("query: register %s: %w", FileFunction, err)
	}
	return nil
}

// readFile is loch_file's body.
func (e *Engine) readFile(u string) ([]byte, error) {
	if e.opts.Sandbox {
		return nil, fmt.Errorf("%s(%s): files cannot be read here: %w", FileFunction, quoteString(u), loch.ErrPermission)
	}
	if !strings.Contains(u, "://") && !filepath.IsAbs(u) && e.opts.FileBase != "" {
		u = filepath.Join(e.opts.FileBase, u)
	}
	ctx := e.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	b, err := storage.ReadURL(ctx, u, e.opts.FileOpts...)
	if err != nil {
		return nil, fmt.Errorf("%s(%s): %w", FileFunction, quoteString(u), err)
	}
	return b, nil
}
