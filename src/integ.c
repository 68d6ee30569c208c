/*
 * integ.c: the implicit integrator of the momentum-form DAE.
 *
 * Each step eliminates z and p through the integration formula,
 *     zdot = a z + hz,   pdot = a p + hp,
 * and solves r(w) = a p(z(w), w) + hp - F(z(w), w) = 0 for the velocities
 * by Newton's method with the exact matrix J = dr/dw from form.c.  A
 * linear circuit at an unchanged step keeps its factorization: the matrix
 * depends on a alone, so the step controller holds the step unless it can
 * grow it substantially.
 *
 * Local truncation error is estimated from the exact derivatives at the
 * accepted points (w for z, F for p): backward Euler's h^2/2 y'' from two
 * points, the second-order formulas' C h^3 y''' from three.
 */
#include "config.h"
#include "integ.h"
#include "par.h"
#include "util.h"
#include "wave.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* fmax and fmin as the hot loops need them, inline: the larger (smaller)
 * of a and b, and the number where one of them is NaN, as fmax does. */
static inline double max_num(double a, double b) { return a > b || isnan(b) ? a : b; }
static inline double min_num(double a, double b) { return a < b || isnan(b) ? a : b; }

/* Tolerances of z_j and p_j, by what the coordinate is: tol_zy/tol_py
 * apply to the value, tol_zd/tol_pd to its derivative (times h), and a
 * momentum's own magnitude counts, a coordinate's does not.  No
 * coordinate has a natural origin: a node's flux linkage and a loop's
 * charge grow like V t and I t under DC, a motor's angle without bound,
 * and shifting any of them changes nothing physical.  So a coordinate's
 * error is measured against its motion per step, h |velocity|, with
 * SPICE's abstol and vntol for electrical coordinates and a thousandth
 * of the largest velocity seen so far for mechanical ones.  chgtol is a
 * charge's floor as in SPICE, reltol * chgtol: on its own, a loop charge
 * behind a 2 pF capacitor could drift by 1e-14 C (5 mV) every step,
 * whatever reltol asked for.
 * Momenta (flux linkages of loops, charges of nodes, mechanical momenta)
 * do have a meaningful size.  Electrical tolerances are set once;
 * mechanical ones follow the peaks (mech_tolerances). */
enum { T_W, T_RES, T_ZY, T_ZD, T_PY, T_PD };     /* etol's order */

/* The electrical coordinates are all of one kind, loops in the charge
 * formulation and nodes in the flux one: one set of tolerances, in
 * etol's order, serves them all. */
static void set_tolerances(emn_integ *it)
{
    const emn_integ_opts *o = &it->o;
    double *t = it->etol;
    if (it->f->kind == EMN_FORM_CHARGE) {
        t[T_W] = o->abstol; t[T_RES] = o->vntol;                                /* A; V */
        t[T_ZY] = o->reltol * o->chgtol; t[T_ZD] = o->abstol;                   /* C, A */
        t[T_PY] = 0; t[T_PD] = o->vntol;                                        /* V s, V */
    } else {
        t[T_W] = o->vntol; t[T_RES] = o->abstol;                                /* V; A */
        t[T_ZY] = 0; t[T_ZD] = o->vntol;                                        /* V s, V */
        t[T_PY] = o->reltol * o->chgtol; t[T_PD] = o->abstol;                   /* C, A */
    }
}

/* Where [j0, j1) stops being electrical coordinates. */
static int etol_end(const emn_integ *it, int j0, int j1)
{
    int ne = it->f->ne;
    return ne < j0 ? j0 : ne > j1 ? j1 : ne;
}

/* Coordinate j's absolute tolerances for its value, for its rate and for
 * its residual: its kind's if it is electrical, its own if mechanical. */
static inline double abs_tol_zy(const emn_integ *it, int j)
{
    return j < it->f->ne ? it->etol[T_ZY] : it->tol_zy[j - it->f->ne];
}

static inline double abs_tol_zd(const emn_integ *it, int j)
{
    return j < it->f->ne ? it->etol[T_ZD] : it->tol_zd[j - it->f->ne];
}

static inline double abs_tol_res(const emn_integ *it, int j)
{
    return j < it->f->ne ? it->etol[T_RES] : it->res_abs[j - it->f->ne];
}

/* A coordinate that no force has pushed so far (its net force never
 * above the rounding of the largest term in it: at rest, or in a static
 * equilibrium of a spring against a coil's DC force) has no size of its
 * own to measure its motion against: its velocity and force so far are
 * rounding, and a tolerance a millionth of those cut a linear circuit's
 * steps to 1e-8 s, every other step rejected (a coil at its operating
 * point, flux formulation: 10^6 steps a millisecond).  And from exactly
 * zero, a step's estimate is the same fraction of the first motion at
 * every step length (h/2 of a velocity's rise against reltol h of it),
 * as at a start from rest: a mass that a PULSE's corner set moving
 * through a coil, beside one that a force had moved all along, had that
 * step cut to 1e-16 s.  Such a coordinate goes untested until a force
 * has pushed it; then its peaks give it a size.  One without inertia,
 * whose net force is the balance each step solves (always rounding),
 * goes untested only until it first moves: tested as still, a mass-less
 * coil's 16 us decay was stepped over in 25 us steps.  Nor is any tested
 * while it has not moved from where it started by more than rounding
 * (EMN_STILL_ULPS eps of its displacement there): the rounding of a net
 * force grows with the run where the terms' inputs do (an inductor's
 * current in the flux formulation is the difference of two flux
 * linkages that grow as V t), past any fixed part of its largest term
 * (a coil on a spring, displaced 6 mm and at rest at its operating
 * point, passed 64 eps of it after 730 steps and stopped the run).  Or,
 * held by springs, by more than 64 eps of its largest force term over
 * their stiffness: where that term is the difference of two flux
 * linkages (a coil between two nodes, flux formulation), the rounding of
 * those moves the displacement by far more than its own (a coil on a
 * mass-less spring node, 2.9e-19 m on 5e-7 m after 25 ms, 2700 of its
 * ulps).  That much is also each displacement's tolerance for its value,
 * tested or not: once tested, a coordinate at rest has peaks of
 * rounding, which grows with the linkages, and the coil above stopped
 * the run at 0.12 s (flux formulation). */

/* A mechanical coordinate within this many eps of its displacement at
 * the start has not moved (mech_tolerances). */
#define EMN_STILL_ULPS 1024

static void mech_tolerances(emn_integ *it, int j0, int j1)
{
    int ne = it->f->ne, nm = it->n - ne;
    double k = 1e-3 * it->o.reltol;
    for (int j = j0 > ne ? j0 : ne; j < j1; j++) {
        const double *pk = it->peak + (j - ne);
        /* (without inertia, F is the balance the step solves, always
         * rounding: there a coordinate that has never moved, or whose
         * velocity is within the rounding of its largest force term over
         * its damping: a spring node pushed by a coil whose loop nothing
         * drives moves at 1e-15 m/s, and a tolerance a millionth of that
         * cut the steps to nothing, flux formulation) */
        double moved = EMN_STILL_ULPS * DBL_EPSILON * fabs(pk[5 * nm]);
        if (it->fz_diag[j] > 0) moved = fmax(moved, 64 * DBL_EPSILON * pk[4 * nm] / it->fz_diag[j]);
        bool still = pk[0] <= moved ||
                     (it->inertia[j] ? pk[3 * nm] <= 64 * DBL_EPSILON * pk[4 * nm]
                                     : (pk[nm] == 0 && pk[2 * nm] == 0 && pk[3 * nm] == 0) ||
                                       (it->fw_diag[j] > 0 &&
                                        pk[2 * nm] * it->fw_diag[j] <= 64 * DBL_EPSILON * pk[4 * nm]));
        it->tol_zy[j - ne] = moved + 1e-30;
        it->tol_zd[j - ne] = still ? INFINITY : k * pk[2 * nm] + 1e-30;
        it->tol_py[j - ne] = still ? INFINITY : k * pk[nm] + 1e-30;
        it->tol_pd[j - ne] = still ? INFINITY : k * pk[3 * nm] + 1e-30;
    }
}

/* What part of the relative error tolerance a solve with a factorization
 * kept in single precision may be off by (emn_lu_allow_single). */
#define EMN_SINGLE_PART 0.01

/* Velocities without inertia that a null vector's group may take in
 * besides the vector itself (kernel_setup). */
#define EMN_KERN_MAX 16

/* S = the block-diagonal matrix of nb dense blocks: block g, dim[g] x
 * dim[g] and row-major at val + voff[g], from row and column off[g]. */
static void blocks_sparse(emn_sparse *S, int n, int nb, const int *off, const int *dim, const double *val,
                          const int *voff)
{
    emn_sparse_init(S, n);
    for (int g = 0; g < nb; g++)
        for (int r = 0; r < dim[g]; r++)
            for (int d = 0; d < dim[g]; d++) emn_sparse_reserve(S, off[g] + r, off[g] + d);
    emn_sparse_finalize(S);
    emn_sparse_zero(S);
    for (int g = 0; g < nb; g++)
        for (int r = 0; r < dim[g]; r++)
            for (int d = 0; d < dim[g]; d++)
                S->Ax[emn_sparse_find(S, off[g] + r, off[g] + d)] = val[voff[g] + r * dim[g] + d];
}

/* The largest block whose matrix alg_inverse inverts and whose null
 * space null_setup finds, dense. */
#define EMN_NULL_MAX 64

/* A linear circuit's null vectors of dp/dw of +-1 (emn_form_mass_kernel),
 * found once for kernel_setup and null_setup: vector k is sign[q] on
 * idx[q], q in [ptr[k], ptr[k + 1]). */
typedef struct sign_vectors {
    int n, *ptr, *idx;
    signed char *sign;
} sign_vectors;

/* The block of M's pattern that holds coordinate j, among the
 * coordinates with in[c] (every one, with in NULL) not yet marked: its
 * coordinates into queue, marked; returns how many. */
static int block_of(const emn_cmat *M, int j, const bool *in, bool *mark, int *queue)
{
    int m = 0;
    mark[j] = true;
    queue[m++] = j;
    for (int h = 0; h < m; h++)
        for (int e = M->rptr[queue[h]]; e < M->rptr[queue[h] + 1]; e++) {
            int c = M->col[e];
            if (!mark[c] && (!in || in[c])) {
                mark[c] = true;
                queue[m++] = c;
            }
        }
    return m;
}

/* a (m x m, row-major) = sg times M's entries among the block's
 * coordinates queue[0 .. m); pos (n long, all -1) is left as it was. */
static void block_dense(const emn_cmat *M, const int *queue, int m, int *pos, double sg, double *a)
{
    for (int i = 0; i < m; i++) pos[queue[i]] = i;
    for (int i = 0; i < m * m; i++) a[i] = 0;
    for (int i = 0; i < m; i++)
        for (int e = M->rptr[queue[i]]; e < M->rptr[queue[i] + 1]; e++)
            if (pos[M->col[e]] >= 0) a[i * m + pos[M->col[e]]] += sg * M->val[e];
    for (int i = 0; i < m; i++) pos[queue[i]] = -1;
}

/* A walk over the blocks of dp/dw (lin[1]) of 2 to EMN_NULL_MAX
 * coordinates not marked (mark: the caller may set some first), each
 * with its eigenvalues d and eigenvectors v (one after another, m long)
 * and the largest |d|, top: vector i is a null vector where |d[i]| is at
 * most 1e-10 of top (an exactly singular block's come out at some eps
 * of it; an inductance 1e-10 of another coupled to it would be taken
 * for none).  The block's coordinates are queue[0 .. m). */
typedef struct block_walk {
    const emn_cmat *M;
    int *queue, *pos, r, m;
    bool *mark;
    double *a, *v, d[EMN_NULL_MAX], top;
} block_walk;

static void walk_init(block_walk *W, const emn_cmat *M, int n)
{
    W->M = M;
    W->queue = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    W->pos = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    W->mark = emn_xcalloc((size_t)n + 1, sizeof(bool));
    W->a = emn_xmalloc(EMN_NULL_MAX * EMN_NULL_MAX * sizeof(double));
    W->v = emn_xmalloc(EMN_NULL_MAX * EMN_NULL_MAX * sizeof(double));
    for (int j = 0; j < n; j++) W->pos[j] = -1;
    W->r = 0;
}

static bool walk_next(block_walk *W)
{
    const emn_cmat *M = W->M;
    for (; W->r < M->nrows; W->r++) {
        if (W->mark[M->rows[W->r]]) continue;
        W->m = block_of(M, M->rows[W->r], NULL, W->mark, W->queue);
        if (W->m < 2 || W->m > EMN_NULL_MAX) continue;
        block_dense(M, W->queue, W->m, W->pos, 1, W->a);
        emn_sym_eigen(W->a, W->m, W->d, W->v);
        W->top = 0;
        for (int i = 0; i < W->m; i++) W->top = fmax(W->top, fabs(W->d[i]));
        W->r++;
        return true;
    }
    return false;
}

static void walk_free(block_walk *W)
{
    free(W->queue); free(W->pos); free(W->mark); free(W->a); free(W->v);
}

/* For alg_ratio's floor: the coordinates a constraint sets (zalg) whose
 * constraint sums linear branches (emn_form_value_slots), in the groups
 * that their stiffness K = -dF/dz joins, and for each, |K^-1| over its
 * group: alg[ainv_at[q]] and ainv[q], q in [ainv_ptr[k], ainv_ptr[k +
 * 1]) for alg[k].  A departure dF of the constraints moves the values by
 * K^-1 dF.  A group of more than EMN_NULL_MAX, or singular, has its
 * diagonal 1 / K_jj alone. */
static void alg_inverse(emn_integ *it)
{
    const emn_cmat *K = &it->f->lin[2];
    int na = it->nalg, n = it->n;
    int *at = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *pos = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    int *queue = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    bool *in = emn_xcalloc((size_t)n + 1, sizeof(bool)), *mark = emn_xcalloc((size_t)n + 1, sizeof(bool));
    for (int j = 0; j < n; j++) at[j] = pos[j] = -1;
    for (int k = 0; k < na; k++) {
        int j = it->alg[k];
        at[j] = k;
        in[j] = it->vs_ptr[j + 1] > it->vs_ptr[j];
    }
    double *a = emn_xmalloc(EMN_NULL_MAX * EMN_NULL_MAX * sizeof(double));
    double *v = emn_xmalloc(EMN_NULL_MAX * EMN_NULL_MAX * sizeof(double)), d[EMN_NULL_MAX];
    size_t cap = 16, nq = 0;
    it->ainv_ptr = emn_xcalloc((size_t)na + 1, sizeof(int));
    it->ainv_at = emn_xmalloc(cap * sizeof(int));
    it->ainv = emn_xmalloc(cap * sizeof(double));
    /* the groups, each member's row of |K^-1| in turn */
    double **rowv = emn_xcalloc((size_t)na + 1, sizeof(double *));
    int **rowk = emn_xcalloc((size_t)na + 1, sizeof(int *));
    int *rown = emn_xcalloc((size_t)na + 1, sizeof(int));
    for (int k0 = 0; k0 < na; k0++) {
        if (!in[it->alg[k0]] || mark[it->alg[k0]]) continue;
        int m = block_of(K, it->alg[k0], in, mark, queue);
        bool dense = m <= EMN_NULL_MAX;
        if (dense) {
            block_dense(K, queue, m, pos, -1, a);
            emn_sym_eigen(a, m, d, v);
            double top = 0, low = INFINITY;
            for (int i = 0; i < m; i++) {
                top = fmax(top, fabs(d[i]));
                low = fmin(low, fabs(d[i]));
            }
            dense = low > 1e-12 * top;
        }
        for (int i = 0; i < m; i++) {
            int k = at[queue[i]], cnt = dense ? m : 1;
            rowv[k] = emn_xmalloc((size_t)cnt * sizeof(double));
            rowk[k] = emn_xmalloc((size_t)cnt * sizeof(int));
            rown[k] = cnt;
            if (!dense) {
                int r = queue[i];
                double kd = 0;
                for (int e = K->rptr[r]; e < K->rptr[r + 1]; e++)
                    if (K->col[e] == r) kd = fabs(K->val[e]);
                rowk[k][0] = k;
                rowv[k][0] = kd > 0 ? 1 / kd : 0;
                continue;
            }
            for (int l = 0; l < m; l++) {
                double x = 0;
                for (int e = 0; e < m; e++) x += v[e * m + i] * v[e * m + l] / d[e];
                rowk[k][l] = at[queue[l]];
                rowv[k][l] = fabs(x);
            }
        }
    }
    for (int k = 0; k < na; k++) {
        it->ainv_ptr[k] = (int)nq;
        if (nq + (size_t)rown[k] > cap) {
            while (nq + (size_t)rown[k] > cap) cap *= 2;
            it->ainv_at = emn_xrealloc(it->ainv_at, cap * sizeof(int));
            it->ainv = emn_xrealloc(it->ainv, cap * sizeof(double));
        }
        for (int q = 0; q < rown[k]; q++) {
            it->ainv_at[nq] = rowk[k][q];
            it->ainv[nq++] = rowv[k][q];
        }
        free(rowv[k]);
        free(rowk[k]);
    }
    it->ainv_ptr[na] = (int)nq;
    free(rowv); free(rowk); free(rown);
    free(a); free(v); free(at); free(pos); free(queue); free(in); free(mark);
}

/* The null vectors of W's block turned into a basis of those
 * combinations of them whose momentum the coordinates do not change
 * (u'dp/dz = 0: reads_values) and of the others, the first marked null
 * (W->d 0) and the others not (W->d top).  The eigenvectors of a block
 * with a null space of more than one dimension are any basis of it:
 * where a moving coil's loop shares an inductor with two loops that
 * close through a resistor and through a capacitor, each vector mixed
 * the coil's loop (T x) into the other two's combination, and none was
 * free: that combination's balance alternated, undamped, under the
 * trapezoidal rule (random electromechanical circuit 25, charge
 * formulation, stopped at reltol 1e-6 with 0.3 uA of it).  colpos (n
 * long, all -1, left so) and cols are scratch. */
static void free_nulls(const emn_integ *it, block_walk *W, int *colpos, int *cols)
{
    const emn_cmat *P = &it->f->lin[0];
    int m = W->m, nn = 0, nc = 0, null[EMN_NULL_MAX];
    for (int i = 0; i < m; i++)
        if (fabs(W->d[i]) <= 1e-10 * W->top) null[nn++] = i;
    if (nn == 0 || P->nrows == 0) return;
    for (int q = 0; q < m; q++)
        for (int e = P->rptr[W->queue[q]]; e < P->rptr[W->queue[q] + 1]; e++)
            if (colpos[P->col[e]] < 0) {
                colpos[P->col[e]] = nc;
                cols[nc++] = P->col[e];
            }
    if (nc == 0) return;
    /* R = V'dp/dz (nn x nc), G = R R' */
    double *R = emn_xcalloc((size_t)nn * nc, sizeof(double));
    double G[EMN_NULL_MAX * EMN_NULL_MAX], e[EMN_NULL_MAX], c[EMN_NULL_MAX * EMN_NULL_MAX];
    for (int a = 0; a < nn; a++) {
        const double *v = W->v + (size_t)null[a] * m;
        for (int q = 0; q < m; q++)
            for (int x = P->rptr[W->queue[q]]; x < P->rptr[W->queue[q] + 1]; x++)
                R[(size_t)a * nc + colpos[P->col[x]]] += v[q] * P->val[x];
    }
    for (int x = 0; x < nc; x++) colpos[cols[x]] = -1;
    for (int a = 0; a < nn; a++)
        for (int b = 0; b < nn; b++) {
            double sum = 0;
            for (int x = 0; x < nc; x++) sum += R[(size_t)a * nc + x] * R[(size_t)b * nc + x];
            G[a * nn + b] = sum;
        }
    free(R);
    emn_sym_eigen(G, nn, e, c);
    double top = 0;
    for (int a = 0; a < nn; a++) top = fmax(top, fabs(e[a]));
    /* the new vectors: V c for each eigenvector c of G, free ones first */
    double U[EMN_NULL_MAX * EMN_NULL_MAX];
    int order[EMN_NULL_MAX], no = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int a = 0; a < nn; a++)
            if ((fabs(e[a]) <= 1e-12 * top) == (pass == 0)) order[no++] = a;
    for (int b = 0; b < nn; b++) {
        const double *cb = c + (size_t)order[b] * nn;
        for (int q = 0; q < m; q++) {
            double sum = 0;
            for (int a = 0; a < nn; a++) sum += cb[a] * W->v[(size_t)null[a] * m + q];
            /* (of unit length: what the rounding leaves where a free
             * vector has nothing would read the values to reads_values) */
            U[b * m + q] = fabs(sum) > 1e-12 ? sum : 0;
        }
    }
    for (int b = 0; b < nn; b++) {
        memcpy(W->v + (size_t)null[b] * m, U + (size_t)b * m, (size_t)m * sizeof(double));
        W->d[null[b]] = fabs(e[order[b]]) <= 1e-12 * top ? 0 : W->top;
    }
}

/* Scratch for reads_values: n + 1 long each, acc and mag zero between
 * calls. */
typedef struct zread_ws {
    double *acc, *mag;
    int *touched;
} zread_ws;

/* Whether u'dp/dz != 0 beyond the rounding of its terms, u being u[q] on
 * coordinate idx[q], q < m: a combination of momenta that the
 * coordinates change.  Only where it does not is a null vector u of
 * dp/dw's balance u'F zero at every instant.  Where a moving coil's loop
 * has no inductance of its own (charge formulation), a combination of
 * loops through it holds T x, and u'F = T v: null_history, solving u'F
 * = 0 at every step, slowed the cone of a coil that shares an inductor
 * with a resistor's loop to 0.67 of its speed. */
static bool reads_values(const emn_integ *it, const int *idx, const double *u, int m, zread_ws *ws)
{
    const emn_cmat *P = &it->f->lin[0];
    if (P->nrows == 0) return false;
    int nt = 0;
    for (int q = 0; q < m; q++) {
        int i = idx[q];
        for (int e = P->rptr[i]; e < P->rptr[i + 1]; e++) {
            int c = P->col[e];
            if (ws->mag[c] == 0) ws->touched[nt++] = c;
            ws->acc[c] += u[q] * P->val[e];
            ws->mag[c] += fabs(u[q] * P->val[e]);
        }
    }
    bool reads = false;
    for (int t = 0; t < nt; t++) {
        int c = ws->touched[t];
        reads = reads || fabs(ws->acc[c]) > 64 * DBL_EPSILON * ws->mag[c];
        ws->acc[c] = ws->mag[c] = 0;
    }
    return reads;
}

