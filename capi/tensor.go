package main

/*
#include "loch.h"
*/
import "C"

import (
	"unsafe"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/schema"
)

// cArray copies a Go slice into newly allocated C memory (nil for an empty
// slice), converting each element.
func cArray[C_, G any](src []G, conv func(G) C_) *C_ {
	if len(src) == 0 {
		return nil
	}
	var z C_
	p := (*C_)(C.malloc(C.size_t(len(src)) * C.size_t(unsafe.Sizeof(z))))
	dst := unsafe.Slice(p, len(src))
	for i, v := range src {
		dst[i] = conv(v)
	}
	return p
}

func i64[T ~int | ~int64](v T) C.int64_t { return C.int64_t(v) }

func nullFlags(null []bool) *C.uint8_t {
	return cArray(null, func(b bool) C.uint8_t {
		if b {
			return 1
		}
		return 0
	})
}

// packTensor collates samples back to back into one buffer (layout
// PACKED), each with its own shape.
func packTensor(t *C.loch_tensor, dtype schema.DType, samples []loch.Sample) {
	n := len(samples)
	total := 0
	anyNull := false
	for _, s := range samples {
		total += len(s.Data)
		anyNull = anyNull || s.Null
	}
	buf := pool.alloc(total)
	offs := make([]int64, n+1)
	ndims := make([]int32, n)
	var shapes []int64
	pos := 0
	for i, s := range samples {
		copy(buf[pos:], s.Data)
		pos += len(s.Data)
		offs[i+1] = int64(pos)
		shape := s.Shape
		if s.Null {
			shape = nil
		}
		ndims[i] = int32(len(shape))
		for _, d := range shape {
			shapes = append(shapes, int64(d))
		}
	}
	t.dtype = C.int32_t(dtype)
	t.layout = C.LOCH_PACKED
	t.n = C.int64_t(n)
	t.data = ptrOf(buf)
	t.nbytes = C.int64_t(total)
	t.offsets = cArray(offs, i64)
	t.sample_ndims = cArray(ndims, func(v int32) C.int32_t { return C.int32_t(v) })
	t.sample_shapes = cArray(shapes, i64)
	if anyNull {
		null := make([]bool, n)
		for i, s := range samples {
			null[i] = s.Null
		}
		t.nulls = nullFlags(null)
	}
}

// batchTensor describes a loader batch's column. Numeric data is handed
// over as is (the loader allocated it from the pool); byte strings are
// packed into a new buffer.
func batchTensor(t *C.loch_tensor, name string, src *loader.Collated, alloc *loaderAlloc) {
	t.name = C.CString(name)
	if src.DType.Variable() {
		samples := make([]loch.Sample, len(src.Items))
		for i, it := range src.Items {
			samples[i] = loch.Sample{Shape: []int{len(it)}, Data: it, Null: src.Null != nil && src.Null[i]}
		}
		packTensor(t, src.DType, samples)
		return
	}
	t.dtype = C.int32_t(src.DType)
	t.nulls = nullFlags(src.Null)
	n := 0
	if len(src.Shape) > 0 {
		n = src.Shape[0]
	}
	t.layout = C.LOCH_DENSE
	t.n = C.int64_t(n)
	t.ndim = C.int32_t(len(src.Shape))
	t.shape = cArray(src.Shape, i64)
	if src.Data == nil {
		src.Data = pool.alloc(0)
	} else {
		alloc.handOff(src.Data)
	}
	t.data = ptrOf(src.Data)
	t.nbytes = C.int64_t(len(src.Data))
	if src.Shapes != nil {
		var shapes []int64
		for _, s := range src.Shapes {
			for _, d := range s {
				shapes = append(shapes, int64(d))
			}
		}
		t.sample_shapes = cArray(shapes, i64)
	}
	src.Data = nil
}

// freeTensorMeta frees what a tensor holds besides its data.
func freeTensorMeta(t *C.loch_tensor) {
	for _, p := range []unsafe.Pointer{unsafe.Pointer(t.name), unsafe.Pointer(t.shape), unsafe.Pointer(t.sample_shapes),
		unsafe.Pointer(t.sample_ndims), unsafe.Pointer(t.offsets), unsafe.Pointer(t.nulls)} {
		C.free(p)
	}
}

// loch_tensor_free frees a tensor returned by loch_dataset_read or
// loch_dataset_read_range, except its data, which the caller frees with
// loch_buffer_free (free it first when it is not wanted).
//
//export loch_tensor_free
func loch_tensor_free(t *C.loch_tensor) {
	defer func() { _ = recover() }()
	if t == nil {
		return
	}
	freeTensorMeta(t)
	C.free(unsafe.Pointer(t))
}

// loch_batch_free frees a batch returned by loch_loader_next, except its
// tensors' data, which the caller frees with loch_buffer_free.
//
//export loch_batch_free
func loch_batch_free(b *C.loch_batch) {
	defer func() { _ = recover() }()
	if b != nil {
		freeBatch(b)
	}
}

// freeBatch frees a batch description (not its tensors' data).
func freeBatch(b *C.loch_batch) {
	for i := range unsafeSlice(b.cols, int(b.ncols)) {
		freeTensorMeta(&unsafeSlice(b.cols, int(b.ncols))[i])
	}
	for _, p := range []unsafe.Pointer{unsafe.Pointer(b.cols), unsafe.Pointer(b.positions), unsafe.Pointer(b.row_ids), unsafe.Pointer(b.datasets)} {
		C.free(p)
	}
	C.free(unsafe.Pointer(b))
}

// newTensor allocates a zeroed loch_tensor.
func newTensor() *C.loch_tensor {
	return (*C.loch_tensor)(C.calloc(1, C.size_t(unsafe.Sizeof(C.loch_tensor{}))))
}
