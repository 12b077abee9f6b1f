/*
 * Snapshot reads from MySQL/MariaDB straight into Arrow buffers, over the C client library.
 *
 * Why: a snapshot row costs the Python snapshot readers 0.5-0.8 us of CPU (mysqlclient
 * builds a Python object per value; connectorx allocates per value in Rust), while the
 * server needs ~0.3 us to produce it. Here libmariadb streams the text protocol
 * (mysql_use_result: memory bounded by one batch) and each value is parsed once, in C, into
 * the column's Arrow buffer: no Python object per row or value. Python wraps the buffers with
 * pyarrow.Array.from_buffers (connectors/mysql/native_reader.py), zero-copy.
 *
 * The connection is our own (not mysqlclient's) so that the same session can open the
 * consistent-snapshot transaction, report its binlog position and stream the chunk rows.
 * TLS is libmariadb's: enforced when asked for, optionally verifying the server.
 * Errors raise _mysqlarrow.Error(code, message): the MySQL error code first, like
 * mysqlclient, so the Python retry logic treats both alike. The GIL is released while
 * waiting on the network and while parsing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <mysql.h>
#include <errmsg.h>
#include <locale.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "civil.h"

/* Column kinds: keep in sync with connectors/mysql/native_reader.py (Kind). */
enum {
    K_I8 = 1,       /* signed/unsigned integer text -> int8   */
    K_I16 = 2,      /*                               -> int16  */
    K_I32 = 3,      /*                               -> int32 (also YEAR) */
    K_I64 = 4,      /*                               -> int64  */
    K_BOOL_INT = 5, /* TINYINT(1) text, != 0         -> bool   */
    K_BOOL_BIT = 6, /* BIT(1) raw bytes, != 0        -> bool   */
    K_DECIMAL = 7,  /* decimal text, scale = param   -> decimal128 (also BIGINT UNSIGNED) */
    K_F32 = 8,      /* double text (CAST AS DOUBLE)  -> float32 */
    K_F64 = 9,      /* double text                   -> float64 */
    K_DATE = 10,    /* 'YYYY-MM-DD', invalid -> NULL -> date32 */
    K_DATETIME = 11,/* 'YYYY-MM-DD hh:mm:ss[.f]'     -> timestamp[us] (session zone UTC) */
    K_UTF8 = 12,    /* bytes as sent (utf8mb4)       -> string */
    K_BINARY = 13,  /* bytes as sent                 -> binary */
};

/* A batch ends early when one column's values pass this many bytes (memory bound). */
#define BATCH_DATA_BYTES (64u << 20)

static PyObject *MysqlArrowError;

/* The "C" locale for number parsing: strtod follows the process's LC_NUMERIC, which any
   library or user code may set to a locale with a decimal comma. */
static locale_t c_locale;

/* ------------------------------------------------------------------------------------ */
/* Buffer: malloc'd memory handed to Python through the buffer protocol, freed with it.  */

typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
} BufferObject;

static void Buffer_dealloc(BufferObject *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Buffer_getbuffer(BufferObject *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data, self->size, 1, flags);
}

static PyBufferProcs Buffer_as_buffer = {(getbufferproc)Buffer_getbuffer, NULL};

static PyTypeObject BufferType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_mysqlarrow.Buffer",
    .tp_basicsize = sizeof(BufferObject),
    .tp_dealloc = (destructor)Buffer_dealloc,
    .tp_as_buffer = &Buffer_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Read-only memory of one Arrow buffer.",
};

/* Takes ownership of data (freed on failure too). */
static PyObject *buffer_new(char *data, Py_ssize_t size) {
    BufferObject *b = PyObject_New(BufferObject, &BufferType);
    if (b == NULL) {
        free(data);
        return NULL;
    }
    b->data = data;
    b->size = size;
    return (PyObject *)b;
}

/* ------------------------------------------------------------------------------------ */
/* Column builders                                                                       */

typedef struct {
    int kind;
    int scale;
    int width;          /* bytes per value of fixed-width kinds, 0 for bool/var */
    unsigned char *validity;
    char *values;       /* fixed width values, or bool bitmap */
    int32_t *offsets;   /* var width */
    char *data;
    size_t data_len, data_cap;
    Py_ssize_t nulls;
} Builder;

