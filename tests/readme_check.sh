#!/bin/sh
# readme_check.sh - run every ```sh block of the README, so that what it tells
# users to type keeps working (run by `make test`).
#
#   sh tests/readme_check.sh [BUILD]        (BUILD: the build directory, default build)
#
# The blocks run in order, each with `sh -e`, in one scratch directory laid out
# like the repository (its top-level entries, build/ and ../shared reached
# through links), as a user would type them one after the other: a block may use the
# files an earlier one wrote, and the tree stays clean. A block takes one
# marker on the line above it:
#   <!-- readme-test: skip REASON -->   not run (make test itself, installing)
#   <!-- readme-test: sed SCRIPT -->    run after `sed -e SCRIPT` (a long run
#                                       in a reduced form, e.g. --max-steps)
#   <!-- readme-test: needs COMMAND --> run only where COMMAND succeeds (PyTorch
#                                       installed), else counted as skipped
# A block that fails names its line in the README and shows its output.
set -eu
BUILD=${1:-build}
ROOT=$(pwd)
README=$ROOT/README.md
[ -f "$README" ] || { echo "readme_check: run from the repository root" >&2; exit 2; }
[ -x "$ROOT/$BUILD/tgraph" ] || { echo "readme_check: $BUILD/tgraph is missing" >&2; exit 2; }
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/tgraph-readme-XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT INT TERM

# The blocks as files: SCRATCH/blocks/N.sh, N.line (where it starts), N.mark.
mkdir -p "$SCRATCH/blocks"
awk -v dir="$SCRATCH/blocks" '
    /^<!-- readme-test: / { mark = $0; sub(/^<!-- readme-test: /, "", mark); sub(/ *-->$/, "", mark); next }
    /^```sh *$/ && !inblock { n++; inblock = 1; f = dir "/" n ".sh"; printf "" > f
                              print NR > (dir "/" n ".line"); print mark > (dir "/" n ".mark")
                              mark = ""; next }
    /^```/ && inblock { inblock = 0; close(f); next }
    inblock { print >> f; next }
    { if ($0 !~ /^[ \t]*$/) mark = "" }
' "$README"

work=$SCRATCH/run/repo
mkdir -p "$work"
ln -s "$ROOT/$BUILD" "$work/build"
[ "$BUILD" = build ] || ln -s "$ROOT/$BUILD" "$work/$BUILD"
for entry in engine ops layers tools tests Makefile; do ln -s "$ROOT/$entry" "$work/$entry"; done
ln -s "$ROOT/../shared" "$SCRATCH/run/shared"

ran=0; skipped=0; failed=0
n=0
while [ -f "$SCRATCH/blocks/$((n + 1)).sh" ]; do   # in the README's order
    n=$((n + 1)); f=$SCRATCH/blocks/$n.sh
    line=$(cat "$SCRATCH/blocks/$n.line"); mark=$(cat "$SCRATCH/blocks/$n.mark")
    case "$mark" in
        skip\ *) skipped=$((skipped + 1)); continue ;;
        needs\ *)
            if ! sh -c "${mark#needs }" >/dev/null 2>&1; then
                echo "readme_check: README.md:$line skipped: '${mark#needs }' fails here"
                skipped=$((skipped + 1)); continue
            fi
            cp "$f" "$f.run" ;;
        sed\ *) sed -e "${mark#sed }" "$f" > "$f.run" ;;
        '') cp "$f" "$f.run" ;;
        *) echo "readme_check: README.md:$line: unknown marker '$mark'" >&2; exit 1 ;;
    esac
    if (cd "$work" && PATH="$ROOT/$BUILD:$PATH" sh -e "$f.run") > "$SCRATCH/out$n" 2>&1; then
        ran=$((ran + 1))
    else
        failed=$((failed + 1))
        echo "readme_check: the block at README.md:$line failed:" >&2
        sed 's/^/    | /' "$f.run" >&2
        echo "  its output (last 20 lines):" >&2
        tail -n 20 "$SCRATCH/out$n" | sed 's/^/    > /' >&2
    fi
done
[ $((ran + skipped + failed)) -gt 0 ] || { echo "readme_check: no sh blocks in README.md" >&2; exit 1; }
echo "readme_check: $ran README command blocks ran, $skipped skipped by their marker"
[ "$failed" -eq 0 ] || { echo "readme_check: $failed block(s) failed" >&2; exit 1; }