static zread_ws zread_new(int n)
{
    zread_ws ws = {emn_xcalloc((size_t)n + 1, sizeof(double)), emn_xcalloc((size_t)n + 1, sizeof(double)),
                   emn_xmalloc(((size_t)n + 1) * sizeof(int))};
    return ws;
}

static void zread_free(zread_ws *ws)
{
    free(ws->acc); free(ws->mag); free(ws->touched);
}

/* The null spaces of a linear circuit's dp/dw, for null_history: each
 * connected block of it of at most EMN_NULL_MAX coordinates, with the
 * eigenvectors whose eigenvalues are below 1e-10 of its largest (an
 * exactly singular block's come out at some eps of it; an inductance
 * 1e-10 of another coupled to it would be taken for none).  A block
 * whose null vector is one of +-1 (sv: capacitors that nothing ties to
 * ground, in the flux formulation) is left to kernel_setup, whose groups
 * also take the resistive nodes beside it (or, where the coordinates
 * change its momentum, to the rule alone: reads_values), unless nothing
 * damps it: a constraint u'F(z, t) = 0 (kernel_rows_setup), which each
 * step solves afresh here, as the constant-momentum rows their own. */
static void null_setup(emn_integ *it, const sign_vectors *sv, bool only_constraints)
{
    int n = it->n;
    block_walk W;
    walk_init(&W, &it->f->lin[1], n);
    bool *mark = W.mark;
    zread_ws ws = zread_new(n);
    /* kernel_setup's blocks, but for the constraints of
     * kernel_rows_setup (which kernel_setup, with nothing to damp them,
     * does not take): no search */
    for (int k = 0; k < sv->n; k++)
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) mark[sv->idx[q]] = true;
    for (int j = 0; j < n && only_constraints; j++) mark[j] = true;
    for (int k = 0; k < it->nkrow; k++)
        for (int q = it->jptr[k]; q < it->jptr[k + 1] && it->jcon[k]; q++) mark[it->jidx[q]] = false;
    size_t cap_b = 16, cap_i = 64, cap_v = 256, nv = 0;
    int ni = 0;
    it->nptr = emn_xmalloc((cap_b + 1) * sizeof(int));
    it->nk = emn_xmalloc(cap_b * sizeof(int));
    it->nvoff = emn_xmalloc(cap_b * sizeof(size_t));
    it->nidx = emn_xmalloc(cap_i * sizeof(int));
    it->nvec = emn_xmalloc(cap_v * sizeof(double));
    it->nptr[0] = 0;
    int *colpos = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *cols = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int j = 0; j < n; j++) colpos[j] = -1;
    while (walk_next(&W)) {
        int m = W.m;
        int k = 0;
        free_nulls(it, &W, colpos, cols);
        for (int i = 0; i < m; i++) {
            const double *v = W.v + (size_t)i * m;
            if (!(fabs(W.d[i]) <= 1e-10 * W.top) || reads_values(it, W.queue, v, m, &ws)) continue;
            if (nv + (size_t)m > cap_v) {
                while (nv + (size_t)m > cap_v) cap_v *= 2;
                it->nvec = emn_xrealloc(it->nvec, cap_v * sizeof(double));
            }
            if (k == 0) it->nvoff[it->nnull] = nv;
            memcpy(it->nvec + nv, v, (size_t)m * sizeof(double));
            nv += (size_t)m;
            k++;
        }
        if (k == 0) continue;
        if ((size_t)ni + (size_t)m > cap_i) {
            while ((size_t)ni + (size_t)m > cap_i) cap_i *= 2;
            it->nidx = emn_xrealloc(it->nidx, cap_i * sizeof(int));
        }
        memcpy(it->nidx + ni, W.queue, (size_t)m * sizeof(int));
        ni += m;
        it->nk[it->nnull] = k;
        it->nptr[++it->nnull] = ni;
        if ((size_t)it->nnull == cap_b) {
            cap_b *= 2;
            it->nptr = emn_xrealloc(it->nptr, (cap_b + 1) * sizeof(int));
            it->nk = emn_xrealloc(it->nk, cap_b * sizeof(int));
            it->nvoff = emn_xrealloc(it->nvoff, cap_b * sizeof(size_t));
        }
    }
    walk_free(&W);
    zread_free(&ws);
    free(colpos); free(cols);
}

/* M by columns: column c's rows cr[e] and values cv[e], e in [cp[c],
 * cp[c + 1]). */
typedef struct col_mat {
    int *cp, *cr;
    double *cv;
} col_mat;

static col_mat by_columns(const emn_cmat *M, int n)
{
    col_mat C = {emn_xcalloc((size_t)n + 2, sizeof(int)), emn_xmalloc((size_t)M->nnz * sizeof(int) + 1),
                 emn_xmalloc((size_t)M->nnz * sizeof(double) + 1)};
    for (int e = 0; e < M->nnz; e++) C.cp[M->col[e] + 2]++;
    for (int j = 0; j < n; j++) C.cp[j + 2] += C.cp[j + 1];
    for (int r = 0; r < M->nrows; r++) {
        int i = M->rows[r];
        for (int e = M->rptr[i]; e < M->rptr[i + 1]; e++) {
            int at = C.cp[M->col[e] + 1]++;
            C.cr[at] = i;
            C.cv[at] = M->val[e];
        }
    }
    return C;
}

/* The null vectors of a linear circuit's dp/dw, for kernel_rates, in
 * groups: a vector u, the velocities without inertia (nodes that only
 * resistors and sources meet) that D = dF/dw joins to it, and the other
 * vectors D joins to it, directly or through each other.  Moving u
 * changes the balance of those nodes and vectors too, so they move with
 * it, and the group's move solves E'D E x = -E'F, E the group's
 * directions (its vectors, then e_j of its nodes): all groups' blocks
 * factored once together (one emn_lu).  A group is dropped where it
 * would take more than EMN_KERN_MAX directions (a resistive grid: its
 * nodes are tested as before), where D reaches a vector or node of a
 * group kept before it (D not symmetric), or where E'D E is singular
 * (u undamped: its values set it).  Moving u alone beside such a node
 * put the move into that node's balance, which then alternated: a
 * floating capacitor between resistive nodes took 98071 steps instead
 * of 747; and a vector moved alone beside another, a resistor between
 * them, alternated in the other's balance (random circuit 106 of
 * tests/random.sh: two capacitors in series floating beside a third,
 * which stopped the flux formulation at 2.6 ns). */
static void kernel_setup(emn_integ *it, const sign_vectors *sv)
{
    emn_form *f = it->f;
    int n = it->n, nv = sv->n;
    const int *vptr = sv->ptr, *vidx = sv->idx;
    const signed char *vsg = sv->sign;
    if (nv == 0) return;
    col_mat DC = by_columns(&f->lin[3], n);       /* D */
    int *cp = DC.cp, *cr = DC.cr;
    double *cv = DC.cv;
    /* comp: the vector holding a coordinate; vown and nown: the group
     * (by its first vector) that took a vector or a node, -1 */
    int *comp = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *nown = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    int *vown = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    int *pos = emn_xmalloc(((size_t)n + 1) * sizeof(int));      /* direction of a group's coordinate, -1 */
    signed char *psg = emn_xcalloc((size_t)n + 1, 1);             /* and its sign there */
    double *acc = emn_xcalloc((size_t)n + 1, sizeof(double));
    int *touched = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *seen = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    int stamp = 0;
    for (int j = 0; j < n; j++) comp[j] = nown[j] = pos[j] = seen[j] = -1;
    for (int k = 0; k < nv; k++) {
        vown[k] = -1;
        for (int q = vptr[k]; q < vptr[k + 1]; q++) comp[vidx[q]] = k;
    }
    /* the kept groups, grown as found; every coordinate is in at most
     * one direction, so there are at most n directions and entries */
    size_t cap_d = 64, cap_a = 64, nd = 0, nda = 0;
    it->kptr = emn_xmalloc(((size_t)n + 2) * sizeof(int));
    it->kidx = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    it->ksign = emn_xmalloc((size_t)n + 1);
    it->gdir = emn_xmalloc(((size_t)nv + 2) * sizeof(int));
    it->kvec = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    int *boff = emn_xmalloc(((size_t)nv + 1) * sizeof(int)), *bdim = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    it->dptr = emn_xmalloc(((size_t)n + 2) * sizeof(int));
    it->drow = emn_xmalloc(cap_d * sizeof(int));
    it->dval = emn_xmalloc(cap_d * sizeof(double));
    double *blk = emn_xmalloc(cap_a * sizeof(double));      /* the kept groups' E'D E */
    int g = 0, nq = 0, ndir = 0;
    it->kptr[0] = it->gdir[0] = it->dptr[0] = 0;
    for (int k = 0; k < nv; k++) {
        if (vown[k] >= 0) continue;     /* in an earlier vector's group */
        /* the group's directions as found: a vector k' as k', a node j
         * as -1 - j */
        int dir[EMN_KERN_MAX + 1], m = 0;
        bool ok = true;
        dir[m++] = k;
        vown[k] = k;
        for (int d = 0; d < m && ok; d++) {
            int q0 = dir[d] >= 0 ? vptr[dir[d]] : 0, q1 = dir[d] >= 0 ? vptr[dir[d] + 1] : 1;
            for (int q = q0; q < q1 && ok; q++) {
                int c = dir[d] >= 0 ? vidx[q] : -1 - dir[d];
                for (int e = cp[c]; e < cp[c + 1] && ok; e++) {
                    int j = cr[e], v = comp[j];
                    if (v >= 0 ? vown[v] == k : it->inertia[j] || nown[j] == k) continue;
                    if ((v >= 0 ? vown[v] : nown[j]) >= 0 || m == EMN_KERN_MAX + 1) {
                        ok = false;
                    } else if (v >= 0) {
                        vown[v] = k;
                        dir[m++] = v;
                    } else {
                        nown[j] = k;
                        dir[m++] = -1 - j;
                    }
                }
            }
        }
        /* vectors first, in the order found, then nodes */
        int nvec = 0;
        for (int d = 0; d < m && ok; d++)
            if (dir[d] >= 0) {
                int v = dir[d];
                memmove(dir + nvec + 1, dir + nvec, (size_t)(d - nvec) * sizeof(int));
                dir[nvec++] = v;
            }
        double A[(EMN_KERN_MAX + 1) * (EMN_KERN_MAX + 1)];
        size_t d0 = nd;
        int q00 = nq;
        if (ok) {
            for (int d = 0; d < m; d++) {
                int q0 = dir[d] >= 0 ? vptr[dir[d]] : 0, q1 = dir[d] >= 0 ? vptr[dir[d] + 1] : 1;
                for (int q = q0; q < q1; q++) {
                    int c = dir[d] >= 0 ? vidx[q] : -1 - dir[d];
                    pos[c] = d;
                    psg[c] = dir[d] >= 0 ? vsg[q] : 1;
                    it->kidx[nq] = c;
                    it->ksign[nq++] = psg[c];
                }
                it->kptr[ndir + d + 1] = nq;
            }
            for (int d = 0; d < m; d++) {
                /* D's column of direction d, summed into acc */
                stamp++;
                int nt = 0;
                for (int q = it->kptr[ndir + d]; q < it->kptr[ndir + d + 1]; q++) {
                    int c = it->kidx[q];
                    for (int e = cp[c]; e < cp[c + 1]; e++) {
                        if (seen[cr[e]] != stamp) {
                            seen[cr[e]] = stamp;
                            touched[nt++] = cr[e];
                        }
                        acc[cr[e]] += it->ksign[q] * cv[e];
                    }
                }
                for (int r = 0; r < m; r++) A[r * m + d] = 0;
                if (nd + (size_t)nt + 1 > cap_d) {
                    while (nd + (size_t)nt + 1 > cap_d) cap_d *= 2;
                    it->drow = emn_xrealloc(it->drow, cap_d * sizeof(int));
                    it->dval = emn_xrealloc(it->dval, cap_d * sizeof(double));
                }
                for (int t = 0; t < nt; t++) {
                    int j = touched[t];
                    double v = acc[j];
                    acc[j] = 0;
                    if (pos[j] >= 0) A[pos[j] * m + d] += psg[j] * v;
                    it->drow[nd] = j;
                    it->dval[nd++] = v;
                }
                it->dptr[ndir + d + 1] = (int)nd;
            }
            for (int q = q00; q < nq; q++) pos[it->kidx[q]] = -1;
            emn_sparse B;
            int zero = 0;
            blocks_sparse(&B, m, 1, &zero, &m, A, &zero);
            emn_lu *lu = emn_lu_new();
            ok = emn_lu_factor(lu, &B, NULL) == 0;
            emn_lu_free(&lu);
            emn_sparse_free(&B);
        }
        if (!ok) {
            /* give back what it took (a later vector's own group may
             * take it again) */
            for (int d = 0; d < m; d++) {
                if (dir[d] >= 0) vown[dir[d]] = -1;
                else nown[-1 - dir[d]] = -1;
            }
            nd = d0;
            nq = q00;
            continue;
        }
        /* keep it */
        it->kvec[g] = nvec;
        ndir += m;
        if (nda + (size_t)(m * m) > cap_a) {
            while (nda + (size_t)(m * m) > cap_a) cap_a *= 2;
            blk = emn_xrealloc(blk, cap_a * sizeof(double));
        }
        boff[g] = (int)nda;
        bdim[g] = m;
        memcpy(blk + nda, A, (size_t)(m * m) * sizeof(double));
        nda += (size_t)(m * m);
        it->gdir[++g] = ndir;
    }
    it->nkern = g;
    if (g > 0) {
        blocks_sparse(&it->kA, ndir, g, it->gdir, bdim, blk, boff);
        it->klu = emn_lu_new();
        if (emn_lu_factor(it->klu, &it->kA, NULL) < 0) it->nkern = 0;      /* each block factored alone */
        it->kx = emn_xcalloc((size_t)ndir + 1, sizeof(double));
        it->kmove = emn_xcalloc((size_t)g + 1, sizeof(bool));
    }
    free(blk); free(boff); free(bdim);
    free(seen); free(touched); free(acc); free(psg); free(pos); free(vown); free(nown); free(comp);
    free(cp); free(cr); free(cv);
}

/* A sparse vector being summed: its values and the sum of |terms| by
 * index, and the indices reached. */
typedef struct sum_vec {
    double *v, *mag;
    bool *seen;
    int *idx, n;
} sum_vec;

static void sum_init(sum_vec *x, int n)
{
    x->v = emn_xcalloc((size_t)n + 1, sizeof(double));
    x->mag = emn_xcalloc((size_t)n + 1, sizeof(double));
    x->seen = emn_xcalloc((size_t)n + 1, sizeof(bool));
    x->idx = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    x->n = 0;
}

static void sum_add(sum_vec *x, int i, double d)
{
    if (!x->seen[i]) {
        x->seen[i] = true;
        x->idx[x->n++] = i;
    }
    x->v[i] += d;
    x->mag[i] += fabs(d);
}

/* Entry i, or 0 where its terms cancel to their rounding (as
 * emn_form_mass_kernel's test of dp/dw u = 0). */
static double sum_at(const sum_vec *x, int i)
{
    return fabs(x->v[i]) <= 64 * DBL_EPSILON * x->mag[i] ? 0 : x->v[i];
}

static bool sum_zero(const sum_vec *x)
{
    for (int t = 0; t < x->n; t++)
        if (sum_at(x, x->idx[t]) != 0) return false;
    return true;
}

static void sum_clear(sum_vec *x)
{
    for (int t = 0; t < x->n; t++) {
        int i = x->idx[t];
        x->v[i] = x->mag[i] = 0;
        x->seen[i] = false;
    }
    x->n = 0;
}

static void sum_free(sum_vec *x)
{
    free(x->v); free(x->mag); free(x->seen); free(x->idx);
}

/* u'M into rows (rows of M summed), and M u into cols, u vector k of sv. */
static void combine(const emn_cmat *M, const col_mat *C, const sign_vectors *sv, int k, sum_vec *rows, sum_vec *cols)
{
    for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) {
        int i = sv->idx[q];
        for (int e = M->rptr[i]; e < M->rptr[i + 1]; e++) sum_add(rows, M->col[e], sv->sign[q] * M->val[e]);
        for (int e = C->cp[i]; e < C->cp[i + 1]; e++) sum_add(cols, C->cr[e], sv->sign[q] * C->cv[e]);
    }
}

/* Appends vector k of sv to out, whose entries so far end at *at. */
static void sv_append(sign_vectors *out, const sign_vectors *sv, int k, int *at)
{
    for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) {
        out->idx[*at] = sv->idx[q];
        out->sign[(*at)++] = sv->sign[q];
    }
    out->ptr[++out->n] = *at;
}

/* The null vectors of sv whose momentum the coordinates do not change
 * (reads_values), in out: kernel_setup's. */
static void still_vectors(const emn_integ *it, const sign_vectors *sv, sign_vectors *out)
{
    int n = it->n, at = 0;
    zread_ws ws = zread_new(n);
    double *u = emn_xmalloc(((size_t)n + 1) * sizeof(double));
    out->n = 0;
    out->ptr[0] = 0;
    for (int k = 0; k < sv->n; k++) {
        int q0 = sv->ptr[k], m = sv->ptr[k + 1] - q0;
        for (int q = 0; q < m; q++) u[q] = sv->sign[q0 + q];
        if (!reads_values(it, sv->idx + q0, u, m, &ws)) sv_append(out, sv, k, &at);
    }
    free(u);
    zread_free(&ws);
}

/* The null vectors of dp/dw for kernel_rows_setup, where one, with the
 * velocities without inertia and the other vectors that D = dF/dw joins
 * to it, makes a vector that nothing damps: D s = 0 over the whole set
 * (flux formulation: a capacitor's nodes and the resistors between them
 * and the nodes beside them, which only inductors and current sources
 * leave).  That vector's balance s'F(z, t) = 0 is then a constraint on
 * the coordinates along s, which a vector alone, damped by the
 * resistors inside the set, did not show: a current source through R ||
 * (C + R) into an inductor stopped the flux formulation at 0.26 ms, the
 * set's common motion alternating with nothing to hold it.  A vector
 * whose set is damped, or that would take more than EMN_NULL_MAX
 * coordinates, is passed on alone.  Signs follow D's off-diagonal
 * entries (equal for a positive one, as a resistor's between two nodes
 * is in dF/dw). */
static void undamped_vectors(const emn_integ *it, const sign_vectors *sv, sign_vectors *out)
{
    const emn_cmat *D = &it->f->lin[3];
    int n = it->n, nv = sv->n;
    col_mat DC = by_columns(D, n);
    int *comp = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *set = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    signed char *csg = emn_xcalloc((size_t)n + 1, 1), *s = emn_xcalloc((size_t)n + 1, 1);
    bool *used = emn_xcalloc((size_t)nv + 1, sizeof(bool)), *in = emn_xcalloc((size_t)nv + 1, sizeof(bool));
    int *took = emn_xmalloc(((size_t)nv + 1) * sizeof(int));       /* the vectors in[] holds */
    for (int j = 0; j < n; j++) comp[j] = -1;
    for (int k = 0; k < nv; k++)
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) {
            comp[sv->idx[q]] = k;
            csg[sv->idx[q]] = sv->sign[q];
        }
    int at = 0;
    out->n = 0;
    out->ptr[0] = 0;
    for (int k = 0; k < nv; k++) {
        if (used[k]) continue;
        int m = 0, nin = 0;
        bool ok = true, grown = false;
        in[k] = true;
        took[nin++] = k;
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) {
            s[sv->idx[q]] = sv->sign[q];
            set[m++] = sv->idx[q];
        }
        for (int h = 0; h < m && ok; h++) {
            int i = set[h];
            /* D's row and column of i: a resistor's entries are in both */
            for (int side = 0; side < 2 && ok; side++) {
                int e0 = side ? DC.cp[i] : D->rptr[i], e1 = side ? DC.cp[i + 1] : D->rptr[i + 1];
                for (int e = e0; e < e1 && ok; e++) {
                    int c = side ? DC.cr[e] : D->col[e];
                    double v = side ? DC.cv[e] : D->val[e];
                    if (c == i || v == 0) continue;
                    signed char want = v > 0 ? s[i] : -s[i];
                    if (s[c]) {
                        ok = s[c] == want;
                    } else if (comp[c] >= 0) {
                        int kk = comp[c];
                        signed char fct = (signed char)(want * csg[c]);
                        ok = !used[kk] && m + (sv->ptr[kk + 1] - sv->ptr[kk]) <= EMN_NULL_MAX;
                        for (int q = sv->ptr[kk]; q < sv->ptr[kk + 1] && ok; q++) {
                            s[sv->idx[q]] = (signed char)(fct * sv->sign[q]);
                            set[m++] = sv->idx[q];
                        }
                        in[kk] = true;
                        took[nin++] = kk;
                        grown = true;
                    } else if (!it->inertia[c] && m < EMN_NULL_MAX) {
                        s[c] = want;
                        set[m++] = c;
                        grown = true;
                    } else {
                        ok = false;     /* an inertial coordinate damps it, or too large */
                    }
                }
            }
        }
        /* D s = 0 on every row the set reaches */
        for (int h = 0; h < m && ok && grown; h++) ok = emn_cmat_row_cancels(D, set[h], s);
        if (ok && grown) {
            for (int h = 0; h < m; h++) {
                out->idx[at] = set[h];
                out->sign[at++] = s[set[h]];
            }
            out->ptr[++out->n] = at;
            for (int t = 0; t < nin; t++) used[took[t]] = true;
        } else {
            sv_append(out, sv, k, &at);
            used[k] = true;
        }
        for (int h = 0; h < m; h++) s[set[h]] = 0;
        for (int t = 0; t < nin; t++) in[took[t]] = false;
    }
    free(comp); free(set); free(csg); free(s); free(used); free(in); free(took);
    free(DC.cp); free(DC.cr); free(DC.cv);
}