static int kind_width(int kind) {
    switch (kind) {
    case K_I8: return 1;
    case K_I16: return 2;
    case K_I32: case K_F32: case K_DATE: return 4;
    case K_I64: case K_F64: case K_DATETIME: return 8;
    case K_DECIMAL: return 16;
    default: return 0;
    }
}

static int is_var(int kind) { return kind == K_UTF8 || kind == K_BINARY; }
static int is_bool(int kind) { return kind == K_BOOL_INT || kind == K_BOOL_BIT; }

static int builder_alloc(Builder *b, Py_ssize_t rows) {
    size_t bitmap = (size_t)(rows + 7) / 8;
    b->validity = calloc(bitmap ? bitmap : 1, 1);
    b->nulls = 0;
    b->values = NULL;
    b->offsets = NULL;
    b->data = NULL;
    b->data_len = 0;
    if (is_var(b->kind)) {
        b->offsets = malloc(sizeof(int32_t) * (size_t)(rows + 1));
        b->data_cap = 1 << 16;
        b->data = malloc(b->data_cap);
        if (b->offsets) b->offsets[0] = 0;
        return b->validity && b->offsets && b->data;
    }
    if (is_bool(b->kind)) {
        b->values = calloc(bitmap ? bitmap : 1, 1);
    } else {
        b->values = malloc((size_t)b->width * (size_t)(rows ? rows : 1));
    }
    return b->validity && b->values;
}

static void builder_free(Builder *b) {
    free(b->validity);
    free(b->values);
    free(b->offsets);
    free(b->data);
    b->validity = NULL;
    b->values = NULL;
    b->offsets = NULL;
    b->data = NULL;
}

/* ------------------------------------------------------------------------------------ */
/* Text parsing. Return 0 on success, -1 on text that is not of the expected form.       */

static int parse_int(const char *s, unsigned long len, int64_t *out) {
    unsigned long i = 0;
    int neg = 0;
    uint64_t v = 0;
    if (len == 0) return -1;
    if (s[0] == '-' || s[0] == '+') {
        neg = s[0] == '-';
        i = 1;
        if (len == 1) return -1;
    }
    for (; i < len; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10) return -1;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return -1;
        *out = (int64_t)(0 - v);
    } else {
        if (v > (uint64_t)INT64_MAX) return -1;
        *out = (int64_t)v;
    }
    return 0;
}

/* Decimal text ("-123.45", "18446744073709551615") as a 128-bit integer scaled by 10^scale;
   at most 38 digits (the columns given this kind have precision <= 38). */
static int parse_decimal(const char *s, unsigned long len, int scale, __int128 *out) {
    unsigned long i = 0;
    int neg = 0, digits = 0, frac = -1, any = 0;
    unsigned __int128 v = 0;
    if (len == 0) return -1;
    if (s[0] == '-' || s[0] == '+') {
        neg = s[0] == '-';
        i = 1;
    }
    for (; i < len; i++) {
        char c = s[i];
        if (c == '.') {
            if (frac >= 0) return -1;
            frac = 0;
            continue;
        }
        unsigned d = (unsigned char)c - '0';
        if (d > 9) return -1;
        any = 1;
        if (frac >= 0 && ++frac > scale) return -1;
        if (v != 0 || d != 0) digits++;
        if (digits > 38) return -1;
        v = v * 10 + d;
    }
    if (!any) return -1; /* "", "-", "." */
    for (int f = frac < 0 ? 0 : frac; f < scale; f++) {
        if (v != 0 && ++digits > 38) return -1;
        v *= 10;
    }
    *out = neg ? -(__int128)v : (__int128)v;
    return 0;
}

static int parse_double(const char *s, unsigned long len, double *out) {
    char buf[64];
    char *end;
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    *out = strtod_l(buf, &end, c_locale);
    return end == buf + len ? 0 : -1;
}

static int digits_at(const char *s, int n, int *out) {
    int v = 0;
    for (int i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9) return -1;
        v = v * 10 + (int)d;
    }
    *out = v;
    return 0;
}

/* Days since 1970-01-01 of the first of each month of the years most data lives in: a
   table lookup instead of days_from_civil's divisions (dates are a large share of the
   parse time of a typical row). */
#define LUT_FIRST_YEAR 1900
#define LUT_YEARS 300
static int32_t month_starts[LUT_YEARS][12];

