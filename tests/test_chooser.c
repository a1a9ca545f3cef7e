/*
 * test_chooser.c -- the kernel registry and chooser: every reason code, MPL_DISABLED_KERNELS,
 * forcing, the fake-platform hook, act-order, and hardware vs parameter statuses.
 *
 * Written against reasons and statuses, not against which x86 kernels exist: they are real
 * kernels with ISA floors (ISA_MISSING on a platform without them). Path rows: test_paths.c. Reasons only a kernel's can_implement produces (GROUP_SIZE, SHAPE, ...) are
 * reached through mpl_kernel_check with a test descriptor, which also pins the order of the
 * chooser's own checks: DISABLED, then the ISA floor, then irregular act-order, then the kernel.
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

#define MAXK 32

static mpl_platform fake_platform;

static void use_platform(uint32_t isa) {
    fake_platform = *mpl_platform_current();
    fake_platform.isa = isa;
    mpl_platform_override(&fake_platform);
}

static int reset(void **state) {
    (void)state;
    unsetenv("MPL_DISABLED_KERNELS");
    mpl_platform_override(NULL);
    return 0;
}

static mpl_config plain_config(void) {
    mpl_config c;
    mpl_config_init(&c, 256, 64);
    c.group_size = 128;
    return c;
}

/* CPU kernel names in table order. */
static int cpu_kernels(const char **names) {
    int n = 0;
    for (int i = 0; i < mpl_kernel_count(); i++) {
        mpl_kernel_info ki;
        assert_int_equal(mpl_kernel_get(i, &ki), MPL_OK);
        if (strcmp(ki.backend, "cpu") == 0) names[n++] = ki.name;
    }
    return n;
}

/* ---------- a test descriptor for mpl_kernel_check ---------- */

static mpl_reason fake_verdict;

static mpl_reason fake_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)c;
    (void)p;
    if (fake_verdict == MPL_REASON_OK) return MPL_REASON_OK;
    return mpl_refuse(msg, cap, fake_verdict, "fake refuses with %s", mpl_reason_name(fake_verdict));
}

static const mpl_kernel_desc fake_cpu = {
    .name = "fake_avx2_kernel",
    .backend = MPL_BACKEND_CPU,
    .layout = "none",
    .requires = "avx2+fma",
    .isa = MPL_ISA_AVX2 | MPL_ISA_FMA,
    .irregular_act_order = false,
    .can_implement = fake_can_implement,
};

static const mpl_kernel_desc fake_cuda = {
    .name = "fake_cuda_kernel",
    .backend = MPL_BACKEND_CUDA,
    .layout = "none",
    .requires = "sm80",
    .isa = MPL_ISA_AMX_TILE, /* ignored: the ISA floor applies to CPU kernels only */
    .min_cc = 80,
    .can_implement = fake_can_implement,
};

static void reason_catalogue(void **state) {
    (void)state;
    static const char *const names[] = {"OK",         "ISA_MISSING", "GROUP_SIZE", "SHAPE",
                                        "ACT_TYPE",   "WEIGHT_TYPE", "ZERO_POINTS", "ACT_ORDER",
                                        "DISABLED",   "DEVICE",      "MODE",       "NOT_BUILT"};
    for (int r = 0; r <= 11; r++) assert_string_equal(mpl_reason_name((mpl_reason)r), names[r]);
    assert_string_equal(mpl_reason_name((mpl_reason)12), "UNKNOWN");
    assert_string_equal(mpl_reason_name((mpl_reason)-1), "UNKNOWN");
}

