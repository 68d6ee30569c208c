/*
 * test_output.c: the result writers, read back byte by byte.
 *
 * Every expected text is built here independently: headers spelled out
 * literally, numbers formatted by the C library's own printf, binary values
 * compared with the doubles that went in.  The fast %.9e formatter is
 * checked against printf on special values, decade and rounding boundaries,
 * exact ties and a few hundred thousand random doubles.  Signal-time
 * behaviour is checked in a child process that is interrupted while
 * writing, and write errors with a file size limit.
 *
 * With EMN_OUTPUT_DIR set, the test also leaves two raw files there (binary
 * and ASCII, rows given by simple formulas) for tests/output.sh to load in
 * ngspice.  With EMN_OUTPUT_BENCH set, it times 10^6 rows of 20 columns
 * against fprintf and reports the times as TAP comments.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "output.h"
#include "util.h"
#include "tap.h"

static char dir[256];

static char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    emn_buf b = {0};
    char chunk[65536];
    size_t r;
    while ((r = fread(chunk, 1, sizeof chunk, f)) > 0) {
        EMN_GROW(b, b.n + (int)r + 1);
        memcpy(b.v + b.n, chunk, r);
        b.n += (int)r;
    }
    fclose(f);
    EMN_GROW(b, b.n + 1);
    b.v[b.n] = 0;
    *len = b.n;
    return b.v;
}

static char *stream_text(FILE *f, long *len)
{
    fflush(f);
    long n = ftell(f);
    char *s = emn_xmalloc((size_t)n + 1);
    rewind(f);
    if (fread(s, 1, (size_t)n, f) != (size_t)n) n = 0;
    s[n] = 0;
    *len = n;
    return s;
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static char *path_in(const char *name)
{
    return emn_xasprintf("%s/%s", dir, name);
}

static char *tmp_of(const char *path)
{
    return emn_xasprintf("%s.tmp.%ld", path, (long)getpid());
}

/* Deterministic pseudo-random 64-bit numbers (xorshift64*). */
static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 2685821657736338717ULL;
}

static const char *const names3[] = { "v(a)", "i(r1)", "x(cone)" };
static const emn_unit units3[] = { EMN_UNIT_VOLTAGE, EMN_UNIT_CURRENT, EMN_UNIT_DISTANCE };

/* Row k of the reference data: the formulas tests/output.sh also uses. */
static void ref_row(int k, double *t, double v[3])
{
    *t = k * 1e-3;
    v[0] = 1.5 * k - 2;
    v[1] = 1e-3 * k * k;
    v[2] = -0.25 * k;
}

/* ------------------------------------------------------------ %.9e */

