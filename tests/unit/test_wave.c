/*
 * test_wave.c: source waveforms against hand-computed values, their
 * integrals against an independent composite Simpson quadrature (split at
 * the corners, which the test lists by hand), their derivatives against
 * central differences, and their breakpoint sequences against lists
 * written out by hand.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "tap.h"
#include "wave.h"

static emn_diag diag;

static emn_source make(emn_wave_kind kind, int nargs, const double *args)
{
    static double state[32][EMN_SOURCE_STATE];      /* as the netlist makes it */
    static int used;
    emn_source s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.nargs = nargs;
    s.args = (double *)args;
    if (kind != EMN_WAVE_NONE) s.p = state[used++ % 32];
    return s;
}

static int prepare(emn_source *s, double tstep, double tstop, const char *name)
{
    int before = diag.nerrors;
    int rc = emn_wave_prepare(s, tstep, tstop, &diag, name);
    return rc == 0 && diag.nerrors == before ? 0 : -1;
}

/* Composite Simpson on [a, b] with n (even) panels of the value.  The
 * value at b is taken a hair to the left, so that a jump at b (the
 * functions are right-continuous) does not leak into this piece. */
static double simpson(const emn_source *s, double a, double b, long n)
{
    if (b <= a) return 0;
    if (n % 2) n++;
    double h = (b - a) / n, sum = emn_wave_value(s, a) + emn_wave_value(s, b - (b - a) * 1e-13);
    for (long i = 1; i < n; i++) sum += (i % 2 ? 4 : 2) * emn_wave_value(s, a + i * h);
    return sum * h / 3;
}

/* Integral from 0 to t by Simpson, split at the given corners so that
 * every piece is smooth: 10^6 panels over [0, span], at least 2000 per
 * piece. */
static double ref_integral(const emn_source *s, double t, const double *corners, int nc, double span)
{
    double sum = 0, a = 0;
    for (int k = 0; k <= nc; k++) {
        double b = k < nc ? corners[k] : t;
        if (b > t) b = t;
        if (b > a) {
            long n = (long)(1e6 * (b - a) / span);
            if (n < 2000) n = 2000;
            sum += simpson(s, a, b, n);
            a = b;
        }
    }
    return sum;
}

static double fd(const emn_source *s, double t, double h)
{
    return (emn_wave_value(s, t + h) - emn_wave_value(s, t - h)) / (2 * h);
}

/* --------------------------------------------------------------- SIN */

