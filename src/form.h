/*
 * form.h: the charge and flux-linkage Lagrangian formulations of a circuit,
 * and the evaluator the integrator is built on.
 *
 * Building a formulation chooses the generalized coordinates z (loop
 * charges or node flux linkages, then the free mechanical displacements),
 * maps every element's branch quantities onto them, and turns each element
 * into a *term*: its contributions to the Lagrangian L, the dissipation
 * function D and the power of the generalized forces P (so that Q = dP/dw),
 * written symbolically in a few local variables and differentiated exactly
 * once at set-up (elem.c holds the physics of each element kind).
 *
 * Local variables: a term sees `slots`.  Slot a has a value v_a and a rate
 * u_a, each a linear map of the global state plus known functions of time:
 *     v_a = c_a . z + d_a . S(t)        u_a = c_a . w + d_a . s(t)
 * where s(t) are the values of the independent sources and S(t) their time
 * integrals.  A branch charge or flux linkage is a slot; a free mechanical
 * coordinate is a slot; a source's value is a slot with no coordinates.
 * Nonlinear maps (kinematic linkages J, the flux a moving coil adds to its
 * nodes) live inside the term's expressions, so every slot map stays linear
 * and the chain rule to global coordinates is a sparse product.
 *
 * With p = dL/dw (generalized momenta) and F = dL/dz + dP/dw - dD/dw,
 * Lagrange's equations are dp/dt = F.  The evaluator returns p and F at
 * (z, w, t) and the Newton matrix of spec formulations section 3,
 *     J = a dp/dw + dp/dz - dF/dw - (dF/dz)/a,
 * on a sparse pattern fixed at set-up.  Terms whose second derivatives are
 * constant (every linear element) are summed once into constant matrices;
 * only nonlinear terms are evaluated per Newton iteration.
 */
#ifndef EMN_FORM_H
#define EMN_FORM_H

#include <stdbool.h>
#include <stdio.h>

#include "diag.h"
#include "expr.h"
#include "netlist.h"
#include "par.h"
#include "sparse.h"

/* What a coordinate is, for tolerances and printing. */
typedef enum {
    EMN_COORD_LOOP,     /* loop charge (charge formulation) */
    EMN_COORD_NODE,     /* node flux linkage (flux formulation) */
    EMN_COORD_MECH      /* mechanical displacement or angle */
} emn_coord_kind;

typedef struct emn_coord {
    emn_coord_kind kind;
    int node;           /* NODE: representative node; MECH: the node */
    int elem;           /* LOOP: the element closing the loop */
} emn_coord;

/* A linear map: value = sum c[k] * z[ci[k]] + sum d[k] * S[di[k]].  Its
 * numbers lie in one block from c: the nc coefficients c, the nd
 * coefficients d, then the indices ci and di (a grid has a map per
 * branch and per node: four pointers each would be most of its size). */
typedef struct emn_lmap {
    int nc, nd;
    double *c;
} emn_lmap;

static inline double *emn_lmap_d(const emn_lmap *m) { return m->c + m->nc; }
static inline int *emn_lmap_ci(const emn_lmap *m) { return (int *)(m->c + m->nc + m->nd); }
static inline int *emn_lmap_di(const emn_lmap *m) { return emn_lmap_ci(m) + m->nc; }

/* One multiply-add of a batch's plan: to += c * from (form.c). */
typedef struct emn_move {
    int from, to;
    double c;
} emn_move;

typedef struct emn_tmpl emn_tmpl;   /* a term's expressions and their tapes */

/* A constant matrix as its entries in row order (each row's columns
 * ascending): row i's entries are e = rptr[i] .. rptr[i + 1] - 1, entry e
 * is (i, col[e]) = val[e], at slot[e] of the Newton matrix; rows lists
 * the nrows rows that have any. */
typedef struct emn_cmat {
    int nnz, nrows;
    int *rptr, *rows, *col, *slot;
    double *val;
} emn_cmat;

