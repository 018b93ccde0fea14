/*
 * tsa.c - TwoStageAttentionLayer as a graph builder (LAYERS.md section 3).
 *
 * The builder is TSL's forward, step by step, with its names:
 *
 *   time_in  = rearrange(x, 'b ts_d seg_num d_model -> (b ts_d) seg_num d_model')
 *   time_enc = time_attention(time_in, time_in, time_in)
 *   dim_in   = norm1(time_in + dropout(time_enc))
 *   dim_in   = norm2(dim_in + dropout(MLP1(dim_in)))
 *   dim_send = rearrange(dim_in, '(b ts_d) seg_num d_model -> (b seg_num) ts_d d_model', b=batch)
 *   batch_router = repeat(router, 'seg_num factor d_model -> (repeat seg_num) factor d_model',
 *                         repeat=batch)
 *   dim_buffer  = dim_sender(batch_router, dim_send, dim_send)
 *   dim_receive = dim_receiver(dim_send, dim_buffer, dim_buffer)
 *   dim_enc  = norm3(dim_send + dropout(dim_receive))
 *   dim_enc  = norm4(dim_enc + dropout(MLP2(dim_enc)))
 *   final_out = rearrange(dim_enc, '(b seg_num) ts_d d_model -> b ts_d seg_num d_model', b=batch)
 *
 * Seven dropouts: the attention weights inside the three FullAttentions
 * (attn_dropout, TSL's configs.dropout) and `self.dropout` on time_enc, MLP1,
 * dim_receive and MLP2. None on dim_buffer, the router or inside the MLPs.
 * This file is the layer only: no kernels (every step is an op from ops/),
 * no mask (TSA uses none).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "op.h"
#include "ops.h"
#include "tsa.h"

tg_tsa_config tg_tsa_defaults(void)
{
    tg_tsa_config c;
    tg_keys_defaults(tg_tsa_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

tg_status tg_tsa_config_check(const tg_tsa_config *c, const char *who)
{
    TG__NONNULL(c, TG_ERR_INVALID);
    if (!who) who = "tsa";
    if (c->d_model < 1)
        return tg_set_error(TG_ERR_INVALID, "%s: d_model must be >= 1, got %lld", who,
                            (long long)c->d_model);
    /* AttentionLayer: d_keys = d_model // n_heads (ZeroDivisionError for 0 heads;
     * a width of 0 fails the .view(B, L, H, -1) of the projections) */
    if (c->n_heads < 1)
        return tg_set_error(TG_ERR_INVALID, "%s: n_heads must be >= 1, got %lld", who,
                            (long long)c->n_heads);
    if (c->d_model / c->n_heads == 0)
        return tg_set_error(TG_ERR_INVALID, "%s: d_model // n_heads is 0 (d_model %lld, n_heads "
                            "%lld): each head needs at least one feature", who,
                            (long long)c->d_model, (long long)c->n_heads);
    if (c->seg_num < 1)
        return tg_set_error(TG_ERR_INVALID, "%s: seg_num must be >= 1, got %lld", who,
                            (long long)c->seg_num);
    if (c->factor < 1)
        return tg_set_error(TG_ERR_INVALID, "%s: factor (router vectors per segment) must be "
                            ">= 1, got %lld", who, (long long)c->factor);
    if (c->d_ff < 0)
        return tg_set_error(TG_ERR_INVALID, "%s: d_ff must be >= 1 or null (4 * d_model), got "
                            "%lld", who, (long long)c->d_ff);
    if (!(c->dropout >= 0 && c->dropout <= 1))
        return tg_set_error(TG_ERR_INVALID, "%s: dropout probability has to be between 0 and 1, "
                            "but got %g", who, c->dropout);
    if (!(c->attn_dropout <= 1))   /* < 0: the same as dropout; NaN fails here */
        return tg_set_error(TG_ERR_INVALID, "%s: attn_dropout probability has to be between 0 "
                            "and 1 (or -1: the same as dropout), but got %g", who, c->attn_dropout);
    return TG_OK;
}

