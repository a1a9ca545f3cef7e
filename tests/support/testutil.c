/* testutil.c -- shared test helpers (see testutil.h). Public API only; float64 oracles. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- RNG: xoshiro256** (Blackman & Vigna), state from splitmix64 ---------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void tu_rng_init(tu_rng *r, uint64_t seed) {
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t tu_rng_next(tu_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

uint64_t tu_rng_below(tu_rng *r, uint64_t n) {
    if (n <= 1) return 0;
    uint64_t threshold = (0 - n) % n; /* 2^64 mod n: reject the low values that would bias % */
    for (;;) {
        uint64_t v = tu_rng_next(r);
        if (v >= threshold) return v % n;
    }
}

int64_t tu_rng_range(tu_rng *r, int64_t lo, int64_t hi) {
    return lo + (int64_t)tu_rng_below(r, (uint64_t)(hi - lo) + 1u);
}

double tu_rng_unit(tu_rng *r) { return (double)(tu_rng_next(r) >> 11) * 0x1.0p-53; }

double tu_rng_uniform(tu_rng *r, double lo, double hi) { return lo + (hi - lo) * tu_rng_unit(r); }

void tu_rng_shuffle_i32(tu_rng *r, int32_t *a, int64_t n) {
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)tu_rng_below(r, (uint64_t)i + 1u);
        int32_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

uint64_t tu_seed(uint64_t fallback) {
    const char *s = getenv("MPL_TEST_SEED");
    if (!s || !*s) return fallback;
    return strtoull(s, NULL, 0);
}

uint64_t tu_case_seed(uint64_t base, uint64_t index) {
    uint64_t x = base ^ (index * 0xd1b54a32d192ed03ULL);
    return splitmix64(&x);
}

/* ---------- value semantics ---------- */

int tu_code_value(mpl_wtype t, int code, int zero) {
    switch (t) {
    case MPL_WTYPE_UINT4B8: return code - 8;
    case MPL_WTYPE_UINT4: return code - zero;
    case MPL_WTYPE_INT4: return code < 8 ? code : code - 16;
    case MPL_WTYPE_UINT8B128: return code - 128;
    case MPL_WTYPE_UINT8: return code - zero;
    case MPL_WTYPE_UINT2B2: return code - 2;
    case MPL_WTYPE_UINT3B4: return code - 4;
    case MPL_WTYPE_UINT2:
    case MPL_WTYPE_UINT3: return code - zero;
    }
    return 0;
}

int tu_wtype_bits(mpl_wtype t) {
    switch (t) {
    case MPL_WTYPE_UINT8B128:
    case MPL_WTYPE_UINT8: return 8;
    case MPL_WTYPE_UINT2B2:
    case MPL_WTYPE_UINT2: return 2;
    case MPL_WTYPE_UINT3B4:
    case MPL_WTYPE_UINT3: return 3;
    default: return 4;
    }
}
int tu_wtype_needs_zeros(mpl_wtype t) {
    return t == MPL_WTYPE_UINT4 || t == MPL_WTYPE_UINT8 || t == MPL_WTYPE_UINT2 || t == MPL_WTYPE_UINT3;
}
int64_t tu_group_size(const mpl_config *c) { return c->group_size == -1 ? c->k : c->group_size; }
int64_t tu_groups(const mpl_config *c) { return c->k / tu_group_size(c); }

/* ---------- binary16 / bfloat16 encoders (own code, float64 arithmetic) ---------- */

/*
 * v rounded once (to nearest, ties to even) to a binary format with `mbits` stored mantissa
 * bits and `ebits` exponent bits; returns its bit pattern. Subnormals keep the quantum of the
 * smallest normal; a value that rounds past the largest finite becomes inf.
 */
