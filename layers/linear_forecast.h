/*
 * linear_forecast.h - the LTSF-Linear baselines (Zeng et al., "Are
 * Transformers Effective for Time Series Forecasting?", AAAI 2023, repository
 * cure-lab/LTSF-Linear, models/Linear.py and models/NLinear.py): one
 * nn.Linear(seq_len, pred_len) over time, shared by every channel.
 *
 *     Linear:  y = Linear(x.permute(0, 2, 1)).permute(0, 2, 1)
 *     NLinear: last = x[:, -1:, :]; y = Linear((x - last).permute(0, 2, 1)).permute(0, 2, 1) + last
 *
 * Parameters (state_dict keys of both models): Linear.weight [pred_len,
[pred_len, seq_len], Linear.bias [pred_len]. A small, fast reference forecaster: any
 * attention model worth training should beat it.
 */
#ifndef TG_LINEAR_FORECAST_H
#define TG_LINEAR_FORECAST_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_linear_forecast_config {
    int64_t B, enc_in, seq_len, pred_len;
    bool    normalize;   /* NLinear: subtract the last input step, add it back */
} tg_linear_forecast_config;

typedef struct tg_linear_forecast {
    tg_linear_forecast_config c;
    tg_linear_mod             Linear;
} tg_linear_forecast;

/* Check the config and create Linear.weight/.bias under prefix ("" for none);
 * rng NULL leaves them zero. */
tg_status tg_linear_forecast_init(tg_linear_forecast *m, const tg_linear_forecast_config *c,
                                  tg_params *ps, const char *prefix, tg_rng *rng);
/* x [B, seq_len, enc_in] -> y [B, pred_len, enc_in] (B and enc_in from x). */
tg_node *tg_linear_forecast_build(tg_graph *g, const tg_linear_forecast *m, tg_node *x);

extern const tg_layer_class tg_linear_forecast_class;

#ifdef __cplusplus
}
#endif
#endif
