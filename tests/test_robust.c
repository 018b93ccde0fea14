/*
 * test_robust.c - robustness across the library:
 *   - every writer (.npy, safetensors, parameter stores, .dot, .svg heatmap
 *     and line plot) goes through the atomic helper: an injected write
 *     failure (RLIMIT_FSIZE, so the real write(2) fails) and every injected
 *     allocation failure leave the previous file byte for byte, and no
 *     temporary file;
 *   - limits: headers and sizes that would make a loader allocate what the
 *     file claims are refused before any allocation; shape products that
 *     overflow and ranks above TG_MAX_RANK are refused wherever a shape
 *     enters;
 *   - the finite check names the first op (and its scope) that produced a
 *     NaN/Inf, for NaN put into an input, a parameter, mid-graph by a custom
 *     op, and an overflow inside the attention scores;
 *   - regression tests for what the fuzzers (tests/fuzz/) found.
 * Not here: allocation sweeps over whole jobs (test_faults.c), bad-input
 * messages of ops and the CLI (test_badinput.c).
 */
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"
#include "layer_case.h"
#include "internal.h"
#include "op.h"

/* ---- a scratch directory per test ---- */

static char dir[256];

static void make_dir(const char *tag)
{
    snprintf(dir, sizeof dir, "%s/%s", tt_tmpdir(), tag);
    mkdir(dir, 0700);
}

static int count_temps(void)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.")) n++;
    closedir(d);
    return n;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[600];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            remove(p);
        }
    closedir(d);
    rmdir(dir);
}

static void write_bytes(const char *path, const void *b, size_t len)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    if (len) cr_assert_eq(fwrite(b, 1, len, f), len);
    cr_assert_eq(fclose(f), 0);
}

/* ---- writers: one function per file kind, writing version v (0 = old, 1 = new) ---- */

typedef tg_status (*writer_fn)(const char *path, int v);

/* NULL when allocation fails (the sweeps inject that). */
static tg_tensor *ramp(int64_t n, double scale)
{
    tg_tensor *t = tg_tensor_new(TG_F32, 1, &n);
    if (!t) return NULL;
    for (int64_t k = 0; k < n; k++) tg_tensor_set(t, k, (double)k * scale);
    return t;
}

static tg_status write_npy(const char *path, int v)
{
    tg_tensor *t = ramp(v ? 300 : 5, v ? -1.0 : 0.5);
    if (!t) return TG_ERR_NOMEM;
    tg_status st = tg_npy_save(path, t);
    tg_tensor_free(t);
    return st;
}

static tg_status write_st(const char *path, int v)
{
    tg_tensor *a = ramp(v ? 200 : 3, 1.0), *b = ramp(v ? 100 : 2, 2.0);
    const char *names[] = {"a", "b"};
    const tg_tensor *ts[] = {a, b};
    const char *mk[] = {"version"}, *mv[] = {v ? "new" : "old"};
    tg_status st = a && b ? tg_st_save(path, 2, names, ts, 1, mk, mv) : TG_ERR_NOMEM;
    tg_tensor_free(a);
    tg_tensor_free(b);
    return st;
}

static tg_status write_params(const char *path, int v)
{
    tg_params *ps = tg_params_new(TG_F32);
    if (!ps) return TG_ERR_NOMEM;
    tg_param *w = tg_params_add(ps, "fc.weight", 2, (int64_t[]){v ? 20 : 2, 3});
    tg_param *b = w ? tg_params_add(ps, "fc.bias", 1, (int64_t[]){v ? 20 : 2}) : NULL;
    tg_status st = TG_ERR_NOMEM;
    if (w && b) {
        tt_randn(&w->value, 1 + (uint64_t)v);
        st = tg_params_save(ps, path, 0, NULL, NULL);
    }
    tg_params_free(ps);
    return st;
}

