/*
 * form.c: building the charge and flux-linkage formulations, and evaluating
 * momenta, forces and the Newton matrix (see form.h for the model).
 *
 * Set-up runs in four passes: sources are numbered; the electrical graph is
 * checked (current-source cutsets, loops of voltage sources and coils) and
 * each branch is mapped to coordinates (fundamental loops, or node groups
 * with their offsets); mechanical nodes get coordinates and linkage
 * expressions; every element becomes a term whose L, D and P are built by
 * elem.c and differentiated here.  Terms with the same shape share one
 * template (a resistor is a resistor), so a million-element grid costs a
 * handful of symbolic derivatives.
 */
#include "config.h"
#include "form.h"
#include "elem.h"
#include "par.h"
#include "topo.h"
#include "util.h"
#include "wave.h"

#include <assert.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A term's expressions and derivatives over local variables
 *   v_0..v_{m-1}, u_0..u_{m-1}, k_0..k_3. */
struct emn_tmpl {
    int m;
    const emn_expr *L, *D, *P;
    const emn_expr **p, **F;          /* m each */
    const emn_expr **pv, **pu, **Fv, **Fu;  /* m*m each, row a (equation), col b */
    emn_tape **tpv, **tpu, **tFv, **tFu;     /* the second derivatives (emn_form_derivatives) */
    /* m*m, symmetric: whether slots a and b can meet in the Newton matrix,
     * some second derivative of (a, b) or (b, a) not identically 0; a
     * voltage source's loops meet in none (its force is a time part) */
    bool *meet;
    /* one program for the 2m momenta and forces (p first), one for the
     * m*m Newton-matrix entries a pu + pv - Fu - Fv/a, with a and 1/a as
     * locals 2m + NPARAM and 2m + NPARAM + 1 */
    emn_prog *pPF, *pJ;
    /* a C(x)'s or L(x)'s own value in the locals, and its program (pV
     * NULL when the term has no such value: emn_form_values) */
    const emn_expr *V;
    emn_prog *pV;
    bool linear;
    bool *reads;        /* m: whether L, D or P depends on slot a's value */
};

#define NPARAM 4

/* A term before it has a template: which branches, mechanical nodes and
 * source it reads, in slot order. */
typedef struct term_desc {
    int elem;
    int nbr, br[64];        /* electrical branch elements */
    int nmech, mech[64];    /* free mechanical nodes */
    int src;                /* source index or -1 */
} term_desc;

/* How a term's quantities are written: as local variables (numerics) or
 * as global coordinates with element names (printing). */
typedef struct mapping {
    bool print;
    const emn_expr *slot_v[130], *slot_u[130];
    int mech_v[64], mech_u[64]; /* variable numbers standing for x and u of mech[k] */
    const emn_expr *param[NPARAM];
} mapping;

/* ------------------------------------------------------------ helpers */

static int add_slot(emn_form *f, emn_lmap m)
{
    EMN_PUSH(f->slots, m);
    return f->slots.n - 1;
}

/* Expressions by node or element, most of them NULL: the array is made
 * when the first one is set (a grid, with no mechanical part, has none). */
static const emn_expr *ex_at(const emn_expr *const *a, int i)
{
    return a ? a[i] : NULL;
}

static const emn_expr *ex_set(const emn_expr ***a, int n, int i, const emn_expr *e)
{
    if (!e && !*a) return NULL;
    if (!*a) *a = emn_xcalloc((size_t)n + 1, sizeof(emn_expr *));
    return (*a)[i] = e;
}

/* Sparse accumulator for building linear maps: its first few entries
 * in place, more on the heap.  A node's or a branch's map has one or
 * two, and a grid has 10^5 to 10^6 of them: two mallocs and two frees
 * each cost more than the sums. */
#define ACC_NEAR 4
typedef struct acc {
    int n, cap;                 /* cap 0: the entries are in ni, nx */
    int *hi;
    double *hx;
    int ni[ACC_NEAR];
    double nx[ACC_NEAR];
} acc;

static inline int *acc_i(acc *a) { return a->cap ? a->hi : a->ni; }
static inline double *acc_x(acc *a) { return a->cap ? a->hx : a->nx; }

static void acc_add(acc *a, int i, double x)
{
    int *ai = acc_i(a);
    double *ax = acc_x(a);
    for (int k = 0; k < a->n; k++)
        if (ai[k] == i) { ax[k] += x; return; }
    if (a->n == (a->cap ? a->cap : ACC_NEAR)) {
        int cap = 2 * a->n;
        int *hi = emn_xmalloc((size_t)cap * sizeof *hi);
        double *hx = emn_xmalloc((size_t)cap * sizeof *hx);
        memcpy(hi, ai, (size_t)a->n * sizeof *hi);
        memcpy(hx, ax, (size_t)a->n * sizeof *hx);
        if (a->cap) {
            free(a->hi);
            free(a->hx);
        }
        a->hi = ai = hi;
        a->hx = ax = hx;
        a->cap = cap;
    }
    ai[a->n] = i;
    ax[a->n++] = x;
}

/* Room for a linear map of up to nc coordinates and nd sources, in one
 * piece of the formulation's arena: a grid has a map per branch and per
 * node, 10^5 to 10^6 of them, and four mallocs each cost more in
 * bookkeeping than the few numbers they hold. */
static void lmap_alloc(emn_arena *ar, emn_lmap *m, int nc, int nd)
{
    m->c = emn_arena_alloc_aligned(ar, (size_t)(nc + nd) * (sizeof(double) + sizeof(int)), sizeof(double));
    m->nc = nc;
    m->nd = nd;
}

static int nonzeros(acc *a)
{
    int n = 0;
    for (int k = 0; a && k < a->n; k++) n += acc_x(a)[k] != 0;
    return n;
}

static void acc_to_map(emn_arena *ar, acc *ac, acc *ad, emn_lmap *m)
{
    lmap_alloc(ar, m, nonzeros(ac), nonzeros(ad));
    double *c = m->c, *d = emn_lmap_d(m);
    int *ci = emn_lmap_ci(m), *di = emn_lmap_di(m), nc = 0, nd = 0;
    for (int k = 0; ac && k < ac->n; k++)
        if (acc_x(ac)[k] != 0) { ci[nc] = acc_i(ac)[k]; c[nc++] = acc_x(ac)[k]; }
    for (int k = 0; ad && k < ad->n; k++)
        if (acc_x(ad)[k] != 0) { di[nd] = acc_i(ad)[k]; d[nd++] = acc_x(ad)[k]; }
}

static void acc_free(acc *a)
{
    if (a->cap) {
        free(a->hi);
        free(a->hx);
    }
    a->hi = NULL;
    a->hx = NULL;
    a->n = a->cap = 0;
}

/* A linear map from its coordinate and source accumulators, which it frees. */
static void acc_take(emn_arena *ar, acc *ac, acc *ad, emn_lmap *m)
{
    acc_to_map(ar, ac, ad, m);
    acc_free(ac);
    acc_free(ad);
}

static bool is_branch(const emn_elem *e)
{
    switch (e->kind) {
    case EMN_R: case EMN_C: case EMN_L: case EMN_V: case EMN_I: case EMN_T: return true;
    default: return false;
    }
}

static bool is_source(const emn_elem *e)
{
    return e->kind == EMN_V || e->kind == EMN_I || e->kind == EMN_F;
}

/* ------------------------------------------------- electrical topology */

typedef struct egraph {
    emn_graph g;
    int *from, *to, *rank, *elem;     /* per branch */
    int *elem_branch;                 /* element -> branch or -1 */
} egraph;

/* Tree preference (topo.c grows a minimum spanning forest by rank):
 * sources and coils, then capacitors, then inductors that lie in a part
 * joined by inductors, sources and coils alone with a loop in it, then
 * resistors, then the other inductors; current sources never.  A link's
 * loop runs through tree branches of its rank or lower, so:
 *   - a capacitor link's loop holds only capacitors and sources: a loop
 *     with neither inertia nor damping is one coordinate (its value the
 *     constraint sets), never the difference of two loops through a
 *     resistor or an inductor, whose velocity would ring undamped under
 *     the trapezoidal rule (parallel capacitors fed through a resistor)
 *     or whose pivot at a short step falls below the rounding of an
 *     inductance (parallel capacitors across an inductor);
 *   - a resistor link's loop holds no inductor outside such a part: a
 *     loop without inertia is one coordinate, and node voltages along
 *     the tree are read from charges and currents, not differentiated
 *     from an inductor's flux;
 *   - an inductor loop (two inductors in parallel) is one coordinate,
 *     whose flux the operating point keeps. */
enum { RANK_LLOOP = 3, RANK_L = 5 };

static int charge_rank(emn_kind k)
{
    switch (k) {
    case EMN_V: return 0;
    case EMN_T: return 1;
    case EMN_C: return 2;
    case EMN_R: return 4;
    case EMN_L: return RANK_L;
    default: return -1;
    }
}

/* Inductors in a part of the graph of inductors, voltage sources and
 * coils (branches lvt[0 .. n), inductors among them) that has a loop (as
 * many branches as nodes or more) move up to RANK_LLOOP. */
static void rank_inductor_loops(const emn_circuit *c, egraph *eg, const int *lvt, int n)
{
    emn_dsu u;
    emn_dsu_init(&u, c->nodes.n);
    int *edges = emn_xcalloc((size_t)c->nodes.n + 1, sizeof(int));
    for (int k = 0; k < n; k++) emn_dsu_union(&u, eg->from[lvt[k]], eg->to[lvt[k]]);
    for (int k = 0; k < n; k++) edges[emn_dsu_find(&u, eg->from[lvt[k]])]++;
    for (int k = 0; k < n; k++) {
        int b = lvt[k], r = emn_dsu_find(&u, eg->from[b]);
        if (eg->rank[b] == RANK_L && edges[r] >= u.size[r]) eg->rank[b] = RANK_LLOOP;
    }
    free(edges);
    emn_dsu_free(&u);
}

/* The electrical graph; with `loops`, inductor loops ranked apart
 * (rank_inductor_loops), which shapes the tree but not what is counted. */
static void egraph_build(const emn_circuit *c, egraph *eg, bool loops)
{
    int nb = 0;
    eg->elem_branch = emn_xmalloc((size_t)c->elems.n * sizeof(int) + 1);
    for (int i = 0; i < c->elems.n; i++) eg->elem_branch[i] = is_branch(&c->elems.v[i]) ? nb++ : -1;
    eg->from = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    eg->to = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    eg->rank = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    eg->elem = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    int *lvt = emn_xmalloc((size_t)nb * sizeof(int) + 1), nlvt = 0, nl = 0;
    for (int i = 0; i < c->elems.n; i++) {
        int b = eg->elem_branch[i];
        if (b < 0) continue;
        emn_kind k = c->elems.v[i].kind;
        eg->from[b] = c->elems.v[i].node[0];
        eg->to[b] = c->elems.v[i].node[1];
        eg->rank[b] = charge_rank(k);
        eg->elem[b] = i;
        if (k == EMN_L || k == EMN_V || k == EMN_T) lvt[nlvt++] = b;
        nl += k == EMN_L;
    }
    if (loops && nl > 0) rank_inductor_loops(c, eg, lvt, nlvt);
    free(lvt);
    eg->g = (emn_graph){c->nodes.n, nb, eg->from, eg->to, eg->rank};
}

static void egraph_free(egraph *eg)
{
    free(eg->from);
    free(eg->to);
    free(eg->rank);
    free(eg->elem);
    free(eg->elem_branch);
}

/* Element names joined for messages: "i1, i2 and i3". */
static char *name_list(const emn_circuit *c, const int *elems, int n)
{
    emn_buf b = {0};
    emn_buf_puts(&b, "");
    for (int k = 0; k < n; k++) {
        if (k) emn_buf_puts(&b, k == n - 1 ? " and " : ", ");
        emn_buf_puts(&b, c->elems.v[elems[k]].name);
    }
    return b.v;
}

/* Current sources whose ends the other branches do not connect form a
 * cutset: KCL would fix the sum of their currents. */
static int check_cutsets(const emn_circuit *c, const egraph *eg, const emn_forest *f, emn_diag *d)
{
    struct { int *v; int n, cap; } bad = {0};
    for (int b = 0; b < eg->g.nbranches; b++)
        if (eg->rank[b] < 0 && f->root[eg->from[b]] != f->root[eg->to[b]])
            EMN_PUSH(bad, eg->elem[b]);
    if (bad.n) {
        char *names = name_list(c, bad.v, bad.n);
        const emn_elem *e = &c->elems.v[bad.v[0]];
        emn_diag_error(d, e->loc, "current source%s %s form%s a cutset: no other element connects "
                       "node '%s' to node '%s', so Kirchhoff's current law fixes their current",
                       bad.n > 1 ? "s" : "", names, bad.n > 1 ? "" : "s",
                       c->nodes.v[e->node[0]].name, c->nodes.v[e->node[1]].name);
        free(names);
    }
    free(bad.v);
    return bad.n ? -1 : 0;
}

/* Voltage sources and coils fix the flux of their branch; a loop of them
 * over-determines it.  (Where a coil is in the loop, the sources would
 * set its velocity instead, a constraint on the mechanism that the
 * formulations do not take.) */
static int check_vloops(const emn_circuit *c, const egraph *eg, emn_diag *d)
{
    int nb = eg->g.nbranches;
    int *rank = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    emn_dsu u;
    emn_dsu_init(&u, c->nodes.n);
    int status = 0;
    for (int b = 0; b < nb; b++) rank[b] = -1;
    for (int b = 0; b < nb; b++) {
        emn_kind k = c->elems.v[eg->elem[b]].kind;
        if (k != EMN_V && k != EMN_T) continue;
        if (!emn_dsu_union(&u, eg->from[b], eg->to[b])) {
            /* find the loop: the constraint branches accepted so far form a
             * forest; the path between b's ends closes it */
            emn_graph g = eg->g;
            g.rank = rank;
            emn_forest f;
            emn_topo_forest(&g, &f);
            int *br = emn_xmalloc((size_t)(c->nodes.n + 2) * sizeof(int));
            int *sg = emn_xmalloc((size_t)(c->nodes.n + 2) * sizeof(int));
            int len = emn_topo_path(&g, &f, eg->from[b], eg->to[b], br, sg);
            int *el = emn_xmalloc((size_t)(len + 2) * sizeof(int));
            for (int k2 = 0; k2 < len; k2++) el[k2] = eg->elem[br[k2]];
            el[len > 0 ? len : 0] = eg->elem[b];
            char *names = name_list(c, el, (len > 0 ? len : 0) + 1);
            bool coil = false;
            for (int k2 = 0; k2 <= (len > 0 ? len : 0); k2++) coil = coil || c->elems.v[el[k2]].kind == EMN_T;
            if (coil)
                emn_diag_error(d, c->elems.v[eg->elem[b]].loc,
                               "voltage sources and coils %s form a loop: the sources would set the coils' "
                               "velocities, which emnet does not take (put the coil's resistance or "
                               "inductance in series with it)", names);
            else
                emn_diag_error(d, c->elems.v[eg->elem[b]].loc,
                               "voltage sources and coils %s form a loop: their voltages over-determine it",
                               names);
            free(names);
            free(el);
            free(br);
            free(sg);
            emn_topo_forest_free(&f);
            status = -1;
            continue;
        }
        rank[b] = 0;
    }
    emn_dsu_free(&u);
    free(rank);
    return status;
}

/* Keep a forest for signal reconstruction: parents, branch elements, and
 * the nodes ordered by depth. */
static void save_forest(emn_form *f, const egraph *eg, const emn_forest *fr)
{
    int nn = f->c->nodes.n;
    f->tparent = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    f->telem = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    f->torder = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    int maxd = 0, k = 0;
    for (int v = 0; v < nn; v++) {
        f->tparent[v] = fr->parent[v];
        f->telem[v] = fr->parent_branch[v] >= 0 ? eg->elem[fr->parent_branch[v]] : -1;
        if (fr->depth[v] > maxd) maxd = fr->depth[v];
    }
    int *count = emn_xcalloc((size_t)maxd + 2, sizeof(int));
    for (int v = 0; v < nn; v++) count[fr->depth[v] + 1]++;
    for (int dd = 0; dd <= maxd; dd++) count[dd + 1] += count[dd];
    for (int v = 0; v < nn; v++) f->torder[count[fr->depth[v]]++] = v;
    (void)k;
    free(count);
}

typedef struct { emn_coord *v; int n, cap; } coordvec;

/* ----------------------------------------------------- charge formulation */

static void build_charge(emn_form *f, const egraph *eg, const emn_forest *fr)
{
    const emn_circuit *c = f->c;
    int nb = eg->g.nbranches;
    emn_lmap *m = emn_xcalloc((size_t)nb + 1, sizeof *m);
    int *placed = emn_xcalloc((size_t)nb + 1, 2 * sizeof(int));    /* per branch: coordinates, sources */
    int *br = emn_xmalloc((size_t)(c->nodes.n + 2) * sizeof(int));
    int *sg = emn_xmalloc((size_t)(c->nodes.n + 2) * sizeof(int));
    coordvec coords = {0};
    /* Each branch's map holds the loops through it.  A loop passes a
     * branch once and each coordinate and source has one loop, so nothing
     * merges: one pass over the loops counts each branch's entries, a
     * second places them, in the order of the loops (a grid's charge
     * formulation has 10^6 of them, so no growing lists). */
    for (int pass = 0; pass < 2; pass++) {
        for (int b = 0; b < nb; b++) {
            if (fr->in_tree[b]) continue;
            int e = eg->elem[b];
            int len = emn_topo_loop(&eg->g, fr, b, br, sg);
            bool src = eg->rank[b] < 0;      /* current source: prescribed loop charge */
            int id = src ? f->elem_src[e] : coords.n;
            if (pass && !src) EMN_PUSH(coords, ((emn_coord){EMN_COORD_LOOP, -1, e}));
            for (int k = 0; k < len; k++) {
                emn_lmap *mb = &m[br[k]];
                if (!pass) {
                    *(src ? &mb->nd : &mb->nc) += 1;
                } else if (src) {
                    int q = placed[2 * br[k] + 1]++;
                    emn_lmap_di(mb)[q] = id;
                    emn_lmap_d(mb)[q] = sg[k];
                } else {
                    int q = placed[2 * br[k]]++;
                    emn_lmap_ci(mb)[q] = id;
                    mb->c[q] = sg[k];
                }
            }
        }
        if (!pass)
            for (int b = 0; b < nb; b++) lmap_alloc(f->ar, &m[b], m[b].nc, m[b].nd);
    }
    for (int b = 0; b < nb; b++) f->elem_branch_slot[eg->elem[b]] = add_slot(f, m[b]);
    free(m);
    free(placed);
    free(br);
    free(sg);
    f->ne = f->nloops = coords.n;
    f->coord = coords.v;
    save_forest(f, eg, fr);
}

/* ------------------------------------------------------- flux formulation */

/* Branches that carry no current: a resistor, or an uncoupled constant
 * inductor with no IC=, that ends in a node no other branch meets, and
 * then the next one along if that leaves its other node so (a winding
 * left open, a probe resistor to nowhere).  dead[b] set for those; the
 * flux formulation gives both nodes of each one flux linkage, as a 0 V
 * source would, and it has no term.  Its linkages were two coordinates
 * that only it joined, and with no current a node with no capacitance
 * had a velocity that nothing but the trapezoidal rule's own history
 * set: it alternated, and after a corner the error test cut the step to
 * nothing (random circuit d25: a 100 uH inductor to a node with only a
 * 10 kohm resistor to an open end). */
