/*
 * itransformer.c - iTransformer (see itransformer.h): the graph builder on
 * TSL's encoder and its registry entry.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "itransformer.h"
#include "ops.h"

tg_itransformer_config tg_itransformer_defaults(void)
{
    tg_itransformer_config c;
    tg_keys_defaults(tg_itransformer_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

static tg_status it_check(const void *vc)
{
    const tg_itransformer_config *c = vc;
    tg_tsl_activation a;
    if (c->B <= 0 || c->N <= 0 || c->n_mark < 0 || c->seq_len <= 0 || c->pred_len <= 0)
        return tg_set_error(TG_ERR_INVALID, "itransformer: B, N, seq_len and pred_len must be "
                            "positive and n_mark at least 0, got %lld, %lld, %lld, %lld and %lld",
                            (long long)c->B, (long long)c->N, (long long)c->seq_len,
                            (long long)c->pred_len, (long long)c->n_mark);
    if (c->d_model > 0 && c->n_heads > 0 && c->d_model % c->n_heads)
        return tg_set_error(TG_ERR_INVALID, "itransformer: d_model (%lld) must be divisible by "
                            "n_heads (%lld)", (long long)c->d_model, (long long)c->n_heads);
    return tg_tsl_activation_parse(c->activation.s, "itransformer", &a);
}

tg_status tg_itransformer_init(tg_itransformer *m, const tg_itransformer_config *c,
                               tg_params *ps, const char *prefix, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char emb[TG_NAME_MAX];
    tg_status st;
    memset(m, 0, sizeof *m);
    if ((st = it_check(c))) return st;
    m->c = *c;
    tg_tsl_encoder_config ec = {.e_layers = c->e_layers, .d_model = c->d_model,
                                .n_heads = c->n_heads, .d_ff = c->d_ff, .factor = c->factor,
                                .dropout = c->dropout, .norm = true};
    tg_tsl_activation_parse(c->activation.s, "itransformer", &ec.activation);
    if ((st = tg_name_join(emb, sizeof emb, prefix, "enc_embedding")) ||
        (st = tg_linear_mod_init(&m->value_embedding, ps, emb, "value_embedding", c->seq_len,
                                 c->d_model, true, rng)) ||
        (st = tg_tsl_encoder_init(&m->encoder, &ec, ps, prefix, "encoder", rng)) ||
        (st = tg_linear_mod_init(&m->projection, ps, prefix, "projection", c->d_model,
                                 c->pred_len, true, rng)))
        return st;
    return TG_OK;
}

/* the inputs against the config: x [B, seq_len, N], x_mark [B, seq_len, n_mark] */
static bool inputs_ok(tg_graph *g, const tg_itransformer *m, tg_node *x, tg_node *x_mark)
{
    const tg_tensor *xv = tg_node_value(x);
    char got[96];
    if (xv->rank != 3 || xv->shape[1] != m->c.seq_len) {
        tg_graph_fail(g, "itransformer: expected x [B, seq_len=%lld, N], got %s",
                      (long long)m->c.seq_len, tg_shape_str(xv->rank, xv->shape, got, sizeof got));
        return false;
    }
    if (!m->c.n_mark != !x_mark) {
        tg_graph_fail(g, "itransformer: n_mark is %lld but x_mark was %s", (long long)m->c.n_mark,
                      x_mark ? "given" : "not given");
        return false;
    }
    if (!x_mark) return true;
    const tg_tensor *mv = tg_node_value(x_mark);
    if (mv->rank != 3 || mv->shape[0] != xv->shape[0] || mv->shape[1] != m->c.seq_len ||
        mv->shape[2] != m->c.n_mark) {
        tg_graph_fail(g, "itransformer: expected x_mark [B=%lld, seq_len=%lld, n_mark=%lld], "
                      "got %s", (long long)xv->shape[0], (long long)m->c.seq_len,
                      (long long)m->c.n_mark, tg_shape_str(mv->rank, mv->shape, got, sizeof got));
        return false;
    }
    return true;
}

/* DataEmbedding_inverted: x [B, L, N] (+ x_mark [B, L, M]) -> [B, N + M, d_model] */
static tg_node *enc_embedding(tg_graph *g, const tg_itransformer *m, tg_node *x, tg_node *x_mark)
{
    if (tg_scope_push(g, "enc_embedding")) return NULL;
    /* x = x.permute(0, 2, 1); x = cat([x, x_mark.permute(0, 2, 1)], 1) when x_mark is given */
    tg_node *tokens = tg_permute(g, x, (const int[]){0, 2, 1});                 /* [B, N, L] */
    if (x_mark)
        tokens = tg_concat(g, 2, (tg_node *[]){tokens, tg_permute(g, x_mark, (const int[]){0, 2, 1})},
                           1);                                                  /* [B, N+M, L] */
    /* return self.dropout(self.value_embedding(x)) */
    tg_node *e = tg_linear_mod_build(g, &m->value_embedding, tokens);           /* [B, N+M, D] */
    if (!tg_scope_push(g, "dropout")) {
        e = tg_dropout(g, e, m->c.dropout);
        tg_scope_pop(g);
    }
    tg_scope_pop(g);
    return e;
}

