/*
 * test_layouts.c -- checkpoint layouts (docs/layouts/checkpoints.md) and the canonical form
 * (docs/layouts/canonical.md).
 *
 * Three independent checks per layout:
 *   1. golden words written by hand from the spec -> mpl_decode_checkpoint gives the codes,
 *      zeros and scales the spec says (GPTQ rows in nibbles, AWQ column order, GPTQ v1
 *      "zero - 1", CT zero points packed along N, 8-bit forms, ct-int);
 *   2. mpl_checkpoint_encode's tensors equal, word for word, those of a packer written here
 *      from the spec (shapes, dtypes, padding);
 *   3. round trip encode -> decode on random data gives back exactly the codes, the scales as
 *      stored in their dtype, the zeros and g_idx, for every layout x weight type x group size
 *      (-1, power of two, non-power-of-two divisor) x act-order (off, permuted, irregular) on
 *      K in {36, 40, 72, 96} and N in {1, 5, 7, 13} (AWQ: N a multiple of its pack factor).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/internal.h"
#include "decode/decode.h"
#include "support/testutil.h"

static const int awq4_order[8] = {0, 2, 4, 6, 1, 3, 5, 7}; /* nibble i holds column awq4_order[i] */
static const int awq8_order[4] = {0, 2, 1, 3};

static mpl_tensor t2(const void *data, mpl_dtype d, int64_t d0, int64_t d1) {
    mpl_tensor t;
    memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = d;
    t.ndim = 2;
    t.shape[0] = d0;
    t.shape[1] = d1;
    return t;
}

static mpl_tensor t1(const void *data, mpl_dtype d, int64_t d0) {
    mpl_tensor t = t2(data, d, d0, 0);
    t.ndim = 1;
    t.shape[1] = 0;
    return t;
}

static mpl_config cfg_of(int64_t k, int64_t n, mpl_wtype t, int64_t group) {
    mpl_config c;
    mpl_config_init(&c, k, n);
    c.wtype = t;
    c.zero_points = tu_wtype_needs_zeros(t);
    c.group_size = group;
    c.act = MPL_ACT_F32;
    return c;
}

/* f16 ones [d0 x d1] (scales are not what the golden tests look at) */
static uint16_t ones16[4096];

static void fill_ones(void) {
    for (size_t i = 0; i < sizeof ones16 / sizeof ones16[0]; i++) ones16[i] = 0x3c00;
}

/* ---------- 1. golden words ---------- */

static void golden_gptq_qweight(void **state) {
    (void)state;
    /* qweight [K/8 = 2][N = 2]: word (r, n), nibble i = row 8r + i of column n */
    static const uint32_t qw[2][2] = {{0x76543210u, 0xFEDCBA98u}, {0x89ABCDEFu, 0x01234567u}};
    static const uint8_t want[2][16] = {{0, 1, 2, 3, 4, 5, 6, 7, 15, 14, 13, 12, 11, 10, 9, 8},
                                        {8, 9, 10, 11, 12, 13, 14, 15, 7, 6, 5, 4, 3, 2, 1, 0}};
    mpl_config c = cfg_of(16, 2, MPL_WTYPE_UINT4B8, -1);
    fill_ones();
    for (int layout = MPL_LAYOUT_GPTQ; layout <= MPL_LAYOUT_GPTQ_V2; layout++) {
        mpl_checkpoint_tensors ck;
        memset(&ck, 0, sizeof ck);
        ck.layout = (mpl_layout)layout;
        ck.weight = t2(qw, MPL_DTYPE_I32, 2, 2);
        ck.scales = t2(ones16, MPL_DTYPE_F16, 1, 2);
        mpl_canonical w;
        assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
        assert_memory_equal(w.codes, want, sizeof want);
        mpl_canonical_free(&w);
    }
}

static void golden_ct_weight_packed(void **state) {
    (void)state;
    /* weight_packed [N = 2][K/8 = 2]: word (n, w), nibble i = column 8w + i of row n */
    static const uint32_t wp[2][2] = {{0x76543210u, 0x89ABCDEFu}, {0xFEDCBA98u, 0x01234567u}};
    static const uint8_t want[2][16] = {{0, 1, 2, 3, 4, 5, 6, 7, 15, 14, 13, 12, 11, 10, 9, 8},
                                        {8, 9, 10, 11, 12, 13, 14, 15, 7, 6, 5, 4, 3, 2, 1, 0}};
    mpl_config c = cfg_of(16, 2, MPL_WTYPE_INT4, -1);
    fill_ones();
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = MPL_LAYOUT_CT;
    ck.weight = t2(wp, MPL_DTYPE_I32, 2, 2);
    ck.scales = t1(ones16, MPL_DTYPE_F16, 2); /* channel-wise scales may be [N] */
    mpl_canonical w;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    assert_memory_equal(w.codes, want, sizeof want);
    /* int4: code 15 is value -1, code 8 is -8 */
    assert_int_equal(mpl_weight_value(&w, 0, 8), -1);
    assert_int_equal(mpl_weight_value(&w, 1, 0), -8);
    assert_int_equal(mpl_weight_value(&w, 1, 8), 7);
    mpl_canonical_free(&w);
}

