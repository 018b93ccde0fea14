#!/bin/sh
# gen_null_calls.sh - the NULL-argument cases of the public C API, generated
# from the public headers as they are installed (build/include/tgraph/*.h).
#
#   sh tests/gen_null_calls.sh build/include/tgraph > build/tests/gen_null_calls.c
#
# For every function prototype in the headers that has a pointer parameter it
# emits one wrapper per pointer parameter, calling the function with that
# argument NULL and every other argument a valid-looking value (the table
# `valid()` below: a fresh graph with an input node, a small tensor, a store
# with one parameter, small numbers, the string "x"), plus one wrapper with
# every pointer NULL. For every tensor argument (tg_tensor *, and arrays of
# them that the function only reads) it also emits one wrapper per kind of bad
# tensor in tc_ctx.bad (rank 99, data NULL, numel not the shape's product),
# every other argument valid: the shared tensor check must refuse each.
# tests/test_capi.c runs each wrapper in its own process (Criterion) and
# checks: no signal, and an error reported (see null_calls.h).
# A new public function gets its cases by being declared in a public header.
#
# What it is not: a C parser. It reads declarations as tgraph's headers write
# them (one prototype per statement, no macros in prototypes). Anything else
# that is neither a prototype, a typedef, a type definition nor an extern
# variable makes it fail, naming the statement: it never skips silently.
set -eu
dir=${1:?usage: gen_null_calls.sh INCLUDE_DIR}
ls "$dir"/*.h > /dev/null

# Arguments that may legitimately be NULL: the case still runs (no signal
# allowed) but need not report an error. One line each:
#   function (an awk regex, anchored)   argument   reason
allow='
tg_linear                   bias            no bias (nn.Linear(bias=False))
tg_layer_norm               weight          elementwise_affine=False
tg_layer_norm               bias            elementwise_affine=False or bias=False
tg_cross_entropy            weight          no class weights
tg_full_attention           attn_mask       no mask
tg_(full_attention|attention_layer_build|assa_topk_build|assa_paper_build) attn  attention weights not wanted
tg_attention_layer_build    attn_mask       no mask
tg_assa_paper_build         mask            no mask
tg_topk                     indices         the indices not wanted
tg_graph_dot(_save)?        opts            defaults
tg_gradcheck                opts            defaults
tg_svg_heatmap              opts            defaults
tg_svg_lines                (title|xlabel|ylabel) no label
tg_checkpoint_save          o               parameters only, no optimizer
.*_init                     (prefix|rng)    no name prefix / parameters left at zero
tg_layer_new                (prefix|rng)    no name prefix / parameters left at zero
tg_layernorm_mod_init_bias  prefix          no name prefix
tg_name_join                prefix          no prefix
tg_config_check_unused      (c|context|known) a NULL config has no unused keys; no context / no list of known keys
tg_(input|constant)         name            an unnamed leaf ("input", "constant")
tg_graph_error              g               returns the message "graph is NULL"
tg_graph_strdup             s               copies ""
tg_builder_check            op              only names the op in messages
tg_value_as_[a-z_]+         key             only names the value in messages
tg_set_error                fmt             returns st as given; the message says fmt is NULL
tg_shape_str                shape           writes "[?]" and returns buf (it sits in printf arguments)
tg_parallel_for             ctx             handed to fn as it is
tg_windows_fill             y               no targets wanted
tg_layer_(new|read_config)  cfg             no settings: every key at its default
tg_(st_count|st_meta_count|config_count|config_key) (f|c) a NULL file or config reads as empty (0 / NULL)
tg_keys_resolve             (cfg|context|noun) no settings: every default; no context ("config") / noun ("key")
tg_op_call_init             cfg             no attributes given: every default (a missing required one is then the error)
tg_value_format             (v|buf)         prints "<none>" for no value; a NULL buffer measures (snprintf)
tg_dataset_column_name      (d|buf)         no data set: "column N"; no buffer: returns "" (it sits in printf arguments)
tg_tensor_check(_shape)?    what            messages start "tensor: "
'

cat "$dir"/*.h | awk -v allow="$allow" '
function fail(msg) { print "gen_null_calls.sh: " msg > "/dev/stderr"; failed = 1; exit 1 }
function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }

# ---- reading: drop the preprocessor, the C++ guard and the op families registry
# lines (ops/ops.h), keep the rest as one text ----

BEGIN { text = ""; cxx = 0; cont = 0 }
{
    line = $0
    if (cont) { cont = (line ~ /\\$/); next }
    if (line ~ /^[ \t]*#[ \t]*ifdef[ \t]+(__cplusplus|TG__OP_FAMILY)/) { cxx = 1; next }
    if (cxx) { if (line ~ /^[ \t]*#[ \t]*endif/) cxx = 0; next }
    if (line ~ /^[ \t]*#/) { cont = (line ~ /\\$/); next }
    text = text line "\n"
}

END {
    if (failed) exit 1
    # comments
    out = ""
    for (;;) {
        i = index(text, "/*"); i2 = index(text, "//")
        if (!i && !i2) break
        line_comment = (i2 && (!i || i2 < i))
        if (line_comment) i = i2
        out = out substr(text, 1, i - 1) " "
        rest = substr(text, i + 2)
        j = index(rest, line_comment ? "\n" : "*/")
        if (!j) fail("unterminated comment")
        text = substr(rest, j + (line_comment ? 1 : 2))
    }
    text = out text
    gsub(/\n/, " ", text)
    gsub(/[ \t]+/, " ", text)
    # function bodies (static inline helpers) end their statement
    while (match(text, /\) ?\{[^{}]*\}/)) text = substr(text, 1, RSTART) ";" substr(text, RSTART + RLENGTH)
    # type bodies become a BODY mark, innermost first
    while (match(text, /\{[^{}]*\}/)) text = substr(text, 1, RSTART - 1) " BODY " substr(text, RSTART + RLENGTH)

    n_stmt = split(text, stmts, ";")
    # pass 1: the types
    for (s = 1; s <= n_stmt; s++) {
        st = trim(stmts[s])
        gsub(/ +/, " ", st)
        if (st ~ /^typedef /) {
            if (match(st, /\( ?\* ?[A-Za-z_][A-Za-z0-9_]* ?\)/)) {
                nm = substr(st, RSTART, RLENGTH); gsub(/[^A-Za-z0-9_]/, "", nm)
                fnptr[nm] = 1
                continue
            }
            k = split(st, w, " "); nm = w[k]
            if (w[2] == "enum") enumt[nm] = 1
            else if (w[2] == "struct" || w[2] == "union") {
                structt[nm] = 1
                if (st ~ / BODY /) { complete[nm] = 1; complete[w[3]] = 1 }
                tagof[nm] = w[3]
            } else scalar_alias[nm] = 1
        } else if (st ~ /^(struct|union) [A-Za-z_0-9]+ BODY$/) {
            split(st, w, " "); complete[w[2]] = 1
        }
    }
    for (nm in tagof) if (complete[tagof[nm]]) complete[nm] = 1

    n_allow = split(allow, al, "\n")
    print "/* Generated by tests/gen_null_calls.sh from the public headers: do not edit. */"
    print "#include <stddef.h>"
    print "#include <stdio.h>"
    print "#include \"tgraph.h\""
    print "#include \"null_calls.h\""
    print ""
    ncase = 0; nfun = 0
    for (s = 1; s <= n_stmt; s++) {
        st = trim(stmts[s])
        gsub(/ +/, " ", st)
        sub(/ ?__attribute__.*$/, "", st)
        if (st == "" || st ~ /^typedef / || st ~ /^static / || st ~ /^extern / ||
            st ~ /^(struct|union|enum) [A-Za-z_0-9]+$/ ||
            st ~ /^(struct|union|enum) [A-Za-z_0-9]+ BODY$/ || st ~ /^enum [A-Za-z_0-9]+ BODY$/ ||
            st ~ /^enum BODY$/)
            continue
        if (!match(st, /[A-Za-z_][A-Za-z0-9_]* ?\(/)) fail("cannot parse declaration: " st)
        ret = trim(substr(st, 1, RSTART - 1))
        fn = substr(st, RSTART, RLENGTH); sub(/ ?\($/, "", fn)
        rest = substr(st, RSTART + RLENGTH)
        if (ret == "" || ret ~ /[()]/ || fn !~ /^tg_/ || rest !~ /\) ?$/)
            fail("cannot parse declaration: " st)
        sub(/ ?\) ?$/, "", rest)
        # split the parameters at top-level commas
        np = 0; depth = 0; cur = ""
        for (c = 1; c <= length(rest); c++) {
            ch = substr(rest, c, 1)
            if (ch == "(") depth++
            if (ch == ")") depth--
            if (ch == "," && depth == 0) { p[++np] = trim(cur); cur = ""; continue }
            cur = cur ch
        }
        if (trim(cur) != "") p[++np] = trim(cur)
        if (np == 1 && p[1] == "void") np = 0
        nptr = 0
        for (a = 1; a <= np; a++) {
            pt = p[a]; isptr[a] = 0; pname[a] = ""; ptype[a] = ""; vararg[a] = 0
            if (pt == "...") { vararg[a] = 1; continue }
            if (match(pt, /\( ?\* ?[A-Za-z_][A-Za-z0-9_]* ?\)/)) {        # inline function pointer
                nm = substr(pt, RSTART, RLENGTH); gsub(/[^A-Za-z0-9_]/, "", nm)
                pname[a] = nm; isptr[a] = 2; ptype[a] = "fnptr"; nptr++
                continue
            }
            arr = 0
            if (pt ~ /\]$/) { arr = 1; sub(/ ?\[[^]]*\]$/, "", pt) }
            if (!match(pt, /[A-Za-z_][A-Za-z0-9_]*$/)) fail(fn ": cannot parse parameter \"" p[a] "\"")
            pname[a] = substr(pt, RSTART)
            ty = trim(substr(pt, 1, RSTART - 1))
            if (ty == "" || ty == "const") fail(fn ": parameter \"" p[a] "\" has no name")
            if (arr) ty = ty " *"
            ptype[a] = ty
            base = ty; gsub(/const|struct|volatile|restrict/, "", base); stars = gsub(/\*/, "", base)
            base = trim(base); gsub(/ +/, " ", base)
            pbase[a] = base; pstars[a] = stars
            pconst[a] = (ty ~ /^const /)
            if (stars > 0) { isptr[a] = 1; nptr++ }
            else if (base in fnptr) { isptr[a] = 2; nptr++ }
        }
        if (nptr == 0) continue
        nfun++
        if (ret == "void") rk = "TC_RET_VOID"
        else if (ret == "tg_status") rk = "TC_RET_STATUS"
        else if (ret ~ /\*/) rk = "TC_RET_PTR"
        else if (ret == "double" || ret == "float") rk = "TC_RET_FLOAT"
        else rk = "TC_RET_OTHER"
        # one case per pointer argument, and one with all of them NULL
        for (k = 0; k <= np; k++) {
            if (k > 0 && !isptr[k]) continue
            if (k == 0 && nptr < 2) continue
            args = ""
            for (a = 1; a <= np; a++) {
                if (vararg[a]) continue
                v = (isptr[a] && (k == 0 || k == a)) ? null_of(a) : valid(a, fn)
                args = args (args == "" ? "" : ", ") v
            }
            ncase++
            wname = "tc_w" ncase
            call = fn "(" args ")"
            emit_case(wname, call, rk)
            cf[ncase] = fn; ca[ncase] = (k ? pname[k] : "*"); cr[ncase] = rk; cb[ncase] = 0
            cw[ncase] = wname; cal[ncase] = (k ? allowed(fn, pname[k]) : 0)
            # all-NULL: allowed when every pointer argument is
            if (!k) {
                all = 1
                for (a = 1; a <= np; a++) if (isptr[a] && !allowed(fn, pname[a])) all = 0
                cal[ncase] = all
            }
        }
        # a bad tensor in each tensor argument the function takes as input
        if (fn == "tg_tensor_free") continue   # frees its argument: not for the context tensors
        for (k = 1; k <= np; k++) {
            if (isptr[k] != 1 || pbase[k] != "tg_tensor") continue
            if (pstars[k] == 2 && ptype[k] !~ /\* ?const ?\*/) continue   # an out-parameter
            if (pstars[k] > 2) continue
            for (bad = 1; bad <= 3; bad++) {
                args = ""
                for (a = 1; a <= np; a++) {
                    if (vararg[a]) continue
                    if (a == k) v = (pstars[k] == 1 ? "&c->bad[" bad "]" : "(" ptype[a] ")c->bad_arr[" bad "]")
                    else v = valid(a, fn)
                    args = args (args == "" ? "" : ", ") v
                }
                ncase++
                wname = "tc_w" ncase
                call = fn "(" args ")"
                emit_case(wname, call, rk)
                cf[ncase] = fn; ca[ncase] = pname[k]; cr[ncase] = rk; cb[ncase] = bad
                # these read only the header: data NULL is fine there
                cw[ncase] = wname
                cal[ncase] = (bad == 2 && fn ~ /^tg_(fan_in|tensor_check_shape|tensor_same_shape)$/)
            }
        }
    }
    if (nfun < 50) fail("only " nfun " functions found: is the header directory right?")
    print "const tc_case tc_null_cases[] = {"
    for (i = 1; i <= ncase; i++)
        printf "    {\"%s\", \"%s\", %d, %s, %s, %d},\n", cf[i], ca[i], cal[i], cr[i], cw[i], cb[i]
    print "};"
    printf "const int tc_null_case_count = %d;\n", ncase
    printf "const int tc_null_function_count = %d;\n", nfun
}