/* A small graph: v = 0 one relu, v = 1 a linear layer in a scope. */
static tg_status write_dot(const char *path, int v)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_params *ps = tg_params_new(TG_F32);
    tg_status st = TG_ERR_NOMEM;
    if (g && ps) {
        tg_node *x = tg_input(g, "x", TG_F32, 2, (int64_t[]){4, 3});
        tg_node *y;
        if (v) {
            tg_param *w = tg_params_add(ps, "fc.weight", 2, (int64_t[]){5, 3});
            if (!w) {
                tg_graph_free(g);
                tg_params_free(ps);
                return TG_ERR_NOMEM;
            }
            tg_scope_push(g, "fc");
            y = tg_linear(g, x, tg_param_node(g, w), NULL);
            tg_scope_pop(g);
            y = tg_sum(g, tg_relu(g, y), NULL, 0, false);
        } else {
            y = tg_relu(g, x);
        }
        st = y ? tg_graph_dot_save(g, &(tg_dot_opts){.backward = v == 1, .title = "t"}, path)
               : tg_set_error(TG_ERR_NOMEM, "%s", tg_graph_error(g));
    }
    tg_graph_free(g);
    tg_params_free(ps);
    return st;
}

static tg_status write_heatmap(const char *path, int v)
{
    int64_t shape[4] = {1, v ? 2 : 1, v ? 6 : 2, v ? 6 : 2};
    tg_tensor *a = tg_tensor_new(TG_F32, 4, shape);
    if (!a) return TG_ERR_NOMEM;
    for (int64_t k = 0; k < a->numel; k++) tg_tensor_set(a, k, (double)(k % 7) / 7.0);
    tg_status st = tg_svg_heatmap(path, a, &(tg_heatmap_opts){.head = -1});
    tg_tensor_free(a);
    return st;
}

static tg_status write_lines(const char *path, int v)
{
    double x[50], y[50];
    int n = v ? 50 : 3;
    for (int i = 0; i < n; i++) x[i] = i, y[i] = 1.0 / (1 + i);
    tg_series s = {"loss", x, y, n};
    return tg_svg_lines(path, v ? "new" : "old", "epoch", "loss", &s, 1);
}

static const struct {
    const char *name;
    writer_fn   fn;
} writers[] = {
    {"w.npy", write_npy},          {"w.safetensors", write_st}, {"p.safetensors", write_params},
    {"g.dot", write_dot},          {"h.svg", write_heatmap},    {"l.svg", write_lines},
};
#define N_WRITERS (int)(sizeof writers / sizeof *writers)

static unsigned char *slurp(const char *path, size_t *len)
{
    void *d;
    cr_assert_eq(tg_read_file(path, 0, &d, len), TG_OK, "%s", tg_last_error());
    return d;
}

/* Write the old version of writer i, return its bytes. */
static unsigned char *write_old(int i, char *path, size_t plen, size_t *len)
{
    snprintf(path, plen, "%s/%s", dir, writers[i].name);
    cr_assert_eq(writers[i].fn(path, 0), TG_OK, "%s: %s", writers[i].name, tg_last_error());
    return slurp(path, len);
}

static void assert_unchanged(const char *path, const unsigned char *old, size_t n_old,
                             const char *what)
{
    size_t n;
    unsigned char *now = slurp(path, &n);
    cr_assert(n == n_old && !memcmp(now, old, n), "%s: the previous file changed", what);
    tg_free(now);
    cr_assert_eq(count_temps(), 0, "%s: a temporary file was left behind", what);
}

Test(robust, write_failure_keeps_every_previous_file)
{
    make_dir("efbig");
    signal(SIGXFSZ, SIG_IGN);   /* a write past the limit fails with EFBIG instead */
    for (int i = 0; i < N_WRITERS; i++) {
        char path[600];
        size_t n_old;
        unsigned char *old = write_old(i, path, sizeof path, &n_old);
        struct rlimit saved, lim;
        cr_assert_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
        lim = saved;
        lim.rlim_cur = 16;   /* the new version is longer than this: its write(2) fails */
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        tg_clear_error();
        tg_status st = writers[i].fn(path, 1);
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
        cr_assert_eq(st, TG_ERR_IO, "%s: status %s (%s)", writers[i].name, tg_status_str(st),
                     tg_last_error());
        tt_assert_last_error(writers[i].name);
        tt_assert_last_error("File too large");
        assert_unchanged(path, old, n_old, writers[i].name);
        /* without the limit the same write goes through */
        cr_assert_eq(writers[i].fn(path, 1), TG_OK, "%s: %s", writers[i].name, tg_last_error());
        size_t n_new;
        unsigned char *nw = slurp(path, &n_new);
        cr_assert(n_new > 16 && (n_new != n_old || memcmp(nw, old, n_new)));
        tg_free(nw);
        tg_free(old);
    }
    remove_dir();
}

