package ingest

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// keyColumn holds the WebDataset key of each row.
const keyColumn = "__key__"

// WebDataset ingests WebDataset tar shards: local paths or URLs, each
// possibly a brace pattern (see ExpandBraces), plain or gzipped (.tar.gz,
// .tgz; detected by content). Following the WebDataset convention, the
// files of a shard whose paths agree up to the first dot of the file name
// form one row (they must be consecutive in the tar), and the rest of the
// name, the extension, names the column. Files without an extension and
// names starting with '.' are skipped.
//
// The key goes to the text column "__key__". The last part of an
// extension decides its column: jpg, jpeg, png, webp, gif, bmp, tif and tiff
// give image columns (stored as Options says), cls, cls2 and label class
// labels (int64, parsed from the file's text), txt and text text, json json,
// npy a tensor column of the array's dtype; any other extension a bytes
// column holding the file.
//
// A shard that loch export wrote starts with a member named
// WebDatasetMetaName holding a WebDatasetMeta: without Options.Schema, the
// columns are then the exported columns (names, kinds, dtypes, shapes,
// compression and class names as they were), their files are matched to
// them by name (<key>.<column>.<ext>), and there is no "__key__" column, so
// that export then ingest gives back the dataset's columns.
//
// Otherwise, without Options.Schema the columns are those of the first
// shard, which is read once more for that; an extension that first appears in a later shard
// is an error asking for a schema. With Options.Schema, the columns are
// matched to extensions by name and other extensions are ignored; a column
// is then filled by its type: images are decoded, text and json are
// checked, a numeric column takes an .npy file or a number (or JSON array)
// written as text.
func WebDataset(ctx context.Context, shards []string, url string, o Options) (Result, error) {
	var all []string
	for _, s := range shards {
		names, err := ExpandBraces(s)
		if err != nil {
			return Result{}, err
		}
		all = append(all, names...)
	}
	if len(all) == 0 {
		return Result{}, fmt.Errorf("%w: no shards", loch.ErrInvalidArgument)
	}
	return run(ctx, url, "webdataset", strings.Join(shards, " "), o, func(ctx context.Context, o *Options, ex *existing) (*plan, error) {
		p := &plan{rows: -1, bytes: 0}
		for _, s := range all {
			if err := checkLocal(s); err != nil {
				return nil, err
			}
			if n := sourceSize(s); n >= 0 && p.bytes >= 0 {
				p.bytes += n
			} else {
				p.bytes = -1
			}
		}
		var meta *WebDatasetMeta
		if o.Schema == nil {
			m, err := readWebDatasetMeta(ctx, all[0])
			if err != nil {
				return nil, err
			}
			meta = m
		}
		switch {
		case o.Schema != nil:
			p.schema, p.explicit = o.Schema.Clone(), true
		case meta != nil:
			p.schema, p.explicit = schema.Schema{Columns: meta.Columns}, true
		default:
			s, err := inferShard(ctx, all[0], o)
			if err != nil {
				return nil, err
			}
			p.schema = s
		}
		p.produce = func(ctx context.Context, final *schema.Schema, emit func(job[batch]) error) error {
			conv := newMemberConverter(final, o, p.explicit)
			conv.exported = meta != nil
			for _, shard := range all {
				err := readShard(ctx, shard, func(s *wdsSample) error {
					return emit(func(ctx context.Context) (batch, error) {
						b := batch{bytes: s.bytes}
						name := shard + ":" + s.key
						row, ignored, err := conv.row(s)
						b.ignored = ignored
						if err != nil {
							err = fmt.Errorf("%s: %w", name, err)
						}
						return b, b.add(row, err, name, o.SkipBad)
					})
				})
				if err != nil {
					return err
				}
			}
			return nil
		}
		return p, nil
	})
}

// wdsSample is the group of files of one row.
type wdsSample struct {
	key     string
	members []wdsMember
	bytes   int64 // bytes of the shard read for it
}

type wdsMember struct {
	ext  string
	data []byte
}

