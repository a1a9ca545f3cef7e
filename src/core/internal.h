/*
 * internal.h -- shared internals of libmplinear: error reporting, checked
 * size arithmetic, the canonical weight form, the kernel descriptor, the
 * platform and the thread pool. Not installed.
 */
#ifndef MPL_INTERNAL_H
#define MPL_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mplinear.h"

/* ---------- errors ---------- */

/* Sets the thread's last-error message (printf-style) and returns st. */
mpl_status mpl_set_error(mpl_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mpl_clear_error(void);

/* ---------- checked size arithmetic ---------- */

static inline bool mpl_mul_overflow_sz(size_t a, size_t b, size_t *out) {
    return __builtin_mul_overflow(a, b, out);
}
static inline bool mpl_add_overflow_sz(size_t a, size_t b, size_t *out) {
    return __builtin_add_overflow(a, b, out);
}
/* out = a*b*c (all non-negative); false on overflow or negative input. */
bool mpl_size_mul3(int64_t a, int64_t b, int64_t c, size_t *out);

/* Largest K or N accepted (keeps every index in int32-safe ranges for kernels). */
#define MPL_MAX_DIM ((int64_t)1 << 24)
/* Largest m (rows) apply accepts: with k, n <= MPL_MAX_DIM every byte count of x, y and any
 * kernel's workspace (a few bytes per m*k or m*n element) stays far below SIZE_MAX. */
#define MPL_MAX_M ((int64_t)INT32_MAX)

/* ---------- canonical weights ---------- */

/*
 * The one form every checkpoint decoder produces and every kernel packs from.
 *   codes[n*k + kk]: the stored code of weight (n, kk): 0..2^bits - 1 (int4: the
 *     two's-complement nibble).
 *   scales[n*groups + g]: the group scale, converted exactly to float.
 *   zeros[n*groups + g]: raw zero point (uint4/uint8 with zero points) or NULL.
 *   g_idx[kk]: group of input channel kk (act-order) or NULL.
 *   perm[j]: act-order resolved: input channel at sorted position j (stable
 *     sort by g_idx) or NULL. When groups are uniform (each has exactly
 *     group_size members), position j lies in group j / group_size.
 * Value of a weight: mpl_weight_value().
 */
typedef struct mpl_canonical {
    int64_t k, n;
    int64_t group_size; /* effective: k when config says -1 */
    int64_t groups;
    mpl_wtype wtype;
    uint8_t *codes;
    float *scales;
    uint8_t *zeros;
    int32_t *g_idx;
    int32_t *perm;
    bool act_order_uniform;
} mpl_canonical;

/* Allocates codes/scales (and zeros/g_idx when asked) for a config; zeroed. */
mpl_status mpl_canonical_alloc(mpl_canonical *w, const mpl_config *cfg);
/* As mpl_canonical_alloc with an explicit group count (an act-order row shard keeps only the groups its
 * channels name, src/core/shard.c: then groups need not be k / group_size). */
mpl_status mpl_canonical_alloc_groups(mpl_canonical *w, const mpl_config *cfg, int64_t groups);
void mpl_canonical_free(mpl_canonical *w);
/* 8-bit weights (uint8b128, uint8) as two 4-bit planes, the form both GPU layouts store (docs/layouts/cuda_w4a16.md
 * "8-bit: two planes"): c2 / w2 the uint4 layer of 2k channels whose channel j (< k) holds the low nibble of input
 * channel perm2[j] and k + j its high nibble, codes already in packed order (w2 carries no perm); groups 0..G-1 the low
 * plane's (scale s, zero z & 15), G..2G-1 the high plane's (16 s, z >> 4; uint8b128's zero is 128); perm2 [2k] the
 * duplicating permutation (w's act-order perm or the identity, twice), allocated here. w's act-order groups must be
 * uniform (the caller checks). On failure nothing is left allocated. */
mpl_status mpl_canonical_planes(const mpl_config *c, const mpl_canonical *w, mpl_config *c2, mpl_canonical *w2,
                                int32_t **perm2);
/* Its config alone: c2 of an 8-bit config c (for a layout's sizes before any weights). */
void mpl_config_planes(const mpl_config *c, mpl_config *c2);
/* Validates g_idx values and computes perm/act_order_uniform. */
mpl_status mpl_canonical_resolve_act_order(mpl_canonical *w);
/* The unpack side of a layout that sorted K by group with uniform groups: sorted position j (the first k
 * entries of perm) lies in group j / group_size, so g_idx[perm[j]] = j / group_size; then resolved as above.
 * On failure w is freed. */
mpl_status mpl_canonical_restore_act_order(mpl_canonical *w, const int32_t *perm);

static inline int64_t mpl_group_of(const mpl_canonical *w, int64_t kk) {
    return w->g_idx ? (int64_t)w->g_idx[kk] : kk / w->group_size;
}

/* Integer value of a stored code given the type and zero point. */
static inline int mpl_code_value(mpl_wtype t, int code, int zero) {
    switch (t) {
    case MPL_WTYPE_UINT4B8: return code - 8;
    case MPL_WTYPE_UINT4: return code - zero;
    case MPL_WTYPE_INT4: return code >= 8 ? code - 16 : code;
    case MPL_WTYPE_UINT8B128: return code - 128;
    case MPL_WTYPE_UINT8: return code - zero;
    case MPL_WTYPE_UINT2B2: return code - 2;
    case MPL_WTYPE_UINT3B4: return code - 4;
    case MPL_WTYPE_UINT2: return code - zero;
    case MPL_WTYPE_UINT3: return code - zero;
    }
    return 0;
}
static inline int mpl_weight_value(const mpl_canonical *w, int64_t n, int64_t kk) {
    int64_t g = mpl_group_of(w, kk);
    int z = w->zeros ? w->zeros[n * w->groups + g] : 0;
    return mpl_code_value(w->wtype, w->codes[n * w->k + kk], z);
}
static inline int mpl_wtype_bits(mpl_wtype t) {
    switch (t) {
    case MPL_WTYPE_UINT2B2:
    case MPL_WTYPE_UINT2: return 2;
    case MPL_WTYPE_UINT3B4:
    case MPL_WTYPE_UINT3: return 3;
    case MPL_WTYPE_UINT8B128:
    case MPL_WTYPE_UINT8: return 8;
    default: return 4;
    }
}
static inline bool mpl_wtype_needs_zeros(mpl_wtype t) {
    return t == MPL_WTYPE_UINT4 || t == MPL_WTYPE_UINT8 || t == MPL_WTYPE_UINT2 || t == MPL_WTYPE_UINT3;
}
/* The symmetric bias of a type (its zero point when it has none): 2^(bits-1), int4 0; types with
 * zero points: 0 (their zero is per group). */
static inline int mpl_wtype_bias(mpl_wtype t) {
    if (t == MPL_WTYPE_INT4 || mpl_wtype_needs_zeros(t)) return 0;
    return 1 << (mpl_wtype_bits(t) - 1);
}
/* The 4-bit code the GPU layouts (cuda_w4a16, vulkan_w4a16) store for a code of a type of at most 4 bits, read as
 * uint4b8 (value = s - 8) or, with zero points, as uint4 (value = s - z): int4 XOR 8, uint3b4 + 4, uint2b2 + 6,
 * the rest as they are; mpl_code4_back inverts it. */
static inline unsigned mpl_code4(mpl_wtype t, unsigned code) {
    return t == MPL_WTYPE_INT4 ? code ^ 8u : t == MPL_WTYPE_UINT3B4 ? code + 4u : t == MPL_WTYPE_UINT2B2 ? code + 6u : code;
}
static inline unsigned mpl_code4_back(mpl_wtype t, unsigned s) {
    return t == MPL_WTYPE_INT4 ? s ^ 8u : t == MPL_WTYPE_UINT3B4 ? s - 4u : t == MPL_WTYPE_UINT2B2 ? s - 6u : s;
}
/* K must be a multiple of this for packed checkpoint layouts: 32 / bits values per int32 (2-, 4-, 8-bit),
 * or 32 values per 3 words for 3-bit (a dense bit stream: no value is split at a row end). */
static inline int mpl_wtype_k_multiple(mpl_wtype t) {
    int b = mpl_wtype_bits(t);
    return b == 3 ? 32 : 32 / b;
}
static inline size_t mpl_act_size(mpl_act a) { return a == MPL_ACT_F32 ? 4 : 2; }

/* ---------- activations ---------- */

/* Convert n activations of type a to float. */
void mpl_act_to_f32(mpl_act a, const void *src, float *dst, int64_t n);
/* Round n floats once to type a (round to nearest even). */
void mpl_f32_to_act(mpl_act a, const float *src, void *dst, int64_t n);
static inline float mpl_act_load(mpl_act a, const void *p, int64_t i) {
    if (a == MPL_ACT_F32) return ((const float *)p)[i];
    if (a == MPL_ACT_F16) return mpl_f16_to_f32(((const uint16_t *)p)[i]);
    return mpl_bf16_to_f32(((const uint16_t *)p)[i]);
}

/*
 * W4A8 per-row quantization, exactly as the public header defines it.
 * Returns sx (amax/127); q gets k int8 values. *nonfinite = 1 when the row
 * holds inf or NaN (then q is all zero and outputs must be NaN).
 */
float mpl_quantize_row_i8(const float *x, int64_t k, int8_t *q, int *nonfinite);

/* ---------- platform ---------- */

/* Most CUDA devices the platform records (device ordinals 0..MPL_CUDA_MAX_DEVICES-1). */
#define MPL_CUDA_MAX_DEVICES 16

/* CPU vendor (CPUID leaf 0): the x86 path rows pick their switch points per vendor where the same
 * ISA runs at different rates (vdpbf16ps: half the FMA rate per element pair on Intel, twice it on Zen 4). */
typedef enum mpl_cpu_vendor { MPL_CPU_VENDOR_OTHER = 0, MPL_CPU_VENDOR_INTEL = 1, MPL_CPU_VENDOR_AMD = 2 } mpl_cpu_vendor;

typedef struct mpl_platform {
    uint32_t isa;     /* usable features (after the MPL_MAX_ISA cap and, for AMX, the OS grant) */
    mpl_cpu_vendor cpu_vendor;
    int cpu_family; /* x86 CPUID family, extended family added (AMD 0x19: Zen 3/4, 0x1A: Zen 5; Intel 6); 0 unknown */
    int cpu_threads;
    int cuda_devices; /* 0 when none or not built */
    int cuda_device;  /* the device a choice is made for (mpl_options.cuda_device); set by the chooser */
    int cuda_cc;      /* compute capability (major*10+minor) of cuda_device; 0 when none */
    int cuda_cc_all[MPL_CUDA_MAX_DEVICES]; /* compute capability of every device */
    /* Vulkan (filled by mpl_platform_for when opt asks for the Vulkan backend; 0 otherwise) */
    int vulkan_devices;        /* physical devices the loader reports (0: not built, no loader, no ICD) */
    int vulkan_device;         /* the device a choice is made for; -1 when vulkan_device_name matched none */
    uint32_t vulkan_caps;      /* MPL_VK_CAP_* of vulkan_device */
    uint64_t vulkan_max_range; /* maxStorageBufferRange of vulkan_device */
} mpl_platform;

/* Vulkan device capabilities (mpl_platform.vulkan_caps). */
#define MPL_VK_CAP_USABLE (1u << 0)   /* Vulkan 1.1, subgroup arithmetic in compute, a compute queue */
#define MPL_VK_CAP_FLOAT16 (1u << 1)  /* shaderFloat16 */
#define MPL_VK_CAP_STORAGE16 (1u << 2) /* storageBuffer16BitAccess */
#define MPL_VK_CAP_COOPMAT (1u << 3)  /* VK_KHR_cooperative_matrix with an f16 x f16 + f32 subgroup shape */
/* src/kernels/vulkan/ (vk_runtime.c, or vk_none.c when MPLINEAR_VULKAN is OFF): 1 when the module is built;
 * the Vulkan fields of *out for opt's device (mpl_platform_for; the loader is asked once per process). */
int mpl_vulkan_built(void);
void mpl_vulkan_platform(const mpl_options *opt, mpl_platform *out);

/* Detected once (CPUID + XGETBV + env cap + CUDA device query); thread-safe. */
const mpl_platform *mpl_platform_current(void);
/* Test hook: replace the platform (NULL restores detection). Lets a test fake a CPU or a GPU. */
void mpl_platform_override(const mpl_platform *p);

/* ---------- thread pool ---------- */

/* fn(ctx, tid, nthreads) runs on nthreads threads (the caller is tid 0). */
typedef void (*mpl_task_fn)(void *ctx, int tid, int nthreads);
/*
 * Runs fn on min(nthreads, mpl_pool_size()) threads: the caller and workers of the persistent
 * process-wide pool, each pinned to one CPU of the process's affinity mask, none on the CPU the
 * caller runs on (src/core/pool.c). Returns when all have finished. Concurrent callers are
 * serialized. nthreads <= 1 runs on the caller only.
 */
void mpl_parallel_run(int nthreads, mpl_task_fn fn, void *ctx);
/* Most threads a job runs on: the CPUs of the process's affinity mask (creates the pool). */
int mpl_pool_size(void);
/* The CPU worker i is pinned to (-1: unpinned or no such worker); for tests. */
int mpl_pool_worker_cpu(int i);
/* How many times worker i woke from its sleep so far (-1: no such worker); for tests. */
long mpl_pool_worker_wakes(int i);

/* ---------- kernels ---------- */

typedef enum mpl_backend { MPL_BACKEND_CPU = 0, MPL_BACKEND_CUDA = 1, MPL_BACKEND_VULKAN = 2 } mpl_backend;
#define MPL_BACKENDS 3

typedef struct mpl_apply_args {
    int64_t m;
    const void *x;    /* [m x k] act type */
    const void *bias; /* [n] act type or NULL */
    void *y;          /* [m x n] act type */
    void *workspace;  /* workspace_size(m, threads, path) bytes, 64-byte aligned */
    int threads;      /* threads to use */
    int path;         /* index into the kernel's paths[]: the path this apply runs (chosen by the layer) */
    void *stream;     /* CUDA stream for device apply */
    int device_pointers; /* 1: x, bias, y are device pointers (CUDA kernels) */
} mpl_apply_args;

/* No bound on m (path rows). */
#define MPL_M_ANY INT64_MAX
/* Most paths one kernel has. */
#define MPL_MAX_PATHS 8

/*
 * One code path of a kernel: a registry row below the kernel's row (docs/naming.md).
 * A kernel lists its paths in priority order. An apply of m rows runs the first available path
 * whose default range m_min..m_max holds m; when none does (paths disabled), the first
 * available one whose limit allows m. Forcing a path (mpl_options.kernel = "<kernel>:<path>")
 * runs it for every m up to its m_limit.
 */
typedef struct mpl_path_desc {
    const char *name;     /* full name, "<kernel>:<path>", e.g. "x86_avx512_w4a16:decode" */
    const char *requires; /* what it needs beyond the kernel, human-readable ("" = nothing more) */
    uint32_t isa;         /* CPU ISA bits it needs beyond the kernel's .isa */
    int min_cc, max_cc;   /* CUDA: compute capability range it runs on (0 = no bound) */
    int64_t m_min, m_max; /* rows it serves by default, when no path listed before it does (MPL_M_ANY: no bound) */
    int64_t m_limit;      /* most rows it can run at all, when forced (MPL_M_ANY: any) */
    const char *why;      /* the measurement that set m_min..m_max (one line; the file's comment has the table) */
    /* Optional (NULL = every config the kernel takes): a static check beyond the kernel's
     * can_implement, e.g. the activation type or a run-time grant such as AMX tile permission.
     * Writes a message stating value and rule on refusal. */
    mpl_reason (*can_implement)(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap);
    /* Optional: narrows m_min..m_max for a config (a switch point that depends on K, say). */
    void (*m_range)(const mpl_config *c, const mpl_platform *p, int64_t *m_min, int64_t *m_max);
} mpl_path_desc;

typedef struct mpl_kernel_desc {
    const char *name;
    mpl_backend backend;
    const char *layout;   /* docs/layouts/<layout>.md */
    const char *requires; /* human-readable requirement */
    uint32_t isa;         /* every bit required (CPU kernels) */
    int min_cc;           /* minimum compute capability (CUDA kernels); checked by the chooser */
    bool irregular_act_order; /* handles g_idx whose groups differ in size */
    /* Static check. Writes a message stating value and rule on refusal. */
    mpl_reason (*can_implement)(const mpl_config *c, const mpl_platform *p, char *msg, size_t cap);
    /* The kernel's paths in priority order (at least one; MPL_MAX_PATHS at most). */
    const mpl_path_desc *paths;
    int npaths;
    /* Pack canonical weights into the kernel's layout, for the platform p (CUDA: p->cuda_device).
     * enabled: bit i set when paths[i] passed the chooser (a kernel may skip state for the others).
     * *packed owned by the kernel. */
    mpl_status (*pack)(const mpl_config *c, const mpl_canonical *w, const mpl_platform *p, uint32_t enabled,
                       void **packed);
    /* Optional: can path i run on this packed layer? (state only known after pack, e.g. a tensor map
     * the driver could not encode). NULL = yes. Writes a message on refusal. */
    mpl_reason (*path_ready)(const void *packed, int path, char *msg, size_t cap);
    void (*destroy)(void *packed);
    /* Workspace bytes an apply of m rows on path needs (may be 0). */
    size_t (*workspace_size)(const void *packed, int64_t m, int threads, int path);
    mpl_status (*apply)(const void *packed, const mpl_apply_args *a);
    /* Bytes of weights+scales+zeros held (for the benchmark's traffic count). */
    size_t (*weight_bytes)(const void *packed);
    /* Optional: unit roundoff of the weights an apply of m rows on path rounds
     * (mpl_layer_weight_rounding); NULL = 0 (exact). */
    double (*weight_rounding)(const void *packed, int64_t m, int path);
} mpl_kernel_desc;

/* Registry (src/core/registry.c): kernels of a backend in priority order, ref last. */
const mpl_kernel_desc *const *mpl_registry(mpl_backend b, int *count);
/* The kernel called name, or NULL. */
const mpl_kernel_desc *mpl_registry_find(const char *name);
/* "kernel" or "kernel:path": the kernel, and *path the index of the path (-1 for a kernel name).
 * NULL when no kernel or path has that name. */
const mpl_kernel_desc *mpl_registry_find_path(const char *name, int *path);

/*
 * The chooser (registry.c). One kernel's verdict, in a fixed order: MPL_DISABLED_KERNELS, the ISA
 * floor or the CUDA device and compute capability, irregular act-order, can_implement, and then its
 * paths: refused when no path passes mpl_path_check (the first path's reason and message).
 */
mpl_reason mpl_kernel_check(const mpl_kernel_desc *d, const mpl_config *cfg, const mpl_platform *p,
                            int irregular_act_order, char *msg, size_t cap);
/* Path i of d alone (its kernel's verdict not included): disabled by name, the path's ISA bits or
 * compute-capability range, its can_implement. */
mpl_reason mpl_path_check(const mpl_kernel_desc *d, int i, const mpl_config *cfg, const mpl_platform *p, char *msg,
                          size_t cap);

/* What the chooser decided for a config: the kernel, the paths it may run, their m ranges. */
typedef struct mpl_plan {
    const mpl_kernel_desc *kernel;
    int forced_path;  /* path index named by mpl_options.kernel, or -1 */
    uint32_t enabled; /* bit i: paths[i] passed mpl_path_check (only the forced one when forced) */
    int64_t m_min[MPL_MAX_PATHS], m_max[MPL_MAX_PATHS]; /* default ranges for this config (m_range applied) */
    mpl_platform platform; /* the platform it was chosen on (CUDA fields of opt's device) */
} mpl_plan;

mpl_status mpl_choose_plan(const mpl_config *cfg, const mpl_options *opt, int irregular_act_order, mpl_plan *plan,
                           mpl_choice_entry *entries, int cap, int *count);
mpl_status mpl_choose_internal(const mpl_config *cfg, const mpl_options *opt, int irregular_act_order,
                               const mpl_kernel_desc **chosen, mpl_choice_entry *entries, int cap, int *count);
/* The second half of mpl_layer_create (layer.c), for a canonical form already made (decoded, or a
 * shard's slice, src/core/shard.c): resolves act-order, chooses again for irregular groups, packs.
 * cfg has passed mpl_config_validate, static_plan is mpl_choose_plan's for it; takes w (freed, zeroed). */
mpl_status mpl_layer_create_canonical(const mpl_config *cfg, const mpl_options *opt, const mpl_plan *static_plan,
                                      mpl_canonical *w, mpl_layer **out);
/* The path an apply of m rows runs under plan (index), or -1 when no enabled path can run m. */
int mpl_plan_path(const mpl_plan *plan, int64_t m);

/* The platform a choice for opt is made on (src/platform/cpu.c): mpl_platform_current(), plus, when opt
 * asks for the CUDA backend, the device count and the compute capability of opt->cuda_device (queried
 * once; a test override's own CUDA fields are kept). */
void mpl_platform_for(const mpl_options *opt, mpl_platform *out);

/* Environment knobs, all read here (src/core/env.c; the README lists them). NULL when unset. */
const char *mpl_env_disabled_kernels(void); /* MPL_DISABLED_KERNELS: kernel or path names, comma-separated */
const char *mpl_env_max_isa(void);          /* MPL_MAX_ISA: cap on the CPU features used */

/* Helper for can_implement implementations. */
mpl_reason mpl_refuse(char *msg, size_t cap, mpl_reason r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* 64-byte aligned allocation, overflow-checked; NULL on failure. */
void *mpl_aligned_alloc(size_t bytes);
void mpl_aligned_free(void *p);

#endif /* MPL_INTERNAL_H */
