# tgraph - tensor graph engine with reverse-mode autograd.
#
#   make            build/libtgraph.a, build/libtgraph.so, build/tgraph
#   make test       build and run the Criterion suites (installs Criterion if missing, as root)
#   make run        the main job (see README)
#   make etth1-table  the Crossformer paper's ETTh1 table, five horizons (tools/doc/etth1.sh)
#   make tsl-table  TSL's ETTh1/ETTh2 table: DLinear, PatchTST, iTransformer, Crossformer,
#                   horizons 96-720, beside the published numbers (tools/doc/tsl.sh)
#   make asan       everything under AddressSanitizer + UndefinedBehaviorSanitizer, whole suite
#   make func-length  functions a reader can hold: none over 80 lines in tools/, 120 elsewhere,
#                   but those tests/func_length.allow lists with their reason (tests/func_length.sh)
#   make fuzz       each libFuzzer target in tests/fuzz/ for FUZZ_SECONDS (default 20) seconds
#                   (clang-14; installs clang-14 and libclang-rt-14-dev if missing, as root)
#   make bench      issue 7's table, tgraph against PyTorch (BENCH_CONFIGS=tsa_toy,tsa_med
#                   for a subset, BENCH_MIN_TIME=seconds, BENCH_ROUNDS=n; see
#                   tests/bench/bench_table.sh)
#   make bench-gemm GEMM GFLOPS at 512^3 and the layer shapes (BENCH_ARGS="-t 1 M N K")
#   make bench-rows softmax / layer_norm / GELU: portable, AVX2, AVX-512 (ROWS_ARGS="-t 1")
#   make bench-topk float32 topk rows, ns per row: portable, AVX2, AVX-512 (TOPK_ARGS="-t 2")
#   make bench-gpt  issue 21's table: a GPT training step, tgraph against nanoGPT (PyTorch) and
#                   llm.c (PEERS=../shared/peers, GPT_CONFIGS=nano,gpt2s,tiny, GPT_ROUNDS=3,
#                   GPT_THREADS=2; see tests/bench/bench_gpt.sh)
#
# Dependencies point down only: tools -> layers -> ops -> engine.

VERSION    := 0.1.0
SOVERSION  := 0
CC         ?= cc
BUILD      ?= build
OPT        ?= -O2
CFLAGS_STD := -std=c11 -Wall -Wextra -pedantic -Wshadow -Wstrict-prototypes
ENGINE_DIRS := engine engine/io engine/train engine/draw
CPPFLAGS   += -D_POSIX_C_SOURCE=200809L $(ENGINE_DIRS:%=-I%) -Iops -Ilayers -Itools
CFLAGS     ?= $(OPT) -g
# gcc's -O2 vectorises a loop only if it needs no run-time alias check and no
# scalar epilogue (the "very-cheap" cost model), so elementwise loops over
# lengths known at run time stay scalar; its "dynamic" model (-O3's)
# vectorises them. Without -ffast-math no floating-point operation is
# reordered: the same bits. Compilers that do not know the flag go without.
VEC_FLAGS  := $(shell $(CC) -fvect-cost-model=dynamic -Werror -E -x c /dev/null -o /dev/null \
                2>/dev/null && echo -fvect-cost-model=dynamic)
ALL_CFLAGS := $(CFLAGS_STD) $(CFLAGS) $(VEC_FLAGS) -fPIC -MMD -MP
LDLIBS     := -lm -lpthread

