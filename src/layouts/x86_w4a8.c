/* x86_w4a8.c -- canonical <-> the x86 W4A8 packed layout (docs/layouts/x86_w4a8.md), every width. */
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

/* Stored code u for a canonical code: value + z with z = the bias (int4: flip bit 3) or the zero point.
 * Its own inverse. */
static inline uint8_t stored_of(mpl_wtype t, uint8_t code) {
    return t == MPL_WTYPE_INT4 ? (uint8_t)(code ^ 8u) : code;
}

/*
 * Where the bits of the code at (packed position j, column col) sit in its panel: slot i holds
 * `width` bits of u, starting at bit `from` of u, at bit `shift` of byte `at`. One slot for 2, 4 and
 * 8 bits; two for 3 bits (its low 2 bits in a 2-bit plane, its third bit in the step's bit block).
 * pack and unpack both go through here, so they are exact inverses by construction.
 */
typedef struct {
    size_t at;
    int shift, width, from;
} slot;

static int slots_of(int bits, int64_t j, int col, slot s[2]) {
    const size_t lane = (size_t)col * 4 + (size_t)(j % 4);
    if (bits != 3) {
        const int64_t per_block = 32 / bits; /* K positions per 64-byte block: 4, 8 or 16 */
        s[0] = (slot){(size_t)(j / per_block) * 64 + lane, bits * (int)((j % per_block) / 4), bits, 0};
        return 1;
    }
    const int64_t i = j % 32;
    const size_t step = (size_t)(j / 32) * 192;
    s[0] = (slot){step + (size_t)(i / 16) * 64 + lane, 2 * (int)((i % 16) / 4), 2, 0};
    s[1] = (slot){step + 128 + lane, (int)(i / 4), 1, 2};
    return 2;
}

mpl_status mpl_x86_w4a8_pack(const mpl_config *c, const mpl_canonical *w, mpl_x86_w4a8_layout **out) {
    *out = NULL;
    const int bits = mpl_wtype_bits(w->wtype);
    if (w->k % MPL_X86_W4A8_KBLOCK != 0 || w->k % mpl_x86_w4a8_kstep(bits) != 0 ||
        w->group_size % mpl_x86_w4a8_kstep(bits) != 0 || (w->g_idx && !w->act_order_uniform))
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
    p->bits = bits;
    p->zbias = w->wtype == MPL_WTYPE_INT4 ? 8 : mpl_wtype_bias(w->wtype);
    size_t nib_bytes, per_group;
    if (!mpl_size_mul3(p->k, 2 * bits, 1, &p->panel_bytes) || !mpl_size_mul3(p->panels, (int64_t)p->panel_bytes, 1, &nib_bytes) ||
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
            unsigned u = stored_of(p->wtype, src[p->perm ? p->perm[j] : j]);
            slot s[2];
            for (int i = 0, ns = slots_of(bits, j, col, s); i < ns; i++)
                dst[s[i].at] |= (uint8_t)(((u >> s[i].from) & ((1u << s[i].width) - 1u)) << s[i].shift);
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
            unsigned u = 0;
            slot s[2];
            for (int i = 0, ns = slots_of(p->bits, j, col, s); i < ns; i++)
                u |= ((unsigned)(src[s[i].at] >> s[i].shift) & ((1u << s[i].width) - 1u)) << s[i].from;
            out->codes[(size_t)n * (size_t)K + (size_t)(p->perm ? p->perm[j] : j)] = stored_of(p->wtype, (uint8_t)u);
        }
        for (int64_t g = 0; g < G; g++) {
            size_t at = ((size_t)pan * (size_t)G + (size_t)g) * MPL_X86_W4A8_PANEL + (size_t)col;
            out->scales[n * G + g] = p->scales[at];
            if (p->zeros) out->zeros[n * G + g] = p->zeros[at];
        }
    }
    return MPL_OK;
}
