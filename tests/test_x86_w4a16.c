/*
 * test_x86_w4a16.c -- x86_avx512_w4a16 and x86_avx2_w4a16 against ref and the float64 oracle,
 * through the public API (mpl_options.kernel forces the kernel).
 *
 * Every case goes through tu_check_kernel_ex (tests/support): random weights, x and bias; the
 * kernel applied twice (bit-identical, guard bytes intact); its output and ref's against the
 * float64 oracle with tu_tolerance() -- the fp32 bound gamma_(K+G+2) * sum|x*w*s| (any
 * summation order or blocking; the kernels accumulate x*(stored - zero) per group in fp32 and
 * fold the scale once per group, as ref, so only the order differs) plus half an ulp of the
 * activation type -- and, on exact data (small-integer x, power-of-two scales), bit-identical
 * to ref.
 *
 * Each AVX-512 case runs in every prefill variant this host can run (AMX tiles, vdpbf16ps,
 * f32 FMA; the platform hook hides AMX and AVX512-BF16 to reach the others) and each case
 * runs forced down the decode path and the prefill path, then with the kernel's own choice.
 *
 * Matrix: weight types (uint4b8, uint4 + zero points, int4) x activations (bf16, f16, f32) x
 * every group size that is a multiple of 16 and divides K=384 (and -1) x act-order; M in
 * {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 64, 513} (row tiles: decode 4, AVX2 prefill 6, AVX-512
 * prefill 6, AMX 32); N tails around the 16/64-channel blocks; K tails (multiples of 8 that
 * are not of 16 or 32, group -1 and 16); split-K decode (fewer 64-channel blocks than
 * threads); tensor-parallel sizes (K = 1408, N = 7392); all three scale dtypes.
 * Also: refusal reasons, the chooser's preference and the ISA cap, and pack/unpack round trips.
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
#include "kernels/x86/w4a16_x86.h"
#include "layouts/x86_w4a16.h"
#include "support/testutil.h"

static const char *const K512 = "x86_avx512_w4a16";
static const char *const K2 = "x86_avx2_w4a16";

typedef struct {
    int64_t pass, skip, fail;
} tally;

static uint64_t g_seed;
static uint64_t g_case;

/* ---- platform variants ---- */

typedef struct {
    const char *kernel;
    const char *name;
    uint32_t hide; /* ISA bits hidden from the kernel via the platform hook */
} variant;

static const variant variants[] = {
    {"x86_avx512_w4a16", "avx512 (AMX prefill where present)", 0},
    {"x86_avx512_w4a16", "avx512 vdpbf16ps prefill", MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8},
    {"x86_avx512_w4a16", "avx512 f32 prefill",
     MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8 | MPL_ISA_AVX512_BF16},
    {"x86_avx2_w4a16", "avx2", 0},
};
#define NVARIANTS ((int)(sizeof variants / sizeof variants[0]))

static mpl_platform g_plat;

/* Returns 0 when the variant is redundant on this host (it hides nothing the host has; a
 * variant hiding AMX and BF16 still runs where only BF16 is present). */
static int set_variant(const variant *v) {
    mpl_platform_override(NULL);
    const mpl_platform *p = mpl_platform_current();
    if (v->hide && !(p->isa & v->hide)) return 0;
    g_plat = *p;
    g_plat.isa &= ~v->hide;
    mpl_platform_override(v->hide ? &g_plat : NULL);
    return 1;
}

static void run_case(tally *t, const char *kernel, const mpl_config *cfg, int64_t m, const tu_check_opts *o) {
    uint64_t seed = tu_case_seed(g_seed, g_case++);
    tu_result r = tu_check_kernel_ex(kernel, cfg, m, seed, o);
    if (r == TU_PASS)
        t->pass++;
    else if (r == TU_SKIP)
        t->skip++;
    else
        t->fail++;
}

/* One config and m on the decode path, the prefill path and the kernel's own choice. */
static void run_paths(tally *t, const char *kernel, const mpl_config *cfg, int64_t m, const tu_check_opts *o) {
    for (int path = 1; path >= 0; path = path == 1 ? 2 : path == 2 ? 0 : -1) {
        mpl_xw_force_path(path);
        run_case(t, kernel, cfg, m, o);
        if (path == 0) break;
    }
    mpl_xw_force_path(0);
}

static void report(const char *what, const tally *t) {
    printf("%s: %lld passed, %lld skipped (host lacks the ISA), %lld failed\n", what, (long long)t->pass,
           (long long)t->skip, (long long)t->fail);
    assert_int_equal(t->fail, 0);
}

static int host_has(uint32_t bits) { return (mpl_platform_current()->isa & bits) == bits; }

