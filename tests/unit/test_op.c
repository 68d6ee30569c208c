/*
 * test_op.c: the operating point of linear circuits against node equations
 * solved here, and the number of Newton steps it takes.
 *
 * A linear circuit's Newton matrix differs from its Jacobian only by the
 * proximal terms (op.h), a 1e-10 of their rows, so Newton meets the
 * operating point's residual test (1e-12) in two steps at most: one, and
 * one more for what the proximal terms left.  A solve that uses a wrong
 * matrix (op.c: the reduced system of a circuit whose inductors end at
 * fixed nodes, or whose springs end at the frame) needs more; leaving out
 * one block of that system gave three steps on the grid here.  The references are nodal analyses
 * written in this file: conductances stamped from the element values,
 * inductors shorted, capacitors open, solved by Gaussian elimination.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "form.h"
#include "integ.h"
#include "netlist.h"
#include "op.h"
#include "tap.h"
#include "util.h"

static emn_diag d;

static emn_circuit *rd(const char *text)
{
    emn_diag_free(&d);
    memset(&d, 0, sizeof d);
    return emn_netlist_read_text("t.cir", text, (long)strlen(text), &d);
}

/* Dense A x = b by Gaussian elimination with partial pivoting; x in b. */
static void gauss(int n, double *A, double *b)
{
    for (int k = 0; k < n; k++) {
        int p = k;
        for (int i = k + 1; i < n; i++)
            if (fabs(A[i * n + k]) > fabs(A[p * n + k])) p = i;
        for (int j = 0; j < n; j++) {
            double t = A[k * n + j];
            A[k * n + j] = A[p * n + j];
            A[p * n + j] = t;
        }
        double t = b[k];
        b[k] = b[p];
        b[p] = t;
        for (int i = k + 1; i < n; i++) {
            double m = A[i * n + k] / A[k * n + k];
            for (int j = k; j < n; j++) A[i * n + j] -= m * A[k * n + j];
            b[i] -= m * b[k];
        }
    }
    for (int k = n - 1; k >= 0; k--) {
        for (int j = k + 1; j < n; j++) b[k] -= A[k * n + j] * b[j];
        b[k] /= A[k * n + k];
    }
}

/* The grid: G x G nodes n<r>_<c>, resistors R(r, c) to the right and
 * below, a capacitor to ground at each, a load current at every third,
 * and pads (every node with r, c both = 1 mod 3) joined to vdd (1.8 V) by
 * 1 nH.  The resistances vary so that no symmetry hides a wrong entry. */
#define G 7
static double rh(int r, int c) { return 0.05 + 0.01 * ((r * 7 + c * 3) % 5); }
static double rv(int r, int c) { return 0.04 + 0.01 * ((r * 3 + c * 5) % 4); }
static double load(int r, int c) { return (r * G + c) % 3 == 0 ? 1e-3 * (1 + (r + c) % 4) : 0; }
static int pad(int r, int c) { return r % 3 == 1 && c % 3 == 1; }

/* With `leaf`, a pad is a node of its own, p<r>_<c>, joined to its grid
 * node by 0.25 ohm (as in bench/gen/rlcmesh.awk). */
static char *grid_deck(bool leaf)
{
    emn_buf b = {0};
    emn_buf_puts(&b, "pad grid\nV1 vdd 0 1.8\n");
    for (int r = 0; r < G; r++)
        for (int c = 0; c < G; c++) {
            if (c + 1 < G) emn_buf_printf(&b, "Rh%d_%d n%d_%d n%d_%d %.17g\n", r, c, r, c, r, c + 1, rh(r, c));
            if (r + 1 < G) emn_buf_printf(&b, "Rv%d_%d n%d_%d n%d_%d %.17g\n", r, c, r, c, r + 1, c, rv(r, c));
            emn_buf_printf(&b, "C%d_%d n%d_%d 0 20f\n", r, c, r, c);
            if (load(r, c) > 0) emn_buf_printf(&b, "I%d_%d n%d_%d 0 %.17g\n", r, c, r, c, load(r, c));
            if (pad(r, c) && leaf)
                emn_buf_printf(&b, "Rp%d_%d n%d_%d p%d_%d 0.25\nL%d_%d p%d_%d vdd 1n\n", r, c, r, c, r, c, r, c, r, c);
            else if (pad(r, c))
                emn_buf_printf(&b, "L%d_%d n%d_%d vdd 1n\n", r, c, r, c);
        }
    emn_buf_puts(&b, ".op\n.end\n");
    return b.v;
}

