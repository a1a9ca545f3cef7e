/*
 * cmd_bench.c -- `mplinear bench`: time apply with cold weights.
 *
 * Decode (small M) is memory-bound, so a benchmark that keeps one layer's
 * weights in cache measures the cache, not the kernel. We create enough
 * copies of the layer that their weights total at least twice the last-level
 * cache (and at least 2 copies), rotate over them, and report the median of
 * the timed applies (monotonic clock). Copies are created with the chosen
 * kernel, so creation costs decode + pack only.
 */
#define _GNU_SOURCE /* sysconf(_SC_LEVEL3_CACHE_SIZE), _SC_PHYS_PAGES */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "tp_cli.h"

#ifdef MPL_HAVE_CUDA
/* Device buffers and events for timing CUDA layers on device pointers (the public API takes them as void *). */
#include <cuda_runtime_api.h>
#endif

/* Default cap on all copies' weights: a decode benchmark never needs more (2 x the largest LLCs around). */
#define CLI_BENCH_DEFAULT_MAX_BYTES ((uint64_t)8 << 30)
/* When the cache size is unknown, rotate over this much (over twice any LLC or GPU L2 the project targets). */
#define CLI_BENCH_FALLBACK_COLD ((uint64_t)1 << 30)

static void help(void) {
    printf("Usage: mplinear bench --k K --n N [config flags] [--json] [--reps R]\n"
           "                      [--cold-bytes B] [--max-bytes B] [--max-copies C] [--seed S]\n"
           "       mplinear bench --checkpoint DIR [--m M] ...   (checkpoint directories; see its --help)\n"
           "\n"
           "Times apply on a random layer with cold weights: creates enough copies that their weights\n"
           "total at least --cold-bytes (default 2 x the last-level cache, at least 2 copies), capped at\n"
           "--max-bytes (default 8G, and half the machine's memory) and --max-copies; rotates over them\n"
           "and reports the median seconds per apply, GB/s of weight traffic (weight bytes / second)\n"
           "and GFLOP/s (2*M*N*K / second). Byte counts take K/M/G suffixes (powers of 1024).\n"
           "With --device cuda (CUDA builds): x and y live on the GPU, the cache to exceed is the GPU's\n"
           "L2, and each sample is one CUDA-graph replay of the applies of all copies (>= 8 calls).\n"
           "\n");
    cli_print_config_help(stdout, 1, NULL, NULL);
    printf("  --reps R            timed applies (default 20); the median is reported\n"
           "  --json              print one JSON object per line: kernel, m, k, n, threads, seconds,\n"
           "                      weight_bytes, gbps, gflops, wtype, act, group_size, zp, act_order, w4a8,\n"
           "                      device, copies, cold_bytes, llc_bytes, capped, reps\n");
    cli_tp_print_help(stdout);
}

/* Parses sysfs cache sizes such as "491520K". */
static uint64_t parse_size(const char *s) {
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    if (*end == 'K') v <<= 10;
    else if (*end == 'M') v <<= 20;
    else if (*end == 'G') v <<= 30;
    return (uint64_t)v;
}

uint64_t cli_llc_bytes(void) {
    /* The highest-level cache of cpu0 from sysfs; else glibc's sysconf. */
    const char *base = "/sys/devices/system/cpu/cpu0/cache";
    DIR *d = opendir(base);
    uint64_t best = 0;
    int best_level = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (strncmp(e->d_name, "index", 5) != 0) continue;
            char path[512], buf[64];
            int level = 0;
            uint64_t size = 0;
            snprintf(path, sizeof path, "%s/%s/level", base, e->d_name);
            FILE *f = fopen(path, "r");
            if (f) {
                if (fgets(buf, sizeof buf, f)) level = atoi(buf);
                fclose(f);
            }
            snprintf(path, sizeof path, "%s/%s/size", base, e->d_name);
            f = fopen(path, "r");
            if (f) {
                if (fgets(buf, sizeof buf, f)) size = parse_size(buf);
                fclose(f);
            }
            if (level > best_level || (level == best_level && size > best)) {
                best_level = level;
                best = size;
            }
        }
        closedir(d);
    }
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (best == 0) {
        long v = sysconf(_SC_LEVEL3_CACHE_SIZE);
        if (v > 0) best = (uint64_t)v;
    }
