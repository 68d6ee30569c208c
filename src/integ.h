/*
 * integ.h: the variable-step implicit integrator of the momentum-form DAE
 *     dz/dt = w,   dp/dt = F(z, w, t),   p = dL/dw(z, w, t)
 * (spec formulations section 3): trapezoidal or BDF2, first-order steps at
 * the start and after breakpoints, Newton on the velocities w with the
 * exact Jacobian from form.c and KLU, local truncation error control on z
 * and p.
 *
 * The caller drives it step by step (emn_integ_step), so that it can
 * record outputs, stop at breakpoints and report failures with everything
 * computed so far.  Status values follow IDA: 0 ok, < 0 failure.
 */
#ifndef EMN_INTEG_H
#define EMN_INTEG_H

#include <stdbool.h>

#include "form.h"
#include "par.h"
#include "sparse.h"

typedef struct emn_integ_opts {
    double reltol, abstol, vntol, chgtol;
    emn_method method;
    int maxord;             /* 1: backward Euler only; 2: trap or BDF2 */
    int itl4;               /* Newton iterations per step */
    double hmax;            /* largest step */
    double hmin;            /* smallest step before giving up */
    double tstop;
    double trtol;           /* the error test's tolerances times this (0: 1) */
} emn_integ_opts;

typedef struct emn_integ_stats {
    long steps, rejected, newton, jacobians, solves;
    long lte_rejects, newton_rejects;
} emn_integ_stats;

/* Failure codes (negative); the message is in emn_integ.msg. */
enum {
    EMN_INTEG_OK = 0,
    EMN_INTEG_NONCONV = -1,     /* Newton failed at the minimum step */
    EMN_INTEG_TOOSMALL = -2,    /* LTE demands a step below hmin */
    EMN_INTEG_SINGULAR = -3,    /* singular Newton matrix */
    EMN_INTEG_NAN = -4,         /* NaN or Inf in the state */
};

