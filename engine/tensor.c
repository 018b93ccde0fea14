/*
 * tensor.c - dtype facts, shape arithmetic, heap tensors.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const dtype_names[TG_DTYPE_COUNT] = {
    [TG_F32] = "float32", [TG_F64] = "float64", [TG_I64] = "int64", [TG_BOOL] = "bool",
};
static const size_t dtype_sizes[TG_DTYPE_COUNT] = {
    [TG_F32] = 4, [TG_F64] = 8, [TG_I64] = 8, [TG_BOOL] = 1,
};

const char *tg_dtype_name(tg_dtype dt)
{
    return (unsigned)dt < TG_DTYPE_COUNT ? dtype_names[dt] : "unknown";
}

size_t tg_dtype_size(tg_dtype dt) { return (unsigned)dt < TG_DTYPE_COUNT ? dtype_sizes[dt] : 0; }

int tg__mul_overflow_i64(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return 0;
    if (a != 0 && b > INT64_MAX / a) return 0;
    *out = a * b;
    return 1;
}

int tg__mul_overflow_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return 0;
    *out = a * b;
    return 1;
}

tg_status tg_shape_numel(int rank, const int64_t *shape, int64_t *numel)
{
    if (!numel) return tg_set_error(TG_ERR_INVALID, "tg_shape_numel: numel is NULL");
    if (!shape && rank > 0)
        return tg_set_error(TG_ERR_INVALID, "tg_shape_numel: shape is NULL with rank %d", rank);
    if (rank < 0 || rank > TG_MAX_RANK)
        return tg_set_error(TG_ERR_LIMIT, "rank %d is outside [0, %d]", rank, TG_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (shape[i] < 0)
            return tg_set_error(TG_ERR_SHAPE, "negative dimension %lld at dim %d",
                                (long long)shape[i], i);
        if (!tg__mul_overflow_i64(n, shape[i], &n))
            return tg_set_error(TG_ERR_LIMIT, "element count overflows at dim %d", i);
    }
    /* keep byte sizes (up to 16 bytes per element in scratch) representable */
    if (n > (INT64_MAX >> 5))
        return tg_set_error(TG_ERR_LIMIT, "element count %lld is too large", (long long)n);
    *numel = n;
    return TG_OK;
}

char *tg_shape_str(int rank, const int64_t *shape, char *buf, size_t len)
{
    size_t at = 0;
    if (!buf) {
        tg_set_error(TG_ERR_INVALID, "tg_shape_str: buf is NULL");
        return NULL;
    }
    if (!len) return buf;
    if (rank < 0 || rank > TG_MAX_RANK) {   /* never read past shape[TG_MAX_RANK] */
        snprintf(buf, len, "[rank %d?]", rank);
        return buf;
    }
    if (!shape && rank > 0) {
        tg_set_error(TG_ERR_INVALID, "tg_shape_str: shape is NULL");
        snprintf(buf, len, "[?]");
        return buf;
    }
    buf[0] = '\0';
    at += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < rank && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (at < len) snprintf(buf + at, len - at, "]");
    return buf;
}

/* The one check of a caller's tensor (tensor.h): header first, then data. */
static tg_status tensor_check(const tg_tensor *t, const char *what, bool need_data)
{
    if (!what) what = "tensor";
    if (!t) return tg_set_error(TG_ERR_INVALID, "%s: tensor is NULL", what);
    if ((unsigned)t->dtype >= TG_DTYPE_COUNT)
        return tg_set_error(TG_ERR_DTYPE, "%s: unknown dtype %d", what, (int)t->dtype);
    if (t->rank < 0)
        return tg_set_error(TG_ERR_LIMIT, "%s: rank %d is negative", what, t->rank);
    if (t->rank > TG_MAX_RANK)
        return tg_set_error(TG_ERR_LIMIT, "%s: rank %d is above the maximum rank %d", what,
                            t->rank, TG_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] < 0)
            return tg_set_error(TG_ERR_SHAPE, "%s: negative dimension %lld at dim %d", what,
                                (long long)t->shape[i], i);
        if (!tg__mul_overflow_i64(n, t->shape[i], &n) || n > (INT64_MAX >> 5))
            return tg_set_error(TG_ERR_LIMIT, "%s: element count overflows at dim %d", what, i);
    }
    if (t->numel != n) {
        char sh[128];
        return tg_set_error(TG_ERR_SHAPE, "%s: numel is %lld but shape %s has %lld elements",
                            what, (long long)t->numel, tg_shape_str(t->rank, t->shape, sh,
                                                                    sizeof sh), (long long)n);
    }
    if (need_data && n > 0 && !t->data)
        return tg_set_error(TG_ERR_INVALID, "%s: data is NULL with %lld elements", what,
                            (long long)n);
    return TG_OK;
}

tg_status tg_tensor_check(const tg_tensor *t, const char *what)
{
    return tensor_check(t, what, true);
}

tg_status tg_tensor_check_shape(const tg_tensor *t, const char *what)
{
    return tensor_check(t, what, false);
}

