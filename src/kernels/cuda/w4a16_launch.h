/*
 * w4a16_launch.h -- the C-callable launchers of the cuda_w4a16 kernels (defined in the .cu files of this
 * directory), used by the descriptor in cuda_w4a16.c. Plain C: no CUDA types. Every launcher returns a
 * cudaError_t as an int (0 = cudaSuccess); launches are asynchronous, on the current device.
 *
 * One launcher per path (cuda_w4a16.c's path table says which runs when, and why):
 *   cuda_w4a16:skinny-rounded  w4a16_skinny.cu     mpl_cuda_w4a16_launch_skinny_rounded  m <= 16, bf16
 *   cuda_w4a16:skinny  w4a16_skinny.cu             mpl_cuda_w4a16_launch_skinny   m <= 16, decode
 *   cuda_w4a16:wg      w4a16_wg.cu (sm_90a only)   mpl_cuda_w4a16_launch_wg       wgmma tiles, cc 9.0
 *   cuda_w4a16:dq      w4a16_dq.cu + cuBLAS        mpl_cuda_w4a16_launch_dq_slab, mpl_cuda_w4a16_launch_dq_bias
 *   cuda_w4a16:tc      w4a16_tc_{f16,bf16}.cu      mpl_cuda_w4a16_launch_tc       mma.sync tiles, any m
 * plus the act-order permutation of x that runs before any of them (w4a16_permute.cu).
 */
#ifndef MPL_CUDA_W4A16_LAUNCH_H
#define MPL_CUDA_W4A16_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "../../layouts/cuda_w4a16_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mpl_cuda_w4a16_args {
    /* the packed layer (device pointers; docs/layouts/cuda_w4a16.md) */
    const uint32_t *qweight;
    const uint16_t *scales;
    const uint16_t *scales_lo; /* MPL_CUDA_W4A16_SCALE_F32 only */
    const uint8_t *zeros;      /* zero points, or NULL (uint4b8: value = code - 8) */
    int n, k;                  /* the layer's sizes (multiples of 8) */
    int n_pad, k_pad;          /* multiples of MPL_CUDA_W4A16_N_ALIGN and MPL_CUDA_W4A16_KC */
    int gs16;                  /* group size / 16; MPL_CUDA_W4A16_ONE_GROUP when there is one group */
    float inv_gs16;            /* 1 / gs16 (0 with one group): group of k16 step s = (s + 0.5) * inv_gs16 */
    int scale_fmt;             /* mpl_cuda_w4a16_scale_fmt */
    int act;                   /* MPL_CUDA_W4A16_ACT_F16 or MPL_CUDA_W4A16_ACT_BF16 */
    /* the call */
    int m;
    /* 3-bit layers in thirds (docs/layouts/cuda_w4a16.md "3-bit: thirds"): 1 when three packed chunks 3u .. 3u + 2
     * carry the four x chunks 4u .. 4u + 3 (k_pad = 3 k / 4 packed positions, k is x's row length, gs16 counts x's
     * k16 steps: group size / 16). skinny (w4a16_gemv), wg and dq read it; tc and skinny-rounded refuse such layers.
     * Without zero points the zero is 4 (uint3b4). In the struct's padding after m: 136 bytes still. */
    int thirds;
    const void *x;             /* [m][k], 16-byte aligned */
    const void *bias;          /* [n] or NULL */
    void *y;                   /* [m][n], 16-byte aligned */
    int device;                /* the current device, 0..MPL_CUDA_MAX_DEVICES-1 (the launchers' per-device setup) */
    int sms;                   /* multiprocessors of the device */
    int cc;                    /* compute capability, major*10+minor */
    /* tuning (mpl_cuda_w4a16_tuning, cuda_w4a16.h) */
    int ksplit;                /* blocks along K reducing through a cluster: 0 = the launcher's rule, 1..8 forced */
    int skinny_nw;             /* skinny blocks per warp and chunk (row tiles; FORM_W8: x 2 planes): 0 = by rule, 2 or 4
                                  (halves at m > 8: 2 unless 4 is asked), in MPL_CUDA_W4A16_NW_TILES; with the flags
                                  MPL_CUDA_W4A16_NW_SHARED_X / _OWN_X (w4a16_gemv's x at m 9..16, thirds
                                  2..16, forced) */
    /* 2-bit layers in halves (docs/layouts/cuda_w4a16.md "2-bit: halves"): 1 when each nibble holds the codes of two
     * chunks (packed chunk v: x chunks 2v and 2v + 1; k_pad counts packed positions, k is x's row length, gs16 is
     * counted in packed k16 steps: group size / 32); skinny, wg and dq read it, tc and skinny-rounded refuse such
     * layers. Without zero points the zero is 2 (uint2b2). In the struct's padding after skinny_nw: 136 bytes still. */
    int halves;
    const void *wg_map;        /* wg path: the weight tensor map (MPL_CUDA_W4A16_WG_MAP_BYTES) */
    /* 8-bit layers (two 4-bit planes, docs/layouts/cuda_w4a16.md): the layer's k, where the high-nibble plane
     * starts among the k packed channels; 0 for 4-bit layers. dq, wg and skinny read it (both planes of a chunk
     * into one byte code); tc runs the planes as the 4-bit layer they are. (This
     * field keeps the struct, every kernel's by-value parameter, at the 136 bytes all kernels were measured
     * with: at 128 bytes NVVM lowers the parameter differently, bench/cuda/NOTES.md v8.) */
    int planes_k;
    int wg_blocks;             /* wg-streamk: persistent blocks, 0 = the launcher's rule (w4a16_wg.cu, wg_plan) */
} mpl_cuda_w4a16_args;
/* mpl_cuda_w4a16_args.skinny_nw: the row tiles (bits 0-7), and w4a16_gemv's block-shared x (m 9..16; thirds 2..16)
 * forced on or off (mpl_cuda_w4a16_tuning.skinny_shared_x; neither: the launcher's rule) */
