/*
 * cuda_w4a16.c -- the descriptor of kernel cuda_w4a16 and its path table: can_implement, pack (host
 * packing, one copy on the layer's device, mpl_options.cuda_device), apply of the path the layer chose on
 * device pointers (asynchronous, on the caller's stream) or on host pointers (synchronous copies through a
 * stream-ordered pool), destroy.
 *
 * Widths: every weight type. 3-bit and int4 are stored as 4-bit codes (exact; the 4-bit paths and ranges serve
 * them unchanged: H200 v15 measured them at the 4-bit times, bench/results/h200-widths.md), 2- and 3-bit too except on
 * cc 9.0 where the shape allows halves (two 2-bit codes per nibble: packs_halves below) or thirds (four 3-bit chunks in
 * three: packs_thirds; tc and skinny-rounded refuse both), 8-bit as two 4-bit
 * planes (its own ranges below; skinny and wg read both planes of a chunk at once where k % 64 == 0, wg-streamk
 * and skinny-rounded refuse it).
 * Paths, in priority order (the rows below; an apply of m rows runs the first allowed one whose default
 * range holds m, docs/kernel-contract.md), all on the packed layout of docs/layouts/cuda_w4a16.md:
 *   skinny-rounded  m 1..16 (1..8 when K < 8192), bf16 activations without zero points: the skinny kernel
 *           with weights rounded once to bf16 when the scales are bf16 (else exact sums, scaled by 2^-6)
 *   skinny  the same range: f16 activations and zero points; streaming GEMV-like, mma.sync, exact group sums
 *   wg-streamk  m 33..512 where it pays (K, N), cc 9.0 only: wg's kernel on a persistent stream-K grid, rounded weights
 *   wg      m 33..512 (4-bit and halves, >= 2^27 weights, thirds > 2^26: ..1024; 8-bit: skinny's end..256, >= 2^26
 *           weights ..512), cc 9.0 only   wgmma tiles, exact group sums only for m <= 32 (else rounded weights)
 *   dq      m >= 161 (>= 513 on cc 9.0)   slabs dequantized to 16-bit weights + cuBLAS: rounded weights
 *   tc      any m (the fallback)           mma.sync tiles, exact group sums
 * Launchers: w4a16_launch.h. The numbers behind each range are the rows' `why` (bench/cuda/NOTES.md has
 * the tables). Tuning that is not a path choice (split-K, skinny row tiles, dq slabs): cuda_w4a16.h.
 * Every CUDA error becomes MPL_ERR_CUDA with CUDA's name and message (cuBLAS: its status string);
 * nothing aborts.
 */
#include "cuda_w4a16.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../layouts/cuda_w4a16.h"
#include "../kernels.h"
#include "w4a16_launch.h"

/* ---------- the path table ---------- */

enum { PATH_SKINNY_ROUNDED, PATH_SKINNY, PATH_WG_SK, PATH_WG, PATH_DQ, PATH_TC, NPATHS };


/* The types the layout stores as uint4b8 codes without zero points (src/layouts/cuda_w4a16.c, code_map_of). */
static bool packs_uint4b8(const mpl_config *c) {
    return c->wtype == MPL_WTYPE_UINT4B8 || c->wtype == MPL_WTYPE_INT4 || c->wtype == MPL_WTYPE_UINT3B4 ||
           c->wtype == MPL_WTYPE_UINT2B2;
}

/*
 * 2-bit layers in halves (two codes per nibble, one byte per four weights; docs/layouts/cuda_w4a16.md "2-bit:
 * halves"): on compute capability 9.0, where wg serves the m between skinny and dq, when the shape allows
 * (mpl_cuda_w4a16_halves_fits: k % 128 == 0, group size -1 or a multiple of 128). skinny, wg, wg-streamk and dq read
 * halves; tc and skinny-rounded refuse such layers. Elsewhere 2-bit layers keep 4-bit codes, which every path reads.
 */
static bool packs_halves(const mpl_config *c, const mpl_platform *p) {
    return p->cuda_cc == 90 && mpl_cuda_w4a16_halves_fits(c);
}
/* 3-bit layers in thirds (four 64-channel chunks in three packed ones, three bits per weight; docs/layouts/cuda_w4a16.md
 * "3-bit: thirds") on compute capability 9.0 where the shape allows (mpl_cuda_w4a16_thirds_fits: k % 256 == 0, group
 * size -1 or a multiple of 128): skinny (w4a16_gemv), wg, wg-streamk and dq read them; tc and skinny-rounded refuse. */
static bool packs_thirds(const mpl_config *c, const mpl_platform *p) {
    return p->cuda_cc == 90 && mpl_cuda_w4a16_thirds_fits(c);
}
/* Whether the layer is packed below 4 bits per weight (halves or thirds): no tc, wg from where skinny stops */
static bool packs_narrow(const mpl_config *c, const mpl_platform *p) { return packs_halves(c, p) || packs_thirds(c, p); }

/* The refusal of a path that does not read halves or thirds (who: the paths that do). */
static mpl_reason refuse_narrow(const mpl_config *c, const mpl_platform *p, const char *path, const char *who, char *msg,
                                size_t cap) {
    return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                      "weight type %s, k = %lld, group size %lld on compute capability 9.0: packed in %s, which %s does "
                      "not read (%s)",
                      mpl_wtype_name(c->wtype), (long long)c->k, (long long)c->group_size,
                      packs_halves(c, p) ? "halves (2-bit codes, two per nibble)"
                                         : "thirds (3-bit codes, four chunks in three)",
                      path, who);
}

/* skinny-rounded rounds each weight once to bf16 (round(w * s), the issue-12 contract): bf16 activations and
 * the types stored as uint4b8 only (with zero points, -z s is not exact in bf16 and the form would round twice). */
static mpl_reason skinny_rounded_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    if (c->act != MPL_ACT_BF16)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE,
                          "activation type %s: cuda_w4a16:skinny-rounded takes bf16 (f16 keeps skinny's offset form)",
                          mpl_act_name(c->act));
    if (packs_narrow(c, p)) return refuse_narrow(c, p, "cuda_w4a16:skinny-rounded", "skinny does", msg, cap);
    if (c->zero_points || !packs_uint4b8(c))
        return mpl_refuse(msg, cap, MPL_REASON_ZERO_POINTS,
                          "weight type %s%s: cuda_w4a16:skinny-rounded takes the types packed as uint4b8 (uint4b8, int4, "
                          "uint3b4, uint2b2) only (-zero * scale is not exact in bf16; 8-bit layers' planes carry zero "
                          "points)",
                          mpl_wtype_name(c->wtype), c->zero_points ? " with zero points" : "");
    return MPL_REASON_OK;
}

static bool is_w8(const mpl_config *c) { return c->wtype == MPL_WTYPE_UINT8B128 || c->wtype == MPL_WTYPE_UINT8; }
/* The 8-bit layers wg's two-plane kernel takes (wg_can_implement says why the others are refused): the high plane's
 * chunk starts on a 64-channel chunk. */
static bool wg_takes_w8(const mpl_config *c) { return c->k % MPL_CUDA_W4A16_KC == 0; }

/* Skinny's switch point depends on the packed K (8-bit layers pack 2k channels): it wins up to m = 8 on every
 * layer, up to 16 only when K is large. 8-bit layers on cc 9.0 (k % 64 == 0), where skinny (FORM_W8) and wg both
 * read the two planes of a chunk at once: wg's time is flat from m = 1 to 16 (one token tile), skinny's grows with
 * m. Where n > k, wg is ahead from m = 4 on the wide layers (n >= 16384: enough 256-row tiles to fill the GPU
 * without split-K) and from m = 12 on the others; where n <= k skinny stays ahead to 16. H100 v19, uint8b128 group
 * 128, bf16, us, skinny vs wg: 70B gate_up (n 57344) m = 1 178.1 vs 182.1, m = 4 188.9 vs 182.8, 8 191.1 vs 185.1;
 * 8B gate_up (n 28672) m = 4 58.9 vs 51.2; 70B qkv (n 10240) m = 8 40.3 vs 47.6, m = 12 57.3 vs 47.8; 8B qkv (n 6144)
 * m = 8 18.8 vs 19.4, m = 12 21.1 vs 19.6; 70B o m = 16 34.6 vs 48.0; 70B down m = 16 101.8 vs 140.8. */
/* Whether the skinny paths run the layer through w4a16_gemv at m <= 16 (w4a16_skinny.cu: cc 9.0, K a multiple of 128,
 * groups of 128-channel multiples or one; halves with bf16 activations) */
static bool gemv_layer(const mpl_config *c, const mpl_platform *p) {
    if (p->cuda_cc != 90 || c->k % 128 != 0 || (c->group_size != -1 && c->group_size % 128 != 0)) return false;
    return !packs_halves(c, p) || c->act == MPL_ACT_BF16; /* thirds: always (its only skinny kernel) */
}
/* With w4a16_gemv (H100 v30 call 3, bf16, group 128, f16 scales, us, forced skinny vs the next path):
 * - 8-bit on n > k layers: skinny to 8 where n >= 16384 (70B gate_up m = 4 166.1 vs wg 179.1, m = 8 167.9 vs 179.3,
 *   m = 12 178.3 vs 179.5, m = 16 180.4 vs 179.9; 8B gate_up m = 8 47.4 vs 48.8, m = 12 53.8 vs 49.7), else to 16
 *   (70B qkv m = 16 42.0 vs 45.6; 8B qkv m = 16 16.9 vs 17.7);
 * - 4-bit codes: to 16 unless k < 8192 and n >= 16384 (8B qkv m = 9 / 16 9.6 / 10.0 vs tc 12.7 / 13.8; 8B gate_up
 *   m = 9 33.8 vs tc 31.0, m = 16 34.8 vs 31.1; 70B o m = 16 17.7 vs tc 30.0). */
