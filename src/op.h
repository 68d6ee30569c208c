/*
 * op.h: the operating point (spec netlist section 4.1) as a steady state of
 * Lagrange's equations.
 *
 * Under DC sources a steady state is a uniform motion z(t) = z0 + w t with
 * constant velocities w: a potential-bearing coordinate rests, a cyclic one
 * (a motor shaft with no spring, a capacitor-only node's flux) moves at a
 * constant rate.  Along it the forces stay constant and balance the rate of
 * change of the momenta (a moving coil's back-emf is such a rate):
 *     R1 = F(z0, w) - dp/dt = 0,      R2 = dF/dt = 0,
 * both rates taken along the motion (form.h: emn_form_rates).  Newton's
 * method on (z0, w) with KLU solves them (a linear circuit whose
 * stiffness holds each coordinate alone: a smaller system, op.c);
 * directions the equations leave free (the absolute flux of a node, the
 * charge of a floating node) keep their initial values through a proximal
 * term in the Newton matrix only, so the converged point satisfies
 * R1 = R2 = 0 exactly.  If plain Newton fails, the sources are stepped up
 * from zero.
 */
#ifndef EMN_OP_H
#define EMN_OP_H

#include "form.h"

typedef struct emn_op_stats {
    long iterations, source_steps, factorizations;
} emn_op_stats;

/*
 * Solve for the steady state.  z and w hold the initial guess on entry
 * and the solution on return; p0 (may be NULL: zero) holds the momenta that
 * directions nothing else fixes keep (the charge IC= leaves on a floating
 * node, the flux of a loop of inductors).  reltol scales the convergence test.  Returns 0, or
 * -1 when no steady state was found; then *bad (if non-NULL) is the
 * coordinate with the largest residual and msg says what happened.
 */
int emn_op_solve(emn_form *f, double reltol, const double *p0, double *z, double *w, int *bad, char *msg,
                 int msglen, emn_op_stats *st);

#endif
