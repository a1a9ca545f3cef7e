/*
 * x86_w4a16.h -- the packed layout of the x86 W4A16 kernels (x86_avx512_w4a16,
 * x86_avx2_w4a16). Bit-level spec: docs/layouts/x86_w4a16.md.
 *
 * N is cut into blocks of 64 output channels (the last one padded with zero
 * weights and zero scales). A block is a run of groups; a group holds its 64
 * scales, then (types with zero points) its 64 zero points, then its weights
 * as chunks of 16 channels x 4 inputs (8 * bits bytes: 8-bit 64, 4-bit 32,
 * 3-bit 24, 2-bit 16), so that one load feeds one micro-kernel step of one
 * vector of channels. Blocks, groups and chunks follow each other without
 * gaps, so a thread streaming a range of blocks reads one contiguous stretch
 * of memory. How a chunk holds its 64 values depends on the width (bits);
 * docs/layouts/x86_w4a16.md gives each bit.
 *
 * Stored values are normalised so that every weight type reads the same way:
 * value = stored - zero, zero = the bias 2^(bits-1) for the symmetric types
 * (int4 nibbles are stored XOR 8, so int4 reads as uint4b8), the per-group
 * zero point for the types with zero points.
 */
#ifndef MPL_LAYOUT_X86_W4A16_H
#define MPL_LAYOUT_X86_W4A16_H

#include "../core/internal.h"

/* Output channels per block: four 16-lane AVX-512 vectors (eight AVX2 ones). */
#define MPL_X86_W4A16_NB 64
/* Input channels per chunk, and bytes per 4-bit chunk (16 channels x 4 inputs x 4 bits); a chunk
 * of width bits is 8 * bits bytes (mpl_x86_w4a16_layout.chunk_bytes). */
#define MPL_X86_W4A16_CK 4
#define MPL_X86_W4A16_CHUNK_BYTES 32
/* Bytes after the last step that readers may load (never use): the 2- and 3-bit decodes load a line at
 * byte offsets 1..3 to get the next byte's nibbles in place without a shift (avx512/w4a16_gemv_widths.c). */
#define MPL_X86_W4A16_TAIL_BYTES 64

typedef enum mpl_x86_w4a16_scale_fmt {
    MPL_X86_W4A16_SCALE_F32 = 0,
    MPL_X86_W4A16_SCALE_BF16 = 1,
    MPL_X86_W4A16_SCALE_F16 = 2
} mpl_x86_w4a16_scale_fmt;

typedef struct mpl_x86_w4a16_layout {
    int64_t k, n;            /* logical shape */
    int64_t np;              /* n rounded up to MPL_X86_W4A16_NB */
    int64_t nblocks;         /* np / MPL_X86_W4A16_NB */
    int64_t group_size;      /* effective (k when the config says -1) */
    int64_t groups;
    mpl_wtype wtype;         /* as configured (int4 is stored XOR 8) */
    int bits;                /* width of a stored value: 2, 3, 4 or 8 */
    int bias;                /* zero of the symmetric types: 2^(bits-1) (int4: 8, stored XOR 8) */
    int zero_points;         /* 1: each group stores 64 zero points */
    mpl_x86_w4a16_scale_fmt scale_fmt; /* narrowest format that holds every scale exactly */
    size_t scale_bytes;      /* per group: 64 * (2 or 4) */
    size_t zero_bytes;       /* per group: 64 or 0 */
    size_t chunk_bytes;      /* 16 channels x 4 inputs: 8 * bits */
    size_t step_bytes;       /* 64 channels x 4 inputs: 4 * chunk_bytes */
    size_t group_bytes;      /* scale_bytes + zero_bytes + group_size / 4 * step_bytes */
    size_t block_bytes;      /* groups * group_bytes */
    uint8_t *data;           /* nblocks * block_bytes, 64-byte aligned */
    int32_t *perm;           /* act-order: packed input j is input channel perm[j]; else NULL */
    int32_t *g_idx;          /* act-order: the original g_idx (for unpack); else NULL */
} mpl_x86_w4a16_layout;

/* Pack canonical weights of width 2, 3, 4 or 8 (act-order must be uniform: group_size members per group). */
mpl_status mpl_x86_w4a16_pack(const mpl_config *cfg, const mpl_canonical *w, mpl_x86_w4a16_layout *out);
/* Rebuild the canonical form (codes in the original input order, scales, zeros, g_idx). */
mpl_status mpl_x86_w4a16_unpack(const mpl_x86_w4a16_layout *l, mpl_canonical *out);
void mpl_x86_w4a16_free(mpl_x86_w4a16_layout *l);
/* Bytes of weights + scales + zeros (what decode streams). */
size_t mpl_x86_w4a16_bytes(const mpl_x86_w4a16_layout *l);

/* Address of block b, group g: scales, zeros, first chunk. */
static inline const uint8_t *mpl_x86_w4a16_group(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g) {
    return l->data + (size_t)b * l->block_bytes + (size_t)g * l->group_bytes;
}
static inline const uint8_t *mpl_x86_w4a16_group_weights(const mpl_x86_w4a16_layout *l, int64_t b, int64_t g) {
    return mpl_x86_w4a16_group(l, b, g) + l->scale_bytes + l->zero_bytes;
}

/* Chunk v (channels 16v .. 16v+15) of a step: s[i][e] (0 .. 2^bits - 1) is the stored value of channel
 * 16v + i, input e (0..3) of the step at `step`; encode writes the chunk's bits * 8 bytes, decode reads them
 * (exact inverses; the spec's bit layout). A chunk is bytes chunk_lo(v) .. + 8 * bits of its step, except at
 * 3 bits, where its 16 low bytes are at 16 v and its 8 nibble bytes at 64 + 8 v (the step is a 64-byte line
 * of every channel's low byte, then the 32-byte nibble plane: docs/layouts/x86_w4a16.md). */
void mpl_x86_w4a16_chunk_encode(int bits, int v, const uint8_t s[16][4], uint8_t *step);
void mpl_x86_w4a16_chunk_decode(int bits, int v, const uint8_t *step, uint8_t s[16][4]);
/* Offset in its step of chunk v's bytes (3 bits: of its low bytes), and of a 3-bit chunk's nibble bytes. */
static inline size_t mpl_x86_w4a16_chunk_lo(int bits, int v) { return (size_t)v * (bits == 3 ? 16u : 8u * (size_t)bits); }
static inline size_t mpl_x86_w4a16_chunk_hi3(int v) { return 64u + 8u * (size_t)v; }

#endif