/* Node voltages of the grid at DC: pads at 1.8 V, the rest from
 * G v = -I (loads draw current out of their node). */
static void grid_reference(double *v)
{
    int n = G * G;
    double *A = calloc((size_t)n * n, sizeof(double)), *b = calloc((size_t)n, sizeof(double));
    for (int r = 0; r < G; r++)
        for (int c = 0; c < G; c++) {
            int i = r * G + c;
            if (pad(r, c)) {
                A[i * n + i] = 1;
                b[i] = 1.8;
                continue;
            }
            b[i] = -load(r, c);
            int nb[4][2] = {{r, c + 1}, {r, c - 1}, {r + 1, c}, {r - 1, c}};
            for (int k = 0; k < 4; k++) {
                int r2 = nb[k][0], c2 = nb[k][1];
                if (r2 < 0 || c2 < 0 || r2 >= G || c2 >= G) continue;
                double R = k == 0 ? rh(r, c) : k == 1 ? rh(r, c2) : k == 2 ? rv(r, c) : rv(r2, c);
                A[i * n + i] += 1 / R;
                A[i * n + r2 * G + c2] -= 1 / R;
            }
        }
    gauss(n, A, b);
    memcpy(v, b, (size_t)n * sizeof(double));
    free(A);
    free(b);
}

/* The coordinate of node `name`, or -1. */
static int coord_of(const emn_circuit *c, const emn_form *f, const char *name)
{
    for (int k = 0; k < c->nodes.n; k++)
        if (!strcmp(c->nodes.v[k].name, name)) return f->node_coord[k];
    return -1;
}

/* A deck's operating point in one formulation, from z = w = 0, checked
 * to be found in at most two Newton steps and one factorization (see the
 * top).  Returns the formulation (its circuit in *c, the state in *z and
 * *w), or NULL if it could not be built. */
static emn_form *op_of(const char *deck, emn_form_kind kind, const char *what, emn_circuit **c, double **z,
                       double **w)
{
    *c = rd(deck);
    if (!ok(*c != NULL && d.nerrors == 0, "%s: deck reads", what)) return NULL;
    emn_form *f = emn_form_build(*c, kind, &d);
    if (!ok(f != NULL, "%s: formulation builds", what)) {
        emn_netlist_free(c);
        return NULL;
    }
    *z = calloc((size_t)f->n + 1, sizeof(double));
    *w = calloc((size_t)f->n + 1, sizeof(double));
    char msg[256] = "";
    int bad = -1;
    emn_op_stats st;
    emn_form_set_time(f, 0);
    int rc = emn_op_solve(f, 1e-3, NULL, *z, *w, &bad, msg, sizeof msg, &st);
    ok(rc == 0, "%s: operating point found (%s)", what, msg);
    ok(st.iterations <= 2 && st.factorizations == 1 && st.source_steps == 0,
       "%s: at most two Newton steps (%ld steps, %ld factorizations)", what, st.iterations, st.factorizations);
    return f;
}

static void done(emn_form *f, emn_circuit *c, double *z, double *w)
{
    free(z);
    free(w);
    emn_form_free(&f);
    emn_netlist_free(&c);
}

/* The grid's node voltages (the flux formulation's velocities) against
 * the nodal analysis. */