tg_status tg_tsa_init(tg_tsa *l, const tg_tsa_config *c, tg_params *ps, const char *prefix,
                      const char *name, tg_rng *rng)
{
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char full[TG_NAME_MAX];
    tg_status st;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->c = *c;
    if ((st = tg_tsa_config_check(c, *name ? name : "tsa"))) return st;
    if (*name) {
        if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    } else {
        snprintf(full, sizeof full, "%s", prefix);
    }
    /* d_ff = d_ff or 4 * d_model; the attention dropout is configs.dropout */
    if (!l->c.d_ff) l->c.d_ff = 4 * c->d_model;
    if (l->c.attn_dropout < 0) l->c.attn_dropout = c->dropout;
    const int64_t d = c->d_model, d_ff = l->c.d_ff;
    tg_attention_layer_config ac = tg_attention_layer_defaults();
    ac.d_model = d;
    ac.n_heads = c->n_heads;
    ac.mask_flag = false;                       /* FullAttention(False, ...) */
    ac.attention_dropout = l->c.attn_dropout;

    /* state_dict order: the module's own parameter (router) first, then the
     * submodules; the RNG is drawn in construction order, router after the
     * three attention layers */
    l->router = tg_params_addf(ps, 3, (int64_t[]){c->seg_num, c->factor, d}, "%s%srouter", full,
                               *full ? "." : "");
    if (!l->router) return TG_ERR_INVALID;
    if ((st = tg_attention_layer_init(&l->time_attention, &ac, ps, full, "time_attention", rng)) ||
        (st = tg_attention_layer_init(&l->dim_sender, &ac, ps, full, "dim_sender", rng)) ||
        (st = tg_attention_layer_init(&l->dim_receiver, &ac, ps, full, "dim_receiver", rng)))
        return st;
    if (rng) tg_init_normal(&l->router->value, 0.0, 1.0, rng);   /* torch.randn */
    if ((st = tg_layernorm_mod_init(&l->norm1, ps, full, "norm1", d)) ||
        (st = tg_layernorm_mod_init(&l->norm2, ps, full, "norm2", d)) ||
        (st = tg_layernorm_mod_init(&l->norm3, ps, full, "norm3", d)) ||
        (st = tg_layernorm_mod_init(&l->norm4, ps, full, "norm4", d)) ||
        (st = tg_mlp_mod_init(&l->MLP1, ps, full, "MLP1", d, d_ff, rng)) ||
        (st = tg_mlp_mod_init(&l->MLP2, ps, full, "MLP2", d, d_ff, rng)))
        return st;
    return TG_OK;
}

tg_node *tg_tsa_build(tg_graph *g, const tg_tsa *l, tg_node *x)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    if (!tg_builder_check(g, "tsa", 1, &x)) return NULL;
    const tg_tensor *xv = tg_node_value(x);
    if (xv->rank != 4)
        return tg_graph_fail(g, "%s: x must be 4-d [b, ts_d, seg_num, d_model], got %d-d", l->name,
                             xv->rank);
    if (xv->shape[3] != l->c.d_model)
        return tg_graph_fail(g, "%s: x is [b, ts_d, seg_num, d_model] with d_model %lld, but the "
                             "layer has d_model %lld", l->name, (long long)xv->shape[3],
                             (long long)l->c.d_model);
    if (xv->shape[2] != l->c.seg_num)
        return tg_graph_fail(g, "%s: x has seg_num %lld, but the router was built for seg_num "
                             "%lld (router [seg_num, factor, d_model] = [%lld, %lld, %lld])",
                             l->name, (long long)xv->shape[2], (long long)l->c.seg_num,
                             (long long)l->c.seg_num, (long long)l->c.factor,
                             (long long)l->c.d_model);
    const double p = l->c.dropout;
    const int64_t batch = xv->shape[0];
    const tg_axis_len b = {"b", batch}, repeat = {"repeat", batch};
    if (tg_scope_push(g, l->name)) return NULL;

    /* Cross Time Stage: Directly apply MSA to each dimension */
    tg_node *time_in = tg_rearrange(g, x, "b ts_d seg_num d_model -> (b ts_d) seg_num d_model", 0,
                                    NULL);                             /* [b*ts_d, seg_num, d] */
    tg_node *time_enc = tg_attention_layer_build(g, &l->time_attention, time_in, time_in, time_in,
                                                 NULL, NULL);
    tg_node *dim_in = tg_add(g, time_in, tg_dropout(g, time_enc, p));
    dim_in = tg_layernorm_mod_build(g, &l->norm1, dim_in);
    dim_in = tg_add(g, dim_in, tg_dropout(g, tg_mlp_mod_build(g, &l->MLP1, dim_in), p));
    dim_in = tg_layernorm_mod_build(g, &l->norm2, dim_in);            /* [b*ts_d, seg_num, d] */

    /* Cross Dimension Stage: use a small set of learnable vectors to aggregate and
     * distribute messages to build the D-to-D connection */
    tg_node *dim_send = tg_rearrange(g, dim_in, "(b ts_d) seg_num d_model -> (b seg_num) ts_d "
                                     "d_model", 1, &b);                /* [b*seg_num, ts_d, d] */
    tg_node *batch_router = NULL;
    if (!tg_scope_push(g, "router")) {
        batch_router = tg_repeat(g, tg_param_node(g, l->router), "seg_num factor d_model -> "
                                 "(repeat seg_num) factor d_model", 1, &repeat);
        tg_scope_pop(g);                                               /* [b*seg_num, factor, d] */
    }
    tg_node *dim_buffer = tg_attention_layer_build(g, &l->dim_sender, batch_router, dim_send,
                                                   dim_send, NULL, NULL); /* [b*seg_num, factor, d] */
    tg_node *dim_receive = tg_attention_layer_build(g, &l->dim_receiver, dim_send, dim_buffer,
                                                    dim_buffer, NULL, NULL); /* [b*seg_num, ts_d, d] */
    tg_node *dim_enc = tg_add(g, dim_send, tg_dropout(g, dim_receive, p));
    dim_enc = tg_layernorm_mod_build(g, &l->norm3, dim_enc);
    dim_enc = tg_add(g, dim_enc, tg_dropout(g, tg_mlp_mod_build(g, &l->MLP2, dim_enc), p));
    dim_enc = tg_layernorm_mod_build(g, &l->norm4, dim_enc);

    tg_node *final_out = tg_rearrange(g, dim_enc, "(b seg_num) ts_d d_model -> b ts_d seg_num "
                                      "d_model", 1, &b);               /* [b, ts_d, seg_num, d] */
    tg_scope_pop(g);
    return final_out;
}

