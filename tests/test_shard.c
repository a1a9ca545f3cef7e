/*
 * test_shard.c -- tensor-parallel sharding (mpl_shard_config, mpl_layer_create_shard) and the host
 * stand-in (mpl_tp_apply_host) against the unsharded ref kernel.
 *
 * Matrix: mode {column, row} x ranks {2, 4, 8} x act-order {off, on} x zero points {off, on} x
 * group size {-1, 32, 128} (act-order needs groups: -1 with act-order is not a valid config) x
 * per-rank size {a small one, one of the odd TP sizes 1408, 7392, 10944 in rotation}. Each case
 * takes a checkpoint layout in rotation among those that hold its config (gptq, gptq-v2, ct, awq,
 * ct-int), an activation type in rotation (bf16, f16, f32) and a weight type (zero points: uint4 /
 * uint8; else uint4b8 / int4 / uint8b128). The split dimension is R x the per-rank size; the other
 * one is small (row: N = 24; column: K = 256, or 128 beside an odd size), so a case costs two decodes
 * of a few MB (mpl_layer_create_shards decodes once for all ranks; small cases with an odd seed create
 * rank by rank through mpl_layer_create_shard instead).
 * A case whose split a rule forbids (a group straddling ranks without act-order: 7392 and 10944
 * are not multiples of 128) must be refused with that rule's message; every other one is run
 * through the stand-in twice (bit-identical, guard bytes intact) and compared with the unsharded
 * ref layer on the same checkpoint:
 *   - column-parallel: bit-identical (ref computes each output alone, in the same order);
 *   - row-parallel on exact data (small-integer x, power-of-two scales, f32 activations, K <= 2048:
 *     every fp32 partial sum is exact, testutil.h): bit-identical too;
 *   - row-parallel otherwise: within row_tolerance() below, derived from K, G, R and the precision.
 * Every shard layer runs on ref (forced) and one thread; a few cases more let the chooser pick.
 *
 * Row-parallel bound. Let S = |b| + sum_k |x_k w_k s_g(k)| (the oracle's magnitude), u = 2^-24,
 * u_a the activation type's unit roundoff (2^-8 bf16, 2^-11 f16, 2^-24 f32), eta half its smallest
 * subnormal step, gamma_j = j u / (1 - j u), n = K + G + 2. Rank r's fp32 result has error at most
 * gamma_n S_r (K_r + G_r + 2 <= n roundings, tu_tolerance's derivation) and is rounded to the
 * activation type: + u_a (1 + gamma_n) S_r + eta, since |p_r| <= (1 + gamma_n) S_r. The R partials
 * (|p^_r| <= (1 + u_a)(1 + gamma_n) S_r) are summed in fp32: + gamma_R (1 + u_a)(1 + gamma_n) S.
 * With sum_r S_r = S the sharded output before its last rounding is within
 *   a = (gamma_n + u_a (1 + gamma_n) + gamma_R (1 + u_a)(1 + gamma_n)) S + R eta
 * of the exact y, and the unsharded ref within gamma_n S; each is rounded once (half an ulp at
 * |y| + a). So |y_shard - y_ref| <= a + gamma_n S + 2 half_ulp(|y| + a).
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

#include "support/testutil.h"

static uint64_t g_seed;

static int setup(void **state) {
    (void)state;
    g_seed = tu_seed(0x5a4d16u);
    printf("seed 0x%llx (set MPL_TEST_SEED to repeat)\n", (unsigned long long)g_seed);
    return 0;
}

static double gamma_of(double j) { return j * 0x1.0p-24 / (1.0 - j * 0x1.0p-24); }

static double row_tolerance(const mpl_config *full, int ranks, double want, double mag) {
    const double n = (double)(full->k + tu_groups(full) + 2), gn = gamma_of(n), gr = gamma_of((double)ranks);
    const double ua = tu_half_ulp(full->act, 1.0), eta = tu_half_ulp(full->act, 0.0);
    double a = (gn + ua * (1 + gn) + gr * (1 + ua) * (1 + gn)) * mag + ranks * eta;
    return a + gn * mag + 2 * tu_half_ulp(full->act, fabs(want) + a);
}

typedef struct {
    mpl_tp_mode mode;
    int ranks;
    mpl_layout layout;
    tu_data_kind data;
    tu_gidx_kind gidx;
    int auto_kernel; /* 1: let the chooser pick every shard's kernel (and the unsharded layer's) */
    int64_t m;
} shard_case;

