/*
 * npy.c -- a strict reader and a writer for NumPy .npy files.
 *
 * Format (numpy.lib.format): 6-byte magic "\x93NUMPY", major and minor
 * version bytes, a little-endian header length (uint16 for 1.0, uint32 for
 * 2.0/3.0), then that many bytes of a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ended by '\n', then the raw C-order data.
 * The reader accepts exactly the three keys, each once, in any order; the
 * shape's element and byte counts are overflow-checked and the data that
 * follows must be exactly that long.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "npy.h"

static mpl_status fail(char *err, size_t cap, mpl_status st, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static mpl_status fail(char *err, size_t cap, mpl_status st, const char *path, const char *fmt, ...) {
    if (err && cap) {
        int w = snprintf(err, cap, "%s: ", path);
        if (w >= 0 && (size_t)w < cap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + w, cap - (size_t)w, fmt, ap);
            va_end(ap);
        }
    }
    return st;
}

static const struct {
    const char *descr;
    mpl_dtype dtype;
} descr_table[] = {
    {"<i4", MPL_DTYPE_I32}, {"<i8", MPL_DTYPE_I64},  {"|i1", MPL_DTYPE_I8},   {"|u1", MPL_DTYPE_U8},
    {"<f2", MPL_DTYPE_F16}, {"<f4", MPL_DTYPE_F32}, {"<u2", MPL_DTYPE_BF16},
};

const char *npy_descr(mpl_dtype d) {
    for (size_t i = 0; i < sizeof descr_table / sizeof descr_table[0]; i++)
        if (descr_table[i].dtype == d) return descr_table[i].descr;
    return NULL;
}

void npy_shape_string(int ndim, const int64_t *shape, char *buf, size_t cap) {
    size_t u = 0;
    if (!cap) return;
    buf[0] = 0;
    int w = snprintf(buf, cap, "[");
    if (w > 0) u = (size_t)w;
    for (int i = 0; i < ndim && u < cap; i++) {
        w = snprintf(buf + u, cap - u, "%s%lld", i ? ", " : "", (long long)shape[i]);
        if (w < 0) return;
        u += (size_t)w;
    }
    if (u < cap) snprintf(buf + u, cap - u, "]");
}

void npy_free(npy_array *a) {
    if (!a) return;
    free(a->data);
    memset(a, 0, sizeof *a);
}

/* ---- header dict parsing: a tiny, strict subset of Python literal syntax ---- */

typedef struct {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* A quoted string without escapes, at most cap-1 bytes. Returns 0 on success. */
static int parse_string(cursor *c, char *out, size_t cap) {
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        unsigned char ch = (unsigned char)*c->p;
        if (ch == '\\' || ch < 0x20 || ch >= 0x7f || n + 1 >= cap) return -1;
        out[n++] = (char)ch;
        c->p++;
    }
    if (c->p >= c->end) return -1;
    c->p++;
    out[n] = 0;
    return 0;
}

static int match_word(cursor *c, const char *w) {
    size_t l = strlen(w);
    if ((size_t)(c->end - c->p) < l || strncmp(c->p, w, l) != 0) return 0;
    const char *after = c->p + l;
    if (after < c->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                           (*after >= '0' && *after <= '9') || *after == '_'))
        return 0;
    c->p = after;
    return 1;
}

/* Parses "(d0, d1, ...)" into shape; returns NULL or a problem description. */
static const char *parse_shape(cursor *c, int *ndim, int64_t *shape) {
    if (c->p >= c->end || *c->p != '(') return "'shape' is not a tuple";
    c->p++;
    int n = 0;
    for (;;) {
        skip_ws(c);
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            break;
        }
        if (c->p < c->end && *c->p == '-') return "'shape' has a negative dimension";
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return "'shape' holds something other than integers";
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            int d = *c->p - '0';
            if (v > (INT64_MAX - d) / 10) return "'shape' has a dimension that overflows 64 bits";
            v = v * 10 + d;
            c->p++;
        }
        if (n >= NPY_MAX_DIMS) return "'shape' has more than 8 dimensions";
        shape[n++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        if (c->p < c->end && *c->p == ')') {
            c->p++;
            break;
        }
        return "'shape' tuple is malformed";
    }
    /* Python writes a 1-tuple as "(5,)"; "(5)" is just an int, not a tuple. Accept both: harmless. */
    *ndim = n;
    return NULL;
}

