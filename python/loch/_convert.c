/*
 * libloch_py.so: a loader batch (a loch_batch the Go core hands over) made
 * into its dict of numpy arrays in one call, for loch.loader's consumer
 * thread: about a fifth less of its CPU per batch than the same work in
 * Python (bench/history/2026-11-26-issue-17.md), which the loader's workers get back
 * where they share the cores, and a higher ceiling where the consumer is
 * what limits the batches a second.
 *
 * Written against Python's limited API of 3.11 (which has the buffer
 * protocol), linked to no libpython: its Py* symbols come from the
 * interpreter that loads it (ctypes.PyDLL, the GIL held), so one build
 * serves every CPython from 3.11 on, and the wheel stays py3-none. No
 * numpy C API (which has no stable ABI): each array is numpy.asarray of a
 * small object that exports the sample buffer with its format and shape,
 * and hands the buffer back to Go (through the Python callable it holds)
 * when numpy lets go of it.
 *
 *   PyObject *loch_py_convert(uintptr_t batch, PyObject *ctx)
 *   int loch_py_abi_version(void)   the LOCH_ABI_VERSION it was built for
 *
 * ctx is a tuple (ragged, formats, freer, asarray):
 *   ragged   a frozenset of the column names that get "<name>.shapes"
 *   formats  a dict: dtype code -> (buffer format, item size), for the
 *            dtypes numpy has
 *   freer    called as freer(address, nbytes) when a sample buffer is
 *            no longer used (loch._library.Library.free_buffer)
 *   asarray  numpy.asarray
 *
 * Returns the dict {name: array, "<name>.shapes": int64 array, "index":
 * int64 row ids}, taking the sample buffers; or None, taking nothing, when
 * the batch is not of the plain form it handles (every column dense, with
 * its data, no null flags, no per-sample shapes, a dtype of formats, and
 * no mixture's "dataset" ids): the caller then converts it in Python. NULL
 * with an exception set on failure (out of memory); buffers already
 * wrapped are given back as their arrays go.
 */
#define Py_LIMITED_API 0x030B0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loch.h"

#define MAX_DIMS 32

/* Buf exports one buffer to numpy: a sample buffer of Go's (freer set) or
 * memory of its own (malloc'd; freer NULL). */
typedef struct {
	PyObject_HEAD
	void *ptr;
	Py_ssize_t nbytes;
	PyObject *freer;
	int ndim;
	Py_ssize_t itemsize;
	Py_ssize_t shape[MAX_DIMS];
	char format[8];
} Buf;

static PyTypeObject *buf_type;

/* release gives a buffer back: a Go buffer to freer (as the pure-Python
 * Buffer does: an error there, as at interpreter shutdown, loses only the
 * buffer's reuse), memory of our own to free(). Safe with an exception
 * set, which it keeps. */
static void release(void *ptr, Py_ssize_t nbytes, PyObject *freer) {
	if (!freer) {
		free(ptr);
		return;
	}
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyObject *r = PyObject_CallFunction(freer, "Kn", (unsigned long long)(uintptr_t)ptr, nbytes);
	if (r)
		Py_DECREF(r);
	else
		PyErr_Clear();
	PyErr_Restore(type, value, tb);
}

static int buf_getbuffer(PyObject *self, Py_buffer *view, int flags) {
	Buf *b = (Buf *)self;
	view->obj = Py_NewRef(self);
	view->buf = b->ptr;
	view->len = b->nbytes;
	view->readonly = 0;
	view->itemsize = b->itemsize;
	view->format = (flags & PyBUF_FORMAT) ? b->format : NULL;
	view->ndim = b->ndim;
	view->shape = (flags & PyBUF_ND) ? b->shape : NULL;
	view->strides = NULL; /* C-contiguous */
	view->suboffsets = NULL;
	view->internal = NULL;
	return 0;
}

static void buf_dealloc(PyObject *self) {
	Buf *b = (Buf *)self;
	if (b->ptr)
		release(b->ptr, b->nbytes, b->freer);
	Py_XDECREF(b->freer);
	PyTypeObject *tp = Py_TYPE(self);
	((freefunc)PyType_GetSlot(tp, Py_tp_free))(self);
	Py_DECREF(tp);
}

static PyType_Slot buf_slots[] = {
    {Py_bf_getbuffer, buf_getbuffer},
    {Py_tp_dealloc, buf_dealloc},
    {0, NULL},
};

static PyType_Spec buf_spec = {"loch._convert.Buf", sizeof(Buf), 0, Py_TPFLAGS_DEFAULT, buf_slots};

/* array returns asarray(Buf over ptr). It takes ptr whatever happens: on
 * failure ptr is given back (release) before it returns NULL. */
static PyObject *array(PyObject *asarray, void *ptr, Py_ssize_t nbytes, PyObject *freer, int ndim, const int64_t *shape,
                       Py_ssize_t itemsize, const char *format) {
	Buf *b = (Buf *)PyType_GenericAlloc(buf_type, 0);
	if (!b) {
		release(ptr, nbytes, freer);
		return NULL;
	}
	b->ptr = ptr;
	b->nbytes = nbytes;
	b->freer = freer;
	Py_XINCREF(freer);
	b->ndim = ndim;
	for (int d = 0; d < ndim; d++)
		b->shape[d] = (Py_ssize_t)shape[d];
	b->itemsize = itemsize;
	strncpy(b->format, format, sizeof b->format - 1);
	PyObject *arr = PyObject_CallFunctionObjArgs(asarray, (PyObject *)b, NULL);
	Py_DECREF(b);
	return arr;
}

