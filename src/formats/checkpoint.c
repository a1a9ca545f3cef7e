/*
 * checkpoint.c -- checkpoint tensor layouts -> the canonical form.
 * Exact definitions: docs/layouts/checkpoints.md. Every tensor's dtype and
 * shape is checked against the config before a byte is read.
 */
#include <stdio.h>
#include <string.h>

#include "../core/internal.h"

static const char *shape_str(const mpl_tensor *t, char *buf, size_t cap) {
    size_t u = 0;
    u += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < t->ndim && i < MPL_MAX_DIMS && u < cap; i++)
        u += (size_t)snprintf(buf + u, cap - u, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (u < cap) snprintf(buf + u, cap - u, "]");
    return buf;
}

/* Checks t is present, of dtype d (or d2), and shaped [d0, d1] (d1 < 0: 1-D [d0]). */
static mpl_status expect(const char *what, const mpl_tensor *t, mpl_dtype d, mpl_dtype d2, int64_t d0, int64_t d1,
                         bool allow_1d) {
    char a[96];
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
    if (!ok) {
        if (d1 < 0)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has shape %s: expected [%lld]", what,
                                 shape_str(t, a, sizeof a), (long long)d0);
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has shape %s: expected [%lld, %lld]", what,
                             shape_str(t, a, sizeof a), (long long)d0, (long long)d1);
    }
    return MPL_OK;
}

static mpl_status expect_scales(const char *what, const mpl_tensor *t, int64_t d0, int64_t d1, bool allow_1d) {
    mpl_status st = expect(what, t, MPL_DTYPE_F16, MPL_DTYPE_BF16, d0, d1, allow_1d);
    if (st != MPL_OK && t->data && t->dtype == MPL_DTYPE_F32) st = expect(what, t, MPL_DTYPE_F32, MPL_DTYPE_NONE, d0, d1, allow_1d);
    if (st != MPL_OK && t->data && t->dtype != MPL_DTYPE_F16 && t->dtype != MPL_DTYPE_BF16 && t->dtype != MPL_DTYPE_F32)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "tensor %s has dtype %s: expected float16, bfloat16 or float32",
                             what, mpl_dtype_name(t->dtype));
    return st;
}

static float load_scale(const mpl_tensor *t, size_t i) {
    switch (t->dtype) {
    case MPL_DTYPE_F16: return mpl_f16_to_f32(((const uint16_t *)t->data)[i]);
    case MPL_DTYPE_BF16: return mpl_bf16_to_f32(((const uint16_t *)t->data)[i]);
    default: return ((const float *)t->data)[i];
    }
}

static inline uint32_t word(const mpl_tensor *t, size_t i) { return ((const uint32_t *)t->data)[i]; }
static inline int field(uint32_t w, int i, int bits) { return (int)((w >> (bits * i)) & ((1u << bits) - 1u)); }

/* AWQ order: nibble i of a word holds column awq4[i] of its 8-column group (8-bit: awq8 of 4). */
static const int awq4[8] = {0, 2, 4, 6, 1, 3, 5, 7};
static const int awq8[4] = {0, 2, 1, 3};