#define MPL_CUDA_W4A16_NW_TILES 0xff
#define MPL_CUDA_W4A16_NW_SHARED_X 0x100
#define MPL_CUDA_W4A16_NW_OWN_X 0x200

/* w4a16_gemv's block-shared x by default (3-bit thirds at m 2..16, the other forms at m 9..16: the forms it has; the launcher
 * and, with 132 SMs, the chooser's skinny range): where its blocks (8 warps x 2 row tiles: ceil(n / 256) of them) fill
 * 70% or more of one wave of one block per SM without split-K. Its split-K runs clusters of blocks of ~215 KB, one per
 * SM: clusters of 4 / 3 / 5 that did not all fit at once ran a second wave (H100 v33, 70B down / 70B qkv / 8B qkv
 * 1.5-2x their own-x time); the launcher now takes the largest S whose clusters fit, and that wins on short-K layers of
 * 3-bit and 8-bit only (launch_skinny's second rule, H200 v34), so here the measured wins are the one-wave layers.
 * H100 v33 (bench/cuda/NOTES.md), bf16, group 128, us, 8B gate_up (n 28672: 112 blocks on 132 SMs), shared x vs the
 * default before: 3-bit m = 2 22.81 vs 27.37, m = 8 23.36 vs 29.21, m = 9 26.87 vs wg 29.87, m = 16 27.02 vs wg 30.09; 4-bit m = 9 30.22 vs 31.67, m = 16 29.50 vs
 * 31.38 (m = 8: 26.88 vs 26.03, kept); 2-bit m = 9 25.99 vs 28.41, m = 16 26.03 vs 30.55 (m = 8 18.80 vs 18.60, kept);
 * 8-bit m = 9 48.21 vs 48.74, m = 16 48.61 vs 49.44 (m = 8 46.70 vs 46.18, kept). */
