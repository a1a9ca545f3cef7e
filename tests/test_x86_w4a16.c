/*
 * test_x86_w4a16.c -- every path of x86_avx512_w4a16 and x86_avx2_w4a16 against ref and the
 * float64 oracle, through the public API only for running them: each path is forced by name
 * (mpl_options.kernel = "x86_avx512_w4a16:prefill-amx"), and each kernel also runs with its own
 * choice of path by m.
 *
 * Targets (read from the registry with mpl_kernel_get / mpl_path_get): every path of both kernels,
 * then each kernel unforced. A target this host cannot run (mpl_check: ISA missing) is skipped with
 * the chooser's message; a path that does not take a config (prefill-amx and prefill-bf16 take bf16
 * activations only) is counted as not applicable. tu_check_kernel_ex checks that a forced path is
 * the one mpl_layer_path reports for that m.
 *
 * Every case goes through tu_check_kernel_ex (tests/support): random weights, x and bias; the
 * kernel applied twice (bit-identical, guard bytes intact); its output and ref's against the
 * float64 oracle with tu_tolerance() -- the fp32 bound gamma_(K+G+2) * sum|x*w*s| (any
 * summation order or blocking; the kernels accumulate x*(stored - zero) per group in fp32 and
 * fold the scale once per group, as ref, so only the order differs) plus half an ulp of the
 * activation type -- and, on exact data (small-integer x, power-of-two scales), bit-identical
 * to ref. (The avx512 3-bit decode adds some products as two exact parts whose magnitudes sum
 * to up to 7 |x*w| (w = -1 in the field split over two nibbles), and the avx512 f32 decode with zero
 * points adds x*stored and x*(-zero) as the two parts of x*w (magnitudes up to (stored + zero) |x|, where
 * |w| may be 0): its bound on paper is wider than the tolerance for those terms; the measured errors stay
 * within it, which is what is checked. The 4-bit decode's zero parts are summed in the same order as
 * its stored parts, so a group of w = 0 still gives exactly 0 there.)
 *
 * Matrix: weight types (uint4b8, uint4 + zero points, int4; and in `widths` the 8-, 3- and 2-bit
 * types, symmetric and with zero points, on every path of both kernels) x activations (bf16, f16, f32) x
 * every group size that is a multiple of 16 and divides K=384 (and -1) x act-order; M in
 * {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 64, 513} (row tiles: decode 4 (AVX2: runs of 4, then 1, 2
 * or 3), AVX2 prefill 6 in chunks of 96, AVX-512 prefill 6, AMX 16/32); N tails around the
 * 16/64-channel blocks; K tails (multiples of 8 that are not of 16 or 32, group -1 and 16);
 * split-K decode (fewer 64-channel blocks than threads); prefill rows past one chunk on 2-3
 * threads; tensor-parallel sizes (K = 1408, N = 7392); all three scale dtypes; groups longer than
 * a prefill segment (`long_groups`: sums carried across segments, one scale fold per group).
 * Also: refusal reasons of kernels and paths, the default path for m on faked CPUs (the
 * platform hook fakes a CPU for the chooser only: no kernel code runs on it) and on this host,
 * the chooser's preference and the ISA cap, and pack/unpack round trips for every width.
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
#include "decode/decode.h"
#include "kernels/x86/x86_isa.h"
#include "layouts/x86_w4a16.h"
#include "support/testutil.h"

static const char *const K512 = "x86_avx512_w4a16";
static const char *const K2 = "x86_avx2_w4a16";

static uint64_t g_seed;
static uint64_t g_case;

/* ---- targets: every path, then each kernel's own choice ---- */

typedef struct {
    char name[64];
    int is_path;
    int runnable; /* this host can run it (mpl_check on the platform alone) */
    int64_t pass, na, fail;
} target;

static target g_targets[16];
static int g_ntargets;

static void add_target(const char *name, int is_path) {
    assert_true(g_ntargets < (int)(sizeof g_targets / sizeof g_targets[0]));
    target *t = &g_targets[g_ntargets++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->is_path = is_path;
    mpl_verdict v;
    assert_int_equal(mpl_check(NULL, NULL, name, &v), MPL_OK);
    t->runnable = v.reason == MPL_REASON_OK;
    if (!t->runnable) printf("# SKIP %s on this host: %s: %s\n", name, mpl_reason_name(v.reason), v.message);
}

static int setup(void **state) {
    (void)state;
    g_seed = tu_seed(0x77a416u);
    printf("seed 0x%llx (set MPL_TEST_SEED to repeat)\n", (unsigned long long)g_seed);
    const char *kernels[] = {K512, K2};
    g_ntargets = 0;
    for (int k = 0; k < 2; k++) {
        int found = 0;
        for (int i = 0; i < mpl_kernel_count(); i++) {
            mpl_kernel_info ki;
            assert_int_equal(mpl_kernel_get(i, &ki), MPL_OK);
            if (strcmp(ki.name, kernels[k]) != 0) continue;
            found = 1;
            assert_true(ki.paths >= 2);
            for (int j = 0; j < ki.paths; j++) {
                mpl_path_info pi;
                assert_int_equal(mpl_path_get(i, j, &pi), MPL_OK);
                add_target(pi.name, 1);
            }
        }
        assert_true(found);
        add_target(kernels[k], 0);
    }
    return 0;
}

static void reset_counts(void) {
    for (int i = 0; i < g_ntargets; i++) g_targets[i].pass = g_targets[i].na = g_targets[i].fail = 0;
}

/* One config and m on every target this host runs and that takes the config. */
static void run_targets(const mpl_config *cfg, int64_t m, const tu_check_opts *o) {
    mpl_platform_override(NULL); /* this host's CPU, even after a failed test that faked one */
    for (int i = 0; i < g_ntargets; i++) {
        target *t = &g_targets[i];
        if (!t->runnable) continue;
        mpl_verdict v;
        assert_int_equal(mpl_check(cfg, NULL, t->name, &v), MPL_OK);
        if (v.reason == MPL_REASON_ACT_TYPE) { /* a bf16 path and another activation type */
            t->na++;
            continue;
        }
        if (v.reason == MPL_REASON_WEIGHT_TYPE && strchr(t->name, ':')) {
            /* a path of one width (decode-bf16: 4-bit) and another width its kernel takes */
            char kname[64];
            snprintf(kname, sizeof kname, "%.*s", (int)(strchr(t->name, ':') - t->name), t->name);
            mpl_verdict kv;
            assert_int_equal(mpl_check(cfg, NULL, kname, &kv), MPL_OK);
            if (kv.reason == MPL_REASON_OK) {
                t->na++;
                continue;
            }
        }
        uint64_t seed = tu_case_seed(g_seed, g_case++);
        tu_result r = v.reason == MPL_REASON_OK ? tu_check_kernel_ex(t->name, cfg, m, seed, o) : TU_REFUSED;
        if (r == TU_PASS) {
            t->pass++;
        } else {
            char cs[160];
            fprintf(stderr, "FAIL %s m=%lld %s seed=0x%llx: %s%s\n", t->name, (long long)m,
                    tu_cfg_str(cfg, cs, sizeof cs), (unsigned long long)seed,
                    r == TU_REFUSED ? "refused: " : "mismatch (above)", r == TU_REFUSED ? v.message : "");
            t->fail++;
        }
    }
}

static void report(const char *what) {
    int64_t fail = 0;
    printf("%s:\n", what);
    for (int i = 0; i < g_ntargets; i++) {
        const target *t = &g_targets[i];
        if (!t->runnable)
            printf("  %-32s skipped (this host lacks its ISA)\n", t->name);
        else
            printf("  %-32s %lld passed, %lld not applicable, %lld failed\n", t->name, (long long)t->pass,
                   (long long)t->na, (long long)t->fail);
        fail += t->fail;
    }
    reset_counts();
    assert_int_equal(fail, 0);
}

/* ---- the matrix ---- */

static const mpl_wtype wtypes[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4, MPL_WTYPE_INT4};
static const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};