/* format looks up a dtype code in formats: 1 and the buffer format and
 * item size, or 0 when numpy has no such dtype (or formats is malformed). */
static int format(PyObject *formats, int32_t code, const char **fmt, Py_ssize_t *itemsize) {
	PyObject *key = PyLong_FromLong(code);
	if (!key)
		return 0;
	PyObject *f = PyDict_GetItemWithError(formats, key); /* borrowed */
	Py_DECREF(key);
	if (!f || !PyTuple_Check(f) || PyTuple_Size(f) != 2)
		return 0;
	*fmt = PyUnicode_AsUTF8AndSize(PyTuple_GetItem(f, 0), NULL);
	*itemsize = PyLong_AsSsize_t(PyTuple_GetItem(f, 1));
	return *fmt != NULL && *itemsize > 0;
}

/* set stores value under key in out and drops the reference to value. */
static int set(PyObject *out, PyObject *key, PyObject *value) {
	if (!value)
		return -1;
	int rc = PyDict_SetItem(out, key, value);
	Py_DECREF(value);
	return rc;
}

int loch_py_abi_version(void) { return LOCH_ABI_VERSION; }

PyObject *loch_py_convert(uintptr_t addr, PyObject *ctx) {
	if (!buf_type) {
		buf_type = (PyTypeObject *)PyType_FromSpec(&buf_spec);
		if (!buf_type)
			return NULL;
	}
	PyObject *ragged, *formats, *freer, *asarray;
	if (!PyArg_ParseTuple(ctx, "O!O!OO", &PyFrozenSet_Type, &ragged, &PyDict_Type, &formats, &freer, &asarray))
		return NULL;
	const loch_batch *b = (const loch_batch *)addr;
	if (b->datasets || b->n < 0 || (b->n > 0 && !b->row_ids))
		Py_RETURN_NONE;
	/* Every column in the plain form first: nothing is taken otherwise. */
	for (int i = 0; i < b->ncols; i++) {
		const loch_tensor *t = &b->cols[i];
		const char *fmt;
		Py_ssize_t itemsize;
		if (t->layout != LOCH_DENSE || !t->name || !t->data || t->nulls || t->sample_shapes || t->ndim < 1 ||
		    t->ndim > MAX_DIMS || !format(formats, t->dtype, &fmt, &itemsize)) {
			if (PyErr_Occurred())
				return NULL;
			Py_RETURN_NONE;
		}
	}
	PyObject *out = PyDict_New();
	if (!out)
		return NULL;
	int i = 0; /* the columns before i are taken (their arrays own their buffers) */
	for (; i < b->ncols; i++) {
		const loch_tensor *t = &b->cols[i];
		const char *fmt;
		Py_ssize_t itemsize;
		format(formats, t->dtype, &fmt, &itemsize);
		PyObject *name = PyUnicode_FromString(t->name);
		if (!name)
			goto fail;
		PyObject *arr = array(asarray, t->data, (Py_ssize_t)t->nbytes, freer, t->ndim, t->shape, itemsize, fmt);
		int rc = set(out, name, arr);
		int is_ragged = rc < 0 ? -1 : PySet_Contains(ragged, name);
		if (is_ragged > 0) {
			/* Dense samples of one shape: each row of .shapes is shape[1:]. */
			int64_t k = t->ndim - 1, n = b->n, dims[2] = {n, k};
			int64_t *p = malloc((size_t)(n * k > 0 ? n * k : 1) * sizeof *p);
			PyObject *key = p ? PyUnicode_FromFormat("%U.shapes", name) : NULL;
			if (!key) {
				free(p);
				if (!PyErr_Occurred())
					PyErr_NoMemory();
				is_ragged = -1;
			} else {
				for (int64_t r = 0; r < n; r++)
					for (int64_t d = 0; d < k; d++)
						p[r * k + d] = t->shape[d + 1];
				if (set(out, key, array(asarray, p, (Py_ssize_t)(n * k * 8), NULL, 2, dims, 8, "q")) < 0)
					is_ragged = -1;
				Py_DECREF(key);
			}
		}
		Py_DECREF(name);
		if (is_ragged < 0) {
			i++; /* this column's buffer went to its array (or back to Go) */
			goto fail;
		}
	}
	{
		/* Row ids, all below 2**63, as int64 (what torch and numpy take). */
		int64_t n = b->n, dims[1] = {n};
		int64_t *ids = malloc((size_t)(n > 0 ? n : 1) * sizeof *ids);
		PyObject *key = ids ? PyUnicode_FromString("index") : NULL;
		if (!key) {
			free(ids);
			if (!PyErr_Occurred())
				PyErr_NoMemory();
			goto fail;
		}
		if (n > 0)
			memcpy(ids, b->row_ids, (size_t)n * sizeof *ids);
		int rc = set(out, key, array(asarray, ids, (Py_ssize_t)(n * 8), NULL, 1, dims, 8, "q"));
		Py_DECREF(key);
		if (rc < 0)
			goto fail;
	}
	return out;
fail:
	/* The buffers of the columns not taken yet are still Go's: give them
	 * back, as their arrays would have. */
	Py_DECREF(out);
	for (; i < b->ncols; i++)
		release(b->cols[i].data, (Py_ssize_t)b->cols[i].nbytes, freer);
	return NULL;
}
