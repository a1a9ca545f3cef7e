/*
 * w4a16_x86.h -- what the x86 W4A16 kernels share: the packed kernel state,
 * the per-ISA operation tables and the plain-C driver (threads, workspace,
 * decode/prefill choice). The ISA files (avx512/, avx2/, amx/) implement the
 * operations; the driver (w4a16_x86.c) runs before any ISA is known to exist.
 *
 * Paths (chosen per call by m; the switch is measured, see bench/x86):
 *   decode  (m <= m_switch): weights streamed once per call, dequantized in
 *           registers; N split over threads (and K too when N is small).
 *   prefill (m >  m_switch): per 64-channel block a K-panel is dequantized into
 *           a cache-resident buffer (integer-valued bf16 or f32), then reused by
 *           a register-blocked micro-kernel over all rows (AMX tiles where present).
 * Both accumulate x * (stored - zero) per group in fp32 and fold the group
 * scale once per group: y = bias + sum_g scale_g * acc_g, as ref does.
 */
#ifndef MPL_W4A16_X86_H
#define MPL_W4A16_X86_H

#include "../../layouts/x86_w4a16.h"
#include "../kernels.h"

/* Prefill K-panel budget per thread: half of a 1-2 MiB L2, the rest holds x rows and outputs. */
#define MPL_XW_PANEL_BYTES (512u * 1024u)
/* Bytes per thread for AMX tile spills (two sets of 4 C tiles of 16x16 fp32, double-buffered). */
#define MPL_XW_SCRATCH_BYTES (8u * 1024u)

typedef enum mpl_xw_gemm_kind {
    MPL_XW_GEMM_F32 = 0,  /* f32 panel, FMA micro-kernel (any activation type) */
    MPL_XW_GEMM_BF16 = 1, /* bf16 panel, vdpbf16ps micro-kernel (bf16 activations) */
    MPL_XW_GEMM_AMX = 2   /* bf16 panel, AMX tdpbf16ps (bf16 activations) */
} mpl_xw_gemm_kind;

struct mpl_xw_kernel;

/*
 * One ISA's operations. Row strides: xf rows are k floats; xb rows are kp
 * bf16 (k padded with zeros to a multiple of 32); c tiles are 64 floats wide.
 */
typedef struct mpl_xw_ops {
    /* Rows [m0, m1) of x -> f32 in the input order of the packed weights (act-order gathered). */
    void (*prep_f32)(const struct mpl_xw_kernel *kn, const void *x, int64_t m0, int64_t m1, float *xf);
    /* Rows [m0, m1) of bf16 x -> xb (gathered, zero-padded to kp), row-major; NULL when the ISA has
     * no bf16 path. m: all rows of the call. */
    void (*prep_bf16)(const struct mpl_xw_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m, uint16_t *xb);
    /* Decode: c[m][0..63] = sum over inputs [k0, k1) of block b for rows 0..m-1 (scaled per group). */
    void (*gemv)(const struct mpl_xw_kernel *kn, const float *xf, int64_t m, int64_t b, int64_t k0, int64_t k1,
                 float *c);
    /* Prefill: c[i][0..63] for rows m0..m1-1 of block b over all k (panel: MPL_XW_PANEL_BYTES). */
    void (*gemm[3])(const struct mpl_xw_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b, void *panel,
                    float *c, void *scratch);
    /* y[i][0..ncols) = act(c[i][..] (+ bias[0..ncols))) for rows [0, rows); ldy in elements. */
    void (*store)(mpl_act act, const float *c, int64_t rows, int ncols, const void *bias, void *y, int64_t ldy);
    /* c[i][..] += p[i][..] over rows (split-K reduction, 64-wide tiles). */
    void (*add)(float *c, const float *p, int64_t rows);
} mpl_xw_ops;

typedef struct mpl_xw_kernel {
    mpl_config cfg;
    mpl_xw_layout l;
    const mpl_xw_ops *ops;
    mpl_xw_gemm_kind gemm_kind;
    int64_t m_switch; /* decode for m <= m_switch */
    int64_t kp;       /* k padded to a multiple of 32 (bf16 x rows, AMX k-steps) */
} mpl_xw_kernel;

extern const mpl_xw_ops mpl_xw_ops_avx512;
extern const mpl_xw_ops mpl_xw_ops_avx2;

/* AMX (src/kernels/x86/amx/): asks Linux for tile state once; false when refused or absent. */
bool mpl_xw_amx_available(void);
/* x for AMX: tiles of 16 rows x k-step inputs stored contiguously (A-tile loads touch one page,
 * not 16 rows 2*kp bytes apart); rows m..roundup(m, 16) zeroed by the call whose m1 == m. */
void mpl_xw_prep_amx(const mpl_xw_kernel *kn, const void *x, int64_t m0, int64_t m1, int64_t m, uint16_t *xb);
void mpl_xw_gemm_amx(const mpl_xw_kernel *kn, const void *xs, int64_t m0, int64_t m1, int64_t b, void *panel,
                     float *c, void *scratch);

/* Driver (w4a16_x86.c). */
mpl_reason mpl_xw_can_implement(const char *kernel, const mpl_config *c, char *msg, size_t cap);
mpl_status mpl_xw_kernel_pack(const mpl_config *c, const mpl_canonical *w, const mpl_xw_ops *ops,
                              mpl_xw_gemm_kind gemm_kind, void **out);
void mpl_xw_kernel_destroy(void *p);
size_t mpl_xw_workspace_size(const void *p, int64_t m, int threads);
mpl_status mpl_xw_apply(const void *p, const mpl_apply_args *a);
size_t mpl_xw_weight_bytes(const void *p);

/* Test and benchmark hook: force the path (0 = by m_switch, 1 = decode, 2 = prefill) and
 * read the switch point. Process-wide; not for concurrent use with differing values. */
void mpl_xw_force_path(int path);
int64_t mpl_xw_m_switch(const void *p);

#endif
