/*
 * crossformer.c - the Crossformer forecasting model as a graph builder
 * (LAYERS.md 4.2-4.3): PatchEmbedding, scale_block, Encoder, DecoderLayer,
 * Decoder and the model, each reading like its TSL forward. The TSA and
 * SegMerging are in tsa.c and seg_merging.c; every step is an op from ops/.
 *
 * Not here: the other TSL tasks (imputation, anomaly, classification heads),
 * the original repo's variant (DSW embedding with bias, front padding, first
 * out_len steps; LAYERS.md 4.4).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "crossformer.h"
#include "op.h"
#include "ops.h"

/* ------------------------------------------------- sinusoidal position table */

void tg_positional_embedding_fill(float *out, int64_t len, int64_t d_model)
{
    TG__NONNULL_VOID(out);
    /* div_term = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
     * pe[:, 0::2] = torch.sin(position * div_term); pe[:, 1::2] = torch.cos(position * div_term)
     * all in float32: the Python scalar joins a float tensor as a float */
    const float scale = (float)(-(log(10000.0) / (double)d_model));
    for (int64_t i = 0; i + 1 < d_model; i += 2) {
        const float div = expf((float)i * scale);
        for (int64_t p = 0; p < len; p++) {
            const float arg = (float)p * div;
            out[p * d_model + i] = sinf(arg);
            out[p * d_model + i + 1] = cosf(arg);
        }
    }
}

/* -------------------------------------------------------------- the config */

tg_crossformer_config tg_crossformer_defaults(void)
{
    tg_crossformer_config c;
    tg_keys_defaults(tg_crossformer_class.keys, &c, sizeof c);   /* the key table below */
    return c;
}

static int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* The TSA config every block uses; seg_num differs per block. */
static tg_tsa_config tsa_config(const tg_crossformer_config *c, int64_t seg_num)
{
    tg_tsa_config t = tg_tsa_defaults();
    t.seg_num = seg_num;
    t.d_model = c->d_model;
    t.factor = c->factor;
    t.n_heads = c->n_heads;
    t.d_ff = c->d_ff;
    t.dropout = c->dropout;
    t.attn_dropout = c->dropout;    /* TSL: FullAttention(attention_dropout=configs.dropout) */
    return t;
}

static tg_status crossformer_check(const tg_crossformer_config *c)
{
#define NEED(cond, ...) if (!(cond)) return tg_set_error(TG_ERR_INVALID, "crossformer: " __VA_ARGS__)
    NEED(c->enc_in >= 1, "enc_in must be >= 1, got %lld", (long long)c->enc_in);
    NEED(c->seq_len >= 1, "seq_len must be >= 1, got %lld", (long long)c->seq_len);
    NEED(c->pred_len >= 1, "pred_len must be >= 1, got %lld", (long long)c->pred_len);
    NEED(c->seg_len >= 1, "seg_len must be >= 1, got %lld", (long long)c->seg_len);
    NEED(c->win_size >= 1, "win_size must be >= 1, got %lld", (long long)c->win_size);
    NEED(c->e_layers >= 1, "e_layers must be >= 1, got %lld", (long long)c->e_layers);
    NEED(c->e_layers <= TG_CROSSFORMER_MAX_E_LAYERS, "e_layers %lld is above tgraph's limit %d",
         (long long)c->e_layers, TG_CROSSFORMER_MAX_E_LAYERS);
    NEED(c->d_model >= 1, "d_model must be >= 1, got %lld", (long long)c->d_model);
    NEED(c->d_model % 2 == 0, "d_model must be even for the sinusoidal position embedding "
         "(PositionalEmbedding: pe[:, 1::2] = cos(...) needs d_model/2 columns), got %lld",
         (long long)c->d_model);
    const int64_t in_seg = ceil_div(c->seq_len, c->seg_len);
    NEED(in_seg <= TG_CROSSFORMER_PE_MAX_LEN, "seq_len %lld gives %lld segments of %lld, more "
         "than the position embedding's max_len %d", (long long)c->seq_len, (long long)in_seg,
         (long long)c->seg_len, TG_CROSSFORMER_PE_MAX_LEN);
    tg_tsa_config t = tsa_config(c, in_seg);
    tg_status st = tg_tsa_config_check(&t, "crossformer");
    if (st) return st;
    /* block l >= 1 merges ceil(in_seg / w^(l-1)) segments: SegMerging repeats the
     * last pad = w - seg % w of them, which must exist */
    for (int64_t l = 1, seg = in_seg; l < c->e_layers && c->win_size > 1; l++) {
        const int64_t pad = tg_seg_merging_pad(seg, c->win_size);
        NEED(pad <= seg, "encode_blocks.%lld merges %lld segments with win_size %lld and would "
             "repeat the last %lld, more than there are (PyTorch: torch.cat fails in SegMerging)",
             (long long)l, (long long)seg, (long long)c->win_size, (long long)pad);
        seg = ceil_div(seg, c->win_size);
    }
#undef NEED
    return TG_OK;
}

