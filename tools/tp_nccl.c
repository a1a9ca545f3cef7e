/*
 * tp_nccl.c -- the multi-GPU tensor-parallel runner: one process drives R GPUs (device r runs rank r),
 * with one NCCL communicator per device from ncclCommInitAll and one stream per device.
 *
 * A layer pass: every rank applies its shard on its stream (mpl_layer_apply_device; rank 0 with the
 * bias for row-parallel, as vLLM's RowParallelLinear); row-parallel then all-reduces the partials in
 * the activation type (ncclSum on ncclFloat16 / ncclBfloat16 / ncclFloat32, in place, grouped across
 * the devices in one ncclGroupStart/End); column-parallel keeps each rank's outputs on its device
 * (verify copies them back into their columns). Timing: CUDA events on every stream before the
 * apply, between apply and all-reduce, and after; a sample is the slowest rank's interval.
 *
 * Keep NVLink multicast off (NCCL_NVLS_ENABLE=0, set by bench/cuda/tp_h200.sh and documented in
 * docs/tensor-parallel.md): the lent multi-GPU machines do not support it.
 *
 * Compiled only when CMake found CUDA and NCCL (MPL_HAVE_NCCL); otherwise the entry points say so.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_cli.h"

#ifndef MPL_HAVE_NCCL

int cli_tp_nccl_built(void) { return 0; }

int cli_tp_nccl_apply(const char *cmd, mpl_layer *const *layers, int ranks, mpl_tp_mode mode, int64_t m,
                      const void *x, const void *bias, void *y) {
    (void)layers, (void)ranks, (void)mode, (void)m, (void)x, (void)bias, (void)y;
    cli_error(cmd, "this mplinear was built without NCCL: no multi-GPU runner");
    return CLI_EXIT_NO_HARDWARE;
}

int cli_tp_nccl_bench(const char *cmd, mpl_layer *const *layers, int64_t copies, int ranks, mpl_tp_mode mode,
                      int64_t m, const void *x, int reps, cli_tp_times *t) {
    (void)layers, (void)copies, (void)ranks, (void)mode, (void)m, (void)x, (void)reps, (void)t;
    cli_error(cmd, "this mplinear was built without NCCL: no multi-GPU runner");
    return CLI_EXIT_NO_HARDWARE;
}

#else

#include <cuda_runtime_api.h>
#include <nccl.h>

int cli_tp_nccl_built(void) { return 1; }

/* Per-device state of one run. */
typedef struct {
    int ranks;
    mpl_tp_mode mode;
    int64_t m, K, N, kl, nl;
    size_t es;
    ncclComm_t *comms;
    cudaStream_t *streams;
    void **dx, **dy, *dbias; /* dbias on device 0 (rank 0's) or, column, one slice per rank in dbc */
    void **dbc;
    cudaEvent_t *ev; /* 3 per rank: before apply, after apply, after all-reduce */
} tp_run;

static int cuda_fail(const char *cmd, const char *what, cudaError_t e) {
    cli_error(cmd, "CUDA: %s: %s", what, cudaGetErrorString(e));
    return CLI_EXIT_RESOURCE;
}

static int nccl_fail(const char *cmd, const char *what, ncclResult_t e) {
    cli_error(cmd, "NCCL: %s: %s", what, ncclGetErrorString(e));
    return CLI_EXIT_RESOURCE;
}

static ncclDataType_t nccl_type(mpl_act a) {
    return a == MPL_ACT_F32 ? ncclFloat32 : a == MPL_ACT_F16 ? ncclFloat16 : ncclBfloat16;
}