/* The start's Newton matrix, a dp/dw + dp/dz - dF/dw - dF/dz / a at a =
 * 1e9 / hmax (consistent_w), along a null vector u of dp/dw
 * (emn_form_mass_kernel: capacitors that nothing ties to ground, flux
 * formulation): u' times it is -u'dF/dw - u'dF/dz / a, but each row
 * holds a C of size a, which cancel in the sum, and so does a u'p in its
 * right-hand side.  What is left is rounding of a |p| in the balance
 * u'F: node voltages 0.02 V off behind a 10 kOhm resistor, next to
 * capacitors at 947 V (random deck r454, at a corner of a PULSE), and
 * random deck r493 stopped at reltol 1e-5.  Where nothing damps u
 * (u'dF/dw = 0) the pivot a C - a C + 1 / (a L) rounds to zero and the
 * start fails: a current source through a capacitor and an inductor in
 * series.  So the start solves for u as one unknown, in place of one
 * coordinate r of it: w = T x, T the identity but for its column r, u.
 * T' J T is J but for row and column r, u'J and J u, and u'J u where they
 * meet, each made from dF/dw and dF/dz alone (dp/dw u = 0), as symmetric
 * as J is; where nothing damps u, row and column r are times a, to the
 * size of the rest.  The right-hand side's row r is u' times the
 * residual without u'p.  Undamped, u'F(z, t) = 0 is a constraint on the
 * coordinates along u (u'dF/dz u != 0), which jump at the start to meet
 * it (alg_start), and the steps' matrices, whose pivot along u is a C - a
 * C + 1 / (a L) too, take the same unknown (newton_lu).  Only where J's
 * pattern holds row and column r's entries, where u'dp/dz = dp/dz u = 0
 * (a linear term's momenta read velocities alone), and where no
 * nonlinear term reads or drives a coordinate of u. */
static void kernel_rows_setup(emn_integ *it, const sign_vectors *sv)
{
    emn_form *f = it->f;
    const emn_sparse *J = &f->J;
    int n = it->n, nv = sv->n;
    if (nv == 0) return;
    col_mat C0 = by_columns(&f->lin[0], n), CK = by_columns(&f->lin[2], n), CD = by_columns(&f->lin[3], n);
    sum_vec uP, Pu, uD, Du, uK, Ku;
    sum_init(&uP, n); sum_init(&Pu, n); sum_init(&uD, n); sum_init(&Du, n); sum_init(&uK, n); sum_init(&Ku, n);
    int *is_row = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int j = 0; j < n; j++) is_row[j] = -1;
    size_t cap_e = 64, ne = 0;
    it->jptr = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    it->jidx = emn_xmalloc(((size_t)sv->ptr[nv] + 1) * sizeof(int));
    it->jsign = emn_xmalloc((size_t)sv->ptr[nv] + 1);
    it->jrow = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    it->jcon = emn_xcalloc((size_t)nv + 1, sizeof(bool));
    it->jdslot = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    it->jdd = emn_xmalloc(((size_t)nv + 1) * sizeof(double));
    it->jdk = emn_xmalloc(((size_t)nv + 1) * sizeof(double));
    it->jeptr = emn_xmalloc(((size_t)nv + 1) * sizeof(int));
    it->jslot = emn_xmalloc(cap_e * sizeof(int));
    it->jvd = emn_xmalloc(cap_e * sizeof(double));
    it->jvk = emn_xmalloc(cap_e * sizeof(double));
    it->jc0 = emn_xcalloc((size_t)nv + 1, sizeof(double));
    size_t cap_g = 16;
    it->jgptr = emn_xcalloc((size_t)nv + 2, sizeof(int));
    it->jgcol = emn_xmalloc(cap_g * sizeof(int));
    it->jgval = emn_xmalloc(cap_g * sizeof(double));
    /* the coordinates a nonlinear term reads or drives: a vector on one
     * of them is left out (its rows of J are not the linear parts') */
    bool *nlc = emn_xcalloc((size_t)n + 1, sizeof(bool));
    for (int i = 0; i < f->nnonlinear; i++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[i]];
        for (int a = 0; a < tm->m; a++) {
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < m->nc; q++) nlc[emn_lmap_ci(m)[q]] = true;
        }
    }
    /* each coordinate's vector, or -1 */
    int *comp = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int j = 0; j < n; j++) comp[j] = -1;
    for (int k = 0; k < nv; k++)
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) comp[sv->idx[q]] = k;
    int nj = 0, nq = 0;
    it->jptr[0] = it->jeptr[0] = 0;
    for (int k = 0; k < nv; k++) {
        bool linear = true;
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) linear = linear && !nlc[sv->idx[q]];
        if (!linear) continue;
        combine(&f->lin[0], &C0, sv, k, &uP, &Pu);
        combine(&f->lin[3], &CD, sv, k, &uD, &Du);
        combine(&f->lin[2], &CK, sv, k, &uK, &Ku);
        double udu = 0, uku = 0, uk_mag = 0;
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) {
            udu += sv->sign[q] * sum_at(&uD, sv->idx[q]);
            uku += sv->sign[q] * uK.v[sv->idx[q]];
            uk_mag += uK.mag[sv->idx[q]];
        }
        bool damped = !sum_zero(&uD) || !sum_zero(&Du);
        bool ok = sum_zero(&uP) && sum_zero(&Pu) && (damped || fabs(uku) > 64 * DBL_EPSILON * uk_mag);
        /* nor where dF/dw or dF/dz joins u to another vector: T' J T's
         * entry between the two would be u'J v, which neither row nor
         * column makes (kernel_setup drops such groups too) */
        const sum_vec *all[4] = {&uD, &uK, &Du, &Ku};
        for (int x = 0; x < 4 && ok; x++)
            for (int t = 0; t < all[x]->n && ok; t++) {
                int c = all[x]->idx[t];
                ok = comp[c] < 0 || comp[c] == k || sum_at(all[x], c) == 0;
            }
        /* r: a coordinate of u whose row and column in J hold every
         * entry of u'J and J u */
        int row = -1;
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1] && ok && row < 0; q++) {
            int r = sv->idx[q];
            bool holds = emn_sparse_find(J, r, r) >= 0;
            for (int t = 0; t < uD.n && holds; t++) holds = emn_sparse_find(J, r, uD.idx[t]) >= 0;
            for (int t = 0; t < uK.n && holds; t++) holds = emn_sparse_find(J, r, uK.idx[t]) >= 0;
            for (int t = 0; t < Du.n && holds; t++) holds = emn_sparse_find(J, Du.idx[t], r) >= 0;
            for (int t = 0; t < Ku.n && holds; t++) holds = emn_sparse_find(J, Ku.idx[t], r) >= 0;
            if (holds) row = r;
        }
        if (row >= 0) {
            size_t need = (size_t)(uD.n + uK.n + Du.n + Ku.n);
            if (ne + need > cap_e) {
                while (ne + need > cap_e) cap_e *= 2;
                it->jslot = emn_xrealloc(it->jslot, cap_e * sizeof(int));
                it->jvd = emn_xrealloc(it->jvd, cap_e * sizeof(double));
                it->jvk = emn_xrealloc(it->jvk, cap_e * sizeof(double));
            }
            /* row r off the diagonal: u'D and u'K over their columns,
             * each once; then column r: D u and K u over their rows */
            for (int side = 0; side < 2; side++) {
                sum_vec *d = side ? &Du : &uD, *kk = side ? &Ku : &uK;
                for (int pass = 0; pass < 2; pass++) {
                    const sum_vec *x = pass ? kk : d;
                    for (int t = 0; t < x->n; t++) {
                        int c = x->idx[t];
                        if (c == row || (pass == 1 && d->seen[c])) continue;
                        double vd = sum_at(d, c), vk = sum_at(kk, c);
                        if (vd == 0 && vk == 0) continue;
                        it->jslot[ne] = side ? emn_sparse_find(J, c, row) : emn_sparse_find(J, row, c);
                        it->jvd[ne] = vd;
                        it->jvk[ne++] = vk;
                    }
                }
            }
            it->jdslot[nj] = emn_sparse_find(J, row, row);
            it->jdd[nj] = udu;
            it->jdk[nj] = uku;
            for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++) {
                it->jidx[nq] = sv->idx[q];
                it->jsign[nq++] = sv->sign[q];
            }
            it->jcon[nj] = !damped;
            it->njcon += !damped;
            /* a constraint's whole row u'dF/dz, for constraint_rates */
            if (!damped) {
                if ((size_t)it->jgptr[nj] + (size_t)uK.n > cap_g) {
                    while ((size_t)it->jgptr[nj] + (size_t)uK.n > cap_g) cap_g *= 2;
                    it->jgcol = emn_xrealloc(it->jgcol, cap_g * sizeof(int));
                    it->jgval = emn_xrealloc(it->jgval, cap_g * sizeof(double));
                }
                int g = it->jgptr[nj];
                for (int t = 0; t < uK.n; t++) {
                    double v = sum_at(&uK, uK.idx[t]);
                    if (v == 0) continue;
                    it->jgcol[g] = uK.idx[t];
                    it->jgval[g++] = v;
                }
                it->jgptr[nj + 1] = g;
            } else {
                it->jgptr[nj + 1] = it->jgptr[nj];
            }
            is_row[row] = nj;
            it->jrow[nj++] = row;
            it->jptr[nj] = nq;
            it->jeptr[nj] = (int)ne;
        }
        sum_clear(&uP); sum_clear(&Pu); sum_clear(&uD); sum_clear(&Du); sum_clear(&uK); sum_clear(&Ku);
    }
    it->nkrow = nj;
    /* each r's row and column slots in J, zeroed first */
    it->jzptr = emn_xcalloc((size_t)nj + 2, sizeof(int));
    for (int pass = 0; pass < 2 && nj > 0; pass++) {
        for (int c = 0; c < n; c++)
            for (int q = J->Ap[c]; q < J->Ap[c + 1]; q++) {
                int k = is_row[J->Ai[q]] >= 0 ? is_row[J->Ai[q]] : is_row[c];
                if (k < 0) continue;
                if (pass == 0) it->jzptr[k + 2]++;
                else it->jzero[it->jzptr[k + 1]++] = q;
            }
        if (pass == 0) {
            for (int k = 0; k < nj; k++) it->jzptr[k + 2] += it->jzptr[k + 1];
            it->jzero = emn_xmalloc(((size_t)it->jzptr[nj + 1] + 1) * sizeof(int));
        }
    }
    sum_free(&uP); sum_free(&Pu); sum_free(&uD); sum_free(&Du); sum_free(&uK); sum_free(&Ku);
    col_mat *cm[3] = {&C0, &CK, &CD};
    for (int q = 0; q < 3; q++) {
        free(cm[q]->cp); free(cm[q]->cr); free(cm[q]->cv);
    }
    free(is_row);
    free(nlc);
    free(comp);
}

static void rounding_setup(emn_integ *it, const sign_vectors *sv);

emn_integ *emn_integ_new(emn_form *f, const emn_integ_opts *o)
{
    emn_integ *it = emn_xcalloc(1, sizeof *it);
    it->f = f;
    it->o = *o;
    if (!(it->o.trtol > 0)) it->o.trtol = 1;
    int n = it->n = f->n;
    size_t sz = (size_t)n + 1;
    it->halves = emn_xcalloc(1, sizeof *it->halves);
    it->halves->mid = f->lin_mid;
    it->halves->n = n;
    for (int k = 0; k < 3; k++) {
        it->z[k] = emn_xcalloc(sz, sizeof(double));
        it->w[k] = emn_xcalloc(sz, sizeof(double));
        it->p[k] = emn_xcalloc(sz, sizeof(double));
        it->F[k] = emn_xcalloc(sz, sizeof(double));
        it->Sh[k] = emn_xcalloc((size_t)f->nsrc + 1, sizeof(double));
        it->sh[k] = emn_xcalloc((size_t)f->nsrc + 1, sizeof(double));
    }
    it->dw = emn_xcalloc(sz, sizeof(double));
    it->scale = emn_xcalloc(sz, sizeof(double));
    it->wtry = emn_xcalloc(sz, sizeof(double));
    it->ztry = emn_xcalloc(sz, sizeof(double));
    it->ptry = emn_xcalloc(sz, sizeof(double));
    it->Ftry = emn_xcalloc(sz, sizeof(double));
    it->Shist = emn_xcalloc((size_t)f->nsrc + 1, sizeof(double));
    it->rsrc = emn_xmalloc(((size_t)f->nsrc + 1) * sizeof(int));
    for (int l = 0; l < f->nlive; l++)       /* a constant 0 (an ammeter) integrates to 0 */
        if (emn_form_integral_ruled(f, f->live_src[l])) it->rsrc[it->nrsrc++] = f->live_src[l];
    it->hz = emn_xcalloc(sz, sizeof(double));
    it->w_right = emn_xcalloc(sz, sizeof(double));
    it->F_right = emn_xcalloc(sz, sizeof(double));
    it->hp = emn_xcalloc(sz, sizeof(double));
    it->peak = emn_xcalloc(6 * ((size_t)(n - f->ne) + 1), sizeof(double));
    it->fz_diag = emn_xcalloc(sz, sizeof(double));
    it->fw_diag = emn_xcalloc(sz, sizeof(double));
    for (int j = 0; j < n; j++) {
        it->fz_diag[j] = fabs(emn_cmat_entry(&f->lin[2], j, j));
        it->fw_diag[j] = fabs(emn_cmat_entry(&f->lin[3], j, j));
    }
    it->zused = emn_xcalloc(sz, sizeof(bool));
    emn_form_z_used(f, it->zused);
    it->src_next = emn_xcalloc((size_t)f->nsrc + 1, sizeof(double));
    it->inertia = emn_xcalloc(sz, sizeof(bool));
    emn_form_inertia(f, it->inertia);
    /* still_followers' coordinates: without inertia, and damped towards
     * another mechanical one, or undamped and held by springs to one */
    it->follow = emn_xcalloc((size_t)(n - f->ne) + 1, sizeof(int));
    for (int j = f->ne; j < n; j++) {
        const emn_cmat *M = &f->lin[it->fw_diag[j] > 0 ? 3 : 2];
        bool other = false;
        for (int e = M->rptr[j]; e < M->rptr[j + 1]; e++) other = other || (M->col[e] != j && M->col[e] >= f->ne);
        if (!it->inertia[j] && (it->fw_diag[j] > 0 || it->fz_diag[j] > 0) && other)
            it->follow[it->nfollow++] = j;
    }
    it->zalg = emn_xcalloc(sz, sizeof(bool));
    it->alg = emn_xcalloc(sz, sizeof(int));
    emn_form_reads_rates(f, it->zalg);
    it->ztest = emn_xcalloc(sz, sizeof(bool));
    it->ztest_vz = emn_xcalloc(sz, sizeof(bool));
    it->vz = emn_xcalloc(sz, sizeof(int));
    for (int j = 0; j < n; j++) {
        it->zalg[j] = it->zused[j] && !it->zalg[j];
        if (it->zalg[j]) it->alg[it->nalg++] = j;
        else if (it->zused[j] && !it->inertia[j]) it->vz[it->nvz++] = j;
        it->ztest[j] = !it->zalg[j] && (it->zused[j] || it->inertia[j]);
        it->ztest_vz[j] = !it->zalg[j] && it->inertia[j];
    }
    it->wder = emn_xcalloc((size_t)it->nvz + 1, sizeof(int));
    if (emn_form_is_linear(f))
        for (int k = 0; k < it->nvz; k++)
            if (it->fw_diag[it->vz[k]] == 0) it->wder[it->nwder++] = it->vz[k];
    /* (a linear step solves exactly, and what F its constant-momentum
     * rows keep is rounding, and the consistent start's residual; but
     * the trapezoidal rule flips it into the next step's equation, where
     * the next rounding adds to it.  Where the error test reads the row's
     * value, the carried residual shows: in a constraint's row (zalg),
     * whose value nothing integrates, the constraint on the loop C0
     * closes in tests/netlists/tran/ctank_sin.cir, between a current
     * source's 1e-4 C and an inductor loop's, alternated by 4e-19 C of
     * its charge, which the error test, its tolerance reltol times CHGTOL
     * at a reversal of the loop's current, took for an error and cut the
     * step to nothing; at a node without inertia that an inductor reads
     * (vz), the start's residual alternated its velocity, which the tests
     * of the steps after a breakpoint read: random deck r118 (flux) took
     * 658221 steps for 2 ms at the default tolerances, 67 million at
     * reltol 1e-5.  Those rows, few, are taken; the other resistive
     * nodes, whose values nothing reads and whose alternation the next
     * steps' rule averages out of every integrated quantity, are not: a
     * power grid has thousands (ibmpg1t: 13223 of 25372), a pass over
     * them at every step) */
    bool *konst = emn_xcalloc(sz, sizeof(bool)), *vals = emn_xcalloc(sz, sizeof(bool));
    emn_form_momentum_const(f, konst);
    it->kz = emn_xcalloc(sz, sizeof(bool));
    memcpy(it->kz, konst, (size_t)n * sizeof(bool));
    if (emn_form_is_linear(f))
        for (int j = 0; j < n; j++) konst[j] = konst[j] && it->zused[j] && !it->inertia[j];
    /* and the rows whose momentum the values alone make (pvals, below) */
    emn_form_momentum_values(f, vals);
    for (int j = 0; j < n; j++) it->npconst += konst[j] || vals[j];
    it->pconst = emn_xcalloc((size_t)it->npconst + 1, sizeof(int));
    for (int j = 0, k = 0; j < n; j++) if (konst[j] || vals[j]) it->pconst[k++] = j;
    free(konst);
    free(vals);
    {
        bool linear = emn_form_is_linear(f);
        sign_vectors sv = {0, emn_xmalloc(((size_t)n + 1) * sizeof(int)), emn_xmalloc(((size_t)n + 1) * sizeof(int)),
                           emn_xmalloc((size_t)n + 1)};
        sv.n = emn_form_mass_kernel(f, sv.ptr, sv.idx, sv.sign);
        sign_vectors su = {0, emn_xmalloc(((size_t)n + 1) * sizeof(int)), emn_xmalloc(((size_t)n + 1) * sizeof(int)),
                           emn_xmalloc((size_t)n + 1)};
        undamped_vectors(it, &sv, &su);
        kernel_rows_setup(it, &su);
        still_vectors(it, &sv, &su);
        if (it->o.method == EMN_METHOD_TRAP) {
            if (linear) kernel_setup(it, &su);
            null_setup(it, &sv, !linear);
        }
        rounding_setup(it, &sv);
        free(su.ptr); free(su.idx); free(su.sign);
        free(sv.ptr); free(sv.idx); free(sv.sign);
    }
    it->gauge_ptr = emn_xmalloc((sz + 1) * sizeof(int));
    it->gauge_idx = emn_xmalloc((sz + 1) * sizeof(int));
    it->ngauge = emn_form_gauges(f, it->gauge_ptr, it->gauge_idx);
    it->vs_ptr = emn_xcalloc(sz + 1, sizeof(int));
    emn_form_value_slots(f, it->vs_ptr, &it->vs_slot);
    alg_inverse(it);
    it->vs_try = emn_xcalloc((size_t)it->vs_ptr[n] + 1, sizeof(double));
    it->vs_acc = emn_xcalloc((size_t)it->vs_ptr[n] + 1, sizeof(double));
    {
        bool *seen = emn_xcalloc((size_t)f->slots.n + 1, sizeof(bool));
        it->bs = emn_xmalloc((size_t)it->vs_ptr[n] * sizeof(int) + 1);
        it->bsj = emn_xmalloc((size_t)it->vs_ptr[n] * sizeof(int) + 1);
        for (int j = 0; j < n; j++)
            for (int k = it->vs_ptr[j]; k < it->vs_ptr[j + 1]; k++) {
                int sl = it->vs_slot[k];
                if (seen[sl]) continue;
                seen[sl] = true;
                /* not one that reads a coordinate a constraint sets: its
                 * velocity is a difference quotient of its values, and
                 * their rounding over a short step is no error of the
                 * branch (alg_ratio tests those values) */
                const emn_lmap *m = &f->slots.v[sl];
                bool alg = false;
                for (int q = 0; q < m->nc; q++) alg = alg || it->zalg[emn_lmap_ci(m)[q]];
                if (alg) continue;
                it->bs[it->nbs] = sl;
                it->bsj[it->nbs++] = j;
            }
        free(seen);
        it->bsr = emn_xcalloc((size_t)it->nbs + 1, sizeof(double));
        for (int q = 0; q < 3; q++) it->bsv[q] = emn_xcalloc((size_t)it->nbs + 1, sizeof(double));
    }
    /* absolute tolerances by what a coordinate is: its velocity (Newton
     * update) and its equation's residual */
    /* (the electrical coordinates' are one set, it->etol: these arrays
     * hold the mechanical coordinates' only, from index 0 for f->ne) */
    size_t mz = (size_t)(n - f->ne) + 1;
    it->w_abs = emn_xcalloc(mz, sizeof(double));
    it->res_abs = emn_xcalloc(mz, sizeof(double));
    it->tol_zy = emn_xcalloc(mz, sizeof(double));
    it->tol_zd = emn_xcalloc(mz, sizeof(double));
    it->tol_py = emn_xcalloc(mz, sizeof(double));
    it->tol_pd = emn_xcalloc(mz, sizeof(double));
    set_tolerances(it);
    mech_tolerances(it, 0, n);
    for (int j = f->ne; j < n; j++) it->w_abs[j - f->ne] = it->res_abs[j - f->ne] = 1e-30;
    /* the operating point's LU of J's pattern, if it left one: its
     * analysis is the one this LU would make */
    it->lu = f->op_lu ? f->op_lu : emn_lu_new();
    f->op_lu = NULL;
    if (f->order_hint) emn_lu_hint_order(it->lu, f->order_hint, f->order_hint_lnz);
    /* A linear circuit's few factorizations serve every step: kept in
     * single precision, its solves stream half the memory.  A step's
     * solution needs to be good to its error tolerance, and a
     * factorization is kept so only where a probe solve is good to a
     * hundredth of that; the residual test in double still decides
     * whether to refine. */
    if (emn_form_is_linear(f)) emn_lu_allow_single(it->lu, EMN_SINGLE_PART * o->reltol);
    else emn_lu_values_change(it->lu);
    /* each cached factorization costs memory in proportion to the
     * circuit: sixteen for small circuits, down to two at 10^6 unknowns to
     * begin with; cache_slot lets it grow once the size of a factorization
     * is known */
    it->cache_cap = n > 0 ? (int)fmin(EMN_LU_CACHE, fmax(2, 2e6 / n)) : EMN_LU_CACHE;
    it->bad_coord = -1;
    it->min_iter = 1;
    it->stall_max = 0.1;
    return it;
}