static int64_t skinny_max_m(const mpl_config *c, const mpl_platform *p) {
    const bool gemv = gemv_layer(c, p);
    /* w4a16_gemv's block-shared x to 16 where its blocks fill one wave (w4a16_launch.h, with the measurements: 8B
     * gate_up m = 16 ahead of wg / tc at every width); the platform carries no SM count: the H200's / H100's 132 */
    if (gemv && mpl_cuda_w4a16_shared_x_fills(c->n, 132)) return MPL_CUDA_W4A16_SKINNY_MAX_M;
    if (is_w8(c) && p->cuda_cc == 90 && wg_takes_w8(c) && c->n > c->k) return c->n >= 16384 ? (gemv ? 8 : 3) : (gemv ? 16 : 8);
    /* halves (no tc): bf16 skinny to 16 (one fold per packed chunk, four row tiles per warp at m 9..16: H200 v24,
     * uint2b2 group 128, m = 16, us, skinny vs the default of v23: 70B gate_up 85.2 vs wg 115.9, 8B gate_up 29.3 vs
     * wg 32.5, 70B down 44.4 vs skinny with two row tiles 58.5). f16 (a fold per half, two row tiles per warp from
     * m = 9): wg from m = 9 on the wide layers (n >= 16384, n > k), else skinny to 16. H100 v23, bf16 with that
     * form, us, skinny vs wg: 70B gate_up m = 9 130.2 vs 114.4, m = 16 142.9 vs 114.4; 8B gate_up m = 9 36.2 vs
     * 32.5; kept on skinny: 8B qkv m = 16 13.2 vs 14.3, 70B down 71.3 vs 100.1, 70B o 24.2 vs 33.7 */
    if (packs_halves(c, p))
        return c->act == MPL_ACT_F16 && c->n >= 16384 && c->n > c->k ? 8 : MPL_CUDA_W4A16_SKINNY_MAX_M;
    /* thirds (no tc): skinny to 8 on the wide layers (n >= 16384, n > k: one block per SM from m = 9 against wg's flat
     * time), else to 16. H100 v31 (bench/cuda/NOTES.md), uint3b4 bf16, forced, us, skinny vs wg: 70B gate_up m = 8 77.6
     * vs 101.3, m = 9 118.6 vs 99.3; 8B gate_up m = 8 29.1 vs 30.0, m = 9 41.5 vs 30.0; kept to 16: 70B down m = 16 54.4
     * vs wg-streamk 76.4, 70B o 21.0 vs 30.6, 70B qkv 29.4 vs 31.0, 8B qkv 13.7 vs 14.1 */
    if (packs_thirds(c, p)) return c->n >= 16384 && c->n > c->k ? 8 : MPL_CUDA_W4A16_SKINNY_MAX_M;
    if (gemv && !is_w8(c)) return c->k < 8192 && c->n >= 16384 ? 8 : MPL_CUDA_W4A16_SKINNY_MAX_M;
    return (is_w8(c) ? 2 * c->k : c->k) < 8192 ? 8 : MPL_CUDA_W4A16_SKINNY_MAX_M;
}
static void skinny_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    (void)m_min;
    const int64_t top = skinny_max_m(c, p);
    if (*m_max > top) *m_max = top;
}

/* 8-bit layers (two 4-bit planes): wg reads both planes of a chunk in one stage and rebuilds the byte code, so
 * each weight is rounded once, round16((c - z) s) (w4a16_wg.cu, dequant8); the high plane must start on a
 * 64-channel chunk, as for dq. */
static mpl_reason wg_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    if (is_w8(c) && c->k % MPL_CUDA_W4A16_KC != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld with 8-bit weights: cuda_w4a16:wg needs k a multiple of %d (it reads the "
                          "high-nibble plane's chunk beside the low one's)",
                          (long long)c->k, MPL_CUDA_W4A16_KC);
    return MPL_REASON_OK;
}

/* The stream-K form takes what wg takes (8-bit layers: both planes of a chunk per stage, k % 64 == 0; their kernels
 * keep a 24-32 byte stack frame, bench/results/v20/ptxas_wg_spills.txt, and still win where the rule below says). */
static mpl_reason wg_sk_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    return wg_can_implement(c, p, msg, cap);
}

/* wg's default range per layer (the row's 33..512 otherwise):
 * - 8-bit: from where skinny stops to m = 256 (H200 v17: ahead of tc at every m from 17 and of dq to 256, 70B gate_up
 *   m = 64 248.0 vs tc 545.7 / dq 733.8 us, m = 256 637.5 vs dq 833.2; at 512 dq is ahead or level: 8B gate_up 289.3
 *   vs 343.7, 70B qkv 214.5 vs 328.9, 70B gate_up 1132.9 vs 1127.5), to 512 on layers of at least 2^26 weights since
 *   v27's F32_ONE form (H100 v38, forced, two turns, wg vs dq, us: m = 512 70B gate_up 1025.4 / 1039.7 vs 1248.8 /
 *   1256.6, 70B down 524.5 / 518.4 vs 649.9 / 654.3, 70B o 152.7 / 153.2 vs 172.2 / 174.3; m = 257 70B down 464.4 /
 *   457.7 vs 557.7 / 557.9; 70B qkv and 8B gate_up run stream-K there; the smaller 8B qkv keeps dq: m = 512 76.0 vs
 *   64.8);
 * - halves: from where skinny stops (no tc), to 512 as 4-bit, and to 1024 on layers of at least 2^27 weights as 4-bit
 *   codes (H100 v38, uint2b2, forced, two turns, wg vs dq, us: m = 1024 70B gate_up 1713.0 / 1564.4 vs 1732.2 /
 *   1869.9, 70B down 769.8 / 777.8 vs 888.2 / 879.6; the smaller 8B gate_up, 1.2e8 weights, 408.9 / 418.6 vs 429.3 /
 *   428.9, and 70B qkv 339.8 / 335.8 vs 298.3 / 295.6 keep dq);
 * - 4-bit codes without zero points on layers of at least 2^27 weights: to m = 1024, where dq writes and cuBLAS reads
 *   a 16-bit copy of the whole layer (forced, uint4b8 bf16, us, wg vs dq / the default dq of the same run):
 *   H100 v27: 70B gate_up m = 1024 1645.9 vs 2058.6 / 1800.6, bf16 scales 1522.3 vs 1823.2 (default); 70B down
 *             877.0 vs 885.6 / 877.5;
 *   H200 v26: 70B gate_up 1681.3 vs 1762.5 / 1957.2, 70B down 844.9 vs 1075.7 / 885.0;
 *   below 2^27 dq is level or ahead (8B gate_up, 1.2e8 weights: H100 442.2 vs 429.8, H200 450.3 vs 428.7; 70B qkv
 *   H100 356.1 vs 305.9), and at m = 2048 on every layer (H200 v26: 70B gate_up 3322.1 vs 3218.7, 70B down 1659.9
 *   vs 1609.1). 8-bit layers: dq ahead at 1024 (H100 v27 70B gate_up 2133.6 vs 1851.1; v38 2064.7 / 2052.9 vs 1931.0 /
 *   1859.0); zero points not measured.
 * - thirds (3-bit): to m = 1024 on layers of more than 2^26 weights, where wg reads three bits per weight and dq's pass
 *   (a thread per run, 46 registers: five blocks per SM, one iteration each) is latency-bound (ncu, 70B qkv: 52.3 us at
 *   38% of DRAM against the 4-bit pass's 34.7 us at 58%). H100 v32, uint3b4 bf16, forced, us, wg vs dq (the 4-bit
 *   default of the same call): 70B gate_up 1472.7 vs 2015.2 (wg 1658.6), 70B down 726.9 vs 1021.3 (wg 794.5), 8B
 *   gate_up 381.7 vs 464.6 (dq 460.4), 70B qkv (8.4e7 weights, the smallest measured) 307.4 vs 338.9 (dq 298.3);
 *   smaller layers and zero points are not measured and keep dq. */
#define MPL_CUDA_W4A16_WG_BIG_LAYER ((int64_t)1 << 27)
#define MPL_CUDA_W4A16_WG_BIG_THIRDS (((int64_t)1 << 26) + 1)
#define MPL_CUDA_W4A16_WG_BIG_W8 ((int64_t)1 << 26)
/* whether the layer holds at least `weights` weights (k n >= weights, without the product) */
static bool holds_weights(const mpl_config *c, int64_t weights) {
    return c->k > 0 && c->n >= (weights + c->k - 1) / c->k;
}
static void wg_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    /* the fewest weights from which wg runs to m = 1024 without zero points: 4-bit codes and halves, thirds; not 8-bit */
    const int64_t big = packs_thirds(c, p) ? MPL_CUDA_W4A16_WG_BIG_THIRDS : !is_w8(c) ? MPL_CUDA_W4A16_WG_BIG_LAYER : 0;
    if (big && !c->zero_points && holds_weights(c, big)) *m_max = 1024;
    if (is_w8(c)) *m_min = skinny_max_m(c, p) + 1, *m_max = holds_weights(c, MPL_CUDA_W4A16_WG_BIG_W8) ? 512 : 256;
    if (packs_narrow(c, p)) *m_min = skinny_max_m(c, p) + 1;
}

