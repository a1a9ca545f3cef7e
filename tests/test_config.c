/*
 * test_config.c -- mpl_config validation (every rule: MPL_ERR_INVALID_ARGUMENT with a message
 * naming the field and the value), defaults, and the name/parse/string helpers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/internal.h"
#include "support/testutil.h"

typedef struct {
    int64_t k, n, full_k, full_n;
    int wtype, act;
    int64_t group;
    int zp, act_order, mode;
    const char *want1, *want2; /* substrings of the message; NULL: the config is valid */
} config_case;

#define U4B8 MPL_WTYPE_UINT4B8
#define U4 MPL_WTYPE_UINT4
#define I4 MPL_WTYPE_INT4
#define U8B MPL_WTYPE_UINT8B128
#define U8 MPL_WTYPE_UINT8
#define BF MPL_ACT_BF16
#define A16 MPL_MODE_W4A16
#define A8 MPL_MODE_W4A8
#define MAXD ((int64_t)1 << 24)

/* W4A8 int32 bound: 127 * max|w| * group length < 2^31, max|w| = 15 (4-bit) or 255 (8-bit).
 * 4-bit: 2^31 / (127*15) = 1127288.6, so 1127288 (a multiple of 8) is the largest valid length
 * and k = 1127296 the first k over it. 8-bit: 2^31 / (127*255) = 66311.1, so k = 66308 (a
 * multiple of 4) is the largest valid k and 66312 the first over it. */
