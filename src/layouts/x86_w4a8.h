/*
 * x86_w4a8.h -- the packed layout of the x86 W4A8 kernels (x86_avx512vnni_w4a8,
 * x86_avxvnni_w4a8, x86_avx2_w4a8: all read the same bytes), for every weight width (2, 3,
 * 4 and 8 bits). Bit-level spec: docs/layouts/x86_w4a8.md.
 *
 * Weights are held as unsigned codes u = value + z (z = the type's bias 2^(bits-1) -- int4:
 * 8, stored XOR 8 -- or the group's zero point), so the integer group sum is
 *   isum_g = sum_k q[k]*u[k] - z * sum_{k in g} q[k]
 * (u8 x s8 dot products for vpdpbusd and vpmaddubsw, plus one compensation term; the AMX
 * path unpacks u - z, or u - 128 for 8-bit, into signed bytes for tdpbssd).
 *
 * Every width is read in "planes": a 64-byte vector holding, per 32-bit lane (one of 16
 * columns), the four codes of 4 consecutive K positions as bytes -- the vpdpbusd operand and
 * one row of an AMX B tile in VNNI order. A "step" is the K positions a kernel takes at once
 * (mpl_x86_w4a8_kstep): 8 (8-bit: two 64-byte planes; 4-bit: one 64-byte block, low and high
 * nibbles), 16 (2-bit: one block, 4 planes of 2 bits) or 32 (3-bit: two blocks of 2-bit
 * planes + one block of the third bits).
 */
#ifndef MPL_LAYOUT_X86_W4A8_H
#define MPL_LAYOUT_X86_W4A8_H

#include "../core/internal.h"

/* Columns per panel: one zmm of int32 accumulators (16 lanes). */
#define MPL_X86_W4A8_PANEL 16
/* K must be a multiple of 8 at every width (the row quantizers take 8 activations at a time); 2- and
 * 3-bit need their step as well (16, 32), which config validation already asks of them. */
#define MPL_X86_W4A8_KBLOCK 8

/* K positions per step of a width (above). */
static inline int mpl_x86_w4a8_kstep(int bits) { return bits == 3 ? 32 : bits == 2 ? 16 : 8; }
/* Bytes of one panel per step: 16 columns x kstep positions x bits / 8. */
static inline int mpl_x86_w4a8_step_bytes(int bits) { return 2 * mpl_x86_w4a8_kstep(bits) * bits; }

typedef struct mpl_x86_w4a8_layout {
    int64_t k, n;
    int64_t panels;    /* ceil(n / 16); columns n..16*panels-1 are padding (codes 0, scales 0) */
    int64_t group_len; /* K positions per group (k for group_size -1) */
    int64_t groups;
    mpl_wtype wtype;
    int bits;           /* 2, 3, 4 or 8 */
    int zbias;          /* z of the types without zero points: 2^(bits-1) (int4: 8, stored XOR 8) */
    size_t panel_bytes; /* stride between panels in nib: k * 2 * bits (padding them apart measured no gain) */
    uint8_t *nib;       /* [panels] x panel_bytes: k / kstep steps of step_bytes each, see the spec */
    float *scales;      /* [panels][groups][16] */
    uint8_t *zeros;     /* [panels][groups][16] zero points (uint2/3/4/8) or NULL (z = zbias) */
    int32_t *perm;      /* [k] act-order: packed position j holds input channel perm[j]; or NULL */
} mpl_x86_w4a8_layout;

static inline const uint8_t *mpl_x86_w4a8_panel(const mpl_x86_w4a8_layout *p, int64_t pan) {
    return p->nib + (size_t)pan * p->panel_bytes;
}

/* Packs canonical weights (any width; K a multiple of 8 and of the width's step; act-order only with
 * uniform groups). */
mpl_status mpl_x86_w4a8_pack(const mpl_config *c, const mpl_canonical *w, mpl_x86_w4a8_layout **out);
/* Rebuilds the canonical form (codes, scales, zeros, g_idx, perm) from the packed layout. */
mpl_status mpl_x86_w4a8_unpack(const mpl_x86_w4a8_layout *p, mpl_canonical *out);
void mpl_x86_w4a8_free(mpl_x86_w4a8_layout *p);
/* Bytes of codes + scales + zeros. */
size_t mpl_x86_w4a8_bytes(const mpl_x86_w4a8_layout *p);

#endif