static void dead_ends(const emn_circuit *c, const egraph *eg, bool *dead)
{
    int nn = c->nodes.n, nb = eg->g.nbranches;
    int *deg = emn_xcalloc((size_t)nn + 1, sizeof(int)), *queue = emn_xmalloc(((size_t)nn + 1) * sizeof(int));
    bool *coupled = emn_xcalloc((size_t)c->elems.n + 1, sizeof(bool));
    for (int k = 0; k < c->elems.n; k++)
        if (c->elems.v[k].kind == EMN_K) coupled[c->elems.v[k].ind[0]] = coupled[c->elems.v[k].ind[1]] = true;
    for (int b = 0; b < nb; b++) {
        dead[b] = false;
        deg[eg->from[b]]++;
        deg[eg->to[b]]++;
    }
    /* each node's branches (CSR), to find a dead end's one branch left
     * without a pass over all of them */
    int *ap = emn_xcalloc((size_t)nn + 2, sizeof(int)), *ab = emn_xmalloc(2 * ((size_t)nb + 1) * sizeof(int));
    for (int v = 0; v < nn; v++) ap[v + 1] = ap[v] + deg[v];
    int *at = emn_xmalloc(((size_t)nn + 1) * sizeof(int));
    memcpy(at, ap, (size_t)nn * sizeof(int));
    for (int b = 0; b < nb; b++) {
        ab[at[eg->from[b]]++] = b;
        ab[at[eg->to[b]]++] = b;
    }
    free(at);
    int nq = 0;
    for (int v = 1; v < nn; v++)
        if (deg[v] == 1 && c->nodes.v[v].dom == EMN_DOM_ELEC) queue[nq++] = v;
    for (int q = 0; q < nq; q++) {
        int v = queue[q], b = -1;
        for (int k = ap[v]; k < ap[v + 1] && b < 0; k++)       /* its one branch left */
            if (!dead[ab[k]]) b = ab[k];
        if (b < 0) continue;
        const emn_elem *e = &c->elems.v[eg->elem[b]];
        bool zero = e->kind == EMN_R || (e->kind == EMN_L && !coupled[eg->elem[b]] && !e->vexpr && !e->has_ic);
        if (!zero || eg->from[b] == eg->to[b]) continue;
        dead[b] = true;
        int o = eg->from[b] == v ? eg->to[b] : eg->from[b];
        if (--deg[o] == 1 && o != 0) queue[nq++] = o;
    }
    free(deg);
    free(queue);
    free(coupled);
    free(ap);
    free(ab);
}

/* The constraint forest of the flux formulation (voltage sources and
 * coils, grown from ground) in *cf, and each group's coordinate in
 * group_coord[root] (-1: ground or a datum, no coordinate; others
 * numbered from 0); returns the number of coordinates.  With coords, each
 * coordinate's description is pushed; with d, a floating part's datum is
 * announced. */
static int flux_groups(const emn_circuit *c, const egraph *eg, const emn_forest *fr, int *rank,
                       emn_forest *cf, int *group_coord, coordvec *coords, emn_diag *d)
{
    int nn = c->nodes.n, nb = eg->g.nbranches;
    bool *dead = emn_xmalloc((size_t)nb + 1);
    dead_ends(c, eg, dead);
    for (int b = 0; b < nb; b++) {
        emn_kind k = c->elems.v[eg->elem[b]].kind;
        rank[b] = (k == EMN_V || k == EMN_T || dead[b]) ? 0 : -1;
    }
    free(dead);
    emn_graph g = eg->g;
    g.rank = rank;
    emn_topo_forest(&g, cf);

    /* datum nodes: the root of every part of the (non current source)
     * forest that ground does not reach */
    bool *datum = emn_xcalloc((size_t)nn + 1, sizeof(bool));
    datum[0] = true;
    for (int v = 1; v < nn; v++) {
        if (c->nodes.v[v].dom != EMN_DOM_ELEC || fr->root[v] != v) continue;
        datum[v] = true;
        if (d)
            emn_diag_warning(d, c->nodes.v[v].loc,
                             "no element connects node '%s' and its part of the circuit to ground; "
                             "node '%s' is taken as that part's reference", c->nodes.v[v].name,
                             c->nodes.v[v].name);
    }
    /* the constraint tree's root node decides: ground/datum -> no coordinate */
    for (int v = 0; v < nn; v++) {
        group_coord[v] = -1;
        if (c->nodes.v[v].dom != EMN_DOM_ELEC && v != 0) continue;
        if (cf->root[v] != v) continue;
        group_coord[v] = -2;
    }
    /* a datum anywhere in the group removes its coordinate */
    for (int v = 0; v < nn; v++)
        if (datum[v]) group_coord[cf->root[v]] = -1;
    int count = 0;
    for (int v = 0; v < nn; v++)
        if (group_coord[v] == -2) {
            group_coord[v] = count++;
            if (coords)
                EMN_PUSH(*coords, ((emn_coord){EMN_COORD_NODE, v, -1}));
        }
    free(datum);
    return count;
}

static int build_flux(emn_form *f, const egraph *eg, const emn_forest *fr, emn_diag *d)
{
    const emn_circuit *c = f->c;
    emn_arena *ar = f->ar;
    int nn = c->nodes.n, nb = eg->g.nbranches;
    /* the forest of constraint branches (V and coils), grown from ground */
    int *rank = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    int *group_coord = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    coordvec coords = {0};
    emn_forest cf;
    flux_groups(c, eg, fr, rank, &cf, group_coord, &coords, d);

    /* node maps, parents before children (BFS order by depth) */
    f->elem_dead = emn_arena_alloc(ar, (size_t)c->elems.n + 1);
    f->node_map = emn_xcalloc((size_t)nn + 1, sizeof(emn_lmap));
    int *order = emn_xmalloc((size_t)nn * sizeof(int) + 1), no = nn;
    int maxdepth = 0;
    for (int v = 0; v < nn; v++) if (cf.depth[v] > maxdepth) maxdepth = cf.depth[v];
    int *first = emn_xcalloc((size_t)maxdepth + 2, sizeof(int));      /* counting sort by depth */
    for (int v = 0; v < nn; v++) first[cf.depth[v] + 1]++;
    for (int dep = 0; dep <= maxdepth; dep++) first[dep + 1] += first[dep];
    for (int v = 0; v < nn; v++) order[first[cf.depth[v]]++] = v;
    free(first);
    acc *mc = emn_xcalloc((size_t)nn + 1, sizeof(acc)), *md = emn_xcalloc((size_t)nn + 1, sizeof(acc));
    for (int k = 0; k < no; k++) {
        int v = order[k];
        int b = cf.parent_branch[v];
        if (b < 0) {
            if (group_coord[v] >= 0) acc_add(&mc[v], group_coord[v], 1);     /* no coil offset */
        } else {
            int p = cf.parent[v];
            double sgn = eg->from[b] == v ? +1 : -1;   /* lambda(v) = lambda(p) +- Lambda_b */
            for (int q = 0; q < mc[p].n; q++) acc_add(&mc[v], acc_i(&mc[p])[q], acc_x(&mc[p])[q]);
            for (int q = 0; q < md[p].n; q++) acc_add(&md[v], acc_i(&md[p])[q], acc_x(&md[p])[q]);
            const emn_elem *e = &c->elems.v[eg->elem[b]];
            const emn_expr *mech = ex_at(f->node_mech, p), *mechp = ex_at(f->node_mech_p, p);
            if (e->kind == EMN_V) {
                acc_add(&md[v], f->elem_src[eg->elem[b]], sgn);
            } else if (e->kind != EMN_T) {      /* dead_ends: Lambda_b = 0 */
                f->elem_dead[eg->elem[b]] = true;
            } else {                    /* coil: Lambda_b = T (x(m+) - x(m-)) */
                const emn_expr *dx = emn_expr_sub(ar, emn_form_xnode(f, e->node[2]), emn_form_xnode(f, e->node[3]));
                const emn_expr *lam = emn_expr_mul(ar, emn_expr_num(ar, sgn * e->value), dx);
                /* the same with the coil named, for -lagrangian */
                const emn_expr *T = emn_expr_name(ar, e->name, EMN_NOLOC);
                const emn_expr *lamp = emn_expr_mul(ar, sgn > 0 ? T : emn_expr_neg(ar, T), dx);
                mech = mech ? emn_expr_add(ar, mech, lam) : lam;
                mechp = mechp ? emn_expr_add(ar, mechp, lamp) : lamp;
            }
            ex_set(&f->node_mech, nn, v, mech);
            ex_set(&f->node_mech_p, nn, v, mechp);
        }
    }
    for (int v = 0; v < nn; v++) acc_take(f->ar, &mc[v], &md[v], &f->node_map[v]);
    free(mc);
    free(md);
    free(order);
    free(group_coord);
    free(rank);
    save_forest(f, eg, &cf);
    emn_topo_forest_free(&cf);

    /* branch slots: Lambda_b = lambda(n+) - lambda(n-) */
    for (int b = 0; b < nb; b++) {
        int e = eg->elem[b];
        const emn_lmap *a = &f->node_map[eg->from[b]], *m = &f->node_map[eg->to[b]];
        acc ac = {0}, ad = {0};
        for (int q = 0; q < a->nc; q++) acc_add(&ac, emn_lmap_ci(a)[q], a->c[q]);
        for (int q = 0; q < m->nc; q++) acc_add(&ac, emn_lmap_ci(m)[q], -m->c[q]);
        for (int q = 0; q < a->nd; q++) acc_add(&ad, emn_lmap_di(a)[q], emn_lmap_d(a)[q]);
        for (int q = 0; q < m->nd; q++) acc_add(&ad, emn_lmap_di(m)[q], -emn_lmap_d(m)[q]);
        emn_lmap lm;
        acc_take(f->ar, &ac, &ad, &lm);
        f->elem_branch_slot[e] = add_slot(f, lm);
        int ne = c->elems.n;
        const emn_expr *ma = ex_at(f->node_mech, eg->from[b]), *mb = ex_at(f->node_mech, eg->to[b]);
        if (ma || mb)
            ex_set(&f->elem_branch_mech, ne, e, emn_expr_sub(ar, ma ? ma : emn_expr_num(ar, 0),
                                                            mb ? mb : emn_expr_num(ar, 0)));
        ma = ex_at(f->node_mech_p, eg->from[b]);
        mb = ex_at(f->node_mech_p, eg->to[b]);
        if (ma || mb)
            ex_set(&f->elem_branch_mech_p, ne, e, emn_expr_sub(ar, ma ? ma : emn_expr_num(ar, 0),
                                                              mb ? mb : emn_expr_num(ar, 0)));
    }
    f->ne = coords.n;
    f->coord = coords.v;
    return 0;
}

/* -------------------------------------------------------- mechanical part */

/* x(node) in variables of free nodes: linkages composed through chains. */
static const emn_expr *compose_leaf(void *ctx, const emn_expr *leaf);

typedef struct { emn_form *f; int depth; bool cycle; } compose_ctx;

static const emn_expr *xnode_of(compose_ctx *cc, int node)
{
    emn_form *f = cc->f;
    const emn_circuit *c = f->c;
    if (node == 0) return emn_expr_num(f->ar, 0);
    if (ex_at(f->xnode, node)) return f->xnode[node];
    int j = c->nodes.v[node].jdef;
    if (j < 0) return ex_set(&f->xnode, c->nodes.n, node, emn_expr_var(f->ar, node));
    if (++cc->depth > c->nodes.n + 1) {     /* the front end rejects cycles; stay safe */
        cc->cycle = true;
        return emn_expr_num(f->ar, 0);
    }
    const emn_expr *e = emn_expr_subst(f->ar, c->elems.v[j].vexpr, compose_leaf, cc);
    cc->depth--;
    return ex_set(&f->xnode, c->nodes.n, node, e);
}

static const emn_expr *compose_leaf(void *ctx, const emn_expr *leaf)
{
    compose_ctx *cc = ctx;
    if (leaf->op != EMN_EX_VAR || leaf->var == EMN_VAR_TIME) return NULL;
    return xnode_of(cc, leaf->var);
}

/* ------------------------------------------------------------ the terms */

/* Free mechanical nodes named by an expression in node variables. */
static void collect_mech(const emn_expr *e, term_desc *td)
{
    if (!e) return;
    switch (e->op) {
    case EMN_EX_VAR:
        if (e->var == EMN_VAR_TIME) return;
        for (int k = 0; k < td->nmech; k++) if (td->mech[k] == e->var) return;
        if (td->nmech < 64) td->mech[td->nmech++] = e->var;
        return;
    case EMN_EX_CALL:
        for (int k = 0; k < e->nargs; k++) collect_mech(e->args[k], td);
        return;
    default:
        collect_mech(e->a, td);
        collect_mech(e->b, td);
    }
}

/* node variable -> the mapping's variable for that free node's value */
typedef struct { emn_arena *ar; const mapping *mp; const term_desc *td; } vmap_ctx;
static const emn_expr *vmap_leaf(void *ctx, const emn_expr *leaf)
{
    vmap_ctx *mc = ctx;
    if (leaf->op != EMN_EX_VAR || leaf->var == EMN_VAR_TIME) return NULL;
    for (int k = 0; k < mc->td->nmech; k++)
        if (mc->td->mech[k] == leaf->var) return emn_expr_var(mc->ar, mc->mp->mech_v[k]);
    return emn_expr_num(mc->ar, 0);     /* ground */
}

static const emn_expr *to_mapping(emn_arena *ar, const mapping *mp, const term_desc *td,
                                  const emn_expr *e)
{
    vmap_ctx mc = {ar, mp, td};
    return emn_expr_subst(ar, e, vmap_leaf, &mc);
}

/* d/dt of an expression in the mapping's mechanical value variables. */
static const emn_expr *rate_of(emn_arena *ar, const mapping *mp, const term_desc *td,
                               const emn_expr *x)
{
    const emn_expr *r = emn_expr_num(ar, 0);
    for (int k = 0; k < td->nmech; k++) {
        const emn_expr *dx = emn_expr_diff(ar, x, mp->mech_v[k]);
        r = emn_expr_add(ar, r, emn_expr_mul(ar, dx, emn_expr_var(ar, mp->mech_u[k])));
    }
    return r;
}

/* An element's value as a function of free mechanical nodes only: x() of
 * a linkage-defined node replaced by its composed expression. */
static const emn_expr *value_of(const emn_form *f, int e)
{
    return ex_at(f->vexpr_c, e);
}

/* The flux a moving coil adds to a branch, with the coil's constant as a
 * number or (printing) by name. */
static const emn_expr *branch_mech(const emn_form *f, const mapping *mp, int e)
{
    return ex_at(mp->print ? f->elem_branch_mech_p : f->elem_branch_mech, e);
}

/* Build L, D, P of a term in the given mapping. */
static void term_exprs(emn_form *f, emn_arena *ar, const term_desc *td, const mapping *mp,
                       const emn_expr **L, const emn_expr **D, const emn_expr **P)
{
    const emn_circuit *c = f->c;
    const emn_elem *e = &c->elems.v[td->elem];
    emn_elem_io io = {0};
    io.ar = ar;
    io.form = f->kind;
    io.kind = e->kind;
    *L = *D = *P = NULL;
    if (e->kind == EMN_L && f->kind == EMN_FORM_FLUX && td->nbr > 1) {
        /* a group of inductors coupled by K */
        int n = td->nbr;
        const emn_expr **Lm = emn_xcalloc((size_t)(n * n), sizeof *Lm);
        const emn_expr **lam = emn_xcalloc((size_t)n, sizeof *lam);
        for (int i = 0; i < n; i++) {
            const emn_elem *li = &c->elems.v[td->br[i]];
            lam[i] = mp->slot_v[i];
            const emn_expr *bm = branch_mech(f, mp, td->br[i]);
            if (bm) lam[i] = emn_expr_add(ar, lam[i], to_mapping(ar, mp, td, bm));
            Lm[i * n + i] = li->vexpr ? to_mapping(ar, mp, td, value_of(f, td->br[i]))
                          : mp->print ? emn_expr_name(ar, li->name, EMN_NOLOC) : emn_expr_num(ar, li->value);
        }
        for (int k = 0; k < c->elems.n; k++) {
            const emn_elem *ke = &c->elems.v[k];
            if (ke->kind != EMN_K) continue;
            int a = -1, b = -1;
            for (int i = 0; i < n; i++) {
                if (td->br[i] == ke->ind[0]) a = i;
                if (td->br[i] == ke->ind[1]) b = i;
            }
            if (a < 0 || b < 0) continue;
            const emn_expr *kv = ke->vexpr ? to_mapping(ar, mp, td, value_of(f, k))
                               : mp->print ? emn_expr_name(ar, ke->name, EMN_NOLOC) : emn_expr_num(ar, ke->value);
            const emn_expr *M = emn_expr_mul(ar, kv, emn_expr_call(ar, EMN_FN_SQRT, 1,
                                (const emn_expr *[]){emn_expr_mul(ar, Lm[a * n + a], Lm[b * n + b])}, EMN_NOLOC));
            Lm[a * n + b] = Lm[b * n + a] = Lm[a * n + b] ? emn_expr_add(ar, Lm[a * n + b], M) : M;
        }
        for (int i = 0; i < n * n; i++) if (!Lm[i]) Lm[i] = emn_expr_num(ar, 0);
        *L = emn_elem_coupled_flux(ar, n, Lm, lam);
        free(Lm);
        free(lam);
        return;
    }
    if (td->nbr >= 1 && e->kind != EMN_K) {
        const emn_expr *mech = branch_mech(f, mp, td->elem);
        io.bv = mp->slot_v[0];
        io.br = mp->slot_u[0];
        if (mech) {
            const emn_expr *mm = to_mapping(ar, mp, td, mech);
            io.bv = emn_expr_add(ar, io.bv, mm);
            io.br = emn_expr_add(ar, io.br, rate_of(ar, mp, td, mm));
        }
    }
    int first_mech_term = e->kind == EMN_T ? 2 : 0;
    for (int k = first_mech_term; k < e->nnodes; k++) {
        const emn_expr *x = to_mapping(ar, mp, td, ex_at(f->xnode, e->node[k]) ? f->xnode[e->node[k]]
                                                                              : emn_expr_num(ar, 0));
        io.xv[k] = x;
        io.xr[k] = rate_of(ar, mp, td, x);
    }
    if (e->kind == EMN_M || e->kind == EMN_J) { io.xv[1] = io.xr[1] = emn_expr_num(ar, 0); }
    io.val = e->vexpr ? to_mapping(ar, mp, td, value_of(f, td->elem)) : mp->param[0];
    io.x0 = mp->param[1];
    if (td->src >= 0) io.sv = mp->slot_u[td->nbr + td->nmech];
    if (e->kind == EMN_K) {
        for (int i = 0; i < 2; i++) {
            const emn_elem *li = &c->elems.v[e->ind[i]];
            io.lval[i] = li->vexpr ? to_mapping(ar, mp, td, value_of(f, e->ind[i])) : mp->param[2 + i];
            io.lrate[i] = mp->slot_u[i];
        }
    }
    emn_elem_energy(&io);
    *L = io.L;
    *D = io.D;
    *P = io.P;
}

static int term_m(const term_desc *td) { return td->nbr + td->nmech + (td->src >= 0); }

/* Numeric mapping: slot a -> v_a = var a, u_a = var m+a, params var 2m+i. */
static void numeric_mapping(emn_arena *ar, const term_desc *td, mapping *mp)
{
    int m = term_m(td);
    memset(mp, 0, sizeof *mp);
    for (int a = 0; a < m; a++) {
        mp->slot_v[a] = emn_expr_var(ar, a);
        mp->slot_u[a] = emn_expr_var(ar, m + a);
    }
    for (int k = 0; k < td->nmech; k++) {
        mp->mech_v[k] = td->nbr + k;
        mp->mech_u[k] = m + td->nbr + k;
    }
    for (int i = 0; i < NPARAM; i++) mp->param[i] = emn_expr_var(ar, 2 * m + i);
}

void emn_form_term_params(const emn_form *f, const emn_term *tm, double *k, int stride)
{
    const emn_elem *e = &f->c->elems.v[tm->elem];
    bool K = e->kind == EMN_K;
    k[0] = e->value;
    k[stride] = e->kind == EMN_S ? e->x0 : 0;
    k[2 * stride] = K ? f->c->elems.v[e->ind[0]].value : 0;
    k[3 * stride] = K ? f->c->elems.v[e->ind[1]].value : 0;
}

static bool depends_on_state(const emn_expr *e, int m)
{
    for (int v = 0; v < 2 * m; v++)
        if (emn_expr_depends(e, v)) return true;
    return false;
}

static bool is_zero(const emn_expr *e)
{
    double z;
    return emn_expr_is_const(e, &z) && z == 0;
}

