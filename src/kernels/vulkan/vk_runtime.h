/*
 * vk_runtime.h -- the Vulkan side of kernels vulkan_w4a16 and vulkan_w4a8 (internal): the loader, once per process (libvulkan.so.1
 * opened at run time, so a missing loader or driver is MPL_ERR_NO_HARDWARE, never a failed program start),
 * the physical devices, one logical device per physical device (created on first use, kept for the process),
 * and a layer's device state: its packed weight buffer and the scratch an apply of host pointers goes through.
 * vk_runtime.c implements it; vk_none.c, when MPLINEAR_VULKAN is OFF, answers "not built".
 */
#ifndef MPL_VK_RUNTIME_H
#define MPL_VK_RUNTIME_H

#include "../../core/internal.h"
#include "../../layouts/vulkan_w4a16.h"

/* The compute shaders (src/kernels/vulkan/shaders/), one per path that has one: vulkan_w4a16's (x in the
 * activation type) and vulkan_w4a8's (x as int8 rows quantized on the host). */
typedef enum mpl_vk_shader {
    MPL_VK_SHADER_GEMV = 0,
    MPL_VK_SHADER_TILED = 1,
    MPL_VK_SHADER_W4A8_GEMV = 2,
    MPL_VK_SHADER_W4A8_TILED = 3,
    MPL_VK_SHADERS = 4
} mpl_vk_shader;

/* The W4A16 GEMV's default shape (shaders/w4a16_gemv.comp's specialization constants): 64 invocations (two
 * NVIDIA subgroups, one AMD wave64), 8 output channels per workgroup (each x chunk serves 8 rows; divides the
 * layout's 64-row padding), 1 chunk per row per step (8 independent 16-byte loads per invocation), no prefetch.
 * The fastest of the 24 forms swept on the H200 at 70B gate_up and within 6% of the best at 8B
 * (bench/results/vulkan/h200-v13.md): more loads in flight -- 2 or 4 chunks per step, 16 or 32 rows, the next
 * step prefetched -- were slower there, not faster. */
#define MPL_VK_GEMV_WG 64
#define MPL_VK_GEMV_ROWS 8
#define MPL_VK_GEMV_UNROLL 1
#define MPL_VK_GEMV_PREFETCH 0
#define MPL_VK_GEMV_BLOCKS 1 /* row blocks per workgroup */

typedef struct mpl_vk_layer mpl_vk_layer;

/* Uploads l's image to device `device` (one buffer) for activations of type act in `mode`: W4A16 layers run
 * the W4A16 shaders on x as given, W4A8 layers the W4A8 shaders on x quantized on the host. l stays the
 * caller's. */
mpl_status mpl_vk_layer_create(int device, const mpl_vulkan_w4a16_layout *l, mpl_act act, mpl_mode mode,
                               mpl_vk_layer **out);
/* y = x . W^T + bias on host pointers (x [m][k], bias [n] or NULL, y [m][n], all of type act), through the
 * layer's staging buffers (rows in chunks that fit the device's buffer range); serialized per layer. sh must
 * be a shader of the layer's mode. */
mpl_status mpl_vk_layer_apply(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, const void *x, const void *bias, void *y);
void mpl_vk_layer_destroy(mpl_vk_layer *L);
/* Benchmarks: GPU time of one dispatch of m rows on device-resident x and y (timestamp queries), seconds. */
mpl_status mpl_vk_layer_time(mpl_vk_layer *L, mpl_vk_shader sh, int64_t m, double *seconds);
/* Benchmarks: the device's copy rate (vkCmdCopyBuffer of `bytes`, read + written bytes per second). */
mpl_status mpl_vk_copy_rate(int device, size_t bytes, double *bytes_per_second);
/* Benchmarks: the device's read rate through a compute shader (spv: SPIR-V of bench/vulkan/read_probe.comp, on
 * the modules' pipeline layout: binding 0 the window read, binding 5 a sink): one dispatch per window of
 * `window` bytes, the windows rotated over a buffer of `bytes` (cold when it exceeds the last-level cache),
 * timed like mpl_vk_layer_time; the median of `reps`, bytes read per second. */
mpl_status mpl_vk_read_rate(int device, const uint32_t *spv, size_t spv_bytes, size_t bytes, size_t window, int reps,
                            double *bytes_per_second);

/* Test and benchmark hook: re-creates device `device`'s W4A16 GEMV pipeline (shaders/w4a16_gemv.comp) with
 * wg invocations per workgroup, `rows` output channels per workgroup (a divisor of 64) and `unroll` chunks in
 * flight per row (1..8), prefetch 1 to issue the next step's loads before this step's math (0: load, then
 * compute; 2: the rows rolled in a loop two rows ahead, sums in shared memory, unroll 1), `blocks` consecutive
 * blocks of `rows` rows per workgroup (0 or 1: one; more: fewer, longer-lived workgroups); 0, 0, 0 restores the default (MPL_VK_GEMV_* above). Layers of the device
 * use the new shape from their next apply; no apply may run on the device meanwhile. */
mpl_status mpl_vk_test_gemv_shape(int device, uint32_t wg, uint32_t rows, uint32_t unroll, uint32_t prefetch,
                                  uint32_t blocks);
/* Benchmark hook: the same from other SPIR-V of shaders/w4a16_gemv.comp (spv, e.g. compiled with its shape fixed;
 * wg, rows and unroll must be that shape: the dispatch uses rows). spv NULL: the embedded shader. */
mpl_status mpl_vk_test_gemv_spirv(int device, const uint32_t *spv, size_t spv_bytes, uint32_t wg, uint32_t rows,
                                  uint32_t unroll, uint32_t prefetch, uint32_t blocks);
/* Benchmark hook: the driver's statistics of the GEMV pipeline the last mpl_vk_test_gemv_shape / _spirv made
 * (VK_KHR_pipeline_executable_properties: on NVIDIA registers per invocation and more), as one line of
 * "name=value" pairs per executable into buf; MPL_ERR_UNSUPPORTED where the driver has no such statistics. */
mpl_status mpl_vk_test_gemv_stats(int device, char *buf, size_t size);

/*
 * Test hook: before the first Vulkan use in the process, turn on VK_LAYER_KHRONOS_validation with a
 * VK_EXT_debug_utils messenger that passes every warning and error to fn. MPL_ERR_NO_HARDWARE when there is
 * no loader or instance; MPL_ERR_UNSUPPORTED when the layer or the extension is not installed (Vulkan then
 * runs without them); MPL_ERR_INVALID_ARGUMENT once the loader has been opened.
 */
typedef void (*mpl_vk_message_fn)(void *ctx, const char *message);
mpl_status mpl_vk_test_validation(mpl_vk_message_fn fn, void *ctx);

/* Test hook: the scratch bound per buffer of layers created afterwards (0 = the default, 256 MiB), so that a
 * test can make an apply run its rows in several chunks. */
void mpl_vk_test_scratch_max(uint64_t bytes);

#endif
