/*
 * cli.h -- shared pieces of the mplinear command-line tool: exit codes, error
 * reporting, option parsing, the config flags every subcommand accepts, a
 * seeded random generator and random-layer synthesis, and the entry points of
 * every subcommand.
 *
 * The tool uses only the public header (mplinear.h) plus its own tools/ files.
 *
 * Exit codes (the same for every subcommand; all below 128 so a shell never
 * confuses them with a signal):
 *   0  success
 *   1  verify/demo: the kernel's result is outside the error tolerance
 *   2  usage: unknown option, missing required option or malformed value
 *   3  invalid input: a malformed or inconsistent .npy file or tensor, or a
 *      config that breaks a rule (group size, types, g_idx, sizes that overflow)
 *   4  unsupported: the config is valid but no kernel (or the forced one)
 *      implements it
 *   5  the hardware the config or --device needs is absent
 *   6  I/O error (a file cannot be opened, read or written)
 *   7  out of memory, CUDA runtime error or internal error
 * Every failure prints exactly one line on stderr:
 *   "mplinear <subcommand>: error: <what went wrong>".
 */
#ifndef MPLINEAR_CLI_H
#define MPLINEAR_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "mplinear.h"

enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_CHECK = 1,
    CLI_EXIT_USAGE = 2,
    CLI_EXIT_INPUT = 3,
    CLI_EXIT_UNSUPPORTED = 4,
    CLI_EXIT_NO_HARDWARE = 5,
    CLI_EXIT_IO = 6,
    CLI_EXIT_RESOURCE = 7
};

/* Exit code for a library status (MPL_OK -> 0). */
int cli_exit_for(mpl_status st);

/*
 * Prints "mplinear <cmd>: error: <message>" as ONE line on stderr: newlines
 * inside the message (the chooser lists reasons one per line) become "; ".
 */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* cli_error with the library's last message; returns cli_exit_for(st). */
int cli_lib_error(const char *cmd, mpl_status st, const char *context);

/* ---- option parsing ---- */

/*
 * One option a subcommand accepts. Options are "--name VALUE", "--name=VALUE"
 * or, when takes_value is 0, a bare "--name". Giving an option twice is an
 * error. Parsing fills value/present.
 */
typedef struct cli_opt {
    const char *name;  /* without the leading "--" */
    int takes_value;
    const char *value; /* filled by cli_parse */
    int present;       /* filled by cli_parse */
} cli_opt;

/*
 * Parses argv[1..argc-1] (argv[0] is the subcommand name) against opts.
 * Arguments not starting with "--" are positionals, stored in pos (up to
 * max_pos; more is an error). "--help"/"-h" sets *help (it is always
 * accepted). Returns 0, or CLI_EXIT_USAGE after printing the error.
 */
int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, int nopts, const char **pos, int max_pos,
              int *npos, int *help);
/* The option named name (NULL if opts has none). */
cli_opt *cli_find(cli_opt *opts, int nopts, const char *name);
/* Value of an option, or NULL when absent. */
const char *cli_value(cli_opt *opts, int nopts, const char *name);
int cli_has(cli_opt *opts, int nopts, const char *name);
/* Parses a whole decimal integer in [lo, hi]; prints the error and returns CLI_EXIT_USAGE otherwise. */
int cli_int(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out);
/* Parses a byte count with an optional K/M/G/T suffix (powers of 1024). */
int cli_bytes(const char *cmd, const char *flag, const char *s, uint64_t *out);
/*
 * --stream-timeout SECONDS (apply): how long a named pipe or stream given as an input or the
 * output may keep the tool waiting (for a writer or reader, for data or for room), default
 * NPY_STREAM_TIMEOUT_MS. Fills *ms; 0 or CLI_EXIT_USAGE after printing the error.
 */
int cli_stream_timeout(const char *cmd, cli_opt *opts, int nopts, int *ms);
/* Help text for the I/O rules of .npy inputs and outputs (apply and apply --checkpoint). */
#define CLI_STREAM_HELP                                                                                              \
    "Inputs may be regular files or streams (a named pipe, /dev/stdin fed by a pipe, <(...)); a terminal\n"        \
    "is refused. Output: a regular file (or a new path) is replaced through a temporary file renamed at\n"      \
    "the end; a symbolic link's target is replaced and the link kept; a named pipe or character device\n"      \
    "(/dev/stdout, /dev/null) is written through; anything else is refused. --stream-timeout S (default\n"   \
    "60): the longest wait for a pipe's writer, reader or data before failing.\n"

