/*
 * test_sparse.c: the CSC pattern builder and the KLU wrapper.
 *
 * Patterns are checked against a dense reference built independently from
 * the same reservations; solutions are checked by their residual, which
 * needs no trust in the solver; the singular case uses a matrix whose zero
 * column is known by construction.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "par.h"
#include "sparse.h"
#include "tap.h"
#include "util.h"

/* A small deterministic generator, so failures reproduce. */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state >> 11);
}
static double rnd_unit(void) { return (rnd() % 2000001) / 1e6 - 1.0; }

/* How far x is from y: the largest |x_i - y_i| over the largest |y_i|. */
static double apart(const double *x, const double *y, int n)
{
    double diff = 0, big = 0;
    for (int i = 0; i < n; i++) {
        diff = fmax(diff, fabs(x[i] - y[i]));
        big = fmax(big, fabs(y[i]));
    }
    return diff / big;
}

static double residual(const emn_sparse *A, const double *x, const double *b)
{
    int n = A->n;
    double *r = emn_xmalloc((size_t)n * sizeof *r);
    emn_sparse_matvec(A, x, r);
    double num = 0, den = 0;
    for (int i = 0; i < n; i++) {
        num += (r[i] - b[i]) * (r[i] - b[i]);
        den += b[i] * b[i];
    }
    free(r);
    return sqrt(num) / sqrt(den);
}

static void test_pattern(void)
{
    /* 4x4 with duplicates, reserved out of order, and no diagonal entry in
     * columns 1 and 3 */
    emn_sparse A;
    emn_sparse_init(&A, 4);
    int h[] = {
        emn_sparse_reserve(&A, 2, 0), emn_sparse_reserve(&A, 0, 0),
        emn_sparse_reserve(&A, 3, 1), emn_sparse_reserve(&A, 2, 0),
        emn_sparse_reserve(&A, 0, 3), emn_sparse_reserve(&A, 1, 2),
        emn_sparse_reserve(&A, 2, 2), emn_sparse_reserve(&A, 0, 3),
        emn_sparse_reserve(&A, 0, 1),
    };
    int nh = (int)(sizeof h / sizeof h[0]);
    ok(h[0] == 0 && h[8] == 8, "pattern: handles count from 0");
    emn_sparse_finalize(&A);
    /* expected: col0 {0,2}, col1 {0,1,3}, col2 {1,2}, col3 {0,3} */
    int Ap[] = {0, 2, 5, 7, 9};
    int Ai[] = {0, 2, 0, 1, 3, 1, 2, 0, 3};
    ok(A.nnz == 9, "pattern: nnz after merging duplicates and adding diagonals (%d)", A.nnz);
    ok(memcmp(A.Ap, Ap, sizeof Ap) == 0, "pattern: column pointers");
    ok(A.nnz == 9 && memcmp(A.Ai, Ai, sizeof Ai) == 0, "pattern: sorted row indices");
    ok(emn_sparse_slot(&A, h[0]) == emn_sparse_slot(&A, h[3]), "pattern: duplicate handles share a slot");
    ok(emn_sparse_slot(&A, h[4]) == emn_sparse_slot(&A, h[7]), "pattern: duplicate handles share a slot (2)");
    int ij[][2] = {{2, 0}, {0, 0}, {3, 1}, {2, 0}, {0, 3}, {1, 2}, {2, 2}, {0, 3}, {0, 1}};
    int good = 1;
    for (int k = 0; k < nh; k++) {
        int s = emn_sparse_slot(&A, h[k]);
        if (emn_sparse_find(&A, ij[k][0], ij[k][1]) != s) good = 0;
        if (s < A.Ap[ij[k][1]] || s >= A.Ap[ij[k][1] + 1] || A.Ai[s] != ij[k][0]) good = 0;
    }
    ok(good, "pattern: every handle's slot holds its (row, col)");
    ok(emn_sparse_find(&A, 1, 1) >= 0 && emn_sparse_find(&A, 3, 3) >= 0, "pattern: missing diagonals added");
    ok(emn_sparse_find(&A, 3, 0) == -1 && emn_sparse_find(&A, 2, 3) == -1, "pattern: find of absent entry is -1");

    /* matvec against a dense product of the same stamps */
    double dense[4][4] = {{0}};
    emn_sparse_zero(&A);
    for (int k = 0; k < nh; k++) {
        double v = k + 1.5;
        A.Ax[emn_sparse_slot(&A, h[k])] += v;
        dense[ij[k][0]][ij[k][1]] += v;
    }
    double x[4] = {1, -2, 0.5, 3}, y[4], want[4] = {0};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) want[i] += dense[i][j] * x[j];
    emn_sparse_matvec(&A, x, y);
    good = 1;
    for (int i = 0; i < 4; i++) good &= fabs(y[i] - want[i]) < 1e-14;
    ok(good, "matvec: equals the dense product");
    emn_sparse_free(&A);
}

/* Random n x n matrix: a strong diagonal plus `per_col` random entries per
 * column, each reserved twice (stamps overlap in real circuits). */
static void random_matrix(emn_sparse *A, int n, int per_col)
{
    emn_sparse_init(A, n);
    int nh = 0;
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(A, j, j);
        nh++;
        for (int k = 0; k < per_col; k++) {
            int i = (int)(rnd() % (unsigned)n);
            emn_sparse_reserve(A, i, j);
            emn_sparse_reserve(A, i, j);
            nh += 2;
        }
    }
    emn_sparse_finalize(A);
}

static void fill_random(emn_sparse *A, double diag)
{
    emn_sparse_zero(A);
    for (int j = 0; j < A->n; j++)
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++)
            A->Ax[p] = A->Ai[p] == j ? diag * (1 + fabs(rnd_unit())) : rnd_unit();
}

static void test_random_solve(void)
{
    int sizes[] = {5, 50, 400, 3000};
    for (int s = 0; s < 4; s++) {
        int n = sizes[s];
        emn_sparse A;
        random_matrix(&A, n, 4);
        /* A diagonal comparable to the off-diagonal sums: well conditioned
         * but not dominant, so KLU's threshold pivoting has choices. */
        fill_random(&A, 2.0);
        double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit() + 2;
        emn_lu *lu = emn_lu_new();
        int bad = 7;
        int rc = emn_lu_factor(lu, &A, &bad);
        ok(rc == 0 && bad == -1, "random n=%d: factor succeeds", n);
        ok(emn_lu_solve(lu, x) == 0, "random n=%d: solve succeeds", n);
        double res = residual(&A, x, b);
        ok(res < 1e-12, "random n=%d: ||Ax-b||/||b|| = %.3g < 1e-12", n, res);
        ok(emn_lu_rcond(lu) > 0, "random n=%d: rcond positive", n);
        emn_lu_free(&lu);
        ok(lu == NULL, "random n=%d: free clears the pointer", n);
        free(b);
        free(x);
        emn_sparse_free(&A);
    }
}

/* The pattern of a diagonal plus a cyclic shift. */
static void cyclic(emn_sparse *C, int n)
{
    emn_sparse_init(C, n);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(C, j, j);
        emn_sparse_reserve(C, (j + 1) % n, j);
    }
    emn_sparse_finalize(C);
}

static void test_refactor_path(void)
{
    int n = 200;
    emn_sparse A;
    random_matrix(&A, n, 3);
    fill_random(&A, 4.0);
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    emn_lu *lu = emn_lu_new();
    const emn_lu_stats *st = emn_lu_get_stats(lu);

    ok(emn_lu_factor(lu, &A, NULL) == 0, "refactor: first factor");
    ok(st->analyses == 1 && st->factors == 1 && st->refactors == 0,
       "refactor: first call analyzes and factors (%ld %ld %ld)", st->analyses, st->factors, st->refactors);

    /* same values: nothing to do at all */
    ok(emn_lu_factor(lu, &A, NULL) == 0 && st->factors == 1 && st->refactors == 0,
       "refactor: unchanged matrix is not refactored");

    /* new values, same pattern, still diagonally dominant: refactor only */
    int worst = 0;
    for (int round = 0; round < 5; round++) {
        fill_random(&A, 4.0);
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        if (emn_lu_factor(lu, &A, NULL) != 0) worst = 1;
        emn_lu_solve(lu, x);
        double r = residual(&A, x, b);
        if (!(r < 1e-12)) worst = 1;
    }
    ok(!worst, "refactor: five refactored solves with residual < 1e-12");
    ok(st->analyses == 1 && st->factors == 1 && st->refactors == 5,
       "refactor: counters analyses=1 factors=1 refactors=5 (%ld %ld %ld)",
       st->analyses, st->factors, st->refactors);
    ok(st->solves == 5, "refactor: solves counted (%ld)", st->solves);

    /* A new pattern (a different matrix) is analyzed afresh.  Diagonal
     * plus a cyclic shift: first diagonally dominant, so the diagonal is
     * the pivot sequence; then the diagonal shrinks to 1e-9 while the
     * shift stays 1.  The matrix is still well conditioned (eigenvalues
     * 1e-9 + roots of unity), but the old pivots are now tiny: refactoring
     * with them would grow errors by 1e9, so the wrapper must notice and
     * pivot again. */
    emn_sparse C;
    cyclic(&C, n);
    for (int j = 0; j < n; j++)
        for (int p = C.Ap[j]; p < C.Ap[j + 1]; p++) C.Ax[p] = C.Ai[p] == j ? 4.0 : 1.0;
    ok(emn_lu_factor(lu, &C, NULL) == 0 && st->analyses == 2 && st->factors == 2,
       "refactor: new pattern re-analyzed and factored");
    for (int j = 0; j < n; j++)
        for (int p = C.Ap[j]; p < C.Ap[j + 1]; p++)
            C.Ax[p] = C.Ai[p] == j ? 1e-9 * (1 + fabs(rnd_unit())) : 1 + 0.5 * rnd_unit();
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    int rc = emn_lu_factor(lu, &C, NULL);
    emn_lu_solve(lu, x);
    double r = residual(&C, x, b);
    ok(rc == 0 && st->factors == 3 && st->refactors == 6,
       "refactor: degraded pivots trigger a full factorization (factors %ld, refactors %ld)",
       st->factors, st->refactors);
    ok(r < 1e-12, "refactor: residual after re-pivoting %.3g < 1e-12", r);
    emn_sparse_free(&C);


    emn_lu_free(&lu);
    emn_lu_free(&lu);   /* accepts NULL */
    free(b);
    free(x);
    emn_sparse_free(&A);
}

