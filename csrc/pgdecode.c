/*
 * Fast decoder for pgoutput (protocol version 1) row changes: Insert, Update, Delete.
 *
 * The PostgreSQL log reader parses each message in Python (wal/pgoutput.py) and then turns
 * every value's text into its canonical Python value with server/types.py's value_parser;
 * together ~10 us per change. This module does both steps in C for one captured table
 * (wal/fastdecode.py builds a Decoder per table and finishes what is left here).
 *
 * The contract is "identical or deferred": a value is converted here only when the text
 * has exactly the form PostgreSQL prints under the connector's SESSION_SETTINGS and the C
 * conversion provably gives what the Python parser gives (same type, same value). Any other
 * text (infinity dates, BC years, NaN decimals, float32 midpoints, arrays, ...) is handed
 * back as its str and the change is flagged, so Python's parser decides it, errors included.
 *
 * Everything is bounds-checked: a malformed message raises ValueError (the messages of
 * pgoutput.parse_message), never reads past the end of the buffer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "civil.h"

/* Column kinds: keep in sync with wal/fastdecode.py (Kind); exported as KIND_* constants. */
enum {
    K_STR = 0,         /* the text itself                                   -> str      */
    K_INT = 1,         /* int2/int4/int8/oid: [-]digits                     -> int      */
    K_BOOL = 2,        /* 't' / 'f'                                         -> bool     */
    K_FLOAT8 = 3,      /* shortest round-trip text, NaN, [-]Infinity        -> float    */
    K_FLOAT4 = 4,      /* the same, rounded to float32 once                 -> float    */
    K_DECIMAL = 5,     /* numeric(p,s) in precise mode: [-]digits[.digits]  -> Decimal  */
    K_DATE = 6,        /* YYYY-MM-DD                                        -> date     */
    K_TIMESTAMP = 7,   /* YYYY-MM-DD HH:MM:SS[.f{1,6}]                      -> datetime */
    K_TIMESTAMPTZ = 8, /* the same + '+00'                                  -> datetime UTC */
    K_BYTEA = 9,       /* \x + hex                                          -> bytes    */
    K_FALLBACK = 10,   /* always the str, for Python                        -> str      */
    K_COUNT
};

/* Conversion results: the value is set, Python must decide, or an exception is set. */
enum { CONVERTED = 1, DEFER = 0, FAILED = -1 };

static PyObject *Decimal;        /* decimal.Decimal */
static PyObject *OLD_KEY;        /* 'K' */
static PyObject *OLD_FULL;       /* 'O' */

typedef struct {
    PyObject_HEAD
    unsigned char *kinds;
    Py_ssize_t ncolumns;
    PyObject *unchanged;         /* what a 'u' (unchanged TOAST) column becomes */
} DecoderObject;

typedef struct {
    const unsigned char *data;
    Py_ssize_t len;
    Py_ssize_t pos;
    int fallback;                /* some value was left as text for Python */
} Message;

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* The digits s[0..n) as a number; the caller has checked they are digits. */
static int digits_value(const unsigned char *s, int n) {
    int v = 0;
    for (int i = 0; i < n; i++) v = v * 10 + (s[i] - '0');
    return v;
}

static int all_digits(const unsigned char *s, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (!is_digit(s[i])) return 0;
    return 1;
}

/* pgoutput.parse_message's message for any read past the end. */
static PyObject *truncated(const Message *m) {
    PyErr_Format(PyExc_ValueError, "truncated pgoutput message (%zd bytes, type '%c')", m->len,
                 m->data[0]);
    return NULL;
}

/* ---------------------------------------------------------------------------------------
 * Texts -> values. Each returns CONVERTED (with *out set), DEFER or FAILED.
 */

/* int(text) for [-]digits with at most 19 digits (int8 and oid always fit); others
 * ('+1', ' 1', '1_0', 20 digits) are left to int(). */
