/*
 * test_form.c: the charge and flux-linkage formulations against Lagrangians
 * derived by hand.
 *
 * Every circuit below carries its own L(z, w, t), D and P, written in this
 * file from the element table of spec formulations section 2 in the
 * coordinates of spec section 1 (loops closed by the links of the
 * breadth-first tree from ground, node fluxes, free displacements); the
 * hand functions look coordinates up by what they are (the loop a given
 * link closes, the flux of a given node), never by position.  Those functions are the independent reference: the test
 * checks the coordinate counts, then at random states and times that the
 * evaluator's momenta p = dL/dw and forces F = dL/dz + dP/dw - dD/dw equal
 * central differences of the hand functions, and that the Newton matrix
 * equals central differences of the residual the integrator solves,
 * r(w) = a p(z(w), w) + hp - F(z(w), w) with z(w) = (w - hz)/a.  Invalid
 * topologies must be refused with a message naming the elements.
 */
#include "config.h"

#if defined(__has_include)
#if __has_include(<malloc.h>)
#include <malloc.h>
#endif
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "form.h"
#include "netlist.h"
#include "sim.h"
#include "tap.h"

static emn_diag d;

static emn_circuit *rd(const char *text)
{
    emn_diag_free(&d);
    memset(&d, 0, sizeof d);
    return emn_netlist_read_text("t.cir", text, (long)strlen(text), &d);
}

static void show_msgs(void)
{
    for (int i = 0; i < d.n; i++) printf("# %d:%d: %s\n", d.v[i].loc.line, d.v[i].loc.col, d.v[i].text);
}

static int has_error(const char *text)
{
    for (int i = 0; i < d.n; i++)
        if (d.v[i].sev == EMN_SEV_ERROR && !strcmp(d.v[i].text, text)) return 1;
    return 0;
}

/* A check that a known engine bug makes fail: TAP "# TODO", which the
 * harness reports as an expected failure, and not counted in the exit
 * status (tap_done() would count it). */
static int ok_todo(int cond, const char *todo, const char *name)
{
    int r = todo ? ok(cond, "%s # TODO %s", name, todo) : ok(cond, "%s", name);
    if (!cond && todo) tap_failed--;
    return r;
}

/* ------------------------------------------------------ random states */

/* xorshift64*: the same states on every run and every platform. */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static double urand(double lo, double hi)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    unsigned long long r = rng_state * 2685821657736338717ULL;
    return lo + (hi - lo) * (double)(r >> 11) / 9007199254740992.0;
}

/* --------------------------------------------- access for hand functions */

/* A hand function sees the state through the coordinates' identities:
 * "loop c1" is the charge of the loop closed by C1, oriented along C1;
 * "lambda(2)" and "x(cone)" are as emnet names them. */
typedef struct hand {
    const emn_form *f;
    const double *z, *w;
    double t;
    int missing;
    char missing_name[64];
} hand;

/* Coordinate j's printed name, in one of four buffers used in turn (a
 * message names up to two). */
static const char *cname(const emn_form *f, int j)
{
    static emn_buf bufs[4];
    static int next;
    emn_buf *b = &bufs[next++ % 4];
    emn_buf_reset(b);
    emn_form_coord_name(f, j, b);
    return b->v;
}

static int coord_index(const emn_form *f, const char *name)
{
    if (!strncmp(name, "loop ", 5)) {
        for (int j = 0; j < f->n; j++)
            if (f->coord[j].kind == EMN_COORD_LOOP && !strcmp(f->c->elems.v[f->coord[j].elem].name, name + 5))
                return j;
        return -1;
    }
    for (int j = 0; j < f->n; j++)
        if (!strcmp(cname(f, j), name)) return j;
    return -1;
}

static int lookup(hand *h, const char *name)
{
    int j = coord_index(h->f, name);
    if (j < 0 && !h->missing++) snprintf(h->missing_name, sizeof h->missing_name, "%s", name);
    return j;
}

static double Z(hand *h, const char *name)
{
    int j = lookup(h, name);
    return j < 0 ? 0 : h->z[j];
}

static double W(hand *h, const char *name)
{
    int j = lookup(h, name);
    return j < 0 ? 0 : h->w[j];
}

/* SPICE SIN(VO VA FREQ) with no delay, and its integral from 0. */
static double sin_src(double vo, double va, double fr, double t)
{
    return vo + va * sin(2 * M_PI * fr * t);
}

static double sin_int(double vo, double va, double fr, double t)
{
    return vo * t + va * (1 - cos(2 * M_PI * fr * t)) / (2 * M_PI * fr);
}

static double sq(double x) { return x * x; }

typedef void (*hand_fn)(hand *h, double *L, double *D, double *P);

/* ---------------------------------------------------------- the circuits
 *
 * Conventions used in the derivations (spec netlist section 3): branch
 * quantities run from n+ to n-; a loop closed by link E runs through E
 * from n+ to n- and back through the tree.  A voltage source has power
 * -E i, a current source -I e, a force F (u1 - u2).
 */

/* RC driven by a voltage source.  The breadth-first tree from ground takes
 * V1 and C1; R1 closes the loop R1 (1->2), C1 (2->0), V1 backwards (0->1),
 * so Q(C1) = q and i(V1) = -q'. */
static const char net_rc[] =
    "rc\n"
    "V1 1 0 SIN(0.2 1.5 0.3)\n"
    "R1 1 2 2\n"
    "C1 2 0 0.5\n";

static void rc_charge(hand *h, double *L, double *D, double *P)
{
    double q = Z(h, "loop r1"), i = W(h, "loop r1"), E = sin_src(0.2, 1.5, 0.3, h->t);
    *L = -q * q / (2 * 0.5);
    *D = 2 * i * i / 2;
    *P = -E * (-i);
}

/* Node 1 is fixed by V1: lambda(1) = integral of E. */
static void rc_flux(hand *h, double *L, double *D, double *P)
{
    double e2 = W(h, "lambda(2)"), E = sin_src(0.2, 1.5, 0.3, h->t);
    *L = 0.5 * e2 * e2 / 2;
    *D = sq(E - e2) / (2 * 2);
    *P = 0;
}

/* Preumont's Example 1: L1 from 1 to ground, C1 1-2, C2 2-3, R1 3 to
 * ground, a current source into node 2.  Charge: the tree holds R1, C2
 * and C1 (capacitors and resistors before inductors), L1 closes the only
 * loop (L1, then R1, C2 and C1 backwards), and the source's loop (I1
 * 0->2, C2, R1) adds its charge to C2 and R1. */
static const char net_preumont[] =
    "preumont example 1\n"
    "L1 1 0 0.7\n"
    "C1 1 2 0.5\n"
    "C2 2 3 2\n"
    "R1 3 0 1.3\n"
    "I1 0 2 SIN(0.1 0.4 0.25)\n";

static void preumont_charge(hand *h, double *L, double *D, double *P)
{
    double q = Z(h, "loop l1"), i = W(h, "loop l1");
    double Is = sin_src(0.1, 0.4, 0.25, h->t), Qs = sin_int(0.1, 0.4, 0.25, h->t);
    *L = 0.7 * i * i / 2 - sq(-q) / (2 * 0.5) - sq(Qs - q) / (2 * 2);
    *D = 1.3 * sq(Is - i) / 2;
    *P = 0;
}

static void preumont_flux(hand *h, double *L, double *D, double *P)
{
    double l1 = Z(h, "lambda(1)");
    double e1 = W(h, "lambda(1)"), e2 = W(h, "lambda(2)"), e3 = W(h, "lambda(3)");
    double Is = sin_src(0.1, 0.4, 0.25, h->t);
    *L = 0.5 * sq(e1 - e2) / 2 + 2 * sq(e2 - e3) / 2 - l1 * l1 / (2 * 0.7);
    *D = e3 * e3 / (2 * 1.3);
    *P = -Is * (0 - e2);                /* I1 runs from ground to node 2 */
}

/* An LC tank fed through R1 by a voltage source.  The tree takes V1 and
 * C1 (preferred to L1 between the same nodes); R1 closes the loop R1,
 * C1, V1 backwards and L1 the loop L1, C1 backwards, so
 * Q(C1) = q1 - q2, i(L1) = q2', i(V1) = -q1'. */
static const char net_lc[] =
    "lc\n"
    "V1 1 0 SIN(0 1 0.4)\n"
    "R1 1 2 0.5\n"
    "L1 2 0 0.8\n"
    "C1 2 0 1.5\n";

static void lc_charge(hand *h, double *L, double *D, double *P)
{
    double q1 = Z(h, "loop r1"), q2 = Z(h, "loop l1"), i1 = W(h, "loop r1"), i2 = W(h, "loop l1");
    double E = sin_src(0, 1, 0.4, h->t);
    *L = 0.8 * i2 * i2 / 2 - sq(q1 - q2) / (2 * 1.5);
    *D = 0.5 * i1 * i1 / 2;
    *P = -E * (-i1);
}

static void lc_flux(hand *h, double *L, double *D, double *P)
{
    double l2 = Z(h, "lambda(2)"), e2 = W(h, "lambda(2)"), E = sin_src(0, 1, 0.4, h->t);
    *L = 1.5 * e2 * e2 / 2 - l2 * l2 / (2 * 0.8);
    *D = sq(E - e2) / (2 * 0.5);
    *P = 0;
}

/* A plate capacitor C(x) on a sprung, damped, forced mass; the spring has
 * a rest length. */
static const char net_cx[] =
    "cx\n"
    "V1 1 0 SIN(0.3 1.2 0.4)\n"
    "R1 1 2 1.5\n"
    "C1 2 0 C='0.8/(1-x(m))'\n"
    "M1 m 1.7\n"
    "S1 m 0 2.5 X0=0.2\n"
    "D1 m 0 0.6\n"
    "F1 m 0 SIN(-0.1 0.5 0.35)\n";

static void cx_mech(hand *h, double *L, double *D, double *P)
{
    double x = Z(h, "x(m)"), u = W(h, "x(m)");
    *L += 1.7 * u * u / 2 - 2.5 * sq(x - 0.2) / 2;
    *D += 0.6 * u * u / 2;
    *P += sin_src(-0.1, 0.5, 0.35, h->t) * u;
}