static inline int mpl_cuda_w4a16_shared_x_fills(int64_t n, int sms) {
    const int64_t blocks = (n + 255) / 256; /* 8 warps x 2 row tiles x 16 rows per block */
    return 10 * blocks >= 7 * (int64_t)sms && blocks <= sms;
}
#ifdef __cplusplus
static_assert(sizeof(mpl_cuda_w4a16_args) == 136, "the kernels' by-value parameter keeps its measured size");
#else
_Static_assert(sizeof(mpl_cuda_w4a16_args) == 136, "the kernels' by-value parameter keeps its measured size");
#endif

/* gs16 of a layer with one group over K: never reached by a k16 step (K <= 2^24 = 2^20 steps), and a
 * multiple of 4, so "every chunk lies in one group" (gs16 % 4 == 0) holds for it as for groups of 64k. */
#define MPL_CUDA_W4A16_ONE_GROUP (1 << 28)

/* Rows of M the skinny kernel takes at most (two 8-row MMA tiles of x). */
#define MPL_CUDA_W4A16_SKINNY_MAX_M 16

/*
 * Whether the wg path keeps exact per-group sums for m rows (its FOLD form: integer weights in the wgmma,
 * the fp32 scale applied per group, as tc and skinny do): token tiles of at most 32 (the second set of
 * accumulators fits the registers) and every chunk inside one group (group size a multiple of 64, or
 * one group). Otherwise it multiplies weights rounded once to 16 bits. The wg launcher and the
 * descriptor's weight_rounding both ask this, so the kernel and the query cannot disagree.
 */
static inline int mpl_cuda_w4a16_wg_exact(int64_t m, int gs16) { return m <= 32 && gs16 % 4 == 0; }

/* Skinny path: m <= MPL_CUDA_W4A16_SKINNY_MAX_M. */
int mpl_cuda_w4a16_launch_skinny(const mpl_cuda_w4a16_args *a, void *stream);
/* Path skinny-rounded (the same kernel, bf16 activations, uint4b8): weights rounded once to bf16 when the
 * scales are bf16, else exact sums scaled by 2^-6 (w4a16_skinny.cu). */
int mpl_cuda_w4a16_launch_skinny_rounded(const mpl_cuda_w4a16_args *a, void *stream);

/* Warpgroup (wgmma, sm_90a) tiled path: any m, compute capability 9.0 only (else
 * cudaErrorNoKernelImageForDevice). streamk 0: the split-K form (path wg: a block per tile and K range, split-K
 * through a cluster); 1: the persistent stream-K form (path wg-streamk: one block per SM, a tile's K range
 * split over blocks, partial tiles summed in K order by the tile's last block). xt: device scratch of
 * mpl_cuda_w4a16_wg_scratch_bytes(a, streamk) bytes (x rearranged into shared-memory tile images; stream-K:
 * also the partial tiles and arrival counters), 256-byte aligned, not shared with a concurrent call, free again
 * once the kernels ran. */
size_t mpl_cuda_w4a16_wg_scratch_bytes(const mpl_cuda_w4a16_args *a, int streamk);
/* The wg path's weight tensor map over a layer's packed qweight, written to map (MPL_CUDA_W4A16_WG_MAP_BYTES, any
 * alignment); 0 or a cudaError_t (e.g. no driver entry point). Once per layer (cuda_w4a16.c: pack). */
#define MPL_CUDA_W4A16_WG_MAP_BYTES 128
int mpl_cuda_w4a16_wg_weight_map(const uint32_t *qweight, int k_pad, int n_pad, void *map);
int mpl_cuda_w4a16_launch_wg(const mpl_cuda_w4a16_args *a, int streamk, void *xt, void *stream);

/* The split-K form's factor by tiles (256 rows of N x the token tile) and SMs (w4a16_wg.cu, wg_launch, has the
 * measurements): 1 from 0.7 x the SMs, 2 from 0.2 x, else 4. */
