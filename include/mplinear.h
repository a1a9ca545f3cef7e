/*
 * mplinear.h -- mixed-precision linear-layer kernels for LLM inference.
 *
 * The only public header. It is the specification of the C API: every
 * function documents its contract here.
 *
 *   y[M x N] = x[M x K] . W^T + b,  W quantized to 2, 3, 4 or 8 bits with group scales.
 *
 * Life cycle (plan once, run cheap):
 *   mpl_layer_create(config, checkpoint tensors, options, &layer)
 *       validates the config, decodes the checkpoint layout into one canonical
 *       form, chooses a kernel (first in the platform's priority list that can
 *       implement the config; refusals are kept with reasons) and packs the
 *       weights into that kernel's own layout. The caller may free its tensors
 *       afterwards; the layer holds one copy of the weights.
 *   mpl_layer_apply(layer, m, x, bias, y)         any number of times, from
 *       any number of threads concurrently.
 *   mpl_layer_destroy(layer)                       NULL-safe.
 *
 * Errors: every function returns an mpl_status. On failure, mpl_last_error()
 * returns a message (thread-local, valid until the next call on this thread)
 * that names the problem: the field, the value and the rule. The library never
 * aborts or exits on bad input.
 */
#ifndef MPLINEAR_H
#define MPLINEAR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MPL_VERSION_MAJOR 0
#define MPL_VERSION_MINOR 1
#define MPL_VERSION_PATCH 0
#define MPL_VERSION_STRING "0.1.0"
/* MAJOR*10000 + MINOR*100 + PATCH; mpl_version_number() gives the library's at run time. */
#define MPL_VERSION_NUMBER (MPL_VERSION_MAJOR * 10000 + MPL_VERSION_MINOR * 100 + MPL_VERSION_PATCH)

/*
 * MPL_API marks the exported functions: a shared libmplinear exports exactly these (the build
 * compiles with -fvisibility=hidden and MPL_BUILDING). A static build exports nothing extra.
 */
#if defined(MPL_BUILDING) && defined(__GNUC__)
#define MPL_API __attribute__((visibility("default")))
#else
#define MPL_API
#endif

/*
 * ABI: mpl_config, mpl_options, mpl_platform_info and the other structs below are passed by
 * value or filled by the library; adding a field is an ABI break (a new MPL_VERSION_MAJOR
 * while it is 0: a new MINOR).
 */

/* Status codes. Values are pinned: they are part of the ABI. */
typedef enum mpl_status {
    MPL_OK = 0,
    MPL_ERR_INVALID_ARGUMENT = 1, /* a parameter or config field breaks a rule */
    MPL_ERR_UNSUPPORTED = 2,      /* valid, but no (or the forced) kernel implements it */
    MPL_ERR_NO_HARDWARE = 3,      /* the hardware/ISA/device needed is absent */
    MPL_ERR_OUT_OF_MEMORY = 4,
    MPL_ERR_OVERFLOW = 5,         /* a size or byte count overflows */
    MPL_ERR_IO = 6,               /* a file could not be opened/read/written */
    MPL_ERR_FORMAT = 7,           /* a file or tensor is malformed */
    MPL_ERR_CUDA = 8,             /* a CUDA runtime error (message carries CUDA's) */
    MPL_ERR_INTERNAL = 9
} mpl_status;

MPL_API const char *mpl_status_string(mpl_status s);
/* Detailed message for the last failure on this thread ("" if none). */
MPL_API const char *mpl_last_error(void);
MPL_API const char *mpl_version(void);
/* MPL_VERSION_NUMBER of the library actually linked. */
MPL_API int mpl_version_number(void);

/* Quantized weight types; semantics as vLLM's ScalarType (value = stored - bias). */
typedef enum mpl_wtype {
    MPL_WTYPE_UINT4B8 = 1,   /* 4-bit stored s in [0,15], value s - 8 */
    MPL_WTYPE_UINT4 = 2,     /* 4-bit stored s, value s - z (z: per-group zero point) */
    MPL_WTYPE_INT4 = 3,      /* 4-bit two's complement, value in [-8,7] */
    MPL_WTYPE_UINT8B128 = 4, /* 8-bit stored s, value s - 128 */
    MPL_WTYPE_UINT8 = 5,     /* 8-bit stored s, value s - z */
    MPL_WTYPE_UINT2B2 = 6,   /* 2-bit stored s in [0,3], value s - 2 */
    MPL_WTYPE_UINT3B4 = 7,   /* 3-bit stored s in [0,7], value s - 4 */
    MPL_WTYPE_UINT2 = 8,     /* 2-bit stored s, value s - z */
    MPL_WTYPE_UINT3 = 9      /* 3-bit stored s, value s - z */
} mpl_wtype;

