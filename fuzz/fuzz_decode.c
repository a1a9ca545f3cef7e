/*
 * fuzz_decode.c -- libFuzzer target: the checkpoint decoders (src/decode/: ct, ct-int, gptq, gptq-v2, awq) on
 * hostile tensors. The input picks a layer config (every weight type, group sizes -1 / 16..128, act-order,
 * small k and n), writes a valid checkpoint of it with mpl_checkpoint_encode from codes, scales, zeros and
 * g_idx taken from the input, then, as the input says, leaves it whole or spoils it: XORs input bytes into
 * the tensors' data (out-of-range zero points, g_idx, NaN scales, stray bits), or changes one tensor's dtype,
 * rank or a dimension (its buffer then sized to what it declares, as a caller's would be).
 *   - Untouched: mpl_decode_checkpoint must succeed and give back exactly what was encoded.
 *   - Spoiled: it may refuse (with a message), but what it accepts must be in range: codes and zero points
 *     below 2^bits, g_idx in 0..groups - 1, and no read outside a buffer (ASan) or undefined behaviour (UBSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "decode/decode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a stream of bytes; zeros past its end. */
typedef struct {
    const uint8_t *p;
    size_t n, at;
} feed;
static uint8_t next(feed *f) { return f->at < f->n ? f->p[f->at++] : 0; }
static size_t left(const feed *f) { return f->n - f->at; }

static const mpl_wtype wtypes[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4,   MPL_WTYPE_INT4,  MPL_WTYPE_UINT8B128, MPL_WTYPE_UINT8,
                                   MPL_WTYPE_UINT3B4, MPL_WTYPE_UINT3,   MPL_WTYPE_UINT2B2, MPL_WTYPE_UINT2};
static const mpl_layout layouts[] = {MPL_LAYOUT_CT, MPL_LAYOUT_GPTQ, MPL_LAYOUT_GPTQ_V2, MPL_LAYOUT_AWQ, MPL_LAYOUT_CT_INT};
static const int64_t group_sizes[] = {-1, 16, 32, 64, 128};
static const mpl_dtype scale_dtypes[] = {MPL_DTYPE_F16, MPL_DTYPE_BF16, MPL_DTYPE_F32};
static const mpl_dtype any_dtypes[] = {MPL_DTYPE_NONE, MPL_DTYPE_I32, MPL_DTYPE_I8, MPL_DTYPE_U8,
                                       MPL_DTYPE_F16,  MPL_DTYPE_BF16, MPL_DTYPE_F32, MPL_DTYPE_I64};

static size_t elems(const mpl_tensor *t) {
    size_t e = 1;
    for (int d = 0; d < t->ndim; d++) e *= (size_t)t->shape[d];
    return e;
}

/* Replaces t's buffer by one of what it now declares (at most 1 MiB: a larger one cannot match a config of
 * this size, so the decoder must refuse it before reading; a short buffer makes ASan say so if it does not). */
