/*
 * main.c: the command line (spec netlist section 5).  Everything else is
 * in the library; this file parses options, runs the analyses asked for,
 * prints diagnostics and maps outcomes to exit statuses.
 */
#include "config.h"
#include "diag.h"
#include "form.h"
#include "netlist.h"
#include "sim.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: emnet [options] netlist.cir\n"
    "  -tran               run the .tran analysis\n"
    "  -op                 compute and print the operating point\n"
    "  -form charge|flux|auto\n"
    "                      Lagrangian formulation (default: .options form, else auto)\n"
    "  -compare            run the transient in both formulations and report their difference\n"
    "  -lagrangian         print coordinates, Lagrangian, dissipation and forces\n"
    "  -r file.raw         write saved signals to a SPICE raw file (-ascii: ASCII)\n"
    "  -o file.csv         write saved signals as CSV\n"
    "  -reltol x           relative tolerance\n"
    "  -method trap|gear   integration method\n"
    "  -cmptol x           tolerance of -compare (default 100 x reltol)\n"
    "  -q                  no progress or summary on standard error\n"
    "  --check             read and check the netlist only\n"
    "  -h, --help          this help\n"
    "  --version           version\n";

typedef struct cli {
    bool tran, op, compare, lagrangian, check, quiet, ascii;
    const char *form, *raw, *csv, *method, *path;
    double reltol, cmptol;
} cli;

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "emnet: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n%s", usage_text);
    return EMN_EXIT_USAGE;
}

static bool parse_double(const char *s, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end) return false;
    *out = v;
    return true;
}

/* Returns -1 to go on, or an exit status. */
static int parse_args(int argc, char **argv, cli *a)
{
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
#define NEED_ARG() do { if (i + 1 >= argc) return usage_error("option '%s' needs an argument", s); } while (0)
        if (!strcmp(s, "-tran")) a->tran = true;
        else if (!strcmp(s, "-op")) a->op = true;
        else if (!strcmp(s, "-compare")) a->compare = true;
        else if (!strcmp(s, "-lagrangian")) a->lagrangian = true;
        else if (!strcmp(s, "--check")) a->check = true;
        else if (!strcmp(s, "-q")) a->quiet = true;
        else if (!strcmp(s, "-ascii")) a->ascii = true;
        else if (!strcmp(s, "-h") || !strcmp(s, "--help")) {
            fputs(usage_text, stdout);
            return EMN_EXIT_OK;
        } else if (!strcmp(s, "--version")) {
            printf("emnet %s\n", PACKAGE_VERSION);
            return EMN_EXIT_OK;
        } else if (!strcmp(s, "-form")) {
            NEED_ARG();
            a->form = argv[++i];
            if (strcmp(a->form, "charge") && strcmp(a->form, "flux") && strcmp(a->form, "auto"))
                return usage_error("-form takes charge, flux or auto, not '%s'", a->form);
        } else if (!strcmp(s, "-method")) {
            NEED_ARG();
            a->method = argv[++i];
            if (strcmp(a->method, "trap") && strcmp(a->method, "gear"))
                return usage_error("-method takes trap or gear, not '%s'", a->method);
        } else if (!strcmp(s, "-r")) {
            NEED_ARG();
            a->raw = argv[++i];
        } else if (!strcmp(s, "-o")) {
            NEED_ARG();
            a->csv = argv[++i];
        } else if (!strcmp(s, "-reltol")) {
            NEED_ARG();
            if (!parse_double(argv[++i], &a->reltol) || !(a->reltol > 0 && a->reltol < 1))
                return usage_error("-reltol takes a number between 0 and 1, not '%s'", argv[i]);
        } else if (!strcmp(s, "-cmptol")) {
            NEED_ARG();
            if (!parse_double(argv[++i], &a->cmptol) || !(a->cmptol > 0))
                return usage_error("-cmptol takes a positive number, not '%s'", argv[i]);
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option '%s'", s);
        } else if (a->path) {
            return usage_error("more than one netlist given ('%s')", s);
        } else {
            a->path = s;
        }
#undef NEED_ARG
    }
    if (!a->path) return usage_error("%s", "no netlist given");
    return -1;
}

