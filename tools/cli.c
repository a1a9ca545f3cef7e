/* cli.c -- exit codes, one-line errors, option parsing and the shared config flags. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "npy.h"

int cli_exit_for(mpl_status st) {
    switch (st) {
    case MPL_OK: return CLI_EXIT_OK;
    case MPL_ERR_INVALID_ARGUMENT:
    case MPL_ERR_OVERFLOW:
    case MPL_ERR_FORMAT: return CLI_EXIT_INPUT;
    case MPL_ERR_UNSUPPORTED: return CLI_EXIT_UNSUPPORTED;
    case MPL_ERR_NO_HARDWARE: return CLI_EXIT_NO_HARDWARE;
    case MPL_ERR_IO: return CLI_EXIT_IO;
    case MPL_ERR_OUT_OF_MEMORY:
    case MPL_ERR_CUDA:
    case MPL_ERR_INTERNAL: return CLI_EXIT_RESOURCE;
    }
    return CLI_EXIT_RESOURCE;
}

void cli_error(const char *cmd, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One line: each run of newlines (and the indentation after it) becomes "; ". */
    char flat[4096];
    size_t o = 0;
    for (const char *p = msg; *p && o + 3 < sizeof flat;) {
        if (*p == '\n' || *p == '\r') {
            while (*p == '\n' || *p == '\r' || *p == ' ' || *p == '\t') p++;
            if (o > 0 && *p) {
                if (flat[o - 1] != ':') flat[o++] = ';';
                flat[o++] = ' ';
            }
            continue;
        }
        flat[o++] = *p++;
    }
    flat[o] = 0;
    fflush(stdout);
    fprintf(stderr, "mplinear %s: error: %s\n", cmd, flat);
}

int cli_lib_error(const char *cmd, mpl_status st, const char *context) {
    const char *m = mpl_last_error();
    if (!m || !*m) m = mpl_status_string(st);
    if (context && *context)
        cli_error(cmd, "%s: %s", context, m);
    else
        cli_error(cmd, "%s", m);
    return cli_exit_for(st);
}

cli_opt *cli_find(cli_opt *opts, int nopts, const char *name) {
    for (int i = 0; i < nopts; i++)
        if (strcmp(opts[i].name, name) == 0) return &opts[i];
    return NULL;
}

const char *cli_value(cli_opt *opts, int nopts, const char *name) {
    cli_opt *o = cli_find(opts, nopts, name);
    return o && o->present ? o->value : NULL;
}

int cli_has(cli_opt *opts, int nopts, const char *name) {
    cli_opt *o = cli_find(opts, nopts, name);
    return o && o->present;
}

static double progress_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void cli_progress_start(cli_progress *p, int quiet, const char *what, const char *items, int64_t total,
                        double work_total, const char *unit) {
    memset(p, 0, sizeof *p);
    p->on = !quiet && isatty(STDERR_FILENO);
    p->what = what;
    p->items = items;
    p->unit = unit;
    p->total = total;
    p->work_total = work_total;
    p->t0 = p->last = progress_now();
    if (p->on) {
        fprintf(stderr, "\r%s: 0/%lld %s\033[K", what, (long long)total, items);
        fflush(stderr);
    }
}

void cli_progress_step(cli_progress *p, int64_t done, double work_done) {
    if (!p->on) return;
    double t = progress_now();
    if (t - p->last < 0.2 && done < p->total) return; /* 5 updates a second are enough to watch */
    p->last = t;
    double el = t - p->t0, rate = el > 0 ? work_done / el : 0;
    fprintf(stderr, "\r%s: %lld/%lld %s", p->what, (long long)done, (long long)p->total, p->items);
    if (rate > 0) {
        double eta = (p->work_total - work_done) / rate;
        const char *pfx = rate >= 1e9 ? "G" : rate >= 1e6 ? "M" : rate >= 1e3 ? "k" : "";
        double r = rate >= 1e9 ? rate / 1e9 : rate >= 1e6 ? rate / 1e6 : rate >= 1e3 ? rate / 1e3 : rate;
        fprintf(stderr, ", %.3g %s%s/s, ETA %lld:%02lld", r, pfx, p->unit, (long long)(eta / 60),
                (long long)eta % 60);
    }
    fprintf(stderr, "\033[K");
    fflush(stderr);
}

