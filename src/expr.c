/*
 * expr.c: the expression engine.  Element values, C(x), L(x), k(x), linkage
 * and source expressions all arrive here as immutable trees in an arena; the
 * formulations differentiate them up to three times, and the time-step loop
 * evaluates the results thousands of times.
 *
 * Two things shape the file.  First, the constructors simplify as they
 * build (constant folding, identities, pulling negations outwards, merging
 * powers of the same base), because symbolic derivatives are built from
 * them and would otherwise grow by a factor at every order.  Second, the
 * tape flattens a finished tree into a postfix program whose operands are
 * ordered by need (Sethi-Ullman), so its evaluation stack is a few slots on
 * the C stack and evaluating allocates nothing and shares nothing between
 * threads.
 *
 * Folding never turns a defined value into a different one; it may turn an
 * undefined one (NaN) into a number, e.g. x*0 -> 0 or x/x -> 1.  Constant
 * subtrees whose value is not finite (1/0, sqrt(-1)) are left unfolded so
 * the error shows where the expression is evaluated, not as a bare "nan".
 */
#include "config.h"
#include "expr.h"

#include <assert.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ functions */

/* ORDER emn_func */
static const struct {
    const char *name;
    int min_args, max_args;
    bool visible;           /* reachable by name from a netlist */
} functions[EMN_FN_COUNT] = {
    {"sin", 1, 1, true},   {"cos", 1, 1, true},   {"tan", 1, 1, true},
    {"asin", 1, 1, true},  {"acos", 1, 1, true},  {"atan", 1, 1, true},
    {"atan2", 2, 2, true}, {"sinh", 1, 1, true},  {"cosh", 1, 1, true},
    {"tanh", 1, 1, true},  {"exp", 1, 1, true},   {"ln", 1, 1, true},
    {"log10", 1, 1, true}, {"sqrt", 1, 1, true},  {"abs", 1, 1, true},
    {"pow", 2, 2, true},   {"min", 2, INT_MAX, true},
    {"max", 2, INT_MAX, true},
    {"sgn", 1, 1, true},   {"u", 1, 1, true},
};

int emn_expr_func_lookup(const char *name, int *min_args, int *max_args)
{
    int fn = -1;
    if (strcmp(name, "log") == 0) {
        fn = EMN_FN_LN;         /* natural log, as ngspice reads it */
    } else {
        for (int i = 0; i < EMN_FN_COUNT; i++)
            if (functions[i].visible && strcmp(functions[i].name, name) == 0) fn = i;
    }
    if (fn < 0) return -1;
    if (min_args) *min_args = functions[fn].min_args;
    if (max_args) *max_args = functions[fn].max_args;
    return fn;
}

const char *emn_expr_func_name(emn_func fn)
{
    return fn >= 0 && fn < EMN_FN_COUNT ? functions[fn].name : "?";
}

/* x^y, with the small whole powers that energies are made of (squares,
 * cubes, reciprocals) as products: exact where pow is within an ulp, and
 * several times faster.  Every evaluator and the constant folder use it,
 * so trees, tapes and folded constants agree bit for bit. */
static double power(double x, double y)
{
    if (y == 2) return x * x;
    if (y == -1) return 1 / x;
    if (y == -2) return 1 / (x * x);
    if (y == 3) return x * x * x;
    return pow(x, y);
}

/* the exponents power() writes as products (T_POWK takes them inline) */
static bool small_power(double y) { return y == 2 || y == -1 || y == -2 || y == 3; }

/* min and max propagate NaN (fmin/fmax would drop it), so a domain error
 * in any argument is seen by the caller. */
static double min_max(bool is_max, int n, const double *x)
{
    double r = x[0];
    for (int i = 0; i < n; i++) {
        if (isnan(x[i])) return x[i];
        if (is_max ? x[i] > r : x[i] < r) r = x[i];
    }
    return r;
}

static double apply(emn_func fn, int n, const double *x)
{
    switch (fn) {
    case EMN_FN_SIN: return sin(x[0]);
    case EMN_FN_COS: return cos(x[0]);
    case EMN_FN_TAN: return tan(x[0]);
    case EMN_FN_ASIN: return asin(x[0]);
    case EMN_FN_ACOS: return acos(x[0]);
    case EMN_FN_ATAN: return atan(x[0]);
    case EMN_FN_ATAN2: return atan2(x[0], x[1]);
    case EMN_FN_SINH: return sinh(x[0]);
    case EMN_FN_COSH: return cosh(x[0]);
    case EMN_FN_TANH: return tanh(x[0]);
    case EMN_FN_EXP: return exp(x[0]);
    case EMN_FN_LN: return log(x[0]);
    case EMN_FN_LOG10: return log10(x[0]);
    case EMN_FN_SQRT: return sqrt(x[0]);
    case EMN_FN_ABS: return fabs(x[0]);
    case EMN_FN_POW: return power(x[0], x[1]);
    case EMN_FN_MIN: return min_max(false, n, x);
    case EMN_FN_MAX: return min_max(true, n, x);
    case EMN_FN_SGN: return x[0] > 0 ? 1.0 : x[0] < 0 ? -1.0 : x[0] == 0 ? 0.0 : x[0];
    case EMN_FN_STEP: return x[0] > 0 ? 1.0 : isnan(x[0]) ? x[0] : 0.0;
    case EMN_FN_COUNT: break;
    }
    return NAN;
}

/* --------------------------------------------------------------- leaves */

static emn_expr *node(emn_arena *ar, emn_exop op)
{
    emn_expr *e = emn_arena_alloc(ar, sizeof *e);
    e->op = op;
    return e;
}

const emn_expr *emn_expr_num(emn_arena *ar, double v)
{
    emn_expr *e = node(ar, EMN_EX_NUM);
    e->num = v;
    return e;
}

const emn_expr *emn_expr_var(emn_arena *ar, int var)
{
    emn_expr *e = node(ar, EMN_EX_VAR);
    e->var = var;
    return e;
}

const emn_expr *emn_expr_name(emn_arena *ar, const char *name, emn_loc loc)
{
    emn_expr *e = node(ar, EMN_EX_NAME);
    e->name = emn_arena_strdup(ar, name);
    e->loc = loc;
    return e;
}

const emn_expr *emn_expr_xref(emn_arena *ar, const char *n1, const char *n2, emn_loc loc)
{
    emn_expr *e = node(ar, EMN_EX_XREF);
    e->name = emn_arena_strdup(ar, n1);
    e->name2 = n2 ? emn_arena_strdup(ar, n2) : NULL;
    e->loc = loc;
    return e;
}

/* ------------------------------------------------------ simplification */

static bool is_num(const emn_expr *e, double v)
{
    return e->op == EMN_EX_NUM && e->num == v;
}

static bool is_const_num(const emn_expr *e)
{
    return e->op == EMN_EX_NUM;
}

/* The only exponents worth merging are integers: (a^p)^n = a^(p*n) holds
 * wherever the left side is defined only when n is an integer. */
static bool is_integer(double v)
{
    return isfinite(v) && v == floor(v);
}

/* Structural equality, with a budget so comparing two large trees (which
 * would almost never be equal anyway) stays cheap. */
static bool same_budget(const emn_expr *a, const emn_expr *b, int *budget)
{
    if (a == b) return true;
    if (--*budget < 0 || a->op != b->op) return false;
    switch (a->op) {
    case EMN_EX_NUM: return a->num == b->num;
    case EMN_EX_VAR: return a->var == b->var;
    case EMN_EX_NAME: return strcmp(a->name, b->name) == 0;
    case EMN_EX_XREF:
        return strcmp(a->name, b->name) == 0 &&
               (a->name2 && b->name2 ? strcmp(a->name2, b->name2) == 0 : a->name2 == b->name2);
    case EMN_EX_NEG: return same_budget(a->a, b->a, budget);
    case EMN_EX_CALL:
        if (a->fn != b->fn || a->nargs != b->nargs) return false;
        for (int i = 0; i < a->nargs; i++)
            if (!same_budget(a->args[i], b->args[i], budget)) return false;
        return true;
    default:
        return same_budget(a->a, b->a, budget) && same_budget(a->b, b->b, budget);
    }
}

