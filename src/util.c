/*
 * util.c: allocation that cannot fail quietly, arenas, text buffers and the
 * clock.  Nothing here knows about circuits.
 */
#include "config.h"
#include "util.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if HAVE_MADVISE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#endif
#if HAVE_MALLOPT
#include <malloc.h>
#endif

static void out_of_memory(size_t size)
{
    fprintf(stderr, "emnet: error: out of memory (allocating %zu bytes)\n", size);
    exit(3);
}

/*
 * malloc grows the heap 32 MiB at a time, never maps a block of its own
 * and never gives the heap back: a large circuit's reading, building and
 * operating point allocate and free arrays of tens to hundreds of MiB,
 * and a freed block's pages then serve the next ones instead of fresh
 * pages mapped again.  A fresh page costs far more than its bytes here:
 * on the benchmark machine, first writes ran at 0.4 to 2.6 GB/s against
 * 10 GB/s for a second write, and a 10^6-node mesh's transient mapped
 * 4.4 GB for a 2.6 GB peak when blocks over 32 MiB had their own
 * mappings (1.09 million page faults; 0.65 million now, system time 4.1
 * to 7.3 s down to 3.4).  The process's peak is no higher: what is freed
 * is used again, and the peak is reached either way.
 *
 * Pages stay small.  Transparent huge pages (one fault maps 2 MiB) buy
 * nothing once arrays are mapped in bulk (below): with them rc-1e6 and
 * mesh-1e6 took the same processor time, and ibmpg1's operating point
 * varied from 0.22 to 0.40 s where it otherwise took 0.24-0.28 s.
 */
#if HAVE_MALLOPT
#define HEAP_STEP ((size_t)32 << 20)

static void heap_setup(void)
{
    mallopt(M_TOP_PAD, HEAP_STEP);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
    mallopt(M_MMAP_MAX, 0);
}
#else
static void heap_setup(void) {}
#endif

/*
 * A large circuit's setup spends much of its time in page faults, and
 * they can be had in bulk: an array that is about to be written whole is
 * mapped by one call when it is allocated (MADV_POPULATE_WRITE, Linux
 * 5.14), which here costs a fifth of faulting its pages in one by one.
 * Only what will be written is mapped that way: room reserved on an upper
 * bound (emn_xreserve) and the room a growing array takes ahead of its
 * items (emn_xrealloc) are left to the faults, or mapped a quarter MiB at
 * a time as the items reach it (EMN_MAP_AHEAD), so that a page never
 * written is hardly ever part of the process.  A kernel without the call
 * refuses it once and is not asked again.
 */
#define POPULATE_FROM ((size_t)64 << 10)

#if HAVE_MADVISE && defined(MADV_POPULATE_WRITE)
static uintptr_t pop_page;      /* the page size; 0: not populating */

static void populate(void *p, size_t size)
{
    if (size < POPULATE_FROM || !pop_page) return;
    uintptr_t a = ((uintptr_t)p + pop_page - 1) & ~(pop_page - 1);
    uintptr_t b = ((uintptr_t)p + size) & ~(pop_page - 1);
    if (b > a && madvise((void *)a, b - a, MADV_POPULATE_WRITE) != 0 && errno == EINVAL) pop_page = 0;
}

static void populate_setup(void)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page > 0 && !(page & (page - 1))) pop_page = (uintptr_t)page;
}
#else
static void populate(void *p, size_t size)
{
    (void)p;
    (void)size;
}

static void populate_setup(void) {}
#endif

void emn_alloc_setup(void)
{
    heap_setup();
    populate_setup();
}

/* A stretch is a quarter MiB: 64 pages a call, and never more than that
 * mapped beyond the items. */
#define MAP_STEP ((size_t)256 << 10)

void emn_map_next(emn_mapped *m, const void *base, size_t used, size_t room)
{
    if (base != m->base) {      /* moved: the items were copied, so written */
        m->base = base;
        m->end = used;
    }
    if (used < m->end) return;
    size_t end = room - used > MAP_STEP ? used + MAP_STEP : room;
    populate((char *)base + used, end - used);
    m->end = end;
}

void *emn_xreserve(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) out_of_memory(size);
    return p;
}

void *emn_xmalloc(size_t size)
{
    void *p = emn_xreserve(size);
    populate(p, size);
    return p;
}

void *emn_xcalloc(size_t n, size_t size)
{
    if (n && size > SIZE_MAX / n) out_of_memory(SIZE_MAX);
    size_t total = n * size;
    if (total < POPULATE_FROM) {
        void *p = calloc(n ? n : 1, size ? size : 1);
        if (!p) out_of_memory(total);
        return p;
    }
    /* calloc would clear a block that is not fresh from the kernel page by
     * page, before it could be mapped in one call */
    void *p = emn_xmalloc(total);
    memset(p, 0, total);
    return p;
}

void *emn_xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) out_of_memory(size);
    return q;
}