typedef struct {
    int64_t ran, exact, refused;
} tally;

/* Creates every rank's layer (mpl_layer_create_shards: one decode; every other case also through
 * mpl_layer_create_shard, rank by rank); MPL_OK, or the failing status (layers all NULL). */
static mpl_status create_ranks(const mpl_config *full, const mpl_checkpoint_tensors *ck, const shard_case *sc,
                               mpl_layer **layers, int one_by_one) {
    mpl_options o[8];
    for (int r = 0; r < sc->ranks; r++) {
        mpl_options_init(&o[r]);
        o[r].threads = 1;
        o[r].kernel = sc->auto_kernel ? NULL : "ref";
    }
    if (!one_by_one) return mpl_layer_create_shards(full, ck, sc->mode, sc->ranks, o, layers);
    for (int r = 0; r < sc->ranks; r++) {
        mpl_shard sh = {sc->mode, r, sc->ranks};
        mpl_status st = mpl_layer_create_shard(full, ck, &sh, &o[r], &layers[r]);
        if (st != MPL_OK) {
            for (int i = 0; i < r; i++) {
                mpl_layer_destroy(layers[i]);
                layers[i] = NULL;
            }
            return st;
        }
    }
    return MPL_OK;
}

/* One case; 0 on success (pass or the expected refusal), 1 on failure (printed). */
static int run_case(const mpl_config *full, const shard_case *sc, uint64_t seed, const char *expect_refusal,
                    tally *t) {
    char cs[160];
    tu_cfg_str(full, cs, sizeof cs);
    int fail = 1;
    tu_rng rng;
    tu_rng_init(&rng, seed);
    tu_weights w;
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    mpl_layer *layers[8] = {0}, *ref = NULL;
    void *x = NULL, *b = NULL, *yr = NULL;
    float *xf = NULL, *bf = NULL;
    double *want = NULL, *mag = NULL;
    tu_buf y1, y2;
    memset(&y1, 0, sizeof y1);
    memset(&y2, 0, sizeof y2);
    if (tu_weights_random(&w, full, MPL_DTYPE_F16, full->act_order ? sc->gidx : TU_GIDX_NONE, sc->data, &rng)) {
        fprintf(stderr, "FAIL %s: random weights\n", cs);
        return 1;
    }
    mpl_status st = tu_weights_encode(&w, sc->layout, &ck);
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s: encode %s: %s\n", cs, mpl_layout_name(sc->layout), mpl_last_error());
        goto done;
    }
    char what[320];
    snprintf(what, sizeof what, "%s-parallel R=%d %s layout %s%s", mpl_tp_mode_name(sc->mode), sc->ranks, cs,
             mpl_layout_name(sc->layout), sc->auto_kernel ? " (chosen kernels)" : "");
    st = create_ranks(full, &ck, sc, layers, (int)(seed & 1) && full->k * full->n <= (1 << 20));
    if (expect_refusal) {
        if (st == MPL_ERR_INVALID_ARGUMENT && strstr(mpl_last_error(), expect_refusal)) {
            t->refused++;
            fail = 0;
        } else {
            fprintf(stderr, "FAIL %s seed=0x%llx: expected a refusal naming '%s', got %s: %s\n", what,
                    (unsigned long long)seed, expect_refusal, mpl_status_string(st), mpl_last_error());
        }
        goto done;
    }
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s seed=0x%llx: create shards: %s: %s\n", what, (unsigned long long)seed,
                mpl_status_string(st), mpl_last_error());
        goto done;
    }
    mpl_options ro;
    mpl_options_init(&ro);
    ro.threads = 1;
    ro.kernel = sc->auto_kernel ? NULL : "ref";
    if ((st = mpl_layer_create(full, &ck, &ro, &ref)) != MPL_OK) {
        fprintf(stderr, "FAIL %s: create unsharded: %s\n", what, mpl_last_error());
        goto done;
    }
    const int64_t m = sc->m, K = full->k, N = full->n;
    const size_t as = tu_act_size(full->act), ny = (size_t)(m * N);
    x = malloc((size_t)(m * K) * as);
    xf = malloc((size_t)(m * K) * sizeof(float));
    b = malloc((size_t)N * as);
    bf = malloc((size_t)N * sizeof(float));
    yr = malloc(ny * as);
    want = malloc(ny * sizeof(double));
    mag = malloc(ny * sizeof(double));
    if (!x || !xf || !b || !bf || !yr || !want || !mag || !tu_buf_alloc(&y1, ny * as, 0xFF) ||
        !tu_buf_alloc(&y2, ny * as, 0xFF)) {
        fprintf(stderr, "FAIL %s: out of memory\n", what);
        goto done;
    }
    tu_act_random(&rng, full, m, sc->data, x, xf);
    tu_bias_random(&rng, full->act, N, sc->data, b, bf);
    if ((st = mpl_tp_apply_host(layers, sc->ranks, sc->mode, m, x, b, y1.p)) != MPL_OK ||
        (st = mpl_tp_apply_host(layers, sc->ranks, sc->mode, m, x, b, y2.p)) != MPL_OK ||
        (st = mpl_layer_apply(ref, m, x, b, yr)) != MPL_OK) {
        fprintf(stderr, "FAIL %s: apply: %s\n", what, mpl_last_error());
        goto done;
    }
    int ok = tu_buf_guards_ok(&y1, what) & tu_buf_guards_ok(&y2, what);
    if (memcmp(y1.p, y2.p, ny * as) != 0) {
        fprintf(stderr, "FAIL %s seed=0x%llx: two runs differ (not deterministic)\n", what, (unsigned long long)seed);
        ok = 0;
    }
    /* Bit-identical: column on one kernel (ref), row on exact f32 data. The chosen kernels of the
     * shards and of the whole layer may differ (and split K by N), so those cases use the bound. */
    int exact = !sc->auto_kernel && (sc->mode == MPL_TP_COLUMN || (sc->data == TU_DATA_EXACT && full->act == MPL_ACT_F32));
    if (exact) {
        if (memcmp(y1.p, yr, ny * as) != 0) {
            for (size_t i = 0; i < ny; i++)
                if (memcmp((char *)y1.p + i * as, (char *)yr + i * as, as) != 0) {
                    fprintf(stderr, "FAIL %s seed=0x%llx: not bit-identical to unsharded ref at (m=%lld, n=%lld): %.9g vs %.9g\n",
                            what, (unsigned long long)seed, (long long)(i / (size_t)N), (long long)(i % (size_t)N),
                            tu_act_load(full->act, y1.p, (int64_t)i), tu_act_load(full->act, yr, (int64_t)i));
                    break;
                }
            ok = 0;
        }
        t->exact++;
    } else {
        tu_oracle(&w, m, xf, bf, want, mag);
        for (size_t i = 0; i < ny; i++) {
            double got = tu_act_load(full->act, y1.p, (int64_t)i), ref_v = tu_act_load(full->act, yr, (int64_t)i);
            double tol = sc->mode == MPL_TP_ROW ? row_tolerance(full, sc->ranks, want[i], mag[i])
                                                : 2 * tu_tolerance(full, want[i], mag[i], 0.0);
            if (!(fabs(got - ref_v) <= tol)) {
                fprintf(stderr,
                        "FAIL %s seed=0x%llx: at (m=%lld, n=%lld) sharded %.9g, unsharded %.9g: |diff| %.3g > tol %.3g\n",
                        what, (unsigned long long)seed, (long long)(i / (size_t)N), (long long)(i % (size_t)N), got,
                        ref_v, fabs(got - ref_v), tol);
                ok = 0;
                break;
            }
        }
    }
    t->ran++;
    fail = !ok;