static void golden_awq(void **state) {
    (void)state;
    /* 4-bit: qweight [K = 8][N/8 = 1], every word 0x76543210: nibble i (value i) holds column
     * [0,2,4,6,1,3,5,7][i], so columns 0..7 read 0,4,1,5,2,6,3,7. qzeros [1][1] the same. */
    uint32_t qw[8], qz = 0x76543210u;
    for (int k = 0; k < 8; k++) qw[k] = 0x76543210u;
    static const uint8_t col_value[8] = {0, 4, 1, 5, 2, 6, 3, 7};
    mpl_config c = cfg_of(8, 8, MPL_WTYPE_UINT4, -1);
    fill_ones();
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = MPL_LAYOUT_AWQ;
    ck.weight = t2(qw, MPL_DTYPE_I32, 8, 1);
    ck.scales = t2(ones16, MPL_DTYPE_F16, 1, 8);
    ck.zeros = t2(&qz, MPL_DTYPE_I32, 1, 1);
    mpl_canonical w;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    for (int n = 0; n < 8; n++) {
        for (int k = 0; k < 8; k++) assert_int_equal(w.codes[n * 8 + k], col_value[n]);
        assert_int_equal(w.zeros[n], col_value[n]); /* AWQ zeros are raw (no -1) */
    }
    mpl_canonical_free(&w);
    /* 8-bit: 4 per int32, byte i holds column [0,2,1,3][i] */
    uint32_t qw8[4] = {0x03020100u, 0x03020100u, 0x03020100u, 0x03020100u}, qz8 = 0x80FF0100u;
    static const uint8_t col8[4] = {0, 2, 1, 3};
    static const uint8_t zero8[4] = {0x00, 0xFF, 0x01, 0x80}; /* bytes 0,1,2,3 -> columns 0,2,1,3 */
    c = cfg_of(4, 4, MPL_WTYPE_UINT8, -1);
    ck.weight = t2(qw8, MPL_DTYPE_I32, 4, 1);
    ck.scales = t2(ones16, MPL_DTYPE_F16, 1, 4);
    ck.zeros = t2(&qz8, MPL_DTYPE_I32, 1, 1);
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    for (int n = 0; n < 4; n++) {
        for (int k = 0; k < 4; k++) assert_int_equal(w.codes[n * 4 + k], col8[n]);
        assert_int_equal(w.zeros[n], zero8[n]);
    }
    mpl_canonical_free(&w);
}

static void golden_gptq_zeros(void **state) {
    (void)state;
    /* uint4 + zero points, K = 8, N = 8, one group. v1 stores zero - 1, v2 the zero. */
    uint32_t qw[8];
    memset(qw, 0, sizeof qw);
    fill_ones();
    mpl_config c = cfg_of(8, 8, MPL_WTYPE_UINT4, -1);
    struct {
        mpl_layout layout;
        uint32_t word;
        uint8_t want[8];
    } cases[] = {
        {MPL_LAYOUT_GPTQ, 0x77777777u, {8, 8, 8, 8, 8, 8, 8, 8}},    /* symmetric v1 checkpoint */
        {MPL_LAYOUT_GPTQ_V2, 0x88888888u, {8, 8, 8, 8, 8, 8, 8, 8}}, /* symmetric v2 */
        {MPL_LAYOUT_GPTQ, 0xFFFFFFFFu, {0, 0, 0, 0, 0, 0, 0, 0}},    /* 15 + 1 wraps to 0 */
        {MPL_LAYOUT_GPTQ, 0x76543210u, {1, 2, 3, 4, 5, 6, 7, 8}},    /* nibble i: column i, + 1 */
        {MPL_LAYOUT_GPTQ_V2, 0xF6543210u, {0, 1, 2, 3, 4, 5, 6, 15}},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        mpl_checkpoint_tensors ck;
        memset(&ck, 0, sizeof ck);
        ck.layout = cases[t].layout;
        ck.weight = t2(qw, MPL_DTYPE_I32, 1, 8);
        ck.scales = t2(ones16, MPL_DTYPE_F16, 1, 8);
        ck.zeros = t2(&cases[t].word, MPL_DTYPE_I32, 1, 1);
        mpl_canonical w;
        assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
        assert_memory_equal(w.zeros, cases[t].want, 8);
        mpl_canonical_free(&w);
    }
    /* 8-bit v1: 0x7F stores zero 128, 0xFF wraps to 0; v2 stores 128 as 0x80. */
    c = cfg_of(4, 4, MPL_WTYPE_UINT8, -1);
    uint32_t z1 = 0xFF7F7F7Fu, z2 = 0x00808080u;
    static const uint8_t want1[4] = {128, 128, 128, 0}, want2[4] = {128, 128, 128, 0};
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.weight = t2(qw, MPL_DTYPE_I32, 1, 4);
    ck.scales = t2(ones16, MPL_DTYPE_F16, 1, 4);
    for (int v = 0; v < 2; v++) {
        ck.layout = v ? MPL_LAYOUT_GPTQ_V2 : MPL_LAYOUT_GPTQ;
        ck.zeros = t2(v ? &z2 : &z1, MPL_DTYPE_I32, 1, 1);
        mpl_canonical w;
        assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
        assert_memory_equal(w.zeros, v ? want2 : want1, 4);
        mpl_canonical_free(&w);
    }
}

