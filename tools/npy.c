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
 *
 * Where the bytes come from (npy_read): a regular file is read with its size known up front; a
 * named pipe, socket or character device (/dev/stdin, <(...)) is read as a stream, every wait
 * bounded by a timeout; a terminal, directory or block device is refused. Where they go
 * (npy_write_output): see npy.h -- a path is never replaced by something of another type.
 */
#define _XOPEN_SOURCE 700 /* realpath (XSI), with the POSIX 2008 the build asks for */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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

/* ---- byte sources: a regular file, a stream (named pipe, socket, character device) or memory ---- */

/*
 * Streams are read without ever blocking for longer than timeout_ms: every read waits in poll()
 * first, so a pipe with no writer, or a writer that stops, ends in a "timed out" error instead of
 * a hang. A regular file is read with plain read() (it cannot stall that way).
 */
typedef struct source {
    int fd;                   /* -1: memory */
    int stream;               /* poll before every read */
    int timeout_ms;
    const unsigned char *mem; /* memory source */
    size_t mem_size, mem_pos;
    uint64_t consumed;        /* bytes delivered so far */
    int timed_out;            /* the last short read was a timeout */
    int err_no;               /* the last short read was this error (0: end of data) */
} source;

/* Reads up to n bytes into buf; fewer only at the end of the data, on a timeout or on an error. */
static size_t source_read(source *s, void *buf, size_t n) {
    size_t got = 0;
    s->timed_out = 0;
    s->err_no = 0;
    if (s->fd < 0) {
        size_t left = s->mem_size - s->mem_pos;
        got = n < left ? n : left;
        if (got) memcpy(buf, s->mem + s->mem_pos, got);
        s->mem_pos += got;
        s->consumed += got;
        return got;
    }
    while (got < n) {
        if (s->stream) {
            struct pollfd p = {.fd = s->fd, .events = POLLIN};
            int r = poll(&p, 1, s->timeout_ms);
            if (r == 0) {
                s->timed_out = 1;
                break;
            }
            if (r < 0) {
                if (errno == EINTR) continue;
                s->err_no = errno;
                break;
            }
        }
        ssize_t r = read(s->fd, (char *)buf + got, n - got);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r == 0) break; /* end of data (a pipe: every writer has closed it) */
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
        s->err_no = errno;
        break;
    }
    s->consumed += got;
    return got;
}

/* Why the last read of s came up short: "" (end of data), a timeout or an error. */
static const char *short_why(const source *s, char *buf, size_t cap) {
    if (s->timed_out)
        snprintf(buf, cap, " (no data for %d ms: is anything writing to it?)", s->timeout_ms);
    else if (s->err_no)
        snprintf(buf, cap, " (read error: %s)", strerror(s->err_no));
    else
        buf[0] = 0;
    return buf;
}

static mpl_status short_status(const source *s) { return s->timed_out || s->err_no ? MPL_ERR_IO : MPL_ERR_FORMAT; }

/*
 * The shared reader: preamble, header, data. size_known: the source holds exactly `size` bytes
 * (a regular file or memory), so lengths are checked before anything is allocated; a stream's
 * length is only known at its end, so its buffer grows as bytes arrive (a header that claims
 * terabytes over a short stream costs only what was sent).
 */