/* An LU that borrows its matrix's pattern keeps no copy: it factors the
 * same values again when asked, still refactors with the old pivots while
 * they hold, and still notices when they no longer do (the diagonal of a
 * cyclic matrix falling to 1e-9, as in test_refactor_path). */
static void test_borrow(void)
{
    int n = 200;
    emn_sparse C;
    cyclic(&C, n);
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    emn_lu *lu = emn_lu_new();
    emn_lu_borrow(lu);
    const emn_lu_stats *st = emn_lu_get_stats(lu);
    int bad = 0;
    for (int round = 0; round < 4; round++) {
        for (int j = 0; j < n; j++)
            for (int p = C.Ap[j]; p < C.Ap[j + 1]; p++)
                C.Ax[p] = C.Ai[p] == j ? (round < 3 ? 4.0 + round : 1e-9 * (1 + fabs(rnd_unit()))) : 1 + 0.5 * rnd_unit();
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        if (emn_lu_factor(lu, &C, NULL) != 0 || emn_lu_solve(lu, x) != 0 || !(residual(&C, x, b) < 1e-12)) bad++;
        if (round == 1 && emn_lu_factor(lu, &C, NULL) != 0) bad++;     /* the same values again */
    }
    ok(!bad && st->analyses == 1, "borrow: four matrices of one pattern solved, residuals < 1e-12");
    ok(st->factors == 2 && st->refactors == 4,
       "borrow: the same values refactored; degraded pivots refactored, then factored afresh (factors %ld, refactors %ld)",
       st->factors, st->refactors);
    emn_lu_free(&lu);
    ok(C.Ap && C.Ai, "borrow: freeing the LU leaves the matrix's pattern");
    emn_sparse_free(&C);
    free(b);
    free(x);
}

static void test_singular(void)
{
    /* 12x12 tridiagonal-ish (larger than the dense blocks of
     * test_tiny: these are KLU's), column 4 entirely zero in value (but
     * present in the pattern, as a node nothing stamps would be) */
    int n = 12, zc = 4;
    emn_sparse A;
    emn_sparse_init(&A, n);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(&A, j, j);
        if (j > 0) emn_sparse_reserve(&A, j - 1, j);
        if (j < n - 1) emn_sparse_reserve(&A, j + 1, j);
    }
    emn_sparse_finalize(&A);
    for (int j = 0; j < n; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
            A.Ax[p] = j == zc ? 0.0 : A.Ai[p] == j ? 3.0 : -1.0;
    emn_lu *lu = emn_lu_new();
    int bad = -5;
    ok(emn_lu_factor(lu, &A, &bad) == -1, "singular: factor reports -1");
    ok(bad == zc, "singular: zero column reported (%d, want %d)", bad, zc);
    double b[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    ok(emn_lu_solve(lu, b) == -1, "singular: solve refused after a failed factorization");

    /* Two equal columns: singular in value, not in structure.  Either of
     * the two may be the one found without a pivot. */
    /* columns 4 and 5 both become (0 0 0 0 1 1 0 ...)^T */
    for (int j = 4; j <= 5; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) A.Ax[p] = A.Ai[p] == 4 || A.Ai[p] == 5 ? 1.0 : 0.0;
    bad = -5;
    int rc = emn_lu_factor(lu, &A, &bad);
    ok(rc == -1 && (bad == 4 || bad == 5), "singular: dependent columns reported (%d)", bad);

    /* a good matrix again after a singular one (not symmetric: KLU's, whose
     * refactorization comes next) */
    for (int j = 0; j < n; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) A.Ax[p] = A.Ai[p] == j ? 3.0 : A.Ai[p] < j ? -1.0 : -0.5;
    double x[12], bb[12];
    for (int i = 0; i < n; i++) x[i] = bb[i] = i + 1;
    ok(emn_lu_factor(lu, &A, &bad) == 0 && bad == -1 && emn_lu_solve(lu, x) == 0
       && residual(&A, x, bb) < 1e-14, "singular: recovers on a regular matrix");

    /* a refactor that meets the zero column must report it too */
    for (int p = A.Ap[1]; p < A.Ap[2]; p++) A.Ax[p] = 0.0;
    bad = -5;
    long f0 = emn_lu_get_stats(lu)->factors, r0 = emn_lu_get_stats(lu)->refactors;
    rc = emn_lu_factor(lu, &A, &bad);
    ok(rc == -1 && bad == 1, "singular: found on the refactor path (%d)", bad);
    ok(emn_lu_get_stats(lu)->refactors == r0 + 1 && emn_lu_get_stats(lu)->factors == f0 + 1,
       "singular: a failed refactor is retried with pivoting before giving up");
    emn_lu_free(&lu);
    emn_sparse_free(&A);
}

/* -u'' = f on a grid: tridiagonal (-1, 2, -1) with solution known. */
static void test_tridiagonal(void)
{
    int n = 100000;
    emn_sparse A;
    emn_sparse_init(&A, n);
    double t0 = emn_now();
    /* reserve in reverse order to exercise the sort */
    for (int j = n - 1; j >= 0; j--) {
        if (j < n - 1) emn_sparse_reserve(&A, j + 1, j);
        emn_sparse_reserve(&A, j, j);
        if (j > 0) emn_sparse_reserve(&A, j - 1, j);
    }
    emn_sparse_finalize(&A);
    ok(A.nnz == 3 * n - 2, "tridiagonal: nnz %d", A.nnz);
    for (int j = 0; j < n; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) A.Ax[p] = A.Ai[p] == j ? 2.0 : -1.0;
    /* exact solution u_i = sin(pi (i+1)/(n+1)): then (A u)_i = 2(1-cos h) u_i */
    double h = M_PI / (n + 1), lam = 2 * (1 - cos(h));
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    for (int i = 0; i < n; i++) b[i] = x[i] = lam * sin(h * (i + 1));
    emn_lu *lu = emn_lu_new();
    const emn_lu_stats *st = emn_lu_get_stats(lu);
    ok(emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0, "tridiagonal: factor and solve");
    /* a chain's elimination tree has no halves in AMD's order: the
     * middle of that order cuts it, without METIS's separator */
    ok(st->ldl == 1 && st->halves == 1 && st->cut_by[0] == 1 && st->cut_by[1] == 0,
       "tridiagonal: L D L' solved in two halves, cut from AMD's order (%ld, %ld, %ld)", st->halves,
       st->cut_by[0], st->cut_by[1]);
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs(x[i] - sin(h * (i + 1))));
    /* cond(A) ~ 4n^2/pi^2 ~ 4e9, so ~1e-6 absolute is what double allows */
    ok(err < 1e-5, "tridiagonal: max error against the exact solution %.3g", err);
    /* The residual of the smooth solution above is dominated by rounding
     * in A x (b is tiny, ~lam), so check it on a rough solution, whose
     * right-hand side is computed here from the stencil. */
    for (int i = 0; i < n; i++) x[i] = rnd_unit();
    for (int i = 0; i < n; i++)
        b[i] = 2 * x[i] - (i > 0 ? x[i - 1] : 0) - (i < n - 1 ? x[i + 1] : 0);
    memcpy(x, b, (size_t)n * sizeof *x);
    ok(emn_lu_solve(lu, x) == 0, "tridiagonal: second solve reuses the factorization");
    double res = residual(&A, x, b);
    ok(res < 1e-12, "tridiagonal: ||Ax-b||/||b|| = %.3g < 1e-12", res);
    double dt = emn_now() - t0;
    printf("# tridiagonal: built and solved in %.3f s (speed is measured in bench/, not tested)\n", dt);
    emn_lu_free(&lu);
    free(b);
    free(x);
    emn_sparse_free(&A);
}

