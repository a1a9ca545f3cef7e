/*
 * cuda_w4a16.h -- the packed layout of the CUDA W4A16 kernel (docs/layouts/cuda_w4a16.md),
 * built and read on the host: pack() from the canonical form, unpack() back to it.
 *
 * Weights are the A operand of mma.m16n8k16 (the layer's N is the MMA's M: "swap AB"), in
 * blocks of 16 output rows x 64 input channels (one "chunk"): 32 lanes x 16 bytes, so each
 * lane's whole fragment for a chunk is one 16-byte load, in registers or shared memory.
 * Scales (16-bit planes) and zero points (bytes) are [groups][n_pad]; act-order is resolved
 * at pack time by sorting K (perm) so every group is contiguous.
 */
#ifndef MPL_LAYOUT_CUDA_W4A16_H
#define MPL_LAYOUT_CUDA_W4A16_H

#include "../core/internal.h"

/* How the 16-bit scale plane(s) hold the exact float scale. */
typedef enum mpl_cw4_scale_fmt {
    MPL_CW4_SCALE_F16 = 0,  /* scales[] is the f16 encoding (every scale exact in f16) */
    MPL_CW4_SCALE_BF16 = 1, /* scales[] is the bf16 encoding (every scale exact in bf16) */
    MPL_CW4_SCALE_F32 = 2   /* scales[] = upper 16 bits of the f32, scales_lo[] = lower 16 bits */
} mpl_cw4_scale_fmt;

/* Rows of N per weight block (the MMA's M) and input channels per chunk (four k16 steps). */
#define MPL_CW4_NT 16
#define MPL_CW4_KC 64
/* N is padded to this so that every tile of the tensor-core path (at most 256 rows) stays
 * inside the buffers: no bounds checks on weight, scale or zero loads. */
#define MPL_CW4_N_ALIGN 256
/* Code written for padding (uint4b8: value 0; x is masked to 0 there anyway). */
#define MPL_CW4_PAD_CODE 8

typedef struct mpl_cw4_layout {
    int64_t k, n;            /* the layer's sizes */
    int64_t k_pad, n_pad;    /* k rounded up to 64, n rounded up to 256 */
    int64_t cfg_group_size;  /* as configured (-1 or a divisor of k) */
    int64_t group_size;      /* effective (k when -1) */
    int64_t groups;
    mpl_wtype wtype;         /* uint4b8, or uint4 with zeros */
    int scale_fmt;           /* mpl_cw4_scale_fmt */
    uint32_t *qweight;       /* [n_pad/16][k_pad/64][32 lanes][4 words] */
    uint16_t *scales;        /* [groups][n_pad], rows interleaved (mpl_cw4_plane_index) */
    uint16_t *scales_lo;     /* [groups][n_pad] when scale_fmt is F32, else NULL */
    uint8_t *zeros;          /* [groups][n_pad] raw zero points (uint4), else NULL */
    int32_t *perm;           /* [k]: packed position j holds input channel perm[j] (act-order), else NULL */
} mpl_cw4_layout;

/* Word count of qweight, and byte sizes of each buffer (0 when absent). */
size_t mpl_cw4_qweight_bytes(const mpl_cw4_layout *l);
size_t mpl_cw4_scales_bytes(const mpl_cw4_layout *l);
size_t mpl_cw4_zeros_bytes(const mpl_cw4_layout *l);

/*
 * Packs canonical weights (uint4b8, or uint4 with zero points; act-order resolved with
 * uniform groups; group size -1 or a multiple of 16) into host buffers. The scale plane
 * takes the first exact encoding of: the activation type's 16-bit type, the other one, f32.
 */
mpl_status mpl_cw4_pack(const mpl_config *c, const mpl_canonical *w, mpl_cw4_layout *out);
/* The inverse: canonical codes, scales (exact), zeros and g_idx (act-order resolved). */
mpl_status mpl_cw4_unpack(const mpl_cw4_layout *l, int act_order, mpl_canonical *out);
void mpl_cw4_layout_free(mpl_cw4_layout *l);

/* Word index of lane `lane`'s word j (k16 step) of the block (n-tile nt, chunk kc). */
static inline size_t mpl_cw4_word_index(const mpl_cw4_layout *l, int64_t nt, int64_t kc, int lane, int j) {
    return (((size_t)nt * (size_t)(l->k_pad / MPL_CW4_KC) + (size_t)kc) * 32 + (size_t)lane) * 4 + (size_t)j;
}
/* Entry of (group, row n) in a scale or zero plane: within each 16-row tile, rows r and r+8
 * sit side by side (2r, 2r+1), so a lane fetches both of its rows in one load. */
static inline size_t mpl_cw4_plane_index(const mpl_cw4_layout *l, int64_t g, int64_t n) {
    return (size_t)g * (size_t)l->n_pad + (size_t)(n & ~(int64_t)15) + (size_t)(2 * (n & 7) + ((n >> 3) & 1));
}
/* Row (0..15) and column (0..15 within the k16 step) of nibble i (0..7) of lane `lane`'s word. */
static inline int mpl_cw4_nibble_row(int lane, int i) { return (lane >> 2) + 8 * (i & 1); }
static inline int mpl_cw4_nibble_col(int lane, int i) { return 4 * (lane & 3) + 2 * ((i >> 1) & 1) + (i >> 2); }

#endif
