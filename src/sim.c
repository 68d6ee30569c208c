/*
 * sim.c: the transient analysis around the integrator: the initial state
 * from `uic`, IC= and .ic; the step loop with progress and failure
 * reporting; every signal of spec section 6 in either formulation; output
 * points interpolated from the integrator's steps; and -compare.
 *
 * Signals that are not coordinates are reconstructed as spec formulations
 * section 4 says.  The general tool is a branch's *dual*: for a branch b
 * with slot a, the residual its own coordinate's Lagrange equation would
 * have,
 *     dual_b = d/dt(dL/du_a) - dL/dv_a - dP/du_a + dD/du_a,
 * which is the branch voltage in the charge formulation (R i, Q/C, dLambda/dt,
 * E, T u) and the branch current in the flux formulation (e/R, d(Ce)/dt,
 * Lambda/L, I).  d/dt uses the integrator's own formula.  Branches the
 * formulation eliminated get their dual from Kirchhoff's laws along the
 * forest form.c kept.
 */
#include "config.h"
#include "sim.h"
#include "topo.h"
#include "op.h"
#include "output.h"
#include "util.h"
#include "wave.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* An expression in netlist node variables with its time derivative. */
typedef struct xrate {
    const emn_expr *e;
    int nv;
    int *var;
    const emn_expr **d;
} xrate;

typedef struct sim {
    const emn_circuit *c;
    emn_form *f;
    emn_integ *it;
    bool charge;
    int nn, ne;
    /* mechanical state by node: x and u of every mechanical node */
    double *nx, *nu;
    /* by node or element, NULL where there is none (and the whole array
     * NULL where no node or element has one: a grid has none) */
    xrate **xnode;              /* per node (mechanical): x(node) */
    xrate **nmech;              /* flux: per node, coil offset of its flux */
    xrate **bmech;              /* flux: per element, mechanical part of its branch */
    /* duals */
    bool need_dual;
    double *pi, *pidot, *pi1, *pi2, *Fs;
    /* the terms on the slots whose duals the sources alone set
     * (emn_form_source_terms): their rates from the sources' slopes, not
     * from a parabola through the accepted points, which errs by h^2 p'''
     * / 3 at any reltol */
    int *xterm, nxterm;
    double *ndv;                /* node voltages (charge) */
    double *bcur;               /* branch currents of eliminated branches (flux) */
    double *nodecur;
    /* What the signals read of them (plan_duals): the slots whose duals
     * are kept; the nodes kirchhoff walks (charge: those whose voltage
     * is needed and their ancestors, in torder; flux: the subtrees under
     * the voltage sources and coils whose current is needed, in reverse)
     * and the elements whose currents it sums there (flux), marked in
     * knode_in */
    int *dsl, ndsl;
    int *knode, nknode;
    int *kel, nkel;
    unsigned char *knode_in;
    /* signals */
    int nsig;
    emn_signal *sig;
    char **names;
    emn_unit *units;
    double *val[3], tval[3];
    double *pw[3];              /* power behind each integral w() at the same points */
    bool *integral;
    int nval;
    int order_last;
    /* mechanical nodes, and the C(x)/L(x) elements, so per-step loops
     * skip the rest of a large circuit */
    int *mnodes, nmnodes;
    int *valued, nvalued;
    emn_tape **vtape;       /* each valued element's C(x) or L(x), compiled */
    int *vterm;             /* ... or its nonlinear term's place in termval, -1 if none */
    double *termval;        /* emn_form_values' */
    double *v0;             /* each valued element's value at the start (integ_error) */
    /* force expressions for f(E,m): dEnergy-coefficient/dx(m) */
    const emn_expr **fexpr;
    emn_arena *ar;
} sim;

static volatile sig_atomic_t interrupted;
static void on_sigint(int signo)
{
    (void)signo;
    interrupted = 1;
}

/* ----------------------------------------------------------- preparation */

/* x's group, with x's potential over the group's root in *p; the path
 * is compressed, each node then holding its potential over the root. */
static int pot_find(int *up, double *pot, int x, double *p)
{
    int r = x;
    double acc = 0;
    for (; up[r] != r; r = up[r]) acc += pot[r];
    *p = acc;
    while (up[x] != r && up[x] != x) {
        int next = up[x];
        double own = pot[x];
        up[x] = r;
        pot[x] = acc;
        acc -= own;
        x = next;
    }
    return r;
}

/* Tie node a to node b so that v(a) - v(b) = drop; when they are tied
 * already, how far their potentials miss drop (0 otherwise). */
static double pot_join(int *up, double *pot, int a, int b, double drop)
{
    double pa, pb;
    a = pot_find(up, pot, a, &pa);
    b = pot_find(up, pot, b, &pb);
    if (a == b) return pa - pb - drop;
    up[a] = b;
    pot[a] = drop - pa + pb;
    return 0;
}

/* .ic v(n) values that voltage sources contradict at t = 0: a node the
 * sources tie to ground has their voltage, and two tied to each other
 * differ by it. */
static int ic_held(const emn_circuit *c, emn_diag *d)
{
    int nn = c->nodes.n, status = 0;
    bool any = false;
    for (int k = 0; k < c->ics.n; k++) any |= c->ics.v[k].kind == EMN_IC_V;
    if (!any) return 0;
    int *up = emn_xmalloc((size_t)nn * sizeof(int) + 1), *first = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    double *pot = emn_xcalloc((size_t)nn + 1, sizeof(double)), big = 0;
    for (int v = 0; v < nn; v++) {
        up[v] = v;
        first[v] = -1;
    }
    for (int i = 0; i < c->elems.n; i++) {
        const emn_elem *e = &c->elems.v[i];
        if (e->kind != EMN_V) continue;
        double drop = emn_wave_value(e->src, 0);
        big = fmax(big, fabs(drop));
        pot_join(up, pot, e->node[0], e->node[1], drop);   /* a loop of sources is refused on reading */
    }
    double pg;
    int g = pot_find(up, pot, 0, &pg);
    for (int k = 0; k < c->ics.n && status == 0; k++) {
        const emn_ic *ic = &c->ics.v[k];
        if (ic->kind != EMN_IC_V || c->nodes.v[ic->node].dom != EMN_DOM_ELEC) continue;
        double p;
        int r = pot_find(up, pot, ic->node, &p);
        if (r == g) {
            if (fabs(p - pg - ic->value) > 1e-9 * fmax(big, fabs(ic->value)) + 1e-15) {
                emn_diag_error(d, ic->loc, "voltage sources hold node '%s' at %g V at t = 0, not at its initial "
                               "voltage %g V", c->nodes.v[ic->node].name, p - pg, ic->value);
                status = -1;
            }
        } else if (first[r] < 0) {
            first[r] = k;
        } else {
            const emn_ic *o = &c->ics.v[first[r]];
            double po;
            pot_find(up, pot, o->node, &po);
            if (fabs((p - po) - (ic->value - o->value)) > 1e-9 * fmax(big, fabs(ic->value - o->value)) + 1e-15) {
                emn_diag_error(d, ic->loc, "voltage sources make v(%s) - v(%s) = %g V at t = 0, not the %g V of "
                               "the initial voltages", c->nodes.v[ic->node].name, c->nodes.v[o->node].name, p - po,
                               ic->value - o->value);
                status = -1;
            }
        }
    }
    free(up);
    free(first);
    free(pot);
    return status;
}

int emn_sim_prepare(emn_circuit *c, emn_diag *d)
{
    double tstep = c->has_tran ? c->tstep : 1, tstop = c->has_tran ? c->tstop : 1;
    int status = 0;
    /* .ic v(n) of an electrical node: a capacitor at n must hold it */
    for (int k = 0; k < c->ics.n; k++) {
        const emn_ic *ic = &c->ics.v[k];
        if (ic->kind != EMN_IC_V || c->nodes.v[ic->node].dom != EMN_DOM_ELEC) continue;
        bool held = false;
        for (int e = 0; e < c->elems.n && !held; e++)
            held = c->elems.v[e].kind == EMN_C &&
                   (c->elems.v[e].node[0] == ic->node || c->elems.v[e].node[1] == ic->node);
        if (!held) {
            emn_diag_error(d, ic->loc, "no capacitor at node '%s' can hold its initial voltage",
                           c->nodes.v[ic->node].name);
            status = -1;
        }
    }
    for (int i = 0; i < c->elems.n; i++) {
        emn_elem *e = &c->elems.v[i];
        if (e->kind != EMN_V && e->kind != EMN_I && e->kind != EMN_F) continue;
        if (emn_wave_prepare(e->src, tstep, tstop, d, e->name) < 0) status = -1;
    }
    if (status == 0 && ic_held(c, d) < 0) status = -1;
    return status;
}

emn_form_kind emn_sim_auto_form(const emn_circuit *c)
{
    int nq, nf;
    if (emn_form_count_both(c, &nq, &nf) < 0) return EMN_FORM_FLUX;
    if (nq >= 0 && (nf < 0 || nq < nf)) return EMN_FORM_CHARGE;
    return EMN_FORM_FLUX;
}

/* --------------------------------------------------- expression helpers */

static void collect_vars(const emn_expr *e, xrate *x)
{
    if (!e) return;
    if (e->op == EMN_EX_VAR) {
        for (int k = 0; k < x->nv; k++) if (x->var[k] == e->var) return;
        x->var = emn_xrealloc(x->var, (size_t)(x->nv + 1) * sizeof(int));
        x->var[x->nv++] = e->var;
        return;
    }
    if (e->op == EMN_EX_CALL) {
        for (int k = 0; k < e->nargs; k++) collect_vars(e->args[k], x);
        return;
    }
    collect_vars(e->a, x);
    collect_vars(e->b, x);
}

/* Set entry i of *a (an array of n, made on first use) to e and its rate. */
static void xrate_set(emn_arena *ar, xrate ***a, int n, int i, const emn_expr *e)
{
    if (!e) return;
    if (!*a) *a = emn_xcalloc((size_t)n + 1, sizeof(xrate *));
    xrate *x = (*a)[i] = emn_arena_alloc(ar, sizeof *x);
    x->e = e;
    collect_vars(e, x);
    x->d = emn_xmalloc((size_t)(x->nv + 1) * sizeof(emn_expr *));
    for (int k = 0; k < x->nv; k++) x->d[k] = emn_expr_diff(ar, e, x->var[k]);
}

static const xrate *xrate_at(xrate *const *a, int i)
{
    return a ? a[i] : NULL;
}

static double xrate_value(const xrate *x, const double *nx)
{
    return x ? emn_expr_eval(x->e, nx) : 0;
}

static double xrate_rate(const xrate *x, const double *nx, const double *nu)
{
    double r = 0;
    for (int k = 0; x && k < x->nv; k++) r += emn_expr_eval(x->d[k], nx) * nu[x->var[k]];
    return r;
}

