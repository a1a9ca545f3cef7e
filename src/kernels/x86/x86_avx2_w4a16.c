/*
 * x86_avx2_w4a16.c -- kernel x86_avx2_w4a16 (the avx2 level: AVX2 + FMA + F16C), for CPUs
 * without AVX-512: the same layout and driver as x86_avx512_w4a16 with 8-lane operations, f32
 * FMA for both paths. Plain flags: runs before the ISA is known.
 *
 * Switch, measured on Sapphire Rapids with this kernel's AVX2 code (CPU time per call, hot
 * weights; K = N = 4096 and K = 4096, N = 28672, as for x86_avx512_w4a16): decode ahead at
 * m=1 (1.0 vs 2.2 ms), equal at 2, prefill ahead from 4 (2.6 vs 4.3 ms).
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
                .m_max = 2,
                .m_limit = MPL_M_ANY,
                .why = "SPR, avx2 code, hot weights: decode ahead at m=1 (1.0 vs 2.2 ms), equal at m=2"},
    [PREFILL] = {.name = "x86_avx2_w4a16:prefill",
                 .requires = "",
                 .m_min = 3,
                 .m_max = MPL_M_ANY,
                 .m_limit = MPL_M_ANY,
                 .why = "SPR, avx2 code, hot weights: prefill ahead from m=4 (2.6 vs 4.3 ms), equal at m=2"},
};

static const mpl_x86_w4a16_path_impl impls[NPATHS] = {
    [DECODE] = {.xs = MPL_X86_W4A16_XS_F32, .prep = mpl_x86_w4a16_prep_f32_avx2, .gemv = mpl_x86_w4a16_gemv_avx2},
    [PREFILL] = {.xs = MPL_X86_W4A16_XS_F32, .prep = mpl_x86_w4a16_prep_f32_avx2, .gemm = mpl_x86_w4a16_gemm_avx2},
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