static void test_format(void)
{
    enum { NRAND = 300000 };
    static double vals[NRAND + 4096];
    int n = 0;
    const double specials[] = {
        0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, -NAN,
        DBL_MAX, -DBL_MAX, DBL_MIN, DBL_TRUE_MIN, -DBL_TRUE_MIN, 4.9406564584124654e-324 * 3,
        2.2250738585072009e-308, 1e-310, 1e-320, 1e308, 1e-308, 1e22, 1e23, 1e-5, 1e5,
        0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 9.9999999995, 9.99999999949999, 9.9999999995e100,
        9.9999999995e-100, 0.5, 1.5, 123456789012.0, 12345678905.0, 12345678915.0,
        12345678925.0, 1234567890.5, 99999999995.0, 99999999985.0, 5e-324, 1.7976931348623157e308,
        123.456, -123.456, 1e100, 1e-100, 6.02214076e23, 1.602176634e-19, 3.14159265358979,
    };
    for (size_t i = 0; i < sizeof specials / sizeof *specials; i++) vals[n++] = specials[i];
    /* Every power of ten and its neighbours. */
    for (int e = -323; e <= 308; e++) {
        char s[32];
        snprintf(s, sizeof s, "1e%d", e);
        double p = strtod(s, NULL);
        vals[n++] = p;
        vals[n++] = nextafter(p, 0);
        vals[n++] = nextafter(p, INFINITY);
    }
    /* Exact ties: integers with eleven significant digits ending in 5,
     * times powers of two (still exact). */
    for (int i = 0; i < 1000; i++) {
        double m = (double)(10000000000ULL + rnd() % 90000000000ULL);
        m = floor(m / 10) * 10 + 5;
        vals[n++] = ldexp(m, (int)(rnd() % 21) - 10) * ((i & 1) ? 1 : -1);
    }
    /* Random bit patterns (any finite value, subnormals included) and
     * random values of engineering size. */
    for (int i = 0; i < NRAND; i++) {
        uint64_t u = rnd();
        double d;
        if (i % 2) {
            memcpy(&d, &u, sizeof d);
        } else {
            d = (double)(u >> 11) / 9007199254740992.0 * pow(10, (double)(rnd() % 40) - 20);
            if (u & 1) d = -d;
        }
        vals[n++] = d;
    }

    /* Through the table writer, one value per row in the value column. */
    FILE *f = tmpfile();
    const char *nm[] = { "y" };
    const char *err = NULL;
    emn_out *o = emn_out_open(EMN_OUT_TABLE, NULL, f, NULL, 1, nm, NULL, &err);
    ok(o != NULL, "format: open table on tmpfile");
    for (int i = 0; i < n; i++) emn_out_row(o, vals[n - 1 - i], &vals[i]);
    ok(emn_out_close(&o) == 0 && o == NULL, "format: close");
    long len;
    char *text = stream_text(f, &len);
    fclose(f);
    char *line = strtok(text, "\n");
    ok(line && strcmp(line, "time y") == 0, "format: header line");
    int bad = 0, rows = 0;
    for (int i = 0; i < n && (line = strtok(NULL, "\n")); i++, rows++) {
        char want[80];
        snprintf(want, sizeof want, "%.9e %.9e", vals[n - 1 - i], vals[i]);
        if (strcmp(line, want) != 0 && bad++ < 5)
            printf("# got '%s' want '%s'\n", line, want);
    }
    ok(rows == n, "format: %d rows written", n);
    ok(bad == 0, "format: %d values identical to printf %%.9e (%d differ)", 2 * n, bad);
    free(text);
}

/* ------------------------------------------------------------ table */

static void test_table(void)
{
    const char *err = NULL;
    long len;
    FILE *f = tmpfile();
    emn_out *o = emn_out_open(EMN_OUT_TABLE, NULL, f, "t", 3, names3, units3, &err);
    ok(o && emn_out_close(&o) == 0, "table: 0 rows open and close");
    char *s = stream_text(f, &len);
    ok(strcmp(s, "time v(a) i(r1) x(cone)\n") == 0, "table: 0 rows is the header only");
    free(s);
    fclose(f);

    f = tmpfile();
    o = emn_out_open(EMN_OUT_TABLE, NULL, f, "t", 3, names3, units3, &err);
    double v[3] = { 1.0, -2.5e-7, 0.0 };
    ok(emn_out_row(o, 1e-3, v) == 0, "table: 1 row accepted");
    emn_out_close(&o);
    s = stream_text(f, &len);
    ok(strcmp(s, "time v(a) i(r1) x(cone)\n"
                 "1.000000000e-03 1.000000000e+00 -2.500000000e-07 0.000000000e+00\n") == 0,
       "table: 1 row exact text");
    free(s);
    fclose(f);

    /* Many rows: every line must match printf. */
    f = tmpfile();
    o = emn_out_open(EMN_OUT_TABLE, NULL, f, "t", 3, names3, units3, &err);
    emn_buf want = {0};
    emn_buf_puts(&want, "time v(a) i(r1) x(cone)\n");
    for (int k = 0; k < 20000; k++) {
        double t, r[3];
        ref_row(k, &t, r);
        emn_out_row(o, t, r);
        emn_buf_printf(&want, "%.9e %.9e %.9e %.9e\n", t, r[0], r[1], r[2]);
    }
    emn_out_close(&o);
    s = stream_text(f, &len);
    ok(len == want.n && memcmp(s, want.v, (size_t)want.n) == 0, "table: 20000 rows exact text");
    free(s);
    emn_buf_free(&want);
    fclose(f);

    /* No columns but time. */
    f = tmpfile();
    o = emn_out_open(EMN_OUT_TABLE, NULL, f, "t", 0, NULL, NULL, &err);
    emn_out_row(o, 1.0, NULL);
    emn_out_row(o, 2.0, NULL);
    emn_out_close(&o);
    s = stream_text(f, &len);
    ok(strcmp(s, "time\n1.000000000e+00\n2.000000000e+00\n") == 0, "table: time column only");
    free(s);
    fclose(f);

    /* The signal handler writes pending rows straight to the descriptor. */
    f = tmpfile();
    o = emn_out_open(EMN_OUT_TABLE, NULL, f, "t", 3, names3, units3, &err);
    emn_out_row(o, 1e-3, v);
    emn_out_row(o, 2e-3, v);
    emn_out_emergency_close();
    ok(emn_out_row(o, 3e-3, v) == -1 && emn_out_close(&o) == 0, "table: rows refused after emergency close");
    s = stream_text(f, &len);
    ok(strcmp(s, "time v(a) i(r1) x(cone)\n"
                 "1.000000000e-03 1.000000000e+00 -2.500000000e-07 0.000000000e+00\n"
                 "2.000000000e-03 1.000000000e+00 -2.500000000e-07 0.000000000e+00\n") == 0,
       "table: emergency close writes the pending rows");
    free(s);
    fclose(f);

    f = fopen("/dev/full", "w");
    if (f) {
        setvbuf(f, NULL, _IONBF, 0);
        err = NULL;
        o = emn_out_open(EMN_OUT_TABLE, NULL, f, "t", 3, names3, units3, &err);
        ok(o == NULL && err && *err, "table: unwritable stream refused at open (%s)", err ? err : "");
        fclose(f);
    }
}