/* 10^7 reservations with many duplicates, in random order, sorted and
 * merged right (the time is printed; bench/ is where speed is judged). */
static void test_large_build(void)
{
    int n = 200000;
    long m = 10000000;
    emn_sparse A;
    emn_sparse_init(&A, n);
    double t0 = emn_now();
    for (long k = 0; k < m; k++) {
        int j = (int)(rnd() % (unsigned)n);
        int i = (int)((j + (int)(rnd() % 25u) - 12 + n) % n);
        emn_sparse_reserve(&A, i, j);
    }
    emn_sparse_finalize(&A);
    double dt = emn_now() - t0;
    int sorted = 1;
    for (int j = 0; j < n && sorted; j++)
        for (int p = A.Ap[j] + 1; p < A.Ap[j + 1]; p++)
            if (A.Ai[p - 1] >= A.Ai[p]) sorted = 0;
    ok(sorted, "large: rows strictly increasing in every column");
    ok(A.nnz <= 25 * n && A.nnz > 20 * n, "large: duplicates merged (nnz %d)", A.nnz);
    printf("# large: 10^7 reservations finalized in %.2f s (speed is measured in bench/, not tested)\n", dt);
    emn_sparse_free(&A);
}

/* The Newton matrix of a passive network is diagonally dominant (a
 * weighted Laplacian plus grounded terms), in rows and columns, and
 * elimination keeps it so: every diagonal pivot passes KLU's threshold
 * test, and the factors keep the fill the ordering planned.  A grid with
 * conductances over six decades, and a tenth of its nodes grounded
 * through 1e10 (a capacitor's a C when a is huge, as for consistent
 * velocities), is where row scaling would push pivots off the diagonal.
 * With symmetric values it is positive definite and factored L D L'; with
 * the lower triangle's couplings weakened by a factor `lower` it is
 * KLU's.  A is made from the seed given. */
static void network(emn_sparse *A, int side, double lower, unsigned long long seed)
{
    rng_state = seed;
    int n = side * side;
    emn_sparse_init(A, n);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(A, j, j);
        if (j % side) emn_sparse_reserve(A, j - 1, j), emn_sparse_reserve(A, j, j - 1);
        if (j >= side) emn_sparse_reserve(A, j - side, j), emn_sparse_reserve(A, j, j - side);
    }
    emn_sparse_finalize(A);
    double *g = emn_xcalloc((size_t)A->nnz, sizeof *g), *d = emn_xcalloc((size_t)n, sizeof *d);
    for (int j = 0; j < n; j++) {
        d[j] = rnd() % 10 == 0 ? 1e10 : 1e-6 * pow(10, 3 * rnd_unit());
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++) {
            int i = A->Ai[p];
            if (i >= j) continue;
            /* one conductance per link: (i, j) above the diagonal, (j, i) below */
            double gl = pow(10, 3 * rnd_unit());
            g[p] = -gl;
            for (int q = A->Ap[i]; q < A->Ap[i + 1]; q++)
                if (A->Ai[q] == j) g[q] = -lower * gl;
            d[i] += gl;
            d[j] += gl;
        }
    }
    for (int j = 0; j < n; j++)
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++) A->Ax[p] = A->Ai[p] == j ? d[j] : g[p];
    free(g);
    free(d);
}

/* An LU that borrowed an operating point's matrix, kept for the
 * transient's (emn_lu_keep_pattern): it outlives the matrix it borrowed,
 * factors another of the same pattern with the analysis it has (the same
 * order, no new one), keeps the values as an LU that never borrowed (the
 * same matrix again is not refactored), and counts afresh. */
static void test_keep_pattern(void)
{
    emn_sparse A, B;
    network(&A, 40, 1.0, 4242);
    int n = A.n;
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    emn_lu *lu = emn_lu_new();
    emn_lu_borrow(lu);
    const emn_lu_stats *st = emn_lu_get_stats(lu);
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0 && residual(&A, x, b) < 1e-12;
    const int *order = emn_lu_order(lu);
    int *before = emn_xmalloc((size_t)n * sizeof *before);
    if (order) memcpy(before, order, (size_t)n * sizeof *before);
    ok(good && order && st->ldl == 1, "keep: the borrowing LU factors L D L' (%ld)", st->ldl);
    emn_lu_keep_pattern(lu);
    ok(st->ldl == 0 && st->factors == 0 && st->analyses == 0, "keep: its counts start again");
    emn_sparse_free(&A);        /* the pattern it borrowed is gone */
    network(&B, 40, 1.0, 777);
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    good = emn_lu_factor(lu, &B, NULL) == 0 && emn_lu_solve(lu, x) == 0 && residual(&B, x, b) < 1e-12;
    order = emn_lu_order(lu);
    ok(good && st->ldl == 1 && order && memcmp(order, before, (size_t)n * sizeof *before) == 0 && st->hinted == 0,
       "keep: another matrix of the pattern, factored L D L' in the order it had, ||Ax-b||/||b|| < 1e-12");
    good = emn_lu_factor(lu, &B, NULL) == 0;
    ok(good && st->ldl == 1, "keep: the same values again are not refactored (%ld L D L')", st->ldl);
    /* not symmetric: KLU, which analyzes the kept pattern now */
    for (int j = 0; j < n; j++)
        for (int p = B.Ap[j]; p < B.Ap[j + 1]; p++)
            if (B.Ai[p] > j) B.Ax[p] *= 0.5;
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    good = emn_lu_factor(lu, &B, NULL) == 0 && emn_lu_solve(lu, x) == 0 && residual(&B, x, b) < 1e-12;
    ok(good && st->factors == 1 && st->analyses == 1,
       "keep: an asymmetric one by KLU, analyzed once (%ld KLU, %ld analyses), ||Ax-b||/||b|| < 1e-12", st->factors,
       st->analyses);
    emn_lu_free(&lu);
    emn_sparse_free(&B);
    free(before);
    free(b);
    free(x);
}

static void test_network(void)
{
    for (int sym = 0; sym < 2; sym++) {
        emn_sparse A;
        network(&A, 60, sym ? 1.0 : 1 - 1e-6, 12346);     /* row-scaled, two pivots leave it */
        int n = A.n;
        double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        emn_lu *lu = emn_lu_new();
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        const char *what = sym ? "network, symmetric" : "network";
        ok(emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0, "%s: factor and solve", what);
        if (sym) ok(st->ldl == 1 && st->factors == 0 && st->analyses == 0,
                    "%s: factored L D L' (%ld), not by KLU (%ld), which analyzed nothing (%ld)", what, st->ldl,
                    st->factors, st->analyses);
        else ok(st->ldl == 0 && st->factors == 1 && st->offdiag == 0 && st->analyses == 1,
                "%s: by KLU, every pivot on the diagonal (%ld off it), one analysis (%ld)", what, st->offdiag,
                st->analyses);
        double res = residual(&A, x, b);
        ok(res < 1e-12, "%s: ||Ax-b||/||b|| = %.3g < 1e-12", what, res);
        emn_lu_free(&lu);
        free(b);
        free(x);
        emn_sparse_free(&A);
    }
}

/* A 150 x 150 network made indefinite: one diagonal entry (positive)
 * far below its couplings, in the middle of the grid.  The
 * factorization stops there (with halves, in one while the other goes
 * on) and KLU solves it.  Then an LU sharing the analysis, on the same
 * values made definite again, factors L D L' in the workspace the failed
 * factorization left (the row that failed has consumed its dense
 * values): row by row in halves, or supernodally (super). */
