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
 * decides which KLU call a factorization needs: klu_analyze when KLU
 * first factors a new pattern, klu_refactor (same pivots, no search) when
 * only values changed, klu_factor the first time and whenever the old
 * pivots have gone bad.  A symmetric matrix with a positive diagonal (a passive network's)
 * is first factored L D L' in the order of CHOLMOD's analysis, kept if
 * every pivot is positive; a large one's factorizations and solves run in
 * two halves, on two cores (plan_halves), and the largest (a mesh's, whose
 * L fills into dense blocks) are factored supernodally, block by block
 * (super_factor).
 * It keeps copies of the pattern and values it last factored: the
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
#include <limits.h>

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

#include "par.h"
#include "util.h"

/* A refactorization whose condition estimate or pivot growth fell by more
 * than this factor below the last full factorization's is redone with
 * pivoting: the values have moved far enough that the old pivot order may
 * no longer be stable. */
#define EMN_LU_DEGRADE 1e-3

/* A matrix whose block triangular form has no block larger than this is
 * ordered whole (analyze). */
#define EMN_LU_SMALL_BLOCK 16

/* From this many multiply-adds on, an L D L' factorization is made
 * supernodally (super_factor), its dense blocks by gemm_sub, and solved
 * so (super_solve_in).  Below it the blocks are too small to pay for their
 * bookkeeping, measured on the machine of bench/RESULTS.md: a 10^4-node
 * mesh (1.2e7) takes as long either way, ibmpg1t's package grid (3.5e6)
 * longer and 5 MB more.  A 10^6-node mesh (1.3e10) factors in about
 * 1.4 s on two cores instead of 6.5 s row by row, and its transient
 * takes 49 s instead of 82. */
#define EMN_LDL_SUPER_FLOPS 1e8

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
    /* reserved, not cleared: see sparse.h */
    A->Ax = emn_xreserve((size_t)(A->nnz ? A->nnz : 1) * sizeof *A->Ax);
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
    klu_symbolic *sym;      /* made when KLU first factors the pattern (klu_plan) */
    emn_lu *share;          /* whose analysis this one uses, or NULL */
    bool sym_owned;         /* sym is this one's to free */
    long an_id;             /* the owner's: patterns analyzed (0: none yet);
                             * others: the owner's analysis this one shares */
    klu_numeric *num;
    /* the pattern sym was built for (kept by the owner of the analysis
     * only), and the values num factors; an LU that borrows keeps only
     * pointers to its matrix's pattern and no values (emn_lu_borrow) */
    int n, nnz;
    int *Ap, *Ai;
    double *Ax;
    bool borrow;
    bool changing;          /* keeps no copy of the values (emn_lu_values_change) */
    bool valid;             /* num (or ldl) is a good factorization of Ax */
    double rcond;           /* of the last factorization, full or not */
    double rcond_full, rgrowth_full;    /* of the last full one */
    /* A symmetric positive definite matrix is factored P A P' = L D L'
     * instead, in the order of CHOLMOD's analysis (AMD's), by emnet's
     * own row-by-row factorization: no pivot search, half the entries to
     * store and to stream through per solve.  The analysis, L's pattern
     * and the factorization's workspace are the owner's; a factorization
     * is its values alone. */
    cholmod_common *cc;         /* for the analysis */
    struct ldl_pattern *pat;    /* the owner's */
    int *mirror;                /* the owner's: where each entry's transpose is, or -1 */
    double *Lx;                 /* L below the diagonal, in pat's columns */
    /* A supernodal L may be kept rounded to single precision instead, in
     * Lf, where the owner's user allows (emn_lu_allow_single); `single`
     * if the valid one is so kept */
    float *Lf;
    double single_err;          /* the owner's: 0, never; else the probe's limit */
    bool single;
    long pat_id;                /* the owner's: analyses made; others: the one Lx is laid out for */
    double *dinv;               /* n: 1 / D, a multiply per solve, not a divide */
    /* the owner's, for the supernodal solves of all that share its
     * analysis (one solve at a time): n numbers, and the halves' updates
     * of the top (see ldl_pattern; a row-by-row L's are its fy) */
    double *work, *topbuf;
    double *sbuf;               /* the owner's: a supernode's rows, for each half (super_solve_in) */
    bool use_ldl;               /* the valid factorization is Lx, not num */
    bool ldl_failed;            /* not positive definite once: KLU from then on */
    double super_flops;         /* the owner's: from this size of L D L' on, supernodal */
    const int *hint;            /* the owner's: an order to try instead of METIS's, or NULL */
    double hint_lnz;            /* entries of L the hint left where it was made, or 0 */
    /* A matrix for KLU made of many small pieces that no entry joins (an
     * array of separate cells) is factored and solved as two groups of
     * them, side by side (par.h): part[h] holds group h's.  The grouping
     * is the owner's (made once per pattern, when KLU is first needed,
     * plan_parts): idx[h] lists group h's coordinates in order, sub[h] is
     * its matrix, whose entry k is A's entry from[h][k]; pbuf is the
     * solve's gathered right side.  An LU sharing the owner's analysis
     * makes parts sharing the owner's parts.  A part never uses the
     * helper itself, nor L D L', and its first factorization (which
     * copies the pattern) runs on the main thread: only the main thread
     * may call emn_xmalloc (util.c); KLU's own allocations are malloc's. */
    emn_lu *part[2];
    emn_sparse sub[2];
    int *from[2], *idx[2], ngrp[2];
    double *pbuf;
    long parts_id;              /* the owner's: groupings made; others: the one part[] shares */
    bool parts_tried;           /* the owner's: grouping decided for this pattern */
    bool parts_ready;           /* part[] factored once (serially, as they allocate) */
    bool use_parts;             /* the valid factorization is part[]'s */
    bool is_part;               /* one of another LU's part[] */
    /* A matrix of pieces of at most EMN_LU_TINY coordinates is factored
     * as dense blocks instead (plan_tiny), in two halves where large.
     * The plan is the owner's, made once per pattern: block b holds
     * coordinates tiny_col[tiny_ptr[b] .. tiny_ptr[b + 1]), its values
     * column by column from tx + tiny_off[b], each A's entry tiny_src[]
     * or -1 for a zero; half 1 starts at block tiny_mid.  A factorization is
     * tx, L below the diagonal and U on and above, and tpiv, per
     * coordinate of a block the row swapped into its place; it is laid
     * out for the owner's plan tx_id (the owner counts its plans in
     * tiny_id). */
    int tiny_nb, tiny_mid;
    int *tiny_ptr, *tiny_off, *tiny_col, *tiny_src;
    long tiny_id, tx_id;
    size_t tx_len;              /* tx's numbers (tpiv's: n) */
    double *tx;
    int *tpiv;
    bool use_tiny;              /* the valid factorization is tx's */
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
    lu->super_flops = EMN_LDL_SUPER_FLOPS;
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
        return lu->an_id && lu->an_id == lu->share->an_id && lu->n == A->n && lu->nnz == A->nnz &&
               same_pattern(lu->share, A);
    return lu->an_id && lu->n == A->n && lu->nnz == A->nnz
        && memcmp(lu->Ap, A->Ap, ((size_t)A->n + 1) * sizeof *A->Ap) == 0
        && memcmp(lu->Ai, A->Ai, (size_t)A->nnz * sizeof *A->Ai) == 0;
}

static void drop_symbolic(emn_lu *lu)
{
    if (lu->sym_owned) klu_free_symbolic(&lu->sym, &lu->common);
    lu->sym = NULL;
    lu->sym_owned = false;
}

static void free_pattern(struct ldl_pattern **pat, cholmod_common *cc);
static bool plan_tiny(emn_lu *o, const emn_sparse *A);
static void drop_tiny(emn_lu *lu);

/* The LDL' objects of the pattern no longer held. */
static void drop_ldl(emn_lu *lu)
{
    free_pattern(&lu->pat, lu->cc);
    free(lu->mirror);
    free(lu->Lx);
    free(lu->Lf);
    free(lu->dinv);
    free(lu->work);
    free(lu->topbuf);
    free(lu->sbuf);
    lu->mirror = NULL;
    lu->Lx = lu->dinv = lu->work = lu->topbuf = lu->sbuf = NULL;
    lu->Lf = NULL;
    lu->use_ldl = lu->ldl_failed = lu->single = false;
}

static void drop_parts(emn_lu *lu)
{
    for (int h = 0; h < 2; h++) {
        emn_lu_free(&lu->part[h]);
        if (lu->sub[h].Ap) emn_sparse_free(&lu->sub[h]);
        free(lu->from[h]);
        free(lu->idx[h]);
        lu->from[h] = lu->idx[h] = NULL;
    }
    free(lu->pbuf);
    lu->pbuf = NULL;
    lu->parts_tried = lu->parts_ready = lu->use_parts = false;
}

static void analyze(emn_lu *lu, const emn_sparse *A)
{
    klu_free_numeric(&lu->num, &lu->common);
    drop_symbolic(lu);
    drop_ldl(lu);
    drop_parts(lu);
    drop_tiny(lu);
    lu->valid = false;
    lu->n = A->n;
    lu->nnz = A->nnz;
    size_t np = (size_t)A->n + 1, nz = (size_t)(A->nnz ? A->nnz : 1);
    if (lu->share) {
        if (!same_pattern(lu->share, A)) analyze(lu->share, A);
        lu->an_id = lu->share->an_id;
        return;
    }
    if (lu->borrow) {
        lu->Ap = A->Ap;
        lu->Ai = A->Ai;
    } else {
        lu->Ax = emn_xrealloc(lu->Ax, nz * sizeof *lu->Ax);
        lu->Ap = emn_xrealloc(lu->Ap, np * sizeof *lu->Ap);
        lu->Ai = emn_xrealloc(lu->Ai, nz * sizeof *lu->Ai);
        memcpy(lu->Ap, A->Ap, np * sizeof *lu->Ap);
        memcpy(lu->Ai, A->Ai, (size_t)A->nnz * sizeof *lu->Ai);
    }
    lu->an_id++;
    if (!lu->is_part) plan_tiny(lu, A);
}

/* KLU's analysis of the pattern last analyzed (the owner's copy of it),
 * into lu->sym. */
static void klu_analysis(emn_lu *lu)
{
    lu->common.btf = 1;
    lu->sym = klu_analyze(lu->n, lu->Ap, lu->Ai, &lu->common);
    /* The block triangular form costs each block some bookkeeping in
     * every factorization and solve.  Where it finds only small blocks
     * (an array of separate cells, a MEMS array's 2 x 2 ones), that is
     * most of the work, and the matrix is better ordered whole: the
     * blocks stay apart all the same (no fill can join them) and pivots
     * come from within a block as before.  mems-1e3 (1000 blocks of 2,
     * dense blocks now, plan_tiny): its refactorizations, growth tests
     * and solves took 633M instructions with the blocks, 425M without. */
    if (lu->sym && lu->sym->nblocks > 1 && lu->sym->maxblock <= EMN_LU_SMALL_BLOCK) {
        klu_free_symbolic(&lu->sym, &lu->common);
        lu->common.btf = 0;
        lu->sym = klu_analyze(lu->n, lu->Ap, lu->Ai, &lu->common);
    }
    lu->sym_owned = true;
    lu->stats.analyses++;
    check_memory(lu);
    /* finalize() puts every diagonal in the pattern, so the structure is
     * never rank deficient and analysis can only fail for lack of memory. */
    assert(lu->sym);
}

/* KLU's analysis for lu, made the first time KLU factors the pattern
 * (by lu or by any LU that shares its owner's analysis): a symmetric
 * positive definite matrix goes to L D L' and never needs one.  On an
 * RC ladder of 10^5 nodes, that unused analysis was a sixth of the
 * transient's start. */
static void klu_plan(emn_lu *lu)
{
    emn_lu *o = lu->share ? lu->share : lu;
    if (!o->sym) klu_analysis(o);
    lu->sym = o->sym;
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
     * comes (a linear operating point never refactors); one that keeps
     * none (it shares an analysis, or is a part) measures it now. */
    lu->rgrowth_full = -1;
    if (lu->share || lu->is_part || lu->borrow || lu->changing) {
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
    const emn_sparse pattern = {.n = o->n, .nnz = o->nnz, .Ap = o->Ap, .Ai = o->Ai};
    o->mirror = emn_xmalloc(((size_t)o->nnz + 1) * sizeof(int));
    for (int j = 0; j < o->n; j++)
        for (int p = o->Ap[j]; p < o->Ap[j + 1]; p++) o->mirror[p] = emn_sparse_find(&pattern, j, o->Ai[p]);
    return o->mirror;
}

static bool values_symmetric(const emn_sparse *A, const int *m)
{
    for (int p = 0; p < A->nnz; p++)
        if (m[p] < 0 || A->Ax[m[p]] != A->Ax[p]) return false;
    return true;
}

/* Whether A may be symmetric positive definite: its diagonal positive,
 * its values symmetric.  The diagonal is checked first until the mirror
 * exists (a matrix that fails it never needs one); once it does, the
 * symmetry first: a nonlinear circuit's matrix, refactored every step,
 * fails that at its first coupling. */
static bool maybe_spd(emn_lu *lu, const emn_sparse *A)
{
    emn_lu *o = lu->share ? lu->share : lu;
    if (o->mirror && !values_symmetric(A, o->mirror)) return false;
    for (int j = 0; j < A->n; j++) {
        double d = 0;
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++)
            if (A->Ai[p] == j) d = A->Ax[p];
        if (!(d > 0)) return false;
    }
    return o->mirror || values_symmetric(A, mirror(o));
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
        lu->cc->supernodal = CHOLMOD_SIMPLICIAL;     /* no supernodes to find */
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

/* Below this many entries in L a solve takes too little time to share. */
#define EMN_LDL_HALVES_MIN 40000

/* The elimination tree of P A P' (P[k]: A's column at position k, pinv
 * its inverse): parent[k], or -1 at a root.  A is symmetric, so column
 * P[k] of A holds row k of P A P'. */
static void etree(const emn_sparse *A, const int *P, const int *pinv, int *parent)
{
    int n = A->n;
    int *anc = emn_xmalloc(((size_t)n + 1) * sizeof(int));     /* path compression */
    for (int k = 0; k < n; k++) {
        parent[k] = anc[k] = -1;
        int j = P[k];
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++)
            for (int i = pinv[A->Ai[p]]; i >= 0 && i < k;) {
                int next = anc[i];
                anc[i] = k;
                if (next < 0) parent[i] = k;
                i = next;
            }
    }
    free(anc);
}

