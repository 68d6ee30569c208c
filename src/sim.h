/*
 * sim.h: running a transient: initial state, the step loop, every signal of
 * spec section 6 reconstructed in either formulation, output points
 * interpolated from the integrator's steps, the writers, and the
 * comparison of the two formulations.
 */
#ifndef EMN_SIM_H
#define EMN_SIM_H

#include <stdbool.h>
#include <stdio.h>

#include "diag.h"
#include "form.h"
#include "integ.h"
#include "netlist.h"
#include "output.h"

typedef struct emn_sim_opts {
    emn_form_kind form;         /* charge or flux (auto resolved by the caller) */
    const char *raw_path;       /* -r, or NULL */
    bool raw_ascii;
    const char *csv_path;       /* -o, or NULL */
    bool print_table;           /* write the .print table to stdout */
    bool quiet;                 /* -q */
    bool progress;              /* stderr is a terminal */
    double cmptol;              /* -compare */
} emn_sim_opts;

typedef struct emn_sim_result {
    emn_integ_stats st;
    long lu_factors, lu_refactors;
    int n, ne, nm;
    double seconds;
    /* with -compare: the saved signals at every output point */
    int nsig, nrow, rowcap;
    double *rows;               /* nrow x (1 + nsig), time first */
    char **names;
    emn_unit *units;
} emn_sim_result;

/* Exit statuses of spec section 5. */
enum { EMN_EXIT_OK = 0, EMN_EXIT_INVALID = 1, EMN_EXIT_USAGE = 2, EMN_EXIT_FAILED = 3,
       EMN_EXIT_DISAGREE = 4 };

/* Prepare the circuit's sources for a transient (SPICE defaults, checks).
 * Returns 0 or -1 after recording errors. */
int emn_sim_prepare(emn_circuit *c, emn_diag *d);

/* Run the .tran analysis in one formulation.  Returns an exit status;
 * diagnostics (including the failure message) are recorded in d.  With
 * `keep`, the saved signals are kept in res for -compare. */
int emn_sim_tran(const emn_circuit *c, const emn_sim_opts *o, emn_diag *d, bool keep,
                 emn_sim_result *res);

/* Both formulations; print the report of spec section 7 on `out`. */
int emn_sim_compare(const emn_circuit *c, const emn_sim_opts *o, emn_diag *d, FILE *out);

void emn_sim_result_free(emn_sim_result *r);

/* The operating point: print `name value` lines to `out`.  Returns an exit
 * status. */
int emn_sim_op(const emn_circuit *c, emn_form_kind kind, emn_diag *d, FILE *out);

/* Choose the formulation for -form auto: fewer coordinates, flux on a tie. */
emn_form_kind emn_sim_auto_form(const emn_circuit *c);

#endif