static int to_int(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    int negative = n > 0 && s[0] == '-';
    Py_ssize_t i = negative;
    if (n - i < 1 || n - i > 19) return DEFER;
    uint64_t v = 0;  /* 19 digits < 2^64 */
    for (; i < n; i++) {
        if (!is_digit(s[i])) return DEFER;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (!negative) {
        *out = PyLong_FromUnsignedLongLong(v);
    } else if (v <= (uint64_t)INT64_MAX) {
        *out = PyLong_FromLongLong(-(long long)v);
    } else if (v == (uint64_t)INT64_MAX + 1) {
        *out = PyLong_FromLongLong(INT64_MIN);
    } else {
        return DEFER;
    }
    return *out == NULL ? FAILED : CONVERTED;
}

/* The grammar of float4out/float8out: [-]digits[.digits][e(+|-)digits], 'NaN',
 * 'Infinity', '-Infinity' (plus the harmless generalisations '.5', '5.', 'E', no exponent
 * sign). Anything else, including what float() would accept besides (spaces, '_', 'inf',
 * 'nan' in other cases), is left to Python. */
static int float_syntax(const unsigned char *s, Py_ssize_t n) {
    if ((n == 3 && memcmp(s, "NaN", 3) == 0) || (n == 8 && memcmp(s, "Infinity", 8) == 0) ||
        (n == 9 && memcmp(s, "-Infinity", 9) == 0))
        return 1;
    Py_ssize_t i = 0, digits = 0;
    if (i < n && s[i] == '-') i++;
    for (; i < n && is_digit(s[i]); i++) digits++;
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++) digits++;
    }
    if (digits == 0) return 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) i++;
        Py_ssize_t exponent = 0;
        for (; i < n && is_digit(s[i]); i++) exponent++;
        if (exponent == 0) return 0;
    }
    return i == n;
}

/* float(text), bit for bit: PyOS_string_to_double is what float() calls (correctly
 * rounded, independent of the C locale, unlike strtod). */
static int parse_double(const unsigned char *s, Py_ssize_t n, double *value) {
    char buf[64];
    if (n >= (Py_ssize_t)sizeof buf || !float_syntax(s, n)) return DEFER;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end = NULL;
    *value = PyOS_string_to_double(buf, &end, NULL);
    if (*value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return DEFER;
    }
    return end == buf + n ? CONVERTED : DEFER;
}

static int to_float8(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    double d;
    int r = parse_double(s, n, &d);
    if (r != CONVERTED) return r;
    *out = PyFloat_FromDouble(d);
    return *out == NULL ? FAILED : CONVERTED;
}

/* The magnitude of a float text (float_syntax) that denotes an integer below 10^19
 * ('6.431177e+07' -> 64311770), else 0. */
static int integer_text(const unsigned char *s, Py_ssize_t n, uint64_t *out) {
    char digits[64];
    int count = 0, fraction = 0, exponent = 0, negative_exponent = 0;
    Py_ssize_t i = s[0] == '-';
    for (; i < n && is_digit(s[i]); i++) digits[count++] = (char)s[i];
    if (i < n && s[i] == '.')
        for (i++; i < n && is_digit(s[i]); i++, fraction++) digits[count++] = (char)s[i];
    if (i < n) { /* 'e' (float_syntax checked the rest) */
        i++;
        if (s[i] == '+' || s[i] == '-') negative_exponent = s[i++] == '-';
        if (n - i > 4) return 0;
        exponent = digits_value(s + i, (int)(n - i));
    }
    int scale = (negative_exponent ? -exponent : exponent) - fraction;
    int first = 0;
    while (first < count && digits[first] == '0') first++;
    for (; scale < 0 && count > first; scale++, count--) /* drop zeros after the point */
        if (digits[count - 1] != '0') return 0;
    if (count <= first) { /* no significant digit left: 0 */
        *out = 0;
        return 1;
    }
    if (count - first + scale > 19) return 0;
    uint64_t v = 0;
    for (int k = first; k < count; k++) v = v * 10 + (uint64_t)(digits[k] - '0');
    for (; scale > 0; scale--) v *= 10;
    *out = v;
    return 1;
}

/* types._parse_float4: the double rounded to float32, as struct.pack('<f') rounds it
 * ((float)d, ties to even). That is the float32 nearest to the text unless the double is
 * exactly halfway between two float32 values while the text need not be: Python settles
 * that case with the exact decimal, so it is deferred, except when the text is an integer
 * equal to the double (a true tie, which Python also rounds to even). Shortest texts of
 * float32 values from 2^25 on are such ties now and then ('6.431177e+07'). A value beyond
 * float32's range is deferred too (Python raises PgValueError). */
static int to_float4(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    double d;
    int r = parse_double(s, n, &d);
    if (r != CONVERTED) return r;
    float single = (float)d;
    if (isinf(single) && !isinf(d)) return DEFER;
    if ((double)single != d && !isnan(d)) {
        uint32_t bits;
        memcpy(&bits, &single, 4);
        bits = fabs(d) > fabs((double)single) ? bits + 1 : bits - 1;
        float neighbour;
        memcpy(&neighbour, &bits, 4);
        uint64_t exact = 0;
        if (d == ((double)single + (double)neighbour) / 2 &&
            !(fabs(d) < 0x1p64 && floor(d) == d && integer_text(s, n, &exact) &&
              exact == (uint64_t)fabs(d)))
            return DEFER;
    }
    *out = PyFloat_FromDouble((double)single);
    return *out == NULL ? FAILED : CONVERTED;
}

