/*
 * x86_avx512vnni_w4a8.c -- kernel x86_avx512vnni_w4a8 (the avx512vnni level): W4A8 with the
 * vpdpbusd zmm micro-kernel (avx512vnni/w4a8_gemm.c) for decode and prefill, and AMX-INT8
 * tiles (amx/w4a8_gemm.c) for many rows where the CPU and the OS grant them. Rows are
 * quantized by avx512/w4a8_quant.c. Layout: x86_w4a8 (docs/layouts/x86_w4a8.md); driver:
 * x86_w4a8_driver.c. Plain flags: this file runs before the ISA is known to exist.
 */
#include "x86_w4a8_driver.h"

enum { AMX, VNNI, NPATHS };

/* AMX pays off from two row tiles up; below that, the VNNI micro-kernel streams the weights once. */
#define AMX_MIN_ROWS 32

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    return mpl_x86_w4a8_can_implement("x86_avx512vnni_w4a8", c, msg, cap);
}

/* The AMX path steps K 32 or 64 positions per tile product, inside one group. */
static mpl_reason amx_can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)p;
    const int64_t group_len = c->group_size == -1 ? c->k : c->group_size;
    if (group_len % 32 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "group length %lld (k = %lld, group size %lld): x86_avx512vnni_w4a8:amx needs a multiple "
                          "of 32 (its tile k-step)",
                          (long long)group_len, (long long)c->k, (long long)c->group_size);
    return MPL_REASON_OK;
}

static const mpl_path_desc paths[NPATHS] = {
    [AMX] = {.name = "x86_avx512vnni_w4a8:amx",
             .requires = "amx level (AMX tile state granted by the OS); group length a multiple of 32",
             .isa = MPL_X86_LEVEL_AMX & ~MPL_X86_LEVEL_AVX512VNNI,
             .m_min = AMX_MIN_ROWS,
             .m_max = MPL_M_ANY,
             .m_limit = MPL_M_ANY,
             .why = "AMX_MIN_ROWS = 32: AMX pays off from two 16-row tiles up; below, vnni streams the weights once "
                    "(not swept)",
             .can_implement = amx_can_implement},
    [VNNI] = {.name = "x86_avx512vnni_w4a8:vnni",
              .requires = "",
              .m_min = 1,
              .m_max = MPL_M_ANY,
              .m_limit = MPL_M_ANY,
              .why = "the kernel's only path below AMX_MIN_ROWS, and at any m without AMX"},
};

static const mpl_x86_w4a8_path_impl impls[NPATHS] = {
    [AMX] = {.quant = mpl_x86_w4a8_quant_avx512,
             .gemm = mpl_x86_w4a8_gemm_amx,
             .row_block = MPL_X86_W4A8_ROW_PAD,
             .panel_block = 2,
             .tiles = true},
    [VNNI] = {.quant = mpl_x86_w4a8_quant_avx512,
              .gemm = mpl_x86_w4a8_gemm_avx512vnni,
              .row_block = 1,
              .panel_block = 1},
};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                       void **out) {
    (void)p;
    (void)enabled;
    return mpl_x86_w4a8_create("x86_avx512vnni_w4a8", c, w, impls, NPATHS, out);
}

const mpl_kernel_desc mpl_kernel_x86_avx512vnni_w4a8 = {
    .name = "x86_avx512vnni_w4a8",
    .backend = MPL_BACKEND_CPU,
    .layout = "x86_w4a8",
    .requires = "avx512vnni level (avx2 fma f16c avx512f avx512bw avx512vl avx512dq avx512_vnni)",
    .isa = MPL_X86_LEVEL_AVX512VNNI,
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