static void cx_charge(hand *h, double *L, double *D, double *P)
{
    double q = Z(h, "loop r1"), i = W(h, "loop r1"), C = 0.8 / (1 - Z(h, "x(m)"));
    double E = sin_src(0.3, 1.2, 0.4, h->t);
    *L = -q * q / (2 * C);
    *D = 1.5 * i * i / 2;
    *P = E * i;
    cx_mech(h, L, D, P);
}

static void cx_flux(hand *h, double *L, double *D, double *P)
{
    double e2 = W(h, "lambda(2)"), C = 0.8 / (1 - Z(h, "x(m)"));
    double E = sin_src(0.3, 1.2, 0.4, h->t);
    *L = C * e2 * e2 / 2;
    *D = sq(E - e2) / (2 * 1.5);
    *P = 0;
    cx_mech(h, L, D, P);
}

/* A movable-core inductor L(x(a,b)) between two masses joined by a spring
 * with a negative rest length, a damper and a force from b to a. */
static const char net_lx[] =
    "lx\n"
    "V1 1 0 SIN(0 2 0.5)\n"
    "R1 1 2 0.9\n"
    "L1 2 0 L='0.6*(1+0.5*x(a,b)^2)'\n"
    "M1 a 1.1\n"
    "M2 b 0.8\n"
    "S1 a b 3 X0=-0.15\n"
    "D1 a b 0.4\n"
    "S2 b 0 1.2\n"
    "F1 b a SIN(0.2 0.3 0.6)\n";

static void lx_mech(hand *h, double *L, double *D, double *P)
{
    double xa = Z(h, "x(a)"), xb = Z(h, "x(b)"), ua = W(h, "x(a)"), ub = W(h, "x(b)");
    *L += 1.1 * ua * ua / 2 + 0.8 * ub * ub / 2 - 3 * sq(xa - xb + 0.15) / 2 - 1.2 * xb * xb / 2;
    *D += 0.4 * sq(ua - ub) / 2;
    *P += sin_src(0.2, 0.3, 0.6, h->t) * (ub - ua);
}

static double lx_ind(hand *h)
{
    return 0.6 * (1 + 0.5 * sq(Z(h, "x(a)") - Z(h, "x(b)")));
}

/* Charge: the tree takes V1 and R1 (preferred to L1), and L1 closes the
 * loop L1, V1 backwards, R1: i(L1) = i(R1) = -i(V1) = q'. */
static void lx_charge(hand *h, double *L, double *D, double *P)
{
    double i = W(h, "loop l1"), E = sin_src(0, 2, 0.5, h->t);
    *L = lx_ind(h) * i * i / 2;
    *D = 0.9 * i * i / 2;
    *P = E * i;
    lx_mech(h, L, D, P);
}

static void lx_flux(hand *h, double *L, double *D, double *P)
{
    double l2 = Z(h, "lambda(2)"), e2 = W(h, "lambda(2)"), E = sin_src(0, 2, 0.5, h->t);
    *L = -l2 * l2 / (2 * lx_ind(h));
    *D = sq(E - e2) / (2 * 0.9);
    *P = 0;
    lx_mech(h, L, D, P);
}

/* Two inductors coupled by K: the primary driven through R1, the secondary
 * loaded by R2.  The tree takes V1, R2 and R1 (resistors before
 * inductors), so L1 closes the primary's loop, L1, V1 backwards, R1
 * (i(L1) = qa', i(V1) = -qa'), and L2 the secondary's (i(R2) = -qb'). */
static const char net_k[] =
    "k\n"
    "V1 1 0 SIN(0.1 1 0.3)\n"
    "R1 1 2 0.7\n"
    "L1 2 0 1.2\n"
    "L2 3 0 0.9\n"
    "R2 3 0 1.6\n"
    "K1 L1 L2 0.45\n";

/* Magnetic energy of two coupled coils, by the 2x2 inverse. */
static double coupled_wm(double l1, double l2, double m, double a, double b)
{
    double det = l1 * l2 - m * m;
    return (l2 * a * a - 2 * m * a * b + l1 * b * b) / (2 * det);
}

static void k_charge(hand *h, double *L, double *D, double *P)
{
    double ia = W(h, "loop l1"), ib = W(h, "loop l2"), E = sin_src(0.1, 1, 0.3, h->t);
    double m = 0.45 * sqrt(1.2 * 0.9);
    *L = 1.2 * ia * ia / 2 + 0.9 * ib * ib / 2 + m * ia * ib;
    *D = 0.7 * ia * ia / 2 + 1.6 * ib * ib / 2;
    *P = E * ia;
}

static void k_flux(hand *h, double *L, double *D, double *P)
{
    double l2 = Z(h, "lambda(2)"), l3 = Z(h, "lambda(3)");
    double e2 = W(h, "lambda(2)"), e3 = W(h, "lambda(3)"), E = sin_src(0.1, 1, 0.3, h->t);
    *L = -coupled_wm(1.2, 0.9, 0.45 * sqrt(1.2 * 0.9), l2, l3);
    *D = sq(E - e2) / (2 * 0.7) + e3 * e3 / (2 * 1.6);
    *P = 0;
}

/* The same with a coupling and a primary inductance that move with x(r). */
static const char net_kx[] =
    "kx\n"
    "V1 1 0 SIN(0.1 1 0.3)\n"
    "R1 1 2 0.7\n"
    "L1 2 0 L='1.2+0.3*x(r)'\n"
    "L2 3 0 0.9\n"
    "R2 3 0 1.6\n"
    "K1 L1 L2 '0.5*cos(x(r))'\n"
    "M1 r 0.3\n"
    "S1 r 0 0.8\n"
    "D1 r 0 0.25\n";

static void kx_mech(hand *h, double *L, double *D, double *P)
{
    double x = Z(h, "x(r)"), u = W(h, "x(r)");
    *L += 0.3 * u * u / 2 - 0.8 * x * x / 2;
    *D += 0.25 * u * u / 2;
}

static void kx_charge(hand *h, double *L, double *D, double *P)
{
    double x = Z(h, "x(r)"), ia = W(h, "loop l1"), ib = W(h, "loop l2");
    double E = sin_src(0.1, 1, 0.3, h->t), l1 = 1.2 + 0.3 * x, m = 0.5 * cos(x) * sqrt(l1 * 0.9);
    *L = l1 * ia * ia / 2 + 0.9 * ib * ib / 2 + m * ia * ib;
    *D = 0.7 * ia * ia / 2 + 1.6 * ib * ib / 2;
    *P = E * ia;
    kx_mech(h, L, D, P);
}

static void kx_flux(hand *h, double *L, double *D, double *P)
{
    double x = Z(h, "x(r)"), l2 = Z(h, "lambda(2)"), l3 = Z(h, "lambda(3)");
    double e2 = W(h, "lambda(2)"), e3 = W(h, "lambda(3)"), E = sin_src(0.1, 1, 0.3, h->t);
    double l1 = 1.2 + 0.3 * x;
    *L = -coupled_wm(l1, 0.9, 0.5 * cos(x) * sqrt(l1 * 0.9), l2, l3);
    *D = sq(E - e2) / (2 * 0.7) + e3 * e3 / (2 * 1.6);
    *P = 0;
    kx_mech(h, L, D, P);
}

/* A two-level linkage chain: x(b) = 0.4 cos x(a), x(c) = x(b)^2 + x(a)/2,
 * masses on all three, a spring with rest length and a force on c, a
 * damper between b and a, and a capacitor whose plate is the free node a.
 * The variant j2c puts the plate on c, at the end of the chain. */
#define J2_MECH \
    "M1 a 0.9\n" \
    "Jb b '0.4*cos(x(a))'\n" \
    "Jc c 'x(b)^2+0.5*x(a)'\n" \
    "M2 b 1.3\n" \
    "M3 c 0.7\n" \
    "S1 c 0 2 X0=0.1\n" \
    "D1 b a 0.35\n" \
    "F1 c 0 SIN(0 0.6 0.4)\n" \
    "V1 1 0 SIN(0.5 0.5 0.2)\n" \
    "R1 1 2 1.1\n"
static const char net_j2[] = "j2\n" J2_MECH "C1 2 0 C='0.5*(1+0.4*x(a))'\n";
static const char net_j2c[] = "j2c\n" J2_MECH "C1 2 0 C='0.5*(1+0.4*x(c))'\n";

typedef struct { double xb, ub, xc, uc; } j2_kin;

static j2_kin j2_kinematics(hand *h)
{
    double th = Z(h, "x(a)"), om = W(h, "x(a)");
    j2_kin k;
    k.xb = 0.4 * cos(th);
    k.ub = -0.4 * sin(th) * om;
    k.xc = k.xb * k.xb + 0.5 * th;
    k.uc = 2 * k.xb * k.ub + 0.5 * om;
    return k;
}

/* The capacitor and the rest; `plate` is x(a) or x(c). */
static void j2_common(hand *h, double plate, bool charge, double *L, double *D, double *P)
{
    j2_kin k = j2_kinematics(h);
    double om = W(h, "x(a)"), C = 0.5 * (1 + 0.4 * plate), E = sin_src(0.5, 0.5, 0.2, h->t);
    if (charge) {
        double q = Z(h, "loop r1"), i = W(h, "loop r1");
        *L = -q * q / (2 * C);
        *D = 1.1 * i * i / 2;
        *P = E * i;
    } else {
        double e2 = W(h, "lambda(2)");
        *L = C * e2 * e2 / 2;
        *D = sq(E - e2) / (2 * 1.1);
        *P = 0;
    }
    *L += 0.9 * om * om / 2 + 1.3 * k.ub * k.ub / 2 + 0.7 * k.uc * k.uc / 2 - 2 * sq(k.xc - 0.1) / 2;
    *D += 0.35 * sq(k.ub - om) / 2;
    *P += sin_src(0, 0.6, 0.4, h->t) * k.uc;
}

static void j2_charge(hand *h, double *L, double *D, double *P)
{
    j2_common(h, Z(h, "x(a)"), true, L, D, P);
}

static void j2_flux(hand *h, double *L, double *D, double *P)
{
    j2_common(h, Z(h, "x(a)"), false, L, D, P);
}