/* Decimal(text) for numeric_out's finite form [-]digits[.digits]: the constructor is exact
 * (no context rounding), so it keeps the scale's trailing zeros as Python does. 'NaN' and
 * '[-]Infinity' are deferred: the Python parser raises PgValueError for them. */
static int to_decimal(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    Py_ssize_t i = n > 0 && s[0] == '-';
    Py_ssize_t whole = 0, fraction = 0;
    for (; i < n && is_digit(s[i]); i++) whole++;
    if (i < n && s[i] == '.') {
        for (i++; i < n && is_digit(s[i]); i++) fraction++;
        if (fraction == 0) return DEFER;
    }
    if (whole == 0 || i != n) return DEFER;
    PyObject *text = PyUnicode_New(n, 127);
    if (text == NULL) return FAILED;
    memcpy(PyUnicode_1BYTE_DATA(text), s, n);
    *out = PyObject_CallOneArg(Decimal, text);
    Py_DECREF(text);
    return *out == NULL ? FAILED : CONVERTED;
}

/* 'YYYY-MM-DD' with a valid date of years 1-9999 (date.fromisoformat's domain). */
static int parse_date(const unsigned char *s, int *y, int *mo, int *d) {
    if (!all_digits(s, 4) || s[4] != '-' || !all_digits(s + 5, 2) || s[7] != '-' ||
        !all_digits(s + 8, 2))
        return 0;
    *y = digits_value(s, 4);
    *mo = digits_value(s + 5, 2);
    *d = digits_value(s + 8, 2);
    return *y >= 1 && *mo >= 1 && *mo <= 12 && *d >= 1 && *d <= days_in_month(*y, *mo);
}

static int to_date(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    int y, mo, d;
    if (n != 10 || !parse_date(s, &y, &mo, &d)) return DEFER;
    *out = PyDateTimeAPI->Date_FromDate(y, mo, d, PyDateTimeAPI->DateType);
    return *out == NULL ? FAILED : CONVERTED;
}

/* types._naive: 'YYYY-MM-DD HH:MM:SS' plus '.' and 1-6 fraction digits (padded to
 * microseconds), hours 0-23, minutes and seconds 0-59. PostgreSQL prints no other form for
 * years 1-9999 AD; '24:00:00' or leap seconds never come out of timestamp_out. */
static int to_datetime(const unsigned char *s, Py_ssize_t n, PyObject *tz, PyObject **out) {
    int y, mo, d;
    if (n < 19 || n == 20 || n > 26 || !parse_date(s, &y, &mo, &d) || s[10] != ' ' ||
        !all_digits(s + 11, 2) || s[13] != ':' || !all_digits(s + 14, 2) || s[16] != ':' ||
        !all_digits(s + 17, 2))
        return DEFER;
    int h = digits_value(s + 11, 2), mi = digits_value(s + 14, 2), sec = digits_value(s + 17, 2);
    if (h > 23 || mi > 59 || sec > 59) return DEFER;
    int us = 0;
    if (n > 19) {
        if (s[19] != '.' || !all_digits(s + 20, n - 20)) return DEFER;
        us = digits_value(s + 20, (int)(n - 20));
        for (Py_ssize_t k = n - 20; k < 6; k++) us *= 10;
    }
    *out = PyDateTimeAPI->DateTime_FromDateAndTime(y, mo, d, h, mi, sec, us, tz,
                                                   PyDateTimeAPI->DateTimeType);
    return *out == NULL ? FAILED : CONVERTED;
}

/* Under TimeZone 'UTC' timestamptz_out ends in '+00'; the Python parser then returns the
 * naive value with tzinfo=datetime.timezone.utc, the very object PyDateTime_TimeZone_UTC.
 * Other offsets are converted in Python. */
static int to_datetime_utc(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    if (n < 22 || memcmp(s + n - 3, "+00", 3) != 0) return DEFER;
    return to_datetime(s, n - 3, PyDateTime_TimeZone_UTC, out);
}