static mpl_status load(source *s, const char *path, int size_known, uint64_t size, npy_array *out, char *err,
                       size_t cap) {
    const char *what = s->stream ? "stream" : "file";
    char why[128];
    mpl_status st = MPL_OK;
    char *header = NULL;
    unsigned char pre[12];
    size_t got = source_read(s, pre, 10);
    if (got < 10) {
        if (s->timed_out || s->err_no)
            return fail(err, cap, MPL_ERR_IO, path, "not a .npy %s: only %zu bytes arrived%s", what, got,
                        short_why(s, why, sizeof why));
        return fail(err, cap, MPL_ERR_FORMAT, path, "not a .npy file: too short (%llu bytes)",
                    (unsigned long long)(size_known ? size : got));
    }
    if (memcmp(pre, "\x93NUMPY", 6) != 0)
        return fail(err, cap, MPL_ERR_FORMAT, path, "not a .npy file: bad magic (expected \\x93NUMPY)");
    int major = pre[6], minor = pre[7];
    uint64_t hlen, hstart;
    if (major == 1 && minor == 0) {
        hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8);
        hstart = 10;
    } else if ((major == 2 || major == 3) && minor == 0) {
        if (source_read(s, pre + 10, 2) != 2)
            return fail(err, cap, short_status(s), path, "truncated .npy preamble%s", short_why(s, why, sizeof why));
        hlen = (uint64_t)pre[8] | ((uint64_t)pre[9] << 8) | ((uint64_t)pre[10] << 16) | ((uint64_t)pre[11] << 24);
        hstart = 12;
    } else {
        return fail(err, cap, MPL_ERR_FORMAT, path, "unsupported .npy version %d.%d (supported: 1.0, 2.0, 3.0)", major,
                    minor);
    }
    if (hlen == 0 || hlen > NPY_MAX_HEADER)
        return fail(err, cap, MPL_ERR_FORMAT, path, "bad .npy header length %llu (must be 1..%u)",
                    (unsigned long long)hlen, NPY_MAX_HEADER);
    if (size_known && hstart + hlen > size)
        return fail(err, cap, MPL_ERR_FORMAT, path,
                    "truncated .npy header: header length %llu but the file has %llu bytes", (unsigned long long)hlen,
                    (unsigned long long)size);
    header = malloc((size_t)hlen);
    if (!header) return fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "cannot allocate the header");
    if (source_read(s, header, (size_t)hlen) != (size_t)hlen) {
        st = fail(err, cap, short_status(s), path,
                  "truncated .npy header: header length %llu but the %s ended after %llu bytes%s",
                  (unsigned long long)hlen, what, (unsigned long long)s->consumed, short_why(s, why, sizeof why));
        goto done;
    }
    st = parse_header(path, header, (size_t)hlen, out, err, cap);
    if (st != MPL_OK) goto done;
    char sh[256];
    npy_shape_string(out->ndim, out->shape, sh, sizeof sh);
    if (size_known) {
        uint64_t have = size - hstart - hlen;
        if (have != (uint64_t)out->nbytes) {
            if (have < (uint64_t)out->nbytes)
                st = fail(err, cap, MPL_ERR_FORMAT, path, "truncated data: shape %s of %s needs %zu bytes, file has %llu",
                          sh, mpl_dtype_name(out->dtype), out->nbytes, (unsigned long long)have);
            else
                st = fail(err, cap, MPL_ERR_FORMAT, path, "%llu trailing bytes after the data of shape %s of %s",
                          (unsigned long long)(have - out->nbytes), sh, mpl_dtype_name(out->dtype));
            goto done;
        }
        out->data = malloc(out->nbytes ? out->nbytes : 1);
        if (!out->data) {
            st = fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "cannot allocate %zu bytes for the data", out->nbytes);
            goto done;
        }
        if (out->nbytes && source_read(s, out->data, out->nbytes) != out->nbytes) {
            st = fail(err, cap, MPL_ERR_IO, path, "cannot read the data%s",
                      s->err_no ? short_why(s, why, sizeof why) : ": the file shrank while being read");
            goto done;
        }
        goto done;
    }
    /* A stream: grow the buffer as the data arrives, then require the end right after it. */
    {
        size_t have = 0, bufcap = out->nbytes < ((size_t)1 << 20) ? out->nbytes : ((size_t)1 << 20);
        out->data = malloc(bufcap ? bufcap : 1);
        if (!out->data) {
            st = fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "cannot allocate the data buffer");
            goto done;
        }
        while (have < out->nbytes) {
            if (have == bufcap) {
                size_t nc = bufcap > out->nbytes / 2 ? out->nbytes : bufcap * 2;
                void *nb = realloc(out->data, nc);
                if (!nb) {
                    st = fail(err, cap, MPL_ERR_OUT_OF_MEMORY, path, "cannot allocate %zu bytes for the data", nc);
                    goto done;
                }
                out->data = nb;
                bufcap = nc;
            }
            size_t r = source_read(s, (char *)out->data + have, bufcap - have);
            have += r;
            if (have < bufcap && (s->timed_out || s->err_no || r == 0)) break;
        }
        if (have < out->nbytes) {
            st = fail(err, cap, short_status(s), path, "truncated data: shape %s of %s needs %zu bytes, the stream ended "
                      "after %zu%s", sh, mpl_dtype_name(out->dtype), out->nbytes, have, short_why(s, why, sizeof why));
            goto done;
        }
        unsigned char extra;
        if (source_read(s, &extra, 1) != 0) {
            st = fail(err, cap, MPL_ERR_FORMAT, path, "trailing bytes after the data of shape %s of %s", sh,
                      mpl_dtype_name(out->dtype));
            goto done;
        }
        if (s->timed_out || s->err_no) {
            st = fail(err, cap, MPL_ERR_IO, path, "the stream did not end after the data of shape %s%s", sh,
                      short_why(s, why, sizeof why));
            goto done;
        }
    }