static void grid_case(void)
{
    char *deck = grid_deck(false);
    emn_circuit *c;
    double *z, *w;
    emn_form *f = op_of(deck, EMN_FORM_FLUX, "grid", &c, &z, &w);
    free(deck);
    if (!f) return;
    double vref[G * G], worst = 0;
    grid_reference(vref);
    int found = 0;
    for (int r = 0; r < G; r++)
        for (int cc = 0; cc < G; cc++) {
            char name[32];
            snprintf(name, sizeof name, "n%d_%d", r, cc);
            int j = coord_of(c, f, name);
            if (j < 0) continue;
            found++;
            worst = fmax(worst, fabs(w[j] - vref[r * G + cc]));
        }
    ok(found == G * G, "every grid node is a coordinate (%d)", found);
    ok(worst < 1e-12, "grid node voltages match the nodal analysis (worst %.3g V)", worst);
    done(f, c, z, w);
}

/* The order of elimination the operating point leaves for the
 * transient's matrix (emn_form.order_hint, from its reduced system's
 * analysis): a permutation of the coordinates in which a pad node with
 * one neighbour in the grid comes just before it (a leaf: no fill), and a
 * grid node with a coil of its own just after the last of its grid
 * neighbours. */
static void order_case(bool leaf)
{
    const char *what = leaf ? "order, pads as leaves" : "order, coils at grid nodes";
    char *deck = grid_deck(leaf);
    emn_circuit *c;
    double *z, *w;
    emn_form *f = op_of(deck, EMN_FORM_FLUX, what, &c, &z, &w);
    free(deck);
    if (!f) return;
    int n = f->n, *pos = malloc((size_t)n * sizeof(int)), bad = 0, pads = 0;
    for (int j = 0; j < n; j++) pos[j] = -1;
    bool perm = f->order_hint != NULL;
    for (int k = 0; perm && k < n; k++) {
        int j = f->order_hint[k];
        perm = j >= 0 && j < n && pos[j] < 0;
        if (perm) pos[j] = k;
    }
    ok(perm, "%s: the operating point leaves a permutation of the %d coordinates", what, n);
    for (int r = 0; perm && r < G; r++)
        for (int cc = 0; cc < G; cc++) {
            if (!pad(r, cc)) continue;
            char name[32];
            snprintf(name, sizeof name, leaf ? "p%d_%d" : "n%d_%d", r, cc);
            int j = coord_of(c, f, name);
            pads++;
            if (leaf) {
                snprintf(name, sizeof name, "n%d_%d", r, cc);
                int i = coord_of(c, f, name);
                bad += j < 0 || i < 0 || pos[j] + 1 != pos[i];
                continue;
            }
            int nb[4][2] = {{r, cc + 1}, {r, cc - 1}, {r + 1, cc}, {r - 1, cc}};
            for (int k = 0; k < 4; k++) {
                if (nb[k][0] < 0 || nb[k][1] < 0 || nb[k][0] >= G || nb[k][1] >= G) continue;
                snprintf(name, sizeof name, "n%d_%d", nb[k][0], nb[k][1]);
                int i = coord_of(c, f, name);
                bad += j < 0 || i < 0 || pos[j] < pos[i];
            }
        }
    ok(perm && pads == 4 && bad == 0, "%s: each of the %d pads %s (%d misplaced)", what, pads,
       leaf ? "just before its grid node" : "after its grid neighbours", bad);
    free(pos);
    done(f, c, z, w);
}

/* A mass on a spring to the frame, with a damper and a DC force, beside
 * an RL circuit: the spring and the inductor are stiffness each
 * coordinate has alone.  x = x0 + F/k, at rest. */
static void spring_case(emn_form_kind kind, const char *what)
{
    emn_circuit *c;
    double *z, *w;
    emn_form *f = op_of("spring\nM1 m 0.2\nS1 m 0 40 X0=0.01\nD1 m 0 0.3\nF1 m 0 DC -1.962\n"
                        "R1 a 0 1k\nV1 a 0 2\nL1 a b 1m\nR2 b 0 3\n.op\n.end\n",
                        kind, what, &c, &z, &w);
    if (!f) return;
    int j = coord_of(c, f, "m");
    ok(j >= 0 && fabs(z[j] - (0.01 - 1.962 / 40)) < 1e-12 && fabs(w[j]) < 1e-12,
       "%s: x = x0 + F/k, at rest (x %.12g)", what, j >= 0 ? z[j] : NAN);
    done(f, c, z, w);
}

