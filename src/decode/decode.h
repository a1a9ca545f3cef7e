/*
 * decode.h -- checkpoint tensor layouts <-> the canonical form (docs/layouts/checkpoints.md).
 *
 * One codec per layout, each a row of a const table (decode.c) walked by mpl_decode_checkpoint
 * and mpl_checkpoint_encode. A checkpoint family's file holds its rows, decode AND encode side
 * by side (as src/layouts/ files hold pack and unpack): gptq.c (gptq, gptq-v2), awq.c,
 * ct.c (ct, ct-int). Part of the core library: memory in, memory out; no files, no json-c.
 * Internal (not installed).
 */
#ifndef MPL_DECODE_H
#define MPL_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../core/internal.h"

/*
 * Decodes checkpoint tensors (any layout) into the canonical form; out is allocated here (release
 * with mpl_canonical_free) and left zeroed on failure. cfg must have passed mpl_config_validate
 * (asserted: mpl_layer_create validates once); what is checked here is the layout's own rules
 * and every tensor's presence, dtype and shape against cfg, before a byte is read.
 */
mpl_status mpl_decode_checkpoint(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *out);

/* The extents every layout is written in (docs/layouts/checkpoints.md, "Notation"). */
typedef struct mpl_ckpt_dims {
    int bits;        /* 2, 3, 4 or 8 */
    int pf;          /* whole values per int32 word: 32 / bits (3-bit: 10, the AWQ-style packings only) */
    int64_t k, n;
    int64_t groups;  /* G: k / group_size, 1 for group_size -1 */
    int64_t k_words; /* Kp = k * bits / 32: words along K (config rule: exact) */
    int64_t n_words; /* Np = ceil(n * bits / 32): words along N when packed along N (last word padded) */
} mpl_ckpt_dims;

mpl_ckpt_dims mpl_ckpt_dims_of(const mpl_config *cfg);

/* What mpl_checkpoint_encode writes: the canonical arrays of its arguments (g_idx is the walker's). */
typedef struct mpl_ckpt_source {
    const uint8_t *codes;  /* [n][k] stored codes */
    const float *scales;   /* [n][G] */
    mpl_dtype scale_dtype; /* f16, bf16 or f32 (checked by the walker) */
    const uint8_t *zeros;  /* [n][G] raw zero points, or NULL without zero points */
} mpl_ckpt_source;

/* One checkpoint layout. cfg is always validated; the walker handles g_idx for every layout. */
typedef struct mpl_codec {
    mpl_layout layout;
    /* The layout's rules on cfg (AWQ: n % pf == 0, no act-order; ct-int: int4 only), then the
     * presence, dtype and shape of weight, scales and (with zero points) zeros. */
    mpl_status (*check_shapes)(const mpl_config *cfg, const mpl_checkpoint_tensors *ck);
    /* Tensors already checked: fills w's codes, scales and zeros (w allocated for cfg). */
    mpl_status (*decode)(const mpl_config *cfg, const mpl_checkpoint_tensors *ck, mpl_canonical *w);
    /* The layout's rules on cfg, then allocates and writes out's weight, scales and zeros. On failure
     * the walker frees whatever was allocated. */
    mpl_status (*encode)(const mpl_config *cfg, const mpl_ckpt_source *src, mpl_checkpoint_tensors *out);
} mpl_codec;

/* The rows, one per layout (gptq.c, awq.c, ct.c). */
extern const mpl_codec mpl_codec_ct;
extern const mpl_codec mpl_codec_ct_int;
extern const mpl_codec mpl_codec_gptq;
extern const mpl_codec mpl_codec_gptq_v2;
extern const mpl_codec mpl_codec_awq;

/* ---- helpers the families share (decode.c) ---- */

/* "[a, b, ...]" of the first ndim entries of shape (none when ndim <= 0); returns buf. Shared with
 * the model module, whose messages print safetensors shapes the same way. */
const char *mpl_shape_str(const int64_t *shape, int ndim, char *buf, size_t cap);

