/*
 * layers.h - every layer's typed API.
 */
#ifndef TG_LAYERS_H
#define TG_LAYERS_H

#include "layer.h"
#include "modules.h"
#include "attention.h"

#endif