static emn_tmpl *make_template(emn_arena *ar, int m, const emn_expr *L, const emn_expr *D,
                               const emn_expr *P)
{
    emn_tmpl *t = emn_arena_alloc(ar, sizeof *t);
    const emn_expr *zero = emn_expr_num(ar, 0);
    t->m = m;
    t->L = L ? L : zero;
    t->D = D ? D : zero;
    t->P = P ? P : zero;
    t->p = emn_arena_alloc(ar, (size_t)m * sizeof(emn_expr *));
    t->F = emn_arena_alloc(ar, (size_t)m * sizeof(emn_expr *));
    size_t mm = (size_t)(m * m) * sizeof(emn_expr *);
    t->pv = emn_arena_alloc(ar, mm);
    t->pu = emn_arena_alloc(ar, mm);
    t->Fv = emn_arena_alloc(ar, mm);
    t->Fu = emn_arena_alloc(ar, mm);
    for (int a = 0; a < m; a++) {
        t->p[a] = emn_expr_diff(ar, t->L, m + a);
        t->F[a] = emn_expr_sub(ar, emn_expr_add(ar, emn_expr_diff(ar, t->L, a), emn_expr_diff(ar, t->P, m + a)),
                               emn_expr_diff(ar, t->D, m + a));
    }
    t->linear = true;
    for (int a = 0; a < m; a++)
        for (int b = 0; b < m; b++) {
            t->pv[a * m + b] = emn_expr_diff(ar, t->p[a], b);
            t->pu[a * m + b] = emn_expr_diff(ar, t->p[a], m + b);
            t->Fv[a * m + b] = emn_expr_diff(ar, t->F[a], b);
            t->Fu[a * m + b] = emn_expr_diff(ar, t->F[a], m + b);
            if (depends_on_state(t->pv[a * m + b], m) || depends_on_state(t->pu[a * m + b], m) ||
                depends_on_state(t->Fv[a * m + b], m) || depends_on_state(t->Fu[a * m + b], m))
                t->linear = false;
        }
    /* asked of every term, two or three times: once here per template */
    t->reads = emn_arena_alloc(ar, (size_t)m * sizeof(bool) + 1);
    for (int a = 0; a < m; a++)
        t->reads[a] = emn_expr_depends(t->L, a) || emn_expr_depends(t->D, a) || emn_expr_depends(t->P, a);
    t->meet = emn_arena_alloc(ar, (size_t)(m * m) * sizeof(bool));
    for (int a = 0; a < m; a++)
        for (int b = 0; b <= a; b++) {
            bool meet = false;
            for (int k = 0; k < 2 && !meet; k++) {
                int i = k ? b * m + a : a * m + b;
                meet = !is_zero(t->pv[i]) || !is_zero(t->pu[i]) || !is_zero(t->Fv[i]) || !is_zero(t->Fu[i]);
            }
            t->meet[a * m + b] = t->meet[b * m + a] = meet;
        }
    return t;
}

/* The program of a template's momenta and forces (p first), compiled
 * once: for nonlinear terms with the rest of the template, for linear ones
 * when something asks for their values (emn_form_term_pF). */
static void compile_pF(emn_tmpl *t)
{
    if (t->pPF) return;
    int m = t->m;
    const emn_expr **roots = emn_xmalloc((size_t)(2 * m) * sizeof *roots + 1);
    for (int a = 0; a < m; a++) {
        roots[a] = t->p[a];
        roots[m + a] = t->F[a];
    }
    t->pPF = emn_prog_compile(roots, 2 * m, 2 * m + NPARAM + 2);
    free(roots);
}

static void compile_template(emn_arena *ar, emn_tmpl *t)
{
    if (t->pJ) return;
    int m = t->m;
    const emn_expr *va = emn_expr_var(ar, 2 * m + NPARAM), *via = emn_expr_var(ar, 2 * m + NPARAM + 1);
    const emn_expr **roots = emn_xmalloc((size_t)(m * m) * sizeof *roots + 1);
    for (int i = 0; i < m * m; i++) {
        const emn_expr *e = emn_expr_add(ar, emn_expr_mul(ar, va, t->pu[i]), t->pv[i]);
        roots[i] = emn_expr_sub(ar, e, emn_expr_add(ar, t->Fu[i], emn_expr_mul(ar, via, t->Fv[i])));
    }
    t->pJ = emn_prog_compile(roots, m * m, 2 * m + NPARAM + 2);
    free(roots);
    compile_pF(t);
    if (t->V) t->pV = emn_prog_compile(&t->V, 1, 2 * m + NPARAM + 2);
    t->tpv = emn_xcalloc((size_t)(m * m), sizeof(emn_tape *));
    t->tpu = emn_xcalloc((size_t)(m * m), sizeof(emn_tape *));
    t->tFv = emn_xcalloc((size_t)(m * m), sizeof(emn_tape *));
    t->tFu = emn_xcalloc((size_t)(m * m), sizeof(emn_tape *));
    for (int i = 0; i < m * m; i++) {
        t->tpv[i] = emn_tape_compile(t->pv[i]);
        t->tpu[i] = emn_tape_compile(t->pu[i]);
        t->tFv[i] = emn_tape_compile(t->Fv[i]);
        t->tFu[i] = emn_tape_compile(t->Fu[i]);
    }
}

static void free_template_tapes(emn_tmpl *t)
{
    emn_prog_free(&t->pJ);
    emn_prog_free(&t->pPF);
    emn_prog_free(&t->pV);
    if (!t->tpv) return;
    int m = t->m;
    for (int i = 0; i < m * m; i++) {
        emn_tape_free(&t->tpv[i]);
        emn_tape_free(&t->tpu[i]);
        emn_tape_free(&t->tFv[i]);
        emn_tape_free(&t->tFu[i]);
    }
    free(t->tpv); free(t->tpu); free(t->tFv); free(t->tFu);
    t->tpv = NULL;
}

const double *emn_form_term_pF(emn_form *f, const emn_term *tm, const double *z, const double *w)
{
    int m = tm->m;
    double *loc = f->scratch, *out = loc + 2 * m + NPARAM + 2;    /* scratch holds 4 m^2 more */
    emn_form_term_locals(f, tm, z, w, loc);
    compile_pF(tm->tmpl);
    emn_prog_eval(tm->tmpl->pPF, loc, out);
    return out;
}

/* One value at a time, for the start and error messages: the time-step
 * loop takes them from the program (emn_form_term_pF). */
double emn_tmpl_eval_p(const emn_tmpl *t, int a, const double *loc)
{
    return emn_expr_eval(t->p[a], loc);
}

double emn_tmpl_eval_F(const emn_tmpl *t, int a, const double *loc)
{
    return emn_expr_eval(t->F[a], loc);
}

/* ---------------------------------------------------------------- build */

/* A slot that is one coordinate (coord >= 0) or one source (s >= 0). */
static int unit_slot(emn_form *f, int coord, int s)
{
    emn_lmap m;
    lmap_alloc(f->ar, &m, coord >= 0, s >= 0);
    if (coord >= 0) { emn_lmap_ci(&m)[0] = coord; m.c[0] = 1; }
    if (s >= 0) { emn_lmap_di(&m)[0] = s; emn_lmap_d(&m)[0] = 1; }
    return add_slot(f, m);
}

static int mech_slot(emn_form *f, int *node_slot, int node)
{
    if (node_slot[node] < 0) node_slot[node] = unit_slot(f, f->node_coord[node], -1);
    return node_slot[node];
}

static int src_slot(emn_form *f, int *src_slot_of, int s)
{
    if (src_slot_of[s] < 0) src_slot_of[s] = unit_slot(f, -1, s);
    return src_slot_of[s];
}

/* Describe the term of element i (or of the coupled group led by i). */
static bool describe_term(emn_form *f, int i, const int *kgroup, term_desc *td)
{
    const emn_circuit *c = f->c;
    const emn_elem *e = &c->elems.v[i];
    memset(td, 0, sizeof *td);
    td->elem = i;
    td->src = -1;
    bool charge = f->kind == EMN_FORM_CHARGE;
    switch (e->kind) {
    case EMN_J: return false;
    case EMN_K:
        if (!charge) return false;      /* part of its inductors' group */
        td->br[td->nbr++] = e->ind[0];
        td->br[td->nbr++] = e->ind[1];
        break;
    case EMN_V: if (!charge) return false; td->br[td->nbr++] = i; break;
    case EMN_I: if (charge) return false; td->br[td->nbr++] = i; break;
    case EMN_T:
        if (!charge) return false;
        td->br[td->nbr++] = i;
        break;
    case EMN_L:
        if (!charge && kgroup[i] >= 0) {
            if (kgroup[i] != i) return false;   /* the group's first inductor leads */
            for (int k = 0; k < c->elems.n && td->nbr < 64; k++)
                if (kgroup[k] == i) td->br[td->nbr++] = k;
            break;
        }
        td->br[td->nbr++] = i;
        break;
    case EMN_R: case EMN_C:
        td->br[td->nbr++] = i;
        break;
    default:
        break;
    }
    if (f->elem_dead && f->elem_dead[i]) return false;     /* no current, no voltage: nothing */
    /* mechanical nodes this term reads */
    for (int k = 0; k < td->nbr; k++) {
        collect_mech(ex_at(f->elem_branch_mech, td->br[k]), td);
        collect_mech(value_of(f, td->br[k]), td);
    }
    collect_mech(value_of(f, i), td);
    if (e->kind == EMN_K) for (int k = 0; k < 2; k++) collect_mech(value_of(f, e->ind[k]), td);
    if (e->kind == EMN_L && !charge && kgroup[i] == i)     /* only a group's leader has couplings */
        for (int k = 0; k < c->elems.n; k++)
            if (c->elems.v[k].kind == EMN_K && kgroup[c->elems.v[k].ind[0]] == i)
                collect_mech(value_of(f, k), td);
    int first = e->kind == EMN_T ? 2 : 0;
    if (e->kind == EMN_M || e->kind == EMN_S || e->kind == EMN_D || e->kind == EMN_F || e->kind == EMN_T)
        for (int k = first; k < e->nnodes; k++) collect_mech(ex_at(f->xnode, e->node[k]), td);
    if (is_source(e)) td->src = f->elem_src[i];
    return true;
}

/* Inductors joined by K elements, for the flux formulation's inverse
 * inductance matrix: kgroup[i] = the group's first inductor, or -1. */
static int *coupled_groups(const emn_circuit *c)
{
    int n = c->elems.n;
    int *kg = emn_xmalloc((size_t)n * sizeof(int) + 1);
    emn_dsu u;
    emn_dsu_init(&u, n);
    bool *coupled = emn_xcalloc((size_t)n + 1, sizeof(bool));
    for (int k = 0; k < n; k++)
        if (c->elems.v[k].kind == EMN_K) {
            emn_dsu_union(&u, c->elems.v[k].ind[0], c->elems.v[k].ind[1]);
            coupled[c->elems.v[k].ind[0]] = coupled[c->elems.v[k].ind[1]] = true;
        }
    int *first = emn_xmalloc((size_t)n * sizeof(int) + 1);
    for (int k = 0; k < n; k++) first[k] = -1;
    for (int k = 0; k < n; k++) {
        kg[k] = -1;
        if (!coupled[k]) continue;
        int r = emn_dsu_find(&u, k);
        if (first[r] < 0) first[r] = k;
        kg[k] = first[r];
    }
    free(first);
    free(coupled);
    emn_dsu_free(&u);
    return kg;
}

/* Templates by key (term_template), and those of basic terms by their
 * five numbers: kind, m, branches, mechanical coordinates, and whether a
 * source drives it.  A grid has 10^5 basic terms of a handful of kinds:
 * a key printed, hashed and freed for each cost more than the rest of
 * the lookup. */
typedef struct basic_ent { int k[5], idx; } basic_ent;
typedef struct tmpl_cache {
    emn_strmap map;
    struct { emn_tmpl **v; int n, cap; } list;
    struct { basic_ent *v; int n, cap; } basic;
} tmpl_cache;

static int basic_find(const tmpl_cache *tc, const int *k)
{
    for (int i = 0; i < tc->basic.n; i++)
        if (memcmp(tc->basic.v[i].k, k, sizeof tc->basic.v[i].k) == 0) return tc->basic.v[i].idx;
    return -1;
}

/* The value of the term's own element, a C(x) or an L(x) on its own, in
 * the mapping; NULL for any other term (inductors coupled by K are one
 * term with several values). */
static const emn_expr *term_value(emn_form *f, emn_arena *ar, const term_desc *td, const mapping *mp)
{
    const emn_elem *e = &f->c->elems.v[td->elem];
    if (!e->vexpr || (e->kind != EMN_C && e->kind != EMN_L) || td->nbr > 1) return NULL;
    return to_mapping(ar, mp, td, value_of(f, td->elem));
}

/* Terms without a moving coil's flux share a template keyed by their
 * expressions, exactly (emn_expr_key: printing would round a linkage's or
 * a C(x)'s constants to six digits and merge terms that differ in the
 * seventh).  An array of equal actuators then runs one compiled program
 * over and over, which stays in cache. */
static emn_tmpl *term_template(emn_form *f, tmpl_cache *tc, emn_arena *scratch, const term_desc *td)
{
    const emn_circuit *c = f->c;
    const emn_elem *el = &c->elems.v[td->elem];
    emn_kind kind = el->kind;
    int m = term_m(td);
    mapping mp;
    /* a value that depends on x (C(x), L(x)) is written into the
     * expressions, numbers and all: such terms share only when their
     * expressions are equal to the last bit, never by the short key */
    bool plain = true, vx = el->vexpr != NULL;
    for (int k = 0; k < td->nbr; k++) {
        if (ex_at(f->elem_branch_mech, td->br[k])) plain = false;
        if (c->elems.v[td->br[k]].vexpr) vx = true;
    }
    for (int k = 0; k < td->nmech; k++)
        if (c->nodes.v[td->mech[k]].jdef >= 0) plain = false;
    if (kind == EMN_L && td->nbr > 1) plain = false;
    emn_arena *ar = plain ? scratch : f->ar;
    emn_buf key = {0};
    bool basic = plain && !vx && kind != EMN_T && kind != EMN_K && kind != EMN_J;
    for (int k = 0; k < el->nnodes && basic; k++)    /* a node a linkage moves brings its J along */
        if (el->node[k] > 0 && c->nodes.v[el->node[k]].jdef >= 0) basic = false;
    /* a plain term of one of the two-terminal kinds is written the same
     * way whenever its slots are */
    basic_ent be = {{(int)kind, m, td->nbr, td->nmech, td->src >= 0}, -1};
    if (basic) {
        int idx = basic_find(tc, be.k);
        if (idx >= 0) return tc->list.v[idx];
    }
    numeric_mapping(ar, td, &mp);
    const emn_expr *L, *D, *P;
    term_exprs(f, ar, td, &mp, &L, &D, &P);
    if (!plain) {
        emn_tmpl *t = make_template(f->ar, m, L, D, P);
        t->V = term_value(f, f->ar, td, &mp);
        return t;
    }
    emn_buf_printf(&key, "%d|", m);
    emn_expr_key(&key, L ? L : emn_expr_num(ar, 0));
    emn_buf_puts(&key, "|");
    emn_expr_key(&key, D ? D : emn_expr_num(ar, 0));
    emn_buf_puts(&key, "|");
    emn_expr_key(&key, P ? P : emn_expr_num(ar, 0));
    int idx = emn_strmap_get(&tc->map, key.v);
    if (idx < 0) {
        numeric_mapping(f->ar, td, &mp);
        term_exprs(f, f->ar, td, &mp, &L, &D, &P);
        idx = tc->list.n;
        emn_tmpl *t = make_template(f->ar, m, L, D, P);
        t->V = term_value(f, f->ar, td, &mp);   /* equal terms, equal values (L holds it) */
        EMN_PUSH(tc->list, t);
        emn_strmap_put(&tc->map, key.v, idx);
    }
    if (basic) {
        be.idx = idx;
        EMN_PUSH(tc->basic, be);
    }
    emn_buf_free(&key);
    emn_arena_reset(scratch);
    return tc->list.v[idx];
}

/* A slot's value and rate at (z, w) and the time last set. */
static inline void slot_state(const emn_form *f, const emn_lmap *s, const double *z, const double *w, double *pv,
                              double *pu)
{
    const double *c = s->c, *d = emn_lmap_d(s);
    const int *ci = emn_lmap_ci(s), *di = emn_lmap_di(s);
    double v = 0, u = 0;
    for (int q = 0; q < s->nc; q++) {
        v += c[q] * z[ci[q]];
        u += c[q] * w[ci[q]];
    }
    for (int q = 0; q < s->nd; q++) {
        v += d[q] * f->S[di[q]];
        u += d[q] * f->s[di[q]];
    }
    *pv = v;
    *pu = u;
}

/* Local variables of term tm at (z, w): v, u of each slot (then come the
 * parameters); local k at loc[k * stride]. */
static void term_states(const emn_form *f, const emn_term *tm, const double *z, const double *w, double *loc,
                        int stride)
{
    int m = tm->m;
    for (int a = 0; a < m; a++)
        slot_state(f, &f->slots.v[tm->slot[a]], z, w, &loc[a * stride], &loc[(m + a) * stride]);
}

void emn_form_term_locals(const emn_form *f, const emn_term *tm, const double *z, const double *w,
                          double *loc)
{
    term_states(f, tm, z, w, loc, 1);
    emn_form_term_params(f, tm, &loc[2 * tm->m], 1);
}

/* emn_form_duals' plan (only outputs that read branch currents or
 * voltages need one): the terms on the slots wanted, and the slots they
 * reach, whose values and rates a call forms once each (sv, su).  A
 * linear term's p and F are affine in its locals, with coefficients that
 * depend on its parameters alone: they are evaluated once, at coef +
 * off[k]: p(0) and F(0) (m each), then dp/dv, dp/du, dF/dv, dF/du (m x m
 * each, row a, column b), and the term costs a few multiply-adds instead
 * of its program. */
struct emn_duals {
    int *term, nterm;       /* the terms, in order */
    int *slot, nslot;       /* every slot they reach, in order */
    long *off;              /* per term of the plan; -1: nonlinear, through its program */
    double *coef;
    double *sv, *su;
};

static void duals_free(emn_duals **pd)
{
    emn_duals *D = *pd;
    if (!D) return;
    free(D->term); free(D->slot); free(D->off); free(D->coef); free(D->sv); free(D->su);
    free(D);
    *pd = NULL;
}

static emn_duals *duals_plan(emn_form *f, const unsigned char *want)
{
    emn_duals *D = emn_xcalloc(1, sizeof *D);
    int nt = f->terms.n, ns = f->slots.n;
    unsigned char *reach = emn_xcalloc((size_t)ns + 1, 1);
    D->term = emn_xmalloc(((size_t)nt + 1) * sizeof *D->term);
    for (int i = 0; i < nt; i++) {
        const emn_term *tm = &f->terms.v[i];
        bool in = !want;
        for (int a = 0; a < tm->m && !in; a++) in = want[tm->slot[a]];
        if (!in) continue;
        D->term[D->nterm++] = i;
        for (int a = 0; a < tm->m; a++) reach[tm->slot[a]] = 1;
    }
    D->slot = emn_xmalloc(((size_t)ns + 1) * sizeof *D->slot);
    for (int sl = 0; sl < ns; sl++)
        if (reach[sl] || !want) D->slot[D->nslot++] = sl;
    free(reach);
    size_t ncoef = 0;
    D->off = emn_xmalloc(((size_t)D->nterm + 1) * sizeof *D->off);
    for (int k = 0; k < D->nterm; k++) {
        const emn_term *tm = &f->terms.v[D->term[k]];
        D->off[k] = tm->tmpl->linear ? (long)ncoef : -1;
        if (tm->tmpl->linear) ncoef += 2 * (size_t)tm->m + 4 * (size_t)tm->m * (size_t)tm->m;
    }
    D->coef = emn_xmalloc((ncoef + 1) * sizeof(double));
    double *loc = f->scratch;
    for (int k = 0; k < D->nterm; k++) {
        const emn_term *tm = &f->terms.v[D->term[k]];
        if (D->off[k] < 0) continue;
        emn_tmpl *t = tm->tmpl;
        int m = t->m;
        double *c = D->coef + D->off[k];
        for (int v = 0; v < 2 * m; v++) loc[v] = 0;
        emn_form_term_params(f, tm, &loc[2 * m], 1);
        loc[2 * m + NPARAM] = loc[2 * m + NPARAM + 1] = 0;
        for (int q = 0; q < m; q++) {
            c[q] = emn_expr_eval(t->p[q], loc);
            c[m + q] = emn_expr_eval(t->F[q], loc);
        }
        const emn_expr *const *d[4] = {t->pv, t->pu, t->Fv, t->Fu};
        for (int j = 0; j < 4; j++)
            for (int q = 0; q < m * m; q++) c[2 * m + j * m * m + q] = emn_expr_eval(d[j][q], loc);
    }
    D->sv = emn_xmalloc(((size_t)ns + 1) * sizeof(double));
    D->su = emn_xmalloc(((size_t)ns + 1) * sizeof(double));
    return D;
}

void emn_form_duals_want(emn_form *f, const unsigned char *want)
{
    duals_free(&f->duals);
    f->duals = duals_plan(f, want);
}