static void cfg_set(mpl_config *c, int64_t k, int64_t n, mpl_wtype wt, mpl_act act, int64_t group, int act_order) {
    mpl_config_init(c, k, n);
    c->wtype = wt;
    c->zero_points = wt == MPL_WTYPE_UINT4 || wt == MPL_WTYPE_UINT8 || wt == MPL_WTYPE_UINT3 || wt == MPL_WTYPE_UINT2;
    c->act = act;
    c->group_size = group;
    c->act_order = act_order;
}

/* Types x activations x every group size of K=384 x act-order, M in {1, 5, 33}, N = 80 (a tail). */
static void types_groups(void **state) {
    (void)state;
    static const int64_t groups[] = {-1, 16, 32, 48, 64, 96, 128, 192, 384};
    static const int64_t ms[] = {1, 5, 33};
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
                    run_targets(&c, ms[(w + a + g) % 3], &o);
                }
    report("types x activations x groups x act-order");
}

/* M across every row tile edge, on a shape with an N tail. */
static void m_edges(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 64, 513};
    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        mpl_config c;
        tu_check_opts o;
        tu_check_opts_init(&o);
        o.quiet = 1;
        cfg_set(&c, 128, 72, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 32, 0);
        run_targets(&c, ms[i], &o);
        cfg_set(&c, 96, 72, MPL_WTYPE_UINT4, MPL_ACT_BF16, 48, 1); /* group 48: AMX k-step 16 */
        o.data = TU_DATA_EXACT;
        run_targets(&c, ms[i], &o);
        cfg_set(&c, 96, 72, MPL_WTYPE_UINT4, MPL_ACT_F16, 48, 1);
        run_targets(&c, ms[i], &o);
    }
    report("m edges");
}

/* N tails around the 16- and 64-channel blocks; K tails (multiples of 8 only). */
static void shape_tails(void **state) {
    (void)state;
    static const int64_t ns[] = {1, 15, 16, 17, 63, 64, 65, 127, 129};
    static const int64_t ks[] = {8, 16, 24, 40, 72, 136, 520};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; j < sizeof ks / sizeof ks[0]; j++) {
            mpl_config c;
            tu_check_opts o;
            tu_check_opts_init(&o);
            o.quiet = 1;
            int64_t group = (ks[j] % 16 == 0 && (i + j) % 2) ? 16 : -1;
            cfg_set(&c, ks[j], ns[i], wtypes[(i + j) % 3], acts[(i + 2 * j) % 3], group, 0);
            run_targets(&c, (int64_t)(1 + (i + j) % 3 * 8), &o);
        }
    report("N and K tails");
}

/* Decode over runs of blocks (the avx512 decode takes 4 blocks at one row, 2 at two rows): N of
 * 4, 5, 7 and 8 blocks (whole runs and every remainder), every weight type and scale dtype. */
static void decode_runs(void **state) {
    (void)state;
    static const int64_t ns[] = {256, 257, 449, 512};
    static const mpl_dtype sdt[] = {MPL_DTYPE_BF16, MPL_DTYPE_F16, MPL_DTYPE_F32};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        for (size_t w = 0; w < 3; w++)
            for (size_t d = 0; d < 3; d++) {
                mpl_config c;
                tu_check_opts o;
                tu_check_opts_init(&o);
                o.quiet = 1;
                o.threads = 1 + (int)((i + d) % 2);
                o.scale_dtype = sdt[d];
                o.data = (w + d) % 2 ? TU_DATA_EXACT : TU_DATA_RANDOM;
                o.bias = (int)(i % 2);
                cfg_set(&c, 256, ns[i], wtypes[w], acts[(i + w) % 3], d == 2 ? -1 : 64, 0);
                run_targets(&c, 1 + (int64_t)((i + w + d) % 3), &o);
            }
    report("decode runs of blocks");
}

