/*
 * testutil.h -- shared helpers for mplinear's tests (compiled into every test executable).
 *
 * Uses only the public header, so a helper never shares a bug with the code it checks:
 * the oracles, value semantics and fp16/bf16 rounding here are written independently of
 * src/ (float64 arithmetic, own bit encoders).
 *
 *   seeded RNG ............ tu_rng_* (xoshiro256** seeded by splitmix64), tu_seed() honours MPL_TEST_SEED
 *   random layers ......... tu_weights_random(): codes, scales (exact in their dtype), zeros, g_idx
 *   activations ........... tu_act_random(), tu_act_store/load, tu_round_act (RNE, independent encoder)
 *   float64 oracles ....... oracle_w4a16(), oracle_w4a8() in the exact semantics of include/mplinear.h
 *   tolerances ............ tu_tolerance() (derivation next to it in testutil.c)
 *   guard-byte buffers .... tu_buf_alloc/tu_buf_guards_ok/tu_buf_free
 *   comparison ............ tu_compare() prints seed, shape and the first bad coordinate
 *   kernel check .......... tu_check_kernel_vs_ref(kernel, cfg, m, seed): a whole case in one call
 *
 * Helpers never abort: they return counts or status and print what went wrong to stderr,
 * so cmocka tests assert on the returned value.
 */
#ifndef MPL_TESTUTIL_H
#define MPL_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mplinear.h"

/* ---------- seeded RNG ---------- */

typedef struct tu_rng {
    uint64_t s[4];
} tu_rng;

