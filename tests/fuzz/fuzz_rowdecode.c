/*
 * Fuzz target: the binlog row decoder (csrc/rowdecode.c), both outputs.
 *
 * Input: flags byte (1: update image pairs, 2: a sink with change columns, 4: deletes),
 * column count byte (% 17), 4 bytes per column (kind, a, b, out: mapped onto a valid plan
 * entry; out's top bit drops the column), the columns-present bitmap(s), then the rows
 * event body. Checks, besides the sanitizers': only ValueError/IndexError/OverflowError
 * escape; decode() and decode_into() succeed or fail together, with as many images and
 * NULLs exactly where the tuples have None; no more images than body bytes (an image, or
 * an update's pair, takes at least one); a failed decode_into leaves the sink empty.
 */
#include "rowdecode.c"

#include "harness.h"

static PyObject *DecoderClass, *SinkClass, *DecimalClass, *ENUM_LABELS, *SET_LABELS,
    *CHANGE_TYPES;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    python_start();
    PyObject *module = module_from(PyInit__rowdecode, "_rowdecode");
    DecoderClass = PyObject_GetAttrString(module, "Decoder");
    SinkClass = PyObject_GetAttrString(module, "Sink");
    PyObject *decimal = PyImport_ImportModule("decimal");
    DecimalClass = decimal ? PyObject_GetAttrString(decimal, "Decimal") : NULL;
    ENUM_LABELS = Py_BuildValue("(ssss)", "", "a", "b\xc3\xa9", "\xe2\x82\xacuro");
    SET_LABELS = Py_BuildValue("(sss)", "x", "y\xc3\xbf", "z");
    CHANGE_TYPES =
        Py_BuildValue("(ssss)", "insert", "update_preimage", "update_postimage", "delete");
    if (!DecoderClass || !SinkClass || !DecimalClass || !ENUM_LABELS || !SET_LABELS ||
        !CHANGE_TYPES)
        FINDING("set-up failed");
    return 0;
}

/* One plan entry (kind, out, a, b[, labels]) from 4 input bytes, always valid. */
static PyObject *plan_entry(Input *in, int *width) {
    static const int INT_SIZES[5] = {1, 2, 3, 4, 8};
    int kind = 1 + take_byte(in) % 18, a = take_byte(in), b = take_byte(in);
    int out = take_byte(in) & 0x80 ? -1 : (*width)++;
    PyObject *labels = NULL;
    switch (kind) {
    case K_INT: case K_BOOL_INT: a = INT_SIZES[a % 5]; b &= 1; break;
    case K_UINT64_DEC: a = 0; b &= 1; break;
    case K_DECIMAL: case K_DECIMAL_TEXT: a = 1 + a % 65; b %= (a < 30 ? a : 30) + 1; break;
    case K_BIT_BOOL: case K_BITS: a = 1 + a % 8; b = 1 + b % 64; break;
    case K_DATETIME2: case K_TIMESTAMP2: case K_TIME2: a %= 7; b = 0; break;
    case K_STR: a = 1 + a % 4; b %= 3; break;
    case K_BYTES: a = 1 + a % 4; break; /* b: BINARY(b) padding, 0-255 */
    case K_ENUM: a = 1 + a % 2; b = 0; labels = ENUM_LABELS; break;
    case K_SET: a = 1 + a % 8; b = 0; labels = SET_LABELS; break;
    default: a = b = 0; break;
    }
    return labels ? Py_BuildValue("(iiiiO)", kind, out, a, b, labels)
                  : Py_BuildValue("(iiii)", kind, out, a, b);
}

/* A columns-present bitmap of n columns (missing input bytes are zero). */
static PyObject *bitmap(Input *in, int n) {
    unsigned char bits[3] = {0, 0, 0};
    size_t got;
    const uint8_t *p = take_bytes(in, (size_t)(n + 7) / 8, &got);
    memcpy(bits, p, got);
    return PyBytes_FromStringAndSize((const char *)bits, (n + 7) / 8);
}

static Py_ssize_t as_count(PyObject *v, const char *what);