static int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* binascii.unhexlify(text[2:]) for '\x' + an even number of hex digits (either case). */
static int to_bytea(const unsigned char *s, Py_ssize_t n, PyObject **out) {
    if (n < 2 || s[0] != '\\' || s[1] != 'x' || (n & 1)) return DEFER;
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (n - 2) / 2);
    if (bytes == NULL) return FAILED;
    unsigned char *dst = (unsigned char *)PyBytes_AS_STRING(bytes);
    for (Py_ssize_t i = 2; i < n; i += 2) {
        int hi = hex_value(s[i]), lo = hex_value(s[i + 1]);
        if (hi < 0 || lo < 0) {
            Py_DECREF(bytes);
            return DEFER;
        }
        *dst++ = (unsigned char)(hi << 4 | lo);
    }
    *out = bytes;
    return CONVERTED;
}

/* One 't' value of column kind `kind`: a new reference, or NULL with an exception set. A
 * text left to Python is decoded as pgoutput.py decodes it (strict UTF-8, so invalid bytes
 * raise UnicodeDecodeError, a ValueError, as there) and flags the message. */
static PyObject *value(int kind, const unsigned char *s, Py_ssize_t n, Message *m) {
    PyObject *out = NULL;
    int r = DEFER;
    switch (kind) {
    case K_STR:
        return PyUnicode_DecodeUTF8((const char *)s, n, NULL);
    case K_INT:
        r = to_int(s, n, &out);
        break;
    case K_BOOL:
        if (n == 1 && (s[0] == 't' || s[0] == 'f')) {
            out = s[0] == 't' ? Py_True : Py_False;
            Py_INCREF(out);
            r = CONVERTED;
        }
        break;
    case K_FLOAT8:
        r = to_float8(s, n, &out);
        break;
    case K_FLOAT4:
        r = to_float4(s, n, &out);
        break;
    case K_DECIMAL:
        r = to_decimal(s, n, &out);
        break;
    case K_DATE:
        r = to_date(s, n, &out);
        break;
    case K_TIMESTAMP:
        r = to_datetime(s, n, Py_None, &out);
        break;
    case K_TIMESTAMPTZ:
        r = to_datetime_utc(s, n, &out);
        break;
    case K_BYTEA:
        r = to_bytea(s, n, &out);
        break;
    default: /* K_FALLBACK */
        break;
    }
    if (r == CONVERTED) return out;
    if (r == FAILED) return NULL;
    m->fallback = 1;
    return PyUnicode_DecodeUTF8((const char *)s, n, NULL);
}

/* TupleData at m->pos (pgoutput._tuple): a tuple of one value per column; m->pos moves
 * past it. */
static PyObject *read_tuple(DecoderObject *self, Message *m) {
    if (m->len - m->pos < 2) return truncated(m);
    Py_ssize_t count = (Py_ssize_t)m->data[m->pos] << 8 | m->data[m->pos + 1];
    m->pos += 2;
    if (count != self->ncolumns) {
        PyErr_Format(PyExc_ValueError,
                     "pgoutput tuple of %zd columns for a decoder of %zd columns (the "
                     "table's Relation changed?)",
                     count, self->ncolumns);
        return NULL;
    }
    PyObject *row = PyTuple_New(count);
    if (row == NULL) return NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (m->pos >= m->len) goto cut;
        unsigned char kind = m->data[m->pos];
        PyObject *v;
        if (kind == 't') {
            if (m->len - m->pos < 5) goto cut;
            uint32_t length = be32(m->data + m->pos + 1);
            Py_ssize_t start = m->pos + 5;
            if ((uint64_t)length > (uint64_t)(m->len - start)) goto cut;
            v = value(self->kinds[i], m->data + start, (Py_ssize_t)length, m);
            if (v == NULL) goto error;
            m->pos = start + (Py_ssize_t)length;
        } else if (kind == 'n') {
            v = Py_None;
            Py_INCREF(v);
            m->pos++;
        } else if (kind == 'u') {
            v = self->unchanged;
            Py_INCREF(v);
            m->pos++;
        } else if (kind == 'b') {
            PyErr_SetString(PyExc_ValueError,
                            "pgoutput sent a value in binary format; the connector asks for "
                            "text (no 'binary' option)");
            goto error;
        } else {
            PyErr_Format(PyExc_ValueError, "pgoutput tuple: unknown column kind %d at byte %zd",
                         (int)kind, m->pos);
            goto error;
        }
        PyTuple_SET_ITEM(row, i, v);
    }
    return row;
cut:
    truncated(m);
error:
    Py_DECREF(row);
    return NULL;
}