/*
 * A progress line for long work, on stderr only when stderr is a terminal (and the caller did
 * not get --quiet): "<what>: <done>/<total> <items>, <rate> <unit>/s, ETA <m:ss>", rewritten in
 * place at most every 0.2 s, then a final line with the elapsed time. When stderr is not a
 * terminal (a file, a pipe, CI logs) nothing at all is printed. work: the amount of work each
 * item stands for (weights), so the rate and ETA follow the big items, not the item count.
 */
typedef struct cli_progress {
    int on;
    const char *what, *items, *unit;
    int64_t total;
    double work_total, t0, last;
} cli_progress;
void cli_progress_start(cli_progress *p, int quiet, const char *what, const char *items, int64_t total,
                        double work_total, const char *unit);
void cli_progress_step(cli_progress *p, int64_t done, double work_done);
void cli_progress_end(cli_progress *p, int64_t done);
/* Erases the line (before an error message takes its place). */
void cli_progress_clear(cli_progress *p);

/* Does argv[1..] contain "--name" or "--name=..."? (for dispatch before parsing) */
int cli_argv_has(int argc, char **argv, const char *name);

/*
 * The config flags shared by info, verify, bench and demo:
 *   --m --k --n --full-k --full-n --wtype --act --group-size --zp --act-order
 *   --w4a8 --device --kernel --threads
 * CLI_CONFIG_OPTS expands to their cli_opt initialisers.
 */
#define CLI_CONFIG_OPTS                                                                                             \
    {"m", 1, 0, 0}, {"k", 1, 0, 0}, {"n", 1, 0, 0}, {"full-k", 1, 0, 0}, {"full-n", 1, 0, 0}, {"wtype", 1, 0, 0},  \
        {"act", 1, 0, 0}, {"group-size", 1, 0, 0}, {"zp", 0, 0, 0}, {"act-order", 0, 0, 0}, {"w4a8", 0, 0, 0},      \
        {"device", 1, 0, 0}, {"kernel", 1, 0, 0}, {"threads", 1, 0, 0}

/* Text for --help listing the config flags (with the defaults given). */
void cli_print_config_help(FILE *f, int64_t def_m, const char *def_k, const char *def_n);

typedef struct cli_setup {
    mpl_config cfg;
    mpl_options opt;
    int64_t m;
    const char *kernel; /* --kernel or NULL */
} cli_setup;

/*
 * Fills s from the config flags. def_k/def_n: used when --k/--n are absent
 * (0 = the flag is required). --zp is implied for uint4 and uint8 (the only
 * valid choice). Returns 0 or an exit code after printing the error. Does not
 * validate the config (the library does; see cli_validate).
 */
int cli_setup_from_opts(const char *cmd, cli_opt *opts, int nopts, int64_t def_m, int64_t def_k, int64_t def_n,
                        cli_setup *s);
/* mpl_config_validate with the CLI's error report; 0 or an exit code. */
int cli_validate(const char *cmd, const mpl_config *c);
/* "k=4096 n=14336 uint4b8 bf16 group 128 zp act-order w4a8" */
void cli_config_string(const mpl_config *c, char *buf, size_t cap);
/* Writes s as a JSON string literal (quotes, escapes; NULL as ""). */
void cli_json_string(FILE *f, const char *s);

/* ---- seeded random numbers (splitmix64), reproducible across machines ---- */

typedef struct cli_rng {
    uint64_t s;
} cli_rng;
void cli_rng_seed(cli_rng *r, uint64_t seed);
uint64_t cli_rng_next(cli_rng *r);
/* Uniform integer in [0, n). */
uint32_t cli_rng_below(cli_rng *r, uint32_t n);
/* Uniform double in [0, 1). */
double cli_rng_unit(cli_rng *r);
/* Standard normal (Box-Muller). */
double cli_rng_gauss(cli_rng *r);

/* ---- random layers (verify, bench, demo) ---- */

/*
 * A random layer in canonical terms plus its checkpoint encoding:
 * random codes over the type's full range, scales in [2^-6, 2^-4) (exact in
 * f16), random zero points, g_idx = a random permutation of channels mapped
 * to uniform groups (act-order), Gaussian bias.
 */
typedef struct cli_synth {
    uint8_t *codes;  /* [n][k] */
    float *scales;   /* [n][G] (values exactly representable in f16) */
    uint8_t *zeros;  /* [n][G] or NULL */
    int32_t *g_idx;  /* [k] or NULL */
    float *bias;     /* [n] */
    int64_t groups;
    mpl_checkpoint_tensors ckpt;
} cli_synth;

/* Returns MPL_OK, or a status with the reason written to err. */
mpl_status cli_synth_make(const mpl_config *c, mpl_layout layout, uint64_t seed, cli_synth *s, char *err,
                          size_t errcap);
