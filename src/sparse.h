/*
 * sparse.h: compressed-column sparse matrices with a pattern fixed once,
 * and the KLU wrapper that factors them.
 *
 * Assembly follows the rule "pattern once, values many times": a caller
 * declares every (row, col) entry it will ever write with
 * emn_sparse_reserve(), which returns a handle; emn_sparse_finalize() builds
 * the CSC pattern (duplicates merged) and turns each handle into a slot, an
 * index into Ax.  In the Newton loop the caller only zeroes Ax and adds into
 * Ax[slot].
 *
 * emn_lu follows KLU's own split: klu_analyze once per pattern, klu_factor
 * the first time, klu_refactor afterwards (same pivots), and a fresh
 * klu_factor when the reciprocal pivot growth / condition estimate says the
 * old pivot order has gone bad.  Two other factorizations take its place
 * where they fit (sparse.c): L D L' for a symmetric positive definite
 * matrix, and dense blocks with partial pivoting for one whose pieces
 * (coordinates no entry joins to the rest) are all tiny.
 */
#ifndef EMN_SPARSE_H
#define EMN_SPARSE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct emn_sparse {
    int n;                  /* square: n x n */
    int nnz;
    int *Ap;                /* n+1 column pointers */
    int *Ai;                /* nnz row indices, sorted within each column */
    double *Ax;             /* nnz values */
    /* construction */
    struct { int *v; int n, cap; } ti, tj;      /* reserved entries */
    int *slot;              /* handle -> index into Ax, after finalize */
} emn_sparse;

void emn_sparse_init(emn_sparse *A, int n);
/* Declare entry (i, j); returns a handle (0, 1, 2, ...). */
int emn_sparse_reserve(emn_sparse *A, int i, int j);
/* Build the pattern.  Every row and column gets a diagonal entry so that
 * the pattern is structurally usable even where values are zero. */
void emn_sparse_finalize(emn_sparse *A);
/* Instead of reserve and finalize: take a pattern already built, Ap (n+1)
 * and Ai (Ap[n]) allocated with emn_xmalloc, rows strictly increasing in
 * each column and every diagonal present (what finalize would have made).
 * A then owns them; for patterns derived from another one, where sorting
 * millions of triplets would only rediscover the order they came in.
 * Ax is left unset (and its memory untouched until then): the caller
 * writes every value, or calls emn_sparse_zero, before any use.  A
 * Newton matrix is zeroed before each assembly anyway, and one an
 * analysis never assembles (the transient's, under -op) costs nothing. */
void emn_sparse_adopt(emn_sparse *A, int *Ap, int *Ai);
/* Slot of a handle, after finalize. */
static inline int emn_sparse_slot(const emn_sparse *A, int handle) { return A->slot[handle]; }
/* Slot of (i, j) by binary search, or -1 if not in the pattern. */
int emn_sparse_find(const emn_sparse *A, int i, int j);
void emn_sparse_zero(emn_sparse *A);
/* y = A x (y and x of length n, distinct). */
void emn_sparse_matvec(const emn_sparse *A, const double *x, double *y);
void emn_sparse_free(emn_sparse *A);

typedef struct emn_lu emn_lu;

typedef struct emn_lu_stats {
    long analyses;          /* klu_analyze calls */
    long factors;           /* klu_factor calls (full, with pivoting) */
    long refactors;         /* klu_refactor calls */
    long solves;
    long offdiag;           /* pivots off the diagonal in the last full factorization */
    long ldl;               /* L D L' factorizations tried (symmetric matrices) */
    long halves;            /* L D L' solves run in two halves (see sparse.c) */
    long flat;              /* L D L' solves with the flat forward pass (see sparse.c) */
    long super;             /* L D L' factorizations made supernodally (super_factor) */
    long super_halves;      /* of those, made in two halves side by side */
    long parts;             /* KLU factorizations made as two independent groups (sparse.c) */
    long tiny;              /* factorizations made as small dense blocks (sparse.c) */
    long hinted;            /* L D L' analyses made in the order hinted (emn_lu_hint_order) */
    long ordered;           /* L D L' analyses that ordered the pattern themselves (AMD's, at least) */
    long cut_by[2];         /* their halves cut from AMD's order [0], by METIS's separator [1] (sparse.c) */
    long single;            /* supernodal L L' factorizations kept in single precision */
} emn_lu_stats;

emn_lu *emn_lu_new(void);
/* An LU that takes its pattern's analysis (the fill-reducing ordering)
 * from owner instead of analyzing again: for matrices of one pattern with
 * different values, such as the Newton matrices of several step sizes.
 * owner must outlive it and keep that pattern while it is used.  It keeps
 * no copy of the values, so emn_lu_factor always factors them (the
 * other LUs skip a matrix equal to the one they hold).  The LUs that
 * share an analysis also share the solve's workspace: one solves at a
 * time. */
