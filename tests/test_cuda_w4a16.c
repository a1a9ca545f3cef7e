/*
 * test_cuda_w4a16.c -- the CUDA W4A16 kernel: its packed layout (host, runs everywhere), its
 * refusals (any CUDA build), and on a CUDA device every accepted config against the float64
 * oracle and the reference kernel: M in {1, 2, 7, 8, 9, 16, 17, 64, 65, 257, 1024}, odd N
 * (odd multiples of 8), K tails (K not a multiple of 64), every group size, zero points,
 * act-order, f16 and bf16, bias, all three paths (skinny, tensor-core, dequantize + cuBLAS: one slab or
 * several, with and without the side-stream overlap) and forced split-K.
 * Each case: the host-pointer path twice (bit-identical: determinism), guard bytes around
 * the output, and the device-pointer path into a poisoned buffer with a poisoned tail (every
 * element written, nothing past the end), bit-identical to the host path.
 * Exact data (small integers, power-of-two scales) must match the rounded oracle and the
 * reference bit for bit; random data is held to tu_tolerance() (derivation in testutil.c: the
 * kernel's summation order -- k16 MMA steps, per-group folds, warp and cluster reductions --
 * stays within its K + G + 2 roundings per term for the K used here).
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

#include "kernels/cuda/w4a16_launch.h"
#include "kernels/kernels.h"
#endif

/* ---------- layout: pack / unpack round trip (host only) ---------- */

static void random_canonical(mpl_canonical *w, const mpl_config *c, tu_rng *r, int scale_kind) {
    assert_int_equal(mpl_canonical_alloc(w, c), MPL_OK);
    for (int64_t i = 0; i < w->n * w->k; i++) w->codes[i] = (uint8_t)tu_rng_below(r, 16);
    for (int64_t i = 0; i < w->n * w->groups; i++) {
        double v = tu_rng_uniform(r, -0.1, 0.1);
        /* 0: exact in f16, 1: exact in bf16 only, 2: full f32 */
        w->scales[i] = scale_kind == 0 ? (float)tu_round_dtype(MPL_DTYPE_F16, v)
                       : scale_kind == 1 ? (float)tu_round_dtype(MPL_DTYPE_BF16, v * 1e-4)
                                         : (float)v;
        if (w->zeros) w->zeros[i] = (uint8_t)tu_rng_below(r, 16);
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
    } cases[] = {
        {64, 16, -1, 0, 0, 0, MPL_ACT_F16},    {200, 24, -1, 1, 0, 2, MPL_ACT_BF16},
        {960, 72, 32, 1, 0, 1, MPL_ACT_F16},   {768, 200, 64, 0, 1, 0, MPL_ACT_BF16},
        {1408, 264, 128, 1, 1, 2, MPL_ACT_F16}, {480, 8, 48, 0, 0, 1, MPL_ACT_BF16},
    };
    tu_rng r;
    tu_rng_init(&r, tu_seed(0xc0da));
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        mpl_config c;
        mpl_config_init(&c, cases[ci].k, cases[ci].n);
        c.group_size = cases[ci].gs;
        c.act = cases[ci].act;
        c.zero_points = cases[ci].zp;
        c.wtype = c.zero_points ? MPL_WTYPE_UINT4 : MPL_WTYPE_UINT4B8;
        c.act_order = cases[ci].act_order;
        mpl_canonical w, back;
        random_canonical(&w, &c, &r, cases[ci].scale_kind);
        mpl_cw4_layout l;
        assert_int_equal(mpl_cw4_pack(&c, &w, &l), MPL_OK);
        int want_fmt = cases[ci].scale_kind == 2 ? MPL_CW4_SCALE_F32
                       : cases[ci].scale_kind == 1 ? MPL_CW4_SCALE_BF16
                       : c.act == MPL_ACT_BF16 ? MPL_CW4_SCALE_BF16 /* f16-exact scales may be bf16-exact too */
                                                : MPL_CW4_SCALE_F16;
        if (cases[ci].scale_kind != 0) assert_int_equal(l.scale_fmt, want_fmt);
        assert_int_equal(l.k_pad % 64, 0);
        assert_int_equal(l.n_pad % 256, 0);
        assert_int_equal(mpl_cw4_unpack(&l, c.act_order, &back), MPL_OK);
        assert_memory_equal(back.codes, w.codes, (size_t)(w.n * w.k));
        assert_memory_equal(back.scales, w.scales, (size_t)(w.n * w.groups) * sizeof(float));
        if (w.zeros) assert_memory_equal(back.zeros, w.zeros, (size_t)(w.n * w.groups));
        if (w.g_idx) {
            assert_memory_equal(back.g_idx, w.g_idx, (size_t)w.k * sizeof(int32_t));
            assert_memory_equal(back.perm, w.perm, (size_t)w.k * sizeof(int32_t));
        }
        mpl_canonical_free(&back);
        mpl_cw4_layout_free(&l);
        mpl_canonical_free(&w);
    }
}

