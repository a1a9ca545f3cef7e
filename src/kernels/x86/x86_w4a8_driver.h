/*
 * x86_w4a8_driver.h -- what the x86 W4A8 kernels (x86_avx512vnni_w4a8, x86_avxvnni_w4a8,
 * x86_avx2_w4a8; one descriptor file each) share with their driver (x86_w4a8_driver.c, plain
 * flags) and their ISA files (avx2/, avxvnni/, avx512/, avx512vnni/, amx/ w4a8_*.c).
 *
 * apply runs in two phases over the thread pool:
 *   1. quantize: rows of x -> qx (int8, in packed K order, i.e. gathered through perm for
 *      act-order), per-group sums of qx, sx (NaN for a row holding inf/NaN, so every output
 *      of that row becomes NaN).
 *   2. compute: each thread takes a range of 16-column panels.
 * Every path computes the same integer group sums and the same float operations in the same
 * order, so all give identical bits, and the same bits as the reference kernel.
 */
#ifndef MPL_X86_W4A8_DRIVER_H
#define MPL_X86_W4A8_DRIVER_H

#include "../../layouts/x86_w4a8.h"
#include "x86_isa.h"

/* Rows of qx are padded to this many (zero rows) so AMX A tiles never read past the end. */
#define MPL_X86_W4A8_ROW_PAD 32
/* Most rows of qx the AMX path (amx/w4a8_gemm.c) takes per chunk: its float and int32 accumulators
 * for them are 32 KiB each. */
#define MPL_X86_W4A8_AMX_ROWS 256

typedef struct mpl_x86_w4a8_job {
    const mpl_x86_w4a8_layout *p;
    mpl_act act;
    int64_t m;
    const void *x;    /* [m][k] act type */
    const void *bias; /* [n] act type or NULL */
    void *y;          /* [m][n] act type */
    int8_t *qx;       /* [m_pad][lda] */
    int64_t lda;      /* row stride of qx: k rounded up to 64, plus 64 (no 4 KiB aliasing of tile rows) */
    int32_t *sumq;    /* [m_pad][groups] */
    float *sx;        /* [m_pad] */
    char *scratch;    /* per thread: scratch_stride bytes */
    size_t scratch_stride;
} mpl_x86_w4a8_job;

/* Quantize rows [m0, m1) of x (rows >= j->m: zero padding; fbuf: k floats of scratch). */
typedef void (*mpl_x86_w4a8_quant_fn)(const mpl_x86_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf);
/* All rows, panels [p0, p1) (scratch: the thread's, for paths that ask for tile scratch). */
typedef void (*mpl_x86_w4a8_gemm_fn)(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch);

/* How path i of a kernel runs: the descriptor's table, indexed like its paths[]. */
typedef struct mpl_x86_w4a8_path_impl {
    mpl_x86_w4a8_quant_fn quant;
    mpl_x86_w4a8_gemm_fn gemm;
    int row_block;   /* gemm reads rows in blocks of this many: 1, or MPL_X86_W4A8_ROW_PAD (AMX) */
    int panel_block; /* panels per unit of work (threads split on multiples): 1, or 2 (AMX) */
    bool tiles;      /* per-thread scratch of mpl_x86_w4a8_tile_scratch(k) bytes (AMX) */
} mpl_x86_w4a8_path_impl;

/* Per-thread scratch of the AMX path: B scratch (k*32 bytes) | 4 staged C tiles | float
 * accumulators | parked int32 C tiles (the last two MPL_X86_W4A8_AMX_ROWS x 32 each). */
static inline size_t mpl_x86_w4a8_tile_scratch(int64_t k) {
    return (size_t)k * 32 + 4096 + 2 * (size_t)MPL_X86_W4A8_AMX_ROWS * 32 * sizeof(float);
}

/* ---- ISA code (one level per folder; see docs/naming.md) ---- */

void mpl_x86_w4a8_quant_avx2(const mpl_x86_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf);
void mpl_x86_w4a8_quant_avx512(const mpl_x86_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf);
void mpl_x86_w4a8_gemm_avx2(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch);
void mpl_x86_w4a8_gemm_avxvnni(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch);
void mpl_x86_w4a8_gemm_avx512vnni(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch);
/* p0 even (2-panel column blocks); rows read in 32-row blocks. */
void mpl_x86_w4a8_gemm_amx(const mpl_x86_w4a8_job *j, int64_t p0, int64_t p1, void *scratch);

/* ---- the driver (x86_w4a8_driver.c, plain flags) ---- */

/* The rules every path of the three kernels shares (mode, weight type, zero points, group size, k). */
mpl_reason mpl_x86_w4a8_can_implement(const char *kernel, const mpl_config *c, char *msg, size_t cap);
/* Packs w and keeps the descriptor's path table (npaths rows) for apply. */
mpl_status mpl_x86_w4a8_create(const char *kernel, const mpl_config *c, const mpl_canonical *w,
                               const mpl_x86_w4a8_path_impl *paths, int npaths, void **out);
void mpl_x86_w4a8_destroy(void *packed);
size_t mpl_x86_w4a8_workspace_size(const void *packed, int64_t m, int threads, int path);
mpl_status mpl_x86_w4a8_apply(const void *packed, const mpl_apply_args *a);
size_t mpl_x86_w4a8_weight_bytes(const void *packed);

#endif