static mpl_status parse_header(const char *path, const char *h, size_t len, npy_array *a, char *err, size_t cap) {
    cursor c = {h, h + len};
    int have_descr = 0, have_fortran = 0, have_shape = 0;
    char descr[32] = "";
    int fortran = 0;
    for (size_t i = 0; i < len; i++)
        if (h[i] == 0) return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: contains a NUL byte");
    skip_ws(&c);
    if (c.p >= c.end || *c.p != '{')
        return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: not a dict (expected '{')");
    c.p++;
    for (;;) {
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        char key[32];
        if (parse_string(&c, key, sizeof key))
            return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: expected a quoted key");
        skip_ws(&c);
        if (c.p >= c.end || *c.p != ':')
            return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: expected ':' after '%s'", key);
        c.p++;
        skip_ws(&c);
        if (strcmp(key, "descr") == 0) {
            if (have_descr) return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: 'descr' given twice");
            if (parse_string(&c, descr, sizeof descr))
                return fail(err, cap, MPL_ERR_FORMAT, path,
                            "unsupported .npy dtype: 'descr' is not a simple type string (structured dtypes are not "
                            "supported)");
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (have_fortran)
                return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: 'fortran_order' given twice");
            if (match_word(&c, "True"))
                fortran = 1;
            else if (match_word(&c, "False"))
                fortran = 0;
            else
                return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: 'fortran_order' must be True or False");
            have_fortran = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (have_shape) return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: 'shape' given twice");
            const char *why = parse_shape(&c, &a->ndim, a->shape);
            if (why) return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: %s", why);
            have_shape = 1;
        } else {
            return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: unexpected key '%s'", key);
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        if (c.p < c.end && *c.p == '}') {
            c.p++;
            break;
        }
        return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: expected ',' or '}' after '%s'", key);
    }
    skip_ws(&c);
    if (c.p != c.end)
        return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: unexpected text after the dict");
    if (!have_descr || !have_fortran || !have_shape)
        return fail(err, cap, MPL_ERR_FORMAT, path, "malformed .npy header: missing '%s'",
                    !have_descr ? "descr" : !have_fortran ? "fortran_order" : "shape");
    if (fortran)
        return fail(err, cap, MPL_ERR_FORMAT, path,
                    "fortran_order is True: only C-order arrays are supported (save np.ascontiguousarray(a))");
    a->dtype = MPL_DTYPE_NONE;
    for (size_t i = 0; i < sizeof descr_table / sizeof descr_table[0]; i++)
        if (strcmp(descr, descr_table[i].descr) == 0) a->dtype = descr_table[i].dtype;
    if (a->dtype == MPL_DTYPE_NONE)
        return fail(err, cap, MPL_ERR_FORMAT, path,
                    "unsupported dtype '%s': supported are <i4 (int32), <i8 (int64), |i1 (int8), |u1 (uint8), <f2 "
                    "(float16), <f4 (float32), <u2 (bfloat16 bits), little-endian",
                    descr);
    /* Element and byte counts, overflow-checked. */
    size_t count = 1;
    for (int i = 0; i < a->ndim; i++) {
        if ((uint64_t)a->shape[i] > SIZE_MAX || __builtin_mul_overflow(count, (size_t)a->shape[i], &count)) {
            char s[256];
            npy_shape_string(a->ndim, a->shape, s, sizeof s);
            return fail(err, cap, MPL_ERR_OVERFLOW, path, "shape %s: element count overflows", s);
        }
    }
    size_t bytes;
    if (__builtin_mul_overflow(count, mpl_dtype_size(a->dtype), &bytes)) {
        char s[256];
        npy_shape_string(a->ndim, a->shape, s, sizeof s);
        return fail(err, cap, MPL_ERR_OVERFLOW, path, "shape %s of %s: byte count overflows", s,
                    mpl_dtype_name(a->dtype));
    }
    a->count = count;
    a->nbytes = bytes;
    return MPL_OK;
}

mpl_status npy_read(const char *path, npy_array *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    if (err && cap) err[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return fail(err, cap, MPL_ERR_IO, path, "cannot open: %s", strerror(errno));
    mpl_status st = MPL_OK;
    char *header = NULL;
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        st = fail(err, cap, MPL_ERR_IO, path, "cannot stat: %s", strerror(errno));
        goto done;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = fail(err, cap, MPL_ERR_IO, path, "not a regular file");
        goto done;
    }
    uint64_t fsize = (uint64_t)sb.st_size;
    unsigned char pre[12];
    if (fsize < 10 || fread(pre, 1, 10, f) != 10) {
        st = fail(err, cap, MPL_ERR_FORMAT, path, "not a .npy file: too short (%llu bytes)", (unsigned long long)fsize);
        goto done;
    }
    if (memcmp(pre, "\x93NUMPY", 6) != 0) {
        st = fail(err, cap, MPL_ERR_FORMAT, path, "not a .npy file: bad magic (expected \\x93NUMPY)");
        goto done;
    }
    int major = pre[6], minor = pre[7];
    uint64_t hlen, hstart;
    if (major == 1 && minor == 0) {
        hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8);
        hstart = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (fsize < 12 || fread(pre + 10, 1, 2, f) != 2) {
            st = fail(err, cap, MPL_ERR_FORMAT, path, "truncated .npy preamble");
            goto done;
        }
        hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8) | ((uint64_t)pre[10] << 16) | ((uint64_t)pre[11] << 24);
        hstart = 12;
    } else {
        st = fail(err, cap, MPL_ERR_FORMAT, path, "unsupported .npy version %d.%d (supported: 1.0, 2.0, 3.0)", major,
                  minor);
        goto done;
    }
    if (hlen == 0 || hlen > NPY_MAX_HEADER) {
        st = fail(err, cap, MPL_ERR_FORMAT, path, "bad .npy header length %llu (must be 1..%u)",
                  (unsigned long long)hlen, NPY_MAX_HEADER);
        goto done;
    }
    if (hstart + hlen > fsize) {
        st = fail(err, cap, MPL_ERR_FORMAT, path, "truncated .npy header: header length %llu but the file has %llu bytes",
                  (unsigned long long)hlen, (unsigned long long)fsize);
        goto done;
    }
    header = malloc((size_t)hlen);
    if (!header) {
        st = fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "cannot allocate the header");
        goto done;
    }
    if (fread(header, 1, (size_t)hlen, f) != (size_t)hlen) {
        st = fail(err, cap, MPL_ERR_IO, path, "cannot read the header: %s", ferror(f) ? strerror(errno) : "short read");
        goto done;
    }
    st = parse_header(path, header, (size_t)hlen, out, err, cap);
    if (st != MPL_OK) goto done;
    uint64_t have = fsize - hstart - hlen;
    if (have != (uint64_t)out->nbytes) {
        char s[256];
        npy_shape_string(out->ndim, out->shape, s, sizeof s);
        if (have < (uint64_t)out->nbytes)
            st = fail(err, cap, MPL_ERR_FORMAT, path, "truncated data: shape %s of %s needs %zu bytes, file has %llu", s,
                      mpl_dtype_name(out->dtype), out->nbytes, (unsigned long long)have);
        else
            st = fail(err, cap, MPL_ERR_FORMAT, path, "%llu trailing bytes after the data of shape %s of %s",
                      (unsigned long long)(have - out->nbytes), s, mpl_dtype_name(out->dtype));
        goto done;
    }
    out->data = malloc(out->nbytes ? out->nbytes : 1);
    if (!out->data) {
        st = fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "cannot allocate %zu bytes for the data", out->nbytes);
        goto done;
    }
    if (out->nbytes && fread(out->data, 1, out->nbytes, f) != out->nbytes) {
        st = fail(err, cap, MPL_ERR_IO, path, "cannot read the data: %s", ferror(f) ? strerror(errno) : "short read");
        goto done;
    }