done:
    for (int r = 0; r < 8; r++) mpl_layer_destroy(layers[r]);
    mpl_layer_destroy(ref);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    free(x);
    free(xf);
    free(b);
    free(bf);
    free(yr);
    free(want);
    free(mag);
    tu_buf_free(&y1);
    tu_buf_free(&y2);
    return fail;
}

/* The layouts that can hold a config, in a fixed order. */
static int layouts_for(const mpl_config *c, mpl_layout *out) {
    int n = 0;
    out[n++] = MPL_LAYOUT_GPTQ;
    out[n++] = MPL_LAYOUT_GPTQ_V2;
    out[n++] = MPL_LAYOUT_CT;
    if (!c->act_order && c->n % (32 / tu_wtype_bits(c->wtype)) == 0) out[n++] = MPL_LAYOUT_AWQ;
    if (c->wtype == MPL_WTYPE_INT4 && !c->zero_points) out[n++] = MPL_LAYOUT_CT_INT;
    return n;
}

static void matrix(void **state) {
    (void)state;
    static const int ranks_list[] = {2, 4, 8};
    static const int64_t groups_list[] = {-1, 32, 128};
    static const int64_t odd[] = {1408, 7392, 10944};
    static const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};
    tally t = {0, 0, 0};
    int64_t idx = 0, failures = 0;
    for (int mode = MPL_TP_COLUMN; mode <= MPL_TP_ROW; mode++)
        for (int ri = 0; ri < 3; ri++)
            for (int ao = 0; ao <= 1; ao++)
                for (int zp = 0; zp <= 1; zp++)
                    for (int gi = 0; gi < 3; gi++)
                        for (int si = 0; si < 2; si++, idx++) {
                            const int R = ranks_list[ri];
                            const int64_t gs = groups_list[gi];
                            if (ao && gs == -1) continue; /* act-order needs groups (config rule) */
                            /* si 0: a small per-rank size, exact data, f32 (row: K <= 2048 for exactness);
                             * si 1: an odd TP size, random data, the activation type in rotation. */
                            /* The whole layer must be valid: R * 7392 is no multiple of 128 for R = 2,
                             * so the rotation moves on to the next odd size. */
                            int64_t per = 0;
                            for (int j = 0; j < 3 && !per; j++) {
                                int64_t p = si == 0 ? (mode == MPL_TP_ROW ? 256 : 64) : odd[(idx + j) % 3];
                                if (mode == MPL_TP_COLUMN || gs < 0 || (R * p) % gs == 0) per = p;
                            }
                            mpl_config c;
                            if (mode == MPL_TP_ROW)
                                mpl_config_init(&c, R * per, 24);
                            else /* K = 256 holds 2 groups of 128; the odd sizes' large N take K = 128 */
                                mpl_config_init(&c, si == 0 ? 256 : 128, R * per);
                            c.act = si == 0 ? MPL_ACT_F32 : acts[idx % 3];
                            c.group_size = gs;
                            c.act_order = ao;
                            c.zero_points = zp;
                            static const mpl_wtype nozp[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_INT4, MPL_WTYPE_UINT8B128};
                            c.wtype = zp ? (idx % 4 == 3 ? MPL_WTYPE_UINT8 : MPL_WTYPE_UINT4) : nozp[idx % 3];
                            mpl_layout lays[5];
                            int nl = layouts_for(&c, lays);
                            shard_case sc = {.mode = (mpl_tp_mode)mode,
                                             .ranks = R,
                                             .layout = lays[idx % nl],
                                             .data = si == 0 ? TU_DATA_EXACT : TU_DATA_RANDOM,
                                             .gidx = TU_GIDX_PERMUTED,
                                             .m = 3};
                            const int64_t kl = c.k / R;
                            const char *refusal = NULL;
                            if (mode == MPL_TP_ROW && !ao && gs > 0 && gs != c.k && kl % gs != 0) refusal = "straddles";
                            failures += run_case(&c, &sc, tu_case_seed(g_seed, (uint64_t)idx), refusal, &t);
                        }
    printf("matrix: %lld cases run (%lld bit-identical to unsharded ref), %lld refused as the rules say\n",
           (long long)t.ran, (long long)t.exact, (long long)t.refused);
    assert_int_equal(failures, 0);
    assert_true(t.refused > 0);
}

