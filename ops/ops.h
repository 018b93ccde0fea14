/*
 * ops.h - every op builder tgraph ships, and the one list of op families.
 * Each builder takes the graph first, returns the new node, or NULL with the
 * graph's sticky error set.
 *
 * One #include per op family, in the order of `tgraph op --help` and the man
 * page. ops/registry.c includes this file again with TG__OP_FAMILY defined:
 * the last line of each family header names its registry rows, so adding an
 * op family is its files in ops/ and one line here (tests/test_registry.c
 * names whatever is missing). No include guard on purpose: it is read once
 * more for each such pass, and every header it includes has its own.
 */
#include "einsum.h"
#include "softmax.h"
#include "sdpa.h"
#include "topk.h"
#include "scatter.h"
#include "einops.h"
#include "linear.h"
#include "layernorm.h"
#include "batchnorm.h"
#include "activation.h"
#include "dropout.h"
#include "mask.h"
#include "loss.h"
#include "crossentropy.h"
#include "concat.h"
#include "elementwise.h"
#include "reduce.h"
#include "shape.h"
#include "embedding.h"

/* not an op family: the GEMM behind linear, einsum and sdpa */
#include "gemm.h"
