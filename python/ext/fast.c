/*
 * mplinear._fast -- the compiled hot path of mplinear.Layer.apply (docs/python.md, "Overhead").
 *
 * Why C: mpl_layer_apply on a 4096 x 4096 int4 layer streams 8 MiB of weights through a 2 MiB L2, which
 * evicts the interpreter's code and data; the Python-level apply (bytecode, ctypes' argument conversion)
 * then ran from L3/DRAM and cost 13-18 us over the C call. This module does the same checks and the call
 * in a few hundred instructions of C: `layer.apply(x)` is a method of the C base class LayerBase, called
 * with no Python frame.
 *
 * Only the common cases run here: x an exact numpy.ndarray (C-contiguous, the layer's activation format,
 * read through numpy's object layout: np_get) or an exact torch.Tensor on the CPU (contiguous, the layer's dtype), bias
 * and out None or of the same kind. Everything else -- every error, DLPack producers, CUDA tensors,
 * non-contiguous x, ml_dtypes.bfloat16 -- goes to the Python method _apply_py, so the messages and
 * exceptions are the ones the ctypes binding gives. A failed mpl_layer_apply is raised by the package's
 * _raise(status, call), which reads mpl_last_error on this same OS thread.
 *
 * The library is not linked: setup() is given the address of the mpl_layer_apply the package loaded with
 * ctypes (MPLINEAR_LIBRARY included), so there is one copy of the library in the process. The GIL is
 * released around the call. Stable ABI (Py_LIMITED_API 3.11, set by CMake where the building Python is
 * 3.11+): one abi3 module serves every later CPython; the same source builds against 3.9/3.10's full API.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mplinear.h"

/* Py_XSETREF is not in the limited API: replace *p by v (a new reference), dropping the old one after. */
#define SETREF(p, v) do { PyObject *old_ = (PyObject *)(p); (p) = (v); Py_XDECREF(old_); } while (0)

typedef mpl_status (*apply_fn)(mpl_layer *, int64_t, const void *, const void *, void *);

/* Set once by setup() (and set_torch()): module-wide, one interpreter. */
static apply_fn g_apply;
static PyObject *g_ndarray;  /* numpy.ndarray */
static PyObject *g_empty;    /* numpy.empty */
static PyObject *g_raise;    /* mplinear._raise(status, call): raises the library's error */
static PyObject *g_tensor;   /* torch.Tensor, once the torch path has run (NULL before) */
static PyObject *g_to_dlpack; /* torch._C._to_dlpack (NULL: no torch fast path) */
static PyObject *s_apply_py, *s_new_empty, *s_data_ptr;

/* DLPack's unversioned DLManagedTensor (dlpack.h v0.2-0.8, a fixed C ABI), the capsule "dltensor" that
 * torch._C._to_dlpack returns. */
typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *);
} DLManagedTensor;
enum { DL_CPU = 1, DL_FLOAT = 2, DL_BFLOAT = 4 };

#define MAX_ND 8 /* x's dimensions on the fast path; more go to _apply_py */
/* The largest numpy output kept for reuse (np_spare): one decode output (M = 1, N = 14336, f32: 56 KiB)
 * fits; a layer never holds more than this beyond what its caller holds. */
#define SPARE_MAX_BYTES (64 * 1024)

typedef struct {
    PyObject_HEAD
    mpl_layer *h;          /* NULL: unbound or closed (then _apply_py raises) */
    int64_t k, n;
    int np_type;           /* numpy type number of the activation type: float32, float16, uint16 (bf16 bits) */
    Py_ssize_t itemsize;
    PyObject *np_dtype;    /* numpy dtype of that format (the output's) */
    uint8_t dl_code, dl_bits; /* DLPack dtype of the activation type */
    int torch_on;          /* a CPU layer whose torch path has run once (Python set it up) */
    PyObject *bias;        /* the layer's own bias (Layer.bias), NULL or None for none */
    /* one-entry caches of the last x shape: (shape -> m, output shape) */
    int np_nd;
    Py_ssize_t np_shape[MAX_ND];
    int64_t np_m;
    PyObject *np_oshape;
    PyObject *np_spare;    /* the last numpy output apply allocated (at most SPARE_MAX_BYTES), kept for reuse */
    int t_nd;
    int64_t t_shape[MAX_ND];
    int64_t t_m;
    PyObject *t_oshape;
} LayerBase;