/* tc reads 4-bit codes and planes only. */
static mpl_reason tc_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    if (packs_narrow(c, p)) return refuse_narrow(c, p, "cuda_w4a16:tc", "skinny, wg and dq do", msg, cap);
    return MPL_REASON_OK;
}

/*
 * wg-streamk's default range: the m buckets (token tile 64: m 33..64; 128: 65..128, 129..256 and, 4-bit codes only,
 * 257..512) where the split-K
 * form's busiest SM streams at least MPL_CUDA_W4A16_WG_SK_MIN_GAIN more 64-channel chunks than stream-K's
 * (mpl_cuda_w4a16_wg_chunks_per_sm), the first run of such buckets; empty when none. The platform carries no SM
 * count: the rule takes the H200's 132. Stream-K costs a fixed ~6-10 us (partial-tile stores, the last block's sums,
 * the counters) and a chunk ~0.6 us at token tile 64 (~1 us at 128): it pays from ~16-24 chunks. H200 v13, bf16,
 * forced wg -> forced wg-streamk, us (chunks per SM); f16 agrees cell for cell (bench/cuda/NOTES.md v13):
 *   m = 64:  70B down 121.3 -> 77.4 (224 / 109), 70B o 41.3 -> 35.3 (64 / 32), 70B qkv 41.7 -> 40.1 (64 / 39),
 *            70B gate_up 143.3 -> 136.0 (256 / 218), 8B down 38.0 -> 34.4 (56 / 28); kept on wg: 8B qkv 17.8 -> 23.5
 *            (16 / 12), 8B o 16.9 -> 19.7 (16 / 8), 8B gate_up 41.2 -> 47.2 (64 / 55)
 *   m = 128: 70B down 161.5 -> 109.6, 70B o 54.8 -> 50.1, 70B gate_up 227.2 -> 209.4, 8B down 51.4 -> 50.8,
 *            70B qkv 55.1 -> 56.1 (the one cell the rule gets wrong, by 1.9%)
 *   m = 256: 70B gate_up 449.8 -> 383.9 (512 / 435), 70B qkv 112.1 -> 84.3 (128 / 78), 8B down 87.6 -> 67.9
 *            (112 / 55); kept on wg: 70B down 197.6 -> 209.5 (224 / 218), 70B o 58.0 -> 70.5 (64 / 63),
 *            8B gate_up 112.3 -> 113.8 (128 / 109), 8B qkv 32.6 -> 41.4, 8B o 32.2 -> 36.8
 */
#define MPL_CUDA_W4A16_WG_SK_MIN_GAIN 24
/* and at least 16 tiles (at most ~8 parts per tile on 132 SMs: the last block reads every part), the fewest measured
 * (8B down m = 64, 16 tiles); narrower layers (N <= 2048 at m <= 128) are not measured and keep wg */
#define MPL_CUDA_W4A16_WG_SK_MIN_TILES 16
static void wg_streamk_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    static const int64_t lo[] = {33, 65, 129, 257}, hi[] = {64, 128, 256, 512};
    int64_t a = 1, b = 0; /* empty */
    /* 257..512 (token tile 128, 3-4 token tiles). H200 v26 (bench/cuda/NOTES.md, one --sweep, forced, uint4b8 bf16 f16
     * scales, m = 512, us): the rule picks stream-K on 70B qkv 163.1 vs wg 223.5, 70B gate_up 823.1 vs 832.3 (default
     * 892.1), 8B gate_up 224.5 vs 233.4, and keeps wg on 70B o 122.6 vs 139.3, 8B qkv 58.8 vs 62.7, 70B down 437.9 vs
     * 420.4 (the one miss, 4%). The other widths since v38 (H100, forced, two turns, us, stream-K vs wg / dq):
     *   8-bit m = 257: 70B gate_up 715.0 / 707.4 vs 831.0 / 804.0 / dq 998.2, 70B qkv 159.2 / 158.1 vs 140.7 / dq
     *   182.8, 8B gate_up 209.8 / 212.3 vs 213.9 / dq 247.9; m = 512: 1089.7 / 1050.8 vs 1025.4 / 1039.7 / dq 1248.8,
     *   223.8 / 221.0 vs 281.4 / dq 218.6, 286.1 / 299.3 vs 337.7 / 296.4 / dq 306.4 (8-bit ran dq from 257 before;
     *   H200 v26, before F32_ONE, had dq ahead at 512 on 70B qkv 199.4 vs 236.7 and 8B gate_up 277.9 vs 301.2);
     *   halves m = 257: 70B gate_up 484.9 / 483.7 vs wg 554.3, 70B qkv 110.0 vs 99.9, 8B gate_up 151.4 vs 154.1;
     *   m = 512: 761.4 / 767.3 vs 733.2 / 727.9, 154.1 / 152.7 vs 206.4 / 200.9, 212.4 / 212.7 vs 231.5 / 225.9;
     *   thirds m = 257: 70B gate_up 495.6 vs 554.2, 70B qkv 112.1 vs 100.3; m = 512: 70B qkv 156.4 / 158.6 vs 204.4 /
     *   209.2, 70B gate_up 756.2 / 764.7 vs 789.5 / 748.2. */
    /* 4-bit zero points: forced only. Not measured, and their stream-K kernels spill (16-byte stack frame, 12-24
     * bytes of spill stores, ptxas -v: bench/results/v13/ptxas_wg.txt; the uint4b8 ones do not). 8-bit layers (whose
     * planes always carry zeros): the same rule, measured (H100 v20, uint8b128 group 128 and -1, forced wg vs
     * wg-streamk, us): it picks the faster in every cell of the six benchmark layers at m 33..256 --
     *   stream-K: 70B down m = 64 134.5 vs 207.6, m = 128 173.1 vs 251.5; 70B o m = 64 54.2 vs 66.5, 128 71.4 vs 79.5;
     *             70B qkv m = 64 61.1 vs 66.6, m = 256 128.2 vs 160.6; 70B gate_up m = 64 228.9 vs 239.0, m = 256
     *             579.0 vs 612.2;
     *   wg:       70B down m = 256 310.3 vs 340.9, 70B o m = 256 81.1 vs 106.0; 8B qkv m = 64 26.0 vs 32.7, 8B gate_up
     *             m = 128 80.1 vs 97.2 (group -1 within 1.5% of these). */
    for (size_t i = 0; i < sizeof lo / sizeof lo[0] && (!c->zero_points || is_w8(c)); i++) {
        const int64_t bt = hi[i] <= 64 ? 64 : 128, tiles = (hi[i] + bt - 1) / bt * ((c->n + 255) / 256);
        const bool pays = tiles >= MPL_CUDA_W4A16_WG_SK_MIN_TILES &&
                          mpl_cuda_w4a16_wg_chunks_per_sm(hi[i], c->k, c->n, 132, 0) -
                                  mpl_cuda_w4a16_wg_chunks_per_sm(hi[i], c->k, c->n, 132, 1) >=
                              MPL_CUDA_W4A16_WG_SK_MIN_GAIN;
        if (pays && b < a) a = lo[i], b = hi[i];
        else if (pays && b == lo[i] - 1) b = hi[i];
        else if (!pays && b >= a) break;
    }
    if (a < *m_min) a = *m_min;
    if (b > *m_max) b = *m_max;
    /* halves (no tc): where the 64-token bucket pays, stream-K from m = 17 too (its tiles pad to 64 tokens; H100 v23,
     * uint2b2, m = 32, wg-streamk vs wg: 70B down 77.2 vs 109.6 us, 70B o 34.1 vs 38.4, 70B qkv 36.8 vs 37.2; the one
     * loss 70B gate_up 132.9 vs 126.8) */
    if (packs_narrow(c, p) && a == 33) a = 17; /* thirds: as halves (not measured) */
    *m_min = a, *m_max = b;
}

/* dq dequantizes both planes of an 8-bit layer in one pass: the high plane must start on a 64-channel chunk. */
static mpl_reason dq_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    if (is_w8(c) && c->k % MPL_CUDA_W4A16_KC != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld with 8-bit weights: cuda_w4a16:dq needs k a multiple of %d (its high-nibble plane "
                          "starts on a chunk)",
                          (long long)c->k, MPL_CUDA_W4A16_KC);
    return MPL_REASON_OK;
}

/* 8-bit: no wg, and tc multiplies 2k packed channels, so dq takes over earlier: H200 v11 (forced, uint8b128,
 * bf16): m = 64 tc 145 / 551 / 403 us vs dq 187 / 738 / 390 (8B gate_up, 70B gate_up, 70B down), m = 128
 * tc 297 / 898 / 438 vs dq 190 / 775 / 412: dq from m = 65. */
static void dq_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    (void)p, (void)m_max;
    if (is_w8(c) && *m_min > 65) *m_min = 65;
}