Test(robust, allocation_failure_in_a_writer_keeps_the_previous_file)
{
    make_dir("nomem");
    for (int i = 0; i < N_WRITERS; i++) {
        char path[600];
        size_t n_old;
        unsigned char *old = write_old(i, path, sizeof path, &n_old);
        uint64_t n;
        for (n = 1; n < 5000; n++) {
            tg_clear_error();
            tg__alloc_fail_after(n);
            tg_status st = writers[i].fn(path, 1);
            tg__alloc_fail_after(0);
            if (st == TG_OK) break;
            cr_assert_eq(st, TG_ERR_NOMEM, "%s, N=%llu: %s", writers[i].name,
                         (unsigned long long)n, tg_last_error());
            tt_assert_last_error("out of memory");
            assert_unchanged(path, old, n_old, writers[i].name);
        }
        cr_assert_lt(n, 5000, "%s never completed", writers[i].name);
        size_t n_new;
        unsigned char *nw = slurp(path, &n_new);
        cr_assert(n_new != n_old || memcmp(nw, old, n_new), "%s: not replaced", writers[i].name);
        tg_free(nw);
        tg_free(old);
    }
    remove_dir();
}

/* ---- limits ---- */

/* A file whose first bytes claim more than it has: the loaders must say so
 * before allocating anything (with every allocation failing, the answer is
 * still the format/limit error, not "out of memory"). */
Test(robust, oversized_claims_are_refused_before_allocating)
{
    make_dir("claims");
    char path[600];
    snprintf(path, sizeof path, "%s/f", dir);
    static const struct {
        const char *bytes;
        size_t      len;
        tg_status   status;
        const char *msg;
    } st_cases[] = {
        /* N = 100,000,001: over the 100 MB header limit */
        {"\x01\xe1\xf5\x05\0\0\0\0{}", 10, TG_ERR_LIMIT, "HeaderTooLarge"},
        /* N = 2^64-1 */
        {"\xff\xff\xff\xff\xff\xff\xff\xff{}", 10, TG_ERR_LIMIT, "HeaderTooLarge"},
        /* N = 50 MB, within the limit, past the end of a 10-byte file */
        {"\x80\xf0\xfa\x02\0\0\0\0{}", 10, TG_ERR_FORMAT, "InvalidHeaderLength"},
    };
    for (size_t i = 0; i < sizeof st_cases / sizeof *st_cases; i++) {
        write_bytes(path, st_cases[i].bytes, st_cases[i].len);
        tg_st_file *f = (tg_st_file *)1;
        tg__alloc_fail_after(1);
        tg_status st = tg_st_load(path, &f);
        tg__alloc_fail_after(0);
        cr_assert_eq(st, st_cases[i].status, "case %zu: %s", i, tg_last_error());
        cr_assert_null(f);
        tt_assert_last_error(st_cases[i].msg);
        f = (tg_st_file *)1;
        tg__alloc_fail_after(1);
        st = tg_st_parse(st_cases[i].bytes, st_cases[i].len, "m", &f);
        tg__alloc_fail_after(0);
        cr_assert_eq(st, st_cases[i].status, "case %zu (memory): %s", i, tg_last_error());
    }
    /* .npy: a v2 header length of 4 GiB - 1 in a 12-byte file */
    write_bytes(path, "\x93NUMPY\x02\x00\xff\xff\xff\xff", 12);
    tg_tensor *t = (tg_tensor *)1;
    tg__alloc_fail_after(1);
    tg_status st = tg_npy_load(path, &t);
    tg__alloc_fail_after(0);
    cr_assert_neq(st, TG_OK);
    cr_assert_neq(st, TG_ERR_NOMEM, "%s", tg_last_error());
    cr_assert_null(t);
    remove_dir();
}

/* Data sizes claimed by a header, far beyond the file: refused by comparing
 * sizes, not by trying to allocate 1 TiB (which under ASan aborts and
 * elsewhere reports out of memory). */