static void golden_ct_zero_points(void **state) {
    (void)state;
    /* N = 13, K = 16, group 8 (G = 2): weight_zero_point [ceil(13/8) = 2][G = 2], packed along N:
     * word (r, g), nibble i = zero of column 8r + i in group g; the last word has 5 columns. */
    static const uint32_t zp[2][2] = {{0x76543210u, 0xFEDCBA98u}, {0x000C4321u, 0x00012345u}};
    static const uint8_t want_g0[13] = {0, 1, 2, 3, 4, 5, 6, 7, 1, 2, 3, 4, 12};
    static const uint8_t want_g1[13] = {8, 9, 10, 11, 12, 13, 14, 15, 5, 4, 3, 2, 1};
    uint32_t wp[13 * 2];
    memset(wp, 0, sizeof wp);
    fill_ones();
    mpl_config c = cfg_of(16, 13, MPL_WTYPE_UINT4, 8);
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = MPL_LAYOUT_CT;
    ck.weight = t2(wp, MPL_DTYPE_I32, 13, 2);
    ck.scales = t2(ones16, MPL_DTYPE_F16, 13, 2);
    ck.zeros = t2(zp, MPL_DTYPE_I32, 2, 2);
    mpl_canonical w;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    for (int n = 0; n < 13; n++) {
        assert_int_equal(w.zeros[n * 2 + 0], want_g0[n]);
        assert_int_equal(w.zeros[n * 2 + 1], want_g1[n]);
    }
    mpl_canonical_free(&w);
    /* channel-wise: zero points may be the 1-D [ceil(N/8)] */
    c = cfg_of(16, 13, MPL_WTYPE_UINT4, -1);
    uint32_t zp1[2] = {0x76543210u, 0x000C4321u};
    ck.scales = t2(ones16, MPL_DTYPE_F16, 13, 1);
    ck.zeros = t1(zp1, MPL_DTYPE_I32, 2);
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    for (int n = 0; n < 13; n++) assert_int_equal(w.zeros[n], want_g0[n]);
    mpl_canonical_free(&w);
}

static void golden_8bit_and_ct_int(void **state) {
    (void)state;
    /* GPTQ 8-bit: qweight [K/4 = 2][N = 1], byte i = row 4r + i. */
    static const uint32_t qw[2] = {0x03020100u, 0xFFFEFDFCu};
    static const uint8_t want[8] = {0, 1, 2, 3, 0xFC, 0xFD, 0xFE, 0xFF};
    fill_ones();
    mpl_config c = cfg_of(8, 1, MPL_WTYPE_UINT8B128, -1);
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = MPL_LAYOUT_GPTQ;
    ck.weight = t2(qw, MPL_DTYPE_I32, 2, 1);
    ck.scales = t2(ones16, MPL_DTYPE_F16, 1, 1);
    mpl_canonical w;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    assert_memory_equal(w.codes, want, 8);
    assert_int_equal(mpl_weight_value(&w, 0, 0), -128);
    assert_int_equal(mpl_weight_value(&w, 0, 7), 127);
    mpl_canonical_free(&w);
    /* CT 8-bit: weight_packed [N = 1][K/4 = 2], byte i = column 4w + i. */
    ck.layout = MPL_LAYOUT_CT;
    ck.weight = t2(qw, MPL_DTYPE_I32, 1, 2);
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    assert_memory_equal(w.codes, want, 8);
    mpl_canonical_free(&w);
    /* ct-int: weight [N = 2][K = 8] int8 holding the signed values; the code is the nibble. */
    static const int8_t vals[16] = {-8, -7, -1, 0, 1, 6, 7, -2, 3, -3, 5, -5, 0, 0, -8, 7};
    c = cfg_of(8, 2, MPL_WTYPE_INT4, -1);
    ck.layout = MPL_LAYOUT_CT_INT;
    ck.weight = t2(vals, MPL_DTYPE_I8, 2, 8);
    ck.scales = t2(ones16, MPL_DTYPE_F16, 2, 1);
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    for (int i = 0; i < 16; i++) {
        assert_int_equal(w.codes[i], (uint8_t)(vals[i] & 0xf));
        assert_int_equal(mpl_weight_value(&w, i / 8, i % 8), vals[i]);
    }
    mpl_canonical_free(&w);
}