/* The bit-level spec (docs/layouts/cuda_w4a16.md), checked by hand for a few weights. */
/*
 * The wg path's SPLIT dequantization (bf16 activations, f16 scales; src/kernels/cuda/w4a16_wg.cu):
 * s = hi + lo with hi = bf16(s) and lo = bf16(s - hi), then w^ = fma.bf16(v, hi, v * lo). Claimed: lo is
 * exact (s - hi fits bf16), v * lo is exact in bf16 for every integer weight v in [-15, 15], and the
 * fma's single rounding gives round_bf16(v * s) -- the dq path's weight (bit for bit up to the sign of a
 * zero weight: fma(0, hi, +0) is +0 where (0 * s) is -0 for s < 0; sums are unchanged). Checked here for
 * every finite f16 scale and every v (CPU only; float holds every intermediate exactly, so one
 * mpl_f32_to_bf16 is the fma's one rounding).
 */
static void wg_split_scale_exact(void **state) {
    (void)state;
    long bad = 0;
    for (uint32_t h = 0; h < 0x10000u; h++) {
        if ((h & 0x7c00u) == 0x7c00u) continue; /* inf / NaN */
        float s = mpl_f16_to_f32((uint16_t)h);
        float hi = mpl_bf16_to_f32(mpl_f32_to_bf16(s));
        float rem = s - hi; /* exact: both within 11 significant bits of s */
        float lo = mpl_bf16_to_f32(mpl_f32_to_bf16(rem));
        if (lo != rem || (double)hi + (double)lo != (double)s) bad++;
        for (int v = -15; v <= 15; v++) {
            float vl = (float)v * lo;
            if (mpl_bf16_to_f32(mpl_f32_to_bf16(vl)) != vl) bad++; /* v * lo exact in bf16 */
            float sum = (float)v * hi + vl;                         /* exact in float (15 bits) */
            /* equal values (a zero weight may come out -0 here and +0 in dq: no sum changes) */
            if (mpl_bf16_to_f32(mpl_f32_to_bf16(sum)) != mpl_bf16_to_f32(mpl_f32_to_bf16((float)v * s))) bad++;
        }
    }
    assert_int_equal(bad, 0);
}

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
        mpl_cw4_layout l;
        assert_int_equal(mpl_cw4_pack(&c, &w, &l), MPL_OK);
        size_t word = (((size_t)at[i].nt * (size_t)(l.k_pad / 64) + (size_t)at[i].kc) * 32 + (size_t)at[i].lane) * 4 +
                      (size_t)at[i].j;
        uint32_t expect = 0x88888888u & ~(0xfu << (4 * at[i].nib));
        expect |= 3u << (4 * at[i].nib);
        if (l.qweight[word] != expect)
            fprintf(stderr, "weight (n=%d, k=%d): word %zu = 0x%08x, want 0x%08x\n", at[i].n, at[i].k, word,
                    l.qweight[word], expect);
        assert_int_equal(l.qweight[word], expect);
        mpl_cw4_layout_free(&l);
    }
    /* Scales: row n of a 16-row tile sits at 2*(n%8) + (n%16)/8 within the tile. */
    for (int64_t n = 0; n < w.n; n++) w.scales[n] = (float)(n + 1);
    mpl_cw4_layout l;
    assert_int_equal(mpl_cw4_pack(&c, &w, &l), MPL_OK);
    assert_int_equal(l.scale_fmt, MPL_CW4_SCALE_F16);
    assert_int_equal(l.scales[1], mpl_f32_to_f16(9.0f));   /* row 8 */
    assert_int_equal(l.scales[2], mpl_f32_to_f16(2.0f));   /* row 1 */
    assert_int_equal(l.scales[16 + 3], mpl_f32_to_f16(26.0f)); /* row 25 */
    assert_int_equal(l.scales[32], mpl_f32_to_f16(33.0f)); /* row 32 */
    assert_int_equal(l.scales[33], 0);                     /* row 40: padding */
    mpl_cw4_layout_free(&l);
    mpl_canonical_free(&w);
}