emn_lu *emn_lu_new_sharing(emn_lu *owner);
/*
 * Factor A (analyzing its pattern on first use).  Returns 0 on success, or
 * -1 if A is singular; then *bad_col (if non-NULL) is a column with a zero
 * pivot, in A's numbering.
 */
int emn_lu_factor(emn_lu *lu, const emn_sparse *A, int *bad_col);
/* Solve A x = b in place (b becomes x), with the last factorization. */
int emn_lu_solve(emn_lu *lu, double *b);
/* Reciprocal condition estimate of the last factorization (klu_rcond). */
double emn_lu_rcond(emn_lu *lu);
const emn_lu_stats *emn_lu_get_stats(const emn_lu *lu);
/* From how many multiply-adds on an L D L' factorization is made
 * supernodally (default: large ones only, EMN_LDL_SUPER_FLOPS in
 * sparse.c); set before the first factorization, on the LU that makes the
 * analysis.  For tests, which need the path at sizes that run in
 * milliseconds. */
void emn_lu_set_super_flops(emn_lu *lu, double flops);
/* On the LU that makes the analysis: its supernodal factorizations, and
 * those of the LUs that share its analysis, may be kept rounded to
 * single precision (0: never, the default): half the memory, and less to
 * stream through in each solve.  Each is kept so only if solves with it
 * come within maxerr of two known solutions of the matrix, 1 everywhere
 * and alternating signs (sparse.c, keep_super); the solves' arithmetic
 * stays in double.
 * For a caller whose solutions need to be good to maxerr only (a
 * transient step, to its error tolerance) and who tests each one's
 * residual, as a Newton iteration does. */
void emn_lu_allow_single(emn_lu *lu, double maxerr);
/* True if lu's valid factorization is kept in single precision. */
bool emn_lu_single(const emn_lu *lu);
/* Before its first factorization: lu keeps no copy of the matrices it
 * factors, only pointers to their pattern, which must then stay as they
 * are while lu uses them (an operating point's matrix, made once and
 * factored by one LU): it skips no matrix equal to the last, and saves
 * a copy of the pattern and values, which for an operating point's
 * matrix of 10^5 to 10^7 entries is memory first touched for nothing. */
void emn_lu_borrow(emn_lu *lu);
/* lu's matrices differ at every factorization (a nonlinear circuit's
 * Newton matrix, made at each step's state): it keeps no copy of the
 * values to find one equal to the last, a pass over them that found
 * none (and the copy, 5% of a MEMS array's transient at 10^4 devices). */
void emn_lu_values_change(emn_lu *lu);
/* An LU that borrows its pattern (emn_lu_borrow) takes a copy of the
 * pattern it was analyzed for, and from now on keeps the values it
 * factors, as one that never borrowed: it may outlive the matrix it
 * borrowed from and serve other matrices of that pattern (an operating
 * point's, handed to the transient).  Its counts start again. */
void emn_lu_keep_pattern(emn_lu *lu);
/* Before the first factorization, on the LU that makes the analysis: an
 * order of the columns (hint[k]: the k-th eliminated) that left lnz
 * entries in L (emn_lu_planned_entries; 0: not known) on the pattern it
 * was made for, which this one extends.  Where it leaves at most a tenth
 * more here it is taken with no ordering of this LU's own; otherwise it
 * is tried where nested dissection would be (a large L D L' that AMD's
 * order fills many times over) and kept if it leaves less fill than
 * AMD's.  An operating point's order of the same circuit spares the
 * transient a METIS run and an AMD one.  hint must stay as it is while
 * lu lives. */
void emn_lu_hint_order(emn_lu *lu, const int *hint, double lnz);
/* The order of lu's L D L' analysis (perm[k]: the k-th column
 * eliminated), or NULL if it has none (KLU's). */
const int *emn_lu_order(const emn_lu *lu);
/* The entries of L, diagonal included, that order leaves (0 without). */
double emn_lu_planned_entries(const emn_lu *lu);
/* Bytes KLU holds for this LU's factorization (and analysis, if its own). */
size_t emn_lu_bytes(const emn_lu *lu);
void emn_lu_free(emn_lu **lu);

/* The eigenvalues d[0 .. m) and orthonormal eigenvectors v (m each, one
 * after another, v + i m for d[i]) of the symmetric m x m matrix a
 * (row-major; destroyed), by cyclic Jacobi rotations: for small dense
 * blocks. */
void emn_sym_eigen(double *a, int m, double *d, double *v);

#endif