static void xrate_free_all(xrate **a, int n)
{
    for (int i = 0; a && i < n; i++)
        if (a[i]) {
            free(a[i]->var);
            free(a[i]->d);
        }
    free(a);
}

/* --------------------------------------------------------- state views */

/* Mechanical positions and velocities of every node from (z, w). */
static void mech_state(sim *S, const double *z, const double *w)
{
    const emn_form *f = S->f;
    for (int k = 0; k < S->nmnodes; k++) {
        int v = S->mnodes[k], j = f->node_coord[v];
        S->nx[v] = j >= 0 ? z[j] : 0;
        S->nu[v] = j >= 0 ? w[j] : 0;
    }
    for (int k = 0; k < S->nmnodes; k++) {
        int v = S->mnodes[k];
        if (S->c->nodes.v[v].jdef < 0) continue;
        const xrate *xr = xrate_at(S->xnode, v);
        double x = xrate_value(xr, S->nx), u = xrate_rate(xr, S->nx, S->nu);
        S->nx[v] = x;       /* J nodes depend only on free nodes: order does not matter */
        S->nu[v] = u;
    }
}

/* Sum of local momenta and forces onto branch slots. */
static void branch_duals(sim *S, const double *z, const double *w)
{
    emn_form *f = S->f;
    /* only electrical branch slots carry duals; mechanical slots are
     * coordinates and source slots are known */
    emn_form_duals(f, z, w, S->pi, S->Fs);
}

static int branch_slot(const sim *S, int e) { return S->f->elem_branch_slot[e]; }

/* Voltage across an electrical element's branch (n+ minus n-). */
static double branch_voltage(const sim *S, int e, const double *w)
{
    const emn_elem *el = &S->c->elems.v[e];
    int sl = branch_slot(S, e);
    if (S->charge) {
        if (el->kind == EMN_I) return S->ndv[el->node[0]] - S->ndv[el->node[1]];
        return S->pidot[sl] - S->Fs[sl];
    }
    return emn_form_slot_rate(S->f, sl, w) + xrate_rate(xrate_at(S->bmech, e), S->nx, S->nu);
}

/* Current through an electrical element from n+ to n-. */
static double branch_current(const sim *S, int e, const double *w)
{
    const emn_elem *el = &S->c->elems.v[e];
    int sl = branch_slot(S, e);
    if (S->charge) return emn_form_slot_rate(S->f, sl, w);
    if (el->kind == EMN_V || el->kind == EMN_T) return S->bcur[e];
    return S->pidot[sl] - S->Fs[sl];
}

/* Charge formulation: node voltages along the tree.  Flux formulation:
 * currents of voltage sources and coils from the subtrees they feed.
 * Either only where plan_duals found a signal that reads them. */
static void kirchhoff(sim *S, const double *w)
{
    const emn_circuit *c = S->c;
    const emn_form *f = S->f;
    if (S->charge) {
        for (int k = 0; k < S->nknode; k++) {
            int v = S->knode[k];
            int p = f->tparent[v], e = f->telem[v];
            if (p < 0 || e < 0) { S->ndv[v] = 0; continue; }
            double vb = branch_voltage(S, e, w);
            S->ndv[v] = S->ndv[p] + (c->elems.v[e].node[0] == v ? vb : -vb);
        }
        return;
    }
    for (int k = 0; k < S->nknode; k++) S->nodecur[S->knode[k]] = 0;
    for (int k = 0; k < S->nkel; k++) {
        int e = S->kel[k];
        const emn_elem *el = &c->elems.v[e];
        double i = S->pidot[branch_slot(S, e)] - S->Fs[branch_slot(S, e)];
        if (S->knode_in[el->node[0]]) S->nodecur[el->node[0]] += i;
        if (S->knode_in[el->node[1]]) S->nodecur[el->node[1]] -= i;
    }
    for (int k = 0; k < S->nknode; k++) {
        int v = S->knode[k];
        int p = f->tparent[v], e = f->telem[v];
        if (p < 0 || e < 0) continue;
        S->bcur[e] = c->elems.v[e].node[0] == v ? -S->nodecur[v] : S->nodecur[v];
        if (S->knode_in[p]) S->nodecur[p] += S->nodecur[v];
    }
}

static double node_voltage(const sim *S, int v, const double *w)
{
    if (v == 0) return 0;
    if (S->c->nodes.v[v].dom == EMN_DOM_MECH) return S->nu[v];
    if (S->charge) return S->ndv[v];
    const emn_lmap *m = &S->f->node_map[v];
    double r = 0;
    for (int q = 0; q < m->nc; q++) r += m->c[q] * w[emn_lmap_ci(m)[q]];
    for (int q = 0; q < m->nd; q++) r += emn_lmap_d(m)[q] * S->f->s[emn_lmap_di(m)[q]];
    return r + xrate_rate(xrate_at(S->nmech, v), S->nx, S->nu);
}

static double elem_value(const sim *S, const emn_elem *e)
{
    return e->vexpr ? emn_expr_eval(e->vexpr, S->nx) : e->value;
}

static double signal_q(const sim *S, int e, const double *z)
{
    if (S->charge) return emn_form_slot_value(S->f, branch_slot(S, e), z);
    return S->pi[branch_slot(S, e)];
}

static double signal_phi(const sim *S, int e, const double *z)
{
    if (S->charge) return S->pi[branch_slot(S, e)];
    return emn_form_slot_value(S->f, branch_slot(S, e), z) + xrate_value(xrate_at(S->bmech, e), S->nx);
}

static double signal_value(const sim *S, int k, const double *z, const double *w)
{
    const emn_signal *g = &S->sig[k];
    const emn_circuit *c = S->c;
    const emn_elem *e = g->elem >= 0 ? &c->elems.v[g->elem] : NULL;
    switch (g->kind) {          /* ORDER emn_sigkind */
    case EMN_SIG_V:
        return node_voltage(S, g->node[0], w) - node_voltage(S, g->node[1], w);
    case EMN_SIG_X:
        return S->nx[g->node[0]] - S->nx[g->node[1]];
    case EMN_SIG_I:
        return branch_current(S, g->elem, w);
    case EMN_SIG_Q:
        return signal_q(S, g->elem, z);
    case EMN_SIG_PHI:
        return signal_phi(S, g->elem, z);
    case EMN_SIG_F:
        if (g->mnode > 0) return S->fexpr[k] ? emn_expr_eval(S->fexpr[k], S->nx) *
                                  (e->kind == EMN_K ? branch_current(S, e->ind[0], w) * branch_current(S, e->ind[1], w)
                                   : e->kind == EMN_C ? 0.5 * pow(branch_voltage(S, g->elem, w), 2)
                                   : 0.5 * pow(branch_current(S, g->elem, w), 2)) : 0;
        switch (e->kind) {
        case EMN_S: return -e->value * (S->nx[e->node[0]] - S->nx[e->node[1]] - e->x0);
        case EMN_D: return -e->value * (S->nu[e->node[0]] - S->nu[e->node[1]]);
        case EMN_F: return S->f->s[S->f->elem_src[g->elem]];
        case EMN_T: return e->value * branch_current(S, g->elem, w);
        default: return NAN;
        }
    case EMN_SIG_W:
        switch (e->kind) {
        case EMN_C: return 0.5 * signal_q(S, g->elem, z) * branch_voltage(S, g->elem, w);
        case EMN_L: return 0.5 * signal_phi(S, g->elem, z) * branch_current(S, g->elem, w);
        case EMN_M: return 0.5 * e->value * S->nu[e->node[0]] * S->nu[e->node[0]];
        case EMN_S: {
            double dx = S->nx[e->node[0]] - S->nx[e->node[1]] - e->x0;
            return 0.5 * e->value * dx * dx;
        }
        /* energy dissipated or supplied since t = 0: here the power, which
         * integrate_energy() accumulates */
        case EMN_R: return branch_voltage(S, g->elem, w) * branch_current(S, g->elem, w);
        case EMN_V: case EMN_I: return -branch_voltage(S, g->elem, w) * branch_current(S, g->elem, w);
        case EMN_D: {
            double du = S->nu[e->node[0]] - S->nu[e->node[1]];
            return e->value * du * du;
        }
        case EMN_F: return S->f->s[S->f->elem_src[g->elem]] * (S->nu[e->node[0]] - S->nu[e->node[1]]);
        default: return NAN;
        }
    }
    return NAN;
}

/* True for w() of an element whose energy is an integral over time
 * (dissipated by R and D, supplied by V, I and F). */
static bool is_integral(const emn_circuit *c, const emn_signal *g)
{
    if (g->kind != EMN_SIG_W) return false;
    emn_kind k = c->elems.v[g->elem].kind;
    return k == EMN_R || k == EMN_D || k == EMN_V || k == EMN_I || k == EMN_F;
}

/* ------------------------------------------------------------- set-up */

static emn_unit sig_unit(const emn_circuit *c, const emn_signal *g)
{
    switch (g->kind) {          /* ORDER emn_sigkind */
    case EMN_SIG_V: return c->nodes.v[g->node[0]].dom == EMN_DOM_MECH ? EMN_UNIT_VELOCITY : EMN_UNIT_VOLTAGE;
    case EMN_SIG_X: return EMN_UNIT_DISTANCE;
    case EMN_SIG_I: return EMN_UNIT_CURRENT;
    case EMN_SIG_Q: return EMN_UNIT_CHARGE;
    case EMN_SIG_PHI: return EMN_UNIT_FLUX;
    case EMN_SIG_F: return EMN_UNIT_FORCE;
    case EMN_SIG_W: return EMN_UNIT_ENERGY;
    }
    return EMN_UNIT_VOLTAGE;
}

typedef struct sigvec { emn_signal *v; int n, cap; } sigvec;

/* Append signal kind(name) of a node (node > 0) or an element. */
static void push_signal(emn_arena *ar, const emn_circuit *c, sigvec *out, emn_sigkind kind, int node, int elem)
{
    static const char *const prefix[] = {"v", "x", "i", "q", "phi", "f", "w"};    /* ORDER emn_sigkind */
    /* "v(name)", put together by hand: a grid has 10^5 of them, and
     * printf's machinery cost more than the rest of listing them */
    const char *pre = prefix[kind], *name = node > 0 ? c->nodes.v[node].name : c->elems.v[elem].name;
    size_t lp = strlen(pre), ln = strlen(name);
    char *t = emn_arena_alloc_aligned(ar, lp + ln + 3, 1);     /* packed, as strings are */
    memcpy(t, pre, lp);
    t[lp] = '(';
    memcpy(t + lp + 1, name, ln);
    t[lp + 1 + ln] = ')';
    t[lp + 2 + ln] = '\0';
    EMN_PUSH(*out, ((emn_signal){kind, {node > 0 ? node : 0, 0}, elem, 0, t, EMN_NOLOC}));
}

