/*
 * diag.c: reading source files and recording, counting and printing
 * diagnostics.  Messages are kept in order of discovery; the caller decides
 * when to print them, so a library user (the tests, the fuzzer) can inspect
 * them instead.
 */
#include "config.h"
#include "diag.h"
#include "util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EMN_MAX_FILE_BYTES (1L << 30)

static void index_lines(emn_srcfile *f)
{
    int cap = 64, n = 0;
    f->line_start = emn_xmalloc((size_t)cap * sizeof(int));
    f->line_start[n++] = 0;              /* index 0 unused */
    f->line_start[n++] = 0;
    for (long i = 0; i < f->len; i++) {
        if (f->text[i] == '\n') {
            if (n == cap) {
                cap *= 2;
                f->line_start = emn_xrealloc(f->line_start, (size_t)cap * sizeof(int));
            }
            f->line_start[n++] = (int)(i + 1);
        }
    }
    f->nlines = n - 1;
}

/* text: len bytes and room for one more, taken over */
static emn_srcfile *adopt_text(emn_diag *d, const char *path, char *text, long len)
{
    emn_srcfile *f = emn_xcalloc(1, sizeof *f);
    f->path = emn_xstrdup(path);
    f->text = text;
    f->text[len] = '\0';
    f->len = len;
    index_lines(f);
    f->next = d->files;
    d->files = f;
    return f;
}

emn_srcfile *emn_diag_add_text(emn_diag *d, const char *path, const char *text, long len)
{
    char *copy = emn_xmalloc((size_t)len + 1);
    memcpy(copy, text, (size_t)len);
    return adopt_text(d, path, copy, len);
}

emn_srcfile *emn_diag_read_file(emn_diag *d, const char *path, emn_loc from)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        emn_diag_error(d, from, "cannot read '%s': is a directory", path);
        return NULL;
    }
    /* A device would be read forever (/dev/zero) or block (a terminal);
     * pipes stay allowed, for `emnet -tran <(generator)`. */
    if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
        emn_diag_error(d, from, "cannot read '%s': not a regular file", path);
        return NULL;
    }
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        emn_diag_error(d, from, "cannot read '%s': %s", path, strerror(errno));
        return NULL;
    }
    /* A regular file is read straight into a buffer of its size (and one
     * byte more, to see that it did not grow); a pipe into a growing one. */
    emn_buf b = {0};
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && st.st_size < EMN_MAX_FILE_BYTES) {
        b.cap = (int)st.st_size + 2;
        b.v = emn_xmalloc((size_t)b.cap);
    }
    size_t got;
    for (;;) {
        /* Offsets and line starts are ints. */
        if ((long)b.n > EMN_MAX_FILE_BYTES) {
            fclose(fp);
            emn_buf_free(&b);
            emn_diag_error(d, from, "cannot read '%s': larger than %ld bytes", path,
                           (long)EMN_MAX_FILE_BYTES);
            return NULL;
        }
        if (b.cap - b.n < 2) {
            long cap = b.cap ? 2L * b.cap : 65536;
            if (cap > EMN_MAX_FILE_BYTES + 2) cap = EMN_MAX_FILE_BYTES + 2;
            b.v = emn_xrealloc(b.v, (size_t)cap);
            b.cap = (int)cap;
        }
        if (!(got = fread(b.v + b.n, 1, (size_t)(b.cap - b.n - 1), fp))) break;
        b.n += (int)got;
    }
    int failed = ferror(fp);
    fclose(fp);
    if (failed) {
        emn_diag_error(d, from, "cannot read '%s': read error", path);
        emn_buf_free(&b);
        return NULL;
    }
    emn_srcfile *f = adopt_text(d, path, b.v, b.n);
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == f->len) {
        f->rereadable = true;
        f->mtime_ns = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    }
    return f;
}

void emn_diag_release_text(emn_diag *d)
{
    for (emn_srcfile *f = d->files; f; f = f->next)
        if (f->rereadable) {
            free(f->text);
            f->text = NULL;
        }
}

