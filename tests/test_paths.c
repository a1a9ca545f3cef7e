/*
 * test_paths.c -- path rows below the kernel rows (docs/naming.md): the shape of every kernel's
 * path table, the rule that picks a path for m (mpl_plan_path), the order of a path's checks
 * (disabled, ISA or compute capability, its own can_implement), forcing and disabling paths by
 * name through the public API, mpl_check, mpl_choose_path, mpl_layer_path, and every path this
 * host can run forced and checked against ref.
 */
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

static mpl_platform fake_platform;

static int reset(void **state) {
    (void)state;
    unsetenv("MPL_DISABLED_KERNELS");
    mpl_platform_override(NULL);
    return 0;
}

/* ---------- every kernel's path table ---------- */

static int path_word_ok(const char *w) {
    if (!*w) return 0;
    for (; *w; w++)
        if (!((*w >= 'a' && *w <= 'z') || (*w >= '0' && *w <= '9') || *w == '-')) return 0;
    return 1;
}

static void path_tables(void **state) {
    (void)state;
    int n = mpl_kernel_count();
    for (int i = 0; i < n; i++) {
        mpl_kernel_info ki;
        assert_int_equal(mpl_kernel_get(i, &ki), MPL_OK);
        assert_true(ki.paths >= 1 && ki.paths <= MPL_MAX_PATHS);
        size_t kl = strlen(ki.name);
        for (int j = 0; j < ki.paths; j++) {
            mpl_path_info pi;
            assert_int_equal(mpl_path_get(i, j, &pi), MPL_OK);
            /* "<kernel>:<word>", the kernel's own name first */
            if (strncmp(pi.name, ki.name, kl) != 0 || pi.name[kl] != ':' || !path_word_ok(pi.name + kl + 1))
                fail_msg("path name '%s' of kernel %s breaks the grammar <kernel>:<word>", pi.name, ki.name);
            assert_string_equal(pi.kernel, ki.name);
            assert_non_null(pi.requires);
            if (strlen(pi.why) == 0) fail_msg("path %s has no why (the measurement behind its m range)", pi.name);
            assert_true(pi.m_min >= 1);
            assert_true(pi.m_max >= pi.m_min);
            assert_true(pi.m_limit >= pi.m_max); /* a path never serves by default more rows than it can run */
            int idx = -2;
            assert_ptr_equal(mpl_registry_find_path(pi.name, &idx), mpl_registry_find(ki.name));
            assert_int_equal(idx, j);
            for (int q = 0; q < j; q++) {
                mpl_path_info pq;
                mpl_path_get(i, q, &pq);
                assert_string_not_equal(pi.name, pq.name);
            }
        }
        mpl_path_info pi;
        assert_int_equal(mpl_path_get(i, ki.paths, &pi), MPL_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(mpl_last_error(), ki.name));
        assert_int_equal(mpl_path_get(i, -1, &pi), MPL_ERR_INVALID_ARGUMENT);
    }
    mpl_path_info pi;
    assert_int_equal(mpl_path_get(n, 0, &pi), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_path_get(0, 0, NULL), MPL_ERR_INVALID_ARGUMENT);
    int idx;
    assert_null(mpl_registry_find_path("ref:nope", &idx));
    assert_null(mpl_registry_find_path("nokernel:scalar", &idx));
    assert_null(mpl_registry_find_path(":scalar", &idx));
    assert_ptr_equal(mpl_registry_find_path("ref", &idx), mpl_registry_find("ref"));
    assert_int_equal(idx, -1);
}

/* ---------- a fake kernel with three paths ---------- */

static mpl_reason refuse_f32(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    if (c->act == MPL_ACT_F32)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE, "activations f32: path c takes f16 or bf16");
    return MPL_REASON_OK;
}

static void narrow_a(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    (void)p, (void)lo;
    if (c->k >= 1024) *hi = 2; /* a switch point that depends on K */
}

static mpl_reason any_config(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)c, (void)p, (void)msg, (void)cap;
    return MPL_REASON_OK;
}

static const mpl_path_desc fake_paths[] = {
    {.name = "fake_avx2_kernel:a", .requires = "", .m_min = 1, .m_max = 4, .m_limit = 16, .why = "test",
     .m_range = narrow_a},
    {.name = "fake_avx2_kernel:b", .requires = "avx512f", .isa = MPL_ISA_AVX512F, .m_min = 5, .m_max = 100,
     .m_limit = 100, .why = "test"},
    {.name = "fake_avx2_kernel:c", .requires = "", .m_min = 1, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY,
     .why = "test", .can_implement = refuse_f32},
};

