#!/bin/sh
# bench_table.sh - issue 7's benchmark table: tgraph against PyTorch, side by side.
#
#   sh tests/bench/bench_table.sh [TGRAPH]          (make bench runs it with build/tgraph)
#
# For each config, `tgraph bench` and tests/bench/torch_bench.py run one after
# the other, BENCH_ROUNDS times (alternating, so a load change on a shared
# machine hits both), with the same threads and min time, and each side's
# numbers are the medians over its rounds; then `tgraph bench --recompute` once.
# Then the GEMM at 512^3 and the layer shapes on 1 and 2 threads. Prints
# markdown: speed, then memory.
#
# Environment:
#   BENCH_CONFIGS   comma-separated subset of the names below (default: all of them)
#   BENCH_MIN_TIME  seconds each measurement runs for (default 1.0)
#   BENCH_THREADS   threads for the layer configs (default 2)
#   BENCH_ROUNDS    tgraph / PyTorch rounds per layer config (default 3)
#   PYTHON          the interpreter with torch (default /usr/bin/python3)
# Without PyTorch the tgraph half is printed and the torch columns say "missing".
# Not a test: it prints numbers and asserts nothing about them.

set -f   # config values hold [ ] (shape=[8,32,32,64]): no globbing
TGRAPH=${1:-build/tgraph}
MIN_TIME=${BENCH_MIN_TIME:-1.0}
THREADS=${BENCH_THREADS:-2}
ROUNDS=${BENCH_ROUNDS:-3}
PYTHON=${PYTHON:-/usr/bin/python3}
HERE=$(dirname "$0")
TORCH_BENCH="$HERE/torch_bench.py"

# name | layer | config (KEY=VALUE ..., the --set keys of both tools)
CONFIGS='tsa_toy|tsa|b=2 ts_d=3 seg_num=5 d_model=8 factor=2 n_heads=2
tsa_med|tsa|b=32 ts_d=7 seg_num=12 d_model=64 factor=3 n_heads=4 d_ff=128
tsa_large|tsa|b=32 ts_d=21 seg_num=16 d_model=256 factor=3 n_heads=8 d_ff=512
attn_layer_512|attention_layer|B=8 L=512 S=512 d_model=256 n_heads=8 mask_flag=true
axial_med|axial|shape=[8,32,32,64] dim=64 heads=8
assa_topk_med|assa_topk|B=16 N=256 embed_dim=128 num_heads=4 k=32
crossformer_small|crossformer|B=32 enc_in=7 seq_len=96 pred_len=24 d_model=64 n_heads=4 d_ff=128 e_layers=2 factor=3
dlinear_etth1|dlinear|B=32 enc_in=7 seq_len=96 pred_len=96 moving_avg=25
patchtst_etth1|patchtst|B=32 enc_in=7 seq_len=96 pred_len=96 d_model=512 n_heads=2 e_layers=1 d_ff=2048 patch_len=16 stride=8
itransformer_etth1|itransformer|B=32 N=7 n_mark=4 seq_len=96 pred_len=96 d_model=128 n_heads=8 e_layers=2 d_ff=128
gemm512|gemm|512 512 512
gemm_tsa_large_ff|gemm|10752 512 256
gemm_tsa_large_proj|gemm|10752 256 256
gemm_attn_proj|gemm|4096 256 256
gemm_crossformer|gemm|7168 64 64'
ALL_NAMES=$(printf '%s\n' "$CONFIGS" | cut -d'|' -f1 | tr '\n' ' ' | sed 's/ $//')

fail() { echo "bench_table: $*" >&2; exit 2; }

[ -x "$TGRAPH" ] || fail "$TGRAPH is missing (run make first)"
if [ -n "$BENCH_CONFIGS" ]; then
    for want in $(echo "$BENCH_CONFIGS" | tr ',' ' '); do
        case " $ALL_NAMES " in
            *" $want "*) ;;
            *) fail "BENCH_CONFIGS: unknown config '$want' (known: $ALL_NAMES)" ;;
        esac
    done
fi
selected() { [ -z "$BENCH_CONFIGS" ] || case ",$BENCH_CONFIGS," in *",$1,"*) true ;; *) false ;; esac; }

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
have_torch=no
if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then have_torch=yes; fi

# the value of a numeric JSON key on a one-line object
field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([-0-9.eE+]*\).*/\1/p"; }
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN { num = "^[0-9]*[.]?[0-9]+([eE][-+]?[0-9]+)?$"
        if (a ~ num && b ~ num && a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }'
}

percent() {
    awk -v a="$1" -v b="$2" 'BEGIN { num = "^[0-9]*[.]?[0-9]+([eE][-+]?[0-9]+)?$"
        if (a ~ num && b ~ num && b + 0 > 0) printf "%.1f%%", 100 * a / b; else print "-" }'
}

sets() { for kv in $1; do printf ' --set %s' "$kv"; done; }

# the median of the numbers among its arguments ("-" when there are none)
median() {
    printf '%s\n' "$@" | awk '/^[0-9]*[.]?[0-9]+([eE][-+]?[0-9]+)?$/ { k = n + 0; v[k] = $1 + 0; s[k] = $1; n = k + 1 }
        END { n += 0; if (n == 0) { print "-"; exit }
              for (i = 1; i < n; i++) for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
                  t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; t = s[j]; s[j] = s[j - 1]; s[j - 1] = t }
              if (n % 2) print s[(n - 1) / 2]; else printf "%.6g\n", (v[n / 2 - 1] + v[n / 2]) / 2 }'
}
case "$ROUNDS" in ''|*[!0-9]*|0) fail "BENCH_ROUNDS must be a positive integer, got '$ROUNDS'" ;; esac

