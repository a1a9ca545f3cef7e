/*
 * ggml_peer.c -- llama.cpp's ggml CPU matmul at the weight types of each width beside mplinear's
 * kernel, in one process, with cold weights, per weight width (2-, 3-, 4-, 8-bit).
 *
 * What it measures, for each shape K x N, weight width, thread count T and row count M:
 *   ggml:      y = ggml_mul_mat(W, x), W [K, N] quantized with ggml_quantize_chunk (no importance
 *              matrix) to the ggml type(s) of the width: 2 -> q2_K, 3 -> q3_K, 4 -> q4_0 and q4_K,
 *              8 -> q8_0; x f32 [K, M]. The weights go into the CPU backend's "CPU_REPACK" extra
 *              buffer type (found through the CPU registry's "ggml_backend_dev_get_extra_bufts") when
 *              it accepts the type for this shape (the CPU device's supports_op on a probe mul_mat),
 *              else into the plain CPU buffer type; the "weights in" column names the one used. One
 *              graph per weight copy, run with ggml_backend_graph_compute on a CPU backend with
 *              ggml_backend_cpu_set_n_threads(T).
 *   mplinear:  a layer from compressed-tensors checkpoint tensors (mpl_checkpoint_encode) of the
 *              symmetric type of the width (2 -> uint2b2, 3 -> uint3b4, 4 -> uint4b8, 8 -> uint8b128),
 *              group size 128, bf16 scales, bf16 activations, mpl_options.threads = T; applied to
 *              bf16 x giving bf16 y. Codes and scales come from the same f32 weights, quantized here
 *              round-to-nearest per group with the group scale picked from a small grid by squared
 *              error (the code that picks it is below; it is not mplinear's nor ggml's). The impl
 *              column names the path each row ran (mpl_layer_path: "mplinear:x86_avx512_w4a16:decode").
 *   inputs:    W [N][K] f32 uniform in [-1, 1], x [M][K] uniform in [-1, 1] rounded to bf16 (ggml gets
 *              the same values as f32), fixed seeds: every implementation sees the same W and x.
 *   cold:      each implementation gets enough copies of its weights that they total >= --cold-mib
 *              (at least 2, at most 64 copies; the copies column says how many), applied in rotation,
 *              so a call reads weights that are not in the caches (when the copies exceed the LLC).
 *   turns:     the implementations take turns call by call (each round every implementation makes one
 *              call, the first of the round rotating), 3 warm-up rounds then --reps timed rounds on
 *              the monotonic clock; each row reports its median.
 *   read BW:   once per thread count, before everything else: a sum over a 1 GiB buffer with 64-byte
 *              AVX2 loads (two 32-byte loads per line), T threads each pinned to its own CPU of the
 *              process's affinity mask, each summing 1/T of the buffer; median of 5 passes.
 * Columns: time (median), weight bytes (ggml_nbytes of one copy; mpl_layer_weight_bytes: packed
 * codes + scales), copies, weight GB/s (bytes / time, 1e9), % of read BW, "mpl speedup" (on ggml rows:
 * ggml time / mplinear time of the same config), and the check: every output finite and the relative
 * L2 error of rows 0 and M-1 of y against a float64 x.W^T of the ORIGINAL f32 weights below a bound
 * per width (--tol T: one bound for all). That error is mostly the quantization's own (uniform weights,
 * measured: 0.23-0.32 at 2 bits, 0.12-0.14 at 3 bits, 0.055-0.064 at 4 bits, ~0.005 at 8 bits), so the
 * bounds are 0.45, 0.2, 0.09 and 0.01; a broken kernel gives errors near 1 or more.
 *
 * Not measured: ggml's threads are OpenMP's (the build's default), mplinear's its own pool; when the
 * two alternate with T > 1, each one's idle threads may still be spinning when the other starts.
 * --gap-us U sleeps U microseconds before every call (untimed) to let them settle (default 0).
 *
 * Usage: ggml_peer [--shapes 4096x4096,4096x14336] [--m 1,16,64,512] [--threads 1,2]
 *                  [--widths 2,3,4,8] [--reps 15] [--cold-mib 512] [--tol T] [--gap-us 0]
 * Build: bench/x86/ggml_setup.sh (downloads llama-cpp-python 0.3.36's sources, builds ggml, links this).
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "mplinear.h"

#define MAX_LIST 16
#define MAX_COPIES 64
#define MAX_IMPL 4
#define MAX_REPS 1000
#define WARMUP 3
#define GROUP 128

/* ---------- small helpers ---------- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(const double *v, int n) {
    double tmp[MAX_REPS];
    memcpy(tmp, v, (size_t)n * sizeof *v);
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

/* A counter-based generator (splitmix64 finalizer over a stepped state): reproducible per seed. */
typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static float rng_unit(rng_t *r) { return (float)((double)(rng_next(r) >> 11) * (2.0 / 9007199254740992.0) - 1.0); }

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "ggml_peer: out of memory (%zu bytes)\n", n);
        exit(7);
    }
    return p;
}