static const config_case cases[] = {
    /* valid edges */
    {8, 1, 0, 0, U4B8, BF, -1, 0, 0, A16, NULL, NULL},
    {MAXD, MAXD, 0, 0, U4B8, BF, MAXD, 0, 0, A16, NULL, NULL},
    {64, 16, 128, 32, U4, MPL_ACT_F16, 32, 1, 1, A16, NULL, NULL},
    {36, 5, 36, 5, U8B, MPL_ACT_F32, 12, 0, 1, A16, NULL, NULL},
    {36, 5, 0, 0, U8, BF, 4, 1, 0, A8, NULL, NULL},
    {40, 13, 0, 0, I4, BF, 5, 0, 1, A8, NULL, NULL}, /* group 5: any divisor of k */
    {1127288, 8, 0, 0, U4B8, BF, -1, 0, 0, A8, NULL, NULL},
    {66308, 8, 0, 0, U8B, BF, -1, 0, 0, A8, NULL, NULL},
    {1127296, 8, 0, 0, U4B8, BF, -1, 0, 0, A16, NULL, NULL}, /* the bound is W4A8 only */
    /* k, n out of range */
    {0, 8, 0, 0, U4B8, BF, -1, 0, 0, A16, "k = 0", "1..16777216"},
    {-8, 8, 0, 0, U4B8, BF, -1, 0, 0, A16, "k = -8", "1..16777216"},
    {MAXD + 8, 8, 0, 0, U4B8, BF, -1, 0, 0, A16, "k = 16777224", "1..16777216"},
    {64, 0, 0, 0, U4B8, BF, -1, 0, 0, A16, "n = 0", "1..16777216"},
    {64, -3, 0, 0, U4B8, BF, -1, 0, 0, A16, "n = -3", "1..16777216"},
    {64, MAXD + 1, 0, 0, U4B8, BF, -1, 0, 0, A16, "n = 16777217", "1..16777216"},
    /* full_k / full_n */
    {64, 8, 32, 0, U4B8, BF, -1, 0, 0, A16, "full_k = 32", "k = 64"},
    {64, 8, -64, 0, U4B8, BF, -1, 0, 0, A16, "full_k = -64", "k = 64"},
    {64, 8, MAXD + 64, 0, U4B8, BF, -1, 0, 0, A16, "full_k = 16777280", "16777216"},
    {64, 8, 0, 4, U4B8, BF, -1, 0, 0, A16, "full_n = 4", "n = 8"},
    {64, 8, 0, MAXD + 1, U4B8, BF, -1, 0, 0, A16, "full_n = 16777217", "16777216"},
    /* k packing */
    {36, 8, 0, 0, U4B8, BF, -1, 0, 0, A16, "k = 36", "multiple of 8"},
    {44, 8, 0, 0, U4, BF, -1, 1, 0, A16, "k = 44", "multiple of 8"},
    {12, 8, 0, 0, I4, BF, -1, 0, 0, A16, "k = 12", "multiple of 8"},
    {34, 8, 0, 0, U8B, BF, -1, 0, 0, A16, "k = 34", "multiple of 4"},
    {6, 8, 0, 0, U8, BF, -1, 1, 0, A16, "k = 6", "multiple of 4"},
    {24, 8, 0, 0, MPL_WTYPE_UINT2B2, BF, -1, 0, 0, A16, "k = 24", "multiple of 16"},
    {48, 8, 0, 0, MPL_WTYPE_UINT3, BF, -1, 1, 0, A16, "k = 48", "multiple of 32"},
    {64, 8, 0, 0, MPL_WTYPE_UINT3B4, BF, -1, 1, 0, A16, "zero_points = 1", "uint3b4"},
    {64, 8, 0, 0, MPL_WTYPE_UINT2, BF, -1, 0, 0, A16, "zero_points = 0", "uint2"},
    /* group size */
    {64, 8, 0, 0, U4B8, BF, 24, 0, 0, A16, "group_size = 24", "divisor of k = 64"},
    {64, 8, 0, 0, U4B8, BF, 128, 0, 0, A16, "group_size = 128", "divisor of k = 64"},
    {64, 8, 0, 0, U4B8, BF, 0, 0, 0, A16, "group_size = 0", "-1 or a positive divisor"},
    {64, 8, 0, 0, U4B8, BF, -2, 0, 0, A16, "group_size = -2", "-1 or a positive divisor"},
    {72, 8, 0, 0, U4B8, BF, 48, 0, 0, A16, "group_size = 48", "k = 72"},
    /* zero points */
    {64, 8, 0, 0, U4, BF, -1, 0, 0, A16, "zero_points = 0", "uint4"},
    {64, 8, 0, 0, U8, BF, 32, 0, 0, A16, "zero_points = 0", "uint8"},
    {64, 8, 0, 0, U4B8, BF, -1, 1, 0, A16, "zero_points = 1", "uint4b8"},
    {64, 8, 0, 0, I4, BF, -1, 1, 0, A16, "zero_points = 1", "int4"},
    {64, 8, 0, 0, U8B, BF, -1, 1, 0, A16, "zero_points = 1", "uint8b128"},
    {64, 8, 0, 0, U4, BF, -1, 2, 0, A16, "zero_points = 2", "0 or 1"},
    /* act-order */
    {64, 8, 0, 0, U4B8, BF, -1, 0, 1, A16, "act_order = 1", "group_size -1"},
    {64, 8, 0, 0, U4B8, BF, 32, 0, 3, A16, "act_order = 3", "0 or 1"},
    /* unknown enums */
    {64, 8, 0, 0, 0, BF, -1, 0, 0, A16, "wtype = 0", "uint4b8"},
    {64, 8, 0, 0, 10, BF, -1, 0, 0, A16, "wtype = 10", "uint4b8"},
    {64, 8, 0, 0, -1, BF, -1, 0, 0, A16, "wtype = -1", "uint4b8"},
    {64, 8, 0, 0, U4B8, 0, -1, 0, 0, A16, "act = 0", "bf16"},
    {64, 8, 0, 0, U4B8, 4, -1, 0, 0, A16, "act = 4", "bf16"},
    {64, 8, 0, 0, U4B8, BF, -1, 0, 0, 2, "mode = 2", "W4A8"},
    {64, 8, 0, 0, U4B8, BF, -1, 0, 0, -1, "mode = -1", "W4A8"},
    /* W4A8 int32 group sums */
    {1127296, 8, 0, 0, U4B8, BF, -1, 0, 0, A8, "group length 1127296", "2^31"},
    {1127296, 8, 0, 0, U4, BF, -1, 1, 0, A8, "group length 1127296", "2^31"},
    {66312, 8, 0, 0, U8B, BF, -1, 0, 0, A8, "group length 66312", "2^31"},
    {132624, 8, 0, 0, U8, BF, 66312, 1, 0, A8, "group length 66312", "2^31"},
    {132624, 8, 0, 0, U8, BF, 33156, 1, 0, A8, NULL, NULL},
};