/* Irregular act-order from the start (random group per channel), and the chooser's own kernels. */
static void irregular_and_chosen(void **state) {
    (void)state;
    tally t = {0, 0, 0};
    int failures = 0;
    for (int mode = MPL_TP_COLUMN; mode <= MPL_TP_ROW; mode++)
        for (int i = 0; i < 4; i++) {
            mpl_config c;
            mpl_config_init(&c, mode == MPL_TP_ROW ? 4 * 192 : 384, mode == MPL_TP_ROW ? 40 : 4 * 48);
            c.group_size = i < 2 ? 64 : 128;
            c.act_order = i % 2 == 0;
            c.act = i == 3 ? MPL_ACT_F16 : MPL_ACT_BF16;
            shard_case sc = {.mode = (mpl_tp_mode)mode, .ranks = 4, .layout = MPL_LAYOUT_GPTQ,
                             .data = TU_DATA_RANDOM, .gidx = i == 0 ? TU_GIDX_IRREGULAR : TU_GIDX_PERMUTED,
                             .auto_kernel = i >= 1, .m = i == 2 ? 17 : 2};
            const char *refusal = mode == MPL_TP_ROW && !c.act_order && (c.k / 4) % c.group_size ? "straddles" : NULL;
            failures += run_case(&c, &sc, tu_case_seed(g_seed, 1000u + (uint64_t)(mode * 10 + i)), refusal, &t);
        }
    assert_int_equal(failures, 0);
}

