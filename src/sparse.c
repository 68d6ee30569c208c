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
 * bad.  It keeps copies of the pattern and values it last factored: the
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

#if defined(HAVE_SUITESPARSE_KLU_H)
#include <suitesparse/klu.h>
#elif defined(HAVE_KLU_H)
#include <klu.h>
#else
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
    bool valid;             /* num is a good factorization of Ax */
    double rcond;           /* of the last factorization, full or not */
    double rcond_full, rgrowth_full;    /* of the last full one */
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

static void analyze(emn_lu *lu, const emn_sparse *A)
{
    klu_free_numeric(&lu->num, &lu->common);
    drop_symbolic(lu);
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
        if (lu->valid && lu->rgrowth_full < 0) {   /* from the values it was factored with */
            klu_rgrowth(lu->Ap, lu->Ai, lu->Ax, lu->sym, lu->num, &lu->common);
            lu->rgrowth_full = lu->common.rgrowth;
        }
        memcpy(lu->Ax, A->Ax, bytes);
    }

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
    return klu_solve(lu->sym, lu->num, lu->n, 1, b, &lu->common) ? 0 : -1;
}

double emn_lu_rcond(emn_lu *lu)
{
    return lu->valid ? lu->rcond : 0.0;
}

size_t emn_lu_bytes(const emn_lu *lu) { return lu->common.memusage; }

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
    free(lu->Ap);
    free(lu->Ai);
    free(lu->Ax);
    free(lu);
    *plu = NULL;
}
