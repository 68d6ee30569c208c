/*
 * wave.c: the independent source functions of SPICE (SIN, PULSE, PWL, EXP)
 * and expressions of time: value, derivative, integral and breakpoints.
 *
 * Every function is defined by its value; the derivative and the integral
 * are derived from it here, in closed form, so that the formulations can
 * put a source's integral (a current source's charge, a voltage source's
 * flux linkage) into their coordinates without the integrator ever having
 * to integrate it.  Each closed-form integral is written as an
 * antiderivative F with F(t) - F(0) returned, which keeps negative delays
 * and PWL times before zero right without special cases.  Expressions have
 * no closed form: they are integrated by adaptive Gauss-Kronrod quadrature,
 * starting from the last point asked for, since the integrator asks in
 * (mostly) increasing time.
 *
 * Parameter layout in emn_source.p (EMN_SOURCE_STATE numbers) after
 * emn_wave_prepare():
 *   SIN    VO VA FREQ TD THETA PHASE(degrees)
 *   PULSE  V1 V2 TD TR TF PW PER tstop
 *   EXP    V1 V2 TD1 TAU1 TD2 TAU2
 *   PWL    p[0] = segment index of the cached running integral,
 *          p[1] = antiderivative at t = 0; points stay in args.
 * Zero TR, TF, PW, PER, FREQ and TD2 mean "default", as in ngspice, so a
 * netlist means the same in both; a zero TAU in EXP is an error instead,
 * and the functions are right-continuous at their jumps (ngspice takes
 * whichever side its formula happens to give at the exact instant).
 */
#include "config.h"
#include "wave.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TWO_PI 6.283185307179586476925286766559

/* After the constants (p[0..7], above): the last integral taken, its time
 * and value. */
#define CACHE_T(s) ((s)->p[8])
#define CACHE_INT(s) ((s)->p[9])

/* ORDER emn_wave_kind */
static const char *const kind_name[] = {"DC", "SIN", "PULSE", "PWL", "EXP", "expression"};
/* most arguments each function takes (PWL: unbounded) */
static const int max_args[] = {0, 6, 7, -1, 6, 0};

/* ------------------------------------------------------------ preparation */

/* an argument as written, or `dflt` if omitted (or, where SPICE says so,
 * zero) */
static double arg(const emn_source *s, int k, double dflt, bool zero_is_default)
{
    if (k >= s->nargs) return dflt;
    if (zero_is_default && s->args[k] == 0) return dflt;
    return s->args[k];
}

/* record "KIND of ELEM: what" and fail */
static int bad(emn_diag *d, const emn_source *s, const char *elem, const char *what)
{
    emn_diag_error(d, s->loc, "%s of %s: %s", kind_name[s->kind], elem, what);
    return -1;
}

static double pwl_antideriv(emn_source *s, double x);