void emn_form_duals(emn_form *f, const double *z, const double *w, double *pi, double *Fs)
{
    if (!f->duals) f->duals = duals_plan(f, NULL);
    emn_duals *D = f->duals;
    for (int k = 0; k < D->nslot; k++) {
        int sl = D->slot[k];
        slot_state(f, &f->slots.v[sl], z, w, &D->sv[sl], &D->su[sl]);
        pi[sl] = Fs[sl] = 0;
    }
    for (int k = 0; k < D->nterm; k++) {
        const emn_term *tm = &f->terms.v[D->term[k]];
        int m = tm->m;
        if (D->off[k] < 0) {
            const double *pF = emn_form_term_pF(f, tm, z, w);
            for (int a = 0; a < m; a++) {
                pi[tm->slot[a]] += pF[a];
                Fs[tm->slot[a]] += pF[m + a];
            }
            continue;
        }
        const double *c = D->coef + D->off[k], *pv = c + 2 * m, *pu = pv + m * m, *Fv = pu + m * m,
                     *Fu = Fv + m * m;
        for (int a = 0; a < m; a++) {
            double p = c[a], F = c[m + a];
            for (int b = 0; b < m; b++) {
                double v = D->sv[tm->slot[b]], u = D->su[tm->slot[b]];
                p += pv[a * m + b] * v + pu[a * m + b] * u;
                F += Fv[a * m + b] * v + Fu[a * m + b] * u;
            }
            pi[tm->slot[a]] += p;
            Fs[tm->slot[a]] += F;
        }
    }
}

double emn_form_slot_value(const emn_form *f, int sl, const double *z)
{
    const emn_lmap *s = &f->slots.v[sl];
    double v = 0;
    for (int q = 0; q < s->nc; q++) v += s->c[q] * z[emn_lmap_ci(s)[q]];
    for (int q = 0; q < s->nd; q++) v += emn_lmap_d(s)[q] * f->S[emn_lmap_di(s)[q]];
    return v;
}

static double slot_rate(const emn_form *f, const emn_lmap *s, const double *w);

double emn_form_slot_rate(const emn_form *f, int sl, const double *w)
{
    return slot_rate(f, &f->slots.v[sl], w);
}

/* A linear term's coupling of slot a to slot b: the four second
 * derivatives (dp/dv, dp/du, dF/dv, dF/du) of the pair, which reach the
 * constant matrices through b's coordinates and the time couplings
 * through b's sources (stamp_matrices, time_couplings). */
typedef struct { int sa, sb; double d[4]; } tcoupling;
typedef struct { tcoupling *v; int n, cap; } tcouplings;

static void stamp_linear(emn_form *f, emn_term *tm, tcouplings *tc)
{
    int m = tm->m;
    const emn_tmpl *t = tm->tmpl;
    double *loc = f->scratch;
    for (int i = 0; i < 2 * m; i++) loc[i] = 0;
    emn_form_term_params(f, tm, &loc[2 * m], 1);
    for (int a = 0; a < m; a++) {
        const emn_lmap *sa = &f->slots.v[tm->slot[a]];
        double p0 = emn_expr_eval(t->p[a], loc), F0 = emn_expr_eval(t->F[a], loc);
        for (int q = 0; q < sa->nc; q++) {
            f->p0[emn_lmap_ci(sa)[q]] += sa->c[q] * p0;
            f->f0[emn_lmap_ci(sa)[q]] += sa->c[q] * F0;
        }
        for (int b = 0; b < m; b++) {
            const emn_lmap *sb = &f->slots.v[tm->slot[b]];
            double pv = emn_expr_eval(t->pv[a * m + b], loc), pu = emn_expr_eval(t->pu[a * m + b], loc);
            double Fv = emn_expr_eval(t->Fv[a * m + b], loc), Fu = emn_expr_eval(t->Fu[a * m + b], loc);
            if (pv == 0 && pu == 0 && Fv == 0 && Fu == 0) continue;
            if (sa->nc > 0 && (sb->nc > 0 || sb->nd > 0)) {
                tcoupling c = {tm->slot[a], tm->slot[b], {pv, pu, Fv, Fu}};
                EMN_PUSH(*tc, c);
            }
        }
    }
}

/* The couplings listed by what their slot sb reaches: its coordinates
 * (nb = n), or its sources (nb = nsrc).  Entry e of bucket k (start[k] <=
 * e < start[k + 1]) is coupling er[e] through sb's term eq[e], in coupling
 * order.  Returns start; the caller frees start, *er and *eq. */
static int *bucket_couplings(const emn_form *f, const tcouplings *tc, bool sources, int nb, int **er, int **eq)
{
    int *start = emn_xcalloc((size_t)nb + 2, sizeof(int));
    for (int r = 0; r < tc->n; r++) {
        const emn_lmap *sb = &f->slots.v[tc->v[r].sb];
        int cnt = sources ? sb->nd : sb->nc;
        for (int q = 0; q < cnt; q++) start[(sources ? emn_lmap_di(sb)[q] : emn_lmap_ci(sb)[q]) + 1]++;
    }
    for (int k = 0; k < nb; k++) start[k + 1] += start[k];
    *er = emn_xmalloc((size_t)start[nb] * sizeof(int) + 1);
    *eq = emn_xmalloc((size_t)start[nb] * sizeof(int) + 1);
    int *fill = emn_xmalloc(((size_t)nb + 1) * sizeof(int));
    memcpy(fill, start, (size_t)nb * sizeof(int));
    for (int r = 0; r < tc->n; r++) {
        const emn_lmap *sb = &f->slots.v[tc->v[r].sb];
        int cnt = sources ? sb->nd : sb->nc;
        for (int q = 0; q < cnt; q++) {
            int e = fill[sources ? emn_lmap_di(sb)[q] : emn_lmap_ci(sb)[q]]++;
            (*er)[e] = r;
            (*eq)[e] = q;
        }
    }
    free(fill);
    return start;
}

/* From this many live sources on, emn_form_set_time looks them up in
 * two halves side by side (par.h): a power grid's ten thousand pulsed
 * loads (each source's lookups touch only its own numbers; a source
 * given by an expression keeps them in one pass). */
#define EMN_SRC_HALVES_MIN 2048

/* Below this many entries (and rows) the linear part of an evaluation is
 * not worth a second core. */
#define EMN_LIN_HALVES_MIN 50000

/* The row that splits the linear part of an evaluation (the copy of the
 * constant parts, a row each, and the four matrices' entries) in two
 * halves of nearly equal work. */
static void split_rows(emn_form *f)
{
    int n = f->n;
    f->lin_mid = 0;
    long total = n;
    for (int q = 0; q < 4; q++) total += f->lin[q].nnz;
    if (total < EMN_LIN_HALVES_MIN) return;
    int lo = 0, hi = n;         /* the first row whose work before it reaches half */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        long before = mid;
        for (int q = 0; q < 4; q++) before += f->lin[q].rptr[mid];
        if (2 * before < total) lo = mid + 1;
        else hi = mid;
    }
    if (lo <= 0 || lo >= n) return;
    f->lin_mid = lo;
    f->lin_split = emn_xcalloc(1, sizeof *f->lin_split);
    f->lin_split->mid = lo;
    f->lin_split->n = n;
}

/* The four constant matrices (dp/dz, dp/dw, dF/dz, dF/dw of the linear
 * terms), summed column by column straight into their compressed form:
 * each coupling's block is listed under the columns it reaches, and a
 * column is summed in a dense buffer indexed through the positions of
 * J's column, with no search for an entry's place and no n-by-nnz
 * scratch matrices.  Contributions to an entry add in term order, as
 * they would term by term; an entry is kept where its sum is nonzero. */
static void stamp_matrices(emn_form *f, const tcouplings *tc)
{
    int n = f->n;
    const emn_sparse *J = &f->J;
    int *er, *eq, *start = bucket_couplings(f, tc, false, n, &er, &eq);
    int maxc = 0;
    for (int col = 0; col < n; col++) {
        int len = J->Ap[col + 1] - J->Ap[col];
        if (len > maxc) maxc = len;
    }
    double *buf = emn_xcalloc(4 * ((size_t)maxc + 1), sizeof(double));
    int *pos = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    /* at most J's entries each: what is never written is never mapped,
     * and the arrays shrink to size at the end without growing first */
    int *row[4], *slot[4], cnt[4] = {0, 0, 0, 0};
    double *val[4];
    int *cptr[4];               /* by columns first, as J is built */
    for (int q = 0; q < 4; q++) {
        cptr[q] = emn_xcalloc((size_t)n + 1, sizeof(int));
        row[q] = emn_xreserve((size_t)J->nnz * sizeof(int) + 1);
        slot[q] = emn_xreserve((size_t)J->nnz * sizeof(int) + 1);
        val[q] = emn_xreserve((size_t)J->nnz * sizeof(double) + 1);
    }
    for (int col = 0; col < n; col++) {
        int p0 = J->Ap[col], len = J->Ap[col + 1] - p0;
        for (int k = 0; k < len; k++) pos[J->Ai[p0 + k]] = k;
        for (int e = start[col]; e < start[col + 1]; e++) {
            const tcoupling *t = &tc->v[er[e]];
            const emn_lmap *sa = &f->slots.v[t->sa];
            double cb = f->slots.v[t->sb].c[eq[e]];
            /* by matrix, then by coefficient: a coupling has one or two
             * of the four (a resistor only dF/dw); each entry's sum runs
             * in the same order either way */
            const int *ci = emn_lmap_ci(sa);
            for (int q = 0; q < 4; q++) {
                double dq = t->d[q], *b = buf + q * (maxc + 1);
                if (dq == 0) continue;
                for (int qa = 0; qa < sa->nc; qa++) b[pos[ci[qa]]] += sa->c[qa] * cb * dq;
            }
        }
        for (int q = 0; q < 4; q++) {
            double *b = buf + q * (maxc + 1);
            for (int k = 0; k < len; k++) {
                if (b[k] == 0) continue;
                row[q][cnt[q]] = J->Ai[p0 + k];
                slot[q][cnt[q]] = p0 + k;
                val[q][cnt[q]++] = b[k];
                b[k] = 0;
            }
            cptr[q][col + 1] = cnt[q];
        }
    }
    /* then into row order, a counting sort that keeps each row's columns
     * ascending; to size: the matrices stay for the whole run */
    for (int q = 0; q < 4; q++) {
        emn_cmat *m = &f->lin[q];
        int nz = cnt[q];
        m->nnz = nz;
        m->rptr = emn_xcalloc((size_t)n + 2, sizeof(int));
        for (int k = 0; k < nz; k++) m->rptr[row[q][k] + 2]++;
        for (int i = 0; i < n; i++) m->rptr[i + 2] += m->rptr[i + 1];
        m->col = emn_xmalloc((size_t)nz * sizeof(int) + 1);
        m->slot = emn_xmalloc((size_t)nz * sizeof(int) + 1);
        m->val = emn_xmalloc((size_t)nz * sizeof(double) + 1);
        for (int col = 0; col < n; col++)
            for (int k = cptr[q][col]; k < cptr[q][col + 1]; k++) {
                int at = m->rptr[row[q][k] + 1]++;
                m->col[at] = col;
                m->slot[at] = slot[q][k];
                m->val[at] = val[q][k];
            }
        m->rptr = emn_xrealloc(m->rptr, ((size_t)n + 1) * sizeof(int));
        m->rows = emn_xmalloc((size_t)n * sizeof(int) + 1);
        m->nrows = 0;
        for (int i = 0; i < n; i++)
            if (m->rptr[i + 1] > m->rptr[i]) m->rows[m->nrows++] = i;
        free(cptr[q]);
        free(row[q]);
        free(slot[q]);
        free(val[q]);
    }
    free(buf);
    free(pos);
    free(er);
    free(eq);
    free(start);
    split_rows(f);
}

/* A source that is 0 at every time and its integral with it. */
static bool zero_source(const emn_source *src)
{
    return src->kind == EMN_WAVE_NONE && src->dc == 0;
}

/* The time couplings of the linear terms, p += Pts [S; s] and
 * F += Fts [S; s] (S the sources' integrals, s their values), each entry
 * summed over the terms that share its coordinate and source: in the
 * charge formulation every resistor along a source's path couples the
 * same loop to it, and a power grid's 1.9 million contributions sum to
 * 0.66 million entries.  Source by source, into a dense accumulator over
 * the coordinates, rather than as triplets sorted afterwards.  Columns
 * come in order (integrals, then values), rows in the order the terms
 * first reach them; an entry exists where some contribution is nonzero. */
static void time_couplings(emn_form *f, const tcouplings *tc)
{
    int ns = f->nsrc, n = f->n;
    int *er, *eq, *start = bucket_couplings(f, tc, true, ns, &er, &eq);
    int *at = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    /* at most one entry per coefficient of each coupling's first slot, in
     * each half: room for them all at once (a grid's charge formulation
     * has some 10^6), not by doubling; what is not used is not touched */
    long bound = 0;
    for (int l = 0; l < f->nlive; l++) {
        int src = f->live_src[l];
        for (int e = start[src]; e < start[src + 1]; e++) bound += 2L * f->slots.v[tc->v[er[e]].sa].nc;
    }
    if (bound > INT_MAX / 16) bound = 0;       /* past that, grown as needed */
    for (int which = 0; which < 2; which++) {      /* p's couplings, then F's */
        struct { int *v; int n, cap; } row = {0}, col = {0};
        struct { double *v; int n, cap; } val = {0};
        EMN_GROW(row, (int)bound);
        EMN_GROW(col, (int)bound);
        EMN_GROW(val, (int)bound);
        for (int j = 0; j < n; j++) at[j] = -1;
        for (int half = 0; half < 2; half++) {     /* integral columns, then value columns */
            int di = 2 * which + half;
            for (int l = 0; l < f->nlive; l++) {  /* a constant 0's terms are 0 */
                int src = f->live_src[l], first = row.n, c = half * ns + src;
                for (int e = start[src]; e < start[src + 1]; e++) {
                    const tcoupling *t = &tc->v[er[e]];
                    const emn_lmap *sa = &f->slots.v[t->sa], *sb = &f->slots.v[t->sb];
                    double db = emn_lmap_d(sb)[eq[e]], dv = t->d[di];
                    if (db == 0 || dv == 0) continue;
                    for (int qa = 0; qa < sa->nc; qa++) {
                        double v = sa->c[qa] * db * dv;
                        if (v == 0) continue;
                        int j = emn_lmap_ci(sa)[qa];
                        if (at[j] >= first) {
                            val.v[at[j]] += v;
                        } else {
                            at[j] = row.n;
                            EMN_PUSH(row, j);
                            EMN_PUSH(col, c);
                            EMN_PUSH(val, v);
                        }
                    }
                }
            }
        }
        /* to size: they stay for the whole run */
        row.v = emn_xrealloc(row.v, (size_t)row.n * sizeof(int) + 1);
        col.v = emn_xrealloc(col.v, (size_t)row.n * sizeof(int) + 1);
        val.v = emn_xrealloc(val.v, (size_t)row.n * sizeof(double) + 1);
        if (which == 0) {
            f->pts.row = row.v; f->pts.col = col.v; f->pts.val = val.v; f->pts.n = row.n;
        } else {
            f->fts.row = row.v; f->fts.col = col.v; f->fts.val = val.v; f->fts.n = row.n;
        }
    }
    free(at);
    free(er);
    free(eq);
    free(start);
}

/* J's pattern: every coordinate pair that meets in a term (in two of its
 * slots whose second derivatives are not all 0: tmpl->meet), and the
 * diagonal.  Column j is the union, over the slots a of the terms that
 * touch j, of the coordinates of the slots a meets, which is what
 * reserving every pair would give after emn_sparse_finalize, without the
 * pairs: in the charge formulation of a grid a long loop puts a hundred
 * coordinates into one resistor's term, and the pairs outnumber J's
 * entries several times (3.7 million for ibmpg1's 0.83 million).  A
 * voltage source's term holds every loop through it and meets none of
 * them: N actuators on one supply are N small blocks, not one dense one. */
static void build_pattern(emn_form *f)
{
    int n = f->n, nt = f->terms.n;
    /* the (term, slot) pairs touching each coordinate, each once, as
     * term << 8 | slot (a term has fewer than 256 slots): counted, then
     * listed (tl[tp[j] .. tp[j+1]) are coordinate j's), last[j] the last
     * pair seen at j in this pass */
    int *tp = emn_xcalloc((size_t)n + 2, sizeof(int));
    int *pos = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    long *last = emn_xmalloc(((size_t)n + 1) * sizeof(long));
    long *tl = NULL;
    for (int pass = 0; pass < 2; pass++) {
        for (int j = 0; j < n; j++) last[j] = -1;
        for (int i = 0; i < nt; i++) {
            const emn_term *tm = &f->terms.v[i];
            for (int a = 0; a < tm->m; a++) {
                const emn_lmap *sa = &f->slots.v[tm->slot[a]];
                long ta = (long)i << 8 | a;
                for (int q = 0; q < sa->nc; q++) {
                    int j = emn_lmap_ci(sa)[q];
                    if (last[j] == ta) continue;
                    last[j] = ta;
                    if (pass) tl[pos[j]++] = ta;
                    else tp[j + 1]++;
                }
            }
        }
        if (pass) break;
        for (int j = 0; j < n; j++) tp[j + 1] += tp[j];
        memcpy(pos, tp, (size_t)n * sizeof(int));
        tl = emn_xmalloc(((size_t)tp[n] + 1) * sizeof(long));
    }
    /* column by column: mark the coordinates of the slots met (last[r] ==
     * col); then sort every column at once by transposing (the pattern
     * is symmetric: r is in column j exactly when j is in column r, so
     * row r of the transpose, filled column by column in order, is
     * column r sorted) */
    int *Ap = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    struct { int *v; int n, cap; } Ai = {0};
    for (int j = 0; j < n; j++) last[j] = -1;
    for (int col = 0; col < n; col++) {
        Ap[col] = Ai.n;
        last[col] = col;
        EMN_PUSH(Ai, col);
        for (int k = tp[col]; k < tp[col + 1]; k++) {
            const emn_term *tm = &f->terms.v[tl[k] >> 8];
            const bool *meet = tm->tmpl->meet + (tl[k] & 255) * tm->m;
            for (int b = 0; b < tm->m; b++) {
                if (!meet[b]) continue;
                const emn_lmap *sb = &f->slots.v[tm->slot[b]];
                for (int q = 0; q < sb->nc; q++) {
                    int r = emn_lmap_ci(sb)[q];
                    if (last[r] == col) continue;
                    last[r] = col;
                    EMN_PUSH(Ai, r);
                }
            }
        }
    }
    Ap[n] = Ai.n;
    free(tl);
    free(tp);
    free(last);
    int *Bi = emn_xmalloc(((size_t)Ai.n + 1) * sizeof(int));
    memcpy(pos, Ap, (size_t)n * sizeof(int));      /* next free place in each column */
    for (int col = 0; col < n; col++)
        for (int k = Ap[col]; k < Ap[col + 1]; k++) Bi[pos[Ai.v[k]]++] = col;
    free(Ai.v);
    free(pos);
    emn_sparse_init(&f->J, n);
    emn_sparse_adopt(&f->J, Ap, Bi);
}

static int check_storage(emn_form *f, emn_diag *d)
{
    const emn_circuit *c = f->c;
    bool *has = emn_xcalloc((size_t)f->n + 1, sizeof(bool));
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        if (is_zero(tm->tmpl->L) && is_zero(tm->tmpl->D)) continue;
        for (int a = 0; a < tm->m; a++) {
            const emn_lmap *s = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < s->nc; q++) has[emn_lmap_ci(s)[q]] = true;
        }
    }
    int status = 0;
    for (int j = 0; j < f->n; j++) {
        if (has[j]) continue;
        const emn_coord *co = &f->coord[j];
        if (co->kind == EMN_COORD_LOOP) {
            const emn_elem *e = &c->elems.v[co->elem];
            emn_diag_error(d, e->loc, "nothing stores energy or dissipates in the loop closed by %s", e->name);
        } else {
            const emn_node *nd = &c->nodes.v[co->node];
            emn_diag_error(d, nd->loc, "nothing stores energy or dissipates at %s node '%s': "
                           "only sources act on it", co->kind == EMN_COORD_MECH ? "mechanical" : "electrical",
                           nd->name);
        }
        status = -1;
    }
    free(has);
    return status;
}

/* The lists of a batch's plan (emn_form's move). */
enum { MV_Z, MV_S, MV_PF, MV_J };

