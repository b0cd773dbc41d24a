package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// loch_dataset_read reads the samples of a column at n row positions
// (decoded: png/jpeg images as HWC pixels) into a PACKED tensor stored in
// *out, freed with loch_tensor_free (its data with loch_buffer_free).
//
//export loch_dataset_read
func loch_dataset_read(h C.uintptr_t, column *C.char, positions *C.int64_t, n C.int64_t, out **C.loch_tensor, errOut **C.char) (st C.int) {
	return withColumn(h, column, errOut, func(col *loch.ColumnReader) error {
		if n < 0 || (n > 0 && positions == nil) {
			return invalidf("read: %d positions at %p", n, positions)
		}
		ctx := context.Background()
		samples := make([]loch.Sample, n)
		for i, p := range unsafeSlice(positions, int(n)) {
			s, err := col.Read(ctx, int64(p), nil)
			if err != nil {
				return err
			}
			samples[i] = s
		}
		t := newTensor()
		packTensor(t, col.Info().DType, samples)
		*out = t
		return nil
	})
}

// loch_dataset_read_range reads the samples of a column at positions
// [start, end), fetching whole chunks once each, into a PACKED tensor as
// loch_dataset_read does.
//
//export loch_dataset_read_range
func loch_dataset_read_range(h C.uintptr_t, column *C.char, start, end C.int64_t, out **C.loch_tensor, errOut **C.char) (st C.int) {
	return withColumn(h, column, errOut, func(col *loch.ColumnReader) error {
		samples, err := col.ReadRange(context.Background(), int64(start), int64(end))
		if err != nil {
			return err
		}
		t := newTensor()
		packTensor(t, col.Info().DType, samples)
		*out = t
		return nil
	})
}

// loch_dataset_fetch reads the object that row i of a link column refers
// to (a path or URL, fetched through loch's storage layer) into a PACKED
// tensor of one bytes sample.
//
//export loch_dataset_fetch
func loch_dataset_fetch(h C.uintptr_t, column *C.char, i C.int64_t, out **C.loch_tensor, errOut **C.char) (st C.int) {
	return withColumn(h, column, errOut, func(col *loch.ColumnReader) error {
		b, err := col.Fetch(context.Background(), int64(i))
		if err != nil {
			return err
		}
		t := newTensor()
		packTensor(t, schema.Bytes, []loch.Sample{loch.Bytes(b)})
		*out = t
		return nil
	})
}

// columnOf resolves a dataset handle and a column name.
func columnOf(h C.uintptr_t, column *C.char) (*loch.ColumnReader, error) {
	ds, err := datasetOf(h)
	if err != nil {
		return nil, err
	}
	return ds.d.Column(goString(column))
}

// withColumn is withHandle for the column of a dataset handle.
func withColumn(h C.uintptr_t, column *C.char, errOut **C.char, fn func(*loch.ColumnReader) error) C.int {
	return withHandle(h, errOut, func(h C.uintptr_t) (*loch.ColumnReader, error) { return columnOf(h, column) }, fn)
}

// loch_set_max_decode_bytes sets the process's decode limit
// (loch.SetMaxDecodeBytes) and stores the previous one in *old.
//
//export loch_set_max_decode_bytes
func loch_set_max_decode_bytes(n C.int64_t, old *C.int64_t, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	prev, err := loch.SetMaxDecodeBytes(int64(n))
	if err != nil {
		return fail(errOut, err)
	}
	if old != nil {
		*old = C.int64_t(prev)
	}
	return C.LOCH_OK
}

// loch_max_decode_bytes returns the decode limit in force (0: none).
//
//export loch_max_decode_bytes
func loch_max_decode_bytes() C.int64_t { return C.int64_t(loch.MaxDecodeBytes()) }
