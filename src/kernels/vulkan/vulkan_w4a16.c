/*
 * vulkan_w4a16.c -- the descriptor of kernel vulkan_w4a16 and its path table: W4A16 on any Vulkan 1.1 device
 * with subgroup arithmetic (tested on lavapipe and NVIDIA's driver; RADV on RDNA3/MI300 and ANV on Intel are
 * written for, not run here). Always compiled: without the Vulkan module (MPLINEAR_VULKAN=OFF) vk_none.c
 * makes every Vulkan query answer "not built" and the row refuses NOT_BUILT.
 *
 * Paths, in priority order, all on the one packed buffer of docs/layouts/vulkan_w4a16.md:
 *   gemv     m 1..4: the decode GEMV (shaders/w4a16_gemv.comp), subgroup reductions, 16-byte loads, its
 *            workgroup shape a pipeline's specialization constants (vk_runtime.h's MPL_VK_GEMV_*)
 *   tiled    m >= 5 (the fallback for every m): shared-memory tiled GEMM, 64 x 64 tiles
 * A cooperative-matrix GEMM (VK_KHR_cooperative_matrix; `mplinear info` lists each device's shapes) is not
 * written: it becomes a row before tiled when its shader exists (issue 14).
 * Every path keeps the exact W4A16 contract of mplinear.h (fp32 sums of exact integer weights times x per
 * group, scaled once per group, one output rounding on the host): weight_rounding is 0.
 */
#include "vulkan_w4a16.h"

#include <stdlib.h>
#include <string.h>

#include "vk_kernel.inc"

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    if (c->mode != MPL_MODE_W4A16)
        return mpl_refuse(msg, cap, MPL_REASON_MODE, "mode W4A8: vulkan_w4a16 runs W4A16 only (W4A8 configs use vulkan_w4a8)");
    /* 2- and 3-bit types as 4-bit codes, 8-bit as two 4-bit planes (docs/layouts/vulkan_w4a16.md): the 4-bit shaders */
    if (mpl_wtype_width(c->wtype) == 0)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                          "weight type %s: vulkan_w4a16 takes uint4b8, uint4 (zero points), int4, uint3b4, uint3, uint2b2, "
                          "uint2 (as 4-bit codes), uint8b128 and uint8 (as two 4-bit planes)",
                          mpl_wtype_name(c->wtype));
    if (mpl_wtype_bits(c->wtype) == 8 && c->k % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld with 8-bit weights: vulkan_w4a16 needs k a multiple of 16 (the high plane's groups "
                          "start on a 16-channel boundary)",
                          (long long)c->k);
    if (c->act != MPL_ACT_F16 && c->act != MPL_ACT_BF16)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE, "activation type %s: vulkan_w4a16 takes f16 or bf16",
                          mpl_act_name(c->act));
    if (c->group_size != -1 && c->group_size % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 16 (each 8-channel word lies in one group)",
                          (long long)c->group_size);
    mpl_vulkan_w4a16_layout l;
    if (mpl_vulkan_w4a16_plan(c, &l) != MPL_OK)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE, "k = %lld, n = %lld: the packed sizes overflow", (long long)c->k,
                          (long long)c->n);
    uint64_t big = l.qweight_bytes > l.scales_bytes ? l.qweight_bytes : l.scales_bytes;
    if (big > p->vulkan_max_range)
        return mpl_refuse(msg, cap, MPL_REASON_SHAPE,
                          "k = %lld, n = %lld: a packed section of %llu bytes exceeds Vulkan device %d's "
                          "maxStorageBufferRange of %llu bytes (splitting it over buffers is not implemented)",
                          (long long)c->k, (long long)c->n, (unsigned long long)big, p->vulkan_device,
                          (unsigned long long)p->vulkan_max_range);
    return MPL_REASON_OK;
}

static const mpl_path_desc paths[MPL_VULKAN_W4A16_NPATHS] = {
    [MPL_VULKAN_W4A16_PATH_GEMV] = {
        .name = "vulkan_w4a16:gemv",
        .requires = "",
        /* 4 rows of x per workgroup (registers); more rows rerun the workgroups over the weights */
        .m_min = 1, .m_max = 4, .m_limit = MPL_M_ANY,
        .why = "the decode GEMV serves m = 1..4 (one workgroup pass per row of x over the weights); tiled from 5: "
               "the switch not measured on a GPU. H200 (NVIDIA Vulkan), m = 1, uint4b8 g128, v13 default shape: "
               "8192 x 57344 135.2 us (1.85 TB/s, 43% of the Vulkan read probe, 1.79x cuda_w4a16), 4096 x 28672 "
               "50.2 us, 4096 x 14336 30.7 us (v10: 536.7 and 189.8 us; bench/results/vulkan/h200-v13.md)",
    },
    [MPL_VULKAN_W4A16_PATH_TILED] = {
        .name = "vulkan_w4a16:tiled",
        .requires = "",
        .m_min = 5, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY,
        .why = "the prefill fallback on every Vulkan device (64 x 64 tiles): not measured yet on a GPU",
    },
};

static const mpl_vk_shader path_shader[MPL_VULKAN_W4A16_NPATHS] = {
    [MPL_VULKAN_W4A16_PATH_GEMV] = MPL_VK_SHADER_GEMV,
    [MPL_VULKAN_W4A16_PATH_TILED] = MPL_VK_SHADER_TILED,
};

static const vk_kernel_def def = {"vulkan_w4a16", MPL_MODE_W4A16, path_shader, MPL_VULKAN_W4A16_NPATHS};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *plat, uint32_t enabled,
                       void **out) {
    (void)enabled; /* one image for every path */
    return vk_kernel_pack(&def, c, w, plat, out);
}

static mpl_status apply(const void *pp, const mpl_apply_args *a) { return vk_kernel_apply(&def, pp, a); }

mpl_status mpl_vulkan_w4a16_time(const void *packed, int path, int64_t m, double *seconds) {
    return vk_kernel_time(&def, packed, path, m, seconds);
}

const mpl_kernel_desc mpl_kernel_vulkan_w4a16 = {
    .name = "vulkan_w4a16",
    .backend = MPL_BACKEND_VULKAN,
    .layout = "vulkan_w4a16",
    .requires = "a Vulkan 1.1 device with subgroup arithmetic in compute shaders (MPLINEAR_VULKAN build)",
    .irregular_act_order = false,
    .can_implement = can_implement,
    .paths = paths,
    .npaths = MPL_VULKAN_W4A16_NPATHS,
    .pack = pack,
    .destroy = destroy,
    .workspace_size = workspace_size,
    .apply = apply,
    .weight_bytes = weight_bytes,
};