void emn_integ_free(emn_integ **pit)
{
    if (!pit || !*pit) return;
    emn_integ *it = *pit;
    for (int k = 0; k < 3; k++) {
        free(it->z[k]); free(it->w[k]); free(it->p[k]); free(it->F[k]);
        free(it->Sh[k]); free(it->sh[k]);
    }
    free(it->dw); free(it->scale); free(it->wtry);
    free(it->ztry); free(it->ptry); free(it->Ftry); free(it->peak); free(it->fz_diag); free(it->fw_diag); free(it->follow);
    free(it->Shist);
    free(it->rsrc);
    free(it->hz); free(it->hp); free(it->w_right); free(it->F_right); free(it->w_abs); free(it->res_abs);
    free(it->zused);
    free(it->inertia);
    free(it->zalg);
    free(it->ainv_ptr); free(it->ainv_at); free(it->ainv);
    free(it->vz);
    free(it->kz);
    free(it->wder); free(it->rgrp); free(it->rg_ptr); free(it->rg_idx);
    free(it->kptr);
    free(it->jptr); free(it->jidx); free(it->jsign); free(it->jrow); free(it->jeptr); free(it->jslot);
    free(it->jgptr); free(it->jgcol); free(it->jgval);
    free(it->jcon); free(it->jdslot); free(it->jdd); free(it->jdk); free(it->jvd); free(it->jvk); free(it->jc0); free(it->jzptr); free(it->jzero);
    free(it->nptr); free(it->nk); free(it->nvoff); free(it->nidx); free(it->nvec);
    free(it->kidx);
    free(it->ksign);
    free(it->kvec);
    free(it->gdir);
    emn_lu_free(&it->klu);
    if (it->kx) emn_sparse_free(&it->kA);
    free(it->kx);
    free(it->kmove);
    free(it->dptr);
    free(it->drow);
    free(it->dval);
    free(it->ztest);
    free(it->ztest_vz);
    free(it->alg);
    free(it->pconst);
    free(it->halves);
    free(it->src_next);
    free(it->gauge_ptr);
    free(it->gauge_idx);
    free(it->vs_ptr);
    free(it->vs_slot);
    free(it->vs_try);
    free(it->vs_acc);
    free(it->bs);
    free(it->bsj);
    free(it->bsr);
    for (int q = 0; q < 3; q++) free(it->bsv[q]);
    free(it->tol_zy); free(it->tol_zd); free(it->tol_py); free(it->tol_pd);
    for (int k = 0; k < EMN_LU_CACHE; k++) emn_lu_free(&it->cache_lu[k]);
    emn_lu_free(&it->lu);       /* after the cache, which shares its analysis */
    free(it);
    *pit = NULL;
}

void emn_integ_lu_stats(const emn_integ *it, long *factors, long *refactors)
{
    const emn_lu_stats *s = emn_lu_get_stats(it->lu);
    /* an L D L' factorization keeps the order of its analysis: it counts
     * with the refactorizations */
    *factors = s->factors;
    *refactors = s->refactors + s->ldl;
    for (int k = 0; k < EMN_LU_CACHE; k++)
        if (it->cache_lu[k]) {
            s = emn_lu_get_stats(it->cache_lu[k]);
            *factors += s->factors;
            *refactors += s->refactors + s->ldl;
        }
}

/* The next breakpoint of any source strictly after t (or INFINITY).  t
 * only grows from one call to the next, so a source's next breakpoint,
 * once found, stands until t reaches it: each corner of a power grid's ten
 * thousand pulsed loads is looked up once, not at every other corner.
 * Sources that are a constant 0 have none. */
static double next_break(emn_integ *it, double t)
{
    const emn_form *f = it->f;
    /* Breakpoints of different sources that coincide in exact arithmetic
     * differ in their last bits (td + k per + tr ...): anything within a
     * relative 1e-12 of t counts as t itself. */
    double eps = 1e-12 * fabs(t) + 1e-300;
    double bp = INFINITY;
    for (int l = 0; l < f->nlive; l++) {
        int s = f->live_src[l];
        double b = it->src_next[s];
        if (!(b > t + eps)) {
            const emn_source *src = f->c->elems.v[f->src_elem[s]].src;
            b = emn_wave_next_break(src, t);
            while (b <= t + eps) b = emn_wave_next_break(src, b);
            it->src_next[s] = b;
        }
        if (b < bp) bp = b;
    }
    return bp;
}

/* ------------------------------------------------------------ tolerances */

/* ------------------------------------------------------------- Newton */

typedef struct step_formula { double a, a1, a2, b1; int order; } step_formula;

static step_formula formula(const emn_integ *it, double h, int order)
{
    step_formula s = {0};
    s.order = order;
    if (order == 1) {
        s.order = 1;
        s.a = 1 / h;
        s.a1 = -1 / h;
    } else if (it->o.method == EMN_METHOD_TRAP || it->npast < 1) {
        /* BDF2 needs two points: its first step is trapezoidal */
        s.a = 2 / h;
        s.a1 = -2 / h;
        s.b1 = -1;
    } else {
        double rho = h / it->h;
        s.a = (1 + 2 * rho) / ((1 + rho) * h);
        s.a1 = -(1 + rho) / h;
        s.a2 = rho * rho / ((1 + rho) * h);
    }
    return s;
}

/* ------------------------------------------------------------- halves */

/* A large circuit's passes over its coordinates (history, Newton, error
 * test) run in two halves side by side (par.h); a small one's in one
 * pass, as half 0.  Every coordinate is computed as in one pass, and what
 * a pass finds is combined in coordinate order, so where the halves meet
 * changes no result.  They first meet where the linear evaluation splits
 * (emn_form.lin_mid, equal entries), and then where the halves' measured
 * times say: the same coordinates do not cost the same on both cores.
 * ibmpg1t's coordinates split 10925 / 14447 there, and each pass's
 * second half, on the helper, took 1.3 to 1.55 times the first (the
 * main thread writes every vector last, through the solve's
 * permutation). */
static void half_range(const emn_integ *it, int half, int *j0, int *j1)
{
    int mid = it->halves->mid > 0 ? it->halves->mid : it->n;
    *j0 = half ? mid : 0;
    *j1 = half ? it->n : mid;
}

static void in_halves(const emn_integ *it, emn_par_fn fn, void *arg)
{
    if (it->halves->mid > 0) emn_par_timed(it->halves, fn, arg);
    else fn(arg, 0);
}

/* History parts: ydot = a y + hy with hy from the past points, for z
 * (from w) and p (from F) at once. */
typedef struct hist_job {
    const emn_integ *it;
    const step_formula *s;
    double *hz, *hp;
} hist_job;

/* One coordinate's history part, a1 y1 + a2 y2 + b1 yd1, with the terms
 * history_half leaves out left out here too (the same sums). */
static inline double hist_at(double a1, double a2, double b1, const double *y1, const double *y2, const double *yd1,
                             int j)
{
    if (a2 == 0 && b1 == 0) return a1 * y1[j];
    if (a2 == 0) return a1 * y1[j] + b1 * yd1[j];
    if (b1 == 0) return a1 * y1[j] + a2 * y2[j];
    return a1 * y1[j] + a2 * y2[j] + b1 * yd1[j];
}

static void history_half(void *arg, int half)
{
    const hist_job *H = arg;
    const emn_integ *it = H->it;
    int j0, j1;
    half_range(it, half, &j0, &j1);
    /* the coefficients in locals and one loop per formula: out may alias
     * nothing of s, but the compiler cannot know it */
    double a1 = H->s->a1, a2 = H->s->a2, b1 = H->s->b1;
    for (int pass = 0; pass < 2; pass++) {
        const double *y1 = pass ? it->p[0] : it->z[0], *y2 = pass ? it->p[1] : it->z[1];
        const double *yd1 = pass ? it->F[0] : it->w[0];
        double *out = pass ? H->hp : H->hz;
        if (a2 == 0 && b1 == 0)
            for (int j = j0; j < j1; j++) out[j] = a1 * y1[j];
        else if (a2 == 0)
            for (int j = j0; j < j1; j++) out[j] = a1 * y1[j] + b1 * yd1[j];
        else if (b1 == 0)
            for (int j = j0; j < j1; j++) out[j] = a1 * y1[j] + a2 * y2[j];
        else
            for (int j = j0; j < j1; j++) out[j] = a1 * y1[j] + a2 * y2[j] + b1 * yd1[j];
    }
}

/* A coordinate whose momentum is a constant (a loop with no inductor, a
 * node with no capacitor, a massless mechanical node) has dp/dt = 0
 * exactly: its equation is the algebraic 0 = F.  The F kept at a past
 * point is not that rate but the residual the Newton iteration left
 * there, and the trapezoidal rule's term b1 F1 would carry it into the
 * next step's equation as F = -F1: flipped in sign, never damped.  A
 * movable plate charged from rest through a resistor (charge
 * formulation) kept the 4e-6 V its start left in the loop's equation for
 * the whole run, a current alternating by 4 nA whose error, seen through
 * the loop's charge, held the steps to nanoseconds (2.3 million steps
 * where the flux formulation took 221).  Such rows keep only their
 * momentum's history, so that each step solves 0 = F afresh, as SPICE
 * solves a resistive node's KCL.  Backward Euler and BDF2 never read F1.
 * So too a momentum that the coordinates' values alone make, p = dp/dz z
 * + c (emn_form_momentum_values): its rate is dp/dz w, exactly, and its
 * equation the algebraic dp/dz w = F, whose residual at the last point
 * F1 - dp/dz w1 the rule would flip into the next step's equation the
 * same way.  A moving coil's loop with no inductance (charge
 * formulation) holds T x; from an operating point whose velocity the
 * consistent start could read only through x's rounding (a mass-less
 * coil on a spring), that residual, 3.6e-6 m/s of velocity, alternated
 * undamped.  Such rows keep dp/dz w1 for F1.
 * Run after the history parts are made; with dw, the fused start's
 * right-hand side -(a pt + hp - ft) is made again for those rows. */
static void const_momentum_history(const emn_integ *it, const step_formula *s, double *hp, double *dw)
{
    if (s->b1 == 0) return;
    const emn_form *f = it->f;
    for (int k = 0; k < it->npconst; k++) {
        int j = it->pconst[k];
        double rate = emn_cmat_row_dot(&f->lin[0], j, it->w[0]);
        hp[j] = hist_at(s->a1, s->a2, 0, it->p[0], it->p[1], NULL, j) + s->b1 * rate;
        if (dw) dw[j] = -(s->a * f->pt[j] + hp[j] - f->ft[j]);
    }
}

/* A linear circuit's null spaces of dp/dw (null_setup) are, for the
 * trapezoidal rule, what the constant momenta above are one coordinate at
 * a time: along a null vector u, u'p is a constant and u'F = 0 its
 * algebraic equation, which the rule's b1 u'F1 would turn into u'F =
 * -u'F1.  In a combination of inductor loops, where a p of each stands
 * at 1/h times L i and the combination cancels them, the rounding of
 * those terms went in at every step and the combination's velocities
 * alternated by 3e-4 of themselves, undamped, holding a linear circuit's
 * step where its error ratio sat above 0.09: 11.7 million steps for 2 ms
 * of a DC source into an RL network (charge formulation), where the flux
 * formulation took 1044.  So the history keeps F1 less its part along
 * the null space, and each step solves u'F = 0 afresh; the equations
 * along the rest of the space, where dp/dw is invertible, are as
 * before.  (A null vector of +-1 is kernel_rates's, which moves it
 * after the step with the resistive nodes and vectors beside it.)  Same arguments as
 * const_momentum_history. */
static void null_history(const emn_integ *it, const step_formula *s, double *hp, double *dw)
{
    if (s->b1 == 0) return;
    const double *F1 = it->F[0];
    for (int b = 0; b < it->nnull; b++) {
        const int *ix = it->nidx + it->nptr[b];
        int m = it->nptr[b + 1] - it->nptr[b];
        const double *u = it->nvec + it->nvoff[b];
        for (int c = 0; c < it->nk[b]; c++, u += m) {
            double x = 0;
            for (int i = 0; i < m; i++) x += u[i] * F1[ix[i]];
            x *= s->b1;
            for (int i = 0; i < m; i++) {
                hp[ix[i]] -= x * u[i];
                if (dw) dw[ix[i]] += x * u[i];
            }
        }
    }
}

static void history(const emn_integ *it, const step_formula *s, double *hz, double *hp)
{
    hist_job H = {it, s, hz, hp};
    in_halves(it, history_half, &H);
    const_momentum_history(it, s, hp, NULL);
    null_history(it, s, hp, NULL);
}

/* A linear circuit's Newton matrix depends on a alone, so its
 * factorizations are kept for the last few values of a: a step controller
 * that moves between a handful of step sizes refactors only for new ones. */
static emn_lu *cached_lu(emn_integ *it, double a)
{
    for (int k = 0; k < it->cache_cap; k++)
        if (it->cache_lu[k] && it->cache_a[k] == a) {
            it->cache_used[k] = ++it->cache_clock;
            return it->cache_lu[k];
        }
    return NULL;
}

/* What the cached factorizations may hold in all: an eighth of the
 * machine's memory, at least EMN_LU_CACHE_BYTES.  A 10^6-node mesh's
 * factorizations are some 300 MB each and its steps cycle through seven
 * sizes: a cache of fewer entries than that misses on every change of
 * step (least recently used goes first), and each miss is a
 * factorization of seconds. */
static double cache_budget(void)
{
    static double budget;
    if (budget == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        budget = pages > 0 && size > 0 ? (double)pages * (double)size / 8 : 0;
        if (budget < EMN_LU_CACHE_BYTES) budget = EMN_LU_CACHE_BYTES;
    }
    return budget;
}

static emn_lu *cache_slot(emn_integ *it, double a)
{
    /* a full cache grows while its factorizations, as large as the first
     * one turned out, stay within the budget */
    if (it->cache_cap < EMN_LU_CACHE && it->cache_lu[it->cache_cap - 1]) {
        size_t each = emn_lu_bytes(it->cache_lu[0]);
        if (each > 0 && (double)(it->cache_cap + 1) * (double)each <= cache_budget()) it->cache_cap++;
    }
    int victim = 0;
    for (int k = 0; k < it->cache_cap; k++) {
        if (!it->cache_lu[k]) { victim = k; break; }
        if (it->cache_used[k] < it->cache_used[victim]) victim = k;
    }
    if (!it->cache_lu[victim]) it->cache_lu[victim] = emn_lu_new_sharing(it->lu);
    it->cache_a[victim] = a;
    it->cache_used[victim] = ++it->cache_clock;
    return it->cache_lu[victim];
}

/* The factorization of the Newton matrix for leading coefficient a at
 * (z, w): a linear circuit's from the cache, refactored only for a new a.
 * NULL if the matrix is singular or not finite. */
static emn_lu *newton_lu(emn_integ *it, double a, const double *z, const double *w, bool linear)
{
    emn_form *f = it->f;
    /* the start's matrix, with all of kernel_rows_setup's unknowns, is
     * cached by -a: a step's a is never 1e9 / hmax, but the start's must
     * not serve one */
    double key = it->jfix ? -a : a;
    emn_lu *lu = linear ? cached_lu(it, key) : NULL;
    if (lu) return lu;
    if (linear ? emn_form_jacobian(f, z, w, a) : emn_form_jacobian_last(f, a)) return NULL;
    for (int k = 0; k < it->nkrow; k++) {
        if (!(it->jfix || it->jcon[k])) continue;
        double sg = it->jcon[k] ? a : 1;
        for (int x = it->jzptr[k]; x < it->jzptr[k + 1]; x++) f->J.Ax[it->jzero[x]] = 0;
        for (int e = it->jeptr[k]; e < it->jeptr[k + 1]; e++)
            f->J.Ax[it->jslot[e]] = -sg * (it->jvd[e] + it->jvk[e] / a);
        f->J.Ax[it->jdslot[k]] = -sg * sg * (it->jdd[k] + it->jdk[k] / a);
    }
    int col = -1;
    it->st.jacobians++;
    lu = linear ? cache_slot(it, key) : it->lu;
    if (emn_lu_factor(lu, &f->J, &col) < 0) {
        it->singular = true;
        if (linear) for (int k = 0; k < EMN_LU_CACHE; k++) if (it->cache_lu[k] == lu) it->cache_a[k] = NAN;
        it->bad_coord = col;
        return NULL;
    }
    return lu;
}

/* kernel_rows_setup's unknowns in newton_lu's matrix: at the start
 * (jfix) all of them, at a step the constraints', whose pivot a C - a C
 * + 1 / (a L) rounds to zero at a step short enough too (a nonlinear
 * element beside them that starts with steps of 1e-9 s).  The
 * right-hand side's row r: s u'r with u'(a p + hp) taken as the zero it
 * is (at a step, once null_history has taken u'F1 out of hp), -s u'F(z,
 * t + h), and at the start, where nothing damps u (s = a there, else
 * 1), less u'F at the point the start's step leaves from, which leaves
 * u'dF/dz w and the sources' slope over the step. */
static void kernel_residual(emn_integ *it, double a)
{
    for (int k = 0; k < it->nkrow; k++) {
        if (!(it->jfix || it->jcon[k])) continue;
        double s = 0;
        for (int q = it->jptr[k]; q < it->jptr[k + 1]; q++) s += it->jsign[q] * it->Ftry[it->jidx[q]];
        it->dw[it->jrow[k]] = it->jcon[k] ? -(s - (it->jfix ? it->jc0[k] : 0)) * a : -s;
    }
}

/* A linear step's right-hand side -r(0) at w = 0, row r of each
 * constraint: a u'F(z0) = a (u'ft + u'dF/dz z0), z0 = -hz / a (nothing
 * along u reads a velocity). */
static void kernel_rhs0(emn_integ *it, double a, const double *hz)
{
    const double *ft = it->f->ft;
    for (int k = 0; k < it->nkrow; k++) {
        if (!it->jcon[k]) continue;
        double s = 0;
        for (int q = it->jptr[k]; q < it->jptr[k + 1]; q++) s += it->jsign[q] * ft[it->jidx[q]];
        for (int e = it->jgptr[k]; e < it->jgptr[k + 1]; e++) s -= it->jgval[e] * hz[it->jgcol[e]] / a;
        it->dw[it->jrow[k]] = s * a;
    }
}

/* The solution x of newton_lu's matrix back in the coordinates: x along
 * u (row r's, times s) onto u's coordinates. */
static void kernel_update(const emn_integ *it, double a, double *x)
{
    for (int k = 0; k < it->nkrow; k++) {
        if (!(it->jfix || it->jcon[k])) continue;
        int r = it->jrow[k];
        double y = x[r] * (it->jcon[k] ? a : 1);
        for (int q = it->jptr[k]; q < it->jptr[k + 1]; q++) {
            int j = it->jidx[q];
            x[j] = j == r ? it->jsign[q] * y : x[j] + it->jsign[q] * y;
        }
    }
}

/* An update with a kept matrix must be at most this part of the last. */
#define EMN_JAC_RATE 0.25

/* A nonlinear iterate whose residual passes is taken when the update from
 * it is at most this part of the tolerance. */
#define EMN_SETTLED 0.01

/* The predictor of a nonlinear step: w0 (the last velocities, or the
 * right-hand ones after a breakpoint) plus the slope through the last two
 * points, and the curvature through three once they all follow the last
 * breakpoint.  Made in newton's first pass (SW_PREDICT). */
typedef struct predictor {
    const double *w0;
    double hf;
    bool slope, quad;
    /* made by predictor_setup: with d1 = w[0] - w[1] and d0 = w[1] - w[2],
     * the prediction is w0 + c1 d1 + q1 d1 - q0 d0 */
    double c1, q1, q0;
} predictor;

static void predictor_setup(const emn_integ *it, predictor *P)
{
    double hf = P->hf;
    P->c1 = P->slope ? hf / it->h : 0;
    double q = P->quad ? hf * (hf + it->h) / (it->h + it->hprev) : 0;
    P->q1 = P->quad ? q / it->h : 0;
    P->q0 = P->quad ? q / it->hprev : 0;
}

/* Coordinate j's predicted velocity. */
static inline double predicted(const emn_integ *it, const predictor *P, int j)
{
    if (!P->slope) return P->w0[j];
    double d1 = it->w[0][j] - it->w[1][j], p = P->w0[j] + P->c1 * d1;
    if (P->quad) p += P->q1 * d1 - P->q0 * (it->w[1][j] - it->w[2][j]);
    return p;
}

/* SW_CLOSE's block of rows. */
#define EMN_CLOSE_BLOCK 1024

/* The Newton iteration's passes over the coordinates, in halves. */
enum {
    SW_START,       /* hz, hp and dw = -(a pt + hp - ft) at once (newton's `fs`) */
    SW_PREDICT,     /* hz, hp, the predictor's w and z from it at once (`fs`, `pred`) */
    SW_Z0,          /* z = -hz / a: a linear step's coordinates at w = 0 */
    SW_RHS,         /* dw = -r(0) = -(a p + hp - F) there */
    SW_Z,           /* z = (w - hz) / a, up to a non-finite w (the predictor's, or
                     * a linear step's solved from J w = -r(0)) */
    SW_RESIDUAL,    /* dw = r(w), ok: within tolerance */
    SW_CLOSE,       /* emn_form_close_rows, then SW_RESIDUAL, a block at a time */
    SW_UPDATE,      /* w -= dw, z from w, ok: dw within tolerance */
    SW_SIZE         /* SW_UPDATE's norm alone, w and z left as they are */
};

typedef struct sweep {
    emn_integ *it;
    double a, ia;           /* ia = 1 / a: a multiply per coordinate */
    const double *hz, *hp;
    const step_formula *fs; /* SW_START's and SW_PREDICT's history formula */
    const predictor *pred;  /* SW_PREDICT's */
    int op;
    bool ok[2];             /* per half */
    int bad[2];             /* per half: its first non-finite coordinate, or -1 */
    double norm[2];         /* SW_UPDATE, SW_SIZE, per half: largest |dw| over its tolerance */
} sweep;

/* SW_RESIDUAL over [j0, j1), with absolute tolerances ra[(j - o) * as]
 * (as = 0: one for all): the first non-finite coordinate, or -1; *ok
 * cleared if one is out of tolerance. */
static inline int residual_run(const sweep *S, int j0, int j1, const double *ra, int o, int as, bool *ok)
{
    const emn_integ *it = S->it;
    const double *p = it->ptry, *F = it->Ftry, *hp = S->hp, *sc = it->scale;
    double *dw = it->dw, a = S->a, rt = it->o.reltol;
    for (int j = j0; j < j1; j++) {
        double ap = a * p[j];
        dw[j] = ap + hp[j] - F[j];
        double tol = rt * (fabs(ap) + fabs(hp[j]) + fabs(sc[j])) + ra[(j - o) * as];
        if (!isfinite(dw[j])) return j;
        if (fabs(dw[j]) > tol) *ok = false;
    }
    return -1;
}