void cli_progress_end(cli_progress *p, int64_t done) {
    if (!p->on) return;
    fprintf(stderr, "\r%s: %lld/%lld %s in %.1f s\033[K\n", p->what, (long long)done, (long long)p->total, p->items,
            progress_now() - p->t0);
    fflush(stderr);
    p->on = 0;
}

void cli_progress_clear(cli_progress *p) {
    if (!p->on) return;
    fprintf(stderr, "\r\033[K");
    fflush(stderr);
    p->on = 0;
}

int cli_stream_timeout(const char *cmd, cli_opt *opts, int nopts, int *ms) {
    *ms = NPY_STREAM_TIMEOUT_MS;
    const char *t = cli_value(opts, nopts, "stream-timeout");
    if (!t) return 0;
    int64_t v;
    int rc = cli_int(cmd, "stream-timeout", t, 1, 86400, &v);
    if (rc) return rc;
    *ms = (int)(v * 1000);
    return 0;
}

int cli_argv_has(int argc, char **argv, const char *name) {
    size_t l = strlen(name);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a[0] == '-' && a[1] == '-' && strncmp(a + 2, name, l) == 0 && (a[2 + l] == 0 || a[2 + l] == '='))
            return 1;
    }
    return 0;
}

int cli_parse(const char *cmd, int argc, char **argv, cli_opt *opts, int nopts, const char **pos, int max_pos,
              int *npos, int *help) {
    int np = 0;
    *help = 0;
    for (int i = 0; i < nopts; i++) {
        opts[i].present = 0;
        opts[i].value = NULL;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = 1;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            cli_error(cmd, "unexpected '--' (see mplinear %s --help)", cmd);
            return CLI_EXIT_USAGE;
        }
        if (a[0] != '-' || a[1] != '-') {
            if (a[0] == '-' && a[1] != 0) {
                cli_error(cmd, "unknown option '%s': options are spelled --name (see mplinear %s --help)", a, cmd);
                return CLI_EXIT_USAGE;
            }
            if (np >= max_pos) {
                cli_error(cmd, "unexpected argument '%s' (see mplinear %s --help)", a, cmd);
                return CLI_EXIT_USAGE;
            }
            pos[np++] = a;
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t nl = eq ? (size_t)(eq - name) : strlen(name);
        cli_opt *o = NULL;
        for (int j = 0; j < nopts; j++)
            if (strlen(opts[j].name) == nl && strncmp(opts[j].name, name, nl) == 0) o = &opts[j];
        if (!o) {
            cli_error(cmd, "unknown option '--%.*s' (see mplinear %s --help)", (int)nl, name, cmd);
            return CLI_EXIT_USAGE;
        }
        if (o->present) {
            cli_error(cmd, "option --%s given twice", o->name);
            return CLI_EXIT_USAGE;
        }
        o->present = 1;
        if (o->takes_value) {
            if (eq) {
                o->value = eq + 1;
            } else {
                if (i + 1 < argc && (strcmp(argv[i + 1], "--help") == 0 || strcmp(argv[i + 1], "-h") == 0)) {
                    /* "--layer --help": the user wants help, not a layer named "--help". */
                    *help = 1;
                    o->present = 0;
                    i++;
                    continue;
                }
                if (i + 1 >= argc) {
                    cli_error(cmd, "option --%s needs a value", o->name);
                    return CLI_EXIT_USAGE;
                }
                o->value = argv[++i];
            }
        } else if (eq) {
            cli_error(cmd, "option --%s takes no value (got '%s')", o->name, eq + 1);
            return CLI_EXIT_USAGE;
        }
    }
    if (npos) *npos = np;
    return 0;
}

int cli_int(const char *cmd, const char *flag, const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = s && *s ? strtoll(s, &end, 10) : 0;
    if (!s || !*s || *end != 0) {
        cli_error(cmd, "--%s '%s': not an integer", flag, s ? s : "");
        return CLI_EXIT_USAGE;
    }
    if (errno == ERANGE || v < lo || v > hi) {
        cli_error(cmd, "--%s %s: must be in %lld..%lld", flag, s, (long long)lo, (long long)hi);
        return CLI_EXIT_USAGE;
    }
    *out = (int64_t)v;
    return 0;
}