/* A subtree of the elimination tree by its weight, heaviest first. */
typedef struct subtree { double w; int root; } subtree;

static int heavier_first(const void *a, const void *b)
{
    const subtree *x = a, *y = b;
    if (x->w != y->w) return x->w < y->w ? 1 : -1;
    return (x->root > y->root) - (x->root < y->root);
}

/*
 * The order of P A P' (sym: its AMD order P and the column counts of L)
 * rearranged so that its elimination tree splits in two halves of nearly
 * equal solve work, whole subtrees each, and the columns above them
 * (the top): a column's entries in L lie in its own subtrees and the top,
 * so the halves' forward and backward passes touch nothing of each other
 * but the top, done in between.  The top is grown from the roots down,
 * always splitting the heaviest subtree, and at each size the subtrees
 * below it are shared out, largest first, to the lighter half.  Any
 * order that keeps every column after its descendants has the same L,
 * so the fill AMD planned is kept.  Returns false (no split) when the
 * tree does not split well: a chain, such as a ladder's.
 */
static bool plan_halves(const emn_sparse *A, const cholmod_factor *sym, int *perm, int *n0, int *t0)
{
    int n = A->n;
    const int *P = sym->Perm, *count = sym->ColCount;
    int *pinv = emn_xmalloc((size_t)n * sizeof(int));
    int *parent = emn_xmalloc((size_t)n * sizeof(int));
    for (int k = 0; k < n; k++) pinv[P[k]] = k;
    etree(A, P, pinv, parent);
    /* subtree weights: a column's entries are what a solve streams */
    double *W = emn_xmalloc((size_t)n * sizeof(double)), total = 0;
    for (int k = 0; k < n; k++) W[k] = count[k];
    for (int k = 0; k < n; k++) {
        total += count[k];
        if (parent[k] >= 0) W[parent[k]] += W[k];
    }
    int *head = emn_xmalloc((size_t)n * sizeof(int)), *next = emn_xmalloc((size_t)n * sizeof(int));
    for (int k = 0; k < n; k++) head[k] = -1;
    for (int k = n - 1; k >= 0; k--)
        if (parent[k] >= 0) {
            next[k] = head[parent[k]];
            head[parent[k]] = k;
        }
    /* group: 0 or 1 for a half, 2 for the top, -1 until known */
    signed char *group = emn_xmalloc((size_t)n);
    subtree *cand = emn_xmalloc((size_t)n * sizeof *cand);
    /* Grow the top until it holds a quarter of the work, and keep the
     * split whose longer half plus top is shortest: run once to find it,
     * again to stop there. */
    int best = -1;
    double best_cost = 0.75 * total;    /* a split must save a quarter */
    for (int pass = 0; pass < 2; pass++) {
        int nc = 0;
        for (int k = 0; k < n; k++) {
            group[k] = -1;
            if (parent[k] < 0) cand[nc++] = (subtree){W[k], k};
        }
        qsort(cand, (size_t)nc, sizeof *cand, heavier_first);
        double top = 0, work = 0;
        /* no split can cost less than half the rest plus the top: past
         * that, growing the top cannot beat the best; the work bound
         * stops a forest of many small trees early */
        for (int it = 0; nc > 0 && top <= 0.25 * total && work < 1e7; it++) {
            if (pass == 0 && 0.5 * (total + top) >= best_cost) break;
            work += nc;
            double bin[2] = {0, 0};
            for (int a = 0; a < nc; a++) {
                int h = bin[1] < bin[0];
                bin[h] += cand[a].w;
                group[cand[a].root] = (signed char)h;
            }
            double cost = fmax(bin[0], bin[1]) + top;
            if (pass == 0 && cost < best_cost) {
                best_cost = cost;
                best = it;
            }
            if (pass == 1 && it == best) break;
            /* the heaviest goes to the top; its children join the
             * candidates in their places (kept sorted) */
            int r = cand[0].root;
            group[r] = 2;
            top += count[r];
            memmove(cand, cand + 1, (size_t)--nc * sizeof *cand);
            for (int c = head[r]; c >= 0; c = next[c]) {
                subtree x = {W[c], c};
                int lo = 0, hi = nc;
                while (lo < hi) {
                    int mid = lo + (hi - lo) / 2;
                    if (heavier_first(&cand[mid], &x) < 0) lo = mid + 1;
                    else hi = mid;
                }
                memmove(cand + lo + 1, cand + lo, (size_t)(nc - lo) * sizeof *cand);
                cand[lo] = x;
                nc++;
            }
        }
        if (best < 0) break;
    }
    bool ok = best >= 0;
    if (ok) {
        /* below the candidates, a column goes with its parent */
        for (int k = n - 1; k >= 0; k--)
            if (group[k] < 0) group[k] = group[parent[k]];
        int at = 0;
        for (int g = 0; g < 3; g++) {
            if (g == 1) *n0 = at;
            if (g == 2) *t0 = at;
            for (int k = 0; k < n; k++)
                if (group[k] == g) perm[at++] = P[k];
        }
        ok = *n0 > 0 && *t0 > *n0 && *t0 < n;
    }
    free(group);
    free(cand);
    free(head);
    free(next);
    free(W);
    free(parent);
    free(pinv);
    return ok;
}

/*
 * The owner's L D L' analysis.  Row k of L is found from row k of
 * P A P' by walking the elimination tree up from each of its entries, so
 * a row of one half (a subtree group) reads and writes only that half's
 * columns: the halves are factored side by side, then the top.  Columns
 * [0, n0) and [n0, t0) are the halves, [t0, n) the top (t0 = 0: no
 * split).  L's rows are stored by column, ascending, without the unit
 * diagonal; Li comes out the same from every factorization.
 */
typedef struct ldl_pattern {
    int n, n0, t0;
    int *perm, *pinv, *parent;
    int *Lp, *Li;
    bool chain;             /* nearly every column's parent is the next (forward_run) */
    int *split;             /* a chain's, per column below the top: where its rows in the top begin */
    /* The flat forward pass of a solve (plan_rows; not for a chain, nor
     * a supernodal L) takes L's entries p of each half in L's order,
     * y[fr[p]] -= Lx[p] y[fc[p]]: fc is the entry's column, fr its row,
     * or for a row in the top its place in the half's part of fy past n.
     * fy (any row-by-row L): the solve's n numbers and the halves'
     * updates of the top. */
    int *fr, *fc;
    double *fy;
    /* A large factorization (EMN_LDL_SUPER_FLOPS) is a supernodal L L'
     * in the same order (super_factor), whose dense blocks are worked on
     * as such and kept so for the solves (super_solve_in), in Lx; Li and
     * split are then not used.  Its ns supernodes (super_analysis):
     * supernode s holds columns [sup[s], sup[s + 1]), their rows
     * sls[spi[s] .. spi[s + 1]) (its own columns first, then ascending),
     * and its values by columns from spx[s], xsize in all.  smap gives
     * each column's supernode, s_n0 and s_t0 the first supernodes of
     * half 1 and of the top (0: not in halves), csize the largest update
     * one supernode makes to another, maxrow the most rows of one; swork
     * and cwork are the factorization's lists, maps and update buffers. */
    int ns;
    int *sup, *spi, *sls, *smap;
    size_t *spx, xsize;
    double *cwork;
    int *swork;
    double *xd;             /* where a factorization to be kept in single precision is made */
    int s_n0, s_t0, maxrow;
    size_t csize;
    /* the factorization's workspace: x is zero between rows; the stack and
     * path of a half's rows lie in that half's positions */
    double *x;
    int *flag, *stack, *path, *fill;
} ldl_pattern;

static void free_pattern(ldl_pattern **pp, cholmod_common *cc)
{
    ldl_pattern *pat = *pp;
    if (!pat) return;
    free(pat->perm); free(pat->pinv); free(pat->parent); free(pat->Lp); free(pat->Li); free(pat->split);
    free(pat->fr); free(pat->fc); free(pat->fy);
    free(pat->x); free(pat->flag); free(pat->stack); free(pat->path); free(pat->fill);
    free(pat->sup); free(pat->spi); free(pat->sls); free(pat->smap); free(pat->spx);
    free(pat->cwork); free(pat->swork); free(pat->xd);
    free(pat);
    *pp = NULL;
}

/* Numbers in a factorization's Lx: L below the diagonal, or a supernodal
 * L's blocks. */
static size_t lx_size(const ldl_pattern *pat)
{
    return pat->ns ? pat->xsize : (size_t)pat->Lp[pat->n];
}

/* Entries of L an analysis plans, its diagonal included. */
static double planned_lnz(const cholmod_factor *sym)
{
    double lnz = 0;
    for (size_t k = 0; k < sym->n; k++) lnz += ((const int *)sym->ColCount)[k];
    return lnz;
}

/* CHOLMOD's analysis in the order perm as given: not AMD's again, nor
 * postordered.  NULL if it fails. */
static cholmod_factor *analyze_given(cholmod_sparse *S, cholmod_common *cc, const int *perm)
{
    cc->method[0].ordering = CHOLMOD_GIVEN;
    cc->postorder = 0;
    /* CHOLMOD reads perm only; its prototype does not say so */
    cholmod_factor *given = cholmod_analyze_p(S, (int *)perm, NULL, 0, cc);
    cholmod_memory(cc);
    cc->method[0].ordering = CHOLMOD_AMD;
    cc->postorder = 1;
    return given;
}

/* The analysis in an order that eliminates two sides of a small vertex
 * separator first, each by constrained minimum degree, and the separator
 * last; NULL if there is no such cut or its fill is over a tenth above
 * lnz, AMD's. */
static cholmod_factor *bisected(cholmod_sparse *S, cholmod_common *cc, double lnz)
{
    cholmod_factor *cut = NULL;
#if defined(HAVE_CHOLMOD_BISECT) && defined(HAVE_CHOLMOD_CAMD)
    int n = (int)S->nrow;
    int *part = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *perm = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    long sep = cholmod_bisect(S, NULL, 0, 1, part, cc);
    cholmod_memory(cc);
    if (sep > 0 && sep < n / 4 && cholmod_camd(S, NULL, 0, part, perm, cc)) {
        cut = analyze_given(S, cc, perm);
        if (cut && planned_lnz(cut) > 1.1 * lnz) cholmod_free_factor(&cut, cc);
    }
    cholmod_memory(cc);
    free(part);
    free(perm);
#else
    (void)S; (void)cc; (void)lnz;      /* a CHOLMOD without its partition module: no cut */
#endif
    return cut;
}

/* The analysis in an order made from AMD's, amd: its first half, then
 * the rest but the vertices of the rest that the first half touches, in
 * reverse, and those vertices last.  Where AMD's elimination tree is a
 * chain (a ladder, a line), its order runs along the chain from one end,
 * and those vertices are a handful that cut the graph in two: the first
 * half is eliminated towards the cut, as AMD would, and the rest from
 * its far end towards it (in AMD's order, each of its eliminations
 * joined the cut to the next vertex: a 10^5-section ladder's L had
 * 250,000 entries instead of 200,000).  The cut is read off the order
 * in one pass over A, where METIS's separator and CAMD's orders took
 * that ladder's operating point some 40 ms.  NULL if the cut holds a
 * quarter of the vertices or more, or its fill is over a tenth above
 * lnz, AMD's. */
static cholmod_factor *order_cut(const emn_sparse *A, cholmod_sparse *S, cholmod_common *cc, const int *amd,
                                 double lnz)
{
    int n = A->n, half = n / 2, ncut = 0;
    int *pos = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *perm = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    bool *cut = emn_xcalloc((size_t)n + 1, sizeof(bool));
    for (int k = 0; k < n; k++) pos[amd[k]] = k;
    for (int k = 0; k < half; k++)
        for (int p = A->Ap[amd[k]]; p < A->Ap[amd[k] + 1]; p++) {
            int u = A->Ai[p];
            if (pos[u] >= half && !cut[u]) {
                cut[u] = true;
                ncut++;
            }
        }
    cholmod_factor *L = NULL;
    if (ncut < n / 4) {
        int m = 0;
        for (int k = 0; k < half; k++) perm[m++] = amd[k];
        for (int k = n - 1; k >= half; k--)
            if (!cut[amd[k]]) perm[m++] = amd[k];
        for (int k = half; k < n; k++)
            if (cut[amd[k]]) perm[m++] = amd[k];
        L = analyze_given(S, cc, perm);
        if (L && planned_lnz(L) > 1.1 * lnz) cholmod_free_factor(&L, cc);
    }
    free(pos);
    free(perm);
    free(cut);
    return L;
}

