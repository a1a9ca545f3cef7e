/*
 * test_pool.c -- the persistent thread pool (mpl_parallel_run) and concurrent use of one layer:
 * every tid runs exactly once per job with a consistent thread count, concurrent callers are
 * serialized correctly, apply() from several threads on one layer gives the single-threaded
 * results bit for bit, runs are deterministic, and threads that call apply then exit leak nothing
 * (checked by LeakSanitizer in the ASan build).
 * Placement: workers pinned one per CPU of the process's affinity mask, and a job's workers never
 * on the caller's CPU, whether the caller is pinned or not; a job wakes its own workers only.
 */
#define _GNU_SOURCE /* sched_getcpu, CPU_SET, pthread_setaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/internal.h"
#include "support/testutil.h"

#define MAXT 256

typedef struct {
    atomic_int calls[MAXT];
    atomic_int nthreads_seen[MAXT];
    atomic_int bad;
    pthread_t caller;
    int64_t n;         /* elements to sum */
    const int32_t *v;
    int64_t partial[MAXT];
} job;

static void job_fn(void *ctx, int tid, int nt) {
    job *j = ctx;
    if (tid < 0 || tid >= nt || nt > MAXT) {
        atomic_fetch_add(&j->bad, 1);
        return;
    }
    atomic_fetch_add(&j->calls[tid], 1);
    atomic_store(&j->nthreads_seen[tid], nt);
    if (tid == 0 && !pthread_equal(pthread_self(), j->caller)) atomic_fetch_add(&j->bad, 1);
    int64_t s = 0, b = j->n * tid / nt, e = j->n * (tid + 1) / nt;
    for (int64_t i = b; i < e; i++) s += j->v ? j->v[i] : i;
    j->partial[tid] = s;
}

/* Runs one job on `want` threads and checks it; returns the number of problems. */
static int run_and_check(int want, int64_t n, const int32_t *v, int64_t expect_sum) {
    job *j = calloc(1, sizeof *j);
    assert_non_null(j);
    j->caller = pthread_self();
    j->n = n;
    j->v = v;
    mpl_parallel_run(want, job_fn, j);
    int pool = mpl_pool_size();
    int expect_nt = want <= 1 ? 1 : want > pool ? pool : want;
    int bad = atomic_load(&j->bad);
    int64_t sum = 0;
    for (int t = 0; t < MAXT; t++) {
        int c = atomic_load(&j->calls[t]);
        if (t < expect_nt) {
            if (c != 1 || atomic_load(&j->nthreads_seen[t]) != expect_nt) bad++;
            sum += j->partial[t];
        } else if (c != 0) {
            bad++;
        }
    }
    if (sum != expect_sum) bad++;
    if (bad) fprintf(stderr, "parallel_run(%d): %d problems (pool %d, expected %d threads)\n", want, bad, pool, expect_nt);
    free(j);
    return bad;
}

static void thread_counts(void **state) {
    (void)state;
    int pool = mpl_pool_size();
    assert_true(pool >= 1);
    assert_true(pool <= MAXT);
    print_message("pool size %d\n", pool);
    const int64_t n = 100003;
    int counts[] = {INT32_MIN, -1, 0, 1, 2, 3, pool - 1, pool, pool + 1, 2 * pool, 64, 1000};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        assert_int_equal(run_and_check(counts[i], n, NULL, n * (n - 1) / 2), 0);
}

/* Many short jobs back to back (lost wake-ups hang or drop a tid). */
static void many_jobs(void **state) {
    (void)state;
    int pool = mpl_pool_size();
    int bad = 0;
    for (int i = 0; i < 3000; i++) {
        int want = 1 + i % (pool + 1);
        bad += run_and_check(want, 97 + i % 13, NULL, (int64_t)(97 + i % 13) * (96 + i % 13) / 2);
    }
    assert_int_equal(bad, 0);
}

