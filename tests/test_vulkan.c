/*
 * test_vulkan.c -- kernels vulkan_w4a16 and vulkan_w4a8 (the same packed layout, other shaders): the layout
 * (pack / unpack round trip, host only), their refusals (platform faked with mpl_platform_override, so these
 * run without a device too), and on a Vulkan device (lavapipe in CI, NVIDIA's driver on the H200:
 * bench/vulkan/h200.sh) every runnable path, forced by name and chosen by default, against the float64 oracle
 * and the reference kernel, with VK_LAYER_KHRONOS_validation on (mpl_vk_test_validation): any validation
 * warning or error fails the case.
 * The vulkan_w4a16 matrix: M tails around the GEMV's 4-row and the tiled GEMM's 64-row tiles, N tails (not multiples of
 * the 8-row and 64-row workgroups), K tails (not multiples of 32), group sizes -1, 16, 48, 64, 128, zero points
 * (uint4), int4, 2- and 3-bit types (uint3b4, uint3, uint2b2, uint2: 4-bit codes), 8-bit (two planes), act-order, f16
 * and bf16, bias on
 * and off, and rows run in several chunks (a small scratch
 * bound, mpl_vk_test_scratch_max). Exact data (small integers, power-of-two scales) must match the rounded
 * oracle and ref bit for bit; random data is held to tu_tolerance() (testutil.c: K + G + 2 fp32 roundings per
 * term; the shaders' longest path is a 16-term half-chunk sum, the two halves' add, the scale product, K/32
 * per-thread sums, the subgroup and cross-subgroup reduction and the bias add, far fewer than K + G + 2 for every
 * K here; the GEMV's x is pre-scaled by powers of two on the host, so its products stay exact).
 * The GEMV also runs at every workgroup shape the H200 benchmark sweeps (gemv_shapes, mpl_vk_test_gemv_shape).
 * Each case also applies twice (bit-identical: determinism) into guard-byte buffers.
 * vulkan_w4a8 (W4A8 mode): M tails 1, 2, 3, 4, 5, 17, 65 on both paths, N and K tails, group sizes -1, 16, 32,
 * 48, 64, 128 (48 and K > 2048 make groups run across the GEMV's 2048-channel segments), zero points, int4,
 * act-order, f16 and bf16, bias on and off, rows with amax == 0, with amax too small for 127/amax, with inf
 * and with NaN, and rows in several chunks. Its integer group sums are exact and its float fold is ref's
 * operations in ref's order (no contraction), so every W4A8 case, random data included, must be bit-identical
 * to ref; the oracle check uses tu_tolerance's W4A8 bound (G + 4 fp32 roundings), exact data bit for bit.
 * Without a Vulkan device (or without the module) the device cases skip with a message.
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
#include "kernels/vulkan/vk_runtime.h"
#include "layouts/vulkan_w4a16.h"
#include "support/testutil.h"

/* ---------- validation messages ---------- */

static int g_messages;
static int g_validation = -1; /* 1: on, 0: not installed, -1: no Vulkan */
static int g_devices;

static void on_message(void *ctx, const char *message) {
    (void)ctx;
    g_messages++;
    fprintf(stderr, "VALIDATION: %s\n", message);
}

static int reset(void **state) {
    (void)state;
    unsetenv("MPL_DISABLED_KERNELS");
    mpl_platform_override(NULL);
    mpl_vk_test_scratch_max(0);
    if (g_devices > 0) mpl_vk_test_gemv_shape(0, 0, 0, 0, 0, 0); /* the default GEMV shape (a failed gemv_shapes) */
    return 0;
}

/* ---------- layout: pack / unpack round trip ---------- */

static void random_canonical(mpl_canonical *w, const mpl_config *c, tu_rng *r) {
    assert_int_equal(mpl_canonical_alloc(w, c), MPL_OK);
    const uint64_t levels = 1u << mpl_wtype_bits(c->wtype);
    for (int64_t i = 0; i < w->n * w->k; i++) w->codes[i] = (uint8_t)tu_rng_below(r, levels);
    for (int64_t i = 0; i < w->n * w->groups; i++) {
        w->scales[i] = (float)tu_rng_uniform(r, -0.1, 0.1); /* full f32: the layout keeps f32 scales */
        if (w->zeros) w->zeros[i] = (uint8_t)tu_rng_below(r, levels);
    }
    if (w->g_idx) {
        for (int64_t i = 0; i < w->k; i++) w->g_idx[i] = (int32_t)(i / w->group_size);
        tu_rng_shuffle_i32(r, w->g_idx, w->k);
        assert_int_equal(mpl_canonical_resolve_act_order(w), MPL_OK);
    }
}