static void indefinite_grid(emn_sparse *A, bool super)
{
    int n = A->n, mid = n / 2 + 75, pm = -1;
    for (int p = A->Ap[mid]; p < A->Ap[mid + 1]; p++)
        if (A->Ai[p] == mid) pm = p;
    double keep = A->Ax[pm];
    A->Ax[pm] = 1e-3 * keep;
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    if (super) emn_lu_set_super_flops(owner, 0);
    const char *tag = super ? "super" : "halves";
    for (int k = 0; k < 2; k++) {
        emn_lu *lu = k ? other : owner;
        if (k) A->Ax[pm] = keep;
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit() - 0.5;
        bool good = emn_lu_factor(lu, A, NULL) == 0 && emn_lu_solve(lu, x) == 0;
        double res = residual(A, x, b);
        ok(good && st->ldl == 1 && st->factors == !k && st->halves == k && st->super == (super ? 1 : 0) &&
           res < 1e-12, "%s: %s (%ld L D L', %ld supernodal, %ld KLU, %ld in halves), ||Ax-b||/||b|| = %.3g < 1e-12",
           tag, k ? "definite again, L D L' in the same workspace" : "an indefinite grid falls back to KLU",
           st->ldl, st->super, st->factors, st->halves, res);
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    free(b);
    free(x);
}

/* A large L D L' solve runs in two halves of the elimination tree, joined
 * by its top: on a 150 x 150 grid, for the LU that made the analysis and
 * for one that shares it with other values (a cache by step size). */
static void test_halves(void)
{
    emn_sparse A;
    network(&A, 150, 1.0, 777);
    int n = A.n;
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    for (int k = 0; k < 2; k++) {
        emn_lu *lu = k ? other : owner;
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        if (k)  /* a larger diagonal: another step size */
            for (int j = 0; j < n; j++)
                for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
                    if (A.Ai[p] == j) A.Ax[p] *= 3;
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit() - 0.5;
        bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0;
        double res = residual(&A, x, b);
        ok(good && st->ldl == 1 && st->halves == 1 && res < 1e-12,
           "halves: %s, L D L' solved in two halves (%ld), ||Ax-b||/||b|| = %.3g < 1e-12",
           k ? "a sharing LU" : "the analysis's LU", st->halves, res);
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    indefinite_grid(&A, false);
    free(b);
    free(x);
    emn_sparse_free(&A);
}

/* A network whose elimination tree is bushy and whose L has a few
 * entries a column (a random tree of conductances, each node hung from
 * one before it, and a tenth as many links from a node to its
 * grandparent): its solves take the flat forward pass (sparse.c), in
 * two halves and a top when large, in one pass when not, for the LU that
 * made the analysis and for one sharing it with other values.  So does
 * a grid's; a ladder (a chain) and a supernodal L do not. */
static void tree_network(emn_sparse *A, int n, unsigned long long seed)
{
    rng_state = seed;
    int *up = emn_xmalloc((size_t)n * sizeof *up), nx = n / 10;
    int *xa = emn_xmalloc((size_t)nx * sizeof *xa), *xb = emn_xmalloc((size_t)nx * sizeof *xb);
    emn_sparse_init(A, n);
    for (int j = 0; j < n; j++) {
        up[j] = j ? (int)(rnd() % (unsigned)j) : -1;
        emn_sparse_reserve(A, j, j);
        if (j) emn_sparse_reserve(A, up[j], j), emn_sparse_reserve(A, j, up[j]);
    }
    for (int k = 0; k < nx; k++) {
        xa[k] = 2 + (int)(rnd() % (unsigned)(n - 2));
        xb[k] = up[up[xa[k]]] >= 0 ? up[up[xa[k]]] : xa[k];
        if (xa[k] != xb[k]) emn_sparse_reserve(A, xa[k], xb[k]), emn_sparse_reserve(A, xb[k], xa[k]);
    }
    emn_sparse_finalize(A);
    memset(A->Ax, 0, (size_t)A->nnz * sizeof *A->Ax);
    for (int j = 0; j < n; j++) A->Ax[emn_sparse_find(A, j, j)] = 1;
    for (int k = 0; k < n + nx; k++) {
        int a = k < n ? k : xa[k - n], b = k < n ? up[k] : xb[k - n];
        if (b < 0 || a == b) continue;
        double g = pow(10, 3 * rnd_unit());
        A->Ax[emn_sparse_find(A, a, a)] += g;
        A->Ax[emn_sparse_find(A, b, b)] += g;
        A->Ax[emn_sparse_find(A, a, b)] -= g;
        A->Ax[emn_sparse_find(A, b, a)] -= g;
    }
    free(up);
    free(xa);
    free(xb);
}

/* b and x set to the same random vector, then x solved for with lu:
 * the relative residual, or INFINITY if the factorization or the solve
 * failed. */
static double random_solve(emn_lu *lu, const emn_sparse *A, double *b, double *x)
{
    for (int i = 0; i < A->n; i++) b[i] = x[i] = rnd_unit() - 0.5;
    if (emn_lu_factor(lu, A, NULL) != 0 || emn_lu_solve(lu, x) != 0) return INFINITY;
    return residual(A, x, b);
}

static void test_flat(void)
{
    for (int big = 0; big < 2; big++) {
        emn_sparse A;
        tree_network(&A, big ? 60000 : 3000, 4242 + big);
        int n = A.n;
        double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
        emn_lu *lus[2];
        lus[0] = emn_lu_new();
        lus[1] = emn_lu_new_sharing(lus[0]);
        for (int k = 0; k < 2; k++) {
            if (k)      /* another step size */
                for (int j = 0; j < n; j++) A.Ax[emn_sparse_find(&A, j, j)] += 0.5;
            double res = random_solve(lus[k], &A, b, x);
            const emn_lu_stats *st = emn_lu_get_stats(lus[k]);
            ok(st->ldl == 1 && st->flat == 1 && st->halves == big && res < 1e-12,
               "flat: a tree of %d, %s: %ld flat solves, %ld in halves, ||Ax-b||/||b|| = %.3g < 1e-12", n,
               k ? "a sharing LU" : "the analysis's LU", st->flat, st->halves, res);
        }
        emn_lu_free(&lus[1]);
        emn_lu_free(&lus[0]);
        free(b);
        free(x);
        emn_sparse_free(&A);
    }
    /* the ladder of test_tridiagonal's kind, a grid, the grid supernodal */
    for (int grid = 0; grid < 3; grid++) {
        emn_sparse A;
        if (grid) {
            network(&A, 150, 1.0, 99);
        } else {
            int n = 20000;
            emn_sparse_init(&A, n);
            for (int j = 0; j < n; j++) {
                emn_sparse_reserve(&A, j, j);
                if (j) emn_sparse_reserve(&A, j - 1, j), emn_sparse_reserve(&A, j, j - 1);
            }
            emn_sparse_finalize(&A);
            for (int j = 0; j < n; j++)
                for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) A.Ax[p] = A.Ai[p] == j ? 2.5 : -1.0;
        }
        int n = A.n;
        double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
        emn_lu *lu = emn_lu_new();
        if (grid == 2) emn_lu_set_super_flops(lu, 0);
        double res = random_solve(lu, &A, b, x);
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        const char *what = grid == 2 ? "supernodal 150 x 150 grid" : grid ? "150 x 150 grid" : "ladder";
        ok(st->ldl == 1 && st->flat == (grid == 1) && st->super == (grid == 2) && res < 1e-12,
           "flat: a %s, %ld flat solves, %ld supernodal, ||Ax-b||/||b|| = %.3g < 1e-12", what, st->flat, st->super, res);
        emn_lu_free(&lu);
        free(b);
        free(x);
        emn_sparse_free(&A);
    }
}

/* A large L D L' is factored supernodally (an L L' by dense blocks of
 * columns that share their rows) and solved block by block.  Forced here
 * on a 150 x 150 grid, whose halves and top the factorization and the
 * solves run side by side: the solution agrees with the row-by-row factorization's and
 * solves A x = b, for the LU that made the analysis, for one sharing it
 * with other values, and after an indefinite matrix has sent one LU to
 * KLU. */
static void test_super(void)
{
    emn_sparse A;
    network(&A, 150, 1.0, 4242);
    int n = A.n;
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    double *y = emn_xmalloc((size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) b[i] = rnd_unit();
    /* the row-by-row factorization's solution, to compare with */
    emn_lu *plain = emn_lu_new();
    memcpy(y, b, (size_t)n * sizeof *y);
    bool good = emn_lu_factor(plain, &A, NULL) == 0 && emn_lu_solve(plain, y) == 0;
    ok(good && emn_lu_get_stats(plain)->super == 0, "super: the default leaves a 150 x 150 grid to ldl_rows");
    emn_lu_free(&plain);
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    emn_lu_set_super_flops(owner, 0);
    for (int k = 0; k < 2; k++) {
        emn_lu *lu = k ? other : owner;
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        memcpy(x, b, (size_t)n * sizeof *x);
        good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0;
        double res = residual(&A, x, b), rel = apart(x, y, n);
        ok(good && st->ldl == 1 && st->super == 1 && st->super_halves == 1 && st->factors == 0 &&
           st->halves == 1 && res < 1e-12 && rel <= 1e-10,
           "super: %s, supernodal (%ld, %ld in halves) and solved in halves (%ld): ||Ax-b||/||b|| = %.3g, "
           "%.3g from ldl_rows' x", k ? "a sharing LU" : "the analysis's LU", st->super, st->super_halves,
           st->halves, res, rel);
        if (!k)     /* another step size for the sharing LU */
            for (int j = 0; j < n; j++)
                for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
                    if (A.Ai[p] == j) A.Ax[p] *= 3;
        if (!k) {
            plain = emn_lu_new();
            memcpy(y, b, (size_t)n * sizeof *y);
            emn_lu_factor(plain, &A, NULL);
            emn_lu_solve(plain, y);
            emn_lu_free(&plain);
        }
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    indefinite_grid(&A, true);
    free(b);
    free(x);
    free(y);
    emn_sparse_free(&A);
}

/* A large L L' kept in single precision (emn_lu_allow_single), on a
 * diagonally dominant grid, and by an LU sharing the analysis: half the
 * bytes of the same factorization in double, a first solution with the residual of single
 * precision (about 1e-7, far above double's 1e-16), and three steps of
 * refinement (r = b - A x, solved, added; the residual in double) reach
 * double's solution.  A network of conductances over twelve decades
 * keeps double, and so does a matrix whose L is past float's range. */
static void test_single(void)
{
    int side = 120, n = side * side;
    emn_sparse A;
    emn_sparse_init(&A, n);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(&A, j, j);
        if (j % side) emn_sparse_reserve(&A, j - 1, j), emn_sparse_reserve(&A, j, j - 1);
        if (j >= side) emn_sparse_reserve(&A, j - side, j), emn_sparse_reserve(&A, j, j - side);
    }
    emn_sparse_finalize(&A);
    for (int j = 0; j < n; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) A.Ax[p] = A.Ai[p] == j ? 4.5 : -1;
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    double *y = emn_xmalloc((size_t)n * sizeof *y), *r = emn_xmalloc((size_t)n * sizeof *r);
    for (int i = 0; i < n; i++) b[i] = y[i] = rnd_unit();
    emn_lu *dbl = emn_lu_new();
    emn_lu_set_super_flops(dbl, 0);
    bool good = emn_lu_factor(dbl, &A, NULL) == 0 && emn_lu_solve(dbl, y) == 0;
    ok(good && !emn_lu_single(dbl) && emn_lu_get_stats(dbl)->super == 1,
       "single: by default a supernodal L L' is kept in double");
    double bytes_d = (double)emn_lu_bytes(dbl);
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    emn_lu_set_super_flops(owner, 0);
    emn_lu_allow_single(owner, 1e-5);
    for (int k = 0; k < 2; k++) {
        emn_lu *lu = k ? other : owner;
        const char *who = k ? "a sharing LU" : "the analysis's LU";
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        memcpy(x, b, (size_t)n * sizeof *x);
        good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0;
        double res = residual(&A, x, b), part = (double)emn_lu_bytes(lu) / bytes_d;
        /* the analysis's LU also holds the analysis, and the workspace
         * in double that a factorization is made in */
        ok(good && emn_lu_single(lu) && st->single == 1 && st->super == 1 && (k ? part <= 0.5 : part > 1.4),
           "single: %s keeps it in single precision (%ld), in %.3f of the bytes of the LU in double", who,
           st->single, part);
        ok(res > 1e-12 && res < 1e-6, "single: %s: the first solve's ||Ax-b||/||b|| = %.3g, single precision's",
           who, res);
        for (int it = 0; it < 3; it++) {
            emn_sparse_matvec(&A, x, r);
            for (int i = 0; i < n; i++) r[i] = b[i] - r[i];
            emn_lu_solve(lu, r);
            for (int i = 0; i < n; i++) x[i] += r[i];
        }
        res = residual(&A, x, b);
        double rel = apart(x, y, n);
        ok(res < 1e-14 && rel < 1e-13, "single: %s: refined three times, ||Ax-b||/||b|| = %.3g, %.3g from double's x",
           who, res, rel);
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    emn_lu_free(&dbl);
    /* the same grid times 1e80: L's entries, some 1e40, are past float's
     * range, so that the probes come out infinite or NaN */
    for (int p = 0; p < A.nnz; p++) A.Ax[p] *= 1e80;
    owner = emn_lu_new();
    emn_lu_set_super_flops(owner, 0);
    emn_lu_allow_single(owner, 1e-5);
    memcpy(x, b, (size_t)n * sizeof *x);
    good = emn_lu_factor(owner, &A, NULL) == 0 && emn_lu_solve(owner, x) == 0;
    for (int i = 0; i < n; i++) x[i] *= 1e80;
    double res80 = apart(x, y, n);
    ok(good && !emn_lu_single(owner) && emn_lu_get_stats(owner)->super == 1 && res80 < 1e-13,
       "single: scaled by 1e80, past float's range, it stays in double: %.3g from the unscaled x", res80);
    emn_lu_free(&owner);
    emn_sparse_free(&A);
    network(&A, 60, 1.0, 4242);
    n = A.n;
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    owner = emn_lu_new();
    emn_lu_set_super_flops(owner, 0);
    emn_lu_allow_single(owner, 1e-5);
    good = emn_lu_factor(owner, &A, NULL) == 0 && emn_lu_solve(owner, x) == 0;
    double res = residual(&A, x, b);
    ok(good && !emn_lu_single(owner) && emn_lu_get_stats(owner)->single == 0 && emn_lu_get_stats(owner)->super == 1 &&
       res < 1e-12, "single: a network of conductances over twelve decades stays in double: ||Ax-b||/||b|| = %.3g", res);
    emn_lu_free(&owner);
    emn_sparse_free(&A);
    free(b);
    free(x);
    free(y);
    free(r);
}

/* An order hinted for a large grid (emn_lu_hint_order), where METIS
 * would otherwise be run: the order an analysis of the same grid chose is
 * taken (the same fill, the same bytes) and solves it; the natural order,
 * row after row of the grid, fills far more than AMD's and is not. */
static void test_hint(void)
{
    emn_sparse A;
    network(&A, 250, 1.0, 99);
    int n = A.n;
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    int *order = emn_xmalloc((size_t)n * sizeof *order), *natural = emn_xmalloc((size_t)n * sizeof *natural);
    for (int i = 0; i < n; i++) b[i] = rnd_unit();
    emn_lu *plain = emn_lu_new();
    memcpy(x, b, (size_t)n * sizeof *x);
    bool good = emn_lu_factor(plain, &A, NULL) == 0 && emn_lu_solve(plain, x) == 0;
    const int *chosen = emn_lu_order(plain);
    ok(good && chosen && emn_lu_get_stats(plain)->ldl == 1 && emn_lu_get_stats(plain)->hinted == 0,
       "hint: a 250 x 250 grid is factored L D L' in an order of its own");
    if (!chosen) {
        emn_lu_free(&plain);
        goto out;
    }
    memcpy(order, chosen, (size_t)n * sizeof *order);
    size_t bytes = emn_lu_bytes(plain);
    double lnz = emn_lu_planned_entries(plain);
    emn_lu_free(&plain);
    for (int k = 0; k < n; k++) natural[k] = k;
    for (int k = 0; k < 2; k++) {
        emn_lu *lu = emn_lu_new();
        emn_lu_hint_order(lu, k ? natural : order, lnz);
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        memcpy(x, b, (size_t)n * sizeof *x);
        good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0;
        double res = residual(&A, x, b);
        if (!k)
            ok(good && st->ldl == 1 && st->hinted == 1 && st->ordered == 0 && emn_lu_bytes(lu) == bytes &&
               res < 1e-12,
               "hint: the order chosen before is taken (%ld) with no ordering of its own (%ld), %zu bytes as "
               "before (%zu), ||Ax-b||/||b|| = %.3g", st->hinted, st->ordered, emn_lu_bytes(lu), bytes, res);
        else
            ok(good && st->ldl == 1 && st->hinted == 0 && st->ordered == 1 && res < 1e-12,
               "hint: the grid's natural order, filling more than the hint said, is weighed against AMD's (%ld) "
               "and not taken (%ld), ||Ax-b||/||b|| = %.3g", st->ordered, st->hinted, res);
        emn_lu_free(&lu);
    }
out:
    free(b);
    free(x);
    free(order);
    free(natural);
    emn_sparse_free(&A);
}

/* Dense symmetric positive definite matrices (diagonally dominant,
 * random couplings) of sizes that are not multiples of the supernodal
 * factorization's blocks (8 rows by 4 columns, panels of 32): one
 * supernode, factored panel by panel.  The solution solves A x = b and
 * agrees with the row-by-row factorization's; made indefinite (a
 * principal 2 x 2 of negative determinant), the supernodal factorization
 * gives up and KLU solves it. */
static void test_super_dense(void)
{
    static const int sizes[] = {9, 37, 203};     /* 8 or fewer are dense blocks with pivoting (test_tiny) */
    rng_state = 99;
    for (size_t t = 0; t < sizeof sizes / sizeof sizes[0]; t++) {
        int n = sizes[t];
        emn_sparse A;
        emn_sparse_init(&A, n);
        for (int j = 0; j < n; j++)
            for (int i = 0; i < n; i++) emn_sparse_reserve(&A, i, j);
        emn_sparse_finalize(&A);
        for (int j = 0; j < n; j++)
            for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) {
                int i = A.Ai[p];
                if (i == j) A.Ax[p] = n + 1 + rnd_unit();
                else if (i > j) A.Ax[p] = rnd_unit();
            }
        for (int j = 0; j < n; j++)      /* the upper triangle mirrors the lower */
            for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
                if (A.Ai[p] < j) A.Ax[p] = A.Ax[emn_sparse_find(&A, j, A.Ai[p])];
        double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
        double *y = emn_xmalloc((size_t)n * sizeof *y);
        for (int i = 0; i < n; i++) b[i] = x[i] = y[i] = rnd_unit();
        emn_lu *plain = emn_lu_new(), *sup = emn_lu_new();
        emn_lu_set_super_flops(sup, 0);
        bool good = emn_lu_factor(plain, &A, NULL) == 0 && emn_lu_solve(plain, y) == 0 &&
                    emn_lu_factor(sup, &A, NULL) == 0 && emn_lu_solve(sup, x) == 0;
        double res = residual(&A, x, b), rel = apart(x, y, n);
        const emn_lu_stats *st = emn_lu_get_stats(sup);
        ok(good && st->super == 1 && emn_lu_get_stats(plain)->super == 0 && res < 1e-14 && rel <= 1e-13,
           "super: dense %d x %d, supernodal (%ld): ||Ax-b||/||b|| = %.3g, %.3g from ldl_rows' x", n, n, st->super,
           res, rel);
        emn_lu_free(&sup);
        /* indefinite: the last two coordinates coupled by 2n, the last
         * one's diagonal 1, a principal 2 x 2 of negative determinant */
        A.Ax[emn_sparse_find(&A, n - 1, n - 1)] = 1;
        A.Ax[emn_sparse_find(&A, n - 1, n - 2)] = A.Ax[emn_sparse_find(&A, n - 2, n - 1)] = 2.0 * n;
        sup = emn_lu_new();
        emn_lu_set_super_flops(sup, 0);
        for (int i = 0; i < n; i++) x[i] = b[i];
        good = emn_lu_factor(sup, &A, NULL) == 0 && emn_lu_solve(sup, x) == 0;
        res = residual(&A, x, b);
        st = emn_lu_get_stats(sup);
        ok(good && st->ldl == 1 && st->factors == 1 && res < 1e-12,
           "super: dense %d x %d made indefinite goes to KLU (%ld L D L', %ld KLU): ||Ax-b||/||b|| = %.3g", n, n,
           st->ldl, st->factors, res);
        emn_lu_free(&sup);
        emn_lu_free(&plain);
        free(b);
        free(x);
        free(y);
        emn_sparse_free(&A);
    }
}

/* A random network (each of 4000 nodes joined to three others at random,
 * conductances over six decades, 1 S to ground at each): no
 * grid's regular supernodes, but the irregular ones AMD leaves (its L
 * is large enough for the default to go supernodal too).  The
 * supernodal factorization's solution solves A x = b and agrees with the
 * row-by-row one's, for the LU that made the analysis and for one sharing
 * it with another diagonal. */
static void test_super_random(void)
{
    int n = 4000;
    rng_state = 2026;
    emn_sparse A;
    emn_sparse_init(&A, n);
    int *link = emn_xmalloc(3 * (size_t)n * sizeof *link);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(&A, j, j);
        for (int k = 0; k < 3; k++) {
            int i = (int)(rnd() % (unsigned)n);
            if (i == j) i = (j + 1) % n;
            link[3 * j + k] = i;
            emn_sparse_reserve(&A, i, j);
            emn_sparse_reserve(&A, j, i);
        }
    }
    emn_sparse_finalize(&A);
    for (int p = 0; p < A.nnz; p++) A.Ax[p] = 0;
    for (int j = 0; j < n; j++) {
        A.Ax[emn_sparse_find(&A, j, j)] += 1;
        for (int k = 0; k < 3; k++) {
            int i = link[3 * j + k];
            double g = pow(10, 3 * rnd_unit());
            A.Ax[emn_sparse_find(&A, i, j)] -= g;
            A.Ax[emn_sparse_find(&A, j, i)] -= g;
            A.Ax[emn_sparse_find(&A, i, i)] += g;
            A.Ax[emn_sparse_find(&A, j, j)] += g;
        }
    }
    free(link);
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    double *y = emn_xmalloc((size_t)n * sizeof *y);
    for (int i = 0; i < n; i++) b[i] = rnd_unit();
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    emn_lu_set_super_flops(owner, 0);
    for (int k = 0; k < 2; k++) {
        emn_lu *lu = k ? other : owner, *plain = emn_lu_new();
        emn_lu_set_super_flops(plain, INFINITY);       /* row by row, whatever its size */
        memcpy(x, b, (size_t)n * sizeof *x);
        memcpy(y, b, (size_t)n * sizeof *y);
        bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0 &&
                    emn_lu_factor(plain, &A, NULL) == 0 && emn_lu_solve(plain, y) == 0;
        double res = residual(&A, x, b), rel = apart(x, y, n);
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        ok(good && st->super == 1 && emn_lu_get_stats(plain)->super == 0 && res < 1e-12 && rel <= 1e-9,
           "super: random network, %s, supernodal (%ld; %ld L D L', %ld KLU; row by row %ld, %ld): "
           "||Ax-b||/||b|| = %.3g, %.3g from ldl_rows' x", k ? "a sharing LU" : "the analysis's LU", st->super,
           st->ldl, st->factors, emn_lu_get_stats(plain)->ldl, emn_lu_get_stats(plain)->factors, res, rel);
        emn_lu_free(&plain);
        for (int j = 0; j < n; j++) A.Ax[emn_sparse_find(&A, j, j)] *= 1.5;     /* another step size */
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    free(b);
    free(x);
    free(y);
    emn_sparse_free(&A);
}

/* A matrix for KLU made of separate cells is factored and solved as two
 * groups of cells side by side, when there is a second core.  Cell k of
 * m joins coordinates k, m + k, 2m + k, ... (size of them) in a chain;
 * coordinate 0 is joined to the first link cells.  Random unsymmetric
 * values, diagonally dominant.  The solution solves A x = b, for the LU
 * that made the grouping and for one sharing its analysis; a singular
 * cell is named by its column in A's numbering; and a piece holding a
 * fifth of the matrix keeps it whole.  Cells of ten coordinates: smaller
 * ones are dense blocks (test_tiny). */
static void cells(emn_sparse *A, int m, int size, int link)
{
    int n = size * m;
    emn_sparse_init(A, n);
    for (int k = 0; k < m; k++)
        for (int i = 0; i < size; i++) {
            emn_sparse_reserve(A, k + m * i, k + m * i);
            if (i + 1 < size) {
                emn_sparse_reserve(A, k + m * i, k + m * (i + 1));
                emn_sparse_reserve(A, k + m * (i + 1), k + m * i);
            }
        }
    for (int k = 1; k <= link; k++) emn_sparse_reserve(A, 0, k), emn_sparse_reserve(A, k, 0);
    emn_sparse_finalize(A);
    for (int j = 0; j < n; j++)
        for (int p = A->Ap[j]; p < A->Ap[j + 1]; p++)
            A->Ax[p] = A->Ai[p] == j ? 4 + rnd_unit() : rnd_unit();
}

static void test_parts(void)
{
    bool two = emn_par_threads() > 1;
    int m = 1500, size = 10, n = size * m;
    emn_sparse A;
    cells(&A, m, size, 1);
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    for (int round = 0; round < 3; round++) {
        emn_lu *lu = round == 2 ? other : owner;
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        if (round) for (int p = 0; p < A.nnz; p++) A.Ax[p] *= 1 + 0.1 * rnd_unit();
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0;
        double res = residual(&A, x, b);
        long want = two ? (round == 2 ? 1 : round + 1) : 0;
        ok(good && st->parts == want && st->ldl == 0 && res < 1e-12,
           "parts: %s, %ld of them in two groups (%s), ||Ax-b||/||b|| = %.3g < 1e-12",
           round == 0 ? "separate cells" : round == 1 ? "new values" : "a sharing LU", st->parts,
           two ? "two cores" : "one core: none", res);
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    /* cell 1170 singular: its third coordinate's column zero */
    int zc = 1170 + 2 * m;
    for (int p = A.Ap[zc]; p < A.Ap[zc + 1]; p++) A.Ax[p] = 0;
    owner = emn_lu_new();
    int bad = -5, rc = emn_lu_factor(owner, &A, &bad);
    ok(rc == -1 && bad == zc && emn_lu_get_stats(owner)->factors == 1,
       "parts: a singular cell is named in A's numbering (column %d, want %d)", bad, zc);
    emn_lu_free(&owner);
    emn_sparse_free(&A);
    /* coordinate 0 joined to a fifth of the cells: a piece too large,
     * beside many small ones */
    cells(&A, m, size, m / 5);
    owner = emn_lu_new();
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    bool good = emn_lu_factor(owner, &A, NULL) == 0 && emn_lu_solve(owner, x) == 0;
    ok(good && emn_lu_get_stats(owner)->parts == 0 && residual(&A, x, b) < 1e-12,
       "parts: a piece of a fifth of the cells, beside small ones, is factored whole");
    emn_lu_free(&owner);
    emn_sparse_free(&A);
    free(b);
    free(x);
}

/* Pieces of at most eight coordinates are factored as dense blocks, with
 * partial pivoting.  n coordinates, shuffled, fall into pieces of 1 to 8
 * (or all of `size`), each with a random pattern around its diagonal;
 * random values, the diagonal no larger than the rest, so that pivots
 * leave it. */
static void pieces_matrix(emn_sparse *A, int n, int size, int *perm)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rnd() % (unsigned)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    emn_sparse_init(A, n);
    for (int s = 0, m; s < n; s += m) {
        m = size ? size : 1 + (int)(rnd() % 8);
        if (m > n - s) m = n - s;
        for (int i = 0; i < m; i++)
            for (int j = 0; j < m; j++)
                if (i == j || j == i + 1 || i == j + 1 || rnd() % 3 == 0) emn_sparse_reserve(A, perm[s + i], perm[s + j]);
    }
    emn_sparse_finalize(A);
    for (int p = 0; p < A->nnz; p++) A->Ax[p] = rnd_unit();
}

static double solved(emn_lu *lu, const emn_sparse *A, double *b, double *x)
{
    int n = A->n;
    for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
    if (emn_lu_solve(lu, x) != 0) return INFINITY;
    return residual(A, x, b);
}

static void test_tiny(void)
{
    int n = 6000;
    emn_sparse A;
    int *perm = emn_xmalloc((size_t)n * sizeof(int));
    double *b = emn_xmalloc((size_t)n * sizeof *b), *x = emn_xmalloc((size_t)n * sizeof *x);
    double *v1 = emn_xmalloc((size_t)n * 8 * sizeof *v1);
    pieces_matrix(&A, n, 0, perm);
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    const emn_lu_stats *st = emn_lu_get_stats(owner), *so = emn_lu_get_stats(other);
    int rc = emn_lu_factor(owner, &A, NULL);
    double res = solved(owner, &A, b, x);
    ok(rc == 0 && st->tiny == 1 && st->factors == 1 && st->offdiag > 0 && res < 1e-12,
       "tiny: pieces of 1 to 8, %ld pivots off the diagonal, ||Ax-b||/||b|| = %.3g < 1e-12", st->offdiag, res);
    ok(emn_lu_factor(owner, &A, NULL) == 0 && st->tiny == 1, "tiny: an unchanged matrix is not factored again");
    for (int p = 0; p < A.nnz; p++) A.Ax[p] *= 2;
    rc = emn_lu_factor(owner, &A, NULL);
    res = solved(owner, &A, b, x);
    ok(rc == 0 && st->tiny == 2 && st->factors == 1 && st->refactors == 1 && res < 1e-12,
       "tiny: doubled values keep the pivots: a refactorization (%ld), ||Ax-b||/||b|| = %.3g", st->refactors, res);
    /* the sharing LU factors other values; each solves with its own */
    memcpy(v1, A.Ax, (size_t)A.nnz * sizeof *v1);
    for (int p = 0; p < A.nnz; p++) A.Ax[p] = rnd_unit();
    rc = emn_lu_factor(other, &A, NULL);
    res = solved(other, &A, b, x);
    ok(rc == 0 && so->tiny == 1 && so->analyses == 0 && res < 1e-12,
       "tiny: a sharing LU, ||Ax-b||/||b|| = %.3g < 1e-12", res);
    memcpy(A.Ax, v1, (size_t)A.nnz * sizeof *v1);
    res = solved(owner, &A, b, x);
    ok(res < 1e-12, "tiny: the owner's factorization is its own (%.3g)", res);
    /* a zero column in the piece of coordinate perm[4500] */
    int zc = perm[4500], bad = -5;
    for (int p = A.Ap[zc]; p < A.Ap[zc + 1]; p++) A.Ax[p] = 0;
    rc = emn_lu_factor(owner, &A, &bad);
    ok(rc == -1 && bad == zc && emn_lu_solve(owner, x) == -1,
       "tiny: a zero column is reported (%d, want %d), the solve refused", bad, zc);
    for (int p = A.Ap[zc]; p < A.Ap[zc + 1]; p++) A.Ax[p] = rnd_unit();
    rc = emn_lu_factor(owner, &A, &bad);
    res = solved(owner, &A, b, x);
    ok(rc == 0 && bad == -1 && res < 1e-12, "tiny: recovers on a regular matrix (%.3g)", res);
    emn_lu_free(&other);
    emn_lu_free(&owner);
    emn_sparse_free(&A);

    /* every size of block alone, each needing its pivots off the
     * diagonal: B(i, j) = 1 + i + j except B(i, i) = 0 */
    for (int size = 1; size <= 9; size++) {
        emn_sparse_init(&A, size);
        for (int i = 0; i < size; i++)
            for (int j = 0; j < size; j++) emn_sparse_reserve(&A, i, j);
        emn_sparse_finalize(&A);
        for (int j = 0; j < size; j++)
            for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) A.Ax[p] = A.Ai[p] == j && size > 1 ? 0 : 1 + A.Ai[p] + j;
        owner = emn_lu_new();
        st = emn_lu_get_stats(owner);
        rc = emn_lu_factor(owner, &A, NULL);
        res = solved(owner, &A, b, x);
        ok(rc == 0 && st->tiny == (size <= 8) && res < 1e-13, "tiny: one block of %d, %s, ||Ax-b||/||b|| = %.3g",
           size, size <= 8 ? "dense" : "KLU's", res);
        emn_lu_free(&owner);
        emn_sparse_free(&A);
    }

    /* an array of 2 x 2 cells, a MEMS array's, in two halves */
    pieces_matrix(&A, n, 2, perm);
    owner = emn_lu_new();
    st = emn_lu_get_stats(owner);
    rc = emn_lu_factor(owner, &A, NULL);
    res = solved(owner, &A, b, x);
    ok(rc == 0 && st->tiny == 1 && st->parts == 0 && res < 1e-12, "tiny: %d cells of 2, ||Ax-b||/||b|| = %.3g", n / 2, res);
    emn_lu_free(&owner);
    emn_sparse_free(&A);
    free(v1);
    free(x);
    free(b);
    free(perm);
}

/* Symmetric matrices that are not positive definite go to KLU: an
 * indefinite one is solved there, a singular one reported with a column;
 * and one LU moves between L D L' and KLU as its values lose and regain
 * their symmetry. */
static void test_ldl(void)
{
    int n = 50;
    emn_sparse A;
    emn_sparse_init(&A, n);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(&A, j, j);
        if (j) emn_sparse_reserve(&A, j - 1, j), emn_sparse_reserve(&A, j, j - 1);
    }
    emn_sparse_finalize(&A);
    double b[50], x[50];
    /* indefinite with a positive diagonal (eigenvalues 1 - 3 cos(k pi/51)):
     * L D L' is tried and meets a negative pivot; with a negative diagonal
     * entry it is not even tried */
    for (int neg = 0; neg < 2; neg++) {
        for (int j = 0; j < n; j++)
            for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
                A.Ax[p] = A.Ai[p] != j ? -1.5 : neg && j % 2 ? -3.0 : neg ? 3.0 : 1.0;
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        emn_lu *lu = emn_lu_new();
        const emn_lu_stats *st = emn_lu_get_stats(lu);
        bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0 && residual(&A, x, b) < 1e-13;
        ok(good && st->ldl == !neg && st->factors == 1, "ldl: an indefinite matrix%s, solved by KLU (%ld L D L')",
           neg ? " with a negative diagonal" : "", st->ldl);
        emn_lu_free(&lu);
    }
    emn_lu *lu;
    const emn_lu_stats *st;
    /* a floating chain's Laplacian: singular */
    for (int j = 0; j < n; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
            A.Ax[p] = A.Ai[p] == j ? (j == 0 || j == n - 1 ? 1.0 : 2.0) : -1.0;
    lu = emn_lu_new();
    int bad = -5, rc = emn_lu_factor(lu, &A, &bad);
    ok(rc == -1 && bad >= 0 && bad < n, "ldl: a singular Laplacian is reported (column %d)", bad);
    emn_lu_free(&lu);
    /* grounded: positive definite; then asymmetric; then symmetric again */
    lu = emn_lu_new();
    st = emn_lu_get_stats(lu);
    for (int round = 0; round < 3; round++) {
        for (int j = 0; j < n; j++)
            for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
                A.Ax[p] = A.Ai[p] == j ? 2.5 + j : A.Ai[p] < j || round != 1 ? -1.0 : -0.75;
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0 && residual(&A, x, b) < 1e-14;
        ok(good && st->ldl == (round == 2 ? 2 : 1) && st->factors == (round ? 1 : 0) && st->analyses == (round ? 1 : 0),
           "ldl: round %d, %s (%ld L D L', %ld KLU, %ld KLU analyses)", round,
           round == 1 ? "asymmetric by KLU" : "symmetric by L D L'", st->ldl, st->factors, st->analyses);
    }
    emn_lu_free(&lu);
    /* KLU's analysis is made when KLU first factors the pattern, by
     * whichever LU of those that share it: here one sharing the owner's
     * analysis, while the owner has only factored L D L'; the owner then
     * uses the same analysis */
    emn_lu *owner = emn_lu_new(), *other = emn_lu_new_sharing(owner);
    const emn_lu_stats *so = emn_lu_get_stats(owner), *sh = emn_lu_get_stats(other);
    for (int round = 0; round < 3; round++) {
        bool definite = round == 0;
        for (int j = 0; j < n; j++)
            for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++)
                A.Ax[p] = A.Ai[p] != j ? -1.5 : definite ? 3.5 : 1.0;
        for (int i = 0; i < n; i++) b[i] = x[i] = rnd_unit();
        lu = round == 1 ? other : owner;
        bool good = emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0 && residual(&A, x, b) < 1e-13;
        long want_ldl[3][2] = {{1, 0}, {1, 1}, {2, 1}}, want_klu[3][2] = {{0, 0}, {0, 1}, {1, 1}};
        ok(good && so->ldl == want_ldl[round][0] && sh->ldl == want_ldl[round][1] &&
           so->factors == want_klu[round][0] && sh->factors == want_klu[round][1] &&
           so->analyses == (round ? 1 : 0) && sh->analyses == 0,
           "ldl: shared analysis, round %d: %s (owner %ld L D L', %ld KLU; sharer %ld, %ld; KLU analyses %ld, %ld)",
           round, round == 0 ? "the owner by L D L', no KLU analysis" : round == 1 ? "the sharer by KLU, which analyzes"
                                                                                  : "the owner by KLU, analyzed already",
           so->ldl, so->factors, sh->ldl, sh->factors, so->analyses, sh->analyses);
    }
    emn_lu_free(&other);
    emn_lu_free(&owner);
    emn_sparse_free(&A);
}

