/*
 * loch.h: the C types of loch's C ABI (package capi). The functions are
 * declared in the libloch.h that `go build -buildmode=c-shared` writes
 * beside libloch.so.
 *
 * Conventions: every function returns a status (LOCH_OK or an error code)
 * and, on error, stores a message in *err (when err is not NULL) that the
 * caller frees with loch_free_string. Go objects cross as opaque handles
 * (uintptr_t, runtime/cgo.Handle). Memory that a function hands over
 * (strings, tensors, batches, sample buffers) is freed by the caller with the
 * matching loch_*_free function.
 */
#ifndef LOCH_CAPI_H
#define LOCH_CAPI_H

#include <stdint.h>
#include <stdlib.h>

/* The version of this ABI; loch_abi_version returns it. */
#define LOCH_ABI_VERSION 1

/* Status codes. */
enum {
	LOCH_OK = 0,
	LOCH_ERR = 1,              /* an error of no more specific class */
	LOCH_NOT_FOUND = 2,
	LOCH_EXISTS = 3,
	LOCH_CORRUPT = 4,
	LOCH_CONFLICT = 5,
	LOCH_INVALID_ARGUMENT = 6,
	LOCH_NEWER_FORMAT = 7,
	LOCH_READ_ONLY = 8,
	LOCH_PERMISSION = 9,
	LOCH_EOF = 10,             /* loch_loader_next: the epoch is over */
	LOCH_TIMEOUT = 11,         /* loch_loader_next: no batch within the timeout */
	LOCH_CLOSED = 12,          /* the handle was closed */
	LOCH_NOT_IMPLEMENTED = 13,
	LOCH_INTERNAL = 14,        /* a recovered panic: a bug in loch */
	LOCH_CANCELED = 15
};

/* Layouts of a column's samples in memory. */
enum {
	LOCH_DENSE = 0,  /* one C-contiguous array of n samples of one shape (padded when ragged) */
	LOCH_PACKED = 1, /* samples back to back in data; offsets[n+1] delimit them */
	LOCH_NULLS = 2   /* input only: n null samples, no data */
};

/* Sample encodings of packed input. */
enum {
	LOCH_ENCODING_NONE = 0,
	LOCH_ENCODING_PNG = 1,
	LOCH_ENCODING_JPEG = 2
};

/*
 * loch_column_in: the samples of one column for loch_dataset_extend and
 * loch_dataset_update. The memory stays the caller's: it is read (and
 * copied) before the call returns.
 *   DENSE:  data holds n samples of shape[0..ndim), C-contiguous.
 *   PACKED: sample i is data[offsets[i]:offsets[i+1]] with shape
 *           shape[i*ndim .. (i+1)*ndim) (shape may be NULL for text, json,
 *           bytes and encoded images).
 *   nulls:  NULL, or n flags: a nonzero flag makes sample i null.
 * dtype is the code of the data's element type (see loch_dtypes); it must
 * be the column's, or 0 to skip the check.
 */
typedef struct {
	const char *name;
	int32_t dtype;
	int32_t layout;
	int32_t ndim;
	int32_t encoding;
	const int64_t *shape;
	const void *data;
	int64_t nbytes;
	const int64_t *offsets;
	const uint8_t *nulls;
} loch_column_in;

/*
 * loch_tensor: the samples of one column, handed to the caller.
 *   DENSE:  data holds shape[0..ndim) elements, shape[0] = n samples; when
 *           the samples' shapes differ, each is zero-padded to the largest
 *           and sample_shapes holds n*(ndim-1) sizes.
 *   PACKED: sample i is data[offsets[i]:offsets[i+1]] with sample_ndims[i]
 *           dimensions; sample_shapes holds their sizes back to back.
 *   nulls:  NULL, or n flags (1: the sample is null, zero-filled or empty).
 * data (nbytes bytes, 64-byte aligned) belongs to the caller, who frees it
 * with loch_buffer_free; the rest is freed with the tensor or batch.
 */
typedef struct {
	char *name;
	int32_t dtype;
	int32_t layout;
	int32_t ndim;
	int32_t reserved;
	int64_t n;
	int64_t *shape;
	void *data;
	int64_t nbytes;
	int64_t *sample_shapes;
	int32_t *sample_ndims;
	int64_t *offsets;
	uint8_t *nulls;
} loch_tensor;

/* loch_batch: one batch of a loader; cols[i].name names its column. */
typedef struct {
	int64_t epoch;
	int64_t index;
	int64_t n;
	int64_t *positions;
	uint64_t *row_ids;
	int32_t ncols;
	int32_t reserved;
	loch_tensor *cols;
} loch_batch;

#endif
