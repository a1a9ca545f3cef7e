/*
 * test_ref_oracle.c -- the reference kernel against the float64 oracle of tests/support.
 *
 * The matrix: every weight type x activation type (f16/bf16/f32) x group size (-1, a power
 * of two, non-power-of-two divisors of K) x act-order (off, uniform permuted g_idx, irregular
 * g_idx) x bias on/off x W4A16/W4A8 x M in {1, 2, 3, 17}, on K that are not powers of two
 * (36, 40, 72, 96) and odd N (13, 7, 5, 1). Every checkpoint layout that can hold a case is
 * used in turn, so the decode path is part of what is checked.
 *
 * Tolerances: tu_tolerance() (fp32 accumulation bound gamma_(K+G+2) * sum|x*w*s| for W4A16,
 * gamma_(G+4) * sx * sum_g |s_g * isum_g| for W4A8 whose integer sums are exact, plus half an
 * ulp of the activation type; derivation in tests/support/testutil.c). Every third case uses
 * TU_DATA_EXACT inputs (small integers, power-of-two scales), where each fp32 partial sum is
 * exact and the output must equal the correctly rounded oracle bit for bit.
 *
 * Also: the fp16/bf16 conversions against independent encoders, the W4A8 row quantization
 * against the oracle's, W4A8 edge rows (zero, huge, tiny, inf, NaN), and a check that the
 * tolerance is tight enough to catch a single wrong weight.
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
#include "support/testutil.h"

static const int64_t ms[] = {1, 2, 3, 17};
#define NMS ((int)(sizeof ms / sizeof ms[0]))
#define MAXM 17

/* Random weights (scale dtype sd, no act-order, random data) into *w and a ref layer over them,
 * encoded in `layout` (asserts on failure). */
static mpl_layer *random_ref_layer(const mpl_config *c, mpl_dtype sd, mpl_layout layout, tu_rng *r, tu_weights *w) {
    assert_int_equal(tu_weights_random(w, c, sd, TU_GIDX_NONE, TU_DATA_RANDOM, r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(w, layout, &ck), MPL_OK);
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = "ref";
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(c, &ck, &o, &l), MPL_OK);
    mpl_checkpoint_tensors_free(&ck);
    return l;
}

