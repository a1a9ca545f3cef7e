/* cuda_none.c -- CUDA device query for builds without CUDA (MPLINEAR_CUDA off or nvcc absent). */
#include <stdio.h>

#include "../core/internal.h"
#include "platform.h"

int mpl_cuda_query(int *devices, int *cc, char *name, size_t name_cap, char *note, size_t note_cap) {
    *devices = 0;
    *cc = 0;
    if (name_cap) name[0] = 0;
    snprintf(note, note_cap, "library built without CUDA (configure with -DMPLINEAR_CUDA=ON and nvcc on PATH)");
    return 0;
}

int mpl_cuda_devices(int *cc, int cap) {
    (void)cc, (void)cap;
    return 0;
}

mpl_status mpl_cuda_check_pointer(const void *p, int device, const char *what) {
    (void)p, (void)device, (void)what;
    return MPL_OK;
}
