#!/bin/sh
# The library as users see it: every public header compiles on its own in C11
# and as C++, the shared library exports tg_ names only, the examples compile
# and run, and an installed copy works through pkg-config.
# Usage: sh tests/api_check.sh BUILD_DIR      (run by `make test`)
set -eu
B=${1:-build}
CC=${CC:-cc}
CXX=${CXX:-c++}
XFLAGS=${TG_API_CFLAGS:-}      # e.g. the sanitizer flags of `make asan`
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "api_check: $*" >&2; exit 1; }

# 1. headers stand alone, in C11 and C++
n=0
for h in "$B"/include/tgraph/*.h; do
    name=$(basename "$h")
    printf '#include <tgraph/%s>\nint main(void) { return 0; }\n' "$name" > "$tmp/h.c"
    $CC -std=c11 -Wall -Wextra -pedantic -Werror -I"$B/include" -c "$tmp/h.c" -o "$tmp/h.o" \
        || fail "$name does not compile on its own as C11"
    $CXX -std=c++11 -Wall -Wextra -Werror -x c++ -I"$B/include" -c "$tmp/h.c" -o "$tmp/h.o" \
        || fail "$name does not compile as C++"
    n=$((n + 1))
done
echo "api_check: $n public headers compile on their own (C11 and C++)"

# 2. exported symbols: the public tg_ API only
bad=$(nm -D --defined-only "$B/libtgraph.so" | awk '$2 ~ /[TDRBW]/ {print $3}' | grep -v '^tg_[^_]' || true)
[ -z "$bad" ] || fail "libtgraph.so exports non-API symbols: $(echo $bad | head -c 300)"
count=$(nm -D --defined-only "$B/libtgraph.so" | awk '$2 ~ /[TDRBW]/' | wc -l)
soname=$(objdump -p "$B/libtgraph.so" | awk '/SONAME/ {print $2}')
[ "$soname" = "libtgraph.so.0" ] || fail "soname is '$soname', expected libtgraph.so.0"
echo "api_check: libtgraph.so ($soname) exports $count symbols, all tg_"

# 3. the examples compile against the staged headers and run
for ex in tools/examples/*.c; do
    name=$(basename "$ex" .c)
    $CC -std=c11 -Wall -Wextra -pedantic -Werror $XFLAGS -I"$B/include" "$ex" "$B/libtgraph.a" \
        -lm -lpthread -o "$tmp/$name" || fail "example $ex does not compile"
    (cd "$tmp" && ./"$name" > "$tmp/$name.out") || fail "example $name failed: $(cat "$tmp/$name.out")"
done
echo "api_check: examples in tools/examples compile and run"

# 4. make install into a prefix, then build an example with pkg-config
if ! command -v pkg-config >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get install -y -q pkg-config >/dev/null || fail "cannot install pkg-config"
    else
        fail "pkg-config is missing: sudo apt-get install -y pkg-config"
    fi
fi
MAKEFLAGS= make -s install PREFIX="$tmp/prefix" BUILD="$B" >/dev/null
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
$CC $XFLAGS tools/examples/custom_op.c $(pkg-config --cflags --libs tgraph) -lm \
    -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/installed" || fail "pkg-config build failed"
"$tmp/installed" > "$tmp/installed.out" || fail "installed example failed"
[ -x "$tmp/prefix/bin/tgraph" ] && [ -f "$tmp/prefix/share/man/man1/tgraph.1" ] \
    || fail "tool or man page not installed"
"$tmp/prefix/bin/tgraph" --version > /dev/null || fail "installed tgraph does not run"
MAKEFLAGS= make -s uninstall PREFIX="$tmp/prefix" BUILD="$B" >/dev/null
[ ! -e "$tmp/prefix/include/tgraph" ] && [ ! -e "$tmp/prefix/lib/libtgraph.so" ] \
    || fail "uninstall left files behind"
echo "api_check: make install PREFIX=... + pkg-config build + uninstall work"
