/*
 * x86_avx512_w4a16.c -- kernel x86_avx512_w4a16 (the avx512 level): decode in registers with
 * vpermps tables + FMA; prefill on AMX-BF16 tiles, vdpbf16ps (AVX512-BF16) or f32 FMA, each a
 * path row with its own ISA level. Layout: x86_w4a16 (docs/layouts/x86_w4a16.md). Plain flags:
 * this file runs before the ISA is known to exist.
 *
 * Default ranges (the decode/prefill switch). Measured on Sapphire Rapids (K = N = 4096 and
 * K = 4096, N = 28672): CPU time per call with hot weights, and bench/x86/mplbench --sweep with
 * cold weights, the paths taking turns call by call (bench/results/x86-Intel-R-Xeon-R-Processor.md):
 *   AMX prefill: decode ahead at m=1 (cold 11.5 vs 11.9 ms, 2 threads 5.25 vs 5.82); m=2..3
 *     within +-10% either way (1 thread favours decode, 2 threads AMX; hot, AMX 0.57 vs 0.65
 *     ms at m=2); AMX ahead from m=4 on (cold m=8: 11.5 vs 18.7 ms). The time rises
 *     smoothly across the switch.
 *   f32 prefill (f16/f32 activations): decode ahead up to m=8 (hot 1.9 vs 2.2 ms), behind at 16.
 * On AMD with AVX512-BF16 (Zen 4) the vdpbf16ps decode runs 4-bit bf16 at every m (faster than the
 * vdpbf16ps panel prefill at every m swept there: machine_switch below) and the other widths to m = 8-64;
 * the vdpbf16ps prefill is the AMD default above that. On Intel it measured slower than the f32 prefill (Sapphire
 * Rapids, and an Emerald Rapids VM without AMX).
 */
#include "x86_w4a16_driver.h"

enum { DECODE_BF16, DECODE, PREFILL_AMX, PREFILL_BF16, PREFILL_F32, NPATHS };

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    /* Every width of the layout (2, 3, 4, 8 bits): the 4-bit chunk in avx512/w4a16_gemv.c and
     * common/w4a16_zmm.inc's bf16 panel, the others in avx512/w4a16_gemv_widths.c and the _w panel
     * dequantizers; every path reads the same bytes. */
    return mpl_x86_w4a16_can_implement("x86_avx512_w4a16", c, msg, cap);
}

static mpl_reason amx_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:prefill-amx", c, msg, cap);
}

/* The vdpbf16ps decode: bf16 activations, every width (table lookups into bf16 pairs). */
static mpl_reason decode_bf16_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:decode-bf16", c, msg, cap);
}

static mpl_reason bf16_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:prefill-bf16", c, msg, cap);
}

