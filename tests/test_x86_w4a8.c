/*
 * test_x86_w4a8.c -- every path of the x86 W4A8 kernels (x86_avx512vnni_w4a8:amx and :vnni,
 * x86_avxvnni_w4a8:vnni, x86_avx2_w4a8:madd) against the reference kernel, through the public
 * API: each path is forced by name (mpl_options.kernel = "<kernel>:<path>", checked against
 * mpl_layer_path), and x86_avx512vnni_w4a8 also runs with its own choice of path by m. Every
 * weight width: uint4b8, int4, uint4 (zero points), uint8b128, uint8 (zp), uint3b4, uint3 (zp),
 * uint2b2, uint2 (zp); extreme codes (0 and 2^bits - 1, zero points 0 and 2^bits - 1) against
 * x = +-127 (the vpmaddubsw saturation case of 8-bit) and a group at the int32 bound.
 *
 * How close the two must be: identical. Both compute the same exact integer group sums
 * (isum_g = sum q*w; the kernels as sum q*u - z*sum q, which is the same integer) and the
 * same float operations in the same order (s = 0; s += scale[g]*(float)isum_g for g
 * ascending; y = s*sx; y += bias; one rounding to the activation type), so every output
 * is compared bit for bit (NaN against NaN). A path this host cannot run is skipped with the
 * chooser's message (mpl_check); a config a path does not take (the amx path needs a group
 * length that is a multiple of 32) is counted as not applicable.
 *
 * Accuracy of W4A8 itself is checked separately against a float64 W4A16 result on
 * Gaussian activations (relative Frobenius error <= 2%, the target). The chooser's
 * refusals and its default path are checked on faked CPUs (the platform hook fakes a CPU for
 * the chooser only: no kernel code runs on it).
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
#include "kernels/x86/x86_isa.h"
#include "layouts/x86_w4a8.h"
#include "mplinear.h"

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

/* ---------- targets: every path, then the kernels with more than one path unforced ---------- */
typedef struct {
    char name[64];
    int is_path;
    int runnable; /* this host can run it (mpl_check on the platform alone) */
} target;

static const char *const kernels[] = {"x86_avx512vnni_w4a8", "x86_avxvnni_w4a8", "x86_avx2_w4a8"};
static target targets[16];
static int ntargets, nrunnable;

