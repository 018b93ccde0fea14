/*
 * dlinear.c - DLinear (see dlinear.h): the moving-average decomposition, the
 * graph builder and its registry entry.
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "dlinear.h"
#include "internal.h"
#include "ops.h"

tg_status tg_dlinear_init(tg_dlinear *m, const tg_dlinear_config *c, tg_params *ps,
                          const char *prefix, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    memset(m, 0, sizeof *m);
    if (c->seq_len <= 0 || c->pred_len <= 0 || c->enc_in <= 0)
        return tg_set_error(TG_ERR_INVALID, "dlinear: seq_len, pred_len and enc_in must be "
                            "positive, got %lld, %lld and %lld", (long long)c->seq_len,
                            (long long)c->pred_len, (long long)c->enc_in);
    if (c->moving_avg <= 0 || c->moving_avg % 2 == 0)
        return tg_set_error(TG_ERR_INVALID, "dlinear: moving_avg must be a positive odd "
                            "number, got %lld (an even window changes the series' length; "
                            "upstream then fails with a size mismatch)",
                            (long long)c->moving_avg);
    if (c->individual && c->enc_in > TG_DLINEAR_MAX_INDIVIDUAL)
        return tg_set_error(TG_ERR_LIMIT, "dlinear: individual takes at most %d channels, "
                            "enc_in is %lld", TG_DLINEAR_MAX_INDIVIDUAL, (long long)c->enc_in);
    m->c = *c;
    m->n_pairs = c->individual ? (int)c->enc_in : 1;
    for (int i = 0; i < m->n_pairs; i++) {
        char s[32] = "Linear_Seasonal", t[32] = "Linear_Trend";
        if (c->individual) {
            snprintf(s, sizeof s, "Linear_Seasonal.%d", i);
            snprintf(t, sizeof t, "Linear_Trend.%d", i);
        }
        tg_status st = tg_linear_mod_init(&m->seasonal[i], ps, prefix, s, c->seq_len,
                                          c->pred_len, true, rng);
        if (!st) st = tg_linear_mod_init(&m->trend[i], ps, prefix, t, c->seq_len, c->pred_len,
                                         true, rng);
        if (st) return st;
        if (rng) {   /* upstream: weight = (1 / seq_len) * ones([pred_len, seq_len]) */
            tg_init_constant(&m->seasonal[i].weight->value, 1.0 / (double)c->seq_len);
            tg_init_constant(&m->trend[i].weight->value, 1.0 / (double)c->seq_len);
        }
    }
    return TG_OK;
}

/* The window index of moving_avg: row t, tap j reads the input step
 * clamp(t + j - (k - 1) / 2, 0, T - 1), which is the replication padding and
 * the stride-1 pooling window in one gather. */
static tg_tensor *window_index(int64_t T, int64_t k)
{
    tg_tensor *idx = tg_tensor_new(TG_I64, 1, (int64_t[]){T * k});
    if (!idx) return NULL;
    int64_t *v = idx->data, p = (k - 1) / 2;
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t s = t + j - p;
            v[t * k + j] = s < 0 ? 0 : s >= T ? T - 1 : s;
        }
    return idx;
}

tg_node *tg_moving_avg(tg_graph *g, tg_node *x, int64_t k)
{
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = tg_node_value(x);
    if (xv->rank != 3)
        return tg_graph_fail(g, "moving_avg: expected x [B, T, C], got rank %d", xv->rank);
    if (k <= 0 || k % 2 == 0)
        return tg_graph_fail(g, "moving_avg: the window must be a positive odd number, got %lld",
                             (long long)k);
    const int64_t B = xv->shape[0], T = xv->shape[1], C = xv->shape[2];
    tg_tensor *index = window_index(T, k);
    if (!index) return tg_graph_fail(g, "moving_avg: window index: %s", tg_last_error());
    if (tg_scope_push(g, "moving_avg")) {
        tg_tensor_free(index);
        return NULL;
    }
    tg_node *idx = tg_constant(g, "window", index);                    /* [T*k] int64 */
    tg_tensor_free(index);
    tg_node *w = tg_index_select(g, x, 1, idx);                        /* [B, T*k, C] */
    w = tg_reshape(g, w, 4, (int64_t[]){B, T, k, C});                  /* [B, T, k, C] */
    tg_node *trend = tg_mean(g, w, (int64_t[]){2}, 1, false);          /* [B, T, C] */
    tg_scope_pop(g);
    return trend;
}

/* Linear over time for every channel of h [B, C, L] -> [B, C, P]: one shared
 * Linear, or channel i through mods[i] (torch.stack over dim 1). */
