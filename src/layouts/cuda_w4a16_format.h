/*
 * cuda_w4a16_format.h -- the constants of the cuda_w4a16 packed layout (docs/layouts/cuda_w4a16.md), in one
 * place for both sides: the host pack/unpack (src/layouts/cuda_w4a16.h) and the kernels
 * (src/kernels/cuda/w4a16_launch.h, included by every .cu file). Plain C, nothing beyond stdint.h, so that
 * nvcc's C++ and the library's C11 read the same names.
 */
#ifndef MPL_LAYOUT_CUDA_W4A16_FORMAT_H
#define MPL_LAYOUT_CUDA_W4A16_FORMAT_H

#include <stdint.h>

/* Rows of N per weight block: the M of mma.m16n8k16, since the kernels compute y^T = W x^T. */
#define MPL_CUDA_W4A16_NT 16
/* Input channels per chunk: four k16 MMA steps, so that a lane's share of a block is one 16-byte load. */
#define MPL_CUDA_W4A16_KC 64
/* log2 of MPL_CUDA_W4A16_KC: the kernels count chunks as k_pad >> MPL_CUDA_W4A16_KC_SHIFT (a signed int divided by
 * 64 costs three more instructions, and changed the kernels' code generation). */
#define MPL_CUDA_W4A16_KC_SHIFT 6
/* Bytes of one block (NT rows x KC channels of 4-bit codes = 32 lanes x 16 bytes), contiguous. */
#define MPL_CUDA_W4A16_BLOCK_BYTES 512
/* N is padded to this: every kernel's tile of rows (16 .. 256) divides it (static_assert at each tile),
 * so no weight, scale or zero load needs a bounds check. */
#define MPL_CUDA_W4A16_N_ALIGN 256
/* Code written for padding (uint4b8: value 0; the kernels read x as 0 there anyway). */
#define MPL_CUDA_W4A16_PAD_CODE 8

/* How the 16-bit scale plane(s) hold the exact float scale (chosen at pack time: the first that is exact). */
typedef enum mpl_cuda_w4a16_scale_fmt {
    MPL_CUDA_W4A16_SCALE_F16 = 0,  /* scales[] is the f16 encoding */
    MPL_CUDA_W4A16_SCALE_BF16 = 1, /* scales[] is the bf16 encoding */
    MPL_CUDA_W4A16_SCALE_F32 = 2   /* scales[] = upper 16 bits of the f32, scales_lo[] = lower 16 bits */
} mpl_cuda_w4a16_scale_fmt;

/* Activation type ids the kernels take: the values of MPL_ACT_F16 and MPL_ACT_BF16 (mplinear.h; checked by
 * static_assert in cuda_w4a16.h), so the descriptor passes cfg.act through unchanged. */
#define MPL_CUDA_W4A16_ACT_F16 1
#define MPL_CUDA_W4A16_ACT_BF16 2

#endif
