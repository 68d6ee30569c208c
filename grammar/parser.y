/*
 * parser.y: the netlist grammar.
 *
 * It recognizes the shape of cards only: a card is a first word followed by
 * fields, a field is an atom or `atom = atom`, an atom is a word, a quoted
 * string, an expression in '...' or {...}, or a call `word(args)`.  Every
 * action is one call into the builder (build.h), which knows what the
 * fields of an R, a .tran or a PULSE mean.  A card with a syntax error is
 * dropped at its end of line and parsing goes on with the next card.
 *
 * Semantic values live in the builder's arenas, so values dropped during
 * error recovery need no %destructor: the arenas free them together.
 *
 * Expression precedence follows mathematics: `-x^2` is -(x^2), and `^`
 * (also written `**`) is right-associative.
 */
%code top {
#include "config.h"
}

%code requires {
#include "build.h"
#ifndef YY_TYPEDEF_YY_SCANNER_T
#define YY_TYPEDEF_YY_SCANNER_T
typedef void *yyscan_t;
#endif
}

%code {
#include <string.h>

/* Declared here rather than through the generated lexer.h, so that the
 * parser does not depend on the scanner's generated header. */
int yylex(YYSTYPE *yylval, YYLTYPE *yylloc, yyscan_t scanner);
static void yyerror(emn_loc *loc, yyscan_t scanner, emn_build *b, emn_scan *scan, const char *msg);

/* A span from the first to the last symbol of a rule, when they share a
 * line; otherwise the first symbol alone. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                                         \
    do {                                                                    \
        if (N) {                                                            \
            (Cur) = YYRHSLOC(Rhs, 1);                                       \
            const emn_loc *e_ = &YYRHSLOC(Rhs, N);                          \
            if (e_->file == (Cur).file && e_->line == (Cur).line &&         \
                e_->col >= (Cur).col)                                       \
                (Cur).len = e_->col + e_->len - (Cur).col;                  \
        } else {                                                            \
            (Cur) = YYRHSLOC(Rhs, 0);                                       \
            (Cur).col += (Cur).len;                                         \
            (Cur).len = 0;                                                  \
        }                                                                   \
    } while (0)
}

%define api.pure full
%define api.location.type {emn_loc}
%define parse.error verbose
%locations
%expect 0
%param {yyscan_t scanner}
%parse-param {emn_build *b} {emn_scan *scan}

%union {
    emn_field *field;
    emn_flist *flist;   /* a pointer: see emn_build_arg */
    const emn_expr *expr;
    emn_exprlist *elist;
}

%token EOL "end of line"
%token WORD "word"
%token STRING "quoted string"
%token QUOTE "quote"
%token LBRACE "'{'"
%token RBRACE "'}'"
%token ENUM "number"
%token ENAME "name"
%token BADCHAR "invalid character"

%type <field> field atom call
%type <flist> args arglist
%type <expr> qexpr expr
%type <elist> exprs

%left '+' '-'
%left '*' '/'
%precedence NEG
%right '^'

%%

deck:
    %empty
|   deck line
;

line:
    EOL
|   card EOL                        { emn_build_card_end(b); }
|   error EOL                       { yyerrok; emn_build_card_abort(b); }
;

/* A card's fields are reduced straight onto the card, not through atom
 * and field: three of four fields are bare words, and a reduction each
 * is much of the parser's time on a large deck. */
card:
    WORD                            { emn_build_card_begin(b, @1); }
|   card WORD                       { emn_build_card_field(b, emn_build_word(b, @2)); }
|   card STRING                     { emn_build_card_field(b, emn_build_string(b, @2)); }
|   card qexpr                      { emn_build_card_field(b, emn_build_exprfield(b, $2, @2)); }
|   card call                       { emn_build_card_field(b, $2); }
|   card atom '=' atom              { emn_build_card_field(b, emn_build_assign(b, $2, $4)); }
;

call:
    WORD '(' args ')'               { $$ = emn_build_callfield(b, @1, $3); }
;

field:
    atom                            { $$ = $1; }
|   atom '=' atom                   { $$ = emn_build_assign(b, $1, $3); }
;

atom:
    WORD                            { $$ = emn_build_word(b, @1); }
|   STRING                          { $$ = emn_build_string(b, @1); }
|   qexpr                           { $$ = emn_build_exprfield(b, $1, @1); }
|   call                            { $$ = $1; }
;

args:
    %empty                          { $$ = NULL; }
|   arglist                         { $$ = $1; }
;

arglist:
    field                           { $$ = emn_build_arg(b, NULL, $1); }
|   arglist field                   { $$ = emn_build_arg(b, $1, $2); }
|   arglist ',' field               { $$ = emn_build_arg(b, $1, $3); }
;

qexpr:
    QUOTE expr QUOTE                { $$ = $2; }
|   LBRACE expr RBRACE              { $$ = $2; }
;

expr:
    ENUM                            { $$ = emn_build_num(b, @1); }
|   ENAME                           { $$ = emn_build_name(b, @1); }
|   ENAME '(' exprs ')'             { $$ = emn_build_call(b, @1, $3); }
|   '(' expr ')'                    { $$ = $2; }
|   '-' expr %prec NEG              { $$ = emn_build_neg(b, $2); }
|   '+' expr %prec NEG              { $$ = $2; }
|   expr '+' expr                   { $$ = emn_build_binary(b, EMN_EX_ADD, $1, $3); }
|   expr '-' expr                   { $$ = emn_build_binary(b, EMN_EX_SUB, $1, $3); }
|   expr '*' expr                   { $$ = emn_build_binary(b, EMN_EX_MUL, $1, $3); }
|   expr '/' expr                   { $$ = emn_build_binary(b, EMN_EX_DIV, $1, $3); }
|   expr '^' expr                   { $$ = emn_build_binary(b, EMN_EX_POW, $1, $3); }
;

exprs:
    expr                            { $$ = emn_build_exprlist(b, NULL, $1, @1); }
|   exprs ',' expr                  { $$ = emn_build_exprlist(b, $1, $3, @3); }
;

%%

static void yyerror(emn_loc *loc, yyscan_t scanner, emn_build *b, emn_scan *scan, const char *msg)
{
    if (scan->lexerr) {         /* the scanner has said what is wrong */
        scan->lexerr = false;
        return;
    }
    /* Bison's stack only runs out on absurd nesting of unary operators or
     * parentheses; its own words would suggest the machine is at fault. */
    if (strcmp(msg, "memory exhausted") == 0)
        emn_build_error(b, *loc, "expression nested too deeply");
    else
        emn_build_error(b, *loc, "%s", msg);
}
