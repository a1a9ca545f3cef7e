/*
 * decode.c -- the codec table, walked by mpl_decode_checkpoint and mpl_checkpoint_encode, plus
 * what every layout shares: g_idx, tensor checks, scales, allocation.
 * Layout definitions: docs/layouts/checkpoints.md; the rows live in gptq.c, awq.c and ct.c.
 */
#include "decode.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In mpl_layout order; adding a layout = one row here and its codec in its family's file. */
static const mpl_codec *const codecs[] = {&mpl_codec_ct, &mpl_codec_gptq, &mpl_codec_gptq_v2, &mpl_codec_awq,
                                          &mpl_codec_ct_int};

static const mpl_codec *codec_find(mpl_layout layout) {
    for (size_t i = 0; i < sizeof codecs / sizeof codecs[0]; i++)
        if (codecs[i]->layout == layout) return codecs[i];
    return NULL;
}

static mpl_status unknown_layout(mpl_layout layout) {
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "checkpoint layout %d: not a known layout (ct, gptq, gptq-v2, awq, ct-int)",
                         (int)layout);
}

mpl_ckpt_dims mpl_ckpt_dims_of(const mpl_config *cfg) {
    mpl_ckpt_dims d;
    d.bits = mpl_wtype_bits(cfg->wtype);
    d.pf = 32 / d.bits;
    d.k = cfg->k;
    d.n = cfg->n;
    d.groups = cfg->group_size == -1 ? 1 : cfg->k / cfg->group_size;
    d.k_words = cfg->k * d.bits / 32;
    d.n_words = (cfg->n * d.bits + 31) / 32;
    return d;
}

/* ---- decode ---- */

/* g_idx is the same [K] int32/int64 tensor in every layout that has one. */
static mpl_status decode_g_idx(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    for (int64_t i = 0; i < cfg->k; i++) {
        int64_t g = ck->g_idx.dtype == MPL_DTYPE_I32 ? ((const int32_t *)ck->g_idx.data)[i]
                                                     : ((const int64_t *)ck->g_idx.data)[i];
        if (g < 0 || g >= w->groups)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "g_idx[%lld] = %lld: must be in 0..%lld (k / group_size groups)",
                                 (long long)i, (long long)g, (long long)w->groups - 1);
        w->g_idx[i] = (int32_t)g;
    }
    return MPL_OK;
}

/* A config only a row-parallel act-order shard has (mpl_shard_config): its groups are the whole
 * layer's, which no checkpoint tensor of k / group_size groups can hold. */
static mpl_status shard_only_config(const mpl_config *cfg) {
    if (cfg->group_size > 0 && cfg->k % cfg->group_size != 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "act-order config with k = %lld not a multiple of group_size %lld: only a row-parallel "
                             "shard has it; create it from the whole layer's checkpoint (mpl_layer_create_shard)",
                             (long long)cfg->k, (long long)cfg->group_size);
    return MPL_OK;
}

mpl_status mpl_decode_checkpoint(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    assert(mpl_config_validate(cfg) == MPL_OK);
    memset(w, 0, sizeof *w);
    const mpl_codec *codec = codec_find(ck->layout);
    if (!codec) return unknown_layout(ck->layout);
    mpl_status st = shard_only_config(cfg);
    if (st != MPL_OK) return st;
    st = codec->check_shapes(cfg, ck);
    if (st == MPL_OK && cfg->act_order)
        st = mpl_ckpt_expect("g_idx", &ck->g_idx, MPL_DTYPE_I32, MPL_DTYPE_I64, cfg->k, -1, false);
    if (st != MPL_OK) return st;
    if ((st = mpl_canonical_alloc(w, cfg)) != MPL_OK) return st;
    if (cfg->act_order) st = decode_g_idx(cfg, ck, w);
    if (st == MPL_OK) st = codec->decode(cfg, ck, w);
    if (st != MPL_OK) mpl_canonical_free(w);
    return st;
}

/* ---- encode ---- */

void mpl_checkpoint_tensors_free(mpl_checkpoint_tensors *t) {
    if (!t) return;
    free((void *)t->weight.data);
    free((void *)t->scales.data);
    free((void *)t->zeros.data);
    free((void *)t->g_idx.data);
    memset(t, 0, sizeof *t);
}

mpl_status mpl_checkpoint_encode(const mpl_config *cfg, mpl_layout layout, const uint8_t *codes, const float *scales,
                                 mpl_dtype scale_dtype, const uint8_t *zeros, const int32_t *g_idx,
                                 mpl_checkpoint_tensors *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_checkpoint_encode: out is NULL");
    memset(out, 0, sizeof *out);
    mpl_status st = mpl_config_validate(cfg);
    if (st == MPL_OK) st = shard_only_config(cfg);
    if (st != MPL_OK) return st;
    if (!codes || !scales) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_checkpoint_encode: codes or scales is NULL");
    if (cfg->zero_points && !zeros)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_checkpoint_encode: zeros is NULL with zero_points = 1");
    if (cfg->act_order && !g_idx)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_checkpoint_encode: g_idx is NULL with act_order = 1");
    if (scale_dtype != MPL_DTYPE_F16 && scale_dtype != MPL_DTYPE_BF16 && scale_dtype != MPL_DTYPE_F32)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "mpl_checkpoint_encode: scale dtype %s: must be float16, bfloat16 or float32",
                             mpl_dtype_name(scale_dtype));
    const mpl_codec *codec = codec_find(layout);
    if (!codec) return unknown_layout(layout);
    mpl_ckpt_source src = {codes, scales, scale_dtype, cfg->zero_points ? zeros : NULL};
    st = codec->encode(cfg, &src, out);
    if (st == MPL_OK && cfg->act_order) {
        st = mpl_ckpt_tensor_alloc(&out->g_idx, MPL_DTYPE_I32, cfg->k, -1);
        if (st == MPL_OK) memcpy((void *)out->g_idx.data, g_idx, (size_t)cfg->k * sizeof(int32_t));
    }
    if (st != MPL_OK) {
        mpl_checkpoint_tensors_free(out);
        return st;
    }
    out->layout = layout;
    return MPL_OK;
}

