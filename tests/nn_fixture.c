/*
 * nn_fixture.c - see nn_fixture.h.
 */
#include <stdio.h>

#include "nn_fixture.h"

typedef struct {
    tg_graph  *g;
    tg_node   *in[NN_MAX_IO], *out[NN_MAX_IO];
    tg_tensor *x[NN_MAX_IO];
    int        n_out;
    char       dir[96];
} nn_built;

static void build(const nn_case *c, tg_dtype dt, nn_built *b)
{
    char file[32];
    snprintf(b->dir, sizeof b->dir, "nn/%s", c->name);
    b->g = tg_graph_new(dt);
    cr_assert(c->n_in <= NN_MAX_IO);
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "in%d.npy", i);
        b->x[i] = tt_load(b->dir, file);
        bool fl = tg_dtype_is_float(b->x[i]->dtype);
        b->in[i] = tg_input(b->g, file, fl ? dt : b->x[i]->dtype, b->x[i]->rank, b->x[i]->shape);
        cr_assert(b->in[i], "%s: %s", c->name, tg_graph_error(b->g));
        cr_assert(tg_node_set(b->in[i], b->x[i]) == TG_OK, "%s", tg_last_error());
        snprintf(file, sizeof file, "grad%d.npy", i);
        if (fl && tt_exists(b->dir, file))
            cr_assert(tg_node_set_requires_grad(b->in[i], true) == TG_OK);
    }
    b->n_out = c->build(b->g, b->in, b->out);
    cr_assert(b->n_out > 0, "%s: %s", c->name, tg_graph_error(b->g));
}

static void release(const nn_case *c, nn_built *b)
{
    for (int i = 0; i < c->n_in; i++) tg_tensor_free(b->x[i]);
    tg_graph_free(b->g);
}

/* L = sum_j sum(out_j * dout_j), for several outputs (split) */
static tg_node *weighted_sum(nn_built *b)
{
    char file[32];
    tg_node *L = NULL;
    for (int j = 0; j < b->n_out; j++) {
        snprintf(file, sizeof file, "dout%d.npy", j);
        tg_tensor *dy = tt_load(b->dir, file);
        tg_node *d = tg_constant(b->g, file, dy);
        tg_node *s = tg_sum(b->g, tg_mul(b->g, b->out[j], d), NULL, 0, false);
        L = L ? tg_add(b->g, L, s) : s;
        tg_tensor_free(dy);
    }
    cr_assert(L, "%s", tg_graph_error(b->g));
    return L;
}

void nn_fixture_run(const nn_case *c)
{
    nn_built b;
    char file[32];
    build(c, TG_F32, &b);
    tg_node *L = b.n_out > 1 ? weighted_sum(&b) : NULL;
    cr_assert(tg_graph_forward(b.g) == TG_OK, "%s: %s", c->name, tg_last_error());
    for (int j = 0; j < b.n_out; j++) {
        snprintf(file, sizeof file, "out%d.npy", j);
        tg_tensor *want = tt_load(b.dir, file);
        tt_assert_close(tg_node_value(b.out[j]), want, 1e-6, 1e-5, file);
        tg_tensor_free(want);
    }
    tg_status st;
    if (L) {
        st = tg_graph_backward(b.g, L, NULL);
    } else {
        tg_tensor *dy = tt_load(b.dir, "dout0.npy");
        st = tg_graph_backward(b.g, b.out[0], dy);
        tg_tensor_free(dy);
    }
    cr_assert(st == TG_OK, "%s: backward: %s", c->name, tg_last_error());
    int checked = 0;
    for (int i = 0; i < c->n_in; i++) {
        snprintf(file, sizeof file, "grad%d.npy", i);
        if (!tt_exists(b.dir, file)) continue;
        tg_tensor *gw = tt_load(b.dir, file);
        char what[96];
        snprintf(what, sizeof what, "%s %s", c->name, file);
        tt_assert_close(tg_node_grad(b.in[i]), gw, 1e-6, 1e-5, what);
        tg_tensor_free(gw);
        checked++;
    }
    cr_assert(checked > 0, "%s: no gradient fixture", c->name);
    release(c, &b);
}

void nn_gradcheck_run(const nn_case *c)
{
    nn_built b;
    cr_assert(!c->no_gradcheck, "%s is not meant for gradcheck", c->name);
    build(c, TG_F64, &b);
    tg_node *L = b.n_out > 1 ? weighted_sum(&b) : b.out[0];
    tt_gradcheck(b.g, L, 7);
    release(c, &b);
}
