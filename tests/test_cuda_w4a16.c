/*
 * test_cuda_w4a16.c -- the CUDA W4A16 kernel: its packed layout (host, runs everywhere); its path table and
 * the choice it makes by m and compute capability, its refusals and the device it packs on (any CUDA build:
 * GPUs faked with mpl_platform_override, so these run without a device too); and on a CUDA device every
 * path of the table, forced by name (mpl_options.kernel = "cuda_w4a16:<path>") and chosen by default,
 * against the float64 oracle and the reference kernel: M in {1, 2, 7, 8, 9, 16, 17, 64, 65, 257, 1024} and
 * the tile edges of each path, odd N (odd multiples of 8), K tails (K not a multiple of 64), every group
 * size, zero points, act-order, f16 and bf16, bias, the dq path with one slab or several (with and without
 * the side-stream overlap) and forced split-K (tuning through mpl_cuda_w4a16_tuning_override); every weight
 * width: 4-bit, 8-bit (two planes), and uint2b2 / uint2, uint3b4 / uint3 and int4 (stored as 4-bit codes).
 * Each case: mpl_layer_path names the path that runs (forced, or the table's default for m) and
 * mpl_layer_weight_rounding matches it; the host-pointer path twice (bit-identical: determinism), guard
 * bytes around the output, and the device-pointer path into a poisoned buffer with a poisoned tail (every
 * element written, nothing past the end), bit-identical to the host path.
 * Exact data (small integers, power-of-two scales) must match the rounded oracle and the
 * reference bit for bit; random data is held to tu_tolerance() (derivation in testutil.c: the
 * kernel's summation order -- k16 MMA steps, per-group folds, warp and cluster reductions --
 * stays within its K + G + 2 roundings per term for the K used here), plus the weight rounding of
 * the paths that round weights (run_case).
 * Without CUDA (CI) the device cases skip with a message.
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
#include "layouts/cuda_w4a16.h"
#include "support/testutil.h"
#ifdef MPL_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "kernels/cuda/cuda_w4a16.h"
#include "kernels/kernels.h"
#endif

static int reset(void **state) {
    (void)state;
    unsetenv("MPL_DISABLED_KERNELS");
    mpl_platform_override(NULL);
    return 0;
}

/* ---------- layout: pack / unpack round trip (host only) ---------- */

static void random_canonical(mpl_canonical *w, const mpl_config *c, tu_rng *r, int scale_kind) {
    assert_int_equal(mpl_canonical_alloc(w, c), MPL_OK);
    const int levels = 1 << mpl_wtype_bits(w->wtype); /* every code of the width, the extremes included */
    for (int64_t i = 0; i < w->n * w->k; i++) w->codes[i] = (uint8_t)tu_rng_below(r, (uint64_t)levels);
    for (int64_t i = 0; i < w->n * w->groups; i++) {
        double v = tu_rng_uniform(r, -0.1, 0.1);
        /* 0: exact in f16, 1: exact in bf16 only, 2: full f32 */
        w->scales[i] = scale_kind == 0 ? (float)tu_round_dtype(MPL_DTYPE_F16, v)
                       : scale_kind == 1 ? (float)tu_round_dtype(MPL_DTYPE_BF16, v * 1e-4)
                                         : (float)v;
        if (w->zeros) w->zeros[i] = (uint8_t)tu_rng_below(r, (uint64_t)levels);
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
        int zp, act_order, scale_kind;
        mpl_act act;
        int form;         /* 0: 4-bit codes, 1: 8-bit (two planes), 2: 2-bit halves (mpl_cuda_w4a16_pack_halves), 3: 3-bit
                             thirds (mpl_cuda_w4a16_pack_thirds) */
        mpl_wtype narrow; /* 0: 4-bit (uint4b8, or uint4 with zp); else this 2-, 3- or 4-bit type */
    } cases[] = {
        {64, 16, -1, 0, 0, 0, MPL_ACT_F16, 0, 0},    {200, 24, -1, 1, 0, 2, MPL_ACT_BF16, 0, 0},
        {960, 72, 32, 1, 0, 1, MPL_ACT_F16, 0, 0},   {768, 200, 64, 0, 1, 0, MPL_ACT_BF16, 0, 0},
        {1408, 264, 128, 1, 1, 2, MPL_ACT_F16, 0, 0}, {480, 8, 48, 0, 0, 1, MPL_ACT_BF16, 0, 0},
        /* 8-bit: two planes */
        {64, 16, -1, 0, 0, 0, MPL_ACT_F16, 1, 0},    {208, 24, -1, 1, 0, 2, MPL_ACT_BF16, 1, 0},
        {960, 72, 32, 1, 0, 1, MPL_ACT_F16, 1, 0},   {768, 200, 64, 0, 1, 0, MPL_ACT_BF16, 1, 0},
        {1408, 264, 128, 1, 1, 2, MPL_ACT_F16, 1, 0},
        /* 2-, 3-bit and int4 as 4-bit codes: (code ^ x) + a, back exactly */
        {64, 16, -1, 0, 0, 0, MPL_ACT_F16, 0, MPL_WTYPE_INT4},       {768, 200, 64, 0, 1, 0, MPL_ACT_BF16, 0, MPL_WTYPE_INT4},
        {64, 16, -1, 0, 0, 0, MPL_ACT_F16, 0, MPL_WTYPE_UINT2B2},    {960, 72, 32, 1, 0, 1, MPL_ACT_F16, 0, MPL_WTYPE_UINT2},
        {768, 200, 64, 0, 1, 2, MPL_ACT_BF16, 0, MPL_WTYPE_UINT2B2}, {1408, 264, 128, 1, 1, 2, MPL_ACT_F16, 0, MPL_WTYPE_UINT2},
        {96, 16, -1, 0, 0, 0, MPL_ACT_BF16, 0, MPL_WTYPE_UINT3B4},   {960, 72, 32, 1, 0, 1, MPL_ACT_F16, 0, MPL_WTYPE_UINT3},
        {768, 200, 64, 0, 1, 0, MPL_ACT_BF16, 0, MPL_WTYPE_UINT3B4}, {1408, 264, 128, 1, 1, 2, MPL_ACT_F16, 0, MPL_WTYPE_UINT3},
        /* 2-bit halves: one byte per four weights (k / 2 packed positions), both types, act-order, groups -1 / 128 / 256 */
        {128, 16, -1, 0, 0, 0, MPL_ACT_F16, 2, MPL_WTYPE_UINT2B2},   {1024, 72, 128, 1, 0, 1, MPL_ACT_BF16, 2, MPL_WTYPE_UINT2},
        {1280, 200, 256, 0, 1, 2, MPL_ACT_F16, 2, MPL_WTYPE_UINT2B2}, {768, 264, 128, 1, 1, 0, MPL_ACT_BF16, 2, MPL_WTYPE_UINT2},
        {2048, 8, -1, 1, 0, 2, MPL_ACT_BF16, 2, MPL_WTYPE_UINT2},
        /* 3-bit thirds: three bits per weight (3 k / 4 packed positions), both types, act-order, groups -1 / 128 / 256 / 384 */
        {256, 16, -1, 0, 0, 0, MPL_ACT_F16, 3, MPL_WTYPE_UINT3B4},    {1024, 72, 128, 1, 0, 1, MPL_ACT_BF16, 3, MPL_WTYPE_UINT3},
        {1280, 200, 256, 0, 1, 2, MPL_ACT_F16, 3, MPL_WTYPE_UINT3B4}, {768, 264, 128, 1, 1, 0, MPL_ACT_BF16, 3, MPL_WTYPE_UINT3},
        {1536, 8, 384, 1, 0, 2, MPL_ACT_BF16, 3, MPL_WTYPE_UINT3},
    };
    tu_rng r;
    tu_rng_init(&r, tu_seed(0xc0da));
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        mpl_config c;
        mpl_config_init(&c, cases[ci].k, cases[ci].n);
        c.group_size = cases[ci].gs;
        c.act = cases[ci].act;
        c.zero_points = cases[ci].zp;
        c.wtype = cases[ci].narrow ? cases[ci].narrow
                  : cases[ci].form ? (c.zero_points ? MPL_WTYPE_UINT8 : MPL_WTYPE_UINT8B128)
                  : c.zero_points  ? MPL_WTYPE_UINT4
                                   : MPL_WTYPE_UINT4B8;
        c.act_order = cases[ci].act_order;
        mpl_canonical w, back;
        random_canonical(&w, &c, &r, cases[ci].scale_kind);
        mpl_cuda_w4a16_layout l;
        const int halves = cases[ci].form == 2, thirds = cases[ci].form == 3;
        if (halves) assert_true(mpl_cuda_w4a16_halves_fits(&c));
        if (thirds) assert_true(mpl_cuda_w4a16_thirds_fits(&c));
        assert_int_equal(halves   ? mpl_cuda_w4a16_pack_halves(&c, &w, &l)
                         : thirds ? mpl_cuda_w4a16_pack_thirds(&c, &w, &l)
                                  : mpl_cuda_w4a16_pack(&c, &w, &l),
                         MPL_OK);
        assert_int_equal(l.halves, halves);
        assert_int_equal(l.thirds, thirds);
        if (halves || thirds) {
            assert_int_equal(l.k, c.k);
            assert_int_equal(l.k_pad, halves ? c.k / 2 : c.k / 4 * 3);
            assert_int_equal(mpl_cuda_w4a16_qweight_bytes(&l), (size_t)(halves ? l.n_pad * c.k / 4 : l.n_pad * c.k * 3 / 8));
            assert_int_equal(l.zeros != NULL, c.zero_points);
        }
        int want_fmt = cases[ci].scale_kind == 2 ? MPL_CUDA_W4A16_SCALE_F32
                       : cases[ci].scale_kind == 1 ? MPL_CUDA_W4A16_SCALE_BF16
                       : c.act == MPL_ACT_BF16 ? MPL_CUDA_W4A16_SCALE_BF16 /* f16-exact scales may be bf16-exact too */
                                                : MPL_CUDA_W4A16_SCALE_F16;
        if (cases[ci].scale_kind != 0) assert_int_equal(l.scale_fmt, want_fmt);
        assert_int_equal(l.k_pad % 64, 0);
        assert_int_equal(l.n_pad % MPL_CUDA_W4A16_N_ALIGN, 0);
        assert_int_equal(mpl_cuda_w4a16_unpack(&l, c.act_order, &back), MPL_OK);
        assert_memory_equal(back.codes, w.codes, (size_t)(w.n * w.k));
        assert_memory_equal(back.scales, w.scales, (size_t)(w.n * w.groups) * sizeof(float));
        if (w.zeros) assert_memory_equal(back.zeros, w.zeros, (size_t)(w.n * w.groups));
        if (w.g_idx) {
            assert_memory_equal(back.g_idx, w.g_idx, (size_t)w.k * sizeof(int32_t));
            assert_memory_equal(back.perm, w.perm, (size_t)w.k * sizeof(int32_t));
        }
        mpl_canonical_free(&back);
        mpl_cuda_w4a16_layout_free(&l);
        mpl_canonical_free(&w);
    }
}

/* A shape a native narrow packing (halves, thirds) refuses, and what its message must name */
typedef struct {
    int64_t k, gs;
    mpl_wtype t;
    const char *says;
} narrow_bad;
/* Each shape: fits says no, and pack refuses with MPL_ERR_INVALID_ARGUMENT and a message naming the rule it broke */
static void narrow_refusals(const narrow_bad *bad, size_t n, bool (*fits)(const mpl_config *),
                            mpl_status (*pack)(const mpl_config *, const mpl_canonical *, mpl_cuda_w4a16_layout *),
                            const char *form) {
    for (size_t i = 0; i < n; i++) {
        mpl_config c;
        mpl_canonical w;
        mpl_config_init(&c, bad[i].k, 16);
        c.group_size = bad[i].gs;
        c.wtype = bad[i].t;
        c.zero_points = mpl_wtype_zero_points(bad[i].t);
        assert_false(fits(&c));
        assert_int_equal(mpl_canonical_alloc(&w, &c), MPL_OK);
        for (int64_t j = 0; j < w.n * w.groups; j++) w.scales[j] = 1.0f;
        mpl_cuda_w4a16_layout l;
        assert_int_equal(pack(&c, &w, &l), MPL_ERR_INVALID_ARGUMENT);
        if (!strstr(mpl_last_error(), bad[i].says))
            fail_msg("%s refusal '%s' should say '%s'", form, mpl_last_error(), bad[i].says);
        mpl_canonical_free(&w);
    }
}

/*
 * 2-bit halves (mpl_cuda_w4a16_pack_halves; its round trips are layout_round_trip's form-2 rows): hand-placed codes at
 * their bits (channel 128 v + j in bits 0-1, 128 v + 64 + j in bits 2-3 of the nibble a 4-bit layer gives packed
 * position 64 v + j); the shapes it refuses, with the rule in the message.
 */
static void layout_halves(void **state) {
    (void)state;
    /* bits: code 3 at (n, k) among codes 2, in the nibble of (n, packed 64 (k / 128) + k % 64) at bits 2 ((k / 64) & 1) */
    mpl_config c;
    mpl_config_init(&c, 256, 40);
    c.wtype = MPL_WTYPE_UINT2B2;
    mpl_canonical w;
    assert_int_equal(mpl_canonical_alloc(&w, &c), MPL_OK);
    for (int64_t i = 0; i < w.n * w.groups; i++) w.scales[i] = 1.0f;
    static const struct {
        int n, k;
    } at[] = {{0, 0}, {0, 64}, {9, 70}, {15, 127}, {39, 99}, {16, 200}, {1, 255}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        memset(w.codes, 2, (size_t)(w.n * w.k));
        w.codes[at[i].n * w.k + at[i].k] = 3;
        mpl_cuda_w4a16_layout l;
        assert_int_equal(mpl_cuda_w4a16_pack_halves(&c, &w, &l), MPL_OK);
        const int64_t p = at[i].k / 128 * 64 + at[i].k % 64;
        const int r16 = at[i].n % 16, col = (int)(p % 64) % 16, rem = col & 3;
        const int lane = (r16 & 7) * 4 + (col >> 2), nib = (r16 >> 3) | ((rem >> 1) << 1) | ((rem & 1) << 2);
        assert_int_equal(mpl_cuda_w4a16_nibble_row(lane, nib), r16);
        assert_int_equal(mpl_cuda_w4a16_nibble_col(lane, nib), col);
        const size_t word = mpl_cuda_w4a16_word_index(&l, at[i].n / 16, p / 64, lane, (int)(p % 64) / 16);
        const uint32_t nv = (at[i].k / 64) & 1 ? 0x2u | 3u << 2 : 3u | 0x2u << 2;
        const uint32_t expect = (0xaaaaaaaau & ~(0xfu << (4 * nib))) | nv << (4 * nib);
        if (l.qweight[word] != expect)
            fail_msg("halves (n=%d, k=%d): word %zu = 0x%08x, want 0x%08x", at[i].n, at[i].k, word, l.qweight[word], expect);
        mpl_cuda_w4a16_layout_free(&l);
    }
    mpl_canonical_free(&w);
    /* refused shapes: k not a multiple of 128, groups of 64, a 3-bit type */
    static const narrow_bad bad[] = {{960, -1, MPL_WTYPE_UINT2B2, "k = 960"}, {1024, 64, MPL_WTYPE_UINT2, "group size 64"},
                                     {1024, 128, MPL_WTYPE_UINT3B4, "uint3b4"}};
    narrow_refusals(bad, sizeof bad / sizeof bad[0], mpl_cuda_w4a16_halves_fits, mpl_cuda_w4a16_pack_halves, "halves");
}