typedef struct emn_term {
    int elem;           /* netlist element (first of a coupled group for K) */
    int m;              /* slots */
    int *slot;          /* slot indices into emn_form.slots */
    emn_tmpl *tmpl;     /* its linear flag: the term's */
} emn_term;

typedef struct emn_form {
    emn_form_kind kind;
    const emn_circuit *c;
    emn_arena *ar;

    int n, ne, nm;      /* coordinates: n = ne electrical + nm mechanical */
    emn_coord *coord;

    /* independent sources: index s over elements V, I, F */
    int nsrc;
    /* the sources that are not a constant 0 (a 0 V source is an ammeter
     * or a short): only these change s and S with time */
    int *live_src, nlive;
    int *src_elem;      /* s -> element index */
    int *elem_src;      /* element -> s or -1 */
    double *S, *s;      /* integrals and values at the current time */
    /* How S is made (emn_form_integrals): exactly, or by the integrator's
     * rule, S = (s - S_h) / S_a, or fixed at S_fix (an accepted point's) */
    int srule;
    double S_a;
    const double *S_h, *S_fix;
    bool *int_mixed;    /* per source: a slot adds its integral to coordinates
                           (flux formulation only) */
    double *seg;        /* per live source, 5 numbers: the straight piece of a
                           PULSE or PWL last looked up (emn_form_set_time) */
    bool src_halves;    /* the sources are many and none is an expression:
                           a long lookup may run in two halves side by side
                           (emn_form_set_time) */
    /* the live sources that were not still at the last full lookup (still:
     * a straight piece of slope 0 whose integral is not read), and the
     * times [still_lo, still_hi) over which every still one keeps its
     * value: the lookups between two corners skip them */
    int *moving, nmoving;
    double still_lo, still_hi;

    /* slots */
    struct { emn_lmap *v; int n, cap; } slots;

    /* electrical branches: one per R C L V I and T coil; branch slot */
    int *elem_branch_slot;  /* element -> slot of its branch value, or -1 */
    /* flux formulation: a resistor or inductor that ends in a node
     * nothing else meets (or in a chain of such), whose current is zero
     * and whose nodes share one flux linkage (dead_ends, form.c); it has
     * no term.  NULL in the charge formulation. */
    bool *elem_dead;
    const emn_expr **elem_branch_mech; /* element -> mechanical part of the
                                          branch value (flux: coils), in
                                          netlist node variables, or NULL */
    const emn_expr **elem_branch_mech_p; /* the same with coils named, for printing */

    /* mechanical (each array of expressions by node or element, here and
     * below, is NULL if all its entries would be) */
    int *node_coord;    /* node -> coordinate index (free mechanical or node group), or -1 */
    const emn_expr **xnode; /* node -> displacement in netlist node vars of free nodes (J composed) */
    const emn_expr **vexpr_c; /* element -> its x-dependent value with linkages composed, or NULL */

    /* flux formulation: node -> group representative coordinate and offsets */
    emn_lmap *node_map;         /* node flux = map (coordinates, sources) + node_mech */
    const emn_expr **node_mech; /* coil offsets in node variables, or NULL */
    const emn_expr **node_mech_p; /* the same with coils named, for printing */

    /* charge formulation: loops */
    int nloops;

    /* A spanning forest of the electrical nodes, parents before children
     * in torder: the charge formulation's tree (node voltages are sums of
     * branch voltages along it), or the flux formulation's forest of
     * voltage sources and coils (their currents are the currents of the
     * subtrees they feed). */
    int *tparent;       /* node -> parent node, -1 at a root */
    int *telem;         /* node -> element of the branch to its parent, -1 at a root */
    int *torder;        /* nodes, roots first */

    struct { emn_term *v; int n, cap; } terms;

    /* evaluator */
    emn_sparse J;
    double *pt, *ft;                /* constant + time parts of p and F */
    /* The rows of pt and ft that the time couplings reach (the others
     * hold p0's and f0's values from the build on), each once: their
     * rows, the constant part there, a sum for each, and for each
     * coupling (pts, fts) the index of its row among them.  A row's
     * time part is summed in the compact array and stored once: at 10^6
     * unknowns pt and ft do not stay in the caches from one evaluation
     * to the next. */
    struct emn_trows { int *row, *at; double *base, *sum; int n; } ptr, ftr;
    /* time coupling of linear terms: p += Pts * [S; s], F += Fts * [S; s] */
    struct emn_tcoup { int *row, *col; double *val; int n, cap; } pts, fts;
    double *p0, *f0;                /* constant parts */
    /* the constant parts of dp/dz, dp/dw, dF/dz, dF/dw (every linear
     * term's, summed), each compressed to its own nonzeros, column by
     * column: the only copy, for evaluation and the Newton matrix */
    emn_cmat lin[4];
    /* Rows [0, lin_mid) and [lin_mid, n) share out the linear part of an
     * evaluation evenly by entries, for two cores (par.h); lin_mid = 0:
     * one part.  The evaluations split there first, and then where their
     * halves' measured times say (lin_split; NULL: one part). */
    int lin_mid;
    emn_par_split *lin_split;
    /* An order of the coordinates for eliminating the Newton matrix,
     * left by the operating point's analysis of the circuit's reduced
     * system (op.c), for the transient's to try (emn_lu_hint_order); or
     * NULL.  The entries of L it left there (emn_lu_planned_entries). */
    int *order_hint;
    double order_hint_lnz;
    /* Set before the operating point when a transient follows it: where
     * the operating point factors a matrix of the Newton matrix J's own
     * pattern (op.c, reduce()), it leaves that LU here, analysis and all,
     * for the transient to factor J with (emn_integ_new takes it) */
    bool op_for_tran;
    emn_lu *op_lu;
    bool *need_int;     /* per source: its integral is used somewhere */
    int *nonlinear;     /* indices of nonlinear terms */
    int nnonlinear;
    int **jh;           /* per nonlinear term: the J slots its local matrix
                           scatters into, in the order emn_form_jacobian visits */
    /* their batches: nonlinear terms bat_start[b] .. bat_start[b + 1] - 1
     * share a template, and their locals at the last emn_form_eval are in
     * tloc from bat_off[b], one row of EMN_PROG_BATCH lanes a local */
    int nbatch, *bat_start, *bat_off;
    double *tloc;
    /* Each batch's moves, made once, list l from move_at[l][b] to
     * move_at[l][b + 1]: the coordinates (then the sources) that form its
     * locals, where its p and F results go, and where its local Newton
     * matrices go; in the order the terms, slots and coefficients come. */
    emn_move *move[4];
    int *move_at[4];
    /* the p and F results' moves again, by the row they go to (rows i's
     * from pf_ptr[i] to pf_ptr[i + 1], in the order of move[MV_PF]):
     * from bout + pf_at[k] (p) and bout + pf_at[k] + pf_off[k] (F) */
    int *pf_ptr, *pf_at, *pf_off;
    double *pf_c;
    double *scratch;    /* per-term local workspace */
    /* each batch's results, one row of lanes a result, from bout +
     * b * bout_stride; batches [0, bat_mid) and [bat_mid, nbatch) are
     * evaluated side by side when the evaluation is split (bat_mid > 0) */
    double *bout;
    size_t bout_stride;
    int bat_mid;
    double *scratch_blk;    /* one batch's locals and a row of results (emn_form_values) */
    struct emn_duals *duals;    /* emn_form_duals' plan, made on first use */
    double t;
} emn_form;

