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

typedef void (*emn_par_fn)(void *arg, int half);

void emn_par_two(emn_par_fn fn, void *arg);

/* Whether a second thread runs the halves (1 or 2). */
int emn_par_threads(void);

#endif