/*
 * 3-bit thirds (mpl_cuda_w4a16_pack_thirds; round trips in layout_round_trip's form-3 rows): hand-placed codes at their
 * bits (channel 256 u + 64 s + j in bits 0-2 of packed position 64 (3u + s) + j; channel 256 u + 192 + j's bit 2 - s in
 * bit 3 of the same), the kernels' read of the fourth chunk from the three words, padding rows, and the refused shapes.
 */
static void layout_thirds(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 512, 40);
    c.wtype = MPL_WTYPE_UINT3B4;
    mpl_canonical w;
    assert_int_equal(mpl_canonical_alloc(&w, &c), MPL_OK);
    for (int64_t i = 0; i < w.n * w.groups; i++) w.scales[i] = 1.0f;
    /* code v at (n, k) among codes 4 (uint3b4's zero): nibble 0xC / 0x4 / 0x4 elsewhere in the run's three chunks */
    static const struct {
        int n, k, v;
    } at[] = {{0, 0, 7}, {0, 64, 1}, {9, 130, 3}, {15, 191, 0}, {39, 192, 5}, {16, 255, 2}, {1, 448, 6}, {30, 500, 7}};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        memset(w.codes, 4, (size_t)(w.n * w.k));
        w.codes[at[i].n * w.k + at[i].k] = (uint8_t)at[i].v;
        mpl_cuda_w4a16_layout l;
        assert_int_equal(mpl_cuda_w4a16_pack_thirds(&c, &w, &l), MPL_OK);
        const int u = at[i].k / 256, chunk = (at[i].k / 64) % 4, j = at[i].k % 64;
        const int r16 = at[i].n % 16, col = j % 16, rem = col & 3;
        const int lane = (r16 & 7) * 4 + (col >> 2), nib = (r16 >> 3) | ((rem >> 1) << 1) | ((rem & 1) << 2);
        uint32_t words[3];
        for (int s = 0; s < 3; s++) {
            words[s] = l.qweight[mpl_cuda_w4a16_word_index(&l, at[i].n / 16, 3 * u + s, lane, j / 16)];
            /* the expected nibble: bits 0-2 the chunk-s code, bit 3 bit 2 - s of the chunk-3 code */
            const unsigned lo = chunk == s ? (unsigned)at[i].v : 4u, hi = chunk == 3 ? (unsigned)at[i].v : 4u;
            const uint32_t nv = lo | ((hi >> (2 - s)) & 1u) << 3, fill = s == 0 ? 0xccccccccu : 0x44444444u;
            const uint32_t expect = (fill & ~(0xfu << (4 * nib))) | nv << (4 * nib);
            if (words[s] != expect)
                fail_msg("thirds (n=%d, k=%d) chunk %d: word = 0x%08x, want 0x%08x", at[i].n, at[i].k, s, words[s], expect);
        }
        /* the kernels' read of chunk 4u + 3 */
        const uint32_t c3 = ((words[0] >> 1) & 0x44444444u) | ((words[1] >> 2) & 0x22222222u) | ((words[2] >> 3) & 0x11111111u);
        assert_int_equal((c3 >> (4 * nib)) & 7u, chunk == 3 ? (unsigned)at[i].v : 4u);
        /* padding rows (tile 3: rows 48..63 of n_pad 256 > 40) read code 4 in every chunk */
        for (int s = 0; s < 3; s++)
            assert_int_equal(l.qweight[mpl_cuda_w4a16_word_index(&l, 3, 3 * u + s, lane, j / 16)], s == 0 ? 0xccccccccu : 0x44444444u);
        mpl_cuda_w4a16_layout_free(&l);
    }
    mpl_canonical_free(&w);
    /* refused shapes: k not a multiple of 256, groups of 64, a 2-bit type */
    static const narrow_bad bad[] = {{1152, -1, MPL_WTYPE_UINT3B4, "k = 1152"}, {1024, 64, MPL_WTYPE_UINT3, "group size 64"},
                                     {1024, 128, MPL_WTYPE_UINT2B2, "uint2b2"}};
    narrow_refusals(bad, sizeof bad / sizeof bad[0], mpl_cuda_w4a16_thirds_fits, mpl_cuda_w4a16_pack_thirds, "thirds");
}

/*
 * Path cuda_w4a16:wg's SPLIT dequantization (bf16 activations, f16 scales; src/kernels/cuda/w4a16_wg.cu):
 * s = hi + lo with hi = bf16(s) and lo = bf16(s - hi), then w^ = fma.bf16(v, hi, v * lo). Claimed: lo is
 * exact (s - hi fits bf16), v * lo is exact in bf16 for every integer weight v in [-15, 15], and the
 * fma's single rounding gives round_bf16(v * s) -- the dq path's weight (bit for bit up to the sign of a
 * zero weight: fma(0, hi, +0) is +0 where (0 * s) is -0 for s < 0; sums are unchanged). Checked here for
 * every finite f16 scale and every v (CPU only; float holds every intermediate exactly, so one
 * mpl_f32_to_bf16 is the fma's one rounding); and for the SUB form's operands v 2^-6 and the split of 2^6 s.
 */
static void wg_split_scale_exact(void **state) {
    (void)state;
    long bad = 0;
    /* p = 0: as stated above; p = 6: the SUB form's operands (the subnormal dequantization gives v 2^-6, split 2^6 s) */
    for (int p = 0; p <= 6; p += 6) {
        const float mul = (float)(1 << p), inv = 1.0f / mul;
        for (uint32_t h = 0; h < 0x10000u; h++) {
            if ((h & 0x7c00u) == 0x7c00u) continue; /* inf / NaN */
            float s = mpl_f16_to_f32((uint16_t)h);
            float sm = s * mul; /* exact: a power of two, far inside the range */
            float hi = mpl_bf16_to_f32(mpl_f32_to_bf16(sm));
            float rem = sm - hi; /* exact: both within 11 significant bits of sm */
            float lo = mpl_bf16_to_f32(mpl_f32_to_bf16(rem));
            if (lo != rem || (double)hi + (double)lo != (double)sm) bad++;
            for (int v = -15; v <= 15; v++) {
                float vp = (float)v * inv; /* exact */
                float vl = vp * lo;
                if (mpl_bf16_to_f32(mpl_f32_to_bf16(vl)) != vl) bad++; /* v' * lo exact in bf16 */
                float sum = vp * hi + vl;                               /* exact in float (15 bits) */
                /* equal values (a zero weight may come out -0 here and +0 in dq: no sum changes) */
                if (mpl_bf16_to_f32(mpl_f32_to_bf16(sum)) != mpl_bf16_to_f32(mpl_f32_to_bf16((float)v * s))) bad++;
            }
        }
    }
    assert_int_equal(bad, 0);
}

/* The bit-level spec (docs/layouts/cuda_w4a16.md), checked by hand for a few weights. */
static void layout_bit_positions(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 128, 40);
    c.act = MPL_ACT_F16;
    mpl_canonical w;
    assert_int_equal(mpl_canonical_alloc(&w, &c), MPL_OK);
    for (int64_t i = 0; i < w.n * w.groups; i++) w.scales[i] = 1.0f;
    /* (n, k) -> block (nt = n/16, kc = k/64), lane 4*(n%8) + t, word j, nibble i where
     * k%64 = 16j + 4t + 2*((i>>1)&1) + (i>>2) and n%16 = n%8 + 8*(i&1). */
    static const struct {
        int n, k, lane, j, nib, nt, kc;
    } at[] = {
        {0, 0, 0, 0, 0, 0, 0},   {0, 1, 0, 0, 4, 0, 0},    {0, 2, 0, 0, 2, 0, 0}, {0, 3, 0, 0, 6, 0, 0},
        {8, 0, 0, 0, 1, 0, 0},   {9, 70, 5, 0, 3, 0, 1},   {1, 4, 5, 0, 0, 0, 0}, {15, 127, 31, 3, 7, 0, 1},
        {39, 99, 28, 2, 6, 2, 1}, {16, 16, 0, 1, 0, 1, 0},
    };
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        memset(w.codes, 8, (size_t)(w.n * w.k));
        w.codes[at[i].n * w.k + at[i].k] = 3;
        mpl_cuda_w4a16_layout l;
        assert_int_equal(mpl_cuda_w4a16_pack(&c, &w, &l), MPL_OK);
        size_t word = (((size_t)at[i].nt * (size_t)(l.k_pad / 64) + (size_t)at[i].kc) * 32 + (size_t)at[i].lane) * 4 +
                      (size_t)at[i].j;
        uint32_t expect = 0x88888888u & ~(0xfu << (4 * at[i].nib));
        expect |= 3u << (4 * at[i].nib);
        if (l.qweight[word] != expect)
            fprintf(stderr, "weight (n=%d, k=%d): word %zu = 0x%08x, want 0x%08x\n", at[i].n, at[i].k, word,
                    l.qweight[word], expect);
        assert_int_equal(l.qweight[word], expect);
        mpl_cuda_w4a16_layout_free(&l);
    }
    /* Scales: row n of a 16-row tile sits at 2*(n%8) + (n%16)/8 within the tile. */
    for (int64_t n = 0; n < w.n; n++) w.scales[n] = (float)(n + 1);
    mpl_cuda_w4a16_layout l;
    assert_int_equal(mpl_cuda_w4a16_pack(&c, &w, &l), MPL_OK);
    assert_int_equal(l.scale_fmt, MPL_CUDA_W4A16_SCALE_F16);
    assert_int_equal(l.scales[1], mpl_f32_to_f16(9.0f));   /* row 8 */
    assert_int_equal(l.scales[2], mpl_f32_to_f16(2.0f));   /* row 1 */
    assert_int_equal(l.scales[16 + 3], mpl_f32_to_f16(26.0f)); /* row 25 */
    assert_int_equal(l.scales[32], mpl_f32_to_f16(33.0f)); /* row 32 */
    assert_int_equal(l.scales[33], 0);                     /* row 40: padding */
    mpl_cuda_w4a16_layout_free(&l);
    mpl_canonical_free(&w);
}

/* ---------- refusals of the kernel (its can_implement) ---------- */

