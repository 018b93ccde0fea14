/*
 * tgraph.h - everything public in tgraph, a tensor graph engine with
 * reverse-mode autograd in C11 (libc and pthreads only).
 *
 * ---------------------------------------------------------------- tutorial
 *
 * Compile and link:
 *
 *     cc app.c $(pkg-config --cflags --libs tgraph)      # after `make install`
 *     #include <tgraph/tgraph.h>
 *
 * 1. Parameters live in a store, by PyTorch state_dict name, and outlive
 *    graphs. Layers create theirs; plain code adds them directly:
 *
 *     tg_params *ps = tg_params_new(TG_F32);
 *     tg_param *w = tg_params_add(ps, "fc.weight", 2, (int64_t[]){4, 3});
 *     tg_param *b = tg_params_add(ps, "fc.bias", 1, (int64_t[]){4});
 *     tg_rng rng;
 *     tg_rng_seed(&rng, 0);
 *     tg_init_kaiming_uniform(&w->value, sqrt(5.0), &rng);   // nn.Linear's init
 *
 * 2. Build a graph once. Builders never abort: bad input records one message
 *    on the graph and returns NULL, and every later builder returns NULL too,
 *    so check once at the end:
 *
 *     tg_graph *g = tg_graph_new(TG_F32);
 *     tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){8, 3});
 *     tg_node *t = tg_input(g, "t", TG_F32, 2, (int64_t[]){8, 4});
 *     tg_node *y = tg_relu(g, tg_linear(g, x, tg_param_node(g, w), tg_param_node(g, b)));
 *     tg_node *loss = tg_mse_loss(g, y, t, TG_REDUCTION_MEAN);
 *     if (tg_graph_error(g)) { fprintf(stderr, "%s\n", tg_graph_error(g)); ... }
 *
 * 3. Run it as often as you like: write the inputs, forward, backward. The
 *    first run allocates every buffer; later runs allocate nothing.
 *
 *     float *xd = tg_node_value(x)->data;            // [8, 3], row-major
 *     ... fill xd and t's data ...
 *     tg_params_zero_grad(ps);                        // parameter grads accumulate
 *     if (tg_graph_forward(g) || tg_graph_backward(g, loss, NULL))
 *         fprintf(stderr, "%s\n", tg_last_error());
 *
 * 4. Read a gradient: d loss / d fc.weight is w->grad ([4, 3]); an input
 *    marked with tg_node_set_requires_grad has tg_node_grad(x).
 *
 * 5. Check the gradients against central differences (use a TG_F64 graph),
 *    and draw the graph:
 *
 *     tg_gradcheck(g, y, NULL, results, n, &n_results, &all_pass);
 *     tg_graph_dot_save(g, &(tg_dot_opts){.backward = true}, "graph.dot");
 *
 * 6. Attention layers are graph builders (layers.h): typed (tg_tsa_init /
 *    tg_tsa_build ...) or by name through the registry (layer.h), with
 *    weights moved to and from PyTorch by name (tensor_io.h: tg_params_load).
 *
 * Headers: error.h tensor.h rng.h graph.h params.h gradcheck.h dot.h svg.h
 * optim.h threads.h tensor_io.h onnx_export.h value.h dataset.h checkpoint.h (engine), ops.h (every op), op.h
 * (writing your own op), layers.h and layer.h (the layers).
 * Ownership: a graph owns its nodes and buffers (tg_graph_free), a store its
 * parameters (tg_params_free); every _new has its _free.
 */
#ifndef TGRAPH_H
#define TGRAPH_H

#include "error.h"
#include "tensor.h"
#include "rng.h"
#include "graph.h"
#include "cost.h"
#include "op.h"
#include "params.h"
#include "gradcheck.h"
#include "dot.h"
#include "optim.h"
#include "svg.h"
#include "threads.h"
#include "ops.h"
#include "tensor_io.h"
#include "onnx_export.h"
#include "value.h"
#include "registry.h"
#include "dataset.h"
#include "timefeatures.h"
#include "checkpoint.h"
#include "trainer.h"
#include "text.h"
#include "layers.h"

#endif