/* The signals saved when .save names none: every node's voltage (or
 * velocity), every mechanical displacement, and the currents of voltage
 * sources, inductors and coils, as ngspice saves node voltages and branch
 * currents.  With `op`, what .op prints instead: the currents of every
 * electrical element and the forces of S, D, F and T. */
static void signal_list(emn_arena *ar, const emn_circuit *c, sigvec *out, bool op)
{
    for (int v = 1; v < c->nodes.n; v++) push_signal(ar, c, out, EMN_SIG_V, v, -1);
    for (int v = 1; v < c->nodes.n; v++)
        if (c->nodes.v[v].dom == EMN_DOM_MECH) push_signal(ar, c, out, EMN_SIG_X, v, -1);
    for (int e = 0; e < c->elems.n; e++) {
        emn_kind k = c->elems.v[e].kind;
        bool elec = k == EMN_R || k == EMN_C || k == EMN_L || k == EMN_V || k == EMN_I || k == EMN_T;
        if (op ? elec : (k == EMN_V || k == EMN_L || k == EMN_T)) push_signal(ar, c, out, EMN_SIG_I, 0, e);
    }
    if (!op) return;
    for (int e = 0; e < c->elems.n; e++) {
        emn_kind k = c->elems.v[e].kind;
        if (k == EMN_S || k == EMN_D || k == EMN_F || k == EMN_T) push_signal(ar, c, out, EMN_SIG_F, 0, e);
    }
}

/* Which signals need the branch duals (the momenta and forces of the
 * branch slots). */
static bool needs_dual(const sim *S, const emn_signal *g)
{
    const emn_circuit *c = S->c;
    switch (g->kind) {
    case EMN_SIG_V:
        return S->charge && (c->nodes.v[g->node[0]].dom == EMN_DOM_ELEC ||
                             c->nodes.v[g->node[1]].dom == EMN_DOM_ELEC);
    case EMN_SIG_X: return false;
    case EMN_SIG_I: return !S->charge || c->elems.v[g->elem].kind == EMN_I;
    case EMN_SIG_Q: return !S->charge;
    case EMN_SIG_PHI: return S->charge;
    case EMN_SIG_F: {
        emn_kind k = c->elems.v[g->elem].kind;
        return g->mnode > 0 || (k == EMN_T && !S->charge);
    }
    case EMN_SIG_W: {
        emn_kind k = c->elems.v[g->elem].kind;
        return k == EMN_C || k == EMN_L || k == EMN_R || k == EMN_V || k == EMN_I;
    }
    }
    return true;
}

/* f(E,m) of C(x), L(x), K(x): the derivative of C, L or the mutual
 * inductance with respect to x(m); times v^2/2, i^2/2 or i1 i2 it is the
 * generalized force (the coenergy's derivative). */
static const emn_expr *force_coefficient(emn_arena *ar, const emn_circuit *c, const emn_signal *g)
{
    const emn_elem *e = &c->elems.v[g->elem];
    const emn_expr *v = e->vexpr;
    if (e->kind == EMN_K) {
        const emn_elem *l1 = &c->elems.v[e->ind[0]], *l2 = &c->elems.v[e->ind[1]];
        const emn_expr *k = v ? v : emn_expr_num(ar, e->value);
        const emn_expr *L1 = l1->vexpr ? l1->vexpr : emn_expr_num(ar, l1->value);
        const emn_expr *L2 = l2->vexpr ? l2->vexpr : emn_expr_num(ar, l2->value);
        v = emn_expr_mul(ar, k, emn_expr_call(ar, EMN_FN_SQRT, 1,
                                              (const emn_expr *[]){emn_expr_mul(ar, L1, L2)}, EMN_NOLOC));
    }
    return v ? emn_expr_diff(ar, v, g->mnode) : NULL;
}

/* What of the duals the signals read, traced as signal_value reads
 * them: marks on slots (want) and nodes (node: charge, a node whose
 * voltage is needed; flux, the root of a subtree whose current is). */
typedef struct dneeds {
    const sim *S;
    unsigned char *want, *node;
    int *child;                 /* flux: element -> node below it in the forest, or -1 */
} dneeds;

static void want_slot(dneeds *N, int e)
{
    int sl = branch_slot(N->S, e);
    if (sl >= 0) N->want[sl] = 1;
}

static void need_voltage(dneeds *N, int e);

/* charge: a node's voltage, the branch voltages up the tree from it */
static void need_node(dneeds *N, int v)
{
    const sim *S = N->S;
    if (!S->charge || S->c->nodes.v[v].dom != EMN_DOM_ELEC) return;
    for (; v >= 0 && !N->node[v]; v = S->f->tparent[v]) {
        N->node[v] = 1;
        if (S->f->telem[v] >= 0) need_voltage(N, S->f->telem[v]);
    }
}

static void need_voltage(dneeds *N, int e)
{
    const sim *S = N->S;
    if (!S->charge) return;
    const emn_elem *el = &S->c->elems.v[e];
    if (el->kind == EMN_I) {
        need_node(N, el->node[0]);
        need_node(N, el->node[1]);
    } else {
        want_slot(N, e);
    }
}

static void need_current(dneeds *N, int e)
{
    const sim *S = N->S;
    if (S->charge) return;
    emn_kind k = S->c->elems.v[e].kind;
    if (k != EMN_V && k != EMN_T) want_slot(N, e);
    else if (N->child[e] >= 0) N->node[N->child[e]] = 1;
}

static void need_signal(dneeds *N, const emn_signal *g)
{
    const sim *S = N->S;
    const emn_elem *e = g->elem >= 0 ? &S->c->elems.v[g->elem] : NULL;
    switch (g->kind) {          /* ORDER emn_sigkind */
    case EMN_SIG_V:
        need_node(N, g->node[0]);
        need_node(N, g->node[1]);
        return;
    case EMN_SIG_X: return;
    case EMN_SIG_I: need_current(N, g->elem); return;
    case EMN_SIG_Q: if (!S->charge) want_slot(N, g->elem); return;
    case EMN_SIG_PHI: if (S->charge) want_slot(N, g->elem); return;
    case EMN_SIG_F:
        if (g->mnode > 0) {
            if (e->kind == EMN_K) {
                need_current(N, e->ind[0]);
                need_current(N, e->ind[1]);
            } else if (e->kind == EMN_C) {
                need_voltage(N, g->elem);
            } else {
                need_current(N, g->elem);
            }
        } else if (e->kind == EMN_T) {
            need_current(N, g->elem);
        }
        return;
    case EMN_SIG_W:
        switch (e->kind) {
        case EMN_C:
            if (!S->charge) want_slot(N, g->elem);
            need_voltage(N, g->elem);
            return;
        case EMN_L:
            if (S->charge) want_slot(N, g->elem);
            need_current(N, g->elem);
            return;
        case EMN_R: case EMN_V: case EMN_I:
            need_voltage(N, g->elem);
            need_current(N, g->elem);
            return;
        default: return;
        }
    }
}

/* Room for the duals, which only some signals need (a slot's worth of
 * numbers five times over is some 3.6 MB on a grid printing node
 * voltages), and the plan of what to compute of them at each point:
 * only what the signals read (an array of 10^4 loudspeakers printing one
 * coil's current reads one slot, and forming every slot's duals took
 * half its run), or, with `all`, everything. */
static void dual_arrays(sim *S, bool all)
{
    if (S->pi) return;
    const emn_form *f = S->f;
    int ns = f->slots.n, nn = S->nn, ne = S->ne;
    S->pi = emn_xcalloc((size_t)ns + 1, sizeof(double));
    S->pidot = emn_xcalloc((size_t)ns + 1, sizeof(double));
    S->pi1 = emn_xcalloc((size_t)ns + 1, sizeof(double));
    S->pi2 = emn_xcalloc((size_t)ns + 1, sizeof(double));
    S->Fs = emn_xcalloc((size_t)ns + 1, sizeof(double));
    S->xterm = emn_xmalloc(((size_t)f->terms.n + 1) * sizeof(int));
    S->nxterm = emn_form_source_terms(f, S->xterm);
    S->ndv = emn_xcalloc((size_t)nn + 1, sizeof(double));
    S->nodecur = emn_xcalloc((size_t)nn + 1, sizeof(double));
    S->bcur = emn_xcalloc((size_t)ne + 1, sizeof(double));

    dneeds N = {S, emn_xcalloc((size_t)ns + 1, 1), emn_xcalloc((size_t)nn + 1, 1), NULL};
    if (all) {
        memset(N.want, 1, (size_t)ns);
        memset(N.node, 1, (size_t)nn);
    } else {
        if (!S->charge) {
            N.child = emn_xmalloc(((size_t)ne + 1) * sizeof(int));
            for (int e = 0; e < ne; e++) N.child[e] = -1;
            for (int v = 0; v < nn; v++)
                if (f->telem[v] >= 0) N.child[f->telem[v]] = v;
        }
        for (int k = 0; k < S->nsig; k++) need_signal(&N, &S->sig[k]);
        free(N.child);
        if (!S->charge)         /* the subtrees under the roots marked */
            for (int k = 0; k < nn; k++) {
                int v = f->torder[k];
                if (f->tparent[v] >= 0 && N.node[f->tparent[v]]) N.node[v] = 1;
            }
    }
    S->knode = emn_xmalloc(((size_t)nn + 1) * sizeof(int));
    S->nknode = 0;
    for (int k = 0; k < nn; k++) {
        int v = f->torder[S->charge ? k : nn - 1 - k];
        if (N.node[v]) S->knode[S->nknode++] = v;
    }
    S->kel = emn_xmalloc(((size_t)ne + 1) * sizeof(int));
    S->nkel = 0;
    if (!S->charge)             /* the currents into those subtrees */
        for (int e = 0; e < ne; e++) {
            const emn_elem *el = &S->c->elems.v[e];
            if (branch_slot(S, e) < 0 || el->kind == EMN_V || el->kind == EMN_T) continue;
            if (!N.node[el->node[0]] && !N.node[el->node[1]]) continue;
            S->kel[S->nkel++] = e;
            N.want[branch_slot(S, e)] = 1;
        }
    S->dsl = emn_xmalloc(((size_t)ns + 1) * sizeof(int));
    S->ndsl = 0;
    for (int sl = 0; sl < ns; sl++)
        if (N.want[sl]) S->dsl[S->ndsl++] = sl;
    S->knode_in = N.node;
    emn_form_duals_want(S->f, all ? NULL : N.want);
    free(N.want);
}

/* A C(x) or L(x): its value is checked at every step. */
static bool valued(const emn_elem *e)
{
    return e->vexpr && (e->kind == EMN_C || e->kind == EMN_L || e->kind == EMN_K);
}