#endif
    return best;
}

#ifdef MPL_HAVE_CUDA
static uint64_t gpu_l2_bytes(int dev) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev) != cudaSuccess) return 0;
    return v > 0 ? (uint64_t)v : 0;
}

/*
 * CUDA layers: x and y live on the device; the applies of all copies (repeated to at least 8
 * calls) are captured once into a CUDA graph on a stream of our own, and every sample is one
 * replay between two events: times[r] = the replay's time / calls. Graph replay is how
 * engines launch decode steps, it takes host launch cost out of the figure, and it is the
 * method of bench/cuda/bench_cuda_w4a16 (the two agree within a few percent on one config).
 * Host-pointer apply would add the x/y copies and a synchronisation to every call.
 */
static int time_cuda(const char *cmd, mpl_layer **layers, int64_t copies, int64_t m, const void *hx, size_t xbytes,
                     size_t ybytes, int reps, double *times) {
    void *dx = NULL, *dy = NULL;
    cudaEvent_t e0 = NULL, e1 = NULL;
    cudaStream_t s = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    const int64_t calls = copies * ((8 + copies - 1) / copies);
    cudaError_t ce = cudaMalloc(&dx, xbytes ? xbytes : 1);
    if (ce == cudaSuccess) ce = cudaMalloc(&dy, ybytes ? ybytes : 1);
    if (ce == cudaSuccess) ce = cudaMemcpy(dx, hx, xbytes, cudaMemcpyHostToDevice);
    if (ce == cudaSuccess) ce = cudaEventCreate(&e0);
    if (ce == cudaSuccess) ce = cudaEventCreate(&e1);
    if (ce == cudaSuccess) ce = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    int rc = CLI_EXIT_OK;
    mpl_status st = MPL_OK;
    /* Warm-up pass outside the capture: first launches load modules and size scratch pools. */
    for (int64_t i = 0; ce == cudaSuccess && st == MPL_OK && i < copies; i++)
        st = mpl_layer_apply_device(layers[i], m, dx, NULL, dy, s);
    if (ce == cudaSuccess && st == MPL_OK) ce = cudaStreamSynchronize(s);
    if (ce == cudaSuccess && st == MPL_OK) {
        ce = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        for (int64_t i = 0; ce == cudaSuccess && st == MPL_OK && i < calls; i++)
            st = mpl_layer_apply_device(layers[i % copies], m, dx, NULL, dy, s);
        cudaError_t ee = cudaStreamEndCapture(s, &graph); /* ends the capture even after a failed apply */
        if (ce == cudaSuccess) ce = ee;
    }
    if (ce == cudaSuccess && st == MPL_OK) ce = cudaGraphInstantiate(&exec, graph, 0);
    if (ce == cudaSuccess && st == MPL_OK) ce = cudaGraphLaunch(exec, s); /* one replay to warm the graph */
    if (ce == cudaSuccess && st == MPL_OK) ce = cudaStreamSynchronize(s);
    for (int r = 0; ce == cudaSuccess && st == MPL_OK && r < reps; r++) {
        ce = cudaEventRecord(e0, s);
        if (ce == cudaSuccess) ce = cudaGraphLaunch(exec, s);
        if (ce == cudaSuccess) ce = cudaEventRecord(e1, s);
        if (ce == cudaSuccess) ce = cudaEventSynchronize(e1);
        float ms = 0;
        if (ce == cudaSuccess) ce = cudaEventElapsedTime(&ms, e0, e1);
        times[r] = (double)ms * 1e-3 / (double)calls;
    }
    if (st != MPL_OK)
        rc = cli_lib_error(cmd, st, "apply on device");
    else if (ce != cudaSuccess) {
        cli_error(cmd, "CUDA: %s", cudaGetErrorString(ce));
        rc = CLI_EXIT_RESOURCE;
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (s) cudaStreamDestroy(s);
    if (e0) cudaEventDestroy(e0);
    if (e1) cudaEventDestroy(e1);
    cudaFree(dx);
    cudaFree(dy);
    return rc;
}
#endif

int cli_bench_run(const char *cmd, const cli_setup *s, const cli_bench_params *p, cli_bench_result *r) {
    const mpl_config *c = &s->cfg;
    int rc;
    memset(r, 0, sizeof *r);
    if ((rc = cli_validate(cmd, c))) return rc;
    cli_synth syn;
    if ((rc = cli_synth_or_exit(cmd, c, MPL_LAYOUT_GPTQ_V2, p->seed, &syn))) return rc;
    mpl_status st = MPL_OK;
    mpl_layer **layers = NULL;
    int64_t made = 0;
    void *x = NULL, *y = NULL;
    float *xf = NULL;
    double *times = NULL;
    mpl_layer *first = NULL;
    st = mpl_layer_create(c, &syn.ckpt, &s->opt, &first);
    if (st != MPL_OK) {
        rc = cli_lib_error(cmd, st, NULL);
        goto out;
    }
    size_t wb = mpl_layer_weight_bytes(first);
    if (wb == 0) wb = 1; /* a kernel that reports nothing still gets a finite copy count */
    /* How many copies: >= target bytes, >= 2, within the caps. */
    /* The cache the weights must not fit in: the CPU's LLC, or the GPU's L2 for CUDA layers. */
#ifdef MPL_HAVE_CUDA
    r->llc_bytes = s->opt.device == MPL_DEVICE_CUDA ? gpu_l2_bytes(s->opt.cuda_device) : cli_llc_bytes();
#else
    r->llc_bytes = cli_llc_bytes();
#endif
    uint64_t target = p->cold_bytes ? p->cold_bytes : r->llc_bytes ? 2 * r->llc_bytes : CLI_BENCH_FALLBACK_COLD;
    uint64_t max_bytes = p->max_bytes ? p->max_bytes : CLI_BENCH_DEFAULT_MAX_BYTES;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (!p->max_bytes && pages > 0 && psz > 0 && (uint64_t)pages * (uint64_t)psz / 2 < max_bytes)
        max_bytes = (uint64_t)pages * (uint64_t)psz / 2;
    int64_t copies = (int64_t)((target + wb - 1) / wb);
    if (copies < 2) copies = 2;
    if (p->max_copies > 0 && copies > p->max_copies) {
        copies = p->max_copies;
        r->capped = 1;
    }
    if ((uint64_t)copies * wb > max_bytes) {
        copies = (int64_t)(max_bytes / wb);
        if (copies < 1) copies = 1;
        r->capped = 1;
    }
    r->copies = copies;
    r->target_bytes = target;
    r->weight_bytes = mpl_layer_weight_bytes(first);
    r->kernel = mpl_layer_kernel(first);
    r->path = mpl_layer_path(first, s->m);
    r->threads = s->opt.device == MPL_DEVICE_CUDA ? 0 : mpl_layer_threads(first);
    layers = calloc((size_t)copies, sizeof *layers);
    int reps = p->reps > 0 ? p->reps : 20;
    times = malloc((size_t)reps * sizeof(double));
    if (!layers || !times) {
        cli_error(cmd, "out of memory for %lld layer copies", (long long)copies);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    layers[0] = first;
    first = NULL;
    made = 1;
    /* The rest with the kernel already chosen (or the path forced): creation is decode + pack only. */
    mpl_options o = s->opt;
    if (!s->kernel) o.kernel = r->kernel;
    for (; made < copies; made++) {
        st = mpl_layer_create(c, &syn.ckpt, &o, &layers[made]);
        if (st != MPL_OK) {
            rc = cli_lib_error(cmd, st, "creating layer copies");
            goto out;
        }
    }
    cli_synth_free(&syn); /* the checkpoint tensors are no longer needed: free them before timing */
    int64_t M = s->m, K = c->k, N = c->n;
    size_t es = c->act == MPL_ACT_F32 ? 4 : 2;
    size_t mk = (size_t)M * (size_t)K, mn = (size_t)M * (size_t)N;
    x = malloc(mk * es);
    xf = malloc(mk * sizeof(float));
    y = malloc(mn * es);
    if (!x || !xf || !y) {
        cli_error(cmd, "out of memory for m = %lld rows", (long long)M);
        rc = CLI_EXIT_RESOURCE;
        goto out;
    }
    cli_rng rng;
    cli_rng_seed(&rng, p->seed + 17);
    for (size_t i = 0; i < mk; i++) xf[i] = (float)cli_rng_gauss(&rng);
    cli_f32_to_act(c->act, xf, x, mk);
#ifdef MPL_HAVE_CUDA
    if (s->opt.device == MPL_DEVICE_CUDA) {
        if ((rc = time_cuda(cmd, layers, copies, M, x, mk * es, mn * es, reps, times))) goto out;
        goto stats;
    }
#endif
    /* Warm-up on the last copy: sizes the thread's workspace and wakes the pool. */
    if ((st = mpl_layer_apply(layers[copies - 1], M, x, NULL, y)) != MPL_OK) {
        rc = cli_lib_error(cmd, st, "apply");
        goto out;
    }
    for (int i = 0; i < reps; i++) {
        mpl_layer *l = layers[i % copies];
        double t0 = cli_now_seconds();
        st = mpl_layer_apply(l, M, x, NULL, y); /* no bias: Llama-style layers have none */
        double t1 = cli_now_seconds();
        if (st != MPL_OK) {
            rc = cli_lib_error(cmd, st, "apply");
            goto out;
        }
        times[i] = t1 - t0;
    }
#ifdef MPL_HAVE_CUDA
stats:
#endif
    qsort(times, (size_t)reps, sizeof(double), cli_cmp_double);
    r->seconds = reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
    double sec = r->seconds > 0 ? r->seconds : 1e-12;
    r->gbps = (double)r->weight_bytes / sec / 1e9;
    r->gflops = 2.0 * (double)M * (double)N * (double)K / sec / 1e9;
    rc = CLI_EXIT_OK;
out:
    mpl_layer_destroy(first);
    if (layers)
        for (int64_t i = 0; i < made; i++) mpl_layer_destroy(layers[i]);
    free(layers);
    free(times);
    free(x);
    free(xf);
    free(y);
    cli_synth_free(&syn);
    return rc;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

int cli_bench(int argc, char **argv) {
    const char *cmd = "bench";
    cli_opt opts[] = {CLI_CONFIG_OPTS,         {"json", 0, 0, 0},       {"reps", 1, 0, 0}, {"cold-bytes", 1, 0, 0},
                      {"max-bytes", 1, 0, 0}, {"max-copies", 1, 0, 0}, {"seed", 1, 0, 0}, CLI_TP_OPTS};
    int nopts = (int)(sizeof opts / sizeof opts[0]);
    int help_flag, rc;
    if ((rc = cli_parse(cmd, argc, argv, opts, nopts, NULL, 0, NULL, &help_flag))) return rc;
    if (help_flag) {
        help();
        return CLI_EXIT_OK;
    }
    cli_setup s;
    if ((rc = cli_setup_from_opts(cmd, opts, nopts, 1, 0, 0, &s))) return rc;
    cli_bench_params p = {.reps = 20, .seed = 1};
    int64_t v;
    const char *t;
    if ((t = cli_value(opts, nopts, "reps"))) {
        if ((rc = cli_int(cmd, "reps", t, 1, 1000000, &v))) return rc;
        p.reps = (int)v;
    }
    if ((t = cli_value(opts, nopts, "max-copies"))) {
        if ((rc = cli_int(cmd, "max-copies", t, 1, INT32_MAX, &v))) return rc;
        p.max_copies = v;
    }
    if ((t = cli_value(opts, nopts, "seed"))) {
        if ((rc = cli_int(cmd, "seed", t, 0, INT64_MAX, &v))) return rc;
        p.seed = (uint64_t)v;
    }
    if ((t = cli_value(opts, nopts, "cold-bytes")) && (rc = cli_bytes(cmd, "cold-bytes", t, &p.cold_bytes))) return rc;
    if ((t = cli_value(opts, nopts, "max-bytes")) && (rc = cli_bytes(cmd, "max-bytes", t, &p.max_bytes))) return rc;
    if (cli_has(opts, nopts, "max-bytes") && p.max_bytes == 0) {
        cli_error(cmd, "--max-bytes 0: must be positive");
        return CLI_EXIT_USAGE;
    }
    int json = cli_has(opts, nopts, "json");
    int tp_ranks;
    mpl_tp_mode tp_mode;
    if ((rc = cli_tp_options(cmd, opts, nopts, &tp_ranks, &tp_mode))) return rc;
    if (tp_ranks) return cli_tp_bench(cmd, &s, &p, tp_ranks, tp_mode, json); /* tools/tp_cli.c */
    cli_bench_result r;
    if ((rc = cli_bench_run(cmd, &s, &p, &r))) return rc;
    const mpl_config *c = &s.cfg;
    uint64_t rotated = (uint64_t)r.copies * r.weight_bytes;
    if (r.capped)
        fprintf(stderr,
                "mplinear bench: note: copies capped at %lld (%.1f MiB rotated, target %.1f MiB): weights may be "
                "partly cache-resident\n",
                (long long)r.copies, mib(rotated), mib(r.target_bytes));
    if (json) {
        printf("{\"kernel\": ");
        cli_json_string(stdout, r.kernel);
        printf(", \"path\": ");
        cli_json_string(stdout, r.path);
        printf(", \"m\": %lld, \"k\": %lld, \"n\": %lld, \"threads\": %d, \"seconds\": %.9g, \"weight_bytes\": %zu, "
               "\"gbps\": %.6g, \"gflops\": %.6g, \"wtype\": \"%s\", \"act\": \"%s\", \"group_size\": %lld, "
               "\"zp\": %s, \"act_order\": %s, \"w4a8\": %s, \"device\": \"%s\", \"copies\": %lld, "
               "\"cold_bytes\": %llu, \"llc_bytes\": %llu, \"capped\": %s, \"reps\": %d}\n",
               (long long)s.m, (long long)c->k, (long long)c->n, r.threads, r.seconds, r.weight_bytes, r.gbps, r.gflops,
               mpl_wtype_name(c->wtype), mpl_act_name(c->act), (long long)c->group_size,
               c->zero_points ? "true" : "false", c->act_order ? "true" : "false",
               c->mode == MPL_MODE_W4A8 ? "true" : "false", s.opt.device == MPL_DEVICE_CUDA ? "cuda" : "cpu",
               (long long)r.copies, (unsigned long long)rotated, (unsigned long long)r.llc_bytes,
               r.capped ? "true" : "false", p.reps);
        return CLI_EXIT_OK;
    }
    char desc[256];
    cli_config_string(c, desc, sizeof desc);
    if (s.opt.device == MPL_DEVICE_CUDA)
        printf("bench %s, m=%lld, device cuda\n", desc, (long long)s.m);
    else
        printf("bench %s, m=%lld, threads %d, device cpu\n", desc, (long long)s.m, r.threads);
    const char *cache = s.opt.device == MPL_DEVICE_CUDA ? "GPU L2" : "LLC";
    if (r.llc_bytes)
        printf("path %s: %.2f MiB of weights per copy, %lld copies = %.1f MiB rotated (%s %.1f MiB)\n", r.path,
               mib(r.weight_bytes), (long long)r.copies, mib(rotated), cache, mib(r.llc_bytes));
    else
        printf("path %s: %.2f MiB of weights per copy, %lld copies = %.1f MiB rotated (%s size unknown)\n",
               r.path, mib(r.weight_bytes), (long long)r.copies, mib(rotated), cache);
    printf("median %.4f ms per apply over %d reps: %.2f GB/s of weights, %.2f GFLOP/s\n", r.seconds * 1e3, p.reps,
           r.gbps, r.gflops);
    return CLI_EXIT_OK;
}