done:
    free(header);
    return st;
}

mpl_status npy_parse(const char *label, const void *data, size_t size, npy_array *out, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    if (err && cap) err[0] = 0;
    source s = {.fd = -1, .mem = data, .mem_size = size};
    mpl_status st = load(&s, label, 1, size, out, err, cap);
    if (st != MPL_OK) npy_free(out);
    return st;
}

mpl_status npy_read_timeout(const char *path, npy_array *out, int timeout_ms, char *err, size_t cap) {
    memset(out, 0, sizeof *out);
    if (err && cap) err[0] = 0;
    /* O_NONBLOCK: opening a named pipe must not wait for a writer (the reads below wait, bounded). */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return fail(err, cap, MPL_ERR_IO, path, "cannot open: %s", strerror(errno));
    mpl_status st;
    struct stat sb;
    source s = {.fd = fd, .timeout_ms = timeout_ms > 0 ? timeout_ms : 1};
    if (fstat(fd, &sb) != 0) {
        st = fail(err, cap, MPL_ERR_IO, path, "cannot stat: %s", strerror(errno));
    } else if (S_ISREG(sb.st_mode)) {
        st = load(&s, path, 1, (uint64_t)sb.st_size, out, err, cap);
    } else if (S_ISFIFO(sb.st_mode) || S_ISSOCK(sb.st_mode) || S_ISCHR(sb.st_mode)) {
        if (S_ISCHR(sb.st_mode) && isatty(fd)) {
            st = fail(err, cap, MPL_ERR_IO, path,
                      "is a terminal: a .npy input must be a file, a pipe or a redirection (e.g. < x.npy)");
        } else {
            s.stream = 1;
            st = load(&s, path, 0, 0, out, err, cap);
        }
    } else {
        st = fail(err, cap, MPL_ERR_IO, path, "is a %s: expected a regular file, a named pipe or a character device",
                  S_ISDIR(sb.st_mode) ? "directory" : S_ISBLK(sb.st_mode) ? "block device" : "special file");
    }
    close(fd);
    if (st != MPL_OK) npy_free(out);
    return st;
}

mpl_status npy_read(const char *path, npy_array *out, char *err, size_t cap) {
    return npy_read_timeout(path, out, NPY_STREAM_TIMEOUT_MS, err, cap);
}

/* ---- writer ---- */

