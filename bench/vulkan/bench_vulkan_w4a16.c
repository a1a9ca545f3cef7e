/*
 * bench_vulkan_w4a16.c -- GPU time of one vulkan_w4a16 path on one shape, cold weights: `copies` packed layers
 * (together larger than the GPU's last-level cache) are timed in rotation, one dispatch each (timestamp
 * queries around the dispatch: no host copies, no submission latency), median of `reps`. Prints one line:
 * path m k n, median us, GB/s of weight traffic (packed bytes / time), GFLOP/s, and the device's copy rate
 * (vkCmdCopyBuffer, read + write bytes / time) measured in the same run as the ceiling, and with
 * --probe the read rate of a compute shader (read_probe.comp: 8 independent 16-byte loads per invocation) over
 * windows of the packed weights' size rotated over 1 GiB, timed the same way (one dispatch between
 * timestamps), plus the same probe over a 64 KiB window (the fixed cost of one timed dispatch).
 * --shapes WG:ROWS:UNROLL[:PREFETCH[:BLOCKS]],... times the GEMV path once per shape of shaders/w4a16_gemv.comp
 * (invocations per workgroup, output channels per workgroup, chunks per row per step, next step's loads issued
 * first, row blocks per workgroup; mpl_vk_test_gemv_shape; 0:0:0 the default), the weights packed once, with
 * the driver's statistics of each pipeline (mpl_vk_test_gemv_stats: registers etc. where the driver has
 * VK_KHR_pipeline_executable_properties); the default shape otherwise.
 *   bench_vulkan_w4a16 --path gemv|tiled --m M --k K --n N [--group G] [--copies C] [--reps R] [--device I]
 *                      [--shapes WG:ROWS:UNROLL[:PREFETCH[:BLOCKS]],...] [--probe 1] [--fixed 1]
 * --fixed 1 also times the GEMV compiled with its shape fixed at build time (bench/vulkan/CMakeLists.txt's list).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "kernels/kernels.h"
#include "kernels/vulkan/vk_runtime.h"
#include "kernels/vulkan/vulkan_w4a16.h"

#ifdef BENCH_VK_FIXED
typedef struct bench_fixed {
    unsigned wg, rows, unroll, prefetch;
    const uint32_t *spv;
    const size_t *bytes;
} bench_fixed;
#include "gemv_fixed_list.h"
#endif

#ifdef BENCH_VK_READ_PROBE
extern const uint32_t bench_vk_spv_read_probe[];
extern const size_t bench_vk_spv_read_probe_bytes;
#endif

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    int64_t m = 1, k = 4096, n = 4096, group = 128;
    int copies = 4, reps = 20, device = 0, path = MPL_VULKAN_W4A16_PATH_GEMV, probe = 0, fixed = 0;
    const char *shapes = "0:0:0"; /* the default shape */
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--m")) m = atoll(v);
        else if (!strcmp(a, "--k")) k = atoll(v);
        else if (!strcmp(a, "--n")) n = atoll(v);
        else if (!strcmp(a, "--group")) group = atoll(v);
        else if (!strcmp(a, "--copies")) copies = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--device")) device = atoi(v);
        else if (!strcmp(a, "--shapes")) shapes = v;
        else if (!strcmp(a, "--probe")) probe = atoi(v);
        else if (!strcmp(a, "--fixed")) fixed = atoi(v);
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
    double copy_rate = 0, read_rate = 0;
    if (mpl_vk_copy_rate(device, (size_t)1 << 30, &copy_rate) != MPL_OK) copy_rate = 0;
#ifdef BENCH_VK_READ_PROBE
    if (probe) {
        double read_small = 0;
        if (mpl_vk_read_rate(device, bench_vk_spv_read_probe, bench_vk_spv_read_probe_bytes, (size_t)1 << 30, wbytes, 30,
                             &read_rate) != MPL_OK ||
            mpl_vk_read_rate(device, bench_vk_spv_read_probe, bench_vk_spv_read_probe_bytes, (size_t)1 << 30, 65536, 30,
                             &read_small) != MPL_OK)
            fprintf(stderr, "read probe: %s\n", mpl_last_error());
        else
            printf("read probe: %.1f GB/s over %.0f MB windows (1 GiB rotated); a 64 KiB window: %.2f us per dispatch\n",
                   read_rate * 1e-9, (double)wbytes / 1e6, read_small > 0 ? 65536.0 / read_small * 1e6 : 0.0);
    }
