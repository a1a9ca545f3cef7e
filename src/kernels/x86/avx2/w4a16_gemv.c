/*
 * w4a16_gemv.c -- the decode path of x86_avx2_w4a16 (avx2 level): the weights of a 64-channel
 * block are streamed once per call and dequantized in registers (w4a16_ymm.h: vpand + vsubps
 * per 8 weights), each dequantized vector feeding one FMA per row.
 *
 * Group by group, the rows run in runs of 4 (then a run of 1, 2 or 3), each run a kernel sized
 * to keep at least 8 accumulators busy (FMA latency 4 x 2 pipes on Zen 3):
 *   1 row:    all 64 channels in one pass (8 accumulators);
 *   2 rows:   32 channels a pass, 2 passes (8);
 *   3-4 rows: 16 channels a pass, 4 passes (6-8).
 * A group's weights (4 KiB at group 128) and its x (512 B a row) stay in L1 for the passes and
 * runs after the first, so the block streams from memory once whatever m is.
 *
 * Cost: one row needs 4 chunk loads, 8 unpacks, 32 vpand, 32 vsubps and 32 FMAs per 128-byte step
 * (256 weights): 104 vector uops on Zen 3's 4 FP pipes (FMA on 2, vsubps on the 2 add pipes,
 * vpand on any), ~26 cycles, i.e. ~5 bytes a cycle or ~15 GB/s at 3 GHz for one core; measured
 * ~13 GB/s with the weights in L2. More rows add FMAs only, so from 4 rows the FMA pipes bound
 * it (2 cycles per 8 weights at 4 rows).
 */
#include <string.h>

#include "w4a16_ymm.h"

/* Software prefetch distance of the one-row stream: 4 KiB = 32 steps, ~350 ns ahead at 11 GB/s
 * (measured on Zen 3, 4096x4096 cold, one thread: 1-8 KiB within the shared machine's noise,
 * 4-8 KiB a few % ahead; no software prefetch ~5% behind). The multi-row runs consume bytes 2-4x
 * slower, so they prefetch the next group instead, during their first pass, a whole run of
 * passes ahead, and the driver loop prefetches the next group's scales (a fixed 2 KiB ahead and
 * no scale prefetch: 1.3x slower cold than hot at m = 4; now within a few %). */
#define XW_PF_BYTES 4096

/* The kernels' constants, in memory (L1): mask[p] at 32p, sub[p][v][e] at 128 + 32 (8p + 2v + e):
 * 2^(23-4p) + zero point of vector e (lo/hi) of chunk v (+ 8 without zero points); the unpack
 * word. The assembly below hard-codes these offsets. */
typedef struct {
    __m256i mask[4];
    __m256 sub[4][4][2];
    __m256i hi; /* the unpack word, at 1152 */
} xw_consts;

_Static_assert(offsetof(xw_consts, sub) == 128 && offsetof(xw_consts, hi) == 1152, "offsets of the assembly");

static void consts_init(xw_consts *k) {
    k->hi = xw_hi_word();
    for (int p = 0; p < 4; p++) {
        k->mask[p] = xw_mask(p);
        for (int v = 0; v < 4; v++) k->sub[p][v][0] = k->sub[p][v][1] = _mm256_set1_ps(xw_base(p) + 8.0f);
    }
}

/* Zero points of group grp into the subtrahends. */
static void consts_group(xw_consts *k, const mpl_x86_w4a16_layout *l, const uint8_t *grp) {
    for (int p = 0; p < 4; p++)
        for (int v = 0; v < 4; v++) xw_subtrahends(l, grp, v, p, k->sub[p][v]);
}

/* c[r][16v + 0..15] += s * acc for the lo/hi accumulator pair of chunk v (unpacked order). */
XW_INLINE void fold(const mpl_x86_w4a16_layout *l, const uint8_t *grp, int v, __m256 lo, __m256 hi, float *c) {
    __m256 t0, t1;
    xw_unpermute(lo, hi, &t0, &t1);
    float *c0 = c + 16 * v, *c1 = c0 + 8;
    _mm256_store_ps(c0, _mm256_fmadd_ps(t0, xw_load_scales(l, grp, 2 * v), _mm256_load_ps(c0)));
    _mm256_store_ps(c1, _mm256_fmadd_ps(t1, xw_load_scales(l, grp, 2 * v + 1), _mm256_load_ps(c1)));
}