/* SW_UPDATE over [j0, j1), with absolute tolerances wa[(j - o) * as]: the
 * first non-finite coordinate, or -1; *norm raised to the largest update
 * over its tolerance.  Without `apply`, SW_SIZE: the norm alone. */
static inline int update_run(const sweep *S, int j0, int j1, const double *wa, int o, int as, double *norm,
                             bool apply)
{
    const emn_integ *it = S->it;
    double *w = it->wtry, *z = it->ztry, ia = S->ia, rt = it->o.reltol;
    const double *dw = it->dw, *hz = S->hz;
    for (int j = j0; j < j1; j++) {
        double wn = w[j] - dw[j];
        if (!isfinite(wn)) return j;
        /* a division only where the norm grows; the tolerance no finer
         * than the step's rounding of w = a z + hz, 4 eps |hz|: a
         * capacitor across a source holds its loop's charge at C v, and
         * its current, of 1e-9 A, moved in steps of a eps C v (4e-11 A
         * at a = 2e8 for 1 mF at 1 V) with a tolerance of 2e-12 A, and
         * Newton cycled there until the step was cut to nothing (a random
         * circuit with movable plates, charge formulation) */
        double d = fabs(dw[j]), tol = rt * max_num(fabs(wn), fabs(w[j])) + wa[(j - o) * as] +
                                      4 * DBL_EPSILON * fabs(hz[j]);
        if (d > *norm * tol) *norm = d / tol;
        if (!apply) continue;
        w[j] = wn;
        z[j] = (wn - hz[j]) * ia;
    }
    return -1;
}

static void sweep_half(void *arg, int h)
{
    sweep *S = arg;
    emn_integ *it = S->it;
    int j0, j1;
    half_range(it, h, &j0, &j1);
    /* locals, so that the stores are not taken to change them */
    double *w = it->wtry, *z = it->ztry, *dw = it->dw, a = S->a, ia = S->ia;
    const double *p = it->ptry, *F = it->Ftry, *hz = S->hz, *hp = S->hp;
    bool ok = true;
    int bad = -1;
    switch (S->op) {
    case SW_START: {
        const emn_form *f = it->f;
        const double *pt = f->pt, *ft = f->ft;
        const double *z0 = it->z[0], *z1 = it->z[1], *w0 = it->w[0], *p0 = it->p[0], *p1 = it->p[1], *F0 = it->F[0];
        double *hzw = (double *)S->hz, *hpw = (double *)S->hp;
        /* in locals: the stores could otherwise change them */
        double a1 = S->fs->a1, a2 = S->fs->a2, b1 = S->fs->b1;
        for (int j = j0; j < j1; j++) {
            double hpj = hist_at(a1, a2, b1, p0, p1, F0, j);
            hzw[j] = hist_at(a1, a2, b1, z0, z1, w0, j);
            hpw[j] = hpj;
            dw[j] = -(a * pt[j] + hpj - ft[j]);
        }
        break;
    }
    case SW_PREDICT: {
        const double *z0 = it->z[0], *z1 = it->z[1], *w0 = it->w[0], *p0 = it->p[0], *p1 = it->p[1], *F0 = it->F[0];
        double *hzw = (double *)S->hz, *hpw = (double *)S->hp;
        double a1 = S->fs->a1, a2 = S->fs->a2, b1 = S->fs->b1;
        for (int j = j0; j < j1; j++) {
            double hzj = hist_at(a1, a2, b1, z0, z1, w0, j), wj = predicted(it, S->pred, j);
            hzw[j] = hzj;
            hpw[j] = hist_at(a1, a2, b1, p0, p1, F0, j);
            w[j] = wj;
            if (!isfinite(wj)) {
                bad = j;
                break;
            }
            z[j] = (wj - hzj) * ia;
        }
        break;
    }
    case SW_Z0:
        for (int j = j0; j < j1; j++) z[j] = -hz[j] * ia;
        break;
    case SW_RHS:
        for (int j = j0; j < j1; j++) dw[j] = -(a * p[j] + hp[j] - F[j]);
        break;
    case SW_Z:
        for (int j = j0; j < j1; j++) {
            if (!isfinite(w[j])) {
                bad = j;
                break;
            }
            z[j] = (w[j] - hz[j]) * ia;
        }
        break;
    case SW_RESIDUAL:
    case SW_CLOSE:
        /* SW_CLOSE's rows are tested while they are in cache */
        for (int b = j0; b < j1 && bad < 0; b += EMN_CLOSE_BLOCK) {
            int e = j1 - b > EMN_CLOSE_BLOCK ? b + EMN_CLOSE_BLOCK : j1, je = etol_end(it, b, e);
            if (S->op == SW_CLOSE) emn_form_close_rows(it->f, b, e, it->ptry, it->Ftry, it->scale);
            bad = residual_run(S, b, je, &it->etol[T_RES], 0, 0, &ok);
            if (bad < 0) bad = residual_run(S, je, e, it->res_abs, it->f->ne, 1, &ok);
        }
        break;
    case SW_UPDATE:
    case SW_SIZE: {
        int je = etol_end(it, j0, j1);
        double norm = 0;
        bool apply = S->op == SW_UPDATE;
        bad = update_run(S, j0, je, &it->etol[T_W], 0, 0, &norm, apply);
        if (bad < 0) bad = update_run(S, je, j1, it->w_abs, it->f->ne, 1, &norm, apply);
        ok = norm <= 1;
        S->norm[h] = norm;
        break;
    }
    }
    S->ok[h] = ok;
    S->bad[h] = bad;
}

/* Runs pass op; returns the first coordinate it found non-finite (also
 * in it->nan_coord), or -1. */
static int run(sweep *S, int op)
{
    S->op = op;
    S->ok[1] = true;
    S->bad[1] = -1;
    S->norm[1] = 0;
    in_halves(S->it, sweep_half, S);
    int bad = S->bad[0] >= 0 ? S->bad[0] : S->bad[1];
    if (bad >= 0) S->it->nan_coord = bad;
    return bad;
}

/* The error test's job (lte_ratio, below), in halves of the
 * coordinates, z's and p's maxima apart; a linear step's check may run
 * it along with it. */
typedef struct lte_job {
    const emn_integ *it;
    const step_formula *s;
    double h, k1, k2;
    double err[2][2];       /* [pass][half] */
    int worst[2][2];
    bool done;              /* run with a step's check, which passed */
    bool vz_ok;             /* the vz coordinates are tested from their values */
    bool vready;            /* the tests from values have their points: */
    double vw[5];           /* their weights (value_weights) */
} lte_job;

static void lte_rows(lte_job *L, int half, int j0, int j1);

/* A linear step's rows are checked, and their error tested, in blocks
 * of this many: the block's z, w, p and F are still in cache when the
 * error test reads them. */
#define EMN_STEP_BLOCK 1024

typedef struct step_job {
    emn_integ *it;
    emn_step_check C;
    lte_job *lte;       /* or NULL */
} step_job;

static void step_half(void *arg, int h)
{
    step_job *J = arg;
    emn_integ *it = J->it;
    int i0, i1;
    emn_form_step_half(it->f, h, &i0, &i1);
    for (int b = i0; b < i1; b += EMN_STEP_BLOCK) {
        int e = i1 - b > EMN_STEP_BLOCK ? b + EMN_STEP_BLOCK : i1;
        emn_form_step_rows(it->f, it->wtry, &J->C, h, b, e);
        if (J->lte) lte_rows(J->lte, h, b, e);
    }
}

/* A linear step's SW_Z, evaluation and SW_RESIDUAL in one pass over the
 * rows, in the evaluation's halves (emn_form_step_rows): the same z, p,
 * F, scale and verdicts, in S->ok (the residual itself is not kept);
 * with lte, the step's error test too, which counts if the residual
 * passes (lte->done).  Returns as run does: the first coordinate whose w
 * is not finite, else the first whose residual is not, or -1. */
static int step_check(sweep *S, lte_job *lte)
{
    emn_integ *it = S->it;
    step_job J = {it, {S->a, S->ia, it->o.reltol, it->etol[T_RES], S->hz, S->hp, it->res_abs,
                       it->ztry, it->ptry, it->Ftry, it->scale, {true, true}, {-1, -1}, {-1, -1}}, lte};
    emn_form_in_halves(it->f, step_half, &J);
    S->ok[0] = J.C.ok[0];
    S->ok[1] = J.C.ok[1];
    const int *bw = J.C.bad_w, *br = J.C.bad_r;
    int bad = bw[0] >= 0 ? bw[0] : bw[1] >= 0 ? bw[1] : br[0] >= 0 ? br[0] : br[1];
    if (bad >= 0) it->nan_coord = bad;
    if (lte) lte->done = bad < 0 && S->ok[0] && S->ok[1];
    return bad;
}

/* The consistent start's residual of const_momentum_history's rows,
 * dp/dz w - F, made from w itself: a p(z0 + w / a) - a p0 - F is the
 * same but for the rounding of z0 + w / a, which at the start's a = 1e9 /
 * hmax holds w to a part in 1e-9 hmax / z0 (a coil on a spring displaced
 * 5 mm, 1e-5 m/s at hmax = 50 us: the start took -3.6e-6 m/s for its
 * velocity at rest).  The row's test is the residual's, dp/dz w in place
 * of a p + hp.  Only where the two agree but for a times the rounding of
 * p's terms: a start from uic whose p0 the coordinates do not make is
 * an impulse, left as it is. */
static void direct_rates_residual(const emn_integ *it, sweep *S)
{
    const emn_form *f = it->f;
    const double *F = it->Ftry, *sc = it->scale;
    double rt = it->o.reltol;
    const double *p = it->ptry, *hp = S->hp;
    for (int k = 0; k < it->npconst; k++) {
        int j = it->pconst[k];
        double rate = emn_cmat_row_dot(&f->lin[0], j, it->wtry);
        /* (as below, only where a p + hp is the rate but for rounding) */
        if (!(fabs(it->dw[j] + F[j] - rate) <= 64 * DBL_EPSILON * (fabs(S->a * p[j]) + fabs(hp[j])))) continue;
        double r = rate - F[j];
        it->dw[j] = r;
        double tol = rt * (fabs(rate) + fabs(sc[j])) + abs_tol_res(it, j);
        if (!(fabs(r) <= tol)) S->ok[0] = false;
    }
    /* Along a null vector u of dp/dw (null_setup), u'p does not change
     * with w, and from a consistent state u'(a p + hp) is zero but for a
     * times the rounding of p's terms: a moving coil between two
     * capacitors' nodes (flux formulation), whose mass they alone make,
     * took -2.6e-7 m/s at rest.  Where it is within that rounding, the
     * residual along u is -u'F.  (A start from uic whose sources change
     * u'p at once has u'(a p + hp) far above it: an impulse, kept.) */
    for (int b = 0; b < it->nnull; b++) {
        const int *ix = it->nidx + it->nptr[b];
        int m = it->nptr[b + 1] - it->nptr[b];
        const double *u = it->nvec + it->nvoff[b];
        for (int c = 0; c < it->nk[b]; c++, u += m) {
            double x = 0, mag = 0;
            for (int i = 0; i < m; i++) {
                x += u[i] * (it->dw[ix[i]] + F[ix[i]]);
                mag += fabs(u[i]) * (fabs(S->a * p[ix[i]]) + fabs(hp[ix[i]]));
            }
            if (!(fabs(x) <= 64 * DBL_EPSILON * mag)) continue;
            for (int i = 0; i < m; i++) it->dw[ix[i]] -= x * u[i];
        }
    }
}

/* Newton solve for w at t+h.  hz, hp: history parts; the iteration starts
 * from it->wtry, or, for a linear circuit with `direct`, from the exact
 * solve r(0) + J w = 0 (r is affine in w: one solve and one evaluation to
 * confirm, instead of evaluations at the predictor and at the solution),
 * or with pred (a nonlinear step) from the predictor.
 * With fs (a linear step, `direct`, whose p and F at w = 0 are the time
 * parts on all but a few rows: emn_form_rest_rows; or a nonlinear step,
 * with pred), hz and hp are not made yet: the first pass makes them from
 * the step's formula fs, into the caller's buffers, with the right-hand
 * side or with the predictor and its z.  With lte (a linear
 * step, `direct`), the step's error test runs along with the check of
 * its solution.
 * On success the solution is in it->wtry/ztry/ptry/Ftry.  Returns 0, 1
 * (no convergence: retry smaller), or a failure code. */
static int newton(emn_integ *it, double tnew, double a, const double *hz, const double *hp, bool direct,
                  const step_formula *fs, const predictor *pred, lte_job *lte)
{
    emn_form *f = it->f;
    bool linear = emn_form_is_linear(f);
    emn_form_set_time(f, tnew);
    sweep S = {it, a, 1 / a, hz, hp, fs, pred, 0, {true, true}, {-1, -1}, {0, 0}};
    bool dw_ok = false;
    double last = 0;            /* the last update's norm */
    bool keep = false;          /* the factored matrix may serve the next update */
    bool checked = false;       /* the first iterate evaluated and tested (step_check) */
    bool stalled = false;       /* a linear system's updates stopped shrinking, far inside tolerance */
    int iter = 0;
    if (linear && direct && fs) {
        /* p and F at w = 0 are the time parts but on a few rows: the
         * history and the right-hand side in one pass, then those rows */
        if (run(&S, SW_START) >= 0) return 1;
        const_momentum_history(it, fs, (double *)hp, it->dw);
        null_history(it, fs, (double *)hp, it->dw);
        emn_form_rest_fix(f, hz, a, S.ia, hp, it->dw);     /* negated too */
    } else if (linear && direct) {
        if (run(&S, SW_Z0) >= 0) return 1;
        emn_form_eval_rest(f, it->ztry, it->ptry, it->Ftry);
        if (run(&S, SW_RHS) >= 0) return 1;
    }
    if (linear && direct) {
        it->st.newton++;
        emn_lu *lu = newton_lu(it, a, it->ztry, it->wtry, true);
        if (!lu) return 1;
        if (it->njcon > 0) kernel_rhs0(it, a, hz);
        /* the right-hand side is -r(0), so its solve is w itself: the
         * arrays trade places instead of a pass copying one into the
         * other (negating before the solve or after it gives the same
         * numbers: rounding is symmetric) */
        emn_lu_solve(lu, it->dw);
        it->st.solves++;
        double *t = it->wtry;
        it->wtry = it->dw;
        it->dw = t;
        if (it->njcon > 0) kernel_update(it, a, it->wtry);
        /* z, the evaluation and the residual's test in one pass */
        if (step_check(&S, lte) >= 0) return 1;
        iter = 1;
        checked = true;
    } else if (pred) {
        if (run(&S, SW_PREDICT) >= 0) return 1;
        const_momentum_history(it, fs, (double *)hp, NULL);
        null_history(it, fs, (double *)hp, NULL);
    } else if (run(&S, SW_Z) >= 0) {
        return 1;
    }
    for (; iter <= it->o.itl4; iter++) {
        if (checked) {
            /* the residual itself, for the update, only if it failed */
            checked = false;
            if (!(S.ok[0] && S.ok[1]) && run(&S, SW_RESIDUAL) >= 0) return 1;
        } else {
            /* the nonlinear terms' results go to their rows in the
             * residual's pass (a non-finite one shows there) */
            emn_form_eval_open(f, it->ztry, it->wtry, it->ptry, it->Ftry, it->scale);
            if (run(&S, SW_CLOSE) >= 0) return 1;
            if (it->rates_direct) direct_rates_residual(it, &S);
        }
        bool res_ok = S.ok[0] && S.ok[1];
        if (iter >= it->min_iter && (res_ok || stalled) && (dw_ok || linear)) return 0;
        if (iter == it->o.itl4) break;
        it->st.newton++;
        /* A nonlinear circuit's matrix, factored at an iterate of the
         * step, serves its later updates while each is at most
         * EMN_JAC_RATE of the one before: the iterates move little once
         * the predictor is corrected, and the residual is tested at each
         * new point as always.  (Kept across steps, it left errors of a
         * fraction of the tolerance that piled up step after step.) */
        bool kept = !linear && keep;
        emn_lu *lu = kept ? it->lu : newton_lu(it, a, it->ztry, it->wtry, linear);
        if (!lu) return 1;
        bool kr = it->jfix ? it->nkrow > 0 : it->njcon > 0;
        if (kr) kernel_residual(it, a);
        emn_lu_solve(lu, it->dw);
        if (kr) kernel_update(it, a, it->dw);
        it->st.solves++;
        /* An iterate whose residual passes but whose own update did not
         * (the predictor's correction, a few tolerances, converging
         * quadratically) is the solution when the update from it is a
         * small part of the tolerance: the update is then not made, nor
         * the evaluation at its end that would confirm what this one
         * shows (a MEMS array: the next update was under 1e-3 of the
         * tolerance at 316 of 324 such iterates). */
        if (!linear && res_ok && iter >= it->min_iter) {
            if (run(&S, SW_SIZE) >= 0) return 1;
            if (fmax(S.norm[0], S.norm[1]) <= EMN_SETTLED) return 0;
        }
        if (run(&S, SW_UPDATE) >= 0) return 1;
        double norm = fmax(S.norm[0], S.norm[1]);
        keep = !linear && !(kept && norm > EMN_JAC_RATE * last);
        /* A linear system solved again from its residual converges in
         * one or two updates; when they no longer shrink, a tenth of the
         * tolerance and below, the residual is at the rounding of its
         * terms, which its test does not allow for: a p that cancels
         * (C (v1 - v2) at the start, v1 = v2) times the consistent
         * start's a = 1e9 / hmax rounds to more than reltol of the other
         * terms (a capacitor of 1.1 uF between two nodes with 1 mS and
         * 0.1 mS to ground, at reltol 1e-5, updates of 5e-12 of the
         * tolerance; loops whose inductors' L i cancel, random deck r463
         * in the charge formulation at reltol 1e-5, updates of 0.3% to 5%
         * of it, at random).  Such an iterate is the solution, as well as
         * it can be written.  The consistent start, whose a = 1e9 / hmax
         * leaves its matrix's entries along a null vector of dp/dw that
         * kernel_rows_setup cannot take (J's pattern lacks a row for it)
         * to cancel to 1e-9 of themselves, may stall up to 16 times the
         * tolerance (stall_max): a floating capacitor node beside coupled
         * inductors, flux formulation, had updates of 0.7 to 9 tolerances,
         * at random, and found no start.  A nonlinear system stalls so
         * too, once its updates are deep inside the tolerance (1e-3 of
         * it; a Newton iteration still converging halves them at least):
         * a movable plate across a DC source from uic, flux formulation,
         * whose momentum C(x) (v1 - v) cancels 5 mC of terms, had its
         * start's residual at a = 2e13 times their rounding, 3.7e-6
         * against a tolerance of 1.1e-6, with updates of 4e-14 of theirs,
         * and found no start. */
        stalled = iter >= 1 && norm <= (linear ? it->stall_max : fmin(it->stall_max, 1e-3)) && norm >= 0.5 * last;
        last = norm;
        dw_ok = norm <= 1;
    }
    return 1;
}

/* ------------------------------------------------------------- LTE */

/* |value| of every branch that sizes a coordinate, at z and the time
 * last set (the step's end: for the accepted point too, which a size
 * tolerates). */
static void branch_sizes(const emn_integ *it, const double *z, double *out)
{
    for (int k = 0; k < it->vs_ptr[it->n]; k++) out[k] = fabs(emn_form_slot_value(it->f, it->vs_slot[k], z));
}

/* The size of coordinate j's value: the smallest of the branches that
 * read it, each the larger of its trial and accepted magnitudes (as SPICE
 * measures a charge or flux against the larger of its last two values),
 * or 0 if no such branch sizes it.  Set on first-order steps only. */
static double coord_size(const emn_integ *it, int j)
{
    double m = INFINITY;
    for (int k = it->vs_ptr[j]; k < it->vs_ptr[j + 1]; k++) m = min_num(m, max_num(it->vs_try[k], it->vs_acc[k]));
    return it->vs_ptr[j + 1] > it->vs_ptr[j] ? m : 0;
}

/* A coordinate's velocity that is algebraic, in whole (vz: a node with
 * no capacitor, a loop with no inductor) or in part (along a null
 * vector of dp/dw: loops that share only an inductor), is what the
 * damping makes of the residual p - hp - h/2 F along that direction:
 * and p - hp is a difference of momenta good to eps of themselves.
 * Where the momenta are large and the velocity small (a coil's loop,
 * p = T x, as its current reverses; a capacitor's loop beside an
 * inductor's as it settles; a loop sharing an inductor with a coil's
 * during a PULSE's edge), that rounding, eps |p| over h/2 |dF/dw|,
 * outgrows the tolerance h reltol |w| as the step shrinks, and an error
 * test that took it for an error cut the step to nothing (random
 * electromechanical circuits 13, 25 and 31, charge formulation, at
 * reltol 1e-4 to 1e-5).  Each such coordinate gets its group (the
 * coordinates of its null vectors, whose momenta's rounding reaches
 * it; itself alone without inertia) and |dF/dw| and |dF/dz| on its
 * diagonal (fw_diag, fz_diag: with none, no bound): rgrp, rg_ptr,
 * rg_idx. */
static void rounding_setup(emn_integ *it, const sign_vectors *sv)
{
    emn_form *f = it->f;
    int n = it->n;
    int *grp = emn_xmalloc(((size_t)n + 1) * sizeof(int)), ng = 0;
    int *list = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *lptr = emn_xmalloc(((size_t)n + 2) * sizeof(int));
    int nl = 0;
    for (int j = 0; j < n; j++) grp[j] = -1;
    lptr[0] = 0;
    /* the null vectors of dp/dw's blocks (as null_setup finds them, all
     * of them), then the sign vectors of larger ones, then vz */
    block_walk W;
    walk_init(&W, &f->lin[1], n);
    while (walk_next(&W)) {
        int m = W.m, l0 = nl;
        for (int c = 0; c < m; c++) {
            bool in = false;
            for (int i = 0; i < m && !in; i++) in = fabs(W.d[i]) <= 1e-10 * W.top && fabs(W.v[(size_t)i * m + c]) > 1e-6;
            if (in && grp[W.queue[c]] < 0) {
                grp[W.queue[c]] = ng;
                list[nl++] = W.queue[c];
            }
        }
        if (nl > l0) lptr[++ng] = nl;
    }
    walk_free(&W);
    for (int k = 0; k < sv->n; k++) {
        int l0 = nl;
        for (int q = sv->ptr[k]; q < sv->ptr[k + 1]; q++)
            if (grp[sv->idx[q]] < 0) {
                grp[sv->idx[q]] = ng;
                list[nl++] = sv->idx[q];
            }
        if (nl > l0) lptr[++ng] = nl;
    }
    for (int k = 0; k < it->nvz; k++)
        if (grp[it->vz[k]] < 0) {
            grp[it->vz[k]] = ng;
            list[nl++] = it->vz[k];
            lptr[++ng] = nl;
        }
    if (ng > 0) {
        it->rgrp = grp;
        it->rg_ptr = lptr;
        it->rg_idx = list;
    } else {
        free(grp); free(lptr); free(list);
    }
}

