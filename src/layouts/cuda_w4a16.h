/*
 * cuda_w4a16.h -- the packed layout of the CUDA W4A16 kernel (docs/layouts/cuda_w4a16.md),
 * built and read on the host: pack() from the canonical form, unpack() back to it.
 *
 * Weights are the A operand of mma.m16n8k16 (the layer's N is the MMA's M: "swap AB"), in
 * blocks of 16 output rows x 64 input channels (one "chunk"): 32 lanes x 16 bytes, so each
 * lane's whole fragment for a chunk is one 16-byte load, in registers or shared memory.
 * Scales (16-bit planes) and zero points (bytes) are [groups][n_pad]; act-order is resolved
 * at pack time by sorting K (perm) so every group is contiguous.
 * The constants (block shape, padding, scale formats) are in cuda_w4a16_format.h, shared with the kernels.
 */
#ifndef MPL_LAYOUT_CUDA_W4A16_H
#define MPL_LAYOUT_CUDA_W4A16_H

#include "../core/internal.h"
#include "cuda_w4a16_format.h"

_Static_assert(MPL_CUDA_W4A16_ACT_F16 == MPL_ACT_F16 && MPL_CUDA_W4A16_ACT_BF16 == MPL_ACT_BF16,
               "the kernels' activation ids are mpl_act's values");
_Static_assert(MPL_CUDA_W4A16_BLOCK_BYTES == MPL_CUDA_W4A16_NT * MPL_CUDA_W4A16_KC / 2, "a block is NT x KC codes");
_Static_assert(1 << MPL_CUDA_W4A16_KC_SHIFT == MPL_CUDA_W4A16_KC, "KC_SHIFT is log2(KC)");

typedef struct mpl_cuda_w4a16_layout {
    int64_t k_in;            /* the layer's input channels */
    int planes;              /* 1: 4-bit codes; 2: 8-bit codes as a low- and a high-nibble plane along K */
    int halves;              /* 1: 2-bit codes, two per nibble ("halves": mpl_cuda_w4a16_pack_halves); else 0 */
    int thirds;              /* 1: 3-bit codes, four chunks in three ("thirds": mpl_cuda_w4a16_pack_thirds); else 0 */
    int64_t k, n;            /* x's row length (planes * k_in; k_in for halves) and the layer's outputs */
    int64_t k_pad, n_pad;    /* packed positions: k rounded up to MPL_CUDA_W4A16_KC (halves: k / 2, thirds: 3 k / 4), and n rounded
                                up to MPL_CUDA_W4A16_N_ALIGN */
    int64_t cfg_group_size;  /* as configured (-1 or a divisor of k) */
    int64_t group_size;      /* effective (k when -1) */
    int64_t groups;
    mpl_wtype wtype;         /* the layer's (any width; 2-, 3-bit and int4 stored as 4-bit codes, 8-bit as planes) */
    int scale_fmt;           /* mpl_cuda_w4a16_scale_fmt */
    uint32_t *qweight;       /* [n_pad/16][k_pad/64][32 lanes][4 words] */
    uint16_t *scales;        /* [groups][n_pad], rows interleaved (mpl_cuda_w4a16_plane_index) */
    uint16_t *scales_lo;     /* [groups][n_pad] when scale_fmt is F32, else NULL */
    uint8_t *zeros;          /* [groups][n_pad] raw zero points (uint4; 8-bit: each plane's nibble), else NULL */
    int32_t *perm;           /* [k]: packed position j holds input channel perm[j] (act-order, and always with
                                two planes: j and j + k_in both read channel perm[j]), else NULL */
} mpl_cuda_w4a16_layout;

/* Byte sizes of each buffer (0 when absent). */
size_t mpl_cuda_w4a16_qweight_bytes(const mpl_cuda_w4a16_layout *l);
size_t mpl_cuda_w4a16_scales_bytes(const mpl_cuda_w4a16_layout *l);
size_t mpl_cuda_w4a16_zeros_bytes(const mpl_cuda_w4a16_layout *l);

/*
 * Packs canonical weights (uint4b8, or uint4 with zero points; act-order resolved with
 * uniform groups; group size -1 or a multiple of 16) into host buffers. int4, uint3b4 and uint2b2 are stored
 * as uint4b8 nibbles ((code ^ 8), code + 4, code + 6), uint3 and uint2 as uint4 nibbles (the same codes and
 * zeros): exact, read by every 4-bit kernel (docs/layouts/cuda_w4a16.md, "Widths below 4 bits, and int4"). The scale plane
 * takes the first exact encoding of: the activation type's 16-bit type, the other one, f32.
 * 8-bit weights (uint8b128, uint8 with zero points; k a multiple of 16) are packed as a 4-bit layer of
 * 2k packed channels: position j < k holds the low nibble of channel j's code, k + j the high nibble,
 * each plane with its own groups (G low, then G high: zero z & 15 with scale s, zero z >> 4 with scale
 * 16 s), and perm duplicates x: sum over both planes = sum (code - z) s x exactly
 * (docs/layouts/cuda_w4a16.md, "8-bit: two planes").
 */