/* Split-K decode (fewer 64-channel blocks than threads, or not a multiple), threads 1..3. */
static void threads_split_k(void **state) {
    (void)state;
    static const int64_t ns[] = {64, 192, 20};
    static const int64_t groups[] = {-1, 16, 128};
    for (int threads = 1; threads <= 3; threads++)
        for (size_t i = 0; i < 3; i++)
            for (size_t g = 0; g < 3; g++) {
                mpl_config c;
                tu_check_opts o;
                tu_check_opts_init(&o);
                o.quiet = 1;
                o.threads = threads;
                cfg_set(&c, 1024, ns[i], wtypes[(i + g) % 3], acts[g], groups[g], 0);
                if (groups[g] == -1) c.k = 1032; /* not a multiple of 16: the split lands mid-chunk-row */
                run_targets(&c, 1 + (int64_t)(i + g) % 4, &o);
            }
    report("threads and split-K");
}

/* Prefill over several threads with more rows than one row chunk (the avx2 prefill packs x in
 * chunks of 96 rows, the work items are (chunk, block) pairs claimed by whichever thread is free):
 * few blocks (the threads share a block's chunks), an N tail, rows one past a chunk and a tile. */
static void threads_row_chunks(void **state) {
    (void)state;
    static const int64_t ns[] = {64, 72, 200};
    static const int64_t ms[] = {97, 200};
    for (int threads = 2; threads <= 3; threads++)
        for (size_t i = 0; i < 3; i++)
            for (size_t j = 0; j < 2; j++) {
                mpl_config c;
                tu_check_opts o;
                tu_check_opts_init(&o);
                o.quiet = 1;
                o.threads = threads;
                o.data = (i + j) % 2 ? TU_DATA_EXACT : TU_DATA_RANDOM;
                cfg_set(&c, 256, ns[i], wtypes[(i + j) % 3], acts[(i + threads) % 3], (i + j) % 2 ? 64 : -1, (int)j);
                if (c.group_size == -1) c.act_order = 0;
                run_targets(&c, ms[j], &o);
            }
    report("threads and row chunks");
}

/* Decode over row chunks (decode-bf16 goes in chunks of rows whose bf16 x fills 512 KiB once x exceeds
 * 1 MiB): K = 4160 (8320-byte rows: chunks of 60 rows), m = 130 (60, 60, 10) and 200 (60, 60, 60, 20),
 * 1 and 2 threads, an N tail, zero points and act-order; every path runs it (the others as usual). */
static void decode_row_chunks(void **state) {
    (void)state;
    static const int64_t ms[] = {130, 200};
    for (int threads = 1; threads <= 2; threads++)
        for (size_t i = 0; i < 3; i++) {
            mpl_config c;
            tu_check_opts o;
            tu_check_opts_init(&o);
            o.quiet = 1;
            o.threads = threads;
            o.data = i == 1 ? TU_DATA_EXACT : TU_DATA_RANDOM;
            cfg_set(&c, 4160, i == 2 ? 72 : 64, wtypes[i], MPL_ACT_BF16, 64, (int)(i == 1));
            run_targets(&c, ms[(i + (size_t)threads) % 2], &o);
        }
    report("decode row chunks");
}

/* Prefill over row chunks where x of 128 rows overflows half of L2 (K = 4160: prefill-amx takes chunks of 512
 * rows, prefill-bf16 and prefill-f32 chunks of 128, the avx2 prefill its fixed chunks): m = 600 (512 + 88, 4 x 128
 * + 88), 4- and 8-bit, 1 and 2 threads, zero points; a chunk's rows stored at the wrong offset, or a chunk missed,
 * fails it. */
static void prefill_row_chunks(void **state) {
    (void)state;
    for (int i = 0; i < 2; i++) {
        mpl_config c;
        tu_check_opts o;
        tu_check_opts_init(&o);
        o.quiet = 1;
        o.threads = 1 + i;
        o.data = i ? TU_DATA_EXACT : TU_DATA_RANDOM;
        cfg_set(&c, 4160, 72, i ? MPL_WTYPE_UINT8 : MPL_WTYPE_UINT4B8, MPL_ACT_BF16, i ? 64 : 320, 0);
        run_targets(&c, 600, &o);
    }
    report("prefill row chunks");
}

/* Tensor-parallel sizes that are not multiples of 128 channels, and the default config. */
static void odd_tp_shapes(void **state) {
    (void)state;
    mpl_config c;
    tu_check_opts o;
    tu_check_opts_init(&o);
    o.quiet = 1;
    cfg_set(&c, 1408, 96, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 128, 0);
    run_targets(&c, 3, &o);
    cfg_set(&c, 128, 7392, MPL_WTYPE_UINT4, MPL_ACT_BF16, 64, 1);
    run_targets(&c, 2, &o);
    cfg_set(&c, 10944 / 8, 40, MPL_WTYPE_INT4, MPL_ACT_F16, -1, 0);
    run_targets(&c, 7, &o);
    report("tensor-parallel shapes");
}

/* The 8-, 3- and 2-bit layouts (symmetric and with zero points) on every path that takes them:
 * activations x group sizes (-1, 16, 32, 128 where they divide K) x act-order x M across the decode
 * runs (1-4, then 1-3 more) and prefill tiles (6, chunks of 96), N with a tail. K = 256 (a multiple
 * of every width's packing, 32 for 3-bit); every other case on exact data (bit-identical to ref). */
static const mpl_wtype wide_types[] = {MPL_WTYPE_UINT8B128, MPL_WTYPE_UINT8, MPL_WTYPE_UINT3B4,
                                       MPL_WTYPE_UINT3,     MPL_WTYPE_UINT2B2, MPL_WTYPE_UINT2};
static void widths(void **state) {
    (void)state;
    static const int64_t groups[] = {-1, 16, 32, 128};
    static const int64_t ms[] = {1, 2, 3, 4, 5, 7, 13, 97};
    for (size_t w = 0; w < sizeof wide_types / sizeof wide_types[0]; w++)
        for (size_t a = 0; a < 3; a++)
            for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++)
                for (int ao = 0; ao < 2; ao++) {
                    if (ao && groups[g] == -1) continue;
                    mpl_config c;
                    cfg_set(&c, 256, 80 + 16 * (int64_t)(w % 3), wide_types[w], acts[a], groups[g], ao);
                    tu_check_opts o;
                    tu_check_opts_init(&o);
                    o.quiet = 1;
                    o.data = (g_case % 2 == 0) ? TU_DATA_EXACT : TU_DATA_RANDOM;
                    o.scale_dtype = (g % 3 == 0) ? MPL_DTYPE_BF16 : (g % 3 == 1) ? MPL_DTYPE_F16 : MPL_DTYPE_F32;
                    o.bias = (int)((g + a) % 2);
                    o.threads = 1 + (int)((w + g) % 2);
                    for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
                        if ((i + w + a + g + (size_t)ao) % 2 == 0 || ms[i] <= 4) run_targets(&c, ms[i], &o);
                }
    report("8-, 3- and 2-bit types x activations x groups x act-order x M");
}