/* One layer, checked for every M: output vs oracle (tolerance or exact), guards, determinism. */
static int64_t ref_case(const mpl_config *cfg, mpl_layout layout, mpl_dtype sd, tu_gidx_kind gk, tu_data_kind dk,
                        int with_bias, int threads, uint64_t seed) {
    tu_rng r;
    tu_rng_init(&r, seed);
    tu_weights w;
    if (tu_weights_random(&w, cfg, sd, gk, dk, &r) != 0) return 1;
    mpl_checkpoint_tensors ck;
    mpl_status st = tu_weights_encode(&w, layout, &ck);
    if (st != MPL_OK) {
        fprintf(stderr, "encode (%s): %s\n", mpl_layout_name(layout), mpl_last_error());
        tu_weights_free(&w);
        return 1;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = "ref";
    o.threads = threads;
    mpl_layer *l = NULL;
    st = mpl_layer_create(cfg, &ck, &o, &l);
    mpl_checkpoint_tensors_free(&ck);
    if (st != MPL_OK) {
        fprintf(stderr, "create (%s): %s\n", mpl_layout_name(layout), mpl_last_error());
        tu_weights_free(&w);
        return 1;
    }
    int64_t K = cfg->k, N = cfg->n, bad = 0;
    size_t as = tu_act_size(cfg->act);
    void *x = malloc((size_t)(MAXM * K) * as), *b = malloc((size_t)N * as);
    float *xf = malloc((size_t)(MAXM * K) * sizeof(float)), *bf = malloc((size_t)N * sizeof(float));
    double *want = malloc((size_t)(MAXM * N) * sizeof(double)), *mag = malloc((size_t)(MAXM * N) * sizeof(double));
    double *tol = malloc((size_t)(MAXM * N) * sizeof(double));
    assert_non_null(x);
    assert_non_null(b);
    assert_non_null(xf);
    assert_non_null(bf);
    assert_non_null(want);
    assert_non_null(mag);
    assert_non_null(tol);
    tu_bias_random(&r, cfg->act, N, dk, b, bf);
    char what[200];
    snprintf(what, sizeof what, "ref (%s layout, %s scales, g_idx %d%s%s)", mpl_layout_name(layout),
             mpl_dtype_name(sd), (int)gk, with_bias ? ", bias" : "", dk == TU_DATA_EXACT ? ", exact data" : "");
    for (int mi = 0; mi < NMS; mi++) {
        int64_t m = ms[mi];
        tu_act_random(&r, cfg, m, dk, x, xf);
        tu_oracle(&w, m, xf, with_bias ? bf : NULL, want, mag);
        for (int64_t i = 0; i < m * N; i++) tol[i] = tu_tolerance(cfg, want[i], mag[i], 0.0);
        tu_buf y1, y2;
        assert_non_null(tu_buf_alloc(&y1, (size_t)(m * N) * as, 0xFF));
        assert_non_null(tu_buf_alloc(&y2, (size_t)(m * N) * as, 0xFF));
        assert_int_equal(mpl_layer_apply(l, m, x, with_bias ? b : NULL, y1.p), MPL_OK);
        assert_int_equal(mpl_layer_apply(l, m, x, with_bias ? b : NULL, y2.p), MPL_OK);
        if (!tu_buf_guards_ok(&y1, what) || !tu_buf_guards_ok(&y2, what)) bad++;
        if (memcmp(y1.p, y2.p, (size_t)(m * N) * as) != 0) {
            fprintf(stderr, "%s: seed=0x%llx m=%lld: two applies differ\n", what, (unsigned long long)seed,
                    (long long)m);
            bad++;
        }
        bad += tu_compare(what, seed, cfg, m, y1.p, want, dk == TU_DATA_EXACT ? NULL : tol);
        tu_buf_free(&y1);
        tu_buf_free(&y2);
    }
    free(x);
    free(b);
    free(xf);
    free(bf);
    free(want);
    free(mag);
    free(tol);
    mpl_layer_destroy(l);
    tu_weights_free(&w);
    return bad;
}

typedef struct {
    mpl_wtype wtype;
    mpl_mode mode;
} matrix_param;

typedef struct {
    int64_t k, n;
    int64_t groups[3];
} shape;

static const shape shapes4[] = {{40, 13, {-1, 8, 20}}, {72, 7, {-1, 24, 36}}, {96, 1, {-1, 32, 48}}};
static const shape shapes8[] = {{36, 5, {-1, 12, 18}}, {72, 7, {-1, 24, 8}}, {96, 16, {-1, 32, 48}}};
static const shape shapes23[] = {{32, 13, {-1, 8, 16}}, {64, 7, {-1, 32, 16}}, {96, 16, {-1, 32, 48}}};

static void ref_matrix(void **state) {
    const matrix_param *p = *state;
    int bits = tu_wtype_bits(p->wtype);
    const shape *sh = bits == 8 ? shapes8 : bits < 4 ? shapes23 : shapes4;
    static const mpl_act acts[] = {MPL_ACT_F16, MPL_ACT_BF16, MPL_ACT_F32};
    static const mpl_dtype sds[] = {MPL_DTYPE_F16, MPL_DTYPE_BF16, MPL_DTYPE_F32};
    uint64_t base = tu_seed(0x5eed0000u + (uint64_t)p->wtype * 16 + (uint64_t)p->mode);
    uint64_t idx = 0;
    int64_t bad = 0;
    int cases = 0;
    for (int s = 0; s < 3; s++)
        for (int gi = 0; gi < 3; gi++)
            for (int ao = 0; ao < 3; ao++)
                for (int a = 0; a < 3; a++) {
                    int64_t gs = sh[s].groups[gi];
                    if (gs == -1 && ao != 0) continue; /* act-order needs groups */
                    mpl_config c;
                    mpl_config_init(&c, sh[s].k, sh[s].n);
                    c.wtype = p->wtype;
                    c.zero_points = tu_wtype_needs_zeros(p->wtype);
                    c.act = acts[a];
                    c.group_size = gs;
                    c.act_order = ao != 0;
                    c.mode = p->mode;
                    /* Rotate through the layouts that can hold this case. */
                    mpl_layout layouts[5];
                    int nl = 0;
                    layouts[nl++] = MPL_LAYOUT_GPTQ;
                    layouts[nl++] = MPL_LAYOUT_CT;
                    layouts[nl++] = MPL_LAYOUT_GPTQ_V2;
                    if (!c.act_order && bits >= 4 && c.n % (32 / bits) == 0) layouts[nl++] = MPL_LAYOUT_AWQ;
                    if (c.wtype == MPL_WTYPE_INT4) layouts[nl++] = MPL_LAYOUT_CT_INT;
                    uint64_t seed = tu_case_seed(base, idx);
                    tu_data_kind dk = idx % 3 == 2 ? TU_DATA_EXACT : TU_DATA_RANDOM;
                    bad += ref_case(&c, layouts[idx % (uint64_t)nl], sds[idx % 3],
                                    ao == 2 ? TU_GIDX_IRREGULAR : TU_GIDX_PERMUTED, dk, (int)(idx & 1),
                                    (int)(idx % 2) + 1, seed);
                    idx++;
                    cases++;
                }
    print_message("%s %s: %d layers x %d M values, base seed 0x%llx\n", mpl_wtype_name(p->wtype),
                  p->mode == MPL_MODE_W4A8 ? "w4a8" : "w4a16", cases, NMS, (unsigned long long)base);
    assert_int_equal(bad, 0);
}

/* mpl_f16/bf16 conversions against the independent encoders: exhaustive on 16-bit patterns,
 * every midpoint between neighbours (the ties), and random floats over the whole range. */
static void conversions(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        double v16 = tu_f16_value((uint16_t)h), vb = tu_bf16_value((uint16_t)h);
        float f16 = mpl_f16_to_f32((uint16_t)h), fb = mpl_bf16_to_f32((uint16_t)h);
        if (isnan(v16)) {
            assert_true(isnan(f16));
            assert_true(isnan(mpl_f16_to_f32(mpl_f32_to_f16(f16))));
        } else {
            assert_true((double)f16 == v16);
            assert_int_equal(mpl_f32_to_f16(f16), h);
        }
        if (isnan(vb)) {
            assert_true(isnan(fb));
            assert_true(isnan(mpl_bf16_to_f32(mpl_f32_to_bf16(fb))));
        } else {
            assert_true((double)fb == vb);
            assert_int_equal(mpl_f32_to_bf16(fb), h);
        }
        /* Midpoint to the next larger magnitude (exact in fp32): ties to even. */
        if ((h & 0x7c00u) != 0x7c00u) {
            double mid = (v16 + tu_f16_value((uint16_t)(h + 1))) / 2;
            if (isfinite(mid)) assert_int_equal(mpl_f32_to_f16((float)mid), tu_f16_bits(mid));
        }
        if ((h & 0x7f80u) != 0x7f80u) {
            double mid = (vb + tu_bf16_value((uint16_t)(h + 1))) / 2;
            if (isfinite(mid)) assert_int_equal(mpl_f32_to_bf16((float)mid), tu_bf16_bits(mid));
        }
    }
    tu_rng r;
    tu_rng_init(&r, tu_seed(0xc0417));
    for (int i = 0; i < 200000; i++) {
        uint32_t u = (uint32_t)tu_rng_next(&r);
        float f;
        memcpy(&f, &u, 4);
        if (isnan(f)) {
            assert_true(isnan(mpl_f16_to_f32(mpl_f32_to_f16(f))));
            assert_true(isnan(mpl_bf16_to_f32(mpl_f32_to_bf16(f))));
            continue;
        }
        if (mpl_f32_to_f16(f) != tu_f16_bits(f) || mpl_f32_to_bf16(f) != tu_bf16_bits(f))
            fail_msg("float %a (0x%08x): f16 0x%04x want 0x%04x, bf16 0x%04x want 0x%04x", (double)f, u,
                     mpl_f32_to_f16(f), tu_f16_bits(f), mpl_f32_to_bf16(f), tu_bf16_bits(f));
    }
    assert_int_equal(mpl_f32_to_f16(65520.0f), 0x7c00);  /* halfway past the largest f16: to inf */
    assert_int_equal(mpl_f32_to_f16(65519.99f), 0x7bff);
    assert_int_equal(mpl_f32_to_f16(0x1p-25f), 0x0000);  /* tie between 0 and the smallest subnormal */
    assert_int_equal(mpl_f32_to_f16(0x1.000002p-25f), 0x0001);
    assert_int_equal(mpl_f32_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds up to inf in bf16 */
}

/* The library's W4A8 row quantization gives exactly the oracle's q and sx (ties included). */
static void w4a8_quantization_matches(void **state) {
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed(0x9a17));
    enum { K = 72 };
    float x[K];
    int8_t q1[K], q2[K];
    for (int t = 0; t < 2000; t++) {
        double amax = exp2(tu_rng_uniform(&r, -20, 20));
        for (int i = 0; i < K; i++) x[i] = (float)tu_rng_uniform(&r, -amax, amax);
        if (t % 4 == 1) /* ties: amax = 127 * 2^e makes inv a power of two, halves land exactly */
            for (int i = 0; i < K; i++) x[i] = (float)ldexp((double)tu_rng_range(&r, -254, 254) / 2.0, t % 9 - 4);
        if (t % 4 == 1) x[0] = (float)ldexp(127.0, t % 9 - 4);
        int bad1, bad2;
        float s1 = mpl_quantize_row_i8(x, K, q1, &bad1), s2 = tu_quantize_row(x, K, q2, &bad2);
        assert_int_equal(bad1, bad2);
        assert_true(s1 == s2);
        assert_memory_equal(q1, q2, K);
    }
}

