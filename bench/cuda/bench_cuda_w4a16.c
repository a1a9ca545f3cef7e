/*
 * bench_cuda_w4a16.c -- cuda_w4a16 against cuBLAS bf16 (cublasGemmEx) and the device copy
 * bandwidth, measured in the same run.
 *
 * Every timing is a CUDA-graph replay of L calls that rotate over R copies of the weights
 * (R copies together >= 128 MB, over twice the H200's 60 MB L2, so every call reads cold
 * weights), timed with CUDA events; per-call time = median over replays / L. Activations are
 * one buffer (hot, as in inference). Our kernel runs through mpl_layer_apply_device.
 *
 *   bench_cuda_w4a16 [--m 1,16,64] [--shapes name,...] [--reps n] [--crossover] [--sweep [--sets LABEL|LABEL,LABEL,...]]
 *                    [--act f16|bf16] [--wtype uint4b8|uint8b128|uint3b4|uint2b2] [--group 128|-1] [--md file]
 *
 * Table: per shape and M, cuBLAS bf16 and ours in us, speedup, the path that ran (mpl_layer_path), and for
 * ours the bytes of an ideal kernel at the layer's width (--wtype: 4, 8, 3 or 2-bit weights + the --group f16
 * scales + x + y; 2- and 3-bit layers hold 4-bit codes, so they read more than this count) over the time as a
 * share of the copy bandwidth. --crossover times cuda_w4a16:skinny against cuda_w4a16:tc for small M;
 * --sweep every path of the table (forced by name, mpl_options.kernel) and tuning variant (split-K, through
 * mpl_cuda_w4a16_tuning_override) that applies to each M, next to cuBLAS bf16 in the same run.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda/cuda_w4a16.h" /* mpl_cuda_w4a16_tuning_override (src/, internal) */
#include "mplinear.h"

#define CK(call)                                                                                                 \
    do {                                                                                                         \
        cudaError_t e_ = (call);                                                                                 \
        if (e_ != cudaSuccess) {                                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));              \
            exit(1);                                                                                             \
        }                                                                                                        \
    } while (0)
#define CB(call)                                                                                                 \
    do {                                                                                                         \
        cublasStatus_t s_ = (call);                                                                              \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                                       \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, (int)s_);                \
            exit(1);                                                                                             \
        }                                                                                                        \
    } while (0)
#define CM(call)                                                                                                 \
    do {                                                                                                         \
        mpl_status m_ = (call);                                                                                  \
        if (m_ != MPL_OK) {                                                                                      \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #call, mpl_status_string(m_),            \
                    mpl_last_error());                                                                           \
            exit(1);                                                                                             \
        }                                                                                                        \
    } while (0)

typedef struct {
    const char *name;
    int64_t k, n;
} shape;

