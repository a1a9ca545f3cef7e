/*
 * test_checkpoint.c -- checkpoint folders written by the real tools
 * (tests/fixtures/, made by make_fixtures.py: compressed-tensors, GPTQModel,
 * AutoAWQ) opened through the public API; every layer applied to the
 * fixture's input and compared with the output computed from the weights as
 * the writing tool itself dequantizes them. The 2-, 3- and 8-bit fixtures
 * (width_fixtures, issue 18) are also decoded code for code against the tool's
 * own unpacking, and run on the kernel the chooser picks; dense_stream_examples
 * checks the worked examples of docs/layouts/checkpoints.md word for word.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "decode/decode.h"
#include "model/safetensors.h"
#include "mplinear.h"

typedef struct fixture {
    const char *dir;
    const char *method;
    int layers;
    mpl_layout layout;
    mpl_wtype wtype;
    int64_t group_size;
    int zero_points, act_order;
    mpl_mode mode;
    mpl_act act;     /* expected default activation type (0: not checked) */
    int with_bias;   /* layers that have a bias */
    int codes;       /* the expected file holds L.q (and L.zq): the tool's unpacked codes */
} fixture;

/* What each generator wrote (see make_fixtures.py). ct-w4a16-mixed holds two schemes: checked separately. */
static const fixture fixtures[] = {
    {"ct-w4a16-mixed", "compressed-tensors", 6, MPL_LAYOUT_CT, 0, 0, 0, 0, MPL_MODE_W4A16, MPL_ACT_BF16, 0, 0},
    {"ct-w4a16-asym", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT4, 32, 1, 0, MPL_MODE_W4A16, MPL_ACT_F16, 3, 0},
    {"ct-w4a8-int", "compressed-tensors", 7, MPL_LAYOUT_CT_INT, MPL_WTYPE_INT4, -1, 0, 0, MPL_MODE_W4A8, MPL_ACT_BF16, 0, 0},
    {"gptq-g32-actorder", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT4B8, 32, 0, 1, MPL_MODE_W4A16, 0, 0, 0},
    {"gptq-v2-asym", "gptq", 7, MPL_LAYOUT_GPTQ_V2, MPL_WTYPE_UINT4, 32, 1, 0, MPL_MODE_W4A16, 0, 0, 0},
    {"awq-gemm-g32", "awq", 7, MPL_LAYOUT_AWQ, MPL_WTYPE_UINT4, 32, 1, 0, MPL_MODE_W4A16, MPL_ACT_F16, 0, 0},
    {"ct-w4a16-gptq", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT4B8, 32, 0, 0, MPL_MODE_W4A16, MPL_ACT_BF16, 0, 0},
};

/* Issue 18's widths: 2-, 3- and 8-bit checkpoints, each also checked code for code against the tool's unpack. */
static const fixture width_fixtures[] = {
    {"ct-w8a16-g32", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT8B128, 32, 0, 0, MPL_MODE_W4A16, MPL_ACT_BF16, 0, 1},
    {"ct-w3a16-g32", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT3B4, 32, 0, 0, MPL_MODE_W4A16, MPL_ACT_BF16, 0, 1},
    {"ct-w3a16-asym", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT3, 32, 1, 0, MPL_MODE_W4A16, MPL_ACT_F16, 3, 1},
    {"ct-w2a16-g64", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT2B2, 64, 0, 0, MPL_MODE_W4A16, MPL_ACT_BF16, 0, 1},
    {"gptq-w3-asym", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT3, 32, 1, 0, MPL_MODE_W4A16, 0, 0, 1},
    {"gptq-w3-actorder", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT3B4, 32, 0, 1, MPL_MODE_W4A16, 0, 0, 1},
    {"gptq-w2-asym", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT2, 32, 1, 0, MPL_MODE_W4A16, 0, 0, 1},
    {"gptq-w8-actorder", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT8B128, 32, 0, 1, MPL_MODE_W4A16, 0, 0, 1},
    /* zero points of 0: GPTQModel's word-wise v1 zeros (2, 8 bits: borrows) and its field-wise 3-bit ones */
    {"gptq-w2-zero0", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT2, 32, 1, 0, MPL_MODE_W4A16, 0, 0, 1},
    {"gptq-w3-zero0", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT3, 32, 1, 0, MPL_MODE_W4A16, 0, 0, 1},
    {"gptq-w8-zero0", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT8, 32, 1, 0, MPL_MODE_W4A16, 0, 0, 1},
};