/* Where AMD leaves L many times A (a mesh's), nested dissection (METIS)
 * leaves less as the mesh grows: an RLC mesh of 10^6 unknowns factors
 * into 37.4 million entries of L and 1.5e10 flops instead of 42.4 million
 * and 1.88e10, and of 10^5 into 2.77 instead of 3.10 million.  Its
 * analysis costs several of AMD's, so it is tried only where L is large
 * and AMD's fill high; the analysis with the smaller L is kept.  With a
 * hint (emn_lu_hint_order), the analysis in its order (hinted_sym, or
 * NULL where it failed; freed here) is tried instead of METIS's. */
#define EMN_ND_MIN_LNZ 1e6
#define EMN_ND_MIN_FILL 4.0

/* A hinted order is taken without AMD's beside it where it leaves at
 * most this much more fill than where it was made. */
#define EMN_HINT_SLACK 1.1

static cholmod_factor *dissected(cholmod_sparse *S, cholmod_common *cc, cholmod_factor *amd, double *lnz,
                                 cholmod_factor *hinted_sym, bool hint, bool *hinted)
{
    *hinted = false;
#if defined(HAVE_CHOLMOD_BISECT)
    double upper_nnz = 0.5 * ((double)S->nzmax + (double)S->nrow);
    if (*lnz < EMN_ND_MIN_LNZ || *lnz < EMN_ND_MIN_FILL * upper_nnz) {
        cholmod_free_factor(&hinted_sym, cc);
        return amd;
    }
    cholmod_factor *nd = hinted_sym;
    if (!hint) {
        cc->method[0].ordering = CHOLMOD_METIS;
        nd = cholmod_analyze(S, cc);
        cholmod_memory(cc);
        cc->method[0].ordering = CHOLMOD_AMD;
    }
    if (!nd) return amd;
    double nd_lnz = planned_lnz(nd);
    if (nd_lnz >= *lnz) {
        cholmod_free_factor(&nd, cc);
        return amd;
    }
    cholmod_free_factor(&amd, cc);
    *lnz = nd_lnz;
    *hinted = hint;
    return nd;
#else
    (void)S; (void)lnz; (void)hint;     /* a CHOLMOD without its partition module */
    cholmod_free_factor(&hinted_sym, cc);
    return amd;
#endif
}

/* Multiply-adds of a factorization an analysis plans: the sum over
 * columns of their entries squared, near enough. */
static double planned_flops(const cholmod_factor *sym)
{
    double fl = 0;
    for (size_t k = 0; k < sym->n; k++) {
        double c = ((const int *)sym->ColCount)[k];
        fl += c * c;
    }
    return fl;
}

/* The supernodes of pat's L (see ldl_pattern), from CHOLMOD's supernodal
 * analysis in pat's order with no zeros added to merge them (the solves
 * stream every number kept, and merged supernodes kept 70% more on a
 * mesh), except among the smallest, as CHOLMOD does (up to four
 * columns).  One that straddles the top's first column is cut there, so
 * that the halves and the top are whole supernodes.  Also what
 * super_factor needs: each column's supernode, the largest update one
 * supernode makes to another (its rows from the other's first column on,
 * by those in the other's columns) and the most rows of one.  False (and
 * ns = 0) if CHOLMOD cannot analyze it in that order. */
static bool super_analysis(cholmod_sparse *S, cholmod_common *cc, ldl_pattern *pat)
{
    int n = pat->n, t0 = pat->t0;
    cc->supernodal = CHOLMOD_SUPERNODAL;
    double zrelax[3];
    memcpy(zrelax, cc->zrelax, sizeof zrelax);
    cc->zrelax[0] = cc->zrelax[1] = cc->zrelax[2] = 0;
    cholmod_factor *L = analyze_given(S, cc, pat->perm);
    memcpy(cc->zrelax, zrelax, sizeof zrelax);
    cc->supernodal = CHOLMOD_SIMPLICIAL;
    if (L && !(L->is_super && memcmp(L->Perm, pat->perm, (size_t)n * sizeof(int)) == 0))
        cholmod_free_factor(&L, cc);
    if (!L) return false;
    const int *Super = L->super, *Pi = L->pi, *Ls = L->s;
    int cns = (int)L->nsuper, cut = -1;
    for (int s = 0; t0 > 0 && s < cns; s++)
        if (Super[s] < t0 && t0 < Super[s + 1]) cut = s;
    int ns = pat->ns = cns + (cut >= 0);
    pat->sup = emn_xmalloc(((size_t)ns + 1) * sizeof(int));
    pat->spi = emn_xmalloc(((size_t)ns + 1) * sizeof(int));
    pat->spx = emn_xmalloc(((size_t)ns + 1) * sizeof(size_t));
    pat->sls = emn_xmalloc(((size_t)Pi[cns] + (size_t)(cut >= 0 ? Pi[cut + 1] - Pi[cut] : 0) + 1) * sizeof(int));
    int *sup = pat->sup, *spi = pat->spi, *sls = pat->sls;
    size_t *spx = pat->spx;
    spi[0] = 0;
    spx[0] = 0;
    for (int s = 0, t = 0; s < cns; s++) {
        int k1 = Super[s], k2 = Super[s + 1], r0 = Pi[s], r1 = Pi[s + 1];
        for (int part = 0; part < (s == cut ? 2 : 1); part++, t++) {
            int a = s == cut && part == 1 ? t0 : k1, b = s == cut && part == 0 ? t0 : k2;
            int from = r0 + (a - k1);       /* a column's rows start at itself */
            sup[t] = a;
            memcpy(sls + spi[t], Ls + from, (size_t)(r1 - from) * sizeof(int));
            spi[t + 1] = spi[t] + (r1 - from);
            spx[t + 1] = spx[t] + (size_t)(r1 - from) * (size_t)(b - a);
        }
    }
    sup[ns] = n;
    pat->xsize = spx[ns];
    cholmod_free_factor(&L, cc);
    int *smap = pat->smap = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int s = 0; s < ns; s++)
        for (int k = sup[s]; k < sup[s + 1]; k++) smap[k] = s;
    size_t csize = 1;
    int maxrow = 1;
    for (int d = 0; d < ns; d++) {
        int pdi = spi[d], nd = spi[d + 1] - pdi;
        if (nd > maxrow) maxrow = nd;
        for (int p1 = sup[d + 1] - sup[d], p2; p1 < nd; p1 = p2) {
            int t = smap[sls[pdi + p1]];
            for (p2 = p1; p2 < nd && smap[sls[pdi + p2]] == t; p2++) {}
            size_t c = (size_t)(nd - p1) * (size_t)(p2 - p1);
            if (c > csize) csize = c;
        }
    }
    pat->csize = csize;
    pat->maxrow = maxrow;
    /* a column's parent in the top is never the next column of a half:
     * only the top's first column can share a supernode with a half's */
    pat->s_n0 = pat->s_t0 = 0;
    if (t0 > 0 && sup[smap[pat->n0]] == pat->n0 && sup[smap[t0]] == t0) {
        pat->s_n0 = smap[pat->n0];
        pat->s_t0 = smap[t0];
    }
    return true;
}

/* The analysis of the owner's pattern: AMD's order (CHOLMOD's) or nested
 * dissection's, and then, where L is large enough for a solve to be worth
 * two cores, that order rearranged in halves.  NULL if CHOLMOD cannot analyze it. */
static ldl_pattern *analyze_ldl(emn_lu *o, const emn_sparse *A)
{
    cholmod_sparse S = upper(A);
    cholmod_common *cc = ldl_common(o);
    /* A hinted order that leaves here about the fill it left where it
     * was made is taken as it is: it was the better of AMD's and nested
     * dissection's there, on a pattern that this one extends by a few
     * leaves (an operating point's, to which the transient's adds a
     * grid's pads), and AMD's analysis would only lose to it (1.2 s of a
     * 10^6-node mesh's).  One that fills more is weighed against AMD's
     * as METIS's would be. */
    bool hinted = false;
    cholmod_factor *sym = NULL, *tried = o->hint ? analyze_given(&S, cc, o->hint) : NULL;
    if (tried && o->hint_lnz > 0 && planned_lnz(tried) <= EMN_HINT_SLACK * o->hint_lnz) {
        sym = tried;
        tried = NULL;
        hinted = true;
    } else {
        sym = cholmod_analyze(&S, cc);
        cholmod_memory(cc);
        o->stats.ordered++;
    }
    if (!sym) {
        cholmod_free_factor(&tried, cc);
        return NULL;
    }
    int n = A->n, n0 = 0, t0 = 0;
    double lnz = planned_lnz(sym);
    if (!hinted) sym = dissected(&S, cc, sym, &lnz, tried, o->hint != NULL, &hinted);
    if (hinted) o->stats.hinted++;
    if (lnz >= EMN_LDL_HALVES_MIN) {
        int *perm = emn_xmalloc(((size_t)n + 1) * sizeof(int));
        bool split = plan_halves(A, sym, perm, &n0, &t0);
        if (!split) {
            /* AMD's tree is a chain, or nearly (a ladder, a line): cut the
             * graph in two by a small separator read off AMD's order,
             * each side in that order or its reverse (order_cut); failing
             * that, by METIS's separator with each side ordered by AMD
             * before it (CAMD); either only if it costs little fill */
            for (int how = 0; how < 2 && !split; how++) {
                cholmod_factor *cut = how == 0 ? order_cut(A, &S, cc, sym->Perm, lnz) : bisected(&S, cc, lnz);
                if (cut) {
                    split = plan_halves(A, cut, perm, &n0, &t0);
                    cholmod_free_factor(&cut, cc);
                    if (split) o->stats.cut_by[how]++;
                }
            }
        }
        if (split) {
            cholmod_factor *given = analyze_given(&S, cc, perm);
            if (given) {
                cholmod_free_factor(&sym, cc);
                sym = given;
            } else {
                n0 = t0 = 0;
            }
        }
        free(perm);
    }
    ldl_pattern *pat = emn_xcalloc(1, sizeof *pat);
    size_t sz = (size_t)n + 1;
    pat->n = n;
    pat->n0 = n0;
    pat->t0 = t0;
    pat->perm = emn_xmalloc(sz * sizeof(int));
    pat->pinv = emn_xmalloc(sz * sizeof(int));
    pat->parent = emn_xmalloc(sz * sizeof(int));
    pat->Lp = emn_xmalloc(sz * sizeof(int));
    memcpy(pat->perm, sym->Perm, (size_t)n * sizeof(int));
    for (int k = 0; k < n; k++) pat->pinv[pat->perm[k]] = k;
    etree(A, pat->perm, pat->pinv, pat->parent);
    int next = 0;
    for (int k = 0; k + 1 < n; k++) next += pat->parent[k] == k + 1;
    pat->chain = next >= 0.9 * n;
    /* CHOLMOD's column counts include the diagonal */
    pat->Lp[0] = 0;
    for (int k = 0; k < n; k++) pat->Lp[k + 1] = pat->Lp[k] + ((const int *)sym->ColCount)[k] - 1;
    double flops = planned_flops(sym);
    cholmod_free_factor(&sym, cc);
    pat->x = emn_xcalloc(sz, sizeof(double));
    pat->flag = emn_xmalloc(sz * sizeof(int));
    pat->stack = emn_xmalloc(sz * sizeof(int));
    pat->path = emn_xmalloc(sz * sizeof(int));
    pat->fill = emn_xmalloc(sz * sizeof(int));
    if (!(flops >= o->super_flops && super_analysis(&S, cc, pat)))
        pat->Li = emn_xmalloc(((size_t)pat->Lp[n] + 1) * sizeof(int));
    cholmod_free_work(cc);      /* its workspace (n-sized) is needed again only for a new pattern */
    return pat;
}

/* Rows [k0, k1) of L, and of D (as 1 / D in dinv), from A: the rows of
 * one half, or the top's.  Their stacks and paths use positions [s0, s1).
 * d[0], d[1] become the smallest and largest pivot.  Returns false at a
 * pivot not clearly positive: not above rounding of its diagonal entry of
 * A, or not finite. */
static bool ldl_rows(ldl_pattern *pat, const emn_sparse *A, double *Lx, double *dinv, int k0, int k1,
                     int s0, int s1, double *d)
{
    const int *Ap = A->Ap, *Ai = A->Ai, *perm = pat->perm, *pinv = pat->pinv, *parent = pat->parent;
    const int *Lp = pat->Lp;
    const double *Ax = A->Ax;
    int *Li = pat->Li, *flag = pat->flag, *stack = pat->stack, *path = pat->path + s0, *fill = pat->fill;
    double *x = pat->x, lo = INFINITY, hi = 0;
    for (int k = k0; k < k1; k++) {
        /* row k's pattern: the tree paths from its entries up to k, on a
         * stack that lists each column before its ancestors */
        int j = perm[k], top = s1;
        double akk = 0;
        flag[k] = k;
        fill[k] = 0;
        for (int p = Ap[j]; p < Ap[j + 1]; p++) {
            int i = pinv[Ai[p]];
            if (i >= k) {
                if (i == k) akk = Ax[p];
                continue;
            }
            x[i] = Ax[p];
            int m = 0;
            for (; flag[i] != k; i = parent[i]) {
                path[m++] = i;
                flag[i] = k;
            }
            while (m > 0) stack[--top] = path[--m];
        }
        /* L(k, :) D solves the rows above it; each column of it is used
         * once it is final, and takes row k at its end */
        double sum = 0;
        for (int t = top; t < s1; t++) {
            int i = stack[t], end = Lp[i] + fill[i];
            double yi = x[i];
            x[i] = 0;
            for (int p = Lp[i]; p < end; p++) x[Li[p]] -= Lx[p] * yi;
            double lki = yi * dinv[i];
            sum += lki * yi;
            Li[end] = k;
            Lx[end] = lki;
            fill[i]++;
        }
        double dk = akk - sum;
        if (!(dk > DBL_EPSILON * fabs(akk)) || !isfinite(dk)) return false;     /* x is all 0 again */
        dinv[k] = 1 / dk;
        lo = fmin(lo, dk);
        hi = fmax(hi, dk);
    }
    d[0] = lo;
    d[1] = hi;
    return true;
}

