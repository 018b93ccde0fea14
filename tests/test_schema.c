/*
 * test_schema.c - the one key schema (engine/io/value.h, engine/io/keys.c):
 * the parser on each type, its errors naming the key, writing a config
 * struct, every layer's tg_X_defaults() against its key table, and the one
 * printer behind `tgraph layers NAME` and `tgraph op NAME --help`.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"
#include "tgraph.h"

typedef struct demo {
    int64_t     k;
    double      p;
    bool        on;
    tg_int_list dims;
    int64_t     width;   /* nullable */
    double      scale;   /* nullable */
} demo;

#define D(f) offsetof(demo, f)
static const tg_key demo_keys[] = {
    {"k", TG_KEY_INT, NULL, false, "required", "[1, inf)", D(k)},
    {"p", TG_KEY_FLOAT, "0.5", false, "a probability", "[0, 1)", D(p)},
    {"on", TG_KEY_BOOL, "true", false, "a switch", NULL, D(on)},
    {"dims", TG_KEY_INT_LIST, "[2, 3]", false, "sizes", "[1, inf)", D(dims)},
    {"width", TG_KEY_INT, "null", true, "null: automatic", NULL, D(width)},
    {"scale", TG_KEY_FLOAT, "inf", true, "any number", NULL, D(scale)},
    {NULL, 0, NULL, false, NULL, NULL, 0},
};
#undef D
#define N_DEMO 6

/* Resolve the items into v (freed by the caller) and return the status. */
static tg_status resolve(const char *const *items, int n, unsigned flags, tg_value *v)
{
    tg_config *cfg = tg_config_new();
    cr_assert(cfg);
    for (int i = 0; i < n; i++) cr_assert_eq(tg_config_set(cfg, items[i]), TG_OK, "%s", items[i]);
    tg_status st = tg_keys_resolve(demo_keys, N_DEMO, cfg, "demo", "key", flags, v);
    tg_config_free(cfg);
    return st;
}

static void free_all(tg_value *v)
{
    for (int i = 0; i < N_DEMO; i++) tg_value_free(&v[i]);
}

static void rejects(const char *item, const char *msg)
{
    tg_value v[N_DEMO];
    const char *items[] = {"k=2", item};
    cr_assert_neq(resolve(items, 2, 0, v), TG_OK, "%s was accepted", item);
    tt_assert_last_error(msg);
}

Test(schema, each_type_with_defaults)
{
    tg_value v[N_DEMO];
    cr_assert_eq(tg_keys_count(demo_keys, 100), N_DEMO);
    cr_assert_eq(tg_keys_count(demo_keys, 3), 3);
    cr_assert_eq(resolve((const char *[]){"k=7"}, 1, 0, v), TG_OK, "%s", tg_last_error());
    cr_assert_eq(v[0].kind, TG_VALUE_INT);
    cr_assert_eq(v[0].i, 7);
    cr_assert_eq(v[1].kind, TG_VALUE_FLOAT);
    cr_assert_float_eq(v[1].f, 0.5, 0);
    cr_assert_eq(v[2].kind, TG_VALUE_BOOL);
    cr_assert(v[2].b);
    cr_assert_eq(v[3].kind, TG_VALUE_LIST);
    cr_assert_eq(v[3].n, 2);
    cr_assert_eq(v[4].kind, TG_VALUE_NULL);
    cr_assert(isinf(v[5].f) && v[5].f > 0);

    demo d;
    memset(&d, 0xff, sizeof d);
    cr_assert_eq(tg_keys_fill_struct(demo_keys, N_DEMO, v, &d), TG_OK);
    free_all(v);
    cr_assert_eq(d.k, 7);
    cr_assert_float_eq(d.p, 0.5, 0);
    cr_assert(d.on);
    cr_assert_eq(d.dims.n, 2);
    cr_assert_eq(d.dims.v[0], 2);
    cr_assert_eq(d.dims.v[1], 3);
    cr_assert_eq(d.width, 0, "null is stored as 0");
    cr_assert(isinf(d.scale));
}