static uint32_t fmt_bits(double v, int mbits, int ebits) {
    int bias = (1 << (ebits - 1)) - 1, emin = 1 - bias;
    uint32_t expmask = (1u << ebits) - 1u;
    uint32_t sign = signbit(v) ? 1u << (mbits + ebits) : 0u;
    if (isnan(v)) return sign | (expmask << mbits) | (1u << (mbits - 1));
    double a = fabs(v);
    if (isinf(a)) return sign | (expmask << mbits);
    if (a == 0.0) return sign;
    int e;
    frexp(a, &e);
    e -= 1; /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;
    double n = nearbyint(ldexp(a, mbits - e)); /* exact scaling by a power of two, then RNE */
    if (n >= ldexp(1.0, mbits + 1)) {          /* rounding carried into the next binade */
        n = ldexp(n, -1);
        e += 1;
    }
    if (e > bias) return sign | (expmask << mbits);
    if (n < ldexp(1.0, mbits)) return sign | (uint32_t)n; /* subnormal (e == emin) */
    return sign | ((uint32_t)(e + bias) << mbits) | ((uint32_t)n - (1u << mbits));
}

static double fmt_value(uint32_t b, int mbits, int ebits) {
    int bias = (1 << (ebits - 1)) - 1;
    uint32_t expmask = (1u << ebits) - 1u;
    uint32_t e = (b >> mbits) & expmask, m = b & ((1u << mbits) - 1u);
    double s = (b >> (mbits + ebits)) & 1u ? -1.0 : 1.0;
    if (e == expmask) return m ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)m, 1 - bias - mbits);
    return s * ldexp((double)(m | (1u << mbits)), (int)e - bias - mbits);
}

uint16_t tu_f16_bits(double v) { return (uint16_t)fmt_bits(v, 10, 5); }
uint16_t tu_bf16_bits(double v) { return (uint16_t)fmt_bits(v, 7, 8); }
double tu_f16_value(uint16_t h) { return fmt_value(h, 10, 5); }
double tu_bf16_value(uint16_t h) { return fmt_value(h, 7, 8); }

double tu_round_act(mpl_act a, double v) {
    switch (a) {
    case MPL_ACT_F16: return tu_f16_value(tu_f16_bits(v));
    case MPL_ACT_BF16: return tu_bf16_value(tu_bf16_bits(v));
    default: return (double)(float)v; /* C's double -> float conversion rounds to nearest even */
    }
}

double tu_round_dtype(mpl_dtype d, double v) {
    if (d == MPL_DTYPE_F16) return tu_round_act(MPL_ACT_F16, v);
    if (d == MPL_DTYPE_BF16) return tu_round_act(MPL_ACT_BF16, v);
    return tu_round_act(MPL_ACT_F32, v);
}

double tu_half_ulp(mpl_act a, double v) {
    int mbits = a == MPL_ACT_F16 ? 10 : a == MPL_ACT_BF16 ? 7 : 23;
    int emin = a == MPL_ACT_F16 ? -14 : -126;
    double x = fabs(v);
    if (!isfinite(x)) return INFINITY;
    int e = emin;
    if (x > 0.0) {
        frexp(x, &e);
        e -= 1;
        if (e < emin) e = emin;
    }
    return ldexp(1.0, e - mbits - 1);
}

size_t tu_act_size(mpl_act a) { return a == MPL_ACT_F32 ? 4 : 2; }

void tu_act_store(mpl_act a, void *dst, int64_t i, double v) {
    if (a == MPL_ACT_F32)
        ((float *)dst)[i] = (float)v;
    else if (a == MPL_ACT_F16)
        ((uint16_t *)dst)[i] = tu_f16_bits(v);
    else
        ((uint16_t *)dst)[i] = tu_bf16_bits(v);
}

double tu_act_load(mpl_act a, const void *src, int64_t i) {
    if (a == MPL_ACT_F32) return (double)((const float *)src)[i];
    if (a == MPL_ACT_F16) return tu_f16_value(((const uint16_t *)src)[i]);
    return tu_bf16_value(((const uint16_t *)src)[i]);
}

/* ---------- random layers ---------- */

void tu_weights_free(tu_weights *w) {
    if (!w) return;
    free(w->codes);
    free(w->scales);
    free(w->zeros);
    free(w->g_idx);
    memset(w, 0, sizeof *w);
}

