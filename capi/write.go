package main

/*
#include "loch.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// unsafeSlice views n elements of C memory at p as a slice (nil for n 0).
func unsafeSlice[T any](p *T, n int) []T {
	if n <= 0 || p == nil {
		return nil
	}
	return unsafe.Slice(p, n)
}

// rowsOf turns n rows of columns, given column by column, into loch rows.
// The samples alias the caller's memory, which loch copies before Extend
// returns.
func rowsOf(ds *dataset, n int, cols []C.loch_column_in) ([]loch.Row, error) {
	if n < 0 {
		return nil, invalidf("%d rows", n)
	}
	sch := ds.d.Schema()
	rows := make([]loch.Row, n)
	for i := range rows {
		rows[i] = make(loch.Row, len(cols))
	}
	for _, in := range cols {
		name := goString(in.name)
		col, ok := sch.Column(name)
		if !ok {
			// Columns added but not committed are not in the schema: let
			// loch check the name and the samples.
			col = nil
		}
		if col != nil && in.dtype != 0 && schema.DType(in.dtype) != col.DType {
			return nil, invalidf("column %q holds %s, got %s data", name, col.DType, schema.DType(in.dtype))
		}
		samples, err := samplesOf(name, n, in)
		if err != nil {
			return nil, err
		}
		for i, s := range samples {
			rows[i][name] = s
		}
	}
	return rows, nil
}

// samplesOf splits one column's input into n samples, by its layout
// (LOCH_NULLS, LOCH_DENSE or LOCH_PACKED), then applies its null marks.
func samplesOf(name string, n int, in C.loch_column_in) ([]loch.Sample, error) {
	ndim := int(in.ndim)
	if ndim < 0 || ndim > 64 {
		return nil, invalidf("column %q: %d dimensions", name, ndim)
	}
	if in.nbytes < 0 || (in.nbytes > 0 && in.data == nil) {
		return nil, invalidf("column %q: %d bytes at %p", name, in.nbytes, in.data)
	}
	data := unsafeSlice((*byte)(in.data), int(in.nbytes))
	if data == nil {
		data = []byte{}
	}
	enc, err := encodingOf(name, in.encoding)
	if err != nil {
		return nil, err
	}
	var out []loch.Sample
	switch in.layout {
	case C.LOCH_NULLS:
		out = make([]loch.Sample, n)
		for i := range out {
			out[i] = loch.Null()
		}
	case C.LOCH_DENSE:
		out, err = denseSamples(name, n, unsafeSlice(in.shape, ndim), data)
	case C.LOCH_PACKED:
		out, err = packedSamples(name, n, ndim, in, data, enc)
	default:
		return nil, invalidf("column %q: layout code %d", name, in.layout)
	}
	if err != nil {
		return nil, err
	}
	for i, f := range unsafeSlice(in.nulls, n) {
		if f != 0 {
			out[i] = loch.Null()
		}
	}
	return out, nil
}

// encodingOf maps a LOCH_ENCODING_* code to the Sample.Encoding of the
// bytes given (empty for LOCH_ENCODING_NONE: raw element bytes).
func encodingOf(name string, code C.int32_t) (schema.SampleCompression, error) {
	switch code {
	case C.LOCH_ENCODING_NONE:
		return "", nil
	case C.LOCH_ENCODING_PNG:
		return schema.PNG, nil
	case C.LOCH_ENCODING_JPEG:
		return schema.JPEG, nil
	}
	return "", invalidf("column %q: encoding code %d", name, code)
}

// denseSamples splits data into n samples of the same size and the same
// shape dims (LOCH_DENSE).
func denseSamples(name string, n int, dims []C.int64_t, data []byte) ([]loch.Sample, error) {
	shape := make([]int, len(dims))
	per := 1
	for k, d := range dims {
		if d < 0 {
			return nil, invalidf("column %q: sample shape %v", name, dims)
		}
		shape[k] = int(d)
		per *= int(d)
	}
	if n > 0 && len(data)%n != 0 {
		return nil, invalidf("column %q: %d bytes do not split into %d samples", name, len(data), n)
	}
	size := 0
	if n > 0 {
		size = len(data) / n
	}
	if per > 0 && size%per != 0 {
		return nil, invalidf("column %q: %d bytes per sample for shape %v", name, size, shape)
	}
	out := make([]loch.Sample, n)
	for i := range out {
		out[i] = loch.Sample{Shape: shape, Data: data[i*size : (i+1)*size : (i+1)*size]}
	}
	return out, nil
}

// packedSamples splits data into n samples at in.offsets, each with its own
// shape from in.shape (n x ndim) when given (LOCH_PACKED).
func packedSamples(name string, n, ndim int, in C.loch_column_in, data []byte, enc schema.SampleCompression) ([]loch.Sample, error) {
	offs := unsafeSlice(in.offsets, n+1)
	if len(offs) != n+1 {
		return nil, invalidf("column %q: packed samples without offsets", name)
	}
	shapes := unsafeSlice(in.shape, n*ndim)
	out := make([]loch.Sample, n)
	for i := range out {
		lo, hi := offs[i], offs[i+1]
		if lo < 0 || hi < lo || int64(hi) > int64(len(data)) {
			return nil, invalidf("column %q: sample %d at bytes [%d, %d) of %d", name, i, lo, hi, len(data))
		}
		s := loch.Sample{Data: data[lo:hi:hi], Encoding: enc}
		if shapes != nil {
			s.Shape = make([]int, ndim)
			for k := range s.Shape {
				s.Shape[k] = int(shapes[i*ndim+k])
			}
		}
		out[i] = s
	}
	return out, nil
}

// loch_dataset_extend stages n rows given column by column (ncols columns;
// a column of the schema that is not given is null in every row). Nothing
// is staged if any sample is invalid.
//
//export loch_dataset_extend
func loch_dataset_extend(h C.uintptr_t, n C.int64_t, cols *C.loch_column_in, ncols C.int32_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		rows, err := rowsOf(ds, int(n), unsafeSlice(cols, int(ncols)))
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		ctx, done := interruptible()
		defer done()
		return ds.d.Extend(ctx, rows)
	})
}

// loch_dataset_update stages new values for the given columns of the row
// with this id (one sample per column).
//
//export loch_dataset_update
func loch_dataset_update(h C.uintptr_t, id C.uint64_t, cols *C.loch_column_in, ncols C.int32_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		rows, err := rowsOf(ds, 1, unsafeSlice(cols, int(ncols)))
		if err != nil {
			return err
		}
		ctx, done := interruptible()
		defer done()
		return ds.d.Update(ctx, uint64(id), rows[0])
	})
}
