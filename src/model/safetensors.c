/*
 * safetensors.c -- strict safetensors reader (rules in safetensors.h).
 * Nothing is read from the data section here: tensors are only described,
 * after every offset and size has been proven to lie inside the file.
 */
#include "safetensors.h"

#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../core/internal.h"

#define FMT(...) mpl_set_error(MPL_ERR_FORMAT, __VA_ARGS__)

/* Header nesting is 3 deep in a valid file; 16 leaves room and bounds json-c's recursion. */
#define ST_JSON_DEPTH 16

typedef struct st_dtype {
    const char *name;
    int bits;       /* element size in bits */
    mpl_dtype type; /* what mplinear computes with, or NONE */
} st_dtype;

/* Every dtype of the format (safetensors 0.6); sub-byte types must fill whole bytes. */
static const st_dtype st_dtypes[] = {
    {"BOOL", 8, MPL_DTYPE_NONE},   {"U8", 8, MPL_DTYPE_U8},        {"I8", 8, MPL_DTYPE_I8},
    {"F8_E5M2", 8, MPL_DTYPE_NONE}, {"F8_E4M3", 8, MPL_DTYPE_NONE}, {"F8_E8M0", 8, MPL_DTYPE_NONE},
    {"I16", 16, MPL_DTYPE_NONE},   {"U16", 16, MPL_DTYPE_NONE},    {"F16", 16, MPL_DTYPE_F16},
    {"BF16", 16, MPL_DTYPE_BF16},  {"I32", 32, MPL_DTYPE_I32},     {"U32", 32, MPL_DTYPE_NONE},
    {"F32", 32, MPL_DTYPE_F32},    {"F64", 64, MPL_DTYPE_NONE},    {"I64", 64, MPL_DTYPE_I64},
    {"U64", 64, MPL_DTYPE_NONE},   {"C64", 64, MPL_DTYPE_NONE},    {"F4", 4, MPL_DTYPE_NONE},
    {"F6_E2M3", 6, MPL_DTYPE_NONE}, {"F6_E3M2", 6, MPL_DTYPE_NONE},
};

size_t mpl_utf8_check(const uint8_t *s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c == 0) return i;
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        uint32_t cp, min;
        if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            return i;
        }
        if (n - i < (size_t)len) return i;
        for (int j = 1; j < len; j++) {
            if ((s[i + j] & 0xc0) != 0x80) return i;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return i;
        i += (size_t)len;
    }
    return n;
}