static void test_sin(void)
{
    /* SIN(0 1 1k): quarter period peaks */
    double a1[] = {0, 1, 1e3};
    emn_source s = make(EMN_WAVE_SIN, 3, a1);
    ok(prepare(&s, 1e-6, 2e-3, "V1") == 0, "sin: prepare");
    ok_close(emn_wave_value(&s, 0.25e-3), 1.0, 1e-14, "sin: peak at T/4");
    ok_close(emn_wave_value(&s, 0.75e-3), -1.0, 1e-14, "sin: trough at 3T/4");
    ok_close(emn_wave_integral(&s, 0.5e-3), 1 / (M_PI * 1e3), 1e-14, "sin: half-period integral 1/(pi f)");
    ok_close(emn_wave_integral(&s, 1e-3), 0.0, 1e-16, "sin: full-period integral 0");
    ok_close(emn_wave_deriv(&s, 0), 2 * M_PI * 1e3, 1e-12, "sin: slope at 0 is 2 pi f");
    ok(emn_wave_dc(&s) == 0, "sin: dc from the function at 0");

    /* defaults: FREQ = 1/tstop */
    double a2[] = {1, 3};
    s = make(EMN_WAVE_SIN, 2, a2);
    ok(prepare(&s, 1e-6, 4e-3, "V2") == 0, "sin defaults: prepare");
    ok_close(emn_wave_value(&s, 1e-3), 4.0, 1e-14, "sin defaults: FREQ=1/tstop, peak at tstop/4");
    ok_close(emn_wave_integral(&s, 2e-3), 2e-3 + 3 * 4e-3 / M_PI, 1e-14, "sin defaults: half-period integral");
    ok(emn_wave_next_break(&s, 0) == INFINITY, "sin defaults: no breakpoint without delay");

    /* delay, damping and phase: SIN(0.5 2 1k 1m 300 30) */
    double a3[] = {0.5, 2, 1e3, 1e-3, 300, 30};
    s = make(EMN_WAVE_SIN, 6, a3);
    ok(prepare(&s, 1e-6, 5e-3, "V3") == 0, "sin damped: prepare");
    ok_close(emn_wave_value(&s, 0.4e-3), 0.5 + 2 * 0.5, 1e-14, "sin damped: before TD holds VO + VA sin(phase)");
    /* at t = TD + 0.25 ms: phase 90 + 30 degrees, damping exp(-300*0.25e-3) */
    ok_close(emn_wave_value(&s, 1.25e-3), 0.5 + 2 * exp(-0.075) * sin(2 * M_PI / 3), 1e-14,
             "sin damped: value after the delay");
    ok(emn_wave_next_break(&s, 0) == 1e-3 && emn_wave_next_break(&s, 1e-3) == INFINITY,
       "sin damped: breakpoint at TD only");
    double corners[] = {1e-3};
    double ts[] = {0.3e-3, 1e-3, 1.0001e-3, 1.37e-3, 2.5e-3, 3.9e-3, 5e-3};
    double worst = 0;
    for (int i = 0; i < 7; i++) {
        double want = ref_integral(&s, ts[i], corners, 1, 5e-3);
        double got = emn_wave_integral(&s, ts[i]);
        worst = fmax(worst, fabs(got - want));
    }
    ok(worst < 1e-13, "sin damped: integral matches Simpson at 7 times (max err %.2g)", worst);
    worst = 0;
    for (double t = 1.01e-3; t < 5e-3; t += 0.173e-3) {
        double h = 1e-8;
        worst = fmax(worst, fabs(emn_wave_deriv(&s, t) - fd(&s, t, h)) / (2 * M_PI * 1e3 * 2));
    }
    ok(worst < 1e-6, "sin damped: derivative matches central differences (rel %.2g)", worst);
    ok(emn_wave_deriv(&s, 0.5e-3) == 0, "sin damped: flat before TD");

    /* negative delay: the sine started before t = 0 */
    double a4[] = {0, 1, 250, -1e-3};
    s = make(EMN_WAVE_SIN, 4, a4);
    ok(prepare(&s, 1e-6, 4e-3, "V4") == 0, "sin negative TD: prepare");
    ok_close(emn_wave_value(&s, 0), 1.0, 1e-14, "sin negative TD: already at the peak at 0");
    /* integral of sin(w (t + 1m)) over [0, 1m] = (cos(pi/2) - cos(pi)) / w */
    ok_close(emn_wave_integral(&s, 1e-3), 1 / (2 * M_PI * 250), 1e-14, "sin negative TD: integral by hand");
}

/* ------------------------------------------------------------- PULSE */

