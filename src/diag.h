/*
 * diag.h: source files, locations and diagnostics.
 *
 * Every message a user sees about a netlist goes through an emn_diag: it is
 * recorded (never printed from deep inside a module), counted, and printed
 * by the caller GCC style, with the source line and a caret:
 *
 *   speaker.cir:12:9: error: node 'cone' is mechanical but C1 uses it as electrical
 *      12 | C1 cone 0 1u
 *         |    ^~~~
 *
 * A location with no file prints as "emnet: error: ...".
 */
#ifndef EMN_DIAG_H
#define EMN_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/* A netlist file as read: the exact bytes, for quoting lines in messages. */
typedef struct emn_srcfile {
    char *path;          /* as the user (or .include) named it */
    char *text;          /* whole contents, NUL-terminated; NULL once released */
    long len;
    /* a regular file can be read again for a quote after its text is
     * released, if it still has the size and time it had */
    bool rereadable;
    long long mtime_ns;
    int *line_start;     /* byte offset of the start of each line, 1-based index */
    int nlines;
    struct emn_srcfile *next;   /* all files of one run, for freeing */
} emn_srcfile;

/* A place in a source file.  line and col are 1-based; len is the number of
 * characters to underline (0 or 1 for a plain caret). */
typedef struct emn_loc {
    const emn_srcfile *file;
    int line, col, len;
} emn_loc;

typedef enum { EMN_SEV_NOTE, EMN_SEV_WARNING, EMN_SEV_ERROR } emn_severity;

typedef struct emn_message {
    emn_severity sev;
    emn_loc loc;
    char *text;
} emn_message;

typedef struct emn_diag {
    emn_message *v;
    int n, cap;
    int nerrors, nwarnings;
    emn_srcfile *files;  /* owned list of files read */
} emn_diag;

/* Read a whole file.  On failure returns NULL and records an error at
 * `from` (the .include line, or no location for the command-line file). */
emn_srcfile *emn_diag_read_file(emn_diag *d, const char *path, emn_loc from);
/* Register text that did not come from disk (tests, fuzzer). */
emn_srcfile *emn_diag_add_text(emn_diag *d, const char *path, const char *text, long len);

void emn_diag_error(emn_diag *d, emn_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void emn_diag_warning(emn_diag *d, emn_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void emn_diag_note(emn_diag *d, emn_loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void emn_diag_vadd(emn_diag *d, emn_severity sev, emn_loc loc, const char *fmt, va_list ap);

/* Print the messages recorded since index `from` (0 for all); returns the
 * index to pass next time.  With `quote`, each located message is followed
 * by its source line and a caret. */
int emn_diag_print(const emn_diag *d, FILE *out, int from, bool quote);

/* Forget the text of the files that can be read again (the netlist is
 * read: only messages quote it now, and they read their lines back). */
void emn_diag_release_text(emn_diag *d);

/* Free messages and files. */
void emn_diag_free(emn_diag *d);

/* A location with no file. */
#define EMN_NOLOC ((emn_loc){0, 0, 0, 0})

#endif
