/* config.c -- layer config defaults, validation and type names. */
#include <string.h>

#include "internal.h"

void mpl_config_init(mpl_config *c, int64_t k, int64_t n) {
    if (!c) return;
    memset(c, 0, sizeof *c);
    c->k = k;
    c->n = n;
    c->wtype = MPL_WTYPE_UINT4B8;
    c->act = MPL_ACT_BF16;
    c->group_size = -1;
    c->mode = MPL_MODE_W4A16;
}

void mpl_options_init(mpl_options *o) {
    if (!o) return;
    memset(o, 0, sizeof *o);
    o->device = MPL_DEVICE_CPU;
}

static const char *const wtype_names[] = {NULL,    "uint4b8", "uint4",   "int4",  "uint8b128",
                                          "uint8", "uint2b2", "uint3b4", "uint2", "uint3"};
#define WTYPE_LAST MPL_WTYPE_UINT3
#define WTYPE_LIST "uint4b8, uint4, int4, uint8b128, uint8, uint2b2, uint3b4, uint2 or uint3"
static const char *const act_names[] = {NULL, "f16", "bf16", "f32"};
static const char *const layout_names[] = {NULL, "ct", "gptq", "gptq-v2", "awq", "ct-int"};

const char *mpl_wtype_name(mpl_wtype t) {
    return (t >= MPL_WTYPE_UINT4B8 && t <= WTYPE_LAST) ? wtype_names[t] : "unknown";
}
int mpl_wtype_width(mpl_wtype t) { return (t >= MPL_WTYPE_UINT4B8 && t <= WTYPE_LAST) ? mpl_wtype_bits(t) : 0; }
int mpl_wtype_zero_points(mpl_wtype t) {
    return (t >= MPL_WTYPE_UINT4B8 && t <= WTYPE_LAST) ? (int)mpl_wtype_needs_zeros(t) : 0;
}
const char *mpl_act_name(mpl_act a) {
    return (a >= MPL_ACT_F16 && a <= MPL_ACT_F32) ? act_names[a] : "unknown";
}
const char *mpl_layout_name(mpl_layout l) {
    return (l >= MPL_LAYOUT_CT && l <= MPL_LAYOUT_CT_INT) ? layout_names[l] : "unknown";
}

mpl_status mpl_wtype_parse(const char *s, mpl_wtype *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_wtype_parse: out is NULL");
    for (int i = 1; i <= WTYPE_LAST; i++)
        if (s && strcmp(s, wtype_names[i]) == 0) {
            *out = (mpl_wtype)i;
            return MPL_OK;
        }
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                         "unknown weight type '%s': must be " WTYPE_LIST,
                         s ? s : "(null)");
}

mpl_status mpl_act_parse(const char *s, mpl_act *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_act_parse: out is NULL");
    for (int i = 1; i <= 3; i++)
        if (s && strcmp(s, act_names[i]) == 0) {
            *out = (mpl_act)i;
            return MPL_OK;
        }
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "unknown activation type '%s': must be f16, bf16 or f32",
                         s ? s : "(null)");
}

mpl_status mpl_layout_parse(const char *s, mpl_layout *out) {
    if (!out) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "mpl_layout_parse: out is NULL");
    for (int i = 1; i <= 5; i++)
        if (s && strcmp(s, layout_names[i]) == 0) {
            *out = (mpl_layout)i;
            return MPL_OK;
        }
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                         "unknown layout '%s': must be ct, gptq, gptq-v2, awq or ct-int", s ? s : "(null)");
}

const char *mpl_dtype_name(mpl_dtype d) {
    switch (d) {
    case MPL_DTYPE_NONE: return "none";
    case MPL_DTYPE_I32: return "int32";
    case MPL_DTYPE_I8: return "int8";
    case MPL_DTYPE_U8: return "uint8";
    case MPL_DTYPE_F16: return "float16";
    case MPL_DTYPE_BF16: return "bfloat16";
    case MPL_DTYPE_F32: return "float32";
    case MPL_DTYPE_I64: return "int64";
    }
    return "unknown";
}

size_t mpl_dtype_size(mpl_dtype d) {
    switch (d) {
    case MPL_DTYPE_I32: case MPL_DTYPE_F32: return 4;
    case MPL_DTYPE_I8: case MPL_DTYPE_U8: return 1;
    case MPL_DTYPE_F16: case MPL_DTYPE_BF16: return 2;
    case MPL_DTYPE_I64: return 8;
    case MPL_DTYPE_NONE: return 0;
    }
    return 0;
}