/* Each batch's locals, results and Newton matrices, moved by lists made
 * here instead of by walking its terms' slots at every evaluation.
 * Local row r of the batch's lane k is at r * EMN_PROG_BATCH + k; the
 * rates' rows follow the values' m rows down, as do the F results the
 * p results. */
static void plan_moves(emn_form *f)
{
    enum { B = EMN_PROG_BATCH };
    struct { emn_move *v; int n, cap; } mv[4] = {{0}};
    for (int l = 0; l < 4; l++) f->move_at[l] = emn_xmalloc(((size_t)f->nbatch + 1) * sizeof(int));
    for (int b = 0; b < f->nbatch; b++) {
        for (int l = 0; l < 4; l++) f->move_at[l][b] = mv[l].n;
        for (int i = f->bat_start[b]; i < f->bat_start[b + 1]; i++) {
            const emn_term *tm = &f->terms.v[f->nonlinear[i]];
            int k = i - f->bat_start[b], m = tm->m;
            const int *jh = f->jh[i];
            for (int a = 0; a < m; a++) {
                const emn_lmap *sa = &f->slots.v[tm->slot[a]];
                const double *ca = sa->c, *da = emn_lmap_d(sa);
                const int *ia = emn_lmap_ci(sa), *dia = emn_lmap_di(sa);
                for (int q = 0; q < sa->nc; q++) {
                    emn_move g = {ia[q], a * B + k, ca[q]};
                    EMN_PUSH(mv[MV_Z], g);
                    emn_move s = {a * B + k, ia[q], ca[q]};
                    EMN_PUSH(mv[MV_PF], s);
                }
                for (int q = 0; q < sa->nd; q++) {
                    emn_move g = {dia[q], a * B + k, da[q]};
                    EMN_PUSH(mv[MV_S], g);
                }
                for (int bi = 0; bi < m; bi++) {
                    const emn_lmap *sb = &f->slots.v[tm->slot[bi]];
                    if (!tm->tmpl->meet[a * m + bi]) {
                        jh += sa->nc * sb->nc;
                        continue;
                    }
                    for (int qa = 0; qa < sa->nc; qa++)
                        for (int qb = 0; qb < sb->nc; qb++) {
                            emn_move j = {(a * m + bi) * B + k, *jh++, sa->c[qa] * sb->c[qb]};
                            EMN_PUSH(mv[MV_J], j);
                        }
                }
            }
        }
    }
    for (int l = 0; l < 4; l++) {
        f->move_at[l][f->nbatch] = mv[l].n;
        f->move[l] = mv[l].v;
    }
    /* by row: a counting sort, which keeps each row's moves in order */
    int n = f->n, nm = mv[MV_PF].n;
    f->pf_ptr = emn_xcalloc((size_t)n + 2, sizeof(int));
    f->pf_at = emn_xmalloc(((size_t)nm + 1) * sizeof(int));
    f->pf_off = emn_xmalloc(((size_t)nm + 1) * sizeof(int));
    f->pf_c = emn_xmalloc(((size_t)nm + 1) * sizeof(double));
    for (int k = 0; k < nm; k++) f->pf_ptr[mv[MV_PF].v[k].to + 2]++;
    for (int i = 0; i < n; i++) f->pf_ptr[i + 2] += f->pf_ptr[i + 1];
    for (int b = 0; b < f->nbatch; b++) {
        int m = f->terms.v[f->nonlinear[f->bat_start[b]]].m;
        for (int k = f->move_at[MV_PF][b]; k < f->move_at[MV_PF][b + 1]; k++) {
            const emn_move *s = &mv[MV_PF].v[k];
            int q = f->pf_ptr[s->to + 1]++;
            f->pf_at[q] = (int)((size_t)b * f->bout_stride) + s->from;
            f->pf_off[q] = m * B;
            f->pf_c[q] = s->c;
        }
    }
}

/* The rows the time couplings reach, each once, for time_parts; pt and
 * ft start as p0 and f0, which nothing changes after the build, so
 * a row no coupling reaches keeps its value. */
static void time_rows(emn_form *f)
{
    int *index = emn_xmalloc(((size_t)f->n + 1) * sizeof(int));
    for (int i = 0; i <= f->n; i++) index[i] = -1;
    for (int pass = 0; pass < 2; pass++) {
        const struct emn_tcoup *tc = pass ? &f->fts : &f->pts;
        struct emn_trows *tr = pass ? &f->ftr : &f->ptr;
        const int *row = tc->row;
        const double *c0 = pass ? f->f0 : f->p0;
        int nr = tc->n, m = 0;
        int *out = emn_xmalloc(((size_t)nr + 1) * sizeof(int)), *at = emn_xmalloc(((size_t)nr + 1) * sizeof(int));
        for (int k = 0; k < nr; k++) {
            if (index[row[k]] < 0) {
                index[row[k]] = m;
                out[m++] = row[k];
            }
            at[k] = index[row[k]];
        }
        double *base = emn_xmalloc(((size_t)m + 1) * sizeof(double));
        for (int i = 0; i < m; i++) {
            base[i] = c0[out[i]];
            index[out[i]] = -1;
        }
        *tr = (struct emn_trows){out, at, base, emn_xmalloc(((size_t)m + 1) * sizeof(double)), m};
    }
    free(index);
    memcpy(f->pt, f->p0, (size_t)f->n * sizeof(double));
    memcpy(f->ft, f->f0, (size_t)f->n * sizeof(double));
}

emn_form *emn_form_build(const emn_circuit *c, emn_form_kind kind, emn_diag *d)
{
    emn_form *f = emn_xcalloc(1, sizeof *f);
    f->kind = kind;
    f->c = c;
    f->ar = emn_arena_new();
    int ne = c->elems.n, nn = c->nodes.n;

    /* sources */
    f->elem_src = emn_xmalloc((size_t)ne * sizeof(int) + 1);
    for (int i = 0; i < ne; i++) f->elem_src[i] = is_source(&c->elems.v[i]) ? f->nsrc++ : -1;
    f->src_elem = emn_xmalloc((size_t)f->nsrc * sizeof(int) + 1);
    for (int i = 0; i < ne; i++)
        if (f->elem_src[i] >= 0) f->src_elem[f->elem_src[i]] = i;
    f->live_src = emn_xmalloc((size_t)f->nsrc * sizeof(int) + 1);
    for (int s = 0; s < f->nsrc; s++)
        if (!zero_source(c->elems.v[f->src_elem[s]].src)) f->live_src[f->nlive++] = s;
    f->S = emn_xcalloc((size_t)f->nsrc + 1, sizeof(double));
    f->s = emn_xcalloc((size_t)f->nsrc + 1, sizeof(double));
    f->seg = emn_xcalloc(5 * (size_t)f->nlive + 1, sizeof(double));
    for (int l = 0; l < f->nlive; l++) f->seg[5 * l + 1] = -INFINITY;     /* empty: no time hits */
    f->src_halves = f->nlive >= EMN_SRC_HALVES_MIN;
    for (int l = 0; l < f->nlive; l++)
        if (c->elems.v[f->src_elem[f->live_src[l]]].src->kind == EMN_WAVE_EXPR) f->src_halves = false;
    f->moving = emn_xmalloc((size_t)f->nlive * sizeof(int) + 1);
    f->still_lo = INFINITY;     /* no window yet: the first lookup is full */
    f->still_hi = -INFINITY;
    f->elem_branch_slot = emn_xmalloc((size_t)ne * sizeof(int) + 1);
    for (int i = 0; i < ne; i++) f->elem_branch_slot[i] = -1;

    /* mechanical displacements, linkages composed */
    compose_ctx cc = {f, 0, false};
    for (int v = 1; v < nn; v++)
        if (c->nodes.v[v].dom == EMN_DOM_MECH) xnode_of(&cc, v);
    for (int i = 0; i < ne; i++)
        if (c->elems.v[i].vexpr && c->elems.v[i].kind != EMN_J)
            ex_set(&f->vexpr_c, ne, i, emn_expr_subst(f->ar, c->elems.v[i].vexpr, compose_leaf, &cc));

    /* electrical topology */
    egraph eg;
    egraph_build(c, &eg, true);
    emn_forest fr;
    emn_topo_forest(&eg.g, &fr);
    int status = check_cutsets(c, &eg, &fr, d);
    if (check_vloops(c, &eg, d) < 0) status = -1;
    if (status == 0) {
        if (kind == EMN_FORM_CHARGE) build_charge(f, &eg, &fr);
        else build_flux(f, &eg, &fr, d);
    }
    emn_topo_forest_free(&fr);
    egraph_free(&eg);
    if (status < 0) {
        emn_form_free(&f);
        return NULL;
    }

    /* mechanical coordinates follow the electrical ones */
    f->node_coord = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    for (int v = 0; v < nn; v++) f->node_coord[v] = -1;
    int nfree = 0;          /* free mechanical nodes */
    for (int v = 1; v < nn; v++) nfree += c->nodes.v[v].dom == EMN_DOM_MECH && c->nodes.v[v].jdef < 0;
    f->coord = emn_xrealloc(f->coord, (size_t)(f->ne + nfree + 1) * sizeof(emn_coord));
    f->n = f->ne;
    for (int j = 0; j < f->ne; j++)
        if (f->coord[j].kind == EMN_COORD_NODE) f->node_coord[f->coord[j].node] = j;
    for (int v = 1; v < nn; v++) {
        const emn_node *nd = &c->nodes.v[v];
        if (nd->dom != EMN_DOM_MECH || nd->jdef >= 0) continue;
        f->node_coord[v] = f->n;
        f->coord[f->n++] = (emn_coord){EMN_COORD_MECH, v, -1};
    }
    f->nm = f->n - f->ne;

    /* terms */
    int *node_slot = emn_xmalloc((size_t)nn * sizeof(int) + 1);
    for (int v = 0; v < nn; v++) node_slot[v] = -1;
    int *src_slot_of = emn_xmalloc((size_t)f->nsrc * sizeof(int) + 1);
    for (int s = 0; s < f->nsrc; s++) src_slot_of[s] = -1;
    int *kgroup = coupled_groups(c);
    tmpl_cache tc = {0};
    emn_arena *scratch = emn_arena_new();
    int maxm = 0;
    for (int i = 0; i < ne; i++) {
        term_desc td;
        if (!describe_term(f, i, kgroup, &td)) continue;
        int m = term_m(&td);
        if (!m) continue;
        emn_term tm = {0};
        tm.elem = i;
        tm.m = m;
        tm.slot = emn_arena_alloc_aligned(f->ar, (size_t)m * sizeof(int), sizeof(int));
        for (int k = 0; k < td.nbr; k++) tm.slot[k] = f->elem_branch_slot[td.br[k]];
        for (int k = 0; k < td.nmech; k++) tm.slot[td.nbr + k] = mech_slot(f, node_slot, td.mech[k]);
        if (td.src >= 0) tm.slot[td.nbr + td.nmech] = src_slot(f, src_slot_of, td.src);
        tm.tmpl = term_template(f, &tc, scratch, &td);
        if (m > maxm) maxm = m;
        EMN_PUSH(f->terms, tm);
    }
    emn_arena_free(&scratch);
    emn_strmap_free(&tc.map);
    free(tc.basic.v);
    free(tc.list.v);
    free(node_slot);
    free(src_slot_of);
    free(kgroup);
    f->scratch = emn_xcalloc((size_t)(2 * maxm + NPARAM + 2 + 4 * maxm * maxm + 1), sizeof(double));

    if (check_storage(f, d) < 0) {
        emn_form_free(&f);
        return NULL;
    }

    build_pattern(f);
    f->p0 = emn_xcalloc((size_t)f->n + 1, sizeof(double));
    f->f0 = emn_xcalloc((size_t)f->n + 1, sizeof(double));
    f->pt = emn_xcalloc((size_t)f->n + 1, sizeof(double));
    f->ft = emn_xcalloc((size_t)f->n + 1, sizeof(double));
    tcouplings tcs = {0};
    struct { int *v; int n, cap; } nl = {0};
    struct { int **v; int n, cap; } jhs = {0};
    for (int i = 0; i < f->terms.n; i++) {
        emn_term *tm = &f->terms.v[i];
        if (tm->tmpl->linear) stamp_linear(f, tm, &tcs);
        else {
            EMN_PUSH(nl, i);
            compile_template(f->ar, tm->tmpl);
            /* the Newton matrix slots this term scatters into, in the
             * order emn_form_jacobian visits them */
            int cnt = 0;
            for (int a = 0; a < tm->m; a++)
                for (int b = 0; b < tm->m; b++)
                    cnt += f->slots.v[tm->slot[a]].nc * f->slots.v[tm->slot[b]].nc;
            int *jh = emn_arena_alloc_aligned(f->ar, (size_t)cnt * sizeof(int) + sizeof(int), sizeof(int));
            EMN_PUSH(jhs, jh);
            cnt = 0;
            for (int a = 0; a < tm->m; a++) {
                const emn_lmap *sa = &f->slots.v[tm->slot[a]];
                for (int b = 0; b < tm->m; b++) {
                    const emn_lmap *sb = &f->slots.v[tm->slot[b]];
                    bool meet = tm->tmpl->meet[a * tm->m + b];     /* else not in J: never written */
                    for (int qa = 0; qa < sa->nc; qa++)
                        for (int qb = 0; qb < sb->nc; qb++)
                            jh[cnt++] = meet ? emn_sparse_find(&f->J, emn_lmap_ci(sa)[qa], emn_lmap_ci(sb)[qb]) : -1;
                }
            }
        }
    }
    f->nonlinear = nl.v;
    f->nnonlinear = nl.n;
    f->jh = jhs.v;
    /* batches: runs of up to EMN_PROG_BATCH terms of one template, each
     * with its block of locals, one row of lanes a local */
    f->bat_start = emn_xmalloc(((size_t)nl.n + 1) * sizeof(int));
    f->bat_off = emn_xmalloc(((size_t)nl.n + 1) * sizeof(int));
    size_t nloc = 0;
    for (int i = 0; i < nl.n;) {
        const emn_term *tm = &f->terms.v[nl.v[i]];
        int nb = 1;
        while (i + nb < nl.n && nb < EMN_PROG_BATCH && f->terms.v[nl.v[i + nb]].tmpl == tm->tmpl) nb++;
        f->bat_start[f->nbatch] = i;
        f->bat_off[f->nbatch++] = (int)nloc;
        nloc += (size_t)(2 * tm->m + NPARAM + 2) * EMN_PROG_BATCH;
        i += nb;
    }
    f->bat_start[f->nbatch] = nl.n;
    f->bout_stride = (size_t)(maxm * maxm > 2 * maxm ? maxm * maxm : 2 * maxm) * EMN_PROG_BATCH;
    f->bout = emn_xcalloc((size_t)f->nbatch * f->bout_stride + 1, sizeof(double));
    f->scratch_blk = emn_xcalloc((size_t)(2 * maxm + NPARAM + 3) * EMN_PROG_BATCH, sizeof(double));
    f->tloc = emn_xcalloc(nloc + 1, sizeof(double));
    for (int b = 0; b < f->nbatch; b++)         /* the parameters, once: batch() fills the rest */
        for (int i = f->bat_start[b]; i < f->bat_start[b + 1]; i++) {
            const emn_term *tm = &f->terms.v[nl.v[i]];
            double *lane = f->tloc + f->bat_off[b] + (i - f->bat_start[b]);
            emn_form_term_params(f, tm, lane + 2 * tm->m * EMN_PROG_BATCH, EMN_PROG_BATCH);
        }
    plan_moves(f);
    time_couplings(f, &tcs);
    time_rows(f);

    stamp_matrices(f, &tcs);
    free(tcs.v);
    f->bat_mid = f->lin_mid > 0 && f->nbatch >= 2 ? f->nbatch / 2 : 0;     /* split as the linear part is */

    /* which sources' integrals are used: a time coupling of a linear term,
     * an offset of a branch or node, or a nonlinear term's source slot.
     * A slot that is one source's integral alone is skipped when it is
     * only that source's own branch; an inductor across a voltage source
     * (a capacitor in series with a current source) shares it, and its
     * flux (charge) is read from it. */
    f->need_int = emn_xcalloc((size_t)f->nsrc + 1, sizeof(bool));
    for (int k = 0; k < f->pts.n; k++) if (f->pts.col[k] < f->nsrc) f->need_int[f->pts.col[k]] = true;
    for (int k = 0; k < f->fts.n; k++) if (f->fts.col[k] < f->nsrc) f->need_int[f->fts.col[k]] = true;
    bool *read = emn_xcalloc((size_t)f->slots.n + 1, sizeof(bool));
    for (int i = 0; i < ne; i++) {
        emn_kind k = c->elems.v[i].kind;
        if (k != EMN_V && k != EMN_I && k != EMN_F && f->elem_branch_slot[i] >= 0)
            read[f->elem_branch_slot[i]] = true;
    }
    for (int sl = 0; sl < f->slots.n; sl++) {
        const emn_lmap *m = &f->slots.v[sl];
        if (m->nc == 0 && m->nd == 1 && !read[sl]) continue;
        for (int q = 0; q < m->nd; q++) f->need_int[emn_lmap_di(m)[q]] = true;
    }
    free(read);
    for (int i = 0; i < f->nnonlinear; i++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[i]];
        for (int a = 0; a < tm->m; a++) {
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < m->nd; q++) f->need_int[emn_lmap_di(m)[q]] = true;
        }
    }
    /* the integrals that a slot adds to coordinates (emn_form_integrals:
     * these follow the steps' rule; one read alone is exact), in the flux
     * formulation.  In the charge formulation a current source's charge
     * beside the loop charges, taken the same way, made as many random
     * circuits worse as better (random deck r199: v(n2), across a 100 nF
     * capacitor between loops that carry 1350 V worth of charge, went
     * from 4.3e-3 to 2.9e-2 of its peak off ngspice's; r250 from 4.2e-3 to
     * 4.2e-4), and is left exact. */
    f->int_mixed = emn_xcalloc((size_t)f->nsrc + 1, sizeof(bool));
    for (int sl = 0; sl < f->slots.n && f->kind == EMN_FORM_FLUX; sl++) {
        const emn_lmap *m = &f->slots.v[sl];
        if (m->nc > 0)
            for (int q = 0; q < m->nd; q++) f->int_mixed[emn_lmap_di(m)[q]] = true;
    }
    return f;
}

void emn_form_free(emn_form **pf)
{
    if (!pf || !*pf) return;
    emn_form *f = *pf;
    /* every term's: a linear one's program is compiled when its values
     * are asked for; shared templates are freed once (the pointers clear) */
    for (int i = 0; i < f->terms.n; i++) free_template_tapes(f->terms.v[i].tmpl);
    free(f->slots.v);       /* the maps themselves are in the arena */
    free(f->coord);
    free(f->src_elem); free(f->elem_src); free(f->S); free(f->s); free(f->seg);
    free(f->elem_branch_slot); free(f->elem_branch_mech); free(f->elem_branch_mech_p);
    free(f->node_coord); free(f->xnode); free(f->vexpr_c);
    free(f->node_map);
    free(f->node_mech);
    free(f->node_mech_p);
    free(f->tparent); free(f->telem); free(f->torder);
    free(f->terms.v);
    emn_sparse_free(&f->J);
    emn_lu_free(&f->op_lu);
    free(f->pt); free(f->ft); free(f->p0); free(f->f0);
    free(f->ptr.row); free(f->ptr.at); free(f->ptr.base); free(f->ptr.sum);
    free(f->ftr.row); free(f->ftr.at); free(f->ftr.base); free(f->ftr.sum);
    free(f->live_src);
    free(f->moving);
    free(f->pts.row); free(f->pts.col); free(f->pts.val);
    free(f->fts.row); free(f->fts.col); free(f->fts.val);
    free(f->nonlinear); free(f->jh); free(f->bat_start); free(f->bat_off); free(f->tloc);
    for (int l = 0; l < 4; l++) {
        free(f->move[l]);
        free(f->move_at[l]);
    }
    free(f->pf_ptr); free(f->pf_at); free(f->pf_off); free(f->pf_c);
    duals_free(&f->duals);
    free(f->scratch);
    free(f->bout);
    free(f->scratch_blk);
    for (int q = 0; q < 4; q++) {
        free(f->lin[q].rptr); free(f->lin[q].rows); free(f->lin[q].col);
        free(f->lin[q].slot); free(f->lin[q].val);
    }
    free(f->lin_split);
    free(f->order_hint);
    free(f->need_int);
    free(f->int_mixed);
    emn_arena_free(&f->ar);
    free(f);
    *pf = NULL;
}

/* ------------------------------------------------------------ evaluation */