static void j2c_charge(hand *h, double *L, double *D, double *P)
{
    j2_common(h, j2_kinematics(h).xc, true, L, D, P);
}

static void j2c_flux(hand *h, double *L, double *D, double *P)
{
    j2_common(h, j2_kinematics(h).xc, false, L, D, P);
}

/* A loudspeaker whose coil acts between the cone and a sprung frame, with
 * a capacitor across the coil.  Charge: tree V1, T1, R1; links L1 (loop
 * L1, T1, V1 backwards, R1) and C1 (loop C1, T1 backwards), so
 * i(T1) = q1' - q2'.  Flux: lambda(1) = integral of E and
 * lambda(3) = T (x(cone) - x(frame)), leaving lambda(2). */
static const char net_spk[] =
    "spk\n"
    "V1 1 0 SIN(0 1.5 0.5)\n"
    "R1 1 2 0.8\n"
    "L1 2 3 0.6\n"
    "T1 3 0 cone frame 1.4\n"
    "C1 3 0 0.7\n"
    "M1 cone 1.2\n"
    "M2 frame 2.1\n"
    "S1 cone frame 3 X0=0.05\n"
    "D1 cone frame 0.3\n"
    "S2 frame 0 1.7\n";

static void spk_mech(hand *h, double *L, double *D, double *P)
{
    double xc = Z(h, "x(cone)"), xf = Z(h, "x(frame)"), uc = W(h, "x(cone)"), uf = W(h, "x(frame)");
    *L += 1.2 * uc * uc / 2 + 2.1 * uf * uf / 2 - 3 * sq(xc - xf - 0.05) / 2 - 1.7 * xf * xf / 2;
    *D += 0.3 * sq(uc - uf) / 2;
}

static void spk_charge(hand *h, double *L, double *D, double *P)
{
    double q2 = Z(h, "loop c1"), i1 = W(h, "loop l1"), i2 = W(h, "loop c1");
    double xc = Z(h, "x(cone)"), xf = Z(h, "x(frame)"), E = sin_src(0, 1.5, 0.5, h->t);
    *L = 0.6 * i1 * i1 / 2 - q2 * q2 / (2 * 0.7) + 1.4 * (i1 - i2) * (xc - xf);
    *D = 0.8 * i1 * i1 / 2;
    *P = E * i1;
    spk_mech(h, L, D, P);
}

static void spk_flux(hand *h, double *L, double *D, double *P)
{
    double l2 = Z(h, "lambda(2)"), e2 = W(h, "lambda(2)");
    double l3 = 1.4 * (Z(h, "x(cone)") - Z(h, "x(frame)")), e3 = 1.4 * (W(h, "x(cone)") - W(h, "x(frame)"));
    double E = sin_src(0, 1.5, 0.5, h->t);
    *L = -sq(l2 - l3) / (2 * 0.6) + 0.7 * e3 * e3 / 2;
    *D = sq(E - e2) / (2 * 0.8);
    *P = 0;
    spk_mech(h, L, D, P);
}

/* A coil on a linkage-defined node, fed by a current source through R1:
 * x(p) = 0.3 sin x(th).  Charge: tree R1, T1; L1 closes the loop L1, T1,
 * R1 backwards; the source's loop runs I1 (0->1) and R1 (1->0), so
 * i(R1) = I - q'.  Flux: lambda(2) = 0.9 x(p). */
static const char net_coilj[] =
    "coilj\n"
    "I1 0 1 SIN(0.2 0.5 0.3)\n"
    "R1 1 0 1.3\n"
    "L1 1 2 0.5\n"
    "T1 2 0 p 0 0.9\n"
    "M1 th 0.4\n"
    "Jp p '0.3*sin(x(th))'\n"
    "M2 p 1.1\n"
    "S1 th 0 0.7 X0=0.3\n"
    "D1 th 0 0.2\n";

static void coilj_mech(hand *h, double *L, double *D, double *P)
{
    double th = Z(h, "x(th)"), om = W(h, "x(th)"), up = 0.3 * cos(th) * om;
    *L += 0.4 * om * om / 2 + 1.1 * up * up / 2 - 0.7 * sq(th - 0.3) / 2;
    *D += 0.2 * om * om / 2;
}

static void coilj_charge(hand *h, double *L, double *D, double *P)
{
    double i = W(h, "loop l1"), xp = 0.3 * sin(Z(h, "x(th)"));
    double Is = sin_src(0.2, 0.5, 0.3, h->t);
    *L = 0.5 * i * i / 2 + 0.9 * i * xp;
    *D = 1.3 * sq(Is - i) / 2;
    *P = 0;
    coilj_mech(h, L, D, P);
}

static void coilj_flux(hand *h, double *L, double *D, double *P)
{
    double l1 = Z(h, "lambda(1)"), e1 = W(h, "lambda(1)"), l2 = 0.9 * 0.3 * sin(Z(h, "x(th)"));
    double Is = sin_src(0.2, 0.5, 0.3, h->t);
    *L = -sq(l1 - l2) / (2 * 0.5);
    *D = e1 * e1 / (2 * 1.3);
    *P = -Is * (0 - e1);
    coilj_mech(h, L, D, P);
}

/* Three coils in a chain of couplings, K2 moving with x(r), and the third
 * coil hanging from the source's node, so that its flux in the flux
 * formulation carries the source's integral.  Charge: the tree takes V1,
 * R2, R3 and R1 (resistors before inductors); L1 closes the loop L1, V1
 * backwards, R1; L2 the loop L2, R2 backwards; L3 (1->4) the loop L3,
 * R3, V1 backwards.  So i(V1) = -(q1' + q3'), i(R1) = q1',
 * i(R2) = -q2', i(R3) = q3'. */
static const char net_k3[] =
    "k3\n"
    "V1 1 0 SIN(0.1 1 0.3)\n"
    "R1 1 2 0.7\n"
    "L1 2 0 1.2\n"
    "L2 3 0 0.9\n"
    "R2 3 0 1.6\n"
    "L3 1 4 1.5\n"
    "R3 4 0 0.8\n"
    "K1 L1 L2 0.45\n"
    "K2 L2 L3 '0.3+0.2*x(r)'\n"
    "M1 r 0.6\n"
    "S1 r 0 1.4\n";

/* The inductance matrix of k3 at x. */
static void k3_lmat(double x, double m[3][3])
{
    double l[3] = {1.2, 0.9, 1.5};
    memset(m, 0, 9 * sizeof(double));
    for (int i = 0; i < 3; i++) m[i][i] = l[i];
    m[0][1] = m[1][0] = 0.45 * sqrt(l[0] * l[1]);
    m[1][2] = m[2][1] = (0.3 + 0.2 * x) * sqrt(l[1] * l[2]);
}

static double det3(double m[3][3])
{
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) - m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0])
         + m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

static void k3_mech(hand *h, double *L)
{
    double x = Z(h, "x(r)"), u = W(h, "x(r)");
    *L += 0.6 * u * u / 2 - 1.4 * x * x / 2;
}

static void k3_charge(hand *h, double *L, double *D, double *P)
{
    double m[3][3], i[3] = {W(h, "loop l1"), W(h, "loop l2"), W(h, "loop l3")};
    k3_lmat(Z(h, "x(r)"), m);
    *L = 0;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) *L += m[a][b] * i[a] * i[b] / 2;
    *D = 0.7 * i[0] * i[0] / 2 + 1.6 * i[1] * i[1] / 2 + 0.8 * i[2] * i[2] / 2;
    *P = sin_src(0.1, 1, 0.3, h->t) * (i[0] + i[2]);
    k3_mech(h, L);
}

/* W_m = lam' Lmat^-1 lam / 2, with Lmat^-1 lam by Cramer's rule. */
static void k3_flux(hand *h, double *L, double *D, double *P)
{
    double m[3][3], y[3];
    double lam[3] = {Z(h, "lambda(2)"), Z(h, "lambda(3)"), sin_int(0.1, 1, 0.3, h->t) - Z(h, "lambda(4)")};
    k3_lmat(Z(h, "x(r)"), m);
    double det = det3(m);
    for (int k = 0; k < 3; k++) {
        double mk[3][3];
        memcpy(mk, m, sizeof mk);
        for (int r = 0; r < 3; r++) mk[r][k] = lam[r];
        y[k] = det3(mk) / det;
    }
    double E = sin_src(0.1, 1, 0.3, h->t), e2 = W(h, "lambda(2)"), e3 = W(h, "lambda(3)"), e4 = W(h, "lambda(4)");
    *L = -(lam[0] * y[0] + lam[1] * y[1] + lam[2] * y[2]) / 2;
    *D = sq(E - e2) / (2 * 0.7) + e3 * e3 / (2 * 1.6) + e4 * e4 / (2 * 0.8);
    *P = 0;
    k3_mech(h, L);
}

/* --------------------------------------------------------------- driver */

typedef struct fcase {
    const char *label;
    const char *net;
    emn_form_kind kind;
    int n, ne, nm;
    bool linear;
    hand_fn fn;
    const char *todo;       /* a known engine bug: run apart, report as TODO */
} fcase;

static void hand_eval(const fcase *fc, const emn_form *f, const double *z, const double *w, double t,
                      double *L, double *D, double *P, hand *hh)
{
    hand h = {f, z, w, t, 0, ""};
    *L = *D = *P = 0;
    fc->fn(&h, L, D, P);
    if (hh) *hh = h;
}

/* Central difference with one Richardson step: error O(h^4). */
#define FD_STEP 1e-3

typedef struct fd_ctx {
    const fcase *fc;
    const emn_form *f;
    double *z, *w, t;
    int which;          /* 0: L, 1: P - D */
} fd_ctx;

static double hand_value(fd_ctx *c)
{
    double L, D, P;
    hand_eval(c->fc, c->f, c->z, c->w, c->t, &L, &D, &P, NULL);
    return c->which == 0 ? L : P - D;
}

static double fd_hand(fd_ctx *c, double *x)
{
    double x0 = *x, h = FD_STEP * (1 + fabs(x0)), g[4];
    const double off[4] = {h, -h, h / 2, -h / 2};
    for (int k = 0; k < 4; k++) {
        *x = x0 + off[k];
        g[k] = hand_value(c);
    }
    *x = x0;
    double d1 = (g[0] - g[1]) / (2 * h), d2 = (g[2] - g[3]) / h;
    return (4 * d2 - d1) / 3;
}

