/* vulkan_w4a16.c -- pack and unpack of the Vulkan W4A16 layout (docs/layouts/vulkan_w4a16.md). */
#include "vulkan_w4a16.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

static bool align_up(size_t v, size_t *out) {
    size_t t;
    if (mpl_add_overflow_sz(v, MPL_VULKAN_W4A16_ALIGN - 1, &t)) return false;
    *out = t / MPL_VULKAN_W4A16_ALIGN * MPL_VULKAN_W4A16_ALIGN;
    return true;
}

mpl_status mpl_vulkan_w4a16_plan(const mpl_config *c, mpl_vulkan_w4a16_layout *l) {
    memset(l, 0, sizeof *l);
    if (c->k < 1 || c->n < 1 || c->k > MPL_MAX_DIM || c->n > MPL_MAX_DIM)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan_w4a16 layout: k = %lld, n = %lld: must be 1..%lld",
                             (long long)c->k, (long long)c->n, (long long)MPL_MAX_DIM);
    if (mpl_wtype_bits(c->wtype) == 8) { /* two planes: the sizes of the 2k-channel uint4 layer */
        if (c->k % 16 != 0)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                 "vulkan_w4a16 layout: k = %lld with 8-bit weights: must be a multiple of 16 (the high "
                                 "plane's groups start on a 16-channel boundary)",
                                 (long long)c->k);
        mpl_config c2;
        mpl_config_planes(c, &c2);
        mpl_status st = mpl_vulkan_w4a16_plan(&c2, l);
        l->k_in = c->k, l->planes = 2, l->wtype = c->wtype, l->cfg_group_size = c->group_size;
        return st;
    }
    l->k = l->k_in = c->k, l->n = c->n;
    l->planes = 1;
    l->k_pad = round_up(c->k, MPL_VULKAN_W4A16_KP);
    l->n_pad = round_up(c->n, MPL_VULKAN_W4A16_NP);
    l->cfg_group_size = c->group_size;
    l->group_size = c->group_size == -1 ? c->k : c->group_size;
    l->groups = (c->k + l->group_size - 1) / l->group_size;
    l->zstride = round_up(l->groups, 4);
    l->wtype = c->wtype;
    size_t end;
    if (!mpl_size_mul3(l->n_pad, l->k_pad / 2, 1, &l->qweight_bytes) ||
        !mpl_size_mul3(l->n_pad, l->groups, 4, &l->scales_bytes) ||
        (c->zero_points && !mpl_size_mul3(l->n_pad, l->zstride, 1, &l->zeros_bytes)))
        return mpl_set_error(MPL_ERR_OVERFLOW, "vulkan_w4a16 layout: k = %lld, n = %lld: sizes overflow",
                             (long long)c->k, (long long)c->n);
    l->qweight_off = 0;
    if (!align_up(l->qweight_bytes, &l->scales_off) || mpl_add_overflow_sz(l->scales_off, l->scales_bytes, &end) ||
        !align_up(end, &l->zeros_off) || mpl_add_overflow_sz(l->zeros_off, l->zeros_bytes, &end) ||
        !align_up(end, &l->bytes))
        return mpl_set_error(MPL_ERR_OVERFLOW, "vulkan_w4a16 layout: k = %lld, n = %lld: sizes overflow",
                             (long long)c->k, (long long)c->n);
    return MPL_OK;
}

void mpl_vulkan_w4a16_layout_free(mpl_vulkan_w4a16_layout *l) {
    if (!l) return;
    mpl_aligned_free(l->image);
    free(l->perm);
    l->image = NULL, l->perm = NULL;
}

/* 8-bit: the two planes' canonical form (mpl_canonical_planes, as cuda_w4a16), packed as the uint4 layer of 2k
 * channels, then the duplicating perm and the 8-bit identity set. */
static mpl_status pack8(const mpl_config *c, const mpl_canonical *w, mpl_vulkan_w4a16_layout *l) {
    mpl_status st = mpl_vulkan_w4a16_plan(c, l); /* k's range and k % 16 */
    if (st != MPL_OK) return st;
    if (w->g_idx && (!w->perm || !w->act_order_uniform))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "vulkan_w4a16 pack: act-order groups must each have group_size members (resolved perm)");
    for (int64_t i = 0; i < w->n * w->groups; i++)
        if (isfinite(w->scales[i]) && !isfinite(16.0f * w->scales[i]))
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                 "vulkan_w4a16 pack: 8-bit scale %g (row %lld): the high plane's 16 x scale overflows f32",
                                 (double)w->scales[i], (long long)(i / w->groups));
    mpl_config c2;
    mpl_canonical w2;
    int32_t *perm2;
    st = mpl_canonical_planes(c, w, &c2, &w2, &perm2);
    if (st != MPL_OK) return st;
    st = mpl_vulkan_w4a16_pack(&c2, &w2, l);
    mpl_canonical_free(&w2);
    if (st != MPL_OK) {
        free(perm2);
        return st;
    }
    l->perm = perm2; /* w2 carries none: its codes are in packed order */
    l->k_in = c->k, l->planes = 2, l->wtype = c->wtype, l->cfg_group_size = c->group_size;
    return MPL_OK;
}