/* What the rounding of the momenta of coordinate j's group
 * (rounding_setup) makes of its value at each of the last `past`
 * accepted points and the trial, at most: eps (|p| + |hp| + h/2 |F's
 * terms|) over its damping, h/2 (|dF/dw| + h/2 |dF/dz|), for its
 * velocity, times h/2 for its value.  0 where none is known. */
static double rounding_z(const lte_job *L, int j, int past)
{
    const emn_integ *it = L->it;
    int g = it->rgrp ? it->rgrp[j] : -1;
    double stiff = it->fw_diag[j] + 0.5 * L->h * it->fz_diag[j];
    if (g < 0 || !(stiff > 0)) return 0;
    double pmax = 0, fmax = 0;
    for (int q = it->rg_ptr[g]; q < it->rg_ptr[g + 1]; q++) {
        int k = it->rg_idx[q];
        pmax = max_num(pmax, fabs(it->ptry[k]));
        for (int i = 0; i < past && i < 3; i++) pmax = max_num(pmax, fabs(it->p[i][k]));
    }
    /* a constant momentum's F, 0 but for the residual each step's Newton
     * iteration leaves (within reltol of its terms): on a step short
     * beside the one before (after a corner), the next solve's correction
     * of it is most of a constrained coordinate's motion (a mass-less
     * spring node that a movable plate's force holds, flux formulation:
     * 8e-17 m, whatever the step) */
    if (it->kz[j]) {
        fmax = fabs(it->Ftry[j]);
        for (int i = 0; i < past && i < 3; i++) fmax = max_num(fmax, fabs(it->F[i][j]));
    }
    return (DBL_EPSILON * (2 * pmax + 0.5 * L->h * it->scale[j]) + 0.5 * L->h * fmax) / stiff;
}

/* The error test's numbers for one pass (z's, then p's), from the
 * step's state and its estimate's coefficients. */
typedef struct lte_arrays {
    const double *y, *y1, *d, *d1, *d2, *sc;
} lte_arrays;

/* The tolerance of coordinate j of pass `pass`, ty0 for its value and
 * ad0 for its rate (as lte_run), before trtol. */
static inline __attribute__((always_inline)) double coord_tol(const lte_job *L, int pass, const lte_arrays *A,
                                                              int j, double ty0, double ad0)
{
    const emn_integ *it = L->it;
    const double *y = A->y, *y1 = A->y1, *d = A->d, *d1 = A->d1, *sc = A->sc;
    double rt = it->o.reltol;
    double dscale = fabs(d[j]) > fabs(d1[j]) ? fabs(d[j]) : fabs(d1[j]);
    if (sc && sc[j] > dscale) dscale = sc[j];
    double ty = ty0;
    if (pass) ty += rt * (fabs(y[j]) > fabs(y1[j]) ? fabs(y[j]) : fabs(y1[j]));
    /* on a restart's first-order step, whose error is O(h)
     * against the motion test (h^2/2 dw/dt over h |w|), a
     * coordinate read only as an inductor's flux or a
     * capacitor's charge may also err by reltol of that branch,
     * SPICE's measure: it comes once per breakpoint and does not
     * pile up with the steps (on every step it would: a series
     * RLC at reltol 1e-6 drifted 1.2e-4 of its peak) */
    else if (L->s->order == 1 && it->vs_ptr[j + 1] > it->vs_ptr[j]) ty += rt * coord_size(it, j);
    double td = L->h * (rt * dscale + ad0);
    return ty > td ? ty : td;
}

/* Coordinate j of pass `pass`, tolerances ty0 for its value and ad0 for
 * its rate (as lte_run): *err and *worst raised if its ratio is the
 * largest yet. */
static inline __attribute__((always_inline)) void lte_coord(const lte_job *L, int pass, const lte_arrays *A, int j,
                                                            double ty0, double ad0, bool two, double *err,
                                                            int *worst)
{
    const emn_integ *it = L->it;
    const double *d = A->d, *d1 = A->d1, *d2 = A->d2;
    double k1 = L->k1, k2 = L->k2;
    /* A first-order step's estimate for z, h/2 |w - w1|, is the
     * change of the velocity over the step: for a cyclic coordinate
     * (nothing depends on its value, emn_form_z_used) that is no error
     * of anything, and after a corner it would hold the restart to
     * steps over which no node voltage moves by more than reltol.
     * On any step, a cyclic coordinate without inertia (a node with no
     * capacitor and no inductor, a loop with no inductor) has no error
     * of its own to measure: its velocity is algebraic, set at each
     * time by the coordinates that do have inertia, whose errors are
     * measured.  What its z test would see is the trapezoidal rule's
     * undamped alternation of an algebraic velocity after a
     * first-order step (a loop of a resistor and a moving coil, whose
     * current follows the coil's velocity): an error that does not
     * shrink with the step, so the test would cut the step to nothing,
     * as SPICE, which tests only capacitors' and inductors' states,
     * does not.  A coordinate a constraint sets (zalg) is tested from
     * its values instead (alg_ratio), and its momentum not at all: p
     * and F read no velocity, so what error they have is its value's,
     * and F is the constraint's residual, whose rounding at a zero
     * crossing of the force (a sine's, at t = 1 s) the test took for an
     * error of 10^4 tolerances. */
    if (it->zalg[j] || (!pass && (it->zused[j] ? !it->inertia[j] && L->vz_ok
                                                : L->s->order == 1 || !it->inertia[j])))
        return;
    double est = fabs(k1 * (d[j] - d1[j]) - (two ? k2 * (d1[j] - d2[j]) : 0));
    /* less what the rounding of the velocities can make of it
     * (rounding_z: per velocity, 2 / h of that on the value), as
     * alg_ratio's floor */
    if (!pass && it->rgrp) est -= (fabs(k1) + fabs(k2)) * 2 * (2 / L->h) * rounding_z(L, j, two ? 2 : 1);
    /* trtol multiplies every tolerance, as SPICE's does (a
     * multiple of the estimate's coefficients instead would turn
     * into infinities, and the test into NaN, at a tiny trtol) */
    double tol = coord_tol(L, pass, A, j, ty0, ad0) * it->o.trtol;     /* > 0: every ad is */
    if (est > *err * tol) {
        *err = est / tol;
        *worst = j;
    }
}

#if defined(__GNUC__)
/* Two coordinates at a time, in GCC's vector types (SSE2 on x86-64):
 * the same operations as lte_coord's, lane by lane, so the same
 * numbers. */
typedef double lte_v2 __attribute__((vector_size(16)));
typedef long long lte_m2 __attribute__((vector_size(16)));
#define LTE_V2 1

static inline lte_v2 v2_at(const double *p)
{
    lte_v2 v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline lte_v2 v2_abs(lte_v2 x)
{
    return (lte_v2)((lte_m2)x & (lte_m2){LLONG_MAX, LLONG_MAX});
}

/* a > b ? a : b in each lane, as the scalar code writes it (SSE2's
 * maxpd is exactly that, NaNs and signed zeros included) */
static inline lte_v2 v2_max(lte_v2 a, lte_v2 b)
{
#ifdef __SSE2__
    return (lte_v2)_mm_max_pd((__m128d)a, (__m128d)b);
#else
    lte_m2 m = a > b;
    return (lte_v2)((m & (lte_m2)a) | (~m & (lte_m2)b));
#endif
}

/* a > b in either lane */
static inline bool v2_any_gt(lte_v2 a, lte_v2 b)
{
#ifdef __SSE2__
    return _mm_movemask_pd(_mm_cmpgt_pd((__m128d)a, (__m128d)b)) != 0;
#else
    lte_m2 m = a > b;
    return (m[0] | m[1]) != 0;
#endif
}
#endif

/* Pass `pass` (z's, then p's) of the error test over coordinates [j0,
 * j1), with the tolerances of their values ay[(j - o) * as] and rates
 * ad[(j - o) * as] (as = 0: one for all): *err and *worst raised to its
 * largest ratio and where it is.  two: the estimate has a second
 * difference (k2 != 0).  Inlined with pass, as and two constant, each
 * copy of the loop keeps only its own work (lte_rows).  With one
 * tolerance for all, two coordinates are tested at a time, and only a
 * pair where one may raise the ratio goes through lte_coord: on rc-1e5
 * cut to 10 ps the test took 413M instructions one by one, 186M in
 * pairs. */
static inline __attribute__((always_inline)) void lte_run(const lte_job *L, int pass, int j0, int j1,
                                                          const double *ay, const double *ad, int o, int as,
                                                          bool two, double *err, int *worst)
{
    const emn_integ *it = L->it;
    lte_arrays A = {pass ? it->ptry : it->ztry, pass ? it->p[0] : it->z[0], pass ? it->Ftry : it->wtry,
                    pass ? it->F[0] : it->w[0], pass ? it->F[1] : it->w[1], NULL};
    if (it->have_right) A.d1 = pass ? it->F_right : it->w_right;       /* past a breakpoint */
    /* a momentum's rate F is a sum that cancels (Kirchhoff's current
     * law at a node without capacitance): the Newton iteration fixes
     * it only to reltol of the terms summed, so its error test is
     * measured against them too */
    if (pass) A.sc = it->scale;
    int j = j0;
#ifdef LTE_V2
    if (as == 0 && (pass || L->s->order == 2)) {
        const double *y = A.y, *y1 = A.y1, *d = A.d, *d1 = A.d1, *d2 = A.d2, *sc = A.sc;
        const bool *zt = L->vz_ok ? it->ztest_vz : it->ztest, *za = it->zalg;
        bool pmask = pass && it->nalg > 0;     /* else every p is tested */
        double rt = it->o.reltol;
        lte_v2 K1 = {L->k1, L->k1}, K2 = {L->k2, L->k2}, H = {L->h, L->h}, RT = {rt, rt};
        lte_v2 TR = {it->o.trtol, it->o.trtol}, TY = {ay[0], ay[0]}, AD = {ad[0], ad[0]};
        for (; j + 2 <= j1; j += 2) {
            lte_v2 dv = v2_at(d + j), d1v = v2_at(d1 + j);
            lte_v2 est = K1 * (dv - d1v);
            if (two) est -= K2 * (d1v - v2_at(d2 + j));
            est = v2_abs(est);
            /* a coordinate the z test skips (lte_coord) cannot raise it */
            if (!pass) est = (lte_v2)((lte_m2)est & (lte_m2){-(long long)zt[j], -(long long)zt[j + 1]});
            else if (pmask) est = (lte_v2)((lte_m2)est & (lte_m2){(long long)za[j] - 1, (long long)za[j + 1] - 1});
            lte_v2 dscale = v2_max(v2_abs(dv), v2_abs(d1v));
            lte_v2 ty = TY;
            if (pass) {
                dscale = v2_max(v2_at(sc + j), dscale);
                ty += RT * v2_max(v2_abs(v2_at(y + j)), v2_abs(v2_at(y1 + j)));
            }
            lte_v2 td = H * (RT * dscale + AD);
            lte_v2 tol = v2_max(ty, td) * TR;
            if (v2_any_gt(est, (lte_v2){*err, *err} * tol)) {
                lte_coord(L, pass, &A, j, ay[0], ad[0], two, err, worst);
                lte_coord(L, pass, &A, j + 1, ay[0], ad[0], two, err, worst);
            }
        }
    }
#endif
    for (; j < j1; j++) lte_coord(L, pass, &A, j, ay[(j - o) * as], ad[(j - o) * as], two, err, worst);
}

/* Pass `pass` over coordinates [j0, j1) of half `half`: the electrical
 * ones with their kind's tolerances, then the mechanical ones with their
 * own. */
static inline __attribute__((always_inline)) void lte_pass(lte_job *L, int pass, bool two, int half, int j0, int j1)
{
    const emn_integ *it = L->it;
    int je = etol_end(it, j0, j1);
    const double *ay = pass ? it->tol_py : it->tol_zy, *ad = pass ? it->tol_pd : it->tol_zd;
    double err = L->err[pass][half];
    int worst = L->worst[pass][half];
    lte_run(L, pass, j0, je, &it->etol[pass ? T_PY : T_ZY], &it->etol[pass ? T_PD : T_ZD], 0, 0, two, &err, &worst);
    lte_run(L, pass, je, j1, ay, ad, it->f->ne, 1, two, &err, &worst);
    L->err[pass][half] = err;
    L->worst[pass][half] = worst;
}

/* Coordinates [j0, j1) of half `half`, after those before them in it:
 * its largest ratios and where they are, raised. */
static void lte_rows(lte_job *L, int half, int j0, int j1)
{
    if (L->k2 != 0) {
        lte_pass(L, 0, true, half, j0, j1);
        lte_pass(L, 1, true, half, j0, j1);
    } else {
        lte_pass(L, 0, false, half, j0, j1);
        lte_pass(L, 1, false, half, j0, j1);
    }
}

static void lte_half(void *arg, int half)
{
    lte_job *L = arg;
    int j0, j1;
    half_range(L->it, half, &j0, &j1);
    lte_rows(L, half, j0, j1);
}


/* The error constant C of a step of order `order`: its local error is
 * C h^(order+1) times the (order+1)th derivative. */
static double lte_const(const emn_integ *it, int order)
{
    return order == 1 ? 0.5 : (it->o.method == EMN_METHOD_TRAP ? 1.0 / 12 : 2.0 / 9);
}

/* The weights of the divided difference of N values at offsets x[0 ..
 * N) from the trial point (itself first): v[N - 1] = sum wt[i] y(x[i]),
 * times k (C h^q and the difference's factorial) into wt[0 .. N); and
 * into wt[N] the sum of their magnitudes, what values each good to 1 make
 * of the estimate at most (the offsets decrease, so the weights alternate
 * in sign and the bound is reached). */
static void value_weights(const double *x, int N, double k, double *wt)
{
    double sum = 0;
    for (int i = 0; i < N; i++) {
        double p = 1;
        for (int j = 0; j < N; j++)
            if (j != i) p *= x[i] - x[j];
        wt[i] = k / p;
        sum += fabs(wt[i]);
    }
    wt[N] = sum;
}

/* The test of a step of formula s and length h, ready to run: its
 * coefficients, and nothing found yet. */
static void lte_setup(lte_job *L, const emn_integ *it, const step_formula *s, double h)
{
    double C = lte_const(it, s->order);
    /* est = |k1 (d - d1) - k2 (d1 - d2)|: h^2/2 y'' from two points, or
     * C h^3 y''' from three */
    double hp = it->h, k1, k2;
    if (s->order == 1) {
        k1 = C * h;
        k2 = 0;
    } else {
        k1 = C * h * h * 2 / (h + hp);
        k2 = C * h * h * h * 2 / ((h + hp) * hp);
    }
    *L = (lte_job){it, s, h, k1, k2, {{0, 0}, {0, 0}}, {{-1, -1}, {-1, -1}}, false, false, false, {0}};
    /* the tests from values: the trial and order + 1 accepted points,
     * all since the last breakpoint (the points' times from the step
     * lengths, not the times themselves: near t = 1 s the difference of
     * two times 1e-11 s apart keeps five digits) */
    int N = s->order + 2, m = it->npast < it->since_bp ? it->npast : it->since_bp;
    if (m + 2 >= N && (it->nalg > 0 || it->nvz > 0 || it->nbs > 0)) {
        double x[4] = {0, -h, -h - it->h, -h - it->h - it->hprev};
        value_weights(x, N, C * (s->order == 1 ? 2 * h * h : 6 * h * h * h), L->vw);
        L->vready = true;
        L->vz_ok = it->nvz > 0 && s->order == 2;
    }
}

/* The z test of the coordinates a constraint sets (zalg), raising *err
 * and *worst.  Such a coordinate's value is exact to its constraint, and
 * its velocity is the formula's derivative of the values: under the
 * trapezoidal rule, w = 2 (z - z1) / h - w1 carries whatever error w1
 * had into w with its sign flipped, step after step, undamped.  Measured
 * from the velocities as lte_coord measures the others, that alternation
 * is an error that does not shrink with the step, and where the velocity
 * passes zero and its tolerance with it (a spring under a sine force, at
 * the end of its travel) the test cut the step to nothing.  Measured
 * from the values, the estimate is the one lte_coord makes of a smooth
 * velocity, C h^(q+1) z^(q+1), from the divided difference of the trial
 * value and the accepted ones since the last breakpoint.  The two steps
 * after a breakpoint lack points for it and go untested, as the first
 * step of all does: the restart keeps them short.  (The consistent slope
 * at the breakpoint cannot stand in for a point: it is a difference
 * quotient over a step of 1e-9 hmax, and the rounding of the values
 * divided by that step would be the estimate.) */
static void alg_ratio(const lte_job *L, const int *list, int nlist, bool vz, double *err, int *worst)
{
    const emn_integ *it = L->it;
    if (!L->vready) return;
    int N = L->s->order + 2;            /* points: the trial and N - 1 accepted */
    const double *wt = L->vw;
    lte_arrays A = {it->ztry, it->z[0], it->wtry, it->have_right ? it->w_right : it->w[0], NULL, NULL};
    for (int k = 0; k < nlist; k++) {
        int j = list[k];
        /* sum: the divided difference; floor: what the rounding of the
         * values, each good to eps (|z| + |t z'|) as the time its
         * constraint was evaluated at is good to eps t, makes of it */
        double zmax = fabs(it->ztry[j]), sum = wt[0] * it->ztry[j];
        for (int i = 1; i < N; i++) {
            sum += wt[i] * it->z[i - 1][j];
            zmax = max_num(zmax, fabs(it->z[i - 1][j]));
        }
        double rate = max_num(fabs(it->wtry[j]), fabs(A.d1[j]));
        double est = fabs(sum), floor = wt[N] * DBL_EPSILON * (zmax + (fabs(it->t) + L->h) * rate);
        /* ... and what the values' departures from their constraints
         * make of it: each point's residuals F, plus the rounding of the
         * terms the constraints sum (it->scale: the other coordinates'
         * values, each good to eps, and F's sum, good to eps), through
         * the inverse of the constraints' stiffness -dF/dz (alg_inverse).
         * A constraint that sums terms far larger than its value (a
         * capacitor loop's charge as the difference of a current source's
         * 1e-4 C and an inductor loop's) holds to some 1e-20 C, where
         * reltol 1e-6 times CHGTOL allows 1e-20 C
         * (tests/netlists/tran/ctank_sin.cir); two loops through parallel
         * capacitors of 1 uF, whose split a stiffness 50 times below
         * either loop's own sets, to 50 times their residuals' share. */
        /* ... and, without inertia, what the rounding of its momentum
         * makes of it */
        if (vz) floor += wt[N] * rounding_z(L, j, N - 1);
        int q0 = vz ? 0 : it->ainv_ptr[k], q1 = vz ? 0 : it->ainv_ptr[k + 1];
        for (int q = q0; q < q1; q++) {
            int l = it->alg[it->ainv_at[q]];
            double dev = fabs(wt[0] * it->Ftry[l]) + wt[N] * 2 * DBL_EPSILON * it->scale[l];
            for (int i = 1; i < N; i++) dev += fabs(wt[i] * it->F[i - 1][l]);
            floor += it->ainv[q] * dev;
        }
        /* a coordinate without inertia (vz): the smaller of this and
         * lte_coord's estimate from its velocities, two estimates of the
         * same error, of which the velocities' is the one an alternation
         * inflates */
        if (vz) est = min_num(est, fabs(L->k1 * (it->wtry[j] - A.d1[j]) - L->k2 * (A.d1[j] - it->w[1][j])));
        /* an estimate the rounding alone could make is no error: on the
         * short steps that land on tstop near t = 1 s it was all there
         * was.  The ratio is of what exceeds it (a step passes as if the
         * floor were added to the tolerance), so that an estimate of
         * rounding, which does not shrink with the step, lets the step
         * grow again rather than hold it (a linear circuit's holds at
         * any ratio over 0.09) until some step's rounding exceeds the
         * tolerance and halves it: ctank_sin.cir at reltol 1e-6 went
         * down to 1e-16 s that way */
        double tol = coord_tol(L, 0, &A, j, abs_tol_zy(it, j), abs_tol_zd(it, j)) * it->o.trtol;
        if (est - floor > *err * tol) {
            *err = (est - floor) / tol;
            *worst = j;
        }
    }
}

/* The error test of the branches whose value is a sum of coordinates (an
 * inductor's flux between two nodes in the flux formulation, a
 * capacitor's charge shared by loops in the charge one), raising *err
 * and *worst: each as SPICE tests an inductor or a capacitor, from the
 * divided difference of its values (as alg_ratio: a velocity without
 * inertia alternates under the trapezoidal rule, its values do not),
 * against reltol of its own value and rate (its voltage, its current)
 * and CHGTOL, VNTOL or ABSTOL.  The coordinates' own test measures them
 * against theirs, a node's voltage or a loop's current, which can be far
 * larger than the branch's: an LC tank between two nodes at 5 kV rang
 * with its current 35% off ngspice's at the default reltol.  The two
 * steps after a breakpoint go untested, as alg_ratio's. */
static void branch_ratio(const lte_job *L, double *err, int *worst)
{
    const emn_integ *it = L->it;
    emn_form *f = it->f;
    if (!L->vready) return;
    int N = L->s->order + 2;
    const double *wt = L->vw;
    double rt = it->o.reltol, ad = it->etol[T_ZD], tabs = fabs(it->t) + L->h;
    for (int b = 0; b < it->nbs; b++) {
        int sl = it->bs[b];
        const emn_lmap *lm = &f->slots.v[sl];
        const int *ci = emn_lmap_ci(lm);
        double v[4] = {emn_form_slot_value(f, sl, it->ztry), it->bsv[0][b], it->bsv[1][b], it->bsv[2][b]};
        double ymax = 0, zs = 0, sum = 0;
        for (int i = 0; i < N; i++) {
            ymax = max_num(ymax, fabs(v[i]));
            sum += wt[i] * v[i];
        }
        for (int i = 0; i < lm->nc; i++) zs += fabs(lm->c[i] * it->ztry[ci[i]]);
        double rate = max_num(fabs(emn_form_slot_rate(f, sl, it->wtry)), fabs(it->bsr[b]));
        /* the values' rounding: of the coordinates they are sums of */
        double est = fabs(sum), floor = wt[N] * DBL_EPSILON * (ymax + zs + tabs * rate);
        double tol = max_num(rt * max_num(ymax, it->o.chgtol), L->h * (rt * rate + ad)) * it->o.trtol + floor;
        if (est > *err * tol) {
            *err = est / tol;
            *worst = it->bsj[b];
        }
    }
}

/* The branches' values at the point just accepted, after shifting the
 * last two back, and their rates from w; past a breakpoint, the
 * right-hand rates only (shift false). */
static void branch_history(emn_integ *it, const double *w, bool shift)
{
    if (it->nbs == 0) return;
    if (shift) {
        double *t = it->bsv[2];
        it->bsv[2] = it->bsv[1];
        it->bsv[1] = it->bsv[0];
        it->bsv[0] = t;
    }
    for (int b = 0; b < it->nbs; b++) {
        it->bsr[b] = emn_form_slot_rate(it->f, it->bs[b], w);
        if (shift) it->bsv[0][b] = emn_form_slot_value(it->f, it->bs[b], it->z[0]);
    }
}

/* What the halves found, in coordinate order (z's halves, then p's), and
 * the test of the coordinates a constraint sets: the error as a fraction
 * of the tolerance (<= 1 accepts) and *worst, where it is (unchanged if
 * nothing erred at all). */
static double lte_result(const lte_job *L, int *worst)
{
    double err = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int half = 0; half < 2; half++)
            if (L->err[pass][half] > err) {
                err = L->err[pass][half];
                *worst = L->worst[pass][half];
            }
    if (L->it->nalg > 0) alg_ratio(L, L->it->alg, L->it->nalg, false, &err, worst);
    if (L->vz_ok) alg_ratio(L, L->it->vz, L->it->nvz, true, &err, worst);
    if (L->it->nbs > 0) branch_ratio(L, &err, worst);
    return err;
}