static void golden_scales_and_g_idx(void **state) {
    (void)state;
    /* GPTQ/AWQ scales are [G][N], CT scales [N][G]; canonical is [n][g]. g_idx may be int64. */
    static const float s_gn[2][3] = {{1.0f, 2.0f, 3.0f}, {-0.5f, 0.25f, 0.125f}};
    static const float s_ng[3][2] = {{1.0f, -0.5f}, {2.0f, 0.25f}, {3.0f, 0.125f}};
    static const int64_t gi64[16] = {1, 0, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0};
    uint32_t qw[2 * 3];
    memset(qw, 0, sizeof qw);
    mpl_config c = cfg_of(16, 3, MPL_WTYPE_UINT4B8, 8);
    c.act_order = 1;
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = MPL_LAYOUT_GPTQ;
    ck.weight = t2(qw, MPL_DTYPE_I32, 2, 3);
    ck.scales = t2(s_gn, MPL_DTYPE_F32, 2, 3);
    ck.g_idx = t1(gi64, MPL_DTYPE_I64, 16);
    mpl_canonical w;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    assert_memory_equal(w.scales, s_ng, sizeof s_ng);
    for (int k = 0; k < 16; k++) assert_int_equal(w.g_idx[k], gi64[k]);
    mpl_canonical_free(&w);
    ck.layout = MPL_LAYOUT_CT;
    ck.weight = t2(qw, MPL_DTYPE_I32, 3, 2);
    ck.scales = t2(s_ng, MPL_DTYPE_F32, 3, 2);
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
    assert_memory_equal(w.scales, s_ng, sizeof s_ng);
    mpl_canonical_free(&w);
}

/* Layout rules the decoder enforces. */
static void layout_rules(void **state) {
    (void)state;
    tu_rng r;
    tu_rng_init(&r, 7);
    tu_weights w;
    mpl_checkpoint_tensors ck;
    mpl_canonical cw;
    /* AWQ needs N % pack factor == 0: encode and decode both refuse N = 13 */
    mpl_config c = cfg_of(16, 13, MPL_WTYPE_UINT4, -1);
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_AWQ, &ck), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "13"));
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    ck.layout = MPL_LAYOUT_AWQ;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "multiple of 8"));
    ck.layout = (mpl_layout)0;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_ERR_INVALID_ARGUMENT);
    ck.layout = (mpl_layout)99;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "99"));
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    /* AWQ has no g_idx: act-order with layout awq is refused */
    c = cfg_of(16, 8, MPL_WTYPE_UINT4, 8);
    c.act_order = 1;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_PERMUTED, TU_DATA_RANDOM, &r), 0);
    mpl_config c0 = c;
    c0.act_order = 0;
    assert_int_equal(mpl_checkpoint_encode(&c0, MPL_LAYOUT_AWQ, w.codes, w.scales, MPL_DTYPE_F16, w.zeros, NULL, &ck),
                     MPL_OK);
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "awq"));
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    /* ct-int holds int4 only */
    c = cfg_of(16, 3, MPL_WTYPE_UINT4B8, -1);
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_CT_INT, &ck), MPL_ERR_INVALID_ARGUMENT);
    c.wtype = MPL_WTYPE_INT4;
    w.cfg.wtype = MPL_WTYPE_INT4;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_CT_INT, &ck), MPL_OK);
    c.wtype = MPL_WTYPE_UINT4B8;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "ct-int"));
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* ---------- 2. the encoder against a packer written from the spec ---------- */

static void put(uint32_t *w, int i, int bits, int v) { *w |= ((uint32_t)v & ((1u << bits) - 1u)) << (bits * i); }
/* The dense stream of the spec, one bit at a time: value i's bit b is stream bit i*bits + b, in word
 * (bit / 32) * stride at position bit % 32. */
static void put_stream(uint32_t *w, int64_t stride, int64_t i, int bits, int v) {
    for (int b = 0; b < bits; b++) {
        int64_t pos = i * bits + b;
        w[(pos / 32) * stride] |= (uint32_t)((v >> b) & 1) << (pos % 32);
    }
}