typedef enum mpl_act {
    MPL_ACT_F16 = 1,
    MPL_ACT_BF16 = 2,
    MPL_ACT_F32 = 3
} mpl_act;

typedef enum mpl_mode {
    MPL_MODE_W4A16 = 0, /* activations used as given (name kept for all weight widths) */
    MPL_MODE_W4A8 = 1   /* each row of x quantized on the fly to symmetric int8 */
} mpl_mode;

/*
 * Layer config (vLLM's MPLinearLayerConfig).
 * k, n: the partition (this rank's slice); full_k, full_n: the whole layer
 * (0 means "same as the partition"). group_size: -1 = one group spanning K,
 * else a positive divisor of k. act_order: a g_idx tensor gives each input
 * channel's group.
 *
 * W4A8 semantics (exact): for each row of x (converted to fp32),
 *   amax = max_k |x[k]|; inv = 127.0f / amax; q[k] = nearbyintf(x[k] * inv)
 *   (round half to even), clamped to [-127,127]; sx = amax / 127.0f.
 *   isum_g = sum over k in group g of q[k] * w[k] (exact integer);
 *   y = (sum_g scale[n,g] * (float)isum_g) * sx + bias[n], rounded once.
 *   A row with amax == 0, or with amax so small that 127.0f / amax is inf
 *   (amax < 127/FLT_MAX ~ 3.7e-37), gives q = 0 (y = bias). A row holding inf
 *   or NaN gives NaN in every output of that row.
 * W4A16 semantics: y = bias[n] + sum_g scale[n,g] * (sum_{k in g} x[k]*w[k]),
 *   fp32 accumulation, output rounded once to the activation type
 *   (round to nearest even). The group sum may run in any order and may add
 *   products two at a time (x[j]*w[j] + x[j+1]*w[j+1] looked up from a table
 *   of such sums), or a product as two exact parts x[k]*a + x[k]*b with
 *   a + b = w[k] (the 3-bit decode's tables; with zero points, a = stored and
 *   b = -zero, whose parts a group may sum apart); the scale is applied once per
 *   group. Exception, stated per call by
 *   mpl_layer_weight_rounding: CUDA tensor-core paths (cuda_w4a16:skinny-rounded
 *   with bf16 scales, :wg above 32 rows or with groups that split a 64-channel
 *   chunk, :wg-streamk always, :dq) may instead multiply weights rounded once to the activation
 *   type, round(w * scale), accumulating in fp32, as cuBLAS-based and
 *   Marlin-style kernels do. CPU kernels always keep the exact contract.
 */
typedef struct mpl_config {
    int64_t k, n;
    int64_t full_k, full_n;
    mpl_wtype wtype;
    mpl_act act;
    int64_t group_size;
    int zero_points; /* 1: per-group zero points (uint2/uint3/uint4/uint8 only) */
    int act_order;   /* 1: g_idx gives the group of every input channel */
    mpl_mode mode;
} mpl_config;

/* Fill with defaults (group -1, uint4b8, bf16, W4A16, full = partition). */
MPL_API void mpl_config_init(mpl_config *c, int64_t k, int64_t n);
/* MPL_OK or MPL_ERR_INVALID_ARGUMENT with a message naming field, value, rule. */
MPL_API mpl_status mpl_config_validate(const mpl_config *c);

MPL_API const char *mpl_wtype_name(mpl_wtype t);
/* Bits per stored code (2, 3, 4 or 8); 0 for an unknown type. */
MPL_API int mpl_wtype_width(mpl_wtype t);
/* 1 when the type stores s - z and so needs per-group zero points (uint2, uint3, uint4, uint8), else 0. */
MPL_API int mpl_wtype_zero_points(mpl_wtype t);
MPL_API const char *mpl_act_name(mpl_act a);
/* Parse names ("uint4b8", "bf16", ...). MPL_ERR_INVALID_ARGUMENT if unknown. */
MPL_API mpl_status mpl_wtype_parse(const char *s, mpl_wtype *out);
MPL_API mpl_status mpl_act_parse(const char *s, mpl_act *out);

