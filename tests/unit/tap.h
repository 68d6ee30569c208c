/*
 * tap.h: a tiny TAP producer for the unit tests.  Each check prints one
 * `ok N - name` or `not ok N - name` line; tap_done() prints the plan and
 * returns the exit status.  Names are stable so a failure can be found by
 * grep.
 */
#ifndef EMN_TAP_H
#define EMN_TAP_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static void tap_vok(int cond, const char *fmt, va_list ap)
{
    tap_n++;
    if (!cond) tap_failed++;
    printf("%sok %d - ", cond ? "" : "not ", tap_n);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
}

/* ok(cond, "name %d", ...) */
static int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static int ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    tap_vok(cond, fmt, ap);
    va_end(ap);
    return cond;
}

/* Relative-or-absolute closeness: |a-b| <= tol * max(1, |b|). */
static int close_to(double a, double b, double tol) __attribute__((unused));
static int close_to(double a, double b, double tol)
{
    double s = fabs(b) > 1 ? fabs(b) : 1;
    return fabs(a - b) <= tol * s;
}

/* ok_close(got, want, tol, "name"): prints both values on failure. */
static int ok_close(double got, double want, double tol, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), unused));
static int ok_close(double got, double want, double tol, const char *fmt, ...)
{
    int c = close_to(got, want, tol);
    va_list ap;
    va_start(ap, fmt);
    tap_vok(c, fmt, ap);
    va_end(ap);
    if (!c) printf("# got %.17g, want %.17g (tol %g)\n", got, want, tol);
    return c;
}

static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
