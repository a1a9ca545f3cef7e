/*
 * cuda_w4a16.c -- the descriptor of kernel cuda_w4a16: can_implement, pack (host packing,
 * one device copy), apply on device pointers (asynchronous, on the caller's stream) or on
 * host pointers (synchronous copies through a stream-ordered pool), destroy.
 *
 * Paths (w4a16_launch.h): the skinny kernel for m <= skinny_max_m (decode; the persistent bulk-copy "stream"
 * kernel, w4a16_stream.cu, is an alternative by knob, measured no faster: NOTES.md v7); above it, on compute
 * capability 9.0, the warpgroup kernel ("wg", wgmma, w4a16_wg.cu); elsewhere the mma.sync tensor-core
 * kernel ("tc") and for large m the dequantizing path ("dq"): slabs of rows of the weights expanded
 * to 16-bit (scale applied) in a bounded scratch buffer, each multiplied by cuBLAS (cublasGemmEx,
 * fp32 accumulation). Environment knobs, read when a layer is created:
 *   MPL_CUDA_W4A16_PATH=auto|skinny|stream|tc|dq|wg  force a path (skinny and stream only for m <= 16;
 *                                        wg needs compute capability 9.0, stream 9.0+)
 *   MPL_CUDA_W4A16_SKINNY_MAX_M=n        switch point: skinny for m <= n (default: mpl_cw4_default_path)
 *   MPL_CUDA_W4A16_DQ_MIN_M=n            dq for m >= n (default: mpl_cw4_dq_by_default)
 *   MPL_CUDA_W4A16_DQ_SLAB_KB=n          dq scratch per slab buffer in KiB (default: by m, dq_slab_rows)
 *   MPL_CUDA_W4A16_DQ_OVERLAP=0|1        dq: dequantize the next slab on a side stream while cuBLAS
 *                                        multiplies this one (two slab buffers; default 1)
 *   MPL_CUDA_W4A16_KSPLIT=n              force the split-K factor (1..8; clusters need sm_90; stream: 1, 2, 4
 *                                        or 8 where its shared memory allows)
 *   MPL_CUDA_W4A16_TC_VARIANT=0..3       tensor-core tile shape (w4a16_launch.h)
 *   MPL_CUDA_W4A16_SKINNY_NW=0|2|4       skinny row tiles per warp (0: by layer width)
 *   MPL_CUDA_W4A16_STREAM_NR=0|1|2|4     stream row tiles per row group (0: by the plan's cost)
 *   MPL_CUDA_W4A16_WG_EXP=bits           wg path experiments (w4a16_launch.h; benchmarks only)
 * Every CUDA error becomes MPL_ERR_CUDA with CUDA's name and message (cuBLAS: its status string);
 * nothing aborts.
 */
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../layouts/cuda_w4a16.h"
#include "../kernels.h"
#include "w4a16_launch.h"

/* src/platform/cuda_rt.c (declared here as in cpu.c: internal.h has no CUDA section). */
int mpl_cuda_query(int *devices, int *cc, char *name, size_t name_cap, char *note, size_t note_cap);

enum {
    PATH_AUTO = MPL_CW4_PATH_AUTO,
    PATH_SKINNY = MPL_CW4_PATH_SKINNY,
    PATH_TC = MPL_CW4_PATH_TC,
    PATH_DQ = MPL_CW4_PATH_DQ,
    PATH_WG = MPL_CW4_PATH_WG,
    PATH_STREAM = MPL_CW4_PATH_STREAM
};

/* Environment knobs (file comment). */
typedef struct cw4_knobs {
    int path, skinny_max_m, ksplit, tc_variant, skinny_nw, stream_nr, wg_exp;
    int dq_min_m, dq_overlap; /* dq_min_m < 0: mpl_cw4_dq_by_default */
    size_t dq_slab_bytes;
} cw4_knobs;

