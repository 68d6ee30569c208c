/*
 * util.h: memory, arenas, growable arrays and string helpers shared by every
 * module.  Allocation failure is not recoverable in a command-line tool, so
 * the emn_x* allocators print one line and exit with status 3 instead of
 * returning NULL; callers never test for NULL.
 */
#ifndef EMN_UTIL_H
#define EMN_UTIL_H

#include <stddef.h>
#include <stdbool.h>

/* once, first thing in main: how malloc grows and maps (util.c: heap
 * steps, mapping in bulk) */
void emn_alloc_setup(void);
/* A large block from these is mapped at once, on the assumption that it
 * will be written whole. */
void *emn_xmalloc(size_t size);
void *emn_xcalloc(size_t n, size_t size);
/* Room on an upper bound, of which only the part written is ever mapped;
 * likewise the room emn_xrealloc grows beyond the old contents. */
void *emn_xreserve(size_t size);
void *emn_xrealloc(void *p, size_t size);
/* Mapping an array's room a stretch ahead of its items, as they are
 * appended: EMN_MAP_AHEAD(m, a) after a push maps the next stretch in one
 * call once the items reach the end of the last (util.c). */
typedef struct emn_mapped { const void *base; size_t end; } emn_mapped;
void emn_map_next(emn_mapped *m, const void *base, size_t used, size_t room);
#define EMN_MAP_AHEAD(m, a)                                                 \
    do {                                                                    \
        size_t emn_u_ = (size_t)(a).n * sizeof *(a).v;                      \
        if ((const void *)(a).v != (m).base || emn_u_ >= (m).end)           \
            emn_map_next(&(m), (a).v, emn_u_, (size_t)(a).cap * sizeof *(a).v); \
    } while (0)
char *emn_xstrdup(const char *s);
char *emn_xstrndup(const char *s, size_t n);
/* printf into a freshly allocated string */
char *emn_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Lower-case s in place (ASCII) and return it. */
char *emn_strlower(char *s);
/* Case-insensitive equality (ASCII). */
bool emn_streq_nocase(const char *a, const char *b);

/*
 * Growable array: a struct with members `v` (the items), `n` (count) and
 * `cap`.  EMN_PUSH appends one item, growing geometrically.
 *   struct { double *v; int n, cap; } xs = {0};
 *   EMN_PUSH(xs, 1.5);
 */
#define EMN_GROW(a, need)                                                   \
    do {                                                                    \
        if ((need) > (a).cap) {                                             \
            int emn_nc_ = (a).cap ? 2 * (a).cap : 8;                        \
            while (emn_nc_ < (need)) emn_nc_ *= 2;                          \
            (a).v = emn_xrealloc((a).v, (size_t)emn_nc_ * sizeof *(a).v);   \
            (a).cap = emn_nc_;                                              \
        }                                                                   \
    } while (0)
#define EMN_PUSH(a, item)                                                   \
    do {                                                                    \
        EMN_GROW(a, (a).n + 1);                                             \
        (a).v[(a).n++] = (item);                                            \
    } while (0)

/*
 * Arena: many small allocations freed together.  Expressions and the
 * netlist model live in one; freeing the arena frees them all, which keeps
 * error paths (and the fuzzer's leak checks) simple.
 */
typedef struct emn_arena emn_arena;
emn_arena *emn_arena_new(void);
void *emn_arena_alloc(emn_arena *a, size_t size);   /* zeroed, 16-aligned */
/* Zeroed and aligned to align (a power of 2 up to 16): strings and arrays
 * of numbers pack closer than 16-aligned pieces (a grid has 10^5 of them). */
void *emn_arena_alloc_aligned(emn_arena *a, size_t size, size_t align);
char *emn_arena_strdup(emn_arena *a, const char *s);
char *emn_arena_strndup(emn_arena *a, const char *s, size_t n);
void emn_arena_free(emn_arena **a);                 /* accepts NULL */
/* Forget every allocation but keep one block for reuse (scratch arenas). */
void emn_arena_reset(emn_arena *a);
/* A point in an arena's life, and forgetting what was allocated after it
 * (the allocations before it stay). */
typedef struct emn_arena_mark { void *block; size_t used; } emn_arena_mark;
emn_arena_mark emn_arena_get_mark(const emn_arena *a);
void emn_arena_release(emn_arena *a, emn_arena_mark m);

/*
 * String-keyed hash map to int values (open addressing, keys copied).
 * emn_strmap_get returns -1 when the key is absent.
 */
typedef struct emn_strmap { char **key; int *val; int n, cap; } emn_strmap;
int emn_strmap_get(const emn_strmap *m, const char *key);
void emn_strmap_put(emn_strmap *m, const char *key, int val);
void emn_strmap_free(emn_strmap *m);

/* Seconds of wall-clock time from a monotonic clock. */
double emn_now(void);

/* Growable character buffer for building text. */
typedef struct emn_buf { char *v; int n, cap; } emn_buf;
void emn_buf_printf(emn_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void emn_buf_puts(emn_buf *b, const char *s);
void emn_buf_free(emn_buf *b);
/* Empty the buffer, keeping its storage. */
void emn_buf_reset(emn_buf *b);

#endif
