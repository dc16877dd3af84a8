# cudadent: one command per job on a fresh machine.
#   make            configure (CMake) and build the library, the CLI and the tests
#   make test       build, then run every test (ctest; pytest tests/python where pytest imports),
#                   ending with one summary line 'N passed, M skipped, K failed'
#   make sanitize   host code under ASan + UBSan in build-sanitize/ (no kernels run; no GPU needed)
#   make bench      build, then run the CLI's default suite (checked against the reference, timed)
#   make install PREFIX=/opt/cudadent
BUILD ?= build
PREFIX ?= /usr/local
GPU_ARCHS ?= 80;89;90a
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
PYTHON ?= python3

# no "Entering/Leaving directory" lines from the makes that CMake's build runs
MAKEFLAGS += --no-print-directory

.PHONY: all configure build test sanitize bench install clean
all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release "-DCUDADENT_GPU_ARCHS=$(GPU_ARCHS)"

configure: $(BUILD)/CMakeCache.txt

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# ctest (C tests, install + README example, CLI), then pytest where it imports; ends with one
# summary of every suite and the line 'N passed, M skipped, K failed' (tests/run_tests.sh).
test: build
	@tests/run_tests.sh $(BUILD) $(PYTHON)

# host code under ASan + UBSan (tests/sanitize.sh): C tests and CLI test, no GPU needed
sanitize:
	@tests/sanitize.sh $(CURDIR)/build-sanitize $(JOBS)

bench: build
	$(BUILD)/cudadent-bench --suite default

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
