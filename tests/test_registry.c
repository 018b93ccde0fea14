/*
 * test_registry.c - the op-completeness test: every op of the registry
 * (ops/registry.h) has
 *   - a backward, or says why it has none (no_grad),
 *   - a gradcheck case (its row's `check`), run here in float64,
 *   - a PyTorch fixture: tests/fixtures/ops/<name>/case.txt (below), run here
 *     through the library's by-name call (tg_op_call_init, tg_op_build),
 *   - a bad-input case (its row's `bad`), which must fail naming the op, an
 *     attribute or an input; and every required attribute, left out, is an
 *     error naming it.
 * A gap fails naming the op and what is missing. Also: the man page make
 * builds (build/tgraph.1) lists exactly what `tgraph op --man` prints.
 *
 * tests/fixtures/ops/<name>/case.txt, one item a line ('#' comments):
 *     fixture DIR       the .npy files are in tests/fixtures/DIR (default: here)
 *     attr KEY=VALUE    an attribute (the value may hold spaces)
 *     none REASON       no PyTorch fixture can exist (dropout's RNG)
 * The files: in0.npy... (inputs in order), out0.npy... (outputs), and for the
 * backward dout0.npy... (one per float output) and grad<i>.npy for every input
 * i that takes a gradient, compared at atol 1e-6 / rtol 1e-5.
 */
#include "testutil.h"

#include <criterion/parameterized.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_OPS 128

static int op_indices(int **out)
{
    static int idx[MAX_OPS];
    int n = tg_op_count();
    cr_assert(n <= MAX_OPS, "more than %d ops", MAX_OPS);
    for (int i = 0; i < n; i++) idx[i] = i;
    *out = idx;
    return n;
}

/* ---- a case spec: "dim=1;[3,4];i64[3,2]" ---- */

typedef struct {
    tg_config *cfg;
    int        n_in;
    int        rank[TG_OP_MAX_INPUTS];
    int64_t    shape[TG_OP_MAX_INPUTS][TG_MAX_RANK];
    int        dtype[TG_OP_MAX_INPUTS];   /* -1: from the input's kind */
} spec;

static void spec_parse(const char *op, const char *text, spec *s)
{
    memset(s, 0, sizeof *s);
    s->cfg = tg_config_new();
    cr_assert(s->cfg);
    size_t len = strlen(text);
    char *buf = malloc(len + 1);
    cr_assert(buf);
    memcpy(buf, text, len + 1);
    for (char *item = strtok(buf, ";"); item; item = strtok(NULL, ";")) {
        while (*item == ' ') item++;
        int dt = -1;
        char *br = strchr(item, '[');
        if (br && (br == item || !strchr(item, '='))) {
            if (!strncmp(item, "i64[", 4)) dt = TG_I64;
            else if (!strncmp(item, "f64[", 4)) dt = TG_F64;
            else if (!strncmp(item, "bool[", 5)) dt = TG_BOOL;
            else cr_assert(br == item, "%s: bad shape item '%s'", op, item);
            tg_value v;
            int n = 0;
            cr_assert(tg_value_parse(br, &v) == TG_OK, "%s: shape '%s': %s", op, item,
                      tg_last_error());
            cr_assert(tg_value_as_int_list(&v, "shape", s->shape[s->n_in], TG_MAX_RANK, &n) ==
                      TG_OK, "%s: shape '%s': %s", op, item, tg_last_error());
            tg_value_free(&v);
            cr_assert(s->n_in < TG_OP_MAX_INPUTS);
            s->rank[s->n_in] = n;
            s->dtype[s->n_in++] = dt;
        } else {
            cr_assert(tg_config_set(s->cfg, item) == TG_OK, "%s: attribute '%s': %s", op, item,
                      tg_last_error());
        }
    }
    free(buf);
}

static bool kind_takes(tg_op_input_kind k, tg_dtype dt)
{
    switch (k) {
    case TG_OP_IN_INDEX: return dt == TG_I64;
    case TG_OP_IN_MASK: return dt == TG_BOOL;
    case TG_OP_IN_TARGET: return dt == TG_I64 || tg_dtype_is_float(dt);
    case TG_OP_IN_ANY: return true;
    default: return tg_dtype_is_float(dt);
    }
}

/* The spec's input tensors: drawn by the registry's rules where the dtype fits
 * the input (float and bool first, then int64 indices, which read them), zeros
 * where it does not (a bad-input case). Returns false with tg_last_error() set
 * when a rule refuses. */