/* anchors.md: K = in_features, N = out_features */
static const shape shapes[] = {
    {"8B.qkv", 4096, 6144},      {"8B.o", 4096, 4096},       {"8B.gate_up", 4096, 28672},
    {"8B.down", 14336, 4096},    {"70B.qkv", 8192, 10240},   {"70B.o", 8192, 8192},
    {"70B.gate_up", 8192, 57344}, {"70B.down", 28672, 8192},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

#define ROTATE_BYTES ((size_t)128 << 20)
/* --group G: the layers' group size (default 128; -1: one group per channel, llm-compressor's W8A16 preset) */
static int64_t g_group = 128;
static int64_t groups_of(int64_t k) { return g_group == -1 ? 1 : k / g_group; }

static int g_reps = 10;
static mpl_act g_act = MPL_ACT_BF16; /* --act: the activation type of our layers (cuBLAS stays bf16) */
static int g_scales_bf16;             /* --scales bf16: group scales stored as bf16 (default f16, as GPTQ stores them) */
static cudaStream_t g_stream;
static cudaEvent_t g_e0, g_e1;

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)((rng() >> 40) * (1.0 / 16777216.0)); }

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median time (us) of one replay of a captured graph, divided by calls. */
typedef void (*issue_fn)(void *ctx, int i);
static double time_graph(issue_fn issue, void *ctx, int calls) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaStreamBeginCapture(g_stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < calls; i++) issue(ctx, i);
    CK(cudaStreamEndCapture(g_stream, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    CK(cudaGraphLaunch(exec, g_stream));
    CK(cudaGraphLaunch(exec, g_stream));
    CK(cudaStreamSynchronize(g_stream));
    float t[64];
    int reps = g_reps > 64 ? 64 : g_reps;
    for (int r = 0; r < reps; r++) {
        CK(cudaEventRecord(g_e0, g_stream));
        CK(cudaGraphLaunch(exec, g_stream));
        CK(cudaEventRecord(g_e1, g_stream));
        CK(cudaEventSynchronize(g_e1));
        CK(cudaEventElapsedTime(&t[r], g_e0, g_e1));
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_float);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    return 1000.0 * t[reps / 2] / calls;
}

/* ---------- copy bandwidth ---------- */

int bench_copy_launch(const void *src, void *dst, size_t bytes, int sms, void *stream); /* copy_kernel.cu */

typedef struct {
    void *a, *b;
    size_t bytes;
    int sms, kernel;
} copy_ctx;
static void issue_copy(void *ctx, int i) {
    copy_ctx *c = ctx;
    void *src = i & 1 ? c->b : c->a, *dst = i & 1 ? c->a : c->b;
    if (c->kernel)
        CK((cudaError_t)bench_copy_launch(src, dst, c->bytes, c->sms, g_stream));
    else
        CK(cudaMemcpyAsync(dst, src, c->bytes, cudaMemcpyDeviceToDevice, g_stream));
}
/* Bytes read + written per second (TB/s) of 1 GiB copies: the SM copy kernel and cudaMemcpy. */
static double copy_bandwidth(int sms, double *memcpy_tbs) {
    copy_ctx c = {.bytes = (size_t)1 << 30, .sms = sms, .kernel = 1};
    CK(cudaMalloc(&c.a, c.bytes));
    CK(cudaMalloc(&c.b, c.bytes));
    CK(cudaMemset(c.a, 1, c.bytes));
    CK(cudaMemset(c.b, 2, c.bytes));
    double us = time_graph(issue_copy, &c, 4);
    c.kernel = 0;
    double us_m = time_graph(issue_copy, &c, 4);
    CK(cudaFree(c.a));
    CK(cudaFree(c.b));
    *memcpy_tbs = 2.0 * (double)c.bytes / (us_m * 1e-6) / 1e12;
    return 2.0 * (double)c.bytes / (us * 1e-6) / 1e12;
}

/* ---------- cuBLAS bf16 ---------- */

typedef struct {
    cublasHandle_t h;
    void **w;
    int copies;
    const void *x;
    void *y;
    int m, n, k;
} blas_ctx;
static void issue_blas(void *ctx, int i) {
    blas_ctx *c = ctx;
    const float one = 1.0f, zero = 0.0f;
    /* row-major y[m][n] = x[m][k] W[n][k]^T  <=>  column-major y^T (n x m) = W^T' (n x k) x^T (k x m) */
    CB(cublasGemmEx(c->h, CUBLAS_OP_T, CUBLAS_OP_N, c->n, c->m, c->k, &one, c->w[i % c->copies], CUDA_R_16BF, c->k,
                    c->x, CUDA_R_16BF, c->k, &zero, c->y, CUDA_R_16BF, c->n, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT));
}

/* ---------- ours ---------- */

typedef struct {
    mpl_layer **layers;
    int copies;
    const void *x;
    void *y;
    int64_t m;
} ours_ctx;
static void issue_ours(void *ctx, int i) {
    ours_ctx *c = ctx;
    mpl_status st = mpl_layer_apply_device(c->layers[i % c->copies], c->m, c->x, NULL, c->y, g_stream);
    if (st != MPL_OK) {
        fprintf(stderr, "apply_device: %s: %s\n", mpl_status_string(st), mpl_last_error());
        exit(1);
    }
}

static int copies_for(size_t bytes) {
    size_t r = (ROTATE_BYTES + bytes - 1) / bytes;
    return r < 2 ? 2 : (int)r;
}
static int calls_for(int copies) { return copies * ((8 + copies - 1) / copies); }

/* R layers of one random checkpoint (--wtype, --group) on kernel cuda_w4a16, its path forced when path names
 * one ("cuda_w4a16:tc"; NULL: the table's choice by m). NULL when the path cannot run here (reason printed). */
static mpl_layer **make_layers(const mpl_checkpoint_tensors *ck, const mpl_config *cfg, const char *path, int *copies) {
    /* the bytes the layer holds (2- and 3-bit layers hold 4-bit codes), so R copies stay over the L2 */
    size_t bytes = (size_t)(cfg->n * cfg->k / (cfg->wtype == MPL_WTYPE_UINT8B128 ? 1 : 2) + cfg->n * groups_of(cfg->k) * 2);
    int r = copies_for(bytes);
    mpl_layer **l = calloc((size_t)r, sizeof *l);
    if (!l) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    o.kernel = path ? path : "cuda_w4a16";
    for (int i = 0; i < r; i++) {
        mpl_status st = mpl_layer_create(cfg, ck, &o, &l[i]);
        if (st == MPL_OK) continue;
        if (i > 0 || !path) {
            fprintf(stderr, "mpl_layer_create(%s): %s: %s\n", o.kernel, mpl_status_string(st), mpl_last_error());
            exit(1);
        }
        printf("(%s not run: %s)\n", path, mpl_last_error());
        free(l);
        return NULL;
    }
    *copies = r;
    return l;
}
static void free_layers(mpl_layer **l, int r) {
    for (int i = 0; i < r; i++) mpl_layer_destroy(l[i]);
    free(l);
}

/* --sweep: the path forced (NULL: the table's choice), the split-K factor (0: the launchers' rules) and the
 * M range each set applies to. The measured-dead variants (the stream path, 128 x 128 tc tiles, four-warpgroup
 * and rounded-weight wg) are gone with their code (git tag exp/cuda-stream-v7, bench/cuda/NOTES.md v6-v7). */
typedef struct {
    const char *label, *path;
    int ksplit;
    int64_t m_lo, m_hi;
    int skinny_nw; /* 0: the launcher's rule */
    int shared_x;  /* w4a16_gemv's block-shared x (m 9..16, thirds 2..16): 0 the rule, 1 forced, -1 each warp its own x */
} sweep_set;
static const sweep_set sweep_sets[] = {
    {"default", NULL, 0, 1, 1 << 30, 0, 0},
    {"wg", "cuda_w4a16:wg", 0, 1, 1 << 30, 0, 0},
    {"wg-streamk", "cuda_w4a16:wg-streamk", 0, 1, 1 << 30, 0, 0},
    {"wg ksplit1", "cuda_w4a16:wg", 1, 33, 512, 0, 0},
    {"wg ksplit2", "cuda_w4a16:wg", 2, 1, 512, 0, 0},
    {"wg ksplit4", "cuda_w4a16:wg", 4, 1, 512, 0, 0},
    {"wg ksplit8", "cuda_w4a16:wg", 8, 1, 512, 0, 0},
    {"skinny", "cuda_w4a16:skinny", 0, 1, 16, 0, 0},
    {"skinny nw2", "cuda_w4a16:skinny", 0, 1, 16, 2, 0},
    {"skinny nw4", "cuda_w4a16:skinny", 0, 1, 16, 4, 0},
    {"skinny ksplit1", "cuda_w4a16:skinny", 1, 1, 16, 0, 0},
    {"skinny ksplit2", "cuda_w4a16:skinny", 2, 1, 16, 0, 0},
    {"skinny ksplit3", "cuda_w4a16:skinny", 3, 1, 16, 0, 0},
    {"skinny ksplit4", "cuda_w4a16:skinny", 4, 1, 16, 0, 0},
    {"skinny nw2 ksplit1", "cuda_w4a16:skinny", 1, 1, 16, 2, 0},
    {"skinny nw2 ksplit2", "cuda_w4a16:skinny", 2, 1, 16, 2, 0},
    {"skinny nw2 ksplit4", "cuda_w4a16:skinny", 4, 1, 16, 2, 0},
    {"skinny sx", "cuda_w4a16:skinny", 0, 2, 16, 0, 1},
    {"skinny ox", "cuda_w4a16:skinny", 0, 2, 16, 0, -1},
    {"skinny sx ksplit1", "cuda_w4a16:skinny", 1, 2, 16, 0, 1},
    {"skinny sx ksplit2", "cuda_w4a16:skinny", 2, 2, 16, 0, 1},
    {"skinny sx ksplit4", "cuda_w4a16:skinny", 4, 2, 16, 0, 1},
    {"skinny sx ksplit8", "cuda_w4a16:skinny", 8, 2, 16, 0, 1},
    {"skinny-rounded", "cuda_w4a16:skinny-rounded", 0, 1, 16, 0, 0},
    {"skinny-rounded ksplit2", "cuda_w4a16:skinny-rounded", 2, 1, 16, 0, 0},
    {"skinny-rounded ksplit4", "cuda_w4a16:skinny-rounded", 4, 1, 16, 0, 0},
    {"skinny-rounded nw2", "cuda_w4a16:skinny-rounded", 0, 1, 16, 2, 0},
    {"skinny-rounded nw2 ksplit2", "cuda_w4a16:skinny-rounded", 2, 1, 16, 2, 0},
    {"tc", "cuda_w4a16:tc", 0, 9, 1 << 30, 0, 0},
    {"dq", "cuda_w4a16:dq", 0, 64, 1 << 30, 0, 0},
};
#define NSWEEP ((int)(sizeof sweep_sets / sizeof sweep_sets[0]))
/* the paths the sets force, one set of layers each (index 0: the default choice) */
static const char *const sweep_paths[] = {NULL,           "cuda_w4a16:wg", "cuda_w4a16:wg-streamk", "cuda_w4a16:skinny",
                                          "cuda_w4a16:skinny-rounded", "cuda_w4a16:tc", "cuda_w4a16:dq"};
#define NSWEEP_PATHS ((int)(sizeof sweep_paths / sizeof sweep_paths[0]))
static int sweep_path_index(const char *path) {
    for (int i = 1; i < NSWEEP_PATHS; i++)
        if (path && !strcmp(path, sweep_paths[i])) return i;
    return 0;
}
/* --sets S: the sets whose label contains S, or with a comma in S, those whose label is one of its items */
static int set_selected(const char *label, const char *sets) {
    if (!sets || !strcmp(label, "default")) return 1;
    if (!strchr(sets, ',')) return strstr(label, sets) != NULL;
    const size_t n = strlen(label);
    for (const char *p = sets; *p;) {
        const char *e = strchr(p, ',');
        const size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && !strncmp(p, label, n)) return 1;
        p = e ? e + 1 : p + len;
    }
    return 0;
}
static mpl_cuda_w4a16_tuning g_tuning; /* what the sweep's applies read (mpl_cuda_w4a16_tuning_override) */

