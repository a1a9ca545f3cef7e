/* kernels.h -- the kernel descriptors the registry lists (one per kernel file). */
#ifndef MPL_KERNELS_H
#define MPL_KERNELS_H

#include "../core/internal.h"

extern const mpl_kernel_desc mpl_kernel_ref;
#if defined(__x86_64__)
/* src/kernels/x86/<kernel>.c: W4A8 first, then W4A16, each widest ISA level first (registry order). */
extern const mpl_kernel_desc mpl_kernel_x86_avx512vnni_w4a8;
extern const mpl_kernel_desc mpl_kernel_x86_avxvnni_w4a8;
extern const mpl_kernel_desc mpl_kernel_x86_avx2_w4a8;
extern const mpl_kernel_desc mpl_kernel_x86_avx512_w4a16;
extern const mpl_kernel_desc mpl_kernel_x86_avx2_w4a16;
#endif
#ifdef MPL_HAVE_CUDA
extern const mpl_kernel_desc mpl_kernel_cuda_w4a16;
#endif
/* src/kernels/vulkan/vulkan_w4a16.c, vulkan_w4a8.c: always built; refuse NOT_BUILT without the Vulkan module */
extern const mpl_kernel_desc mpl_kernel_vulkan_w4a16;
extern const mpl_kernel_desc mpl_kernel_vulkan_w4a8;

#endif