static void layout_round_trip(void **state) {
    (void)state;
    static const struct {
        int64_t k, n, gs;
        mpl_wtype t;
        int act_order;
    } cases[] = {
        {64, 16, -1, MPL_WTYPE_UINT4B8, 0}, {200, 24, -1, MPL_WTYPE_UINT4, 0}, {960, 72, 32, MPL_WTYPE_INT4, 0},
        {768, 200, 64, MPL_WTYPE_UINT4B8, 1}, {1408, 65, 128, MPL_WTYPE_UINT4, 1}, {480, 8, 48, MPL_WTYPE_INT4, 1},
        {16, 1, 16, MPL_WTYPE_UINT4, 0},
        /* 2- and 3-bit as 4-bit codes: stored uint3b4 c + 4, uint2b2 c + 6, uint3 / uint2 c with their zeros */
        {96, 16, 32, MPL_WTYPE_UINT3B4, 0}, {320, 40, 64, MPL_WTYPE_UINT3, 1}, {64, 9, -1, MPL_WTYPE_UINT2B2, 0},
        {256, 72, 16, MPL_WTYPE_UINT2, 1},
        /* 8-bit: two 4-bit planes (2k packed positions, 2G groups, the duplicating perm) */
        {256, 24, 64, MPL_WTYPE_UINT8B128, 0}, {320, 40, -1, MPL_WTYPE_UINT8, 0}, {512, 72, 128, MPL_WTYPE_UINT8, 1},
        {48, 5, 16, MPL_WTYPE_UINT8B128, 1},
    };
    tu_rng r;
    tu_rng_init(&r, tu_seed(0x7a1c));
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        mpl_config c;
        mpl_config_init(&c, cases[ci].k, cases[ci].n);
        c.wtype = cases[ci].t;
        c.zero_points = mpl_wtype_zero_points(cases[ci].t);
        c.group_size = cases[ci].gs;
        c.act_order = cases[ci].act_order;
        mpl_canonical w, back;
        random_canonical(&w, &c, &r);
        mpl_vulkan_w4a16_layout l;
        assert_int_equal(mpl_vulkan_w4a16_pack(&c, &w, &l), MPL_OK);
        /* the spec's sizes and alignment */
        assert_int_equal(l.k_pad % MPL_VULKAN_W4A16_KP, 0);
        assert_int_equal(l.n_pad % MPL_VULKAN_W4A16_NP, 0);
        assert_int_equal(l.scales_off % MPL_VULKAN_W4A16_ALIGN, 0);
        assert_int_equal(l.zeros_off % MPL_VULKAN_W4A16_ALIGN, 0);
        assert_int_equal(l.qweight_bytes, (size_t)(l.n_pad * l.k_pad / 2));
        const int w8 = c.wtype == MPL_WTYPE_UINT8B128 || c.wtype == MPL_WTYPE_UINT8;
        assert_int_equal(l.k, (w8 ? 2 : 1) * c.k);
        assert_int_equal(l.groups, (w8 ? 2 : 1) * w.groups);
        /* nibbles placed by hand from the spec: row n, packed position p, word p / 8, bits 4 (p % 8); 8-bit: the low
         * plane's last position (low nibble) and the high plane's (high nibble) */
        for (int plane = 0; plane < (w8 ? 2 : 1); plane++) {
            int64_t n = c.n - 1, p = plane * c.k + c.k - 1, kk = w.perm ? w.perm[c.k - 1] : c.k - 1;
            const uint32_t *q = (const uint32_t *)(l.image + l.qweight_off);
            unsigned got = (q[(size_t)n * (size_t)(l.k_pad / 8) + (size_t)(p / 8)] >> (4 * (p % 8))) & 15u;
            const unsigned code = w.codes[n * c.k + kk];
            unsigned want = w8 ? (plane ? code >> 4 : code & 15u)
                          : c.wtype == MPL_WTYPE_INT4 ? code ^ 8u : c.wtype == MPL_WTYPE_UINT3B4 ? code + 4u
                          : c.wtype == MPL_WTYPE_UINT2B2 ? code + 6u : code;
            assert_int_equal(got, want);
        }
        if (w8) { /* the high plane's group scale is 16 s, its zero the high nibble (uint8b128: 128 -> 0 and 8) */
            const float *sc = (const float *)(l.image + l.scales_off);
            const int64_t G = w.groups;
            assert_true(sc[(size_t)(c.n - 1) * (size_t)l.groups + (size_t)(2 * G - 1)] == 16.0f * w.scales[(c.n - 1) * G + G - 1]);
            const uint8_t *zp = l.image + l.zeros_off;
            const unsigned z = w.zeros ? w.zeros[(c.n - 1) * G + G - 1] : 128u;
            assert_int_equal(zp[(size_t)(c.n - 1) * (size_t)l.zstride + (size_t)(2 * G - 1)], z >> 4);
            assert_int_equal(zp[(size_t)(c.n - 1) * (size_t)l.zstride + (size_t)(G - 1)], z & 15u);
        }
        assert_int_equal(mpl_vulkan_w4a16_unpack(&l, c.act_order, &back), MPL_OK);
        assert_memory_equal(back.codes, w.codes, (size_t)(c.n * c.k));
        assert_memory_equal(back.scales, w.scales, (size_t)(c.n * w.groups) * sizeof(float));
        if (w.zeros) assert_memory_equal(back.zeros, w.zeros, (size_t)(c.n * w.groups));
        if (w.g_idx) assert_memory_equal(back.g_idx, w.g_idx, (size_t)c.k * sizeof(int32_t));
        mpl_vulkan_w4a16_layout_free(&l);
        mpl_canonical_free(&w);
        mpl_canonical_free(&back);
    }
}

/* ---------- refusals (fake platform) ---------- */

static mpl_reason verdict(const mpl_config *c, const char *name, char *msg, size_t cap) {
    mpl_options o;
    mpl_options_init(&o);
    mpl_verdict v;
    assert_int_equal(mpl_check(c, &o, name, &v), MPL_OK);
    snprintf(msg, cap, "%s", v.message);
    return v.reason;
}

