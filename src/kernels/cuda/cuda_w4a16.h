/*
 * cuda_w4a16.h -- what tests and benchmarks may use of kernel cuda_w4a16 beyond its registry row: its
 * tuning knobs and their override hook (the mpl_platform_override pattern). Not installed; the library
 * reads no environment variable for them (src/core/env.c holds the only getenv calls).
 *
 * Which path runs is not tuning: force one with mpl_options.kernel = "cuda_w4a16:<path>", disable one
 * with MPL_DISABLED_KERNELS=cuda_w4a16:<path> (the path table is in cuda_w4a16.c).
 */
#ifndef MPL_KERNEL_CUDA_W4A16_H
#define MPL_KERNEL_CUDA_W4A16_H

#include <stddef.h>

typedef struct mpl_cuda_w4a16_tuning {
    /* Split-K factor of the skinny, tc and wg paths (blocks along K reducing through a cluster, sm_90; not wg-streamk):
     * 0 = each launcher's measured rule; 1..8 forced (clamped to what K allows; 1 below sm_90). */
    int ksplit;
    /* Skinny blocks per warp and chunk: 0 = the launcher's rule (w4a16_skinny.cu), 2 or 4 forced (row tiles; 8-bit
     * layers' FORM_W8: half as many row tiles, each with its two planes). */
    int skinny_nw;
    /* w4a16_gemv (the skinny path's kernel at m <= 16 on sm_90) at m 9..16, and m 2..16 on 3-bit thirds: 0 = the
     * launcher's rule, 1 = a block-shared x (the block's 8 warps take 8 x 2 row tiles at the same k and stage x once),
     * -1 = each warp its own x (warps along K). */
    int skinny_shared_x;
    /* dq: bytes of 16-bit weights per slab buffer; 0 = by m (dq_slab_rows in cuda_w4a16.c). */
    size_t dq_slab_bytes;
    /* dq: 1 = dequantize slab s + 1 on a side stream while cuBLAS multiplies slab s (two slab buffers),
     * 0 = one buffer, in order on the caller's stream. */
    int dq_overlap;
    /* wg-streamk: blocks of its persistent grid; 0 = the launcher's rule (one per SM, fewer for small layers). */
    int wg_blocks;
} mpl_cuda_w4a16_tuning;

/* What applies use without an override: {ksplit 0, skinny_nw 0, skinny_shared_x 0, dq_slab_bytes 0, dq_overlap 1,
 * wg_blocks 0}. */
extern const mpl_cuda_w4a16_tuning mpl_cuda_w4a16_tuning_default;

/* Test and benchmark hook: every apply from now on reads *t (NULL restores the defaults). *t must stay
 * valid until the next call; call it between applies, not while other threads apply (like
 * mpl_platform_override). A CUDA graph captured meanwhile keeps the tuning of its capture. */
void mpl_cuda_w4a16_tuning_override(const mpl_cuda_w4a16_tuning *t);

#endif