static void fmt_time(char *b, size_t cap, double s) {
    if (s < 1e-3)
        snprintf(b, cap, "%.1f us", s * 1e6);
    else
        snprintf(b, cap, "%.3f ms", s * 1e3);
}

/* ---------- options ---------- */

typedef struct {
    int64_t k, n;
} shape_t;

static shape_t opt_shapes[MAX_LIST] = {{4096, 4096}, {4096, 14336}};
static int opt_nshapes = 2;
static int64_t opt_m[MAX_LIST] = {1, 16, 64, 512};
static int opt_nm = 4;
static int64_t opt_threads[MAX_LIST] = {1, 2};
static int opt_nthreads = 2;
static int64_t opt_widths[MAX_LIST] = {2, 3, 4, 8};
static int opt_nwidths = 4;
static int opt_reps = 15;
static double opt_cold_mib = 512;
static double opt_tol = 0; /* 0: per width (tol_for) */

/* The check's bound per width: about 1.4x the quantization's own error measured on these inputs
 * (0.23-0.32 at 2 bits, 0.12-0.14 at 3, 0.055-0.064 at 4, ~0.005 at 8); a broken kernel gives ~1. */
static double tol_for(int bits) {
    if (opt_tol > 0) return opt_tol;
    return bits == 2 ? 0.45 : bits == 3 ? 0.2 : bits == 4 ? 0.09 : 0.01;
}
static int opt_gap_us = 0;

static void usage(FILE *f) {
    fprintf(f, "usage: ggml_peer [--shapes KxN[,KxN...]] [--m 1,16,64,512] [--threads 1,2] [--widths 2,3,4,8]\n"
               "                 [--reps 15] [--cold-mib 512] [--tol T] [--gap-us 0]\n"
               "(what it measures and how: the comment at the top of bench/x86/ggml_peer.c)\n");
}

static void die_usage(const char *what, const char *v) {
    fprintf(stderr, "ggml_peer: bad %s '%s'\n", what, v);
    usage(stderr);
    exit(2);
}

/* "a,b,c" of positive integers. */
static int parse_ints(const char *what, const char *s, int64_t *out) {
    int n = 0;
    const char *p = s;
    while (*p) {
        char *e;
        long long v = strtoll(p, &e, 10);
        if (e == p || v <= 0 || n == MAX_LIST || (*e && *e != ',')) die_usage(what, s);
        out[n++] = v;
        p = *e ? e + 1 : e;
    }
    if (!n) die_usage(what, s);
    return n;
}

static void parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        }
        if (i + 1 >= argc) die_usage("option (missing value)", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--shapes")) {
            opt_nshapes = 0;
            const char *p = v;
            while (*p) {
                char *e;
                long long k = strtoll(p, &e, 10), n = 0;
                if (*e == 'x') n = strtoll(e + 1, &e, 10);
                if (k <= 0 || n <= 0 || opt_nshapes == MAX_LIST || (*e && *e != ',')) die_usage("--shapes", v);
                opt_shapes[opt_nshapes++] = (shape_t){k, n};
                p = *e ? e + 1 : e;
            }
            if (!opt_nshapes) die_usage("--shapes", v);
        } else if (!strcmp(a, "--m"))
            opt_nm = parse_ints(a, v, opt_m);
        else if (!strcmp(a, "--threads"))
            opt_nthreads = parse_ints(a, v, opt_threads);
        else if (!strcmp(a, "--widths")) {
            opt_nwidths = parse_ints(a, v, opt_widths);
            for (int j = 0; j < opt_nwidths; j++)
                if (opt_widths[j] != 2 && opt_widths[j] != 3 && opt_widths[j] != 4 && opt_widths[j] != 8)
                    die_usage("--widths (2, 3, 4 or 8)", v);
        } else if (!strcmp(a, "--reps")) {
            opt_reps = atoi(v);
            if (opt_reps < 1 || opt_reps > MAX_REPS) die_usage("--reps (1..1000)", v);
        } else if (!strcmp(a, "--cold-mib")) {
            opt_cold_mib = atof(v);
            if (!(opt_cold_mib >= 0)) die_usage("--cold-mib", v);
        } else if (!strcmp(a, "--tol")) {
            opt_tol = atof(v);
            if (!(opt_tol > 0)) die_usage("--tol", v);
        } else if (!strcmp(a, "--gap-us")) {
            opt_gap_us = atoi(v);
            if (opt_gap_us < 0) die_usage("--gap-us", v);
        } else
            die_usage("option", a);
    }
}

