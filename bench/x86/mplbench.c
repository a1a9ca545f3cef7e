/*
 * mplbench.c -- the x86 kernels (W4A16: x86_avx512_w4a16, x86_avx2_w4a16; W4A8 with --w4a8) beside
 * their ceilings, all measured in the same run, through the public API only (include/mplinear.h):
 *   read bandwidth: sum over a 1 GiB buffer with wide loads (the better of a plain and a
 *                   software-prefetching pass), same thread count, read in cold pieces about
 *                   the size of the layer's weights, one right before each call of our kernel
 *                   (the machine is shared: its bandwidth drifts within seconds); "% of read BW"
 *                   is the median over calls of the call's weight GB/s over its own piece's;
 *   dense baselines: oneDNN f32 and bf16 matmul (Debian libdnnl-dev) and OpenBLAS sgemv/sgemm
 *                   (libopenblas-dev) at the same shape, when built with them;
 *   our kernel:     through the public API, weights cold (enough layer copies that their packed
 *                   weights total >= --cold-gib, applied in rotation), median of --reps calls.
 * Columns: time, weight GB/s and % of read bandwidth (decode is memory-bound), GFLOP/s
 * (2*M*N*K / time), and each baseline's time. Rows print as a markdown table.
 *
 * The kernel column names the path each row ran (mpl_layer_path: "x86_avx512_w4a16:decode").
 *
 * --kernel NAME or NAME:PATH forces a kernel or one of its paths (mpl_options.kernel, the public
 * mechanism; names from `mplinear info`), e.g. --kernel x86_avx512_w4a16:prefill-bf16.
 *
 * --sweep: every path of the kernel (the chosen one, or --kernel NAME) forced in turn for
 * M = 1..64 (or the --m list), each on its own cold layer copies, the paths taking turns call by call; the last
 * columns name the path the chooser takes by default and the fastest one: where the default
 * ranges of the path rows (src/kernels/x86/<kernel>.c) should switch.
 *
 * --w4a8: the same for W4A8 mode (the x86 W4A8 kernels; GFLOP/s columns then count int8 ops).
 *
 * --hot: one copy of each layer, applied again and again with no cold reads between calls, so a layer whose
 * weights fit the core's L2 streams from cache: the rate the kernel's instructions allow (is a decode below the
 * read bandwidth because of its loop or of the memory?). The "% of read BW" column then says "hot".
 *
 * Usage: mplbench [--kernel NAME[:PATH]] [--w4a8] [--threads 1,2] [--m 1,4,16,64,512]
 *                 [--shapes 8b,70b,tp|LIST] [--reps R] [--cold-gib G] [--act bf16|f16|f32] [--group G]
 *                 [--no-dense] [--sweep] [--hot] [--wtype uint4b8|uint4|int4|uint8b128|uint8|uint3b4|uint3|uint2b2|uint2]
 *                 [--wait-quiet]   (before each row, wait up to 2 min until no other task runs;
 *                                   rows measured without that are marked "(busy)")
 *   LIST: KxN[,KxN...]   e.g. --shapes 4096x28672,14336x4096
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef MPL_BENCH_DNNL
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#endif
#ifdef MPL_BENCH_OPENBLAS
#include <cblas.h>
void openblas_set_num_threads(int);
#endif

#include "mplinear.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static uint64_t g_rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
    uint64_t z = (g_rs += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static float frand(void) { return (float)((double)(rnd() >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

/* ---------- options ---------- */

static const char *opt_kernel = NULL;
static int opt_w4a8 = 0; /* --w4a8: W4A8 mode (the chooser then picks an x86 W4A8 kernel) */
static int opt_threads[8] = {1, 2}, opt_nthreads = 2;
static int64_t opt_m[32] = {1, 4, 16, 64, 512};
static int opt_nm = 5, opt_m_given = 0;
static int opt_reps = 15;
static double opt_cold = 1.25;
static mpl_act opt_act = MPL_ACT_BF16;
static int64_t opt_group = 128;
static mpl_wtype opt_wtype = MPL_WTYPE_UINT4B8;
static int opt_dense = 1, opt_sweep = 0, opt_wait_quiet = 0, opt_hot = 0;
typedef struct {
    const char *name;
    int64_t k, n;
} shape;
static shape opt_shapes[32];
static int opt_nshapes = 0;

static const shape shapes_8b[] = {{"8B qkv", 4096, 6144}, {"8B o", 4096, 4096}, {"8B gate_up", 4096, 28672},
                                  {"8B down", 14336, 4096}};
