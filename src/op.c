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
    double *Pz, *Pw, *Fz, *Fw;  /* on J's pattern; NULL for a linear circuit (see entry()) */
    double *p, *F, *dp, *dF, *scale, *dFscale, *R, *X;
    const double *p0;       /* momenta to keep where nothing else fixes them */
    bool factored;          /* the matrix of a linear circuit is factored */
    bool *free1;            /* R1 row fixes nothing: it holds p_j = p0_j instead */
    double *row2;           /* largest |dF_j/dz| in row j */
    double *eps1;           /* that row's weight */
    emn_lu *lu;
    /* The reduced system of a linear circuit whose dF/dz is diagonal
     * (see reduce()): its w block on the coordinates no stiffness holds,
     * negated, with its own LU; red[j] is j's place in it, or -1 */
    bool reduced, reduce_tried;
    emn_sparse M;
    emn_lu *mlu;
    int *red, *mslot;       /* mslot: per M slot, K's */
    int *a1, *a2;           /* per j: K slot of (R1, z0_j) and (R2, w_j), or -1 */
    double *dz, *dwv, *rr;
    /* K as factored: R2's row j and z0_j's column scaled by sc[j] (see
     * matrix()); NULL when none is */
    double *sc;
} opsys;

static void opsys_init(opsys *o, emn_form *f)
{
    memset(o, 0, sizeof *o);
    o->f = f;
    int n = o->n = f->n;
    const emn_sparse *J = &f->J;
    bool linear = emn_form_is_linear(f);
    emn_sparse_init(&o->K, 2 * n);
    /* Which of dp/dz, dp/dw, dF/dz, dF/dw (bits 0..3) can be nonzero at
     * each of J's slots: for a linear circuit, where the constant
     * matrices have an entry; otherwise anywhere on J's pattern.  K holds
     * only the entries these can reach: a grid without coils has no
     * dF/dz, so its R2 rows keep only their proximal diagonals and
     * factoring K costs what the node equations cost. */
    unsigned char *has = emn_xcalloc((size_t)J->nnz + 1, 1);
    for (int q = 0; q < 4; q++) {
        const emn_cmat *M = &f->lin[q];
        if (linear) for (int e = 0; e < M->nnz; e++) has[M->slot[e]] |= (unsigned char)(1u << q);
    }
    if (!linear) memset(has, 15, (size_t)J->nnz);
    /* K's rows are R2's (0..n-1) then R1's (n..2n-1), so that its
     * diagonal is R2's proximal term on z0 and R1's on w, both always
     * present, and KLU's block triangular form can split off what does
     * not couple.  Its pattern follows from J's column by column, already
     * sorted: column j holds R2's proximal diagonal j and, shifted down,
     * the (R1, z0) entries of J's column j (dF/dz, and the proximal
     * eps dp/dz); column n + j the (R2, w) entries (dF/dz) and, shifted
     * down, the (R1, w) ones (dF/dw - dp/dz, the proximal eps dp/dw, and
     * always the diagonal).  A slot with no entry of a block gets -1. */
    int *Kp = emn_xmalloc((2 * (size_t)n + 1) * sizeof(int));
    int *Ki = emn_xreserve((3 * (size_t)J->nnz + (size_t)n + 1) * sizeof(int));
    int *hz = emn_xmalloc((size_t)J->nnz * sizeof(int) + 1);
    int *hw = emn_xmalloc((size_t)J->nnz * sizeof(int) + 1);
    /* (R2, w) entries are dF/dz alone: a circuit without any (a
     * resistive grid in either formulation) has no map for them */
    bool any2 = false;
    for (int k = 0; k < J->nnz && !any2; k++) any2 = has[k] & 4;
    int *h2 = any2 ? emn_xmalloc((size_t)J->nnz * sizeof(int) + 1) : NULL;
    int *hd2 = emn_xmalloc((size_t)n * sizeof(int) + 1), *hd1 = emn_xmalloc((size_t)n * sizeof(int) + 1);
    int q = 0;
    for (int col = 0; col < n; col++) {
        Kp[col] = q;
        hd2[col] = q;
        Ki[q++] = col;
        for (int k = J->Ap[col]; k < J->Ap[col + 1]; k++) {
            hz[k] = has[k] & 5 ? q : -1;
            if (has[k] & 5) Ki[q++] = n + J->Ai[k];
        }
    }
    for (int col = 0; col < n; col++) {
        Kp[n + col] = q;
        for (int k = J->Ap[col]; k < J->Ap[col + 1] && h2; k++) {
            h2[k] = has[k] & 4 ? q : -1;
            if (has[k] & 4) Ki[q++] = J->Ai[k];
        }
        for (int k = J->Ap[col]; k < J->Ap[col + 1]; k++) {
            bool diag = J->Ai[k] == col;
            hw[k] = has[k] & 11 || diag ? q : -1;
            if (diag) hd1[col] = q;
            if (has[k] & 11 || diag) Ki[q++] = n + J->Ai[k];
        }
    }
    free(has);
    Kp[2 * n] = q;
    emn_sparse_adopt(&o->K, Kp, Ki);
    o->kz = hz; o->kw = hw; o->k2 = h2; o->kdiag2 = hd2; o->kdiag1 = hd1;
    size_t nz = (size_t)J->nnz + 1, nv = (size_t)n + 1;
    if (!linear) {
        o->Pz = emn_xcalloc(nz, sizeof(double));
        o->Pw = emn_xcalloc(nz, sizeof(double));
        o->Fz = emn_xcalloc(nz, sizeof(double));
        o->Fw = emn_xcalloc(nz, sizeof(double));
    }
    o->p = emn_xcalloc(nv, sizeof(double));
    o->F = emn_xcalloc(nv, sizeof(double));
    o->dp = emn_xcalloc(nv, sizeof(double));
    o->dF = emn_xcalloc(nv, sizeof(double));
    o->scale = emn_xcalloc(nv, sizeof(double));
    o->dFscale = emn_xcalloc(nv, sizeof(double));
    o->free1 = emn_xcalloc(nv, sizeof(bool));
    o->eps1 = emn_xcalloc(nv, sizeof(double));
    o->row2 = emn_xcalloc(nv, sizeof(double));
    o->R = emn_xcalloc(2 * nv, sizeof(double));
    o->X = emn_xcalloc(2 * nv, sizeof(double));
    o->lu = emn_lu_new();
    emn_lu_borrow(o->lu);       /* K keeps its pattern while o lives */
}