/* ------------------------------------------------------------ CSV */

static void test_csv(void)
{
    const char *err = NULL;
    long len;
    char *path = path_in("out.csv"), *tmp = tmp_of(path);
    const char *nm[] = { "v(a,b)", "i(r1)" };

    emn_out *o = emn_out_open(EMN_OUT_CSV, path, NULL, "t", 2, nm, NULL, &err);
    ok(o != NULL, "csv: open");
    ok(!exists(path) && exists(tmp), "csv: target absent and temporary present before close");
    ok(emn_out_close(&o) == 0, "csv: close with 0 rows");
    ok(exists(path) && !exists(tmp), "csv: renamed into place at close");
    char *s = slurp(path, &len);
    ok(s && strcmp(s, "time,\"v(a,b)\",i(r1)\n") == 0, "csv: 0 rows is the header, v(a,b) quoted");
    free(s);

    o = emn_out_open(EMN_OUT_CSV, path, NULL, "t", 2, nm, NULL, &err);
    double v[2] = { -1.0 / 3, 6.02214076e23 };
    emn_out_row(o, 0.5, v);
    emn_out_close(&o);
    s = slurp(path, &len);
    ok(s && strcmp(s, "time,\"v(a,b)\",i(r1)\n5.000000000e-01,-3.333333333e-01,6.022140760e+23\n") == 0,
       "csv: 1 row exact text (replaces the earlier file)");
    free(s);

    o = emn_out_open(EMN_OUT_CSV, path, NULL, "t", 2, nm, NULL, &err);
    emn_buf want = {0};
    emn_buf_puts(&want, "time,\"v(a,b)\",i(r1)\n");
    for (int k = 0; k < 50000; k++) {
        double t, r[3];
        ref_row(k, &t, r);
        emn_out_row(o, t, r);
        emn_buf_printf(&want, "%.9e,%.9e,%.9e\n", t, r[0], r[1]);
    }
    struct stat st = {0};
    bool grown = stat(tmp, &st) == 0 && st.st_size > 1000000;
    ok(grown, "csv: rows reach the temporary while writing (%ld bytes)", (long)st.st_size);
    s = slurp(path, &len);
    ok(s && strcmp(s, "time,\"v(a,b)\",i(r1)\n5.000000000e-01,-3.333333333e-01,6.022140760e+23\n") == 0,
       "csv: the earlier file stays intact until close");
    free(s);
    emn_out_close(&o);
    s = slurp(path, &len);
    ok(s && len == want.n && memcmp(s, want.v, (size_t)want.n) == 0, "csv: 50000 rows exact text");
    free(s);
    emn_buf_free(&want);
    unlink(path);
    free(path);
    free(tmp);
}