mpl_status mpl_cuda_w4a16_pack(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out);
/*
 * 2-bit weights (uint2b2, uint2 with zero points) in halves: the 4-bit block layout over k / 2 packed positions,
 * nibble (row, packed channel 64 v + j) = code(row, 128 v + j) | code(row, 128 v + 64 + j) << 2 (channels after the
 * act-order sort), so a 4-bit block carries two chunks of 64 channels, each read with a mask (w & 0x33333333,
 * (w >> 2) & 0x33333333) as 4-bit codes 0..3 against its own x chunk. Scales and zeros as for 4-bit, per real group
 * (a packed chunk lies in one group: mpl_cuda_w4a16_halves_fits); uint2b2 has no zero plane (its zero is 2). One
 * byte per four weights (docs/layouts/cuda_w4a16.md, "2-bit: halves").
 */
mpl_status mpl_cuda_w4a16_pack_halves(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out);
/* Whether a config's shape allows halves: a 2-bit type, k a multiple of 128 (whole packed chunks), group size -1 or
 * a multiple of 128 (both chunks of a block in one group). The descriptor packs halves where this holds on
 * compute capability 9.0 (cuda_w4a16.c, packs_halves). */
static inline bool mpl_cuda_w4a16_halves_fits(const mpl_config *c) {
    return (c->wtype == MPL_WTYPE_UINT2B2 || c->wtype == MPL_WTYPE_UINT2) && c->k % (2 * MPL_CUDA_W4A16_KC) == 0 &&
           (c->group_size == -1 || c->group_size % (2 * MPL_CUDA_W4A16_KC) == 0);
}
/*
 * 3-bit weights (uint3b4, uint3 with zero points) in thirds: the 4-bit block layout over 3 k / 4 packed positions;
 * packed chunks 3u, 3u + 1, 3u + 2 carry the 64-channel chunks 4u .. 4u + 3 (channels after the act-order sort): the
 * nibble of (row, packed position 64 (3u + s) + j), s = 0, 1, 2, holds code(row, 256 u + 64 s + j) in bits 0-2 and
 * bit 2 - s of code(row, 256 u + 192 + j) in bit 3. A kernel reads chunk 4u + s as w & 0x77777777 and chunk 4u + 3
 * as ((A >> 1) & 0x44444444) | ((B >> 2) & 0x22222222) | ((C >> 3) & 0x11111111) from the same lane's words A, B, C
 * of the three packed chunks. Scales and zeros as for 4-bit, per real group; uint3b4 has no zero plane (its zero is
 * 4); padding rows hold code 4 in all four chunks. Three bits per weight (docs/layouts/cuda_w4a16.md, "3-bit:
 * thirds").
 */
mpl_status mpl_cuda_w4a16_pack_thirds(const mpl_config *c, const mpl_canonical *w, mpl_cuda_w4a16_layout *out);
/* Whether a config's shape allows thirds: a 3-bit type, k a multiple of 256 (whole runs of three packed chunks), group
 * size -1 or a multiple of 128 (the kernels fold at 128-channel steps). The descriptor packs thirds where this holds on
 * compute capability 9.0 (cuda_w4a16.c, packs_thirds). */
static inline bool mpl_cuda_w4a16_thirds_fits(const mpl_config *c) {
    return (c->wtype == MPL_WTYPE_UINT3B4 || c->wtype == MPL_WTYPE_UINT3) && c->k % (4 * MPL_CUDA_W4A16_KC) == 0 &&
           (c->group_size == -1 || c->group_size % (2 * MPL_CUDA_W4A16_KC) == 0);
}
/* The inverse: canonical codes, scales (exact), zeros and g_idx (act-order resolved). */
mpl_status mpl_cuda_w4a16_unpack(const mpl_cuda_w4a16_layout *l, int act_order, mpl_canonical *out);
void mpl_cuda_w4a16_layout_free(mpl_cuda_w4a16_layout *l);

/* Word index of lane `lane`'s word j (k16 step) of the block (n-tile nt, chunk kc). */
static inline size_t mpl_cuda_w4a16_word_index(const mpl_cuda_w4a16_layout *l, int64_t nt, int64_t kc, int lane,
                                               int j) {
    return (((size_t)nt * (size_t)(l->k_pad / MPL_CUDA_W4A16_KC) + (size_t)kc) * 32 + (size_t)lane) * 4 + (size_t)j;
}
/* Entry of (group, row n) in a scale or zero plane: within each 16-row tile, rows r and r+8
 * sit side by side (2r, 2r+1), so a lane fetches both of its rows in one load. */
static inline size_t mpl_cuda_w4a16_plane_index(const mpl_cuda_w4a16_layout *l, int64_t g, int64_t n) {
    return (size_t)g * (size_t)l->n_pad + (size_t)(n & ~(int64_t)15) + (size_t)(2 * (n & 7) + ((n >> 3) & 1));
}
/* Row (0..15) and column (0..15 within the k16 step) of nibble i (0..7) of lane `lane`'s word. */
static inline int mpl_cuda_w4a16_nibble_row(int lane, int i) { return (lane >> 2) + 8 * (i & 1); }
static inline int mpl_cuda_w4a16_nibble_col(int lane, int i) { return 4 * (lane & 3) + 2 * ((i >> 1) & 1) + (i >> 2); }

#endif
