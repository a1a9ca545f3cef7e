/*
 * x86_w4a8.h -- the packed layout of the x86 W4A8 kernels (x86_avx512vnni_w4a8,
 * x86_avxvnni_w4a8, x86_avx2_w4a8: all read the same bytes). Bit-level spec:
 * docs/layouts/x86_w4a8.md.
 *
 * Weights are held as unsigned nibbles u = value + z (z = 8 for uint4b8 and
 * int4, the zero point for uint4), so the integer group sum is
 *   isum_g = sum_k q[k]*u[k] - z * sum_{k in g} q[k]
 * (u8 x s8 dot products for vpdpbusd and vpmaddubsw, plus one compensation term;
 * the AMX path unpacks u - z into signed bytes for tdpbssd).
 */
#ifndef MPL_LAYOUT_X86_W4A8_H
#define MPL_LAYOUT_X86_W4A8_H

#include "../core/internal.h"

/* Columns per panel: one zmm of int32 accumulators (16 lanes). */
#define MPL_X86_W4A8_PANEL 16
/* K positions per 64-byte block: 4 in the low nibbles, 4 in the high nibbles (vpdpbusd takes 4 bytes per lane). */
#define MPL_X86_W4A8_KBLOCK 8

typedef struct mpl_x86_w4a8_layout {
    int64_t k, n;
    int64_t panels;    /* ceil(n / 16); columns n..16*panels-1 are padding (codes 0, scales 0) */
    int64_t group_len; /* K positions per group (k for group_size -1) */
    int64_t groups;
    mpl_wtype wtype;
    size_t panel_bytes; /* stride between panels in nib: k*8 (padding them apart measured no gain) */
    uint8_t *nib;      /* [panels] x panel_bytes: k/8 blocks of 64 bytes each, see the spec */
    float *scales;     /* [panels][groups][16] */
    uint8_t *zeros;    /* [panels][groups][16] zero points (uint4) or NULL (z = 8) */
    int32_t *perm;     /* [k] act-order: packed position j holds input channel perm[j]; or NULL */
} mpl_x86_w4a8_layout;

static inline const uint8_t *mpl_x86_w4a8_panel(const mpl_x86_w4a8_layout *p, int64_t pan) {
    return p->nib + (size_t)pan * p->panel_bytes;
}

/* Packs canonical weights (4-bit types; act-order only with uniform groups). */
mpl_status mpl_x86_w4a8_pack(const mpl_config *c, const mpl_canonical *w, mpl_x86_w4a8_layout **out);
/* Rebuilds the canonical form (codes, scales, zeros, g_idx, perm) from the packed layout. */
mpl_status mpl_x86_w4a8_unpack(const mpl_x86_w4a8_layout *p, mpl_canonical *out);
void mpl_x86_w4a8_free(mpl_x86_w4a8_layout *p);
/* Bytes of nibbles + scales + zeros. */
size_t mpl_x86_w4a8_bytes(const mpl_x86_w4a8_layout *p);

#endif
