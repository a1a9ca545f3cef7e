/*
 * npy.h -- reading and writing NumPy .npy files (format versions 1.0, 2.0, 3.0).
 *
 * Files are treated as hostile: the magic, version, header length, every
 * header dict key and value, the shape arithmetic (overflow-checked) and the
 * exact data length are checked before anything is trusted, and every error
 * message names the file and the problem.
 *
 * Supported dtypes (the 'descr' string), little-endian only:
 *   '<i4' int32, '<i8' int64, '|i1' int8, '|u1' uint8, '<f2' float16, '<f4' float32,
 *   '<u2' bfloat16 -- NumPy has no bfloat16, so by this tool's convention a
 *        uint16 array holds raw bfloat16 bits (e.g. torch:
 *        t.view(torch.uint16).numpy(), or np.uint16 from ml_dtypes' view).
 * fortran_order must be False; big-endian ('>') and other dtypes are refused.
 *
 * Typical use:
 *   npy_array a; char err[512];
 *   if (npy_read("w.npy", &a, err, sizeof err) != MPL_OK) { puts(err); ... }
 *   ... a.dtype, a.ndim, a.shape[], a.data, a.count, a.nbytes ...
 *   npy_free(&a);
 */
#ifndef MPLINEAR_NPY_H
#define MPLINEAR_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "mplinear.h"

#define NPY_MAX_DIMS 8
/* Largest header accepted (NumPy itself refuses more than 10000 bytes by default). */
#define NPY_MAX_HEADER (1u << 20)

typedef struct npy_array {
    mpl_dtype dtype;
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    size_t count;  /* elements: product of shape (1 for a 0-d array) */
    size_t nbytes; /* count * element size */
    void *data;    /* nbytes bytes (at least 1 allocated); owned, free with npy_free */
} npy_array;

/* How long a stream (named pipe, socket, character device) may keep the reader or writer waiting. */
#define NPY_STREAM_TIMEOUT_MS 60000

/*
 * Reads path into *out. Returns MPL_OK, or MPL_ERR_IO (cannot open/read, a
 * stream timed out, a terminal or directory), MPL_ERR_FORMAT (malformed),
 * MPL_ERR_OVERFLOW (shape's byte count overflows), MPL_ERR_OUT_OF_MEMORY,
 * with a message "<path>: <problem>" in err. On failure *out is zeroed and
 * owns nothing.
 *
 * A regular file is read with its size known first (the exact data length is
 * checked before the data is allocated). A named pipe, socket or character
 * device -- /dev/stdin fed by a pipe, bash's <(...) -- is read as a stream:
 * opening never waits for a writer, every read waits at most timeout_ms for
 * data (a pipe nobody writes to fails instead of hanging), the buffer grows as
 * data arrives, and the stream must end right after the data. A terminal is
 * refused (redirect a file into it instead), as are directories and block
 * devices. npy_read uses NPY_STREAM_TIMEOUT_MS.
 */
mpl_status npy_read(const char *path, npy_array *out, char *err, size_t errcap);
mpl_status npy_read_timeout(const char *path, npy_array *out, int timeout_ms, char *err, size_t errcap);
/* The same checks on an in-memory image of a whole file (size bytes); label names it in messages. */
mpl_status npy_parse(const char *label, const void *data, size_t size, npy_array *out, char *err, size_t errcap);
void npy_free(npy_array *a);

/* The descr string for a dtype ("<f4", ...), or NULL if it has none. */
const char *npy_descr(mpl_dtype d);
/* "[3, 4]" */
void npy_shape_string(int ndim, const int64_t *shape, char *buf, size_t cap);

/*
 * Writes an array as a version 1.0 file to path, by what path is now:
 *  - nothing, or a regular file: a temporary file is written in the same
 *    directory and renamed over path only when everything has been written,
 *    so a failure never leaves a partial or stale-named file (an existing file
 *    stays untouched on failure, and a replaced file keeps its permissions);
 *  - a symbolic link to a regular file: the same, on the file it points to
 *    (the link stays a link); a dangling link is refused;
 *  - a character device (/dev/null, a terminal) or a named pipe: written
 *    through, never replaced. A pipe must get a reader within timeout_ms, and
 *    every write waits at most timeout_ms for room;
 *  - anything else (a directory, a socket, a block device): refused.
 * So the path never changes type, and only a regular file is ever replaced.
 * npy_write_atomic is npy_write_output with NPY_STREAM_TIMEOUT_MS.
 */
mpl_status npy_write_output(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, const void *data,
                            int timeout_ms, char *err, size_t errcap);
mpl_status npy_write_atomic(const char *path, mpl_dtype dtype, int ndim, const int64_t *shape, const void *data,
                            char *err, size_t errcap);
/* 1 when path is the file, pipe or device this process's stdout writes to (so messages go to stderr). */
int npy_is_stdout(const char *path);

#endif /* MPLINEAR_NPY_H */