/* ---------------------------------------------------------------- registry */

#define TS(f) offsetof(tg_tsa_config, f)
static const tg_layer_key tsa_keys[] = {
    {"b", TG_KEY_INT, "2", false, "batch", "[1, inf)", TS(b)},
    {"ts_d", TG_KEY_INT, "3", false, "series (dimensions)", "[1, inf)", TS(ts_d)},
    {"seg_num", TG_KEY_INT, "5", false,
     "segments; the router is per segment", "[1, inf)", TS(seg_num)},
    {"d_model", TG_KEY_INT, "8", false, "model width", "[1, inf)", TS(d_model)},
    {"factor", TG_KEY_INT, "2", false, "router vectors per segment", "[1, inf)", TS(factor)},
    {"n_heads", TG_KEY_INT, "2", false,
     "heads of the three attention layers", "[1, inf)", TS(n_heads)},
    {"d_ff", TG_KEY_INT, "null", true, "MLP hidden width; null: 4 * d_model", "[1, inf)", TS(d_ff)},
    {"dropout", TG_KEY_FLOAT, "0.1", false,
     "dropout on the residual branches (training only)", "[0, 1]", TS(dropout)},
    {"attn_dropout", TG_KEY_FLOAT, "-1", false,
     "dropout on the attention weights; -1: the same as dropout (TSL: configs.dropout)",
     "[-inf, 1]", TS(attn_dropout)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef TS

static tg_status tsa_check(const void *vc)
{
    /* b, ts_d >= 1 and the rest of the table's ranges: checked by the parser (tg_keys_resolve) */
    return tg_tsa_config_check(vc, "tsa");
}

static int tsa_inputs(const void *vc, tg_layer_input *in)
{
    const tg_tsa_config *c = vc;
    in[0] = (tg_layer_input){"x", "b ts_d seg_num d_model", 4,
                             {c->b, c->ts_d, c->seg_num, c->d_model}, true, 0};
    return 1;
}

static tg_status tsa_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                          tg_rng *rng)
{
    /* a top-level TSA's keys have no module prefix ("router", "MLP1.0.weight") */
    tg_tsa *l = state;
    tg_status st = tg_tsa_init(l, cfg, ps, prefix, "", rng);
    snprintf(l->name, sizeof l->name, "tsa");
    return st;
}

static tg_status tsa_build(const void *state, tg_graph *g, tg_node *const *in,
                           tg_layer_outputs *out)
{
    out->y = tg_tsa_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_tsa_class = {
    .name = "tsa",
    .summary = "Crossformer TwoStageAttentionLayer: attention across time, then across series "
               "through a router",
    .keys = tsa_keys,
    .config_size = sizeof(tg_tsa_config),
    .state_size = sizeof(tg_tsa),
    .check = tsa_check,
    .inputs = tsa_inputs,
    .init = tsa_init,
    .build = tsa_build,
};