static void run_free(tp_run *t) {
    for (int r = 0; r < t->ranks; r++) {
        cudaSetDevice(r);
        if (t->dx) cudaFree(t->dx[r]);
        if (t->dy) cudaFree(t->dy[r]);
        if (t->dbc) cudaFree(t->dbc[r]);
        if (t->streams && t->streams[r]) cudaStreamDestroy(t->streams[r]);
        if (t->ev)
            for (int i = 0; i < 3; i++)
                if (t->ev[3 * r + i]) cudaEventDestroy(t->ev[3 * r + i]);
        if (t->comms && t->comms[r]) ncclCommDestroy(t->comms[r]);
    }
    if (t->dbias) {
        cudaSetDevice(0);
        cudaFree(t->dbias);
    }
    free(t->comms), free(t->streams), free(t->dx), free(t->dy), free(t->dbc), free(t->ev);
    memset(t, 0, sizeof *t);
}

/* Devices, communicators, streams, events and buffers; x (host, [m][K]) copied in, each rank its slice. */
static int run_init(const char *cmd, tp_run *t, mpl_layer *const *layers, int ranks, mpl_tp_mode mode, int64_t m,
                    const void *x, const void *bias) {
    memset(t, 0, sizeof *t);
    const mpl_config *c = mpl_layer_config(layers[0]);
    int devices = 0;
    cudaError_t ce = cudaGetDeviceCount(&devices);
    if (ce != cudaSuccess) return cuda_fail(cmd, "device count", ce);
    if (devices < ranks) {
        cli_error(cmd, "--tp %d needs %d CUDA devices, this machine has %d", ranks, ranks, devices);
        return CLI_EXIT_NO_HARDWARE;
    }
    t->ranks = ranks, t->mode = mode, t->m = m, t->K = c->full_k, t->N = c->full_n;
    t->kl = mode == MPL_TP_ROW ? t->K / ranks : t->K;
    t->nl = mode == MPL_TP_COLUMN ? t->N / ranks : t->N;
    t->es = c->act == MPL_ACT_F32 ? 4 : 2;
    t->comms = calloc((size_t)ranks, sizeof *t->comms);
    t->streams = calloc((size_t)ranks, sizeof *t->streams);
    t->dx = calloc((size_t)ranks, sizeof *t->dx);
    t->dy = calloc((size_t)ranks, sizeof *t->dy);
    t->dbc = calloc((size_t)ranks, sizeof *t->dbc);
    t->ev = calloc((size_t)ranks * 3, sizeof *t->ev);
    int *devs = calloc((size_t)ranks, sizeof *devs);
    char *slice = malloc((size_t)m * (size_t)t->kl * t->es + 1);
    int rc = 0;
    if (!t->comms || !t->streams || !t->dx || !t->dy || !t->dbc || !t->ev || !devs || !slice) {
        cli_error(cmd, "out of memory for %d ranks", ranks);
        rc = CLI_EXIT_RESOURCE;
        goto done;
    }
    for (int r = 0; r < ranks; r++) devs[r] = r; /* rank r on device r (tp_cli.c creates it there) */
    ncclResult_t ne = ncclCommInitAll(t->comms, ranks, devs);
    if (ne != ncclSuccess) {
        rc = nccl_fail(cmd, "ncclCommInitAll", ne);
        goto done;
    }
    const size_t xb = (size_t)m * (size_t)t->kl * t->es, yb = (size_t)m * (size_t)t->nl * t->es;
    for (int r = 0; r < ranks && !rc; r++) {
        if ((ce = cudaSetDevice(r)) != cudaSuccess ||
            (ce = cudaStreamCreateWithFlags(&t->streams[r], cudaStreamNonBlocking)) != cudaSuccess ||
            (ce = cudaMalloc(&t->dx[r], xb ? xb : 1)) != cudaSuccess ||
            (ce = cudaMalloc(&t->dy[r], yb ? yb : 1)) != cudaSuccess) {
            rc = cuda_fail(cmd, "device buffers", ce);
            break;
        }
        for (int i = 0; i < 3 && !rc; i++)
            if ((ce = cudaEventCreate(&t->ev[3 * r + i])) != cudaSuccess) rc = cuda_fail(cmd, "events", ce);
        if (rc) break;
        /* Rank r's x: all of it (column) or columns [r*kl, (r+1)*kl) of every row (row). */
        const char *xs = x;
        if (mode == MPL_TP_ROW) {
            for (int64_t i = 0; i < m; i++)
                memcpy(slice + (size_t)i * (size_t)t->kl * t->es,
                       xs + ((size_t)i * (size_t)t->K + (size_t)(r * t->kl)) * t->es, (size_t)t->kl * t->es);
            xs = slice;
        }
        if ((ce = cudaMemcpy(t->dx[r], xs, xb, cudaMemcpyHostToDevice)) != cudaSuccess) {
            rc = cuda_fail(cmd, "copy x", ce);
            break;
        }
        if (bias && mode == MPL_TP_COLUMN) {
            size_t bb = (size_t)t->nl * t->es;
            if ((ce = cudaMalloc(&t->dbc[r], bb)) != cudaSuccess ||
                (ce = cudaMemcpy(t->dbc[r], (const char *)bias + (size_t)(r * t->nl) * t->es, bb,
                                 cudaMemcpyHostToDevice)) != cudaSuccess)
                rc = cuda_fail(cmd, "copy bias", ce);
        }
    }
    if (!rc && bias && mode == MPL_TP_ROW) {
        size_t bb = (size_t)t->N * t->es;
        if ((ce = cudaSetDevice(0)) != cudaSuccess || (ce = cudaMalloc(&t->dbias, bb)) != cudaSuccess ||
            (ce = cudaMemcpy(t->dbias, bias, bb, cudaMemcpyHostToDevice)) != cudaSuccess)
            rc = cuda_fail(cmd, "copy bias", ce);
    }
done:
    free(devs);
    free(slice);
    if (rc) run_free(t);
    return rc;
}

