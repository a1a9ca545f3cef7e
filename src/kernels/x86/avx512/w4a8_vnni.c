/*
 * w4a8_vnni.c -- the AVX-512 VNNI variant of x86_vnni_w4a8: per-row int8
 * quantization of x and the vpdpbusd micro-kernel (decode and prefill on
 * CPUs without AMX).
 *
 * Micro-kernel: MR rows x NV panels (16 columns each). Per 64-byte block of
 * a panel (16 columns x 8 K positions) the low nibbles give the u8 operand
 * for k0-3 and the high nibbles for k4-7; each row's 4 int8 of x are
 * broadcast as the s8 operand, so one block costs 3 unpack ops + 2*MR
 * vpdpbusd. Integer accumulators live for one group; the group epilogue
 * subtracts z*sum(q) and adds scale*isum into float accumulators.
 */
#include <math.h>

#include "w4a8_avx512.h"

static inline int32_t load_i32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

void mpl_w4a8_quant_rows_avx512(const mpl_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf) {
    const mpl_x86_w4a8 *p = j->p;
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

/* Decode prefetch distance per weight stream (bytes), 16 blocks. Measured on an idle Sapphire Rapids
 * VM (bench/results/x86-w4a8-spr.md): no software prefetch 82-88% of read bandwidth, 1 KiB 94-109%,
 * 4 KiB no better (its hardware prefetchers alone under-read). */
#define W4A8_PREFETCH 1024

/* MR rows x NV panels; MR, NV are constants after inlining into run_tile's cases. */
static inline __attribute__((always_inline)) void tile(const mpl_w4a8_job *j, int64_t m0, const int MR, int64_t pan0,
                                                       const int NV) {
    const mpl_x86_w4a8 *p = j->p;
    const int64_t G = p->groups, gl = p->group_len, nb = gl / MPL_W4A8_KBLOCK;
    const __m512i m0f = _mm512_set1_epi8(0x0f);
    __m512 facc[6][4];
    __m512i acc[6][4];
    const uint8_t *wp[4];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) wp[v] = mpl_x86_w4a8_panel(p, pan0 + v);
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) facc[r][v] = _mm512_setzero_ps();
    for (int64_t g = 0; g < G; g++) {
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) acc[r][v] = _mm512_setzero_si512();
        const int8_t *xr = j->qx + m0 * j->lda + g * gl;
        const size_t woff = (size_t)(g * gl) * (MPL_W4A8_PANEL / 2);
        for (int64_t b = 0; b < nb; b++) {
            __m512i wl[4], wh[4];
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) {
                if (MR <= 2) /* decode streams the weights once: ask for them ahead of the L2 streamer */
                    _mm_prefetch((const char *)(wp[v] + woff + (size_t)b * 64) + W4A8_PREFETCH, _MM_HINT_T0);
                __m512i raw = _mm512_load_si512((const void *)(wp[v] + woff + (size_t)b * 64));
                wl[v] = _mm512_and_si512(raw, m0f);
                wh[v] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), m0f);
            }
#pragma GCC unroll 6
            for (int r = 0; r < MR; r++) {
                __m512i xl = _mm512_set1_epi32(load_i32(xr + r * j->lda + b * 8));
                __m512i xh = _mm512_set1_epi32(load_i32(xr + r * j->lda + b * 8 + 4));
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) {
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], wl[v], xl);
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], wh[v], xh);
                }
            }
        }
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __m512 sc = _mm512_load_ps(p->scales + ((pan0 + v) * G + g) * MPL_W4A8_PANEL);
            if (p->zeros) {
                const __m512i z = w4a8_zeros16(p, pan0 + v, g);
#pragma GCC unroll 6
                for (int r = 0; r < MR; r++)
                    facc[r][v] = w4a8_group_acc(facc[r][v], acc[r][v], z, j->sumq[(m0 + r) * G + g], sc);
            } else {
#pragma GCC unroll 6
                for (int r = 0; r < MR; r++)
                    facc[r][v] = w4a8_group_acc_z8(facc[r][v], acc[r][v], j->sumq[(m0 + r) * G + g], sc);
            }
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) w4a8_finish16(j, m0 + r, (pan0 + v) * MPL_W4A8_PANEL, facc[r][v]);
}

/* One instantiation per (rows, panels) shape the loops below ask for. */
static void run_tile(const mpl_w4a8_job *j, int64_t m0, int mr, int64_t pan0, int nv) {
    switch (mr * 8 + nv) {
    case 1 * 8 + 1: tile(j, m0, 1, pan0, 1); break;
    case 1 * 8 + 2: tile(j, m0, 1, pan0, 2); break;
    case 1 * 8 + 3: tile(j, m0, 1, pan0, 3); break;
    case 1 * 8 + 4: tile(j, m0, 1, pan0, 4); break;
    case 2 * 8 + 1: tile(j, m0, 2, pan0, 1); break;
    case 2 * 8 + 2: tile(j, m0, 2, pan0, 2); break;
    case 2 * 8 + 3: tile(j, m0, 2, pan0, 3); break;
    case 2 * 8 + 4: tile(j, m0, 2, pan0, 4); break;
    case 3 * 8 + 1: tile(j, m0, 3, pan0, 1); break;
    case 3 * 8 + 2: tile(j, m0, 3, pan0, 2); break;
    case 4 * 8 + 1: tile(j, m0, 4, pan0, 1); break;
    case 4 * 8 + 2: tile(j, m0, 4, pan0, 2); break;
    case 5 * 8 + 1: tile(j, m0, 5, pan0, 1); break;
    case 5 * 8 + 2: tile(j, m0, 5, pan0, 2); break;
    case 6 * 8 + 1: tile(j, m0, 6, pan0, 1); break;
    case 6 * 8 + 2: tile(j, m0, 6, pan0, 2); break;
    default: break;
    }
}

/* Rows of qx kept L2-resident while a group of panels is swept over them: 256 KiB (L2 is 1-2 MiB per core). */
#define QX_CHUNK_BYTES (256 * 1024)

void mpl_w4a8_gemm_avx512(const mpl_w4a8_job *j, int64_t p0, int64_t p1) {
    const int64_t M = j->m, K = j->p->k;
    /* M <= 2: one pass over the weights, 4 panels per x broadcast (4 independent vpdpbusd chains per row).
     * Otherwise 6 rows x 2 panels: 12 int + 12 float accumulators + 4 weight vectors fit the 32 zmm. */
    const int MR = M <= 2 ? (int)M : 6, NV = M <= 2 ? 4 : 2;
    int64_t mc = QX_CHUNK_BYTES / K / MR * MR;
    if (mc < MR) mc = MR;
    for (int64_t c0 = 0; c0 < M; c0 += mc) {
        int64_t c1 = c0 + mc < M ? c0 + mc : M;
        for (int64_t pan = p0; pan < p1; pan += NV) {
            int nv = p1 - pan < NV ? (int)(p1 - pan) : NV;
            for (int64_t m = c0; m < c1; m += MR) run_tile(j, m, c1 - m < MR ? (int)(c1 - m) : MR, pan, nv);
        }
    }
}