/* Expected tensors for w in `layout`; words zero-initialised (padding nibbles stay 0). */
static void spec_pack(const tu_weights *w, mpl_layout layout, uint32_t *weight, int8_t *weight_i8, float *scales,
                      uint32_t *zeros) {
    const mpl_config *c = &w->cfg;
    int bits = tu_wtype_bits(c->wtype), pf = 32 / bits;
    int64_t K = c->k, N = c->n, G = w->groups, Np = (N * bits + 31) / 32, Kp = K * bits / 32;
    const int *order = bits == 4 ? awq4_order : awq8_order;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            int code = w->codes[n * K + k];
            switch (layout) {
            case MPL_LAYOUT_CT: put_stream(&weight[n * Kp], 1, k, bits, code); break;
            case MPL_LAYOUT_GPTQ:
            case MPL_LAYOUT_GPTQ_V2: put_stream(&weight[n], N, k, bits, code); break;
            case MPL_LAYOUT_AWQ:
                for (int i = 0; i < pf; i++)
                    if (n % pf == order[i]) put(&weight[k * (N / pf) + n / pf], i, bits, code);
                break;
            default: weight_i8[n * K + k] = (int8_t)(code < 8 ? code : code - 16); break;
            }
        }
    int ng = layout == MPL_LAYOUT_CT || layout == MPL_LAYOUT_CT_INT;
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < G; g++) {
            scales[ng ? n * G + g : g * N + n] = w->scales[n * G + g];
            if (!w->zeros) continue;
            int z = w->zeros[n * G + g];
            switch (layout) {
            case MPL_LAYOUT_CT: put_stream(&zeros[g], G, n, bits, z); break;
            case MPL_LAYOUT_GPTQ: put_stream(&zeros[g * Np], 1, n, bits, z - 1); break;
            case MPL_LAYOUT_GPTQ_V2: put_stream(&zeros[g * Np], 1, n, bits, z); break;
            case MPL_LAYOUT_AWQ:
                for (int i = 0; i < pf; i++)
                    if (n % pf == order[i]) put(&zeros[g * (N / pf) + n / pf], i, bits, z);
                break;
            default: break;
            }
        }
}

static int64_t shape_numel(const mpl_tensor *t) {
    int64_t e = 1;
    for (int i = 0; i < t->ndim; i++) e *= t->shape[i];
    return e;
}

/* Tensor shapes of the spec (docs/layouts/checkpoints.md) and the encoder's bytes vs spec_pack. */
static int encoder_matches_spec(const tu_weights *w, mpl_layout layout, const mpl_checkpoint_tensors *ck) {
    const mpl_config *c = &w->cfg;
    int bits = tu_wtype_bits(c->wtype), pf = 32 / bits;
    int64_t K = c->k, N = c->n, G = w->groups, Np = (N * bits + 31) / 32, Kp = K * bits / 32;
    int64_t wd[2], sd[2], zd[2];
    switch (layout) {
    case MPL_LAYOUT_CT: wd[0] = N, wd[1] = Kp, sd[0] = N, sd[1] = G, zd[0] = Np, zd[1] = G; break;
    case MPL_LAYOUT_GPTQ:
    case MPL_LAYOUT_GPTQ_V2: wd[0] = Kp, wd[1] = N, sd[0] = G, sd[1] = N, zd[0] = G, zd[1] = Np; break;
    case MPL_LAYOUT_AWQ: wd[0] = K, wd[1] = N / pf, sd[0] = G, sd[1] = N, zd[0] = G, zd[1] = N / pf; break;
    default: wd[0] = N, wd[1] = K, sd[0] = N, sd[1] = G, zd[0] = zd[1] = 0; break;
    }
    mpl_dtype wdt = layout == MPL_LAYOUT_CT_INT ? MPL_DTYPE_I8 : MPL_DTYPE_I32;
    if (ck->layout != layout || ck->weight.dtype != wdt || ck->weight.ndim != 2 || ck->weight.shape[0] != wd[0] ||
        ck->weight.shape[1] != wd[1] || ck->scales.dtype != w->scale_dtype || ck->scales.ndim != 2 ||
        ck->scales.shape[0] != sd[0] || ck->scales.shape[1] != sd[1])
        return 0;
    if (c->zero_points && (ck->zeros.dtype != MPL_DTYPE_I32 || ck->zeros.ndim != 2 || ck->zeros.shape[0] != zd[0] ||
                           ck->zeros.shape[1] != zd[1]))
        return 0;
    if (!c->zero_points && ck->zeros.data) return 0;
    if (c->act_order && (ck->g_idx.dtype != MPL_DTYPE_I32 || ck->g_idx.ndim != 1 || ck->g_idx.shape[0] != K ||
                         memcmp(ck->g_idx.data, w->g_idx, (size_t)K * 4) != 0))
        return 0;
    int64_t nw = shape_numel(&ck->weight), ns = N * G, nz = c->zero_points ? shape_numel(&ck->zeros) : 0;
    uint32_t *ew = calloc((size_t)nw + 1, 4), *ez = calloc((size_t)nz + 1, 4);
    int8_t *ei8 = calloc((size_t)nw + 1, 1);
    float *es = calloc((size_t)ns, sizeof(float));
    assert_non_null(ew);
    assert_non_null(ez);
    assert_non_null(ei8);
    assert_non_null(es);
    spec_pack(w, layout, ew, ei8, es, ez);
    int ok = layout == MPL_LAYOUT_CT_INT ? memcmp(ck->weight.data, ei8, (size_t)nw) == 0
                                         : memcmp(ck->weight.data, ew, (size_t)nw * 4) == 0;
    for (int64_t i = 0; i < ns && ok; i++) {
        double got = w->scale_dtype == MPL_DTYPE_F32   ? (double)((const float *)ck->scales.data)[i]
                     : w->scale_dtype == MPL_DTYPE_F16 ? tu_f16_value(((const uint16_t *)ck->scales.data)[i])
                                                       : tu_bf16_value(((const uint16_t *)ck->scales.data)[i]);
        ok = got == (double)es[i];
    }
    if (ok && nz) ok = memcmp(ck->zeros.data, ez, (size_t)nz * 4) == 0;
    free(ew);
    free(ez);
    free(ei8);
    free(es);
    return ok;
}

