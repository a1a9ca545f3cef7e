/*
 * safetensors.h -- a strict, memory-mapped reader of the safetensors format.
 *
 * File: u64 little-endian header length H, H bytes of a UTF-8 JSON object, then
 * the data section. Each header entry (except "__metadata__", an object of
 * string values) is {"dtype": D, "shape": [..], "data_offsets": [begin, end]}
 * with offsets relative to the data section. Checked on open, before any
 * tensor is handed out:
 *   - H <= MPL_ST_MAX_HEADER and 8 + H <= file size; the header is valid UTF-8
 *     JSON holding no NUL (raw or escaped); only whitespace after the object;
 *   - every dtype is known; every dimension a non-negative integer; the element
 *     count times the dtype size does not overflow and equals end - begin;
 *   - sorted by begin, the tensors tile the data section exactly: no overlap,
 *     no hole, and the last end is the data section's size (the format's rule
 *     against polyglot files).
 * Errors are MPL_ERR_IO (cannot open/map) or MPL_ERR_FORMAT, with a message
 * naming the file, the tensor or field, the value and the rule.
 * Internal to libmplinear (not installed).
 */
#ifndef MPL_SAFETENSORS_H
#define MPL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "mplinear.h"

/* Largest header accepted (the reference implementation's bound). */
#define MPL_ST_MAX_HEADER ((uint64_t)100000000)

typedef struct mpl_st_tensor {
    char *name;
    const char *dtype_name; /* "F16", "I32", ... (static string) */
    mpl_dtype dtype;        /* MPL_DTYPE_NONE for types mplinear does not compute with (F64, U16, F8_*, ...) */
    int ndim;
    int64_t *shape;         /* ndim entries (NULL when ndim == 0) */
    uint64_t begin, end;    /* byte range in the data section */
    const void *data;       /* start of the bytes (inside the mapping / buffer) */
} mpl_st_tensor;

typedef struct mpl_st_file {
    char *path;              /* label used in messages */
    void *map;               /* mmap'ed file, or NULL when parsed from a caller buffer */
    size_t map_size;
    const uint8_t *data;     /* data section */
    uint64_t data_size;
    mpl_st_tensor *tensors;  /* sorted by name */
    size_t count;
} mpl_st_file;

/* Maps path read-only and parses it. */
mpl_status mpl_st_open(const char *path, mpl_st_file **out);
/*
 * Parses a whole file image held in buf (borrowed: it must outlive the
 * result). label names the file in messages. Used by mpl_st_open, tests and
 * the fuzz target.
 */
mpl_status mpl_st_parse(const char *label, const uint8_t *buf, size_t size, mpl_st_file **out);
/* Tensor by exact name, or NULL. */
const mpl_st_tensor *mpl_st_find(const mpl_st_file *f, const char *name);
void mpl_st_close(mpl_st_file *f);

/* Element count of a tensor (validated not to overflow at parse time). */
int64_t mpl_st_numel(const mpl_st_tensor *t);

/* Checks that s (n bytes) is well-formed UTF-8 without NUL; returns the offset of the first bad byte or n. */
size_t mpl_utf8_check(const uint8_t *s, size_t n);

#endif /* MPL_SAFETENSORS_H */