static const mpl_path_desc paths[NPATHS] = {
    [PATH_SKINNY_ROUNDED] = {
        .name = "cuda_w4a16:skinny-rounded",
        .requires = "",
        /* skinny's range, before it: where both can run (bf16 activations, no zero points) this one does */
        .m_min = 1, .m_max = MPL_CUDA_W4A16_SKINNY_MAX_M, .m_limit = MPL_CUDA_W4A16_SKINNY_MAX_M,
        .m_range = skinny_m_range,
        .why = "w4a16_gemv (cc 9.0, K % 128 == 0, groups of 128k or one) to m = 16, H100 v30, bf16 uint4b8 f16 scales, "
               "against the loop before in turns: 70B gate_up m = 1 86.4 vs 98.4 us, m = 16 99.0 vs 119.9; 70B down m = 16 "
               "49.2 vs 54.6 (m = 1: 83.1 us = 94% of read16, call 4). "
               "H200 v9, bf16 x, bf16 scales (rounded form): 70B down m = 1 35.1 vs 40.8 us (88.7% of copy BW), "
               "m = 16 47.1 vs 53.1; 70B gate_up m = 1 74.4 vs 77.0, m = 16 107.0 vs 109.4; 8B gate_up m = 1 24.2 "
               "vs 26.8. f16 scales (exact form): m = 1 75.8 vs 77.0 and 40.1 vs 40.8, m = 16 49.7 vs 53.0 (70B "
               "down) but 112.3 vs 108.8 (70B gate_up). uint2b2 / uint3b4 (as uint4b8 nibbles): H200 v15, same call as "
               "4-bit, m = 1 70B gate_up 75.8 / 75.8 vs 76.1 us, 70B down 39.9 / 39.9 vs 40.3 (38% / 56% and 36% / 53% "
               "of read BW counted at 2 / 3 bits)",
        .can_implement = skinny_rounded_can_implement,
    },
    [PATH_SKINNY] = {
        .name = "cuda_w4a16:skinny",
        .requires = "",
        .m_min = 1, .m_max = MPL_CUDA_W4A16_SKINNY_MAX_M, .m_limit = MPL_CUDA_W4A16_SKINNY_MAX_M,
        .why = "f16 activations and zero points (skinny-rounded takes neither). Where w4a16_gemv runs the layer (cc 9.0, "
               "K % 128 == 0, groups of 128k or one; halves with bf16), H100 v30, forced, us: 4-bit to 16 unless k < 8192 "
               "and n >= 16384 (8B qkv m = 16 10.0 vs tc 13.8; 8B gate_up m = 16 34.8 vs tc 31.1); 8-bit n > k to 8 where "
               "n >= 16384 (70B gate_up m = 8 167.9 vs wg 179.3, m = 16 180.4 vs 179.9), else to 16 (70B qkv m = 16 42.0 "
               "vs 45.6); M = 1: 8-bit 70B gate_up 158.0 us (98% of read16), 2-bit 49.2 (82%). Elsewhere: "
               "H200 v3: beats tc up to m = 8 on every layer, at m = 9..16 only when K >= 8192 "
               "(70B down m = 16: 51 vs 84 us; K = 4096: tc wins slightly, 8B gate_up 31.7 vs 33.4 us); 8-bit layers: "
               "the same rule on the packed K (2k), but on cc 9.0 where n > k to m = 3 when n >= 16384, else to 8 (H100 "
               "v19, both planes per stage (FORM_W8) vs wg: m = 4 188.9 vs 182.8 us on 70B gate_up, 58.9 vs 51.2 on 8B "
               "gate_up; m = 8 40.3 vs 47.6 on 70B qkv, 18.8 vs 19.4 on 8B qkv; m = 12 57.3 vs 47.8 on 70B qkv); n <= k: "
               "skinny to 16 (70B down m = 16 101.8 vs wg 140.8); 8-bit m = 1: 70B gate_up 178.1 us, 70B down 91.8 "
               "(H100 v19, 88% / 86% of read BW); uint2 / uint3 with zero points: the "
               "4-bit ranges (as uint4 codes, the same bytes and kernel); 2-bit halves (cc 9.0): to 16 (bf16, H200 v24, "
               "uint2b2, m = 16 vs wg: 70B gate_up 85.2 vs 115.9 us, 8B gate_up 29.3 vs 32.5), f16 to 8 where n >= "
               "16384 and n > k (H100 v23, bf16 with f16's form, m = 16 vs wg: 70B gate_up 142.9 vs 114.4 us, 70B down "
               "71.3 vs 100.1); M = 1, H100 v25 (the m = 1 form, FORM_HALVES_M1, against v24's in turns): 70B gate_up "
               "52.7 vs 54.2 us (76% of read BW; 62.7 in v23; Humming int2 69.8 in v24), 70B down 28.4 vs 30.2, 70B qkv "
               "16.8 vs 17.8; f16 70B qkv 16.3 vs 17.7; 3-bit thirds (cc 9.0, w4a16_gemv only): to 16, to 8 where n >= 16384 and "
               "n > k (H100 v31, uint3b4, forced, us: 70B gate_up m = 9 118.6 vs wg 99.3, 8B gate_up 41.5 vs 30.0; 70B down "
               "m = 16 54.4 vs wg-streamk 76.4); M = 1 70B gate_up 69.2 us (87% of read16) vs 86.3 as 4-bit codes",
        .m_range = skinny_m_range,
    },
    [PATH_WG_SK] = {
        .name = "cuda_w4a16:wg-streamk",
        .requires = "compute capability 9.0 (sm_90a wgmma) and the driver's tensor-map encoder",
        .min_cc = 90, .max_cc = 90,
        .m_min = 33, .m_max = 512, .m_limit = MPL_M_ANY,
        .m_range = wg_streamk_m_range,
        .why = "H200 v13 (bf16, same run as forced wg): 70B down m = 64 77.4 vs 121.3 us, m = 128 109.6 vs 161.5; "
               "70B gate_up m = 64 136.0 vs 143.3, m = 256 383.9 vs 449.8; 70B qkv m = 256 84.3 vs 112.1; 8B down "
               "m = 256 67.9 vs 87.6; loses where the rule keeps wg: 70B o m = 256 70.5 vs 58.0, 8B qkv m = 64 23.5 "
               "vs 17.8, 8B gate_up m = 256 113.8 vs 112.3; 8-bit (both planes per stage), the same rule: H100 v20, "
               "70B down m = 64 134.5 vs 207.6 us, 70B qkv m = 256 128.2 vs 160.6, 70B gate_up m = 256 579.0 vs 612.2; "
               "kept on wg: 70B o m = 256 106.0 vs 81.1, 8B gate_up m = 128 97.2 vs 80.1; 4-bit m = 257..512, H200 v26: "
               "70B qkv m = 512 163.1 vs 223.5 us, 70B gate_up 823.1 vs 832.3, 8B gate_up 224.5 vs 233.4 (kept on wg: "
               "70B o 122.6 vs 139.3, 8B qkv 58.8 vs 62.7); 8-bit, halves and thirds m = 257..512 by the same rule, H100 "
               "v38 (forced, two turns): 8-bit m = 257 70B gate_up 715.0 vs wg 831.0 / dq 998.2 us, 8B gate_up 209.8 vs "
               "dq 247.9; halves 70B gate_up 484.9 vs wg 554.3, m = 512 70B qkv 154.1 vs 206.4",
        .can_implement = wg_sk_can_implement,
    },
    [PATH_WG] = {
        .name = "cuda_w4a16:wg",
        .requires = "compute capability 9.0 (sm_90a wgmma) and the driver's tensor-map encoder",
        .min_cc = 90, .max_cc = 90,
        .m_min = 33, .m_max = 512, .m_limit = MPL_M_ANY,
        .why = "H200 v6: beats tc from m = 33 (70B gate_up m = 64: 171 vs 289 us; loses at 32, 157 vs 147 us) and dq "
               "up to m = 512 (70B down m = 256: 188 vs 381 us); ties dq at 1024, loses at 4096 (0.80-0.85x vs "
               "0.96-0.99x of cuBLAS); 2- and 3-bit layers (4-bit codes) at the 4-bit times, H200 v15 same call: 70B "
               "down m = 256 213.6 / 189.8 vs 219.3 us, 8B gate_up 116.0 / 122.7 vs 117.1. 8-bit (both planes "
               "per stage, one rounding; group -1 too: v18/v19, H100, 70B gate_up m = 64 250.2 vs tc 527.3 us): from "
               "skinny's end to m = 256, H200 v17: 70B gate_up m = 64 248.0 vs tc 545.7 "
               "us, m = 256 637.5 vs dq 833.2, 70B down m = 24 159.0 vs tc 209.4; dq ahead from 512 (70B qkv 214.5 vs "
               "328.9); 2-bit halves (no tc): from skinny's end to 512, H100 v23: 8B gate_up m = 9 32.5 vs skinny 36.2 us, "
               "m = 256 2-bit 111.9 vs 4-bit 115.9, 70B gate_up 435.2 vs 409.8; 4-bit layers of >= 2^27 weights without zero "
               "points to m = 1024 (dq copies the whole layer): 70B gate_up m = 1024 1645.9 vs dq 1800.6 us (H100 v27), "
               "1681.3 vs 1957.2 (H200 v26); 70B down 844.9 vs 885.0 (H200), 877.0 vs 877.5 (H100); 3-bit thirds (no tc): as "
               "halves (H100 v31, uint3b4 defaults: 8B gate_up m = 17 32.7 us vs 40.5 for 4-bit codes on tc, m = 256 109.1 "
               "vs 109.9), and on layers of > 2^26 weights without zero points to m = 1024, where dq's thirds pass is "
               "latency-bound (H100 v32, forced, wg vs dq: 70B gate_up 1472.7 vs 2015.2 us, 70B down 726.9 vs 1021.3, "
               "8B gate_up 381.7 vs 464.6, 70B qkv 307.4 vs 338.9); halves on layers of >= 2^27 weights to m = 1024 as "
               "4-bit (H100 v38, forced, wg vs dq: 70B gate_up 1564.4 vs 1732.2 us, 70B down 769.8 vs 879.6); 8-bit to "
               "m = 512 on layers of >= 2^26 weights (H100 v38: 70B gate_up m = 512 1025.4 vs dq 1248.8 us, 70B down "
               "518.4 vs 649.9, 70B o 152.7 vs 172.2; 8B qkv keeps dq, 76.0 vs 64.8)",
        .can_implement = wg_can_implement,
        .m_range = wg_m_range,
    },
    [PATH_DQ] = {
        .name = "cuda_w4a16:dq",
        .requires = "",
        .m_min = 161, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY,
        .can_implement = dq_can_implement,
        .m_range = dq_m_range,
        .why = "H200 v5: tc wins at m = 128 (70B gate_up 457 vs 668 us), dq at m = 256 (743 vs 859 us; 8B layers "
               "0.45-0.62x of cuBLAS vs 0.25-0.46x); with wg first (cc 9.0) it serves m >= 513. 8-bit layers "
               "(no wg): from m = 65 (H200 v11: tc ahead at m = 64 on 2 of 3 layers, dq at 128 on all 3); H200 v15 "
               "m = 4096, 70B gate_up: 8-bit 5843 us, 2-bit 5686, 3-bit 5832 vs 4-bit 5750 / 5939 (two calls)",
    },
    [PATH_TC] = {
        .name = "cuda_w4a16:tc",
        .requires = "",
        .m_min = 1, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY,
        .why = "the fallback: every m no row above serves (m = 9..32, and 33..160 off cc 9.0; H200 v3-v6 "
               "crossovers above); 200-290 TFLOP/s at large m (0.25-0.42x of cuBLAS)",
        .can_implement = tc_can_implement,
    },
};

