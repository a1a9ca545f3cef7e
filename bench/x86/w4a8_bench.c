/*
 * w4a8_bench.c -- benchmark of the x86 W4A8 kernels (the chosen one, or --kernel NAME[:PATH]) with
 * its ceilings measured in the same run, through the public API only: read bandwidth (1 GiB buffer, 1 and 2 threads), oneDNN s8 dense matmul, and our W4A16
 * kernel at prefill (if one other than ref is chosen).
 *
 *   decode  M=1 on Llama-3-8B gate_up (K=4096, N=28672) and down (K=14336, N=4096), 1 and 2 threads:
 *           % of read bandwidth = (weight bytes / median time) / read bandwidth of that thread count.
 *   prefill M=512, K=N=4096: GOP/s (2*M*N*K / time) and GOP/s per thread; ratio to W4A16.
 *   accuracy: relative Frobenius error of W4A8 against the float64 W4A16 result (Gaussian x, 8 rows).
 *
 * "cpu ms": median thread CPU time of 1-thread rows (time the shared machine gave to other processes
 * excluded; a check on the wall-clock median, not a replacement for it).
 * Cold weights: enough layer copies that their weights total >= --cold-gib (default 1.25 GiB;
 * the L3 here is 480 MiB), applied in rotation; medians over --reps applies.
 * Run with OMP_WAIT_POLICY=PASSIVE so oneDNN's OpenMP workers sleep instead of spinning between calls.
 * The implementation column names the path each row ran (mpl_layer_path).
 * Usage: w4a8_bench [--kernel NAME[:PATH]] [--reps R] [--cold-gib G] [--threads T1,T2] [--quick]
 *                   [--only decode|prefill]
 *   --kernel: force a W4A8 kernel or path (mpl_options.kernel), e.g. x86_avx512vnni_w4a8:vnni;
 *   --quick: no oneDNN rows; --only: one half of the table.
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include "mplinear.h"


static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* This thread's CPU time: with one thread it excludes the time the shared machine gave to others. */
static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
/* Median thread CPU seconds of the last timing (printed for 1-thread rows as a noise check). */
static double g_cpu_sec;

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t rs = 12345;
static uint64_t rnd(void) {
    uint64_t z = (rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double gauss(void) {
    double u = ((double)(rnd() >> 11) + 1) / 9007199254740993.0, v = (double)(rnd() >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static int reps = 30;
static const char *g_kernel = NULL; /* --kernel: the W4A8 layers' mpl_options.kernel */
static double cold_bytes = 1.25 * (1 << 30);

/* ---------- read bandwidth ---------- */
typedef struct {
    const __m256i *p;
    size_t n;
    long long sink;
} rd_arg;

/* Four sequential streams per thread (the decode kernel reads four weight panels at once), whole lines,
 * prefetched 1 KiB ahead like the kernel (hardware prefetch alone under-reads on some VMs). */
static void *rd_thread(void *v) {
    rd_arg *a = v;
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    const size_t q = a->n / 4 / 2 * 2;
    const __m256i *p0 = a->p, *p1 = p0 + q, *p2 = p1 + q, *p3 = p2 + q;
    for (size_t i = 0; i < q; i += 2) {
        _mm_prefetch((const char *)(p0 + i + 32), _MM_HINT_T0);
        _mm_prefetch((const char *)(p1 + i + 32), _MM_HINT_T0);
        _mm_prefetch((const char *)(p2 + i + 32), _MM_HINT_T0);
        _mm_prefetch((const char *)(p3 + i + 32), _MM_HINT_T0);
        s0 = _mm256_xor_si256(s0, _mm256_xor_si256(_mm256_load_si256(p0 + i), _mm256_load_si256(p0 + i + 1)));
        s1 = _mm256_xor_si256(s1, _mm256_xor_si256(_mm256_load_si256(p1 + i), _mm256_load_si256(p1 + i + 1)));
        s2 = _mm256_xor_si256(s2, _mm256_xor_si256(_mm256_load_si256(p2 + i), _mm256_load_si256(p2 + i + 1)));
        s3 = _mm256_xor_si256(s3, _mm256_xor_si256(_mm256_load_si256(p3 + i), _mm256_load_si256(p3 + i + 1)));
    }
    s0 = _mm256_xor_si256(_mm256_xor_si256(s0, s1), _mm256_xor_si256(s2, s3));
    a->sink = _mm256_extract_epi64(s0, 0);
    return NULL;
}

/* Median read rate over a 1 GiB buffer (allocated and touched once). */
static __m256i *rd_buf;
static double read_bw(int threads) {
    const size_t bytes = (size_t)1 << 30;
    if (!rd_buf) {
        rd_buf = aligned_alloc(64, bytes);
        memset(rd_buf, 1, bytes);
    }
    __m256i *buf = rd_buf;
    double t[7];
    for (int r = 0; r < 7; r++) {
        pthread_t th[8];
        rd_arg a[8];
        size_t per = bytes / 32 / (size_t)threads;
        double t0 = now();
        for (int i = 0; i < threads; i++) {
            a[i] = (rd_arg){buf + per * (size_t)i, per, 0};
            pthread_create(&th[i], NULL, rd_thread, &a[i]);
        }
        for (int i = 0; i < threads; i++) pthread_join(th[i], NULL);
        t[r] = now() - t0;
    }
    return (double)bytes / median(t, 7) / 1e9;
}

/* ---------- our kernel ---------- */
typedef struct {
    mpl_layer **l;
    int copies;
    size_t wbytes;
    const char *kernel;
} layer_set;

static mpl_checkpoint_tensors make_ckpt(const mpl_config *c) {
    int64_t G = c->group_size == -1 ? 1 : c->k / c->group_size;
    uint8_t *codes = malloc((size_t)(c->n * c->k));
    float *scales = malloc((size_t)(c->n * G) * 4);
    for (int64_t i = 0; i < c->n * c->k; i++) codes[i] = (uint8_t)(rnd() & 15);
    for (int64_t i = 0; i < c->n * G; i++) scales[i] = (float)(0.001 * (1 + (double)(rnd() % 16)));
    mpl_checkpoint_tensors ck;
    if (mpl_checkpoint_encode(c, MPL_LAYOUT_CT, codes, scales, MPL_DTYPE_BF16, NULL, NULL, &ck) != MPL_OK) {
        fprintf(stderr, "encode: %s\n", mpl_last_error());
        exit(1);
    }
    free(codes);
    free(scales);
    return ck;
}

/* Copies forced to kernel (NULL: the chooser's) totalling >= want_bytes of weights. */
static layer_set make_set(const mpl_config *c, const mpl_checkpoint_tensors *ck, int threads, double want_bytes,
                          const char *kernel) {
    layer_set s = {0};
    mpl_options o;
    mpl_options_init(&o);
    o.threads = threads;
    o.kernel = kernel;
    mpl_layer *first;
    if (mpl_layer_create(c, ck, &o, &first) != MPL_OK) {
        fprintf(stderr, "create: %s\n", mpl_last_error());
        exit(1);
    }
    s.wbytes = mpl_layer_weight_bytes(first);
    s.kernel = mpl_layer_kernel(first);
    s.copies = (int)ceil(want_bytes / (double)s.wbytes);
    if (s.copies < 2) s.copies = 2;
    s.l = calloc((size_t)s.copies, sizeof *s.l);
    s.l[0] = first;
    for (int i = 1; i < s.copies; i++)
        if (mpl_layer_create(c, ck, &o, &s.l[i]) != MPL_OK) {
            fprintf(stderr, "create copy %d: %s\n", i, mpl_last_error());
            exit(1);
        }
    return s;
}

/* What an apply of m rows runs: "kernel:path", or the kernel's name. */
static const char *runs(const mpl_layer *l, int64_t m) {
    const char *p = mpl_layer_path(l, m);
    return p ? p : mpl_layer_kernel(l);
}

static void free_set(layer_set *s) {
    for (int i = 0; i < s->copies; i++) mpl_layer_destroy(s->l[i]);
    free(s->l);
}

static double time_set(layer_set *s, int64_t m, const void *x, void *y) {
    double *t = malloc((size_t)reps * sizeof *t), *tc = malloc((size_t)reps * sizeof *tc);
    for (int i = 0; i < s->copies; i++) mpl_layer_apply(s->l[i], m, x, NULL, y); /* warm-up: workspace, pool */
    for (int r = 0; r < reps; r++) {
        mpl_layer *l = s->l[r % s->copies];
        double c0 = cpu_now(), t0 = now();
        mpl_layer_apply(l, m, x, NULL, y);
        t[r] = now() - t0;
        tc[r] = cpu_now() - c0;
    }
    double med = median(t, reps);
    g_cpu_sec = median(tc, reps);
    free(t);
    free(tc);
    return med;
}

/* ---------- oneDNN s8 x s8 -> s32 dense matmul ---------- */
#define DNNL_OK(call)                                                                                        \
    do {                                                                                                     \
        dnnl_status_t st_ = (call);                                                                          \
        if (st_ != dnnl_success) {                                                                           \
            fprintf(stderr, "oneDNN: %s failed (%d)\n", #call, (int)st_);                                   \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)

static double onednn_s8(int64_t M, int64_t K, int64_t N, int threads, double want_bytes) {
    omp_set_num_threads(threads);
    dnnl_engine_t eng;
    dnnl_stream_t str;
    DNNL_OK(dnnl_engine_create(&eng, dnnl_cpu, 0));
    DNNL_OK(dnnl_stream_create(&str, eng, dnnl_stream_default_flags));
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N};
    DNNL_OK(dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dnnl_s8, dnnl_ab));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&b_md, 2, bd, dnnl_s8, dnnl_format_tag_any));
    DNNL_OK(dnnl_memory_desc_init_by_tag(&c_md, 2, cd, dnnl_s32, dnnl_ab));
    dnnl_matmul_desc_t mmd;
    DNNL_OK(dnnl_matmul_desc_init(&mmd, &a_md, &b_md, NULL, &c_md));
    dnnl_primitive_desc_t pd;
    DNNL_OK(dnnl_primitive_desc_create(&pd, &mmd, NULL, eng, NULL));
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    size_t wbytes = dnnl_memory_desc_get_size(wmd);
    int copies = (int)ceil(want_bytes / (double)wbytes);
    if (copies < 2) copies = 2;
    dnnl_primitive_t prim;
    DNNL_OK(dnnl_primitive_create(&prim, pd));
    dnnl_memory_t am, cm, *bm = calloc((size_t)copies, sizeof *bm);
    DNNL_OK(dnnl_memory_create(&am, &a_md, eng, DNNL_MEMORY_ALLOCATE));
    DNNL_OK(dnnl_memory_create(&cm, &c_md, eng, DNNL_MEMORY_ALLOCATE));
    void *h;
    DNNL_OK(dnnl_memory_get_data_handle(am, &h));
    for (int64_t i = 0; i < M * K; i++) ((int8_t *)h)[i] = (int8_t)(rnd() % 255 - 127);
    for (int i = 0; i < copies; i++) {
        DNNL_OK(dnnl_memory_create(&bm[i], wmd, eng, DNNL_MEMORY_ALLOCATE));
        DNNL_OK(dnnl_memory_get_data_handle(bm[i], &h));
        for (size_t b = 0; b < wbytes; b++) ((int8_t *)h)[b] = (int8_t)(rnd() % 15 - 7);
    }
    double *t = malloc((size_t)reps * sizeof *t), *tc = malloc((size_t)reps * sizeof *tc);
    for (int r = -copies; r < reps; r++) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm[(r + copies) % copies]}, {DNNL_ARG_DST, cm}};
        double c0 = cpu_now(), t0 = now();
        DNNL_OK(dnnl_primitive_execute(prim, str, 3, args));
        DNNL_OK(dnnl_stream_wait(str));
        if (r >= 0) {
            t[r] = now() - t0;
            tc[r] = cpu_now() - c0;
        }
    }
    double med = median(t, reps);
    g_cpu_sec = median(tc, reps);
    free(t);
    free(tc);
    for (int i = 0; i < copies; i++) dnnl_memory_destroy(bm[i]);
    free(bm);
    dnnl_memory_destroy(am);
    dnnl_memory_destroy(cm);
    dnnl_primitive_destroy(prim);
    dnnl_primitive_desc_destroy(pd);
    dnnl_stream_destroy(str);
    dnnl_engine_destroy(eng);
    return med;
}