/* ----------------------------------------------------------------- init */

static tg_status scale_block_init(tg_scale_block *b, const tg_crossformer_config *c,
                                  int64_t win_size, int64_t seg_num, tg_params *ps,
                                  const char *prefix, int l, tg_rng *rng)
{
    char full[TG_NAME_MAX];
    tg_status st;
    snprintf(b->name, sizeof b->name, "encode_blocks.%d", l);
    if ((st = tg_name_join(full, sizeof full, prefix, b->name))) return st;
    b->has_merge = win_size > 1;
    if (b->has_merge &&
        (st = tg_seg_merging_init(&b->merge_layer, c->d_model, win_size, ps, full, "merge_layer",
                                  rng)))
        return st;
    tg_tsa_config t = tsa_config(c, seg_num);
    return tg_tsa_init(&b->encode_layer, &t, ps, full, "encode_layers.0", rng);
}

static tg_status decoder_layer_init(tg_decoder_layer *dl, const tg_crossformer_config *c,
                                    int64_t dec_seg_num, tg_params *ps, const char *prefix,
                                    int i, tg_rng *rng)
{
    char full[TG_NAME_MAX];
    tg_status st;
    snprintf(dl->name, sizeof dl->name, "decode_layers.%d", i);
    dl->dropout = c->dropout;
    if ((st = tg_name_join(full, sizeof full, prefix, dl->name))) return st;
    tg_tsa_config t = tsa_config(c, dec_seg_num);
    tg_attention_layer_config ac = tg_attention_layer_defaults();
    ac.d_model = c->d_model;
    ac.n_heads = c->n_heads;
    ac.mask_flag = false;
    ac.attention_dropout = c->dropout;
    if ((st = tg_tsa_init(&dl->self_attention, &t, ps, full, "self_attention", rng)) ||
        (st = tg_attention_layer_init(&dl->cross_attention, &ac, ps, full, "cross_attention",
                                      rng)) ||
        (st = tg_layernorm_mod_init(&dl->norm1, ps, full, "norm1", c->d_model)) ||
        (st = tg_layernorm_mod_init(&dl->norm2, ps, full, "norm2", c->d_model)) ||
        (st = tg_mlp_mod_init(&dl->MLP1, ps, full, "MLP1", c->d_model, c->d_model, rng)) ||
        (st = tg_linear_mod_init(&dl->linear_pred, ps, full, "linear_pred", c->d_model,
                                 c->seg_len, true, rng)))
        return st;
    return TG_OK;
}

