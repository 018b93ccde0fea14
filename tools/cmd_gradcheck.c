/*
 * cmd_gradcheck.c - `tgraph gradcheck`: a layer in float64 with random,
 * perturbed parameters and random inputs, every gradient against central
 * differences.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "layer_cli.h"

static int run(int argc, char **argv)
{
    tg_args a;
    tg_args_init(&a, "gradcheck", argc, argv);
    const char *layer = NULL, *arg, *v;
    int64_t seed = 0, max_per = 0;
    tg_config *cfg = tg_config_new();
    tg_cli_layer c = {0};
    tg_gradcheck_result *res = NULL;
    int rc = 2;
    if (!cfg) return tg_cli_fail("gradcheck", "out of memory");
    while ((arg = tg_args_next(&a))) {
        if (!strcmp(arg, "--set")) {
            if (!tg_args_value(&a, &v) || tg_cli_set("gradcheck", cfg, v)) goto done;
        } else if (!strcmp(arg, "--seed")) {
            if (!tg_args_int(&a, 0, INT64_MAX, &seed)) goto done;
        } else if (!strcmp(arg, "--max-per-tensor")) {
            if (!tg_args_int(&a, 0, INT64_MAX, &max_per)) goto done;
        } else if (arg[0] != '-' && !layer) {
            layer = arg;
        } else if (arg[0] != '-' && strchr(arg, '=')) {
            if (tg_cli_set("gradcheck", cfg, arg)) goto done;   /* op attributes: k=3 */
        } else {
            rc = tg_cli_unknown(&a, arg);
            goto done;
        }
    }
    if (!layer) {
        rc = tg_cli_fail("gradcheck", "missing LAYER (see tgraph layers)");
        goto done;
    }
    tg_rng rng;
    tg_rng_seed(&rng, (uint64_t)seed);
    if (tg_cli_layer_build(&c, "gradcheck", layer, cfg, NULL, TG_F64, &rng, true)) goto done;
    /* perturb every parameter (LayerNorm gains of exactly 1 can hide bugs) */
    for (int i = 0; i < tg_params_count(c.ps); i++) {
        tg_tensor *p = &tg_params_at(c.ps, i)->value;
        for (int64_t k = 0; k < p->numel; k++)
            tg_tensor_set(p, k, tg_tensor_get(p, k) + 0.1 * tg_rng_normal(&rng));
    }
    for (int i = 0; i < c.n_in; i++) {
        const tg_layer_input *spec = tg_layer_input_at(c.layer, i);
        tg_tensor *t = (tg_tensor *)tg_node_value(c.in[i]);
        for (int64_t k = 0; k < t->numel; k++)
            tg_tensor_set(t, k, spec->differentiable ? tg_rng_normal(&rng)
                                                     : (tg_rng_uniform(&rng) < 0.3 ? -100.0 : 0.0));
    }
    int n_res = 0;
    bool ok = false;
    res = calloc((size_t)tg_params_count(c.ps) + TG_MAX_LAYER_INPUTS, sizeof *res);
    if (!res) {
        rc = tg_cli_fail("gradcheck", "out of memory");
        goto done;
    }
    tg_gradcheck_opts o = {.seed = (uint64_t)seed, .max_per_tensor = max_per};
    if (tg_gradcheck(c.g, c.out.y, &o, res, tg_params_count(c.ps) + TG_MAX_LAYER_INPUTS, &n_res,
                     &ok)) {
        rc = tg_cli_fail("gradcheck", "%s", tg_last_error());
        goto done;
    }
    printf("gradcheck %s (float64, eps 1e-6, atol 1e-5, rtol 1e-3, seed %lld)\n", layer,
           (long long)seed);
    for (int i = 0; i < n_res; i++) {
        char sh[96], skipped[48] = "";
        if (res[i].skipped)
            snprintf(skipped, sizeof skipped, " (%lld at kinks left out)", (long long)res[i].skipped);
        printf("  %-52s %-16s worst rel %.2e  %6lld checked%s  %s\n", res[i].name,
               tg_shape_str(res[i].rank, res[i].shape, sh, sizeof sh), res[i].max_rel_err,
               (long long)res[i].checked, skipped, res[i].pass ? "pass" : "FAIL");
    }
    printf("%s: %d tensors, %s\n", layer, n_res, ok ? "all pass" : "FAILED");
    rc = ok ? 0 : 1;
done:
    free(res);
    tg_cli_layer_free(&c);
    tg_config_free(cfg);
    return rc;
}

const tg_cli_cmd tg_cmd_gradcheck = {
    .name = "gradcheck",
    .summary = "check every gradient of a layer against central differences (float64)",
    .help =
        "usage: tgraph gradcheck LAYER [--set KEY=VALUE]... [--seed N] [--max-per-tensor N]\n\n"
        "Builds LAYER in float64 with PyTorch-default parameters plus 0.1*randn (so no\n"
        "LayerNorm gain is exactly 1) and random inputs, and compares the gradient of\n"
        "sum(y * r) for a random r with central differences (eps 1e-6, atol 1e-5,\n"
        "rtol 1e-3, as torch.autograd.gradcheck) for every parameter and input. Elements\n"
        "whose probe flips a discrete decision (a topk pick, a relu sign) are left out and\n"
        "counted. Prints one line per tensor; exits 1 if any fails.\n"
        "  --max-per-tensor N   check at most N elements per tensor (spread evenly)\n\n"
        "examples:\n  tgraph gradcheck tsa\n"
        "  tgraph gradcheck assa_topk --set N=9 --set k=4 --seed 3\n",
    .run = run,
};
