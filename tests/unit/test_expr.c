/*
 * test_expr.c: unit tests of the expression engine.  Every number is
 * checked against something emnet did not compute: C's libm called here,
 * central finite differences, hand-written printed forms and hand-derived
 * derivatives.
 *
 * The test carries its own small reader for the expression syntax so that
 * cases read like the netlists they come from.  It can build trees two
 * ways: through the simplifying constructors (what the parser does), or
 * raw, node by node, so that folding can be compared against the
 * unsimplified tree it started from.
 */
#include "config.h"
#include "expr.h"
#include "tap.h"

#include <ctype.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------- a tiny reader */

typedef struct reader {
    const char *s;
    emn_arena *ar;
    bool raw;       /* build nodes directly, no simplification */
    bool bad;
} reader;

static const emn_expr *rd_expr(reader *r);

static void skip(reader *r)
{
    while (isspace((unsigned char)*r->s)) r->s++;
}

static bool eat(reader *r, char c)
{
    skip(r);
    if (*r->s != c) return false;
    r->s++;
    return true;
}

static const emn_expr *mk_bin(reader *r, emn_exop op, const emn_expr *a, const emn_expr *b)
{
    if (!r->raw) return emn_expr_binary(r->ar, op, a, b);
    emn_expr *e = emn_arena_alloc(r->ar, sizeof *e);
    e->op = op;
    e->a = a;
    e->b = b;
    return e;
}

static const emn_expr *mk_neg(reader *r, const emn_expr *a)
{
    if (!r->raw) return emn_expr_neg(r->ar, a);
    emn_expr *e = emn_arena_alloc(r->ar, sizeof *e);
    e->op = EMN_EX_NEG;
    e->a = a;
    return e;
}

static const emn_expr *mk_call(reader *r, int fn, int n, const emn_expr **args)
{
    if (!r->raw) return emn_expr_call(r->ar, (emn_func)fn, n, args, EMN_NOLOC);
    emn_expr *e = emn_arena_alloc(r->ar, sizeof *e);
    e->op = EMN_EX_CALL;
    e->fn = (emn_func)fn;
    e->nargs = n;
    const emn_expr **v = emn_arena_alloc(r->ar, (size_t)n * sizeof *v);
    memcpy(v, args, (size_t)n * sizeof *v);
    e->args = v;
    return e;
}

static const emn_expr *rd_unary(reader *r);

/* atom: number | v<k> | x(n[,n]) | name | name(args) | (expr) */
static const emn_expr *rd_atom(reader *r)
{
    skip(r);
    if (eat(r, '(')) {
        const emn_expr *e = rd_expr(r);
        if (!eat(r, ')')) r->bad = true;
        return e;
    }
    if (isdigit((unsigned char)*r->s) || *r->s == '.') {
        char *end;
        double v = strtod(r->s, &end);
        r->s = end;
        return emn_expr_num(r->ar, v);
    }
    if (!isalpha((unsigned char)*r->s)) {
        r->bad = true;
        return emn_expr_num(r->ar, NAN);
    }
    const char *p = r->s;
    while (isalnum((unsigned char)*r->s) || *r->s == '_') r->s++;
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(r->s - p), p);
    if (name[0] == 'v' && name[1] && strspn(name + 1, "0123456789") == strlen(name + 1))
        return emn_expr_var(r->ar, atoi(name + 1));
    skip(r);
    if (*r->s != '(') return emn_expr_name(r->ar, name, EMN_NOLOC);
    r->s++;
    if (strcmp(name, "x") == 0) {
        char n1[32] = "", n2[32] = "";
        int k = 0;
        skip(r);
        while (isalnum((unsigned char)*r->s) && k < 31) n1[k++] = *r->s++;
        n1[k] = 0;
        if (eat(r, ',')) {
            skip(r);
            k = 0;
            while (isalnum((unsigned char)*r->s) && k < 31) n2[k++] = *r->s++;
            n2[k] = 0;
        }
        if (!eat(r, ')')) r->bad = true;
        return emn_expr_xref(r->ar, n1, n2[0] ? n2 : NULL, EMN_NOLOC);
    }
    int lo, hi, fn = emn_expr_func_lookup(name, &lo, &hi);
    const emn_expr *args[8];
    int n = 0;
    do {
        if (n < 8) args[n++] = rd_expr(r);
    } while (eat(r, ','));
    if (!eat(r, ')') || fn < 0 || n < lo || n > hi) {
        r->bad = true;
        return emn_expr_num(r->ar, NAN);
    }
    return mk_call(r, fn, n, args);
}

/* power: atom ['^' unary]   (right-associative, -x^2 = -(x^2)) */
static const emn_expr *rd_power(reader *r)
{
    const emn_expr *a = rd_atom(r);
    if (eat(r, '^')) return mk_bin(r, EMN_EX_POW, a, rd_unary(r));
    return a;
}

static const emn_expr *rd_unary(reader *r)
{
    if (eat(r, '-')) return mk_neg(r, rd_unary(r));
    return rd_power(r);
}

static const emn_expr *rd_term(reader *r)
{
    const emn_expr *e = rd_unary(r);
    for (;;) {
        if (eat(r, '*')) e = mk_bin(r, EMN_EX_MUL, e, rd_unary(r));
        else if (eat(r, '/')) e = mk_bin(r, EMN_EX_DIV, e, rd_unary(r));
        else return e;
    }
}

static const emn_expr *rd_expr(reader *r)
{
    const emn_expr *e = rd_term(r);
    for (;;) {
        if (eat(r, '+')) e = mk_bin(r, EMN_EX_ADD, e, rd_term(r));
        else if (eat(r, '-')) e = mk_bin(r, EMN_EX_SUB, e, rd_term(r));
        else return e;
    }
}

static const emn_expr *read_as(emn_arena *ar, const char *s, bool raw)
{
    reader r = {s, ar, raw, false};
    const emn_expr *e = rd_expr(&r);
    skip(&r);
    if (r.bad || *r.s) {
        printf("# test reader cannot read '%s'\n", s);
        exit(99);
    }
    return e;
}

static const emn_expr *rd(emn_arena *ar, const char *s) { return read_as(ar, s, false); }
static const emn_expr *rd_raw(emn_arena *ar, const char *s) { return read_as(ar, s, true); }

/* ------------------------------------------------------------- helpers */

static char pbuf[4][4096];
static int pnext;

/* Printed form, in one of a few rotating static buffers (test-only). */
static const char *pr(const emn_expr *e)
{
    emn_buf b = {0};
    emn_expr_print(&b, e, NULL, NULL);
    char *out = pbuf[pnext++ % 4];
    snprintf(out, sizeof pbuf[0], "%s", b.v);
    emn_buf_free(&b);
    return out;
}