/* One of them (p's or F's): the nk couplings (col, val) summed into
 * their rows' compact sums, from the constant parts, and each of the nr
 * rows stored once. */
static void time_part(const emn_form *f, const struct emn_tcoup *tc, const struct emn_trows *tr, double *out)
{
    const int *col = tc->col, *at = tr->at;
    const double *val = tc->val;
    double *sum = tr->sum;
    memcpy(sum, tr->base, (size_t)tr->n * sizeof(double));
    for (int k = 0; k < tc->n; k++) sum[at[k]] += val[k] * (col[k] < f->nsrc ? f->S[col[k]] : f->s[col[k] - f->nsrc]);
    for (int i = 0; i < tr->n; i++) out[tr->row[i]] = sum[i];
}

/* The constant and time parts of p and F for the source values and
 * integrals now in f->s and f->S. */
static void time_parts(emn_form *f)
{
    time_part(f, &f->pts, &f->ptr, f->pt);
    time_part(f, &f->fts, &f->ftr, f->ft);
}

/* DC, PULSE and PWL are straight lines between their breakpoints: the
 * line through a source's last looked-up time serves every later time
 * before its next corner, so a step's many evaluations (and a power
 * grid's ten thousand pulsed loads) cost a multiply-add each, without
 * touching the netlist. */
static bool piecewise_linear(const emn_source *src)
{
    return src->kind == EMN_WAVE_NONE || src->kind == EMN_WAVE_PULSE || src->kind == EMN_WAVE_PWL;
}

/* Live source l's value and integral at t. */
static void set_source(emn_form *f, int l, double t)
{
    int s = f->live_src[l];
    /* seg: t0 (where the line was looked up), t1 (the next corner),
     * value and slope at t0, integral at t0 */
    double *g = f->seg + 5 * l;
    bool want_int = !f->need_int || f->need_int[s];
    if (!(t >= g[0] && t < g[1])) {
        emn_source *src = f->c->elems.v[f->src_elem[s]].src;
        if (!piecewise_linear(src)) {
            f->s[s] = emn_wave_value(src, t);
            f->S[s] = want_int ? emn_wave_integral(src, t) : 0;
            return;
        }
        if (src->kind == EMN_WAVE_NONE) {
            g[0] = 0;
            g[1] = INFINITY;
            g[2] = src->dc;
            g[3] = g[4] = 0;
        } else {
            g[0] = t;
            g[1] = emn_wave_next_break(src, t);
            g[2] = emn_wave_value(src, t);
            g[3] = emn_wave_deriv(src, t);
            g[4] = want_int ? emn_wave_integral(src, t) : 0;
        }
    }
    double u = t - g[0];
    f->s[s] = g[2] + g[3] * u;
    f->S[s] = want_int ? g[4] + u * (g[2] + 0.5 * g[3] * u) : 0;
}

/* The integral of live source l as the rule in force makes it. */
static void rule_integral(emn_form *f, int l)
{
    int s = f->live_src[l];
    if (f->srule == EMN_SRULE_EXACT || !f->int_mixed || !f->int_mixed[s]) return;
    f->S[s] = f->srule == EMN_SRULE_STEP ? (f->s[s] - f->S_h[s]) / f->S_a : f->S_fix[s];
}

void emn_form_integrals(emn_form *f, int rule, double a, const double *h)
{
    f->srule = rule;
    f->S_a = a;
    f->S_h = rule == EMN_SRULE_STEP ? h : NULL;
    f->S_fix = rule == EMN_SRULE_FIXED ? h : NULL;
}

bool emn_form_integral_ruled(const emn_form *f, int s)
{
    return f->int_mixed && f->int_mixed[s];
}

/* Whether live source l, as last looked up, keeps its value over its
 * straight piece: slope 0 and no integral read (a DC source, a PULSE
 * between its edges, a flat stretch of a PWL). */
static bool still_source(const emn_form *f, int l)
{
    const double *g = f->seg + 5 * l;
    int s = f->live_src[l];
    if (!f->need_int || f->need_int[s]) return false;     /* as set_source's want_int */
    return g[3] == 0 && g[1] > g[0];
}

/* A lookup of the sources: all of them (list NULL), or those of list. */
typedef struct src_job { emn_form *f; double t; const int *list; int n, mid; } src_job;

static void sources_half(void *arg, int h)
{
    src_job *J = arg;
    for (int k = h ? J->mid : 0; k < (h ? J->n : J->mid); k++) {
        int l = J->list ? J->list[k] : k;
        set_source(J->f, l, J->t);
        rule_integral(J->f, l);
    }
}

static void lookup(emn_form *f, double t, const int *list, int n)
{
    /* in halves from EMN_SRC_HALVES_MIN on, when no source is an
     * expression (src_halves) */
    src_job J = {f, t, list, n, f->src_halves && n >= EMN_SRC_HALVES_MIN ? n / 2 : n};
    if (J.mid < n) emn_par_two(sources_half, &J);
    else sources_half(&J, 0);
}

/* The live sources' values at t (the others stay 0), and the time parts.
 * Between two corners most of a power grid's pulsed loads hold still:
 * only the others are looked up.  At a time outside the still ones'
 * common window (a corner passed, or a time before the last full
 * lookup) every source is, and the window and the list are made again.
 * A still source skipped keeps the value its last lookup gave, which is
 * the one a lookup now would give (its piece's value plus 0 times the
 * time since), so the values are the same either way. */
void emn_form_set_time(emn_form *f, double t)
{
    f->t = t;
    if (t >= f->still_lo && t < f->still_hi) {
        lookup(f, t, f->moving, f->nmoving);
    } else {
        lookup(f, t, NULL, f->nlive);
        double lo = -INFINITY, hi = INFINITY;
        f->nmoving = 0;
        for (int l = 0; l < f->nlive; l++) {
            if (!still_source(f, l)) {
                f->moving[f->nmoving++] = l;
                continue;
            }
            const double *g = f->seg + 5 * l;
            lo = fmax(lo, g[0]);
            hi = fmin(hi, g[1]);
        }
        f->still_lo = lo;
        f->still_hi = hi;
    }
    time_parts(f);
}

void emn_form_set_dc(emn_form *f, double scale)
{
    const emn_circuit *c = f->c;
    f->t = 0;
    f->still_lo = INFINITY;     /* the values change: the next lookup is full */
    f->still_hi = -INFINITY;
    for (int s = 0; s < f->nsrc; s++) {
        f->s[s] = scale * emn_wave_dc(c->elems.v[f->src_elem[s]].src);
        f->S[s] = 0;
    }
    time_parts(f);
}

/* Rows [0, 2m) of batch b's locals at (z, w) into blk: each slot's value
 * and rate, the sum over its coordinates, then over its sources, from
 * zero (as slot_state sums them). */
static void gather(const emn_form *f, int b, int m, const double *z, const double *w, double *blk)
{
    enum { B = EMN_PROG_BATCH };
    int nb = f->bat_start[b + 1] - f->bat_start[b];
    if (nb == B) memset(blk, 0, (size_t)2 * m * B * sizeof(double));
    else for (int r = 0; r < 2 * m; r++) memset(blk + r * B, 0, (size_t)nb * sizeof(double));
    double *u = blk + m * B;
    const emn_move *g = f->move[MV_Z] + f->move_at[MV_Z][b], *ge = f->move[MV_Z] + f->move_at[MV_Z][b + 1];
    for (; g < ge; g++) {
        blk[g->to] += g->c * z[g->from];
        u[g->to] += g->c * w[g->from];
    }
    g = f->move[MV_S] + f->move_at[MV_S][b], ge = f->move[MV_S] + f->move_at[MV_S][b + 1];
    for (; g < ge; g++) {
        blk[g->to] += g->c * f->S[g->from];
        u[g->to] += g->c * f->s[g->from];
    }
}

/* Batch b's block of locals (f->tloc, one row of EMN_PROG_BATCH lanes a
 * local): computed at (z, w), or with z NULL as the last evaluation left
 * them; with a, the Newton matrix's leading coefficient and its inverse
 * set as the last two locals. */
static double *batch(emn_form *f, int b, const double *z, const double *w, const double *a)
{
    enum { B = EMN_PROG_BATCH };
    double *blk = f->tloc + f->bat_off[b];
    int i0 = f->bat_start[b], nb = f->bat_start[b + 1] - i0, m = f->terms.v[f->nonlinear[i0]].m;
    int nv = 2 * m + NPARAM + 2;
    if (z) gather(f, b, m, z, w, blk);
    if (a) {
        double ia = 1 / a[0];
        for (int k = 0; k < nb; k++) {
            blk[(nv - 2) * B + k] = a[0];
            blk[(nv - 1) * B + k] = ia;
        }
    }
    return blk;
}

/* The first of a batch's nb terms whose results in rows [0, nrow) are
 * not all finite, or -1.  A product with zero is zero unless its factor
 * is infinite or NaN, so sums tell whether to look (four of them, that
 * do not wait on each other). */
static int first_bad_lane(const double *out, int nrow, int nb)
{
    enum { B = EMN_PROG_BATCH };
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int r = 0; r < nrow; r++) {
        const double *o = out + r * B;
        int k = 0;
        for (; k + 4 <= nb; k += 4) {
            s0 += o[k] * 0;
            s1 += o[k + 1] * 0;
            s2 += o[k + 2] * 0;
            s3 += o[k + 3] * 0;
        }
        for (; k < nb; k++) s0 += o[k] * 0;
    }
    if (s0 + s1 + s2 + s3 == 0) return -1;
    for (int k = 0; k < nb; k++)
        for (int r = 0; r < nrow; r++)
            if (!isfinite(out[r * B + k])) return k;
    return -1;
}

/* The linear part of an evaluation: p, F (and scale) = the constant and
 * time parts plus the four matrices times z and w; with `rest`, at w = 0
 * and without scale (emn_form_eval_rest). */
typedef struct lin_part {
    const emn_form *f;
    const double *z, *w;
    double *p, *F, *scale;
    bool rest;
    emn_form *nl;       /* also the nonlinear batches' programs (emn_form_eval) */
} lin_part;

/* Row i's entries of M from *r (its position in M's rows, advanced
 * past it) added to s, and their magnitudes to *a if a is given; s
 * alone if row i has none. */
static inline double row_add(const emn_cmat *M, int *r, int end, int i, const double *x, double s, double *a)
{
    if (*r >= end || M->rows[*r] != i) return s;
    (*r)++;
    const int *col = M->col;
    const double *val = M->val;
    int k1 = M->rptr[i + 1];
    if (!a) {
        for (int k = M->rptr[i]; k < k1; k++) s += val[k] * x[col[k]];
        return s;
    }
    double m = *a;
    for (int k = M->rptr[i]; k < k1; k++) {
        double d = val[k] * x[col[k]];
        s += d;
        m += fabs(d);
    }
    *a = m;
    return s;
}

/* y += M x over M's rows [r0, r1); with scale, the magnitudes of the
 * products are summed there too.  Only the rows with entries are
 * visited (dp/dz and dF/dz have few: inductors, springs). */
static void cmat_add(const emn_cmat *M, const double *x, double *y, double *scale, int r0, int r1)
{
    for (int r = r0; r < r1;) {
        int i = M->rows[r];
        y[i] = row_add(M, &r, r1, i, x, y[i], scale ? &scale[i] : NULL);
    }
}

/* Whether dp/dz or dF/dz has entries (inductors, springs): the walks
 * below are compiled apart for the two cases. */
static bool has_z_terms(const emn_form *f)
{
    return f->lin[0].nnz > 0 || f->lin[2].nnz > 0;
}

/* Row i's entries of one matrix (row pointers rp), walked from *k on:
 * added to s, and with mag their magnitudes to *m.  With hz, the
 * coordinates are z = (w - hz) ia, made from x = w where they are read
 * (a linear step's z are not written yet when another half's row reads
 * them).  Inlined with k a caller's local, the walk's position stays in
 * a register: as cursors into the rows with entries, kept in an array
 * the row loop's stores might reach, the positions went to the stack
 * and back at every row (emn_form_step_rows). */
static inline __attribute__((always_inline)) double walk_row(const int *rp, const int *col, const double *val,
                                                             int *k, int i, const double *x, const double *hz,
                                                             double ia, double s, double *m, bool mag)
{
    double a = mag ? *m : 0;
    for (int e = rp[i + 1]; *k < e; (*k)++) {
        int c = col[*k];
        double d = val[*k] * (hz ? (x[c] - hz[c]) * ia : x[c]);
        s += d;
        if (mag) a += fabs(d);
    }
    if (mag) *m = a;
    return s;
}

/* The four matrices' row pointers, columns and values, in locals. */
typedef struct lin_walk {
    const int *rp[4], *col[4];
    const double *val[4];
} lin_walk;

static inline __attribute__((always_inline)) lin_walk walk_of(const emn_form *f)
{
    lin_walk W;
    for (int q = 0; q < 4; q++) {
        W.rp[q] = f->lin[q].rptr;
        W.col[q] = f->lin[q].col;
        W.val[q] = f->lin[q].val;
    }
    return W;
}

/* Rows [i0, i1) of it: p = pt + dp/dz z + dp/dw w and F = ft + dF/dz z +
 * dF/dw w, row by row, the four matrices walked side by side, so that
 * each row of p, F and scale is written once and pt and ft are read once
 * (matrix by matrix, each pass read and wrote p, F and scale again: at
 * 10^6 unknowns the evaluation streamed half again as many bytes).  A
 * row's sums run in the same order whatever the rows' split.  Inlined
 * with mag (scale wanted), zt (dp/dz or dF/dz has entries) and wt (the
 * w terms: not `rest`) constant. */
static inline __attribute__((always_inline)) void lin_rows_with(const lin_part *L, int i0, int i1, bool mag,
                                                                 bool zt, bool wt)
{
    const emn_form *f = L->f;
    const lin_walk W = walk_of(f);
    const double *pt = f->pt, *ft = f->ft, *z = L->z, *w = L->w;
    double *p = L->p, *F = L->F, *scale = L->scale;
    int k0 = W.rp[0][i0], k1 = W.rp[1][i0], k2 = W.rp[2][i0], k3 = W.rp[3][i0];
    for (int i = i0; i < i1; i++) {
        double a = mag ? fabs(pt[i]) + fabs(ft[i]) : 0;
        double pi = pt[i], Fi = ft[i];
        if (zt) pi = walk_row(W.rp[0], W.col[0], W.val[0], &k0, i, z, NULL, 0, pi, &a, mag);
        if (wt) pi = walk_row(W.rp[1], W.col[1], W.val[1], &k1, i, w, NULL, 0, pi, &a, mag);
        if (zt) Fi = walk_row(W.rp[2], W.col[2], W.val[2], &k2, i, z, NULL, 0, Fi, &a, mag);
        if (wt) Fi = walk_row(W.rp[3], W.col[3], W.val[3], &k3, i, w, NULL, 0, Fi, &a, mag);
        p[i] = pi;
        F[i] = Fi;
        if (mag) scale[i] = a;
    }
}

static void lin_rows(const lin_part *L, int i0, int i1)
{
    bool zt = has_z_terms(L->f);
    /* at w = 0 (rest): no w terms, and no scale */
    if (L->rest) {
        if (zt) lin_rows_with(L, i0, i1, false, true, false);
        else lin_rows_with(L, i0, i1, false, false, false);
    } else if (!L->scale) {
        if (zt) lin_rows_with(L, i0, i1, false, true, true);
        else lin_rows_with(L, i0, i1, false, false, true);
    } else {
        if (zt) lin_rows_with(L, i0, i1, true, true, true);
        else lin_rows_with(L, i0, i1, true, false, true);
    }
}

/* Half h of the nonlinear batches (all of them as half 0 when they are
 * not split): their locals at (z, w), or as last formed with z = NULL,
 * and their programs, for the evaluation or with a for the Newton
 * matrix at a.  Each batch's results go to its own part of bout, to be
 * added in batch order by the caller. */
static void batches_half(emn_form *f, int h, const double *z, const double *w, const double *a)
{
    int mid = f->bat_mid > 0 ? f->bat_mid : f->nbatch;
    for (int b = h ? mid : 0; b < (h ? f->nbatch : mid); b++) {
        int i0 = f->bat_start[b], nb = f->bat_start[b + 1] - i0;
        const emn_tmpl *t = f->terms.v[f->nonlinear[i0]].tmpl;
        double *blk = batch(f, b, z, w, a);
        emn_prog_eval_batch(a ? t->pJ : t->pPF, h, nb, blk, f->bout + (size_t)b * f->bout_stride);
    }
}

/* Half h's rows [i0, i1) of the evaluation's split (all of them as half
 * 0 when it is not split). */
static void half_rows(const emn_form *f, int h, int *i0, int *i1)
{
    const emn_par_split *S = f->lin_split;
    int mid = S ? S->mid : f->n;
    *i0 = h ? mid : 0;
    *i1 = h ? f->n : mid;
}

/* Half h of the linear evaluation, and of the nonlinear batches with it. */
static void lin_half(void *arg, int h)
{
    const lin_part *L = arg;
    int i0, i1;
    half_rows(L->f, h, &i0, &i1);
    lin_rows(L, i0, i1);
    if (L->nl) batches_half(L->nl, h, L->z, L->w, NULL);
}

void emn_form_in_halves(const emn_form *f, emn_par_fn fn, void *arg)
{
    if (!f->lin_split) fn(arg, 0);
    else emn_par_timed(f->lin_split, fn, arg);
}

static void eval_linear(const lin_part *L)
{
    emn_form_in_halves(L->f, lin_half, (void *)L);
}

int emn_form_eval(emn_form *f, const double *z, const double *w, double *p, double *F,
                  double *scale, int *bad_term)
{
    lin_part L = {f, z, w, p, F, scale, false, f->nbatch > 0 ? f : NULL};
    eval_linear(&L);
    for (int b = 0; b < f->nbatch; b++) {
        int i0 = f->bat_start[b], nb = f->bat_start[b + 1] - i0, m = f->terms.v[f->nonlinear[i0]].m;
        const double *out = f->bout + (size_t)b * f->bout_stride;
        int bad = first_bad_lane(out, 2 * m, nb);
        if (bad >= 0) {
            if (bad_term) *bad_term = f->nonlinear[i0 + bad];
            return 1;
        }
        const double *pr = out, *Fr = out + m * EMN_PROG_BATCH;
        const emn_move *s = f->move[MV_PF] + f->move_at[MV_PF][b], *se = f->move[MV_PF] + f->move_at[MV_PF][b + 1];
        if (scale)
            for (; s < se; s++) {
                double pa = pr[s->from], Fa = Fr[s->from];
                p[s->to] += s->c * pa;
                F[s->to] += s->c * Fa;
                scale[s->to] += fabs(s->c) * (fabs(pa) + fabs(Fa));
            }
        else
            for (; s < se; s++) {
                p[s->to] += s->c * pr[s->from];
                F[s->to] += s->c * Fr[s->from];
            }
    }
    return 0;
}

void emn_form_eval_open(emn_form *f, const double *z, const double *w, double *p, double *F, double *scale)
{
    lin_part L = {f, z, w, p, F, scale, false, f->nbatch > 0 ? f : NULL};
    eval_linear(&L);
}

void emn_form_close_rows(const emn_form *f, int i0, int i1, double *p, double *F, double *scale)
{
    if (!f->pf_ptr) return;
    const int *ptr = f->pf_ptr, *at = f->pf_at, *off = f->pf_off;
    const double *c = f->pf_c, *out = f->bout;
    for (int i = i0; i < i1; i++) {
        int k0 = ptr[i], k1 = ptr[i + 1];
        if (k0 == k1) continue;
        double pi = p[i], Fi = F[i], si = scale[i];
        for (int k = k0; k < k1; k++) {
            double pa = out[at[k]], Fa = out[at[k] + off[k]];
            pi += c[k] * pa;
            Fi += c[k] * Fa;
            si += fabs(c[k]) * (fabs(pa) + fabs(Fa));
        }
        p[i] = pi;
        F[i] = Fi;
        scale[i] = si;
    }
}

/* A linear step's rows (emn_form_step_rows): each matrix walked by its
 * row pointers (walk_row), and the verdict a running maximum, so that
 * nothing the row loop carries from row to row goes through memory.
 * Walked by their lists of rows with entries and cursors (as lin_rows
 * walked them), through pointers, the four matrices' positions and the
 * verdict were kept on the stack, a store and a load of each at every
 * row: the pass was two fifths of a ladder's step, and rc-1e5 took 0.83
 * s where it now takes 0.72 (best of six each, alternated).  The sums
 * run in lin_rows's order: the same numbers.  With zt false, dp/dz and
 * dF/dz have no entries and are not walked. */
