package sqlcat

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
)

// copyOut runs COPY (query) TO 'file' [(FORMAT csv|json|parquet)]: the
// one statement of loch sql that writes a file, offered on purpose. The
// query runs as any read does (query.Engine.Write: reads only) and loch
// writes its result to the file, a relative path taken from FileBase; the
// format is FORMAT's, else the file's extension's (.json, .parquet), else
// csv. DuckDB's own COPY (of a table, FROM a file, with other options)
// is not run: a file that fails is removed.
func (s *Session) copyOut(ctx context.Context, p *parser) (Result, error) {
	p.next() // COPY
	usage := "loch sql's COPY is COPY (query) TO 'file' [(FORMAT csv|json|parquet)]"
	open := p.peek()
	if !open.is("(") {
		return Result{}, p.errorf("%s", usage)
	}
	p.group()
	q := strings.TrimSpace(p.src[open.end:p.toks[p.i-1].pos])
	if err := p.expect("to"); err != nil {
		return Result{}, err
	}
	file := p.next()
	if file.kind != tokString {
		p.i--
		return Result{}, p.errorf("%s: want a 'file'", usage)
	}
	format := formatOf(file.text)
	if p.accept("(") {
		if !p.accept("format") {
			return Result{}, p.errorf("%s: only FORMAT is taken", usage)
		}
		f := p.next()
		format = strings.ToLower(f.text)
		if err := p.expect(")"); err != nil {
			return Result{}, err
		}
	}
	if err := p.end(); err != nil {
		return Result{}, err
	}
	switch format {
	case query.FormatCSV, query.FormatJSON, query.FormatParquet:
	default:
		return Result{}, fmt.Errorf("sql: COPY: FORMAT %s: want csv, json or parquet: %w", format, loch.ErrInvalidArgument)
	}
	path := file.text
	if !filepath.IsAbs(path) && s.FileBase != "" {
		path = filepath.Join(s.FileBase, path)
	}
	e, done, err := s.engine(ctx, q, "", nil)
	if err != nil {
		return Result{}, err
	}
	defer done()
	f, err := os.Create(path)
	if err != nil {
		return Result{}, fmt.Errorf("sql: COPY: %w", err)
	}
	n, err := e.Write(ctx, q, format, 0, f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("sql: COPY: %w", cerr)
	}
	if err != nil {
		os.Remove(path)
		return Result{}, err
	}
	return Result{Statement: "COPY", Rows: n, File: file.text}, nil
}

// formatOf is the format COPY writes a file in by its extension.
func formatOf(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".parquet":
		return query.FormatParquet
	case ".json", ".jsonl", ".ndjson":
		return query.FormatJSON
	}
	return query.FormatCSV
}
