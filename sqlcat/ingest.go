package sqlcat

import (
	"context"
	"errors"
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
	// Fields converts the named result columns in Go instead of as SQL
	// values: each value (as DuckDB gives it; never nil: null stays null)
	// becomes a sample through its Convert, and a new dataset gets its
	// Column (loch ingest parquet's media fields: a path, read and probed).
	Fields map[string]Field
	// Skip reports whether a Field's Convert error skips the row (Stage
	// lists it in Skipped) rather than failing the ingest. Nil: never.
	Skip func(error) bool
}

// Field is a result column converted in Go (IngestOptions.Fields).
type Field struct {
	// Column is the dataset column a new dataset gets (its name is the
	// field's).
	Column schema.Column
	// Convert makes the sample of a non-null value. Its error is reported
	// naming the source row and column.
	Convert func(v any) (loch.Sample, error)
}

// IngestResult is what Stage did.
type IngestResult struct {
	// Rows is the number of rows staged.
	Rows int64
	// Ignored lists, sorted, the result columns the dataset has no column
	// for.
	Ignored []string
	// Skipped are the rows skipped by IngestOptions.Skip, in order.
	Skipped []SkippedRow
	// ByColumns says the rows were staged column by column from DuckDB's
	// streaming result (every column stored as it is, no Field), not
	// converted one value at a time.
	ByColumns bool
}

