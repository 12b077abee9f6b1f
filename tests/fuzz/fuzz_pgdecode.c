/*
 * Fuzz target: the pgoutput decoder (csrc/pgdecode.c).
 *
 * Input: column count byte (% 9), one kind byte per column (% the kind count), then one
 * pgoutput message. Checks, besides the sanitizers': only ValueError escapes (the messages
 * pgoutput.parse_message raises; UnicodeDecodeError is one); the message read from bytes
 * and from another buffer (bytearray) gives the same result or the same failure; a result
 * is the documented 6-tuple.
 */
#include "pgdecode.c"

#include "harness.h"

static PyObject *DecoderClass;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    python_start();
    PyObject *module = module_from(PyInit__pgdecode, "_pgdecode");
    DecoderClass = PyObject_GetAttrString(module, "Decoder");
    if (DecoderClass == NULL) FINDING("set-up failed");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in = {data, size};
    int n = take_byte(&in) % 9;
    PyObject *kinds = PyTuple_New(n);
    for (int i = 0; i < n; i++) PyTuple_SET_ITEM(kinds, i, PyLong_FromLong(take_byte(&in) % K_COUNT));
    PyObject *decoder = PyObject_CallFunction(DecoderClass, "OO", kinds, Py_Ellipsis);
    if (decoder == NULL) FINDING("valid kinds were refused");
    PyObject *message = PyBytes_FromStringAndSize((const char *)in.p, (Py_ssize_t)in.n);
    PyObject *copy = PyByteArray_FromStringAndSize((const char *)in.p, (Py_ssize_t)in.n);
    PyObject *change = PyObject_CallMethod(decoder, "change", "O", message);
    if (change == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_ValueError)) FINDING("change() raised a non-ValueError");
        PyErr_Clear();
    } else if (!PyTuple_Check(change) || PyTuple_GET_SIZE(change) != 6) {
        FINDING("change() is not a 6-tuple");
    }
    PyObject *again = PyObject_CallMethod(decoder, "change", "O", copy);
    if (again == NULL) PyErr_Clear();
    if ((change == NULL) != (again == NULL)) FINDING("bytes and bytearray disagree");
    if (change != NULL) {
        PyObject *a = PyObject_Repr(change), *b = PyObject_Repr(again);
        if (a == NULL || b == NULL || PyUnicode_Compare(a, b) != 0)
            FINDING("bytes and bytearray give different values");
        Py_DECREF(a);
        Py_DECREF(b);
    }
    Py_XDECREF(again);
    Py_XDECREF(change);
    Py_DECREF(copy);
    Py_DECREF(message);
    Py_DECREF(decoder);
    Py_DECREF(kinds);
    return 0;
}
