/*
 * cmd_checkpoint.c -- checkpoint-directory subcommands: placeholders.
 *
 * Owned by the checkpoint engineer, who replaces this file wholesale; the
 * interface (three functions, argv conventions, exit codes) is documented in
 * tools/cli.h and must stay stable.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static int wants_help(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) return 1;
    return 0;
}

static int not_yet(const char *cmd, int argc, char **argv, const char *usage) {
    if (wants_help(argc, argv)) {
        printf("Usage: %s\n\nCheckpoint loading is not available yet in this build.\n", usage);
        return CLI_EXIT_OK;
    }
    cli_error(cmd, "checkpoint loading is not available yet");
    return CLI_EXIT_USAGE;
}

int cli_inspect(int argc, char **argv) {
    return not_yet("inspect", argc, argv, "mplinear inspect DIR [--json]");
}

int cli_apply_checkpoint(int argc, char **argv) {
    return not_yet("apply", argc, argv, "mplinear apply --checkpoint DIR --layer NAME --input X.npy --output Y.npy ...");
}

int cli_bench_checkpoint(int argc, char **argv) {
    return not_yet("bench", argc, argv, "mplinear bench --checkpoint DIR [--m M] ...");
}
