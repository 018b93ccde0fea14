#!/bin/sh
# tsl.sh - Time-Series-Library's long-term forecasting table on ETTh1 and
# ETTh2 (make tsl-table): input 96, horizons 96 192 336 720, for DLinear,
# PatchTST, iTransformer and Crossformer, trained with TSL's protocol and
# compared with the published numbers.
#
# TSL's protocol (run.py's defaults): features M (all 7 channels), the
# 12/4/4-month split (8640,2880,2880 rows), a scaler fitted on the training
# rows, batch 32, Adam lr 1e-4, lradj type1 (halve every epoch), early
# stopping patience 3, 10 epochs, MSE loss, dropout 0.1, d_model 512, d_ff
# 2048, 8 heads, 2 encoder layers, seed 2021; then each model's script
# (scripts/long_term_forecast/ETT_script/MODEL_ETTh1.sh and _ETTh2.sh):
#
#   DLinear       moving_avg 25, shared linears (individual false)
#   PatchTST      patch_len 16, stride 8; ETTh1: e_layers 1, n_heads 2/8/8/16
#                 by horizon; ETTh2: e_layers 3, n_heads 4
#   iTransformer  e_layers 2, d_model 128, d_ff 128, time features timeF (h)
#   Crossformer   e_layers 2, seg_len 12, win_size 2, factor 3
#
#   sh tools/doc/tsl.sh          (or: make tsl-table)
#
# Each run (model M, data D, horizon H) lives in RUNS_DIR/M-D-hH/: tgraph
# train's checkpoint.safetensors, best.safetensors, metrics.csv, loss.svg,
# the command's output (train.log) and result.csv (its row). Then
# RUNS_DIR/results.csv (every finished run) and RUNS_DIR/tsl-table.md (each
# row beside the published one). Resumable as etth1.sh is (table_lib.sh): a
# finished run is skipped, an interrupted one continued with --resume.
#
# Published numbers: Liu et al., "iTransformer: Inverted Transformers Are
# Effective for Time Series Forecasting", ICLR 2024, the full results table
# of long-term forecasting (lookback 96; its DLinear, PatchTST and
# Crossformer rows were produced with TSL's protocol, as its own).
#
# Environment:
#   TGRAPH     the tgraph binary (default build/tgraph of this checkout)
#   DATA_DIR   the folder of ETTh1.csv and ETTh2.csv (default ../shared/data/ETT-small)
#   RUNS_DIR   default runs/tsl-table
#   SPLIT      train,val,test rows (default 8640,2880,2880: TSL's ETT-hour borders)
#   MODELS     a subset of "dlinear patchtst itransformer crossformer"
#   DATASETS   a subset of "ETTh1 ETTh2"
#   HORIZONS   a subset of "96 192 336 720" (spaces or commas, for all three)
#   THREADS    train's --threads (default: every core)
#   EXTRA      more arguments for a new run's train (e.g. "--set d_model=16")
#   MAX_STEPS  stop each run after this many optimizer steps (a smoke test),
#              recorded as "max-steps N"; a later call without it resumes
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TGRAPH=${TGRAPH:-$ROOT/build/tgraph}
DATA_DIR=${DATA_DIR:-$ROOT/../shared/data/ETT-small}
RUNS_DIR=${RUNS_DIR:-runs/tsl-table}
SPLIT=${SPLIT:-8640,2880,2880}
MODELS=$(printf '%s' "${MODELS:-dlinear patchtst itransformer crossformer}" | tr ',' ' ')
DATASETS=$(printf '%s' "${DATASETS:-ETTh1 ETTh2}" | tr ',' ' ')
HORIZONS=$(printf '%s' "${HORIZONS:-96 192 336 720}" | tr ',' ' ')
THREADS=${THREADS:-}
EXTRA=${EXTRA:-}
MAX_STEPS=${MAX_STEPS:-}

NAME=tsl.sh
. "$ROOT/tools/doc/table_lib.sh"
HEADER=model,data,horizon,paper_mse,paper_mae,$RESULT_FIELDS

# published MODEL DATA H -> "mse mae" (the iTransformer paper's full table)
published() {
    case $1-$2 in
        dlinear-ETTh1)      set -- "$3" 0.386 0.400 0.437 0.432 0.481 0.459 0.519 0.516 ;;
        dlinear-ETTh2)      set -- "$3" 0.333 0.387 0.477 0.476 0.594 0.541 0.831 0.657 ;;
        patchtst-ETTh1)     set -- "$3" 0.414 0.419 0.460 0.445 0.501 0.466 0.500 0.488 ;;
        patchtst-ETTh2)     set -- "$3" 0.302 0.348 0.388 0.400 0.426 0.433 0.431 0.446 ;;
        itransformer-ETTh1) set -- "$3" 0.386 0.405 0.441 0.436 0.487 0.458 0.503 0.491 ;;
        itransformer-ETTh2) set -- "$3" 0.297 0.349 0.380 0.400 0.428 0.432 0.427 0.445 ;;
        crossformer-ETTh1)  set -- "$3" 0.423 0.448 0.471 0.474 0.570 0.546 0.653 0.621 ;;
        crossformer-ETTh2)  set -- "$3" 0.745 0.584 0.877 0.656 1.043 0.731 1.104 0.763 ;;
        *) return 1 ;;
    esac
    case $1 in
        96) echo "$2 $3" ;; 192) echo "$4 $5" ;; 336) echo "$6 $7" ;; 720) echo "$8 $9" ;;
        *) return 1 ;;
    esac
}