static const char *fixture_root(void) {
    const char *r = getenv("MPL_TEST_FIXTURES");
    return r ? r : "tests/fixtures";
}

static void path_of(char *buf, size_t cap, const char *name, const char *suffix) {
    snprintf(buf, cap, "%s/%s%s", fixture_root(), name, suffix);
}

static const float *f32_tensor(const mpl_st_file *f, const char *layer, const char *what, int64_t d0, int64_t d1) {
    char name[512];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    const mpl_st_tensor *t = mpl_st_find(f, name);
    if (!t) fail_msg("expected file has no tensor %s", name);
    assert_string_equal(t->dtype_name, "F32");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], d0);
    assert_int_equal(t->shape[1], d1);
    assert_int_equal((uintptr_t)t->data % 4, 0);
    return t->data;
}

/* A checkpoint tensor of layer `layer` in its shard, as the decoder takes it (NULL data when absent). */
static mpl_tensor shard_tensor(const mpl_st_file *f, const char *layer, const char *what) {
    char name[512];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    mpl_tensor t;
    memset(&t, 0, sizeof t);
    const mpl_st_tensor *s = mpl_st_find(f, name);
    if (!s) return t;
    assert_true(s->ndim >= 1 && s->ndim <= MPL_MAX_DIMS);
    t.data = s->data;
    t.dtype = s->dtype;
    t.ndim = s->ndim;
    for (int d = 0; d < s->ndim; d++) t.shape[d] = s->shape[d];
    return t;
}

/* The tool's unpacked codes L.what ([rows, cols] uint8) from the expected file. */
static const uint8_t *u8_tensor(const mpl_st_file *f, const char *layer, const char *what, int64_t d0, int64_t d1) {
    char name[512];
    snprintf(name, sizeof name, "%s.%s", layer, what);
    const mpl_st_tensor *t = mpl_st_find(f, name);
    if (!t) fail_msg("expected file has no tensor %s", name);
    assert_string_equal(t->dtype_name, "U8");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], d0);
    assert_int_equal(t->shape[1], d1);
    return t->data;
}

/*
 * Decodes layer `info`'s tensors, read from its shard, with mplinear's decoder and compares every
 * stored code (and zero point) with the writing tool's own unpacking of the same words (L.q, L.zq):
 * bit for bit, so a packing that the outputs' tolerance could hide still fails here.
 */
