package sqlcat

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
)

// IngestOptions configure SourceSchema and Stage: an ingest of a query's
// result (a Parquet file through ParquetSource) into a dataset.
type IngestOptions struct {
	// ImageFields are result columns holding image bytes (loch_file of a
	// path), stored as image columns; LinkFields hold paths or URLs,
	// stored as link columns.
	ImageFields, LinkFields []string
	// ImageCompression is how new image columns store images: png (the
	// default) or jpeg per sample, or lz4, zstd, none (decoded pixels).
	ImageCompression string
	// FileBase is the directory loch_file resolves relative paths against.
	FileBase string
	// Threads is DuckDB's number of threads (0: GOMAXPROCS).
	Threads int
}

// ParquetSource is the query that reads a Parquet file (a path or URL
// DuckDB reads) with each image field's path replaced by the file's bytes
// (loch_file).
func ParquetSource(file string, imageFields []string) string {
	src := fmt.Sprintf("read_parquet(%s)", quoteString(file))
	if len(imageFields) == 0 {
		return "SELECT * FROM " + src
	}
	var rep []string
	for _, f := range imageFields {
		rep = append(rep, fmt.Sprintf("%s(%s) AS %s", query.FileFunction, quoteIdent(f), quoteIdent(f)))
	}
	return fmt.Sprintf("SELECT * REPLACE (%s) FROM %s", strings.Join(rep, ", "), src)
}

func quoteString(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// SourceSchema is the schema a new dataset gets for source's result: each
// column's DuckDB type mapped as CREATE TABLE maps it (docs/sql.md §2),
// image fields as images and link fields as links. Columns of types loch
// cannot store are an error naming them.
func SourceSchema(ctx context.Context, source string, o IngestOptions) (schema.Schema, error) {
	var s schema.Schema
	e, err := query.New(ctx, nil, query.Options{Threads: o.Threads, FileBase: o.FileBase})
	if err != nil {
		return s, err
	}
	defer e.Close()
	rows, closeRows, err := e.Rows(ctx, fmt.Sprintf("SELECT * FROM (%s) LIMIT 0", source))
	if err != nil {
		return s, err
	}
	types, err := rows.ColumnTypes()
	closeRows()
	if err != nil {
		return s, fmt.Errorf("sql: %w", err)
	}
	for _, f := range append(slices.Clone(o.ImageFields), o.LinkFields...) {
		if !hasColumn(types, f) {
			return s, fmt.Errorf("sql: no field %q in the source (have %s): %w", f, strings.Join(typeNames(types), ", "), loch.ErrInvalidArgument)
		}
	}
	for _, t := range types {
		typ := t.DatabaseTypeName()
		switch {
		case slices.Contains(o.ImageFields, t.Name()):
			typ = "IMAGE"
			if o.ImageCompression != "" {
				typ = fmt.Sprintf("IMAGE(%s)", quoteString(o.ImageCompression))
			}
		case slices.Contains(o.LinkFields, t.Name()):
			typ = "LINK"
		}
		p, err := newParser(typ)
		if err != nil {
			return s, err
		}
		p.inferring = true
		col, err := p.parseType(t.Name())
		if err != nil {
			return s, err
		}
		s.Columns = append(s.Columns, col)
	}
	if err := s.Normalize(); err != nil {
		return s, err
	}
	return s, nil
}

func hasColumn[T interface{ Name() string }](types []T, name string) bool {
	return slices.ContainsFunc(types, func(t T) bool { return t.Name() == name })
}

func typeNames[T interface{ Name() string }](types []T) []string {
	out := make([]string, len(types))
	for i, t := range types {
		out[i] = t.Name()
	}
	return out
}

// Stage runs source and stages its rows on d (it does not commit): each
// result column goes to d's column of that name, d's other columns are
// null, and result columns d has no column for are returned in ignored,
// sorted. On an error, which names the source row and column, what was
// staged is left for the caller to discard (close d without committing).
func Stage(ctx context.Context, d *loch.Dataset, source string, o IngestOptions) (rows int64, ignored []string, err error) {
	e, err := query.New(ctx, nil, query.Options{Threads: o.Threads, FileBase: o.FileBase})
	if err != nil {
		return 0, nil, err
	}
	defer e.Close()
	rs, closeRows, err := e.Rows(ctx, fmt.Sprintf("SELECT * FROM (%s) LIMIT 0", source))
	if err != nil {
		return 0, nil, err
	}
	names, err := rs.Columns()
	closeRows()
	if err != nil {
		return 0, nil, fmt.Errorf("sql: %w", err)
	}
	sch := d.Schema()
	var targets []*schema.Column
	var list []string
	for _, n := range names {
		c, ok := sch.Column(n)
		if !ok {
			ignored = append(ignored, n)
			continue
		}
		targets = append(targets, c)
		list = append(list, quoteIdent(n))
	}
	slices.Sort(ignored)
	if len(targets) == 0 {
		return 0, ignored, fmt.Errorf("ingest into %s: no source column is a dataset column (source: %s; dataset: %s): %w",
			d.URL(), strings.Join(names, ", "), strings.Join(sch.Names(), ", "), loch.ErrInvalidArgument)
	}
	n, err := stage(ctx, e, d.URL(), d, targets, fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(list, ", "), source))
	return n, ignored, err
}
