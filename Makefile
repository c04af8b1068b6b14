# mlakit: two commands on a fresh machine.
#   make run    bootstrap, build the CLI only, run the default DSA suite (verify + time every workload)
#   make test   bootstrap, build, run every test (GPU tests skip without an sm_90 device); prints a
#               short summary: counts, skip reasons grouped, and where the full logs are
# The build's whole output is kept in $(BUILD)/build.log (scripts/build.sh); ptxas's expected spill
# warnings (scripts/sass_local_memory.txt) are one line. ccache is used when it is on PATH
# (MLAKIT_CCACHE=OFF in CMake turns that off).
BUILD   ?= build
CONFIG  ?= Release
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
SUITE   ?= dsa-contest
GENERATOR := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)

.PHONY: all deps configure build build-cli run test test-cpu test-gpu test-python sanitize scan-sass \
        flashinfer-bench fib-wheels peers clean

all: build

deps:
	@bash scripts/bootstrap.sh

# The configure's output goes to $(BUILD)/configure.log; shown in full when it fails.
$(BUILD)/CMakeCache.txt: | deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(CONFIG) >$(BUILD)/configure.log 2>&1 || \
	  { cat $(BUILD)/configure.log; rm -f $(BUILD)/CMakeCache.txt; exit 1; }
	@grep -E '^-- mlakit:|Warning' $(BUILD)/configure.log || true
	@echo "[configure] $(BUILD) ($(CONFIG)); log: $(BUILD)/configure.log"

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	@bash scripts/build.sh $(BUILD) $(JOBS)

# Only what `run` runs: the CLI (not the tests, not the Python binding).
build-cli: deps configure
	@bash scripts/build.sh $(BUILD) $(JOBS) --target mlakit_cli

run: build-cli
	$(abspath $(BUILD))/mlakit bench --suite $(SUITE)

# The build's progress stays in $(BUILD)/build.log; ctest and pytest print their summaries.
test: deps configure
	@bash scripts/build.sh --quiet $(BUILD) $(JOBS)
	@bash scripts/run_ctest.sh $(BUILD)
	@bash scripts/test_python.sh $(BUILD)

test-cpu: build
	@bash scripts/run_ctest.sh $(BUILD) -L cpu

test-gpu: build
	@bash scripts/run_ctest.sh $(BUILD) -L gpu

test-python: build
	@bash scripts/test_python.sh $(BUILD)

# Without compute-sanitizer or a GPU: says which is missing and exits 0, before building anything.
sanitize:
	@if bash scripts/sanitize.sh --can-run; then \
	  $(MAKE) --no-print-directory build && bash scripts/sanitize.sh $(BUILD); fi

# The kernels' SASS scanned for forms that compile but fault (scripts/scan_sass.sh); no GPU needed.
scan-sass: configure
	@bash scripts/scan_sass.sh $(BUILD)

# flashinfer-bench (docs/flashinfer-bench.md): the harness runs mlakit on the project's workloads.
# Needs a GPU and the wheels of fib-wheels in .whl/; skips with the reason elsewhere.
flashinfer-bench:
	@bash scripts/run_flashinfer_bench.sh

fib-wheels:
	@bash scripts/fetch_fib_wheels.sh

# mlakit's DSA decode beside its peers in one run (docs/peers.md); PEER_ARGS reach the script.
# Needs torch, triton and a GPU; says why and exits 0 elsewhere.
peers: build
	PYTHONPATH=$(abspath $(BUILD))/python python3 scripts/peer_bench.py $(PEER_ARGS)

clean:
	rm -rf $(BUILD)
