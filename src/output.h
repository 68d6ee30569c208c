/*
 * output.h: writers for simulation results: the `.print tran` table on
 * standard output, SPICE raw files (binary or ASCII, loadable by ngspice)
 * and CSV.
 *
 * All writers take one row at a time and flush it, so that after a failure
 * everything computed so far is on disk.  Files are written under a
 * temporary name beside the target and renamed into place by
 * emn_out_close(), so an interrupted run never leaves a file that looks
 * complete.  The raw header's point count is rewritten at close to match the
 * rows written.
 */
#ifndef EMN_OUTPUT_H
#define EMN_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

typedef enum { EMN_OUT_TABLE, EMN_OUT_RAW_BINARY, EMN_OUT_RAW_ASCII, EMN_OUT_CSV } emn_out_kind;

/* What a column holds, for the raw file's variable type line. */
typedef enum { EMN_UNIT_TIME, EMN_UNIT_VOLTAGE, EMN_UNIT_CURRENT, EMN_UNIT_CHARGE,
               EMN_UNIT_FLUX, EMN_UNIT_DISTANCE, EMN_UNIT_VELOCITY, EMN_UNIT_FORCE,
               EMN_UNIT_ENERGY } emn_unit;

typedef struct emn_out emn_out;

/*
 * Open a writer.  `path` is the target file (ignored for the table, which
 * goes to `stream`, normally stdout).  names[0..ncols-1] are the column
 * headers (lower case, e.g. "v(out)"); the time column is implicit and comes
 * first.  title and plotname go into the raw header.  Returns NULL and sets
 * *err (static text) if the file cannot be created.
 */
emn_out *emn_out_open(emn_out_kind kind, const char *path, FILE *stream,
                      const char *title, int ncols, const char *const *names,
                      const emn_unit *units, const char **err);
/* Append one row: time and ncols values.  Returns 0, or -1 on a write
 * error. */
int emn_out_row(emn_out *o, double t, const double *values);
/* Finish: fix the raw header, flush, close, rename into place.  Returns 0
 * or -1 on a write error.  Frees o and sets *o to NULL; accepts NULL. */
int emn_out_close(emn_out **o);
/* Close and delete the temporary file without renaming (nothing computed). */
void emn_out_discard(emn_out **o);

/* Format x exactly as printf("%.9e", x) does, into out (at least
 * EMN_OUT_E9_LEN bytes, not terminated); returns the length.  A few times
 * faster than printf, for the operating point's long listings. */
#define EMN_OUT_E9_LEN 24
int emn_out_format_e9(char *out, double x);

/* Close every open file writer after flushing, renaming each into place:
 * async-signal-safe, for the SIGINT handler. */
void emn_out_emergency_close(void);

#endif
