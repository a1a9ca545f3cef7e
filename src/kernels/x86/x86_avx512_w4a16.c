/*
 * x86_avx512_w4a16.c -- descriptor of the AVX-512 W4A16 kernel: decode in
 * registers with vpermps tables + FMA; prefill on AMX-BF16 tiles where the
 * CPU and OS grant them (bf16 activations), else vdpbf16ps (AVX512-BF16), else
 * f32 FMA. Layout: x86_w4a16 (docs/layouts/x86_w4a16.md). Plain flags: this
 * file runs before the ISA is known to exist.
 */
#include "w4a16_x86.h"

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_xw_can_implement("x86_avx512_w4a16", c, msg, cap);
}

/* Prefill kind for this CPU. vdpbf16ps is preferred over f32 FMA only without AMX: on
 * Sapphire Rapids (the AMX parts) it runs at half the FMA rate, on Zen 4/5 at twice it. */
static mpl_xw_gemm_kind gemm_kind(const mpl_config *c) {
    const mpl_platform *p = mpl_platform_current();
    if (c->act != MPL_ACT_BF16) return MPL_XW_GEMM_F32;
    const uint32_t amx = MPL_ISA_AMX_TILE | MPL_ISA_AMX_BF16;
    if ((p->isa & amx) == amx && mpl_xw_amx_available()) return MPL_XW_GEMM_AMX;
    if (p->isa & MPL_ISA_AVX512_BF16) return MPL_XW_GEMM_BF16;
    return MPL_XW_GEMM_F32;
}

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, void **out) {
    return mpl_xw_kernel_pack(c, w, &mpl_xw_ops_avx512, gemm_kind(c), out);
}

const mpl_kernel_desc mpl_kernel_x86_avx512_w4a16 = {
    .name = "x86_avx512_w4a16",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a16",
    .requires = "avx512f+avx512bw+avx512vl+avx512dq (avx512_bf16 and amx_bf16 used when present)",
    .isa = MPL_ISA_AVX512F | MPL_ISA_AVX512BW | MPL_ISA_AVX512VL | MPL_ISA_AVX512DQ | MPL_ISA_AVX2 | MPL_ISA_FMA |
           MPL_ISA_F16C,
    .irregular_act_order = false,
    .can_implement = can_implement,
    .pack = pack,
    .destroy = mpl_xw_kernel_destroy,
    .workspace_size = mpl_xw_workspace_size,
    .apply = mpl_xw_apply,
    .weight_bytes = mpl_xw_weight_bytes,
};