static void refusals(void **state) {
    (void)state;
#ifndef MPL_HAVE_CUDA
    mpl_config c;
    mpl_config_init(&c, 64, 64);
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    const char *chosen = NULL;
    assert_int_equal(mpl_choose(&c, &o, &chosen, NULL, 0, NULL), MPL_ERR_NO_HARDWARE);
    assert_non_null(strstr(mpl_last_error(), "without CUDA"));
    printf("SKIP cuda_w4a16 refusals: library built without CUDA (%s)\n", mpl_last_error());
#else
    static const struct {
        mpl_wtype wt;
        mpl_act act;
        int64_t k, n, gs;
        int zp;
        mpl_mode mode;
        mpl_reason want;
        const char *says;
    } cases[] = {
        {MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 64, 64, -1, 0, MPL_MODE_W4A8, MPL_REASON_MODE, "W4A8"},
        {MPL_WTYPE_UINT8B128, MPL_ACT_BF16, 40, 64, -1, 0, MPL_MODE_W4A16, MPL_REASON_SHAPE, "multiple of 16"},
        {MPL_WTYPE_UINT4B8, MPL_ACT_F32, 64, 64, -1, 0, MPL_MODE_W4A16, MPL_REASON_ACT_TYPE, "f32"},
        {MPL_WTYPE_UINT4B8, MPL_ACT_F16, 64, 60, -1, 0, MPL_MODE_W4A16, MPL_REASON_SHAPE, "n = 60"},
        {MPL_WTYPE_UINT4, MPL_ACT_F16, 96, 64, 24, 1, MPL_MODE_W4A16, MPL_REASON_GROUP_SIZE, "group size 24"},
        {MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 200, 64, 8, 0, MPL_MODE_W4A16, MPL_REASON_GROUP_SIZE, "multiple of 16"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mpl_config c;
        mpl_config_init(&c, cases[i].k, cases[i].n);
        c.wtype = cases[i].wt;
        c.act = cases[i].act;
        c.group_size = cases[i].gs;
        c.zero_points = cases[i].zp;
        c.mode = cases[i].mode;
        assert_int_equal(mpl_config_validate(&c), MPL_OK);
        char msg[256];
        mpl_reason r = mpl_kernel_cuda_w4a16.can_implement(&c, mpl_platform_current(), msg, sizeof msg);
        if (r != cases[i].want || !strstr(msg, cases[i].says))
            fprintf(stderr, "case %zu: reason %s '%s', want %s containing '%s'\n", i, mpl_reason_name(r), msg,
                    mpl_reason_name(cases[i].want), cases[i].says);
        assert_int_equal(r, cases[i].want);
        assert_non_null(strstr(msg, cases[i].says));
    }
    /* Every weight type is taken (2-, 3-bit and int4 as 4-bit codes, 8-bit as two planes): none falls to ref */
    for (int t = MPL_WTYPE_UINT4B8; t <= MPL_WTYPE_UINT3; t++) {
        mpl_config c;
        mpl_config_init(&c, 128, 64);
        c.wtype = (mpl_wtype)t;
        c.zero_points = mpl_wtype_zero_points(c.wtype);
        c.group_size = 32;
        assert_int_equal(mpl_config_validate(&c), MPL_OK);
        char msg[256];
        mpl_reason r = mpl_kernel_cuda_w4a16.can_implement(&c, mpl_platform_current(), msg, sizeof msg);
        if (r != MPL_REASON_OK) fail_msg("weight type %s refused: %s", mpl_wtype_name(c.wtype), msg);
    }
    /* An accepted config is refused only for want of a device (the chooser's compute-capability check). */
    mpl_platform_info pi;
    assert_int_equal(mpl_platform_get(&pi), MPL_OK);
    mpl_config c;
    mpl_config_init(&c, 128, 64);
    c.group_size = 32;
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    mpl_verdict v;
    assert_int_equal(mpl_check(&c, &o, "cuda_w4a16", &v), MPL_OK);
    if (pi.cuda_devices == 0) {
        assert_int_equal(v.reason, MPL_REASON_DEVICE);
        printf("no CUDA device: %s\n", v.message);
    } else if (pi.cuda_cc >= 80) {
        assert_int_equal(v.reason, MPL_REASON_OK);
    }
#endif
}

#ifdef MPL_HAVE_CUDA

/* ---------- the path table and the choice by m (CPU: GPUs faked) ---------- */

static mpl_platform g_fake;

/* Pretends the host has `devices` CUDA devices of compute capability cc (restored by reset()). */
static void fake_gpus(int devices, int cc) {
    mpl_platform_override(NULL);
    g_fake = *mpl_platform_current();
    g_fake.cuda_devices = devices;
    for (int i = 0; i < MPL_CUDA_MAX_DEVICES; i++) g_fake.cuda_cc_all[i] = i < devices ? cc : 0;
    g_fake.cuda_device = 0;
    g_fake.cuda_cc = devices > 0 ? cc : 0;
    mpl_platform_override(&g_fake);
}

/* The path the table picks by default for m rows, stated independently of src/ (cuda_w4a16.c's rows). */
/* 8-bit layers (g_w8): two 4-bit planes; no skinny-rounded; on cc 9.0 with k % 64 == 0 skinny stops at m = 3 when n > k
 * (8 when n < 16384) and wg (both planes per stage) runs from skinny's end to m = 256 (512 on layers of 2^26 weights and
 * more), wg-streamk first (to 512) where its rule (expected_streamk, zero points and all) says; dq from m = 65
 * (k % 64 == 0) */
static int g_w8;
#define W8_WG_HI 256
/* the weight types of the non-8-bit device cases (the 2-, 3-bit and int4 rounds set them): packed as 4-bit codes,
 * they take the 4-bit paths and ranges (skinny-rounded: the symmetric ones) */
static mpl_wtype g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;

/*
 * wg-streamk's default range (cuda_w4a16.c, wg_streamk_m_range), restated: for the m bucket (33..64 with 64-token
 * tiles, 65..128, 129..256 and, 4-bit codes only, 257..512 with 128), the tiles of 256 rows of N, the 64-channel chunks per tile kc, and on 132
 * SMs the chunks the busiest SM streams under wg's split-K rule (factor 1 from 0.7 x 132 tiles, 2 from 0.2 x, else
 * 4, halved while a part would have under 4 chunks; waves of 132, 66, 30 or 15 clusters of 1, 2, 4, 8) against
 * stream-K's ceil(tiles kc / 132): it runs where that gain is >= 24 chunks with >= 16 tiles, in the first run
 * of buckets where it holds; never by default with zero points.
 */
static long long sk_chunks(int64_t m, int64_t k, int64_t n, int streamk) {
    const long long bt = m <= 64 ? 64 : 128, tiles = (m + bt - 1) / bt * ((n + 255) / 256), kc = (k + 63) / 64;
    if (streamk) return (tiles * kc + 131) / 132;
    int ks = tiles * 10 >= 7 * 132 ? 1 : tiles * 10 >= 2 * 132 ? 2 : 4;
    while (ks > 1 && kc / ks < 4) ks /= 2;
    const long long clusters = ks == 1 ? 132 : ks == 2 ? 66 : ks == 4 ? 30 : 15;
    return (tiles + clusters - 1) / clusters * ((kc + ks - 1) / ks);
}
static int sk_bucket_pays(int64_t top, int64_t k, int64_t n) {
    const long long tiles = (top + (top <= 64 ? 63 : 127)) / (top <= 64 ? 64 : 128) * ((n + 255) / 256);
    return tiles >= 16 && sk_chunks(top, k, n, 0) - sk_chunks(top, k, n, 1) >= 24;
}
/* buckets: 3 (8-bit and halves layers: to 256) or 4 (4-bit codes: to 512) */
static int expected_streamk(int64_t m, int64_t k, int64_t n, int buckets) {
    static const int64_t lo[] = {33, 65, 129, 257}, hi[] = {64, 128, 256, 512};
    int started = 0;
    for (int i = 0; i < buckets; i++) {
        const int pays = sk_bucket_pays(hi[i], k, n);
        if (pays) started = 1;
        if (started && !pays) return 0; /* the run ended before m's bucket */
        if (m >= lo[i] && m <= hi[i]) return pays;
    }
    return 0;
}

/* 2-bit layers on cc 9.0 with k % 128 == 0 and groups of 128k (or one) are packed in halves (cuda_w4a16.c,
 * packs_halves): no tc, no skinny-rounded; skinny to 16 (f16: to 8 where n >= 16384 and n > k), then wg-streamk where its rule says
 * (without zero points; its 33..64 bucket from m = 17), wg to 512 (1024 on layers of 2^27 weights and more without zero
 * points, as 4-bit codes), dq after */
static int halves_case(int64_t k, int64_t gs, int cc, int zp) {
    const mpl_wtype t = zp ? g_asym : g_sym;
    return !g_w8 && cc == 90 && (t == MPL_WTYPE_UINT2B2 || t == MPL_WTYPE_UINT2) && k % 128 == 0 && (gs == -1 || gs % 128 == 0);
}

/* 3-bit layers on cc 9.0 with k % 256 == 0 and groups of 128k (or one) are packed in thirds (cuda_w4a16.c,
 * packs_thirds): no tc, no skinny-rounded; skinny (w4a16_gemv) to 16 (to 8 where n >= 16384 and n > k), then as halves */
static int thirds_case(int64_t k, int64_t gs, int cc, int zp) {
    const mpl_wtype t = zp ? g_asym : g_sym;
    return !g_w8 && cc == 90 && (t == MPL_WTYPE_UINT3B4 || t == MPL_WTYPE_UINT3) && k % 256 == 0 && (gs == -1 || gs % 128 == 0);
}

/* w4a16_gemv's block-shared x fills one wave: n_pad / 256 blocks within 70-100% of the chooser's 132 SMs (skinny to 16) */
static int shared_x_band(int64_t n) {
    const int64_t blocks = (n + 255) / 256;
    return blocks * 10 >= 7 * 132 && blocks <= 132;
}

static const char *expected_default(int64_t m, int64_t k, int64_t n, int64_t gs, int cc, mpl_act act, int zp) {
    if (thirds_case(k, gs, cc, zp)) {
        if (m <= (n >= 16384 && n > k && !shared_x_band(n) ? 8 : 16)) return "cuda_w4a16:skinny";
        if (!zp && expected_streamk(m >= 17 && m <= 32 ? 33 : m, k, n, 4)) return "cuda_w4a16:wg-streamk";
        return m <= (!zp && n * k > ((int64_t)1 << 26) ? 1024 : 512) ? "cuda_w4a16:wg" : "cuda_w4a16:dq";
    }
    if (halves_case(k, gs, cc, zp)) {
        if (m <= (act == MPL_ACT_F16 && n >= 16384 && n > k ? 8 : 16)) return "cuda_w4a16:skinny";
        /* stream-K's first bucket (33..64) reaches down to 17 for halves */
        if (!zp && expected_streamk(m >= 17 && m <= 32 ? 33 : m, k, n, 4)) return "cuda_w4a16:wg-streamk";
        return m <= (!zp && n * k >= ((int64_t)1 << 27) ? 1024 : 512) ? "cuda_w4a16:wg" : "cuda_w4a16:dq";
    }
    /* skinny-rounded comes first with skinny's range and takes bf16 uint4b8 */
    const int w8wg = g_w8 && cc == 90 && k % 64 == 0;
    /* w4a16_gemv's layers (cc 9.0, k % 128 == 0, groups of 128k or one) */
    const int gemv = cc == 90 && k % 128 == 0 && (gs == -1 || gs % 128 == 0);
    const int64_t skinny_top = gemv && shared_x_band(n)  ? 16
                               : w8wg && n > k           ? (n >= 16384 ? (gemv ? 8 : 3) : (gemv ? 16 : 8))
                               : gemv && !g_w8           ? (k < 8192 && n >= 16384 ? 8 : 16)
                               : (g_w8 ? 2 * k : k) >= 8192 ? 16
                                                            : 8;
    if (m <= skinny_top)
        return act == MPL_ACT_BF16 && !zp && !g_w8 ? "cuda_w4a16:skinny-rounded" : "cuda_w4a16:skinny";
    if (w8wg && m <= 512 && expected_streamk(m, k, n, 4)) return "cuda_w4a16:wg-streamk";
    if (w8wg && m <= (n * k >= ((int64_t)1 << 26) ? 512 : W8_WG_HI)) return "cuda_w4a16:wg";
    if (g_w8) return m >= 65 && k % 64 == 0 ? "cuda_w4a16:dq" : "cuda_w4a16:tc";
    if (cc == 90 && !zp && expected_streamk(m, k, n, 4)) return "cuda_w4a16:wg-streamk";
    /* wg to 512; 4-bit layers of 2^27 weights and more without zero points to 1024 (dq copies the whole layer) */
    const int64_t wg_top = !zp && n * k >= ((int64_t)1 << 27) ? 1024 : 512;
    if (cc == 90 && m >= 33 && m <= wg_top) return "cuda_w4a16:wg";
    if (m >= 161) return "cuda_w4a16:dq";
    return "cuda_w4a16:tc";
}

/* mpl_layer_weight_rounding for a path (mplinear.h): dq rounds every weight once to the activation type; wg
 * too unless it keeps exact group sums (m <= 32 and every 64-channel chunk inside one group); skinny-rounded
 * (bf16, uint4b8) when every scale is exact in bf16 (the layout then stores bf16 scales; other scale formats
 * run skinny's exact form); the others sum exact integer weights. */
static double expected_rounding(const char *path, int64_t m, int64_t gs, int64_t k, mpl_act act, int bf16_scales) {
    const double u = act == MPL_ACT_BF16 ? 0x1.0p-8 : 0x1.0p-11;
    if (!strcmp(path, "cuda_w4a16:dq")) return u;
    if (!strcmp(path, "cuda_w4a16:skinny-rounded")) return bf16_scales ? u : 0.0;
    if (!strcmp(path, "cuda_w4a16:wg")) return m <= 32 && (gs == -1 || gs == k || gs % 64 == 0) ? 0.0 : u;
    if (!strcmp(path, "cuda_w4a16:wg-streamk")) return u; /* rounded weights at every m */
    return 0.0;
}

static int cuda_kernel_index(void) {
    for (int i = 0; i < mpl_kernel_count(); i++) {
        mpl_kernel_info ki;
        if (mpl_kernel_get(i, &ki) == MPL_OK && !strcmp(ki.name, "cuda_w4a16")) return i;
    }
    fail_msg("cuda_w4a16 is not in the registry of a CUDA build");
    return -1;
}

static void path_table(void **state) {
    (void)state;
    static const struct {
        const char *name;
        int64_t m_min, m_max, m_limit;
        int min_cc, max_cc;
    } want[] = {
        {"cuda_w4a16:skinny-rounded", 1, 16, 16, 0, 0}, /* bf16 without zero points: before skinny */
        {"cuda_w4a16:skinny", 1, 16, 16, 0, 0},
        {"cuda_w4a16:wg-streamk", 33, 512, MPL_M_ANY, 90, 90}, /* narrowed per layer (expected_streamk) */
        {"cuda_w4a16:wg", 33, 512, MPL_M_ANY, 90, 90},
        {"cuda_w4a16:dq", 161, MPL_M_ANY, MPL_M_ANY, 0, 0},
        {"cuda_w4a16:tc", 1, MPL_M_ANY, MPL_M_ANY, 0, 0}, /* the fallback: any m, any device the kernel takes */
    };
    const int ki = cuda_kernel_index();
    mpl_kernel_info info;
    assert_int_equal(mpl_kernel_get(ki, &info), MPL_OK);
    assert_int_equal(info.paths, (int)(sizeof want / sizeof want[0]));
    assert_int_equal(mpl_kernel_cuda_w4a16.npaths, info.paths);
    assert_int_equal(mpl_kernel_cuda_w4a16.min_cc, 80);
    for (int j = 0; j < info.paths; j++) {
        mpl_path_info pi;
        assert_int_equal(mpl_path_get(ki, j, &pi), MPL_OK);
        if (strcmp(pi.name, want[j].name) || pi.m_min != want[j].m_min || pi.m_max != want[j].m_max ||
            pi.m_limit != want[j].m_limit)
            fail_msg("path %d: %s m %lld..%lld limit %lld, want %s m %lld..%lld limit %lld", j, pi.name,
                     (long long)pi.m_min, (long long)pi.m_max, (long long)pi.m_limit, want[j].name,
                     (long long)want[j].m_min, (long long)want[j].m_max, (long long)want[j].m_limit);
        assert_int_equal(mpl_kernel_cuda_w4a16.paths[j].min_cc, want[j].min_cc);
        assert_int_equal(mpl_kernel_cuda_w4a16.paths[j].max_cc, want[j].max_cc);
        /* the why names a measurement: it carries numbers */
        assert_non_null(strpbrk(pi.why, "0123456789"));
    }
}

/* The default path by m on devices of several compute capabilities and both sides of skinny's K rule. */
static void default_paths(void **state) {
    (void)state;
    static const int ccs[] = {80, 86, 89, 90, 100, 120};
    static const int64_t ks[] = {4096, 8184, 8192, 28672};
    static const int64_t ms[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 65, 160, 161, 162, 511, 512, 513, 1024,
                                 4096, (int64_t)1 << 20, MPL_MAX_M};
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    int checked = 0;
    for (size_t ci = 0; ci < sizeof ccs / sizeof ccs[0]; ci++) {
        fake_gpus(1, ccs[ci]);
        for (size_t kj = 0; kj < sizeof ks / sizeof ks[0]; kj++) {
            mpl_config c;
            mpl_config_init(&c, ks[kj], 1024); /* group -1: 8184 (just below skinny's K switch) has no 128-groups */
            for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
                const char *got = NULL, *want = expected_default(ms[mi], ks[kj], 1024, c.group_size, ccs[ci], c.act, c.zero_points);
                mpl_status st = mpl_choose_path(&c, &o, ms[mi], &got);
                if (st != MPL_OK || !got || strcmp(got, want))
                    fail_msg("cc %d k %lld m %lld: %s (%s), want %s", ccs[ci], (long long)ks[kj], (long long)ms[mi],
                             got ? got : "no path", st == MPL_OK ? "ok" : mpl_last_error(), want);
                checked++;
            }
            /* skinny's verdict carries the narrowed range: 1..8 below K = 8192, 1..16 from it, and 1..16 where w4a16_gemv
             * runs the layer (cc 9.0, k % 128 == 0; n 1024 < 16384) (skinny-rounded: the same) */
            const int64_t top = ccs[ci] == 90 && ks[kj] % 128 == 0 ? 16 : ks[kj] >= 8192 ? 16 : 8;
            mpl_verdict v;
            assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:skinny", &v), MPL_OK);
            assert_int_equal(v.reason, MPL_REASON_OK);
            assert_int_equal(v.m_min, 1);
            assert_int_equal(v.m_max, top);
            assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:skinny-rounded", &v), MPL_OK);
            assert_int_equal(v.reason, MPL_REASON_OK);
            assert_int_equal(v.m_max, top);
            /* f16 and zero points keep skinny */
            c.act = MPL_ACT_F16;
            const char *got16 = NULL;
            assert_int_equal(mpl_choose_path(&c, &o, 1, &got16), MPL_OK);
            assert_string_equal(got16, "cuda_w4a16:skinny");
            assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:skinny-rounded", &v), MPL_OK);
            assert_int_equal(v.reason, MPL_REASON_ACT_TYPE);
            c.act = MPL_ACT_BF16;
        }
    }
    /* wg-streamk's range on the benchmark's layers (bench/cuda/NOTES.md v13: where the H200 measured it ahead of
     * wg), and the choice it makes at the ends of the range */
    static const struct {
        int64_t k, n, m_min, m_max; /* m_min > m_max: forced only */
    } sk[] = {
        {8192, 57344, 33, 512}, {28672, 8192, 33, 128}, {8192, 10240, 33, 512}, {8192, 8192, 33, 128},
        {14336, 4096, 33, 256}, {4096, 6144, 33, 0},    {4096, 4096, 33, 0},    {4096, 28672, 257, 512}, /* v26: 257..512 */
    };
    fake_gpus(1, 90);
    for (size_t i = 0; i < sizeof sk / sizeof sk[0]; i++) {
        mpl_config c;
        mpl_config_init(&c, sk[i].k, sk[i].n);
        c.group_size = 128;
        mpl_verdict v;
        assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:wg-streamk", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_OK);
        if (v.m_min != sk[i].m_min || v.m_max != sk[i].m_max)
            fail_msg("k %lld n %lld: wg-streamk m %lld..%lld, want %lld..%lld", (long long)sk[i].k, (long long)sk[i].n,
                     (long long)v.m_min, (long long)v.m_max, (long long)sk[i].m_min, (long long)sk[i].m_max);
        c.zero_points = 1, c.wtype = MPL_WTYPE_UINT4; /* zero points: forced only */
        assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:wg-streamk", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_OK);
        if (v.m_min <= v.m_max) fail_msg("k %lld n %lld, zero points: wg-streamk m %lld..%lld, want forced only",
                                         (long long)sk[i].k, (long long)sk[i].n, (long long)v.m_min, (long long)v.m_max);
        c.zero_points = 0, c.wtype = MPL_WTYPE_UINT4B8;
        /* 8-bit layers (both planes per stage; zeros always): the same range, measured (H100 v20; the 257..512 bucket
         * H100 v38), and the choices around it (skinny to 3 or 8, wg to 256 or 512, dq after) */
        static const mpl_wtype w8[] = {MPL_WTYPE_UINT8B128, MPL_WTYPE_UINT8};
        const int64_t w8_min = sk[i].m_min, w8_max = sk[i].m_max;
        for (size_t w = 0; w < 2; w++) {
            c.wtype = w8[w], c.zero_points = w8[w] == MPL_WTYPE_UINT8;
            assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:wg-streamk", &v), MPL_OK);
            assert_int_equal(v.reason, MPL_REASON_OK);
            if (v.m_min != w8_min || v.m_max != w8_max)
                fail_msg("k %lld n %lld, %s: wg-streamk m %lld..%lld, want %lld..%lld", (long long)sk[i].k, (long long)sk[i].n,
                         mpl_wtype_name(c.wtype), (long long)v.m_min, (long long)v.m_max, (long long)w8_min, (long long)w8_max);
            g_w8 = 1;
            static const int64_t at8[] = {1, 3, 4, 9, 17, 33, 64, 65, 128, 129, 256, 257, 512};
            for (size_t j = 0; j < sizeof at8 / sizeof at8[0]; j++) {
                const char *got = NULL, *want = expected_default(at8[j], sk[i].k, sk[i].n, c.group_size, 90, c.act, c.zero_points);
                assert_int_equal(mpl_choose_path(&c, &o, at8[j], &got), MPL_OK);
                if (!got || strcmp(got, want))
                    fail_msg("k %lld n %lld m %lld, %s: %s, want %s", (long long)sk[i].k, (long long)sk[i].n,
                             (long long)at8[j], mpl_wtype_name(c.wtype), got ? got : "no path", want);
                checked++;
            }
            g_w8 = 0;
        }
        c.zero_points = 0, c.wtype = MPL_WTYPE_UINT4B8;
        static const int64_t at[] = {32, 33, 64, 65, 128, 129, 256, 257, 511, 512, 513, 1024, 1025};
        for (size_t j = 0; j < sizeof at / sizeof at[0]; j++) {
            const char *got = NULL, *want = expected_default(at[j], sk[i].k, sk[i].n, c.group_size, 90, c.act, 0);
            assert_int_equal(mpl_choose_path(&c, &o, at[j], &got), MPL_OK);
            if (!got || strcmp(got, want))
                fail_msg("k %lld n %lld m %lld: %s, want %s", (long long)sk[i].k, (long long)sk[i].n, (long long)at[j],
                         got ? got : "no path", want);
            if ((at[j] >= sk[i].m_min && at[j] <= sk[i].m_max) != !strcmp(want, "cuda_w4a16:wg-streamk"))
                fail_msg("k %lld n %lld m %lld: the test's restated rule (%s) disagrees with its table", (long long)sk[i].k,
                         (long long)sk[i].n, (long long)at[j], want);
            checked++;
        }
    }
    printf("cuda_w4a16 default paths: %d (cc, k, m) choices as the table says\n", checked);
}