/* A usable Vulkan device 0 with a 128 MiB maxStorageBufferRange, for the chooser only (nothing runs on it). */
static void fake_vulkan_device(mpl_platform *fake) {
    *fake = *mpl_platform_current();
    fake->vulkan_devices = 1;
    fake->vulkan_device = 0;
    fake->vulkan_caps = MPL_VK_CAP_USABLE;
    fake->vulkan_max_range = (uint64_t)1 << 27;
    mpl_platform_override(fake);
}

/* The refusals every Vulkan kernel shares, on a 4096 x 4096 config the kernel takes: a layer over the
 * device's buffer range, an unusable device, no device; *fake is left with no device. */
static void shared_refusals(mpl_config *c, mpl_platform *fake, const char *kernel) {
    char msg[256];
    /* over the buffer range: 16384 x 65536 codes = 512 MiB > 128 MiB */
    c->k = 65536, c->n = 16384;
    assert_int_equal(verdict(c, kernel, msg, sizeof msg), MPL_REASON_SHAPE);
    assert_non_null(strstr(msg, "maxStorageBufferRange"));
    c->k = 4096, c->n = 4096;
    fake->vulkan_caps = 0;
    assert_int_equal(verdict(c, kernel, msg, sizeof msg), MPL_REASON_DEVICE);
    fake->vulkan_devices = 0;
    mpl_reason none = verdict(c, kernel, msg, sizeof msg);
    assert_true(none == (mpl_vulkan_built() ? MPL_REASON_DEVICE : MPL_REASON_NOT_BUILT));
}

static void refusals(void **state) {
    (void)state;
    static mpl_platform fake;
    fake_vulkan_device(&fake);
    mpl_config c;
    mpl_config_init(&c, 4096, 4096);
    c.group_size = 128;
    char msg[256];
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_OK);
    assert_int_equal(verdict(&c, "vulkan_w4a16:gemv", msg, sizeof msg), MPL_REASON_OK);
    assert_int_equal(verdict(&c, "vulkan_w4a16:tiled", msg, sizeof msg), MPL_REASON_OK);
    c.group_size = 24;
    c.k = 4080;
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_GROUP_SIZE);
    assert_non_null(strstr(msg, "24"));
    c.group_size = 128, c.k = 4096;
    c.act = MPL_ACT_F32;
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_ACT_TYPE);
    c.act = MPL_ACT_BF16;
    c.wtype = MPL_WTYPE_UINT8B128; /* 8-bit: two planes, k a multiple of 16 */
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_OK);
    c.k = 4104, c.group_size = -1;
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_SHAPE);
    assert_non_null(strstr(msg, "4104"));
    c.k = 4096, c.group_size = 128;
    c.wtype = MPL_WTYPE_UINT4B8;
    c.mode = MPL_MODE_W4A8;
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_MODE);
    c.mode = MPL_MODE_W4A16;
    /* devices: a missing index (then the refusals every Vulkan kernel shares) */
    fake.vulkan_device = 3;
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_DEVICE);
    fake.vulkan_device = 0;
    shared_refusals(&c, &fake, "vulkan_w4a16");
    /* the chooser: no device is NO_HARDWARE, not UNSUPPORTED */
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_VULKAN;
    const char *chosen = NULL;
    assert_int_equal(mpl_choose(&c, &o, &chosen, NULL, 0, NULL), MPL_ERR_NO_HARDWARE);
    fake.vulkan_devices = 1;
    fake.vulkan_caps = MPL_VK_CAP_USABLE;
    assert_int_equal(mpl_choose(&c, &o, &chosen, NULL, 0, NULL), MPL_OK);
    assert_string_equal(chosen, "vulkan_w4a16");
    /* the default path by m: gemv for 1..4, tiled from 5 */
    const char *path = NULL;
    assert_int_equal(mpl_choose_path(&c, &o, 4, &path), MPL_OK);
    assert_string_equal(path, "vulkan_w4a16:gemv");
    assert_int_equal(mpl_choose_path(&c, &o, 5, &path), MPL_OK);
    assert_string_equal(path, "vulkan_w4a16:tiled");
    /* a Vulkan kernel is not a CPU kernel */
    mpl_options_init(&o);
    o.kernel = "vulkan_w4a16";
    assert_int_equal(mpl_choose(&c, &o, &chosen, NULL, 0, NULL), MPL_ERR_INVALID_ARGUMENT);
    mpl_platform_override(NULL);
}