static inline __attribute__((always_inline)) void step_rows(const emn_form *f, const double *w,
                                                             emn_step_check *C, int h, int i0, int i1, bool zt)
{
    const lin_walk W = walk_of(f);
    const double *pt = f->pt, *ft = f->ft, *hz = C->hz, *hp = C->hp, *ra = C->res_m;
    double *z = C->z, *p = C->p, *F = C->F, *scale = C->scale;
    double a = C->a, ia = C->ia, rt = C->reltol, re = C->res_e;
    int ne = f->ne, bad_w = C->bad_w[h], bad_r = C->bad_r[h];
    /* the largest |residual| less its tolerance (positive: out of it) */
    double over = C->ok[h] ? 0 : 1;
    int k0 = W.rp[0][i0], k1 = W.rp[1][i0], k2 = W.rp[2][i0], k3 = W.rp[3][i0];
    for (int i = i0; i < i1; i++) {
        double wi = w[i];
        if (!isfinite(wi) && bad_w < 0) bad_w = i;
        z[i] = (wi - hz[i]) * ia;
        /* p, F and scale summed as lin_rows sums them */
        double m = fabs(pt[i]) + fabs(ft[i]), pi = pt[i], Fi = ft[i];
        if (zt) pi = walk_row(W.rp[0], W.col[0], W.val[0], &k0, i, w, hz, ia, pi, &m, true);
        pi = walk_row(W.rp[1], W.col[1], W.val[1], &k1, i, w, NULL, 0, pi, &m, true);
        if (zt) Fi = walk_row(W.rp[2], W.col[2], W.val[2], &k2, i, w, hz, ia, Fi, &m, true);
        Fi = walk_row(W.rp[3], W.col[3], W.val[3], &k3, i, w, NULL, 0, Fi, &m, true);
        p[i] = pi;
        F[i] = Fi;
        scale[i] = m;
        /* the residual and its test as the integrator's Newton
         * iteration makes them (integ.c, residual_run) */
        double ap = a * pi, d = ap + hp[i] - Fi;
        double tol = rt * (fabs(ap) + fabs(hp[i]) + fabs(m)) + (i < ne ? re : ra[i - ne]);
        if (!isfinite(d)) {
            if (bad_r < 0) bad_r = i;
        } else {
            double x = fabs(d) - tol;
            over = x > over ? x : over;
        }
    }
    C->ok[h] = !(over > 0);
    C->bad_w[h] = bad_w;
    C->bad_r[h] = bad_r;
}

void emn_form_step_rows(const emn_form *f, const double *w, emn_step_check *C, int h, int i0, int i1)
{
    if (has_z_terms(f)) step_rows(f, w, C, h, i0, i1, true);
    else step_rows(f, w, C, h, i0, i1, false);
}

void emn_form_step_half(const emn_form *f, int h, int *i0, int *i1)
{
    assert(f->nnonlinear == 0);
    half_rows(f, h, i0, i1);
}

void emn_form_eval_rest(const emn_form *f, const double *z, double *p, double *F)
{
    assert(f->nnonlinear == 0);
    lin_part L = {f, z, NULL, p, F, NULL, true, NULL};
    eval_linear(&L);
}

void emn_form_values(emn_form *f, const double *z, const double *w, double *val)
{
    enum { B = EMN_PROG_BATCH };
    double *blk = f->scratch_blk;
    for (int b = 0; b < f->nbatch; b++) {
        int i0 = f->bat_start[b], nb = f->bat_start[b + 1] - i0;
        const emn_tmpl *t = f->terms.v[f->nonlinear[i0]].tmpl;
        if (!t->pV) continue;
        int m = t->m;
        /* the locals as in batch(), into a block of their own: the saved
         * ones stay for emn_form_jacobian_last */
        gather(f, b, m, z, w, blk);
        for (int r = 2 * m; r < 2 * m + NPARAM; r++)
            memcpy(blk + r * B, f->tloc + f->bat_off[b] + r * B, (size_t)nb * sizeof(double));
        double *out = blk + (2 * m + NPARAM + 2) * B;
        emn_prog_eval_batch(t->pV, 0, nb, blk, out);
        memcpy(val + i0, out, (size_t)nb * sizeof(double));
    }
}

int emn_form_value_elem(const emn_form *f, int i)
{
    const emn_term *tm = &f->terms.v[f->nonlinear[i]];
    return tm->tmpl->pV ? tm->elem : -1;
}

/* The Newton matrix at leading coefficient a; the nonlinear terms' locals
 * are computed at (z, w), or with z = NULL, taken from the last
 * evaluation.  Half 0 also sets the constant part. */
typedef struct jac_part {
    emn_form *f;
    const double *z, *w;
    double a;
} jac_part;

static void jac_half(void *arg, int h)
{
    const jac_part *P = arg;
    emn_form *f = P->f;
    if (h == 0) {
        emn_sparse *J = &f->J;
        double a = P->a, ia = 1 / a;
        emn_sparse_zero(J);
        const double coef[4] = {1, a, -ia, -1};        /* a dp/dw + dp/dz - dF/dw - dF/dz / a */
        for (int q = 0; q < 4; q++) {
            const emn_cmat *M = &f->lin[q];
            int nq = M->nnz;
            for (int k = 0; k < nq; k++) J->Ax[M->slot[k]] += coef[q] * M->val[k];
        }
    }
    batches_half(f, h, P->z, P->w, &P->a);
}

static int jacobian(emn_form *f, const double *z, const double *w, double a)
{
    jac_part P = {f, z, w, a};
    if (f->bat_mid > 0) emn_par_two(jac_half, &P);
    else jac_half(&P, 0);
    emn_sparse *J = &f->J;
    for (int b = 0; b < f->nbatch; b++) {
        int i0 = f->bat_start[b], nb = f->bat_start[b + 1] - i0, m = f->terms.v[f->nonlinear[i0]].m;
        const double *Jl = f->bout + (size_t)b * f->bout_stride;
        if (first_bad_lane(Jl, m * m, nb) >= 0) return 1;
        const emn_move *s = f->move[MV_J] + f->move_at[MV_J][b], *se = f->move[MV_J] + f->move_at[MV_J][b + 1];
        for (; s < se; s++) J->Ax[s->to] += s->c * Jl[s->from];
    }
    return 0;
}

int emn_form_jacobian(emn_form *f, const double *z, const double *w, double a)
{
    return jacobian(f, z, w, a);
}

int emn_form_jacobian_last(emn_form *f, double a)
{
    return jacobian(f, NULL, NULL, a);
}

bool emn_form_is_linear(const emn_form *f) { return f->nnonlinear == 0; }

int emn_form_rest_rows(const emn_form *f)
{
    return f->lin[0].nrows + f->lin[2].nrows;
}

/* Row i's sum from s over lin[q]'s entries, at z = -hz / a. */
static double rest_row(const emn_cmat *M, int i, double s, const double *hz, double ia)
{
    for (int k = M->rptr[i]; k < M->rptr[i + 1]; k++) s += M->val[k] * (-hz[M->col[k]] * ia);
    return s;
}

void emn_form_rest_fix(const emn_form *f, const double *hz, double a, double ia, const double *hp, double *dw)
{
    const emn_cmat *P = &f->lin[0], *Q = &f->lin[2];
    /* the rows of either, in order */
    for (int r = 0, q = 0; r < P->nrows || q < Q->nrows;) {
        int i = q >= Q->nrows || (r < P->nrows && P->rows[r] < Q->rows[q]) ? P->rows[r] : Q->rows[q];
        if (r < P->nrows && P->rows[r] == i) r++;
        if (q < Q->nrows && Q->rows[q] == i) q++;
        double p = rest_row(P, i, f->pt[i], hz, ia), F = rest_row(Q, i, f->ft[i], hz, ia);
        dw[i] = -(a * p + hp[i] - F);
    }
}

/* Whether a template's L, D or P depends on slot a's value (local a;
 * locals 0..m-1 are the slots' values, m..2m-1 their rates). */
static bool reads_value(const emn_tmpl *t, int a)
{
    return t->reads[a];
}

void emn_form_z_used(const emn_form *f, bool *used)
{
    for (int j = 0; j < f->n; j++) used[j] = f->coord[j].kind == EMN_COORD_MECH;
    for (int q = 0; q <= 2; q += 2)     /* dp/dz, dF/dz: what reads a value */
        for (int e = 0; e < f->lin[q].nnz; e++) used[f->lin[q].col[e]] = true;
    /* a nonlinear term by its own expressions (a C(x) reads its plate's
     * position; a moving coil its current's rate only) */
    for (int i = 0; i < f->nnonlinear; i++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[i]];
        for (int a = 0; a < tm->m; a++) {
            if (!reads_value(tm->tmpl, a)) continue;
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < m->nc; q++) used[emn_lmap_ci(m)[q]] = true;
        }
    }
}

int emn_form_gauges(const emn_form *f, int *ptr, int *idx)
{
    int n = f->n, ne = f->ne;
    emn_dsu up;
    emn_dsu_init(&up, n);
    bool *pinned = emn_xcalloc((size_t)n + 1, sizeof(bool));
    bool *used = emn_xcalloc((size_t)n + 1, sizeof(bool));
    /* what reads values: dp/dz and dF/dz, and the nonlinear terms' slots
     * that their expressions read by value; each joins what it reads */
    for (int q = 0; q <= 2; q += 2) {
        const emn_cmat *M = &f->lin[q];
        for (int r = 0; r < M->nrows; r++) {
            int i = M->rows[r];
            for (int e = M->rptr[i]; e < M->rptr[i + 1]; e++) {
                int j = M->col[e];
                used[i] = used[j] = true;
                emn_dsu_union(&up, i, j);
            }
        }
    }
    for (int t = 0; t < f->nnonlinear; t++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[t]];
        for (int a = 0; a < tm->m; a++) {
            if (!reads_value(tm->tmpl, a)) continue;
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            const int *ci = emn_lmap_ci(m);
            double sum = 0, mag = 0;
            for (int k = 0; k < m->nc; k++) {
                used[ci[k]] = true;
                emn_dsu_union(&up, ci[k], ci[0]);
                sum += m->c[k];
                mag += fabs(m->c[k]);
            }
            /* a slot that moves with the set (its coefficients do not
             * cancel) pins it */
            if (m->nc > 0 && !(fabs(sum) <= 64 * DBL_EPSILON * mag)) pinned[ci[0]] = true;
        }
    }
    for (int j = 0; j < n; j++) {
        if (j >= ne || !used[j]) pinned[j] = true;      /* a position is the user's; nothing to shift */
        if (pinned[j]) pinned[emn_dsu_find(&up, j)] = true;
    }
    /* each row's entries within the set cancel, or the set is pinned (an
     * inductor to ground, or to a node a voltage source sets, reads one
     * node's flux linkage alone) */
    signed char *ones = emn_xmalloc((size_t)n + 1);
    memset(ones, 1, (size_t)n + 1);
    for (int q = 0; q <= 2; q += 2) {
        const emn_cmat *M = &f->lin[q];
        for (int r = 0; r < M->nrows; r++)
            if (!emn_cmat_row_cancels(M, M->rows[r], ones)) pinned[emn_dsu_find(&up, M->rows[r])] = true;
    }
    free(ones);
    /* the free sets, numbered by their first coordinate, each in
     * coordinate order */
    int *num = emn_xmalloc(((size_t)n + 1) * sizeof(int)), *at = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    int ns = 0;
    for (int j = 0; j < n; j++) num[j] = -1;
    ptr[0] = 0;
    for (int j = 0; j < n; j++) {
        int r = emn_dsu_find(&up, j);
        if (pinned[r] || pinned[j]) continue;
        if (num[r] < 0) {
            num[r] = ns++;
            ptr[ns] = 0;
        }
        ptr[num[r] + 1]++;
    }
    for (int k = 0; k < ns; k++) {
        ptr[k + 1] += ptr[k];
        at[k] = ptr[k];
    }
    for (int j = 0; j < n; j++) {
        int r = emn_dsu_find(&up, j);
        if (!pinned[r] && !pinned[j]) idx[at[num[r]]++] = j;
    }
    free(num);
    free(at);
    emn_dsu_free(&up);
    free(pinned);
    free(used);
    return ns;
}

/* Coordinates a velocity reaches: through the momentum (dp/dw, and a
 * nonlinear term's p[a] reading locals m .. 2m - 1), and with `force`
 * through the force too (dF/dw, F[a]). */
static void reached_by_rates(const emn_form *f, bool force, bool *out)
{
    for (int j = 0; j < f->n; j++) out[j] = false;
    for (int q = 1; q <= (force ? 3 : 1); q += 2) {     /* dp/dw, dF/dw */
        const emn_cmat *M = &f->lin[q];
        for (int r = 0; r < M->nrows; r++) out[M->rows[r]] = true;
    }
    for (int i = 0; i < f->nnonlinear; i++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[i]];
        const emn_tmpl *t = tm->tmpl;
        for (int a = 0; a < tm->m; a++) {
            bool reads = false;
            for (int b = 0; b < tm->m && !reads; b++)
                reads = emn_expr_depends(t->p[a], tm->m + b) || (force && emn_expr_depends(t->F[a], tm->m + b));
            if (!reads) continue;
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < m->nc; q++) out[emn_lmap_ci(m)[q]] = true;
        }
    }
}

void emn_form_inertia(const emn_form *f, bool *has)
{
    reached_by_rates(f, false, has);
}

void emn_form_reads_rates(const emn_form *f, bool *reads)
{
    reached_by_rates(f, true, reads);
}

bool emn_cmat_row_cancels(const emn_cmat *M, int i, const signed char *s)
{
    double sum = 0, mag = 0;
    for (int k = M->rptr[i]; k < M->rptr[i + 1]; k++) {
        sum += M->val[k] * s[M->col[k]];
        mag += fabs(M->val[k]);
    }
    return fabs(sum) <= 64 * DBL_EPSILON * mag;
}

double emn_cmat_row_dot(const emn_cmat *M, int i, const double *x)
{
    double s = 0;
    for (int k = M->rptr[i]; k < M->rptr[i + 1]; k++) s += M->val[k] * x[M->col[k]];
    return s;
}

double emn_cmat_entry(const emn_cmat *M, int i, int j)
{
    for (int k = M->rptr[i]; k < M->rptr[i + 1]; k++)
        if (M->col[k] == j) return M->val[k];
    return 0;
}

/* The null vectors of the linear momenta's matrix dp/dw of the form s
 * (s_j = +-1 on a connected block of it, 0 elsewhere): a capacitor
 * between two nodes that nothing else gives capacitance (the flux
 * formulation), a loop combination whose current meets no inductor (the
 * charge one).  Each block is searched by breadth: its signs follow from
 * its off-diagonal entries (opposite for a positive entry, equal for a
 * negative one), and the block qualifies when they agree around every
 * cycle and every row's sum with them cancels to rounding.  A block that
 * a nonlinear term's momentum reaches is left out. */
int emn_form_mass_kernel(const emn_form *f, int *ptr, int *idx, signed char *sign)
{
    int n = f->n, nk = 0, at = 0;
    const emn_cmat *B = &f->lin[1];
    bool *nl = emn_xcalloc((size_t)n + 1, sizeof(bool));
    for (int i = 0; i < f->nnonlinear; i++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[i]];
        for (int a = 0; a < tm->m; a++) {
            bool reads = false;
            for (int b = 0; b < tm->m && !reads; b++) reads = emn_expr_depends(tm->tmpl->p[a], tm->m + b);
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < m->nc && reads; q++) nl[emn_lmap_ci(m)[q]] = true;
        }
    }
    signed char *s = emn_xcalloc((size_t)n + 1, 1);
    int *queue = emn_xmalloc(((size_t)n + 1) * sizeof(int));
    ptr[0] = 0;
    for (int r = 0; r < B->nrows; r++) {
        int j = B->rows[r];
        if (s[j]) continue;
        int head = 0, tail = 0;
        bool ok = true;
        s[j] = 1;
        queue[tail++] = j;
        while (head < tail) {
            int i = queue[head++];
            ok = ok && !nl[i];
            for (int k = B->rptr[i]; k < B->rptr[i + 1]; k++) {
                int c = B->col[k];
                if (c == i) continue;
                signed char want = B->val[k] > 0 ? -s[i] : s[i];
                if (!s[c]) {
                    s[c] = want;
                    queue[tail++] = c;
                } else if (s[c] != want) {
                    ok = false;
                }
            }
        }
        for (int q = 0; q < tail && ok; q++) ok = emn_cmat_row_cancels(B, queue[q], s);
        if (!ok) continue;
        for (int q = 0; q < tail; q++) {
            idx[at] = queue[q];
            sign[at++] = s[queue[q]];
        }
        ptr[++nk] = at;
    }
    free(queue);
    free(s);
    free(nl);
    return nk;
}

void emn_form_momentum_const(const emn_form *f, bool *konst)
{
    for (int j = 0; j < f->n; j++) konst[j] = true;
    /* slot a's momentum reaches the coordinates of its map; a source's
     * slot has none */
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        for (int a = 0; a < tm->m; a++) {
            if (emn_expr_is_const(tm->tmpl->p[a], NULL)) continue;
            const emn_lmap *m = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < m->nc; q++) konst[emn_lmap_ci(m)[q]] = false;
        }
    }
}

void emn_form_momentum_values(const emn_form *f, bool *vals)
{
    emn_form_momentum_const(f, vals);
    for (int j = 0; j < f->n; j++) vals[j] = !vals[j];
    /* ruled out: a momentum that reads a velocity, or reads values with
     * coefficients that are not constants, or time */
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        const emn_tmpl *t = tm->tmpl;
        int m = tm->m;
        for (int a = 0; a < m; a++) {
            if (emn_expr_is_const(t->p[a], NULL)) continue;
            bool rates = !t->linear;
            for (int b = 0; b < m && !rates; b++) rates = !is_zero(t->pu[a * m + b]);
            if (!rates) continue;
            const emn_lmap *sl = &f->slots.v[tm->slot[a]];
            for (int q = 0; q < sl->nc; q++) vals[emn_lmap_ci(sl)[q]] = false;
        }
    }
    for (int k = 0; k < f->ptr.n; k++) vals[f->ptr.row[k]] = false;
}

/* How a term reads its slots, from its own Lagrangian, dissipation and
 * power: by their rates only (a resistor, a source's power, a capacitor
 * in the flux formulation, an inductor in the charge one); by the values
 * of its slots, quadratically with constant coefficients, as a linear
 * inductor's flux linkage L i or a linear capacitor's charge C v is read,
 * and the flux linkages of inductors that a K couples (each slot the
 * whole linkage of one of them, its mutual parts included); or by values
 * otherwise. */
enum { READS_RATE, READS_BRANCH, READS_OTHER };

static int term_reads(const emn_term *tm)
{
    const emn_tmpl *t = tm->tmpl;
    bool value = false;
    for (int a = 0; a < tm->m && !value; a++) value = reads_value(t, a);
    if (!value) return READS_RATE;
    return tm->tmpl->linear ? READS_BRANCH : READS_OTHER;
}

void emn_form_value_slots(const emn_form *f, int *ptr, int **sl)
{
    int n = f->n;
    bool *other = emn_xcalloc((size_t)n + 1, sizeof(bool));
    int *cnt = emn_xcalloc((size_t)n + 1, sizeof(int));
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < f->terms.n; i++) {
            const emn_term *tm = &f->terms.v[i];
            int r = term_reads(tm);
            if (r == READS_RATE) continue;
            for (int a = 0; a < tm->m; a++) {
                const emn_lmap *m = &f->slots.v[tm->slot[a]];
                for (int q = 0; q < m->nc; q++) {
                    int j = emn_lmap_ci(m)[q];
                    /* (a nonlinear term reading only its rate, as a
                     * movable plate's C(x) (v1 - v2)^2 / 2 the nodes'
                     * flux linkages, reads no value of it) */
                    if (pass == 0 && r == READS_OTHER) other[j] = other[j] || reads_value(tm->tmpl, a);
                    else if (r == READS_BRANCH) {
                        if (pass == 0) cnt[j]++;
                        else if (ptr[j + 1] > ptr[j]) (*sl)[ptr[j] + cnt[j]++] = tm->slot[a];
                    }
                }
            }
        }
        if (pass == 0) {
            ptr[0] = 0;
            for (int j = 0; j < n; j++) {
                bool ok = j < f->ne && !other[j];
                ptr[j + 1] = ptr[j] + (ok ? cnt[j] : 0);
                cnt[j] = 0;
            }
            *sl = emn_xmalloc((size_t)ptr[n] * sizeof(int) + 1);
        }
    }
    free(cnt);
    free(other);
}