// readShard reads a tar shard and calls fn with each sample, in order.
func readShard(ctx context.Context, shard string, fn func(*wdsSample) error) error {
	r, err := openShard(ctx, shard)
	if err != nil {
		return err
	}
	defer r.close()
	var (
		cur  *wdsSample
		last int64 // the shard's offset when the previous sample was passed on
	)
	// pass hands cur to fn with the shard's bytes read since the previous
	// one. Bytes buffered ahead belong to the next sample; the total is
	// exact once the shard ends.
	pass := func(offset int64) error {
		s := cur
		s.bytes, last, cur = offset-last, offset, nil
		return fn(s)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		key, ext, data, err := r.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if cur != nil && cur.key != key {
			if err := pass(r.offset()); err != nil {
				return err
			}
		}
		if cur == nil {
			cur = &wdsSample{key: key}
		}
		if err := cur.add(ext, data); err != nil {
			return fmt.Errorf("read shard %s: %w", shard, err)
		}
	}
	size, err := r.drain()
	if err != nil || cur == nil {
		return err
	}
	return pass(size)
}

// add adds a file to the sample; a second file with the same extension is
// an error.
func (s *wdsSample) add(ext string, data []byte) error {
	for _, m := range s.members {
		if m.ext == ext {
			return base.Markf(ErrInvalidSource, "sample %q has two %q files", s.key, ext)
		}
	}
	s.members = append(s.members, wdsMember{ext: ext, data: data})
	return nil
}

// shardReader reads the member files of one tar shard, plain or gzipped,
// counting the shard's bytes.
type shardReader struct {
	shard   string
	tr      *tar.Reader
	counted *countingReader // the shard as read from its source
	buf     *bufio.Reader   // over counted, under tr (or its gzip reader)
	close   func()
}

// openShard opens a shard for reading; the caller calls close.
func openShard(ctx context.Context, shard string) (*shardReader, error) {
	rc, _, err := openSource(ctx, shard)
	if err != nil {
		return nil, err
	}
	r := &shardReader{shard: shard, counted: &countingReader{r: rc}, close: func() { rc.Close() }}
	r.buf = bufio.NewReaderSize(r.counted, 1<<20)
	if magic, _ := r.buf.Peek(2); !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		r.tr = tar.NewReader(r.buf)
		return r, nil
	}
	zr, err := gzip.NewReader(r.buf)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("read shard %s: %w: %v", shard, ErrInvalidSource, err)
	}
	r.tr = tar.NewReader(zr)
	r.close = func() { zr.Close(); rc.Close() }
	return r, nil
}

// next returns the next file that belongs to a sample: its sample key, its
// extension and its contents. Other entries (directories, links, hidden
// files, names without an extension) are skipped. At the end it returns
// io.EOF.
func (r *shardReader) next() (key, ext string, data []byte, err error) {
	for {
		hdr, err := r.tr.Next()
		if err == io.EOF {
			return "", "", nil, err
		}
		if err != nil {
			return "", "", nil, fmt.Errorf("read shard %s: %w: %v", r.shard, ErrInvalidSource, err)
		}
		if hdr.Typeflag != tar.TypeReg { // Next reports old-style regular files as TypeReg too
			continue
		}
		name := strings.TrimPrefix(hdr.Name, "./")
		key, ext, ok := sampleFile(name)
		if !ok {
			continue
		}
		data, err := io.ReadAll(r.tr)
		if err != nil {
			return "", "", nil, fmt.Errorf("read shard %s: %s: %w: %v", r.shard, name, ErrInvalidSource, err)
		}
		return key, ext, data, nil
	}
}

// sampleFile splits the path of a file in a shard into its sample key and
// extension: the path up to the first dot of the file name, and the rest.
// ok is false for files that belong to no sample: hidden ones (starting
// with '.') and those without an extension.
func sampleFile(name string) (key, ext string, ok bool) {
	dir, base := path.Split(name)
	dot := strings.IndexByte(base, '.')
	if strings.HasPrefix(base, ".") || dot < 0 || dot == len(base)-1 {
		return "", "", false
	}
	return dir + base[:dot], base[dot+1:], true
}

// offset returns the bytes of the shard consumed so far, not counting
// those read ahead into the buffer.
func (r *shardReader) offset() int64 { return r.counted.n - int64(r.buf.Buffered()) }

// drain reads the rest of the shard (the tar's trailing padding), so that
// the bytes of the samples add up to the shard's size, and returns that
// size.
func (r *shardReader) drain() (int64, error) {
	if _, err := io.Copy(io.Discard, r.buf); err != nil {
		return 0, fmt.Errorf("read shard %s: %w", r.shard, err)
	}
	return r.counted.n, nil
}