/*
 * Build a formulation.  kind is EMN_FORM_CHARGE or EMN_FORM_FLUX.  Returns
 * NULL after recording errors (invalid topologies: current-source cutsets,
 * loops of voltage sources and coils, coordinates that store no energy).
 */
emn_form *emn_form_build(const emn_circuit *c, emn_form_kind kind, emn_diag *d);
void emn_form_free(emn_form **f);

/* Number of coordinates each formulation would have, from the topology
 * alone (loops and node groups counted, not built: cheap, for -form auto).
 * Returns -1 on an invalid topology; what only the terms show (a
 * coordinate on which nothing stores energy) is left to emn_form_build. */
int emn_form_count(const emn_circuit *c, emn_form_kind kind, int *ne, int *nm);
/* Both formulations' numbers of coordinates from one reading of the
 * topology (for -form auto: the two share all but their last count): 0,
 * or -1 on an invalid topology. */
int emn_form_count_both(const emn_circuit *c, int *ncharge, int *nflux);

/* Append coordinate j's printed name to out: q1 (loop), lambda(out)
 * (node group), x(cone) (mechanical); out->v is then NUL-terminated. */
void emn_form_coord_name(const emn_form *f, int j, emn_buf *out);

/* Evaluate the sources at time t (values and integrals).  Many sources
 * are evaluated in two halves side by side (par.h), as large evaluations
 * are: call it from the main thread, not from a job of emn_par_two. */
