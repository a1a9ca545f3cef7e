/*
 * vulkan_w4a16.c -- the descriptor of kernel vulkan_w4a16 and its path table: W4A16 on any Vulkan 1.1 device
 * with subgroup arithmetic (tested on lavapipe and NVIDIA's driver; RADV on RDNA3/MI300 and ANV on Intel are
 * written for, not run here). Always compiled: without the Vulkan module (MPLINEAR_VULKAN=OFF) vk_none.c
 * makes every Vulkan query answer "not built" and the row refuses NOT_BUILT.
 *
 * Paths, in priority order, all on the one packed buffer of docs/layouts/vulkan_w4a16.md:
 *   gemv     m 1..4: the decode GEMV (shaders/w4a16_gemv.comp), subgroup reductions, 16-byte loads
 *   tiled    m >= 5 (the fallback for every m): shared-memory tiled GEMM, 64 x 64 tiles
 * A cooperative-matrix GEMM (VK_KHR_cooperative_matrix; `mplinear info` lists each device's shapes) is not
 * written: it becomes a row before tiled when its shader exists (issue 14).
 * Every path keeps the exact W4A16 contract of mplinear.h (fp32 sums of exact integer weights times x per
 * group, scaled once per group, one output rounding on the host): weight_rounding is 0.
 */
#include "vulkan_w4a16.h"

#include <stdlib.h>
#include <string.h>

#include "../kernels.h"

typedef struct packed_layer {
    mpl_config cfg;
    size_t held_bytes; /* qweight + scales + zeros */
    mpl_vk_layer *vk;
} packed_layer;

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    if (c->mode != MPL_MODE_W4A16)
        return mpl_refuse(msg, cap, MPL_REASON_MODE, "mode W4A8: vulkan_w4a16 runs W4A16 only (W4A8 configs use vulkan_w4a8)");
    if (c->wtype != MPL_WTYPE_UINT4B8 && c->wtype != MPL_WTYPE_UINT4 && c->wtype != MPL_WTYPE_INT4)
        return mpl_refuse(msg, cap, MPL_REASON_WEIGHT_TYPE,
                          "weight type %s: vulkan_w4a16 takes the 4-bit types uint4b8, uint4 (zero points) and int4",
                          mpl_wtype_name(c->wtype));
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
               "the switch not measured on a GPU. H200 (NVIDIA Vulkan), m = 1, 8192 x 57344: v10 shader 536.7 us, "
               "v11 ancestors 178.5 us (A) and 126.9 us (D, an m = 1 probe); the tree's version not timed "
               "(bench/results/vulkan/h200-v11.md)",
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

static mpl_status pack(const mpl_config *c, const mpl_canonical *w, const mpl_platform *plat, uint32_t enabled,
                       void **out) {
    (void)enabled;
    *out = NULL;
    packed_layer *p = calloc(1, sizeof *p);
    if (!p) return mpl_set_error(MPL_ERR_OUT_OF_MEMORY, "vulkan_w4a16: out of memory");
    p->cfg = *c;
    mpl_vulkan_w4a16_layout l;
    mpl_status st = mpl_vulkan_w4a16_pack(c, w, &l);
    if (st == MPL_OK) {
        p->held_bytes = l.qweight_bytes + l.scales_bytes + l.zeros_bytes;
        st = mpl_vk_layer_create(plat->vulkan_device, &l, c->act, MPL_MODE_W4A16, &p->vk);
        mpl_vulkan_w4a16_layout_free(&l);
    }
    if (st != MPL_OK) {
        free(p);
        return st;
    }
    *out = p;
    return MPL_OK;
}

static void destroy(void *pp) {
    packed_layer *p = pp;
    if (!p) return;
    mpl_vk_layer_destroy(p->vk);
    free(p);
}

static size_t workspace_size(const void *pp, int64_t m, int threads, int path) {
    (void)pp, (void)m, (void)threads, (void)path;
    return 0; /* the layer's own staging and device scratch (vk_layer.c) */
}

static mpl_status apply(const void *pp, const mpl_apply_args *a) {
    const packed_layer *p = pp;
    if (a->device_pointers)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan_w4a16: device pointers are not supported (host pointers only)");
    if (a->path < 0 || a->path >= MPL_VULKAN_W4A16_NPATHS)
        return mpl_set_error(MPL_ERR_INTERNAL, "vulkan_w4a16: path %d cannot run", a->path);
    return mpl_vk_layer_apply(p->vk, path_shader[a->path], a->m, a->x, a->bias, a->y);
}

static size_t weight_bytes(const void *pp) { return ((const packed_layer *)pp)->held_bytes; }

mpl_status mpl_vulkan_w4a16_time(const void *packed, int path, int64_t m, double *seconds) {
    const packed_layer *p = packed;
    if (path < 0 || path >= MPL_VULKAN_W4A16_NPATHS)
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "vulkan_w4a16: path %d cannot run", path);
    return mpl_vk_layer_time(p->vk, path_shader[path], m, seconds);
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