/* ---- the matrix ---- */

static const mpl_wtype wtypes[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4, MPL_WTYPE_INT4};
static const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};

static void cfg_set(mpl_config *c, int64_t k, int64_t n, mpl_wtype wt, mpl_act act, int64_t group, int act_order) {
    mpl_config_init(c, k, n);
    c->wtype = wt;
    c->zero_points = wt == MPL_WTYPE_UINT4;
    c->act = act;
    c->group_size = group;
    c->act_order = act_order;
}

/* Types x activations x every group size of K=384 x act-order, M in {1, 5, 33}, N = 80 (a tail). */
static void types_groups(void **state) {
    (void)state;
    tally t = {0};
    static const int64_t groups[] = {-1, 16, 32, 48, 64, 96, 128, 192, 384};
    static const int64_t ms[] = {1, 5, 33};
    for (int vi = 0; vi < NVARIANTS; vi++) {
        if (!set_variant(&variants[vi])) continue;
        for (size_t w = 0; w < 3; w++)
            for (size_t a = 0; a < 3; a++)
                for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
                    for (int ao = 0; ao < 2; ao++) {
                        if (ao && groups[g] == -1) continue;
                        mpl_config c;
                        cfg_set(&c, 384, 80, wtypes[w], acts[a], groups[g], ao);
                        tu_check_opts o;
                        tu_check_opts_init(&o);
                        o.quiet = 1;
                        /* Every third case on exact data: must equal ref bit for bit. */
                        o.data = (g_case % 3 == 0) ? TU_DATA_EXACT : TU_DATA_RANDOM;
                        o.scale_dtype = (g % 3 == 0) ? MPL_DTYPE_BF16 : (g % 3 == 1) ? MPL_DTYPE_F16 : MPL_DTYPE_F32;
                        o.bias = (int)((g + a) % 2);
                        run_paths(&t, variants[vi].kernel, &c, ms[(w + a + g) % 3], &o);
                    }
    }
    mpl_platform_override(NULL);
    report("types x activations x groups x act-order", &t);
}

/* M across every row tile edge, on a shape with an N tail, both paths and the chooser. */
static void m_edges(void **state) {
    (void)state;
    tally t = {0};
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 64, 513};
    for (int vi = 0; vi < NVARIANTS; vi++) {
        if (!set_variant(&variants[vi])) continue;
        for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
            mpl_config c;
            tu_check_opts o;
            tu_check_opts_init(&o);
            o.quiet = 1;
            cfg_set(&c, 128, 72, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 32, 0);
            run_paths(&t, variants[vi].kernel, &c, ms[i], &o);
            cfg_set(&c, 96, 72, MPL_WTYPE_UINT4, MPL_ACT_F16, 48, 1);
            o.data = TU_DATA_EXACT;
            run_paths(&t, variants[vi].kernel, &c, ms[i], &o);
        }
    }
    mpl_platform_override(NULL);
    report("m edges", &t);
}

/* N tails around the 16- and 64-channel blocks; K tails (multiples of 8 only). */
static void shape_tails(void **state) {
    (void)state;
    tally t = {0};
    static const int64_t ns[] = {1, 15, 16, 17, 63, 64, 65, 127, 129};
    static const int64_t ks[] = {8, 16, 24, 40, 72, 136, 520};
    for (int vi = 0; vi < NVARIANTS; vi++) {
        if (!set_variant(&variants[vi])) continue;
        for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
            for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
                mpl_config c;
                tu_check_opts o;
                tu_check_opts_init(&o);
                o.quiet = 1;
                int64_t group = (ks[j] % 16 == 0 && (i + j) % 2) ? 16 : -1;
                cfg_set(&c, ks[j], ns[i], wtypes[(i + j) % 3], acts[(i + 2 * j) % 3], group, 0);
                run_paths(&t, variants[vi].kernel, &c, (int64_t)(1 + (i + j) % 3 * 8), &o);
            }
    }
    mpl_platform_override(NULL);
    report("N and K tails", &t);
}

/* Split-K decode (fewer 64-channel blocks than threads, or not a multiple), threads 1..3. */
static void threads_split_k(void **state) {
    (void)state;
    tally t = {0};
    static const int64_t ns[] = {64, 192, 20};
    static const int64_t groups[] = {-1, 16, 128};
    for (int vi = 0; vi < NVARIANTS; vi++) {
        if (!set_variant(&variants[vi])) continue;
        for (int threads = 1; threads <= 3; threads++)
            for (size_t i = 0; i < 3; i++)
                for (size_t g = 0; g < 3; g++) {
                    mpl_config c;
                    tu_check_opts o;
                    tu_check_opts_init(&o);
                    o.quiet = 1;
                    o.threads = threads;
                    cfg_set(&c, 1024 + 8 * (groups[g] == -1), ns[i], wtypes[(i + g) % 3], acts[g], groups[g], 0);
                    if (groups[g] == -1) c.k = 1032; /* not a multiple of 16: the split lands mid-chunk-row */
                    run_paths(&t, variants[vi].kernel, &c, 1 + (int64_t)(i + g) % 4, &o);
                }
    }
    mpl_platform_override(NULL);
    report("threads and split-K", &t);
}