/* The wider widths at decode over long K (a group -1 of 4096 inputs streams through the one-row
 * kernel's prefetch) and split-K (fewer blocks than threads). */
static void widths_long_k(void **state) {
    (void)state;
    for (size_t w = 0; w < sizeof wide_types / sizeof wide_types[0]; w++)
        for (int threads = 1; threads <= 3; threads += 2) {
            mpl_config c;
            tu_check_opts o;
            tu_check_opts_init(&o);
            o.quiet = 1;
            o.threads = threads;
            o.data = w % 2 ? TU_DATA_EXACT : TU_DATA_RANDOM;
            cfg_set(&c, 4096, 72, wide_types[w], acts[w % 3], threads == 1 ? -1 : 128, 0);
            run_targets(&c, 1, &o);
            run_targets(&c, 3, &o);
        }
    report("wider widths: long K and split-K");
}

/* Groups longer than a prefill segment (f32 panel 128 inputs, bf16 and AMX panels 256): the group's
 * fp32 sums are carried from segment to segment and the scale folds once per group. Group sizes
 * 144 (f32 carries, bf16/AMX do not; AMX k-step 16), 272 (all carry; AMX k-step 16, a 16-input last
 * segment), 512 and -1 of K = 1000 (segments ending off 32; 992 for the 2- and 3-bit types); every
 * width; M across the row tiles (6, 16) and past one tile of every path. Exact data is
 * bit-identical to ref (tu_check_kernel_ex), so a lost or doubled segment fails; random data checks
 * the bound. (Folding the scale per segment instead of per group is exact on TU_DATA_EXACT and
 * within the bound on random data: no data kind of tests/support tells the two apart.) */
static const mpl_wtype long_group_types[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4,   MPL_WTYPE_INT4,
                                             MPL_WTYPE_UINT8B128, MPL_WTYPE_UINT3, MPL_WTYPE_UINT2B2};
static void long_groups(void **state) {
    (void)state;
    static const struct {
        int64_t k, group;
    } shapes[] = {{576, 144}, {544, 272}, {1024, 512}, {1000, -1}};
    static const int64_t ms[] = {2, 7, 17, 40};
    for (size_t w = 0; w < sizeof long_group_types / sizeof long_group_types[0]; w++)
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
            for (int data = 0; data < 2; data++) {
                mpl_config c;
                int64_t k = shapes[sh].k; /* K = 1000 where the type's K multiple allows it, else 992 */
                if (k % mpl_wtype_k_multiple(long_group_types[w]) != 0) k -= k % 32;
                cfg_set(&c, k, 80, long_group_types[w], acts[(w + sh) % 3], shapes[sh].group,
                        shapes[sh].group > 0 && (w + (size_t)data) % 2);
                tu_check_opts o;
                tu_check_opts_init(&o);
                o.quiet = 1;
                o.data = data ? TU_DATA_EXACT : TU_DATA_RANDOM;
                o.scale_dtype = sh % 2 ? MPL_DTYPE_BF16 : MPL_DTYPE_F32;
                o.bias = (int)(w % 2);
                o.threads = 1 + (int)(sh % 2);
                for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
                    if ((i + w + sh + (size_t)data) % 2 == 0) run_targets(&c, ms[i], &o);
                if (c.act != MPL_ACT_BF16) { /* the bf16 paths as well, on every shape */
                    c.act = MPL_ACT_BF16;
                    run_targets(&c, ms[(w + sh) % 4], &o);
                }
            }
    report("groups longer than a prefill segment x widths x M");
}

/* ---- refusals ---- */

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
        /* Every width of the layout: both kernels take them all. */
        static const mpl_wtype all_types[] = {MPL_WTYPE_UINT8B128, MPL_WTYPE_UINT8, MPL_WTYPE_UINT3B4,
                                              MPL_WTYPE_UINT3,     MPL_WTYPE_UINT2B2, MPL_WTYPE_UINT2};
        for (size_t t = 0; t < sizeof all_types / sizeof all_types[0]; t++) {
            mpl_config_init(&c, 128, 64);
            c.wtype = all_types[t];
            c.zero_points = mpl_wtype_needs_zeros(all_types[t]);
            assert_int_equal(verdict(ks[i], &c, msg, sizeof msg), MPL_REASON_OK);
        }
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

/* A faked CPU's maker: vendor and CPUID family (the AMD switch points differ between Zen 4 and Zen 5). */
typedef struct {
    mpl_cpu_vendor vendor;
    int family;
} fake_id;

static void fake_cpu_of(uint32_t isa, fake_id id) {
    static mpl_platform p;
    mpl_platform_override(NULL);
    p = *mpl_platform_current();
    p.isa = isa;
    p.cpu_vendor = id.vendor;
    p.cpu_family = id.family;
    mpl_platform_override(&p);
}

static void fake_cpu(uint32_t isa) {
    mpl_platform_override(NULL);
    const mpl_platform *h = mpl_platform_current();
    fake_cpu_of(isa, (fake_id){h->cpu_vendor, h->cpu_family});
}

static mpl_reason path_verdict(const char *name, const mpl_config *c, mpl_verdict *v) {
    assert_int_equal(mpl_check(c, NULL, name, v), MPL_OK);
    return v->reason;
}

/* Each path's own rule (activation type) and ISA level, with messages that state the value and the
 * rule; forcing a path the CPU cannot run is MPL_ERR_NO_HARDWARE, one that refuses the config
 * MPL_ERR_UNSUPPORTED. Faked CPUs: only the chooser runs, no kernel code. */