#else
    if (probe) fprintf(stderr, "read probe: not built (no read_probe.spv)\n");
#endif
    mpl_vulkan_device_info info;
    mpl_vulkan_device_get(device, &info);
    double *t = calloc((size_t)reps, sizeof *t);
    int rc = 0;
    int nfixed = 0;
#ifdef BENCH_VK_FIXED
    if (fixed && path == MPL_VULKAN_W4A16_PATH_GEMV) nfixed = (int)(sizeof bench_vk_fixed / sizeof bench_vk_fixed[0]);
#else
    if (fixed) fprintf(stderr, "--fixed: not built (no GLSL compiler at build time)\n");
#endif
    const char *sp = shapes;
    for (int fi = 0; ((sp && *sp) || fi < nfixed) && !rc;) {
        unsigned wg = 0, rows = 0, unroll = 0, prefetch = 0, blocks = 1;
        const char *form = "";
        if (sp && *sp) {
            if (sscanf(sp, "%u:%u:%u:%u:%u", &wg, &rows, &unroll, &prefetch, &blocks) < 3) {
                fprintf(stderr, "bad --shapes entry %s\n", sp);
                return 2;
            }
            const char *next = strchr(sp, ',');
            sp = next ? next + 1 : NULL;
            if (path == MPL_VULKAN_W4A16_PATH_GEMV &&
                mpl_vk_test_gemv_shape(device, wg, rows, unroll, prefetch, blocks) != MPL_OK) {
                fprintf(stderr, "shape %u:%u:%u:%u:%u: %s\n", wg, rows, unroll, prefetch, blocks, mpl_last_error());
                continue;
            }
        } else {
#ifdef BENCH_VK_FIXED
            const bench_fixed *f = &bench_vk_fixed[fi];
            wg = f->wg, rows = f->rows, unroll = f->unroll, prefetch = f->prefetch, form = " fixed";
            if (mpl_vk_test_gemv_spirv(device, f->spv, *f->bytes, wg, rows, unroll, prefetch, 1) != MPL_OK) {
                fprintf(stderr, "fixed shape %u:%u:%u: %s\n", wg, rows, unroll, mpl_last_error());
                fi++;
                continue;
            }
#endif
            fi++;
        }
        char stats[2048] = "";
        if (path == MPL_VULKAN_W4A16_PATH_GEMV && mpl_vk_test_gemv_stats(device, stats, sizeof stats) != MPL_OK)
            snprintf(stats, sizeof stats, "(%s)", mpl_last_error());
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
        const double med = t[reps / 2], wrate = (double)wbytes / med;
        char shape[64] = "";
        if (path == MPL_VULKAN_W4A16_PATH_GEMV)
            snprintf(shape, sizeof shape, " [%u:%u:%u:%u:%u%s]", wg ? wg : MPL_VK_GEMV_WG, rows ? rows : MPL_VK_GEMV_ROWS,
                     unroll ? unroll : MPL_VK_GEMV_UNROLL, wg ? prefetch : MPL_VK_GEMV_PREFETCH,
                     wg ? (blocks ? blocks : 1) : MPL_VK_GEMV_BLOCKS, form);
        printf("%-20s%-18s m %5lld k %6lld n %6lld  %9.1f us  %7.1f GB/s weights  %8.1f GFLOP/s  copy %7.1f GB/s  "
               "read %7.1f GB/s (%.0f%%)  (%d copies, %.0f MB each, %d reps, min %.1f us, max %.1f us, %s)\n",
               path == MPL_VULKAN_W4A16_PATH_GEMV ? "vulkan_w4a16:gemv" : "vulkan_w4a16:tiled", shape, (long long)m,
               (long long)k, (long long)n, med * 1e6, wrate * 1e-9, 2.0 * (double)m * (double)k * (double)n / med * 1e-9,
               copy_rate * 1e-9, read_rate * 1e-9, read_rate > 0 ? 100.0 * wrate / read_rate : 0.0, copies,
               (double)wbytes / 1e6, reps, t[0] * 1e6, t[reps - 1] * 1e6, info.name);
        if (stats[0]) printf("  pipeline statistics%s: %s\n", shape, stats);
        fflush(stdout);
    }
    for (int i = 0; i < copies; i++) mpl_kernel_vulkan_w4a16.destroy(layers[i]);
    free(layers);
    free(t);
    return rc;
}