/* Element types of caller tensors. */
typedef enum mpl_dtype {
    MPL_DTYPE_NONE = 0,
    MPL_DTYPE_I32 = 1,
    MPL_DTYPE_I8 = 2,
    MPL_DTYPE_U8 = 3,
    MPL_DTYPE_F16 = 4,
    MPL_DTYPE_BF16 = 5,
    MPL_DTYPE_F32 = 6,
    MPL_DTYPE_I64 = 7
} mpl_dtype;

MPL_API const char *mpl_dtype_name(mpl_dtype d);
MPL_API size_t mpl_dtype_size(mpl_dtype d);

#define MPL_MAX_DIMS 4
/* A borrowed, C-contiguous (row-major) tensor. data == NULL means absent. */
typedef struct mpl_tensor {
    const void *data;
    mpl_dtype dtype;
    int ndim;
    int64_t shape[MPL_MAX_DIMS];
} mpl_tensor;

/* Checkpoint layouts (see docs/layouts/checkpoints.md). */
typedef enum mpl_layout {
    MPL_LAYOUT_CT = 1,      /* compressed-tensors pack-quantized: weight_packed [N, K/pf] i32,
                               weight_scale [N, G], weight_zero_point [N/pf, G] i32, weight_g_idx [K] */
    MPL_LAYOUT_GPTQ = 2,    /* qweight [K/pf, N] i32, qzeros [G, N/pf] (stores zero-1), scales [G, N], g_idx [K] */
    MPL_LAYOUT_GPTQ_V2 = 3, /* as GPTQ but qzeros store the zero itself */
    MPL_LAYOUT_AWQ = 4,     /* qweight [K, N/pf] i32 AWQ-interleaved, qzeros [G, N/pf], scales [G, N] */
    MPL_LAYOUT_CT_INT = 5   /* compressed-tensors int-quantized: weight [N, K] i8 signed values, weight_scale [N, G] */
} mpl_layout;

MPL_API const char *mpl_layout_name(mpl_layout l);
MPL_API mpl_status mpl_layout_parse(const char *s, mpl_layout *out); /* ct|gptq|gptq-v2|awq|ct-int */

typedef struct mpl_checkpoint_tensors {
    mpl_layout layout;
    mpl_tensor weight;  /* packed weights in the layout's shape */
    mpl_tensor scales;  /* f16, bf16 or f32 */
    mpl_tensor zeros;   /* packed zero points (uint4/uint8 with zero_points) */
    mpl_tensor g_idx;   /* [K] i32 (act_order) */
} mpl_checkpoint_tensors;

/*
 * Encode weights given as stored codes into a checkpoint layout (the inverse
 * of what mpl_layer_create decodes): for tests, benchmarks and converters.
 *   codes [n][k]: stored codes (0..15 / 0..255; int4: the two's-complement
 *     nibble; ct-int: the nibble, written as the signed value).
 *   scales [n][G] floats, written as scale_dtype (f16, bf16 or f32).
 *   zeros [n][G] raw zero points (when cfg->zero_points) or NULL.
 *   g_idx [k] (when cfg->act_order) or NULL.
 * Allocates every tensor; release with mpl_checkpoint_tensors_free.
 */
MPL_API mpl_status mpl_checkpoint_encode(const mpl_config *cfg, mpl_layout layout, const uint8_t *codes, const float *scales,
                                 mpl_dtype scale_dtype, const uint8_t *zeros, const int32_t *g_idx,
                                 mpl_checkpoint_tensors *out);
MPL_API void mpl_checkpoint_tensors_free(mpl_checkpoint_tensors *t);

typedef enum mpl_device {
    MPL_DEVICE_CPU = 0,
    MPL_DEVICE_CUDA = 1,
    MPL_DEVICE_VULKAN = 2 /* the optional Vulkan module (MPLINEAR_VULKAN): vulkan_w4a16, vulkan_w4a8 */
} mpl_device;

typedef struct mpl_options {
    const char *kernel; /* force a kernel ("x86_avx512_w4a16") or one of its paths
                           ("cuda_w4a16:wg"); NULL or "" = choose. Names: mpl_kernel_get, mpl_path_get. */
    int threads;        /* CPU threads for apply; 0 = all cores */
    mpl_device device;  /* which backend's kernels to consider */
    int cuda_device;    /* CUDA device ordinal the layer lives on (0 = the first); the chooser checks
                           that device's compute capability; MPL_ERR_NO_HARDWARE when absent */
    int vulkan_device;  /* Vulkan physical device index (mpl_vulkan_device_get) the layer lives on (0 = the first) */
    const char *vulkan_device_name; /* when non-empty: the first Vulkan device whose name contains this text
                                       (case-insensitive) instead of vulkan_device; none matching: NO_HARDWARE */
} mpl_options;

