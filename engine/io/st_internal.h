/*
 * st_internal.h - library-private: what the safetensors reader's two files
 * share (safetensors_header.c validates the header into an st_plan,
 * safetensors.c builds the tensors from it), and an extra of safetensors.c
 * for params_io.c.
 */
#ifndef TG_ST_INTERNAL_H
#define TG_ST_INTERNAL_H

#include <stdint.h>

#include "json.h"
#include "tensor_io.h"

/* The dtype tag tensor i had in the file ("I32", "F16"), before conversion;
 * a static string, NULL when i is out of range. */
const char *tg__st_file_dtype(const tg_st_file *f, int i);

/* ---- the reader's two halves (safetensors_header.c, safetensors.c) ---- */

#define ST_UNKNOWN_LEN UINT64_MAX           /* a stream's length */

/* The format's dtypes (safetensors_header.c), those tgraph cannot convert
 * (conv ST_NONE) included, so that they are rejected by name. */
enum { ST_KEEP, ST_F16, ST_BF16, ST_SINT, ST_UINT, ST_NONE };

typedef struct {
    const char *name;
    unsigned    size;   /* bytes per element (0: sub-byte) */
    int         conv;   /* how it becomes a tgraph dtype */
    tg_dtype    to;
} st_dtype;

extern const st_dtype tg__st_dtypes[];

/* One tensor entry of a validated header. */
typedef struct {
    const tg__json *name;   /* key node: str, len */
    int      dt;            /* index into tg__st_dtypes */
    int      rank;
    int64_t  shape[TG_MAX_RANK];
    uint64_t begin, end;
} st_entry;

/* A validated header: its entries in offset order and the metadata. */
typedef struct {
    const char     *what;
    tg__json_doc    doc;
    st_entry       *e;
    int             n;
    const tg__json *meta;   /* the __metadata__ object or NULL */
    uint64_t        data_end;   /* bytes of data the tensors cover */
} st_plan;

void tg__st_plan_free(st_plan *p);
/* A name from the header (a key node), quoted for a message into buf. */
const char *tg__st_nm(const tg__json *name, char *buf, size_t n);
/* The checks on the first 8 bytes: file length len, header size n. */
tg_status tg__st_check_sizes(const char *what, uint64_t len, const unsigned char *first8,
                             uint64_t *hsize);
/* Validate header bytes hdr[0..n) into *p (p->what set; free with
 * tg__st_plan_free, also on error); data_len = bytes after the header
 * (ST_UNKNOWN_LEN from a stream: checked while reading). */
tg_status tg__st_plan_header(st_plan *p, const char *hdr, size_t n, uint64_t data_len);

#endif
