/*
 * null_calls.h - what the generated NULL-argument cases (build/tests/
 * gen_null_calls.c, from tests/gen_null_calls.sh) share with the suite that
 * runs them (tests/test_capi.c): the table of cases and the context holding a
 * valid-looking value of each type the public API takes.
 */
#ifndef TG_NULL_CALLS_H
#define TG_NULL_CALLS_H

#include <stdio.h>
#include <math.h>

#include "tgraph.h"

typedef enum tc_ret {
    TC_RET_VOID,     /* no result: the case passes when nothing crashed */
    TC_RET_STATUS,   /* must return an error status */
    TC_RET_PTR,      /* must return NULL */
    TC_RET_FLOAT,    /* must return NaN */
    TC_RET_OTHER     /* int, bool, size, struct: the error message tells */
} tc_ret;

/* Fresh for every case; made and freed by test_capi.c, inside a new
 * temporary directory that is the working directory during the call. */
typedef struct tc_ctx {
    tg_graph        *g;           /* float32 graph with one input "x" [2, 2] */
    tg_node         *x;
    tg_node         *nodes[8];    /* x, x, ... */
    tg_tensor       *t;           /* float32 [2, 2] */
    const tg_tensor *tensors[8];  /* t, t, ... */
    tg_params       *ps;          /* float32 store: "w" [2, 2], then the layer's */
    tg_param        *p;           /* "w" */
    tg_optim        *o;           /* SGD over ps */
    tg_config       *cfg;         /* empty */
    tg_layer        *layer;       /* linear_forecast with its defaults */
    const tg_layer_class *cls;
    tg_value         val;         /* 1 */
    tg_st_file      *st, *st_out; /* one float32 tensor "w" [1]; out-parameter */
    tg_dataset      *ds, *ds_out; /* synthetic, 32 x 2; out-parameter */
    tg_scaler       *sc;          /* fitted on ds */
    tg_checkpoint    ck;          /* initialised */
    tg_rng           rng;         /* seeded */
    tg_op            op;          /* a do-nothing op "capi_nop" */
    FILE            *file;        /* "f.txt", open for writing */
    char             buf[4096];   /* output buffers (char *, void *) */
    const char      *strs[8];     /* "x", "x", ... */
    void            *vp;
    float            f32[64];     /* 0.5 each */
    double           f64[64];     /* 0.5 each */
    int64_t          i64[64];     /* 2 each: shapes */
    int              i32[64];     /* 1, 0, 0, ...: a permutation of 2 */
    bool             b[64];
    uint8_t          u8[64];
    size_t           sz[64];
    uint64_t         u64[64];
    tg_tensor        bad[4];      /* [1] rank 99, [2] data NULL, [3] numel 2, shape [1000000] */
    const tg_tensor *bad_arr[4][8]; /* bad_arr[k]: &bad[k], 8 times */
    void            *zero[64];    /* tc_zero's blocks */
    int              n_zero;
} tc_ctx;

typedef struct tc_case {
    const char *func;
    const char *arg;       /* the NULL argument; "*" for all pointer arguments */
    int         allowed;   /* NULL accepted there (see the allow-list in the generator) */
    tc_ret      ret;
    int (*call)(tc_ctx *c);/* 1 when the result is the error result of its kind */
    int         bad;       /* 0: arg is NULL; else arg is the bad tensor tc_ctx.bad[bad] */
} tc_case;

/* What each tc_ctx.bad[k] is (k = 1, 2, 3), for messages. */
extern const char *const tc_bad_names[4];

extern const tc_case tc_null_cases[];
extern const int tc_null_case_count;
extern const int tc_null_function_count;

/* NULL, from another translation unit so no compiler sees it is NULL. */
void *tc_null(void);
/* A fresh zeroed block (1 MiB) owned by c: a valid-looking struct of any type. */
void *tc_zero(tc_ctx *c);

static inline int tc_is_null(const void *p) { return p == NULL; }
static inline int tc_is_nan(double v) { return isnan(v); }

#endif