static const shape shapes_70b[] = {{"70B qkv", 8192, 10240}, {"70B o", 8192, 8192}, {"70B gate_up", 8192, 57344},
                                   {"70B down", 28672, 8192}};
static const shape shapes_tp[] = {{"TP 1408", 4096, 1408}, {"TP 7392", 7392, 4096}, {"TP 10944", 4096, 10944}};

static void add_shapes(const shape *s, int n) {
    for (int i = 0; i < n && opt_nshapes < 32; i++) opt_shapes[opt_nshapes++] = s[i];
}

static int parse_list(const char *s, int64_t *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        out[n++] = strtoll(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

static void parse_args(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--kernel")) opt_kernel = v, i++;
        else if (!strcmp(a, "--w4a8")) opt_w4a8 = 1;
        else if (!strcmp(a, "--threads")) {
            int64_t t[8];
            opt_nthreads = parse_list(v, t, 8);
            for (int j = 0; j < opt_nthreads; j++) opt_threads[j] = (int)t[j];
            i++;
        } else if (!strcmp(a, "--m")) opt_nm = parse_list(v, opt_m, 32), opt_m_given = 1, i++;
        else if (!strcmp(a, "--reps")) opt_reps = atoi(v), i++;
        else if (!strcmp(a, "--cold-gib")) opt_cold = atof(v), i++;
        else if (!strcmp(a, "--group")) opt_group = atoll(v), i++;
        else if (!strcmp(a, "--wtype")) {
            if (mpl_wtype_parse(v, &opt_wtype) != MPL_OK) {
                fprintf(stderr, "%s\n", mpl_last_error());
                exit(2);
            }
            i++;
        }
        else if (!strcmp(a, "--act")) {
            if (mpl_act_parse(v, &opt_act) != MPL_OK) {
                fprintf(stderr, "%s\n", mpl_last_error());
                exit(2);
            }
            i++;
        } else if (!strcmp(a, "--no-dense")) opt_dense = 0;
        else if (!strcmp(a, "--sweep")) opt_sweep = 1;
        else if (!strcmp(a, "--wait-quiet")) opt_wait_quiet = 1;
        else if (!strcmp(a, "--hot")) opt_hot = 1;
        else if (!strcmp(a, "--shapes")) {
            opt_nshapes = 0; /* the last --shapes wins (run.sh passes a default first) */
            for (const char *p = v; *p;) {
                if (!strncmp(p, "8b", 2)) add_shapes(shapes_8b, 4), p += 2;
                else if (!strncmp(p, "70b", 3)) add_shapes(shapes_70b, 4), p += 3;
                else if (!strncmp(p, "tp", 2)) add_shapes(shapes_tp, 3), p += 2;
                else {
                    char *e;
                    int64_t k = strtoll(p, &e, 10), n = *e == 'x' ? strtoll(e + 1, &e, 10) : 0;
                    if (k <= 0 || n <= 0) {
                        fprintf(stderr, "bad shape list '%s' (8b, 70b, tp or KxN)\n", v);
                        exit(2);
                    }
                    opt_shapes[opt_nshapes] = (shape){"custom", k, n};
                    opt_nshapes++;
                    p = e;
                }
                if (*p == ',') p++;
            }
            i++;
        } else {
            fprintf(stderr, "unknown option %s (see the comment at the top of mplbench.c)\n", a);
            exit(2);
        }
    }
    if (!opt_nshapes) add_shapes(shapes_8b, 4);
    if (opt_sweep && opt_kernel && strchr(opt_kernel, ':')) {
        fprintf(stderr, "--sweep forces every path of a kernel in turn: give --kernel a kernel name, not a path\n");
        exit(2);
    }
}

/* ---------- read bandwidth ---------- */

static char *g_bw_buf;
static const size_t BW_BYTES = (size_t)1 << 30;

typedef struct {
    const char *p;
    size_t n;
    long long sink;
    int prefetch, threads;
    atomic_int *ready; /* the start line: every reader spins here until all have arrived (NULL: past it) */
    double end;
} rd_arg;

/* Sum with 64-byte loads; with prefetch, 1 KiB of software prefetch ahead as well: on VMs whose
 * hardware prefetchers are weak the plain loop understates what a stream can get, so the
 * ceiling is the better of both. */
__attribute__((target("avx512f"))) static long long read_sum512(const char *p, size_t n, int prefetch) {
    __m512i s0 = _mm512_setzero_si512(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 256 <= n; i += 256) {
        if (prefetch)
            for (int j = 0; j < 256; j += 64) _mm_prefetch(p + i + 1024 + j, _MM_HINT_T0);
        s0 = _mm512_add_epi64(s0, _mm512_load_si512(p + i));
        s1 = _mm512_add_epi64(s1, _mm512_load_si512(p + i + 64));
        s2 = _mm512_add_epi64(s2, _mm512_load_si512(p + i + 128));
        s3 = _mm512_add_epi64(s3, _mm512_load_si512(p + i + 192));
    }
    return _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(s0, s1), _mm512_add_epi64(s2, s3)));
}

