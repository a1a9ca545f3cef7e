/* canonical.c -- the canonical weight form: allocation and act-order resolution. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

mpl_status mpl_canonical_alloc(mpl_canonical *w, const mpl_config *cfg) {
    return mpl_canonical_alloc_groups(w, cfg, cfg->group_size == -1 ? 1 : cfg->k / cfg->group_size);
}

mpl_status mpl_canonical_alloc_groups(mpl_canonical *w, const mpl_config *cfg, int64_t groups) {
    memset(w, 0, sizeof *w);
    w->k = cfg->k;
    w->n = cfg->n;
    w->group_size = cfg->group_size == -1 ? cfg->k : cfg->group_size;
    w->groups = groups;
    w->wtype = cfg->wtype;
    size_t ncodes, nscales;
    if (!mpl_size_mul3(w->n, w->k, 1, &ncodes) || !mpl_size_mul3(w->n, w->groups, sizeof(float), &nscales))
        return mpl_set_error(MPL_ERR_OVERFLOW, "canonical weights of n = %lld, k = %lld: byte count overflows",
                             (long long)w->n, (long long)w->k);
    w->codes = calloc(ncodes, 1);
    w->scales = calloc(nscales, 1);
    if (cfg->zero_points) w->zeros = calloc(nscales / sizeof(float), 1);
    if (cfg->act_order) w->g_idx = calloc((size_t)w->k, sizeof(int32_t));
    if (!w->codes || !w->scales || (cfg->zero_points && !w->zeros) || (cfg->act_order && !w->g_idx)) {
        mpl_canonical_free(w);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "canonical weights: cannot allocate %zu bytes", ncodes + nscales);
    }
    return MPL_OK;
}

void mpl_canonical_free(mpl_canonical *w) {
    if (!w) return;
    free(w->codes);
    free(w->scales);
    free(w->zeros);
    free(w->g_idx);
    free(w->perm);
    memset(w, 0, sizeof *w);
}

mpl_status mpl_canonical_restore_act_order(mpl_canonical *w, const int32_t *perm) {
    for (int64_t j = 0; j < w->k; j++) w->g_idx[perm[j]] = (int32_t)(j / w->group_size);
    mpl_status st = mpl_canonical_resolve_act_order(w);
    if (st != MPL_OK) mpl_canonical_free(w);
    return st;
}

mpl_status mpl_canonical_resolve_act_order(mpl_canonical *w) {
    if (!w->g_idx) return MPL_OK;
    int64_t *count = calloc((size_t)w->groups + 1, sizeof(int64_t));
    w->perm = malloc((size_t)w->k * sizeof(int32_t));
    if (!count || !w->perm) {
        free(count);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "act-order: cannot allocate permutation of %lld", (long long)w->k);
    }
    for (int64_t i = 0; i < w->k; i++) {
        int32_t g = w->g_idx[i];
        if (g < 0 || g >= w->groups) {
            free(count);
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "g_idx[%lld] = %d: must be in 0..%lld (groups = k / group_size)",
                                 (long long)i, g, (long long)w->groups - 1);
        }
        count[g + 1]++;
    }
    w->act_order_uniform = true;
    for (int64_t g = 0; g < w->groups; g++)
        if (count[g + 1] != w->group_size) w->act_order_uniform = false;
    /* Counting sort (stable): start offset of each group. */
    for (int64_t g = 0; g < w->groups; g++) count[g + 1] += count[g];
    for (int64_t i = 0; i < w->k; i++) w->perm[count[w->g_idx[i]]++] = (int32_t)i;
    free(count);
    return MPL_OK;
}

void mpl_config_planes(const mpl_config *c, mpl_config *c2) {
    /* K <= MPL_MAX_DIM = 2^24 (validated), so 2K channels stay far inside every index */
    *c2 = *c;
    c2->k = 2 * c->k;
    c2->full_k = 0;
    c2->wtype = MPL_WTYPE_UINT4;
    c2->zero_points = 1;
    c2->act_order = 0;
    c2->group_size = c->group_size == -1 ? c->k : c->group_size; /* group -1: one group per plane */
}

mpl_status mpl_canonical_planes(const mpl_config *c, const mpl_canonical *w, mpl_config *c2, mpl_canonical *w2,
                                int32_t **perm2) {
    const int64_t K = w->k, N = w->n, G = w->groups, gs = w->group_size;
    *perm2 = NULL;
    mpl_config_planes(c, c2);
    mpl_status st = mpl_canonical_alloc_groups(w2, c2, 2 * G);
    if (st != MPL_OK) return st;
    w2->group_size = gs;
    int32_t *p2 = malloc((size_t)(2 * K) * sizeof(int32_t));
    if (!p2) {
        mpl_canonical_free(w2);
        return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "8-bit planes: cannot allocate the plane permutation");
    }
    for (int64_t j = 0; j < K; j++) p2[j] = p2[K + j] = w->perm ? w->perm[j] : (int32_t)j;
    for (int64_t n = 0; n < N; n++) {
        const uint8_t *src = w->codes + n * K;
        uint8_t *lo = w2->codes + n * 2 * K, *hi = lo + K;
        for (int64_t j = 0; j < K; j++) {
            uint8_t code = src[p2[j]];
            lo[j] = code & 15u;
            hi[j] = (uint8_t)(code >> 4);
        }
        for (int64_t g = 0; g < G; g++) {
            int z = w->zeros ? w->zeros[n * G + g] : 128;
            float s = w->scales[n * G + g];
            w2->scales[n * 2 * G + g] = s;
            w2->scales[n * 2 * G + G + g] = 16.0f * s; /* exact: a power of two */
            w2->zeros[n * 2 * G + g] = (uint8_t)(z & 15);
            w2->zeros[n * 2 * G + G + g] = (uint8_t)(z >> 4);
        }
    }
    *perm2 = p2;
    return MPL_OK;
}