int cli_bytes(const char *cmd, const char *flag, const char *s, uint64_t *out) {
    char *end = NULL;
    errno = 0;
    if (!s || !*s || *s == '-') {
        cli_error(cmd, "--%s '%s': not a byte count (e.g. 1048576, 512M, 8G)", flag, s ? s : "");
        return CLI_EXIT_USAGE;
    }
    unsigned long long v = strtoull(s, &end, 10);
    int shift = 0;
    if (end != s && *end) {
        switch (*end) {
        case 'k': case 'K': shift = 10; break;
        case 'm': case 'M': shift = 20; break;
        case 'g': case 'G': shift = 30; break;
        case 't': case 'T': shift = 40; break;
        default: shift = -1;
        }
        end++;
        if (*end == 'i' && end[1] == 'B') end += 2;
        else if (*end == 'B') end++;
    }
    if (end == s || *end || shift < 0 || errno == ERANGE || (shift && v > (UINT64_MAX >> shift))) {
        cli_error(cmd, "--%s '%s': not a byte count (e.g. 1048576, 512M, 8G)", flag, s);
        return CLI_EXIT_USAGE;
    }
    *out = (uint64_t)v << shift;
    return 0;
}

void cli_print_config_help(FILE *f, int64_t def_m, const char *def_k, const char *def_n) {
    fprintf(f,
            "Config flags:\n"
            "  --m M               rows of x (batch); default %lld\n"
            "  --k K               input features (in_features)%s%s%s\n"
            "  --n N               output features (out_features)%s%s%s\n"
            "  --full-k K --full-n N  the whole layer when this is a tensor-parallel slice (default: same)\n"
            "  --wtype T           weight type: 4-bit uint4b8 (default), uint4, int4; 8-bit uint8b128, uint8;\n"
            "                      3-bit uint3b4, uint3; 2-bit uint2b2, uint2 (uintNbB: stored s, value s - B;\n"
            "                      uintN: value s - z with per-group zero points). K must be a multiple of\n"
            "                      32 for 3-bit (32 values per 3 int32 words), of 32 / bits otherwise\n"
            "  --act A             activation type f16, bf16 (default), f32\n"
            "  --group-size G      -1 (one group over K, the default) or a positive divisor of K\n"
            "  --zp                per-group zero points (implied for uint2, uint3, uint4, uint8)\n"
            "  --act-order         g_idx gives each input channel's group\n"
            "  --w4a8              quantize activations to int8 per row (W4A8 mode)\n"
            "  --device D          cpu (default), cuda, or vulkan[:INDEX|:NAME] (a Vulkan device, mplinear info)\n"
            "  --kernel NAME       force a kernel (see mplinear info); default: the chooser's pick\n"
            "  --threads N         CPU threads for apply; 0 = all cores (default)\n",
            (long long)def_m, def_k ? "; default " : " (required)", def_k ? def_k : "", "",
            def_n ? "; default " : " (required)", def_n ? def_n : "", "");
}

