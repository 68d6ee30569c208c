/*
 * sparse.c: compressed-column matrices built once from reserved entries,
 * and the KLU wrapper that factors them.
 *
 * Building the pattern is a two-pass counting sort (by row, then stably by
 * column), so it costs O(nnz + n) whatever order the entries were reserved
 * in; element stamps reserve the same (i, j) many times, and the merge makes
 * every handle of one position share a slot.
 *
 * The LU wrapper owns KLU's three objects (common, symbolic, numeric) and
 * decides which KLU call a factorization needs: klu_analyze when the
 * pattern is new, klu_refactor (same pivots, no search) when only values
 * changed, klu_factor the first time and whenever the old pivots have gone
 * bad.  A symmetric matrix with a positive diagonal (a passive network's)
 * is first offered to CHOLMOD as L D L', kept if every pivot is positive.  It keeps copies of the pattern and values it last factored: the
 * pattern copy makes "is this the same pattern?" a comparison of contents,
 * not of pointers a freed and rebuilt matrix may happen to reuse, and the
 * value copy lets an unchanged matrix (a linear circuit at a constant step)
 * skip refactorization altogether.
 */
#include "config.h"
#include "sparse.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <float.h>

#if defined(HAVE_SUITESPARSE_KLU_H)
#include <suitesparse/cholmod.h>
#include <suitesparse/klu.h>
#elif defined(HAVE_KLU_H)
#include <cholmod.h>
#include <klu.h>
#else
#include <suitesparse/cholmod.h>
#include <suitesparse/klu.h>
#endif

#include "util.h"

/* A refactorization whose condition estimate or pivot growth fell by more
 * than this factor below the last full factorization's is redone with
 * pivoting: the values have moved far enough that the old pivot order may
 * no longer be stable. */
#define EMN_LU_DEGRADE 1e-3

void emn_sparse_init(emn_sparse *A, int n)
{
    assert(n >= 0);
    memset(A, 0, sizeof *A);
    A->n = n;
}

int emn_sparse_reserve(emn_sparse *A, int i, int j)
{
    assert(!A->Ap && "emn_sparse_reserve after finalize");
    assert(i >= 0 && i < A->n && j >= 0 && j < A->n);
    EMN_PUSH(A->ti, i);
    EMN_PUSH(A->tj, j);
    return A->ti.n - 1;
}

void emn_sparse_finalize(emn_sparse *A)
{
    assert(!A->Ap && "emn_sparse_finalize called twice");
    int n = A->n, nres = A->ti.n;
    /* The n diagonal entries ride along as extra triplets with no handle. */
    long m = (long)nres + n;
    const int *ti = A->ti.v, *tj = A->tj.v;
#define ROW(k) ((k) < nres ? ti[k] : (int)((k) - nres))
#define COL(k) ((k) < nres ? tj[k] : (int)((k) - nres))

    int *count = emn_xcalloc((size_t)n + 1, sizeof *count);
    int *byrow = emn_xmalloc((size_t)(m ? m : 1) * sizeof *byrow);
    int *bycol = emn_xmalloc((size_t)(m ? m : 1) * sizeof *bycol);

    /* pass 1: bucket the triplets by row */
    for (long k = 0; k < m; k++) count[ROW(k) + 1]++;
    for (int r = 0; r < n; r++) count[r + 1] += count[r];
    for (long k = 0; k < m; k++) byrow[count[ROW(k)]++] = (int)k;

    /* pass 2: stable bucket by column, so rows stay sorted within each */
    memset(count, 0, ((size_t)n + 1) * sizeof *count);
    for (long k = 0; k < m; k++) count[COL(k) + 1]++;
    for (int c = 0; c < n; c++) count[c + 1] += count[c];
    for (long q = 0; q < m; q++) {
        int k = byrow[q];
        bycol[count[COL(k)]++] = k;
    }
    free(byrow);

    /* merge duplicates; count[c] is now the end of column c's triplets */
    A->Ap = emn_xmalloc(((size_t)n + 1) * sizeof *A->Ap);
    A->Ai = emn_xmalloc((size_t)(m ? m : 1) * sizeof *A->Ai);
    A->slot = emn_xmalloc((size_t)(nres ? nres : 1) * sizeof *A->slot);
    int nnz = 0;
    long q = 0;
    for (int c = 0; c < n; c++) {
        A->Ap[c] = nnz;
        int last = -1;
        for (; q < count[c]; q++) {
            int k = bycol[q];
            int r = ROW(k);
            if (r != last) {
                A->Ai[nnz++] = r;
                last = r;
            }
            if (k < nres) A->slot[k] = nnz - 1;
        }
    }
    A->Ap[n] = nnz;
    A->nnz = nnz;
    free(bycol);
    free(count);
#undef ROW
#undef COL

    A->Ai = emn_xrealloc(A->Ai, (size_t)(nnz ? nnz : 1) * sizeof *A->Ai);
    A->Ax = emn_xcalloc((size_t)(nnz ? nnz : 1), sizeof *A->Ax);
    /* The triplets are no longer needed; the handle count stays in ti.n. */
    free(A->ti.v);
    free(A->tj.v);
    A->ti.v = A->tj.v = NULL;
    A->ti.cap = A->tj.cap = 0;
}