/* The reduced system's order of elimination, extended to all the
 * coordinates, for the transient's Newton matrix (emn_form.order_hint):
 * that matrix is M's with the stiff coordinates added.  One of those
 * with a single neighbour in M (a pad between its coil and the grid) goes
 * just before it, a leaf that makes no fill; one with more (a coil
 * straight to a grid node) just after the last of them, so that
 * eliminating it joins none of them to another.  Nothing where M's
 * factorization has no order of its own (KLU's). */
static void leave_order(opsys *o)
{
    const int *mperm = o->reduced ? emn_lu_order(o->mlu) : NULL;
    if (!mperm) return;
    int n = o->n, nn = o->M.n;
    const emn_sparse *J = &o->f->J;
    int *pos = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    for (int k = 0; k < nn; k++) pos[mperm[k]] = k;
    /* sort keys: 2 pos + 2 for M's coordinate at pos; for a stiff one
     * 2 pos + 1 (before pos) or 2 pos + 3 (after it); 0 with no
     * neighbour in M */
    int *key = emn_xmalloc((size_t)n * sizeof(int) + 1);
    int *cnt = emn_xcalloc(2 * (size_t)nn + 4, sizeof(int));
    for (int j = 0; j < n; j++) {
        int r = o->red[j], k = 0;
        if (r >= 0) {
            k = 2 * pos[r] + 2;
        } else {
            int first = -1, last = -1, nb = 0;
            for (int q = J->Ap[j]; q < J->Ap[j + 1]; q++) {
                int i = o->red[J->Ai[q]];
                if (i < 0) continue;
                nb++;
                if (first < 0 || pos[i] < first) first = pos[i];
                if (pos[i] > last) last = pos[i];
            }
            if (nb == 1) k = 2 * first + 1;
            else if (nb > 1) k = 2 * last + 3;
        }
        key[j] = k;
        cnt[k + 1]++;
    }
    for (int k = 0; k < 2 * nn + 3; k++) cnt[k + 1] += cnt[k];
    int *order = emn_xmalloc((size_t)n * sizeof(int) + 1);
    for (int j = 0; j < n; j++) order[cnt[key[j]]++] = j;
    free(o->f->order_hint);
    o->f->order_hint = order;
    o->f->order_hint_lnz = emn_lu_planned_entries(o->mlu);
    free(pos);
    free(key);
    free(cnt);
}