/* The preamble + header dict (padded so the data starts 64-byte aligned, as NumPy does) and the data size. */
static mpl_status build_header(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, char *hdr,
                               size_t *hdr_len, size_t *data_bytes, char *err, size_t cap) {
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
    if (__builtin_mul_overflow(count, mpl_dtype_size(dtype), data_bytes))
        return fail(err, cap, MPL_ERR_OVERFLOW, path, "cannot write: byte count overflows");
    size_t pre = 10, body = (size_t)u + 1;
    size_t total = (pre + body + 63) / 64 * 64, hlen = total - pre;
    memcpy(hdr, "\x93NUMPY", 6);
    hdr[6] = 1;
    hdr[7] = 0;
    hdr[8] = (char)(hlen & 0xff);
    hdr[9] = (char)(hlen >> 8);
    memset(hdr + pre, ' ', hlen);
    memcpy(hdr + pre, dict, (size_t)u);
    hdr[total - 1] = '\n';
    *hdr_len = total;
    return MPL_OK;
}

/* Writes n bytes to fd; with stream set, waits for room in poll() at most timeout_ms each time. */
static int write_all(int fd, int stream, int timeout_ms, const void *buf, size_t n, int *timed_out) {
    size_t done = 0;
    *timed_out = 0;
    while (done < n) {
        if (stream) {
            struct pollfd p = {.fd = fd, .events = POLLOUT};
            int r = poll(&p, 1, timeout_ms);
            if (r == 0) {
                *timed_out = 1;
                return -1;
            }
            if (r < 0) {
                if (errno == EINTR) continue;
                return -1;
            }
        }
        /* Large writes in pieces: a pipe takes at most its buffer at a time anyway. */
        size_t chunk = n - done > ((size_t)1 << 20) ? ((size_t)1 << 20) : n - done;
        ssize_t w = write(fd, (const char *)buf + done, chunk);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        if (w == 0) errno = EIO;
        return -1;
    }
    return 0;
}

static mpl_status write_fd(int fd, int stream, int timeout_ms, const char *path, const char *hdr, size_t hlen,
                           const void *data, size_t bytes, char *err, size_t cap) {
    int to = 0;
    if (write_all(fd, stream, timeout_ms, hdr, hlen, &to) != 0 ||
        (bytes && write_all(fd, stream, timeout_ms, data, bytes, &to) != 0)) {
        if (to) return fail(err, cap, MPL_ERR_IO, path, "cannot write: nothing read from it for %d ms", timeout_ms);
        return fail(err, cap, MPL_ERR_IO, path, "cannot write: %s", strerror(errno));
    }
    return MPL_OK;
}

/*
 * A regular file (or nothing) at target: write "<target>.tmpXXXXXX" beside it and rename it over
 * target once everything is written; mode: the permissions to give it (those of the file it
 * replaces, or 0666 & ~umask for a new one).
 */
static mpl_status write_replace(const char *label, const char *target, mode_t mode, const char *hdr, size_t hlen,
                                const void *data, size_t bytes, char *err, size_t cap) {
    size_t l = strlen(target);
    char *tmp = malloc(l + 16);
    if (!tmp) return fail(err, cap, MPL_ERR_OUT_OF_MEMORY, label, "out of memory");
    memcpy(tmp, target, l);
    memcpy(tmp + l, ".tmpXXXXXX", 11);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        mpl_status st =
            fail(err, cap, MPL_ERR_IO, label, "cannot create a temporary file next to it: %s", strerror(errno));
        free(tmp);
        return st;
    }
    (void)fchmod(fd, mode); /* best effort: the data is right either way */
    mpl_status st = write_fd(fd, 0, 0, label, hdr, hlen, data, bytes, err, cap);
    if (close(fd) != 0 && st == MPL_OK) st = fail(err, cap, MPL_ERR_IO, label, "cannot close: %s", strerror(errno));
    /* Rename only over a regular file or nothing: if target turned into something else meanwhile, stop. */
    struct stat lb;
    if (st == MPL_OK && lstat(target, &lb) == 0 && !S_ISREG(lb.st_mode))
        st = fail(err, cap, MPL_ERR_IO, label, "%s stopped being a regular file while the output was written: left as it is",
                  target);
    if (st == MPL_OK && rename(tmp, target) != 0)
        st = fail(err, cap, MPL_ERR_IO, label, "cannot rename the temporary file into place: %s", strerror(errno));
    if (st != MPL_OK) unlink(tmp);
    free(tmp);
    return st;
}