static bool same(const emn_expr *a, const emn_expr *b)
{
    int budget = 64;
    return same_budget(a, b, &budget);
}

/* Fold a constant result only when it is finite: 1/0 stays visible. */
static const emn_expr *folded(emn_arena *ar, double v)
{
    return isfinite(v) ? emn_expr_num(ar, v) : NULL;
}

static const emn_expr *raw_binary(emn_arena *ar, emn_exop op, const emn_expr *a, const emn_expr *b)
{
    emn_expr *e = node(ar, op);
    e->a = a;
    e->b = b;
    return e;
}

/* The number at the bottom of the left spine of a product or quotient
 * (the 2 of 2*x*y/z), or NULL.  The constructors keep at most one number
 * there, so constants of a product always meet in one place. */
static const emn_expr *leading_num(const emn_expr *e)
{
    while (e->op == EMN_EX_MUL || e->op == EMN_EX_DIV) e = e->a;
    return e->op == EMN_EX_NUM ? e : NULL;
}

/* e, which has a leading number, with that number replaced by c. */
static const emn_expr *with_leading(emn_arena *ar, const emn_expr *e, double c)
{
    if (e->op == EMN_EX_NUM) return emn_expr_num(ar, c);
    return emn_expr_binary(ar, e->op, with_leading(ar, e->a, c), e->b);
}

/* -(c*x/y) -> (-c)*x/y: the sign goes into the leading number, so
 * negations cancel instead of piling up.  NULL if there is none. */
static const emn_expr *negate_leading(emn_arena *ar, const emn_expr *e)
{
    const emn_expr *c = leading_num(e);
    return c ? with_leading(ar, e, -c->num) : NULL;
}

const emn_expr *emn_expr_neg(emn_arena *ar, const emn_expr *a)
{
    switch (a->op) {
    case EMN_EX_NUM: return emn_expr_num(ar, -a->num);
    case EMN_EX_NEG: return a->a;
    case EMN_EX_SUB: return raw_binary(ar, EMN_EX_SUB, a->b, a->a);
    case EMN_EX_MUL:
    case EMN_EX_DIV: {
        const emn_expr *r = negate_leading(ar, a);
        if (r) return r;
        break;
    }
    default: break;
    }
    emn_expr *e = node(ar, EMN_EX_NEG);
    e->a = a;
    return e;
}

/* (x+c1)+c2 and the like: x+(c1+c2), so that the exponents of repeated
 * power-rule derivatives read n-3, not n-1-1-1. */
static const emn_expr *merge_offsets(emn_arena *ar, const emn_expr *a, double c)
{
    if ((a->op != EMN_EX_ADD && a->op != EMN_EX_SUB) || !is_const_num(a->b)) return NULL;
    double k = (a->op == EMN_EX_ADD ? a->b->num : -a->b->num) + c;
    return isfinite(k) ? emn_expr_add(ar, a->a, emn_expr_num(ar, k)) : NULL;
}

const emn_expr *emn_expr_add(emn_arena *ar, const emn_expr *a, const emn_expr *b)
{
    const emn_expr *f;
    if (is_const_num(a) && is_const_num(b) && (f = folded(ar, a->num + b->num))) return f;
    if (is_num(b, 0)) return a;
    if (is_num(a, 0)) return b;
    if (b->op == EMN_EX_NEG) return emn_expr_sub(ar, a, b->a);
    if (is_const_num(b) && b->num < 0) return raw_binary(ar, EMN_EX_SUB, a, emn_expr_num(ar, -b->num));
    if ((f = leading_num(b)) && f->num < 0) return emn_expr_sub(ar, a, negate_leading(ar, b));
    if (a->op == EMN_EX_NEG) return emn_expr_sub(ar, b, a->a);
    if (is_const_num(b) && (f = merge_offsets(ar, a, b->num))) return f;
    if (same(a, b)) return emn_expr_mul(ar, emn_expr_num(ar, 2), a);
    return raw_binary(ar, EMN_EX_ADD, a, b);
}

const emn_expr *emn_expr_sub(emn_arena *ar, const emn_expr *a, const emn_expr *b)
{
    const emn_expr *f;
    if (is_const_num(a) && is_const_num(b) && (f = folded(ar, a->num - b->num))) return f;
    if (is_num(b, 0)) return a;
    if (is_num(a, 0)) return emn_expr_neg(ar, b);
    if (b->op == EMN_EX_NEG) return emn_expr_add(ar, a, b->a);
    if (is_const_num(b) && b->num < 0) return raw_binary(ar, EMN_EX_ADD, a, emn_expr_num(ar, -b->num));
    if ((f = leading_num(b)) && f->num < 0) return emn_expr_add(ar, a, negate_leading(ar, b));
    if (a->op == EMN_EX_NEG) return emn_expr_neg(ar, emn_expr_add(ar, a->a, b));
    if (is_const_num(b) && (f = merge_offsets(ar, a, -b->num))) return f;
    if (same(a, b)) return emn_expr_num(ar, 0);
    return raw_binary(ar, EMN_EX_SUB, a, b);
}

/* e as base^p with numeric p: a^p, sqrt(a) = a^0.5, or e itself = e^1. */
static bool power_of(const emn_expr *e, const emn_expr **base, double *p)
{
    if (e->op == EMN_EX_POW && is_const_num(e->b)) {
        *base = e->a;
        *p = e->b->num;
    } else if (e->op == EMN_EX_CALL && e->fn == EMN_FN_SQRT) {
        *base = e->args[0];
        *p = 0.5;
    } else {
        *base = e;
        *p = 1;
    }
    return true;
}

static const emn_expr *call1(emn_arena *ar, emn_func fn, const emn_expr *a);

/* a^k built so that a^0 = 1, a^1 = a, a^0.5 = sqrt(a) and a negative k
 * reads as 1/a^-k. */
static const emn_expr *make_power(emn_arena *ar, const emn_expr *a, double k)
{
    if (k < 0) return emn_expr_div(ar, emn_expr_num(ar, 1), make_power(ar, a, -k));
    if (k == 0.5) return call1(ar, EMN_FN_SQRT, a);
    return emn_expr_pow(ar, a, emn_expr_num(ar, k));
}

/*
 * Products and quotients are kept in one normal form,
 *     cn * f1^p1 * f2^p2 ... / (cd * g1^q1 ...),
 * found by flattening both operands into numeric factors and powers of
 * bases, adding the exponents of equal bases and rebuilding.  This is what
 * keeps the quotient and product rules from stacking copies of a
 * denominator: the third derivative of eps*a/(g0-x) is 6*eps*a/(g0-x)^4,
 * not a tower of nested fractions.
 */
#define MAX_FACTORS 24

typedef struct product {
    struct { const emn_expr *base; double p; } f[MAX_FACTORS];
    int n;
    double cn, cd;          /* numeric numerator and denominator */
    bool give_up;           /* too many factors: leave the node as written */
} product;

static void add_factor(product *pr, const emn_expr *base, double p)
{
    if (!is_const_num(base))
        for (int i = 0; i < pr->n; i++)
            if (same(pr->f[i].base, base)) {
                pr->f[i].p += p;
                return;
            }
    if (pr->n == MAX_FACTORS) {
        pr->give_up = true;
        return;
    }
    pr->f[pr->n].base = base;
    pr->f[pr->n].p = p;
    pr->n++;
}