/* Error of the step as a fraction of the tolerance (<= 1 accepts). */
static double lte_ratio(const emn_integ *it, const step_formula *s, double h, int *worst)
{
    lte_job L;
    lte_setup(&L, it, s, h);
    if (s->order == 1) {
        branch_sizes(it, it->ztry, it->vs_try);
        branch_sizes(it, it->z[0], it->vs_acc);
    }
    in_halves(it, lte_half, &L);
    return lte_result(&L, worst);
}

/* ------------------------------------------------------------- stepping */

static void rotate(emn_integ *it)
{
    double *t;
#define ROT(A) t = A[2]; A[2] = A[1]; A[1] = A[0]; A[0] = t
    ROT(it->z); ROT(it->w); ROT(it->p); ROT(it->F); ROT(it->Sh); ROT(it->sh);
#undef ROT
    it->tpast[2] = it->tpast[1];
    it->tpast[1] = it->tpast[0];
}

/* Running peaks of |z|, |p|, |w|, |F| of the mechanical coordinates (the
 * electrical tolerances do not use them). */
static void peaks_half(void *arg, int half)
{
    emn_integ *it = arg;
    int ne = it->f->ne, nm = it->n - ne, j0, j1;
    half_range(it, half, &j0, &j1);
    for (int j = j0 > ne ? j0 : ne; j < j1; j++) {
        double *pk = it->peak + (j - ne);
        pk[0] = max_num(pk[0], fabs(it->z[0][j] - pk[5 * nm]));
        pk[nm] = max_num(pk[nm], fabs(it->p[0][j]));
        pk[2 * nm] = max_num(pk[2 * nm], fabs(it->w[0][j]));
        pk[3 * nm] = max_num(pk[3 * nm], fabs(it->F[0][j]));
        pk[4 * nm] = max_num(pk[4 * nm], it->scale[j]);
    }
    mech_tolerances(it, j0, j1);
}

/* A mechanical coordinate without inertia whose velocity its damping
 * ties to another's (a spring node joined by a damper to a coil's), or,
 * undamped, whose place its springs tie to others' (a node between two
 * springs), moves with them, rounding and all: it is still while its
 * velocity (its displacement) is within twice what its dampers (its
 * springs) carry over from still coordinates, |dF_j/dw_k| |w_k| /
 * |dF_j/dw_j| at their peaks (|dF_j/dz_k| |z_k - z0_k| / |dF_j/dz_j|),
 * until that holds no more (each such one, after mech_tolerances has
 * judged them all). */
static void still_followers(emn_integ *it)
{
    int ne = it->f->ne, nm = it->n - ne;
    for (bool more = true; more;) {
        more = false;
        for (int q = 0; q < it->nfollow; q++) {
            int j = it->follow[q];
            double *pk = it->peak + (j - ne);
            if (isinf(it->tol_zd[j - ne])) continue;
            bool damped = it->fw_diag[j] > 0;
            const emn_cmat *D = &it->f->lin[damped ? 3 : 2];
            int r = damped ? 2 : 0;     /* the peak: |w|, or |z - z0| */
            double carried = 0;
            for (int e = D->rptr[j]; e < D->rptr[j + 1]; e++) {
                int k = D->col[e];
                if (k != j && k >= ne && isinf(it->tol_zd[k - ne]))
                    carried = fmax(carried, fabs(D->val[e]) * it->peak[k - ne + r * nm]);
            }
            if (pk[r * nm] <= 2 * carried / (damped ? it->fw_diag[j] : it->fz_diag[j])) {
                it->tol_zd[j - ne] = it->tol_py[j - ne] = it->tol_pd[j - ne] = INFINITY;
                more = true;
            }
        }
    }
}

static void mech_peaks(emn_integ *it)
{
    if (it->f->nm > 0) in_halves(it, peaks_half, it);
    if (it->nfollow > 0) still_followers(it);
}

/* The trial state becomes the latest point: buffers change hands rather
 * than contents. */
static void accept(emn_integ *it, double tnew, double h, const step_formula *s)
{
    double *t;
    rotate(it);
#define TAKE(A, B) t = A[0]; A[0] = B; B = t
    TAKE(it->z, it->ztry); TAKE(it->w, it->wtry); TAKE(it->p, it->ptry); TAKE(it->F, it->Ftry);
#undef TAKE
    it->tpast[0] = tnew;
    /* the sources' integrals as the step's rule made them at tnew (the
     * form's time is still tnew), held from now on; only the ruled ones'
     * entries are kept (the form reads no other) */
    for (int q = 0; q < it->nrsrc; q++) {
        int k = it->rsrc[q];
        it->Sh[0][k] = it->f->S[k];
        it->sh[0][k] = it->f->s[k];
    }
    emn_form_integrals(it->f, EMN_SRULE_FIXED, 0, it->Sh[0]);
    if (it->npast < 2) it->npast++;
    it->since_bp++;
    it->hprev = it->h;
    it->h = h;
    it->t = tnew;
    it->order = s->order;
    it->a0 = s->a;
    it->a1 = s->a1;
    it->a2 = s->a2;
    it->b1 = s->b1;
    mech_peaks(it);
    it->st.steps++;
}

/* The velocities of the coordinates a constraint sets (zalg), after a
 * trapezoidal step.  The rule's own, w = 2 (z - z1) / h - w1, carries
 * any error of w1 into w with its sign flipped and never damps it: after
 * a start from rest that the constraint contradicts (a capacitor across
 * a voltage source, charge formulation), the charging impulse's current
 * rang at 1e8 A, in turn up and down, for the whole run.  A backward
 * difference of the values forgets it (first order on the step's two
 * points, second order through three once they follow the last
 * breakpoint), but on a smooth motion it errs four times as much as the
 * rule.  So it replaces the rule's velocity only where the two disagree
 * by more than their own size, beyond the velocity's tolerance: a ring,
 * or a velocity passing zero.  p and F read no such velocity, so they
 * stand as evaluated. */
/* The backward difference of the last accepted points at the newest:
 * y' = c[0] y0 + c[1] y1 + c[2] y2, second order through three points
 * where they all follow the last breakpoint, else first order (c[2] =
 * 0). */
static void backward_difference(const emn_integ *it, double c[3])
{
    double h = it->h, hp = it->hprev;
    bool two = it->order == 2 && it->since_bp >= 2 && hp > 0;
    c[0] = two ? (2 * h + hp) / (h * (h + hp)) : 1 / h;
    c[1] = two ? -(h + hp) / (h * hp) : -1 / h;
    c[2] = two ? h / (hp * (h + hp)) : 0;
}

static void alg_rates(emn_integ *it)
{
    if (it->nalg + it->nwder == 0 || it->o.method != EMN_METHOD_TRAP) return;
    double c[3];
    backward_difference(it, c);
    for (int k = 0; k < it->nalg + it->nwder; k++) {
        int j = k < it->nalg ? it->alg[k] : it->wder[k - it->nalg];
        double wb = c[0] * it->z[0][j] + c[1] * it->z[1][j] + c[2] * it->z[2][j], wt = it->w[0][j];
        /* (a mechanical coordinate not yet tested has no tolerance but
         * the ring's own size: a spring node beside a coil at its
         * operating point rang at 2e-9 m/s) */
        double d = fabs(wt - wb), tz = abs_tol_zd(it, j);
        if (d > 0.5 * (fabs(wt) + fabs(wb)) && (d > tz || isinf(tz)))
            it->w[0][j] = wb;
    }
}

/* The velocities along the constraints of kernel_rows_setup, after a
 * trapezoidal step.  Along such a u, nothing reads the velocity (dp/dw u
 * = 0, dF/dw u = 0) and the step solves u'F = 0 afresh (null_history),
 * which sets g = u'dF/dz z; the rule's velocity along u is then its
 * derivative 2 (g - g1) / h - g1', which carries whatever error g1' had
 * into the next step with its sign flipped, undamped, as zalg's
 * (alg_rates).  Where g' passes zero (a current source's sine through a
 * capacitor and an inductor in series, at its peak), the error test,
 * which measures the node voltages against their own size, read that
 * ring as an error and cut the step to nothing.  A backward difference
 * of g (first order on the step's two points, second order through three
 * once they follow the last breakpoint) has no memory of it: the
 * velocity moves along u until u'dF/dz w is that difference.  Nothing
 * else reads that move: z, p and F stand. */
static void constraint_rates(emn_integ *it)
{
    if (it->njcon == 0 || it->o.method != EMN_METHOD_TRAP) return;
    double cb[3];
    backward_difference(it, cb);
    for (int k = 0; k < it->nkrow; k++) {
        if (!it->jcon[k]) continue;
        double g = 0, gw = 0;
        for (int e = it->jgptr[k]; e < it->jgptr[k + 1]; e++) {
            int c = it->jgcol[e];
            g += it->jgval[e] * (cb[0] * it->z[0][c] + cb[1] * it->z[1][c] + cb[2] * it->z[2][c]);
            gw += it->jgval[e] * it->w[0][c];
        }
        double x = (g - gw) / it->jdk[k];
        for (int q = it->jptr[k]; q < it->jptr[k + 1]; q++) it->w[0][it->jidx[q]] += it->jsign[q] * x;
    }
}

/* The velocities along the null vectors of dp/dw (kernel_setup), after
 * a trapezoidal step.  Such a combination has no inertia: what sets it
 * is the sum of its coordinates' forces u'F, zero at every time.  The
 * rule makes u'F at the new point the opposite of the last point's, so
 * whatever the solve left there (the Newton test's tolerance, a
 * single-precision factorization) alternates in sign from step to step
 * and is never damped: with a current source driving a capacitor
 * between two nodes from rest, the far node's voltage decayed towards
 * zero under an alternation that did not, and the error test, which
 * measures the velocity against its own size, cut the step to nothing
 * (flux formulation).  Each group's velocities (its vectors and the
 * resistive nodes beside them) move until their balances are zero, all
 * groups in one solve with kA; p does not change (dp/dw u = 0 and those
 * nodes have none), F by D times the move.  (Linear circuits only: there D is
 * constant.) */
static void kernel_rates(emn_integ *it)
{
    double *w = it->w[0], *F = it->F[0], *x = it->kx;
    const double *scale = it->scale;
    bool any = false;
    for (int g = 0; g < it->nkern; g++) {
        int d0 = it->gdir[g], d1 = it->gdir[g + 1], dv = d0 + it->kvec[g];
        /* a vector's balance within the rounding of its terms is left as
         * it is (the nodes beside it were never moved on their own): a
         * move would only be rounding too, and it would part a node from
         * one an inductor alone ties it to (whose current, the difference
         * of their flux linkages, is then exactly 0); the group moves
         * when one of its vectors' balances is more than that */
        bool mv = false;
        for (int d = d0; d < d1; d++) {
            double r = 0, t = 0;
            for (int q = it->kptr[d]; q < it->kptr[d + 1]; q++) {
                r += it->ksign[q] * F[it->kidx[q]];
                t += scale[it->kidx[q]];
            }
            bool real = d >= dv || fabs(r) > 8 * DBL_EPSILON * t;
            mv = mv || (d < dv && real);
            x[d] = real ? -r : 0;
        }
        it->kmove[g] = mv;
        any = any || mv;
        if (!mv)
            for (int d = d0; d < d1; d++) x[d] = 0;
    }
    if (!any) return;
    emn_lu_solve(it->klu, x);
    for (int g = 0; g < it->nkern; g++) {
        if (!it->kmove[g]) continue;
        for (int d = it->gdir[g]; d < it->gdir[g + 1]; d++) {
            for (int q = it->kptr[d]; q < it->kptr[d + 1]; q++) w[it->kidx[q]] += x[d] * it->ksign[q];
            for (int e = it->dptr[d]; e < it->dptr[d + 1]; e++) F[it->drow[e]] += x[d] * it->dval[e];
        }
    }
}

/* Whether a linear circuit's velocities all have inertia or follow the
 * others' balance: no constraint sets a value, whose velocity would
 * follow a source's slope (no zalg coordinate, no constraint of
 * kernel_rows_setup or null space of null_setup).  Then consistent_w's
 * residual tests every velocity (a constrained one's enters it only
 * through 1e-9 hmax of its value's change: a capacitor across a sine
 * source, charge formulation, passed it at its operating point's zero
 * current, where C V' is due). */
static bool rates_balanced(const emn_integ *it)
{
    return emn_form_is_linear(it->f) && it->nalg == 0 && it->njcon == 0 && it->nnull == 0;
}

/* Consistent velocities at t from coordinates z0 and momenta p0: a
 * backward Euler step of negligible length h.  As h -> 0 its equations
 * become p(z0, w) = p0 for coordinates with inertia and dp/dz w = F for
 * the algebraic ones, so the solution is the consistent w, without having
 * to sort the two.  The step runs from t to t + h, so a velocity that
 * follows a source's slope (a capacitor loop's current C dE/dt) takes the
 * slope after t.  Newton starts from wguess (zero if NULL): the matrix of
 * so short a step is badly conditioned (a C against G), and a solve from
 * zero leaves errors of reltol size in every velocity, where one from the
 * velocities before a corner corrects only what jumped.  Fcarry (at a
 * corner, the forces there; else NULL): each constant momentum's row is
 * solved for F = Fcarry, the residual the last step left, rather than
 * 0: solved for 0, a velocity that a constraint sets took that residual
 * over h (a mass-less spring node that a movable plate's and core's
 * forces hold, at a PULSE's corner: 1.6e-13 N of a 0.2 N force, over
 * 1e4 N/m and 5e-14 s, 3.2e-4 m/s on 3.9e-3, and the first-order step
 * after the corner, measuring against that, was cut to nothing).  With
 * steady, wguess is a steady state's (the operating point's, from which
 * z0 and p0 came) and a circuit of rates_balanced takes it as it is where
 * the step's equations already hold there: the operating point is solved
 * far tighter than the step's test, and the step's own matrix, of a =
 * 1e9 / hmax, serves no later step of such a circuit (its corners keep
 * their velocities: slopes_continue), at 10^6 nodes of a mesh 2.5 s of
 * factorization.  The
 * result is in it->wtry; returns 0 or 1. */
static int consistent_w(emn_integ *it, double t, const double *z0, const double *p0, const double *wguess,
                        const double *Fcarry, bool steady)
{
    int n = it->n;
    double h = fmin(it->o.hmax, it->o.tstop) * 1e-9;
    if (!(h > 0)) h = 1e-18;
    double a = 1 / h;
    if (it->srule) {        /* the sources' integrals by the same backward Euler step */
        for (int q = 0; q < it->nrsrc; q++) it->Shist[it->rsrc[q]] = -a * it->Sh[0][it->rsrc[q]];
        emn_form_integrals(it->f, EMN_SRULE_STEP, a, it->Shist);
    }
    for (int j = 0; j < n; j++) {
        it->hz[j] = -a * z0[j];
        it->hp[j] = -a * p0[j] + (Fcarry && it->kz[j] ? Fcarry[j] : 0);
        it->wtry[j] = wguess ? wguess[j] : 0;
    }
    if (it->njcon > 0) {
        /* kernel_residual's u'F at (z0, t), for the undamped u (no
         * velocity reaches it) */
        int bad = -1;
        emn_form_set_time(it->f, t);
        if (emn_form_eval(it->f, z0, it->wtry, it->ptry, it->Ftry, NULL, &bad)) return 1;
        for (int k = 0; k < it->nkrow; k++) {
            double s = 0;
            for (int q = it->jptr[k]; q < it->jptr[k + 1]; q++) s += it->jsign[q] * it->Ftry[it->jidx[q]];
            it->jc0[k] = s;
        }
    }
    it->jfix = it->nkrow > 0;
    /* From zero, the first solve is only as good as the matrix's
     * conditioning allows: a velocity no capacitance holds (a node joined
     * only through resistors) comes out wrong by ~eps a C / G, far inside
     * the residual test but enough to make the trapezoidal rule ring.  A
     * second iteration refines it. */
    it->min_iter = !wguess ? 2 : steady && rates_balanced(it) ? 0 : 1;
    it->stall_max = 16;
    it->rates_direct = true;
    int rc = newton(it, t + h, a, it->hz, it->hp, false, NULL, NULL, NULL);
    if (rc != 0) {
        /* again with more iterations: a nonlinear start may need them */
        int saved = it->o.itl4;
        it->o.itl4 = saved < 50 ? 50 : saved;
        for (int j = 0; j < n; j++) it->wtry[j] = wguess ? wguess[j] : 0;
        rc = newton(it, t + h, a, it->hz, it->hp, false, NULL, NULL, NULL);
        it->o.itl4 = saved;
    }
    it->min_iter = 1;
    it->stall_max = 0.1;
    it->rates_direct = false;
    it->jfix = false;
    if (it->srule) emn_form_integrals(it->f, EMN_SRULE_FIXED, 0, it->Sh[0]);
    return rc;
}

/* The coordinates a constraint sets (zalg) where their constraints put
 * them at t0, the others held: z (n long) in place.  A start that
 * contradicts a constraint (from rest, uic: a voltage source across
 * capacitors in the charge formulation, a current source through an
 * inductor in the flux one, a force on a spring without mass) has its
 * impulse at t0: charge flows around the loop of capacitors and sources
 * at once, and the constraint's values jump, as the flux formulation's
 * node voltages jump by themselves there.  Integrated from the
 * contradiction instead, the step shrank to nothing at once ("time step
 * too small").  So do the combinations along kernel_rows_setup's constraints (a
 * current source through a capacitor and an inductor in series, flux
 * formulation: the inductor takes the source's current at once, both
 * nodes' flux linkages jumping together).  Newton on the block of dF/dz
 * in the zalg rows and columns and the vectors' combinations of them
 * (their equations read no velocity), factored by emn_lu; z is left as
 * it was if it does not settle. */
static void alg_start(emn_integ *it, double t0, double *z)
{
    int na = it->nalg, n = it->n, m = na + it->njcon;
    if (m == 0) return;
    emn_form *f = it->f;
    const emn_sparse *J = &f->J;
    emn_form_set_time(f, t0);
    /* unknown and equation of each coordinate: its own (zalg), or its
     * constraint vector's (kernel_rows_setup's jcon) with its sign there;
     * -1 */
    int *pos = emn_xmalloc((size_t)n * sizeof(int) + 1), *hd = emn_xmalloc((size_t)J->nnz * sizeof(int) + 1);
    signed char *sg = emn_xmalloc((size_t)n + 1), *hs = emn_xmalloc((size_t)J->nnz + 1);
    for (int j = 0; j < n; j++) pos[j] = -1;
    for (int k = 0; k < na; k++) {
        pos[it->alg[k]] = k;
        sg[it->alg[k]] = 1;
    }
    for (int k = 0, u = na; k < it->nkrow; k++) {
        if (!it->jcon[k]) continue;
        for (int q = it->jptr[k]; q < it->jptr[k + 1]; q++) {
            pos[it->jidx[q]] = u;
            sg[it->jidx[q]] = it->jsign[q];
        }
        u++;
    }
    /* the block of -dF/dz (positive where the constraint is a stiffness)
     * in those unknowns and equations, on J's pattern: hd[q], the handle
     * of J's entry q in it, or -1, and hs[q] its sign */
    emn_sparse A;
    emn_sparse_init(&A, m);
    for (int c = 0; c < n; c++)
        for (int q = J->Ap[c]; q < J->Ap[c + 1]; q++) {
            int i = J->Ai[q];
            hd[q] = pos[c] >= 0 && pos[i] >= 0 ? emn_sparse_reserve(&A, pos[i], pos[c]) : -1;
            hs[q] = hd[q] >= 0 ? (signed char)(sg[i] * sg[c]) : 0;
        }
    emn_sparse_finalize(&A);
    emn_lu *lu = emn_lu_new();
    double *Fz = emn_xmalloc((size_t)J->nnz * sizeof(double) + 1);
    double *r = emn_xmalloc((size_t)m * sizeof(double) + 1), *tol = emn_xmalloc((size_t)m * sizeof(double) + 1);
    double *z1 = emn_xmalloc((size_t)n * sizeof(double) + 1);
    memcpy(z1, z, (size_t)n * sizeof(double));
    memset(it->wtry, 0, (size_t)n * sizeof(double));      /* read by none of these equations */
    bool settled = false;
    for (int iter = 0; iter < 20 && !settled; iter++) {
        int bad = -1;
        if (emn_form_eval(f, z1, it->wtry, it->ptry, it->Ftry, it->scale, &bad)) break;
        for (int k = 0; k < m; k++) r[k] = tol[k] = 0;
        for (int j = 0; j < n; j++) {
            if (pos[j] < 0) continue;
            r[pos[j]] -= sg[j] * it->Ftry[j];
            tol[pos[j]] += it->o.reltol * it->scale[j] + abs_tol_res(it, j);
        }
        settled = true;
        for (int k = 0; k < m; k++)
            if (!(fabs(r[k]) <= tol[k])) settled = false;
        if (settled || iter == 19 || emn_form_derivatives(f, z1, it->wtry, NULL, NULL, Fz, NULL)) break;
        emn_sparse_zero(&A);
        for (int q = 0; q < J->nnz; q++)
            if (hd[q] >= 0) A.Ax[emn_sparse_slot(&A, hd[q])] -= hs[q] * Fz[q];
        if (emn_lu_factor(lu, &A, NULL) < 0) break;
        emn_lu_solve(lu, r);
        for (int j = 0; j < n; j++)
            if (pos[j] >= 0) z1[j] -= sg[j] * r[pos[j]];
    }
    if (settled) memcpy(z, z1, (size_t)n * sizeof(double));
    emn_lu_free(&lu);
    emn_sparse_free(&A);
    free(Fz);
    free(r);
    free(tol);
    free(z1);
    free(pos);
    free(sg);
    free(hd);
    free(hs);
}