Test(schema, given_values_of_each_type)
{
    tg_value v[N_DEMO];
    const char *items[] = {"k=1", "p=0", "on=false", "dims=4", "width=12", "scale=nan"};
    cr_assert_eq(resolve(items, 6, 0, v), TG_OK, "%s", tg_last_error());
    demo d;
    cr_assert_eq(tg_keys_fill_struct(demo_keys, N_DEMO, v, &d), TG_OK);
    free_all(v);
    cr_assert_eq(d.k, 1);
    cr_assert_float_eq(d.p, 0.0, 0);
    cr_assert(!d.on);
    cr_assert_eq(d.dims.n, 1, "a single integer is a list of one");
    cr_assert_eq(d.dims.v[0], 4);
    cr_assert_eq(d.width, 12);
    cr_assert(isnan(d.scale), "nan is allowed where there is no range");

    cr_assert_eq(resolve((const char *[]){"k=3", "p=1e-3", "scale=-inf", "width=null"}, 4, 0, v),
                 TG_OK, "%s", tg_last_error());
    cr_assert(isinf(v[5].f) && v[5].f < 0);
    free_all(v);
}

Test(schema, errors_name_the_key)
{
    tg_value v[N_DEMO];
    cr_assert_eq(resolve((const char *[]){"k=2", "zz=1"}, 2, 0, v), TG_ERR_NOT_FOUND);
    tt_assert_last_error("demo: unknown key 'zz' (keys: k, p, on, dims, width, scale)");
    cr_assert_eq(resolve((const char *[]){"p=0.1"}, 1, 0, v), TG_ERR_NOT_FOUND);
    tt_assert_last_error("demo: missing required key 'k' (keys: k, p, on, dims, width, scale)");
    rejects("k=abc", "demo: k: expected an integer, got 'abc'");
    rejects("k=1.5", "demo: k: expected an integer, got a float 1.5");
    rejects("p=x", "demo: p: expected a number, got 'x'");
    rejects("on=3", "demo: on: expected true or false, got an integer 3");
    rejects("dims=[1,a]", "demo: dims[1]: expected an integer, got 'a'");
    rejects("k=null", "demo: k: expected an integer, got null (None)");
    rejects("p=null", "demo: p: expected a number, got null (None)");
    /* ranges: the key, the value and the range */
    rejects("k=0", "demo: k: 0 is out of range [1, inf)");
    rejects("p=1", "demo: p: 1 is out of range [0, 1)");
    rejects("p=-0.5", "demo: p: -0.5 is out of range [0, 1)");
    rejects("p=nan", "demo: p: nan is out of range [0, 1)");
    rejects("p=inf", "demo: p: inf is out of range [0, 1)");
    rejects("dims=[2, 0]", "demo: dims[1]: 0 is out of range [1, inf)");
    /* the caller's keys (einops axis lengths) */
    cr_assert_eq(resolve((const char *[]){"k=2", "zz=1"}, 2, TG_KEYS_ALLOW_EXTRA, v), TG_OK);
    free_all(v);
}

Test(schema, bad_tables_are_errors)
{
    static const tg_key bad_def[] = {{"a", TG_KEY_INT, "[1,", false, "x", NULL, 0}, {NULL}};
    static const tg_key bad_range[] = {{"a", TG_KEY_INT, "1", false, "x", "1..2", 0}, {NULL}};
    static const tg_key str[] = {{"s", TG_KEY_STRING, "'mean'", false, "x", NULL, 0}, {NULL}};
    tg_value v[1];
    cr_assert_neq(tg_keys_resolve(bad_def, 1, NULL, "t", "key", 0, v), TG_OK);
    tt_assert_last_error("t: bad default for a");
    cr_assert_neq(tg_keys_resolve(bad_range, 1, NULL, "t", "key", 0, v), TG_OK);
    tt_assert_last_error("bad range '1..2'");
    cr_assert_eq(tg_keys_resolve(str, 1, NULL, "t", "attribute", 0, v), TG_OK);
    cr_assert_str_eq(v[0].s, "mean");
    tg_key_str buf;
    memset(&buf, 'x', sizeof buf);
    cr_assert_eq(tg_keys_fill_struct(str, 1, v, &buf), TG_OK, "%s", tg_last_error());
    cr_assert_str_eq(buf.s, "mean");
    tg_value_free(&v[0]);
    /* a text the struct cannot hold is an error naming the key */
    tg_config *cfg = tg_config_new();
    cr_assert_eq(tg_config_set(cfg, "s=abcdefghijklmnopqrstuvwxyz0123456789"), TG_OK);
    cr_assert_eq(tg_keys_resolve(str, 1, cfg, "t", "key", 0, v), TG_OK);
    cr_assert_neq(tg_keys_fill_struct(str, 1, v, &buf), TG_OK);
    tt_assert_last_error("s: 'abcdefghijklmnopqrstuvwxyz0123456789' is longer than 31");
    tg_value_free(&v[0]);
    tg_config_free(cfg);
}

