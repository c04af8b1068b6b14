# mlakit: two commands on a fresh machine.
#   make run    bootstrap, build, run the default DSA suite (verify + time every workload)
#   make test   bootstrap, build, run every test (GPU tests skip without an sm_90 device)
BUILD   ?= build
CONFIG  ?= Release
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
SUITE   ?= dsa-contest
GENERATOR := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)

.PHONY: all deps configure build run test test-cpu test-gpu test-python sanitize clean

all: build

deps:
	@bash scripts/bootstrap.sh

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=$(CONFIG)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/mlakit bench --suite $(SUITE)

test: build
	cd $(BUILD) && ctest --output-on-failure
	@bash scripts/test_python.sh $(BUILD)

test-cpu: build
	cd $(BUILD) && ctest --output-on-failure -L cpu

test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

test-python: build
	@bash scripts/test_python.sh $(BUILD)

sanitize: build
	@bash scripts/sanitize.sh $(BUILD)

clean:
	rm -rf $(BUILD)
