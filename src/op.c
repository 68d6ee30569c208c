/*
 * op.c: the operating point as a steady state of Lagrange's equations (see
 * op.h for the equations).
 *
 * The Newton matrix of (R1, R2) in the unknowns (z0, w) is, to first order
 * in the velocities,
 *         z0        w
 *   R1 [ dF/dz   dF/dw - dp/dz ]
 *   R2 [   0         dF/dz     ]
 * on a 2n x 2n pattern built once from the formulation's own.  Rows that
 * leave a direction undetermined get a proximal term: an R2 row adds
 * eps*dz0_j (the coordinate keeps its value if nothing fixes it), an R1 row
 * adds eps*dp_j (the momentum keeps its value: charge conservation on a
 * node no resistor reaches).  These change the Newton matrix, not the
 * residual, so a converged point is exact.
 */
#include "config.h"
#include "op.h"
#include "sparse.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct opsys {
    emn_form *f;
    int n;
    emn_sparse K;
    int *kz, *kw, *k2;      /* per J slot: K slots of (R1, z0), (R1, w), (R2, w) */
    int *kdiag2;            /* per j: K slot of (R2 row j, z0_j) */
    int *kdiag1;            /* per j: K slot of (R1 row j, w_j) */
    double *Pz, *Pw, *Fz, *Fw;
    double *p, *F, *dp, *dF, *scale, *R, *X;
    emn_lu *lu;
} opsys;

static void opsys_init(opsys *o, emn_form *f)
{
    memset(o, 0, sizeof *o);
    o->f = f;
    int n = o->n = f->n;
    const emn_sparse *J = &f->J;
    emn_sparse_init(&o->K, 2 * n);
    int *hz = emn_xmalloc((size_t)J->nnz * sizeof(int) + 1);
    int *hw = emn_xmalloc((size_t)J->nnz * sizeof(int) + 1);
    int *h2 = emn_xmalloc((size_t)J->nnz * sizeof(int) + 1);
    for (int col = 0; col < n; col++)
        for (int k = J->Ap[col]; k < J->Ap[col + 1]; k++) {
            int row = J->Ai[k];
            hz[k] = emn_sparse_reserve(&o->K, row, col);
            hw[k] = emn_sparse_reserve(&o->K, row, n + col);
            h2[k] = emn_sparse_reserve(&o->K, n + row, n + col);
        }
    int *hd2 = emn_xmalloc((size_t)n * sizeof(int) + 1), *hd1 = emn_xmalloc((size_t)n * sizeof(int) + 1);
    for (int j = 0; j < n; j++) {
        hd2[j] = emn_sparse_reserve(&o->K, n + j, j);
        hd1[j] = emn_sparse_reserve(&o->K, j, n + j);
    }
    emn_sparse_finalize(&o->K);
    o->kz = hz; o->kw = hw; o->k2 = h2; o->kdiag2 = hd2; o->kdiag1 = hd1;
    for (int k = 0; k < J->nnz; k++) {
        hz[k] = emn_sparse_slot(&o->K, hz[k]);
        hw[k] = emn_sparse_slot(&o->K, hw[k]);
        h2[k] = emn_sparse_slot(&o->K, h2[k]);
    }
    for (int j = 0; j < n; j++) {
        hd2[j] = emn_sparse_slot(&o->K, hd2[j]);
        hd1[j] = emn_sparse_slot(&o->K, hd1[j]);
    }
    size_t nz = (size_t)J->nnz + 1, nv = (size_t)n + 1;
    o->Pz = emn_xcalloc(nz, sizeof(double));
    o->Pw = emn_xcalloc(nz, sizeof(double));
    o->Fz = emn_xcalloc(nz, sizeof(double));
    o->Fw = emn_xcalloc(nz, sizeof(double));
    o->p = emn_xcalloc(nv, sizeof(double));
    o->F = emn_xcalloc(nv, sizeof(double));
    o->dp = emn_xcalloc(nv, sizeof(double));
    o->dF = emn_xcalloc(nv, sizeof(double));
    o->scale = emn_xcalloc(nv, sizeof(double));
    o->R = emn_xcalloc(2 * nv, sizeof(double));
    o->X = emn_xcalloc(2 * nv, sizeof(double));
    o->lu = emn_lu_new();
}

static void opsys_free(opsys *o)
{
    emn_sparse_free(&o->K);
    free(o->kz); free(o->kw); free(o->k2); free(o->kdiag2); free(o->kdiag1);
    free(o->Pz); free(o->Pw); free(o->Fz); free(o->Fw);
    free(o->p); free(o->F); free(o->dp); free(o->dF); free(o->scale); free(o->R); free(o->X);
    emn_lu_free(&o->lu);
}

/* Residuals R1 (rows 0..n-1) and R2 (rows n..2n-1) at (z, w); returns 0,
 * or 1 if anything is not finite. */