void emn_sparse_adopt(emn_sparse *A, int *Ap, int *Ai)
{
    assert(!A->Ap && A->ti.n == 0 && "emn_sparse_adopt after reserve or finalize");
    int n = A->n;
#ifndef NDEBUG
    for (int c = 0; c < n; c++) {
        bool diag = false;
        for (int k = Ap[c]; k < Ap[c + 1]; k++) {
            assert(Ai[k] >= 0 && Ai[k] < n && (k == Ap[c] || Ai[k - 1] < Ai[k]));
            diag |= Ai[k] == c;
        }
        assert(diag);
    }
#endif
    A->Ap = Ap;
    A->Ai = Ai;
    A->nnz = Ap[n];
    A->Ax = emn_xcalloc((size_t)(A->nnz ? A->nnz : 1), sizeof *A->Ax);
}

int emn_sparse_find(const emn_sparse *A, int i, int j)
{
    if (!A->Ap || i < 0 || i >= A->n || j < 0 || j >= A->n) return -1;
    int lo = A->Ap[j], hi = A->Ap[j + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (A->Ai[mid] < i) lo = mid + 1;
        else hi = mid;
    }
    return lo < A->Ap[j + 1] && A->Ai[lo] == i ? lo : -1;
}

void emn_sparse_zero(emn_sparse *A)
{
    if (A->Ax) memset(A->Ax, 0, (size_t)A->nnz * sizeof *A->Ax);
}

void emn_sparse_matvec(const emn_sparse *A, const double *x, double *y)
{
    for (int i = 0; i < A->n; i++) y[i] = 0;
    for (int j = 0; j < A->n; j++) {
        double xj = x[j];
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++) y[A->Ai[p]] += A->Ax[p] * xj;
    }
}

void emn_sparse_free(emn_sparse *A)
{
    free(A->Ap);
    free(A->Ai);
    free(A->Ax);
    free(A->slot);
    free(A->ti.v);
    free(A->tj.v);
    memset(A, 0, sizeof *A);
}

/* ------------------------------------------------------------------ LU */

struct emn_lu {
    klu_common common;
    klu_symbolic *sym;
    emn_lu *share;          /* whose analysis this one uses, or NULL */
    bool sym_owned;         /* sym is this one's to free */
    klu_numeric *num;
    /* the pattern sym was built for (kept by the owner of the analysis
     * only), and the values num factors */
    int n, nnz;
    int *Ap, *Ai;
    double *Ax;
    bool valid;             /* num (or ldl) is a good factorization of Ax */
    double rcond;           /* of the last factorization, full or not */
    double rcond_full, rgrowth_full;    /* of the last full one */
    /* A symmetric positive definite matrix is factored P A P' = L D L'
     * instead, by CHOLMOD in the order of its own analysis: no pivot
     * search, half the entries to store and to stream through per solve. */
    cholmod_common *cc;
    cholmod_factor *ldl_sym;    /* the pattern's analysis (the owner's) */
    int *mirror;                /* the owner's: where each entry's transpose is, or -1 */
    cholmod_factor *ldl;
    bool use_ldl;               /* the valid factorization is ldl, not num */
    bool ldl_failed;            /* not positive definite once: KLU from then on */
    double *work;               /* n, for the LDL' solve */
    double *dinv;               /* n: 1 / D, a multiply per solve, not a divide */
    emn_lu_stats stats;
};