static void check_codes(const fixture *fx, const mpl_model_layer_info *info, const mpl_st_file *ef) {
    const mpl_config *c = &info->config;
    mpl_st_file *sf = NULL;
    if (mpl_st_open(info->file, &sf) != MPL_OK) fail_msg("open %s: %s", info->file, mpl_last_error());
    int ct = info->layout == MPL_LAYOUT_CT;
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    ck.layout = info->layout;
    ck.weight = shard_tensor(sf, info->name, ct ? "weight_packed" : "qweight");
    ck.scales = shard_tensor(sf, info->name, ct ? "weight_scale" : "scales");
    if (c->zero_points) ck.zeros = shard_tensor(sf, info->name, ct ? "weight_zero_point" : "qzeros");
    if (c->act_order) ck.g_idx = shard_tensor(sf, info->name, ct ? "weight_g_idx" : "g_idx");
    mpl_canonical w;
    uint32_t *zw = NULL; /* GPTQModel's v1 zeros: words + info->zeros_word_add, read as gptq-v2 */
    if (info->zeros_word_add && ck.zeros.data) {
        size_t words = (size_t)(ck.zeros.shape[0] * ck.zeros.shape[1]);
        zw = malloc(words * 4);
        assert_non_null(zw);
        memcpy(zw, ck.zeros.data, words * 4);
        for (size_t j = 0; j < words; j++) zw[j] += info->zeros_word_add;
        ck.zeros.data = zw;
        ck.layout = MPL_LAYOUT_GPTQ_V2;
    }
    if (mpl_decode_checkpoint(c, &ck, &w) != MPL_OK)
        fail_msg("%s layer %s: decode: %s", fx->dir, info->name, mpl_last_error());
    free(zw);
    const int64_t K = c->k, N = c->n, G = w.groups;
    const uint8_t *q = u8_tensor(ef, info->name, "q", N, K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            if (w.codes[n * K + k] != q[n * K + k])
                fail_msg("%s layer %s: code (n %lld, k %lld) = %d, the tool unpacks %d", fx->dir, info->name,
                         (long long)n, (long long)k, w.codes[n * K + k], q[n * K + k]);
    if (c->zero_points) {
        const uint8_t *zq = u8_tensor(ef, info->name, "zq", N, G);
        for (int64_t n = 0; n < N; n++)
            for (int64_t g = 0; g < G; g++)
                if (w.zeros[n * G + g] != zq[n * G + g])
                    fail_msg("%s layer %s: zero (n %lld, group %lld) = %d, the tool unpacks %d", fx->dir, info->name,
                             (long long)n, (long long)g, w.zeros[n * G + g], zq[n * G + g]);
        /* the zero0 fixtures must hold what they are for: zero points of 0 in q_proj and down_proj */
        size_t nl = strlen(info->name);
        if (strstr(fx->dir, "zero0") &&
            ((nl >= 6 && !strcmp(info->name + nl - 6, "q_proj")) || (nl >= 9 && !strcmp(info->name + nl - 9, "down_proj")))) {
            int64_t z0 = 0;
            for (int64_t i = 0; i < N * G; i++) z0 += w.zeros[i] == 0;
            if (z0 == 0) fail_msg("%s layer %s: no zero point of 0", fx->dir, info->name);
        }
    }
    /* Codes span the type's range: a fixture of all-equal codes would prove nothing. */
    int lo = 255, hi = 0;
    for (int64_t i = 0; i < N * K; i++) {
        if (w.codes[i] < lo) lo = w.codes[i];
        if (w.codes[i] > hi) hi = w.codes[i];
    }
    assert_int_equal(lo, 0);
    assert_int_equal(hi, (1 << mpl_wtype_width(c->wtype)) - 1);
    mpl_canonical_free(&w);
    mpl_st_close(sf);
}

/*
 * Runs every layer of fixture fx with the reference kernel in f32 and
 * compares with the tool's output. Error bound per element, with
 * s = sum_k |x_k| |w_k| (from the expected file):
 *   (u_tool + (K + 4) * 2^-24) * s
 * u_tool: unit roundoff of the dtype the tool's dequantizer returns W in (0 when
 * it is exact); (K + 4) * 2^-24: fp32 accumulation over K terms, the group
 * scale products and the single output rounding (the oracle is float64).
 */
static void check_fixture(const fixture *fx) {
    char dir[512], exp[512];
    path_of(dir, sizeof dir, fx->dir, "");
    path_of(exp, sizeof exp, fx->dir, ".expected.safetensors");
    mpl_model *m = NULL;
    mpl_status st = mpl_model_open(dir, &m);
    if (st != MPL_OK) fail_msg("open %s: %s", dir, mpl_last_error());
    mpl_st_file *ef = NULL;
    if (mpl_st_open(exp, &ef) != MPL_OK) fail_msg("open %s: %s", exp, mpl_last_error());
    const mpl_st_tensor *tr = mpl_st_find(ef, "tool_roundoff");
    assert_non_null(tr);
    float u_tool;
    memcpy(&u_tool, tr->data, 4);

    assert_string_equal(mpl_model_quant_method(m), fx->method);
    assert_int_equal(mpl_model_layer_count(m), fx->layers);
    if (fx->act) assert_int_equal(mpl_model_act(m), fx->act);
    int biased = 0;
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = "ref";
    o.threads = 1;
    for (int i = 0; i < mpl_model_layer_count(m); i++) {
        mpl_model_layer_info info;
        assert_int_equal(mpl_model_layer_get(m, i, &info), MPL_OK);
        const mpl_config *c = &info.config;
        assert_int_equal(info.layout, fx->layout);
        assert_int_equal(c->mode, fx->mode);
        assert_int_equal(c->act, mpl_model_act(m));
        if (fx->wtype) {
            assert_int_equal(c->wtype, fx->wtype);
            assert_int_equal(c->group_size, fx->group_size);
            assert_int_equal(c->zero_points, fx->zero_points);
            assert_int_equal(c->act_order, fx->act_order);
        }
        int idx = -1;
        assert_int_equal(mpl_model_find_layer(m, info.name, &idx), MPL_OK);
        assert_int_equal(idx, i);
        biased += info.has_bias;

        if (fx->codes) check_codes(fx, &info, ef);
        int64_t K = c->k, N = c->n, M = 4;
        const float *x = f32_tensor(ef, info.name, "x", M, K);
        const float *ye = f32_tensor(ef, info.name, "y", M, N);
        const float *s = f32_tensor(ef, info.name, "s", M, N);
        mpl_layer *l = NULL;
        st = mpl_model_layer_create(m, i, &o, MPL_ACT_F32, &l);
        if (st != MPL_OK) fail_msg("%s layer %s: %s", fx->dir, info.name, mpl_last_error());
        assert_int_equal(mpl_layer_config(l)->act, MPL_ACT_F32);
        float *bias = NULL;
        if (info.has_bias) {
            bias = malloc((size_t)N * sizeof *bias);
            assert_int_equal(mpl_model_layer_bias(m, i, MPL_ACT_F32, bias), MPL_OK);
        } else {
            float dummy;
            assert_int_equal(mpl_model_layer_bias(m, i, MPL_ACT_F32, &dummy), MPL_ERR_INVALID_ARGUMENT);
        }
        float *y = calloc((size_t)(M * N), sizeof *y);
        assert_int_equal(mpl_layer_apply(l, M, x, bias, y), MPL_OK);
        double worst = 0;
        for (int64_t e = 0; e < M * N; e++) {
            double tol = ((double)u_tool + (double)(K + 4) * ldexp(1.0, -24)) * s[e] + 1e-30;
            double err = fabs((double)y[e] - (double)ye[e]);
            if (err / tol > worst) worst = err / tol;
            if (err > tol)
                fail_msg("%s layer %s: y[%lld, %lld] = %.9g, tool says %.9g (|err| %.3g > bound %.3g)", fx->dir,
                         info.name, (long long)(e / N), (long long)(e % N), y[e], ye[e], err, tol);
        }
        /* Width fixtures: the kernel the chooser picks here (whichever serves the width) in f32, against the
         * tool's output with the contract's bound: fp32 per group, groups scaled and summed, so up to
         * K + G + 4 roundings (twice the reference's allowance, for another summation order). */
        const char *chosen_name = "ref";
        if (fx->codes) {
            mpl_layer *lc = NULL;
            mpl_options oc;
            mpl_options_init(&oc);
            oc.threads = 1;
            if (mpl_model_layer_create(m, i, &oc, MPL_ACT_F32, &lc) != MPL_OK)
                fail_msg("%s layer %s (chosen kernel): %s", fx->dir, info.name, mpl_last_error());
            chosen_name = mpl_layer_kernel(lc);
            int64_t G = c->group_size == -1 ? 1 : K / c->group_size;
            memset(y, 0, (size_t)(M * N) * sizeof *y);
            assert_int_equal(mpl_layer_apply(lc, M, x, bias, y), MPL_OK);
            for (int64_t e = 0; e < M * N; e++) {
                double tol = ((double)u_tool + 2.0 * (double)(K + G + 4) * ldexp(1.0, -24)) * s[e] + 1e-30;
                double err = fabs((double)y[e] - (double)ye[e]);
                if (err > tol)
                    fail_msg("%s layer %s, kernel %s: y[%lld, %lld] = %.9g, tool says %.9g (|err| %.3g > bound %.3g)",
                             fx->dir, info.name, chosen_name, (long long)(e / N), (long long)(e % N), y[e], ye[e], err,
                             tol);
            }
            mpl_layer_destroy(lc);
        }
        /* A layer created with the checkpoint's own activation type. */
        mpl_layer *l2 = NULL;
        mpl_options o2;
        mpl_options_init(&o2);
        if (mpl_model_layer_create(m, i, &o2, (mpl_act)0, &l2) != MPL_OK)
            fail_msg("%s layer %s (default act): %s", fx->dir, info.name, mpl_last_error());
        assert_int_equal(mpl_layer_config(l2)->act, mpl_model_act(m));
        mpl_layer_destroy(l2);
        mpl_layer_destroy(l);
        free(y);
        free(bias);
        print_message("  %-18s %-40s k=%-4lld n=%-4lld %-9s worst err/bound %.3f%s%s\n", fx->dir, info.name,
                      (long long)K, (long long)N, mpl_wtype_name(c->wtype), worst, fx->codes ? "; also on " : "",
                      fx->codes ? chosen_name : "");
    }
    assert_int_equal(biased, fx->with_bias);
    mpl_st_close(ef);
    mpl_model_close(m);
}

static void ct_mixed(void **state) {
    (void)state;
    check_fixture(&fixtures[0]);
    /* Two config groups: attention by regex (4-bit group 32), gate/up (8-bit channel); down_proj ignored. */
    char dir[512];
    path_of(dir, sizeof dir, "ct-w4a16-mixed", "");
    mpl_model *m;
    assert_int_equal(mpl_model_open(dir, &m), MPL_OK);
    int i;
    mpl_model_layer_info info;
    assert_int_equal(mpl_model_find_layer(m, "model.layers.0.self_attn.q_proj", &i), MPL_OK);
    assert_int_equal(mpl_model_layer_get(m, i, &info), MPL_OK);
    assert_int_equal(info.config.wtype, MPL_WTYPE_UINT4B8);
    assert_int_equal(info.config.group_size, 32);
    assert_int_equal(mpl_model_find_layer(m, "model.layers.0.mlp.up_proj", &i), MPL_OK);
    assert_int_equal(mpl_model_layer_get(m, i, &info), MPL_OK);
    assert_int_equal(info.config.wtype, MPL_WTYPE_UINT8B128);
    assert_int_equal(info.config.group_size, -1);
    assert_non_null(strstr(info.file, "model-0000"));
    assert_int_equal(mpl_model_find_layer(m, "model.layers.0.mlp.down_proj", &i), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "model.layers.0.mlp.down_proj"));
    assert_int_equal(mpl_model_find_layer(m, "lm_head", &i), MPL_ERR_INVALID_ARGUMENT);
    /* Forward order (LlamaForCausalLM): attention's q_proj first, the MLP after it (issue 17). */
    assert_int_equal(mpl_model_layer_get(m, 0, &info), MPL_OK);
    assert_string_equal(info.name, "model.layers.0.self_attn.q_proj");
    assert_non_null(strstr(mpl_model_layer_order(m), "llama"));
    mpl_model_close(m);
}

