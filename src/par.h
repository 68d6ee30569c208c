/*
 * par.h: work split in two halves, run on two cores when there are two.
 *
 * The caller runs half 0 and a helper thread, started on first use and
 * kept for the life of the process, runs half 1; emn_par_two returns when
 * both are done.  The halves must not write the same memory.  With one
 * core, or EMNET_THREADS=1 in the environment, the caller runs both halves
 * itself, one after the other: a result never depends on whether the
 * halves ran at once, only on how the work was split.
 */
#ifndef EMN_PAR_H
#define EMN_PAR_H

#include <stdbool.h>

typedef void (*emn_par_fn)(void *arg, int half);

void emn_par_two(emn_par_fn fn, void *arg);

/* Whether a second thread runs the halves (1 or 2). */
int emn_par_threads(void);

/* Two halves of n items that meet where their measured times balance.
 * The same items do not cost the same on both cores (the one that wrote
 * a vector last reads it fastest), so equal counts are not equal times. */
typedef struct emn_par_split {
    int mid, n;             /* half 1 is items [mid, n) */
    double t[2];            /* seconds each half took since mid last moved */
    int calls;
} emn_par_split;

/* emn_par_two(fn, arg), timing each half.  Every EMN_PAR_SPLIT_EVERY
 * calls, s->mid moves halfway to where those times per item would have
 * been equal, within the middle three quarters; true when it moved.  Only
 * for work whose results do not depend on where it is split. */
#define EMN_PAR_SPLIT_EVERY 64
bool emn_par_timed(emn_par_split *s, emn_par_fn fn, void *arg);
/* The move itself, from the times in s (which it clears); for tests. */
bool emn_par_split_move(emn_par_split *s);

#endif