static mpl_config make(const config_case *t) {
    mpl_config c;
    mpl_config_init(&c, t->k, t->n);
    c.full_k = t->full_k;
    c.full_n = t->full_n;
    c.wtype = (mpl_wtype)t->wtype;
    c.act = (mpl_act)t->act;
    c.group_size = t->group;
    c.zero_points = t->zp;
    c.act_order = t->act_order;
    c.mode = (mpl_mode)t->mode;
    return c;
}

static void validation_rules(void **state) {
    (void)state;
    int bad = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const config_case *t = &cases[i];
        mpl_config c = make(t);
        mpl_clear_error();
        mpl_status st = mpl_config_validate(&c);
        const char *msg = mpl_last_error();
        char cs[160];
        tu_cfg_str(&c, cs, sizeof cs);
        if (!t->want1) {
            if (st != MPL_OK) {
                fprintf(stderr, "case %zu (%s): expected valid, got %s: %s\n", i, cs, mpl_status_string(st), msg);
                bad++;
            }
            continue;
        }
        if (st != MPL_ERR_INVALID_ARGUMENT || !strstr(msg, t->want1) || !strstr(msg, t->want2) ||
            !strstr(msg, "config")) {
            fprintf(stderr, "case %zu (%s): got %s '%s', want invalid argument naming '%s' and '%s'\n", i, cs,
                    mpl_status_string(st), msg, t->want1, t->want2);
            bad++;
        }
    }
    assert_int_equal(bad, 0);
}

/* The same rules surface unchanged through mpl_choose and mpl_layer_create, before any tensor
 * is looked at (a NULL-data checkpoint is never read). */
static void validation_through_api(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const config_case *t = &cases[i];
        if (!t->want1) continue;
        mpl_config c = make(t);
        const char *chosen = "x";
        mpl_choice_entry e[8];
        int count = -1;
        assert_int_equal(mpl_choose(&c, NULL, &chosen, e, 8, &count), MPL_ERR_INVALID_ARGUMENT);
        assert_null(chosen);
        assert_int_equal(count, 0);
        assert_non_null(strstr(mpl_last_error(), t->want1));
        mpl_checkpoint_tensors ck;
        memset(&ck, 0, sizeof ck);
        ck.layout = MPL_LAYOUT_GPTQ;
        mpl_layer *l = (mpl_layer *)&ck;
        assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_ERR_INVALID_ARGUMENT);
        assert_null(l);
        assert_non_null(strstr(mpl_last_error(), t->want1));
    }
    assert_int_equal(mpl_config_validate(NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "NULL"));
}

static void defaults(void **state) {
    (void)state;
    mpl_config c;
    memset(&c, 0x5a, sizeof c);
    mpl_config_init(&c, 4096, 11008);
    assert_int_equal(c.k, 4096);
    assert_int_equal(c.n, 11008);
    assert_int_equal(c.full_k, 0);
    assert_int_equal(c.full_n, 0);
    assert_int_equal(c.wtype, MPL_WTYPE_UINT4B8);
    assert_int_equal(c.act, MPL_ACT_BF16);
    assert_int_equal(c.group_size, -1);
    assert_int_equal(c.zero_points, 0);
    assert_int_equal(c.act_order, 0);
    assert_int_equal(c.mode, MPL_MODE_W4A16);
    assert_int_equal(mpl_config_validate(&c), MPL_OK);
    mpl_options o;
    memset(&o, 0x5a, sizeof o);
    mpl_options_init(&o);
    assert_null(o.kernel);
    assert_int_equal(o.threads, 0);
    assert_int_equal(o.device, MPL_DEVICE_CPU);
    assert_int_equal(o.cuda_device, 0);
}