MPL_API void mpl_options_init(mpl_options *o);

typedef struct mpl_layer mpl_layer;

MPL_API mpl_status mpl_layer_create(const mpl_config *cfg, const mpl_checkpoint_tensors *ckpt,
                            const mpl_options *opt, mpl_layer **out);
/*
 * m: rows, 0..2^31-1 (MPL_ERR_INVALID_ARGUMENT outside; m = 0 does nothing).
 * x: [m x k] in the activation type, row-major. bias: [n] in the activation
 * type, or NULL. y: [m x n] in the activation type. Host pointers; for a CUDA
 * layer the data is copied to and from the device (synchronous).
 * Allocates nothing on the hot path once a size has been seen on a thread.
 */
MPL_API mpl_status mpl_layer_apply(mpl_layer *layer, int64_t m, const void *x, const void *bias, void *y);
/*
 * CUDA layers only: device pointers, asynchronous on the given cudaStream_t
 * (passed as void*; NULL = default stream).
 */
MPL_API mpl_status mpl_layer_apply_device(mpl_layer *layer, int64_t m, const void *x, const void *bias,
                                  void *y, void *stream);
MPL_API void mpl_layer_destroy(mpl_layer *layer);

/* The kernel the layer runs (NULL for a NULL layer). */
MPL_API const char *mpl_layer_kernel(const mpl_layer *layer);
/*
 * The path an apply of m rows takes, "<kernel>:<path>" (e.g. "x86_avx512_w4a16:decode"): the
 * first path of the kernel, in priority order, that the chooser allowed and whose default m range
 * holds m, else the first allowed one that can run m; the forced path when options named one.
 * NULL for a NULL layer, m < 1, or an m no allowed path can run (apply then fails, naming why).
 */
MPL_API const char *mpl_layer_path(const mpl_layer *layer, int64_t m);
MPL_API const mpl_config *mpl_layer_config(const mpl_layer *layer);
/* CPU threads an apply uses: mpl_options.threads, capped at the CPUs of the process's affinity mask
 * (0 = all of them); 1 for a CUDA layer. 0 for a NULL layer. */
MPL_API int mpl_layer_threads(const mpl_layer *layer);
/* Bytes of packed weights + scales + zeros the layer holds. */
MPL_API size_t mpl_layer_weight_bytes(const mpl_layer *layer);
/*
 * Weight rounding of an apply of m rows: u > 0 when the kernel's path for m multiplies rounded
 * scaled weights w^ = round((code - zero) * scale) (one rounding to the activation type, so
 * |w^ - w s| <= u |w s|, plus 2^-25 absolute per weight for f16 subnormals) instead of summing
 * exact integer weights and scaling in fp32 as the reference does; 0 when exact (every CPU kernel;
 * cuda_w4a16's skinny and tc paths, skinny-rounded with f16 or f32 scales). Error bounds add u * sum |x w s| per output.
 */
MPL_API double mpl_layer_weight_rounding(const mpl_layer *layer, int64_t m);

/* ---- Tensor parallelism: one layer sharded over ranks (docs/tensor-parallel.md) ---- */

/*
 * Column-parallel splits N: rank r of R holds output channels [r*N/R, (r+1)*N/R) and computes
 * those outputs of y (gathered, or kept sharded by the next layer). Row-parallel splits K: rank r
 * holds input channels [r*K/R, (r+1)*K/R), takes that slice of x and computes a partial y over all
 * N; the partials are summed (an all-reduce). Every rank holds exactly its slice of the weights,
 * scales, zero points and g_idx. The rules (every refusal is MPL_ERR_INVALID_ARGUMENT, the message
 * naming the rule and the values):
 *   - 1 <= ranks <= MPL_TP_MAX_RANKS, 0 <= rank < ranks; every rank holds the same share, so N
 *     (column) or K (row) must be a multiple of ranks.
 *   - No shard boundary inside a packed int32 word: row-parallel k/R a multiple of 32/bits
 *     (weights packed along K); column-parallel n/R a multiple of 32/bits with layout awq (weights
 *     packed along N) and with zero points (zeros packed along N in gptq, gptq-v2, ct).
 *   - Row-parallel without act-order: a group may not straddle ranks (k/R a multiple of group_size),
 *     unless the layer has one group over K (group_size -1 or = K): then every rank keeps the
 *     per-channel scales and its config says group_size -1.
 *   - Row-parallel with act-order: any k/R the rules above allow; each rank keeps the g_idx entries
 *     of its K slice and the scales and zeros of the groups they name (renumbered in ascending order).
 *     Unless each named group then holds exactly group_size of the rank's channels, only kernels that
 *     take irregular act-order groups (ref) can run the shard.
 *   - The shard must be a valid config (mpl_config_validate) of the layout (ct-int: int4; awq: no
 *     act-order), with k, n = the slice and full_k, full_n = the whole layer.
 */