/*
 * Each kernel: inputs [ks, ke) of one group (grp; wp its weights at ks; x the rows' inputs at ks,
 * rows K floats apart), c[r][0..63] += scale * sum for its rows.
 *
 * The steps are written in assembly: they need up to all 16 ymm registers (accumulators,
 * unpacked dword vectors, broadcasts, mask, a temporary, the unpack word), and gcc and clang
 * both spill accumulators or shuffle them between registers when they are written with
 * intrinsics (measured 1.3-1.5x slower at 1, 2 and 4 rows). Each accumulator takes 4 dependent
 * FMAs a step (16 cycles) in a step of ~26 (1 row), ~17 (2 rows) or 16 (4 rows) cycles a pass.
 */
static void run1(const mpl_x86_w4a16_layout *l, const xw_consts *cst, const uint8_t *grp, const uint8_t *wp,
                 const float *x, int64_t len, float *c) {
    const __m256i hi = xw_hi_word();
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int64_t k = 0; k < len; k += 4, wp += 128) {
        __m256i d0, d1, d2, d3, m;
        __m256 xb, w;
        /* Half h (chunks 2h, 2h+1) to a[4h..4h+3]; nibble position p outer. */
        __asm__("prefetcht0 %c[pf](%[wp])\n\t"
                "prefetcht0 %c[pf1](%[wp])\n\t"
                "vmovdqa 0(%[wp]), %[d1]\n\t"
                "vpunpcklwd %[hi], %[d1], %[d0]\n\t"
                "vpunpckhwd %[hi], %[d1], %[d1]\n\t"
                "vmovdqa 32(%[wp]), %[d3]\n\t"
                "vpunpcklwd %[hi], %[d3], %[d2]\n\t"
                "vpunpckhwd %[hi], %[d3], %[d3]\n\t"
                "vbroadcastss 0(%[x]), %[xb]\n\t"
                "vmovdqa 0(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 128(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a0]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 160(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a1]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 192(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a2]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 224(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a3]\n\t"
                "vbroadcastss 8(%[x]), %[xb]\n\t"
                "vmovdqa 32(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 384(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a0]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 416(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a1]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 448(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a2]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 480(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a3]\n\t"
                "vbroadcastss 4(%[x]), %[xb]\n\t"
                "vmovdqa 64(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 640(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a0]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 672(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a1]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 704(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a2]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 736(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a3]\n\t"
                "vbroadcastss 12(%[x]), %[xb]\n\t"
                "vmovdqa 96(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 896(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a0]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 928(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a1]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 960(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a2]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 992(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a3]\n\t"
                "vmovdqa 64(%[wp]), %[d1]\n\t"
                "vpunpcklwd %[hi], %[d1], %[d0]\n\t"
                "vpunpckhwd %[hi], %[d1], %[d1]\n\t"
                "vmovdqa 96(%[wp]), %[d3]\n\t"
                "vpunpcklwd %[hi], %[d3], %[d2]\n\t"
                "vpunpckhwd %[hi], %[d3], %[d3]\n\t"
                "vbroadcastss 0(%[x]), %[xb]\n\t"
                "vmovdqa 0(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 256(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a4]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 288(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a5]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 320(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a6]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 352(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a7]\n\t"
                "vbroadcastss 8(%[x]), %[xb]\n\t"
                "vmovdqa 32(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 512(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a4]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 544(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a5]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 576(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a6]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 608(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a7]\n\t"
                "vbroadcastss 4(%[x]), %[xb]\n\t"
                "vmovdqa 64(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 768(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a4]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 800(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a5]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 832(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a6]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 864(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a7]\n\t"
                "vbroadcastss 12(%[x]), %[xb]\n\t"
                "vmovdqa 96(%[cst]), %[m]\n\t"
                "vpand %[m], %[d0], %[w]\n\t"
                "vsubps 1024(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a4]\n\t"
                "vpand %[m], %[d1], %[w]\n\t"
                "vsubps 1056(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a5]\n\t"
                "vpand %[m], %[d2], %[w]\n\t"
                "vsubps 1088(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a6]\n\t"
                "vpand %[m], %[d3], %[w]\n\t"
                "vsubps 1120(%[cst]), %[w], %[w]\n\t"
                "vfmadd231ps %[w], %[xb], %[a7]\n\t"
                : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
                  [a6] "+x"(a6), [a7] "+x"(a7), [d0] "=&x"(d0), [d1] "=&x"(d1), [d2] "=&x"(d2), [d3] "=&x"(d3),
                  [m] "=&x"(m), [xb] "=&x"(xb), [w] "=&x"(w)
                : [wp] "r"(wp), [x] "r"(x + k), [cst] "r"(cst), [hi] "x"(hi), [pf] "i"(XW_PF_BYTES),
                  [pf1] "i"(XW_PF_BYTES + 64)
                : "memory");
    }
    fold(l, grp, 0, a0, a1, c);
    fold(l, grp, 1, a2, a3, c);
    fold(l, grp, 2, a4, a5, c);
    fold(l, grp, 3, a6, a7, c);
}

