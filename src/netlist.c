/*
 * netlist.c: the model builder behind the grammar, and the checked circuit
 * it produces (netlist.h).
 *
 * Reading happens in two stages.  While the parser runs, each card is
 * stored as it was written (fields point into the source text, so a
 * million-line deck costs a few words per field), .include files are read
 * in place, and .subckt bodies are set aside under their names.  After
 * reading, the stored cards are interpreted: global .param first (SPICE
 * lets an element use a parameter defined further down), then elements and
 * controls in file order, expanding subcircuit instances recursively with
 * their own parameter scopes, then the cards that name signals, and last the
 * checks that need the whole circuit (K partners, J chains, C(x) and L(x) at
 * the initial state).  Every error is recorded and reading goes on, so one
 * run reports all the mistakes in a file.
 *
 * Names are looked up through hash tables: node and element counts reach
 * 10^6 in power-grid decks, and nothing here may be quadratic in them.
 */
#include "config.h"
#include "netlist.h"
#include "build.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EMN_INCLUDE_DEPTH 64
#define EMN_SUBCKT_DEPTH 100
/* Deeper expressions would overflow the C stack in the recursive walkers of
 * expr.c (and bison's stack long before a human writes one). */
#define EMN_EXPR_DEPTH 1000
/* Memory bounds: a netlist (or a subcircuit expanded exponentially) past
 * these is refused with a message instead of exhausting memory or time. */
#define EMN_MAX_NODES 10000000
#define EMN_MAX_CARDS 10000000     /* element and instance cards after expansion */
#define EMN_MAX_ERRORS 1000        /* then expansion stops: nobody reads more */
#define EMN_MAX_CARD_BYTES (1L << 20)  /* one card, continuation lines included */

/* ------------------------------------------------------------------ names */

/* Open-addressing map from lower-case names to ints.  Keys are owned by an
 * arena; the map only points at them.  A slot holds the key's hash, its
 * value and the key together: a grid deck's tables outgrow the caches,
 * and a probe then costs one miss (and the key's, on a hash match) rather
 * than one per array. */
typedef struct strslot {
    uint32_t hash;
    int val;
    const char *key;        /* NULL: empty */
} strslot;

typedef struct strmap {
    strslot *slot;
    int cap, n;
} strmap;

/* FNV-1a of s[0, n), with ASCII capitals taken as small letters if fold
 * (a name as written, before it is stored in lower case). */
static inline uint32_t fnv_name(const char *s, size_t n, bool fold)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (fold && c >= 'A' && c <= 'Z') c += 'a' - 'A';
        h = (h ^ c) * 16777619u;
    }
    return h;
}

static uint32_t hash_name(const char *s, size_t n)
{
    return fnv_name(s, n, false);
}

/* The slot where the probe for a name as written (any case) starts,
 * for map_prefetch: a letter that tolower() would map and this does not
 * only makes it fetch a line for nothing. */
static const strslot *map_first_slot(const strmap *m, const char *s, int n)
{
    return &m->slot[fnv_name(s, (size_t)n, true) & (uint32_t)(m->cap - 1)];
}

/* Fetch that slot ahead.  A card's names are looked up when the card
 * ends; parsing the rest of the card meanwhile hides the miss that a grid
 * deck's tables, larger than the caches, cost on every lookup.  A macro:
 * GCC takes a function whose only effect is a prefetch for one without
 * effects, and drops its calls. */
#if defined(__GNUC__)
#define map_prefetch(m, s, n) do { if ((m)->cap) __builtin_prefetch(map_first_slot(m, s, n)); } while (0)
#else
#define map_prefetch(m, s, n) ((void)0)
#endif

static int map_find(const strmap *m, const char *k, size_t n)
{
    if (!m->cap) return -1;
    uint32_t h = hash_name(k, n);
    for (uint32_t i = h & (uint32_t)(m->cap - 1);; i = (i + 1) & (uint32_t)(m->cap - 1)) {
        const strslot *e = &m->slot[i];
        if (!e->key) return -1;
        if (e->hash == h && strncmp(e->key, k, n) == 0 && e->key[n] == '\0') return e->val;
    }
}

/* Place key k (hash h) with value v; the table has room. */
static void map_place(strmap *m, const char *k, uint32_t h, int v)
{
    uint32_t i = h & (uint32_t)(m->cap - 1);
    while (m->slot[i].key && (m->slot[i].hash != h || strcmp(m->slot[i].key, k) != 0))
        i = (i + 1) & (uint32_t)(m->cap - 1);
    if (!m->slot[i].key) m->n++;
    m->slot[i] = (strslot){h, v, k};
}

/* Move the keys into a table of cap slots (a power of two). */
static void map_rehash(strmap *m, int cap)
{
    strmap g = {0};
    g.cap = cap;
    g.slot = emn_xcalloc((size_t)g.cap, sizeof *g.slot);
    for (int i = 0; i < m->cap; i++)
        if (m->slot[i].key) map_place(&g, m->slot[i].key, m->slot[i].hash, m->slot[i].val);
    free(m->slot);
    *m = g;
}

static void map_put(strmap *m, const char *k, int v)
{
    if (2 * (m->n + 1) > m->cap) map_rehash(m, m->cap ? 2 * m->cap : 16);
    map_place(m, k, hash_name(k, strlen(k)), v);
}

/* Room for n keys without rehashing on the way. */
static void map_reserve(strmap *m, int n)
{
    if (2 * (long)n <= m->cap) return;
    int cap = 16;
    while (cap < 2 * (long)n) cap *= 2;
    map_rehash(m, cap);
}

static void map_free(strmap *m)
{
    free(m->slot);
    *m = (strmap){0};
}

/* ------------------------------------------------------------ the builder */

typedef struct card {
    emn_loc loc;                /* the first word */
    int nf;
    emn_field **f;              /* the fields after the first word */
    struct card *next;
} card;

typedef struct cardlist { card *head, *tail; } cardlist;

typedef struct subckt {
    const char *name;
    emn_loc loc;
    int nports;
    emn_field **ports;
    strmap portmap;
    int nparams;
    emn_field **params;         /* ASSIGN fields: the defaults */
    cardlist body;
    bool active;                /* being expanded: seeing it again is recursion */
    bool closed;
    struct subckt *outer;       /* the definition this one is nested in */
} subckt;

/* Parameters visible in one instance (or at the top level). */
typedef struct scope {
    strmap map;
    struct { double *v; int n, cap; } vals;
    const struct scope *parent;
} scope;

/* One level of subcircuit expansion. */
typedef struct inst {
    const char *path;           /* NULL at top level; "x1", "x1.x2" */
    const subckt *def;
    const int *ports;           /* node indices bound to def's ports */
    scope *sc;
    int depth;
} inst;

/* What the builder knows about a node beyond the model: who fixed its
 * domain, for the error that names both elements. */
typedef struct nodeinfo {
    const char *who;
    emn_loc loc;
    bool via_x;
} nodeinfo;

typedef struct eleminfo {
    const char *disp;           /* the name as messages show it */
    emn_loc value_loc;          /* its value, for the initial state's check */
} eleminfo;

/* What a K element names, until the inductors are looked up: one per K,
 * in element order (kept apart from eleminfo, which every element has). */
typedef struct kinfo {
    const char *kname[2];       /* full names of the inductors */
    emn_loc kloc[2];
} kinfo;

struct emn_build {
    emn_diag *d;
    emn_circuit *c;
    emn_arena *ar;              /* the model's arena (expressions, names) */
    emn_arena *tmp;             /* cards and fields: freed after building */
    emn_arena *shown;           /* the names messages show: freed after reading */
    /* the card being parsed */
    emn_loc cur_loc;
    int cur_nodes;              /* the card's node fields, for map_prefetch */
    emn_flist cur;
    bool card_bad;
    bool expr_milli;            /* the expression being parsed has an m or M number (emn_build_num) */
    /* reading */
    cardlist top;
    subckt *open;               /* innermost .subckt being defined */
    strmap subckts;
    struct { subckt **v; int n, cap; } defs;
    const char *incl[EMN_INCLUDE_DEPTH + 1];   /* real paths of the files being read */
    const char *incl_disp[EMN_INCLUDE_DEPTH + 1];   /* and as they were named */
    int nincl;
    bool stop;
    /* building */
    strmap nodes, elems;
    struct { nodeinfo *v; int n, cap; } ninfo;
    struct { eleminfo *v; int n, cap; } einfo;
    emn_mapped map_nodes, map_ninfo, map_elems, map_einfo;   /* their room's mapped stretch */
    struct { kinfo *v; int n, cap; } kinfo;
    struct { card **v; int n, cap; } late;     /* .ic, .print, .save */
    emn_buf scratch;
    /* the top level's parameters, and the top level as an instance */
    scope global;
    inst top_inst;
    /* element cards are built as they are read, and their fields
     * forgotten, until one has to wait for the whole file (see
     * streamable): from then on every element card waits, in order */
    bool waiting;
    emn_arena_mark card_mark;   /* b->tmp before the open card */
    long ncards;                /* element and instance cards expanded */
    long max_nodes, max_cards;  /* EMN_MAX_NODES, EMN_MAX_CARDS or lower */
    bool too_big;               /* a limit was hit: expansion has stopped */
    /* depths of the expressions built so far, by address */
    struct { const emn_expr **key; int *val; int n, cap; } depth;
};

const char *emn_build_text(emn_loc loc)
{
    return loc.file->text + loc.file->line_start[loc.line] + loc.col - 1;
}

void emn_build_error(emn_build *b, emn_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emn_diag_vadd(b->d, EMN_SEV_ERROR, loc, fmt, ap);
    va_end(ap);
    b->card_bad = true;
}

#define error emn_build_error

/* Lower-case copy of the text at loc, in the model's arena. */
static const char *lower_dup(emn_build *b, emn_loc loc)
{
    char *s = emn_arena_strndup(b->ar, emn_build_text(loc), (size_t)loc.len);
    return emn_strlower(s);
}

/* Lower-case copy in the scratch buffer, valid until the next call. */
static const char *lower_tmp(emn_build *b, emn_loc loc)
{
    b->scratch.n = 0;
    EMN_GROW(b->scratch, loc.len + 1);
    const char *s = emn_build_text(loc);
    for (int i = 0; i < loc.len; i++) b->scratch.v[i] = (char)tolower((unsigned char)s[i]);
    b->scratch.v[loc.len] = '\0';
    return b->scratch.v;
}

static emn_loc field_loc(const emn_field *f);

/* The text of a field as written, for messages. */
static const char *field_text(emn_build *b, const emn_field *f)
{
    emn_loc l = field_loc(f);
    const emn_field *last = f->kind == EMN_FIELD_ASSIGN ? f->value : f;
    emn_loc e = last->loc;
    if (last->kind == EMN_FIELD_CALL && last->args) {
        const emn_field *a = last->args;
        while (a->next) a = a->next;
        e = a->loc;
        e.len++;                /* the closing parenthesis, if written right after */
    }
    if (e.line == l.line && e.col + e.len > l.col) l.len = e.col + e.len - l.col;
    return emn_arena_strndup(b->tmp, emn_build_text(l), (size_t)l.len);
}

static emn_loc field_loc(const emn_field *f)
{
    return f->kind == EMN_FIELD_ASSIGN ? f->key->loc : f->loc;
}

/* ---------------------------------------------------------------- numbers */

/* The digits of a mantissa, while they fit a double exactly. */
typedef struct { uint64_t m; int frac; bool exact; } mantissa;

static void mantissa_digit(mantissa *M, int d, bool frac)
{
    if (M->m > ((UINT64_C(1) << 53) - 1 - (uint64_t)d) / 10) {
        M->exact = false;
        return;
    }
    M->m = 10 * M->m + (uint64_t)d;
    M->frac += frac;
}

/* m 10^e rounded once, where m and 10^|e| are exact doubles (m below 2^53,
 * |e| at most 22): one multiplication or division rounds as strtod does
 * (Clinger's fast path).  Returns false where that does not apply. */
static bool exact_decimal(uint64_t m, long e, double *x)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (e < -22 || e > 22) return false;
    *x = e >= 0 ? (double)m * p10[e] : (double)m / p10[-e];
    return true;
}