static mpl_status decode_g_idx(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    if (!cfg->act_order) return MPL_OK;
    mpl_status st = expect("g_idx", &ck->g_idx, MPL_DTYPE_I32, MPL_DTYPE_I64, cfg->k, -1, false);
    if (st != MPL_OK) return st;
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

mpl_status mpl_decode_checkpoint(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w) {
    mpl_status st = mpl_config_validate(cfg);
    if (st != MPL_OK) return st;
    int bits = mpl_wtype_bits(cfg->wtype);
    int pf = 32 / bits;
    int64_t K = cfg->k, N = cfg->n;
    int64_t G = cfg->group_size == -1 ? 1 : K / cfg->group_size;
    int64_t Np = (N + pf - 1) / pf; /* packed-along-N extent (last word padded) */
    const mpl_tensor *tw = &ck->weight, *ts = &ck->scales, *tz = &ck->zeros;
    bool zp = cfg->zero_points;
    switch (ck->layout) {
    case MPL_LAYOUT_CT:
        if ((st = expect("weight_packed", tw, MPL_DTYPE_I32, MPL_DTYPE_NONE, N, K / pf, false)) ||
            (st = expect_scales("weight_scale", ts, N, G, true)) ||
            (zp && (st = expect("weight_zero_point", tz, MPL_DTYPE_I32, MPL_DTYPE_NONE, Np, G, true))))
            return st;
        break;
    case MPL_LAYOUT_GPTQ:
    case MPL_LAYOUT_GPTQ_V2:
        if ((st = expect("qweight", tw, MPL_DTYPE_I32, MPL_DTYPE_NONE, K / pf, N, false)) ||
            (st = expect_scales("scales", ts, G, N, false)) ||
            (zp && (st = expect("qzeros", tz, MPL_DTYPE_I32, MPL_DTYPE_NONE, G, Np, false))))
            return st;
        break;
    case MPL_LAYOUT_AWQ:
        if (N % pf != 0)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "AWQ layout with n = %lld: n must be a multiple of %d",
                                 (long long)N, pf);
        if ((st = expect("qweight", tw, MPL_DTYPE_I32, MPL_DTYPE_NONE, K, N / pf, false)) ||
            (st = expect_scales("scales", ts, G, N, false)) ||
            (zp && (st = expect("qzeros", tz, MPL_DTYPE_I32, MPL_DTYPE_NONE, G, N / pf, false))))
            return st;
        break;
    case MPL_LAYOUT_CT_INT:
        if (cfg->wtype != MPL_WTYPE_INT4)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                 "layout ct-int with wtype %s: int-quantized checkpoints hold signed int4 values (wtype int4)",
                                 mpl_wtype_name(cfg->wtype));
        if ((st = expect("weight", tw, MPL_DTYPE_I8, MPL_DTYPE_NONE, N, K, false)) ||
            (st = expect_scales("weight_scale", ts, N, G, true)))
            return st;
        break;
    default:
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "checkpoint layout %d: not a known layout", (int)ck->layout);
    }
    if (cfg->act_order && ck->layout == MPL_LAYOUT_AWQ)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "layout awq with act_order: AWQ checkpoints have no g_idx");
    if ((st = mpl_canonical_alloc(w, cfg)) != MPL_OK) return st;
    if ((st = decode_g_idx(cfg, ck, w)) != MPL_OK) {
        mpl_canonical_free(w);
        return st;
    }
    uint8_t *codes = w->codes;
    /* Weights. */
    switch (ck->layout) {
    case MPL_LAYOUT_CT:
        for (int64_t n = 0; n < N; n++)
            for (int64_t kw = 0; kw < K / pf; kw++) {
                uint32_t v = word(tw, (size_t)(n * (K / pf) + kw));
                for (int i = 0; i < pf; i++) codes[n * K + kw * pf + i] = (uint8_t)field(v, i, bits);
            }
        break;
    case MPL_LAYOUT_GPTQ:
    case MPL_LAYOUT_GPTQ_V2:
        for (int64_t kw = 0; kw < K / pf; kw++)
            for (int64_t n = 0; n < N; n++) {
                uint32_t v = word(tw, (size_t)(kw * N + n));
                for (int i = 0; i < pf; i++) codes[n * K + kw * pf + i] = (uint8_t)field(v, i, bits);
            }
        break;
    case MPL_LAYOUT_AWQ:
        for (int64_t k = 0; k < K; k++)
            for (int64_t nw = 0; nw < N / pf; nw++) {
                uint32_t v = word(tw, (size_t)(k * (N / pf) + nw));
                for (int i = 0; i < pf; i++) {
                    int col = bits == 4 ? awq4[i] : awq8[i];
                    codes[(nw * pf + col) * K + k] = (uint8_t)field(v, i, bits);
                }
            }
        break;
    case MPL_LAYOUT_CT_INT:
        for (int64_t n = 0; n < N; n++)
            for (int64_t k = 0; k < K; k++) {
                int v = ((const int8_t *)tw->data)[n * K + k];
                if (v < -8 || v > 7) {
                    mpl_canonical_free(w);
                    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                         "weight[%lld, %lld] = %d: int-quantized int4 values must be in -8..7",
                                         (long long)n, (long long)k, v);
                }
                codes[n * K + k] = (uint8_t)(v & 0xf);
            }
        break;
    default: break;
    }
    /* Scales: CT forms are [N, G]; GPTQ/AWQ are [G, N]. */
    bool scales_ng = ck->layout == MPL_LAYOUT_CT || ck->layout == MPL_LAYOUT_CT_INT;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            float s = load_scale(ts, (size_t)(scales_ng ? n * G + g : g * N + n));
            w->scales[n * G + g] = s;
        }
    /* Zero points. */
    if (zp) {
        int mask = (1 << bits) - 1;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                int z = 0;
                switch (ck->layout) {
                case MPL_LAYOUT_CT: z = field(word(tz, (size_t)((n / pf) * G + g)), (int)(n % pf), bits); break;
                case MPL_LAYOUT_GPTQ: /* stores zero - 1 (wrapped to the field width) */
                    z = (field(word(tz, (size_t)(g * Np + n / pf)), (int)(n % pf), bits) + 1) & mask;
                    break;
                case MPL_LAYOUT_GPTQ_V2: z = field(word(tz, (size_t)(g * Np + n / pf)), (int)(n % pf), bits); break;
                case MPL_LAYOUT_AWQ: {
                    uint32_t v = word(tz, (size_t)(g * (N / pf) + n / pf));
                    int col = (int)(n % pf), nib = 0;
                    for (int i = 0; i < pf; i++)
                        if ((bits == 4 ? awq4[i] : awq8[i]) == col) nib = i;
                    z = field(v, nib, bits);
                    break;
                }
                default: break;
                }
                w->zeros[n * G + g] = (uint8_t)z;
            }
    }
    return MPL_OK;
}
