/* cuda_rt.c -- CUDA device query for builds with CUDA (the runtime API is plain C). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>

#include "../core/internal.h"
#include "platform.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_devices, g_cc;
static int g_cc_all[MPL_CUDA_MAX_DEVICES];
static char g_name[64], g_note[128];

/* Asked once per process: the answer does not change, and the first call initialises the
 * CUDA runtime (tens of milliseconds), which later calls must not pay again. */
static void query(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(g_note, sizeof g_note, "no usable CUDA device: %s (%s)", cudaGetErrorString(e),
                 cudaGetErrorName(e));
        (void)cudaGetLastError();
        return;
    }
    if (n == 0) {
        snprintf(g_note, sizeof g_note, "no CUDA device found");
        return;
    }
    struct cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, 0);
    if (e != cudaSuccess) {
        snprintf(g_note, sizeof g_note, "cudaGetDeviceProperties(0): %s", cudaGetErrorString(e));
        return;
    }
    g_devices = n;
    g_cc = p.major * 10 + p.minor;
    g_cc_all[0] = g_cc;
    for (int i = 1; i < n && i < MPL_CUDA_MAX_DEVICES; i++) {
        int major = 0, minor = 0;
        if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, i) == cudaSuccess &&
            cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, i) == cudaSuccess)
            g_cc_all[i] = major * 10 + minor;
        else
            (void)cudaGetLastError(); /* an unreadable device keeps cc 0: every CUDA kernel refuses it */
    }
    snprintf(g_name, sizeof g_name, "%.63s", p.name);
    g_note[0] = 0;
}

int mpl_cuda_query(int *devices, int *cc, char *name, size_t name_cap, char *note, size_t note_cap) {
    pthread_once(&g_once, query);
    *devices = g_devices;
    *cc = g_cc;
    if (name_cap) snprintf(name, name_cap, "%s", g_name);
    if (note_cap) snprintf(note, note_cap, "%s", g_note);
    return 1;
}

int mpl_cuda_devices(int *cc, int cap) {
    pthread_once(&g_once, query);
    for (int i = 0; i < cap && i < g_devices && i < MPL_CUDA_MAX_DEVICES; i++) cc[i] = g_cc_all[i];
    return g_devices;
}

mpl_status mpl_cuda_check_pointer(const void *p, int device, const char *what) {
    struct cudaPointerAttributes a;
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* a failed query is not sticky: clear it so it does not surface later */
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "apply_device: %s = %p: CUDA cannot say what memory this is (%s): device pointers of "
                             "the layer's device %d are needed",
                             what, p, cudaGetErrorString(e), device);
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
        if (a.device != device)
            return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                                 "apply_device: %s = %p is memory of CUDA device %d, but the layer lives on device %d "
                                 "(copy it there, or create the layer with mpl_options.cuda_device = %d)",
                                 what, p, a.device, device, a.device);
        return MPL_OK;
    case cudaMemoryTypeManaged: return MPL_OK;
    case cudaMemoryTypeHost:
        if (a.devicePointer) return MPL_OK; /* mapped pinned host memory: the device reads it over the bus */
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "apply_device: %s = %p is pinned host memory not mapped into the device's address space",
                             what, p);
    default:
        return mpl_set_error(MPL_ERR_INVALID_ARGUMENT,
                             "apply_device: %s = %p is not CUDA memory (ordinary host memory, or freed or never "
                             "allocated): mpl_layer_apply_device takes pointers of device %d; mpl_layer_apply takes "
                             "host pointers",
                             what, p, device);
    }
}