static void kernel_check_order(void **state) {
    (void)state;
    mpl_config c = plain_config();
    mpl_platform p = {.isa = MPL_ISA_AVX2 | MPL_ISA_FMA, .cpu_threads = 1};
    char msg[256];
    fake_verdict = MPL_REASON_OK;
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_OK);
    /* the ISA floor: the message names what is missing */
    p.isa = 0;
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(msg, "missing: avx2 fma"));
    p.isa = MPL_ISA_AVX2 | MPL_ISA_AVX512F;
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(msg, "missing: fma"));
    assert_non_null(strstr(msg, "avx512f"));
    /* DISABLED comes first, even without the ISA */
    setenv("MPL_DISABLED_KERNELS", "fake_avx2_kernel", 1);
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_DISABLED);
    assert_non_null(strstr(msg, "fake_avx2_kernel"));
    assert_non_null(strstr(msg, "MPL_DISABLED_KERNELS"));
    unsetenv("MPL_DISABLED_KERNELS");
    /* irregular act-order: refused by kernels that do not take it, only when the config has act-order */
    p.isa = MPL_ISA_AVX2 | MPL_ISA_FMA;
    c.act_order = 1;
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 1, msg, sizeof msg), MPL_REASON_ACT_ORDER);
    assert_non_null(strstr(msg, "g_idx"));
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), MPL_REASON_OK);
    c.act_order = 0;
    assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 1, msg, sizeof msg), MPL_REASON_OK);
    assert_int_equal(mpl_kernel_check(mpl_registry_find("ref"), &c, &p, 1, msg, sizeof msg), MPL_REASON_OK);
    /* every other reason is the kernel's own, passed through with its message */
    for (int r = MPL_REASON_GROUP_SIZE; r <= MPL_REASON_NOT_BUILT; r++) {
        fake_verdict = (mpl_reason)r;
        msg[0] = 0;
        assert_int_equal(mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg), r);
        assert_non_null(strstr(msg, mpl_reason_name((mpl_reason)r)));
    }
    /* CUDA kernels: no CPU ISA floor; the device and its compute capability come first */
    p.isa = 0;
    assert_int_equal(mpl_kernel_check(&fake_cuda, &c, &p, 0, msg, sizeof msg), MPL_REASON_DEVICE);
    assert_non_null(strstr(msg, "none found"));
    p.cuda_devices = 1;
    p.cuda_cc = 75;
    assert_int_equal(mpl_kernel_check(&fake_cuda, &c, &p, 0, msg, sizeof msg), MPL_REASON_DEVICE);
    assert_non_null(strstr(msg, "8.0 or newer"));
    assert_non_null(strstr(msg, "7.5"));
    p.cuda_device = 1; /* a device that does not exist */
    p.cuda_cc = 80;
    assert_int_equal(mpl_kernel_check(&fake_cuda, &c, &p, 0, msg, sizeof msg), MPL_REASON_DEVICE);
    assert_non_null(strstr(msg, "does not exist"));
    p.cuda_device = 0;
    fake_verdict = MPL_REASON_DEVICE;
    assert_int_equal(mpl_kernel_check(&fake_cuda, &c, &p, 0, msg, sizeof msg), MPL_REASON_DEVICE);
    fake_verdict = MPL_REASON_OK;
    assert_int_equal(mpl_kernel_check(&fake_cuda, &c, &p, 0, msg, sizeof msg), MPL_REASON_OK);
}

/* On the real platform: entries in table order, the chosen one last with REASON_OK and no
 * message, every refusal before it with a catalogue reason and a message. */
static void real_platform_choice(void **state) {
    (void)state;
    const char *names[MAXK];
    int nk = cpu_kernels(names);
    assert_true(nk >= 1);
    assert_string_equal(names[nk - 1], "ref"); /* reference last */
    static const mpl_wtype types[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4, MPL_WTYPE_INT4, MPL_WTYPE_UINT8B128,
                                      MPL_WTYPE_UINT8};
    for (int t = 0; t < 5; t++)
        for (int mode = 0; mode < 2; mode++)
            for (int a = MPL_ACT_F16; a <= MPL_ACT_F32; a++) {
                mpl_config c = plain_config();
                c.wtype = types[t];
                c.zero_points = tu_wtype_needs_zeros(types[t]);
                c.mode = (mpl_mode)mode;
                c.act = (mpl_act)a;
                c.group_size = (t + a) % 3 == 0 ? -1 : (t + a) % 3 == 1 ? 128 : 64;
                const char *chosen = NULL;
                mpl_choice_entry e[MAXK];
                int count = -1;
                assert_int_equal(mpl_choose(&c, NULL, &chosen, e, MAXK, &count), MPL_OK);
                assert_true(count >= 1 && count <= nk);
                for (int i = 0; i < count; i++) {
                    assert_string_equal(e[i].kernel, names[i]);
                    assert_true(e[i].reason >= MPL_REASON_OK && e[i].reason <= MPL_REASON_NOT_BUILT);
                    if (i < count - 1) {
                        assert_int_not_equal(e[i].reason, MPL_REASON_OK);
                        assert_true(strlen(e[i].message) > 0);
                    }
                }
                assert_int_equal(e[count - 1].reason, MPL_REASON_OK);
                assert_string_equal(e[count - 1].message, "");
                assert_string_equal(chosen, e[count - 1].kernel);
                /* cap limits what is written, not the choice */
                const char *chosen2 = NULL;
                int count2 = -1;
                assert_int_equal(mpl_choose(&c, NULL, &chosen2, e, 1, &count2), MPL_OK);
                assert_int_equal(count2, 1);
                assert_string_equal(chosen2, chosen);
                assert_int_equal(mpl_choose(&c, NULL, &chosen2, NULL, 0, NULL), MPL_OK);
                assert_string_equal(chosen2, chosen);
                assert_int_equal(mpl_choose(&c, NULL, NULL, NULL, 0, NULL), MPL_OK);
            }
}