static void opsys_free(opsys *o)
{
    emn_sparse_free(&o->K);
    free(o->kz); free(o->kw); free(o->k2); free(o->kdiag2); free(o->kdiag1);
    free(o->Pz); free(o->Pw); free(o->Fz); free(o->Fw);
    free(o->p); free(o->F); free(o->dp); free(o->dF); free(o->scale); free(o->R); free(o->X);
    free(o->dFscale); free(o->free1); free(o->eps1); free(o->row2);
    emn_lu_free(&o->lu);
    emn_sparse_free(&o->M);
    emn_lu_free(&o->mlu);
    free(o->red); free(o->mslot); free(o->a1); free(o->a2);
    free(o->dz); free(o->dwv); free(o->rr);
    free(o->sc);
}

/* Residuals R1 (rows 0..n-1) and R2 (rows n..2n-1) at (z, w); returns 0,
 * or 1 if anything is not finite. */
static int residual(opsys *o, const double *z, const double *w)
{
    int n = o->n;
    int bad;
    if (emn_form_eval(o->f, z, w, o->p, o->F, o->scale, &bad)) return 1;
    if (emn_form_rates_scaled(o->f, z, w, o->dp, o->dF, NULL, o->dFscale)) return 1;
    for (int j = 0; j < n; j++) {
        o->R[j] = o->free1[j] ? o->eps1[j] * (o->p[j] - (o->p0 ? o->p0[j] : 0)) : o->F[j] - o->dp[j];
        o->R[n + j] = o->dF[j];
        if (!isfinite(o->R[j]) || !isfinite(o->R[n + j])) return 1;
    }
    return 0;
}

/* The largest magnitudes in each row of the Newton matrix's blocks. */
typedef struct rows { double *row1, *row1w, *pz, *pw, *row2; } rows;

/* Stamp the Newton matrix's derivative part into K and the rows'
 * largest magnitudes: row1 of R1's (dF/dz, dF/dw - dp/dz),
 * row1w of its w block alone, pz and pw of the momenta's dp/dz and dp/dw,
 * row2 of R2's (dF/dz, which is also R1's z block).  For a linear circuit
 * the formulation's constant matrices are read in place (form.h, lin: the
 * entries they leave out are zero in all four); otherwise the arrays
 * emn_form_derivatives filled on J's whole pattern. */
static void stamp(opsys *o, const rows *m)
{
    double *row1 = m->row1, *row1w = m->row1w, *row2 = m->row2;
    const emn_sparse *J = &o->f->J;
    if (o->Pz) {
        for (int k = 0; k < J->nnz; k++) {
            int r = J->Ai[k];
            o->K.Ax[o->kz[k]] += o->Fz[k];
            o->K.Ax[o->kw[k]] += o->Fw[k] - o->Pz[k];
            o->K.Ax[o->k2[k]] += o->Fz[k];
            m->pz[r] = fmax(m->pz[r], fabs(o->Pz[k]));
            m->pw[r] = fmax(m->pw[r], fabs(o->Pw[k]));
        }
    } else {
        const emn_cmat *lin = o->f->lin;
        for (int q = 0; q < 4; q++) {
            const emn_cmat *M = &lin[q];
            double *rowp = q == 0 ? m->pz : m->pw;
            for (int r = 0; r < M->nrows; r++) {
                int i = M->rows[r];
                for (int e = M->rptr[i]; e < M->rptr[i + 1]; e++) {
                    int k = M->slot[e];
                    double v = M->val[e];
                    switch (q) {
                    case 0: o->K.Ax[o->kw[k]] -= v; break;                          /* dp/dz */
                    case 2: o->K.Ax[o->kz[k]] += v; o->K.Ax[o->k2[k]] += v; break; /* dF/dz */
                    case 3: o->K.Ax[o->kw[k]] += v; break;                          /* dF/dw */
                    default: break;
                    }
                    if (q < 2) rowp[i] = fmax(rowp[i], fabs(v));
                }
            }
        }
    }
    /* K's (R1, z0) and (R1, w) entries now hold dF/dz and dF/dw - dp/dz */
    for (int k = 0; k < J->nnz; k++) {
        int r = J->Ai[k];
        double fz = o->kz[k] >= 0 ? fabs(o->K.Ax[o->kz[k]]) : 0;
        double fw = o->kw[k] >= 0 ? fabs(o->K.Ax[o->kw[k]]) : 0;
        row1[r] = fmax(row1[r], fmax(fz, fw));
        row1w[r] = fmax(row1w[r], fw);
        row2[r] = fmax(row2[r], fz);
    }
}