static void test_pulse(void)
{
    /* PULSE(0 1 1u 1u 1u 3u 10u), tstop 35u */
    double a[] = {0, 1, 1e-6, 1e-6, 1e-6, 3e-6, 10e-6};
    emn_source s = make(EMN_WAVE_PULSE, 7, a);
    ok(prepare(&s, 0.1e-6, 35e-6, "V1") == 0, "pulse: prepare");
    ok(emn_wave_value(&s, 0.5e-6) == 0, "pulse: V1 before TD");
    ok_close(emn_wave_value(&s, 1.5e-6), 0.5, 1e-12, "pulse: mid-rise");
    ok_close(emn_wave_value(&s, 3e-6), 1.0, 1e-12, "pulse: top");
    ok_close(emn_wave_value(&s, 5.25e-6), 0.75, 1e-9, "pulse: quarter into the fall");
    ok_close(emn_wave_value(&s, 8e-6), 0.0, 1e-12, "pulse: back to V1");
    ok_close(emn_wave_value(&s, 21.5e-6), 0.5, 1e-9, "pulse: mid-rise of the third period");
    ok_close(emn_wave_value(&s, 24e-6), 1.0, 1e-12, "pulse: top of the third period");
    ok_close(emn_wave_deriv(&s, 11.5e-6), 1e6, 1e-9, "pulse: rise slope");
    ok_close(emn_wave_deriv(&s, 25.5e-6), -1e6, 1e-9, "pulse: fall slope");
    ok(emn_wave_deriv(&s, 13e-6) == 0, "pulse: flat top");
    ok_close(emn_wave_deriv(&s, emn_wave_next_break(&s, 10.5e-6)), 1e6, 1e-9,
             "pulse: right derivative at the rise corner");

    /* each period holds 1u/2 + 3u + 1u/2 = 4u V s */
    ok_close(emn_wave_integral(&s, 31e-6), 12e-6, 1e-12, "pulse: three whole periods integrate to 12u");
    ok_close(emn_wave_integral(&s, 13e-6), 4e-6 + 0.5e-6 + 1e-6, 1e-12, "pulse: partial period by hand");

    double corners[64];
    int nc = 0;
    for (int k = 0; k < 4; k++) {
        double base = 1e-6 + k * 10e-6;
        corners[nc++] = base;
        corners[nc++] = base + 1e-6;
        corners[nc++] = base + 4e-6;
        corners[nc++] = base + 5e-6;
    }
    double worst = 0;
    for (double t = 0.37e-6; t <= 35e-6; t += 1.13e-6) {
        double want = ref_integral(&s, t, corners, nc, 35e-6);
        worst = fmax(worst, fabs(emn_wave_integral(&s, t) - want));
    }
    ok(worst < 1e-15, "pulse: integral matches Simpson at 31 times across periods (max err %.2g)", worst);

    /* breakpoints by hand: 1 2 5 6 11 12 15 16 21 22 25 26 31 32 (us) */
    double want[] = {1, 2, 5, 6, 11, 12, 15, 16, 21, 22, 25, 26, 31, 32};
    int n = 0, good = 1;
    for (double t = 0; (t = emn_wave_next_break(&s, t)) < INFINITY; n++)
        if (n >= 14 || fabs(t - want[n] * 1e-6) > 1e-18) good = 0;
    ok(good && n == 14, "pulse: 14 corners in 3.5 periods (%d)", n);
    ok_close(emn_wave_next_break(&s, 15.5e-6), 16e-6, 1e-15, "pulse: next corner from inside a period");
    double c16 = emn_wave_next_break(&s, 15.5e-6);
    ok_close(emn_wave_next_break(&s, c16), 21e-6, 1e-15, "pulse: next corner from a corner");
    /* at the corner it returned, the function is on the corner's right */
    double c21 = emn_wave_next_break(&s, c16);
    ok_close(emn_wave_deriv(&s, c21), 1e6, 1e-9, "pulse: rising slope at the corner time next_break returned");

    /* defaults: PULSE(0 5), tstep 1u, tstop 100u: TR = TF = 1u, PW = PER = 100u */
    double d[] = {0, 5};
    s = make(EMN_WAVE_PULSE, 2, d);
    ok(prepare(&s, 1e-6, 100e-6, "V2") == 0, "pulse defaults: prepare");
    ok_close(emn_wave_value(&s, 0.5e-6), 2.5, 1e-9, "pulse defaults: TR = tstep");
    ok_close(emn_wave_value(&s, 50e-6), 5, 1e-12, "pulse defaults: PW = tstop");
    ok_close(emn_wave_integral(&s, 60e-6), 5 * (60e-6 - 0.5e-6), 1e-12, "pulse defaults: integral");
    /* corners 0 and 1u; the fall would start at 101u, after the next
     * period begins at PER = 100u = tstop, the last corner */
    ok_close(emn_wave_next_break(&s, 0), 1e-6, 1e-15, "pulse defaults: corner at the end of the rise");
    ok_close(emn_wave_next_break(&s, 1e-6), 100e-6, 1e-15, "pulse defaults: next period at tstop");
    ok(emn_wave_next_break(&s, 100e-6) == INFINITY, "pulse defaults: nothing after tstop");

    /* explicit zeros mean the defaults, as in ngspice */
    double z[] = {0, 5, 0, 0, 0, 20e-6, 40e-6};
    s = make(EMN_WAVE_PULSE, 7, z);
    ok(prepare(&s, 1e-6, 100e-6, "V3") == 0, "pulse zero TR: prepare");
    ok_close(emn_wave_value(&s, 0.5e-6), 2.5, 1e-9, "pulse zero TR: becomes tstep");

    /* period shorter than the pulse (truncated) and a negative delay */
    double tr[] = {-1, 2, -3e-3, 1e-3, 2e-3, 2e-3, 4e-3};
    s = make(EMN_WAVE_PULSE, 7, tr);
    ok(prepare(&s, 1e-5, 20e-3, "V4") == 0, "pulse truncated: prepare");
    /* t = 0.5m is 3.5 ms into a period that started at -3 ms: a quarter
     * into the 2 ms fall (cut at 4 ms) */
    ok_close(emn_wave_value(&s, 0.5e-3), 1.25, 1e-12, "pulse truncated: value in a period begun before 0");
    ok_close(emn_wave_value(&s, 1.5e-3), 0.5, 1e-12, "pulse truncated: next period rises from V1");
    nc = 0;
    for (int k = 0; k < 7; k++) {
        double base = 1e-3 + k * 4e-3;
        corners[nc++] = base;
        corners[nc++] = base + 1e-3;
        corners[nc++] = base + 3e-3;
    }
    worst = 0;
    for (double t = 0.21e-3; t <= 20e-3; t += 0.77e-3)
        worst = fmax(worst, fabs(emn_wave_integral(&s, t) - ref_integral(&s, t, corners, nc, 20e-3)));
    ok(worst < 1e-14, "pulse truncated: integral matches Simpson (max err %.2g)", worst);
    ok_close(emn_wave_next_break(&s, 0), 1e-3, 1e-15, "pulse truncated: first corner is a period start");
    ok_close(emn_wave_next_break(&s, 4.5e-3), 5e-3, 1e-15, "pulse truncated: cut fall ends at the period");
}