/* Flatten e raised to the integer power s into pr. */
static void collect(product *pr, const emn_expr *e, double s)
{
    const emn_expr *base;
    double p;
    switch (e->op) {
    case EMN_EX_NUM:
        if (s > 0)
            pr->cn *= s == 1 ? e->num : pow(e->num, s);
        else
            pr->cd *= s == -1 ? e->num : pow(e->num, -s);
        return;
    case EMN_EX_NEG:
        if (fmod(s, 2) != 0) pr->cn = -pr->cn;
        collect(pr, e->a, s);
        return;
    case EMN_EX_MUL:
        collect(pr, e->a, s);
        collect(pr, e->b, s);
        return;
    case EMN_EX_DIV:
        collect(pr, e->a, s);
        collect(pr, e->b, -s);
        return;
    case EMN_EX_POW:
        /* (x*y)^n with integer n spreads over the factors */
        if (is_const_num(e->b) && is_integer(e->b->num) &&
            (e->a->op == EMN_EX_MUL || e->a->op == EMN_EX_DIV || e->a->op == EMN_EX_NEG)) {
            collect(pr, e->a, s * e->b->num);
            return;
        }
        break;
    default:
        break;
    }
    power_of(e, &base, &p);
    add_factor(pr, base, p * s);
}

static const emn_expr *chain(emn_arena *ar, const emn_expr *acc, const emn_expr *t)
{
    return acc ? raw_binary(ar, EMN_EX_MUL, acc, t) : t;
}

/* Rebuild a flattened product, or NULL to keep the node as written (too
 * many factors, or a zero denominator that must stay visible). */
static const emn_expr *build_product(emn_arena *ar, product *pr)
{
    if (pr->give_up || pr->cd == 0 || !isfinite(pr->cn) || !isfinite(pr->cd)) return NULL;
    if (pr->cn == 0) return emn_expr_num(ar, 0);
    if (pr->cd < 0) {
        pr->cn = -pr->cn;
        pr->cd = -pr->cd;
    }
    /* 6/2 becomes 3, but 1/3 stays a division: no new rounding */
    if (pr->cd != 1 && fmod(pr->cn, pr->cd) == 0) {
        pr->cn /= pr->cd;
        pr->cd = 1;
    }
    const emn_expr *top = NULL, *bottom = NULL;
    for (int i = 0; i < pr->n; i++)
        if (pr->f[i].p > 0) top = chain(ar, top, make_power(ar, pr->f[i].base, pr->f[i].p));
    for (int i = 0; i < pr->n; i++)
        if (pr->f[i].p < 0) bottom = chain(ar, bottom, make_power(ar, pr->f[i].base, -pr->f[i].p));
    bool minus = pr->cn < 0 && (top == NULL || pr->cn == -1);
    double c = minus ? -pr->cn : pr->cn;
    if (c != 1 || !top) top = top ? raw_binary(ar, EMN_EX_MUL, emn_expr_num(ar, c), top) : emn_expr_num(ar, c);
    if (pr->cd != 1) bottom = bottom ? raw_binary(ar, EMN_EX_MUL, emn_expr_num(ar, pr->cd), bottom)
                                     : emn_expr_num(ar, pr->cd);
    const emn_expr *r = bottom ? raw_binary(ar, EMN_EX_DIV, top, bottom) : top;
    if (minus) {
        emn_expr *e = node(ar, EMN_EX_NEG);
        e->a = r;
        r = e;
    }
    return r;
}

static const emn_expr *normal_product(emn_arena *ar, emn_exop op, const emn_expr *a, const emn_expr *b)
{
    product pr;
    pr.n = 0;
    pr.cn = pr.cd = 1;
    pr.give_up = false;
    collect(&pr, a, 1);
    collect(&pr, b, op == EMN_EX_DIV ? -1 : 1);
    const emn_expr *r = build_product(ar, &pr);
    return r ? r : raw_binary(ar, op, a, b);
}

const emn_expr *emn_expr_mul(emn_arena *ar, const emn_expr *a, const emn_expr *b)
{
    const emn_expr *f;
    if (is_const_num(a) && is_const_num(b) && (f = folded(ar, a->num * b->num))) return f;
    if (is_num(a, 0) || is_num(b, 0)) return emn_expr_num(ar, 0);
    if (is_num(a, 1)) return b;
    if (is_num(b, 1)) return a;
    return normal_product(ar, EMN_EX_MUL, a, b);
}

const emn_expr *emn_expr_div(emn_arena *ar, const emn_expr *a, const emn_expr *b)
{
    const emn_expr *f;
    if (is_const_num(a) && is_const_num(b) && (f = folded(ar, a->num / b->num))) return f;
    if (is_num(b, 1)) return a;
    if (is_num(a, 0) && !is_num(b, 0)) return a;
    return normal_product(ar, EMN_EX_DIV, a, b);
}

const emn_expr *emn_expr_pow(emn_arena *ar, const emn_expr *a, const emn_expr *b)
{
    const emn_expr *f;
    if (is_const_num(a) && is_const_num(b) && (f = folded(ar, power(a->num, b->num)))) return f;
    if (is_num(b, 0)) return emn_expr_num(ar, 1);     /* C's pow(x, 0) is 1 for every x */
    if (is_num(b, 1)) return a;
    if (is_num(a, 1)) return a;                        /* and pow(1, y) is 1 for every y */
    if (is_const_num(b) && is_integer(b->num)) {
        const emn_expr *base;
        double p;
        if (a->op == EMN_EX_MUL || a->op == EMN_EX_DIV || a->op == EMN_EX_NEG) {
            product pr;
            pr.n = 0;
            pr.cn = pr.cd = 1;
            pr.give_up = false;
            collect(&pr, a, b->num);
            if ((f = build_product(ar, &pr))) return f;
        } else if (power_of(a, &base, &p) && base != a) {
            double k = p * b->num;
            if (isfinite(k)) return make_power(ar, base, k);
        }
    }
    return raw_binary(ar, EMN_EX_POW, a, b);
}

const emn_expr *emn_expr_binary(emn_arena *ar, emn_exop op, const emn_expr *a, const emn_expr *b)
{
    switch (op) {
    case EMN_EX_ADD: return emn_expr_add(ar, a, b);
    case EMN_EX_SUB: return emn_expr_sub(ar, a, b);
    case EMN_EX_MUL: return emn_expr_mul(ar, a, b);
    case EMN_EX_DIV: return emn_expr_div(ar, a, b);
    case EMN_EX_POW: return emn_expr_pow(ar, a, b);
    default: return raw_binary(ar, op, a, b);
    }
}

const emn_expr *emn_expr_call(emn_arena *ar, emn_func fn, int nargs,
                              const emn_expr *const *args, emn_loc loc)
{
    /* pow(a, b) is a^b: one node kind, one derivative rule */
    if (fn == EMN_FN_POW && nargs == 2) return emn_expr_pow(ar, args[0], args[1]);
    bool all_const = nargs > 0;
    for (int i = 0; i < nargs; i++)
        if (!is_const_num(args[i])) all_const = false;
    if (all_const) {
        double small[4], *x = nargs <= 4 ? small : emn_xmalloc((size_t)nargs * sizeof *x);
        for (int i = 0; i < nargs; i++) x[i] = args[i]->num;
        double v = apply(fn, nargs, x);
        if (x != small) free(x);
        if (isfinite(v)) return emn_expr_num(ar, v);
    }
    emn_expr *e = node(ar, EMN_EX_CALL);
    e->fn = fn;
    e->nargs = nargs;
    e->loc = loc;
    const emn_expr **v = emn_arena_alloc(ar, (size_t)(nargs ? nargs : 1) * sizeof *v);
    for (int i = 0; i < nargs; i++) v[i] = args[i];
    e->args = v;
    return e;
}

static const emn_expr *call1(emn_arena *ar, emn_func fn, const emn_expr *a)
{
    return emn_expr_call(ar, fn, 1, &a, EMN_NOLOC);
}

/* ------------------------------------------------------ rebuilding, queries */

/* Rebuild e bottom-up through the constructors.  With `leaf` NULL every
 * node is rebuilt (fold); otherwise unchanged subtrees are returned as they
 * are, keeping the sharing of the original. */
