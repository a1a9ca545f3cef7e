/*
 * awq.c -- AutoAWQ (GEMM) checkpoints: layout awq. Decode and encode.
 *
 *   qweight [K, N/pf] int32, packed along N, interleaved: word (k, w) field i = code of (n = pf*w + order[i], k)
 *   scales  [G, N]
 *   qzeros  [G, N/pf] int32, the same interleave; raw zeros
 *
 * N must be a multiple of pf, and AWQ checkpoints carry no g_idx. Bit-level definition:
 * docs/layouts/checkpoints.md.
 */
#include "decode.h"

/* AutoAWQ's interleave: field i of a word holds column order[i] of its pf columns; column j sits in
 * field field_of[j] (the inverse permutation; the 8-bit order is its own inverse). */
static const int order4[8] = {0, 2, 4, 6, 1, 3, 5, 7};
static const int field_of4[8] = {0, 4, 1, 5, 2, 6, 3, 7};
static const int order8[4] = {0, 2, 1, 3};

static const int *order_of(int bits) { return bits == 4 ? order4 : order8; }
static const int *field_of(int bits) { return bits == 4 ? field_of4 : order8; }

static mpl_status awq_rules(const mpl_config *cfg) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    if (d.bits != 4 && d.bits != 8)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "layout awq with wtype %s: AWQ's interleaved packing is defined for 4- and 8-bit weights",
                             mpl_wtype_name(cfg->wtype));
    if (d.n % d.pf != 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "AWQ layout with n = %lld: n must be a multiple of %d",
                             (long long)d.n, d.pf);
    if (cfg->act_order)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "layout awq with act_order: AWQ checkpoints have no g_idx");
    return MPL_OK;
}

static mpl_status awq_check_shapes(const mpl_config *cfg, const mpl_checkpoint_tensors *ck) {
    mpl_status st = awq_rules(cfg);
    if (st != MPL_OK) return st;
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    if ((st = mpl_ckpt_expect("qweight", &ck->weight, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.k, d.n / d.pf, false)) ||
        (st = mpl_ckpt_expect_scales("scales", &ck->scales, d.groups, d.n, false)))
        return st;
    if (cfg->zero_points)
        return mpl_ckpt_expect("qzeros", &ck->zeros, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.groups, d.n / d.pf, false);
    return MPL_OK;
}

static mpl_status awq_decode(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups, NW = d.n / d.pf;
    const int *order = order_of(d.bits);
    for (int64_t k = 0; k < K; k++)
        for (int64_t nw = 0; nw < NW; nw++) {
            uint32_t v = mpl_ckpt_word(&ck->weight, (size_t)(k * NW + nw));
            for (int i = 0; i < d.pf; i++)
                w->codes[(nw * d.pf + order[i]) * K + k] = (uint8_t)mpl_ckpt_field(v, i, d.bits);
        }
    mpl_ckpt_scales_decode(&ck->scales, false, &d, w->scales);
    if (cfg->zero_points) {
        const int *field = field_of(d.bits);
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                uint32_t v = mpl_ckpt_word(&ck->zeros, (size_t)(g * NW + n / d.pf));
                w->zeros[n * G + g] = (uint8_t)mpl_ckpt_field(v, field[n % d.pf], d.bits);
            }
    }
    return MPL_OK;
}

static mpl_status awq_encode(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out) {
    mpl_status st = awq_rules(cfg);
    if (st != MPL_OK) return st;
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups, NW = d.n / d.pf;
    if ((st = mpl_ckpt_tensor_alloc(&out->weight, MPL_DTYPE_I32, K, NW)) ||
        (st = mpl_ckpt_tensor_alloc(&out->scales, src->scale_dtype, G, N)) ||
        (src->zeros && (st = mpl_ckpt_tensor_alloc(&out->zeros, MPL_DTYPE_I32, G, NW))))
        return st;
    const int *field = field_of(d.bits);
    uint32_t *qw = (uint32_t *)out->weight.data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            mpl_ckpt_put_field(&qw[k * NW + n / d.pf], field[n % d.pf], d.bits, src->codes[n * K + k]);
    mpl_ckpt_scales_encode(src->scales, false, &d, &out->scales);
    if (src->zeros) {
        uint32_t *qz = (uint32_t *)out->zeros.data;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                mpl_ckpt_put_field(&qz[g * NW + n / d.pf], field[n % d.pf], d.bits, src->zeros[n * G + g]);
    }
    return MPL_OK;
}

const mpl_codec mpl_codec_awq = {
    .layout = MPL_LAYOUT_AWQ,
    .check_shapes = awq_check_shapes,
    .decode = awq_decode,
    .encode = awq_encode,
};
