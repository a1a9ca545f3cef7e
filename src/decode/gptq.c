/*
 * gptq.c -- AutoGPTQ / GPTQModel checkpoints: layouts gptq ("v1" zeros, stored as zero - 1) and
 * gptq-v2 (zeros stored as they are). Decode and encode of both.
 *
 *   qweight [K/pf, N] int32, packed along K: word (r, n) field i = code of (n, k = pf*r + i)
 *   scales  [G, N]
 *   qzeros  [G, Np]   int32, packed along N: word (g, r) field i = zero (v1: zero - 1) of (n = pf*r + i, g)
 *
 * Bit-level definition and the v1 table: docs/layouts/checkpoints.md.
 */
#include "decode.h"

static mpl_status gptq_check_shapes(const mpl_config *cfg, const mpl_checkpoint_tensors *ck) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    mpl_status st;
    if ((st = mpl_ckpt_expect("qweight", &ck->weight, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.k / d.pf, d.n, false)) ||
        (st = mpl_ckpt_expect_scales("scales", &ck->scales, d.groups, d.n, false)))
        return st;
    if (cfg->zero_points)
        return mpl_ckpt_expect("qzeros", &ck->zeros, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.groups, d.n_words, false);
    return MPL_OK;
}

/* zero_bias: a qzeros field holds zero - zero_bias (mod 2^bits): 1 for gptq, 0 for gptq-v2. */
static mpl_status decode_common(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w,
                                int zero_bias) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups;
    for (int64_t r = 0; r < K / d.pf; r++)
        for (int64_t n = 0; n < N; n++) {
            uint32_t v = mpl_ckpt_word(&ck->weight, (size_t)(r * N + n));
            for (int i = 0; i < d.pf; i++) w->codes[n * K + r * d.pf + i] = (uint8_t)mpl_ckpt_field(v, i, d.bits);
        }
    mpl_ckpt_scales_decode(&ck->scales, false, &d, w->scales);
    if (cfg->zero_points) {
        int mask = (1 << d.bits) - 1;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                uint32_t v = mpl_ckpt_word(&ck->zeros, (size_t)(g * d.n_words + n / d.pf));
                w->zeros[n * G + g] = (uint8_t)((mpl_ckpt_field(v, (int)(n % d.pf), d.bits) + zero_bias) & mask);
            }
    }
    return MPL_OK;
}

static mpl_status encode_common(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out,
                                int zero_bias) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups;
    mpl_status st;
    if ((st = mpl_ckpt_tensor_alloc(&out->weight, MPL_DTYPE_I32, K / d.pf, N)) ||
        (st = mpl_ckpt_tensor_alloc(&out->scales, src->scale_dtype, G, N)) ||
        (src->zeros && (st = mpl_ckpt_tensor_alloc(&out->zeros, MPL_DTYPE_I32, G, d.n_words))))
        return st;
    uint32_t *qw = (uint32_t *)out->weight.data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            mpl_ckpt_put_field(&qw[(k / d.pf) * N + n], (int)(k % d.pf), d.bits, src->codes[n * K + k]);
    mpl_ckpt_scales_encode(src->scales, false, &d, &out->scales);
    if (src->zeros) {
        uint32_t *qz = (uint32_t *)out->zeros.data;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                mpl_ckpt_put_field(&qz[g * d.n_words + n / d.pf], (int)(n % d.pf), d.bits,
                                   src->zeros[n * G + g] - zero_bias);
    }
    return MPL_OK;
}

/* gptq: AutoGPTQ's historic off-by-one, stored zero - 1 (wrapped: zero 0 is stored as 2^bits - 1). */
static mpl_status gptq_decode(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    return decode_common(cfg, ck, w, 1);
}
static mpl_status gptq_encode(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out) {
    return encode_common(cfg, src, out, 1);
}

/* gptq-v2 (checkpoint_format "gptq_v2"): the zero itself. */
static mpl_status gptq_v2_decode(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    return decode_common(cfg, ck, w, 0);
}
static mpl_status gptq_v2_encode(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out) {
    return encode_common(cfg, src, out, 0);
}

const mpl_codec mpl_codec_gptq = {
    .layout = MPL_LAYOUT_GPTQ,
    .check_shapes = gptq_check_shapes,
    .decode = gptq_decode,
    .encode = gptq_encode,
};

const mpl_codec mpl_codec_gptq_v2 = {
    .layout = MPL_LAYOUT_GPTQ_V2,
    .check_shapes = gptq_check_shapes,
    .decode = gptq_v2_decode,
    .encode = gptq_v2_encode,
};