/*
 * The decode/prefill switch per machine class (bench/x86/mplbench --sweep, cold weights, the paths
 * taking turns call by call; K = 4096, N = 14336 unless said):
 *   AMX granted: bf16 -> the f32 decode to m = 3 at 4 bits and to m = 4 at 2, 3 and 8 bits, then AMX;
 *     f16/f32 -> f32 prefill from m = 9. Emerald Rapids VM, 2026-12-05 (bench/results/xeon-emr/
 *     amx-switch-sweep.log), decode vs AMX ms, 1 / 2 threads: uint4b8 m = 3 3.38 vs 3.89 / 2.22 vs 3.14,
 *     m = 4 4.14 vs 3.88 / 2.73 vs 2.92 (level), m = 6 7.35 vs 4.04; uint8b128 m = 4 6.11 vs 8.46 / 2.62 vs
 *     3.77, m = 6 12.12 vs 11.25; uint3b4 m = 4 7.03 vs 9.82 / 3.07 vs 3.22; uint2b2 m = 4 4.07 vs 5.41 /
 *     2.22 vs 2.90, m = 6 6.09 vs 5.43. (Sapphire Rapids, before the decode's 4 streams per row: AMX from m = 2,
 *     m = 2..3 within 10% of the decode.)
 *   Intel without AMX, with or without AVX512-BF16 (Emerald Rapids VMs whose AMX, and on one also AVX512-BF16,
 *     the hypervisor hides): the f32 decode, then the f32 prefill, per width and zero points (the table below;
 *     neither path uses bf16 instructions, so both VMs are one class). With AVX512-BF16 (2026-12-02,
 *     bench/results/x86-intel-noamx.md, 4096x14336 1 thread): the vdpbf16ps prefill slower than the f32 prefill at
 *     every m (m = 64: 105.8 vs 76.7 ms), so it is never the default there. Without it (2026-12-07,
 *     bench/results/xeon-nobf16/, 4096x14336 and 14336x4096, 1 and 2 threads, bf16 and f16 activations, decode vs
 *     f32 prefill ms, 4096x14336 1 / 2 threads bf16): uint4b8 to m = 12 (m = 10 13.76 vs 15.48 / 7.45 vs 7.65,
 *     12 level within 4%, 14 18.61 vs 17.79 / 10.37 vs 10.61 mixed, 16 prefill ahead on three of four); uint4 to
 *     8 (m = 10 prefill ahead on three of four: 16.75 vs 15.73); uint2b2 to 24 (m = 24 26.50 vs 28.84 / 15.64
 *     vs 19.07, 32 mixed: 35.45 vs 34.50 / 18.08 vs 18.64), where the 2026-12-02 VM measured m = 20 level (19.4
 *     vs 19.0); uint2 to 12 (m = 10 ahead on all four, 12 within 4% either way, 16 prefill ahead: 17.95 vs
 *     15.97); uint3b4 and uint3 to 6 (uint3b4 m = 6 10.41 vs 15.71 / 5.40 vs 7.41, 8 level or prefill ahead;
 *     uint3 m = 6 within 7% either way, 8 prefill ahead: 15.16 vs 14.08 / 7.43 vs 6.48); 8-bit to 12 (uint8b128
 *     m = 12 19.15 vs 20.63 / 9.49 vs 10.07, 16 25.55 vs 24.71 / 12.58 vs 12.05; uint8 the same). The
 *     2026-12-02 VM's rows (2-bit to 16, 3-bit to 4, 8-bit to 8) were set from one shape at 1 thread.
 *   AMD with AVX512-BF16 (Zen 4, a 2-vCPU EPYC VM; 1 thread): bf16 4-bit -> the vdpbf16ps decode at every
 *     m, ahead of the vdpbf16ps prefill at every m swept (m = 2..2048: m = 4 2.42 vs 5.08 ms, 16 9.49 vs
 *     12.11, 64 35.84 vs 38.23, 512 287.6 vs 289.6, 2048 1167 vs 1199; from m = 512 only with the decode's
 *     row chunks, x in L2); the other widths bf16 -> vdpbf16ps prefill from m = 5 (not swept: set between
 *     the AMX (1) and f32 (8) cases); f16/f32 -> f32 from m = 9.
 *   Other AVX-512 CPUs (AMD without AVX512-BF16, or bf16-less activations there: not swept): f32 prefill from
 *     m = 9 (the SPR f32 case).
 *   Zero points take the switch of their width in the f32 decode on AMX machines: its tiles apply them once per
 *     group (avx512/w4a16_gemv.c, w4a16_gemv_widths.c), so a zero-point layer decodes near the symmetric one's
 *     cost; against the f32 prefill (Intel without AMX) they switch earlier at 2 and 4 bits.
 *     Until 2026-12-05 2-bit with zero points decoded one row per pass and stopped at m = 2; Xeon (EMR, AMX)
 *     VM, 4096x14336 uint2 f16, 1 thread, --sweep after the change: decode 2.56 / 10.55 / 21.18 ms at
 *     m = 2 / 8 / 16 vs f32 prefill 10.74 / 16.31 / 23.47.
 */
typedef struct {
    int64_t decode_max; /* the decode paths serve m = 1..decode_max */
    int prefill;        /* the prefill path from decode_max + 1 (-1: none, the decode serves every m) */
    int64_t bf16_from;  /* the vdpbf16ps decode serves m = bf16_from..decode_max, the f32 decode below it (0: never) */
} switch_point;

/* The row of a per-width switch table: widths 2, 3, 4, 8 */
static int width_row(mpl_wtype wt) {
    const int w = mpl_wtype_width(wt);
    return w == 2 ? 0 : w == 4 ? 2 : w == 8 ? 3 : 1;
}