Test(robust, files_shorter_than_their_offsets)
{
    make_dir("short");
    char path[600];
    snprintf(path, sizeof path, "%s/f.safetensors", dir);
    const char *hdr = "{\"t\":{\"dtype\":\"F32\",\"shape\":[274877906944],"
                      "\"data_offsets\":[0,1099511627776]}}";
    size_t n = strlen(hdr);
    unsigned char b[256] = {0};
    b[0] = (unsigned char)n;
    memcpy(b + 8, hdr, n);
    write_bytes(path, b, 8 + n + 16);
    tg_st_file *f = (tg_st_file *)1;
    cr_assert_eq(tg_st_load(path, &f), TG_ERR_FORMAT, "%s", tg_last_error());
    tt_assert_last_error("MetadataIncompleteBuffer");
    cr_assert_null(f);
    /* a parameter store loading it fails the same way and stays unchanged */
    tg_params *ps = tg_params_new(TG_F32);
    tg_param *p = tg_params_add(ps, "t", 1, (int64_t[]){4});
    tg_init_constant(&p->value, 3.0);
    cr_assert_eq(tg_params_load(ps, path, TG_LOAD_ALLOW_MISSING | TG_LOAD_ALLOW_EXTRA),
                 TG_ERR_FORMAT);
    tt_assert_last_error(path);
    cr_assert_eq(((float *)p->value.data)[0], 3.0f);
    tg_params_free(ps);

    /* .npy: 2^38 float32 elements in a file of a few bytes */
    snprintf(path, sizeof path, "%s/f.npy", dir);
    const char *nh = "{'descr': '<f4', 'fortran_order': False, 'shape': (274877906944,), }";
    size_t nn = strlen(nh);
    unsigned char nb[256] = {0};
    memcpy(nb, "\x93NUMPY\x01\x00", 8);
    nb[8] = (unsigned char)nn;
    memcpy(nb + 10, nh, nn);
    write_bytes(path, nb, 10 + nn + 8);
    tg_tensor *t = (tg_tensor *)1;
    cr_assert_eq(tg_npy_load(path, &t), TG_ERR_FORMAT, "%s", tg_last_error());
    tt_assert_last_error("EOF: reading array data");
    cr_assert_null(t);
    remove_dir();
}

Test(robust, shape_products_that_overflow)
{
    int64_t big2[2] = {INT64_C(1) << 32, INT64_C(1) << 32};        /* 2^64 elements */
    int64_t big3[3] = {INT64_C(1) << 30, INT64_C(1) << 30, 64};   /* 2^66 */
    int64_t n;
    cr_assert_eq(tg_shape_numel(2, big2, &n), TG_ERR_LIMIT);
    cr_assert_eq(tg_shape_numel(3, big3, &n), TG_ERR_LIMIT);
    /* 2^59 elements fit int64 but not their bytes (x16) */
    cr_assert_eq(tg_shape_numel(1, (int64_t[]){INT64_C(1) << 60}, &n), TG_ERR_LIMIT);
    cr_assert_null(tg_tensor_new(TG_F64, 2, big2));
    tt_assert_last_error("overflows");

    tg_params *ps = tg_params_new(TG_F32);
    cr_assert_null(tg_params_add(ps, "w", 2, big2));
    tt_assert_last_error("w");
    tg_params_free(ps);

    /* builders: leaves, constants, reshape, repeat, causal masks */
    struct {
        const char *what;
        const char *msg;
    } cases[] = {
        {"input", "overflows"}, {"full", "overflows"}, {"reshape", "reshape"},
        {"repeat", "repeat"},   {"causal_mask", "causal_mask"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){4});
        tg_node *y = NULL;
        if (i == 0) y = tg_input(g, "big", TG_F32, 2, big2);
        if (i == 1) y = tg_full(g, 3, big3, 1.0);
        if (i == 2) y = tg_reshape(g, x, 2, big2);
        if (i == 3)
            y = tg_repeat(g, x, "a -> a b c", 2,
                          (tg_axis_len[]){{"b", INT64_C(1) << 31}, {"c", INT64_C(1) << 31}});
        if (i == 4) y = tg_causal_mask(g, INT64_C(1) << 32, INT64_C(1) << 32);
        cr_assert_null(y, "%s accepted an overflowing shape", cases[i].what);
        if (i == 0) tt_assert_graph_error(g, "input 'big': bad result shape");
        tt_assert_graph_error(g, cases[i].msg);
        tg_graph_free(g);
    }
}

/* A result that is representable but far too big to allocate: planning
 * reports out of memory (no crash), and the graph can be freed. */
