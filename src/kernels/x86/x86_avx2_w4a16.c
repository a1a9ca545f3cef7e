/*
 * x86_avx2_w4a16.c -- descriptor of the AVX2 W4A16 kernel (AVX2 + FMA + F16C):
 * the same layout and driver as x86_avx512_w4a16 with 8-lane operations; f32
 * FMA for both decode and prefill. Plain flags: runs before the ISA is known.
 */
#include "w4a16_x86.h"

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_xw_can_implement("x86_avx2_w4a16", c, msg, cap);
}

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, void **out) {
    return mpl_xw_kernel_pack(c, w, &mpl_xw_ops_avx2, MPL_XW_GEMM_F32, out);
}

const mpl_kernel_desc mpl_kernel_x86_avx2_w4a16 = {
    .name = "x86_avx2_w4a16",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a16",
    .requires = "avx2+fma+f16c",
    .isa = MPL_ISA_AVX2 | MPL_ISA_FMA | MPL_ISA_F16C,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .pack = pack,
    .destroy = mpl_xw_kernel_destroy,
    .workspace_size = mpl_xw_workspace_size,
    .apply = mpl_xw_apply,
    .weight_bytes = mpl_xw_weight_bytes,
};