static void refusals_w4a8(void **state) {
    (void)state;
    static mpl_platform fake;
    fake_vulkan_device(&fake);
    mpl_config c;
    mpl_config_init(&c, 4096, 4096);
    c.group_size = 128;
    c.mode = MPL_MODE_W4A8;
    char msg[256];
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_OK);
    assert_int_equal(verdict(&c, "vulkan_w4a8:gemv", msg, sizeof msg), MPL_REASON_OK);
    assert_int_equal(verdict(&c, "vulkan_w4a8:tiled", msg, sizeof msg), MPL_REASON_OK);
    /* vulkan_w4a16 sends W4A8 configs here, and this kernel sends W4A16 configs there */
    assert_int_equal(verdict(&c, "vulkan_w4a16", msg, sizeof msg), MPL_REASON_MODE);
    assert_non_null(strstr(msg, "vulkan_w4a8"));
    c.mode = MPL_MODE_W4A16;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_MODE);
    assert_non_null(strstr(msg, "vulkan_w4a16"));
    c.mode = MPL_MODE_W4A8;
    c.group_size = 24;
    c.k = 4080;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_GROUP_SIZE);
    assert_non_null(strstr(msg, "24"));
    c.group_size = 16, c.k = 4096;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_OK);
    c.group_size = 128;
    c.act = MPL_ACT_F32;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_ACT_TYPE);
    assert_non_null(strstr(msg, "f32"));
    c.act = MPL_ACT_F16;
    c.wtype = MPL_WTYPE_UINT8B128;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_WEIGHT_TYPE);
    c.wtype = MPL_WTYPE_UINT2B2; /* 2- and 3-bit: as 4-bit codes */
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_OK);
    c.wtype = MPL_WTYPE_UINT3, c.zero_points = 1;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_OK);
    c.wtype = MPL_WTYPE_UINT4;
    c.zero_points = 1;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_OK);
    c.wtype = MPL_WTYPE_INT4;
    c.zero_points = 0;
    assert_int_equal(verdict(&c, "vulkan_w4a8", msg, sizeof msg), MPL_REASON_OK);
    c.wtype = MPL_WTYPE_UINT4B8;
    shared_refusals(&c, &fake, "vulkan_w4a8");
    /* the chooser picks this kernel for W4A8 on a Vulkan device, gemv for m 1..4 and tiled from 5 */
    fake.vulkan_devices = 1;
    fake.vulkan_caps = MPL_VK_CAP_USABLE;
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_VULKAN;
    const char *chosen = NULL, *path = NULL;
    assert_int_equal(mpl_choose(&c, &o, &chosen, NULL, 0, NULL), MPL_OK);
    assert_string_equal(chosen, "vulkan_w4a8");
    assert_int_equal(mpl_choose_path(&c, &o, 4, &path), MPL_OK);
    assert_string_equal(path, "vulkan_w4a8:gemv");
    assert_int_equal(mpl_choose_path(&c, &o, 5, &path), MPL_OK);
    assert_string_equal(path, "vulkan_w4a8:tiled");
    mpl_platform_override(NULL);
}

/* ---------- device cases ---------- */

typedef struct vcase {
    int64_t k, n, gs;
    mpl_wtype t;
    int act_order;
    mpl_act act;
    mpl_mode mode; /* W4A16 (0) unless given: vulkan_w4a16; W4A8: vulkan_w4a8 */
} vcase;