/* W4A8 edge rows in one batch: zero (y = bias), one huge value, a tiny row (127/amax overflows),
 * +inf, -inf, NaN (NaN outputs), and an ordinary row that must be unaffected by its neighbours. */
static void w4a8_edge_rows(void **state) {
    (void)state;
    static const mpl_act acts[] = {MPL_ACT_F16, MPL_ACT_BF16, MPL_ACT_F32};
    enum { M = 7 };
    for (int a = 0; a < 3; a++) {
        mpl_config c;
        mpl_config_init(&c, 40, 13);
        c.act = acts[a];
        c.group_size = 20;
        c.mode = MPL_MODE_W4A8;
        uint64_t seed = tu_seed(0xed9e) + (uint64_t)a;
        tu_rng r;
        tu_rng_init(&r, seed);
        tu_weights w;
        mpl_layer *l = random_ref_layer(&c, MPL_DTYPE_F16, MPL_LAYOUT_GPTQ, &r, &w);
        size_t as = tu_act_size(c.act);
        unsigned char x[M * 40 * 4], b[13 * 4];
        float xf[M * 40], bf[13];
        double want[M * 13], mag[M * 13], tol[M * 13];
        tu_act_random(&r, &c, M, TU_DATA_RANDOM, x, xf);
        tu_bias_random(&r, c.act, 13, TU_DATA_RANDOM, b, bf);
        double huge = c.act == MPL_ACT_F16 ? 60000.0 : 1e30;
        /* tiny: below 127/FLT_MAX, so 127/amax is not finite; f16 cannot hold it and flushes to 0 */
        double tiny = c.act == MPL_ACT_F16 ? 0.0 : 1e-38;
        for (int kk = 0; kk < 40; kk++) {
            tu_act_store(c.act, x, 0 * 40 + kk, 0.0);                    /* row 0: all zero */
            tu_act_store(c.act, x, 2 * 40 + kk, kk % 4 == 0 ? 0.0 : kk % 4 == 1 ? -tiny : tiny); /* row 2 */
        }
        tu_act_store(c.act, x, 1 * 40 + 17, huge); /* row 1: one huge value */
        tu_act_store(c.act, x, 3 * 40 + 5, INFINITY);
        tu_act_store(c.act, x, 4 * 40 + 39, -INFINITY);
        tu_act_store(c.act, x, 5 * 40 + 0, NAN);
        for (int i = 0; i < M * 40; i++) xf[i] = (float)tu_act_load(c.act, x, i);
        oracle_w4a8(&c, w.codes, w.scales, w.zeros, w.g_idx, M, xf, bf, want, mag);
        for (int i = 0; i < M * 13; i++) tol[i] = tu_tolerance(&c, want[i], mag[i], 0.0);
        tu_buf y;
        assert_non_null(tu_buf_alloc(&y, M * 13 * as, 0x00));
        assert_int_equal(mpl_layer_apply(l, M, x, b, y.p), MPL_OK);
        assert_true(tu_buf_guards_ok(&y, "w4a8 edge rows"));
        assert_int_equal(tu_compare("ref w4a8 edge rows", seed, &c, M, y.p, want, tol), 0);
        for (int j = 0; j < 13; j++) {
            /* zero and tiny rows give exactly the bias; inf/NaN rows give NaN */
            assert_true(tu_act_load(c.act, y.p, 0 * 13 + j) == (double)bf[j]);
            assert_true(tu_act_load(c.act, y.p, 2 * 13 + j) == (double)bf[j]);
            for (int i = 3; i <= 5; i++) assert_true(isnan(tu_act_load(c.act, y.p, i * 13 + j)));
            assert_true(isfinite(tu_act_load(c.act, y.p, 6 * 13 + j)));
        }
        /* the same inputs without bias: the zero and tiny rows are exactly 0 */
        assert_int_equal(mpl_layer_apply(l, M, x, NULL, y.p), MPL_OK);
        for (int j = 0; j < 13; j++) {
            assert_true(tu_act_load(c.act, y.p, 0 * 13 + j) == 0.0);
            assert_true(tu_act_load(c.act, y.p, 2 * 13 + j) == 0.0);
        }
        tu_buf_free(&y);
        mpl_layer_destroy(l);
        tu_weights_free(&w);
    }
}