/* ------------------------------------------------------------ raw */

/* The header emnet must write, spelled out, with the point count field
 * padded to 20 characters. */
static char *raw_header(bool binary, long points)
{
    return emn_xasprintf("Title: test circuit\n"
                         "Date: Thu Jan  1 00:00:00 1970\n"
                         "Plotname: Transient Analysis\n"
                         "Flags: real\n"
                         "No. Variables: 4\n"
                         "No. Points: %-20ld\n"
                         "Variables:\n"
                         "\t0\ttime\ttime\n"
                         "\t1\tv(a)\tvoltage\n"
                         "\t2\ti(r1)\tcurrent\n"
                         "\t3\tx(cone)\tnotype\n"
                         "%s",
                         points, binary ? "Binary:\n" : "Values:\n");
}

static emn_out *write_raw(emn_out_kind kind, const char *path, int nrows)
{
    const char *err = NULL;
    emn_out *o = emn_out_open(kind, path, NULL, "test circuit", 3, names3, units3, &err);
    if (!o) {
        printf("# open %s: %s\n", path, err);
        return NULL;
    }
    for (int k = 0; k < nrows; k++) {
        double t, v[3];
        ref_row(k, &t, v);
        emn_out_row(o, t, v);
    }
    return o;
}

static void test_raw_binary(void)
{
    char *path = path_in("bin.raw"), *tmp = tmp_of(path);
    const int counts[] = { 0, 1, 5000 };
    for (int c = 0; c < 3; c++) {
        int nrows = counts[c];
        long len;
        unlink(path);
        emn_out *o = write_raw(EMN_OUT_RAW_BINARY, path, nrows);
        ok(o && !exists(path) && exists(tmp), "raw binary %d rows: only the temporary before close", nrows);
        ok(emn_out_close(&o) == 0, "raw binary %d rows: close", nrows);
        ok(!exists(tmp), "raw binary %d rows: temporary gone", nrows);
        char *s = slurp(path, &len), *h = raw_header(true, nrows);
        long hn = (long)strlen(h);
        ok(s && len >= hn && memcmp(s, h, (size_t)hn) == 0, "raw binary %d rows: header bytes", nrows);
        ok(len == hn + nrows * 4 * (long)sizeof(double), "raw binary %d rows: file size", nrows);
        int bad = 0;
        for (int k = 0; s && k < nrows && len == hn + nrows * 32L; k++) {
            double want[4], got[4];
            ref_row(k, &want[0], &want[1]);
            memcpy(got, s + hn + 32L * k, sizeof got);
            bad += memcmp(got, want, sizeof got) != 0;
        }
        ok(bad == 0, "raw binary %d rows: every double identical", nrows);
        free(s);
        free(h);
    }
    unlink(path);
    free(path);
    free(tmp);
}

static void test_raw_ascii(void)
{
    char *path = path_in("ascii.raw");
    const int counts[] = { 0, 1, 3000 };
    for (int c = 0; c < 3; c++) {
        int nrows = counts[c];
        long len;
        emn_out *o = write_raw(EMN_OUT_RAW_ASCII, path, nrows);
        ok(emn_out_close(&o) == 0, "raw ascii %d rows: close", nrows);
        char *h = raw_header(false, nrows);
        emn_buf want = {0};
        emn_buf_puts(&want, h);
        for (int k = 0; k < nrows; k++) {
            double t, v[3];
            ref_row(k, &t, v);
            emn_buf_printf(&want, " %d\t%.16e\n\t%.16e\n\t%.16e\n\t%.16e\n\n", k, t, v[0], v[1], v[2]);
        }
        char *s = slurp(path, &len);
        ok(s && len == want.n && memcmp(s, want.v, (size_t)want.n) == 0,
           "raw ascii %d rows: exact text", nrows);
        /* %.16e keeps 17 digits: the values read back exactly. */
        if (nrows == 3000) {
            char *p = s + strlen(h);
            int bad = 0;
            for (int k = 0; k < nrows; k++) {
                double t, v[3], g[4];
                ref_row(k, &t, v);
                strtol(p, &p, 10);
                for (int j = 0; j < 4; j++) g[j] = strtod(p, &p);
                bad += g[0] != t || g[1] != v[0] || g[2] != v[1] || g[3] != v[2];
            }
            ok(bad == 0, "raw ascii: values read back exactly");
        }
        free(s);
        free(h);
        emn_buf_free(&want);
    }
    unlink(path);
    free(path);
}

