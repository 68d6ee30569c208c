/*
 * elem.c: energy, dissipation and power of every element kind, in both
 * formulations (spec formulations section 2).  Adding an element kind
 * means adding its row here and its syntax to the front end.
 *
 * Sign conventions (spec netlist section 3): branch quantities run from n+
 * to n-; a voltage source E absorbs power E*i, so its generalized force has
 * power -E*i; a current source I drives I from n+ through itself to n-,
 * power -I*e; a force F pushes m1 in +x and m2 in -x, power F*(u1-u2).
 */
#include "config.h"
#include "elem.h"

#include <stdlib.h>

#define NUM(v) emn_expr_num(ar, (v))
#define ADD(a, b) emn_expr_add(ar, (a), (b))
#define SUB(a, b) emn_expr_sub(ar, (a), (b))
#define MUL(a, b) emn_expr_mul(ar, (a), (b))
#define DIV(a, b) emn_expr_div(ar, (a), (b))
#define SQ(a) emn_expr_pow(ar, (a), NUM(2))

/* (1/2) c a^2 */
static const emn_expr *half_sq(emn_arena *ar, const emn_expr *c, const emn_expr *a)
{
    return MUL(DIV(c, NUM(2)), SQ(a));
}

void emn_elem_energy(emn_elem_io *io)
{
    emn_arena *ar = io->ar;
    bool charge = io->form == EMN_FORM_CHARGE;
    io->L = io->D = io->P = NULL;
    switch (io->kind) {                 /* ORDER emn_kind */
    case EMN_R:                         /* R i^2/2  |  e^2/(2R) */
        io->D = charge ? half_sq(ar, io->val, io->br) : DIV(SQ(io->br), MUL(NUM(2), io->val));
        break;
    case EMN_C:                         /* -Q^2/(2C(x))  |  C(x) e^2/2 */
        io->L = charge ? emn_expr_neg(ar, DIV(SQ(io->bv), MUL(NUM(2), io->val)))
                       : half_sq(ar, io->val, io->br);
        break;
    case EMN_L:                         /* L(x) i^2/2  |  -Lambda^2/(2L(x)) */
        io->L = charge ? half_sq(ar, io->val, io->br)
                       : emn_expr_neg(ar, DIV(SQ(io->bv), MUL(NUM(2), io->val)));
        break;
    case EMN_K:                         /* charge: M i1 i2, M = k sqrt(L1 L2) */
        if (charge) {
            const emn_expr *M = MUL(io->val, emn_expr_call(ar, EMN_FN_SQRT, 1,
                                    (const emn_expr *[]){MUL(io->lval[0], io->lval[1])}, EMN_NOLOC));
            io->L = MUL(M, MUL(io->lrate[0], io->lrate[1]));
        }
        break;
    case EMN_V:                         /* charge: power -E i; flux: eliminated */
        if (charge) io->P = emn_expr_neg(ar, MUL(io->sv, io->br));
        break;
    case EMN_I:                         /* flux: power -I e; charge: eliminated */
        if (!charge) io->P = emn_expr_neg(ar, MUL(io->sv, io->br));
        break;
    case EMN_T:                         /* charge: T i (x+ - x-), a gyrator; flux: eliminated */
        if (charge) io->L = MUL(io->val, MUL(io->br, SUB(io->xv[2], io->xv[3])));
        break;
    case EMN_M:                         /* M u^2/2 */
        io->L = half_sq(ar, io->val, io->xr[0]);
        break;
    case EMN_S:                         /* -k (x1 - x2 - X0)^2/2 */
        io->L = emn_expr_neg(ar, half_sq(ar, io->val, SUB(SUB(io->xv[0], io->xv[1]), io->x0)));
        break;
    case EMN_D:                         /* b (u1 - u2)^2/2 */
        io->D = half_sq(ar, io->val, SUB(io->xr[0], io->xr[1]));
        break;
    case EMN_F:                         /* power F (u1 - u2) */
        io->P = MUL(io->sv, SUB(io->xr[0], io->xr[1]));
        break;
    case EMN_J:                         /* a constraint: no energy of its own */
    case EMN_NKINDS:
        break;
    }
}

const emn_expr *emn_elem_coupled_flux(emn_arena *ar, int n, const emn_expr *const *Lmat,
                                      const emn_expr *const *lam)
{
    /* Gauss-Jordan on [Lmat | I] without pivoting: Lmat is symmetric
     * positive definite whenever every |k| < 1, so its pivots are positive. */
    const emn_expr **a = calloc((size_t)(n * 2 * n), sizeof *a);
    int w = 2 * n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            a[i * w + j] = Lmat[i * n + j];
            a[i * w + n + j] = NUM(i == j ? 1 : 0);
        }
    for (int c = 0; c < n; c++) {
        const emn_expr *piv = a[c * w + c];
        for (int j = 0; j < w; j++) a[c * w + j] = DIV(a[c * w + j], piv);
        for (int r = 0; r < n; r++) {
            if (r == c) continue;
            const emn_expr *f = a[r * w + c];
            double fv;
            if (emn_expr_is_const(f, &fv) && fv == 0) continue;
            for (int j = 0; j < w; j++)
                a[r * w + j] = SUB(a[r * w + j], MUL(f, a[c * w + j]));
        }
    }
    const emn_expr *sum = NUM(0);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            sum = ADD(sum, MUL(a[i * w + n + j], MUL(lam[i], lam[j])));
    free(a);
    return emn_expr_neg(ar, DIV(sum, NUM(2)));
}
