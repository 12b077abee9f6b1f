/*
 * Shared pieces of the fuzz targets of the C decoders (docs/fuzzing.md).
 *
 * Each target #includes one csrc/<decoder>.c file whole, so its static functions are
 * callable, and embeds CPython to run the decoder's entry points as Python calls them. A target aborts
 * (the sanitizers print the stack) on what no input may cause: an exception other than the
 * decoder's documented errors, or two outputs that disagree; the sanitizers abort on memory
 * errors and undefined behaviour themselves. Built by tests/fuzz/fuzz.py: with clang's
 * libFuzzer for long runs, with any compiler plus replay.c to replay the seed corpus.
 */
#ifndef SPARKCDC_FUZZ_HARNESS_H
#define SPARKCDC_FUZZ_HARNESS_H

#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The fuzzer's input, consumed from the front: missing bytes read as 0. */
typedef struct {
    const uint8_t *p;
    size_t n;
} Input;

static uint8_t take_byte(Input *in) {
    if (in->n == 0) return 0;
    in->n--;
    return *in->p++;
}

/* Up to n bytes (fewer at the end of the input); *got says how many. */
static const uint8_t *take_bytes(Input *in, size_t n, size_t *got) {
    const uint8_t *p = in->p;
    *got = n < in->n ? n : in->n;
    in->p += *got;
    in->n -= *got;
    return p;
}

/* A finding: say what and abort (ASan prints the stack; libFuzzer saves the input). */
#define FINDING(...)                                                                        \
    do {                                                                                    \
        fprintf(stderr, "\n*** fuzz finding: ");                                          \
        fprintf(stderr, __VA_ARGS__);                                                       \
        fprintf(stderr, "\n");                                                              \
        if (PyErr_Occurred()) PyErr_Print();                                                \
        abort();                                                                            \
    } while (0)

/* After a call that returned NULL: the exception must be one of the decoder's documented
 * errors (ValueError, which UnicodeDecodeError is, IndexError, OverflowError); cleared. */
static void expect_decoder_error(const char *call) {
    if (!PyErr_Occurred()) FINDING("%s returned NULL without an exception", call);
    if (!PyErr_ExceptionMatches(PyExc_ValueError) && !PyErr_ExceptionMatches(PyExc_IndexError) &&
        !PyErr_ExceptionMatches(PyExc_OverflowError))
        FINDING("%s raised an undocumented exception", call);
    PyErr_Clear();
}

/* The interpreter, once per process (stdlib only: decimal, datetime). */
static void python_start(void) {
    if (Py_IsInitialized()) return;
    Py_InitializeEx(0);
    if (!Py_IsInitialized()) FINDING("Python did not start");
}

/* A module object from an extension's init function, called as the import system does. */
static PyObject *module_from(PyObject *(*init)(void), const char *name) {
    PyObject *module = init();
    if (module == NULL) FINDING("%s did not initialise", name);
    return module;
}

#endif