/* ---------- refusals ---------- */

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
        {MPL_WTYPE_INT4, MPL_ACT_BF16, 64, 64, -1, 0, MPL_MODE_W4A16, MPL_REASON_WEIGHT_TYPE, "int4"},
        {MPL_WTYPE_UINT8B128, MPL_ACT_BF16, 64, 64, -1, 0, MPL_MODE_W4A16, MPL_REASON_WEIGHT_TYPE, "uint8b128"},
        {MPL_WTYPE_UINT8, MPL_ACT_F16, 64, 64, -1, 1, MPL_MODE_W4A16, MPL_REASON_WEIGHT_TYPE, "uint8"},
        {MPL_WTYPE_UINT4B8, MPL_ACT_F32, 64, 64, -1, 0, MPL_MODE_W4A16, MPL_REASON_ACT_TYPE, "f32"},
        {MPL_WTYPE_UINT4B8, MPL_ACT_F16, 64, 60, -1, 0, MPL_MODE_W4A16, MPL_REASON_SHAPE, "n = 60"},
        {MPL_WTYPE_UINT4, MPL_ACT_F16, 96, 64, 24, 1, MPL_MODE_W4A16, MPL_REASON_GROUP_SIZE, "group size 24"},
        {MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 200, 64, 8, 0, MPL_MODE_W4A16, MPL_REASON_GROUP_SIZE, "multiple of 16"},
    };
    mpl_platform_info pi;
    assert_int_equal(mpl_platform_get(&pi), MPL_OK);
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
    /* An accepted config is refused only for want of a device. */
    mpl_config c;
    mpl_config_init(&c, 128, 64);
    c.group_size = 32;
    char msg[256];
    mpl_reason r = mpl_kernel_cuda_w4a16.can_implement(&c, mpl_platform_current(), msg, sizeof msg);
    if (pi.cuda_devices == 0) {
        assert_int_equal(r, MPL_REASON_DEVICE);
        printf("no CUDA device: %s\n", msg);
    } else if (pi.cuda_cc >= 80) {
        assert_int_equal(r, MPL_REASON_OK);
    }
#endif
}

/* ---------- device cases ---------- */

#ifdef MPL_HAVE_CUDA

static int g_cc; /* compute capability of device 0 (major * 10 + minor), set by have_device */

