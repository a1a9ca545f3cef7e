/*
 * vulkan_w4a16.h -- the packed layout of the Vulkan W4A16 kernel (docs/layouts/vulkan_w4a16.md), built and
 * read on the host: pack() from the canonical form, unpack() back to it.
 *
 * One byte image, uploaded as one device buffer per layer and read by every path (GEMV and tiled GEMM):
 *   qweight [n_pad][k_pad / 8] u32   nibble i of word w of row n: the stored code s of packed position 8w + i
 *   scales  [n_pad][groups]    f32   the group scales, exact (any checkpoint scale type)
 *   zeros   [n_pad][zstride]   u8    the zero points (uint4, uint3, uint2); value = s - z, else s - 8
 * int4 codes are stored XOR 8, uint3b4's plus 4 and uint2b2's plus 6, so that every type's value is s - zero with
 * zero = 8 when there are none: 2- and 3-bit layers ride as 4-bit codes (the same bytes as 4-bit, as cuda_w4a16).
 * 8-bit layers (uint8b128, uint8) are two 4-bit planes, as cuda_w4a16's: the uint4 layer of 2k packed positions,
 * position j (< k) holding the low nibble of channel perm[j] and k + j its high nibble; the low plane's groups
 * (scale s, zero z & 15) then the high plane's (16 s, z >> 4), so that the 4-bit shaders sum (c - z) s exactly with
 * x read twice (perm: the duplicating permutation, [k] + [k]).
 * Act-order is resolved at pack: packed position p holds input channel perm[p] (x is permuted on the host).
 */
#ifndef MPL_LAYOUT_VULKAN_W4A16_H
#define MPL_LAYOUT_VULKAN_W4A16_H

#include "../core/internal.h"

/* k is padded to one 16-byte load of codes (32 nibbles); n to the tiled GEMM's 64-row tile (the GEMV's
 * 8-row workgroups divide it), so no shader bounds-checks a weight load. */
#define MPL_VULKAN_W4A16_KP 32
#define MPL_VULKAN_W4A16_NP 64
/* Section offsets are multiples of this: Vulkan's largest allowed minStorageBufferOffsetAlignment. */
#define MPL_VULKAN_W4A16_ALIGN 256

typedef struct mpl_vulkan_w4a16_layout {
    int64_t k, n;           /* the packed sizes: 8-bit layers pack 2 k_in positions (two planes) */
    int64_t k_in;           /* the layer's input channels (x's row length) */
    int planes;             /* 1, or 2 for 8-bit layers */
    int64_t k_pad, n_pad;   /* rounded up to MPL_VULKAN_W4A16_KP, MPL_VULKAN_W4A16_NP */
    int64_t cfg_group_size; /* as configured (-1 or a divisor of k) */
    int64_t group_size;     /* effective (k when -1) */
    int64_t groups;
    int64_t zstride;        /* bytes per row of zeros: groups rounded up to 4 (whole u32 words) */
    mpl_wtype wtype;        /* the layer's type: uint4b8, uint4, int4, uint3b4, uint3, uint2b2, uint2, uint8b128, uint8 */
    size_t qweight_off, qweight_bytes, scales_off, scales_bytes, zeros_off, zeros_bytes; /* zeros_bytes 0: none */
    size_t bytes;           /* the whole image */
    uint8_t *image;         /* bytes, 64-byte aligned (mpl_aligned_alloc) */
    int32_t *perm;          /* [k] packed position -> input channel: act-order and/or two planes, else NULL */
} mpl_vulkan_w4a16_layout;

/* Sizes and offsets for a config, without allocating (MPL_ERR_OVERFLOW when they do not fit size_t; an 8-bit
 * config with k not a multiple of 16: MPL_ERR_INVALID_ARGUMENT, the high plane starts on a 16-channel boundary). */
mpl_status mpl_vulkan_w4a16_plan(const mpl_config *c, mpl_vulkan_w4a16_layout *out);
/* Packs canonical weights (uint4b8, int4, uint3b4, uint2b2, uint8b128, and uint4, uint3, uint2, uint8 with zero
 * points; group size -1 or a multiple of 16; act-order resolved with uniform groups). */
mpl_status mpl_vulkan_w4a16_pack(const mpl_config *c, const mpl_canonical *w, mpl_vulkan_w4a16_layout *out);
/* The inverse: canonical codes, scales, zeros and (act_order) g_idx. */
mpl_status mpl_vulkan_w4a16_unpack(const mpl_vulkan_w4a16_layout *l, int act_order, mpl_canonical *out);
void mpl_vulkan_w4a16_layout_free(mpl_vulkan_w4a16_layout *l);

/* Word of packed position p in row n, and the nibble within it. */
static inline size_t mpl_vulkan_w4a16_word_index(const mpl_vulkan_w4a16_layout *l, int64_t n, int64_t p) {
    return (size_t)n * (size_t)(l->k_pad / 8) + (size_t)(p / 8);
}
static inline int mpl_vulkan_w4a16_nibble_shift(int64_t p) { return (int)(4 * (p % 8)); }

#endif