static emn_form_kind resolve_form(const cli *a, const emn_circuit *c)
{
    emn_form_kind k = c->opt.form;
    if (a->form) k = !strcmp(a->form, "charge") ? EMN_FORM_CHARGE : !strcmp(a->form, "flux") ? EMN_FORM_FLUX
                                                                                         : EMN_FORM_AUTO;
    return k == EMN_FORM_AUTO ? emn_sim_auto_form(c) : k;
}

static int print_lagrangian(const emn_circuit *c, emn_form_kind k, emn_diag *d)
{
    emn_form *f = emn_form_build(c, k, d);
    if (!f) return EMN_EXIT_INVALID;
    emn_form_print(f, stdout);
    emn_form_free(&f);
    return EMN_EXIT_OK;
}

static void summary(const emn_sim_result *r, emn_form_kind k)
{
    fprintf(stderr, "emnet: %s formulation, %d coordinates (%d electrical, %d mechanical): %ld steps, "
            "%ld rejected, %ld Newton iterations, %ld LU factorizations (%ld with pivoting), %.6f s\n",
            k == EMN_FORM_CHARGE ? "charge" : "flux", r->n, r->ne, r->nm, r->st.steps, r->st.rejected,
            r->st.newton, r->lu_factors + r->lu_refactors, r->lu_factors, r->seconds);
}

int main(int argc, char **argv)
{
    emn_alloc_setup();
    cli a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;

    emn_diag d = {0};
    int printed = 0;
    emn_circuit *c = emn_netlist_read(a.path, &d);
    if (c && emn_sim_prepare(c, &d) < 0) emn_netlist_free(&c);
    emn_diag_release_text(&d);
    printed = emn_diag_print(&d, stderr, printed, true);
    if (!c) {
        emn_diag_free(&d);
        return EMN_EXIT_INVALID;
    }
    int status = EMN_EXIT_OK;
    if (a.check) goto out;
    if (a.reltol > 0) c->opt.reltol = a.reltol;
    if (a.method) c->opt.method = !strcmp(a.method, "gear") ? EMN_METHOD_GEAR : EMN_METHOD_TRAP;

    bool explicit_run = a.tran || a.op || a.lagrangian || a.compare;
    bool run_op = a.op || (!explicit_run && c->has_op);
    bool run_tran = a.tran || a.compare || (!explicit_run && c->has_tran);
    emn_form_kind form = resolve_form(&a, c);

    if (a.lagrangian) {
        if (a.compare) {
            status = print_lagrangian(c, EMN_FORM_CHARGE, &d);
            if (status == EMN_EXIT_OK) status = print_lagrangian(c, EMN_FORM_FLUX, &d);
        } else {
            status = print_lagrangian(c, form, &d);
        }
        printed = emn_diag_print(&d, stderr, printed, true);
        if (status != EMN_EXIT_OK || !a.tran) goto out;
    }
    if (run_op) {
        status = emn_sim_op(c, form, &d, stdout);
        printed = emn_diag_print(&d, stderr, printed, true);
        if (status != EMN_EXIT_OK) goto out;
    }
    if (run_tran) {
        if (!c->has_tran) {
            if (c->end_loc.file)        /* where one would go */
                emn_diag_error(&d, c->end_loc, "no .tran line before .end: nothing to simulate");
            else
                emn_diag_error(&d, EMN_NOLOC, "%s: no .tran line: nothing to simulate", a.path);
            status = EMN_EXIT_INVALID;
            goto out;
        }
        printed = emn_diag_print(&d, stderr, printed, true);
        emn_sim_opts o = {0};
        o.form = form;
        o.raw_path = a.raw;
        o.raw_ascii = a.ascii;
        o.csv_path = a.csv;
        o.print_table = !a.compare;
        o.quiet = a.quiet;
        o.progress = isatty(2);
        o.cmptol = a.cmptol > 0 ? a.cmptol : 100 * c->opt.reltol;
        if (a.compare) {
            fflush(stdout);
            status = emn_sim_compare(c, &o, &d, stdout);
        } else {
            emn_sim_result r;
            status = emn_sim_tran(c, &o, &d, false, &r);
            if (!a.quiet && status != EMN_EXIT_INVALID) summary(&r, form);
            emn_sim_result_free(&r);
        }
    }
out:
    fflush(stdout);
    emn_diag_print(&d, stderr, printed, true);
    emn_netlist_free(&c);
    emn_diag_free(&d);
    return status;
}