static int fill_g_idx(tu_weights *w, tu_gidx_kind gk, tu_rng *r) {
    int64_t K = w->cfg.k, G = w->groups, gs = w->group_size;
    if (gk == TU_GIDX_IRREGULAR) {
        for (int64_t i = 0; i < K; i++) w->g_idx[i] = (int32_t)tu_rng_below(r, (uint64_t)G);
    } else {
        for (int64_t i = 0; i < K; i++) w->g_idx[i] = (int32_t)(i / gs);
        tu_rng_shuffle_i32(r, w->g_idx, K);
    }
    int64_t *count = calloc((size_t)G, sizeof *count);
    if (!count) return -1;
    for (int64_t i = 0; i < K; i++) count[w->g_idx[i]]++;
    w->irregular = 0;
    for (int64_t g = 0; g < G; g++)
        if (count[g] != gs) w->irregular = 1;
    if (gk == TU_GIDX_IRREGULAR && !w->irregular && G >= 2) {
        /* Random draw came out uniform: move one channel of group 0 to group 1. */
        for (int64_t i = 0; i < K; i++)
            if (w->g_idx[i] == 0) {
                w->g_idx[i] = 1;
                break;
            }
        w->irregular = 1;
    }
    free(count);
    return 0;
}

int tu_weights_random(tu_weights *w, const mpl_config *cfg, mpl_dtype scale_dtype, tu_gidx_kind gk,
                      tu_data_kind dk, tu_rng *r) {
    memset(w, 0, sizeof *w);
    if (mpl_config_validate(cfg) != MPL_OK) {
        fprintf(stderr, "tu_weights_random: invalid config: %s\n", mpl_last_error());
        return -1;
    }
    w->cfg = *cfg;
    w->group_size = tu_group_size(cfg);
    w->groups = tu_groups(cfg);
    w->scale_dtype = scale_dtype ? scale_dtype : MPL_DTYPE_F16;
    size_t nk = (size_t)cfg->n * (size_t)cfg->k, ng = (size_t)cfg->n * (size_t)w->groups;
    w->codes = malloc(nk);
    w->scales = malloc(ng * sizeof(float));
    if (cfg->zero_points) w->zeros = malloc(ng);
    if (cfg->act_order) w->g_idx = malloc((size_t)cfg->k * sizeof(int32_t));
    if (!w->codes || !w->scales || (cfg->zero_points && !w->zeros) || (cfg->act_order && !w->g_idx)) {
        fprintf(stderr, "tu_weights_random: out of memory\n");
        tu_weights_free(w);
        return -1;
    }
    uint64_t levels = (uint64_t)1 << tu_wtype_bits(cfg->wtype);
    for (size_t i = 0; i < nk; i++) w->codes[i] = (uint8_t)tu_rng_below(r, levels);
    for (size_t i = 0; i < ng; i++) {
        double s;
        if (dk == TU_DATA_EXACT) {
            s = ldexp(1.0, -(int)tu_rng_range(r, 1, 4)); /* 2^-1 .. 2^-4: products stay exact */
        } else {
            s = exp2(tu_rng_uniform(r, -7.0, -3.0));
        }
        if (tu_rng_below(r, 8) == 0) s = -s; /* scales are data: negative ones must work too */
        w->scales[i] = (float)tu_round_dtype(w->scale_dtype, s);
    }
    if (w->zeros)
        for (size_t i = 0; i < ng; i++) w->zeros[i] = (uint8_t)tu_rng_below(r, levels);
    if (w->g_idx && fill_g_idx(w, gk == TU_GIDX_NONE ? TU_GIDX_PERMUTED : gk, r) != 0) {
        tu_weights_free(w);
        return -1;
    }
    return 0;
}

mpl_status tu_weights_encode(const tu_weights *w, mpl_layout layout, mpl_checkpoint_tensors *out) {
    return mpl_checkpoint_encode(&w->cfg, layout, w->codes, w->scales, w->scale_dtype, w->zeros, w->g_idx, out);
}