typedef struct cw4_packed {
    mpl_config cfg;
    mpl_cw4_layout meta; /* sizes and format; its host pointers are NULL */
    int device, cc, sms;
    void *dbuf; /* one allocation: qweight | scales | scales_lo | zeros | perm */
    const uint32_t *qweight;
    const uint16_t *scales, *scales_lo;
    const uint8_t *zeros;
    const int32_t *perm;
    size_t held_bytes;      /* qweight + scales + zeros */
    cudaMemPool_t pool;     /* stream-ordered scratch: act-order x, host-path staging */
    cw4_knobs knobs;
    unsigned char wg_map[MPL_CW4_WG_MAP_BYTES]; /* the wg path's weight tensor map (cc 9.0) */
    int wg_ok;                                  /* wg_map encoded: the wg path can run */
    int live_knobs; /* MPL_CUDA_W4A16_LIVE_KNOBS=1 at creation: re-read the knobs at every apply (benchmarks) */
} cw4_packed;

static mpl_status cuda_fail(cudaError_t e, const char *what) {
    mpl_status st = mpl_set_error(MPL_ERR_CUDA, "cuda_w4a16: %s: %s: %s", what, cudaGetErrorName(e),
                                  cudaGetErrorString(e));
    return st;
}

static mpl_reason cw4_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p; /* the CPU platform does not describe CUDA devices: ask the runtime (cuda_rt.c) */
    if (c->mode != MPL_MODE_W4A16)
        return mpl_refuse(msg, cap, MPL_REASON_MODE,
                          "mode W4A8: cuda_w4a16 runs W4A16 only (activations used as given, not quantized)");
    if (c->wtype != MPL_WTYPE_UINT4B8 && c->wtype != MPL_WTYPE_UINT4)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                          "weight type %s: cuda_w4a16 takes uint4b8, or uint4 with zero points (4-bit codes "
                          "with an unsigned bias)",
                          mpl_wtype_name(c->wtype));
    if (c->act != MPL_ACT_F16 && c->act != MPL_ACT_BF16)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE,
                          "activation type %s: cuda_w4a16 takes f16 or bf16 (the tensor cores' 16-bit inputs)",
                          mpl_act_name(c->act));
    if (c->k % 8 != 0 || c->n % 8 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld, n = %lld: both must be multiples of 8 (16-byte rows of x and y)",
                          (long long)c->k, (long long)c->n);
    if (c->group_size != -1 && c->group_size % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 16 (each k16 MMA step lies in one group)",
                          (long long)c->group_size);
    int devices = 0, cc = 0;
    char name[64], note[128];
    mpl_cuda_query(&devices, &cc, name, sizeof name, note, sizeof note);
    if (devices == 0) return mpl_refuse(msg, cap, MPL_REASON_DEVICE, "%s", note);
    if (cc < 80)
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE,
                          "device 0 (%s) has compute capability %d.%d: cuda_w4a16 needs 8.0 or newer "
                          "(bf16 mma.sync, cp.async)",
                          name, cc / 10, cc % 10);
    return MPL_REASON_OK;
}

static void cw4_destroy(void *pp) {
    cw4_packed *p = pp;
    if (!p) return;
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != p->device) cudaSetDevice(p->device);
    if (p->dbuf) cudaFree(p->dbuf); /* synchronizes: no kernel still reads the weights */
    if (p->pool) cudaMemPoolDestroy(p->pool);
    if (cur >= 0 && cur != p->device) cudaSetDevice(cur);
    (void)cudaGetLastError();
    free(p);
}

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    if (!v || !*v) return fallback;
    char *end;
    long r = strtol(v, &end, 10);
    return (*end || r < 0 || r > 1 << 20) ? fallback : (int)r;
}

