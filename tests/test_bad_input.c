/*
 * test_bad_input.c -- library-level bad input: wrong dtypes, shapes and missing tensors for
 * every layout, g_idx and ct-int values out of range, overflowing sizes, NULL pointers to every
 * public function, bad apply arguments. Each must return a status with a non-empty
 * mpl_last_error(); none may crash (also run under ASan + UBSan).
 *
 * Tensor buffers are allocated at exactly the size their declared shape implies, so a decoder
 * that accepted a wrong shape and read what the config implies would be caught by ASan.
 */
#include <limits.h>
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

#ifndef MPL_TEST_MODEL_BUILT /* tests/CMakeLists.txt: whether the library has the model module */
#define MPL_TEST_MODEL_BUILT 1
#endif

/* A layer's worth of valid tensors to break one at a time. */
typedef struct {
    mpl_config cfg;
    tu_weights w;
    mpl_checkpoint_tensors ck;
} fixture;

static void fixture_make(fixture *f, mpl_layout layout, mpl_wtype t, int act_order) {
    mpl_config_init(&f->cfg, 40, layout == MPL_LAYOUT_AWQ ? 16 : 13);
    f->cfg.wtype = t;
    f->cfg.zero_points = tu_wtype_needs_zeros(t);
    f->cfg.group_size = 20;
    f->cfg.act_order = act_order;
    f->cfg.act = MPL_ACT_F32;
    tu_rng r;
    tu_rng_init(&r, 11);
    assert_int_equal(tu_weights_random(&f->w, &f->cfg, MPL_DTYPE_BF16, TU_GIDX_PERMUTED, TU_DATA_RANDOM, &r), 0);
    assert_int_equal(tu_weights_encode(&f->w, layout, &f->ck), MPL_OK);
}

static void fixture_free(fixture *f) {
    mpl_checkpoint_tensors_free(&f->ck);
    tu_weights_free(&f->w);
}

/* Create must fail with `want` and a message holding s1 and s2 (when given); no layer. */
static void expect_create(const mpl_config *c, const mpl_checkpoint_tensors *ck, mpl_status want, const char *s1,
                          const char *s2) {
    mpl_layer *l = (mpl_layer *)ck; /* must be reset to NULL */
    mpl_status st = mpl_layer_create(c, ck, NULL, &l);
    if (st != want || (s1 && !strstr(mpl_last_error(), s1)) || (s2 && !strstr(mpl_last_error(), s2)) ||
        strlen(mpl_last_error()) == 0)
        fail_msg("layout %s: got %s '%s', want %s with '%s' '%s'", mpl_layout_name(ck->layout),
                 mpl_status_string(st), mpl_last_error(), mpl_status_string(want), s1 ? s1 : "", s2 ? s2 : "");
    assert_null(l);
}

static const char *const weight_name[] = {NULL, "weight_packed", "qweight", "qweight", "qweight", "weight"};
static const char *const scales_name[] = {NULL, "weight_scale", "scales", "scales", "scales", "weight_scale"};
static const char *const zeros_name[] = {NULL, "weight_zero_point", "qzeros", "qzeros", "qzeros", NULL};

