/* synth.c -- seeded random numbers, random layers, activation conversions. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_rng_seed(cli_rng *r, uint64_t seed) { r->s = seed ^ 0x9e3779b97f4a7c15ull; }

/* splitmix64: tiny, fast and good enough for test data; same stream on every machine. */
uint64_t cli_rng_next(cli_rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint32_t cli_rng_below(cli_rng *r, uint32_t n) { return (uint32_t)(((cli_rng_next(r) >> 32) * (uint64_t)n) >> 32); }

double cli_rng_unit(cli_rng *r) { return (double)(cli_rng_next(r) >> 11) * 0x1.0p-53; }

double cli_rng_gauss(cli_rng *r) {
    double u1 = cli_rng_unit(r), u2 = cli_rng_unit(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void cli_synth_free(cli_synth *s) {
    if (!s) return;
    free(s->codes);
    free(s->scales);
    free(s->zeros);
    free(s->g_idx);
    free(s->bias);
    mpl_checkpoint_tensors_free(&s->ckpt);
    memset(s, 0, sizeof *s);
}

int cli_synth_value(const mpl_config *c, const cli_synth *s, int64_t n, int64_t k) {
    int code = s->codes[n * c->k + k];
    int64_t gs = c->group_size == -1 ? c->k : c->group_size;
    int64_t g = s->g_idx ? s->g_idx[k] : k / gs;
    int z = s->zeros ? s->zeros[n * s->groups + g] : 0;
    switch (c->wtype) {
    case MPL_WTYPE_UINT4B8: return code - 8;
    case MPL_WTYPE_UINT4: return code - z;
    case MPL_WTYPE_INT4: return code >= 8 ? code - 16 : code;
    case MPL_WTYPE_UINT8B128: return code - 128;
    case MPL_WTYPE_UINT8: return code - z;
    case MPL_WTYPE_UINT2B2: return code - 2;
    case MPL_WTYPE_UINT3B4: return code - 4;
    case MPL_WTYPE_UINT2:
    case MPL_WTYPE_UINT3: return code - z;
    }
    return 0;
}

mpl_status cli_synth_make(const mpl_config *c, mpl_layout layout, uint64_t seed, cli_synth *s, char *err,
                          size_t errcap) {
    memset(s, 0, sizeof *s);
    mpl_status st = mpl_config_validate(c);
    if (st != MPL_OK) {
        snprintf(err, errcap, "%s", mpl_last_error());
        return st;
    }
    int64_t K = c->k, N = c->n;
    int64_t gs = c->group_size == -1 ? K : c->group_size;
    s->groups = K / gs;
    /* K, N <= 2^24 after validation, so these products fit in size_t on 64-bit hosts;
     * check anyway so a 32-bit build fails cleanly. */
    size_t nk = (size_t)N * (size_t)K, ng = (size_t)N * (size_t)s->groups;
    if ((uint64_t)N * (uint64_t)K > (uint64_t)SIZE_MAX / 4) {
        snprintf(err, errcap, "random layer of n = %lld, k = %lld: byte count overflows", (long long)N, (long long)K);
        return MPL_ERR_OVERFLOW;
    }
    s->codes = malloc(nk ? nk : 1);
    s->scales = malloc(ng * sizeof(float));
    s->bias = malloc((size_t)N * sizeof(float));
    if (c->zero_points) s->zeros = malloc(ng);
    if (c->act_order) s->g_idx = malloc((size_t)K * sizeof(int32_t));
    if (!s->codes || !s->scales || !s->bias || (c->zero_points && !s->zeros) || (c->act_order && !s->g_idx)) {
        cli_synth_free(s);
        snprintf(err, errcap, "random layer of n = %lld, k = %lld: out of memory", (long long)N, (long long)K);
        return MPL_ERR_OUT_OF_MEMORY;
    }
    cli_rng r;
    cli_rng_seed(&r, seed);
    int bits = mpl_wtype_width(c->wtype);
    uint32_t span = 1u << bits;
    for (size_t i = 0; i < nk; i++) s->codes[i] = (uint8_t)cli_rng_below(&r, span);
    /* Scales: 2^-6 * (1 + j/64), j in 0..63: exact in f16 and bf16-safe magnitudes. */
    for (size_t i = 0; i < ng; i++) s->scales[i] = (float)ldexp(1.0 + cli_rng_below(&r, 64) / 64.0, -6);
    if (s->zeros)
        for (size_t i = 0; i < ng; i++) s->zeros[i] = (uint8_t)cli_rng_below(&r, span);
    if (s->g_idx) {
        /* A random permutation of the channels, cut into uniform groups: channel perm[j] is in group j / gs. */
        int32_t *perm = malloc((size_t)K * sizeof(int32_t));
        if (!perm) {
            cli_synth_free(s);
            snprintf(err, errcap, "random g_idx of k = %lld: out of memory", (long long)K);
            return MPL_ERR_OUT_OF_MEMORY;
        }
        for (int64_t i = 0; i < K; i++) perm[i] = (int32_t)i;
        for (int64_t i = K - 1; i > 0; i--) {
            int64_t j = cli_rng_below(&r, (uint32_t)(i + 1));
            int32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (int64_t j = 0; j < K; j++) s->g_idx[perm[j]] = (int32_t)(j / gs);
        free(perm);
    }
    for (int64_t i = 0; i < N; i++) s->bias[i] = (float)cli_rng_gauss(&r);
    st = mpl_checkpoint_encode(c, layout, s->codes, s->scales, MPL_DTYPE_F16, s->zeros, s->g_idx, &s->ckpt);
    if (st != MPL_OK) {
        snprintf(err, errcap, "encoding the random layer as %s: %s", mpl_layout_name(layout), mpl_last_error());
        cli_synth_free(s);
        return st;
    }
    return MPL_OK;
}

void cli_f32_to_act(mpl_act a, const float *src, void *dst, size_t n) {
    if (a == MPL_ACT_F32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    uint16_t *d = dst;
    for (size_t i = 0; i < n; i++) d[i] = a == MPL_ACT_F16 ? mpl_f32_to_f16(src[i]) : mpl_f32_to_bf16(src[i]);
}

void cli_act_to_f32(mpl_act a, const void *src, float *dst, size_t n) {
    if (a == MPL_ACT_F32) {
        memcpy(dst, src, n * sizeof(float));
        return;
    }
    const uint16_t *s = src;
    for (size_t i = 0; i < n; i++) dst[i] = a == MPL_ACT_F16 ? mpl_f16_to_f32(s[i]) : mpl_bf16_to_f32(s[i]);
}

double cli_act_unit_roundoff(mpl_act a) {
    switch (a) {
    case MPL_ACT_F16: return 0x1.0p-11;
    case MPL_ACT_BF16: return 0x1.0p-8;
    case MPL_ACT_F32: return 0x1.0p-24;
    }
    return 0x1.0p-8;
}

int cli_synth_or_exit(const char *cmd, const mpl_config *c, mpl_layout layout, uint64_t seed, cli_synth *s) {
    char err[1024];
    mpl_status st = cli_synth_make(c, layout, seed, s, err, sizeof err);
    if (st == MPL_OK) return 0;
    cli_error(cmd, "%s", err);
    return cli_exit_for(st);
}