/* One pass: every rank's apply, then (row) the grouped all-reduce; events recorded when timing. */
static int run_pass(const char *cmd, tp_run *t, mpl_layer *const *layers, int timed) {
    for (int r = 0; r < t->ranks; r++) {
        cudaError_t ce = cudaSetDevice(r);
        if (ce != cudaSuccess) return cuda_fail(cmd, "set device", ce);
        if (timed) cudaEventRecord(t->ev[3 * r], t->streams[r]);
        const void *b = t->mode == MPL_TP_ROW ? (r == 0 ? t->dbias : NULL) : t->dbc[r];
        mpl_status st = mpl_layer_apply_device(layers[r], t->m, t->dx[r], b, t->dy[r], t->streams[r]);
        if (st != MPL_OK) return cli_lib_error(cmd, st, "apply on device");
        if (timed) cudaEventRecord(t->ev[3 * r + 1], t->streams[r]);
    }
    if (t->mode == MPL_TP_ROW && t->ranks > 1) {
        ncclDataType_t dt = nccl_type(mpl_layer_config(layers[0])->act);
        ncclResult_t ne = ncclGroupStart();
        for (int r = 0; r < t->ranks && ne == ncclSuccess; r++)
            ne = ncclAllReduce(t->dy[r], t->dy[r], (size_t)(t->m * t->N), dt, ncclSum, t->comms[r], t->streams[r]);
        ncclResult_t ne2 = ncclGroupEnd();
        if (ne == ncclSuccess) ne = ne2;
        if (ne != ncclSuccess) return nccl_fail(cmd, "ncclAllReduce", ne);
    }
    if (timed)
        for (int r = 0; r < t->ranks; r++) {
            cudaSetDevice(r);
            cudaEventRecord(t->ev[3 * r + 2], t->streams[r]);
        }
    return 0;
}

static int run_sync(const char *cmd, tp_run *t) {
    for (int r = 0; r < t->ranks; r++) {
        cudaError_t ce = cudaSetDevice(r);
        if (ce == cudaSuccess) ce = cudaStreamSynchronize(t->streams[r]);
        if (ce != cudaSuccess) return cuda_fail(cmd, "synchronize", ce);
    }
    return 0;
}

