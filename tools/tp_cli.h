/*
 * tp_cli.h -- `--tp R --tp-mode column|row` for `mplinear verify` and `mplinear bench`
 * (docs/tensor-parallel.md): the layer is sharded over R ranks with mpl_layer_create_shards and
 * run on the CPU stand-in (mpl_tp_apply_host, --device cpu) or on R GPUs through NCCL
 * (--device cuda, tools/tp_nccl.c; built only when CUDA and NCCL are found).
 */
#ifndef MPLINEAR_TP_CLI_H
#define MPLINEAR_TP_CLI_H

#include "cli.h"

#define CLI_TP_OPTS {"tp", 1, 0, 0}, {"tp-mode", 1, 0, 0}

/* Help text of the two flags. */
void cli_tp_print_help(FILE *f);

/* --tp R (1..MPL_TP_MAX_RANKS) and --tp-mode (required with --tp). *ranks = 0 when --tp is absent.
 * 0 or an exit code (error printed). */
int cli_tp_options(const char *cmd, cli_opt *opts, int nopts, int *ranks, mpl_tp_mode *mode);

/* verify --tp: the sharded layer against the unsharded ref; prints as verify does; the exit code. */
int cli_tp_verify(const char *cmd, const cli_setup *s, mpl_layout layout, uint64_t seed, int ranks, mpl_tp_mode mode);

/* bench --tp: times the sharded apply (CPU stand-in or NCCL); prints a line or a JSON object. */
int cli_tp_bench(const char *cmd, const cli_setup *s, const cli_bench_params *p, int ranks, mpl_tp_mode mode,
                 int json);

/* ---- the NCCL runner (tools/tp_nccl.c) ---- */

typedef struct cli_tp_times {
    double gemm_s;      /* median over reps of the slowest rank's layer apply */
    double allreduce_s; /* median of the slowest rank's all-reduce (row; 0 for column) */
    double total_s;     /* median of the slowest rank's apply + all-reduce */
    int64_t copies;     /* layer copies rotated per rank (cold weights) */
} cli_tp_times;

/* 1 when this build has the runner (CUDA and NCCL found). */
int cli_tp_nccl_built(void);
/*
 * Host x [m x K], bias [N] or NULL -> y [m x N], layers[r] on CUDA device r (created with
 * cuda_device = r): column: each rank's outputs copied back into its columns; row: the partials
 * (rank 0 with the bias) summed by ncclAllReduce in the activation type, rank 0's result copied back.
 */
int cli_tp_nccl_apply(const char *cmd, mpl_layer *const *layers, int ranks, mpl_tp_mode mode, int64_t m,
                      const void *x, const void *bias, void *y);
/* Timing: copies sets of rank layers (layers[c * ranks + r]) rotated; reps timed passes. */
int cli_tp_nccl_bench(const char *cmd, mpl_layer *const *layers, int64_t copies, int ranks, mpl_tp_mode mode,
                      int64_t m, const void *x, int reps, cli_tp_times *t);

#endif