typedef struct emn_integ {
    emn_form *f;
    emn_integ_opts o;
    int n;
    double t, h, hprev;     /* time of the last accepted point, its step, the one before */
    double hnext;           /* proposed next step */
    double hfull;           /* the last step not shortened to land on a breakpoint */
    int order;              /* order of the last accepted step */
    /* accepted points: 0 = latest (t), 1 = previous, 2 = before that */
    double *z[3], *w[3], *p[3], *F[3];
    /* the sources' integrals and values at the accepted points, as the
     * steps' rule made them (emn_form_integrals), and a step's history
     * part of them; srule: the rule is in force (from the end of the
     * start on) */
    double *Sh[3], *sh[3], *Shist;
    bool srule;
    int nrsrc, *rsrc;       /* the sources whose integrals follow the rule */
    double tpast[3];
    int npast;              /* how many of the history slots hold points */
    int since_bp;           /* steps accepted since the last restart */
    /* the formula of the last accepted step: ydot = a0 y + a1 y1 + a2 y2 + b1 ydot1 */
    double a0, a1, a2, b1;
    double next_bp;         /* next breakpoint after t */
    bool restart;           /* next step is first order (start, breakpoint) */
    emn_lu *lu;             /* nonlinear circuits: factored once or more a step */
#define EMN_LU_CACHE 16
#define EMN_LU_CACHE_BYTES 1e9          /* what the cached factorizations may hold at least (cache_budget) */
    emn_lu *cache_lu[EMN_LU_CACHE];   /* linear circuits: factorizations by a */
    double cache_a[EMN_LU_CACHE];
    long cache_used[EMN_LU_CACHE], cache_clock;
    int cache_cap;          /* entries used: fewer for large circuits */
    double *dw, *scale, *wtry, *ztry, *ptry, *Ftry, *hz, *hp;
    int min_iter;           /* Newton iterations before convergence may be declared */
    double stall_max;       /* the largest update (in tolerances) of a linear solve that stalls */
    /* at a breakpoint, the velocities and momentum rates the next step
     * starts from (they jump with a source's slope); w[0], F[0] keep the
     * values the landing step computed, which the outputs show */
    double *w_right, *F_right;
    bool have_right;
    bool *zused;            /* coordinates whose own value matters (emn_form_z_used) */
    bool *inertia;          /* coordinates whose momentum reads velocities (emn_form_inertia) */
    /* coordinates whose value matters and whose equation reads no
     * velocity (emn_form_reads_rates): a constraint sets each one's
     * value, and its velocity is the formula's derivative of that */
    bool *zalg;
    int *alg, nalg;
    /* the coordinates of vz whose own equation reads their velocity
     * only through their value (a spring node without mass or damper
     * that a coil pushes), for alg_rates beside alg */
    int *wder, nwder;
    /* |K^-1| of the constraints' stiffness K = -dF/dz, row by row for
     * alg[k] over [ainv_ptr[k], ainv_ptr[k + 1]): the entry ainv[q] for
     * alg[ainv_at[q]] (alg_inverse) */
    int *ainv_ptr, *ainv_at;
    double *ainv;
    /* coordinates whose value matters, not zalg, without inertia (a node
     * that only inductors and resistors meet): their velocity is set at
     * each instant by the others and alternates under the trapezoidal
     * rule after a first-order step, so a second-order step with three
     * points since the last breakpoint tests them from their values, as
     * zalg's (alg_ratio); the other steps from their velocities */
    int *vz, nvz;
    /* for a coordinate whose velocity is in part algebraic (vz, or
     * along a null vector of dp/dw): its group rgrp[j] (-1: none), the
     * coordinates rg_idx[rg_ptr[g] .. rg_ptr[g + 1]) whose momenta's
     * rounding reaches it (rounding_setup); all NULL if none */
    int *rgrp, *rg_ptr, *rg_idx;
    bool *ztest_vz;         /* ztest for the steps that test vz by value */
    /* whether a second-order step's paired z test takes coordinate j
     * (neither zalg nor inertialess); the p test takes all but zalg */
    bool *ztest;
    int *pconst, npconst;   /* coordinates whose momentum is a constant (emn_form_momentum_const) */
    bool *kz;               /* kz[j]: j's momentum is a constant (pconst takes some of them) */
    /* a linear circuit's null spaces of dp/dw under the trapezoidal rule
     * (null_setup): block b of dp/dw on coordinates nidx[nptr[b] ..
     * nptr[b + 1]), its nk[b] orthonormal null vectors one after another
     * from nvec + nvoff[b] */
    int nnull, *nptr, *nidx, *nk;
    size_t *nvoff;
    double *nvec;
    /* a linear circuit's null vectors u of dp/dw (emn_form_mass_kernel)
     * under the trapezoidal rule, in groups with the velocities without
     * inertia and the other vectors beside them (kernel_setup).  Group g
     * has directions d in [gdir[g], gdir[g + 1]), its kvec[g] vectors
     * first, then its nodes: direction d is ksign[q] on kidx[q], q in
     * [kptr[d], kptr[d + 1]), and dF/dw times it is drow/dval over
     * [dptr[d], dptr[d + 1]); kA the groups' E'D E, block g from row and
     * column gdir[g], factored in klu; kx its right-hand side and
     * solution, kmove the groups that move at this step */
    int nkern, *kptr, *kidx, *kvec, *gdir, *dptr, *drow;
    signed char *ksign;
    /* The gauges (emn_form_gauges): set k is gauge_idx[gauge_ptr[k] ..
     * gauge_ptr[k + 1]), their values moved back towards zero together
     * (recenter) */
    int ngauge, *gauge_ptr, *gauge_idx;
    double *dval, *kx;
    bool *kmove;
    emn_sparse kA;
    emn_lu *klu;
    /* a linear circuit's null vectors u of dp/dw (kernel_rows_setup),
     * each an unknown of the start's Newton iteration in place of one of
     * its coordinates (consistent_w, jfix while it runs).  Vector k: u on
     * jidx[q] with signs jsign[q], q in [jptr[k], jptr[k + 1]), in place
     * of coordinate jrow[k], whose row and column in J, slots jzero[x], x
     * in [jzptr[k], jzptr[k + 1]), are zeroed and get -s (jvd[e] + jvk[e]
     * / a) at slot jslot[e], e in [jeptr[k], jeptr[k + 1]) (u'dF/dw and
     * u'dF/dz, dF/dw u and dF/dz u), and -s^2 (jdd[k] + jdk[k] / a) at
     * jdslot[k]; s = a where nothing damps u (jcon[k], njcon of them:
     * u'F(z, t) = 0 is a constraint, met at the start by alg_start, and
     * the steps' matrices have its row and column too), else 1; jc0[k], u'F
     * at the point the start's step leaves from; a constraint's whole
     * row u'dF/dz, jgval[e] in column jgcol[e], e in [jgptr[k], jgptr[k +
     * 1]) (constraint_rates) */
    int nkrow, njcon, *jptr, *jidx, *jrow, *jeptr, *jslot, *jzptr, *jzero, *jdslot, *jgptr, *jgcol;
    signed char *jsign;
    bool *jcon, jfix;
    bool rates_direct;      /* consistent_w: pconst rows' residual as dp/dz w - F (newton) */
    double *jvd, *jvk, *jdd, *jdk, *jc0, *jgval;
    /* the branches that give a coordinate's value a size
     * (emn_form_value_slots), and |value| of each at the trial point and
     * at the last accepted one */
    int *vs_ptr, *vs_slot;
    double *vs_try, *vs_acc;
    /* Those branches once each (bs, with a coordinate bsj of each), for
     * their own error test (branch_ratio): their values at the last three
     * accepted points and their rates at the last (right-hand past a
     * breakpoint) */
    int nbs, *bs, *bsj;
    double *bsv[3], *bsr;
    /* per coordinate, |dF_j/dz_j| and |dF_j/dw_j| of the linear terms:
     * its stiffness (a mechanical one's springs) and its damping (a
     * coil's T^2 / R included) */
    double *fz_diag, *fw_diag;
    int *follow, nfollow;   /* the coordinates still_followers judges */
    double *peak;           /* running max |z - z0|, |p|, |w|, |F| and of F's
                               largest term (scale) of the mechanical
                               coordinates, then z0, their values at the start
                               (six runs of n - ne), for their tolerances */
    double *src_next;       /* per source, its next breakpoint after the last asked for */
    /* The mechanical coordinates' absolute tolerances of each velocity
     * and residual, and of z, p and their rates (set_tolerances), for
     * coordinate j (>= ne) at index j - ne; the electrical ones have one
     * set, etol, in that order: a pass over a large circuit then streams
     * no arrays of one value, and a circuit without mechanics keeps none. */
    double *w_abs, *res_abs;
    double *tol_zy, *tol_zd, *tol_py, *tol_pd;
    double etol[6];
    /* where the passes over the coordinates split in two (integ.c:
     * in_halves); apart, so that the passes of a const integrator can
     * time their halves */
    emn_par_split *halves;
    emn_integ_stats st;
    char msg[512];
    int bad_coord;          /* coordinate named by the last failure, or -1 */
    bool singular;          /* the last Newton solve met a singular matrix (bad_coord: its zero pivot) */
    int nan_coord;          /* coordinate whose equation went non-finite in the last Newton solve, or -1 */
} emn_integ;

