/*
 * w4a8_avx512.h -- AVX-512 helpers shared by the W4A8 files compiled with
 * AVX-512 flags (avx512/w4a8_vnni.c and amx/w4a8_amx.c): activation
 * load/store for 16 columns and the per-group epilogue.
 */
#ifndef MPL_W4A8_AVX512_H
#define MPL_W4A8_AVX512_H

#include <immintrin.h>
#include <string.h>

#include "../w4a8.h"

static inline __mmask16 w4a8_mask16(int64_t count) {
    return count >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << count) - 1u);
}

/* 16 activations (lanes outside mask read as 0) from element index i, as f32 (exact). */
static inline __m512 w4a8_load_act16(mpl_act act, const void *base, int64_t i, __mmask16 mask) {
    if (act == MPL_ACT_F32) return _mm512_maskz_loadu_ps(mask, (const float *)base + i);
    __m256i h = _mm256_maskz_loadu_epi16(mask, (const uint16_t *)base + i);
    if (act == MPL_ACT_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* Round 16 floats once to bf16, as mpl_f32_to_bf16 (RNE; NaN kept quiet; denormals kept, unlike vcvtneps2bf16). */
static inline __m256i w4a8_bf16_16(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                            _mm512_set1_epi32(0x7f800000));
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(hi, _mm512_set1_epi32(1))));
    r = _mm512_srli_epi32(r, 16);
    r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    return _mm512_cvtepi32_epi16(r);
}

/* Store 16 outputs (masked) at element index i, rounded once to the activation type. */
static inline void w4a8_store_act16(mpl_act act, void *base, int64_t i, __m512 v, __mmask16 mask) {
    if (act == MPL_ACT_F32) {
        _mm512_mask_storeu_ps((float *)base + i, mask, v);
    } else if (act == MPL_ACT_F16) {
        _mm256_mask_storeu_epi16((uint16_t *)base + i, mask,
                                 _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    } else {
        _mm256_mask_storeu_epi16((uint16_t *)base + i, mask, w4a8_bf16_16(v));
    }
}

/* Zero points of panel pan, group g as int32 lanes; NULL layout zeros mean z = 8 (symmetric types). */
static inline __m512i w4a8_zeros16(const mpl_x86_w4a8 *p, int64_t pan, int64_t g) {
    if (!p->zeros) return _mm512_set1_epi32(8);
    return _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(p->zeros + (pan * p->groups + g) * MPL_W4A8_PANEL)));
}

/*
 * One group's contribution, in the reference's order: isum = dot - z*sum(q)
 * (exact int32), then acc + scale * (float)isum as a separate multiply and
 * add (the reference does not fuse; the library builds with -std=c11, which
 * keeps GCC from contracting these into an FMA).
 */
static inline __m512 w4a8_group_acc(__m512 acc, __m512i dot, __m512i z, int32_t sumq, __m512 scale) {
    __m512i isum = _mm512_sub_epi32(dot, _mm512_mullo_epi32(z, _mm512_set1_epi32(sumq)));
    return _mm512_add_ps(acc, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(isum)));
}

/* The same for z = 8 (uint4b8, int4): a shift instead of vpmulld. */
static inline __m512 w4a8_group_acc_z8(__m512 acc, __m512i dot, int32_t sumq, __m512 scale) {
    __m512i isum = _mm512_sub_epi32(dot, _mm512_set1_epi32(sumq * 8));
    return _mm512_add_ps(acc, _mm512_mul_ps(scale, _mm512_cvtepi32_ps(isum)));
}

/* y = acc * sx + bias for 16 columns starting at column n0 of row m. */
static inline void w4a8_finish16(const mpl_w4a8_job *j, int64_t m, int64_t n0, __m512 acc) {
    int64_t N = j->p->n;
    __mmask16 mask = w4a8_mask16(N - n0);
    __m512 y = _mm512_mul_ps(acc, _mm512_set1_ps(j->sx[m]));
    if (j->bias) y = _mm512_add_ps(y, w4a8_load_act16(j->act, j->bias, n0, mask));
    w4a8_store_act16(j->act, j->y, m * N + n0, y, mask);
}

#endif
