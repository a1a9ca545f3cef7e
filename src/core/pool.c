/*
 * pool.c -- the persistent process-wide thread pool, with its workers placed on purpose.
 *
 * Placement. The pool has one worker per CPU of the process's affinity mask (the union of its
 * threads' masks, read once: allowed_cpus), each worker pinned to its CPU, so a caller pinned to one
 * CPU does not shrink the pool. A job of T threads runs on the caller (tid 0) and T - 1 workers chosen at the start of
 * the job: the first workers, in CPU order, that are not on the CPU the caller runs on right now
 * (sched_getcpu). So a worker never shares the caller's CPU while other CPUs are free, whatever the
 * caller's own pinning; measured on a 2-vCPU Zen 4 before this placement: with the lone worker
 * left to the scheduler, it landed on the caller's CPU in 20-35 of 36 two-thread calls from Python,
 * and those calls took twice as long (723-800 vs 350-420 us, 4096x4096, M = 1;
 * ../shared/reference/zen4-peers.md). The pool is created when the first CPU layer that uses more
 * than one thread is created (mpl_layer_create), not inside a timed apply.
 *
 * Waiting. Workers wait for jobs addressed to them (a per-worker slot, so a worker never sees a job
 * it is not part of): they spin briefly on their slot (decode calls are tens of microseconds apart
 * in a token loop, and a futex wake costs ~5-20 us), then sleep on their own condition variable. A worker
 * that sees a job start without it stops spinning at once, so an idle worker does not burn the CPU
 * the caller may be running on, and a job signals its members only: with one condition variable for
 * all, every job's broadcast woke the worker pinned to the caller's CPU, which took that CPU from the
 * caller for a moment (2-vCPU Xeon VM, back-to-back applies, 2 threads, M = 1, median: uint2b2 2048x1024
 * 40.9-46.0 -> 18.9-19.1 us, slower than 1 thread's 33 us before; uint4b8 63.4-69.0 -> 37.9-46.2;
 * bench/results/xeon-nobf16/pool_wake.md). Spinning is bounded in time, not in iterations (pause costs ~10
 * cycles on Zen but ~140 on Sapphire Rapids), and the caller waiting for workers yields the CPU once
 * the spin budget is spent, so an oversubscribed machine does not starve the very worker the caller
 * waits for. One job runs at a time; concurrent callers of mpl_parallel_run are serialized by a
 * mutex, which makes apply() safe to call from several threads on one layer.
 */
#define _GNU_SOURCE /* sched_getcpu, CPU_SET, pthread_attr_setaffinity_np (Linux) */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#ifndef CPU_SETSIZE
#define CPU_SETSIZE 1024
#endif

/* Spin budget before sleeping (workers) or yielding (the caller): 50 us covers
 * back-to-back decode calls of a token loop; past it, a core burnt spinning is
 * worth more to whoever else is runnable. */
#define MPL_SPIN_NS 50000
/* Pause iterations between clock reads (a clock read costs ~20 ns). */
#define MPL_SPIN_CHECK 64

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct {
    atomic_uint_fast64_t slot; /* generation of the last job addressed to this worker */
    atomic_int tid;            /* its tid in that job (written before slot) */
    int cpu;                   /* the CPU it is pinned to, or -1 */
    pthread_cond_t cv;         /* where it sleeps (under g_pool.mu): a job wakes its members only */
    atomic_long wakes;         /* returns from that sleep (mpl_pool_worker_wakes, for tests) */
} mpl_worker;

typedef struct {
    pthread_mutex_t job_lock; /* serializes callers */
    pthread_mutex_t mu;
    mpl_worker *w;
    atomic_uint_fast64_t generation; /* of the last job started (any members) */
    atomic_int remaining;
    mpl_task_fn fn;
    void *ctx;
    int nthreads; /* participants of the current job */
    int nworkers;
    int size;     /* most threads a job runs on: CPUs of the affinity mask */
} mpl_pool;