static void ct_asym(void **state) {
    (void)state;
    check_fixture(&fixtures[1]);
}
static void ct_w4a8(void **state) {
    (void)state;
    check_fixture(&fixtures[2]);
}
static void gptq_actorder(void **state) {
    (void)state;
    check_fixture(&fixtures[3]);
}
static void gptq_v2_asym(void **state) {
    (void)state;
    check_fixture(&fixtures[4]);
}
static void awq_gemm(void **state) {
    (void)state;
    check_fixture(&fixtures[5]);
}

static void ct_gptq(void **state) {
    (void)state;
    check_fixture(&fixtures[6]);
}

/* Encodes codes (cfg's layer, one group) in layout lay and checks the weight (or zero-point) words. */
static void expect_words(const mpl_config *c, mpl_layout lay, const uint8_t *codes, const uint8_t *zeros,
                         const uint32_t *want, int nwant, int of_zeros) {
    float sc[64];
    for (int i = 0; i < 64; i++) sc[i] = 1.0f;
    mpl_checkpoint_tensors ck;
    if (mpl_checkpoint_encode(c, lay, codes, sc, MPL_DTYPE_F32, zeros, NULL, &ck) != MPL_OK)
        fail_msg("encode: %s", mpl_last_error());
    const mpl_tensor *t = of_zeros ? &ck.zeros : &ck.weight;
    int64_t count = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
    assert_int_equal(count, nwant);
    for (int i = 0; i < nwant; i++)
        if (((const uint32_t *)t->data)[i] != want[i])
            fail_msg("%s %s word %d = 0x%08X, docs/layouts/checkpoints.md says 0x%08X", mpl_layout_name(lay),
                     mpl_wtype_name(c->wtype), i, ((const uint32_t *)t->data)[i], want[i]);
    mpl_canonical w;
    assert_int_equal(mpl_decode_checkpoint(c, &ck, &w), MPL_OK);
    for (int64_t i = 0; i < c->n * c->k; i++) assert_int_equal(w.codes[i], codes[i]);
    if (zeros)
        for (int64_t i = 0; i < c->n; i++) assert_int_equal(w.zeros[i], zeros[i]);
    mpl_canonical_free(&w);
    mpl_checkpoint_tensors_free(&ck);
}

