/*
 * bench_cuda_threads.c -- concurrent applies of one CUDA layer from T host threads, each on its own
 * stream: does the library let them overlap? (issue #17: the dq path's issuing state was once one
 * process-wide lock and one side stream.)
 *
 * One layer (K x N, uint4b8, group 128, bf16), a path forced by name. Per thread: its own x, y and
 * non-blocking stream. A round: every thread, released together, issues R applies on its stream and
 * synchronizes it; the round's wall time (first release to last sync) gives the aggregate throughput,
 * T * R / wall. Median of 5 rounds, after one warm-up round. Also reported: the time a thread spends
 * inside mpl_layer_apply_device (the host enqueue), median per call.
 *
 *   bench_cuda_threads [--k 4096] [--n 14336] [--m 256] [--path cuda_w4a16:dq] [--threads 1,2,4,8] [--reps 20]
 *
 * Output: one line per T: calls/s in all, per-call us (wall / calls), speedup over T = 1, enqueue us.
 */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mplinear.h"

#define MAXT 16

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct {
    mpl_layer *l;
    int64_t m;
    void *x, *y;
    cudaStream_t s;
    int reps;
    pthread_barrier_t *go;
    double t_end, enqueue;
    int failed;
} worker;

static void *run(void *p) {
    worker *w = p;
    pthread_barrier_wait(w->go);
    double enq = 0;
    for (int r = 0; r < w->reps; r++) {
        double t0 = now();
        if (mpl_layer_apply_device(w->l, w->m, w->x, NULL, w->y, w->s) != MPL_OK) {
            fprintf(stderr, "apply: %s\n", mpl_last_error());
            w->failed = 1;
            break;
        }
        enq += now() - t0;
    }
    if (cudaStreamSynchronize(w->s) != cudaSuccess) w->failed = 1;
    w->t_end = now();
    w->enqueue = enq / w->reps;
    return NULL;
}

int main(int argc, char **argv) {
    int64_t K = 4096, N = 14336, M = 256;
    const char *path = "cuda_w4a16:dq", *tl = "1,2,4,8";
    int reps = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--k")) K = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--n")) N = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--m")) M = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--path")) path = argv[i + 1];
        else if (!strcmp(argv[i], "--threads")) tl = argv[i + 1];
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "unknown option %s\n", argv[i]);
            return 2;
        }
    }
    mpl_config c;
    mpl_config_init(&c, K, N);
    c.group_size = 128;
    c.act = MPL_ACT_BF16;
    int64_t G = K / 128;
    uint8_t *codes = malloc((size_t)(N * K));
    float *scales = malloc((size_t)(N * G) * sizeof(float));
    if (!codes || !scales) return 1;
    uint64_t st = 88172645463325252ULL;
    for (int64_t i = 0; i < N * K; i++) {
        st ^= st << 13, st ^= st >> 7, st ^= st << 17;
        codes[i] = (uint8_t)(st & 15);
    }
    for (int64_t i = 0; i < N * G; i++) scales[i] = 1.0f / 64;
    mpl_checkpoint_tensors ck;
    if (mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, scales, MPL_DTYPE_BF16, NULL, NULL, &ck) != MPL_OK) {
        fprintf(stderr, "encode: %s\n", mpl_last_error());
        return 1;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    o.kernel = path;
    mpl_layer *l = NULL;
    if (mpl_layer_create(&c, &ck, &o, &l) != MPL_OK) {
        fprintf(stderr, "create: %s\n", mpl_last_error());
        return 1;
    }
    mpl_checkpoint_tensors_free(&ck);
    free(codes);
    free(scales);
    worker w[MAXT];
    memset(w, 0, sizeof w);
    for (int t = 0; t < MAXT; t++) {
        if (cudaMalloc(&w[t].x, (size_t)(M * K) * 2) != cudaSuccess || cudaMalloc(&w[t].y, (size_t)(M * N) * 2) != cudaSuccess ||
            cudaMemset(w[t].x, 0x3c, (size_t)(M * K) * 2) != cudaSuccess ||
            cudaStreamCreateWithFlags(&w[t].s, cudaStreamNonBlocking) != cudaSuccess) {
            fprintf(stderr, "cuda setup failed\n");
            return 1;
        }
        w[t].l = l, w[t].m = M, w[t].reps = reps;
    }
    printf("# bench_cuda_threads: K %lld N %lld M %lld, path %s (%s), %d applies per thread per round, "
           "median of 5 rounds\n",
           (long long)K, (long long)N, (long long)M, path, mpl_layer_path(l, M), reps);
    printf("| threads | calls/s | us per call (wall / calls) | speedup vs 1 thread | enqueue us per call |\n|---|---|---|---|---|\n");
    double base = 0;
    char buf[64];
    snprintf(buf, sizeof buf, "%s", tl);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int T = atoi(tok);
        if (T < 1 || T > MAXT) continue;
        double walls[6], enq[6];
        for (int round = 0; round < 6; round++) {
            pthread_barrier_t go;
            pthread_barrier_init(&go, NULL, (unsigned)T + 1);
            pthread_t th[MAXT];
            for (int t = 0; t < T; t++) {
                w[t].go = &go;
                pthread_create(&th[t], NULL, run, &w[t]);
            }
            double t0 = now();
            pthread_barrier_wait(&go);
            double end = 0, e = 0;
            for (int t = 0; t < T; t++) {
                pthread_join(th[t], NULL);
                if (w[t].failed) return 1;
                if (w[t].t_end > end) end = w[t].t_end;
                e += w[t].enqueue;
            }
            pthread_barrier_destroy(&go);
            walls[round] = end - t0;
            enq[round] = e / T;
        }
        qsort(walls + 1, 5, sizeof(double), cmp_d);
        qsort(enq + 1, 5, sizeof(double), cmp_d);
        double wall = walls[3], calls = (double)T * reps;
        double per = wall / calls * 1e6;
        if (T == 1) base = per;
        printf("| %d | %.0f | %.1f | %.2f | %.1f |\n", T, calls / wall, per, base > 0 ? base / per : 0.0, enq[3] * 1e6);
        fflush(stdout);
    }
    mpl_layer_destroy(l);
    return 0;
}