__attribute__((target("avx2"))) static long long read_sum256(const char *p, size_t n, int prefetch) {
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (size_t i = 0; i + 128 <= n; i += 128) {
        if (prefetch)
            for (int j = 0; j < 128; j += 64) _mm_prefetch(p + i + 1024 + j, _MM_HINT_T0);
        s0 = _mm256_add_epi64(s0, _mm256_load_si256((const __m256i *)(p + i)));
        s1 = _mm256_add_epi64(s1, _mm256_load_si256((const __m256i *)(p + i + 32)));
        s2 = _mm256_add_epi64(s2, _mm256_load_si256((const __m256i *)(p + i + 64)));
        s3 = _mm256_add_epi64(s3, _mm256_load_si256((const __m256i *)(p + i + 96)));
    }
    s0 = _mm256_add_epi64(_mm256_add_epi64(s0, s1), _mm256_add_epi64(s2, s3));
    return _mm256_extract_epi64(s0, 0) + _mm256_extract_epi64(s0, 1) + _mm256_extract_epi64(s0, 2) +
           _mm256_extract_epi64(s0, 3);
}

static void *rd_thread(void *v) {
    rd_arg *a = v;
    if (a->ready) {
        atomic_fetch_add(a->ready, 1);
        while (atomic_load(a->ready) < a->threads) {
        }
    }
    a->sink = __builtin_cpu_supports("avx512f") ? read_sum512(a->p, a->n, a->prefetch)
                                                : read_sum256(a->p, a->n, a->prefetch);
    a->end = now();
    return NULL;
}

/* Read bandwidth (GB/s) of one pass over bytes [off, off + bytes) of the 1 GiB buffer with
 * `threads` threads, the better of a plain and a prefetching pass over two neighbouring pieces
 * (each piece read once, so both come from DRAM). The clock starts when every reader has started
 * (they spin at a start line) and stops when the last one ends: a thread created for the pass can
 * start hundreds of microseconds late on a VM, and counting that understated 2-thread bandwidth
 * below what our kernel's pool (started once) read in the same run. */
static double read_piece(int threads, size_t off, size_t bytes) {
    double best = 0;
    for (int pf = 0; pf < 2; pf++) {
        pthread_t th[8];
        rd_arg a[8];
        atomic_int ready = 0;
        size_t per = bytes / (size_t)threads / 256 * 256;
        const char *base = g_bw_buf + (off + (size_t)pf * bytes) % (BW_BYTES - bytes) / 4096 * 4096;
        for (int i = 1; i < threads; i++) {
            a[i] = (rd_arg){base + per * (size_t)i, per, 0, pf, threads, &ready, 0};
            pthread_create(&th[i], NULL, rd_thread, &a[i]);
        }
        atomic_fetch_add(&ready, 1);
        while (atomic_load(&ready) < threads) {
        }
        double t0 = now();
        a[0] = (rd_arg){base, per, 0, pf, threads, NULL, 0}; /* this thread is past the start line */
        rd_thread(&a[0]);
        double end = a[0].end;
        for (int i = 1; i < threads; i++) {
            pthread_join(th[i], NULL);
            if (a[i].end > end) end = a[i].end;
        }
        double gbs = (double)(per * (size_t)threads) / (end - t0) / 1e9;
        if (gbs > best) best = gbs;
    }
    return best;
}

/* ---------- our kernel over rotating layer copies ---------- */

typedef struct {
    mpl_layer **l;
    int copies;
    size_t wbytes;
    const char *kernel;
} layer_set;

static mpl_config make_cfg(int64_t k, int64_t n) {
    mpl_config c;
    mpl_config_init(&c, k, n);
    c.act = opt_act;
    c.group_size = opt_group == -1 || k % opt_group ? -1 : opt_group;
    c.wtype = opt_wtype;
    /* the types that store s - z need zero points (uint2, uint3, uint4, uint8) */
    c.zero_points = mpl_wtype_zero_points(opt_wtype);
    c.mode = opt_w4a8 ? MPL_MODE_W4A8 : MPL_MODE_W4A16;
    return c;
}