/* KLU reports running out of memory as a status; emnet's policy (util.h)
 * is to stop with status 3 rather than thread that through every caller. */
static void check_memory(const emn_lu *lu)
{
    if (lu->common.status == KLU_OUT_OF_MEMORY || lu->common.status == KLU_TOO_LARGE) {
        fprintf(stderr, "emnet: error: out of memory (sparse LU factorization)\n");
        exit(3);
    }
}

emn_lu *emn_lu_new(void)
{
    emn_lu *lu = emn_xcalloc(1, sizeof *lu);
    klu_defaults(&lu->common);
    /* Stop at the first zero pivot: a singular matrix is a modelling error
     * to report (with its column), never a factorization to solve with. */
    lu->common.halt_if_singular = 1;
    /* No row scaling, as in SPICE.  A passive network's Newton matrix
     * (a C + G + Gamma / a in the flux formulation) is symmetric and
     * diagonally dominant, and stays so as elimination proceeds, so its
     * diagonal always passes the threshold test and the factors keep the
     * fill AMD planned for.  Scaling each row by its largest entry breaks
     * that: where a node joined by a strong link to one that leads on
     * through a weak one is eliminated, the scaled diagonal falls far
     * below the column's other entries and the pivot leaves the diagonal.
     * ibmpg1t's consistent-velocity matrix (a = 1e20) factored that way
     * into 1.9 M entries of L and U instead of 0.38 M, and each corner's
     * solve with it cost five ordinary ones.  -1 also skips KLU's check
     * of the input, a pass over the matrix with each refactorization:
     * emn_sparse_finalize builds only sorted columns without duplicates. */
    lu->common.scale = -1;
    lu->n = -1;
    return lu;
}

emn_lu *emn_lu_new_sharing(emn_lu *owner)
{
    emn_lu *lu = emn_lu_new();
    lu->share = owner;
    return lu;
}

static bool same_pattern(const emn_lu *lu, const emn_sparse *A)
{
    /* one that shares an analysis asks its owner, which keeps the copy: the
     * integrator's sixteen cached factorizations of one pattern need one */
    if (lu->share)
        return lu->sym && lu->sym == lu->share->sym && lu->n == A->n && lu->nnz == A->nnz &&
               same_pattern(lu->share, A);
    return lu->sym && lu->n == A->n && lu->nnz == A->nnz
        && memcmp(lu->Ap, A->Ap, ((size_t)A->n + 1) * sizeof *A->Ap) == 0
        && memcmp(lu->Ai, A->Ai, (size_t)A->nnz * sizeof *A->Ai) == 0;
}

static void drop_symbolic(emn_lu *lu)
{
    if (lu->sym_owned) klu_free_symbolic(&lu->sym, &lu->common);
    lu->sym = NULL;
    lu->sym_owned = false;
}

/* The LDL' objects of the pattern no longer held. */
static void drop_ldl(emn_lu *lu)
{
    if (lu->cc) {
        cholmod_free_factor(&lu->ldl, lu->cc);
        cholmod_free_factor(&lu->ldl_sym, lu->cc);
    }
    free(lu->mirror);
    lu->mirror = NULL;
    lu->use_ldl = lu->ldl_failed = false;
}

static void analyze(emn_lu *lu, const emn_sparse *A)
{
    klu_free_numeric(&lu->num, &lu->common);
    drop_symbolic(lu);
    drop_ldl(lu);
    lu->valid = false;
    lu->n = A->n;
    lu->nnz = A->nnz;
    size_t np = (size_t)A->n + 1, nz = (size_t)(A->nnz ? A->nnz : 1);
    if (lu->share) {
        if (!same_pattern(lu->share, A)) analyze(lu->share, A);
        lu->sym = lu->share->sym;
        return;
    }
    lu->Ax = emn_xrealloc(lu->Ax, nz * sizeof *lu->Ax);
    lu->Ap = emn_xrealloc(lu->Ap, np * sizeof *lu->Ap);
    lu->Ai = emn_xrealloc(lu->Ai, nz * sizeof *lu->Ai);
    memcpy(lu->Ap, A->Ap, np * sizeof *lu->Ap);
    memcpy(lu->Ai, A->Ai, (size_t)A->nnz * sizeof *lu->Ai);
    lu->sym = klu_analyze(A->n, A->Ap, A->Ai, &lu->common);
    lu->sym_owned = true;
    lu->stats.analyses++;
    check_memory(lu);
    /* finalize() puts every diagonal in the pattern, so the structure is
     * never rank deficient and analysis can only fail for lack of memory. */
    assert(lu->sym);
}

