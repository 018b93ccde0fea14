/*
 * planner.c - turn a built graph into memory, once: every op result, gradient
 * and saved buffer gets an offset in one block, and buffers whose lifetimes
 * do not overlap share bytes. Runs at the first forward (or tg_graph_plan)
 * and again only if nodes were added since.
 *
 * Time runs over forward (node i at t = i) then backward (node i at
 * t = 2N - i). Lifetimes, per alias group (a node and the views of it, which
 * share its memory):
 * - values: [i, last consumer] when gradients are off (forward-only graphs).
 *   With gradients on they live to the end (backward may run more than once),
 *   unless tg_graph_set_share_values: then to the last backward that reads them: node j's
 *   own (t = 2N - j) unless its op says TG_OP_BWD_NO_OUTPUT, and each
 *   consumer j's unless its op says TG_OP_BWD_NO_INPUTS (an op without these
 *   flags keeps its values and its inputs' to its backward).
 *   Kept nodes (tg_node_keep) and nodes nothing consumes live to the end.
 * - gradients of op nodes: from the first consumer's backward to the node's
 *   own backward; input leaves' gradients live to the end (users read them).
 * - recomputed values (TG_OP_RECOMPUTE, with share_values): the value lives
 *   [i, last forward consumer]; a second buffer, from the first backward that
 *   reads it (or recomputes a value from it) to the last, takes the value the
 *   backward pass recomputes.
 * - saved buffers (n->buf): from the node's forward to the end.
 * - values written in place: an elementwise forward (TG_OP_FWD_INPLACE)
 *   writes over input 0's value when nothing reads that value later (GELU of
 *   a linear's output in inference, an eval-mode dropout: then no copy).
 * - gradients written in place: an elementwise backward (TG_OP_BWD_DX_OVER_DY)
 *   that is the first writer of its input's gradient writes it over its own
 *   gradient, and a linear's (TG_OP_BWD_DX_OVER_X) over its input's value
 *   when it is that value's last reader: one buffer, lifetimes joined. In an
 *   MLP's backward the recomputed GELU output, its gradient and the hidden
 *   pre-activation's gradient are one buffer.
 * Offsets are assigned greedily, largest buffer first, at the lowest address
 * free over its lifetime (the approach of TFLite's and ggml's allocators).
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "graph_impl.h"
#include "params.h"

#define ALIGN 64
/* Slots are numbered ("order") value 2i, gradient 2i + 1, saved buffer b
 * 2N + 8i + b, recomputed value 2N + 8i + TG_NODE_MAX_BUFFERS: below ORDERS(N). */
#define ORDERS(N) (10 * (N) + 8)

typedef struct {
    size_t   size, offset;
    int64_t  t0, t1;        /* inclusive lifetime */
    int      order;         /* creation order, for a deterministic sort */
    void   **target;        /* where the address goes */
} slot;

static size_t aligned_bytes(const tg_tensor *t)
{
    size_t b = (size_t)t->numel * tg_dtype_size(t->dtype);
    return (b + ALIGN - 1) & ~(size_t)(ALIGN - 1);
}


void tg__plan_release(tg_graph *g)
{
    tg__free_aligned(g->block);
    tg__free_aligned(g->scratch);
    tg__free(g->reach);
    tg__free(g->first_writer);
    tg__free(g->remat);
    tg__free(g->remat_fwd);
    tg__free(g->remat_done);
    tg__free(g->fresh);
    tg__free(g->live);
    g->live = NULL;
    g->n_live = 0;
    g->block = g->scratch = NULL;
    g->reach = NULL;
    g->first_writer = NULL;
    g->remat = g->remat_fwd = NULL;
    g->remat_done = g->fresh = NULL;
    g->block_bytes = g->scratch_bytes = 0;
    g->planned = g->ran_forward = false;
}