void tu_act_random(tu_rng *r, const mpl_config *cfg, int64_t m, tu_data_kind dk, void *x, float *xf) {
    int64_t K = cfg->k;
    for (int64_t i = 0; i < m; i++) {
        int nonzero = 0;
        for (int64_t kk = 0; kk < K; kk++) {
            double v = dk == TU_DATA_EXACT ? (double)tu_rng_range(r, -3, 3)
                                           : tu_round_act(cfg->act, tu_rng_uniform(r, -1.0, 1.0));
            if (v != 0.0) nonzero = 1;
            tu_act_store(cfg->act, x, i * K + kk, v);
            xf[i * K + kk] = (float)v;
        }
        int64_t pos = (int64_t)tu_rng_below(r, (uint64_t)K);
        double pin = 0.0;
        if (dk == TU_DATA_EXACT && cfg->mode == MPL_MODE_W4A8)
            pin = tu_rng_below(r, 2) ? 127.0 : -127.0; /* amax = 127: quantization is the identity */
        else if (!nonzero)
            pin = 1.0;
        if (pin != 0.0) {
            tu_act_store(cfg->act, x, i * K + pos, pin);
            xf[i * K + pos] = (float)pin;
        }
    }
}

void tu_bias_random(tu_rng *r, mpl_act a, int64_t n, tu_data_kind dk, void *b, float *bf) {
    for (int64_t j = 0; j < n; j++) {
        double v = dk == TU_DATA_EXACT ? (double)tu_rng_range(r, -8, 8) / 4.0
                                       : tu_round_act(a, tu_rng_uniform(r, -1.0, 1.0));
        tu_act_store(a, b, j, v);
        bf[j] = (float)v;
    }
}

/* ---------- oracles ---------- */

static inline int64_t group_of(const mpl_config *c, const int32_t *g_idx, int64_t kk) {
    return (c->act_order && g_idx) ? (int64_t)g_idx[kk] : kk / tu_group_size(c);
}

void oracle_w4a16(const mpl_config *cfg, const uint8_t *codes, const float *scales, const uint8_t *zeros,
                  const int32_t *g_idx, int64_t m, const float *x, const float *bias, double *y, double *mag) {
    int64_t K = cfg->k, N = cfg->n, G = tu_groups(cfg);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = bias ? (double)bias[j] : 0.0, a = fabs(s);
            for (int64_t kk = 0; kk < K; kk++) {
                int64_t g = group_of(cfg, g_idx, kk);
                int z = zeros ? zeros[j * G + g] : 0;
                double t = (double)x[i * K + kk] * (double)tu_code_value(cfg->wtype, codes[j * K + kk], z) *
                           (double)scales[j * G + g];
                s += t;
                a += fabs(t);
            }
            y[i * N + j] = s;
            if (mag) mag[i * N + j] = a;
        }
}

float tu_quantize_row(const float *x, int64_t k, int8_t *q, int *nonfinite) {
    float amax = 0.0f;
    int bad = 0;
    for (int64_t i = 0; i < k; i++) {
        if (isnan(x[i]) || isinf(x[i])) bad = 1;
        else if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    }
    *nonfinite = bad;
    float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    if (bad || amax == 0.0f || isinf(inv)) { /* zero row, or one too small for 127/amax (mplinear.h) */
        for (int64_t i = 0; i < k; i++) q[i] = 0;
        return bad ? NAN : 0.0f;
    }
    for (int64_t i = 0; i < k; i++) {
        float v = nearbyintf(x[i] * inv);
        q[i] = (int8_t)(v > 127.0f ? 127 : v < -127.0f ? -127 : (int)v);
    }
    return amax / 127.0f;
}