static int residual(opsys *o, const double *z, const double *w)
{
    int n = o->n;
    int bad;
    if (emn_form_eval(o->f, z, w, o->p, o->F, o->scale, &bad)) return 1;
    if (emn_form_rates(o->f, z, w, o->dp, o->dF, NULL)) return 1;
    for (int j = 0; j < n; j++) {
        o->R[j] = o->F[j] - o->dp[j];
        o->R[n + j] = o->dF[j];
        if (!isfinite(o->R[j]) || !isfinite(o->R[n + j])) return 1;
    }
    return 0;
}

/* Fill and factor the Newton matrix at (z, w). */
static int matrix(opsys *o, const double *z, const double *w, int *bad_col)
{
    int n = o->n;
    const emn_sparse *J = &o->f->J;
    if (emn_form_derivatives(o->f, z, w, o->Pz, o->Pw, o->Fz, o->Fw)) return 1;
    emn_sparse_zero(&o->K);
    double *row1 = emn_xcalloc((size_t)n + 1, sizeof(double)), *rowp = emn_xcalloc((size_t)n + 1, sizeof(double));
    double *row2 = emn_xcalloc((size_t)n + 1, sizeof(double));
    for (int k = 0; k < J->nnz; k++) {
        int r = J->Ai[k];
        o->K.Ax[o->kz[k]] += o->Fz[k];
        o->K.Ax[o->kw[k]] += o->Fw[k] - o->Pz[k];
        o->K.Ax[o->k2[k]] += o->Fz[k];
        row1[r] = fmax(row1[r], fmax(fabs(o->Fz[k]), fabs(o->Fw[k] - o->Pz[k])));
        rowp[r] = fmax(rowp[r], fmax(fabs(o->Pz[k]), fabs(o->Pw[k])));
        row2[r] = fmax(row2[r], fabs(o->Fz[k]));
    }
    /* proximal terms */
    for (int col = 0; col < n; col++)
        for (int k = J->Ap[col]; k < J->Ap[col + 1]; k++) {
            int r = J->Ai[k];
            if (rowp[r] == 0) continue;
            double eps = row1[r] > 0 ? 1e-10 * row1[r] / rowp[r] : 1 / rowp[r];
            o->K.Ax[o->kz[k]] += eps * o->Pz[k];
            o->K.Ax[o->kw[k]] += eps * o->Pw[k];
        }
    for (int j = 0; j < n; j++) {
        o->K.Ax[o->kdiag2[j]] += row2[j] > 0 ? 1e-10 * row2[j] : 1;
        if (row1[j] == 0 && rowp[j] == 0) o->K.Ax[o->kdiag1[j]] += 1;
    }
    free(row1);
    free(rowp);
    free(row2);
    int col = -1;
    if (emn_lu_factor(o->lu, &o->K, &col) < 0) {
        *bad_col = col;
        return 1;
    }
    return 0;
}

/* Tolerance of coordinate j's update and residuals. */
static double xtol(const emn_form *f, int j, bool vel, double reltol, double x)
{
    double a;
    switch (f->coord[j].kind) {
    case EMN_COORD_LOOP: a = vel ? 1e-12 : 1e-16; break;   /* A, C */
    case EMN_COORD_NODE: a = vel ? 1e-9 : 1e-18; break;    /* V, V s */
    default: a = vel ? 1e-20 : 1e-30; break;               /* at rest: roundoff of a velocity */
    }
    return reltol * fabs(x) + a;
}

/* Newton from (z, w) at the sources' current scale.  Returns iterations
 * used, or -1. */
static int newton(opsys *o, double reltol, double *z, double *w, int maxit, int *bad, emn_op_stats *st)
{
    int n = o->n;
    double *dx = emn_xmalloc(2 * ((size_t)n + 1) * sizeof(double));
    int it;
    bool ok = false;
    for (it = 0; it < maxit; it++) {
        if (residual(o, z, w)) break;
        int col = -1;
        if (matrix(o, z, w, &col)) {
            if (col >= 0) *bad = col % n;
            break;
        }
        st->factorizations++;
        for (int k = 0; k < 2 * n; k++) dx[k] = -o->R[k];
        emn_lu_solve(o->lu, dx);
        st->iterations++;
        if (getenv("EMN_DEBUG_OP")) {
            double rm = 0; for (int k = 0; k < 2 * n; k++) rm = fmax(rm, fabs(o->R[k]));
            fprintf(stderr, "op it %d |R|=%g z0=%g w0=%g dz=%g %g\n", it, rm, z[0], w[0], dx[0], n > 1 ? dx[1] : 0);
        }
        bool small = true;
        for (int j = 0; j < n; j++) {
            if (!isfinite(dx[j]) || !isfinite(dx[n + j])) { small = false; it = maxit; break; }
            double zn = z[j] + dx[j], wn = w[j] + dx[n + j];
            if (fabs(dx[j]) > 1e-3 * xtol(o->f, j, false, reltol, fmax(fabs(zn), fabs(z[j])))) small = false;
            if (fabs(dx[n + j]) > 1e-3 * xtol(o->f, j, true, reltol, fmax(fabs(wn), fabs(w[j])))) small = false;
            z[j] = zn;
            w[j] = wn;
        }
        if (small) {
            /* a state with a capacitance or inductance that is not
             * positive (plates through each other) is no steady state */
            ok = residual(o, z, w) == 0 && emn_form_check_values(o->f, z, NULL) < 0;
            break;
        }
    }
    if (!ok) {
        /* the coordinate with the largest residual, relative to its scale */
        double worst = -1;
        for (int j = 0; j < n; j++) {
            double r = fabs(o->R[j]) / (o->scale[j] + 1e-300);
            if (isfinite(r) && r > worst) { worst = r; *bad = j; }
            else if (!isfinite(r)) { *bad = j; break; }
        }
    }
    free(dx);
    return ok ? it + 1 : -1;
}