LIB_SRC   := $(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.c)) $(wildcard ops/*.c) $(wildcard ops/simd/*.c) $(wildcard layers/*.c)
TOOL_SRC  := $(wildcard tools/*.c)
TEST_SRC  := $(wildcard tests/*.c)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)

# Headers installed under include/tgraph/; the rest are library-private.
PRIVATE_HEADERS := engine/internal.h engine/graph_impl.h engine/generic.h engine/instantiate.h engine/io/json.h engine/io/io_internal.h engine/io/onnx.h engine/io/onnx_internal.h \
                   engine/io/st_internal.h ops/ops_internal.h ops/registry_internal.h ops/einops_parse.h \
                   ops/einops_kernels.h ops/einsum_parse.h ops/gemm_internal.h $(wildcard ops/simd/*.h)
PUBLIC_HEADERS  := $(filter-out $(PRIVATE_HEADERS),$(foreach d,$(ENGINE_DIRS),$(wildcard $(d)/*.h)) $(wildcard ops/*.h layers/*.h))
STAGED_HEADERS  := $(addprefix $(BUILD)/include/tgraph/,$(notdir $(PUBLIC_HEADERS)))

PREFIX     ?= /usr/local
DESTDIR    ?=
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
PCDIR      ?= $(LIBDIR)/pkgconfig

LIB_A  := $(BUILD)/libtgraph.a
LIB_SO := $(BUILD)/libtgraph.so.$(VERSION)
TOOL   := $(BUILD)/tgraph
TESTS  := $(BUILD)/tgraph-tests
MAN    := $(BUILD)/tgraph.1

.PHONY: all test run asan fuzz fuzz-build func-length clean check-criterion check-clang diagrams install uninstall headers bench-gemm bench bench-rows bench-topk bench-gpt etth1-table tsl-table
all: $(LIB_A) $(LIB_SO) $(TOOL) $(MAN) headers

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

# ---- the man page: tools/tgraph.1 with the registry's op list (tgraph op --man) at @OPS@
# and each command's options (tgraph help --man CMD, from the table --help prints) at its
# `.\" @OPTS CMD@` line ----
$(MAN): tools/tgraph.1 $(TOOL)
	@rm -rf $@.d && mkdir -p $@.d
	$(TOOL) op --man > $@.d/OPS
	for c in $$(sed -n 's/^\.\\" @OPTS \([a-z]*\)@.*/\1/p' tools/tgraph.1); do \
	  $(TOOL) help --man $$c > $@.d/$$c || exit 1; done
	awk -v d=$@.d '/^\.\\" @OPS@/ { f = d "/OPS" } \
	  /^\.\\" @OPTS [a-z]+@/ { f = d "/" substr($$3, 1, length($$3) - 1) } \
	  f { while ((r = (getline l < f)) > 0) print l; if (r < 0) exit 1; close(f); f = ""; next } \
	  { print }' tools/tgraph.1 > $@.tmp
	rm -rf $@.d
	mv $@.tmp $@

# ---- public headers, staged as they are installed: include/tgraph/*.h ----
vpath %.h $(ENGINE_DIRS) ops layers
headers: $(STAGED_HEADERS)
$(BUILD)/include/tgraph/%.h: %.h
	@mkdir -p $(dir $@)
	cp $< $@

# ---- install: make install [PREFIX=/usr/local] [DESTDIR=] ----
install: all
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@VERSION@|$(VERSION)|' tools/tgraph.pc.in > $(BUILD)/tgraph.pc
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/tgraph $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(PCDIR) $(DESTDIR)$(MANDIR)/man1
	install -m 644 $(LIB_A) $(DESTDIR)$(LIBDIR)/
	install -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libtgraph.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtgraph.so.$(SOVERSION)
	ln -sf libtgraph.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libtgraph.so
	install -m 644 $(STAGED_HEADERS) $(DESTDIR)$(INCLUDEDIR)/tgraph/
	install -m 755 $(TOOL) $(DESTDIR)$(BINDIR)/
	install -m 644 $(BUILD)/tgraph.pc $(DESTDIR)$(PCDIR)/
	install -m 644 $(MAN) $(DESTDIR)$(MANDIR)/man1/

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libtgraph.a $(DESTDIR)$(LIBDIR)/libtgraph.so \
	      $(DESTDIR)$(LIBDIR)/libtgraph.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libtgraph.so.$(VERSION) \
	      $(DESTDIR)$(BINDIR)/tgraph $(DESTDIR)$(PCDIR)/tgraph.pc $(DESTDIR)$(MANDIR)/man1/tgraph.1
	rm -rf $(DESTDIR)$(INCLUDEDIR)/tgraph

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

# The NULL-argument cases of every public function, generated from the staged
# headers (tests/gen_null_calls.sh; run by tests/test_capi.c).
GEN_NULL_C := $(BUILD)/tests/gen_null_calls.c
GEN_NULL_O := $(BUILD)/tests/gen_null_calls.o
$(GEN_NULL_C): tests/gen_null_calls.sh $(STAGED_HEADERS)
	@mkdir -p $(dir $@)
	sh tests/gen_null_calls.sh $(BUILD)/include/tgraph > $@.tmp && mv $@.tmp $@

$(GEN_NULL_O): $(GEN_NULL_C) tests/null_calls.h | check-criterion
	$(CC) $(CPPFLAGS) -I$(BUILD)/include/tgraph -Itests $(ALL_CFLAGS) -c $< -o $@

$(TESTS): $(TEST_OBJ) $(GEN_NULL_O) $(LIB_A)
	$(CC) $(ALL_CFLAGS) -o $@ $(TEST_OBJ) $(GEN_NULL_O) $(LIB_A) -lcriterion $(LDLIBS)

test: check-criterion $(TESTS) $(TOOL) $(MAN) $(LIB_SO) headers
	$(TESTS) --jobs 2 $(TEST_ARGS)
	CC="$(CC)" sh tests/layering.sh
	sh tests/func_length.sh
	TG_API_CFLAGS="$(API_CHECK_FLAGS)" sh tests/api_check.sh $(BUILD)
	$(README_CHECK) tests/readme_check.sh $(BUILD)

# The README's sh blocks, run in order in a scratch directory (tests/readme_check.sh);
# `make asan` leaves them out (their C example links the plain build's way).
README_CHECK ?= sh

run: $(TOOL)
	$(TOOL) train --out $(BUILD)/train --overwrite

# The paper's ETTh1 table, all five horizons (hours on 2 cores; resumable: run it
# again after a stop). RUNS_DIR, HORIZONS, SEEDS, THREADS, EXTRA, MAX_STEPS,
# PLOTS: see tools/doc/etth1.sh.
etth1-table: $(TOOL)
	TGRAPH=$(TOOL) sh tools/doc/etth1.sh

# MODELS, DATASETS, HORIZONS, RUNS_DIR, MAX_STEPS: see tools/doc/tsl.sh.
tsl-table: $(TOOL)
	TGRAPH=$(TOOL) sh tools/doc/tsl.sh

# Also run by `make test`.
func-length:
	sh tests/func_length.sh

# ---- diagrams: every layer forward, backward, at depth 1, profiled (expanded and at
# depth 1: tgraph dot --profile) as .dot, and .svg when Graphviz's dot is installed;
# each layer's summary table as markdown (summary-LAYER.md, profiled, depth 2); and
# crossformer at the ETTh1 paper config (crossformer-etth1-*). Profiles: not run by
# make test. ----
ETTH1_SETS := --set enc_in=7 --set seq_len=168 --set pred_len=24 --set seg_len=6 --set win_size=2 \
              --set factor=10 --set d_model=256 --set d_ff=512 --set n_heads=4 --set e_layers=3 \
              --set dropout=0.2
diagrams: $(TOOL)
	@mkdir -p $(BUILD)/diagrams
	@d=$(BUILD)/diagrams; svg=; command -v dot >/dev/null 2>&1 && svg=1; \
	draw() { name=$$1; shift; \
	  $(TOOL) dot "$$@" -o $$d/$$name.dot $${svg:+--svg $$d/$$name.svg} || exit 1; }; \
	for l in $$($(TOOL) layers --names); do \
	  draw $$l $$l; \
	  draw $$l-backward $$l --backward; \
	  draw $$l-depth1 $$l --depth 1; \
	  draw $$l-profile $$l --profile; \
	  draw $$l-profile-depth1 $$l --profile --depth 1; \
	  $(TOOL) summary $$l --depth 2 --profile --markdown -o $$d/summary-$$l.md || exit 1; \
	done; \
	draw crossformer-etth1-profile-depth1 crossformer $(ETTH1_SETS) --profile --depth 1; \
	$(TOOL) summary crossformer $(ETTH1_SETS) --depth 2 --profile --markdown \
	  -o $$d/summary-crossformer-etth1.md || exit 1; \
	if [ -n "$$svg" ]; then echo "diagrams in $$d/"; \
	else echo "diagrams in $$d/ (.dot only: Graphviz's dot is not installed)"; fi

# ---- GEMM benchmark: GFLOPS per shape and thread count (BENCH_ARGS: see tests/bench/gemm_bench.c) ----
BENCH_ARGS ?= --suite
$(BUILD)/gemm-bench: tests/bench/gemm_bench.c $(BUILD)/tools/bench_time.o $(LIB_A)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(BUILD)/tools/bench_time.o $(LIB_A) $(LDLIBS)

bench-gemm: $(BUILD)/gemm-bench
	$(BUILD)/gemm-bench $(BENCH_ARGS)

# ---- the benchmark table: tgraph bench and tests/bench/torch_bench.py side by side ----
BENCH_CONFIGS  ?=
BENCH_MIN_TIME ?= 1.0
BENCH_THREADS  ?= 2
BENCH_ROUNDS   ?= 3
bench: $(TOOL)
	BENCH_CONFIGS="$(BENCH_CONFIGS)" BENCH_MIN_TIME="$(BENCH_MIN_TIME)" \
	    BENCH_THREADS="$(BENCH_THREADS)" BENCH_ROUNDS="$(BENCH_ROUNDS)" \
	    sh tests/bench/bench_table.sh $(TOOL)

# ---- issue 21's GPT table: tgraph, nanoGPT's train.py and llm.c side by side (tests/bench/bench_gpt.sh) ----
PEERS ?= ../shared/peers
bench-gpt: $(TOOL)
	PEERS="$(PEERS)" GPT_CONFIGS="$(GPT_CONFIGS)" GPT_ROUNDS="$(GPT_ROUNDS)" \
	    GPT_THREADS="$(GPT_THREADS)" GPT_ITERS="$(GPT_ITERS)" GPT_MIN_TIME="$(GPT_MIN_TIME)" \
	    sh tests/bench/bench_gpt.sh $(TOOL)

# ---- row kernels: portable vs AVX2, side by side (ROWS_ARGS: see tests/bench/rows_bench.c) ----
ROWS_ARGS ?=
$(BUILD)/rows-bench: tests/bench/rows_bench.c $(BUILD)/tools/bench_time.o $(LIB_A)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(BUILD)/tools/bench_time.o $(LIB_A) $(LDLIBS)

bench-rows: $(BUILD)/rows-bench
	$(BUILD)/rows-bench $(ROWS_ARGS)

# ---- float32 topk rows: ns per row on each path (TOPK_ARGS: see tests/bench/topk_bench.c) ----

$(BUILD)/topk-bench: tests/bench/topk_bench.c $(BUILD)/tools/bench_time.o $(LIB_A)
	$(CC) $(CPPFLAGS) $(ALL_CFLAGS) -o $@ $< $(BUILD)/tools/bench_time.o $(LIB_A) $(LDLIBS)

bench-topk: $(BUILD)/topk-bench
	$(BUILD)/topk-bench $(TOPK_ARGS)

# ---- sanitizers ----
# LeakSanitizer reports when a test worker exits, after Criterion has counted
# the test as passed: so the output is kept and any report fails the target.
# allocator_may_return_null: a huge request (a user asking for 2^50 elements)
# must come back as NULL -> TG_ERR_NOMEM, as it does without ASan.
asan: export ASAN_OPTIONS = allocator_may_return_null=1:detect_leaks=1
asan:
	@mkdir -p build-asan
	@{ $(MAKE) BUILD=build-asan OPT=-O1 API_CHECK_FLAGS="-fsanitize=address,undefined" README_CHECK=: \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	  LDLIBS="-fsanitize=address,undefined -lm -lpthread" test; echo $$? > build-asan/asan.rc; } \
	  2>&1 | tee build-asan/asan.log
	@if grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' build-asan/asan.log; then \
	  echo "make asan: sanitizer reports (see build-asan/asan.log)" >&2; exit 1; fi
	@exit $$(cat build-asan/asan.rc)

# ---- fuzzing (libFuzzer) ----
# One target per parser: tests/fuzz/fuzz_NAME.c, seeds in tests/fuzz/corpus/NAME/
# (read only), an optional dictionary tests/fuzz/NAME.dict. The library is
# compiled again with the fuzzer's coverage and the sanitizers into build-fuzz/;
# what a run discovers goes to build-fuzz/corpus/NAME/, crashes to
# build-fuzz/crash-NAME-*. The CSV target needs engine/train/dataset.c.
FUZZ_SECONDS ?= 20
FUZZ_CC      ?= clang-14
FUZZ_BUILD   := build-fuzz
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_CFLAGS  := $(CFLAGS_STD) -O1 -g $(FUZZ_SAN)
FUZZ_RUNOPTS ?= -timeout=10 -rss_limit_mb=2048 -max_len=8192
FUZZ_NAMES   := $(filter-out $(if $(wildcard engine/train/dataset.c),,csv), \
                  $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_BINS    := $(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz_%)
FUZZ_LIB_OBJ := $(LIB_SRC:%.c=$(FUZZ_BUILD)/%.o)
FUZZ_LIB     := $(FUZZ_BUILD)/libtgraph-fuzz.a

check-clang:
	@if ! command -v $(FUZZ_CC) >/dev/null 2>&1 || \
	    ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "clang-14 / libFuzzer missing: installing clang-14 libclang-rt-14-dev"; \
	    (apt-get update -q && DEBIAN_FRONTEND=noninteractive \
	       apt-get install -y -q clang-14 libclang-rt-14-dev) || exit 1; \
	  else \
	    echo "clang-14 and libFuzzer are missing. Install them with:" \
	         " sudo apt-get install -y clang-14 libclang-rt-14-dev" >&2; \
	    exit 1; \
	  fi; \
	fi

$(FUZZ_BUILD)/%.o: %.c | check-clang
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h tests/fuzz/common_graph.h $(FUZZ_LIB) | check-clang
	$(FUZZ_CC) $(CPPFLAGS) -Itests/fuzz $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIB) \
	    -lm -lpthread

fuzz-build: check-clang $(FUZZ_BINS)

fuzz: fuzz-build
	@for t in $(FUZZ_NAMES); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  log=$(FUZZ_BUILD)/fuzz_$$t.log; \
	  if ! $(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_RUNOPTS) $$dict \
	        -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/crash-$$t- \
	        $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t > $$log 2>&1; then \
	    tail -n 60 $$log; echo "fuzz_$$t: FAILED (input saved as $(FUZZ_BUILD)/crash-$$t-*)"; exit 1; \
	  fi; \
	  echo "fuzz_$$t: $$(grep -o 'stat::number_of_executed_units: [0-9]*' $$log | grep -o '[0-9]*$$')" \
	       "runs in $(FUZZ_SECONDS) s, corpus $$(ls $(FUZZ_BUILD)/corpus/$$t | wc -l) files, no crash"; \
	done

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(FUZZ_LIB_OBJ:.o=.d)