/* Checks tensor `what` is present, of dtype d (or d2; MPL_DTYPE_NONE: no second choice) and shaped
 * [d0, d1] ([d0] when d1 < 0; with allow_1d, [d0] also stands for [d0, 1]). */
mpl_status mpl_ckpt_expect(const char *what, const mpl_tensor *t, mpl_dtype d, mpl_dtype d2, int64_t d0, int64_t d1,
                           bool allow_1d);
/* As mpl_ckpt_expect for a scale tensor: float16, bfloat16 or float32. */
mpl_status mpl_ckpt_expect_scales(const char *what, const mpl_tensor *t, int64_t d0, int64_t d1, bool allow_1d);

/* Scales between the canonical [n][G] floats and a checkpoint tensor stored [N, G] (by_row) or
 * [G, N]; converted exactly on decode, rounded once to the tensor's dtype on encode. */
void mpl_ckpt_scales_decode(const mpl_tensor *t, bool by_row, const mpl_ckpt_dims *d, float *scales);
void mpl_ckpt_scales_encode(const float *scales, bool by_row, const mpl_ckpt_dims *d, mpl_tensor *t);

/* Allocates a zeroed [d0, d1] tensor ([d0] when d1 < 0); the walker frees it on failure. */
mpl_status mpl_ckpt_tensor_alloc(mpl_tensor *t, mpl_dtype dtype, int64_t d0, int64_t d1);

/* Word i of an int32 tensor, read as little-endian uint32 (docs/layouts/checkpoints.md: the sign is irrelevant). */
static inline uint32_t mpl_ckpt_word(const mpl_tensor *t, size_t i) { return ((const uint32_t *)t->data)[i]; }
/* Field i (bits [bits*i, bits*(i+1))) of a word. */
static inline int mpl_ckpt_field(uint32_t w, int i, int bits) { return (int)((w >> (bits * i)) & ((1u << bits) - 1u)); }
/* ORs v (wrapped to the field width) into field i of *w. */
static inline void mpl_ckpt_put_field(uint32_t *w, int i, int bits, int v) {
    *w |= ((uint32_t)v & ((1u << bits) - 1u)) << (bits * i);
}

/*
 * The dense bit stream every packed layout but AWQ writes (docs/layouts/checkpoints.md): value i of a run
 * of words holds stream bits [bits*i, bits*(i+1)), word j holding stream bits [32j, 32j + 32), little end
 * first; a 3-bit value may straddle two words. For 2-, 4- and 8-bit this is the same as field i % pf of
 * word i / pf. The words of one run are t's words base, base + stride, base + 2 stride, ...; the caller
 * has checked the tensor holds ceil((i + 1) bits / 32) of them.
 */
static inline int mpl_ckpt_stream_get(const mpl_tensor *t, size_t base, size_t stride, int64_t i, int bits) {
    const uint64_t bit = (uint64_t)i * (uint64_t)bits;
    const size_t w = (size_t)(bit >> 5);
    const unsigned off = (unsigned)(bit & 31u);
    uint64_t v = mpl_ckpt_word(t, base + w * stride);
    if (off + (unsigned)bits > 32u) v |= (uint64_t)mpl_ckpt_word(t, base + (w + 1) * stride) << 32;
    return (int)((v >> off) & ((1u << bits) - 1u));
}
/* ORs v (wrapped to the width) in as value i of the run at words[0], words[stride], ... */
static inline void mpl_ckpt_stream_put(uint32_t *words, size_t stride, int64_t i, int bits, int v) {
    const uint64_t bit = (uint64_t)i * (uint64_t)bits;
    const size_t w = (size_t)(bit >> 5);
    const unsigned off = (unsigned)(bit & 31u);
    const uint64_t f = ((uint64_t)v & ((1u << bits) - 1u)) << off;
    words[w * stride] |= (uint32_t)f;
    if (off + (unsigned)bits > 32u) words[(w + 1) * stride] |= (uint32_t)(f >> 32);
}

#endif /* MPL_DECODE_H */
