/*
 * expr.h: expressions: build, fold, evaluate, differentiate, substitute and
 * print.
 *
 * Expressions are immutable trees allocated in an arena; subtrees may be
 * shared freely (a derivative reuses pieces of its argument), and the arena
 * frees them all at once.
 *
 * Leaves:
 *   NUM   a number
 *   VAR   variable number `var` (>= 0).  What a variable means is up to the
 *         caller.  In the netlist model (netlist.h) variable 0 is `time` and
 *         variable k >= 1 is x(node k); the formulations substitute their
 *         own variable spaces.
 *   NAME  an identifier not yet resolved (a .param name, or `time`/`pi`
 *         before the front end binds them)
 *   XREF  x(name) or x(name1,name2) before node names are resolved
 *
 * Domain errors (sqrt(-1), ln(0), 0/0) evaluate to NaN or Inf as C's libm
 * does; the caller checks the result with isfinite().
 */
#ifndef EMN_EXPR_H
#define EMN_EXPR_H

#include <stdbool.h>

#include "diag.h"
#include "util.h"

/* ORDER emn_exop */
typedef enum {
    EMN_EX_NUM, EMN_EX_VAR, EMN_EX_NAME, EMN_EX_XREF,
    EMN_EX_NEG, EMN_EX_ADD, EMN_EX_SUB, EMN_EX_MUL, EMN_EX_DIV, EMN_EX_POW,
    EMN_EX_CALL
} emn_exop;

/* ORDER emn_func: user-visible functions first (spec section 1), then the
 * ones differentiation introduces.  `log` is a synonym of `ln` (ngspice). */
typedef enum {
    EMN_FN_SIN, EMN_FN_COS, EMN_FN_TAN, EMN_FN_ASIN, EMN_FN_ACOS, EMN_FN_ATAN,
    EMN_FN_ATAN2, EMN_FN_SINH, EMN_FN_COSH, EMN_FN_TANH, EMN_FN_EXP, EMN_FN_LN,
    EMN_FN_LOG10, EMN_FN_SQRT, EMN_FN_ABS, EMN_FN_POW, EMN_FN_MIN, EMN_FN_MAX,
    EMN_FN_SGN,     /* -1, 0, 1: derivative of abs */
    EMN_FN_STEP,    /* 1 if arg > 0 else 0: derivative of min/max */
    EMN_FN_COUNT
} emn_func;

typedef struct emn_expr emn_expr;
struct emn_expr {
    emn_exop op;
    emn_func fn;            /* CALL */
    int nargs;              /* CALL */
    int var;                /* VAR */
    double num;             /* NUM */
    const char *name;       /* NAME; XREF first node (lower case) */
    const char *name2;      /* XREF second node or NULL */
    emn_loc loc;            /* where it was written (leaves and calls) */
    const emn_expr *a, *b;  /* operands: NEG uses a; binary ops use a, b */
    const emn_expr **args;  /* CALL arguments */
};

/* Constructors.  The arithmetic constructors simplify as they build:
 * constants fold, x+0, x*1, x*0, x^1, x^0, -(-x) and the like disappear, so
 * derivatives stay small.  They never change a value: x*0 folds to 0 only
 * because the engine treats NaN*0 as an error elsewhere, not here. */
const emn_expr *emn_expr_num(emn_arena *ar, double v);
const emn_expr *emn_expr_var(emn_arena *ar, int var);
const emn_expr *emn_expr_name(emn_arena *ar, const char *name, emn_loc loc);
const emn_expr *emn_expr_xref(emn_arena *ar, const char *n1, const char *n2, emn_loc loc);
const emn_expr *emn_expr_neg(emn_arena *ar, const emn_expr *a);
const emn_expr *emn_expr_add(emn_arena *ar, const emn_expr *a, const emn_expr *b);
const emn_expr *emn_expr_sub(emn_arena *ar, const emn_expr *a, const emn_expr *b);
const emn_expr *emn_expr_mul(emn_arena *ar, const emn_expr *a, const emn_expr *b);
const emn_expr *emn_expr_div(emn_arena *ar, const emn_expr *a, const emn_expr *b);
const emn_expr *emn_expr_pow(emn_arena *ar, const emn_expr *a, const emn_expr *b);
const emn_expr *emn_expr_call(emn_arena *ar, emn_func fn, int nargs,
                              const emn_expr *const *args, emn_loc loc);
