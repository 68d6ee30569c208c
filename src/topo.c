/*
 * topo.c: spanning forests, fundamental loops and union-find.
 *
 * The forest is a minimum spanning forest by rank, grown from ground
 * (Prim's algorithm with a queue per rank): the next branch into the tree
 * is always one of the lowest rank that reaches a new node, and among
 * those the first queued, so that within a rank the tree grows breadth
 * first and fundamental loops stay short.  A link's loop then runs
 * through tree branches of its own rank or lower only: the charge
 * formulation keeps sources and capacitors in the tree, and the loop of a
 * capacitor link holds only capacitors and sources.
 */
#include "config.h"
#include "topo.h"
#include "util.h"

#include <stdlib.h>

/* Adjacency in CSR form: for node v, adj[start[v] .. start[v+1]) are the
 * incident branches, sorted by rank so preferred branches are tried first. */
typedef struct { int *start, *adj; } adjacency;

static const int *sort_rank;
static int by_rank(const void *a, const void *b)
{
    int ra = sort_rank[*(const int *)a], rb = sort_rank[*(const int *)b];
    if (ra != rb) return ra < rb ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

/* The branches of rank >= 0 by rank, then by number; *m is how many.
 * Ranks are a few small numbers (an element kind's preference), so they
 * are counted out; only a range wider than the branches are many is
 * sorted by comparison.  (Sorting each node's list apart took half a
 * million calls of qsort on a 10^5-node ladder.) */
static int *rank_order(const emn_graph *g, int *m)
{
    int nb = g->nbranches, top = -1, n = 0;
    for (int b = 0; b < nb; b++)
        if (g->rank[b] >= 0) {
            n++;
            if (g->rank[b] > top) top = g->rank[b];
        }
    int *order = emn_xmalloc((size_t)n * sizeof(int) + 1);
    *m = n;
    if (top >= nb) {
        n = 0;
        for (int b = 0; b < nb; b++)
            if (g->rank[b] >= 0) order[n++] = b;
        sort_rank = g->rank;
        qsort(order, (size_t)n, sizeof(int), by_rank);
        return order;
    }
    int *at = emn_xcalloc((size_t)top + 2, sizeof(int));
    for (int b = 0; b < nb; b++)
        if (g->rank[b] >= 0) at[g->rank[b] + 1]++;
    for (int r = 0; r < top; r++) at[r + 1] += at[r];
    for (int b = 0; b < nb; b++)        /* in order of b: ties stay by number */
        if (g->rank[b] >= 0) order[at[g->rank[b]]++] = b;
    free(at);
    return order;
}

/* The adjacency, from the branches in rank order (rank_order's). */
static adjacency build_adjacency(const emn_graph *g, const int *order, int m)
{
    adjacency A;
    A.start = emn_xcalloc((size_t)g->nnodes + 1, sizeof(int));
    for (int b = 0; b < g->nbranches; b++) {
        if (g->rank[b] < 0) continue;
        A.start[g->from[b] + 1]++;
        if (g->to[b] != g->from[b]) A.start[g->to[b] + 1]++;   /* a self-loop is listed once */
    }
    for (int v = 0; v < g->nnodes; v++) A.start[v + 1] += A.start[v];
    A.adj = emn_xmalloc((size_t)(A.start[g->nnodes] + 1) * sizeof(int));
    int *fill = emn_xmalloc((size_t)g->nnodes * sizeof(int) + 1);
    for (int v = 0; v < g->nnodes; v++) fill[v] = A.start[v];
    /* filled in rank order, every node's list comes out in it */
    for (int q = 0; q < m; q++) {
        int b = order[q];
        A.adj[fill[g->from[b]]++] = b;
        if (g->to[b] != g->from[b]) A.adj[fill[g->to[b]]++] = b;
    }
    free(fill);
    return A;
}

void emn_topo_forest(const emn_graph *g, emn_forest *f)
{
    int n = g->nnodes, nb = g->nbranches;
    f->parent_branch = emn_xmalloc((size_t)n * sizeof(int));
    f->parent = emn_xmalloc((size_t)n * sizeof(int));
    f->depth = emn_xmalloc((size_t)n * sizeof(int));
    f->root = emn_xmalloc((size_t)n * sizeof(int));
    f->in_tree = emn_xcalloc((size_t)g->nbranches + 1, sizeof(bool));
    for (int v = 0; v < n; v++) {
        f->parent_branch[v] = -1;
        f->parent[v] = -1;
        f->depth[v] = -1;
        f->root[v] = -1;
    }
    int m;
    int *order = rank_order(g, &m);
    adjacency A = build_adjacency(g, order, m);
    /* The ranks, numbered densely (level[b]), and a queue per level: each
     * branch enters its level's queue at most once from each end, so a
     * level holds twice its branches. */
    int *level = emn_xmalloc((size_t)nb * sizeof(int) + 1);
    int *qstart = emn_xmalloc(((size_t)m + 1) * sizeof(int));
    int nl = 0;
    for (int q = 0; q < m; q++) {
        int b = order[q];
        if (q == 0 || g->rank[b] != g->rank[order[q - 1]]) qstart[nl++] = 2 * q;
        level[b] = nl - 1;
    }
    qstart[nl] = 2 * m;
    free(order);
    int *item = emn_xmalloc((size_t)(2 * m) * sizeof(int) + 1);
    int *head = emn_xmalloc((size_t)nl * sizeof(int) + 1), *tail = emn_xmalloc((size_t)nl * sizeof(int) + 1);
    for (int r = 0; r < n; r++) {
        if (f->depth[r] >= 0) continue;
        for (int l = 0; l < nl; l++) head[l] = tail[l] = qstart[l];
        int low = nl;                   /* no queue below this level holds a branch */
        int v = r;
        f->depth[r] = 0;
        f->root[r] = r;
        for (;;) {
            /* v joined the tree: queue its branches to nodes still out */
            for (int k = A.start[v]; k < A.start[v + 1]; k++) {
                int b = A.adj[k], w = g->from[b] == v ? g->to[b] : g->from[b];
                if (f->depth[w] >= 0) continue;
                int l = level[b];
                item[tail[l]++] = b;
                if (l < low) low = l;
            }
            /* the next node: across the first queued branch of the lowest
             * rank that still leads out of the tree */
            int b = -1;
            while (low < nl && b < 0) {
                if (head[low] == tail[low]) {
                    low++;
                    continue;
                }
                int c = item[head[low]++];
                if (f->depth[g->from[c]] < 0 || f->depth[g->to[c]] < 0) b = c;
            }
            if (b < 0) break;
            int u = f->depth[g->from[b]] >= 0 ? g->from[b] : g->to[b];
            v = u == g->from[b] ? g->to[b] : g->from[b];
            f->depth[v] = f->depth[u] + 1;
            f->parent[v] = u;
            f->parent_branch[v] = b;
            f->root[v] = r;
            f->in_tree[b] = true;
        }
    }
    free(item);
    free(head);
    free(tail);
    free(level);
    free(qstart);
    free(A.start);
    free(A.adj);
}

void emn_topo_forest_free(emn_forest *f)
{
    free(f->parent_branch);
    free(f->parent);
    free(f->depth);
    free(f->root);
    free(f->in_tree);
    f->parent_branch = f->parent = f->depth = f->root = NULL;
    f->in_tree = NULL;
}

int emn_topo_path(const emn_graph *g, const emn_forest *f, int a, int b, int *br, int *sign)
{
    if (f->root[a] != f->root[b]) return -1;
    /* Walk both ends up to the common ancestor: a's side is traversed
     * upward (child -> parent), b's side downward, so b's half is written
     * in reverse at the end. */
    int na = 0, nb = 0;
    int total = f->depth[a] + f->depth[b];   /* upper bound on length */
    int *tmpb = emn_xmalloc((size_t)(total + 1) * sizeof(int));
    int *tmps = emn_xmalloc((size_t)(total + 1) * sizeof(int));
    while (a != b) {
        if (f->depth[a] >= f->depth[b]) {
            int e = f->parent_branch[a];
            br[na] = e;
            sign[na] = g->from[e] == a ? +1 : -1;   /* going a -> parent */
            na++;
            a = f->parent[a];
        } else {
            int e = f->parent_branch[b];
            tmpb[nb] = e;
            tmps[nb] = g->from[e] == f->parent[b] ? +1 : -1;  /* going parent -> b */
            nb++;
            b = f->parent[b];
        }
    }
    for (int k = nb - 1; k >= 0; k--) {
        br[na] = tmpb[k];
        sign[na] = tmps[k];
        na++;
    }
    free(tmpb);
    free(tmps);
    return na;
}

int emn_topo_loop(const emn_graph *g, const emn_forest *f, int link, int *br, int *sign)
{
    br[0] = link;
    sign[0] = +1;
    int k = emn_topo_path(g, f, g->to[link], g->from[link], br + 1, sign + 1);
    return k < 0 ? -1 : k + 1;
}

void emn_dsu_init(emn_dsu *u, int n)
{
    u->n = n;
    u->parent = emn_xmalloc((size_t)(n + 1) * sizeof(int));
    u->size = emn_xmalloc((size_t)(n + 1) * sizeof(int));
    for (int i = 0; i < n; i++) {
        u->parent[i] = i;
        u->size[i] = 1;
    }
}

int emn_dsu_find(emn_dsu *u, int x)
{
    while (u->parent[x] != x) {
        u->parent[x] = u->parent[u->parent[x]];
        x = u->parent[x];
    }
    return x;
}

bool emn_dsu_union(emn_dsu *u, int a, int b)
{
    a = emn_dsu_find(u, a);
    b = emn_dsu_find(u, b);
    if (a == b) return false;
    if (u->size[a] < u->size[b]) { int t = a; a = b; b = t; }
    u->parent[b] = a;
    u->size[a] += u->size[b];
    return true;
}

void emn_dsu_free(emn_dsu *u)
{
    free(u->parent);
    free(u->size);
    u->parent = u->size = NULL;
}