/* The worked examples of docs/layouts/checkpoints.md ("The dense bit stream"), word for word. */
static void dense_stream_examples(void **state) {
    (void)state;
    uint8_t codes[64], zeros[13];
    mpl_config c;
    /* 3-bit, K = 32: codes k mod 8; the same three words in ct (a row) and gptq (column 0). */
    static const uint32_t w3[] = {0x88FAC688u, 0xC688FAC6u, 0xFAC688FAu};
    for (int k = 0; k < 32; k++) codes[k] = (uint8_t)(k % 8);
    mpl_config_init(&c, 32, 1);
    c.wtype = MPL_WTYPE_UINT3B4;
    expect_words(&c, MPL_LAYOUT_CT, codes, NULL, w3, 3, 0);
    expect_words(&c, MPL_LAYOUT_GPTQ, codes, NULL, w3, 3, 0);
    /* 3-bit zeros along N = 13: 3n mod 8 in 2 words (bits 39..63 padding, written 0). */
    static const uint32_t z3[] = {0x98ABC398u, 0x00000043u};
    mpl_config_init(&c, 32, 13);
    c.wtype = MPL_WTYPE_UINT3;
    c.zero_points = 1;
    uint8_t c13[13 * 32];
    for (int i = 0; i < 13 * 32; i++) c13[i] = (uint8_t)(i % 8);
    for (int n = 0; n < 13; n++) zeros[n] = (uint8_t)(3 * n % 8);
    expect_words(&c, MPL_LAYOUT_CT, c13, zeros, z3, 2, 1);
    expect_words(&c, MPL_LAYOUT_GPTQ_V2, c13, zeros, z3, 2, 1); /* v2: the zero itself, along N as well */
    /* 2-bit, K = 16: codes k mod 4. */
    static const uint32_t w2[] = {0xE4E4E4E4u};
    for (int k = 0; k < 16; k++) codes[k] = (uint8_t)(k % 4);
    mpl_config_init(&c, 16, 1);
    c.wtype = MPL_WTYPE_UINT2B2;
    expect_words(&c, MPL_LAYOUT_CT, codes, NULL, w2, 1, 0);
}