/* r(w) = a p((w - hz)/a, w) + hp - F((w - hz)/a, w) */
static void residual(emn_form *f, const double *w, double a, const double *hz, const double *hp,
                     double *zt, double *pt, double *Ft, double *r)
{
    int n = f->n;
    for (int j = 0; j < n; j++) zt[j] = (w[j] - hz[j]) / a;
    emn_form_eval(f, zt, w, pt, Ft, NULL, NULL);
    for (int j = 0; j < n; j++) r[j] = a * pt[j] + hp[j] - Ft[j];
}

static double relerr(double got, double want)
{
    return fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);
}

#define NPOINTS 6
#define TOL 1e-6

static void run_case(const fcase *fc)
{
    const char *fname = fc->kind == EMN_FORM_CHARGE ? "charge" : "flux";
    emn_circuit *c = rd(fc->net);
    if (!c || emn_sim_prepare(c, &d) < 0) {
        ok(0, "%s %s: reads", fc->label, fname);
        show_msgs();
        emn_netlist_free(&c);
        return;
    }
    emn_form *f = emn_form_build(c, fc->kind, &d);
    if (!ok(f != NULL, "%s %s: builds", fc->label, fname)) {
        show_msgs();
        emn_netlist_free(&c);
        return;
    }
    if (!ok(f->n == fc->n && f->ne == fc->ne && f->nm == fc->nm,
            "%s %s: %d coordinates (%d electrical, %d mechanical)", fc->label, fname, fc->n, fc->ne, fc->nm))
        printf("# got %d (%d electrical, %d mechanical)\n", f->n, f->ne, f->nm);
    int cne = -1, cnm = -1, cn = emn_form_count(c, fc->kind, &cne, &cnm);
    ok(cn == fc->n && cne == fc->ne && cnm == fc->nm, "%s %s: emn_form_count agrees", fc->label, fname);
    int both[2] = {-1, -1};
    emn_form_kind other = fc->kind == EMN_FORM_FLUX ? EMN_FORM_CHARGE : EMN_FORM_FLUX;
    ok(emn_form_count_both(c, &both[0], &both[1]) == 0 && both[fc->kind == EMN_FORM_FLUX] == fc->n &&
           both[other == EMN_FORM_FLUX] == emn_form_count(c, other, NULL, NULL),
       "%s %s: emn_form_count_both agrees", fc->label, fname);
    int order_ok = 1;
    for (int j = 0; j < f->n; j++)
        if ((f->coord[j].kind == EMN_COORD_MECH) != (j >= f->ne)) order_ok = 0;
    ok(order_ok, "%s %s: electrical coordinates first, then mechanical", fc->label, fname);
    ok(emn_form_is_linear(f) == fc->linear, "%s %s: %s", fc->label, fname,
       fc->linear ? "linear (constant Newton matrix)" : "nonlinear");

    int n = f->n;
    double *z = calloc((size_t)n + 1, sizeof *z), *w = calloc((size_t)n + 1, sizeof *w);
    double *p = calloc((size_t)n + 1, sizeof *p), *F = calloc((size_t)n + 1, sizeof *F);
    double *hz = calloc((size_t)n + 1, sizeof *hz), *hp = calloc((size_t)n + 1, sizeof *hp);
    double *zt = calloc((size_t)n + 1, sizeof *zt), *pt = calloc((size_t)n + 1, sizeof *pt);
    double *Ft = calloc((size_t)n + 1, sizeof *Ft);
    double *rp = calloc((size_t)n + 1, sizeof *rp), *rm = calloc((size_t)n + 1, sizeof *rm);
    double *rp2 = calloc((size_t)n + 1, sizeof *rp2), *rm2 = calloc((size_t)n + 1, sizeof *rm2);
    double *Jd = calloc((size_t)(n * n) + 1, sizeof *Jd);

    /* every coordinate the hand derivation uses exists, and no more */
    hand h0;
    double L0, D0, P0;
    hand_eval(fc, f, z, w, 0, &L0, &D0, &P0, &h0);
    if (!ok(h0.missing == 0, "%s %s: the coordinates are those derived by hand", fc->label, fname)) {
        printf("# no coordinate '%s'; emnet has:", h0.missing_name);
        for (int j = 0; j < n; j++)
            printf(" %s%s%s", cname(f, j), f->coord[j].kind == EMN_COORD_LOOP ? "=loop " : "",
                   f->coord[j].kind == EMN_COORD_LOOP ? c->elems.v[f->coord[j].elem].name : "");
        printf("\n");
    }

    double worst_p = 0, worst_F = 0, worst_J = 0;
    int wp = -1, wf = -1, wji = -1, wjj = -1, bad_eval = 0;
    double wp_got = 0, wp_want = 0, wf_got = 0, wf_want = 0, wj_got = 0, wj_want = 0;
    for (int pt_i = 0; pt_i < NPOINTS; pt_i++) {
        double t = urand(0.05, 3);
        for (int j = 0; j < n; j++) {
            z[j] = urand(-0.4, 0.4);
            w[j] = urand(-1, 1);
        }
        emn_form_set_time(f, t);
        if (emn_form_eval(f, z, w, p, F, NULL, NULL) != 0) bad_eval++;
        fd_ctx fx = {fc, f, z, w, t, 0};
        for (int j = 0; j < n; j++) {
            fx.which = 0;
            double pw = fd_hand(&fx, &w[j]);
            double Fw = fd_hand(&fx, &z[j]);
            fx.which = 1;
            Fw += fd_hand(&fx, &w[j]);
            double e = relerr(p[j], pw);
            if (e > worst_p) { worst_p = e; wp = j; wp_got = p[j]; wp_want = pw; }
            e = relerr(F[j], Fw);
            if (e > worst_F) { worst_F = e; wf = j; wf_got = F[j]; wf_want = Fw; }
        }

        /* Newton matrix at a random leading coefficient and history */
        double a = urand(0.5, 4);
        for (int j = 0; j < n; j++) {
            hz[j] = w[j] - a * z[j];   /* so that z(w) = z */
            hp[j] = urand(-1, 1);
        }
        if (emn_form_jacobian(f, z, w, a) != 0) bad_eval++;
        memset(Jd, 0, (size_t)(n * n) * sizeof *Jd);
        for (int j = 0; j < n; j++)
            for (int k = f->J.Ap[j]; k < f->J.Ap[j + 1]; k++) Jd[f->J.Ai[k] * n + j] = f->J.Ax[k];
        for (int k = 0; k < n; k++) {
            double w0 = w[k], hs = FD_STEP * (1 + fabs(w0));
            w[k] = w0 + hs;     residual(f, w, a, hz, hp, zt, pt, Ft, rp);
            w[k] = w0 - hs;     residual(f, w, a, hz, hp, zt, pt, Ft, rm);
            w[k] = w0 + hs / 2; residual(f, w, a, hz, hp, zt, pt, Ft, rp2);
            w[k] = w0 - hs / 2; residual(f, w, a, hz, hp, zt, pt, Ft, rm2);
            w[k] = w0;
            for (int i = 0; i < n; i++) {
                double d1 = (rp[i] - rm[i]) / (2 * hs), d2 = (rp2[i] - rm2[i]) / hs;
                double want = (4 * d2 - d1) / 3;
                double e = relerr(Jd[i * n + k], want);
                if (e > worst_J) { worst_J = e; wji = i; wjj = k; wj_got = Jd[i * n + k]; wj_want = want; }
            }
        }
    }
    ok(bad_eval == 0, "%s %s: evaluation is finite", fc->label, fname);
    if (!ok(worst_p <= TOL, "%s %s: p = dL/dw at %d random states", fc->label, fname, NPOINTS))
        printf("# worst at %s: got %.12g, hand %.12g\n", cname(f, wp), wp_got, wp_want);
    if (!ok(worst_F <= TOL, "%s %s: F = dL/dz + dP/dw - dD/dw at %d random states", fc->label, fname,
            NPOINTS))
        printf("# worst at %s: got %.12g, hand %.12g\n", cname(f, wf), wf_got, wf_want);
    if (!ok(worst_J <= TOL, "%s %s: Newton matrix = dr/dw at %d random states", fc->label, fname, NPOINTS))
        printf("# worst at (%s, %s): got %.12g, differences %.12g\n", cname(f, wji),
               cname(f, wjj), wj_got, wj_want);

    free(z); free(w); free(p); free(F); free(hz); free(hp); free(zt); free(pt); free(Ft);
    free(rp); free(rm); free(rp2); free(rm2); free(Jd);
    emn_form_free(&f);
    emn_netlist_free(&c);
}

static const fcase cases[] = {
    {"rc", net_rc, EMN_FORM_CHARGE, 1, 1, 0, true, rc_charge, NULL},
    {"rc", net_rc, EMN_FORM_FLUX, 1, 1, 0, true, rc_flux, NULL},
    {"preumont", net_preumont, EMN_FORM_CHARGE, 1, 1, 0, true, preumont_charge, NULL},
    {"preumont", net_preumont, EMN_FORM_FLUX, 3, 3, 0, true, preumont_flux, NULL},
    {"lc", net_lc, EMN_FORM_CHARGE, 2, 2, 0, true, lc_charge, NULL},
    {"lc", net_lc, EMN_FORM_FLUX, 1, 1, 0, true, lc_flux, NULL},
    {"cx", net_cx, EMN_FORM_CHARGE, 2, 1, 1, false, cx_charge, NULL},
    {"cx", net_cx, EMN_FORM_FLUX, 2, 1, 1, false, cx_flux, NULL},
    {"lx", net_lx, EMN_FORM_CHARGE, 3, 1, 2, false, lx_charge, NULL},
    {"lx", net_lx, EMN_FORM_FLUX, 3, 1, 2, false, lx_flux, NULL},
    {"k", net_k, EMN_FORM_CHARGE, 2, 2, 0, true, k_charge, NULL},
    {"k", net_k, EMN_FORM_FLUX, 2, 2, 0, true, k_flux, NULL},
    {"kx", net_kx, EMN_FORM_CHARGE, 3, 2, 1, false, kx_charge, NULL},
    {"kx", net_kx, EMN_FORM_FLUX, 3, 2, 1, false, kx_flux, NULL},
    {"j2", net_j2, EMN_FORM_CHARGE, 2, 1, 1, false, j2_charge, NULL},
    {"j2", net_j2, EMN_FORM_FLUX, 2, 1, 1, false, j2_flux, NULL},
    {"spk", net_spk, EMN_FORM_CHARGE, 4, 2, 2, true, spk_charge, NULL},
    {"spk", net_spk, EMN_FORM_FLUX, 3, 1, 2, true, spk_flux, NULL},
    {"coilj", net_coilj, EMN_FORM_CHARGE, 2, 1, 1, false, coilj_charge, NULL},
    {"coilj", net_coilj, EMN_FORM_FLUX, 2, 1, 1, false, coilj_flux, NULL},
    {"k3", net_k3, EMN_FORM_CHARGE, 4, 3, 1, false, k3_charge, NULL},
    {"k3", net_k3, EMN_FORM_FLUX, 4, 3, 1, false, k3_flux, NULL},
    {"j2c", net_j2c, EMN_FORM_CHARGE, 2, 1, 1, false, j2c_charge, NULL},
    {"j2c", net_j2c, EMN_FORM_FLUX, 2, 1, 1, false, j2c_flux, NULL},
};

