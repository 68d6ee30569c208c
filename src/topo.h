/*
 * topo.h: graph algorithms on the electrical network, independent of what
 * the branches are: spanning forests that keep some branches out of the
 * tree, fundamental loops with signed incidence, and merged node groups.
 *
 * A graph is given as branch endpoint arrays; node 0 is ground.  Every
 * result is plain arrays owned by the caller's structs and freed with the
 * matching free function.
 */
#ifndef EMN_TOPO_H
#define EMN_TOPO_H

#include <stdbool.h>

typedef struct emn_graph {
    int nnodes, nbranches;
    const int *from, *to;     /* branch b runs from node from[b] to node to[b] */
    /* rank[b]: smaller is preferred in the tree; rank < 0 keeps b out of
     * the tree (a current source must be a link). */
    const int *rank;
} emn_graph;

/* A spanning forest, grown from ground, then from the lowest numbered node
 * of every part ground does not reach: a minimum one by rank, breadth
 * first among branches of one rank (topo.c). */
typedef struct emn_forest {
    int *parent_branch;       /* per node: tree branch to its parent, -1 at a root */
    int *parent;              /* per node: parent node, -1 at a root */
    int *depth;
    int *root;                /* per node: root node of its tree */
    bool *in_tree;            /* per branch */
} emn_forest;

void emn_topo_forest(const emn_graph *g, emn_forest *f);
void emn_topo_forest_free(emn_forest *f);

/*
 * The fundamental loop of link `link`: the link itself, then the tree path
 * from its `to` node back to its `from` node.  Writes branch indices to
 * br[] and orientation (+1 if the loop runs through the branch from its
 * `from` to its `to` node, else -1) to sign[], returns the count.  br and
 * sign must hold nnodes + 1 entries.  Returns -1 if the link's ends lie in
 * different trees (a cutset of out-of-tree branches).
 */
int emn_topo_loop(const emn_graph *g, const emn_forest *f, int link, int *br, int *sign);

/* Tree path from node a up to the common ancestor and down to node b, as
 * (branch, sign) with sign +1 where the path runs from -> to.  Returns the
 * count or -1 if a and b are in different trees. */
int emn_topo_path(const emn_graph *g, const emn_forest *f, int a, int b, int *br, int *sign);

/* Union-find over nodes. */
typedef struct emn_dsu { int *parent, *size; int n; } emn_dsu;
void emn_dsu_init(emn_dsu *u, int n);
int emn_dsu_find(emn_dsu *u, int x);
/* Returns false if a and b were already joined. */
bool emn_dsu_union(emn_dsu *u, int a, int b);
void emn_dsu_free(emn_dsu *u);

#endif