static void path_refusals(void **state) {
    (void)state;
    const uint32_t all = MPL_ISA_SSE42 | MPL_X86_LEVEL_AMX;
    mpl_verdict v;
    mpl_config c;
    cfg_set(&c, 256, 64, MPL_WTYPE_UINT4B8, MPL_ACT_F16, 128, 0);
    fake_cpu(all);
    const char *bf16_paths[] = {"x86_avx512_w4a16:prefill-amx", "x86_avx512_w4a16:prefill-bf16"};
    for (int i = 0; i < 2; i++) {
        for (int a = 1; a < 3; a++) {
            c.act = acts[a];
            assert_int_equal(path_verdict(bf16_paths[i], &c, &v), MPL_REASON_ACT_TYPE);
            assert_non_null(strstr(v.message, mpl_act_name(acts[a])));
            assert_non_null(strstr(v.message, "bf16 activations only"));
            assert_non_null(strstr(v.message, bf16_paths[i]));
        }
        c.act = MPL_ACT_BF16;
        assert_int_equal(path_verdict(bf16_paths[i], &c, &v), MPL_REASON_OK);
    }
    c.act = MPL_ACT_F32;
    assert_int_equal(path_verdict("x86_avx512_w4a16:decode", &c, &v), MPL_REASON_OK);
    assert_int_equal(path_verdict("x86_avx512_w4a16:prefill-f32", &c, &v), MPL_REASON_OK);
    assert_int_equal(path_verdict("x86_avx2_w4a16:decode", &c, &v), MPL_REASON_OK);
    assert_int_equal(path_verdict("x86_avx2_w4a16:prefill", &c, &v), MPL_REASON_OK);

    /* Zen 4: AVX-512 with BF16, no AMX. */
    c.act = MPL_ACT_BF16;
    fake_cpu(all & ~(MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8));
    assert_int_equal(path_verdict("x86_avx512_w4a16:prefill-amx", &c, &v), MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(v.message, "x86_avx512_w4a16:prefill-amx"));
    assert_non_null(strstr(v.message, "amx_tile"));
    assert_int_equal(path_verdict("x86_avx512_w4a16:prefill-bf16", &c, &v), MPL_REASON_OK);
    /* Ice Lake / Skylake-X: the avx512 level alone. */
    fake_cpu(MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX512);
    assert_int_equal(path_verdict("x86_avx512_w4a16:prefill-bf16", &c, &v), MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(v.message, "avx512_bf16"));
    assert_int_equal(path_verdict("x86_avx512_w4a16:prefill-f32", &c, &v), MPL_REASON_OK);
    assert_int_equal(path_verdict(K512, &c, &v), MPL_REASON_OK);
    /* An AVX2 CPU: the whole avx512 kernel, each of its paths too. */
    fake_cpu(MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX2);
    assert_int_equal(path_verdict(K512, &c, &v), MPL_REASON_ISA_MISSING);
    assert_int_equal(path_verdict("x86_avx512_w4a16:decode", &c, &v), MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(v.message, "avx512f"));
    assert_int_equal(path_verdict("x86_avx2_w4a16:prefill", &c, &v), MPL_REASON_OK);

    /* Forcing: the chooser refuses before anything is packed. */
    tu_rng r;
    tu_rng_init(&r, tu_case_seed(g_seed, 7));
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    mpl_options o;
    mpl_options_init(&o);
    mpl_layer *l = NULL;
    fake_cpu(all & ~(MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8));
    o.kernel = "x86_avx512_w4a16:prefill-amx";
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_NO_HARDWARE);
    assert_null(l);
    assert_non_null(strstr(mpl_last_error(), "prefill-amx"));
    fake_cpu(all);
    mpl_config c16 = c;
    c16.act = MPL_ACT_F16;
    o.kernel = "x86_avx512_w4a16:prefill-bf16";
    assert_int_equal(mpl_layer_create(&c16, &ck, &o, &l), MPL_ERR_UNSUPPORTED);
    assert_null(l);
    assert_non_null(strstr(mpl_last_error(), "f16"));
    o.kernel = "x86_avx512_w4a16:prefill";
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_INVALID_ARGUMENT); /* no such path */
    mpl_platform_override(NULL);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* ---- the default path for m ---- */

static const char *chosen_path(const mpl_config *c, int64_t m) {
    const char *path = NULL;
    assert_int_equal(mpl_choose_path(c, NULL, m, &path), MPL_OK);
    assert_non_null(path);
    return path;
}

/* The path mpl_choose_path gives for m = 1..16 and 100 on a faked CPU, against the table in
 * x86_avx512_w4a16.c / x86_avx2_w4a16.c: decode up to `last_decode`, then `prefill`. */
/* On a faked CPU, m = 1..20 and 100: `first` for m <= first_last (none when 0), `decode` to last_decode, then
 * `prefill`; and the paths' default ranges say so. */
static void expect_switch3(uint32_t isa, fake_id cpu, mpl_wtype wt, mpl_act act, const char *first,
                           int64_t first_last, const char *decode, int64_t last_decode, const char *prefill) {
    fake_cpu_of(isa, cpu);
    mpl_config c;
    cfg_set(&c, 4096, 4096, wt, act, 128, 0);
    for (int64_t m = 1; m <= 21; m++) {
        int64_t mm = m == 21 ? 100 : m;
        const char *want = mm <= first_last ? first : mm <= last_decode ? decode : prefill, *got = chosen_path(&c, mm);
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "FAIL isa 0x%x %s %s m=%lld: path %s, want %s\n", (unsigned)isa, mpl_wtype_name(wt),
                    mpl_act_name(act), (long long)mm, got, want);
            fail();
        }
    }
    mpl_verdict v;
    if (first_last) {
        assert_int_equal(mpl_check(&c, NULL, first, &v), MPL_OK);
        assert_int_equal(v.m_min, 1);
        assert_int_equal(v.m_max, first_last);
    }
    assert_int_equal(mpl_check(&c, NULL, decode, &v), MPL_OK);
    assert_int_equal(v.m_min, first_last + 1);
    assert_int_equal(v.m_max, last_decode);
    assert_int_equal(mpl_check(&c, NULL, prefill, &v), MPL_OK);
    assert_int_equal(v.m_min, last_decode + 1);
}