static void read_knobs(cw4_knobs *k) {
    const char *path = getenv("MPL_CUDA_W4A16_PATH");
    k->path = !path                     ? PATH_AUTO
              : !strcmp(path, "skinny") ? PATH_SKINNY
              : !strcmp(path, "stream") ? PATH_STREAM
              : !strcmp(path, "tc")     ? PATH_TC
              : !strcmp(path, "dq")     ? PATH_DQ
              : !strcmp(path, "wg")     ? PATH_WG
                                        : PATH_AUTO;
    k->skinny_max_m = env_int("MPL_CUDA_W4A16_SKINNY_MAX_M", -1);
    k->ksplit = env_int("MPL_CUDA_W4A16_KSPLIT", 0);
    k->tc_variant = env_int("MPL_CUDA_W4A16_TC_VARIANT", -1); /* -1: by m (w4a16_tc.cuh) */
    k->skinny_nw = env_int("MPL_CUDA_W4A16_SKINNY_NW", 0);
    k->stream_nr = env_int("MPL_CUDA_W4A16_STREAM_NR", 0);
    k->wg_exp = env_int("MPL_CUDA_W4A16_WG_EXP", 0);
    k->dq_min_m = env_int("MPL_CUDA_W4A16_DQ_MIN_M", -1);
    k->dq_overlap = env_int("MPL_CUDA_W4A16_DQ_OVERLAP", 1) != 0;
    k->dq_slab_bytes = (size_t)env_int("MPL_CUDA_W4A16_DQ_SLAB_KB", 0) << 10; /* 0: by m (dq_slab_rows) */
}

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