typedef struct ldl_job {
    ldl_pattern *pat;
    const emn_sparse *A;
    double *Lx, *dinv;
    bool ok[2];
    double d[2][2];
} ldl_job;

static void ldl_half(void *arg, int h)
{
    ldl_job *J = arg;
    int lo = h ? J->pat->n0 : 0, hi = h ? J->pat->t0 : J->pat->n0;
    J->ok[h] = ldl_rows(J->pat, J->A, J->Lx, J->dinv, lo, hi, lo, hi, J->d[h]);
}

/* ------------------------------------------------- supernodal numeric */

/* C -= A B' for C m x nc (leading dimension ldc), A m x k (lda), B nc x k
 * (ldb), all by columns: the update a supernode's columns make to a later
 * one's, and to its own trailing columns.  Blocks of 8 rows by 4 columns
 * are summed over k in registers; the rest one by one.  Built by GCC for
 * x86-64, a second copy for CPUs with AVX2 and FMA is chosen when the
 * program starts. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define EMN_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#endif
#endif
#ifndef EMN_CLONES
#define EMN_CLONES
#endif
#if defined(__GNUC__)
typedef double v4d __attribute__((vector_size(32)));
#define EMN_V4 1

/* Four of L's numbers from p as doubles: its own type's load, or single
 * precision widened (element by element, which GCC makes one widening
 * load; __builtin_convertvector of the whole vector it made two
 * half-width conversions). */
typedef float v4f __attribute__((vector_size(16)));
#define EMN_LOAD4_double(p) ({ v4d v_; memcpy(&v_, (p), sizeof v_); v_; })
#define EMN_LOAD4_float(p) ({ v4f f_; memcpy(&f_, (p), sizeof f_); (v4d){f_[0], f_[1], f_[2], f_[3]}; })
#endif

EMN_CLONES
static void gemm_sub(int m, int nc, int k, const double *A, int lda, const double *B, int ldb, double *C, int ldc)
{
    int j = 0;
#ifdef EMN_V4
    for (; j + 4 <= nc; j += 4) {
        int i = 0;
        for (; i + 8 <= m; i += 8) {
            /* eight sums in named variables: an array of them the
             * compiler leaves in memory */
            v4d c00 = {0}, c01 = {0}, c02 = {0}, c03 = {0}, c10 = {0}, c11 = {0}, c12 = {0}, c13 = {0};
            const double *a = A + i, *b = B + j;
            for (int q = 0; q < k; q++, a += lda, b += ldb) {
                v4d a0, a1;
                memcpy(&a0, a, sizeof a0);
                memcpy(&a1, a + 4, sizeof a1);
                c00 += a0 * b[0];
                c10 += a1 * b[0];
                c01 += a0 * b[1];
                c11 += a1 * b[1];
                c02 += a0 * b[2];
                c12 += a1 * b[2];
                c03 += a0 * b[3];
                c13 += a1 * b[3];
            }
            v4d sum[8] = {c00, c10, c01, c11, c02, c12, c03, c13};
            for (int t = 0; t < 4; t++) {
                double *cc = C + i + (size_t)(j + t) * ldc;
                v4d x0, x1;
                memcpy(&x0, cc, sizeof x0);
                memcpy(&x1, cc + 4, sizeof x1);
                x0 -= sum[2 * t];
                x1 -= sum[2 * t + 1];
                memcpy(cc, &x0, sizeof x0);
                memcpy(cc + 4, &x1, sizeof x1);
            }
        }
        for (; i < m; i++) {
            double c0 = 0, c1 = 0, c2 = 0, c3 = 0;
            for (int q = 0; q < k; q++) {
                double a = A[i + (size_t)q * lda];
                const double *b = B + j + (size_t)q * ldb;
                c0 += a * b[0];
                c1 += a * b[1];
                c2 += a * b[2];
                c3 += a * b[3];
            }
            C[i + (size_t)j * ldc] -= c0;
            C[i + (size_t)(j + 1) * ldc] -= c1;
            C[i + (size_t)(j + 2) * ldc] -= c2;
            C[i + (size_t)(j + 3) * ldc] -= c3;
        }
    }
#endif
    for (; j < nc; j++)
        for (int q = 0; q < k; q++) {
            double b = B[j + (size_t)q * ldb];
            const double *a = A + (size_t)q * lda;
            double *c = C + (size_t)j * ldc;
            for (int i = 0; i < m; i++) c[i] -= a[i] * b;
        }
}

/* L L' of one supernode's nrow x ncol block X (its columns' rows, the
 * diagonal block first), already updated by every earlier supernode:
 * by blocks of columns, each factored column by column and then taken
 * from the columns after it.  False at a pivot not positive or not
 * finite. */
#define EMN_SUPER_PANEL 32

EMN_CLONES
static bool panel_llt(double *X, int nrow, int ncol)
{
    for (int c0 = 0; c0 < ncol; c0 += EMN_SUPER_PANEL) {
        int c1 = c0 + EMN_SUPER_PANEL < ncol ? c0 + EMN_SUPER_PANEL : ncol;
        for (int c = c0; c < c1; c++) {
            double *x = X + (size_t)c * nrow;
            /* the panel's earlier columns four at a time: x read and
             * written once for the four */
            int q = c0;
            for (; q + 4 <= c; q += 4) {
                const double *y0 = X + (size_t)q * nrow, *y1 = y0 + nrow, *y2 = y1 + nrow, *y3 = y2 + nrow;
                double b0 = y0[c], b1 = y1[c], b2 = y2[c], b3 = y3[c];
                int r = c;
#ifdef EMN_V4
                for (; r + 4 <= nrow; r += 4) {
                    v4d u;
                    memcpy(&u, x + r, sizeof u);
                    u -= (EMN_LOAD4_double(y0 + r) * b0 + EMN_LOAD4_double(y1 + r) * b1) +
                         (EMN_LOAD4_double(y2 + r) * b2 + EMN_LOAD4_double(y3 + r) * b3);
                    memcpy(x + r, &u, sizeof u);
                }
#endif
                for (; r < nrow; r++) x[r] -= (y0[r] * b0 + y1[r] * b1) + (y2[r] * b2 + y3[r] * b3);
            }
            for (; q < c; q++) {
                const double *y = X + (size_t)q * nrow;
                double b = y[c];
                for (int r = c; r < nrow; r++) x[r] -= y[r] * b;
            }
            double d = x[c];
            if (!(d > 0) || !isfinite(d)) return false;
            d = sqrt(d);
            x[c] = d;
            double id = 1 / d;
            for (int r = c + 1; r < nrow; r++) x[r] *= id;
        }
        if (c1 < ncol)
            gemm_sub(nrow - c1, ncol - c1, c1 - c0, X + c1 + (size_t)c0 * nrow, nrow, X + c1 + (size_t)c0 * nrow,
                     nrow, X + c1 + (size_t)c1 * nrow, nrow);
    }
    return true;
}

/* The supernodes [s0, s1) of pat's L L' of P A P', left-looking:
 * each gathers its columns of A, takes the updates of the supernodes
 * below it that reach its columns (linked in head[s], next), and is
 * factored.  Supernodes of one half link only to their half or the top,
 * each half in its own head; the top reads both (lists [l0, l1)) and
 * links into the first.  Each half has its own map (row to place in the
 * block) and C (an update before it is added). */
typedef struct super_work {
    const ldl_pattern *pat;
    const emn_sparse *A;
    double *X;
    int *head[2], *next, *lpos, *map[2];
    double *cbuf[2];
    int s_n0, s_t0;
    bool ok[2];
} super_work;

static bool super_range(super_work *W, int s0, int s1, int h, int l0, int l1)
{
    const ldl_pattern *pat = W->pat;
    const int *Super = pat->sup, *Pi = pat->spi, *Ls = pat->sls, *smap = pat->smap;
    const size_t *Px = pat->spx;
    const int *perm = pat->perm, *pinv = pat->pinv, *Ap = W->A->Ap, *Ai = W->A->Ai;
    const double *Ax = W->A->Ax;
    double *X = W->X, *C = W->cbuf[h];
    int *map = W->map[h], *next = W->next, *lpos = W->lpos, *own = W->head[h];
    for (int s = s0; s < s1; s++) {
        int k1 = Super[s], k2 = Super[s + 1], ncol = k2 - k1, psi = Pi[s], nrow = Pi[s + 1] - psi;
        double *Xs = X + Px[s];
        for (int i = 0; i < nrow; i++) map[Ls[psi + i]] = i;
        memset(Xs, 0, (size_t)nrow * (size_t)ncol * sizeof *Xs);
        for (int k = k1; k < k2; k++) {
            int j = perm[k];
            double *x = Xs + (size_t)(k - k1) * nrow;
            for (int p = Ap[j]; p < Ap[j + 1]; p++) {
                int r = pinv[Ai[p]];
                if (r >= k) x[map[r]] = Ax[p];
            }
        }
        for (int l = l0; l < l1; l++)
            for (int d = W->head[l][s], dn; d >= 0; d = dn) {
                dn = next[d];
                int pdi = Pi[d], nd = Pi[d + 1] - pdi, dcol = Super[d + 1] - Super[d];
                int p1 = lpos[d], p2 = p1;
                while (p2 < nd && Ls[pdi + p2] < k2) p2++;
                int m = nd - p1, nc = p2 - p1;
                const double *Xd = X + Px[d] + p1;
                memset(C, 0, (size_t)m * (size_t)nc * sizeof *C);
                gemm_sub(m, nc, dcol, Xd, nd, Xd, nd, C, m);
                const int *rows = Ls + pdi + p1;
                for (int c = 0; c < nc; c++) {
                    double *x = Xs + (size_t)(rows[c] - k1) * nrow;
                    const double *cc = C + (size_t)c * m;
                    for (int r = c; r < m; r++) x[map[rows[r]]] += cc[r];
                }
                lpos[d] = p2;
                if (p2 < nd) {
                    int t = smap[Ls[pdi + p2]];
                    next[d] = own[t];
                    own[t] = d;
                }
            }
        if (!panel_llt(Xs, nrow, ncol)) return false;
        if (nrow > ncol) {
            int t = smap[Ls[psi + ncol]];
            lpos[s] = ncol;
            next[s] = own[t];
            own[t] = s;
        }
    }
    return true;
}

static void super_half(void *arg, int h)
{
    super_work *W = arg;
    W->ok[h] = super_range(W, h ? W->s_n0 : 0, h ? W->s_t0 : W->s_n0, h, h, h + 1);
}

/* The numeric L L' of P A P' in X, in pat's supernodal layout: the
 * halves side by side where the supernodes keep to them, then the top.
 * lo, hi: the smallest and largest pivot of L D L' (l_jj^2).  False where
 * A is not positive definite, or a pivot is not clearly above rounding of
 * its diagonal entry of A, as ldl_rows decides. */
static bool super_factor(ldl_pattern *pat, const emn_sparse *A, double *X, double *lo, double *hi)
{
    int ns = pat->ns, n = pat->n;
    if (!pat->swork) {
        pat->swork = emn_xmalloc((4 * (size_t)ns + 2 * (size_t)n + 4) * sizeof(int));
        pat->cwork = emn_xmalloc(2 * pat->csize * sizeof(double));
    }
    super_work W = {pat, A, X, {pat->swork, pat->swork + ns}, pat->swork + 2 * ns, pat->swork + 3 * ns,
                    {pat->swork + 4 * ns, pat->swork + 4 * ns + n}, {pat->cwork, pat->cwork + pat->csize},
                    pat->s_n0, pat->s_t0, {true, true}};
    for (int s = 0; s < 2 * ns; s++) pat->swork[s] = -1;
    if (pat->s_t0 > 0) {
        emn_par_two(super_half, &W);
        if (!W.ok[0] || !W.ok[1] || !super_range(&W, pat->s_t0, ns, 0, 0, 2)) return false;
    } else if (!super_range(&W, 0, ns, 0, 0, 1)) {
        return false;
    }
    const int *Super = pat->sup, *Pi = pat->spi, *perm = pat->perm;
    const size_t *Px = pat->spx;
    double dlo = INFINITY, dhi = 0;
    for (int t = 0; t < ns; t++) {
        int k1 = Super[t], nrow = Pi[t + 1] - Pi[t];
        for (int c = 0; c < Super[t + 1] - k1; c++) {
            int col = perm[k1 + c];
            int pd = emn_sparse_find(A, col, col);
            double d = X[Px[t] + (size_t)c * nrow + c], dj = d * d, akk = pd >= 0 ? A->Ax[pd] : 0;
            if (!(dj > DBL_EPSILON * fabs(akk)) || !isfinite(dj)) return false;
            dlo = fmin(dlo, dj);
            dhi = fmax(dhi, dj);
        }
    }
    *lo = dlo;
    *hi = dhi;
    return true;
}

static void super_solve_in(const ldl_pattern *pat, const emn_lu *o, const double *X, const float *Xf, double *y);

/* The supernodal L L' of A just made in pat->xd kept by lu: rounded to
 * single precision in lu->Lf if solves with that come within maxerr of
 * known solutions (emn_lu_allow_single), else as it is, the workspace
 * becoming lu's Lx and lu's former Lx (if any) the workspace.  The
 * probes are x = 1 everywhere and x of alternating signs, b = A x.  The
 * first is a circuit's common mode: the direction a matrix of
 * conductances (off the diagonal all <= 0) holds least stiffly has all
 * its entries of one sign, and so leans on it.  A probe of random signs
 * alone did not: on a grid of 1e9 S links and 0.04 S to ground it found
 * solves in single precision good to 1e-7 while the transient's were off
 * by 2e-4 V, and the common mode finds them off by 0.1 to 100. */