mpl_status mpl_vulkan_w4a16_pack(const mpl_config *c, const mpl_canonical *w, mpl_vulkan_w4a16_layout *l) {
    memset(l, 0, sizeof *l);
    if (mpl_wtype_width(c->wtype) == 0 || (mpl_wtype_zero_points(c->wtype) != 0) != (w->zeros != NULL))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "vulkan_w4a16 pack: weight type %s%s: takes uint4b8, int4, uint3b4, uint2b2, uint8b128, "
                             "or uint4, uint3, uint2, uint8 with zero points",
                             mpl_wtype_name(c->wtype), w->zeros ? " with zero points" : "");
    if (mpl_wtype_bits(c->wtype) == 8) return pack8(c, w, l);
    mpl_status st = mpl_vulkan_w4a16_plan(c, l);
    if (st != MPL_OK) return st;
    if (w->g_idx && (!w->perm || !w->act_order_uniform))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "vulkan_w4a16 pack: act-order groups must each have group_size members (resolved perm)");
    l->image = mpl_aligned_alloc(l->bytes);
    if (w->perm) l->perm = malloc((size_t)l->k * sizeof(int32_t));
    if (!l->image || (w->perm && !l->perm)) {
        mpl_vulkan_w4a16_layout_free(l);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "vulkan_w4a16 pack: out of memory (%zu bytes)", l->bytes);
    }
    memset(l->image, 0, l->bytes);
    if (w->perm) memcpy(l->perm, w->perm, (size_t)l->k * sizeof(int32_t));
    uint32_t *q = (uint32_t *)(l->image + l->qweight_off);
    float *s = (float *)(l->image + l->scales_off);
    uint8_t *z = l->zeros_bytes ? l->image + l->zeros_off : NULL;
    for (int64_t n = 0; n < l->n; n++) {
        const uint8_t *row = w->codes + (size_t)n * (size_t)w->k;
        for (int64_t p = 0; p < l->k; p++) {
            const unsigned code = mpl_code4(l->wtype, row[w->perm ? w->perm[p] : p]) & 15u;
            q[mpl_vulkan_w4a16_word_index(l, n, p)] |= (uint32_t)code << mpl_vulkan_w4a16_nibble_shift(p);
        }
        for (int64_t g = 0; g < l->groups; g++) {
            s[(size_t)n * (size_t)l->groups + (size_t)g] = w->scales[(size_t)n * (size_t)w->groups + (size_t)g];
            if (z) z[(size_t)n * (size_t)l->zstride + (size_t)g] = w->zeros[(size_t)n * (size_t)w->groups + (size_t)g];
        }
    }
    return MPL_OK;
}

/* The inverse; 8-bit: code = low | high << 4, the low plane's scales, zero = zl | zh << 4 (uint8 only). */
mpl_status mpl_vulkan_w4a16_unpack(const mpl_vulkan_w4a16_layout *l, int act_order, mpl_canonical *out) {
    mpl_config c;
    mpl_config_init(&c, l->k_in, l->n);
    c.wtype = l->wtype;
    c.group_size = l->cfg_group_size;
    c.zero_points = mpl_wtype_zero_points(l->wtype);
    c.act_order = act_order;
    if (act_order && !l->perm)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan_w4a16 unpack: act-order asked but no permutation");
    mpl_status st = mpl_canonical_alloc(out, &c);
    if (st != MPL_OK) return st;
    const uint32_t *q = (const uint32_t *)(l->image + l->qweight_off);
    const float *s = (const float *)(l->image + l->scales_off);
    const uint8_t *z = l->zeros_bytes ? l->image + l->zeros_off : NULL;
    const int64_t G = l->groups / l->planes;
    for (int64_t n = 0; n < l->n; n++) {
        uint8_t *codes = out->codes + (size_t)n * (size_t)l->k_in;
        for (int64_t p = 0; p < l->k; p++) {
            unsigned stored = (q[mpl_vulkan_w4a16_word_index(l, n, p)] >> mpl_vulkan_w4a16_nibble_shift(p)) & 15u;
            const size_t at = (size_t)(l->perm ? l->perm[p] : p);
            if (l->planes == 2)
                codes[at] = (uint8_t)(p < l->k_in ? stored : codes[at] | stored << 4); /* the low plane comes first */
            else
                codes[at] = (uint8_t)mpl_code4_back(l->wtype, stored);
        }
        for (int64_t g = 0; g < G; g++) {
            out->scales[(size_t)n * (size_t)G + (size_t)g] = s[(size_t)n * (size_t)l->groups + (size_t)g];
            if (c.zero_points) {
                unsigned zz = z[(size_t)n * (size_t)l->zstride + (size_t)g];
                if (l->planes == 2) zz |= (unsigned)z[(size_t)n * (size_t)l->zstride + (size_t)(G + g)] << 4;
                out->zeros[(size_t)n * (size_t)G + (size_t)g] = (uint8_t)zz;
            }
        }
    }
    return act_order ? mpl_canonical_restore_act_order(out, l->perm) : MPL_OK;
}