int tg_wrap_dim(int64_t dim, int rank)
{
    int64_t m = rank > 0 ? rank : 1;
    if (dim < -m || dim >= m) return -1;
    return (int)(dim < 0 ? dim + m : dim);
}

void tg__strides(int rank, const int64_t *shape, int64_t *strides)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        strides[i] = s;
        s *= shape[i];
    }
}

tg_tensor *tg_tensor_new(tg_dtype dt, int rank, const int64_t *shape)
{
    int64_t numel;
    if ((unsigned)dt >= TG_DTYPE_COUNT) {
        tg_set_error(TG_ERR_DTYPE, "unknown dtype %d", (int)dt);
        return NULL;
    }
    if (tg_shape_numel(rank, shape, &numel) != TG_OK) return NULL;
    tg_tensor *t = tg__calloc(1, sizeof *t);
    if (!t) {
        tg_set_error(TG_ERR_NOMEM, "out of memory allocating a tensor header");
        return NULL;
    }
    t->dtype = dt;
    t->rank = rank;
    if (rank) memcpy(t->shape, shape, (size_t)rank * sizeof *shape);
    t->numel = numel;
    size_t bytes = (size_t)numel * tg_dtype_size(dt);
    t->data = tg__malloc_aligned(bytes);
    if (!t->data) {
        tg__free(t);
        tg_set_error(TG_ERR_NOMEM, "out of memory allocating %zu bytes of tensor data", bytes);
        return NULL;
    }
    memset(t->data, 0, bytes);
    return t;
}

void tg_tensor_free(tg_tensor *t)
{
    if (!t) return;
    tg__free_aligned(t->data);
    tg__free(t);
}

tg_tensor *tg_tensor_clone(const tg_tensor *t)
{
    if (tg_tensor_check(t, "tg_tensor_clone")) return NULL;
    tg_tensor *c = tg_tensor_new(t->dtype, t->rank, t->shape);
    if (c) memcpy(c->data, t->data, (size_t)t->numel * tg_dtype_size(t->dtype));
    return c;
}

bool tg_tensor_same_shape(const tg_tensor *a, const tg_tensor *b)
{
    if (tg_tensor_check_shape(a, "tg_tensor_same_shape: a") ||
        tg_tensor_check_shape(b, "tg_tensor_same_shape: b"))
        return false;
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

tg_status tg_tensor_copy(tg_tensor *dst, const tg_tensor *src)
{
    tg_status st = tg_tensor_check(dst, "tg_tensor_copy: dst");
    if (!st) st = tg_tensor_check(src, "tg_tensor_copy: src");
    if (st) return st;
    if (!tg_tensor_same_shape(dst, src)) {
        char a[96], b[96];
        return tg_set_error(TG_ERR_SHAPE, "expected shape %s, got %s",
                            tg_shape_str(dst->rank, dst->shape, a, sizeof a),
                            tg_shape_str(src->rank, src->shape, b, sizeof b));
    }
    if (dst->dtype == src->dtype) {
        memcpy(dst->data, src->data, (size_t)src->numel * tg_dtype_size(src->dtype));
        return TG_OK;
    }
    if (tg_dtype_is_float(dst->dtype) && tg_dtype_is_float(src->dtype)) {
        for (int64_t i = 0; i < src->numel; i++) tg_tensor_set(dst, i, tg_tensor_get(src, i));
        return TG_OK;
    }
    return tg_set_error(TG_ERR_DTYPE, "expected dtype %s, got %s", tg_dtype_name(dst->dtype),
                        tg_dtype_name(src->dtype));
}

double tg_tensor_get(const tg_tensor *t, int64_t i)
{
    if (tg_tensor_check(t, "tg_tensor_get")) return NAN;
    if (i < 0 || i >= t->numel) {
        tg_set_error(TG_ERR_INVALID, "tg_tensor_get: index %lld outside [0, %lld)",
                     (long long)i, (long long)t->numel);
        return NAN;
    }
    switch (t->dtype) {
    case TG_F32: return ((const float *)t->data)[i];
    case TG_F64: return ((const double *)t->data)[i];
    case TG_I64: return (double)((const int64_t *)t->data)[i];
    case TG_BOOL: return ((const uint8_t *)t->data)[i];
    default: return 0.0;
    }
}

void tg_tensor_set(tg_tensor *t, int64_t i, double v)
{
    if (tg_tensor_check(t, "tg_tensor_set")) return;
    if (i < 0 || i >= t->numel) {
        tg_set_error(TG_ERR_INVALID, "tg_tensor_set: index %lld outside [0, %lld)",
                     (long long)i, (long long)t->numel);
        return;
    }
    switch (t->dtype) {
    case TG_F32: ((float *)t->data)[i] = (float)v; break;
    case TG_F64: ((double *)t->data)[i] = v; break;
    case TG_I64: ((int64_t *)t->data)[i] = (int64_t)v; break;
    case TG_BOOL: ((uint8_t *)t->data)[i] = v != 0.0; break;
    default: break;
    }
}
