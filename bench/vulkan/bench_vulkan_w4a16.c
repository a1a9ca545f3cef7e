/*
 * bench_vulkan_w4a16.c -- GPU time of one vulkan_w4a16 path on one shape, cold weights: `copies` packed layers
 * (together larger than the GPU's last-level cache) are timed in rotation, one dispatch each (timestamp
 * queries around the dispatch: no host copies, no submission latency), median of `reps`. Prints one line:
 * path m k n, median us, GB/s of weight traffic (packed bytes / time), GFLOP/s, and the device's copy rate
 * (vkCmdCopyBuffer, read + write bytes / time) measured in the same run as the ceiling.
 *   bench_vulkan_w4a16 --path gemv|tiled --m M --k K --n N [--group G] [--copies C] [--reps R] [--device I]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kernels/kernels.h"
#include "kernels/vulkan/vulkan_w4a16.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int64_t m = 1, k = 4096, n = 4096, group = 128;
    int copies = 4, reps = 20, device = 0, path = MPL_VULKAN_W4A16_PATH_GEMV;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--m")) m = atoll(v);
        else if (!strcmp(a, "--k")) k = atoll(v);
        else if (!strcmp(a, "--n")) n = atoll(v);
        else if (!strcmp(a, "--group")) group = atoll(v);
        else if (!strcmp(a, "--copies")) copies = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--device")) device = atoi(v);
        else if (!strcmp(a, "--path")) path = !strcmp(v, "tiled") ? MPL_VULKAN_W4A16_PATH_TILED : MPL_VULKAN_W4A16_PATH_GEMV;
        else {
            fprintf(stderr, "unknown option %s\n", a);
            return 2;
        }
    }
    if (copies < 1 || copies > 64 || reps < 1 || reps > 10000 || m < 1) {
        fprintf(stderr, "bad --copies, --reps or --m\n");
        return 2;
    }
    mpl_config c;
    mpl_config_init(&c, k, n);
    c.group_size = group;
    c.act = MPL_ACT_BF16;
    if (mpl_config_validate(&c) != MPL_OK) {
        fprintf(stderr, "config: %s\n", mpl_last_error());
        return 2;
    }
    mpl_options o;
    mpl_options_init(&o);
    o.device = MPL_DEVICE_VULKAN;
    o.vulkan_device = device;
    mpl_platform p;
    mpl_platform_for(&o, &p);
    char msg[256];
    mpl_reason r = mpl_kernel_check(&mpl_kernel_vulkan_w4a16, &c, &p, 0, msg, sizeof msg);
    if (r != MPL_REASON_OK) {
        fprintf(stderr, "vulkan_w4a16 refuses: %s: %s\n", mpl_reason_name(r), msg);
        return 5;
    }
    mpl_canonical w;
    if (mpl_canonical_alloc(&w, &c) != MPL_OK) {
        fprintf(stderr, "alloc: %s\n", mpl_last_error());
        return 7;
    }
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n * k; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        w.codes[i] = (uint8_t)(s >> 60);
    }
    for (int64_t i = 0; i < n * w.groups; i++) w.scales[i] = 0.01f;
    void **layers = calloc((size_t)copies, sizeof *layers);
    for (int i = 0; i < copies; i++) {
        mpl_status st = mpl_kernel_vulkan_w4a16.pack(&c, &w, &p, ~0u, &layers[i]);
        if (st != MPL_OK) {
            fprintf(stderr, "pack copy %d: %s\n", i, mpl_last_error());
            return 7;
        }
    }
    mpl_canonical_free(&w);
    const size_t wbytes = mpl_kernel_vulkan_w4a16.weight_bytes(layers[0]);
    double *t = calloc((size_t)reps, sizeof *t);
    for (int i = 0; i < copies; i++) /* warm-up: pipelines, scratch */
        if (mpl_vulkan_w4a16_time(layers[i], path, m, &t[0]) != MPL_OK) {
            fprintf(stderr, "time: %s\n", mpl_last_error());
            return 7;
        }
    for (int rep = 0; rep < reps; rep++)
        if (mpl_vulkan_w4a16_time(layers[rep % copies], path, m, &t[rep]) != MPL_OK) {
            fprintf(stderr, "time: %s\n", mpl_last_error());
            return 7;
        }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    const double med = t[reps / 2];
    double copy_rate = 0;
    if (mpl_vk_copy_rate(device, (size_t)1 << 30, &copy_rate) != MPL_OK) copy_rate = 0;
    mpl_vulkan_device_info info;
    mpl_vulkan_device_get(device, &info);
    printf("%-20s m %5lld k %6lld n %6lld  %9.1f us  %7.1f GB/s weights  %8.1f GFLOP/s  copy %7.1f GB/s  "
           "(%d copies, %.0f MB each, %d reps, %s)\n",
           path == MPL_VULKAN_W4A16_PATH_GEMV ? "vulkan_w4a16:gemv" : "vulkan_w4a16:tiled", (long long)m, (long long)k,
           (long long)n, med * 1e6, (double)wbytes / med * 1e-9, 2.0 * (double)m * (double)k * (double)n / med * 1e-9,
           copy_rate * 1e-9, copies, (double)wbytes / 1e6, reps, info.name);
    for (int i = 0; i < copies; i++) mpl_kernel_vulkan_w4a16.destroy(layers[i]);
    free(layers);
    free(t);
    return 0;
}
