/*
 * seg_merging.c - SegMerging as a graph builder (LAYERS.md section 4.1).
 *
 * TSL's forward:
 *
 *   batch_size, ts_d, seg_num, d_model = x.shape
 *   pad_num = seg_num % self.win_size
 *   if pad_num != 0:
 *       pad_num = self.win_size - pad_num
 *       x = torch.cat((x, x[:, :, -pad_num:, :]), dim=-2)
 *   seg_to_merge = [x[:, :, i::self.win_size, :] for i in range(self.win_size)]
 *   x = torch.cat(seg_to_merge, -1)
 *   x = self.norm(x)
 *   x = self.linear_trans(x)
 *
 * Concatenating the strided slices on the feature axis puts segment
 * j*win_size + i at features [i*d_model, (i+1)*d_model) of merged token j:
 * exactly rearrange 'b ts_d (seg_num win_size) d_model -> b ts_d seg_num
 * (win_size d_model)', a view (no copy). The layer is this file only; it has
 * no kernels of its own.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "op.h"
#include "ops.h"
#include "seg_merging.h"

tg_seg_merging_config tg_seg_merging_defaults(void)
{
    tg_seg_merging_config c;
    tg_keys_defaults(tg_seg_merging_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

int64_t tg_seg_merging_pad(int64_t seg_num, int64_t win_size)
{
    int64_t r = win_size > 0 ? seg_num % win_size : 0;
    return r ? win_size - r : 0;
}

tg_status tg_seg_merging_init(tg_seg_merging *l, int64_t d_model, int64_t win_size,
                              tg_params *ps, const char *prefix, const char *name, tg_rng *rng)
{
    TG__NONNULL(l, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    TG__NONNULL(name, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char full[TG_NAME_MAX];
    tg_status st;
    memset(l, 0, sizeof *l);
    snprintf(l->name, sizeof l->name, "%s", name);
    l->d_model = d_model;
    l->win_size = win_size;
    const char *who = *name ? name : "seg_merging";
    if (d_model < 1)
        return tg_set_error(TG_ERR_INVALID, "%s: d_model must be >= 1, got %lld", who,
                            (long long)d_model);
    if (win_size < 1)
        return tg_set_error(TG_ERR_INVALID, "%s: win_size must be >= 1, got %lld", who,
                            (long long)win_size);
    if (win_size > INT64_MAX / d_model)
        return tg_set_error(TG_ERR_INVALID, "%s: win_size * d_model overflows", who);
    if (*name) {
        if ((st = tg_name_join(full, sizeof full, prefix, name))) return st;
    } else {
        snprintf(full, sizeof full, "%s", prefix);
    }
    if ((st = tg_linear_mod_init(&l->linear_trans, ps, full, "linear_trans", win_size * d_model,
                                 d_model, true, rng)) ||
        (st = tg_layernorm_mod_init(&l->norm, ps, full, "norm", win_size * d_model)))
        return st;
    return TG_OK;
}

tg_node *tg_seg_merging_build(tg_graph *g, const tg_seg_merging *l, tg_node *x)
{
    TG__BUILDER_NONNULL(g, l);
    TG__BUILDER_NONNULL(g, x);
    if (!tg_builder_check(g, "seg_merging", 1, &x)) return NULL;
    const tg_tensor *xv = tg_node_value(x);
    if (xv->rank != 4)
        return tg_graph_fail(g, "%s: x must be 4-d [b, ts_d, seg_num, d_model], got %d-d", l->name,
                             xv->rank);
    const int64_t seg_num = xv->shape[2], d_model = xv->shape[3];
    if (d_model != l->d_model)
        return tg_graph_fail(g, "%s: x is [b, ts_d, seg_num, d_model] with d_model %lld, but the "
                             "layer has d_model %lld", l->name, (long long)d_model,
                             (long long)l->d_model);
    const int64_t pad_num = tg_seg_merging_pad(seg_num, l->win_size);
    if (pad_num > seg_num)
        return tg_graph_fail(g, "%s: seg_num %lld needs %lld padding segments to reach a multiple "
                             "of win_size %lld, but x[:, :, -%lld:] has only %lld (PyTorch: the "
                             "strided slices differ in length and torch.cat fails)", l->name,
                             (long long)seg_num, (long long)pad_num, (long long)l->win_size,
                             (long long)pad_num, (long long)seg_num);
    const tg_axis_len w = {"win_size", l->win_size};
    if (tg_scope_push(g, l->name)) return NULL;
    /* if pad_num: x = torch.cat((x, x[:, :, -pad_num:, :]), dim=-2) */
    if (pad_num)
        x = tg_concat(g, 2, (tg_node *[]){x, tg_narrow(g, x, 2, seg_num - pad_num, pad_num)}, -2);
    /* x = torch.cat([x[:, :, i::win_size, :] for i in range(win_size)], -1) */
    x = tg_rearrange(g, x, "b ts_d (seg_num win_size) d_model -> b ts_d seg_num "
                     "(win_size d_model)", 1, &w);          /* [b, ts_d, seg/w, w*d_model] */
    x = tg_layernorm_mod_build(g, &l->norm, x);
    x = tg_linear_mod_build(g, &l->linear_trans, x);        /* [b, ts_d, seg/w, d_model] */
    tg_scope_pop(g);
    return x;
}

