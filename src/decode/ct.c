/*
 * ct.c -- compressed-tensors checkpoints: layouts ct (pack-quantized) and ct-int (int-quantized,
 * W4A8 int4). Decode and encode of both.
 *
 *   ct:     weight_packed     [N, Kp] int32, row n a dense bit stream along K: value k = code of (n, k)
 *           weight_scale      [N, G] (or [N] when G == 1)
 *           weight_zero_point [Np, G] (or [Np]) int32, column g a dense bit stream along N: value n = zero of (n, g)
 *   (Kp = K bits / 32, Np = ceil(N bits / 32); for 2-, 4- and 8-bit, value i is field i % pf of word i / pf.
 *   compressed-tensors >= 0.1x writes 3-bit densely; the older 10-per-word packing is refused by shape.)
 *   ct-int: weight            [N, K] int8, the signed int4 value, not packed (-8..7)
 *           weight_scale      as ct; no zero points
 *
 * Bit-level definition: docs/layouts/checkpoints.md.
 */
#include "decode.h"

/* ---- ct: pack-quantized ---- */

static mpl_status ct_check_shapes(const mpl_config *cfg, const mpl_checkpoint_tensors *ck) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    mpl_status st;
    if ((st = mpl_ckpt_expect("weight_packed", &ck->weight, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.n, d.k_words, false)) ||
        (st = mpl_ckpt_expect_scales("weight_scale", &ck->scales, d.n, d.groups, true)))
        return st;
    if (cfg->zero_points)
        return mpl_ckpt_expect("weight_zero_point", &ck->zeros, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.n_words, d.groups, true);
    return MPL_OK;
}

static mpl_status ct_decode(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups, KW = d.k_words;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            w->codes[n * K + k] = (uint8_t)mpl_ckpt_stream_get(&ck->weight, (size_t)(n * KW), 1, k, d.bits);
    mpl_ckpt_scales_decode(&ck->scales, true, &d, w->scales);
    if (cfg->zero_points)
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                w->zeros[n * G + g] = (uint8_t)mpl_ckpt_stream_get(&ck->zeros, (size_t)g, (size_t)G, n, d.bits);
    return MPL_OK;
}

static mpl_status ct_encode(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups, KW = d.k_words;
    mpl_status st;
    if ((st = mpl_ckpt_tensor_alloc(&out->weight, MPL_DTYPE_I32, N, KW)) ||
        (st = mpl_ckpt_tensor_alloc(&out->scales, src->scale_dtype, N, G)) ||
        (src->zeros && (st = mpl_ckpt_tensor_alloc(&out->zeros, MPL_DTYPE_I32, d.n_words, G))))
        return st;
    uint32_t *wp = (uint32_t *)out->weight.data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            mpl_ckpt_stream_put(&wp[n * KW], 1, k, d.bits, src->codes[n * K + k]);
    mpl_ckpt_scales_encode(src->scales, true, &d, &out->scales);
    if (src->zeros) {
        uint32_t *zp = (uint32_t *)out->zeros.data;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                mpl_ckpt_stream_put(&zp[g], (size_t)G, n, d.bits, src->zeros[n * G + g]);
    }
    return MPL_OK;
}

/* ---- ct-int: int-quantized ---- */

static mpl_status ct_int_rules(const mpl_config *cfg) {
    if (cfg->wtype != MPL_WTYPE_INT4)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "layout ct-int with wtype %s: int-quantized checkpoints hold signed int4 values (wtype int4)",
                             mpl_wtype_name(cfg->wtype));
    return MPL_OK;
}

static mpl_status ct_int_check_shapes(const mpl_config *cfg, const mpl_checkpoint_tensors *ck) {
    mpl_status st = ct_int_rules(cfg);
    if (st != MPL_OK) return st;
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    if ((st = mpl_ckpt_expect("weight", &ck->weight, MPL_DTYPE_I8, MPL_DTYPE_NONE, d.n, d.k, false))) return st;
    return mpl_ckpt_expect_scales("weight_scale", &ck->scales, d.n, d.groups, true);
}

/* The one layout whose values are range-checked: an int8 can hold what no int4 can. */
static mpl_status ct_int_decode(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n;
    const int8_t *vals = ck->weight.data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            int v = vals[n * K + k];
            if (v < -8 || v > 7)
                return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                     "weight[%lld, %lld] = %d: int-quantized int4 values must be in -8..7",
                                     (long long)n, (long long)k, v);
            w->codes[n * K + k] = (uint8_t)(v & 0xf); /* the two's-complement nibble */
        }
    mpl_ckpt_scales_decode(&ck->scales, true, &d, w->scales);
    return MPL_OK;
}

static mpl_status ct_int_encode(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out) {
    mpl_status st = ct_int_rules(cfg);
    if (st != MPL_OK) return st;
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n;
    if ((st = mpl_ckpt_tensor_alloc(&out->weight, MPL_DTYPE_I8, N, K)) ||
        (st = mpl_ckpt_tensor_alloc(&out->scales, src->scale_dtype, N, d.groups)))
        return st;
    int8_t *vals = (int8_t *)out->weight.data;
    for (int64_t i = 0; i < N * K; i++) {
        int c = src->codes[i];
        vals[i] = (int8_t)(c >= 8 ? c - 16 : c);
    }
    mpl_ckpt_scales_encode(src->scales, true, &d, &out->scales);
    return MPL_OK;
}

const mpl_codec mpl_codec_ct = {
    .layout = MPL_LAYOUT_CT,
    .check_shapes = ct_check_shapes,
    .decode = ct_decode,
    .encode = ct_encode,
};

const mpl_codec mpl_codec_ct_int = {
    .layout = MPL_LAYOUT_CT_INT,
    .check_shapes = ct_int_check_shapes,
    .decode = ct_int_decode,
    .encode = ct_int_encode,
};