static mpl_pool g_pool = {.job_lock = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg) {
    mpl_worker *me = arg;
    uint64_t seen = 0;
    for (;;) {
        unsigned spins = 0;
        uint64_t t0 = now_ns();
        uint64_t g0 = atomic_load_explicit(&g_pool.generation, memory_order_acquire);
        while (atomic_load_explicit(&me->slot, memory_order_acquire) == seen) {
            bool other_job = atomic_load_explicit(&g_pool.generation, memory_order_acquire) != g0;
            if (!other_job && (++spins % MPL_SPIN_CHECK != 0 || now_ns() - t0 < MPL_SPIN_NS)) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&g_pool.mu);
            while (atomic_load_explicit(&me->slot, memory_order_acquire) == seen) {
                pthread_cond_wait(&me->cv, &g_pool.mu);
                atomic_fetch_add_explicit(&me->wakes, 1, memory_order_relaxed);
            }
            pthread_mutex_unlock(&g_pool.mu);
            break;
        }
        seen = atomic_load_explicit(&me->slot, memory_order_acquire);
        g_pool.fn(g_pool.ctx, atomic_load_explicit(&me->tid, memory_order_relaxed), g_pool.nthreads);
        atomic_fetch_sub_explicit(&g_pool.remaining, 1, memory_order_acq_rel);
    }
    return NULL;
}

/*
 * The CPUs the process may run on, in order; their count, or 0 when unknown. Linux has no process-wide
 * mask, only one per thread: the union of every thread's mask (/proc/self/task) is what the process was
 * given (taskset, a cgroup's cpuset: every thread inherits it), whatever one thread has narrowed itself to.
 * The case it fixes (../shared/peers/zen_peers.py --pin, bench/results/x86-intel-peers.md): a caller that
 * pins its own thread to CPU 0 before the first multi-thread layer is created got a pool of size 1 from
 * the main thread's mask alone, and T = 2 ran on one CPU (2.51 vs 1.50 ms, 4096x14336, M = 1). A process
 * whose every thread is pinned to one CPU still gets a pool of one.
 */
static int allowed_cpus(int *cpus, int cap) {
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t all, set;
    CPU_ZERO(&all);
    bool any = false;
    DIR *d = opendir("/proc/self/task");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char *end;
            long tid = strtol(e->d_name, &end, 10);
            if (end == e->d_name || *end != '\0' || tid <= 0) continue;
            CPU_ZERO(&set);
            if (sched_getaffinity((pid_t)tid, sizeof set, &set) != 0) continue; /* the thread has exited */
            CPU_OR(&all, &all, &set);
            any = true;
        }
        closedir(d);
    }
    CPU_ZERO(&set); /* this thread's own mask, in case /proc is not mounted */
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        CPU_OR(&all, &all, &set);
        any = true;
    }
    if (!any) return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE && n < cap; c++)
        if (CPU_ISSET(c, &all)) cpus[n++] = c;
    return n;
#else
    (void)cpus, (void)cap;
    return 0;
#endif
}