/* Every tensor of every layout: wrong dtype, wrong shapes, wrong rank, missing. */
static void tensors_wrong(void **state) {
    (void)state;
    for (int layout = MPL_LAYOUT_CT; layout <= MPL_LAYOUT_CT_INT; layout++) {
        mpl_wtype t = layout == MPL_LAYOUT_CT_INT ? MPL_WTYPE_INT4 : MPL_WTYPE_UINT4;
        int ao = layout != MPL_LAYOUT_AWQ;
        fixture f;
        fixture_make(&f, (mpl_layout)layout, t, ao);
        mpl_layer *l = NULL;
        assert_int_equal(mpl_layer_create(&f.cfg, &f.ck, NULL, &l), MPL_OK);
        mpl_layer_destroy(l);
        mpl_tensor *ts[4] = {&f.ck.weight, &f.ck.scales, &f.ck.zeros, &f.ck.g_idx};
        const char *names[4] = {weight_name[layout], scales_name[layout], zeros_name[layout], "g_idx"};
        for (int i = 0; i < 4; i++) {
            mpl_tensor *tp = ts[i], keep = *tp;
            if (!keep.data) continue; /* ct-int has no zeros; awq no g_idx */
            /* wrong dtypes */
            static const mpl_dtype dts[] = {MPL_DTYPE_NONE, MPL_DTYPE_I32, MPL_DTYPE_I8, MPL_DTYPE_U8,
                                            MPL_DTYPE_F16,  MPL_DTYPE_F32, MPL_DTYPE_I64, (mpl_dtype)77};
            for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
                int ok = dts[d] == keep.dtype || (i == 1 && (dts[d] == MPL_DTYPE_F16 || dts[d] == MPL_DTYPE_F32)) ||
                         (i == 3 && dts[d] == MPL_DTYPE_I64);
                if (ok) continue; /* other float scales / int64 g_idx are legal (would change the data size) */
                tp->dtype = dts[d];
                expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "dtype");
            }
            *tp = keep;
            /* wrong shapes: each dimension off by one either way, swapped, wrong rank */
            for (int dim = 0; dim < keep.ndim; dim++)
                for (int delta = -1; delta <= 1; delta += 2) {
                    *tp = keep;
                    tp->shape[dim] += delta;
                    expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "shape");
                }
            *tp = keep;
            if (keep.ndim == 2 && keep.shape[0] != keep.shape[1]) {
                tp->shape[0] = keep.shape[1];
                tp->shape[1] = keep.shape[0];
                expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "shape");
            }
            static const int ranks[] = {0, 1, 2, 3, -1, 5, INT_MAX};
            for (size_t rk = 0; rk < sizeof ranks / sizeof ranks[0]; rk++) {
                if (ranks[rk] == keep.ndim) continue;
                *tp = keep;
                tp->ndim = ranks[rk];
                if (ranks[rk] == 1 && keep.ndim == 2 && keep.shape[1] == 1) continue; /* [N,1] -> [N] is legal */
                expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "shape");
            }
            *tp = keep;
            tp->shape[0] = INT64_MAX;
            expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "shape");
            tp->shape[0] = -keep.shape[0];
            expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "shape");
            /* missing */
            *tp = keep;
            tp->data = NULL;
            expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, names[i], "missing");
            *tp = keep;
        }
        /* unknown layout */
        mpl_layout keep_layout = f.ck.layout;
        f.ck.layout = (mpl_layout)0;
        expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, "layout", "0");
        f.ck.layout = keep_layout;
        fixture_free(&f);
    }
}

static void g_idx_and_ct_int_values(void **state) {
    (void)state;
    fixture f;
    fixture_make(&f, MPL_LAYOUT_GPTQ, MPL_WTYPE_UINT4B8, 1);
    int32_t *g = (int32_t *)f.ck.g_idx.data;
    int32_t keep = g[5];
    static const int32_t badv[] = {2, -1, 1000, INT32_MIN, INT32_MAX}; /* groups = 40 / 20 = 2 */
    for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
        g[5] = badv[i];
        char want[32];
        snprintf(want, sizeof want, "g_idx[5] = %d", badv[i]);
        expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, want, "0..1");
    }
    g[5] = keep;
    /* int64 g_idx with a value beyond int32 */
    int64_t g64[40];
    for (int i = 0; i < 40; i++) g64[i] = g[i];
    g64[39] = (int64_t)1 << 40;
    mpl_tensor keep_t = f.ck.g_idx;
    f.ck.g_idx.data = g64;
    f.ck.g_idx.dtype = MPL_DTYPE_I64;
    expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, "g_idx[39] = 1099511627776", NULL);
    g64[39] = 1;
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&f.cfg, &f.ck, NULL, &l), MPL_OK);
    mpl_layer_destroy(l);
    /* wrong length */
    f.ck.g_idx = keep_t;
    f.ck.g_idx.shape[0] = 39;
    expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, "g_idx", "[40]");
    f.ck.g_idx.shape[0] = 40;
    fixture_free(&f);
    /* ct-int: values outside -8..7 */
    fixture_make(&f, MPL_LAYOUT_CT_INT, MPL_WTYPE_INT4, 0);
    int8_t *v = (int8_t *)f.ck.weight.data;
    static const int8_t badi[] = {8, -9, 127, -128};
    for (size_t i = 0; i < sizeof badi / sizeof badi[0]; i++) {
        int8_t k2 = v[3 * 40 + 17];
        v[3 * 40 + 17] = badi[i];
        char want[48];
        snprintf(want, sizeof want, "weight[3, 17] = %d", badi[i]);
        expect_create(&f.cfg, &f.ck, MPL_ERR_INVALID_ARGUMENT, want, "-8..7");
        v[3 * 40 + 17] = k2;
    }
    fixture_free(&f);
}