/* A case that trips a known engine bug may crash: run it in a child, and
 * report one TODO line with the child's failures as diagnostics. */
static void run_isolated(const fcase *fc)
{
    const char *fname = fc->kind == EMN_FORM_CHARGE ? "charge" : "flux";
    int fd[2];
    fflush(stdout);
    if (pipe(fd) < 0) {
        ok_todo(0, fc->todo, "could not run apart");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 1);
        dup2(fd[1], 2);
        close(fd[1]);
        run_case(fc);
        fflush(stdout);
        _exit(tap_failed ? 1 : 0);
    }
    close(fd[1]);
    emn_buf out = {0};
    emn_buf_puts(&out, "");
    char chunk[4096];
    ssize_t got;
    while ((got = read(fd[0], chunk, sizeof chunk - 1)) > 0) {
        chunk[got] = 0;
        emn_buf_puts(&out, chunk);
    }
    close(fd[0]);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0) st = -1;
    bool pass = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    char name[256];
    snprintf(name, sizeof name, "%s %s: against the hand Lagrangian", fc->label, fname);
    ok_todo(pass, fc->todo, name);
    if (pass) {
        emn_buf_free(&out);
        return;
    }
    if (pid > 0 && WIFSIGNALED(st)) printf("# the case died of signal %d\n", WTERMSIG(st));
    int shown = 0;
    for (char *line = strtok(out.v, "\n"); line && shown < 12; line = strtok(NULL, "\n"))
        if (!strncmp(line, "not ok", 6) || !strncmp(line, "# ", 2) || strstr(line, "ERROR:") ||
            strstr(line, "SUMMARY:")) {
            printf("# | %s\n", line);
            shown++;
        }
    emn_buf_free(&out);
}

/* ------------------------------------------------------ invalid circuits */

typedef struct bad_case {
    const char *label;
    const char *net;
    const char *msg;        /* the exact error, in both formulations */
    const char *todo;       /* a known engine bug */
} bad_case;

static const bad_case bad_cases[] = {
    {"cutset of two current sources",
     "cutset\nR1 1 0 1\nI1 1 2 1m\nI2 2 0 1m\n",
     "current sources i1 and i2 form a cutset: no other element connects node '1' to node '2', "
     "so Kirchhoff's current law fixes their current", NULL},
    {"node fed only by a current source",
     "lone\nR1 1 0 1\nC1 1 0 1\nI1 3 0 1\n",
     "current source i1 forms a cutset: no other element connects node '3' to node '0', "
     "so Kirchhoff's current law fixes their current", NULL},
    {"two voltage sources in parallel",
     "vloop\nV1 1 0 1\nV2 1 0 2\nR1 1 0 1\n",
     "voltage sources and coils v1 and v2 form a loop: their voltages over-determine it", NULL},
    {"a voltage source across a coil",
     "vtloop\nV1 1 0 1\nT1 1 0 m 0 2\nM1 m 1\nR1 1 0 1\n",
     "voltage sources and coils v1 and t1 form a loop: the sources would set the coils' velocities, "
     "which emnet does not take (put the coil's resistance or inductance in series with it)", NULL},
    {"a loop of two sources and a coil",
     "vvtloop\nR1 2 0 1\nV1 1 0 1\nV2 2 1 1\nT1 2 0 m 0 2\nM1 m 1\n",
     /* named in the order the loop runs: V2 (2->1), V1 (1->0), T1 (0->2) */
     "voltage sources and coils v2, v1 and t1 form a loop: the sources would set the coils' velocities, "
     "which emnet does not take (put the coil's resistance or inductance in series with it)", NULL},
    {"a loop of two sources and a coil, resistor last",
     "vvtloop2\nV1 1 0 1\nV2 2 1 1\nT1 2 0 m 0 2\nM1 m 1\nR1 2 0 1\n",
     "voltage sources and coils v2, v1 and t1 form a loop: the sources would set the coils' velocities, "
     "which emnet does not take (put the coil's resistance or inductance in series with it)", NULL},
    {"mechanical node moved only by a force",
     "freeforce\nV1 1 0 1\nR1 1 2 1\nC1 2 0 1\nF1 m 0 1\n",
     "nothing stores energy or dissipates at mechanical node 'm': only sources act on it", NULL},
};

static void run_bad(const bad_case *bc)
{
    for (int k = 0; k < 2; k++) {
        emn_form_kind kind = k ? EMN_FORM_FLUX : EMN_FORM_CHARGE;
        const char *fname = k ? "flux" : "charge";
        emn_circuit *c = rd(bc->net);
        if (!c || emn_sim_prepare(c, &d) < 0) {
            ok(0, "%s (%s): reads", bc->label, fname);
            show_msgs();
            emn_netlist_free(&c);
            continue;
        }
        int before = d.nerrors;
        emn_form *f = emn_form_build(c, kind, &d);
        ok(f == NULL && d.nerrors > before, "%s (%s): refused", bc->label, fname);
        char name[256];
        snprintf(name, sizeof name, "%s (%s): the message names the elements", bc->label, fname);
        if (!ok_todo(has_error(bc->msg), bc->todo, name)) {
            printf("# want: %s\n", bc->msg);
            show_msgs();
        }
        /* counting looks at the topology only; storage needs the terms */
        if (strncmp(bc->msg, "nothing stores", 14) != 0)
        {
            int nq, nf;
            ok(emn_form_count(c, kind, NULL, NULL) == -1, "%s (%s): emn_form_count says invalid", bc->label,
               fname);
            ok(emn_form_count_both(c, &nq, &nf) == -1, "%s (%s): emn_form_count_both says invalid", bc->label,
               fname);
        }
        emn_form_free(&f);
        emn_netlist_free(&c);
    }
}

/* emn_form_value_slots: which branches size a coordinate's value.  Flux
 * formulation: node a is read by L1 alone, b by L1 and L2 (C1 and R2 read
 * its rate), c by no inductor; d by L3, and by C(x) only through its rate
 * (C(x) v^2 / 2 reads the plate's value, not the node's), so L3 sizes it.
 * Charge formulation: each loop through a linear capacitor is sized by
 * those capacitors' charges; a loop through C3(x), whose q^2 / (2 C(x))
 * reads the loop's charge, is not. */
static void value_slots(void)
{
    static const char net[] =
        "vs\n"
        "V1 in 0 1\n"
        "R1 in a 1\n"
        "L1 a b 1m\n"
        "C1 b 0 1u\n"
        "L2 b 0 2m\n"
        "R2 b c 1\n"
        "C2 c 0 1u\n"
        "R3 c d 1\n"
        "L3 d 0 1m\n"
        "C3 d 0 C='1u/(1-x(m))'\n"
        "M1 m 1\n"
        "S1 m 0 1\n";
    emn_circuit *c = rd(net);
    emn_form *f = c ? emn_form_build(c, EMN_FORM_FLUX, &d) : NULL;
    if (!ok(f != NULL, "value_slots: flux formulation builds")) {
        show_msgs();
        emn_netlist_free(&c);
        return;
    }
    int *ptr = emn_xcalloc((size_t)f->n + 2, sizeof(int)), *sl = NULL;
    emn_form_value_slots(f, ptr, &sl);
    const char *names[] = {"lambda(a)", "lambda(b)", "lambda(c)", "lambda(d)", "x(m)"};
    const int want[] = {1, 2, 0, 1, 0};
    for (int i = 0; i < 5; i++) {
        int j = coord_index(f, names[i]);
        ok(j >= 0 && ptr[j + 1] - ptr[j] == want[i], "value_slots flux: %s is sized by %d branches (got %d)",
           names[i], want[i], j >= 0 ? ptr[j + 1] - ptr[j] : -1);
    }
    /* the slot of a's branch is L1's flux linkage lambda(a) - lambda(b) */
    int ja = coord_index(f, "lambda(a)"), jb = coord_index(f, "lambda(b)");
    if (ja >= 0 && jb >= 0 && ptr[ja + 1] > ptr[ja]) {
        double *z = emn_xcalloc((size_t)f->n + 1, sizeof(double));
        z[ja] = 0.7;
        z[jb] = 0.25;
        emn_form_set_time(f, 0);
        ok_close(emn_form_slot_value(f, sl[ptr[ja]], z), 0.45, 1e-15,
                 "value_slots flux: L1's slot is lambda(a) - lambda(b)");
        free(z);
    }
    free(sl);
    free(ptr);
    emn_form_free(&f);

    f = emn_form_build(c, EMN_FORM_CHARGE, &d);
    if (ok(f != NULL, "value_slots: charge formulation builds")) {
        ptr = emn_xcalloc((size_t)f->n + 2, sizeof(int));
        sl = NULL;
        emn_form_value_slots(f, ptr, &sl);
        /* a loop is sized exactly when some linear capacitor reads it and
         * C3(x) does not */
        int sized = 0, through_c3 = 0;
        for (int j = 0; j < f->ne; j++) {
            if (ptr[j + 1] > ptr[j]) sized++;
            for (int k = ptr[j]; k < ptr[j + 1]; k++)
                ok(f->slots.v[sl[k]].nc >= 1, "value_slots charge: %s's sizing branch reads coordinates",
                   cname(f, j));
        }
        for (int i = 0; i < f->terms.n; i++) {
            const emn_term *tm = &f->terms.v[i];
            if (strcmp(c->elems.v[tm->elem].name, "c3") != 0) continue;
            const emn_lmap *m = &f->slots.v[tm->slot[0]];
            for (int q = 0; q < m->nc; q++) {
                through_c3++;
                int j = emn_lmap_ci(m)[q];
                ok(ptr[j + 1] == ptr[j], "value_slots charge: %s, read by C3(x), is not sized",
                   cname(f, j));
            }
        }
        ok(sized > 0 && through_c3 > 0, "value_slots charge: some loops sized (%d), some through C3 (%d)", sized,
           through_c3);
        free(sl);
        free(ptr);
    } else {
        show_msgs();
    }
    emn_form_free(&f);
    emn_netlist_free(&c);
}

