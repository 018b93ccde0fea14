#!/bin/sh
# readme_check.sh - check the README's shape, then run every ```sh block of it,
# so that what it tells users to type keeps working (run by `make test`).
#
#   sh tests/readme_check.sh [BUILD]        (BUILD: the build directory, default build)
#   sh tests/readme_check.sh --shape FILE   (only the shape checks, on FILE)
#
# The shape: the README is a front door, at most README_MAX_LINES lines (250);
# every relative link and image in it ([text](path), ![alt](path#anchor), its
# own #anchor) names a file or folder that exists, relative to the README, and
# an anchor into a .md file names one of its headings (GitHub's ids: lower
# case, punctuation dropped, spaces as hyphens). Links in code are not links.
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
README_MAX_LINES=250

# The ids of FILE's headings (outside code fences), one a line.
md_ids() {
    awk '/^```/ { code = !code; next }
         !code && /^#+ / { h = tolower($0); sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
                           gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h); print h }' "$1"
}

# "LINE TARGET" for every link and image of FILE outside code (fences and
# `spans`) whose target has no scheme (http:, mailto:, ...).
md_links() {
    awk '/^```/ { code = !code; next }
         code { next }
         { t = $0; gsub(/`[^`]*`/, "", t)
           while (match(t, /\]\([^)]*\)/)) {
               target = substr(t, RSTART + 2, RLENGTH - 3); t = substr(t, RSTART + RLENGTH)
               sub(/[ \t].*$/, "", target)                  # a "title" after the path
               if (target != "" && target !~ /^[a-zA-Z][a-zA-Z0-9+.-]*:/) print NR, target
           } }' "$1"
}

# The shape checks on FILE; prints each fault on stderr, returns 1 on any.
check_shape() {
    file=$1 dir=$(dirname "$1") bad=0
    lines=$(wc -l < "$file")
    if [ "$lines" -gt "$README_MAX_LINES" ]; then
        echo "readme_check: $file has $lines lines, more than $README_MAX_LINES: move details to tools/doc/" >&2
        bad=1
    fi
    faults=$(md_links "$file" | while read -r at target; do
        path=${target%%#*}; anchor=
        case $target in *#*) anchor=${target#*#} ;; esac
        [ -n "$path" ] && dest=$dir/$path || dest=$file
        if [ ! -e "$dest" ]; then
            echo "readme_check: $file:$at: the link '$target' names no file ($dest)"
        elif [ -n "$anchor" ] && [ -f "$dest" ] && case $dest in *.md) true ;; *) false ;; esac &&
             ! md_ids "$dest" | grep -qxF -- "$anchor"; then
            echo "readme_check: $file:$at: the link '$target': $dest has no heading '#$anchor'"
        fi
    done)
    if [ -n "$faults" ]; then echo "$faults" >&2; bad=1; fi
    return $bad
}

if [ "${1:-}" = --shape ]; then
    [ $# -eq 2 ] && [ -f "$2" ] || { echo "usage: sh tests/readme_check.sh --shape FILE" >&2; exit 2; }
    check_shape "$2" && echo "readme_check: $2: $(wc -l < "$2") lines, every relative link resolves"
    exit
fi

BUILD=${1:-build}
ROOT=$(pwd)
README=$ROOT/README.md
[ -f "$README" ] || { echo "readme_check: run from the repository root" >&2; exit 2; }
[ -x "$ROOT/$BUILD/tgraph" ] || { echo "readme_check: $BUILD/tgraph is missing" >&2; exit 2; }
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/tgraph-readme-XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT INT TERM

shape_ok=1
check_shape "$README" || shape_ok=0
# The shape checks can fail: a file one line too long, and one with a dead link
# and a dead anchor, are each refused (else the checks are broken).
mkdir -p "$SCRATCH/shape"
awk -v n="$README_MAX_LINES" 'BEGIN { for (i = 0; i <= n; i++) print "line" }' > "$SCRATCH/shape/long.md"
printf '# Top\n[a](no-such-file.md) [b](#no-such-heading) [c](#top)\n' > "$SCRATCH/shape/dead.md"
for bad in long dead; do
    if check_shape "$SCRATCH/shape/$bad.md" 2>/dev/null; then
        echo "readme_check: the shape check passed $bad.md, which it must refuse" >&2; shape_ok=0
    fi
done
[ "$(check_shape "$SCRATCH/shape/dead.md" 2>&1 | grep -c 'no-such')" -eq 2 ] ||
    { echo "readme_check: the shape check did not name both dead links of dead.md" >&2; shape_ok=0; }
[ "$shape_ok" -eq 0 ] ||
    echo "readme_check: README.md has $(wc -l < "$README") lines (at most $README_MAX_LINES), every relative link resolves"

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
[ "$shape_ok" -eq 1 ] || { echo "readme_check: the shape checks failed (above)" >&2; exit 1; }
[ "$failed" -eq 0 ] || { echo "readme_check: $failed block(s) failed" >&2; exit 1; }
