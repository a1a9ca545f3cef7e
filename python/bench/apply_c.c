/*
 * apply_c.c -- the C side of python/bench/overhead.py, loaded into the benchmark's own Python process
 * (cc -shared, then ctypes), so the C call and the Python calls run the same layer handle, the same
 * input and output buffers, the same library image and the same caches.
 *
 *   int64_t mplb_time_apply(apply_fn, layer, m, x, bias, y)
 *
 * times one call of apply_fn (the address of mpl_layer_apply in the library the package loaded, passed
 * in by the caller rather than linked here, so there is no doubt which copy runs) on the monotonic
 * clock and returns its duration in nanoseconds, or -1 when the call fails. overhead.py calls it once
 * per round, between its timed Python calls, so that slow drifts of the kernel's own time (other work
 * on the machine, frequency) fall on both sides alike.
 */
#include <stdint.h>
#include <time.h>

#include "mplinear.h"

typedef mpl_status (*mplb_apply_fn)(mpl_layer *, int64_t, const void *, const void *, void *);

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + (int64_t)t.tv_nsec;
}

__attribute__((visibility("default"))) int64_t mplb_time_apply(mplb_apply_fn apply, mpl_layer *layer,
                                                                int64_t m, const void *x, const void *bias,
                                                                void *y) {
    int64_t t0 = now_ns();
    mpl_status st = apply(layer, m, x, bias, y);
    int64_t t1 = now_ns();
    return st == MPL_OK ? t1 - t0 : -1;
}