void oracle_w4a8(const mpl_config *cfg, const uint8_t *codes, const float *scales, const uint8_t *zeros,
                 const int32_t *g_idx, int64_t m, const float *x, const float *bias, double *y, double *mag) {
    int64_t K = cfg->k, N = cfg->n, G = tu_groups(cfg);
    int8_t *q = malloc((size_t)K);
    int64_t *isum = malloc((size_t)G * sizeof *isum);
    if (!q || !isum) {
        fprintf(stderr, "oracle_w4a8: out of memory\n");
        for (int64_t i = 0; i < m * N; i++) y[i] = NAN;
        free(q);
        free(isum);
        return;
    }
    for (int64_t i = 0; i < m; i++) {
        int bad;
        double sx = (double)tu_quantize_row(x + i * K, K, q, &bad);
        for (int64_t j = 0; j < N; j++) {
            double b = bias ? (double)bias[j] : 0.0;
            if (bad) {
                y[i * N + j] = NAN;
                if (mag) mag[i * N + j] = 0.0;
                continue;
            }
            memset(isum, 0, (size_t)G * sizeof *isum);
            for (int64_t kk = 0; kk < K; kk++) {
                int64_t g = group_of(cfg, g_idx, kk);
                int z = zeros ? zeros[j * G + g] : 0;
                isum[g] += (int64_t)q[kk] * tu_code_value(cfg->wtype, codes[j * K + kk], z);
            }
            double s = 0.0, a = 0.0;
            for (int64_t g = 0; g < G; g++) {
                double t = (double)scales[j * G + g] * (double)isum[g];
                s += t;
                a += fabs(t);
            }
            y[i * N + j] = s * sx + b;
            if (mag) mag[i * N + j] = a * sx + fabs(b);
        }
    }
    free(q);
    free(isum);
}

void tu_oracle(const tu_weights *w, int64_t m, const float *x, const float *bias, double *y, double *mag) {
    if (w->cfg.mode == MPL_MODE_W4A8)
        oracle_w4a8(&w->cfg, w->codes, w->scales, w->zeros, w->g_idx, m, x, bias, y, mag);
    else
        oracle_w4a16(&w->cfg, w->codes, w->scales, w->zeros, w->g_idx, m, x, bias, y, mag);
}

/* ---------- tolerance ---------- */

/*
 * Derivation (u = 2^-24, the fp32 unit roundoff; gamma_n = n*u / (1 - n*u), Higham ch. 3).
 * Every fp32 operation rounds once with relative error <= u, and a sum of terms computed in
 * any order, with any blocking, has |error| <= gamma_(roundings on the longest path) * sum |terms|.
 *
 * W4A16 (mplinear.h): y = bias + sum_g s_g * (sum_{k in g} x_k * w_k), fp32. On the path of
 *   one term x_k*w_k*s_g the roundings are: the product x_k*w_k (1; exact for f16/bf16 x, whose
 *   11/8-bit significands times a <= 9-bit integer fit 24 bits), the in-group sum (<= K-1),
 *   the product with s_g (1), the sum over groups (<= G-1) and the bias add (1): K + G + 1.
 *   A kernel that dequantizes first (w_k*s_g, then *x_k, one running sum) has <= K + 2.
 *   We allow n = K + G + 2, so |y_fp32 - y| <= gamma_n * mag with
 *   mag = |bias| + sum_k |x_k * w_k * s_g(k)| (what the oracle returns).
 * W4A8: the group sums isum_g are exact integers, so only the float combination rounds:
 *   float(isum_g) (1, when |isum_g| > 2^24), s_g * isum_g (1), the sum over groups (G-1),
 *   * sx (1), + bias (1): G + 3; we allow n = G + 4 and mag = sx * sum_g |s_g * isum_g| + |bias|.
 * Then the output is rounded once to the activation type: at most half an ulp of the result,
 *   taken at |y| + the bound above. The float64 oracle's own error (~K * 2^-53 * mag) is covered
 *   by an extra 2^-50 * mag.
 */
double tu_tolerance(const mpl_config *cfg, double want, double mag, double extra_rel) {
    if (isnan(want)) return 0.0;
    const double u = 0x1.0p-24;
    double n = cfg->mode == MPL_MODE_W4A8 ? (double)(tu_groups(cfg) + 4) : (double)(cfg->k + tu_groups(cfg) + 2);
    double gamma = n * u / (1.0 - n * u);
    double acc = (gamma + extra_rel + 0x1.0p-50) * mag;
    return acc + tu_half_ulp(cfg->act, fabs(want) + acc);
}

/* ---------- guard-byte buffers ---------- */

