# table_lib.sh - what the table scripts (etth1.sh, tsl.sh) share: a run in
# its own directory that is skipped when finished, continued with
# `tgraph train --resume` when interrupted and started afresh otherwise, and
# the fields of its result row read off train's output. Sourced, not run.
#
# The caller sets TGRAPH, MAX_STEPS, THREADS, EXTRA and NAME (its own name,
# for messages) and defines the function whose name it passes to run_train.

die() { echo "$NAME: $*" >&2; exit 2; }

# What this call asks of a run: complete, or max-steps N.
goal() { if [ -n "$MAX_STEPS" ]; then echo "max-steps $MAX_STEPS"; else echo complete; fi; }

# Is the run in $1 done for this call? (complete, or stopped at these max steps)
finished() {
    [ -f "$1/result.csv" ] || return 1
    status=$(sed -n '1s/.*,//p' "$1/result.csv")
    [ "$status" = complete ] || [ "$status" = "$(goal)" ]
}

# run_train LABEL DIR ARGS_FN [ARG...]: a new run (its arguments, one a line,
# printed by `ARGS_FN ARG...`; none may hold a newline) or the interrupted
# one continued. Its stdout goes to the terminal and DIR/last.out; the exit
# status is train's.
run_train() {
    label=$1 dir=$2 fn=$3
    shift 3
    mkdir -p "$dir" || die "cannot create $dir"
    if [ -f "$dir/checkpoint.safetensors" ]; then
        echo "== $label: resuming $dir/checkpoint.safetensors"
        set -- --resume "$dir/checkpoint.safetensors"
    else
        echo "== $label: a new run in $dir"
        # shellcheck disable=SC2046 # one argument per line, none with spaces but the paths
        IFS='
'
        set -- $("$fn" "$@") --out-dir "$dir" --overwrite
        unset IFS
        # shellcheck disable=SC2086 # EXTRA is a list of arguments
        set -- "$@" $EXTRA
    fi
    [ -n "$THREADS" ] && set -- "$@" --threads "$THREADS"
    [ -n "$MAX_STEPS" ] && set -- "$@" --max-steps "$MAX_STEPS"
    rm -f "$dir/last.rc"
    # A stop (Ctrl-C, kill) goes to train, which ends between steps: this
    # subshell waits for its status (the trap), tee -i keeps its output
    { trap : INT TERM HUP; "$TGRAPH" train "$@"; echo $? > "$dir/last.rc"; } |
        tee -i "$dir/last.out"
    cat "$dir/last.out" >> "$dir/train.log"
    return "$(cat "$dir/last.rc" 2>/dev/null || echo 1)"
}

RESULT_FIELDS=test_mse,test_mae,epochs,best_epoch,seconds,seconds_per_epoch,repeat_last_mse,train_mean_mse,status

# result_fields DIR: the RESULT_FIELDS of the run in DIR, comma-separated,
# from train's output (DIR/last.out) and DIR/metrics.csv; fails without a
# test line.
result_fields() {
    epochs=0
    [ -f "$1/metrics.csv" ] && epochs=$(($(wc -l < "$1/metrics.csv") - 1))
    status=$(goal)
    grep -q '^max steps: stopped' "$1/last.out" || status=complete
    awk -v epochs="$epochs" -v status="$status" '
        /^best epoch / { best = $3 }
        /^trained / { s = $2; sub(/s;?$/, "", s) }
        /^test mse=/ {
            nf = split($0, f, /[ =|]+/)
            for (i = 1; i < nf; i++) {
                if (f[i] == "mse" && !mse) mse = f[i + 1]
                else if (f[i] == "mae") mae = f[i + 1]
                else if (f[i] == "repeat-last") rl = f[i + 2]
                else if (f[i] == "train-mean") tm = f[i + 2]
            }
        }
        END {
            if (mse == "") exit 1
            per = epochs > 0 ? sprintf("%.1f", s / epochs) : ""
            printf "%s,%s,%d,%s,%s,%s,%s,%s,%s\n", mse, mae, epochs, best + 0, s, per, rl, tm,
                   status
        }' "$1/last.out"
}
