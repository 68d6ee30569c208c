/*
 * wave.h: independent source waveforms (SIN, PULSE, PWL, EXP, expressions
 * of time): their value, time derivative and time integral, and their
 * breakpoints.
 *
 * The integral is needed because a formulation that eliminates a source
 * carries the source's integral in its coordinates: a current source's
 * charge q_s(t) in the charge formulation, a voltage source's flux linkage
 * Phi(t) in the flux formulation.  It is exact for the closed-form
 * functions and computed by adaptive Gauss-Kronrod quadrature (cached, so
 * integrating forward in time costs only the new interval) for expressions.
 */
#ifndef EMN_WAVE_H
#define EMN_WAVE_H

#include "netlist.h"

/* Fill SPICE's defaults for omitted arguments, which depend on the .tran
 * step and stop time (PULSE: TR = TF = tstep, PW = PER = tstop; SIN: FREQ =
 * 1/tstop; EXP: TD1 = 0, TAU1 = TAU2 = tstep, TD2 = TD1 + tstep), and check
 * what only then can be checked.  Returns 0, or -1 after recording an error
 * at s->loc (e.g. PULSE with PER < TR+PW+TF is allowed by SPICE and is not
 * an error; a zero TAU is). */
int emn_wave_prepare(emn_source *s, double tstep, double tstop, emn_diag *d,
                     const char *elem_name);

/* Transient value at time t >= 0.  Without a function: the DC value. */
double emn_wave_value(const emn_source *s, double t);
/* d/dt of the transient value (one-sided from the right at corners). */
double emn_wave_deriv(const emn_source *s, double t);
/* Integral of the transient value from 0 to t. */
double emn_wave_integral(emn_source *s, double t);
/* The value the operating point uses: DC if given, else the function at 0. */
double emn_wave_dc(const emn_source *s);

/* The first breakpoint strictly after t (corners of PULSE and PWL, the
 * delays of SIN and EXP), or INFINITY if there is none. */
double emn_wave_next_break(const emn_source *s, double t);

#endif