/* state: one row of width_fixtures. */
static void width_fixture(void **state) {
    check_fixture((const fixture *)*state);
}

static void api_errors(void **state) {
    (void)state;
    mpl_model *m = (mpl_model *)1;
    assert_int_equal(mpl_model_open(NULL, &m), MPL_ERR_INVALID_ARGUMENT);
    assert_null(m);
    assert_int_equal(mpl_model_open("/nonexistent/mplinear-dir", &m), MPL_ERR_IO);
    assert_non_null(strstr(mpl_last_error(), "/nonexistent/mplinear-dir/config.json"));
    mpl_model_close(NULL);
    assert_int_equal(mpl_model_layer_count(NULL), 0);
    char dir[512];
    path_of(dir, sizeof dir, "awq-gemm-g32", "");
    assert_int_equal(mpl_model_open(dir, &m), MPL_OK);
    mpl_model_layer_info info;
    assert_int_equal(mpl_model_layer_get(m, -1, &info), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_model_layer_get(m, 7, &info), MPL_ERR_INVALID_ARGUMENT);
    mpl_layer *l = NULL;
    assert_int_equal(mpl_model_layer_create(m, 99, NULL, 0, &l), MPL_ERR_INVALID_ARGUMENT);
    assert_null(l);
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = "no_such_kernel";
    assert_int_not_equal(mpl_model_layer_create(m, 0, &o, 0, &l), MPL_OK);
    assert_non_null(strstr(mpl_last_error(), "layer '"));
    /* A layer outlives its model. */
    assert_int_equal(mpl_model_layer_get(m, 0, &info), MPL_OK);
    int64_t K = info.config.k, N = info.config.n;
    assert_int_equal(mpl_model_layer_create(m, 0, NULL, MPL_ACT_F32, &l), MPL_OK);
    mpl_model_close(m);
    float *x = malloc((size_t)(2 * K) * sizeof *x), *y = malloc((size_t)(2 * N) * sizeof *y);
    for (int64_t i = 0; i < 2 * K; i++) x[i] = (float)(i % 7) - 3.0f;
    assert_int_equal(mpl_layer_apply(l, 2, x, NULL, y), MPL_OK);
    mpl_layer_destroy(l);
    free(x);
    free(y);
}