emn_integ *emn_integ_new(emn_form *f, const emn_integ_opts *o);
void emn_integ_free(emn_integ **it);
/* Factorization counts over all of the integrator's LU objects. */
void emn_integ_lu_stats(const emn_integ *it, long *factors, long *refactors);

/*
 * Start at t0 from coordinates z0 and momenta p0: solves for velocities
 * consistent with them (algebraic components included) and sets the
 * history.  w0: the velocities of the steady state z0 and p0 were made
 * from (the operating point), or NULL (a start from rest); the solve
 * starts from them, and a linear circuit keeps them where they are
 * consistent already.  Returns 0 or a failure code.
 */
int emn_integ_start(emn_integ *it, double t0, const double *z0, const double *p0, const double *w0);

/*
 * Right after emn_integ_start: the state two steps of negligible length h
 * later, for difference quotients at the start that no step of the run
 * resolves when it is longer than the circuit's fastest time constant.
 * The first point is z1 = z0 + h w0 with w0 at t0 + h (into z1, n long);
 * the second, a consistent step from it, is it->ztry and it->wtry at
 * t0 + 2 h.  The accepted state is left as it was; the formulation's time
 * is left at t0 + 2 h.  Returns 0, or 1 if the step did not converge.
 */
int emn_integ_probe(emn_integ *it, double *z1, double *h);

/* The formulation's time set to accepted point k's (0 the latest, up to
 * 2), with the sources' integrals as the steps made them there: what a
 * signal computed from it->z[k] needs. */
void emn_integ_form_at(emn_integ *it, int k);

/* Take one accepted step, not past tlimit.  Returns 0 or a failure code. */
int emn_integ_step(emn_integ *it, double tlimit);

#endif