tg_status tg_crossformer_init(tg_crossformer *m, const tg_crossformer_config *c, tg_params *ps,
                              const char *prefix, tg_rng *rng)
{
    TG__NONNULL(m, TG_ERR_INVALID);
    TG__NONNULL(c, TG_ERR_INVALID);
    TG__NONNULL(ps, TG_ERR_INVALID);
    if (!prefix) prefix = "";
    char emb[TG_NAME_MAX], enc[TG_NAME_MAX], dec[TG_NAME_MAX];
    const char *dot = *prefix ? "." : "";
    tg_status st;
    memset(m, 0, sizeof *m);
    m->c = *c;
    if ((st = crossformer_check(c))) return st;
    const int64_t d = c->d_model;
    m->pad_in_len = ceil_div(c->seq_len, c->seg_len) * c->seg_len;
    m->pad_out_len = ceil_div(c->pred_len, c->seg_len) * c->seg_len;
    m->in_seg_num = m->pad_in_len / c->seg_len;
    m->dec_seg_num = m->pad_out_len / c->seg_len;
    m->out_seg_num = m->in_seg_num;
    for (int64_t l = 1; l < c->e_layers; l++) m->out_seg_num = ceil_div(m->out_seg_num, c->win_size);
    if ((st = tg_name_join(emb, sizeof emb, prefix, "enc_value_embedding")) ||
        (st = tg_name_join(enc, sizeof enc, prefix, "encoder")) ||
        (st = tg_name_join(dec, sizeof dec, prefix, "decoder")))
        return st;

    /* state_dict order: the model's own parameters (enc_pos_embedding,
     * dec_pos_embedding) first, then the submodules; the RNG is drawn in
     * construction order: value_embedding, enc_pos_embedding, the encoder,
     * dec_pos_embedding, the decoder */
    m->enc_pos_embedding = tg_params_addf(ps, 4, (int64_t[]){1, c->enc_in, m->in_seg_num, d},
                                          "%s%senc_pos_embedding", prefix, dot);
    m->dec_pos_embedding = tg_params_addf(ps, 4, (int64_t[]){1, c->enc_in, m->dec_seg_num, d},
                                          "%s%sdec_pos_embedding", prefix, dot);
    if (!m->enc_pos_embedding || !m->dec_pos_embedding) return TG_ERR_INVALID;
    if ((st = tg_linear_mod_init(&m->value_embedding, ps, emb, "value_embedding", c->seg_len, d,
                                 false, rng)))
        return st;
    if (rng) tg_init_normal(&m->enc_pos_embedding->value, 0.0, 1.0, rng);   /* torch.randn */
    if ((st = tg_layernorm_mod_init(&m->pre_norm, ps, prefix, "pre_norm", d))) return st;
    int64_t seg = m->in_seg_num;
    for (int l = 0; l < c->e_layers; l++) {
        /* scale_block(configs, 1 if l == 0 else win_size, ..., in_seg_num if l == 0
         *             else ceil(in_seg_num / win_size ** l), configs.factor) */
        if (l > 0) seg = ceil_div(seg, c->win_size);
        if ((st = scale_block_init(&m->encode_blocks[l], c, l == 0 ? 1 : c->win_size, seg, ps,
                                   enc, l, rng)))
            return st;
    }
    if (rng) tg_init_normal(&m->dec_pos_embedding->value, 0.0, 1.0, rng);
    for (int i = 0; i <= c->e_layers; i++)
        if ((st = decoder_layer_init(&m->decode_layers[i], c, m->dec_seg_num, ps, dec, i, rng)))
            return st;
    return TG_OK;
}

/* ----------------------------------------------------------------- forward */

/* PatchEmbedding(d_model, patch_len=seg_len, stride=seg_len, padding=pad_in_len - seq_len,
 * dropout=0): x [B, n_vars, seq_len] -> [B*n_vars, in_seg_num, d_model] */