static const vcase g_cases[] = {
    {64, 64, -1, MPL_WTYPE_UINT4B8, 0, MPL_ACT_F16, MPL_MODE_W4A16},
    {200, 72, -1, MPL_WTYPE_UINT4, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    {256, 100, 16, MPL_WTYPE_INT4, 0, MPL_ACT_F16, MPL_MODE_W4A16},
    {480, 136, 48, MPL_WTYPE_UINT4, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    {768, 200, 64, MPL_WTYPE_UINT4B8, 1, MPL_ACT_F16, MPL_MODE_W4A16},
    {1024, 130, 128, MPL_WTYPE_UINT4, 1, MPL_ACT_BF16, MPL_MODE_W4A16},
    {2048, 24, 128, MPL_WTYPE_INT4, 1, MPL_ACT_BF16, MPL_MODE_W4A16},
    {4096, 65, 128, MPL_WTYPE_UINT4B8, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    /* 2- and 3-bit layers (4-bit codes): symmetric and with zero points, act-order, N and K tails */
    {480, 72, 32, MPL_WTYPE_UINT3B4, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    {640, 130, 64, MPL_WTYPE_UINT3, 1, MPL_ACT_F16, MPL_MODE_W4A16},
    {208, 40, 16, MPL_WTYPE_UINT2B2, 0, MPL_ACT_F16, MPL_MODE_W4A16},
    {1024, 24, -1, MPL_WTYPE_UINT2, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    /* 8-bit layers (two planes): symmetric and with zero points, act-order, group -1, N tails, a K tail (336) */
    {512, 72, 64, MPL_WTYPE_UINT8B128, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    {336, 130, 48, MPL_WTYPE_UINT8, 1, MPL_ACT_F16, MPL_MODE_W4A16},
    {2048, 24, -1, MPL_WTYPE_UINT8, 0, MPL_ACT_BF16, MPL_MODE_W4A16},
    {1024, 65, 128, MPL_WTYPE_UINT8B128, 1, MPL_ACT_F16, MPL_MODE_W4A16},
};

/* W4A8: N tails (not multiples of 8 or 64), K tails (200, 2400: not multiples of 32), every group size
 * dividing K, groups that run across the GEMV's 2048-channel segments (-1 and 48 at K > 2048; 16 at K = 2064
 * puts 129 groups in two segments), zero points, int4, act-order, f16 and bf16. */
static const vcase g_w4a8_cases[] = {
    {64, 64, -1, MPL_WTYPE_UINT4B8, 0, MPL_ACT_F16, MPL_MODE_W4A8},
    {200, 72, -1, MPL_WTYPE_UINT4, 0, MPL_ACT_BF16, MPL_MODE_W4A8},
    {256, 100, 16, MPL_WTYPE_INT4, 0, MPL_ACT_F16, MPL_MODE_W4A8},
    {480, 136, 32, MPL_WTYPE_UINT4, 0, MPL_ACT_BF16, MPL_MODE_W4A8},
    {768, 200, 64, MPL_WTYPE_UINT4B8, 1, MPL_ACT_F16, MPL_MODE_W4A8},
    {1024, 130, 128, MPL_WTYPE_UINT4, 1, MPL_ACT_BF16, MPL_MODE_W4A8},
    {2064, 24, 16, MPL_WTYPE_INT4, 1, MPL_ACT_BF16, MPL_MODE_W4A8},
    {2400, 33, -1, MPL_WTYPE_UINT4, 0, MPL_ACT_F16, MPL_MODE_W4A8},
    {4128, 40, 48, MPL_WTYPE_UINT4, 1, MPL_ACT_F16, MPL_MODE_W4A8},
    {4096, 65, 128, MPL_WTYPE_UINT4B8, 0, MPL_ACT_BF16, MPL_MODE_W4A8},
    {480, 72, 32, MPL_WTYPE_UINT3B4, 1, MPL_ACT_F16, MPL_MODE_W4A8},
    {208, 40, -1, MPL_WTYPE_UINT2, 0, MPL_ACT_BF16, MPL_MODE_W4A8},
};

/* Special rows of x (W4A8): row i % 5 == 1 all zero (amax = 0: y = bias), 2 one +-inf, 3 one NaN (NaN rows),
 * 4 (bf16 only: f16 cannot hold it) every value +-1e-38, so 127 / amax is inf (a zero row, mplinear.h). */
static void special_rows(const mpl_config *c, int64_t m, void *x, float *xf) {
    for (int64_t i = 0; i < m; i++) {
        const int kind = (int)(i % 5);
        const int64_t at = (i * 37) % c->k, row = i * c->k;
        if (kind == 1 || (kind == 4 && c->act == MPL_ACT_BF16))
            for (int64_t kk = 0; kk < c->k; kk++)
                tu_act_store(c->act, x, row + kk, kind == 1 ? 0.0 : (kk & 1) ? -1e-38 : 1e-38);
        if (kind == 2) tu_act_store(c->act, x, row + at, (i & 8) ? -INFINITY : INFINITY);
        if (kind == 3) tu_act_store(c->act, x, row + at, NAN);
        for (int64_t kk = 0; kk < c->k; kk++) xf[row + kk] = (float)tu_act_load(c->act, x, row + kk);
    }
}

static int device_ready(void) {
    if (g_devices > 0) return 1;
    char note[128];
    mpl_vulkan_devices(note, sizeof note);
    fprintf(stderr, "SKIP: no Vulkan device (%s)\n", note);
    return 0;
}

/* One case; returns 1 on pass. path NULL: the default choice for m. special: special_rows() in x (W4A8). */
static int run_case(const vcase *d, int64_t m, const char *path, int bias_on, tu_data_kind dk, int special,
                    uint64_t seed) {
    const int w4a8 = d->mode == MPL_MODE_W4A8;
    const char *kernel = w4a8 ? "vulkan_w4a8" : "vulkan_w4a16";
    mpl_config c;
    mpl_config_init(&c, d->k, d->n);
    c.wtype = d->t;
    c.zero_points = mpl_wtype_zero_points(d->t);
    c.group_size = d->gs;
    c.act_order = d->act_order;
    c.act = d->act;
    c.mode = d->mode;
    char cs[160], what[300];
    tu_cfg_str(&c, cs, sizeof cs);
    snprintf(what, sizeof what, "%s%s m=%lld %s%s%s%s seed=0x%llx", path ? path : kernel, path ? "" : " (default)",
             (long long)m, cs, bias_on ? " bias" : "", dk == TU_DATA_EXACT ? " exact" : "",
             special ? " special-rows" : "", (unsigned long long)seed);
    int ok = 0;
    const int before = g_messages;
    tu_weights w;
    memset(&w, 0, sizeof w);
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    mpl_layer *kl = NULL, *rl = NULL;
    void *x = NULL, *b = NULL;
    float *xf = NULL, *bf = NULL;
    double *want = NULL, *mag = NULL, *tol = NULL;
    tu_buf y1, y2, yr;
    memset(&y1, 0, sizeof y1), memset(&y2, 0, sizeof y2), memset(&yr, 0, sizeof yr);
    tu_rng r;
    tu_rng_init(&r, seed);
    if (tu_weights_random(&w, &c, MPL_DTYPE_F16, c.act_order ? TU_GIDX_PERMUTED : TU_GIDX_NONE, dk, &r)) goto done;
    if (tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck) != MPL_OK) {
        fprintf(stderr, "FAIL %s: encode: %s\n", what, mpl_last_error());
        goto done;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_VULKAN;
    o.kernel = path;
    mpl_status st = mpl_layer_create(&c, &ck, &o, &kl);
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s: create: %s: %s\n", what, mpl_status_string(st), mpl_last_error());
        goto done;
    }
    char runs_default[64];
    snprintf(runs_default, sizeof runs_default, "%s:%s", kernel, m <= 4 ? "gemv" : "tiled");
    const char *runs = path ? path : runs_default;
    const char *says = mpl_layer_path(kl, m);
    if (!says || strcmp(says, runs) != 0) {
        fprintf(stderr, "FAIL %s: mpl_layer_path = %s, expected %s\n", what, says ? says : "NULL", runs);
        goto done;
    }
    if (mpl_layer_weight_rounding(kl, m) != 0.0) {
        fprintf(stderr, "FAIL %s: weight rounding %g, expected 0 (exact contract)\n", what, mpl_layer_weight_rounding(kl, m));
        goto done;
    }
    mpl_options_init(&o);
    o.kernel = "ref";
    if (mpl_layer_create(&c, &ck, &o, &rl) != MPL_OK) {
        fprintf(stderr, "FAIL %s: create ref: %s\n", what, mpl_last_error());
        goto done;
    }
    const size_t as = tu_act_size(c.act), ny = (size_t)(m * c.n);
    x = malloc((size_t)(m * c.k) * as);
    xf = malloc((size_t)(m * c.k) * sizeof(float));
    b = malloc((size_t)c.n * as);
    bf = malloc((size_t)c.n * sizeof(float));
    want = malloc(ny * sizeof(double));
    mag = malloc(ny * sizeof(double));
    tol = malloc(ny * sizeof(double));
    if (!x || !xf || !b || !bf || !want || !mag || !tol || !tu_buf_alloc(&y1, ny * as, 0xFF) ||
        !tu_buf_alloc(&y2, ny * as, 0xFF) || !tu_buf_alloc(&yr, ny * as, 0xFF)) {
        fprintf(stderr, "FAIL %s: out of memory\n", what);
        goto done;
    }
    tu_act_random(&r, &c, m, dk, x, xf);
    if (special) special_rows(&c, m, x, xf);
    tu_bias_random(&r, c.act, c.n, dk, b, bf);
    tu_oracle(&w, m, xf, bias_on ? bf : NULL, want, mag);
    for (size_t i = 0; i < ny; i++) tol[i] = tu_tolerance(&c, want[i], mag[i], 0.0);
    const void *bias = bias_on ? b : NULL;
    if ((st = mpl_layer_apply(kl, m, x, bias, y1.p)) != MPL_OK || (st = mpl_layer_apply(kl, m, x, bias, y2.p)) != MPL_OK ||
        (st = mpl_layer_apply(rl, m, x, bias, yr.p)) != MPL_OK) {
        fprintf(stderr, "FAIL %s: apply: %s\n", what, mpl_last_error());
        goto done;
    }
    ok = tu_buf_guards_ok(&y1, what) & tu_buf_guards_ok(&y2, what) & tu_buf_guards_ok(&yr, "ref");
    if (memcmp(y1.p, y2.p, ny * as) != 0) {
        fprintf(stderr, "FAIL %s: two applies differ (not deterministic)\n", what);
        ok = 0;
    }
    const double *t = dk == TU_DATA_EXACT ? NULL : tol;
    if (tu_compare(what, seed, &c, m, y1.p, want, t)) ok = 0;
    if (tu_compare("ref", seed, &c, m, yr.p, want, t)) ok = 0;
    if ((dk == TU_DATA_EXACT || w4a8) && memcmp(y1.p, yr.p, ny * as) != 0) {
        for (size_t i = 0; i < ny * as; i++)
            if (((const unsigned char *)y1.p)[i] != ((const unsigned char *)yr.p)[i]) {
                size_t e = i / as;
                fprintf(stderr, "FAIL %s: output differs from ref (%s) first at (m=%zu, n=%zu): %g vs %g\n", what,
                        w4a8 ? "W4A8 must be bit-identical" : "exact data", e / (size_t)c.n, e % (size_t)c.n,
                        tu_act_load(c.act, y1.p, (int64_t)e), tu_act_load(c.act, yr.p, (int64_t)e));
                break;
            }
        ok = 0;
    }
done:
    if (g_messages != before) {
        fprintf(stderr, "FAIL %s: %d validation message(s)\n", what, g_messages - before);
        ok = 0;
    }
    mpl_layer_destroy(kl);
    mpl_layer_destroy(rl);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    free(x), free(xf), free(b), free(bf), free(want), free(mag), free(tol);
    tu_buf_free(&y1), tu_buf_free(&y2), tu_buf_free(&yr);
    return ok;
}

static void run_matrix(const char *path, const int64_t *ms, int nm) {
    if (!device_ready()) {
        skip();
        return;
    }
    uint64_t base = tu_seed(0x5eed14);
    int fails = 0, runs = 0;
    for (size_t ci = 0; ci < sizeof g_cases / sizeof g_cases[0]; ci++)
        for (int mi = 0; mi < nm; mi++) {
            const vcase *d = &g_cases[ci];
            uint64_t seed = tu_case_seed(base, ci * 64 + (uint64_t)mi);
            fails += !run_case(d, ms[mi], path, (int)((ci + (size_t)mi) & 1), TU_DATA_RANDOM, 0, seed);
            runs++;
            /* exact data (K <= 2048 keeps every fp32 partial sum exact): bit-identical to ref */
            if (d->k <= 2048 && mi == nm - 1) {
                fails += !run_case(d, ms[mi], path, 1, TU_DATA_EXACT, 0, seed ^ 1);
                runs++;
            }
        }
    fprintf(stderr, "%s: %d cases, %d failed\n", path ? path : "default choice", runs, fails);
    assert_int_equal(fails, 0);
}

/* The W4A8 matrix on one path (NULL: the default choice): random data at every m, exact data (K <= 2048) at
 * the largest, and special rows (zero, tiny, inf, NaN) at the m >= 5 entries, bias alternating. */
static void run_w4a8_matrix(const char *path, const int64_t *ms, int nm) {
    if (!device_ready()) {
        skip();
        return;
    }
    uint64_t base = tu_seed(0x5eed48);
    int fails = 0, runs = 0;
    for (size_t ci = 0; ci < sizeof g_w4a8_cases / sizeof g_w4a8_cases[0]; ci++)
        for (int mi = 0; mi < nm; mi++) {
            const vcase *d = &g_w4a8_cases[ci];
            const uint64_t seed = tu_case_seed(base, ci * 64 + (uint64_t)mi);
            const int bias_on = (int)((ci + (size_t)mi) & 1);
            const tu_data_kind dk = d->k <= 2048 ? TU_DATA_EXACT : TU_DATA_RANDOM;
            fails += !run_case(d, ms[mi], path, bias_on, TU_DATA_RANDOM, 0, seed);
            runs++;
            if (mi == nm - 1) {
                fails += !run_case(d, ms[mi], path, 1, TU_DATA_EXACT, 0, seed ^ 1);
                runs++;
            }
            if (ms[mi] >= 5) {
                fails += !run_case(d, ms[mi], path, !bias_on, dk, 1, seed ^ 2);
                runs++;
            }
        }
    fprintf(stderr, "%s: %d W4A8 cases, %d failed\n", path ? path : "vulkan_w4a8 default choice", runs, fails);
    assert_int_equal(fails, 0);
}

static const int64_t g_w4a8_ms[] = {1, 2, 3, 4, 5, 17, 65};

static void w4a8_gemv_cases(void **state) {
    (void)state;
    run_w4a8_matrix("vulkan_w4a8:gemv", g_w4a8_ms, 7);
}

static void w4a8_tiled_cases(void **state) {
    (void)state;
    run_w4a8_matrix("vulkan_w4a8:tiled", g_w4a8_ms, 7);
}

static void w4a8_default_cases(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 4, 5, 70};
    run_w4a8_matrix(NULL, ms, 4);
}

static void gemv_cases(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 2, 3, 4, 5, 9};
    run_matrix("vulkan_w4a16:gemv", ms, 6);
}

/* The GEMV's other shapes (shaders/w4a16_gemv.comp's specialization constants: invocations, rows per workgroup,
 * chunks per row per step, prefetch, row blocks per workgroup; mpl_vk_test_gemv_shape): every shape bench/vulkan/h200_bins.sh sweeps on the H200, so
 * that whichever is made the default has run this matrix. m = 1 and 3 (a partial pass of the 4-row x loop);
 * the default shape runs the full matrix in gemv_cases. */
static const unsigned g_gemv_shapes[][5] = {
    {64, 8, 1, 0, 1},   {64, 8, 2, 0, 1},   {32, 8, 1, 1, 1},   {128, 8, 1, 1, 1},  {64, 4, 2, 1, 1},
    {64, 4, 1, 1, 1},   {64, 16, 1, 1, 1},  {32, 8, 2, 1, 1},   {64, 8, 4, 0, 1},   {128, 4, 2, 0, 1},
    {256, 1, 4, 1, 1},  {64, 32, 1, 0, 1},  {64, 8, 1, 2, 1},   {32, 8, 1, 2, 1},   {128, 8, 1, 2, 1},
    {64, 16, 1, 2, 1},  {64, 1, 1, 2, 1},   {128, 16, 1, 2, 1}, {32, 8, 1, 0, 1},   {128, 8, 1, 0, 1},
    {64, 4, 1, 0, 1},   {128, 4, 1, 0, 1},  {32, 4, 1, 0, 1},   {256, 4, 1, 0, 1},  {64, 2, 1, 0, 1},
    {32, 16, 1, 0, 1},  {64, 8, 1, 0, 2},   {64, 8, 1, 0, 4},   {64, 8, 1, 0, 16},  {32, 8, 1, 0, 4},
    {128, 8, 1, 0, 4},  {64, 4, 1, 0, 4},   {64, 8, 1, 2, 4},   {32, 8, 1, 0, 3},   {64, 16, 1, 0, 1},
};

static void gemv_shapes(void **state) {
    (void)state;
    if (!device_ready()) {
        skip();
        return;
    }
    static const int64_t ms[] = {1, 3};
    /* a shape the layout cannot serve is refused with a reason, and the pipeline is left as it was */
    assert_int_equal(mpl_vk_test_gemv_shape(0, 64, 3, 2, 0, 1), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_vk_test_gemv_shape(0, 64, 8, 9, 0, 1), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_vk_test_gemv_shape(0, 64, 8, 1, 3, 1), MPL_ERR_INVALID_ARGUMENT);
    assert_int_equal(mpl_vk_test_gemv_shape(0, 64, 8, 2, 2, 1), MPL_ERR_INVALID_ARGUMENT);
    for (size_t i = 0; i < sizeof g_gemv_shapes / sizeof g_gemv_shapes[0]; i++) {
        const unsigned *sh = g_gemv_shapes[i];
        assert_int_equal(mpl_vk_test_gemv_shape(0, sh[0], sh[1], sh[2], sh[3], sh[4]), MPL_OK);
        fprintf(stderr, "GEMV shape %u:%u:%u:%u:%u\n", sh[0], sh[1], sh[2], sh[3], sh[4]);
        if (i == 0) { /* the driver's statistics, where it has VK_KHR_pipeline_executable_properties */
            char stats[2048];
            mpl_status st = mpl_vk_test_gemv_stats(0, stats, sizeof stats);
            assert_true(st == MPL_OK || st == MPL_ERR_UNSUPPORTED);
            fprintf(stderr, "GEMV pipeline statistics: %s\n", st == MPL_OK ? stats : mpl_last_error());
        }
        run_matrix("vulkan_w4a16:gemv", ms, 2);
    }
    assert_int_equal(mpl_vk_test_gemv_shape(0, 0, 0, 0, 0, 0), MPL_OK);
    assert_int_equal(g_messages, 0);
}

static void tiled_cases(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 5, 63, 64, 65, 129};
    run_matrix("vulkan_w4a16:tiled", ms, 6);
}

static void default_cases(void **state) {
    (void)state;
    static const int64_t ms[] = {1, 4, 5, 70};
    run_matrix(NULL, ms, 4);
}

/* Rows in several submissions: a 64 KiB scratch bound holds 64 rows of y at n = 200 (f32). */
static void chunked_rows(void **state) {
    (void)state;
    if (!device_ready()) {
        skip();
        return;
    }
    mpl_vk_test_scratch_max(64 * 1024);
    const vcase d = {768, 200, 64, MPL_WTYPE_UINT4, 1, MPL_ACT_BF16, MPL_MODE_W4A16};
    assert_true(run_case(&d, 200, "vulkan_w4a16:tiled", 1, TU_DATA_RANDOM, 0, 0xc4u));
    assert_true(run_case(&d, 131, "vulkan_w4a16:gemv", 0, TU_DATA_EXACT, 0, 0xc5u));
    /* W4A8: 64 rows per chunk (its x rows are k_pad + 16 bytes); special rows in every chunk */
    const vcase q = {768, 200, 64, MPL_WTYPE_UINT4, 1, MPL_ACT_BF16, MPL_MODE_W4A8};
    assert_true(run_case(&q, 200, "vulkan_w4a8:tiled", 1, TU_DATA_RANDOM, 1, 0xc6u));
    assert_true(run_case(&q, 131, "vulkan_w4a8:gemv", 0, TU_DATA_EXACT, 1, 0xc7u));
    mpl_vk_test_scratch_max(0);
}

/* Device selection: by index, by part of the name; a missing one is NO_HARDWARE; m = 0 does nothing. */
static void device_selection(void **state) {
    (void)state;
    if (!device_ready()) {
        skip();
        return;
    }
    mpl_vulkan_device_info info;
    assert_int_equal(mpl_vulkan_device_get(0, &info), MPL_OK);
    assert_int_equal(mpl_vulkan_device_get(g_devices, &info) == MPL_OK, 0);
    assert_int_equal(mpl_vulkan_device_get(0, &info), MPL_OK);
    mpl_config c;
    mpl_config_init(&c, 128, 64);
    tu_weights w;
    tu_rng r;
    tu_rng_init(&r, 7);
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_VULKAN;
    char part[8];
    snprintf(part, sizeof part, "%.4s", info.name); /* a prefix of the name, any case */
    for (char *p = part; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    o.vulkan_device_name = part;
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_OK);
    assert_int_equal(mpl_layer_apply(l, 0, NULL, NULL, NULL), MPL_OK);
    mpl_layer_destroy(l);
    o.vulkan_device_name = "no such vulkan device";
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_NO_HARDWARE);
    o.vulkan_device_name = NULL;
    o.vulkan_device = g_devices;
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_ERR_NO_HARDWARE);
    assert_non_null(strstr(mpl_last_error(), "does not exist"));
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    assert_int_equal(g_messages, 0);
}

