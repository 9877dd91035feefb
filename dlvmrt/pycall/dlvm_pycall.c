/* A CPython extension that calls an entry of a library built by `dlvm aot` (dlvmrt/aot.py):
 * the arrays' pointers and shapes go into the library's tensor structs and its results come back
 * as NumPy arrays that own the library's buffers, all in C. Through ctypes the same call built
 * Python objects for every field and result, a dozen microseconds of a small model's call.
 *
 *   call(fn, free, arrays, n_out) -> (0, results) or (code, message)
 *
 * fn and free are the addresses of the entry and of the library's free; arrays are C-contiguous
 * ndarrays (the caller makes them so). The GIL is released during the library's call: many
 * threads may run the library at once. Built and loaded by dlvmrt/pycall/__init__.py; without a
 * C compiler or Python's headers aot.py calls through ctypes instead. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

#define MAX_RANK 8          /* dlvmrt/aot.py: MAX_RANK */
#define MAX_ARGS 64         /* more arguments or results: the caller uses ctypes */
#define CAPSULE "dlvm.buffer"

typedef struct {            /* dlvmrt/aot.py: Tensor */
    void *data;
    int64_t shape[MAX_RANK];
    int32_t rank;
    int32_t dtype;
} tensor;

typedef struct {            /* dlvmrt/aot.py: Status */
    int32_t code;
    char message[480];
} status;

typedef int32_t (*entry_fn)(const tensor *, tensor *, status *);
typedef void (*free_fn)(void *);

/* NumPy type number -> dlvm dtype code, and back (set by init from isa.dtypes) */
#define TYPES 64
static int code_of_type[TYPES];
static int type_of_code[TYPES];

static PyObject *init(PyObject *self, PyObject *table) {
    (void)self;
    for (int i = 0; i < TYPES; i++) code_of_type[i] = type_of_code[i] = -1;
    PyObject *seq = PySequence_Fast(table, "init takes (type number, code) pairs");
    if (!seq) return NULL;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        int num, code;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "ii", &num, &code)) {
            Py_DECREF(seq);
            return NULL;
        }
        if (num >= 0 && num < TYPES && code >= 0 && code < TYPES) {
            code_of_type[num] = code;
            type_of_code[code] = num;
        }
    }
    Py_DECREF(seq);
    return Py_BuildValue("nn", (Py_ssize_t)sizeof(tensor), (Py_ssize_t)sizeof(status));
}

static void free_buffer(PyObject *capsule) {
    free_fn f = (free_fn)PyCapsule_GetContext(capsule);
    void *p = PyCapsule_GetPointer(capsule, CAPSULE);
    if (f && p) f(p);
}

/* a result as an array owning the library's buffer (freed by the library's free with the
 * array's last reference); an empty result frees its buffer and is a fresh empty array */
static PyObject *result_array(const tensor *t, free_fn lib_free) {
    int type = t->dtype >= 0 && t->dtype < TYPES ? type_of_code[t->dtype] : -1;
    if (type < 0 || t->rank < 0 || t->rank > MAX_RANK) {
        if (t->data) lib_free(t->data);
        PyErr_Format(PyExc_RuntimeError, "the library returned dtype %d of rank %d", t->dtype,
                     t->rank);
        return NULL;
    }
    npy_intp dims[MAX_RANK];
    npy_intp n = 1;
    for (int d = 0; d < t->rank; d++) {
        dims[d] = (npy_intp)t->shape[d];
        n *= dims[d];
    }
    if (!t->data || n == 0) {
        if (t->data) lib_free(t->data);
        return PyArray_SimpleNew(t->rank, dims, type);
    }
    PyObject *capsule = PyCapsule_New(t->data, CAPSULE, free_buffer);
    if (!capsule) {
        lib_free(t->data);
        return NULL;
    }
    if (PyCapsule_SetContext(capsule, (void *)lib_free)) {
        Py_DECREF(capsule);
        return NULL;
    }
    PyObject *a = PyArray_SimpleNewFromData(t->rank, dims, type, t->data);
    if (!a) {
        Py_DECREF(capsule);       /* frees the buffer */
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)a, capsule)) {   /* steals the capsule */
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

static PyObject *call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "call(fn, free, arrays, n_out)");
        return NULL;
    }
    entry_fn fn = (entry_fn)PyLong_AsVoidPtr(args[0]);
    free_fn lib_free = (free_fn)PyLong_AsVoidPtr(args[1]);
    Py_ssize_t n_out = PyLong_AsSsize_t(args[3]);
    if (PyErr_Occurred()) return NULL;
    /* a tuple of its own: the arrays stay referenced while the GIL is released, whatever
     * another thread does to the caller's list */
    PyObject *seq = PySequence_Tuple(args[2]);
    if (!seq) return NULL;
    Py_ssize_t n_in = PyTuple_GET_SIZE(seq);
    if (n_in > MAX_ARGS || n_out > MAX_ARGS || n_out < 0 || !fn || !lib_free) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many arguments or results for the fast call");
        return NULL;
    }
    tensor ins[MAX_ARGS], outs[MAX_ARGS];
    for (Py_ssize_t i = 0; i < n_in; i++) {
        PyObject *o = PyTuple_GET_ITEM(seq, i);
        if (!PyArray_Check(o) || !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)o)) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "the fast call takes C-contiguous arrays");
            return NULL;
        }
        PyArrayObject *a = (PyArrayObject *)o;
        int rank = PyArray_NDIM(a);
        if (rank > MAX_RANK) {
            Py_DECREF(seq);
            return Py_BuildValue("(is)", 1, "an argument has more than 8 dims");
        }
        int type = PyArray_TYPE(a);
        ins[i].data = PyArray_SIZE(a) ? PyArray_DATA(a) : NULL;
        ins[i].rank = rank;
        ins[i].dtype = type >= 0 && type < TYPES && PyArray_ISNOTSWAPPED(a) ? code_of_type[type] : -1;
        const npy_intp *shape = PyArray_DIMS(a);
        for (int d = 0; d < rank; d++) ins[i].shape[d] = (int64_t)shape[d];
    }
    status st;
    st.code = 0;
    st.message[0] = 0;
    int32_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(ins, outs, &st);
    Py_END_ALLOW_THREADS
    Py_DECREF(seq);
    if (rc) {
        st.message[sizeof st.message - 1] = 0;
        return Py_BuildValue("(iN)", (int)rc,
                             PyUnicode_DecodeUTF8(st.message, (Py_ssize_t)strlen(st.message), "replace"));
    }
    PyObject *results = PyTuple_New(n_out);
    if (!results) {
        for (Py_ssize_t j = 0; j < n_out; j++) if (outs[j].data) lib_free(outs[j].data);
        return NULL;
    }
    for (Py_ssize_t j = 0; j < n_out; j++) {
        PyObject *a = result_array(&outs[j], lib_free);
        if (!a) {
            for (Py_ssize_t k = j + 1; k < n_out; k++) if (outs[k].data) lib_free(outs[k].data);
            Py_DECREF(results);
            return NULL;
        }
        PyTuple_SET_ITEM(results, j, a);
    }
    return Py_BuildValue("(iN)", 0, results);
}

static PyMethodDef methods[] = {
    {"init", (PyCFunction)init, METH_O, "init(pairs of (NumPy type number, dlvm dtype code))"},
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, "call(fn, free, arrays, n_out)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dlvm_pycall", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__dlvm_pycall(void) {
    import_array();
    return PyModule_Create(&module);
}
