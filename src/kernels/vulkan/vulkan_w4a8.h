/* vulkan_w4a8.h -- internals of kernel vulkan_w4a8 that tests and benchmarks reach (the descriptor is in
 * kernels.h). */
#ifndef MPL_VULKAN_W4A8_H
#define MPL_VULKAN_W4A8_H

#include "vk_runtime.h"

/* Path indices of mpl_kernel_vulkan_w4a8.paths, in priority order. */
enum { MPL_VULKAN_W4A8_PATH_GEMV, MPL_VULKAN_W4A8_PATH_TILED, MPL_VULKAN_W4A8_NPATHS };

/* Benchmarks: GPU time of one dispatch of `path` over m rows on a packed layer (device-resident data). */
mpl_status mpl_vulkan_w4a8_time(const void *packed, int path, int64_t m, double *seconds);

#endif
