/*
 * w4a16_launch.h -- the C-callable launchers of the CUDA W4A16 kernels (defined in the .cu
 * files of this directory), used by the descriptor in cuda_w4a16.c. Plain C: no CUDA types.
 * Every launcher returns a cudaError_t as an int (0 = cudaSuccess); launches are asynchronous.
 */
#ifndef MPL_CUDA_W4A16_LAUNCH_H
#define MPL_CUDA_W4A16_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpl_cw4_args {
    /* the packed layer (device pointers; docs/layouts/cuda_w4a16.md) */
    const uint32_t *qweight;
    const uint16_t *scales;
    const uint16_t *scales_lo; /* scale_fmt 2 only */
    const uint8_t *zeros;      /* zero points, or NULL (uint4b8: value = code - 8) */
    int n, k;                  /* the layer's sizes (multiples of 8) */
    int n_pad, k_pad;          /* multiples of 256 and 64 */
    int gs16;                  /* group size / 16; a huge value when there is one group */
    float inv_gs16;            /* 1 / gs16 (0 with one group): group of k16 step s = (s + 0.5) * inv_gs16 */
    int scale_fmt;             /* 0 f16, 1 bf16, 2 f32 split over two planes */
    int act;                   /* 1 f16, 2 bf16 (mpl_act) */
    /* the call */
    int m;
    const void *x;             /* [m][k], 16-byte aligned */
    const void *bias;          /* [n] or NULL */
    void *y;                   /* [m][n], 16-byte aligned */
    int ksplit;                /* blocks along K reducing through a cluster (1 = none; 0 = choose) */
    int sms;                   /* multiprocessors of the device */
    int cc;                    /* compute capability, major*10+minor */
    int tc_variant;            /* tensor-core tile (N x M) for m > 64: 0 = 256x64 (8x1 warps of 32x64), 1 = 128x128
                                  (2x4 warps of 64x32), 2 = 128x128 (4x2 warps of 32x64); 3 = for m <= 64, 128-row
                                  tiles (128x32, 128x64: two blocks per SM); -1 = by m: 3 for m = 33..64, else 0
                                  (MPL_CUDA_W4A16_TC_VARIANT) */
    int skinny_nw;             /* skinny row tiles per warp: 0 = by layer width, 2 or 4 (MPL_CUDA_W4A16_SKINNY_NW) */
    int stream_nr;             /* stream row tiles per row group: 0 = by the plan's cost, 1, 2 or 4 (MPL_CUDA_W4A16_STREAM_NR) */
    const void *wg_map;        /* wg path: the weight tensor map (MPL_CW4_WG_MAP_BYTES, from mpl_cw4_wg_weight_map) */
    int wg_exp;                /* wg path experiments (MPL_CUDA_W4A16_WG_EXP bits): 4 rounded weights whatever the
                                  group size (no exact group sums for m <= 32) */
} mpl_cw4_args;

/* Rows of M the skinny kernel takes at most (two 8-row MMA tiles). */
#define MPL_CW4_SKINNY_MAX_M 16

/* Paths (MPL_CUDA_W4A16_PATH=auto|skinny|tc|dq|wg). */
enum {
    MPL_CW4_PATH_AUTO = 0,
    MPL_CW4_PATH_SKINNY = 1,
    MPL_CW4_PATH_TC = 2,
    MPL_CW4_PATH_DQ = 3,
    MPL_CW4_PATH_WG = 4,
    MPL_CW4_PATH_STREAM = 5
};

/*
 * Whether the stream path (w4a16_stream.cu: persistent bulk-copy decode kernel; MPL_CUDA_W4A16_PATH=stream
 * only -- measured no faster than skinny, bench/cuda/NOTES.md v7) takes m rows: compute capability 9.0+
 * (bulk copies, clusters), m <= 16, and every 64-channel chunk inside one group (group size a multiple of
 * 64, or -1). It may still refuse a layer whose x slice does not fit in shared memory (very large K at m
 * near 16).
 */
static inline int mpl_cw4_stream_applies(int64_t m, int64_t group_size, int cc) {
    return cc >= 90 && m >= 1 && m <= MPL_CW4_SKINNY_MAX_M && (group_size == -1 || group_size % 64 == 0);
}

/*
 * Default switch to the dequantizing path (slabs of 16-bit weights + cuBLAS): m above the
 * decode range, where cuBLAS's wgmma GEMM outruns the mma.sync tiles by more than the cost of
 * dequantizing every weight once (bench/cuda/NOTES.md, v5). Used where the wg path is not
 * available (compute capability other than 9.0).
 */