static void resize(mpl_tensor *t) {
    size_t bytes = 0;
    if (t->dtype != MPL_DTYPE_NONE && t->ndim >= 0 && t->ndim <= MPL_MAX_DIMS) {
        int ok = 1;
        for (int d = 0; d < t->ndim; d++) ok &= t->shape[d] >= 0 && t->shape[d] <= (1 << 20);
        if (ok) {
            size_t e = elems(t), sz = mpl_dtype_size(t->dtype);
            bytes = e <= ((size_t)1 << 20) / (sz ? sz : 1) ? e * sz : ((size_t)1 << 20);
        }
    }
    free((void *)t->data);
    t->data = bytes ? calloc(1, bytes) : NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    feed f = {data, size, 0};
    mpl_config c;
    const int64_t k = 16 * (1 + next(&f) % 20), n = 1 + next(&f) % 80;
    mpl_config_init(&c, k, n);
    c.wtype = wtypes[next(&f) % (sizeof wtypes / sizeof wtypes[0])];
    c.zero_points = mpl_wtype_zero_points(c.wtype);
    const uint8_t b = next(&f);
    c.group_size = group_sizes[(b & 7) % 5];
    c.act_order = (b >> 3) & 1;
    const mpl_dtype sd = scale_dtypes[(b >> 4) % 3];
    const mpl_layout layout = layouts[next(&f) % (sizeof layouts / sizeof layouts[0])];
    const int spoil = next(&f) % 4; /* 0: untouched, 1: data XORed, 2: a tensor's shape, 3: both */
    if (mpl_config_validate(&c) != MPL_OK) return 0;

    const int bits = mpl_wtype_width(c.wtype);
    const int64_t G = c.group_size == -1 ? 1 : k / c.group_size;
    uint8_t *codes = malloc((size_t)(k * n)), *zeros = malloc((size_t)(n * G));
    float *scales = malloc((size_t)(n * G) * sizeof(float));
    int32_t *g_idx = malloc((size_t)k * sizeof(int32_t));
    if (!codes || !zeros || !scales || !g_idx) abort();
    for (int64_t i = 0; i < k * n; i++) codes[i] = (uint8_t)(next(&f) & ((1 << bits) - 1));
    for (int64_t i = 0; i < n * G; i++) {
        const uint8_t v = next(&f);
        zeros[i] = (uint8_t)(v & ((1 << bits) - 1));
        /* exact in f16, bf16 and f32: 3 significant bits, exponents -7..0, either sign */
        scales[i] = (v & 0x80 ? -1.0f : 1.0f) * (float)(1 + (v & 7)) / (float)(1 << ((v >> 3) & 7));
    }
    for (int64_t i = 0; i < k; i++) g_idx[i] = (int32_t)(next(&f) % G);

    mpl_checkpoint_tensors ck;
    if (mpl_checkpoint_encode(&c, layout, codes, scales, sd, c.zero_points ? zeros : NULL, c.act_order ? g_idx : NULL,
                              &ck) != MPL_OK)
        goto done; /* a layout's own rules (AWQ: n % pf, ct-int: 4-bit only, ...) refused the config */

    mpl_tensor *ts[4] = {&ck.weight, &ck.scales, &ck.zeros, &ck.g_idx};
    if (spoil & 2) { /* one tensor's dtype, rank or a dimension, its buffer resized to match */
        mpl_tensor *t = ts[next(&f) % 4];
        const uint8_t how = next(&f);
        if (how % 3 == 0) t->dtype = any_dtypes[(how >> 2) % 8];
        else if (how % 3 == 1) t->ndim = (how >> 2) % 4;
        else if (t->ndim > 0) t->shape[(how >> 2) % t->ndim] += (int64_t)(int8_t)next(&f);
        resize(t);
    }
    if (spoil & 1) /* the rest of the input XORed over the tensors' bytes, in turn */
        for (int i = 0; i < 4 && left(&f); i++) {
            mpl_tensor *t = ts[i];
            if (!t->data || t->dtype == MPL_DTYPE_NONE) continue;
            const size_t bytes = elems(t) * mpl_dtype_size(t->dtype);
            uint8_t *p = (uint8_t *)t->data;
            for (size_t j = 0; j < bytes && left(&f); j++) p[j] ^= next(&f);
        }

    mpl_canonical w;
    const mpl_status st = mpl_decode_checkpoint(&c, &ck, &w);
    if (st != MPL_OK) {
        if (!spoil) __builtin_trap();              /* a checkpoint encode wrote must decode */
        if (!mpl_last_error()[0]) __builtin_trap(); /* a refusal names the problem */
    } else {
        for (int64_t i = 0; i < k * n; i++)
            if (w.codes[i] >> bits) __builtin_trap();
        if (c.zero_points)
            for (int64_t i = 0; i < n * w.groups; i++)
                if (w.zeros[i] >> bits) __builtin_trap();
        if (c.act_order)
            for (int64_t i = 0; i < k; i++)
                if (w.g_idx[i] < 0 || w.g_idx[i] >= w.groups) __builtin_trap();
        if (!spoil) { /* exactly what was encoded */
            if (w.groups != G || memcmp(w.codes, codes, (size_t)(k * n))) __builtin_trap();
            for (int64_t i = 0; i < n * G; i++) {
                if (w.scales[i] != scales[i]) __builtin_trap();
                if (c.zero_points && w.zeros[i] != zeros[i]) __builtin_trap();
            }
            if (c.act_order && memcmp(w.g_idx, g_idx, (size_t)k * sizeof(int32_t))) __builtin_trap();
        }
        mpl_canonical_free(&w);
    }
    mpl_checkpoint_tensors_free(&ck);
done:
    free(codes);
    free(zeros);
    free(scales);
    free(g_idx);
    return 0;
}