static tg_node *patch_embedding(tg_graph *g, const tg_crossformer *m, tg_node *x)
{
    const int64_t padding = m->pad_in_len - m->c.seq_len, L = m->c.seq_len;
    const tg_axis_len pad = {"padding", padding}, patch_len = {"patch_len", m->c.seg_len};
    if (tg_scope_push(g, "enc_value_embedding")) return NULL;
    /* x = self.padding_patch_layer(x): ReplicationPad1d((0, padding)) repeats the last step */
    if (padding && !tg_scope_push(g, "padding_patch_layer")) {
        tg_node *last = tg_narrow(g, x, -1, L - 1, 1);                     /* [B, n_vars, 1] */
        x = tg_concat(g, 2, (tg_node *[]){x, tg_repeat(g, last, "b n_vars 1 -> b n_vars padding",
                                                       1, &pad)}, -1);     /* [B, n_vars, pad_in] */
        tg_scope_pop(g);
    }
    /* x = x.unfold(dimension=-1, size=patch_len, step=stride)   (stride == patch_len)
     * x = torch.reshape(x, (x.shape[0] * x.shape[1], x.shape[2], x.shape[3])) */
    x = tg_rearrange(g, x, "b n_vars (patch_num patch_len) -> (b n_vars) patch_num patch_len", 1,
                     &patch_len);                               /* [B*n_vars, in_seg, seg_len] */
    /* x = self.value_embedding(x) + self.position_embedding(x) */
    tg_node *v = tg_linear_mod_build(g, &m->value_embedding, x);
    tg_node *pe = NULL;
    tg_tensor *t = tg_tensor_new(TG_F32, 3, (int64_t[]){1, m->in_seg_num, m->c.d_model});
    if (!t) {
        tg_scope_pop(g);
        return tg_graph_fail(g, "enc_value_embedding: out of memory for the position embedding");
    }
    tg_positional_embedding_fill(t->data, m->in_seg_num, m->c.d_model);
    if (!tg_scope_push(g, "position_embedding")) {
        pe = tg_constant(g, "pe", t);                           /* [1, in_seg, d_model] = pe[:, :in_seg] */
        tg_scope_pop(g);
    }
    tg_tensor_free(t);
    x = tg_add(g, v, pe);
    /* return self.dropout(x), n_vars: the dropout is nn.Dropout(0) here, the identity */
    tg_scope_pop(g);
    return x;
}

/* scale_block.forward: merge (if any), then the TSA layer */
static tg_node *scale_block(tg_graph *g, const tg_scale_block *b, tg_node *x)
{
    if (tg_scope_push(g, b->name)) return NULL;
    if (b->has_merge) x = tg_seg_merging_build(g, &b->merge_layer, x);
    x = tg_tsa_build(g, &b->encode_layer, x);
    tg_scope_pop(g);
    return x;
}

/* Encoder.forward: encode_x = [x, block_0(x), block_1(block_0(x)), ...] */
static void encoder(tg_graph *g, const tg_crossformer *m, tg_node *x, tg_node **encode_x)
{
    if (tg_scope_push(g, "encoder")) return;
    encode_x[0] = x;
    for (int l = 0; l < m->c.e_layers; l++) encode_x[l + 1] = x = scale_block(g, &m->encode_blocks[l], x);
    tg_scope_pop(g);
}

/* DecoderLayer.forward(x [b, ts_d, out_seg, d], cross [b, ts_d, in_seg_i, d])
 * -> dec_output [b, ts_d, out_seg, d]; *layer_predict [b, ts_d*out_seg, seg_len] */