typedef struct {
    int id, iters, bad;
    int32_t *v;
    int64_t n, sum;
} caller_arg;

static void *caller_main(void *p) {
    caller_arg *a = p;
    for (int i = 0; i < a->iters; i++) a->bad += run_and_check(2 + (i + a->id) % 4, a->n, a->v, a->sum);
    return NULL;
}

/* Several threads calling mpl_parallel_run at once, each with its own data. */
static void concurrent_callers(void **state) {
    (void)state;
    enum { NC = 4 };
    pthread_t th[NC];
    caller_arg args[NC];
    for (int c = 0; c < NC; c++) {
        args[c] = (caller_arg){.id = c, .iters = 300, .n = 5000 + c * 17};
        args[c].v = malloc((size_t)args[c].n * sizeof(int32_t));
        assert_non_null(args[c].v);
        args[c].sum = 0;
        for (int64_t i = 0; i < args[c].n; i++) {
            args[c].v[i] = (int32_t)(i * (c + 3) % 1001) - 500;
            args[c].sum += args[c].v[i];
        }
    }
    for (int c = 0; c < NC; c++) assert_int_equal(pthread_create(&th[c], NULL, caller_main, &args[c]), 0);
    for (int c = 0; c < NC; c++) {
        pthread_join(th[c], NULL);
        assert_int_equal(args[c].bad, 0);
        free(args[c].v);
    }
}

/* ---------- one layer used from several threads ---------- */

enum { K = 512, N = 96, M = 5, NTH = 4, REPS = 15 };

typedef struct {
    mpl_layer *l;
    const uint16_t *x;    /* [M][K] bf16, this thread's input */
    const uint16_t *want; /* [M][N] the single-threaded result for it */
    const uint16_t *bias;
    int mismatches;
    int errors;
} apply_arg;

static void *apply_main(void *p) {
    apply_arg *a = p;
    uint16_t y[M * N];
    for (int r = 0; r < REPS; r++) {
        int64_t m = 1 + (r % M); /* vary m: the per-thread workspace grows and is reused */
        if (mpl_layer_apply(a->l, m, a->x, a->bias, y) != MPL_OK) a->errors++;
        if (memcmp(y, a->want, (size_t)(m * N) * sizeof(uint16_t)) != 0) a->mismatches++;
    }
    return NULL;
}

static mpl_layer *make_layer(const char *kernel, int threads, mpl_checkpoint_tensors *ck, const mpl_config *c) {
    mpl_options o;
    mpl_options_init(&o);
    o.kernel = kernel;
    o.threads = threads;
    mpl_layer *l = NULL;
    assert_int_equal(mpl_layer_create(c, ck, &o, &l), MPL_OK);
    return l;
}

static void concurrent_apply_one_layer(void **state) {
    const char *kernel = *state; /* "ref", or NULL: whatever the chooser picks */
    mpl_config c;
    mpl_config_init(&c, K, N);
    c.wtype = MPL_WTYPE_UINT4;
    c.zero_points = 1;
    c.group_size = 128;
    c.act = MPL_ACT_BF16;
    uint64_t seed = tu_seed(0x9001);
    tu_rng r;
    tu_rng_init(&r, seed);
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_BF16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_CT, &ck), MPL_OK);
    mpl_layer *l = make_layer(kernel, 0, &ck, &c);
    print_message("kernel %s\n", mpl_layer_kernel(l));
    static uint16_t x[NTH][M * K], want[NTH][M * N], bias[N];
    static float xf[M * K], bf[N];
    tu_bias_random(&r, c.act, N, TU_DATA_RANDOM, bias, bf);
    for (int t = 0; t < NTH; t++) {
        tu_act_random(&r, &c, M, TU_DATA_RANDOM, x[t], xf);
        assert_int_equal(mpl_layer_apply(l, M, x[t], bias, want[t]), MPL_OK);
        /* row i of an M-row apply equals a 1-row apply of that row (rows are independent) */
        uint16_t y1[N];
        assert_int_equal(mpl_layer_apply(l, 1, x[t] + 2 * K, bias, y1), MPL_OK);
        assert_memory_equal(y1, want[t] + 2 * N, sizeof y1);
    }
    pthread_t th[NTH];
    apply_arg args[NTH];
    for (int t = 0; t < NTH; t++) {
        args[t] = (apply_arg){.l = l, .x = x[t], .want = want[t], .bias = bias};
        assert_int_equal(pthread_create(&th[t], NULL, apply_main, &args[t]), 0);
    }
    for (int t = 0; t < NTH; t++) {
        pthread_join(th[t], NULL);
        assert_int_equal(args[t].errors, 0);
        assert_int_equal(args[t].mismatches, 0);
    }
    /* determinism: a second run from this thread is bit-identical */
    uint16_t again[M * N];
    assert_int_equal(mpl_layer_apply(l, M, x[0], bias, again), MPL_OK);
    assert_memory_equal(again, want[0], sizeof again);
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* ref's result does not depend on the number of threads (each output is computed whole by one
 * thread in a fixed order). */
