/*
 * dlinear.h - DLinear (Zeng et al., "Are Transformers Effective for Time
 * Series Forecasting?", AAAI 2023), as Time-Series-Library's models/DLinear.py
 * runs it on the forecast path: a moving-average decomposition of the input
 * into trend and seasonal parts, one Linear(seq_len -> pred_len) over time for
 * each, summed.
 *
 *     trend    = moving_avg(x)        replicate the first and last step
 *                                     (moving_avg - 1) / 2 times, then
 *                                     AvgPool1d(moving_avg, stride 1)
 *     seasonal = x - trend
 *     y        = (Linear_Seasonal(seasonal^T) + Linear_Trend(trend^T))^T
 *
 * x [B, seq_len, enc_in] -> y [B, pred_len, enc_in]. individual = true gives
 * every channel its own pair of Linears. Parameters by state_dict name:
 * Linear_Seasonal.weight [pred_len, seq_len], Linear_Seasonal.bias
 * [pred_len], Linear_Trend.weight, Linear_Trend.bias; with individual,
 * Linear_Seasonal.{i}.weight ... for every channel i. As upstream, the
 * weights start at 1/seq_len and the biases as nn.Linear's.
 *
 * moving_avg must be odd: upstream's decomposition changes the series' length
 * for an even window (and then fails with a size mismatch); tgraph refuses it
 * at configuration time.
 */
#ifndef TG_DLINEAR_H
#define TG_DLINEAR_H

#include "layer.h"
#include "modules.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tg_dlinear_config {
    int64_t B, enc_in, seq_len, pred_len;
    int64_t moving_avg;   /* the moving-average window, odd */
    bool    individual;   /* one Linear pair per channel */
} tg_dlinear_config;

/* The most channels individual = true takes (Traffic has 862). */
#define TG_DLINEAR_MAX_INDIVIDUAL 1024

typedef struct tg_dlinear {
    tg_dlinear_config c;
    int               n_pairs;   /* 1, or enc_in with individual */
    tg_linear_mod     seasonal[TG_DLINEAR_MAX_INDIVIDUAL], trend[TG_DLINEAR_MAX_INDIVIDUAL];
} tg_dlinear;

/* Check the config and create the Linears under prefix ("" for none); rng
 * NULL leaves every parameter zero, otherwise weights are 1/seq_len and
 * biases U(+-1/sqrt(seq_len)). */
tg_status tg_dlinear_init(tg_dlinear *m, const tg_dlinear_config *c, tg_params *ps,
                          const char *prefix, tg_rng *rng);
/* x [B, seq_len, enc_in] -> y [B, pred_len, enc_in] (B from x; enc_in must be
 * the configured one when individual). */
tg_node  *tg_dlinear_build(tg_graph *g, const tg_dlinear *m, tg_node *x);

/* Autoformer's series_decomp moving average over dim 1 of x [B, T, C] with
 * window k (odd), edges replicated: trend [B, T, C]. */
tg_node  *tg_moving_avg(tg_graph *g, tg_node *x, int64_t k);

extern const tg_layer_class tg_dlinear_class;

#ifdef __cplusplus
}
#endif
#endif