/* A circuit can end up with no unknowns at all. */
static void test_empty(void)
{
    emn_sparse A;
    emn_sparse_init(&A, 0);
    emn_sparse_finalize(&A);
    emn_lu *lu = emn_lu_new();
    int bad = 3;
    double b[1] = {42};
    int rc = emn_lu_factor(lu, &A, &bad);
    ok(rc == 0 && bad == -1 && emn_lu_solve(lu, b) == 0 && b[0] == 42, "empty: 0 x 0 factors and solves");
    emn_lu_free(&lu);
    emn_sparse_free(&A);
}

/* emn_sym_eigen on a matrix made from known eigenvalues, Q diag(l) Q'
 * with Q a Householder reflection (orthogonal by construction, nothing
 * of the routine's), and on an inductance matrix sum L_b a_b a_b' of
 * +-1 branch incidences a_b, whose null space is that of the incidences:
 * the vectors come out orthonormal, A v = d v, the eigenvalues are the
 * known ones, and those of the singular one at rounding. */
static void test_eigen(void)
{
    enum { M = 7 };
    double l[M] = {3.5, -1.25, 0, 2, 1e-3, 0, 7}, w[M], q[M * M], a[M * M], a0[M * M], d[M], v[M * M];
    double ww = 0;
    for (int i = 0; i < M; i++) {
        w[i] = rnd_unit() + (i == 2 ? 2 : 0);
        ww += w[i] * w[i];
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) q[i * M + j] = (i == j) - 2 * w[i] * w[j] / ww;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < M; j++) {
            double x = 0;
            for (int k = 0; k < M; k++) x += q[i * M + k] * l[k] * q[j * M + k];
            a[i * M + j] = a0[i * M + j] = x;
        }
    emn_sym_eigen(a, M, d, v);
    double orth = 0, res = 0;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < M; j++) {
            double x = 0;
            for (int k = 0; k < M; k++) x += v[i * M + k] * v[j * M + k];
            orth = fmax(orth, fabs(x - (i == j)));
        }
        for (int r = 0; r < M; r++) {
            double x = -d[i] * v[i * M + r];
            for (int k = 0; k < M; k++) x += a0[r * M + k] * v[i * M + k];
            res = fmax(res, fabs(x));
        }
    }
    /* the eigenvalues as a set: each known one matched by a computed one */
    double miss = 0;
    bool used[M] = {false};
    for (int i = 0; i < M; i++) {
        int best = -1;
        for (int k = 0; k < M; k++)
            if (!used[k] && (best < 0 || fabs(d[k] - l[i]) < fabs(d[best] - l[i]))) best = k;
        used[best] = true;
        miss = fmax(miss, fabs(d[best] - l[i]));
    }
    ok(orth < 1e-13 && res < 1e-13 && miss < 1e-13, "eigen: Q diag(l) Q' gives l, orthonormal vectors, A v = d v (%.3g, %.3g, %.3g)",
       orth, res, miss);

    /* loops q1..q5 through four inductors: (q1 - q2 + q4), (q2 + q3 -
     * q5), (q3), (q4): null space {q4 = q3 = 0, q1 = q2, q2 = q5}, one
     * vector (1, 1, 0, 0, 1) / sqrt 3 */
    enum { N = 5 };
    const double L[4] = {1e-3, 1e-2, 1e-4, 1e-3};
    const double inc[4][N] = {{1, -1, 0, 1, 0}, {0, 1, 1, 0, -1}, {0, 0, 1, 0, 0}, {0, 0, 0, 1, 0}};
    double b[N * N] = {0}, e[N], u[N * N];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) b[i * N + j] += L[k] * inc[k][i] * inc[k][j];
    emn_sym_eigen(b, N, e, u);
    int nnull = 0, at = -1;
    double top = 0;
    for (int i = 0; i < N; i++) top = fmax(top, fabs(e[i]));
    for (int i = 0; i < N; i++)
        if (fabs(e[i]) <= 1e-10 * top) {
            nnull++;
            at = i;
        }
    double off = 0;
    for (int i = 0; i < N && at >= 0; i++) {
        double want = (i == 0 || i == 1 || i == 4) / sqrt(3);
        off = fmax(off, fabs(fabs(u[at * N + i]) - want));
    }
    ok(nnull == 1 && off < 1e-12, "eigen: an inductance matrix's one null vector, (1, 1, 0, 0, 1)/sqrt 3 (%d, %.3g)", nnull,
       off);
}