static void sim_init(sim *S, const emn_circuit *c, emn_form *f, bool want_prints, bool want_saves)
{
    memset(S, 0, sizeof *S);
    S->c = c;
    S->f = f;
    S->charge = f->kind == EMN_FORM_CHARGE;
    S->nn = c->nodes.n;
    S->ne = c->elems.n;
    S->ar = emn_arena_new();
    S->nx = emn_xcalloc((size_t)S->nn + 1, sizeof(double));
    S->nu = emn_xcalloc((size_t)S->nn + 1, sizeof(double));
    /* counted first: a grid has neither, and arrays by node or element
     * would be megabytes */
    int nm = 0, nv = 0;
    for (int v = 1; v < S->nn; v++) nm += c->nodes.v[v].dom == EMN_DOM_MECH;
    for (int e = 0; e < S->ne; e++) nv += valued(&c->elems.v[e]);
    S->mnodes = emn_xmalloc((size_t)nm * sizeof(int) + 1);
    S->valued = emn_xmalloc((size_t)nv * sizeof(int) + 1);
    S->vtape = emn_xcalloc((size_t)nv + 1, sizeof(emn_tape *));
    S->nmnodes = S->nvalued = 0;
    for (int v = 1; v < S->nn; v++)
        if (c->nodes.v[v].dom == EMN_DOM_MECH) S->mnodes[S->nmnodes++] = v;
    for (int e = 0; e < S->ne; e++)
        if (valued(&c->elems.v[e])) {
            S->vtape[S->nvalued] = emn_tape_compile(c->elems.v[e].vexpr);
            S->valued[S->nvalued++] = e;
        }
    /* where the formulation gives an element's value by batches, it is
     * checked from there (an array's C(x) are a few instructions each) */
    S->vterm = emn_xmalloc((size_t)nv * sizeof(int) + 1);
    if (nv > 0) {
        S->termval = emn_xmalloc((size_t)f->nnonlinear * sizeof(double) + 1);
        int *term_of = emn_xmalloc((size_t)S->ne * sizeof(int) + 1);
        for (int e = 0; e < S->ne; e++) term_of[e] = -1;
        for (int i = 0; i < f->nnonlinear; i++) {
            int e = emn_form_value_elem(f, i);
            if (e >= 0) term_of[e] = i;
        }
        for (int k = 0; k < nv; k++) S->vterm[k] = term_of[S->valued[k]];
        free(term_of);
    }
    for (int v = 1; v < S->nn; v++) {
        if (c->nodes.v[v].jdef >= 0) xrate_set(S->ar, &S->xnode, S->nn, v, emn_form_xnode(f, v));
        if (!S->charge && f->node_mech) xrate_set(S->ar, &S->nmech, S->nn, v, f->node_mech[v]);
    }
    for (int e = 0; e < S->ne; e++)
        if (f->elem_branch_mech) xrate_set(S->ar, &S->bmech, S->ne, e, f->elem_branch_mech[e]);

    sigvec sg = {0};
    if (want_prints) for (int k = 0; k < c->prints.n; k++) EMN_PUSH(sg, c->prints.v[k]);
    if (want_saves) {
        if (c->saves.n) for (int k = 0; k < c->saves.n; k++) EMN_PUSH(sg, c->saves.v[k]);
        else signal_list(S->ar, c, &sg, false);
    }
    S->nsig = sg.n;
    S->sig = sg.v;
    S->names = emn_xcalloc((size_t)S->nsig + 1, sizeof(char *));
    S->units = emn_xcalloc((size_t)S->nsig + 1, sizeof(emn_unit));
    S->fexpr = emn_xcalloc((size_t)S->nsig + 1, sizeof(emn_expr *));
    for (int k = 0; k < S->nsig; k++) {
        S->names[k] = (char *)S->sig[k].text;
        S->units[k] = sig_unit(c, &S->sig[k]);
        if (needs_dual(S, &S->sig[k])) S->need_dual = true;
        if (S->sig[k].kind == EMN_SIG_F && S->sig[k].mnode > 0)
            S->fexpr[k] = force_coefficient(S->ar, c, &S->sig[k]);
    }
    for (int i = 0; i < 3; i++) S->val[i] = emn_xcalloc((size_t)S->nsig + 1, sizeof(double));
    for (int i = 0; i < 3; i++) S->pw[i] = emn_xcalloc((size_t)S->nsig + 1, sizeof(double));
    S->integral = emn_xcalloc((size_t)S->nsig + 1, sizeof(bool));
    for (int k = 0; k < S->nsig; k++) S->integral[k] = is_integral(c, &S->sig[k]);
    if (S->need_dual) dual_arrays(S, false);
}

static void sim_free(sim *S)
{
    xrate_free_all(S->xnode, S->nn);
    xrate_free_all(S->nmech, S->nn);
    xrate_free_all(S->bmech, S->ne);
    for (int k = 0; k < S->nvalued; k++) emn_tape_free(&S->vtape[k]);
    free(S->vtape);
    free(S->vterm);
    free(S->termval);
    free(S->v0);
    free(S->mnodes); free(S->valued);
    free(S->nx); free(S->nu);
    free(S->pi); free(S->pidot); free(S->pi1); free(S->pi2); free(S->Fs); free(S->xterm);
    free(S->ndv); free(S->nodecur); free(S->bcur);
    free(S->dsl); free(S->knode); free(S->kel); free(S->knode_in);
    free(S->sig); free(S->names); free(S->units); free(S->fexpr);
    for (int i = 0; i < 3; i++) free(S->val[i]);
    for (int i = 0; i < 3; i++) free(S->pw[i]);
    free(S->integral);
    emn_arena_free(&S->ar);
}

/* Signals at state (z, w); the duals must already be in S->pi, pidot, Fs. */
static void compute_signals(sim *S, const double *z, const double *w, double *out)
{
    mech_state(S, z, w);
    if (S->need_dual) kirchhoff(S, w);
    /* + 0.0 turns a negative zero (-k * 0) into the zero a user expects */
    for (int k = 0; k < S->nsig; k++) out[k] = signal_value(S, k, z, w) + 0.0;
}

/* ------------------------------------------------------- initial state */

static double ic_of_node_cap(const emn_circuit *c, int e, bool *has)
{
    const emn_elem *el = &c->elems.v[e];
    if (el->has_ic) { *has = true; return el->ic; }
    /* .ic v(n)=val: a capacitor from an .ic node to ground or to another
     * .ic node holds the difference */
    double vn[2] = {0, 0};
    bool known[2] = {el->node[0] == 0, el->node[1] == 0};
    for (int k = 0; k < c->ics.n; k++) {
        const emn_ic *ic = &c->ics.v[k];
        if (ic->kind != EMN_IC_V) continue;
        for (int t = 0; t < 2; t++)
            if (ic->node == el->node[t]) { vn[t] = ic->value; known[t] = true; }
    }
    *has = known[0] && known[1] && (el->node[0] != 0 || el->node[1] != 0);
    bool named = false;
    for (int k = 0; k < c->ics.n; k++)
        if (c->ics.v[k].kind == EMN_IC_V && (c->ics.v[k].node == el->node[0] || c->ics.v[k].node == el->node[1]))
            named = true;
    if (!named) *has = false;
    return vn[0] - vn[1];
}

/*
 * z0 and p0 from the initial conditions: mechanical displacements from
 * .ic x(), velocities from .ic v(); capacitor charges C v0 and inductor
 * fluxes L i0 (zero without IC=).  The electrical coordinates that set
 * the element holding a coordinate-like quantity (capacitor charge in the
 * charge formulation, inductor flux in the flux formulation) are found by
 * least squares, which is exact whenever the ICs are consistent with the
 * formulation's conservation laws.
 */
