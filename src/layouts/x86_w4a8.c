/* x86_w4a8.c -- canonical <-> the x86 W4A8 packed layout (docs/layouts/x86_w4a8.md). */
#include <stdlib.h>
#include <string.h>

#include "x86_w4a8.h"

void mpl_x86_w4a8_free(mpl_x86_w4a8_layout *p) {
    if (!p) return;
    mpl_aligned_free(p->nib);
    mpl_aligned_free(p->scales);
    mpl_aligned_free(p->zeros);
    free(p->perm);
    free(p);
}

size_t mpl_x86_w4a8_bytes(const mpl_x86_w4a8_layout *p) {
    size_t per_group = (size_t)p->panels * (size_t)p->groups * MPL_X86_W4A8_PANEL;
    return (size_t)p->panels * p->panel_bytes + per_group * 4 + (p->zeros ? per_group : 0);
}

/* Unsigned nibble for a stored code: value + z with z = 8 (int4: flip bit 3) or the zero point. */
static inline uint8_t nibble_of(mpl_wtype t, uint8_t code) {
    return t == MPL_WTYPE_INT4 ? (uint8_t)(code ^ 8u) : code;
}

/* Byte offset and shift of (column c in panel, packed position j) in the panel's nibble stream. */
static inline size_t nib_byte(int64_t j, int c) { return (size_t)(j / 8) * 64 + (size_t)c * 4 + (size_t)(j % 4); }
static inline int nib_shift(int64_t j) { return (j % 8) >= 4 ? 4 : 0; }

mpl_status mpl_x86_w4a8_pack(const mpl_config *c, const mpl_canonical *w, mpl_x86_w4a8_layout **out) {
    *out = NULL;
    if (mpl_wtype_bits(w->wtype) != 4 || w->k % MPL_X86_W4A8_KBLOCK != 0 || (w->g_idx && !w->act_order_uniform))
        return mpl_set_error(MPL_ERR_INTERNAL, "x86_w4a8 pack: unsupported weights (can_implement should refuse)");
    (void)c;
    mpl_x86_w4a8_layout *p = calloc(1, sizeof *p);
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86_w4a8 pack: out of memory");
    p->k = w->k;
    p->n = w->n;
    p->panels = (w->n + MPL_X86_W4A8_PANEL - 1) / MPL_X86_W4A8_PANEL;
    p->group_len = w->group_size;
    p->groups = w->groups;
    p->wtype = w->wtype;
    size_t nib_bytes, per_group;
    p->panel_bytes = (size_t)p->k * (MPL_X86_W4A8_PANEL / 2);
    if (!mpl_size_mul3(p->panels, (int64_t)p->panel_bytes, 1, &nib_bytes) ||
        !mpl_size_mul3(p->panels, p->groups, MPL_X86_W4A8_PANEL, &per_group) || per_group > SIZE_MAX / 4) {
        free(p);
        return mpl_set_error(MPL_ERR_OVERFLOW, "x86_w4a8 pack: n = %lld, k = %lld: byte count overflows",
                             (long long)w->n, (long long)w->k);
    }
    p->nib = mpl_aligned_alloc(nib_bytes);
    p->scales = mpl_aligned_alloc(per_group * 4);
    if (w->zeros) p->zeros = mpl_aligned_alloc(per_group);
    if (w->perm) p->perm = malloc((size_t)w->k * sizeof(int32_t));
    if (!p->nib || !p->scales || (w->zeros && !p->zeros) || (w->perm && !p->perm)) {
        mpl_x86_w4a8_free(p);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86_w4a8 pack: cannot allocate %zu bytes", nib_bytes);
    }
    memset(p->nib, 0, nib_bytes);
    memset(p->scales, 0, per_group * 4);
    if (p->zeros) memset(p->zeros, 0, per_group);
    if (p->perm) memcpy(p->perm, w->perm, (size_t)w->k * sizeof(int32_t));
    const int64_t K = p->k, G = p->groups;
    for (int64_t n = 0; n < w->n; n++) {
        int64_t pan = n / MPL_X86_W4A8_PANEL;
        int col = (int)(n % MPL_X86_W4A8_PANEL);
        uint8_t *dst = p->nib + (size_t)pan * p->panel_bytes;
        const uint8_t *src = w->codes + (size_t)n * (size_t)K;
        for (int64_t j = 0; j < K; j++) {
            uint8_t code = src[p->perm ? p->perm[j] : j];
            dst[nib_byte(j, col)] |= (uint8_t)(nibble_of(p->wtype, code) << nib_shift(j));
        }
        for (int64_t g = 0; g < G; g++) {
            size_t at = ((size_t)pan * (size_t)G + (size_t)g) * MPL_X86_W4A8_PANEL + (size_t)col;
            p->scales[at] = w->scales[n * G + g];
            if (p->zeros) p->zeros[at] = w->zeros[n * G + g];
        }
    }
    *out = p;
    return MPL_OK;
}

mpl_status mpl_x86_w4a8_unpack(const mpl_x86_w4a8_layout *p, mpl_canonical *out) {
    mpl_config c;
    mpl_config_init(&c, p->k, p->n);
    c.wtype = p->wtype;
    c.group_size = p->groups == 1 ? -1 : p->group_len;
    c.zero_points = p->zeros != NULL;
    c.act_order = p->perm != NULL;
    mpl_status st = mpl_canonical_alloc(out, &c);
    if (st != MPL_OK) return st;
    const int64_t K = p->k, G = p->groups;
    if (p->perm) {
        out->perm = malloc((size_t)K * sizeof(int32_t));
        if (!out->perm) {
            mpl_canonical_free(out);
            return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "x86_w4a8 unpack: out of memory");
        }
        memcpy(out->perm, p->perm, (size_t)K * sizeof(int32_t));
        for (int64_t j = 0; j < K; j++) out->g_idx[p->perm[j]] = (int32_t)(j / p->group_len);
        out->act_order_uniform = true;
    }
    for (int64_t n = 0; n < p->n; n++) {
        int64_t pan = n / MPL_X86_W4A8_PANEL;
        int col = (int)(n % MPL_X86_W4A8_PANEL);
        const uint8_t *src = mpl_x86_w4a8_panel(p, pan);
        for (int64_t j = 0; j < K; j++) {
            uint8_t u = (uint8_t)((src[nib_byte(j, col)] >> nib_shift(j)) & 15u);
            out->codes[(size_t)n * (size_t)K + (size_t)(p->perm ? p->perm[j] : j)] = nibble_of(p->wtype, u);
        }
        for (int64_t g = 0; g < G; g++) {
            size_t at = ((size_t)pan * (size_t)G + (size_t)g) * MPL_X86_W4A8_PANEL + (size_t)col;
            out->scales[n * G + g] = p->scales[at];
            if (p->zeros) out->zeros[n * G + g] = p->zeros[at];
        }
    }
    return MPL_OK;
}