#define MPL_TP_MAX_RANKS 1024

typedef enum mpl_tp_mode {
    MPL_TP_COLUMN = 1, /* N split: outputs sharded */
    MPL_TP_ROW = 2     /* K split: partial outputs summed */
} mpl_tp_mode;

typedef struct mpl_shard {
    mpl_tp_mode mode;
    int rank, ranks;
} mpl_shard;

/* "column" / "row"; parse: MPL_ERR_INVALID_ARGUMENT if unknown. */
MPL_API const char *mpl_tp_mode_name(mpl_tp_mode m);
MPL_API mpl_status mpl_tp_mode_parse(const char *s, mpl_tp_mode *out);

/*
 * The config of rank sh->rank's shard of the whole layer `full` (full_k, full_n of `full` must be 0
 * or equal to k, n) stored in `layout`, after every rule above that needs no tensor data; *offset
 * (may be NULL) gets the first channel of the slice (output channel for column, input channel for
 * row). An act-order row shard's config may have a k that group_size does not divide (its groups
 * are the whole layer's): such a config describes a shard, it is not a layer mpl_layer_create
 * decodes.
 */
MPL_API mpl_status mpl_shard_config(const mpl_config *full, mpl_layout layout, const mpl_shard *sh, mpl_config *out,
                                    int64_t *offset);

/*
 * mpl_layer_create for one rank: ckpt holds the WHOLE layer (as mpl_layer_create takes it for
 * `full`); the layer holds exactly rank sh->rank's slice, and mpl_layer_config gives the shard's
 * config (mpl_shard_config). Decodes the whole checkpoint once per call (create time only).
 * apply then takes x [m x k/R] (row) or [m x K] (column), bias [n/R] (column: the rank's slice;
 * row: see mpl_tp_apply_host) and writes y [m x n] of the shard.
 */
MPL_API mpl_status mpl_layer_create_shard(const mpl_config *full, const mpl_checkpoint_tensors *ckpt,
                                          const mpl_shard *sh, const mpl_options *opt, mpl_layer **out);

/*
 * Every rank's layer at once, decoding the checkpoint once: layers[r] (ranks entries) as
 * mpl_layer_create_shard gives it for rank r. opts: ranks entries, rank r's options (its kernel,
 * threads, device, cuda_device), or NULL for defaults. On failure every layers[r] is NULL and the
 * message names the rank.
 */
MPL_API mpl_status mpl_layer_create_shards(const mpl_config *full, const mpl_checkpoint_tensors *ckpt, mpl_tp_mode mode,
                                           int ranks, const mpl_options *opts, mpl_layer **layers);

/*
 * The host stand-in for a tensor-parallel apply: layers[r] is rank r's shard (ranks of them, all
 * of one layer in `mode`); x [m x K], bias [N] or NULL, y [m x N] in the activation type, as the
 * unsharded layer's apply takes them. Column: rank r computes y[:, its slice] with bias[its slice].
 * Row: rank r applies its layer to x[:, its K slice] (rank 0 with the bias, the others without, as
 * vLLM's RowParallelLinear does), giving a partial in the activation type; the R partials are
 * converted to fp32 and summed in rank order on the host, then rounded once to the activation type
 * (an all-reduce in fp32). Run one rank after another on the calling thread (each apply uses its
 * layer's threads). Allocates its temporaries per call (a test and CI tool, not a hot path).
 */
MPL_API mpl_status mpl_tp_apply_host(mpl_layer *const *layers, int ranks, mpl_tp_mode mode, int64_t m, const void *x,
                                     const void *bias, void *y);

/* ---- Kernel registry and chooser ---- */

