/*
 * w4a8.h -- what the x86 W4A8 kernel's descriptor (x86_vnni_w4a8.c, plain
 * flags) shares with its ISA files (avx512/, avxvnni/, avx2/, amx/w4a8_*.c).
 *
 * apply runs in two phases over the thread pool:
 *   1. quantize: rows of x -> qx (int8, in packed K order, i.e. gathered
 *      through perm for act-order), per-group sums of qx, sx (NaN for a row
 *      holding inf/NaN, so every output of that row becomes NaN).
 *   2. compute: each thread takes a range of 16-column panels.
 */
#ifndef MPL_X86_W4A8_H
#define MPL_X86_W4A8_H

#include "../../layouts/x86_w4a8.h"

/* Rows of qx are padded to this many (zero rows) so AMX A tiles never read past the end. */
#define MPL_W4A8_ROW_PAD 32

typedef struct mpl_w4a8_job {
    const mpl_x86_w4a8 *p;
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
    int variant;      /* mpl_w4a8_variant */
} mpl_w4a8_job;

typedef enum mpl_w4a8_variant {
    MPL_W4A8_AVX2 = 0,    /* vpmaddubsw + vpmaddwd */
    MPL_W4A8_AVXVNNI = 1, /* vpdpbusd ymm (VEX) */
    MPL_W4A8_AVX512 = 2,  /* vpdpbusd zmm */
    MPL_W4A8_AMX = 3      /* tdpbsud tiles for many rows; avx512 for the rest */
} mpl_w4a8_variant;

/* Per-thread scratch: an f32 row for quantization, then the AMX B panels and tiles. */
size_t mpl_w4a8_amx_scratch(int64_t k);

/* Quantize rows [m0, m1) of x (fbuf: k floats of scratch). */
void mpl_w4a8_quant_rows_avx512(const mpl_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf);
void mpl_w4a8_quant_rows_avx2(const mpl_w4a8_job *j, int64_t m0, int64_t m1, float *fbuf);

/* All rows, panels [p0, p1). */
void mpl_w4a8_gemm_avx512(const mpl_w4a8_job *j, int64_t p0, int64_t p1);
void mpl_w4a8_gemm_avxvnni(const mpl_w4a8_job *j, int64_t p0, int64_t p1);
void mpl_w4a8_gemm_avx2(const mpl_w4a8_job *j, int64_t p0, int64_t p1);
/* All rows, panels [p0, p1) (p0 even), with AMX tiles; scratch: mpl_w4a8_amx_scratch(k) bytes. */
void mpl_w4a8_gemm_amx(const mpl_w4a8_job *j, int64_t p0, int64_t p1, void *scratch);
/* Asks Linux for AMX tile state once; false when refused (then AMX is not used). */
bool mpl_w4a8_amx_enable(void);

#endif