/* ------------------------------------------------- discard, open errors */

static void test_discard_and_errors(void)
{
    const emn_out_kind kinds[] = { EMN_OUT_CSV, EMN_OUT_RAW_BINARY, EMN_OUT_RAW_ASCII };
    const char *labels[] = { "csv", "raw binary", "raw ascii" };
    char *path = path_in("discard.out"), *tmp = tmp_of(path);
    for (int i = 0; i < 3; i++) {
        emn_out *o = write_raw(kinds[i], path, 10);
        ok(o && exists(tmp), "discard %s: temporary exists while writing", labels[i]);
        emn_out_discard(&o);
        ok(o == NULL && !exists(tmp) && !exists(path), "discard %s: temporary removed, no target", labels[i]);
    }
    emn_out_discard(NULL);
    emn_out *none = NULL;
    emn_out_discard(&none);
    ok(emn_out_close(&none) == 0 && emn_out_close(NULL) == 0, "close and discard accept NULL");

    const char *err = NULL;
    char *bad = path_in("no/such/dir/x.raw");
    emn_out *o = emn_out_open(EMN_OUT_RAW_BINARY, bad, NULL, "t", 3, names3, units3, &err);
    ok(o == NULL && err && strcmp(err, strerror(ENOENT)) == 0,
       "open in a missing directory fails: %s", err ? err : "(no message)");

    /* The registry holds a bounded number of writers; a failure must say
     * so, and closing one frees its place. */
    emn_out *many[40];
    int opened = 0;
    err = NULL;
    for (int i = 0; i < 40; i++) {
        char *p = emn_xasprintf("%s/many%d.csv", dir, i);
        many[i] = emn_out_open(EMN_OUT_CSV, p, NULL, "t", 3, names3, NULL, &err);
        opened += many[i] != NULL;
        free(p);
    }
    ok(opened < 40 && err && strstr(err, "too many"), "open beyond the registry fails: %s", err ? err : "");
    for (int i = 0; i < 40; i++) emn_out_discard(&many[i]);
    o = write_raw(EMN_OUT_CSV, path, 1);
    ok(o != NULL, "open succeeds again after discarding");
    emn_out_discard(&o);
    free(bad);
    free(path);
    free(tmp);
}

/* ------------------------------------------------- emergency close */

/* Check a binary raw file written by write_raw's formulas: the header's
 * count must match the data that follows, row for row. */
static bool raw_consistent(const char *path, long *rows_out)
{
    long len;
    char *s = slurp(path, &len);
    if (!s) return false;
    char *h = raw_header(true, 0);
    char *cnt = strstr(s, "No. Points: ");
    char *data = strstr(s, "Binary:\n");
    bool good = cnt && data;
    long rows = good ? strtol(cnt + 12, NULL, 10) : -1;
    if (good) {
        data += 8;
        good = (long)strlen(h) == data - s && len - (data - s) == rows * 32;
        for (long k = 0; good && k < rows; k++) {
            double want[4];
            ref_row((int)k, &want[0], &want[1]);
            good = memcmp(data + 32 * k, want, sizeof want) == 0;
        }
    }
    *rows_out = rows;
    free(h);
    free(s);
    return good;
}