void emn_form_set_time(emn_form *f, double t);
/* Sources at their DC values times `scale`, integrals zero (t = 0): the
 * operating point's sources, stepped up from zero when needed. */
void emn_form_set_dc(emn_form *f, double scale);

/*
 * p = dL/dw and F = dL/dz + dP/dw - dD/dw at (z, w) and the time last set.
 * scale[j] (if non-NULL) receives the largest magnitude among the terms
 * summed into p[j] and F[j], for relative convergence tests.
 * Returns 0, or >0 if a term evaluated to NaN/Inf (then *bad_term is it).
 */
int emn_form_eval(emn_form *f, const double *z, const double *w, double *p, double *F,
                  double *scale, int *bad_term);
/* emn_form_eval in two parts, for a caller that tests each row after it
 * (the Newton iteration): the open part leaves each row's linear sums and
 * the nonlinear terms' results apart (scale is needed); then, once it has
 * returned, emn_form_close_rows adds those results to rows [i0, i1), the
 * same sums in the same order as emn_form_eval's, in any number of calls
 * over disjoint ranges, side by side.  A non-finite result shows as a
 * non-finite p or F, not named. */
void emn_form_eval_open(emn_form *f, const double *z, const double *w, double *p, double *F, double *scale);
void emn_form_close_rows(const emn_form *f, int i0, int i1, double *p, double *F, double *scale);

/* A linear formulation's p and F at (z, w = 0) and the time last set:
 * cheaper than emn_form_eval, for the right-hand side of a linear step. */
void emn_form_eval_rest(const emn_form *f, const double *z, double *p, double *F);
/* That evaluation's rows that are not the time parts alone (the rows of
 * the linear terms whose p or F reads a coordinate's value: inductors,
 * springs), at most; 0 for a circuit without them.  emn_form_rest_fix
 * makes those rows' right-hand side after a pass that took every row's
 * p and F at w = 0 for its pt and ft. */
int emn_form_rest_rows(const emn_form *f);
/* dw_i = -(a p_i + hp_i - F_i) on those rows (the right-hand side of a
 * linear step's solve for w, minus the residual at w = 0), with p and F
 * at z = -hz / a (ia = 1 / a), summed as emn_form_eval_rest sums them. */
void emn_form_rest_fix(const emn_form *f, const double *hz, double a, double ia, const double *hp, double *dw);

