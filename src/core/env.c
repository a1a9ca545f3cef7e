/*
 * env.c -- every environment variable the library reads, in one place (README.md lists them):
 *   MPL_DISABLED_KERNELS  kernels or paths the chooser skips ("x86_avx512_w4a16,cuda_w4a16:dq")
 *   MPL_MAX_ISA           caps the CPU features used (scalar, sse4.2, avx2, avx_vnni, avx512, avx512_bf16)
 * Nothing else in src/ calls getenv (CI greps for it). Read on each use: the chooser runs at layer
 * creation, not per apply, and tests change MPL_DISABLED_KERNELS between layers.
 */
#include <stdlib.h>

#include "internal.h"

const char *mpl_env_disabled_kernels(void) { return getenv("MPL_DISABLED_KERNELS"); }
const char *mpl_env_max_isa(void) { return getenv("MPL_MAX_ISA"); }