static inline int mpl_cuda_w4a16_wg_ksplit_rule(long long tiles, int sms) {
    return tiles * 10 >= 7LL * sms ? 1 : tiles * 10 >= 2LL * sms ? 2 : 4;
}
/*
 * 64-channel chunks the busiest SM streams in an m-row call of a k x n layer (m >= 33: token tile 64, or 128 from
 * m = 65), split-K form (streamk 0: tiles x ksplit blocks in waves of the clusters that are resident at once,
 * one ~200 KB block per SM: sms / ksplit for 1 and 2, 30 of 4 and 15 of 8 on 132 SMs, H200 v12) or stream-K
 * (1: every SM the same share). The stream-K path's default range is where the first exceeds the second by
 * MPL_CUDA_W4A16_WG_SK_MIN_GAIN (cuda_w4a16.c, wg_streamk_m_range).
 */
static inline long long mpl_cuda_w4a16_wg_chunks_per_sm(long long m, long long k, long long n, int sms, int streamk) {
    const long long bt = m <= 64 ? 64 : 128, tiles = (m + bt - 1) / bt * ((n + 255) / 256), kc = (k + 63) / 64;
    if (streamk) return (tiles * kc + sms - 1) / sms;
    int ks = mpl_cuda_w4a16_wg_ksplit_rule(tiles, sms);
    while (ks > 1 && kc / ks < 4) ks /= 2;
    const long long resident = ks <= 2 ? sms / ks : (long long)sms * 30 / 132 / (ks / 4);
    const long long waves = (tiles + (resident > 0 ? resident : 1) - 1) / (resident > 0 ? resident : 1);
    return waves * ((kc + ks - 1) / ks);
}

/* Tensor-core (mma.sync) tiled path: any m; one instantiation per activation type (parallel builds). */
int mpl_cuda_w4a16_launch_tc_f16(const mpl_cuda_w4a16_args *a, void *stream);
int mpl_cuda_w4a16_launch_tc_bf16(const mpl_cuda_w4a16_args *a, void *stream);
static inline int mpl_cuda_w4a16_launch_tc(const mpl_cuda_w4a16_args *a, void *stream) {
    return a->act == MPL_CUDA_W4A16_ACT_F16 ? mpl_cuda_w4a16_launch_tc_f16(a, stream)
                                            : mpl_cuda_w4a16_launch_tc_bf16(a, stream);
}

/* Dequantizing path, one slab: rows [16 nt0, 16 (nt0 + ntiles)) of the layer (clipped at n) as 16-bit
 * weights (code - zero) * scale, rounded once from fp32 to the activation type, into
 * w[row - 16 nt0][0 .. k) with row stride ldw (elements, a multiple of 8); cuBLAS multiplies them. */
int mpl_cuda_w4a16_launch_dq_slab(const mpl_cuda_w4a16_args *a, int nt0, int ntiles, void *w, int ldw, void *stream);
/* Dequantizing path with a bias: y[i][j] = round16(c[i][j] + bias[j]), i < m, j < ns (ns a multiple of 8);
 * c fp32 [m][ns] (cuBLAS's product slab), y row stride ldy; act an MPL_CUDA_W4A16_ACT_* id. */
int mpl_cuda_w4a16_launch_dq_bias(const float *c, const void *bias, void *y, int m, int ns, int ldy, int act,
                                  void *stream);

/* Act-order: xp[i][j] = x[i][perm[j]] (2-byte elements), before any path. */
/* xp [m][k] = x [m][k_in] gathered through perm (k = k_in, or 2 k_in for an 8-bit layer's two planes) */
int mpl_cuda_w4a16_launch_permute(const void *x, const int32_t *perm, void *xp, int m, int k_in, int k, void *stream);

#ifdef __cplusplus
}
#endif
#endif