static void ref_independent_of_threads(void **state) {
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        mpl_config c;
        mpl_config_init(&c, 264, 37);
        c.group_size = 24;
        c.act_order = 1;
        c.act = MPL_ACT_F16;
        c.mode = (mpl_mode)mode;
        tu_rng r;
        tu_rng_init(&r, tu_seed(0x7e7e) + (uint64_t)mode);
        tu_weights w;
        assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_IRREGULAR, TU_DATA_RANDOM, &r), 0);
        mpl_checkpoint_tensors ck;
        assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
        uint16_t x[9 * 264], y0[9 * 37], y[9 * 37];
        float xf[9 * 264];
        tu_act_random(&r, &c, 9, TU_DATA_RANDOM, x, xf);
        int threads[] = {1, 2, 3, 0, 1000};
        for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
            mpl_layer *l = make_layer("ref", threads[i], &ck, &c);
            assert_int_equal(mpl_layer_apply(l, 9, x, NULL, i ? y : y0), MPL_OK);
            if (i) assert_memory_equal(y, y0, sizeof y);
            mpl_layer_destroy(l);
        }
        mpl_checkpoint_tensors_free(&ck);
        tu_weights_free(&w);
    }
}

/* Short-lived threads that apply once and exit: their per-thread workspace must be released
 * (LeakSanitizer reports it otherwise at exit of the ASan build). */
static void *apply_once_main(void *p) {
    apply_arg *a = p;
    uint16_t y[M * N];
    if (mpl_layer_apply(a->l, M, a->x, NULL, y) != MPL_OK) a->errors++;
    if (memcmp(y, a->want, sizeof y) != 0) a->mismatches++;
    return NULL;
}

static void exiting_threads(void **state) {
    (void)state;
    mpl_config c;
    mpl_config_init(&c, K, N);
    c.act = MPL_ACT_BF16;
    c.group_size = 64;
    tu_rng r;
    tu_rng_init(&r, tu_seed(0xe817));
    tu_weights w;
    assert_int_equal(tu_weights_random(&w, &c, MPL_DTYPE_F16, TU_GIDX_NONE, TU_DATA_RANDOM, &r), 0);
    mpl_checkpoint_tensors ck;
    assert_int_equal(tu_weights_encode(&w, MPL_LAYOUT_GPTQ, &ck), MPL_OK);
    mpl_layer *l = make_layer(NULL, 0, &ck, &c);
    static uint16_t x[M * K], want[M * N];
    static float xf[M * K];
    tu_act_random(&r, &c, M, TU_DATA_RANDOM, x, xf);
    assert_int_equal(mpl_layer_apply(l, M, x, NULL, want), MPL_OK);
    for (int round = 0; round < 8; round++) {
        pthread_t th[NTH];
        apply_arg args[NTH];
        for (int t = 0; t < NTH; t++) {
            args[t] = (apply_arg){.l = l, .x = x, .want = want};
            assert_int_equal(pthread_create(&th[t], NULL, apply_once_main, &args[t]), 0);
        }
        for (int t = 0; t < NTH; t++) {
            pthread_join(th[t], NULL);
            assert_int_equal(args[t].errors + args[t].mismatches, 0);
        }
    }
    mpl_layer_destroy(l);
    mpl_checkpoint_tensors_free(&ck);
    tu_weights_free(&w);
}

