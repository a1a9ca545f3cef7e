/* vk_none.c -- the Vulkan module when it is not built (MPLINEAR_VULKAN=OFF): no devices, every call refuses. */
#include <stdio.h>

#include "vk_runtime.h"

#define NOT_BUILT "library built without Vulkan (MPLINEAR_VULKAN=OFF, or no Vulkan headers or shader compiler)"

int mpl_vulkan_built(void) { return 0; }

void mpl_vulkan_platform(const mpl_options *opt, mpl_platform *out) {
    out->vulkan_devices = 0;
    out->vulkan_device = opt ? opt->vulkan_device : 0;
    out->vulkan_caps = 0;
    out->vulkan_max_range = 0;
}

int mpl_vulkan_devices(char *note, size_t cap) {
    if (note && cap) snprintf(note, cap, "%s", NOT_BUILT);
    return 0;
}

mpl_status mpl_vulkan_device_get(int i, mpl_vulkan_device_info *out) {
    (void)out;
    return mpl_set_error(MPL_ERR_INVALID_ARGUMENT, "Vulkan device %d: there are none (%s)", i, NOT_BUILT);
}

mpl_status mpl_vk_layer_create(int device, const mpl_vulkan_w4a16_layout *l, mpl_act act, mpl_mode mode,
                               mpl_vk_layer **out) {
    (void)device, (void)l, (void)act;
    *out = NULL;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "%s: %s", mode == MPL_MODE_W4A8 ? "vulkan_w4a8" : "vulkan_w4a16", NOT_BUILT);
}

mpl_status mpl_vk_layer_apply(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, const void *x, const void *bias, void *y) {
    (void)L, (void)sh, (void)m, (void)x, (void)bias, (void)y;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan_w4a16: %s", NOT_BUILT);
}

void mpl_vk_layer_destroy(mpl_vk_layer *L) { (void)L; }

mpl_status mpl_vk_layer_time(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, double *seconds) {
    (void)L, (void)sh, (void)m, (void)seconds;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan_w4a16: %s", NOT_BUILT);
}

mpl_status mpl_vk_copy_rate(int device, size_t bytes, double *bytes_per_second) {
    (void)device, (void)bytes, (void)bytes_per_second;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", NOT_BUILT);
}

mpl_status mpl_vk_read_rate(int device, const uint32_t *spv, size_t spv_bytes, size_t bytes, size_t window, int reps,
                            double *bytes_per_second) {
    (void)device, (void)spv, (void)spv_bytes, (void)bytes, (void)window, (void)reps, (void)bytes_per_second;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", NOT_BUILT);
}

mpl_status mpl_vk_test_gemv_shape(int device, uint32_t wg, uint32_t rows, uint32_t unroll, uint32_t prefetch,
                                  uint32_t blocks) {
    (void)device, (void)wg, (void)rows, (void)unroll, (void)prefetch, (void)blocks;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", NOT_BUILT);
}

mpl_status mpl_vk_test_gemv_spirv(int device, const uint32_t *spv, size_t spv_bytes, uint32_t wg, uint32_t rows,
                                  uint32_t unroll, uint32_t prefetch, uint32_t blocks) {
    (void)device, (void)spv, (void)spv_bytes, (void)wg, (void)rows, (void)unroll, (void)prefetch, (void)blocks;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", NOT_BUILT);
}

mpl_status mpl_vk_test_gemv_stats(int device, char *buf, size_t size) {
    (void)device;
    if (buf && size) buf[0] = 0;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", NOT_BUILT);
}

mpl_status mpl_vk_test_validation(mpl_vk_message_fn fn, void *ctx) {
    (void)fn, (void)ctx;
    return mpl_set_error(MPL_ERR_NO_HARDWARE, "vulkan: %s", NOT_BUILT);
}

void mpl_vk_test_scratch_max(uint64_t bytes) { (void)bytes; }