/* --wtype: uint4b8 (default), uint8b128, uint3b4 or uint2b2: bits per weight */
static int g_bits = 4;

/* A random layer (--wtype, --group; shapes' k divide by 128) written straight into the compressed-tensors layout
 * (weight_packed [N][K*bits/32] int32, weight_scale [N][groups] f16): no encoding pass over 470M codes. */
static void make_checkpoint(const shape *s, mpl_config *cfg, mpl_checkpoint_tensors *ck) {
    mpl_config_init(cfg, s->k, s->n);
    cfg->group_size = g_group;
    cfg->act = g_act;
    cfg->wtype = g_bits == 8 ? MPL_WTYPE_UINT8B128 : g_bits == 3 ? MPL_WTYPE_UINT3B4 : g_bits == 2 ? MPL_WTYPE_UINT2B2
                                                                                    : MPL_WTYPE_UINT4B8;
    memset(ck, 0, sizeof *ck);
    size_t words = (size_t)(s->n * s->k * g_bits / 32), ng = (size_t)(s->n * groups_of(s->k));
    uint32_t *w = malloc(words * 4);
    uint16_t *sc = malloc(ng * 2);
    if (!w || !sc) exit(1);
    for (size_t i = 0; i < words; i++) w[i] = (uint32_t)(rng() >> 17);
    for (size_t i = 0; i < ng; i++) {
        float v = frand(0.002f, 0.02f);
        sc[i] = g_scales_bf16 ? mpl_f32_to_bf16(v) : mpl_f32_to_f16(v);
    }
    ck->layout = MPL_LAYOUT_CT;
    ck->weight = (mpl_tensor){.data = w, .dtype = MPL_DTYPE_I32, .ndim = 2, .shape = {s->n, s->k * g_bits / 32}};
    ck->scales = (mpl_tensor){.data = sc, .dtype = g_scales_bf16 ? MPL_DTYPE_BF16 : MPL_DTYPE_F16, .ndim = 2,
                              .shape = {s->n, groups_of(s->k)}};
}