static void init_month_starts(void) {
    for (int y = 0; y < LUT_YEARS; y++)
        for (int m = 0; m < 12; m++)
            month_starts[y][m] = (int32_t)days_from_civil(LUT_FIRST_YEAR + y, m + 1, 1);
}

/* 'YYYY-MM-DD' -> days; 1 for dates Python cannot hold (zero dates, day 31 of a 30-day
   month under ALLOW_INVALID_DATES, year 0): those become NULL, like the classic reader. */
static int parse_date(const char *s, unsigned long len, int64_t *days) {
    int y, m, d;
    if (len < 10 || s[4] != '-' || s[7] != '-') return -1;
    if (digits_at(s, 4, &y) || digits_at(s + 5, 2, &m) || digits_at(s + 8, 2, &d)) return -1;
    if (y < 1 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m)) return 1;
    if (y >= LUT_FIRST_YEAR && y < LUT_FIRST_YEAR + LUT_YEARS)
        *days = month_starts[y - LUT_FIRST_YEAR][m - 1] + d - 1;
    else
        *days = days_from_civil(y, m, d);
    return 0;
}

static int parse_datetime(const char *s, unsigned long len, int64_t *micros) {
    int64_t days;
    int hh, mm, ss, frac = 0;
    int r = parse_date(s, len, &days);
    if (r < 0) return -1;
    if (len < 19 || s[10] != ' ' || s[13] != ':' || s[16] != ':') return -1;
    if (digits_at(s + 11, 2, &hh) || digits_at(s + 14, 2, &mm) || digits_at(s + 17, 2, &ss))
        return -1;
    if (len > 19) {
        int n = (int)len - 20;
        if (s[19] != '.' || n < 1 || n > 6 || digits_at(s + 20, n, &frac)) return -1;
        for (int i = n; i < 6; i++) frac *= 10;
    }
    if (r > 0 || hh > 23 || mm > 59 || ss > 59) return 1;
    *micros = ((days * 24 + hh) * 60 + mm) * 60 * INT64_C(1000000) + (int64_t)ss * 1000000 + frac;
    return 0;
}

/* Append one value; returns 0, or -1 with *why set (unparsable text, oversized batch). */
static int builder_append(Builder *b, Py_ssize_t row, const char *s, unsigned long len,
                          const char **why) {
    if (s == NULL) {
        b->nulls++;
        if (is_var(b->kind)) b->offsets[row + 1] = (int32_t)b->data_len;
        else if (!is_bool(b->kind)) memset(b->values + (size_t)row * b->width, 0, b->width);
        return 0;
    }
    int64_t i;
    double f;
    switch (b->kind) {
    case K_I8: case K_I16: case K_I32: case K_I64:
        if (parse_int(s, len, &i)) goto bad;
        if (b->kind == K_I8) {
            if (i < INT8_MIN || i > INT8_MAX) goto bad;
            ((int8_t *)b->values)[row] = (int8_t)i;
        } else if (b->kind == K_I16) {
            if (i < INT16_MIN || i > INT16_MAX) goto bad;
            ((int16_t *)b->values)[row] = (int16_t)i;
        } else if (b->kind == K_I32) {
            if (i < INT32_MIN || i > INT32_MAX) goto bad;
            ((int32_t *)b->values)[row] = (int32_t)i;
        } else {
            ((int64_t *)b->values)[row] = i;
        }
        break;
    case K_BOOL_INT:
        if (parse_int(s, len, &i)) goto bad;
        if (i) b->values[row >> 3] |= (char)(1 << (row & 7));
        break;
    case K_BOOL_BIT:
        for (unsigned long k = 0; k < len; k++)
            if (s[k]) {
                b->values[row >> 3] |= (char)(1 << (row & 7));
                break;
            }
        break;
    case K_DECIMAL: {
        __int128 d;
        if (parse_decimal(s, len, b->scale, &d)) goto bad;
        memcpy(b->values + (size_t)row * 16, &d, 16);
        break;
    }
    case K_F32:
        if (parse_double(s, len, &f)) goto bad;
        ((float *)b->values)[row] = (float)f;
        break;
    case K_F64:
        if (parse_double(s, len, &f)) goto bad;
        ((double *)b->values)[row] = f;
        break;
    case K_DATE: {
        int r = parse_date(s, len, &i);
        if (r < 0 || len != 10) goto bad;
        if (r > 0) goto invalid;
        ((int32_t *)b->values)[row] = (int32_t)i;
        break;
    }
    case K_DATETIME: {
        int r = parse_datetime(s, len, &i);
        if (r < 0) goto bad;
        if (r > 0) goto invalid;
        ((int64_t *)b->values)[row] = i;
        break;
    }
    case K_UTF8: case K_BINARY:
        if (b->data_len + len > (size_t)INT32_MAX) {
            *why = "a batch's values of one column exceed 2 GiB";
            return -1;
        }
        if (b->data_len + len > b->data_cap) {
            size_t cap = b->data_cap * 2;
            while (cap < b->data_len + len) cap *= 2;
            char *grown = realloc(b->data, cap);
            if (grown == NULL) {
                *why = "out of memory";
                return -1;
            }
            b->data = grown;
            b->data_cap = cap;
        }
        memcpy(b->data + b->data_len, s, len);
        b->data_len += len;
        b->offsets[row + 1] = (int32_t)b->data_len;
        break;
    default:
        *why = "unknown column kind";
        return -1;
    }
    b->validity[row >> 3] |= (unsigned char)(1 << (row & 7));
    return 0;
invalid: /* a value the target type cannot hold: NULL, as the classic reader reads it */
    b->nulls++;
    memset(b->values + (size_t)row * b->width, 0, b->width);
    return 0;
bad:
    *why = "unexpected text for the column's type";
    return -1;
}

