/*
 * test_cuda_faults.c -- the CUDA path under faults (issue 17, item 7). Built only in CUDA builds
 * (tests/CMakeLists.txt); every case skips with a message when no CUDA device is usable.
 *
 *  - no device: a layer asked for on a device ordinal that does not exist is MPL_ERR_NO_HARDWARE
 *    with a message, both with and without devices present.
 *  - out of memory at create: device memory filled with a ballast (cudaMalloc until it fails) so
 *    the packed weights do not fit: create returns a status (out of memory or CUDA) whose message
 *    says memory, no layer, nothing leaked (free memory back to what it was once the ballast goes)
 *    and the device still works (the same create succeeds afterwards).
 *  - out of memory at apply: a layer created first, then the ballast, then applies of sizes never
 *    seen (their device buffers and the dq path's workspace must be allocated): each either works
 *    or fails with a status; after the ballast goes the layer applies bit-identically to a twin
 *    layer that never saw the fault.
 *  - pointers apply_device must refuse (src/platform/cuda_rt.c checks them before any launch, so no
 *    kernel faults): ordinary host memory, a made-up address, freed device memory, and -- with two
 *    or more devices -- memory of another device: MPL_ERR_INVALID_ARGUMENT naming the pointer, and a
 *    correct apply afterwards still works (no sticky error was left behind).
 *  - two threads applying one layer at once, each on its own stream, with m = 1 (skinny paths) and
 *    m = 256 (the dq path, each call on its own issuing context), and two threads through the host-pointer
 *    apply: every result bit-identical to the same apply run alone.
 *  - an apply after a sticky CUDA error: not provoked. A sticky error (an illegal address inside a
 *    kernel) poisons the CUDA context of the whole process for good, so it cannot be made safely
 *    in a test process whose other cases need the device, and the library launches nothing that
 *    faults on bad input (the pointer check above is what keeps it so). Reported as a skip.
 * Data: tu_weights_random / tu_act_random (seeded); exactness is between runs of the same kernel
 * and path, which are deterministic (no atomics in the reductions), so comparisons are bitwise.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mplinear.h"
#include "support/testutil.h"
#ifdef MPL_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#ifdef MPL_HAVE_CUDA

static int g_devices;

/* 1 when a CUDA device with a compute capability the CUDA kernel takes (8.0+) is there. */
static int have_device(const char *what) {
    if (g_devices <= 0) {
        printf("SKIP %s: no CUDA device\n", what);
        return 0;
    }
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess || major < 8) {
        printf("SKIP %s: device 0 has compute capability below 8.0\n", what);
        return 0;
    }
    return 1;
}

typedef struct layer_data {
    mpl_config cfg;
    tu_weights w;
    mpl_checkpoint_tensors ck;
} layer_data;