int64_t mpl_st_numel(const mpl_st_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

static void free_file(mpl_st_file *f) {
    if (!f) return;
    for (size_t i = 0; i < f->count; i++) {
        free(f->tensors[i].name);
        free(f->tensors[i].shape);
    }
    free(f->tensors);
    free(f->path);
    if (f->map) munmap(f->map, f->map_size);
    free(f);
}

void mpl_st_close(mpl_st_file *f) { free_file(f); }

/* 1: non-negative integer in *out; 0: not an integer; -1: negative. */
static int json_u64(json_object *o, uint64_t *out) {
    if (!o || json_object_get_type(o) != json_type_int) return 0;
    int64_t v = json_object_get_int64(o);
    if (v < 0) return -1;
    /* json-c saturates at INT64_MAX; larger values are held as uint64. */
    *out = v == INT64_MAX ? json_object_get_uint64(o) : (uint64_t)v;
    return 1;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(((const mpl_st_tensor *)a)->name, ((const mpl_st_tensor *)b)->name);
}

static int cmp_range(const void *a, const void *b) {
    const mpl_st_tensor *x = *(const mpl_st_tensor *const *)a, *y = *(const mpl_st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Parses one header entry (name -> object) into t. */
static mpl_status parse_entry(const char *label, const char *name, json_object *v, uint64_t data_size,
                              mpl_st_tensor *t) {
    if (json_object_get_type(v) != json_type_object)
        return FMT("%s: tensor '%s': header entry is a JSON %s, expected an object with dtype, shape and "
                   "data_offsets",
                   label, name, json_type_to_name(json_object_get_type(v)));
    json_object *jd = NULL, *js = NULL, *jo = NULL;
    int fields = 0;
    json_object_object_foreach(v, key, val) {
        if (strcmp(key, "dtype") == 0)
            jd = val;
        else if (strcmp(key, "shape") == 0)
            js = val;
        else if (strcmp(key, "data_offsets") == 0)
            jo = val;
        else
            return FMT("%s: tensor '%s': unknown field '%s' (allowed: dtype, shape, data_offsets)", label, name, key);
        fields++;
    }
    if (!jd || !js || !jo)
        return FMT("%s: tensor '%s': missing field '%s'", label, name, !jd ? "dtype" : !js ? "shape" : "data_offsets");
    if (json_object_get_type(jd) != json_type_string)
        return FMT("%s: tensor '%s': dtype is not a string", label, name);
    const char *ds = json_object_get_string(jd);
    const st_dtype *dt = NULL;
    for (size_t i = 0; i < sizeof st_dtypes / sizeof st_dtypes[0]; i++)
        if (strcmp(ds, st_dtypes[i].name) == 0) dt = &st_dtypes[i];
    if (!dt)
        return FMT("%s: tensor '%s': unknown dtype '%.32s' (known: BOOL, U8, I8, I16, U16, I32, U32, I64, U64, F16, "
                   "BF16, F32, F64, C64, F8_E5M2, F8_E4M3, F8_E8M0, F4, F6_E2M3, F6_E3M2)",
                   label, name, ds);
    t->dtype_name = dt->name;
    t->dtype = dt->type;
    if (json_object_get_type(js) != json_type_array) return FMT("%s: tensor '%s': shape is not an array", label, name);
    size_t nd = json_object_array_length(js);
    if (nd > 64) return FMT("%s: tensor '%s': shape has %zu dimensions (at most 64 accepted)", label, name, nd);
    t->ndim = (int)nd;
    t->shape = nd ? calloc(nd, sizeof(int64_t)) : NULL;
    if (nd && !t->shape) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    uint64_t numel = 1;
    for (size_t i = 0; i < nd; i++) {
        uint64_t d;
        int r = json_u64(json_object_array_get_idx(js, i), &d);
        if (r <= 0)
            return FMT("%s: tensor '%s': shape[%zu] is %s: dimensions must be non-negative integers", label, name, i,
                       r < 0 ? "negative" : "not an integer");
        if (d > (uint64_t)INT64_MAX || __builtin_mul_overflow(numel, d, &numel))
            return FMT("%s: tensor '%s': shape[%zu] = %llu: the element count overflows 64 bits", label, name, i,
                       (unsigned long long)d);
        t->shape[i] = (int64_t)d;
    }
    uint64_t bits;
    if (__builtin_mul_overflow(numel, (uint64_t)dt->bits, &bits) || numel > (uint64_t)INT64_MAX)
        return FMT("%s: tensor '%s': %llu elements of %s: the byte count overflows", label, name,
                   (unsigned long long)numel, dt->name);
    if (bits % 8)
        return FMT("%s: tensor '%s': %llu elements of %d-bit %s do not fill whole bytes", label, name,
                   (unsigned long long)numel, dt->bits, dt->name);
    if (json_object_get_type(jo) != json_type_array || json_object_array_length(jo) != 2)
        return FMT("%s: tensor '%s': data_offsets must be an array [begin, end]", label, name);
    int rb = json_u64(json_object_array_get_idx(jo, 0), &t->begin);
    int re = json_u64(json_object_array_get_idx(jo, 1), &t->end);
    if (rb <= 0 || re <= 0)
        return FMT("%s: tensor '%s': data_offsets must hold two non-negative integers", label, name);
    if (t->begin > t->end)
        return FMT("%s: tensor '%s': data_offsets [%llu, %llu]: begin is past end", label, name,
                   (unsigned long long)t->begin, (unsigned long long)t->end);
    if (t->end > data_size)
        return FMT("%s: tensor '%s': data_offsets [%llu, %llu] run past the data section (%llu bytes; file truncated?)",
                   label, name, (unsigned long long)t->begin, (unsigned long long)t->end,
                   (unsigned long long)data_size);
    if (t->end - t->begin != bits / 8)
        return FMT("%s: tensor '%s': data_offsets [%llu, %llu] span %llu bytes but dtype %s and shape of %llu "
                   "elements need %llu",
                   label, name, (unsigned long long)t->begin, (unsigned long long)t->end,
                   (unsigned long long)(t->end - t->begin), dt->name, (unsigned long long)numel,
                   (unsigned long long)(bits / 8));
    (void)fields;
    return MPL_OK;
}

static mpl_status check_metadata(const char *label, json_object *v) {
    if (json_object_get_type(v) != json_type_object)
        return FMT("%s: __metadata__ is a JSON %s: must be an object of strings", label,
                   json_type_to_name(json_object_get_type(v)));
    json_object_object_foreach(v, key, val) {
        if (json_object_get_type(val) != json_type_string)
            return FMT("%s: __metadata__['%s'] is a JSON %s: values must be strings", label, key,
                       json_type_to_name(json_object_get_type(val)));
    }
    return MPL_OK;
}

/* Parses the header JSON (hdr, n bytes, NUL-terminated copy) into f->tensors. */
static mpl_status parse_header(mpl_st_file *f, const char *hdr, size_t n) {
    const char *label = f->path;
    json_tokener *tok = json_tokener_new_ex(ST_JSON_DEPTH);
    if (!tok) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    json_object *root = json_tokener_parse_ex(tok, hdr, (int)n);
    enum json_tokener_error je = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!root || je != json_tokener_success) {
        json_object_put(root);
        return FMT("%s: header is not valid JSON: %s (near byte %zu of %zu)", label,
                   je == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(je), end, n);
    }
    mpl_status st = MPL_OK;
    for (size_t i = end; i < n; i++)
        if (hdr[i] != ' ' && hdr[i] != '\t' && hdr[i] != '\n' && hdr[i] != '\r') {
            st = FMT("%s: header has data after the JSON object (byte %zu of %zu)", label, i, n);
            goto out;
        }
    if (json_object_get_type(root) != json_type_object) {
        st = FMT("%s: header is a JSON %s: must be an object", label, json_type_to_name(json_object_get_type(root)));
        goto out;
    }
    size_t cap = (size_t)json_object_object_length(root);
    f->tensors = calloc(cap ? cap : 1, sizeof *f->tensors);
    if (!f->tensors) {
        st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        goto out;
    }
    json_object_object_foreach(root, key, val) {
        if (strcmp(key, "__metadata__") == 0) {
            if ((st = check_metadata(label, val)) != MPL_OK) goto out;
            continue;
        }
        if (key[0] == '\0') {
            st = FMT("%s: a tensor has an empty name", label);
            goto out;
        }
        mpl_st_tensor *t = &f->tensors[f->count++];
        t->name = strdup(key);
        if (!t->name) {
            st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
            goto out;
        }
        if ((st = parse_entry(label, key, val, f->data_size, t)) != MPL_OK) goto out;
    }
    qsort(f->tensors, f->count, sizeof *f->tensors, cmp_name);
    for (size_t i = 1; i < f->count; i++)
        if (strcmp(f->tensors[i - 1].name, f->tensors[i].name) == 0) {
            st = FMT("%s: tensor '%s' appears twice", label, f->tensors[i].name);
            goto out;
        }
    /* The tensors must tile the data section: sort by range, walk it. */
    const mpl_st_tensor **by = calloc(f->count ? f->count : 1, sizeof *by);
    if (!by) {
        st = mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        goto out;
    }
    for (size_t i = 0; i < f->count; i++) by[i] = &f->tensors[i];
    qsort(by, f->count, sizeof *by, cmp_range);
    uint64_t at = 0;
    const mpl_st_tensor *prev = NULL;
    for (size_t i = 0; i < f->count && st == MPL_OK; i++) {
        const mpl_st_tensor *t = by[i];
        if (t->begin < at)
            st = FMT("%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", label, prev->name,
                     (unsigned long long)prev->begin, (unsigned long long)prev->end, t->name,
                     (unsigned long long)t->begin, (unsigned long long)t->end);
        else if (t->begin > at)
            st = FMT("%s: data bytes [%llu, %llu) belong to no tensor (before '%s'): tensors must tile the data "
                     "section",
                     label, (unsigned long long)at, (unsigned long long)t->begin, t->name);
        at = t->end;
        prev = t;
    }
    free(by);
    if (st == MPL_OK && at != f->data_size)
        st = FMT("%s: tensors cover %llu bytes but the data section holds %llu: %s", label, (unsigned long long)at,
                 (unsigned long long)f->data_size,
                 at < f->data_size ? "trailing bytes belong to no tensor" : "file truncated");
    for (size_t i = 0; i < f->count && st == MPL_OK; i++) f->tensors[i].data = f->data + f->tensors[i].begin;
out:
    json_object_put(root);
    return st;
}

mpl_status mpl_st_parse(const char *label, const uint8_t *buf, size_t size, mpl_st_file **out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "safetensors: out is NULL");
    *out = NULL;
    if (!label) label = "(buffer)";
    if (!buf && size) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "%s: buffer is NULL", label);
    if (size < 8)
        return FMT("%s: file is %zu bytes: too short for the 8-byte header length (truncated?)", label, size);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = (hl << 8) | buf[i];
    if (hl > MPL_ST_MAX_HEADER)
        return FMT("%s: header length %llu exceeds the limit of %llu bytes", label, (unsigned long long)hl,
                   (unsigned long long)MPL_ST_MAX_HEADER);
    if (hl > size - 8)
        return FMT("%s: header length %llu runs past the end of the %zu-byte file (truncated?)", label,
                   (unsigned long long)hl, size);
    if (hl < 2) return FMT("%s: header length %llu: too short for a JSON object", label, (unsigned long long)hl);
    const uint8_t *h = buf + 8;
    if (h[0] != '{') return FMT("%s: header does not start with '{' (byte 0x%02x)", label, h[0]);
    size_t bad = mpl_utf8_check(h, (size_t)hl);
    if (bad != hl)
        return FMT("%s: header byte %zu (0x%02x) is %s", label, bad, h[bad],
                   h[bad] == 0 ? "NUL: the header must be UTF-8 JSON text" : "not valid UTF-8");
    /* json-c keys are C strings: an escaped NUL would silently shorten a name. */
    for (size_t i = 0; i + 6 <= hl; i++)
        if (h[i] == '\\' && memcmp(h + i + 1, "u0000", 5) == 0)
            return FMT("%s: header byte %zu: escaped NUL (\\u0000) is not allowed in names or strings", label, i);
    mpl_st_file *f = calloc(1, sizeof *f);
    char *copy = malloc((size_t)hl + 1);
    if (f) f->path = strdup(label);
    if (!f || !copy || !f->path) {
        free(copy);
        free_file(f);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "%s: out of memory for a %llu-byte header", label,
                             (unsigned long long)hl);
    }
    memcpy(copy, h, (size_t)hl);
    copy[hl] = '\0';
    f->data = buf + 8 + hl;
    f->data_size = size - 8 - hl;
    mpl_status st = parse_header(f, copy, (size_t)hl);
    free(copy);
    if (st != MPL_OK) {
        free_file(f);
        return st;
    }
    *out = f;
    return MPL_OK;
}

