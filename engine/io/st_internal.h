/*
 * st_internal.h - library-private extras of safetensors.c for params_io.c.
 */
#ifndef TG_ST_INTERNAL_H
#define TG_ST_INTERNAL_H

#include "tensor_io.h"

/* The dtype tag tensor i had in the file ("I32", "F16"), before conversion;
 * a static string, NULL when i is out of range. */
const char *tg__st_file_dtype(const tg_st_file *f, int i);

#endif
