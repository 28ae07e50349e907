# ampsim — one Makefile, out-of-tree build under $(BUILD).
#   make            libampsim.a, libampsim.so, ampsim
#   make check      install missing packages, then every Check suite (tests/check_*.c), the
#                   layer and size checks, the docs' C examples and the Python tests; the
#                   last line is "N passed, N failed, N skipped"; the suites run side by
#                   side (AMP_CHECK_JOBS, default: the CPUs), each one's output grouped
#   make check-long the long cases: each suite's test case "long" (AMP_LONG=1),
#                   python/tests/long_*.py, and the report pages in headless Chromium
#                   with their PDFs through poppler; the same closing line (CI runs both)
#   make sanitize   the C suites under ASan+UBSan (-fno-sanitize-recover=all)
#   make fuzz       every fuzz harness for FUZZ_SECONDS (fuzz-ci: corpus + 10 s, as CI)
#   make check-layers  includes by layer, no file cycles (and the checker's self-test)
#   make valgrind   the same under valgrind (CK_FORK=no)
#   make bench      ampsim bench round|gemm|train
#   make demo       install missing packages, build, train, write a report
#   make install PREFIX=/usr/local
# Knobs: BUILD=dir  NATIVE=1 (-march=native)  SANITIZER=address,undefined  OPT=-O2
BUILD    ?= build
PREFIX   ?= /usr/local
OPT      ?= -O2
VERSION  := 0.1.0
PKGS     := mpfr gmp check openblas libcjson zlib
CC       ?= cc

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs mpfr gmp openblas libcjson zlib 2>/dev/null)
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

WARN   := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE $(OPT) -g -ffp-contract=off -fno-math-errno \
               -fPIC -fvisibility=hidden -fopenmp $(WARN) $(PKG_CFLAGS) \
               -DAMP_VERSION=\"$(VERSION)\"
ifeq ($(NATIVE),1)
CFLAGS_BASE += -march=native
endif
ifneq ($(SANITIZER),)
CFLAGS_BASE += -fsanitize=$(SANITIZER) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS     += -fsanitize=$(SANITIZER)
endif
override CFLAGS := $(CFLAGS_BASE) $(CFLAGS)
ALL_INC := -Isim -Ianalysis -Ireports
LDLIBS := $(PKG_LIBS) -fopenmp -lm -lpthread