/* Layer copies forced to `kernel` (a kernel or "kernel:path"; NULL = the chooser's), totalling >= the cold size. */
static int make_set(layer_set *s, const mpl_config *c, int threads, const char *kernel) {
    int64_t G = c->group_size == -1 ? 1 : c->k / c->group_size;
    const int bits = c->wtype == MPL_WTYPE_UINT8 || c->wtype == MPL_WTYPE_UINT8B128   ? 8
                     : c->wtype == MPL_WTYPE_UINT3 || c->wtype == MPL_WTYPE_UINT3B4 ? 3
                     : c->wtype == MPL_WTYPE_UINT2 || c->wtype == MPL_WTYPE_UINT2B2 ? 2
                                                                                     : 4;
    uint8_t *codes = malloc((size_t)(c->n * c->k));
    float *scales = malloc((size_t)(c->n * G) * 4);
    uint8_t *zeros = c->zero_points ? malloc((size_t)(c->n * G)) : NULL;
    if (!codes || !scales || (c->zero_points && !zeros)) return -1;
    for (int64_t i = 0; i < c->n * c->k; i += 8) {
        uint64_t r = rnd();
        for (int j = 0; j < 8 && i + j < c->n * c->k; j++) codes[i + j] = (uint8_t)((r >> (8 * j)) & ((1u << bits) - 1u));
    }
    for (int64_t i = 0; i < c->n * G; i++) scales[i] = (float)(0.001 * (1 + (double)(rnd() % 16)));
    if (zeros)
        for (int64_t i = 0; i < c->n * G; i++) zeros[i] = (uint8_t)(rnd() % (1u << bits));
    mpl_checkpoint_tensors ck;
    mpl_status st = mpl_checkpoint_encode(c, MPL_LAYOUT_CT, codes, scales, MPL_DTYPE_BF16, zeros, NULL, &ck);
    free(codes);
    free(scales);
    free(zeros);
    if (st != MPL_OK) {
        fprintf(stderr, "encode: %s\n", mpl_last_error());
        return -1;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.threads = threads;
    o.kernel = kernel;
    mpl_layer *first;
    if (mpl_layer_create(c, &ck, &o, &first) != MPL_OK) {
        fprintf(stderr, "create: %s\n", mpl_last_error());
        mpl_checkpoint_tensors_free(&ck);
        return -1;
    }
    s->wbytes = mpl_layer_weight_bytes(first);
    s->kernel = mpl_layer_kernel(first);
    s->copies = (int)ceil(opt_cold * (double)(1 << 30) / (double)s->wbytes);
    if (s->copies < 2) s->copies = 2;
    if (opt_hot) s->copies = 1;
    s->l = calloc((size_t)s->copies, sizeof *s->l);
    s->l[0] = first;
    for (int i = 1; i < s->copies; i++)
        if (mpl_layer_create(c, &ck, &o, &s->l[i]) != MPL_OK) {
            fprintf(stderr, "create copy %d: %s\n", i, mpl_last_error());
            return -1;
        }
    mpl_checkpoint_tensors_free(&ck);
    return 0;
}

static void free_set(layer_set *s) {
    for (int i = 0; i < s->copies; i++) mpl_layer_destroy(s->l[i]);
    free(s->l);
    memset(s, 0, sizeof *s);
}

/* The path an apply of m rows takes on the set's layers ("kernel:path"), else the kernel. */
static const char *path_of(const layer_set *s, int64_t m) {
    const char *p = mpl_layer_path(s->l[0], m);
    return p ? p : s->kernel;
}

/*
 * Median seconds per apply; each call on the next copy, so weights come from DRAM. With bw
 * (not NULL), every call is paired with a read of a cold piece of the 1 GiB buffer about as
 * large as the layer's weights, right before it: this machine is shared and its bandwidth
 * drifts within seconds, so each call is compared with the ceiling of its own moment.
 * *bw: median ceiling; *frac: median over pairs of (weight GB/s of the call) / (ceiling).
 */
static double time_set(layer_set *s, int64_t m, const void *x, void *y, int reps, int threads, double *bw,
                       double *frac) {
    double t[256], b[256], f[256];
    static size_t off;
    size_t piece = s->wbytes < (16u << 20) ? (16u << 20) : s->wbytes > (256u << 20) ? (256u << 20) : s->wbytes;
    if (reps > 256) reps = 256;
    for (int i = 0; i < s->copies && i < 4; i++) mpl_layer_apply(s->l[i], m, x, NULL, y); /* workspace, pool */
    for (int r = 0; r < reps; r++) {
        if (bw) {
            b[r] = read_piece(threads, off, piece);
            off += 2 * piece;
        }
        mpl_layer *l = s->l[(r + 4) % s->copies];
        double t0 = now();
        mpl_layer_apply(l, m, x, NULL, y);
        t[r] = now() - t0;
        if (bw) f[r] = (double)s->wbytes / t[r] / 1e9 / b[r];
    }
    if (bw) {
        *bw = median(b, reps);
        *frac = median(f, reps);
    }
    return median(t, reps);
}

/* ---------- dense baselines ---------- */

#ifdef MPL_BENCH_DNNL
/* oneDNN matmul x[M][K] . W[K][N] in dt (f32 or bf16), weights in oneDNN's own packed format,
 * rotated over copies totalling >= the cold size; returns the median seconds or -1. */
static double onednn_matmul(int64_t M, int64_t K, int64_t N, dnnl_data_type_t dt, int threads, int reps) {
    omp_set_num_threads(threads);
    dnnl_engine_t eng = NULL;
    dnnl_stream_t str = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t a = NULL, c = NULL, *w = NULL;
    int copies = 0;
    double med = -1;
    dnnl_memory_desc_t a_md, b_md, c_md;
    dnnl_dims_t ad = {M, K}, bd = {K, N}, cd = {M, N};
    dnnl_matmul_desc_t mmd;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) || dnnl_stream_create(&str, eng, dnnl_stream_default_flags) ||
        dnnl_memory_desc_init_by_tag(&a_md, 2, ad, dt, dnnl_ab) ||
        dnnl_memory_desc_init_by_tag(&b_md, 2, bd, dt, dnnl_format_tag_any) ||
        dnnl_memory_desc_init_by_tag(&c_md, 2, cd, dt, dnnl_ab) || dnnl_matmul_desc_init(&mmd, &a_md, &b_md, NULL, &c_md) ||
        dnnl_primitive_desc_create(&pd, &mmd, NULL, eng, NULL) || dnnl_primitive_create(&prim, pd))
        goto out;
    const dnnl_memory_desc_t *wmd = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    size_t wbytes = dnnl_memory_desc_get_size(wmd);
    copies = (int)ceil(opt_cold * (double)(1 << 30) / (double)wbytes);
    if (copies < 1) copies = 1;
    w = calloc((size_t)copies, sizeof *w);
    if (dnnl_memory_create(&a, &a_md, eng, DNNL_MEMORY_ALLOCATE) || dnnl_memory_create(&c, &c_md, eng, DNNL_MEMORY_ALLOCATE))
        goto out;
    void *ap;
    dnnl_memory_get_data_handle(a, &ap);
    memset(ap, 0x3c, dnnl_memory_desc_get_size(&a_md)); /* finite, nonzero in f32 and bf16 */
    for (int i = 0; i < copies; i++) {
        if (dnnl_memory_create(&w[i], wmd, eng, DNNL_MEMORY_ALLOCATE)) goto out;
        void *wp;
        dnnl_memory_get_data_handle(w[i], &wp);
        memset(wp, 0x3c, wbytes);
    }
    double t[256];
    if (reps > 256) reps = 256;
    for (int r = -2; r < reps; r++) {
        dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w[(r + 2) % copies]}, {DNNL_ARG_DST, c}};
        double t0 = now();
        if (dnnl_primitive_execute(prim, str, 3, args) || dnnl_stream_wait(str)) goto out;
        if (r >= 0) t[r] = now() - t0;
    }
    med = median(t, reps);