mpl_status mpl_st_open(const char *path, mpl_st_file **out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "safetensors: out is NULL");
    *out = NULL;
    if (!path) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "safetensors: path is NULL");
    /* O_NONBLOCK: a named pipe must not make open() wait for a writer; it is refused below (a
     * shard is mapped, and a pipe cannot be). Harmless for the regular file that is mapped. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return mpl_set_error(MPL_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return mpl_set_error(MPL_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        return mpl_set_error(MPL_ERR_IO, "%s: not a regular file (it is %s): a safetensors shard is mapped, so it "
                             "must be a regular file", path, S_ISFIFO(sb.st_mode) ? "a named pipe"
                             : S_ISDIR(sb.st_mode) ? "a directory" : S_ISCHR(sb.st_mode) ? "a character device"
                             : "a special file");
    }
    if (sb.st_size < 8) {
        close(fd);
        return FMT("%s: file is %lld bytes: too short for the 8-byte header length (truncated?)", path,
                   (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size;
    void *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (map == MAP_FAILED) return mpl_set_error(MPL_ERR_IO, "%s: cannot map %zu bytes: %s", path, size, strerror(e));
    mpl_st_file *f = NULL;
    mpl_status st = mpl_st_parse(path, map, size, &f);
    if (st != MPL_OK) {
        munmap(map, size);
        return st;
    }
    f->map = map;
    f->map_size = size;
    *out = f;
    return MPL_OK;
}

const mpl_st_tensor *mpl_st_find(const mpl_st_file *f, const char *name) {
    if (!f || !name) return NULL;
    mpl_st_tensor key = {.name = (char *)name};
    return bsearch(&key, f->tensors, f->count, sizeof key, cmp_name);
}