static inline int mpl_cw4_dq_by_default(int64_t m, int64_t k, int64_t n) {
    (void)k, (void)n;
    /* measured (v5 sweep): tc wins at m = 128 (70B gate_up 457 vs 668 us), dq at m = 256 (743 vs 859 us;
     * 8B layers 0.45-0.62x cuBLAS vs 0.25-0.46x) */
    return m > 160;
}

/*
 * The path `auto` takes for m rows on a device of compute capability cc (cuda_w4a16.c; the tests
 * use it to know which tolerance applies: dq and wg round each weight to 16 bits once).
 * Skinny: measured on the H200 (bench/cuda/NOTES.md, run 3): it wins up to m = 8 on every layer;
 * from 9 to 16 it wins when K >= 8192 (70B down: 51 vs 84 us at m = 16), tc wins slightly below.
 */
static inline int mpl_cw4_default_path(int64_t m, int64_t k, int64_t n, int cc) {
    if (m <= 8 || (m <= MPL_CW4_SKINNY_MAX_M && k >= 8192)) return MPL_CW4_PATH_SKINNY;
    /* wg (cc 9.0, measured v6): beats tc from m = 33 (70B gate_up m = 64: 171 vs 289 us) and dq up to m = 512
     * (70B down m = 256: 188 vs 381 us); ties dq at m = 1024 and loses at 4096 (0.80-0.85x vs 0.96-0.99x). */
    if (cc == 90 && m > 32 && m <= 512) return MPL_CW4_PATH_WG;
    return mpl_cw4_dq_by_default(m, k, n) ? MPL_CW4_PATH_DQ : MPL_CW4_PATH_TC;
}

/* Whether a path rounds each weight (code - zero) * scale to 16 bits before the products: dq always;
 * wg unless it keeps exact per-group sums (m <= 32 and a group size that is a multiple of 64, or -1). */
static inline int mpl_cw4_path_rounds_weights(int path, int64_t m, int64_t group_size) {
    return path == MPL_CW4_PATH_DQ ||
           (path == MPL_CW4_PATH_WG && !(m <= 32 && (group_size == -1 || group_size % 64 == 0)));
}

/* Skinny path: m <= MPL_CW4_SKINNY_MAX_M. */
int mpl_cw4_launch_skinny(const mpl_cw4_args *a, void *stream);
/* Stream path (mpl_cw4_stream_applies): cudaErrorNotSupported when it does not take these args. */
int mpl_cw4_launch_stream(const mpl_cw4_args *a, void *stream);
/* Warpgroup (wgmma, sm_90a) tiled path: any m, compute capability 9.0 only (else
 * cudaErrorNoKernelImageForDevice). xt: device scratch of mpl_cw4_wg_scratch_bytes(a) bytes (x
 * rearranged into shared-memory tile images), 256-byte aligned, free again once the kernels ran. */
size_t mpl_cw4_wg_scratch_bytes(const mpl_cw4_args *a);
/* The wg path's weight tensor map over a layer's packed qweight, written to map (MPL_CW4_WG_MAP_BYTES, any
 * alignment); 0 or a cudaError_t (e.g. no driver entry point). Once per layer (cuda_w4a16.c: pack). */
#define MPL_CW4_WG_MAP_BYTES 128
int mpl_cw4_wg_weight_map(const uint32_t *qweight, int k_pad, int n_pad, void *map);
int mpl_cw4_launch_wg(const mpl_cw4_args *a, void *xt, void *stream);
/* Tensor-core tiled path: any m. */
int mpl_cw4_launch_tc(const mpl_cw4_args *a, void *stream);
/* Dequantizing path (large m): rows [16 nt0, 16 (nt0 + ntiles)) of the layer (clipped at n) as
 * 16-bit weights (code - zero) * scale, rounded once from fp32 to the activation type, into
 * w[row - 16 nt0][0 .. k) with row stride ldw (elements, a multiple of 8). */
int mpl_cw4_launch_dequant(const mpl_cw4_args *a, int nt0, int ntiles, void *w, int ldw, void *stream);
/* y[i][j] = round16(c[i][j] + bias[j]), i < m, j < ns (ns a multiple of 8); c fp32 [m][ns], y row stride ldy;
 * act 1 f16, 2 bf16. */
int mpl_cw4_launch_bias_epilogue(const float *c, const void *bias, void *y, int m, int ns, int ldy, int act, void *stream);
/* xp[i][j] = x[i][perm[j]] for act-order (2-byte elements). */
int mpl_cw4_launch_permute(const void *x, const int32_t *perm, void *xp, int m, int k, void *stream);

#ifdef __cplusplus
}
#endif
#endif
