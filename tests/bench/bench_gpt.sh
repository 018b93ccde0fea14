#!/bin/sh
# bench_gpt.sh - issue 21's GPT table: a training step of tgraph's gpt layer
# against nanoGPT's train.py (PyTorch) and llm.c's train_gpt2.c, side by side.
#
#   sh tests/bench/bench_gpt.sh [TGRAPH]            (make bench-gpt runs it with build/tgraph)
#
# Per config, GPT_ROUNDS rounds, each running in turn (so a load change on a
# shared machine hits every side): tgraph with bias=false, nanoGPT (bias=False),
# tgraph with bias=true, llm.c (which always has biases). Each side's number is
# the median over its rounds of its own median ms per step; the ratios are
# peer / tgraph. Same config and threads on every side, vocabulary 65 (Tiny
# Shakespeare by character, as both peers' bench.py tokenize it).
#
# What a "step" is on each side:
#   tgraph   `tgraph bench gpt`: forward (training mode), backward of sum(y*dy)
#            with a fixed random dy over the logits, an Adam update of every
#            parameter, gradients zeroed (the cross-entropy head's cost, a
#            [B*T, 65] softmax, is not in it; its backward is the same GEMMs).
#   nanoGPT  one train.py iteration: get_batch, forward with cross-entropy,
#            backward, grad clip, AdamW (--log_interval=1 times each).
#   llm.c    one train_gpt2.c step: forward with cross-entropy, backward, AdamW.
# Peak RSS: the process's peak on each side (tgraph bench's getrusage; nanoGPT's
# train.py through /usr/bin/time -v), so PyTorch's own footprint counts too.
# GEMM fraction: the step's FLOPs (3 x the forward's matrix products: the
# linear layers, lm_head and the causal attention as computed, full T x T)
# over its time, over `tgraph bench gemm` at the block's c_fc shape
# (B*T x 4C x C) on the same threads.
#
# Environment:
#   PEERS        the peers' folder (default ../shared/peers from the repository root)
#   GPT_CONFIGS  comma-separated: nano, gpt2s, tiny (default nano,gpt2s)
#                  nano   nanoGPT's CPU shakespeare_char config: 4 layers, 4 heads,
#                         n_embd 128, block 64, batch 12, dropout 0
#                  gpt2s  GPT-2 small's dimensions: 12 layers, 12 heads, 768 wide,
#                         T 64, batch 4
#                  tiny   1 layer, 2 heads, 32 wide, T 16, batch 2: checks the script
#   GPT_ROUNDS   rounds per config (default 3)
#   GPT_THREADS  threads on every side (default 2)
#   GPT_ITERS    nanoGPT iterations and llm.c steps per round (default 20; the
#                first 3 are not timed by either)
#   GPT_MIN_TIME seconds of tgraph steps per round (default 2)
#   PYTHON       the interpreter with torch (default /usr/bin/python3)
# Not a test: it prints numbers and asserts nothing about them. A peer that
# fails prints "failed" in its columns (its error on stderr).

TGRAPH=${1:-build/tgraph}
PEERS=${PEERS:-../shared/peers}
CONFIGS=${GPT_CONFIGS:-nano,gpt2s}
ROUNDS=${GPT_ROUNDS:-3}
THREADS=${GPT_THREADS:-2}
ITERS=${GPT_ITERS:-20}
MIN_TIME=${GPT_MIN_TIME:-2}
PYTHON=${PYTHON:-/usr/bin/python3}
V=65

fail() { echo "bench_gpt: $*" >&2; exit 2; }
[ -x "$TGRAPH" ] || fail "$TGRAPH is missing (run make first)"
[ -f "$PEERS/nanoGPT/bench.py" ] || fail "no $PEERS/nanoGPT/bench.py (set PEERS=...)"
[ -f "$PEERS/llm.c/bench.py" ] || fail "no $PEERS/llm.c/bench.py (set PEERS=...)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# dims NAME -> "L H C T B"
dims() {
    case $1 in
        nano) echo "4 4 128 64 12" ;;
        gpt2s) echo "12 12 768 64 4" ;;
        tiny) echo "1 2 32 16 2" ;;
        *) fail "GPT_CONFIGS: unknown config '$1' (known: nano, gpt2s, tiny)" ;;
    esac
}
for c in $(echo "$CONFIGS" | tr ',' ' '); do dims "$c" > /dev/null; done