/* ---------------------------------------------------------------- registry */

#define SM(f) offsetof(tg_seg_merging_config, f)
static const tg_layer_key seg_merging_keys[] = {
    {"b", TG_KEY_INT, "2", false, "batch", "[1, inf)", SM(b)},
    {"ts_d", TG_KEY_INT, "3", false, "series (dimensions)", "[1, inf)", SM(ts_d)},
    {"seg_num", TG_KEY_INT, "5", false, "segments of the input", "[1, inf)", SM(seg_num)},
    {"d_model", TG_KEY_INT, "8", false, "model width", "[1, inf)", SM(d_model)},
    {"win_size", TG_KEY_INT, "2", false, "segments merged into one", "[1, inf)", SM(win_size)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef SM

static tg_status sm_check(const void *vc)
{
    const tg_seg_merging_config *c = vc;
    /* every key >= 1: the key table's ranges, checked by the parser (tg_keys_resolve) */
    int64_t pad = tg_seg_merging_pad(c->seg_num, c->win_size);
    if (pad > c->seg_num)
        return tg_set_error(TG_ERR_INVALID, "seg_merging: seg_num %lld needs %lld padding "
                            "segments to reach a multiple of win_size %lld, but has only %lld to "
                            "repeat (PyTorch: torch.cat fails on the strided slices)",
                            (long long)c->seg_num, (long long)pad, (long long)c->win_size,
                            (long long)c->seg_num);
    return TG_OK;
}

static int sm_inputs(const void *vc, tg_layer_input *in)
{
    const tg_seg_merging_config *c = vc;
    in[0] = (tg_layer_input){"x", "b ts_d seg_num d_model", 4,
                             {c->b, c->ts_d, c->seg_num, c->d_model}, true, 0};
    return 1;
}

static tg_status sm_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    const tg_seg_merging_config *c = cfg;
    tg_seg_merging *l = state;
    tg_status st = tg_seg_merging_init(l, c->d_model, c->win_size, ps, prefix, "", rng);
    snprintf(l->name, sizeof l->name, "seg_merging");
    return st;
}

static tg_status sm_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    out->y = tg_seg_merging_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_seg_merging_class = {
    .name = "seg_merging",
    .summary = "Crossformer SegMerging: pad by repeating the last segments, merge win_size "
               "neighbours, LayerNorm, Linear",
    .keys = seg_merging_keys,
    .config_size = sizeof(tg_seg_merging_config),
    .state_size = sizeof(tg_seg_merging),
    .check = sm_check,
    .inputs = sm_inputs,
    .init = sm_init,
    .build = sm_build,
};