int cli_setup_from_opts(const char *cmd, cli_opt *opts, int nopts, int64_t def_m, int64_t def_k, int64_t def_n,
                        cli_setup *s) {
    int rc;
    int64_t v;
    memset(s, 0, sizeof *s);
    int64_t k = def_k, n = def_n;
    const char *t;
    /* Dimensions: bounded to int32 here; the library applies its own (smaller) limit with a named rule. */
    const int64_t dim_max = ((int64_t)1 << 31) - 1;
    if ((t = cli_value(opts, nopts, "k"))) {
        if ((rc = cli_int(cmd, "k", t, 1, dim_max, &k))) return rc;
    } else if (!def_k) {
        cli_error(cmd, "missing --k (input features)");
        return CLI_EXIT_USAGE;
    }
    if ((t = cli_value(opts, nopts, "n"))) {
        if ((rc = cli_int(cmd, "n", t, 1, dim_max, &n))) return rc;
    } else if (!def_n) {
        cli_error(cmd, "missing --n (output features)");
        return CLI_EXIT_USAGE;
    }
    mpl_config_init(&s->cfg, k, n);
    mpl_options_init(&s->opt);
    s->m = def_m;
    if ((t = cli_value(opts, nopts, "m"))) {
        if ((rc = cli_int(cmd, "m", t, 1, dim_max, &s->m))) return rc;
    }
    if ((t = cli_value(opts, nopts, "full-k"))) {
        if ((rc = cli_int(cmd, "full-k", t, 0, dim_max, &s->cfg.full_k))) return rc;
    }
    if ((t = cli_value(opts, nopts, "full-n"))) {
        if ((rc = cli_int(cmd, "full-n", t, 0, dim_max, &s->cfg.full_n))) return rc;
    }
    if ((t = cli_value(opts, nopts, "wtype")) && mpl_wtype_parse(t, &s->cfg.wtype) != MPL_OK) {
        cli_error(cmd, "--wtype: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    if ((t = cli_value(opts, nopts, "act")) && mpl_act_parse(t, &s->cfg.act) != MPL_OK) {
        cli_error(cmd, "--act: %s", mpl_last_error());
        return CLI_EXIT_USAGE;
    }
    if ((t = cli_value(opts, nopts, "group-size"))) {
        if ((rc = cli_int(cmd, "group-size", t, -1, dim_max, &s->cfg.group_size))) return rc;
    }
    s->cfg.zero_points = cli_has(opts, nopts, "zp") || mpl_wtype_zero_points(s->cfg.wtype);
    s->cfg.act_order = cli_has(opts, nopts, "act-order");
    s->cfg.mode = cli_has(opts, nopts, "w4a8") ? MPL_MODE_W4A8 : MPL_MODE_W4A16;
    if ((t = cli_value(opts, nopts, "device"))) {
        if (strcmp(t, "cpu") == 0)
            s->opt.device = MPL_DEVICE_CPU;
        else if (strcmp(t, "cuda") == 0)
            s->opt.device = MPL_DEVICE_CUDA;
        else if (strncmp(t, "vulkan", 6) == 0 && (t[6] == 0 || (t[6] == ':' && t[7]))) {
            /* vulkan, vulkan:INDEX or vulkan:NAME (part of the device name, as mplinear info lists them) */
            s->opt.device = MPL_DEVICE_VULKAN;
            const char *spec = t[6] ? t + 7 : "0";
            if (strspn(spec, "0123456789") == strlen(spec)) {
                int64_t idx;
                if (cli_int(cmd, "device vulkan:", spec, 0, 1023, &idx)) return CLI_EXIT_USAGE;
                s->opt.vulkan_device = (int)idx;
            } else {
                s->opt.vulkan_device_name = spec;
            }
        } else {
            cli_error(cmd, "--device '%s': must be cpu, cuda, vulkan, vulkan:INDEX or vulkan:NAME", t);
            return CLI_EXIT_USAGE;
        }
    }
    if ((t = cli_value(opts, nopts, "kernel"))) {
        if (!*t) {
            cli_error(cmd, "--kernel: empty name (see mplinear info for the kernel table)");
            return CLI_EXIT_USAGE;
        }
        s->kernel = t;
        s->opt.kernel = t;
    }
    if ((t = cli_value(opts, nopts, "threads"))) {
        if ((rc = cli_int(cmd, "threads", t, 0, 4096, &v))) return rc;
        s->opt.threads = (int)v;
    }
    return 0;
}

int cli_validate(const char *cmd, const mpl_config *c) {
    mpl_status st = mpl_config_validate(c);
    return st == MPL_OK ? 0 : cli_lib_error(cmd, st, NULL);
}

void cli_config_string(const mpl_config *c, char *buf, size_t cap) {
    char g[32];
    if (c->group_size == -1)
        snprintf(g, sizeof g, "-1 (one per row)");
    else
        snprintf(g, sizeof g, "%lld", (long long)c->group_size);
    snprintf(buf, cap, "k=%lld n=%lld %s %s group %s%s%s%s", (long long)c->k, (long long)c->n,
             mpl_wtype_name(c->wtype), mpl_act_name(c->act), g, c->zero_points ? " zp" : "",
             c->act_order ? " act-order" : "", c->mode == MPL_MODE_W4A8 ? " w4a8" : "");
}

void cli_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

double cli_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int cli_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

void cli_verify_inputs(mpl_act a, uint64_t seed, size_t mk, const float *bias, size_t n, void *x, float *xf, void *b,
                       float *bf) {
    cli_rng rng;
    cli_rng_seed(&rng, seed ^ 0x5851f42d4c957f2dull);
    for (size_t i = 0; i < mk; i++) xf[i] = (float)cli_rng_gauss(&rng);
    cli_f32_to_act(a, xf, x, mk);
    cli_act_to_f32(a, x, xf, mk);
    cli_f32_to_act(a, bias, b, n);
    cli_act_to_f32(a, b, bf, n);
}