static void layer_data_make(layer_data *d, int64_t k, int64_t n, uint64_t seed) {
    mpl_config_init(&d->cfg, k, n);
    d->cfg.wtype = MPL_WTYPE_UINT4B8;
    d->cfg.act = MPL_ACT_BF16;
    d->cfg.group_size = 128;
    tu_rng r;
    tu_rng_init(&r, seed);
    assert_int_equal(tu_weights_random(&d->w, &d->cfg, MPL_DTYPE_BF16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    assert_int_equal(tu_weights_encode(&d->w, MPL_LAYOUT_GPTQ, &d->ck), MPL_OK);
}

static void layer_data_free(layer_data *d) {
    mpl_checkpoint_tensors_free(&d->ck);
    tu_weights_free(&d->w);
}

static mpl_status create_cuda(const layer_data *d, mpl_layer **l) {
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    return mpl_layer_create(&d->cfg, &d->ck, &o, l);
}

/* Random bf16 activations [m][k] (host). */
static uint16_t *make_x(const mpl_config *c, int64_t m, uint64_t seed) {
    uint16_t *x = malloc((size_t)(m * c->k) * 2);
    float *xf = malloc((size_t)(m * c->k) * sizeof(float));
    assert_non_null(x);
    assert_non_null(xf);
    tu_rng r;
    tu_rng_init(&r, seed);
    tu_act_random(&r, c, m, TU_DATA_RANDOM, x, xf);
    free(xf);
    return x;
}

/* Ballast: device memory allocated in chunks until the device says no, leaving at most `leave` free. */
typedef struct ballast {
    void *p[4096];
    int n;
} ballast;

static void ballast_fill(ballast *b, size_t leave) {
    b->n = 0;
    size_t chunk = (size_t)1 << 30;
    while (chunk >= ((size_t)1 << 20) && b->n < 4096) {
        size_t fr = 0, tot = 0;
        if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) break;
        if (fr <= leave) break;
        size_t want = fr - leave < chunk ? fr - leave : chunk;
        if (want < ((size_t)1 << 20)) break;
        if (cudaMalloc(&b->p[b->n], want) == cudaSuccess) {
            b->n++;
        } else {
            (void)cudaGetLastError(); /* out of memory is not sticky */
            chunk /= 2;
        }
    }
}

static void ballast_free(ballast *b) {
    for (int i = 0; i < b->n; i++) cudaFree(b->p[i]);
    b->n = 0;
}

static size_t free_bytes(void) {
    size_t fr = 0, tot = 0;
    assert_int_equal(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    return fr;
}

static void expect_memory_status(mpl_status st, const char *where) {
    if (st != MPL_ERR_OUT_OF_MEMORY && st != MPL_ERR_CUDA)
        fail_msg("%s under a full device: status %s (%s), want out of memory or CUDA error", where,
                 mpl_status_string(st), mpl_last_error());
    const char *msg = mpl_last_error();
    if (!msg || !strstr(msg, "memory")) fail_msg("%s: message '%s' does not say memory", where, msg ? msg : "");
    printf("%s: %s: %s\n", where, mpl_status_string(st), msg);
}

/* ---- no device ---- */

static void no_device(void **state) {
    (void)state;
    layer_data d;
    layer_data_make(&d, 256, 64, 1);
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    o.cuda_device = g_devices > 0 ? g_devices : 0; /* one past the last device (device 0 when there is none) */
    mpl_layer *l = (mpl_layer *)&d; /* must be reset to NULL on failure */
    mpl_status st = mpl_layer_create(&d.cfg, &d.ck, &o, &l);
    assert_int_equal(st, MPL_ERR_NO_HARDWARE);
    assert_null(l);
    assert_true(strlen(mpl_last_error()) > 0);
    printf("no device %d: %s\n", o.cuda_device, mpl_last_error());
    layer_data_free(&d);
}

/* ---- out of memory ---- */

static void oom_create(void **state) {
    (void)state;
    if (!have_device("out of memory at create")) return;
    layer_data d;
    layer_data_make(&d, 8192, 8192, 2); /* 32 MiB packed: more than the ballast leaves */
    size_t before = free_bytes();
    ballast b;
    ballast_fill(&b, (size_t)4 << 20);
    mpl_layer *l = NULL;
    mpl_status st = create_cuda(&d, &l);
    if (st == MPL_OK) {
        printf("SKIP out of memory at create: the layer fit in what the ballast left (%zu bytes free)\n", free_bytes());
        mpl_layer_destroy(l);
    } else {
        expect_memory_status(st, "create");
        assert_null(l);
    }
    ballast_free(&b);
    /* Nothing leaked by the failed create (within 2 MiB: the allocator's own granularity). */
    size_t after = free_bytes();
    if (after + ((size_t)2 << 20) < before) fail_msg("failed create leaked %zu bytes of device memory", before - after);
    /* And the device still works. */
    assert_int_equal(create_cuda(&d, &l), MPL_OK);
    uint16_t *x = make_x(&d.cfg, 1, 3);
    uint16_t *y = malloc((size_t)d.cfg.n * 2);
    assert_int_equal(mpl_layer_apply(l, 1, x, NULL, y), MPL_OK);
    mpl_layer_destroy(l);
    free(x);
    free(y);
    layer_data_free(&d);
}

static void oom_apply(void **state) {
    (void)state;
    if (!have_device("out of memory at apply")) return;
    layer_data d;
    layer_data_make(&d, 4096, 4096, 4);
    mpl_layer *l = NULL, *twin = NULL;
    assert_int_equal(create_cuda(&d, &l), MPL_OK);
    assert_int_equal(create_cuda(&d, &twin), MPL_OK);
    static const int64_t ms[] = {1, 64, 1024}; /* skinny, tc or wg, dq (its workspace: k x n halves) */
    ballast b;
    ballast_fill(&b, (size_t)1 << 20);
    int failed = 0;
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        int64_t m = ms[i];
        uint16_t *x = make_x(&d.cfg, m, 10 + (uint64_t)m), *y = malloc((size_t)(m * d.cfg.n) * 2);
        mpl_status st = mpl_layer_apply(l, m, x, NULL, y);
        if (st != MPL_OK) {
            char where[64];
            snprintf(where, sizeof where, "apply m=%lld (%s)", (long long)m, mpl_layer_path(l, m));
            expect_memory_status(st, where);
            failed++;
        }
        free(x);
        free(y);
    }
    ballast_free(&b);
    if (!failed) printf("SKIP out of memory at apply: every apply fit in what the ballast left\n");
    /* Nothing lost: the layer that saw the faults applies exactly as its twin that did not. */
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        int64_t m = ms[i];
        uint16_t *x = make_x(&d.cfg, m, 10 + (uint64_t)m);
        uint16_t *y = malloc((size_t)(m * d.cfg.n) * 2), *yt = malloc((size_t)(m * d.cfg.n) * 2);
        assert_int_equal(mpl_layer_apply(l, m, x, NULL, y), MPL_OK);
        assert_int_equal(mpl_layer_apply(twin, m, x, NULL, yt), MPL_OK);
        assert_memory_equal(y, yt, (size_t)(m * d.cfg.n) * 2);
        free(x);
        free(y);
        free(yt);
    }
    mpl_layer_destroy(l);
    mpl_layer_destroy(twin);
    layer_data_free(&d);
}