/* --------------------------------------------------------------- PWL */

static void test_pwl(void)
{
    /* PWL(1 0 2 1 2 3 4 3 4 0 6 -1): ramp, jump up at 2, flat, jump down
     * at 4, ramp; constant outside */
    double a[] = {1, 0, 2, 1, 2, 3, 4, 3, 4, 0, 6, -1};
    emn_source s = make(EMN_WAVE_PWL, 12, a);
    ok(prepare(&s, 0.1, 8, "V1") == 0, "pwl: prepare");
    ok(emn_wave_value(&s, 0.5) == 0 && emn_wave_value(&s, 0) == 0, "pwl: first value before the first time");
    ok_close(emn_wave_value(&s, 1.5), 0.5, 1e-15, "pwl: interpolates");
    ok_close(emn_wave_value(&s, 2 - 1e-12), 1, 1e-11, "pwl: left of the jump");
    ok(emn_wave_value(&s, 2) == 3, "pwl: right-continuous at the repeated time");
    ok(emn_wave_value(&s, 4) == 0, "pwl: jump down, right value at the time");
    ok_close(emn_wave_value(&s, 5), -0.5, 1e-15, "pwl: last ramp");
    ok(emn_wave_value(&s, 7) == -1, "pwl: last value after the last time");
    ok_close(emn_wave_deriv(&s, 1), 1, 1e-15, "pwl: right derivative at a corner");
    ok_close(emn_wave_deriv(&s, 5.5), -0.5, 1e-15, "pwl: slope of the last ramp");
    ok(emn_wave_deriv(&s, 3) == 0 && emn_wave_deriv(&s, 0.5) == 0 && emn_wave_deriv(&s, 7) == 0,
       "pwl: flat parts");
    ok(emn_wave_dc(&s) == 0, "pwl: dc is the value at 0");

    /* by hand: 0.5 + 6 + (-0.5) + (-1)*(t-6) */
    ok_close(emn_wave_integral(&s, 7), 0.5 + 6 - 1 - 1, 1e-14, "pwl: integral to 7 by hand");
    double corners[] = {1, 2, 4, 6};
    double worst = 0;
    /* forward, then backward, then forward again: the running cache must
     * not matter */
    double ts[] = {0.3, 1.2, 2, 2.5, 3.99, 4, 4.7, 6, 7.5, 1.7, 0.2, 5.1, 3.3, 8};
    for (int i = 0; i < 14; i++)
        worst = fmax(worst, fabs(emn_wave_integral(&s, ts[i]) - ref_integral(&s, ts[i], corners, 4, 8)));
    ok(worst < 1e-13, "pwl: integral matches Simpson at 14 times in any order (max err %.2g)", worst);

    double want[] = {1, 2, 4, 6};
    int n = 0, good = 1;
    for (double t = 0; (t = emn_wave_next_break(&s, t)) < INFINITY; n++)
        if (n >= 4 || t != want[n]) good = 0;
    ok(good && n == 4, "pwl: breakpoints at each distinct time once (%d)", n);
    ok(emn_wave_next_break(&s, 2) == 4 && emn_wave_next_break(&s, 1.9) == 2, "pwl: next after a repeated time");

    /* a point before zero */
    double b[] = {-1, 2, 1, 0};
    s = make(EMN_WAVE_PWL, 4, b);
    ok(prepare(&s, 0.1, 2, "V2") == 0, "pwl before zero: prepare");
    ok_close(emn_wave_value(&s, 0), 1, 1e-15, "pwl before zero: value at 0");
    ok_close(emn_wave_integral(&s, 1), 0.5, 1e-15, "pwl before zero: integral from 0, not from t1");
    ok_close(emn_wave_integral(&s, 2), 0.5, 1e-15, "pwl before zero: zero after the last point");

    /* a long PWL walked forward: many points, one running sum */
    int np = 20000;
    double *c = malloc(sizeof *c * 2 * np);
    for (int i = 0; i < np; i++) {
        c[2 * i] = i * 1e-3;
        c[2 * i + 1] = sin(i * 0.01);
    }
    s = make(EMN_WAVE_PWL, 2 * np, c);
    ok(prepare(&s, 1e-3, 20, "V3") == 0, "long pwl: prepare");
    /* trapezoids summed independently */
    double sum = 0;
    worst = 0;
    for (int i = 1; i < np; i++) {
        sum += 1e-3 * (c[2 * i - 1] + c[2 * i + 1]) / 2;
        if (i % 97 == 0) worst = fmax(worst, fabs(emn_wave_integral(&s, c[2 * i]) - sum));
    }
    ok(worst < 1e-12, "long pwl: integral at 206 points equals the trapezoid sum (max err %.2g)", worst);
    free(c);
}

