/*
 * test_integ.c: the steps a linear circuit takes around the corners of a
 * PWL source, and the values it finds there against the closed form.
 *
 * An RC low-pass (tau = 100 ns) driven by a PWL voltage between 1 and 2 V
 * whose corners are at whole multiples of tmax = 1 ns but one, integrated
 * with the trapezoidal rule and with Gear.  tau is a hundred steps and the
 * node stays near volts, so the error test never shortens a step and what
 * is checked is the step control alone (integ.c, emn_integ_step):
 * - every corner is a step's end;
 * - after a corner, the first-order step h0 (the ladder step nearest a
 *   tenth of the full one) is kept once and then doubled, h0, h0, 2 h0,
 *   ..., so that the steps come back onto the grid of full steps from the
 *   corner: every later step up to the next corner ends at a whole number
 *   of full steps from it, and one a whole number of full steps away is
 *   met by a full step, not a short landing one;
 * - the first step is also the ladder step nearest a tenth of tmax, so
 *   that its factorization is one the later steps use too.
 * The node voltage at every step is checked against the closed form of the
 * RC's response to a piecewise linear input.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "integ.h"
#include "netlist.h"
#include "sparse.h"
#include "tap.h"

#define TAU 100e-9
#define HMAX 1e-9
#define TSTOP 100e-9
#define NCORNER 6

/* The source's corners (time, volts); 43.3 ns is off the grid. */
static const double ct[NCORNER] = {0, 10e-9, 20e-9, 30e-9, 43.3e-9, 60e-9};
static const double cv[NCORNER] = {1, 1, 2, 2, 1.25, 1.25};

static const char deck[] = "RC and PWL\n"
                           "V1 in 0 PWL(0 1 10n 1 20n 2 30n 2 43.3n 1.25 60n 1.25)\n"
                           "R1 in a 1k\nC1 a 0 100p\n.tran 1n 100n\n.end\n";

/* v(a) at t: on each segment of the input u = u0 + s (t - t0),
 * v = u - s tau + (v0 - u0 + s tau) exp(-(t - t0) / tau). */
static double exact(double t)
{
    double v = cv[0];
    for (int k = 0; k < NCORNER; k++) {
        double t0 = ct[k], t1 = k + 1 < NCORNER ? ct[k + 1] : INFINITY;
        double s = k + 1 < NCORNER ? (cv[k + 1] - cv[k]) / (t1 - t0) : 0;
        double te = fmin(t, t1);
        v = cv[k] + s * (te - t0) - s * TAU + (v - cv[k] + s * TAU) * exp(-(te - t0) / TAU);
        if (t <= t1) break;
    }
    return v;
}

/* Is x a whole multiple of HMAX (within rounding)? */
static int on_grid(double x)
{
    double k = round(x / HMAX);
    return fabs(x - k * HMAX) <= 1e-9 * HMAX;
}

