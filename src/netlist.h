/*
 * netlist.h: the checked circuit model.
 *
 * emn_netlist_read() turns a netlist file (with its .include files) into an
 * emn_circuit: subcircuits expanded, .param values bound, every value a
 * number or (for C(x), L(x), K(x), J and time-dependent sources) an
 * expression, every node given its domain, every name resolved to an index.
 * Everything in it has passed the checks of spec sections 1 to 4 that do not
 * depend on the formulation; the formulations (form.h) check topology.
 *
 * Expressions in the model use variable 0 for `time` and variable k >= 1 for
 * x(node k).  x(m1,m2) is stored as var(m1) - var(m2); x(0) is the number 0.
 */
#ifndef EMN_NETLIST_H
#define EMN_NETLIST_H

#include <stdbool.h>

#include "diag.h"
#include "expr.h"
#include "util.h"

#define EMN_VAR_TIME 0

typedef enum { EMN_DOM_NONE, EMN_DOM_ELEC, EMN_DOM_MECH } emn_domain;

typedef struct emn_node {
    const char *name;       /* lower case; "0" for ground; "x1.n2" inside instance x1 */
    emn_loc loc;            /* first use */
    emn_domain dom;
    int jdef;               /* index of the J element that defines x(node), or -1 */
} emn_node;

/* ORDER emn_kind (element letters: see emn_netlist_kind_letter) */
typedef enum {
    EMN_R, EMN_C, EMN_L, EMN_K, EMN_V, EMN_I, EMN_T, EMN_M, EMN_S, EMN_D, EMN_F, EMN_J,
    EMN_NKINDS
} emn_kind;

/* ORDER emn_wave_kind */
typedef enum {
    EMN_WAVE_NONE,          /* DC value only, for all time */
    EMN_WAVE_SIN, EMN_WAVE_PULSE, EMN_WAVE_PWL, EMN_WAVE_EXP,
    EMN_WAVE_EXPR           /* 'expr' of time and parameters */
} emn_wave_kind;

/* An independent source value: `[[DC] value] [function]` of spec section 3. */
typedef struct emn_source {
    emn_wave_kind kind;
    bool has_dc;
    double dc;
    int nargs;              /* arguments as written (SPICE defaults not filled) */
    double *args;           /* SIN..EXP: the numbers; PWL: t1 v1 t2 v2 ... */
    const emn_expr *expr;   /* EXPR: expression of variable 0 (time) */
    emn_loc loc;            /* the function name or value */
    /* EMN_SOURCE_STATE numbers for the wave module (wave.h) to fill: the
     * function's constants and the last integral it took.  Made with the
     * source for every kind but NONE, which needs none (NULL): a grid's
     * ten thousand 0 V sources. */
    double *p;
} emn_source;

#define EMN_SOURCE_STATE 10

/* One element.  A grid deck has 10^5 to 10^6 of them: every field here
 * costs megabytes, so locations are kept only where a message after
 * reading uses them. */
typedef struct emn_elem {
    emn_kind kind;
    short nnodes;
    bool has_ic;            /* C: IC=v0 volts; L: IC=i0 amperes (in ic) */
    const char *name;       /* lower case; "c.x1.c1" for C1 inside instance X1 (ngspice) */
    emn_loc loc;            /* the element name */
    int node[4];            /* R C L V I: n+ n-; T: e+ e- m+ m-; M: m; S D F: m1 m2; J: m */
    /* R C L: R, C, L; K: k; T: T; M: mass; S: stiffness; D: damping.
     * value is used when vexpr is NULL; vexpr is set only when the value
     * depends on x(...) (C(x), L(x), k(x)); it is then a function of the
     * node variables.  J: vexpr is the right-hand side. */
    double value;
    const emn_expr *vexpr;
    union {                 /* by kind: the others' fields are not set */
        double ic;          /* C, L: the IC= value, if has_ic */
        double x0;          /* S: rest length X0 (0 if absent) */
        int ind[2];         /* K: element indices of the two inductors */
        emn_source *src;    /* V, I, F: the waveform (in the circuit's arena) */
    };
} emn_elem;

typedef enum { EMN_IC_X, EMN_IC_V } emn_ic_kind;
typedef struct emn_ic {
    emn_ic_kind kind;       /* .ic x(m)=val or v(n)=val */
    int node;
    double value;
    emn_loc loc;
} emn_ic;

/* ORDER emn_sigkind */
typedef enum {
    EMN_SIG_V, EMN_SIG_X, EMN_SIG_I, EMN_SIG_Q, EMN_SIG_PHI, EMN_SIG_F, EMN_SIG_W
} emn_sigkind;

/* A signal of spec section 6, resolved. */
typedef struct emn_signal {
    emn_sigkind kind;
    int node[2];            /* V, X: nodes (node[1] = 0 if only one given) */
    int elem;               /* I Q PHI F W: element index */
    int mnode;              /* F of C(x)/L(x)/K(x): the coordinate's node, else 0 */
    const char *text;       /* lower case, blanks removed: "v(out)", "f(c1,plate)" */
    emn_loc loc;
} emn_signal;

typedef enum { EMN_METHOD_TRAP, EMN_METHOD_GEAR } emn_method;
typedef enum { EMN_FORM_AUTO, EMN_FORM_CHARGE, EMN_FORM_FLUX } emn_form_kind;

typedef struct emn_options {
    double reltol, abstol, vntol, chgtol;
    double trtol;           /* the truncation error test's tolerances times this */
    emn_method method;
    int maxord;
    int itl4;
    emn_form_kind form;
} emn_options;

typedef struct emn_circuit {
    emn_arena *arena;       /* owns everything below */
    const char *title;
    const char *path;       /* the top-level netlist file */
    struct { emn_node *v; int n, cap; } nodes;      /* nodes.v[0] is ground */
    struct { emn_elem *v; int n, cap; } elems;
    struct { emn_ic *v; int n, cap; } ics;
    struct { emn_signal *v; int n, cap; } prints;   /* .print tran, in order */
    struct { emn_signal *v; int n, cap; } saves;    /* .save; n == 0: save all */
    bool has_tran;
    double tstep, tstop, tstart, tmax;  /* tmax = 0 if not given */
    bool uic;
    emn_loc tran_loc;
    emn_loc end_loc;        /* the top-level file's .end, if it has one */
    bool has_op;
    emn_options opt;
} emn_circuit;

/*
 * Read, expand and check a netlist.  Diagnostics go to d.  Returns the
 * circuit, or NULL if any error was found (then d->nerrors > 0; every error
 * in the file that recovery allows has been recorded).
 */
emn_circuit *emn_netlist_read(const char *path, emn_diag *d);
/* The same from text in memory (tests, fuzzer); `path` names it in messages
 * and is the base for relative .include paths. */
emn_circuit *emn_netlist_read_text(const char *path, const char *text, long len, emn_diag *d);
void emn_netlist_free(emn_circuit **c);

/* Index of a node or element by (case-insensitive) name, or -1. */
int emn_netlist_find_node(const emn_circuit *c, const char *name);
int emn_netlist_find_elem(const emn_circuit *c, const char *name);

/* Default options (spec section 4). */
void emn_netlist_default_options(emn_options *o);

/* Upper-case letter of an element kind, e.g. 'C'. */
char emn_netlist_kind_letter(emn_kind k);

/* Parse a signal written on the command line or in tests ("v(out)"),
 * resolving it against c.  Returns 0, or -1 after recording an error. */
int emn_netlist_parse_signal(const emn_circuit *c, const char *text, emn_signal *sig,
                             emn_diag *d, emn_loc loc);

#endif