static int ok_str(const char *got, const char *want, const char *name)
{
    int c = ok(strcmp(got, want) == 0, "%s", name);
    if (!c) printf("# got '%s', want '%s'\n", got, want);
    return c;
}

/* Named constants the derivative cases use, all of order one so that a
 * relative tolerance means something. */
static const struct { const char *name; double v; } params[] = {
    {"eps", 2.5}, {"a", 0.7}, {"g0", 1.5}, {"l0", 0.8}, {"xg", 0.3}, {"r", 2.0},
    {"k", 1.3}, {"b", -0.4}, {"c", 0.9},
};

static const emn_expr *bind_params(void *ctx, const emn_expr *leaf)
{
    emn_arena *ar = ctx;
    if (leaf->op != EMN_EX_NAME) return NULL;
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++)
        if (strcmp(params[i].name, leaf->name) == 0) return emn_expr_num(ar, params[i].v);
    return NULL;
}

static const emn_expr *bind(emn_arena *ar, const emn_expr *e)
{
    return emn_expr_subst(ar, e, bind_params, ar);
}

/* Nodes counted as a tree (shared subtrees count every time they occur):
 * what printing and tree evaluation pay. */
static int tree_size(const emn_expr *e)
{
    switch (e->op) {
    case EMN_EX_NUM: case EMN_EX_VAR: case EMN_EX_NAME: case EMN_EX_XREF: return 1;
    case EMN_EX_NEG: return 1 + tree_size(e->a);
    case EMN_EX_CALL: {
        int n = 1;
        for (int i = 0; i < e->nargs; i++) n += tree_size(e->args[i]);
        return n;
    }
    default: return 1 + tree_size(e->a) + tree_size(e->b);
    }
}

static unsigned long long rng_state = 88172645463325252ULL;

static double uniform(double lo, double hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return lo + (hi - lo) * (double)(rng_state >> 11) / 9007199254740992.0;
}

static bool same_double(double x, double y)
{
    return (isnan(x) && isnan(y)) || memcmp(&x, &y, sizeof x) == 0 || (x == y && x != 0);
}

/* |got - want| <= tol * max(|want|, floor): relative where the value is
 * not tiny. */
static bool rel_close(double got, double want, double tol, double floor_)
{
    double s = fabs(want) > floor_ ? fabs(want) : floor_;
    return fabs(got - want) <= tol * s;
}

/* --------------------------------------------------------------- evaluation */

static void test_eval(emn_arena *ar)
{
    const double pts[] = {-2.5, -0.3, 0.0, 0.45, 1.7};
    const double unit[] = {-0.9, -0.2, 0.0, 0.35, 0.8};
    static const struct { const char *src; double (*f)(double); bool in_unit; } one[] = {
        {"sin(v1)", sin, false},   {"cos(v1)", cos, false},   {"tan(v1)", tan, false},
        {"asin(v1)", asin, true},  {"acos(v1)", acos, true},  {"atan(v1)", atan, false},
        {"sinh(v1)", sinh, false}, {"cosh(v1)", cosh, false}, {"tanh(v1)", tanh, false},
        {"exp(v1)", exp, false},   {"abs(v1)", fabs, false},
    };
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) {
        const emn_expr *e = rd(ar, one[i].src);
        emn_tape *t = emn_tape_compile(e);
        for (int j = 0; j < 5; j++) {
            double x = one[i].in_unit ? unit[j] : pts[j];
            double v[2] = {0, x};
            ok_close(emn_expr_eval(e, v), one[i].f(x), 1e-15, "eval %s at %g", one[i].src, x);
            ok(same_double(emn_tape_eval(t, v), one[i].f(x)), "tape %s at %g", one[i].src, x);
        }
        emn_tape_free(&t);
        ok(t == NULL, "tape_free clears the pointer (%s)", one[i].src);
    }
    /* positive-domain functions and the two-argument ones */
    const double pos[] = {0.01, 0.5, 1.0, 3.0, 250.0};
    for (int j = 0; j < 5; j++) {
        double x = pos[j], v[3] = {0, x, pts[j]};
        ok_close(emn_expr_eval(rd(ar, "ln(v1)"), v), log(x), 1e-15, "eval ln at %g", x);
        ok_close(emn_expr_eval(rd(ar, "log(v1)"), v), log(x), 1e-15, "eval log is ln at %g", x);
        ok_close(emn_expr_eval(rd(ar, "log10(v1)"), v), log10(x), 1e-15, "eval log10 at %g", x);
        ok_close(emn_expr_eval(rd(ar, "sqrt(v1)"), v), sqrt(x), 1e-15, "eval sqrt at %g", x);
        ok_close(emn_expr_eval(rd(ar, "pow(v1,v2)"), v), pow(x, pts[j]), 1e-15, "eval pow at %g", x);
        ok_close(emn_expr_eval(rd(ar, "v1^v2"), v), pow(x, pts[j]), 1e-15, "eval ^ at %g", x);
        ok_close(emn_expr_eval(rd(ar, "atan2(v2,v1)"), v), atan2(pts[j], x), 1e-15, "eval atan2 at %g", x);
        ok_close(emn_expr_eval(rd(ar, "atan2(v1,v2)"), v), atan2(x, pts[j]), 1e-15, "eval atan2 swapped at %g", x);
        ok_close(emn_expr_eval(rd(ar, "v1+v2"), v), x + pts[j], 0, "eval + at %g", x);
        ok_close(emn_expr_eval(rd(ar, "v1-v2"), v), x - pts[j], 0, "eval - at %g", x);
        ok_close(emn_expr_eval(rd(ar, "v1*v2"), v), x * pts[j], 0, "eval * at %g", x);
        ok_close(emn_expr_eval(rd(ar, "v2/v1"), v), pts[j] / x, 0, "eval / at %g", x);
        ok_close(emn_expr_eval(rd(ar, "-v2"), v), -pts[j], 0, "eval neg at %g", x);
    }
    double v[4] = {0, 3, -1, 2};
    ok(emn_expr_eval(rd(ar, "min(v1,v2,v3)"), v) == -1, "eval min of three");
    ok(emn_expr_eval(rd(ar, "max(v1,v2,v3)"), v) == 3, "eval max of three");
    ok(emn_expr_eval(rd(ar, "min(v3,v1)"), v) == 2, "eval min of two");
    ok(emn_expr_eval(rd(ar, "max(v2,v3)"), v) == 2, "eval max of two");
    ok(emn_expr_eval(rd(ar, "sgn(v1)"), v) == 1 && emn_expr_eval(rd(ar, "sgn(v2)"), v) == -1 &&
       emn_expr_eval(rd(ar, "sgn(v0)"), v) == 0, "eval sgn: 1, -1 and sgn(0) = 0");
    ok(emn_expr_eval(rd(ar, "u(v1)"), v) == 1 && emn_expr_eval(rd(ar, "u(v2)"), v) == 0 &&
       emn_expr_eval(rd(ar, "u(v0)"), v) == 0, "eval u: 1 for x>0 else 0, u(0) = 0");
    /* domain errors as libm gives them */
    double z[2] = {0, -1};
    ok(isnan(emn_expr_eval(rd(ar, "sqrt(v1)"), z)), "sqrt(-1) is NaN");
    ok(isnan(emn_expr_eval(rd(ar, "ln(v1)"), z)), "ln(-1) is NaN");
    ok(isinf(emn_expr_eval(rd(ar, "ln(v0)"), z)), "ln(0) is -Inf");
    ok(isnan(emn_expr_eval(rd_raw(ar, "v0/v0"), z)), "0/0 is NaN");
    ok(isnan(emn_expr_eval(rd(ar, "asin(2*v1)"), z)), "asin(-2) is NaN");
    ok(isnan(emn_expr_eval(rd(ar, "min(sqrt(v1),v0)"), z)), "min propagates NaN");
    ok(isnan(emn_expr_eval(rd(ar, "eps+v1"), z)), "unbound NAME evaluates to NaN");
    ok(isnan(emn_expr_eval(rd(ar, "x(m1)"), z)), "XREF evaluates to NaN");
}

