#!/bin/sh
# Functions a reader can hold (issue 18): nothing in tools/ over 80 lines,
# nothing elsewhere over 120, unless it is listed in tests/func_length.allow
# with its one-line reason (and says in the code why it is one idea).
# A function is counted from its first signature line (a line at column 0
# starting with a letter or '_' and holding a '(', such as `static int f(`
# or `TG_GLUE(b_cat)`) to the next '}' at column 0, through a '{' at column 0:
# the code's own brace style.
# Usage: sh tests/func_length.sh         check (run by `make test`)
#        sh tests/func_length.sh --list  every function over its limit, longest first
set -eu
cd "$(dirname "$0")/.."
allow=tests/func_length.allow

measure() {   # measure LIMIT files...: "lines file:line name" for each function over LIMIT
    limit=$1; shift
    for f in "$@"; do
        [ -f "$f" ] || continue
        awk -v limit="$limit" -v file="$f" '
            /^[A-Za-z_].*\(/ && !infn { if (!sig) { sig = FNR; line = $0 }; next }
            /^\{/ && !infn { if (!sig) { sig = FNR; line = "?(" }; infn = 1; next }
            /^}/ && infn {
                n = FNR - sig + 1
                if (n > limit) {
                    # the name: the word before the first "(" (a macro: with its argument)
                    name = line; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
                    if (name ~ /^[A-Z0-9_]+$/) {
                        arg = line; sub(/^[^(]*\(/, "", arg); sub(/\).*/, "", arg)
                        name = name "(" arg ")"
                    }
                    printf "%d %s:%d %s\n", n, file, sig, name
                }
                infn = 0; sig = 0; next
            }
            !infn && /;[ \t]*$/ { sig = 0 }
            !infn && /^$/ { sig = 0 }
        ' "$f"
    done
}

long=$( { measure 80 tools/*.c; measure 120 engine/*.c engine/io/*.c engine/train/*.c \
          engine/draw/*.c ops/*.c ops/simd/*.c layers/*.c; } | sort -rn)

if [ "${1:-}" = "--list" ]; then
    printf '%s\n' "$long"
    exit 0
fi

# The allowed ones: "FILE NAME reason" lines; each must still be over its limit.
allowed=$(grep -v '^#' "$allow" | grep -v '^[[:space:]]*$' || true)
status=0
while read -r n where name; do
    [ -n "$n" ] || continue
    file=${where%%:*}
    if ! printf '%s\n' "$allowed" | grep -q "^$file $name "; then
        echo "func_length: $where $name() is $n lines (tools/: 80, elsewhere: 120); split it," \
             "or list it in $allow with the reason it is one idea (and say so in the code)" >&2
        status=1
    fi
done <<EOF_LONG
$long
EOF_LONG
while read -r file name reason; do
    [ -n "$file" ] || continue
    if ! printf '%s\n' "$long" | grep -q " $file:[0-9]* $name\$"; then
        echo "func_length: $allow lists $file $name(), which is not over its limit (any more):" \
             "drop the line" >&2
        status=1
    fi
done <<EOF_ALLOWED
$allowed
EOF_ALLOWED
[ "$status" = 0 ] || exit 1
echo "func_length: no function over its limit (tools/: 80 lines, elsewhere: 120)" \
     "but the $(printf '%s' "$allowed" | grep -c . || true) listed in $allow"