# model_args MODEL DATA H: the model's script values, one a line
model_args() {
    case $1 in
        dlinear) printf '%s\n' --set moving_avg=25 ;;
        patchtst)
            heads=4 layers=3
            if [ "$2" = ETTh1 ]; then
                layers=1
                case $3 in 96) heads=2 ;; 192|336) heads=8 ;; 720) heads=16 ;; esac
            fi
            printf '%s\n' --set d_model=512 --set d_ff=2048 --set dropout=0.1 \
                --set "e_layers=$layers" --set "n_heads=$heads" --set patch_len=16 --set stride=8 ;;
        itransformer)
            printf '%s\n' --set d_model=128 --set d_ff=128 --set n_heads=8 --set e_layers=2 \
                --set dropout=0.1 ;;
        crossformer)
            printf '%s\n' --set d_model=512 --set d_ff=2048 --set n_heads=8 --set e_layers=2 \
                --set dropout=0.1 --set seg_len=12 --set win_size=2 --set factor=3 ;;
    esac
}

# train_args MODEL DATA H: a new run's arguments, one a line
train_args() {
    printf '%s\n' --model "$1" --data "$DATA_DIR/$2.csv" --split "$SPLIT" --seed 2021 \
        --set seq_len=96 --set "pred_len=$3" --batch-size 32 --lr 1e-4 --lradj type1 \
        --patience 3 --epochs 10
    model_args "$@"
}

# record MODEL DATA H DIR: DIR/result.csv
record() {
    fields=$(result_fields "$4") || die "no test line in $4/last.out"
    paper=$(published "$1" "$2" "$3")
    printf '%s,%s,%s,%s,%s\n' "$1" "$2" "$3" "$(echo "$paper" | tr ' ' ',')" "$fields" \
        > "$4/result.tmp"
    mv "$4/result.tmp" "$4/result.csv"
}

# The table: results.csv (every finished run), tsl-table.md (a row each)
tables() {
    { echo "$HEADER"; cat "$RUNS_DIR"/*-h*/result.csv 2>/dev/null | sort -t, -k1,1 -k2,2 -k3,3n; } \
        > "$RUNS_DIR/results.csv"
    awk -F, '
        NR == 1 {
            print "| model | data | horizon | tgraph MSE | tgraph MAE | published MSE | published MAE | MSE - published | epochs | best epoch | seconds per epoch |"
            print "|---|---|---|---|---|---|---|---|---|---|---|"
            next
        }
        {
            printf "| %s | %s | %s%s | %s | %s | %s | %s | %+.3f | %s | %s | %s |\n", $1, $2, $3,
                   $14 == "complete" ? "" : " (" $14 ")", $6, $7, $4, $5, $6 - $4, $8, $9,
                   $11 == "" ? "-" : $11
        }
        END {
            print ""
            print "Published: Liu et al., \"iTransformer: Inverted Transformers Are Effective for"
            print "Time Series Forecasting\", ICLR 2024, full long-term forecasting results"
            print "(lookback 96, TSL protocol). tgraph: one run each, seed 2021."
        }' "$RUNS_DIR/results.csv" > "$RUNS_DIR/tsl-table.md"
}

check_settings() {
    [ -x "$TGRAPH" ] || die "$TGRAPH is not an executable (run make first, or set TGRAPH)"
    built=$("$TGRAPH" layers 2>/dev/null | awk '/^[a-z]/ { print $1 }')
    for m in $MODELS; do
        published "$m" ETTh1 96 > /dev/null ||
            die "model $m: not one of dlinear patchtst itransformer crossformer"
        printf '%s\n' "$built" | grep -qx "$m" || die "model $m is not built into $TGRAPH"
    done
    for d in $DATASETS; do
        published dlinear "$d" 96 > /dev/null || die "data $d: not one of ETTh1 ETTh2"
        [ -f "$DATA_DIR/$d.csv" ] || die "no data file $DATA_DIR/$d.csv (set DATA_DIR)"
    done
    for h in $HORIZONS; do
        published dlinear ETTh1 "$h" > /dev/null || die "horizon $h: not one of 96 192 336 720"
    done
}

main() {
    check_settings
    trap 'echo "tsl.sh: stopping after the current run stops" >&2' INT TERM HUP
    mkdir -p "$RUNS_DIR" || die "cannot create $RUNS_DIR"
    for m in $MODELS; do
        for d in $DATASETS; do
            for h in $HORIZONS; do
                dir=$RUNS_DIR/$m-$d-h$h
                if finished "$dir"; then
                    echo "== $m $d $h: done ($dir/result.csv), skipped"
                    continue
                fi
                run_train "$m $d $h" "$dir" train_args "$m" "$d" "$h"
                rc=$?
                if [ "$rc" != 0 ]; then
                    echo "tsl.sh: $m $d $h: tgraph train exited $rc; run again to resume" >&2
                    tables
                    exit "$rc"
                fi
                record "$m" "$d" "$h" "$dir"
            done
        done
    done
    tables
    echo "== $RUNS_DIR/results.csv, $RUNS_DIR/tsl-table.md"
    cat "$RUNS_DIR/tsl-table.md"
}

main
