/*
 * apply_c.c -- the C side of python/bench/overhead.py: one layer (k x n, uint4b8, group 128, bf16
 * activations, from mpl_checkpoint_encode), then reps timed mpl_layer_apply calls of m rows on the
 * monotonic clock; prints the median in nanoseconds. Built by overhead.py against the packaged
 * header and libmplinear.so, so both sides run the same library and the same kernel.
 *   apply_c K N M REPS THREADS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mplinear.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: apply_c K N M REPS THREADS\n");
        return 2;
    }
    int64_t k = atoll(argv[1]), n = atoll(argv[2]), m = atoll(argv[3]);
    int reps = atoi(argv[4]), threads = atoi(argv[5]);
    mpl_config cfg;
    mpl_config_init(&cfg, k, n);
    cfg.wtype = MPL_WTYPE_UINT4B8;
    cfg.act = MPL_ACT_BF16;
    cfg.group_size = 128;
    int64_t g = k / 128;
    uint8_t *codes = malloc((size_t)(n * k));
    float *scales = malloc(sizeof(float) * (size_t)(n * g));
    uint16_t *x = malloc(2 * (size_t)((m > 0 ? m : 1) * k));
    uint16_t *y = malloc(2 * (size_t)((m > 0 ? m : 1) * n));
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!codes || !scales || !x || !y || !t) return 7;
    uint32_t s = 12345; /* xorshift: any codes do, the kernel's time does not depend on them */
    for (int64_t i = 0; i < n * k; i++) {
        s ^= s << 13, s ^= s >> 17, s ^= s << 5;
        codes[i] = (uint8_t)(s & 15);
    }
    for (int64_t i = 0; i < n * g; i++) scales[i] = 0.01f;
    for (int64_t i = 0; i < (m > 0 ? m : 1) * k; i++) x[i] = mpl_f32_to_bf16((float)(i % 7) - 3.0f);
    mpl_checkpoint_tensors ck;
    mpl_options opt;
    mpl_options_init(&opt);
    opt.threads = threads;
    mpl_layer *layer = NULL;
    if (mpl_checkpoint_encode(&cfg, MPL_LAYOUT_GPTQ, codes, scales, MPL_DTYPE_BF16, NULL, NULL, &ck) != MPL_OK ||
        mpl_layer_create(&cfg, &ck, &opt, &layer) != MPL_OK) {
        fprintf(stderr, "apply_c: %s\n", mpl_last_error());
        return 3;
    }
    mpl_checkpoint_tensors_free(&ck);
    for (int i = 0; i < 50; i++) mpl_layer_apply(layer, m, x, NULL, y); /* warm-up: caches, per-thread workspace */
    for (int i = 0; i < reps; i++) {
        double t0 = now_ns();
        mpl_status st = mpl_layer_apply(layer, m, x, NULL, y);
        t[i] = now_ns() - t0;
        if (st != MPL_OK) {
            fprintf(stderr, "apply_c: %s\n", mpl_last_error());
            return 3;
        }
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    printf("%s %.1f\n", mpl_layer_kernel(layer), t[reps / 2]);
    mpl_layer_destroy(layer);
    free(codes), free(scales), free(x), free(y), free(t);
    return 0;
}
