/* encode.c -- codes/scales/zeros -> checkpoint tensors (the inverse of checkpoint.c). */
#include <stdlib.h>
#include <string.h>

#include "../core/internal.h"

static mpl_status alloc_tensor(mpl_tensor *t, mpl_dtype d, int64_t d0, int64_t d1) {
    size_t bytes;
    if (!mpl_size_mul3(d0, d1 < 0 ? 1 : d1, (int64_t)mpl_dtype_size(d), &bytes))
        return mpl_set_error(MPL_ERR_OVERFLOW, "encode: tensor of [%lld, %lld] overflows", (long long)d0, (long long)d1);
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "encode: cannot allocate %zu bytes", bytes);
    t->data = p;
    t->dtype = d;
    t->ndim = d1 < 0 ? 1 : 2;
    t->shape[0] = d0;
    t->shape[1] = d1 < 0 ? 0 : d1;
    return MPL_OK;
}

void mpl_checkpoint_tensors_free(mpl_checkpoint_tensors *t) {
    if (!t) return;
    free((void *)t->weight.data);
    free((void *)t->scales.data);
    free((void *)t->zeros.data);
    free((void *)t->g_idx.data);
    memset(t, 0, sizeof *t);
}

static void put_field(uint32_t *w, int i, int bits, int v) { *w |= ((uint32_t)v & ((1u << bits) - 1u)) << (bits * i); }

static const int awq4[8] = {0, 2, 4, 6, 1, 3, 5, 7};
static const int awq8[4] = {0, 2, 1, 3};

mpl_status mpl_checkpoint_encode(const mpl_config *cfg, mpl_layout layout, const uint8_t *codes, const float *scales,
                                 mpl_dtype sd, const uint8_t *zeros, const int32_t *g_idx,
                                 mpl_checkpoint_tensors *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "encode: out is NULL");
    memset(out, 0, sizeof *out);
    mpl_status st = mpl_config_validate(cfg);
    if (st != MPL_OK) return st;
    if (!codes || !scales) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "encode: codes or scales is NULL");
    if (cfg->zero_points && !zeros) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "encode: zero points needed");
    if (cfg->act_order && !g_idx) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "encode: g_idx needed");
    if (sd != MPL_DTYPE_F16 && sd != MPL_DTYPE_BF16 && sd != MPL_DTYPE_F32)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "encode: scale dtype %s: must be float16, bfloat16 or float32",
                             mpl_dtype_name(sd));
    int bits = mpl_wtype_bits(cfg->wtype), pf = 32 / bits;
    int64_t K = cfg->k, N = cfg->n, G = cfg->group_size == -1 ? 1 : K / cfg->group_size;
    int64_t Np = (N + pf - 1) / pf;
    if (layout == MPL_LAYOUT_AWQ && N % pf)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "AWQ layout with n = %lld: n must be a multiple of %d", (long long)N, pf);
    if (layout == MPL_LAYOUT_CT_INT && cfg->wtype != MPL_WTYPE_INT4)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "layout ct-int needs wtype int4");
    out->layout = layout;
    bool ng = layout == MPL_LAYOUT_CT || layout == MPL_LAYOUT_CT_INT;
    switch (layout) {
    case MPL_LAYOUT_CT: st = alloc_tensor(&out->weight, MPL_DTYPE_I32, N, K / pf); break;
    case MPL_LAYOUT_GPTQ:
    case MPL_LAYOUT_GPTQ_V2: st = alloc_tensor(&out->weight, MPL_DTYPE_I32, K / pf, N); break;
    case MPL_LAYOUT_AWQ: st = alloc_tensor(&out->weight, MPL_DTYPE_I32, K, N / pf); break;
    case MPL_LAYOUT_CT_INT: st = alloc_tensor(&out->weight, MPL_DTYPE_I8, N, K); break;
    default: return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "encode: layout %d unknown", (int)layout);
    }
    if (st == MPL_OK) st = alloc_tensor(&out->scales, sd, ng ? N : G, ng ? G : N);
    if (st == MPL_OK && cfg->zero_points) {
        if (layout == MPL_LAYOUT_CT)
            st = alloc_tensor(&out->zeros, MPL_DTYPE_I32, Np, G);
        else
            st = alloc_tensor(&out->zeros, MPL_DTYPE_I32, G, Np);
    }
    if (st == MPL_OK && cfg->act_order) st = alloc_tensor(&out->g_idx, MPL_DTYPE_I32, K, -1);
    if (st != MPL_OK) {
        mpl_checkpoint_tensors_free(out);
        return st;
    }
    uint32_t *w = (uint32_t *)out->weight.data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            int c = codes[n * K + k];
            switch (layout) {
            case MPL_LAYOUT_CT: put_field(&w[n * (K / pf) + k / pf], (int)(k % pf), bits, c); break;
            case MPL_LAYOUT_GPTQ:
            case MPL_LAYOUT_GPTQ_V2: put_field(&w[(k / pf) * N + n], (int)(k % pf), bits, c); break;
            case MPL_LAYOUT_AWQ: {
                int col = (int)(n % pf), nib = 0;
                for (int i = 0; i < pf; i++)
                    if ((bits == 4 ? awq4[i] : awq8[i]) == col) nib = i;
                put_field(&w[k * (N / pf) + n / pf], nib, bits, c);
                break;
            }
            case MPL_LAYOUT_CT_INT: ((int8_t *)out->weight.data)[n * K + k] = (int8_t)(c >= 8 ? c - 16 : c); break;
            default: break;
            }
        }
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            float s = scales[n * G + g];
            size_t i = (size_t)(ng ? n * G + g : g * N + n);
            if (sd == MPL_DTYPE_F32)
                ((float *)out->scales.data)[i] = s;
            else if (sd == MPL_DTYPE_F16)
                ((uint16_t *)out->scales.data)[i] = mpl_f32_to_f16(s);
            else
                ((uint16_t *)out->scales.data)[i] = mpl_f32_to_bf16(s);
        }
    if (cfg->zero_points) {
        uint32_t *z = (uint32_t *)out->zeros.data;
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++) {
                int v = zeros[n * G + g];
                switch (layout) {
                case MPL_LAYOUT_CT: put_field(&z[(n / pf) * G + g], (int)(n % pf), bits, v); break;
                case MPL_LAYOUT_GPTQ: put_field(&z[g * Np + n / pf], (int)(n % pf), bits, v - 1); break;
                case MPL_LAYOUT_GPTQ_V2: put_field(&z[g * Np + n / pf], (int)(n % pf), bits, v); break;
                case MPL_LAYOUT_AWQ: {
                    int col = (int)(n % pf), nib = 0;
                    for (int i = 0; i < pf; i++)
                        if ((bits == 4 ? awq4[i] : awq8[i]) == col) nib = i;
                    put_field(&z[g * (N / pf) + n / pf], nib, bits, v);
                    break;
                }
                default: break;
                }
            }
    }
    if (cfg->act_order) memcpy((void *)out->g_idx.data, g_idx, (size_t)K * sizeof(int32_t));
    return MPL_OK;
}