/* Randomized tensor descriptions (dtype, rank, shape near the expected one) over random configs:
 * create either succeeds on exactly the right description or fails with a message; ASan checks
 * that no byte beyond a declared shape is read. */
static void tensor_descriptions_fuzz(void **state) {
    (void)state;
    tu_rng r;
    uint64_t seed = tu_seed(0xf022);
    tu_rng_init(&r, seed);
    static const mpl_dtype dts[] = {MPL_DTYPE_I32, MPL_DTYPE_I8,  MPL_DTYPE_F16, MPL_DTYPE_BF16,
                                    MPL_DTYPE_F32, MPL_DTYPE_I64, MPL_DTYPE_NONE};
    int accepted = 0;
    for (int it = 0; it < 1500; it++) {
        int layout = (int)tu_rng_range(&r, MPL_LAYOUT_CT, MPL_LAYOUT_CT_INT);
        mpl_wtype t = layout == MPL_LAYOUT_CT_INT ? MPL_WTYPE_INT4 : (mpl_wtype)tu_rng_range(&r, 1, 5);
        fixture f;
        fixture_make(&f, (mpl_layout)layout, t, layout != MPL_LAYOUT_AWQ && tu_rng_below(&r, 2));
        mpl_tensor *ts[4] = {&f.ck.weight, &f.ck.scales, &f.ck.zeros, &f.ck.g_idx};
        int which = (int)tu_rng_below(&r, 4);
        mpl_tensor *tp = ts[which];
        if (!tp->data) {
            fixture_free(&f);
            continue;
        }
        mpl_tensor orig = *tp, fresh = *tp;
        fresh.dtype = dts[tu_rng_below(&r, 7)];
        fresh.ndim = (int)tu_rng_range(&r, 1, 2);
        for (int d = 0; d < 2; d++) fresh.shape[d] = tp->shape[d] + tu_rng_range(&r, -1, 1);
        if (fresh.ndim == 1) fresh.shape[1] = 0;
        int64_t numel = 1;
        for (int d = 0; d < fresh.ndim; d++) numel *= fresh.shape[d] > 0 ? fresh.shape[d] : 0;
        size_t bytes = (size_t)numel * mpl_dtype_size(fresh.dtype);
        void *buf = malloc(bytes ? bytes : 1);
        assert_non_null(buf);
        for (size_t i = 0; i < bytes; i++) ((unsigned char *)buf)[i] = (unsigned char)tu_rng_below(&r, 2);
        fresh.data = buf;
        *tp = fresh;
        mpl_layer *l = NULL;
        mpl_status st = mpl_layer_create(&f.cfg, &f.ck, NULL, &l);
        if (st == MPL_OK) {
            accepted++;
            float x[40], y[16];
            for (int i = 0; i < 40; i++) x[i] = 1.0f;
            assert_int_equal(mpl_layer_apply(l, 1, x, NULL, y), MPL_OK);
            mpl_layer_destroy(l);
        } else {
            assert_int_equal(st, MPL_ERR_INVALID_ARGUMENT);
            assert_true(strlen(mpl_last_error()) > 0);
        }
        free(buf);
        *tp = orig;
        fixture_free(&f);
    }
    print_message("%d of 1500 random tensor descriptions accepted (seed 0x%llx)\n", accepted,
                  (unsigned long long)seed);
}