/* Reason codes for refusals (a fixed catalogue; values pinned). */
typedef enum mpl_reason {
    MPL_REASON_OK = 0,
    MPL_REASON_ISA_MISSING = 1,
    MPL_REASON_GROUP_SIZE = 2,
    MPL_REASON_SHAPE = 3,
    MPL_REASON_ACT_TYPE = 4,
    MPL_REASON_WEIGHT_TYPE = 5,
    MPL_REASON_ZERO_POINTS = 6,
    MPL_REASON_ACT_ORDER = 7,
    MPL_REASON_DISABLED = 8,
    MPL_REASON_DEVICE = 9,
    MPL_REASON_MODE = 10,
    MPL_REASON_NOT_BUILT = 11
} mpl_reason;

MPL_API const char *mpl_reason_name(mpl_reason r);

typedef struct mpl_kernel_info {
    const char *name;
    const char *backend; /* "cpu" or "cuda" */
    const char *layout;  /* packed layout name (docs/layouts/<layout>.md) */
    const char *requires;/* human-readable requirement, e.g. "avx512f+avx512bw" */
    int paths;           /* number of paths (mpl_path_get) */
} mpl_kernel_info;

/* Number of kernels in all tables, and their descriptions (in priority order per backend). */
MPL_API int mpl_kernel_count(void);
MPL_API mpl_status mpl_kernel_get(int i, mpl_kernel_info *out);

/*
 * The code paths of a kernel, each a registry row (docs/naming.md): nameable ("<kernel>:<path>"),
 * forceable (mpl_options.kernel), disableable (MPL_DISABLED_KERNELS). m_min..m_max is the range of
 * rows the path serves by default (when no path before it does; INT64_MAX: no bound), set by the
 * measurement in why; m_limit the most rows it runs when forced.
 */
typedef struct mpl_path_info {
    const char *name;     /* "<kernel>:<path>" */
    const char *kernel;   /* the kernel's name */
    const char *requires; /* what it needs beyond its kernel ("" = nothing more) */
    int64_t m_min, m_max, m_limit;
    const char *why;      /* the measurement behind m_min..m_max */
} mpl_path_info;

/* Path j (0..mpl_kernel_info.paths-1, priority order) of kernel i. */
MPL_API mpl_status mpl_path_get(int kernel, int path, mpl_path_info *out);

typedef struct mpl_choice_entry {
    const char *kernel;
    mpl_reason reason;  /* MPL_REASON_OK for the chosen kernel */
    char message[256];
} mpl_choice_entry;

/*
 * Run the chooser for a config on this platform without creating a layer.
 * Fills up to cap entries (every kernel of the backend, in order, up to and
 * including the chosen one); *count gets the number written; *chosen the
 * chosen kernel's name or NULL. Returns MPL_OK if one was chosen,
 * MPL_ERR_UNSUPPORTED (message lists every reason) otherwise.
 * Honours MPL_DISABLED_KERNELS=a,b (kernel or path names) and opt->kernel.
 * A kernel is refused when none of its paths can run the config.
 */
MPL_API mpl_status mpl_choose(const mpl_config *cfg, const mpl_options *opt, const char **chosen,
                      mpl_choice_entry *entries, int cap, int *count);

/* The chooser's verdict on one kernel or path for a config (mpl_check). */
typedef struct mpl_verdict {
    mpl_reason reason;   /* MPL_REASON_OK: it can run the config */
    char message[256];   /* why not ("" when OK) */
    int64_t m_min, m_max;/* paths: the default m range for this config (kernels: 1, INT64_MAX) */
} mpl_verdict;

/*
 * The verdict on kernel or path `name` ("x86_avx512_w4a16", "cuda_w4a16:wg") for cfg on this
 * platform, as the chooser would give it (MPL_DISABLED_KERNELS, ISA or compute capability, the
 * config's rules; a path is refused when its kernel is). cfg NULL: the platform alone (disabled,
 * ISA, device), with the path's static m range. opt->cuda_device picks the device; opt->kernel
 * and opt->device are ignored (the name says the backend). MPL_ERR_INVALID_ARGUMENT for an unknown
 * name or an invalid config.
 */
MPL_API mpl_status mpl_check(const mpl_config *cfg, const mpl_options *opt, const char *name, mpl_verdict *out);

/*
 * The kernel mpl_choose picks and the path an apply of m rows would take on a layer created with
 * cfg and opt (mpl_layer_path), without creating one: *path gets "<kernel>:<path>" or NULL. A path
 * whose state is only known once weights are packed (a CUDA tensor map) is assumed to be usable.
 */