Test(robust, too_big_to_allocate_is_an_error_at_plan_time)
{
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){4});
    tg_node *y = tg_repeat(g, x, "a -> a b c", 2,
                           (tg_axis_len[]){{"b", INT64_C(1) << 20}, {"c", INT64_C(1) << 20}});
    cr_assert_not_null(y, "%s", tg_graph_error(g));   /* 2^42 elements: 16 TiB */
    cr_assert_eq(tg_graph_forward(g), TG_ERR_NOMEM);
    tt_assert_last_error("out of memory");
    tg_graph_free(g);
}

static tg_status rank_forward(tg_node *n)
{
    (void)n;
    return TG_OK;
}
static const tg_op rank_op = {.name = "rank_op", .forward = rank_forward};

Test(robust, rank_above_the_maximum_is_refused_everywhere)
{
    int64_t s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, n;
    cr_assert_eq(tg_shape_numel(9, s9, &n), TG_ERR_LIMIT);
    cr_assert_eq(tg_shape_numel(-1, s9, &n), TG_ERR_LIMIT);
    cr_assert_null(tg_tensor_new(TG_F32, 9, s9));
    tt_assert_last_error("rank 9");
    tg_params *ps = tg_params_new(TG_F32);
    cr_assert_null(tg_params_add(ps, "w", 9, s9));
    tt_assert_last_error("rank 9");
    tg_params_free(ps);

    int64_t s8[8] = {1, 1, 1, 1, 1, 1, 1, 2};
    const char *const what[] = {"input",      "full",        "reshape",    "negative rank",
                                "rearrange",  "repeat",      "einsum",     "layer_norm"};
    const char *const msg[] = {"rank 9", "rank 9", "rank 9", "rank -1",
                               "at most 8", "at most 8", "maximum rank 8", "layer_norm"};
    for (size_t i = 0; i < sizeof what / sizeof *what; i++) {
        tg_graph *g = tg_graph_new(TG_F32);
        tg_node *x = tg_input(g, "x", TG_F32, 8, s8);
        cr_assert_not_null(x);
        tg_node *y = NULL;
        switch (i) {
        case 0: y = tg_input(g, "y", TG_F32, 9, s9); break;
        case 1: y = tg_full(g, 9, s9, 0.0); break;
        case 2: y = tg_reshape(g, x, 9, s9); break;
        case 3: y = tg_input(g, "y", TG_F32, -1, s9); break;
        case 4: y = tg_rearrange(g, x, "a b c d e f g h -> a b c d e f g h 1", 0, NULL); break;
        case 5:
            y = tg_repeat(g, x, "a b c d e f g h -> a b c d e f g h i", 1,
                          (tg_axis_len[]){{"i", 2}});
            break;
        case 6: {
            tg_node *v = tg_input(g, "v", TG_F32, 1, (int64_t[]){2});
            y = tg_einsum(g, "abcdefgh,i->abcdefghi", 2, (tg_node *[]){x, v});
            break;
        }
        case 7:
            y = tg_layer_norm(g, x, 9, s9, NULL, NULL, 1e-5);
            break;
        }
        cr_assert_null(y, "%s accepted rank 9", what[i]);
        tt_assert_graph_error(g, msg[i]);
        tg_graph_free(g);
    }

    /* files: .npy and safetensors with 9 dims */
    const char *nh = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }";
    size_t nn = strlen(nh);
    unsigned char nb[256] = {0};
    memcpy(nb, "\x93NUMPY\x01\x00", 8);
    nb[8] = (unsigned char)nn;
    memcpy(nb + 10, nh, nn);
    tg_tensor *t;
    cr_assert_eq(tg_npy_parse(nb, 10 + nn + 4, "r9.npy", &t), TG_ERR_LIMIT);
    tt_assert_last_error("more than 8 dims");
    const char *sh = "{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                     "\"data_offsets\":[0,4]}}";
    size_t sn = strlen(sh);
    unsigned char sb[256] = {0};
    sb[0] = (unsigned char)sn;
    memcpy(sb + 8, sh, sn);
    tg_st_file *f;
    cr_assert_eq(tg_st_parse(sb, 8 + sn + 4, "r9.safetensors", &f), TG_ERR_LIMIT);
    tt_assert_last_error("rank 9");

    /* op implementers: a node or saved buffer of rank 9 (engine/op.h) */
    tg_graph *g = tg_graph_new(TG_F32);
    tg_node *x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    cr_assert_null(tg_node_new(g, &rank_op, 1, &x, TG_F32, 9, s9));
    tt_assert_graph_error(g, "rank 9 is above the maximum rank 8");
    tg_graph_free(g);
    g = tg_graph_new(TG_F32);
    x = tg_input(g, "x", TG_F32, 1, (int64_t[]){2});
    tg_node *y = tg_node_new(g, &rank_op, 1, &x, TG_F32, 1, (int64_t[]){2});
    cr_assert_not_null(y);
    cr_assert_eq(tg_node_buffer(y, TG_F32, 9, s9), -1);
    tt_assert_graph_error(g, "rank_op: bad buffer shape");
    tg_graph_free(g);

    /* a layer's shape key (axial's shape, assa_paper's win_size) */
    tt_assert_layer_rejects("axial", (const char *[]){"shape=[1, 1, 1, 1, 1, 1, 1, 1, 1]"}, 1,
                            "axial: shape: expected at most 8 integers, got 9");
    tt_assert_layer_rejects("assa_paper", (const char *[]){"win_size=[1, 1, 1, 1, 1, 1, 1, 1, 1]"},
                            1, "win_size: expected at most 8 integers, got 9");

    /* an int-list value (a layer's shape key) holds at most TG_MAX_RANK items */
    tg_value v;
    cr_assert_eq(tg_value_parse("[1, 1, 1, 1, 1, 1, 1, 1, 1]", &v), TG_OK);
    int64_t out[TG_MAX_RANK];
    int cnt;
    cr_assert_neq(tg_value_as_int_list(&v, "shape", out, TG_MAX_RANK, &cnt), TG_OK);
    tt_assert_last_error("shape");
    tg_value_free(&v);
}

