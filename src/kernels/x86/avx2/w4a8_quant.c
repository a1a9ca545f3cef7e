/*
 * w4a8_quant.c -- the 256-bit W4A8 row quantizer (avx2 level), used by x86_avx2_w4a8 and
 * x86_avxvnni_w4a8: per row amax and finiteness, then q = clamp(nearbyint(x * 127/amax)) in
 * packed K order (gathered through perm for act-order) with the per-group sums of q, exactly
 * as include/mplinear.h defines W4A8.
 */
#include <math.h>

#include "../common/w4a8_ymm_act.inc"

static inline float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static inline int32_t hsum8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* K and every group length are multiples of 8 (config validation + can_implement): no tails. */
void mpl_x86_w4a8_quant_avx2(const mpl_x86_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf) {
    const mpl_x86_w4a8_layout *p = j->p;
    const int64_t K = p->k, G = p->groups, gl = p->group_len;
    const size_t es = mpl_act_size(j->act);
    const __m256i absmask = _mm256_set1_epi32(0x7fffffff), maxfinite = _mm256_set1_epi32(0x7f7fffff);
    for (int64_t m = m0; m < m1; m++) {
        int8_t *q = j->qx + m * j->lda;
        int32_t *sq = j->sumq + m * G;
        if (m >= j->m) {
            memset(q, 0, (size_t)K);
            memset(sq, 0, (size_t)G * sizeof(int32_t));
            j->sx[m] = 0.0f;
            continue;
        }
        const char *xr = (const char *)j->x + (size_t)(m * K) * es;
        __m256 amaxv = _mm256_setzero_ps();
        __m256i bad = _mm256_setzero_si256();
        for (int64_t k = 0; k < K; k += 8) {
            __m256 v = ymm_load_act8(j->act, xr, k, 8);
            if (j->act != MPL_ACT_F32) _mm256_storeu_ps(fbuf + k, v);
            __m256i a = _mm256_and_si256(_mm256_castps_si256(v), absmask);
            bad = _mm256_or_si256(bad, _mm256_cmpgt_epi32(a, maxfinite));
            amaxv = _mm256_max_ps(amaxv, _mm256_castsi256_ps(a));
        }
        float amax = hmax8(amaxv);
        int nonfinite = !_mm256_testz_si256(bad, bad);
        if (nonfinite || amax == 0.0f) {
            memset(q, 0, (size_t)K);
            memset(sq, 0, (size_t)G * sizeof(int32_t));
            j->sx[m] = nonfinite ? NAN : 0.0f;
            continue;
        }
        const float inv = 127.0f / amax;
        j->sx[m] = amax / 127.0f;
        const float *src = j->act == MPL_ACT_F32 ? (const float *)xr : fbuf;
        const __m256 vinv = _mm256_set1_ps(inv), hi = _mm256_set1_ps(127.0f), lo = _mm256_set1_ps(-127.0f);
        for (int64_t g = 0; g < G; g++) {
            __m256i s = _mm256_setzero_si256();
            for (int64_t k = g * gl; k < (g + 1) * gl; k += 8) {
                __m256 v = p->perm ? _mm256_i32gather_ps(src, _mm256_loadu_si256((const __m256i *)(p->perm + k)), 4)
                                   : _mm256_loadu_ps(src + k);
                __m256 r = _mm256_round_ps(_mm256_mul_ps(v, vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                r = _mm256_and_ps(r, _mm256_cmp_ps(r, r, _CMP_ORD_Q)); /* NaN (0 * inf) -> 0 */
                r = _mm256_max_ps(_mm256_min_ps(r, hi), lo);
                __m256i qi = _mm256_cvtps_epi32(r);
                s = _mm256_add_epi32(s, qi);
                __m128i w16 = _mm_packs_epi32(_mm256_castsi256_si128(qi), _mm256_extracti128_si256(qi, 1));
                _mm_storel_epi64((__m128i *)(q + k), _mm_packs_epi16(w16, w16));
            }
            sq[g] = hsum8(s);
        }
    }
}
