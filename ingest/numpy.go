package ingest

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// NPY ingests numpy .npy files (local paths or URLs), one column per file,
// named after the file without its extension. The first axis of every array
// is the row axis: row i of the dataset holds arr[i] of each array, with
// the array's dtype and per-row shape arr.shape[1:]. All arrays must have
// the same length. Supported dtypes: bool, int8..int64, uint8..uint64,
// float16, float32, float64 (either byte order), and one-dimensional
// unicode ('U', stored as text) and byte-string ('S', stored as bytes,
// trailing NULs removed) arrays. Fortran-order arrays are read whole into
// memory and transposed; C-order arrays are streamed.
func NPY(ctx context.Context, files []string, url string, o Options) (Result, error) {
	if len(files) == 0 {
		return Result{}, base.Markf(loch.ErrInvalidArgument, "no .npy files")
	}
	var srcs []arraySource
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(filepath.ToSlash(f)), ".npy")
		srcs = append(srcs, arraySource{name: name, where: f, open: (&sourceFile{ref: f}).open})
	}
	return runArrays(ctx, url, "npy", strings.Join(files, " "), o, func(context.Context) ([]arraySource, func(), error) {
		return srcs, func() {}, nil
	})
}

// NPZ ingests the arrays of a numpy .npz archive (np.savez or
// np.savez_compressed; a local path or a URL), one column per array, named
// after it, as NPY does for .npy files.
func NPZ(ctx context.Context, file, url string, o Options) (Result, error) {
	return runArrays(ctx, url, "npz", file, o, func(ctx context.Context) ([]arraySource, func(), error) {
		var (
			zr    *zip.Reader
			close = func() {}
		)
		if isURL(file) {
			data, err := readAll(ctx, file)
			if err != nil {
				return nil, nil, err
			}
			if zr, err = zip.NewReader(bytes.NewReader(data), int64(len(data))); err != nil {
				return nil, nil, fmt.Errorf("%s: %w: not a .npz (zip) archive: %v", file, ErrInvalidSource, err)
			}
		} else {
			rc, err := zip.OpenReader(file)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w: not a .npz (zip) archive: %v", file, ErrInvalidSource, plainPathError(err))
			}
			zr, close = &rc.Reader, func() { rc.Close() }
		}
		var srcs []arraySource
		for _, f := range zr.File {
			if strings.HasSuffix(f.Name, "/") {
				continue
			}
			if !strings.HasSuffix(f.Name, ".npy") {
				close()
				return nil, nil, fmt.Errorf("%s: %w: entry %q is not a .npy array", file, ErrInvalidSource, f.Name)
			}
			srcs = append(srcs, arraySource{
				name:  strings.TrimSuffix(f.Name, ".npy"),
				where: file + ":" + f.Name,
				open:  func(context.Context) (io.ReadCloser, error) { return f.Open() },
			})
		}
		if len(srcs) == 0 {
			close()
			return nil, nil, fmt.Errorf("%s: %w: no arrays in the archive", file, ErrInvalidSource)
		}
		return srcs, close, nil
	})
}

// arraySource is one array of an ingest.
type arraySource struct {
	name  string // array name, before it is made a column name
	where string // for messages
	open  func(ctx context.Context) (io.ReadCloser, error)
}

// openArrays opens every source and reads its header.
func openArrays(ctx context.Context, srcs []arraySource) (arrs []*npyArray, closeAll func(), err error) {
	var closers []io.Closer
	closeAll = func() {
		for _, c := range closers {
			c.Close()
		}
	}
	for _, s := range srcs {
		r, err := s.open(ctx)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, r)
		a, err := newNPYArray(r)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("%s: %w", s.where, err)
		}
		arrs = append(arrs, a)
	}
	return arrs, closeAll, nil
}

// runArrays ingests the arrays that list returns (with a function that
// releases what it holds), one column per array.
func runArrays(ctx context.Context, url, format, source string, o Options, list func(context.Context) ([]arraySource, func(), error)) (Result, error) {
	return run(ctx, url, format, source, o, func(ctx context.Context, o *Options, _ *existing) (*plan, error) {
		srcs, closeList, err := list(ctx)
		if err != nil {
			return nil, err
		}
		p, err := planArrays(ctx, srcs)
		if err != nil {
			closeList()
			return nil, err
		}
		p.close = closeList
		return p, nil
	})
}

// planArrays reads the headers of the arrays: one column each, and rows
// read in batches of about 1 MiB.
func planArrays(ctx context.Context, srcs []arraySource) (*plan, error) {
	arrs, closeArrs, err := openArrays(ctx, srcs)
	if err != nil {
		return nil, err
	}
	closeArrs() // headers only: produce opens them again
	p := &plan{}
	names := newFieldNames()
	var rowBytes int64
	for i, a := range arrs {
		col, err := names.add(srcs[i].name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", srcs[i].where, err)
		}
		p.schema.Columns = append(p.schema.Columns, a.column(col))
		rowBytes += int64(a.hdr.rowBytes())
	}
	rows := arrs[0].rows
	for _, a := range arrs[1:] {
		if a.rows != rows {
			var lens []string
			for i, a := range arrs {
				lens = append(lens, fmt.Sprintf("%s has %d", srcs[i].where, a.rows))
			}
			return nil, base.Markf(ErrInvalidSource, "arrays differ in their first dimension (rows): %s", strings.Join(lens, ", "))
		}
	}
	p.rows, p.bytes = int64(rows), int64(rows)*rowBytes
	per := 4096
	if rowBytes > 0 {
		per = max(1, min(per, int((1<<20)/rowBytes)))
	}
	p.produce = func(ctx context.Context, final *schema.Schema, emit func(job[batch]) error) error {
		arrs, closeArrs, err := openArrays(ctx, srcs)
		if err != nil {
			return err
		}
		defer closeArrs()
		cols := p.schema.Names()
		for k, a := range arrs {
			c, _ := final.Column(cols[k])
			if !a.hdr.dtype.Variable() {
				if err := c.CheckSample(a.hdr.shape[1:], nil); err != nil {
					return fmt.Errorf("%s: %w: %w", srcs[k].where, ErrIncompatible, err)
				}
			}
		}
		for start := 0; start < rows; start += per {
			n := min(per, rows-start)
			data := make([][][]byte, len(arrs))
			for k, a := range arrs {
				if data[k], err = a.readRows(n); err != nil {
					return fmt.Errorf("%s: %w", srcs[k].where, err)
				}
			}
			err := emit(func(ctx context.Context) (batch, error) {
				return arrayRows(arrs, cols, data, n, rowBytes), nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	return p, nil
}

// arrayRows makes the batch of n rows whose samples of array k (column
// cols[k]) are data[k].
func arrayRows(arrs []*npyArray, cols []string, data [][][]byte, n int, rowBytes int64) batch {
	b := batch{rows: make([]loch.Row, n), nrows: int64(n), bytes: int64(n) * rowBytes}
	for i := range n {
		row := make(loch.Row, len(arrs))
		for k, a := range arrs {
			shape := a.hdr.shape[1:]
			if a.hdr.dtype.Variable() {
				shape = []int{len(data[k][i])}
			}
			row[cols[k]] = loch.Sample{Shape: shape, Data: data[k][i]}
			b.size += int64(len(data[k][i]))
		}
		b.rows[i] = row
	}
	return b
}