/* ---- the CLI (tools/cmd_checkpoint.c) driven as a user would ---- */

static int cli_path(char *buf, size_t cap) {
    const char *b = getenv("MPL_BUILD_DIR");
    if (!b) return 0;
    snprintf(buf, cap, "%s/mplinear", b);
    FILE *f = fopen(buf, "rb");
    if (!f) return 0;
    fclose(f);
    return 1;
}

/* Runs a shell command; returns its exit status and (up to cap bytes of) stdout. */
static int run(const char *cmdline, char *out, size_t cap) {
    FILE *p = popen(cmdline, "r");
    assert_non_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A version 1.0 .npy file of float32 [rows, cols]. */
static void write_npy_f32(const char *path, const float *v, int64_t rows, int64_t cols) {
    char hdr[128];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '<f4', 'fortran_order': False, 'shape': (%lld, %lld), }",
                     (long long)rows, (long long)cols);
    int total = 10 + n + 1;
    int pad = (64 - total % 64) % 64;
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint16_t hl = (uint16_t)(n + pad + 1);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fwrite(&hl, 2, 1, f);
    fwrite(hdr, 1, (size_t)n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(v, sizeof *v, (size_t)(rows * cols), f);
    fclose(f);
}

/* Reads the data of a version 1.0 float32 .npy file written by the CLI. */
static float *read_npy_f32(const char *path, size_t count) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    unsigned char pre[10];
    assert_int_equal(fread(pre, 1, 10, f), 10);
    assert_int_equal(pre[6], 1);
    size_t hl = (size_t)pre[8] | ((size_t)pre[9] << 8);
    char *h = malloc(hl + 1);
    assert_int_equal(fread(h, 1, hl, f), hl);
    h[hl] = '\0';
    assert_non_null(strstr(h, "'<f4'"));
    free(h);
    float *v = malloc(count * sizeof *v);
    assert_int_equal(fread(v, sizeof *v, count, f), count);
    fclose(f);
    return v;
}