static void names_and_parsing(void **state) {
    (void)state;
    static const char *const wn[] = {"uint4b8", "uint4", "int4", "uint8b128", "uint8", "uint2b2", "uint3b4", "uint2", "uint3"};
    static const int width[] = {4, 4, 4, 8, 8, 2, 3, 2, 3}, zp[] = {0, 1, 0, 0, 1, 0, 0, 1, 1};
    for (int i = 0; i < 9; i++) {
        assert_int_equal(mpl_wtype_width((mpl_wtype)(i + 1)), width[i]);
        assert_int_equal(mpl_wtype_zero_points((mpl_wtype)(i + 1)), zp[i]);
        mpl_wtype t = (mpl_wtype)0;
        assert_string_equal(mpl_wtype_name((mpl_wtype)(i + 1)), wn[i]);
        assert_int_equal(mpl_wtype_parse(wn[i], &t), MPL_OK);
        assert_int_equal(t, i + 1);
    }
    static const char *const an[] = {"f16", "bf16", "f32"};
    for (int i = 0; i < 3; i++) {
        mpl_act a = (mpl_act)0;
        assert_string_equal(mpl_act_name((mpl_act)(i + 1)), an[i]);
        assert_int_equal(mpl_act_parse(an[i], &a), MPL_OK);
        assert_int_equal(a, i + 1);
    }
    static const char *const ln[] = {"ct", "gptq", "gptq-v2", "awq", "ct-int"};
    for (int i = 0; i < 5; i++) {
        mpl_layout l = (mpl_layout)0;
        assert_string_equal(mpl_layout_name((mpl_layout)(i + 1)), ln[i]);
        assert_int_equal(mpl_layout_parse(ln[i], &l), MPL_OK);
        assert_int_equal(l, i + 1);
    }
    assert_string_equal(mpl_wtype_name((mpl_wtype)0), "unknown");
    assert_string_equal(mpl_wtype_name((mpl_wtype)10), "unknown");
    assert_int_equal(mpl_wtype_width((mpl_wtype)10), 0);
    assert_int_equal(mpl_wtype_zero_points((mpl_wtype)0), 0);
    assert_string_equal(mpl_act_name((mpl_act)9), "unknown");
    assert_string_equal(mpl_layout_name((mpl_layout)-1), "unknown");
    /* unknown names: the bad string and the accepted list in the message; nothing written */
    mpl_wtype t = MPL_WTYPE_INT4;
    assert_int_equal(mpl_wtype_parse("uint5b16", &t), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "'uint5b16'"));
    assert_non_null(strstr(mpl_last_error(), "uint8b128"));
    assert_int_equal(t, MPL_WTYPE_INT4);
    assert_int_equal(mpl_wtype_parse("UINT4", &t), MPL_ERR_INVALID_ARGUMENT); /* names are exact */
    assert_int_equal(mpl_wtype_parse("", &t), MPL_ERR_INVALID_ARGUMENT);
    mpl_act a = MPL_ACT_F32;
    assert_int_equal(mpl_act_parse("fp16", &a), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "'fp16'"));
    assert_int_equal(a, MPL_ACT_F32);
    mpl_layout l = MPL_LAYOUT_CT;
    assert_int_equal(mpl_layout_parse("gptq_v2", &l), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "'gptq_v2'"));
    assert_non_null(strstr(mpl_last_error(), "gptq-v2"));
    assert_int_equal(l, MPL_LAYOUT_CT);
}