static int copies_for(size_t wbytes) {
    double want = opt_cold_mib * 1048576.0 / (double)wbytes;
    int c = want > MAX_COPIES ? MAX_COPIES : (int)ceil(want);
    return c < 2 ? 2 : c;
}

/* ---------- read bandwidth ---------- */

#define BW_BYTES ((size_t)1 << 30)

typedef struct {
    const char *p;
    size_t n;
    int cpu;
    long long sum;
} bw_arg;

/* 64 bytes per line as two 32-byte AVX2 loads, four lines per iteration. */
__attribute__((target("avx2"))) static long long sum_avx2(const char *p, size_t n) {
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    for (size_t i = 0; i + 256 <= n; i += 256) {
        const __m256i *q = (const __m256i *)(p + i);
        a0 = _mm256_add_epi64(a0, _mm256_add_epi64(_mm256_load_si256(q + 0), _mm256_load_si256(q + 1)));
        a1 = _mm256_add_epi64(a1, _mm256_add_epi64(_mm256_load_si256(q + 2), _mm256_load_si256(q + 3)));
        a2 = _mm256_add_epi64(a2, _mm256_add_epi64(_mm256_load_si256(q + 4), _mm256_load_si256(q + 5)));
        a3 = _mm256_add_epi64(a3, _mm256_add_epi64(_mm256_load_si256(q + 6), _mm256_load_si256(q + 7)));
    }
    __m256i s = _mm256_add_epi64(_mm256_add_epi64(a0, a1), _mm256_add_epi64(a2, a3));
    long long out[4];
    _mm256_storeu_si256((__m256i *)out, s);
    return out[0] + out[1] + out[2] + out[3];
}

static void *bw_thread(void *v) {
    bw_arg *a = v;
    if (a->cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(a->cpu, &set);
        pthread_setaffinity_np(pthread_self(), sizeof set, &set);
    }
    a->sum = sum_avx2(a->p, a->n);
    return NULL;
}

/* The CPUs of the process's affinity mask, in order. */
static int affinity_cpus(int *cpus, int cap) {
    cpu_set_t set;
    int n = 0;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
        if (CPU_ISSET(c, &set)) cpus[n++] = c;
    return n;
}

static volatile long long g_bw_sink;

/* GB/s (1e9) of T threads summing the buffer, median of 5 passes; threads pinned to distinct CPUs. */
static double read_bw(const char *buf, int T) {
    int cpus[1024], ncpu = affinity_cpus(cpus, 1024);
    pthread_t th[MAX_LIST * 64];
    bw_arg args[MAX_LIST * 64];
    if (T > (int)(sizeof th / sizeof th[0])) T = (int)(sizeof th / sizeof th[0]);
    size_t per = BW_BYTES / (size_t)T / 256 * 256;
    double gbs[5];
    for (int pass = 0; pass < 5; pass++) {
        double t0 = now_s();
        for (int i = 0; i < T; i++) {
            args[i] = (bw_arg){buf + per * (size_t)i, per, ncpu ? cpus[i % ncpu] : -1, 0};
            pthread_create(&th[i], NULL, bw_thread, &args[i]);
        }
        for (int i = 0; i < T; i++) {
            pthread_join(th[i], NULL);
            g_bw_sink += args[i].sum;
        }
        gbs[pass] = (double)(per * (size_t)T) / (now_s() - t0) / 1e9;
    }
    return median_of(gbs, 5);
}

/* ---------- weights, inputs, reference ---------- */

/* Rounds to bf16 and back (round to nearest even), through the public helpers. */
static float bf16_round(float v) { return mpl_bf16_to_f32(mpl_f32_to_bf16(v)); }

/*
 * Symmetric RTN of W [n][k] to `bits` (stored s in [0, 2^bits - 1], value s - 2^(bits-1)), groups of
 * GROUP along k: for each group the scale (rounded to bf16, as it is stored) is taken from a grid
 * around amax / 2^(bits-1) by the smallest squared error of the group.
 */