int emn_wave_prepare(emn_source *s, double tstep, double tstop, emn_diag *d,
                     const char *elem_name)
{
    const char *el = elem_name ? elem_name : "source";
    if (s->kind == EMN_WAVE_NONE) return 0;
    memset(s->p, 0, EMN_SOURCE_STATE * sizeof(double));
    if (s->kind == EMN_WAVE_EXPR) {
        if (!s->expr) return bad(d, s, el, "missing expression");
        return 0;
    }

    for (int k = 0; k < s->nargs; k++)
        if (!isfinite(s->args[k])) {
            emn_diag_error(d, s->loc, "%s of %s: argument %d is not a finite number",
                           kind_name[s->kind], el, k + 1);
            return -1;
        }
    int maxn = max_args[s->kind];
    if (s->nargs < 2 || (maxn > 0 && s->nargs > maxn)) {
        if (maxn > 0)
            emn_diag_error(d, s->loc, "%s of %s: expected 2 to %d arguments, got %d",
                           kind_name[s->kind], el, maxn, s->nargs);
        else
            emn_diag_error(d, s->loc, "%s of %s: expected at least one time-value pair, got %d number%s",
                           kind_name[s->kind], el, s->nargs, s->nargs == 1 ? "" : "s");
        return -1;
    }

    /* Without a .tran only the value at t = 0 matters; a positive
     * placeholder keeps the formulas finite. */
    double step = tstep > 0 ? tstep : 1.0, stop = tstop > 0 ? tstop : 1.0;
    double *p = s->p;
    switch (s->kind) {
    case EMN_WAVE_SIN:
        p[0] = s->args[0];
        p[1] = s->args[1];
        p[2] = arg(s, 2, 1.0 / stop, true);
        p[3] = arg(s, 3, 0.0, false);
        p[4] = arg(s, 4, 0.0, false);
        p[5] = arg(s, 5, 0.0, false);
        if (p[2] < 0) return bad(d, s, el, "FREQ must not be negative");
        return 0;
    case EMN_WAVE_PULSE:
        p[0] = s->args[0];
        p[1] = s->args[1];
        p[2] = arg(s, 2, 0.0, false);
        p[3] = arg(s, 3, step, true);
        p[4] = arg(s, 4, step, true);
        p[5] = arg(s, 5, stop, true);
        p[6] = arg(s, 6, stop, true);
        p[7] = tstop > 0 ? tstop : INFINITY;
        if (p[3] < 0) return bad(d, s, el, "TR must not be negative");
        if (p[4] < 0) return bad(d, s, el, "TF must not be negative");
        if (p[5] < 0) return bad(d, s, el, "PW must not be negative");
        if (p[6] < 0) return bad(d, s, el, "PER must not be negative");
        return 0;
    case EMN_WAVE_EXP:
        p[0] = s->args[0];
        p[1] = s->args[1];
        p[2] = arg(s, 2, 0.0, false);
        p[3] = arg(s, 3, step, true);      /* 0 for TAU1, TD2, TAU2: the default, as SPICE */
        p[4] = arg(s, 4, p[2] + step, true);
        p[5] = arg(s, 5, step, true);
        if (!(p[3] > 0)) return bad(d, s, el, "TAU1 must be positive");
        if (!(p[5] > 0)) return bad(d, s, el, "TAU2 must be positive");
        if (p[4] < p[2]) return bad(d, s, el, "TD2 must not be less than TD1");
        return 0;
    case EMN_WAVE_PWL:
        if (s->nargs % 2) {
            emn_diag_error(d, s->loc, "PWL of %s: expected time-value pairs, got %d numbers",
                           el, s->nargs);
            return -1;
        }
        for (int k = 2; k < s->nargs; k += 2)
            if (s->args[k] < s->args[k - 2]) {
                emn_diag_error(d, s->loc, "PWL of %s: time %g comes before the previous time %g",
                               el, s->args[k], s->args[k - 2]);
                return -1;
            }
        CACHE_T(s) = s->args[0];
        p[1] = pwl_antideriv(s, 0.0);
        return 0;
    default:
        return 0;
    }
}

/* ------------------------------------------------------------------- SIN */

/* integral over [0, u] of exp(-theta s) sin(w s + phi), written as
 * Im(e^{i phi} u (e^z - 1)/z) with z = (-theta + i w) u, and e^z - 1 formed
 * from expm1 and sin^2 so that small u keeps its relative accuracy */
static double damped_sin_integral(double theta, double w, double phi, double u)
{
    double a = -theta * u, b = w * u;
    double sb2 = sin(b / 2);
    double em = expm1(a);
    /* e^z - 1 = (e^a cos b - 1) + i e^a sin b */
    double re = em * cos(b) - 2 * sb2 * sb2, im = exp(a) * sin(b);
    double den = a * a + b * b;
    double qr, qi;      /* (e^z - 1)/z */
    if (den == 0) {
        qr = 1;
        qi = 0;
    } else if (den < 1e-6) {
        /* series (e^z - 1)/z = 1 + z/2 + z^2/6 + z^3/24 + z^4/120, |z| < 1e-3 */
        double zr = a, zi = b, pr = 1, pi_ = 0, fact = 1;
        qr = 1;
        qi = 0;
        for (int k = 2; k <= 6; k++) {
            double nr = pr * zr - pi_ * zi, ni = pr * zi + pi_ * zr;
            pr = nr;
            pi_ = ni;
            fact *= k;
            qr += pr / fact;
            qi += pi_ / fact;
        }
    } else {
        qr = (re * a + im * b) / den;
        qi = (im * a - re * b) / den;
    }
    /* Im(e^{i phi} (qr + i qi)) u */
    return u * (sin(phi) * qr + cos(phi) * qi);
}