/* Pass v0 = 0, 2: chunks v0, v0 + 1 of both rows (a[0..3] row 0, a[4..7] row 1). */
static void run2(const mpl_x86_w4a16_layout *l, const xw_consts *cst, const uint8_t *grp, const uint8_t *wg,
                 const float *x, int64_t K, int64_t len, float *c) {
    const size_t pf = l->group_bytes < 8192 ? l->group_bytes : 8192; /* the next group (at most 8 KiB) */
#pragma GCC unroll 2
    for (int v0 = 0; v0 < 4; v0 += 2) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        const uint8_t *wp = wg + 32 * v0;
        for (int64_t k = 0; k < len; k += 4, wp += 128) {
            if (v0 == 0) {
                _mm_prefetch((const char *)wp + pf, _MM_HINT_T0);
                _mm_prefetch((const char *)wp + pf + 64, _MM_HINT_T0);
            }
            __m256i d0, d1, d2, d3, m;
            __m256 xb0, xb1, w;
            __asm__("vmovdqa (%[wp]), %[d1]\n\t"
                    "vpunpcklwd 1152(%[cst]), %[d1], %[d0]\n\t"
                    "vpunpckhwd 1152(%[cst]), %[d1], %[d1]\n\t"
                    "vmovdqa 32(%[wp]), %[d3]\n\t"
                    "vpunpcklwd 1152(%[cst]), %[d3], %[d2]\n\t"
                    "vpunpckhwd 1152(%[cst]), %[d3], %[d3]\n\t"
                    "vbroadcastss 0(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 0(%[x1]), %[xb1]\n\t"
                    "vmovdqa 0(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 0(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 32(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a5]\n\t"
                    "vpand %[m], %[d2], %[w]\n\t"
                    "vsubps 64(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a6]\n\t"
                    "vpand %[m], %[d3], %[w]\n\t"
                    "vsubps 96(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a7]\n\t"
                    "vbroadcastss 8(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 8(%[x1]), %[xb1]\n\t"
                    "vmovdqa 32(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 256(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 288(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a5]\n\t"
                    "vpand %[m], %[d2], %[w]\n\t"
                    "vsubps 320(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a6]\n\t"
                    "vpand %[m], %[d3], %[w]\n\t"
                    "vsubps 352(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a7]\n\t"
                    "vbroadcastss 4(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 4(%[x1]), %[xb1]\n\t"
                    "vmovdqa 64(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 512(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 544(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a5]\n\t"
                    "vpand %[m], %[d2], %[w]\n\t"
                    "vsubps 576(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a6]\n\t"
                    "vpand %[m], %[d3], %[w]\n\t"
                    "vsubps 608(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a7]\n\t"
                    "vbroadcastss 12(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 12(%[x1]), %[xb1]\n\t"
                    "vmovdqa 96(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 768(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 800(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a5]\n\t"
                    "vpand %[m], %[d2], %[w]\n\t"
                    "vsubps 832(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a6]\n\t"
                    "vpand %[m], %[d3], %[w]\n\t"
                    "vsubps 864(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a7]\n\t"
                    : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
                      [a6] "+x"(a6), [a7] "+x"(a7), [d0] "=&x"(d0), [d1] "=&x"(d1), [d2] "=&x"(d2), [d3] "=&x"(d3),
                      [m] "=&x"(m), [xb0] "=&x"(xb0), [xb1] "=&x"(xb1), [w] "=&x"(w)
                    : [wp] "r"(wp), [x0] "r"(x + k), [x1] "r"(x + K + k), [cst] "r"(cst),
                      [sb] "r"(&cst->sub[0][v0][0])
                    : "memory");
        }
        fold(l, grp, v0, a0, a1, c);
        fold(l, grp, v0 + 1, a2, a3, c);
        fold(l, grp, v0, a4, a5, c + 64);
        fold(l, grp, v0 + 1, a6, a7, c + 64);
    }
}