/* A row shard of an act-order layer whose g_idx is in channel order (k / group_size, as many GPTQ
 * checkpoints store it) keeps uniform groups: any kernel may take it. A permuted one: only ref. */
static void act_order_uniform_slice(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 1024, 64);
    c.group_size = 128;
    c.act_order = 1;
    tu_rng rng;
    tu_rng_init(&rng, g_seed);
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_PERMUTED, TU_DATA_RANDOM, &rng), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    mpl_shard sh = {MPL_TP_ROW, 1, 4};
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create_shard(&c, &ck, &sh, NULL, &l), MPL_OK);
    assert_string_equal(mpl_layer_kernel(l), "ref"); /* the rank's 256 channels fall unevenly into the 8 groups */
    assert_int_equal(mpl_layer_config(l)->k, 256);
    assert_int_equal(mpl_layer_config(l)->full_k, 1024);
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
    for (int64_t k = 0; k < c.k; k++) w.g_idx[k] = (int32_t)(k / 128);
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    assert_int_equal(mpl_layer_create_shard(&c, &ck, &sh, NULL, &l), MPL_OK);
    /* The same kernel the chooser picks for an unsharded uniform act-order layer of the shard's shape. */
    mpl_config u = *mpl_layer_config(l);
    u.full_k = 0;
    u.full_n = 0;
    const char *chosen = NULL;
    mpl_choice_entry e[16];
    int count;
    assert_int_equal(mpl_choose(&u, NULL, &chosen, e, 16, &count), MPL_OK);
    printf("uniform act-order row shard runs %s (the chooser's pick: %s)\n", mpl_layer_kernel(l), chosen);
    assert_string_equal(mpl_layer_kernel(l), chosen);
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* W4A8: column shards quantize the same rows (bit-identical); row shards quantize their own slice of
 * each row (a per-rank amax, as engines do), checked against the float64 oracle of the unsharded layer
 * with the quantization step added: |x - q sx_r| <= sx_r (1/2 + 2^-14) per element (nearest rounding,
 * plus the fp32 error of x * inv and of sx, each a few 2^-24 * 127 steps), and sx_r <= sx of the whole
 * row, so the quantized products differ from the exact ones by sx (1/2 + 2^-14) sum|w s| at most, on
 * top of the row bound taken over the magnitude of the quantized terms (<= sum (|x| + sx) |w s|). */