static int initial_state(sim *S, const double *zop, const double *wop, double *z0, double *p0, emn_diag *d)
{
    const emn_circuit *c = S->c;
    emn_form *f = S->f;
    int n = f->n, ns = f->slots.n;
    double *u0 = emn_xcalloc((size_t)ns + 1, sizeof(double));
    double *v0 = emn_xcalloc((size_t)ns + 1, sizeof(double));
    if (zop) memcpy(z0, zop, (size_t)n * sizeof(double));
    else memset(z0, 0, (size_t)n * sizeof(double));
    memset(p0, 0, (size_t)n * sizeof(double));
    int status = 0;
    /* the operating point is a state under the DC source values */
    if (zop) emn_form_set_dc(f, 1);
    else emn_form_set_time(f, 0);
    /* mechanical */
    for (int k = 0; k < c->ics.n; k++) {
        const emn_ic *ic = &c->ics.v[k];
        if (c->nodes.v[ic->node].dom != EMN_DOM_MECH) continue;
        int j = f->node_coord[ic->node];
        if (j < 0) {
            emn_diag_error(d, ic->loc, "node '%s' is defined by a linkage; its %s follows from the "
                           "coordinates it depends on and cannot be set", c->nodes.v[ic->node].name,
                           ic->kind == EMN_IC_X ? "displacement" : "velocity");
            status = -1;
            continue;
        }
        if (ic->kind == EMN_IC_X) z0[j] = ic->value;
    }
    mech_state(S, z0, z0);      /* positions only: velocities are set below */
    /* electrical coordinates by least squares on the storing elements */
    struct { int *v; int n, cap; } rows = {0};
    struct { double *v; int n, cap; } target = {0};
    bool any = false;
    /* the couplings, listed once: scanning every element for them at
     * every inductor is quadratic in a grid with many inductors */
    struct { int *v; int n, cap; } kel = {0};
    if (!S->charge)
        for (int k = 0; k < c->elems.n; k++)
            if (c->elems.v[k].kind == EMN_K) EMN_PUSH(kel, k);
    for (int e = 0; e < c->elems.n; e++) {
        const emn_elem *el = &c->elems.v[e];
        if (f->elem_branch_slot[e] < 0) continue;
        if (S->charge && el->kind == EMN_C) {
            bool has;
            double v = ic_of_node_cap(c, e, &has);
            EMN_PUSH(rows, f->elem_branch_slot[e]);
            EMN_PUSH(target, has ? elem_value(S, el) * v : zop ? emn_form_slot_value(f, f->elem_branch_slot[e], zop) : 0);
            any |= has;
        } else if (!S->charge && el->kind == EMN_L) {
            if (zop && !el->has_ic) {       /* keeps its operating-point flux */
                EMN_PUSH(rows, f->elem_branch_slot[e]);
                EMN_PUSH(target, emn_form_slot_value(f, f->elem_branch_slot[e], zop));
                continue;
            }
            double lam = el->has_ic ? elem_value(S, el) * el->ic : 0;
            for (int q = 0; q < kel.n; q++) {       /* mutual flux */
                const emn_elem *ke = &c->elems.v[kel.v[q]];
                int other = ke->ind[0] == e ? ke->ind[1] : ke->ind[1] == e ? ke->ind[0] : -1;
                if (other < 0 || !c->elems.v[other].has_ic) continue;
                double M = elem_value(S, ke) * sqrt(elem_value(S, el) * elem_value(S, &c->elems.v[other]));
                lam += M * c->elems.v[other].ic;
            }
            lam -= xrate_value(xrate_at(S->bmech, e), S->nx);
            EMN_PUSH(rows, f->elem_branch_slot[e]);
            EMN_PUSH(target, lam);
            any |= el->has_ic || (!zop && lam != 0);
        }
    }
    if (any && f->ne > 0) {
        /* normal equations (A'A + delta I) z = A' b over the electrical coordinates */
        emn_sparse N;
        emn_sparse_init(&N, f->ne);
        for (int r = 0; r < rows.n; r++) {
            const emn_lmap *m = &f->slots.v[rows.v[r]];
            const int *ci = emn_lmap_ci(m);
            for (int a = 0; a < m->nc; a++)
                for (int b = 0; b < m->nc; b++)
                    if (ci[a] < f->ne && ci[b] < f->ne) emn_sparse_reserve(&N, ci[a], ci[b]);
        }
        emn_sparse_finalize(&N);
        double *rhs = emn_xcalloc((size_t)f->ne + 1, sizeof(double));
        for (int r = 0; r < rows.n; r++) {
            const emn_lmap *m = &f->slots.v[rows.v[r]];
            const int *ci = emn_lmap_ci(m);
            double b = target.v[r];     /* source integrals are zero at t = 0 */
            for (int a = 0; a < m->nc; a++) {
                if (ci[a] >= f->ne) continue;
                rhs[ci[a]] += m->c[a] * b;
                for (int q = 0; q < m->nc; q++)
                    if (ci[q] < f->ne) N.Ax[emn_sparse_find(&N, ci[a], ci[q])] += m->c[a] * m->c[q];
            }
        }
        double big = 0;
        for (int k = 0; k < N.nnz; k++) big = fmax(big, fabs(N.Ax[k]));
        for (int j = 0; j < f->ne; j++) N.Ax[emn_sparse_find(&N, j, j)] += 1e-12 * (big > 0 ? big : 1);
        emn_lu *lu = emn_lu_new();
        int col;
        if (emn_lu_factor(lu, &N, &col) == 0) {
            emn_lu_solve(lu, rhs);
            for (int j = 0; j < f->ne; j++) z0[j] = rhs[j];
            /* ICs the formulation cannot represent (a capacitor cutset in
             * the charge formulation, an inductor loop in the flux one) */
            for (int r = 0; r < rows.n; r++) {
                double got = emn_form_slot_value(f, rows.v[r], z0);
                if (fabs(got - target.v[r]) > 1e-6 * fabs(target.v[r]) + 1e-30) {
                    for (int e = 0; e < c->elems.n; e++)
                        if (f->elem_branch_slot[e] == rows.v[r]) {
                            emn_diag_warning(d, c->elems.v[e].loc, "the initial conditions cannot all be met in the %s "
                                             "formulation: %s starts from %s %g instead of %g",
                                             S->charge ? "charge" : "flux", c->elems.v[e].name,
                                             S->charge ? "charge" : "flux linkage", got, target.v[r]);
                            break;
                        }
                    break;
                }
            }
        }
        emn_lu_free(&lu);
        free(rhs);
        emn_sparse_free(&N);
    }
    free(rows.v);
    free(target.v);
    free(kel.v);
    /* slot values at z0 and the rates the ICs give */
    for (int sl = 0; sl < ns; sl++) {
        v0[sl] = emn_form_slot_value(f, sl, z0);
        if (wop) {
            u0[sl] = emn_form_slot_rate(f, sl, wop);
        } else {                        /* from rest: only the sources move */
            const emn_lmap *m = &f->slots.v[sl];
            double u = 0;
            for (int q = 0; q < m->nd; q++) u += emn_lmap_d(m)[q] * f->s[emn_lmap_di(m)[q]];
            u0[sl] = u;
        }
    }
    for (int k = 0; k < c->ics.n; k++) {
        const emn_ic *ic = &c->ics.v[k];
        int j = f->node_coord[ic->node];
        if (c->nodes.v[ic->node].dom != EMN_DOM_MECH || ic->kind != EMN_IC_V || j < 0) continue;
        for (int sl = 0; sl < ns; sl++) {
            const emn_lmap *m = &f->slots.v[sl];
            if (m->nc == 1 && m->nd == 0 && emn_lmap_ci(m)[0] == j && f->coord[j].kind == EMN_COORD_MECH)
                u0[sl] = ic->value;
        }
    }
    for (int e = 0; e < c->elems.n; e++) {
        const emn_elem *el = &c->elems.v[e];
        int sl = f->elem_branch_slot[e];
        if (sl < 0) continue;
        /* a capacitor's voltage (flux formulation) and an inductor's
         * current (charge formulation) are the rates their momenta hold:
         * the IC where given, else the operating point's, else zero (from
         * rest: uncharged, no current), whatever the sources would add */
        if (S->charge && el->kind == EMN_L) {
            if (el->has_ic) u0[sl] = el->ic;
            else if (!wop) u0[sl] = 0;
        }
        if (!S->charge && el->kind == EMN_C) {
            bool has;
            double v = ic_of_node_cap(c, e, &has);
            if (has) u0[sl] = v;
            else if (!wop) u0[sl] = 0;
        }
    }
    /* momenta: each term's dL/du at (v0, u0) */
    double *loc = f->scratch;
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        int m = tm->m;
        for (int a = 0; a < m; a++) {
            loc[a] = v0[tm->slot[a]];
            loc[m + a] = u0[tm->slot[a]];
        }
        emn_form_term_params(f, tm, &loc[2 * m], 1);
        for (int a = 0; a < m; a++) {
            double pa = emn_tmpl_eval_p(tm->tmpl, a, loc);
            const emn_lmap *s = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < s->nc; q++) p0[emn_lmap_ci(s)[q]] += s->c[q] * pa;
        }
    }
    free(u0);
    free(v0);
    return status;
}

/* ------------------------------------------------------ operating point */

static const char *form_name(emn_form_kind k) { return k == EMN_FORM_CHARGE ? "charge" : "flux"; }

/* The element that dominates coordinate j's equation, or -1. */
static int dominant_element(sim *S, int j, const double *z, const double *w)
{
    emn_form *f = S->f;
    double best = -1;
    int who = -1;
    double *loc = f->scratch;
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        emn_form_term_locals(f, tm, z, w, loc);
        for (int a = 0; a < tm->m; a++) {
            const emn_lmap *s = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < s->nc; q++) {
                if (emn_lmap_ci(s)[q] != j) continue;
                double v = fabs(emn_tmpl_eval_F(tm->tmpl, a, loc)) + fabs(emn_tmpl_eval_p(tm->tmpl, a, loc));
                if (!isfinite(v)) v = INFINITY;
                if (v > best) {
                    best = v;
                    who = tm->elem;
                }
            }
        }
    }
    return who;
}

/* The error "HEAD; coordinate NAME TAIL, dominated by ELEMENT" about
 * coordinate j (HEAD alone for j < 0), at the line of the element that
 * dominates its equation at (z, w), so that an editor can jump to it. */
static void coord_error(sim *S, emn_diag *d, int j, const double *z, const double *w, const char *head,
                        const char *tail)
{
    if (j < 0 || j >= S->f->n) {
        emn_diag_error(d, EMN_NOLOC, "%s", head);
        return;
    }
    int el = dominant_element(S, j, z, w);
    emn_buf name = {0};
    emn_form_coord_name(S->f, j, &name);
    emn_diag_error(d, el >= 0 ? S->c->elems.v[el].loc : EMN_NOLOC, "%s; coordinate %s%s%s%s", head, name.v, tail,
                   el >= 0 ? ", dominated by " : "", el >= 0 ? S->c->elems.v[el].name : "");
    emn_buf_free(&name);
}

/* Each C(x) or L(x) element's value at (z, w) into out[k] (the mechanical
 * nodes' state in S->nx with it). */
static void valued_values(sim *S, const double *z, const double *w, double *out)
{
    if (S->nvalued == 0) return;
    mech_state(S, z, w);
    emn_form_values(S->f, z, w, S->termval);
    for (int k = 0; k < S->nvalued; k++)
        out[k] = S->vterm[k] >= 0 ? S->termval[S->vterm[k]] : emn_tape_eval(S->vtape[k], S->nx);
}

/* The integrator's failure (its message and coordinate) at state z and
 * its last velocities. */
static void integ_error(sim *S, emn_diag *d, const double *z)
{
    char head[960];
    int at = snprintf(head, sizeof head, "%s formulation: %s", form_name(S->f->kind), S->it->msg);
    /* A movable plate closing on its electrode (C = c0 g / (g - x)) has
     * its value grow without bound before the plates touch, a core's L(x)
     * can run to 0 or without bound, and the steps shrink with the time
     * left: named, the element whose value ran furthest from its start,
     * ten times up or down or more (random circuits with movable plates
     * and cores stopped so, "time step too small", naming only a loop's
     * charge or nothing). */
    if (S->v0 && S->nvalued > 0) {
        double *v = emn_xmalloc((size_t)S->nvalued * sizeof(double));
        valued_values(S, z, S->it->w[0], v);
        int best = -1;
        double far = log(10), ratio = 1;
        for (int k = 0; k < S->nvalued; k++) {
            const emn_elem *el = &S->c->elems.v[S->valued[k]];
            double r = v[k] / S->v0[k];
            if (el->kind == EMN_K || !(S->v0[k] > 0) || !(r > 0) || !(fabs(log(r)) >= far)) continue;
            far = fabs(log(r));
            ratio = r;
            best = k;
        }
        if (best >= 0) {
            const emn_elem *el = &S->c->elems.v[S->valued[best]];
            if (at > 0 && (size_t)at < sizeof head)
                snprintf(head + at, sizeof head - (size_t)at, "; the %s of %s is %.3g %s, %.3g times its value at "
                         "the start (running away: pull-in?)", el->kind == EMN_C ? "capacitance" : "inductance",
                         el->name, v[best], el->kind == EMN_C ? "F" : "H", ratio);
            emn_diag_error(d, el->loc, "%s", head);
            free(v);
            return;
        }
        free(v);
    }
    coord_error(S, d, S->it->bad_coord, z, S->it->w[0], head, "");
}

/* ------------------------------------------------- steady states ruled out */

/* The DC current into each group of nodes that only capacitors and
 * current sources leave (masses and force sources, mechanically: the
 * force on a group of nodes that nothing else holds) must be zero, or the
 * charge (the speed) grows without end.  Everything else joins its nodes
 * into one group: resistors, inductors, voltage sources, springs,
 * dampers, a transducer's two sides.  A node a linkage defines is held,
 * and so is every node when a value depends on a displacement (a C(x)
 * force may balance a DC force); both only leave cases undecided for the
 * operating point's own Newton iteration. */