static bool spec_tensors(const tg_op_call *c, const spec *s, tg_tensor **t, uint64_t seed)
{
    tg_rng rng;
    tg_rng_seed(&rng, seed);
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < s->n_in; i++) {
            tg_dtype dt = s->dtype[i] >= 0 ? (tg_dtype)s->dtype[i] : tg_op_input_dtype(c->op, i);
            if ((dt == TG_I64) != (pass == 1)) continue;
            t[i] = tg_tensor_new(dt, s->rank[i], s->shape[i]);
            cr_assert(t[i], "%s: %s", c->op->name, tg_last_error());
            const tg_op_input *in = tg_op_input_at(c->op, i);
            if (in && kind_takes(in->kind, dt) &&
                tg_op_random_input(c, i, (const tg_tensor *const *)t, t[i], &rng))
                return false;
        }
    return true;
}

static void free_tensors(tg_tensor **t, int n)
{
    for (int i = 0; i < n; i++) tg_tensor_free(t[i]);
}

/* ---- 1. completeness: every op has all four, or the test names the gap ---- */

static bool case_file(const char *op, char *path, size_t len)
{
    snprintf(path, len, "%s/ops/%s/case.txt", TT_FIXTURES, op);
    return access(path, R_OK) == 0;
}

Test(registry, every_op_is_complete)
{
    char missing[8192] = "", path[512];
    size_t at = 0;
    int n = tg_op_count();
    cr_assert(n >= 41, "only %d ops", n);
#define GAP(...) (at += (size_t)snprintf(missing + at, at < sizeof missing ? sizeof missing - at : 0, \
                                         __VA_ARGS__))
    for (int i = 0; i < n; i++) {
        const tg_op_def *op = tg_op_at(i);
        cr_assert(op && op->name && op->summary && op->build && op->example, "op %d: incomplete row", i);
        cr_assert(tg_op_find(op->name) == op, "%s: registered twice", op->name);
        if (!op->no_grad && !tg_op_has_backward(op))
            GAP("  %s: no backward (give its descriptor a backward, or no_grad a reason)\n",
                op->name);
        if (!op->no_grad && !op->check) GAP("  %s: no gradcheck case (its row's check)\n", op->name);
        if (!op->bad) GAP("  %s: no bad-input case (its row's bad)\n", op->name);
        if (!case_file(op->name, path, sizeof path))
            GAP("  %s: no PyTorch fixture (%s)\n", op->name, path);
        for (int k = 0; k < TG_OP_MAX_ATTRS && op->attrs[k].name; k++)
            if (!op->attrs[k].doc) GAP("  %s: attribute %s has no doc\n", op->name, op->attrs[k].name);
    }
#undef GAP
    cr_assert(at == 0, "ops missing what every op needs:\n%s", missing);
}

/* ---- 2. gradcheck, from the row's case ---- */

ParameterizedTestParameters(registry, gradcheck)
{
    int *idx;
    int n = op_indices(&idx);
    return cr_make_param_array(int, idx, n);
}

ParameterizedTest(int *i, registry, gradcheck)
{
    const tg_op_def *op = tg_op_at(*i);
    if (op->no_grad || !op->check) cr_skip_test("%s: no gradient (%s)", op->name,
                                                op->no_grad ? op->no_grad : "no case");
    spec s;
    tg_op_call call;
    tg_tensor *t[TG_OP_MAX_INPUTS] = {0};
    tg_node *in[TG_OP_MAX_INPUTS] = {0}, *out[TG_OP_MAX_OUTPUTS] = {0}, *flat[TG_OP_MAX_OUTPUTS];
    int n_out = 0, n_fo = 0;
    spec_parse(op->name, op->check, &s);
    cr_assert(tg_op_call_init(&call, op, s.cfg) == TG_OK, "%s: %s", op->name, tg_last_error());
    cr_assert(tg_op_check_count(op, s.n_in) == TG_OK, "%s: %s", op->name, tg_last_error());
    cr_assert(spec_tensors(&call, &s, t, 1), "%s: %s", op->name, tg_last_error());
    tg_graph *g = tg_graph_new(TG_F64);
    cr_assert(tg_op_make_inputs(g, op, t, s.n_in, true, in) == TG_OK, "%s: %s", op->name,
              tg_last_error());
    cr_assert(tg_op_build(g, &call, in, s.n_in, out, TG_OP_MAX_OUTPUTS, &n_out) == TG_OK,
              "%s: %s", op->name, tg_graph_error(g));
    tg_node *y = NULL;
    for (int j = 0; j < n_out; j++)
        if (tg_dtype_is_float(tg_node_value(out[j])->dtype)) {
            y = out[j];
            flat[n_fo++] = tg_reshape(g, out[j], 1, (int64_t[]){-1});
        }
    if (n_fo > 1) y = tg_concat(g, n_fo, flat, 0);
    cr_assert(y, "%s: no float output to check (%s)", op->name, tg_graph_error(g));
    cr_assert(tt_gradcheck(g, y, 7) > 0, "%s: gradcheck checked nothing", op->name);
    tg_graph_free(g);
    free_tensors(t, s.n_in);
    tg_op_call_free(&call);
    tg_config_free(s.cfg);
}