static void expect_switch_w(uint32_t isa, fake_id cpu, mpl_wtype wt, mpl_act act, const char *decode,
                            int64_t last_decode, const char *prefill) {
    expect_switch3(isa, cpu, wt, act, NULL, 0, decode, last_decode, prefill);
}

static void expect_switch(uint32_t isa, fake_id cpu, mpl_act act, const char *decode, int64_t last_decode,
                          const char *prefill) {
    expect_switch_w(isa, cpu, MPL_WTYPE_UINT4B8, act, decode, last_decode, prefill);
}

/* One path for every m (m = 1..20, 100, 10^6) on a faked CPU, with the range 1..any, and `unused` (a prefill
 * path) with an empty default range. */
static void expect_every_m(uint32_t isa, fake_id cpu, mpl_wtype wt, mpl_act act, const char *path,
                           const char *unused) {
    fake_cpu_of(isa, cpu);
    mpl_config c;
    cfg_set(&c, 4096, 4096, wt, act, 128, 0);
    for (int64_t m = 1; m <= 22; m++) {
        int64_t mm = m == 21 ? 100 : m == 22 ? 1000000 : m;
        const char *got = chosen_path(&c, mm);
        if (strcmp(got, path) != 0) {
            fprintf(stderr, "FAIL isa 0x%x %s m=%lld: path %s, want %s\n", (unsigned)isa, mpl_act_name(act),
                    (long long)mm, got, path);
            fail();
        }
    }
    mpl_verdict v;
    assert_int_equal(mpl_check(&c, NULL, path, &v), MPL_OK);
    assert_int_equal(v.m_min, 1);
    assert_true(v.m_max == INT64_MAX);
    assert_int_equal(mpl_check(&c, NULL, unused, &v), MPL_OK);
    assert_true(v.m_min > v.m_max);
}

static void default_paths(void **state) {
    (void)state;
    const uint32_t amx = MPL_ISA_SSE42 | MPL_X86_LEVEL_AMX;
    const uint32_t zen4 = amx & ~(MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8);
    const uint32_t icl = MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX512 | MPL_ISA_AVX512_VNNI;
    const uint32_t avx2 = MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX2;
    const char *dec = "x86_avx512_w4a16:decode";
    const fake_id intel = {MPL_CPU_VENDOR_INTEL, 6}, amd = {MPL_CPU_VENDOR_AMD, 0x19}, zen5 = {MPL_CPU_VENDOR_AMD, 0x1A};
    const fake_id other = {MPL_CPU_VENDOR_OTHER, 0};
    const char *f32 = "x86_avx512_w4a16:prefill-f32";
    /* AMX: the f32 decode to m = 3 at 4 bits, to m = 4 at the other widths, then AMX (EMR VM sweep) */
    const char *amxp = "x86_avx512_w4a16:prefill-amx";
    expect_switch(amx, intel, MPL_ACT_BF16, dec, 3, amxp);
    expect_switch_w(amx, intel, MPL_WTYPE_UINT4, MPL_ACT_BF16, dec, 3, amxp);
    expect_switch_w(amx, intel, MPL_WTYPE_UINT8B128, MPL_ACT_BF16, dec, 4, amxp);
    expect_switch_w(amx, intel, MPL_WTYPE_UINT3, MPL_ACT_BF16, dec, 4, amxp);
    expect_switch_w(amx, intel, MPL_WTYPE_UINT2B2, MPL_ACT_BF16, dec, 4, amxp);
    expect_switch(amx, intel, MPL_ACT_F16, dec, 8, f32);
    /* AMD (and unknown vendors) with AVX512-BF16: the vdpbf16ps decode at every m for bf16 4-bit; the f32
     * vdpbf16ps decode, then the vdpbf16ps prefill, at the other widths (3-bit without zero points: the f32 decode at m = 1) */
    const char *dbf = "x86_avx512_w4a16:decode-bf16", *pbf = "x86_avx512_w4a16:prefill-bf16";
    expect_every_m(zen4, amd, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, dbf, pbf);
    expect_every_m(zen4, amd, MPL_WTYPE_UINT4, MPL_ACT_BF16, dbf, pbf);
    expect_every_m(zen4, amd, MPL_WTYPE_INT4, MPL_ACT_BF16, dbf, pbf);
    expect_switch_w(zen4, amd, MPL_WTYPE_UINT8B128, MPL_ACT_BF16, dbf, 8, pbf);
    expect_switch_w(zen4, amd, MPL_WTYPE_UINT8, MPL_ACT_BF16, dbf, 8, pbf);
    expect_switch3(zen4, amd, MPL_WTYPE_UINT3B4, MPL_ACT_BF16, dec, 1, dbf, 8, pbf);
    expect_switch_w(zen4, amd, MPL_WTYPE_UINT3, MPL_ACT_BF16, dbf, 8, pbf);
    expect_switch_w(zen4, amd, MPL_WTYPE_UINT2B2, MPL_ACT_BF16, dbf, 64, pbf);
    expect_switch_w(zen4, amd, MPL_WTYPE_UINT2, MPL_ACT_BF16, dbf, 16, pbf);
    expect_switch(zen4, amd, MPL_ACT_F32, dec, 8, f32);
    /* Zen 5: the vdpbf16ps prefill from fewer rows (4-bit from m = 33, 2-bit 49, 3-bit 17 / 13 with zero points),
     * the f32 decode at m = 1..2 for 2- and 3-bit zero points (x86_avx512_w4a16.c's machine_switch) */
    expect_switch_w(zen4, zen5, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, dbf, 32, pbf);
    expect_switch_w(zen4, zen5, MPL_WTYPE_UINT4, MPL_ACT_BF16, dbf, 32, pbf);
    expect_switch_w(zen4, zen5, MPL_WTYPE_UINT8B128, MPL_ACT_BF16, dbf, 8, pbf);
    expect_switch_w(zen4, zen5, MPL_WTYPE_UINT2B2, MPL_ACT_BF16, dbf, 48, pbf);
    expect_switch3(zen4, zen5, MPL_WTYPE_UINT2, MPL_ACT_BF16, dec, 2, dbf, 16, pbf);
    expect_switch3(zen4, zen5, MPL_WTYPE_UINT3B4, MPL_ACT_BF16, dec, 1, dbf, 16, pbf);
    expect_switch3(zen4, zen5, MPL_WTYPE_UINT3, MPL_ACT_BF16, dec, 2, dbf, 12, pbf);
    expect_switch(zen4, zen5, MPL_ACT_F32, dec, 8, f32);
    expect_every_m(zen4, other, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, dbf, pbf);
    /* Intel without AMX, with AVX512-BF16 (the zen4 ISA set on an Intel part) or without (icl): the f32 decode,
     * then the f32 prefill, the switch per width and zero points, every activation type */
    for (int b = 0; b < 2; b++) {
        const uint32_t isa = b ? icl : zen4;
        expect_switch(isa, intel, MPL_ACT_BF16, dec, 12, f32);
        expect_switch(isa, intel, MPL_ACT_F16, dec, 12, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_INT4, MPL_ACT_BF16, dec, 12, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT4, MPL_ACT_BF16, dec, 8, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT2B2, MPL_ACT_BF16, dec, 24, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT2, MPL_ACT_F16, dec, 12, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT3B4, MPL_ACT_BF16, dec, 6, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT3, MPL_ACT_F32, dec, 6, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT8B128, MPL_ACT_BF16, dec, 12, f32);
        expect_switch_w(isa, intel, MPL_WTYPE_UINT8, MPL_ACT_F16, dec, 12, f32);
    }
    /* AVX-512 without AVX512-BF16 elsewhere (not swept): the SPR f32 switch */
    expect_switch(icl, amd, MPL_ACT_BF16, dec, 8, f32);
    expect_switch_w(icl, other, MPL_WTYPE_UINT2, MPL_ACT_F16, dec, 8, f32);
    expect_switch(avx2, amd, MPL_ACT_BF16, "x86_avx2_w4a16:decode", 8, "x86_avx2_w4a16:prefill");
    mpl_platform_override(NULL);

    /* This host: a layer reports the path the chooser plans, for every m. */
    for (int a = 0; a < 3; a++) {
        mpl_config c;
        cfg_set(&c, 256, 64, MPL_WTYPE_UINT4B8, acts[a], 128, 0);
        tu_rng r;
        tu_rng_init(&r, tu_case_seed(g_seed, 11 + (uint64_t)a));
        tu_weights w;
        assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
        mpl_checkpoint_tensors ck;
        assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
        mpl_layer *l = NULL;
        assert_int_equal(mpl_layer_create(&c, &ck, NULL, &l), MPL_OK);
        printf("# this host, %s activations: kernel %s;", mpl_act_name(acts[a]), mpl_layer_kernel(l));
        const char *last = "";
        for (int64_t m = 1; m <= 40; m++) {
            const char *lp = mpl_layer_path(l, m);
            if (strncmp(mpl_layer_kernel(l), "x86_", 4) == 0) {
                assert_non_null(lp);
                assert_string_equal(lp, chosen_path(&c, m));
            }
            if (lp && strcmp(lp, last) != 0) printf(" m>=%lld %s", (long long)m, lp);
            if (lp) last = lp;
        }
        printf("\n");
        mpl_layer_destroy(l);
        mpl_checkpoint_tensors_free(&ck);
        tu_weights_free(&w);
    }
}

