/*
 * w4a8_quant.c -- the 512-bit W4A8 row quantizer (avx512 level: F/BW/VL/DQ, no VNNI), used
 * by both paths of x86_avx512vnni_w4a8: per row amax and finiteness, then
 * q = clamp(nearbyint(x * 127/amax)) in packed K order (gathered through perm for act-order)
 * with the per-group sums of q, exactly as include/mplinear.h defines W4A8. Rows from j->m up
 * to m1 are the AMX path's zero padding.
 */
#include <math.h>

#include "../common/w4a8_zmm.inc"

void mpl_x86_w4a8_quant_avx512(const mpl_x86_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf) {
    const mpl_x86_w4a8_layout *p = j->p;
    const int64_t K = p->k, G = p->groups, gl = p->group_len;
    const size_t es = mpl_act_size(j->act);
    const __m512i absmask = _mm512_set1_epi32(0x7fffffff), infbits = _mm512_set1_epi32(0x7f800000);
    for (int64_t m = m0; m < m1; m++) {
        int8_t *q = j->qx + m * j->lda;
        int32_t *sq = j->sumq + m * G;
        if (m >= j->m) { /* padding rows of the AMX path */
            memset(q, 0, (size_t)K);
            memset(sq, 0, (size_t)G * sizeof(int32_t));
            j->sx[m] = 0.0f;
            continue;
        }
        const char *xr = (const char *)j->x + (size_t)(m * K) * es;
        /* Pass 1: amax and finiteness; non-f32 rows are widened into fbuf (L1/L2-resident for pass 2). */
        __m512 amaxv = _mm512_setzero_ps();
        __mmask16 bad = 0;
        for (int64_t k = 0; k < K; k += 16) {
            __mmask16 mk = w4a8_mask16(K - k);
            __m512 v = w4a8_load_act16(j->act, xr, k, mk);
            if (j->act != MPL_ACT_F32) _mm512_mask_storeu_ps(fbuf + k, mk, v);
            __m512i a = _mm512_and_si512(_mm512_castps_si512(v), absmask);
            bad |= _mm512_cmpge_epu32_mask(a, infbits);
            amaxv = _mm512_max_ps(amaxv, _mm512_castsi512_ps(a));
        }
        float amax = _mm512_reduce_max_ps(amaxv);
        if (bad || amax == 0.0f) {
            memset(q, 0, (size_t)K);
            memset(sq, 0, (size_t)G * sizeof(int32_t));
            j->sx[m] = bad ? NAN : 0.0f;
            continue;
        }
        const float inv = 127.0f / amax;
        j->sx[m] = amax / 127.0f;
        const float *src = j->act == MPL_ACT_F32 ? (const float *)xr : fbuf;
        const __m512 vinv = _mm512_set1_ps(inv), hi = _mm512_set1_ps(127.0f), lo = _mm512_set1_ps(-127.0f);
        /* Pass 2: q = clamp(nearbyint(x * inv)) in packed order (gathered through perm), group sums alongside. */
        for (int64_t g = 0; g < G; g++) {
            __m512i s = _mm512_setzero_si512();
            for (int64_t k = g * gl; k < (g + 1) * gl; k += 16) {
                __mmask16 mk = w4a8_mask16((g + 1) * gl - k);
                __m512 v;
                if (p->perm) {
                    __m512i idx = _mm512_maskz_loadu_epi32(mk, p->perm + k);
                    v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, src, 4);
                } else {
                    v = _mm512_maskz_loadu_ps(mk, src + k);
                }
                __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(v, vinv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                /* NaN (only 0 * inf when 127/amax overflows) -> 0, as the reference's int8 cast gives on x86. */
                r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r);
                r = _mm512_max_ps(_mm512_min_ps(r, hi), lo);
                __m512i qi = _mm512_maskz_cvtps_epi32(mk, r);
                s = _mm512_add_epi32(s, qi);
                _mm512_mask_cvtepi32_storeu_epi8(q + k, mk, qi);
            }
            sq[g] = _mm512_reduce_add_epi32(s);
        }
    }
}
