/*
 * w4a16_launch.h -- the C-callable launchers of the CUDA W4A16 kernels (defined in the .cu
 * files of this directory), used by the descriptor in cuda_w4a16.c. Plain C: no CUDA types.
 * Every launcher returns a cudaError_t as an int (0 = cudaSuccess); launches are asynchronous.
 */
#ifndef MPL_CUDA_W4A16_LAUNCH_H
#define MPL_CUDA_W4A16_LAUNCH_H

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
                                  (2x4 warps of 64x32), 2 = 128x128 (4x2 warps of 32x64) (MPL_CUDA_W4A16_TC_VARIANT) */
} mpl_cw4_args;

/* Rows of M the skinny kernel takes at most (two 8-row MMA tiles). */
#define MPL_CW4_SKINNY_MAX_M 16

/* Skinny path: m <= MPL_CW4_SKINNY_MAX_M. */
int mpl_cw4_launch_skinny(const mpl_cw4_args *a, void *stream);
/* Tensor-core tiled path: any m. */
int mpl_cw4_launch_tc(const mpl_cw4_args *a, void *stream);
/* xp[i][j] = x[i][perm[j]] for act-order (2-byte elements). */
int mpl_cw4_launch_permute(const void *x, const int32_t *perm, void *xp, int m, int k, void *stream);

#ifdef __cplusplus
}
#endif
#endif