static void test_emergency_direct(void)
{
    char *path = path_in("emerg.raw"), *cpath = path_in("emerg.csv"), *tmp = tmp_of(path);
    emn_out *o = write_raw(EMN_OUT_RAW_BINARY, path, 777);
    emn_out *c = write_raw(EMN_OUT_CSV, cpath, 3);
    emn_out_emergency_close();
    long rows = 0;
    ok(exists(path) && !exists(tmp), "emergency close: renamed into place");
    bool whole = raw_consistent(path, &rows);
    ok(whole && rows == 777, "emergency close: 777 rows, count matches (%ld)", rows);
    long len;
    char *s = slurp(cpath, &len);
    ok(s && strcmp(s, "time,v(a),i(r1),x(cone)\n"
                      "0.000000000e+00,-2.000000000e+00,0.000000000e+00,-0.000000000e+00\n"
                      "1.000000000e-03,-5.000000000e-01,1.000000000e-03,-2.500000000e-01\n"
                      "2.000000000e-03,1.000000000e+00,4.000000000e-03,-5.000000000e-01\n") == 0,
       "emergency close: csv flushed whole");
    free(s);
    double t = 0, v[3] = { 0 };
    ok(emn_out_row(o, t, v) == -1, "emergency close: later rows refused");
    ok(emn_out_close(&o) == 0 && emn_out_close(&c) == 0, "emergency close: later close just frees");
    ok(raw_consistent(path, &rows) && rows == 777, "emergency close: file untouched by the later close");
    unlink(path);
    unlink(cpath);
    free(path);
    free(cpath);
    free(tmp);
}

static void on_sigint(int sig)
{
    emn_out_emergency_close();
    _exit(130);
}

/* A child writes rows forever; SIGINT arrives at an arbitrary moment.  The
 * file must be in place with a point count matching whole rows.  The child
 * closes and reopens the file every 20000 rows to keep it small, so the
 * signal may also find the target closed and no writer open. */
static void test_emergency_signal(void)
{
    char *path = path_in("sig.raw");
    int pass = 0, tries = 8;
    long rows = 0, total = 0;
    for (int i = 0; i < tries; i++) {
        int ready[2];
        char c = 0;
        unlink(path);
        if (pipe(ready)) break;
        pid_t pid = fork();
        if (pid == 0) {
            signal(SIGINT, on_sigint);
            emn_out *o = write_raw(EMN_OUT_RAW_BINARY, path, 0);
            if (write(ready[1], "r", 1) != 1) _exit(1);
            for (int k = 0;; k = (k + 1) % 20000) {
                double t, v[3];
                ref_row(k, &t, v);
                emn_out_row(o, t, v);
                if (k == 19999) {
                    emn_out_close(&o);
                    o = write_raw(EMN_OUT_RAW_BINARY, path, 0);
                }
            }
        }
        /* Wait until the handler is in place and the file open. */
        close(ready[1]);
        if (read(ready[0], &c, 1) != 1) c = 0;
        close(ready[0]);
        usleep(1000 + 7000 * i);
        kill(pid, SIGINT);
        int st;
        waitpid(pid, &st, 0);
        bool good = WIFEXITED(st) && WEXITSTATUS(st) == 130 && raw_consistent(path, &rows);
        pass += good;
        total += rows;
        if (!good) printf("# try %d: status %d, rows %ld\n", i, st, rows);
    }
    ok(pass == tries, "SIGINT while writing: %d of %d files whole and counted (%ld rows in all)",
       pass, tries, total);
    unlink(path);
    free(path);
}

/* ------------------------------------------------- write errors */

/* With the file size limited, writes fail part way; the file must still be
 * renamed into place holding only whole rows and close must report -1. */
static void test_write_error(void)
{
    char *path = path_in("full.csv"), *rpath = path_in("full.raw");
    pid_t pid = fork();
    if (pid == 0) {
        struct rlimit rl = { 100000, 100000 };
        signal(SIGXFSZ, SIG_IGN);
        setrlimit(RLIMIT_FSIZE, &rl);
        int code = 0;
        emn_out *o = write_raw(EMN_OUT_CSV, path, 0), *r = write_raw(EMN_OUT_RAW_BINARY, rpath, 0);
        int k, failed = 0;
        for (k = 0; k < 20000; k++) {
            double t, v[3];
            ref_row(k, &t, v);
            failed |= emn_out_row(o, t, v) < 0;
            failed |= (emn_out_row(r, t, v) < 0) << 1;
        }
        if (failed != 3) code |= 1;
        errno = 0;
        if (emn_out_close(&o) != -1 || errno != EFBIG) code |= 2;
        errno = 0;
        if (emn_out_close(&r) != -1 || errno != EFBIG) code |= 4;
        _exit(code);
    }
    int st;
    waitpid(pid, &st, 0);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "write error: rows and close report -1 with EFBIG (%d)",
       WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    long len;
    char *s = slurp(path, &len);
    int lines = 0, bad = 0;
    if (s) {
        char *line = strtok(s, "\n");
        bad += !line || strcmp(line, "time,v(a),i(r1),x(cone)") != 0;
        for (int k = 0; (line = strtok(NULL, "\n")); k++, lines++) {
            double t, v[3];
            char want[128];
            ref_row(k, &t, v);
            snprintf(want, sizeof want, "%.9e,%.9e,%.9e,%.9e", t, v[0], v[1], v[2]);
            bad += strcmp(line, want) != 0;
        }
    }
    ok(s && len <= 100000 && bad == 0 && lines > 0,
       "write error: csv kept with %d whole rows", lines);
    free(s);
    s = slurp(path, &len);
    ok(s && len > 0 && s[len - 1] == '\n', "write error: csv ends with a newline, no torn row");
    free(s);
    long rows = -1;
    bool whole = raw_consistent(rpath, &rows);
    ok(whole && rows > 0, "write error: raw kept with %ld rows, count matches", rows);
    unlink(path);
    unlink(rpath);
    free(path);
    free(rpath);
}