/* An RC ladder's operating point, when a transient follows it, leaves
 * the LU of its reduced system for the transient's Newton matrix, which
 * has the same pattern (emn_form.op_lu): every coordinate is in that
 * system, no coil holds one.  A capacitor between two nodes that no
 * resistor joins is in that pattern too (its proximal term, op.c).  When
 * no transient follows, K is factored whole and no LU is left.  Either
 * way the voltages are the divider's: v1 = 5/6, v2 = 1/2, v3 (behind 4k,
 * no current) = v2. */
static void handoff_case(bool tran, bool floating)
{
    char what[64];
    snprintf(what, sizeof what, "handoff%s%s", tran ? ", transient follows" : ", DC only",
             floating ? ", floating capacitor" : "");
    emn_circuit *c = rd(floating ? "ladder\nV1 in 0 1\nR1 in n1 1k\nR2 n1 n2 2k\nR3 n2 0 3k\nR4 n2 n3 4k\n"
                                   "C1 n1 0 1u\nC2 n2 0 1u\nC3 n3 n1 1u\n.tran 1u 10u\n.end\n"
                                 : "ladder\nV1 in 0 1\nR1 in n1 1k\nR2 n1 n2 2k\nR3 n2 0 3k\nR4 n2 n3 4k\n"
                                   "C1 n1 0 1u\nC2 n2 0 1u\nC3 n3 0 1u\n.tran 1u 10u\n.end\n");
    if (!ok(c != NULL && d.nerrors == 0, "%s: deck reads", what)) return;
    emn_form *f = emn_form_build(c, EMN_FORM_FLUX, &d);
    if (!ok(f != NULL, "%s: formulation builds", what)) {
        emn_netlist_free(&c);
        return;
    }
    f->op_for_tran = tran;
    double *z = calloc((size_t)f->n + 1, sizeof(double)), *w = calloc((size_t)f->n + 1, sizeof(double));
    char msg[256] = "";
    int bad = -1;
    emn_form_set_time(f, 0);
    int rc = emn_op_solve(f, 1e-3, NULL, z, w, &bad, msg, sizeof msg, NULL);
    int j1 = coord_of(c, f, "n1"), j2 = coord_of(c, f, "n2"), j3 = coord_of(c, f, "n3");
    ok(rc == 0 && j1 >= 0 && j2 >= 0 && j3 >= 0 && fabs(w[j1] - 5.0 / 6) < 1e-12 && fabs(w[j2] - 0.5) < 1e-12 &&
       fabs(w[j3] - 0.5) < 1e-12, "%s: the divider's voltages (%s)", what, msg);
    bool want = tran;
    ok((f->op_lu != NULL) == want, "%s: %s", what, want ? "the LU is left for the transient" : "no LU is left");
    if (f->op_lu) {
        emn_lu *lu = f->op_lu;
        emn_integ_opts io = {1e-3, 1e-12, 1e-6, 1e-14, EMN_METHOD_TRAP, 2, 10, 1e-7, 1e-18, 1e-5, 1};
        emn_integ *it = emn_integ_new(f, &io);
        ok(it->lu == lu && f->op_lu == NULL, "%s: the transient takes it", what);
        emn_integ_free(&it);
    }
    free(z);
    free(w);
    emn_form_free(&f);
    emn_netlist_free(&c);
}

int main(void)
{
    grid_case();
    order_case(true);
    order_case(false);
    spring_case(EMN_FORM_CHARGE, "spring, charge");
    spring_case(EMN_FORM_FLUX, "spring, flux");
    handoff_case(true, false);
    handoff_case(false, false);
    handoff_case(true, true);
    emn_diag_free(&d);
    return tap_done();
}