/* The builder's buffers as a tuple (validity or None, values or data, offsets or None);
   the builder no longer owns them. */
static PyObject *builder_finish(Builder *b, Py_ssize_t rows) {
    size_t bitmap = (size_t)(rows + 7) / 8;
    PyObject *validity, *values, *offsets;
    if (b->nulls) {
        validity = buffer_new((char *)b->validity, (Py_ssize_t)bitmap);
    } else {
        free(b->validity);
        validity = Py_None;
        Py_INCREF(Py_None);
    }
    b->validity = NULL;
    if (is_var(b->kind)) {
        values = buffer_new(b->data, (Py_ssize_t)b->data_len);
        offsets = buffer_new((char *)b->offsets, (Py_ssize_t)sizeof(int32_t) * (rows + 1));
    } else {
        Py_ssize_t size = is_bool(b->kind) ? (Py_ssize_t)bitmap : (Py_ssize_t)b->width * rows;
        values = buffer_new(b->values, size);
        offsets = Py_None;
        Py_INCREF(Py_None);
    }
    b->values = NULL;
    b->data = NULL;
    b->offsets = NULL;
    if (!validity || !values || !offsets) {
        Py_XDECREF(validity);
        Py_XDECREF(values);
        Py_XDECREF(offsets);
        return NULL;
    }
    return Py_BuildValue("(NNN)", validity, values, offsets);
}

/* ------------------------------------------------------------------------------------ */
/* Connection                                                                            */

struct ResultObject;

/* Threads: every call into libmariadb with the GIL released marks the connection busy;
   while busy, other commands refuse (RuntimeError) and close() only cancels the pending
   reads (mariadb_cancel) and leaves the freeing to the busy call when it returns, so no
   thread ever frees a handle another is using. */
typedef struct {
    PyObject_HEAD
    MYSQL *mysql;
    struct ResultObject *active; /* borrowed: the Result being read; no other command may run */
    int busy;    /* a call is in libmariadb with this handle and the GIL released */
    int closing; /* close() came while busy: the busy call closes when it returns */
} ConnectionObject;

static void result_release(struct ResultObject *self);
static void connection_free(ConnectionObject *self, MYSQL_RES *res);