/* Proximal terms eps dp_j on R1 rows with momenta, by the same reading.
 * eps keeps each block of the term (eps dp/dz among R1's dF/dz, eps dp/dw
 * among its dF/dw - dp/dz) a 1e-10 of the entries already there: weighed
 * against the whole row instead, a loop with a small capacitor (dF/dz =
 * 1/C) and an inductor (dp/dw = L) got an eps L that swamped the loop's
 * resistance, and Newton crawled.  A row whose momentum has no block with
 * entries of its own beside it is weighed against the row, and a row with
 * nothing else holds the momentum alone. */
static void proximal(opsys *o, const rows *m)
{
    const emn_sparse *J = &o->f->J;
    for (int q = 0; q < (o->Pz ? 1 : 2); q++) {
        const emn_cmat *M = o->Pz ? NULL : &o->f->lin[q];
        int ne = o->Pz ? J->nnz : M->nnz;
        for (int e = 0; e < ne; e++) {
            int k = M ? M->slot[e] : e;
            int r = J->Ai[k];
            double rowp = fmax(m->pz[r], m->pw[r]), row1 = m->row1[r];
            if (rowp == 0) continue;
            double ratio = INFINITY;
            if (m->pz[r] > 0 && m->row2[r] > 0) ratio = m->row2[r] / m->pz[r];
            if (m->pw[r] > 0 && m->row1w[r] > 0) ratio = fmin(ratio, m->row1w[r] / m->pw[r]);
            double eps = isfinite(ratio) ? 1e-10 * ratio : row1 > 0 ? 1e-10 * row1 / rowp : 1 / rowp;
            o->free1[r] = row1 == 0;
            o->eps1[r] = eps;
            if (o->Pz) {
                o->K.Ax[o->kz[k]] += eps * o->Pz[k];
                o->K.Ax[o->kw[k]] += eps * o->Pw[k];
            } else if (q == 0) {
                o->K.Ax[o->kz[k]] += eps * M->val[e];
            } else {
                o->K.Ax[o->kw[k]] += eps * M->val[e];
            }
        }
    }
}

/* With no coordinate held by a stiffness, whether M (below) would have
 * exactly the Newton matrix J's pattern: each column j of K's w block
 * holds R1's rows where J's column j has its rows. */
static bool m_is_j(const opsys *o)
{
    int n = o->n;
    const emn_sparse *K = &o->K, *J = &o->f->J;
    for (int j = 0; j < n; j++) {
        int p = J->Ap[j], pe = J->Ap[j + 1];
        for (int q = K->Ap[n + j]; q < K->Ap[n + j + 1]; q++) {
            if (K->Ai[q] < n) continue;
            if (p >= pe || J->Ai[p] != K->Ai[q] - n) return false;
            p++;
        }
        if (p != pe) return false;
    }
    return true;
}

/*
 * A linear circuit whose stiffness dF/dz touches each coordinate alone (an
 * inductor from a node to a fixed one, a spring to the frame) needs no
 * factorization of K.  With S the coordinates that have one, K's rows
 * read
 *     R2_j:  e_j dz0_j + A2_j dw_j = b2_j        (e_j: the proximal term)
 *     R1_i:  A1_i dz0_i + sum_k M_ik dw_k = b1_i
 * so dw_j = b2_j / A2_j on S, dz0_j = b2_j / e_j off it, M's rows and
 * columns off S (N) then give dw_N, and R1's rows on S give dz0_S.  The
 * first leaves out e_j dz0_j / A2_j, a 1e-10 of dz0_j (e_j weighs 1e-10
 * of its row): the Newton matrix may differ from the Jacobian by that
 * much, the residual does not.  -M_NN is the circuit's conductance (or
 * resistance) matrix with the stiff coordinates held, symmetric and
 * positive definite on a grid, where emn_lu factors it as L D L' and KLU
 * would take K whole, 2n coordinates (a 10^6-node RLC mesh's operating
 * point: 37 s that way, 20 s this way).
 * Sets up the reduced system and returns true where this holds.
 */