char *emn_xstrdup(const char *s)
{
    return emn_xstrndup(s, strlen(s));
}

char *emn_xstrndup(const char *s, size_t n)
{
    char *d = emn_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *emn_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = emn_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

char *emn_strlower(char *s)
{
    for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
    return s;
}

bool emn_streq_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return false;
    return *a == *b;
}

/* Blocks of at least 64 KiB; a request larger than that gets its own block. */
struct arena_block { struct arena_block *next; size_t used, size; max_align_t data[]; };
struct emn_arena { struct arena_block *head; };

emn_arena *emn_arena_new(void)
{
    return emn_xcalloc(1, sizeof(emn_arena));
}

void *emn_arena_alloc_aligned(emn_arena *a, size_t size, size_t align)
{
    struct arena_block *b = a->head;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at > b->size || b->size - at < size) {
        size_t cap = size > 65536 ? size : 65536;
        b = emn_xmalloc(sizeof *b + cap);
        b->size = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
        at = 0;
    }
    void *p = (char *)b->data + at;
    b->used = at + size;
    memset(p, 0, size);
    return p;
}

void *emn_arena_alloc(emn_arena *a, size_t size)
{
    return emn_arena_alloc_aligned(a, size, 16);
}

char *emn_arena_strdup(emn_arena *a, const char *s)
{
    return emn_arena_strndup(a, s, strlen(s));
}

char *emn_arena_strndup(emn_arena *a, const char *s, size_t n)
{
    char *d = emn_arena_alloc_aligned(a, n + 1, 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

void emn_arena_free(emn_arena **pa)
{
    if (!pa || !*pa) return;
    struct arena_block *b = (*pa)->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(*pa);
    *pa = NULL;
}

void emn_arena_reset(emn_arena *a)
{
    struct arena_block *b = a->head;
    if (!b) return;
    /* keep the oldest block (the last in the list): blocks larger than
     * the default were one-off requests */
    while (b->next) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    b->used = 0;
    a->head = b;
}

emn_arena_mark emn_arena_get_mark(const emn_arena *a)
{
    return (emn_arena_mark){a->head, a->head ? a->head->used : 0};
}

void emn_arena_release(emn_arena *a, emn_arena_mark m)
{
    while (a->head && a->head != m.block) {
        struct arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
    if (a->head) a->head->used = m.used;
}

static unsigned long hash_str(const char *s)
{
    unsigned long h = 5381;
    while (*s) h = h * 33 ^ (unsigned char)*s++;
    return h;
}

int emn_strmap_get(const emn_strmap *m, const char *key)
{
    if (!m->cap) return -1;
    for (unsigned long i = hash_str(key) & (unsigned long)(m->cap - 1);; i = (i + 1) & (unsigned long)(m->cap - 1)) {
        if (!m->key[i]) return -1;
        if (!strcmp(m->key[i], key)) return m->val[i];
    }
}

void emn_strmap_put(emn_strmap *m, const char *key, int val)
{
    if (2 * (m->n + 1) > m->cap) {
        emn_strmap old = *m;
        m->cap = old.cap ? 2 * old.cap : 64;
        m->key = emn_xcalloc((size_t)m->cap, sizeof(char *));
        m->val = emn_xmalloc((size_t)m->cap * sizeof(int));
        m->n = 0;
        for (int i = 0; i < old.cap; i++)
            if (old.key[i]) {
                unsigned long j = hash_str(old.key[i]) & (unsigned long)(m->cap - 1);
                while (m->key[j]) j = (j + 1) & (unsigned long)(m->cap - 1);
                m->key[j] = old.key[i];
                m->val[j] = old.val[i];
                m->n++;
            }
        free(old.key);
        free(old.val);
    }
    unsigned long i = hash_str(key) & (unsigned long)(m->cap - 1);
    while (m->key[i] && strcmp(m->key[i], key)) i = (i + 1) & (unsigned long)(m->cap - 1);
    if (!m->key[i]) {
        m->key[i] = emn_xstrdup(key);
        m->n++;
    }
    m->val[i] = val;
}

void emn_strmap_free(emn_strmap *m)
{
    for (int i = 0; i < m->cap; i++) free(m->key[i]);
    free(m->key);
    free(m->val);
    memset(m, 0, sizeof *m);
}

double emn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void emn_buf_printf(emn_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    EMN_GROW(*b, b->n + n + 1);
    va_start(ap, fmt);
    vsnprintf(b->v + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += n;
}

void emn_buf_puts(emn_buf *b, const char *s)
{
    int n = (int)strlen(s);
    EMN_GROW(*b, b->n + n + 1);
    memcpy(b->v + b->n, s, (size_t)n + 1);
    b->n += n;
}

void emn_buf_reset(emn_buf *b)
{
    b->n = 0;
    if (b->v) b->v[0] = '\0';
}

void emn_buf_free(emn_buf *b)
{
    free(b->v);
    b->v = NULL;
    b->n = b->cap = 0;
}
