#!/bin/sh
# ab_bench.sh - two builds of tgraph side by side (a change against the commit
# before it): for each layer config of bench_table.sh and the GEMM shapes,
# `tgraph bench` of A and B, BENCH_ROUNDS times alternating (A B, B A, ...: a
# load change on a shared machine hits both, and neither always runs second),
# medians of each side and B / A.
#
#   sh tests/bench/ab_bench.sh OLD/build/tgraph NEW/build/tgraph
#
# Environment: BENCH_CONFIGS, BENCH_MIN_TIME, BENCH_THREADS, BENCH_ROUNDS as
# for bench_table.sh (rounds default 3). Prints markdown. Not a test: it
# asserts nothing about the numbers.
set -f
A=${1:?usage: ab_bench.sh TGRAPH_A TGRAPH_B}
B=${2:?usage: ab_bench.sh TGRAPH_A TGRAPH_B}
MIN_TIME=${BENCH_MIN_TIME:-1.0}
THREADS=${BENCH_THREADS:-2}
ROUNDS=${BENCH_ROUNDS:-3}
for t in "$A" "$B"; do [ -x "$t" ] || { echo "ab_bench: $t is not an executable" >&2; exit 2; }; done
CONFIGS=$(sed -n "/^CONFIGS='/,/'\$/p" "$(dirname "$0")/bench_table.sh" | sed "s/^CONFIGS='//; s/'\$//")

field() { printf '%s\n' "$1" | sed -n "s/.*\"$2\":\([-0-9.eE+]*\).*/\1/p"; }
median() { printf '%s\n' "$@" | grep -E '^[0-9.eE+-]+$' | sort -g |
           awk '{ v[n++] = $1 } END { if (!n) print "-"; else if (n % 2) print v[(n - 1) / 2];
                  else printf "%.6g\n", (v[n / 2 - 1] + v[n / 2]) / 2 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.3f", b / a; else print "-" }'; }
sets() { for kv in $1; do printf ' --set %s' "$kv"; done; }
selected() { [ -z "$BENCH_CONFIGS" ] || case ",$BENCH_CONFIGS," in *",$1,"*) true ;; *) false ;; esac; }

echo "load before: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null); $ROUNDS rounds, $THREADS threads, min time $MIN_TIME s"
echo
echo "| config | A train ms | B train ms | B/A | A infer ms | B infer ms | B/A |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "$CONFIGS" | while IFS='|' read -r name layer cfg; do
    selected "$name" || continue
    at=; ai=; bt=; bi=; r=0
    while [ $r -lt "$ROUNDS" ]; do
        r=$((r + 1))
        # A then B in odd rounds, B then A in even ones: neither always runs second
        if [ $((r % 2)) = 1 ]; then order="A B"; else order="B A"; fi
        for side in $order; do
            if [ $side = A ]; then tool=$A; else tool=$B; fi
            if [ "$layer" = gemm ]; then
                set -- $cfg
                out=$("$tool" bench gemm --m "$1" --n "$2" --k "$3" --threads "$THREADS" --min-time "$MIN_TIME")
                v=$(field "$out" gflops); w=$v
            else
                # shellcheck disable=SC2046
                out=$("$tool" bench "$layer" $(sets "$cfg") --threads "$THREADS" --min-time "$MIN_TIME")
                v=$(field "$out" train_step_ms); w=$(field "$out" infer_ms)
            fi
            if [ $side = A ]; then at="$at $v"; ai="$ai $w"; else bt="$bt $v"; bi="$bi $w"; fi
        done
    done
    # shellcheck disable=SC2086
    { mat=$(median $at); mbt=$(median $bt); mai=$(median $ai); mbi=$(median $bi); }
    if [ "$layer" = gemm ]; then
        echo "| $name (GFLOPS, higher is better) | $mat | $mbt | $(ratio "$mat" "$mbt") | | | |"
    else
        echo "| $name | $mat | $mbt | $(ratio "$mat" "$mbt") | $mai | $mbi | $(ratio "$mai" "$mbi") |"
    fi
done
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
