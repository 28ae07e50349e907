# ampsim — one Makefile, out-of-tree build under $(BUILD).
#   make            libampsim.a, libampsim.so, ampsim
#   make check      every Check suite (tests/check_*.c), fails on any failure
#   make sanitize   the same under ASan+UBSan (-fno-sanitize-recover=all)
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
               -fPIC -fopenmp $(WARN) -Isim -Ianalysis -Ireports $(PKG_CFLAGS) \
               -DAMP_VERSION=\"$(VERSION)\"
ifeq ($(NATIVE),1)
CFLAGS_BASE += -march=native
endif
ifneq ($(SANITIZER),)
CFLAGS_BASE += -fsanitize=$(SANITIZER) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS     += -fsanitize=$(SANITIZER)
endif
override CFLAGS := $(CFLAGS_BASE) $(CFLAGS)
LDLIBS := $(PKG_LIBS) -fopenmp -lm -lpthread

# Library: every .c under sim/ analysis/ reports/ except the CLI (sim/main.c, sim/cli_*.c).
LIB_SRC := $(filter-out sim/main.c sim/cli_%.c, $(wildcard sim/*.c analysis/*.c reports/*.c))
CLI_SRC := sim/main.c $(wildcard sim/cli_*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_SRC := $(wildcard tests/check_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
TEST_SUPPORT := $(filter-out tests/check_%.c, $(wildcard tests/*.c))
TEST_SUPPORT_OBJ := $(TEST_SUPPORT:%.c=$(BUILD)/%.o)

.PHONY: all check check-run sanitize valgrind bench install clean demo deps deps-base check-exhaustive fuzz \
        check-python install-python
all: $(BUILD)/libampsim.a $(BUILD)/libampsim.so $(BUILD)/ampsim

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(FILE_CFLAGS) -MMD -MP -c $< -o $@

# The rounding kernels need gcc's full vectoriser (-O2 in gcc 12 only tries the
# "very cheap" model); -O3 changes no result: -ffp-contract=off stays on.
$(BUILD)/sim/round_fast.o $(BUILD)/sim/round_stats.o $(BUILD)/sim/round_avx512.o: FILE_CFLAGS = -O3 -mprefer-vector-width=512

$(BUILD)/libampsim.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/libampsim.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDFLAGS) $(LDLIBS)

$(BUILD)/ampsim: $(CLI_OBJ) $(BUILD)/libampsim.a
	$(CC) -o $@ $(CLI_OBJ) $(BUILD)/libampsim.a $(LDFLAGS) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(TEST_SUPPORT_OBJ) $(BUILD)/libampsim.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -MMD -MP -o $@ $< $(TEST_SUPPORT_OBJ) $(BUILD)/libampsim.a $(LDFLAGS) $(LDLIBS) $(CHECK_LIBS)

# The README's test command: install missing packages, build, run every suite.
check: deps
	@$(MAKE) --no-print-directory check-run
	@$(MAKE) --no-print-directory check-python

# Each suite gets the built binary as $$AMPSIM and the source tree as $$AMP_SRCDIR.
check-run: all $(TEST_BIN)
	@fail=0; pass=0; for t in $(TEST_BIN); do \
	  echo "== $$t"; \
	  if AMPSIM=$(CURDIR)/$(BUILD)/ampsim AMP_SRCDIR=$(CURDIR) $$t; then pass=$$((pass+1)); else fail=$$((fail+1)); echo "FAILED: $$t"; fi; \
	done; echo "suites: $$pass passed, $$fail failed"; test $$fail -eq 0

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
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libampsim.a $(LDFLAGS) $(LDLIBS)

bench: all
	$(BUILD)/ampsim bench round
	$(BUILD)/ampsim bench gemm
	$(BUILD)/ampsim bench train

# deps: everything, PyTorch included (ampsim.torch and its tests); demo needs
# only the base packages and never waits for PyTorch.
deps:
	@sh .ci/deps.sh torch

deps-base:
	@sh .ci/deps.sh

demo: deps-base
	@$(MAKE) --no-print-directory all
	@sh reports/demo.sh $(BUILD)/ampsim

install: all
	@mkdir -p $(DESTDIR)$(PREFIX)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/ampsim $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BUILD)/ampsim $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(BUILD)/libampsim.a $(BUILD)/libampsim.so $(DESTDIR)$(PREFIX)/lib/
	install -m 644 sim/ampsim.h sim/formats.def $(wildcard sim/amp_*.h analysis/amp_*.h reports/amp_*.h) $(DESTDIR)$(PREFIX)/include/ampsim/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' sim/ampsim.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/ampsim.pc

clean:
	rm -rf $(BUILD) build-sanitize

# The Python package (python/ampsim, ctypes over libampsim.so): its tests with
# Debian's interpreter, and its installation where Debian's python3 finds it.
PYTHON ?= /usr/bin/python3
PY_DIR ?= $(PREFIX)/lib/python3/dist-packages
check-python: $(BUILD)/libampsim.so $(BUILD)/ampsim
	AMPSIM=$(CURDIR)/$(BUILD)/ampsim AMPSIM_LIB=$(CURDIR)/$(BUILD)/libampsim.so $(PYTHON) python/run_tests.py

install: install-python
install-python:
	@for f in $$(cd python && find ampsim -name '*.py' | sort); do \
	  install -D -m 644 python/$$f $(DESTDIR)$(PY_DIR)/$$f || exit 1; done

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_SUPPORT_OBJ:.o=.d)

# Fuzz every reader and parser (libFuzzer + ASan + UBSan, clang), each for
# FUZZ_SECONDS; new inputs go to $(BUILD)/fuzz/corpus_*, the committed seeds
# (tests/fuzz/corpus_*, made by tests/fuzz/make_seeds.py) are only read.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_SRC     := sim/base.c sim/io.c analysis/npy.c analysis/safetensors.c analysis/tensorfile.c
FUZZ_CFLAGS  := -std=c11 -D_GNU_SOURCE -g -O1 -ffp-contract=off -fno-omit-frame-pointer \
                -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -Isim -Ianalysis -Ireports $(shell pkg-config --cflags libcjson) -DAMP_VERSION=\"fuzz\"
FUZZERS      := npy safetensors digits policy scaler_spec csv checkpoint
# Extra library sources per harness (FUZZ_SRC is linked into every one).
FUZZ_ROUND   := sim/format.c sim/round.c sim/round_fast.c sim/round_stats.c sim/round_avx512.c sim/round_mpfr.c
FUZZ_SCALERS := sim/scaler.c sim/scaler_loss.c sim/scaler_fp8.c
FUZZ_SRC_digits      := sim/data_digits.c
FUZZ_SRC_policy      := $(FUZZ_ROUND) sim/policy.c
FUZZ_SRC_scaler_spec := $(FUZZ_ROUND) $(FUZZ_SCALERS)
FUZZ_SRC_csv         := reports/csv.c
FUZZ_SRC_checkpoint  := $(FUZZ_ROUND) $(FUZZ_SCALERS) sim/tensor.c sim/checkpoint.c
$(foreach h,$(FUZZERS),$(eval $(BUILD)/fuzz/fuzz_$(h): $(FUZZ_SRC_$(h)) tests/fuzz/fuzz_memfile.h))

fuzz: $(FUZZERS:%=$(BUILD)/fuzz/fuzz_%)
	@for h in $(FUZZERS); do \
	  mkdir -p $(BUILD)/fuzz/corpus_$$h; \
	  echo "== fuzz_$$h for $(FUZZ_SECONDS) s"; \
	  $(BUILD)/fuzz/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -max_len=4096 -dict=tests/fuzz/$$h.dict -print_final_stats=1 \
	    $(BUILD)/fuzz/corpus_$$h tests/fuzz/corpus_$$h || exit 1; \
	done

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_SRC) $(wildcard sim/amp_*.h analysis/amp_*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRC) $(filter-out $(FUZZ_SRC),$(FUZZ_SRC_$*)) \
	  $(shell pkg-config --libs libcjson zlib mpfr gmp) -fopenmp -lm

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
	$(CC) $(CFLAGS) $(MPI_CFLAGS) -shared -o $@ $< $(LDFLAGS) $(MPI_LIBS)
install: install-mpi-plugin
install-mpi-plugin: $(BUILD)/ampsim-mpi.so
	install -d $(DESTDIR)$(PREFIX)/lib/ampsim
	install -m 755 $(BUILD)/ampsim-mpi.so $(DESTDIR)$(PREFIX)/lib/ampsim/
.PHONY: install-mpi-plugin
endif