/* 3-4 rows, chunk v a pass (v = 0..3): 2 MR accumulators, the broadcasts of all rows, the two
 * dword vectors, mask and temporary (16 registers at MR = 4), in assembly as above. */
static void run3(const mpl_x86_w4a16_layout *l, const xw_consts *cst, const uint8_t *grp, const uint8_t *wg,
                 const float *x, int64_t K, int64_t len, float *c) {
    const size_t pf = l->group_bytes < 8192 ? l->group_bytes : 8192; /* the next group (at most 8 KiB) */
    const int64_t k4 = 4 * K; /* bytes between rows */
    for (int v = 0; v < 4; v++) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0;
        const uint8_t *wp = wg + 32 * v;
        for (int64_t k = 0; k < len; k += 4, wp += 128) {
            if (v == 0) {
                _mm_prefetch((const char *)wp + pf, _MM_HINT_T0);
                _mm_prefetch((const char *)wp + pf + 64, _MM_HINT_T0);
            }
            __m256i d0, d1, m;
            __m256 xb0, xb1, xb2, w;
            __asm__("vmovdqa (%[wp]), %[d1]\n\t"
                    "vpunpcklwd 1152(%[cst]), %[d1], %[d0]\n\t"
                    "vpunpckhwd 1152(%[cst]), %[d1], %[d1]\n\t"
                    "vbroadcastss 0(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 0(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 0(%[x0],%[k4],2), %[xb2]\n\t"
                    "vmovdqa 0(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 0(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 32(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vbroadcastss 8(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 8(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 8(%[x0],%[k4],2), %[xb2]\n\t"
                    "vmovdqa 32(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 256(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 288(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vbroadcastss 4(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 4(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 4(%[x0],%[k4],2), %[xb2]\n\t"
                    "vmovdqa 64(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 512(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 544(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vbroadcastss 12(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 12(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 12(%[x0],%[k4],2), %[xb2]\n\t"
                    "vmovdqa 96(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 768(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 800(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
                      [d0] "=&x"(d0), [d1] "=&x"(d1), [m] "=&x"(m), [xb0] "=&x"(xb0), [xb1] "=&x"(xb1), [xb2] "=&x"(xb2), [w] "=&x"(w)
                    : [wp] "r"(wp), [x0] "r"(x + k), [k4] "r"(k4), [cst] "r"(cst), [sb] "r"(&cst->sub[0][v][0])
                    : "memory");
        }
        fold(l, grp, v, a0, a1, c + 0);
        fold(l, grp, v, a2, a3, c + 64);
        fold(l, grp, v, a4, a5, c + 128);
    }
}