static int cutset_steady(const emn_circuit *c, emn_diag *d)
{
    int nn = c->nodes.n, ne = c->elems.n, status = 0;
    bool x_values = false;
    for (int i = 0; i < ne; i++)
        if (c->elems.v[i].vexpr && c->elems.v[i].kind != EMN_J) x_values = true;
    emn_dsu u;
    emn_dsu_init(&u, nn);
    double *net = emn_xcalloc((size_t)nn + 1, sizeof(double)), *mag = emn_xcalloc((size_t)nn + 1, sizeof(double));
    int *at = emn_xmalloc((size_t)nn * sizeof(int) + 1);    /* per group: a source (its index * 2 + terminal) */
    for (int v = 0; v < nn; v++) {
        if (x_values && c->nodes.v[v].dom == EMN_DOM_MECH) emn_dsu_union(&u, v, 0);
        at[v] = -1;
    }
    for (int i = 0; i < ne; i++) {
        const emn_elem *e = &c->elems.v[i];
        switch (e->kind) {
        case EMN_R: case EMN_L: case EMN_V: case EMN_S: case EMN_D:
            emn_dsu_union(&u, e->node[0], e->node[1]);
            break;
        case EMN_T:
            emn_dsu_union(&u, e->node[0], e->node[1]);
            emn_dsu_union(&u, e->node[2], e->node[3]);
            break;
        case EMN_J:
            emn_dsu_union(&u, e->node[0], 0);
            break;
        default:
            break;
        }
    }
    for (int i = 0; i < ne; i++) {
        const emn_elem *e = &c->elems.v[i];
        if (e->kind != EMN_I && e->kind != EMN_F) continue;
        double dc = emn_wave_dc(e->src);
        int a = emn_dsu_find(&u, e->node[0]), b = emn_dsu_find(&u, e->node[1]);
        if (a == b) continue;
        net[a] -= dc;
        net[b] += dc;
        mag[a] += fabs(dc);
        mag[b] += fabs(dc);
        if (at[a] < 0) at[a] = 2 * i;
        if (at[b] < 0) at[b] = 2 * i + 1;
    }
    int g = emn_dsu_find(&u, 0);
    for (int v = 1; v < nn && status == 0; v++) {
        int r = emn_dsu_find(&u, v);
        if (r != v || r == g || fabs(net[r]) <= 1e-12 * mag[r]) continue;
        const emn_elem *e = &c->elems.v[at[r] / 2];
        const char *node = c->nodes.v[e->node[at[r] % 2]].name;
        if (e->kind == EMN_F)
            emn_diag_error(d, e->loc, "operating point: no steady state: %s pushes node '%s' with a DC force of "
                           "%g N, and only masses and force sources hold it and the nodes joined to it: they "
                           "accelerate without end", e->name, node, fabs(net[r]));
        else
            emn_diag_error(d, e->loc, "operating point: no steady state: a DC current of %g A flows %s node "
                           "'%s' (%s), and only capacitors and current sources leave it and the nodes joined to "
                           "it: their charge grows without end", fabs(net[r]), net[r] > 0 ? "into" : "out of", node,
                           e->name);
        status = -1;
    }
    free(at);
    emn_dsu_free(&u);
    free(net);
    free(mag);
    return status;
}

/* The DC voltages around each loop of inductors and voltage sources must
 * add up to zero, or the loop's current grows without end: the
 * potentials along a spanning forest of those branches (the inductors
 * carrying none) must agree with every branch that closes a loop. */
static int loop_steady(const emn_circuit *c, emn_diag *d)
{
    int nn = c->nodes.n, ne = c->elems.n, status = 0;
    int *up = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    double *pot = emn_xcalloc((size_t)nn + 1, sizeof(double));   /* v(node) - v(up[node]) */
    double big = 0;
    for (int v = 0; v < nn; v++) up[v] = v;
    for (int i = 0; i < ne; i++)
        if (c->elems.v[i].kind == EMN_V) big = fmax(big, fabs(emn_wave_dc(c->elems.v[i].src)));
    for (int i = 0; i < ne && status == 0; i++) {
        const emn_elem *e = &c->elems.v[i];
        if (e->kind != EMN_L && e->kind != EMN_V) continue;
        double drop = e->kind == EMN_V ? emn_wave_dc(e->src) : 0;     /* v(n+) - v(n-) */
        double miss = pot_join(up, pot, e->node[0], e->node[1], drop);
        if (fabs(miss) > 1e-12 * big) {
            emn_diag_error(d, e->loc, "operating point: no steady state: %s closes a loop of inductors and voltage "
                           "sources with %g V around it at DC, so the loop's current grows without end", e->name,
                           fabs(miss));
            status = -1;
        }
    }
    free(up);
    free(pot);
    return status;
}

/* Solve for the steady state from the initial guess in (z, w); records an
 * error naming the coordinate when there is none. */
static int op_state(sim *S, const double *p0, double *z, double *w, emn_diag *d)
{
    emn_form *f = S->f;
    char msg[256];
    int bad = -1;
    if (cutset_steady(S->c, d) < 0 || loop_steady(S->c, d) < 0) return -1;
    if (emn_op_solve(f, S->c->opt.reltol, p0, z, w, &bad, msg, sizeof msg, NULL) == 0) return 0;
    char head[640];
    snprintf(head, sizeof head, "operating point (%s formulation): %s", form_name(f->kind), msg);
    coord_error(S, d, bad, z, w, head, " does not settle");
    return -1;
}

int emn_sim_op(const emn_circuit *c, emn_form_kind kind, emn_diag *d, FILE *out)
{
    emn_form *f = emn_form_build(c, kind, d);
    if (!f) return EMN_EXIT_INVALID;
    sim S;
    sim_init(&S, c, f, false, false);
    /* the op's own signal list */
    sigvec sg = {0};
    signal_list(S.ar, c, &sg, true);
    free(S.sig); free(S.names); free(S.units); free(S.fexpr);
    for (int i = 0; i < 3; i++) free(S.val[i]);
    S.nsig = sg.n;
    S.sig = sg.v;
    S.names = emn_xcalloc((size_t)S.nsig + 1, sizeof(char *));
    S.units = emn_xcalloc((size_t)S.nsig + 1, sizeof(emn_unit));
    S.fexpr = emn_xcalloc((size_t)S.nsig + 1, sizeof(emn_expr *));
    for (int i = 0; i < 3; i++) S.val[i] = emn_xcalloc((size_t)S.nsig + 1, sizeof(double));
    S.need_dual = true;
    dual_arrays(&S, true);
    for (int k = 0; k < S.nsig; k++) S.names[k] = (char *)S.sig[k].text;
    int n = f->n, status = EMN_EXIT_OK;
    double *z = emn_xcalloc((size_t)n + 1, sizeof(double)), *w = emn_xcalloc((size_t)n + 1, sizeof(double));
    double *p0 = emn_xcalloc((size_t)n + 1, sizeof(double));
    if (initial_state(&S, NULL, NULL, z, p0, d) < 0) status = EMN_EXIT_INVALID;
    else if (op_state(&S, p0, z, w, d) < 0) status = EMN_EXIT_FAILED;
    else {
        emn_form_set_dc(f, 1);
        double *dp = emn_xcalloc((size_t)n + 1, sizeof(double)), *dF = emn_xcalloc((size_t)n + 1, sizeof(double));
        branch_duals(&S, z, w);
        emn_form_rates(f, z, w, dp, dF, S.pidot);
        compute_signals(&S, z, w, S.val[0]);
        for (int k = 0; k < S.nsig; k++) {     /* as "%s %.9e\n", a line at a time */
            char num[EMN_OUT_E9_LEN];
            int len = emn_out_format_e9(num, S.val[0][k]);
            fputs(S.names[k], out);
            putc(' ', out);
            fwrite(num, 1, (size_t)len, out);
            putc('\n', out);
        }
        free(dp);
        free(dF);
    }
    free(z);
    free(w);
    free(p0);
    sim_free(&S);
    emn_form_free(&f);
    return status;
}


/* ------------------------------------------------------------ the run */

/* Update the branch duals for the point just accepted (or the start).
 * The momentum rates come from the parabola through the last three
 * points (two after a breakpoint's restart): second order like the
 * integrator, and, unlike the trapezoidal rule's own derivative
 * recursion, free of a memory that would carry any error at the start
 * forward undamped. */
static void update_duals(sim *S, const double *z, const double *w, bool start)
{
    if (!S->need_dual) return;
    int ns = S->f->slots.n;
    double *t = S->pi2;
    S->pi2 = S->pi1;
    S->pi1 = S->pi;
    S->pi = t;
    branch_duals(S, z, w);
    const emn_integ *it = S->it;
    if (start) {
        memset(S->pidot, 0, (size_t)ns * sizeof(double));
        return;
    }
    double h1 = it->tpast[0] - it->tpast[1];
    if (it->order < 2 || it->npast < 2) {
        for (int k = 0; k < S->ndsl; k++) {
            int sl = S->dsl[k];
            S->pidot[sl] = (S->pi[sl] - S->pi1[sl]) / h1;
        }
    } else {
        double h2 = it->tpast[1] - it->tpast[2];
        double c0 = (2 * h1 + h2) / (h1 * (h1 + h2)), c1 = -(h1 + h2) / (h1 * h2), c2 = h1 / (h2 * (h1 + h2));
        for (int k = 0; k < S->ndsl; k++) {
            int sl = S->dsl[k];
            S->pidot[sl] = c0 * S->pi[sl] + c1 * S->pi1[sl] + c2 * S->pi2[sl];
        }
    }
    if (S->nxterm > 0) emn_form_source_slot_rates(S->f, S->xterm, S->nxterm, it->t, z, w, S->pidot);
}

/* A capacitance or inductance that has reached zero or gone negative, a
 * coupling that has reached 1 in magnitude. */
static int check_values(sim *S, double t, emn_diag *d)
{
    const emn_circuit *c = S->c;
    if (S->nvalued > 0) emn_form_values(S->f, S->it->z[0], S->it->w[0], S->termval);
    for (int k = 0; k < S->nvalued; k++) {
        const emn_elem *el = &c->elems.v[S->valued[k]];
        double v = S->vterm[k] >= 0 ? S->termval[S->vterm[k]] : emn_tape_eval(S->vtape[k], S->nx);
        if (el->kind == EMN_K) {
            if (fabs(v) < 1) continue;
            emn_diag_error(d, el->loc, "the coupling of %s reached %g at t = %.9g s; it must stay below 1 in "
                           "magnitude", el->name, v, t);
            return -1;
        }
        if (v > 0 && isfinite(v)) continue;
        emn_diag_error(d, el->loc, "%s of %s reached %g %s at t = %.9g s%s",
                       el->kind == EMN_C ? "capacitance" : "inductance", el->name, v,
                       el->kind == EMN_C ? "F" : "H", t,
                       el->kind == EMN_C ? " (the plates touched: pull-in)" : "");
        return -1;
    }
    return 0;
}