#define BAD(...) return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, __VA_ARGS__)

mpl_status mpl_config_validate(const mpl_config *c) {
    if (!c) BAD("config is NULL");
    if (c->k <= 0 || c->k > MPL_MAX_DIM)
        BAD("config k = %lld: must be in 1..%lld", (long long)c->k, (long long)MPL_MAX_DIM);
    if (c->n <= 0 || c->n > MPL_MAX_DIM)
        BAD("config n = %lld: must be in 1..%lld", (long long)c->n, (long long)MPL_MAX_DIM);
    if (c->full_k != 0 && (c->full_k < c->k || c->full_k > MPL_MAX_DIM))
        BAD("config full_k = %lld: must be 0 (same as k) or in k..%lld (k = %lld)", (long long)c->full_k,
            (long long)MPL_MAX_DIM, (long long)c->k);
    if (c->full_n != 0 && (c->full_n < c->n || c->full_n > MPL_MAX_DIM))
        BAD("config full_n = %lld: must be 0 (same as n) or in n..%lld (n = %lld)", (long long)c->full_n,
            (long long)MPL_MAX_DIM, (long long)c->n);
    if (c->wtype < MPL_WTYPE_UINT4B8 || c->wtype > WTYPE_LAST)
        BAD("config wtype = %d: not a known weight type (" WTYPE_LIST ")", (int)c->wtype);
    if (c->act < MPL_ACT_F16 || c->act > MPL_ACT_F32)
        BAD("config act = %d: not a known activation type (f16, bf16, f32)", (int)c->act);
    if (c->mode != MPL_MODE_W4A16 && c->mode != MPL_MODE_W4A8)
        BAD("config mode = %d: must be W4A16 (0) or W4A8 (1)", (int)c->mode);
    int bits = mpl_wtype_bits(c->wtype);
    /* Packed layouts hold 32/bits values per int32 along K (3-bit: 32 values per 3 words). */
    int pf = mpl_wtype_k_multiple(c->wtype);
    if (c->k % pf != 0)
        BAD("config k = %lld: must be a multiple of %d for %s weights (%s)", (long long)c->k, pf,
            mpl_wtype_name(c->wtype), bits == 3 ? "32 values packed per 3 int32 words" : "values packed whole per int32");
    /* An act-order row-parallel shard (mpl_shard_config) names the whole layer's groups: its k need
     * not be a multiple of group_size, full_k must. */
    int shard_groups = c->act_order == 1 && c->full_k > c->k && c->group_size > 0 && c->full_k % c->group_size == 0;
    if (c->group_size != -1 && (c->group_size <= 0 || (c->k % c->group_size != 0 && !shard_groups)))
        BAD("config group_size = %lld: must be -1 or a positive divisor of k = %lld", (long long)c->group_size,
            (long long)c->k);
    if (c->zero_points != 0 && c->zero_points != 1)
        BAD("config zero_points = %d: must be 0 or 1", c->zero_points);
    if (c->act_order != 0 && c->act_order != 1) BAD("config act_order = %d: must be 0 or 1", c->act_order);
    if (mpl_wtype_needs_zeros(c->wtype) && !c->zero_points)
        BAD("config zero_points = 0 with wtype %s: %s stores s - z and needs zero points", mpl_wtype_name(c->wtype),
            mpl_wtype_name(c->wtype));
    if (!mpl_wtype_needs_zeros(c->wtype) && c->zero_points)
        BAD("config zero_points = 1 with wtype %s: zero points apply only to uint2, uint3, uint4 and uint8",
            mpl_wtype_name(c->wtype));
    if (c->act_order && c->group_size == -1)
        BAD("config act_order = 1 with group_size -1: act-order needs groups (desc_act with one group is "
            "normalised to act_order 0)");
    if (c->mode == MPL_MODE_W4A8) {
        /* Integer group sums must fit int32: 127 * max|w| * group length < 2^31. */
        int64_t gl = c->group_size == -1 ? c->k : c->group_size;
        int64_t wmax = (1 << bits) - 1;
        if (127 * wmax * gl >= ((int64_t)1 << 31))
            BAD("config group length %lld in W4A8 mode: 127 * %lld * group length must stay below 2^31 "
                "(int32 group sums)",
                (long long)gl, (long long)wmax);
    }
    return MPL_OK;
}