/* With no ISA at all every x86 kernel refuses for a hardware reason and ref is chosen. */
static void no_isa_chooses_ref(void **state) {
    (void)state;
    use_platform(0);
    int nt;
    const mpl_kernel_desc *const *table = mpl_registry(MPL_BACKEND_CPU, &nt);
    for (int mode = 0; mode < 2; mode++) {
        mpl_config c = plain_config();
        c.mode = (mpl_mode)mode;
        const char *chosen = NULL;
        mpl_choice_entry e[MAXK];
        int count = 0;
        assert_int_equal(mpl_choose(&c, NULL, &chosen, e, MAXK, &count), MPL_OK);
        assert_string_equal(chosen, "ref");
        assert_int_equal(count, nt);
        for (int i = 0; i < count - 1; i++) {
            assert_true(e[i].reason == MPL_REASON_ISA_MISSING || e[i].reason == MPL_REASON_NOT_BUILT);
            if (table[i]->isa != 0) assert_int_equal(e[i].reason, MPL_REASON_ISA_MISSING);
        }
    }
    /* a layer made on that platform runs ref and computes correctly */
    mpl_config c = plain_config();
    c.act = MPL_ACT_F32;
    assert_int_equal(tu_check_kernel_vs_ref("ref", &c, 3, tu_seed(0x150)), TU_PASS);
    tu_rng r;
    tu_rng_init(&r, 1);
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_CT, &ck), MPL_OK);
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_OK);
    assert_string_equal(mpl_layer_kernel(l), "ref");
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

static void disabled_kernels_env(void **state) {
    (void)state;
    const char *names[MAXK];
    int nk = cpu_kernels(names);
    mpl_config c = plain_config();
    mpl_choice_entry e[MAXK];
    const char *chosen;
    int count;
    /* ref disabled on a platform where nothing else can run: no kernel; every name in the message */
    use_platform(0);
    setenv("MPL_DISABLED_KERNELS", "ref", 1);
    mpl_status st = mpl_choose(&c, NULL, &chosen, e, MAXK, &count);
    assert_int_not_equal(st, MPL_OK);
    assert_true(st == MPL_ERR_NO_HARDWARE || st == MPL_ERR_UNSUPPORTED);
    assert_null(chosen);
    assert_int_equal(count, nk);
    assert_int_equal(e[nk - 1].reason, MPL_REASON_DISABLED);
    for (int i = 0; i < nk; i++) assert_non_null(strstr(mpl_last_error(), names[i]));
    assert_non_null(strstr(mpl_last_error(), "DISABLED"));
    /* ... and so does mpl_layer_create, before reading any tensor */
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), st);
    assert_null(l);
    /* every kernel disabled (whitespace around names is trimmed) on the real platform */
    mpl_platform_override(NULL);
    char list[1024] = " ";
    for (int i = 0; i < nk; i++) {
        size_t u = strlen(list);
        snprintf(list + u, sizeof list - u, "%s \t,  ", names[i]);
    }
    setenv("MPL_DISABLED_KERNELS", list, 1);
    st = mpl_choose(&c, NULL, &chosen, e, MAXK, &count);
    assert_true(st == MPL_ERR_NO_HARDWARE || st == MPL_ERR_UNSUPPORTED);
    assert_int_equal(count, nk);
    for (int i = 0; i < nk; i++) {
        assert_int_equal(e[i].reason, MPL_REASON_DISABLED);
        assert_non_null(strstr(mpl_last_error(), names[i]));
    }
    /* near misses do not disable ref; empty entries are ignored */
    static const char *const misses[] = {"", ",,,", "re", "refx", "REF", "ref2", "xref", " r e f ", "ref_"};
    for (size_t i = 0; i < sizeof misses / sizeof misses[0]; i++) {
        setenv("MPL_DISABLED_KERNELS", misses[i], 1);
        use_platform(0);
        assert_int_equal(mpl_choose(&c, NULL, &chosen, e, MAXK, &count), MPL_OK);
        assert_string_equal(chosen, "ref");
    }
    /* a list naming ref among others */
    setenv("MPL_DISABLED_KERNELS", "x86_nothing,\tref\n, other", 1);
    assert_int_not_equal(mpl_choose(&c, NULL, &chosen, e, MAXK, &count), MPL_OK);
    assert_int_equal(e[count - 1].reason, MPL_REASON_DISABLED);
    /* forcing a disabled kernel reports DISABLED */
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = "ref";
    st = mpl_choose(&c, &o, &chosen, e, MAXK, &count);
    assert_int_not_equal(st, MPL_OK);
    assert_int_equal(count, 1);
    assert_int_equal(e[0].reason, MPL_REASON_DISABLED);
    assert_non_null(strstr(mpl_last_error(), "'ref'"));
    assert_non_null(strstr(mpl_last_error(), "DISABLED"));
}