static tg_node *per_channel(tg_graph *g, const tg_dlinear *m, const tg_linear_mod *mods,
                            tg_node *h)
{
    if (!m->c.individual) return tg_linear_mod_build(g, &mods[0], h);
    tg_node *ys[TG_DLINEAR_MAX_INDIVIDUAL];
    for (int i = 0; i < m->n_pairs; i++)
        ys[i] = tg_linear_mod_build(g, &mods[i], tg_narrow(g, h, 1, i, 1));   /* [B, 1, P] */
    return tg_concat(g, m->n_pairs, ys, 1);
}

tg_node *tg_dlinear_build(tg_graph *g, const tg_dlinear *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = tg_node_value(x);
    char got[96];
    if (xv->rank != 3 || xv->shape[1] != m->c.seq_len ||
        (m->c.individual && xv->shape[2] != m->c.enc_in))
        return tg_graph_fail(g, "dlinear: expected x [B, seq_len=%lld, enc_in%s], got %s",
                             (long long)m->c.seq_len,
                             m->c.individual ? " (individual: the configured one)" : "",
                             tg_shape_str(xv->rank, xv->shape, got, sizeof got));
    if (tg_scope_push(g, "dlinear")) return NULL;
    if (tg_scope_push(g, "decompsition")) return NULL;                 /* upstream's spelling */
    tg_node *trend = tg_moving_avg(g, x, m->c.moving_avg);             /* [B, L, C] */
    tg_scope_pop(g);
    tg_node *seasonal = tg_sub(g, x, trend);                           /* [B, L, C] */
    seasonal = tg_permute(g, seasonal, (const int[]){0, 2, 1});        /* [B, C, L] */
    trend = tg_permute(g, trend, (const int[]){0, 2, 1});              /* [B, C, L] */
    seasonal = per_channel(g, m, m->seasonal, seasonal);               /* [B, C, P] */
    trend = per_channel(g, m, m->trend, trend);                        /* [B, C, P] */
    tg_node *y = tg_add(g, seasonal, trend);
    y = tg_permute(g, y, (const int[]){0, 2, 1});                      /* [B, P, C] */
    tg_scope_pop(g);
    return y;
}

/* ---------------------------------------------------------------- registry */

#define DL(f) offsetof(tg_dlinear_config, f)
static const tg_layer_key dlinear_keys[] = {
    {"B", TG_KEY_INT, "32", false, "batch", "[1, inf)", DL(B)},
    {"enc_in", TG_KEY_INT, "7", false, "channels", "[1, inf)", DL(enc_in)},
    {"seq_len", TG_KEY_INT, "96", false, "input steps", "[1, inf)", DL(seq_len)},
    {"pred_len", TG_KEY_INT, "96", false, "forecast steps", "[1, inf)", DL(pred_len)},
    {"moving_avg", TG_KEY_INT, "25", false, "moving-average window of the decomposition (odd)",
     "[1, inf)", DL(moving_avg)},
    {"individual", TG_KEY_BOOL, "false", false, "one Linear pair per channel", NULL,
     DL(individual)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef DL

static tg_status dl_check(const void *vc)
{
    const tg_dlinear_config *c = vc;
    if (c->moving_avg % 2 == 0)
        return tg_set_error(TG_ERR_INVALID, "dlinear: moving_avg must be odd, got %lld (an "
                            "even window changes the series' length; upstream then fails with "
                            "a size mismatch)", (long long)c->moving_avg);
    if (c->individual && c->enc_in > TG_DLINEAR_MAX_INDIVIDUAL)
        return tg_set_error(TG_ERR_LIMIT, "dlinear: individual takes at most %d channels, "
                            "enc_in is %lld", TG_DLINEAR_MAX_INDIVIDUAL, (long long)c->enc_in);
    return TG_OK;
}

static int dl_inputs(const void *vc, tg_layer_input *in)
{
    const tg_dlinear_config *c = vc;
    in[0] = (tg_layer_input){"x", "B seq_len enc_in", 3, {c->B, c->seq_len, c->enc_in}, true, 0};
    return 1;
}

static tg_status dl_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_dlinear_init(state, cfg, ps, prefix, rng);
}

static tg_status dl_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    out->y = tg_dlinear_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_dlinear_class = {
    .name = "dlinear",
    .summary = "TSL DLinear: moving-average trend/seasonal decomposition, a Linear(seq_len -> "
               "pred_len) over time for each (individual=true: per channel)",
    .keys = dlinear_keys,
    .config_size = sizeof(tg_dlinear_config),
    .state_size = sizeof(tg_dlinear),
    .check = dl_check,
    .inputs = dl_inputs,
    .init = dl_init,
    .build = dl_build,
};