static PyObject *slow(LayerBase *self, PyObject *x, PyObject *bias, PyObject *out) {
    return PyObject_CallMethodObjArgs((PyObject *)self, s_apply_py, x, bias, out, NULL);
}

/* The call itself: GIL released; a failure raised through mplinear._raise. */
static int call_apply(mpl_layer *h, int64_t m, const void *x, const void *b, void *y) {
    mpl_status st;
    Py_BEGIN_ALLOW_THREADS
    st = g_apply(h, m, x, b, y);
    Py_END_ALLOW_THREADS
    if (st == MPL_OK) return 0;
    PyObject *r = PyObject_CallFunction(g_raise, "is", (int)st, "mpl_layer_apply");
    Py_XDECREF(r); /* _raise always raises */
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "mpl_layer_apply failed");
    return -1;
}

/* The output shape of x's shape [..., k]: (..., n), and m, the product of the leading dimensions. */
static PyObject *output_shape(const int64_t *shape, int nd, int64_t n, int64_t *m) {
    PyObject *os = PyTuple_New(nd);
    if (!os) return NULL;
    int64_t rows = 1;
    for (int i = 0; i < nd; i++) {
        if (i < nd - 1) rows *= shape[i];
        PyObject *d = PyLong_FromLongLong(i < nd - 1 ? shape[i] : n);
        if (!d) { Py_DECREF(os); return NULL; }
        PyTuple_SetItem(os, i, d);
    }
    *m = rows;
    return os;
}

/*
 * numpy arrays are read through their object layout, not the buffer protocol: numpy's array_getbuffer
 * builds and caches a format string and a shape/stride block for every new array (malloc, numpy code that is
 * cold after a large kernel), where these checks need three fields. The layout is numpy's C ABI: every
 * extension compiled against numpy's headers reads these fields through PyArray_DATA / PyArray_NDIM / ...
 * macros (ndarraytypes.h: PyArrayObject_fields and _PyArray_Descr, this prefix unchanged from numpy 1.7 to
 * 2.x; type_num at the same offset in 1.x's and 2.x's descriptor), and pybind11's numpy support reads them
 * the same way without numpy's headers. Only exact numpy.ndarray objects are read so.
 * Measured (Xeon VM, overhead.py 4096 x 4096 M = 1): see bench/results/python-overhead.md.
 */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions, *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} np_array_fields;
typedef struct {
    PyObject_HEAD
    PyTypeObject *typeobj;
    char kind, type, byteorder, flags_;
    int type_num;
} np_descr_fields;
enum { NPY_USHORT_ = 4, NPY_FLOAT_ = 11, NPY_HALF_ = 23 };              /* numpy's type numbers (stable) */
enum { NPY_C_CONTIGUOUS_ = 0x1, NPY_ALIGNED_ = 0x100, NPY_WRITEABLE_ = 0x400 }; /* numpy's array flags */

typedef struct { char *data; int nd; const Py_ssize_t *shape; } np_view;

/* 1 and *v when obj (an exact numpy.ndarray) is C-contiguous, aligned, (writable,) of the layer's type in
 * native byte order with 1..MAX_ND dimensions; else 0 (the Python path takes it). */
static int np_get(LayerBase *self, PyObject *obj, np_view *v, int writable) {
    if (Py_TYPE(obj) != (PyTypeObject *)g_ndarray) return 0;
    const np_array_fields *a = (const np_array_fields *)obj;
    const np_descr_fields *d = (const np_descr_fields *)a->descr;
    const int need = NPY_C_CONTIGUOUS_ | NPY_ALIGNED_ | (writable ? NPY_WRITEABLE_ : 0);
    if ((a->flags & need) != need || d->type_num != self->np_type || a->nd < 1 || a->nd > MAX_ND) return 0;
    if (d->byteorder != '=' && d->byteorder != '|' && d->byteorder != (PY_LITTLE_ENDIAN ? '<' : '>')) return 0;
    v->data = a->data;
    v->nd = a->nd;
    v->shape = a->dimensions;
    return 1;
}