static mpl_status cw4_pack(const mpl_config *c, const mpl_canonical *w, void **out) {
    *out = NULL;
    cw4_packed *p = calloc(1, sizeof *p);
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "cuda_w4a16: out of memory");
    p->cfg = *c;
    cudaError_t e = cudaGetDevice(&p->device);
    int major = 0, minor = 0, pools = 0;
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, p->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, p->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&p->sms, cudaDevAttrMultiProcessorCount, p->device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, p->device);
    if (e != cudaSuccess) {
        free(p);
        return cuda_fail(e, "querying the current device");
    }
    p->cc = major * 10 + minor;
    if (p->cc < 80 || !pools) {
        free(p);
        return mpl_set_error(MPL_ERR_NO_HARDWARE,
                             "cuda_w4a16: device %d has compute capability %d.%d%s: needs 8.0 or newer with "
                             "memory pools",
                             p->device, major, minor, pools ? "" : " and no memory pools");
    }
    mpl_cw4_layout host;
    mpl_status st = mpl_cw4_pack(c, w, &host);
    if (st != MPL_OK) {
        free(p);
        return st;
    }
    p->meta = host;
    p->meta.qweight = NULL, p->meta.scales = p->meta.scales_lo = NULL, p->meta.zeros = NULL, p->meta.perm = NULL;
    size_t bq = mpl_cw4_qweight_bytes(&host), plane = (size_t)host.groups * (size_t)host.n_pad;
    size_t bs = plane * 2, bl = host.scales_lo ? plane * 2 : 0, bz = host.zeros ? plane : 0;
    size_t bp = host.perm ? (size_t)host.k * 4 : 0;
    size_t oq = 0, os = align256(oq + bq), ol = align256(os + bs), oz = align256(ol + bl), op = align256(oz + bz);
    size_t total = align256(op + bp);
    p->held_bytes = bq + bs + bl + bz;
    e = cudaMalloc(&p->dbuf, total);
    if (e != cudaSuccess) {
        p->dbuf = NULL;
        mpl_cw4_layout_free(&host);
        cw4_destroy(p);
        return cuda_fail(e, "allocating the packed weights on the device");
    }
    char *d = p->dbuf;
    p->qweight = (const uint32_t *)(d + oq);
    p->scales = (const uint16_t *)(d + os);
    p->scales_lo = bl ? (const uint16_t *)(d + ol) : NULL;
    p->zeros = bz ? (const uint8_t *)(d + oz) : NULL;
    p->perm = bp ? (const int32_t *)(d + op) : NULL;
    e = cudaMemcpy(d + oq, host.qweight, bq, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(d + os, host.scales, bs, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && bl) e = cudaMemcpy(d + ol, host.scales_lo, bl, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && bz) e = cudaMemcpy(d + oz, host.zeros, bz, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && bp) e = cudaMemcpy(d + op, host.perm, bp, cudaMemcpyHostToDevice);
    mpl_cw4_layout_free(&host);
    if (e != cudaSuccess) {
        cw4_destroy(p);
        return cuda_fail(e, "copying the packed weights to the device");
    }
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = p->device;
    e = cudaMemPoolCreate(&p->pool, &props);
    if (e == cudaSuccess) {
        /* Keep freed scratch in the pool: after the first call of a size, apply allocates nothing. */
        uint64_t keep = UINT64_MAX;
        e = cudaMemPoolSetAttribute(p->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    } else {
        p->pool = NULL;
    }
    if (e != cudaSuccess) {
        cw4_destroy(p);
        return cuda_fail(e, "creating the scratch memory pool");
    }
    p->wg_ok = p->cc == 90 && mpl_cw4_wg_weight_map(p->qweight, (int)p->meta.k_pad, (int)p->meta.n_pad, p->wg_map) == 0;
    read_knobs(&p->knobs);
    p->live_knobs = env_int("MPL_CUDA_W4A16_LIVE_KNOBS", 0) != 0;
    *out = p;
    return MPL_OK;
}

static size_t cw4_workspace_size(const void *pp, int64_t m, int threads) {
    (void)pp, (void)m, (void)threads;
    return 0; /* device scratch comes from the layer's stream-ordered pool */
}

static size_t cw4_weight_bytes(const void *pp) { return ((const cw4_packed *)pp)->held_bytes; }

/* ---------- dequantizing path: slabs + cuBLAS ---------- */

/*
 * Process-wide, per device: the cuBLAS handle, the scratch pool (stream-ordered, shared by every
 * layer, so the scratch is bounded by what concurrent calls use, not by the layer count), the side
 * stream and events of the overlap. Created on first use, kept for the process; one mutex serializes
 * issuing dq calls (the handle's stream and workspace, and the events, are per call state).
 */
#define CW4_MAX_DEV 64
/* cuBLAS workspace: fixed size, so cuBLAS's kernel choice (and so the bits) does not vary by call */
#define CW4_BLAS_WS ((size_t)32 << 20)
typedef struct cw4_blas {
    int ready;
    cublasHandle_t h;
    cudaMemPool_t pool;
    cudaStream_t side;
    cudaEvent_t fork, deq[2], gemm[2];
} cw4_blas;
static cw4_blas g_blas[CW4_MAX_DEV];
static pthread_mutex_t g_blas_mu = PTHREAD_MUTEX_INITIALIZER;

static mpl_status blas_fail(cublasStatus_t s, const char *what) {
    return mpl_set_error(MPL_ERR_CUDA, "cuda_w4a16: %s: cuBLAS status %d: %s", what, (int)s, cublasGetStatusString(s));
}

/* Called with g_blas_mu held. */
static mpl_status blas_init(int dev) {
    cw4_blas *b = &g_blas[dev];
    if (b->ready) return MPL_OK;
    cublasStatus_t bs = cublasCreate(&b->h);
    if (bs != CUBLAS_STATUS_SUCCESS) return blas_fail(bs, "cublasCreate");
    /* fp32 sums throughout (no reduced-precision split-K reductions): the tolerance derivation relies on it */
    bs = cublasSetMathMode(b->h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    if (bs != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(b->h);
        return blas_fail(bs, "cublasSetMathMode");
    }
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    uint64_t keep = UINT64_MAX;
    cudaError_t e = cudaMemPoolCreate(&b->pool, &props);
    if (e == cudaSuccess) e = cudaMemPoolSetAttribute(b->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&b->side, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&b->fork, cudaEventDisableTiming);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        e = cudaEventCreateWithFlags(&b->deq[i], cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&b->gemm[i], cudaEventDisableTiming);
    }
    if (e != cudaSuccess) {
        /* partial state is leaked rather than torn down in an unknown order; the call fails */
        cublasDestroy(b->h);
        return cuda_fail(e, "creating the dq path's pool, stream and events");
    }
    b->ready = 1;
    return MPL_OK;
}

/*
 * y = x W^T by slabs of `rows` rows of W: dequantize the slab (scale applied, rounded to 16 bits)
 * into scratch, then cublasGemmEx(T, N) writes y[:, n0 .. n0 + rows) (column-major y^T = W_slab x^T).
 * With overlap, slab s + 1 is dequantized on the side stream into the other buffer while the GEMM
 * of slab s runs; buffer b is rewritten only after the GEMM that read it (event gemm[b]).
 */
/*
 * Rows per slab. Default (measured, bench/cuda/NOTES.md v5): enough rows that one slab's GEMM has two
 * waves of 128 x 128 output tiles (cuBLAS is inefficient on short GEMMs: 70B down at m = 1024 ran 943 us
 * with 32 MB slabs = 585 rows, 854 us with 128 MB), held between 32 and 128 MB of 16-bit weights.
 * With a bias the fp32 product slab (m x rows x 4 bytes) is held under 128 MB too.
 */
#define CW4_MB ((size_t)1 << 20)
static size_t dq_slab_rows(const cw4_knobs *kn, int sms, int M, int K, int N, bool bias) {
    size_t row_bytes = (size_t)K * 2, rows;
    if (kn->dq_slab_bytes) {
        rows = kn->dq_slab_bytes / row_bytes;
    } else {
        size_t want = (size_t)2 * (size_t)sms * 128 * 128 / (size_t)M, bytes = want * row_bytes;
        if (bytes < 32 * CW4_MB) bytes = 32 * CW4_MB;
        if (bytes > 128 * CW4_MB) bytes = 128 * CW4_MB;
        rows = bytes / row_bytes;
    }
    if (bias && rows * (size_t)M * 4 > 128 * CW4_MB) rows = 128 * CW4_MB / ((size_t)M * 4);
    rows = rows >= 128 ? rows / 128 * 128 : rows / 16 * 16;
    if (rows < 16) rows = 16;
    size_t n16 = ((size_t)N + 15) / 16 * 16;
    return rows > n16 ? n16 : rows;
}

static mpl_status dq_apply(const cw4_packed *p, const cw4_knobs *kn, const mpl_cw4_args *a, cudaStream_t stream) {
    const int K = a->k, N = a->n, M = a->m;
    const size_t rows = dq_slab_rows(kn, p->sms, M, K, N, a->bias != NULL);
    int nslabs = (int)(((size_t)N + rows - 1) / rows);
    int nbuf = kn->dq_overlap && nslabs > 1 ? 2 : 1;
    size_t slab_bytes = (rows * (size_t)K * 2 + 255) & ~(size_t)255;
    /* with a bias: cuBLAS writes the fp32 product slab, our epilogue adds the bias and rounds once */
    size_t c_bytes = a->bias ? (rows * (size_t)M * 4 + 255) & ~(size_t)255 : 0;
    size_t total = CW4_BLAS_WS + (size_t)nbuf * slab_bytes + c_bytes;
    int dev = p->device;
    if (dev >= CW4_MAX_DEV) return mpl_set_error(MPL_ERR_CUDA, "cuda_w4a16: device %d: dq path supports devices 0..%d", dev, CW4_MAX_DEV - 1);
    pthread_mutex_lock(&g_blas_mu);
    mpl_status st = blas_init(dev);
    cw4_blas *b = &g_blas[dev];
    char *scr = NULL;
    if (st == MPL_OK) {
        cudaError_t e = cudaMallocFromPoolAsync((void **)&scr, total, b->pool, stream);
        if (e != cudaSuccess) {
            scr = NULL;
            st = cuda_fail(e, "allocating dq scratch");
        }
    }
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    if (st == MPL_OK) bs = cublasSetStream(b->h, stream); /* resets the workspace: set it after */
    if (st == MPL_OK && bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetWorkspace(b->h, scr, CW4_BLAS_WS);
    if (st == MPL_OK && bs != CUBLAS_STATUS_SUCCESS) st = blas_fail(bs, "setting the cuBLAS stream and workspace");
    const float one = 1.0f, zero = 0.0f;
    float *cbuf = c_bytes ? (float *)(scr + CW4_BLAS_WS + (size_t)nbuf * slab_bytes) : NULL;
    const bool ov = nbuf == 2;
    if (st == MPL_OK && ov) {
        cudaError_t e = cudaEventRecord(b->fork, stream);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(b->side, b->fork, 0);
        if (e != cudaSuccess) st = cuda_fail(e, "forking the dq side stream");
    }
    const cudaDataType_t dt = a->act == 1 ? CUDA_R_16F : CUDA_R_16BF;
    for (int s = 0; s < nslabs && st == MPL_OK; s++) {
        int n0 = (int)((size_t)s * rows), ns = (int)((size_t)N - (size_t)n0 < rows ? (size_t)N - (size_t)n0 : rows);
        int buf = s % nbuf;
        char *w = scr + CW4_BLAS_WS + (size_t)buf * slab_bytes;
        cudaStream_t ds = ov ? b->side : stream;
        cudaError_t e = cudaSuccess;
        if (ov && s >= 2) e = cudaStreamWaitEvent(b->side, b->gemm[buf], 0);
        int le = e == cudaSuccess ? mpl_cw4_launch_dequant(a, n0 / 16, (ns + 15) / 16, w, K, ds) : 0;
        if (e == cudaSuccess && le) e = (cudaError_t)le;
        if (e == cudaSuccess && ov) e = cudaEventRecord(b->deq[buf], b->side);
        if (e == cudaSuccess && ov) e = cudaStreamWaitEvent(stream, b->deq[buf], 0);
        if (e != cudaSuccess) {
            st = cuda_fail(e, "launching the dq dequantization");
            break;
        }
        if (cbuf)
            bs = cublasGemmEx(b->h, CUBLAS_OP_T, CUBLAS_OP_N, ns, M, K, &one, w, dt, K, a->x, dt, K, &zero, cbuf,
                              CUDA_R_32F, ns, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else
            bs = cublasGemmEx(b->h, CUBLAS_OP_T, CUBLAS_OP_N, ns, M, K, &one, w, dt, K, a->x, dt, K, &zero,
                              (uint16_t *)a->y + n0, dt, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            st = blas_fail(bs, "cublasGemmEx");
            break;
        }
        if (cbuf) {
            le = mpl_cw4_launch_bias_epilogue(cbuf, (const uint16_t *)a->bias + n0, (uint16_t *)a->y + n0, M, ns, N,
                                              a->act, stream);
            if (le) {
                st = cuda_fail((cudaError_t)le, "launching the dq bias epilogue");
                break;
            }
        }
        if (ov && (e = cudaEventRecord(b->gemm[buf], stream)) != cudaSuccess) st = cuda_fail(e, "recording a dq event");
    }
    if (st != MPL_OK && ov) {
        /* rejoin the side stream whatever happened (a capture must not end with it forked) */
        if (cudaEventRecord(b->fork, b->side) == cudaSuccess) cudaStreamWaitEvent(stream, b->fork, 0);
    }
    if (scr) {
        cudaError_t e = cudaFreeAsync(scr, stream);
        if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, "freeing dq scratch");
    }
    pthread_mutex_unlock(&g_blas_mu);
    return st;
}

/* The path an apply of m rows takes (knobs, then mpl_cw4_default_path). */
static int choose_path(const cw4_packed *p, const cw4_knobs *kn, int64_t m) {
    int path = kn->path;
    const int tiled = p->wg_ok ? PATH_WG : PATH_TC; /* the tiled kernel of this device */
    if (path == PATH_AUTO) {
        /* without the wg path (no tensor map), what mpl_cw4_default_path picks on other devices */
        path = mpl_cw4_default_path(m, p->meta.k, p->meta.n, p->wg_ok ? p->cc : 0);
        if (kn->skinny_max_m >= 0) /* moved switch point */
            path = m <= kn->skinny_max_m && m <= MPL_CW4_SKINNY_MAX_M ? PATH_SKINNY : path == PATH_SKINNY ? tiled : path;
        if (kn->dq_min_m >= 0 && path != PATH_SKINNY) path = m >= kn->dq_min_m ? PATH_DQ : path == PATH_DQ ? tiled : path;
    }
    if ((path == PATH_SKINNY || path == PATH_STREAM) && m > MPL_CW4_SKINNY_MAX_M) path = tiled;
    return path;
}

static double cw4_weight_rounding(const void *pp, int64_t m) {
    const cw4_packed *p = pp;
    cw4_knobs kn = p->knobs;
    if (p->live_knobs) read_knobs(&kn);
    const int path = choose_path(p, &kn, m);
    const int64_t gs = p->meta.groups == 1 ? -1 : p->meta.group_size;
    /* MPL_CUDA_W4A16_WG_EXP=4: the wg path rounds at any m (an experiment knob) */
    if (!mpl_cw4_path_rounds_weights(path, m, gs) && !(path == PATH_WG && (kn.wg_exp & 4))) return 0.0;
    return p->cfg.act == MPL_ACT_BF16 ? 0x1.0p-8 : 0x1.0p-11;
}

/* Launch on device pointers (x already permuted for act-order). */
static mpl_status run_kernels(const cw4_packed *p, int m, const void *x, const void *bias, void *y,
                              cudaStream_t stream) {
    cw4_knobs kn = p->knobs;
    if (p->live_knobs) read_knobs(&kn);
    mpl_cw4_args a;
    memset(&a, 0, sizeof a);
    a.qweight = p->qweight;
    a.scales = p->scales;
    a.scales_lo = p->scales_lo;
    a.zeros = p->zeros;
    a.n = (int)p->meta.n;
    a.k = (int)p->meta.k;
    a.n_pad = (int)p->meta.n_pad;
    a.k_pad = (int)p->meta.k_pad;
    if (p->meta.groups == 1) {
        a.gs16 = 1 << 28; /* never reached: no group boundary inside K */
        a.inv_gs16 = 0.0f;
    } else {
        a.gs16 = (int)(p->meta.group_size / 16);
        a.inv_gs16 = 1.0f / (float)a.gs16;
    }
    a.scale_fmt = p->meta.scale_fmt;
    a.act = (int)p->cfg.act;
    a.m = m;
    a.x = x;
    a.bias = bias;
    a.y = y;
    a.ksplit = kn.ksplit;
    a.sms = p->sms;
    a.cc = p->cc;
    a.tc_variant = kn.tc_variant;
    a.skinny_nw = kn.skinny_nw;
    a.stream_nr = kn.stream_nr;
    a.wg_exp = kn.wg_exp;
    a.wg_map = p->wg_ok ? p->wg_map : NULL;
    int path = choose_path(p, &kn, m);
    if (path == PATH_DQ) return dq_apply(p, &kn, &a, stream);
    if (path == PATH_WG && !p->wg_ok)
        return mpl_set_error(MPL_ERR_UNSUPPORTED,
                             "cuda_w4a16: path wg (MPL_CUDA_W4A16_PATH) needs compute capability 9.0 (sm_90a "
                             "wgmma) and the driver's tensor-map encoder; device %d has %d.%d%s",
                             p->device, p->cc / 10, p->cc % 10, p->cc == 90 ? ", encoder unavailable" : "");
    if (path == PATH_WG) {
        void *xt = NULL;
        cudaError_t ce = cudaMallocFromPoolAsync(&xt, mpl_cw4_wg_scratch_bytes(&a), p->pool, stream);
        if (ce != cudaSuccess) return cuda_fail(ce, "allocating wg x-tile scratch");
        int le = mpl_cw4_launch_wg(&a, xt, stream);
        ce = cudaFreeAsync(xt, stream);
        if (le) return cuda_fail((cudaError_t)le, "launching the warpgroup (wgmma) kernel");
        if (ce != cudaSuccess) return cuda_fail(ce, "freeing wg x-tile scratch");
        return MPL_OK;
    }
    if (path == PATH_STREAM) { /* MPL_CUDA_W4A16_PATH=stream only */
        int se = mpl_cw4_launch_stream(&a, stream);
        if (se == (int)cudaErrorNotSupported)
            return mpl_set_error(MPL_ERR_UNSUPPORTED,
                                 "cuda_w4a16: path stream (MPL_CUDA_W4A16_PATH) needs compute capability 9.0+, m <= %d, "
                                 "a group size that is a multiple of 64 (or -1) and x's K slice in shared memory; "
                                 "here cc %d.%d, m %d, group size %lld, k %lld",
                                 MPL_CW4_SKINNY_MAX_M, p->cc / 10, p->cc % 10, m,
                                 (long long)(p->meta.groups == 1 ? -1 : p->meta.group_size), (long long)p->meta.k);
        if (se != 0) return cuda_fail((cudaError_t)se, "launching the stream kernel");
        return MPL_OK;
    }
    int e = path == PATH_SKINNY ? mpl_cw4_launch_skinny(&a, stream) : mpl_cw4_launch_tc(&a, stream);
    if (e != 0)
        return cuda_fail((cudaError_t)e, path == PATH_SKINNY ? "launching the skinny kernel" : "launching the tensor-core kernel");
    return MPL_OK;
}

static mpl_status device_apply(const cw4_packed *p, int m, const void *x, const void *bias, void *y,
                               cudaStream_t stream) {
    if (!p->perm) return run_kernels(p, m, x, bias, y, stream);
    size_t bytes = (size_t)m * (size_t)p->meta.k * 2;
    void *xp = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&xp, bytes, p->pool, stream);
    if (e != cudaSuccess) return cuda_fail(e, "allocating act-order scratch");
    int le = mpl_cw4_launch_permute(x, p->perm, xp, m, (int)p->meta.k, stream);
    mpl_status st = le ? cuda_fail((cudaError_t)le, "launching the act-order permutation") : run_kernels(p, m, xp, bias, y, stream);
    e = cudaFreeAsync(xp, stream);
    if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, "freeing act-order scratch");
    return st;
}