static const mpl_kernel_desc fake_cpu = {
    .name = "fake_avx2_kernel",
    .backend = MPL_BACKEND_CPU,
    .layout = "none",
    .requires = "avx2",
    .isa = MPL_ISA_AVX2,
    .can_implement = any_config,
    .paths = fake_paths,
    .npaths = 3,
};

static const mpl_path_desc fake_cuda_paths[] = {
    {.name = "fake_cuda_kernel:hopper", .requires = "compute capability 9.0", .min_cc = 90, .max_cc = 90,
     .m_min = 1, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY, .why = "test"},
    {.name = "fake_cuda_kernel:any", .requires = "", .m_min = 1, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY,
     .why = "test"},
};

static const mpl_kernel_desc fake_cuda = {
    .name = "fake_cuda_kernel",
    .backend = MPL_BACKEND_CUDA,
    .layout = "none",
    .requires = "compute capability 8.0",
    .min_cc = 80,
    .can_implement = any_config,
    .paths = fake_cuda_paths,
    .npaths = 2,
};

static mpl_plan fake_plan(uint32_t enabled, int forced, int64_t k) {
    mpl_plan p;
    memset(&p, 0, sizeof p);
    p.kernel = &fake_cpu;
    p.enabled = enabled;
    p.forced_path = forced;
    mpl_config c;
    mpl_config_init(&c, k, 64);
    for (int i = 0; i < 3; i++) {
        p.m_min[i] = fake_paths[i].m_min;
        p.m_max[i] = fake_paths[i].m_max;
        if (fake_paths[i].m_range) fake_paths[i].m_range(&c, &p.platform, &p.m_min[i], &p.m_max[i]);
    }
    return p;
}

/* First enabled path whose default range holds m; else the first enabled whose limit allows m. */
static void plan_rule(void **state) {
    (void)state;
    mpl_plan p = fake_plan(7, -1, 256);
    assert_int_equal(mpl_plan_path(&p, 0), -1);
    assert_int_equal(mpl_plan_path(&p, 1), 0);
    assert_int_equal(mpl_plan_path(&p, 4), 0);
    assert_int_equal(mpl_plan_path(&p, 5), 1);
    assert_int_equal(mpl_plan_path(&p, 100), 1);
    assert_int_equal(mpl_plan_path(&p, 1000), 2); /* past b's range (and limit): c, the fallback */
    p = fake_plan(7, -1, 4096); /* m_range: a serves m <= 2 at this K */
    assert_int_equal(mpl_plan_path(&p, 2), 0);
    assert_int_equal(mpl_plan_path(&p, 3), 2);
    assert_int_equal(mpl_plan_path(&p, 5), 1);
    p = fake_plan(5, -1, 256); /* b not allowed: c serves what b would */
    assert_int_equal(mpl_plan_path(&p, 5), 2);
    p = fake_plan(2, -1, 256); /* only b: it runs m = 2 (outside its range, inside its limit), not m = 101 */
    assert_int_equal(mpl_plan_path(&p, 2), 1);
    assert_int_equal(mpl_plan_path(&p, 100), 1);
    assert_int_equal(mpl_plan_path(&p, 101), -1);
    p = fake_plan(1, -1, 256); /* only a: limit 16 */
    assert_int_equal(mpl_plan_path(&p, 16), 0);
    assert_int_equal(mpl_plan_path(&p, 17), -1);
    p = fake_plan(1u << 1, 1, 256); /* forced b: every m up to its limit, whatever the ranges */
    assert_int_equal(mpl_plan_path(&p, 1), 1);
    assert_int_equal(mpl_plan_path(&p, 100), 1);
    assert_int_equal(mpl_plan_path(&p, 101), -1);
    p = fake_plan(0, -1, 256);
    assert_int_equal(mpl_plan_path(&p, 1), -1);
}

