/*
 * layers.h - every layer's typed API.
 */
#ifndef TG_LAYERS_H
#define TG_LAYERS_H

#include "layer.h"
#include "modules.h"
#include "attention.h"
#include "axial.h"
#include "assa.h"
#include "tsa.h"
#include "seg_merging.h"
#include "crossformer.h"
#include "linear_forecast.h"
#include "dlinear.h"
#include "tsl_encoder.h"
#include "itransformer.h"
#include "patchtst.h"
#include "gpt.h"

#endif
