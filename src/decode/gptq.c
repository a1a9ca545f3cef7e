/*
 * gptq.c -- AutoGPTQ / GPTQModel checkpoints: layouts gptq ("v1" zeros, stored as zero - 1) and
 * gptq-v2 (zeros stored as they are). Decode and encode of both.
 *
 *   qweight [Kp, N] int32, column n a dense bit stream along K: value k = code of (n, k)
 *   scales  [G, N]
 *   qzeros  [G, Np]   int32, row g a dense bit stream along N: value n = zero (v1: zero - 1) of (n, g)
 *   (Kp = K bits / 32, Np = ceil(N bits / 32); for 2-, 4- and 8-bit, value i is field i % pf of word i / pf;
 *   AutoGPTQ's 3-bit packing -- 10 values, one split across words, 10, split, 10 -- is this same stream.)
 *
 * Bit-level definition and the v1 table: docs/layouts/checkpoints.md.
 */
#include "decode.h"

static mpl_status gptq_check_shapes(const mpl_config *cfg, const mpl_checkpoint_tensors *ck) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    mpl_status st;
    if ((st = mpl_ckpt_expect("qweight", &ck->weight, MPL_DTYPE_I32, MPL_DTYPE_NONE, d.k_words, d.n, false)) ||
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
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            w->codes[n * K + k] = (uint8_t)mpl_ckpt_stream_get(&ck->weight, (size_t)n, (size_t)N, k, d.bits);
    mpl_ckpt_scales_decode(&ck->scales, false, &d, w->scales);
    if (cfg->zero_points) {
        int mask = (1 << d.bits) - 1;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                int z = mpl_ckpt_stream_get(&ck->zeros, (size_t)(g * d.n_words), 1, n, d.bits);
                w->zeros[n * G + g] = (uint8_t)((z + zero_bias) & mask);
            }
    }
    return MPL_OK;
}

static mpl_status encode_common(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out,
                                int zero_bias) {
    mpl_ckpt_dims d = mpl_ckpt_dims_of(cfg);
    const int64_t K = d.k, N = d.n, G = d.groups;
    mpl_status st;
    if ((st = mpl_ckpt_tensor_alloc(&out->weight, MPL_DTYPE_I32, d.k_words, N)) ||
        (st = mpl_ckpt_tensor_alloc(&out->scales, src->scale_dtype, G, N)) ||
        (src->zeros && (st = mpl_ckpt_tensor_alloc(&out->zeros, MPL_DTYPE_I32, G, d.n_words))))
        return st;
    uint32_t *qw = (uint32_t *)out->weight.data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            mpl_ckpt_stream_put(&qw[n], (size_t)N, k, d.bits, src->codes[n * K + k]);
    mpl_ckpt_scales_encode(src->scales, false, &d, &out->scales);
    if (src->zeros) {
        uint32_t *qz = (uint32_t *)out->zeros.data;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                mpl_ckpt_stream_put(&qz[g * d.n_words], 1, n, d.bits, src->zeros[n * G + g] - zero_bias);
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
