/*
 * elem.h: the physics of each element kind, as energy functions.
 *
 * Given symbolic expressions for an element's branch quantities (in
 * whatever variables the caller chose: a term's local slots for numerics,
 * global coordinate names for -lagrangian), return its contribution to the
 * Lagrangian L, the dissipation function D, and the power P of the
 * generalized forces it applies (Q = dP/dw).  This is the table of spec
 * formulations section 2 and nothing else: forces, back-emfs and
 * Jacobians all come from differentiating these.
 */
#ifndef EMN_ELEM_H
#define EMN_ELEM_H

#include "expr.h"
#include "netlist.h"

typedef struct emn_elem_io {
    /* in */
    emn_arena *ar;
    emn_form_kind form;
    emn_kind kind;
    const emn_expr *bv, *br;    /* branch value (charge Q or flux Lambda) and rate (i or e) */
    const emn_expr *xv[4], *xr[4]; /* displacement and velocity of mechanical terminal k
                                      (node position k in the element line) */
    const emn_expr *val;        /* element value (may depend on displacements) */
    const emn_expr *x0;         /* spring rest length */
    const emn_expr *sv;         /* source value (V, I, F) */
    /* K in the charge formulation: the two inductances and coil currents */
    const emn_expr *lval[2], *lrate[2];
    /* out: NULL means zero */
    const emn_expr *L, *D, *P;
} emn_elem_io;

/* Fill io->L, io->D, io->P for a single element.  K in the flux formulation
 * is handled by emn_elem_coupled_flux; T and V in the flux formulation and
 * I in the charge formulation are eliminated and contribute nothing here. */
void emn_elem_energy(emn_elem_io *io);

/*
 * Magnetic energy of n mutually coupled inductors in the flux formulation:
 * returns -1/2 Lambda' Lmat^-1 Lambda, with Lmat[i*n+j] the symbolic
 * inductance matrix (self inductances on the diagonal, k*sqrt(Li*Lj) off
 * it) and lam[i] the branch flux linkages.  The inverse is formed
 * symbolically so that its dependence on displacements is differentiated
 * exactly.
 */
const emn_expr *emn_elem_coupled_flux(emn_arena *ar, int n, const emn_expr *const *Lmat,
                                      const emn_expr *const *lam);

#endif