/* ---- pointers apply_device refuses ---- */

static void expect_refused(mpl_layer *l, int64_t m, const void *x, void *y, const char *what, const char *needle) {
    mpl_status st = mpl_layer_apply_device(l, m, x, NULL, y, NULL);
    if (st != MPL_ERR_INVALID_ARGUMENT || !strstr(mpl_last_error(), needle))
        fail_msg("apply_device with %s: status %s (%s), want invalid argument mentioning '%s'", what,
                 mpl_status_string(st), mpl_last_error(), needle);
    printf("apply_device with %s: %s\n", what, mpl_last_error());
    assert_int_equal(cudaGetLastError(), cudaSuccess); /* no error left behind for the next call */
}

static void bad_pointers(void **state) {
    (void)state;
    if (!have_device("bad device pointers")) return;
    layer_data d;
    layer_data_make(&d, 1024, 256, 5);
    mpl_layer *l = NULL;
    assert_int_equal(create_cuda(&d, &l), MPL_OK);
    const int64_t m = 4;
    size_t xb = (size_t)(m * d.cfg.k) * 2, yb = (size_t)(m * d.cfg.n) * 2;
    uint16_t *xh = make_x(&d.cfg, m, 6), *yh = malloc(yb), *yref = malloc(yb);
    void *xd = NULL, *yd = NULL, *gone = NULL;
    assert_int_equal(cudaMalloc(&xd, xb), cudaSuccess);
    assert_int_equal(cudaMalloc(&yd, yb), cudaSuccess);
    assert_int_equal(cudaMemcpy(xd, xh, xb, cudaMemcpyHostToDevice), cudaSuccess);
    assert_int_equal(mpl_layer_apply(l, m, xh, NULL, yref), MPL_OK);
    expect_refused(l, m, xh, yd, "x in ordinary host memory", "x = ");
    expect_refused(l, m, xd, yh, "y in ordinary host memory", "y = ");
    expect_refused(l, m, (const void *)(uintptr_t)0x1000, yd, "a made-up x", "not CUDA memory");
    assert_int_equal(cudaMalloc(&gone, xb), cudaSuccess);
    assert_int_equal(cudaFree(gone), cudaSuccess);
    expect_refused(l, m, gone, yd, "freed device memory", "x = ");
    if (g_devices >= 2) {
        void *other = NULL;
        assert_int_equal(cudaSetDevice(1), cudaSuccess);
        assert_int_equal(cudaMalloc(&other, xb), cudaSuccess);
        assert_int_equal(cudaSetDevice(0), cudaSuccess);
        expect_refused(l, m, other, yd, "x on device 1", "device 1");
        assert_int_equal(cudaSetDevice(1), cudaSuccess);
        cudaFree(other);
        assert_int_equal(cudaSetDevice(0), cudaSuccess);
    } else {
        printf("SKIP a device pointer of another device: one CUDA device here (run on nvidia-h200-x2 to cover it)\n");
    }
    /* No sticky error: a correct apply_device afterwards gives the host apply's result. */
    assert_int_equal(mpl_layer_apply_device(l, m, xd, NULL, yd, NULL), MPL_OK);
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    assert_int_equal(cudaMemcpy(yh, yd, yb, cudaMemcpyDeviceToHost), cudaSuccess);
    assert_memory_equal(yh, yref, yb);
    cudaFree(xd);
    cudaFree(yd);
    free(xh);
    free(yh);
    free(yref);
    mpl_layer_destroy(l);
    layer_data_free(&d);
}

