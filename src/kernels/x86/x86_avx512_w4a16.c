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
 *   vdpbf16ps prefill (Zen 4/5) was not measurable there: its switch is set to 4, between the
 *     two cases above.
 * vdpbf16ps is worth more than f32 FMA only without AMX: on Sapphire Rapids (the AMX parts) it
 * runs at half the FMA rate, on Zen 4/5 at twice it; it is listed after prefill-amx, so it runs
 * by default only where AMX cannot.
 */
#include "x86_w4a16_driver.h"

enum { DECODE, PREFILL_AMX, PREFILL_BF16, PREFILL_F32, NPATHS };

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

static mpl_reason bf16_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a16_needs_bf16("x86_avx512_w4a16:prefill-bf16", c, msg, cap);
}

/* Decode's upper end is the switch to the first prefill path that can run this config. */
static void decode_m_range(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max) {
    (void)m_min;
    if (c->act != MPL_ACT_BF16) return; /* f32 prefill: m_max stays 8 */
    if ((p->isa & MPL_X86_LEVEL_AMX) == MPL_X86_LEVEL_AMX)
        *m_max = 1;
    else if ((p->isa & MPL_X86_LEVEL_AVX512BF16) == MPL_X86_LEVEL_AVX512BF16)
        *m_max = 4;
}

static const mpl_path_desc paths[NPATHS] = {
    [DECODE] = {.name = "x86_avx512_w4a16:decode",
                .requires = "",
                .m_min = 1,
                .m_max = 8,
                .m_limit = MPL_M_ANY,
                .why = "SPR: decode ahead of f32 prefill up to m=8 (hot, 1.9 vs 2.2 ms), of AMX at m=1 only (cold "
                       "sweep); vdpbf16ps switch 4 not measured",
                .m_range = decode_m_range},
    [PREFILL_AMX] = {.name = "x86_avx512_w4a16:prefill-amx",
                     .requires = "amx level (AMX tile state granted by the OS); bf16 activations",
                     .isa = MPL_X86_LEVEL_AMX & ~MPL_X86_LEVEL_AVX512,
                     .m_min = 2,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "SPR sweep, cold: m=2..3 within 10% of decode, AMX ahead from m=4 (m=8 11.5 vs 18.7 ms)",
                     .can_implement = amx_can_implement},
    [PREFILL_BF16] = {.name = "x86_avx512_w4a16:prefill-bf16",
                      .requires = "avx512bf16 level; bf16 activations",
                      .isa = MPL_X86_LEVEL_AVX512BF16 & ~MPL_X86_LEVEL_AVX512,
                      .m_min = 5,
                      .m_max = MPL_M_ANY,
                      .m_limit = MPL_M_ANY,
                      .why = "not measured (no Zen 4/5 run yet): switch set between the AMX (1) and f32 (8) cases",
                      .can_implement = bf16_can_implement},
    [PREFILL_F32] = {.name = "x86_avx512_w4a16:prefill-f32",
                     .requires = "",
                     .m_min = 9,
                     .m_max = MPL_M_ANY,
                     .m_limit = MPL_M_ANY,
                     .why = "SPR, hot weights: decode ahead to m=8 (1.9 vs 2.2 ms), behind at 16"},
};

static const mpl_x86_w4a16_path_impl impls[NPATHS] = {
    [DECODE] = {.xs = MPL_X86_W4A16_XS_F32,
                .prep = mpl_x86_w4a16_prep_f32_avx512,
                .gemv = mpl_x86_w4a16_gemv_avx512,
                .gemv_blocks = MPL_X86_W4A16_AVX512_GEMV_BLOCKS},
    [PREFILL_AMX] = {.xs = MPL_X86_W4A16_XS_BF16,
                     .prep = mpl_x86_w4a16_prep_amx,
                     .gemm = mpl_x86_w4a16_gemm_amx,
                     .scratch_bytes = MPL_X86_W4A16_AMX_SCRATCH_BYTES},
    [PREFILL_BF16] = {.xs = MPL_X86_W4A16_XS_BF16,
                      .prep = mpl_x86_w4a16_prep_bf16_avx512,
                      .gemm = mpl_x86_w4a16_gemm_avx512bf16},
    [PREFILL_F32] = {.xs = MPL_X86_W4A16_XS_F32,
                     .prep = mpl_x86_w4a16_prep_f32_avx512,
                     .gemm = mpl_x86_w4a16_gemm_avx512},
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