done:
    free(header);
    fclose(f);
    if (st != MPL_OK) npy_free(out);
    return st;
}

/* ---- writer ---- */

static mpl_status write_stream(FILE *f, const char *path, mpl_dtype dtype, int ndim, const int64_t *shape,
                               const void *data, char *err, size_t cap) {
    const char *descr = npy_descr(dtype);
    if (!descr) return fail(err, cap, MPL_ERR_INVALID_ARGUMENT, path, "cannot write dtype %s", mpl_dtype_name(dtype));
    if (ndim < 0 || ndim > NPY_MAX_DIMS)
        return fail(err, cap, MPL_ERR_INVALID_ARGUMENT, path, "cannot write %d dimensions", ndim);
    char dict[512];
    int u = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0 || __builtin_mul_overflow(count, (size_t)shape[i], &count))
            return fail(err, cap, MPL_ERR_OVERFLOW, path, "cannot write: element count overflows");
        u += snprintf(dict + u, sizeof dict - (size_t)u, "%s%lld%s", i ? ", " : "", (long long)shape[i],
                      ndim == 1 ? "," : "");
    }
    u += snprintf(dict + u, sizeof dict - (size_t)u, "), }");
    size_t bytes;
    if (__builtin_mul_overflow(count, mpl_dtype_size(dtype), &bytes))
        return fail(err, cap, MPL_ERR_OVERFLOW, path, "cannot write: byte count overflows");
    /* Pad with spaces and a final '\n' so the data starts 64-byte aligned, as NumPy does. */
    size_t body = (size_t)u + 1;
    size_t pre = 10;
    size_t total = (pre + body + 63) / 64 * 64;
    size_t hlen = total - pre;
    unsigned char p[12];
    memcpy(p, "\x93NUMPY", 6);
    p[6] = 1;
    p[7] = 0;
    p[8] = (unsigned char)(hlen & 0xff);
    p[9] = (unsigned char)(hlen >> 8);
    if (fwrite(p, 1, pre, f) != pre || fwrite(dict, 1, (size_t)u, f) != (size_t)u) goto io;
    for (size_t i = (size_t)u; i + 1 < hlen; i++)
        if (fputc(' ', f) == EOF) goto io;
    if (fputc('\n', f) == EOF) goto io;
    if (bytes && fwrite(data, 1, bytes, f) != bytes) goto io;
    if (fflush(f) != 0) goto io;
    return MPL_OK;