static switch_point machine_switch(const mpl_config *c, const mpl_platform *p) {
    const bool bf16 = c->act == MPL_ACT_BF16, amx = (p->isa & MPL_X86_LEVEL_AMX) == MPL_X86_LEVEL_AMX;
    const bool avx512bf16 = (p->isa & MPL_X86_LEVEL_AVX512BF16) == MPL_X86_LEVEL_AVX512BF16;
    if (amx) return bf16 ? (switch_point){mpl_wtype_width(c->wtype) == 4 ? 3 : 4, PREFILL_AMX, 0}
                         : (switch_point){8, PREFILL_F32, 0};
    if (p->cpu_vendor == MPL_CPU_VENDOR_INTEL) {
        /* the last decode m, [width 2, 3, 4, 8][zero points] */
        static const int64_t intel[4][2] = {{24, 12}, {6, 6}, {12, 8}, {12, 12}};
        return (switch_point){intel[width_row(c->wtype)][c->zero_points ? 1 : 0], PREFILL_F32, 0};
    }
    /* AMD (and others) with AVX512-BF16, bf16 activations: the vdpbf16ps decode, then the vdpbf16ps prefill
     * (Zen 4 VM, 4096x14336, 1 thread, mplbench --sweep, cold; the decode-bf16 row's why has the figures):
     * 4-bit every m; 8-bit to m = 8; 2-bit to 64 (zero points: 16); 3-bit to 8, without zero points from m = 2
     * (the f32 decode's split-product tables are level or ahead at m = 1).
     * Zen 5 (family 0x1A; a 2-vCPU EPYC VM, 4096x14336 and 14336x4096, 1 and 2 threads, --sweep, cold; the
     * figures below are 4096x14336 at 1 thread): its vdpbf16ps prefill runs at the vdpbf16ps decode's rate from
     * fewer rows than Zen 4's, so 4-bit switches at m = 32 (m = 32 9.66 vs 10.22 ms, 40 14.22 vs 12.34, 64 18.39
     * vs 17.22, 512 146.7 vs 129.8) and 2-bit at 48 (40-48 within 2.5% either way, 64 17.43 vs 16.31); 3-bit
     * without zero points keeps the decode to 16 (m = 12 4.81 vs 5.46, 16 6.43 vs 6.44, 24 9.62 vs 8.28), with
     * them to 12 (m = 10 level, 14 6.80 vs 6.10); the zero-point 2- and 3-bit layers take the f32 decode at
     * m = 1..2 (uint2 m = 1 0.74 vs 1.35 ms, m = 2 0.98 vs 1.00; uint3 m = 1 0.96 vs 1.95, m = 2 1.46 vs 1.91);
     * 8-bit as Zen 4 (the f32 decode 4-8% ahead at m = 2..8, behind at m = 1: 1.69 vs 1.61). */
    if (bf16 && avx512bf16) {
        /* [Zen 5][width 2, 3, 4, 8][zero points] */
        static const switch_point amd[2][4][2] = {
            {{{64, PREFILL_BF16, 1}, {16, PREFILL_BF16, 1}},
             {{8, PREFILL_BF16, 2}, {8, PREFILL_BF16, 1}},
             {{MPL_M_ANY, -1, 1}, {MPL_M_ANY, -1, 1}},
             {{8, PREFILL_BF16, 1}, {8, PREFILL_BF16, 1}}},
            {{{48, PREFILL_BF16, 1}, {16, PREFILL_BF16, 3}},
             {{16, PREFILL_BF16, 2}, {12, PREFILL_BF16, 3}},
             {{32, PREFILL_BF16, 1}, {32, PREFILL_BF16, 1}},
             {{8, PREFILL_BF16, 1}, {8, PREFILL_BF16, 1}}},
        };
        const int zen5 = p->cpu_vendor == MPL_CPU_VENDOR_AMD && p->cpu_family >= 0x1A;
        return amd[zen5][width_row(c->wtype)][c->zero_points ? 1 : 0];
    }
    return (switch_point){8, PREFILL_F32, 0};
}

