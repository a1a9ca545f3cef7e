/*
 * test_x86_w4a8.c -- kernel x86_vnni_w4a8 against the reference kernel, through the public API.
 *
 * How close the two must be: identical. Both compute the same exact integer group sums
 * (isum_g = sum q*w; the kernel as sum q*u - z*sum q, which is the same integer) and the
 * same float operations in the same order (s = 0; s += scale[g]*(float)isum_g for g
 * ascending; y = s*sx; y += bias; one rounding to the activation type), so every output
 * is compared bit for bit (NaN against NaN). Every ISA variant present on the host is
 * forced in turn through mpl_platform_override with a reduced ISA mask (avx2 floor,
 * avx_vnni, avx512_vnni, amx_int8).
 *
 * Accuracy of W4A8 itself is checked separately against a float64 W4A16 result on
 * Gaussian activations (relative Frobenius error <= 2%, the target).
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
#include "layouts/x86_w4a8.h"
#include "mplinear.h"

#define KERNEL "x86_vnni_w4a8"

/* ---------- small deterministic RNG (splitmix64) ---------- */
static uint64_t rng_state;
static uint64_t rnd(void) {
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double unif(void) { return (double)(rnd() >> 11) * (1.0 / 9007199254740992.0); }
static double gauss(void) {
    double u = unif(), v = unif();
    return sqrt(-2.0 * log(u + 1e-300)) * cos(6.283185307179586 * v);
}

/* ---------- variants ---------- */
typedef struct {
    const char *name;
    uint32_t isa;
} variant;

static mpl_platform host;
static variant variants[4];
static int nvariants;

static int setup(void **state) {
    (void)state;
    host = *mpl_platform_current();
    const uint32_t avx2 = MPL_ISA_SSE42 | MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C;
    const uint32_t avx512 = MPL_ISA_AVX512F | MPL_ISA_AVX512BW | MPL_ISA_AVX512VL | MPL_ISA_AVX512_VNNI;
    const uint32_t amx = MPL_ISA_AMX_TILE | MPL_ISA_AMX_INT8;
    nvariants = 0;
    if ((host.isa & (MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C)) != (MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C)) {
        printf("# host lacks avx2+fma+f16c: every x86_vnni_w4a8 variant skipped\n");
        return 0;
    }
    variants[nvariants++] = (variant){"avx2", host.isa & avx2};
    if (host.isa & MPL_ISA_AVX_VNNI) variants[nvariants++] = (variant){"avx_vnni", host.isa & (avx2 | MPL_ISA_AVX_VNNI)};
    else printf("# host lacks avx_vnni: that variant skipped\n");
    if ((host.isa & avx512) == avx512) variants[nvariants++] = (variant){"avx512_vnni", host.isa & ~amx};
    else printf("# host lacks avx512_vnni: that variant skipped\n");
    if ((host.isa & (avx512 | amx)) == (avx512 | amx)) variants[nvariants++] = (variant){"amx_int8", host.isa};
    else printf("# host lacks amx_int8: that variant skipped\n");
    return 0;
}

static void use_variant(const variant *v) {
    static mpl_platform p;
    p = host;
    p.isa = v->isa;
    mpl_platform_override(&p);
}

/* ---------- layers ---------- */
typedef struct {
    int64_t k, n, gs;
    mpl_wtype wt;
    mpl_act act;
    int act_order;
} shape;

typedef struct {
    mpl_config cfg;
    uint8_t *codes, *zeros;
    float *scales;
    int32_t *g_idx;
} weights;

static void weights_make(weights *w, const shape *s) {
    memset(w, 0, sizeof *w);
    mpl_config_init(&w->cfg, s->k, s->n);
    w->cfg.wtype = s->wt;
    w->cfg.act = s->act;
    w->cfg.group_size = s->gs;
    w->cfg.zero_points = s->wt == MPL_WTYPE_UINT4;
    w->cfg.act_order = s->act_order;
    w->cfg.mode = MPL_MODE_W4A8;
    int64_t G = s->gs == -1 ? 1 : s->k / s->gs, gl = s->k / G;
    w->codes = malloc((size_t)(s->n * s->k));
    w->scales = malloc((size_t)(s->n * G) * sizeof(float));
    w->zeros = malloc((size_t)(s->n * G));
    for (int64_t i = 0; i < s->n * s->k; i++) w->codes[i] = (uint8_t)(rnd() & 15);
    /* Scales exact in f16: (1 + i/8) * 2^e, e in [-9, -5], sign random. */
    for (int64_t i = 0; i < s->n * G; i++) {
        double v = ldexp(1.0 + (double)(rnd() % 8) / 8.0, -5 - (int)(rnd() % 5));
        w->scales[i] = (float)((rnd() & 1) ? -v : v);
        w->zeros[i] = (uint8_t)(rnd() & 15);
    }
    if (s->act_order) {
        w->g_idx = malloc((size_t)s->k * sizeof(int32_t));
        for (int64_t i = 0; i < s->k; i++) w->g_idx[i] = (int32_t)(i / gl);
        for (int64_t i = s->k - 1; i > 0; i--) {
            int64_t r = (int64_t)(rnd() % (uint64_t)(i + 1));
            int32_t t = w->g_idx[i];
            w->g_idx[i] = w->g_idx[r];
            w->g_idx[r] = t;
        }
    }
}

static void weights_free(weights *w) {
    free(w->codes);
    free(w->scales);
    free(w->zeros);
    free(w->g_idx);
}

static mpl_layer *layer_make(const weights *w, const char *kernel, int threads) {
    mpl_checkpoint_tensors ck;
    mpl_status st = mpl_checkpoint_encode(&w->cfg, MPL_LAYOUT_CT, w->codes, w->scales, MPL_DTYPE_F32,
                                          w->cfg.zero_points ? w->zeros : NULL, w->g_idx, &ck);
    if (st != MPL_OK) {
        printf("encode: %s\n", mpl_last_error());
        return NULL;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = kernel;
    o.threads = threads;
    mpl_layer *l = NULL;
    st = mpl_layer_create(&w->cfg, &ck, &o, &l);
    mpl_checkpoint_tensors_free(&ck);
    if (st != MPL_OK) printf("create %s: %s\n", kernel, mpl_last_error());
    return l;
}

/* ---------- activations ---------- */
static void act_store(mpl_act a, void *base, int64_t i, float v) {
    if (a == MPL_ACT_F32) ((float *)base)[i] = v;
    else if (a == MPL_ACT_F16) ((uint16_t *)base)[i] = mpl_f32_to_f16(v);
    else ((uint16_t *)base)[i] = mpl_f32_to_bf16(v);
}

static int is_nan_bits(mpl_act a, const void *base, int64_t i) {
    if (a == MPL_ACT_F32) return isnan(((const float *)base)[i]);
    uint16_t h = ((const uint16_t *)base)[i];
    return a == MPL_ACT_F16 ? (h & 0x7fff) > 0x7c00 : (h & 0x7fff) > 0x7f80;
}

enum { ROWS_PLAIN = 0, ROWS_SPECIAL = 1 };

/* Fills x; ROWS_SPECIAL puts an all-zero row, a one-huge-value row, an inf row and a NaN row among normal ones. */
static void x_make(mpl_act a, void *x, int64_t m, int64_t k, int kind) {
    const float huge = a == MPL_ACT_F16 ? 60000.0f : 1e30f;
    for (int64_t r = 0; r < m; r++) {
        int special = kind == ROWS_SPECIAL ? (int)(r % 5) : 0;
        for (int64_t i = 0; i < k; i++) {
            float v = (float)gauss() * (r % 3 == 1 ? 0.01f : 1.0f);
            if (special == 1) v = 0.0f;
            act_store(a, x, r * k + i, v);
        }
        int64_t at = (int64_t)(rnd() % (uint64_t)k);
        if (special == 2) act_store(a, x, r * k + at, (rnd() & 1) ? huge : -huge);
        if (special == 3) act_store(a, x, r * k + at, (rnd() & 1) ? INFINITY : -INFINITY);
        if (special == 4) act_store(a, x, r * k + at, NAN);
    }
}

/* ---------- one case: kernel vs ref, bit for bit ---------- */
#define GUARD 64

static int run_case(const shape *s, int64_t m, int kind, int with_bias, int threads, const variant *v) {
    weights w;
    weights_make(&w, s);
    size_t es = mpl_act_size(s->act), ybytes = (size_t)(m * s->n) * es;
    void *x = malloc((size_t)(m * s->k) * es);
    void *bias = malloc((size_t)s->n * es);
    unsigned char *y0 = malloc(ybytes + 2 * GUARD), *y1 = malloc(ybytes + 2 * GUARD), *y2 = malloc(ybytes + 2 * GUARD);
    x_make(s->act, x, m, s->k, kind);
    for (int64_t i = 0; i < s->n; i++) act_store(s->act, bias, i, (float)gauss());
    memset(y0, 0xa5, ybytes + 2 * GUARD);
    memset(y1, 0xa5, ybytes + 2 * GUARD);
    memset(y2, 0xa5, ybytes + 2 * GUARD);
    mpl_platform_override(NULL);
    mpl_layer *lr = layer_make(&w, "ref", 1);
    use_variant(v);
    mpl_layer *lk = layer_make(&w, KERNEL, threads);
    int bad = 0;
    if (!lr || !lk) bad = 1;
    if (!bad) {
        assert_int_equal(mpl_layer_apply(lr, m, x, with_bias ? bias : NULL, y0 + GUARD), MPL_OK);
        assert_int_equal(mpl_layer_apply(lk, m, x, with_bias ? bias : NULL, y1 + GUARD), MPL_OK);
        assert_int_equal(mpl_layer_apply(lk, m, x, with_bias ? bias : NULL, y2 + GUARD), MPL_OK);
        for (int i = 0; i < GUARD; i++)
            if (y1[i] != 0xa5 || y1[GUARD + ybytes + i] != 0xa5) {
                printf("FAIL guard bytes overwritten (%s k=%lld n=%lld m=%lld)\n", v->name, (long long)s->k,
                       (long long)s->n, (long long)m);
                bad = 1;
                break;
            }
        if (memcmp(y1, y2, ybytes + 2 * GUARD) != 0) {
            printf("FAIL not deterministic (%s)\n", v->name);
            bad = 1;
        }
        for (int64_t i = 0; i < m * s->n && !bad; i++) {
            const unsigned char *a = y0 + GUARD + (size_t)i * es, *b = y1 + GUARD + (size_t)i * es;
            int na = is_nan_bits(s->act, y0 + GUARD, i), nb = is_nan_bits(s->act, y1 + GUARD, i);
            if (na != nb || (!na && memcmp(a, b, es) != 0)) {
                printf("FAIL %s seed=%llu k=%lld n=%lld gs=%lld %s %s act_order=%d m=%lld bias=%d threads=%d: "
                       "first difference at row %lld col %lld\n",
                       v->name, (unsigned long long)rng_state, (long long)s->k, (long long)s->n, (long long)s->gs,
                       mpl_wtype_name(s->wt), mpl_act_name(s->act), s->act_order, (long long)m, with_bias, threads,
                       (long long)(i / s->n), (long long)(i % s->n));
                bad = 1;
            }
        }
        if (kind == ROWS_SPECIAL)
            for (int64_t r = 0; r < m && !bad; r++)
                for (int64_t c = 0; c < s->n; c++)
                    if (is_nan_bits(s->act, y1 + GUARD, r * s->n + c) != (r % 5 >= 3)) {
                        printf("FAIL row %lld col %lld: NaN %s expected\n", (long long)r, (long long)c,
                               r % 5 >= 3 ? "" : "not");
                        bad = 1;
                        break;
                    }
    }
    mpl_platform_override(NULL);
    mpl_layer_destroy(lr);
    mpl_layer_destroy(lk);
    weights_free(&w);
    free(x);
    free(bias);
    free(y0);
    free(y1);
    free(y2);
    return bad;
}

/* ---------- tests ---------- */

/* M around every variant's tile (avx512: 6 rows, ymm: 4, AMX: 32, decode 1-2) and a large odd M. */
static const int64_t Ms[] = {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 64, 513};

static void edge_matrix(void **state) {
    (void)state;
    if (!nvariants) skip();
    const shape shapes[] = {
        {256, 40, 128, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 0}, /* N tail inside a panel */
        {256, 17, -1, MPL_WTYPE_INT4, MPL_ACT_F16, 0},      /* N = one panel + 1 */
        {384, 64, 96, MPL_WTYPE_UINT4, MPL_ACT_F32, 0},     /* zero points, group of 96 (AMX kb 32) */
        {512, 48, 64, MPL_WTYPE_UINT4B8, MPL_ACT_F32, 1},   /* act-order */
        {200, 33, -1, MPL_WTYPE_UINT4, MPL_ACT_BF16, 0},    /* K not a multiple of 16 or 32 (no AMX) */
    };
    int failures = 0, cases = 0;
    for (int vi = 0; vi < nvariants; vi++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
                rng_state = 1000 * si + mi;
                failures += run_case(&shapes[si], Ms[mi], ROWS_PLAIN, (int)(mi & 1), (int)(mi % 3), &variants[vi]);
                cases++;
            }
    printf("# edge matrix: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

static void group_sizes_types_acts(void **state) {
    (void)state;
    if (!nvariants) skip();
    const int64_t gss[] = {-1, 32, 64, 96, 128, 192, 384};
    const mpl_wtype wts[] = {MPL_WTYPE_UINT4B8, MPL_WTYPE_INT4, MPL_WTYPE_UINT4};
    const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};
    int failures = 0, cases = 0;
    for (int vi = 0; vi < nvariants; vi++)
        for (size_t gi = 0; gi < sizeof gss / sizeof gss[0]; gi++)
            for (size_t ti = 0; ti < 3; ti++)
                for (int ao = 0; ao < 2; ao++) {
                    if (ao && gss[gi] == -1) continue;
                    shape s = {384, 50, gss[gi], wts[ti], acts[(gi + ti) % 3], ao};
                    rng_state = 77 + gi * 10 + ti + 100 * (uint64_t)ao;
                    failures += run_case(&s, ti == 1 ? 3 : 40, ROWS_PLAIN, 1, 0, &variants[vi]);
                    cases++;
                }
    printf("# group sizes x weight types x act-order: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

static void odd_shapes(void **state) {
    (void)state;
    if (!nvariants) skip();
    const shape shapes[] = {
        {8, 1, -1, MPL_WTYPE_UINT4B8, MPL_ACT_F32, 0},
        {32, 3, 32, MPL_WTYPE_INT4, MPL_ACT_BF16, 1},
        {1408, 31, 128, MPL_WTYPE_UINT4, MPL_ACT_F16, 0},
        {4104, 16, -1, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 0},
        {96, 129, 32, MPL_WTYPE_UINT4, MPL_ACT_F32, 1},
        {1024, 40, -1, MPL_WTYPE_UINT4, MPL_ACT_F32, 0},  /* AMX: one group spans several K chunks */
        {1088, 20, 544, MPL_WTYPE_INT4, MPL_ACT_BF16, 1}, /* AMX: groups straddle K chunks, kb 32 */
    };
    int failures = 0;
    for (int vi = 0; vi < nvariants; vi++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int64_t m = 1; m <= 70; m += 13) {
                rng_state = 5000 + si * 7 + (uint64_t)m;
                failures += run_case(&shapes[si], m, ROWS_PLAIN, 1, 0, &variants[vi]);
            }
    assert_int_equal(failures, 0);
}

/* All-zero rows (y = bias), one-huge-value rows, inf rows and NaN rows (NaN outputs for that row). */
static void special_rows(void **state) {
    (void)state;
    if (!nvariants) skip();
    const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};
    int failures = 0;
    for (int vi = 0; vi < nvariants; vi++)
        for (int ai = 0; ai < 3; ai++)
            for (int ao = 0; ao < 2; ao++) {
                shape s = {256, 48, 64, ai == 2 ? MPL_WTYPE_UINT4 : MPL_WTYPE_UINT4B8, acts[ai], ao};
                rng_state = 9000 + (uint64_t)ai * 3 + (uint64_t)ao;
                failures += run_case(&s, 2, ROWS_SPECIAL, 1, 0, &variants[vi]);
                failures += run_case(&s, 37, ROWS_SPECIAL, ai & 1, 0, &variants[vi]);
            }
    assert_int_equal(failures, 0);
}

/*
 * Accuracy of W4A8 against the float64 W4A16 result on Gaussian x (K = 4096, group 128):
 * per-row int8 quantization adds a uniform error of at most sx/2 per element, relative
 * RMS ~ 1/(sqrt(12)*127/amax*rms) ~ 0.8% for Gaussian rows (amax ~ 4 sigma); the issue
 * bounds the relative Frobenius error at 2%.
 */
static void accuracy_vs_w4a16(void **state) {
    (void)state;
    if (!nvariants) skip();
    shape s = {4096, 128, 128, MPL_WTYPE_UINT4B8, MPL_ACT_F32, 0};
    const int64_t m = 16, K = s.k, N = s.n, G = K / s.gs;
    rng_state = 42;
    weights w;
    weights_make(&w, &s);
    float *x = malloc((size_t)(m * K) * 4), *y = malloc((size_t)(m * N) * 4);
    for (int64_t i = 0; i < m * K; i++) x[i] = (float)gauss();
    for (int vi = 0; vi < nvariants; vi++) {
        use_variant(&variants[vi]);
        mpl_layer *l = layer_make(&w, KERNEL, 0);
        assert_non_null(l);
        assert_int_equal(mpl_layer_apply(l, m, x, NULL, y), MPL_OK);
        double num = 0, den = 0;
        for (int64_t r = 0; r < m; r++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x[r * K + k] * (double)(w.codes[n * K + k] - 8) * (double)w.scales[n * G + k / s.gs];
                double d = (double)y[r * N + n] - acc;
                num += d * d;
                den += acc * acc;
            }
        double rel = sqrt(num / den);
        printf("# %s: relative Frobenius error vs float64 W4A16 = %.4f%%\n", variants[vi].name, 100 * rel);
        assert_true(rel <= 0.02);
        mpl_layer_destroy(l);
        mpl_platform_override(NULL);
    }
    free(x);
    free(y);
    weights_free(&w);
}

/* The chooser: W4A8 configs get this kernel; W4A16 configs never do; refusals carry reasons. */
static void chooser(void **state) {
    (void)state;
    if (!nvariants) skip();
    mpl_config c;
    mpl_config_init(&c, 256, 64);
    c.group_size = 128;
    c.mode = MPL_MODE_W4A8;
    const char *chosen = NULL;
    mpl_choice_entry e[8];
    int count = 0;
    assert_int_equal(mpl_choose(&c, NULL, &chosen, e, 8, &count), MPL_OK);
    assert_string_equal(chosen, KERNEL);
    c.mode = MPL_MODE_W4A16;
    mpl_choose(&c, NULL, &chosen, e, 8, &count);
    assert_true(chosen == NULL || strcmp(chosen, KERNEL) != 0);
    assert_string_equal(e[0].kernel, KERNEL);
    assert_int_equal(e[0].reason, MPL_REASON_MODE);
    assert_non_null(strstr(e[0].message, "W4A16"));
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = KERNEL;
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, 8, &count), MPL_ERR_UNSUPPORTED);
    c.mode = MPL_MODE_W4A8;
    c.group_size = 64 + 16; /* 80 divides nothing useful: use 48 on k = 96 */
    c.k = 96;
    c.group_size = 48;
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, 8, &count), MPL_ERR_UNSUPPORTED);
    assert_int_equal(e[0].reason, MPL_REASON_GROUP_SIZE);
    c.k = 256;
    c.group_size = 128;
    c.wtype = MPL_WTYPE_UINT8B128;
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, 8, &count), MPL_ERR_UNSUPPORTED);
    assert_int_equal(e[0].reason, MPL_REASON_WEIGHT_TYPE);
}