/* Full factorization with pivoting.  Returns 0, or -1 if singular. */
static int factor_full(emn_lu *lu, const emn_sparse *A, int *bad_col)
{
    klu_free_numeric(&lu->num, &lu->common);
    lu->valid = false;
    lu->num = klu_factor(A->Ap, A->Ai, A->Ax, lu->sym, &lu->common);
    lu->stats.factors++;
    check_memory(lu);
    if (!lu->num) {
        /* singular_col is already in A's own numbering: KLU maps the
         * failing pivot back through its column permutation Q. */
        if (bad_col) *bad_col = lu->common.status == KLU_SINGULAR ? lu->common.singular_col : -1;
        lu->rcond = 0;
        return -1;
    }
    /* pivot k is A(Pnum[k], Q[k]): on the diagonal when the two agree */
    lu->stats.offdiag = 0;
    for (int k = 0; k < lu->n; k++) lu->stats.offdiag += lu->num->Pnum[k] != lu->sym->Q[k];
    klu_rcond(lu->sym, lu->num, &lu->common);
    lu->rcond = lu->rcond_full = lu->common.rcond;
    /* The pivot growth is only a yardstick for later refactorizations:
     * one that keeps a copy of its values measures it when the first
     * comes (a linear operating point never refactors); one that shares
     * its analysis and keeps no values measures it now. */
    lu->rgrowth_full = -1;
    if (lu->share) {
        klu_rgrowth(A->Ap, A->Ai, A->Ax, lu->sym, lu->num, &lu->common);
        lu->rgrowth_full = lu->common.rgrowth;
    }
    lu->valid = true;
    return 0;
}

/* ------------------------------------------------------------- LDL' */

/* For each entry (i, j) of the owner's pattern, the position of (j, i),
 * or -1: made once per pattern, so that symmetry is one pass over values. */
static const int *mirror(emn_lu *o)
{
    if (o->mirror) return o->mirror;
    o->mirror = emn_xmalloc(((size_t)o->nnz + 1) * sizeof(int));
    for (int j = 0; j < o->n; j++)
        for (int p = o->Ap[j]; p < o->Ap[j + 1]; p++) {
            int i = o->Ai[p], lo = o->Ap[i], hi = o->Ap[i + 1] - 1;
            o->mirror[p] = -1;
            while (lo <= hi) {      /* row j in column i: rows are sorted */
                int mid = lo + (hi - lo) / 2;
                if (o->Ai[mid] == j) {
                    o->mirror[p] = mid;
                    break;
                }
                if (o->Ai[mid] < j) lo = mid + 1;
                else hi = mid - 1;
            }
        }
    return o->mirror;
}

/* Whether A may be symmetric positive definite: its diagonal positive
 * (checked first, without the mirror), its values symmetric. */
static bool maybe_spd(emn_lu *lu, const emn_sparse *A)
{
    for (int j = 0; j < A->n; j++) {
        double d = 0;
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++)
            if (A->Ai[p] == j) d = A->Ax[p];
        if (!(d > 0)) return false;
    }
    const int *m = mirror(lu->share ? lu->share : lu);
    for (int p = 0; p < A->nnz; p++)
        if (m[p] < 0 || A->Ax[m[p]] != A->Ax[p]) return false;
    return true;
}

static void cholmod_memory(const cholmod_common *cc)
{
    if (cc->status == CHOLMOD_OUT_OF_MEMORY || cc->status == CHOLMOD_TOO_LARGE) {
        fprintf(stderr, "emnet: error: out of memory (sparse LDL' factorization)\n");
        exit(3);
    }
}