static void path_check_order(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 256, 64);
    mpl_platform p = {.isa = MPL_ISA_AVX2, .cpu_threads = 1};
    char msg[256];
    assert_int_equal(mpl_path_check(&fake_cpu, 0, &c, &p, msg, sizeof msg), MPL_REASON_OK);
    /* the path's own ISA bits, named by the path */
    assert_int_equal(mpl_path_check(&fake_cpu, 1, &c, &p, msg, sizeof msg), MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(msg, "fake_avx2_kernel:b"));
    assert_non_null(strstr(msg, "missing: avx512f"));
    p.isa |= MPL_ISA_AVX512F;
    assert_int_equal(mpl_path_check(&fake_cpu, 1, &c, &p, msg, sizeof msg), MPL_REASON_OK);
    /* the path's can_implement, passed through */
    c.act = MPL_ACT_F32;
    assert_int_equal(mpl_path_check(&fake_cpu, 2, &c, &p, msg, sizeof msg), MPL_REASON_ACT_TYPE);
    assert_non_null(strstr(msg, "path c takes"));
    /* disabled by the full path name comes first, even without the ISA */
    p.isa = MPL_ISA_AVX2;
    setenv("MPL_DISABLED_KERNELS", "other, fake_avx2_kernel:b ,x", 1);
    assert_int_equal(mpl_path_check(&fake_cpu, 1, &c, &p, msg, sizeof msg), MPL_REASON_DISABLED);
    assert_non_null(strstr(msg, "fake_avx2_kernel:b disabled by MPL_DISABLED_KERNELS"));
    assert_int_equal(mpl_path_check(&fake_cpu, 0, &c, &p, msg, sizeof msg), MPL_REASON_OK);
    /* the kernel stands while one path passes, and falls with the first path's reason when none does */
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_OK);
    setenv("MPL_DISABLED_KERNELS", "fake_avx2_kernel:a,fake_avx2_kernel:b", 1);
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_DISABLED);
    assert_non_null(strstr(msg, "no path of fake_avx2_kernel can run it"));
    assert_non_null(strstr(msg, "fake_avx2_kernel:a disabled"));
    unsetenv("MPL_DISABLED_KERNELS");
    /* a CUDA path's compute-capability range, after the kernel's floor */
    mpl_platform g = {.cuda_devices = 1, .cuda_cc = 80};
    assert_int_equal(mpl_kernel_check(&fake_cuda, &c, &g, 0, msg, sizeof msg), MPL_REASON_OK);
    assert_int_equal(mpl_path_check(&fake_cuda, 0, &c, &g, msg, sizeof msg), MPL_REASON_DEVICE);
    assert_non_null(strstr(msg, "exactly 9.0"));
    assert_non_null(strstr(msg, "8.0"));
    assert_int_equal(mpl_path_check(&fake_cuda, 1, &c, &g, msg, sizeof msg), MPL_REASON_OK);
    g.cuda_cc = 90;
    assert_int_equal(mpl_path_check(&fake_cuda, 0, &c, &g, msg, sizeof msg), MPL_REASON_OK);
    g.cuda_cc = 100;
    assert_int_equal(mpl_path_check(&fake_cuda, 0, &c, &g, msg, sizeof msg), MPL_REASON_DEVICE);
}

/* ---------- through the public API, on the real registry ---------- */

