/*
 * w4a8_ymm.h -- the 256-bit W4A8 micro-kernel, shared by avx2/w4a8_avx2.c and
 * avxvnni/w4a8_avxvnni.c. The including file defines, before including:
 *   static inline __m256i w4a8_dot(__m256i acc, __m256i u8, __m256i s8);
 * (acc + per-lane sum of 4 u8*s8 products), and gets w4a8_gemm_ymm().
 *
 * A panel's 64-byte block is two ymm: bytes 0-31 hold columns 0-7, bytes
 * 32-63 columns 8-15 (docs/layouts/x86_w4a8.md). Same order of operations
 * as the AVX-512 variant, so every variant gives the same bits.
 */
#ifndef MPL_W4A8_YMM_H
#define MPL_W4A8_YMM_H

#include <immintrin.h>
#include <string.h>

#include "../w4a8.h"

static inline int32_t ymm_load_i32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* 8 activations from element index i (count valid; the rest read as 0), as f32. */
static inline __m256 ymm_load_act8(mpl_act act, const void *base, int64_t i, int64_t count) {
    if (count < 8) {
        uint32_t tmp[8] = {0};
        memcpy(tmp, (const char *)base + (size_t)i * mpl_act_size(act), (size_t)count * mpl_act_size(act));
        return ymm_load_act8(act, tmp, 0, 8);
    }
    if (act == MPL_ACT_F32) return _mm256_loadu_ps((const float *)base + i);
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)base + i));
    if (act == MPL_ACT_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* As mpl_f32_to_bf16 for 8 lanes. */
static inline __m128i ymm_bf16_8(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
    __m256i hi = _mm256_srli_epi32(u, 16);
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(hi, _mm256_set1_epi32(1))));
    r = _mm256_srli_epi32(r, 16);
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, _mm256_set1_epi32(0x40)), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}

static inline void ymm_store_act8(mpl_act act, void *base, int64_t i, __m256 v, int64_t count) {
    char tmp[32];
    size_t es = mpl_act_size(act);
    char *dst = count >= 8 ? (char *)base + (size_t)i * es : tmp;
    if (act == MPL_ACT_F32)
        _mm256_storeu_ps((float *)dst, v);
    else if (act == MPL_ACT_F16)
        _mm_storeu_si128((__m128i *)dst, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    else
        _mm_storeu_si128((__m128i *)dst, ymm_bf16_8(v));
    if (count < 8 && count > 0) memcpy((char *)base + (size_t)i * es, tmp, (size_t)count * es);
}

/* MR rows x 1 panel (2 ymm of 8 columns); MR constant after inlining. */
static inline __attribute__((always_inline)) void ymm_tile(const mpl_w4a8_job *j, int64_t m0, const int MR, int64_t pan) {
    const mpl_x86_w4a8 *p = j->p;
    const int64_t G = p->groups, gl = p->group_len, nb = gl / MPL_W4A8_KBLOCK, N = p->n;
    const __m256i m0f = _mm256_set1_epi8(0x0f);
    const uint8_t *wp = mpl_x86_w4a8_panel(p, pan);
    __m256 facc[4][2];
    __m256i acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++) facc[r][0] = facc[r][1] = _mm256_setzero_ps();
    for (int64_t g = 0; g < G; g++) {
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
        const int8_t *xr = j->qx + m0 * j->lda + g * gl;
        const uint8_t *wg = wp + (size_t)(g * gl) * (MPL_W4A8_PANEL / 2);
        for (int64_t b = 0; b < nb; b++) {
            __m256i raw0 = _mm256_load_si256((const __m256i *)(wg + b * 64));
            __m256i raw1 = _mm256_load_si256((const __m256i *)(wg + b * 64 + 32));
            __m256i l0 = _mm256_and_si256(raw0, m0f), h0 = _mm256_and_si256(_mm256_srli_epi16(raw0, 4), m0f);
            __m256i l1 = _mm256_and_si256(raw1, m0f), h1 = _mm256_and_si256(_mm256_srli_epi16(raw1, 4), m0f);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                __m256i xl = _mm256_set1_epi32(ymm_load_i32(xr + r * j->lda + b * 8));
                __m256i xh = _mm256_set1_epi32(ymm_load_i32(xr + r * j->lda + b * 8 + 4));
                acc[r][0] = w4a8_dot(w4a8_dot(acc[r][0], l0, xl), h0, xh);
                acc[r][1] = w4a8_dot(w4a8_dot(acc[r][1], l1, xl), h1, xh);
            }
        }
        for (int h = 0; h < 2; h++) {
            const size_t at = (size_t)(pan * G + g) * MPL_W4A8_PANEL + (size_t)h * 8;
            const __m256 sc = _mm256_load_ps(p->scales + at);
            __m256i z = p->zeros ? _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p->zeros + at)))
                                 : _mm256_set1_epi32(8);
#pragma GCC unroll 4
            for (int r = 0; r < MR; r++) {
                __m256i isum = _mm256_sub_epi32(acc[r][h], _mm256_mullo_epi32(z, _mm256_set1_epi32(j->sumq[(m0 + r) * G + g])));
                facc[r][h] = _mm256_add_ps(facc[r][h], _mm256_mul_ps(sc, _mm256_cvtepi32_ps(isum)));
            }
        }
    }
    for (int h = 0; h < 2; h++) {
        const int64_t n0 = pan * MPL_W4A8_PANEL + h * 8;
        if (n0 >= N) break;
        __m256 bias = j->bias ? ymm_load_act8(j->act, j->bias, n0, N - n0) : _mm256_setzero_ps();
#pragma GCC unroll 4
        for (int r = 0; r < MR; r++) {
            __m256 y = _mm256_mul_ps(facc[r][h], _mm256_set1_ps(j->sx[m0 + r]));
            if (j->bias) y = _mm256_add_ps(y, bias);
            ymm_store_act8(j->act, j->y, (m0 + r) * N + n0, y, N - n0);
        }
    }
}

/* All rows, panels [p0, p1): 4 rows share each unpacked weight vector (8 int accumulators). */
static void w4a8_gemm_ymm(const mpl_w4a8_job *j, int64_t p0, int64_t p1) {
    for (int64_t pan = p0; pan < p1; pan++) {
        int64_t m = 0;
        for (; m + 4 <= j->m; m += 4) ymm_tile(j, m, 4, pan);
        switch (j->m - m) {
        case 3: ymm_tile(j, m, 3, pan); break;
        case 2: ymm_tile(j, m, 2, pan); break;
        case 1: ymm_tile(j, m, 1, pan); break;
        default: break;
        }
    }
}

#endif