/* Random bf16 in [-1, 1): 16M values made on the host, tiled over the buffer on the device. */
static void fill_bf16(void *dev, size_t count) {
    static uint16_t *h;
    const size_t chunk = (size_t)1 << 24;
    if (!h) {
        h = malloc(chunk * 2);
        for (size_t i = 0; i < chunk; i++) h[i] = mpl_f32_to_bf16(frand(-1.0f, 1.0f));
    }
    for (size_t at = 0; at < count; at += chunk) {
        size_t c = count - at < chunk ? count - at : chunk;
        CK(cudaMemcpy((uint16_t *)dev + at, h, c * 2, cudaMemcpyHostToDevice));
    }
}

/* cuBLAS's weights: enough identical copies of one random bf16 matrix of n elements to rotate over. */
static void **bf16_copies(size_t n, int *count) {
    size_t bytes = n * 2;
    int rb = copies_for(bytes);
    void **wb = calloc((size_t)rb, sizeof *wb);
    if (!wb) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (int i = 0; i < rb; i++) {
        CK(cudaMalloc(&wb[i], bytes));
        if (i == 0)
            fill_bf16(wb[0], n);
        else
            CK(cudaMemcpy(wb[i], wb[0], bytes, cudaMemcpyDeviceToDevice));
    }
    *count = rb;
    return wb;
}
static void free_copies(void **wb, int count) {
    for (int i = 0; i < count; i++) CK(cudaFree(wb[i]));
    free(wb);
}

