/*
 * x86_w4a16_driver.h -- what the x86 W4A16 kernels (x86_avx512_w4a16, x86_avx2_w4a16) share: the
 * packed kernel state, the per-path implementation rows and the plain-flag driver (threads,
 * workspace). The ISA files (avx2/, avx512/, avx512bf16/, amx/) implement the operations; the
 * driver (x86_w4a16_driver.c) runs before any ISA is known to exist and reaches an ISA file's code
 * only through the path the layer chose (mpl_apply_args.path), which the chooser allows only when
 * the platform has that path's whole ISA level.
 *
 * Paths (rows of the descriptors, x86_avx512_w4a16.c and x86_avx2_w4a16.c, chosen per call by m):
 *   decode:  weights streamed once per call, dequantized in registers; N split over threads (and
 *            K too when N is small).
 *   prefill: per 64-channel block a K-panel is dequantized into a cache-resident buffer
 *            (integer-valued bf16 or f32), then reused by a register-blocked micro-kernel over all
 *            rows (AMX tiles, vdpbf16ps or FMA).
 * Both accumulate x * (stored - zero) per group in fp32 and fold the group scale once per group:
 * y = bias + sum_g scale_g * acc_g, as ref does.
 */
#ifndef MPL_X86_W4A16_DRIVER_H
#define MPL_X86_W4A16_DRIVER_H

#include <stdbool.h>

#include "../../layouts/x86_w4a16.h"
#include "x86_isa.h"

/* Prefill K-panel budget per thread: half of a 1-2 MiB L2, the rest holds x rows and outputs. */
#define MPL_X86_W4A16_PANEL_BYTES (512u * 1024u)
/* Per-thread scratch of the AMX path: two sets of 4 C tiles of 16x16 fp32 (double-buffered spills). */
#define MPL_X86_W4A16_AMX_SCRATCH_BYTES (8u * 1024u)

typedef struct mpl_x86_w4a16_kernel mpl_x86_w4a16_kernel;

/* Rows [m0, m1) of x into the form a path's micro-kernel reads (xs), in the input order of the
 * packed weights (act-order gathered); m: all rows of the call (padding rows are zeroed by the
 * call whose m1 == m). */
typedef void (*mpl_x86_w4a16_prep_fn)(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                      int64_t m, void *xs);
/* Decode: c[(i * m + r) * 64 + 0..63] (i < nb, r < m) = sum over inputs [k0, k1) of block b + i of the
 * rows xs (as the path's prep wrote them: f32 rows of k, or bf16 rows of kp), scaled per group;
 * nb <= the path's gemv_blocks. */
typedef void (*mpl_x86_w4a16_gemv_fn)(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b,
                                      int64_t nb, int64_t k0, int64_t k1, float *c);
/* Prefill: c[i][0..63] for rows m0..m1-1 of block b over all k (panel: MPL_X86_W4A16_PANEL_BYTES;
 * scratch: the path's scratch_bytes). */
typedef void (*mpl_x86_w4a16_gemm_fn)(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1,
                                      int64_t b, void *panel, float *c, void *scratch);

/* One ISA level's output and split-K steps, shared by every path of a kernel. */
typedef struct mpl_x86_w4a16_ops {
    /* y[i][0..ncols) = act(c[i][..] (+ bias[0..ncols))) for rows [0, rows); ldy in elements. */
    void (*store)(mpl_act act, const float *c, int64_t rows, int ncols, const void *bias, void *y, int64_t ldy);
    /* c[i][..] += p[i][..] over rows (split-K reduction, 64-wide tiles). */
    void (*add)(float *c, const float *p, int64_t rows);
} mpl_x86_w4a16_ops;

/* x as a path's micro-kernel reads it (sizes the workspace). */
typedef enum mpl_x86_w4a16_xs {
    MPL_X86_W4A16_XS_F32 = 0,  /* m rows of k floats */
    MPL_X86_W4A16_XS_BF16 = 1, /* roundup(m, 32) rows of kp bf16 (row-major, or AMX A tiles) */
    MPL_X86_W4A16_XS_F32_TILES = 2 /* f32 tiles of mtile rows in chunks of mchunk rows; the path's
                                      prep says how (roundup(m, mtile) rows of k floats in all) */
} mpl_x86_w4a16_xs;

/* Rows per x tile and per row chunk of the avx2 prefill (its 6 x 16 micro-kernel, 16 tiles a
 * chunk; avx2/w4a16_gemm.c, layout of x at prep_tiles in avx2/w4a16_ops.c). */
#define MPL_X86_W4A16_AVX2_MTILE 6
#define MPL_X86_W4A16_AVX2_MCHUNK (16 * MPL_X86_W4A16_AVX2_MTILE)