# json FIELD < line: the number after "FIELD":
json() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" | head -n 1; }
# median of the numbers in a file (one a line; "failed" if none)
median() {
    sort -g "$1" 2>/dev/null | awk '{v[NR] = $1} END {
        if (NR == 0) { print "failed"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2fx", a / b; else print "-" }'; }

# tgraph bench gpt: ms per step and peak RSS (MB) into files $2.ms, $2.rss
run_tgraph() {   # SETS OUT
    line=$("$TGRAPH" bench gpt $1 --threads "$THREADS" --min-time "$MIN_TIME" --quiet) ||
        { echo "bench_gpt: tgraph bench gpt $1 failed" >&2; return; }
    echo "$line" | json train_step_ms >> "$2.ms"
    echo "$line" | json peak_rss_mb >> "$2.rss"
}

run_nanogpt() {   # L H C T B OUT
    /usr/bin/time -v -o "$tmp/time.txt" "$PYTHON" "$PEERS/nanoGPT/bench.py" --threads "$THREADS" \
        -- --eval_interval=100000 --eval_iters=1 --block_size="$4" --batch_size="$5" \
        --n_layer="$1" --n_head="$2" --n_embd="$3" --max_iters="$ITERS" --dropout=0.0 \
        --bias=False > "$tmp/nano.json" 2> "$tmp/nano.err" ||
        { echo "bench_gpt: nanoGPT failed: $(tail -n 3 "$tmp/nano.err")" >&2; return; }
    json ms_per_iter < "$tmp/nano.json" >> "$6.ms"
    kb=$(sed -n 's/.*Maximum resident set size (kbytes): *\([0-9]*\).*/\1/p' "$tmp/time.txt")
    [ -n "$kb" ] && awk -v k="$kb" 'BEGIN { printf "%.1f\n", k / 1024 }' >> "$6.rss"
}

run_llmc() {   # L H C T B OUT
    "$PYTHON" "$PEERS/llm.c/bench.py" --layers "$1" --heads "$2" --channels "$3" --block "$4" \
        --batch "$5" --steps "$ITERS" --threads "$THREADS" > "$tmp/llmc.json" 2> "$tmp/llmc.err" ||
        { echo "bench_gpt: llm.c failed: $(tail -n 3 "$tmp/llmc.err")" >&2; return; }
    json ms_per_step < "$tmp/llmc.json" >> "$6.ms"
}

# FLOPs of one step (GFLOP): 3 x forward, forward = 2 B T (12 L C^2 + C V) + 4 B L T^2 C
flops() { awk -v L="$1" -v C="$3" -v T="$4" -v B="$5" -v V="$V" \
    'BEGIN { printf "%.4f", 3 * (2 * B * T * (12 * L * C * C + C * V) + 4 * B * L * T * T * C) / 1e9 }'; }

echo "bench_gpt: $THREADS threads, $ROUNDS rounds, load before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
speed="| config | tgraph ms (bias off) | nanoGPT ms | nanoGPT / tgraph | tgraph ms (bias on) | llm.c ms | llm.c / tgraph | GFLOP / step | tgraph GFLOPS | of GEMM peak |
|---|---|---|---|---|---|---|---|---|---|"
mem="| config | tgraph peak RSS MB | PyTorch peak RSS MB | tgraph / PyTorch |
|---|---|---|---|"
for c in $(echo "$CONFIGS" | tr ',' ' '); do
    set -- $(dims "$c")
    L=$1 H=$2 C=$3 T=$4 B=$5
    sets="--set n_layer=$L --set n_head=$H --set n_embd=$C --set block_size=$T --set T=$T
          --set B=$B --set vocab_size=$V --set dropout=0"
    out="$tmp/$c"
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        echo "bench_gpt: $c round $r/$ROUNDS" >&2
        run_tgraph "$sets --set bias=false" "$out.tg0"
        run_nanogpt "$L" "$H" "$C" "$T" "$B" "$out.nano"
        run_tgraph "$sets --set bias=true" "$out.tg1"
        run_llmc "$L" "$H" "$C" "$T" "$B" "$out.llmc"
        r=$((r + 1))
    done
    tg0=$(median "$out.tg0.ms") nano=$(median "$out.nano.ms")
    tg1=$(median "$out.tg1.ms") llmc=$(median "$out.llmc.ms")
    gf=$(flops "$L" "$H" "$C" "$T" "$B")
    peak=$("$TGRAPH" bench gemm --m $((B * T)) --n $((4 * C)) --k "$C" --threads "$THREADS" |
           json gflops)
    rate=$(awk -v f="$gf" -v ms="$tg0" 'BEGIN { if (ms + 0 > 0) printf "%.1f", f / (ms / 1e3); else print "-" }')
    frac=$(awk -v r="$rate" -v p="$peak" 'BEGIN { if (r + 0 > 0 && p + 0 > 0) printf "%.0f%% of %.0f", 100 * r / p, p; else print "-" }')
    speed="$speed
| $c (L$L H$H C$C T$T B$B) | $tg0 | $nano | $(ratio "$nano" "$tg0") | $tg1 | $llmc | $(ratio "$llmc" "$tg1") | $gf | $rate | $frac |"
    rss_tg=$(median "$out.tg0.rss") rss_nano=$(median "$out.nano.rss")
    mem="$mem
| $c | $rss_tg | $rss_nano | $(awk -v a="$rss_tg" -v b="$rss_nano" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }') |"
done
echo "## GPT training step, ms (medians of $ROUNDS rounds, $THREADS threads, vocabulary $V)"
echo
echo "$speed"
echo
echo "## Peak RSS of the training process (bias off)"
echo
echo "$mem"
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