/* The old tuple marker of an Update or Delete (pgoutput._old_kind). */
static PyObject *old_kind(unsigned char kind) {
    if (kind == 'O') return OLD_FULL;
    if (kind == 'K') return OLD_KEY;
    PyErr_Format(PyExc_ValueError,
                 "pgoutput: expected an old tuple marker 'K' or 'O', got %d", (int)kind);
    return NULL;
}

static PyObject *change(DecoderObject *self, const unsigned char *data, Py_ssize_t len) {
    Message m = {data, len, 6, 0};
    if (len == 0) {
        PyErr_SetString(PyExc_ValueError, "empty pgoutput message");
        return NULL;
    }
    unsigned char tag = data[0];
    if (tag != 'I' && tag != 'U' && tag != 'D') {
        PyErr_Format(PyExc_ValueError,
                     "not a pgoutput row change: type byte %d (expected 'I', 'U' or 'D')",
                     (int)tag);
        return NULL;
    }
    if (len < 6) return truncated(&m);
    uint32_t oid = be32(data + 1);
    unsigned char marker = data[5];
    PyObject *kind = Py_None, *old = NULL, *new = NULL;
    if (tag == 'I') {
        if (marker != 'N') {
            PyErr_Format(PyExc_ValueError, "pgoutput Insert: expected 'N' at byte 5, got %d",
                         (int)marker);
            return NULL;
        }
        new = read_tuple(self, &m);
        if (new == NULL) return NULL;
    } else if (tag == 'U' && marker == 'N') {
        new = read_tuple(self, &m);
        if (new == NULL) return NULL;
    } else {
        kind = old_kind(marker);
        if (kind == NULL) return NULL;
        old = read_tuple(self, &m);
        if (old == NULL) return NULL;
        if (tag == 'U') {
            if (m.pos >= m.len) {
                Py_DECREF(old);
                return truncated(&m);
            }
            if (data[m.pos] != 'N') {
                PyErr_Format(PyExc_ValueError,
                             "pgoutput Update: expected 'N' at byte %zd, got %d", m.pos,
                             (int)data[m.pos]);
                Py_DECREF(old);
                return NULL;
            }
            m.pos++;
            new = read_tuple(self, &m);
            if (new == NULL) {
                Py_DECREF(old);
                return NULL;
            }
        }
    }
    PyObject *result = PyTuple_New(6);
    PyObject *oid_value = result == NULL ? NULL : PyLong_FromUnsignedLong(oid);
    if (oid_value == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(old);
        Py_XDECREF(new);
        return NULL;
    }
    PyTuple_SET_ITEM(result, 0, PyLong_FromLong(tag)); /* a cached small int: cannot fail */
    PyTuple_SET_ITEM(result, 1, oid_value);
    PyTuple_SET_ITEM(result, 2, Py_NewRef(kind));
    PyTuple_SET_ITEM(result, 3, old ? old : Py_NewRef(Py_None));
    PyTuple_SET_ITEM(result, 4, new ? new : Py_NewRef(Py_None));
    PyTuple_SET_ITEM(result, 5, PyBool_FromLong(m.fallback));
    return result;
}

static PyObject *Decoder_change(DecoderObject *self, PyObject *arg) {
    if (self->unchanged == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Decoder.__init__ was not called");
        return NULL;
    }
    if (PyBytes_Check(arg))
        return change(self, (const unsigned char *)PyBytes_AS_STRING(arg), PyBytes_GET_SIZE(arg));
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *result = change(self, view.buf, view.len);
    PyBuffer_Release(&view);
    return result;
}

static int Decoder_init(DecoderObject *self, PyObject *args, PyObject *kwds) {
    PyObject *kinds, *unchanged;
    static char *kwlist[] = {"kinds", "unchanged", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O", kwlist, &PyTuple_Type, &kinds,
                                     &unchanged))
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(kinds);
    if (n > 0xFFFF) {
        PyErr_SetString(PyExc_ValueError, "more columns than a pgoutput tuple holds");
        return -1;
    }
    unsigned char *codes = PyMem_Malloc(n ? n : 1);
    if (codes == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long code = PyLong_AsLong(PyTuple_GET_ITEM(kinds, i));
        if (code < 0 || code >= K_COUNT) {
            PyMem_Free(codes);
            if (!PyErr_Occurred() || PyErr_ExceptionMatches(PyExc_OverflowError)) {
                PyErr_Clear();
                PyErr_Format(PyExc_ValueError, "kinds[%zd]: not a column kind (0-%d)", i,
                             K_COUNT - 1);
            }
            return -1;
        }
        codes[i] = (unsigned char)code;
    }
    PyMem_Free(self->kinds);
    self->kinds = codes;
    self->ncolumns = n;
    Py_INCREF(unchanged);
    Py_XSETREF(self->unchanged, unchanged);
    return 0;
}

