/*
 * build.h: the interface between the grammar (grammar/parser.y,
 * grammar/lexer.l) and the model builder (netlist.c).
 *
 * The grammar only recognizes the shape of a card: a first word, then
 * fields (words, quoted strings, expressions, calls `name(args)` and
 * assignments `key=value`).  What the fields mean depends on the element
 * letter or control word, so the builder interprets them, with errors that
 * name the element.  Tokens carry no text: a field's text is read back from
 * the source file through its location, which keeps the memory for a
 * million-line deck to a few words per field.
 */
#ifndef EMN_BUILD_H
#define EMN_BUILD_H

#include <stdbool.h>

#include "diag.h"
#include "expr.h"
#include "util.h"

typedef struct emn_build emn_build;

typedef enum {
    EMN_FIELD_WORD,     /* a name or a number, as written */
    EMN_FIELD_STRING,   /* "text" (loc covers the quotes) */
    EMN_FIELD_EXPR,     /* 'expr' or {expr} */
    EMN_FIELD_CALL,     /* word(args): args is the argument list */
    EMN_FIELD_ASSIGN    /* key=value: key is a WORD or CALL field, value the value */
} emn_field_kind;

typedef struct emn_field emn_field;
struct emn_field {
    emn_field_kind kind;
    int nargs;                  /* CALL */
    emn_loc loc;                /* WORD, STRING: the token; CALL: the name; ASSIGN: the key */
    const emn_expr *expr;       /* EXPR */
    bool milli;                 /* EXPR: a number in it has the m or M scale (the 1M trap) */
    emn_field *args;            /* CALL: first argument (linked by next) */
    emn_field *key, *value;     /* ASSIGN */
    emn_field *next;            /* the next field of a list */
};

/* A list of fields being built, kept in order. */
typedef struct emn_flist { emn_field *head, *tail; int n; } emn_flist;

/* A list of expressions being built (function arguments); locs keep where
 * each argument was written so that x(1) can read back the node name. */
typedef struct emn_exprlist emn_exprlist;
struct emn_exprlist {
    const emn_expr *e;
    emn_loc loc;
    emn_exprlist *next;
};

/* The scanner's own state (the flex `extra` value). */
typedef struct emn_scan {
    emn_build *b;
    const emn_srcfile *file;
    int line, col;              /* position of the next character */
    int eline, ecol;            /* just after the last token of the open card */
    bool open;                  /* a card has started: a new card ends it */
    bool lexerr;                /* the scanner reported this error itself */
} emn_scan;

/* Text of a location, and its length. */
const char *emn_build_text(emn_loc loc);

/* Card structure (called by the grammar). */
void emn_build_card_begin(emn_build *b, emn_loc name);
void emn_build_card_field(emn_build *b, emn_field *f);
void emn_build_card_end(emn_build *b);
void emn_build_card_abort(emn_build *b);
bool emn_build_stopped(const emn_build *b);     /* .end seen: stop reading this file */

/* Fields. */
emn_field *emn_build_word(emn_build *b, emn_loc loc);
emn_field *emn_build_string(emn_build *b, emn_loc loc);
emn_field *emn_build_exprfield(emn_build *b, const emn_expr *e, emn_loc loc);
emn_field *emn_build_callfield(emn_build *b, emn_loc name, const emn_flist *args);
emn_field *emn_build_assign(emn_build *b, emn_field *key, emn_field *value);
/* A call's arguments: f appended to l, or to a new list if l is NULL.
 * The grammar keeps the list by pointer: its semantic values are then a
 * pointer wide, and the parser copies them without a stall. */
emn_flist *emn_build_arg(emn_build *b, emn_flist *l, emn_field *f);

/* Expressions. */
const emn_expr *emn_build_num(emn_build *b, emn_loc loc);
const emn_expr *emn_build_name(emn_build *b, emn_loc loc);
const emn_expr *emn_build_call(emn_build *b, emn_loc name, emn_exprlist *args);
const emn_expr *emn_build_binary(emn_build *b, emn_exop op, const emn_expr *x, const emn_expr *y);
const emn_expr *emn_build_neg(emn_build *b, const emn_expr *x);
emn_exprlist *emn_build_exprlist(emn_build *b, emn_exprlist *l, const emn_expr *e, emn_loc loc);

/* Errors found by the scanner or the parser. */
void emn_build_error(emn_build *b, emn_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Parse one file into b (defined in parser.y): 0 or -1. */
int emn_build_parse_file(emn_build *b, const emn_srcfile *f, bool title);

#endif