static bool reduce(opsys *o)
{
    int n = o->n;
    const emn_sparse *K = &o->K;
    o->a1 = emn_xmalloc((size_t)n * sizeof(int) + 1);
    o->a2 = emn_xmalloc((size_t)n * sizeof(int) + 1);
    for (int j = 0; j < n; j++) o->a1[j] = o->a2[j] = -1;
    for (int col = 0; col < n; col++) {
        /* z0's column: R2's proximal diagonal, then R1's entries */
        for (int q = K->Ap[col]; q < K->Ap[col + 1]; q++) {
            int r = K->Ai[q];
            if (r < n || K->Ax[q] == 0) continue;
            if (r - n != col) return false;
            o->a1[col] = q;
        }
        /* w's column: R2's entries, then R1's (M) */
        for (int q = K->Ap[n + col]; q < K->Ap[n + col + 1]; q++) {
            int r = K->Ai[q];
            if (r >= n || K->Ax[q] == 0) continue;
            if (r != col) return false;
            o->a2[col] = q;
        }
    }
    /* with no stiffness at all K is block triangular already, and KLU's
     * block form factors M alone (ibmpg1's loop resistances: faster than
     * L D L' with its ordering); unless a transient follows and M has the
     * Newton matrix's pattern, when M's LU, analysis and all, serves the
     * transient too (emn_form.op_lu): an RC ladder's */
    int ns = 0;
    for (int j = 0; j < n; j++) ns += o->a2[j] >= 0;
    if (ns == 0 && !(o->f->op_for_tran && m_is_j(o))) return false;
    int nn = 0;
    o->red = emn_xmalloc((size_t)n * sizeof(int) + 1);
    for (int j = 0; j < n; j++) {
        if (o->a2[j] >= 0 && o->a1[j] < 0) return false;   /* R1 cannot give dz0_j */
        o->red[j] = o->a2[j] < 0 ? nn++ : -1;
    }
    /* M: w's columns and R1's rows off S, in the order of the coordinates */
    int *Mp = emn_xmalloc(((size_t)nn + 1) * sizeof(int));
    int cnt = 0;
    for (int j = 0; j < n; j++) {
        if (o->red[j] < 0) continue;
        for (int q = K->Ap[n + j]; q < K->Ap[n + j + 1]; q++)
            if (K->Ai[q] >= n && o->red[K->Ai[q] - n] >= 0) cnt++;
    }
    int *Mi = emn_xmalloc((size_t)cnt * sizeof(int) + 1);
    o->mslot = emn_xmalloc((size_t)cnt * sizeof(int) + 1);
    cnt = 0;
    for (int j = 0; j < n; j++) {
        if (o->red[j] < 0) continue;
        int col = n + j;
        Mp[o->red[j]] = cnt;
        for (int q = K->Ap[col]; q < K->Ap[col + 1]; q++)
            if (K->Ai[q] >= n && o->red[K->Ai[q] - n] >= 0) {
                Mi[cnt] = o->red[K->Ai[q] - n];
                o->mslot[cnt++] = q;
            }
    }
    Mp[nn] = cnt;
    emn_sparse_init(&o->M, nn);
    emn_sparse_adopt(&o->M, Mp, Mi);
    o->mlu = emn_lu_new();
    emn_lu_borrow(o->mlu);      /* M keeps its pattern while o lives */
    o->dz = emn_xmalloc((size_t)n * sizeof(double) + 1);
    o->dwv = emn_xmalloc((size_t)n * sizeof(double) + 1);
    o->rr = emn_xmalloc((size_t)nn * sizeof(double) + 1);
    return true;
}

/* x = K^-1 b by the reduced system (reduce()), b and x as in solve(). */
static void solve_reduced(opsys *o, double *b)
{
    int n = o->n;
    const emn_sparse *K = &o->K;
    const double *b1 = b, *b2 = b + n;
    double *dz = o->dz, *dw = o->dwv, *r = o->rr;
    for (int j = 0; j < n; j++) {
        bool stiff = o->a2[j] >= 0;
        dw[j] = stiff ? b2[j] / K->Ax[o->a2[j]] : 0;
        dz[j] = stiff ? 0 : b2[j] / K->Ax[o->kdiag2[j]];
    }
    /* -M_NN dw_N = -(b1_N - A1_N dz0_N - M_NS dw_S) */
    for (int j = 0; j < n; j++)
        if (o->red[j] >= 0) r[o->red[j]] = (o->a1[j] >= 0 ? K->Ax[o->a1[j]] * dz[j] : 0) - b1[j];
    for (int k = 0; k < n; k++) {
        if (o->a2[k] < 0) continue;
        for (int q = K->Ap[n + k]; q < K->Ap[n + k + 1]; q++) {
            int i = K->Ai[q] - n;
            if (i >= 0 && o->red[i] >= 0) r[o->red[i]] += K->Ax[q] * dw[k];
        }
    }
    emn_lu_solve(o->mlu, r);
    for (int j = 0; j < n; j++)
        if (o->red[j] >= 0) dw[j] = r[o->red[j]];
    /* A1_i dz0_i = b1_i - sum_k M_ik dw_k on S */
    for (int k = 0; k < n; k++)
        for (int q = K->Ap[n + k]; q < K->Ap[n + k + 1]; q++) {
            int i = K->Ai[q] - n;
            if (i >= 0 && o->a2[i] >= 0) dz[i] += K->Ax[q] * dw[k];
        }
    for (int j = 0; j < n; j++) {
        if (o->a2[j] >= 0) dz[j] = (b1[j] - dz[j]) / K->Ax[o->a1[j]];
        b[j] = dz[j];
        b[n + j] = dw[j];
    }
}