# The wrapper of one case: call it, return 1 when the call reported its error.
function emit_case(wname, call, rk) {
    printf "static int %s(tc_ctx *c)\n{\n    (void)c;\n", wname
    if (rk == "TC_RET_VOID") printf "    %s;\n    return 1;\n", call
    else if (rk == "TC_RET_STATUS") printf "    return %s != TG_OK;\n", call
    else if (rk == "TC_RET_PTR") printf "    return tc_is_null(%s);\n", call
    else if (rk == "TC_RET_FLOAT") printf "    return tc_is_nan((double)%s);\n", call
    else printf "    (void)%s;\n    return 1;\n", call
    printf "}\n\n"
}
function allowed(f, arg,    i, parts, n) {
    for (i = 1; i <= n_allow; i++) {
        n = split(trim(al[i]), parts, /[ \t]+/)
        if (n < 2) continue
        if (f ~ ("^(" parts[1] ")$") && arg ~ ("^(" parts[2] ")$")) return 1
    }
    return 0
}

function null_of(a) {
    if (isptr[a] == 2) return "0"
    return "(" ptype[a] ")tc_null()"
}

# A valid-looking value for parameter a (c: the tc_ctx of null_calls.h).
function valid(a, f,    b, n, key) {
    if (isptr[a] == 2) return "0"
    b = pbase[a]; n = pstars[a]
    if (n == 0) {
        if (b == "int" || b == "int64_t" || b == "long" || b == "int32_t") return "1"
        if (b == "unsigned" || b == "uint64_t" || b == "uint32_t" || b == "unsigned int") return "1u"
        if (b == "size_t") return "(size_t)1"   # a length: "x" and every buffer hold 1
        if (b == "double") return "0.5"
        if (b == "float") return "0.5f"
        if (b == "bool") return "false"
        if (b in enumt) return "(" b ")0"
        if (b in structt && complete[b]) return "(" b "){0}"
        fail(f ": no valid value for parameter type \"" ptype[a] "\" (add one to valid() in tests/gen_null_calls.sh)")
    }
    key = b "/" n
    if (key == "char/1") return pconst[a] ? "\"x\"" : "c->buf"
    if (key == "char/2") return "(" ptype[a] ")c->strs"
    if (key == "void/1") return "c->buf"
    if (key == "void/2") return "&c->vp"
    if (key == "tg_graph/1") return "c->g"
    if (key == "tg_node/1") return "c->x"
    if (key == "tg_node/2") return "c->nodes"
    if (key == "tg_tensor/1") return "c->t"
    if (key == "tg_tensor/2") return "(" ptype[a] ")c->tensors"
    if (key == "tg_params/1") return "c->ps"
    if (key == "tg_param/1") return "c->p"
    if (key == "tg_optim/1") return "c->o"
    if (key == "tg_layer/1") return "c->layer"
    if (key == "tg_layer_class/1") return "c->cls"
    if (key == "tg_config/1") return "c->cfg"
    if (key == "tg_value/1") return "&c->val"
    if (key == "tg_st_file/1") return "c->st"
    if (key == "tg_st_file/2") return "&c->st_out"
    if (key == "tg_dataset/1") return "c->ds"
    if (key == "tg_dataset/2") return "&c->ds_out"
    if (key == "tg_scaler/1") return "c->sc"
    if (key == "tg_checkpoint/1") return "&c->ck"
    if (key == "tg_rng/1") return "&c->rng"
    if (key == "tg_op/1") return "&c->op"
    if (key == "FILE/1") return "c->file"
    if (key == "float/1") return "c->f32"
    if (key == "double/1") return "c->f64"
    if (key == "int64_t/1") return "c->i64"
    if (key == "int/1") return "c->i32"
    if (key == "bool/1") return "c->b"
    if (key == "uint8_t/1") return "c->u8"
    if (key == "size_t/1") return "c->sz"
    if (key == "uint64_t/1") return "c->u64"
    if (b in structt && !complete[b])
        fail(f ": no valid value for the opaque type \"" ptype[a] "\" (add one to valid() in tests/gen_null_calls.sh and tc_ctx in tests/null_calls.h)")
    # any other struct, scalar or pointer array: fresh zeroed memory
    return "(" ptype[a] ")tc_zero(c)"
}
'