static void forcing(void **state) {
    (void)state;
    mpl_config c = plain_config();
    mpl_options o;
    mpl_options_init(&o);
    const char *chosen = "x";
    mpl_choice_entry e[MAXK];
    int count = -1;
    /* unknown name: invalid argument listing every known kernel */
    o.kernel = "x86_avx9_w4a16";
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, MAXK, &count), MPL_ERR_INVALID_ARGUMENT);
    assert_null(chosen);
    assert_non_null(strstr(mpl_last_error(), "'x86_avx9_w4a16'"));
    for (int i = 0; i < mpl_kernel_count(); i++) {
        mpl_kernel_info ki;
        mpl_kernel_get(i, &ki);
        assert_non_null(strstr(mpl_last_error(), ki.name));
    }
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_INVALID_ARGUMENT);
    /* ref: chosen alone, on any platform */
    o.kernel = "ref";
    for (int isa = 0; isa < 2; isa++) {
        use_platform(isa ? ~0u : 0u);
        assert_int_equal(mpl_choose(&c, &o, &chosen, e, MAXK, &count), MPL_OK);
        assert_string_equal(chosen, "ref");
        assert_int_equal(count, 1);
        assert_int_equal(e[0].reason, MPL_REASON_OK);
    }
    /* "" means choose */
    mpl_platform_override(NULL);
    o.kernel = "";
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, MAXK, &count), MPL_OK);
    /* a kernel that cannot run here: its reason, a hardware status, its name in the message */
    use_platform(0);
    const char *names[MAXK];
    int nk = cpu_kernels(names);
    for (int i = 0; i < nk - 1; i++) {
        o.kernel = names[i];
        mpl_status st = mpl_choose(&c, &o, &chosen, e, MAXK, &count);
        assert_int_equal(st, MPL_ERR_NO_HARDWARE);
        assert_null(chosen);
        assert_int_equal(count, 1);
        assert_true(e[0].reason == MPL_REASON_ISA_MISSING || e[0].reason == MPL_REASON_NOT_BUILT);
        assert_non_null(strstr(mpl_last_error(), names[i]));
        assert_non_null(strstr(mpl_last_error(), mpl_reason_name(e[0].reason)));
        assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_NO_HARDWARE);
        assert_null(l);
    }
    /* a CPU kernel forced for the CUDA device is an argument error */
    mpl_platform_override(NULL);
    o.kernel = "ref";
    o.device = MPL_DEVICE_CUDA;
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, MAXK, &count), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "cpu kernel"));
}

/* Irregular act-order (group sizes differ): only kernels that take it (ref) can run it. A kernel
 * forced onto it is refused for a parameter (MPL_ERR_UNSUPPORTED), not for hardware. */