int cli_tp_nccl_apply(const char *cmd, mpl_layer *const *layers, int ranks, mpl_tp_mode mode, int64_t m,
                      const void *x, const void *bias, void *y) {
    if (m == 0) return 0;
    tp_run t;
    int rc = run_init(cmd, &t, layers, ranks, mode, m, x, bias);
    if (rc) return rc;
    if (!(rc = run_pass(cmd, &t, layers, 0)) && !(rc = run_sync(cmd, &t))) {
        cudaError_t ce = cudaSuccess;
        if (mode == MPL_TP_ROW) {
            ce = cudaSetDevice(0);
            if (ce == cudaSuccess) ce = cudaMemcpy(y, t.dy[0], (size_t)m * (size_t)t.N * t.es, cudaMemcpyDeviceToHost);
        } else {
            /* Rank r's [m][nl] block into columns [r*nl, (r+1)*nl) of y [m][N]. */
            for (int r = 0; r < ranks && ce == cudaSuccess; r++) {
                ce = cudaSetDevice(r);
                if (ce == cudaSuccess)
                    ce = cudaMemcpy2D((char *)y + (size_t)(r * t.nl) * t.es, (size_t)t.N * t.es, t.dy[r],
                                      (size_t)t.nl * t.es, (size_t)t.nl * t.es, (size_t)m, cudaMemcpyDeviceToHost);
            }
        }
        if (ce != cudaSuccess) rc = cuda_fail(cmd, "copy y", ce);
    }
    run_free(&t);
    return rc;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cli_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int cli_tp_nccl_bench(const char *cmd, mpl_layer *const *layers, int64_t copies, int ranks, mpl_tp_mode mode,
                      int64_t m, const void *x, int reps, cli_tp_times *out) {
    tp_run t;
    int rc = run_init(cmd, &t, layers, ranks, mode, m, x, NULL);
    if (rc) return rc;
    double *g = malloc((size_t)reps * 3 * sizeof(double)), *a = g ? g + reps : NULL, *tot = g ? g + 2 * reps : NULL;
    if (!g) {
        run_free(&t);
        cli_error(cmd, "out of memory");
        return CLI_EXIT_RESOURCE;
    }
    /* Warm-up: one pass over every copy (modules load, NCCL connects its channels). */
    for (int64_t c = 0; c < copies && !rc; c++) rc = run_pass(cmd, &t, layers + c * ranks, 0);
    if (!rc) rc = run_sync(cmd, &t);
    for (int i = 0; i < reps && !rc; i++) {
        rc = run_pass(cmd, &t, layers + (i % copies) * ranks, 1);
        if (!rc) rc = run_sync(cmd, &t);
        g[i] = a[i] = tot[i] = 0;
        for (int r = 0; r < ranks && !rc; r++) {
            float ms1 = 0, ms2 = 0, ms3 = 0;
            cudaSetDevice(r);
            cudaError_t ce = cudaEventElapsedTime(&ms1, t.ev[3 * r], t.ev[3 * r + 1]);
            if (ce == cudaSuccess) ce = cudaEventElapsedTime(&ms2, t.ev[3 * r + 1], t.ev[3 * r + 2]);
            if (ce == cudaSuccess) ce = cudaEventElapsedTime(&ms3, t.ev[3 * r], t.ev[3 * r + 2]);
            if (ce != cudaSuccess) {
                rc = cuda_fail(cmd, "event time", ce);
                break;
            }
            if (ms1 * 1e-3 > g[i]) g[i] = ms1 * 1e-3;
            if (ms2 * 1e-3 > a[i]) a[i] = ms2 * 1e-3;
            if (ms3 * 1e-3 > tot[i]) tot[i] = ms3 * 1e-3;
        }
    }
    if (!rc) {
        out->gemm_s = median(g, reps);
        out->allreduce_s = median(a, reps);
        out->total_s = median(tot, reps);
        out->copies = copies;
    }
    free(g);
    run_free(&t);
    return rc;
}

#endif /* MPL_HAVE_NCCL */
