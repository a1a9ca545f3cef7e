/*
 * x86_avx2_w4a8.c -- kernel x86_avx2_w4a8 (the avx2 level: AVX2 + FMA + F16C), W4A8 for CPUs
 * without VNNI: the 4-byte dot product is vpmaddubsw + vpmaddwd (avx2/w4a8_gemm.c, the body of
 * common/w4a8_ymm.inc); rows quantized by avx2/w4a8_quant.c. Layout: x86_w4a8; driver:
 * x86_w4a8_driver.c. Plain flags: this file runs before the ISA is known to exist.
 */
#include "x86_w4a8_driver.h"

enum { MADD, NPATHS };

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a8_can_implement("x86_avx2_w4a8", c, msg, cap);
}

static const mpl_path_desc paths[NPATHS] = {
    [MADD] = {.name = "x86_avx2_w4a8:madd",
              .requires = "",
              .m_min = 1,
              .m_max = MPL_M_ANY,
              .m_limit = MPL_M_ANY,
              .why = "the kernel's only path"},
};

static const mpl_x86_w4a8_path_impl impls[NPATHS] = {
    [MADD] = {.quant = mpl_x86_w4a8_quant_avx2, .gemm = mpl_x86_w4a8_gemm_avx2, .row_block = 1, .panel_block = 1},
};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                       void **out) {
    (void)p;
    (void)enabled;
    return mpl_x86_w4a8_create("x86_avx2_w4a8", c, w, impls, NPATHS, out);
}

const mpl_kernel_desc mpl_kernel_x86_avx2_w4a8 = {
    .name = "x86_avx2_w4a8",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a8",
    .requires = "avx2 level (avx2 fma f16c)",
    .isa = MPL_X86_LEVEL_AVX2,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .paths = paths,
    .npaths = NPATHS,
    .pack = pack,
    .destroy = mpl_x86_w4a8_destroy,
    .workspace_size = mpl_x86_w4a8_workspace_size,
    .apply = mpl_x86_w4a8_apply,
    .weight_bytes = mpl_x86_w4a8_weight_bytes,
};