void *tu_buf_alloc(tu_buf *b, size_t bytes, unsigned char poison) {
    memset(b, 0, sizeof *b);
    size_t body = (bytes + 63u) & ~(size_t)63u;
    size_t total = body + 2u * TU_GUARD_BYTES;
    b->base = aligned_alloc(64, total);
    if (!b->base) return NULL;
    memset(b->base, TU_GUARD_FILL, total);
    b->p = b->base + TU_GUARD_BYTES;
    b->bytes = bytes;
    memset(b->p, poison, bytes);
    return b->p;
}

int tu_buf_guards_ok(const tu_buf *b, const char *what) {
    size_t body = (b->bytes + 63u) & ~(size_t)63u;
    for (size_t i = 0; i < TU_GUARD_BYTES; i++)
        if (b->base[i] != TU_GUARD_FILL) {
            fprintf(stderr, "%s: guard byte %zd before the buffer was overwritten (0x%02x)\n", what,
                    (ptrdiff_t)i - TU_GUARD_BYTES, b->base[i]);
            return 0;
        }
    const unsigned char *after = (const unsigned char *)b->p + b->bytes;
    size_t tail = body - b->bytes + TU_GUARD_BYTES;
    for (size_t i = 0; i < tail; i++)
        if (after[i] != TU_GUARD_FILL) {
            fprintf(stderr, "%s: guard byte %zu past the end (payload %zu bytes) was overwritten (0x%02x)\n", what,
                    i, b->bytes, after[i]);
            return 0;
        }
    return 1;
}

void tu_buf_free(tu_buf *b) {
    if (!b) return;
    free(b->base);
    memset(b, 0, sizeof *b);
}

/* ---------- comparison ---------- */

const char *tu_cfg_str(const mpl_config *c, char *buf, size_t cap) {
    snprintf(buf, cap, "k=%lld n=%lld %s%s %s group %lld%s %s", (long long)c->k, (long long)c->n,
             mpl_wtype_name(c->wtype), c->zero_points ? " zp" : "", mpl_act_name(c->act), (long long)c->group_size,
             c->act_order ? " act-order" : "", c->mode == MPL_MODE_W4A8 ? "w4a8" : "w4a16");
    return buf;
}

static uint32_t act_bits(mpl_act a, const void *p, int64_t i) {
    if (a == MPL_ACT_F32) {
        uint32_t u;
        memcpy(&u, (const float *)p + i, 4);
        return u;
    }
    return ((const uint16_t *)p)[i];
}

int64_t tu_compare(const char *what, uint64_t seed, const mpl_config *cfg, int64_t m, const void *got,
                   const double *want, const double *tol) {
    int64_t N = cfg->n, bad = 0, first = -1;
    for (int64_t i = 0; i < m * N; i++) {
        double g = tu_act_load(cfg->act, got, i), w = want[i];
        int ok;
        if (isnan(w))
            ok = isnan(g);
        else if (tol)
            ok = fabs(g - w) <= tol[i]; /* false for a NaN g */
        else
            ok = g == tu_round_act(cfg->act, w);
        if (!ok) {
            if (first < 0) first = i;
            bad++;
        }
    }
    if (bad) {
        char cs[160];
        int64_t i = first / N, j = first % N;
        double g = tu_act_load(cfg->act, got, first), w = want[first];
        fprintf(stderr,
                "FAIL %s: seed=0x%llx m=%lld %s: y[%lld][%lld] = %.9g (bits 0x%x), want %.9g (%s %.3g, diff %.3g); "
                "%lld of %lld outputs bad\n",
                what, (unsigned long long)seed, (long long)m, tu_cfg_str(cfg, cs, sizeof cs), (long long)i,
                (long long)j, g, act_bits(cfg->act, got, first), w, tol ? "tol" : "exact, rounded",
                tol ? tol[first] : tu_round_act(cfg->act, w), fabs(g - w), (long long)bad, (long long)(m * N));
    }
    return bad;
}

/* ---------- one-call kernel check ---------- */

void tu_check_opts_init(tu_check_opts *o) {
    memset(o, 0, sizeof *o);
    o->layout = MPL_LAYOUT_GPTQ;
    o->scale_dtype = MPL_DTYPE_F16;
    o->gidx = TU_GIDX_PERMUTED;
    o->data = TU_DATA_RANDOM;
    o->bias = 1;
}