static int Decoder_traverse(DecoderObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->unchanged);
    return 0;
}

static int Decoder_clear(DecoderObject *self) {
    Py_CLEAR(self->unchanged);
    return 0;
}

static void Decoder_dealloc(DecoderObject *self) {
    PyObject_GC_UnTrack(self);
    Decoder_clear(self);
    PyMem_Free(self->kinds);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Decoder_get_kinds(DecoderObject *self, void *closure) {
    PyObject *kinds = PyTuple_New(self->ncolumns);
    if (kinds == NULL) return NULL;
    for (Py_ssize_t i = 0; i < self->ncolumns; i++) {
        PyObject *code = PyLong_FromLong(self->kinds[i]);
        if (code == NULL) {
            Py_DECREF(kinds);
            return NULL;
        }
        PyTuple_SET_ITEM(kinds, i, code);
    }
    return kinds;
}

static PyMethodDef Decoder_methods[] = {
    {"change", (PyCFunction)Decoder_change, METH_O,
     "change(data) -> (tag, oid, old_kind, old, new, needs_fallback)\n\n"
     "One pgoutput v1 Insert, Update or Delete message (bytes or any buffer), parsed as\n"
     "pgoutput.parse_message parses it. tag is the type byte (73 'I', 85 'U', 68 'D'),\n"
     "old_kind 'K', 'O' or None; old and new are tuples with one value per column (None\n"
     "for NULL, `unchanged` for an unchanged TOASTed value) or None. needs_fallback: some\n"
     "value of a converted kind was left as its str for the Python parser."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Decoder_getset[] = {
    {"kinds", (getter)Decoder_get_kinds, NULL, "the column kinds, as given", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DecoderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "sparkcdc.connectors.postgres.wal._pgdecode.Decoder",
    .tp_doc = "Decoder(kinds, unchanged): pgoutput row changes of one table, converted by "
              "column kind.",
    .tp_basicsize = sizeof(DecoderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Decoder_init,
    .tp_dealloc = (destructor)Decoder_dealloc,
    .tp_traverse = (traverseproc)Decoder_traverse,
    .tp_clear = (inquiry)Decoder_clear,
    .tp_free = PyObject_GC_Del,
    .tp_methods = Decoder_methods,
    .tp_getset = Decoder_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pgdecode",
    "Compiled decoder of pgoutput row changes (see sparkcdc.connectors.postgres.wal."
    "fastdecode).",
    -1, NULL,
};

PyMODINIT_FUNC PyInit__pgdecode(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    if (Decimal == NULL) {
        PyObject *decimal = PyImport_ImportModule("decimal");
        if (decimal == NULL) return NULL;
        Decimal = PyObject_GetAttrString(decimal, "Decimal");
        Py_DECREF(decimal);
        if (Decimal == NULL) return NULL;
    }
    if (OLD_KEY == NULL && (OLD_KEY = PyUnicode_InternFromString("K")) == NULL) return NULL;
    if (OLD_FULL == NULL && (OLD_FULL = PyUnicode_InternFromString("O")) == NULL) return NULL;
    if (PyType_Ready(&DecoderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&DecoderType);
    if (PyModule_AddObject(m, "Decoder", (PyObject *)&DecoderType) < 0) {
        Py_DECREF(&DecoderType);
        Py_DECREF(m);
        return NULL;
    }
    static const struct {
        const char *name;
        int value;
    } KINDS[] = {
        {"KIND_STR", K_STR},         {"KIND_INT", K_INT},
        {"KIND_BOOL", K_BOOL},       {"KIND_FLOAT8", K_FLOAT8},
        {"KIND_FLOAT4", K_FLOAT4},   {"KIND_DECIMAL", K_DECIMAL},
        {"KIND_DATE", K_DATE},       {"KIND_TIMESTAMP", K_TIMESTAMP},
        {"KIND_TIMESTAMPTZ", K_TIMESTAMPTZ}, {"KIND_BYTEA", K_BYTEA},
        {"KIND_FALLBACK", K_FALLBACK},
    };
    for (size_t i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++) {
        if (PyModule_AddIntConstant(m, KINDS[i].name, KINDS[i].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    if (PyModule_AddIntConstant(m, "ABI", 1) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
