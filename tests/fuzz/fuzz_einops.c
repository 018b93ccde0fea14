/*
 * fuzz_einops.c - libFuzzer target for the einops pattern parser
 * (ops/einops_parse.c) through tg_rearrange, tg_repeat and tg_reduce, and
 * the kernels behind them on small shapes.
 *
 * Input: byte 0 picks the call (rearrange, repeat, or reduce with one of the
 * four reductions); byte 1 the rank (0..8); one byte per dim (0..5); a count
 * of keyword axes (0..4) and one signed byte per keyword length (negative and
 * zero lengths included). The rest is text: the first line is the pattern,
 * the following lines are the keyword axis names, in order.
 */
#include "common_graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    int which = fz_byte(&r) % 6;
    int rank = fz_byte(&r) % 9;
    int64_t shape[TG_MAX_RANK];
    int64_t numel = 1;
    for (int d = 0; d < rank; d++) {
        shape[d] = fz_byte(&r) % 6;
        numel *= shape[d];
    }
    int n_kw = fz_byte(&r) % 5;
    int64_t lens[4];
    for (int i = 0; i < n_kw; i++) lens[i] = (int8_t)fz_byte(&r);

    char *text = fz_rest_str(&r);
    char *line = fz_next_line(text);
    tg_axis_len kw[4];
    int n_named = 0;
    for (int i = 0; i < n_kw; i++) {
        char *next = fz_next_line(line);
        kw[n_named].name = line ? line : "";
        kw[n_named].len = lens[i];
        n_named++;
        line = next;
    }

    tg_graph *g = tg_graph_new(TG_F64);
    if (g) {
        tg_node *x = tg_input(g, "x", TG_F64, rank, shape);
        fz_fill(x);
        (void)tg_node_set_requires_grad(x, true);
        tg_node *y = NULL;
        if (which == 0)
            y = tg_rearrange(g, x, text, n_named, kw);
        else if (which == 1)
            y = tg_repeat(g, x, text, n_named, kw);
        else
            y = tg_reduce(g, x, text, (tg_einops_reduction)(which - 2), n_named, kw);
        fz_run(g, y, numel, 1 << 14);
        tg_graph_free(g);
    }
    free(text);
    return 0;
}