static PyObject *raise_mysql(MYSQL *mysql) {
    PyObject *args = Py_BuildValue("(is)", (int)mysql_errno(mysql), mysql_error(mysql));
    if (args) {
        PyErr_SetObject(MysqlArrowError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static PyObject *raise_closed(void) {
    PyObject *args = Py_BuildValue("(is)", CR_SERVER_GONE_ERROR, "the connection is closed");
    if (args) {
        PyErr_SetObject(MysqlArrowError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int check_open(ConnectionObject *self) {
    if (self->mysql == NULL) {
        raise_closed();
        return -1;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread");
        return -1;
    }
    if (self->active) {
        PyErr_SetString(PyExc_RuntimeError, "a result is still being read on this connection");
        return -1;
    }
    return 0;
}

/* After a call into libmariadb (the GIL held again): 0, or -1 with the "closed" error when
   close() came meanwhile; then the handle (and `res`, that call's result) is freed here. */
static int connection_done(ConnectionObject *self, MYSQL_RES *res) {
    self->busy = 0;
    if (!self->closing) return 0;
    connection_free(self, res);
    raise_closed();
    return -1;
}

/* TLS modes, as the jdbc.properties.sslMode option names them (config.SSL_MODES). */
enum { TLS_OFF = 0, TLS_REQUIRED = 1, TLS_VERIFY = 2 };

static int Connection_init(ConnectionObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"host",   "port",     "user",    "password",
                             "connect_timeout", "read_timeout", "tls", "ssl_ca",
                             "ssl_cert", "ssl_key", "server_public_key", NULL};
    const char *host, *user, *password, *ca = NULL, *cert = NULL, *key = NULL;
    const char *public_key = NULL;
    unsigned int port, connect_timeout = 10, read_timeout = 0;
    int tls = TLS_OFF;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sIss|IIizzzz", kwlist, &host, &port, &user,
                                     &password, &connect_timeout, &read_timeout, &tls, &ca,
                                     &cert, &key, &public_key))
        return -1;
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread");
        return -1;
    }
    connection_free(self, NULL);
    MYSQL *mysql = mysql_init(NULL);
    if (mysql == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    mysql_optionsv(mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
    if (read_timeout) {
        mysql_optionsv(mysql, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
        mysql_optionsv(mysql, MYSQL_OPT_WRITE_TIMEOUT, &read_timeout);
    }
    mysql_optionsv(mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    /* MySQL 8's caching_sha2_password without TLS: the server's RSA key from this file;
       libmariadb fetches it from the server, in clear, when none is given
       (server/secure.py decides which file) */
    if (public_key != NULL)
        mysql_optionsv(mysql, MYSQL_SERVER_PUBLIC_KEY, public_key);
    if (tls != TLS_OFF) {
        /* TLS or no connection: never a silent fall back to clear text */
        my_bool on = 1, verify = tls == TLS_VERIFY;
        mysql_ssl_set(mysql, key, cert, ca, NULL, NULL);
        mysql_optionsv(mysql, MYSQL_OPT_SSL_ENFORCE, &on);
        mysql_optionsv(mysql, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &verify);
    }
    MYSQL *ok;
    Py_BEGIN_ALLOW_THREADS
    ok = mysql_real_connect(mysql, host, user, password, NULL, port, NULL, 0);
    Py_END_ALLOW_THREADS
    if (ok == NULL) {
        raise_mysql(mysql);
        mysql_close(mysql);
        return -1;
    }
    self->mysql = mysql;
    return 0;
}

/* cipher() -> the TLS cipher of the session, None in clear text. */
static PyObject *Connection_cipher(ConnectionObject *self, PyObject *unused) {
    if (check_open(self)) return NULL;
    const char *cipher = mysql_get_ssl_cipher(self->mysql);
    if (cipher == NULL) Py_RETURN_NONE;
    return PyUnicode_FromString(cipher);
}

static void Connection_dealloc(ConnectionObject *self) {
    if (self->mysql) mysql_close(self->mysql);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Connection_close(ConnectionObject *self, PyObject *unused) {
    if (self->mysql == NULL) Py_RETURN_NONE;
    if (self->busy) {
        /* another thread is in libmariadb with the handle: make its reads fail now; it
           frees the handle when it returns (connection_done) */
        if (!self->closing) {
            self->closing = 1;
            mariadb_cancel(self->mysql);
        }
        Py_RETURN_NONE;
    }
    connection_free(self, NULL);
    Py_RETURN_NONE;
}

static PyObject *text_or_none(const char *s, unsigned long len) {
    if (s == NULL) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)len, "surrogateescape");
}

/* query(sql) -> (column names, rows as tuples of str/None); ([], []) for statements
   without a result. For the few small control statements (transactions, positions). */
static PyObject *Connection_query(ConnectionObject *self, PyObject *args) {
    const char *sql;
    Py_ssize_t sql_len;
    if (!PyArg_ParseTuple(args, "s#", &sql, &sql_len) || check_open(self)) return NULL;
    int rc;
    MYSQL_RES *res = NULL;
    MYSQL *mysql = self->mysql;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = mysql_real_query(mysql, sql, (unsigned long)sql_len);
    if (rc == 0) res = mysql_store_result(mysql);
    Py_END_ALLOW_THREADS
    if (connection_done(self, res)) return NULL;
    if (rc != 0) return raise_mysql(self->mysql);
    PyObject *names = PyList_New(0), *rows = PyList_New(0);
    if (!names || !rows) goto fail;
    if (res == NULL) {
        if (mysql_field_count(self->mysql) != 0) {
            Py_DECREF(names);
            Py_DECREF(rows);
            return raise_mysql(self->mysql);
        }
        return Py_BuildValue("(NN)", names, rows);
    }
    unsigned int n = mysql_num_fields(res);
    MYSQL_FIELD *fields = mysql_fetch_fields(res);
    for (unsigned int i = 0; i < n; i++) {
        PyObject *name = text_or_none(fields[i].name, fields[i].name_length);
        if (!name || PyList_Append(names, name)) {
            Py_XDECREF(name);
            goto fail;
        }
        Py_DECREF(name);
    }
    MYSQL_ROW row;
    while ((row = mysql_fetch_row(res)) != NULL) {
        unsigned long *lengths = mysql_fetch_lengths(res);
        PyObject *t = PyTuple_New(n);
        if (!t) goto fail;
        for (unsigned int i = 0; i < n; i++) {
            PyObject *v = text_or_none(row[i], lengths[i]);
            if (!v) {
                Py_DECREF(t);
                goto fail;
            }
            PyTuple_SET_ITEM(t, i, v);
        }
        int bad = PyList_Append(rows, t);
        Py_DECREF(t);
        if (bad) goto fail;
    }
    mysql_free_result(res);
    return Py_BuildValue("(NN)", names, rows);
fail:
    if (res) mysql_free_result(res);
    Py_XDECREF(names);
    Py_XDECREF(rows);
    return NULL;
}

/* escape(text) -> the text escaped for a quoted SQL literal in the connection's charset. */
static PyObject *Connection_escape(ConnectionObject *self, PyObject *args) {
    const char *s;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "s#", &s, &len) || check_open(self)) return NULL;
    char *out = malloc((size_t)len * 2 + 1);
    if (out == NULL) return PyErr_NoMemory();
    unsigned long n = mysql_real_escape_string(self->mysql, out, s, (unsigned long)len);
    if (n == (unsigned long)-1) {
        free(out);
        return raise_mysql(self->mysql);
    }
    PyObject *r = PyUnicode_DecodeUTF8(out, (Py_ssize_t)n, "surrogateescape");
    free(out);
    return r;
}

/* ------------------------------------------------------------------------------------ */
/* Result: one streamed SELECT, an iterator of (rows, [column buffers...]) batches.       */

typedef struct ResultObject {
    PyObject_HEAD
    ConnectionObject *conn;
    MYSQL_RES *res;
    Builder *builders;
    int ncolumns;
    Py_ssize_t batch_rows;
    int done;
} ResultObject;

static PyTypeObject ResultType;

static void result_release(ResultObject *self) {
    ConnectionObject *conn = self->conn;
    if (self->res) {
        /* drains unread rows so the connection stays usable */
        MYSQL_RES *res = self->res;
        self->res = NULL;
        conn->busy = 1;
        Py_BEGIN_ALLOW_THREADS
        mysql_free_result(res);
        Py_END_ALLOW_THREADS
        conn->busy = 0;
    }
    if (conn && conn->active == self) conn->active = NULL;
    if (conn && conn->closing) connection_free(conn, NULL);
}

/* Closes and frees the handle, abandoning the active result's unread rows (or `res`, a
   result not handed out yet). The caller holds the GIL and no call is in libmariadb with
   the handle; from the first line on no other thread can reach it. */
static void connection_free(ConnectionObject *self, MYSQL_RES *res) {
    MYSQL *mysql = self->mysql;
    if (mysql == NULL) return;
    self->mysql = NULL;
    self->closing = 0;
    if (self->active) {
        res = self->active->res;
        self->active->res = NULL;
        self->active = NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (res) {
        mariadb_cancel(mysql); /* fail the pending reads instead of draining them all */
        mysql_free_result(res);
    }
    mysql_close(mysql);
    Py_END_ALLOW_THREADS
}

static void Result_dealloc(ResultObject *self) {
    result_release(self);
    if (self->builders) {
        for (int i = 0; i < self->ncolumns; i++) builder_free(&self->builders[i]);
        free(self->builders);
    }
    Py_XDECREF(self->conn);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Result_next(ResultObject *self) {
    if (self->done || self->res == NULL) {
        if (!self->done && self->conn->mysql == NULL) /* closed while reading */
            return raise_closed();
        return NULL; /* StopIteration */
    }
    ConnectionObject *conn = self->conn;
    if (conn->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the connection is in use by another thread");
        return NULL;
    }
    int n = self->ncolumns;
    Builder *bs = self->builders;
    for (int c = 0; c < n; c++) {
        if (!builder_alloc(&bs[c], self->batch_rows)) {
            for (int k = 0; k <= c; k++) builder_free(&bs[k]);
            return PyErr_NoMemory();
        }
    }
    Py_ssize_t rows = 0;
    const char *why = NULL;
    int failed_column = -1, end = 0;
    MYSQL *mysql = conn->mysql;
    conn->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    while (rows < self->batch_rows) {
        MYSQL_ROW row = mysql_fetch_row(self->res);
        if (row == NULL) {
            end = 1;
            break;
        }
        unsigned long *lengths = mysql_fetch_lengths(self->res);
        size_t biggest = 0;
        for (int c = 0; c < n; c++) {
            if (builder_append(&bs[c], rows, row[c], lengths[c], &why)) {
                failed_column = c;
                break;
            }
            if (bs[c].data_len > biggest) biggest = bs[c].data_len;
        }
        if (failed_column >= 0) break;
        rows++;
        if (biggest >= BATCH_DATA_BYTES) break;
    }
    Py_END_ALLOW_THREADS
    if (connection_done(conn, NULL)) { /* closed meanwhile: its rows are not trusted */
        for (int c = 0; c < n; c++) builder_free(&bs[c]);
        self->done = 1;
        return NULL;
    }
    if (failed_column >= 0 || (end && mysql_errno(mysql))) {
        for (int c = 0; c < n; c++) builder_free(&bs[c]);
        self->done = 1;
        if (failed_column >= 0) {
            PyErr_Format(PyExc_ValueError, "column %d, row %zd of the batch: %s",
                         failed_column + 1, rows + 1, why);
            result_release(self);
            return NULL;
        }
        raise_mysql(mysql); /* a lost connection mid-result: never a silent short read */
        result_release(self);
        return NULL;
    }
    if (end) {
        self->done = 1;
        result_release(self);
    }
    if (rows == 0) {
        for (int c = 0; c < n; c++) builder_free(&bs[c]);
        return NULL;
    }
    PyObject *columns = PyList_New(n);
    if (columns == NULL) {
        for (int c = 0; c < n; c++) builder_free(&bs[c]);
        return NULL;
    }
    for (int c = 0; c < n; c++) {
        PyObject *col = builder_finish(&bs[c], rows);
        if (col == NULL) {
            for (int k = c + 1; k < n; k++) builder_free(&bs[k]);
            Py_DECREF(columns);
            return NULL;
        }
        PyList_SET_ITEM(columns, c, col);
    }
    return Py_BuildValue("(nN)", rows, columns);
}

static PyTypeObject ResultType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_mysqlarrow.Result",
    .tp_basicsize = sizeof(ResultObject),
    .tp_dealloc = (destructor)Result_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Result_next,
    .tp_doc = "A streamed SELECT: iterate for (rows, [(validity, values, offsets), ...]).",
};

/* stream(sql, kinds, scales, batch_rows) -> Result. kinds/scales: one int per column. */
static PyObject *Connection_stream(ConnectionObject *self, PyObject *args) {
    const char *sql;
    Py_ssize_t sql_len, batch_rows;
    PyObject *kinds, *scales;
    if (!PyArg_ParseTuple(args, "s#O!O!n", &sql, &sql_len, &PyTuple_Type, &kinds,
                          &PyTuple_Type, &scales, &batch_rows) ||
        check_open(self))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(kinds);
    if (n == 0 || PyTuple_GET_SIZE(scales) != n || batch_rows < 1) {
        PyErr_SetString(PyExc_ValueError, "kinds and scales: one per column; batch_rows >= 1");
        return NULL;
    }
    Builder *builders = calloc((size_t)n, sizeof(Builder));
    if (builders == NULL) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(kinds, i));
        long scale = PyLong_AsLong(PyTuple_GET_ITEM(scales, i));
        if (PyErr_Occurred() || kind < K_I8 || kind > K_BINARY || scale < 0 || scale > 38) {
            free(builders);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad column kind");
            return NULL;
        }
        builders[i].kind = (int)kind;
        builders[i].scale = (int)scale;
        builders[i].width = kind_width((int)kind);
    }
    int rc;
    MYSQL_RES *res = NULL;
    MYSQL *mysql = self->mysql;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = mysql_real_query(mysql, sql, (unsigned long)sql_len);
    if (rc == 0) res = mysql_use_result(mysql);
    Py_END_ALLOW_THREADS
    if (connection_done(self, res)) {
        free(builders);
        return NULL;
    }
    if (rc != 0 || res == NULL) {
        free(builders);
        return raise_mysql(self->mysql);
    }
    unsigned int fields = mysql_num_fields(res);
    if (fields != (unsigned int)n) {
        mysql_free_result(res);
        free(builders);
        PyErr_Format(PyExc_ValueError, "the query returns %u columns, %zd kinds given", fields,
                     n);
        return NULL;
    }
    ResultObject *r = PyObject_New(ResultObject, &ResultType);
    if (r == NULL) {
        mysql_free_result(res);
        free(builders);
        return NULL;
    }
    Py_INCREF(self);
    r->conn = self;
    r->res = res;
    r->builders = builders;
    r->ncolumns = (int)n;
    r->batch_rows = batch_rows;
    r->done = 0;
    self->active = r;
    return (PyObject *)r;
}

static PyMethodDef Connection_methods[] = {
    {"query", (PyCFunction)Connection_query, METH_VARARGS,
     "query(sql) -> (names, rows): a small result as text (control statements)."},
    {"escape", (PyCFunction)Connection_escape, METH_VARARGS,
     "escape(text) -> text escaped for a quoted SQL literal."},
    {"stream", (PyCFunction)Connection_stream, METH_VARARGS,
     "stream(sql, kinds, scales, batch_rows) -> Result of Arrow column buffers."},
    {"cipher", (PyCFunction)Connection_cipher, METH_NOARGS,
     "cipher() -> the session's TLS cipher, or None in clear text."},
    {"close", (PyCFunction)Connection_close, METH_NOARGS, "Close the connection."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ConnectionType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_mysqlarrow.Connection",
    .tp_basicsize = sizeof(ConnectionObject),
    .tp_dealloc = (destructor)Connection_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Connection_init,
    .tp_methods = Connection_methods,
    .tp_doc = "Connection(host, port, user, password, connect_timeout=10, read_timeout=0, "
              "tls=0, ssl_ca=None, ssl_cert=None, ssl_key=None, server_public_key=None); "
              "tls: 0 off, 1 required, 2 verify the server's certificate and name",
};

static struct PyModuleDef moduledef = {
    PyModuleDef_HEAD_INIT, "_mysqlarrow",
    "MySQL/MariaDB text-protocol results straight into Arrow buffers (libmariadb).", -1, NULL,
};

PyMODINIT_FUNC PyInit__mysqlarrow(void) {
    if (PyType_Ready(&BufferType) < 0 || PyType_Ready(&ResultType) < 0 ||
        PyType_Ready(&ConnectionType) < 0)
        return NULL;
    init_month_starts();
    if (c_locale == (locale_t)0 && (c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0)) == (locale_t)0) {
        PyErr_SetString(PyExc_ImportError, "newlocale(\"C\") failed");
        return NULL;
    }
    if (mysql_library_init(0, NULL, NULL)) {
        PyErr_SetString(PyExc_ImportError, "mysql_library_init failed");
        return NULL;
    }
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL) return NULL;
    MysqlArrowError = PyErr_NewExceptionWithDoc(
        "_mysqlarrow.Error", "A MySQL client or server error: args = (code, message).", NULL,
        NULL);
    Py_INCREF(&ConnectionType);
    if (MysqlArrowError == NULL || PyModule_AddObject(m, "Error", MysqlArrowError) ||
        PyModule_AddObject(m, "Connection", (PyObject *)&ConnectionType)) {
        Py_DECREF(m);
        return NULL;
    }
    PyModule_AddIntConstant(m, "BATCH_DATA_BYTES", BATCH_DATA_BYTES);
    return m;
}