static void w4a8(void **state) {
    (void)state;
    tally t = {0, 0, 0};
    mpl_config c;
    mpl_config_init(&c, 512, 64);
    c.wtype = MPL_WTYPE_INT4;
    c.mode = MPL_MODE_W4A8;
    c.group_size = 64;
    shard_case sc = {.mode = MPL_TP_COLUMN, .ranks = 4, .layout = MPL_LAYOUT_CT_INT, .data = TU_DATA_RANDOM, .m = 3};
    assert_int_equal(run_case(&c, &sc, tu_case_seed(g_seed, 2000u), NULL, &t), 0);
    /* Row: the bound needs per-row sx; checked directly here. */
    tu_rng rng;
    tu_rng_init(&rng, tu_case_seed(g_seed, 2001u));
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &rng), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_CT_INT, &ck), MPL_OK);
    sc.mode = MPL_TP_ROW;
    mpl_layer *layers[8] = {0};
    assert_int_equal(create_ranks(&c, &ck, &sc, layers, 0), MPL_OK);
    const int64_t m = 3, K = c.k, N = c.n;
    uint16_t x[3 * 512], y[3 * 64];
    float xf[3 * 512];
    double want[3 * 64], mag[3 * 64], wsum[64];
    tu_act_random(&rng, &c, m, TU_DATA_RANDOM, x, xf);
    assert_int_equal(mpl_tp_apply_host(layers, 4, MPL_TP_ROW, m, x, NULL, y), MPL_OK);
    mpl_config c16 = c;
    c16.mode = MPL_MODE_W4A16; /* the oracle on the unquantized x */
    oracle_w4a16(&c16, w.codes, w.scales, NULL, NULL, m, xf, NULL, want, mag);
    for (int64_t n = 0; n < N; n++) {
        wsum[n] = 0;
        for (int64_t k = 0; k < K; k++)
            wsum[n] += fabs((double)tu_code_value(c.wtype, w.codes[n * K + k], 0) * w.scales[n * w.groups + k / 64]);
    }
    for (int64_t i = 0; i < m; i++) {
        double amax = 0;
        for (int64_t k = 0; k < K; k++) amax = fmax(amax, fabs((double)xf[i * K + k]));
        double sx = amax / 127.0;
        for (int64_t n = 0; n < N; n++) {
            double q = sx * (0.5 + 0x1.0p-14) * wsum[n];
            double tol = row_tolerance(&c16, 4, want[i * N + n], mag[i * N + n] + sx * wsum[n]) + q;
            double got = tu_act_load(c.act, y, i * N + n);
            if (!(fabs(got - want[i * N + n]) <= tol))
                fail_msg("w4a8 row (m=%lld, n=%lld): %.9g vs oracle %.9g, tol %.3g", (long long)i, (long long)n, got,
                         want[i * N + n], tol);
        }
    }
    for (int r = 0; r < 4; r++) mpl_layer_destroy(layers[r]);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

static void expect_refused(const mpl_config *c, mpl_layout layout, mpl_tp_mode mode, int rank, int ranks,
                           const char *needle) {
    mpl_shard sh = {mode, rank, ranks};
    mpl_config out;
    int64_t off;
    mpl_status st = mpl_shard_config(c, layout, &sh, &out, &off);
    if (st != MPL_ERR_INVALID_ARGUMENT || !strstr(mpl_last_error(), needle))
        fail_msg("shard %s R=%d rank %d: expected a refusal naming '%s', got %s: %s", mpl_tp_mode_name(mode), ranks,
                 rank, needle, mpl_status_string(st), mpl_last_error());
    printf("refused as expected: %s\n", mpl_last_error());
}

