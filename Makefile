# mlakit: two commands on a fresh machine.
#   make run    bootstrap, build the CLI only, run the default DSA suite (verify + time every workload)
#   make test   bootstrap, build, run every test (GPU tests skip without an sm_90 device; the
#               reasons of skipped tests are listed after each runner)
# ccache is used when it is on PATH (MLAKIT_CCACHE=OFF in CMake turns that off).
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

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(CONFIG)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

# Only what `run` runs: the CLI (not the tests, not the Python binding).
build-cli: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target mlakit_cli

run: build-cli
	$(abspath $(BUILD))/mlakit bench --suite $(SUITE)

test: build
	@bash scripts/run_ctest.sh $(BUILD)
	@bash scripts/test_python.sh $(BUILD)

test-cpu: build
	@bash scripts/run_ctest.sh $(BUILD) -L cpu

test-gpu: build
	@bash scripts/run_ctest.sh $(BUILD) -L gpu

test-python: build
	@bash scripts/test_python.sh $(BUILD)

sanitize: build
	@bash scripts/sanitize.sh $(BUILD)

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