static void run4(const mpl_x86_w4a16_layout *l, const xw_consts *cst, const uint8_t *grp, const uint8_t *wg,
                 const float *x, int64_t K, int64_t len, float *c) {
    const size_t pf = l->group_bytes < 8192 ? l->group_bytes : 8192; /* the next group (at most 8 KiB) */
    const int64_t k4 = 4 * K; /* bytes between rows */
    for (int v = 0; v < 4; v++) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        const uint8_t *wp = wg + 32 * v;
        for (int64_t k = 0; k < len; k += 4, wp += 128) {
            if (v == 0) {
                _mm_prefetch((const char *)wp + pf, _MM_HINT_T0);
                _mm_prefetch((const char *)wp + pf + 64, _MM_HINT_T0);
            }
            __m256i d0, d1, m;
            __m256 xb0, xb1, xb2, xb3, w;
            __asm__("vmovdqa (%[wp]), %[d1]\n\t"
                    "vpunpcklwd 1152(%[cst]), %[d1], %[d0]\n\t"
                    "vpunpckhwd 1152(%[cst]), %[d1], %[d1]\n\t"
                    "vbroadcastss 0(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 0(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 0(%[x0],%[k4],2), %[xb2]\n\t"
                    "vbroadcastss 0(%[x3]), %[xb3]\n\t"
                    "vmovdqa 0(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 0(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a6]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 32(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a7]\n\t"
                    "vbroadcastss 8(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 8(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 8(%[x0],%[k4],2), %[xb2]\n\t"
                    "vbroadcastss 8(%[x3]), %[xb3]\n\t"
                    "vmovdqa 32(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 256(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a6]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 288(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a7]\n\t"
                    "vbroadcastss 4(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 4(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 4(%[x0],%[k4],2), %[xb2]\n\t"
                    "vbroadcastss 4(%[x3]), %[xb3]\n\t"
                    "vmovdqa 64(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 512(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a6]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 544(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a7]\n\t"
                    "vbroadcastss 12(%[x0]), %[xb0]\n\t"
                    "vbroadcastss 12(%[x0],%[k4],1), %[xb1]\n\t"
                    "vbroadcastss 12(%[x0],%[k4],2), %[xb2]\n\t"
                    "vbroadcastss 12(%[x3]), %[xb3]\n\t"
                    "vmovdqa 96(%[cst]), %[m]\n\t"
                    "vpand %[m], %[d0], %[w]\n\t"
                    "vsubps 768(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a0]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a2]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a4]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a6]\n\t"
                    "vpand %[m], %[d1], %[w]\n\t"
                    "vsubps 800(%[sb]), %[w], %[w]\n\t"
                    "vfmadd231ps %[w], %[xb0], %[a1]\n\t"
                    "vfmadd231ps %[w], %[xb1], %[a3]\n\t"
                    "vfmadd231ps %[w], %[xb2], %[a5]\n\t"
                    "vfmadd231ps %[w], %[xb3], %[a7]\n\t"
                    : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5), [a6] "+x"(a6), [a7] "+x"(a7),
                      [d0] "=&x"(d0), [d1] "=&x"(d1), [m] "=&x"(m), [xb0] "=&x"(xb0), [xb1] "=&x"(xb1), [xb2] "=&x"(xb2), [xb3] "=&x"(xb3), [w] "=&x"(w)
                    : [wp] "r"(wp), [x0] "r"(x + k), [k4] "r"(k4), [x3] "r"(x + 3 * K + k), [cst] "r"(cst), [sb] "r"(&cst->sub[0][v][0])
                    : "memory");
        }
        fold(l, grp, v, a0, a1, c + 0);
        fold(l, grp, v, a2, a3, c + 64);
        fold(l, grp, v, a4, a5, c + 128);
        fold(l, grp, v, a6, a7, c + 192);
    }
}

static void gemv_block(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1,
                       float *c) {
    const mpl_x86_w4a16_layout *l = &kn->l;
    const int64_t gs = l->group_size, K = l->k;
    xw_consts cst;
    consts_init(&cst);
    memset(c, 0, (size_t)m * 64 * sizeof(float));
    for (int64_t g = k0 / gs; g * gs < k1; g++) {
        int64_t ks = k0 > g * gs ? k0 : g * gs, ke = k1 < (g + 1) * gs ? k1 : (g + 1) * gs;
        const uint8_t *grp = mpl_x86_w4a16_group(l, b, g);
        const uint8_t *wp = mpl_x86_w4a16_group_weights(l, b, g) + (size_t)((ks - g * gs) / 4) * 128;
        if (l->zero_points) consts_group(&cst, l, grp);
        /* The next group's scales and zero points: the runs prefetch only its weights. */
        for (size_t o = 0; o < l->scale_bytes + l->zero_bytes; o += 64)
            _mm_prefetch((const char *)grp + l->group_bytes + o, _MM_HINT_T0);
        int64_t r = 0;
        for (; r + 4 <= m; r += 4) run4(l, &cst, grp, wp, xf + r * K + ks, K, ke - ks, c + r * 64);
        switch (m - r) {
        case 3: run3(l, &cst, grp, wp, xf + r * K + ks, K, ke - ks, c + r * 64); break;
        case 2: run2(l, &cst, grp, wp, xf + r * K + ks, K, ke - ks, c + r * 64); break;
        case 1: run1(l, &cst, grp, wp, xf + r * K + ks, ke - ks, c + r * 64); break;
        default: break;
        }
    }
}

/* The path takes one block a call (gemv_blocks 0); the loop keeps the shared signature honest. The
 * other widths have their own loops (w4a16_gemv_widths.c). */
void mpl_x86_w4a16_gemv_avx2(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                             int64_t k0, int64_t k1, float *c) {
    const float *xf = xs;
    if (kn->l.bits != 4) {
        mpl_x86_w4a16_gemv_widths_avx2(kn, xf, m, b, nb, k0, k1, c);
        return;
    }
    for (int64_t i = 0; i < nb; i++) gemv_block(kn, xf, m, b + i, k0, k1, c + i * m * 64);
}