tg_node *tg_itransformer_build(tg_graph *g, const tg_itransformer *m, tg_node *x,
                               tg_node *x_mark)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x);
    if (!inputs_ok(g, m, x, x_mark)) return NULL;
    const int64_t N = tg_node_value(x)->shape[2];
    if (tg_scope_push(g, "itransformer")) return NULL;
    /* means, stdev: x_enc normalised over time (Non-stationary Transformer) */
    tg_node *means, *stdev;
    x = tg_instance_norm(g, x, &means, &stdev);                                 /* [B, L, N] */
    /* enc_out = self.enc_embedding(x_enc, x_mark_enc); enc_out, attns = self.encoder(enc_out) */
    tg_node *enc = tg_tsl_encoder_build(g, &m->encoder, enc_embedding(g, m, x, x_mark));
    /* dec_out = self.projection(enc_out).permute(0, 2, 1)[:, :, :N] (sliced first: the
     * same values, and the time-feature tokens are never projected) */
    enc = tg_narrow(g, enc, 1, 0, N);                                           /* [B, N, D] */
    tg_node *y = tg_linear_mod_build(g, &m->projection, enc);                   /* [B, N, P] */
    y = tg_permute(g, y, (const int[]){0, 2, 1});                               /* [B, P, N] */
    y = tg_instance_denorm(g, y, means, stdev);                                 /* [B, P, N] */
    tg_scope_pop(g);
    return y;
}

/* ---------------------------------------------------------------- registry */

#define IT(f) offsetof(tg_itransformer_config, f)
static const tg_layer_key itransformer_keys[] = {
    {"B", TG_KEY_INT, "2", false, "batch", "[1, inf)", IT(B)},
    {"N", TG_KEY_INT, "3", false, "variates (enc_in)", "[1, inf)", IT(N)},
    {"n_mark", TG_KEY_INT, "4", false, "time-feature columns of x_mark (timeF hourly: 4); 0: "
     "no x_mark", "[0, inf)", IT(n_mark)},
    {"seq_len", TG_KEY_INT, "16", false, "input steps", "[1, inf)", IT(seq_len)},
    {"pred_len", TG_KEY_INT, "6", false, "forecast steps", "[1, inf)", IT(pred_len)},
    {"d_model", TG_KEY_INT, "8", false, "token width", "[1, inf)", IT(d_model)},
    {"n_heads", TG_KEY_INT, "2", false, "attention heads (d_model divisible by it)", "[1, inf)",
     IT(n_heads)},
    {"e_layers", TG_KEY_INT, "2", false, "encoder layers", "[1, 64]", IT(e_layers)},
    {"d_ff", TG_KEY_INT, "16", true, "feed-forward width; null: 4 * d_model", "[1, inf)",
     IT(d_ff)},
    {"dropout", TG_KEY_FLOAT, "0.1", false, "every dropout (training only)", "[0, 1]",
     IT(dropout)},
    {"factor", TG_KEY_INT, "1", false, "unused (TSL signature)", NULL, IT(factor)},
    {"activation", TG_KEY_STRING, "gelu", false, "feed-forward activation: gelu or relu", NULL,
     IT(activation)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef IT

static int it_inputs(const void *vc, tg_layer_input *in)
{
    const tg_itransformer_config *c = vc;
    in[0] = (tg_layer_input){"x", "B seq_len N", 3, {c->B, c->seq_len, c->N}, true, 0};
    if (!c->n_mark) return 1;
    in[1] = (tg_layer_input){"x_mark", "B seq_len n_mark", 3, {c->B, c->seq_len, c->n_mark},
                             false, 0};
    return 2;
}

static tg_status it_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_itransformer_init(state, cfg, ps, prefix, rng);
}

static tg_status it_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    const tg_itransformer *m = state;
    out->y = tg_itransformer_build(g, m, in[0], m->c.n_mark ? in[1] : NULL);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_itransformer_class = {
    .name = "itransformer",
    .summary = "TSL iTransformer: instance norm, one token per variate (and time feature), "
               "TSL's Encoder across them, Linear(d_model -> pred_len)",
    .keys = itransformer_keys,
    .config_size = sizeof(tg_itransformer_config),
    .state_size = sizeof(tg_itransformer),
    .check = it_check,
    .inputs = it_inputs,
    .init = it_init,
    .build = it_build,
    .grad_detached_inputs = 1u << 0,   /* x: the instance norm's mean is detached */
};