static void irregular_act_order(void **state) {
    (void)state;
    use_platform(~0u); /* every ISA: nothing refuses for hardware; no layer here packs an x86 kernel */
    mpl_config c = plain_config();
    c.act_order = 1;
    c.act = MPL_ACT_F32;
    int nt;
    const mpl_kernel_desc *const *table = mpl_registry(MPL_BACKEND_CPU, &nt);
    const mpl_kernel_desc *chosen = NULL;
    mpl_choice_entry e[MAXK];
    int count = 0;
    assert_int_equal(mpl_choose_internal(&c, NULL, 1, &chosen, e, MAXK, &count), MPL_OK);
    assert_non_null(chosen);
    assert_true(chosen->irregular_act_order);
    for (int i = 0; i < count - 1; i++)
        if (!table[i]->irregular_act_order) assert_int_equal(e[i].reason, MPL_REASON_ACT_ORDER);
    /* through a layer: irregular g_idx -> ref, correct against the oracle */
    tu_check_opts to;
    tu_check_opts_init(&to);
    to.gidx = TU_GIDX_IRREGULAR;
    assert_int_equal(tu_check_kernel_ex("ref", &c, 2, tu_seed(0x1a0), &to), TU_PASS);
    tu_rng r;
    tu_rng_init(&r, 2);
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_IRREGULAR, TU_DATA_RANDOM, &r), 0);
    assert_true(w.irregular);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_OK);
    assert_string_equal(mpl_layer_kernel(l), "ref");
    mpl_layer_destroy(l);
    mpl_options o;
    mpl_options_init(&o);
    for (int i = 0; i < nt; i++) {
        if (table[i]->irregular_act_order) continue;
        o.kernel = table[i]->name;
        /* the chooser's own check comes before the kernel's: ACT_ORDER whatever the kernel says */
        assert_int_equal(mpl_choose_internal(&c, &o, 1, &chosen, e, MAXK, &count), MPL_ERR_UNSUPPORTED);
        assert_int_equal(count, 1);
        assert_int_equal(e[0].reason, MPL_REASON_ACT_ORDER);
        assert_non_null(strstr(mpl_last_error(), "ACT_ORDER"));
        assert_non_null(strstr(mpl_last_error(), table[i]->name));
        /* through a layer, in both modes: if the kernel takes the static config, the irregular
         * g_idx found while decoding makes create fail with ACT_ORDER */
        for (int mode = 0; mode < 2; mode++) {
            mpl_config cm = c;
            cm.mode = (mpl_mode)mode;
            int takes_config = mpl_choose(&cm, &o, NULL, NULL, 0, NULL) == MPL_OK;
            l = NULL;
            mpl_status st = mpl_layer_create(&cm, &ck, &o, &l);
            assert_int_not_equal(st, MPL_OK);
            assert_null(l);
            if (takes_config) {
                assert_int_equal(st, MPL_ERR_UNSUPPORTED);
                assert_non_null(strstr(mpl_last_error(), "ACT_ORDER"));
            }
        }
    }
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* Hardware (MPL_ERR_NO_HARDWARE) vs parameter (MPL_ERR_UNSUPPORTED) statuses, and the CUDA backend. */
static void hardware_vs_parameter(void **state) {
    (void)state;
    mpl_config c = plain_config();
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    const char *chosen = NULL;
    mpl_choice_entry e[MAXK];
    int count = 0, ncuda = 0;
    for (int i = 0; i < mpl_kernel_count(); i++) {
        mpl_kernel_info ki;
        mpl_kernel_get(i, &ki);
        ncuda += strcmp(ki.backend, "cuda") == 0;
    }
    mpl_status st = mpl_choose(&c, &o, &chosen, e, MAXK, &count);
    if (ncuda == 0) {
        assert_int_equal(st, MPL_ERR_NO_HARDWARE);
        assert_non_null(strstr(mpl_last_error(), "CUDA"));
    } else {
        /* a CUDA build: a GPU runs it, or the refusal is for the device */
        assert_true(st == MPL_OK || st == MPL_ERR_NO_HARDWARE || st == MPL_ERR_UNSUPPORTED);
        if (st != MPL_OK) assert_true(strlen(mpl_last_error()) > 0);
    }
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    mpl_layer *l = NULL;
    if (ncuda == 0) assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_NO_HARDWARE);
    /* statuses are distinct values with distinct strings */
    assert_int_not_equal(MPL_ERR_NO_HARDWARE, MPL_ERR_UNSUPPORTED);
    assert_string_not_equal(mpl_status_string(MPL_ERR_NO_HARDWARE), mpl_status_string(MPL_ERR_UNSUPPORTED));
}

/* Every reason of the catalogue is reachable: through the real chooser where the table allows
 * it, through mpl_kernel_check with the test descriptor for the kernel-specific ones. */