static const emn_expr *rebuild(emn_arena *ar, const emn_expr *e, emn_expr_leaf_fn leaf, void *ctx,
                               bool force)
{
    switch (e->op) {
    case EMN_EX_NUM:
        return e;
    case EMN_EX_VAR:
    case EMN_EX_NAME:
    case EMN_EX_XREF: {
        const emn_expr *r = leaf ? leaf(ctx, e) : NULL;
        return r ? r : e;
    }
    case EMN_EX_NEG: {
        const emn_expr *a = rebuild(ar, e->a, leaf, ctx, force);
        return a == e->a && !force ? e : emn_expr_neg(ar, a);
    }
    case EMN_EX_CALL: {
        const emn_expr *small[4];
        const emn_expr **v = e->nargs <= 4 ? small : emn_xmalloc((size_t)e->nargs * sizeof *v);
        bool changed = force;
        for (int i = 0; i < e->nargs; i++) {
            v[i] = rebuild(ar, e->args[i], leaf, ctx, force);
            if (v[i] != e->args[i]) changed = true;
        }
        const emn_expr *r = changed ? emn_expr_call(ar, e->fn, e->nargs, v, e->loc) : e;
        if (v != small) free(v);
        return r;
    }
    default: {
        const emn_expr *a = rebuild(ar, e->a, leaf, ctx, force);
        const emn_expr *b = rebuild(ar, e->b, leaf, ctx, force);
        return a == e->a && b == e->b && !force ? e : emn_expr_binary(ar, e->op, a, b);
    }
    }
}

const emn_expr *emn_expr_fold(emn_arena *ar, const emn_expr *e)
{
    return rebuild(ar, e, NULL, NULL, true);
}

const emn_expr *emn_expr_subst(emn_arena *ar, const emn_expr *e, emn_expr_leaf_fn leaf, void *ctx)
{
    return rebuild(ar, e, leaf, ctx, false);
}

/* True if some VAR, NAME or XREF leaf occurs in e. */
static bool has_unknown(const emn_expr *e)
{
    switch (e->op) {
    case EMN_EX_NUM: return false;
    case EMN_EX_VAR:
    case EMN_EX_NAME:
    case EMN_EX_XREF: return true;
    case EMN_EX_NEG: return has_unknown(e->a);
    case EMN_EX_CALL:
        for (int i = 0; i < e->nargs; i++)
            if (has_unknown(e->args[i])) return true;
        return false;
    default: return has_unknown(e->a) || has_unknown(e->b);
    }
}

bool emn_expr_is_const(const emn_expr *e, double *value)
{
    if (has_unknown(e)) return false;
    if (value) *value = emn_expr_eval(e, NULL);
    return true;
}

bool emn_expr_depends(const emn_expr *e, int var)
{
    switch (e->op) {
    case EMN_EX_VAR: return e->var == var;
    case EMN_EX_NUM:
    case EMN_EX_NAME:
    case EMN_EX_XREF: return false;
    case EMN_EX_NEG: return emn_expr_depends(e->a, var);
    case EMN_EX_CALL:
        for (int i = 0; i < e->nargs; i++)
            if (emn_expr_depends(e->args[i], var)) return true;
        return false;
    default: return emn_expr_depends(e->a, var) || emn_expr_depends(e->b, var);
    }
}

int emn_expr_max_var(const emn_expr *e)
{
    int m = -1, k;
    switch (e->op) {
    case EMN_EX_VAR: return e->var;
    case EMN_EX_NUM:
    case EMN_EX_NAME:
    case EMN_EX_XREF: return -1;
    case EMN_EX_NEG: return emn_expr_max_var(e->a);
    case EMN_EX_CALL:
        for (int i = 0; i < e->nargs; i++)
            if ((k = emn_expr_max_var(e->args[i])) > m) m = k;
        return m;
    default:
        m = emn_expr_max_var(e->a);
        k = emn_expr_max_var(e->b);
        return k > m ? k : m;
    }
}

/* ------------------------------------------------------------ evaluation */

double emn_expr_eval(const emn_expr *e, const double *vars)
{
    switch (e->op) {
    case EMN_EX_NUM: return e->num;
    case EMN_EX_VAR: return vars[e->var];
    case EMN_EX_NAME:
    case EMN_EX_XREF: return NAN;
    case EMN_EX_NEG: return -emn_expr_eval(e->a, vars);
    case EMN_EX_ADD: return emn_expr_eval(e->a, vars) + emn_expr_eval(e->b, vars);
    case EMN_EX_SUB: return emn_expr_eval(e->a, vars) - emn_expr_eval(e->b, vars);
    case EMN_EX_MUL: return emn_expr_eval(e->a, vars) * emn_expr_eval(e->b, vars);
    case EMN_EX_DIV: return emn_expr_eval(e->a, vars) / emn_expr_eval(e->b, vars);
    case EMN_EX_POW: return power(emn_expr_eval(e->a, vars), emn_expr_eval(e->b, vars));
    case EMN_EX_CALL: {
        double small[4], *x = e->nargs <= 4 ? small : emn_xmalloc((size_t)e->nargs * sizeof *x);
        for (int i = 0; i < e->nargs; i++) x[i] = emn_expr_eval(e->args[i], vars);
        double v = apply(e->fn, e->nargs, x);
        if (x != small) free(x);
        return v;
    }
    }
    return NAN;
}

/* -------------------------------------------------------- differentiation */

static const emn_expr *num(emn_arena *ar, double v)
{
    return emn_expr_num(ar, v);
}

/* d/dv of min or max of args[0..n-1], taken pairwise from the left:
 * m(a, b) switches from one argument to the other through a unit step. */
static const emn_expr *diff_min_max(emn_arena *ar, const emn_expr *e, int var)
{
    bool is_max = e->fn == EMN_FN_MAX;
    const emn_expr *acc = e->args[0];
    const emn_expr *dacc = emn_expr_diff(ar, acc, var);
    for (int i = 1; i < e->nargs; i++) {
        const emn_expr *b = e->args[i];
        const emn_expr *db = emn_expr_diff(ar, b, var);
        /* u(b-a) for min picks a when a < b; u(a-b) for max picks a when a > b */
        const emn_expr *sel = call1(ar, EMN_FN_STEP, is_max ? emn_expr_sub(ar, acc, b)
                                                            : emn_expr_sub(ar, b, acc));
        dacc = emn_expr_add(ar, emn_expr_mul(ar, dacc, sel),
                            emn_expr_mul(ar, db, emn_expr_sub(ar, num(ar, 1), sel)));
        if (i + 1 < e->nargs) {
            const emn_expr *pair[2] = {acc, b};
            acc = emn_expr_call(ar, e->fn, 2, pair, e->loc);
        }
    }
    return dacc;
}

/* f'(a) for the one-argument functions, given f(a) itself in `self` so
 * that exp, sqrt and the like reuse their node. */
static const emn_expr *outer_derivative(emn_arena *ar, const emn_expr *self, emn_func fn,
                                        const emn_expr *a)
{
    const emn_expr *one = num(ar, 1);
    switch (fn) {
    case EMN_FN_SIN: return call1(ar, EMN_FN_COS, a);
    case EMN_FN_COS: return emn_expr_neg(ar, call1(ar, EMN_FN_SIN, a));
    case EMN_FN_TAN: return emn_expr_add(ar, one, emn_expr_pow(ar, self, num(ar, 2)));
    case EMN_FN_ASIN:
    case EMN_FN_ACOS: {
        const emn_expr *r = emn_expr_div(ar, one, call1(ar, EMN_FN_SQRT,
                                          emn_expr_sub(ar, one, emn_expr_pow(ar, a, num(ar, 2)))));
        return fn == EMN_FN_ASIN ? r : emn_expr_neg(ar, r);
    }
    case EMN_FN_ATAN: return emn_expr_div(ar, one, emn_expr_add(ar, one, emn_expr_pow(ar, a, num(ar, 2))));
    case EMN_FN_SINH: return call1(ar, EMN_FN_COSH, a);
    case EMN_FN_COSH: return call1(ar, EMN_FN_SINH, a);
    case EMN_FN_TANH: return emn_expr_sub(ar, one, emn_expr_pow(ar, self, num(ar, 2)));
    case EMN_FN_EXP: return self;
    case EMN_FN_LN: return emn_expr_div(ar, one, a);
    case EMN_FN_LOG10: return emn_expr_div(ar, one, emn_expr_mul(ar, num(ar, log(10.0)), a));
    case EMN_FN_SQRT: return emn_expr_div(ar, num(ar, 0.5), self);
    case EMN_FN_ABS: return call1(ar, EMN_FN_SGN, a);
    default: return num(ar, 0);    /* sgn and u: flat wherever differentiable */
    }
}