/* Whether matrix() scales coordinate j's R2 row and z0 column: one with
 * a stiffness dF/dz, in a linear circuit without mechanical coordinates.
 * The scaling leaves the proximal term on z0_j larger against the
 * Jacobian (wgt dF/dz^2 where it was wgt dF/dz), which changes no
 * solution but who absorbs a free combination: a motor's shaft angle
 * would take more of its node fluxes' share. */
static bool scaled(const opsys *o, int j)
{
    return !o->Pz && o->f->nm == 0 && o->row2[j] > 0;
}

/* Fill and factor the Newton matrix at (z, w). */
static int matrix(opsys *o, const double *z, const double *w, int *bad_col)
{
    int n = o->n;
    if (o->Pz && emn_form_derivatives(o->f, z, w, o->Pz, o->Pw, o->Fz, o->Fw)) return 1;
    emn_sparse_zero(&o->K);
    double *buf = emn_xcalloc(5 * ((size_t)n + 1), sizeof(double));
    rows m = {buf, buf + n + 1, buf + 2 * (n + 1), buf + 3 * (n + 1), buf + 4 * (n + 1)};
    stamp(o, &m);
    proximal(o, &m);
    /* where a combination of coordinates is free (a node's flux against a
     * coil's displacement), the weights decide who absorbs it: a
     * mechanical coordinate keeps its place, an electrical flux or charge
     * (whose origin means nothing) moves */
    memcpy(o->row2, m.row2, (size_t)n * sizeof(double));
    for (int j = 0; j < n; j++) {
        double wgt = o->f->coord[j].kind == EMN_COORD_MECH ? 1e-3 : 1e-10;
        o->K.Ax[o->kdiag2[j]] += m.row2[j] > 0 ? wgt * m.row2[j] : 1;
        if (m.row1[j] == 0 && m.pz[j] == 0 && m.pw[j] == 0) o->K.Ax[o->kdiag1[j]] += 1;
    }
    free(buf);
    if (!o->Pz && !o->reduce_tried) {
        o->reduce_tried = true;
        o->reduced = reduce(o);
    }
    if (o->reduced) {
        for (int q = 0; q < o->M.nnz; q++) o->M.Ax[q] = -o->K.Ax[o->mslot[q]];
        if (emn_lu_factor(o->mlu, &o->M, NULL) == 0) return 0;
        o->reduced = false;     /* singular: K itself decides, and names the column */
    }
    /* R2's row j and z0_j's column scaled by 1 / max_k |dF_j/dz_k|: R2 in
     * units of a velocity, z0 in units of a force, and the proximal
     * diagonal between them kept at wgt of the row's entries, now 1 (both
     * scalings divide it by |dF/dz|: it is multiplied back once).  Unscaled, a
     * power grid's charge formulation puts loop capacitances of 1e14
     * F^-1 into both blocks, beside loop resistances of 0.05 ohm in R1's
     * w columns, and the proximal terms, 1e-10 of the former, made K's
     * condition number 5e19 (KLU's estimate at 20 x 20 nodes): solves
     * with its factors were too inexact for Newton to converge. */
    bool scale = false;
    for (int j = 0; j < n && !scale; j++) scale = scaled(o, j);
    if (scale) {
        if (!o->sc) o->sc = emn_xmalloc((size_t)n * sizeof(double) + 1);
        for (int j = 0; j < n; j++) o->sc[j] = scaled(o, j) ? 1 / o->row2[j] : 1;
        emn_sparse *K = &o->K;
        for (int c = 0; c < 2 * n; c++)
            for (int q = K->Ap[c]; q < K->Ap[c + 1]; q++) {
                int r = K->Ai[q];
                if (r < n) K->Ax[q] *= o->sc[r];
                if (c < n) K->Ax[q] *= o->sc[c];
            }
        for (int j = 0; j < n; j++)
            if (scaled(o, j)) K->Ax[o->kdiag2[j]] *= o->row2[j];
    } else {
        free(o->sc);
        o->sc = NULL;
    }
    int col = -1;
    if (emn_lu_factor(o->lu, &o->K, &col) < 0) {
        *bad_col = col;
        return 1;
    }
    return 0;
}

