#!/bin/sh
# etth1.sh - the Crossformer paper's ETTh1 table (ICLR 2023, Table 2), every
# horizon, with the official settings of Crossformer's scripts/ETTh1.sh:
# d_model 256, d_ff 512, 4 heads, 3 encoder layers, factor 10, win_size 2,
# dropout 0.2, batch 32, Adam, lr halved after epochs 2, 4, 6, 8 and 10 (the
# type1 of its code: --lradj crossformer), early stopping patience 3, up to 20
# epochs, the 12/4/4-month split; per horizon:
#
#   horizon  input  seg_len  lr
#   24       168    6        1e-4
#   48       168    6        1e-4
#   168      720    24       1e-5
#   336      720    24       1e-5
#   720      720    24       1e-5
#
#   sh tools/doc/etth1.sh          (or: make etth1-table)
#
# Each run (horizon H, seed S) lives in RUNS_DIR/hH-seedS/: tgraph train's
# checkpoint.safetensors, best.safetensors, metrics.csv, loss.svg, the
# command's output (train.log), result.csv (its row of the table) and, with
# PLOTS=1, tgraph eval's forecast.svg, horizon.svg and test-metrics.csv.
# Then RUNS_DIR/results.csv (every finished run) and RUNS_DIR/etth1-table.md
# (per horizon: the mean over seeds, +- the sample std with 2 or more, next to
# the paper's numbers and the two baselines).
#
# Resumable: a run with result.csv is skipped; one with a checkpoint (an
# interrupted run: Ctrl-C, a kill, a reboot) continues from it with
# `tgraph train --resume` (the bits of an uninterrupted run); a directory
# with neither starts again (--overwrite: nothing in it can be continued).
# Ctrl-C stops the current run cleanly (train saves nothing newer than its
# last epoch's checkpoint) and this script with it; run it again to go on.
#
# Environment:
#   TGRAPH     the tgraph binary (default build/tgraph of this checkout)
#   DATA       ETTh1.csv (default ../shared/data/ETT-small/ETTh1.csv)
#   SPLIT      train,val,test rows (default 8640,2880,2880)
#   RUNS_DIR   default runs/etth1-table
#   HORIZONS   a subset of "24 48 168 336 720" (spaces or commas)
#   SEEDS      how many seeds: 0 .. SEEDS-1 (default 1)
#   THREADS    train's --threads (default: every core)
#   EXTRA      more arguments for a new run's train (e.g. "--set d_model=16");
#              not given on --resume (a run's settings are its checkpoint's)
#   MAX_STEPS  stop each run after this many optimizer steps (a smoke test):
#              the run is recorded as "max-steps N"; a later call without
#              MAX_STEPS (or with a larger one) resumes it
#   PLOTS      1 (default): tgraph eval's forecast and per-horizon plots; 0: none
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TGRAPH=${TGRAPH:-$ROOT/build/tgraph}
DATA=${DATA:-$ROOT/../shared/data/ETT-small/ETTh1.csv}
SPLIT=${SPLIT:-8640,2880,2880}
RUNS_DIR=${RUNS_DIR:-runs/etth1-table}
HORIZONS=$(printf '%s' "${HORIZONS:-24 48 168 336 720}" | tr ',' ' ')
SEEDS=${SEEDS:-1}
THREADS=${THREADS:-}
EXTRA=${EXTRA:-}
MAX_STEPS=${MAX_STEPS:-}
PLOTS=${PLOTS:-1}

NAME=etth1.sh
. "$ROOT/tools/doc/table_lib.sh"
HEADER=horizon,seed,input,seg_len,lr,$RESULT_FIELDS

# horizon -> "input seg_len lr paper_mse paper_mae" (the paper: Table 2)
config_of() {
    case $1 in
        24)  echo "168 6 1e-4 0.305 0.367" ;;
        48)  echo "168 6 1e-4 0.352 0.394" ;;
        168) echo "720 24 1e-5 0.410 0.441" ;;
        336) echo "720 24 1e-5 0.440 0.461" ;;
        720) echo "720 24 1e-5 0.519 0.524" ;;
        *)   return 1 ;;
    esac
}

# train_args H SEED: a new run's arguments, the official settings, one a
# line (called in $(...): its IFS is its own)
train_args() {
    IFS=' '
    set -- "$1" "$2" $(config_of "$1")
    printf '%s\n' --data "$DATA" --split "$SPLIT" --seed "$2" \
        --set "seq_len=$3" --set "pred_len=$1" --set "seg_len=$4" --set d_model=256 \
        --set n_heads=4 --set e_layers=3 --set factor=10 --set d_ff=512 --set win_size=2 \
        --set dropout=0.2 --batch-size 32 --lr "$5" --lradj crossformer --patience 3 --epochs 20
}

# record H SEED DIR: DIR/result.csv from train's output and metrics.csv
record() {
    set -- "$1" "$2" "$3" $(config_of "$1")
    fields=$(result_fields "$3") || die "no test line in $3/last.out"
    printf '%s,%s,%s,%s,%s,%s\n' "$1" "$2" "$4" "$5" "$6" "$fields" > "$3/result.tmp"
    mv "$3/result.tmp" "$3/result.csv"
}