static void run(emn_method method, const char *what)
{
    emn_diag d = {0};
    emn_circuit *c = emn_netlist_read_text("t.cir", deck, (long)strlen(deck), &d);
    if (!ok(c != NULL && d.nerrors == 0, "%s: deck reads", what)) return;
    emn_form *f = emn_form_build(c, EMN_FORM_FLUX, &d);
    if (!ok(f != NULL && f->n == 1 && emn_form_is_linear(f), "%s: one coordinate, linear", what)) {
        emn_netlist_free(&c);
        return;
    }
    emn_integ_opts o = {c->opt.reltol, c->opt.abstol, c->opt.vntol, c->opt.chgtol, method, 2, c->opt.itl4,
                        HMAX, HMAX * 1e-11, TSTOP};
    emn_integ *it = emn_integ_new(f, &o);
    double z0 = 0, p0 = 100e-12 * cv[0];      /* at rest at 1 V: the capacitor's charge */
    emn_form_set_time(f, 0);
    ok(emn_integ_start(it, 0, &z0, &p0, NULL) == 0, "%s: starts", what);

    int hit[NCORNER] = {0}, steps = 0, off = 0, shape = 0, landing = 0;
    double worst = 0, corner = 0, prev_t = 0;
    int since = 0;          /* steps since the last corner */
    double h0 = 0;          /* the first step after it */
    double first_h = 0;
    while (it->t < TSTOP * (1 - 1e-12) && steps < 10000) {
        if (emn_integ_step(it, TSTOP) != 0) break;
        steps++;
        double t = it->t, h = t - prev_t;
        prev_t = t;
        worst = fmax(worst, fabs(it->w[0][0] - exact(t)));
        since++;
        if (since == 1) h0 = h;
        if (steps == 1) first_h = h;
        /* h0, h0, 2 h0, 4 h0, ... until the full step */
        double want = since == 1 ? h0 : fmin(HMAX, ldexp(h0, since - 2));
        int k = 1;
        while (k < NCORNER && ct[k] < t - 1e-12 * TSTOP) k++;
        int at_corner = k < NCORNER && fabs(t - ct[k]) <= 1e-12 * TSTOP;
        if (!at_corner || on_grid(ct[k] - corner)) {
            if (fabs(h - want) > 1e-9 * want) shape++;
            if (t - corner >= HMAX * (1 - 1e-9) && !on_grid(t - corner)) off++;
        }
        if (at_corner && on_grid(ct[k] - corner) && fabs(h - HMAX) > 1e-9 * HMAX && ct[k] - corner > 4 * HMAX)
            landing++;
        if (at_corner) {
            hit[k] = 1;
            corner = t;
            since = 0;
        }
    }
    ok(fabs(it->t - TSTOP) <= 1e-12 * TSTOP, "%s: reaches %g s (t = %.12g after %d steps)", what, TSTOP, it->t,
       steps);
    int missed = 0;
    for (int k = 1; k < NCORNER; k++) missed += !hit[k];
    ok(missed == 0, "%s: every corner is a step's end (%d missed)", what, missed);
    ok(shape == 0, "%s: after each corner h0, h0, 2 h0, ..., then full steps (%d steps otherwise)", what, shape);
    ok(off == 0, "%s: the steps past the first full step from a corner end on its grid (%d do not)", what, off);
    ok(landing == 0, "%s: a corner whole steps away is met by a full step (%d short landings)", what, landing);
    /* the error test holds each step to reltol (1e-3) of a signal of 1 V */
    long factors = 0, refactors = 0;
    emn_integ_lu_stats(it, &factors, &refactors);
    ok(fabs(first_h - HMAX / 8) <= 1e-9 * HMAX, "%s: the first step is tmax/8, the ladder's nearest to a tenth (%g s)",
       what, first_h);
    /* the start's, the ladder's four (h0 = tmax/8 first order is tmax/4
     * trapezoidal) and the two landings on the corner off the grid and on
     * the one after it */
    if (method == EMN_METHOD_TRAP)
        ok(factors + refactors == 7, "%s: seven factorizations, one per step size (%ld)", what, factors + refactors);
    ok(worst < 1e-3, "%s: v(a) within 1e-3 V of the closed form at every step (worst %.3g V)", what, worst);
    emn_integ_free(&it);
    emn_form_free(&f);
    emn_netlist_free(&c);
    emn_diag_free(&d);
}

/* A linear circuit's factorizations kept in single precision
 * (emn_lu_allow_single), on a K x K grid made supernodal at this size:
 * every node charged from one source through its own 1k, holding 1n to
 * ground, neighbours joined by rgrid, so that all nodes follow the RC's
 * closed-form response to the source's 10 ns ramp to 1 V (tau = 1 us).
 * With 10 ohm the Newton matrices are well conditioned and kept in
 * single precision; with 1 nohm (conductances of 1e9 against a C / h of
 * 0.04) a solve in single precision would be off by far more than the
 * tolerance allows, the probe finds so, and they stay in double.  Either
 * way the nodes keep to the closed form. */
static double rc_ramp(double t)
{
    double tau = 1e-6, tr = 1e-8;
    if (t <= tr) return (t - tau * (1 - exp(-t / tau))) / tr;
    return 1 - (tau / tr) * (exp(tr / tau) - 1) * exp(-t / tau);
}