/* Path refusals, forcing and disabling by name, each with the value and the rule in the message. */
/* A layer packed below 4 bits per weight (form: "halves" or "thirds"; h bf16, k 4096, n 1024 on cc 9.0): tc and
 * skinny-rounded refuse it, naming the path, the type and the form; the default goes skinny to 16, wg to 512, dq after */
static void narrow_no_tc(const mpl_config *h, const mpl_options *o, const char *form) {
    mpl_verdict v;
    const char *got = NULL;
    static const char *no[] = {"cuda_w4a16:tc", "cuda_w4a16:skinny-rounded"};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(mpl_check(h, o, no[i], &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_WEIGHT_TYPE);
        if (!strstr(v.message, no[i]) || !strstr(v.message, form) || !strstr(v.message, mpl_wtype_name(h->wtype)))
            fail_msg("%s: %s refusal '%s' should name the path, the type and the %s", form, no[i], v.message, form);
    }
    static const struct {
        int64_t m;
        const char *want;
    } dm[] = {{1, "cuda_w4a16:skinny"}, {16, "cuda_w4a16:skinny"}, {17, "cuda_w4a16:wg"}, {32, "cuda_w4a16:wg"},
              {512, "cuda_w4a16:wg"}, {513, "cuda_w4a16:dq"}};
    for (size_t i = 0; i < sizeof dm / sizeof dm[0]; i++) {
        assert_int_equal(mpl_choose_path(h, o, dm[i].m, &got), MPL_OK);
        if (!got || strcmp(got, dm[i].want)) fail_msg("%s m %lld: %s, want %s", form, (long long)dm[i].m, got ? got : "no path", dm[i].want);
    }
}