static void cli_commands(void **state) {
    (void)state;
    char bin[600], cmd[4096], out[65536], dir[512], exp[512];
    if (!cli_path(bin, sizeof bin)) skip(); /* the CLI is not built in this configuration */
    path_of(dir, sizeof dir, "ct-w4a16-asym", "");
    path_of(exp, sizeof exp, "ct-w4a16-asym", ".expected.safetensors");
    snprintf(cmd, sizeof cmd, "'%s' inspect '%s' --json", bin, dir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    int lines = 0;
    for (char *p = out; (p = strchr(p, '\n')); p++) lines++;
    assert_int_equal(lines, 7);
    assert_non_null(strstr(out, "{\"name\": \"model.layers.0.mlp.down_proj\", \"k\": 128, \"n\": 64, \"wtype\": \"uint4\", "
                                "\"group_size\": 32, \"zero_points\": true, \"act_order\": false"));
    snprintf(cmd, sizeof cmd, "'%s' inspect '%s'", bin, dir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "compressed-tensors, activations f16, 7 quantized linear layers"));

    /* apply: f32 activations against the tool's output; the bias is applied. */
    mpl_st_file *ef;
    assert_int_equal(mpl_st_open(exp, &ef), MPL_OK);
    const char *layer = "model.layers.0.mlp.down_proj";
    const float *x = f32_tensor(ef, layer, "x", 4, 128), *ye = f32_tensor(ef, layer, "y", 4, 64);
    const float *s = f32_tensor(ef, layer, "s", 4, 64);
    char xp[512], yp[512];
    snprintf(xp, sizeof xp, "%s/mpl-ckpt-x-%d.npy", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    snprintf(yp, sizeof yp, "%s/mpl-ckpt-y-%d.npy", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    write_npy_f32(xp, x, 4, 128);
    snprintf(cmd, sizeof cmd, "'%s' apply --checkpoint '%s' --layer %s --input '%s' --output '%s' --act f32 2>&1", bin,
             dir, layer, xp, yp);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "kernel: "));
    float *y = read_npy_f32(yp, 4 * 64);
    for (int e = 0; e < 4 * 64; e++) /* bound as in check_fixture, K = 128, exact oracle */
        assert_true(fabs((double)y[e] - ye[e]) <= (double)(128 + 4) * ldexp(1.0, -24) * s[e] + 1e-30);
    free(y);
    /* Default activation type (f16 here): x and y rounded to f16, so a looser bound. */
    snprintf(cmd, sizeof cmd, "'%s' apply --checkpoint '%s' --layer %s --input '%s' --output '%s' 2>&1", bin, dir,
             layer, xp, yp);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "act f16"));
    y = read_npy_f32(yp, 4 * 64);
    /* x rounded to f16 (2^-11 relative per term), the output rounded once to f16 (2^-11 |y|). */
    for (int e = 0; e < 4 * 64; e++)
        assert_true(fabs((double)y[e] - ye[e]) <= ldexp(1.0, -10) * (s[e] + fabs(ye[e])) + 1e-6);
    free(y);
    mpl_st_close(ef);
    /* Errors: unknown layer (3), missing folder (6), bad input shape (3), help (0). */
    snprintf(cmd, sizeof cmd, "'%s' apply --checkpoint '%s' --layer nope --input '%s' --output '%s' 2>&1", bin, dir, xp,
             yp);
    assert_int_equal(run(cmd, out, sizeof out), 3);
    assert_non_null(strstr(out, "no quantized linear layer named 'nope'"));
    snprintf(cmd, sizeof cmd, "'%s' inspect /nonexistent-mpl 2>&1", bin);
    assert_int_equal(run(cmd, out, sizeof out), 6);
    snprintf(cmd, sizeof cmd, "'%s' apply --checkpoint '%s' --layer model.layers.0.mlp.up_proj --input '%s' --output '%s' 2>&1",
             bin, dir, xp, yp);
    assert_int_equal(run(cmd, out, sizeof out), 3);
    assert_non_null(strstr(out, "expected [M, 64]"));
    snprintf(cmd, sizeof cmd, "'%s' inspect --help", bin);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    /* bench: one row per layer and a total. */
    snprintf(cmd, sizeof cmd, "'%s' bench --checkpoint '%s' --reps 3 --json", bin, dir);
    assert_int_equal(run(cmd, out, sizeof out), 0);
    assert_non_null(strstr(out, "\"total\": true, \"layers\": 7"));
    unlink(xp);
    unlink(yp);
}

int main(void) {
    static const struct CMUnitTest fixed[] = {
        cmocka_unit_test(ct_mixed),      cmocka_unit_test(ct_asym),      cmocka_unit_test(ct_w4a8),
        cmocka_unit_test(gptq_actorder), cmocka_unit_test(gptq_v2_asym), cmocka_unit_test(awq_gemm),      cmocka_unit_test(ct_gptq),
        cmocka_unit_test(api_errors),    cmocka_unit_test(cli_commands),  cmocka_unit_test(dense_stream_examples),
    };
    enum { NFIXED = sizeof fixed / sizeof fixed[0], NWIDTH = sizeof width_fixtures / sizeof width_fixtures[0] };
    /* Then one test per row of width_fixtures, named by its fixture folder. */
    struct CMUnitTest tests[NFIXED + NWIDTH];
    memcpy(tests, fixed, sizeof fixed);
    for (int i = 0; i < NWIDTH; i++)
        tests[NFIXED + i] = (struct CMUnitTest){width_fixtures[i].dir, width_fixture, NULL, NULL, (void *)&width_fixtures[i]};
    return _cmocka_run_group_tests("test_checkpoint", tests, NFIXED + NWIDTH, NULL, NULL);
}