/* emn_form_momentum_const: which coordinates' momenta are a constant, so
 * that their equations are algebraic (the integrator's history leaves
 * their past F out).  Charge (tree V1, T1, C1, R2): loop R1 (V1, R1,
 * C1(x)) has only a capacitor; L2's (L2, C1, R2) has L2, R3's (R3, T1,
 * C1) the moving coil T1, whose momentum T x reads the plate.  Flux: node
 * b has no capacitor; a has C1(x).  In both, m has a mass, k (a spring
 * and a damper) none. */
static void momentum_const(void)
{
    static const char net[] =
        "mc\n"
        "V1 in 0 1\n"
        "R1 in a 1\n"
        "C1 a 0 C='1u/(1-x(m))'\n"
        "R2 a b 1\n"
        "L2 b 0 1m\n"
        "R3 a c 1\n"
        "T1 c 0 m 0 2\n"
        "M1 m 1\n"
        "S1 m 0 1\n"
        "S2 m k 3\n"
        "D2 k 0 0.5\n";
    static const struct { emn_form_kind kind; const char *name; bool konst; } want[] = {
        {EMN_FORM_CHARGE, "loop r1", true},  {EMN_FORM_CHARGE, "loop l2", false},
        {EMN_FORM_CHARGE, "loop r3", false}, {EMN_FORM_CHARGE, "x(m)", false},
        {EMN_FORM_CHARGE, "x(k)", true},     {EMN_FORM_FLUX, "lambda(a)", false},
        {EMN_FORM_FLUX, "lambda(b)", true},  {EMN_FORM_FLUX, "x(m)", false},
        {EMN_FORM_FLUX, "x(k)", true},
    };
    emn_circuit *c = rd(net);
    for (int form = 0; form < 2; form++) {
        emn_form_kind kind = form ? EMN_FORM_FLUX : EMN_FORM_CHARGE;
        const char *fname = form ? "flux" : "charge";
        emn_form *f = c ? emn_form_build(c, kind, &d) : NULL;
        if (!ok(f != NULL, "momentum_const: %s formulation builds", fname)) {
            show_msgs();
            continue;
        }
        bool *konst = emn_xcalloc((size_t)f->n + 1, sizeof(bool));
        emn_form_momentum_const(f, konst);
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            if (want[i].kind != kind) continue;
            int j = coord_index(f, want[i].name);
            ok(j >= 0 && konst[j] == want[i].konst, "momentum_const %s: %s's momentum is %s", fname,
               want[i].name, want[i].konst ? "a constant" : "not a constant");
        }
        free(konst);
        emn_form_free(&f);
    }
    emn_netlist_free(&c);
}

/* The same for AddressSanitizer builds, whose allocator fills with 0xbe. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "malloc_fill_byte=0"; }

/* emn_form_duals (a linear term's p and F from coefficients evaluated
 * once) against the sum of every term's own program, emn_form_term_pF,
 * at a random state and time: circuits with coils, couplings, C(x),
 * L(x), a moving coil and linkages, in both formulations. */
static void duals(void)
{
    const char *nets[] = {net_preumont, net_cx, net_lx, net_k, net_kx, net_j2, net_spk, net_coilj, net_k3};
    const char *names[] = {"preumont", "cx", "lx", "k", "kx", "j2", "spk", "coilj", "k3"};
    for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++) {
        emn_circuit *c = rd(nets[i]);
        for (int kind = 0; c && kind < 2; kind++) {
            emn_form *f = emn_form_build(c, kind ? EMN_FORM_FLUX : EMN_FORM_CHARGE, &d);
            if (!f) continue;
            int n = f->n, ns = f->slots.n;
            double *z = emn_xcalloc((size_t)n + 1, sizeof(double)), *w = emn_xcalloc((size_t)n + 1, sizeof(double));
            double *pi = emn_xcalloc((size_t)ns + 1, sizeof(double)), *Fs = emn_xcalloc((size_t)ns + 1, sizeof(double));
            double *pw = emn_xcalloc((size_t)ns + 1, sizeof(double)), *Fw = emn_xcalloc((size_t)ns + 1, sizeof(double));
            double worst = 0;
            for (int round = 0; round < 3; round++) {
                for (int j = 0; j < n; j++) {
                    z[j] = urand(-0.3, 0.3);
                    w[j] = urand(-2, 2);
                }
                emn_form_set_time(f, urand(0, 3));
                memset(pi, 0, (size_t)ns * sizeof(double));
                memset(Fs, 0, (size_t)ns * sizeof(double));
                memset(pw, 0, (size_t)ns * sizeof(double));
                memset(Fw, 0, (size_t)ns * sizeof(double));
                emn_form_duals(f, z, w, pi, Fs);
                for (int t = 0; t < f->terms.n; t++) {
                    const emn_term *tm = &f->terms.v[t];
                    const double *pF = emn_form_term_pF(f, tm, z, w);
                    for (int a = 0; a < tm->m; a++) {
                        pw[tm->slot[a]] += pF[a];
                        Fw[tm->slot[a]] += pF[tm->m + a];
                    }
                }
                for (int sl = 0; sl < ns; sl++) {
                    worst = fmax(worst, fabs(pi[sl] - pw[sl]) / (1e-300 + fmax(1, fabs(pw[sl]))));
                    worst = fmax(worst, fabs(Fs[sl] - Fw[sl]) / (1e-300 + fmax(1, fabs(Fw[sl]))));
                }
            }
            ok(worst < 1e-13, "duals %s %s: every slot's p and F as the terms' programs give them (%.2g)",
               names[i], kind ? "flux" : "charge", worst);
            free(z); free(w); free(pi); free(Fs); free(pw); free(Fw);
            emn_form_free(&f);
        }
        emn_netlist_free(&c);
    }
}

/* The Newton matrix's pattern, counted by hand: three electrostatic
 * actuators (Rk, Ck(x(pk)) and their plates) on one supply.  In the
 * charge formulation the tree from ground takes V1 and the Ck, so loop k
 * closed by Rk runs Rk, Ck, V1: the source's voltage is a time part, and
 * loop k meets only itself and x(pk), 4 entries an actuator.  A resistor
 * in series with the supply lies in every loop and couples each pair:
 * 9 loop entries and the same 6 with the plates.  The matrix's values
 * against differences of the residual are run_case's. */
static void pattern(void)
{
    static const char *const actuator =
        "R%d in t%d 1k\n"
        "C%d t%d 0 C='1p/(2u - x(p%d))'\n"
        "M%d p%d 1n\n"
        "S%d p%d 0 5\n"
        "D%d p%d 0 1u\n";
    for (int shared = 0; shared < 2; shared++) {
        char text[2048];
        int len = snprintf(text, sizeof text, "actuators\n%s", shared ? "V1 src 0 PWL(0 0 1 1)\nR0 src in 50\n"
                                                                      : "V1 in 0 PWL(0 0 1 1)\n");
        for (int k = 1; k <= 3; k++)
            len += snprintf(text + len, sizeof text - (size_t)len, actuator, k, k, k, k, k, k, k, k, k, k, k);
        emn_circuit *c = rd(text);
        emn_form *f = c ? emn_form_build(c, EMN_FORM_CHARGE, &d) : NULL;
        if (!ok(f != NULL, "pattern %s: charge formulation builds", shared ? "shared R0" : "one supply")) {
            show_msgs();
            emn_netlist_free(&c);
            continue;
        }
        int q[3], x[3], found = 0;
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "loop r%d", k + 1);
            q[k] = coord_index(f, name);
            snprintf(name, sizeof name, "x(p%d)", k + 1);
            x[k] = coord_index(f, name);
            found += q[k] >= 0 && x[k] >= 0;
        }
        ok(f->n == 6 && found == 3, "pattern %s: loops closed by r1..r3 and x(p1..p3)",
           shared ? "shared R0" : "one supply");
        ok(f->J.nnz == (shared ? 18 : 12), "pattern %s: %d entries (%d by hand)", shared ? "shared R0" : "one supply",
           f->J.nnz, shared ? 18 : 12);
        int wrong = 0;
        for (int a = 0; a < 3 && found == 3; a++)
            for (int b = 0; b < 3; b++) {
                bool meet_qq = shared || a == b, meet_qx = a == b;
                wrong += (emn_sparse_find(&f->J, q[a], q[b]) >= 0) != meet_qq;
                wrong += (emn_sparse_find(&f->J, q[a], x[b]) >= 0) != meet_qx;
                wrong += (emn_sparse_find(&f->J, x[a], q[b]) >= 0) != meet_qx;
                wrong += (emn_sparse_find(&f->J, x[a], x[b]) >= 0) != (a == b);
            }
        ok(found == 3 && wrong == 0, "pattern %s: entries where the hand count puts them (%d wrong)",
           shared ? "shared R0" : "one supply", wrong);
        emn_form_free(&f);
        emn_netlist_free(&c);
    }
}