static void grid(const char *rgrid, bool want_single, double within, const char *what)
{
    enum { K = 40 };
    size_t cap = 200000, len = 0;
    char *deck = malloc(cap);
    len += (size_t)snprintf(deck + len, cap - len, "grid\nV1 in 0 PWL(0 0 10n 1)\n");
    for (int i = 0; i < K; i++)
        for (int j = 0; j < K; j++) {
            len += (size_t)snprintf(deck + len, cap - len, "RG%d_%d in n%d_%d 1k\nC%d_%d n%d_%d 0 1n\n", i, j, i,
                                    j, i, j, i, j);
            if (i + 1 < K)
                len += (size_t)snprintf(deck + len, cap - len, "RX%d_%d n%d_%d n%d_%d %s\n", i, j, i, j, i + 1, j,
                                        rgrid);
            if (j + 1 < K)
                len += (size_t)snprintf(deck + len, cap - len, "RY%d_%d n%d_%d n%d_%d %s\n", i, j, i, j, i, j + 1,
                                        rgrid);
        }
    len += (size_t)snprintf(deck + len, cap - len, ".tran 50n 5u\n.end\n");
    emn_diag d = {0};
    emn_circuit *c = emn_netlist_read_text("grid.cir", deck, (long)len, &d);
    free(deck);
    if (!ok(c != NULL && d.nerrors == 0, "%s: deck reads", what)) return;
    emn_form *f = emn_form_build(c, EMN_FORM_FLUX, &d);
    if (!ok(f != NULL && f->n == K * K && emn_form_is_linear(f), "%s: %d coordinates, linear", what, K * K)) {
        emn_netlist_free(&c);
        return;
    }
    double tstop = 5e-6;
    emn_integ_opts o = {c->opt.reltol, c->opt.abstol, c->opt.vntol, c->opt.chgtol, EMN_METHOD_TRAP, 2,
                        c->opt.itl4, 50e-9, 50e-9 * 1e-11, tstop};
    emn_integ *it = emn_integ_new(f, &o);
    emn_lu_set_super_flops(it->lu, 0);
    double *z0 = calloc((size_t)f->n, sizeof(double)), *p0 = calloc((size_t)f->n, sizeof(double));
    emn_form_set_time(f, 0);
    ok(emn_integ_start(it, 0, z0, p0, NULL) == 0, "%s: starts", what);
    int steps = 0;
    bool single = false, dbl = false;
    double worst = 0;
    while (it->t < tstop * (1 - 1e-12) && steps < 10000) {
        if (emn_integ_step(it, tstop) != 0) break;
        steps++;
        for (int k = 0; k < EMN_LU_CACHE; k++)
            if (it->cache_lu[k] && emn_lu_get_stats(it->cache_lu[k])->super) {
                single |= emn_lu_single(it->cache_lu[k]);
                dbl |= !emn_lu_single(it->cache_lu[k]);
            }
        for (int j = 0; j < f->n; j++) worst = fmax(worst, fabs(it->w[0][j] - rc_ramp(it->t)));
    }
    ok(fabs(it->t - tstop) <= 1e-12 * tstop, "%s: reaches %g s (after %d steps)", what, tstop, steps);
    if (want_single)
        ok(single && !dbl, "%s: every factorization is kept in single precision", what);
    else    /* but for the consistent velocities' (a = 1e20), which C holds */
        ok(dbl, "%s: the steps' factorizations are kept in double", what);
    ok(worst < within, "%s: every node within %g V of the closed form at every step (worst %.3g V)", what, within,
       worst);
    free(z0);
    free(p0);
    emn_integ_free(&it);
    emn_form_free(&f);
    emn_netlist_free(&c);
    emn_diag_free(&d);
}

int main(void)
{
    run(EMN_METHOD_TRAP, "trapezoidal");
    run(EMN_METHOD_GEAR, "gear");
    grid("10", true, 1e-4, "single precision");
    grid("1n", false, 1e-4, "single precision, ill-conditioned");
    return tap_done();
}