/* apply: m < 0, m beyond the documented bound, NULL x/y, and the CUDA-only entry on a CPU layer. */
static void apply_arguments(void **state) {
    (void)state;
    fixture f;
    fixture_make(&f, MPL_LAYOUT_CT, MPL_WTYPE_UINT4B8, 0);
    f.cfg.act = MPL_ACT_BF16;
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&f.cfg, &f.ck, NULL, &l), MPL_OK);
    uint16_t x[2 * 40], y[2 * 13];
    memset(x, 0, sizeof x);
    x[0] = 0x3f80; /* 1.0 */
    static const int64_t badm[] = {-1, -2, INT64_MIN};
    for (size_t i = 0; i < sizeof badm / sizeof badm[0]; i++) {
        assert_int_equal(mpl_layer_apply(l, badm[i], x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(mpl_last_error(), "m = "));
    }
    /* row counts whose byte counts (x, y or any workspace) would overflow are refused before
     * anything is read or allocated */
    static const int64_t hugem[] = {INT64_MAX, (int64_t)1 << 62, (int64_t)1 << 56, (int64_t)1 << 40,
                                    (int64_t)INT32_MAX + 1};
    for (size_t i = 0; i < sizeof hugem / sizeof hugem[0]; i++) {
        mpl_status st = mpl_layer_apply(l, hugem[i], x, NULL, y);
        if (st != MPL_ERR_INVALID_ARGUMENT && st != MPL_ERR_OVERFLOW)
            fail_msg("m = %lld: got %s '%s'", (long long)hugem[i], mpl_status_string(st), mpl_last_error());
        assert_non_null(strstr(mpl_last_error(), "m = "));
    }
    assert_int_equal(mpl_layer_apply(l, 1, NULL, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_layer_apply(l, 1, x, NULL, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_layer_apply(l, 0, NULL, NULL, NULL), MPL_OK); /* nothing to do */
    assert_int_equal(mpl_layer_apply(l, 2, x, NULL, y), MPL_OK);
    assert_int_equal(mpl_layer_apply_device(l, 1, x, NULL, y, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "CUDA"));
    assert_int_equal(mpl_layer_apply_device(l, -1, x, NULL, y, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_layer_apply_device(NULL, 1, x, NULL, y, NULL), MPL_ERR_INVALID_ARGUMENT);
    mpl_layer_destroy(l);
    /* options */
    mpl_options o;
    mpl_options_init(&o);
    o.threads = -1;
    l = NULL;
    assert_int_equal(mpl_layer_create(&f.cfg, &f.ck, &o, &l), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "threads = -1"));
    assert_null(l);
    o.threads = 100000; /* more than the pool: capped, not an error */
    assert_int_equal(mpl_layer_create(&f.cfg, &f.ck, &o, &l), MPL_OK);
    assert_int_equal(mpl_layer_apply(l, 2, x, NULL, y), MPL_OK);
    mpl_layer_destroy(l);
    fixture_free(&f);
}

#define EXPECT_ERR(call, st)                                                                                          \
    do {                                                                                                               \
        mpl_clear_error();                                                                                             \
        assert_int_equal((call), (st));                                                                                \
        assert_true(strlen(mpl_last_error()) > 0);                                                                     \
    } while (0)

/* NULL for every pointer parameter of every public function. */
static void null_pointers(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 64, 8);
    mpl_config_init(NULL, 64, 8);
    mpl_options_init(NULL);
    EXPECT_ERR(mpl_config_validate(NULL), MPL_ERR_INVALID_ARGUMENT);
    mpl_wtype wt;
    mpl_act at;
    mpl_layout lt;
    EXPECT_ERR(mpl_wtype_parse(NULL, &wt), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_wtype_parse("uint4", NULL), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_act_parse(NULL, &at), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_act_parse("f16", NULL), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_layout_parse(NULL, &lt), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_layout_parse("awq", NULL), MPL_ERR_INVALID_ARGUMENT);
    /* encode */
    uint8_t codes[8 * 64];
    float sc[8];
    memset(codes, 3, sizeof codes);
    for (int i = 0; i < 8; i++) sc[i] = 1.0f;
    mpl_checkpoint_tensors ck;
    EXPECT_ERR(mpl_checkpoint_encode(NULL, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_F16, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, NULL, sc, MPL_DTYPE_F16, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, NULL, MPL_DTYPE_F16, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_F16, NULL, NULL, NULL),
               MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_I32, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_checkpoint_encode(&c, (mpl_layout)9, codes, sc, MPL_DTYPE_F16, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    mpl_config cz = c;
    cz.wtype = MPL_WTYPE_UINT4;
    cz.zero_points = 1;
    EXPECT_ERR(mpl_checkpoint_encode(&cz, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_F16, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    mpl_config ca = c;
    ca.group_size = 32;
    ca.act_order = 1;
    EXPECT_ERR(mpl_checkpoint_encode(&ca, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_F16, NULL, NULL, &ck),
               MPL_ERR_INVALID_ARGUMENT);
    mpl_checkpoint_tensors_free(NULL);
    /* layer */
    assert_int_equal(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, sc, MPL_DTYPE_F16, NULL, NULL, &ck), MPL_OK);
    mpl_layer *l = NULL;
    EXPECT_ERR(mpl_layer_create(NULL, &ck, NULL, &l), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_layer_create(&c, NULL, NULL, &l), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_layer_create(&c, &ck, NULL, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_null(l);
    uint16_t x[64], y[8];
    EXPECT_ERR(mpl_layer_apply(NULL, 1, x, NULL, y), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_layer_apply(NULL, 0, NULL, NULL, NULL), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_layer_apply_device(NULL, 0, NULL, NULL, NULL, NULL), MPL_ERR_INVALID_ARGUMENT);
    mpl_layer_destroy(NULL);
    assert_null(mpl_layer_kernel(NULL));
    assert_null(mpl_layer_config(NULL));
    assert_int_equal(mpl_layer_weight_bytes(NULL), 0);
    assert_true(mpl_layer_weight_rounding(NULL, 1) == 0.0);
    mpl_checkpoint_tensors_free(&ck);
    mpl_checkpoint_tensors_free(&ck); /* freeing twice is safe: free zeroes the struct */
    /* registry, chooser, platform */
    EXPECT_ERR(mpl_kernel_get(0, NULL), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_choose(NULL, NULL, NULL, NULL, 0, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_choose(&c, NULL, NULL, NULL, 4, NULL), MPL_OK); /* entries NULL, cap > 0 */
    EXPECT_ERR(mpl_platform_get(NULL), MPL_ERR_INVALID_ARGUMENT);
    char buf[8];
    mpl_isa_string(MPL_ISA_AVX2 | MPL_ISA_FMA, NULL, 0);
    mpl_isa_string(MPL_ISA_AVX2 | MPL_ISA_FMA, NULL, 64);
    mpl_isa_string(MPL_ISA_AVX2 | MPL_ISA_FMA, buf, 0);
    mpl_isa_string(MPL_ISA_AVX2 | MPL_ISA_FMA, buf, sizeof buf); /* truncated, terminated */
    assert_true(strlen(buf) < sizeof buf);
    mpl_isa_string(0, buf, sizeof buf);
    assert_true(strlen(buf) < sizeof buf);
    /* strings for out-of-range enums are never NULL */
    assert_non_null(mpl_status_string((mpl_status)1234));
    assert_non_null(mpl_reason_name((mpl_reason)1234));
    assert_non_null(mpl_wtype_name((mpl_wtype)1234));
    assert_non_null(mpl_act_name((mpl_act)1234));
    assert_non_null(mpl_layout_name((mpl_layout)1234));
    assert_non_null(mpl_dtype_name((mpl_dtype)1234));
}

/* mpl_model_* (checkpoint folders): NULL and missing paths give statuses, never crashes. Without the
 * model module (MPLINEAR_MODEL=OFF) open is MPL_ERR_UNSUPPORTED saying so, and the rest see a NULL model. */
static void model_null_pointers(void **state) {
    (void)state;
    mpl_model *m = (mpl_model *)&m;
#if MPL_TEST_MODEL_BUILT
    EXPECT_ERR(mpl_model_open(NULL, &m), MPL_ERR_INVALID_ARGUMENT);
    assert_null(m);
    assert_int_not_equal(mpl_model_open("/nonexistent/mplinear/model", &m), MPL_OK);
    assert_true(strlen(mpl_last_error()) > 0);
    assert_null(m);
    EXPECT_ERR(mpl_model_open("/nonexistent", NULL), MPL_ERR_INVALID_ARGUMENT);
#else
    EXPECT_ERR(mpl_model_open(NULL, &m), MPL_ERR_UNSUPPORTED);
    assert_null(m);
    m = (mpl_model *)&m;
    EXPECT_ERR(mpl_model_open("/nonexistent/mplinear/model", &m), MPL_ERR_UNSUPPORTED);
    assert_non_null(strstr(mpl_last_error(), "without the model module"));
    assert_null(m);
    EXPECT_ERR(mpl_model_open("/nonexistent", NULL), MPL_ERR_UNSUPPORTED);
#endif
    mpl_model_close(NULL);
    (void)mpl_model_quant_method(NULL);
    (void)mpl_model_act(NULL);
    assert_true(mpl_model_layer_count(NULL) <= 0);
    mpl_model_layer_info info;
    int idx;
    mpl_layer *l = NULL;
    float b[4];
    EXPECT_ERR(mpl_model_layer_get(NULL, 0, &info), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_model_find_layer(NULL, "x", &idx), MPL_ERR_INVALID_ARGUMENT);
    EXPECT_ERR(mpl_model_layer_create(NULL, 0, NULL, (mpl_act)0, &l), MPL_ERR_INVALID_ARGUMENT);
    assert_null(l);
    EXPECT_ERR(mpl_model_layer_bias(NULL, 0, (mpl_act)0, b), MPL_ERR_INVALID_ARGUMENT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tensors_wrong),
        cmocka_unit_test(g_idx_and_ct_int_values),
        cmocka_unit_test(tensor_descriptions_fuzz),
        cmocka_unit_test(apply_arguments),
        cmocka_unit_test(null_pointers),
        cmocka_unit_test(model_null_pointers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