static mpl_status host_apply(const cw4_packed *p, int m, const void *x, const void *bias, void *y) {
    cudaStream_t stream = cudaStreamPerThread;
    size_t bx = (size_t)m * (size_t)p->meta.k * 2, by = (size_t)m * (size_t)p->meta.n * 2;
    size_t bb = bias ? (size_t)p->meta.n * 2 : 0;
    size_t ox = 0, ob = align256(bx), oy = align256(ob + bb), total = align256(oy + by);
    char *d = NULL;
    cudaError_t e = cudaMallocFromPoolAsync((void **)&d, total, p->pool, stream);
    if (e != cudaSuccess) return cuda_fail(e, "allocating device staging for host pointers");
    mpl_status st = MPL_OK;
    e = cudaMemcpyAsync(d + ox, x, bx, cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess && bias) e = cudaMemcpyAsync(d + ob, bias, bb, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) st = cuda_fail(e, "copying x and bias to the device");
    if (st == MPL_OK) st = device_apply(p, m, d + ox, bias ? d + ob : NULL, d + oy, stream);
    if (st == MPL_OK) {
        e = cudaMemcpyAsync(y, d + oy, by, cudaMemcpyDeviceToHost, stream);
        if (e != cudaSuccess) st = cuda_fail(e, "copying y to the host");
    }
    e = cudaFreeAsync(d, stream);
    if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, "freeing device staging");
    e = cudaStreamSynchronize(stream);
    if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, "running the kernels");
    return st;
}

