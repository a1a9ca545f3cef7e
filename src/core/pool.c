/*
 * pool.c -- the persistent process-wide thread pool.
 *
 * Workers are created once (lazily, one per online CPU minus the caller) and
 * wait for jobs addressed to them (a per-worker slot, so a worker never sees a
 * job it is not part of): they spin briefly on their slot (decode calls are
 * tens of microseconds apart in a token loop, and a futex wake costs ~5-20 us),
 * then sleep on a condition variable. Spinning is bounded in time, not in
 * iterations (pause costs ~10 cycles on Zen but ~140 on Sapphire Rapids), and
 * the caller waiting for workers yields the CPU once the spin budget is spent,
 * so an oversubscribed machine (more runnable threads than cores) does not
 * starve the very worker the caller waits for. One job runs at a time; concurrent
 * callers of mpl_parallel_run are serialized by a mutex, which makes apply()
 * safe to call from several threads on one layer.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

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
    pthread_mutex_t job_lock; /* serializes callers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint_fast64_t *slot; /* per worker: generation of the last job addressed to it */
    uint64_t generation;        /* guarded by job_lock */
    atomic_int remaining;
    mpl_task_fn fn;
    void *ctx;
    int nthreads; /* participants of the current job */
    int nworkers;
    pthread_t *threads;
} mpl_pool;

static mpl_pool g_pool = {.job_lock = PTHREAD_MUTEX_INITIALIZER,
                          .mu = PTHREAD_MUTEX_INITIALIZER,
                          .cv = PTHREAD_COND_INITIALIZER};
static pthread_once_t g_pool_once = PTHREAD_ONCE_INIT;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void *worker_main(void *arg) {
    int id = (int)(intptr_t)arg; /* 1..nworkers */
    atomic_uint_fast64_t *slot = &g_pool.slot[id];
    uint64_t seen = 0;
    for (;;) {
        unsigned spins = 0;
        uint64_t t0 = now_ns();
        while (atomic_load_explicit(slot, memory_order_acquire) == seen) {
            if (++spins % MPL_SPIN_CHECK != 0 || now_ns() - t0 < MPL_SPIN_NS) {
                cpu_relax();
                continue;
            }
            pthread_mutex_lock(&g_pool.mu);
            while (atomic_load_explicit(slot, memory_order_acquire) == seen) pthread_cond_wait(&g_pool.cv, &g_pool.mu);
            pthread_mutex_unlock(&g_pool.mu);
            break;
        }
        seen = atomic_load_explicit(slot, memory_order_acquire);
        g_pool.fn(g_pool.ctx, id, g_pool.nthreads);
        atomic_fetch_sub_explicit(&g_pool.remaining, 1, memory_order_acq_rel);
    }
    return NULL;
}

static void pool_init(void) {
    int n = mpl_platform_current()->cpu_threads;
    if (n < 1) n = 1;
    g_pool.threads = calloc((size_t)n, sizeof(pthread_t));
    g_pool.slot = calloc((size_t)n, sizeof(atomic_uint_fast64_t));
    g_pool.nworkers = 0;
    if (!g_pool.threads || !g_pool.slot) return;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 1; i < n; i++) {
        if (pthread_create(&g_pool.threads[i], &attr, worker_main, (void *)(intptr_t)i) != 0) break;
        g_pool.nworkers = i;
    }
    pthread_attr_destroy(&attr);
}

int mpl_pool_size(void) {
    pthread_once(&g_pool_once, pool_init);
    return g_pool.nworkers + 1;
}

void mpl_parallel_run(int nthreads, mpl_task_fn fn, void *ctx) {
    if (nthreads <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_once(&g_pool_once, pool_init);
    if (nthreads > g_pool.nworkers + 1) nthreads = g_pool.nworkers + 1;
    if (nthreads <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    pthread_mutex_lock(&g_pool.job_lock);
    g_pool.fn = fn;
    g_pool.ctx = ctx;
    g_pool.nthreads = nthreads;
    atomic_store_explicit(&g_pool.remaining, nthreads - 1, memory_order_relaxed);
    g_pool.generation++;
    pthread_mutex_lock(&g_pool.mu);
    for (int i = 1; i < nthreads; i++) atomic_store_explicit(&g_pool.slot[i], g_pool.generation, memory_order_release);
    pthread_cond_broadcast(&g_pool.cv);
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