static cholmod_common *ldl_common(emn_lu *lu)
{
    if (!lu->cc) {
        lu->cc = emn_xcalloc(1, sizeof *lu->cc);
        cholmod_start(lu->cc);
        lu->cc->print = 0;                      /* stdout is the results' */
        lu->cc->supernodal = CHOLMOD_SIMPLICIAL;
        lu->cc->final_ll = 0;                   /* L D L', no square roots */
        lu->cc->nmethods = 1;                   /* AMD, as KLU orders */
        lu->cc->method[0].ordering = CHOLMOD_AMD;
    }
    return lu->cc;
}

/* A's upper triangle as CHOLMOD reads it, without a copy. */
static cholmod_sparse upper(const emn_sparse *A)
{
    cholmod_sparse S = {0};
    S.nrow = S.ncol = (size_t)A->n;
    S.nzmax = (size_t)A->nnz;
    S.p = A->Ap;
    S.i = A->Ai;
    S.x = A->Ax;
    S.stype = 1;
    S.itype = CHOLMOD_INT;
    S.xtype = CHOLMOD_REAL;
    S.dtype = CHOLMOD_DOUBLE;
    S.sorted = 1;
    S.packed = 1;
    return S;
}

/* L D L' of a symmetric A.  Returns 0, or -1 if a pivot is not positive
 * and clearly above rounding of its diagonal entry (the matrix is
 * indefinite or singular to working precision: KLU decides, and names
 * the column if it is singular). */
static int factor_ldl(emn_lu *lu, const emn_sparse *A)
{
    emn_lu *o = lu->share ? lu->share : lu;
    cholmod_sparse S = upper(A);
    if (!o->ldl_sym) {
        o->ldl_sym = cholmod_analyze(&S, ldl_common(o));
        cholmod_memory(o->cc);
        if (!o->ldl_sym) return -1;
    }
    cholmod_common *cc = ldl_common(lu);
    if (!lu->ldl) {
        lu->ldl = cholmod_copy_factor(o->ldl_sym, cc);
        cholmod_memory(cc);
        if (!lu->ldl) return -1;
        lu->work = emn_xrealloc(lu->work, ((size_t)A->n + 1) * sizeof(double));
        lu->dinv = emn_xrealloc(lu->dinv, ((size_t)A->n + 1) * sizeof(double));
    }
    if (lu->use_ldl) lu->use_ldl = lu->valid = false;   /* refactored in place */
    cholmod_factorize(&S, lu->ldl, cc);
    cholmod_memory(cc);
    lu->stats.ldl++;
    if (cc->status != CHOLMOD_OK || lu->ldl->minor < (size_t)A->n) return -1;
    const int *Lp = lu->ldl->p, *P = lu->ldl->Perm, *m = mirror(o);
    const double *Lx = lu->ldl->x;
    double lo = INFINITY, hi = 0;
    for (int k = 0; k < A->n; k++) {
        int j = P[k];
        double d = Lx[Lp[k]], ajj = 0;
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++)
            if (m[p] == p) ajj = A->Ax[p];
        if (!(d > DBL_EPSILON * fabs(ajj)) || !isfinite(d)) return -1;
        lo = fmin(lo, d);
        hi = fmax(hi, d);
    }
    for (int k = 0; k < A->n; k++) lu->dinv[k] = 1 / Lx[Lp[k]];
    klu_free_numeric(&lu->num, &lu->common);
    lu->rcond = lo / hi;
    lu->use_ldl = lu->valid = true;
    return 0;
}

/* b = A^-1 b from P A P' = L D L' (L unit lower triangular, D on its
 * diagonal): L y = P b, then L' (P x) = D^-1 y. */
static void solve_ldl(emn_lu *lu, double *b)
{
    const cholmod_factor *L = lu->ldl;
    const int *Lp = L->p, *Li = L->i, *Lnz = L->nz, *P = L->Perm;
    const double *Lx = L->x;
    double *y = lu->work;
    int n = lu->n;
    for (int k = 0; k < n; k++) y[k] = b[P[k]];
    for (int j = 0; j < n; j++) {
        double yj = y[j];
        if (yj != 0)
            for (int p = Lp[j] + 1, end = Lp[j] + Lnz[j]; p < end; p++) y[Li[p]] -= Lx[p] * yj;
    }
    for (int j = n - 1; j >= 0; j--) {
        double x = y[j] * lu->dinv[j];
        for (int p = Lp[j] + 1, end = Lp[j] + Lnz[j]; p < end; p++) x -= Lx[p] * y[Li[p]];
        y[j] = x;
    }
    for (int k = 0; k < n; k++) b[P[k]] = y[k];
}