// SkippedRow is a source row that IngestOptions.Skip skipped.
type SkippedRow struct {
	Row int64 // 1-based, in the source's order
	Err error // Convert's error
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
	cols, err := e.ResultColumns(ctx, source)
	if err != nil {
		return s, err
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	fields := append(slices.Clone(o.ImageFields), o.LinkFields...)
	for f := range o.Fields {
		fields = append(fields, f)
	}
	for _, f := range fields {
		if !slices.Contains(names, f) {
			return s, fmt.Errorf("sql: no field %q in the source (have %s): %w", f, strings.Join(names, ", "), loch.ErrInvalidArgument)
		}
	}
	for _, c := range cols {
		var typ string // loch's type of an image or link field
		switch f, ok := o.Fields[c.Name]; {
		case ok:
			col := f.Column
			col.Name = c.Name
			s.Columns = append(s.Columns, col)
			continue
		case slices.Contains(o.ImageFields, c.Name):
			typ = "IMAGE"
			if o.ImageCompression != "" {
				typ = fmt.Sprintf("IMAGE(%s)", quoteString(o.ImageCompression))
			}
		case slices.Contains(o.LinkFields, c.Name):
			typ = "LINK"
		default:
			col, err := stored(c)
			if err != nil {
				return s, err
			}
			s.Columns = append(s.Columns, col)
			continue
		}
		p, err := newParser(typ)
		if err != nil {
			return s, err
		}
		col, err := p.parseType(c.Name)
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

// Stage runs source and stages its rows on d (it does not commit): each
// result column goes to d's column of that name (through o.Fields' Convert
// where it names one), d's other columns are null, and result columns d
// has no column for are listed in the result's Ignored. On an error, which
// names the source row and column, what was staged is left for the caller
// to discard (close d without committing).
func Stage(ctx context.Context, d *loch.Dataset, source string, o IngestOptions) (IngestResult, error) {
	var res IngestResult
	e, err := query.New(ctx, nil, query.Options{Threads: o.Threads, FileBase: o.FileBase})
	if err != nil {
		return res, err
	}
	defer e.Close()
	rs, closeRows, err := e.Rows(ctx, fmt.Sprintf("SELECT * FROM (%s) LIMIT 0", source))
	if err != nil {
		return res, err
	}
	names, err := rs.Columns()
	closeRows()
	if err != nil {
		return res, fmt.Errorf("sql: %w", err)
	}
	sch := d.Schema()
	var targets []*schema.Column
	var list []string
	h := &stageHooks{skip: o.Skip}
	for _, n := range names {
		c, ok := sch.Column(n)
		if !ok {
			res.Ignored = append(res.Ignored, n)
			continue
		}
		targets = append(targets, c)
		list = append(list, quoteIdent(n))
		var conv func(any) (loch.Sample, error)
		if f, ok := o.Fields[n]; ok {
			conv = f.Convert
		}
		h.convert = append(h.convert, conv)
	}
	slices.Sort(res.Ignored)
	if len(targets) == 0 {
		return res, fmt.Errorf("ingest into %s: no source column is a dataset column (source: %s; dataset: %s): %w",
			d.URL(), strings.Join(names, ", "), strings.Join(sch.Names(), ", "), loch.ErrInvalidArgument)
	}
	sel := fmt.Sprintf("SELECT %s FROM (%s)", strings.Join(list, ", "), source)
	if byColumns && !slices.ContainsFunc(h.convert, func(f func(any) (loch.Sample, error)) bool { return f != nil }) {
		res.Rows, err = stageColumns(ctx, e, d.URL(), d, targets, sel)
		if res.ByColumns = !errors.Is(err, errNotColumnar); res.ByColumns {
			return res, err
		}
	}
	res.Rows, err = stage(ctx, e, d.URL(), d, targets, sel, h, nil)
	res.Skipped = h.skipped
	return res, err
}

// byColumns turns stageColumns on; tests turn it off to compare with
// stage.
var byColumns = true

// errNotColumnar is stageColumns' error when the source's columns are
// not all of the targets' dtypes, stored as they are: nothing is staged,
// and stage converts the rows one by one.
var errNotColumnar = errors.New("sql: not a columnar source")

// stageColumns stages the rows of source (its columns the targets', in
// order) on d through DuckDB's streaming result, a chunk of rows at a
// time column by column (Dataset.ExtendColumns), when each source column
// has its target's dtype and the target stores numbers (scalars), text,
// json or bytes as they are; else errNotColumnar, having staged nothing.
// The rows staged are what stage stages of the same source; an invalid
// sample is reported naming its source row as stage names it.
func stageColumns(ctx context.Context, e *query.Engine, name string, d *loch.Dataset, targets []*schema.Column, source string) (int64, error) {
	cols := make([]loch.ColumnData, len(targets))
	check := func(src []query.StreamColumn) error {
		if len(src) != len(targets) {
			return errNotColumnar
		}
		for i, c := range targets {
			if src[i].DType != c.DType || !storedAsIs(c) {
				return errNotColumnar
			}
			cols[i].Name = c.Name
		}
		return nil
	}
	var n int64
	var bad error // a batch's, named as stage names it
	err := e.Stream(ctx, source, check, func(b *query.Batch) error {
		for i := range cols {
			b.Column(i, &cols[i])
		}
		if err := d.ExtendColumns(ctx, b.Len(), cols); err != nil {
			var se *loch.SampleError
			if errors.As(err, &se) {
				bad = rowError("insert into", name, n+int64(se.Row)+1, se.Err)
			} else {
				bad = fmt.Errorf("insert into %s (nothing written): rows %d to %d: %w", name, n+1, n+int64(b.Len()), err)
			}
			return bad
		}
		n += int64(b.Len())
		return nil
	})
	switch {
	case bad != nil:
		return n, bad
	case errors.Is(err, errNotColumnar), errors.Is(err, query.ErrNotColumnar):
		return 0, errNotColumnar
	case err != nil:
		return n, fmt.Errorf("insert into %s (nothing written): %s: %w", name, oneLine(err), loch.ErrInvalidArgument)
	}
	return n, nil
}

// storedAsIs reports whether column c takes DuckDB's values as they are
// (loch.Dataset.ExtendColumns): scalars, text, json or bytes of a plain
// kind, without sample compression.
func storedAsIs(c *schema.Column) bool {
	switch c.Kind {
	case schema.Generic, schema.ClassLabel, schema.TextKind, schema.JSONKind:
	default:
		return false
	}
	return c.SampleCompression == schema.SampleNone && (c.DType.Variable() || len(c.Shape) == 0)
}