/* ---- every layer: tg_X_defaults() == the struct from its key table ---- */

static void same_as_table(const char *layer, const void *from_fn, size_t size)
{
    const tg_layer_class *cls = tg_layer_class_find(layer);
    unsigned char table[4096];
    cr_assert(cls, "%s", layer);
    cr_assert_eq(cls->config_size, size, "%s", layer);
    memset(table, 0, sizeof table);
    cr_assert_eq(tg_layer_read_config(cls, NULL, table), TG_OK, "%s: %s", layer, tg_last_error());
    /* key by key, so a failure names the key */
    for (const tg_layer_key *k = cls->keys; k->name; k++) {
        size_t n = k->type == TG_KEY_INT_LIST ? sizeof(tg_int_list)
                   : k->type == TG_KEY_BOOL   ? sizeof(bool)
                   : k->type == TG_KEY_STRING ? sizeof(tg_key_str) : 8;
        cr_assert(!memcmp(table + k->offset, (const unsigned char *)from_fn + k->offset, n),
                  "%s: tg_X_defaults() and the key table differ at %s (table: %s)", layer,
                  k->name, k->def);
    }
}

Test(schema, layer_defaults_come_from_the_key_tables)
{
    int seen = 0;
    {
        tg_tsa_config c = tg_tsa_defaults();
        same_as_table("tsa", &c, sizeof c);
        seen++;
    }
    {
        tg_seg_merging_config c = tg_seg_merging_defaults();
        same_as_table("seg_merging", &c, sizeof c);
        seen++;
    }
    {
        tg_crossformer_config c = tg_crossformer_defaults();
        same_as_table("crossformer", &c, sizeof c);
        seen++;
    }
    {
        tg_attention_layer_config c = tg_attention_layer_defaults();
        same_as_table("attention_layer", &c, sizeof c);
        seen++;
    }
    {   /* TSL's FullAttention(output_attention=False); the oracle cases return A */
        tg_full_attention_config c = tg_full_attention_defaults();
        cr_assert(!c.output_attention);
        c.output_attention = true;
        same_as_table("full_attention", &c, sizeof c);
        seen++;
    }
    {   /* constructor arguments; k=32 is the module's; B, N registry only */
        tg_assa_topk_config c = tg_assa_topk_defaults(8, 1);
        cr_assert_eq(c.k, 32);
        cr_assert_eq(c.B, 0);
        c.k = 3, c.B = 2, c.N = 6;
        same_as_table("assa_topk", &c, sizeof c);
        seen++;
    }
    {
        tg_assa_paper_config c = tg_assa_paper_defaults(8, 2, 3, 2);
        cr_assert_eq(c.B_, 0);
        c.B_ = 3;
        same_as_table("assa_paper", &c, sizeof c);
        seen++;
    }
    {   /* AxialAttention(dim, heads=8); shape registry only */
        tg_axial_attention_config c = tg_axial_attention_defaults(8);
        cr_assert_eq(c.heads, 8);
        cr_assert_eq(c.shape.n, 0);
        c.heads = 2;
        c.shape = (tg_int_list){4, {2, 4, 5, 8}};
        same_as_table("axial", &c, sizeof c);
        seen++;
    }
    seen++;   /* linear_forecast: no tg_X_defaults(); its table is its only default */
    seen++;   /* dlinear: likewise (TSL run.py: seq_len 96, pred_len 96, moving_avg 25) */
    {   /* make_case.py itransformer's defaults (a toy; TSL's run.py has d_model 512) */
        tg_itransformer_config c = tg_itransformer_defaults();
        cr_assert(!strcmp(c.activation.s, "gelu") && c.n_mark == 4 && c.d_ff == 16);
        same_as_table("itransformer", &c, sizeof c);
        seen++;
    }
    {   /* make_case.py patchtst's defaults (a toy; TSL: d_model 512, patch_len 16, stride 8) */
        tg_patchtst_config c = tg_patchtst_defaults();
        cr_assert(!strcmp(c.activation.s, "gelu") && c.patch_len == 4 && c.stride == 2);
        same_as_table("patchtst", &c, sizeof c);
        seen++;
    }
    {   /* make_case.py gpt's defaults: a toy GPTConfig (nanoGPT's own is GPT-2's) */
        tg_gpt_config c = tg_gpt_defaults();
        cr_assert(c.bias && c.dropout == 0 && c.n_layer == 2 && c.vocab_size == 11);
        same_as_table("gpt", &c, sizeof c);
        seen++;
    }
    cr_assert_eq(seen, tg_layer_class_count(), "a layer was added: check its defaults here");
    /* and every table resolves its own defaults (ranges included) */
    for (int i = 0; i < tg_layer_class_count(); i++) {
        const tg_layer_class *cls = tg_layer_class_at(i);
        unsigned char cfg[4096];
        cr_assert_eq(tg_layer_read_config(cls, NULL, cfg), TG_OK, "%s", tg_last_error());
        cr_assert_eq(cls->check(cfg), TG_OK, "%s: %s", cls->name, tg_last_error());
    }
}