static void keep_super(emn_lu *lu, const emn_lu *o, ldl_pattern *pat, const emn_sparse *A, double maxerr)
{
    size_t nx = lx_size(pat), n = (size_t)pat->n;
    if (!lu->Lf) lu->Lf = emn_xmalloc((nx + 1) * sizeof(float));
    const double *x = pat->xd;
    float *f = lu->Lf;
    for (size_t q = 0; q < nx; q++) f[q] = (float)x[q];
    /* y in the solve's own buffer: no solve runs while one factors */
    double *xt = emn_xmalloc(2 * (n + 1) * sizeof(double)), *b = xt + n + 1, *y = o->work;
    double err = 0;
    for (int probe = 0; probe < 2; probe++) {
        for (size_t i = 0; i < n; i++) xt[i] = probe && i % 2 ? -1 : 1;
        emn_sparse_matvec(A, xt, b);
        for (size_t k = 0; k < n; k++) y[k] = b[pat->perm[k]];
        super_solve_in(pat, o, NULL, lu->Lf, y);
        for (size_t k = 0; k < n; k++) {
            double d = fabs(y[k] - xt[pat->perm[k]]);
            err = isnan(d) ? INFINITY : fmax(err, d);     /* NaN: an entry past float's range */
        }
    }
    free(xt);
    lu->single = err <= maxerr;
    if (lu->single) {
        free(lu->Lx);
        lu->Lx = NULL;
    } else {
        double *t = lu->Lx;
        lu->Lx = pat->xd;
        pat->xd = t;
        free(lu->Lf);
        lu->Lf = NULL;
    }
}

/* The columns of half h of a row-by-row L: [c[h], c[h + 1]) (all
 * below the top in half 0 if the pattern is not in halves). */
static void rows_halves(const ldl_pattern *pat, int c[3])
{
    c[0] = 0;
    c[1] = pat->t0 > 0 ? pat->n0 : pat->n;
    c[2] = pat->t0 > 0 ? pat->t0 : pat->n;
}

/* A row-by-row L's solve buffer (fy) and, unless it is a chain, the
 * flat forward pass's plan (see ldl_pattern), once the first
 * factorization has laid out L's rows.  By columns, the forward pass
 * leaves each column's loop after a few entries, at a length the
 * processor cannot foresee on a bushy tree; flat, it has one loop.
 * Solves alternated in one process, flat forward and backward by
 * columns against both by columns: ibmpg1t's L (6.4 entries a column)
 * 0.36-0.38 ms against 0.47-0.50, mesh-1e3's (10.9) 0.015-0.016 against
 * 0.016-0.017, mesh-1e4's (18.4) 0.28-0.32 against 0.30-0.41.  The
 * backward pass stays by columns: going back over L's entries from the
 * last, each column's updates of one number wait on each other through
 * memory (0.36-0.39 ms on ibmpg1t, 0.45-0.47 on mesh-1e4), and going
 * back by rows, from a copy of each factorization's values in that
 * order (0.28-0.33 ms on ibmpg1t), took a fifth more memory there.  The
 * sums are the same, in the same order, either way.  A chain's forward
 * pass by columns carries its update to the next column in a register
 * (forward_run), and sends its halves' rows in the top from split[j] on. */
static void plan_rows(ldl_pattern *pat)
{
    int n = pat->n, t0 = pat->t0, ntop = t0 > 0 ? n - t0 : 0, c[3];
    const int *Lp = pat->Lp, *Li = pat->Li;
    pat->fy = emn_xmalloc(((size_t)n + 2 * (size_t)ntop + 1) * sizeof(double));
    if (pat->chain) {
        if (t0 == 0) return;
        /* rows ascend in each column: those in the top come last */
        pat->split = emn_xmalloc((size_t)t0 * sizeof(int));
        for (int j = 0; j < t0; j++) {
            int p = Lp[j + 1];
            while (p > Lp[j] && Li[p - 1] >= t0) p--;
            pat->split[j] = p;
        }
        return;
    }
    rows_halves(pat, c);
    size_t nz = (size_t)Lp[c[2]] + 1;
    pat->fr = emn_xmalloc(nz * sizeof(int));
    pat->fc = emn_xmalloc(nz * sizeof(int));
    for (int h = 0; h < 2; h++)
        for (int j = c[h]; j < c[h + 1]; j++)
            for (int p = Lp[j]; p < Lp[j + 1]; p++) {
                int i = Li[p];
                pat->fc[p] = j;
                pat->fr[p] = i < t0 || t0 == 0 ? i : n + h * ntop + (i - t0);
            }
}

/* L D L' of a symmetric A.  Returns 0, or -1 if a pivot is not positive
 * and clearly above rounding of its diagonal entry (the matrix is
 * indefinite or singular to working precision: KLU decides, and names
 * the column if it is singular). */
static int factor_ldl(emn_lu *lu, const emn_sparse *A)
{
    emn_lu *o = lu->share ? lu->share : lu;
    if (!o->pat) {
        o->pat = analyze_ldl(o, A);
        o->pat_id++;
    }
    ldl_pattern *pat = o->pat;
    if (!pat) return -1;
    int n = A->n, t0 = pat->t0;
    if (lu != o && lu->pat_id != o->pat_id) {   /* laid out for an analysis since replaced */
        free(lu->Lx);
        free(lu->Lf);
        free(lu->dinv);
        lu->Lx = lu->dinv = NULL;
        lu->Lf = NULL;
        lu->pat_id = o->pat_id;
    }
    /* one that may be kept in single precision is made in the pattern's
     * workspace (its own Lx, if it has one, is the workspace after) */
    bool try_single = o->single_err > 0 && pat->ns;
    if (try_single && !pat->xd) pat->xd = emn_xmalloc((lx_size(pat) + 1) * sizeof(double));
    if (!lu->Lx && !try_single) {
        lu->Lx = emn_xmalloc((lx_size(pat) + 1) * sizeof(double));
        if (!pat->ns) lu->dinv = emn_xmalloc(((size_t)n + 1) * sizeof(double));     /* L L': no D */
    }
    if (pat->ns && !o->work) {
        o->work = emn_xmalloc(((size_t)n + 1) * sizeof(double));
        if (t0 > 0) o->topbuf = emn_xmalloc(2 * (size_t)(n - t0) * sizeof(double));
        o->sbuf = emn_xmalloc(2 * ((size_t)pat->maxrow + 1) * sizeof(double));
    }
    if (lu->use_ldl) lu->use_ldl = lu->valid = false;   /* refactored in place */
    lu->single = false;
    lu->stats.ldl++;
    double lo, hi;
    if (pat->ns) {
        lu->stats.super++;
        if (pat->s_t0 > 0) lu->stats.super_halves++;
        if (!super_factor(pat, A, try_single ? pat->xd : lu->Lx, &lo, &hi)) return -1;
        if (try_single) keep_super(lu, o, pat, A, o->single_err);
    } else {
        ldl_job J = {pat, A, lu->Lx, lu->dinv, {true, true}, {{INFINITY, 0}, {INFINITY, 0}}};
        if (t0 > 0) emn_par_two(ldl_half, &J);
        double top[2] = {INFINITY, 0};
        if (!J.ok[0] || !J.ok[1] || !ldl_rows(pat, A, lu->Lx, lu->dinv, t0, n, 0, n, top)) return -1;
        lo = fmin(top[0], fmin(J.d[0][0], J.d[1][0]));
        hi = fmax(top[1], fmax(J.d[0][1], J.d[1][1]));
    }
    if (!pat->fy && !pat->ns) plan_rows(pat);
    klu_free_numeric(&lu->num, &lu->common);
    lu->rcond = lo / hi;
    lu->use_ldl = lu->valid = true;
    if (lu->single) lu->stats.single++;
    return 0;
}

/* Forward and backward passes over a range [lo, hi) of L's columns, the
 * forward one sending the entries from split[j] on (rows t0 and up) to
 * top[row - t0] if top is given.  With `chain` (a pattern whose columns
 * nearly all have the next column for parent, and so that next row for
 * their first entry: a ladder's), the update along that entry is carried
 * to the next column in a register, where storing it and loading it back
 * puts the store's forwarding, some five cycles, on the chain from column
 * to column.  The sums are the same, in the same order, either way.  (On
 * a bushy tree, ibmpg1t's, testing each column cost more than it saved.) */
static inline void forward_run(const ldl_pattern *pat, const double *Lx, double *y, int lo, int hi, double *top,
                               bool chain)
{
    const int *Lp = pat->Lp, *Li = pat->Li, *split = pat->split;
    int t0 = pat->t0;
    double yj = lo < hi ? y[lo] : 0;
    for (int j = lo; j < hi; j++) {
        int p = Lp[j], end = Lp[j + 1], mid = top ? split[j] : end;
        double next = chain && j + 1 < hi ? y[j + 1] : 0;
        if (!chain) yj = y[j];
        if (yj != 0) {
            if (chain && p < mid && Li[p] == j + 1 && j + 1 < hi) next -= Lx[p++] * yj;
            for (; p < mid; p++) y[Li[p]] -= Lx[p] * yj;
            for (; p < end; p++) top[Li[p] - t0] -= Lx[p] * yj;
        }
        if (chain) {
            y[j] = yj;
            yj = next;
        }
    }
}

static inline void backward_run(const ldl_pattern *pat, const double *Lx, const double *dinv, double *y, int lo,
                                int hi, bool chain)
{
    const int *Lp = pat->Lp, *Li = pat->Li;
    double prev = 0;            /* x of column j + 1 */
    for (int j = hi - 1; j >= lo; j--) {
        double x = y[j] * dinv[j];
        int beg = Lp[j], end = Lp[j + 1];
        bool link = chain && beg < end && Li[beg] == j + 1 && j + 1 < hi;
        for (int p = end - 1; p >= beg + link; p--) x -= Lx[p] * y[Li[p]];
        if (link) x -= Lx[beg] * prev;
        y[j] = x;
        prev = x;
    }
}

static void forward_cols(const ldl_pattern *pat, const double *Lx, double *y, int lo, int hi, double *top)
{
    if (pat->chain) forward_run(pat, Lx, y, lo, hi, top, true);
    else forward_run(pat, Lx, y, lo, hi, top, false);
}

static void backward_cols(const ldl_pattern *pat, const double *Lx, const double *dinv, double *y, int lo, int hi)
{
    if (pat->chain) backward_run(pat, Lx, dinv, y, lo, hi, true);
    else backward_run(pat, Lx, dinv, y, lo, hi, false);
}

typedef struct super_solve {
    const ldl_pattern *pat;
    const double *X;
    const float *Xf;        /* L in single precision instead, or NULL */
    double *y, *topbuf, *sbuf;
} super_solve;

/* The passes for L's numbers of type T (double, or float: rounded to
 * single precision, the arithmetic still in double), from S->X or
 * S->Xf.  A supernode's columns are taken four at a time: the small
 * triangle of the four on the diagonal one by one, then the rows below
 * it against all four at once, so that buf is read and written once per
 * four columns and the products are summed four to a vector (one column
 * at a time, buf's load, multiply-subtract and store one number each,
 * held the forward pass of a 10^6-node mesh to 2.3 GB/s of L).  The
 * backward pass goes over the same blocks from the last: each of the
 * four columns' dot product with the rows below the block first, read
 * from the last row up (the rows the block before has just solved come
 * last, so its divisions overlap these sums), then the triangle from
 * its last column.  The pivots' reciprocals are taken before the chain
 * of the triangle that needs them. */