/* ---- chooser, ISA cap ---- */

static const char *chosen_for(const mpl_config *c) {
    const char *name = NULL;
    mpl_options o;
    mpl_options_init(&o);
    assert_int_equal(mpl_choose(c, &o, &name, NULL, 0, NULL), MPL_OK);
    return name;
}

static int host_has(uint32_t bits) { return (mpl_platform_current()->isa & bits) == bits; }

/* The chooser prefers these kernels to ref wherever they can run; the MPL_MAX_ISA=avx2 cap
 * (modelled with the platform hook: cpu.c keeps only sse4.2/avx2/fma/f16c) picks AVX2. */
static void chooser(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 4096, 4096);
    c.group_size = 128;
    mpl_platform_override(NULL);
    if (host_has(MPL_X86_LEVEL_AVX512))
        assert_string_equal(chosen_for(&c), K512);
    else if (host_has(MPL_X86_LEVEL_AVX2))
        assert_string_equal(chosen_for(&c), K2);
    else
        assert_string_equal(chosen_for(&c), "ref");
    mpl_platform p = *mpl_platform_current();
    p.isa &= MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX2;
    mpl_platform_override(&p);
    assert_string_equal(chosen_for(&c), host_has(MPL_X86_LEVEL_AVX2) ? K2 : "ref");
    c.wtype = MPL_WTYPE_UINT8B128; /* 8-bit: the avx2 kernel (also under an AVX-512 host capped to avx2) */
    assert_string_equal(chosen_for(&c), host_has(MPL_X86_LEVEL_AVX2) ? K2 : "ref");
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
    static const mpl_wtype rt_types[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_UINT4, MPL_WTYPE_INT4,
                                         MPL_WTYPE_UINT8B128, MPL_WTYPE_UINT8, MPL_WTYPE_UINT3B4,
                                         MPL_WTYPE_UINT3, MPL_WTYPE_UINT2B2, MPL_WTYPE_UINT2};
    for (int wi = 0; wi < 9; wi++)
        for (int ao = 0; ao < 2; ao++)
            for (int sd = 0; sd < 3; sd++) {
                mpl_config c;
                cfg_set(&c, 96, 70, rt_types[wi], MPL_ACT_BF16, ao || sd ? 32 : -1, ao);
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
                mpl_x86_w4a16_layout l;
                assert_int_equal(mpl_x86_w4a16_pack(&c, &can, &l), MPL_OK);
                /* The narrowest exact scale format is chosen (f32 scales here are random floats). */
                assert_int_equal(l.scale_fmt, sd == 0   ? MPL_X86_W4A16_SCALE_BF16
                                              : sd == 1 ? MPL_X86_W4A16_SCALE_F16
                                                        : MPL_X86_W4A16_SCALE_F32);
                assert_int_equal(mpl_x86_w4a16_unpack(&l, &back), MPL_OK);
                assert_memory_equal(back.codes, can.codes, (size_t)(c.n * c.k));
                assert_memory_equal(back.scales, can.scales, (size_t)(c.n * can.groups) * sizeof(float));
                if (can.zeros) assert_memory_equal(back.zeros, can.zeros, (size_t)(c.n * can.groups));
                if (can.g_idx) {
                    assert_memory_equal(back.g_idx, can.g_idx, (size_t)c.k * sizeof(int32_t));
                    assert_memory_equal(back.perm, can.perm, (size_t)c.k * sizeof(int32_t));
                }
                /* Spot-check the spec per width (docs/layouts/x86_w4a16.md): channel 0 (and 1), inputs 0..3 of
                 * group 0. */
                const uint8_t *q = mpl_x86_w4a16_group_weights(&l, 0, 0);
                const int bits = mpl_wtype_bits(rt_types[wi]);
                assert_int_equal(l.chunk_bytes, 8 * bits);
                if (!can.g_idx && bits == 8) {
                    assert_int_equal(q[0], can.codes[0]);
                    assert_int_equal(q[1], can.codes[1]);
                    assert_int_equal(q[32], can.codes[2]);
                    assert_int_equal(q[33], can.codes[3]);
                    assert_int_equal(q[2], can.codes[c.k]); /* channel 1, input 0 */
                    assert_int_equal(q[64], can.codes[16 * c.k]); /* chunk 1: channel 16 */
                }
                if (!can.g_idx && bits == 2) {
                    for (int e = 0; e < 4; e++) assert_int_equal((q[0] >> (2 * e)) & 3, can.codes[e]);
                    assert_int_equal(q[1] & 3, can.codes[c.k]);
                }
                if (!can.g_idx && bits == 3) {
                    /* the step's 64 low bytes, then its nibble plane (chunk v's 8 bytes at 64 + 8v: channel
                     * 16v + t in the low nibble of byte t, 16v + 8 + t in the high one); channels 0, 9, 25, 63 */
                    for (int ch = 0; ch < 64 && ch < c.n; ch += ch == 0 ? 9 : ch == 9 ? 16 : 38) {
                        const int v = ch / 16, i = ch % 16;
                        unsigned wd = q[ch] | ((unsigned)(q[64 + 8 * v + (i & 7)] >> (i < 8 ? 0 : 4)) & 15u) << 8;
                        for (int e = 0; e < 4; e++) assert_int_equal((wd >> (3 * e)) & 7, can.codes[ch * c.k + e]);
                    }
                }
                if (!can.g_idx && bits == 4) {
                    uint8_t x8 = rt_types[wi] == MPL_WTYPE_INT4 ? 8 : 0;
                    assert_int_equal(q[0] & 15, can.codes[0] ^ x8);
                    assert_int_equal(q[1] & 15, can.codes[1] ^ x8);
                    assert_int_equal(q[0] >> 4, can.codes[2] ^ x8);
                    assert_int_equal(q[1] >> 4, can.codes[3] ^ x8);
                    assert_int_equal(q[2] & 15, can.codes[c.k] ^ x8); /* channel 1, input 0 */
                }
                mpl_x86_w4a16_free(&l);
                mpl_canonical_free(&back);
                mpl_canonical_free(&can);
                mpl_checkpoint_tensors_free(&ck);
                tu_weights_free(&w);
                cases++;
            }
    printf("layout round trips: %d\n", cases);
}