static void test_lookup(void)
{
    static const struct { const char *name; int fn, lo, hi; } cases[] = {
        {"sin", EMN_FN_SIN, 1, 1},    {"cos", EMN_FN_COS, 1, 1},     {"tan", EMN_FN_TAN, 1, 1},
        {"asin", EMN_FN_ASIN, 1, 1},  {"acos", EMN_FN_ACOS, 1, 1},   {"atan", EMN_FN_ATAN, 1, 1},
        {"atan2", EMN_FN_ATAN2, 2, 2}, {"sinh", EMN_FN_SINH, 1, 1},  {"cosh", EMN_FN_COSH, 1, 1},
        {"tanh", EMN_FN_TANH, 1, 1},  {"exp", EMN_FN_EXP, 1, 1},     {"ln", EMN_FN_LN, 1, 1},
        {"log", EMN_FN_LN, 1, 1},     {"log10", EMN_FN_LOG10, 1, 1}, {"sqrt", EMN_FN_SQRT, 1, 1},
        {"abs", EMN_FN_ABS, 1, 1},    {"pow", EMN_FN_POW, 2, 2},     {"sgn", EMN_FN_SGN, 1, 1},
        {"u", EMN_FN_STEP, 1, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int lo = -5, hi = -5;
        int fn = emn_expr_func_lookup(cases[i].name, &lo, &hi);
        ok(fn == cases[i].fn && lo == cases[i].lo && hi == cases[i].hi, "lookup %s", cases[i].name);
    }
    int lo, hi;
    ok(emn_expr_func_lookup("min", &lo, &hi) == EMN_FN_MIN && lo == 2 && hi >= 1000, "lookup min: 2 or more");
    ok(emn_expr_func_lookup("max", &lo, &hi) == EMN_FN_MAX && lo == 2 && hi >= 1000, "lookup max: 2 or more");
    ok(emn_expr_func_lookup("pi", &lo, &hi) == -1, "pi is not a function");
    ok(emn_expr_func_lookup("step", &lo, &hi) == -1 && emn_expr_func_lookup("foo", &lo, &hi) == -1,
       "unknown names are not functions");
    ok(strcmp(emn_expr_func_name(EMN_FN_LN), "ln") == 0 && strcmp(emn_expr_func_name(EMN_FN_STEP), "u") == 0 &&
       strcmp(emn_expr_func_name(EMN_FN_ATAN2), "atan2") == 0, "func_name");
}

/* ---------------------------------------------------------- derivatives */

typedef struct dcase {
    const char *src;
    int nvars;              /* variables v1..vn */
    double lo[3], hi[3];    /* sampling box per variable */
    int order;              /* highest derivative order to check */
} dcase;

static const dcase dcases[] = {
    /* every operator and function, alone and composed */
    {"v1+v2", 2, {-2, -2}, {2, 2}, 2},
    {"v1-3*v2", 2, {-2, -2}, {2, 2}, 2},
    {"-v1*v2", 2, {-2, -2}, {2, 2}, 2},
    {"v1/v2", 2, {0.5, 0.5}, {2, 2}, 3},
    {"v1^3", 1, {-2}, {2}, 3},
    {"v1^k", 1, {0.2}, {2}, 3},
    {"v1^0.5", 1, {0.2}, {2}, 3},
    {"k^v1", 1, {-2}, {2}, 3},
    {"v1^v2", 2, {0.3, -2}, {2, 2}, 3},
    {"pow(v1,v2)", 2, {0.3, -2}, {2, 2}, 2},
    {"sin(v1)", 1, {-3}, {3}, 3},
    {"cos(2*v1)", 1, {-3}, {3}, 3},
    {"tan(v1)", 1, {-1.2}, {1.2}, 3},
    {"asin(v1)", 1, {-0.8}, {0.8}, 3},
    {"acos(v1)", 1, {-0.8}, {0.8}, 3},
    {"atan(v1)", 1, {-3}, {3}, 3},
    {"sinh(v1)", 1, {-2}, {2}, 3},
    {"cosh(v1)", 1, {-2}, {2}, 3},
    {"tanh(v1)", 1, {-2}, {2}, 3},
    {"exp(-v1^2)", 1, {-2}, {2}, 3},
    {"ln(v1)", 1, {0.2}, {3}, 3},
    {"log(1+v1^2)", 1, {-2}, {2}, 3},
    {"log10(v1)", 1, {0.2}, {3}, 3},
    {"sqrt(v1)", 1, {0.2}, {3}, 3},
    {"abs(v1)", 1, {0.1}, {2}, 2},
    {"abs(v1)", 1, {-2}, {-0.1}, 2},
    {"sgn(v1)+u(v1)", 1, {0.1}, {2}, 1},
    {"atan2(v1,v2)", 2, {-2, 0.3}, {2, 2}, 3},
    {"atan2(v1,v2)", 2, {0.3, -2}, {2, -0.3}, 3},
    {"min(v1,v2)", 2, {-2, 2.5}, {2, 4}, 2},
    {"min(v1,v2)", 2, {2.5, -2}, {4, 2}, 2},
    {"max(v1,v2)", 2, {-2, 2.5}, {2, 4}, 2},
    {"max(v1,v2)", 2, {2.5, -2}, {4, 2}, 2},
    {"min(v1,v2^2,3)", 2, {-2, -1}, {0, 1}, 2},
    {"min(v1,v2^2,3)", 2, {2, 0.5}, {4, 1.5}, 2},
    {"max(v1,sin(v2),v2^3)", 2, {-1, 1.2}, {0.5, 1.5}, 2},
    {"abs(sin(v1))*max(v1,v2)", 2, {0.2, -1}, {1, 0}, 2},
    /* the cases the formulations rely on */
    {"eps*a/(g0 - v1)", 1, {-1}, {1}, 3},
    {"l0/(1 + v1/xg)", 1, {0}, {1}, 3},
    {"0.05*cos(v1)", 1, {-3}, {3}, 3},
    {"sqrt(r^2 - (a*sin(v1))^2)", 1, {-3}, {3}, 3},
    {"eps*a/(g0 - v1)^2 + k*(v1-b)^2/2", 1, {-1}, {1}, 3},
    {"c*sqrt(l0*(1+v1)*l0*(1-v2))", 2, {-0.5, -0.5}, {0.5, 0.5}, 3},
    {"exp(v1)*sin(v2)/(1+v1^2)", 2, {-1, -2}, {1, 2}, 3},
};

/* Check d^order e/dv... at random points against central differences of
 * the symbolic derivative one order lower.  `bound` decides whether names
 * are bound before or after differentiating (both must agree). */
static void check_case(emn_arena *ar, const dcase *c, bool bind_first)
{
    const emn_expr *e0 = rd(ar, c->src);
    const emn_expr *e = bind_first ? bind(ar, e0) : e0;
    for (int wrt = 1; wrt <= c->nvars; wrt++) {
        const emn_expr *lower = e;
        for (int order = 1; order <= c->order; order++) {
            const emn_expr *d = emn_expr_diff(ar, lower, wrt);
            const emn_expr *fd_of = bind_first ? lower : bind(ar, lower);
            const emn_expr *dd = bind_first ? d : bind(ar, d);
            emn_tape *t = emn_tape_compile(dd);
            int good = 0, tape_good = 0, n = 6;
            for (int p = 0; p < n; p++) {
                double x[4] = {0.123, 0, 0, 0};
                for (int k = 1; k <= c->nvars; k++) x[k] = uniform(c->lo[k - 1], c->hi[k - 1]);
                double h = 1e-6 * (fabs(x[wrt]) > 1 ? fabs(x[wrt]) : 1);
                double xp[4], xm[4];
                memcpy(xp, x, sizeof x);
                memcpy(xm, x, sizeof x);
                xp[wrt] += h;
                xm[wrt] -= h;
                double fd = (emn_expr_eval(fd_of, xp) - emn_expr_eval(fd_of, xm)) / (xp[wrt] - xm[wrt]);
                double got = emn_expr_eval(dd, x);
                if (isfinite(got) && rel_close(got, fd, 1e-6, 1e-6))
                    good++;
                else
                    printf("# %s d%d/dv%d at v1=%.17g v2=%.17g: symbolic %.17g, differences %.17g\n",
                           c->src, order, wrt, x[1], x[2], got, fd);
                if (same_double(emn_tape_eval(t, x), got)) tape_good++;
            }
            ok(good == n, "d%d/dv%d %s%s matches finite differences", order, wrt, c->src,
               bind_first ? " (bound first)" : "");
            ok(tape_good == n, "d%d/dv%d %s%s tape equals tree", order, wrt, c->src,
               bind_first ? " (bound first)" : "");
            emn_tape_free(&t);
            lower = d;
        }
    }
}

static void test_diff(emn_arena *ar)
{
    for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) {
        check_case(ar, &dcases[i], false);
        check_case(ar, &dcases[i], true);
    }

    /* hand-derived forms */
    ok_str(pr(emn_expr_diff(ar, rd(ar, "v1^2"), 1)), "2*v1", "d/dv1 v1^2 = 2*v1");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "3*v1+v2"), 1)), "3", "d/dv1 3*v1+v2 = 3");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "3*v1+v2"), 2)), "1", "d/dv2 3*v1+v2 = 1");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "sin(v1)"), 1)), "cos(v1)", "d sin = cos");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "0.05*cos(v1)"), 1)), "-0.05*sin(v1)", "d 0.05*cos");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "abs(v1)"), 1)), "sgn(v1)", "d abs = sgn");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "sgn(v1)+u(v1)"), 1)), "0", "d sgn = d u = 0");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "min(v1,v2)"), 1)), "u(v2-v1)", "d/dv1 min(v1,v2) = u(v2-v1)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "max(v1,v2)"), 2)), "1-u(v1-v2)", "d/dv2 max(v1,v2) = 1-u(v1-v2)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "eps*v2"), 1)), "0", "derivative of a function of others is 0");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "x(m1)*v1"), 1)), "x(m1)", "XREF is a constant to diff");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "v1^3"), 1)), "3*v1^2", "d v1^3 = 3*v1^2");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "k^v1"), 1)), "k^v1*ln(k)", "d k^v1 = k^v1*ln(k)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "v1^v2"), 2)), "v1^v2*ln(v1)", "d/dv2 v1^v2 = v1^v2*ln(v1)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "atan2(v1,v2)"), 1)), "v2/(v2^2+v1^2)", "d/dy atan2(y,x) = x/(x^2+y^2)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "atan2(v1,v2)"), 2)), "-v1/(v2^2+v1^2)", "d/dx atan2(y,x) = -y/(x^2+y^2)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "ln(v1)"), 1)), "1/v1", "d ln = 1/x");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "exp(2*v1)"), 1)), "2*exp(2*v1)", "d exp(2x) = 2*exp(2x)");
    ok_str(pr(emn_expr_diff(ar, rd(ar, "sqrt(v1)"), 1)), "0.5/sqrt(v1)", "d sqrt = 0.5/sqrt");
    ok_str(pr(emn_expr_diff(ar, emn_expr_diff(ar, rd(ar, "sqrt(v1)"), 1), 1)), "-0.25/v1^1.5",
           "d2 sqrt = -0.25/x^1.5");

    /* the capacitor energy derivatives stay one term each:
     * d^n/dx^n eps*a/(g0-x) = n! eps*a/(g0-x)^(n+1) */
    const emn_expr *cap = rd(ar, "eps*a/(g0 - v1)");
    const emn_expr *d1 = emn_expr_diff(ar, cap, 1);
    const emn_expr *d2 = emn_expr_diff(ar, d1, 1);
    const emn_expr *d3 = emn_expr_diff(ar, d2, 1);
    ok_str(pr(d1), "eps*a/(g0-v1)^2", "d1 of eps*a/(g0-x)");
    ok_str(pr(d2), "2*eps*a/(g0-v1)^3", "d2 of eps*a/(g0-x)");
    ok_str(pr(d3), "6*eps*a/(g0-v1)^4", "d3 of eps*a/(g0-x)");
    ok(tree_size(d3) <= 13, "d3 of eps*a/(g0-x) is small (%d nodes)", tree_size(d3));
    double xv[2] = {0, 0.4}, g = 1.5 - 0.4;
    ok_close(emn_expr_eval(bind(ar, d3), xv), 6 * 2.5 * 0.7 / (g * g * g * g), 1e-14,
             "d3 of eps*a/(g0-x) against 6*eps*a/(g0-x)^4");

    /* l0/(1+x/xg): d^n = l0 * (-1)^n n! / xg^n / (1+x/xg)^(n+1) */
    const emn_expr *ind = rd(ar, "l0/(1 + v1/xg)");
    const emn_expr *i3 = emn_expr_diff(ar, emn_expr_diff(ar, emn_expr_diff(ar, ind, 1), 1), 1);
    double s = 1 + 0.4 / 0.3;
    ok_close(emn_expr_eval(bind(ar, i3), xv), -6 * 0.8 / (0.3 * 0.3 * 0.3) / (s * s * s * s), 1e-13,
             "d3 of l0/(1+x/xg) against the hand formula");
    ok(tree_size(i3) <= 16, "d3 of l0/(1+x/xg) is small (%d nodes)", tree_size(i3));
    ok_str(pr(i3), "-6*l0/((1+v1/xg)^4*xg^3)", "d3 of l0/(1+x/xg)");

    const emn_expr *rod = rd(ar, "sqrt(r^2 - (a*sin(v1))^2)");
    const emn_expr *r3 = emn_expr_diff(ar, emn_expr_diff(ar, emn_expr_diff(ar, rod, 1), 1), 1);
    ok(tree_size(r3) <= 200, "d3 of the slider-crank rod length stays bounded (%d nodes)", tree_size(r3));
}

