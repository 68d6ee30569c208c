/*
 * output.c: the result writers: the `.print tran` table on a stdio stream,
 * SPICE raw files (binary and ASCII, in the layout ngspice writes and
 * `load`s) and CSV.
 *
 * Rows arrive fast (up to 10^6 of them, tens of columns each), so two things
 * dominate the design.  First, formatting: printf("%.9e") costs a few hundred
 * nanoseconds per number, so format_e9() does the same conversion with one
 * extended-precision multiplication and falls back to snprintf only when the
 * result lies too close to a rounding boundary to be certain; its output is
 * byte for byte what printf gives.  Second, buffering: each writer formats
 * whole rows into one fixed buffer and hands it to the kernel when it fills
 * or when 0.1 s have passed since the last flush, at close, and from
 * emn_out_emergency_close().
 *
 * That last one runs inside a SIGINT handler, where stdio and malloc are off
 * limits.  Files are therefore written with pwrite(2) from our own buffer,
 * never through stdio, and everything the handler needs (the buffer, the
 * file offset of its first byte, the row counts) is published through a
 * two-slot state whose slot index flips atomically after a row is complete,
 * so the handler always sees whole rows.  Opens, flushes and closes block
 * the terminating signals while they run, so the handler never sees them half
 * done; writing the buffer with pwrite at an explicit offset makes a
 * repeated write harmless anyway.  The handler writes what is buffered,
 * rewrites the raw header's point count in place (a fixed-width field padded
 * with blanks) and renames the temporary file into place, all with
 * async-signal-safe calls.
 *
 * A write error truncates the file back to the last row boundary known to be
 * on disk, so no reader ever sees a torn row, and the writer refuses further
 * rows; close still renames the consistent prefix into place but reports -1
 * with errno set.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "util.h"

enum {
    EMN_OUT_MAX_OPEN = 16,          /* writers open at once (registry size) */
    EMN_OUT_BUF_BYTES = 1 << 16,    /* buffer size, unless one row needs more */
    EMN_OUT_COUNT_WIDTH = 20,       /* digits reserved for the raw point count */
    EMN_OUT_E9_MAX = EMN_OUT_E9_LEN, /* longest format_e9 text, with slack */
    EMN_OUT_E16_MAX = 32            /* longest "%.16e" text, with slack */
};
#define EMN_OUT_FLUSH_SECONDS 0.1

/* What the signal handler may rely on.  rows counts every row committed to
 * the buffer; rows_base those already on disk before buf[0]. */
typedef struct wstate {
    off_t base;         /* file offset of buf[0] */
    long rows_base;
    long rows;
    int n;              /* committed bytes in buf */
} wstate;

struct emn_out {
    emn_out_kind kind;
    int ncols;
    FILE *stream;       /* the table's stream */
    int fd;             /* file writers: the temporary file; table: fileno or -1 */
    char *path, *tmp;
    char *buf;
    int cap, rowmax;
    wstate st[2];
    volatile sig_atomic_t cur;      /* which st[] is current */
    volatile sig_atomic_t failed;   /* a write failed: no more rows */
    volatile sig_atomic_t dead;     /* finished by the signal handler */
    int err_no;         /* errno of the first failed write */
    off_t count_off;    /* raw: offset of the point count field */
    double last_flush;
    int slot;           /* index in registry[], or -1 */
};

/* Writers the signal handler must finish.  Entries are set only while the
 * terminating signals are blocked. */
static emn_out *volatile registry[EMN_OUT_MAX_OPEN];

/* ------------------------------------------------------------ signals */

