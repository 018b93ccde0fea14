/*
 * ops.h - every op builder tgraph ships. Each builder takes the graph first,
 * returns the new node, or NULL with the graph's sticky error set.
 */
#ifndef TG_OPS_H
#define TG_OPS_H

#include "activation.h"
#include "concat.h"
#include "crossentropy.h"
#include "dropout.h"
#include "einops.h"
#include "einsum.h"
#include "elementwise.h"
#include "embedding.h"
#include "gemm.h"
#include "layernorm.h"
#include "linear.h"
#include "loss.h"
#include "mask.h"
#include "reduce.h"
#include "scatter.h"
#include "shape.h"
#include "sdpa.h"
#include "softmax.h"
#include "topk.h"

#endif