static void quantize_sym(const float *w, int64_t n, int64_t k, int bits, uint8_t *codes, float *scales) {
    const int zero = 1 << (bits - 1), qmax = (1 << bits) - 1;
    const int64_t G = k / GROUP;
    const int ngrid = bits >= 8 ? 1 : 24;
    for (int64_t r = 0; r < n; r++)
        for (int64_t g = 0; g < G; g++) {
            const float *src = w + r * k + g * GROUP;
            uint8_t *dst = codes + r * k + g * GROUP;
            float amax = 0;
            for (int i = 0; i < GROUP; i++) amax = fmaxf(amax, fabsf(src[i]));
            if (amax == 0) {
                scales[r * G + g] = 1.0f;
                memset(dst, zero, GROUP);
                continue;
            }
            float best_s = 0;
            double best_e = INFINITY;
            for (int c = 0; c < ngrid; c++) {
                /* bits >= 8: amax / (2^(bits-1) - 1) (the largest code is not clipped); else a grid
                 * of factors 0.55 .. 1.24 of amax / 2^(bits-1) (the grid's top clips nothing) */
                float s = bits >= 8 ? amax / (float)(zero - 1) : amax * (0.55f + 0.03f * (float)c) / (float)zero;
                s = bf16_round(s);
                if (!(s > 0)) continue;
                double e = 0;
                for (int i = 0; i < GROUP; i++) {
                    float q = nearbyintf(src[i] / s);
                    q = fminf(fmaxf(q, (float)-zero), (float)(qmax - zero));
                    double d = (double)src[i] - (double)(q * s);
                    e += d * d;
                }
                if (e < best_e) best_e = e, best_s = s;
            }
            scales[r * G + g] = best_s;
            for (int i = 0; i < GROUP; i++) {
                float q = nearbyintf(src[i] / best_s);
                q = fminf(fmaxf(q, (float)-zero), (float)(qmax - zero));
                dst[i] = (uint8_t)((int)q + zero);
            }
        }
}

/* float64 x[row] . W^T of the original f32 weights. */
static void reference_row(const float *x, const float *w, int64_t k, int64_t n, double *out) {
    for (int64_t j = 0; j < n; j++) {
        const float *wr = w + j * k;
        double s = 0;
        for (int64_t i = 0; i < k; i++) s += (double)x[i] * (double)wr[i];
        out[j] = s;
    }
}

/* ---------- ggml ---------- */

static ggml_backend_t g_backend;
static ggml_backend_dev_t g_dev;
static ggml_backend_buffer_type_t g_repack; /* NULL: the CPU backend has none */

static void ggml_quiet_log(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) fputs(text, stderr);
}

