/*
 * par.c: the helper thread behind emn_par_two.
 *
 * A job is posted by raising `posted`; the helper runs half 1 and sets
 * `done` to the same number.  The two halves of one solve are a few
 * hundred microseconds apart, the solves themselves a millisecond or so:
 * the helper spins (with the CPU's pause hint) for a while after each job
 * so that the next one starts at once, and only then sleeps on a
 * condition variable, so that an idle emnet does not hold a core.  The
 * caller, waiting for half 1, spins too.  Both yield now and then, in
 * case the two share a core with each other or with something else.
 *
 * A step's jobs come in the same order at every step, and so do the
 * serial stretches between them: at 10^6 unknowns most of those last
 * milliseconds, and a spin after such a job is processor time spent for
 * nothing (a third of a second of rc-1e6's run).  So the helper
 * remembers, for each kind of job (its function), whether the wait after
 * the last one outlasted the spin, and if it did, sleeps at once.  A
 * guess that turns out wrong costs one wake-up, and is mended by it.
 */
#define _GNU_SOURCE             /* sched_getaffinity, CPU_COUNT */
#include "config.h"
#include "par.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* How long the helper spins for the next job before it sleeps. */
#define SPIN_NS 300000

static struct {
    int threads;                /* 0: not yet decided */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_uint posted, done;
    atomic_int sleeping;
    emn_par_fn fn;
    void *arg;
    emn_par_fn kind;            /* fn, or the function emn_par_timed times */
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The helper's memory of the waits after each kind of job: a small table
 * indexed by the function's address (a collision only costs a guess). */
#define KINDS 16
static bool long_wait[KINDS];

static unsigned kind_slot(emn_par_fn kind)
{
    uintptr_t a = (uintptr_t)kind;
    return (unsigned)((a >> 4) ^ (a >> 10)) % KINDS;
}

static inline void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Sleep until a job after `seen` is posted.  `sleeping` is raised before
 * `posted` is read again under the lock, and the poster raises `posted`
 * before it reads `sleeping`: one of the two sees the other's store, so
 * no wake-up is lost. */
static void sleep_past(unsigned seen)
{
    pthread_mutex_lock(&P.mu);
    atomic_store(&P.sleeping, 1);
    while (atomic_load(&P.posted) == seen) pthread_cond_wait(&P.cv, &P.mu);
    atomic_store(&P.sleeping, 0);
    pthread_mutex_unlock(&P.mu);
}

static void *helper(void *unused)
{
    unsigned seen = 0, slot = 0;
    bool first = true;
    for (;;) {
        long long t_done = now_ns(), t0 = 0;
        if (!first && long_wait[slot] && atomic_load(&P.posted) == seen) sleep_past(seen);
        for (unsigned k = 1; atomic_load(&P.posted) == seen; k++) {
            relax();
            if (k % 256) continue;
            /* a core shared with the caller (or anything else) goes to
             * it at once rather than at the end of a time slice */
            sched_yield();
            if (!t0) t0 = now_ns();
            else if (now_ns() - t0 > SPIN_NS) {
                sleep_past(seen);
                break;
            }
        }
        if (!first) long_wait[slot] = now_ns() - t_done > SPIN_NS;
        first = false;
        seen = atomic_load(&P.posted);
        slot = kind_slot(P.kind);
        P.fn(P.arg, 1);
        atomic_store(&P.done, seen);
    }
    return NULL;
}

static void decide(void)
{
    const char *env = getenv("EMNET_THREADS");
    /* the cores this process may run on (taskset, cpusets), not all the
     * machine's */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
#ifdef CPU_COUNT
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cpus = CPU_COUNT(&set);
#endif
    P.threads = 1;
    if (env && *env ? strcmp(env, "1") == 0 : cpus < 2) return;
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, helper, NULL) == 0) P.threads = 2;
    pthread_attr_destroy(&attr);
}

int emn_par_threads(void)
{
    if (!P.threads) decide();
    return P.threads;
}

static void post(emn_par_fn fn, void *arg, emn_par_fn kind)
{
    if (emn_par_threads() < 2) {
        fn(arg, 0);
        fn(arg, 1);
        return;
    }
    P.fn = fn;
    P.arg = arg;
    P.kind = kind;
    unsigned job = atomic_load(&P.posted) + 1;
    atomic_store(&P.posted, job);
    if (atomic_load(&P.sleeping)) {
        pthread_mutex_lock(&P.mu);
        pthread_cond_signal(&P.cv);
        pthread_mutex_unlock(&P.mu);
    }
    fn(arg, 0);
    for (unsigned k = 1; atomic_load(&P.done) != job; k++) {
        relax();
        if (k % 64 == 0) sched_yield();
    }
}

void emn_par_two(emn_par_fn fn, void *arg)
{
    post(fn, arg, fn);
}

typedef struct timed {
    emn_par_fn fn;
    void *arg;
    long long t[2];
} timed;

static void timed_half(void *arg, int h)
{
    timed *T = arg;
    long long t0 = now_ns();
    T->fn(T->arg, h);
    T->t[h] = now_ns() - t0;
}

bool emn_par_split_move(emn_par_split *s)
{
    int mid = s->mid, n = s->n;
    bool moved = false;
    if (s->t[0] > 0 && s->t[1] > 0 && mid > 0 && mid < n) {
        double r0 = s->t[0] / mid, r1 = s->t[1] / (n - mid);
        long m = lround(0.5 * (mid + (double)n * r1 / (r0 + r1)));
        long lo = n / 8, hi = n - n / 8;
        m = m < lo ? lo : m > hi ? hi : m;
        moved = m != mid;
        s->mid = (int)m;
    }
    s->t[0] = s->t[1] = 0;
    s->calls = 0;
    return moved;
}

bool emn_par_timed(emn_par_split *s, emn_par_fn fn, void *arg)
{
    timed T = {fn, arg, {0, 0}};
    post(timed_half, &T, fn);
    s->t[0] += 1e-9 * (double)T.t[0];
    s->t[1] += 1e-9 * (double)T.t[1];
    return ++s->calls >= EMN_PAR_SPLIT_EVERY && emn_par_split_move(s);
}
