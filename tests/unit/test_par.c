/*
 * test_par.c: the two halves of par.h, and the split that follows their
 * measured times.
 *
 * The move of a split is checked against its arithmetic on given times
 * (where the times per item would balance, halfway there, within the
 * middle three quarters); the timed runs only against what must hold
 * whatever the machine's timing: every item computed as in one pass,
 * and the split within its bounds.
 */
#include "config.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "par.h"
#include "tap.h"

typedef struct job {
    const emn_par_split *s;
    int n;
    double *out;
    int calls[2];
} job;

/* Item i costs more from the middle on; its value does not depend on the
 * half that computes it. */
static void work_half(void *arg, int h)
{
    job *J = arg;
    int mid = J->s ? J->s->mid : J->n / 2;
    J->calls[h]++;
    for (int i = h ? mid : 0; i < (h ? J->n : mid); i++) {
        double x = 0;
        int reps = i < J->n / 2 ? 20 : 60;
        for (int k = 1; k <= reps; k++) x += sqrt((double)(i + k));
        J->out[i] = x;
    }
}

static void count_half(void *arg, int h)
{
    int *calls = arg;
    calls[h]++;
}

static void other_half(void *arg, int h)
{
    count_half(arg, h);
}

static void pause_us(long us)
{
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

int main(void)
{
    /* both halves run, each once, whatever the cores */
    int n = 2000;
    double *out = calloc((size_t)n, sizeof *out), *ref = calloc((size_t)n, sizeof *ref);
    job J = {NULL, n, ref, {0, 0}};
    emn_par_two(work_half, &J);
    ok(J.calls[0] == 1 && J.calls[1] == 1, "par_two: each half runs once (%d threads)", emn_par_threads());

    /* Jobs after long and short waits, and a kind whose wait turns short
     * after the helper has learnt to sleep at once after it: every job
     * runs both halves and returns (a lost wake-up would hang here). */
    int calls[2] = {0, 0}, other[2] = {0, 0};
    for (int k = 0; k < 60; k++) {
        emn_par_two(count_half, calls);
        if (k < 40) pause_us(2000);
        emn_par_two(other_half, other);
        if (k % 3 == 0) pause_us(1000);
    }
    ok(calls[0] == 60 && calls[1] == 60 && other[0] == 60 && other[1] == 60,
       "par_two: jobs after long, short and changing waits each run both halves (%d %d %d %d)",
       calls[0], calls[1], other[0], other[1]);

    /* the move's arithmetic */
    struct { int mid; double t0, t1; int want; bool moves; const char *what; } m[] = {
        {500, 1, 3, 625, true, "half 1 three times slower per item: halfway to 750"},
        {500, 3, 1, 375, true, "half 0 three times slower per item: halfway to 250"},
        {400, 0.4, 0.6, 450, true, "equal times per item: halfway to the middle"},
        {400, 0.5, 0.5, 400, false, "equal times: stays"},
        {800, 1e-6, 1, 875, true, "at most seven eighths"},
        {200, 1, 1e-6, 125, true, "at least one eighth"},
        {500, 0, 1, 500, false, "a half not timed moves nothing"},
    };
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++) {
        emn_par_split s = {m[k].mid, 1000, {m[k].t0, m[k].t1}, 7};
        bool moved = emn_par_split_move(&s);
        ok(moved == m[k].moves && s.mid == m[k].want && s.t[0] == 0 && s.t[1] == 0 && s.calls == 0,
           "split: %s: %d -> %d (want %d)", m[k].what, m[k].mid, s.mid, m[k].want);
    }

    /* timed runs: the items come out as in one pass, wherever the split
     * has moved, and it stays within bounds */
    emn_par_split t = {n / 2, n, {0, 0}, 0};
    job K = {&t, n, out, {0, 0}};
    int moves = 0, lo = n, hi = 0;
    for (int c = 0; c < 20 * EMN_PAR_SPLIT_EVERY; c++) {
        moves += emn_par_timed(&t, work_half, &K);
        lo = t.mid < lo ? t.mid : lo;
        hi = t.mid > hi ? t.mid : hi;
    }
    int same = 1;
    for (int i = 0; i < n; i++) same &= out[i] == ref[i];
    ok(same, "timed: every item as computed in one pass (the split moved %d times)", moves);
    ok(lo >= n / 8 && hi <= n - n / 8, "timed: the split stayed within [%d, %d] (%d .. %d)", n / 8, n - n / 8, lo, hi);
    free(out);
    free(ref);
    return tap_done();
}
