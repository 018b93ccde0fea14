/*
 * st_bytes.h - what the safetensors suites share (test_safetensors.c,
 * test_safetensors_errors.c): where a test's file goes and how its bytes get
 * there.
 */
#ifndef TG_ST_BYTES_H
#define TG_ST_BYTES_H

#include <stddef.h>

/* tt_tmpdir()/<tag>.safetensors into buf (n bytes). */
void tt_st_path(char *buf, size_t n, const char *tag);
/* Write len bytes of b to path (replacing it); fails the test if it cannot. */
void tt_st_write_bytes(const char *path, const void *b, size_t len);
/* Rewrite the safetensors file at path in place: element 0 of `tensor` set to
 * v (tensor NULL: none), and metadata `key` set to value (added when absent;
 * key NULL: none); everything else as it was. Fails the test if it cannot. */
void tt_st_rewrite(const char *path, const char *tensor, double v, const char *key,
                   const char *value);
/* Save the safetensors file src as dst with metadata `key` set to value
 * (added when absent); tensors and other metadata as they were. */
void tt_st_resave_meta(const char *src, const char *dst, const char *key, const char *value);

#endif