static void pool_init(void) {
    int online = mpl_platform_current()->cpu_threads;
    if (online < 1) online = 1;
    int cap = online > CPU_SETSIZE ? online : CPU_SETSIZE;
    int *cpus = calloc((size_t)cap, sizeof(int));
    int n = cpus ? allowed_cpus(cpus, cap) : 0;
    const bool pinned = n > 0;
    if (!pinned) n = online; /* no mask: one unpinned worker per online CPU, the caller among them */
    g_pool.size = n;
    /* Pinned: a worker on every allowed CPU, so T - 1 of them are off the caller's CPU wherever it is.
     * Unpinned: the caller counts as one. */
    int want = pinned ? n : n - 1;
    g_pool.w = calloc((size_t)(want > 0 ? want : 1), sizeof(mpl_worker));
    g_pool.nworkers = 0;
    if (!g_pool.w || n <= 1) {
        g_pool.size = 1;
        free(cpus);
        return;
    }
    for (int i = 0; i < want; i++) {
        mpl_worker *w = &g_pool.w[i];
        w->cpu = pinned ? cpus[i] : -1;
        if (pthread_cond_init(&w->cv, NULL) != 0) break;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
#if defined(__linux__) && defined(CPU_COUNT)
        if (pinned) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(w->cpu, &one);
            pthread_attr_setaffinity_np(&attr, sizeof one, &one);
        }
#endif
        pthread_t t;
        int rc = pthread_create(&t, &attr, worker_main, w);
        pthread_attr_destroy(&attr);
        if (rc != 0) break;
        g_pool.nworkers = i + 1;
    }
    /* Fewer workers than asked (thread creation failed): jobs use what exists. */
    if (g_pool.size > g_pool.nworkers + 1) g_pool.size = g_pool.nworkers + 1;
    if (pinned && g_pool.nworkers < want && g_pool.size > g_pool.nworkers) g_pool.size = g_pool.nworkers;
    if (g_pool.size < 1) g_pool.size = 1;
    free(cpus);
}

int mpl_pool_size(void) {
    pthread_once(&g_pool_once, pool_init);
    return g_pool.size;
}

int mpl_pool_worker_cpu(int i) {
    pthread_once(&g_pool_once, pool_init);
    return i >= 0 && i < g_pool.nworkers ? g_pool.w[i].cpu : -1;
}

long mpl_pool_worker_wakes(int i) {
    pthread_once(&g_pool_once, pool_init);
    return i >= 0 && i < g_pool.nworkers ? atomic_load_explicit(&g_pool.w[i].wakes, memory_order_relaxed) : -1;
}

static int caller_cpu(void) {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
}

void mpl_parallel_run(int nthreads, mpl_task_fn fn, void *ctx) {
    if (nthreads <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_once(&g_pool_once, pool_init);
    if (nthreads > g_pool.size) nthreads = g_pool.size;
    if (nthreads <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    if (nthreads > CPU_SETSIZE) nthreads = CPU_SETSIZE;
    pthread_mutex_lock(&g_pool.job_lock);
    uint64_t gen = atomic_load_explicit(&g_pool.generation, memory_order_relaxed) + 1;
    /* Members: the first nthreads - 1 workers not on the caller's CPU (all qualify when unpinned). */
    const int here = caller_cpu();
    int members[CPU_SETSIZE];
    int nm = 0;
    for (int i = 0; i < g_pool.nworkers && nm < nthreads - 1; i++)
        if (g_pool.w[i].cpu < 0 || g_pool.w[i].cpu != here) members[nm++] = i;
    for (int i = 0; i < g_pool.nworkers && nm < nthreads - 1; i++) /* caller off the mask: fill up */
        if (g_pool.w[i].cpu == here) members[nm++] = i;
    nthreads = nm + 1;
    g_pool.fn = fn;
    g_pool.ctx = ctx;
    g_pool.nthreads = nthreads;
    atomic_store_explicit(&g_pool.remaining, nm, memory_order_relaxed);
    atomic_store_explicit(&g_pool.generation, gen, memory_order_release);
    pthread_mutex_lock(&g_pool.mu);
    for (int t = 0; t < nm; t++) {
        mpl_worker *w = &g_pool.w[members[t]];
        atomic_store_explicit(&w->tid, t + 1, memory_order_relaxed);
        atomic_store_explicit(&w->slot, gen, memory_order_release);
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&g_pool.mu);
    fn(ctx, 0, nthreads);
    unsigned spins = 0;
    uint64_t t0 = now_ns();
    bool yielding = false;
    while (atomic_load_explicit(&g_pool.remaining, memory_order_acquire) > 0) {
        if (yielding) {
            sched_yield();
        } else {
            cpu_relax();
            if (++spins % MPL_SPIN_CHECK == 0 && now_ns() - t0 >= MPL_SPIN_NS) yielding = true;
        }
    }
    pthread_mutex_unlock(&g_pool.job_lock);
}
