/* platform.h -- what src/platform/ offers the rest of the library beyond internal.h's mpl_platform:
 * the CUDA device query (cuda_rt.c in CUDA builds, cuda_none.c otherwise). */
#ifndef MPL_PLATFORM_H
#define MPL_PLATFORM_H

#include <stddef.h>

#include "mplinear.h"

/* Device 0's name and compute capability, the device count, and a note on why CUDA is unusable
 * (""); returns 1 when the library was built with CUDA. Asked once per process. */
int mpl_cuda_query(int *devices, int *cc, char *name, size_t name_cap, char *note, size_t note_cap);
/* Compute capability (major*10+minor) of devices 0..min(count, cap)-1 into cc; returns the device count
 * (0 without CUDA or devices). Asked once per process (the first call initialises the CUDA runtime). */
int mpl_cuda_devices(int *cc, int cap);
/*
 * Whether a kernel on CUDA device `device` may use pointer p (what: "x", "bias" or "y" for the
 * message): memory of that device, managed memory, or mapped pinned host memory. Anything else --
 * ordinary host memory, a freed or made-up address, another device's memory -- is refused with
 * MPL_ERR_INVALID_ARGUMENT naming the pointer, what CUDA says it is and the rule, because a kernel
 * that touched it would fault and leave the context with a sticky error that every later CUDA call
 * of the process returns. (cuda_none.c: MPL_OK; no CUDA layer exists there.)
 */
mpl_status mpl_cuda_check_pointer(const void *p, int device, const char *what);

#endif