#define EMN_SUPER_PASSES(T, XS, LOAD4, FORWARD, BACKWARD) \
EMN_CLONES \
static void FORWARD(const super_solve *S, int s0, int s1, int lim, double *top, double *buf) \
{ \
    const int *Super = S->pat->sup, *Pi = S->pat->spi, *Ls = S->pat->sls; \
    const size_t *Px = S->pat->spx; \
    double *y = S->y; \
    for (int s = s0; s < s1; s++) { \
        int k1 = Super[s], ncol = Super[s + 1] - k1, nrow = Pi[s + 1] - Pi[s]; \
        const int *rows = Ls + Pi[s]; \
        const T *X = S->XS + Px[s]; \
        for (int i = 0; i < nrow; i++) buf[i] = rows[i] < lim ? y[rows[i]] : 0; \
        for (int c = 0; c < ncol; c += 4) { \
            int w = ncol - c < 4 ? ncol - c : 4; \
            const T *x0 = X + (size_t)c * nrow; \
            double inv[4]; \
            for (int q = 0; q < w; q++) inv[q] = 1 / (double)x0[(size_t)q * nrow + c + q]; \
            for (int q = 0; q < w; q++) { \
                const T *x = x0 + (size_t)q * nrow; \
                double b = buf[c + q] * inv[q]; \
                buf[c + q] = b; \
                for (int r = q + 1; r < w; r++) buf[c + r] -= x[c + r] * b; \
            } \
            int i = c + w; \
            if (w == 4) { \
                const T *x1 = x0 + nrow, *x2 = x1 + nrow, *x3 = x2 + nrow; \
                double b0 = buf[c], b1 = buf[c + 1], b2 = buf[c + 2], b3 = buf[c + 3]; \
                EMN_SUPER_FORWARD4(LOAD4) \
                for (; i < nrow; i++) buf[i] -= (x0[i] * b0 + x1[i] * b1) + (x2[i] * b2 + x3[i] * b3); \
            } else { \
                for (int q = 0; q < w; q++) { \
                    const T *x = x0 + (size_t)q * nrow; \
                    double b = buf[c + q]; \
                    int r = i; \
                    EMN_SUPER_FORWARD1(LOAD4) \
                    for (; r < nrow; r++) buf[r] -= x[r] * b; \
                } \
            } \
        } \
        for (int i = 0; i < nrow; i++) { \
            if (rows[i] < lim) y[rows[i]] = buf[i]; \
            else top[rows[i] - lim] += buf[i]; \
        } \
    } \
} \
\
EMN_CLONES \
static void BACKWARD(const super_solve *S, int s0, int s1, double *buf) \
{ \
    const int *Super = S->pat->sup, *Pi = S->pat->spi, *Ls = S->pat->sls; \
    const size_t *Px = S->pat->spx; \
    double *y = S->y; \
    for (int s = s1 - 1; s >= s0; s--) { \
        int k1 = Super[s], ncol = Super[s + 1] - k1, nrow = Pi[s + 1] - Pi[s]; \
        const int *rows = Ls + Pi[s]; \
        const T *X = S->XS + Px[s]; \
        for (int i = 0; i < nrow; i++) buf[i] = y[rows[i]]; \
        for (int c = (ncol - 1) / 4 * 4; c >= 0; c -= 4) { \
            int w = ncol - c < 4 ? ncol - c : 4; \
            const T *x0 = X + (size_t)c * nrow; \
            int i = c + w; \
            if (w == 4) { \
                const T *x1 = x0 + nrow, *x2 = x1 + nrow, *x3 = x2 + nrow; \
                double d0 = 0, d1 = 0, d2 = 0, d3 = 0; \
                int r = nrow; \
                EMN_SUPER_BACKWARD4(LOAD4) \
                for (; r > i; r--) { \
                    double u = buf[r - 1]; \
                    d0 += x0[r - 1] * u; \
                    d1 += x1[r - 1] * u; \
                    d2 += x2[r - 1] * u; \
                    d3 += x3[r - 1] * u; \
                } \
                buf[c] -= d0; \
                buf[c + 1] -= d1; \
                buf[c + 2] -= d2; \
                buf[c + 3] -= d3; \
            } else { \
                for (int q = 0; q < w; q++) { \
                    const T *x = x0 + (size_t)q * nrow; \
                    double d = 0; \
                    int r = nrow; \
                    EMN_SUPER_BACKWARD1(LOAD4) \
                    for (; r > i; r--) d += x[r - 1] * buf[r - 1]; \
                    buf[c + q] -= d; \
                } \
            } \
            double inv[4]; \
            for (int q = 0; q < w; q++) inv[q] = 1 / (double)x0[(size_t)q * nrow + c + q]; \
            for (int q = w - 1; q >= 0; q--) { \
                const T *x = x0 + (size_t)q * nrow; \
                double t = buf[c + q]; \
                for (int r = q + 1; r < w; r++) t -= x[c + r] * buf[c + r]; \
                buf[c + q] = t * inv[q]; \
            } \
        } \
        for (int c = 0; c < ncol; c++) y[k1 + c] = buf[c]; \
    } \
}

/* The vector loops of the passes, four rows at a time: forward from row
 * i (r, for one column) down to the last whole four, leaving it at the
 * first row not done; backward from r = nrow up to row i, leaving r just
 * past the last row not done.  One column's dot product keeps two sums,
 * four columns' one each, so that no add waits on the one before. */
#ifdef EMN_V4
#define EMN_SUPER_FORWARD4(LOAD4) \
    for (; i + 4 <= nrow; i += 4) { \
        v4d u; \
        memcpy(&u, buf + i, sizeof u); \
        u -= (LOAD4(x0 + i) * b0 + LOAD4(x1 + i) * b1) + (LOAD4(x2 + i) * b2 + LOAD4(x3 + i) * b3); \
        memcpy(buf + i, &u, sizeof u); \
    }
#define EMN_SUPER_BACKWARD4(LOAD4) \
    { \
        v4d t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0}; \
        for (; r - 4 >= i; r -= 4) { \
            v4d u; \
            memcpy(&u, buf + r - 4, sizeof u); \
            t0 += LOAD4(x0 + r - 4) * u; \
            t1 += LOAD4(x1 + r - 4) * u; \
            t2 += LOAD4(x2 + r - 4) * u; \
            t3 += LOAD4(x3 + r - 4) * u; \
        } \
        d0 = (t0[0] + t0[1]) + (t0[2] + t0[3]); \
        d1 = (t1[0] + t1[1]) + (t1[2] + t1[3]); \
        d2 = (t2[0] + t2[1]) + (t2[2] + t2[3]); \
        d3 = (t3[0] + t3[1]) + (t3[2] + t3[3]); \
    }
#define EMN_SUPER_FORWARD1(LOAD4) \
    for (; r + 4 <= nrow; r += 4) { \
        v4d u; \
        memcpy(&u, buf + r, sizeof u); \
        u -= LOAD4(x + r) * b; \
        memcpy(buf + r, &u, sizeof u); \
    }
#define EMN_SUPER_BACKWARD1(LOAD4) \
    { \
        v4d t0 = {0}, t1 = {0}; \
        for (; r - 8 >= i; r -= 8) { \
            v4d u0, u1; \
            memcpy(&u0, buf + r - 4, sizeof u0); \
            memcpy(&u1, buf + r - 8, sizeof u1); \
            t0 += LOAD4(x + r - 4) * u0; \
            t1 += LOAD4(x + r - 8) * u1; \
        } \
        t0 += t1; \
        d = (t0[0] + t0[1]) + (t0[2] + t0[3]); \
    }
#else
#define EMN_SUPER_FORWARD4(LOAD4)
#define EMN_SUPER_BACKWARD4(LOAD4)
#define EMN_SUPER_FORWARD1(LOAD4)
#define EMN_SUPER_BACKWARD1(LOAD4)
#endif

/* Solves with a supernodal L L' (in pat's supernodal layout): each
 * supernode's rows are gathered into buf, worked on as a dense block
 * (its columns contiguous) and put back.  Forward, L y = y over
 * supernodes [s0, s1): rows past lim are not y's to write (the top, in a
 * half) and go to top[row - lim] as updates.  Backward, L' x = y over the
 * same, from the last: the rows below a supernode are final by then. */
EMN_SUPER_PASSES(double, X, EMN_LOAD4_double, forward_double, backward_double)
EMN_SUPER_PASSES(float, Xf, EMN_LOAD4_float, forward_single, backward_single)

static void super_forward(const super_solve *S, int s0, int s1, int lim, double *top, double *buf)
{
    if (S->Xf) forward_single(S, s0, s1, lim, top, buf);
    else forward_double(S, s0, s1, lim, top, buf);
}

static void super_backward(const super_solve *S, int s0, int s1, double *buf)
{
    if (S->Xf) backward_single(S, s0, s1, buf);
    else backward_double(S, s0, s1, buf);
}

static void super_forward_half(void *arg, int h)
{
    const super_solve *S = arg;
    const ldl_pattern *pat = S->pat;
    int ntop = pat->n - pat->t0;
    double *top = S->topbuf + (size_t)h * ntop;
    memset(top, 0, (size_t)ntop * sizeof *top);
    double *buf = S->sbuf + (size_t)h * ((size_t)pat->maxrow + 1);
    super_forward(S, h ? pat->s_n0 : 0, h ? pat->s_t0 : pat->s_n0, pat->t0, top, buf);
}

static void super_backward_half(void *arg, int h)
{
    const super_solve *S = arg;
    const ldl_pattern *pat = S->pat;
    double *buf = S->sbuf + (size_t)h * ((size_t)pat->maxrow + 1);
    super_backward(S, h ? pat->s_n0 : 0, h ? pat->s_t0 : pat->s_n0, buf);
}

/* y = (L L')^-1 y, in halves where the supernodes keep to them: the
 * halves' forward passes side by side, their updates of the top added in
 * a fixed order, the top forward and backward, the halves' backward
 * passes side by side. */
static void super_solve_in(const ldl_pattern *pat, const emn_lu *o, const double *X, const float *Xf, double *y)
{
    int ns = pat->ns, n = pat->n, t0 = pat->t0;
    super_solve S = {pat, X, Xf, y, o->topbuf, o->sbuf};
    if (pat->s_t0 > 0) {
        emn_par_two(super_forward_half, &S);
        const double *top0 = o->topbuf, *top1 = o->topbuf + (n - t0);
        for (int i = 0; i < n - t0; i++) y[t0 + i] = (y[t0 + i] + top0[i]) + top1[i];
        super_forward(&S, pat->s_t0, ns, n, NULL, o->sbuf);
        super_backward(&S, pat->s_t0, ns, o->sbuf);
        emn_par_two(super_backward_half, &S);
    } else {
        super_forward(&S, 0, ns, n, NULL, o->sbuf);
        super_backward(&S, 0, ns, o->sbuf);
    }
}

/* One solve of b with a row-by-row L (solve_rows): y is the pattern's
 * fy. */
typedef struct rows_solve {
    const ldl_pattern *pat;
    const emn_lu *lu;
    double *y, *b;
} rows_solve;

/* Half h of the forward pass: its rows of P b gathered, its part of the
 * top's updates (past n in fy) cleared, then its columns, flat or one by
 * one.  Without halves, half 0 is all of it. */
static void rows_forward_half(void *arg, int h)
{
    const rows_solve *S = arg;
    const ldl_pattern *pat = S->pat;
    const int *fr = pat->fr, *fc = pat->fc, *P = pat->perm;
    const double *Lx = S->lu->Lx, *b = S->b;
    double *y = S->y;
    int c[3], ntop = pat->t0 > 0 ? pat->n - pat->t0 : 0;
    double *top = ntop > 0 ? y + pat->n + (size_t)h * ntop : NULL;
    rows_halves(pat, c);
    for (int k = c[h]; k < c[h + 1]; k++) y[k] = b[P[k]];
    if (top) memset(top, 0, (size_t)ntop * sizeof *y);
    if (fr)
        for (int p = pat->Lp[c[h]], end = pat->Lp[c[h + 1]]; p < end; p++) y[fr[p]] -= Lx[p] * y[fc[p]];
    else
        forward_cols(pat, Lx, y, c[h], c[h + 1], top);
}

/* Half h of the backward pass, then its rows of x scattered back to b. */
static void rows_backward_half(void *arg, int h)
{
    const rows_solve *S = arg;
    const ldl_pattern *pat = S->pat;
    const int *P = pat->perm;
    double *y = S->y, *b = S->b;
    int c[3];
    rows_halves(pat, c);
    backward_cols(pat, S->lu->Lx, S->lu->dinv, y, c[h], c[h + 1]);
    for (int k = c[h]; k < c[h + 1]; k++) b[P[k]] = y[k];
}

/* solve_ldl's solve with a row-by-row L: each pass in its halves side by
 * side (par.h), and the top in between; the top's updates from the two
 * halves are added in a fixed order, so the result is the same on one
 * core or two.  Each half gathers its rows of P b and scatters its rows
 * of x itself. */
static void solve_rows(emn_lu *lu, double *b)
{
    const emn_lu *o = lu->share ? lu->share : lu;
    const ldl_pattern *pat = o->pat;
    const int *P = pat->perm;
    int n = lu->n, t0 = pat->t0;
    double *y = pat->fy;
    rows_solve S = {pat, lu, y, b};
    if (pat->fr) lu->stats.flat++;
    if (t0 > 0) {
        lu->stats.halves++;
        emn_par_two(rows_forward_half, &S);
        const double *top0 = y + n, *top1 = y + n + (n - t0);
        for (int i = 0; i < n - t0; i++) y[t0 + i] = (b[P[t0 + i]] + top0[i]) + top1[i];
        forward_cols(pat, lu->Lx, y, t0, n, NULL);
        backward_cols(pat, lu->Lx, lu->dinv, y, t0, n);
        for (int k = t0; k < n; k++) b[P[k]] = y[k];
        emn_par_two(rows_backward_half, &S);
    } else {
        rows_forward_half(&S, 0);
        rows_backward_half(&S, 0);
    }
}

/* b = A^-1 b from P A P' = L D L' (L unit lower triangular, D on its
 * diagonal): L y = P b, then L' (P x) = D^-1 y. */
static void solve_ldl(emn_lu *lu, double *b)
{
    const emn_lu *o = lu->share ? lu->share : lu;
    const ldl_pattern *pat = o->pat;
    if (!pat->ns) {
        solve_rows(lu, b);
        return;
    }
    const int *P = pat->perm;
    double *y = o->work;
    int n = lu->n;
    for (int k = 0; k < n; k++) y[k] = b[P[k]];
    if (pat->s_t0 > 0) lu->stats.halves++;
    super_solve_in(pat, o, lu->single ? NULL : lu->Lx, lu->single ? lu->Lf : NULL, y);
    for (int k = 0; k < n; k++) b[P[k]] = y[k];
}

/* ------------------------------------------------------ pieces, tiny */

static int uf_root(int *up, int i)
{
    while (up[i] != i) {
        up[i] = up[up[i]];      /* path halving */
        i = up[i];
    }
    return i;
}

/* A's connected pieces (the coordinates its entries join): up[j] is the
 * first coordinate of j's piece.  NULL as soon as a piece has more than
 * limit coordinates. */