/* The signals whose handlers may call emn_out_emergency_close(). */
static void block_signals(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGINT);
    sigaddset(&s, SIGTERM);
    sigaddset(&s, SIGHUP);
    sigaddset(&s, SIGQUIT);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void restore_signals(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

static wstate current(const emn_out *o)
{
    return o->st[o->cur];
}

/* Make s the state the signal handler sees: fill the spare slot, then flip
 * the index, which is one sig_atomic_t store. */
static void publish(emn_out *o, wstate s)
{
    int next = !o->cur;
    o->st[next] = s;
    atomic_signal_fence(memory_order_seq_cst);
    o->cur = next;
    atomic_signal_fence(memory_order_seq_cst);
}

/* ------------------------------------------------- async-safe file I/O */

/* Write all n bytes at offset off, retrying short writes and EINTR. */
static int pwrite_all(int fd, const char *p, size_t n, off_t off)
{
    while (n > 0) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w, n -= (size_t)w, off += w;
    }
    return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

/* Rewrite the raw header's point count: the number left-aligned in a field
 * of blanks, so the header keeps its length whatever the count.  ngspice
 * reads the number and ignores the trailing blanks.  No stdio: this runs in
 * the signal handler too. */
static int write_count(int fd, off_t off, long rows)
{
    char field[EMN_OUT_COUNT_WIDTH], digits[EMN_OUT_COUNT_WIDTH];
    int nd = 0;
    unsigned long u = rows < 0 ? 0 : (unsigned long)rows;
    do {
        digits[nd++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && nd < EMN_OUT_COUNT_WIDTH);
    for (int i = 0; i < EMN_OUT_COUNT_WIDTH; i++)
        field[i] = i < nd ? digits[nd - 1 - i] : ' ';
    return pwrite_all(fd, field, sizeof field, off);
}

/* ------------------------------------------------------------ %.9e */

/*
 * Powers of ten, correctly rounded to long double by strtold (which glibc
 * rounds correctly), indexed by exponent + EMN_P10_BIAS.  The range covers
 * 10^(9-E) for every decimal exponent E of a double, subnormals included.
 */
#define EMN_P10_BIAS 310
#define EMN_P10_MAX 345
static long double p10[EMN_P10_BIAS + EMN_P10_MAX + 1];
static bool p10_ready;
/* How close to a rounding boundary the fast path may come before it defers
 * to snprintf: 16 times the worst error of the scaled value, two roundings
 * of a long double near 10^10. */
static long double p10_margin;

static void init_p10(void)
{
    if (p10_ready) return;
    for (int k = -EMN_P10_BIAS; k <= EMN_P10_MAX; k++) {
        char s[16];
        snprintf(s, sizeof s, "1e%d", k);
        p10[k + EMN_P10_BIAS] = strtold(s, NULL);
    }
    /* The precision long double arithmetic really has, measured rather
     * than taken from LDBL_EPSILON: emulators such as valgrind carry x87
     * values in 53 bits, and the margin must hold there too. */
    volatile long double one = 1, eps = 1;
    while (one + eps / 2 != one) eps /= 2;
    p10_margin = 1.1e10L * 16 * (eps > LDBL_EPSILON ? eps : LDBL_EPSILON);
    p10_ready = true;
}

static int fallback_e9(char *out, double x)
{
    return snprintf(out, EMN_OUT_E9_MAX, "%.9e", x);
}

/*
 * Format x exactly as printf("%.9e", x) does, into out (at least
 * EMN_OUT_E9_MAX bytes, not terminated); returns the length.  The ten
 * significant digits are round(x * 10^(9-E)); the product is computed in
 * long double, and when its fraction lies within p10_margin of one half
 * (an exact tie such as 1234567890.5 included) the rounding direction is
 * uncertain and snprintf decides.
 */
static int format_e9(char *out, double x)
{
    static const char pairs[] =
        "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
        "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
        "8081828384858687888990919293949596979899";
    char *p = out;
    double a = fabs(x);
    if (signbit(x)) *p++ = '-';
    if (isnan(x) || isinf(x)) {
        memcpy(p, isnan(x) ? "nan" : "inf", 3);
        return (int)(p - out) + 3;
    }
    if (a == 0) {
        memcpy(p, "0.000000000e+00", 15);
        return (int)(p - out) + 15;
    }
    int e2;
    frexp(a, &e2);
    /* a >= 2^(e2-1), so this is the decimal exponent or one less. */
    int e10 = (int)floor((e2 - 1) * 0.30102999566398120);
    int k = 9 - e10;
    if (k - 1 < -EMN_P10_BIAS || k + 1 > EMN_P10_MAX) return fallback_e9(out, x);
    long double y = (long double)a * p10[k + EMN_P10_BIAS];
    if (y >= 1e10L) {
        e10++;
        y = (long double)a * p10[k - 1 + EMN_P10_BIAS];
    } else if (y < 1e9L) {              /* only by rounding, just below 10^9 */
        e10--;
        y = (long double)a * p10[k + 1 + EMN_P10_BIAS];
    }
    /* Out of range only if long double cannot hold the power of ten. */
    if (!(y > 999999999.0L && y < 1.0000001e10L)) return fallback_e9(out, x);
    uint64_t d = (uint64_t)y;
    long double frac = y - (long double)d;
    if (fabsl(frac - 0.5L) <= p10_margin) return fallback_e9(out, x);
    if (frac > 0.5L) d++;
    if (d >= 10000000000ULL) {          /* 9.9999999996 rounds up a decade */
        d = 1000000000ULL;
        e10++;
    }
    /* d has exactly ten digits: one before the point, nine after. */
    uint32_t lead = (uint32_t)(d / 1000000000ULL);
    uint32_t rest = (uint32_t)(d % 1000000000ULL);
    p[0] = (char)('0' + lead);
    p[1] = '.';
    char *q = p + 10;                   /* last fraction digit */
    q[0] = (char)('0' + rest % 10);
    rest /= 10;
    for (int i = 0; i < 4; i++) {
        memcpy(q - 2 - 2 * i, pairs + 2 * (rest % 100), 2);
        rest /= 100;
    }
    p += 11;
    *p++ = 'e';
    *p++ = e10 < 0 ? '-' : '+';
    unsigned ue = (unsigned)(e10 < 0 ? -e10 : e10);
    if (ue >= 100) {
        *p++ = (char)('0' + ue / 100);
        ue %= 100;
    }
    memcpy(p, pairs + 2 * ue, 2);
    p += 2;
    return (int)(p - out);
}

int emn_out_format_e9(char *out, double x)
{
    init_p10();
    return format_e9(out, x);
}

/* ------------------------------------------------------------ writers */

/* Bytes one row can take at most, so a row never overruns the buffer. */
static int row_bytes(emn_out_kind kind, int ncols)
{
    switch (kind) {
    case EMN_OUT_RAW_BINARY: return (ncols + 1) * (int)sizeof(double);
    case EMN_OUT_RAW_ASCII: return 24 + (ncols + 1) * (EMN_OUT_E16_MAX + 2) + 2;
    default: return (ncols + 1) * (EMN_OUT_E9_MAX + 1) + 2;
    }
}

/* ngspice knows voltage, current and charge; the mechanical quantities,
 * flux and energy have no type of their own there, and "notype" is what it
 * would make of any unknown name anyway. */
static const char *unit_name(emn_unit u)
{
    switch (u) {
    case EMN_UNIT_TIME: return "time";
    case EMN_UNIT_VOLTAGE: return "voltage";
    case EMN_UNIT_CURRENT: return "current";
    case EMN_UNIT_CHARGE: return "charge";
    default: return "notype";
    }
}

/* Append s with blanks and control characters replaced by '_': a raw
 * header line is split on white space and ends at the newline. */
static void put_word(emn_buf *b, const char *s)
{
    for (; *s; s++) {
        char c = (unsigned char)*s <= ' ' ? '_' : *s;
        emn_buf_printf(b, "%c", c);
    }
}

/* A CSV field, quoted when it holds a comma, quote or line break
 * (RFC 4180): v(a,b) becomes "v(a,b)". */
static void put_csv_field(emn_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        emn_buf_puts(b, s);
        return;
    }
    emn_buf_puts(b, "\"");
    for (; *s; s++) emn_buf_printf(b, *s == '"' ? "\"\"" : "%c", *s);
    emn_buf_puts(b, "\"");
}

/* The Date: line.  SOURCE_DATE_EPOCH, when set, fixes it (in UTC) for
 * reproducible files and exact tests. */
static void put_date(emn_buf *b)
{
    struct tm tm;
    const char *sde = getenv("SOURCE_DATE_EPOCH");
    char *end, text[64];
    long long e = sde ? strtoll(sde, &end, 10) : 0;
    if (sde && *sde && !*end) {
        time_t t = (time_t)e;
        gmtime_r(&t, &tm);
    } else {
        time_t t = time(NULL);
        localtime_r(&t, &tm);
    }
    strftime(text, sizeof text, "%a %b %e %H:%M:%S %Y", &tm);
    emn_buf_printf(b, "Date: %s\n", text);
}

/* Build the file header into b; for raw files, *count_at receives the
 * offset of the point count field. */
static void build_header(emn_buf *b, emn_out_kind kind, const char *title, int ncols,
                         const char *const *names, const emn_unit *units, long *count_at)
{
    int i;
    switch (kind) {
    case EMN_OUT_TABLE:
        emn_buf_puts(b, "time");
        for (i = 0; i < ncols; i++) emn_buf_printf(b, " %s", names[i]);
        emn_buf_puts(b, "\n");
        break;
    case EMN_OUT_CSV:
        emn_buf_puts(b, "time");
        for (i = 0; i < ncols; i++) {
            emn_buf_puts(b, ",");
            put_csv_field(b, names[i]);
        }
        emn_buf_puts(b, "\n");
        break;
    case EMN_OUT_RAW_BINARY:
    case EMN_OUT_RAW_ASCII:
        emn_buf_puts(b, "Title: ");
        for (const char *s = title ? title : "emnet"; *s; s++)
            emn_buf_printf(b, "%c", *s == '\n' || *s == '\r' ? ' ' : *s);
        emn_buf_puts(b, "\n");
        put_date(b);
        emn_buf_puts(b, "Plotname: Transient Analysis\nFlags: real\n");
        emn_buf_printf(b, "No. Variables: %d\nNo. Points: ", ncols + 1);
        *count_at = b->n;
        emn_buf_printf(b, "%-*d\nVariables:\n", EMN_OUT_COUNT_WIDTH, 0);
        emn_buf_puts(b, "\t0\ttime\ttime\n");
        for (i = 0; i < ncols; i++) {
            emn_buf_printf(b, "\t%d\t", i + 1);
            put_word(b, names[i]);
            emn_buf_printf(b, "\t%s\n", unit_name(units ? units[i] : EMN_UNIT_VOLTAGE));
        }
        emn_buf_puts(b, kind == EMN_OUT_RAW_BINARY ? "Binary:\n" : "Values:\n");
        break;
    }
}

static void unregister(emn_out *o)
{
    if (o->slot >= 0) registry[o->slot] = NULL;
    o->slot = -1;
}

static void free_writer(emn_out *o)
{
    free(o->buf);
    free(o->path);
    free(o->tmp);
    free(o);
}

/* Take a free registry slot for o; false when all are taken.  Called with
 * the terminating signals blocked. */
static bool enlist(emn_out *o)
{
    for (int slot = 0; slot < EMN_OUT_MAX_OPEN; slot++) {
        if (!registry[slot]) {
            o->slot = slot;
            registry[slot] = o;
            return true;
        }
    }
    return false;
}

emn_out *emn_out_open(emn_out_kind kind, const char *path, FILE *stream,
                      const char *title, int ncols, const char *const *names,
                      const emn_unit *units, const char **err)
{
    emn_out *o;
    emn_buf hdr = {0};
    long count_at = 0;
    sigset_t old;

    init_p10();
    if (ncols < 0 || (kind == EMN_OUT_TABLE ? !stream : !path)) {
        *err = "no output stream or file name";
        return NULL;
    }
    o = emn_xcalloc(1, sizeof *o);
    o->kind = kind;
    o->ncols = ncols;
    o->rowmax = row_bytes(kind, ncols);
    o->cap = o->rowmax * 2 > EMN_OUT_BUF_BYTES ? o->rowmax * 2 : EMN_OUT_BUF_BYTES;
    o->buf = emn_xmalloc((size_t)o->cap);
    o->fd = -1;
    o->slot = -1;
    o->stream = stream;
    if (kind != EMN_OUT_TABLE) {
        o->path = emn_xstrdup(path);
        o->tmp = emn_xasprintf("%s.tmp.%ld", path, (long)getpid());
    }
    build_header(&hdr, kind, title, ncols, names, units, &count_at);
    o->count_off = count_at;
    o->st[0] = (wstate){ .base = kind == EMN_OUT_TABLE ? 0 : hdr.n };
    o->last_flush = emn_now();

    /* From the temporary file's creation to its registration no signal
     * handler may run, or an interrupt would leave the file behind. */
    block_signals(&old);
    if (kind == EMN_OUT_TABLE) {
        /* Whatever the stream holds goes first; from here on its stdio
         * buffer is empty between our flushes, so the signal handler can
         * write ours straight to the descriptor without reordering.  A
         * stream without a descriptor is simply not registered. */
        errno = 0;
        if (fwrite(hdr.v, 1, (size_t)hdr.n, stream) != (size_t)hdr.n || fflush(stream)) {
            *err = strerror(errno ? errno : EIO);
            goto fail;
        }
        o->fd = fileno(stream);
        if (o->fd >= 0 && !enlist(o)) {
            *err = "too many output files open";
            goto fail;
        }
    } else {
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
        if (o->fd < 0) {
            *err = strerror(errno);
            goto fail;
        }
        const char *why = pwrite_all(o->fd, hdr.v, (size_t)hdr.n, 0) < 0 ? strerror(errno)
                          : !enlist(o) ? "too many output files open" : NULL;
        if (why) {
            *err = why;
            close(o->fd);
            unlink(o->tmp);
            goto fail;
        }
    }
    restore_signals(&old);
    emn_buf_free(&hdr);
    return o;

fail:
    restore_signals(&old);
    emn_buf_free(&hdr);
    free_writer(o);
    return NULL;
}

/* Hand the buffered rows to the kernel.  On a write error the file is cut
 * back to the last whole row on disk and the writer marked failed.  Runs
 * with the terminating signals blocked.  Returns 0 or -1 (errno set). */
static int flush(emn_out *o)
{
    sigset_t old;
    int rc = 0, saved = 0;
    block_signals(&old);
    wstate s = current(o);
    if (o->failed) {
        rc = -1, saved = o->err_no;
    } else if (o->kind == EMN_OUT_TABLE) {
        if (s.n && (fwrite(o->buf, 1, (size_t)s.n, o->stream) != (size_t)s.n
                    || fflush(o->stream))) {
            rc = -1, saved = o->err_no = errno;
            o->failed = 1;
        }
        publish(o, (wstate){ .rows_base = s.rows, .rows = s.rows });
    } else if (s.n) {
        if (pwrite_all(o->fd, o->buf, (size_t)s.n, s.base) < 0) {
            rc = -1, saved = o->err_no = errno;
            o->failed = 1;
            if (ftruncate(o->fd, s.base)) {}
            publish(o, (wstate){ s.base, s.rows_base, s.rows_base, 0 });
        } else {
            publish(o, (wstate){ s.base + s.n, s.rows, s.rows, 0 });
            /* Keep the temporary file readable as it grows. */
            if (o->kind != EMN_OUT_CSV && write_count(o->fd, o->count_off, s.rows) < 0) {
                rc = -1, saved = o->err_no = errno;
                o->failed = 1;
            }
        }
    }
    o->last_flush = emn_now();
    restore_signals(&old);
    if (rc) errno = saved;
    return rc;
}

int emn_out_row(emn_out *o, double t, const double *values)
{
    if (o->dead || o->failed) {
        errno = o->failed ? o->err_no : EIO;
        return -1;
    }
    wstate s = current(o);
    char *p = o->buf + s.n, *start = p;
    int i;
    switch (o->kind) {
    case EMN_OUT_TABLE:
    case EMN_OUT_CSV: {
        /* CSV uses the table's %.9e rather than %.17g: every spreadsheet
         * reads it, ten significant digits are more than a spreadsheet
         * shows and far more than the integrator's tolerance warrants, the
         * columns line up, and a CSV row can be diffed against the table
         * printed for the same run.  Exact doubles are what the binary raw
         * file is for. */
        char sep = o->kind == EMN_OUT_CSV ? ',' : ' ';
        p += format_e9(p, t);
        for (i = 0; i < o->ncols; i++) {
            *p++ = sep;
            p += format_e9(p, values[i]);
        }
        *p++ = '\n';
        break;
    }
    case EMN_OUT_RAW_ASCII:
        /* The layout ngspice writes: the point index, then one value per
         * line, a blank line after the row.  17 significant digits, so the
         * doubles survive the round trip exactly. */
        p += snprintf(p, 24, " %ld", s.rows);
        p += snprintf(p, EMN_OUT_E16_MAX + 2, "\t%.16e\n", t);
        for (i = 0; i < o->ncols; i++)
            p += snprintf(p, EMN_OUT_E16_MAX + 2, "\t%.16e\n", values[i]);
        *p++ = '\n';
        break;
    case EMN_OUT_RAW_BINARY:
        memcpy(p, &t, sizeof t);
        if (o->ncols) memcpy(p + sizeof t, values, (size_t)o->ncols * sizeof *values);
        p += (size_t)(o->ncols + 1) * sizeof t;
        break;
    }
    s.n += (int)(p - start);
    s.rows++;
    publish(o, s);
    if (s.n > o->cap - o->rowmax || emn_now() - o->last_flush >= EMN_OUT_FLUSH_SECONDS)
        return flush(o);
    return 0;
}

int emn_out_close(emn_out **op)
{
    emn_out *o;
    sigset_t old;
    int rc = 0, saved = 0;

    if (!op || !*op) return 0;
    o = *op;
    *op = NULL;
    block_signals(&old);
    if (!o->dead) {
        if (flush(o) < 0) rc = -1, saved = errno;
        if (o->kind != EMN_OUT_TABLE) {
            wstate s = current(o);
            bool intact = true;
            if (o->kind != EMN_OUT_CSV && write_count(o->fd, o->count_off, s.rows_base) < 0) {
                if (!rc) saved = errno;
                rc = -1, intact = false;
            }
            if (close(o->fd) < 0) {
                if (!rc) saved = errno;
                rc = -1, intact = false;
            }
            /* A failed row write left a consistent prefix worth keeping; a
             * header that could not be fixed or a failed close did not. */
            if (!intact) {
                unlink(o->tmp);
            } else if (rename(o->tmp, o->path) < 0) {
                if (!rc) saved = errno;
                rc = -1;
                unlink(o->tmp);
            }
        }
    }
    unregister(o);
    restore_signals(&old);
    free_writer(o);
    if (rc) errno = saved;
    return rc;
}

void emn_out_discard(emn_out **op)
{
    emn_out *o;
    sigset_t old;
    if (!op || !*op) return;
    o = *op;
    *op = NULL;
    block_signals(&old);
    if (o->kind == EMN_OUT_TABLE) {
        /* Nothing to delete: what was printed stays printed. */
        if (!o->dead) flush(o);
    } else if (!o->dead) {
        close(o->fd);
        unlink(o->tmp);
    }
    unregister(o);
    restore_signals(&old);
    free_writer(o);
}

/* Finish one writer from the signal handler: only async-signal-safe calls
 * and only state that publish() made whole. */
static void finish_async(emn_out *o)
{
    wstate s = current(o);
    if (o->kind == EMN_OUT_TABLE) {
        if (!o->failed && s.n) write_all(o->fd, o->buf, (size_t)s.n);
        o->dead = 1;
        return;
    }
    long rows = s.rows_base;
    if (!o->failed && s.n) {
        if (pwrite_all(o->fd, o->buf, (size_t)s.n, s.base) == 0)
            rows = s.rows;
        else if (ftruncate(o->fd, s.base)) {}
    }
    if (o->kind != EMN_OUT_CSV) write_count(o->fd, o->count_off, rows);
    close(o->fd);
    rename(o->tmp, o->path);
    o->dead = 1;
}

void emn_out_emergency_close(void)
{
    int saved = errno;
    for (int i = 0; i < EMN_OUT_MAX_OPEN; i++) {
        emn_out *o = registry[i];
        if (!o || o->dead) continue;
        finish_async(o);
        registry[i] = NULL;
        o->slot = -1;
    }
    errno = saved;
}
