/*
 * linear_forecast.c - LTSF-Linear's Linear and NLinear forecasters (see
 * linear_forecast.h): a graph builder and its registry entry.
 *
 * Not here: DLinear's moving-average decomposition, the `individual`
 * (one Linear per channel) variant.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "linear_forecast.h"
#include "ops.h"

tg_status tg_linear_forecast_init(tg_linear_forecast *m, const tg_linear_forecast_config *c,
                                  tg_params *ps, const char *prefix, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    memset(m, 0, sizeof *m);
    if (c->seq_len <= 0 || c->pred_len <= 0)
        return tg_set_error(TG_ERR_INVALID, "linear_forecast: seq_len and pred_len must be "
                            "positive, got %lld and %lld", (long long)c->seq_len,
                            (long long)c->pred_len);
    m->c = *c;
    return tg_linear_mod_init(&m->Linear, ps, prefix, "Linear", c->seq_len, c->pred_len, true,
                              rng);
}

tg_node *tg_linear_forecast_build(tg_graph *g, const tg_linear_forecast *m, tg_node *x)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    const tg_tensor *xv = x ? tg_node_value(x) : NULL;
    if (!x) return tg_graph_fail(g, "linear_forecast: x is NULL");
    if (xv->rank != 3 || xv->shape[1] != m->c.seq_len)
        return tg_graph_fail(g, "linear_forecast: expected x [B, seq_len=%lld, enc_in], got rank "
                             "%d with dim 1 = %lld", (long long)m->c.seq_len, xv->rank,
                             xv->rank > 1 ? (long long)xv->shape[1] : -1LL);
    if (tg_scope_push(g, "linear_forecast")) return NULL;
    tg_node *last = NULL, *h = x;                                  // [B, L, C]
    if (m->c.normalize) {
        /* seq_last = x[:, -1:, :].detach(); x = x - seq_last */
        last = tg_narrow(g, x, 1, m->c.seq_len - 1, 1);              // [B, 1, C]
        h = tg_sub(g, x, last);                                      // [B, L, C]
    }
    /* x = self.Linear(x.permute(0, 2, 1)).permute(0, 2, 1) */
    h = tg_permute(g, h, (const int[]){0, 2, 1});                    // [B, C, L]
    h = tg_linear_mod_build(g, &m->Linear, h);                       // [B, C, P]
    h = tg_permute(g, h, (const int[]){0, 2, 1});                    // [B, P, C]
    if (m->c.normalize) h = tg_add(g, h, last);                      // x = x + seq_last
    tg_scope_pop(g);
    return h;
}

/* ---------------------------------------------------------------- registry */

#define LF(f) offsetof(tg_linear_forecast_config, f)
static const tg_layer_key linear_forecast_keys[] = {
    {"B", TG_KEY_INT, "32", false, "batch", "[1, inf)", LF(B)},
    {"enc_in", TG_KEY_INT, "7", false, "channels", "[1, inf)", LF(enc_in)},
    {"seq_len", TG_KEY_INT, "96", false, "input steps", "[1, inf)", LF(seq_len)},
    {"pred_len", TG_KEY_INT, "24", false, "forecast steps", "[1, inf)", LF(pred_len)},
    {"normalize", TG_KEY_BOOL, "false", false,
     "NLinear: subtract the last input step before the Linear, add it back after",
     NULL, LF(normalize)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef LF

static tg_status lf_check(const void *vc)
{
    (void)vc;   /* every key >= 1: the key table's ranges (tg_keys_resolve) */
    return TG_OK;
}

static int lf_inputs(const void *vc, tg_layer_input *in)
{
    const tg_linear_forecast_config *c = vc;
    in[0] = (tg_layer_input){"x", "B seq_len enc_in", 3, {c->B, c->seq_len, c->enc_in}, true, 0};
    return 1;
}

static tg_status lf_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_linear_forecast_init(state, cfg, ps, prefix, rng);
}

static tg_status lf_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    out->y = tg_linear_forecast_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_linear_forecast_class = {
    .name = "linear_forecast",
    .summary = "LTSF-Linear: one Linear(seq_len -> pred_len) over time shared by all channels "
               "(normalize=true: NLinear)",
    .keys = linear_forecast_keys,
    .config_size = sizeof(tg_linear_forecast_config),
    .state_size = sizeof(tg_linear_forecast),
    .check = lf_check,
    .inputs = lf_inputs,
    .init = lf_init,
    .build = lf_build,
};