typedef struct {
    tu_weights w;
    mpl_checkpoint_tensors ck;
    mpl_layer *kl, *rl;
    void *x, *b;
    float *xf, *bf;
    double *want, *mag, *tol;
    tu_buf y1, y2, yr;
} check_state;

static void check_state_free(check_state *s) {
    tu_weights_free(&s->w);
    mpl_checkpoint_tensors_free(&s->ck);
    mpl_layer_destroy(s->kl);
    mpl_layer_destroy(s->rl);
    free(s->x);
    free(s->b);
    free(s->xf);
    free(s->bf);
    free(s->want);
    free(s->mag);
    free(s->tol);
    tu_buf_free(&s->y1);
    tu_buf_free(&s->y2);
    tu_buf_free(&s->yr);
}

tu_result tu_check_kernel_ex(const char *kernel, const mpl_config *cfg, int64_t m, uint64_t seed,
                             const tu_check_opts *opts) {
    tu_check_opts o;
    if (opts)
        o = *opts;
    else
        tu_check_opts_init(&o);
    check_state s;
    memset(&s, 0, sizeof s);
    char cs[160], what[256];
    tu_cfg_str(cfg, cs, sizeof cs);
    snprintf(what, sizeof what, "%s (%s layout, %s scales%s%s)", kernel, mpl_layout_name(o.layout),
             mpl_dtype_name(o.scale_dtype), o.bias ? ", bias" : "", o.data == TU_DATA_EXACT ? ", exact data" : "");
    tu_rng r;
    tu_rng_init(&r, seed);
    tu_result res = TU_FAIL;
    if (m < 1 || tu_weights_random(&s.w, cfg, o.scale_dtype, cfg->act_order ? o.gidx : TU_GIDX_NONE, o.data, &r))
        goto done;
    mpl_status st = tu_weights_encode(&s.w, o.layout, &s.ck);
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s: encode %s: %s\n", what, cs, mpl_last_error());
        goto done;
    }
    mpl_options ko, ro;
    mpl_options_init(&ko);
    ko.kernel = kernel;
    ko.threads = o.threads;
    st = mpl_layer_create(cfg, &s.ck, &ko, &s.kl);
    if (st == MPL_ERR_NO_HARDWARE || st == MPL_ERR_UNSUPPORTED) {
        if (!o.quiet)
            fprintf(stderr, "%s %s on %s: %s\n", st == MPL_ERR_NO_HARDWARE ? "SKIP" : "REFUSED", kernel, cs,
                    mpl_last_error());
        res = st == MPL_ERR_NO_HARDWARE ? TU_SKIP : TU_REFUSED;
        goto done;
    }
    if (st != MPL_OK) {
        fprintf(stderr, "FAIL %s: create %s: %s: %s\n", what, cs, mpl_status_string(st), mpl_last_error());
        goto done;
    }
    /* "kernel" must be the layer's kernel; "kernel:path" also the path an apply of m rows takes. */
    {
        const char *colon = strchr(kernel, ':');
        size_t kl = colon ? (size_t)(colon - kernel) : strlen(kernel);
        const char *lk = mpl_layer_kernel(s.kl), *lp = mpl_layer_path(s.kl, m);
        if (!lk || strlen(lk) != kl || strncmp(lk, kernel, kl) != 0 || !lp || (colon && strcmp(lp, kernel) != 0)) {
            fprintf(stderr, "FAIL %s: layer runs '%s' path '%s' for m = %lld\n", what, lk, lp ? lp : "(none)",
                    (long long)m);
            goto done;
        }
    }
    mpl_options_init(&ro);
    ro.kernel = "ref";
    if ((st = mpl_layer_create(cfg, &s.ck, &ro, &s.rl)) != MPL_OK) {
        fprintf(stderr, "FAIL %s: create ref %s: %s\n", what, cs, mpl_last_error());
        goto done;
    }
    int64_t K = cfg->k, N = cfg->n;
    size_t as = tu_act_size(cfg->act), ny = (size_t)(m * N);
    s.x = malloc((size_t)(m * K) * as);
    s.xf = malloc((size_t)(m * K) * sizeof(float));
    s.b = malloc((size_t)N * as);
    s.bf = malloc((size_t)N * sizeof(float));
    s.want = malloc(ny * sizeof(double));
    s.mag = malloc(ny * sizeof(double));
    s.tol = malloc(ny * sizeof(double));
    if (!s.x || !s.xf || !s.b || !s.bf || !s.want || !s.mag || !s.tol || !tu_buf_alloc(&s.y1, ny * as, 0xFF) ||
        !tu_buf_alloc(&s.y2, ny * as, 0xFF) || !tu_buf_alloc(&s.yr, ny * as, 0xFF)) {
        fprintf(stderr, "FAIL %s: out of memory\n", what);
        goto done;
    }
    tu_act_random(&r, cfg, m, o.data, s.x, s.xf);
    tu_bias_random(&r, cfg->act, N, o.data, s.b, s.bf);
    const void *bias = o.bias ? s.b : NULL;
    tu_oracle(&s.w, m, s.xf, o.bias ? s.bf : NULL, s.want, s.mag);
    for (size_t i = 0; i < ny; i++) s.tol[i] = tu_tolerance(cfg, s.want[i], s.mag[i], o.extra_rel);
    if ((st = mpl_layer_apply(s.kl, m, s.x, bias, s.y1.p)) != MPL_OK ||
        (st = mpl_layer_apply(s.kl, m, s.x, bias, s.y2.p)) != MPL_OK ||
        (st = mpl_layer_apply(s.rl, m, s.x, bias, s.yr.p)) != MPL_OK) {
        fprintf(stderr, "FAIL %s: apply %s m=%lld: %s\n", what, cs, (long long)m, mpl_last_error());
        goto done;
    }
    int ok = tu_buf_guards_ok(&s.y1, what) & tu_buf_guards_ok(&s.y2, what) & tu_buf_guards_ok(&s.yr, "ref");
    if (memcmp(s.y1.p, s.y2.p, ny * as) != 0) {
        fprintf(stderr, "FAIL %s: seed=0x%llx m=%lld %s: two applies differ (not deterministic)\n", what,
                (unsigned long long)seed, (long long)m, cs);
        ok = 0;
    }
    const double *tol = o.data == TU_DATA_EXACT ? NULL : s.tol;
    char rw[300];
    snprintf(rw, sizeof rw, "%s vs float64 oracle", what);
    if (tu_compare(rw, seed, cfg, m, s.y1.p, s.want, tol)) ok = 0;
    if (tu_compare("ref vs float64 oracle", seed, cfg, m, s.yr.p, s.want, tol)) ok = 0;
    if (o.data == TU_DATA_EXACT && memcmp(s.y1.p, s.yr.p, ny * as) != 0) {
        fprintf(stderr, "FAIL %s: seed=0x%llx m=%lld %s: exact data but output differs from ref\n", what,
                (unsigned long long)seed, (long long)m, cs);
        ok = 0;
    }
    res = ok ? TU_PASS : TU_FAIL;
done:
    check_state_free(&s);
    return res;
}

tu_result tu_check_kernel_vs_ref(const char *kernel, const mpl_config *cfg, int64_t m, uint64_t seed) {
    return tu_check_kernel_ex(kernel, cfg, m, seed, NULL);
}

int tu_m_edges(int64_t tile, int64_t large, int64_t *out, int cap) {
    int64_t c[7] = {1, 2, tile - 1, tile, tile + 1, 2 * tile + 1, large};
    int n = 0;
    for (int i = 0; i < 7; i++) {
        if (c[i] < 1) continue;
        int dup = 0;
        for (int j = 0; j < n; j++)
            if (out[j] == c[i]) dup = 1;
        if (dup || n >= cap) continue;
        int p = n++;
        while (p > 0 && out[p - 1] > c[i]) {
            out[p] = out[p - 1];
            p--;
        }
        out[p] = c[i];
    }
    return n;
}