/* A linear step's evaluation and residual test in one pass over the
 * rows: its coordinates z = (w - hz) ia, p, F and scale as emn_form_eval
 * makes them at (z, w), and the residual a p + hp - F of the step's
 * equations (not kept: the step's solve needs it only if the test
 * fails), each row tested against reltol (|a p| + |hp| + scale) plus
 * res_e on electrical rows, res_m[i - ne] on mechanical ones.  Per half
 * h of the rows: ok (cleared by a finite residual out of tolerance), the
 * first row whose w is not finite and the first whose residual is not
 * (-1: none); the caller sets them (true, -1, -1) before.
 * emn_form_step_half gives half h's rows [i0, i1) of the evaluation's
 * split; emn_form_step_rows does rows [i0, i1) of half h, so that a half
 * may be done in blocks.
 * emn_form_in_halves runs fn in the evaluation's halves (side by side
 * for a large circuit, as half 0 alone otherwise), whose split its
 * timings may move; the halves' rows must be asked for in each run. */
typedef struct emn_step_check {
    double a, ia, reltol, res_e;
    const double *hz, *hp, *res_m;
    double *z, *p, *F, *scale;
    bool ok[2];
    int bad_w[2], bad_r[2];
} emn_step_check;
void emn_form_step_half(const emn_form *f, int h, int *i0, int *i1);
void emn_form_step_rows(const emn_form *f, const double *w, emn_step_check *C, int h, int i0, int i1);
void emn_form_in_halves(const emn_form *f, emn_par_fn fn, void *arg);

/* Fill f->J.Ax with the Newton matrix for leading coefficient a. */
int emn_form_jacobian(emn_form *f, const double *z, const double *w, double a);
/* The same at the state of the last emn_form_eval (whose term locals it
 * reuses; the time must not have changed since). */
int emn_form_jacobian_last(emn_form *f, double a);

/* The four derivative matrices dp/dz, dp/dw, dF/dz, dF/dw at (z, w), each
 * a value array on J's pattern (any may be NULL).  Returns 0, or 1 if a
 * value is not finite. */
int emn_form_derivatives(emn_form *f, const double *z, const double *w, double *Pz, double *Pw,
                         double *Fz, double *Fw);

/* Rates of p and F along the motion at fixed velocities: with every slot's
 * value moving at its rate u (coordinates at w, source integrals at the
 * source values), dp = sum dp/dv u and dF = sum dF/dv u.  A steady state
 * needs dF = 0, and its momenta change at dp.  With slot_dp (size
 * slots.n, may be NULL) the momentum rate of each slot is also returned. */
int emn_form_rates(emn_form *f, const double *z, const double *w, double *dp, double *dF, double *slot_dp);
/* The same with dFscale[j] (if non-NULL) the sum of the magnitudes summed into dF[j]. */
int emn_form_rates_scaled(emn_form *f, const double *z, const double *w, double *dp, double *dF,
                          double *slot_dp, double *dFscale);

/* Whether every source's value is continuous at t: none jumps there
 * (a PWL with a repeated time, an expression's step), to 1e-9 of its
 * size. */
bool emn_form_sources_continuous(const emn_form *f, double t);

/* Slots whose branch dual only the sources set: no coordinate in the
 * slot, and every term on it linear, with its other slots so too (a
 * capacitor across a voltage source in the flux formulation, an inductor
 * in series with a current source in the charge formulation).  The terms
 * on them go to terms (terms.n long); returns how many. */
int emn_form_source_terms(const emn_form *f, int *terms);
/* Their slots' momentum rates at time t from the sources' slopes there,
 * taken from the left (at a corner, the slope before it): slot_dp[sl] for
 * each slot of the nt terms, the others untouched.  z and w: any state
 * (a linear term's coefficients do not read it). */
void emn_form_source_slot_rates(const emn_form *f, const int *terms, int nt, double t, const double *z,
                                const double *w, double *slot_dp);

/* Check that every C(x) and L(x) is positive and finite at z.  Returns the
 * element index of the first that is not (its value in *value), or -1. */
int emn_form_check_values(emn_form *f, const double *z, double *value);

