/*
 * test_detach.c - tg_detach: the values pass, no gradient does, whether the
 * detached value is an input's or an op's (a mean whose only consumer is the
 * detach: its backward must not run on a gradient nobody wrote), in every
 * plan, with the planned memory filled with NaN first.
 */
#include <math.h>
#include <string.h>

#include "graph_impl.h"
#include "testutil.h"

enum { R = 3, C = 4 };

/* y = x * detach(mean(square(x), dim 0)) + x: dx = dy * m + dy, m = mean_r x^2 */
static void run(int plan, bool detach_input)
{
    tg_graph *g = tg_graph_new(TG_F64);
    tg_graph_set_share_values(g, plan > 0);
    tg_graph_set_recompute(g, plan == 2);
    tg_node *x = tg_input(g, "x", TG_F64, 2, (int64_t[]){R, C});
    cr_assert_eq(tg_node_set_requires_grad(x, true), TG_OK);
    const int64_t dim = 0;
    tg_node *sq = tg_square(g, detach_input ? tg_detach(g, x) : x);
    tg_node *m = tg_mean(g, sq, &dim, 1, true);                        /* [1, C] */
    if (!detach_input) m = tg_detach(g, m);
    tg_node *y = tg_add(g, tg_mul(g, x, m), x);
    cr_assert(y, "%s", tg_graph_error(g));
    cr_assert_eq(tg_graph_plan(g), TG_OK, "%s", tg_last_error());
    memset(g->block, 0xff, g->block_bytes);                             /* NaN everywhere */
    double *xv = tg_node_value(x)->data;
    for (int i = 0; i < R * C; i++) xv[i] = 0.25 * (i % 7) - 0.6;
    cr_assert_eq(tg_graph_forward(g), TG_OK, "%s", tg_last_error());
    tg_tensor *dy = tg_tensor_new(TG_F64, 2, (int64_t[]){R, C});
    double *d = dy->data;
    for (int i = 0; i < R * C; i++) d[i] = 1.0 + 0.5 * i;
    cr_assert_eq(tg_graph_backward(g, y, dy), TG_OK, "%s", tg_last_error());
    const double *dx = tg_node_grad(x)->data, *yv = tg_node_value(y)->data;
    for (int c = 0; c < C; c++) {
        double mc = 0;
        for (int r = 0; r < R; r++) mc += xv[r * C + c] * xv[r * C + c] / R;
        for (int r = 0; r < R; r++) {
            int i = r * C + c;
            cr_assert_float_eq(yv[i], xv[i] * mc + xv[i], 1e-12);
            cr_assert_float_eq(dx[i], d[i] * mc + d[i], 1e-12, "plan %d, dx[%d] = %g", plan, i,
                               dx[i]);
        }
    }
    cr_assert_not(tg_node_value(m) && tg_node_grad(m), "a detached node has no gradient");
    tg_tensor_free(dy);
    tg_graph_free(g);
}

Test(detach, no_gradient_flows_back_from_an_op)
{
    for (int plan = 0; plan < 3; plan++) run(plan, false);
}

Test(detach, no_gradient_flows_back_from_an_input)
{
    for (int plan = 0; plan < 3; plan++) run(plan, true);
}

Test(detach, keeps_the_dtype_and_refuses_no_input)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *i = tg_input(g, "idx", TG_I64, 1, (int64_t[]){3});
    tg_node *d = tg_detach(g, i);
    cr_assert(d && tg_node_value(d)->dtype == TG_I64, "%s", tg_graph_error(g));
    cr_assert_null(tg_detach(g, NULL));
    tg_graph_free(g);
}