/* Tensor-parallel sizes that are not multiples of 128 channels, and the default config. */
static void odd_tp_shapes(void **state) {
    (void)state;
    tally t = {0};
    for (int vi = 0; vi < NVARIANTS; vi++) {
        if (!set_variant(&variants[vi])) continue;
        mpl_config c;
        tu_check_opts o;
        tu_check_opts_init(&o);
        o.quiet = 1;
        cfg_set(&c, 1408, 96, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 128, 0);
        run_paths(&t, variants[vi].kernel, &c, 3, &o);
        cfg_set(&c, 128, 7392, MPL_WTYPE_UINT4, MPL_ACT_BF16, 64, 1);
        run_paths(&t, variants[vi].kernel, &c, 2, &o);
        cfg_set(&c, 10944 / 8, 40, MPL_WTYPE_INT4, MPL_ACT_F16, -1, 0);
        run_paths(&t, variants[vi].kernel, &c, 7, &o);
    }
    mpl_platform_override(NULL);
    report("tensor-parallel shapes", &t);
}

/* ---- refusals, chooser, ISA cap ---- */

static mpl_reason verdict(const char *kernel, const mpl_config *c, char *msg, size_t cap) {
    const mpl_kernel_desc *d = mpl_registry_find(kernel);
    assert_non_null(d);
    mpl_platform all = *mpl_platform_current();
    all.isa = 0xffffffffu; /* judge the config, not this host's ISA */
    return mpl_kernel_check(d, c, &all, 0, msg, cap);
}

static void refusals(void **state) {
    (void)state;
    const char *ks[] = {K512, K2};
    for (int i = 0; i < 2; i++) {
        char msg[256];
        mpl_config c;
        mpl_config_init(&c, 128, 64);
        c.mode = MPL_MODE_W4A8;
        assert_int_equal(verdict(ks[i], &c, msg, sizeof msg), MPL_REASON_MODE);
        mpl_config_init(&c, 128, 64);
        c.wtype = MPL_WTYPE_UINT8B128;
        assert_int_equal(verdict(ks[i], &c, msg, sizeof msg), MPL_REASON_WEIGHT_TYPE);
        assert_non_null(strstr(msg, "uint8b128"));
        mpl_config_init(&c, 120, 64);
        c.group_size = 40;
        assert_int_equal(verdict(ks[i], &c, msg, sizeof msg), MPL_REASON_GROUP_SIZE);
        assert_non_null(strstr(msg, "40"));
        assert_non_null(strstr(msg, "multiple of 16"));
        mpl_config_init(&c, 120, 64); /* group -1 on a K that is a multiple of 8 only */
        c.act = MPL_ACT_F32;
        assert_int_equal(verdict(ks[i], &c, msg, sizeof msg), MPL_REASON_OK);
        mpl_config_init(&c, 7392, 1408);
        c.group_size = 16;
        c.wtype = MPL_WTYPE_UINT4;
        c.zero_points = 1;
        c.act_order = 1;
        assert_int_equal(verdict(ks[i], &c, msg, sizeof msg), MPL_REASON_OK);
    }
}

static const char *chosen_for(const mpl_config *c) {
    const char *name = NULL;
    mpl_options o;
    mpl_options_init(&o);
    assert_int_equal(mpl_choose(c, &o, &name, NULL, 0, NULL), MPL_OK);
    return name;
}

/* The chooser prefers these kernels to ref wherever they can run; the MPL_MAX_ISA=avx2 cap
 * (modelled with the platform hook: cpu.c keeps only sse4.2/avx2/fma/f16c) picks AVX2. */
