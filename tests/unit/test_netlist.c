/*
 * test_netlist.c: the netlist front end, from text to the checked model.
 *
 * Each case parses a small netlist held in a string and checks the model
 * against values worked out by hand from the spec (suffixes, source
 * arguments, subcircuit names and parameters, domains, signals).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netlist.h"
#include "tap.h"

static emn_diag d;

static emn_circuit *rd(const char *text)
{
    emn_diag_free(&d);
    return emn_netlist_read_text("t.cir", text, (long)strlen(text), &d);
}

static const emn_elem *el(const emn_circuit *c, const char *name)
{
    int i = c ? emn_netlist_find_elem(c, name) : -1;
    return i >= 0 ? &c->elems.v[i] : NULL;
}

static int nd(const emn_circuit *c, const char *name)
{
    return c ? emn_netlist_find_node(c, name) : -2;
}

/* Whether some message contains `text`. */
static int has_msg(const char *text)
{
    for (int i = 0; i < d.n; i++)
        if (strstr(d.v[i].text, text)) return 1;
    return 0;
}

static void show_msgs(void)
{
    for (int i = 0; i < d.n; i++) printf("# %d:%d: %s\n", d.v[i].loc.line, d.v[i].loc.col, d.v[i].text);
}

static void test_elements(void)
{
    emn_circuit *c = rd("every element\n"
                        "R1 a b 4.7kOhm\n"
                        "C1 b 0 10uF IC=1.5\n"
                        "L1 b c 2.5mH ic=0.25\n"
                        "L2 c 0 1e-6F\n"
                        "K1 L1 L2 0.5\n"
                        "V1 a 0 5\n"
                        "I1 c 0 DC 2m\n"
                        "T1 c 0 cone 0 7.5\n"
                        "M1 cone 12g\n"
                        "S1 cone 0 1k X0=1m\n"
                        "D1 cone 0 0.3\n"
                        "F1 cone 0 1\n"
                        "Jy yoke '0.05*cos(x(cone))'\n");
    ok(c != NULL, "elements: a netlist with every element reads");
    if (!c) { show_msgs(); return; }
    ok(c->elems.n == 13, "elements: 13 elements");
    ok_close(el(c, "r1")->value, 4.7e3, 1e-12, "elements: 4.7kOhm = 4700");
    ok_close(el(c, "c1")->value, 10e-6, 1e-12, "elements: 10uF = 1e-5");
    ok(el(c, "c1")->has_ic && el(c, "c1")->ic == 1.5, "elements: C IC=1.5");
    ok_close(el(c, "l1")->value, 2.5e-3, 1e-12, "elements: 2.5mH");
    ok(el(c, "l1")->has_ic && el(c, "l1")->ic == 0.25, "elements: L ic=0.25 (case-insensitive key)");
    ok_close(el(c, "l2")->value, 1e-6, 1e-12, "elements: 1e-6F: unit letters after an exponent are ignored");
    const emn_elem *k = el(c, "k1");
    ok(k && k->ind[0] == emn_netlist_find_elem(c, "l1") && k->ind[1] == emn_netlist_find_elem(c, "l2"),
       "elements: K names its inductors");
    ok(k && k->value == 0.5, "elements: K value");
    ok(el(c, "v1")->src->has_dc && el(c, "v1")->src->dc == 5 && el(c, "v1")->src->kind == EMN_WAVE_NONE,
       "elements: V 5 is a DC value");
    ok_close(el(c, "i1")->src->dc, 2e-3, 1e-12, "elements: I DC 2m");
    const emn_elem *t = el(c, "t1");
    ok(t && t->nnodes == 4 && t->node[2] == nd(c, "cone") && t->value == 7.5, "elements: T nodes and value");
    ok_close(el(c, "m1")->value, 12e9, 1e-12, "elements: 12g is giga (SPICE), not grams");
    ok(el(c, "s1")->x0 == 1e-3 && el(c, "s1")->value == 1e3, "elements: S stiffness and X0");
    ok(el(c, "d1")->value == 0.3, "elements: D");
    ok(el(c, "f1")->src->dc == 1, "elements: F source");
    const emn_elem *j = el(c, "jy");
    int yoke = nd(c, "yoke"), cone = nd(c, "cone");
    ok(j && j->vexpr && c->nodes.v[yoke].jdef == (int)(j - c->elems.v), "elements: J defines its node");
    double x[16] = {0};
    x[cone] = 0.3;
    ok_close(emn_expr_eval(j->vexpr, x), 0.05 * cos(0.3), 1e-12, "elements: J expression of x(cone)");
    ok(c->nodes.v[nd(c, "a")].dom == EMN_DOM_ELEC && c->nodes.v[cone].dom == EMN_DOM_MECH &&
       c->nodes.v[yoke].dom == EMN_DOM_MECH, "elements: node domains");
    ok(c->nodes.v[nd(c, "b")].jdef == -1, "elements: jdef is -1 elsewhere");
    emn_netlist_free(&c);
}