static void decode_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    switch_point sp = machine_switch(c, p);
    if (sp.bf16_from == 1) { /* the vdpbf16ps decode serves every decode m */
        *m_min = 2;
        *m_max = 1;
    } else {
        *m_max = sp.bf16_from ? sp.bf16_from - 1 : sp.decode_max;
    }
}
static void decode_bf16_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    switch_point sp = machine_switch(c, p);
    if (sp.bf16_from) {
        *m_min = sp.bf16_from;
        *m_max = sp.decode_max;
    } else {
        *m_min = 2;
        *m_max = 1;
    }
}

/* A prefill path's default range: from the switch on where it is the machine's prefill, else none. */
static void prefill_m_range(const mpl_config *c, const mpl_platform *p, int path, int64_t *m_min, int64_t *m_max) {
    switch_point sp = machine_switch(c, p);
    if (sp.prefill == path) {
        *m_min = sp.decode_max + 1;
    } else {
        *m_min = 2;
        *m_max = 1;
    }
}
static void amx_m_range(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    prefill_m_range(c, p, PREFILL_AMX, lo, hi);
}
static void bf16_m_range(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    prefill_m_range(c, p, PREFILL_BF16, lo, hi);
}
static void f32_m_range(const mpl_config *c, const mpl_platform *p, int64_t *lo, int64_t *hi) {
    prefill_m_range(c, p, PREFILL_F32, lo, hi);
}

static const mpl_path_desc paths[NPATHS] = {
    [DECODE_BF16] = {.name = "x86_avx512_w4a16:decode-bf16",
                     .requires = "avx512bf16 level; bf16 activations",
                     .isa = MPL_X86_LEVEL_AVX512BF16 & ~MPL_X86_LEVEL_AVX512,
                     .m_min = 1,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "default on AMD with AVX512-BF16 (Zen 4: every m at 4 bits; Zen 5: to m=32 at 4 bits, 48 at 2, 16 at 3, the f32 decode at m=1..2 for 2-/3-bit zero points: Zen 5 VM --sweep, 4096x14336 1 thread: 4-bit m=32 9.66 vs prefill 10.22 ms, 40 14.22 vs 12.34; machine_switch has the rest). Zen 4 (2-vCPU EPYC VM), 4096x14336 bf16, cold (mplbench): m=1 91-100% of read BW at 1 thread vs the f32 decode 53%; --sweep vs the vdpbf16ps prefill, 1 thread: m=16 9.49 vs 12.11 ms, 64 35.84 vs 38.23, 512 287.6 vs 289.6, 2048 1167 vs 1199. Other widths, same VM, 4096x14336 1 thread cold --sweep vs the f32 decode / vdpbf16ps prefill: 8-bit m=1..8 (m=1 within noise, 2.73-4.54 vs 2.58-4.29 ms, hot 4096x4096 0.727 vs 0.820; m=4 4.42-4.91 vs 5.66-5.91; m=8 9.08-9.48 vs prefill 9.39-10.18; m=12 prefill ahead); uint2b2 m=1..64 (m=1 1.66 vs 1.58, hot 0.295 vs 0.345; m=4 2.15 vs 3.96; m=64 41.6 vs prefill 44.8); uint2 m=1..16 (m=2 2.24 vs 4.70; m=16 11.6 vs prefill 12.4; m=24 17.9 vs 17.0); uint3 m=1..8 (m=1 2.66 vs 4.32-4.50; m=8 8.11 vs prefill 9.19; m=16 15.6 vs 13.2); uint3b4 m=2..8 (m=1: f32 decode 2.21 vs 2.22, hot 0.562 vs 0.596; m=2 2.64 vs 3.59; m=8 6.67 vs prefill 9.17; m=16 13.4 vs 13.1)",
                     .can_implement = decode_bf16_can_implement,
                     .m_range = decode_bf16_m_range},
    [DECODE] = {.name = "x86_avx512_w4a16:decode",
                .requires = "",
                .m_min = 1,
                .m_max = 8,
                .m_limit = MPL_M_ANY,
                .why = "per machine (cold sweeps, 4096x14336): AMX (EMR VM): ahead of AMX to m=3 (4-bit) / 4 (other "
                       "widths), of f32 prefill to m=8; Intel without AMX (EMR VMs, 2 shapes, 1-2 threads): to m=12 (4-bit; 8 with zero "
                       "points), 24 (2-bit; 12), 6 (3-bit), 12 (8-bit), e.g. uint2b2 m=24 26.50 vs 28.84 ms; "
                       "AMD bf16: m=1 for 3-bit without zero points (Zen 5 also m=1..2 for 2-/3-bit with zero points: uint2 m=1 0.74 "
                       "vs 1.35 ms), else none (decode-bf16 serves); else 8; zero points "
                       "as their width on AMX machines (EMR VM, uint2 f16: decode 21.18 vs f32 prefill 23.47 ms at m=16)",
                .m_range = decode_m_range},
    [PREFILL_AMX] = {.name = "x86_avx512_w4a16:prefill-amx",
                     .requires = "amx level (AMX tile state granted by the OS); bf16 activations",
                     .isa = MPL_X86_LEVEL_AMX & ~MPL_X86_LEVEL_AVX512,
                     .m_min = 4,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "EMR VM sweep, cold, 1/2 threads: after the f32 decode, from m=4 at 4 bits (m=3: decode 3.38 vs "
                            "3.89 ms; m=4 level, 4.14 vs 3.88 / 2.73 vs 2.92; m=6 7.35 vs 4.04) and from m=5 at 2, 3, 8 "
                            "bits (m=4 uint8b128 6.11 vs 8.46, uint2b2 4.07 vs 5.41; m=6 AMX ahead)",
                     .can_implement = amx_can_implement,
                     .m_range = amx_m_range},
    [PREFILL_BF16] = {.name = "x86_avx512_w4a16:prefill-bf16",
                      .requires = "avx512bf16 level; bf16 activations",
                      .isa = MPL_X86_LEVEL_AVX512BF16 & ~MPL_X86_LEVEL_AVX512,
                      .m_min = 5,
                      .m_max = MPL_M_ANY,
                      .m_limit = MPL_M_ANY,
                      .why = "default on AMD past decode-bf16 (its why): 8-bit and 3-bit from m=9, 2-bit from 65 (zero points 17); 4-bit: the vdpbf16ps decode is "
                             "faster at every m on Zen 4); Zen 5: 4-bit from m=33 (m=512 129.8 vs 146.7 ms), 2-bit from 49, 3-bit from 17 "
                             "(zero points 13), 8-bit from 9; slower than f32 prefill at every m on Intel without AMX (m=64: "
                             "105.8 vs 76.7 ms)",
                      .can_implement = bf16_can_implement,
                      .m_range = bf16_m_range},
    [PREFILL_F32] = {.name = "x86_avx512_w4a16:prefill-f32",
                     .requires = "",
                     .m_min = 9,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "from the decode switch where neither AMX nor (on AMD) vdpbf16ps takes bf16 prefill; SPR, "
                            "hot weights: decode ahead to m=8 (1.9 vs 2.2 ms), behind at 16; Intel without AMX from "
                            "m=7-25 by width (the decode's why)",
                     .m_range = f32_m_range},
};