/* ---- the finite check on a layer graph ---- */

/* attention_layer (d_model 8, 2 heads, L = S = 3) on x [2, 3, 8], built in
 * graph g; the parameters are PyTorch-initialised in *ps. Optionally x goes
 * through a custom op first (see poison below). */
typedef struct nan_case {
    tg_graph  *g;
    tg_params *ps;
    tg_layer  *layer;
    tg_node   *x, *y;
} nan_case;

/* A custom op: identity, except that element 5 becomes NaN. Built in scope
 * "probe" ahead of the layer, like a user's own preprocessing op. */
static tg_status poison_forward(tg_node *n)
{
    tg_tensor_copy(&n->value, &n->in[0]->value);
    tg_tensor_set(&n->value, 5, NAN);
    return TG_OK;
}
static const tg_op poison_op = {.name = "poison", .forward = poison_forward};

/* With `poison`, the layer runs twice, y = layer(poison(layer(x))), the
 * poison op in scope "between": a NaN made mid-graph. */
static void nan_case_build(nan_case *c, bool poison)
{
    tg_config *cfg = tg_config_new();
    const char *sets[] = {"B=2", "L=3", "S=3", "d_model=8", "n_heads=2"};
    for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
        cr_assert_eq(tg_config_set(cfg, sets[i]), TG_OK);
    c->ps = tg_params_new(TG_F32);
    tg_rng rng;
    tg_rng_seed(&rng, 3);
    c->layer = tg_layer_new("attention_layer", cfg, c->ps, "attn", &rng);
    cr_assert_not_null(c->layer, "%s", tg_last_error());
    tg_config_free(cfg);
    c->g = tg_graph_new(TG_F32);
    c->x = tg_input(c->g, "x", TG_F32, 3, (int64_t[]){2, 3, 8});
    tt_randn((tg_tensor *)tg_node_value(c->x), 4);
    tg_layer_outputs out;
    cr_assert_eq(tg_layer_build(c->layer, c->g, &c->x, &out), TG_OK, "%s", tg_graph_error(c->g));
    if (poison) {
        tg_scope_push(c->g, "between");
        tg_node *p = tg_node_new(c->g, &poison_op, 1, &out.y, TG_F32, 3, (int64_t[]){2, 3, 8});
        tg_scope_pop(c->g);
        cr_assert_eq(tg_layer_build(c->layer, c->g, &p, &out), TG_OK, "%s",
                     tg_graph_error(c->g));
    }
    c->y = out.y;
    /* the check is off by default: NaN or not, forward succeeds */
    cr_assert_eq(tg_graph_forward(c->g), TG_OK, "%s", tg_last_error());
    tg_graph_set_check_finite(c->g, true);
    if (!poison) cr_assert_eq(tg_graph_forward(c->g), TG_OK, "%s", tg_last_error());
}