static void chooser(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 4096, 4096);
    c.group_size = 128;
    const uint32_t need512 = MPL_ISA_AVX512F | MPL_ISA_AVX512BW | MPL_ISA_AVX512VL | MPL_ISA_AVX512DQ;
    const uint32_t need2 = MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C;
    mpl_platform_override(NULL);
    if (host_has(need512))
        assert_string_equal(chosen_for(&c), K512);
    else if (host_has(need2))
        assert_string_equal(chosen_for(&c), K2);
    else
        assert_string_equal(chosen_for(&c), "ref");
    mpl_platform p = *mpl_platform_current();
    p.isa &= MPL_ISA_SSE42 | need2;
    mpl_platform_override(&p);
    assert_string_equal(chosen_for(&c), host_has(need2) ? K2 : "ref");
    c.wtype = MPL_WTYPE_UINT8B128; /* 8-bit: only ref */
    assert_string_equal(chosen_for(&c), "ref");
    p.isa = 0;
    mpl_platform_override(&p);
    c.wtype = MPL_WTYPE_UINT4B8;
    assert_string_equal(chosen_for(&c), "ref");
    mpl_platform_override(NULL);
}

/* ---- layout round trip ---- */

static void layout_round_trip(void **state) {
    (void)state;
    int cases = 0;
    for (int wi = 0; wi < 3; wi++)
        for (int ao = 0; ao < 2; ao++)
            for (int sd = 0; sd < 3; sd++) {
                mpl_config c;
                cfg_set(&c, 96, 70, wtypes[wi], MPL_ACT_BF16, ao || sd ? 32 : -1, ao);
                tu_rng r;
                tu_rng_init(&r, tu_case_seed(g_seed, 1000 + (uint64_t)cases));
                tu_weights w;
                mpl_dtype sdt = sd == 0 ? MPL_DTYPE_BF16 : sd == 1 ? MPL_DTYPE_F16 : MPL_DTYPE_F32;
                assert_int_equal(tu_weights_random(&w, &c, sdt, ao ? TU_GIDX_PERMUTED : TU_GIDX_NONE,
                                                   TU_DATA_RANDOM, &r),
                                 0);
                mpl_checkpoint_tensors ck;
                assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ_V2, &ck), MPL_OK);
                mpl_canonical can, back;
                assert_int_equal(mpl_decode_checkpoint(&c, &ck, &can), MPL_OK);
                assert_int_equal(mpl_canonical_resolve_act_order(&can), MPL_OK);
                mpl_xw_layout l;
                assert_int_equal(mpl_xw_pack(&c, &can, &l), MPL_OK);
                /* The narrowest exact scale format is chosen (f32 scales here are random floats). */
                assert_int_equal(l.scale_fmt, sd == 0   ? MPL_XW_SCALE_BF16
                                              : sd == 1 ? MPL_XW_SCALE_F16
                                                        : MPL_XW_SCALE_F32);
                assert_int_equal(mpl_xw_unpack(&l, &back), MPL_OK);
                assert_memory_equal(back.codes, can.codes, (size_t)(c.n * c.k));
                assert_memory_equal(back.scales, can.scales, (size_t)(c.n * can.groups) * sizeof(float));
                if (can.zeros) assert_memory_equal(back.zeros, can.zeros, (size_t)(c.n * can.groups));
                if (can.g_idx) {
                    assert_memory_equal(back.g_idx, can.g_idx, (size_t)c.k * sizeof(int32_t));
                    assert_memory_equal(back.perm, can.perm, (size_t)c.k * sizeof(int32_t));
                }
                /* Spot-check the spec: channel 0, inputs 0..3 of group 0 sit in bytes 0 and 1. */
                if (!can.g_idx) {
                    const uint8_t *q = mpl_xw_group_weights(&l, 0, 0);
                    uint8_t x8 = wtypes[wi] == MPL_WTYPE_INT4 ? 8 : 0;
                    assert_int_equal(q[0] & 15, can.codes[0] ^ x8);
                    assert_int_equal(q[1] & 15, can.codes[1] ^ x8);
                    assert_int_equal(q[0] >> 4, can.codes[2] ^ x8);
                    assert_int_equal(q[1] >> 4, can.codes[3] ^ x8);
                    assert_int_equal(q[2] & 15, can.codes[c.k] ^ x8); /* channel 1, input 0 */
                }
                mpl_xw_free(&l);
                mpl_canonical_free(&back);
                mpl_canonical_free(&can);
                mpl_checkpoint_tensors_free(&ck);
                tu_weights_free(&w);
                cases++;
            }
    printf("layout round trips: %d\n", cases);
}

int main(void) {
    g_seed = tu_seed(0x77a416u);
    printf("seed 0x%llx (set MPL_TEST_SEED to repeat)\n", (unsigned long long)g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals),        cmocka_unit_test(chooser),     cmocka_unit_test(layout_round_trip),
        cmocka_unit_test(types_groups),    cmocka_unit_test(m_edges),     cmocka_unit_test(shape_tails),
        cmocka_unit_test(threads_split_k), cmocka_unit_test(odd_tp_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