MPL_API mpl_status mpl_choose_path(const mpl_config *cfg, const mpl_options *opt, int64_t m, const char **path);

/* ---- Platform ---- */

#define MPL_ISA_SSE42 (1u << 0)
#define MPL_ISA_AVX2 (1u << 1)
#define MPL_ISA_FMA (1u << 2)
#define MPL_ISA_F16C (1u << 3)
#define MPL_ISA_AVX512F (1u << 4)
#define MPL_ISA_AVX512BW (1u << 5)
#define MPL_ISA_AVX512VL (1u << 6)
#define MPL_ISA_AVX512DQ (1u << 7)
#define MPL_ISA_AVX512_BF16 (1u << 8)
#define MPL_ISA_AVX512_VNNI (1u << 9)
#define MPL_ISA_AVX_VNNI (1u << 10)
#define MPL_ISA_AVX512_FP16 (1u << 11)
#define MPL_ISA_AMX_TILE (1u << 12)
#define MPL_ISA_AMX_BF16 (1u << 13)
#define MPL_ISA_AMX_INT8 (1u << 14)

typedef struct mpl_platform_info {
    char cpu_model[64];
    uint32_t isa;        /* usable features after OS support and MPL_MAX_ISA cap */
    uint32_t isa_cpuid;  /* what CPUID reports, before the cap */
    int cpu_threads;     /* online logical CPUs */
    char isa_cap[16];    /* value of MPL_MAX_ISA or "" */
    int cuda_built;      /* library built with CUDA */
    int cuda_devices;    /* 0 when none or not built */
    char cuda_name[64];  /* device 0 */
    int cuda_cc;         /* device 0 compute capability, major*10+minor */
    char cuda_note[128]; /* why CUDA is unavailable, if it is */
} mpl_platform_info;

MPL_API mpl_status mpl_platform_get(mpl_platform_info *out);
/* Writes "avx2 fma f16c avx512f ..." for an ISA mask. */
MPL_API void mpl_isa_string(uint32_t isa, char *buf, size_t cap);

/* ---- Vulkan devices (the optional Vulkan module; lavapipe and NVIDIA measured, RADV/ANV written for) ---- */

typedef struct mpl_vulkan_device_info {
    char name[256];         /* VkPhysicalDeviceProperties.deviceName */
    char driver[256];       /* driverName and driverInfo (VkPhysicalDeviceDriverProperties) */
    char type[16];          /* "discrete", "integrated", "virtual", "cpu" or "other" */
    uint32_t api_version, vendor_id, device_id;
    int subgroup_size;
    int subgroup_arithmetic; /* subgroup arithmetic operations in compute shaders */
    int shader_float16, storage_16bit;
    uint64_t max_storage_buffer_range;
    char coopmat[512];      /* VK_KHR_cooperative_matrix shapes, "MxNxK A*B+C->R scope" ...; "" when absent */
    int usable;             /* meets vulkan_w4a16's floor (Vulkan 1.1, subgroup arithmetic, a compute queue) */
    char note[128];         /* why not, when !usable */
} mpl_vulkan_device_info;

/* Vulkan physical devices the loader reports (0 when the module is not built, libvulkan.so.1 is absent or no
 * driver (ICD) answers; note then says which, when note is not NULL). Enumerated once per process. */
MPL_API int mpl_vulkan_devices(char *note, size_t cap);
/* Device i (0..mpl_vulkan_devices()-1). MPL_ERR_INVALID_ARGUMENT outside. */
MPL_API mpl_status mpl_vulkan_device_get(int i, mpl_vulkan_device_info *out);

/* ---- fp16/bf16 helpers (round to nearest even) ---- */
MPL_API uint16_t mpl_f32_to_f16(float f);
MPL_API float mpl_f16_to_f32(uint16_t h);
MPL_API uint16_t mpl_f32_to_bf16(float f);
MPL_API float mpl_bf16_to_f32(uint16_t h);

/* ---- Quantized checkpoint directories (docs/checkpoints.md) ---- */