const emn_expr *emn_expr_diff(emn_arena *ar, const emn_expr *e, int var)
{
    switch (e->op) {
    case EMN_EX_NUM:
    case EMN_EX_NAME:
    case EMN_EX_XREF:
        return num(ar, 0);
    case EMN_EX_VAR:
        return num(ar, e->var == var ? 1 : 0);
    case EMN_EX_NEG:
        return emn_expr_neg(ar, emn_expr_diff(ar, e->a, var));
    case EMN_EX_ADD:
        return emn_expr_add(ar, emn_expr_diff(ar, e->a, var), emn_expr_diff(ar, e->b, var));
    case EMN_EX_SUB:
        return emn_expr_sub(ar, emn_expr_diff(ar, e->a, var), emn_expr_diff(ar, e->b, var));
    case EMN_EX_MUL: {
        const emn_expr *da = emn_expr_diff(ar, e->a, var), *db = emn_expr_diff(ar, e->b, var);
        return emn_expr_add(ar, emn_expr_mul(ar, da, e->b), emn_expr_mul(ar, e->a, db));
    }
    case EMN_EX_DIV: {
        const emn_expr *u = e->a, *v = e->b;
        const emn_expr *du = emn_expr_diff(ar, u, var), *dv = emn_expr_diff(ar, v, var);
        const emn_expr *first = emn_expr_div(ar, du, v);
        if (is_num(dv, 0)) return first;
        /* u/w^n (sqrt(w) counting as w^0.5): the second term is
         * n*u*w'/w^(n+1), not u*(w^n)'/(w^n)^2, so that repeated
         * derivatives of 1/(g-x) stay one power each */
        const emn_expr *w;
        double n;
        power_of(v, &w, &n);
        const emn_expr *dw = w == v ? dv : emn_expr_diff(ar, w, var);
        const emn_expr *second = emn_expr_div(ar, emn_expr_mul(ar, emn_expr_mul(ar, num(ar, n), u), dw),
                                              make_power(ar, w, n + 1));
        return emn_expr_sub(ar, first, second);
    }
    case EMN_EX_POW: {
        const emn_expr *a = e->a, *b = e->b;
        const emn_expr *da = emn_expr_diff(ar, a, var);
        if (!emn_expr_depends(b, var)) {
            if (is_num(da, 0)) return da;
            return emn_expr_mul(ar, emn_expr_mul(ar, b, emn_expr_pow(ar, a, emn_expr_sub(ar, b, num(ar, 1)))),
                                da);
        }
        const emn_expr *db = emn_expr_diff(ar, b, var);
        const emn_expr *inner = emn_expr_add(ar, emn_expr_mul(ar, db, call1(ar, EMN_FN_LN, a)),
                                             emn_expr_div(ar, emn_expr_mul(ar, b, da), a));
        return emn_expr_mul(ar, e, inner);
    }
    case EMN_EX_CALL:
        break;
    }

    if (e->fn == EMN_FN_MIN || e->fn == EMN_FN_MAX) return diff_min_max(ar, e, var);
    if (e->fn == EMN_FN_ATAN2) {
        const emn_expr *y = e->args[0], *x = e->args[1];
        const emn_expr *dy = emn_expr_diff(ar, y, var), *dx = emn_expr_diff(ar, x, var);
        const emn_expr *top = emn_expr_sub(ar, emn_expr_mul(ar, x, dy), emn_expr_mul(ar, y, dx));
        if (is_num(top, 0)) return top;
        return emn_expr_div(ar, top, emn_expr_add(ar, emn_expr_pow(ar, x, num(ar, 2)),
                                                  emn_expr_pow(ar, y, num(ar, 2))));
    }
    if (e->fn == EMN_FN_POW) {   /* only if built without emn_expr_call */
        return emn_expr_diff(ar, raw_binary(ar, EMN_EX_POW, e->args[0], e->args[1]), var);
    }
    if (e->nargs != 1) return num(ar, NAN);
    const emn_expr *a = e->args[0];
    const emn_expr *da = emn_expr_diff(ar, a, var);
    if (is_num(da, 0)) return da;
    return emn_expr_mul(ar, outer_derivative(ar, e, e->fn, a), da);
}

/* --------------------------------------------------------------- printing */

/* Binding strength when printed: + - < * / < unary minus < ^ < atoms.  A
 * negative number prints with its sign, so it binds like unary minus. */
static int prec(const emn_expr *e)
{
    switch (e->op) {
    case EMN_EX_ADD:
    case EMN_EX_SUB: return 1;
    case EMN_EX_MUL:
    case EMN_EX_DIV: return 2;
    case EMN_EX_NEG: return 3;
    case EMN_EX_POW: return 4;
    case EMN_EX_NUM: return e->num < 0 || signbit(e->num) ? 3 : 5;
    default: return 5;
    }
}

static void print_num(emn_buf *out, double v)
{
    if (v == 0)
        emn_buf_puts(out, "0");
    else if (isfinite(v) && v == floor(v) && fabs(v) < 1e15)
        emn_buf_printf(out, "%.0f", v);
    else
        emn_buf_printf(out, "%.6g", v);
}

static void print(emn_buf *out, const emn_expr *e, emn_expr_var_fn varname, void *ctx);

/* Print an operand that must bind at least as tightly as `need`.  A right
 * operand (or the operand of unary minus) that would start with '-' is
 * wrapped too, so no "a--b" or "a*-b" reaches the reader. */
static void operand(emn_buf *out, const emn_expr *e, int need, bool guard_minus,
                    emn_expr_var_fn varname, void *ctx)
{
    int start = out->n;
    bool paren = prec(e) < need;
    if (paren) emn_buf_puts(out, "(");
    print(out, e, varname, ctx);
    if (paren) {
        emn_buf_puts(out, ")");
    } else if (guard_minus && out->n > start && out->v[start] == '-') {
        emn_buf_puts(out, ")");
        EMN_GROW(*out, out->n + 2);
        memmove(out->v + start + 1, out->v + start, (size_t)(out->n - start) + 1);
        out->v[start] = '(';
        out->n++;
    }
}

static void print(emn_buf *out, const emn_expr *e, emn_expr_var_fn varname, void *ctx)
{
    static const char opchar[] = {
        [EMN_EX_ADD] = '+', [EMN_EX_SUB] = '-', [EMN_EX_MUL] = '*', [EMN_EX_DIV] = '/', [EMN_EX_POW] = '^',
    };
    switch (e->op) {
    case EMN_EX_NUM:
        print_num(out, e->num);
        return;
    case EMN_EX_VAR:
        if (varname)
            varname(out, e->var, ctx);
        else
            emn_buf_printf(out, "v%d", e->var);
        return;
    case EMN_EX_NAME:
        emn_buf_puts(out, e->name);
        return;
    case EMN_EX_XREF:
        if (e->name2)
            emn_buf_printf(out, "x(%s,%s)", e->name, e->name2);
        else
            emn_buf_printf(out, "x(%s)", e->name);
        return;
    case EMN_EX_NEG:
        emn_buf_puts(out, "-");
        /* -(a*b) reads the same as (-a)*b, so products need no parentheses */
        operand(out, e->a, e->a->op == EMN_EX_MUL || e->a->op == EMN_EX_DIV ? 2 : 3, true, varname, ctx);
        return;
    case EMN_EX_CALL:
        emn_buf_printf(out, "%s(", emn_expr_func_name(e->fn));
        for (int i = 0; i < e->nargs; i++) {
            if (i) emn_buf_puts(out, ",");
            print(out, e->args[i], varname, ctx);
        }
        emn_buf_puts(out, ")");
        return;
    default:
        break;
    }
    /* Left operands may bind as loosely as the operator itself (left
     * associativity), except for ^ which is right-associative.  Right
     * operands of + and * may too, since a+(b-c) = a+b-c and
     * a*(b/c) = a*b/c; those of - and / may not. */
    int p = prec(e), left = p, right = p;
    switch (e->op) {
    case EMN_EX_SUB:
    case EMN_EX_DIV: right = p + 1; break;
    case EMN_EX_POW: left = 5; break;
    default: break;
    }
    operand(out, e->a, left, false, varname, ctx);
    char op[2] = {opchar[e->op], 0};
    emn_buf_puts(out, op);
    operand(out, e->b, right, true, varname, ctx);
}

