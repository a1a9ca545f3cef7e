/* x86_avx512_w4a16.c -- placeholder descriptor; the kernel lands with its issue. */
#include "../kernels.h"

static mpl_reason can_implement(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap) {
    (void)c;
    (void)p;
    return mpl_refuse(msg, cap, MPL_REASON_NOT_BUILT, "not implemented yet");
}

const mpl_kernel_desc mpl_kernel_x86_avx512_w4a16 = {
    .name = "x86_avx512_w4a16",
    .backend = MPL_BACKEND_CPU,
    .layout = "none",
    .requires = "x86-64",
    .can_implement = can_implement,
};