out:
    for (int i = 0; i < copies && w; i++)
        if (w[i]) dnnl_memory_destroy(w[i]);
    free(w);
    if (a) dnnl_memory_destroy(a);
    if (c) dnnl_memory_destroy(c);
    if (prim) dnnl_primitive_destroy(prim);
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (str) dnnl_stream_destroy(str);
    if (eng) dnnl_engine_destroy(eng);
    return med;
}
#endif

#ifdef MPL_BENCH_OPENBLAS
/* OpenBLAS f32: sgemv (M=1) or sgemm, W[N][K] row-major, rotated copies; median seconds. */
static double openblas_f32(int64_t M, int64_t K, int64_t N, int threads, int reps) {
    openblas_set_num_threads(threads);
    size_t wbytes = (size_t)(K * N) * 4;
    int copies = (int)ceil(opt_cold * (double)(1 << 30) / (double)wbytes);
    if (copies < 1) copies = 1;
    float **w = calloc((size_t)copies, sizeof *w);
    float *x = malloc((size_t)(M * K) * 4), *y = malloc((size_t)(M * N) * 4);
    double med = -1;
    if (!w || !x || !y) goto out;
    for (int64_t i = 0; i < M * K; i++) x[i] = frand();
    for (int i = 0; i < copies; i++) {
        w[i] = aligned_alloc(64, (wbytes + 63) / 64 * 64);
        if (!w[i]) goto out;
        for (int64_t j = 0; j < K * N; j++) w[i][j] = 0.01f * (float)((j * 7 + i) % 15 - 7);
    }
    double t[256];
    if (reps > 256) reps = 256;
    for (int r = -2; r < reps; r++) {
        const float *wr = w[(r + 2) % copies];
        double t0 = now();
        if (M == 1)
            cblas_sgemv(CblasRowMajor, CblasNoTrans, (int)N, (int)K, 1.0f, wr, (int)K, x, 1, 0.0f, y, 1);
        else
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, x, (int)K, wr, (int)K,
                        0.0f, y, (int)N);
        if (r >= 0) t[r] = now() - t0;
    }
    med = median(t, reps);