/* pack -> unpack gives back the canonical codes, scales, zeros, g_idx and perm. */
static void layout_round_trip(void **state) {
    (void)state;
    const shape shapes[] = {
        {384, 50, 96, MPL_WTYPE_UINT4, MPL_ACT_BF16, 1},
        {200, 17, -1, MPL_WTYPE_INT4, MPL_ACT_F16, 0},
        {256, 64, 32, MPL_WTYPE_UINT4B8, MPL_ACT_F32, 1},
    };
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
        rng_state = 300 + si;
        weights w;
        weights_make(&w, &shapes[si]);
        mpl_canonical c;
        assert_int_equal(mpl_canonical_alloc(&c, &w.cfg), MPL_OK);
        memcpy(c.codes, w.codes, (size_t)(c.n * c.k));
        memcpy(c.scales, w.scales, (size_t)(c.n * c.groups) * 4);
        if (c.zeros) memcpy(c.zeros, w.zeros, (size_t)(c.n * c.groups));
        if (c.g_idx) memcpy(c.g_idx, w.g_idx, (size_t)c.k * 4);
        assert_int_equal(mpl_canonical_resolve_act_order(&c), MPL_OK);
        mpl_x86_w4a8 *p = NULL;
        assert_int_equal(mpl_x86_w4a8_pack(&w.cfg, &c, &p), MPL_OK);
        mpl_canonical u;
        assert_int_equal(mpl_x86_w4a8_unpack(p, &u), MPL_OK);
        assert_int_equal(u.k, c.k);
        assert_int_equal(u.n, c.n);
        assert_int_equal(u.groups, c.groups);
        assert_memory_equal(u.codes, c.codes, (size_t)(c.n * c.k));
        assert_memory_equal(u.scales, c.scales, (size_t)(c.n * c.groups) * 4);
        assert_int_equal(u.zeros != NULL, c.zeros != NULL);
        if (c.zeros) assert_memory_equal(u.zeros, c.zeros, (size_t)(c.n * c.groups));
        assert_int_equal(u.g_idx != NULL, c.g_idx != NULL);
        if (c.g_idx) {
            assert_memory_equal(u.g_idx, c.g_idx, (size_t)c.k * 4);
            assert_memory_equal(u.perm, c.perm, (size_t)c.k * 4);
        }
        /* Padding columns of the last panel hold code 0 (nibble 0) and scale 0. */
        if (c.n % MPL_W4A8_PANEL) {
            int64_t pan = p->panels - 1;
            for (int64_t g = 0; g < p->groups; g++)
                for (int64_t col = c.n % MPL_W4A8_PANEL; col < MPL_W4A8_PANEL; col++)
                    assert_true(p->scales[(pan * p->groups + g) * MPL_W4A8_PANEL + col] == 0.0f);
        }
        mpl_canonical_free(&u);
        mpl_canonical_free(&c);
        mpl_x86_w4a8_free(p);
        weights_free(&w);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_round_trip), cmocka_unit_test(chooser),     cmocka_unit_test(edge_matrix),
        cmocka_unit_test(group_sizes_types_acts), cmocka_unit_test(odd_shapes), cmocka_unit_test(special_rows),
        cmocka_unit_test(accuracy_vs_w4a16),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