/* True if every term is linear: the Newton matrix depends on a only. */
bool emn_form_is_linear(const emn_form *f);

/* used[j] (size n): whether anything depends on coordinate j itself rather
 * than only on its velocity.  An electrical coordinate that no inductor,
 * capacitor or coil term sees as a value (the flux linkage of a node with
 * only capacitors and resistors, the charge of a loop with no capacitor)
 * is cyclic: its value feeds back into nothing and no signal shows it.
 * Mechanical coordinates always count (x(m) is a signal). */
void emn_form_z_used(const emn_form *f, bool *used);
/* The gauges: sets of electrical coordinates whose values every term
 * reads only as differences within the set (a node's flux linkage that
 * only inductors to other nodes of the set read, flux formulation; a
 * loop's charge that only capacitors shared with other loops of the set
 * read, charge formulation), so that adding one number to all of them
 * changes no p and no F.  CSR: set k is idx[ptr[k] .. ptr[k+1]-1], ptr
 * and idx of n + 1 entries each; returns the number of sets. */
int emn_form_gauges(const emn_form *f, int *ptr, int *idx);
/* has[j]: coordinate j's momentum reads velocities (a capacitor on a
 * node, an inductor in a loop, a mass), or a nonlinear term reaches it. */
void emn_form_inertia(const emn_form *f, bool *has);
/* reads[j]: coordinate j's equation (its momentum or its force) reads
 * some velocity.  One that reads none (a node that only inductors and
 * current sources meet, a spring without mass or damper) is a constraint
 * on the coordinates' values: its velocity is only the integration
 * formula's derivative of the value the constraint sets. */
void emn_form_reads_rates(const emn_form *f, bool *reads);
/* The null vectors of dp/dw whose entries are +-1 on a block of it: a
 * combination of velocities without inertia though each has some (a
 * capacitor between two nodes that nothing else gives capacitance, in
 * the flux formulation).  Vector k is sign[q] on coordinate idx[q] for q
 * in [ptr[k], ptr[k + 1]); ptr has room for n + 1, idx and sign for n.
 * Returns how many. */
int emn_form_mass_kernel(const emn_form *f, int *ptr, int *idx, signed char *sign);
/* konst[j]: coordinate j's momentum is a constant (0 for a loop with no
 * inductor or coil, a node with no capacitor, a massless mechanical
 * node): no term's momentum reads a coordinate, a velocity or time.
 * Its Lagrange equation is then the algebraic 0 = F_j. */
void emn_form_momentum_const(const emn_form *f, bool *konst);
/* vals[j]: coordinate j's momentum is not a constant but a linear
 * function of the coordinates' values alone, with constant coefficients
 * (p_j = dp/dz z + c: a loop through a moving coil with no inductance,
 * charge formulation, holds T x).  Its rate is then dp/dz w exactly, and
 * its Lagrange equation the algebraic dp/dz w = F_j. */
void emn_form_momentum_values(const emn_form *f, bool *vals);

/* Whether row i of M times the sign vector s (s[j] = +-1 or 0) cancels
 * to the rounding of its terms. */
bool emn_cmat_row_cancels(const emn_cmat *M, int i, const signed char *s);
/* Row i of M times x. */
double emn_cmat_row_dot(const emn_cmat *M, int i, const double *x);
/* M's entry (i, j), or 0. */
double emn_cmat_entry(const emn_cmat *M, int i, int j);

/* The branches that give an electrical coordinate's own value a size:
 * for a coordinate that only linear inductors, coupled or not (flux
 * formulation), or linear capacitors (charge formulation) read by value,
 * the slots of those branches, whose values are flux linkages (L i, with
 * the mutual parts) or charges C v; none for any other coordinate.
 * CSR: coordinate j's slots are (*sl)[ptr[j] .. ptr[j+1]-1]; ptr has
 * n + 1 entries, *sl is malloc'd. */