io:
    return fail(err, cap, MPL_ERR_IO, path, "cannot write: %s", strerror(errno));
}

mpl_status npy_write(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, const void *data, char *err,
                     size_t cap) {
    FILE *f = fopen(path, "wb");
    if (!f) return fail(err, cap, MPL_ERR_IO, path, "cannot create: %s", strerror(errno));
    mpl_status st = write_stream(f, path, dtype, ndim, shape, data, err, cap);
    if (fclose(f) != 0 && st == MPL_OK) st = fail(err, cap, MPL_ERR_IO, path, "cannot close: %s", strerror(errno));
    if (st != MPL_OK) remove(path);
    return st;
}

mpl_status npy_write_atomic(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, const void *data,
                            char *err, size_t cap) {
    /* "<path>.tmpXXXXXX" lives in the same directory as path, so rename() is atomic. */
    size_t l = strlen(path);
    char *tmp = malloc(l + 16);
    if (!tmp) return fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "out of memory");
    memcpy(tmp, path, l);
    memcpy(tmp + l, ".tmpXXXXXX", 11);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        mpl_status st = fail(err, cap, MPL_ERR_IO, path, "cannot create a temporary file next to it: %s", strerror(errno));
        free(tmp);
        return st;
    }
    /* mkstemp makes the file 0600; give it the permissions a plain create would (0666 & ~umask). */
    mode_t um = umask(0);
    umask(um);
    (void)fchmod(fd, 0666 & ~um); /* best effort: the data is right either way */
    FILE *f = fdopen(fd, "wb");
    mpl_status st;
    if (!f) {
        st = fail(err, cap, MPL_ERR_IO, path, "cannot open the temporary file: %s", strerror(errno));
        close(fd);
    } else {
        st = write_stream(f, path, dtype, ndim, shape, data, err, cap);
        if (fclose(f) != 0 && st == MPL_OK) st = fail(err, cap, MPL_ERR_IO, path, "cannot close: %s", strerror(errno));
    }
    if (st == MPL_OK && rename(tmp, path) != 0)
        st = fail(err, cap, MPL_ERR_IO, path, "cannot rename the temporary file into place: %s", strerror(errno));
    if (st != MPL_OK) remove(tmp);
    free(tmp);
    return st;
}