int main(void) {
    mpl_status st = mpl_vk_test_validation(on_message, NULL);
    g_validation = st == MPL_OK ? 1 : st == MPL_ERR_UNSUPPORTED ? 0 : -1;
    if (st != MPL_OK) fprintf(stderr, "NOTE: %s\n", mpl_last_error());
    char note[128];
    g_devices = mpl_vulkan_devices(note, sizeof note);
    if (g_devices == 0) fprintf(stderr, "NOTE: no Vulkan device (%s): the device cases skip\n", note);
    for (int i = 0; i < g_devices; i++) {
        mpl_vulkan_device_info v;
        if (mpl_vulkan_device_get(i, &v) == MPL_OK)
            fprintf(stderr, "Vulkan device %d: %s, %s%s\n", i, v.name, v.driver, g_validation == 1 ? ", validation on" : "");
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(layout_round_trip, reset), cmocka_unit_test_setup(refusals, reset),
        cmocka_unit_test_setup(gemv_cases, reset),        cmocka_unit_test_setup(gemv_shapes, reset),
        cmocka_unit_test_setup(tiled_cases, reset),
        cmocka_unit_test_setup(default_cases, reset),     cmocka_unit_test_setup(refusals_w4a8, reset),
        cmocka_unit_test_setup(w4a8_gemv_cases, reset),   cmocka_unit_test_setup(w4a8_tiled_cases, reset),
        cmocka_unit_test_setup(w4a8_default_cases, reset), cmocka_unit_test_setup(chunked_rows, reset),
        cmocka_unit_test_setup(device_selection, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