out:
    for (int i = 0; i < copies && w; i++) free(w[i]);
    free(w);
    free(x);
    free(y);
    return med;
}
#endif

/* Fewer repetitions for calls that take long (prefill of large shapes): ~2 s per measurement. */
static int reps_for(double flops, double rate_guess) {
    int r = (int)(2.0 / (flops / rate_guess));
    if (r > opt_reps) r = opt_reps;
    return r < 3 ? 3 : r;
}

static void fmt_time(char *b, size_t cap, double s) {
    if (s < 0)
        snprintf(b, cap, "—");
    else if (s < 1e-3)
        snprintf(b, cap, "%.1f µs", s * 1e6);
    else
        snprintf(b, cap, "%.2f ms", s * 1e3);
}

static void *make_x(int64_t m, int64_t k) {
    size_t es = opt_act == MPL_ACT_F32 ? 4 : 2;
    void *x = malloc((size_t)(m * k) * es);
    if (!x) return NULL;
    for (int64_t i = 0; i < m * k; i++) {
        float v = frand();
        if (opt_act == MPL_ACT_F32)
            ((float *)x)[i] = v;
        else if (opt_act == MPL_ACT_BF16)
            ((uint16_t *)x)[i] = mpl_f32_to_bf16(v);
        else
            ((uint16_t *)x)[i] = mpl_f32_to_f16(v);
    }
    return x;
}

static void settle(void) { usleep(100 * 1000); /* other pools' spinning threads go to sleep */ }

/* Runnable tasks right now (/proc/stat procs_running), this thread included; -1 if unknown. */
static int procs_running(void) {
    FILE *f = fopen("/proc/stat", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "procs_running %d", &n) == 1) break;
    if (f) fclose(f);
    return n;
}

/* --wait-quiet: wait (at most 2 minutes) until no other task has been runnable for 0.5 s.
 * Returns 1 if quiet was reached (0: the row is measured anyway, and marked). */
static int wait_quiet(void) {
    if (!opt_wait_quiet) return 1;
    for (double t0 = now(); now() - t0 < 120;) {
        int busy = 0;
        for (int i = 0; i < 25 && !busy; i++) {
            if (procs_running() > 1) busy = 1;
            usleep(20 * 1000);
        }
        if (!busy) return 1;
        usleep(1000 * 1000);
    }
    return 0;
}