static mpl_status cw4_apply(const void *pp, const mpl_apply_args *a) {
    const cw4_packed *p = pp;
    if (a->m > (int64_t)0x7fffffff)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "cuda_w4a16: m = %lld: must be below 2^31", (long long)a->m);
    if (a->device_pointers && (((uintptr_t)a->x & 15) || ((uintptr_t)a->y & 15) || ((uintptr_t)a->bias & 1)))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16: device pointers x = %p, y = %p: must be 16-byte aligned (bias %p: 2-byte)",
                             a->x, (void *)a->y, a->bias);
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e != cudaSuccess) return cuda_fail(e, "cudaGetDevice");
    if (cur != p->device && (e = cudaSetDevice(p->device)) != cudaSuccess) return cuda_fail(e, "cudaSetDevice");
    mpl_status st = a->device_pointers ? device_apply(p, (int)a->m, a->x, a->bias, a->y, (cudaStream_t)a->stream)
                                       : host_apply(p, (int)a->m, a->x, a->bias, a->y);
    if (cur != p->device) cudaSetDevice(cur);
    return st;
}

const mpl_kernel_desc mpl_kernel_cuda_w4a16 = {
    .name = "cuda_w4a16",
    .backend = MPL_BACKEND_CUDA,
    .layout = "cuda_w4a16",
    .requires = "CUDA device with compute capability 8.0+ (wgmma path on 9.0)",
    .isa = 0,
    .min_cc = 80,
    .irregular_act_order = false,
    .can_implement = cw4_can_implement,
    .pack = cw4_pack,
    .destroy = cw4_destroy,
    .workspace_size = cw4_workspace_size,
    .apply = cw4_apply,
    .weight_bytes = cw4_weight_bytes,
    .weight_rounding = cw4_weight_rounding,
};