/* ------------------------------------------------------- simplification */

static void test_simplify(emn_arena *ar)
{
    static const struct { const char *src, *want; } cases[] = {
        {"v1+0", "v1"},          {"0+v1", "v1"},          {"v1-0", "v1"},
        {"0-v1", "-v1"},         {"v1*1", "v1"},          {"1*v1", "v1"},
        {"v1*0", "0"},           {"0*v1", "0"},           {"v1/1", "v1"},
        {"0/v1", "0"},           {"0/0", "0/0"},          {"1/0", "1/0"},
        {"v1^1", "v1"},          {"v1^0", "1"},           {"-(-v1)", "v1"},
        {"-(3)", "-3"},          {"-(-(2.5))", "2.5"},    {"v1-v1", "0"},
        {"(v1+v2)-(v1+v2)", "0"}, {"sin(v1)-sin(v1)", "0"}, {"v1+(-v2)", "v1-v2"},
        {"v1-(-v2)", "v1+v2"},   {"-v1+v2", "v2-v1"},     {"2*3+v1", "6+v1"},
        {"2^10", "1024"},        {"sqrt(16)", "4"},       {"sin(0)+cos(0)", "1"},
        {"sqrt(-1)", "sqrt(-1)"}, {"ln(0)", "ln(0)"},     {"max(1,7,3)", "7"},
        {"2*(3*v1)", "6*v1"},    {"v1*2", "2*v1"},        {"v1*v1", "v1^2"},
        {"v1^2*v1", "v1^3"},     {"v1/v1^3", "1/v1^2"},   {"(v1^2)^3", "v1^6"},
        {"pow(v1,2)", "v1^2"},   {"1^v1", "1"},           {"v1*(-1)", "-v1"},
        {"-(v1-v2)", "v2-v1"},   {"(-v1)*v2", "-v1*v2"},  {"v1/(-v2)", "-v1/v2"},
        {"v1+v1", "2*v1"},       {"eps*0+a*1", "a"},      {"-(2*v1)", "-2*v1"},
        {"v1-2*0.5", "v1-1"},    {"v1+(-3)", "v1-3"},     {"x^2/2", "x^2/2"},
        {"-q1^2/(2*c1)", "-q1^2/(2*c1)"},                 {"6*v1/2", "3*v1"},
        {"v1/3", "v1/3"},        {"(2*v1)*(3*v2)", "6*v1*v2"}, {"v1/(2*v1^3)", "1/(2*v1^2)"},
        {"(a*b)^2/b", "a^2*b"},  {"sqrt(v1)*sqrt(v1)", "v1"}, {"(v1-1)-1", "v1-2"},
        {"v1/v1", "1"},          {"v1/0", "v1/0"},        {"(-v1)^2", "v1^2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "simplify %s -> %s", cases[i].src, cases[i].want);
        ok_str(pr(rd(ar, cases[i].src)), cases[i].want, name);
        snprintf(name, sizeof name, "fold %s -> %s", cases[i].src, cases[i].want);
        ok_str(pr(emn_expr_fold(ar, rd_raw(ar, cases[i].src))), cases[i].want, name);
    }

    /* Folding never changes a value where the raw tree has one. */
    static const char *const vals[] = {
        "v1+0", "0-v1", "v1*1", "v1/1", "0/v1", "v1^1", "v1^0", "-(-v1)", "v1-v1",
        "v1+(-v2)", "v1-(-v2)", "-v1+v2", "(-v1)*v2", "v1/(-v2)", "-(v1-v2)", "v1*v1",
        "v1^2*v1", "v1/v1^3", "(v1^2)^3", "(v1^3)^(-2)", "2*(3*v1)", "v1*2", "v1+v1",
        "2*3+v1*4/2", "-(2*v1)", "v1^0.5*v1^1.5", "(3*v1)/v1^2", "v1/v1",
        "sqrt(4)*v1-ln(exp(2))*v2", "atan2(1,2)*v1", "(v1-v2)*(-(v1+1))/(-(v2^2))",
        "-(-(v1*v2))/(-v1)", "min(v1,2*0+v2)", "2^v2*v1^(1+1)", "v1*0.1*10",
    };
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        const emn_expr *raw = rd_raw(ar, vals[i]);
        const emn_expr *f = emn_expr_fold(ar, raw);
        const emn_expr *s2 = rd(ar, vals[i]);
        emn_tape *t = emn_tape_compile(f);
        int good = 0, n = 20;
        for (int p = 0; p < n; p++) {
            double x[3] = {0, uniform(-3, 3), uniform(-3, 3)};
            if (p == 0) x[1] = 0;
            if (p == 1) x[2] = 1;
            double want = emn_expr_eval(raw, x);
            double got = emn_expr_eval(f, x), got2 = emn_expr_eval(s2, x);
            if (!isfinite(want) ||
                (rel_close(got, want, 1e-14, 1e-300) && rel_close(got2, want, 1e-14, 1e-300) &&
                 same_double(emn_tape_eval(t, x), got)))
                good++;
            else
                printf("# %s at %g,%g: raw %.17g, folded %.17g (%s), built %.17g\n", vals[i], x[1], x[2],
                       want, got, pr(f), got2);
        }
        ok(good == n, "folding keeps the value of %s", vals[i]);
        emn_tape_free(&t);
    }
}