/* --------------------------------------------------------------- EXP */

static void test_exp(void)
{
    /* EXP(1 3 1m 0.5m 4m 1m) */
    double a[] = {1, 3, 1e-3, 0.5e-3, 4e-3, 1e-3};
    emn_source s = make(EMN_WAVE_EXP, 6, a);
    ok(prepare(&s, 1e-5, 10e-3, "I1") == 0, "exp: prepare");
    ok(emn_wave_value(&s, 0.5e-3) == 1, "exp: V1 before TD1");
    ok_close(emn_wave_value(&s, 1.5e-3), 1 + 2 * (1 - exp(-1)), 1e-14, "exp: rising");
    double at4 = 1 + 2 * (1 - exp(-6));
    ok_close(emn_wave_value(&s, 4e-3), at4, 1e-14, "exp: at TD2");
    ok_close(emn_wave_value(&s, 5e-3), 1 + 2 * (1 - exp(-8)) - 2 * (1 - exp(-1)), 1e-14, "exp: falling");
    ok_close(emn_wave_deriv(&s, 1e-3), 2 / 0.5e-3, 1e-12, "exp: right derivative at TD1");
    ok_close(emn_wave_deriv(&s, 5e-3), 2 * exp(-8) / 0.5e-3 - 2 * exp(-1) / 1e-3, 1e-12, "exp: derivative falling");
    /* integral to 4m by hand: 4m*1 + 2*(3m - 0.5m*(1-e^-6)) */
    ok_close(emn_wave_integral(&s, 4e-3), 4e-3 + 2 * (3e-3 - 0.5e-3 * (1 - exp(-6))), 1e-14,
             "exp: integral to TD2 by hand");
    double corners[] = {1e-3, 4e-3};
    double worst = 0;
    for (double t = 0.31e-3; t <= 10e-3; t += 0.41e-3)
        worst = fmax(worst, fabs(emn_wave_integral(&s, t) - ref_integral(&s, t, corners, 2, 10e-3)));
    ok(worst < 1e-15, "exp: integral matches Simpson (max err %.2g)", worst);
    /* just after TD1 the integral of EXP(0 2 ...) is 2 TAU1 (w^2/2 - w^3/6
     * + ...), w = u/TAU1: tiny, and it must keep its relative accuracy */
    double az[] = {0, 2, 1e-3, 0.5e-3, 4e-3, 1e-3};
    emn_source sz = make(EMN_WAVE_EXP, 6, az);
    prepare(&sz, 1e-5, 10e-3, "I1");
    worst = 0;
    for (int e = 12; e >= 4; e--) {
        double t = 1e-3 + pow(10, -e), u = t - 1e-3;     /* the offset t really has */
        double wu = u / 0.5e-3, want = 0, term = wu * wu / 2;
        for (int k = 3; k < 25; k++) {
            want += term;
            term *= -wu / k;
        }
        want *= 2 * 0.5e-3;
        worst = fmax(worst, fabs(emn_wave_integral(&sz, t) / want - 1));
    }
    ok(worst < 1e-13, "exp: integral just after TD1 keeps relative accuracy (%.2g)", worst);
    worst = 0;
    for (double t = 1.05e-3; t < 10e-3; t += 0.3e-3)
        if (fabs(t - 4e-3) > 1e-5) worst = fmax(worst, fabs(emn_wave_deriv(&s, t) - fd(&s, t, 1e-9)) / 4e3);
    ok(worst < 1e-6, "exp: derivative matches central differences (rel %.2g)", worst);
    ok(emn_wave_next_break(&s, 0) == 1e-3 && emn_wave_next_break(&s, 1e-3) == 4e-3
       && emn_wave_next_break(&s, 4e-3) == INFINITY, "exp: breakpoints TD1 and TD2");

    /* defaults: EXP(0 1), tstep 1u: TD1 = 0, TAU1 = 1u, TD2 = 1u, TAU2 = 1u */
    double d[] = {0, 1};
    s = make(EMN_WAVE_EXP, 2, d);
    ok(prepare(&s, 1e-6, 1e-4, "I2") == 0, "exp defaults: prepare");
    ok_close(emn_wave_value(&s, 1e-6), 1 - exp(-1), 1e-14, "exp defaults: at TD2 = tstep");
    ok_close(emn_wave_value(&s, 2e-6), exp(-1) - exp(-2), 1e-14, "exp defaults: after TD2");
    /* a 0 for TAU1, TD2 or TAU2 is its default, as in SPICE: the same wave */
    double z[] = {0, 1, 0, 0, 0, 0};
    s = make(EMN_WAVE_EXP, 6, z);
    ok(prepare(&s, 1e-6, 1e-4, "I2") == 0, "exp zeros: prepare");
    ok_close(emn_wave_value(&s, 1e-6), 1 - exp(-1), 1e-14, "exp zeros: at TD2 = tstep");
    ok_close(emn_wave_value(&s, 2e-6), exp(-1) - exp(-2), 1e-14, "exp zeros: after TD2");
}