void emn_expr_print(emn_buf *out, const emn_expr *e, emn_expr_var_fn varname, void *ctx)
{
    if (!out->v) emn_buf_puts(out, "");
    print(out, e, varname, ctx);
}

static void key(emn_buf *out, const emn_expr *e)
{
    switch (e->op) {
    case EMN_EX_NUM: emn_buf_printf(out, "%a ", e->num); return;
    case EMN_EX_VAR: emn_buf_printf(out, "v%d ", e->var); return;
    case EMN_EX_NAME: emn_buf_printf(out, "n%s ", e->name); return;
    case EMN_EX_XREF: emn_buf_printf(out, "x%s,%s ", e->name, e->name2 ? e->name2 : ""); return;
    case EMN_EX_CALL:
        emn_buf_printf(out, "f%d,%d(", (int)e->fn, e->nargs);
        for (int i = 0; i < e->nargs; i++) key(out, e->args[i]);
        emn_buf_puts(out, ")");
        return;
    case EMN_EX_NEG:
        emn_buf_puts(out, "~");
        key(out, e->a);
        return;
    default:
        emn_buf_printf(out, "o%d(", (int)e->op);
        key(out, e->a);
        key(out, e->b);
        emn_buf_puts(out, ")");
        return;
    }
}

void emn_expr_key(emn_buf *out, const emn_expr *e)
{
    if (!out->v) emn_buf_puts(out, "");
    key(out, e);
}

/* ------------------------------------------------------------------ tapes */

/* ORDER tape_op: leaves, then the operators; an R variant takes its
 * operands in the other order (the right one was computed first). */
typedef enum {
    T_NUM, T_VAR, T_NAN,
    T_NEG, T_ADD, T_SUB, T_RSUB, T_MUL, T_DIV, T_RDIV, T_POW, T_RPOW, T_POWK,
    T_CALL1, T_ATAN2, T_RATAN2, T_MIN2, T_MAX2
} tape_op;

typedef struct tape_insn {
    tape_op op;
    int arg;        /* T_VAR: variable; T_CALL1: function */
    double num;     /* T_NUM */
} tape_insn;

struct emn_tape {
    tape_insn *v;   /* the program, in EMN_PUSH's layout */
    int n, cap;
    int depth;      /* stack slots evaluation needs */
};

/* Stack slots needed to evaluate e when the operand needing more is
 * computed first (Sethi-Ullman): at most about log2 of the leaf count, so
 * a small array on the C stack always suffices. */
static int need(const emn_expr *e)
{
    switch (e->op) {
    case EMN_EX_NUM:
    case EMN_EX_VAR:
    case EMN_EX_NAME:
    case EMN_EX_XREF: return 1;
    case EMN_EX_NEG: return need(e->a);
    case EMN_EX_CALL: {
        if (e->nargs == 1) return need(e->args[0]);
        if (e->nargs == 2 && e->fn == EMN_FN_ATAN2) {
            int a = need(e->args[0]), b = need(e->args[1]);
            return a == b ? a + 1 : a > b ? a : b;
        }
        /* min/max: a chain of pairwise steps, left to right */
        int d = need(e->args[0]);
        for (int i = 1; i < e->nargs; i++) {
            int k = need(e->args[i]) + 1;
            if (k > d) d = k;
        }
        return d;
    }
    default: {
        int a = need(e->a), b = need(e->b);
        return a == b ? a + 1 : a > b ? a : b;
    }
    }
}

static void emit(emn_tape *t, tape_op op, int arg, double v)
{
    tape_insn in = {op, arg, v};
    EMN_PUSH(*t, in);
}

static void compile(emn_tape *t, const emn_expr *e)
{
    static const tape_op fwd[] = {[EMN_EX_ADD] = T_ADD, [EMN_EX_SUB] = T_SUB, [EMN_EX_MUL] = T_MUL,
                                  [EMN_EX_DIV] = T_DIV, [EMN_EX_POW] = T_POW};
    static const tape_op rev[] = {[EMN_EX_ADD] = T_ADD, [EMN_EX_SUB] = T_RSUB, [EMN_EX_MUL] = T_MUL,
                                  [EMN_EX_DIV] = T_RDIV, [EMN_EX_POW] = T_RPOW};
    switch (e->op) {
    case EMN_EX_NUM: emit(t, T_NUM, 0, e->num); return;
    case EMN_EX_VAR: emit(t, T_VAR, e->var, 0); return;
    case EMN_EX_NAME:
    case EMN_EX_XREF: emit(t, T_NAN, 0, 0); return;
    case EMN_EX_NEG:
        compile(t, e->a);
        emit(t, T_NEG, 0, 0);
        return;
    case EMN_EX_CALL:
        if (e->fn == EMN_FN_ATAN2 && e->nargs == 2) {
            bool swap = need(e->args[1]) > need(e->args[0]);
            compile(t, e->args[swap]);
            compile(t, e->args[!swap]);
            emit(t, swap ? T_RATAN2 : T_ATAN2, 0, 0);
        } else if ((e->fn == EMN_FN_MIN || e->fn == EMN_FN_MAX) && e->nargs >= 1) {
            compile(t, e->args[0]);
            for (int i = 1; i < e->nargs; i++) {
                compile(t, e->args[i]);
                emit(t, e->fn == EMN_FN_MIN ? T_MIN2 : T_MAX2, 0, 0);
            }
        } else if (e->nargs == 1) {
            compile(t, e->args[0]);
            emit(t, T_CALL1, e->fn, 0);
        } else if (e->fn == EMN_FN_POW && e->nargs == 2) {
            compile(t, e->args[0]);
            compile(t, e->args[1]);
            emit(t, T_POW, 0, 0);
        } else {
            emit(t, T_NAN, 0, 0);   /* malformed call: evaluates to NaN like the tree */
        }
        return;
    default: {
        if (e->op == EMN_EX_POW && e->b->op == EMN_EX_NUM && small_power(e->b->num)) {
            compile(t, e->a);
            emit(t, T_POWK, 0, e->b->num);
            return;
        }
        bool swap = need(e->b) > need(e->a);
        compile(t, swap ? e->b : e->a);
        compile(t, swap ? e->a : e->b);
        emit(t, swap ? rev[e->op] : fwd[e->op], 0, 0);
        return;
    }
    }
}

emn_tape *emn_tape_compile(const emn_expr *e)
{
    emn_tape *t = emn_xcalloc(1, sizeof *t);
    compile(t, e);
    t->depth = need(e);
    return t;
}

/* Same results as emn_expr_eval bit for bit: the same libm calls on the
 * same operands, only in a different order of evaluation. */
