/*
 * w4a8_gemm.c -- the vnni path of x86_avx512vnni_w4a8 (avx512vnni level): the vpdpbusd zmm
 * micro-kernel, decode and prefill (the amx path takes many rows where AMX is granted).
 *
 * Micro-kernel: MR rows x NV panels (16 columns each). Per 64-byte block of
 * a panel (16 columns x 8 K positions) the low nibbles give the u8 operand
 * for k0-3 and the high nibbles for k4-7; each row's 4 int8 of x are
 * broadcast as the s8 operand, so one block costs 3 unpack ops + 2*MR
 * vpdpbusd. Integer accumulators live for one group; the group epilogue
 * subtracts z*sum(q) and adds scale*isum into float accumulators.
 */
#include "../common/w4a8_zmm.inc"

static inline int32_t load_i32(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Decode prefetch distance per weight stream (bytes), 16 blocks. Measured on an idle Sapphire Rapids
 * VM (bench/results/x86-w4a8-spr.md): no software prefetch 82-88% of read bandwidth, 1 KiB 94-109%,
 * 4 KiB no better (its hardware prefetchers alone under-read). */
#define W4A8_PREFETCH 1024

/* MR rows x NV panels; MR, NV are constants after inlining into run_tile's cases. */
static inline __attribute__((always_inline)) void tile(const mpl_x86_w4a8_job *j, int64_t m0, const int MR,
                                                       int64_t pan0, const int NV) {
    const mpl_x86_w4a8_layout *p = j->p;
    const int64_t G = p->groups, gl = p->group_len, nb = gl / MPL_X86_W4A8_KBLOCK;
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
        const size_t woff = (size_t)(g * gl) * (MPL_X86_W4A8_PANEL / 2);
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
            const __m512 sc = _mm512_load_ps(p->scales + ((pan0 + v) * G + g) * MPL_X86_W4A8_PANEL);
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
        for (int v = 0; v < NV; v++) w4a8_finish16(j, m0 + r, (pan0 + v) * MPL_X86_W4A8_PANEL, facc[r][v]);
}

/* One instantiation per (rows, panels) shape the loops below ask for. */
static void run_tile(const mpl_x86_w4a8_job *j, int64_t m0, int mr, int64_t pan0, int nv) {
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

void mpl_x86_w4a8_gemm_avx512vnni(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    (void)scratch;
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