static double sin_value(const double *p, double t)
{
    double phi = TWO_PI * p[5] / 360;
    if (t < p[3]) return p[0] + p[1] * sin(phi);
    double u = t - p[3];
    return p[0] + p[1] * exp(-u * p[4]) * sin(TWO_PI * p[2] * u + phi);
}

static double sin_deriv(const double *p, double t)
{
    if (t < p[3]) return 0;
    double phi = TWO_PI * p[5] / 360, w = TWO_PI * p[2], u = t - p[3];
    double arg_ = w * u + phi;
    return p[1] * exp(-u * p[4]) * (w * cos(arg_) - p[4] * sin(arg_));
}

static double sin_antideriv(const double *p, double x)
{
    double phi = TWO_PI * p[5] / 360;
    double f = p[0] * x;
    if (x < p[3]) return f + p[1] * sin(phi) * (x - p[3]);
    return f + p[1] * damped_sin_integral(p[4], TWO_PI * p[2], phi, x - p[3]);
}

/* ----------------------------------------------------------------- PULSE */

/* Corner c of period k: the start, the end of the rise, of the top, of
 * the fall.  Every test of "which part of the pulse is t in" compares t
 * with these very numbers, the ones emn_wave_next_break hands out, so that
 * at a breakpoint the function is always on the breakpoint's right side,
 * whatever rounding t - TD - k PER would have done. */
static double pulse_corner(const double *p, double k, int c)
{
    double base = k > 0 ? p[2] + k * p[6] : p[2];
    switch (c) {
    case 0: return base;
    case 1: return base + p[3];
    case 2: return base + (p[3] + p[5]);
    default: return base + (p[3] + p[5] + p[4]);
    }
}

static bool pulse_periodic(const double *p)
{
    return isfinite(p[6]) && p[6] > 0;
}

/* The period t falls in (k >= 0; -1 before TD) and which part of it:
 * 0 rising, 1 top, 2 falling, 3 back at V1 (until the next period). */
static int pulse_locate(const double *p, double t, double *k)
{
    *k = -1;
    if (t < p[2]) return 3;
    double kk = 0;
    if (pulse_periodic(p)) {
        kk = floor((t - p[2]) / p[6]);
        if (kk < 0) kk = 0;
        /* floor of a rounded quotient can land one period off */
        if (kk > 0 && t < pulse_corner(p, kk, 0)) kk -= 1;
        else if (t >= pulse_corner(p, kk + 1, 0)) kk += 1;
    }
    *k = kk;
    int part = 0;
    while (part < 3 && t >= pulse_corner(p, kk, part + 1)) part++;
    return part;
}

/* integral of the unit shape over [0, u] (u from the period's start, at
 * most PER, which cuts a pulse longer than its period) */
static double pulse_shape_integral(const double *p, double u)
{
    double tr = p[3], tf = p[4], pw = p[5];
    if (u <= 0) return 0;
    if (u < tr) return u * u / (2 * tr);
    if (u < tr + pw) return tr / 2 + (u - tr);
    if (u < tr + pw + tf) {
        double w = u - tr - pw;
        return tr / 2 + pw + w - w * w / (2 * tf);
    }
    return tr / 2 + pw + tf / 2;
}

static double pulse_value(const double *p, double t)
{
    double k;
    switch (pulse_locate(p, t, &k)) {
    case 0: return p[0] + (p[1] - p[0]) * (t - pulse_corner(p, k, 0)) / p[3];
    case 1: return p[1];
    case 2: return p[1] + (p[0] - p[1]) * (t - pulse_corner(p, k, 2)) / p[4];
    default: return p[0];
    }
}

static double pulse_deriv(const double *p, double t)
{
    double k;
    switch (pulse_locate(p, t, &k)) {
    case 0: return (p[1] - p[0]) / p[3];
    case 2: return (p[0] - p[1]) / p[4];
    default: return 0;
    }
}

/* antiderivative, zero at TD */
static double pulse_antideriv(const double *p, double x)
{
    double k;
    pulse_locate(p, x, &k);
    if (k < 0) return p[0] * (x - p[2]);
    double u = x - pulse_corner(p, k, 0);
    if (pulse_periodic(p) && u > p[6]) u = p[6];
    double f = p[0] * u + (p[1] - p[0]) * pulse_shape_integral(p, u);
    if (k > 0) {
        double per = p[6];
        f += k * (p[0] * per + (p[1] - p[0]) * pulse_shape_integral(p, per));
    }
    return f;
}

