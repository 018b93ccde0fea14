#!/bin/sh
# Dependencies point down only: tools -> layers -> ops -> engine, and inside
# engine the core needs none of io/, train/, draw/. Each source file is
# compiled (syntax only) with the include path of its own layer and those
# below it, so an include that reaches upward fails here, naming the file.
# Usage: sh tests/layering.sh            (run by `make test`)
set -eu
CC=${CC:-cc}
core="-Iengine"
io="$core -Iengine/io"
train="$io -Iengine/train"
draw="$io -Iengine/draw"
ops="$io -Iops"
layers="$train $draw -Iops -Ilayers"
n=0
check() {   # check "include flags" files...
    flags=$1; shift
    for f in "$@"; do
        [ -f "$f" ] || continue
        $CC -std=c11 -D_POSIX_C_SOURCE=200809L $flags -fsyntax-only "$f" 2>/dev/null || {
            echo "layering: $f includes a header from a layer above it (allowed: $flags)" >&2
            exit 1
        }
        n=$((n + 1))
    done
}
check "$core" engine/*.c
check "$io" engine/io/*.c
check "$train" engine/train/*.c
check "$draw" engine/draw/*.c
check "$ops" ops/*.c ops/simd/*.c
check "$layers" layers/*.c
echo "layering: $n files, each compiles with only its own layer and those below"