static void refusals(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 1024, 96);
    c.group_size = 128;
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_COLUMN, 0, 5, "n must be a multiple of the ranks");
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 0, 3, "k must be a multiple of the ranks");
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 0, 16, "straddles ranks 0 and 1"); /* 64 per rank */
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 4, 4, "rank = 4");
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_ROW, -1, 4, "rank = -1");
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 0, 0, "ranks = 0");
    expect_refused(&c, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 0, MPL_TP_MAX_RANKS + 1, "ranks = 1025");
    expect_refused(&c, MPL_LAYOUT_GPTQ, (mpl_tp_mode)7, 0, 2, "mode 7");
    expect_refused(&c, (mpl_layout)42, MPL_TP_ROW, 0, 2, "not a known layout");
    /* Packing: 4-bit weights are 8 per int32 along K (gptq, ct) and along N (awq). */
    mpl_config p;
    mpl_config_init(&p, 96, 48);
    expect_refused(&p, MPL_LAYOUT_CT, MPL_TP_ROW, 0, 16, "packed 8 per int32 along K"); /* 6 per rank */
    p.k = 96 * 2;
    expect_refused(&p, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 0, 48, "packed 8 per int32 along K"); /* 4 per rank */
    expect_refused(&p, MPL_LAYOUT_AWQ, MPL_TP_COLUMN, 0, 8, "AWQ packs 8 output channels per int32"); /* 6 per rank */
    p.wtype = MPL_WTYPE_UINT4;
    p.zero_points = 1;
    expect_refused(&p, MPL_LAYOUT_GPTQ, MPL_TP_COLUMN, 0, 8, "zero points are packed 8 per int32 along N");
    p.wtype = MPL_WTYPE_UINT8;
    expect_refused(&p, MPL_LAYOUT_CT, MPL_TP_COLUMN, 0, 16, "zero points are packed 4 per int32 along N"); /* 3 */
    /* Layout rules, a layer that is already a slice. */
    mpl_config a;
    mpl_config_init(&a, 256, 64);
    a.group_size = 32;
    a.act_order = 1;
    expect_refused(&a, MPL_LAYOUT_AWQ, MPL_TP_ROW, 0, 2, "no g_idx");
    expect_refused(&a, MPL_LAYOUT_CT_INT, MPL_TP_ROW, 0, 2, "int-quantized checkpoints hold int4");
    a.full_k = 512;
    expect_refused(&a, MPL_LAYOUT_GPTQ, MPL_TP_ROW, 0, 2, "is already a slice");
    /* A config mpl_shard_config refuses on its own rules: invalid layer. */
    mpl_config bad = c;
    bad.group_size = 100;
    mpl_shard sh = {MPL_TP_ROW, 0, 2};
    mpl_config out;
    assert_int_equal(mpl_shard_config(&bad, MPL_LAYOUT_GPTQ, &sh, &out, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_shard_config(NULL, MPL_LAYOUT_GPTQ, &sh, &out, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_shard_config(&c, MPL_LAYOUT_GPTQ, NULL, &out, NULL), MPL_ERR_INVALID_ARGUMENT);
    mpl_layer *l = (mpl_layer *)&out;
    assert_int_equal(mpl_layer_create_shard(&c, NULL, &sh, NULL, &l), MPL_ERR_INVALID_ARGUMENT);
    assert_null(l);
    assert_int_equal(mpl_layer_create_shard(&c, NULL, &sh, NULL, NULL), MPL_ERR_INVALID_ARGUMENT);

    /* Accepted edge rules: one group over K splits (per-channel scales on every rank); act-order lets
     * a row shard cut through groups (k / ranks = 96 with group 128); shard configs and offsets. */
    mpl_config g;
    mpl_config_init(&g, 768, 32);
    g.group_size = 768;
    int64_t off = -1;
    sh = (mpl_shard){MPL_TP_ROW, 2, 4};
    assert_int_equal(mpl_shard_config(&g, MPL_LAYOUT_GPTQ, &sh, &out, &off), MPL_OK);
    assert_int_equal(out.group_size, -1);
    assert_int_equal(out.k, 192);
    assert_int_equal(out.full_k, 768);
    assert_int_equal(off, 384);
    g.group_size = 128;
    g.act_order = 1;
    sh = (mpl_shard){MPL_TP_ROW, 3, 8};
    assert_int_equal(mpl_shard_config(&g, MPL_LAYOUT_CT, &sh, &out, &off), MPL_OK);
    assert_int_equal(out.k, 96);
    assert_int_equal(out.group_size, 128);
    assert_int_equal(off, 288);
    assert_int_equal(mpl_config_validate(&out), MPL_OK);
    /* ...but such a config is a shard's, not a checkpoint's: encode/decode refuse it by name. */
    mpl_checkpoint_tensors ck;
    uint8_t codes[96 * 32] = {0};
    float scales[32 * 6] = {0};
    int32_t gidx[96] = {0};
    assert_int_equal(mpl_checkpoint_encode(&out, MPL_LAYOUT_CT, codes, scales, MPL_DTYPE_F16, NULL, gidx, &ck),
                     MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "mpl_layer_create_shard"));
    sh = (mpl_shard){MPL_TP_COLUMN, 1, 4};
    assert_int_equal(mpl_shard_config(&g, MPL_LAYOUT_CT, &sh, &out, &off), MPL_OK);
    assert_int_equal(out.n, 8);
    assert_int_equal(out.full_n, 32);
    assert_int_equal(off, 8);

    /* Mode names. */
    mpl_tp_mode md;
    assert_int_equal(mpl_tp_mode_parse("row", &md), MPL_OK);
    assert_int_equal(md, MPL_TP_ROW);
    assert_int_equal(mpl_tp_mode_parse("column", &md), MPL_OK);
    assert_int_equal(md, MPL_TP_COLUMN);
    assert_int_equal(mpl_tp_mode_parse("rows", &md), MPL_ERR_INVALID_ARGUMENT);
    assert_string_equal(mpl_tp_mode_name(MPL_TP_COLUMN), "column");
}