/* ---------- 3. round trips ---------- */

typedef struct {
    int64_t k, n;
    int64_t groups[4];
} shape;

static const shape shapes4[] = {{40, 13, {-1, 8, 20, 40}}, {72, 7, {-1, 24, 36, 0}}, {96, 1, {-1, 32, 48, 24}}};
static const shape shapes8[] = {{36, 5, {-1, 12, 18, 4}}, {72, 7, {-1, 24, 8, 0}}, {96, 1, {-1, 32, 48, 0}}};
/* 2- and 3-bit: K a multiple of 32 (3-bit: 32 values per 3 words); N odd so the zero stream ends mid-word */
static const shape shapes23[] = {{32, 13, {-1, 8, 16, 32}}, {64, 11, {-1, 32, 16, 0}}, {96, 1, {-1, 32, 48, 24}}};
/* AWQ packs along N: N must be a multiple of 8 (4-bit) or 4 (8-bit) */
static const shape awq4[] = {{40, 24, {-1, 8, 20, 40}}, {72, 8, {-1, 24, 36, 0}}, {96, 16, {-1, 32, 48, 24}}};
static const shape awq8[] = {{36, 12, {-1, 12, 18, 4}}, {72, 4, {-1, 24, 8, 0}}, {96, 8, {-1, 32, 48, 0}}};

static int64_t roundtrip_one(const mpl_config *c, mpl_layout layout, mpl_dtype sd, tu_gidx_kind gk, uint64_t seed) {
    tu_rng r;
    tu_rng_init(&r, seed);
    tu_weights w;
    char cs[160];
    tu_cfg_str(c, cs, sizeof cs);
    if (tu_weights_random(&w, c, sd, gk, TU_DATA_RANDOM, &r) != 0) return 1;
    mpl_checkpoint_tensors ck;
    mpl_status st = tu_weights_encode(&w, layout, &ck);
    if (st != MPL_OK) {
        fprintf(stderr, "encode %s %s: %s\n", mpl_layout_name(layout), cs, mpl_last_error());
        tu_weights_free(&w);
        return 1;
    }
    int64_t bad = 0;
    if (!encoder_matches_spec(&w, layout, &ck)) {
        fprintf(stderr, "FAIL encoder vs spec packer: %s %s scales %s seed=0x%llx\n", mpl_layout_name(layout), cs,
                mpl_dtype_name(sd), (unsigned long long)seed);
        bad++;
    }
    mpl_canonical cw;
    st = mpl_decode_checkpoint(c, &ck, &cw);
    if (st != MPL_OK) {
        fprintf(stderr, "decode %s %s: %s\n", mpl_layout_name(layout), cs, mpl_last_error());
        bad++;
    } else {
        size_t nk = (size_t)(c->n * c->k), ng = (size_t)(c->n * w.groups);
        const char *what = NULL;
        if (cw.k != c->k || cw.n != c->n || cw.group_size != w.group_size || cw.groups != w.groups ||
            cw.wtype != c->wtype)
            what = "dimensions";
        else if (memcmp(cw.codes, w.codes, nk) != 0)
            what = "codes";
        else if (memcmp(cw.scales, w.scales, ng * sizeof(float)) != 0)
            what = "scales";
        else if ((w.zeros != NULL) != (cw.zeros != NULL) || (w.zeros && memcmp(cw.zeros, w.zeros, ng) != 0))
            what = "zeros";
        else if ((w.g_idx != NULL) != (cw.g_idx != NULL) ||
                 (w.g_idx && memcmp(cw.g_idx, w.g_idx, (size_t)c->k * 4) != 0))
            what = "g_idx";
        else if (cw.perm != NULL)
            what = "perm (set before act-order resolution)";
        if (what) {
            fprintf(stderr, "FAIL round trip %s %s scales %s g_idx %d seed=0x%llx: %s differ\n",
                    mpl_layout_name(layout), cs, mpl_dtype_name(sd), (int)gk, (unsigned long long)seed, what);
            bad++;
        }
        mpl_canonical_free(&cw);
    }
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    return bad;
}