static void path_refusals(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, 4096, 1024);
    c.group_size = 128;
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    mpl_verdict v;
    const char *got = NULL;

    /* wg is sm_90a code: refused below and above 9.0, by name, with the device's capability */
    static const int not90[] = {80, 89, 100};
    for (size_t i = 0; i < sizeof not90 / sizeof not90[0]; i++) {
        fake_gpus(1, not90[i]);
        assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:wg", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_DEVICE);
        char has[16];
        snprintf(has, sizeof has, "%d.%d", not90[i] / 10, not90[i] % 10);
        if (!strstr(v.message, "cuda_w4a16:wg") || !strstr(v.message, "9.0") || !strstr(v.message, has))
            fail_msg("cc %d: wg refusal '%s' should name the path, 9.0 and %s", not90[i], v.message, has);
        assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:tc", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_OK);
        o.kernel = "cuda_w4a16:wg";
        assert_int_equal(mpl_choose_path(&c, &o, 64, &got), MPL_ERR_NO_HARDWARE);
        assert_non_null(strstr(mpl_last_error(), "cuda_w4a16:wg"));
        o.kernel = NULL;
    }
    /* below the kernel's floor every path goes with it */
    fake_gpus(1, 75);
    assert_int_equal(mpl_check(&c, &o, "cuda_w4a16", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_DEVICE);
    assert_non_null(strstr(v.message, "8.0"));
    assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:tc", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_DEVICE);
    /* a device ordinal the platform does not have */
    fake_gpus(1, 90);
    o.cuda_device = 1;
    assert_int_equal(mpl_check(&c, &o, "cuda_w4a16", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_DEVICE);
    assert_non_null(strstr(v.message, "device 1"));
    o.cuda_device = 0;

    /* forced: every m up to the path's limit, whatever its default range */
    o.kernel = "cuda_w4a16:skinny";
    assert_int_equal(mpl_choose_path(&c, &o, 16, &got), MPL_OK);
    assert_string_equal(got, "cuda_w4a16:skinny");
    assert_int_equal(mpl_choose_path(&c, &o, 17, &got), MPL_OK);
    assert_null(got); /* past m_limit 16: no path (apply refuses, naming the limit) */
    o.kernel = "cuda_w4a16:wg";
    assert_int_equal(mpl_choose_path(&c, &o, 1, &got), MPL_OK);
    assert_string_equal(got, "cuda_w4a16:wg");
    o.kernel = "cuda_w4a16:stream"; /* measured dead, removed (git tag exp/cuda-stream-v7) */
    assert_int_equal(mpl_choose_path(&c, &o, 1, &got), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "cuda_w4a16:tc"));
    o.kernel = NULL;

    /* 2-bit halves (cc 9.0, k % 128 == 0, groups of 128k or one): tc and skinny-rounded refuse them, naming the halves;
     * the default goes skinny -> wg (no tc) -> dq; off 9.0, and with groups of 64, the 4-bit codes keep every path */
    {
        mpl_config h = c;
        h.wtype = MPL_WTYPE_UINT2B2;
        h.act = MPL_ACT_BF16;
        fake_gpus(1, 90);
        narrow_no_tc(&h, &o, "halves");
        /* stream-K's first bucket from m = 17 where it pays (70B down), not where it does not (8B gate_up) */
        mpl_config hd = h, hg = h;
        hd.k = hd.full_k = 28672, hd.n = hd.full_n = 8192;
        hg.k = hg.full_k = 4096, hg.n = hg.full_n = 28672;
        assert_int_equal(mpl_choose_path(&hd, &o, 16, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:skinny");
        assert_int_equal(mpl_choose_path(&hd, &o, 17, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:wg-streamk");
        assert_int_equal(mpl_choose_path(&hg, &o, 16, &got), MPL_OK); /* bf16: skinny to 16 on wide layers too */
        assert_string_equal(got, "cuda_w4a16:skinny");
        assert_int_equal(mpl_choose_path(&hg, &o, 17, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:wg");
        hg.act = MPL_ACT_F16;
        assert_int_equal(mpl_choose_path(&hg, &o, 8, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:skinny");
        assert_int_equal(mpl_choose_path(&hg, &o, 9, &got), MPL_OK); /* f16, wide (n >= 16384, n > k): wg from 9 */
        assert_string_equal(got, "cuda_w4a16:wg");
        h.group_size = 64; /* 4-bit codes: tc and skinny-rounded again */
        assert_int_equal(mpl_check(&h, &o, "cuda_w4a16:tc", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_OK);
        assert_int_equal(mpl_choose_path(&h, &o, 1, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:skinny-rounded");
        h.group_size = 128;
        fake_gpus(1, 89);
        assert_int_equal(mpl_check(&h, &o, "cuda_w4a16:tc", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_OK);
        assert_int_equal(mpl_choose_path(&h, &o, 9, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:tc");
        fake_gpus(1, 90);
    }

    /* 3-bit thirds (cc 9.0, k % 256 == 0, groups of 128k or one): tc and skinny-rounded refuse them, naming the thirds;
     * the default goes skinny -> wg (no tc) -> dq; with k % 256 != 0, groups of 64, or off 9.0 the 4-bit codes keep
     * every path */
    {
        mpl_config h = c;
        h.wtype = MPL_WTYPE_UINT3B4;
        h.act = MPL_ACT_BF16;
        fake_gpus(1, 90);
        narrow_no_tc(&h, &o, "thirds");
        /* wide (n >= 16384, n > k): skinny to 8, wg from 9, unless w4a16_gemv's block-shared x fills one wave (n_pad /
         * 256 blocks between 70% and 100% of 132 SMs: 8B gate_up, n 28672): skinny to 16 there; > 2^26 weights: wg to
         * 1024, dq after */
        mpl_config hw = h;
        hw.n = hw.full_n = 28672;
        {
            /* (type, n, m, the default): thirds, and the same at 4 bits (tc from 9 elsewhere) and 8 bits (wg from 9) */
            static const struct {
                mpl_wtype w;
                int64_t n, m;
                const char *want;
            } sx[] = {
                {MPL_WTYPE_UINT3B4, 57344, 8, "cuda_w4a16:skinny"},          {MPL_WTYPE_UINT3B4, 57344, 9, "cuda_w4a16:wg"},
                {MPL_WTYPE_UINT3B4, 28672, 16, "cuda_w4a16:skinny"},         {MPL_WTYPE_UINT3B4, 28672, 17, "cuda_w4a16:wg"},
                {MPL_WTYPE_UINT4B8, 28672, 16, "cuda_w4a16:skinny-rounded"}, {MPL_WTYPE_UINT4B8, 57344, 9, "cuda_w4a16:tc"},
                {MPL_WTYPE_UINT8B128, 28672, 16, "cuda_w4a16:skinny"},       {MPL_WTYPE_UINT8B128, 57344, 9, "cuda_w4a16:wg"},
            };
            for (size_t i = 0; i < sizeof sx / sizeof sx[0]; i++) {
                mpl_config hx = hw;
                hx.wtype = sx[i].w, hx.n = hx.full_n = sx[i].n;
                assert_int_equal(mpl_choose_path(&hx, &o, sx[i].m, &got), MPL_OK);
                if (!got || strcmp(got, sx[i].want))
                    fail_msg("%s n %lld m %lld: %s, want %s", mpl_wtype_name(sx[i].w), (long long)sx[i].n, (long long)sx[i].m,
                             got ? got : "no path", sx[i].want);
            }
        }
        assert_int_equal(mpl_choose_path(&hw, &o, 1024, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:wg");
        assert_int_equal(mpl_choose_path(&hw, &o, 1025, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:dq");
        mpl_config ho = h; /* 2^26 weights (70B o): dq from 513; with zero points too (wg to 1024 not measured) */
        ho.k = ho.full_k = 8192, ho.n = ho.full_n = 8192;
        assert_int_equal(mpl_choose_path(&ho, &o, 513, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:dq");
        hw.wtype = MPL_WTYPE_UINT3, hw.zero_points = 1;
        assert_int_equal(mpl_choose_path(&hw, &o, 513, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:dq");
        h.wtype = MPL_WTYPE_UINT3, h.zero_points = 1, h.act = MPL_ACT_F16; /* with zero points, f16: the same */
        assert_int_equal(mpl_check(&h, &o, "cuda_w4a16:tc", &v), MPL_OK);
        assert_int_equal(v.reason, MPL_REASON_WEIGHT_TYPE);
        assert_int_equal(mpl_choose_path(&h, &o, 16, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:skinny");
        assert_int_equal(mpl_choose_path(&h, &o, 17, &got), MPL_OK);
        assert_string_equal(got, "cuda_w4a16:wg");
        static const struct {
            int64_t k, gs;
            int cc;
        } four[] = {{4096, 64, 90}, {3968, 128, 90}, {4096, 128, 89}}; /* groups of 64; k % 256 = 128; cc 8.9 */
        for (size_t i = 0; i < sizeof four / sizeof four[0]; i++) {
            mpl_config f = h;
            f.k = f.full_k = four[i].k, f.group_size = four[i].gs;
            fake_gpus(1, four[i].cc);
            assert_int_equal(mpl_check(&f, &o, "cuda_w4a16:tc", &v), MPL_OK);
            if (v.reason != MPL_REASON_OK) fail_msg("thirds off (k %lld, group %lld, cc %d): tc refused: %s", (long long)f.k, (long long)f.group_size, four[i].cc, v.message);
        }
        fake_gpus(1, 90);
    }

    /* 8-bit on cc 9.0 (H200 v17, H100 v19, v20; w4a16_gemv's layers H100 v30): layers with n > k leave skinny for wg
     * at m = 4 where n >= 16384, at 9 below, and with w4a16_gemv (k % 128 == 0, groups of 128k or one) at 9 and 17;
     * n <= k keep skinny to 16; wg to 256, to 512 on layers of 2^26 weights and more (H100 v38; wg-streamk first on
     * the wide 70B layers from m = 33 to 512), dq after; one group per channel the same */
    {
        static const struct {
            int64_t k, n, gs, m;
            const char *want;
        } w8[] = {
            {8192, 57344, 128, 8, "cuda_w4a16:skinny"}, {8192, 57344, 128, 9, "cuda_w4a16:wg"},
            {8256, 57344, -1, 3, "cuda_w4a16:skinny"},  {8256, 57344, -1, 4, "cuda_w4a16:wg"}, /* no gemv: k % 128 = 64 */
            {8192, 57344, 64, 3, "cuda_w4a16:skinny"},  {8192, 57344, 64, 4, "cuda_w4a16:wg"},  /* no gemv: 64-groups */
            {8192, 57344, 128, 32, "cuda_w4a16:wg"},    {8192, 57344, 128, 33, "cuda_w4a16:wg-streamk"},
            {8192, 57344, 128, 256, "cuda_w4a16:wg-streamk"}, {8192, 57344, 128, 512, "cuda_w4a16:wg-streamk"},
            {8192, 57344, 128, 513, "cuda_w4a16:dq"},
            {28672, 8192, 128, 512, "cuda_w4a16:wg"}, {28672, 8192, 128, 513, "cuda_w4a16:dq"}, /* >= 2^26 weights */
            {8192, 8192, 128, 512, "cuda_w4a16:wg"},  {4096, 6144, 128, 256, "cuda_w4a16:wg"},
            {4096, 6144, 128, 257, "cuda_w4a16:dq"}, /* 8B qkv: below 2^26 weights, wg to 256 */
            {28672, 8192, 128, 128, "cuda_w4a16:wg-streamk"}, {28672, 8192, 128, 129, "cuda_w4a16:wg"},
            {4096, 28672, 128, 64, "cuda_w4a16:wg"}, /* 8B gate_up: wg throughout */
            {28672, 8192, 128, 16, "cuda_w4a16:skinny"}, {28672, 8192, 128, 17, "cuda_w4a16:wg"},
            {8192, 57344, -1, 8, "cuda_w4a16:skinny"},  {8192, 57344, -1, 9, "cuda_w4a16:wg"},
            {8192, 10240, 128, 16, "cuda_w4a16:skinny"}, {8192, 10240, 128, 17, "cuda_w4a16:wg"}, /* n > k, n < 16384 */
            {4096, 6144, -1, 16, "cuda_w4a16:skinny"},   {4096, 6144, -1, 17, "cuda_w4a16:wg"},
            {4160, 6144, -1, 8, "cuda_w4a16:skinny"},    {4160, 6144, -1, 9, "cuda_w4a16:wg"}, /* no gemv */
            {8192, 57344, -1, 256, "cuda_w4a16:wg-streamk"}, {8192, 57344, -1, 512, "cuda_w4a16:wg-streamk"},
            {8192, 57344, -1, 513, "cuda_w4a16:dq"},
        };
        fake_gpus(1, 90);
        for (size_t i = 0; i < sizeof w8 / sizeof w8[0]; i++) {
            mpl_config c8;
            mpl_config_init(&c8, w8[i].k, w8[i].n);
            c8.wtype = MPL_WTYPE_UINT8B128;
            c8.group_size = w8[i].gs;
            assert_int_equal(mpl_choose_path(&c8, &o, w8[i].m, &got), MPL_OK);
            if (!got || strcmp(got, w8[i].want))
                fail_msg("8-bit k %lld n %lld group %lld m %lld: %s, want %s", (long long)w8[i].k, (long long)w8[i].n,
                         (long long)w8[i].gs, (long long)w8[i].m, got ? got : "no path", w8[i].want);
            assert_int_equal(mpl_check(&c8, &o, "cuda_w4a16:wg", &v), MPL_OK);
            assert_int_equal(v.reason, MPL_REASON_OK);
        }
    }

    /* disabled by name: the next row whose range holds m, else the first whose limit allows it */
    setenv("MPL_DISABLED_KERNELS", "cuda_w4a16:wg", 1);
    assert_int_equal(mpl_check(&c, &o, "cuda_w4a16:wg", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_DISABLED);
    assert_int_equal(mpl_choose_path(&c, &o, 100, &got), MPL_OK);
    assert_string_equal(got, "cuda_w4a16:tc");
    assert_int_equal(mpl_choose_path(&c, &o, 300, &got), MPL_OK);
    assert_string_equal(got, "cuda_w4a16:dq");
    fake_gpus(1, 80);
    setenv("MPL_DISABLED_KERNELS", "cuda_w4a16:tc", 1);
    assert_int_equal(mpl_choose_path(&c, &o, 12, &got), MPL_OK); /* no range holds 12: skinny-rounded's limit does */
    assert_string_equal(got, "cuda_w4a16:skinny-rounded");
    assert_int_equal(mpl_choose_path(&c, &o, 20, &got), MPL_OK); /* ... and only dq's limit holds 20 */
    assert_string_equal(got, "cuda_w4a16:dq");
    setenv("MPL_DISABLED_KERNELS", "cuda_w4a16:tc,cuda_w4a16:dq", 1);
    assert_int_equal(mpl_choose_path(&c, &o, 20, &got), MPL_OK);
    assert_null(got);
    unsetenv("MPL_DISABLED_KERNELS");
}

/* pack lives on mpl_options.cuda_device: a device the platform claims but CUDA lacks fails the create
 * with its ordinal in the message (instead of packing on the current device). Runs with or without a GPU. */
static void packs_on_the_asked_device(void **state) {
    (void)state;
    mpl_platform_info pi;
    assert_int_equal(mpl_platform_get(&pi), MPL_OK);
    const int dev = pi.cuda_devices < MPL_CUDA_MAX_DEVICES ? pi.cuda_devices : MPL_CUDA_MAX_DEVICES - 1;
    if (pi.cuda_devices >= MPL_CUDA_MAX_DEVICES) {
        printf("SKIP packs_on_the_asked_device: every ordinal below MPL_CUDA_MAX_DEVICES exists\n");
        skip();
    }
    mpl_config c;
    mpl_config_init(&c, 128, 64);
    c.act = MPL_ACT_F16;
    uint8_t codes[64 * 128];
    float scales[64];
    for (int i = 0; i < 64 * 128; i++) codes[i] = (uint8_t)(i % 16);
    for (int i = 0; i < 64; i++) scales[i] = 0.5f;
    mpl_checkpoint_tensors ck;
    assert_int_equal(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, scales, MPL_DTYPE_F16, NULL, NULL, &ck), MPL_OK);
    fake_gpus(dev + 1, 90);
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    o.cuda_device = dev;
    mpl_layer *l = NULL;
    mpl_status st = mpl_layer_create(&c, &ck, &o, &l);
    char says[32];
    snprintf(says, sizeof says, "device %d", dev);
    if (st == MPL_OK || !strstr(mpl_last_error(), says))
        fail_msg("create on missing device %d: %s: '%s' (want a failure naming '%s')", dev, mpl_status_string(st),
                 mpl_last_error(), says);
    assert_null(l);
    mpl_checkpoint_tensors_free(&ck);
}

/* ---------- device cases ---------- */

static int g_cc; /* compute capability of device 0 (major * 10 + minor), set by have_device */

static int have_device(void) {
    mpl_platform_info pi;
    if (mpl_platform_get(&pi) != MPL_OK || pi.cuda_devices == 0 || pi.cuda_cc < 80) {
        printf("SKIP cuda_w4a16 device cases: %s\n",
               pi.cuda_devices == 0 ? pi.cuda_note : "compute capability below 8.0");
        return 0;
    }
    g_cc = pi.cuda_cc;
    return 1;
}

/* The table's paths (public API), and which of them this device runs (mpl_check). */
static int g_npaths;
static const char *g_path_name[MPL_MAX_PATHS];
static int64_t g_path_limit[MPL_MAX_PATHS];
static int g_path_runs[MPL_MAX_PATHS];

static void load_paths(void) {
    const int ki = cuda_kernel_index();
    mpl_kernel_info info;
    assert_int_equal(mpl_kernel_get(ki, &info), MPL_OK);
    g_npaths = info.paths;
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    for (int j = 0; j < g_npaths; j++) {
        mpl_path_info pi;
        assert_int_equal(mpl_path_get(ki, j, &pi), MPL_OK);
        g_path_name[j] = pi.name;
        g_path_limit[j] = pi.m_limit;
        mpl_verdict v;
        assert_int_equal(mpl_check(NULL, &o, pi.name, &v), MPL_OK);
        g_path_runs[j] = v.reason == MPL_REASON_OK;
        if (!g_path_runs[j]) printf("cuda_w4a16 device cases: %s not run here: %s\n", pi.name, v.message);
    }
}

/* The tuning every apply of the device cases reads (mpl_cuda_w4a16_tuning_override). */
static mpl_cuda_w4a16_tuning g_tune;

typedef struct dcase {
    int64_t k, n, gs;
    int zp, act_order;
    mpl_act act;
    tu_data_kind data;
    mpl_dtype scale_dtype;
    mpl_layout layout;
    int bias;
} dcase;

static const char *fmt_case(const dcase *d, int64_t m, const char *path, int ksplit, char *buf, size_t cap) {
    snprintf(buf, cap,
             "k=%lld n=%lld gs=%lld %s%s %s %s scales %s%s m=%lld path=%s ksplit=%d dq_slab=%zu overlap=%d wg_blocks=%d nw=%d "
             "shared_x=%d",
             (long long)d->k, (long long)d->n, (long long)d->gs,
             g_w8 ? (d->zp ? "uint8 zp" : "uint8b128") : mpl_wtype_name(d->zp ? g_asym : g_sym),
             d->act_order ? " act-order" : "", mpl_act_name(d->act), d->data == TU_DATA_EXACT ? "exact" : "random",
             mpl_dtype_name(d->scale_dtype), d->bias ? " bias" : "", (long long)m, path ? path : "default", ksplit,
             g_tune.dq_slab_bytes, g_tune.dq_overlap, g_tune.wg_blocks, g_tune.skinny_nw, g_tune.skinny_shared_x);
    return buf;
}

#define CK(call)                                                                                              \
    do {                                                                                                      \
        cudaError_t e_ = (call);                                                                              \
        if (e_ != cudaSuccess) {                                                                              \
            fprintf(stderr, "FAIL %s: %s: %s\n", what, #call, cudaGetErrorString(e_));                         \
            goto done;                                                                                        \
        }                                                                                                     \
    } while (0)

/* MPL_CUDA_W4A16_TEST_SHARD=i/n: this process runs only the cases whose order in the matrix is i modulo n (n processes
 * side by side share the matrix: its float64 oracle and ref runs are single-threaded host work, over 7 minutes in one
 * process on a 16-core host in v41); g_ran counts the cases this process ran. */
static long g_shard, g_shards = 1, g_calls, g_ran;

/* The verdict line of a group of rounds (what: "" for the whole matrix, else " (halves)" ...), with the shard's share */
static void verdict(const char *what, int cases, int bad, uint64_t seed) {
    printf("cuda_w4a16 device matrix%s: %d cases, %d failed (seed 0x%llx; shard %ld/%ld ran %ld)\n", what, cases, bad,
           (unsigned long long)seed, g_shard, g_shards, g_ran);
}

/* One case: path NULL = the table's default for m, else the path forced by name; returns 1 on pass. */
static int run_case(const dcase *d, int64_t m, uint64_t seed, const char *path, int ksplit) {
    if (g_calls++ % g_shards != g_shard) return 1;
    g_ran++;
    char what[360];
    fmt_case(d, m, path, ksplit, what, sizeof what);
    g_tune.ksplit = ksplit;
    int ok = 0;
    mpl_config c;
    mpl_config_init(&c, d->k, d->n);
    c.group_size = d->gs;
    c.zero_points = d->zp;
    c.wtype = g_w8 ? (d->zp ? MPL_WTYPE_UINT8 : MPL_WTYPE_UINT8B128) : d->zp ? g_asym : g_sym;
    c.act_order = d->act_order;
    c.act = d->act;
    tu_weights w;
    memset(&w, 0, sizeof w);
    mpl_checkpoint_tensors ck;
    memset(&ck, 0, sizeof ck);
    mpl_layer *kl = NULL, *rl = NULL;
    void *x = NULL, *b = NULL, *dx = NULL, *db = NULL, *dy = NULL;
    float *xf = NULL, *bf = NULL;
    double *want = NULL, *mag = NULL, *tol = NULL;
    uint16_t *ydev = NULL;
    cudaStream_t stream = NULL;
    tu_buf y1, y2, yr;
    memset(&y1, 0, sizeof y1), memset(&y2, 0, sizeof y2), memset(&yr, 0, sizeof yr);
    tu_rng r;
    tu_rng_init(&r, seed);
    if (tu_weights_random(&w, &c, d->scale_dtype, c.act_order ? TU_GIDX_PERMUTED : TU_GIDX_NONE, d->data, &r)) goto done;
    if (tu_weights_encode(&w, d->layout, &ck) != MPL_OK) {
        fprintf(stderr, "FAIL %s: encode: %s\n", what, mpl_last_error());
        goto done;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    o.kernel = path ? path : "cuda_w4a16";
    mpl_status st = mpl_layer_create(&c, &ck, &o, &kl);
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s: create: %s: %s\n", what, mpl_status_string(st), mpl_last_error());
        goto done;
    }
    mpl_options_init(&o);
    o.kernel = "ref";
    if (mpl_layer_create(&c, &ck, &o, &rl) != MPL_OK) {
        fprintf(stderr, "FAIL %s: create ref: %s\n", what, mpl_last_error());
        goto done;
    }
    /* the path that runs: the forced one, or the table's default for (m, K, this device) */
    const char *runs = path ? path : expected_default(m, d->k, d->n, d->gs, g_cc, d->act, d->zp);
    const char *says = mpl_layer_path(kl, m);
    if (!says || strcmp(says, runs) != 0) {
        fprintf(stderr, "FAIL %s: mpl_layer_path = %s, expected %s%s\n", what, says ? says : "NULL", runs,
                !strcmp(runs, "cuda_w4a16:wg") ? " (was the weights' tensor map refused at pack?)" : "");
        goto done;
    }
    /*
     * The paths that round weights (expected_rounding: dq, and wg unless it keeps exact group sums) multiply
     * 16-bit weights w^ = round16(fl32((code - zero) * scale)) (fp32 sums): |w^ - w s| <= (u16 + 2^-24 +
     * u16 2^-24) |w s| with u16 the activation type's unit roundoff (2^-8 bf16, 2^-11 f16; no f16 subnormals
     * here: every nonzero |w s| >= 2^-7 in these data), so the products add at most (u16 + 2^-23) * mag on
     * top of the fp32 summation bound tu_tolerance already allows (whose K + G + 2 roundings cover cuBLAS's
     * K + 2: products, sums, the bias add). Exact data (power-of-two scales, small integers) stays exact:
     * it is still compared bit for bit. The public query must state the same u.
     */
    int bf16_scales = 1; /* every scale exact in bf16: the layout's scale format for bf16 activations */
    for (int64_t i = 0; i < c.n * (d->gs == -1 ? 1 : d->k / d->gs); i++) {
        uint32_t bits;
        memcpy(&bits, &w.scales[i], 4);
        if (bits & 0xffffu) bf16_scales = 0;
    }
    const double u = expected_rounding(runs, m, d->gs, d->k, d->act, bf16_scales);
    if (mpl_layer_weight_rounding(kl, m) != u) {
        fprintf(stderr, "FAIL %s: mpl_layer_weight_rounding = %g, expected %g for %s\n", what,
                mpl_layer_weight_rounding(kl, m), u, runs);
        goto done;
    }
    size_t ny = (size_t)(m * d->n), nx = (size_t)(m * d->k);
    x = malloc(nx * 2);
    xf = malloc(nx * sizeof(float));
    b = malloc((size_t)d->n * 2);
    bf = malloc((size_t)d->n * sizeof(float));
    want = malloc(ny * sizeof(double));
    mag = malloc(ny * sizeof(double));
    tol = malloc(ny * sizeof(double));
    ydev = malloc((ny + 64) * 2);
    if (!x || !xf || !b || !bf || !want || !mag || !tol || !ydev || !tu_buf_alloc(&y1, ny * 2, 0xFF) ||
        !tu_buf_alloc(&y2, ny * 2, 0xFF) || !tu_buf_alloc(&yr, ny * 2, 0xFF)) {
        fprintf(stderr, "FAIL %s: out of memory\n", what);
        goto done;
    }
    tu_act_random(&r, &c, m, d->data, x, xf);
    tu_bias_random(&r, c.act, c.n, d->data, b, bf);
    const void *bias = d->bias ? b : NULL;
    tu_oracle(&w, m, xf, d->bias ? bf : NULL, want, mag);
    const double extra = u > 0 ? u + 0x1.0p-23 : 0.0;
    for (size_t i = 0; i < ny; i++) tol[i] = tu_tolerance(&c, want[i], mag[i], extra);
    if ((st = mpl_layer_apply(kl, m, x, bias, y1.p)) != MPL_OK || (st = mpl_layer_apply(kl, m, x, bias, y2.p)) != MPL_OK ||
        (st = mpl_layer_apply(rl, m, x, bias, yr.p)) != MPL_OK) {
        fprintf(stderr, "FAIL %s: apply: %s: %s\n", what, mpl_status_string(st), mpl_last_error());
        goto done;
    }
    int good = tu_buf_guards_ok(&y1, what) & tu_buf_guards_ok(&y2, what);
    if (memcmp(y1.p, y2.p, ny * 2) != 0) {
        fprintf(stderr, "FAIL %s: seed=0x%llx: two applies differ (not deterministic)\n", what,
                (unsigned long long)seed);
        good = 0;
    }
    if (tu_compare(what, seed, &c, m, y1.p, want, d->data == TU_DATA_EXACT ? NULL : tol)) good = 0;
    if (d->data == TU_DATA_EXACT && memcmp(y1.p, yr.p, ny * 2) != 0) {
        fprintf(stderr, "FAIL %s: seed=0x%llx: exact data but output differs from ref\n", what,
                (unsigned long long)seed);
        good = 0;
    }
    /* Device pointers on a stream, into a poisoned buffer with a poisoned tail of 64 elements. */
    CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CK(cudaMalloc(&dx, nx * 2));
    CK(cudaMalloc(&db, (size_t)d->n * 2));
    CK(cudaMalloc(&dy, (ny + 64) * 2));
    CK(cudaMemcpy(dx, x, nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, b, (size_t)d->n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(dy, 0xFF, (ny + 64) * 2));
    st = mpl_layer_apply_device(kl, m, dx, d->bias ? db : NULL, dy, stream);
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s: apply_device: %s: %s\n", what, mpl_status_string(st), mpl_last_error());
        goto done;
    }
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(ydev, dy, (ny + 64) * 2, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < ny; i++)
        if (ydev[i] == 0xFFFF) {
            fprintf(stderr, "FAIL %s: seed=0x%llx: y[%zu][%zu] never written (poison left)\n", what,
                    (unsigned long long)seed, i / (size_t)d->n, i % (size_t)d->n);
            good = 0;
            break;
        }
    for (size_t i = ny; i < ny + 64; i++)
        if (ydev[i] != 0xFFFF) {
            fprintf(stderr, "FAIL %s: element %zu past the end of y was written\n", what, i - ny);
            good = 0;
            break;
        }
    if (good && memcmp(ydev, y1.p, ny * 2) != 0) {
        fprintf(stderr, "FAIL %s: seed=0x%llx: device-pointer result differs from host-pointer result\n", what,
                (unsigned long long)seed);
        good = 0;
    }
    ok = good;
done:
    if (stream) cudaStreamDestroy(stream);
    cudaFree(dx), cudaFree(db), cudaFree(dy);
    mpl_layer_destroy(kl);
    mpl_layer_destroy(rl);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
    free(x), free(xf), free(b), free(bf), free(want), free(mag), free(tol), free(ydev);
    tu_buf_free(&y1), tu_buf_free(&y2), tu_buf_free(&yr);
    g_tune.ksplit = 0;
    return ok;
}

static const int64_t all_m[] = {1, 2, 7, 8, 9, 16, 17, 64, 65, 257, 1024};

/* Paths that refuse the case's config (tested in path_refusals): skinny-rounded takes bf16 uint4b8 only;
 * 8-bit layers take wg, wg-streamk and dq only with k % 64 == 0. */
static int refused(const dcase *d, const char *path) {
    if (!strcmp(path, "cuda_w4a16:skinny-rounded") && (d->act != MPL_ACT_BF16 || d->zp || g_w8)) return 1;
    if ((!strcmp(path, "cuda_w4a16:skinny-rounded") || !strcmp(path, "cuda_w4a16:tc")) &&
        (halves_case(d->k, d->gs, g_cc, d->zp) || thirds_case(d->k, d->gs, g_cc, d->zp)))
        return 1;
    if (g_w8 && (!strcmp(path, "cuda_w4a16:dq") || !strcmp(path, "cuda_w4a16:wg") || !strcmp(path, "cuda_w4a16:wg-streamk")) &&
        d->k % 64 != 0)
        return 1;
    return 0;
}
static const int64_t few_m[] = {1, 9, 17, 65};

/* Every M through the default choice, then through every other path of the table this device runs and
 * whose limit allows m, forced by name. */
static int run_ms(const dcase *d, const int64_t *ms, int nm, uint64_t seed, int *cases) {
    int bad = 0;
    for (int i = 0; i < nm; i++) {
        uint64_t s = tu_case_seed(seed, (uint64_t)(*cases)++);
        bad += !run_case(d, ms[i], s, NULL, 0);
        const char *def = expected_default(ms[i], d->k, d->n, d->gs, g_cc, d->act, d->zp);
        for (int j = 0; j < g_npaths; j++) {
            if (!g_path_runs[j] || ms[i] > g_path_limit[j] || !strcmp(g_path_name[j], def)) continue;
            if (refused(d, g_path_name[j])) continue;
            bad += !run_case(d, ms[i], s, g_path_name[j], 0), (*cases)++;
        }
    }
    return bad;
}

/* path forced when this device runs it */
static int run_forced(const dcase *d, int64_t m, uint64_t seed, const char *path, int ksplit) {
    if (refused(d, path)) return 1;
    for (int j = 0; j < g_npaths; j++)
        if (!strcmp(g_path_name[j], path)) return g_path_runs[j] ? run_case(d, m, seed, path, ksplit) : 1;
    fprintf(stderr, "FAIL: no path %s in the table\n", path);
    return 0;
}

/* dq with 16 KiB slabs (several per layer), with and without the copy overlap, on the first n cases of d at m = 65;
 * the tuning is back at its default after. */
static int dq_slab_rounds(const dcase *d, size_t n, uint64_t seed, int *cases) {
    int bad = 0;
    for (int ov = 0; ov <= 1; ov++) {
        g_tune.dq_slab_bytes = (size_t)16 << 10;
        g_tune.dq_overlap = ov;
        for (size_t i = 0; i < n; i++)
            bad += !run_forced(&d[i], 65, tu_case_seed(seed, (uint64_t)*cases), "cuda_w4a16:dq", 0), (*cases)++;
        g_tune = mpl_cuda_w4a16_tuning_default;
    }
    return bad;
}

/* Short names for the device matrix's case tables (the rounds below) */
static const tu_data_kind EX = TU_DATA_EXACT, RN = TU_DATA_RANDOM;
static const mpl_dtype F16 = MPL_DTYPE_F16, BF16 = MPL_DTYPE_BF16, F32 = MPL_DTYPE_F32;
static const mpl_layout G = MPL_LAYOUT_GPTQ;

/* 2-bit halves rounds of the device matrix (MPL_CUDA_W4A16_TEST_HALVES: these alone). */
static int halves_matrix(uint64_t seed, int *pcases) {
    int bad = 0, cases = *pcases;
    /* 2-bit in halves (cc 9.0; k % 128 == 0, groups of 128k or one): every path that reads them, default and forced,
     * at every m boundary (skinny's one and two token tiles, wg's token tiles 16 / 32 / 64 / 128 and its exact and
     * rounded forms, wg-streamk, dq), both activation types, exact and random data, zero points (uint2) and not
     * (uint2b2, zero 2), act-order, group 128 / 256 / -1, f16 / bf16 / f32 scales, N tails, bias; on a wide layer
     * skinny's four row tiles with split-K 1 and 2; wg-streamk's few persistent blocks; dq with several slabs
     * (cases off cc 9.0 run the 4-bit codes, as above) */
    g_sym = MPL_WTYPE_UINT2B2, g_asym = MPL_WTYPE_UINT2;
    {
        const dcase hv[] = {
            {1024, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1}, {1280, 72, 256, 1, 1, MPL_ACT_F16, RN, F16, G, 0},
            {768, 200, -1, 0, 0, MPL_ACT_BF16, RN, F32, G, 1},    {2048, 1032, 128, 1, 0, MPL_ACT_BF16, RN, F16, MPL_LAYOUT_CT, 1},
            {1024, 136, 128, 0, 1, MPL_ACT_F16, EX, F16, G, 1},
        };
        const int64_t hv_m[] = {1, 8, 9, 16, 17, 33, 65, 129, 513};
        for (size_t i = 0; i < sizeof hv / sizeof hv[0]; i++)
            bad += run_ms(&hv[i], hv_m, (int)(sizeof hv_m / sizeof hv_m[0]), seed, &cases);
        const dcase hw = {8192, 6656, 128, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1};
        const int64_t hw_m[] = {1, 16};
        for (int j = 0; j < 2; j++) {
            uint64_t s = tu_case_seed(seed, (uint64_t)cases++);
            bad += !run_forced(&hw, hw_m[j], s, "cuda_w4a16:skinny", 0);
            bad += !run_forced(&hw, hw_m[j], s, "cuda_w4a16:skinny", 2), cases++;
        }
        for (int b = 1; b <= 7; b += 3) {
            g_tune.wg_blocks = b;
            bad += !run_forced(&hv[3], 65, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
            bad += !run_forced(&hv[3], 200, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
            /* stream-K's 257..512 bucket, a default for halves since v38 */
            bad += !run_forced(&hv[3], 300, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
        }
        g_tune = mpl_cuda_w4a16_tuning_default;
        /* wg past 512 (halves to 1024 on layers of 2^27 weights since v38): m = 700 (five 128-token tiles and a tail)
         * and 1024 (eight), bf16: uint2b2 on exact data with bf16 scales (N 264), uint2 with zero points and f16 scales
         * in the compressed-tensors layout (N 1032) */
        const int hv_wide[] = {0, 3};
        const int64_t wide_m[] = {700, 1024};
        for (size_t i = 0; i < 2; i++)
            for (size_t j = 0; j < 2; j++)
                bad += !run_forced(&hv[hv_wide[i]], wide_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", 0), cases++;
        bad += dq_slab_rounds(hv, 3, seed, &cases);
        /* four row tiles per warp with two token tiles (f16: the tuning, two by default; bf16: on layers this small the
         * rule gives two) */
        g_tune.skinny_nw = 4;
        for (size_t i = 0; i < sizeof hv / sizeof hv[0]; i++)
            for (int j = 9; j <= 16; j += 7)
                bad += !run_forced(&hv[i], j, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", 0), cases++;
        bad += !run_forced(&hw, 16, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", 0), cases++;
        g_tune = mpl_cuda_w4a16_tuning_default;
        for (int j = 1; j <= 4; j *= 2) /* wg's split-K through a cluster */
            bad += !run_forced(&hv[3], 64, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", j), cases++;
    }
    g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;
    *pcases = cases;
    return bad;
}

/* skinny forced on a wide layer: split-K 1, 2, 4 at m 1, 8, 16, each warp its own x; and with the block-shared x
 * (w4a16_gemv's two forms) at m 2, 4, 8, 16 (thirds) or 9, 16 (the others: it has no m <= 8 form for them) */
static int wide_skinny_rounds(const dcase *d, int thirds, uint64_t seed, int *pcases) {
    int bad = 0, cases = *pcases;
    static const int64_t own[] = {1, 8, 16, 0}, sx_thirds[] = {2, 4, 8, 16, 0}, sx_others[] = {9, 16, 0};
    for (int sx = -1; sx <= 1; sx += 2) {
        g_tune.skinny_shared_x = sx;
        const int64_t *ms = sx < 0 ? own : thirds ? sx_thirds : sx_others;
        for (int ks = 0; ks <= 4; ks = ks ? 2 * ks : 1) /* 0: the launcher's split-K (the clusters that fit) */
            for (int i = 0; ms[i]; i++)
                bad += !run_forced(d, ms[i], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", ks), cases++;
    }
    g_tune = mpl_cuda_w4a16_tuning_default;
    *pcases = cases;
    return bad;
}

/* The thirds rounds' layers (thirds_matrix, m1_matrix) */
static const dcase thirds_cases[] = {
    {1024, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1}, {1280, 72, 256, 1, 1, MPL_ACT_F16, RN, F16, G, 0},
    {768, 200, -1, 0, 0, MPL_ACT_BF16, RN, F32, G, 1},    {2048, 1032, 128, 1, 0, MPL_ACT_BF16, RN, F16, MPL_LAYOUT_CT, 1},
    {1024, 136, 128, 0, 1, MPL_ACT_F16, EX, F16, G, 1},   {1536, 40, 384, 1, 0, MPL_ACT_BF16, RN, BF16, G, 1},
    {1536, 88, 384, 0, 0, MPL_ACT_F16, RN, F32, G, 1},
};
#define N_THIRDS_CASES (sizeof thirds_cases / sizeof thirds_cases[0])

/* 3-bit thirds rounds of the device matrix (MPL_CUDA_W4A16_TEST_THIRDS: these alone). */
static int thirds_matrix(uint64_t seed, int *pcases) {
    int bad = 0, cases = *pcases;
    /* 3-bit in thirds (cc 9.0; k % 256 == 0, groups of 128k or one): every path that reads them, default and forced, at
     * every m boundary (w4a16_gemv's one token, 8 and 16 token rows; wg's token tiles and its exact and rounded forms,
     * wg-streamk, dq), both activation types, exact and random data, zero points (uint3) and not (uint3b4, zero 4),
     * act-order, group 128 / 256 / 384 (a group ending mid-run) / -1, f16 / bf16 / f32 scales, N tails, bias; two and four
     * row tiles per warp; on a wide layer split-K 1, 2 and 4; wg-streamk's few persistent blocks; dq with several slabs
     * (cases off cc 9.0 run the 4-bit codes) */
    g_sym = MPL_WTYPE_UINT3B4, g_asym = MPL_WTYPE_UINT3;
    const dcase *th = thirds_cases;
    const int64_t th_m[] = {1, 2, 8, 9, 16, 17, 33, 65, 129, 513};
    for (size_t i = 0; i < N_THIRDS_CASES; i++)
        bad += run_ms(&th[i], th_m, (int)(sizeof th_m / sizeof th_m[0]), seed, &cases);
    /* two and four row tiles per warp, each warp its own x and (m 2..16) the block-shared x (NW 4 runs it at 2) */
    for (int sx = -1; sx <= 1; sx += 2)
        for (int nw = 2; nw <= 4; nw += 2) {
            g_tune.skinny_nw = nw, g_tune.skinny_shared_x = sx;
            for (size_t i = 0; i < N_THIRDS_CASES; i++)
                for (int m = sx > 0 ? 2 : 1; m <= 16; m = m == 1 ? 5 : m == 2 ? 5 : m == 5 ? 12 : m == 12 ? 16 : 17)
                    bad += !run_forced(&th[i], m, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", 0), cases++;
        }
    g_tune = mpl_cuda_w4a16_tuning_default;
    const dcase tw = {8192, 6656, 128, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1};
    bad += wide_skinny_rounds(&tw, 1, seed, &cases);
    for (int b = 1; b <= 7; b += 3) {
        g_tune.wg_blocks = b;
        bad += !run_forced(&th[3], 65, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
        bad += !run_forced(&th[3], 200, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
        /* stream-K's 257..512 bucket, a default for thirds since v38 */
        bad += !run_forced(&th[3], 300, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
    }
    g_tune = mpl_cuda_w4a16_tuning_default;
    bad += dq_slab_rounds(th, 3, seed, &cases);
    for (int j = 1; j <= 4; j *= 2) /* wg's split-K through a cluster */
        bad += !run_forced(&th[3], 64, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", j), cases++;
    g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;
    *pcases = cases;
    return bad;
}

/* w4a16_gemv (the skinny paths' kernel at m <= 16 on cc 9.0 where K % 128 == 0 and groups are -1 or 128-channel
 * multiples): one token, every token count to the MMA's 8 columns and to two token tiles (rows past m zero-filled in
 * the ring), 4-bit codes,
 * 8-bit planes and bf16 halves, both activation types, exact and random data, zero points, act-order (x gathered),
 * group -1 / 128 / 256, f16 / bf16 / f32 scales, N tails, bias, two and four row tiles per warp, split-K 1, 2, 4;
 * both skinny paths forced (alone under MPL_CUDA_W4A16_TEST_GEMV) */
static const dcase gemv_cases[] = {
    {1024, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1}, {1536, 72, -1, 1, 0, MPL_ACT_F16, RN, F32, G, 0},
    {2048, 136, 256, 0, 1, MPL_ACT_BF16, RN, F16, G, 1},  {1024, 200, 128, 1, 1, MPL_ACT_BF16, RN, BF16, MPL_LAYOUT_CT, 1},
    {1536, 40, 128, 0, 0, MPL_ACT_F16, EX, F16, G, 1},
};
#define N_GEMV_CASES (sizeof gemv_cases / sizeof gemv_cases[0])
static int gemv_matrix(uint64_t seed, int *pcases) {
    int bad = 0, cases = *pcases;
    const dcase *gv = gemv_cases;
    const int64_t gv_m[] = {1, 2, 3, 5, 8, 9, 12, 16};
    const char *sk[] = {"cuda_w4a16:skinny", "cuda_w4a16:skinny-rounded"};
    for (int w = 0; w < 3; w++) { /* 4-bit codes, 8-bit planes, 2-bit halves (bf16; f16 keeps the skinny loop) */
        g_w8 = w == 1;
        if (w == 2) g_sym = MPL_WTYPE_UINT2B2, g_asym = MPL_WTYPE_UINT2;
        /* each warp its own x, and (m 9..16) the block-shared x: 8 warps x 2 row tiles (8-bit with skinny_nw 2: 1) */
        for (int sx = -1; sx <= 1; sx += 2)
            for (int nw = 2; nw <= 4; nw += 2) {
                g_tune.skinny_nw = nw, g_tune.skinny_shared_x = sx;
                for (size_t i = 0; i < N_GEMV_CASES; i++)
                    for (size_t j = sx > 0 ? 5 : 0; j < sizeof gv_m / sizeof gv_m[0]; j++) /* sx: from m = 9 */
                        for (int p = 0; p < 2; p++)
                            if (!refused(&gv[i], sk[p]))
                                bad += !run_forced(&gv[i], gv_m[j], tu_case_seed(seed, (uint64_t)cases), sk[p], 0), cases++;
            }
        g_tune = mpl_cuda_w4a16_tuning_default;
        const dcase wide = {8192, 6656, 128, w == 1, 0, MPL_ACT_BF16, RN, BF16, G, 1};
        bad += wide_skinny_rounds(&wide, 0, seed, &cases);
    }
    g_w8 = 0, g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;
    *pcases = cases;
    return bad;
}

/* One token on w4a16_gemv (MPL_CUDA_W4A16_TEST_M1: these alone; a subset of the gemv and thirds rounds, for a short
 * device call after a change to the m = 1 form): the gemv and thirds layers at m = 1 for 4-bit codes, 8-bit planes,
 * 2-bit halves and 3-bit thirds, default and both skinny paths forced at two and four row tiles per warp, and a wide
 * layer at the launcher's split-K and at 1, 2, 4 */
static int m1_matrix(uint64_t seed, int *pcases) {
    int bad = 0, cases = *pcases;
    const char *sk[] = {"cuda_w4a16:skinny", "cuda_w4a16:skinny-rounded"};
    const int64_t one[] = {1};
    for (int w = 0; w < 4; w++) { /* 4-bit codes, 8-bit planes, 2-bit halves, 3-bit thirds */
        g_w8 = w == 1;
        if (w == 2) g_sym = MPL_WTYPE_UINT2B2, g_asym = MPL_WTYPE_UINT2;
        if (w == 3) g_sym = MPL_WTYPE_UINT3B4, g_asym = MPL_WTYPE_UINT3;
        const dcase *cs = w == 3 ? thirds_cases : gemv_cases;
        const size_t n = w == 3 ? N_THIRDS_CASES : N_GEMV_CASES;
        for (size_t i = 0; i < n; i++) {
            bad += run_ms(&cs[i], one, 1, seed, &cases);
            for (int nw = 2; nw <= 4; nw += 2) {
                g_tune.skinny_nw = nw;
                for (int p = 0; p < 2; p++)
                    if (!refused(&cs[i], sk[p]))
                        bad += !run_forced(&cs[i], 1, tu_case_seed(seed, (uint64_t)cases), sk[p], 0), cases++;
            }
            g_tune = mpl_cuda_w4a16_tuning_default;
        }
        const dcase wide = {8192, 6656, 128, w == 1, 0, MPL_ACT_BF16, RN, BF16, G, 1};
        for (int ks = 0; ks <= 4; ks = ks ? 2 * ks : 1)
            bad += !run_forced(&wide, 1, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", ks), cases++;
    }
    g_w8 = 0, g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;
    *pcases = cases;
    return bad;
}

/* 8-bit rounds of the device matrix (alone under MPL_CUDA_W4A16_TEST_W8) */
static int w8_matrix(uint64_t seed, int *pcases) {
    int bad = 0, cases = *pcases;
    /* 8-bit weights (uint8b128, uint8 + zero points) as two 4-bit planes: every path that takes them, default
     * and forced, both activation types, exact and random data, act-order, group -1, a K of 16 * odd (no dq),
     * bias; dq with several slabs and both overlap settings */
    const dcase w8c[] = {
        {512, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1}, {1024, 152, 128, 1, 0, MPL_ACT_F16, RN, F16, MPL_LAYOUT_CT, 1},
        {768, 200, 64, 1, 1, MPL_ACT_BF16, RN, BF16, G, 0},  {960, 56, -1, 0, 0, MPL_ACT_F16, RN, F32, G, 1},
        {1040, 40, 16, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1},  {8192, 264, 128, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1},
    };
    const int64_t w8_m[] = {1, 9, 16, 17, 33, 65, 257};
    g_w8 = 1;
    for (size_t i = 0; i < sizeof w8c / sizeof w8c[0]; i++)
        bad += run_ms(&w8c[i], w8_m, (int)(sizeof w8_m / sizeof w8_m[0]), seed, &cases);
    bad += dq_slab_rounds(w8c, 3, seed, &cases);
    /* 8-bit on wg (both planes of a chunk per stage, one rounding of (c - z) s): every token tile (16, 32, 64, 128)
     * and its edges, the exact form (m <= 32, groups of 64k) and the rounded one, every scale form (bf16 / f16
     * activations with scales in their own type, f16 scales under bf16 and f32 scales: the fp32 form), zero points,
     * act-order, group sizes 16 / 32 (four slots per chunk) / 64 / 128 / 256 / -1, N tails, bias, split-K 1, 2, 4 */
    const dcase w8wg[] = {
        {960, 72, 32, 1, 0, MPL_ACT_BF16, RN, F16, G, 1},   {1024, 104, 256, 0, 1, MPL_ACT_F16, RN, F16, G, 1},
        {768, 40, 16, 0, 0, MPL_ACT_BF16, RN, F32, G, 0},   {1536, 264, -1, 1, 0, MPL_ACT_BF16, EX, BF16, G, 1}, /* group -1 */
        {1024, 200, 64, 1, 1, MPL_ACT_F16, EX, F16, G, 1},
        {512, 1024, 128, 0, 0, MPL_ACT_BF16, RN, F16, G, 0}, /* n > k (n < 16384): skinny to m = 8, wg from 9 */
    };
    const int64_t w8wg_m[] = {16, 31, 32, 33, 64, 65, 128, 129, 300};
    for (size_t i = 0; i < sizeof w8wg / sizeof w8wg[0]; i++)
        for (size_t j = 0; j < sizeof w8wg_m / sizeof w8wg_m[0]; j++)
            bad += !run_forced(&w8wg[i], w8wg_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", 0), cases++;
    const int ks[] = {1, 2, 4};
    for (int j = 0; j < 3; j++)
        bad += !run_forced(&w8c[5], 64, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", ks[j]), cases++;
    /* m 257..512 (defaults since v38: wg on layers of 2^26 weights, stream-K's fourth bucket): wg at 512 on a few
     * forms, stream-K at 300 and 512 */
    for (size_t i = 0; i < sizeof w8wg / sizeof w8wg[0]; i += 2)
        bad += !run_forced(&w8wg[i], 512, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", 0), cases++;
    const int64_t sk_m[] = {300, 512};
    for (size_t j = 0; j < 2; j++) {
        bad += !run_forced(&w8c[5], sk_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
        bad += !run_forced(&w8wg[1], sk_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
    }
    /* 8-bit on skinny (both planes of a chunk per ring stage, exact, FORM_W8; k % 64 == 0): the wg cases' group sizes
     * (16 and 32: zeros and scales per k16 step from global memory; 64..256 and -1: in the ring), scale formats, zero
     * points, act-order and N tails at m 1 / 8 / 9 / 16 (one and two token tiles), split-K 1, 2, 4 on K = 8192 */
    const int64_t w8sk_m[] = {1, 8, 9, 16};
    for (size_t i = 0; i < sizeof w8wg / sizeof w8wg[0]; i++)
        for (size_t j = 0; j < sizeof w8sk_m / sizeof w8sk_m[0]; j++)
            bad += !run_forced(&w8wg[i], w8sk_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", 0), cases++;
    for (int j = 0; j < 3; j++)
        bad += !run_forced(&w8c[5], j == 2 ? 9 : 1, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", ks[j]), cases++;
    /* FORM_W8 with one row tile per warp (the tuning's skinny_nw 2; the default is two, 4 blocks per chunk), and
     * w4a16_gemv's 8-bit form with one (m = 1: w8wg[3] and [5] take it, K % 128 == 0 with groups of -1 / 128) */
    g_tune.skinny_nw = 2;
    for (size_t i = 0; i < sizeof w8wg / sizeof w8wg[0]; i++)
        for (int m = 1; m <= 9; m += 8)
            if (m == 1 || i % 2 == 0)
                bad += !run_forced(&w8wg[i], m, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", 0), cases++;
    g_tune = mpl_cuda_w4a16_tuning_default;
    /* 8-bit on wg-streamk (forced: the default on the wide 70B layers only): both token tiles (64, 128; m <= 32 pads to 64), the wg cases' group sizes,
     * scale forms, zero points, act-order, N tails, and few persistent blocks (whole tiles, then split ones) */
    const int64_t w8sk2_m[] = {17, 64, 65, 200};
    for (size_t i = 0; i < sizeof w8wg / sizeof w8wg[0]; i++)
        for (size_t j = 0; j < sizeof w8sk2_m / sizeof w8sk2_m[0]; j++)
            bad += !run_forced(&w8wg[i], w8sk2_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
    for (int b = 1; b <= 3; b += 2) {
        g_tune.wg_blocks = b;
        bad += !run_forced(&w8c[5], 129, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
        bad += !run_forced(&w8wg[3], 64, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
    }
    g_tune = mpl_cuda_w4a16_tuning_default;
    for (size_t i = 0; i < 2; i++) /* the default choice (and every path forced) at m = 17 and 1024 */
        bad += run_ms(&w8wg[i], (const int64_t[]){17, 1024}, 2, seed, &cases);
    bad += run_ms(&w8wg[5], (const int64_t[]){8, 9, 256, 257}, 4, seed, &cases); /* both ends of the n > k ranges */
    g_w8 = 0;
    *pcases = cases;
    return bad;
}

static int device_matrix_body(void) {
    load_paths();
    uint64_t seed = tu_seed(0x5eed);
    int bad = 0, cases = 0;
    /* every M, both activation types, exact and random data */
    const dcase full[] = {
        {512, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1},
        {1000, 136, -1, 0, 0, MPL_ACT_F16, RN, F16, G, 1},            /* K tail: 1000 = 15*64 + 40 */
        {960, 72, 32, 1, 0, MPL_ACT_BF16, EX, F16, MPL_LAYOUT_CT, 1}, /* two groups per chunk, zp */
        {768, 200, 64, 1, 1, MPL_ACT_F16, RN, F16, G, 0},             /* act-order + zp */
    };
    /* every group size (multiples of 16 and -1), zero points on and off, scale encodings */
    const dcase groups[] = {
        {960, 40, 16, 0, 0, MPL_ACT_F16, EX, F16, G, 1},   {960, 56, 48, 1, 0, MPL_ACT_BF16, RN, BF16, G, 1},
        {960, 24, 64, 0, 0, MPL_ACT_BF16, RN, F32, G, 1},  {960, 88, 80, 1, 0, MPL_ACT_F16, EX, BF16, G, 0},
        {1024, 104, 256, 0, 0, MPL_ACT_F16, RN, F16, G, 1}, {1024, 152, 128, 1, 0, MPL_ACT_F16, RN, F32, G, 1},
        {520, 8, -1, 1, 0, MPL_ACT_BF16, EX, F16, G, 1},    {4160, 48, 4160, 0, 0, MPL_ACT_BF16, RN, F16, G, 1},
        {960, 72, 32, 0, 1, MPL_ACT_BF16, EX, F16, G, 1},   {1024, 40, 128, 1, 1, MPL_ACT_BF16, RN, BF16, G, 1},
        {1536, 64, 512, 0, 1, MPL_ACT_F16, EX, F16, G, 1},
        /* skinny-rounded's rounded form: bf16, uint4b8, bf16 scales, random data (chunk groups, two groups per
         * chunk, act-order) */
        {1024, 72, 128, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1},  {960, 40, 32, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1},
        {768, 64, 64, 0, 1, MPL_ACT_BF16, RN, BF16, G, 0},
    };
    /* wide layers: the skinny path's 4-row-tile warps (N >= ~6400 on 132 SMs), with and without split-K 2 */
    const dcase wide[] = {
        {1024, 6656, 128, 1, 0, MPL_ACT_BF16, EX, F16, G, 1},
        {768, 6664, 32, 0, 1, MPL_ACT_F16, RN, BF16, G, 1},
        {8192, 6656, 128, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1},
    };
    /* one group of rounds alone, selected by its variable (a short device call after a change to its kernels) */
    static const struct {
        const char *env, *what;
        int (*run)(uint64_t, int *);
    } alone[] = {{"MPL_CUDA_W4A16_TEST_HALVES", " (halves)", halves_matrix},
                 {"MPL_CUDA_W4A16_TEST_THIRDS", " (thirds)", thirds_matrix},
                 {"MPL_CUDA_W4A16_TEST_GEMV", " (gemv)", gemv_matrix},
                 {"MPL_CUDA_W4A16_TEST_M1", " (m = 1)", m1_matrix},
                 {"MPL_CUDA_W4A16_TEST_W8", " (8-bit)", w8_matrix}};
    for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++)
        if (getenv(alone[i].env)) {
            bad += alone[i].run(seed, &cases);
            verdict(alone[i].what, cases, bad, seed);
            return bad;
        }
    /* MPL_CUDA_W4A16_TEST_WG: the wg kernels alone (a short device call after a change to them): both forms forced at
     * the token-tile edges (split-K through clusters 1 / 2 / 4 included), stream-K on few persistent blocks, the defaults
     * from m = 17, and the 8-bit, halves and thirds forms of both at m = 65 and 300 (halves with bf16 and with f16 scales:
     * the SPLIT form and its scale_split warp, as groups[7] at the edges and the thirds case) */
    if (getenv("MPL_CUDA_W4A16_TEST_WG")) {
        const dcase *edge[] = {&full[0], &full[3], &groups[3], &groups[7]}; /* the full matrix's tile-edge layers */
        const int64_t edge_m[] = {16, 17, 32, 33, 64, 65, 128, 129, 513};
        for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
            for (size_t j = 0; j < sizeof edge_m / sizeof edge_m[0]; j++) {
                bad += !run_forced(edge[i], edge_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", 0), cases++;
                bad += !run_forced(edge[i], edge_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
            }
        for (int ks = 1; ks <= 4; ks *= 2)
            bad += !run_forced(&full[0], 64, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", ks), cases++;
        /* m 512 .. 704 on the S16 (bf16 and f16), F32_ONE and SPLIT forms: whole and partial 128-token tiles (and the
         * edges of the 176-token tile of bench/results/v41/bt176.patch, which ran these: 0 failed) */
        const dcase *big[] = {&full[0], &full[3], &groups[5], &groups[7]};
        const int64_t big_m[] = {512, 528, 529, 704};
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
            for (size_t j = 0; j < sizeof big_m / sizeof big_m[0]; j++)
                bad += !run_forced(big[i], big_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg", 0), cases++;
        for (int b = 1; b <= 7; b += 3) {
            g_tune.wg_blocks = b;
            bad += !run_forced(&wide[0], 65, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
            bad += !run_forced(&wide[0], 200, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
        }
        g_tune = mpl_cuda_w4a16_tuning_default;
        const int64_t wm[] = {17, 65, 257};
        for (size_t i = 0; i < sizeof full / sizeof full[0]; i++) bad += run_ms(&full[i], wm, 3, seed, &cases);
        const char *wp[] = {"cuda_w4a16:wg", "cuda_w4a16:wg-streamk"};
        const int64_t fm[] = {65, 300};
        /* width (0: 8-bit planes, 1: 2-bit halves, 2: 3-bit thirds) and layer */
        const struct { int w; const dcase *d; } fc[] = {
            {0, &gemv_cases[0]}, {1, &gemv_cases[0]}, {1, &gemv_cases[2]}, {2, &thirds_cases[3]}};
        for (size_t f = 0; f < sizeof fc / sizeof fc[0]; f++) {
            g_w8 = fc[f].w == 0;
            if (fc[f].w == 1) g_sym = MPL_WTYPE_UINT2B2, g_asym = MPL_WTYPE_UINT2;
            if (fc[f].w == 2) g_sym = MPL_WTYPE_UINT3B4, g_asym = MPL_WTYPE_UINT3;
            for (int p = 0; p < 2; p++)
                for (int j = 0; j < 2; j++)
                    bad += !run_forced(fc[f].d, fm[j], tu_case_seed(seed, (uint64_t)cases), wp[p], 0), cases++;
        }
        g_w8 = 0, g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;
        verdict(" (wg)", cases, bad, seed);
        return bad;
    }
    /* MPL_CUDA_W4A16_TEST_QUICK: a few cases (for compute-sanitizer, which is slow) */
    if (getenv("MPL_CUDA_W4A16_TEST_QUICK")) {
        const int64_t qm[] = {1, 17, 65};
        bad += run_ms(&full[0], qm, 3, seed, &cases);
        bad += run_ms(&full[2], qm, 3, seed, &cases);
        bad += run_ms(&full[3], qm, 3, seed, &cases);
        verdict(" (quick)", cases, bad, seed);
        return bad;
    }
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        bad += run_ms(&full[i], all_m, (int)(sizeof all_m / sizeof all_m[0]), seed, &cases);
    /* skinny with four row tiles per warp (the shape the launcher gives layers with N above ~6400; these small ones
     * get two), both forms, one and two token tiles */
    g_tune.skinny_nw = 4;
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        for (int j = 0; j < 2; j++) {
            bad += !run_forced(&full[i], j ? 9 : 1, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny", 0), cases++;
            bad += !run_forced(&full[i], j ? 9 : 1, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:skinny-rounded", 0), cases++;
        }
    g_tune = mpl_cuda_w4a16_tuning_default;
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        bad += run_ms(&groups[i], few_m, (int)(sizeof few_m / sizeof few_m[0]), seed, &cases);
    const int64_t wide_m[] = {1, 7, 9, 16};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        for (int j = 0; j < 4; j++) {
            uint64_t s = tu_case_seed(seed, (uint64_t)cases++);
            bad += !run_forced(&wide[i], wide_m[j], s, "cuda_w4a16:skinny", 0);
            bad += !run_forced(&wide[i], wide_m[j], s, "cuda_w4a16:skinny", 2), cases++;
            bad += !run_forced(&wide[i], wide_m[j], s, "cuda_w4a16:skinny-rounded", 0), cases++;
            bad += !run_forced(&wide[i], wide_m[j], s, "cuda_w4a16:skinny-rounded", 2), cases++;
        }
    /* tile edges: tc's tiles by m (256 rows of N to m = 32, 128 rows for 33..64, 256 x 64 above), wg's token
     * tiles (16, 32, 64, 128) and its switch from exact group sums to rounded weights after m = 32 */
    const int64_t edge_m[] = {16, 17, 32, 33, 64, 65, 128, 129};
    const dcase *edge[] = {&full[0], &full[3], &groups[3]};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        for (int j = 0; j < 8; j++) {
            uint64_t s = tu_case_seed(seed, (uint64_t)cases++);
            bad += !run_forced(edge[i], edge_m[j], s, "cuda_w4a16:tc", 0);
            bad += !run_forced(edge[i], edge_m[j], s, "cuda_w4a16:wg", 0), cases++;
            bad += !run_forced(edge[i], edge_m[j], s, "cuda_w4a16:wg-streamk", 0), cases++;
        }
    /* wg-streamk's persistent grid forced to few blocks, so that one call mixes whole tiles (data-parallel
     * waves), tiles split over 2-3 blocks and blocks with two partial tiles: 26 or 27 tiles of 256 rows of N */
    const int wg_blocks[] = {1, 3, 7};
    const int64_t wgb_m[] = {17, 65, 200};
    for (size_t i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int b = 0; b < 3; b++) {
                g_tune.wg_blocks = wg_blocks[b];
                bad += !run_forced(&wide[i], wgb_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:wg-streamk", 0), cases++;
                g_tune.wg_blocks = 0;
            }
    /* dq path: several slabs (16 KiB slabs: 8..32 rows here), with and without the overlap, on layers
     * that cover f16/bf16, zero points, act-order, f32/bf16 scales, bias, group -1 and uneven N */
    const dcase dqc[] = {
        {512, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1}, {1024, 152, 128, 1, 0, MPL_ACT_F16, RN, F32, G, 1},
        {768, 200, 64, 1, 1, MPL_ACT_F16, RN, F16, G, 0},    {960, 56, 48, 1, 0, MPL_ACT_BF16, RN, BF16, G, 1},
        {520, 8, -1, 1, 0, MPL_ACT_BF16, EX, F16, G, 1},     {1000, 136, -1, 0, 0, MPL_ACT_F16, RN, F16, G, 1},
    };
    const int64_t dq_m[] = {1, 65, 257};
    for (int ov = 0; ov <= 1; ov++) {
        g_tune.dq_slab_bytes = (size_t)16 << 10;
        g_tune.dq_overlap = ov;
        for (size_t i = 0; i < sizeof dqc / sizeof dqc[0]; i++)
            for (int j = 0; j < 3; j++)
                bad += !run_forced(&dqc[i], dq_m[j], tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:dq", 0), cases++;
        g_tune = mpl_cuda_w4a16_tuning_default;
    }
    bad += w8_matrix(seed, &cases);
    bad += gemv_matrix(seed, &cases);
    /* 2- and 3-bit weights (symmetric and with zero points) and int4, as 4-bit codes: every path, default and
     * forced, both activation types, exact and random data, act-order, group sizes -1 / 32 / 64 / 128, K and N
     * tails (K not a multiple of 64), bias; dq with several slabs */
    static const struct {
        mpl_wtype sym, asym;
    } narrow[] = {{MPL_WTYPE_UINT2B2, MPL_WTYPE_UINT2}, {MPL_WTYPE_UINT3B4, MPL_WTYPE_UINT3}, {MPL_WTYPE_INT4, MPL_WTYPE_UINT4}};
    const dcase nc[] = {
        {512, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1},     {992, 136, -1, 0, 0, MPL_ACT_F16, RN, F16, G, 1},
        {960, 72, 32, 1, 0, MPL_ACT_BF16, EX, F16, MPL_LAYOUT_CT, 1}, {768, 200, 64, 1, 1, MPL_ACT_F16, RN, F16, G, 0},
        {1024, 72, 128, 0, 0, MPL_ACT_BF16, RN, BF16, G, 1},     {1024, 40, 128, 1, 1, MPL_ACT_BF16, RN, BF16, G, 1},
    };
    const int64_t n_m[] = {1, 9, 16, 17, 33, 65, 257};
    for (size_t t = 0; t < sizeof narrow / sizeof narrow[0]; t++) {
        g_sym = narrow[t].sym, g_asym = narrow[t].asym;
        for (size_t i = 0; i < sizeof nc / sizeof nc[0]; i++) {
            if (narrow[t].sym == MPL_WTYPE_INT4 && nc[i].zp) continue; /* int4 has no zero-point twin (uint4 ran above) */
            bad += run_ms(&nc[i], n_m, (int)(sizeof n_m / sizeof n_m[0]), seed, &cases);
        }
        g_tune.dq_slab_bytes = (size_t)16 << 10;
        for (size_t i = 0; i < 4; i++)
            if (!(narrow[t].sym == MPL_WTYPE_INT4 && nc[i].zp))
                bad += !run_forced(&nc[i], 65, tu_case_seed(seed, (uint64_t)cases), "cuda_w4a16:dq", 0), cases++;
        g_tune = mpl_cuda_w4a16_tuning_default;
    }
    bad += halves_matrix(seed, &cases);
    bad += thirds_matrix(seed, &cases);
    g_sym = MPL_WTYPE_UINT4B8, g_asym = MPL_WTYPE_UINT4;
    /* tensor-parallel slices (N, K not multiples of 128), default paths with forced split-K 1 and 3 */
    const dcase tp[] = {
        {1408, 7392, 128, 0, 0, MPL_ACT_BF16, RN, F16, G, 1},
        {10944, 1408, 64, 1, 0, MPL_ACT_F16, EX, F16, G, 1},
    };
    const int64_t tp_m[] = {1, 16, 65};
    for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++)
        for (int j = 0; j < 3; j++) {
            uint64_t s = tu_case_seed(seed, (uint64_t)cases++);
            bad += !run_case(&tp[i], tp_m[j], s, NULL, 0);
            bad += !run_case(&tp[i], tp_m[j], s, NULL, 1), cases++;
            bad += !run_case(&tp[i], tp_m[j], s, NULL, 3), cases++;
        }
    verdict("", cases, bad, seed);
    return bad;
}

static void device_matrix(void **state) {
    (void)state;
    if (!have_device()) skip();
    const char *sh = getenv("MPL_CUDA_W4A16_TEST_SHARD");
    if (sh && (sscanf(sh, "%ld/%ld", &g_shard, &g_shards) != 2 || g_shards < 1 || g_shard < 0 || g_shard >= g_shards))
        fail_msg("MPL_CUDA_W4A16_TEST_SHARD=%s: expected i/n with 0 <= i < n", sh);
    g_tune = mpl_cuda_w4a16_tuning_default;
    mpl_cuda_w4a16_tuning_override(&g_tune);
    int bad = device_matrix_body();
    mpl_cuda_w4a16_tuning_override(NULL);
    assert_int_equal(bad, 0);
}

static void device_errors(void **state) {
    (void)state;
    if (!have_device()) skip();
    mpl_config c;
    mpl_config_init(&c, 128, 64);
    c.act = MPL_ACT_F16;
    uint8_t codes[64 * 128];
    float scales[64];
    for (int i = 0; i < 64 * 128; i++) codes[i] = (uint8_t)(i % 16);
    for (int i = 0; i < 64; i++) scales[i] = 0.5f;
    mpl_checkpoint_tensors ck;
    assert_int_equal(mpl_checkpoint_encode(&c, MPL_LAYOUT_GPTQ, codes, scales, MPL_DTYPE_F16, NULL, NULL, &ck), MPL_OK);
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_CUDA;
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_OK);
    assert_string_equal(mpl_layer_kernel(l), "cuda_w4a16");
    void *dx = NULL, *dy = NULL;
    assert_int_equal(cudaMalloc(&dx, 32 * 128 * 2 + 16), cudaSuccess);
    assert_int_equal(cudaMalloc(&dy, 32 * 64 * 2 + 16), cudaSuccess);
    /* misaligned device pointers are refused, with the rule in the message */
    assert_int_equal(mpl_layer_apply_device(l, 4, (char *)dx + 2, NULL, dy, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "16-byte aligned"));
    assert_int_equal(mpl_layer_apply_device(l, 4, dx, NULL, (char *)dy + 8, NULL), MPL_ERR_INVALID_ARGUMENT);
    /* m = 0 does nothing */
    assert_int_equal(mpl_layer_apply_device(l, 0, dx, NULL, dy, NULL), MPL_OK);
    mpl_layer_destroy(l);
    /* a forced path runs up to its limit and refuses more, naming it */
    o.kernel = "cuda_w4a16:skinny";
    assert_int_equal(mpl_layer_create(&c, &ck, &o, &l), MPL_OK);
    assert_string_equal(mpl_layer_path(l, 16), "cuda_w4a16:skinny");
    assert_null(mpl_layer_path(l, 17));
    assert_int_equal(mpl_layer_apply_device(l, 16, dx, NULL, dy, NULL), MPL_OK);
    assert_int_equal(mpl_layer_apply_device(l, 17, dx, NULL, dy, NULL), MPL_ERR_UNSUPPORTED);
    assert_non_null(strstr(mpl_last_error(), "cuda_w4a16:skinny"));
    assert_non_null(strstr(mpl_last_error(), "16"));
    assert_int_equal(cudaDeviceSynchronize(), cudaSuccess);
    cudaFree(dx);
    cudaFree(dy);
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
}

#else

static void skip_no_cuda(void **state) {
    (void)state;
    printf("SKIP cuda_w4a16 path table and device cases: library built without CUDA\n");
    skip();
}
#define path_table skip_no_cuda
#define default_paths skip_no_cuda
#define path_refusals skip_no_cuda
#define packs_on_the_asked_device skip_no_cuda
#define device_matrix skip_no_cuda
#define device_errors skip_no_cuda

#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_round_trip),
        cmocka_unit_test(layout_halves),
        cmocka_unit_test(layout_thirds),
        cmocka_unit_test(layout_bit_positions),
        cmocka_unit_test(wg_split_scale_exact),
        cmocka_unit_test_teardown(refusals, reset),
        cmocka_unit_test_teardown(path_table, reset),
        cmocka_unit_test_teardown(default_paths, reset),
        cmocka_unit_test_teardown(path_refusals, reset),
        cmocka_unit_test_teardown(packs_on_the_asked_device, reset),
        cmocka_unit_test_setup_teardown(device_errors, reset, reset),
        cmocka_unit_test_setup_teardown(device_matrix, reset, reset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