/* ------------------------------------------------------------ others */

static void test_dc_and_errors(void)
{
    emn_source s = make(EMN_WAVE_NONE, 0, NULL);
    s.dc = 2.5;
    s.has_dc = true;
    ok(prepare(&s, 1e-6, 1e-3, "V1") == 0, "dc: prepare");
    ok(emn_wave_value(&s, 0.3) == 2.5 && emn_wave_deriv(&s, 0.3) == 0, "dc: constant");
    ok_close(emn_wave_integral(&s, 0.3), 0.75, 1e-15, "dc: integral");
    ok(emn_wave_dc(&s) == 2.5 && emn_wave_next_break(&s, 0) == INFINITY, "dc: dc value, no breakpoints");

    /* an explicit DC value beside a function is what the operating point uses */
    double a[] = {1, 2};
    s = make(EMN_WAVE_SIN, 2, a);
    s.has_dc = true;
    s.dc = -4;
    prepare(&s, 1e-6, 1e-3, "V2");
    ok(emn_wave_dc(&s) == -4 && emn_wave_value(&s, 0) == 1, "dc: DC value wins for the operating point");

    struct { emn_wave_kind k; int n; double v[8]; const char *name; const char *msg; } cases[] = {
        {EMN_WAVE_EXP, 4, {0, 1, 0, -1e-6}, "I3", "EXP of I3: TAU1 must be positive"},
        {EMN_WAVE_EXP, 6, {0, 1, 0, 1e-6, 1e-6, -1}, "I3", "EXP of I3: TAU2 must be positive"},
        {EMN_WAVE_EXP, 6, {0, 1, 2e-6, 1e-6, 1e-6, 1e-6}, "I4", "EXP of I4: TD2 must not be less than TD1"},
        {EMN_WAVE_SIN, 3, {0, 1, -5}, "V5", "SIN of V5: FREQ must not be negative"},
        {EMN_WAVE_SIN, 7, {0, 1, 5, 0, 0, 0, 1}, "V6", "SIN of V6: expected 2 to 6 arguments, got 7"},
        {EMN_WAVE_SIN, 1, {0}, "V6", "SIN of V6: expected 2 to 6 arguments, got 1"},
        {EMN_WAVE_PULSE, 4, {0, 1, 0, -1e-9}, "V7", "PULSE of V7: TR must not be negative"},
        {EMN_WAVE_PULSE, 5, {0, 1, 0, 1e-9, -1e-9}, "V7", "PULSE of V7: TF must not be negative"},
        {EMN_WAVE_PULSE, 6, {0, 1, 0, 1e-9, 1e-9, -1}, "V7", "PULSE of V7: PW must not be negative"},
        {EMN_WAVE_PULSE, 7, {0, 1, 0, 1e-9, 1e-9, 1, -1}, "V7", "PULSE of V7: PER must not be negative"},
        {EMN_WAVE_PULSE, 8, {0, 1, 0, 1e-9, 1e-9, 1, 1, 0}, "V8", "PULSE of V8: expected 2 to 7 arguments, got 8"},
        {EMN_WAVE_PWL, 3, {0, 1, 2}, "V9", "PWL of V9: expected time-value pairs, got 3 numbers"},
        {EMN_WAVE_PWL, 6, {0, 1, 2, 2, 1, 3}, "V9", "PWL of V9: time 1 comes before the previous time 2"},
        {EMN_WAVE_EXP, 2, {0, NAN}, "I9", "EXP of I9: argument 2 is not a finite number"},
    };
    int nc = (int)(sizeof cases / sizeof cases[0]);
    for (int i = 0; i < nc; i++) {
        s = make(cases[i].k, cases[i].n, cases[i].v);
        int before = diag.n;
        int rc = emn_wave_prepare(&s, 1e-6, 1e-3, &diag, cases[i].name);
        int good = rc == -1 && diag.n == before + 1 && diag.v[before].sev == EMN_SEV_ERROR
                   && strcmp(diag.v[before].text, cases[i].msg) == 0;
        ok(good, "error: %s", cases[i].msg);
        if (!good && diag.n > before) printf("# got: %s\n", diag.v[before].text);
    }
}