/* ---- 3. the PyTorch fixture, through the by-name call ---- */

typedef struct {
    char       dir[512];    /* under TT_FIXTURES */
    tg_config *cfg;
    bool       none;
} fixture_case;

static void read_case(const char *op, fixture_case *fc)
{
    char path[512], line[4096];
    memset(fc, 0, sizeof *fc);
    snprintf(fc->dir, sizeof fc->dir, "ops/%s", op);
    fc->cfg = tg_config_new();
    cr_assert(case_file(op, path, sizeof path), "%s: no %s", op, path);
    FILE *f = fopen(path, "r");
    cr_assert(f, "%s: %s", path, strerror(errno));
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (!line[0] || line[0] == '#') continue;
        if (!strncmp(line, "fixture ", 8)) snprintf(fc->dir, sizeof fc->dir, "%.500s", line + 8);
        else if (!strncmp(line, "attr ", 5))
            cr_assert(tg_config_set(fc->cfg, line + 5) == TG_OK, "%s: %s: %s", path, line,
                      tg_last_error());
        else if (!strncmp(line, "none ", 5)) fc->none = true;
        else cr_assert(false, "%s: unknown line '%s'", path, line);
    }
    fclose(f);
}

ParameterizedTestParameters(registry, fixture)
{
    int *idx;
    int n = op_indices(&idx);
    return cr_make_param_array(int, idx, n);
}