int emn_lu_factor(emn_lu *lu, const emn_sparse *A, int *bad_col)
{
    assert(A->Ap && "emn_lu_factor before emn_sparse_finalize");
    if (bad_col) *bad_col = -1;
    if (A->n == 0) {
        /* nothing to factor (a circuit with no unknowns); KLU rejects n = 0 */
        klu_free_numeric(&lu->num, &lu->common);
        drop_symbolic(lu);
        lu->n = 0;
        lu->rcond = 1;
        lu->valid = true;
        return 0;
    }
    if (!same_pattern(lu, A)) analyze(lu, A);
    /* one that shares an analysis keeps no copy of the values: its user
     * (a cache by step size) asks only for new ones */
    size_t bytes = (size_t)A->nnz * sizeof *A->Ax;
    if (!lu->share) {
        if (lu->valid && memcmp(lu->Ax, A->Ax, bytes) == 0) return 0;
        if (lu->valid && !lu->use_ldl && lu->rgrowth_full < 0) {   /* from the values it was factored with */
            klu_rgrowth(lu->Ap, lu->Ai, lu->Ax, lu->sym, lu->num, &lu->common);
            lu->rgrowth_full = lu->common.rgrowth;
        }
        memcpy(lu->Ax, A->Ax, bytes);
    }
    if (!lu->ldl_failed && maybe_spd(lu, A)) {
        if (factor_ldl(lu, A) == 0) return 0;
        lu->ldl_failed = true;
    }
    if (lu->use_ldl) lu->use_ldl = lu->valid = false;      /* KLU from scratch */

    if (lu->valid) {
        lu->valid = false;
        int ok = klu_refactor(A->Ap, A->Ai, A->Ax, lu->sym, lu->num, &lu->common);
        lu->stats.refactors++;
        check_memory(lu);
        if (ok && lu->common.status == KLU_OK) {
            klu_rcond(lu->sym, lu->num, &lu->common);
            klu_rgrowth(A->Ap, A->Ai, A->Ax, lu->sym, lu->num, &lu->common);
            double rc = lu->common.rcond, rg = lu->common.rgrowth;
            /* Written so that NaN fails the test and falls through. */
            if (rc >= EMN_LU_DEGRADE * lu->rcond_full && rg >= EMN_LU_DEGRADE * lu->rgrowth_full) {
                lu->rcond = rc;
                lu->valid = true;
                return 0;
            }
        }
        /* A zero pivot after refactoring may only mean the old pivot order
         * no longer fits; a fresh factorization decides. */
    }
    return factor_full(lu, A, bad_col);
}

int emn_lu_solve(emn_lu *lu, double *b)
{
    if (!lu->valid) return -1;
    lu->stats.solves++;
    if (lu->n == 0) return 0;
    if (lu->use_ldl) {
        solve_ldl(lu, b);
        return 0;
    }
    return klu_solve(lu->sym, lu->num, lu->n, 1, b, &lu->common) ? 0 : -1;
}

double emn_lu_rcond(emn_lu *lu)
{
    return lu->valid ? lu->rcond : 0.0;
}

size_t emn_lu_bytes(const emn_lu *lu)
{
    size_t b = lu->common.memusage;
    if (lu->ldl) b += lu->ldl->nzmax * (sizeof(double) + sizeof(int)) + lu->ldl->n * 4 * sizeof(int);
    return b;
}

const emn_lu_stats *emn_lu_get_stats(const emn_lu *lu)
{
    return &lu->stats;
}

void emn_lu_free(emn_lu **plu)
{
    if (!plu || !*plu) return;
    emn_lu *lu = *plu;
    klu_free_numeric(&lu->num, &lu->common);
    drop_symbolic(lu);
    drop_ldl(lu);
    if (lu->cc) cholmod_finish(lu->cc);
    free(lu->cc);
    free(lu->work);
    free(lu->dinv);
    free(lu->Ap);
    free(lu->Ai);
    free(lu->Ax);
    free(lu);
    *plu = NULL;
}
