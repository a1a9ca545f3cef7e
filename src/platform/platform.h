/* platform.h -- what src/platform/ offers the rest of the library beyond internal.h's mpl_platform:
 * the CUDA device query (cuda_rt.c in CUDA builds, cuda_none.c otherwise). */
#ifndef MPL_PLATFORM_H
#define MPL_PLATFORM_H

#include <stddef.h>

/* Device 0's name and compute capability, the device count, and a note on why CUDA is unusable
 * (""); returns 1 when the library was built with CUDA. Asked once per process. */
int mpl_cuda_query(int *devices, int *cc, char *name, size_t name_cap, char *note, size_t note_cap);
/* Compute capability (major*10+minor) of devices 0..min(count, cap)-1 into cc; returns the device count
 * (0 without CUDA or devices). Asked once per process (the first call initialises the CUDA runtime). */
int mpl_cuda_devices(int *cc, int cap);

#endif