/* The stand-in refuses layers that are not one layer's shards in the mode asked. */
static void stand_in_refusals(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 256, 64);
    c.group_size = 64;
    tu_rng rng;
    tu_rng_init(&rng, g_seed ^ 7);
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &rng), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    shard_case sc = {.mode = MPL_TP_COLUMN, .ranks = 2};
    mpl_layer *layers[8] = {0};
    assert_int_equal(create_ranks(&c, &ck, &sc, layers, 0), MPL_OK);
    uint16_t x[256], y[64];
    memset(x, 0, sizeof x);
    assert_int_equal(mpl_tp_apply_host(layers, 2, MPL_TP_ROW, 1, x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "is not a row shard"));
    assert_int_equal(mpl_tp_apply_host(layers, 1, MPL_TP_COLUMN, 1, x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_tp_apply_host(layers, 2, MPL_TP_COLUMN, -1, x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_tp_apply_host(layers, 2, MPL_TP_COLUMN, 1, NULL, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_tp_apply_host(layers, 2, MPL_TP_COLUMN, 0, NULL, NULL, NULL), MPL_OK);
    assert_int_equal(mpl_tp_apply_host(NULL, 2, MPL_TP_COLUMN, 1, x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    mpl_layer *mixed[2] = {layers[0], NULL};
    assert_int_equal(mpl_tp_apply_host(mixed, 2, MPL_TP_COLUMN, 1, x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    for (int r = 0; r < 2; r++) mpl_layer_destroy(layers[r]);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals),   cmocka_unit_test(stand_in_refusals), cmocka_unit_test(act_order_uniform_slice),
        cmocka_unit_test(w4a8),       cmocka_unit_test(irregular_and_chosen), cmocka_unit_test(matrix),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
