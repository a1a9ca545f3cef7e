/*
 * vulkan_w4a8.c -- the descriptor of kernel vulkan_w4a8 and its path table: W4A8 (mplinear.h "W4A8 semantics
 * (exact)") on any Vulkan 1.1 device with subgroup arithmetic (tested on lavapipe only; NVIDIA, RADV and ANV
 * are written for, not run). Always compiled: without the Vulkan module (MPLINEAR_VULKAN=OFF) vk_none.c makes
 * every Vulkan query answer "not built" and the row refuses NOT_BUILT.
 *
 * It is vulkan_w4a16's layer with other shaders: the same packed image (docs/layouts/vulkan_w4a16.md, act-order
 * resolved at pack, one upload) and the same host runtime (vk_layer.c, vk_instance.c). The activations are
 * quantized on the host, before the upload, by mpl_quantize_row_i8 (the function ref calls: q and sx are ref's
 * bits; O(m k) work against the shaders' O(m n k)); each row goes to the device as k_pad int8 values and its
 * sx, half the bytes of a 16-bit row (shaders/w4a8_common.glsl).
 *
 * Paths, in priority order:
 *   gemv     m 1..4: the decode GEMV (shaders/w4a8_gemv.comp): int32 group sums in shared memory, folded in
 *            group order by one thread per output channel
 *   tiled    m >= 5 (the fallback for every m): shared-memory tiled GEMM, 64 x 64 tiles, int32 tiles
 *            (shaders/w4a8_tiled.comp)
 * Both compute isum_g exactly in int32 (plain multiply-adds; config validation keeps 127 * max|w| * group
 * length below 2^31), then y = (sum_g scale * float(isum_g)) * sx + bias with ref's operations in ref's order
 * and no contraction (GLSL precise): exact data is bit-identical to ref, and every datum is to the tolerance
 * of mplinear.h's W4A8 semantics. weight_rounding is 0.
 */
#include "vulkan_w4a8.h"

#include <stdlib.h>
#include <string.h>

#include "vk_kernel.inc"

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    if (c->mode != MPL_MODE_W4A8)
        return mpl_refuse(msg, cap, MPL_REASON_MODE,
                          "mode W4A16: vulkan_w4a8 runs W4A8 only (activations quantized to int8); W4A16 configs "
                          "use vulkan_w4a16");
    /* 2- and 3-bit types as 4-bit codes (docs/layouts/vulkan_w4a16.md): the 4-bit shaders, the 4-bit bytes. Not
     * 8-bit: its two planes' integer group sums would be scaled apart, where the W4A8 semantics scale one exact
     * isum per group (mplinear.h) */
    if (mpl_wtype_width(c->wtype) == 0 || mpl_wtype_bits(c->wtype) == 8)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                          "weight type %s: vulkan_w4a8 takes uint4b8, uint4 (zero points), int4, uint3b4, uint3, uint2b2 "
                          "and uint2 (as 4-bit codes); 8-bit layers' two planes would scale each group's integer sum in "
                          "two parts, not once as the W4A8 semantics say (vulkan_w4a16 runs them in W4A16 mode)",
                          mpl_wtype_name(c->wtype));
    if (c->act != MPL_ACT_F16 && c->act != MPL_ACT_BF16)
        return mpl_refuse(msg, cap, MPL_REASON_ACT_TYPE, "activation type %s: vulkan_w4a8 takes f16 or bf16",
                          mpl_act_name(c->act));
    if (c->group_size != -1 && c->group_size % 16 != 0)
        return mpl_refuse(msg, cap, MPL_REASON_GROUP_SIZE,
                          "group size %lld: must be -1 or a multiple of 16 (each 16-channel half of a code load lies "
                          "in one group)",
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

static const mpl_path_desc paths[MPL_VULKAN_W4A8_NPATHS] = {
    [MPL_VULKAN_W4A8_PATH_GEMV] = {
        .name = "vulkan_w4a8:gemv",
        .requires = "",
        /* 4 rows of x per workgroup, one pass each over the weights (as vulkan_w4a16:gemv) */
        .m_min = 1, .m_max = 4, .m_limit = MPL_M_ANY,
        .why = "the decode GEMV serves m = 1..4, tiled from 5, as vulkan_w4a16 splits them: correctness only, "
               "not timed on a GPU (lavapipe)",
    },
    [MPL_VULKAN_W4A8_PATH_TILED] = {
        .name = "vulkan_w4a8:tiled",
        .requires = "",
        .m_min = 5, .m_max = MPL_M_ANY, .m_limit = MPL_M_ANY,
        .why = "the prefill fallback on every Vulkan device (64 x 64 int32 tiles): correctness only, not timed on "
               "a GPU (lavapipe)",
    },
};

static const mpl_vk_shader path_shader[MPL_VULKAN_W4A8_NPATHS] = {
    [MPL_VULKAN_W4A8_PATH_GEMV] = MPL_VK_SHADER_W4A8_GEMV,
    [MPL_VULKAN_W4A8_PATH_TILED] = MPL_VK_SHADER_W4A8_TILED,
};

static const vk_kernel_def def = {"vulkan_w4a8", MPL_MODE_W4A8, path_shader, MPL_VULKAN_W4A8_NPATHS};

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *plat, uint32_t enabled,
                       void **out) {
    (void)enabled; /* one image for every path */
    return vk_kernel_pack(&def, c, w, plat, out);
}

static mpl_status apply(const void *pp, const mpl_apply_args *a) { return vk_kernel_apply(&def, pp, a); }

mpl_status mpl_vulkan_w4a8_time(const void *packed, int path, int64_t m, double *seconds) {
    return vk_kernel_time(&def, packed, path, m, seconds);
}

const mpl_kernel_desc mpl_kernel_vulkan_w4a8 = {
    .name = "vulkan_w4a8",
    .backend = MPL_BACKEND_VULKAN,
    .layout = "vulkan_w4a16",
    .requires = "a Vulkan 1.1 device with subgroup arithmetic in compute shaders (MPLINEAR_VULKAN build)",
    .irregular_act_order = false,
    .can_implement = can_implement,
    .paths = paths,
    .npaths = MPL_VULKAN_W4A8_NPATHS,
    .pack = pack,
    .destroy = destroy,
    .workspace_size = workspace_size,
    .apply = apply,
    .weight_bytes = weight_bytes,
};