/* ---- shared helpers ---- */

const char *mpl_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap) {
    size_t used = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}

mpl_status mpl_ckpt_expect(const char *what, const mpl_tensor *t, mpl_dtype d, mpl_dtype d2, int64_t d0, int64_t d1,
                           bool allow_1d) {
    if (!t->data) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s is missing", what);
    if (t->dtype == MPL_DTYPE_NONE || (t->dtype != d && t->dtype != d2))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has dtype %s: expected %s%s%s", what,
                             mpl_dtype_name(t->dtype), mpl_dtype_name(d), d2 != MPL_DTYPE_NONE ? " or " : "",
                             d2 != MPL_DTYPE_NONE ? mpl_dtype_name(d2) : "");
    bool ok;
    if (d1 < 0)
        ok = t->ndim == 1 && t->shape[0] == d0;
    else
        ok = (t->ndim == 2 && t->shape[0] == d0 && t->shape[1] == d1) ||
             (allow_1d && d1 == 1 && t->ndim == 1 && t->shape[0] == d0);
    if (ok) return MPL_OK;
    /* A hostile ndim prints as far as the shape array goes. */
    char have[96];
    mpl_shape_str(t->shape, t->ndim < MPL_MAX_DIMS ? t->ndim : MPL_MAX_DIMS, have, sizeof have);
    if (d1 < 0)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has shape %s: expected [%lld]", what, have,
                             (long long)d0);
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has shape %s: expected [%lld, %lld]", what, have,
                         (long long)d0, (long long)d1);
}

mpl_status mpl_ckpt_expect_scales(const char *what, const mpl_tensor *t, int64_t d0, int64_t d1, bool allow_1d) {
    if (t->data && t->dtype != MPL_DTYPE_F16 && t->dtype != MPL_DTYPE_BF16 && t->dtype != MPL_DTYPE_F32)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has dtype %s: expected float16, bfloat16 or float32",
                             what, mpl_dtype_name(t->dtype));
    return mpl_ckpt_expect(what, t, t->data ? t->dtype : MPL_DTYPE_F16, MPL_DTYPE_NONE, d0, d1, allow_1d);
}

void mpl_ckpt_scales_decode(const mpl_tensor *t, bool by_row, const mpl_ckpt_dims *d, float *scales) {
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t g = 0; g < d->groups; g++) {
            size_t i = (size_t)(by_row ? n * d->groups + g : g * d->n + n);
            float s;
            switch (t->dtype) {
            case MPL_DTYPE_F16: s = mpl_f16_to_f32(((const uint16_t *)t->data)[i]); break;
            case MPL_DTYPE_BF16: s = mpl_bf16_to_f32(((const uint16_t *)t->data)[i]); break;
            default: s = ((const float *)t->data)[i]; break;
            }
            scales[n * d->groups + g] = s;
        }
}

void mpl_ckpt_scales_encode(const float *scales, bool by_row, const mpl_ckpt_dims *d, mpl_tensor *t) {
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t g = 0; g < d->groups; g++) {
            float s = scales[n * d->groups + g];
            size_t i = (size_t)(by_row ? n * d->groups + g : g * d->n + n);
            switch (t->dtype) {
            case MPL_DTYPE_F16: ((uint16_t *)t->data)[i] = mpl_f32_to_f16(s); break;
            case MPL_DTYPE_BF16: ((uint16_t *)t->data)[i] = mpl_f32_to_bf16(s); break;
            default: ((float *)t->data)[i] = s; break;
            }
        }
}

mpl_status mpl_ckpt_tensor_alloc(mpl_tensor *t, mpl_dtype dtype, int64_t d0, int64_t d1) {
    size_t bytes;
    if (!mpl_size_mul3(d0, d1 < 0 ? 1 : d1, (int64_t)mpl_dtype_size(dtype), &bytes))
        return mpl_set_error(MPL_ERR_OVERFLOW, "mpl_checkpoint_encode: tensor of [%lld, %lld] overflows", (long long)d0,
                             (long long)d1);
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "mpl_checkpoint_encode: cannot allocate %zu bytes", bytes);
    t->data = p;
    t->dtype = dtype;
    t->ndim = d1 < 0 ? 1 : 2;
    t->shape[0] = d0;
    t->shape[1] = d1 < 0 ? 0 : d1;
    return MPL_OK;
}
