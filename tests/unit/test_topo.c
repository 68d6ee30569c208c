/*
 * test_topo.c: spanning forests and fundamental loops (topo.c) against a
 * plain minimum spanning forest by rank written here (Prim's algorithm),
 * which scans every branch for the next one at each step.
 */
#include "config.h"
#include "tap.h"
#include "topo.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_forest {
    int parent_branch[64], parent[64], depth[64], root[64];
    bool in_tree[256];
} ref_forest;

/* From each root in turn, the next tree branch is, of the branches with
 * one end in the tree and the other out, the one of lowest rank, then
 * whose end in the tree joined it first, then of lowest number. */
static void ref_prim(int n, int nb, const int *from, const int *to, const int *rank, ref_forest *f)
{
    memset(f->in_tree, 0, sizeof f->in_tree);
    for (int v = 0; v < n; v++) f->parent_branch[v] = f->parent[v] = f->depth[v] = f->root[v] = -1;
    int joined[64], clock = 0;
    for (int r = 0; r < n; r++) {
        if (f->depth[r] >= 0) continue;
        f->depth[r] = 0;
        f->root[r] = r;
        joined[r] = clock++;
        for (;;) {
            int best = -1, bin = -1;
            for (int b = 0; b < nb; b++) {
                if (rank[b] < 0 || (f->depth[from[b]] >= 0) == (f->depth[to[b]] >= 0)) continue;
                int in = f->depth[from[b]] >= 0 ? from[b] : to[b];
                if (best < 0 || rank[b] < rank[best] ||
                    (rank[b] == rank[best] && (joined[in] < joined[bin] || (joined[in] == joined[bin] && b < best)))) {
                    best = b;
                    bin = in;
                }
            }
            if (best < 0) break;
            int w = bin == from[best] ? to[best] : from[best];
            f->depth[w] = f->depth[bin] + 1;
            f->parent[w] = bin;
            f->parent_branch[w] = best;
            f->root[w] = r;
            f->in_tree[best] = true;
            joined[w] = clock++;
        }
    }
}

static unsigned long long rng = 0x9e3779b97f4a7c15ULL;
static int draw(int n)
{
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (unsigned long long)n);
}

/* A loop through the tree closes: walking its branches with their signs
 * from the link's `from` node ends where it started. */
static bool loop_closes(const emn_graph *g, const emn_forest *f, int link)
{
    int br[65], sign[65];
    int k = emn_topo_loop(g, f, link, br, sign);
    if (k < 0) return f->root[g->from[link]] != f->root[g->to[link]];
    int at = g->from[link];
    for (int q = 0; q < k; q++) {
        int b = br[q];
        int tail = sign[q] > 0 ? g->from[b] : g->to[b], head = sign[q] > 0 ? g->to[b] : g->from[b];
        if (tail != at) return false;
        if (q > 0 && !f->in_tree[b]) return false;
        at = head;
    }
    return at == g->from[link] && br[0] == link;
}

int main(void)
{
    /* By hand: 0-1 by a capacitor (rank 4, branch 0) and a source (rank
     * 0, branch 1), 1-2 by a resistor (2), 0-2 by an inductor (3), and a
     * current source 2-3 (rank -1).  From node 0: the source to 1, then
     * the resistor to 2, which outranks the inductor though it reaches 2
     * a level deeper; node 3 is a root of its own. */
    {
        int from[] = {0, 0, 1, 0, 2}, to[] = {1, 1, 2, 2, 3}, rank[] = {4, 0, 2, 3, -1};
        emn_graph g = {4, 5, from, to, rank};
        emn_forest f;
        emn_topo_forest(&g, &f);
        ok(f.parent_branch[0] == -1 && f.parent_branch[1] == 1 && f.parent_branch[2] == 2 &&
               f.parent_branch[3] == -1 && f.root[3] == 3 && f.depth[2] == 2,
           "by hand: the source and the resistor in the tree, the inductor, the capacitor and the current "
           "source out");
        emn_topo_forest_free(&f);
    }

    /* Random multigraphs with parallel branches, self-loops and branches
     * kept out of the tree: ranks from a few values (as the formulations
     * give them) and from a range wider than the branches are many. */
    int bad = 0, badloop = 0, badrank = 0, trials = 0, wide = 0;
    for (int t = 0; t < 4000; t++) {
        int n = 1 + draw(60), nb = draw(200);
        int from[256], to[256], rank[256];
        bool spread = t % 2;
        for (int b = 0; b < nb; b++) {
            from[b] = draw(n);
            to[b] = draw(8) == 0 ? from[b] : draw(n);
            rank[b] = draw(7) == 0 ? -1 : spread ? draw(1000000) : draw(5);
        }
        int top = -1;
        for (int b = 0; b < nb; b++) if (rank[b] > top) top = rank[b];
        wide += top >= nb;
        emn_graph g = {n, nb, from, to, rank};
        emn_forest f;
        emn_topo_forest(&g, &f);
        ref_forest r;
        ref_prim(n, nb, from, to, rank, &r);
        bool same = true;
        for (int v = 0; v < n; v++)
            same = same && f.parent_branch[v] == r.parent_branch[v] && f.parent[v] == r.parent[v] &&
                   f.depth[v] == r.depth[v] && f.root[v] == r.root[v];
        for (int b = 0; b < nb; b++) same = same && f.in_tree[b] == r.in_tree[b];
        if (!same) bad++;
        for (int b = 0; b < nb; b++)
            if (!f.in_tree[b] && from[b] != to[b] && !loop_closes(&g, &f, b)) badloop++;
        /* a link's loop runs through tree branches of no higher rank */
        for (int b = 0; b < nb; b++) {
            int br[65], sign[65];
            if (f.in_tree[b] || rank[b] < 0 || from[b] == to[b]) continue;
            int k = emn_topo_loop(&g, &f, b, br, sign);
            for (int q = 1; q < k; q++) if (rank[br[q]] > rank[b]) { badrank++; break; }
        }
        emn_topo_forest_free(&f);
        trials++;
    }
    ok(bad == 0, "4000 random multigraphs: the forest is the minimum one by rank, grown in queue order (%d differ)",
       bad);
    ok(wide > 1000 && wide < trials, "both ways of ordering the branches were taken (%d of %d wide)", wide, trials);
    ok(badloop == 0, "every link's fundamental loop closes through tree branches (%d do not)", badloop);
    ok(badrank == 0, "every link's loop runs through tree branches of its rank or lower (%d do not)", badrank);
    return tap_done();
}