static const mpl_x86_w4a16_path_impl impls[NPATHS] = {
    [DECODE_BF16] = {.xs = MPL_X86_W4A16_XS_BF16,
                     .prep = mpl_x86_w4a16_prep_bf16_rows_avx512,
                     .gemv = mpl_x86_w4a16_gemv_avx512bf16,
                     .gemv_blocks = MPL_X86_W4A16_AVX512_GEMV_BLOCKS,
                     /* half of Zen 4's 1 MiB L2 per core */
                     .gemv_chunk_bytes = 512u << 10},
    [DECODE] = {.xs = MPL_X86_W4A16_XS_F32,
                .prep = mpl_x86_w4a16_prep_f32_avx512,
                .gemv = mpl_x86_w4a16_gemv_avx512,
                .gemv_blocks = MPL_X86_W4A16_AVX512_GEMV_BLOCKS},
    [PREFILL_AMX] = {.xs = MPL_X86_W4A16_XS_BF16,
                     .prep = mpl_x86_w4a16_prep_amx,
                     .gemm = mpl_x86_w4a16_gemm_amx,
                     .scratch_bytes = MPL_X86_W4A16_AMX_SCRATCH_BYTES,
                     /* 512 rows where x of 128 overflows L2 (K > 4096) or the weights are 8-bit: a chunk of 32 rows
                      * (K = 14336) re-dequantized the weights 16 times at m = 512, costlier than x's L2 misses (EMR,
                      * 14336 x 4096, m = 512, 1 thread: uint4b8 79 -> 68 ms, uint8b128 93 -> 73 ms with 128 rows);
                      * 512 against 128 rows (EMR VM with its AMX shared, best of 5 alternating runs, 1 / 2 threads,
                      * bench/results/x86-intel-zp.md): 14336 x 4096 m = 512 uint4b8 89.8 / 74.3 -> 86.0 / 57.3 ms,
                      * m = 1024 198.9 / 111.1 -> 174.6 / 103.1; uint8b128 95.7 / 55.9 -> 88.4 / 52.8, m = 1024
                      * 195.2 / 110.8 -> 169.5 / 101.3; 4096 x 4096 uint8b128 m = 512 27.0 / 17.2 -> 24.4 / 15.7;
                      * but 4-bit where 128 rows of x fit (K = 4096) keeps the L2 rule: 4096 x 14336 m = 512 80.8 vs
                      * 92.8 ms with 512 rows) */
                     .mchunk_spill = 512,
                     .mchunk_spill_w8 = true},
    [PREFILL_BF16] = {.xs = MPL_X86_W4A16_XS_BF16,
                      .prep = mpl_x86_w4a16_prep_bf16_avx512,
                      .gemm = mpl_x86_w4a16_gemm_avx512bf16,
                      /* 128 rows where x of 128 overflows half of L2 (K > 4096) or the weights are 8-bit: the L2 rule's
                       * 32 rows at K = 14336 re-dequantized and re-read the weights 16 times at m = 512 (Zen 5 2-vCPU
                       * EPYC VM, 14336 x 4096, m = 512, 1 thread, cold, mplbench: uint3b4 169.6 ms with 32 rows,
                       * 133.5 with 128, 130.4 with 256, 157.6 with 512 (x then streams from L3 block after block);
                       * uint8b128 171.4 / 134.0 / 139.1 / 140.5; m = 64: uint3b4 20.7 -> 17.5 ms) */
                      .mchunk_spill = 128,
                      .mchunk_spill_w8 = true},
    [PREFILL_F32] = {.xs = MPL_X86_W4A16_XS_F32,
                     .prep = mpl_x86_w4a16_prep_f32_avx512,
                     .gemm = mpl_x86_w4a16_gemm_avx512,
                     /* 128 rows where K > 4096 (the L2 rule gives 32 rows of f32 x at K = 14336: 16 weight passes at
                      * m = 512); not for 8-bit at K <= 4096 (64 rows fit; 128-512 were level or slower there). EMR VM
                      * without AMX / AVX512-BF16, 14336 x 4096, cold, best of 3 alternating runs, 32 -> 128 rows
                      * (bench/results/x86-intel-zp.md, session 49), 1 thread: m = 48 1.08-1.17x at every width
                      * (uint8b128 46.1 -> 40.2 ms), m = 64 1.08-1.14x, uint8b128 1.06-1.07x at m = 128-1024 (461.6 ->
                      * 435.2 at 512: the 4-bit rate), 2-, 3-, 4-bit level there (0.98-1.04x); 2 threads 0.95-1.33x.
                      * 256 and 512 rows gained nothing more and cost 4-bit at m = 512 (1 thread: 476.3 and 571.8 ms
                      * against 439.3 with 128, bench/results/xeon-emr/prefill-f32-chunk-sizes-s49.log) */
                     .mchunk_spill = 128},
};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                       void **out) {
    (void)p;
    (void)enabled;
    return mpl_x86_w4a16_create(c, w, &mpl_x86_w4a16_ops_avx512, impls, NPATHS, out);
}

const mpl_kernel_desc mpl_kernel_x86_avx512_w4a16 = {
    .name = "x86_avx512_w4a16",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a16",
    .requires = "avx512 level (avx2 fma f16c avx512f avx512bw avx512vl avx512dq)",
    .isa = MPL_X86_LEVEL_AVX512,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .paths = paths,
    .npaths = NPATHS,
    .pack = pack,
    .destroy = mpl_x86_w4a16_destroy,
    .workspace_size = mpl_x86_w4a16_workspace_size,
    .apply = mpl_x86_w4a16_apply,
    .weight_bytes = mpl_x86_w4a16_weight_bytes,
};