/* ------------------------------------------------------------- printing */

static void name_vars(emn_buf *out, int var, void *ctx)
{
    if (var == 0)
        emn_buf_puts(out, "time");
    else
        emn_buf_printf(out, "%s%d", (const char *)ctx, var);
}

static void test_print(emn_arena *ar)
{
    static const struct { const char *src, *want; } cases[] = {
        {"a-(b-c)", "a-(b-c)"},   {"(a-b)-c", "a-b-c"},     {"a-(b+c)", "a-(b+c)"},
        {"a+(b-c)", "a+b-c"},     {"a/(b*c)", "a/(b*c)"},   {"(a/b)*c", "a/b*c"},
        {"a/(b/c)", "a/(b/c)"},   {"(a/b)/c", "a/b/c"},     {"a*(b/c)", "a*b/c"},
        {"(a+b)^2", "(a+b)^2"},   {"-(a+b)", "-(a+b)"},     {"a^b^c", "a^b^c"},
        {"a^(b^c)", "a^b^c"},     {"(a^b)^c", "(a^b)^c"},   {"-a^2", "-a^2"},
        {"(-a)^2", "(-a)^2"},     {"-(a^2)", "-a^2"},       {"a^(-b)", "a^(-b)"},
        {"a*(-b)", "a*(-b)"},     {"a-(-b)", "a-(-b)"},     {"a+(-b)", "a+(-b)"},
        {"-(-a)", "-(-a)"},       {"-(a*b)", "-a*b"},       {"(-a)*b", "-a*b"},
        {"a*(b+c)", "a*(b+c)"},   {"(a+b)*c", "(a+b)*c"},   {"x^2/2", "x^2/2"},
        {"-q1^2/(2*c1)", "-q1^2/(2*c1)"},                   {"-(q1^2/(2*c1))", "-q1^2/(2*c1)"},
        {"a-(-b)*c", "a-(-b*c)"}, {"(a*b)^(c+1)", "(a*b)^(c+1)"},
        {"sin(a+b)*cos(-a)", "sin(a+b)*cos(-a)"},           {"atan2(a, b-c)", "atan2(a,b-c)"},
        {"min(a,b,c)", "min(a,b,c)"},                       {"log(a)", "ln(a)"},
        {"u(a)*sgn(b)", "u(a)*sgn(b)"},                     {"x(m1)", "x(m1)"},
        {"x(m1, m2)*2", "x(m1,m2)*2"},                      {"v3+v0", "v3+v0"},
        {"2", "2"},               {"0.5", "0.5"},           {"0.000001", "1e-06"},
        {"1000000", "1000000"},   {"2.5e-12", "2.5e-12"},   {"3.14159265", "3.14159"},
        {"123456.7", "123457"},   {"1e20", "1e+20"},        {"-(0.25)", "-0.25"},
        {"a-(-(2))", "a-(-2)"},   {"(-2)^a", "(-2)^a"},     {"2^(-1)", "2^(-1)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, "print %s as %s", cases[i].src, cases[i].want);
        const emn_expr *e = rd_raw(ar, cases[i].src);
        ok_str(pr(e), cases[i].want, name);
        /* reading the printed text back must give the same printed text */
        snprintf(name, sizeof name, "reprint %s", cases[i].want);
        ok_str(pr(rd_raw(ar, cases[i].want)), cases[i].want, name);
    }
    /* and the same value: names bound, at a point */
    static const char *const round[] = {"a-(b-c)", "a/(b*c)", "(a+b)^2", "-(a+b)", "a^b^c", "(a^b)^c",
                                        "-q1^2/(2*c1)", "a-(-b)*c", "(-a)^2", "-(a*b)/c"};
    for (size_t i = 0; i < sizeof round / sizeof round[0]; i++) {
        const emn_expr *e = rd_raw(ar, round[i]);
        const emn_expr *back = rd_raw(ar, pr(e));
        double want = emn_expr_eval(bind(ar, e), NULL), got = emn_expr_eval(bind(ar, back), NULL);
        /* q1, c1 are not bound: those fall back to checking NaN on both */
        ok(same_double(got, want), "printed %s reads back to the same value", round[i]);
    }

    emn_buf b = {0};
    emn_expr_print(&b, rd(ar, "v1*v2+sin(v0)"), name_vars, "q");
    ok_str(b.v, "q1*q2+sin(time)", "print variables through the callback");
    emn_buf_free(&b);
    emn_expr_print(&b, rd(ar, "v1-v12"), NULL, NULL);
    ok_str(b.v, "v1-v12", "default variable names are v<k>");
    emn_buf_free(&b);
    emn_buf_puts(&b, "L = ");
    emn_expr_print(&b, rd(ar, "a"), NULL, NULL);
    ok_str(b.v, "L = a", "print appends to the buffer");
    emn_buf_free(&b);
}

/* ---------------------------------------------------- subst and queries */

static const emn_expr *shift_vars(void *ctx, const emn_expr *leaf)
{
    emn_arena *ar = ctx;
    return leaf->op == EMN_EX_VAR ? emn_expr_var(ar, leaf->var + 2) : NULL;
}

static const emn_expr *resolve_xref(void *ctx, const emn_expr *leaf)
{
    emn_arena *ar = ctx;
    if (leaf->op != EMN_EX_XREF) return NULL;
    int n1 = strcmp(leaf->name, "m1") == 0 ? 1 : 2;
    if (!leaf->name2) return emn_expr_var(ar, n1);
    int n2 = strcmp(leaf->name2, "m1") == 0 ? 1 : 2;
    return emn_expr_sub(ar, emn_expr_var(ar, n1), emn_expr_var(ar, n2));
}

static const emn_expr *keep_all(void *ctx, const emn_expr *leaf)
{
    (void)ctx, (void)leaf;
    return NULL;
}

static void test_subst(emn_arena *ar)
{
    double v;
    const emn_expr *e = bind(ar, rd(ar, "eps*a/(g0-l0) + sqrt(r)*k^2"));
    ok(e->op == EMN_EX_NUM, "binding every name gives a NUM");
    ok_close(e->num, 2.5 * 0.7 / (1.5 - 0.8) + sqrt(2.0) * 1.3 * 1.3, 1e-15, "bound value");

    e = bind(ar, rd(ar, "eps*v1 + a"));
    ok_str(pr(e), "2.5*v1+0.7", "binding names leaves the variables");

    e = emn_expr_subst(ar, rd(ar, "v1*v2 + sin(v0) - v1^2"), shift_vars, ar);
    ok_str(pr(e), "v3*v4+sin(v2)-v3^2", "renumbering variables");
    ok(emn_expr_max_var(e) == 4, "max_var after renumbering");

    e = emn_expr_subst(ar, rd(ar, "c*(1 + x(m1)/0.05) + x(m1,m2)^2"), resolve_xref, ar);
    ok_str(pr(e), "c*(1+v1/0.05)+(v1-v2)^2", "resolving x(node) to variables");

    const emn_expr *orig = rd(ar, "eps*(v1+v2)");
    ok(emn_expr_subst(ar, orig, keep_all, NULL) == orig, "subst that replaces nothing returns the tree");

    /* substitution simplifies: binding v1 = 0 removes a term */
    e = emn_expr_subst(ar, rd(ar, "v2*sin(x(m1)) + v3"), resolve_xref, ar);
    ok_str(pr(e), "v2*sin(v1)+v3", "x(m1) inside a call");

    const emn_expr *d = rd(ar, "a*v1 + sin(v3)*x(m2)");
    ok(emn_expr_depends(d, 1) && emn_expr_depends(d, 3), "depends: present variables");
    ok(!emn_expr_depends(d, 0) && !emn_expr_depends(d, 2) && !emn_expr_depends(d, 4), "depends: absent variables");
    ok(emn_expr_max_var(d) == 3, "max_var 3");
    ok(emn_expr_max_var(rd(ar, "a*x(m1)+2")) == -1, "max_var without variables is -1");
    ok(emn_expr_max_var(rd(ar, "min(v0,v7,v2)")) == 7, "max_var inside calls");

    ok(emn_expr_is_const(rd_raw(ar, "2*3+sqrt(4)"), &v) && v == 8, "is_const of numbers gives the value");
    ok(emn_expr_is_const(rd_raw(ar, "-(1/0)"), &v) && isinf(v) && v < 0, "is_const of 1/0 gives -Inf");
    ok(!emn_expr_is_const(rd(ar, "2*v0"), &v), "a variable is not constant");
    ok(!emn_expr_is_const(rd(ar, "2*a"), NULL), "a NAME is not constant");
    ok(!emn_expr_is_const(rd(ar, "x(m)+1"), NULL), "an XREF is not constant");
    ok(emn_expr_is_const(rd(ar, "v1*0"), &v) && v == 0, "v*0 folded is constant");
}

/* ------------------------------------------------------------------ tape */

static void test_tape(emn_arena *ar)
{
    /* right-leaning chains force the reordered operators (RSUB, RDIV ...) */
    static const char *const cases[] = {
        "v1-(v2-(v3-(v1-(v2/(v3-v1^(v2-(v3*v1)))))))",
        "v1/(v2+(v3/(v1+v2*(v3+v1))))",
        "v1^(v2/(v3+(v1*(v2+v3))))",
        "atan2(v1, v2+v3*(v1-v2))",
        "atan2(v1*(v2+v3), v2)",
        "min(v1, v2*(v3+v1*(v2-v3)), v3)",
        "max(v1+v2*v3, v2, sin(v3-v1*v2))",
        "a*v1",
        "-(v1-(v2-v3))/(-(v2-v1*(v3+v1)))",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const emn_expr *raw = rd_raw(ar, cases[i]);
        emn_tape *t = emn_tape_compile(raw);
        int good = 0, n = 10;
        for (int p = 0; p < n; p++) {
            double x[4] = {0, uniform(0.1, 2), uniform(0.1, 2), uniform(-2, 2)};
            if (same_double(emn_tape_eval(t, x), emn_expr_eval(raw, x))) good++;
        }
        ok(good == n, "tape equals tree: %s", cases[i]);
        emn_tape_free(&t);
    }
    /* a long sum read right-deep still needs only a couple of stack slots;
     * evaluating it checks the stack is sized right (the sanitizer run) */
    const emn_expr *sum = emn_expr_var(ar, 1);
    for (int i = 0; i < 2000; i++) {
        emn_expr *e = emn_arena_alloc(ar, sizeof *e);
        e->op = EMN_EX_ADD;
        e->a = emn_expr_num(ar, i);
        e->b = sum;
        sum = e;
    }
    emn_tape *t = emn_tape_compile(sum);
    double x[2] = {0, 0.5};
    ok(emn_tape_eval(t, x) == 0.5 + 1999.0 * 2000.0 / 2, "tape of a 2000-term right-deep sum");
    emn_tape_free(&t);
    emn_tape_free(&t);
    ok(t == NULL, "tape_free twice is harmless");
}

/* --------------------------------------------------------------- programs */

/* A program computing an expression and its first and second derivatives
 * at once gives each of them bit for bit as the tree does, and shares the
 * work they have in common. */
static void test_prog(emn_arena *ar)
{
    for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) {
        const dcase *c = &dcases[i];
        const emn_expr *roots[16];
        int nr = 0;
        roots[nr++] = bind(ar, rd(ar, c->src));
        for (int a = 1; a <= c->nvars; a++) {
            const emn_expr *d = emn_expr_diff(ar, roots[0], a);
            roots[nr++] = d;
            for (int b = 1; b <= c->nvars; b++) roots[nr++] = emn_expr_diff(ar, d, b);
        }
        emn_prog *p = emn_prog_compile(roots, nr, c->nvars + 1);
        int good = 0, n = 6;
        for (int k = 0; k < n; k++) {
            double x[4] = {0.123, 0, 0, 0}, out[16];
            for (int v = 1; v <= c->nvars; v++) x[v] = uniform(c->lo[v - 1], c->hi[v - 1]);
            emn_prog_eval(p, x, out);
            int same = 0;
            for (int r = 0; r < nr; r++) same += same_double(out[r], emn_expr_eval(roots[r], x));
            if (same == nr) good++;
        }
        ok(good == n, "program of %s and its derivatives equals the trees", c->src);
        /* and a full batch, which runs each instruction over all lanes
         * at once (the inline powers of the derivatives among them) */
        enum { B = EMN_PROG_BATCH };
        static double bv[4 * B], bo[16 * B];
        double xs[B][4];
        for (int k = 0; k < B; k++) {
            xs[k][0] = 0.123;
            for (int v = 1; v <= c->nvars; v++) xs[k][v] = uniform(c->lo[v - 1], c->hi[v - 1]);
            for (int v = 0; v <= c->nvars; v++) bv[v * B + k] = xs[k][v];
        }
        emn_prog_eval_batch(p, 0, B, bv, bo);
        int lanes = 0;
        for (int k = 0; k < B; k++) {
            int same = 0;
            for (int r = 0; r < nr; r++) same += same_double(bo[r * B + k], emn_expr_eval(roots[r], xs[k]));
            lanes += same == nr;
        }
        ok(lanes == B, "a batch of %s and its derivatives: %d of %d lanes equal the trees", c->src, lanes, B);
        emn_prog_free(&p);
    }
    /* the raw cases: operands in every order, min/max chains, NaN leaves */
    const emn_expr *raw[] = {
        rd_raw(ar, "v1-(v2-(v3-(v1-(v2/(v3-v1^(v2-(v3*v1)))))))"),
        rd_raw(ar, "atan2(v1, v2+v3*(v1-v2))"),
        rd_raw(ar, "min(v1, v2*(v3+v1*(v2-v3)), v3)"),
        rd_raw(ar, "max(v1+v2*v3, v2, sin(v3-v1*v2))"),
        rd_raw(ar, "a*v1"),
        rd_raw(ar, "v3*v2 + v2*v3 - v1^2/v1^-1"),
        rd_raw(ar, "v2^-2 - v3^3 + v2^2.5 - (-v3)"),
    };
    int nraw = (int)(sizeof raw / sizeof raw[0]);
    emn_prog *p = emn_prog_compile(raw, nraw, 4);
    int good = 0, n = 10;
    for (int k = 0; k < n; k++) {
        double x[4] = {0, uniform(0.1, 2), uniform(0.1, 2), uniform(-2, 2)}, out[16];
        emn_prog_eval(p, x, out);
        int same = 0;
        for (int r = 0; r < nraw; r++) same += same_double(out[r], emn_expr_eval(raw[r], x));
        if (same == nraw) good++;
    }
    ok(good == n, "program of the raw cases equals the trees");
    /* a batch: every lane equals its tree, a full batch and then a short
     * one, with lanes where v1 = 0 (division by zero, 0^-1) among them */
    enum { B = EMN_PROG_BATCH };
    static double bv[4 * B], bo[16 * B];
    for (int nb = B, round = 0; round < 2; round++, nb = 5) {
        double xs[B][4];
        for (int k = 0; k < nb; k++) {
            xs[k][0] = 0;
            xs[k][1] = k % 4 == 3 ? 0 : uniform(0.1, 2);
            xs[k][2] = uniform(0.1, 2);
            xs[k][3] = uniform(-2, 2);
            for (int v = 0; v < 4; v++) bv[v * B + k] = xs[k][v];
        }
        emn_prog_eval_batch(p, round, nb, bv, bo);
        int lanes = 0;
        for (int k = 0; k < nb; k++) {
            int same = 0;
            for (int r = 0; r < nraw; r++) same += same_double(bo[r * B + k], emn_expr_eval(raw[r], xs[k]));
            lanes += same == nraw;
        }
        ok(lanes == nb, "a batch of %d: %d lanes equal the trees", nb, lanes);
    }
    emn_prog_free(&p);
    /* sharing: C(x) = eps a/(g0 - x) and its derivative need g0 - x once;
     * a root given twice costs nothing more */
    const emn_expr *cx = bind(ar, rd(ar, "eps*a/(g0 - v1)"));
    const emn_expr *two[3] = {cx, emn_expr_diff(ar, cx, 1), cx};
    emn_prog *p1 = emn_prog_compile(two, 1, 2), *p2 = emn_prog_compile(two + 1, 1, 2);
    emn_prog *p12 = emn_prog_compile(two, 2, 2), *p121 = emn_prog_compile(two, 3, 2);
    ok(emn_prog_length(p12) < emn_prog_length(p1) + emn_prog_length(p2),
       "C(x) and C'(x) share work: %d < %d + %d", emn_prog_length(p12), emn_prog_length(p1), emn_prog_length(p2));
    ok(emn_prog_length(p121) == emn_prog_length(p12), "a repeated root adds no instruction");
    emn_prog_free(&p1);
    emn_prog_free(&p2);
    emn_prog_free(&p12);
    emn_prog_free(&p121);
    ok(p1 == NULL, "prog_free clears the pointer");
    emn_prog_free(&p1);
}