static void ggml_setup(void) {
    ggml_log_set(ggml_quiet_log, NULL);
    g_backend = ggml_backend_cpu_init();
    if (!g_backend) {
        fprintf(stderr, "ggml_peer: ggml_backend_cpu_init failed\n");
        exit(7);
    }
    g_dev = ggml_backend_get_device(g_backend);
    ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(g_dev);
    ggml_backend_dev_get_extra_bufts_t get_extra =
        (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if (get_extra)
        for (ggml_backend_buffer_type_t *b = get_extra(g_dev); b && *b; b++)
            if (strstr(ggml_backend_buft_name(*b), "REPACK")) g_repack = *b;
}

/* Does the REPACK buffer type take a [k, n] weight of this type for mul_mat with f32 x? Asks the CPU
 * device's supports_op on a probe node whose weight lives in a REPACK buffer (x unallocated). */
static int repack_accepts(enum ggml_type type, int64_t k, int64_t n) {
    if (!g_repack) return 0;
    struct ggml_init_params pw = {ggml_tensor_overhead() * 2, NULL, true};
    struct ggml_context *cw = ggml_init(pw);
    struct ggml_tensor *w = ggml_new_tensor_2d(cw, type, k, n);
    ggml_backend_buffer_t buf = ggml_backend_alloc_ctx_tensors_from_buft(cw, g_repack);
    int ok = 0;
    if (buf) {
        struct ggml_init_params px = {ggml_tensor_overhead() * 4, NULL, true};
        struct ggml_context *cx = ggml_init(px);
        struct ggml_tensor *x = ggml_new_tensor_2d(cx, GGML_TYPE_F32, k, 1);
        struct ggml_tensor *y = ggml_mul_mat(cx, w, x);
        ok = ggml_backend_dev_supports_op(g_dev, y);
        ggml_free(cx);
        ggml_backend_buffer_free(buf);
    }
    ggml_free(cw);
    return ok;
}

typedef struct {
    enum ggml_type type;
    char name[32];     /* "ggml_q4_0" */
    const char *where; /* buffer type name */
    int copies;
    size_t wbytes; /* ggml_nbytes of one copy */
    struct ggml_context *ctx;
    ggml_backend_buffer_t buf;
    struct ggml_tensor *w[MAX_COPIES];
    /* per M */
    struct ggml_context *gctx;
    ggml_backend_buffer_t iobuf;
    struct ggml_tensor *x, *y[MAX_COPIES];
    struct ggml_cgraph *gf[MAX_COPIES];
} gset;

/* Quantizes W [n][k] to `type` once and writes it into `copies` weight tensors. */
static int gset_make(gset *s, enum ggml_type type, const float *w, int64_t k, int64_t n) {
    memset(s, 0, sizeof *s);
    s->type = type;
    snprintf(s->name, sizeof s->name, "ggml_%s", ggml_type_name(type));
    if (k % ggml_blck_size(type)) {
        fprintf(stderr, "ggml_peer: %s needs K a multiple of %lld: skipped\n", s->name, (long long)ggml_blck_size(type));
        return -1;
    }
    size_t qbytes = ggml_row_size(type, k) * (size_t)n;
    void *q = xmalloc(qbytes);
    size_t done = ggml_quantize_chunk(type, w, q, 0, n, k, NULL);
    if (done != qbytes) {
        fprintf(stderr, "ggml_peer: ggml_quantize_chunk(%s) wrote %zu of %zu bytes\n", s->name, done, qbytes);
        free(q);
        return -1;
    }
    ggml_backend_buffer_type_t buft = repack_accepts(type, k, n) ? g_repack : ggml_backend_cpu_buffer_type();
    s->where = ggml_backend_buft_name(buft);
    s->wbytes = qbytes;
    s->copies = copies_for(qbytes);
    struct ggml_init_params p = {ggml_tensor_overhead() * (size_t)(s->copies + 1), NULL, true};
    s->ctx = ggml_init(p);
    for (int c = 0; c < s->copies; c++) s->w[c] = ggml_new_tensor_2d(s->ctx, type, k, n);
    s->buf = ggml_backend_alloc_ctx_tensors_from_buft(s->ctx, buft);
    if (!s->buf) {
        fprintf(stderr, "ggml_peer: cannot allocate %d copies of %s in %s\n", s->copies, s->name, s->where);
        free(q);
        return -1;
    }
    ggml_backend_buffer_set_usage(s->buf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    for (int c = 0; c < s->copies; c++) ggml_backend_tensor_set(s->w[c], q, 0, qbytes); /* REPACK repacks here */
    s->wbytes = ggml_nbytes(s->w[0]);
    free(q);
    return 0;
}

/* One graph per copy for m rows: y_c = mul_mat(W_c, x), every y_c at the same address. */
static int gset_graphs(gset *s, int64_t m, const float *xf) {
    const int64_t k = s->w[0]->ne[0];
    size_t mem = ggml_tensor_overhead() * (size_t)(2 * s->copies + 2) +
                 (ggml_graph_overhead_custom(4, false) + 64) * (size_t)s->copies;
    struct ggml_init_params p = {mem, NULL, true};
    s->gctx = ggml_init(p);
    s->x = ggml_new_tensor_2d(s->gctx, GGML_TYPE_F32, k, m);
    for (int c = 0; c < s->copies; c++) {
        s->y[c] = ggml_mul_mat(s->gctx, s->w[c], s->x);
        s->gf[c] = ggml_new_graph_custom(s->gctx, 4, false);
        ggml_build_forward_expand(s->gf[c], s->y[c]);
    }
    ggml_backend_buffer_type_t cpu = ggml_backend_cpu_buffer_type();
    size_t align = ggml_backend_buft_get_alignment(cpu);
    size_t xb = (ggml_nbytes(s->x) + align - 1) / align * align, yb = ggml_nbytes(s->y[0]);
    s->iobuf = ggml_backend_buft_alloc_buffer(cpu, xb + yb + align);
    if (!s->iobuf) return -1;
    char *base = ggml_backend_buffer_get_base(s->iobuf);
    if (ggml_backend_tensor_alloc(s->iobuf, s->x, base) != GGML_STATUS_SUCCESS) return -1;
    for (int c = 0; c < s->copies; c++)
        if (ggml_backend_tensor_alloc(s->iobuf, s->y[c], base + xb) != GGML_STATUS_SUCCESS) return -1;
    ggml_backend_tensor_set(s->x, xf, 0, ggml_nbytes(s->x));
    return 0;
}

static void gset_free_graphs(gset *s) {
    if (s->iobuf) ggml_backend_buffer_free(s->iobuf);
    if (s->gctx) ggml_free(s->gctx);
    s->iobuf = NULL;
    s->gctx = NULL;
}

static void gset_free(gset *s) {
    gset_free_graphs(s);
    if (s->buf) ggml_backend_buffer_free(s->buf);
    if (s->ctx) ggml_free(s->ctx);
    memset(s, 0, sizeof *s);
}

/* ---------- mplinear ---------- */

typedef struct {
    mpl_layer *l[MAX_COPIES];
    int copies;
    size_t wbytes;
} mset;

static mpl_wtype wtype_of(int bits) {
    return bits == 2 ? MPL_WTYPE_UINT2B2 : bits == 3 ? MPL_WTYPE_UINT3B4 : bits == 4 ? MPL_WTYPE_UINT4B8 : MPL_WTYPE_UINT8B128;
}

static mpl_config mpl_cfg(int64_t k, int64_t n, int bits) {
    mpl_config c;
    mpl_config_init(&c, k, n);
    c.wtype = wtype_of(bits);
    c.act = MPL_ACT_BF16;
    c.group_size = GROUP;
    c.zero_points = 0;
    return c;
}

static int mset_make(mset *s, const mpl_config *cfg, const mpl_checkpoint_tensors *ck, int threads) {
    memset(s, 0, sizeof *s);
    mpl_options o;
    mpl_options_init(&o);
    o.threads = threads;
    if (mpl_layer_create(cfg, ck, &o, &s->l[0]) != MPL_OK) {
        fprintf(stderr, "ggml_peer: mpl_layer_create: %s\n", mpl_last_error());
        return -1;
    }
    s->wbytes = mpl_layer_weight_bytes(s->l[0]);
    s->copies = copies_for(s->wbytes);
    for (int c = 1; c < s->copies; c++)
        if (mpl_layer_create(cfg, ck, &o, &s->l[c]) != MPL_OK) {
            fprintf(stderr, "ggml_peer: mpl_layer_create (copy %d): %s\n", c, mpl_last_error());
            return -1;
        }
    return 0;
}

static void mset_free(mset *s) {
    for (int c = 0; c < s->copies; c++) mpl_layer_destroy(s->l[c]);
    memset(s, 0, sizeof *s);
}

/* ---------- one config: every implementation, taking turns ---------- */

typedef struct {
    int64_t k, n, m;
    int threads, bits;
    const float *xf;      /* [m][k] f32 (bf16 values) */
    const uint16_t *xb;   /* [m][k] bf16 */
    const double *ref0;   /* reference of row 0 */
    const double *reflast; /* reference of row m - 1 */
    double bw;            /* read GB/s at this thread count */
} config_t;

/* Finite everywhere, and the relative L2 error of rows 0 and m-1 against the reference. */
static double check_rows(const config_t *c, const float *y0, const float *ylast, int all_finite) {
    double num = 0, den = 0;
    for (int64_t j = 0; j < c->n; j++) {
        double d0 = (double)y0[j] - c->ref0[j];
        num += d0 * d0;
        den += c->ref0[j] * c->ref0[j];
        if (c->m > 1) {
            double d1 = (double)ylast[j] - c->reflast[j];
            num += d1 * d1;
            den += c->reflast[j] * c->reflast[j];
        }
    }
    if (!all_finite || !isfinite(num)) return INFINITY;
    return den > 0 ? sqrt(num / den) : (num > 0 ? INFINITY : 0);
}

static int g_failures;

static void run_config(const config_t *c, gset *gs, int ng, mset *ms) {
    const int nimpl = ng + 1;
    static double t[MAX_IMPL][MAX_REPS];
    int idx[MAX_IMPL] = {0};
    uint16_t *yb = xmalloc((size_t)(c->m * c->n) * 2);
    for (int g = 0; g < ng; g++)
        if (gset_graphs(&gs[g], c->m, c->xf)) {
            fprintf(stderr, "ggml_peer: cannot build %s graphs\n", gs[g].name);
            exit(7);
        }
    ggml_backend_cpu_set_n_threads(g_backend, c->threads);
    for (int r = -WARMUP; r < opt_reps; r++)
        for (int j = 0; j < nimpl; j++) {
            int i = (j + (r + WARMUP)) % nimpl; /* the first of the round rotates */
            if (opt_gap_us) usleep((useconds_t)opt_gap_us);
            double t0, t1;
            if (i < ng) {
                gset *s = &gs[i];
                struct ggml_cgraph *gf = s->gf[idx[i]++ % s->copies];
                t0 = now_s();
                enum ggml_status st = ggml_backend_graph_compute(g_backend, gf);
                t1 = now_s();
                if (st != GGML_STATUS_SUCCESS) {
                    fprintf(stderr, "ggml_peer: %s compute failed (%d)\n", s->name, (int)st);
                    exit(7);
                }
            } else {
                mpl_layer *l = ms->l[idx[i]++ % ms->copies];
                t0 = now_s();
                mpl_status st = mpl_layer_apply(l, c->m, c->xb, NULL, yb);
                t1 = now_s();
                if (st != MPL_OK) {
                    fprintf(stderr, "ggml_peer: mpl_layer_apply: %s\n", mpl_last_error());
                    exit(7);
                }
            }
            if (r >= 0) t[i][r] = t1 - t0;
        }

    double med[MAX_IMPL], err[MAX_IMPL];
    for (int i = 0; i < nimpl; i++) med[i] = median_of(t[i], opt_reps);
    /* checks: ggml's y is f32 [m][n] (ne0 = n), mplinear's bf16 [m][n] */
    for (int g = 0; g < ng; g++) {
        const float *y = gs[g].y[0]->data;
        int fin = 1;
        for (int64_t i = 0; i < c->m * c->n && fin; i++) fin = isfinite(y[i]);
        err[g] = check_rows(c, y, y + (c->m - 1) * c->n, fin);
    }
    {
        float *y0 = xmalloc((size_t)c->n * 4), *yl = xmalloc((size_t)c->n * 4);
        int fin = 1;
        for (int64_t i = 0; i < c->m * c->n && fin; i++) fin = isfinite(mpl_bf16_to_f32(yb[i]));
        for (int64_t j = 0; j < c->n; j++) {
            y0[j] = mpl_bf16_to_f32(yb[j]);
            yl[j] = mpl_bf16_to_f32(yb[(c->m - 1) * c->n + j]);
        }
        err[ng] = check_rows(c, y0, yl, fin);
        free(y0);
        free(yl);
    }

    const char *path = mpl_layer_path(ms->l[0], c->m);
    if (!path) path = mpl_layer_kernel(ms->l[0]);
    for (int i = 0; i < nimpl; i++) {
        char name[96], tm[32], ratio[32], chk[48];
        size_t wb = i < ng ? gs[i].wbytes : ms->wbytes;
        int copies = i < ng ? gs[i].copies : ms->copies;
        if (i < ng)
            snprintf(name, sizeof name, "%s", gs[i].name);
        else
            snprintf(name, sizeof name, "mplinear:%s", path);
        fmt_time(tm, sizeof tm, med[i]);
        if (i < ng)
            snprintf(ratio, sizeof ratio, "%.2fx", med[i] / med[ng]);
        else
            snprintf(ratio, sizeof ratio, "—");
        int ok = err[i] < tol_for(c->bits);
        if (!ok) g_failures++;
        snprintf(chk, sizeof chk, "%.4f %s", err[i], ok ? "ok" : "FAIL");
        double gbs = (double)wb / med[i] / 1e9;
        printf("| %lldx%lld | %lld | %d | %d | %s | %s | %s | %zu | %d | %.1f | %.0f%% | %s | %s |\n", (long long)c->k,
               (long long)c->n, (long long)c->m, c->threads, c->bits, name, i < ng ? gs[i].where : "mplinear", tm, wb,
               copies, gbs, 100.0 * gbs / c->bw, ratio, chk);
    }
    fflush(stdout);
    for (int g = 0; g < ng; g++) gset_free_graphs(&gs[g]);
    free(yb);
}

/* ---------- main ---------- */

static int ggml_types_for(int bits, enum ggml_type *out) {
    switch (bits) {
    case 2: out[0] = GGML_TYPE_Q2_K; return 1;
    case 3: out[0] = GGML_TYPE_Q3_K; return 1;
    case 4: out[0] = GGML_TYPE_Q4_0; out[1] = GGML_TYPE_Q4_K; return 2;
    default: out[0] = GGML_TYPE_Q8_0; return 1;
    }
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    mpl_platform_info pi;
    mpl_platform_get(&pi);
    char isa[256];
    mpl_isa_string(pi.isa, isa, sizeof isa);
    printf("cpu: %s, %d threads; isa: %s\n", pi.cpu_model, pi.cpu_threads, isa);
    ggml_setup();
    printf("ggml %s (%s), llama-cpp-python 0.3.36 sources; CPU extra buffer type: %s; mplinear %s\n", ggml_version(),
           ggml_commit(), g_repack ? ggml_backend_buft_name(g_repack) : "none", mpl_version());

    /* read bandwidth per thread count, first (the 1 GiB buffer is freed before the weights come) */
    double bw[MAX_LIST];
    {
        char *buf = aligned_alloc(64, BW_BYTES);
        if (!buf) {
            fprintf(stderr, "ggml_peer: cannot allocate the 1 GiB bandwidth buffer\n");
            return 7;
        }
        memset(buf, 1, BW_BYTES);
        for (int ti = 0; ti < opt_nthreads; ti++) {
            bw[ti] = read_bw(buf, (int)opt_threads[ti]);
            printf("read bandwidth, %lld thread%s: %.1f GB/s (1 GiB, AVX2 loads, median of 5)\n", (long long)opt_threads[ti],
                   opt_threads[ti] > 1 ? "s" : "", bw[ti]);
        }
        free(buf);
    }
    printf("weights cold: copies totalling >= %.0f MiB (2..%d copies) per implementation; implementations take turns call "
           "by call; %d warm-up rounds, medians of %d calls%s\n\n",
           opt_cold_mib, MAX_COPIES, WARMUP, opt_reps, opt_gap_us ? " (with a sleep before every call)" : "");
    printf("| shape (KxN) | M | T | width | impl | weights in | time | weight bytes | copies | GB/s | %% of read BW | mpl "
           "speedup | rel L2 vs f32 W (bound: %s) |\n",
           opt_tol > 0 ? "--tol" : "0.45 / 0.2 / 0.09 / 0.01 at 2 / 3 / 4 / 8 bits");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    fflush(stdout);

    int64_t mmax = 1;
    for (int i = 0; i < opt_nm; i++)
        if (opt_m[i] > mmax) mmax = opt_m[i];

    for (int si = 0; si < opt_nshapes; si++) {
        const int64_t K = opt_shapes[si].k, N = opt_shapes[si].n;
        if (K % GROUP) {
            fprintf(stderr, "ggml_peer: %lldx%lld: K must be a multiple of the group size %d: skipped\n", (long long)K,
                    (long long)N, GROUP);
            continue;
        }
        fprintf(stderr, "[%lldx%lld] generating weights and the reference\n", (long long)K, (long long)N);
        rng_t rw = {0x5eed0001ull + (uint64_t)si}, rx = {0x5eed1001ull + (uint64_t)si};
        float *W = xmalloc((size_t)(N * K) * 4);
        for (int64_t i = 0; i < N * K; i++) W[i] = rng_unit(&rw);
        float *xf = xmalloc((size_t)(mmax * K) * 4);
        uint16_t *xb = xmalloc((size_t)(mmax * K) * 2);
        for (int64_t i = 0; i < mmax * K; i++) {
            xb[i] = mpl_f32_to_bf16(rng_unit(&rx));
            xf[i] = mpl_bf16_to_f32(xb[i]);
        }
        /* reference rows: 0 and every m - 1 */
        double *ref[MAX_LIST + 1];
        int64_t refrow[MAX_LIST + 1];
        int nref = 0;
        for (int i = -1; i < opt_nm; i++) {
            int64_t row = i < 0 ? 0 : opt_m[i] - 1, j;
            for (j = 0; j < nref && refrow[j] != row; j++) {}
            if (j < nref) continue;
            refrow[nref] = row;
            ref[nref] = xmalloc((size_t)N * sizeof(double));
            reference_row(xf + row * K, W, K, N, ref[nref]);
            nref++;
        }

        for (int wi = 0; wi < opt_nwidths; wi++) {
            const int bits = (int)opt_widths[wi];
            enum ggml_type types[2];
            int nt = ggml_types_for(bits, types), ng = 0;
            gset gs[2];
            fprintf(stderr, "[%lldx%lld, %d-bit] quantizing for ggml and mplinear\n", (long long)K, (long long)N, bits);
            for (int i = 0; i < nt; i++)
                if (gset_make(&gs[ng], types[i], W, K, N) == 0) ng++;
                else gset_free(&gs[ng]);
            if (!ng) continue;

            mpl_config cfg = mpl_cfg(K, N, bits);
            uint8_t *codes = xmalloc((size_t)(N * K));
            float *scales = xmalloc((size_t)(N * (K / GROUP)) * 4);
            quantize_sym(W, N, K, bits, codes, scales);
            mpl_checkpoint_tensors ck;
            mpl_status st = mpl_checkpoint_encode(&cfg, MPL_LAYOUT_CT, codes, scales, MPL_DTYPE_BF16, NULL, NULL, &ck);
            free(codes);
            free(scales);
            if (st != MPL_OK) {
                fprintf(stderr, "ggml_peer: mpl_checkpoint_encode: %s\n", mpl_last_error());
                return 7;
            }

            for (int ti = 0; ti < opt_nthreads; ti++) {
                const int T = (int)opt_threads[ti];
                mset ms;
                if (mset_make(&ms, &cfg, &ck, T)) return 7;
                for (int mi = 0; mi < opt_nm; mi++) {
                    const int64_t M = opt_m[mi];
                    config_t c = {K, N, M, T, bits, xf, xb, NULL, NULL, bw[ti]};
                    for (int j = 0; j < nref; j++) {
                        if (refrow[j] == 0) c.ref0 = ref[j];
                        if (refrow[j] == M - 1) c.reflast = ref[j];
                    }
                    fprintf(stderr, "[%lldx%lld, %d-bit, T=%d, M=%lld] timing\n", (long long)K, (long long)N, bits, T,
                            (long long)M);
                    run_config(&c, gs, ng, &ms);
                }
                mset_free(&ms);
            }
            mpl_checkpoint_tensors_free(&ck);
            for (int i = 0; i < ng; i++) gset_free(&gs[i]);
        }
        for (int j = 0; j < nref; j++) free(ref[j]);
        free(W);
        free(xf);
        free(xb);
    }
    ggml_backend_free(g_backend);
    ggml_quantize_free();
    if (g_failures) fprintf(stderr, "ggml_peer: %d row(s) above their width's bound\n", g_failures);
    return g_failures ? 1 : 0;
}