/* x = K^-1 b for b in the residual's order (R1's rows, then R2's):
 * K keeps them the other way round. */
static void solve(opsys *o, double *b)
{
    if (o->reduced) {
        solve_reduced(o, b);
        return;
    }
    for (int j = 0; j < o->n; j++) {
        double t = b[j];
        b[j] = b[o->n + j];
        b[o->n + j] = t;
    }
    if (o->sc) for (int j = 0; j < o->n; j++) b[j] *= o->sc[j];       /* R2's rows */
    emn_lu_solve(o->lu, b);
    if (o->sc) for (int j = 0; j < o->n; j++) b[j] *= o->sc[j];       /* z0 */
}

/* Converged when every residual is small: R1 against the momenta and
 * forces summed into it, a held momentum against its value, and R2 = dF/dt
 * by the velocity error it implies, R2_j / max_k |dF_j/dz_k|, against a
 * velocity tolerance of the coordinate's kind (R2's own terms vanish at a
 * state at rest, so they cannot serve as its scale).  The test is on residuals, not on Newton
 * updates: along directions only the proximal terms fix (a node's flux
 * together with a coil's displacement, loop charges behind capacitors),
 * roundoff moves the iterate without changing anything physical. */
static bool converged(const opsys *o, double reltol, double *rnorm, bool *r1ok)
{
    int n = o->n;
    double big1 = 0, big2 = 0;
    for (int j = 0; j < n; j++) {
        if (!o->free1[j]) big1 = fmax(big1, o->scale[j] + fabs(o->dp[j]));
        big2 = fmax(big2, o->dFscale[j]);
    }
    /* Newton converges quadratically, so an operating point costs little
     * more at 1e-12 than at reltol; the stall rule catches the floor */
    double rt = fmin(1e-3 * reltol, 1e-12);
    bool ok = true;
    *r1ok = true;
    *rnorm = 0;
    double zsize[3] = {0, 0, 0};
    for (int j = 0; j < n; j++) {
        int k = o->f->coord[j].kind;
        zsize[k] = fmax(zsize[k], fabs(o->X[j]));
    }
    for (int j = 0; j < n; j++) {
        /* velocity tolerances: 1e-15 A, 1e-12 V, and for a displacement
         * 1e-15 of the largest of its kind per second */
        double wtol;
        switch (o->f->coord[j].kind) {
        case EMN_COORD_LOOP: wtol = 1e-15; break;
        case EMN_COORD_NODE: wtol = 1e-12; break;
        default: wtol = 1e-15 * zsize[EMN_COORD_MECH] + 1e-300; break;
        }
        double tol1 = o->free1[j] ? o->eps1[j] * (rt * fabs(o->p0 ? o->p0[j] : 0) + 1e-30)
                                  : rt * (o->scale[j] + fabs(o->dp[j])) + 1e-14 * big1 + 1e-300;
        double tol2 = rt * o->dFscale[j] + o->row2[j] * wtol + 1e-300;
        double r1 = fabs(o->R[j]) / tol1, r2 = fabs(o->R[n + j]) / tol2;
        if (!(r1 <= 1)) *r1ok = false;
        if (!(r2 <= 1)) ok = false;
        *rnorm = fmax(*rnorm, fmax(r1, r2));
    }
    return ok && *r1ok;
}

/* Newton from (z, w) at the sources' current scale.  Returns iterations
 * used, or -1. */