layer_rows=
mem_rows=
gemm_rows=
errors=0
for line in $(printf '%s\n' "$CONFIGS" | tr ' ' '~'); do
    line=$(printf '%s' "$line" | tr '~' ' ')
    name=${line%%|*}; rest=${line#*|}; layer=${rest%%|*}; cfg=${rest#*|}
    selected "$name" || continue
    if [ "$layer" = gemm ]; then
        for t in 1 2; do
            # shellcheck disable=SC2086
            set -- $cfg   # M N K
            tg=$("$TGRAPH" bench gemm --m "$1" --n "$2" --k "$3" --threads $t \
                 --min-time "$MIN_TIME") || { errors=1; tg=; }
            th=missing
            if [ $have_torch = yes ]; then
                th=$("$PYTHON" "$TORCH_BENCH" gemm --m "$1" --n "$2" --k "$3" --threads $t \
                     --min-time "$MIN_TIME") || { errors=1; th=; }
            fi
            tgf=$(field "$tg" gflops); thf=missing
            [ "$th" = missing ] || thf=$(field "$th" gflops)
            gemm_rows="$gemm_rows| $name: $1 x $2 x $3 | $t | $tgf | $thf | $(ratio "$tgf" "$thf") |
"
        done
        continue
    fi
    tgt_all=; tgi_all=; tgr_all=; tht_all=; thi_all=; thr_all=
    round=0
    while [ $round -lt "$ROUNDS" ]; do
        round=$((round + 1))
        # shellcheck disable=SC2046
        tg=$("$TGRAPH" bench "$layer" $(sets "$cfg") --threads "$THREADS" --min-time "$MIN_TIME") ||
            { errors=1; tg=; }
        tgt_all="$tgt_all $(field "$tg" train_step_ms)"; tgi_all="$tgi_all $(field "$tg" infer_ms)"
        tgr_all="$tgr_all $(field "$tg" peak_rss_mb)"
        if [ $have_torch = yes ]; then
            # shellcheck disable=SC2046
            th=$("$PYTHON" "$TORCH_BENCH" "$layer" $(sets "$cfg") --threads "$THREADS" \
                 --min-time "$MIN_TIME") || { errors=1; th=; }
            tht_all="$tht_all $(field "$th" train_step_ms)"; thi_all="$thi_all $(field "$th" infer_ms)"
            thr_all="$thr_all $(field "$th" peak_rss_mb)"
        fi
    done
    # and tgraph once more with linear outputs recomputed in backward (less memory)
    # shellcheck disable=SC2046
    tr=$("$TGRAPH" bench "$layer" $(sets "$cfg") --threads "$THREADS" --min-time "$MIN_TIME" \
         --recompute) || { errors=1; tr=; }
    # shellcheck disable=SC2086
    { tgt=$(median $tgt_all); tgi=$(median $tgi_all); tgr=$(median $tgr_all); }
    trt=$(field "$tr" train_step_ms); trr=$(field "$tr" peak_rss_mb)
    if [ $have_torch = no ]; then
        tht=missing; thi=missing; thr=missing
    else
        # shellcheck disable=SC2086
        { tht=$(median $tht_all); thi=$(median $thi_all); thr=$(median $thr_all); }
    fi
    layer_rows="$layer_rows| $name | $tgt | $tht | $(ratio "$tht" "$tgt") | $tgi | $thi | $(ratio "$thi" "$tgi") | $trt | $(ratio "$tht" "$trt") |
"
    mem_rows="$mem_rows| $name | $tgr | $(percent "$tgr" "$thr") | $trr | $(percent "$trr" "$thr") | $thr |
"
    printf '%s: done\n' "$name" >&2
done

echo
echo "threads $THREADS, min time $MIN_TIME s per measurement, medians; layers: the median of" \
     "$ROUNDS alternating rounds per side (--recompute: one run); speedup = torch / tgraph"
# other work on the machine skews both sides (PyTorch's OpenMP threads most): say how busy it was
echo "load average before: ${load_before:-unknown}, after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)" \
     "($(getconf _NPROCESSORS_ONLN 2>/dev/null || echo '?') cores)"
if [ $have_torch = no ]; then
    echo "PyTorch is missing ($PYTHON cannot import torch): only tgraph's numbers."
else
    blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null)
    echo "PyTorch $("$PYTHON" -c 'import torch; print(torch.__version__)'), BLAS: ${blas:-unknown}"
    case "$blas" in
        */openblas*|*/blis*|*/mkl*) ;;
        *) echo "warning: PyTorch uses ${blas:-an unknown BLAS}, not OpenBLAS: a slow baseline" \
                "(apt-get install libopenblas0-pthread makes it Debian's default)" ;;
    esac
fi
if [ -n "$layer_rows" ]; then
    echo
    echo "| config | tgraph train ms | torch train ms | speedup | tgraph infer ms | torch infer ms | speedup | tgraph train ms, --recompute | speedup |"
    echo "|---|---|---|---|---|---|---|---|---|"
    printf '%s' "$layer_rows"
    echo
    echo "| config | tgraph peak RSS MB | of torch's | with --recompute | of torch's | torch peak RSS MB |"
    echo "|---|---|---|---|---|---|"
    printf '%s' "$mem_rows"
fi
if [ -n "$gemm_rows" ]; then
    echo
    echo "| gemm F32 (M x N x K) | threads | tgraph GFLOPS | torch GFLOPS | tgraph / torch |"
    echo "|---|---|---|---|---|"
    printf '%s' "$gemm_rows"
fi
[ $errors = 0 ] || fail "some runs failed (their messages are above)"