/* The linear part of an evaluation on a large random network of R, L
 * and C (12,000 nodes, a few elements each), against sums over the
 * elements of the netlist written here.  In the flux formulation p_j is
 * the sum of C (w_j - w_k) over node j's capacitors and F_j =
 * -sum (w_j - w_k) / R - sum (z_j - z_k) / L; the scale is the sum of the
 * magnitudes of the products of row j's stamped entries (a pair's
 * parallel elements of one kind summed, the diagonal all of a node's)
 * with the coordinates.  Large enough that the evaluation runs in
 * halves, which the 200 evaluations' timings may move. */
typedef struct net_elem { char kind; int a, b; double v; } net_elem;

/* A linear step's check in one pass (emn_form_step_rows), each half of
 * the evaluation's split in three blocks of uneven length. */
static void step_check_blocks(emn_form *f, const double *w, emn_step_check *C)
{
    for (int h = 0; h < 2; h++) {
        C->ok[h] = true;
        C->bad_w[h] = C->bad_r[h] = -1;
    }
    for (int h = 0; h < (f->lin_split ? 2 : 1); h++) {
        int i0, i1;
        emn_form_step_half(f, h, &i0, &i1);
        int b1 = i0 + (i1 - i0) / 7, b2 = i0 + (i1 - i0) / 2;
        emn_form_step_rows(f, w, C, h, i0, b1);
        emn_form_step_rows(f, w, C, h, b1, b2);
        emn_form_step_rows(f, w, C, h, b2, i1);
    }
}

/* That pass against its parts: z = (w - hz) / a, then emn_form_eval at
 * (z, w), then the residual a p + hp - F and its test written out here,
 * on 40 random states of f, a linear flux formulation without
 * mechanical coordinates.  Every number must be the same to the bit; the
 * verdict is set to fail by a residual pushed past its tolerance in one
 * row, and a NaN in w (or in hp) must be found at its row. */
static void step_check_network(emn_form *f, const char *net)
{
    int n = f->n, differ = 0, verdicts = 0, nans = 0;
    size_t sz = (size_t)n * sizeof(double);
    double *w = malloc(sz), *hz = malloc(sz), *hp = malloc(sz), *z = malloc(sz), *p = malloc(sz);
    double *F = malloc(sz), *sc = malloc(sz), *zs = malloc(sz), *ps = malloc(sz), *Fs = malloc(sz);
    double *scs = malloc(sz);
    double rt = 1e-3, re = 1e-12;
    for (int round = 0; round < 40; round++) {
        double a = 2 / urand(1e-12, 1e-10), ia = 1 / a;
        for (int j = 0; j < n; j++) {
            w[j] = urand(-1, 1);
            hz[j] = urand(-1, 1) * a * 1e-9;
            hp[j] = urand(-1e-3, 1e-3);
            z[j] = (w[j] - hz[j]) * ia;
        }
        emn_form_eval(f, z, w, p, F, sc, NULL);
        /* hp chosen so that every residual is within half its tolerance
         * but one row's, which is 0.9 or 1.1 of it: the verdict must
         * follow */
        for (int j = 0; j < n; j++) hp[j] = F[j] - a * p[j] + urand(-0.5, 0.5) * rt * fabs(F[j]);
        int row = (int)urand(0, n);
        double want_ok = round % 2 == 0, k = want_ok ? 0.9 : 1.1;
        for (int pass = 0; pass < 3; pass++) {
            double ap = a * p[row];
            double tol = rt * (fabs(ap) + fabs(hp[row]) + fabs(sc[row])) + re;
            hp[row] = F[row] - ap + k * tol;
        }
        emn_step_check C = {a, ia, rt, re, hz, hp, NULL, zs, ps, Fs, scs, {true, true}, {-1, -1}, {-1, -1}};
        step_check_blocks(f, w, &C);
        bool all_ok = true;
        for (int j = 0; j < n; j++) {
            double ap = a * p[j], r = ap + hp[j] - F[j];
            double tol = rt * (fabs(ap) + fabs(hp[j]) + fabs(sc[j])) + re;
            if (fabs(r) > tol) all_ok = false;
            differ += memcmp(&zs[j], &z[j], sizeof(double)) != 0 || memcmp(&ps[j], &p[j], sizeof(double)) != 0 ||
                      memcmp(&Fs[j], &F[j], sizeof(double)) != 0 || memcmp(&scs[j], &sc[j], sizeof(double)) != 0;
        }
        verdicts += (C.ok[0] && C.ok[1]) == all_ok && all_ok == want_ok;
        verdicts += C.bad_w[0] < 0 && C.bad_w[1] < 0 && C.bad_r[0] < 0 && C.bad_r[1] < 0;
        /* a NaN velocity, then a NaN history part, at a random row */
        int at = (int)urand(0, n);
        double keep = w[at];
        w[at] = NAN;
        step_check_blocks(f, w, &C);
        nans += (C.bad_w[0] >= 0 ? C.bad_w[0] : C.bad_w[1]) == at;
        w[at] = keep;
        hp[at] = NAN;
        step_check_blocks(f, w, &C);
        nans += (C.bad_w[0] >= 0 ? C.bad_w[0] : C.bad_w[1]) == -1 && (C.bad_r[0] >= 0 ? C.bad_r[0] : C.bad_r[1]) == at;
    }
    ok(differ == 0, "step check, %s: z, p, F and scale equal the unfused pass's to the bit (%d differ)", net,
       differ);
    ok(verdicts == 80, "step check, %s: the verdict follows a residual at 0.9 and 1.1 of its tolerance (%d of 80)",
       net, verdicts);
    ok(nans == 80, "step check, %s: a NaN in w or in hp is found at its row (%d of 80)", net, nans);
    free(w); free(hz); free(hp); free(z); free(p); free(F); free(sc);
    free(zs); free(ps); free(Fs); free(scs);
}

/* With `inductors` false, an RC network: dp/dz and dF/dz are empty, which
 * the step check's pass does not walk. */
static void big_network(bool inductors)
{
    enum { N = 12000 };
    const char *net = inductors ? "RLC" : "RC";
    int cap = 8 * N, ne = 0;
    net_elem *el = malloc((size_t)cap * sizeof *el);
    size_t tcap = (size_t)cap * 40, len = 0;
    char *text = malloc(tcap);
    len += (size_t)snprintf(text, tcap, "random RLC network\n");
    for (int i = 1; i <= N; i++) {
        int extra = (int)urand(0, 5);
        for (int k = 0; k <= extra + 2; k++) {
            net_elem e = {'R', i, k == 0 ? i - 1 : (int)urand(0, N + 1), 0};
            if (k == extra + 1) {
                if (urand(0, 1) > 0.5) continue;
                e.kind = 'C';
                if (urand(0, 1) < 0.8) e.b = 0;
            } else if (k == extra + 2) {
                if (!inductors || urand(0, 1) > 0.03) continue;
                e.kind = 'L';
            }
            if (e.b > N) e.b = N;
            if (e.b == e.a) continue;
            e.v = e.kind == 'R' ? urand(0.1, 10) : e.kind == 'C' ? urand(1e-13, 1e-11) : urand(1e-10, 1e-8);
            el[ne] = e;
            char a[16], b[16];
            snprintf(a, sizeof a, "n%d", e.a);
            snprintf(b, sizeof b, e.b ? "n%d" : "0", e.b);
            len += (size_t)snprintf(text + len, tcap - len, "%c%d %s %s %.17g\n", e.kind, ne, a, b, e.v);
            ne++;
        }
    }
    emn_circuit *c = rd(text);
    emn_form *f = c ? emn_form_build(c, EMN_FORM_FLUX, &d) : NULL;
    if (!ok(f != NULL && f->n == N, "big %s network: flux formulation builds, %d coordinates", net, N)) {
        show_msgs();
        emn_form_free(&f);
        emn_netlist_free(&c);
        free(el);
        free(text);
        return;
    }
    ok(f->lin_split != NULL, "big %s network: the evaluation runs in halves", net);
    ok((f->lin[0].nnz + f->lin[2].nnz > 0) == inductors, "big %s network: dp/dz and dF/dz %s", net,
       inductors ? "have entries" : "are empty");
    int *at = malloc((N + 1) * sizeof *at);     /* node k's coordinate */
    at[0] = -1;
    for (int j = 0; j < N; j++) {
        int k = -1;
        if (sscanf(cname(f, j), "lambda(n%d)", &k) == 1 && k >= 1 && k <= N) at[k] = j;
    }
    /* each node's elements */
    int *estart = calloc(N + 2, sizeof *estart), *eidx = malloc(2 * (size_t)ne * sizeof *eidx);
    for (int e = 0; e < ne; e++) {
        estart[el[e].a + 1]++;
        if (el[e].b) estart[el[e].b + 1]++;
    }
    for (int k = 0; k <= N; k++) estart[k + 1] += estart[k];
    int *fillp = malloc((N + 1) * sizeof *fillp);
    memcpy(fillp, estart, (N + 1) * sizeof *fillp);
    for (int e = 0; e < ne; e++) {
        eidx[fillp[el[e].a]++] = e;
        if (el[e].b) eidx[fillp[el[e].b]++] = e;
    }
    free(fillp);
    double *z = malloc(N * sizeof *z), *w = malloc(N * sizeof *w), *p = malloc(N * sizeof *p);
    double *F = malloc(N * sizeof *F), *sc = malloc(N * sizeof *sc), *wp = malloc(N * sizeof *wp);
    double *wF = malloc(N * sizeof *wF);
    double worst = 0, worst_sc = 0;
    int bad = 0;
    emn_form_set_time(f, 0);
    for (int round = 0; round < 200; round++) {
        for (int j = 0; j < N; j++) {
            z[j] = urand(-1, 1);
            w[j] = urand(-1, 1);
            wp[j] = wF[j] = 0;
        }
        bool with_scale = round % 2;
        if (emn_form_eval(f, z, w, p, F, with_scale ? sc : NULL, NULL) != 0) bad++;
        for (int e = 0; e < ne; e++) {
            int ja = at[el[e].a], jb = el[e].b ? at[el[e].b] : -1;
            double dw = w[ja] - (jb >= 0 ? w[jb] : 0), dz = z[ja] - (jb >= 0 ? z[jb] : 0);
            double t = el[e].kind == 'C' ? el[e].v * dw : el[e].kind == 'R' ? -dw / el[e].v : -dz / el[e].v;
            double *y = el[e].kind == 'C' ? wp : wF;
            y[ja] += t;
            if (jb >= 0) y[jb] -= t;
        }
        /* scale: each stamped entry's product; a pair's entry sums its
         * parallel elements of one kind, the diagonal all of a node's */
        for (int k = 1; k <= N; k++) {
            int nb = 1, nbr[64] = {k};
            double ent[3][64] = {{0}};      /* C, G, 1/L by neighbour; [0]: the node's own */
            for (int q = estart[k]; q < estart[k + 1] && nb < 64; q++) {
                const net_elem *e = &el[eidx[q]];
                int m = e->a == k ? e->b : e->a, kind = e->kind == 'C' ? 0 : e->kind == 'R' ? 1 : 2, r = 0;
                double v = kind == 0 ? e->v : 1 / e->v;
                ent[kind][0] += v;
                if (m == 0) continue;
                while (r < nb && nbr[r] != m) r++;
                if (r == nb) nbr[nb++] = m;
                ent[kind][r] -= v;
            }
            if (nb >= 64) {
                bad++;
                continue;
            }
            double want = 0;
            for (int r = 0; r < nb; r++) {
                int jm = at[nbr[r]];
                want += fabs(ent[0][r] * w[jm]) + fabs(ent[1][r] * w[jm]) + fabs(ent[2][r] * z[jm]);
            }
            /* the stamped sums cancel where the element sums do not:
             * their rounding is of the stamped terms' size */
            int j = at[k];
            worst = fmax(worst, (fabs(p[j] - wp[j]) + fabs(F[j] - wF[j])) / want);
            if (with_scale) worst_sc = fmax(worst_sc, fabs(sc[j] - want) / want);
        }
    }
    ok(bad == 0 && worst < 1e-12, "big %s network: p and F equal the element sums over 200 evaluations "
       "(worst %.3g of the stamped terms' magnitudes)", net, worst);
    ok(worst_sc < 1e-12, "big %s network: the scale sums the stamped entries' products (worst %.3g relative)", net,
       worst_sc);
    step_check_network(f, net);
    free(at); free(estart); free(eidx);
    free(z); free(w); free(p); free(F); free(sc); free(wp); free(wF);
    emn_form_free(&f);
    emn_netlist_free(&c);
    free(el);
    free(text);
}