/* numpy: returns the result, NULL with an exception, or NULL without one to take the Python path. */
static PyObject *apply_numpy(LayerBase *self, PyObject *x, PyObject *bias, PyObject *out) {
    np_view vx, vb, vy;
    if (!np_get(self, x, &vx, 0)) return NULL;
    const int nd = vx.nd;
    if (vx.shape[nd - 1] != self->k) return NULL;
    if (nd != self->np_nd || memcmp(vx.shape, self->np_shape, (size_t)(nd - 1) * sizeof(Py_ssize_t)) != 0 ||
        !self->np_oshape) {
        int64_t shape[MAX_ND];
        for (int i = 0; i < nd; i++) shape[i] = vx.shape[i];
        PyObject *os = output_shape(shape, nd, self->n, &self->np_m);
        if (!os) return NULL;
        SETREF(self->np_oshape, os);
        memcpy(self->np_shape, vx.shape, (size_t)nd * sizeof(Py_ssize_t));
        self->np_nd = nd;
    }
    const void *bp = NULL;
    if (bias != Py_None) {
        if (!np_get(self, bias, &vb, 0) || vb.nd != 1 || vb.shape[0] != self->n) return NULL;
        bp = vb.data;
    }
    if (out == Py_None) {
        /* The output of an earlier call that nothing references any more (only np_spare: a numpy view or
         * an exported buffer would hold a reference to it) is free memory of the right size: reused, it
         * saves numpy.empty, several microseconds when numpy's code is cold after a large kernel. */
        PyObject *sp = self->np_spare;
        if (sp && Py_REFCNT(sp) == 1 && np_get(self, sp, &vy, 1) && vy.nd == nd &&
            memcmp(vy.shape, vx.shape, (size_t)(nd - 1) * sizeof(Py_ssize_t)) == 0 && vy.shape[nd - 1] == self->n) {
            out = sp;
            Py_INCREF(out);
        } else {
            out = PyObject_CallFunctionObjArgs(g_empty, self->np_oshape, self->np_dtype, NULL);
            if (!out) return NULL;
            if (!np_get(self, out, &vy, 1)) {
                Py_DECREF(out);
                PyErr_SetString(PyExc_RuntimeError, "mplinear._fast: numpy.empty gave an unexpected array");
                return NULL;
            }
            Py_ssize_t bytes = self->itemsize;
            for (int i = 0; i < nd; i++) bytes *= vy.shape[i];
            if (bytes <= SPARE_MAX_BYTES) {
                Py_INCREF(out);
                SETREF(self->np_spare, out);
            }
        }
    } else {
        if (!np_get(self, out, &vy, 1) || vy.nd != nd ||
            memcmp(vy.shape, vx.shape, (size_t)(nd - 1) * sizeof(Py_ssize_t)) != 0 || vy.shape[nd - 1] != self->n)
            return NULL;
        Py_INCREF(out);
    }
    if (call_apply(self->h, self->np_m, vx.data, bp, vy.data) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static void *data_ptr(PyObject *t) {
    PyObject *v = PyObject_CallMethodObjArgs(t, s_data_ptr, NULL);
    if (!v) return NULL;
    void *p = PyLong_AsVoidPtr(v);
    Py_DECREF(v);
    return p;
}

/* A torch tensor seen through torch._C._to_dlpack: one call into torch gives the device, dtype, shape,
 * strides and address that tensor.dtype, .is_cpu, .is_contiguous(), .shape and .data_ptr() give in five
 * (each a few hundred nanoseconds to microseconds when torch's code is cold). *cap owns the export:
 * dropping it runs torch's deleter. 0 (nothing held, no exception) unless t is an exact torch.Tensor on
 * the CPU, of the layer's dtype, C-contiguous, with 1..MAX_ND dimensions. */
static int torch_view(LayerBase *self, PyObject *t, PyObject **cap, const DLTensor **dl) {
    if (Py_TYPE(t) != (PyTypeObject *)g_tensor) return 0;
    PyObject *c = PyObject_CallFunctionObjArgs(g_to_dlpack, t, NULL);
    if (!c) { PyErr_Clear(); return 0; }
    DLManagedTensor *mt = PyCapsule_GetPointer(c, "dltensor");
    if (!mt) { PyErr_Clear(); Py_DECREF(c); return 0; }
    const DLTensor *d = &mt->dl_tensor;
    int ok = d->device.device_type == DL_CPU && d->dtype.code == self->dl_code && d->dtype.bits == self->dl_bits &&
             d->dtype.lanes == 1 && d->ndim >= 1 && d->ndim <= MAX_ND;
    if (ok && d->strides) { /* row-major; a dimension of size 1 may carry any stride (as torch's is_contiguous) */
        int64_t want = 1;
        for (int i = d->ndim - 1; i >= 0; i--) {
            if (d->shape[i] != 1 && d->strides[i] != want) { ok = 0; break; }
            want *= d->shape[i];
        }
    }
    if (!ok) { Py_DECREF(c); return 0; }
    *cap = c;
    *dl = d;
    return 1;
}

static const void *dl_data(const DLTensor *d) { return (const char *)d->data + d->byte_offset; }

/* torch, CPU layers: as apply_numpy. The output comes from x.new_empty (torch's allocator, as the Python
 * path: a tensor like any other, resizable, freed by torch). */
static PyObject *apply_torch(LayerBase *self, PyObject *x, PyObject *bias, PyObject *out) {
    PyObject *cx = NULL, *cb = NULL, *cy = NULL, *r = NULL;
    const DLTensor *dx, *db, *dy;
    if (!self->torch_on || !torch_view(self, x, &cx, &dx)) return NULL;
    int nd = dx->ndim;
    if (dx->shape[nd - 1] != self->k) goto done;
    if (nd != self->t_nd || memcmp(dx->shape, self->t_shape, (size_t)(nd - 1) * sizeof(int64_t)) != 0 ||
        !self->t_oshape) {
        PyObject *os = output_shape(dx->shape, nd, self->n, &self->t_m);
        if (!os) goto done;
        SETREF(self->t_oshape, os);
        memcpy(self->t_shape, dx->shape, (size_t)nd * sizeof(int64_t));
        self->t_nd = nd;
    }
    const void *bp = NULL;
    if (bias != Py_None) {
        if (!torch_view(self, bias, &cb, &db) || db->ndim != 1 || db->shape[0] != self->n) goto done;
        bp = dl_data(db);
    }
    void *yp;
    if (out == Py_None) {
        out = PyObject_CallMethodObjArgs(x, s_new_empty, self->t_oshape, NULL);
        if (!out) goto done;
        yp = data_ptr(out);
        if (!yp && PyErr_Occurred()) { Py_DECREF(out); goto done; }
    } else {
        if (!torch_view(self, out, &cy, &dy) || dy->ndim != nd ||
            memcmp(dy->shape, dx->shape, (size_t)(nd - 1) * sizeof(int64_t)) != 0 || dy->shape[nd - 1] != self->n)
            goto done;
        yp = (void *)dl_data(dy);
        Py_INCREF(out);
    }
    if (call_apply(self->h, self->t_m, dl_data(dx), bp, yp) < 0) { Py_DECREF(out); goto done; }
    r = out;
done:
    Py_XDECREF(cy);
    Py_XDECREF(cb);
    Py_XDECREF(cx);
    return r;
}

static PyObject *LayerBase_apply(LayerBase *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    PyObject *x = NULL, *bias = Py_None, *out = Py_None;
    Py_ssize_t nk = kwnames ? PyTuple_Size(kwnames) : 0;
    if (nargs < 1 || nargs > 3) goto generic;
    x = args[0];
    if (nargs > 1) bias = args[1];
    if (nargs > 2) out = args[2];
    for (Py_ssize_t i = 0; i < nk; i++) {
        PyObject *kw = PyTuple_GetItem(kwnames, i);
        if (PyUnicode_CompareWithASCIIString(kw, "bias") == 0 && nargs < 2) bias = args[nargs + i];
        else if (PyUnicode_CompareWithASCIIString(kw, "out") == 0 && nargs < 3) out = args[nargs + i];
        else goto generic;
    }
    if (self->h) {
        PyObject *b = bias != Py_None ? bias : (self->bias ? self->bias : Py_None);
        PyTypeObject *tx = Py_TYPE(x);
        PyObject *r = NULL;
        if (tx == (PyTypeObject *)g_ndarray) r = apply_numpy(self, x, b, out);
        else if (g_tensor && tx == (PyTypeObject *)g_tensor) r = apply_torch(self, x, b, out);
        if (r || PyErr_Occurred()) return r;
    }
    return slow(self, x, bias, out);
generic: { /* unusual arguments: let Python bind them (and raise TypeError as it would) */
    PyObject *meth = PyObject_GetAttr((PyObject *)self, s_apply_py);
    if (!meth) return NULL;
    PyObject *pos = PyTuple_New(nargs);
    PyObject *kw = nk ? PyDict_New() : NULL;
    if (!pos || (nk && !kw)) { Py_DECREF(meth); Py_XDECREF(pos); Py_XDECREF(kw); return NULL; }
    for (Py_ssize_t i = 0; i < nargs; i++) { Py_INCREF(args[i]); PyTuple_SetItem(pos, i, args[i]); }
    for (Py_ssize_t i = 0; i < nk; i++) PyDict_SetItem(kw, PyTuple_GetItem(kwnames, i), args[nargs + i]);
    PyObject *r = PyObject_Call(meth, pos, kw);
    Py_DECREF(meth); Py_DECREF(pos); Py_XDECREF(kw);
    return r;
}
}

/* _fast_bind(handle, k, n, fmt, np_dtype): the layer's constants; handle 0 unbinds (close()). */
static PyObject *LayerBase_bind(LayerBase *self, PyObject *args) {
    unsigned long long h;
    long long k, n;
    const char *fmt;
    PyObject *dt;
    if (!PyArg_ParseTuple(args, "KLLsO", &h, &k, &n, &fmt, &dt)) return NULL;
    self->h = (mpl_layer *)(uintptr_t)h;
    self->k = k;
    self->n = n;
    self->itemsize = fmt[0] == 'f' ? 4 : 2;
    self->np_type = fmt[0] == 'f' ? NPY_FLOAT_ : fmt[0] == 'e' ? NPY_HALF_ : NPY_USHORT_;
    self->dl_code = fmt[0] == 'H' ? DL_BFLOAT : DL_FLOAT; /* 'H': bf16 as raw bits in numpy */
    self->dl_bits = (uint8_t)(self->itemsize * 8);
    Py_INCREF(dt);
    SETREF(self->np_dtype, dt);
    Py_CLEAR(self->np_oshape);
    Py_CLEAR(self->np_spare);
    self->np_nd = 0;
    Py_RETURN_NONE;
}

static PyObject *LayerBase_unbind(LayerBase *self, PyObject *unused) {
    (void)unused;
    self->h = NULL;
    Py_RETURN_NONE;
}

/* _fast_torch(): the torch path's first call on a CPU layer (torch imported, set_torch done). */
static PyObject *LayerBase_torch(LayerBase *self, PyObject *unused) {
    (void)unused;
    self->torch_on = g_tensor && g_to_dlpack;
    Py_RETURN_NONE;
}

static PyObject *LayerBase_get_bias(LayerBase *self, void *c) {
    (void)c;
    PyObject *b = self->bias ? self->bias : Py_None;
    Py_INCREF(b);
    return b;
}

static int LayerBase_set_bias(LayerBase *self, PyObject *v, void *c) {
    (void)c;
    Py_XINCREF(v);
    SETREF(self->bias, v);
    return 0;
}

static void LayerBase_dealloc(LayerBase *self) {
    PyTypeObject *tp = Py_TYPE((PyObject *)self);
    Py_CLEAR(self->np_dtype);
    Py_CLEAR(self->bias);
    Py_CLEAR(self->np_oshape);
    Py_CLEAR(self->np_spare);
    Py_CLEAR(self->t_oshape);
    freefunc f = (freefunc)PyType_GetSlot(tp, Py_tp_free);
    f(self);
    Py_DECREF(tp); /* a heap type's instances hold a reference to it */
}

static PyMethodDef LayerBase_methods[] = {
    {"apply", (PyCFunction)(void (*)(void))LayerBase_apply, METH_FASTCALL | METH_KEYWORDS,
     "apply(x, bias=None, out=None)\n--\n\n"
     "y = x W^T + bias for x of shape [..., k] in the activation type; returns y [..., n].\n\n"
     "x: a numpy array (bf16: uint16 raw bits or ml_dtypes.bfloat16), a torch tensor (CPU, or CUDA for a\n"
     "CUDA layer: asynchronous on the current stream) or any CPU DLPack producer (the result is then a\n"
     "numpy array). bias: [n] in the activation type, or None (the layer's own bias, if it has one).\n"
     "out: a C-contiguous array of the same kind, shape [..., n] and dtype to write into (returned).\n"
     "The GIL is released while the kernel runs. (Compiled path: mplinear._fast.)"},
    {"_fast_bind", (PyCFunction)LayerBase_bind, METH_VARARGS, NULL},
    {"_fast_unbind", (PyCFunction)LayerBase_unbind, METH_NOARGS, NULL},
    {"_fast_torch", (PyCFunction)LayerBase_torch, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef LayerBase_getset[] = {
    {"bias", (getter)LayerBase_get_bias, (setter)LayerBase_set_bias,
     "the layer's own bias, added when apply is given none (None: no bias)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot LayerBase_slots[] = {
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, LayerBase_dealloc},
    {Py_tp_methods, LayerBase_methods},
    {Py_tp_getset, LayerBase_getset},
    {Py_tp_doc, "The compiled part of mplinear.Layer: apply's common cases (see mplinear/_fast.c)."},
    {0, NULL},
};

static PyType_Spec LayerBase_spec = {"mplinear._fast.LayerBase", sizeof(LayerBase), 0,
                                     Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, LayerBase_slots};

/* setup(apply_address, numpy.ndarray, numpy.empty, mplinear._raise) */
static PyObject *setup(PyObject *mod, PyObject *args) {
    (void)mod;
    unsigned long long addr;
    PyObject *nd, *empty, *raise;
    if (!PyArg_ParseTuple(args, "KOOO", &addr, &nd, &empty, &raise)) return NULL;
    g_apply = (apply_fn)(uintptr_t)addr;
    Py_INCREF(nd); SETREF(g_ndarray, nd);
    Py_INCREF(empty); SETREF(g_empty, empty);
    Py_INCREF(raise); SETREF(g_raise, raise);
    Py_RETURN_NONE;
}

/* set_torch(torch.Tensor, torch._C._to_dlpack or None): the torch path's tensor type and exporter. */
static PyObject *set_torch(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *t, *export;
    if (!PyArg_ParseTuple(args, "OO", &t, &export)) return NULL;
    Py_INCREF(t);
    SETREF(g_tensor, t);
    if (export == Py_None) export = NULL;
    Py_XINCREF(export);
    SETREF(g_to_dlpack, export);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"setup", setup, METH_VARARGS, "setup(apply_address, ndarray, empty, raise_fn): bind the library's mpl_layer_apply"},
    {"set_torch", set_torch, METH_VARARGS, "set_torch(torch.Tensor, torch._C._to_dlpack or None)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_fast",
                                        "The compiled hot path of mplinear.Layer.apply.", -1, module_methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__fast(void) {
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    PyObject *tp = PyType_FromSpec(&LayerBase_spec);
    if (!tp || PyModule_AddObject(m, "LayerBase", tp) < 0) {
        Py_XDECREF(tp);
        Py_DECREF(m);
        return NULL;
    }
    struct { PyObject **p; const char *s; } names[] = {
        {&s_apply_py, "_apply_py"}, {&s_new_empty, "new_empty"}, {&s_data_ptr, "data_ptr"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!(*names[i].p = PyUnicode_InternFromString(names[i].s))) { Py_DECREF(m); return NULL; }
    return m;
}