/* ------------------------------------------------- files for ngspice */

static void leave_files(const char *outdir)
{
    char *b = emn_xasprintf("%s/emn_bin.raw", outdir), *a = emn_xasprintf("%s/emn_ascii.raw", outdir);
    emn_out *o = write_raw(EMN_OUT_RAW_BINARY, b, 11);
    ok(emn_out_close(&o) == 0, "left %s for ngspice", b);
    o = write_raw(EMN_OUT_RAW_ASCII, a, 11);
    ok(emn_out_close(&o) == 0, "left %s for ngspice", a);
    free(a);
    free(b);
}

/* ------------------------------------------------- benchmark */

static void bench(void)
{
    enum { ROWS = 1000000, COLS = 20 };
    static double v[COLS];
    const char *nm[COLS];
    char names[COLS][16];
    for (int j = 0; j < COLS; j++) {
        snprintf(names[j], sizeof names[j], "v(n%d)", j);
        nm[j] = names[j];
    }
    FILE *f = fopen("/dev/null", "w");
    const char *err;
    double t0 = emn_now();
    emn_out *o = emn_out_open(EMN_OUT_TABLE, NULL, f, "b", COLS, nm, NULL, &err);
    for (int k = 0; k < ROWS; k++) {
        for (int j = 0; j < COLS; j++) v[j] = sin(k * 1e-4 + j) * pow(10, j - 10);
        emn_out_row(o, k * 1e-6, v);
    }
    emn_out_close(&o);
    double t1 = emn_now();
    for (int k = 0; k < ROWS; k++) {
        for (int j = 0; j < COLS; j++) v[j] = sin(k * 1e-4 + j) * pow(10, j - 10);
        fprintf(f, "%.9e", k * 1e-6);
        for (int j = 0; j < COLS; j++) fprintf(f, " %.9e", v[j]);
        fputc('\n', f);
    }
    fflush(f);
    double t2 = emn_now();
    char *p = path_in("bench.raw");
    o = emn_out_open(EMN_OUT_RAW_BINARY, p, NULL, "b", COLS, nm, NULL, &err);
    for (int k = 0; k < ROWS; k++) {
        for (int j = 0; j < COLS; j++) v[j] = sin(k * 1e-4 + j) * pow(10, j - 10);
        emn_out_row(o, k * 1e-6, v);
    }
    emn_out_close(&o);
    double t3 = emn_now();
    unlink(p);
    free(p);
    fclose(f);
    printf("# bench: %d rows x %d columns: table %.2f s, fprintf %.2f s, raw binary %.2f s"
           " (each including the sin/pow to make the values)\n",
           ROWS, COLS, t1 - t0, t2 - t1, t3 - t2);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/emn-output.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("SOURCE_DATE_EPOCH", "0", 1);
    test_format();
    test_table();
    test_csv();
    test_raw_binary();
    test_raw_ascii();
    test_discard_and_errors();
    test_emergency_direct();
    test_emergency_signal();
    test_write_error();
    const char *outdir = getenv("EMN_OUTPUT_DIR");
    if (outdir && *outdir) leave_files(outdir);
    if (getenv("EMN_OUTPUT_BENCH")) bench();
    rmdir(dir);
    return tap_done();
}