/* Chains that AMD's order cannot halve, solved against a known x: a
 * ring of n nodes (AMD's order cut where it is halfway round, by the
 * two nodes that close the ring) and strips of a grid W nodes wide,
 * each node tied to ground.  Two wide, the strip is cut from AMD's
 * order by two nodes; three wide, the rest of the order after its
 * first half fills more than that cut allows, and METIS's separator
 * cuts it instead (where CHOLMOD has its partition module). */
static void chain_solve(const char *what, int n, int W, bool ring, int want_by)
{
    emn_sparse A;
    emn_sparse_init(&A, n);
    for (int j = 0; j < n; j++) {
        emn_sparse_reserve(&A, j, j);
        int r = j % W;
        int across = ring ? (j + 1) % n : r + 1 < W ? j + 1 : -1, along = !ring && j + W < n ? j + W : -1;
        if (across >= 0) { emn_sparse_reserve(&A, across, j); emn_sparse_reserve(&A, j, across); }
        if (along >= 0) { emn_sparse_reserve(&A, along, j); emn_sparse_reserve(&A, j, along); }
    }
    emn_sparse_finalize(&A);
    double *x = emn_xmalloc((size_t)n * sizeof *x), *want = emn_xmalloc((size_t)n * sizeof *x);
    for (int i = 0; i < n; i++) want[i] = cos(0.001 * i) + (i % 7) * 0.1;
    for (int i = 0; i < n; i++) x[i] = 0;
    for (int j = 0; j < n; j++)
        for (int p = A.Ap[j]; p < A.Ap[j + 1]; p++) {
            A.Ax[p] = A.Ai[p] == j ? 4.5 : -1.0;
            x[A.Ai[p]] += A.Ax[p] * want[j];
        }
    emn_lu *lu = emn_lu_new();
    const emn_lu_stats *st = emn_lu_get_stats(lu);
    ok(emn_lu_factor(lu, &A, NULL) == 0 && emn_lu_solve(lu, x) == 0, "%s: factor and solve", what);
    double err = 0;
    for (int i = 0; i < n; i++) err = fmax(err, fabs(x[i] - want[i]));
    ok(err < 1e-12, "%s: max error %.3g", what, err);
#if !(defined(HAVE_CHOLMOD_BISECT) && defined(HAVE_CHOLMOD_CAMD))
    if (want_by == 1) want_by = -1;
#endif
    ok(st->ldl == 1 && st->halves == (want_by >= 0) && st->cut_by[0] == (want_by == 0) &&
           st->cut_by[1] == (want_by == 1),
       "%s: solved in two halves, cut %s (%ld halves, cut by order %ld, by METIS %ld)", what,
       want_by == 0 ? "from AMD's order" : want_by == 1 ? "by METIS's separator" : "not at all", st->halves,
       st->cut_by[0], st->cut_by[1]);
    emn_lu_free(&lu);
    free(x);
    free(want);
    emn_sparse_free(&A);
}

static void test_chains(void)
{
    chain_solve("ring", 60000, 1, true, 0);
    chain_solve("strip 2 wide", 80000, 2, false, 0);
    chain_solve("strip 3 wide", 90000, 3, false, 1);
}

int main(void)
{

    test_empty();
    test_eigen();
    test_pattern();
    test_random_solve();
    test_refactor_path();
    test_borrow();
    test_keep_pattern();
    test_singular();
    test_tridiagonal();
    test_chains();
    test_network();
    test_ldl();
    test_halves();
    test_flat();
    test_super();
    test_hint();
    test_super_dense();
    test_super_random();
    test_single();
    test_parts();
    test_tiny();
    test_large_build();
    return tap_done();
}
