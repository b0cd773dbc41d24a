package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// JSONL ingests a JSON lines file (a local path or a URL): one JSON object
// per line, one row per object; blank lines are skipped. Each field becomes
// a column named after it (characters a column name cannot hold become '_').
// Without Options.Schema the columns are inferred in a first pass over the
// file, in order of first appearance: a field whose values are all integers
// gives an int64 column, numbers float64, booleans bool, strings text,
// objects and arrays json, and a mix of these json; null or missing values
// are null samples. Options.ImageFields and Options.LinkFields make fields
// holding paths or URLs into image or link columns.
//
// With Options.Schema, or when appending (then the dataset's schema is
// used), inference is skipped and each value is converted to its column:
// numbers and (nested) arrays of numbers to any numeric dtype and shape,
// strings to the label of a class_label column, anything to text or json;
// fields without a column are ignored and listed in Result.Ignored.
func JSONL(ctx context.Context, file, url string, o Options) (Result, error) {
	return runRecords(ctx, file, url, "jsonl", o, jsonlFormat{})
}

// CSV ingests a CSV file with a header row (a local path or a URL), one row
// per record, like JSONL. Cells are typed by their text: empty cells are
// null, then integers, numbers, true/false, JSON objects and arrays, else
// strings; a column whose cells mix types is text. A UTF-8 byte order mark
// is ignored. Options.Delimiter sets the separator (e.g. '\t' for TSV).
func CSV(ctx context.Context, file, url string, o Options) (Result, error) {
	return runRecords(ctx, file, url, "csv", o, csvFormat{delim: o.Delimiter})
}

// rawRecord is one unparsed record of a source file.
type rawRecord struct {
	line  int64    // first line, 1-based
	data  []byte   // JSONL: the line
	cells []string // CSV: the cells
}

// recordFormat is a file format of records.
type recordFormat interface {
	// scan reads r and calls emit with consecutive records, at most max at
	// a time, and the number of bytes they took.
	scan(r io.Reader, max int, emit func(recs []rawRecord, bytes int64) error) error
	// fields parses one record. It is safe for concurrent use, once scan
	// has started emitting.
	fields(rec rawRecord) ([]field, error)
	// mixed is the type inferred for a field of mixed types.
	mixed() vkind
}

// jsonlFormat reads JSON lines.
type jsonlFormat struct{}

func (jsonlFormat) mixed() vkind { return vJSON }