static int *pieces(const emn_sparse *A, int limit)
{
    int n = A->n;
    int *up = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    int *size = limit < n ? emn_xmalloc(((size_t)n + 1) * sizeof(int)) : NULL;
    for (int j = 0; j < n; j++) up[j] = j;
    if (size) for (int j = 0; j < n; j++) size[j] = 1;
    for (int j = 0; j < n; j++)
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++) {
            int a = uf_root(up, A->Ai[p]), b = uf_root(up, j);
            if (a == b) continue;
            int lo = a < b ? a : b, hi = a < b ? b : a;
            up[hi] = lo;        /* so a piece's root is its first coordinate */
            if (size && (size[lo] += size[hi]) > limit) {
                free(size);
                free(up);
                return NULL;
            }
        }
    free(size);
    /* up[j] <= j throughout: in increasing j, up[up[j]] is a root already */
    for (int j = 0; j < n; j++) up[j] = up[up[j]];
    return up;
}

/* A matrix none of whose pieces has more than this many coordinates is
 * factored piece by piece, each a dense block, with partial pivoting at
 * every factorization: an array of separate cells once its driving
 * sources are taken out (a MEMS array's 2 x 2 cells, loudspeakers on one
 * ideal amplifier), or a small circuit.  On such blocks KLU's bookkeeping per
 * column is most of the work: mems-1e3's factorizations with their
 * growth and condition tests took 346M instructions through KLU and
 * 128M as dense blocks, its solves 130M and 51M, and the whole run
 * 1972M and 1675M. */
#define EMN_LU_TINY 8

/* From this many coordinates on, the blocks are factored and solved in
 * two halves (par.h).  Below it the handoff costs what the half saves:
 * a MEMS array of 10^3 cells' linear twin ran 4 us a step slower in
 * halves. */
#define EMN_LU_TINY_HALVES 5000

/* The owner's dense blocks for A's pattern; false, and nothing made, if
 * a piece is larger than EMN_LU_TINY.  The blocks come in the order of
 * their first coordinates, and a block's coordinates in increasing
 * order. */
static bool plan_tiny(emn_lu *o, const emn_sparse *A)
{
    int n = A->n;
    int *up = pieces(A, EMN_LU_TINY);
    if (!up) return false;
    int *blk = emn_xcalloc((size_t)n + 1, sizeof(int)), *loc = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    for (int j = 0; j < n; j++) blk[up[j]]++;        /* each root: its piece's size */
    int nb = 0;
    for (int j = 0; j < n; j++) nb += up[j] == j;
    int *ptr = emn_xmalloc(((size_t)nb + 1) * sizeof(int)), *off = emn_xmalloc(((size_t)nb + 1) * sizeof(int));
    ptr[0] = off[0] = 0;
    for (int j = 0, b = 0; j < n; j++) {
        if (up[j] != j) continue;
        int m = blk[j];
        ptr[b + 1] = ptr[b] + m;
        off[b + 1] = off[b] + m * m;
        blk[j] = b++;
    }
    int *col = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *next = emn_xmalloc(((size_t)nb + 1) * sizeof(int));
    memcpy(next, ptr, (size_t)nb * sizeof(int));
    for (int j = 0; j < n; j++) {
        int b = blk[up[j]];
        loc[j] = next[b] - ptr[b];
        col[next[b]++] = j;
    }
    int *src = emn_xmalloc(((size_t)off[nb] + 1) * sizeof(int));
    for (int q = 0; q < off[nb]; q++) src[q] = -1;
    for (int j = 0; j < n; j++) {
        int b = blk[up[j]], m = ptr[b + 1] - ptr[b];
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++) src[off[b] + loc[A->Ai[p]] + m * loc[j]] = p;
    }
    /* halves of about equal dense entries */
    int mid = nb;
    if (n >= EMN_LU_TINY_HALVES)
        for (mid = 0; mid < nb && 2 * off[mid] < off[nb];) mid++;
    o->tiny_nb = nb;
    o->tiny_mid = mid;
    o->tiny_ptr = ptr;
    o->tiny_off = off;
    o->tiny_col = col;
    o->tiny_src = src;
    o->tiny_id++;
    free(next);
    free(loc);
    free(blk);
    free(up);
    return true;
}

typedef struct tiny_job {
    emn_lu *lu;
    const emn_lu *o;
    const double *Ax;       /* factor: A's values */
    double *b;              /* solve: right side, then solution */
    int bad[2];             /* per half: the column of its first zero pivot, or -1 */
    long changed[2];        /* pivots other than the last factorization's */
    long offdiag[2];
    double umin[2], umax[2];        /* of |U's diagonal| */
} tiny_job;

static void tiny_range(const emn_lu *o, int h, int *b0, int *b1)
{
    *b0 = h ? o->tiny_mid : 0;
    *b1 = h ? o->tiny_nb : o->tiny_mid;
}

/* P B = L U of each block B of half h, in place (L's unit diagonal
 * implied), rows swapped whole as they are chosen: the largest entry of
 * the column at or below the diagonal is the pivot.  Blocks of one and
 * two coordinates, an array's usual cells, are written out. */
static void tiny_factor_half(void *arg, int h)
{
    tiny_job *J = arg;
    const emn_lu *o = J->o;
    const int *ptr = o->tiny_ptr, *col = o->tiny_col, *off = o->tiny_off, *src = o->tiny_src;
    const double *Ax = J->Ax;
    double *tx = J->lu->tx, umin = INFINITY, umax = 0;
    int *piv = J->lu->tpiv, bad = -1, b0, b1;
    long changed = 0, offdiag = 0;
    tiny_range(o, h, &b0, &b1);
    for (int q = off[b0]; q < off[b1]; q++) tx[q] = src[q] >= 0 ? Ax[src[q]] : 0;
    for (int b = b0; b < b1; b++) {
        int c0 = ptr[b], m = ptr[b + 1] - c0, *pv = piv + c0;
        double *a = tx + off[b];
        /* a 1 x 1 block's pivot is its entry, and a 2 x 2 block's second
         * its only one left: pv holds them from the start */
        if (m == 1) {
            double u = fabs(a[0]);
            if (a[0] == 0) {
                bad = col[c0];
                break;
            }
            umin = u < umin ? u : umin;
            umax = u > umax ? u : umax;
            continue;
        }
        if (m == 2) {
            /* a = (B00 B10 B01 B11) */
            int r = fabs(a[1]) > fabs(a[0]);
            double d = r ? a[1] : a[0], e = r ? a[0] : a[1], f = r ? a[3] : a[2], g = r ? a[2] : a[3];
            if (d == 0) {
                bad = col[c0];
                break;
            }
            double l = e / d, u = g - l * f;
            if (u == 0) {
                bad = col[c0 + 1];
                break;
            }
            changed += pv[0] != r;
            offdiag += r;
            pv[0] = r;
            a[0] = d, a[1] = l, a[2] = f, a[3] = u;
            double ud = fabs(d), uu = fabs(u), lo = ud < uu ? ud : uu, hi = ud < uu ? uu : ud;
            umin = lo < umin ? lo : umin;
            umax = hi > umax ? hi : umax;
            continue;
        }
        for (int k = 0; k < m && bad < 0; k++) {
            double *ak = a + m * k;
            int r = k;
            for (int i = k + 1; i < m; i++)
                if (fabs(ak[i]) > fabs(ak[r])) r = i;
            if (ak[r] == 0) {
                bad = col[c0 + k];
                break;
            }
            changed += pv[k] != r;
            offdiag += r != k;
            pv[k] = r;
            if (r != k)
                for (int j = 0; j < m; j++) {
                    double t = a[k + m * j];
                    a[k + m * j] = a[r + m * j];
                    a[r + m * j] = t;
                }
            double d = ak[k], u = fabs(d);
            umin = u < umin ? u : umin;
            umax = u > umax ? u : umax;
            for (int i = k + 1; i < m; i++) ak[i] /= d;
            for (int j = k + 1; j < m; j++) {
                double *aj = a + m * j, s = aj[k];
                if (s != 0)
                    for (int i = k + 1; i < m; i++) aj[i] -= ak[i] * s;
            }
        }
        if (bad >= 0) break;
    }
    J->bad[h] = bad;
    J->changed[h] = changed;
    J->offdiag[h] = offdiag;
    J->umin[h] = umin;
    J->umax[h] = umax;
}

static void tiny_solve_half(void *arg, int h)
{
    tiny_job *J = arg;
    const emn_lu *o = J->o;
    const int *ptr = o->tiny_ptr, *col = o->tiny_col, *off = o->tiny_off, *piv = J->lu->tpiv;
    const double *tx = J->lu->tx;
    double *x = J->b, y[EMN_LU_TINY];
    int b0, b1;
    tiny_range(o, h, &b0, &b1);
    for (int b = b0; b < b1; b++) {
        int c0 = ptr[b], m = ptr[b + 1] - c0;
        const double *a = tx + off[b];
        const int *cb = col + c0, *pb = piv + c0;
        if (m == 1) {
            x[cb[0]] /= a[0];
            continue;
        }
        if (m == 2) {
            double y0 = x[cb[0]], y1 = x[cb[1]];
            if (pb[0]) {
                double t = y0;
                y0 = y1, y1 = t;
            }
            y1 = (y1 - a[1] * y0) / a[3];
            x[cb[0]] = (y0 - a[2] * y1) / a[0];
            x[cb[1]] = y1;
            continue;
        }
        for (int k = 0; k < m; k++) y[k] = x[cb[k]];
        for (int k = 0; k < m; k++) {
            double t = y[pb[k]];
            y[pb[k]] = y[k];
            y[k] = t;
        }
        for (int k = 0; k < m; k++) {
            const double *ak = a + m * k;
            for (int i = k + 1; i < m; i++) y[i] -= ak[i] * y[k];
        }
        for (int k = m - 1; k >= 0; k--) {
            const double *ak = a + m * k;
            double t = y[k] /= ak[k];
            for (int i = 0; i < k; i++) y[i] -= ak[i] * t;
        }
        for (int k = 0; k < m; k++) x[cb[k]] = y[k];
    }
}

static void tiny_halves(const emn_lu *o, emn_par_fn fn, tiny_job *J)
{
    if (o->tiny_mid < o->tiny_nb) {
        emn_par_two(fn, J);
    } else {
        fn(J, 0);
        J->bad[1] = -1;
        J->changed[1] = J->offdiag[1] = 0;
        J->umin[1] = INFINITY;
        J->umax[1] = 0;
    }
}

/* Factor A as its owner's dense blocks.  Counted as a factorization with
 * pivoting when a pivot differs from the last one's (the first one's:
 * from the diagonal), else as a refactorization, as KLU's and L D L'
 * ones that keep their order are. */
static int factor_tiny(emn_lu *lu, const emn_lu *o, const emn_sparse *A, int *bad_col)
{
    if (!lu->tx || lu->tx_id != o->tiny_id) {
        free(lu->tx);
        free(lu->tpiv);
        lu->tx_len = (size_t)o->tiny_off[o->tiny_nb];
        lu->tx = emn_xmalloc((lu->tx_len + 1) * sizeof *lu->tx);
        lu->tpiv = emn_xmalloc(((size_t)o->n + 1) * sizeof *lu->tpiv);
        /* the order a factorization is compared with: the diagonal */
        for (int b = 0; b < o->tiny_nb; b++)
            for (int k = o->tiny_ptr[b]; k < o->tiny_ptr[b + 1]; k++) lu->tpiv[k] = k - o->tiny_ptr[b];
        lu->tx_id = o->tiny_id;
    }
    tiny_job J = {.lu = lu, .o = o, .Ax = A->Ax};
    tiny_halves(o, tiny_factor_half, &J);
    lu->valid = lu->use_tiny = false;
    if (J.changed[0] + J.changed[1]) {
        lu->stats.factors++;
        lu->stats.offdiag = J.offdiag[0] + J.offdiag[1];
    } else {
        lu->stats.refactors++;
    }
    int bad = J.bad[0] >= 0 ? J.bad[0] : J.bad[1];
    if (bad >= 0) {
        if (bad_col) *bad_col = bad;
        lu->rcond = 0;
        return -1;
    }
    /* KLU's estimate: the smallest of U's diagonal over the largest */
    double umin = fmin(J.umin[0], J.umin[1]), umax = fmax(J.umax[0], J.umax[1]);
    lu->rcond = isfinite(umax) && umax > 0 ? umin / umax : 0;
    lu->stats.tiny++;
    lu->valid = lu->use_tiny = true;
    return 0;
}

static void solve_tiny(emn_lu *lu, const emn_lu *o, double *b)
{
    tiny_job J = {.lu = lu, .o = o, .b = b};
    tiny_halves(o, tiny_solve_half, &J);
}

static void drop_tiny(emn_lu *lu)
{
    free(lu->tiny_ptr);
    free(lu->tiny_off);
    free(lu->tiny_col);
    free(lu->tiny_src);
    free(lu->tx);
    free(lu->tpiv);
    lu->tiny_ptr = lu->tiny_off = lu->tiny_col = lu->tiny_src = lu->tpiv = NULL;
    lu->tx = NULL;
    lu->tx_len = 0;
    lu->tiny_nb = lu->tiny_mid = 0;
    lu->use_tiny = false;
}

/* ----------------------------------------------------------- parts */

/* Below this many entries a KLU factorization and solve take too little
 * time to share out: a MEMS array of 10^3 cells (4000 entries) took
 * 1.81 and 1.84e-4 s per step in two groups against 1.57 to 1.64e-4
 * whole; of 10^4 cells (40000), 1.13 to 1.23e-3 against 1.28 to 1.39e-3. */
#define EMN_LU_PARTS_MIN 20000

/* A's connected pieces (the coordinates its entries join) shared out
 * into two groups of nearly equal entries, the largest piece first, each
 * to the lighter group; false, and nothing made, unless A is many small
 * pieces (none over a tenth of the entries: entries are a poor measure
 * of a piece's fill, and an operating point's matrix is one large piece
 * beside thousands of single entries) that share out within 60/40. */