static int newton(opsys *o, double reltol, double *z, double *w, int maxit, int *bad, emn_op_stats *st)
{
    int n = o->n;
    double *dx = emn_xmalloc(2 * ((size_t)n + 1) * sizeof(double));
    int it;
    bool ok = false;
    double rprev = INFINITY, uprev = INFINITY, upd = INFINITY, wsize[3] = {0, 0, 0};
    int stalled = 0;
    /* a linear circuit's matrix does not depend on the state: one
     * factorization serves every iteration (and every source step) */
    bool linear = emn_form_is_linear(o->f);
    for (it = 0; it < maxit; it++) {
        int col = -1;
        if (!(linear && o->factored)) {
            if (matrix(o, z, w, &col)) {
                if (col >= 0) *bad = col % n;
                break;
            }
            st->factorizations++;
            o->factored = true;
        }
        if (residual(o, z, w)) break;
        memcpy(o->X, z, (size_t)n * sizeof(double));
        double rnorm;
        bool r1ok;
        bool conv = converged(o, reltol, &rnorm, &r1ok);
        /* with the forces balanced, a residual that stops falling is at
         * the floor of floating point (the rates of a state at rest are
         * pure roundoff, with nothing to be relative to) - unless the
         * velocities' updates still fall: R2's test is relative to its
         * own terms, which a wrong velocity makes, so a velocity that a
         * weak spring holds beside a coil's strong coupling (s L / T^2
         * = 1e-3, where the proximal term weighs 1e-3 too) converged
         * linearly, its residual always the same part of its terms, and
         * the stall took a displacement moving at 5e-5 m/s for a steady
         * state (flux formulation) */
        stalled = rnorm > 0.5 * rprev && !(upd < 0.5 * uprev) ? stalled + 1 : 0;
        if (it >= 2 && !conv && r1ok && stalled >= 2) conv = true;
        rprev = rnorm;
        if ((linear ? it >= 1 : it > 1) && conv) {
            /* a state with a capacitance or inductance that is not
             * positive (plates through each other) is no steady state */
            ok = emn_form_check_values(o->f, z, NULL) < 0;
            break;
        }
        for (int k = 0; k < 2 * n; k++) dx[k] = -o->R[k];
        solve(o, dx);
        st->iterations++;
        bool finite = true;
        for (int j = 0; j < 2 * n; j++) if (!isfinite(dx[j])) finite = false;
        if (!finite) break;
        /* the velocities' update, against the largest velocities of its
         * kind so far */
        for (int j = 0; j < n; j++) {
            int k = o->f->coord[j].kind;
            wsize[k] = fmax(wsize[k], fmax(fabs(w[j]), fabs(w[j] + dx[n + j])));
        }
        uprev = upd;
        upd = 0;
        for (int j = 0; j < n; j++) {
            double sz = wsize[o->f->coord[j].kind];
            if (sz > 0) upd = fmax(upd, fabs(dx[n + j]) / sz);
        }
        for (int j = 0; j < n; j++) {
            z[j] += dx[j];
            w[j] += dx[n + j];
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
        solve(o, v);
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
            if (o->k2 && o->k2[k] >= 0 && o->K.Ax[o->k2[k]] != 0) held[col2] = true;     /* dF/dz, as matrix() stamped it */
    /* each component relative to the size of coordinates of its kind (a
     * pendulum resting at zero is no less settled than a shaft at 1 rad);
     * a mechanical coordinate is named before an electrical one whenever
     * one moves at all: that is the motion the user sees run away */
    double kind_size[3] = {0, 0, 0};
    for (int j = 0; j < n; j++) kind_size[o->f->coord[j].kind] = fmax(kind_size[o->f->coord[j].kind], fabs(z[j]));
    int best = -1, bestm = -1;
    double bv = -1, bvm = -1;
    for (int j = 0; j < n; j++) {
        if (!held[j]) continue;
        double r = fabs(v[j]) / (fabs(z[j]) + kind_size[o->f->coord[j].kind] + 1e-300);
        if (!isfinite(r)) continue;
        if (r > bv) { bv = r; best = j; }
        if (o->f->coord[j].kind == EMN_COORD_MECH && r > bvm) { bvm = r; bestm = j; }
    }
    if (bestm >= 0 && bvm >= 1e-6 * bv) best = bestm;
    free(v);
    free(held);
    return best;
}

int emn_op_solve(emn_form *f, double reltol, const double *p0, double *z, double *w, int *bad, char *msg,
                 int msglen, emn_op_stats *st)
{
    opsys o;
    emn_op_stats local = {0};
    if (!st) st = &local;
    memset(st, 0, sizeof *st);
    opsys_init(&o, f);
    o.p0 = p0;
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
    leave_order(&o);
    /* M of J's pattern (every coordinate in it): its LU for the transient */
    if (status == 0 && f->op_for_tran && o.reduced && o.M.n == n && !f->op_lu) {
        emn_lu_keep_pattern(o.mlu);
        f->op_lu = o.mlu;
        o.mlu = NULL;
    }
    opsys_free(&o);
    return status;
}