/* Keys tell trees apart exactly where printing rounds. */
static void test_key(emn_arena *ar)
{
    emn_buf k1 = {0}, k2 = {0}, k3 = {0};
    emn_expr_key(&k1, rd_raw(ar, "1.0000001*v1 + sin(v2)"));
    emn_expr_key(&k2, rd_raw(ar, "1.0000009*v1 + sin(v2)"));
    emn_expr_key(&k3, rd_raw(ar, "1.0000001*v1 + sin(v2)"));
    ok(strcmp(k1.v, k2.v) != 0, "key: constants differing in the 7th digit differ (%s / %s)", k1.v, k2.v);
    ok(strcmp(k1.v, k3.v) == 0, "key: equal trees give equal keys");
    emn_buf_reset(&k2);
    emn_expr_key(&k2, rd_raw(ar, "1.0000001*v1 + cos(v2)"));
    ok(strcmp(k1.v, k2.v) != 0, "key: different functions differ");
    emn_buf_reset(&k2);
    emn_expr_key(&k2, rd_raw(ar, "1.0000001*v2 + sin(v1)"));
    ok(strcmp(k1.v, k2.v) != 0, "key: different variables differ");
    emn_buf_free(&k1);
    emn_buf_free(&k2);
    emn_buf_free(&k3);
}

int main(void)
{
    emn_arena *ar = emn_arena_new();
    test_lookup();
    test_eval(ar);
    test_diff(ar);
    test_simplify(ar);
    test_print(ar);
    test_subst(ar);
    test_tape(ar);
    test_prog(ar);
    test_key(ar);
    emn_arena_free(&ar);
    return tap_done();
}