static int have_device(void) {
    mpl_platform_info pi;
    if (mpl_platform_get(&pi) == MPL_OK) g_cc = pi.cuda_cc;
    if (mpl_platform_get(&pi) != MPL_OK || pi.cuda_devices == 0 || pi.cuda_cc < 80) {
        printf("SKIP cuda_w4a16 device cases: %s\n",
               pi.cuda_devices == 0 ? pi.cuda_note : "compute capability below 8.0");
        return 0;
    }
    return 1;
}

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
    snprintf(buf, cap, "k=%lld n=%lld gs=%lld %s%s %s %s scales %s%s m=%lld path=%s ksplit=%d", (long long)d->k,
             (long long)d->n, (long long)d->gs, d->zp ? "uint4 zp" : "uint4b8", d->act_order ? " act-order" : "",
             mpl_act_name(d->act), d->data == TU_DATA_EXACT ? "exact" : "random", mpl_dtype_name(d->scale_dtype),
             d->bias ? " bias" : "", (long long)m, path, ksplit);
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

/* One case; returns 1 on pass. */
static int run_case(const dcase *d, int64_t m, uint64_t seed, const char *path, int ksplit) {
    char what[300], ks[16];
    fmt_case(d, m, path, ksplit, what, sizeof what);
    setenv("MPL_CUDA_W4A16_PATH", path, 1);
    snprintf(ks, sizeof ks, "%d", ksplit);
    setenv("MPL_CUDA_W4A16_KSPLIT", ks, 1);
    int ok = 0;
    mpl_config c;
    mpl_config_init(&c, d->k, d->n);
    c.group_size = d->gs;
    c.zero_points = d->zp;
    c.wtype = d->zp ? MPL_WTYPE_UINT4 : MPL_WTYPE_UINT4B8;
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
    o.kernel = "cuda_w4a16";
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
    /*
     * The dq path (and wg, unless it keeps exact group sums: mpl_cw4_path_rounds_weights) multiply 16-bit weights
     * w^ = round16(fl32((code - zero) * scale)) (dq in cuBLAS; fp32
     * sums): |w^ - w s| <= (u16 + 2^-24 + u16 2^-24) |w s| with u16 the activation type's unit roundoff
     * (2^-8 bf16, 2^-11 f16; no f16 subnormals here: every nonzero |w s| >= 2^-7 in these data), so the
     * products add at most (u16 + 2^-23) * mag on top of the fp32 summation bound tu_tolerance already
     * allows (whose K + G + 2 roundings cover cuBLAS's K + 2: products, sums, the beta * C bias add).
     * Exact data (power-of-two scales, small integers) stays exact: it is still compared bit for bit.
     */
    int forced = !strcmp(path, "dq") ? MPL_CW4_PATH_DQ : !strcmp(path, "wg") ? MPL_CW4_PATH_WG : MPL_CW4_PATH_TC;
    int dq = mpl_cw4_path_rounds_weights(!strcmp(path, "auto") ? mpl_cw4_default_path(m, d->k, d->n, g_cc) : forced, m, d->gs);
    double extra = dq ? (d->act == MPL_ACT_BF16 ? 0x1.0p-8 : 0x1.0p-11) + 0x1.0p-23 : 0.0;
    for (size_t i = 0; i < ny; i++) tol[i] = tu_tolerance(&c, want[i], mag[i], extra);
    /* the public query agrees with the path the test expects */
    if ((mpl_layer_weight_rounding(kl, m) > 0) != (dq != 0)) {
        fprintf(stderr, "FAIL %s: mpl_layer_weight_rounding = %g, expected %s\n", what, mpl_layer_weight_rounding(kl, m),
                dq ? "> 0 (rounded weights)" : "0 (exact weights)");
        goto done;
    }
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
    unsetenv("MPL_CUDA_W4A16_PATH");
    unsetenv("MPL_CUDA_W4A16_KSPLIT");
    return ok;
}

static const int64_t all_m[] = {1, 2, 7, 8, 9, 16, 17, 64, 65, 257, 1024};
static const int64_t few_m[] = {1, 9, 17, 65};

/* Every M on every path that applies (auto takes stream or skinny up to m = 16, then wg on
 * compute capability 9.0, else tc and dq above 160): each path whatever auto takes. */