/* How path i of a kernel runs: the descriptor's table, indexed like its paths[]. */
typedef struct mpl_x86_w4a16_path_impl {
    mpl_x86_w4a16_xs xs;
    mpl_x86_w4a16_prep_fn prep;
    mpl_x86_w4a16_gemv_fn gemv; /* decode paths (gemm NULL) */
    mpl_x86_w4a16_gemm_fn gemm; /* prefill paths (gemv NULL) */
    size_t scratch_bytes;       /* per thread, prefill paths */
    int gemv_blocks;            /* decode: the most blocks one gemv call takes (0: 1); the driver
                                   hands out runs of that many consecutive blocks */
    int mtile;                  /* prefill: rows per x tile (0: 32); with it, row ranges and chunks
                                   start on multiples of mchunk */
    int mchunk;                 /* prefill: rows per chunk (a multiple of mtile; 0: x of the chunk
                                   fills half of a 2 MiB L2, at least 32 rows, or mchunk_spill's rule) */
    int mchunk_spill;           /* prefill with mchunk 0: 0, or the rows per chunk where 128 rows of x
                                   at 2 bytes per input overflow half of L2 (K > 4096): each chunk
                                   dequantizes and streams the weights once, so a path whose weight
                                   passes cost more than x's L2 misses sets it */
    bool mchunk_spill_w8;       /* with mchunk_spill: also for 8-bit weights at any K */
    size_t gemv_chunk_bytes;    /* decode: 0, or when x of m rows exceeds twice this, rows go in
                                   chunks whose x fills about this (multiples of 4 rows), each
                                   chunk streaming the weights once, x staying in L2 */
} mpl_x86_w4a16_path_impl;

struct mpl_x86_w4a16_kernel {
    mpl_config cfg;
    mpl_x86_w4a16_layout l;
    const mpl_x86_w4a16_ops *ops;
    const mpl_x86_w4a16_path_impl *paths; /* npaths rows, the descriptor's */
    int npaths;
    int64_t kp; /* k padded to a multiple of 32 (bf16 x rows, AMX k-steps) */
};

/* ---- ISA code (one level per folder; see docs/naming.md) ---- */

extern const mpl_x86_w4a16_ops mpl_x86_w4a16_ops_avx2;   /* avx2/w4a16_ops.c */
extern const mpl_x86_w4a16_ops mpl_x86_w4a16_ops_avx512; /* avx512/w4a16_ops.c */
void mpl_x86_w4a16_prep_f32_avx2(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                                 void *xs);
/* x as f32 tiles of MPL_X86_W4A16_AVX2_MTILE rows (MPL_X86_W4A16_XS_F32_TILES). */
void mpl_x86_w4a16_prep_tiles_avx2(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                                   void *xs);
void mpl_x86_w4a16_gemv_avx2(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                             int64_t k0, int64_t k1, float *c);
/* The decode of the 8-, 3- and 2-bit layouts (avx2/w4a16_gemv_widths.c); gemv_avx2 hands them over. */
void mpl_x86_w4a16_gemv_widths_avx2(const mpl_x86_w4a16_kernel *kn, const float *xf, int64_t m, int64_t b,
                                    int64_t nb, int64_t k0, int64_t k1, float *c);
void mpl_x86_w4a16_gemm_avx2(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                             void *panel, float *c, void *scratch);
void mpl_x86_w4a16_prep_f32_avx512(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                                   void *xs);
/* bf16 rows of kp (zero-padded), roundup(m, 32) rows; for the vdpbf16ps path. */
void mpl_x86_w4a16_prep_bf16_avx512(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                                    void *xs);
/* Blocks per gemv call of the avx512 decode (avx512/w4a16_gemv.c says why). */
#define MPL_X86_W4A16_AVX512_GEMV_BLOCKS 4
void mpl_x86_w4a16_gemv_avx512(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                               int64_t k0, int64_t k1, float *c);
/* bf16 rows of kp, m rows only (no padding rows); for the vdpbf16ps decode. */
void mpl_x86_w4a16_prep_bf16_rows_avx512(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1,
                                         int64_t m, void *xs);
/* The vdpbf16ps decode of the 4-bit layouts (avx512bf16/w4a16_gemv.c): bf16 rows of kp; run length
 * MPL_X86_W4A16_AVX512_GEMV_BLOCKS as the f32 decode. */
void mpl_x86_w4a16_gemv_avx512bf16(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m, int64_t b, int64_t nb,
                                   int64_t k0, int64_t k1, float *c);
void mpl_x86_w4a16_gemm_avx512(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                               void *panel, float *c, void *scratch);
void mpl_x86_w4a16_gemm_avx512bf16(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                                   void *panel, float *c, void *scratch);
/* x for AMX: tiles of 16 rows x k-step inputs stored contiguously (A-tile loads touch one page, not
 * 16 rows 2*kp bytes apart); rows m..roundup(m, 16) zeroed by the call whose m1 == m. */
void mpl_x86_w4a16_prep_amx(const mpl_x86_w4a16_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m,
                            void *xs);
void mpl_x86_w4a16_gemm_amx(const mpl_x86_w4a16_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b,
                            void *panel, float *c, void *scratch);

/* ---- the driver (x86_w4a16_driver.c, plain flags) ---- */

/* The rules every path of both kernels shares (mode, weight width 2, 3, 4 or 8, group size). */
mpl_reason mpl_x86_w4a16_can_implement(const char *kernel, const mpl_config *c, char *msg, size_t cap);
/* A path's check: bf16 activations (the bf16 panel paths). */
mpl_reason mpl_x86_w4a16_needs_bf16(const char *path, const mpl_config *c, char *msg, size_t cap);
/* Packs w and keeps ops and the descriptor's path table (npaths rows) for apply. */
mpl_status mpl_x86_w4a16_create(const mpl_config *c, const mpl_canonical *w, const mpl_x86_w4a16_ops *ops,
                                const mpl_x86_w4a16_path_impl *paths, int npaths, void **out);
void mpl_x86_w4a16_destroy(void *packed);
size_t mpl_x86_w4a16_workspace_size(const void *packed, int64_t m, int threads, int path);
mpl_status mpl_x86_w4a16_apply(const void *packed, const mpl_apply_args *a);
size_t mpl_x86_w4a16_weight_bytes(const void *packed);

#endif