/* ---- the one printer, through the CLI ---- */

/* What tg_keys_print writes for keys[0..n), into buf. */
static void printed(const tg_key *keys, int n, int indent, char *buf, size_t len)
{
    const char *path = tt_path("keys.txt");
    FILE *f = fopen(path, "w");
    cr_assert(f);
    tg_keys_print(f, keys, n, indent);
    fclose(f);
    f = fopen(path, "r");
    cr_assert(f);
    size_t got = fread(buf, 1, len - 1, f);
    buf[got] = '\0';
    fclose(f);
}

Test(schema, one_printer_for_layers_and_ops)
{
    static char out[65536], err[4096], want[8192];
    const tg_layer_class *cls = tg_layer_class_find("tsa");
    printed(cls->keys, tg_keys_count(cls->keys, 100), 4, want, sizeof want);
    cr_assert(strstr(want, "    d_ff=null                INT or null in [1, inf); MLP hidden width"), "%s", want);
    cr_assert_eq(tt_run_tool_out(TT_ARGS("layers", "tsa"), out, sizeof out, err, sizeof err), 0,
                 "%s", err);
    cr_assert(strstr(out, want), "tgraph layers tsa:\n%s\nwant:\n%s", out, want);

    const tg_op_def *op = tg_op_find("topk");
    printed(op->attrs, tg_keys_count(op->attrs, TG_OP_MAX_ATTRS), 2, want, sizeof want);
    cr_assert(strstr(want, "  k=INT                    INT, required; how many"), "%s", want);
    cr_assert_eq(tt_run_tool_out(TT_ARGS("op", "topk", "--help"), out, sizeof out, err, sizeof err),
                 0, "%s", err);
    cr_assert(strstr(out, want), "tgraph op topk --help:\n%s\nwant:\n%s", out, want);

    /* a range shows */
    printed(demo_keys, 2, 2, want, sizeof want);
    cr_assert(strstr(want, "  p=0.5                    FLOAT in [0, 1); a probability\n"), "%s",
              want);
}