static double ideal_bytes(const shape *s, int64_t m) {
    return (double)s->n * (double)s->k * g_bits / 8 + (double)s->n * (double)groups_of(s->k) * 2 + (double)m * (double)s->k * 2 +
           (double)m * (double)s->n * 2;
}

static int parse_list(const char *s, int64_t *out, int cap) {
    int n = 0;
    while (*s && n < cap) {
        out[n++] = strtoll(s, (char **)&s, 10);
        if (*s == ',') s++;
    }
    return n;
}

static int shape_selected(const char *list, const char *name) {
    if (!list) return 1;
    const char *p = strstr(list, name);
    size_t l = strlen(name);
    return p && (p == list || p[-1] == ',') && (p[l] == 0 || p[l] == ',');
}

int main(int argc, char **argv) {
    int64_t ms[16] = {1, 16, 64, 256, 1024, 4096};
    int nm = 6, crossover = 0, sweep = 0;
    const char *sets = NULL; /* --sweep --sets LABEL: the sets whose label contains LABEL, or LABEL,LABEL,...: those (and default) */
    const char *only = NULL, *md_path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--m") && i + 1 < argc)
            nm = parse_list(argv[++i], ms, 16);
        else if (!strcmp(argv[i], "--shapes") && i + 1 < argc)
            only = argv[++i];
        else if (!strcmp(argv[i], "--act") && i + 1 < argc) /* our activations (x: the same random bits) */
            g_act = !strcmp(argv[++i], "f16") ? MPL_ACT_F16 : MPL_ACT_BF16;
        else if (!strcmp(argv[i], "--scales") && i + 1 < argc) /* scale dtype of the checkpoint */
            g_scales_bf16 = !strcmp(argv[++i], "bf16");
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            g_reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--crossover"))
            crossover = 1;
        else if (!strcmp(argv[i], "--sets") && i + 1 < argc)
            sets = argv[++i];
        else if (!strcmp(argv[i], "--sweep"))
            sweep = 1;
        else if (!strcmp(argv[i], "--md") && i + 1 < argc)
            md_path = argv[++i];
        else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
            g_group = atoll(argv[++i]);
            if (g_group != -1 && (g_group < 16 || g_group % 16)) {
                fprintf(stderr, "--group %lld: -1 or a multiple of 16\n", (long long)g_group);
                return 2;
            }
        } else if (!strcmp(argv[i], "--wtype") && i + 1 < argc) { /* uint4b8, uint8b128, uint3b4, uint2b2 (random codes) */
            const char *t = argv[++i];
            g_bits = !strcmp(t, "uint8b128") ? 8 : !strcmp(t, "uint3b4") ? 3 : !strcmp(t, "uint2b2") ? 2 : 4;
        }
        else {
            fprintf(stderr, "usage: %s [--m 1,16,...] [--shapes 8B.qkv,...] [--reps n] [--crossover] [--sweep [--sets LABEL]] "
                    "[--act f16|bf16] [--wtype uint4b8|uint8b128|uint3b4|uint2b2] [--group G|-1] [--md file]\n",
                    argv[0]);
            return 2;
        }
    }
    struct cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    CK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
    CK(cudaEventCreate(&g_e0));
    CK(cudaEventCreate(&g_e1));
    double bw_memcpy, bw = copy_bandwidth(prop.multiProcessorCount, &bw_memcpy);
    printf("device: %s, %d SMs, L2 %d MB; copy bandwidth (read + write, 1 GiB): kernel %.2f TB/s, cudaMemcpy %.2f "
           "TB/s; our activations %s\n",
           prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, bw, bw_memcpy, g_act == MPL_ACT_F16 ? "f16" : "bf16");
    if (bw_memcpy > bw) bw = bw_memcpy;
    FILE *md = md_path ? fopen(md_path, "w") : NULL;
    if (md) {
        fprintf(md, "device: %s, %d SMs; copy bandwidth (read + write, 1 GiB, same run): %.2f TB/s (SM copy kernel; "
                "cudaMemcpy %.2f TB/s)\n\n",
                prop.name, prop.multiProcessorCount, bw, bw_memcpy);
        fprintf(md, "| layer (K x N) | M | cuBLAS bf16 us | cuda_w4a16 us | path | speedup | ours %% of copy BW | ours TFLOP/s |\n");
        fprintf(md, "|---|---|---|---|---|---|---|---|\n");
    }
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, g_stream));
    void *blas_ws;
    size_t blas_ws_bytes = (size_t)64 << 20;
    CK(cudaMalloc(&blas_ws, blas_ws_bytes));
    CB(cublasSetWorkspace(h, blas_ws, blas_ws_bytes));

    printf("%-12s %6s %11s %11s %-18s %8s %9s %9s %9s\n", "layer", "M", "cuBLAS us", "ours us", "path", "speedup",
           "ours TB/s", "% copyBW", "TFLOP/s");
    for (int si = 0; si < NSHAPES; si++) {
        const shape *s = &shapes[si];
        if (!shape_selected(only, s->name)) continue;
        int64_t mmax = 0;
        for (int i = 0; i < nm; i++) mmax = ms[i] > mmax ? ms[i] : mmax;
        mpl_config cfg;
        mpl_checkpoint_tensors ck;
        make_checkpoint(s, &cfg, &ck);
        void *dx, *dy;
        CK(cudaMalloc(&dx, (size_t)(mmax * s->k) * 2));
        CK(cudaMalloc(&dy, (size_t)(mmax * s->n) * 2));
        fill_bf16(dx, (size_t)(mmax * s->k));
        if (sweep) {
            /* one set of layers per path the sets force, made on first use; the tuning changes between sets */
            mpl_layer **lsets[NSWEEP_PATHS] = {NULL};
            int rsets[NSWEEP_PATHS] = {0}, tried[NSWEEP_PATHS] = {0};
            int rb;
            void **wb = bf16_copies((size_t)(s->n * s->k), &rb);
            mpl_cuda_w4a16_tuning_override(&g_tuning);
            for (int i = 0; i < nm; i++) {
                int64_t m = ms[i];
                blas_ctx bc = {h, wb, rb, dx, dy, (int)m, (int)s->n, (int)s->k};
                issue_blas(&bc, 0);
                CK(cudaStreamSynchronize(g_stream));
                double us_b = time_graph(issue_blas, &bc, calls_for(rb));
                printf("sweep %-12s M=%-5lld %-26s %10.2f us\n", s->name, (long long)m, "cuBLAS bf16", us_b);
                for (int v = 0; v < NSWEEP; v++) {
                    if (m < sweep_sets[v].m_lo || m > sweep_sets[v].m_hi) continue;
                    if (!set_selected(sweep_sets[v].label, sets)) continue;
                    const int pi = sweep_path_index(sweep_sets[v].path);
                    if (!tried[pi]) lsets[pi] = make_layers(&ck, &cfg, sweep_paths[pi], &rsets[pi]), tried[pi] = 1;
                    if (!lsets[pi]) continue;
                    g_tuning = mpl_cuda_w4a16_tuning_default;
                    g_tuning.ksplit = sweep_sets[v].ksplit;
                    g_tuning.skinny_nw = sweep_sets[v].skinny_nw;
                    g_tuning.skinny_shared_x = sweep_sets[v].shared_x;
                    ours_ctx oc = {lsets[pi], rsets[pi], dx, dy, m};
                    issue_ours(&oc, 0);
                    CK(cudaStreamSynchronize(g_stream));
                    double us = time_graph(issue_ours, &oc, calls_for(rsets[pi]));
                    double tbs = ideal_bytes(s, m) / (us * 1e-6) / 1e12;
                    const char *ran = mpl_layer_path(lsets[pi][0], m);
                    printf("sweep %-12s M=%-5lld %-26s %10.2f us  %5.2fx cuBLAS  %5.1f%% copyBW  %6.1f TFLOP/s  (%s)\n",
                           s->name, (long long)m, sweep_sets[v].label, us, us_b / us, 100.0 * tbs / bw,
                           2.0 * (double)m * (double)s->n * (double)s->k / (us * 1e-6) / 1e12, ran ? ran : "?");
                    if (md)
                        fprintf(md, "| sweep %s | %lld | %s | %.1f | %s | %.2fx | %.1f%% | |\n", s->name, (long long)m,
                                sweep_sets[v].label, us, ran ? ran : "?", us_b / us, 100.0 * tbs / bw);
                    fflush(stdout);
                }
                g_tuning = mpl_cuda_w4a16_tuning_default;
            }
            mpl_cuda_w4a16_tuning_override(NULL);
            free_copies(wb, rb);
            for (int pi = 0; pi < NSWEEP_PATHS; pi++)
                if (lsets[pi]) free_layers(lsets[pi], rsets[pi]);
        } else if (crossover) {
            int rs, rt;
            mpl_layer **ls = make_layers(&ck, &cfg, "cuda_w4a16:skinny", &rs);
            mpl_layer **lt = make_layers(&ck, &cfg, "cuda_w4a16:tc", &rt);
            if (!ls || !lt) exit(1);
            for (int i = 0; i < nm; i++) {
                int64_t m = ms[i];
                ours_ctx cs = {ls, rs, dx, dy, m}, ct = {lt, rt, dx, dy, m};
                issue_ours(&cs, 0), issue_ours(&ct, 0);
                CK(cudaStreamSynchronize(g_stream));
                double us_s = m <= 16 ? time_graph(issue_ours, &cs, calls_for(rs)) : NAN;
                double us_t = time_graph(issue_ours, &ct, calls_for(rt));
                printf("crossover %-12s M=%-5lld skinny %9.2f us   tc %9.2f us\n", s->name, (long long)m, us_s, us_t);
                if (md) fprintf(md, "| crossover %s | %lld | skinny %.2f | tc %.2f | | | |\n", s->name, (long long)m, us_s, us_t);
            }
            free_layers(ls, rs);
            free_layers(lt, rt);
        } else {
            int r;
            mpl_layer **layers = make_layers(&ck, &cfg, NULL, &r);
            int rb;
            void **wb = bf16_copies((size_t)(s->n * s->k), &rb);
            for (int i = 0; i < nm; i++) {
                int64_t m = ms[i];
                const char *ran = mpl_layer_path(layers[0], m);
                blas_ctx bc = {h, wb, rb, dx, dy, (int)m, (int)s->n, (int)s->k};
                ours_ctx oc = {layers, r, dx, dy, m};
                issue_blas(&bc, 0);
                issue_ours(&oc, 0);
                CK(cudaStreamSynchronize(g_stream));
                double us_b = time_graph(issue_blas, &bc, calls_for(rb));
                double us_o = time_graph(issue_ours, &oc, calls_for(r));
                double tbs = ideal_bytes(s, m) / (us_o * 1e-6) / 1e12;
                double tflops = 2.0 * (double)m * (double)s->n * (double)s->k / (us_o * 1e-6) / 1e12;
                printf("%-12s %6lld %11.2f %11.2f %-18s %8.2f %9.2f %8.1f%% %9.1f\n", s->name, (long long)m, us_b, us_o,
                       ran ? ran : "?", us_b / us_o, tbs, 100.0 * tbs / bw, tflops);
                if (md)
                    fprintf(md, "| %s (%lldx%lld) | %lld | %.1f | %.1f | %s | %.2fx | %.1f%% | %.1f |\n", s->name,
                            (long long)s->k, (long long)s->n, (long long)m, us_b, us_o, ran ? ran : "?", us_b / us_o,
                            100.0 * tbs / bw, tflops);
                fflush(stdout);
            }
            free_copies(wb, rb);
            free_layers(layers, r);
        }
        CK(cudaFree(dx));
        CK(cudaFree(dy));
        mpl_checkpoint_tensors_free(&ck);
    }
    if (md) fclose(md);
    CK(cudaFree(blas_ws));
    cublasDestroy(h);
    return 0;
}