ParameterizedTest(int *i, registry, fixture)
{
    const tg_op_def *op = tg_op_at(*i);
    char path[512], name[64], what[1024];
    if (!case_file(op->name, path, sizeof path)) cr_skip_test("%s: no fixture", op->name);
    fixture_case fc;
    read_case(op->name, &fc);
    if (fc.none) {
        tg_config_free(fc.cfg);
        cr_skip_test("%s: no PyTorch fixture possible (%s)", op->name, path);
    }
    tg_tensor *t[TG_OP_MAX_INPUTS] = {0}, *dy[TG_OP_MAX_OUTPUTS] = {0};
    int n_in = 0;
    tg_dtype dt = TG_F32;
    for (; n_in < TG_OP_MAX_INPUTS; n_in++) {
        snprintf(name, sizeof name, "in%d.npy", n_in);
        if (!tt_exists(fc.dir, name)) break;
        t[n_in] = tt_load(fc.dir, name);
        if (t[n_in]->dtype == TG_F64) dt = TG_F64;
    }
    bool grads = tt_exists(fc.dir, "dout0.npy");
    tg_op_call call;
    cr_assert(tg_op_call_init(&call, op, fc.cfg) == TG_OK, "%s: %s", op->name, tg_last_error());
    cr_assert(tg_op_check_count(op, n_in) == TG_OK, "%s: %s", op->name, tg_last_error());
    for (int k = 0; k < n_in; k++)
        cr_assert(tg_op_check_input(op, k, t[k]) == TG_OK, "%s: in%d: %s", op->name, k,
                  tg_last_error());
    tg_graph *g = tg_graph_new(dt);
    if (!grads) tg_graph_set_grad_enabled(g, false);
    tg_node *in[TG_OP_MAX_INPUTS] = {0}, *out[TG_OP_MAX_OUTPUTS] = {0}, *L = NULL;
    int n_out = 0;
    cr_assert(tg_op_make_inputs(g, op, t, n_in, grads, in) == TG_OK, "%s: %s", op->name,
              tg_last_error());
    cr_assert(tg_op_build(g, &call, in, n_in, out, TG_OP_MAX_OUTPUTS, &n_out) == TG_OK, "%s: %s",
              op->name, tg_graph_error(g));
    for (int j = 0; j < n_out; j++) tg_node_keep(out[j]);
    int n_dy = 0;
    if (grads) {   /* L = sum_j sum(out_j * dy_j) over the float outputs */
        for (int j = 0; j < n_out; j++) {
            if (!tg_dtype_is_float(tg_node_value(out[j])->dtype)) continue;
            snprintf(name, sizeof name, "dout%d.npy", n_dy);
            tg_tensor *raw = tt_load(fc.dir, name);
            dy[n_dy] = tg_tensor_new(dt, raw->rank, raw->shape);
            cr_assert(dy[n_dy] && tg_tensor_copy(dy[n_dy], raw) == TG_OK);
            tg_tensor_free(raw);
            tg_node *term = tg_sum(g, tg_mul(g, out[j], tg_constant(g, name, dy[n_dy])), NULL, 0,
                                   false);
            L = L ? tg_add(g, L, term) : term;
            n_dy++;
        }
        cr_assert(L, "%s: %s", op->name, tg_graph_error(g));
    }
    cr_assert(tg_graph_forward(g) == TG_OK, "%s: %s", op->name, tg_last_error());
    for (int j = 0; j < n_out; j++) {
        snprintf(name, sizeof name, "out%d.npy", j);
        tg_tensor *want = tt_load(fc.dir, name);
        snprintf(what, sizeof what, "%s (%s) %s", op->name, fc.dir, name);
        tt_assert_close(tg_node_value(out[j]), want, 1e-6, 1e-5, what);
        tg_tensor_free(want);
    }
    snprintf(name, sizeof name, "out%d.npy", n_out);
    cr_assert(!tt_exists(fc.dir, name), "%s: the fixture has more outputs than %d", op->name,
              n_out);
    if (grads) {
        cr_assert(tg_graph_backward(g, L, NULL) == TG_OK, "%s: %s", op->name, tg_last_error());
        int compared = 0;
        for (int k = 0; k < n_in; k++) {
            snprintf(name, sizeof name, "grad%d.npy", k);
            if (!tt_exists(fc.dir, name)) continue;
            tg_tensor *want = tt_load(fc.dir, name);
            const tg_tensor *got = tg_node_grad(in[k]);
            cr_assert(got, "%s: input %d takes no gradient, the fixture has %s", op->name, k, name);
            snprintf(what, sizeof what, "%s (%s) %s", op->name, fc.dir, name);
            tt_assert_close(got, want, 1e-6, 1e-5, what);
            tg_tensor_free(want);
            compared++;
        }
        cr_assert(compared > 0, "%s: dout0.npy but no grad<i>.npy in %s", op->name, fc.dir);
    }
    tg_graph_free(g);
    free_tensors(t, n_in);
    free_tensors(dy, n_dy);
    tg_op_call_free(&call);
    tg_config_free(fc.cfg);
}

/* ---- 4. bad input: the row's case, and every required attribute left out ---- */

/* Does msg name the op, or else the input or attribute at fault? */
static bool names_it(const char *msg, const tg_op_def *op)
{
    if (strstr(msg, op->name)) return true;
    for (int k = 0; k < 6 && op->inputs[k].name; k++)
        if (strstr(msg, op->inputs[k].name)) return true;
    for (int k = 0; k < TG_OP_MAX_ATTRS && op->attrs[k].name; k++)
        if (strstr(msg, op->attrs[k].name)) return true;
    return false;
}

/* The stage at which the bad case failed, and its message, or NULL if it ran. */
static const char *run_bad(const tg_op_def *op, char *msg, size_t len)
{
    spec s;
    tg_op_call call;
    tg_tensor *t[TG_OP_MAX_INPUTS] = {0};
    tg_node *in[TG_OP_MAX_INPUTS] = {0}, *out[TG_OP_MAX_OUTPUTS] = {0};
    tg_graph *g = NULL;
    const char *stage = NULL;
    int n_out = 0;
    spec_parse(op->name, op->bad, &s);
    if (tg_op_call_init(&call, op, s.cfg)) {
        snprintf(msg, len, "%s", tg_last_error());
        tg_config_free(s.cfg);
        return "attributes";
    }
    if (tg_op_check_count(op, s.n_in)) {
        stage = "input count";
    } else if (!spec_tensors(&call, &s, t, 3)) {
        stage = "input generation";
    } else {
        for (int k = 0; k < s.n_in && !stage; k++)
            if (tg_op_check_input(op, k, t[k])) stage = "input dtype";
    }
    if (stage) {
        snprintf(msg, len, "%s", tg_last_error());
    } else {
        g = tg_graph_new(TG_F64);
        if (tg_op_make_inputs(g, op, t, s.n_in, true, in)) {
            stage = "inputs";
            snprintf(msg, len, "%s", tg_last_error());
        } else if (tg_op_build(g, &call, in, s.n_in, out, TG_OP_MAX_OUTPUTS, &n_out)) {
            stage = "build";
            snprintf(msg, len, "%s", tg_graph_error(g));
        } else if (tg_graph_forward(g)) {
            stage = "forward";
            snprintf(msg, len, "%s", tg_last_error());
        }
    }
    tg_graph_free(g);
    free_tensors(t, s.n_in);
    tg_op_call_free(&call);
    tg_config_free(s.cfg);
    return stage;
}