# plots DIR: tgraph eval of the best weights (the last ones before any epoch)
plots() {
    ck=$1/best.safetensors
    [ -f "$ck" ] || ck=$1/checkpoint.safetensors
    set -- --checkpoint "$ck" --plot "$1/forecast.svg" --horizon-plot "$1/horizon.svg" \
        --metrics "$1/test-metrics.csv" --quiet
    [ -n "$THREADS" ] && set -- "$@" --threads "$THREADS"
    "$TGRAPH" eval "$@" > /dev/null
}

# The table: results.csv (every finished run), etth1-table.md (per horizon)
tables() {
    { echo "$HEADER"; cat "$RUNS_DIR"/h*-seed*/result.csv 2>/dev/null | sort -t, -k1,1n -k2,2n; } \
        > "$RUNS_DIR/results.csv"
    awk -F, -v paper="$(for h in 24 48 168 336 720; do echo "$h $(config_of $h)"; done |
                        awk '{ printf "%s:%s:%s;", $1, $5, $6 }')" -f /dev/stdin \
        "$RUNS_DIR/results.csv" > "$RUNS_DIR/etth1-table.md" <<'EOF'
function stat(sum, sq, n,   m, sd) {
    m = sum / n
    if (n < 2) return sprintf("%.4f", m)
    sd = (sq - n * m * m) / (n - 1)
    return sprintf("%.4f ± %.4f", m, sd > 0 ? sqrt(sd) : 0)
}
BEGIN {
    np = split(paper, p, ";")
    for (i = 1; i < np; i++) { split(p[i], q, ":"); pm[q[1]] = q[2]; pa[q[1]] = q[3] }
}
NR > 1 {
    h = $1
    if (!(h in n)) order[++nh] = h
    n[h]++; input[h] = $3
    mse[h] += $6; mse2[h] += $6 * $6; mae[h] += $7; mae2[h] += $7 * $7
    rl[h] = $12; tm[h] = $13; ep[h] += $8; sec[h] += $10
    if ($14 != "complete") part[h] = 1
}
END {
    print "| horizon | input | tgraph MSE | tgraph MAE | paper MSE | paper MAE | repeat-last MSE | train-mean MSE | seeds | epochs (mean) | seconds per run (mean) | seconds per epoch |"
    print "|---|---|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= nh; i++) {
        h = order[i]
        printf "| %s%s | %s | %s | %s | %s | %s | %.4f | %.4f | %d | %.1f | %.0f | %s |\n", h,
               part[h] ? " (max steps)" : "", input[h], stat(mse[h], mse2[h], n[h]),
               stat(mae[h], mae2[h], n[h]), pm[h], pa[h], rl[h], tm[h], n[h], ep[h] / n[h],
               sec[h] / n[h], (ep[h] > 0 ? sprintf("%.0f", sec[h] / ep[h]) : "-")
    }
    print ""
    print "Paper: Zhang & Yan, \"Crossformer: Transformer Utilizing Cross-Dimension Dependency"
    print "for Multivariate Time Series Forecasting\", ICLR 2023, Table 2 (ETTh1; the mean of 5"
    print "runs; the same Crossformer column is in its Table 7). Baselines on the same test"
    print "windows, scaled units: repeat the last input step; predict the training mean."
    print "± is the sample standard deviation over seeds."
}
EOF
}

main() {
    [ -x "$TGRAPH" ] || die "$TGRAPH is not an executable (run make first, or set TGRAPH)"
    [ -f "$DATA" ] || die "no data file $DATA (set DATA)"
    case $SEEDS in ''|*[!0-9]*) die "SEEDS=$SEEDS: expected a count (1, 3, ...)" ;; esac
    [ "$SEEDS" -ge 1 ] || die "SEEDS=$SEEDS: expected at least 1"
    for h in $HORIZONS; do config_of "$h" > /dev/null || die "horizon $h: not one of 24 48 168 336 720"; done
    trap 'echo "etth1.sh: stopping after the current run stops" >&2' INT TERM HUP
    mkdir -p "$RUNS_DIR" || die "cannot create $RUNS_DIR"
    for h in $HORIZONS; do
        seed=0
        while [ "$seed" -lt "$SEEDS" ]; do
            dir=$RUNS_DIR/h$h-seed$seed
            if finished "$dir"; then
                echo "== horizon $h seed $seed: done ($dir/result.csv), skipped"
            else
                run_train "horizon $h seed $seed" "$dir" train_args "$h" "$seed"
                rc=$?
                if [ "$rc" != 0 ]; then
                    echo "etth1.sh: horizon $h seed $seed: tgraph train exited $rc; run again to resume" >&2
                    tables
                    exit "$rc"
                fi
                record "$h" "$seed" "$dir"
                if [ "$PLOTS" = 1 ]; then plots "$dir" || die "tgraph eval failed on $dir"; fi
            fi
            seed=$((seed + 1))
        done
    done
    tables
    echo "== $RUNS_DIR/results.csv, $RUNS_DIR/etth1-table.md"
    cat "$RUNS_DIR/etth1-table.md"
}

main