/* Workers: distinct CPUs of the mask. A job's tids other than 0 run off the caller's CPU. */
typedef struct {
    atomic_int cpu[MAXT];
} cpu_job;

static void cpu_fn(void *ctx, int tid, int nt) {
    (void)nt;
    cpu_job *j = ctx;
    /* busy for ~1 ms so a worker cannot finish before the OS has placed it */
    for (volatile int i = 0; i < 200000; i = i + 1) {
    }
    atomic_store(&j->cpu[tid], sched_getcpu());
}

/* Pins the calling thread to CPU c; 0 on success. */
static int pin_self(int c) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

static void placement(void **state) {
    (void)state;
    int pool = mpl_pool_size();
    cpu_set_t mask;
    CPU_ZERO(&mask);
    assert_int_equal(sched_getaffinity(getpid(), sizeof mask, &mask), 0);
    assert_int_equal(pool, CPU_COUNT(&mask));
    if (pool < 2) {
        fprintf(stderr, "SKIP placement: one CPU in the affinity mask\n");
        return;
    }
    for (int i = 0; i < pool; i++) {
        int c = mpl_pool_worker_cpu(i);
        assert_true(c >= 0 && CPU_ISSET(c, &mask));
        for (int k = 0; k < i; k++) assert_int_not_equal(c, mpl_pool_worker_cpu(k));
    }
    assert_int_equal(mpl_pool_worker_cpu(pool), -1);
    /* the caller pinned to each CPU in turn (the case the old pool lost: a worker on the caller's CPU) */
    cpu_set_t saved;
    pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &mask)) continue;
        assert_int_equal(pin_self(c), 0);
        for (int rep = 0; rep < 5; rep++) {
            cpu_job j;
            for (int t = 0; t < MAXT; t++) atomic_store(&j.cpu[t], -1);
            mpl_parallel_run(pool, cpu_fn, &j);
            assert_int_equal(atomic_load(&j.cpu[0]), c);
            for (int t = 1; t < pool; t++) {
                int wc = atomic_load(&j.cpu[t]);
                if (wc == c) fail_msg("tid %d ran on the caller's CPU %d", t, c);
                assert_true(wc >= 0 && CPU_ISSET(wc, &mask));
                for (int u = 1; u < t; u++) assert_int_not_equal(wc, atomic_load(&j.cpu[u]));
            }
        }
    }
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
}

/*
 * A job wakes its members only. The caller pinned to each CPU in turn runs two-thread jobs with pauses
 * longer than the workers' spin, so every worker is asleep when a job starts. The worker pinned to the
 * caller's CPU is never a member; it must stay asleep: each wake would take that CPU from the caller (a
 * broadcast to every worker did, and 2-thread decode calls ran slower than 1-thread ones:
 * bench/results/xeon-nobf16/pool_wake.md). Spurious wake-ups are allowed by POSIX, so a few are tolerated.
 * The member must have been woken at least once (it slept between jobs).
 */
