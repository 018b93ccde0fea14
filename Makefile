# tgraph - tensor graph engine with reverse-mode autograd.
#
#   make            build/libtgraph.a, build/libtgraph.so, build/tgraph
#   make test       build and run the Criterion suites (installs Criterion if missing, as root)
#   make run        the main job (see README)
#   make asan       everything under AddressSanitizer + UndefinedBehaviorSanitizer, whole suite
#   make bench      the benchmark table
#   make bench-gemm GEMM GFLOPS at 512^3 and the layer shapes (BENCH_ARGS="-t 1 M N K")
#
# Dependencies point down only: tools -> layers -> ops -> engine.

VERSION    := 0.1.0
SOVERSION  := 0
CC         ?= cc
BUILD      ?= build
OPT        ?= -O2
CFLAGS_STD := -std=c11 -Wall -Wextra -pedantic -Wshadow -Wstrict-prototypes
CPPFLAGS   += -D_POSIX_C_SOURCE=200809L -Iengine -Iops -Ilayers -Itools
CFLAGS     ?= $(OPT) -g
ALL_CFLAGS := $(CFLAGS_STD) $(CFLAGS) -fPIC -MMD -MP
LDLIBS     := -lm -lpthread

LIB_SRC   := $(wildcard engine/*.c) $(wildcard ops/*.c) $(wildcard layers/*.c)
TOOL_SRC  := $(wildcard tools/*.c)
TEST_SRC  := $(wildcard tests/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)

LIB_A  := $(BUILD)/libtgraph.a
LIB_SO := $(BUILD)/libtgraph.so.$(VERSION)
TOOL   := $(BUILD)/tgraph
TESTS  := $(BUILD)/tgraph-tests

.PHONY: all test run asan clean check-criterion bench-gemm
all: $(LIB_A) $(LIB_SO) $(TOOL)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(LIB_SO): $(LIB_OBJ) engine/exports.map
	$(CC) -shared -Wl,-soname,libtgraph.so.$(SOVERSION) -Wl,--version-script=engine/exports.map \
	    -o $@ $(LIB_OBJ) $(LDLIBS)
	ln -sf libtgraph.so.$(VERSION) $(BUILD)/libtgraph.so.$(SOVERSION)
	ln -sf libtgraph.so.$(VERSION) $(BUILD)/libtgraph.so

$(TOOL): $(TOOL_OBJ) $(LIB_A)
	$(CC) $(ALL_CFLAGS) -o $@ $(TOOL_OBJ) $(LIB_A) $(LDLIBS)

# ---- tests ----
check-criterion:
	@if [ ! -f /usr/include/criterion/criterion.h ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Criterion is missing: installing libcriterion-dev"; \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q libcriterion-dev) || exit 1; \
	  else \
	    echo "Criterion is missing. Install it with:  sudo apt-get install -y libcriterion-dev" >&2; \
	    exit 1; \
	  fi; \
	fi

$(BUILD)/tests/%.o: tests/%.c | check-criterion
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests $(ALL_CFLAGS) -c $< -o $@

$(TESTS): $(TEST_OBJ) $(LIB_A)
	$(CC) $(ALL_CFLAGS) -o $@ $(TEST_OBJ) $(LIB_A) -lcriterion $(LDLIBS)

test: check-criterion $(TESTS) $(TOOL)
	$(TESTS) --jobs 2 $(TEST_ARGS)

run: $(TOOL)
	$(TOOL) demo

# ---- GEMM benchmark: GFLOPS per shape and thread count (BENCH_ARGS: see tests/bench/gemm_bench.c) ----
BENCH_ARGS ?= --suite
$(BUILD)/gemm-bench: tests/bench/gemm_bench.c $(LIB_A)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

bench-gemm: $(BUILD)/gemm-bench
	$(BUILD)/gemm-bench $(BENCH_ARGS)

# ---- sanitizers ----
asan:
	$(MAKE) BUILD=build-asan OPT=-O1 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  LDLIBS="-fsanitize=address,undefined -lm -lpthread" test

clean:
	rm -rf build build-asan

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