/* W4A16 has no special rows: IEEE propagation. A NaN in a row makes every output of that row
 * NaN; an inf makes each output inf or NaN (0 * inf is NaN); the other rows are unaffected. */
static void w4a16_nonfinite_rows(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 40, 7);
    c.act = MPL_ACT_F32;
    c.group_size = 8;
    tu_rng r;
    uint64_t seed = tu_seed(0x1f1f);
    tu_rng_init(&r, seed);
    tu_weights w;
    mpl_layer *l = random_ref_layer(&c, MPL_DTYPE_F16, MPL_LAYOUT_CT, &r, &w);
    float x[3 * 40], y[3 * 7];
    double want[3 * 7], mag[3 * 7], tol[3 * 7];
    tu_act_random(&r, &c, 3, TU_DATA_RANDOM, x, x);
    x[0 * 40 + 9] = NAN;
    x[2 * 40 + 33] = INFINITY;
    oracle_w4a16(&c, w.codes, w.scales, w.zeros, w.g_idx, 3, x, NULL, want, mag);
    for (int i = 0; i < 21; i++) tol[i] = tu_tolerance(&c, want[i], mag[i], 0.0);
    assert_int_equal(mpl_layer_apply(l, 3, x, NULL, y), MPL_OK);
    for (int j = 0; j < 7; j++) assert_true(isnan(y[j]));
    assert_int_equal(tu_compare("ref w4a16 row 1 next to non-finite rows", seed, &c, 1, y + 7, want + 7, tol + 7), 0);
    for (int j = 0; j < 7; j++) assert_true(isnan(y[14 + j]) || isinf(y[14 + j]));
    mpl_layer_destroy(l);
    tu_weights_free(&w);
}