static void nop_fn(void *ctx, int tid, int nt) {
    (void)tid, (void)nt;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static void members_only_woken(void **state) {
    (void)state;
    const int pool = mpl_pool_size(), jobs = 40;
    if (pool < 2) {
        fprintf(stderr, "SKIP members_only_woken: one CPU in the affinity mask\n");
        return;
    }
    cpu_set_t saved;
    pthread_getaffinity_np(pthread_self(), sizeof saved, &saved);
    for (int i = 0; i < pool; i++) {
        const int c = mpl_pool_worker_cpu(i);
        if (c < 0) continue; /* unpinned workers (no affinity mask): no CPU to pin the caller to */
        assert_int_equal(pin_self(c), 0);
        long before[MAXT];
        for (int w = 0; w < pool && w < MAXT; w++) before[w] = mpl_pool_worker_wakes(w);
        atomic_int ran = 0;
        for (int r = 0; r < jobs; r++) {
            usleep(2000); /* past the 50 us spin: every worker sleeps */
            mpl_parallel_run(2, nop_fn, &ran);
        }
        assert_int_equal(atomic_load(&ran), 2 * jobs);
        long member = 0;
        for (int w = 0; w < pool && w < MAXT; w++)
            if (w != i) member += mpl_pool_worker_wakes(w) - before[w];
        const long here = mpl_pool_worker_wakes(i) - before[i];
        if (here > jobs / 8) fail_msg("the worker on the caller's CPU %d woke %ld times in %d jobs it was not part of", c, here, jobs);
        assert_true(member >= 1);
    }
    pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
}

/*
 * Run as `test_pool --main-pinned` (its own ctest: the pool is created once per process): the main
 * thread pins itself to one CPU before anything creates the pool, while another thread keeps the
 * process's mask (as a Python caller's OpenMP threads do; ../shared/peers/zen_peers.py --pin). The pool
 * must still span the whole mask, and a job's workers stay off the caller's CPU.
 */
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static void *hold_main(void *p) {
    (void)p;
    pthread_mutex_lock(&hold_mu); /* blocks until main releases it */
    pthread_mutex_unlock(&hold_mu);
    return NULL;
}

static int main_pinned(void) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) return 1;
    int want = CPU_COUNT(&mask), first = -1;
    for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
        if (CPU_ISSET(c, &mask)) first = c;
    if (want < 2) {
        printf("SKIP main-pinned: one CPU in the affinity mask\n");
        return 0;
    }
    pthread_mutex_lock(&hold_mu);
    pthread_t holder;
    if (pthread_create(&holder, NULL, hold_main, NULL) != 0) return 1;
    if (pin_self(first) != 0) return 1;
    int pool = mpl_pool_size(), bad = 0;
    if (pool != want) {
        fprintf(stderr, "FAIL main-pinned: pool of %d threads, the process's mask has %d CPUs\n", pool, want);
        bad++;
    }
    for (int rep = 0; rep < 20 && !bad; rep++) {
        cpu_job j;
        for (int t = 0; t < MAXT; t++) atomic_store(&j.cpu[t], -1);
        mpl_parallel_run(pool, cpu_fn, &j);
        if (atomic_load(&j.cpu[0]) != first) bad++;
        for (int t = 1; t < pool; t++)
            if (atomic_load(&j.cpu[t]) == first || atomic_load(&j.cpu[t]) < 0) {
                fprintf(stderr, "FAIL main-pinned: tid %d ran on CPU %d (caller on %d)\n", t, atomic_load(&j.cpu[t]), first);
                bad++;
            }
    }
    pthread_mutex_unlock(&hold_mu);
    pthread_join(holder, NULL);
    printf("%s main-pinned: pool %d of %d CPUs, caller on CPU %d\n", bad ? "FAIL" : "PASS", pool, want, first);
    return bad ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--main-pinned") == 0) return main_pinned();
    static const char ref[] = "ref";
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(thread_counts),
        cmocka_unit_test(many_jobs),
        cmocka_unit_test(concurrent_callers),
        cmocka_unit_test_prestate(concurrent_apply_one_layer, (void *)ref),
        cmocka_unit_test_prestate(concurrent_apply_one_layer, NULL),
        cmocka_unit_test(ref_independent_of_threads),
        cmocka_unit_test(exiting_threads),
        cmocka_unit_test(placement),
        cmocka_unit_test(members_only_woken),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