static int run_table(void) {
    int64_t mmax = 1;
    for (int i = 0; i < opt_nm; i++)
        if (opt_m[i] > mmax) mmax = opt_m[i];
    printf("| shape (K x N) | M | thr | kernel | time | GB/s | %% of read BW | read BW (GB/s) | GFLOP/s | GFLOP/s/thr"
           " | oneDNN bf16 | oneDNN f32 | OpenBLAS f32 | vs best dense |\n");
    printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < opt_nshapes; si++) {
        const shape *sh = &opt_shapes[si];
        mpl_config c = make_cfg(sh->k, sh->n);
        void *x = make_x(mmax, sh->k);
        void *y = malloc((size_t)(mmax * sh->n) * 4);
        if (!x || !y) return 1;
        for (int ti = 0; ti < opt_nthreads; ti++) {
            int T = opt_threads[ti];
            layer_set s;
            if (make_set(&s, &c, T, opt_kernel)) return 1;
            for (int mi = 0; mi < opt_nm; mi++) {
                int64_t M = opt_m[mi];
                double flops = 2.0 * (double)M * (double)sh->k * (double)sh->n;
                settle();
                int quiet = wait_quiet();
                double bw, frac;
                /* Decode rows get more calls: their medians must see through the machine's noise. */
                int reps = M <= 16 ? 3 * opt_reps : reps_for(flops, 300e9 * T);
                double t = time_set(&s, M, x, y, reps, T, opt_hot ? NULL : &bw, &frac);
                double tb = -1, tf = -1, tl = -1;
                if (opt_dense) {
#ifdef MPL_BENCH_DNNL
                    settle();
                    tb = onednn_matmul(M, sh->k, sh->n, dnnl_bf16, T, reps_for(flops, 300e9 * T));
                    settle();
                    tf = onednn_matmul(M, sh->k, sh->n, dnnl_f32, T, reps_for(flops, 150e9 * T));
#endif
#ifdef MPL_BENCH_OPENBLAS
                    settle();
                    tl = openblas_f32(M, sh->k, sh->n, T, reps_for(flops, 150e9 * T));
#endif
                }
                double best = -1;
                if (tb > 0) best = tb;
                if (tf > 0 && (best < 0 || tf < best)) best = tf;
                if (tl > 0 && (best < 0 || tl < best)) best = tl;
                char ct[32], cb[32], cf[32], cl[32], cv[32];
                fmt_time(ct, sizeof ct, t);
                fmt_time(cb, sizeof cb, tb);
                fmt_time(cf, sizeof cf, tf);
                fmt_time(cl, sizeof cl, tl);
                if (best > 0)
                    snprintf(cv, sizeof cv, "%.2fx", best / t);
                else
                    snprintf(cv, sizeof cv, "—");
                double gbs = (double)s.wbytes / t / 1e9;
                char cp[16], cw[16];
                if (opt_hot) {
                    snprintf(cp, sizeof cp, "hot");
                    snprintf(cw, sizeof cw, "—");
                } else {
                    snprintf(cp, sizeof cp, "%.0f%%", 100.0 * frac);
                    snprintf(cw, sizeof cw, "%.1f", bw);
                }
                printf("| %s %lldx%lld | %lld | %d | %s%s | %s | %.1f | %s | %s | %.0f | %.0f | %s | %s | %s | %s |\n",
                       sh->name, (long long)sh->k, (long long)sh->n, (long long)M, T, path_of(&s, M), quiet ? "" : " (busy)", ct, gbs,
                       cp, cw, flops / t / 1e9, flops / t / 1e9 / T, cb, cf, cl, cv);
                fflush(stdout);
            }
            free_set(&s);
        }
        free(x);
        free(y);
    }
    return 0;
}

/* The kernel's paths (at most 8) as forceable names, by the public registry. */
static int kernel_paths(const char *kernel, char names[][64], int cap) {
    for (int i = 0; i < mpl_kernel_count(); i++) {
        mpl_kernel_info ki;
        if (mpl_kernel_get(i, &ki) != MPL_OK || strcmp(ki.name, kernel) != 0) continue;
        int n = 0;
        for (int j = 0; j < ki.paths && n < cap; j++) {
            mpl_path_info pi;
            if (mpl_path_get(i, j, &pi) == MPL_OK) snprintf(names[n++], 64, "%s", pi.name);
        }
        return n;
    }
    return 0;
}