/*
 * A SPICE number: [sign] digits [. digits] [e [sign] digits] [scale] [unit].
 * The scale suffix is f p n u m k meg g t mil, any case; letters after it are
 * a unit and are ignored.  After an exponent, letters are only a unit
 * (`1e-6F` is one microfarad), which is what people who write exponents
 * mean.  Returns 0, or 1 + the offset of the first character that does not
 * belong (digits or dots after the number, as in 1k2x3.4 or 1.2.3u).
 * *milli is set when the scale was m or M (the 1M trap).
 */
static int parse_number(const char *s, int n, double *v, bool *milli)
{
    int i = 0;
    *milli = false;
    bool neg = i < n && s[i] == '-';
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    mantissa M = {0, 0, true};
    int d0 = i;
    for (; i < n && isdigit((unsigned char)s[i]); i++) mantissa_digit(&M, s[i] - '0', false);
    int nd = i - d0;
    if (i < n && s[i] == '.') {
        i++;
        int f0 = i;
        for (; i < n && isdigit((unsigned char)s[i]); i++) mantissa_digit(&M, s[i] - '0', true);
        nd += i - f0;
    }
    if (nd == 0) return 1;
    bool expo = false;
    long e10 = 0;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int j = i + 1;
        bool eneg = j < n && s[j] == '-';
        if (j < n && (s[j] == '+' || s[j] == '-')) j++;
        if (j < n && isdigit((unsigned char)s[j])) {
            for (; j < n && isdigit((unsigned char)s[j]); j++)
                if (e10 < 100000) e10 = 10 * e10 + (s[j] - '0');
            if (eneg) e10 = -e10;
            i = j;
            expo = true;
        }
    }
    char buf[64];
    if (i >= (int)sizeof buf) return 1;
    double x;
    if (M.exact && exact_decimal(M.m, e10 - M.frac, &x)) {
        if (neg) x = -x;
    } else {
        memcpy(buf, s, (size_t)i);
        buf[i] = '\0';
        x = strtod(buf, NULL);
    }
    if (!expo && i < n) {
        char c = (char)tolower((unsigned char)s[i]);
        double scale = 0;
        int len = 1;
        if (c == 'm' && i + 2 < n + 0 && tolower((unsigned char)s[i + 1]) == 'e' &&
            tolower((unsigned char)s[i + 2]) == 'g') {
            scale = 1e6, len = 3;
        } else if (c == 'm' && i + 2 < n + 0 && tolower((unsigned char)s[i + 1]) == 'i' &&
                   tolower((unsigned char)s[i + 2]) == 'l') {
            scale = 25.4e-6, len = 3;
        } else {
            switch (c) {
            case 'f': scale = 1e-15; break;
            case 'p': scale = 1e-12; break;
            case 'n': scale = 1e-9; break;
            case 'u': scale = 1e-6; break;
            case 'm': scale = 1e-3; *milli = true; break;
            case 'k': scale = 1e3; break;
            case 'g': scale = 1e9; break;
            case 't': scale = 1e12; break;
            default: len = 0; break;
            }
        }
        if (len) {
            x *= scale;
            i += len;
        }
    }
    int unit = i;
    while (i < n && isalpha((unsigned char)s[i])) i++;
    if (i < n) return 1 + (i > unit ? unit : i);
    *v = x;
    return 0;
}

/* Whether a word is meant as a number (and must parse as one) rather than a
 * parameter name. */
static bool numberish(const char *s, int n)
{
    int i = 0;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i < n && s[i] == '.') i++;
    return i < n && isdigit((unsigned char)s[i]);
}

/* Convert the number at loc, or record an error pointing at what follows
 * the number.  Returns 0 or -1. */
static int number_at(emn_build *b, emn_loc loc, double *v, bool *milli)
{
    const char *s = emn_build_text(loc);
    bool m;
    int bad = parse_number(s, loc.len, v, &m);
    if (milli) *milli = m;
    if (!bad) return 0;
    int off = bad - 1;
    if (off == 0) {
        error(b, loc, "invalid number '%.*s'", loc.len, s);
    } else {
        emn_loc at = loc;
        at.col += off;
        at.len = loc.len - off;
        error(b, at, "invalid number '%.*s': '%.*s' cannot follow '%.*s'", loc.len, s,
              loc.len - off, s + off, off, s);
    }
    return -1;
}

/* ----------------------------------------------------- grammar callbacks */

static int kind_of_letter(char c);
static emn_flist flist_add(emn_flist l, emn_field *f);

/* The terminals of an element card at the top level, which are node
 * names as written: their slots in the node table are fetched as the
 * card is read (map_prefetch), as is the element name's. */
static int top_terminals(const emn_build *b, emn_loc name);

void emn_build_card_begin(emn_build *b, emn_loc name)
{
    b->card_mark = emn_arena_get_mark(b->tmp);
    b->expr_milli = false;      /* nothing left from a card dropped mid-expression */
    b->cur_loc = name;
    b->cur = (emn_flist){0};
    b->cur_nodes = top_terminals(b, name);
    if (b->cur_nodes > 0) map_prefetch(&b->elems, emn_build_text(name), name.len);
}

void emn_build_card_field(emn_build *b, emn_field *f)
{
    if (b->cur.n < b->cur_nodes && f->kind == EMN_FIELD_WORD)
        map_prefetch(&b->nodes, emn_build_text(f->loc), f->loc.len);
    b->cur = flist_add(b->cur, f);
}

void emn_build_card_abort(emn_build *b)
{
    b->cur = (emn_flist){0};
    b->card_bad = false;
}

bool emn_build_stopped(const emn_build *b)
{
    return b->stop;
}

static emn_field *new_field(emn_build *b, emn_field_kind kind, emn_loc loc)
{
    emn_field *f = emn_arena_alloc(b->tmp, sizeof *f);
    f->kind = kind;
    f->loc = loc;
    return f;
}

emn_field *emn_build_word(emn_build *b, emn_loc loc)
{
    return new_field(b, EMN_FIELD_WORD, loc);
}

emn_field *emn_build_string(emn_build *b, emn_loc loc)
{
    return new_field(b, EMN_FIELD_STRING, loc);
}

emn_field *emn_build_exprfield(emn_build *b, const emn_expr *e, emn_loc loc)
{
    emn_field *f = new_field(b, EMN_FIELD_EXPR, loc);
    f->expr = e;
    f->milli = b->expr_milli;
    b->expr_milli = false;
    return f;
}

emn_field *emn_build_callfield(emn_build *b, emn_loc name, const emn_flist *args)
{
    emn_field *f = new_field(b, EMN_FIELD_CALL, name);
    f->args = args ? args->head : NULL;
    f->nargs = args ? args->n : 0;
    return f;
}

emn_field *emn_build_assign(emn_build *b, emn_field *key, emn_field *value)
{
    emn_field *f = new_field(b, EMN_FIELD_ASSIGN, key->loc);
    f->key = key;
    f->value = value;
    return f;
}

static emn_flist flist_add(emn_flist l, emn_field *f)
{
    f->next = NULL;
    if (l.tail) l.tail->next = f;
    else l.head = f;
    l.tail = f;
    l.n++;
    return l;
}

emn_flist *emn_build_arg(emn_build *b, emn_flist *l, emn_field *f)
{
    if (!l) {
        l = emn_arena_alloc(b->tmp, sizeof *l);
        *l = (emn_flist){0};
    }
    *l = flist_add(*l, f);
    return l;
}

const emn_expr *emn_build_num(emn_build *b, emn_loc loc)
{
    double v = 0;
    bool m = false;
    number_at(b, loc, &v, &m);
    b->expr_milli |= m;
    return emn_expr_num(b->ar, v);
}

const emn_expr *emn_build_name(emn_build *b, emn_loc loc)
{
    return emn_expr_name(b->ar, lower_dup(b, loc), loc);
}

emn_exprlist *emn_build_exprlist(emn_build *b, emn_exprlist *l, const emn_expr *e, emn_loc loc)
{
    emn_exprlist *n = emn_arena_alloc(b->tmp, sizeof *n);
    n->e = e;
    n->loc = loc;
    n->next = l;                /* built backwards; emn_build_call turns it round */
    return n;
}

static emn_loc last_loc(const emn_exprlist *l)
{
    while (l->next) l = l->next;
    return l->loc;
}

static const emn_expr *depth_checked(emn_build *b, const emn_expr *e);

const emn_expr *emn_build_call(emn_build *b, emn_loc name, emn_exprlist *args)
{
    emn_exprlist *rev = NULL;
    int n = 0;
    while (args) {
        emn_exprlist *next = args->next;
        args->next = rev;
        rev = args;
        args = next;
        n++;
    }
    const char *fn = lower_dup(b, name);
    if (strcmp(fn, "x") == 0) {
        /* x(m) and x(m1,m2) name nodes, which may look like numbers */
        if (n > 2) {
            error(b, name, "x() takes one or two nodes, not %d", n);
            return emn_expr_num(b->ar, 0);
        }
        const char *nodes[2] = {NULL, NULL};
        int i = 0;
        for (emn_exprlist *a = rev; a; a = a->next, i++) {
            if (a->e->op != EMN_EX_NAME && a->e->op != EMN_EX_NUM) {
                error(b, a->loc, "x() takes node names");
                return emn_expr_num(b->ar, 0);
            }
            nodes[i] = lower_dup(b, a->loc);
        }
        emn_loc at = name;      /* underline x(...) as written on its line */
        if (rev && last_loc(rev).line == at.line)
            at.len = last_loc(rev).col + last_loc(rev).len + 1 - at.col;
        return emn_expr_xref(b->ar, nodes[0], nodes[1], at);
    }
    int lo, hi;
    int id = emn_expr_func_lookup(fn, &lo, &hi);
    if (id < 0) {
        error(b, name, "unknown function '%s'", fn);
        return emn_expr_num(b->ar, 0);
    }
    if (n < lo || n > hi) {
        if (lo == hi)
            error(b, name, "%s() takes %d argument%s, not %d", fn, lo, lo == 1 ? "" : "s", n);
        else
            error(b, name, "%s() takes %d to %d arguments, not %d", fn, lo, hi, n);
        return emn_expr_num(b->ar, 0);
    }
    const emn_expr **v = emn_arena_alloc(b->ar, (size_t)(n ? n : 1) * sizeof *v);
    int i = 0;
    for (emn_exprlist *a = rev; a; a = a->next) v[i++] = a->e;
    return depth_checked(b, emn_expr_call(b->ar, (emn_func)id, n, v, name));
}