static void test_numbers(void)
{
    static const struct { const char *text; double want; } cases[] = {
        {"1", 1}, {"-2.5", -2.5}, {"3e-6", 3e-6}, {"1f", 1e-15}, {"1p", 1e-12}, {"1n", 1e-9},
        {"1u", 1e-6}, {"1m", 1e-3}, {"1k", 1e3}, {"1meg", 1e6}, {"1MEG", 1e6}, {"1g", 1e9},
        {"1t", 1e12}, {"1mil", 25.4e-6}, {"2.2MegOhm", 2.2e6}, {".5", 0.5}, {"1.5e3k", 1.5e3},
        {"10V", 10}, {"1E3", 1e3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[128];
        snprintf(buf, sizeof buf, "t\nV1 a 0 %s\nR1 a 0 1\n", cases[i].text);
        emn_circuit *c = rd(buf);
        ok_close(c ? el(c, "v1")->src->dc : NAN, cases[i].want, 1e-12, "numbers: %s", cases[i].text);
        emn_netlist_free(&c);
    }
    emn_circuit *c = rd("t\nR1 a 0 1M\nR2 a 0 1meg\nC1 a 0 1m\n");
    ok(c && d.nwarnings == 1 && has_msg("'m' means milli"), "numbers: 1M on a resistor warns once, 1m on C does not");
    emn_netlist_free(&c);
    /* the same in an expression's literals, and not for meg, mil, a name
     * with digits, or letters after an exponent (a unit) */
    c = rd("t\nR1 a 0 {1M}\nR2 a 0 '2*.5m'\nR3 a 0 {1meg+1mil}\n.param r1m=3\nR4 a 0 {r1m}\nR5 a 0 {1e3m}\n");
    ok(c && d.nwarnings == 2 && has_msg("'m' means milli"), "numbers: {1M} and '2*.5m' on resistors warn, the rest not");
    emn_netlist_free(&c);
    c = rd("t\nR1 a 0 1k2x3.4\n");
    ok(!c && d.nerrors == 1 && d.v[0].loc.col == 10, "numbers: 1k2x3.4 is an error at the '2'");
    c = rd("t\nR1 a 0 1.2.3u\n");
    ok(!c && d.nerrors == 1 && d.v[0].loc.col == 11, "numbers: 1.2.3u is an error at the second '.'");

    /* Numbers without a scale read as the C library's strtod reads them,
     * to the last bit: the edges of the exact path (2^53, 10^22, many
     * fraction digits, signed zero) and 4000 random ones. */
    static const char *edges[] = {
        "9007199254740991", "9007199254740992", "9007199254740993", "90071992547409921",
        "1e22", "1e23", "-1e-22", "1e-23", "4.9406564584124654e-324", "1.7976931348623157e308",
        "0.1", "-0", "+0.0e5", "0.000000000000000000000000123", "123456789012345678901234567890",
        "3.14159265358979323846", "2.2250738585072014e-308", "1.0000000000000002", "9.999999999999999e22",
    };
    enum { NRANDOM = 4000, NEDGE = sizeof edges / sizeof edges[0] };
    static char text[NRANDOM + NEDGE][48];
    srand(7);
    for (int i = 0; i < NRANDOM + NEDGE; i++) {
        if (i < NEDGE) {
            snprintf(text[i], sizeof text[i], "%s", edges[i]);
            continue;
        }
        int k = 0, nd = 1 + rand() % 19, dot = rand() % (nd + 2);
        if (rand() % 3 == 0) text[i][k++] = rand() % 2 ? '-' : '+';
        for (int j = 0; j < nd; j++) {
            if (j == dot) text[i][k++] = '.';
            text[i][k++] = (char)('0' + rand() % 10);
        }
        if (rand() % 2) k += snprintf(text[i] + k, sizeof text[i] - (size_t)k, "e%d", rand() % 61 - 30);
        text[i][k] = '\0';
    }
    emn_buf deck = {0};
    emn_buf_puts(&deck, "numbers\n");
    for (int i = 0; i < NRANDOM + NEDGE; i++) emn_buf_printf(&deck, "V%d n%d 0 %s\nR%d n%d 0 1\n", i, i, text[i], i, i);
    c = rd(deck.v);
    int same = 0, first_bad = -1;
    for (int i = 0; c && i < NRANDOM + NEDGE; i++) {
        char name[16];
        snprintf(name, sizeof name, "v%d", i);
        double want = strtod(text[i], NULL), got = el(c, name)->src->dc;
        if (memcmp(&got, &want, sizeof got) == 0) same++;
        else if (first_bad < 0) first_bad = i;
    }
    ok(same == NRANDOM + NEDGE, "numbers: %d of %d read bit for bit as strtod reads them%s%s", same,
       (int)(NRANDOM + NEDGE), first_bad >= 0 ? "; first not: " : "", first_bad >= 0 ? text[first_bad] : "");
    emn_netlist_free(&c);
    emn_buf_free(&deck);
}

static void test_sources(void)
{
    emn_circuit *c = rd("sources\n"
                        ".param vpi=2\n"
                        "V1 a 0 PULSE(0, 5, 1n,1n 1n 5n 10n)\n"
                        "V2 b 0 DC 1 SIN(0 1 1k)\n"
                        "V3 c 0 PWL(0 0 10u '0.9*vpi')\n"
                        "V4 d 0 exp(0 1 1u 2u)\n"
                        "V5 e 0 '2*sin(2*pi*50*time)'\n"
                        "V6 f 0 dc 3 'vpi*time'\n"
                        "V7 g 0 'vpi*3'\n"
                        "I1 h 0 2.18725e-5 pulse(2.18725e-05, 0.0546813, 2e-10,  1e-10,  1e-10,  1e-11,  3e-09)\n"
                        "R1 a 0 1\n");
    ok(c != NULL, "sources: all forms read");
    if (!c) { show_msgs(); return; }
    const emn_source *s = el(c, "v1")->src;
    ok(s->kind == EMN_WAVE_PULSE && s->nargs == 7 && !s->has_dc && s->args[1] == 5 &&
       s->args[6] == 10e-9, "sources: PULSE with commas and blanks");
    s = el(c, "v2")->src;
    ok(s->kind == EMN_WAVE_SIN && s->has_dc && s->dc == 1 && s->nargs == 3 && s->args[2] == 1e3,
       "sources: DC 1 SIN(0 1 1k)");
    s = el(c, "v3")->src;
    ok(s->kind == EMN_WAVE_PWL && s->nargs == 4 && close_to(s->args[3], 1.8, 1e-12),
       "sources: PWL with an expression argument of a parameter");
    s = el(c, "v4")->src;
    ok(s->kind == EMN_WAVE_EXP && s->nargs == 4, "sources: EXP (lower case)");
    s = el(c, "v5")->src;
    double tv[1] = {0.0025};
    ok(s->kind == EMN_WAVE_EXPR && s->expr && close_to(emn_expr_eval(s->expr, tv), 2 * sin(2 * M_PI * 50 * 0.0025), 1e-12),
       "sources: expression of time");
    s = el(c, "v6")->src;
    tv[0] = 3;
    ok(s->has_dc && s->dc == 3 && s->kind == EMN_WAVE_EXPR && close_to(emn_expr_eval(s->expr, tv), 6, 1e-12),
       "sources: dc 3 then an expression");
    s = el(c, "v7")->src;
    ok(s->has_dc && s->dc == 6 && s->kind == EMN_WAVE_NONE, "sources: a constant expression is the DC value");
    s = el(c, "i1")->src;
    ok(s->has_dc && close_to(s->dc, 2.18725e-5, 1e-12) && s->kind == EMN_WAVE_PULSE && s->args[6] == 3e-9,
       "sources: IBM power-grid form");
    emn_netlist_free(&c);

    c = rd("t\nV1 a 0 PWL(0 0 2m 1 1m 2)\nR1 a 0 1\n");
    ok(!c && has_msg("PWL times of V1 must not decrease") && d.v[0].loc.col == 21,
       "sources: decreasing PWL time is an error at that time");
    c = rd("t\nV1 a 0 AC 1\nR1 a 0 1\n");
    ok(!c && has_msg("unexpected 'AC'"), "sources: unknown words are errors");
    c = rd("t\nV1 a 0 SIN(0)\nR1 a 0 1\n");
    ok(!c && has_msg("sin() takes 2 to 6 arguments, not 1"), "sources: too few SIN arguments");
}

static void test_lexical(void)
{
    const char *text = "title line R1 is not an element\r\n"
                       "* a comment\r\n"
                       "R1\ta\tb\t1k ; inline comment\r\n"
                       "C1 b 0 $ dollar comment\r\n"
                       "* comment between a card and its continuation\r\n"
                       "\r\n"
                       "+ 1u\r\n"
                       "V1 a 0 DC\r\n"
                       "+ 1\r\n";
    emn_circuit *c = rd(text);
    ok(c != NULL, "lexical: CRLF, tabs, comments, continuations");
    if (!c) { show_msgs(); return; }
    ok(c->elems.n == 3 && el(c, "c1")->value == 1e-6 && el(c, "v1")->src->dc == 1,
       "lexical: continuation joins the card");
    ok(strcmp(c->title, "title line R1 is not an element") == 0, "lexical: title without CR");
    ok(el(c, "c1")->loc.line == 4, "lexical: an element's line");
    emn_netlist_free(&c);
    /* the same layout, with messages at the values: a warning at R1's
     * value, an error at C1's on its continuation line */
    c = rd("title\r\n* a comment\r\nR1\ta\tb\t1m ; inline comment\r\nC1 b 0 $ dollar comment\r\n"
           "* comment between a card and its continuation\r\n\r\n+ -1u\r\n");
    ok(!c && d.n == 2 && d.v[0].loc.line == 3 && d.v[0].loc.col == 8 && strstr(d.v[0].text, "milli"),
       "lexical: a tab counts as one column");
    ok(d.n == 2 && d.v[1].loc.line == 7 && d.v[1].loc.col == 3 && d.v[1].sev == EMN_SEV_ERROR,
       "lexical: continuation keeps its physical line and column");
    if (d.n != 2) show_msgs();

    c = rd("t\nr1 A B 1\nR2 a b 2\n");
    ok(c && c->nodes.n == 3 && strcmp(c->nodes.v[1].name, "a") == 0 && nd(c, "A") == 1,
       "lexical: names are case-insensitive and stored lower case");
    emn_netlist_free(&c);
    c = rd("t\nR1 a b 1\nr1 a b 2\n");
    ok(!c && d.nerrors == 1 && d.n == 2 && d.v[1].sev == EMN_SEV_NOTE && d.v[1].loc.line == 2,
       "lexical: duplicate names (any case): error with a note at the first");

    static const char nul[] = "t\nR1 a b 1\0\n";
    emn_diag_free(&d);
    c = emn_netlist_read_text("t.cir", nul, sizeof nul - 1, &d);
    ok(!c && d.nerrors == 1 && has_msg("file is not text") && d.v[0].loc.line == 2 && d.v[0].loc.col == 9,
       "lexical: a NUL byte rejects the file");
    c = rd("t\nR1 a b 1\nR2 a b 2\n.end\nthis is not parsed\n");
    ok(c && c->elems.n == 2, "lexical: .end stops reading");
    emn_netlist_free(&c);
    c = rd("t\nR1 a b 1\nR2 a b (\nR3 a b x\n");
    ok(!c && d.nerrors == 2 && d.v[0].loc.line == 3 && d.v[1].loc.line == 4,
       "lexical: errors are collected past a syntax error");
}

static void test_expressions(void)
{
    emn_circuit *c = rd("t\n.param a=2 b='a*3' c={-a^2} d='2**3**2' e='-2^-2' f='10m*(1+1)/0.05'\n"
                        ".param g='atan2(1,1)*4' h='log(exp(2))' i='max(1,min(5,3))'\n"
                        "R1 n 0 'b' \nR2 n 0 '-c'\nR3 n 0 'd'\nR4 n 0 '-1/e'\nR5 n 0 f\nR6 n 0 'g'\n"
                        "R7 n 0 h\nR8 n 0 i\n");
    ok(c != NULL, "expressions: parameters in order");
    if (!c) { show_msgs(); return; }
    ok_close(el(c, "r1")->value, 6, 1e-12, "expressions: b = a*3");
    ok_close(el(c, "r2")->value, 4, 1e-12, "expressions: -a^2 = -(a^2)");
    ok_close(el(c, "r3")->value, 512, 1e-12, "expressions: ** is right-associative");
    ok_close(el(c, "r4")->value, 4, 1e-12, "expressions: -2^-2 = -0.25");
    ok_close(el(c, "r5")->value, 0.4, 1e-12, "expressions: suffixes inside expressions");
    ok_close(el(c, "r6")->value, M_PI, 1e-12, "expressions: atan2");
    ok_close(el(c, "r7")->value, 2, 1e-12, "expressions: log is natural");
    ok_close(el(c, "r8")->value, 3, 1e-12, "expressions: min and max");
    emn_netlist_free(&c);
    c = rd("t\nR1 a 0 'foo(1)'\n");
    ok(!c && has_msg("unknown function 'foo'"), "expressions: unknown function");
    c = rd("t\nR1 a 0 'k1*2'\n");
    ok(!c && has_msg("unknown parameter 'k1'"), "expressions: unknown parameter");
    c = rd("t\nR1 a 0 rr\n.param rr=5\n");
    ok(c && el(c, "r1")->value == 5, "expressions: a parameter may be defined after its use");
    emn_netlist_free(&c);
    /* cards built as they are read, cards that wait for the whole file
     * (parameters, names that could be parameters, instances), and the
     * file's order kept across both */
    c = rd("t\nR1 a b 1\nV1 a 0 dc 2\nI1 b 0 pwl(0 0 1n ia)\nC1 b 0 1p\nR4 b 0 pi\nX1 b s\n"
           "V2 b 0 dc dc\nR3 b 0 2k\n.param ia=3m dc=4\n.subckt s a\nR1 a 0 3\n.ends\n");
    static const char *const order[] = {"r1", "v1", "i1", "c1", "r4", "r.x1.r1", "v2", "r3"};
    bool in_order = c && c->elems.n == 8;
    for (int i = 0; in_order && i < 8; i++) in_order = strcmp(c->elems.v[i].name, order[i]) == 0;
    ok(in_order, "streaming: elements in the file's order");
    ok(c && el(c, "v1")->src->dc == 2 && el(c, "i1")->src->args[3] == 3e-3 &&
           fabs(el(c, "r4")->value - M_PI) < 1e-15 &&
           el(c, "r.x1.r1")->value == 3 && el(c, "v2")->src->dc == 4 && el(c, "r3")->value == 2e3,
       "streaming: values, parameters defined after their use");
    emn_netlist_free(&c);
}

static void test_movable(void)
{
    emn_circuit *c = rd("movable plate\n"
                        "C1 a 0 C='8.85e-12*1e-4/(1e-3 - x(p))'\n"
                        "L1 a b L='1m*(1+x(p,q)/0.05)'\n"
                        "M1 p 1m\nM2 q 1m\nS1 p q 10\nL2 b 0 1m\nK1 L1 L2 'k0*(1-x(p))'\n"
                        ".param k0=0.5\n"
                        ".ic x(p)=0.2m v(p)=0.1\n"
                        ".print tran q(C1) f(C1,p) f(L1,q) phi(L1) w(M1) x(p,q) v(a) i(L2) f(S1)\n");
    ok(c != NULL, "movable: C(x), L(x), k(x)");
    if (!c) { show_msgs(); return; }
    int p = nd(c, "p"), q = nd(c, "q");
    const emn_elem *c1 = el(c, "c1");
    double x[16] = {0};
    x[p] = 0.5e-3;
    ok(c1->vexpr && close_to(emn_expr_eval(c1->vexpr, x) / (8.85e-16 / 0.5e-3), 1, 1e-12),
       "movable: C(x) is an expression of x(p)");
    ok_close(c1->value / (8.85e-16 / 0.8e-3), 1, 1e-9, "movable: value holds C at the .ic state");
    const emn_elem *l1 = el(c, "l1");
    x[p] = 0.01, x[q] = 0.02;
    ok_close(emn_expr_eval(l1->vexpr, x), 1e-3 * (1 - 0.01 / 0.05), 1e-12, "movable: x(p,q) = x(p)-x(q)");
    ok(el(c, "k1")->vexpr && emn_expr_depends(el(c, "k1")->vexpr, p), "movable: k(x)");
    ok(c->ics.n == 2 && c->ics.v[0].kind == EMN_IC_X && c->ics.v[0].node == p &&
       close_to(c->ics.v[0].value, 0.2e-3, 1e-12) && c->ics.v[1].kind == EMN_IC_V,
       ".ic x() and v()");
    ok(c->prints.n == 9, ".print: nine signals");
    ok(c->prints.v[1].kind == EMN_SIG_F && c->prints.v[1].mnode == p && strcmp(c->prints.v[1].text, "f(c1,p)") == 0,
       ".print: f(C1,p) resolved, text lower case");
    ok(c->prints.v[5].kind == EMN_SIG_X && c->prints.v[5].node[0] == p && c->prints.v[5].node[1] == q,
       ".print: x(p,q)");
    ok(c->prints.v[0].kind == EMN_SIG_Q && c->prints.v[0].elem == emn_netlist_find_elem(c, "c1"), ".print: q(C1)");
    emn_signal s;
    emn_diag_free(&d);
    ok(emn_netlist_parse_signal(c, "F( L1 , Q )", &s, &d, EMN_NOLOC) == 0 && s.mnode == q &&
       strcmp(s.text, "f(l1,q)") == 0, "parse_signal: blanks and case");
    ok(emn_netlist_parse_signal(c, "i(M1)", &s, &d, EMN_NOLOC) == -1 && d.nerrors == 1,
       "parse_signal: i() of a mass is an error");
    ok(emn_netlist_parse_signal(c, "f(C1,a)", &s, &d, EMN_NOLOC) == -1, "parse_signal: f(C1,m) needs m in C(x)");
    ok(emn_netlist_parse_signal(c, "x(a)", &s, &d, EMN_NOLOC) == -1, "parse_signal: x() of an electrical node");
    ok(emn_netlist_parse_signal(c, "v(nosuch)", &s, &d, EMN_NOLOC) == -1, "parse_signal: unknown node");
    emn_netlist_free(&c);

    c = rd("t\nC1 a 0 C='1p*(1-x(p)/1m)'\nR1 a 0 1\nM1 p 1\nS1 p 0 1\n.ic x(p)=2m\n");
    ok(!c && has_msg("at the initial state"), "movable: C(x) not positive at the .ic state");
    c = rd("t\nJ1 a 'x(b)'\nJ2 b '2*x(c)'\nJ3 c 'x(a)+1'\nM1 a 1\n");
    ok(!c && has_msg("linkage cycle: J1 -> J2 -> J3 -> J1"), "J: an indirect cycle names the chain");
    c = rd("t\nJ1 a 'x(a)'\n");
    ok(!c && has_msg("linkage cycle: J1 -> J1"), "J: a direct cycle");
    c = rd("t\nJ1 a 'x(b)'\nJ2 a 'x(c)'\n");
    ok(!c && has_msg("node 'a' is already defined by J1"), "J: a node defined twice");
    c = rd("t\nJ1 a 'x(b)*2'\nJ2 b 'cos(x(c))'\nM1 c 1\nS1 c 0 1\n.ic x(c)=0.5\n");
    ok(c && c->nodes.v[nd(c, "a")].jdef == 0 && c->nodes.v[nd(c, "b")].jdef == 1, "J: a chain is fine");
    emn_netlist_free(&c);
}

static void test_subckt(void)
{
    emn_circuit *c = rd("subcircuits\n"
                        ".param rg=3\n"
                        "X1 in out div\n"
                        "X2 in mid div rtop='2*rg'\n"
                        "Xo out 0 outer\n"
                        ".subckt div a b params: rtop=1k rbot='rtop/2'\n"
                        "R1 a m rtop\n"
                        "R2 m b rbot\n"
                        "C1 m 0 1p\n"
                        ".ends div\n"
                        ".subckt outer p q\n"
                        ".param half=0.5\n"
                        "Xi p q div rtop=half\n"
                        "M1 cone 1\n"
                        ".ends\n"
                        "V1 in 0 1\n");
    ok(c != NULL, "subckt: definitions after use, params and nesting");
    if (!c) { show_msgs(); return; }
    ok(el(c, "r.x1.r1") && el(c, "r.x1.r1")->value == 1e3, "subckt: r.x1.r1 default parameter");
    ok(el(c, "r.x1.r2") && el(c, "r.x1.r2")->value == 500, "subckt: default from an earlier default");
    ok(el(c, "r.x2.r1") && el(c, "r.x2.r1")->value == 6, "subckt: instance value from a caller parameter");
    ok(el(c, "r.x2.r2") && el(c, "r.x2.r2")->value == 3, "subckt: default sees the overridden value");
    ok(el(c, "r.xo.xi.r1") && el(c, "r.xo.xi.r1")->value == 0.5, "subckt: nested instance, .param inside");
    ok(el(c, "m.xo.m1") && c->nodes.v[nd(c, "xo.cone")].dom == EMN_DOM_MECH, "subckt: nested naming of nodes");
    const emn_elem *r = el(c, "r.x1.r1");
    ok(r->node[0] == nd(c, "in") && r->node[1] == nd(c, "x1.m"), "subckt: ports map to the caller's nodes");
    ok(el(c, "c.x1.c1")->node[1] == 0, "subckt: ground stays global");
    ok(el(c, "r.xo.xi.r2")->node[1] == 0, "subckt: nested port bound to ground");
    emn_netlist_free(&c);

    c = rd("t\nX1 a b nosuch\n");
    ok(!c && has_msg("unknown subcircuit 'nosuch' in X1"), "subckt: unknown subcircuit");
    c = rd("t\nX1 a b c s\n.subckt s p q\nR1 p q 1\n.ends\n");
    ok(!c && has_msg("X1 has 3 nodes but subcircuit 's' has 2 ports"), "subckt: node count");
    c = rd("t\nX1 a s\n.subckt s p\nX2 p t\n.ends\n.subckt t p\nX3 p s\n.ends\n");
    ok(!c && has_msg("x1.x2.x3 instantiates subcircuit 's' inside itself"), "subckt: indirect recursion");
    c = rd("t\n.subckt s p\nR1 p 0 1\n");
    ok(!c && has_msg("missing .ends"), "subckt: missing .ends");
    c = rd("t\nX1 a s w=1\n.subckt s p\nR1 p 0 1\n.ends\n");
    ok(!c && has_msg("has no parameter 'w'"), "subckt: unknown instance parameter");
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void test_include(void)
{
    char dir[] = "/tmp/emnet-netlist-XXXXXX";
    if (!mkdtemp(dir)) {
        ok(0, "include: temp dir");
        return;
    }
    char p[4][512];
    snprintf(p[0], sizeof p[0], "%s/top.cir", dir);
    snprintf(p[1], sizeof p[1], "%s/sub", dir);
    mkdir(p[1], 0700);
    snprintf(p[1], sizeof p[1], "%s/sub/a.inc", dir);
    snprintf(p[2], sizeof p[2], "%s/sub/b.inc", dir);
    snprintf(p[3], sizeof p[3], "%s/cyc.cir", dir);
    write_file(p[0], "top\n.include sub/a.inc\nR1 x 0 rr\n");
    write_file(p[1], "R2 x 0 1\n.INCLUDE \"b.inc\"\n.end\nR9 x 0 1\n");
    write_file(p[2], ".param rr=7\n.subckt s a\nR1 a 0 1\n.ends\nX1 x s\n");
    emn_diag_free(&d);
    emn_circuit *c = emn_netlist_read(p[0], &d);
    ok(c != NULL, "include: nested, relative to the including file, no title line");
    if (!c) show_msgs();
    ok(c && c->elems.n == 3 && el(c, "r1")->value == 7 && el(c, "r.x1.r1") && !el(c, "r9"),
       "include: parameters and subcircuits from includes; .end ends only the included file");
    emn_netlist_free(&c);
    write_file(p[3], "cyc\n.include sub/a.inc\n");
    write_file(p[2], ".include ../cyc.cir\n");
    emn_diag_free(&d);
    c = emn_netlist_read(p[3], &d);
    ok(!c && has_msg("include cycle"), "include: a cycle is an error");
    write_file(p[2], ".include nosuch.inc\n");
    emn_diag_free(&d);
    c = emn_netlist_read(p[0], &d);
    ok(!c && has_msg("cannot read") && d.v[0].loc.line == 1 && d.v[0].loc.file && strstr(d.v[0].loc.file->path, "b.inc"),
       "include: a missing file is an error at its .include line");
    /* messages after the text is released read their lines back, from an
     * unchanged file only */
    write_file(p[3], "quote\nR1 a 0 1\nR2 a 0 2\n");
    emn_diag_free(&d);
    c = emn_netlist_read(p[3], &d);
    emn_diag_release_text(&d);
    if (c) emn_diag_error(&d, el(c, "r2")->loc, "late");
    char *text = NULL;
    size_t size = 0;
    FILE *mem = open_memstream(&text, &size);
    emn_diag_print(&d, mem, 0, true);
    fclose(mem);
    ok(c && d.files && !d.files->text && strstr(text, ":3:1: error: late\n    3 | R2 a 0 2\n      | ^~\n"),
       "released text: a later message quotes its line from the file");
    free(text);
    write_file(p[3], "quote\nR1 a 0 1\nR2 a 0 2.5\n");
    mem = open_memstream(&text, &size);
    emn_diag_print(&d, mem, 0, true);
    fclose(mem);
    ok(c && strstr(text, ":3:1: error: late\n") && !strstr(text, "|"),
       "released text: no quote from a file that has changed since");
    free(text);
    emn_netlist_free(&c);
    for (int i = 0; i < 4; i++) unlink(p[i]);
    snprintf(p[0], sizeof p[0], "%s/sub", dir);
    rmdir(p[0]);
    rmdir(dir);
}

static void test_controls(void)
{
    emn_circuit *c = rd("controls\n"
                        ".tran 1u 1m 0.1m 2u uic\n"
                        ".options reltol=1e-4 method=gear maxord=3 form=flux nopage itl4=20\n"
                        ".op\n"
                        ".save v(a) i(R1)\n"
                        ".print v(a)\n"
                        ".width out=80\n"
                        ".plot tran v(a)\n"
                        "R1 a 0 1\nV1 a 0 1\n");
    ok(c != NULL, "controls: read");
    if (!c) { show_msgs(); return; }
    ok(c->has_tran && c->tstep == 1e-6 && c->tstop == 1e-3 && close_to(c->tstart, 1e-4, 1e-12) &&
       c->tmax == 2e-6 && c->uic, ".tran with all fields");
    ok(c->opt.reltol == 1e-4 && c->opt.method == EMN_METHOD_GEAR && c->opt.maxord == 3 &&
       c->opt.form == EMN_FORM_FLUX && c->opt.itl4 == 20 && c->opt.abstol == 1e-12, ".options");
    ok(c->has_op, ".op");
    ok(c->saves.n == 2 && c->prints.n == 1 && strcmp(c->saves.v[1].text, "i(r1)") == 0, ".save and .print");
    ok(d.nwarnings == 3, "controls: nopage, .width and .plot warn once each");
    emn_netlist_free(&c);
    c = rd("t\n.tran 0 1m\nR1 a 0 1\n");
    ok(!c && has_msg("tstep must be positive"), ".tran tstep 0");
    c = rd("t\n.tran 1u 1m 2m\nR1 a 0 1\n");
    ok(!c && has_msg("tstart"), ".tran tstart beyond tstop");
    c = rd("t\n.model d1 d\nR1 a 0 1\n");
    ok(!c && has_msg("unknown control line '.model'"), "unknown control line");
    c = rd("t\n.options method=euler\nR1 a 0 1\n");
    ok(!c && has_msg("trap or gear"), ".options bad method");
}

static void test_checks(void)
{
    static const struct { const char *text, *msg; } bad[] = {
        {"t\nR1 a 0 0\n", "resistance of R1 must be positive"},
        {"t\nC1 a 0 -1p\n", "capacitance of C1 must be positive"},
        {"t\nL1 a 0 0\n", "inductance of L1 must be positive"},
        {"t\nM1 a 0\n", "mass of M1 must be positive"},
        {"t\nS1 a 0 -1\n", "stiffness of S1 must not be negative"},
        {"t\nD1 a 0 -1\n", "damping of D1 must not be negative"},
        {"t\nL1 a 0 1\nL2 a 0 1\nK1 L1 L2 1\n", "coupling of K1 must be below 1"},
        {"t\nL1 a 0 1\nK1 L1 L3 0.5\n", "K1 couples 'l3', which is not an element"},
        {"t\nL1 a 0 1\nC3 a 0 1\nK1 L1 C3 0.5\n", "K1 couples C3, which is not an inductor"},
        {"t\nM1 cone 1\nC1 cone 0 1u\n", "node 'cone' is mechanical but C1 uses it as electrical"},
        {"t\nR1 a 0 1\nC1 b 0 C='1p*(1+x(a))'\n", "node 'a' is electrical but C1 uses it in x()"},
        {"t\nR1 a 0 'x(m)'\n", "the value of R1 cannot depend on x()"},
        {"t\nT1 a 0 m 0 'x(m)'\n", "the value of T1 cannot depend on x()"},
        {"t\nR1 a 0 'time'\n", "'time' may be used only in source expressions"},
        {"t\nR1 a 0\n", "too few fields for R1"},
        {"t\nR1 a 0 1 2\n", "unexpected '2' in R1"},
        {"t\n+ R1 a 0 1\n", "continuation line with no card before it"},
        {"t\nR1 a 0 'a+\n", "missing closing quote"},
        {"t\nR1 a 0 1\n.print tran v(zz)\n", "unknown node 'zz'"},
        {"t\nR1 a 0 1\n.print tran i(r2)\n", "unknown element 'r2'"},
        {"t\nR1 a 0 1\nM1 m 1\n.print tran i(M1)\n", "i() needs an electrical element"},
        {"t\nR1 a 0 1\n.ic x(a)=1\n", "x() of electrical node 'a'"},
        {"t\nJ1 0 'x(b)'\n", "J1 cannot define the ground node"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        emn_circuit *c = rd(bad[i].text);
        int good = !c && d.nerrors >= 1 && has_msg(bad[i].msg);
        ok(good, "checks: %s", bad[i].msg);
        if (!good) show_msgs();
        emn_netlist_free(&c);
    }
}

int main(void)
{
    test_elements();
    test_numbers();
    test_sources();
    test_lexical();
    test_expressions();
    test_movable();
    test_subckt();
    test_include();
    test_controls();
    test_checks();
    emn_diag_free(&d);
    return tap_done();
}