func (jsonlFormat) scan(r io.Reader, max int, emit func([]rawRecord, int64) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var (
		recs  []rawRecord
		bytes int64
		size  int
		line  int64
	)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			line++
			bytes += int64(len(b))
			if t := trimSpace(b); len(t) > 0 {
				recs = append(recs, rawRecord{line: line, data: t})
				size += len(t)
			}
			if len(recs) >= max || size >= 1<<20 {
				if err := emit(recs, bytes); err != nil {
					return err
				}
				recs, bytes, size = nil, 0, 0
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if len(recs) > 0 || bytes > 0 {
		return emit(recs, bytes)
	}
	return nil
}

func trimSpace(b []byte) []byte { return bytes.TrimSpace(b) }

func (jsonlFormat) fields(rec rawRecord) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(rec.data))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, base.Markf(ErrInvalidSource, "line is not a JSON object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, base.Markf(ErrInvalidSource, "%v", err)
		}
		name := tok.(string) // object keys are strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, base.Markf(ErrInvalidSource, "field %q: %v", name, err)
		}
		v, err := jsonValue(raw)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
		if i := slices.IndexFunc(out, func(f field) bool { return f.name == name }); i >= 0 {
			out[i].v = v // the last of duplicate keys wins, as in most JSON readers
			continue
		}
		out = append(out, field{name: name, v: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, base.Markf(ErrInvalidSource, "%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, base.Markf(ErrInvalidSource, "data after the JSON object")
	}
	return out, nil
}

// csvFormat reads CSV with a header row. scan records the header for fields.
type csvFormat struct {
	delim  rune
	header *[]string
}

func (csvFormat) mixed() vkind { return vString }

func (f csvFormat) scan(r io.Reader, max int, emit func([]rawRecord, int64) error) error {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.Comma = f.delim
	header, err := cr.Read()
	if err == io.EOF {
		return base.Markf(ErrInvalidSource, "no header row")
	}
	if err != nil {
		return base.Markf(ErrInvalidSource, "%v", err)
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff")
	for i, h := range header {
		if slices.Contains(header[:i], h) {
			return base.Markf(ErrInvalidSource, "header names column %q twice", h)
		}
	}
	*f.header = header
	var (
		recs []rawRecord
		last = cr.InputOffset()
	)
	for {
		cells, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return base.Markf(ErrInvalidSource, "%v", err)
		}
		line, _ := cr.FieldPos(0)
		recs = append(recs, rawRecord{line: int64(line), cells: cells})
		if len(recs) >= max || cr.InputOffset()-last >= 1<<20 {
			if err := emit(recs, cr.InputOffset()-last); err != nil {
				return err
			}
			recs, last = nil, cr.InputOffset()
		}
	}
	if len(recs) > 0 {
		return emit(recs, cr.InputOffset()-last)
	}
	return nil
}

func (f csvFormat) fields(rec rawRecord) ([]field, error) {
	header := *f.header
	out := make([]field, len(header))
	for i, h := range header {
		out[i] = field{name: h, v: cellValue(rec.cells[i])}
	}
	return out, nil
}

func runRecords(ctx context.Context, file, url, format string, o Options, rf recordFormat) (Result, error) {
	if cf, ok := rf.(csvFormat); ok {
		cf.header = new([]string)
		if cf.delim == 0 {
			cf.delim = ','
		}
		rf = cf
	}
	src := &sourceFile{ref: file}
	return run(ctx, url, format, file, o, func(ctx context.Context, o *Options, ex *existing) (*plan, error) {
		if err := checkLocal(file); err != nil {
			return nil, err
		}
		p := &plan{rows: -1, bytes: sourceSize(file)}
		names := newFieldNames()
		switch {
		case o.Schema != nil:
			p.schema, p.explicit = o.Schema.Clone(), true
		case ex != nil:
			p.schema = ex.schema.Clone()
		default:
			s, rows, err := inferRecords(ctx, src, rf, names, o)
			if err != nil {
				return nil, err
			}
			p.schema, p.rows = s, rows
		}
		if err := checkFieldKinds(&p.schema, o); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		perJob := 256
		if len(o.ImageFields) > 0 || len(o.MediaFields) > 0 || hasKind(&p.schema, schema.Image) {
			perJob = 1
		}
		p.produce = func(ctx context.Context, final *schema.Schema, emit func(job[batch]) error) error {
			conv := newRecordConverter(final, o, dirOf(file), p.explicit || ex != nil)
			r, err := src.open(ctx)
			if err != nil {
				return err
			}
			defer r.Close()
			err = rf.scan(r, perJob, func(recs []rawRecord, n int64) error {
				return emit(func(ctx context.Context) (batch, error) {
					b := batch{bytes: n}
					for _, rec := range recs {
						name := fmt.Sprintf("%s:%d", file, rec.line)
						fields, err := rf.fields(rec)
						if err != nil {
							return b, fmt.Errorf("%s: %w", name, err)
						}
						row, ignored, err := conv.row(ctx, fields)
						b.ignored = append(b.ignored, ignored...)
						if err != nil {
							err = fmt.Errorf("%s: %w", name, err)
						}
						if err := b.add(row, err, name, o.SkipBad); err != nil {
							return b, err
						}
					}
					return b, nil
				})
			})
			if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				return fmt.Errorf("read %s: %w", file, err)
			}
			return err
		}
		return p, nil
	})
}

func hasKind(s *schema.Schema, k schema.Kind) bool {
	return slices.ContainsFunc(s.Columns, func(c schema.Column) bool { return c.Kind == k })
}

// checkFieldKinds checks that the fields named image or link fields have
// columns of that kind.
func checkFieldKinds(s *schema.Schema, o *Options) error {
	for _, want := range []struct {
		fields []string
		kind   schema.Kind
	}{{o.ImageFields, schema.Image}, {o.LinkFields, schema.Link}, {o.mediaFields(schema.VideoCompression), schema.Video}, {o.mediaFields(schema.AudioCompression), schema.Audio}} {
		for _, f := range want.fields {
			c, ok := s.Column(columnName(f))
			if !ok {
				return base.Markf(ErrInvalidSource, "no field %q in the source or column %q in the schema", f, columnName(f))
			}
			if c.Kind != want.kind {
				return fmt.Errorf("%w: field %q is to be %s, but column %q is %s", ErrIncompatible, f, want.kind, c.Name, c.Kind)
			}
		}
	}
	return nil
}