/* requires_grad flows forward from parameters and marked inputs. */
static void propagate_requires_grad(tg_graph *g)
{
    for (int i = 0; i < g->n_nodes; i++) {
        tg_node *n = g->nodes[i];
        if (n->kind == TG_NODE_INPUT && !g->grad_enabled) n->requires_grad = false;
        if (n->kind == TG_NODE_PARAM)   /* a buffer never takes one, whatever its frozen flag */
            n->requires_grad = g->grad_enabled && !n->param->frozen && !n->param->buffer;
        if (n->kind != TG_NODE_OP) continue;
        bool any = false;
        for (int k = 0; k < n->n_in; k++) any |= n->in[k]->requires_grad;
        n->requires_grad = any && n->op->backward && tg_dtype_is_float(n->value.dtype);
        if (tg__is_view(n)) n->requires_grad = n->in[0]->requires_grad;
    }
}

static int by_size_desc(const void *a, const void *b)
{
    const slot *x = a, *y = b;
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    return x->order - y->order;
}

static int by_offset(const void *a, const void *b)
{
    const slot *x = *(const slot *const *)a, *y = *(const slot *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Greedy placement; returns the block size. `tmp` has room for n pointers. */
static size_t place(slot *s, int n, slot **tmp)
{
    size_t total = 0;
    qsort(s, (size_t)n, sizeof *s, by_size_desc);
    for (int i = 0; i < n; i++) {
        int k = 0;
        for (int j = 0; j < i; j++)
            if (s[j].t0 <= s[i].t1 && s[i].t0 <= s[j].t1) tmp[k++] = &s[j];
        qsort(tmp, (size_t)k, sizeof *tmp, by_offset);
        size_t at = 0;
        for (int j = 0; j < k; j++) {
            if (tmp[j]->offset >= at + s[i].size) break;   /* the gap before it fits */
            if (tmp[j]->offset + tmp[j]->size > at) at = tmp[j]->offset + tmp[j]->size;
        }
        s[i].offset = at;
        if (at + s[i].size > total) total = at + s[i].size;
    }
    return total;
}

/* What the planner works out about a graph, one step at a time. Arrays have
 * N + 1 entries (per node; lifetimes on alias-group roots), ext ORDERS(N). */
typedef struct {
    tg_graph *g;
    int       N;
    int64_t   END;          /* after the last backward: 2N + 1 */
    bool      lean;         /* values die at their last reader (no grads, or shared values) */
    int64_t  *last_use;     /* the value's last time */
    int64_t  *first_grad;   /* the first backward that writes the gradient, -1: none */
    int      *consumers;    /* how many nodes read it */
    int64_t  *rd_lo;        /* readers' backward times of a recomputed value */
    int64_t  *rd_hi;
    uint8_t  *hold;         /* values never recomputed */
    int      *host;         /* order of the slot holding its gradient, -1: its own */
    int      *vhost;        /* order of the slot holding its value, -1: its own */
    int64_t  *ext;          /* per order: how far hosted buffers stretch the slot */
    slot     *slots;        /* every buffer to place */
    slot    **tmp;          /* room for `place` */
} planner;

/* Allocates the planner's arrays and the graph's per-node plan state; false if out of memory. */
static bool planner_alloc(planner *pl, tg_graph *g)
{
    const int N = g->n_nodes;
    *pl = (planner){.g = g, .N = N, .END = 2 * (int64_t)N + 1,
                    .lean = !g->grad_enabled || g->share_values};
    int64_t *last_use = tg__malloc(((size_t)N + 1) * sizeof *last_use);
    int64_t *first_grad = tg__malloc(((size_t)N + 1) * sizeof *first_grad);
    int *consumers = tg__malloc(((size_t)N + 1) * sizeof *consumers);
    slot *slots = tg__malloc(((size_t)N * (3 + TG_NODE_MAX_BUFFERS) + 1) * sizeof *slots);
    slot **tmp = tg__malloc(((size_t)N * (3 + TG_NODE_MAX_BUFFERS) + 1) * sizeof *tmp);
    g->reach = tg__malloc((size_t)N + 1);
    g->first_writer = tg__malloc(((size_t)N + 1) * sizeof *g->first_writer);
    g->remat = tg__calloc((size_t)N + 1, sizeof *g->remat);
    g->remat_fwd = tg__calloc((size_t)N + 1, sizeof *g->remat_fwd);
    g->remat_done = tg__calloc((size_t)N + 1, 1);
    g->fresh = tg__calloc((size_t)N + 1, 1);
    int64_t *rd_lo = tg__malloc(((size_t)N + 1) * sizeof *rd_lo);   /* readers' backward times */
    int64_t *rd_hi = tg__malloc(((size_t)N + 1) * sizeof *rd_hi);
    uint8_t *hold = tg__malloc((size_t)N + 1);   /* values never recomputed */
    int *host = tg__malloc(((size_t)N + 1) * sizeof *host);
    int *vhost = tg__malloc(((size_t)N + 1) * sizeof *vhost);
    int64_t *ext = tg__malloc((size_t)ORDERS(N) * sizeof *ext);
    pl->last_use = last_use, pl->first_grad = first_grad, pl->consumers = consumers;
    pl->slots = slots, pl->tmp = tmp, pl->rd_lo = rd_lo, pl->rd_hi = rd_hi, pl->hold = hold;
    pl->host = host, pl->vhost = vhost, pl->ext = ext;
    return !(!last_use || !first_grad || !consumers || !slots || !tmp || !g->reach ||
             !g->first_writer || !g->remat || !g->remat_fwd || !g->remat_done || !g->fresh ||
             !rd_lo || !rd_hi || !hold || !host || !vhost || !ext);
}

/* Frees the planner's arrays (not the graph's plan state). */
static void planner_free(planner *pl)
{
    tg__free(pl->last_use);
    tg__free(pl->first_grad);
    tg__free(pl->consumers);
    tg__free(pl->slots);
    tg__free(pl->tmp);
    tg__free(pl->rd_lo);
    tg__free(pl->rd_hi);
    tg__free(pl->hold);
    tg__free(pl->host);
    tg__free(pl->vhost);
    tg__free(pl->ext);
}

/* Starts each value's lifetime at its own forward (or the end) and counts its readers. */
static void count_consumers(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const int64_t END = pl->END;
    const bool lean = pl->lean;
    int64_t *last_use = pl->last_use, *first_grad = pl->first_grad;
    int *consumers = pl->consumers;
    /* lifetimes per alias group, recorded on the group's root */
    for (int i = 0; i < N; i++) {
        last_use[i] = lean ? i : END;
        first_grad[i] = -1;
        consumers[i] = 0;
    }
    for (int i = 0; i < N; i++)
        for (int k = 0; k < g->nodes[i]->n_in; k++) consumers[g->nodes[i]->in[k]->id]++;
}

/* Which values are recomputed in backward (remat_done marks them for now):
 * cheap ops first, then (recompute on) linear outputs. A cheap op may be
 * recomputed from recomputed values (a chain: layer_norm, then a
 * rearrange of it); an op whose backward reads no input (rearrange) only
 * from recomputed values and leaves, so recomputing it never keeps a
 * value alive longer. A linear is recomputed from plain values only.
 * `hold` marks values that stay: read after the forward through a view
 * (kept, or an output), or inputs of a cheap recomputed op (that op is
 * recomputed from them instead). */
static void choose_recomputed(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const int64_t END = pl->END;
    int64_t *rd_lo = pl->rd_lo, *rd_hi = pl->rd_hi;
    uint8_t *hold = pl->hold;
    const int *consumers = pl->consumers;
    for (int i = 0; i < N; i++) rd_lo[i] = END, rd_hi[i] = -1, g->remat_done[i] = 0;
    for (int i = 0; i < N; i++) {
        tg_node *n = g->nodes[i];
        hold[i] = n->keep || consumers[i] == 0;
        if (tg__is_view(n) && hold[i]) hold[tg__root_of(n)->id] = 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        const unsigned want = pass == 0 ? TG_OP_RECOMPUTE : TG_OP_RECOMPUTE_COSTLY;
        if (!g->grad_enabled || !g->share_values || (pass == 1 && !g->recompute)) break;
        for (int i = 0; i < N; i++) {
            tg_node *n = g->nodes[i];
            unsigned f = n->op ? n->op->flags : 0;
            bool ok = n->kind == TG_NODE_OP && (f & want) && (f & TG_OP_BWD_NO_OUTPUT) &&
                      !(f & TG_OP_VIEW) && n->requires_grad && !hold[i];
            for (int k = 0; ok && k < n->n_in; k++) {
                const tg_node *r = tg__root_of(n->in[k]);
                if (pass == 1) ok = !g->remat_done[r->id];
                else if (f & TG_OP_BWD_NO_INPUTS) ok = g->remat_done[r->id] || r->kind != TG_NODE_OP;
            }
            if (!ok) continue;
            g->remat_done[i] = 1;
            for (int k = 0; k < n->n_in; k++) hold[tg__root_of(n->in[k])->id] = 1;
        }
    }
}

/* Each value's last reader (forward, or a backward that reads it), each
 * recomputed value's readers, and the first backward writing each gradient. */
static void value_lifetimes(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const int64_t END = pl->END;
    int64_t *last_use = pl->last_use, *first_grad = pl->first_grad;
    int64_t *rd_lo = pl->rd_lo, *rd_hi = pl->rd_hi;
    const int *consumers = pl->consumers;
    for (int i = 0; i < N; i++) {
        tg_node *n = g->nodes[i];
        int r = tg__root_of(n)->id;
        if (consumers[i] == 0 || n->keep) last_use[r] = END;   /* an output, or kept */
        /* does n's backward run and read its own value / its inputs'? */
        bool bwd = g->grad_enabled && n->kind == TG_NODE_OP && !tg__is_view(n) && n->requires_grad;
        int64_t t_bwd = 2 * (int64_t)N - i;
        if (bwd && !(n->op->flags & TG_OP_BWD_NO_OUTPUT) && last_use[r] < t_bwd)
            last_use[r] = t_bwd;
        bool reads_in = bwd && !(n->op->flags & TG_OP_BWD_NO_INPUTS);
        for (int k = 0; k < n->n_in; k++) {
            int a = tg__root_of(n->in[k])->id;
            if (last_use[a] < i) last_use[a] = i;
            if (reads_in && g->remat_done[a]) {   /* recomputed for this backward */
                if (t_bwd < rd_lo[a]) rd_lo[a] = t_bwd;
                if (t_bwd > rd_hi[a]) rd_hi[a] = t_bwd;
            } else if (reads_in && last_use[a] < t_bwd) {
                last_use[a] = t_bwd;
            }
            /* n's backward writes into its inputs' grads: the group's grad is born then */
            int64_t t = 2 * (int64_t)N - i;
            if (first_grad[a] < 0 || t < first_grad[a]) first_grad[a] = t;
        }
    }
}

/* A recomputed value is made at its first reader's backward (rd_lo) from
 * its inputs, which must be there then: a plain input lives that long, a
 * recomputed one is made first (readers before their inputs, so rd_lo is
 * final when a node is reached). */
static void recomputed_lifetimes(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    int64_t *last_use = pl->last_use, *rd_lo = pl->rd_lo, *rd_hi = pl->rd_hi;
    for (int i = N - 1; i >= 0; i--) {
        if (!g->remat_done[i] || rd_hi[i] < 0) continue;
        for (int k = 0; k < g->nodes[i]->n_in; k++) {
            int a = tg__root_of(g->nodes[i]->in[k])->id;
            if (!g->remat_done[a]) {
                if (last_use[a] < rd_lo[i]) last_use[a] = rd_lo[i];
                continue;
            }
            if (rd_lo[i] < rd_lo[a]) rd_lo[a] = rd_lo[i];
            if (rd_lo[i] > rd_hi[a]) rd_hi[a] = rd_lo[i];
        }
    }
}

/* Values written in place (TG_OP_FWD_INPLACE), where input 0's value is
 * read by nothing after this forward: vhost[i] is the order of the slot
 * holding i's value (-1: its own), and ext[order] how far a hosted value
 * (or gradient, below) stretches that slot's lifetime. Forward order, so
 * chains (gelu, then dropout) resolve to one slot. */
static void values_in_place(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const bool lean = pl->lean;
    const int64_t *last_use = pl->last_use;
    int *vhost = pl->vhost;
    int64_t *ext = pl->ext;
    for (int o = 0; o < ORDERS(N); o++) ext[o] = -1;
    for (int i = 0; i < N; i++) {
        tg_node *n = g->nodes[i];
        vhost[i] = -1;
        if (n->kind != TG_NODE_OP || !(n->op->flags & TG_OP_FWD_INPLACE) || tg__is_view(n) ||
            !lean)
            continue;
        const tg_node *r = tg__root_of(n->in[0]);
        const int a = r->id;
        if (r->kind != TG_NODE_OP || last_use[a] != i || r->value.numel != n->value.numel ||
            r->value.dtype != n->value.dtype)
            continue;
        vhost[i] = vhost[a] >= 0 ? vhost[a] : 2 * a;
        if (ext[vhost[i]] < last_use[i]) ext[vhost[i]] = last_use[i];
    }
}

/* Gradients that share a buffer (TG_OP_BWD_DX_OVER_DY / _OVER_X): host[a]
 * is the order of the slot holding a's gradient (-1: its own). Backward
 * order (n before its inputs), so chains resolve to one slot. */
static void gradients_in_place(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const int64_t *last_use = pl->last_use, *first_grad = pl->first_grad, *rd_hi = pl->rd_hi;
    const int *vhost = pl->vhost;
    int *host = pl->host;
    int64_t *ext = pl->ext;
    for (int i = 0; i < N; i++) host[i] = -1;
    for (int i = N - 1; i >= 0; i--) {
        tg_node *n = g->nodes[i];
        unsigned f = n->kind == TG_NODE_OP ? n->op->flags : 0;
        if (!g->grad_enabled || !n->requires_grad || tg__is_view(n) || !(f & TG_OP_BWD_FRESH) ||
            !(f & (TG_OP_BWD_DX_OVER_DY | TG_OP_BWD_DX_OVER_X)))
            continue;
        const int64_t t = 2 * (int64_t)N - i;
        tg_node *r = tg__root_of(n->in[0]);
        const int a = r->id;
        /* n must set a's gradient: its first writer, with a only as input 0 */
        bool ok = r->kind == TG_NODE_OP && r->requires_grad && first_grad[a] == t;
        for (int k = 1; ok && k < n->n_in; k++) ok = tg__root_of(n->in[k]) != r;
        if (!ok) continue;
        if (f & TG_OP_BWD_DX_OVER_DY) {
            if (r->grad.numel != n->grad.numel || r->grad.dtype != n->grad.dtype) continue;
            host[a] = host[i] >= 0 ? host[i] : 2 * i + 1;
        } else if (g->share_values && g->remat_done[a] && rd_hi[a] == t) {
            host[a] = 2 * N + a * 8 + TG_NODE_MAX_BUFFERS;   /* the recomputed value's */
        } else if (g->share_values && !g->remat_done[a] && last_use[a] == t) {
            host[a] = vhost[a] >= 0 ? vhost[a] : 2 * a;   /* the value's */
        } else {
            continue;
        }
        const int64_t dies = 2 * (int64_t)N - a;
        if (ext[host[a]] < dies) ext[host[a]] = dies;
    }
}

/* One slot per buffer that needs its own bytes (values, gradients, saved and
 * recomputed buffers), lifetimes stretched by what they host; returns how many. */
static int collect_slots(planner *pl)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const int64_t END = pl->END;
    const int64_t *last_use = pl->last_use, *first_grad = pl->first_grad;
    const int64_t *rd_lo = pl->rd_lo, *rd_hi = pl->rd_hi, *ext = pl->ext;
    const int *consumers = pl->consumers, *host = pl->host, *vhost = pl->vhost;
    slot *slots = pl->slots;
    int ns = 0;
#define ADD_SLOT(bytes_, t0_, t1_, order_, target_)                                     \
    slots[ns++] = (slot){(bytes_), 0, (t0_), ext[order_] > (t1_) ? ext[order_] : (t1_), \
                         (order_), (target_)}
    for (int i = 0; i < N; i++) {
        tg_node *n = g->nodes[i];
        if (n->kind == TG_NODE_OP && !tg__is_view(n) && vhost[i] < 0)
            ADD_SLOT(aligned_bytes(&n->value), i, last_use[i], 2 * i, &n->value.data);
        if (n->requires_grad && n->kind != TG_NODE_PARAM && !tg__is_view(n) && host[i] < 0) {
            int64_t born = first_grad[i] >= 0 ? first_grad[i] : N;
            if (born > N && consumers[i] == 0) born = N;
            int64_t dies = n->kind == TG_NODE_INPUT ? END : 2 * (int64_t)N - i;
            if (n->kind == TG_NODE_INPUT) born = N;
            if (born > dies) born = dies;
            ADD_SLOT(aligned_bytes(&n->grad), born, dies, 2 * i + 1, &n->grad.data);
        } else if (n->kind != TG_NODE_PARAM && !tg__is_view(n) && host[i] < 0) {
            n->grad.data = NULL;
        }
        for (int b = 0; b < n->n_buf; b++)
            ADD_SLOT(aligned_bytes(&n->buf[b]), i, END, 2 * N + i * 8 + b, &n->buf[b].data);
        if (g->remat_done[i] && rd_hi[i] >= 0)
            ADD_SLOT(aligned_bytes(&n->value), rd_lo[i], rd_hi[i],
                     2 * N + i * 8 + TG_NODE_MAX_BUFFERS, &g->remat[i]);
        g->remat_done[i] = 0;
    }
#undef ADD_SLOT
    return ns;
}

/* g->live[t]: the bytes of the slots whose lifetime holds t, t in [0, END];
 * false if out of memory. */
static bool record_live(tg_graph *g, const slot *s, int ns, int64_t END)
{
    size_t *live = tg__calloc((size_t)END + 2, sizeof *live);
    if (!live) return false;
    for (int i = 0; i < ns; i++) {   /* differences, then their running sum (modulo 2^n) */
        live[s[i].t0] += s[i].size;
        live[(s[i].t1 < END ? s[i].t1 : END) + 1] -= s[i].size;
    }
    for (int64_t t = 1; t <= END; t++) live[t] += live[t - 1];
    g->live = live;
    g->n_live = END + 1;
    return true;
}

size_t tg_graph_plan_live_bytes(const tg_graph *g, int64_t t)
{
    TG__NONNULL(g, 0);
    if (!g->planned || !g->live) {
        tg_set_error(TG_ERR_STATE, "plan live bytes: the graph is not planned yet (tg_graph_plan)");
        return 0;
    }
    if (t < 0 || t >= g->n_live) {
        tg_set_error(TG_ERR_INVALID, "plan live bytes: time %lld is outside [0, %lld] (2N + 1 "
                     "for %d nodes)", (long long)t, (long long)g->n_live - 1, g->n_nodes);
        return 0;
    }
    return g->live[t];
}

static atomic_size_t plan_limit;   /* tg_set_plan_limit; 0: none */

void tg_set_plan_limit(size_t bytes) { atomic_store(&plan_limit, bytes); }
size_t tg_plan_limit(void) { return atomic_load(&plan_limit); }

/* Places the slots in one block, points every buffer at its bytes (hosted
 * ones at their host's, views at their root's). TG_ERR_LIMIT (nothing
 * allocated) when the block and scratch exceed tg_plan_limit(), TG_ERR_NOMEM
 * when they cannot be had. */
static tg_status assign_addresses(planner *pl, int ns)
{
    tg_graph *g = pl->g;
    const int N = pl->N;
    const int *host = pl->host, *vhost = pl->vhost;
    slot *slots = pl->slots, **tmp = pl->tmp;
    int64_t *ext = pl->ext;
    size_t bytes = place(slots, ns, tmp), scratch = 0;
    for (int i = 0; i < N; i++)
        if (g->nodes[i]->scratch > scratch) scratch = g->nodes[i]->scratch;
    size_t limit = tg_plan_limit();
    if (limit && (bytes > limit || scratch > limit - bytes))
        return tg_set_error(TG_ERR_LIMIT, "plan: %d nodes need %zu bytes (%.3g GB of values, "
                            "gradients, saved buffers and scratch), more than the limit of %zu "
                            "bytes (%.3g GB, tg_set_plan_limit)", N, bytes + scratch,
                            (double)(bytes + scratch) / 1e9, limit, (double)limit / 1e9);
    g->block = tg__malloc_aligned(bytes ? bytes : ALIGN);
    g->scratch = tg__malloc_aligned(scratch ? scratch : ALIGN);
    if (!g->block || !g->scratch || !record_live(g, slots, ns, pl->END)) return TG_ERR_NOMEM;
    memset(g->block, 0, bytes);
    for (int i = 0; i < ns; i++) {
        *slots[i].target = (unsigned char *)g->block + slots[i].offset;
        ext[slots[i].order] = (int64_t)slots[i].offset;   /* now: where each slot went */
    }
    for (int i = 0; i < N; i++) {
        if (vhost[i] >= 0) g->nodes[i]->value.data = (unsigned char *)g->block + ext[vhost[i]];
        if (host[i] >= 0) g->nodes[i]->grad.data = (unsigned char *)g->block + ext[host[i]];
    }
    /* views alias their root */
    for (int i = 0; i < N; i++) {
        tg_node *n = g->nodes[i];
        if (!tg__is_view(n)) continue;
        n->value.data = n->in[0]->value.data;
        n->grad.data = n->requires_grad ? n->in[0]->grad.data : NULL;
    }
    g->block_bytes = bytes;
    g->scratch_bytes = scratch;
    g->planned = true;
    return TG_OK;
}

tg_status tg_graph_plan(tg_graph *g)
{
    if (!g) return tg_set_error(TG_ERR_INVALID, "plan: graph is NULL");
    if (g->has_error) return tg_set_error(TG_ERR_STATE, "graph is in error: %s", g->error);
    tg__plan_release(g);
    propagate_requires_grad(g);

    planner pl;
    tg_status st = TG_OK;
    if (!planner_alloc(&pl, g)) goto oom;
    count_consumers(&pl);
    choose_recomputed(&pl);
    value_lifetimes(&pl);
    recomputed_lifetimes(&pl);
    values_in_place(&pl);
    gradients_in_place(&pl);
    if ((st = assign_addresses(&pl, collect_slots(&pl))) == TG_ERR_NOMEM) goto oom;
    if (st) tg__plan_release(g);
    goto done;
oom:
    st = tg_set_error(TG_ERR_NOMEM, "plan: out of memory planning %d nodes", pl.N);
    tg__plan_release(g);
done:
    planner_free(&pl);
    return st;
}

size_t tg_graph_planned_bytes(const tg_graph *g)
{
    TG__NONNULL(g, 0);
    return g->planned ? g->block_bytes + g->scratch_bytes : 0;
}