typedef struct writers { emn_out *table, *raw, *csv; int np; } writers;

static void write_row(sim *S, writers *W, emn_sim_result *res, bool keep, double t, const double *v)
{
    if (W->table) emn_out_row(W->table, t, v);
    if (W->raw) emn_out_row(W->raw, t, v + W->np);
    if (W->csv) emn_out_row(W->csv, t, v + W->np);
    if (keep) {
        int m = 1 + S->nsig - W->np;
        if (res->nrow == res->rowcap) {         /* geometric growth: no realloc per row */
            res->rowcap = res->rowcap ? 2 * res->rowcap : 1024;
            res->rows = emn_xrealloc(res->rows, (size_t)res->rowcap * (size_t)m * sizeof(double));
        }
        res->rows[(size_t)res->nrow * (size_t)m] = t;
        memcpy(res->rows + (size_t)res->nrow * (size_t)m + 1, v + W->np, (size_t)(m - 1) * sizeof(double));
        res->nrow++;
    }
}

/* The output point after point k - 1 (at tau): tstart + k tstep, or
 * tstop itself when that passes tstop and tau fell short of it, so that
 * the table always ends at tstop. */
static double next_output(double tstart, double tstep, long k, double tstop, double tau)
{
    double t = tstart + (double)k * tstep;
    return t > tstop * (1 + 1e-12) && tau < tstop * (1 - 1e-12) ? tstop : t;
}

/* Output points in (tval[1], tval[0]], interpolated with the step's
 * order: quadratic through the last three points after a second-order
 * step, linear otherwise. */
static void emit_points(sim *S, writers *W, emn_sim_result *res, bool keep, double *tnext, long *k,
                        double tstep, double tstart, double tstop, double *buf)
{
    double t0 = S->tval[0], t1 = S->tval[1], t2 = S->tval[2];
    bool quad = S->nval >= 3 && S->order_last >= 2;
    while (*tnext <= t0 * (1 + 1e-12) + 1e-300 && *tnext <= tstop * (1 + 1e-12)) {
        double tau = *tnext;
        for (int q = 0; q < S->nsig; q++) {
            double y0 = S->val[0][q], y1 = S->val[1][q];
            double y;
            if (fabs(tau - t0) <= 1e-12 * fabs(t0)) y = y0;
            else if (quad) {
                double y2 = S->val[2][q];
                y = y0 * (tau - t1) * (tau - t2) / ((t0 - t1) * (t0 - t2)) +
                    y1 * (tau - t0) * (tau - t2) / ((t1 - t0) * (t1 - t2)) +
                    y2 * (tau - t0) * (tau - t1) / ((t2 - t0) * (t2 - t1));
            } else {
                y = y1 + (y0 - y1) * (tau - t1) / (t0 - t1);
            }
            buf[q] = y;
        }
        write_row(S, W, res, keep, tau, buf);
        (*k)++;
        *tnext = next_output(tstart, tstep, *k, tstop, tau);
    }
}

static void shift_values(sim *S, double t)
{
    double *tmp = S->val[2];
    S->val[2] = S->val[1];
    S->val[1] = S->val[0];
    S->val[0] = tmp;
    tmp = S->pw[2];
    S->pw[2] = S->pw[1];
    S->pw[1] = S->pw[0];
    S->pw[0] = tmp;
    S->tval[2] = S->tval[1];
    S->tval[1] = S->tval[0];
    S->tval[0] = t;
    if (S->nval < 3) S->nval++;
}

/* Turn the powers compute_signals left in val[0] into energies since
 * t = 0, by the trapezoidal rule between accepted points. */
static void integrate_energy(sim *S)
{
    for (int k = 0; k < S->nsig; k++) {
        if (!S->integral[k]) continue;
        double P = S->val[0][k];
        S->pw[0][k] = P;
        S->val[0][k] = S->nval >= 2 ? S->val[1][k] + 0.5 * (S->tval[0] - S->tval[1]) * (P + S->pw[1][k]) : 0;
    }
}

/* The duals' rates at the start, the difference quotient over two steps
 * of negligible length after it (emn_integ_probe), or NULL if that step
 * fails.  The run's first steps cannot stand in for them: the first is
 * accepted untested, and where it is longer than the fastest time
 * constant a parabola through the first points put an inductor's L di/dt
 * at a third of its value on the row of t = 0 (the charge formulation, a
 * 10 ns L/R behind a current source ramping from zero, hmax 10 us).  The
 * duals at the start, pi0 and Fs0, are put back into S->pi and S->Fs. */
static double *start_rates(sim *S, const double *pi0, const double *Fs0)
{
    if (S->ndsl == 0) return NULL;
    emn_integ *it = S->it;
    size_t ns = (size_t)S->f->slots.n;
    double t0 = it->t, h = 0;
    double *z1 = emn_xmalloc((size_t)S->f->n * sizeof(double) + 1);
    double *r = NULL;
    if (emn_integ_probe(it, z1, &h) == 0) {
        r = emn_xcalloc(ns + 1, sizeof(double));
        branch_duals(S, it->ztry, it->wtry);        /* at t0 + 2 h */
        for (int k = 0; k < S->ndsl; k++) r[S->dsl[k]] = S->pi[S->dsl[k]];
        emn_form_set_time(S->f, t0 + h);
        branch_duals(S, z1, it->w[0]);
        for (int k = 0; k < S->ndsl; k++) {
            int sl = S->dsl[k];
            r[sl] = (r[sl] - S->pi[sl]) / h;
        }
    }
    emn_form_set_time(S->f, t0);
    memcpy(S->pi, pi0, ns * sizeof(double));
    memcpy(S->Fs, Fs0, ns * sizeof(double));
    free(z1);
    return r;
}