/* Opens a named pipe for writing without blocking: retries while no reader has it open, up to timeout_ms. */
static int open_fifo_writer(const char *path, int timeout_ms) {
    for (int waited = 0;;) {
        int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd >= 0 || errno != ENXIO || waited >= timeout_ms) return fd;
        struct timespec ts = {0, 20 * 1000 * 1000}; /* 20 ms: a reader that is starting up appears quickly */
        nanosleep(&ts, NULL);
        waited += 20;
    }
}

mpl_status npy_write_output(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, const void *data,
                            int timeout_ms, char *err, size_t cap) {
    char hdr[640];
    size_t hlen = 0, bytes = 0;
    mpl_status st = build_header(path, dtype, ndim, shape, hdr, &hlen, &bytes, err, cap);
    if (st != MPL_OK) return st;
    if (timeout_ms <= 0) timeout_ms = 1;
    struct stat sb, lb;
    if (stat(path, &sb) != 0) {
        if (errno != ENOENT) return fail(err, cap, MPL_ERR_IO, path, "cannot stat: %s", strerror(errno));
        if (lstat(path, &lb) == 0 && S_ISLNK(lb.st_mode)) {
            char to[1024];
            ssize_t n = readlink(path, to, sizeof to - 1);
            to[n > 0 ? n : 0] = 0;
            return fail(err, cap, MPL_ERR_IO, path,
                        "is a symbolic link to '%s', which does not exist: not written (create the target or remove "
                        "the link)",
                        to);
        }
        mode_t um = umask(0);
        umask(um);
        return write_replace(path, path, 0666 & ~um, hdr, hlen, data, bytes, err, cap);
    }
    if (S_ISREG(sb.st_mode)) {
        /* A symbolic link to a regular file: replace the file it points to, keep the link. */
        if (lstat(path, &lb) == 0 && S_ISLNK(lb.st_mode)) {
            char *real = realpath(path, NULL);
            if (!real) return fail(err, cap, MPL_ERR_IO, path, "cannot resolve the symbolic link: %s", strerror(errno));
            st = write_replace(path, real, sb.st_mode & 07777, hdr, hlen, data, bytes, err, cap);
            free(real);
            return st;
        }
        return write_replace(path, path, sb.st_mode & 07777, hdr, hlen, data, bytes, err, cap);
    }
    if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)) {
        /* Write through (a terminal, /dev/null, a pipe): never replace the path. */
        int fd = S_ISFIFO(sb.st_mode) ? open_fifo_writer(path, timeout_ms)
                                      : open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            if (errno == ENXIO)
                return fail(err, cap, MPL_ERR_IO, path, "named pipe: no reader opened it within %d ms: not written",
                            timeout_ms);
            return fail(err, cap, MPL_ERR_IO, path, "cannot open for writing: %s", strerror(errno));
        }
        st = write_fd(fd, 1, timeout_ms, path, hdr, hlen, data, bytes, err, cap);
        if (close(fd) != 0 && st == MPL_OK) st = fail(err, cap, MPL_ERR_IO, path, "cannot close: %s", strerror(errno));
        return st;
    }
    return fail(err, cap, MPL_ERR_IO, path, "is a %s: not written (the output must be a regular file, a character device or a named pipe)",
                S_ISDIR(sb.st_mode) ? "directory" : S_ISSOCK(sb.st_mode) ? "socket" : S_ISBLK(sb.st_mode) ? "block device" : "special file");
}

mpl_status npy_write_atomic(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, const void *data,
                            char *err, size_t cap) {
    return npy_write_output(path, dtype, ndim, shape, data, NPY_STREAM_TIMEOUT_MS, err, cap);
}

int npy_is_stdout(const char *path) {
    struct stat a, b;
    if (stat(path, &a) != 0 || fstat(STDOUT_FILENO, &b) != 0) return 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}