ParameterizedTestParameters(registry, bad_input)
{
    int *idx;
    int n = op_indices(&idx);
    return cr_make_param_array(int, idx, n);
}

ParameterizedTest(int *i, registry, bad_input)
{
    const tg_op_def *op = tg_op_at(*i);
    char msg[2048];
    cr_assert(op->bad, "%s: no bad-input case", op->name);
    const char *stage = run_bad(op, msg, sizeof msg);
    cr_assert(stage, "%s: its bad-input case '%s' did not fail", op->name, op->bad);
    cr_assert(msg[0] && names_it(msg, op), "%s: the %s error of '%s' names neither the op nor an "
              "input or attribute: %s", op->name, stage, op->bad, msg);
    /* every required attribute, left out, is an error naming the op and it */
    for (int k = 0; k < TG_OP_MAX_ATTRS && op->attrs[k].name; k++) {
        if (op->attrs[k].def) continue;
        tg_config *cfg = tg_config_new();
        for (int m = 0; m < TG_OP_MAX_ATTRS && op->attrs[m].name; m++) {
            if (m == k || op->attrs[m].def) continue;
            char item[128];
            const char *v = op->attrs[m].type == TG_OP_STRING ? "x"
                          : op->attrs[m].type == TG_OP_INT_LIST ? "[1]"
                          : op->attrs[m].type == TG_OP_BOOL ? "true" : "1";
            snprintf(item, sizeof item, "%s=%s", op->attrs[m].name, v);
            cr_assert(tg_config_set(cfg, item) == TG_OK);
        }
        tg_op_call call;
        cr_assert(tg_op_call_init(&call, op, cfg) != TG_OK, "%s: accepted a call without %s",
                  op->name, op->attrs[k].name);
        char want[160];
        snprintf(want, sizeof want, "%s: missing required attribute '%s'", op->name,
                 op->attrs[k].name);
        cr_assert(strstr(tg_last_error(), want), "%s: '%s' lacks \"%s\"", op->name,
                  tg_last_error(), want);
        tg_config_free(cfg);
    }
    /* an unknown attribute names the op and it */
    tg_config *cfg = tg_config_new();
    cr_assert(tg_config_set(cfg, "zz_not_an_attribute=x") == TG_OK);
    tg_op_call call;
    cr_assert(tg_op_call_init(&call, op, cfg) != TG_OK, "%s: accepted zz_not_an_attribute",
              op->name);
    cr_assert(strstr(tg_last_error(), op->name) && strstr(tg_last_error(), "zz_not_an_attribute"),
              "%s: %s", op->name, tg_last_error());
    tg_config_free(cfg);
}

/* ---- 5. the man page's op list is the registry's ---- */

/* The directory of this test binary (build/ or build-asan/: tgraph and tgraph.1 are there). */
static void build_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    cr_assert(n > 0, "readlink: %s", strerror(errno));
    buf[n] = '\0';
    *strrchr(buf, '/') = '\0';
}

