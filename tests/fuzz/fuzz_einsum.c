/*
 * fuzz_einsum.c - libFuzzer target for the einsum equation parser and the
 * einsum kernels behind it (ops/einsum_parse.c and ops/einsum.c via tg_einsum).
 *
 * Input: byte 0 picks the operand count (0..5, so 0 and too many for short
 * equations occur); for each operand a rank byte (0..8) and one byte per dim (0..3,
 * zero dims included); the rest of the input is the equation. Small graphs
 * run forward and backward too.
 */
#include "common_graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_reader r = {data, size};
    int n = fz_byte(&r) % 6;
    tg_graph *g = tg_graph_new(TG_F64);
    if (!g) return 0;
    tg_node *ops[6] = {0};
    int64_t work = 1;
    for (int i = 0; i < n; i++) {
        int rank = fz_byte(&r) % 9;
        int64_t shape[TG_MAX_RANK];
        int64_t numel = 1;
        for (int d = 0; d < rank; d++) {
            shape[d] = fz_byte(&r) % 4;
            numel *= shape[d];
        }
        ops[i] = tg_input(g, "x", TG_F64, rank, shape);
        if (ops[i]) {
            fz_fill(ops[i]);
            (void)tg_node_set_requires_grad(ops[i], (i & 1) == 0);
        }
        work *= numel > 0 ? numel : 1;
        if (work > (int64_t)1 << 40) work = (int64_t)1 << 40;
    }
    char *eq = fz_rest_str(&r);
    tg_node *y = tg_einsum(g, eq, n, ops);
    fz_run(g, y, work, 1 << 14);
    free(eq);
    tg_graph_free(g);
    return 0;
}