/* The weights each path multiplies (mpl_layer_weight_rounding): skinny and tc sum exact integer weights
 * per group and scale in fp32, as the reference does; dq rounds every weight * scale to 16 bits once;
 * wg does so unless mpl_cuda_w4a16_wg_exact holds for m. */
typedef enum { WEIGHTS_EXACT, WEIGHTS_ROUNDED, WEIGHTS_ROUNDED_UNLESS_WG_EXACT } path_weights;
static const path_weights path_rounding[NPATHS] = {
    [PATH_SKINNY_ROUNDED] = WEIGHTS_ROUNDED, /* where it runs the rounded form: weight_rounding */
    [PATH_SKINNY] = WEIGHTS_EXACT,
    [PATH_WG_SK] = WEIGHTS_ROUNDED, /* its kernels are the rounded forms only */
    [PATH_WG] = WEIGHTS_ROUNDED_UNLESS_WG_EXACT,
    [PATH_DQ] = WEIGHTS_ROUNDED,
    [PATH_TC] = WEIGHTS_EXACT,
};

/* ---------- tuning (cuda_w4a16.h) ---------- */

const mpl_cuda_w4a16_tuning mpl_cuda_w4a16_tuning_default = {
    .ksplit = 0,
    .skinny_nw = 0,
    .skinny_shared_x = 0,
    .dq_slab_bytes = 0,
    .dq_overlap = 1, /* measured v5: the overlap buys 2-10% on the dq path */
    .wg_blocks = 0,
};
static const mpl_cuda_w4a16_tuning *_Atomic g_tuning;

void mpl_cuda_w4a16_tuning_override(const mpl_cuda_w4a16_tuning *t) { g_tuning = t; }

static const mpl_cuda_w4a16_tuning *tuning(void) {
    const mpl_cuda_w4a16_tuning *t = g_tuning;
    return t ? t : &mpl_cuda_w4a16_tuning_default;
}

/* ---------- the packed layer ---------- */

typedef struct packed_layer {
    mpl_config cfg;
    mpl_cuda_w4a16_layout meta; /* sizes and format; its host pointers are NULL */
    int device, cc, sms;
    int gs16; /* group size / 16, MPL_CUDA_W4A16_ONE_GROUP with one group */
    void *dbuf; /* one allocation: qweight | scales | scales_lo | zeros | perm */
    const uint32_t *qweight;
    const uint16_t *scales, *scales_lo;
    const uint8_t *zeros;
    const int32_t *perm;
    size_t held_bytes;  /* qweight + scales + zeros */
    cudaMemPool_t pool; /* stream-ordered scratch: act-order x, host-path staging, wg x tiles */
    unsigned char wg_map[MPL_CUDA_W4A16_WG_MAP_BYTES]; /* the wg path's weight tensor map */
    int wg_state; /* 0: wg_map encoded; -1: not attempted (wg not enabled); else the encoder's cudaError_t */
} packed_layer;

/* A failed call also leaves its error as the thread's "last error" (non-sticky ones such as out of memory
 * included), where the next launch check would find it and blame a later, healthy apply: clear it here,
 * once it has become our status (test_cuda_faults: oom_apply). Sticky errors stay (the context is lost). */
static mpl_status cuda_fail(cudaError_t e, int device, const char *what) {
    (void)cudaGetLastError();
    return mpl_set_error(MPL_ERR_CUDA, "cuda_w4a16 (device %d): %s: %s: %s", device, what, cudaGetErrorName(e),
                         cudaGetErrorString(e));
}

/* The chooser has checked the device and its compute capability (.min_cc and each path's range). */
static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    if (c->mode != MPL_MODE_W4A16)
        return mpl_refuse(msg, cap, MPL_REASON_MODE,
                          "mode W4A8: cuda_w4a16 runs W4A16 only (activations used as given, not quantized)");
    const bool w8 = is_w8(c);
    /* every width: 2-, 3- and 4-bit types as 4-bit codes, 8-bit as two 4-bit planes (docs/layouts/cuda_w4a16.md) */
    if (mpl_wtype_width(c->wtype) == 0)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                          "weight type %d: cuda_w4a16 takes uint4b8, uint4, int4, uint3b4, uint3, uint2b2, uint2 (as "
                          "4-bit codes), uint8b128 and uint8 (as two 4-bit planes)",
                          (int)c->wtype);
    if (w8 && c->k % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld with 8-bit weights: must be a multiple of 16 (the high-nibble plane starts on a "
                          "k16 step)",
                          (long long)c->k);
    if (c->act != MPL_ACT_F16 && c->act != MPL_ACT_BF16)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE,
                          "activation type %s: cuda_w4a16 takes f16 or bf16 (the tensor cores' 16-bit inputs)",
                          mpl_act_name(c->act));
    if (c->k % 8 != 0 || c->n % 8 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld, n = %lld: both must be multiples of 8 (16-byte rows of x and y)",
                          (long long)c->k, (long long)c->n);
    if (c->group_size != -1 && c->group_size % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 16 (each k16 MMA step lies in one group)",
                          (long long)c->group_size);
    return MPL_REASON_OK;
}

/* Runs with the current device set to p->device (or, when pack failed early, any). */
static void free_device_state(packed_layer *p) {
    if (p->dbuf) cudaFree(p->dbuf); /* synchronizes: no kernel still reads the weights */
    if (p->pool) cudaMemPoolDestroy(p->pool);
    (void)cudaGetLastError();
}

static void destroy(void *pp) {
    packed_layer *p = pp;
    if (!p) return;
    int cur = -1;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != p->device) cudaSetDevice(p->device);
    free_device_state(p);
    if (cur >= 0 && cur != p->device) cudaSetDevice(cur);
    (void)cudaGetLastError();
    free(p);
}

static size_t align256(size_t v) { return (v + 255) & ~(size_t)255; }