int emn_integ_start(emn_integ *it, double t0, const double *z0, const double *p0, const double *w0)
{
    int n = it->n;
    emn_form *f = it->f;
    it->srule = false;
    emn_form_integrals(f, EMN_SRULE_EXACT, 0, NULL);
    it->t = t0;
    it->npast = 0;
    it->since_bp = 0;
    it->restart = true;
    it->singular = false;
    memcpy(it->z[0], z0, (size_t)n * sizeof(double));
    alg_start(it, t0, it->z[0]);
    if (consistent_w(it, t0, it->z[0], p0, w0, NULL, w0 != NULL) != 0) {
        if (it->singular)
            snprintf(it->msg, sizeof it->msg, "no consistent initial state at t = %g: the Newton matrix is "
                     "singular (a zero pivot: nothing gives this coordinate inertia, stiffness or damping there)",
                     t0);
        else
            snprintf(it->msg, sizeof it->msg, "no consistent initial state found at t = %g", t0);
        return it->singular ? EMN_INTEG_SINGULAR : EMN_INTEG_NONCONV;
    }
    /* the state at t0 itself: z0 exactly (but for alg_start's), w0, and
     * p, F evaluated there */
    emn_form_set_time(f, t0);
    memcpy(it->w[0], it->wtry, (size_t)n * sizeof(double));
    int bad = -1;
    if (emn_form_eval(f, it->z[0], it->w[0], it->p[0], it->F[0], NULL, &bad)) {
        snprintf(it->msg, sizeof it->msg, "the initial state gives a non-finite value");
        return EMN_INTEG_NAN;
    }
    /* A constant momentum's rate is exactly 0; F there is 0 but for the
     * start's own residual and the sources' values at t0 against the
     * velocities consistent at t0 + 1e-9 hmax.  A resistive node's
     * trapezoidal history (not solved afresh: const_momentum_history)
     * would flip that F from step to step for the whole run, undamped:
     * a coil's loop through such a node carried its 8e-12 A into the
     * spring node's velocity as a constant 3.6e-11 m/s where nothing
     * moves (random electromechanical circuit 440, flux formulation). */
    for (int j = 0; j < n; j++)
        if (it->kz[j]) it->F[0][j] = 0;
    branch_history(it, it->w[0], true);
    it->tpast[0] = t0;
    it->npast = 0;
    /* the sources' integrals from here on as the steps' rule makes them,
     * from their exact values at t0 */
    for (int k = 0; k < 3; k++) {
        memcpy(it->Sh[k], f->S, (size_t)f->nsrc * sizeof(double));
        memcpy(it->sh[k], f->s, (size_t)f->nsrc * sizeof(double));
    }
    emn_form_integrals(f, EMN_SRULE_FIXED, 0, it->Sh[0]);
    it->srule = true;
    it->h = it->hprev = 0;
    for (int s = 0; s < f->nsrc; s++) it->src_next[s] = -INFINITY;
    it->next_bp = next_break(it, t0);
    memset(it->peak, 0, 5 * (size_t)(n - f->ne) * sizeof(double));
    memcpy(it->peak + 5 * (size_t)(n - f->ne), it->z[0] + f->ne, (size_t)(n - f->ne) * sizeof(double));
    mech_peaks(it);
    return 0;
}

void emn_integ_form_at(emn_integ *it, int k)
{
    if (it->srule) emn_form_integrals(it->f, EMN_SRULE_FIXED, 0, it->Sh[k]);
    emn_form_set_time(it->f, it->tpast[k]);
    if (it->srule) emn_form_integrals(it->f, EMN_SRULE_FIXED, 0, it->Sh[0]);
}

int emn_integ_probe(emn_integ *it, double *z1, double *h)
{
    int n = it->n;
    double t0 = it->t, dt = fmin(it->o.hmax, it->o.tstop) * 1e-9;
    if (!(dt > 0)) dt = 1e-18;
    for (int j = 0; j < n; j++) z1[j] = it->z[0][j] + dt * it->w[0][j];
    emn_form_set_time(it->f, t0 + dt);
    int bad = -1;
    /* p at the first point, into ptry: consistent_w reads it before its
     * Newton iteration writes there */
    if (emn_form_eval(it->f, z1, it->w[0], it->ptry, it->Ftry, NULL, &bad)) return 1;
    *h = dt;
    return consistent_w(it, t0 + dt, z1, it->ptry, it->w[0], NULL, false);
}

/* Each gauge's values moved back towards zero, all by the same number c:
 * its first coordinate's latest value, when every value it keeps (the
 * last three points) is within a factor of two of c, where the
 * subtraction is exact.  Nothing reads those values but as differences,
 * which do not change; but the differences lose what the values carry
 * above them: a flux linkage that an inductor between two nodes reads
 * grows as the integral of their voltage, and an inductor of 10 uH
 * between nodes whose linkages had reached 2.5 Wb (after a pulse of 1 A
 * into 100 kohm) had its current rounded to 5e-11 A, which the 100 kohm
 * beside it turned into 5 uV steps of the node voltages, alternating
 * under the trapezoidal rule; with vntol 1 uV the error test cut the
 * step to nothing (random circuit d79, flux formulation). */
static void recenter(emn_integ *it)
{
    for (int k = 0; k < it->ngauge; k++) {
        int q0 = it->gauge_ptr[k], q1 = it->gauge_ptr[k + 1];
        double c = it->z[0][it->gauge_idx[q0]], lo = 0.5 * fabs(c), hi = 2 * fabs(c);
        bool exact = c != 0;
        for (int m = 0; m < 3 && exact; m++)
            for (int q = q0; q < q1 && exact; q++) {
                double v = it->z[m][it->gauge_idx[q]];
                exact = (v > 0) == (c > 0) && fabs(v) >= lo && fabs(v) <= hi;
            }
        if (!exact) continue;
        for (int m = 0; m < 3; m++)
            for (int q = q0; q < q1; q++) it->z[m][it->gauge_idx[q]] -= c;
    }
}

/* The sources' integrals for a step of formula s: the rule that makes
 * each coordinate from its rate, z = (w - hz) / a, makes them from the
 * sources' values, S = (s - hS) / a, from their values at the accepted
 * points.  An inductor from a voltage source's node to another node
 * (flux formulation) has as its flux linkage the difference of the two;
 * with the source's exact integral beside the node's integrated by the
 * rule, the difference kept the rule's error in integrating the
 * source's voltage, large beside a small current: a 10 mH inductor from
 * a 1 kHz, 1 V sine source carried a current 2.5e-2 of its peak off
 * ngspice's (random circuit 66 of tests/random.sh; ngspice's own default
 * run: 5.7e-4).  (Which integrals follow the rule is the form's choice:
 * emn_form_integrals.) */
static void step_integrals(emn_integ *it, const step_formula *s)
{
    emn_form *f = it->f;
    for (int q = 0; q < it->nrsrc; q++) {
        int k = it->rsrc[q];
        it->Shist[k] = s->a1 * it->Sh[0][k] + s->a2 * it->Sh[1][k] + s->b1 * it->sh[0][k];
    }
    emn_form_integrals(f, EMN_SRULE_STEP, s->a, it->Shist);
}

/* True if nothing moves and nothing pushes at the last accepted point:
 * every velocity and every force exactly zero (a start from rest, or from
 * an operating point under sources that are all zero, before any source
 * has moved). */
static bool at_rest(const emn_integ *it)
{
    for (int j = 0; j < it->n; j++)
        if (it->w[0][j] != 0 || it->F[0][j] != 0) return false;
    return true;
}

/* True if p and F are finite at the last accepted state and time t; on
 * failure it->nan_coord is a coordinate where they are not. */
static bool state_finite(emn_integ *it, double t)
{
    emn_form *f = it->f;
    int bad = -1;
    emn_form_set_time(f, t);
    if (emn_form_eval(f, it->z[0], it->w[0], it->ptry, it->Ftry, NULL, &bad)) return false;
    for (int j = 0; j < it->n; j++)
        if (!isfinite(it->ptry[j]) || !isfinite(it->Ftry[j])) {
            it->nan_coord = j;
            return false;
        }
    return true;
}

/* A linear circuit's steps come from the ladder hmax / 2^k, so that the
 * few step sizes it uses keep their factorizations in the cache: the
 * largest ladder step not above h, or with `nearest` the one nearest h
 * by ratio. */
static double ladder(const emn_integ *it, double h, bool nearest)
{
    double hm = it->o.hmax;
    if (h >= hm) return hm;
    double r = log2(hm / h);
    int k = (int)(nearest ? round(r) : ceil(r - 1e-9));
    return k > 60 ? h : ldexp(hm, -k);
}

/* The largest ladder step not above h (h itself if it is one, within
 * rounding). */
static double ladder_floor(const emn_integ *it, double h)
{
    double hm = it->o.hmax;
    if (h >= hm) return hm;
    int k = (int)floor(log2(hm / h) + 1e-9);
    double l = ldexp(hm, -k);
    if (l > h * (1 + 1e-9)) l = ldexp(hm, -(k + 1));
    return fabs(l - h) <= 1e-9 * h ? h : l;
}

/* Whether no velocity jumps at the breakpoint just landed on, so that
 * the right-hand velocities and rates are the left-hand ones: a linear
 * circuit under the trapezoidal rule whose velocities all have inertia
 * or follow the others' balance (rates_balanced), and sources whose
 * values go on without a jump (a corner changes only their slopes).
 * consistent_w would find the same velocities but for its step of 1e-9
 * hmax times their slopes, at the cost of a solve and two evaluations:
 * 7% of an RC ladder's instructions, whose PWL loads have corners every
 * few steps. */
static bool slopes_continue(const emn_integ *it)
{
    return it->o.method == EMN_METHOD_TRAP && rates_balanced(it) && emn_form_sources_continuous(it->f, it->t);
}

int emn_integ_step(emn_integ *it, double tlimit)
{
    emn_form *f = it->f;
    int n = it->n;
    double t = it->t;
    bool linear = emn_form_is_linear(f);
    /* first order after a breakpoint; the trapezoidal rule needs no
     * history, so it also takes the very first step, BDF2 needs two points */
    bool first = it->npast < 1;
    int order = (it->restart && !first) || it->o.maxord < 2 ? 1 : 2;
    double h;
    /* The very first step: a tenth of the largest (as SPICE) for a linear
     * circuit, whose every new step size on the way up is a new
     * factorization (a 10^5-node mesh factors in a second), and of the
     * ladder the step nearest it, as after a corner: an eighth, whose
     * factorization the trapezoidal step kept after each restart uses
     * again (rounded down, a sixteenth would be factored for this step
     * alone).  Far shorter for a nonlinear one, which refactors at every
     * step anyway. */
    /* A corner met at rest (nothing moved before a source's delay ran
     * out) is a start too, whose first step is as short as a nonlinear
     * circuit's: untested (below), a tenth of hmax there left random
     * RLC circuits driven by a delayed PULSE up to eight times the error
     * of a tested restart. */
    bool start = it->npast == 0 || (it->restart && at_rest(it));
    if (start) {
        /* No error test can judge this step (see below), so below the
         * default reltol a linear circuit's is shortened as the square
         * root of reltol: a first-order step's error, O(h^2), then
         * shrinks with reltol.  A nonlinear one's is short already. */
        double tight = linear ? fmin(1, sqrt(it->o.reltol / 1e-3)) : 1;
        h = fmin(it->o.hmax, fmin(it->next_bp, tlimit) - t) * (linear && it->npast == 0 ? 0.1 : 1e-4) * tight;
        if (linear) h = ladder(it, h, true);
    } else {
        h = it->hnext;
    }
    h = fmin(h, it->o.hmax);
    /* past a breakpoint, restart short and first order, as SPICE does
     * (a tenth of the step before the corner or of the way to the next
     * one): the sources' slopes changed, the history before the corner
     * says nothing about what follows, and a long first-order step there
     * leaves an error in slow modes (a pad inductor's current) that the
     * error test cannot see */
    if (it->restart && !start) {
        double gap = fmin(it->next_bp, tlimit) - t;
        double cap = 0.1 * (it->hfull > 0 ? fmin(it->hfull, gap) : gap);
        /* a linear circuit's: the ladder step nearest it (an eighth of
         * the step before a corner, not the sixteenth that rounding down
         * would give) */
        h = fmin(h, linear ? ladder(it, cap, true) : cap);
    }
    if (linear) h = ladder(it, h, false);
    double *hzbuf = it->hz, *hpbuf = it->hp;
    int worst = -1;
    for (;;) {
        double target = fmin(it->next_bp, tlimit);
        bool lands = false;
        double hladder = 0;     /* h's ladder value, when it is one */
        if (linear && target - t < h * (1 - 1e-9)) {
            /* A step that would pass the target: when the way there is a
             * ladder step or two (breakpoints on the grid of hmax / 2^k,
             * which aligned steps keep to), take the larger one, whose
             * factorization is cached; otherwise land at once (one new
             * factorization rather than many short steps). */
            double room = target - t, l = ladder_floor(it, room);
            double rest = room - l;
            if (rest <= 1e-9 * room || ladder_floor(it, rest) >= rest * (1 - 1e-9)) h = l;
        }
        if (linear) {
            double l = ladder_floor(it, h);
            if (fabs(l - h) <= 1e-9 * h) hladder = ladder(it, l, false);
        }
        if (t + h >= target * (1 - 1e-13) || t + h >= target - 1e-13 * fabs(h)) {
            h = target - t;
            lands = true;
        } else if (!linear && t + 2 * h > target) {
            h = (target - t) / 2;   /* no sliver of a step before the target */
        }
        if (h < it->o.hmin) {
            if (it->singular) {     /* bad_coord: the zero pivot */
                snprintf(it->msg, sizeof it->msg, "time step too small (%.3g s) at t = %.9g s: the Newton "
                         "matrix is singular (a zero pivot)", h, t);
                return EMN_INTEG_SINGULAR;
            }
            if (worst >= 0) it->bad_coord = worst;
            snprintf(it->msg, sizeof it->msg, "time step too small (%.3g s) at t = %.9g s", h, t);
            return it->st.newton_rejects > it->st.lte_rejects ? EMN_INTEG_NONCONV : EMN_INTEG_TOOSMALL;
        }
        /* A step that landing on a breakpoint shortened by rounding only
         * keeps the formula (and a linear circuit's factorization) of the
         * step it replaces; the time itself lands exactly. */
        double hf = it->h > 0 && fabs(h - it->h) <= 1e-9 * it->h ? it->h :
                    hladder > 0 && fabs(h - hladder) <= 1e-9 * hladder ? hladder : h;
        step_formula s = formula(it, hf, order);
        step_integrals(it, &s);
        /* a linear step whose right-hand side is the time parts but on
         * a few rows (a grid's pads) makes its history in newton's first
         * pass; on more, that pass and the fix of those rows after it
         * would cost more than the evaluation they replace */
        bool fused = linear && emn_form_rest_rows(f) <= n / 16;
        if (linear && !fused) history(it, &s, hzbuf, hpbuf);
        /* a nonlinear step's predictor (a linear one solves from
         * scratch): the velocities extrapolated linearly (from the
         * right-hand velocities after a breakpoint), or through the last
         * three points once they all follow the last breakpoint; made,
         * with the history, in newton's first pass */
        predictor P = {it->have_right ? it->w_right : it->w[0], hf, it->npast >= 1 && !it->restart && it->h > 0,
                       it->since_bp >= 3 && !it->restart && it->h > 0 && it->hprev > 0, 0, 0, 0};
        predictor_setup(it, &P);
        it->nan_coord = -1;
        it->singular = false;
        /* a linear second-order step's error is tested along with the
         * check of its solution, while each block's numbers are in cache
         * (a first-order step's needs its branches' sizes first) */
        lte_job lte;
        bool with_lte = linear && s.order == 2 && it->npast > 0;
        if (with_lte) lte_setup(&lte, it, &s, hf);
        int rc = newton(it, t + h, s.a, hzbuf, hpbuf, true, fused || !linear ? &s : NULL, linear ? NULL : &P,
                        with_lte ? &lte : NULL);
        if (rc != 0 && it->nan_coord >= 0 && !state_finite(it, t + h)) {
            /* NaN or Inf already at the last accepted state with the new
             * time: the sources made it, and no smaller step will help */
            it->bad_coord = it->nan_coord;
            snprintf(it->msg, sizeof it->msg, "NaN or Inf at t = %.9g s (a source or an element value is "
                     "not finite there)", t + h);
            return EMN_INTEG_NAN;       /* the form stays at t + h: the caller names the culprit */
        }
        if (rc != 0) {
            it->st.rejected++;
            it->st.newton_rejects++;
            h /= 8;
            order = 1;
            continue;
        }
        /* The very first step is short and first order; from rest its
         * error and the state are both O(h^2), so a relative test means
         * nothing: accept it, as SPICE does.  So is the first from rest
         * at a corner: against each coordinate's own motion, all of it
         * since the corner, the estimate of a motion that starts from
         * exactly zero is the same fraction of it at every step length
         * (h/2 of a velocity's rise against reltol h of it), and only
         * the absolute tolerances, at steps of picoseconds, ended the
         * halving; where consistent_w's right-hand forces were not
         * exactly zero, nothing did (random circuits driven by a
         * delayed PULSE, from uic, stopped at the delay; with no delay
         * they ran). */
        double err = start ? 0.1 : with_lte && lte.done ? lte_result(&lte, &worst) : lte_ratio(it, &s, hf, &worst);
        if (err > 1) {
            it->st.rejected++;
            it->st.lte_rejects++;
            h *= fmax(0.1, 0.9 * pow(err, -1.0 / (s.order + 1)));
            if (linear) h = ladder(it, h, false);
            continue;
        }
        accept(it, t + h, hf, &s);
        if (it->have_right) {
            /* the breakpoint is now the last point but one: as a past
             * point of the steps after it (their error test, the
             * predictor's slope), the coordinates along a constraint of
             * kernel_rows_setup (an inductor beside a current source)
             * have their right-hand velocities, which follow the
             * source's slope and jump with it; the left-hand ones, the
             * output's, are kept for the others, whose velocities are
             * continuous and which consistent_w's step of 1e-9 hmax would
             * move by that step times their slope */
            for (int k = 0; k < it->nkrow && it->njcon > 0; k++)
                for (int q = it->jptr[k]; q < it->jptr[k + 1] && it->jcon[k]; q++)
                    it->w[1][it->jidx[q]] = it->w_right[it->jidx[q]];
        }
        alg_rates(it);
        constraint_rates(it);
        kernel_rates(it);
        recenter(it);
        branch_history(it, it->w[0], true);
        it->have_right = false;
        if (!lands || hf == it->hfull || it->hfull == 0) it->hfull = hf;
        it->t = lands ? target : it->t;
        it->tpast[0] = it->t;
        double factor = err > 0 ? 0.9 * pow(err, -1.0 / (s.order + 1)) : 2;
        /* a linear circuit holds its step unless it can double (an
         * unchanged step keeps its factorization); a nonlinear one, which
         * refactors anyway, grows whenever it can */
        double hn = factor >= (linear ? 2 : 1.1) ? hf * fmin(2, factor) : factor >= 1 ? hf : hf * factor;
        if (lands && it->hnext > hn && !it->restart) hn = fmax(hn, fmin(it->hnext, it->o.hmax));
        /* and holds the first step after a restart: that step h0 and the
         * doublings h0, 2 h0, ... after it come to the ladder step they
         * reach, so the steps fall back onto that step's grid from the
         * corner.  Corners and output points on the grid of hmax are then
         * met by steps, with no landing step before the next corner and
         * no interpolation between points. */
        if (linear && it->restart) hn = fmin(hn, hf);
        it->hnext = fmin(hn, it->o.hmax);
        it->restart = false;
        if (lands && it->t >= it->next_bp * (1 - 1e-13)) {
            it->restart = true;
            it->since_bp = 0;
            it->next_bp = next_break(it, it->t);
            /* sources changed their slope (or jumped): velocities that
             * follow a slope jump with it, so the state at the corner
             * continues with the consistent right-hand velocities and
             * momentum rates */
            if (slopes_continue(it)) {
                memcpy(it->w_right, it->w[0], (size_t)n * sizeof(double));
                memcpy(it->F_right, it->F[0], (size_t)n * sizeof(double));
            } else {
                const double *wr = it->w[0];
                if (consistent_w(it, it->t, it->z[0], it->p[0], it->w[0], it->F[0], false) == 0) wr = it->wtry;
                memcpy(it->w_right, wr, (size_t)n * sizeof(double));
                emn_form_set_time(f, it->t);
                branch_history(it, it->w_right, false);
                int bad = -1;
                emn_form_eval(f, it->z[0], it->w_right, it->ptry, it->F_right, NULL, &bad);
            }
            it->have_right = true;
        }
        return 0;
    }
}