// extKind returns the kind of column an extension makes, by its last part.
func extKind(ext string) string {
	last := strings.ToLower(ext[strings.LastIndexByte(ext, '.')+1:])
	switch last {
	case "jpg", "jpeg", "png", "webp", "gif", "bmp", "tif", "tiff":
		return "image"
	case "cls", "cls2", "label":
		return "label"
	case "txt", "text":
		return "text"
	case "json":
		return "json"
	case "npy":
		return "npy"
	}
	if k := mediaKind("." + last); k != "" {
		return string(k) // "video" or "audio", kept as they are
	}
	return "bytes"
}

// inferShard reads the first shard and returns the schema of its
// extensions, in order of first appearance, after the key column.
func inferShard(ctx context.Context, shard string, o *Options) (schema.Schema, error) {
	s := schema.Schema{Columns: []schema.Column{{Name: keyColumn, Kind: schema.TextKind, DType: schema.Text}}}
	names := newFieldNames()
	if _, err := names.add(keyColumn); err != nil {
		return s, err
	}
	seen := map[string]bool{}
	err := readShard(ctx, shard, func(sample *wdsSample) error {
		for _, m := range sample.members {
			if seen[m.ext] {
				continue
			}
			seen[m.ext] = true
			name, err := names.add(m.ext)
			if err != nil {
				return fmt.Errorf("shard %s: %w", shard, err)
			}
			var c schema.Column
			switch extKind(m.ext) {
			case "image":
				c = o.imageColumn(name)
			case "video", "audio":
				c = MediaColumn(name, schema.SampleCompression(extKind(m.ext)))
			case "label":
				c = schema.Column{Name: name, Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{}}
			case "text":
				c = schema.Column{Name: name, Kind: schema.TextKind, DType: schema.Text}
			case "json":
				c = schema.Column{Name: name, Kind: schema.JSONKind, DType: schema.JSON}
			case "npy":
				h, err := readNPYHeader(bytes.NewReader(m.data))
				if err != nil {
					return fmt.Errorf("shard %s: %s.%s: %w", shard, sample.key, m.ext, err)
				}
				shape := make(schema.Shape, len(h.shape))
				for i := range shape {
					shape[i] = -1
				}
				c = schema.Column{Name: name, DType: h.dtype, Shape: shape}
				if h.dtype.Variable() {
					c.Shape = nil
				}
			default:
				c = schema.Column{Name: name, DType: schema.Bytes}
			}
			s.Columns = append(s.Columns, c)
		}
		return nil
	})
	if err != nil {
		return s, err
	}
	if len(s.Columns) == 1 {
		return s, fmt.Errorf("shard %s: %w: no files with an extension in it", shard, ErrInvalidSource)
	}
	return s, nil
}

// memberConverter turns WebDataset samples into rows of a schema.
type memberConverter struct {
	cols    map[string]*fieldColumn // by column name
	lenient bool                    // extensions without a column are ignored, not errors
	// exported says the shards come from loch export: the column of
	// extension "label.cls" is "label", its extension up to the last dot.
	exported bool
}

func newMemberConverter(s *schema.Schema, o *Options, lenient bool) *memberConverter {
	rc := newRecordConverter(s, o, "", lenient)
	return &memberConverter{cols: rc.cols, lenient: lenient}
}

func (mc *memberConverter) row(s *wdsSample) (loch.Row, []string, error) {
	row := make(loch.Row, len(s.members)+1)
	var ignored []string
	if _, ok := mc.cols[keyColumn]; ok {
		row[keyColumn] = loch.String(s.key)
	}
	for _, m := range s.members {
		name := columnName(m.ext)
		if i := strings.LastIndexByte(m.ext, '.'); mc.exported && i > 0 {
			name = m.ext[:i]
		}
		fc, ok := mc.cols[name]
		if !ok {
			if mc.lenient {
				ignored = append(ignored, m.ext)
				continue
			}
			return nil, nil, base.Markf(ErrInvalidSource, "extension %q has no column: the columns come from the first shard, pass a schema that names every extension", m.ext)
		}
		smp, err := fc.member(m)
		if err != nil {
			return nil, ignored, fmt.Errorf("%s.%s: %w", s.key, m.ext, err)
		}
		row[name] = smp
	}
	return row, ignored, nil
}