/* Many sources: 3,000 current sources of PULSE, PWL and SIN waveforms
 * into their own nodes, each with a resistor to ground, are looked up in
 * two halves side by side (emn_form_set_time); at z = w = 0, F at node k
 * is source k's current, which the waveforms' definitions (netlist spec)
 * evaluated here give, at 60 times in increasing order and 20 in
 * decreasing.  With one source given by an expression among them, they
 * are looked up in one pass.  Pulses whose edges fall on a grid of
 * 50 ps (a power grid's loads) hold still between the corners, and the
 * lookups there skip them: the values must not change for it. */
typedef struct wave_case { int kind; double v[7]; } wave_case;

static double wave_here(const wave_case *w, double t)
{
    const double *v = w->v;
    if (w->kind == 0) {         /* PULSE(v1 v2 td tr tf pw per) */
        if (t < v[2]) return v[0];
        double u = fmod(t - v[2], v[6]);
        if (u < v[3]) return v[0] + (v[1] - v[0]) * u / v[3];
        if (u < v[3] + v[5]) return v[1];
        if (u < v[3] + v[5] + v[4]) return v[1] + (v[0] - v[1]) * (u - v[3] - v[5]) / v[4];
        return v[0];
    }
    if (w->kind == 1) {         /* PWL(0 v0 t1 v1 t2 v2) */
        if (t <= 0) return v[0];
        if (t < v[1]) return v[0] + (v[2] - v[0]) * t / v[1];
        if (t < v[3]) return v[2] + (v[4] - v[2]) * (t - v[1]) / (v[3] - v[1]);
        return v[4];
    }
    /* SIN(vo va freq td theta phase) */
    double ph = 2 * M_PI * v[5] / 360;
    if (t < v[3]) return v[0] + v[1] * sin(ph);
    return v[0] + v[1] * exp(-(t - v[3]) * v[4]) * sin(2 * M_PI * v[2] * (t - v[3]) + ph);
}

static void many_sources(void)
{
    enum { N = 3000 };
    wave_case *wc = malloc(N * sizeof *wc);
    size_t tcap = (size_t)N * 320, len = 0;
    char *text = malloc(tcap);
    for (int variant = 0; variant < 3; variant++) {
        /* 1: with an expression; 2: pulses on a grid, as a power grid's
         * loads, whose corners fall at a few common times */
        int expr = variant == 1, grid = variant == 2;
        len = (size_t)snprintf(text, tcap, "many sources\n");
        for (int k = 1; k <= N; k++) {
            wave_case *w = &wc[k - 1];
            w->kind = grid ? 0 : k % 3;
            len += (size_t)snprintf(text + len, tcap - len, "R%d n%d 0 1k\n", k, k);
            if (grid) {
                double v[7] = {urand(-1e-3, 1e-3), urand(-1e-3, 1e-3), 5e-11 * (int)urand(0, 40), 1e-10, 1e-10, 1e-11,
                               urand(0, 1) < 0.5 ? 2e-9 : 3e-9};
                memcpy(w->v, v, sizeof v);
                len += (size_t)snprintf(text + len, tcap - len, "I%d 0 n%d PULSE(%.17g %.17g %.17g %.17g %.17g %.17g %.17g)\n",
                                        k, k, v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
            } else if (expr && k == N) {
                len += (size_t)snprintf(text + len, tcap - len, "I%d 0 n%d '1m*time'\n", k, k);
                w->kind = -1;
            } else if (w->kind == 0) {
                double tr = urand(1e-10, 1e-9), tf = urand(1e-10, 1e-9), pw = urand(0, 1e-9);
                double v[7] = {urand(-1e-3, 1e-3), urand(-1e-3, 1e-3), urand(0, 2e-9), tr, tf, pw,
                               tr + tf + pw + urand(1e-10, 2e-9)};
                memcpy(w->v, v, sizeof v);
                len += (size_t)snprintf(text + len, tcap - len, "I%d 0 n%d PULSE(%.17g %.17g %.17g %.17g %.17g %.17g %.17g)\n",
                                        k, k, v[0], v[1], v[2], v[3], v[4], v[5], v[6]);
            } else if (w->kind == 1) {
                double t1 = urand(1e-10, 3e-9), v[5] = {urand(-1e-3, 1e-3), t1, urand(-1e-3, 1e-3),
                                                       t1 + urand(1e-10, 3e-9), urand(-1e-3, 1e-3)};
                memcpy(w->v, v, sizeof v);
                len += (size_t)snprintf(text + len, tcap - len, "I%d 0 n%d PWL(0 %.17g %.17g %.17g %.17g %.17g)\n",
                                        k, k, v[0], v[1], v[2], v[3], v[4]);
            } else {
                double v[6] = {urand(-1e-3, 1e-3), urand(0, 1e-3), urand(1e8, 1e9), urand(0, 2e-9),
                               urand(0, 1e8), urand(0, 360)};
                memcpy(w->v, v, sizeof v);
                len += (size_t)snprintf(text + len, tcap - len, "I%d 0 n%d SIN(%.17g %.17g %.17g %.17g %.17g %.17g)\n",
                                        k, k, v[0], v[1], v[2], v[3], v[4], v[5]);
            }
        }
        const char *what = expr ? "with an expression" : grid ? "pulses on a grid" : "waveforms";
        emn_circuit *c = rd(text);
        emn_form *f = c && emn_sim_prepare(c, &d) >= 0 ? emn_form_build(c, EMN_FORM_FLUX, &d) : NULL;
        if (!ok(f != NULL && f->n == N, "many sources, %s: builds", what)) {
            show_msgs();
            emn_form_free(&f);
            emn_netlist_free(&c);
            continue;
        }
        ok(expr ? !f->src_halves : f->src_halves, "many sources, %s: %s", what,
           expr ? "looked up in one pass" : "looked up in two halves");
        int *at = malloc((N + 1) * sizeof *at);
        for (int j = 0; j < N; j++) {
            int k = 0;
            if (sscanf(cname(f, j), "lambda(n%d)", &k) == 1 && k >= 1 && k <= N) at[k] = j;
        }
        double *z = calloc(N, sizeof *z), *w = calloc(N, sizeof *w), *p = malloc(N * sizeof *p);
        double *F = malloc(N * sizeof *F), worst = 0, t = 0;
        int skipped = 0;        /* lookups that could skip the still sources */
        for (int round = 0; round < 80; round++) {
            t = round < 60 ? t + (grid ? 2.5e-12 * (int)urand(1, 5) : urand(0, 2e-10)) : t - urand(0, 5e-10);
            if (t < 0) t = 0;
            skipped += t >= f->still_lo && t < f->still_hi;
            emn_form_set_time(f, t);
            emn_form_eval(f, z, w, p, F, NULL, NULL);
            for (int k = 1; k <= N; k++) {
                double want = wc[k - 1].kind < 0 ? 1e-3 * t : wave_here(&wc[k - 1], t);
                worst = fmax(worst, fabs(F[at[k]] - want) / 1e-3);
            }
        }
        ok(worst < 1e-9, "many sources, %s: each node's F is its source's current (worst %.3g of 1 mA)", what, worst);
        if (grid)
            ok(skipped >= 10, "many sources, %s: %d of 80 lookups skip the sources that hold still", what, skipped);
        free(at); free(z); free(w); free(p); free(F);
        emn_form_free(&f);
        emn_netlist_free(&c);
    }
    free(wc);
    free(text);
}

int main(void)
{
#ifdef M_PERTURB
    /* fresh allocations hold zeros, not whatever the heap had: a read of
     * memory the engine never wrote then fails the same way on every run */
    mallopt(M_PERTURB, 0xff);
#endif
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i].todo) run_isolated(&cases[i]);
        else run_case(&cases[i]);
    }
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) run_bad(&bad_cases[i]);
    value_slots();
    momentum_const();
    duals();
    pattern();
    big_network(true);
    big_network(false);
    many_sources();
    emn_diag_free(&d);
    return tap_done();
}