/* Irregular act-order extremes: every channel in one group (the others empty), and groups
 * given in descending order. */
static void irregular_extremes(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 72, 13);
    c.wtype = MPL_WTYPE_UINT4;
    c.zero_points = 1;
    c.act = MPL_ACT_F32;
    c.group_size = 24;
    c.act_order = 1;
    for (int variant = 0; variant < 2; variant++)
        for (int mode = 0; mode < 2; mode++) {
            c.mode = mode ? MPL_MODE_W4A8 : MPL_MODE_W4A16;
            uint64_t seed = tu_seed(0x1e1e) + (uint64_t)(variant * 2 + mode);
            tu_rng r;
            tu_rng_init(&r, seed);
            tu_weights w;
            assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_BF16, TU_GIDX_IRREGULAR, TU_DATA_RANDOM, &r), 0);
            for (int kk = 0; kk < 72; kk++) w.g_idx[kk] = variant == 0 ? 2 : (int32_t)(2 - kk / 24);
            mpl_checkpoint_tensors ck;
            assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
            mpl_layer *l = NULL;
            assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_OK);
            assert_string_equal(mpl_layer_kernel(l), variant == 0 ? "ref" : mpl_layer_kernel(l));
            mpl_checkpoint_tensors_free(&ck);
            float x[3 * 72], y[3 * 13];
            double want[3 * 13], mag[3 * 13], tol[3 * 13];
            tu_act_random(&r, &c, 3, TU_DATA_RANDOM, x, x);
            tu_oracle(&w, 3, x, NULL, want, mag);
            for (int i = 0; i < 39; i++) tol[i] = tu_tolerance(&c, want[i], mag[i], 0.0);
            assert_int_equal(mpl_layer_apply(l, 3, x, NULL, y), MPL_OK);
            assert_int_equal(tu_compare("irregular act-order extremes", seed, &c, 3, y, want, tol), 0);
            mpl_layer_destroy(l);
            tu_weights_free(&w);
        }
}