/* Every path of the kernel forced in turn over M, cold weights: where should the default ranges switch? */
static int run_sweep(void) {
    static const int64_t ms_default[] = {1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64};
    const int64_t *ms = opt_m_given ? opt_m : ms_default;
    const size_t nms = opt_m_given ? (size_t)opt_nm : sizeof ms_default / sizeof ms_default[0];
    int64_t mmax = 1;
    for (size_t i = 0; i < nms; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
    enum { MAXP = 8 };
    for (int si = 0; si < opt_nshapes; si++) {
        const shape *sh = &opt_shapes[si];
        mpl_config c = make_cfg(sh->k, sh->n);
        const char *kernel = opt_kernel;
        if (!kernel && mpl_choose(&c, NULL, &kernel, NULL, 0, NULL) != MPL_OK) {
            fprintf(stderr, "no kernel for %s: %s\n", sh->name, mpl_last_error());
            return 1;
        }
        char names[MAXP][64];
        const char *run[MAXP];
        int np = kernel_paths(kernel, names, MAXP), nrun = 0;
        for (int p = 0; p < np; p++) { /* the paths this CPU runs for this config */
            mpl_verdict v;
            if (mpl_check(&c, NULL, names[p], &v) == MPL_OK && v.reason == MPL_REASON_OK)
                run[nrun++] = names[p];
            else
                printf("(%s not swept: %s)\n", names[p], v.message);
        }
        if (nrun == 0) {
            fprintf(stderr, "%s: no path of %s runs here\n", sh->name, kernel);
            return 1;
        }
        printf("\n| shape (K x N) | thr | M |");
        for (int p = 0; p < nrun; p++) printf(" %s |", strchr(run[p], ':') + 1);
        printf(" default | fastest |\n|---|---|---|");
        for (int p = 0; p < nrun + 2; p++) printf("---|");
        printf("\n");
        void *x = make_x(mmax, sh->k);
        void *y = malloc((size_t)(mmax * sh->n) * 4);
        if (!x || !y) return 1;
        for (int ti = 0; ti < opt_nthreads; ti++) {
            int T = opt_threads[ti];
            layer_set s[MAXP];
            for (int p = 0; p < nrun; p++)
                if (make_set(&s[p], &c, T, run[p])) return 1;
            for (size_t mi = 0; mi < nms; mi++) {
                /* The paths take turns call by call (each call on the next cold copy of its set), so
                 * they see the same moments of this shared machine. */
                double t[MAXP], tp[MAXP][64];
                int reps = opt_reps > 64 ? 64 : opt_reps, ci = 4; /* past the warm-up copies */
                wait_quiet();
                for (int p = 0; p < nrun; p++)
                    for (int i = 0; i < 4; i++) mpl_layer_apply(s[p].l[i % s[p].copies], ms[mi], x, NULL, y);
                for (int r = 0; r < reps; r++, ci++)
                    for (int p = 0; p < nrun; p++) {
                        double t0 = now();
                        mpl_layer_apply(s[p].l[ci % s[p].copies], ms[mi], x, NULL, y);
                        tp[p][r] = now() - t0;
                    }
                int best = 0;
                for (int p = 0; p < nrun; p++) {
                    t[p] = median(tp[p], reps);
                    if (t[p] < t[best]) best = p;
                }
                const char *def = NULL;
                mpl_options o;
                mpl_options_init(&o);
                o.kernel = kernel;
                if (mpl_choose_path(&c, &o, ms[mi], &def) != MPL_OK || !def) def = "(none)";
                printf("| %s %lldx%lld | %d | %lld |", sh->name, (long long)sh->k, (long long)sh->n, T,
                       (long long)ms[mi]);
                for (int p = 0; p < nrun; p++) {
                    char b[32];
                    fmt_time(b, sizeof b, t[p]);
                    printf(" %s |", b);
                }
                printf(" %s | %s |\n", strchr(def, ':') ? strchr(def, ':') + 1 : def, strchr(run[best], ':') + 1);
                fflush(stdout);
            }
            for (int p = 0; p < nrun; p++) free_set(&s[p]);
        }
        free(x);
        free(y);
    }
    return 0;
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    mpl_platform_info pi;
    mpl_platform_get(&pi);
    char isa[256];
    mpl_isa_string(pi.isa, isa, sizeof isa);
    printf("cpu: %s, %d threads; isa: %s%s%s\n", pi.cpu_model, pi.cpu_threads, isa, pi.isa_cap[0] ? "; MPL_MAX_ISA=" : "",
           pi.isa_cap);
    char weights[64];
    if (opt_hot)
        snprintf(weights, sizeof weights, "weights hot (one copy; the dense baselines' stay cold)");
    else
        snprintf(weights, sizeof weights, "weights cold (>= %.2f GiB of copies)", opt_cold);
    printf("config: %s%s, %s activations, group %lld, %s, medians of <= %d calls; "
           "dense baselines:%s%s%s\n\n",
           mpl_wtype_name(opt_wtype), mpl_wtype_zero_points(opt_wtype) ? " (random zero points)" : "", mpl_act_name(opt_act), (long long)opt_group, weights, opt_reps,
#ifdef MPL_BENCH_DNNL
           opt_dense ? " oneDNN" : "",
#else
           "",
#endif
#ifdef MPL_BENCH_OPENBLAS
           opt_dense ? " OpenBLAS" : "",
#else
           "",
#endif
           opt_dense ? "" : " off");
    g_bw_buf = aligned_alloc(64, BW_BYTES);
    if (!g_bw_buf) return 1;
    memset(g_bw_buf, 1, BW_BYTES);
    int rc = opt_sweep ? run_sweep() : run_table();
    free(g_bw_buf);
    return rc;
}