static tg_node *decoder_layer(tg_graph *g, const tg_decoder_layer *dl, tg_node *x, tg_node *cross,
                              tg_node **layer_predict)
{
    *layer_predict = NULL;
    if (!x || tg_scope_push(g, dl->name)) return NULL;
    const tg_axis_len b = {"b", tg_node_value(x)->shape[0]};
    x = tg_tsa_build(g, &dl->self_attention, x);
    x = tg_rearrange(g, x, "b ts_d out_seg_num d_model -> (b ts_d) out_seg_num d_model", 0, NULL);
    cross = tg_rearrange(g, cross, "b ts_d in_seg_num d_model -> (b ts_d) in_seg_num d_model", 0,
                         NULL);
    tg_node *tmp = tg_attention_layer_build(g, &dl->cross_attention, x, cross, cross, NULL, NULL);
    x = tg_add(g, x, tg_dropout(g, tmp, dl->dropout));
    tg_node *y = x = tg_layernorm_mod_build(g, &dl->norm1, x);
    y = tg_mlp_mod_build(g, &dl->MLP1, y);
    tg_node *dec_output = tg_layernorm_mod_build(g, &dl->norm2, tg_add(g, x, y));
    dec_output = tg_rearrange(g, dec_output, "(b ts_d) seg_dec_num d_model -> b ts_d seg_dec_num "
                              "d_model", 1, &b);
    tg_node *pred = tg_linear_mod_build(g, &dl->linear_pred, dec_output);
    *layer_predict = tg_rearrange(g, pred, "b out_d seg_num seg_len -> b (out_d seg_num) seg_len",
                                  0, NULL);
    tg_scope_pop(g);
    return dec_output;
}

/* Decoder.forward(x, cross): the predictions of every layer summed, then
 * 'b (out_d seg_num) seg_len -> b (seg_num seg_len) out_d' */
static tg_node *decoder(tg_graph *g, const tg_crossformer *m, tg_node *x, tg_node *const *cross)
{
    if (!x || tg_scope_push(g, "decoder")) return NULL;
    const tg_axis_len out_d = {"out_d", tg_node_value(x)->shape[1]};
    tg_node *final_predict = NULL, *layer_predict;
    for (int i = 0; i <= m->c.e_layers; i++) {
        x = decoder_layer(g, &m->decode_layers[i], x, cross[i], &layer_predict);
        final_predict = final_predict ? tg_add(g, final_predict, layer_predict) : layer_predict;
    }
    final_predict = tg_rearrange(g, final_predict, "b (out_d seg_num) seg_len -> b (seg_num "
                                 "seg_len) out_d", 1, &out_d);
    tg_scope_pop(g);
    return final_predict;
}

tg_node *tg_crossformer_build(tg_graph *g, const tg_crossformer *m, tg_node *x_enc)
{
    TG__BUILDER_NONNULL(g, m);
    TG__BUILDER_NONNULL(g, x_enc);
    if (!tg_builder_check(g, "crossformer", 1, &x_enc)) return NULL;
    const tg_tensor *xv = tg_node_value(x_enc);
    if (xv->rank != 3 || xv->shape[1] != m->c.seq_len || xv->shape[2] != m->c.enc_in) {
        char sh[96];
        return tg_graph_fail(g, "crossformer: x_enc must be [B, seq_len=%lld, enc_in=%lld], got %s",
                             (long long)m->c.seq_len, (long long)m->c.enc_in,
                             tg_shape_str(xv->rank, xv->shape, sh, sizeof sh));
    }
    const tg_axis_len d = {"d", m->c.enc_in}, repeat = {"repeat", xv->shape[0]};
    tg_node *encode_x[TG_CROSSFORMER_MAX_E_LAYERS + 1] = {0};

    /* x_enc, n_vars = self.enc_value_embedding(x_enc.permute(0, 2, 1)) */
    tg_node *x = patch_embedding(g, m, tg_permute(g, x_enc, (int[]){0, 2, 1}));
    x = tg_rearrange(g, x, "(b d) seg_num d_model -> b d seg_num d_model", 1, &d);
    /* x_enc += self.enc_pos_embedding; x_enc = self.pre_norm(x_enc) */
    x = tg_add(g, x, tg_param_node(g, m->enc_pos_embedding));
    x = tg_layernorm_mod_build(g, &m->pre_norm, x);           /* [B, enc_in, in_seg, d_model] */
    /* enc_out, attns = self.encoder(x_enc) */
    encoder(g, m, x, encode_x);
    /* dec_in = repeat(self.dec_pos_embedding, 'b ts_d l d -> (repeat b) ts_d l d', repeat=B) */
    tg_node *dec_in = tg_repeat(g, tg_param_node(g, m->dec_pos_embedding), "b ts_d l d -> (repeat "
                                "b) ts_d l d", 1, &repeat);   /* [B, enc_in, dec_seg, d_model] */
    tg_node *dec_out = decoder(g, m, dec_in, encode_x);       /* [B, pad_out_len, enc_in] */
    /* return dec_out[:, -self.pred_len:, :] */
    return tg_narrow(g, dec_out, 1, m->pad_out_len - m->c.pred_len, m->c.pred_len);
}