static void roundtrip(void **state) {
    mpl_layout layout = (mpl_layout)(intptr_t)*state;
    static const mpl_wtype types[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4, MPL_WTYPE_INT4,    MPL_WTYPE_UINT8B128,
                                      MPL_WTYPE_UINT8,   MPL_WTYPE_UINT2B2, MPL_WTYPE_UINT3B4, MPL_WTYPE_UINT2,
                                      MPL_WTYPE_UINT3};
    static const mpl_dtype sds[] = {MPL_DTYPE_F16, MPL_DTYPE_BF16, MPL_DTYPE_F32};
    uint64_t base = tu_seed(0x1a70u + (uint64_t)layout), idx = 0;
    int64_t bad = 0;
    for (int t = 0; t < (int)(sizeof types / sizeof types[0]); t++) {
        if (layout == MPL_LAYOUT_CT_INT && types[t] != MPL_WTYPE_INT4) continue;
        int bits = tu_wtype_bits(types[t]);
        if (layout == MPL_LAYOUT_AWQ && bits < 4) continue; /* AWQ's packing is 4- and 8-bit only */
        const shape *sh = layout == MPL_LAYOUT_AWQ ? (bits == 8 ? awq8 : awq4)
                          : bits < 4              ? shapes23
                          : bits == 8             ? shapes8
                                                  : shapes4;
        for (int s = 0; s < 3; s++)
            for (int gi = 0; gi < 4; gi++)
                for (int ao = 0; ao < 3; ao++) {
                    int64_t gs = sh[s].groups[gi];
                    if (gs == 0 || (ao && (gs == -1 || layout == MPL_LAYOUT_AWQ))) continue;
                    mpl_config c = cfg_of(sh[s].k, sh[s].n, types[t], gs);
                    c.act_order = ao != 0;
                    tu_gidx_kind gk = ao == 2 ? TU_GIDX_IRREGULAR : ao ? TU_GIDX_PERMUTED : TU_GIDX_NONE;
                    bad += roundtrip_one(&c, layout, sds[idx % 3], gk, tu_case_seed(base, idx));
                    idx++;
                }
    }
    print_message("%s: %llu round trips, base seed 0x%llx\n", mpl_layout_name(layout), (unsigned long long)idx,
                  (unsigned long long)base);
    assert_true(idx > 0);
    assert_int_equal(bad, 0);
}

/* Scales not representable in the scale dtype come back as stored: rounded once (RNE). */
static void scales_as_stored(void **state) {
    (void)state;
    static const mpl_dtype sds[] = {MPL_DTYPE_F16, MPL_DTYPE_BF16, MPL_DTYPE_F32};
    tu_rng r;
    tu_rng_init(&r, tu_seed(0x5ca1e));
    mpl_config c = cfg_of(40, 13, MPL_WTYPE_UINT4B8, 8);
    uint8_t codes[13 * 40];
    float sc[13 * 5];
    for (int i = 0; i < 13 * 40; i++) codes[i] = (uint8_t)tu_rng_below(&r, 16);
    for (int i = 0; i < 13 * 5; i++) sc[i] = (float)(tu_rng_uniform(&r, -1, 1) * exp2(tu_rng_uniform(&r, -30, 10)));
    sc[0] = 65520.0f; /* overflows f16 to inf, fine in bf16 */
    sc[1] = 1e-6f;    /* f16 subnormal */
    for (int d = 0; d < 3; d++)
        for (int layout = MPL_LAYOUT_CT; layout <= MPL_LAYOUT_GPTQ_V2; layout++) {
            mpl_checkpoint_tensors ck;
            assert_int_equal(mpl_checkpoint_encode(&c, (mpl_layout)layout, codes, sc, sds[d], NULL, NULL, &ck), MPL_OK);
            mpl_canonical w;
            assert_int_equal(mpl_decode_checkpoint(&c, &ck, &w), MPL_OK);
            for (int i = 0; i < 13 * 5; i++)
                if ((double)w.scales[i] != tu_round_dtype(sds[d], sc[i]))
                    fail_msg("%s scales %s: scale %d = %a, want %a", mpl_layout_name((mpl_layout)layout),
                             mpl_dtype_name(sds[d]), i, (double)w.scales[i], tu_round_dtype(sds[d], sc[i]));
            mpl_canonical_free(&w);
            mpl_checkpoint_tensors_free(&ck);
        }
}

