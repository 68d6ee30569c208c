/*
 * fuzz_netlist.c: a libFuzzer / AFL++ entry point for the front end.
 *
 * One input is one netlist.  It goes through everything emnet does before
 * the first time step: the lexer and parser, the expression engine, the
 * semantic checks and subcircuit expansion (emn_netlist_read_text), the
 * source preparation (emn_sim_prepare), and the set-up of both
 * formulations, printed to a null stream so the printers are exercised as
 * well.  Every object is freed, so the leak checker can see a leak as a
 * crash.  The input is never run in time: the engine's numerics are tested
 * by the script tests, and a transient of arbitrary length would make every
 * input a potential hang.
 *
 * Built without libFuzzer (-DEMN_FUZZ_MAIN) it reads the files named on the
 * command line, one input each, which is how AFL++ and the regression runs
 * use it.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "diag.h"
#include "form.h"
#include "netlist.h"
#include "sim.h"

static FILE *sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!sink) sink = fopen("/dev/null", "w");
    emn_diag d = {0};
    /* The name is relative so .include lines resolve against the working
     * directory, where the corpus's include files live. */
    emn_circuit *c = emn_netlist_read_text("fuzz.cir", (const char *)data, (long)size, &d);
    if (c && emn_sim_prepare(c, &d) == 0) {
        static const emn_form_kind kinds[] = {EMN_FORM_CHARGE, EMN_FORM_FLUX};
        for (int k = 0; k < 2; k++) {
            emn_form *f = emn_form_build(c, kinds[k], &d);
            if (f && sink) emn_form_print(f, sink);
            emn_form_free(&f);
        }
    }
    if (sink) emn_diag_print(&d, sink, 0, true);
    emn_netlist_free(&c);
    emn_diag_free(&d);
    return 0;
}

#ifdef EMN_FUZZ_MAIN
/* Replay files: `fuzz_netlist file...`.  With AFL++'s persistent mode
 * unavailable this is also the AFL++ target (`@@` as the argument). */
int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        FILE *fp = fopen(argv[i], "rb");
        if (!fp) {
            perror(argv[i]);
            return 2;
        }
        size_t cap = 1 << 16, n = 0, got;
        uint8_t *buf = malloc(cap);
        while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
            n += got;
            if (n == cap) buf = realloc(buf, cap *= 2);
        }
        fclose(fp);
        if (!buf) return 2;
        LLVMFuzzerTestOneInput(buf, n);
        free(buf);
    }
    if (sink) fclose(sink);
    return 0;
}
#endif