double emn_tape_eval(const emn_tape *t, const double *vars)
{
    double st[t->depth + 1];
    int sp = 0;
    for (int i = 0; i < t->n; i++) {
        const tape_insn *in = &t->v[i];
        double x;
        switch (in->op) {
        case T_NUM: st[sp++] = in->num; break;
        case T_VAR: st[sp++] = vars[in->arg]; break;
        case T_NAN: st[sp++] = NAN; break;
        case T_NEG: st[sp - 1] = -st[sp - 1]; break;
        case T_CALL1: st[sp - 1] = apply((emn_func)in->arg, 1, &st[sp - 1]); break;
        case T_POWK: st[sp - 1] = power(st[sp - 1], in->num); break;
        default:
            x = st[--sp];   /* the operand computed second */
            double y = st[sp - 1];
            switch (in->op) {
            case T_ADD: y = y + x; break;
            case T_SUB: y = y - x; break;
            case T_RSUB: y = x - y; break;
            case T_MUL: y = y * x; break;
            case T_DIV: y = y / x; break;
            case T_RDIV: y = x / y; break;
            case T_POW: y = power(y, x); break;
            case T_RPOW: y = power(x, y); break;
            case T_ATAN2: y = atan2(y, x); break;
            case T_RATAN2: y = atan2(x, y); break;
            case T_MIN2: { double p[2] = {y, x}; y = min_max(false, 2, p); break; }
            case T_MAX2: { double p[2] = {y, x}; y = min_max(true, 2, p); break; }
            default: y = NAN; break;
            }
            st[sp - 1] = y;
            break;
        }
    }
    return sp == 1 ? st[0] : NAN;
}


/* --------------------------------------------------------------- programs */

/* One instruction: register d = op(register a, register b); b is unused by
 * the unary operations.  Registers are written once each, in order. */
typedef struct prog_insn {
    tape_op op;
    int fn;             /* T_CALL1: function */
    int a, b, d;
    double num;         /* T_POWK: exponent */
} prog_insn;

struct emn_prog {
    prog_insn *v;       /* in EMN_PUSH's layout */
    int n, cap;
    int nvar;           /* registers 0 .. nvar-1 hold the variables */
    int nreg;
    double *reg;        /* the register file; constants stay in it */
    int nout, *out;     /* the registers of the results */
    double *breg[2];    /* emn_prog_eval_batch's two sets, EMN_PROG_BATCH lanes a register */
};

/* Compilation: every distinct computation once.  `seen` maps expression
 * nodes already compiled to their registers (derivatives share subtrees),
 * `cse` maps (op, fn, a, b, num) to the instruction that computes it. */
typedef struct prog_build {
    emn_prog *p;
    struct { double *v; int n, cap; } reg;     /* initial register values */
    const emn_expr **seen_key;
    int *seen_reg, seen_cap, seen_n;
    int *cse, cse_cap;                          /* instruction indices, -1 empty */
    int *consts, nconst;                        /* registers holding constants */
} prog_build;

static uint64_t mix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int new_reg(prog_build *pb, double init)
{
    EMN_PUSH(pb->reg, init);
    return pb->reg.n - 1;
}

static int seen_find(const prog_build *pb, const emn_expr *e)
{
    if (!pb->seen_cap) return -1;
    size_t mask = (size_t)pb->seen_cap - 1;
    for (size_t i = mix64((uint64_t)(uintptr_t)e) & mask;; i = (i + 1) & mask) {
        if (!pb->seen_key[i]) return -1;
        if (pb->seen_key[i] == e) return pb->seen_reg[i];
    }
}

static void seen_put(prog_build *pb, const emn_expr *e, int r)
{
    if (2 * (pb->seen_n + 1) > pb->seen_cap) {
        prog_build g = *pb;
        g.seen_cap = pb->seen_cap ? 2 * pb->seen_cap : 64;
        g.seen_n = 0;
        g.seen_key = emn_xcalloc((size_t)g.seen_cap, sizeof *g.seen_key);
        g.seen_reg = emn_xmalloc((size_t)g.seen_cap * sizeof *g.seen_reg);
        for (int i = 0; i < pb->seen_cap; i++)
            if (pb->seen_key[i]) seen_put(&g, pb->seen_key[i], pb->seen_reg[i]);
        free(pb->seen_key);
        free(pb->seen_reg);
        pb->seen_key = g.seen_key;
        pb->seen_reg = g.seen_reg;
        pb->seen_cap = g.seen_cap;
    }
    size_t mask = (size_t)pb->seen_cap - 1;
    size_t i = mix64((uint64_t)(uintptr_t)e) & mask;
    while (pb->seen_key[i]) i = (i + 1) & mask;
    pb->seen_key[i] = e;
    pb->seen_reg[i] = r;
    pb->seen_n++;
}

static uint64_t insn_hash(const prog_insn *in)
{
    uint64_t nb;
    memcpy(&nb, &in->num, sizeof nb);
    uint64_t h = mix64(((uint64_t)in->op << 40) ^ ((uint64_t)in->fn << 32) ^ (uint64_t)(uint32_t)in->a);
    h = mix64(h ^ (uint64_t)(uint32_t)in->b);
    return mix64(h ^ nb);
}

static bool insn_same(const prog_insn *x, const prog_insn *y)
{
    return x->op == y->op && x->fn == y->fn && x->a == y->a && x->b == y->b &&
           memcmp(&x->num, &y->num, sizeof x->num) == 0;
}

/* The register computing `in`, emitting it unless an equal one exists. */
static int emit_insn(prog_build *pb, prog_insn in)
{
    emn_prog *p = pb->p;
    if (2 * (p->n + 1) > pb->cse_cap) {
        free(pb->cse);
        pb->cse_cap = pb->cse_cap ? 2 * pb->cse_cap : 64;
        pb->cse = emn_xmalloc((size_t)pb->cse_cap * sizeof *pb->cse);
        for (int i = 0; i < pb->cse_cap; i++) pb->cse[i] = -1;
        size_t mask = (size_t)pb->cse_cap - 1;
        for (int k = 0; k < p->n; k++) {
            size_t i = insn_hash(&p->v[k]) & mask;
            while (pb->cse[i] >= 0) i = (i + 1) & mask;
            pb->cse[i] = k;
        }
    }
    size_t mask = (size_t)pb->cse_cap - 1;
    size_t i = insn_hash(&in) & mask;
    for (; pb->cse[i] >= 0; i = (i + 1) & mask)
        if (insn_same(&p->v[pb->cse[i]], &in)) return p->v[pb->cse[i]].d;
    in.d = new_reg(pb, 0);
    pb->cse[i] = p->n;
    EMN_PUSH(*p, in);
    return in.d;
}

/* Constants are registers set once, at compilation; equal ones (bit for
 * bit) share one, so that 2*x written twice is one computation. */
static int const_reg(prog_build *pb, double v)
{
    for (int k = 0; k < pb->nconst; k++)
        if (memcmp(&pb->reg.v[pb->consts[k]], &v, sizeof v) == 0) return pb->consts[k];
    int r = new_reg(pb, v);
    if (pb->nconst % 16 == 0) pb->consts = emn_xrealloc(pb->consts, (size_t)(pb->nconst + 16) * sizeof(int));
    pb->consts[pb->nconst++] = r;
    return r;
}

static int prog_node(prog_build *pb, const emn_expr *e);

static int binary(prog_build *pb, tape_op op, int a, int b)
{
    /* x + y and x * y are the same IEEE operation either way round */
    if ((op == T_ADD || op == T_MUL) && a > b) {
        int t = a;
        a = b;
        b = t;
    }
    return emit_insn(pb, (prog_insn){op, 0, a, b, 0, 0});
}