/* pack's body, with the layer's device current. */
static mpl_status pack_on_device(const mpl_config *c, const mpl_canonical *w, int device, uint32_t enabled,
                                 const mpl_platform *plat, packed_layer *p) {
    int major = 0, minor = 0, pools = 0;
    cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&p->sms, cudaDevAttrMultiProcessorCount, device);
    if (e == cudaSuccess) e = cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device);
    if (e != cudaSuccess) return cuda_fail(e, device, "querying the device");
    p->cc = major * 10 + minor;
    if (p->cc < 80 || !pools)
        return mpl_set_error(MPL_ERR_NO_HARDWARE,
                             "cuda_w4a16: device %d has compute capability %d.%d%s: needs 8.0 or newer with "
                             "memory pools",
                             device, major, minor, pools ? "" : " and no memory pools");
    mpl_cuda_w4a16_layout host;
    mpl_status st = packs_halves(c, plat)   ? mpl_cuda_w4a16_pack_halves(c, w, &host)
                    : packs_thirds(c, plat) ? mpl_cuda_w4a16_pack_thirds(c, w, &host)
                                            : mpl_cuda_w4a16_pack(c, w, &host);
    if (st != MPL_OK) return st;
    p->meta = host;
    p->meta.qweight = NULL, p->meta.scales = p->meta.scales_lo = NULL, p->meta.zeros = NULL, p->meta.perm = NULL;
    /* the kernels count k16 steps of packed positions: a halves layer's group spans group size / 2 of them (thirds: of
     * x's, whose runs the kernels map, group size / 16) */
    p->gs16 = host.groups == 1 ? MPL_CUDA_W4A16_ONE_GROUP : (int)(host.group_size / (host.halves ? 32 : 16));
    size_t bq = mpl_cuda_w4a16_qweight_bytes(&host), plane = (size_t)host.groups * (size_t)host.n_pad;
    size_t bs = plane * 2, bl = host.scales_lo ? plane * 2 : 0, bz = host.zeros ? plane : 0;
    size_t bp = host.perm ? (size_t)host.k * 4 : 0;
    size_t oq = 0, os = align256(oq + bq), ol = align256(os + bs), oz = align256(ol + bl), op = align256(oz + bz);
    size_t total = align256(op + bp);
    p->held_bytes = bq + bs + bl + bz;
    e = cudaMalloc(&p->dbuf, total);
    if (e != cudaSuccess) {
        p->dbuf = NULL;
        mpl_cuda_w4a16_layout_free(&host);
        return cuda_fail(e, device, "allocating the packed weights");
    }
    char *d = p->dbuf;
    p->qweight = (const uint32_t *)(d + oq);
    p->scales = (const uint16_t *)(d + os);
    p->scales_lo = bl ? (const uint16_t *)(d + ol) : NULL;
    p->zeros = bz ? (const uint8_t *)(d + oz) : NULL;
    p->perm = bp ? (const int32_t *)(d + op) : NULL;
    e = cudaMemcpy(d + oq, host.qweight, bq, cudaMemcpyHostToDevice);
    if (e == cudaSuccess) e = cudaMemcpy(d + os, host.scales, bs, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && bl) e = cudaMemcpy(d + ol, host.scales_lo, bl, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && bz) e = cudaMemcpy(d + oz, host.zeros, bz, cudaMemcpyHostToDevice);
    if (e == cudaSuccess && bp) e = cudaMemcpy(d + op, host.perm, bp, cudaMemcpyHostToDevice);
    mpl_cuda_w4a16_layout_free(&host);
    if (e != cudaSuccess) return cuda_fail(e, device, "copying the packed weights to the device");
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = device;
    e = cudaMemPoolCreate(&p->pool, &props);
    if (e == cudaSuccess) {
        /* Keep freed scratch in the pool: after the first call of a size, apply allocates nothing. */
        uint64_t keep = UINT64_MAX;
        e = cudaMemPoolSetAttribute(p->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    } else {
        p->pool = NULL;
    }
    if (e != cudaSuccess) return cuda_fail(e, device, "creating the scratch memory pool");
    /* The wg map only for a layer that may run wg (path_ready reports a failed encode). */
    p->wg_state = -1;
    if (((enabled >> PATH_WG | enabled >> PATH_WG_SK) & 1u) && p->cc == 90)
        p->wg_state = mpl_cuda_w4a16_wg_weight_map(p->qweight, (int)p->meta.k_pad, (int)p->meta.n_pad, p->wg_map);
    return MPL_OK;
}

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *plat, uint32_t enabled,
                       void **out) {
    *out = NULL;
    const int device = plat->cuda_device;
    if (device < 0 || device >= MPL_CUDA_MAX_DEVICES)
        return mpl_set_error(MPL_ERR_NO_HARDWARE, "cuda_w4a16: CUDA device %d: must be 0..%d (MPL_CUDA_MAX_DEVICES)",
                             device, MPL_CUDA_MAX_DEVICES - 1);
    packed_layer *p = calloc(1, sizeof *p);
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "cuda_w4a16: out of memory");
    p->cfg = *c;
    p->device = device;
    int prev = -1;
    cudaError_t e = cudaGetDevice(&prev);
    if (e == cudaSuccess && prev != device) e = cudaSetDevice(device);
    mpl_status st = e != cudaSuccess ? cuda_fail(e, device, "selecting the layer's device")
                                     : pack_on_device(c, w, device, enabled, plat, p);
    if (st != MPL_OK) free_device_state(p);
    if (prev >= 0 && prev != device) cudaSetDevice(prev);
    (void)cudaGetLastError();
    if (st != MPL_OK) {
        free(p);
        return st;
    }
    *out = p;
    return MPL_OK;
}

static mpl_reason path_ready(const void *pp, int path, char *msg, size_t cap) {
    const packed_layer *p = pp;
    if ((path != PATH_WG && path != PATH_WG_SK) || p->wg_state == 0) return MPL_REASON_OK;
    if (p->wg_state < 0)
        return mpl_refuse(msg, cap, MPL_REASON_DEVICE,
                          "%s: device %d (compute capability %d.%d) got no weight tensor map at pack: wg "
                          "runs on 9.0 only",
                          paths[path].name, p->device, p->cc / 10, p->cc % 10);
    return mpl_refuse(msg, cap, MPL_REASON_DEVICE,
                      "%s: the driver could not encode the weights' tensor map (%s): wg copies each "
                      "64-channel chunk of 256 rows as one 2D tensor copy through it",
                      paths[path].name, cudaGetErrorName((cudaError_t)p->wg_state));
}

static size_t workspace_size(const void *pp, int64_t m, int threads, int path) {
    (void)pp, (void)m, (void)threads, (void)path;
    return 0; /* device scratch comes from the layer's stream-ordered pool */
}

static size_t weight_bytes(const void *pp) { return ((const packed_layer *)pp)->held_bytes; }

static double weight_rounding(const void *pp, int64_t m, int path) {
    const packed_layer *p = pp;
    if (path < 0 || path >= NPATHS) return 0.0;
    const path_weights pw = path_rounding[path];
    /* skinny-rounded runs the rounded form only on bf16 scales (every scale exact in bf16, so s 2^113 is the
     * fma's exact multiplier); other scale formats run skinny's exact form */
    if (path == PATH_SKINNY_ROUNDED) return p->meta.scale_fmt == MPL_CUDA_W4A16_SCALE_BF16 ? 0x1.0p-8 : 0.0;
    const bool rounds = pw == WEIGHTS_ROUNDED || (pw == WEIGHTS_ROUNDED_UNLESS_WG_EXACT && !mpl_cuda_w4a16_wg_exact(m, p->gs16));
    return rounds ? (p->cfg.act == MPL_ACT_BF16 ? 0x1.0p-8 : 0x1.0p-11) : 0.0;
}

/* ---------- path dq: slabs + cuBLAS ---------- */

/*
 * Process-wide, per device: the scratch pool (stream-ordered, shared by every layer, so the scratch is
 * bounded by what concurrent calls use, not by the layer count) and a free list of issuing contexts. A
 * context is what one call's sequence needs to itself: a cuBLAS handle (its stream and workspace are set
 * per call), the overlap's side stream and its events. A call takes a free context of its device (or
 * creates one), issues its sequence and gives the context back; the mutex guards only the list (a pop or a
 * push), so concurrent calls from several host threads issue in parallel, each with its own side stream.
 * (Before, one mutex held across the whole sequence and one shared side stream serialized them: 2-8 host
 * threads on their own streams gained nothing over one, bench/cuda/NOTES.md v11.) Contexts are created
 * on demand (as many as calls ever ran at once) and kept for the process, as the pool is.
 */
/* cuBLAS workspace: fixed size, so cuBLAS's kernel choice (and so the bits) does not vary by call */
#define DQ_BLAS_WS ((size_t)32 << 20)
typedef struct dq_ctx {
    struct dq_ctx *next;
    cublasHandle_t h;
    cudaStream_t side;
    cudaEvent_t fork, deq[2], gemm[2];
} dq_ctx;
typedef struct dq_dev {
    int ready;
    cudaMemPool_t pool;
    dq_ctx *free; /* contexts not in use */
} dq_dev;
static dq_dev g_dq[MPL_CUDA_MAX_DEVICES];
static pthread_mutex_t g_dq_mu = PTHREAD_MUTEX_INITIALIZER;

static mpl_status blas_fail(cublasStatus_t s, const char *what) {
    return mpl_set_error(MPL_ERR_CUDA, "cuda_w4a16:dq: %s: cuBLAS status %d: %s", what, (int)s, cublasGetStatusString(s));
}

/* The device's pool, created once (called with g_dq_mu held and dev current). */
static mpl_status dq_pool_init(int dev) {
    dq_dev *d = &g_dq[dev];
    if (d->ready) return MPL_OK;
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = dev;
    uint64_t keep = UINT64_MAX;
    cudaError_t e = cudaMemPoolCreate(&d->pool, &props);
    if (e == cudaSuccess) e = cudaMemPoolSetAttribute(d->pool, cudaMemPoolAttrReleaseThreshold, &keep);
    if (e != cudaSuccess) return cuda_fail(e, dev, "creating the dq path's scratch pool");
    d->ready = 1;
    return MPL_OK;
}

/* A new issuing context (dev current; no lock needed: nothing shared is touched). */
static mpl_status dq_ctx_create(int dev, dq_ctx **out) {
    dq_ctx *c = calloc(1, sizeof *c);
    if (!c) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "cuda_w4a16:dq: out of memory for an issuing context");
    cublasStatus_t bs = cublasCreate(&c->h);
    if (bs != CUBLAS_STATUS_SUCCESS) {
        free(c);
        return blas_fail(bs, "cublasCreate");
    }
    /* fp32 sums throughout (no reduced-precision split-K reductions): the tolerance derivation relies on it */
    bs = cublasSetMathMode(c->h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
    if (bs != CUBLAS_STATUS_SUCCESS) {
        cublasDestroy(c->h);
        free(c);
        return blas_fail(bs, "cublasSetMathMode");
    }
    cudaError_t e = cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming);
    for (int i = 0; i < 2 && e == cudaSuccess; i++) {
        e = cudaEventCreateWithFlags(&c->deq[i], cudaEventDisableTiming);
        if (e == cudaSuccess) e = cudaEventCreateWithFlags(&c->gemm[i], cudaEventDisableTiming);
    }
    if (e != cudaSuccess) {
        /* partial CUDA state is leaked rather than torn down in an unknown order; the call fails */
        cublasDestroy(c->h);
        free(c);
        return cuda_fail(e, dev, "creating a dq issuing context (stream and events)");
    }
    *out = c;
    return MPL_OK;
}