static void every_reason_reachable(void **state) {
    (void)state;
    int seen[12] = {0};
    mpl_config c = plain_config();
    mpl_choice_entry e[MAXK];
    const char *chosen;
    const mpl_kernel_desc *d;
    int count;
    use_platform(0);
    assert_int_equal(mpl_choose(&c, NULL, &chosen, e, MAXK, &count), MPL_OK);
    for (int i = 0; i < count; i++) seen[e[i].reason] = 1;
    setenv("MPL_DISABLED_KERNELS", "ref", 1);
    (void)mpl_choose(&c, NULL, &chosen, e, MAXK, &count);
    for (int i = 0; i < count; i++) seen[e[i].reason] = 1;
    unsetenv("MPL_DISABLED_KERNELS");
    use_platform(~0u);
    c.act_order = 1;
    assert_int_equal(mpl_choose_internal(&c, NULL, 1, &d, e, MAXK, &count), MPL_OK);
    for (int i = 0; i < count; i++) seen[e[i].reason] = 1;
    assert_true(seen[MPL_REASON_OK] && seen[MPL_REASON_DISABLED]);
    if (count > 1) assert_true(seen[MPL_REASON_ACT_ORDER]);
    mpl_platform p = {.isa = 0, .cpu_threads = 1, .cuda_devices = 1, .cuda_cc = 90};
    char msg[256];
    fake_verdict = MPL_REASON_OK;
    seen[mpl_kernel_check(&fake_cpu, &c, &p, 0, msg, sizeof msg)] = 1;
    for (int r = MPL_REASON_GROUP_SIZE; r <= MPL_REASON_NOT_BUILT; r++) {
        fake_verdict = (mpl_reason)r;
        seen[mpl_kernel_check(&fake_cuda, &c, &p, 0, msg, sizeof msg)] = 1;
    }
    for (int r = 0; r < 12; r++)
        if (!seen[r]) fail_msg("reason %s never produced", mpl_reason_name((mpl_reason)r));
}

static void kernel_table(void **state) {
    (void)state;
    int n = mpl_kernel_count(), ncpu = 0, last_cpu = -1;
    assert_true(n >= 1);
    for (int i = 0; i < n; i++) {
        mpl_kernel_info ki;
        assert_int_equal(mpl_kernel_get(i, &ki), MPL_OK);
        assert_non_null(ki.name);
        assert_non_null(ki.layout);
        assert_non_null(ki.requires);
        assert_true(strcmp(ki.backend, "cpu") == 0 || strcmp(ki.backend, "cuda") == 0 || strcmp(ki.backend, "vulkan") == 0);
        if (strcmp(ki.backend, "cpu") == 0) {
            assert_int_equal(last_cpu, i - 1); /* CPU kernels listed first, as one block */
            last_cpu = i;
            ncpu++;
        }
        assert_true(mpl_registry_find(ki.name) != NULL);
        for (int j = 0; j < i; j++) {
            mpl_kernel_info kj;
            mpl_kernel_get(j, &kj);
            assert_string_not_equal(ki.name, kj.name);
        }
    }
    assert_true(ncpu >= 1);
    mpl_kernel_info ki;
    assert_int_equal(mpl_kernel_get(last_cpu, &ki), MPL_OK);
    assert_string_equal(ki.name, "ref");
    assert_string_equal(ki.layout, "canonical");
    assert_int_equal(mpl_kernel_get(-1, &ki), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_kernel_get(n, &ki), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "kernel index"));
    assert_int_equal(mpl_kernel_get(0, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_null(mpl_registry_find("no_such_kernel"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(reason_catalogue, reset),
        cmocka_unit_test_teardown(kernel_check_order, reset),
        cmocka_unit_test_teardown(real_platform_choice, reset),
        cmocka_unit_test_teardown(no_isa_chooses_ref, reset),
        cmocka_unit_test_teardown(disabled_kernels_env, reset),
        cmocka_unit_test_teardown(forcing, reset),
        cmocka_unit_test_teardown(irregular_act_order, reset),
        cmocka_unit_test_teardown(hardware_vs_parameter, reset),
        cmocka_unit_test_teardown(every_reason_reachable, reset),
        cmocka_unit_test_teardown(kernel_table, reset),
    };
    return cmocka_run_group_tests(tests, reset, reset);
}