/* mpl_canonical_resolve_act_order: perm is the stable sort of channels by g_idx, and
 * act_order_uniform says whether every group has exactly group_size members. */
static void act_order_resolution(void **state) {
    (void)state;
    uint64_t base = tu_seed(0xac70);
    for (int t = 0; t < 60; t++) {
        static const int64_t kg[][2] = {{40, 8}, {72, 24}, {96, 48}, {16, 16}};
        mpl_config c = cfg_of(kg[t % 4][0], 5, MPL_WTYPE_UINT4B8, kg[t % 4][1]);
        c.act_order = 1;
        tu_rng r;
        tu_rng_init(&r, tu_case_seed(base, (uint64_t)t));
        tu_weights w;
        assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, t % 2 ? TU_GIDX_IRREGULAR : TU_GIDX_PERMUTED,
                                           TU_DATA_RANDOM, &r),
                         0);
        mpl_checkpoint_tensors ck;
        assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
        mpl_canonical cw;
        assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_OK);
        assert_int_equal(mpl_canonical_resolve_act_order(&cw), MPL_OK);
        assert_non_null(cw.perm);
        assert_int_equal(cw.act_order_uniform, !w.irregular);
        int64_t K = c.k;
        uint8_t *seen = calloc((size_t)K, 1);
        assert_non_null(seen);
        for (int64_t j = 0; j < K; j++) {
            int32_t p = cw.perm[j];
            assert_true(p >= 0 && p < K);
            assert_false(seen[p]);
            seen[p] = 1;
            if (j > 0) {
                int32_t q = cw.perm[j - 1];
                assert_true(w.g_idx[q] < w.g_idx[p] || (w.g_idx[q] == w.g_idx[p] && q < p));
            }
            if (cw.act_order_uniform) assert_int_equal(w.g_idx[p], j / w.group_size);
        }
        free(seen);
        mpl_canonical_free(&cw);
        mpl_checkpoint_tensors_free(&ck);
        tu_weights_free(&w);
    }
    /* without act-order nothing is resolved */
    mpl_config c = cfg_of(16, 2, MPL_WTYPE_UINT4B8, 8);
    uint8_t codes[32] = {0};
    float sc[4] = {1, 1, 1, 1};
    mpl_checkpoint_tensors ck;
    assert_int_equal(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_F16, NULL, NULL, &ck), MPL_OK);
    mpl_canonical cw;
    assert_int_equal(mpl_decode_checkpoint(&c, &ck, &cw), MPL_OK);
    assert_int_equal(mpl_canonical_resolve_act_order(&cw), MPL_OK);
    assert_null(cw.perm);
    assert_null(cw.g_idx);
    assert_int_equal(mpl_group_of(&cw, 9), 1);
    mpl_canonical_free(&cw);
    mpl_checkpoint_tensors_free(&ck);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(golden_gptq_qweight),
        cmocka_unit_test(golden_ct_weight_packed),
        cmocka_unit_test(golden_awq),
        cmocka_unit_test(golden_gptq_zeros),
        cmocka_unit_test(golden_ct_zero_points),
        cmocka_unit_test(golden_8bit_and_ct_int),
        cmocka_unit_test(golden_scales_and_g_idx),
        cmocka_unit_test(layout_rules),
        cmocka_unit_test_prestate(roundtrip, (void *)(intptr_t)MPL_LAYOUT_CT),
        cmocka_unit_test_prestate(roundtrip, (void *)(intptr_t)MPL_LAYOUT_GPTQ),
        cmocka_unit_test_prestate(roundtrip, (void *)(intptr_t)MPL_LAYOUT_GPTQ_V2),
        cmocka_unit_test_prestate(roundtrip, (void *)(intptr_t)MPL_LAYOUT_AWQ),
        cmocka_unit_test_prestate(roundtrip, (void *)(intptr_t)MPL_LAYOUT_CT_INT),
        cmocka_unit_test(scales_as_stored),
        cmocka_unit_test(act_order_resolution),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