static void sticky_error(void **state) {
    (void)state;
    printf("SKIP apply after a sticky CUDA error: provoking one (an illegal address inside a kernel) poisons the "
           "CUDA context of this whole process, which the other cases need; the library launches nothing that "
           "faults on bad input (apply_device checks pointers first: bad_pointers)\n");
}

/* ---- two threads, one layer, two streams ---- */

typedef struct worker {
    mpl_layer *l;
    const mpl_config *cfg;
    int64_t m;
    int device_pointers;
    const uint16_t *x;   /* host [m][k] */
    uint16_t *want;      /* host [m][n]: the apply run alone */
    int reps, mismatches;
    mpl_status st;
    char msg[256];
} worker;

static void *worker_run(void *arg) {
    worker *w = arg;
    size_t xb = (size_t)(w->m * w->cfg->k) * 2, yb = (size_t)(w->m * w->cfg->n) * 2;
    uint16_t *y = malloc(yb);
    void *xd = NULL, *yd = NULL;
    cudaStream_t s = NULL;
    if (w->device_pointers) {
        if (cudaSetDevice(0) != cudaSuccess || cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
            cudaMalloc(&xd, xb) != cudaSuccess || cudaMalloc(&yd, yb) != cudaSuccess ||
            cudaMemcpy(xd, w->x, xb, cudaMemcpyHostToDevice) != cudaSuccess) {
            w->st = MPL_ERR_CUDA;
            snprintf(w->msg, sizeof w->msg, "worker setup: %s", cudaGetErrorString(cudaGetLastError()));
            goto out;
        }
    }
    for (int r = 0; r < w->reps; r++) {
        if (w->device_pointers) {
            w->st = mpl_layer_apply_device(w->l, w->m, xd, NULL, yd, s);
            if (w->st == MPL_OK && (cudaStreamSynchronize(s) != cudaSuccess ||
                                    cudaMemcpy(y, yd, yb, cudaMemcpyDeviceToHost) != cudaSuccess))
                w->st = MPL_ERR_CUDA;
        } else {
            w->st = mpl_layer_apply(w->l, w->m, w->x, NULL, y);
        }
        if (w->st != MPL_OK) {
            snprintf(w->msg, sizeof w->msg, "%s", mpl_last_error());
            break;
        }
        if (memcmp(y, w->want, yb) != 0) w->mismatches++;
    }
out:
    if (xd) cudaFree(xd);
    if (yd) cudaFree(yd);
    if (s) cudaStreamDestroy(s);
    free(y);
    return NULL;
}