static int prog_node_new(prog_build *pb, const emn_expr *e)
{
    static const tape_op ops[] = {[EMN_EX_ADD] = T_ADD, [EMN_EX_SUB] = T_SUB, [EMN_EX_MUL] = T_MUL,
                                  [EMN_EX_DIV] = T_DIV, [EMN_EX_POW] = T_POW};
    switch (e->op) {
    case EMN_EX_NUM: return const_reg(pb, e->num);
    case EMN_EX_VAR: return e->var < pb->p->nvar ? e->var : const_reg(pb, NAN);
    case EMN_EX_NAME:
    case EMN_EX_XREF: return const_reg(pb, NAN);
    case EMN_EX_NEG: return emit_insn(pb, (prog_insn){T_NEG, 0, prog_node(pb, e->a), -1, 0, 0});
    case EMN_EX_CALL:
        if (e->fn == EMN_FN_ATAN2 && e->nargs == 2)
            return binary(pb, T_ATAN2, prog_node(pb, e->args[0]), prog_node(pb, e->args[1]));
        if ((e->fn == EMN_FN_MIN || e->fn == EMN_FN_MAX) && e->nargs >= 1) {
            int r = prog_node(pb, e->args[0]);
            for (int i = 1; i < e->nargs; i++)
                r = binary(pb, e->fn == EMN_FN_MIN ? T_MIN2 : T_MAX2, r, prog_node(pb, e->args[i]));
            return r;
        }
        if (e->nargs == 1) return emit_insn(pb, (prog_insn){T_CALL1, e->fn, prog_node(pb, e->args[0]), -1, 0, 0});
        if (e->fn == EMN_FN_POW && e->nargs == 2)
            return binary(pb, T_POW, prog_node(pb, e->args[0]), prog_node(pb, e->args[1]));
        return const_reg(pb, NAN);      /* malformed call: NaN like the tree */
    default:
        if (e->op == EMN_EX_POW && e->b->op == EMN_EX_NUM && small_power(e->b->num))
            return emit_insn(pb, (prog_insn){T_POWK, 0, prog_node(pb, e->a), -1, 0, e->b->num});
        return binary(pb, ops[e->op], prog_node(pb, e->a), prog_node(pb, e->b));
    }
}

static int prog_node(prog_build *pb, const emn_expr *e)
{
    int r = seen_find(pb, e);
    if (r < 0) {
        r = prog_node_new(pb, e);
        seen_put(pb, e, r);
    }
    return r;
}

emn_prog *emn_prog_compile(const emn_expr *const *roots, int nroots, int nvar)
{
    emn_prog *p = emn_xcalloc(1, sizeof *p);
    prog_build pb = {.p = p};
    p->nvar = nvar;
    for (int k = 0; k < nvar; k++) new_reg(&pb, 0);
    p->nout = nroots;
    p->out = emn_xmalloc((size_t)nroots * sizeof(int) + 1);
    for (int k = 0; k < nroots; k++) p->out[k] = prog_node(&pb, roots[k]);
    p->nreg = pb.reg.n;
    p->reg = pb.reg.v;
    free(pb.seen_key);
    free(pb.seen_reg);
    free(pb.cse);
    free(pb.consts);
    return p;
}

/* The same results as emn_tape_eval, bit for bit: each distinct
 * operation once, on the same operands. */
void emn_prog_eval(emn_prog *p, const double *vars, double *out)
{
    double *r = p->reg;
    memcpy(r, vars, (size_t)p->nvar * sizeof(double));
    for (const prog_insn *in = p->v, *end = p->v + p->n; in < end; in++) {
        double x = r[in->a], y;
        switch (in->op) {
        case T_NEG: y = -x; break;
        case T_CALL1: y = apply((emn_func)in->fn, 1, &x); break;
        case T_POWK: y = power(x, in->num); break;
        case T_ADD: y = x + r[in->b]; break;
        case T_SUB: y = x - r[in->b]; break;
        case T_MUL: y = x * r[in->b]; break;
        case T_DIV: y = x / r[in->b]; break;
        case T_POW: y = power(x, r[in->b]); break;
        case T_ATAN2: y = atan2(x, r[in->b]); break;
        case T_MIN2: { double q[2] = {x, r[in->b]}; y = min_max(false, 2, q); break; }
        case T_MAX2: { double q[2] = {x, r[in->b]}; y = min_max(true, 2, q); break; }
        default: y = NAN; break;
        }
        r[in->d] = y;
    }
    for (int k = 0; k < p->nout; k++) out[k] = r[p->out[k]];
}

/* One instruction over lanes [0, nb).  Registers are written once, so a
 * destination never overlaps its operands (restrict); inlined with nb =
 * EMN_PROG_BATCH, the loops have a fixed count and are vectorized. */
static inline __attribute__((always_inline)) void insn_lanes(const prog_insn *in, double *restrict d,
                                                           const double *restrict x,
                                                           const double *restrict y, int nb)
{
    switch (in->op) {
    case T_NEG: for (int k = 0; k < nb; k++) d[k] = -x[k]; break;
    case T_CALL1: for (int k = 0; k < nb; k++) d[k] = apply((emn_func)in->fn, 1, &x[k]); break;
    case T_POWK: {
        double e = in->num;     /* power()'s products, lane by lane */
        if (e == 2) for (int k = 0; k < nb; k++) d[k] = x[k] * x[k];
        else if (e == -1) for (int k = 0; k < nb; k++) d[k] = 1 / x[k];
        else if (e == -2) for (int k = 0; k < nb; k++) d[k] = 1 / (x[k] * x[k]);
        else if (e == 3) for (int k = 0; k < nb; k++) d[k] = x[k] * x[k] * x[k];
        else for (int k = 0; k < nb; k++) d[k] = power(x[k], e);
        break;
    }
    case T_ADD: for (int k = 0; k < nb; k++) d[k] = x[k] + y[k]; break;
    case T_SUB: for (int k = 0; k < nb; k++) d[k] = x[k] - y[k]; break;
    case T_MUL: for (int k = 0; k < nb; k++) d[k] = x[k] * y[k]; break;
    case T_DIV: for (int k = 0; k < nb; k++) d[k] = x[k] / y[k]; break;
    case T_POW: for (int k = 0; k < nb; k++) d[k] = power(x[k], y[k]); break;
    case T_ATAN2: for (int k = 0; k < nb; k++) d[k] = atan2(x[k], y[k]); break;
    case T_MIN2:
    case T_MAX2:
        for (int k = 0; k < nb; k++) {
            double q[2] = {x[k], y[k]};
            d[k] = min_max(in->op == T_MAX2, 2, q);
        }
        break;
    default: for (int k = 0; k < nb; k++) d[k] = NAN; break;
    }
}

static inline __attribute__((always_inline)) void prog_lanes(const emn_prog *p, double *R, int nb)
{
    enum { B = EMN_PROG_BATCH };
    for (const prog_insn *in = p->v, *end = p->v + p->n; in < end; in++)
        insn_lanes(in, R + (size_t)in->d * B, R + (size_t)in->a * B, R + (size_t)in->b * B, nb);
}

void emn_prog_eval_batch(emn_prog *p, int h, int nb, const double *vars, double *out)
{
    enum { B = EMN_PROG_BATCH };
    assert(nb >= 0 && nb <= B && (h == 0 || h == 1));
    if (!p->breg[h]) {
        /* every lane of a constant's register holds the constant; the
         * others are written before they are read */
        double *R = p->breg[h] = emn_xmalloc(((size_t)p->nreg * B + 1) * sizeof(double));
        for (int r = 0; r < p->nreg; r++)
            for (int k = 0; k < B; k++) R[(size_t)r * B + k] = p->reg[r];
    }
    double *R = p->breg[h];
    if (nb == B) memcpy(R, vars, (size_t)p->nvar * B * sizeof(double));
    else            /* a small circuit's one short batch: its lanes only */
        for (int v = 0; v < p->nvar; v++) memcpy(R + (size_t)v * B, vars + (size_t)v * B, (size_t)nb * sizeof(double));
    if (nb == B) prog_lanes(p, R, B);
    else prog_lanes(p, R, nb);
    for (int o = 0; o < p->nout; o++)
        memcpy(out + (size_t)o * B, R + (size_t)p->out[o] * B, (size_t)nb * sizeof(double));
}

int emn_prog_length(const emn_prog *p) { return p->n; }

void emn_prog_free(emn_prog **pp)
{
    if (!pp || !*pp) return;
    free((*pp)->v);
    free((*pp)->reg);
    free((*pp)->breg[0]);
    free((*pp)->breg[1]);
    free((*pp)->out);
    free(*pp);
    *pp = NULL;
}

void emn_tape_free(emn_tape **t)
{
    if (!t || !*t) return;
    free((*t)->v);
    free(*t);
    *t = NULL;
}