/* Takes a free context of dev (creating the pool and, when none is free, a context). */
static mpl_status dq_ctx_take(int dev, dq_ctx **out) {
    pthread_mutex_lock(&g_dq_mu);
    mpl_status st = dq_pool_init(dev);
    dq_ctx *c = NULL;
    if (st == MPL_OK && (c = g_dq[dev].free) != NULL) g_dq[dev].free = c->next;
    pthread_mutex_unlock(&g_dq_mu);
    if (st == MPL_OK && !c) st = dq_ctx_create(dev, &c);
    *out = st == MPL_OK ? c : NULL;
    return st;
}

static void dq_ctx_give(int dev, dq_ctx *c) {
    pthread_mutex_lock(&g_dq_mu);
    c->next = g_dq[dev].free;
    g_dq[dev].free = c;
    pthread_mutex_unlock(&g_dq_mu);
}

/*
 * Rows per slab. Default (measured, bench/cuda/NOTES.md v5): enough rows that one slab's GEMM has two
 * waves of 128 x 128 output tiles (cuBLAS is inefficient on short GEMMs: 70B down at m = 1024 ran 943 us
 * with 32 MB slabs = 585 rows, 854 us with 128 MB), held between 32 and 128 MB of 16-bit weights.
 * With a bias the fp32 product slab (m x rows x 4 bytes) is held under 128 MB too.
 */
#define DQ_MB ((size_t)1 << 20)
static size_t dq_slab_rows(const mpl_cuda_w4a16_tuning *t, int sms, int M, int K, int N, bool bias) {
    size_t row_bytes = (size_t)K * 2, rows;
    if (t->dq_slab_bytes) {
        rows = t->dq_slab_bytes / row_bytes;
    } else {
        size_t want = (size_t)2 * (size_t)sms * 128 * 128 / (size_t)M, bytes = want * row_bytes;
        if (bytes < 32 * DQ_MB) bytes = 32 * DQ_MB;
        if (bytes > 128 * DQ_MB) bytes = 128 * DQ_MB;
        rows = bytes / row_bytes;
    }
    if (bias && rows * (size_t)M * 4 > 128 * DQ_MB) rows = 128 * DQ_MB / ((size_t)M * 4);
    rows = rows >= 128 ? rows / 128 * 128 : rows / 16 * 16;
    if (rows < 16) rows = 16;
    size_t n16 = ((size_t)N + 15) / 16 * 16;
    return rows > n16 ? n16 : rows;
}

/*
 * y = x W^T by slabs of `rows` rows of W: dequantize the slab (scale applied, rounded to 16 bits)
 * into scratch, then cublasGemmEx(T, N) writes y[:, n0 .. n0 + rows) (column-major y^T = W_slab x^T).
 * With overlap, slab s + 1 is dequantized on the side stream into the other buffer while the GEMM
 * of slab s runs; buffer b is rewritten only after the GEMM that read it (event gemm[b]).
 */
static mpl_status run_dq(const packed_layer *p, const mpl_cuda_w4a16_tuning *t, const mpl_cuda_w4a16_args *a,
                         cudaStream_t stream) {
    /* 8-bit (two planes): the slabs are the layer's k wide; x (gathered, both planes) keeps rows of a->k */
    const int K = a->planes_k ? a->planes_k : a->k, N = a->n, M = a->m, dev = p->device, ldx = a->k;
    const size_t rows = dq_slab_rows(t, p->sms, M, K, N, a->bias != NULL);
    int nslabs = (int)(((size_t)N + rows - 1) / rows);
    int nbuf = t->dq_overlap && nslabs > 1 ? 2 : 1;
    size_t slab_bytes = (rows * (size_t)K * 2 + 255) & ~(size_t)255;
    /* with a bias: cuBLAS writes the fp32 product slab, our epilogue adds the bias and rounds once */
    size_t c_bytes = a->bias ? (rows * (size_t)M * 4 + 255) & ~(size_t)255 : 0;
    size_t total = DQ_BLAS_WS + (size_t)nbuf * slab_bytes + c_bytes;
    dq_ctx *b = NULL;
    mpl_status st = dq_ctx_take(dev, &b);
    if (st != MPL_OK) return st;
    char *scr = NULL;
    {
        cudaError_t e = cudaMallocFromPoolAsync((void **)&scr, total, g_dq[dev].pool, stream);
        if (e != cudaSuccess) {
            scr = NULL;
            st = cuda_fail(e, dev, "allocating dq scratch");
        }
    }
    cublasStatus_t bs = CUBLAS_STATUS_SUCCESS;
    if (st == MPL_OK) bs = cublasSetStream(b->h, stream); /* resets the workspace: set it after */
    if (st == MPL_OK && bs == CUBLAS_STATUS_SUCCESS) bs = cublasSetWorkspace(b->h, scr, DQ_BLAS_WS);
    if (st == MPL_OK && bs != CUBLAS_STATUS_SUCCESS) st = blas_fail(bs, "setting the cuBLAS stream and workspace");
    const float one = 1.0f, zero = 0.0f;
    float *cbuf = c_bytes ? (float *)(scr + DQ_BLAS_WS + (size_t)nbuf * slab_bytes) : NULL;
    const bool ov = nbuf == 2;
    if (st == MPL_OK && ov) {
        cudaError_t e = cudaEventRecord(b->fork, stream);
        if (e == cudaSuccess) e = cudaStreamWaitEvent(b->side, b->fork, 0);
        if (e != cudaSuccess) st = cuda_fail(e, dev, "forking the dq side stream");
    }
    const cudaDataType_t dt = a->act == MPL_CUDA_W4A16_ACT_F16 ? CUDA_R_16F : CUDA_R_16BF;
    for (int s = 0; s < nslabs && st == MPL_OK; s++) {
        int n0 = (int)((size_t)s * rows), ns = (int)((size_t)N - (size_t)n0 < rows ? (size_t)N - (size_t)n0 : rows);
        int buf = s % nbuf;
        char *w = scr + DQ_BLAS_WS + (size_t)buf * slab_bytes;
        cudaStream_t ds = ov ? b->side : stream;
        cudaError_t e = cudaSuccess;
        if (ov && s >= 2) e = cudaStreamWaitEvent(b->side, b->gemm[buf], 0);
        int le = e == cudaSuccess ? mpl_cuda_w4a16_launch_dq_slab(a, n0 / MPL_CUDA_W4A16_NT,
                                                                  (ns + MPL_CUDA_W4A16_NT - 1) / MPL_CUDA_W4A16_NT, w, K, ds)
                                  : 0;
        if (e == cudaSuccess && le) e = (cudaError_t)le;
        if (e == cudaSuccess && ov) e = cudaEventRecord(b->deq[buf], b->side);
        if (e == cudaSuccess && ov) e = cudaStreamWaitEvent(stream, b->deq[buf], 0);
        if (e != cudaSuccess) {
            st = cuda_fail(e, dev, "launching the dq dequantization");
            break;
        }
        if (cbuf)
            bs = cublasGemmEx(b->h, CUBLAS_OP_T, CUBLAS_OP_N, ns, M, K, &one, w, dt, K, a->x, dt, ldx, &zero, cbuf,
                              CUDA_R_32F, ns, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        else
            bs = cublasGemmEx(b->h, CUBLAS_OP_T, CUBLAS_OP_N, ns, M, K, &one, w, dt, K, a->x, dt, ldx, &zero,
                              (uint16_t *)a->y + n0, dt, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (bs != CUBLAS_STATUS_SUCCESS) {
            st = blas_fail(bs, "cublasGemmEx");
            break;
        }
        if (cbuf) {
            le = mpl_cuda_w4a16_launch_dq_bias(cbuf, (const uint16_t *)a->bias + n0, (uint16_t *)a->y + n0, M, ns, N,
                                               a->act, stream);
            if (le) {
                st = cuda_fail((cudaError_t)le, dev, "launching the dq bias epilogue");
                break;
            }
        }
        if (ov && (e = cudaEventRecord(b->gemm[buf], stream)) != cudaSuccess) st = cuda_fail(e, dev, "recording a dq event");
    }
    if (st != MPL_OK && ov) {
        /* rejoin the side stream whatever happened (a capture must not end with it forked) */
        if (cudaEventRecord(b->fork, b->side) == cudaSuccess) cudaStreamWaitEvent(stream, b->fork, 0);
    }
    if (scr) {
        cudaError_t e = cudaFreeAsync(scr, stream);
        if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, dev, "freeing dq scratch");
    }
    dq_ctx_give(dev, b);
    return st;
}

/* ---------- the other paths, and apply ---------- */

static mpl_status run_wg(const packed_layer *p, const mpl_cuda_w4a16_args *a, int streamk, cudaStream_t stream) {
    void *xt = NULL;
    cudaError_t ce = cudaMallocFromPoolAsync(&xt, mpl_cuda_w4a16_wg_scratch_bytes(a, streamk), p->pool, stream);
    if (ce != cudaSuccess) return cuda_fail(ce, p->device, "allocating wg x-tile scratch");
    int le = mpl_cuda_w4a16_launch_wg(a, streamk, xt, stream);
    ce = cudaFreeAsync(xt, stream);
    if (le) return cuda_fail((cudaError_t)le, p->device, streamk ? "launching the cuda_w4a16:wg-streamk kernels"
                                                                 : "launching the cuda_w4a16:wg kernels");
    if (ce != cudaSuccess) return cuda_fail(ce, p->device, "freeing wg x-tile scratch");
    return MPL_OK;
}

/* Path `path` on device pointers (x already permuted for act-order); ldx: x's row length (the kernels' a.k: the
 * packed k, or k_in where x_unpermuted holds). */
static mpl_status run_path(const packed_layer *p, int path, int m, const void *x, int ldx, const void *bias, void *y,
                           cudaStream_t stream) {
    const mpl_cuda_w4a16_tuning *t = tuning();
    const mpl_cuda_w4a16_args a = {
        .qweight = p->qweight,
        .scales = p->scales,
        .scales_lo = p->scales_lo,
        .zeros = p->zeros,
        .n = (int)p->meta.n,
        .k = ldx,
        .n_pad = (int)p->meta.n_pad,
        .k_pad = (int)p->meta.k_pad,
        .gs16 = p->gs16,
        .inv_gs16 = p->gs16 == MPL_CUDA_W4A16_ONE_GROUP ? 0.0f : 1.0f / (float)p->gs16,
        .scale_fmt = p->meta.scale_fmt,
        .act = (int)p->cfg.act,
        .m = m,
        .x = x,
        .bias = bias,
        .y = y,
        .device = p->device,
        .sms = p->sms,
        .cc = p->cc,
        .ksplit = t->ksplit,
        .skinny_nw = t->skinny_nw | (t->skinny_shared_x > 0   ? MPL_CUDA_W4A16_NW_SHARED_X
                                     : t->skinny_shared_x < 0 ? MPL_CUDA_W4A16_NW_OWN_X
                                                              : 0),
        .wg_map = p->wg_state == 0 ? p->wg_map : NULL,
        .planes_k = p->meta.planes == 2 ? (int)p->meta.k_in : 0,
        .halves = p->meta.halves,
        .thirds = p->meta.thirds,
        .wg_blocks = t->wg_blocks,
    };
    int e;
    switch (path) {
    case PATH_SKINNY_ROUNDED:
        e = mpl_cuda_w4a16_launch_skinny_rounded(&a, stream);
        return e ? cuda_fail((cudaError_t)e, p->device, "launching the cuda_w4a16:skinny-rounded kernel") : MPL_OK;
    case PATH_SKINNY:
        e = mpl_cuda_w4a16_launch_skinny(&a, stream);
        return e ? cuda_fail((cudaError_t)e, p->device, "launching the cuda_w4a16:skinny kernel") : MPL_OK;
    case PATH_WG_SK: return run_wg(p, &a, 1, stream);
    case PATH_WG: return run_wg(p, &a, 0, stream);
    case PATH_DQ: return run_dq(p, t, &a, stream);
    case PATH_TC:
        e = mpl_cuda_w4a16_launch_tc(&a, stream);
        return e ? cuda_fail((cudaError_t)e, p->device, "launching the cuda_w4a16:tc kernel") : MPL_OK;
    }
    return mpl_set_error(MPL_ERR_INTERNAL, "cuda_w4a16: path index %d: must be 0..%d", path, NPATHS - 1);
}

/* 8-bit layers without act-order: the layout's perm is the identity twice (both planes read channel j), and the
 * paths that read both planes of a chunk at once (skinny's FORM_W8, wg, dq: k % 64 == 0) read only x's first k_in
 * packed columns, so they take x as it is, rows of k_in: no gather kernel (at M = 1 a launch of a few us, 5-10% of
 * a small layer's call). tc and the skinny offset form (k % 64 != 0) read both planes' columns: gathered. */
static bool x_unpermuted(const packed_layer *p, int path) {
    return p->meta.planes == 2 && !p->cfg.act_order && p->meta.k_in % MPL_CUDA_W4A16_KC == 0 &&
           (path == PATH_SKINNY || path == PATH_WG || path == PATH_DQ);
}

static mpl_status device_apply(const packed_layer *p, int path, int m, const void *x, const void *bias, void *y,
                               cudaStream_t stream) {
    if (!p->perm) return run_path(p, path, m, x, (int)p->meta.k, bias, y, stream);
    if (x_unpermuted(p, path)) return run_path(p, path, m, x, (int)p->meta.k_in, bias, y, stream);
    size_t bytes = (size_t)m * (size_t)p->meta.k * 2;
    void *xp = NULL;
    cudaError_t e = cudaMallocFromPoolAsync(&xp, bytes, p->pool, stream);
    if (e != cudaSuccess) return cuda_fail(e, p->device, "allocating act-order scratch");
    int le = mpl_cuda_w4a16_launch_permute(x, p->perm, xp, m, (int)p->meta.k_in, (int)p->meta.k, stream);
    mpl_status st = le ? cuda_fail((cudaError_t)le, p->device, "launching the act-order permutation")
                       : run_path(p, path, m, xp, (int)p->meta.k, bias, y, stream);
    e = cudaFreeAsync(xp, stream);
    if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, p->device, "freeing act-order scratch");
    return st;
}