/* The Arrow columns of take() have their NULLs exactly where decode()'s tuples have None. */
static void check_nulls(PyObject *rows, PyObject *columns, int width) {
    Py_ssize_t images = PyList_GET_SIZE(rows);
    for (int slot = 0; slot < width; slot++) {
        PyObject *column = PyList_GET_ITEM(columns, slot);
        PyObject *validity = PyTuple_GET_ITEM(column, 0);
        Py_ssize_t nulls = as_count(PyTuple_GET_ITEM(column, 3), "null_count"), none = 0;
        for (Py_ssize_t i = 0; i < images; i++) {
            int is_none = PyTuple_GET_ITEM(PyList_GET_ITEM(rows, i), slot) == Py_None;
            none += is_none;
            int valid = validity == Py_None ||
                        (PyBytes_AS_STRING(validity)[i >> 3] >> (i & 7) & 1);
            if (valid == is_none)
                FINDING("image %zd, slot %d: %s in tuples, %s in Arrow", i, slot,
                        is_none ? "None" : "a value", valid ? "a value" : "NULL");
        }
        if (nulls != none) FINDING("slot %d: %zd NULLs in Arrow, %zd None", slot, nulls, none);
    }
}

static Py_ssize_t as_count(PyObject *v, const char *what) {
    Py_ssize_t n = PyLong_AsSsize_t(v);
    if (n == -1 && PyErr_Occurred()) FINDING("%s is not a count", what);
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in = {data, size};
    int flags = take_byte(&in);
    int update = flags & 1, changes = flags & 2, kind = update ? 1 : flags & 4 ? 3 : 0;
    int n = take_byte(&in) % 17, width = 0;
    PyObject *plan = PyTuple_New(n);
    for (int i = 0; i < n; i++) PyTuple_SET_ITEM(plan, i, plan_entry(&in, &width));
    PyObject *decoder = PyObject_CallFunction(DecoderClass, "OiO", plan, width, DecimalClass);
    if (decoder == NULL) FINDING("a valid plan was refused");
    PyObject *present = bitmap(&in, n);
    PyObject *present2 = update ? bitmap(&in, n) : Py_NewRef(Py_None);
    Py_ssize_t len = (Py_ssize_t)in.n;
    PyObject *body = PyBytes_FromStringAndSize((const char *)in.p, len);

    PyObject *rows =
        PyObject_CallMethod(decoder, "decode", "OnnOO", body, (Py_ssize_t)0, len, present, present2);
    Py_ssize_t images = -1;
    if (rows == NULL) {
        expect_decoder_error("decode()");
    } else {
        images = PyList_GET_SIZE(rows);
        /* every image takes a byte, or every pair (an update's image may have no column) */
        if (images > (update ? 2 * len : len))
            FINDING("%zd images from %zd body bytes", images, len);
    }

    PyObject *layout = PyObject_CallMethod(decoder, "layout", NULL);
    if (layout == NULL) FINDING("layout() failed");
    if (layout != Py_None) {
        PyObject *sink = changes ? PyObject_CallFunction(SinkClass, "OO", layout, CHANGE_TYPES)
                                 : PyObject_CallOneArg(SinkClass, layout);
        if (sink == NULL) FINDING("Sink(layout()) failed");
        PyObject *count =
            PyObject_CallMethod(decoder, "decode_into", "OOnnOOLLi", sink, body, (Py_ssize_t)0,
                                len, present, present2, 7LL, 1700000000LL, kind);
        if (count == NULL) expect_decoder_error("decode_into()");
        if ((count == NULL) != (rows == NULL))
            FINDING("decode() %s but decode_into() %s", rows ? "decoded" : "raised",
                    count ? "decoded" : "raised");
        Py_ssize_t sunk = count ? as_count(count, "decode_into()") : 0;
        if (count && sunk != images) FINDING("decode_into() %zd images, decode() %zd", sunk, images);
        PyObject *held = PyObject_CallMethod(sink, "rows", NULL);
        if (held == NULL || as_count(held, "rows()") != sunk)
            FINDING("the sink holds other images than decode_into() wrote");
        PyObject *taken = PyObject_CallMethod(sink, "take", NULL);
        if (taken == NULL || !PyTuple_Check(taken) || PyTuple_GET_SIZE(taken) != 2 ||
            as_count(PyTuple_GET_ITEM(taken, 0), "take()") != sunk)
            FINDING("take() does not give the images written");
        if (count) check_nulls(rows, PyTuple_GET_ITEM(taken, 1), width);
        Py_XDECREF(taken);
        Py_XDECREF(held);
        Py_XDECREF(count);
        Py_DECREF(sink);
    }
    Py_DECREF(layout);
    Py_XDECREF(rows);
    Py_DECREF(body);
    Py_DECREF(present2);
    Py_DECREF(present);
    Py_DECREF(decoder);
    Py_DECREF(plan);
    return 0;
}