void emn_form_value_slots(const emn_form *f, int *ptr, int **sl);

/* How the sources' integrals S are made at the times set from now on:
 * EMN_SRULE_EXACT, their exact integrals; EMN_SRULE_STEP, by the
 * integrator's rule for a step, S = (s - h[s]) / a, where the rule makes
 * a coordinate z = (w - hz) / a from its rate, so that a node's flux
 * linkage and a voltage source's beside it carry the same error (a
 * current from their difference keeps none of it); EMN_SRULE_FIXED,
 * S = h[s] (the values at an accepted point).  Only the integrals that
 * a slot adds to coordinates (int_mixed: voltage sources' linkages beside
 * node linkages, flux formulation) follow a rule; one read alone (an
 * inductor across a voltage source) stays exact, as no error test would
 * hold the rule's error there.  h is the caller's and must live while
 * the rule is in force. */
enum { EMN_SRULE_EXACT, EMN_SRULE_STEP, EMN_SRULE_FIXED };
void emn_form_integrals(emn_form *f, int rule, double a, const double *h);
/* Whether source s's integral follows the steps' rule (int_mixed). */
bool emn_form_integral_ruled(const emn_form *f, int s);

/* Value and rate of slot `sl` at (z, w) and the time last set. */
double emn_form_slot_value(const emn_form *f, int sl, const double *z);
double emn_form_slot_rate(const emn_form *f, int sl, const double *w);

/* The values of the C(x) and L(x) elements that have nonlinear terms of
 * their own, at (z, w) and the time last set, by batches: val[i] for
 * nonlinear term i whose emn_form_value_elem(f, i) is its element (>= 0;
 * -1: no value, val[i] untouched).  val holds nnonlinear entries. */
void emn_form_values(emn_form *f, const double *z, const double *w, double *val);
int emn_form_value_elem(const emn_form *f, int i);

/* Evaluate a term's local variables vector (v, u, k) at (z, w). */
/* A term's four parameters (its element's value, a spring's X0, a
 * coupling's two inductances) at k[0], k[stride], ...: read from the
 * netlist when asked for, not kept per term. */
void emn_form_term_params(const emn_form *f, const emn_term *tm, double *k, int stride);
void emn_form_term_locals(const emn_form *f, const emn_term *tm, const double *z,
                          const double *w, double *loc);

/* Expression of x(node) in netlist node variables of free nodes. */
const emn_expr *emn_form_xnode(const emn_form *f, int node);

/* Print coordinates, L, D and Q (-lagrangian). */
void emn_form_print(const emn_form *f, FILE *out);

/* Term tm's momenta and forces at (z, w), p's at [0, m) and F's at
 * [m, 2m) of the result, which the next call overwrites (it lives in the
 * formulation's scratch space, as the locals do). */
const double *emn_form_term_pF(emn_form *f, const emn_term *tm, const double *z, const double *w);
/* The branch duals at (z, w) and the time last set: into pi[sl] and
 * Fs[sl] the sums of p and F of every term on slot sl; a linear term's
 * from coefficients evaluated once, a nonlinear one's by its program.
 * Only slots that a term of the plan reaches are written, the others
 * left as they are: by default every slot; after emn_form_duals_want,
 * those of the terms on the slots `want` marks (want[sl] nonzero; NULL:
 * every slot), whose sums are then whole. */
typedef struct emn_duals emn_duals;
void emn_form_duals(emn_form *f, const double *z, const double *w, double *pi, double *Fs);
void emn_form_duals_want(emn_form *f, const unsigned char *want);
/* A term's local momentum dL/du_a and force dL/dv_a + dP/du_a - dD/du_a
 * of slot a, at local variables loc (see emn_form_term_locals). */
double emn_tmpl_eval_p(const emn_tmpl *t, int a, const double *loc);
double emn_tmpl_eval_F(const emn_tmpl *t, int a, const double *loc);

#endif
