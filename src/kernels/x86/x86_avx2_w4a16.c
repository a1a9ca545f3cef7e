/*
 * x86_avx2_w4a16.c -- kernel x86_avx2_w4a16 (the avx2 level: AVX2 + FMA + F16C), for CPUs
 * without AVX-512: the same layout and driver as x86_avx512_w4a16 with 8-lane operations, f32
 * FMA for both paths. Plain flags: runs before the ISA is known.
 *   decode  (avx2/w4a16_gemv.c): weights dequantized in registers, runs of up to 4 rows per
 *           dequantized vector; FMA-bound from 4 rows (~80 GFLOP/s a core on Zen 3).
 *   prefill (avx2/w4a16_gemm.c): an L1 panel of dequantized weights per group and 16 channels,
 *           6 x 16 FMA tiles over x packed per tile (~90 GFLOP/s a core, 99 peak).
 *
 * Switch: bench/x86/mplbench --sweep, cold weights, the two paths taking turns call by call, on
 * a 2-vCPU AMD EPYC (Zen 3) VM (bench/results/x86-zen3-avx2.md):
 *   4096x4096,  1 thread:  m=8  decode 4.97 vs 5.33 ms, m=10 equal (5.21 vs 5.19), m=12 prefill
 *                          6.95 vs 7.30, m=16 7.32 vs 7.96;
 *               2 threads: m=8  decode 2.52 vs 2.82, m=12 prefill 3.32 vs 3.66;
 *   4096x28672, 1 thread:  m=8  decode 33.9 vs 37.8 ms, m=10 prefill 38.7 vs 39.8, m=16 59.3 vs
 *                          66.2;
 *               2 threads: m=8  decode 16.2 vs 18.5, m=10 prefill 21.8 vs 24.9.
 * So decode to m = 8, prefill from 9 (m = 9..10 within the machine's noise either way).
 * Widths: both paths take the 2-, 3-, 4- and 8-bit layouts (avx2/w4a16_gemv_widths.c and the
 * panel dequantizer of avx2/w4a16_gemm.c for the other widths); the switch above was swept for
 * 4-bit only and is kept for every width (bench/results/x86-widths.md has the widths' rows).
 */
#include "x86_w4a16_driver.h"

enum { DECODE, PREFILL, NPATHS };

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_can_implement("x86_avx2_w4a16", c, msg, cap);
}

static const mpl_path_desc paths[NPATHS] = {
    [DECODE] = {.name = "x86_avx2_w4a16:decode",
                .requires = "",
                .m_min = 1,
                .m_max = 8,
                .m_limit = MPL_M_ANY,
                .why = "Zen 3 cold sweep, 1-2 threads, 4-bit: decode ahead to m=8 (4096x28672: 33.9 vs 37.8 ms), "
                       "even at 10, prefill ahead from 12; the 2/3/8-bit layouts keep this switch (not swept per width)"},
    [PREFILL] = {.name = "x86_avx2_w4a16:prefill",
                 .requires = "",
                 .m_min = 9,
                 .m_max = MPL_M_ANY,
                 .m_limit = MPL_M_ANY,
                 .why = "Zen 3 cold sweep, 1-2 threads: prefill ahead from m=10-12 (4096x28672 m=10: 38.7 vs "
                        "39.8 ms; 4096x4096 m=12: 6.95 vs 7.30)"},
};

static const mpl_x86_w4a16_path_impl impls[NPATHS] = {
    [DECODE] = {.xs = MPL_X86_W4A16_XS_F32, .prep = mpl_x86_w4a16_prep_f32_avx2, .gemv = mpl_x86_w4a16_gemv_avx2},
    [PREFILL] = {.xs = MPL_X86_W4A16_XS_F32_TILES,
                 .prep = mpl_x86_w4a16_prep_tiles_avx2,
                 .gemm = mpl_x86_w4a16_gemm_avx2,
                 .mtile = MPL_X86_W4A16_AVX2_MTILE,
                 .mchunk = MPL_X86_W4A16_AVX2_MCHUNK},
};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                       void **out) {
    (void)p;
    (void)enabled;
    return mpl_x86_w4a16_create(c, w, &mpl_x86_w4a16_ops_avx2, impls, NPATHS, out);
}

const mpl_kernel_desc mpl_kernel_x86_avx2_w4a16 = {
    .name = "x86_avx2_w4a16",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a16",
    .requires = "avx2 level (avx2 fma f16c)",
    .isa = MPL_X86_LEVEL_AVX2,
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