static void nan_case_free(nan_case *c)
{
    tg_graph_free(c->g);
    tg_layer_free(c->layer);
    tg_params_free(c->ps);
}

static float *param_data(nan_case *c, const char *name)
{
    tg_param *p = tg_params_find(c->ps, name);
    cr_assert_not_null(p, "%s", name);
    return p->value.data;
}

static void assert_fires(nan_case *c, const char *needle1, const char *needle2)
{
    cr_assert_eq(tg_graph_forward(c->g), TG_ERR_NUMERIC, "the check did not fire (%s)",
                 needle1);
    tt_assert_last_error(needle1);
    tt_assert_last_error(needle2);
}

Test(robust, finite_check_nan_in_an_input)
{
    nan_case c = {0};
    nan_case_build(&c, false);
    float *x = (float *)tg_node_value(c.x)->data;
    x[8] = NAN;   /* batch 0, position 1, feature 0 */
    /* the query projection is the first op to read x: its row 1 is all NaN */
    assert_fires(&c, "(linear 8->8) in attention_layer.query_projection produced NaN",
                 "at element 8 of shape [2, 3, 8]");
    x[8] = INFINITY;
    assert_fires(&c, "in attention_layer.query_projection produced", "Inf at element 8");
    x[8] = 0.5f;
    cr_assert_eq(tg_graph_forward(c.g), TG_OK, "%s", tg_last_error());
    nan_case_free(&c);
}

Test(robust, finite_check_nan_in_a_parameter)
{
    nan_case c = {0};
    nan_case_build(&c, false);
    /* value_projection.weight [8, 8]: row 2 feeds output feature 2 */
    float *w = param_data(&c, "attn.value_projection.weight");
    w[2 * 8 + 1] = NAN;
    assert_fires(&c, "(linear 8->8) in attention_layer.value_projection produced NaN",
                 "at element 2 of shape [2, 3, 8]");
    w[2 * 8 + 1] = 0.0f;
    /* a bias: +Inf in key_projection.bias[3] */
    float *b = param_data(&c, "attn.key_projection.bias");
    b[3] = INFINITY;
    assert_fires(&c, "(linear 8->8) in attention_layer.key_projection produced +Inf",
                 "at element 3 of shape [2, 3, 8]");
    b[3] = 0.0f;
    /* out_projection: the last op of the layer */
    float *wo = param_data(&c, "attn.out_projection.bias");
    wo[7] = -INFINITY;
    assert_fires(&c, "in attention_layer.out_projection produced -Inf", "at element 7");
    wo[7] = 0.0f;
    cr_assert_eq(tg_graph_forward(c.g), TG_OK, "%s", tg_last_error());
    nan_case_free(&c);
}

Test(robust, finite_check_nan_from_a_custom_op_mid_graph)
{
    nan_case c = {0};
    nan_case_build(&c, true);
    /* the second layer's ops all see the NaN too; the report names its source */
    assert_fires(&c, "(poison) in between produced NaN", "at element 5 of shape [2, 3, 8]");
    nan_case_free(&c);
}

/* Scores q.k overflow float32 inside the attention: the einsum of
 * inner_attention is the first op whose result is not finite (softmax
 * then makes NaN of it, but the report names the einsum). */
Test(robust, finite_check_overflow_inside_the_attention_scores)
{
    nan_case c = {0};
    nan_case_build(&c, false);
    float *bq = param_data(&c, "attn.query_projection.bias");
    float *bk = param_data(&c, "attn.key_projection.bias");
    for (int i = 0; i < 8; i++) bq[i] = 1e20f, bk[i] = 1e20f;   /* q.k ~ 4e40 > FLT_MAX */
    /* the scores are inside the fused attention op (sdpa): inf - inf gives NaN there */
    assert_fires(&c, "(sdpa", "in attention_layer.inner_attention produced NaN");
    nan_case_free(&c);
}