/* ---------- table ---------- */
static void row(const char *cas, int64_t m, int64_t k, int64_t n, int threads, const char *impl, double sec,
                double wbytes, double bw) {
    double gbs = wbytes / sec / 1e9, gop = 2.0 * (double)m * (double)n * (double)k / sec / 1e9;
    char cpu[32] = "-";
    if (threads == 1 && g_cpu_sec > 0) snprintf(cpu, sizeof cpu, "%.3f", g_cpu_sec * 1e3);
    printf("| %-14s | %4lld | %5lld | %5lld | %d | %-26s | %9.3f | %9s | %7.1f | %6.1f%% | %8.1f | %8.1f |\n", cas,
           (long long)m, (long long)k, (long long)n, threads, impl, sec * 1e3, cpu, gbs, bw > 0 ? 100 * gbs / bw : 0.0,
           gop, gop / threads);
    fflush(stdout);
}

static mpl_config w4a8_config(int64_t k, int64_t n) {
    mpl_config c;
    mpl_config_init(&c, k, n);
    c.group_size = 128;
    c.wtype = MPL_WTYPE_UINT4B8;
    c.act = MPL_ACT_BF16;
    c.mode = MPL_MODE_W4A8;
    return c;
}

static void *act_random(int64_t count, float scale) {
    uint16_t *x = malloc((size_t)count * 2);
    for (int64_t i = 0; i < count; i++) x[i] = mpl_f32_to_bf16((float)gauss() * scale);
    return x;
}

