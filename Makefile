# cudadent: one command per job on a fresh machine.
#   make            configure (CMake) and build the library, the CLI and the tests
#   make test       build, then run every test (ctest; pytest tests/python where torch imports)
#   make bench      build, then run the CLI's default suite (checked against the reference, timed)
#   make install PREFIX=/opt/cudadent
BUILD ?= build
PREFIX ?= /usr/local
GPU_ARCHS ?= 80;89;90a
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= python3

.PHONY: all configure build test bench install clean
all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release "-DCUDADENT_GPU_ARCHS=$(GPU_ARCHS)"

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure
	@if $(PYTHON) -c "import pytest" 2>/dev/null; then \
	  PYTHONPATH=$(CURDIR)/python CUDADENT_LIBRARY=$(CURDIR)/$(BUILD)/libcudadent.so \
	    $(PYTHON) -m pytest -q tests/python; \
	else \
	  echo "tests/python: skipped: pytest not installed"; \
	fi

bench: build
	$(BUILD)/cudadent-bench --suite default

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