int emn_form_check_values(emn_form *f, const double *z, double *value)
{
    const emn_circuit *c = f->c;
    int nn = c->nodes.n;
    double *nx = NULL;
    for (int e = 0; e < c->elems.n; e++) {
        const emn_elem *el = &c->elems.v[e];
        if (!el->vexpr || (el->kind != EMN_C && el->kind != EMN_L)) continue;
        if (!nx) {      /* displacements of free nodes, by node variable */
            nx = emn_xcalloc((size_t)nn + 1, sizeof(double));
            for (int v = 1; v < nn; v++)
                if (f->node_coord[v] >= 0 && f->coord[f->node_coord[v]].kind == EMN_COORD_MECH)
                    nx[v] = z[f->node_coord[v]];
            for (int v = 1; v < nn; v++)
                if (c->nodes.v[v].jdef >= 0) nx[v] = emn_expr_eval(emn_form_xnode(f, v), nx);
        }
        double v = emn_expr_eval(el->vexpr, nx);
        if (!(v > 0) || !isfinite(v)) {
            if (value) *value = v;
            free(nx);
            return e;
        }
    }
    free(nx);
    return -1;
}

int emn_form_derivatives(emn_form *f, const double *z, const double *w, double *Pz, double *Pw,
                         double *Fz, double *Fw)
{
    emn_sparse *J = &f->J;
    double *out[4] = {Pz, Pw, Fz, Fw};
    for (int q = 0; q < 4; q++) {
        if (!out[q]) continue;
        memset(out[q], 0, (size_t)J->nnz * sizeof(double));
        const emn_cmat *M = &f->lin[q];
        for (int k = 0; k < M->nnz; k++) out[q][M->slot[k]] = M->val[k];
    }
    double *loc = f->scratch;
    for (int i = 0; i < f->nnonlinear; i++) {
        const emn_term *tm = &f->terms.v[f->nonlinear[i]];
        const emn_tmpl *t = tm->tmpl;
        int m = tm->m;
        emn_form_term_locals(f, tm, z, w, loc);
        emn_tape *const *tapes[4] = {t->tpv, t->tpu, t->tFv, t->tFu};
        const int *jh = f->jh[i];
        for (int ai = 0; ai < m; ai++) {
            const emn_lmap *sa = &f->slots.v[tm->slot[ai]];
            for (int bi = 0; bi < m; bi++) {
                const emn_lmap *sb = &f->slots.v[tm->slot[bi]];
                int cnt = sa->nc * sb->nc;
                if (!cnt) continue;
                if (!t->meet[ai * m + bi]) {
                    jh += cnt;
                    continue;
                }
                for (int q = 0; q < 4; q++) {
                    if (!out[q]) continue;
                    double v = emn_tape_eval(tapes[q][ai * m + bi], loc);
                    if (!isfinite(v)) return 1;
                    if (v == 0) continue;
                    int h = 0;
                    for (int qa = 0; qa < sa->nc; qa++)
                        for (int qb = 0; qb < sb->nc; qb++, h++)
                            out[q][jh[h]] += sa->c[qa] * sb->c[qb] * v;
                }
                jh += cnt;
            }
        }
    }
    return 0;
}

/* Full rate of a slot: coordinates at w, source integrals at the values. */
static double slot_rate(const emn_form *f, const emn_lmap *s, const double *w)
{
    double u = 0;
    for (int q = 0; q < s->nc; q++) u += s->c[q] * w[emn_lmap_ci(s)[q]];
    for (int q = 0; q < s->nd; q++) u += emn_lmap_d(s)[q] * f->s[emn_lmap_di(s)[q]];
    return u;
}

/* Whether every source goes on through t without a jump: its value a
 * hair before t is its value at t, but for what its slope there moves it
 * over that hair.  (Against the values alone, a ramp ending at zero, a
 * trapezoid's last corner, looked like a jump: 3.5e-15 A of ramp on 0 A,
 * and every grid load's such corner was solved for as one.) */
bool emn_form_sources_continuous(const emn_form *f, double t)
{
    double tl = t - 1e-12 * fabs(t);
    for (int l = 0; l < f->nlive; l++) {
        const emn_source *src = f->c->elems.v[f->src_elem[f->live_src[l]]].src;
        if (src->kind == EMN_WAVE_NONE || src->kind == EMN_WAVE_SIN) continue;
        double a = emn_wave_value(src, t), b = emn_wave_value(src, tl);
        double ramp = 2 * fabs(emn_wave_deriv(src, tl)) * (t - tl);
        if (!(fabs(a - b) <= 1e-9 * (fabs(a) + fabs(b)) + ramp)) return false;
    }
    return true;
}

int emn_form_source_terms(const emn_form *f, int *terms)
{
    int ns = f->slots.n, nt = 0;
    bool *exact = emn_xmalloc((size_t)ns + 1);
    for (int sl = 0; sl < ns; sl++) exact[sl] = f->slots.v[sl].nc == 0 && f->slots.v[sl].nd > 0;
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        bool all = tm->tmpl->linear;
        for (int a = 0; a < tm->m && all; a++) all = exact[tm->slot[a]];
        if (!all)
            for (int a = 0; a < tm->m; a++) exact[tm->slot[a]] = false;
    }
    for (int i = 0; i < f->terms.n; i++)
        if (f->terms.v[i].m > 0 && exact[f->terms.v[i].slot[0]]) terms[nt++] = i;
    free(exact);
    return nt;
}

void emn_form_source_slot_rates(const emn_form *f, const int *terms, int nt, double t, const double *z,
                                const double *w, double *slot_dp)
{
    /* a piecewise-linear source's slope from the left: a hair before
     * t, where no corner falls between */
    double tl = t - 1e-9 * fabs(t);
    double *loc = f->scratch;
    for (int k = 0; k < nt; k++) {
        const emn_term *tm = &f->terms.v[terms[k]];
        for (int a = 0; a < tm->m; a++) slot_dp[tm->slot[a]] = 0;
    }
    for (int k = 0; k < nt; k++) {
        const emn_term *tm = &f->terms.v[terms[k]];
        const emn_tmpl *tp = tm->tmpl;
        int m = tm->m;
        emn_form_term_locals(f, tm, z, w, loc);
        for (int bi = 0; bi < m; bi++) {
            /* slot b's value moves at its rate u = sum d s, and u at
             * sum d s' */
            const emn_lmap *sb = &f->slots.v[tm->slot[bi]];
            double u = 0, du = 0;
            for (int q = 0; q < sb->nd; q++) {
                const emn_source *src = f->c->elems.v[f->src_elem[emn_lmap_di(sb)[q]]].src;
                bool corners = src->kind == EMN_WAVE_PWL || src->kind == EMN_WAVE_PULSE;
                u += emn_lmap_d(sb)[q] * emn_wave_value(src, t);
                du += emn_lmap_d(sb)[q] * emn_wave_deriv(src, corners ? tl : t);
            }
            for (int ai = 0; ai < m && (u != 0 || du != 0); ai++) {
                int e = ai * m + bi;
                double pv = tp->tpv ? emn_tape_eval(tp->tpv[e], loc) : emn_expr_eval(tp->pv[e], loc);
                double pu = tp->tpu ? emn_tape_eval(tp->tpu[e], loc) : emn_expr_eval(tp->pu[e], loc);
                slot_dp[tm->slot[ai]] += u * pv + du * pu;
            }
        }
    }
}

int emn_form_rates(emn_form *f, const double *z, const double *w, double *dp, double *dF, double *slot_dp)
{
    return emn_form_rates_scaled(f, z, w, dp, dF, slot_dp, NULL);
}

int emn_form_rates_scaled(emn_form *f, const double *z, const double *w, double *dp, double *dF,
                          double *slot_dp, double *dFscale)
{
    int n = f->n;
    memset(dp, 0, (size_t)n * sizeof(double));
    memset(dF, 0, (size_t)n * sizeof(double));
    if (dFscale) memset(dFscale, 0, (size_t)n * sizeof(double));
    if (slot_dp) memset(slot_dp, 0, (size_t)f->slots.n * sizeof(double));
    double *loc = f->scratch;
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        const emn_tmpl *t = tm->tmpl;
        int m = tm->m;
        bool compiled = t->tpv != NULL;
        if (tm->tmpl->linear && !slot_dp) continue;       /* summed below through the matrices */
        emn_form_term_locals(f, tm, z, w, loc);
        for (int ai = 0; ai < m; ai++) {
            const emn_lmap *sa = &f->slots.v[tm->slot[ai]];
            double rp = 0, rF = 0, rFs = 0;
            for (int bi = 0; bi < m; bi++) {
                double u = slot_rate(f, &f->slots.v[tm->slot[bi]], w);
                if (u == 0) continue;
                rp += u * (compiled ? emn_tape_eval(t->tpv[ai * m + bi], loc) : emn_expr_eval(t->pv[ai * m + bi], loc));
                double dFv = u * (compiled ? emn_tape_eval(t->tFv[ai * m + bi], loc) : emn_expr_eval(t->Fv[ai * m + bi], loc));
                rF += dFv;
                rFs += fabs(dFv);
            }
            if (!isfinite(rp) || !isfinite(rF)) return 1;
            if (slot_dp) slot_dp[tm->slot[ai]] += rp;
            if (tm->tmpl->linear) continue;
            const double *c = sa->c;
            const int *ci = emn_lmap_ci(sa);
            for (int q = 0; q < sa->nc; q++) {
                dp[ci[q]] += c[q] * rp;
                dF[ci[q]] += c[q] * rF;
                if (dFscale) dFscale[ci[q]] += fabs(c[q]) * rFs;
            }
        }
    }
    /* linear terms: the constant matrices, and their source-integral columns */
    cmat_add(&f->lin[0], w, dp, NULL, 0, f->lin[0].nrows);
    cmat_add(&f->lin[2], w, dF, dFscale, 0, f->lin[2].nrows);
    for (int k = 0; k < f->pts.n; k++)
        if (f->pts.col[k] < f->nsrc) dp[f->pts.row[k]] += f->pts.val[k] * f->s[f->pts.col[k]];
    for (int k = 0; k < f->fts.n; k++)
        if (f->fts.col[k] < f->nsrc) {
            double v = f->fts.val[k] * f->s[f->fts.col[k]];
            dF[f->fts.row[k]] += v;
            if (dFscale) dFscale[f->fts.row[k]] += fabs(v);
        }
    return 0;
}

const emn_expr *emn_form_xnode(const emn_form *f, int node)
{
    return node == 0 || !ex_at(f->xnode, node) ? emn_expr_num(f->ar, 0) : f->xnode[node];
}

/* The electrical coordinates of the charge formulation (want[0]) and of
 * the flux one (want[1]) into nel[0], nel[1], from one topology: -1 if
 * it is invalid. */
static int count_electrical(const emn_circuit *c, const bool want[2], int nel[2])
{
    emn_diag d = {0};
    egraph eg;
    egraph_build(c, &eg, false);
    emn_forest fr;
    emn_topo_forest(&eg.g, &fr);
    int status = check_cutsets(c, &eg, &fr, &d);
    if (check_vloops(c, &eg, &d) < 0) status = -1;
    nel[0] = nel[1] = 0;
    if (status == 0 && want[0]) {
        for (int b = 0; b < eg.g.nbranches; b++)
            if (!fr.in_tree[b] && eg.rank[b] >= 0) nel[0]++;   /* current sources prescribe theirs */
    }
    if (status == 0 && want[1]) {
        int nn = c->nodes.n;
        int *rank = emn_xmalloc((size_t)eg.g.nbranches * sizeof(int) + 1);
        int *group_coord = emn_xmalloc((size_t)nn * sizeof(int) + 1);
        emn_forest cf;
        nel[1] = flux_groups(c, &eg, &fr, rank, &cf, group_coord, NULL, NULL);
        emn_topo_forest_free(&cf);
        free(rank);
        free(group_coord);
    }
    emn_topo_forest_free(&fr);
    egraph_free(&eg);
    emn_diag_free(&d);
    return status;
}

static int count_mechanical(const emn_circuit *c)
{
    int nmech = 0;
    for (int v = 1; v < c->nodes.n; v++)
        if (c->nodes.v[v].dom == EMN_DOM_MECH && c->nodes.v[v].jdef < 0) nmech++;
    return nmech;
}

int emn_form_count(const emn_circuit *c, emn_form_kind kind, int *ne, int *nm)
{
    /* the topology alone: loops and node groups are counted, not built */
    bool want[2] = {kind == EMN_FORM_CHARGE, kind != EMN_FORM_CHARGE};
    int nel[2];
    if (count_electrical(c, want, nel) < 0) return -1;
    int nmech = count_mechanical(c);
    if (ne) *ne = nel[want[1]];
    if (nm) *nm = nmech;
    return nel[want[1]] + nmech;
}

int emn_form_count_both(const emn_circuit *c, int *ncharge, int *nflux)
{
    int nel[2];
    if (count_electrical(c, (const bool[2]){true, true}, nel) < 0) return -1;
    int nmech = count_mechanical(c);
    *ncharge = nel[0] + nmech;
    *nflux = nel[1] + nmech;
    return 0;
}

/* -------------------------------------------------------------- printing */

void emn_form_coord_name(const emn_form *f, int j, emn_buf *out)
{
    const emn_coord *co = &f->coord[j];
    const char *node = co->kind == EMN_COORD_LOOP ? NULL : f->c->nodes.v[co->node].name;
    if (!node) emn_buf_printf(out, "q%d", j + 1);      /* loops come first */
    else emn_buf_printf(out, co->kind == EMN_COORD_NODE ? "lambda(%s)" : "x(%s)", node);
}

/* Print variables: z_j = j, w_j = n+j, S_s = 2n+s, s_s = 2n+nsrc+s. */
static void print_var(emn_buf *out, int var, void *ctx)
{
    const emn_form *f = ctx;
    int n = f->n;
    if (var < n) {
        emn_form_coord_name(f, var, out);
    } else if (var < 2 * n) {
        emn_form_coord_name(f, var - n, out);
        emn_buf_puts(out, "'");
    } else if (var < 2 * n + f->nsrc) {
        emn_buf_printf(out, "int_%s(t)", f->c->elems.v[f->src_elem[var - 2 * n]].name);
    } else {
        emn_buf_printf(out, "%s(t)", f->c->elems.v[f->src_elem[var - 2 * n - f->nsrc]].name);
    }
}

static const emn_expr *lmap_expr(emn_arena *ar, const emn_form *f, const emn_lmap *s, bool rate)
{
    const emn_expr *e = emn_expr_num(ar, 0);
    for (int q = 0; q < s->nc; q++)
        e = emn_expr_add(ar, e, emn_expr_mul(ar, emn_expr_num(ar, s->c[q]),
                                             emn_expr_var(ar, emn_lmap_ci(s)[q] + (rate ? f->n : 0))));
    for (int q = 0; q < s->nd; q++) {
        int v = 2 * f->n + emn_lmap_di(s)[q] + (rate ? f->nsrc : 0);
        e = emn_expr_add(ar, e, emn_expr_mul(ar, emn_expr_num(ar, emn_lmap_d(s)[q]), emn_expr_var(ar, v)));
    }
    return e;
}

/* Append " + e" or " - (e without its sign)" to a sum being printed. */
static void append_term(emn_buf *b, const emn_expr *e, bool *first, const emn_form *f)
{
    if (!e || is_zero(e)) return;
    emn_buf t = {0};
    emn_expr_print(&t, e, print_var, (void *)f);
    if (t.v[0] == '-') emn_buf_printf(b, *first ? "-%s" : " - %s", t.v + 1);
    else emn_buf_printf(b, *first ? "%s" : " + %s", t.v);
    *first = false;
    emn_buf_free(&t);
}

/* Printed one term at a time: a power grid's Lagrangian has a term per
 * element, and summing them into one expression first would cost time
 * quadratic in their number. */
void emn_form_print(const emn_form *f, FILE *out)
{
    const emn_circuit *c = f->c;
    emn_arena *ar = emn_arena_new();
    bool charge = f->kind == EMN_FORM_CHARGE;
    fprintf(out, "# %s formulation: %d generalized coordinates (%d electrical, %d mechanical)\n",
            charge ? "charge" : "flux", f->n, f->ne, f->nm);
    emn_buf name = {0};
    for (int j = 0; j < f->n; j++) {
        const emn_coord *co = &f->coord[j];
        emn_buf_reset(&name);
        emn_form_coord_name(f, j, &name);
        if (co->kind == EMN_COORD_LOOP)
            fprintf(out, "#   %s: charge of the loop closed by %s\n", name.v, c->elems.v[co->elem].name);
        else if (co->kind == EMN_COORD_NODE)
            fprintf(out, "#   %s: flux linkage of node %s\n", name.v, c->nodes.v[co->node].name);
        else
            fprintf(out, "#   %s: displacement of mechanical node %s\n", name.v, c->nodes.v[co->node].name);
    }
    emn_buf_free(&name);
    emn_buf Lb = {0}, Db = {0};
    bool Lfirst = true, Dfirst = true;
    emn_buf *Q = emn_xcalloc((size_t)f->n + 1, sizeof(emn_buf));
    bool *Qfirst = emn_xmalloc((size_t)f->n + 1);
    for (int j = 0; j < f->n; j++) Qfirst[j] = true;
    int *kgroup = coupled_groups(c);
    for (int i = 0; i < f->terms.n; i++) {
        const emn_term *tm = &f->terms.v[i];
        term_desc td;
        describe_term((emn_form *)f, tm->elem, kgroup, &td);
        mapping mp;
        memset(&mp, 0, sizeof mp);
        mp.print = true;
        int m = tm->m;
        for (int a = 0; a < m; a++) {
            mp.slot_v[a] = lmap_expr(ar, f, &f->slots.v[tm->slot[a]], false);
            mp.slot_u[a] = lmap_expr(ar, f, &f->slots.v[tm->slot[a]], true);
        }
        for (int k = 0; k < td.nmech; k++) {
            mp.mech_v[k] = f->node_coord[td.mech[k]];
            mp.mech_u[k] = f->n + f->node_coord[td.mech[k]];
        }
        const emn_elem *e = &c->elems.v[tm->elem];
        mp.param[0] = emn_expr_name(ar, e->name, EMN_NOLOC);
        mp.param[1] = emn_expr_num(ar, e->kind == EMN_S ? e->x0 : 0);
        if (e->kind == EMN_K) {
            mp.param[2] = emn_expr_name(ar, c->elems.v[e->ind[0]].name, EMN_NOLOC);
            mp.param[3] = emn_expr_name(ar, c->elems.v[e->ind[1]].name, EMN_NOLOC);
        }
        const emn_expr *l, *dd, *pp;
        term_exprs((emn_form *)f, ar, &td, &mp, &l, &dd, &pp);
        append_term(&Lb, l, &Lfirst, f);
        append_term(&Db, dd, &Dfirst, f);
        if (pp)
            for (int a = 0; a < m; a++) {
                const emn_lmap *s = &f->slots.v[tm->slot[a]];
                for (int q = 0; q < s->nc; q++) {
                    int j = emn_lmap_ci(s)[q];
                    bool seen = false;       /* once per coordinate and term */
                    for (int a2 = 0; a2 < a && !seen; a2++)
                        for (int q2 = 0; q2 < f->slots.v[tm->slot[a2]].nc; q2++)
                            if (emn_lmap_ci(&f->slots.v[tm->slot[a2]])[q2] == j) seen = true;
                    for (int q2 = 0; q2 < q && !seen; q2++) if (emn_lmap_ci(s)[q2] == j) seen = true;
                    if (!seen) append_term(&Q[j], emn_expr_diff(ar, pp, f->n + j), &Qfirst[j], f);
                }
            }
        emn_arena_reset(ar);
    }
    free(kgroup);
    fprintf(out, "L = %s\nD = %s\n", Lfirst ? "0" : Lb.v, Dfirst ? "0" : Db.v);
    emn_buf_free(&Lb);
    emn_buf_free(&Db);
    for (int j = 0; j < f->n; j++) {
        if (Qfirst[j]) continue;
        emn_buf name = {0};
        emn_form_coord_name(f, j, &name);
        fprintf(out, "Q(%s) = %s\n", name.v, Q[j].v);
        emn_buf_free(&name);
        emn_buf_free(&Q[j]);
    }
    free(Q);
    free(Qfirst);
    emn_arena_free(&ar);
}