static mpl_checkpoint_tensors encode_random(const mpl_config *c, tu_weights *w) {
    tu_rng r;
    tu_rng_init(&r, 7);
    assert_int_equal(tu_weights_random(w, c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(w, MPL_LAYOUT_CT, &ck), MPL_OK);
    return ck;
}

static void force_and_disable(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 128, 32);
    c.group_size = 64;
    tu_weights w;
    mpl_checkpoint_tensors ck = encode_random(&c, &w);
    mpl_options o;
    mpl_options_init(&o);
    mpl_layer *l = NULL;
    o.kernel = "ref:scalar";
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_OK);
    assert_string_equal(mpl_layer_kernel(l), "ref");
    assert_string_equal(mpl_layer_path(l, 1), "ref:scalar");
    assert_string_equal(mpl_layer_path(l, 100000), "ref:scalar");
    assert_null(mpl_layer_path(l, 0));
    assert_null(mpl_layer_path(NULL, 1));
    mpl_layer_destroy(l);
    /* unknown path of a known kernel: the message lists its paths */
    o.kernel = "ref:nope";
    l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_INVALID_ARGUMENT);
    assert_null(l);
    assert_non_null(strstr(mpl_last_error(), "unknown path 'ref:nope'"));
    assert_non_null(strstr(mpl_last_error(), "ref:scalar"));
    o.kernel = "nokernel:scalar";
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "unknown kernel"));
    /* the chooser's answer without a layer */
    const char *path = NULL;
    o.kernel = "ref:scalar";
    assert_int_equal(mpl_choose_path(&c, &o, 3, &path), MPL_OK);
    assert_string_equal(path, "ref:scalar");
    o.kernel = NULL;
    assert_int_equal(mpl_choose_path(&c, &o, 3, &path), MPL_OK);
    assert_non_null(path);
    /* the default layer's path is the one mpl_choose_path names, for several m */
    assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_OK);
    for (int64_t m = 1; m <= 64; m *= 2) {
        assert_int_equal(mpl_choose_path(&c, NULL, m, &path), MPL_OK);
        assert_string_equal(mpl_layer_path(l, m), path);
        const char *k = mpl_layer_kernel(l);
        assert_int_equal(strncmp(path, k, strlen(k)), 0);
    }
    mpl_layer_destroy(l);
    /* disabling ref's only path refuses ref (reason DISABLED); with no ISA nothing else runs */
    fake_platform = *mpl_platform_current();
    fake_platform.isa = 0;
    mpl_platform_override(&fake_platform);
    setenv("MPL_DISABLED_KERNELS", "ref:scalar", 1);
    mpl_verdict v;
    assert_int_equal(mpl_check(&c, NULL, "ref:scalar", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_DISABLED);
    assert_int_equal(mpl_check(&c, NULL, "ref", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_DISABLED);
    assert_non_null(strstr(v.message, "no path of ref"));
    assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_ERR_UNSUPPORTED);
    assert_non_null(strstr(mpl_last_error(), "ref:scalar disabled"));
    unsetenv("MPL_DISABLED_KERNELS");
    assert_int_equal(mpl_check(&c, NULL, "ref:scalar", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_OK);
    assert_string_equal(v.message, "");
    assert_int_equal(v.m_min, 1);
    assert_true(v.m_max == INT64_MAX);
    /* the platform alone */
    assert_int_equal(mpl_check(NULL, NULL, "ref:scalar", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_OK);
    assert_int_equal(mpl_check(NULL, NULL, "no_such", &v), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_check(&c, NULL, NULL, &v), MPL_ERR_INVALID_ARGUMENT);
    mpl_platform_override(NULL);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* Every path of every CPU kernel this host can run, forced by name, against ref (test_x86_* hold the
 * full edge matrices; this is the registry's promise that every row is reachable and correct). */
static void every_cpu_path_verified(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 5, 33};
    int ran = 0;
    for (int i = 0; i < mpl_kernel_count(); i++) {
        mpl_kernel_info ki;
        mpl_kernel_get(i, &ki);
        if (strcmp(ki.backend, "cpu") != 0) continue;
        for (int j = 0; j < ki.paths; j++) {
            mpl_path_info pi;
            mpl_path_get(i, j, &pi);
            for (int mode = 0; mode < 2; mode++) {
                mpl_config c;
                mpl_config_init(&c, 256, 72);
                c.group_size = 128;
                c.act = MPL_ACT_BF16;
                c.mode = (mpl_mode)mode;
                mpl_verdict v;
                assert_int_equal(mpl_check(&c, NULL, pi.name, &v), MPL_OK);
                if (v.reason != MPL_REASON_OK) {
                    if (v.reason == MPL_REASON_ISA_MISSING) /* the host lacks it: say so, as a skip */
                        fprintf(stderr, "SKIP %s: %s\n", pi.name, v.message);
                    continue;
                }
                for (size_t q = 0; q < sizeof ms / sizeof ms[0]; q++) {
                    if (ms[q] > pi.m_limit) continue;
                    tu_check_opts to;
                    tu_check_opts_init(&to);
                    tu_result r = tu_check_kernel_ex(pi.name, &c, ms[q], tu_seed(0x9a7 + (uint64_t)q), &to);
                    if (r != TU_PASS) fail_msg("%s at m = %lld: result %d", pi.name, (long long)ms[q], (int)r);
                    ran++;
                }
            }
        }
    }
    assert_true(ran >= 3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(path_tables, reset),
        cmocka_unit_test_teardown(plan_rule, reset),
        cmocka_unit_test_teardown(path_check_order, reset),
        cmocka_unit_test_teardown(force_and_disable, reset),
        cmocka_unit_test_teardown(every_cpu_path_verified, reset),
    };
    return cmocka_run_group_tests(tests, reset, reset);
}