static void two_threads(void **state) {
    (void)state;
    if (!have_device("two threads on one layer")) return;
    layer_data d;
    layer_data_make(&d, 4096, 4096, 7);
    mpl_layer *l = NULL;
    assert_int_equal(create_cuda(&d, &l), MPL_OK);
    static const int64_t ms[2] = {1, 256}; /* a skinny path and the dq path (its issuing contexts: one per concurrent call) */
    for (int dp = 1; dp >= 0; dp--) {
        worker w[2];
        for (int t = 0; t < 2; t++) {
            memset(&w[t], 0, sizeof w[t]);
            w[t].l = l;
            w[t].cfg = &d.cfg;
            w[t].m = ms[t];
            w[t].device_pointers = dp;
            w[t].reps = 100;
            w[t].x = make_x(&d.cfg, ms[t], 20 + (uint64_t)t);
            w[t].want = malloc((size_t)(ms[t] * d.cfg.n) * 2);
            assert_int_equal(mpl_layer_apply(l, ms[t], w[t].x, NULL, w[t].want), MPL_OK); /* alone */
        }
        pthread_t th[2];
        for (int t = 0; t < 2; t++) assert_int_equal(pthread_create(&th[t], NULL, worker_run, &w[t]), 0);
        for (int t = 0; t < 2; t++) pthread_join(th[t], NULL);
        for (int t = 0; t < 2; t++) {
            if (w[t].st != MPL_OK)
                fail_msg("thread %d (m=%lld, %s pointers): %s: %s", t, (long long)w[t].m, dp ? "device" : "host",
                         mpl_status_string(w[t].st), w[t].msg);
            if (w[t].mismatches)
                fail_msg("thread %d (m=%lld, %s, %s pointers): %d of %d results differ from the apply run alone", t,
                         (long long)w[t].m, mpl_layer_path(l, w[t].m), dp ? "device" : "host", w[t].mismatches,
                         w[t].reps);
            printf("thread %d: m=%lld %s, %s pointers: %d applies bit-identical\n", t, (long long)w[t].m,
                   mpl_layer_path(l, w[t].m), dp ? "device" : "host", w[t].reps);
            free((void *)w[t].x);
            free(w[t].want);
        }
    }
    mpl_layer_destroy(l);
    layer_data_free(&d);
}

#endif /* MPL_HAVE_CUDA */

static int setup(void **state) {
    (void)state;
#ifdef MPL_HAVE_CUDA
    if (cudaGetDeviceCount(&g_devices) != cudaSuccess) {
        (void)cudaGetLastError();
        g_devices = 0;
    }
    printf("test_cuda_faults: %d CUDA device(s)\n", g_devices);
#endif
    return 0;
}

#ifndef MPL_HAVE_CUDA
static void not_built(void **state) {
    (void)state;
    printf("SKIP test_cuda_faults: library built without CUDA\n");
}
#endif

int main(void) {
    const struct CMUnitTest tests[] = {
#ifdef MPL_HAVE_CUDA
        cmocka_unit_test(no_device),   cmocka_unit_test(bad_pointers), cmocka_unit_test(two_threads),
        cmocka_unit_test(oom_create),  cmocka_unit_test(oom_apply),    cmocka_unit_test(sticky_error),
#else
        cmocka_unit_test(not_built),
#endif
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