static int run_ms(const dcase *d, const int64_t *ms, int nm, uint64_t seed, int *cases) {
    int bad = 0;
    for (int i = 0; i < nm; i++) {
        uint64_t s = tu_case_seed(seed, (uint64_t)(*cases)++);
        int autop = mpl_cw4_default_path(ms[i], d->k, d->n, g_cc);
        bad += !run_case(d, ms[i], s, "auto", 0);
        if (autop != MPL_CW4_PATH_TC) bad += !run_case(d, ms[i], s, "tc", 0), (*cases)++;
        if (g_cc == 90 && autop != MPL_CW4_PATH_WG) bad += !run_case(d, ms[i], s, "wg", 0), (*cases)++;
        if (ms[i] <= 16) bad += !run_case(d, ms[i], s, "skinny", 0), (*cases)++;
        if (mpl_cw4_stream_applies(ms[i], d->gs, g_cc))
            bad += !run_case(d, ms[i], s, "stream", 0), (*cases)++;
        if (ms[i] == 9 || ms[i] == 17) bad += !run_case(d, ms[i], s, "dq", 0), (*cases)++;
    }
    return bad;
}

static void device_matrix(void **state) {
    (void)state;
    if (!have_device()) skip();
    uint64_t seed = tu_seed(0x5eed);
    int bad = 0, cases = 0;
    const tu_data_kind EX = TU_DATA_EXACT, RN = TU_DATA_RANDOM;
    const mpl_dtype F16 = MPL_DTYPE_F16, BF16 = MPL_DTYPE_BF16, F32 = MPL_DTYPE_F32;
    const mpl_layout G = MPL_LAYOUT_GPTQ;
    /* every M, both activation types, exact and random data */
    const dcase full[] = {
        {512, 264, 128, 0, 0, MPL_ACT_BF16, EX, BF16, G, 1},
        {1000, 136, -1, 0, 0, MPL_ACT_F16, RN, F16, G, 1},     /* K tail: 1000 = 15*64 + 40 */
        {960, 72, 32, 1, 0, MPL_ACT_BF16, EX, F16, MPL_LAYOUT_CT, 1}, /* two groups per chunk, zp */
        {768, 200, 64, 1, 1, MPL_ACT_F16, RN, F16, G, 0},      /* act-order + zp */
    };
    /* MPL_CUDA_W4A16_TEST_QUICK: a few cases (for compute-sanitizer, which is slow) */
    int quick = getenv("MPL_CUDA_W4A16_TEST_QUICK") != NULL;
    if (quick) {
        const int64_t qm[] = {1, 17, 65};
        bad += run_ms(&full[0], qm, 3, seed, &cases);
        bad += run_ms(&full[2], qm, 3, seed, &cases);
        bad += run_ms(&full[3], qm, 3, seed, &cases);
        printf("cuda_w4a16 device matrix (quick): %d cases, %d failed\n", cases, bad);
        assert_int_equal(bad, 0);
        return;
    }
    for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
        bad += run_ms(&full[i], all_m, (int)(sizeof all_m / sizeof all_m[0]), seed, &cases);
    /* every group size (multiples of 16 and -1), zero points on and off, scale encodings */
    const dcase groups[] = {
        {960, 40, 16, 0, 0, MPL_ACT_F16, EX, F16, G, 1},   {960, 56, 48, 1, 0, MPL_ACT_BF16, RN, BF16, G, 1},
        {960, 24, 64, 0, 0, MPL_ACT_BF16, RN, F32, G, 1},  {960, 88, 80, 1, 0, MPL_ACT_F16, EX, BF16, G, 0},
        {1024, 104, 256, 0, 0, MPL_ACT_F16, RN, F16, G, 1}, {1024, 152, 128, 1, 0, MPL_ACT_F16, RN, F32, G, 1},
        {520, 8, -1, 1, 0, MPL_ACT_BF16, EX, F16, G, 1},    {4160, 48, 4160, 0, 0, MPL_ACT_BF16, RN, F16, G, 1},
        {960, 72, 32, 0, 1, MPL_ACT_BF16, EX, F16, G, 1},   {1024, 40, 128, 1, 1, MPL_ACT_BF16, RN, BF16, G, 1},
        {1536, 64, 512, 0, 1, MPL_ACT_F16, EX, F16, G, 1},
    };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++)
        bad += run_ms(&groups[i], few_m, (int)(sizeof few_m / sizeof few_m[0]), seed, &cases);
    /* wide layers: the skinny path's 4-row-tile warps (N >= ~6400 on 132 SMs), all its variants */
    const dcase wide[] = {
        {1024, 6656, 128, 1, 0, MPL_ACT_BF16, EX, F16, G, 1},
        {768, 6664, 32, 0, 1, MPL_ACT_F16, RN, BF16, G, 1},
    };
    const int64_t wide_m[] = {1, 7, 9, 16};
    for (size_t i = 0; i < sizeof wide / sizeof wide[0]; i++)
        for (int j = 0; j < 4; j++) {
            uint64_t s = tu_case_seed(seed, (uint64_t)cases++);
            bad += !run_case(&wide[i], wide_m[j], s, "skinny", 0);
            bad += !run_case(&wide[i], wide_m[j], s, "skinny", 2), cases++;
        }
    /* the stream path's plans: row groups of 4/2/1 tiles and clusters of 1, 2, 4, 8 blocks along K, forced
     * (MPL_CUDA_W4A16_KSPLIT) on layers from narrow to wide, with K tails, zero points, f32 scales, bias */
    if (g_cc >= 90) {
        const dcase sc[] = {
            {1024, 6656, 128, 1, 0, MPL_ACT_BF16, EX, F16, G, 1}, {4160, 48, 4160, 0, 0, MPL_ACT_BF16, RN, F16, G, 1},
            {1000, 136, -1, 0, 0, MPL_ACT_F16, RN, F16, G, 1},   {2048, 1032, 64, 1, 1, MPL_ACT_F16, RN, F32, G, 1},
            {8192, 520, 256, 0, 0, MPL_ACT_BF16, EX, BF16, G, 0},
        };
        const int64_t sm[] = {1, 5, 9, 16};
        const int ks[] = {1, 2, 4, 8};
        for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++)
            for (int j = 0; j < 4; j++)
                for (int q = 0; q < 4; q++)
                    bad += !run_case(&sc[i], sm[j], tu_case_seed(seed, (uint64_t)cases), "stream", ks[q]), cases++;
    }
    /* the tensor-core tile variants for m > 64 (MPL_CUDA_W4A16_TC_VARIANT) */
    const int64_t var_m[] = {65, 257, 1024};
    for (int v = 1; v <= 2; v++) {
        setenv("MPL_CUDA_W4A16_TC_VARIANT", v == 1 ? "1" : "2", 1);
        for (int j = 0; j < 3; j++) {
            bad += !run_case(&full[0], var_m[j], tu_case_seed(seed, (uint64_t)cases), "tc", 0), cases++;
            bad += !run_case(&full[3], var_m[j], tu_case_seed(seed, (uint64_t)cases), "tc", 0), cases++;
        }
        unsetenv("MPL_CUDA_W4A16_TC_VARIANT");
    }
    /* wg with four consumer warpgroups (MPL_CUDA_W4A16_WG_EXP=8; m <= 64) */
    if (g_cc == 90) {
        const int64_t wg_m[] = {1, 17, 33, 64};
        setenv("MPL_CUDA_W4A16_WG_EXP", "8", 1);
        for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
            for (int j = 0; j < 4; j++)
                bad += !run_case(&full[i], wg_m[j], tu_case_seed(seed, (uint64_t)cases), "wg", 0), cases++;
        unsetenv("MPL_CUDA_W4A16_WG_EXP");
    }
    /* m <= 64 tile variants of the tensor-core path: 0 (256 rows of N per block) and 3 (128 rows) */
    const int64_t small_m[] = {17, 33, 64};
    for (int v = 0; v <= 3; v += 3) {
        setenv("MPL_CUDA_W4A16_TC_VARIANT", v == 0 ? "0" : "3", 1);
        for (int j = 0; j < 3; j++) {
            bad += !run_case(&full[0], small_m[j], tu_case_seed(seed, (uint64_t)cases), "tc", 0), cases++;
            bad += !run_case(&full[3], small_m[j], tu_case_seed(seed, (uint64_t)cases), "tc", 0), cases++;
            bad += !run_case(&groups[3], small_m[j], tu_case_seed(seed, (uint64_t)cases), "tc", 0), cases++;
        }
        unsetenv("MPL_CUDA_W4A16_TC_VARIANT");
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
        setenv("MPL_CUDA_W4A16_DQ_SLAB_KB", "16", 1);
        setenv("MPL_CUDA_W4A16_DQ_OVERLAP", ov ? "1" : "0", 1);
        for (size_t i = 0; i < sizeof dqc / sizeof dqc[0]; i++)
            for (int j = 0; j < 3; j++)
                bad += !run_case(&dqc[i], dq_m[j], tu_case_seed(seed, (uint64_t)cases), "dq", 0), cases++;
        unsetenv("MPL_CUDA_W4A16_DQ_SLAB_KB");
        unsetenv("MPL_CUDA_W4A16_DQ_OVERLAP");
    }
    /* tensor-parallel slices (N, K not multiples of 128), with forced split-K 1 and 3 */
    const dcase tp[] = {
        {1408, 7392, 128, 0, 0, MPL_ACT_BF16, RN, F16, G, 1},
        {10944, 1408, 64, 1, 0, MPL_ACT_F16, EX, F16, G, 1},
    };
    const int64_t tp_m[] = {1, 16, 65};
    for (size_t i = 0; i < sizeof tp / sizeof tp[0]; i++)
        for (int j = 0; j < 3; j++) {
            uint64_t s = tu_case_seed(seed, (uint64_t)cases++);
            bad += !run_case(&tp[i], tp_m[j], s, "auto", 0);
            bad += !run_case(&tp[i], tp_m[j], s, "auto", 1), cases++;
            bad += !run_case(&tp[i], tp_m[j], s, "auto", 3), cases++;
        }
    printf("cuda_w4a16 device matrix: %d cases, %d failed (seed 0x%llx)\n", cases, bad, (unsigned long long)seed);
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
    assert_int_equal(cudaMalloc(&dx, 4 * 128 * 2 + 16), cudaSuccess);
    assert_int_equal(cudaMalloc(&dy, 4 * 64 * 2 + 16), cudaSuccess);
    /* misaligned device pointers are refused, with the rule in the message */
    assert_int_equal(mpl_layer_apply_device(l, 4, (char *)dx + 2, NULL, dy, NULL), MPL_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(mpl_last_error(), "16-byte aligned"));
    assert_int_equal(mpl_layer_apply_device(l, 4, dx, NULL, (char *)dy + 8, NULL), MPL_ERR_INVALID_ARGUMENT);
    /* m = 0 does nothing */
    assert_int_equal(mpl_layer_apply_device(l, 0, dx, NULL, dy, NULL), MPL_OK);
    cudaFree(dx);
    cudaFree(dy);
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
}

#else

static void device_matrix(void **state) {
    (void)state;
    printf("SKIP cuda_w4a16 device cases: library built without CUDA\n");
    skip();
}
static void device_errors(void **state) {
    (void)state;
    skip();
}

#endif

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_round_trip), cmocka_unit_test(layout_bit_positions), cmocka_unit_test(wg_split_scale_exact),
        cmocka_unit_test(refusals),
        cmocka_unit_test(device_errors),     cmocka_unit_test(device_matrix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
