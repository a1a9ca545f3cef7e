/* mplinear.c -- the command-line tool: subcommand dispatch. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f) {
    fprintf(f,
            "mplinear %s -- mixed-precision (2- to 8-bit weight) linear-layer kernels\n"
            "\n"
            "Usage: mplinear <subcommand> [options]   (mplinear <subcommand> --help for details)\n"
            "\n"
            "Subcommands:\n"
            "  demo      the chosen kernel for a Llama-3-8B layer: its error against ref and its speed\n"
            "  info      platform, kernel table, and for a config the chosen kernel and every refusal\n"
            "  verify    random layer: the chosen (or --kernel) kernel against the ref kernel\n"
            "  apply     y = x W^T + b from checkpoint tensors in .npy files\n"
            "  bench     time apply with cold weights (GB/s of weights, GFLOP/s)\n"
            "  inspect   list the quantized layers of a checkpoint directory\n"
            "  version   print the library version\n"
            "\n"
            "Exit codes: 0 ok, 1 verification failed, 2 usage, 3 invalid input, 4 unsupported config,\n"
            "5 hardware missing, 6 I/O error, 7 out of memory / CUDA / internal error.\n",
            mpl_version());
}

int main(int argc, char **argv) {
    /* A reader that closes the pipe we write to (--output to a pipe, stdout into `head`) makes the
     * write fail with EPIPE, reported as an I/O error, instead of killing the tool silently. */
    signal(SIGPIPE, SIG_IGN);
    if (argc < 2) {
        usage(stderr);
        fprintf(stderr, "mplinear: error: missing subcommand\n");
        return CLI_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    int sargc = argc - 1;
    char **sargv = argv + 1;
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("mplinear %s\n", mpl_version());
        return CLI_EXIT_OK;
    }
    if (strcmp(cmd, "info") == 0) return cli_info(sargc, sargv);
    if (strcmp(cmd, "verify") == 0) return cli_verify(sargc, sargv);
    if (strcmp(cmd, "demo") == 0) return cli_demo(sargc, sargv);
    if (strcmp(cmd, "inspect") == 0) return cli_inspect(sargc, sargv);
    if (strcmp(cmd, "apply") == 0)
        return cli_argv_has(sargc, sargv, "checkpoint") ? cli_apply_checkpoint(sargc, sargv) : cli_apply(sargc, sargv);
    if (strcmp(cmd, "bench") == 0)
        return cli_argv_has(sargc, sargv, "checkpoint") ? cli_bench_checkpoint(sargc, sargv) : cli_bench(sargc, sargv);
    fprintf(stderr, "mplinear: error: unknown subcommand '%s' (see mplinear --help)\n", cmd);
    return CLI_EXIT_USAGE;
}