static void dtypes_statuses_version(void **state) {
    (void)state;
    static const struct {
        mpl_dtype d;
        const char *name;
        size_t size;
    } dt[] = {{MPL_DTYPE_NONE, "none", 0},    {MPL_DTYPE_I32, "int32", 4},      {MPL_DTYPE_I8, "int8", 1},
              {MPL_DTYPE_U8, "uint8", 1},     {MPL_DTYPE_F16, "float16", 2},    {MPL_DTYPE_BF16, "bfloat16", 2},
              {MPL_DTYPE_F32, "float32", 4},  {MPL_DTYPE_I64, "int64", 8}};
    for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
        assert_string_equal(mpl_dtype_name(dt[i].d), dt[i].name);
        assert_int_equal(mpl_dtype_size(dt[i].d), dt[i].size);
    }
    assert_string_equal(mpl_dtype_name((mpl_dtype)42), "unknown");
    assert_int_equal(mpl_dtype_size((mpl_dtype)42), 0);
    /* pinned status values, each with its own string */
    assert_int_equal(MPL_OK, 0);
    assert_int_equal(MPL_ERR_INVALID_ARGUMENT, 1);
    assert_int_equal(MPL_ERR_UNSUPPORTED, 2);
    assert_int_equal(MPL_ERR_NO_HARDWARE, 3);
    assert_int_equal(MPL_ERR_INTERNAL, 9);
    for (int s = 0; s <= 9; s++) {
        const char *str = mpl_status_string((mpl_status)s);
        assert_non_null(str);
        assert_string_not_equal(str, "unknown status");
        for (int s2 = 0; s2 < s; s2++) assert_string_not_equal(str, mpl_status_string((mpl_status)s2));
    }
    assert_string_equal(mpl_status_string((mpl_status)10), "unknown status");
    assert_string_equal(mpl_status_string((mpl_status)-1), "unknown status");
    assert_string_equal(mpl_version(), MPL_VERSION_STRING);
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", MPL_VERSION_MAJOR, MPL_VERSION_MINOR, MPL_VERSION_PATCH);
    assert_string_equal(mpl_version(), v);
}

/* The last error is per thread and cleared by mpl_layer_create's success path. */
static void last_error_lifecycle(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 64, 8);
    c.group_size = 7;
    assert_int_equal(mpl_config_validate(&c), MPL_ERR_INVALID_ARGUMENT);
    assert_true(strlen(mpl_last_error()) > 0);
    mpl_clear_error();
    assert_string_equal(mpl_last_error(), "");
    c.group_size = 32;
    uint8_t codes[8 * 64];
    float sc[8 * 2];
    for (int i = 0; i < 8 * 64; i++) codes[i] = (uint8_t)(i % 16);
    for (int i = 0; i < 16; i++) sc[i] = 0.5f;
    mpl_checkpoint_tensors ck;
    assert_int_equal(mpl_checkpoint_encode(&c, MPL_LAYOUT_CT, codes, sc, MPL_DTYPE_BF16, NULL, NULL, &ck), MPL_OK);
    (void)mpl_config_validate(NULL); /* leaves a message behind */
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_OK);
    assert_string_equal(mpl_last_error(), "");
    assert_int_equal(mpl_layer_config(l)->full_k, 64); /* 0 means "same as the partition" */
    assert_int_equal(mpl_layer_config(l)->full_n, 8);
    assert_true(mpl_layer_weight_bytes(l) > 0);
    /* CPU kernels multiply exact integer weights and scale in fp32: no weight rounding at any m */
    assert_true(mpl_layer_weight_rounding(l, 1) == 0.0 && mpl_layer_weight_rounding(l, 4096) == 0.0);
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(validation_rules),
        cmocka_unit_test(validation_through_api),
        cmocka_unit_test(defaults),
        cmocka_unit_test(names_and_parsing),
        cmocka_unit_test(dtypes_statuses_version),
        cmocka_unit_test(last_error_lifecycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
