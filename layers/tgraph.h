/*
 * tgraph.h - the umbrella header: everything public in tgraph.
 */
#ifndef TGRAPH_H
#define TGRAPH_H

#include "error.h"
#include "tensor.h"
#include "rng.h"
#include "graph.h"
#include "params.h"
#include "gradcheck.h"
#include "dot.h"
#include "optim.h"
#include "svg.h"
#include "threads.h"
#include "ops.h"
#include "tensor_io.h"
#include "value.h"
#include "layers.h"

#endif