/* At the last steady state before the sources could be raised no
 * further, the Newton matrix is nearly singular; its near-null vector is
 * the motion by which the equilibrium disappears (a MEMS plate snapping
 * in).  Name the coordinate that moves most in it, relative to its value. */
static int vanishing_coordinate(opsys *o, const double *z, const double *w)
{
    int n = o->n, col = -1;
    if (residual(o, z, w) || matrix(o, z, w, &col)) return -1;
    double *v = emn_xmalloc(2 * ((size_t)n + 1) * sizeof(double));
    for (int k = 0; k < 2 * n; k++) v[k] = 1;
    for (int it = 0; it < 4; it++) {
        emn_lu_solve(o->lu, v);
        double big = 0;
        for (int k = 0; k < 2 * n; k++) big = fmax(big, fabs(v[k]));
        if (!(big > 0) || !isfinite(big)) break;
        for (int k = 0; k < 2 * n; k++) v[k] /= big;
    }
    /* coordinates no force depends on (a node's flux behind a capacitor)
     * have no value to lose: skip them */
    bool *held = emn_xcalloc((size_t)n + 1, sizeof(bool));
    const emn_sparse *J = &o->f->J;
    for (int col2 = 0; col2 < n; col2++)
        for (int k = J->Ap[col2]; k < J->Ap[col2 + 1]; k++)
            if (o->Fz[k] != 0) held[col2] = true;
    int best = -1;
    double bv = -1;
    for (int j = 0; j < n; j++) {
        if (!held[j]) continue;
        double r = fabs(v[j]) / (fabs(z[j]) + 1e-300);
        if (isfinite(r) && r > bv) { bv = r; best = j; }
    }
    free(v);
    free(held);
    return best;
}

int emn_op_solve(emn_form *f, double reltol, double *z, double *w, int *bad, char *msg, int msglen,
                 emn_op_stats *st)
{
    opsys o;
    emn_op_stats local = {0};
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    opsys_init(&o, f);
    int n = f->n, badc = -1;
    double *z0 = emn_xmalloc((size_t)n * sizeof(double) + 1), *w0 = emn_xmalloc((size_t)n * sizeof(double) + 1);
    memcpy(z0, z, (size_t)n * sizeof(double));
    memcpy(w0, w, (size_t)n * sizeof(double));
    int status = 0;
    emn_form_set_dc(f, 1);
    if (newton(&o, reltol, z, w, 100, &badc, st) < 0) {
        /* source stepping: from the sources switched off up to full value */
        memcpy(z, z0, (size_t)n * sizeof(double));
        memcpy(w, w0, (size_t)n * sizeof(double));
        double lambda = 0, step = 0.1;
        emn_form_set_dc(f, 0);
        if (newton(&o, reltol, z, w, 100, &badc, st) < 0) {
            snprintf(msg, (size_t)msglen, "no steady state found even with the sources switched off");
            status = -1;
        }
        double *zs = emn_xmalloc((size_t)n * sizeof(double) + 1), *ws = emn_xmalloc((size_t)n * sizeof(double) + 1);
        while (status == 0 && lambda < 1) {
            memcpy(zs, z, (size_t)n * sizeof(double));
            memcpy(ws, w, (size_t)n * sizeof(double));
            double next = fmin(1, lambda + step);
            emn_form_set_dc(f, next);
            st->source_steps++;
            if (newton(&o, reltol, z, w, 50, &badc, st) >= 0) {
                lambda = next;
                step = fmin(0.5, step * 1.5);
            } else {
                memcpy(z, zs, (size_t)n * sizeof(double));
                memcpy(w, ws, (size_t)n * sizeof(double));
                step /= 4;
                if (step < 1e-7) {
                    snprintf(msg, (size_t)msglen, "no steady state: Newton's method fails beyond %.4g%% of "
                             "the DC source values", 100 * lambda);
                    status = -1;
                    emn_form_set_dc(f, lambda);
                    int v = vanishing_coordinate(&o, z, w);
                    if (v >= 0) badc = v;
                }
            }
        }
        free(zs);
        free(ws);
    }
    emn_form_set_dc(f, 1);
    if (bad) *bad = status < 0 ? badc : -1;
    free(z0);
    free(w0);
    opsys_free(&o);
    return status;
}