// member converts one file of a sample to a sample of the column.
func (fc *fieldColumn) member(m wdsMember) (loch.Sample, error) {
	c := fc.col
	var s loch.Sample
	switch {
	case fc.image != nil:
		return fc.image.convert(m.ext, m.data)
	case c.SampleCompression.Media():
		return mediaSample(m.ext, c.SampleCompression, m.data)
	case c.DType == schema.Text:
		s = loch.Bytes(m.data)
	case c.DType == schema.JSON:
		if !json.Valid(m.data) {
			return s, base.Markf(ErrInvalidSource, "not valid JSON")
		}
		s = loch.Bytes(m.data)
	case c.DType == schema.Bytes:
		s = loch.Bytes(m.data)
	case extKind(m.ext) == "npy":
		h, data, err := decodeNPY(m.data)
		if err != nil {
			return s, err
		}
		if h.dtype != c.DType {
			return s, base.Markf(ErrInvalidSource, ".npy of dtype %s for a %s column", h.dtype, c.DType)
		}
		s = loch.Sample{Shape: h.shape, Data: data}
	default:
		v := cellValue(strings.TrimSpace(string(m.data)))
		var err error
		if s, err = valueSample(c, fc.classes, v); err != nil {
			return s, err
		}
	}
	if !s.Null {
		if err := c.CheckSample(s.Shape, s.Data); err != nil {
			return loch.Sample{}, base.Markf(ErrInvalidSource, "%w", err)
		}
	}
	return s, nil
}

// WebDatasetMetaName is the name of the tar member, first in each shard
// that loch export writes, holding a WebDatasetMeta as JSON. The leading
// dot hides it from WebDataset readers, which skip such names.
const WebDatasetMetaName = ".loch.json"

// WebDatasetMetaFormat is the Format of the WebDatasetMeta this version
// writes and reads.
const WebDatasetMetaFormat = "loch-webdataset/1"

// WebDatasetMeta describes the columns of WebDataset shards written by
// loch export, so that ingesting them gives back the same columns.
type WebDatasetMeta struct {
	// Format is WebDatasetMetaFormat.
	Format string `json:"format"`
	// Version is the id of the exported version.
	Version string `json:"version,omitempty"`
	// Columns are the exported columns' definitions, without statistics or
	// uids, in export order. The files of column c are named
	// <key>.<c>.<ext>.
	Columns []schema.Column `json:"columns"`
}

// readWebDatasetMeta returns the WebDatasetMeta of a shard, or nil when
// its first member is not one. Only the first member is read.
func readWebDatasetMeta(ctx context.Context, shard string) (*WebDatasetMeta, error) {
	r, err := openShard(ctx, shard)
	if err != nil {
		return nil, err
	}
	defer r.close()
	hdr, err := r.tr.Next()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read shard %s: %w: %v", shard, ErrInvalidSource, err)
	}
	if strings.TrimPrefix(hdr.Name, "./") != WebDatasetMetaName || hdr.Typeflag != tar.TypeReg {
		return nil, nil
	}
	if hdr.Size > 1<<24 {
		return nil, base.Markf(ErrInvalidSource, "shard %s: %s of %d bytes is too large", shard, WebDatasetMetaName, hdr.Size)
	}
	data, err := io.ReadAll(r.tr)
	if err != nil {
		return nil, fmt.Errorf("read shard %s: %s: %w: %v", shard, WebDatasetMetaName, ErrInvalidSource, err)
	}
	var m WebDatasetMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, base.Markf(ErrInvalidSource, "shard %s: %s: %v", shard, WebDatasetMetaName, err)
	}
	if m.Format != WebDatasetMetaFormat {
		return nil, base.Markf(ErrInvalidSource, "shard %s: %s has format %q, want %q", shard, WebDatasetMetaName, m.Format, WebDatasetMetaFormat)
	}
	s := schema.Schema{Columns: m.Columns}
	for i := range s.Columns {
		s.Columns[i].UID = 0
	}
	if err := s.Normalize(); err != nil {
		return nil, base.Markf(ErrInvalidSource, "shard %s: %s: %w", shard, WebDatasetMetaName, err)
	}
	m.Columns = s.Columns
	return &m, nil
}