/* xoshiro256** whose state is filled by splitmix64(seed): any seed (0 included) is fine. */
void tu_rng_init(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint64_t tu_rng_below(tu_rng *r, uint64_t n);
/* Uniform integer in [lo, hi] (inclusive). */
int64_t tu_rng_range(tu_rng *r, int64_t lo, int64_t hi);
/* Uniform double in [0, 1) (53 random bits). */
double tu_rng_unit(tu_rng *r);
double tu_rng_uniform(tu_rng *r, double lo, double hi);
void tu_rng_shuffle_i32(tu_rng *r, int32_t *a, int64_t n);

/* MPL_TEST_SEED (decimal or 0x-hex) if set, else fallback. Print it with any failure. */
uint64_t tu_seed(uint64_t fallback);
/* A well-mixed per-case seed from a base seed and a case index. */
uint64_t tu_case_seed(uint64_t base, uint64_t index);

/* ---------- value semantics (independent of src/) ---------- */

/* Integer value of a stored code (mplinear.h: value = stored - bias, or - zero). */
int tu_code_value(mpl_wtype t, int code, int zero);
int tu_wtype_bits(mpl_wtype t);
int tu_wtype_needs_zeros(mpl_wtype t);
/* Effective group size (k when group_size is -1) and number of groups. */
int64_t tu_group_size(const mpl_config *c);
int64_t tu_groups(const mpl_config *c);

/* ---------- fp16 / bf16 / fp32 (own encoders, round to nearest even) ---------- */

/* Bits of v rounded once to f16 / bf16 (subnormals, overflow to inf, NaN -> quiet NaN). */
uint16_t tu_f16_bits(double v);
uint16_t tu_bf16_bits(double v);
double tu_f16_value(uint16_t h);
double tu_bf16_value(uint16_t h);
/* v rounded once to the activation type, as a double. */
double tu_round_act(mpl_act a, double v);
/* v rounded once to a scale dtype (MPL_DTYPE_F16, _BF16 or _F32). */
double tu_round_dtype(mpl_dtype d, double v);
/* Half a unit in the last place of the activation type at |v| (subnormal floor included). */
double tu_half_ulp(mpl_act a, double v);
size_t tu_act_size(mpl_act a);
/* Element i of an activation-typed array: store (v rounded to the type) and load. */
void tu_act_store(mpl_act a, void *dst, int64_t i, double v);
double tu_act_load(mpl_act a, const void *src, int64_t i);

/* ---------- random layers ---------- */

typedef enum tu_gidx_kind {
    TU_GIDX_NONE = 0,      /* no act-order (or: the default, PERMUTED, when cfg->act_order) */
    TU_GIDX_PERMUTED = 1,  /* every group has exactly group_size members, channels shuffled */
    TU_GIDX_IRREGULAR = 2  /* random group per channel; sizes differ whenever groups >= 2 */
} tu_gidx_kind;

typedef enum tu_data_kind {
    TU_DATA_RANDOM = 0, /* x in [-1,1], scales in +-[2^-7, 2^-3]: checked with tu_tolerance() */
    TU_DATA_EXACT = 1   /* small-integer x, scales in +-{2^-1..2^-4}: every fp32 partial sum is a
                           multiple of 2^-4 below 2^20 in magnitude for K <= 2048, hence exact in
                           any order, so outputs must equal the rounded oracle bit for bit */
} tu_data_kind;

/* A layer's weights as stored codes, the form mpl_checkpoint_encode takes. */
typedef struct tu_weights {
    mpl_config cfg;
    int64_t group_size, groups; /* effective */
    mpl_dtype scale_dtype;
    uint8_t *codes;  /* [n][k] */
    float *scales;   /* [n][groups], exactly representable in scale_dtype */
    uint8_t *zeros;  /* [n][groups] when cfg.zero_points, else NULL */
    int32_t *g_idx;  /* [k] when cfg.act_order, else NULL */
    int irregular;   /* g_idx group sizes differ */
} tu_weights;

/* Random weights for a (valid) config; 0 on success, -1 (printed) on failure. */
int tu_weights_random(tu_weights *w, const mpl_config *cfg, mpl_dtype scale_dtype, tu_gidx_kind gk,
                      tu_data_kind dk, tu_rng *r);
void tu_weights_free(tu_weights *w);
/* Encode into a checkpoint layout (mpl_checkpoint_encode); the status is returned. */
mpl_status tu_weights_encode(const tu_weights *w, mpl_layout layout, mpl_checkpoint_tensors *out);

/*
 * Random activations for m rows of cfg: writes x (act type, [m][k]) and its values as
 * floats (xf, [m][k]). TU_DATA_RANDOM: uniform in [-1,1]. TU_DATA_EXACT: integers in
 * [-3,3]; in W4A8 mode one element per row is +-127 so that the row's quantization is
 * the identity (amax = 127, inv = 1, sx = 1). Never all zero.
 */
void tu_act_random(tu_rng *r, const mpl_config *cfg, int64_t m, tu_data_kind dk, void *x, float *xf);
/* n random bias values (act type) and their floats; EXACT: multiples of 1/4 in [-2,2]. */
void tu_bias_random(tu_rng *r, mpl_act a, int64_t n, tu_data_kind dk, void *b, float *bf);

/* ---------- float64 oracles (mplinear.h semantics) ---------- */

/*
 * W4A16: y[i][j] = bias[j] + sum_kk x[i][kk] * value(j, kk) * scale[j][g(kk)], in float64
 * (no fp32 rounding, no output rounding). g(kk) = g_idx[kk] or kk / group_size.
 * mag[i][j] = |bias[j]| + sum_kk |x * value * scale|, the scale of the rounding error.
 * x, bias: values as floats (bias may be NULL); y, mag: [m][n] (mag may be NULL).
 */
void oracle_w4a16(const mpl_config *cfg, const uint8_t *codes, const float *scales, const uint8_t *zeros,
                  const int32_t *g_idx, int64_t m, const float *x, const float *bias, double *y, double *mag);
/*
 * W4A8: each row of x quantized exactly as mplinear.h says (fp32: amax, inv = 127/amax,
 * q = nearbyintf(x*inv) clamped to +-127, sx = amax/127; amax == 0 -> q = 0, sx = 0),
 * isum_g exact (int64), y = sx * sum_g scale * isum_g + bias in float64; a row holding
 * inf or NaN gives NaN. mag = sx * sum_g |scale * isum_g| + |bias|.
 */
void oracle_w4a8(const mpl_config *cfg, const uint8_t *codes, const float *scales, const uint8_t *zeros,
                 const int32_t *g_idx, int64_t m, const float *x, const float *bias, double *y, double *mag);
/* The W4A8 row quantization on its own (q: k int8). Returns sx; *nonfinite = 1 for inf/NaN rows. */
float tu_quantize_row(const float *x, int64_t k, int8_t *q, int *nonfinite);
/* oracle_w4a16 or oracle_w4a8 by w->cfg.mode. */
void tu_oracle(const tu_weights *w, int64_t m, const float *x, const float *bias, double *y, double *mag);

/* ---------- tolerances ---------- */

/*
 * Largest allowed |got - want| for one output with oracle value `want` and magnitude `mag`
 * (see the derivation in testutil.c): the fp32 accumulation bound of the semantics in
 * mplinear.h plus half an ulp of the activation type for the final rounding.
 * extra_rel adds extra_rel * mag (kernels that round dequantized weights; 0 for the spec).
 */
double tu_tolerance(const mpl_config *cfg, double want, double mag, double extra_rel);

/* ---------- guard-byte buffers ---------- */

#define TU_GUARD_BYTES 64
#define TU_GUARD_FILL 0xA5

typedef struct tu_buf {
    unsigned char *base;
    void *p;      /* payload: 64-byte aligned, TU_GUARD_BYTES of guard on each side */
    size_t bytes; /* payload size */
} tu_buf;

/* Payload filled with `poison` (0xFF makes every f16/bf16/f32 element a NaN). NULL on OOM. */
void *tu_buf_alloc(tu_buf *b, size_t bytes, unsigned char poison);
/* 1 if both guards are intact, else 0 (prints `what` and the first corrupted offset). */
int tu_buf_guards_ok(const tu_buf *b, const char *what);
void tu_buf_free(tu_buf *b);

/* ---------- comparison ---------- */

/* "k=40 n=13 uint4 zp bf16 group 24 act-order w4a16" into buf. */
const char *tu_cfg_str(const mpl_config *c, char *buf, size_t cap);

/*
 * Compares got ([m][n] in cfg->act) against want with per-element tolerance tol (NULL: exact,
 * i.e. got must equal tu_round_act(want) bit for bit). A NaN want requires a NaN. Returns the
 * number of bad elements; on failure prints `what`, the seed, the shape and the first bad
 * coordinate with got, want, tolerance and difference.
 */
int64_t tu_compare(const char *what, uint64_t seed, const mpl_config *cfg, int64_t m, const void *got,
                   const double *want, const double *tol);

/* ---------- one-call kernel check ---------- */

typedef enum tu_result {
    TU_PASS = 0,
    TU_FAIL = 1,
    TU_SKIP = 2,   /* the kernel needs hardware this host lacks (MPL_ERR_NO_HARDWARE); message printed */
    TU_REFUSED = 3 /* the kernel refused the config (MPL_ERR_UNSUPPORTED); message printed */
} tu_result;

typedef struct tu_check_opts {
    mpl_layout layout;     /* checkpoint layout to encode (default MPL_LAYOUT_GPTQ) */
    mpl_dtype scale_dtype; /* default MPL_DTYPE_F16 */
    tu_gidx_kind gidx;     /* act-order configs: default TU_GIDX_PERMUTED */
    tu_data_kind data;     /* default TU_DATA_RANDOM */
    int bias;              /* 1 (default): random bias; 0: NULL bias */
    int threads;           /* mpl_options.threads for the kernel's layer (0 = all cores) */
    double extra_rel;      /* see tu_tolerance (default 0) */
    int quiet;             /* 1: do not print skips/refusals */
} tu_check_opts;

void tu_check_opts_init(tu_check_opts *o);

/*
 * One case: random weights/x/bias from seed for cfg and m rows (the layout must hold the config:
 * AWQ needs n % (32/bits) == 0, ct-int wtype int4); layers forced to `kernel` (a kernel name, or
 * "<kernel>:<path>": then mpl_layer_path(layer, m) must be that path) and
 * to "ref"; the kernel is applied twice (outputs must be bit-identical) into guard-byte
 * buffers; both outputs are checked against the float64 oracle with tu_tolerance (EXACT
 * data: bit-exact) and the kernel against ref (EXACT: bit-identical). Everything printed on
 * failure names the kernel, seed, shape and first bad coordinate.
 */
tu_result tu_check_kernel_ex(const char *kernel, const mpl_config *cfg, int64_t m, uint64_t seed,
                             const tu_check_opts *o);
tu_result tu_check_kernel_vs_ref(const char *kernel, const mpl_config *cfg, int64_t m, uint64_t seed);

/* M values that straddle a kernel's row tile: {1, 2, tile-1, tile, tile+1, 2*tile+1, large}
 * (deduplicated, ascending, each >= 1). Returns the count written (cap >= 8 suffices). */
int tu_m_edges(int64_t tile, int64_t large, int64_t *out, int cap);

#endif /* MPL_TESTUTIL_H */