/* Every step format is a bijection between 256 stored values of `bits` bits and 32 * bits bytes (no
 * spare bit): encode(decode(bytes)) == bytes and decode(encode(values)) == values on random data. */
static void chunk_round_trip(void **state) {
    (void)state;
    static const int widths_[] = {2, 3, 4, 8};
    tu_rng r;
    tu_rng_init(&r, tu_case_seed(g_seed, 3000));
    int cases = 0;
    for (int wi = 0; wi < 4; wi++)
        for (int t = 0; t < 500; t++, cases++) {
            const int bits = widths_[wi];
            /* a whole step: the four chunks of a 3-bit step interleave (low bytes, then the nibble plane) */
            uint8_t sv[4][16][4], back[4][16][4], q[256], q2[256];
            const size_t sb = 32u * (size_t)bits;
            for (int v = 0; v < 4; v++)
                for (int i = 0; i < 16; i++)
                    for (int e = 0; e < 4; e++) sv[v][i][e] = (uint8_t)(tu_rng_next(&r) & ((1u << bits) - 1u));
            memset(q, 0xA5, sizeof q);
            for (int v = 0; v < 4; v++) mpl_x86_w4a16_chunk_encode(bits, v, sv[v], q);
            for (size_t i = sb; i < sizeof q; i++) assert_int_equal(q[i], 0xA5); /* nothing past the step */
            for (int v = 0; v < 4; v++) mpl_x86_w4a16_chunk_decode(bits, v, q, back[v]);
            assert_memory_equal(back, sv, sizeof sv);
            for (size_t i = 0; i < sb; i++) q[i] = (uint8_t)tu_rng_next(&r);
            for (int v = 0; v < 4; v++) mpl_x86_w4a16_chunk_decode(bits, v, q, back[v]);
            for (int v = 0; v < 4; v++) mpl_x86_w4a16_chunk_encode(bits, v, back[v], q2);
            assert_memory_equal(q2, q, sb);
        }
    printf("chunk round trips: %d\n", cases);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(refusals),        cmocka_unit_test(path_refusals), cmocka_unit_test(default_paths),
        cmocka_unit_test(chooser),         cmocka_unit_test(layout_round_trip), cmocka_unit_test(types_groups),
        cmocka_unit_test(m_edges),         cmocka_unit_test(shape_tails),   cmocka_unit_test(decode_runs),
        cmocka_unit_test(threads_split_k), cmocka_unit_test(threads_row_chunks),
        cmocka_unit_test(decode_row_chunks), cmocka_unit_test(prefill_row_chunks), cmocka_unit_test(odd_tp_shapes),
        cmocka_unit_test(widths),          cmocka_unit_test(widths_long_k), cmocka_unit_test(long_groups),
        cmocka_unit_test(chunk_round_trip),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