/* ---------------------------------------------------------------- registry */

#define CF(f) offsetof(tg_crossformer_config, f)
static const tg_layer_key crossformer_keys[] = {
    {"B", TG_KEY_INT, "2", false, "batch", "[1, inf)", CF(B)},
    {"enc_in", TG_KEY_INT, "3", false, "input series (variables)", "[1, inf)", CF(enc_in)},
    {"seq_len", TG_KEY_INT, "30", false, "input length", "[1, inf)", CF(seq_len)},
    {"pred_len", TG_KEY_INT, "20", false, "forecast length", "[1, inf)", CF(pred_len)},
    {"d_model", TG_KEY_INT, "8", false, "model width (even)", "[1, inf)", CF(d_model)},
    {"n_heads", TG_KEY_INT, "2", false, "attention heads", "[1, inf)", CF(n_heads)},
    {"d_ff", TG_KEY_INT, "16", true, "TSA MLP width; null: 4 * d_model", "[1, inf)", CF(d_ff)},
    {"e_layers", TG_KEY_INT, "2", false,
     "encoder scale blocks (the decoder has e_layers + 1 layers)", "[1, inf)", CF(e_layers)},
    {"factor", TG_KEY_INT, "2", false, "router vectors per segment", "[1, inf)", CF(factor)},
    {"dropout", TG_KEY_FLOAT, "0.1", false,
     "dropout everywhere (training only)", "[0, 1]", CF(dropout)},
    {"seg_len", TG_KEY_INT, "12", false,
     "segment (patch) length; TSL: 12", "[1, inf)", CF(seg_len)},
    {"win_size", TG_KEY_INT, "2", false,
     "segments merged per scale; TSL: 2", "[1, inf)", CF(win_size)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef CF

static tg_status cf_check(const void *vc)
{
    /* B >= 1 and the rest of the table's ranges: checked by the parser (tg_keys_resolve) */
    return crossformer_check(vc);
}

static int cf_inputs(const void *vc, tg_layer_input *in)
{
    const tg_crossformer_config *c = vc;
    in[0] = (tg_layer_input){"x", "B seq_len enc_in", 3, {c->B, c->seq_len, c->enc_in}, true, 0};
    return 1;
}

static tg_status cf_init(void *state, const void *cfg, tg_params *ps, const char *prefix,
                         tg_rng *rng)
{
    return tg_crossformer_init(state, cfg, ps, prefix, rng);
}

static tg_status cf_build(const void *state, tg_graph *g, tg_node *const *in,
                          tg_layer_outputs *out)
{
    out->y = tg_crossformer_build(g, state, in[0]);
    return out->y ? TG_OK : TG_ERR_INVALID;
}

const tg_layer_class tg_crossformer_class = {
    .name = "crossformer",
    .summary = "TSL Crossformer forecaster: x [B, seq_len, enc_in] -> y [B, pred_len, enc_in]",
    .keys = crossformer_keys,
    .config_size = sizeof(tg_crossformer_config),
    .state_size = sizeof(tg_crossformer),
    .check = cf_check,
    .inputs = cf_inputs,
    .init = cf_init,
    .build = cf_build,
};