/* stdout of `tgraph op FLAG` (the tool beside this test binary), malloc'd. */
static char *tool_output(const char *flag)
{
    char dir[1024], cmd[1200];
    build_dir(dir, sizeof dir);
    snprintf(cmd, sizeof cmd, "'%s/tgraph' op %s", dir, flag);
    FILE *p = popen(cmd, "r");
    cr_assert(p, "%s: %s", cmd, strerror(errno));
    size_t cap = 1 << 16, at = 0, got;
    char *buf = malloc(cap);
    cr_assert(buf);
    while ((got = fread(buf + at, 1, cap - at - 1, p)) > 0) {
        at += got;
        if (at + 1 == cap) cr_assert((buf = realloc(buf, cap *= 2)));
    }
    buf[at] = '\0';
    cr_assert(pclose(p) == 0, "%s failed", cmd);
    return buf;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s: %s (make builds it)", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* make puts `tgraph op --man` at tools/tgraph.1's @OPS@ line into build/tgraph.1,
 * which make install installs: the page lists every op, and only the registry's. */
Test(registry, man_page_lists_every_op)
{
    char dir[1024], path[1100];
    char *man = tool_output("--man"), *md = tool_output("--markdown");
    for (int i = 0; i < tg_op_count(); i++) {
        char head[96], row[96];
        snprintf(head, sizeof head, "\n.B %s\n", tg_op_at(i)->name);
        snprintf(row, sizeof row, "| `%s` |", tg_op_at(i)->name);
        cr_assert(strstr(man, head), "tgraph op --man lacks %s", tg_op_at(i)->name);
        cr_assert(strstr(md, row), "tgraph op --markdown lacks %s", tg_op_at(i)->name);
    }
    char *src = slurp("tools/tgraph.1");
    cr_assert(strstr(src, "\n.\\\" @OPS@") && !strstr(src, "\n.SH OPS"),
              "tools/tgraph.1 should hold the @OPS@ line, not an op list");
    build_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/tgraph.1", dir);
    char *page = slurp(path);
    const char *at = strstr(page, ".SH OPS\n");
    cr_assert(at && !strncmp(at, man, strlen(man)) && !strncmp(at + strlen(man), ".SH EXAMPLES", 12),
              "%s: its OPS section is not tgraph op --man (make rebuilds it)", path);
    free(src);
    free(page);
    free(man);
    free(md);
}

/* ---- a new op family is wired in, or this names the line ----
 * A family is an ops/NAME.c that defines tg__NAME_ops[] (its registry rows).
 * Adding one means its files in ops/ (NAME.c, and NAME.h ending with its
 * TG__OP_FAMILY(NAME) line) and one #include "NAME.h" in ops/ops.h, the
 * list ops/registry.c reads; everything else (tgraph op, its help, the man
 * page, the checks above) follows from the rows. */

static char *slurp_source(const char *rel)
{
    char path[256];
    snprintf(path, sizeof path, "%s/../../%s", TT_FIXTURES, rel);
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    static char buf[1 << 17];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *s = malloc(n + 1);
    cr_assert_not_null(s);
    memcpy(s, buf, n + 1);
    return s;
}

Test(registry, every_op_family_is_listed_and_its_header_in_the_umbrella)
{
    char *umbrella = slurp_source("ops/ops.h");
    cr_assert(umbrella, "cannot read ops/ops.h (run from the repository root)");
    char cmd[512];
    snprintf(cmd, sizeof cmd, "cd %s/../.. && grep -l '^const tg_op_def tg__[a-z_0-9]*_ops\\[\\]' "
             "ops/*.c", TT_FIXTURES);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char line[256];
    int families = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = '\0';
        char name[128], want[200];
        cr_assert(sscanf(line, "ops/%127[a-z_0-9].c", name) == 1, "%s", line);
        snprintf(want, sizeof want, "ops/%s.h", name);
        char *hdr = slurp_source(want);
        cr_expect_not_null(hdr, "ops/%s.c defines tg__%s_ops[] but there is no ops/%s.h", name,
                           name, name);
        if (hdr) {
            snprintf(want, sizeof want, "\n#ifdef TG__OP_FAMILY\nTG__OP_FAMILY(%s)\n#endif\n",
                     name);
            cr_expect_not_null(strstr(hdr, want), "ops/%s.h does not end with its registry line "
                               "(#ifdef TG__OP_FAMILY / TG__OP_FAMILY(%s) / #endif)", name, name);
            free(hdr);
        }
        snprintf(want, sizeof want, "\n#include \"%s.h\"\n", name);
        cr_expect_not_null(strstr(umbrella, want), "ops/%s.c defines tg__%s_ops[] but ops/ops.h "
                           "(the list of op families) has no line #include \"%s.h\"", name, name,
                           name);
        families++;
    }
    pclose(p);
    cr_assert_geq(families, 15, "found %d op families in ops/*.c", families);
    int op_count = 0;
    for (int i = 0; i < tg_op_count(); i++) op_count += tg_op_at(i) != NULL;
    cr_assert_gt(op_count, families, "the registry has %d ops for %d families", op_count,
                 families);
    free(umbrella);
}
