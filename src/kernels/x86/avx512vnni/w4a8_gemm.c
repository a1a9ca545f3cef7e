/*
 * w4a8_gemm.c -- the vnni path of x86_avx512vnni_w4a8 (avx512vnni level): the vpdpbusd zmm
 * micro-kernel, decode and prefill, every weight width (the amx path takes many rows where
 * AMX is granted).
 *
 * Micro-kernel: MR rows x NV panels (16 columns each). Per step of a panel
 * (16 columns x kstep K positions, docs/layouts/x86_w4a8.md) each plane (4 K
 * positions) is one zmm of u8 codes (8-bit: a load; 4- and 2-bit: shift + mask;
 * 3-bit: two shifts, two masks and an or), and each row's 4 int8 of x for
 * those positions are broadcast as the s8 operand: one vpdpbusd per plane, row
 * and panel (vpdpbusd sums in int32 without saturation, so 8-bit codes 0..255
 * go in as they are). Integer accumulators live for one group; the group
 * epilogue subtracts z*sum(q) and adds scale*isum into float accumulators.
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

/* MR rows x NV panels of BITS-bit weights; MR, NV, BITS are constants after inlining into run_tile's cases. */
static inline __attribute__((always_inline)) void tile(const mpl_x86_w4a8_job *j, int64_t m0, const int MR,
                                                       int64_t pan0, const int NV, const int BITS) {
    const mpl_x86_w4a8_layout *p = j->p;
    const int KS = mpl_x86_w4a8_kstep(BITS), NP = KS / 4, SB = mpl_x86_w4a8_step_bytes(BITS);
    const int64_t G = p->groups, gl = p->group_len, ns = gl / KS;
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
        const size_t woff = (size_t)(g * gl) * (size_t)(2 * BITS);
        for (int64_t st = 0; st < ns; st++) {
            const size_t at = woff + (size_t)st * (size_t)SB;
            if (MR <= 2) { /* decode streams the weights once: ask for them ahead of the L2 streamer */
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++)
#pragma GCC unroll 3
                    for (int b = 0; b < SB; b += 64)
                        _mm_prefetch((const char *)(wp[v] + at + b) + W4A8_PREFETCH, _MM_HINT_T0);
            }
#pragma GCC unroll 8
            for (int pl = 0; pl < NP; pl++) {
                __m512i w[4];
#pragma GCC unroll 4
                for (int v = 0; v < NV; v++) w[v] = w4a8_plane16(wp[v] + at, BITS, pl);
#pragma GCC unroll 6
                for (int r = 0; r < MR; r++) {
                    __m512i x = _mm512_set1_epi32(load_i32(xr + r * j->lda + st * KS + 4 * pl));
#pragma GCC unroll 4
                    for (int v = 0; v < NV; v++) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], w[v], x);
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
                    facc[r][v] = w4a8_group_acc_bias(facc[r][v], acc[r][v], p->zbias * j->sumq[(m0 + r) * G + g], sc);
            }
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) w4a8_finish16(j, m0 + r, (pan0 + v) * MPL_X86_W4A8_PANEL, facc[r][v]);
}

/* One instantiation per (rows, panels) shape the loops below ask for, at width BITS. */
static inline __attribute__((always_inline)) void run_tile_w(const mpl_x86_w4a8_job *j, int64_t m0, int mr,
                                                             int64_t pan0, int nv, const int BITS) {
    switch (mr * 8 + nv) {
    case 1 * 8 + 1: tile(j, m0, 1, pan0, 1, BITS); break;
    case 1 * 8 + 2: tile(j, m0, 1, pan0, 2, BITS); break;
    case 1 * 8 + 3: tile(j, m0, 1, pan0, 3, BITS); break;
    case 1 * 8 + 4: tile(j, m0, 1, pan0, 4, BITS); break;
    case 2 * 8 + 1: tile(j, m0, 2, pan0, 1, BITS); break;
    case 2 * 8 + 2: tile(j, m0, 2, pan0, 2, BITS); break;
    case 2 * 8 + 3: tile(j, m0, 2, pan0, 3, BITS); break;
    case 2 * 8 + 4: tile(j, m0, 2, pan0, 4, BITS); break;
    case 3 * 8 + 1: tile(j, m0, 3, pan0, 1, BITS); break;
    case 3 * 8 + 2: tile(j, m0, 3, pan0, 2, BITS); break;
    case 4 * 8 + 1: tile(j, m0, 4, pan0, 1, BITS); break;
    case 4 * 8 + 2: tile(j, m0, 4, pan0, 2, BITS); break;
    case 5 * 8 + 1: tile(j, m0, 5, pan0, 1, BITS); break;
    case 5 * 8 + 2: tile(j, m0, 5, pan0, 2, BITS); break;
    case 6 * 8 + 1: tile(j, m0, 6, pan0, 1, BITS); break;
    case 6 * 8 + 2: tile(j, m0, 6, pan0, 2, BITS); break;
    default: break;
    }
}

static void run_tile(const mpl_x86_w4a8_job *j, int64_t m0, int mr, int64_t pan0, int nv) {
    switch (j->p->bits) {
    case 8: run_tile_w(j, m0, mr, pan0, nv, 8); break;
    case 3: run_tile_w(j, m0, mr, pan0, nv, 3); break;
    case 2: run_tile_w(j, m0, mr, pan0, nv, 2); break;
    default: run_tile_w(j, m0, mr, pan0, nv, 4); break;
    }
}

/* Rows of qx kept L2-resident while a group of panels is swept over them: 256 KiB (L2 is 1-2 MiB per core). */
#define QX_CHUNK_BYTES (256 * 1024)

void mpl_x86_w4a8_gemm_avx512vnni(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch) {
    (void)scratch;
    const int64_t M = j->m, K = j->p->k;
    /* M <= 2: one pass over the weights, 4 panels per x broadcast (4 independent vpdpbusd chains per row).
     * Otherwise 6 rows x 2 panels: 12 int + 12 float accumulators + 2 planes + x fit the 32 zmm. 3-bit
     * planes need three raw vectors per panel live across the step, so 3-bit takes 2 panels at M = 2
     * and 4 rows x 2 panels above (the same 32-register budget). */
    const int b3 = j->p->bits == 3;
    const int MR = M <= 2 ? (int)M : b3 ? 4 : 6, NV = M <= 2 && !(b3 && M == 2) ? 4 : 2;
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