static bool plan_parts(emn_lu *o, const emn_sparse *A)
{
    int n = A->n;
    int *up = pieces(A, n);
    /* each piece's entries, at its root; the roots by weight, heaviest
     * first (subtree reused: w the weight, root the coordinate) */
    double *w = emn_xcalloc((size_t)n, sizeof(double));
    for (int j = 0; j < n; j++) w[up[j]] += A->Ap[j + 1] - A->Ap[j];
    int nr = 0;
    for (int j = 0; j < n; j++) nr += up[j] == j;
    subtree *piece = emn_xmalloc((size_t)nr * sizeof *piece);
    nr = 0;
    for (int j = 0; j < n; j++)
        if (up[j] == j) piece[nr++] = (subtree){w[j], j};
    qsort(piece, (size_t)nr, sizeof *piece, heavier_first);
    /* grp: each root's group, then (a root is its piece's first
     * coordinate: union keeps the smaller) every coordinate's */
    int *grp = emn_xmalloc((size_t)n * sizeof(int));
    double bin[2] = {0, 0};
    for (int r = 0; r < nr; r++) {
        int h = bin[1] < bin[0];
        bin[h] += piece[r].w;
        grp[piece[r].root] = h;
    }
    for (int j = 0; j < n; j++) grp[j] = grp[up[j]];
    bool ok = nr > 1 && piece[0].w <= 0.1 * (bin[0] + bin[1]) && fmax(bin[0], bin[1]) <= 0.6 * (bin[0] + bin[1]);
    if (ok) {
        int *pos = emn_xmalloc((size_t)n * sizeof(int));
        o->ngrp[0] = o->ngrp[1] = 0;
        for (int j = 0; j < n; j++) pos[j] = o->ngrp[grp[j]]++;
        for (int h = 0; h < 2; h++) {
            int m = o->ngrp[h], nz = 0;
            o->idx[h] = emn_xmalloc(((size_t)m + 1) * sizeof(int));
            int *Bp = emn_xmalloc(((size_t)m + 1) * sizeof(int));
            for (int j = 0; j < n; j++)
                if (grp[j] == h) nz += A->Ap[j + 1] - A->Ap[j];
            int *Bi = emn_xmalloc(((size_t)nz + 1) * sizeof(int));
            o->from[h] = emn_xmalloc(((size_t)nz + 1) * sizeof(int));
            int k = 0, c = 0;
            Bp[0] = 0;
            for (int j = 0; j < n; j++) {
                if (grp[j] != h) continue;
                o->idx[h][c] = j;
                for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++) {
                    Bi[k] = pos[A->Ai[p]];      /* same group: a piece is whole */
                    o->from[h][k++] = p;
                }
                Bp[++c] = k;
            }
            emn_sparse_init(&o->sub[h], m);
            emn_sparse_adopt(&o->sub[h], Bp, Bi);
            o->part[h] = emn_lu_new();
            o->part[h]->is_part = o->part[h]->ldl_failed = true;
        }
        o->pbuf = emn_xmalloc(((size_t)n + 1) * sizeof(double));
        o->parts_id++;
        free(pos);
    }
    free(grp);
    free(piece);
    free(w);
    free(up);
    return ok;
}

typedef struct parts_job {
    emn_lu *lu;
    emn_lu *o;
    const emn_sparse *A;
    double *b;
    int rc[2], bad[2];
} parts_job;

static void factor_part(void *arg, int h)
{
    parts_job *J = arg;
    emn_sparse *B = &J->o->sub[h];
    const int *from = J->o->from[h];
    const double *Ax = J->A->Ax;
    for (int k = 0; k < B->nnz; k++) B->Ax[k] = Ax[from[k]];
    J->rc[h] = emn_lu_factor(J->lu->part[h], B, &J->bad[h]);
}

static void solve_part(void *arg, int h)
{
    parts_job *J = arg;
    const int *idx = J->o->idx[h];
    int m = J->o->ngrp[h];
    double *y = J->o->pbuf + (h ? J->o->ngrp[0] : 0), *b = J->b;
    for (int k = 0; k < m; k++) y[k] = b[idx[k]];
    J->rc[h] = emn_lu_solve(J->lu->part[h], y);
    for (int k = 0; k < m; k++) b[idx[k]] = y[k];
}

/* Factor A as its owner's two groups.  Counted as one factorization:
 * with pivoting if either part chose a new pivot order. */
static int factor_parts(emn_lu *lu, emn_lu *o, const emn_sparse *A, int *bad_col)
{
    if (lu != o && (!lu->part[0] || lu->parts_id != o->parts_id)) {
        drop_parts(lu);
        for (int h = 0; h < 2; h++) {
            lu->part[h] = emn_lu_new_sharing(o->part[h]);
            lu->part[h]->is_part = lu->part[h]->ldl_failed = true;
        }
        lu->parts_id = o->parts_id;
    }
    emn_lu_stats before[2] = {lu->part[0]->stats, lu->part[1]->stats};
    parts_job J = {lu, o, A, NULL, {0, 0}, {-1, -1}};
    if (lu->parts_ready) {
        emn_par_two(factor_part, &J);
    } else {
        factor_part(&J, 0);
        factor_part(&J, 1);
    }
    lu->valid = lu->use_parts = false;
    long full = 0, offdiag = 0;
    for (int h = 0; h < 2; h++) {
        full += lu->part[h]->stats.factors - before[h].factors;
        offdiag += lu->part[h]->stats.offdiag;
    }
    if (full) {
        lu->stats.factors++;
        lu->stats.offdiag = offdiag;
    } else {
        lu->stats.refactors++;
    }
    for (int h = 0; h < 2; h++)
        if (J.rc[h] < 0) {
            if (bad_col) *bad_col = J.bad[h] >= 0 ? o->idx[h][J.bad[h]] : -1;
            lu->rcond = 0;
            return -1;
        }
    lu->parts_ready = true;
    lu->stats.parts++;
    lu->rcond = fmin(emn_lu_rcond(lu->part[0]), emn_lu_rcond(lu->part[1]));
    lu->valid = lu->use_parts = true;
    return 0;
}

static int solve_parts(emn_lu *lu, double *b)
{
    emn_lu *o = lu->share ? lu->share : lu;
    parts_job J = {lu, o, NULL, b, {0, 0}, {-1, -1}};
    emn_par_two(solve_part, &J);
    return J.rc[0] < 0 || J.rc[1] < 0 ? -1 : 0;
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
     * (a cache by step size) asks only for new ones; nor does a part,
     * whose whole matrix's LU has already compared them, nor one whose
     * matrices all differ */
    size_t bytes = (size_t)A->nnz * sizeof *A->Ax;
    if (!lu->share && !lu->is_part && !lu->borrow && !lu->changing) {
        if (lu->valid && memcmp(lu->Ax, A->Ax, bytes) == 0) return 0;
        if (lu->valid && !lu->use_ldl && !lu->use_parts && !lu->use_tiny && lu->rgrowth_full < 0) {  /* from the values it was factored with */
            klu_rgrowth(lu->Ap, lu->Ai, lu->Ax, lu->sym, lu->num, &lu->common);
            lu->rgrowth_full = lu->common.rgrowth;
        }
        memcpy(lu->Ax, A->Ax, bytes);
    }
    emn_lu *o = lu->share ? lu->share : lu;
    if (o->tiny_nb) return factor_tiny(lu, o, A, bad_col);
    lu->use_parts = false;
    if (!lu->ldl_failed && maybe_spd(lu, A)) {
        if (factor_ldl(lu, A) == 0) return 0;
        lu->ldl_failed = true;
    }
    if (lu->use_ldl) lu->use_ldl = lu->valid = false;      /* KLU from scratch */
    if (!o->parts_tried && !o->is_part && A->nnz >= EMN_LU_PARTS_MIN && emn_par_threads() > 1) {
        o->parts_tried = true;
        plan_parts(o, A);
    }
    if (o->part[0]) return factor_parts(lu, o, A, bad_col);

    klu_plan(lu);
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
    if (lu->use_parts) return solve_parts(lu, b);
    if (lu->use_tiny) {
        /* as for L D L' below */
        const emn_lu *o = lu->share ? lu->share : lu;
        if (!o->tiny_nb || lu->tx_id != o->tiny_id) return -1;
        solve_tiny(lu, o, b);
        return 0;
    }
    if (lu->use_ldl) {
        /* an analysis replaced since (the owner met a new pattern) leaves
         * these values laid out for another L */
        const emn_lu *o = lu->share ? lu->share : lu;
        if (!o->pat || (lu != o && lu->pat_id != o->pat_id)) return -1;
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
    const emn_lu *o = lu->share ? lu->share : lu;
    if (lu->Lx && o->pat) b += lx_size(o->pat) * sizeof(double);      /* L */
    if (lu->Lf && o->pat) b += lx_size(o->pat) * sizeof(float);
    if (lu == o && o->pat && o->pat->xd) b += lx_size(o->pat) * sizeof(double);   /* the workspace */
    if (lu->dinv && o->pat) b += (size_t)o->pat->n * sizeof(double);  /* 1/D */
    for (int h = 0; h < 2; h++)
        if (lu->part[h]) b += emn_lu_bytes(lu->part[h]);
    if (lu->tx) b += lu->tx_len * sizeof(double) + (size_t)lu->n * sizeof(int);
    return b;
}

void emn_lu_borrow(emn_lu *lu)
{
    assert(lu->n < 0 && !lu->share);
    lu->borrow = true;
}

void emn_lu_values_change(emn_lu *lu)
{
    lu->changing = true;
}

void emn_lu_keep_pattern(emn_lu *lu)
{
    assert(!lu->share && !lu->is_part);
    if (lu->borrow && lu->an_id) {
        size_t np = (size_t)lu->n + 1, nz = (size_t)(lu->nnz ? lu->nnz : 1);
        int *Ap = emn_xmalloc(np * sizeof *Ap), *Ai = emn_xmalloc(nz * sizeof *Ai);
        memcpy(Ap, lu->Ap, np * sizeof *Ap);
        memcpy(Ai, lu->Ai, (size_t)lu->nnz * sizeof *Ai);
        lu->Ap = Ap;
        lu->Ai = Ai;
        lu->Ax = emn_xrealloc(lu->Ax, nz * sizeof *lu->Ax);
        lu->valid = false;      /* its values were not kept */
    }
    lu->borrow = false;
    memset(&lu->stats, 0, sizeof lu->stats);
}

void emn_lu_allow_single(emn_lu *lu, double maxerr)
{
    lu->single_err = maxerr;
}

bool emn_lu_single(const emn_lu *lu)
{
    return lu->valid && lu->use_ldl && lu->single;
}

void emn_lu_set_super_flops(emn_lu *lu, double flops)
{
    lu->super_flops = flops;
}

const emn_lu_stats *emn_lu_get_stats(const emn_lu *lu)
{
    return &lu->stats;
}

void emn_lu_hint_order(emn_lu *lu, const int *hint, double lnz)
{
    lu->hint = hint;
    lu->hint_lnz = lnz;
}

double emn_lu_planned_entries(const emn_lu *lu)
{
    const emn_lu *o = lu->share ? lu->share : lu;
    return o->pat ? (double)o->pat->Lp[o->pat->n] + o->pat->n : 0;
}

const int *emn_lu_order(const emn_lu *lu)
{
    const emn_lu *o = lu->share ? lu->share : lu;
    return o->pat ? o->pat->perm : NULL;
}

void emn_lu_free(emn_lu **plu)
{
    if (!plu || !*plu) return;
    emn_lu *lu = *plu;
    drop_parts(lu);
    drop_tiny(lu);
    klu_free_numeric(&lu->num, &lu->common);
    drop_symbolic(lu);
    drop_ldl(lu);
    if (lu->cc) cholmod_finish(lu->cc);
    free(lu->cc);
    if (!lu->borrow) {
        free(lu->Ap);
        free(lu->Ai);
    }
    free(lu->Ax);
    free(lu);
    *plu = NULL;
}

/* Sweeps of rotations, each zeroing every off-diagonal entry in turn,
 * until the off-diagonal part is at rounding of the whole. */
void emn_sym_eigen(double *a, int m, double *d, double *v)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++) v[i * m + j] = i == j;
    for (int sweep = 0; sweep < 64; sweep++) {
        double off = 0, all = 0;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < m; j++) {
                all += a[i * m + j] * a[i * m + j];
                if (i != j) off += a[i * m + j] * a[i * m + j];
            }
        if (off <= DBL_EPSILON * DBL_EPSILON * all) break;
        for (int p = 0; p < m; p++)
            for (int q = p + 1; q < m; q++) {
                double apq = a[p * m + q];
                if (apq == 0) continue;
                double th = (a[q * m + q] - a[p * m + p]) / (2 * apq);
                double t = (th >= 0 ? 1 : -1) / (fabs(th) + sqrt(th * th + 1));
                double c = 1 / sqrt(t * t + 1), sn = t * c;
                for (int k = 0; k < m; k++) {       /* columns p, q */
                    double x = a[k * m + p], y = a[k * m + q];
                    a[k * m + p] = c * x - sn * y;
                    a[k * m + q] = sn * x + c * y;
                }
                for (int k = 0; k < m; k++) {       /* rows p, q */
                    double x = a[p * m + k], y = a[q * m + k];
                    a[p * m + k] = c * x - sn * y;
                    a[q * m + k] = sn * x + c * y;
                }
                for (int k = 0; k < m; k++) {       /* vectors p, q */
                    double x = v[p * m + k], y = v[q * m + k];
                    v[p * m + k] = c * x - sn * y;
                    v[q * m + k] = sn * x + c * y;
                }
            }
    }
    for (int i = 0; i < m; i++) d[i] = a[i * m + i];
}