int emn_sim_tran(const emn_circuit *c, const emn_sim_opts *o, emn_diag *d, bool keep, emn_sim_result *res)
{
    double t_begin = emn_now();
    memset(res, 0, sizeof *res);
    emn_form *f = emn_form_build(c, o->form, d);
    if (!f) return EMN_EXIT_INVALID;
    sim S;
    bool want_saves = keep || o->raw_path || o->csv_path;
    sim_init(&S, c, f, o->print_table && !keep, want_saves);
    writers W = {0};
    W.np = o->print_table && !keep ? c->prints.n : 0;
    res->n = f->n;
    res->ne = f->ne;
    res->nm = f->nm;
    int status = EMN_EXIT_OK;

    emn_integ_opts io = {0};
    io.reltol = c->opt.reltol;
    io.abstol = c->opt.abstol;
    io.vntol = c->opt.vntol;
    io.chgtol = c->opt.chgtol;
    io.trtol = c->opt.trtol;
    io.method = c->opt.method;
    io.maxord = c->opt.maxord;
    io.itl4 = c->opt.itl4;
    io.tstop = c->tstop;
    io.hmax = c->tmax > 0 ? c->tmax : fmin(c->tstep, (c->tstop - c->tstart) / 50);
    if (!(io.hmax > 0)) io.hmax = c->tstop / 50;
    io.hmin = io.hmax * 1e-11;     /* as SPICE's smallest step relative to its largest */
    emn_integ *it = NULL;      /* made after the operating point, whose matrices go first */

    double *z0 = emn_xcalloc((size_t)f->n + 1, sizeof(double));
    double *p0 = emn_xcalloc((size_t)f->n + 1, sizeof(double));
    double *buf = emn_xcalloc((size_t)S.nsig + 1, sizeof(double));
    double *v1 = emn_xcalloc((size_t)S.nsig + 1, sizeof(double));
    double *pi0 = NULL, *Fs0 = NULL, *pidot0 = NULL;
    double *zop = NULL, *wop = NULL;
    if (!c->uic) {
        f->op_for_tran = true;
        zop = emn_xcalloc((size_t)f->n + 1, sizeof(double));
        wop = emn_xcalloc((size_t)f->n + 1, sizeof(double));
        if (initial_state(&S, NULL, NULL, zop, p0, d) < 0 || op_state(&S, p0, zop, wop, d) < 0) {
            free(zop);
            status = EMN_EXIT_FAILED;
            goto done;
        }
    }
    int ist = initial_state(&S, zop, wop, z0, p0, d);
    free(zop);
    if (ist < 0) {
        status = EMN_EXIT_INVALID;
        goto done;
    }
    it = S.it = emn_integ_new(f, &io);
    emn_form_set_time(f, 0);
    /* the start before any output: a run that cannot start writes no
     * table header and no file */
    int rc = emn_integ_start(it, 0, z0, p0, wop);
    free(wop);
    wop = NULL;
    if (rc < 0) {
        integ_error(&S, d, z0);
        status = EMN_EXIT_FAILED;
        goto done;
    }
    if (S.nvalued > 0) {
        S.v0 = emn_xmalloc((size_t)S.nvalued * sizeof(double));
        valued_values(&S, it->z[0], it->w[0], S.v0);
    }
    if (W.np) {
        const char *err = NULL;
        W.table = emn_out_open(EMN_OUT_TABLE, NULL, stdout, c->title, W.np, (const char *const *)S.names,
                               S.units, &err);
    }
    if (o->raw_path && !keep) {
        const char *err = NULL;
        W.raw = emn_out_open(o->raw_ascii ? EMN_OUT_RAW_ASCII : EMN_OUT_RAW_BINARY, o->raw_path, NULL, c->title,
                             S.nsig - W.np, (const char *const *)S.names + W.np, S.units + W.np, &err);
        if (!W.raw) {
            emn_diag_error(d, EMN_NOLOC, "cannot write '%s': %s", o->raw_path, err ? err : "error");
            status = EMN_EXIT_FAILED;
            goto done;
        }
    }
    if (o->csv_path && !keep) {
        const char *err = NULL;
        W.csv = emn_out_open(EMN_OUT_CSV, o->csv_path, NULL, c->title, S.nsig - W.np,
                             (const char *const *)S.names + W.np, S.units + W.np, &err);
        if (!W.csv) {
            emn_diag_error(d, EMN_NOLOC, "cannot write '%s': %s", o->csv_path, err ? err : "error");
            status = EMN_EXIT_FAILED;
            goto done;
        }
    }
    if (keep) {
        res->nsig = S.nsig;
        res->names = emn_xcalloc((size_t)S.nsig + 1, sizeof(char *));
        res->units = emn_xcalloc((size_t)S.nsig + 1, sizeof(emn_unit));
        for (int k = 0; k < S.nsig; k++) res->names[k] = emn_xstrdup(S.names[k]);
        memcpy(res->units, S.units, (size_t)S.nsig * sizeof(emn_unit));
    }

    /* duals at t = 0; their derivatives come from the first step */
    update_duals(&S, it->z[0], it->w[0], true);
    int ns = S.need_dual ? f->slots.n + 1 : 0;     /* the duals' length, if they are kept */
    pi0 = emn_xmalloc((size_t)ns * sizeof(double) + 1);
    Fs0 = emn_xmalloc((size_t)ns * sizeof(double) + 1);
    if (ns) {
        memcpy(pi0, S.pi, (size_t)ns * sizeof(double));
        memcpy(Fs0, S.Fs, (size_t)ns * sizeof(double));
        pidot0 = start_rates(&S, pi0, Fs0);
    }

    interrupted = 0;
    struct sigaction sa = {0}, old_sa;
    sa.sa_handler = on_sigint;
    sigaction(SIGINT, &sa, &old_sa);

    double tstep = c->tstep, tstart = c->tstart, tstop = c->tstop;
    long k = 0;
    double tnext = tstart;
    double last_progress = emn_now();
    bool first = true;
    while (it->t < tstop * (1 - 1e-12)) {
        if (interrupted) {
            emn_diag_error(d, EMN_NOLOC, "interrupted at t = %.9g s", it->t);
            status = EMN_EXIT_FAILED;
            break;
        }
        rc = emn_integ_step(it, tstop);
        if (rc < 0) {
            integ_error(&S, d, it->z[0]);
            status = EMN_EXIT_FAILED;
            break;
        }
        update_duals(&S, it->z[0], it->w[0], false);
        long nacc = it->st.steps;
        bool at_end = it->t >= tstop * (1 - 1e-12);
        if (first && nacc == 1 && !at_end) {
            /* hold t1 until the second step: the start's momentum rates
             * come from the parabola through the first three points */
            compute_signals(&S, it->z[0], it->w[0], v1);
            continue;
        }
        if (first) {
            first = false;
            int i0 = nacc >= 2 ? 2 : 1;         /* history slot of t = 0 */
            double t0 = it->tpast[i0];
            double *save = emn_xmalloc(3 * (size_t)ns * sizeof(double) + 1);
            if (ns) {
                memcpy(save, S.pi, (size_t)ns * sizeof(double));
                memcpy(save + ns, S.pidot, (size_t)ns * sizeof(double));
                memcpy(save + 2 * ns, S.Fs, (size_t)ns * sizeof(double));
            }
            if (pidot0) {
                for (int k = 0; k < S.ndsl; k++) S.pidot[S.dsl[k]] = pidot0[S.dsl[k]];
            } else if (nacc >= 2) {
                double h1 = it->tpast[1] - t0, h2 = it->tpast[0] - it->tpast[1];
                double c0 = -(2 * h1 + h2) / (h1 * (h1 + h2)), c1 = (h1 + h2) / (h1 * h2),
                       c2 = -h1 / (h2 * (h1 + h2));
                for (int k = 0; k < S.ndsl; k++) {
                    int sl = S.dsl[k];
                    S.pidot[sl] = c0 * S.pi2[sl] + c1 * S.pi1[sl] + c2 * S.pi[sl];
                }
            }
            if (ns) {
                memcpy(S.pi, pi0, (size_t)ns * sizeof(double));
                memcpy(S.Fs, Fs0, (size_t)ns * sizeof(double));
            }
            emn_integ_form_at(it, i0);
            compute_signals(&S, it->z[i0], it->w[i0], S.val[0]);
            S.tval[0] = t0;
            S.nval = 1;
            integrate_energy(&S);
            if (tnext <= t0 * (1 + 1e-12) + 1e-300) {
                write_row(&S, &W, res, keep, tnext, S.val[0]);
                k++;
                tnext = next_output(tstart, tstep, k, tstop, tnext);
            }
            if (ns) {
                memcpy(S.pi, save, (size_t)ns * sizeof(double));
                memcpy(S.pidot, save + ns, (size_t)ns * sizeof(double));
                memcpy(S.Fs, save + 2 * ns, (size_t)ns * sizeof(double));
            }
            free(save);
            if (nacc >= 2) {                    /* then the held t1 */
                shift_values(&S, it->tpast[1]);
                memcpy(S.val[0], v1, (size_t)S.nsig * sizeof(double));
                integrate_energy(&S);
                S.order_last = 1;
                emit_points(&S, &W, res, keep, &tnext, &k, tstep, tstart, tstop, buf);
            }
            emn_integ_form_at(it, 0);
        }
        shift_values(&S, it->t);
        compute_signals(&S, it->z[0], it->w[0], S.val[0]);
        integrate_energy(&S);
        S.order_last = it->order;
        if (check_values(&S, it->t, d) < 0) {
            status = EMN_EXIT_FAILED;
            break;
        }
        emit_points(&S, &W, res, keep, &tnext, &k, tstep, tstart, tstop, buf);
        if (o->progress && !o->quiet) {
            double now = emn_now();
            if (now - t_begin > 1 && now - last_progress > 0.25) {
                last_progress = now;
                fprintf(stderr, "\r%5.1f%%  t = %-12.6g steps %ld  rejected %ld", 100 * it->t / tstop, it->t,
                        it->st.steps, it->st.rejected);
                fflush(stderr);
            }
        }
    }
    sigaction(SIGINT, &old_sa, NULL);
    if (o->progress && !o->quiet && emn_now() - t_begin > 1) fprintf(stderr, "\r%60s\r", "");

done:
    if (W.table && emn_out_close(&W.table) < 0) status = EMN_EXIT_FAILED;
    if (W.raw && emn_out_close(&W.raw) < 0) {
        emn_diag_error(d, EMN_NOLOC, "error writing '%s'", o->raw_path);
        status = EMN_EXIT_FAILED;
    }
    if (W.csv && emn_out_close(&W.csv) < 0) {
        emn_diag_error(d, EMN_NOLOC, "error writing '%s'", o->csv_path);
        status = EMN_EXIT_FAILED;
    }
    if (it) {
        res->st = it->st;
        emn_integ_lu_stats(it, &res->lu_factors, &res->lu_refactors);
    }
    res->seconds = emn_now() - t_begin;
    free(wop);
    free(pi0);
    free(Fs0);
    free(pidot0);
    free(z0);
    free(p0);
    free(buf);
    free(v1);
    emn_integ_free(&it);
    sim_free(&S);
    emn_form_free(&f);
    return status;
}

void emn_sim_result_free(emn_sim_result *r)
{
    for (int k = 0; k < r->nsig; k++) free(r->names[k]);
    free(r->names);
    free(r->units);
    free(r->rows);
    memset(r, 0, sizeof *r);
}

int emn_sim_compare(const emn_circuit *c, const emn_sim_opts *o, emn_diag *d, FILE *out)
{
    emn_sim_result r[2];
    emn_sim_opts oo = *o;
    int status = EMN_EXIT_OK;
    emn_form_kind kinds[2] = {EMN_FORM_CHARGE, EMN_FORM_FLUX};
    for (int i = 0; i < 2; i++) {
        oo.form = kinds[i];
        int rc = emn_sim_tran(c, &oo, d, true, &r[i]);
        if (rc != EMN_EXIT_OK) {
            if (i == 1) emn_sim_result_free(&r[0]);
            emn_sim_result_free(&r[i]);
            return rc;
        }
    }
    int m = 1 + r[0].nsig;
    int rows = r[0].nrow < r[1].nrow ? r[0].nrow : r[1].nrow;
    if (r[0].nrow != r[1].nrow) status = EMN_EXIT_DISAGREE;
    fprintf(out, "signal max_abs_diff rel_diff\n");
    /* Each signal's peak over both runs, and each kind's (volts, amperes,
     * ...) largest.  A signal that stays below reltol of the largest of
     * its kind in both runs is zero to their tolerances (a dangling
     * inductor's current, 1e-11 A where 1 A flows, is a difference of
     * two fluxes in the flux formulation, each good to reltol): its line
     * is printed, but no difference of it is a disagreement; so is one
     * below the absolute tolerance of its kind (ABSTOL, VNTOL, CHGTOL),
     * the one current of a deck, say. */
    double *peak = emn_xcalloc((size_t)r[0].nsig + 1, sizeof(double));
    double zero_below[EMN_UNIT_ENERGY + 1] = {0};     /* each kind's peak, then its level of zero */
    for (int q = 0; q < r[0].nsig; q++) {
        for (int k = 0; k < rows; k++)
            for (int i = 0; i < 2; i++) peak[q] = fmax(peak[q], fabs(r[i].rows[(size_t)k * (size_t)m + 1 + (size_t)q]));
        zero_below[r[0].units[q]] = fmax(zero_below[r[0].units[q]], peak[q]);
    }
    /* A velocity that over the whole run would move its node by less than
     * the largest displacement printed is zero to reltol of it (a mass at
     * rest at its operating point: 1e-20 m/s in one formulation, 7e-20 in
     * the other, each its kind's largest) */
    if (c->tstop > c->tstart)
        zero_below[EMN_UNIT_VELOCITY] = fmax(zero_below[EMN_UNIT_VELOCITY],
                                             zero_below[EMN_UNIT_DISTANCE] / (c->tstop - c->tstart));
    for (int u = 0; u <= EMN_UNIT_ENERGY; u++) zero_below[u] *= c->opt.reltol;
    zero_below[EMN_UNIT_CURRENT] = fmax(zero_below[EMN_UNIT_CURRENT], c->opt.abstol);
    zero_below[EMN_UNIT_VOLTAGE] = fmax(zero_below[EMN_UNIT_VOLTAGE], c->opt.vntol);
    zero_below[EMN_UNIT_CHARGE] = fmax(zero_below[EMN_UNIT_CHARGE], c->opt.chgtol);
    for (int q = 0; q < r[0].nsig; q++) {
        double dmax = 0;
        for (int k = 0; k < rows; k++) {
            double a = r[0].rows[(size_t)k * (size_t)m + 1 + (size_t)q], b = r[1].rows[(size_t)k * (size_t)m + 1 + (size_t)q];
            double dd = fabs(a - b);
            if (!(dd <= dmax)) dmax = dd;      /* NaN counts as a disagreement */
        }
        double rel = peak[q] > 0 ? dmax / peak[q] : (dmax > 0 ? INFINITY : 0);
        fprintf(out, "%s %.3e %.3e\n", r[0].names[q], dmax, rel);
        bool zero = peak[q] < zero_below[r[0].units[q]];
        if (!(rel <= o->cmptol) && !zero) status = EMN_EXIT_DISAGREE;
    }
    free(peak);
    for (int i = 0; i < 2; i++)
        fprintf(out, "# %s: %d coordinates (%d electrical, %d mechanical), %ld steps, %ld rejected, "
                "%ld Newton iterations, %ld LU factorizations, %.6f s\n", form_name(kinds[i]), r[i].n, r[i].ne,
                r[i].nm, r[i].st.steps, r[i].st.rejected, r[i].st.newton, r[i].lu_factors + r[i].lu_refactors,
                r[i].seconds);
    emn_sim_result_free(&r[0]);
    emn_sim_result_free(&r[1]);
    return status;
}