static uint32_t hash_ptr(const void *p)
{
    uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

static void depth_put(emn_build *b, const emn_expr *e, int v)
{
    if (2 * (b->depth.n + 1) > b->depth.cap) {
        int oc = b->depth.cap;
        const emn_expr **ok = b->depth.key;
        int *ov = b->depth.val;
        b->depth.cap = oc ? 2 * oc : 256;
        b->depth.key = emn_xcalloc((size_t)b->depth.cap, sizeof *b->depth.key);
        b->depth.val = emn_xcalloc((size_t)b->depth.cap, sizeof *b->depth.val);
        b->depth.n = 0;
        for (int i = 0; i < oc; i++)
            if (ok[i]) depth_put(b, ok[i], ov[i]);
        free(ok);
        free(ov);
    }
    uint32_t m = (uint32_t)b->depth.cap - 1, i = hash_ptr(e) & m;
    while (b->depth.key[i] && b->depth.key[i] != e) i = (i + 1) & m;
    if (!b->depth.key[i]) b->depth.n++;
    b->depth.key[i] = e;
    b->depth.val[i] = v;
}

/* The depth of e, or more than EMN_EXPR_DEPTH if it is too deep.  Nodes the
 * parser built are remembered, so a chain of n operators costs O(n); the
 * recursion only walks nodes the simplifying constructors made afresh, and
 * never deeper than the limit. */
static int expr_depth(emn_build *b, const emn_expr *e, int level)
{
    if (!e) return 0;
    if (level > EMN_EXPR_DEPTH) return EMN_EXPR_DEPTH + 1;
    if (b->depth.cap) {
        uint32_t m = (uint32_t)b->depth.cap - 1, i = hash_ptr(e) & m;
        for (; b->depth.key[i]; i = (i + 1) & m)
            if (b->depth.key[i] == e) return b->depth.val[i];
    }
    int d = 0, k;
    switch (e->op) {
    case EMN_EX_NUM: case EMN_EX_VAR: case EMN_EX_NAME: case EMN_EX_XREF: return 1;
    case EMN_EX_CALL:
        for (int i = 0; i < e->nargs; i++)
            if ((k = expr_depth(b, e->args[i], level + 1)) > d) d = k;
        break;
    default:
        d = expr_depth(b, e->a, level + 1);
        if ((k = expr_depth(b, e->b, level + 1)) > d) d = k;
        break;
    }
    depth_put(b, e, d + 1);
    return d + 1;
}

/* Every operator the parser builds passes here: past the limit the card is
 * in error once and the expression is cut to 0, so the walkers never see it. */
static const emn_expr *depth_checked(emn_build *b, const emn_expr *e)
{
    if (expr_depth(b, e, 0) <= EMN_EXPR_DEPTH) return e;
    if (!b->card_bad)
        error(b, b->cur_loc, "expression nested more than %d deep", EMN_EXPR_DEPTH);
    return emn_expr_num(b->ar, 0);
}

const emn_expr *emn_build_binary(emn_build *b, emn_exop op, const emn_expr *x, const emn_expr *y)
{
    return depth_checked(b, emn_expr_binary(b->ar, op, x, y));
}

const emn_expr *emn_build_neg(emn_build *b, const emn_expr *x)
{
    return depth_checked(b, emn_expr_neg(b->ar, x));
}

/* ---------------------------------------------------------------- reading */

static void read_file(emn_build *b, const emn_srcfile *f, bool title);

/* Control words, and where they may appear.  ORDER ctl */
enum {
    CTL_PARAM, CTL_TRAN, CTL_IC, CTL_PRINT, CTL_SAVE, CTL_OPTIONS, CTL_INCLUDE,
    CTL_SUBCKT, CTL_ENDS, CTL_OP, CTL_END, CTL_IGNORED, CTL_UNKNOWN
};

static int control_kind(const char *w)
{
    static const struct { const char *name; int kind; } table[] = {
        {".param", CTL_PARAM}, {".tran", CTL_TRAN}, {".ic", CTL_IC}, {".print", CTL_PRINT},
        {".save", CTL_SAVE}, {".options", CTL_OPTIONS}, {".option", CTL_OPTIONS},
        {".opt", CTL_OPTIONS}, {".opti", CTL_OPTIONS}, {".include", CTL_INCLUDE},
        {".inc", CTL_INCLUDE}, {".subckt", CTL_SUBCKT}, {".ends", CTL_ENDS}, {".op", CTL_OP},
        {".end", CTL_END}, {".width", CTL_IGNORED}, {".plot", CTL_IGNORED},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(w, table[i].name) == 0) return table[i].kind;
    return CTL_UNKNOWN;
}

static void push_card(cardlist *l, card *c)
{
    if (l->tail) l->tail->next = c;
    else l->head = c;
    l->tail = c;
}

/* .include file: read it now, in place, into the same builder. */
static void do_include(emn_build *b, const card *k)
{
    if (k->nf != 1 || (k->f[0]->kind != EMN_FIELD_WORD && k->f[0]->kind != EMN_FIELD_STRING)) {
        error(b, k->loc, ".include needs one file name");
        return;
    }
    const emn_field *f = k->f[0];
    emn_loc at = f->loc;
    const char *s = emn_build_text(at);
    int n = at.len;
    if (f->kind == EMN_FIELD_STRING) s++, n -= 2;
    /* relative to the directory of the including file */
    const char *from = k->loc.file->path;
    const char *slash = strrchr(from, '/');
    char *path;
    if (s[0] == '/' || !slash)
        path = emn_xasprintf("%.*s", n, s);
    else
        path = emn_xasprintf("%.*s/%.*s", (int)(slash - from), from, n, s);
    if (b->nincl >= EMN_INCLUDE_DEPTH) {
        error(b, at, ".include nested more than %d deep", EMN_INCLUDE_DEPTH);
        free(path);
        return;
    }
    char *real = realpath(path, NULL);
    const char *key = real ? real : path;
    for (int i = 0; i < b->nincl; i++) {
        if (strcmp(b->incl[i], key) == 0) {
            emn_buf chain = {0};
            for (int j = i; j < b->nincl; j++) emn_buf_printf(&chain, "%s -> ", b->incl_disp[j]);
            emn_buf_puts(&chain, path);
            emn_diag_error(b->d, at, "include cycle: %s", chain.v);
            emn_buf_free(&chain);
            free(real);
            free(path);
            return;
        }
    }
    emn_srcfile *src = emn_diag_read_file(b->d, path, at);
    if (src) {
        b->incl_disp[b->nincl] = emn_arena_strdup(b->tmp, path);
        b->incl[b->nincl++] = emn_arena_strdup(b->tmp, key);
        bool stop = b->stop;
        read_file(b, src, false);
        b->stop = stop;         /* .end in an included file ends only that file */
        b->nincl--;
    }
    free(real);
    free(path);
}

static void begin_subckt(emn_build *b, card *k)
{
    subckt *s = emn_arena_alloc(b->tmp, sizeof *s);
    s->loc = k->loc;
    s->outer = b->open;
    b->open = s;                /* even a bad header opens a body, so .ends pairs up */
    if (k->nf < 1 || k->f[0]->kind != EMN_FIELD_WORD) {
        error(b, k->loc, ".subckt needs a name");
        return;
    }
    s->name = lower_dup(b, k->f[0]->loc);
    s->loc = k->f[0]->loc;
    s->ports = emn_arena_alloc(b->tmp, (size_t)k->nf * sizeof *s->ports);
    s->params = emn_arena_alloc(b->tmp, (size_t)k->nf * sizeof *s->params);
    bool in_params = false;
    for (int i = 1; i < k->nf; i++) {
        emn_field *f = k->f[i];
        if (f->kind == EMN_FIELD_WORD && strcmp(lower_tmp(b, f->loc), "params:") == 0) {
            in_params = true;
        } else if (f->kind == EMN_FIELD_ASSIGN && f->key->kind == EMN_FIELD_WORD) {
            in_params = true;
            s->params[s->nparams++] = f;
        } else if (f->kind == EMN_FIELD_WORD && !in_params) {
            const char *p = lower_dup(b, f->loc);
            if (strcmp(p, "0") == 0 || strcmp(p, "gnd") == 0) {
                error(b, f->loc, "ground cannot be a port of subcircuit '%s'", s->name);
            } else if (map_find(&s->portmap, p, strlen(p)) >= 0) {
                error(b, f->loc, "port '%s' appears twice in subcircuit '%s'", p, s->name);
            } else {
                map_put(&s->portmap, p, s->nports);
                s->ports[s->nports++] = f;
            }
        } else {
            error(b, field_loc(f), "unexpected '%s' in .subckt", field_text(b, f));
        }
    }
    int old = map_find(&b->subckts, s->name, strlen(s->name));
    if (old >= 0) {
        error(b, s->loc, "subcircuit '%s' is defined twice", s->name);
        emn_diag_note(b->d, b->defs.v[old]->loc, "first definition of '%s'", s->name);
        map_free(&s->portmap);  /* only defs' maps are freed at the end */
        return;
    }
    map_put(&b->subckts, s->name, b->defs.n);
    EMN_PUSH(b->defs, s);
}

static void end_subckt(emn_build *b, card *k)
{
    subckt *s = b->open;
    if (!s) {
        error(b, k->loc, ".ends without .subckt");
        return;
    }
    if (k->nf >= 1 && k->f[0]->kind == EMN_FIELD_WORD && s->name) {
        const char *w = lower_tmp(b, k->f[0]->loc);
        if (strcmp(w, s->name) != 0)
            error(b, k->f[0]->loc, ".ends %s closes subcircuit '%s'", w, s->name);
    }
    s->closed = true;
    b->open = s->outer;
}

static void card_end(emn_build *b);
static bool streamable(const card *k);
static void add_card(emn_build *b, const inst *in, const card *k);

void emn_build_card_end(emn_build *b)
{
    if (b->card_bad) {
        emn_build_card_abort(b);
        return;
    }
    card_end(b);
    /* an error about this card marks it bad: it is consumed now, and the
     * mark must not fall on the next one */
    b->card_bad = false;
}

static void card_end(emn_build *b)
{
    card *k = emn_arena_alloc(b->tmp, sizeof *k);
    k->loc = b->cur_loc;
    k->nf = b->cur.n;
    k->f = emn_arena_alloc(b->tmp, (size_t)(k->nf ? k->nf : 1) * sizeof *k->f);
    int i = 0;
    for (emn_field *f = b->cur.head; f; f = f->next) k->f[i++] = f;
    b->cur = (emn_flist){0};
    if (k->nf > 0) {
        emn_loc e = field_loc(k->f[k->nf - 1]);
        long from = k->loc.file->line_start[k->loc.line] + k->loc.col - 1;
        long to = e.file ? e.file->line_start[e.line] + e.col - 1 + e.len : from;
        if (to - from > EMN_MAX_CARD_BYTES) {
            error(b, k->loc, "line too long: %ld bytes with its continuations (the limit is %ld)",
                  to - from, EMN_MAX_CARD_BYTES);
            return;
        }
    }
    const char *w = emn_build_text(k->loc);
    if (w[0] == '.') {
        const char *name = lower_tmp(b, k->loc);
        int ctl = control_kind(name);
        switch (ctl) {
        case CTL_INCLUDE: do_include(b, k); return;
        case CTL_SUBCKT: begin_subckt(b, k); return;
        case CTL_ENDS: end_subckt(b, k); return;
        case CTL_END:
            if (b->nincl == 1) b->c->end_loc = k->loc;     /* the top-level file's */
            b->stop = true;
            return;
        case CTL_UNKNOWN: error(b, k->loc, "unknown control line '%s'", name); return;
        case CTL_PARAM: break;
        default:
            if (b->open) {
                error(b, k->loc, "'%s' is not allowed inside a subcircuit", name);
                return;
            }
        }
    }
    if (!b->open && w[0] != '.') {
        if (!b->waiting && streamable(k)) {
            add_card(b, &b->top_inst, k);
            emn_arena_release(b->tmp, b->card_mark);
            return;
        }
        b->waiting = true;
    }
    push_card(b->open ? &b->open->body : &b->top, k);
}

static void read_file(emn_build *b, const emn_srcfile *f, bool title)
{
    const char *nul = memchr(f->text, '\0', (size_t)f->len);
    if (nul) {
        long off = nul - f->text;
        int line = 1;
        while (line < f->nlines && f->line_start[line + 1] <= off) line++;
        emn_loc at = {f, line, (int)(off - f->line_start[line]) + 1, 1};
        emn_diag_error(b->d, at, "file is not text (NUL byte)");
        return;
    }
    b->stop = false;
    b->card_bad = false;
    emn_build_parse_file(b, f, title);
}

/* ------------------------------------------------------------- parameters */

static void scope_set(emn_build *b, scope *sc, const char *name, double v)
{
    int i = map_find(&sc->map, name, strlen(name));
    if (i >= 0) {
        sc->vals.v[i] = v;
        return;
    }
    map_put(&sc->map, name, sc->vals.n);
    EMN_PUSH(sc->vals, v);
}

static bool scope_get(const scope *sc, const char *name, size_t n, double *v)
{
    for (; sc; sc = sc->parent) {
        int i = map_find(&sc->map, name, n);
        if (i >= 0) {
            *v = sc->vals.v[i];
            return true;
        }
    }
    return false;
}

static void scope_free(scope *sc)
{
    map_free(&sc->map);
    free(sc->vals.v);
}

/* ------------------------------------------------------------------ nodes */

static int add_node(emn_build *b, const char *name, emn_loc loc)
{
    int i = b->c->nodes.n;
    if (i >= b->max_nodes) {
        if (!b->too_big) error(b, loc, "too many nodes (the limit is %ld)", b->max_nodes);
        b->too_big = true;
        return 0;               /* ground: the circuit is discarded anyway */
    }
    EMN_PUSH(b->c->nodes, ((emn_node){name, loc, EMN_DOM_NONE, -1}));
    EMN_PUSH(b->ninfo, ((nodeinfo){0}));
    EMN_MAP_AHEAD(b->map_nodes, b->c->nodes);
    EMN_MAP_AHEAD(b->map_ninfo, b->ninfo);
    map_put(&b->nodes, name, i);
    return i;
}

/* The node a name written in instance `in` refers to, created on first use
 * when `create` is set; -1 if it does not exist. */
static int node_of(emn_build *b, const inst *in, const char *name, emn_loc loc, bool create)
{
    size_t n = strlen(name);
    if (strcmp(name, "0") == 0 || strcmp(name, "gnd") == 0) return 0;
    if (in && in->def) {
        int p = map_find(&in->def->portmap, name, n);
        if (p >= 0) return in->ports[p];
        char *full = emn_xasprintf("%s.%s", in->path, name);
        int i = map_find(&b->nodes, full, strlen(full));
        if (i < 0 && create) i = add_node(b, emn_arena_strdup(b->ar, full), loc);
        free(full);
        return i;
    }
    int i = map_find(&b->nodes, name, n);
    if (i < 0 && create) i = add_node(b, emn_arena_strdup(b->ar, name), loc);
    return i;
}

static const char *const dom_name[] = {"unused", "electrical", "mechanical"};

/* Record that `who` uses node i in domain dom (through x() if via_x). */
static void use_node(emn_build *b, int i, emn_domain dom, const char *who, emn_loc loc, bool via_x)
{
    if (i <= 0) return;
    emn_node *nd = &b->c->nodes.v[i];
    nodeinfo *ni = &b->ninfo.v[i];
    if (nd->dom == EMN_DOM_NONE) {
        nd->dom = dom;
        *ni = (nodeinfo){who, loc, via_x};
        return;
    }
    if (nd->dom == dom) return;
    if (via_x)
        error(b, loc, "node '%s' is %s but %s uses it in x()", nd->name, dom_name[nd->dom], who);
    else
        error(b, loc, "node '%s' is %s but %s uses it as %s", nd->name, dom_name[nd->dom], who,
              dom_name[dom]);
    if (ni->via_x)
        emn_diag_note(b->d, ni->loc, "%s uses '%s' in x() here", ni->who, nd->name);
    else
        emn_diag_note(b->d, ni->loc, "%s uses '%s' as %s here", ni->who, nd->name,
                      dom_name[nd->dom]);
}

/* ----------------------------------------------------------------- values */

enum { ALLOW_X = 1, ALLOW_TIME = 2 };

typedef struct vctx {
    emn_build *b;
    const inst *in;
    const char *who;            /* element or control line, for messages */
    unsigned allow;
    bool bad;
} vctx;

static const emn_expr *bind_leaf(void *ctx, const emn_expr *leaf)
{
    vctx *v = ctx;
    emn_build *b = v->b;
    if (leaf->op == EMN_EX_NAME) {
        double x;
        if (scope_get(v->in->sc, leaf->name, strlen(leaf->name), &x)) return emn_expr_num(b->ar, x);
        if (strcmp(leaf->name, "pi") == 0) return emn_expr_num(b->ar, M_PI);
        if (strcmp(leaf->name, "time") == 0) {
            if (v->allow & ALLOW_TIME) return emn_expr_var(b->ar, EMN_VAR_TIME);
            error(b, leaf->loc, "'time' may be used only in source expressions, not in %s", v->who);
        } else {
            error(b, leaf->loc, "unknown parameter '%s'", leaf->name);
        }
        v->bad = true;
        return emn_expr_num(b->ar, 0);
    }
    if (leaf->op == EMN_EX_XREF) {
        if (!(v->allow & ALLOW_X)) {
            error(b, leaf->loc, "the value of %s cannot depend on x()", v->who);
            v->bad = true;
            return emn_expr_num(b->ar, 0);
        }
        const char *names[2] = {leaf->name, leaf->name2};
        const emn_expr *r[2] = {NULL, NULL};
        for (int k = 0; k < 2 && names[k]; k++) {
            int i = node_of(b, v->in, names[k], leaf->loc, true);
            use_node(b, i, EMN_DOM_MECH, v->who, leaf->loc, true);
            r[k] = i == 0 ? emn_expr_num(b->ar, 0) : emn_expr_var(b->ar, i);
        }
        return r[1] ? emn_expr_sub(b->ar, r[0], r[1]) : r[0];
    }
    return NULL;
}

/* The value of a WORD field: a number or a parameter.  Returns 0, or -1
 * after recording an error. */
static int word_value(emn_build *b, const inst *in, const emn_field *f, double *v, bool *milli)
{
    const char *s = emn_build_text(f->loc);
    if (numberish(s, f->loc.len)) return number_at(b, f->loc, v, milli) ? -1 : 0;
    const char *name = lower_tmp(b, f->loc);
    if (scope_get(in->sc, name, strlen(name), v)) return 0;
    if (strcmp(name, "pi") == 0) {
        *v = M_PI;
        return 0;
    }
    error(b, f->loc, "unknown parameter '%s'", name);
    return -1;
}

/* The value of a field: a number, a parameter, or an expression with its
 * parameters bound.  Returns NULL after recording an error.  A WORD's
 * number is built in the temporary arena: a grid deck has 10^5 of them,
 * and every caller keeps only the value of a constant. */
static const emn_expr *value_expr(emn_build *b, const inst *in, const emn_field *f, unsigned allow,
                                  const char *who, bool *milli)
{
    if (milli) *milli = false;
    if (f->kind == EMN_FIELD_WORD) {
        double v;
        if (word_value(b, in, f, &v, milli)) return NULL;
        return emn_expr_num(b->tmp, v);
    }
    if (f->kind == EMN_FIELD_EXPR) {
        if (milli) *milli = f->milli;
        vctx v = {b, in, who, allow, false};
        const emn_expr *e = emn_expr_subst(b->ar, f->expr, bind_leaf, &v);
        if (v.bad) return NULL;
        return emn_expr_fold(b->ar, e);
    }
    error(b, field_loc(f), "expected a value for %s, not '%s'", who, field_text(b, f));
    return NULL;
}

/* A value that must be a finite constant.  Returns 0 or -1. */
static int value_num(emn_build *b, const inst *in, const emn_field *f, const char *who, double *out,
                     bool *milli)
{
    double v;
    if (f->kind == EMN_FIELD_WORD) {     /* no expression to build */
        if (milli) *milli = false;
        if (word_value(b, in, f, &v, milli)) return -1;
        if (!isfinite(v)) {
            error(b, field_loc(f), "the value of %s is not a finite number", who);
            return -1;
        }
        *out = v;
        return 0;
    }
    const emn_expr *e = value_expr(b, in, f, 0, who, milli);
    if (!e) return -1;
    if (!emn_expr_is_const(e, &v)) {
        error(b, field_loc(f), "the value of %s must be a constant", who);
        return -1;
    }
    if (!isfinite(v)) {
        error(b, field_loc(f), "the value of %s is not a finite number", who);
        return -1;
    }
    *out = v;
    return 0;
}

/* .param a=1 b='2*a': bind in order into sc. */
static void do_param(emn_build *b, const inst *in, const card *k, scope *sc)
{
    for (int i = 0; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        if (f->kind != EMN_FIELD_ASSIGN || f->key->kind != EMN_FIELD_WORD) {
            error(b, field_loc(f), "expected name=value in .param, not '%s'", field_text(b, f));
            continue;
        }
        const char *name = lower_dup(b, f->key->loc);
        if (!isalpha((unsigned char)name[0]) && name[0] != '_') {
            error(b, f->key->loc, "invalid parameter name '%s'", name);
            continue;
        }
        if (strcmp(name, "time") == 0 || strcmp(name, "pi") == 0) {
            error(b, f->key->loc, "'%s' is reserved and cannot be a parameter", name);
            continue;
        }
        char *who = emn_xasprintf("parameter '%s'", name);
        double v;
        if (value_num(b, in, f->value, who, &v, NULL) == 0) scope_set(b, sc, name, v);
        free(who);
    }
}

/* --------------------------------------------------------------- elements */

/* ORDER emn_kind */
static const char kind_letters[EMN_NKINDS + 1] = "RCLKVITMSDFJ";

char emn_netlist_kind_letter(emn_kind k)
{
    return k >= 0 && k < EMN_NKINDS ? kind_letters[k] : '?';
}

static const char *const usage[EMN_NKINDS] = {
    "Rname n+ n- value",
    "Cname n+ n- value [IC=v0]",
    "Lname n+ n- value [IC=i0]",
    "Kname Lname1 Lname2 k",
    "Vname n+ n- [[DC] value] [function]",
    "Iname n+ n- [[DC] value] [function]",
    "Tname e+ e- m+ m- value",
    "Mname m value",
    "Sname m1 m2 value [X0=len]",
    "Dname m1 m2 value",
    "Fname m1 m2 [[DC] value] [function]",
    "Jname m 'expr'",
};

/* Nodes per kind and their domains.  ORDER emn_kind */
static const struct { int n; emn_domain dom[4]; } terminals[EMN_NKINDS] = {
    {2, {EMN_DOM_ELEC, EMN_DOM_ELEC}}, {2, {EMN_DOM_ELEC, EMN_DOM_ELEC}},
    {2, {EMN_DOM_ELEC, EMN_DOM_ELEC}}, {0, {0}},
    {2, {EMN_DOM_ELEC, EMN_DOM_ELEC}}, {2, {EMN_DOM_ELEC, EMN_DOM_ELEC}},
    {4, {EMN_DOM_ELEC, EMN_DOM_ELEC, EMN_DOM_MECH, EMN_DOM_MECH}},
    {1, {EMN_DOM_MECH}}, {2, {EMN_DOM_MECH, EMN_DOM_MECH}}, {2, {EMN_DOM_MECH, EMN_DOM_MECH}},
    {2, {EMN_DOM_MECH, EMN_DOM_MECH}}, {1, {EMN_DOM_MECH}},
};

static int kind_of_letter(char c)
{
    const char *p = strchr(kind_letters, toupper((unsigned char)c));
    return c && p ? (int)(p - kind_letters) : -1;
}

static int top_terminals(const emn_build *b, emn_loc name)
{
    if (b->open || b->waiting) return 0;
    int kind = kind_of_letter(emn_build_text(name)[0]);
    return kind >= 0 ? terminals[kind].n : 0;
}

/* The model's name of an element written as `name` in instance `in`:
 * "c1" at the top, "c.x1.c1" inside x1 (ngspice). */
static char *full_elem_name(const inst *in, const char *lname)
{
    if (!in->path) return emn_xstrdup(lname);
    return emn_xasprintf("%c.%s.%s", lname[0], in->path, lname);
}

static bool check_range(emn_build *b, emn_kind kind, double v, emn_loc loc, const char *who)
{
    switch (kind) {
    case EMN_R: case EMN_C: case EMN_L: case EMN_M:
        if (v > 0) return true;
        error(b, loc, "the %s of %s must be positive, not %g",
              kind == EMN_R ? "resistance" : kind == EMN_C ? "capacitance"
              : kind == EMN_L ? "inductance" : "mass", who, v);
        return false;
    case EMN_S: case EMN_D:
        if (v >= 0) return true;
        error(b, loc, "the %s of %s must not be negative, not %g",
              kind == EMN_S ? "stiffness" : "damping", who, v);
        return false;
    case EMN_K:
        if (fabs(v) < 1) return true;
        error(b, loc, "the coupling of %s must be below 1 in magnitude, not %g", who, v);
        return false;
    default:
        return true;
    }
}

/* Source: [[DC] value] [SIN(...)|PULSE(...)|PWL(...)|EXP(...)|'expr'] */
static int parse_source(emn_build *b, const inst *in, emn_field **f, int nf, const char *who,
                        emn_loc name, int kind, emn_source *src)
{
    static const struct { const char *name; emn_wave_kind kind; int lo, hi; } fns[] = {
        {"sin", EMN_WAVE_SIN, 2, 6}, {"pulse", EMN_WAVE_PULSE, 2, 7},
        {"pwl", EMN_WAVE_PWL, 2, INT_MAX}, {"exp", EMN_WAVE_EXP, 2, 6},
    };
    bool dc_word = false;
    memset(src, 0, sizeof *src);
    src->kind = EMN_WAVE_NONE;
    for (int i = 0; i < nf; i++) {
        emn_field *g = f[i];
        if (g->kind == EMN_FIELD_WORD && strcmp(lower_tmp(b, g->loc), "dc") == 0 && !src->has_dc &&
            !dc_word && src->kind == EMN_WAVE_NONE) {
            dc_word = true;
            if (i + 1 == nf) {
                error(b, g->loc, "DC needs a value in %s", who);
                return -1;
            }
            continue;
        }
        double pv;
        if (g->kind == EMN_FIELD_WORD && !numberish(emn_build_text(g->loc), g->loc.len) &&
            !scope_get(in->sc, lower_tmp(b, g->loc), (size_t)g->loc.len, &pv)) {
            error(b, g->loc, "unexpected '%s' in %s: expected '%s'", field_text(b, g), who, usage[kind]);
            return -1;
        }
        if (g->kind == EMN_FIELD_WORD || g->kind == EMN_FIELD_EXPR) {
            bool want_dc = dc_word || (!src->has_dc && src->kind == EMN_WAVE_NONE);
            const emn_expr *e = NULL;
            double v;
            bool cst = true;
            if (g->kind == EMN_FIELD_WORD) {    /* a number: no expression to build */
                if (word_value(b, in, g, &v, NULL)) return -1;
            } else {
                e = value_expr(b, in, g, ALLOW_TIME, who, NULL);
                if (!e) return -1;
                cst = emn_expr_is_const(e, &v);
            }
            if (cst && want_dc && !src->has_dc) {
                if (!isfinite(v)) {
                    error(b, g->loc, "the value of %s is not a finite number", who);
                    return -1;
                }
                src->has_dc = true;
                src->dc = v;
                if (!src->loc.file) src->loc = g->loc;
                dc_word = false;
                continue;
            }
            if (!cst && g->kind == EMN_FIELD_EXPR && !dc_word && src->kind == EMN_WAVE_NONE) {
                src->kind = EMN_WAVE_EXPR;
                src->expr = e;
                src->loc = g->loc;
                continue;
            }
            if (dc_word) {
                error(b, g->loc, "DC value of %s must not depend on time", who);
                return -1;
            }
            error(b, g->loc, "unexpected '%s' in %s", field_text(b, g), who);
            return -1;
        }
        if (g->kind == EMN_FIELD_CALL && src->kind == EMN_WAVE_NONE && !dc_word) {
            const char *fn = lower_tmp(b, g->loc);
            size_t j = 0;
            while (j < sizeof fns / sizeof fns[0] && strcmp(fns[j].name, fn) != 0) j++;
            if (j == sizeof fns / sizeof fns[0]) {
                error(b, g->loc, "unknown source function '%s' in %s", fn, who);
                return -1;
            }
            if (g->nargs < fns[j].lo || g->nargs > fns[j].hi ||
                (fns[j].kind == EMN_WAVE_PWL && g->nargs % 2)) {
                if (fns[j].kind == EMN_WAVE_PWL)
                    error(b, g->loc, "PWL needs time-value pairs, not %d numbers", g->nargs);
                else
                    error(b, g->loc, "%s() takes %d to %d arguments, not %d", fns[j].name,
                          fns[j].lo, fns[j].hi, g->nargs);
                return -1;
            }
            src->kind = fns[j].kind;
            src->loc = g->loc;
            src->nargs = g->nargs;
            src->args = emn_arena_alloc(b->ar, (size_t)g->nargs * sizeof *src->args);
            int k = 0;
            emn_loc prev_loc = g->loc;
            for (emn_field *a = g->args; a; a = a->next, k++) {
                if (value_num(b, in, a, who, &src->args[k], NULL)) return -1;
                if (src->kind == EMN_WAVE_PWL && k % 2 == 0) {
                    if (k >= 2 && src->args[k] < src->args[k - 2]) {
                        error(b, field_loc(a), "PWL times of %s must not decrease: %g comes after %g",
                              who, src->args[k], src->args[k - 2]);
                        emn_diag_note(b->d, prev_loc, "the previous time");
                        return -1;
                    }
                    prev_loc = field_loc(a);
                }
            }
            continue;
        }
        error(b, field_loc(g), "unexpected '%s' in %s", field_text(b, g), who);
        return -1;
    }
    if (!src->has_dc && src->kind == EMN_WAVE_NONE) {
        error(b, name, "%s needs a value", who);
        return -1;
    }
    return 0;
}

/* The element joins the circuit, under its name. */
static void push_element(emn_build *b, const emn_elem *e, const eleminfo *info)
{
    emn_circuit *c = b->c;
    map_put(&b->elems, e->name, c->elems.n);
    EMN_PUSH(c->elems, *e);
    EMN_PUSH(b->einfo, *info);
    EMN_MAP_AHEAD(b->map_elems, c->elems);
    EMN_MAP_AHEAD(b->map_einfo, b->einfo);
}

static void add_element(emn_build *b, const inst *in, const card *k, int kind)
{
    emn_circuit *c = b->c;
    const char *lname = lower_tmp(b, k->loc);
    char *full = full_elem_name(in, lname);
    const char *disp = in->path ? emn_arena_strdup(b->shown, full)
                                : emn_arena_strndup(b->shown, emn_build_text(k->loc), (size_t)k->loc.len);
    int dup = map_find(&b->elems, full, strlen(full));
    if (dup >= 0) {
        error(b, k->loc, "duplicate element name %s", disp);
        emn_diag_note(b->d, c->elems.v[dup].loc, "%s is first defined here", b->einfo.v[dup].disp);
        free(full);
        return;
    }
    emn_elem e = {0};
    e.kind = (emn_kind)kind;
    e.name = emn_arena_strdup(b->ar, full);
    free(full);
    e.loc = k->loc;
    eleminfo info = {0};
    info.disp = disp;
    kinfo kin;
    memset(&kin, 0, sizeof kin);

    int nn = terminals[kind].n;
    int want_values = kind == EMN_V || kind == EMN_I || kind == EMN_F ? 0 : 1;
    int nfixed = (kind == EMN_K ? 2 : nn);
    int errs = b->d->nerrors;
    for (int i = 0; i < nfixed && i < k->nf; i++) {
        const emn_field *f = k->f[i];
        if (f->kind != EMN_FIELD_WORD) {
            error(b, field_loc(f), "expected a %s name in %s, not '%s'",
                  kind == EMN_K ? "inductor" : "node", disp, field_text(b, f));
            return;
        }
    }
    if (k->nf < nfixed + (want_values && kind != EMN_C && kind != EMN_L ? 1 : 0)) {
        error(b, k->loc, "too few fields for %s: expected '%s'", disp, usage[kind]);
        return;
    }
    for (int i = 0; i < nfixed; i++) {
        const emn_field *f = k->f[i];
        if (kind == EMN_K) {
            char *n = full_elem_name(in, lower_tmp(b, f->loc));
            kin.kname[i] = emn_arena_strdup(b->ar, n);
            kin.kloc[i] = f->loc;
            free(n);
            continue;
        }
        int node = node_of(b, in, lower_tmp(b, f->loc), f->loc, true);
        e.node[i] = node;
        use_node(b, node, terminals[kind].dom[i], disp, f->loc, false);
    }
    e.nnodes = nn;
    if (kind == EMN_J) {
        int m = e.node[0];
        if (m == 0) {
            error(b, k->f[0]->loc, "%s cannot define the ground node", disp);
        } else if (c->nodes.v[m].jdef >= 0) {
            int j = c->nodes.v[m].jdef;
            error(b, k->f[0]->loc, "node '%s' is already defined by %s", c->nodes.v[m].name,
                  b->einfo.v[j].disp);
            emn_diag_note(b->d, c->elems.v[j].loc, "%s defines '%s' here", b->einfo.v[j].disp,
                          c->nodes.v[m].name);
        }
    }

    if (kind == EMN_V || kind == EMN_I || kind == EMN_F) {
        emn_source src = {0};
        if (parse_source(b, in, k->f + nn, k->nf - nn, disp, k->loc, kind, &src) == 0 &&
            b->d->nerrors == errs) {
            if (src.kind != EMN_WAVE_NONE)
                src.p = emn_arena_alloc_aligned(c->arena, EMN_SOURCE_STATE * sizeof(double), sizeof(double));
            e.src = emn_arena_alloc(c->arena, sizeof src);
            *e.src = src;
            push_element(b, &e, &info);
        }
        return;
    }

    /* value fields: positional values and key=value settings */
    const emn_field *valf = NULL;
    bool keyed = false;
    for (int i = nfixed; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        if (f->kind == EMN_FIELD_ASSIGN && f->key->kind == EMN_FIELD_WORD) {
            const char *key = lower_tmp(b, f->key->loc);
            double v;
            if ((kind == EMN_C && strcmp(key, "c") == 0) || (kind == EMN_L && strcmp(key, "l") == 0) ||
                (kind == EMN_R && strcmp(key, "r") == 0)) {
                if (valf) {
                    error(b, f->key->loc, "%s has two values", disp);
                    return;
                }
                valf = f->value;
                keyed = true;
            } else if ((kind == EMN_C || kind == EMN_L) && strcmp(key, "ic") == 0) {
                if (value_num(b, in, f->value, disp, &v, NULL) == 0) {
                    e.has_ic = true;
                    e.ic = v;
                }
            } else if (kind == EMN_S && strcmp(key, "x0") == 0) {
                if (value_num(b, in, f->value, disp, &v, NULL) == 0) e.x0 = v;
            } else {
                error(b, f->key->loc, "unexpected '%s=' in %s: expected '%s'", key, disp, usage[kind]);
                return;
            }
        } else if (!valf && f->kind != EMN_FIELD_ASSIGN) {
            valf = f;
        } else {
            error(b, field_loc(f), "unexpected '%s' in %s: expected '%s'", field_text(b, f), disp,
                  usage[kind]);
            return;
        }
    }
    if (!valf) {
        error(b, k->loc, "missing value for %s: expected '%s'", disp, usage[kind]);
        return;
    }
    (void)keyed;
    unsigned allow = (kind == EMN_C || kind == EMN_L || kind == EMN_K || kind == EMN_J) ? ALLOW_X : 0;
    bool milli = false;
    emn_loc value_loc = field_loc(valf);
    info.value_loc = value_loc;
    const emn_expr *v = NULL;
    double x;
    bool cst = true;
    if (valf->kind == EMN_FIELD_WORD) {     /* a number: no expression to build */
        if (word_value(b, in, valf, &x, &milli)) return;
    } else {
        v = value_expr(b, in, valf, allow, disp, &milli);
        if (!v) return;
        cst = emn_expr_is_const(v, &x);
    }
    if (cst) {
        if (!isfinite(x)) {
            error(b, value_loc, "the value of %s is not a finite number", disp);
            return;
        }
        if (!check_range(b, e.kind, x, value_loc, disp)) return;
        e.value = x;
        if (kind == EMN_J) e.vexpr = emn_expr_num(b->ar, x);
        if (kind == EMN_R && milli)
            emn_diag_warning(b->d, value_loc, "'m' means milli (1e-3); write 'meg' for 1e6");
    } else {
        e.vexpr = v;
    }
    if (b->d->nerrors != errs) return;
    if (kind == EMN_J) c->nodes.v[e.node[0]].jdef = c->elems.n;
    push_element(b, &e, &info);
    if (kind == EMN_K) EMN_PUSH(b->kinfo, kin);
}

static void expand_body(emn_build *b, const inst *in, const cardlist *body);

/* Xname nodes... subckt [params:] [name=value ...] */
static void add_instance(emn_build *b, const inst *in, const card *k)
{
    const char *lname = lower_tmp(b, k->loc);
    char *path = in->path ? emn_xasprintf("%s.%s", in->path, lname) : emn_xstrdup(lname);
    const char *disp = in->path ? path : emn_arena_strndup(b->tmp, emn_build_text(k->loc), (size_t)k->loc.len);
    int nw = 0;                 /* words before the first name=value */
    while (nw < k->nf && k->f[nw]->kind == EMN_FIELD_WORD &&
           strcmp(lower_tmp(b, k->f[nw]->loc), "params:") != 0)
        nw++;
    if (nw == 0) {
        error(b, k->loc, "%s names no subcircuit: expected 'Xname nodes... subckt [name=value ...]'", disp);
        free(path);
        return;
    }
    const emn_field *sf = k->f[nw - 1];
    const char *sname = lower_tmp(b, sf->loc);
    int si = map_find(&b->subckts, sname, strlen(sname));
    if (si < 0) {
        error(b, sf->loc, "unknown subcircuit '%s' in %s", sname, disp);
        free(path);
        return;
    }
    subckt *def = b->defs.v[si];
    if (def->active) {
        error(b, k->loc, "%s instantiates subcircuit '%s' inside itself", disp, def->name);
        free(path);
        return;
    }
    if (in->depth >= EMN_SUBCKT_DEPTH) {
        error(b, k->loc, "%s: subcircuits nested more than %d deep", disp, EMN_SUBCKT_DEPTH);
        free(path);
        return;
    }
    if (nw - 1 != def->nports) {
        error(b, k->loc, "%s has %d node%s but subcircuit '%s' has %d port%s", disp, nw - 1,
              nw == 2 ? "" : "s", def->name, def->nports, def->nports == 1 ? "" : "s");
        emn_diag_note(b->d, def->loc, "'%s' is defined here", def->name);
        free(path);
        return;
    }
    int errs = b->d->nerrors;
    int *ports = emn_xmalloc((size_t)(def->nports ? def->nports : 1) * sizeof *ports);
    for (int i = 0; i < def->nports; i++) {
        /* a port carries no domain of its own: the elements inside decide */
        ports[i] = node_of(b, in, lower_tmp(b, k->f[i]->loc), k->f[i]->loc, true);
    }
    scope sc = {.parent = in->sc};
    /* instance values, evaluated in the caller's scope */
    const emn_field **over = emn_xcalloc((size_t)(def->nparams ? def->nparams : 1), sizeof *over);
    for (int i = nw; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        if (f->kind == EMN_FIELD_WORD && strcmp(lower_tmp(b, f->loc), "params:") == 0) continue;
        if (f->kind != EMN_FIELD_ASSIGN || f->key->kind != EMN_FIELD_WORD) {
            error(b, field_loc(f), "unexpected '%s' in %s: expected name=value", field_text(b, f), disp);
            continue;
        }
        /* a copy: lower_tmp's buffer moves when a longer name follows */
        const char *key = emn_arena_strdup(b->tmp, lower_tmp(b, f->key->loc));
        int p = 0;
        while (p < def->nparams && strcmp(lower_tmp(b, def->params[p]->key->loc), key) != 0) p++;
        if (p == def->nparams) {
            error(b, f->key->loc, "subcircuit '%s' has no parameter '%s' (%s)", def->name, key, disp);
            continue;
        }
        over[p] = f;
    }
    for (int p = 0; p < def->nparams; p++) {
        const char *name = lower_dup(b, def->params[p]->key->loc);
        char *who = emn_xasprintf("parameter '%s' of %s", name, disp);
        double v;
        int rc = over[p] ? value_num(b, in, over[p]->value, who, &v, NULL)
                         : value_num(b, &(inst){.path = path, .def = def, .ports = ports, .sc = &sc},
                                     def->params[p]->value, who, &v, NULL);
        if (rc == 0) scope_set(b, &sc, name, v);
        free(who);
    }
    free(over);
    if (b->d->nerrors == errs) {
        inst sub = {path, def, ports, &sc, in->depth + 1};
        def->active = true;
        expand_body(b, &sub, &def->body);
        def->active = false;
    }
    scope_free(&sc);
    free(ports);
    free(path);
}

/* An element or instance card. */
static void add_card(emn_build *b, const inst *in, const card *k)
{
    if (b->too_big) return;
    if (++b->ncards > b->max_cards) {
        error(b, k->loc, "too many elements after subcircuit expansion (the limit is %ld)",
              b->max_cards);
        b->too_big = true;
        return;
    }
    if (b->d->nerrors >= EMN_MAX_ERRORS) {
        emn_diag_note(b->d, k->loc, "too many errors; expansion stopped here");
        b->too_big = true;
        return;
    }
    const char *w = emn_build_text(k->loc);
    if (tolower((unsigned char)w[0]) == 'x') {
        add_instance(b, in, k);
        return;
    }
    int kind = kind_of_letter(w[0]);
    if (kind < 0) {
        error(b, k->loc, "unknown element type '%c' of %.*s: the first letter must be one of "
              "R C L K V I T M S D F J X", toupper((unsigned char)w[0]), k->loc.len, w);
        return;
    }
    add_element(b, in, k, kind);
}

/* The cards of one instance (or of the top level): .param first, in order,
 * then elements and nested instances. */
static void expand_body(emn_build *b, const inst *in, const cardlist *body)
{
    for (const card *k = body->head; k; k = k->next) {
        const char *w = emn_build_text(k->loc);
        if (w[0] == '.' && control_kind(lower_tmp(b, k->loc)) == CTL_PARAM) do_param(b, in, k, in->sc);
    }
    for (const card *k = body->head; k; k = k->next)
        if (emn_build_text(k->loc)[0] != '.') add_card(b, in, k);
}

/* --------------------------------------------------------- control lines */

static void do_tran(emn_build *b, const inst *in, const card *k)
{
    emn_circuit *c = b->c;
    double v[4] = {0, 0, 0, 0};
    int n = 0;
    bool uic = false;
    const emn_field *vf[4] = {0};
    for (int i = 0; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        if (f->kind == EMN_FIELD_WORD && strcmp(lower_tmp(b, f->loc), "uic") == 0) {
            uic = true;
            continue;
        }
        if (n == 4 || uic) {
            error(b, field_loc(f), "unexpected '%s' in .tran: expected '.tran tstep tstop [tstart [tmax]] [uic]'",
                  field_text(b, f));
            return;
        }
        vf[n] = f;
        if (value_num(b, in, f, ".tran", &v[n], NULL)) return;
        n++;
    }
    if (n < 2) {
        error(b, k->loc, ".tran needs tstep and tstop: expected '.tran tstep tstop [tstart [tmax]] [uic]'");
        return;
    }
    int errs = b->d->nerrors;
    if (!(v[0] > 0)) error(b, field_loc(vf[0]), "tstep must be positive, not %g", v[0]);
    if (!(v[1] > 0)) error(b, field_loc(vf[1]), "tstop must be positive, not %g", v[1]);
    if (n > 2 && (v[2] < 0 || v[2] >= v[1]))
        error(b, field_loc(vf[2]), "tstart must be at least 0 and below tstop (%g), not %g", v[1], v[2]);
    if (n > 3 && !(v[3] > 0)) error(b, field_loc(vf[3]), "tmax must be positive, not %g", v[3]);
    if (b->d->nerrors != errs) return;
    c->has_tran = true;
    c->tstep = v[0];
    c->tstop = v[1];
    c->tstart = v[2];
    c->tmax = v[3];
    c->uic = uic;
    c->tran_loc = k->loc;
}

static void do_options(emn_build *b, const inst *in, const card *k)
{
    emn_options *o = &b->c->opt;
    for (int i = 0; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        if (f->kind == EMN_FIELD_WORD) {
            emn_diag_warning(b->d, f->loc, "option '%s' ignored", lower_tmp(b, f->loc));
            continue;
        }
        if (f->kind != EMN_FIELD_ASSIGN || f->key->kind != EMN_FIELD_WORD) {
            error(b, field_loc(f), "expected key=value in .options, not '%s'", field_text(b, f));
            continue;
        }
        const char *key = lower_dup(b, f->key->loc);
        const emn_field *vf = f->value;
        double *dst = strcmp(key, "reltol") == 0   ? &o->reltol
                      : strcmp(key, "abstol") == 0 ? &o->abstol
                      : strcmp(key, "vntol") == 0  ? &o->vntol
                      : strcmp(key, "chgtol") == 0 ? &o->chgtol
                      : strcmp(key, "trtol") == 0  ? &o->trtol
                                                   : NULL;
        char *who = emn_xasprintf("option '%s'", key);
        double v;
        if (dst) {
            if (value_num(b, in, vf, who, &v, NULL) == 0) {
                if (v > 0) *dst = v;
                else error(b, field_loc(vf), "option '%s' must be positive, not %g", key, v);
            }
        } else if (strcmp(key, "maxord") == 0 || strcmp(key, "itl4") == 0) {
            if (value_num(b, in, vf, who, &v, NULL) == 0) {
                int hi = key[0] == 'm' ? 6 : 1000000;
                if (v != floor(v) || v < 1 || v > hi)
                    error(b, field_loc(vf), "option '%s' must be a whole number from 1 to %d, not %g", key, hi, v);
                else if (key[0] == 'm') o->maxord = (int)v;
                else o->itl4 = (int)v;
            }
        } else if (strcmp(key, "method") == 0 || strcmp(key, "form") == 0) {
            const char *w = vf->kind == EMN_FIELD_WORD ? lower_tmp(b, vf->loc) : "";
            if (key[0] == 'm' && (strcmp(w, "trap") == 0 || strcmp(w, "trapezoidal") == 0))
                o->method = EMN_METHOD_TRAP;
            else if (key[0] == 'm' && strcmp(w, "gear") == 0)
                o->method = EMN_METHOD_GEAR;
            else if (key[0] == 'f' && strcmp(w, "charge") == 0)
                o->form = EMN_FORM_CHARGE;
            else if (key[0] == 'f' && strcmp(w, "flux") == 0)
                o->form = EMN_FORM_FLUX;
            else if (key[0] == 'f' && strcmp(w, "auto") == 0)
                o->form = EMN_FORM_AUTO;
            else
                error(b, field_loc(vf), "option '%s' must be %s, not '%s'", key,
                      key[0] == 'm' ? "trap or gear" : "charge, flux or auto", field_text(b, vf));
        } else {
            emn_diag_warning(b->d, f->key->loc, "option '%s' ignored", key);
        }
        free(who);
    }
}

/* ---------------------------------------------------------------- signals */

/* A name lookup that works both while building (hash tables) and on a
 * finished circuit (linear search: signals given later are few). */
typedef struct lookup {
    const emn_circuit *c;
    const strmap *nodes, *elems;
} lookup;

static int find_node(const lookup *l, const char *name)
{
    if (strcmp(name, "0") == 0 || strcmp(name, "gnd") == 0) return 0;
    if (l->nodes) return map_find(l->nodes, name, strlen(name));
    return emn_netlist_find_node(l->c, name);
}

static int find_elem(const lookup *l, const char *name)
{
    if (l->elems) return map_find(l->elems, name, strlen(name));
    return emn_netlist_find_elem(l->c, name);
}

static bool depends_on(const emn_expr *e, int var)
{
    return e && emn_expr_depends(e, var);
}

/* Resolve signal fn(args) (all lower case).  Returns 0, or -1 after an
 * error at loc/argloc. */
static int resolve_signal(const lookup *l, emn_diag *d, const char *fn, int nargs, const char *const *args,
                          const emn_loc *argloc, emn_loc loc, emn_signal *sig)
{
    const emn_circuit *c = l->c;
    static const char *const names[] = {"v", "x", "i", "q", "phi", "f", "w"};  /* ORDER emn_sigkind */
    int kind = -1;
    for (int i = 0; i < 7; i++)
        if (strcmp(fn, names[i]) == 0) kind = i;
    if (kind < 0) {
        emn_diag_error(d, loc, "unknown signal '%s()': expected v, x, i, q, phi, f or w", fn);
        return -1;
    }
    memset(sig, 0, sizeof *sig);
    sig->kind = (emn_sigkind)kind;
    sig->loc = loc;
    int maxargs = kind == EMN_SIG_V || kind == EMN_SIG_X || kind == EMN_SIG_F ? 2 : 1;
    if (nargs < 1 || nargs > maxargs) {
        emn_diag_error(d, loc, "%s() takes %s, not %d argument%s", fn,
                       maxargs == 2 ? "one or two arguments" : "one argument", nargs, nargs == 1 ? "" : "s");
        return -1;
    }
    if (kind == EMN_SIG_V || kind == EMN_SIG_X) {
        for (int i = 0; i < nargs; i++) {
            int n = find_node(l, args[i]);
            if (n < 0) {
                emn_diag_error(d, argloc[i], "unknown node '%s' in %s()", args[i], fn);
                return -1;
            }
            if (kind == EMN_SIG_X && c->nodes.v[n].dom == EMN_DOM_ELEC) {
                emn_diag_error(d, argloc[i], "x() of electrical node '%s'", args[i]);
                return -1;
            }
            sig->node[i] = n;
        }
        return 0;
    }
    int e = find_elem(l, args[0]);
    if (e < 0) {
        emn_diag_error(d, argloc[0], "unknown element '%s' in %s()", args[0], fn);
        return -1;
    }
    sig->elem = e;
    const emn_elem *el = &c->elems.v[e];
    emn_kind k = el->kind;
    bool okk;
    const char *want;
    switch (kind) {
    case EMN_SIG_I:
        okk = k == EMN_R || k == EMN_C || k == EMN_L || k == EMN_V || k == EMN_I || k == EMN_T;
        want = "an electrical element (R, C, L, V, I or T)";
        break;
    case EMN_SIG_Q: okk = k == EMN_C; want = "a capacitor"; break;
    case EMN_SIG_PHI: okk = k == EMN_L; want = "an inductor"; break;
    case EMN_SIG_W:     /* stored, dissipated or supplied energy */
        okk = k == EMN_C || k == EMN_L || k == EMN_M || k == EMN_S || k == EMN_R || k == EMN_D ||
              k == EMN_V || k == EMN_I || k == EMN_F;
        want = "a C, L, M, S, R, D, V, I or F element";
        break;
    default:
        if (nargs == 1) {
            okk = k == EMN_S || k == EMN_D || k == EMN_F || k == EMN_T;
            want = "an S, D, F or T element (or C(x), L(x), K(x) with a node: f(E,m))";
        } else {
            okk = (k == EMN_C || k == EMN_L || k == EMN_K) && el->vexpr;
            want = "a C(x), L(x) or K(x) element";
        }
        break;
    }
    if (!okk) {
        emn_diag_error(d, argloc[0], "%s() needs %s; '%s' is not one", fn, want, args[0]);
        return -1;
    }
    if (kind == EMN_SIG_F && nargs == 2) {
        int m = find_node(l, args[1]);
        if (m < 0) {
            emn_diag_error(d, argloc[1], "unknown node '%s' in %s()", args[1], fn);
            return -1;
        }
        if (m == 0 || !depends_on(el->vexpr, m)) {
            emn_diag_error(d, argloc[1], "the value of '%s' does not depend on x(%s)", args[0], args[1]);
            return -1;
        }
        sig->mnode = m;
    }
    return 0;
}

/* A signal written as a call field of .print/.save/.ic. */
static int field_signal(emn_build *b, const emn_field *f, emn_signal *sig)
{
    if (f->kind != EMN_FIELD_CALL) {
        error(b, field_loc(f), "expected a signal like v(node), not '%s'", field_text(b, f));
        return -1;
    }
    const char *args[2];
    emn_loc argloc[2];
    int n = 0;
    emn_buf text = {0};
    emn_buf_puts(&text, lower_tmp(b, f->loc));
    const char *fn = emn_arena_strdup(b->tmp, text.v);
    emn_buf_puts(&text, "(");
    for (const emn_field *a = f->args; a; a = a->next) {
        if (a->kind != EMN_FIELD_WORD) {
            error(b, field_loc(a), "expected a name in %s(), not '%s'", fn, field_text(b, a));
            emn_buf_free(&text);
            return -1;
        }
        if (n < 2) {
            args[n] = lower_dup(b, a->loc);
            argloc[n] = a->loc;
        }
        emn_buf_printf(&text, "%s%s", n ? "," : "", lower_tmp(b, a->loc));
        n++;
    }
    emn_buf_puts(&text, ")");
    lookup l = {b->c, &b->nodes, &b->elems};
    int rc = resolve_signal(&l, b->d, fn, n, args, argloc, f->loc, sig);
    if (rc == 0) sig->text = emn_arena_strdup(b->ar, text.v);
    else b->card_bad = true;
    emn_buf_free(&text);
    return rc;
}

static void do_signals(emn_build *b, const card *k, bool print)
{
    emn_circuit *c = b->c;
    int first = 0;
    if (print && k->nf > 0 && k->f[0]->kind == EMN_FIELD_WORD && strcmp(lower_tmp(b, k->f[0]->loc), "tran") == 0)
        first = 1;
    if (!print && k->nf == 1 && k->f[0]->kind == EMN_FIELD_WORD && strcmp(lower_tmp(b, k->f[0]->loc), "all") == 0)
        return;
    for (int i = first; i < k->nf; i++) {
        emn_signal s;
        if (field_signal(b, k->f[i], &s)) continue;
        if (print) EMN_PUSH(c->prints, s);
        else EMN_PUSH(c->saves, s);
    }
}

static void do_ic(emn_build *b, const inst *in, const card *k)
{
    for (int i = 0; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        const emn_field *key = f->kind == EMN_FIELD_ASSIGN ? f->key : NULL;
        const char *fn = key && key->kind == EMN_FIELD_CALL ? lower_dup(b, key->loc) : "";
        if (!key || (strcmp(fn, "x") != 0 && strcmp(fn, "v") != 0) || key->nargs != 1) {
            error(b, field_loc(f), "expected x(node)=value or v(node)=value in .ic, not '%s'",
                  field_text(b, key ? key : f));
            continue;
        }
        emn_signal s;
        if (field_signal(b, key, &s)) continue;
        emn_ic ic = {fn[0] == 'x' ? EMN_IC_X : EMN_IC_V, s.node[0], 0, key->loc};
        if (ic.node == 0) {
            error(b, key->args->loc, ".ic cannot set the ground node");
            continue;
        }
        if (value_num(b, in, f->value, ".ic", &ic.value, NULL)) continue;
        EMN_PUSH(b->c->ics, ic);
    }
}

/* ----------------------------------------------------------- final checks */

static void check_couplings(emn_build *b)
{
    emn_circuit *c = b->c;
    int q = 0;
    for (int i = 0; i < c->elems.n; i++) {
        emn_elem *e = &c->elems.v[i];
        if (e->kind != EMN_K) continue;
        const eleminfo *info = &b->einfo.v[i];
        const kinfo *ki = &b->kinfo.v[q++];
        for (int j = 0; j < 2; j++) {
            int t = map_find(&b->elems, ki->kname[j], strlen(ki->kname[j]));
            if (t < 0) {
                error(b, ki->kloc[j], "%s couples '%s', which is not an element", info->disp,
                      lower_tmp(b, ki->kloc[j]));
            } else if (c->elems.v[t].kind != EMN_L) {
                error(b, ki->kloc[j], "%s couples %s, which is not an inductor", info->disp,
                      b->einfo.v[t].disp);
            }
            e->ind[j] = t;
        }
        if (e->ind[0] >= 0 && e->ind[0] == e->ind[1])
            error(b, ki->kloc[1], "%s couples %s with itself", info->disp, b->einfo.v[e->ind[0]].disp);
    }
}

/* Collect the distinct variables of e into out (deduplicated by mark). */
static void expr_vars(const emn_expr *e, int *out, int *n, unsigned char *mark)
{
    switch (e->op) {
    case EMN_EX_VAR:
        if (!mark[e->var]) {
            mark[e->var] = 1;
            out[(*n)++] = e->var;
        }
        return;
    case EMN_EX_NEG: expr_vars(e->a, out, n, mark); return;
    case EMN_EX_ADD: case EMN_EX_SUB: case EMN_EX_MUL: case EMN_EX_DIV: case EMN_EX_POW:
        expr_vars(e->a, out, n, mark);
        expr_vars(e->b, out, n, mark);
        return;
    case EMN_EX_CALL:
        for (int i = 0; i < e->nargs; i++) expr_vars(e->args[i], out, n, mark);
        return;
    default: return;
    }
}

/* J chains: order the J elements so that each comes after the J elements
 * its right-hand side uses, reporting cycles.  Fills order (J element
 * indices, dependencies first) and returns its length. */
static int order_linkages(emn_build *b, int *order)
{
    emn_circuit *c = b->c;
    int nn = c->nodes.n, n = 0;
    unsigned char *state = emn_xcalloc((size_t)c->elems.n + 1, 1);   /* 0 new, 1 on path, 2 done */
    unsigned char *mark = emn_xcalloc((size_t)nn + 1, 1);
    int *vars = emn_xmalloc(((size_t)nn + 1) * sizeof *vars);
    int *stack = emn_xmalloc(((size_t)c->elems.n + 1) * sizeof *stack);
    int *pos = emn_xmalloc(((size_t)c->elems.n + 1) * sizeof *pos);   /* next dependency to visit */
    int **deps = emn_xcalloc((size_t)c->elems.n + 1, sizeof *deps);
    int *ndeps = emn_xcalloc((size_t)c->elems.n + 1, sizeof *ndeps);
    for (int i = 0; i < c->elems.n; i++) {
        const emn_elem *e = &c->elems.v[i];
        if (e->kind != EMN_J || !e->vexpr || c->nodes.v[e->node[0]].jdef != i) continue;
        int nv = 0;
        expr_vars(e->vexpr, vars, &nv, mark);
        deps[i] = emn_xmalloc((size_t)(nv ? nv : 1) * sizeof(int));
        for (int j = 0; j < nv; j++) {
            mark[vars[j]] = 0;
            if (vars[j] > 0 && vars[j] < nn && c->nodes.v[vars[j]].jdef >= 0)
                deps[i][ndeps[i]++] = c->nodes.v[vars[j]].jdef;
        }
    }
    for (int r = 0; r < c->elems.n; r++) {
        if (!deps[r] || state[r]) continue;
        int sp = 0;
        stack[sp++] = r;
        pos[r] = 0;
        state[r] = 1;
        while (sp) {
            int u = stack[sp - 1];
            if (pos[u] < ndeps[u]) {
                int w = deps[u][pos[u]++];
                if (state[w] == 1) {
                    /* the cycle is the stack from w up to u */
                    int from = sp - 1;
                    while (stack[from] != w) from--;
                    emn_buf chain = {0};
                    for (int t = from; t < sp; t++)
                        emn_buf_printf(&chain, "%s -> ", b->einfo.v[stack[t]].disp);
                    emn_buf_puts(&chain, b->einfo.v[w].disp);
                    error(b, c->elems.v[w].loc, "linkage cycle: %s (each defines its node from the next)",
                          chain.v);
                    emn_buf_free(&chain);
                } else if (state[w] == 0 && deps[w]) {
                    state[w] = 1;
                    pos[w] = 0;
                    stack[sp++] = w;
                }
            } else {
                state[u] = 2;
                order[n++] = u;
                sp--;
            }
        }
    }
    for (int i = 0; i < c->elems.n; i++) free(deps[i]);
    free(deps);
    free(ndeps);
    free(state);
    free(mark);
    free(vars);
    free(stack);
    free(pos);
    return n;
}

/* C(x) and L(x) must be positive, and k(x) below 1 in magnitude, at the
 * initial state: x = 0 or the .ic value, J-defined coordinates from their
 * linkages. */
static void check_initial_state(emn_build *b)
{
    emn_circuit *c = b->c;
    int *order = emn_xmalloc(((size_t)c->elems.n + 1) * sizeof *order);
    int nj = order_linkages(b, order);
    if (b->d->nerrors) {
        free(order);
        return;
    }
    double *x = emn_xcalloc((size_t)c->nodes.n + 1, sizeof *x);
    for (int i = 0; i < c->ics.n; i++)
        if (c->ics.v[i].kind == EMN_IC_X) x[c->ics.v[i].node] = c->ics.v[i].value;
    for (int i = 0; i < nj; i++) {
        const emn_elem *e = &c->elems.v[order[i]];
        x[e->node[0]] = emn_expr_eval(e->vexpr, x);
    }
    x[EMN_VAR_TIME] = 0;
    for (int i = 0; i < c->elems.n; i++) {
        emn_elem *e = &c->elems.v[i];
        if (!e->vexpr || (e->kind != EMN_C && e->kind != EMN_L && e->kind != EMN_K)) continue;
        double v = emn_expr_eval(e->vexpr, x);
        if (e->kind == EMN_K) {
            if (!(fabs(v) < 1))
                error(b, b->einfo.v[i].value_loc, "the coupling of %s is %g at the initial state; it must be "
                      "below 1 in magnitude", b->einfo.v[i].disp, v);
            continue;
        }
        if (!(v > 0) || !isfinite(v))
            error(b, b->einfo.v[i].value_loc, "%s of %s is %g at the initial state; it must be positive",
                  e->kind == EMN_C ? "the capacitance" : "the inductance", b->einfo.v[i].disp, v);
        else
            e->value = v;
    }
    free(x);
    free(order);
}

/* ------------------------------------------------------------------ driver */

/* A value field that needs no parameter: a number, a call on numbers
 * (a source function), key=number. */
static bool param_free(const emn_field *f)
{
    switch (f->kind) {
    case EMN_FIELD_WORD:
        return numberish(emn_build_text(f->loc), f->loc.len);
    case EMN_FIELD_CALL:
        for (const emn_field *a = f->args; a; a = a->next)
            if (a->kind != EMN_FIELD_WORD || !param_free(a)) return false;
        return true;
    case EMN_FIELD_ASSIGN:
        return f->key->kind == EMN_FIELD_WORD && f->value->kind == EMN_FIELD_WORD && param_free(f->value);
    default:
        return false;
    }
}

/* Whether a top-level element card can be built as soon as it is read:
 * not an instance (its subcircuit may come later) and no value that a
 * parameter could give (.param lines anywhere in the file apply).  Built
 * early or late, the elements keep the file's order and the same
 * meaning; a grid deck's cards are all of this kind and never pile up. */
static bool streamable(const card *k)
{
    const char *w = emn_build_text(k->loc);
    if (tolower((unsigned char)w[0]) == 'x') return false;
    int kind = kind_of_letter(w[0]);
    if (kind < 0) return true;          /* an error either way */
    int nfixed = kind == EMN_K ? 2 : terminals[kind].n;
    for (int i = nfixed; i < k->nf; i++) {
        const emn_field *f = k->f[i];
        /* a source's leading DC keyword (any later "dc" could be a parameter) */
        if (i == nfixed && (kind == EMN_V || kind == EMN_I || kind == EMN_F) && f->kind == EMN_FIELD_WORD &&
            f->loc.len == 2 && strncasecmp(emn_build_text(f->loc), "dc", 2) == 0)
            continue;
        if (!param_free(f)) return false;
    }
    return true;
}

static void build_top(emn_build *b)
{
    inst top = b->top_inst;
    scope *global = &b->global;
    /* a top-level card is usually one element: make room for them at
     * once rather than by doubling (each step copies, rehashes and
     * touches fresh memory; a grid deck has 10^5 to 10^6 cards) */
    int ncards = 0;
    for (const card *k = b->top.head; k; k = k->next)
        if (emn_build_text(k->loc)[0] != '.' && ncards < INT_MAX / 4) ncards++;
    if (ncards > b->max_cards) ncards = (int)b->max_cards;     /* no more get expanded */
    EMN_GROW(b->c->elems, b->c->elems.n + ncards);
    EMN_GROW(b->einfo, b->einfo.n + ncards);
    map_reserve(&b->elems, b->c->elems.n + ncards);
    for (const card *k = b->top.head; k; k = k->next)
        if (emn_build_text(k->loc)[0] == '.' && control_kind(lower_tmp(b, k->loc)) == CTL_PARAM)
            do_param(b, &top, k, global);
    for (const card *k = b->top.head; k; k = k->next) {
        if (emn_build_text(k->loc)[0] != '.') {
            add_card(b, &top, k);
            continue;
        }
        switch (control_kind(lower_tmp(b, k->loc))) {
        case CTL_TRAN: do_tran(b, &top, k); break;
        case CTL_OPTIONS: do_options(b, &top, k); break;
        case CTL_OP: b->c->has_op = true; break;
        case CTL_IGNORED:
            emn_diag_warning(b->d, k->loc, "'%s' ignored (output formatting is not supported)",
                             lower_tmp(b, k->loc));
            break;
        case CTL_IC: case CTL_PRINT: case CTL_SAVE: EMN_PUSH(b->late, (card *)k); break;
        default: break;
        }
    }
    for (int i = 0; i < b->late.n; i++) {
        const card *k = b->late.v[i];
        int ctl = control_kind(lower_tmp(b, k->loc));
        if (ctl == CTL_IC) do_ic(b, &top, k);
        else do_signals(b, k, ctl == CTL_PRINT);
    }
    check_couplings(b);
    check_initial_state(b);
}

/* A limit, lowered (never raised) by the environment variable `name`: the
 * tests reach the memory limits this way without allocating gigabytes. */
static long limit_from_env(const char *name, long limit)
{
    const char *s = getenv(name);
    char *end;
    long v = s ? strtol(s, &end, 10) : 0;
    return s && *end == '\0' && v > 0 && v < limit ? v : limit;
}

static emn_circuit *read_netlist(const char *path, const char *text, long len, emn_diag *d)
{
    emn_circuit *c = emn_xcalloc(1, sizeof *c);
    c->arena = emn_arena_new();
    c->path = emn_arena_strdup(c->arena, path);
    emn_netlist_default_options(&c->opt);
    emn_build b = {.d = d, .c = c, .ar = c->arena, .tmp = emn_arena_new(), .shown = emn_arena_new()};
    b.max_nodes = limit_from_env("EMNET_MAX_NODES", EMN_MAX_NODES);
    b.max_cards = limit_from_env("EMNET_MAX_ELEMENTS", EMN_MAX_CARDS);
    b.top_inst = (inst){NULL, NULL, NULL, &b.global, 0};
    int errs = d->nerrors;
    emn_srcfile *f = text ? emn_diag_add_text(d, path, text, len) : emn_diag_read_file(d, path, EMN_NOLOC);
    if (f) {
        int tl = 0;
        while (tl < f->len && f->text[tl] != '\n' && f->text[tl] != '\r' && f->text[tl] != '\0') tl++;
        c->title = emn_arena_strndup(c->arena, f->text, (size_t)tl);
        char *real = realpath(path, NULL);
        b.incl_disp[b.nincl] = path;
        b.incl[b.nincl++] = emn_arena_strdup(b.tmp, real ? real : path);
        free(real);
        add_node(&b, "0", EMN_NOLOC);
        map_put(&b.nodes, "gnd", 0);
        /* a line holds at most one element card: room for as many as the
         * file has lines at once, rather than by doubling (each step
         * copies, rehashes and touches fresh memory; a grid deck has 10^5
         * to 10^6 cards), and for as many nodes, which a grid has fewer
         * of than cards.  The room is mapped a stretch ahead of the items
         * (EMN_MAP_AHEAD); what is not used is never touched. */
        int room = f->nlines < b.max_cards ? f->nlines : (int)b.max_cards;
        EMN_GROW(c->elems, room);
        EMN_GROW(b.einfo, room);
        EMN_GROW(c->nodes, room);
        EMN_GROW(b.ninfo, room);
        map_reserve(&b.elems, room);
        read_file(&b, f, true);
        for (subckt *s = b.open; s; s = s->outer)
            emn_diag_error(d, s->loc, "missing .ends for subcircuit '%s'", s->name ? s->name : "");
        build_top(&b);
    }
    scope_free(&b.global);
    map_free(&b.nodes);
    map_free(&b.elems);
    map_free(&b.subckts);
    for (int i = 0; i < b.defs.n; i++) map_free(&b.defs.v[i]->portmap);
    free(b.defs.v);
    free(b.ninfo.v);
    free(b.einfo.v);
    free(b.kinfo.v);
    free(b.late.v);
    emn_buf_free(&b.scratch);
    free(b.depth.key);
    free(b.depth.val);
    emn_arena_free(&b.tmp);
    emn_arena_free(&b.shown);
    if (d->nerrors != errs) emn_netlist_free(&c);
    return c;
}

emn_circuit *emn_netlist_read(const char *path, emn_diag *d)
{
    return read_netlist(path, NULL, 0, d);
}

emn_circuit *emn_netlist_read_text(const char *path, const char *text, long len, emn_diag *d)
{
    return read_netlist(path, text, len, d);
}

void emn_netlist_free(emn_circuit **pc)
{
    if (!pc || !*pc) return;
    emn_circuit *c = *pc;
    free(c->nodes.v);
    free(c->elems.v);
    free(c->ics.v);
    free(c->prints.v);
    free(c->saves.v);
    emn_arena_free(&c->arena);
    free(c);
    *pc = NULL;
}

int emn_netlist_find_node(const emn_circuit *c, const char *name)
{
    if (strcmp(name, "gnd") == 0 || emn_streq_nocase(name, "gnd")) return 0;
    for (int i = 0; i < c->nodes.n; i++)
        if (emn_streq_nocase(c->nodes.v[i].name, name)) return i;
    return -1;
}

int emn_netlist_find_elem(const emn_circuit *c, const char *name)
{
    for (int i = 0; i < c->elems.n; i++)
        if (emn_streq_nocase(c->elems.v[i].name, name)) return i;
    return -1;
}

void emn_netlist_default_options(emn_options *o)
{
    *o = (emn_options){
        .reltol = 1e-3, .abstol = 1e-12, .vntol = 1e-6, .chgtol = 1e-14, .trtol = 1,
        .method = EMN_METHOD_TRAP, .maxord = 2, .itl4 = 10, .form = EMN_FORM_AUTO,
    };
}

int emn_netlist_parse_signal(const emn_circuit *c, const char *text, emn_signal *sig, emn_diag *d,
                             emn_loc loc)
{
    /* name ( arg [, arg] ) with blanks anywhere; lower-cased */
    char *s = emn_xstrdup(text);
    int n = 0;
    for (int i = 0; s[i]; i++)
        if (!isspace((unsigned char)s[i])) s[n++] = (char)tolower((unsigned char)s[i]);
    s[n] = '\0';
    char *open = strchr(s, '(');
    int rc = -1;
    if (!open || n < 3 || s[n - 1] != ')' || open == s) {
        emn_diag_error(d, loc, "invalid signal '%s': expected a form like v(node) or i(element)", text);
        free(s);
        return -1;
    }
    *open = '\0';
    s[n - 1] = '\0';
    const char *args[2] = {NULL, NULL};
    emn_loc argloc[2] = {loc, loc};
    int nargs = 0;
    char *p = open + 1;
    while (*p && nargs < 3) {
        char *comma = strchr(p, ',');
        if (comma) *comma = '\0';
        if (nargs < 2) args[nargs] = p;
        nargs++;
        p = comma ? comma + 1 : p + strlen(p);
        if (comma && !*p) nargs = 3;      /* trailing comma */
    }
    for (int i = 0; i < nargs && i < 2; i++)
        if (!*args[i]) nargs = 3;
    lookup l = {c, NULL, NULL};
    rc = resolve_signal(&l, d, s, nargs, args, argloc, loc, sig);
    if (rc == 0) {
        emn_buf t = {0};
        emn_buf_printf(&t, "%s(%s%s%s)", s, args[0], nargs > 1 ? "," : "", nargs > 1 ? args[1] : "");
        sig->text = emn_arena_strdup(c->arena, t.v);
        emn_buf_free(&t);
    }
    free(s);
    return rc;
}