/* Line `line` of f (up to cap - 1 bytes, NUL-terminated) into buf, from
 * the text or, once that is released, from the file if it is unchanged.
 * Returns buf or the text, or NULL. */
static const char *source_line(const emn_srcfile *f, int line, char *buf, size_t cap)
{
    long from = f->line_start[line];
    if (f->text) return f->text + from;
    struct stat st;
    if (stat(f->path, &st) != 0 || st.st_size != f->len ||
        (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec != f->mtime_ns)
        return NULL;
    FILE *fp = fopen(f->path, "rb");
    if (!fp) return NULL;
    size_t got = 0;
    if (fseek(fp, from, SEEK_SET) == 0) got = fread(buf, 1, cap - 1, fp);
    fclose(fp);
    buf[got] = '\0';
    return buf;
}

void emn_diag_vadd(emn_diag *d, emn_severity sev, emn_loc loc, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    char *text = emn_xmalloc((size_t)n + 1);
    vsnprintf(text, (size_t)n + 1, fmt, ap);
    EMN_PUSH(*d, ((emn_message){sev, loc, text}));
    if (sev == EMN_SEV_ERROR) d->nerrors++;
    if (sev == EMN_SEV_WARNING) d->nwarnings++;
}

void emn_diag_error(emn_diag *d, emn_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emn_diag_vadd(d, EMN_SEV_ERROR, loc, fmt, ap);
    va_end(ap);
}

void emn_diag_warning(emn_diag *d, emn_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emn_diag_vadd(d, EMN_SEV_WARNING, loc, fmt, ap);
    va_end(ap);
}

void emn_diag_note(emn_diag *d, emn_loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    emn_diag_vadd(d, EMN_SEV_NOTE, loc, fmt, ap);
    va_end(ap);
}

/* The source line of loc and a caret line under loc.col .. col+len-1.
 * Tabs in the source are copied into the caret line so the caret lines up. */
static void quote_line(FILE *out, emn_loc loc)
{
    const emn_srcfile *f = loc.file;
    if (!f || loc.line < 1 || loc.line > f->nlines) return;
    char buf[256];
    const char *s = source_line(f, loc.line, buf, sizeof buf);
    if (!s) return;
    const char *e = s;
    while (*e && *e != '\n' && *e != '\r') e++;
    int width = (int)(e - s);
    if (width > 200) width = 200;        /* keep a pathological line readable */
    fprintf(out, "%5d | %.*s\n", loc.line, width, s);
    fprintf(out, "      | ");
    int col = loc.col < 1 ? 1 : loc.col;
    for (int i = 1; i < col && i <= width; i++) fputc(s[i - 1] == '\t' ? '\t' : ' ', out);
    fputc('^', out);
    for (int i = 1; i < loc.len && col + i <= width; i++) fputc('~', out);
    fputc('\n', out);
}

int emn_diag_print(const emn_diag *d, FILE *out, int from, bool quote)
{
    static const char *const sevname[] = {"note", "warning", "error"};
    for (int i = from; i < d->n; i++) {
        const emn_message *m = &d->v[i];
        if (m->loc.file)
            fprintf(out, "%s:%d:%d: %s: %s\n", m->loc.file->path, m->loc.line,
                    m->loc.col, sevname[m->sev], m->text);
        else
            fprintf(out, "emnet: %s: %s\n", sevname[m->sev], m->text);
        if (quote && m->loc.file) quote_line(out, m->loc);
    }
    return d->n;
}

void emn_diag_free(emn_diag *d)
{
    for (int i = 0; i < d->n; i++) free(d->v[i].text);
    free(d->v);
    d->v = NULL;
    d->n = d->cap = d->nerrors = d->nwarnings = 0;
    emn_srcfile *f = d->files;
    while (f) {
        emn_srcfile *next = f->next;
        free(f->path);
        free(f->text);
        free(f->line_start);
        free(f);
        f = next;
    }
    d->files = NULL;
}