static double pulse_next_break(const double *p, double t)
{
    double tstop = p[7], k, best = INFINITY;
    bool periodic = pulse_periodic(p);
    pulse_locate(p, t, &k);
    /* this period and the next (a period starts with corner 0) */
    for (double kk = k < 0 ? 0 : k; kk <= k + 1 && best == INFINITY; kk++) {
        if (kk > 0 && !periodic) break;
        for (int c = 0; c < 4; c++) {
            double b = pulse_corner(p, kk, c);
            /* a corner at or past the next period's start is cut off */
            if (c > 0 && periodic && b >= pulse_corner(p, kk + 1, 0)) break;
            if (b > t && b < best) best = b;
        }
    }
    return best <= tstop ? best : INFINITY;
}

/* ------------------------------------------------------------------- PWL */

#define PWL_T(s, i) ((s)->args[2 * (i)])
#define PWL_V(s, i) ((s)->args[2 * (i) + 1])

/* largest i with t_i <= t, or -1 if t is before the first point; with
 * repeated times this is the last of them, which makes the jump
 * right-continuous */
static int pwl_segment(const emn_source *s, double t)
{
    int lo = 0, hi = s->nargs / 2;      /* first i with t_i > t is in [lo, hi] */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (PWL_T(s, mid) <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo - 1;
}

static double pwl_value(const emn_source *s, double t)
{
    int n = s->nargs / 2, i = pwl_segment(s, t);
    if (i < 0) return PWL_V(s, 0);
    if (i >= n - 1) return PWL_V(s, n - 1);
    double t0 = PWL_T(s, i), t1 = PWL_T(s, i + 1);
    return PWL_V(s, i) + (PWL_V(s, i + 1) - PWL_V(s, i)) * (t - t0) / (t1 - t0);
}

static double pwl_deriv(const emn_source *s, double t)
{
    int n = s->nargs / 2, i = pwl_segment(s, t);
    if (i < 0 || i >= n - 1) return 0;
    return (PWL_V(s, i + 1) - PWL_V(s, i)) / (PWL_T(s, i + 1) - PWL_T(s, i));
}

/* Antiderivative that is 0 at t_0.  The running sum of trapezoids up to
 * point i is cached (p[0] = i, CACHE_INT = sum), so a run that walks
 * forward through a long PWL adds each trapezoid once. */
static double pwl_antideriv(emn_source *s, double x)
{
    int n = s->nargs / 2, i = pwl_segment(s, x);
    if (i < 0) return PWL_V(s, 0) * (x - PWL_T(s, 0));
    int c = (int)s->p[0];
    double cum = CACHE_INT(s);
    if (c > i) {
        c = 0;
        cum = 0;
    }
    for (; c < i; c++)
        cum += (PWL_T(s, c + 1) - PWL_T(s, c)) * (PWL_V(s, c) + PWL_V(s, c + 1)) / 2;
    s->p[0] = i;
    CACHE_T(s) = PWL_T(s, i);
    CACHE_INT(s) = cum;
    double dx = x - PWL_T(s, i);
    if (i >= n - 1) return cum + PWL_V(s, i) * dx;
    return cum + dx * (PWL_V(s, i) + pwl_value(s, x)) / 2;
}

static double pwl_next_break(const emn_source *s, double t)
{
    int i = pwl_segment(s, t) + 1;
    return i < s->nargs / 2 ? PWL_T(s, i) : INFINITY;
}

/* ------------------------------------------------------------------- EXP */

/* e^{-w} - 1 + w, accurate for small w where the terms cancel */
static double exp_rise_excess(double w)
{
    if (fabs(w) < 0.5) {
        double term = w * w / 2, sum = 0;
        for (int k = 3; k < 30 && fabs(term) > 1e-18 * fabs(sum); k++) {
            sum += term;
            term *= -w / k;
        }
        return sum;
    }
    return expm1(-w) + w;
}

static double exp_value(const double *p, double t)
{
    double v = p[0];
    if (t < p[2]) return v;
    v += (p[1] - p[0]) * -expm1(-(t - p[2]) / p[3]);
    if (t < p[4]) return v;
    return v + (p[0] - p[1]) * -expm1(-(t - p[4]) / p[5]);
}

static double exp_deriv(const double *p, double t)
{
    if (t < p[2]) return 0;
    double d = (p[1] - p[0]) * exp(-(t - p[2]) / p[3]) / p[3];
    if (t < p[4]) return d;
    return d + (p[0] - p[1]) * exp(-(t - p[4]) / p[5]) / p[5];
}

static double exp_antideriv(const double *p, double x)
{
    /* integral of 1 - e^{-(s-td)/tau} from td to x is tau * excess((x-td)/tau) */
    double f = p[0] * x;
    if (x > p[2]) f += (p[1] - p[0]) * p[3] * exp_rise_excess((x - p[2]) / p[3]);
    if (x > p[4]) f += (p[0] - p[1]) * p[5] * exp_rise_excess((x - p[4]) / p[5]);
    return f;
}

/* ------------------------------------------------------------ expressions */

static double expr_value(const emn_source *s, double t)
{
    return emn_expr_eval(s->expr, &t);
}

/* Forward-mode derivative: value and d/dt together in one walk, so the
 * derivative is exact and costs no allocation.  The conventions at kinks
 * (abs, min, max) are those of emn_expr_diff. */
typedef struct dual { double v, d; } dual;

static dual dual_pow(dual a, dual b)
{
    double v = pow(a.v, b.v);
    if (b.d == 0) {
        if (a.d == 0) return (dual){v, 0};
        return (dual){v, b.v * pow(a.v, b.v - 1) * a.d};
    }
    return (dual){v, v * (b.d * log(a.v) + (a.d == 0 ? 0 : b.v * a.d / a.v))};
}

static dual dual_eval(const emn_expr *e, double t)
{
    dual r = {NAN, NAN}, a = r, b = r;
    switch (e->op) {
    case EMN_EX_NUM: return (dual){e->num, 0};
    case EMN_EX_VAR: return e->var == EMN_VAR_TIME ? (dual){t, 1} : r;
    case EMN_EX_NAME:
    case EMN_EX_XREF: return r;
    case EMN_EX_NEG:
        a = dual_eval(e->a, t);
        return (dual){-a.v, -a.d};
    case EMN_EX_ADD:
    case EMN_EX_SUB:
    case EMN_EX_MUL:
    case EMN_EX_DIV:
    case EMN_EX_POW:
        a = dual_eval(e->a, t);
        b = dual_eval(e->b, t);
        break;
    case EMN_EX_CALL:
        break;
    }
    switch (e->op) {
    case EMN_EX_ADD: return (dual){a.v + b.v, a.d + b.d};
    case EMN_EX_SUB: return (dual){a.v - b.v, a.d - b.d};
    case EMN_EX_MUL: return (dual){a.v * b.v, a.d * b.v + a.v * b.d};
    case EMN_EX_DIV: return (dual){a.v / b.v, (a.d * b.v - a.v * b.d) / (b.v * b.v)};
    case EMN_EX_POW: return dual_pow(a, b);
    default: break;
    }

    /* calls */
    if (e->fn == EMN_FN_MIN || e->fn == EMN_FN_MAX) {
        dual acc = dual_eval(e->args[0], t);
        for (int i = 1; i < e->nargs; i++) {
            b = dual_eval(e->args[i], t);
            bool keep = e->fn == EMN_FN_MAX ? acc.v > b.v : b.v > acc.v;
            if (isnan(acc.v) || isnan(b.v)) return r;
            if (!keep) acc = b;
        }
        return acc;
    }
    if (e->nargs < 1) return r;
    a = dual_eval(e->args[0], t);
    if (e->fn == EMN_FN_ATAN2 || e->fn == EMN_FN_POW) {
        if (e->nargs != 2) return r;
        b = dual_eval(e->args[1], t);
        if (e->fn == EMN_FN_POW) return dual_pow(a, b);
        /* atan2(y, x): (x y' - y x') / (x^2 + y^2) */
        return (dual){atan2(a.v, b.v), (b.v * a.d - a.v * b.d) / (a.v * a.v + b.v * b.v)};
    }
    double x = a.v, v, f1;     /* f(x) and f'(x) */
    switch (e->fn) {
    case EMN_FN_SIN: v = sin(x); f1 = cos(x); break;
    case EMN_FN_COS: v = cos(x); f1 = -sin(x); break;
    case EMN_FN_TAN: v = tan(x); f1 = 1 + v * v; break;
    case EMN_FN_ASIN: v = asin(x); f1 = 1 / sqrt(1 - x * x); break;
    case EMN_FN_ACOS: v = acos(x); f1 = -1 / sqrt(1 - x * x); break;
    case EMN_FN_ATAN: v = atan(x); f1 = 1 / (1 + x * x); break;
    case EMN_FN_SINH: v = sinh(x); f1 = cosh(x); break;
    case EMN_FN_COSH: v = cosh(x); f1 = sinh(x); break;
    case EMN_FN_TANH: v = tanh(x); f1 = 1 - v * v; break;
    case EMN_FN_EXP: v = exp(x); f1 = v; break;
    case EMN_FN_LN: v = log(x); f1 = 1 / x; break;
    case EMN_FN_LOG10: v = log10(x); f1 = 1 / (log(10.0) * x); break;
    case EMN_FN_SQRT: v = sqrt(x); f1 = 0.5 / v; break;
    case EMN_FN_ABS: v = fabs(x); f1 = x > 0 ? 1 : x < 0 ? -1 : 0; break;
    case EMN_FN_SGN: v = x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x; f1 = 0; break;
    case EMN_FN_STEP: v = x > 0 ? 1 : isnan(x) ? x : 0; f1 = 0; break;
    default: return r;
    }
    /* a flat argument leaves the result flat even where f' is infinite */
    return (dual){v, a.d == 0 ? 0 : f1 * a.d};
}

/* 7-point Gauss and 15-point Kronrod rules on [-1, 1] (the Kronrod nodes
 * with odd index are the Gauss nodes) */
static const double xgk[8] = {
    0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
    0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
    0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
    0.207784955007898467600689403773245, 0.0,
};
static const double wgk[8] = {
    0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
    0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
    0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
    0.204432940075298892414161999234649, 0.209482141084727828012999174891714,
};
static const double wg[4] = {
    0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
    0.381830050505118944950369775488975, 0.417959183673469387755102040816327,
};

/* G7K15 on [a, b]: returns the Kronrod estimate; *err = |K - G| and
 * *absint = Kronrod estimate of the integral of |f| */
static double gk15(const emn_source *s, double a, double b, double *err, double *absint)
{
    double c = (a + b) / 2, h = (b - a) / 2;
    double fc = expr_value(s, c);
    double k = wgk[7] * fc, g = wg[3] * fc, ka = wgk[7] * fabs(fc);
    for (int j = 0; j < 7; j++) {
        double dx = h * xgk[j];
        double f1 = expr_value(s, c - dx), f2 = expr_value(s, c + dx);
        k += wgk[j] * (f1 + f2);
        ka += wgk[j] * (fabs(f1) + fabs(f2));
        if (j % 2) g += wg[j / 2] * (f1 + f2);
    }
    *err = fabs((k - g) * h);
    *absint = ka * fabs(h);
    return k * h;
}

#define EMN_QUAD_RTOL 1e-12
#define EMN_QUAD_PIECES 16
#define EMN_QUAD_DEPTH 60
#define EMN_QUAD_BUDGET 100000  /* G7K15 rules per call, a safety net */

typedef struct quad_ctx {
    const emn_source *s;
    double tol_per_len;     /* error allowed per unit of time */
    long budget;
} quad_ctx;

/* Adaptive bisection of [a, b], whose rule gave q, err, absint.  The
 * tolerance is the relative one applied to the integral of |f| over the
 * whole interval, shared out by length: a piece where f is near zero does
 * not have to resolve f's rounding noise there (a local relative test
 * would, and never finish).  A piece is also accepted once its error is
 * at the rounding level of its own sum, or when it can no longer be
 * halved; a jump written into the expression ends that way, at a piece
 * too short to matter. */
static double adapt(quad_ctx *c, double a, double b, double q, double err, double absint, int depth)
{
    if (err <= c->tol_per_len * (b - a) || err <= 50 * DBL_EPSILON * absint || depth >= EMN_QUAD_DEPTH
        || c->budget <= 0 || !isfinite(q))
        return q;
    double m = (a + b) / 2;
    if (m <= a || m >= b) return q;
    double e1, a1, e2, a2;
    c->budget -= 2;
    double q1 = gk15(c->s, a, m, &e1, &a1), q2 = gk15(c->s, m, b, &e2, &a2);
    return adapt(c, a, m, q1, e1, a1, depth + 1) + adapt(c, m, b, q2, e2, a2, depth + 1);
}

/* Integral over [a, b] (either order).  The interval is first cut into
 * EMN_QUAD_PIECES pieces, so that a feature narrower than one rule's node
 * spacing over the whole interval (a short burst in a long run) is less
 * likely to be stepped over, and so that the scale of |f| is known before
 * any piece is judged. */
static double quad(const emn_source *s, double a, double b)
{
    if (a == b) return 0;
    if (b < a) return -quad(s, b, a);
    enum { N = EMN_QUAD_PIECES };
    double x[N + 1], q[N], err[N], absint[N], total = 0;
    for (int i = 0; i <= N; i++) x[i] = i == N ? b : a + (b - a) * i / N;
    for (int i = 0; i < N; i++) {
        q[i] = gk15(s, x[i], x[i + 1], &err[i], &absint[i]);
        total += absint[i];
    }
    quad_ctx c = {s, EMN_QUAD_RTOL * total / (b - a), EMN_QUAD_BUDGET};
    double sum = 0;
    for (int i = 0; i < N; i++) sum += adapt(&c, x[i], x[i + 1], q[i], err[i], absint[i], 0);
    return sum;
}

static double expr_integral(emn_source *s, double t)
{
    double r;
    /* from the cached point or from 0, whichever is nearer */
    if (isfinite(CACHE_T(s)) && fabs(t - CACHE_T(s)) < fabs(t))
        r = CACHE_INT(s) + quad(s, CACHE_T(s), t);
    else
        r = quad(s, 0, t);
    CACHE_T(s) = t;
    CACHE_INT(s) = r;
    return r;
}

/* ------------------------------------------------------------- interface */

double emn_wave_value(const emn_source *s, double t)
{
    switch (s->kind) {
    case EMN_WAVE_NONE: return s->dc;
    case EMN_WAVE_SIN: return sin_value(s->p, t);
    case EMN_WAVE_PULSE: return pulse_value(s->p, t);
    case EMN_WAVE_PWL: return pwl_value(s, t);
    case EMN_WAVE_EXP: return exp_value(s->p, t);
    case EMN_WAVE_EXPR: return expr_value(s, t);
    }
    return NAN;
}

double emn_wave_deriv(const emn_source *s, double t)
{
    switch (s->kind) {
    case EMN_WAVE_NONE: return 0;
    case EMN_WAVE_SIN: return sin_deriv(s->p, t);
    case EMN_WAVE_PULSE: return pulse_deriv(s->p, t);
    case EMN_WAVE_PWL: return pwl_deriv(s, t);
    case EMN_WAVE_EXP: return exp_deriv(s->p, t);
    case EMN_WAVE_EXPR: return dual_eval(s->expr, t).d;
    }
    return NAN;
}

double emn_wave_integral(emn_source *s, double t)
{
    switch (s->kind) {
    case EMN_WAVE_NONE: return s->dc * t;
    case EMN_WAVE_SIN: return sin_antideriv(s->p, t) - sin_antideriv(s->p, 0);
    case EMN_WAVE_PULSE: return pulse_antideriv(s->p, t) - pulse_antideriv(s->p, 0);
    case EMN_WAVE_PWL: return pwl_antideriv(s, t) - s->p[1];
    case EMN_WAVE_EXP: return exp_antideriv(s->p, t) - exp_antideriv(s->p, 0);
    case EMN_WAVE_EXPR: return expr_integral(s, t);
    }
    return NAN;
}

double emn_wave_dc(const emn_source *s)
{
    return s->has_dc || s->kind == EMN_WAVE_NONE ? s->dc : emn_wave_value(s, 0);
}

double emn_wave_next_break(const emn_source *s, double t)
{
    const double *p = s->p;
    switch (s->kind) {
    case EMN_WAVE_SIN: return p[3] > t ? p[3] : INFINITY;
    case EMN_WAVE_PULSE: return pulse_next_break(p, t);
    case EMN_WAVE_PWL: return pwl_next_break(s, t);
    case EMN_WAVE_EXP: return p[2] > t ? p[2] : p[4] > t ? p[4] : INFINITY;
    default: return INFINITY;
    }
}