static mpl_status host_apply(const packed_layer *p, int path, int m, const void *x, const void *bias, void *y) {
    cudaStream_t stream = cudaStreamPerThread;
    size_t bx = (size_t)m * (size_t)p->meta.k_in * 2, by = (size_t)m * (size_t)p->meta.n * 2;
    size_t bb = bias ? (size_t)p->meta.n * 2 : 0;
    size_t ox = 0, ob = align256(bx), oy = align256(ob + bb), total = align256(oy + by);
    char *d = NULL;
    cudaError_t e = cudaMallocFromPoolAsync((void **)&d, total, p->pool, stream);
    if (e != cudaSuccess) return cuda_fail(e, p->device, "allocating device staging for host pointers");
    mpl_status st = MPL_OK;
    e = cudaMemcpyAsync(d + ox, x, bx, cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess && bias) e = cudaMemcpyAsync(d + ob, bias, bb, cudaMemcpyHostToDevice, stream);
    if (e != cudaSuccess) st = cuda_fail(e, p->device, "copying x and bias to the device");
    if (st == MPL_OK) st = device_apply(p, path, m, d + ox, bias ? d + ob : NULL, d + oy, stream);
    if (st == MPL_OK) {
        e = cudaMemcpyAsync(y, d + oy, by, cudaMemcpyDeviceToHost, stream);
        if (e != cudaSuccess) st = cuda_fail(e, p->device, "copying y to the host");
    }
    e = cudaFreeAsync(d, stream);
    if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, p->device, "freeing device staging");
    e = cudaStreamSynchronize(stream);
    if (st == MPL_OK && e != cudaSuccess) st = cuda_fail(e, p->device, "running the kernels");
    return st;
}

static mpl_status apply(const void *pp, const mpl_apply_args *a) {
    const packed_layer *p = pp;
    if (a->path < 0 || a->path >= NPATHS)
        return mpl_set_error(MPL_ERR_INTERNAL, "cuda_w4a16: path index %d: must be 0..%d", a->path, NPATHS - 1);
    const mpl_path_desc *row = &paths[a->path];
    if (a->m > row->m_limit)
        return mpl_set_error(MPL_ERR_UNSUPPORTED, "%s: m = %lld: runs at most %lld rows", row->name, (long long)a->m,
                             (long long)row->m_limit);
    if (a->m > (int64_t)0x7fffffff)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "cuda_w4a16: m = %lld: must be below 2^31", (long long)a->m);
    if ((a->path == PATH_WG || a->path == PATH_WG_SK) && p->wg_state != 0) {
        char msg[256];
        path_ready(p, a->path, msg, sizeof msg);
        return mpl_set_error(MPL_ERR_UNSUPPORTED, "%s", msg);
    }
    if (a->device_pointers && (((uintptr_t)a->x & 15) || ((uintptr_t)a->y & 15) || ((uintptr_t)a->bias & 1)))
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "cuda_w4a16: device pointers x = %p, y = %p: must be 16-byte aligned (bias %p: 2-byte)",
                             a->x, (void *)a->y, a->bias);
    int cur = -1;
    cudaError_t e = cudaGetDevice(&cur);
    if (e != cudaSuccess) return cuda_fail(e, p->device, "cudaGetDevice");
    if (cur != p->device && (e = cudaSetDevice(p->device)) != cudaSuccess) return cuda_fail(e, p->device, "cudaSetDevice");
    mpl_status st = a->device_pointers
                        ? device_apply(p, a->path, (int)a->m, a->x, a->bias, a->y, (cudaStream_t)a->stream)
                        : host_apply(p, a->path, (int)a->m, a->x, a->bias, a->y);
    if (cur != p->device) cudaSetDevice(cur);
    return st;
}

const mpl_kernel_desc mpl_kernel_cuda_w4a16 = {
    .name = "cuda_w4a16",
    .backend = MPL_BACKEND_CUDA,
    .layout = "cuda_w4a16",
    .requires = "CUDA device with compute capability 8.0+ (bf16 mma.sync, cp.async)",
    .isa = 0,
    .min_cc = 80,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .paths = paths,
    .npaths = NPATHS,
    .pack = pack,
    .path_ready = path_ready,
    .destroy = destroy,
    .workspace_size = workspace_size,
    .apply = apply,
    .weight_bytes = weight_bytes,
    .weight_rounding = weight_rounding,
};