/* The harness must be able to fail: one changed weight code must be caught by tu_tolerance
 * in a case with f32 activations and one with bf16. */
static void tolerance_catches_one_wrong_weight(void **state) {
    (void)state;
    static const mpl_act acts[] = {MPL_ACT_F32, MPL_ACT_BF16};
    for (int a = 0; a < 2; a++) {
        mpl_config c;
        mpl_config_init(&c, 72, 7);
        c.act = acts[a];
        c.group_size = 24;
        uint64_t seed = tu_seed(0xbad) + (uint64_t)a;
        tu_rng r;
        tu_rng_init(&r, seed);
        tu_weights w;
        mpl_layer *l = random_ref_layer(&c, MPL_DTYPE_F32, MPL_LAYOUT_GPTQ, &r, &w);
        unsigned char x[72 * 4], y[7 * 4];
        float xf[72];
        double want[7], mag[7], tol[7];
        tu_act_random(&r, &c, 1, TU_DATA_RANDOM, x, xf);
        assert_int_equal(mpl_layer_apply(l, 1, x, NULL, y), MPL_OK);
        /* change weight (n=3, k=k*) by 4 steps, k* the input with the largest |x| */
        int ks = 0;
        for (int kk = 1; kk < 72; kk++)
            if (fabsf(xf[kk]) > fabsf(xf[ks])) ks = kk;
        w.codes[3 * 72 + ks] ^= 4;
        tu_oracle(&w, 1, xf, NULL, want, mag);
        for (int j = 0; j < 7; j++) tol[j] = tu_tolerance(&c, want[j], mag[j], 0.0);
        fprintf(stderr, "(expected) ");
        assert_int_equal(tu_compare("deliberately wrong oracle", seed, &c, 1, y, want, tol), 1);
        mpl_layer_destroy(l);
        tu_weights_free(&w);
    }
}

int main(void) {
    static const matrix_param params[] = {
        {MPL_WTYPE_UINT4B8, MPL_MODE_W4A16}, {MPL_WTYPE_UINT4, MPL_MODE_W4A16},   {MPL_WTYPE_INT4, MPL_MODE_W4A16},
        {MPL_WTYPE_UINT8B128, MPL_MODE_W4A16}, {MPL_WTYPE_UINT8, MPL_MODE_W4A16}, {MPL_WTYPE_UINT4B8, MPL_MODE_W4A8},
        {MPL_WTYPE_UINT4, MPL_MODE_W4A8},      {MPL_WTYPE_INT4, MPL_MODE_W4A8},   {MPL_WTYPE_UINT8B128, MPL_MODE_W4A8},
        {MPL_WTYPE_UINT8, MPL_MODE_W4A8},      {MPL_WTYPE_UINT2B2, MPL_MODE_W4A16}, {MPL_WTYPE_UINT3B4, MPL_MODE_W4A16},
        {MPL_WTYPE_UINT2, MPL_MODE_W4A16},     {MPL_WTYPE_UINT3, MPL_MODE_W4A16},   {MPL_WTYPE_UINT2B2, MPL_MODE_W4A8},
        {MPL_WTYPE_UINT3, MPL_MODE_W4A8},
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conversions),
        cmocka_unit_test(w4a8_quantization_matches),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[0]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[1]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[2]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[3]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[4]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[5]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[6]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[7]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[8]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[9]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[10]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[11]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[12]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[13]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[14]),
        cmocka_unit_test_prestate(ref_matrix, (void *)&params[15]),
        cmocka_unit_test(w4a8_edge_rows),
        cmocka_unit_test(w4a16_nonfinite_rows),
        cmocka_unit_test(irregular_extremes),
        cmocka_unit_test(tolerance_catches_one_wrong_weight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