/* ------------------------------------------------------- expressions */

static const emn_expr *call(emn_arena *ar, emn_func fn, const emn_expr *a)
{
    return emn_expr_call(ar, fn, 1, &a, EMN_NOLOC);
}

static void test_expr(void)
{
    emn_arena *ar = emn_arena_new();
    const emn_expr *t = emn_expr_var(ar, EMN_VAR_TIME);
    const emn_expr *n = NULL;
#define NUM(v) emn_expr_num(ar, v)
    /* 2 + 3 sin(w t) exp(-t/tau), w = 2 pi 50, tau = 10 ms */
    double w = 2 * M_PI * 50, tau = 0.01;
    n = emn_expr_add(ar, NUM(2),
                     emn_expr_mul(ar, emn_expr_mul(ar, NUM(3), call(ar, EMN_FN_SIN, emn_expr_mul(ar, NUM(w), t))),
                                  call(ar, EMN_FN_EXP, emn_expr_div(ar, emn_expr_neg(ar, t), NUM(tau)))));
    emn_source s = make(EMN_WAVE_EXPR, 0, NULL);
    s.expr = n;
    ok(prepare(&s, 1e-5, 0.1, "V1") == 0, "expr: prepare");
    double tt = 3.7e-3;
    ok_close(emn_wave_value(&s, tt), 2 + 3 * sin(w * tt) * exp(-tt / tau), 1e-14, "expr: value");
    ok_close(emn_wave_deriv(&s, tt), 3 * exp(-tt / tau) * (w * cos(w * tt) - sin(w * tt) / tau), 1e-12,
             "expr: exact derivative");
    ok(emn_wave_next_break(&s, 0) == INFINITY, "expr: no breakpoints");
    ok_close(emn_wave_dc(&s), 2, 1e-15, "expr: dc is the value at 0");
    /* analytic integral of e^{-t/tau} sin(w t): damped sine with theta = 1/tau */
    double th = 1 / tau;
    double worst = 0;
    int steps = 0;
    for (double x = 0; x <= 0.1; x += 0.000731, steps++) {
        double want = 2 * x + 3 * (w - exp(-th * x) * (th * sin(w * x) + w * cos(w * x))) / (th * th + w * w);
        worst = fmax(worst, fabs(emn_wave_integral(&s, x) - want));
    }
    ok(worst < 1e-13, "expr: cached forward integral at %d times (abs err %.2g)", steps, worst);
    /* backward and jumping around */
    double xs[] = {0.05, 0.0123, 0.0999, 0.0001, 0.07};
    worst = 0;
    for (int i = 0; i < 5; i++) {
        double x = xs[i];
        double want = 2 * x + 3 * (w - exp(-th * x) * (th * sin(w * x) + w * cos(w * x))) / (th * th + w * w);
        worst = fmax(worst, fabs(emn_wave_integral(&s, x) - want));
    }
    ok(worst < 1e-13, "expr: integral at decreasing and scattered times (abs err %.2g)", worst);

    /* |sin(w t)|: a kink every half period; integral 2/w per half period */
    s.expr = call(ar, EMN_FN_ABS, call(ar, EMN_FN_SIN, emn_expr_mul(ar, NUM(w), t)));
    memset(s.p, 0, EMN_SOURCE_STATE * sizeof(double));      /* a new expression: no integral taken yet */
    double x = 7.3 / 100;     /* 7 half periods of 10 ms and 3 ms more */
    double want = 7 * 2 / w + (1 - cos(w * 3e-3)) / w;
    ok_close(emn_wave_integral(&s, x), want, 1e-12 * 14 / w, "expr: |sin| integral across kinks");
    ok_close(emn_wave_deriv(&s, 0.013), w * cos(w * 0.013) * (sin(w * 0.013) > 0 ? 1 : -1), 1e-12,
             "expr: derivative of |sin|");

    /* a unit step at 5 ms written with the step function of min: min(1,
     * max(0, (t - 5m) * 1e30)) is a jump the quadrature must get through */
    const emn_expr *ramp = emn_expr_mul(ar, emn_expr_sub(ar, t, NUM(5e-3)), NUM(1e30));
    const emn_expr *mx[2] = {NUM(0), ramp};
    const emn_expr *mxe = emn_expr_call(ar, EMN_FN_MAX, 2, mx, EMN_NOLOC);
    const emn_expr *mn[2] = {NUM(1), mxe};
    s.expr = emn_expr_call(ar, EMN_FN_MIN, 2, mn, EMN_NOLOC);
    memset(s.p, 0, EMN_SOURCE_STATE * sizeof(double));      /* a new expression: no integral taken yet */
    ok_close(emn_wave_integral(&s, 0.02), 0.015, 1e-12, "expr: integral across a jump");

    /* derivatives of every function against emn_expr_diff (a separate,
     * symbolic implementation) and against central differences */
    const emn_expr *tp1 = emn_expr_add(ar, t, NUM(1.5));
    const emn_expr *fns[] = {
        call(ar, EMN_FN_TAN, emn_expr_mul(ar, NUM(0.3), t)),
        call(ar, EMN_FN_ASIN, emn_expr_mul(ar, NUM(0.4), t)),
        call(ar, EMN_FN_ACOS, emn_expr_mul(ar, NUM(0.4), t)),
        call(ar, EMN_FN_ATAN, t),
        call(ar, EMN_FN_SINH, t),
        call(ar, EMN_FN_COSH, t),
        call(ar, EMN_FN_TANH, t),
        call(ar, EMN_FN_LN, tp1),
        call(ar, EMN_FN_LOG10, tp1),
        call(ar, EMN_FN_SQRT, tp1),
        call(ar, EMN_FN_COS, emn_expr_mul(ar, t, t)),
        emn_expr_pow(ar, tp1, t),
        emn_expr_pow(ar, t, NUM(3)),
        emn_expr_pow(ar, NUM(2), t),
        emn_expr_div(ar, NUM(1), tp1),
        emn_expr_call(ar, EMN_FN_ATAN2, 2, (const emn_expr *[]){call(ar, EMN_FN_SIN, t), tp1}, EMN_NOLOC),
        emn_expr_call(ar, EMN_FN_MAX, 3, (const emn_expr *[]){t, NUM(0.9), emn_expr_mul(ar, t, t)}, EMN_NOLOC),
        emn_expr_call(ar, EMN_FN_MIN, 2, (const emn_expr *[]){call(ar, EMN_FN_COS, t), t}, EMN_NOLOC),
        emn_expr_sub(ar, call(ar, EMN_FN_ABS, emn_expr_sub(ar, t, NUM(1))), NUM(1)),
    };
    int nf = (int)(sizeof fns / sizeof fns[0]);
    double pts[] = {0.3, 0.7, 1.2, 1.9};
    int bad_sym = 0, bad_fd = 0;
    for (int i = 0; i < nf; i++) {
        s.expr = fns[i];
        const emn_expr *dsym = emn_expr_diff(ar, fns[i], EMN_VAR_TIME);
        for (int k = 0; k < 4; k++) {
            double p = pts[k];
            double got = emn_wave_deriv(&s, p);
            double sym = emn_expr_eval(dsym, &p);
            double num = fd(&s, p, 1e-6);
            if (!close_to(got, sym, 1e-12)) {
                bad_sym++;
                printf("# fn %d at %g: %.17g vs symbolic %.17g\n", i, p, got, sym);
            }
            if (!close_to(got, num, 1e-7)) {
                bad_fd++;
                printf("# fn %d at %g: %.17g vs difference %.17g\n", i, p, got, num);
            }
        }
    }
    ok(bad_sym == 0, "expr: %d derivatives agree with emn_expr_diff", nf * 4);
    ok(bad_fd == 0, "expr: %d derivatives agree with central differences", nf * 4);
    emn_arena_free(&ar);
#undef NUM
}

int main(void)
{
    test_sin();
    test_pulse();
    test_pwl();
    test_exp();
    test_dc_and_errors();
    test_expr();
    emn_diag_free(&diag);
    return tap_done();
}
