/*
 * Fuzz target: the snapshot reader's text parsers and Arrow builders (csrc/mysqlarrow.c),
 * i.e. what a server's result rows go through; the connection itself needs a server (its
 * thread safety is tested in tests/integration/test_mysql_native_reader.py).
 *
 * Input: kind byte (% 13 + 1), scale byte (% 39), then values, each a length byte (255:
 * NULL) and that many bytes. The batch is built twice, under the "C" locale and under a
 * decimal-comma one (de_DE.UTF-8, from LOCPATH; fuzz.py builds it), and must come out
 * byte for byte the same. Integers and decimals the parser accepts must have Python's value
 * (int(text), Decimal(text) scaled).
 */
#include "mysqlarrow.c"

#include <locale.h>

#include "harness.h"

static locale_t c_numbers, comma_numbers;
static PyObject *DecimalClass;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    python_start();
    module_from(PyInit__mysqlarrow, "_mysqlarrow");
    PyObject *decimal = PyImport_ImportModule("decimal");
    DecimalClass = decimal ? PyObject_GetAttrString(decimal, "Decimal") : NULL;
    if (DecimalClass == NULL || PyRun_SimpleString("import decimal\n"
                                                   "decimal.getcontext().prec = 200\n"))
        FINDING("set-up failed");
    c_numbers = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    comma_numbers = newlocale(LC_ALL_MASK, "de_DE.UTF-8", (locale_t)0);
    if (comma_numbers == (locale_t)0) FINDING("no de_DE.UTF-8 locale (LOCPATH, fuzz.py)");
    return 0;
}

/* One batch built under `locale`: the rows appended (-1: all) and the buffers' bytes. */
typedef struct {
    Py_ssize_t failed_row;
    char *bytes;
    size_t len;
} Outcome;

static void snapshot(Builder *b, Py_ssize_t rows, Outcome *out) {
    size_t bitmap = (size_t)(rows + 7) / 8, values;
    if (is_var(b->kind)) values = sizeof(int32_t) * (size_t)(rows + 1) + b->data_len;
    else if (is_bool(b->kind)) values = bitmap;
    else values = (size_t)b->width * (size_t)rows;
    out->len = bitmap + values;
    out->bytes = malloc(out->len ? out->len : 1);
    memcpy(out->bytes, b->validity, bitmap);
    if (is_var(b->kind)) {
        memcpy(out->bytes + bitmap, b->offsets, sizeof(int32_t) * (size_t)(rows + 1));
        memcpy(out->bytes + bitmap + sizeof(int32_t) * (size_t)(rows + 1), b->data, b->data_len);
    } else {
        memcpy(out->bytes + bitmap, b->values, values);
    }
}

/* The value the parser stored for row r, checked against Python's reading of the text. */
static void check_value(Builder *b, Py_ssize_t r, const char *s, unsigned long len) {
    if (s == NULL || !(b->validity[r >> 3] & (1 << (r & 7)))) return; /* NULL or invalid */
    PyObject *text = PyUnicode_DecodeLatin1(s, (Py_ssize_t)len, NULL), *got = NULL, *want = NULL;
    switch (b->kind) {
    case K_I8: got = PyLong_FromLong(((int8_t *)b->values)[r]); break;
    case K_I16: got = PyLong_FromLong(((int16_t *)b->values)[r]); break;
    case K_I32: got = PyLong_FromLong(((int32_t *)b->values)[r]); break;
    case K_I64: got = PyLong_FromLongLong(((int64_t *)b->values)[r]); break;
    case K_DECIMAL:
        got = _PyLong_FromByteArray((const unsigned char *)b->values + 16 * r, 16, 1, 1);
        break;
    default: Py_DECREF(text); return;
    }
    if (b->kind == K_DECIMAL) {
        PyObject *d = PyObject_CallOneArg(DecimalClass, text);
        PyObject *scaled = d ? PyObject_CallMethod(d, "scaleb", "i", b->scale) : NULL;
        want = scaled ? PyNumber_Long(scaled) : NULL;
        Py_XDECREF(scaled);
        Py_XDECREF(d);
    } else {
        want = PyLong_FromUnicodeObject(text, 10);
    }
    if (want == NULL) FINDING("the parser accepted %.*s, which Python refuses", (int)len, s);
    if (PyObject_RichCompareBool(got, want, Py_EQ) != 1)
        FINDING("the parser read %.*s as another number than Python", (int)len, s);
    Py_DECREF(want);
    Py_DECREF(got);
    Py_DECREF(text);
}

static void build(int kind, int scale, const uint8_t *data, size_t size, Py_ssize_t rows,
                  locale_t locale, int check, Outcome *out) {
    Builder b = {0};
    b.kind = kind;
    b.scale = scale;
    b.width = kind_width(kind);
    if (!builder_alloc(&b, rows)) FINDING("out of memory");
    Input in = {data, size};
    const char *why = NULL;
    locale_t before = uselocale(locale);
    out->failed_row = -1;
    for (Py_ssize_t r = 0; r < rows; r++) {
        int len = take_byte(&in);
        size_t got = 0;
        const char *s = len == 255 ? NULL : (const char *)take_bytes(&in, (size_t)len, &got);
        if (builder_append(&b, r, s, (unsigned long)got, &why)) {
            out->failed_row = r;
            break;
        }
        if (check) check_value(&b, r, s, (unsigned long)got);
    }
    uselocale(before);
    snapshot(&b, out->failed_row < 0 ? rows : out->failed_row, out);
    if (out->failed_row < 0) {
        PyObject *columns = builder_finish(&b, rows);
        if (columns == NULL) FINDING("builder_finish failed");
        Py_DECREF(columns);
    }
    builder_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Input in = {data, size};
    int kind = 1 + take_byte(&in) % 13, scale = take_byte(&in) % 39;
    Py_ssize_t rows = 0;
    for (Input count = in; count.n > 0; rows++) {
        int len = take_byte(&count);
        size_t got;
        if (len != 255) take_bytes(&count, (size_t)len, &got);
    }
    if (rows == 0) rows = 1; /* no value bytes: one empty text */
    Outcome c, comma;
    build(kind, scale, in.p, in.n, rows, c_numbers, 1, &c);
    build(kind, scale, in.p, in.n, rows, comma_numbers, 0, &comma);
    if (c.failed_row != comma.failed_row || c.len != comma.len || memcmp(c.bytes, comma.bytes, c.len))
        FINDING("kind %d: the batch differs under a decimal-comma locale (rows %zd / %zd)", kind,
                c.failed_row, comma.failed_row);
    free(c.bytes);
    free(comma.bytes);
    return 0;
}