/*
 * A Hugging Face-style model folder: config.json (its quantization_config, or
 * a quantize_config.json / quant_config.json beside it) and *.safetensors
 * (one file, or shards listed by model.safetensors.index.json), mapped
 * read-only. Quantization methods read: GPTQ (gptq / gptq_v2), AWQ (gemm) and
 * compressed-tensors (pack-quantized, int-quantized; W4A16 and dynamic
 * per-token int8 W4A8; config_groups targets and the ignore list).
 *
 * A layer is one quantized linear module, named by its module prefix
 * ("model.layers.0.mlp.down_proj"); modules that are not quantized are not
 * layers. Every header field, dtype, shape and offset is checked on open;
 * errors are MPL_ERR_IO (a file is missing or unreadable), MPL_ERR_FORMAT
 * (a file is malformed or inconsistent) or MPL_ERR_UNSUPPORTED (a valid
 * method or option mplinear does not handle), with a message naming the file
 * and the problem. An open model is immutable: any number of threads may
 * query it and create layers from it concurrently.
 */
typedef struct mpl_model mpl_model;

typedef struct mpl_model_layer_info {
    const char *name;   /* module prefix; valid while the model is open */
    mpl_config config;  /* act = the checkpoint's activation type (torch_dtype) */
    mpl_layout layout;  /* how the checkpoint stores it */
    int has_bias;       /* the module has a "<name>.bias" tensor [n] */
    const char *file;   /* path of the shard holding its packed weight */
    /* Non-zero for GPTQ v1 checkpoints written by GPTQModel (quantize_config meta.quantizer) at 2, 4 or 8 bits
     * with zero points: GPTQModel stores its zeros as the packed zeros minus this constant per int32 word (a zero
     * of 0 borrows from the next field), so qzeros words plus it, decoded as MPL_LAYOUT_GPTQ_V2, are the zeros it
     * means. mpl_model_layer_create does this itself; a caller decoding the shard's tensors must too. */
    uint32_t zeros_word_add;
} mpl_model_layer_info;

MPL_API mpl_status mpl_model_open(const char *dir, mpl_model **out);
MPL_API void mpl_model_close(mpl_model *m); /* NULL-safe */

/* "gptq", "awq" or "compressed-tensors". */
MPL_API const char *mpl_model_quant_method(const mpl_model *m);
/* The checkpoint's activation type: torch_dtype, else the scales' float type. */
MPL_API mpl_act mpl_model_act(const mpl_model *m);
/*
 * Layers in the order a forward pass runs them: by block index (the first all-digit component
 * of the name: model.layers.<i>, encoder.layer.<i>), then, when config.json's architectures
 * (or model_type) names a known family (Llama/Mistral/Qwen/Gemma/Phi-3/DeepSeek-style, BERT,
 * GPT-NeoX, Falcon, GPT-2, OPT), that family's projection order (q, k, v, o, gate, up, down;
 * each expert's projections together); else the order of model.safetensors.index.json; else
 * natural name order (layers.2 before layers.10). Layers outside numbered blocks come last.
 */
MPL_API int mpl_model_layer_count(const mpl_model *m);
/* The rule the layers are ordered by, as a sentence (valid while the model is open). */
MPL_API const char *mpl_model_layer_order(const mpl_model *m);
MPL_API mpl_status mpl_model_layer_get(const mpl_model *m, int i, mpl_model_layer_info *out);
/* Index of the layer with exactly this name; MPL_ERR_INVALID_ARGUMENT if none. */
MPL_API mpl_status mpl_model_find_layer(const mpl_model *m, const char *name, int *index);
/*
 * Creates layer i (see mpl_layer_create) with activation type act
 * (0 = mpl_model_act(m)). The layer owns its packed copy: it stays valid
 * after mpl_model_close.
 */
MPL_API mpl_status mpl_model_layer_create(const mpl_model *m, int i, const mpl_options *opt, mpl_act act,
                                  mpl_layer **out);
/*
 * The kernel mpl_model_layer_create(m, i, opt, act) would run, without decoding or packing:
 * the same checks and choice (the config, the weight values create range-checks -- g_idx at
 * open, int-quantized int4 values here -- and act-order groups of unequal size, which only
 * the reference kernel runs). *chosen gets the kernel name, or NULL with the status create
 * would return (MPL_ERR_UNSUPPORTED: no kernel implements it, with every reason).
 */
MPL_API mpl_status mpl_model_layer_choose(const mpl_model *m, int i, const mpl_options *opt, mpl_act act,
                                          const char **chosen);
/*
 * Writes layer i's bias (n values) converted to act (0 = the model's) into
 * out, ready for mpl_layer_apply. MPL_ERR_INVALID_ARGUMENT if it has none.
 */
MPL_API mpl_status mpl_model_layer_bias(const mpl_model *m, int i, mpl_act act, void *out);

#ifdef __cplusplus
}
#endif
#endif /* MPLINEAR_H */
