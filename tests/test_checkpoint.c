/*
 * test_checkpoint.c -- checkpoint folders written by the real tools
 * (tests/fixtures/, made by make_fixtures.py: compressed-tensors, GPTQModel,
 * AutoAWQ) opened through the public API; every layer applied to the
 * fixture's input and compared with the output computed from the weights as
 * the writing tool itself dequantizes them.
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

#include "formats/safetensors.h"
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
} fixture;

/* What each generator wrote (see make_fixtures.py). ct-w4a16-mixed holds two schemes: checked separately. */
static const fixture fixtures[] = {
    {"ct-w4a16-mixed", "compressed-tensors", 6, MPL_LAYOUT_CT, 0, 0, 0, 0, MPL_MODE_W4A16, MPL_ACT_BF16, 0},
    {"ct-w4a16-asym", "compressed-tensors", 7, MPL_LAYOUT_CT, MPL_WTYPE_UINT4, 32, 1, 0, MPL_MODE_W4A16, MPL_ACT_F16, 3},
    {"ct-w4a8-int", "compressed-tensors", 7, MPL_LAYOUT_CT_INT, MPL_WTYPE_INT4, -1, 0, 0, MPL_MODE_W4A8, MPL_ACT_BF16, 0},
    {"gptq-g32-actorder", "gptq", 7, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT4B8, 32, 0, 1, MPL_MODE_W4A16, 0, 0},
    {"gptq-v2-asym", "gptq", 7, MPL_LAYOUT_GPTQ_V2, MPL_WTYPE_UINT4, 32, 1, 0, MPL_MODE_W4A16, 0, 0},
    {"awq-gemm-g32", "awq", 7, MPL_LAYOUT_AWQ, MPL_WTYPE_UINT4, 32, 1, 0, MPL_MODE_W4A16, MPL_ACT_F16, 0},
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
        print_message("  %-18s %-40s k=%-4lld n=%-4lld %-9s worst err/bound %.3f\n", fx->dir, info.name,
                      (long long)K, (long long)N, mpl_wtype_name(c->wtype), worst);
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
    /* Natural order: mlp before self_attn, and layer names sorted. */
    assert_int_equal(mpl_model_layer_get(m, 0, &info), MPL_OK);
    assert_string_equal(info.name, "model.layers.0.mlp.gate_proj");
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
    assert_int_equal(mpl_model_layer_create(m, 0, NULL, MPL_ACT_F32, &l), MPL_OK);
    mpl_model_close(m);
    float x[64 * 2], y[128 * 2];
    for (int i = 0; i < 128; i++) x[i] = (float)(i % 7) - 3.0f;
    assert_int_equal(mpl_layer_apply(l, 2, x, NULL, y), MPL_OK);
    mpl_layer_destroy(l);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ct_mixed),      cmocka_unit_test(ct_asym),      cmocka_unit_test(ct_w4a8),
        cmocka_unit_test(gptq_actorder), cmocka_unit_test(gptq_v2_asym), cmocka_unit_test(awq_gemm),
        cmocka_unit_test(api_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