/* cli_synth_make for a subcommand: 0, or the exit code after printing the reason as cmd's error. */
int cli_synth_or_exit(const char *cmd, const mpl_config *c, mpl_layout layout, uint64_t seed, cli_synth *s);
void cli_synth_free(cli_synth *s);
/* Integer weight value (code minus bias or zero point) of weight (n, k). */
int cli_synth_value(const mpl_config *c, const cli_synth *s, int64_t n, int64_t k);

/* Convert n floats to activation type a (round to nearest even), and back. */
void cli_f32_to_act(mpl_act a, const float *src, void *dst, size_t n);
void cli_act_to_f32(mpl_act a, const void *src, float *dst, size_t n);
/* verify's inputs for a seed (with or without --tp): mk Gaussian values of x rounded to activation type a
 * (x, and xf = the values the kernels see), and the n-channel bias (f32 in bias) the same way (b, bf). */
void cli_verify_inputs(mpl_act a, uint64_t seed, size_t mk, const float *bias, size_t n, void *x, float *xf, void *b,
                       float *bf);
/* Unit roundoff of an activation type (2^-11 f16, 2^-8 bf16, 2^-24 f32). */
double cli_act_unit_roundoff(mpl_act a);

/* ---- shared runs (verify and bench logic, reused by demo) ---- */

typedef struct cli_verify_result {
    double max_abs;       /* max |y - y_ref| (inf when one side is NaN) */
    double worst_ratio;   /* max over elements of |y - y_ref| / bound */
    double worst_abs, worst_bound; /* |y - y_ref| and the bound at that element */
    double weight_rounding;        /* mpl_layer_weight_rounding of the kernel's path (0: exact weights) */
    int64_t worst_m, worst_n;
    double rel_fro;       /* ||y - y_ref||_F / ||y_ref||_F */
    double rel_fro_tol;   /* ||bound||_F / ||y_ref||_F */
    const char *kernel;   /* kernel that ran (static string from the library) */
    const char *path;     /* its path for m rows, "<kernel>:<path>" (mpl_layer_path) */
    int pass;
} cli_verify_result;

/* Builds a random layer, runs the chosen/forced kernel and ref; 0 or an exit code (error printed). */
int cli_verify_run(const char *cmd, const cli_setup *s, mpl_layout layout, uint64_t seed, cli_verify_result *r);

typedef struct cli_bench_params {
    int reps;            /* timed applies (median taken) */
    uint64_t cold_bytes; /* weight bytes to rotate over; 0 = 2 x LLC */
    uint64_t max_bytes;  /* cap on the total weight bytes of all copies */
    int64_t max_copies;  /* 0 = no cap */
    uint64_t seed;
} cli_bench_params;

typedef struct cli_bench_result {
    const char *kernel;
    const char *path;    /* the path the timed applies ran (mpl_layer_path) */
    int threads;
    double seconds;      /* median seconds per apply */
    size_t weight_bytes; /* of one layer */
    int64_t copies;
    uint64_t llc_bytes;  /* 0 if unknown */
    uint64_t target_bytes;
    int capped;          /* copies were limited by max_bytes or max_copies */
    double gbps, gflops;
} cli_bench_result;

int cli_bench_run(const char *cmd, const cli_setup *s, const cli_bench_params *p, cli_bench_result *r);
/* Last-level cache size in bytes from sysfs or sysconf; 0 if unknown. */
uint64_t cli_llc_bytes(void);

/* ---- subcommands: int f(argc, argv), argv[0] = the subcommand name ---- */

/* Monotonic seconds (timing), and a qsort comparator of doubles (medians). */
double cli_now_seconds(void);
int cli_cmp_double(const void *a, const void *b);

int cli_info(int argc, char **argv);
int cli_apply(int argc, char **argv);
int cli_verify(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_demo(int argc, char **argv);

/*
 * Checkpoint-directory subcommands (tools/cmd_checkpoint.c):
 *   argv[0] is the subcommand name as typed ("inspect", "apply" or "bench");
 *   argv[1..argc-1] are all the remaining arguments unchanged, including
 *   "--checkpoint DIR" for apply/bench and the positional DIR for inspect.
 *   They must handle --help (print usage to stdout, return 0), report errors
 *   with cli_error() and return the exit codes above. They may use
 *   cli_parse(), the config helpers and tools/npy.h.
 * Dispatch (tools/mplinear.c): "inspect" -> cli_inspect; "apply" with
 * --checkpoint anywhere in its arguments -> cli_apply_checkpoint; "bench" with
 * --checkpoint -> cli_bench_checkpoint.
 */
int cli_inspect(int argc, char **argv);
int cli_apply_checkpoint(int argc, char **argv);
int cli_bench_checkpoint(int argc, char **argv);

#endif /* MPLINEAR_CLI_H */
