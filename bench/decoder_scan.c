/* The decoder's ground scan in C, for `bench/decoder.py --compiled` only (not shipped).

   find(data: bytes, start: int) -> int: the first offset j >= start where data[j] is ESC
   and data[j+1] is a byte the decoder must look at after ESC (F-1): `]`, `P`, `_`, `^`,
   `X`, `c`, or a C0 control other than CAN, SUB and ESC; -1 if there is none. That is
   exactly what the pure decoder's translate + find computes, so swapping one for the
   other changes no event.

   `find` compares 16 bytes at a time with SSE2 where the compiler targets it (every
   x86-64), and falls back to `find_scalar` (memchr for ESC, a table for the byte after
   it) elsewhere; `find_scalar` is exported too, to measure that fallback on x86-64.
   Built by the bench with `cc -O2 -shared -fPIC -I<Python include dir>`. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static unsigned char second[256];

static void init_second(void) {
    for (int b = 0; b < 0x20; b++) second[b] = 1;
    second[0x18] = second[0x1a] = second[0x1b] = 0; /* CAN, SUB abort; ESC starts anew */
    second[']'] = second['P'] = second['_'] = second['^'] = second['X'] = second['c'] = 1;
}

static Py_ssize_t scan_scalar(const unsigned char *s, Py_ssize_t n, Py_ssize_t i) {
    while (i + 1 < n) {
        const unsigned char *p = memchr(s + i, 0x1b, (size_t)(n - 1 - i));
        if (p == NULL) return -1;
        Py_ssize_t k = p - s;
        if (second[s[k + 1]]) return k;
        i = k + 1;
    }
    return -1;
}

#if defined(__SSE2__)
static Py_ssize_t scan_sse2(const unsigned char *s, Py_ssize_t n, Py_ssize_t i) {
    const __m128i esc = _mm_set1_epi8(0x1b), top = _mm_set1_epi8(0x1f);
    const __m128i can = _mm_set1_epi8(0x18), sub = _mm_set1_epi8(0x1a);
    const __m128i osc = _mm_set1_epi8(']'), dcs = _mm_set1_epi8('P'), apc = _mm_set1_epi8('_');
    const __m128i pm = _mm_set1_epi8('^'), sos = _mm_set1_epi8('X'), ris = _mm_set1_epi8('c');
    while (i + 17 <= n) { /* a: bytes i..i+15, b: the byte after each of them */
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 1));
        __m128i c0 = _mm_cmpeq_epi8(_mm_min_epu8(b, top), b); /* b <= 0x1f, unsigned */
        c0 = _mm_andnot_si128(_mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, can), _mm_cmpeq_epi8(b, sub)),
                                           _mm_cmpeq_epi8(b, esc)),
                              c0);
        __m128i fin = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, osc), _mm_cmpeq_epi8(b, dcs)),
                                   _mm_or_si128(_mm_cmpeq_epi8(b, apc), _mm_cmpeq_epi8(b, pm)));
        fin = _mm_or_si128(fin, _mm_or_si128(_mm_cmpeq_epi8(b, sos), _mm_cmpeq_epi8(b, ris)));
        int m = _mm_movemask_epi8(_mm_and_si128(_mm_cmpeq_epi8(a, esc), _mm_or_si128(c0, fin)));
        if (m) return i + __builtin_ctz((unsigned)m);
        i += 16;
    }
    return scan_scalar(s, n, i);
}
#define SCAN scan_sse2
#else
#define SCAN scan_scalar
#endif

static PyObject *call(Py_ssize_t (*fn)(const unsigned char *, Py_ssize_t, Py_ssize_t), PyObject *const *args,
                      Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "find(data: bytes, start: int)");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    if (start < 0) start = 0;
    const unsigned char *s = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    return PyLong_FromSsize_t(fn(s, PyBytes_GET_SIZE(args[0]), start));
}

static PyObject *find(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return call(SCAN, args, nargs);
}

static PyObject *find_scalar(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    return call(scan_scalar, args, nargs);
}

static PyMethodDef methods[] = {
    {"find", (PyCFunction)(void (*)(void))find, METH_FASTCALL, "next ESC the decoder must look at, or -1"},
    {"find_scalar", (PyCFunction)(void (*)(void))find_scalar, METH_FASTCALL, "find without SIMD"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "decoder_scan", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_decoder_scan(void) {
    init_second();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "simd", SCAN != scan_scalar) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