static void add_target(const char *name, int is_path) {
    assert_true(ntargets < (int)(sizeof targets / sizeof targets[0]));
    target *t = &targets[ntargets++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->is_path = is_path;
    mpl_verdict v;
    assert_int_equal(mpl_check(NULL, NULL, name, &v), MPL_OK);
    t->runnable = v.reason == MPL_REASON_OK;
    nrunnable += t->runnable;
    if (!t->runnable) printf("# SKIP %s on this host: %s: %s\n", name, mpl_reason_name(v.reason), v.message);
}

static int setup(void **state) {
    (void)state;
    ntargets = nrunnable = 0;
    for (int k = 0; k < 3; k++) {
        int found = 0;
        for (int i = 0; i < mpl_kernel_count(); i++) {
            mpl_kernel_info ki;
            assert_int_equal(mpl_kernel_get(i, &ki), MPL_OK);
            if (strcmp(ki.name, kernels[k]) != 0) continue;
            found = 1;
            for (int j = 0; j < ki.paths; j++) {
                mpl_path_info pi;
                assert_int_equal(mpl_path_get(i, j, &pi), MPL_OK);
                add_target(pi.name, 1);
            }
            if (ki.paths > 1) add_target(ki.name, 0);
        }
        assert_true(found);
    }
    return 0;
}

/* 1 when target t takes this config; 0 (not applicable) when it refuses it for a reason of its own. */
static int takes(const target *t, const mpl_config *c) {
    mpl_verdict v;
    assert_int_equal(mpl_check(c, NULL, t->name, &v), MPL_OK);
    if (v.reason == MPL_REASON_SHAPE) return 0; /* amx: group length not a multiple of 32 */
    if (v.reason != MPL_REASON_OK) printf("FAIL %s refuses a valid config: %s\n", t->name, v.message);
    assert_int_equal(v.reason, MPL_REASON_OK);
    return 1;
}

/* ---------- layers ---------- */
typedef struct {
    int64_t k, n, gs;
    mpl_wtype wt;
    mpl_act act;
    int act_order;
    int extreme; /* codes and zero points at 0 and 2^bits - 1 (weights_make) */
} shape;

typedef struct {
    mpl_config cfg;
    uint8_t *codes, *zeros;
    float *scales;
    int32_t *g_idx;
} weights;

/* Column patterns of extreme weights: all codes at the top (2^bits - 1), all 0, top and 0 alternating
 * in pairs along K (a vpmaddubsw pair of two top codes), random; zero points 0 or the top by column. */
static uint8_t extreme_code(int64_t n, int64_t k, uint8_t top) {
    switch (n % 4) {
    case 0: return top;
    case 1: return 0;
    case 2: return (k / 2) % 2 ? 0 : top;
    default: return (uint8_t)(rnd() & top);
    }
}

static void weights_make(weights *w, const shape *s) {
    memset(w, 0, sizeof *w);
    mpl_config_init(&w->cfg, s->k, s->n);
    w->cfg.wtype = s->wt;
    w->cfg.act = s->act;
    w->cfg.group_size = s->gs;
    w->cfg.zero_points = mpl_wtype_needs_zeros(s->wt);
    w->cfg.act_order = s->act_order;
    w->cfg.mode = MPL_MODE_W4A8;
    const uint8_t top = (uint8_t)((1u << mpl_wtype_bits(s->wt)) - 1u);
    int64_t G = s->gs == -1 ? 1 : s->k / s->gs, gl = s->k / G;
    w->codes = malloc((size_t)(s->n * s->k));
    w->scales = malloc((size_t)(s->n * G) * sizeof(float));
    w->zeros = malloc((size_t)(s->n * G));
    for (int64_t i = 0; i < s->n * s->k; i++)
        w->codes[i] = s->extreme ? extreme_code(i / s->k, i % s->k, top) : (uint8_t)(rnd() & top);
    /* Scales exact in f16: (1 + i/8) * 2^e, e in [-9, -5], sign random. */
    for (int64_t i = 0; i < s->n * G; i++) {
        double v = ldexp(1.0 + (double)(rnd() % 8) / 8.0, -5 - (int)(rnd() % 5));
        w->scales[i] = (float)((rnd() & 1) ? -v : v);
        w->zeros[i] = s->extreme ? (uint8_t)((i / G) % 3 == 1 ? top : 0) : (uint8_t)(rnd() & top);
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

enum { ROWS_PLAIN = 0, ROWS_SPECIAL = 1, ROWS_EXTREME = 2 };

/* Fills x; ROWS_SPECIAL puts an all-zero row, a one-huge-value row, an inf row and a NaN row among normal ones. */
/* ROWS_EXTREME: rows whose every q is +127, -127, +-127 alternating in pairs, +-127 at random, then
 * Gaussian rows (every |x| equal quantizes to |q| = 127). */
static void x_make(mpl_act a, void *x, int64_t m, int64_t k, int kind) {
    const float huge = a == MPL_ACT_F16 ? 60000.0f : 1e30f;
    for (int64_t r = 0; r < m; r++) {
        if (kind == ROWS_EXTREME && r % 5 < 4) {
            for (int64_t i = 0; i < k; i++) {
                int neg = r % 5 == 1 || (r % 5 == 2 && (i / 2) % 2) || (r % 5 == 3 && (rnd() & 1));
                act_store(a, x, r * k + i, neg ? -1.5f : 1.5f);
            }
            continue;
        }
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

static int run_case(const shape *s, int64_t m, int kind, int with_bias, int threads, const target *v) {
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
    mpl_layer *lr = layer_make(&w, "ref", 1);
    mpl_layer *lk = layer_make(&w, v->name, threads);
    int bad = 0;
    if (!lr || !lk) bad = 1;
    if (!bad && v->is_path && (!mpl_layer_path(lk, m) || strcmp(mpl_layer_path(lk, m), v->name) != 0)) {
        printf("FAIL forced %s, but the layer runs %s for m = %lld\n", v->name,
               mpl_layer_path(lk, m) ? mpl_layer_path(lk, m) : "(none)", (long long)m);
        bad = 1;
    }
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

static mpl_config cfg_of(const shape *s) {
    mpl_config c;
    mpl_config_init(&c, s->k, s->n);
    c.wtype = s->wt;
    c.act = s->act;
    c.group_size = s->gs;
    c.zero_points = mpl_wtype_needs_zeros(s->wt);
    c.act_order = s->act_order;
    c.mode = MPL_MODE_W4A8;
    return c;
}

/* Runs one case on every target this host runs and that takes the shape; counts cases. */
static int run_all(const shape *s, int64_t m, int kind, int with_bias, int threads, uint64_t seed, int *cases) {
    int failures = 0;
    mpl_config c = cfg_of(s);
    for (int ti = 0; ti < ntargets; ti++) {
        if (!targets[ti].runnable || !takes(&targets[ti], &c)) continue;
        rng_state = seed;
        failures += run_case(s, m, kind, with_bias, threads, &targets[ti]);
        (*cases)++;
    }
    return failures;
}

/* M around every path's tile (vnni zmm: 6 rows (3-bit 4), ymm: 4, AMX: 32, decode 1-2) and a large odd M. */
static const int64_t Ms[] = {1, 2, 3, 4, 5, 6, 7, 31, 32, 33, 64, 513};

#define U4B8 MPL_WTYPE_UINT4B8
#define I4 MPL_WTYPE_INT4
#define U4 MPL_WTYPE_UINT4
#define U8B128 MPL_WTYPE_UINT8B128
#define U8 MPL_WTYPE_UINT8
#define U3B4 MPL_WTYPE_UINT3B4
#define U3 MPL_WTYPE_UINT3
#define U2B2 MPL_WTYPE_UINT2B2
#define U2 MPL_WTYPE_UINT2
/* Every weight type the kernels take. */
static const mpl_wtype all_wtypes[] = {U4B8, I4, U4, U8B128, U8, U3B4, U3, U2B2, U2};
#define NWT ((int)(sizeof all_wtypes / sizeof all_wtypes[0]))

static void edge_matrix(void **state) {
    (void)state;
    if (!nrunnable) skip();
    const shape shapes[] = {
        {256, 40, 128, U4B8, MPL_ACT_BF16, 0, 0}, /* N tail inside a panel */
        {256, 17, -1, I4, MPL_ACT_F16, 0, 0},     /* N = one panel + 1 */
        {384, 64, 96, U4, MPL_ACT_F32, 0, 0},     /* zero points, group of 96 (AMX kb 32) */
        {512, 48, 64, U4B8, MPL_ACT_F32, 1, 0},   /* act-order */
        {200, 33, -1, U4, MPL_ACT_BF16, 0, 0},    /* K not a multiple of 16 or 32 (no AMX) */
        {256, 40, 128, U8B128, MPL_ACT_BF16, 0, 0},
        {384, 17, 96, U8, MPL_ACT_F16, 0, 0},
        {200, 33, -1, U8, MPL_ACT_F32, 0, 0},     /* 8-bit K = 25 steps of 8 (no AMX) */
        {512, 48, 64, U8B128, MPL_ACT_F32, 1, 0},
        {384, 40, 96, U3B4, MPL_ACT_BF16, 0, 0},  /* 3 steps of 32 per group */
        {512, 17, 128, U3, MPL_ACT_F32, 1, 0},
        {160, 33, -1, U3, MPL_ACT_F16, 0, 0},     /* 5 steps of 32 */
        {256, 40, 64, U2B2, MPL_ACT_F16, 1, 0},
        {384, 64, 96, U2, MPL_ACT_BF16, 0, 0},
        {208, 33, -1, U2, MPL_ACT_F32, 0, 0},     /* 13 steps of 16 (no AMX) */
    };
    int failures = 0, cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++)
            failures += run_all(&shapes[si], Ms[mi], ROWS_PLAIN, (int)(mi & 1), (int)(mi % 3), 1000 * si + mi, &cases);
    printf("# edge matrix: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/* Every weight type x group size (the W4A8 rule: -1 or a multiple of 32 dividing k) x act-order x activation type. */
static void group_sizes_types_acts(void **state) {
    (void)state;
    if (!nrunnable) skip();
    const int64_t gss[] = {-1, 32, 64, 96, 128, 192, 384};
    const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};
    int failures = 0, cases = 0;
    for (size_t gi = 0; gi < sizeof gss / sizeof gss[0]; gi++)
        for (int ti = 0; ti < NWT; ti++)
            for (int ao = 0; ao < 2; ao++) {
                if (ao && gss[gi] == -1) continue;
                shape s = {384, 50, gss[gi], all_wtypes[ti], acts[(gi + (size_t)ti + (size_t)ao) % 3], ao, 0};
                failures += run_all(&s, ti % 3 == 1 ? 3 : 40, ROWS_PLAIN, 1, 0, 77 + gi * 10 + (uint64_t)ti + 100 * (uint64_t)ao,
                                    &cases);
            }
    printf("# group sizes x weight types x act-order: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

static void odd_shapes(void **state) {
    (void)state;
    if (!nrunnable) skip();
    const shape shapes[] = {
        {8, 1, -1, U4B8, MPL_ACT_F32, 0, 0},
        {32, 3, 32, I4, MPL_ACT_BF16, 1, 0},
        {1408, 31, 128, U4, MPL_ACT_F16, 0, 0},
        {4104, 16, -1, U4B8, MPL_ACT_BF16, 0, 0},
        {96, 129, 32, U4, MPL_ACT_F32, 1, 0},
        {1024, 40, -1, U4, MPL_ACT_F32, 0, 0},  /* AMX: one group spans several K chunks */
        {1088, 20, 544, I4, MPL_ACT_BF16, 1, 0}, /* AMX: groups straddle K chunks, kb 32 */
        {8, 1, -1, U8, MPL_ACT_F32, 0, 0},       /* 8-bit: one step */
        {32, 3, 32, U3B4, MPL_ACT_BF16, 1, 0},   /* 3-bit: one step */
        {16, 2, -1, U2B2, MPL_ACT_F16, 0, 0},    /* 2-bit: one step */
        {1408, 31, 128, U8, MPL_ACT_F16, 0, 0},
        {4128, 16, -1, U3B4, MPL_ACT_BF16, 0, 0},
        {96, 129, 32, U2, MPL_ACT_F32, 1, 0},
        {1024, 40, -1, U8B128, MPL_ACT_F32, 0, 0},
        {1088, 20, 544, U3, MPL_ACT_BF16, 1, 0},
        {1088, 20, 544, U2B2, MPL_ACT_F16, 0, 0},
    };
    int failures = 0, cases = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
        for (int64_t m = 1; m <= 70; m += 13)
            failures += run_all(&shapes[si], m, ROWS_PLAIN, 1, 0, 5000 + si * 7 + (uint64_t)m, &cases);
    printf("# odd shapes: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/* All-zero rows (y = bias), one-huge-value rows, inf rows and NaN rows (NaN outputs for that row). */
static void special_rows(void **state) {
    (void)state;
    if (!nrunnable) skip();
    const mpl_act acts[] = {MPL_ACT_BF16, MPL_ACT_F16, MPL_ACT_F32};
    const mpl_wtype wts[] = {U4B8, U4, U8B128, U8, U3, U2B2};
    int failures = 0, cases = 0;
    for (int ai = 0; ai < 3; ai++)
        for (int ao = 0; ao < 2; ao++)
            for (int wi = 0; wi < 6; wi++) {
                shape s = {256, 48, 64, wts[wi], acts[(ai + wi) % 3], ao, 0};
                uint64_t seed = 9000 + (uint64_t)ai * 3 + (uint64_t)ao + 10 * (uint64_t)wi;
                failures += run_all(&s, 2, ROWS_SPECIAL, 1, 0, seed, &cases);
                failures += run_all(&s, 37, ROWS_SPECIAL, ai & 1, 0, seed, &cases);
            }
    printf("# special rows: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/*
 * Extreme codes: columns of all-top codes (2^bits - 1: 255 for 8-bit), all-zero codes, top and 0
 * alternating in pairs, random; zero points 0 or the top; rows of q = +127, -127, +-127 in pairs,
 * +-127 at random, Gaussian. A vpmaddubsw of two 255 codes against two q = 127 would saturate s16
 * (64770); the kernels must not let it, and every output must equal the reference's bit for bit.
 */
static void extreme_codes(void **state) {
    (void)state;
    if (!nrunnable) skip();
    const int64_t gss[] = {-1, 64};
    int failures = 0, cases = 0;
    for (int ti = 0; ti < NWT; ti++)
        for (int gi = 0; gi < 2; gi++) {
            shape s = {256, 40, gss[gi], all_wtypes[ti], gi ? MPL_ACT_BF16 : MPL_ACT_F32, 0, 1};
            failures += run_all(&s, 5, ROWS_EXTREME, 0, 0, 600 + (uint64_t)ti * 2 + (uint64_t)gi, &cases);
            failures += run_all(&s, 33, ROWS_EXTREME, 1, 2, 700 + (uint64_t)ti * 2 + (uint64_t)gi, &cases);
        }
    printf("# extreme codes: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/*
 * Decode over threads claiming stretches of ~256 KiB of panels (m <= 4, threads > 1): K = 8192 (64 KiB
 * per 4-bit panel: 4 panels a claim; 8-bit: 2), N = 200 (13 panels, the last one short), m = 1..4,
 * 2 and 3 threads, every width's layout with and without zero points.
 */
static void decode_claims(void **state) {
    (void)state;
    if (!nrunnable) skip();
    int failures = 0, cases = 0;
    const mpl_wtype wts[] = {U4B8, U4, U8B128, U2};
    for (int wi = 0; wi < 4; wi++)
        for (int64_t m = 1; m <= 4; m++) {
            shape s = {8192, 200, 128, wts[wi], m & 1 ? MPL_ACT_BF16 : MPL_ACT_F32, 0, 0};
            failures += run_all(&s, m, ROWS_PLAIN, (int)(m & 1), 2 + (int)(m & 1), 900 + (uint64_t)(wi * 4 + m), &cases);
        }
    printf("# decode claims: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/*
 * One 8-bit group at the int32 bound: K = 65536, group -1, 127 * 255 * 65536 = 2122383360 < 2^31
 * (config validation's limit), with all-top codes and zero points 0 (isum = +2122383360 against
 * q = +127) and all-zero codes with zero points 255 (isum = -2122383360): the int32 sums and the
 * z * sum(q) term must not overflow on any path.
 */
static void int32_bound(void **state) {
    (void)state;
    if (!nrunnable) skip();
    int failures = 0, cases = 0;
    const mpl_wtype wts[] = {U8, U8B128};
    for (int wi = 0; wi < 2; wi++) {
        shape s = {65536, 20, -1, wts[wi], MPL_ACT_F32, 0, 1};
        failures += run_all(&s, 3, ROWS_EXTREME, 1, 2, 800 + (uint64_t)wi, &cases);
    }
    printf("# int32 bound: %d cases, %d failures\n", cases, failures);
    assert_int_equal(failures, 0);
}

/*
 * Accuracy of W4A8 against the float64 W4A16 result on Gaussian x (K = 4096, group 128):
 * per-row int8 quantization adds a uniform error of at most sx/2 per element, relative
 * RMS ~ 1/(sqrt(12)*127/amax*rms) ~ 0.8% for Gaussian rows (amax ~ 4 sigma); the issue
 * bounds the relative Frobenius error at 2%. m = 32 reaches the amx path where it runs.
 */
static void accuracy_vs_w4a16(void **state) {
    (void)state;
    if (!nrunnable) skip();
    const mpl_wtype wts[] = {U4B8, U8B128, U3B4, U2B2};
    for (int wi = 0; wi < 4; wi++) {
        shape s = {4096, 128, 128, wts[wi], MPL_ACT_F32, 0, 0};
        const int64_t m = 32, K = s.k, N = s.n, G = K / s.gs;
        const int bias = mpl_wtype_bias(s.wt);
        rng_state = 42;
        weights w;
        weights_make(&w, &s);
        float *x = malloc((size_t)(m * K) * 4), *y = malloc((size_t)(m * N) * 4);
        double *want = malloc((size_t)(m * N) * sizeof(double));
        for (int64_t i = 0; i < m * K; i++) x[i] = (float)gauss();
        for (int64_t r = 0; r < m; r++)
            for (int64_t n = 0; n < N; n++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x[r * K + k] * (double)(w.codes[n * K + k] - bias) * (double)w.scales[n * G + k / s.gs];
                want[r * N + n] = acc;
            }
        for (int ti = 0; ti < ntargets; ti++) {
            if (!targets[ti].runnable) continue;
            mpl_layer *l = layer_make(&w, targets[ti].name, 0);
            assert_non_null(l);
            assert_int_equal(mpl_layer_apply(l, m, x, NULL, y), MPL_OK);
            double num = 0, den = 0;
            for (int64_t i = 0; i < m * N; i++) {
                double d = (double)y[i] - want[i];
                num += d * d;
                den += want[i] * want[i];
            }
            double rel = sqrt(num / den);
            printf("# %s %s: relative Frobenius error vs float64 W4A16 = %.4f%%\n", targets[ti].name,
                   mpl_wtype_name(s.wt), 100 * rel);
            assert_true(rel <= 0.02);
            mpl_layer_destroy(l);
        }
        free(x);
        free(y);
        free(want);
        weights_free(&w);
    }
}

/* The first W4A8 kernel this host runs, in the registry's order (widest ISA first). */
static const char *host_kernel(void) {
    for (int k = 0; k < 3; k++) {
        mpl_verdict v;
        assert_int_equal(mpl_check(NULL, NULL, kernels[k], &v), MPL_OK);
        if (v.reason == MPL_REASON_OK) return kernels[k];
    }
    return NULL;
}

/* The chooser: W4A8 configs get the widest W4A8 kernel the host runs; W4A16 configs never get one;
 * refusals carry reasons. */
static void chooser(void **state) {
    (void)state;
    const char *kernel = host_kernel();
    if (!kernel) skip();
    mpl_config c;
    mpl_config_init(&c, 256, 64);
    c.group_size = 128;
    c.mode = MPL_MODE_W4A8;
    const char *chosen = NULL;
    mpl_choice_entry e[8];
    int count = 0;
    assert_int_equal(mpl_choose(&c, NULL, &chosen, e, 8, &count), MPL_OK);
    assert_string_equal(chosen, kernel);
    c.mode = MPL_MODE_W4A16;
    mpl_choose(&c, NULL, &chosen, e, 8, &count);
    for (int k = 0; k < 3; k++) assert_true(chosen == NULL || strcmp(chosen, kernels[k]) != 0);
    int seen = 0;
    for (int i = 0; i < count; i++)
        if (strcmp(e[i].kernel, kernel) == 0) {
            assert_int_equal(e[i].reason, MPL_REASON_MODE);
            assert_non_null(strstr(e[i].message, "W4A16"));
            seen = 1;
        }
    assert_true(seen);
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = kernel;
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, 8, &count), MPL_ERR_UNSUPPORTED);
    c.mode = MPL_MODE_W4A8;
    c.k = 96;
    c.group_size = 48; /* divides k but is not a multiple of 32 */
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, 8, &count), MPL_ERR_UNSUPPORTED);
    assert_int_equal(e[0].reason, MPL_REASON_GROUP_SIZE);
    /* Every width is taken (8-, 3- and 2-bit W4A8 layers no longer fall to ref)... */
    for (int ti = 0; ti < NWT; ti++) {
        c.k = 256;
        c.group_size = 128;
        c.wtype = all_wtypes[ti];
        c.zero_points = mpl_wtype_needs_zeros(c.wtype);
        assert_int_equal(mpl_choose(&c, NULL, &chosen, e, 8, &count), MPL_OK);
        assert_string_equal(chosen, kernel);
    }
    /* ... but 8-bit K must be a multiple of 8 (config validation asks only 4). */
    c.k = 196;
    c.group_size = -1;
    c.wtype = MPL_WTYPE_UINT8B128;
    c.zero_points = 0;
    assert_int_equal(mpl_choose(&c, &o, &chosen, e, 8, &count), MPL_ERR_UNSUPPORTED);
    assert_int_equal(e[0].reason, MPL_REASON_SHAPE);
    assert_non_null(strstr(e[0].message, "196"));
    assert_non_null(strstr(e[0].message, "multiple of 8"));
}

static void fake_cpu(uint32_t isa) {
    static mpl_platform p;
    mpl_platform_override(NULL);
    p = *mpl_platform_current();
    p.isa = isa;
    mpl_platform_override(&p);
}

static const char *chosen_path(const mpl_config *c, int64_t m) {
    const char *path = NULL;
    assert_int_equal(mpl_choose_path(c, NULL, m, &path), MPL_OK);
    assert_non_null(path);
    return path;
}

/* Faked CPUs (the chooser only): which kernel and path each gets, and the refusals on the way. */
static void paths_by_cpu(void **state) {
    (void)state;
    const uint32_t amx = MPL_ISA_SSE42 | MPL_X86_LEVEL_AMX;
    const uint32_t zen4 = amx & ~(MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16 | MPL_ISA_AMX_INT8);
    const uint32_t skx = MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX512; /* AVX-512 without VNNI */
    const uint32_t adl = MPL_ISA_SSE42 | MPL_X86_LEVEL_AVXVNNI;
    const uint32_t hsw = MPL_ISA_SSE42 | MPL_X86_LEVEL_AVX2;
    shape s = {256, 64, 128, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 0, 0};
    mpl_config c = cfg_of(&s);
    mpl_verdict v;

    fake_cpu(amx);
    assert_string_equal(chosen_path(&c, 1), "x86_avx512vnni_w4a8:vnni");
    assert_string_equal(chosen_path(&c, 31), "x86_avx512vnni_w4a8:vnni");
    assert_string_equal(chosen_path(&c, 32), "x86_avx512vnni_w4a8:amx");
    assert_string_equal(chosen_path(&c, 513), "x86_avx512vnni_w4a8:amx");
    /* group -1 on k = 200: the amx path's k-step does not fit, vnni takes every m. */
    shape s200 = {200, 64, -1, MPL_WTYPE_UINT4B8, MPL_ACT_BF16, 0, 0};
    mpl_config c200 = cfg_of(&s200);
    assert_int_equal(mpl_check(&c200, NULL, "x86_avx512vnni_w4a8:amx", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_SHAPE);
    assert_non_null(strstr(v.message, "200"));
    assert_non_null(strstr(v.message, "multiple of 32"));
    assert_string_equal(chosen_path(&c200, 64), "x86_avx512vnni_w4a8:vnni");

    fake_cpu(zen4);
    assert_int_equal(mpl_check(&c, NULL, "x86_avx512vnni_w4a8:amx", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(v.message, "amx_int8"));
    assert_string_equal(chosen_path(&c, 64), "x86_avx512vnni_w4a8:vnni");

    fake_cpu(skx);
    assert_int_equal(mpl_check(&c, NULL, "x86_avx512vnni_w4a8", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(v.message, "avx512_vnni"));
    assert_string_equal(chosen_path(&c, 64), "x86_avx2_w4a8:madd"); /* no avx_vnni on these parts */

    fake_cpu(adl);
    assert_string_equal(chosen_path(&c, 1), "x86_avxvnni_w4a8:vnni");
    assert_string_equal(chosen_path(&c, 64), "x86_avxvnni_w4a8:vnni");

    fake_cpu(hsw);
    assert_int_equal(mpl_check(&c, NULL, "x86_avxvnni_w4a8", &v), MPL_OK);
    assert_int_equal(v.reason, MPL_REASON_ISA_MISSING);
    assert_non_null(strstr(v.message, "avx_vnni"));
    assert_string_equal(chosen_path(&c, 7), "x86_avx2_w4a8:madd");

    fake_cpu(MPL_ISA_SSE42); /* no AVX2: the reference kernel */
    const char *chosen = NULL;
    assert_int_equal(mpl_choose(&c, NULL, &chosen, NULL, 0, NULL), MPL_OK);
    assert_string_equal(chosen, "ref");
    mpl_platform_override(NULL);
}

/*
 * The code at packed position j, column col, read back the way docs/layouts/x86_w4a8.md states it
 * (written here from the spec, independently of the layout's own index helpers).
 */
static unsigned spec_code(const mpl_x86_w4a8_layout *p, int64_t j, int col) {
    const uint8_t *pan = p->nib; /* panel 0 (callers point nib at another panel to read it) */
    const size_t lane = (size_t)col * 4 + (size_t)(j % 4);
    switch (p->bits) {
    case 8: return pan[(j / 4) * 64 + lane];
    case 4: return (pan[(j / 8) * 64 + lane] >> ((j % 8) >= 4 ? 4 : 0)) & 15u;
    case 2: return (pan[(j / 16) * 64 + lane] >> (2 * ((j % 16) / 4))) & 3u;
    default: {
        const uint8_t *st = pan + (j / 32) * 192;
        int64_t i = j % 32;
        unsigned lo = (st[(i / 16) * 64 + lane] >> (2 * ((i % 16) / 4))) & 3u;
        unsigned hi = (st[128 + lane] >> (i / 4)) & 1u;
        return lo | hi << 2;
    }
    }
}

/* pack -> unpack gives back the canonical codes, scales, zeros, g_idx and perm, at every width; the
 * packed bytes match the spec; padding columns hold code 0 and scale 0. */
static void layout_round_trip(void **state) {
    (void)state;
    const shape base[] = {
        {384, 50, 96, U4, MPL_ACT_BF16, 1, 0},
        {224, 17, -1, I4, MPL_ACT_F16, 0, 0},
        {256, 64, 32, U4B8, MPL_ACT_F32, 1, 0},
    };
    int cases = 0;
    for (int ti = 0; ti < NWT; ti++)
        for (size_t si = 0; si < sizeof base / sizeof base[0]; si++) {
            shape sh = base[si];
            sh.wt = all_wtypes[ti];
            sh.extreme = (int)si == 1;
            rng_state = 300 + si + 10 * (uint64_t)ti;
            weights w;
            weights_make(&w, &sh);
            mpl_canonical c;
            assert_int_equal(mpl_canonical_alloc(&c, &w.cfg), MPL_OK);
            memcpy(c.codes, w.codes, (size_t)(c.n * c.k));
            memcpy(c.scales, w.scales, (size_t)(c.n * c.groups) * 4);
            if (c.zeros) memcpy(c.zeros, w.zeros, (size_t)(c.n * c.groups));
            if (c.g_idx) memcpy(c.g_idx, w.g_idx, (size_t)c.k * 4);
            assert_int_equal(mpl_canonical_resolve_act_order(&c), MPL_OK);
            mpl_x86_w4a8_layout *p = NULL;
            assert_int_equal(mpl_x86_w4a8_pack(&w.cfg, &c, &p), MPL_OK);
            assert_int_equal(p->bits, mpl_wtype_bits(sh.wt));
            assert_int_equal(p->panel_bytes, (size_t)c.k * 2 * (size_t)p->bits);
            /* Panel 0 against the spec: stored code u = code (int4: code ^ 8) of input channel perm[j]. */
            for (int col = 0; col < MPL_X86_W4A8_PANEL && col < c.n; col++)
                for (int64_t j = 0; j < c.k; j++) {
                    unsigned code = c.codes[(size_t)col * (size_t)c.k + (size_t)(c.perm ? c.perm[j] : j)];
                    if (sh.wt == I4) code ^= 8u;
                    if (spec_code(p, j, col) != code) {
                        printf("FAIL %s col %d j %lld: spec reads %u, code %u\n", mpl_wtype_name(sh.wt), col,
                               (long long)j, spec_code(p, j, col), code);
                        fail();
                    }
                }
            mpl_canonical u;
            assert_int_equal(mpl_x86_w4a8_unpack(p, &u), MPL_OK);
            assert_int_equal(u.k, c.k);
            assert_int_equal(u.n, c.n);
            assert_int_equal(u.groups, c.groups);
            assert_int_equal(u.wtype, c.wtype);
            assert_memory_equal(u.codes, c.codes, (size_t)(c.n * c.k));
            assert_memory_equal(u.scales, c.scales, (size_t)(c.n * c.groups) * 4);
            assert_int_equal(u.zeros != NULL, c.zeros != NULL);
            if (c.zeros) assert_memory_equal(u.zeros, c.zeros, (size_t)(c.n * c.groups));
            assert_int_equal(u.g_idx != NULL, c.g_idx != NULL);
            if (c.g_idx) {
                assert_memory_equal(u.g_idx, c.g_idx, (size_t)c.k * 4);
                assert_memory_equal(u.perm, c.perm, (size_t)c.k * 4);
            }
            /* Padding columns of the last panel hold code 0 and scale 0. */
            if (c.n % MPL_X86_W4A8_PANEL) {
                int64_t pan = p->panels - 1;
                mpl_x86_w4a8_layout last = *p;
                last.nib = p->nib + (size_t)pan * p->panel_bytes;
                for (int64_t col = c.n % MPL_X86_W4A8_PANEL; col < MPL_X86_W4A8_PANEL; col++) {
                    for (int64_t g = 0; g < p->groups; g++)
                        assert_true(p->scales[(pan * p->groups + g) * MPL_X86_W4A8_PANEL + col] == 0.0f);
                    for (int64_t j = 0; j < c.k; j++) assert_int_equal(spec_code(&last, j, (int)col), 0);
                }
            }
            mpl_canonical_free(&u);
            mpl_canonical_free(&c);
            mpl_x86_w4a8_free(p);
            weights_free(&w);
            cases++;
        }
    printf("# layout round trip: %d layers (every weight type)\n", cases);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_round_trip),      cmocka_unit_test(chooser),    cmocka_unit_test(paths_by_cpu),
        cmocka_unit_test(edge_matrix),            cmocka_unit_test(odd_shapes), cmocka_unit_test(special_rows),
        cmocka_unit_test(group_sizes_types_acts), cmocka_unit_test(extreme_codes), cmocka_unit_test(int32_bound),
        cmocka_unit_test(decode_claims),
        cmocka_unit_test(accuracy_vs_w4a16),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