/* The same node with a binary operator chosen at run time (parser use). */
const emn_expr *emn_expr_binary(emn_arena *ar, emn_exop op, const emn_expr *a, const emn_expr *b);

/* Look up a user-visible function by lower-case name.  Returns its id and
 * sets the allowed argument counts, or returns -1 if there is none. */
int emn_expr_func_lookup(const char *name, int *min_args, int *max_args);
const char *emn_expr_func_name(emn_func fn);

/* Constant-fold a whole tree (after substitution made leaves numbers). */
const emn_expr *emn_expr_fold(emn_arena *ar, const emn_expr *e);

/* True if e has no VAR, NAME or XREF leaf; then *value (if non-NULL) is its
 * value. */
bool emn_expr_is_const(const emn_expr *e, double *value);
/* True if variable `var` occurs in e. */
bool emn_expr_depends(const emn_expr *e, int var);
/* Largest variable number in e, or -1. */
int emn_expr_max_var(const emn_expr *e);

/* Evaluate with vars[k] the value of variable k.  NAME and XREF leaves
 * evaluate to NaN (they must be resolved first). */
double emn_expr_eval(const emn_expr *e, const double *vars);

/* Exact symbolic derivative with respect to variable `var`, simplified.
 * NAME and XREF leaves are treated as constants. */
const emn_expr *emn_expr_diff(emn_arena *ar, const emn_expr *e, int var);

/*
 * Rebuild e with leaves replaced: `leaf` is called for every VAR, NAME and
 * XREF leaf and returns the replacement, or NULL to keep the leaf.  The
 * result is simplified by the constructors.  Used to bind .param values,
 * resolve x(node) to variables, and map variables between spaces.
 */
typedef const emn_expr *(*emn_expr_leaf_fn)(void *ctx, const emn_expr *leaf);
const emn_expr *emn_expr_subst(emn_arena *ar, const emn_expr *e, emn_expr_leaf_fn leaf, void *ctx);

/*
 * Print e in the netlist's own syntax with the fewest parentheses that keep
 * its meaning: `a*(b+c)`, `x^2/2`, `-q1^2/(2*c1)`.  Numbers print with %.6g
 * (integers without exponent).  `varname` prints variable k; if NULL,
 * variables print as v<k>.
 */
typedef void (*emn_expr_var_fn)(emn_buf *out, int var, void *ctx);
void emn_expr_print(emn_buf *out, const emn_expr *e, emn_expr_var_fn varname, void *ctx);

/* Append a text that identifies e exactly: equal texts for equal trees,
 * numbers to the last bit (printing rounds them to six digits). */
void emn_expr_key(emn_buf *out, const emn_expr *e);

/*
 * A compiled expression: the tree flattened once into a postfix program, so
 * that evaluating it in the time-step loop allocates nothing and walks no
 * pointers.  Compile after all substitutions.
 */
typedef struct emn_tape emn_tape;
emn_tape *emn_tape_compile(const emn_expr *e);
double emn_tape_eval(const emn_tape *t, const double *vars);
void emn_tape_free(emn_tape **t);

/*
 * A compiled set of expressions: one register program computes them all,
 * every distinct subexpression once (a term's momenta and forces share
 * most of their work, its Newton-matrix entries even more).  Evaluation
 * writes the results to out[0 .. nroots-1]; vars must hold nvar values.
 * A program keeps its own registers, so evaluations may not overlap.
 */
typedef struct emn_prog emn_prog;
emn_prog *emn_prog_compile(const emn_expr *const *roots, int nroots, int nvar);
void emn_prog_eval(emn_prog *p, const double *vars, double *out);
/* The same for nb <= EMN_PROG_BATCH sets of variables at once, each
 * result bit for bit what emn_prog_eval gives: variable v of set k is
 * vars[v * EMN_PROG_BATCH + k], result o goes to out[o * EMN_PROG_BATCH + k].
 * Each operation runs over the whole batch, so the dispatch is paid once
 * per batch, not once per set.  A batch evaluation works in register set
 * h (0 or 1): two may run at once if their sets differ (par.h's halves). */
#define EMN_PROG_BATCH 64
void emn_prog_eval_batch(emn_prog *p, int h, int nb, const double *vars, double *out);
int emn_prog_length(const emn_prog *p);
void emn_prog_free(emn_prog **p);

#endif
