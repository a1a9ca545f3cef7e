/*
 * fuzz_npy.c -- libFuzzer target: the input is a whole .npy file image, parsed by the CLI's
 * reader (tools/npy.c, npy_parse: the checks npy_read makes on a regular file). A parse that
 * succeeds must describe an array whose element and byte counts follow from its shape and
 * dtype, whose data is exactly the bytes after the header, and which was copied out whole:
 * every byte is read so that ASan sees any range outside the allocation. A failure must leave
 * the array empty and a message naming the file.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    npy_array a;
    char err[512];
    mpl_status st = npy_parse("fuzz.npy", data, size, &a, err, sizeof err);
    if (st != MPL_OK) {
        if (a.data || a.count || a.nbytes || a.ndim) __builtin_trap(); /* a failure owns nothing */
        if (strncmp(err, "fuzz.npy: ", 10) != 0) __builtin_trap();  /* and names the file */
        return 0;
    }
    if (a.ndim < 0 || a.ndim > NPY_MAX_DIMS) __builtin_trap();
    size_t count = 1;
    for (int i = 0; i < a.ndim; i++) {
        if (a.shape[i] < 0) __builtin_trap();
        count *= (size_t)a.shape[i]; /* cannot overflow: the reader checked it */
    }
    if (count != a.count || a.nbytes != count * mpl_dtype_size(a.dtype)) __builtin_trap();
    if (a.nbytes > size || memcmp(a.data, data + size - a.nbytes, a.nbytes) != 0) __builtin_trap();
    npy_free(&a);
    return 0;
}