// inferRecords reads the whole source once, in parallel, and returns the
// schema its fields imply, and its number of records.
func inferRecords(ctx context.Context, src *sourceFile, rf recordFormat, names *fieldNames, o *Options) (schema.Schema, int64, error) {
	type seen struct {
		order []string
		kinds map[string]kindSet
		rows  int64
	}
	total := seen{kinds: map[string]kindSet{}}
	produce := func(ctx context.Context, emit func(job[seen]) error) error {
		r, err := src.open(ctx)
		if err != nil {
			return err
		}
		defer r.Close()
		err = rf.scan(r, 1024, func(recs []rawRecord, _ int64) error {
			return emit(func(ctx context.Context) (seen, error) {
				s := seen{kinds: map[string]kindSet{}, rows: int64(len(recs))}
				for _, rec := range recs {
					fields, err := rf.fields(rec)
					if err != nil {
						return s, fmt.Errorf("%s:%d: %w", src.ref, rec.line, err)
					}
					for _, f := range fields {
						k, ok := s.kinds[f.name]
						if !ok {
							s.order = append(s.order, f.name)
						}
						s.kinds[f.name] = k.with(f.v.kind)
					}
				}
				return s, nil
			})
		})
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("read %s: %w", src.ref, err)
		}
		return err
	}
	consume := func(s seen) error {
		total.rows += s.rows
		for _, name := range s.order {
			k, ok := total.kinds[name]
			if !ok {
				total.order = append(total.order, name)
			}
			total.kinds[name] = k | s.kinds[name]
		}
		return nil
	}
	if err := ordered(ctx, o.Parallelism, produce, consume); err != nil {
		return schema.Schema{}, 0, err
	}
	if len(total.order) == 0 {
		return schema.Schema{}, 0, fmt.Errorf("%s: %w: no records", src.ref, ErrInvalidSource)
	}
	for _, f := range slices.Concat(o.ImageFields, o.LinkFields, o.mediaFields("")) {
		if _, ok := total.kinds[f]; !ok {
			return schema.Schema{}, 0, fmt.Errorf("%s: %w: no field %q in any record", src.ref, ErrInvalidSource, f)
		}
	}
	var s schema.Schema
	for _, name := range total.order {
		col, err := names.add(name)
		if err != nil {
			return schema.Schema{}, 0, fmt.Errorf("%s: %w", src.ref, err)
		}
		switch {
		case slices.Contains(o.ImageFields, name):
			s.Columns = append(s.Columns, o.imageColumn(col))
		case o.MediaFields[name] != "":
			s.Columns = append(s.Columns, MediaColumn(col, o.MediaFields[name]))
		case slices.Contains(o.LinkFields, name):
			s.Columns = append(s.Columns, schema.Column{Name: col, Kind: schema.Link, DType: schema.Text})
		default:
			s.Columns = append(s.Columns, inferredColumn(col, total.kinds[name].infer(rf.mixed())))
		}
	}
	return s, total.rows, nil
}

// recordConverter turns the fields of a record into a row of a schema.
type recordConverter struct {
	cols    map[string]*fieldColumn // by column name
	base    string                  // directory of the source, for image paths
	skipBad bool
	strict  bool // a field without a column is an error, not ignored
}

type fieldColumn struct {
	col     *schema.Column
	classes map[string]int64
	image   *imageConverter
}

func newRecordConverter(s *schema.Schema, o *Options, base string, lenient bool) *recordConverter {
	rc := &recordConverter{cols: map[string]*fieldColumn{}, base: base, skipBad: o.SkipBad, strict: !lenient}
	for i := range s.Columns {
		c := &s.Columns[i]
		fc := &fieldColumn{col: c, classes: classIndex(c)}
		if c.Kind == schema.Image {
			fc.image = newImageConverter(c, o)
		}
		rc.cols[c.Name] = fc
	}
	return rc
}

// row converts fields. Fields without a column are returned in ignored.
func (rc *recordConverter) row(ctx context.Context, fields []field) (row loch.Row, ignored []string, err error) {
	row = make(loch.Row, len(fields))
	for _, f := range fields {
		name := columnName(f.name)
		fc, ok := rc.cols[name]
		if !ok {
			if rc.strict {
				return nil, nil, base.Markf(ErrInvalidSource, "field %q has no column (it was not in the first pass)", f.name)
			}
			ignored = append(ignored, f.name)
			continue
		}
		s, err := fc.sample(ctx, rc.base, f.v)
		if err != nil {
			return nil, ignored, fmt.Errorf("field %q: %w", f.name, err)
		}
		row[name] = s
	}
	return row, ignored, nil
}

// sample converts one value to a sample of the column, and validates it.
func (fc *fieldColumn) sample(ctx context.Context, dir string, v value) (loch.Sample, error) {
	c := fc.col
	if fc.image != nil && v.kind != vNull {
		if v.kind != vString {
			return loch.Sample{}, base.Markf(ErrInvalidSource, "image field holds %s, want a path or URL", v.raw)
		}
		ref := resolve(dir, v.str)
		data, err := readAll(ctx, ref)
		if err != nil {
			return loch.Sample{}, err
		}
		return fc.image.convert(ref, data)
	}
	if c.SampleCompression.Media() && v.kind != vNull {
		if v.kind != vString {
			return loch.Sample{}, base.Markf(ErrInvalidSource, "%s field holds %s, want a path or URL", c.SampleCompression, v.raw)
		}
		return ReadMedia(ctx, dir, v.str, c.SampleCompression)
	}
	s, err := valueSample(c, fc.classes, v)
	if err != nil {
		return loch.Sample{}, err
	}
	if !s.Null {
		if err := c.CheckSample(s.Shape, s.Data); err != nil {
			return loch.Sample{}, base.Markf(ErrInvalidSource, "%w", err)
		}
	}
	return s, nil
}