# Layers (folders): sim <- analysis <- reports <- CLI. Each library folder is
# compiled seeing only its own and lower folders' headers, so an upward include
# does not compile; tests/layers.sh (make check-layers) checks it and file cycles.
SIM_SRC      := $(filter-out sim/main.c sim/cli_%.c, $(wildcard sim/*.c))
ANALYSIS_SRC := $(wildcard analysis/*.c)
REPORTS_SRC  := $(wildcard reports/*.c)
LIB_SRC := $(SIM_SRC) $(ANALYSIS_SRC) $(REPORTS_SRC)
CLI_SRC := sim/main.c $(wildcard sim/cli_*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/check_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(filter-out tests/check_%.c, $(wildcard tests/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)
SONAME  := libampsim.so.0
SHLIB   := libampsim.so.$(VERSION)

.PHONY: all check check-run check-long check-layers sanitize valgrind bench install clean demo deps deps-base deps-python \
        deps-fuzz check-exhaustive fuzz fuzz-ci check-python install-python shots
all: $(BUILD)/libampsim.a $(BUILD)/libampsim.so $(BUILD)/ampsim

LAYER_INC_sim      := -Isim
LAYER_INC_analysis := -Isim -Ianalysis
LAYER_INC_reports  := -Isim -Ianalysis -Ireports
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(or $(LAYER_INC_$(firstword $(subst /, ,$<))),$(ALL_INC)) $(FILE_CFLAGS) -MMD -MP -c $< -o $@
$(CLI_OBJ): LAYER_INC_sim := $(ALL_INC)

# The rounding kernels need gcc's full vectoriser (-O2 in gcc 12 only tries the
# "very cheap" model); -O3 changes no result: -ffp-contract=off stays on.
$(BUILD)/sim/round_fast.o $(BUILD)/sim/round_stats.o $(BUILD)/sim/round_avx512.o $(BUILD)/sim/gemm.o: FILE_CFLAGS = -O3 -mprefer-vector-width=512
# The elementary functions' selects if-convert only when the FP operations may
# be computed unconditionally (-fno-trapping-math: exception flags only; no
# result changes, -ffp-contract=off stays on).
$(BUILD)/sim/mathfn.o: FILE_CFLAGS = -O3 -mprefer-vector-width=512 -fno-trapping-math
# The attention kernels' per-head bodies, GELU and the optimizer update: target
# clones vectorised over output elements only (each element's operations and
# their order unchanged; -ffp-contract=off stays on).
$(BUILD)/sim/layer_attention.o $(BUILD)/sim/layer_gelu.o $(BUILD)/sim/optim.o: FILE_CFLAGS = -O3 -mprefer-vector-width=512

# The linear layer's bias gradient and copies: vectorised over columns only
# (each column's double sum keeps its row order; -ffp-contract=off stays on).
$(BUILD)/sim/layer_linear.o: FILE_CFLAGS = -O3 -mprefer-vector-width=512
# The LSTM/GRU step kernels: target clones vectorised over elements only.
$(BUILD)/sim/rnn.o: FILE_CFLAGS = -O3 -mprefer-vector-width=512

$(BUILD)/libampsim.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

# The shared library exports only the AMP_API functions (hidden visibility
# otherwise) and carries a SONAME; libampsim.so and libampsim.so.0 are links.
$(BUILD)/$(SHLIB): $(LIB_OBJ)
	$(CC) -shared -Wl,-soname,$(SONAME) -o $@ $^ $(LDFLAGS) $(LDLIBS)
$(BUILD)/libampsim.so: $(BUILD)/$(SHLIB)
	ln -sf $(SHLIB) $(BUILD)/$(SONAME)
	ln -sf $(SHLIB) $@

$(BUILD)/ampsim: $(CLI_OBJ) $(BUILD)/libampsim.a
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libampsim.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_SUPPORT_OBJ) $(BUILD)/libampsim.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ALL_INC) -Itests -MMD -MP -o $@ $< $(TEST_SUPPORT_OBJ) $(BUILD)/libampsim.a $(LDFLAGS) $(LDLIBS) $(CHECK_LIBS)

# The README's test command: install missing packages, build, run every suite.
# (Built with one job per CPU unless make was given -j.)
NPROC := $(shell nproc 2>/dev/null || echo 2)
JOBS  = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(NPROC))
check: deps
	@$(MAKE) --no-print-directory $(JOBS) all $(TEST_BIN)
	@$(MAKE) --no-print-directory check-run

# Each suite gets the built binary as $$AMPSIM and the source tree as $$AMP_SRCDIR.
# Its last line is "N passed, N failed, N skipped" over every test (tests/run_suites.sh).
check-run: all $(TEST_BIN)
	@AMPSIM=$(CURDIR)/$(BUILD)/ampsim AMP_SRCDIR=$(CURDIR) EXAMPLE_LDFLAGS="$(LDFLAGS)" \
	  AMP_MAKE_FLAGS="SANITIZER=$(SANITIZER) OPT=$(OPT)" \
	  AMP_PYTHON_TESTS=$(if $(SANITIZER),0,1) sh tests/run_suites.sh $(BUILD) $(TEST_BIN)

# The long cases (docs/reliability.md#the-test-suites): every suite under
# AMP_LONG=1 runs only its test case "long"; the Python tests
# python/tests/long_*.py. The same closing line as make check.
check-long: deps
	@$(MAKE) --no-print-directory $(JOBS) all $(TEST_BIN)
	@AMPSIM=$(CURDIR)/$(BUILD)/ampsim AMP_SRCDIR=$(CURDIR) EXAMPLE_LDFLAGS="$(LDFLAGS)" \
	  AMP_MAKE_FLAGS="SANITIZER=$(SANITIZER) OPT=$(OPT)" \
	  AMP_PYTHON_TESTS=$(if $(SANITIZER),0,1) sh tests/run_suites.sh --long $(BUILD) $(TEST_BIN)

# The layer check alone: includes by layer, no file cycles, and its self-test.
check-layers: all
	@sh tests/layers.sh . $(BUILD) && sh tests/layers.sh --self-test .

sanitize:
	$(MAKE) BUILD=build-sanitize SANITIZER=address,undefined OPT=-O1 check-run

valgrind: all $(TEST_BIN)
	@fail=0; for t in $(TEST_BIN); do echo "== valgrind $$t"; \
	  CK_FORK=no AMP_QUICK=1 AMPSIM=$(CURDIR)/$(BUILD)/ampsim AMP_SRCDIR=$(CURDIR) \
	    valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite $$t || fail=1; done; test $$fail -eq 0

check-exhaustive: all $(BUILD)/tests/exhaustive_round $(BUILD)/tests/check_round_random
	$(BUILD)/tests/exhaustive_round
	AMP_FULL=1 $(BUILD)/tests/check_round_random

$(BUILD)/tests/exhaustive_round: tests/exhaustive/exhaustive_round.c tests/round_ref.h $(BUILD)/libampsim.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ALL_INC) -Itests -o $@ $< $(BUILD)/libampsim.a $(LDFLAGS) $(LDLIBS)

bench: all
	$(BUILD)/ampsim bench round
	$(BUILD)/ampsim bench gemm
	$(BUILD)/ampsim bench train

# deps: everything, PyTorch included (ampsim.torch and its tests); demo needs
# only the base packages and never waits for PyTorch.
deps:
	@sh .ci/deps.sh base python
deps-base:
	@sh .ci/deps.sh base
deps-python:
	@sh .ci/deps.sh python
deps-fuzz:
	@sh .ci/deps.sh fuzz

demo: deps-base
	@$(MAKE) --no-print-directory all
	@sh reports/demo.sh $(BUILD)/ampsim

# Installs the binary, the library (libampsim.so.$(VERSION) with its SONAME
# link libampsim.so.0 and the link libampsim.so; libampsim.a), the headers, a
# pkg-config file, the data sets and the report's gnuplot scripts, which the
# installed binary finds in <prefix>/share/ampsim.
# Screenshots of report pages in headless Chromium (reports/shots.sh).
shots: all
	@sh .ci/deps.sh browser
	sh reports/shots.sh $(CURDIR)/$(BUILD)/ampsim $(CURDIR)/$(BUILD)/shots

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/ampsim \
	  $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/ampsim/datasets
	install -m 755 $(BUILD)/ampsim $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(BUILD)/libampsim.a $(BUILD)/$(SHLIB) $(DESTDIR)$(PREFIX)/lib/
	ln -sf $(SHLIB) $(DESTDIR)$(PREFIX)/lib/$(SONAME)
	ln -sf $(SHLIB) $(DESTDIR)$(PREFIX)/lib/libampsim.so
	install -m 644 sim/ampsim.h sim/formats.def $(wildcard sim/amp_*.h analysis/amp_*.h reports/amp_*.h) $(DESTDIR)$(PREFIX)/include/ampsim/
	install -m 644 datasets/digits.csv.gz datasets/austen.txt datasets/README.md $(DESTDIR)$(PREFIX)/share/ampsim/datasets/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' sim/ampsim.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ampsim.pc

clean:
	rm -rf $(BUILD) build-sanitize

# The Python package (python/ampsim, ctypes over libampsim.so): its tests with
# Debian's interpreter, and its installation where Debian's python3 finds it.
PYTHON ?= /usr/bin/python3
PY_DIR ?= $(PREFIX)/lib/python3/dist-packages
# (make check runs them too, inside tests/run_suites.sh.)
check-python: $(BUILD)/libampsim.so $(BUILD)/ampsim
	AMPSIM=$(CURDIR)/$(BUILD)/ampsim AMPSIM_LIB=$(CURDIR)/$(BUILD)/libampsim.so $(PYTHON) python/run_tests.py

install: install-python
install-python:
	@for f in $$(cd python && find ampsim -name '*.py' | sort); do \
	  install -D -m 644 python/$$f $(DESTDIR)$(PY_DIR)/$$f || exit 1; done

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_SUPPORT_OBJ:.o=.d) $(TEST_BIN:=.d)

# Fuzz every reader and parser (libFuzzer + ASan + UBSan, clang). The harnesses
# link the whole library, built from the same source lists as libampsim
# (LIB_SRC) with clang's fuzzer instrumentation, so a new dependency of a
# reader cannot break them. `make fuzz` runs each for FUZZ_SECONDS; new
# inputs go to $(BUILD)/fuzz/corpus_*, the committed seeds (tests/fuzz/corpus_*,
# made by tests/fuzz/make_seeds.py) are only read. `make fuzz-ci` (what CI
# runs) builds every harness, replays its committed corpus and fuzzes for
# FUZZ_CI_SECONDS.
FUZZ_SECONDS    ?= 60
FUZZ_CI_SECONDS ?= 10
FUZZ_CC      ?= clang
FUZZ_BUILD   := $(BUILD)/fuzz
FUZZ_FLAGS   := -std=c11 -D_GNU_SOURCE -g -O1 -ffp-contract=off -fno-omit-frame-pointer -fopenmp -Wno-pass-failed \
                -fno-sanitize-recover=all $(PKG_CFLAGS) -DAMP_VERSION=\"$(VERSION)\"
FUZZERS      := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_OBJ     := $(LIB_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIBS    := $(PKG_LIBS) -fopenmp -lm -lpthread

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link,address,undefined \
	  $(or $(LAYER_INC_$(firstword $(subst /, ,$<))),$(ALL_INC)) -MMD -MP -c $< -o $@
$(FUZZ_BUILD)/libampsim-fuzz.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_memfile.h $(FUZZ_BUILD)/libampsim-fuzz.a
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer,address,undefined $(ALL_INC) -o $@ $< \
	  $(FUZZ_BUILD)/libampsim-fuzz.a $(FUZZ_LIBS)
-include $(FUZZ_OBJ:.o=.d)

# fuzz_run SECONDS: every harness over its committed seeds and its dictionary.
define fuzz_run
	@for h in $(FUZZERS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus_$$h; \
	  echo "== fuzz_$$h for $(1) s"; \
	  $(FUZZ_BUILD)/fuzz_$$h -max_total_time=$(1) -timeout=10 -rss_limit_mb=2048 -artifact_prefix=$(FUZZ_BUILD)/ \
	    -max_len=4096 -dict=tests/fuzz/$$h.dict -print_final_stats=1 \
	    $(FUZZ_BUILD)/corpus_$$h tests/fuzz/corpus_$$h > $(FUZZ_BUILD)/fuzz_$$h.log 2>&1; rc=$$?; \
	  grep -E '^(stat::number_of_executed_units|INFO: seed corpus)' $(FUZZ_BUILD)/fuzz_$$h.log; \
	  if [ $$rc != 0 ]; then tail -n 40 $(FUZZ_BUILD)/fuzz_$$h.log; echo "fuzz_$$h: FAILED"; exit 1; fi; \
	done
endef

fuzz: deps-fuzz $(FUZZERS:%=$(FUZZ_BUILD)/fuzz_%)
	$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-ci: deps-fuzz $(FUZZERS:%=$(FUZZ_BUILD)/fuzz_%)
	$(call fuzz_run,$(FUZZ_CI_SECONDS))

# The report's gnuplot scripts, found by an installed ampsim in <prefix>/share/ampsim/reports.
install: install-report-scripts
install-report-scripts:
	install -d $(DESTDIR)$(PREFIX)/share/ampsim/reports
	install -m 644 reports/fig*.gp $(DESTDIR)$(PREFIX)/share/ampsim/reports/
.PHONY: install-report-scripts

# The MPI plugin of distributed compare/sweep: sim/cli_dist.c dlopen()s
# $(BUILD)/ampsim-mpi.so (installed: <prefix>/lib/ampsim/) only under
# mpirun/srun, so the ampsim binary itself never links or needs MPI. Built only
# when pkg-config finds Open MPI (ompi-c).
HAVE_MPI := $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1)
ifeq ($(HAVE_MPI),1)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c)
MPI_LIBS   := $(shell pkg-config --libs ompi-c) -Wl,-rpath,$(shell pkg-config --variable=libdir ompi-c)
all: $(BUILD)/ampsim-mpi.so
check-run: $(BUILD)/ampsim-mpi.so
$(BUILD)/ampsim-mpi.so: sim/mpi/mpi_plugin.c sim/mpi/amp_mpi_plugin.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(ALL_INC) $(MPI_CFLAGS) -shared -o $@ $< $(LDFLAGS) $(MPI_LIBS)
install: install-mpi-plugin
install-mpi-plugin: $(BUILD)/ampsim-mpi.so
	install -d $(DESTDIR)$(PREFIX)/lib/ampsim
	install -m 755 $(BUILD)/ampsim-mpi.so $(DESTDIR)$(PREFIX)/lib/ampsim/
.PHONY: install-mpi-plugin
endif