int main(int argc, char **argv) {
    int tlist[2] = {1, 2}, nt = 2, quick = 0;
    const char *only = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernel") && i + 1 < argc) g_kernel = argv[++i];
        else if (!strcmp(argv[i], "--cold-gib") && i + 1 < argc) cold_bytes = atof(argv[++i]) * (1 << 30);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) nt = sscanf(argv[++i], "%d,%d", &tlist[0], &tlist[1]);
        else if (!strcmp(argv[i], "--quick")) quick = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--kernel NAME[:PATH]] [--reps R] [--cold-gib G] [--threads T1,T2] [--quick] "
                    "[--only decode|prefill]\n",
                    argv[0]);
            return 2;
        }
    }
    if (reps < 3) reps = 3;
    for (int i = 0; i < nt; i++)
        if (tlist[i] < 1 || tlist[i] > 8) {
            fprintf(stderr, "--threads: each count must be in 1..8\n");
            return 2;
        }
    mpl_platform_info pi;
    mpl_platform_get(&pi);
    char isa[256];
    mpl_isa_string(pi.isa, isa, sizeof isa);
    printf("# cpu: %s (%d threads); isa: %s\n# reps %d (medians), cold weights >= %.2f GiB rotated\n\n", pi.cpu_model,
           pi.cpu_threads, isa, reps, cold_bytes / (1 << 30));
    double bw[9] = {0};
    for (int i = 0; i < nt; i++) {
        bw[tlist[i]] = read_bw(tlist[i]);
        printf("# read bandwidth, 1 GiB, %d thread(s): %.1f GB/s\n", tlist[i], bw[tlist[i]]);
    }
    printf("\n| case           |    M |     K |     N | T | implementation             | median ms |    cpu ms |    GB/s | %% read BW |    GOP/s | GOP/s/thr |\n"
           "|----------------|------|-------|-------|---|----------------------------|-----------|-----------|---------|---------|----------|----------|\n");
    const struct {
        const char *name;
        int64_t k, n;
    } dec[] = {{"gate_up decode", 4096, 28672}, {"down decode", 14336, 4096}};
    for (int d = 0; d < 2 && strcmp(only, "prefill") != 0; d++) {
        mpl_config c = w4a8_config(dec[d].k, dec[d].n);
        mpl_checkpoint_tensors ck = make_ckpt(&c);
        void *x = act_random(c.k, 1.0f), *y = malloc((size_t)c.n * 2);
        for (int i = 0; i < nt; i++) {
            int t = tlist[i];
            layer_set s = make_set(&c, &ck, t, cold_bytes, g_kernel);
            /* The machine is shared: read bandwidth is measured right before and after each timing and averaged. */
            double b0 = read_bw(t), sec = time_set(&s, 1, x, y), b1 = read_bw(t);
            printf("# read bandwidth around the next row, %d thread(s): %.1f / %.1f GB/s\n", t, b0, b1);
            row(dec[d].name, 1, c.k, c.n, t, runs(s.l[0], 1), sec, (double)s.wbytes, 0.5 * (b0 + b1));
            free_set(&s);
        }
        /* oneDNN after our rows: OpenMP's spinning workers would otherwise share cores with our pool. */
        for (int i = 0; i < nt && !quick; i++) {
            int t = tlist[i];
            double b0 = read_bw(t), sec = onednn_s8(1, c.k, c.n, t, cold_bytes), b1 = read_bw(t);
            if (sec > 0) row(dec[d].name, 1, c.k, c.n, t, "oneDNN s8 dense", sec, (double)c.k * (double)c.n, 0.5 * (b0 + b1));
        }
        mpl_checkpoint_tensors_free(&ck);
        free(x);
        free(y);
    }
    if (!strcmp(only, "decode")) return 0;
    /* Prefill. */
    const int64_t M = 512, K = 4096, N = 4096;
    mpl_config c = w4a8_config(K, N);
    mpl_checkpoint_tensors ck = make_ckpt(&c);
    void *x = act_random(M * K, 1.0f), *y = malloc((size_t)(M * N) * 2);
    mpl_config c16 = c;
    c16.mode = MPL_MODE_W4A16;
    for (int i = 0; i < nt; i++) {
        int t = tlist[i];
        layer_set s = make_set(&c, &ck, t, 0, g_kernel);
        double s8 = time_set(&s, M, x, y);
        row("prefill", M, K, N, t, runs(s.l[0], M), s8, (double)s.wbytes, 0);
        free_set(&s);
        layer_set s16 = make_set(&c16, &ck, t, 0, NULL);
        if (strcmp(s16.kernel, "ref") != 0) {
            double sec = time_set(&s16, M, x, y);
            row("prefill W4A16", M, K, N, t, runs(s16.l[0], M), sec, (double)s16.wbytes, 0);
            printf("# W4A8 / W4A16 prefill speed-up, %d thread(s): %.2fx\n", t, sec / s8);
        } else {
            printf("# W4A16 prefill, %d thread(s): no W4A16 kernel other than ref is chosen here; ratio not measured\n", t);
        }
        free_set(&s16);
    }
    for (int i = 0; i < nt && !quick; i++) {
        double sec = onednn_s8(M, K, N, tlist[i], 0);
        if (sec > 0) row("prefill", M, K, N, tlist[i], "oneDNN s8 dense", sec, (double)K * (double)N, 0);
    }
    /* Accuracy: W4A8 against the float64 W4A16 result on Gaussian x (8 rows). */
    {
        mpl_config cf = c;
        cf.act = MPL_ACT_F32;
        int64_t G = K / cf.group_size, m = 8;
        uint8_t *codes = malloc((size_t)(N * K));
        float *scales = malloc((size_t)(N * G) * 4), *xf = malloc((size_t)(m * K) * 4), *yf = malloc((size_t)(m * N) * 4);
        for (int64_t i = 0; i < N * K; i++) codes[i] = (uint8_t)(rnd() & 15);
        for (int64_t i = 0; i < N * G; i++) scales[i] = (float)(0.001 * (1 + (double)(rnd() % 16)));
        for (int64_t i = 0; i < m * K; i++) xf[i] = (float)gauss();
        mpl_checkpoint_tensors ckf;
        mpl_checkpoint_encode(&cf, MPL_LAYOUT_CT, codes, scales, MPL_DTYPE_F32, NULL, NULL, &ckf);
        mpl_options ao;
        mpl_options_init(&ao);
        ao.kernel = g_kernel;
        mpl_layer *l;
        if (mpl_layer_create(&cf, &ckf, &ao, &l) != MPL_OK) {
            fprintf(stderr, "create: %s\n", mpl_last_error());
            return 1;
        }
        mpl_layer_apply(l, m, xf, NULL, yf);
        double num = 0, den = 0;
        for (int64_t r = 0; r < m; r++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)xf[r * K + k] * (codes[n * K + k] - 8) * (double)scales[n * G + k / cf.group_size];
                num += (yf[r * N + n] - acc) * (yf[r * N + n] - acc);
                den += acc * acc;
            }
        printf("# accuracy (%s, K=%lld, group 128, Gaussian x): relative Frobenius error vs float64 W4A16 = %.3f%%\n",
               runs(l, m), (long long)K, 100 * sqrt(num / den));
        mpl_layer_destroy(l);
        mpl_checkpoint_tensors_free(&ckf);
        free(codes);
        free(scales);
        free(xf);
        free(yf);
    }
    mpl_checkpoint_tensors_free(&ck);
    free(x);
    free(y);
    return 0;
}
