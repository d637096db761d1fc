# The two commands of the README: `make demo` and `make test`, and `make install` of the C API.
# All first make sure the C libraries and tools the package needs are installed.

SWIFT ?= swift
SHELL := bash
# avahi-daemon and dbus-daemon: PeerDiscoveryTests start a private bus and Avahi of their own (never
# the system's; Avahi in network and mount namespaces of its own, set up with iproute2's `ip`), and
# skip their end-to-end case without the daemons.
SYSTEM_PACKAGES := libcurl4-openssl-dev libsqlite3-dev zlib1g-dev unzip curl python3 gcc g++ pkg-config binutils patchelf strace valgrind chromium rclone zsync avahi-daemon dbus-daemon iproute2
# `make install PREFIX=...`: lib/libodr.so.1 (its SONAME; lib/libodr.so links to it), its debug info
# lib/libodr.so.1.debug, include/odr.h and lib/pkgconfig/odr.pc (docs/C-API.md). CONFIG=debug for a
# quick one. The library exports only the odr_* functions (scripts/libodr.map).
PREFIX ?= /usr/local
CONFIG ?= release
# Built without the package's default trait FoundationAPI, so the library needs FoundationEssentials
# only, not Foundation and its ICU data (docs/RUNTIME.md, "Foundation and the FoundationAPI trait").
# It builds in a folder of its own (.build-install), so that its other flags never invalidate what
# `swift build` and `swift build -c release` keep in .build: switching between them recompiles nothing.
# SHARING=1 adds the package's trait Sharing: odr_manager_start_sharing serves the store to peers
# from the game's process (docs/C-API.md, "Sharing with peers"), at 11.5 MB more to ship; without it
# the function answers ODR_E_UNSUPPORTED. It builds in a folder of its own (.build-install-sharing).
ODR_TRAIT_FLAGS = $(if $(filter 1,$(SHARING)),--traits Sharing,--disable-default-traits)
ODR_LINK_FLAGS = $(ODR_TRAIT_FLAGS) -Xlinker -soname=libodr.so.1 -Xlinker --version-script=$(CURDIR)/scripts/libodr.map
ODR_SCRATCH = $(CURDIR)/.build-install$(if $(filter 1,$(SHARING)),-sharing,)
# STATIC_STDLIB=1 links the Swift runtime and FoundationEssentials into libodr.so.1 itself (-static-stdlib), in
# a build folder of its own (.build-static): one self-contained file, no Swift library to ship.
ifeq ($(STATIC_STDLIB),1)
ODR_LINK_FLAGS += -Xswiftc -static-stdlib
ODR_SCRATCH = $(CURDIR)/.build-static$(if $(filter 1,$(SHARING)),-sharing,)
endif
ODR_LINK_FLAGS += --scratch-path $(ODR_SCRATCH)
ODR_BIN_FLAGS = --scratch-path $(ODR_SCRATCH)
DEMO_DIR ?= .build/demo

.PHONY: all build test demo bench deps clean install bundle fuzz fuzz-build fuzz-seeds

all: build

# Installs the Debian packages we build against when they are missing. As root it runs apt-get;
# otherwise it prints the exact command to run and fails.
deps:
	@missing=""; \
	for p in $(SYSTEM_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = "0" ]; then \
	    echo "Installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null || exit 1; \
	  else \
	    echo "Missing system packages:$$missing"; \
	    echo "Install them with:  sudo apt-get install -y$$missing"; \
	    exit 1; \
	  fi; \
	fi

build: deps
	$(SWIFT) build

# A warning in the project's own code fails the test run (scripts/check-warnings.sh).
test: deps
	@mkdir -p .build
	@python3 scripts/doc-samples.py --check
	# SwiftPM warns on every build that swift-distributed-tracing (a dependency of Hummingbird) ships
	# a CMakeLists.txt it does not use: not ours, and nothing in Package.swift can silence it, so the
	# line is dropped from what the build shows (the log keeps it; check-warnings.sh reads only
	# compiler warnings in our files).
	set -o pipefail; $(SWIFT) build --build-tests 2>&1 | tee .build/build-tests.log | { grep -v "^warning: 'swift-distributed-tracing': found [0-9]* file(s) which are unhandled" || true; }
	@scripts/check-warnings.sh .build/build-tests.log
	@scripts/check-c-install.sh
	@scripts/check-c-memory.sh
	# One test at a time: run concurrently, the tests' servers, stores and transfers held about
	# 1,500 descriptors at once, and Foundation's Process.run (which the tests use to start odr,
	# odrpack and the C programs) crashed with SIGSEGV reading /proc/self/fd past about 1,360
	# entries. Serially the peak is about 200 descriptors and the run takes about 6 minutes on 2 cores.
	# --disable-xctest: every test is a Swift Testing test; XCTest would only print "Executed 0 tests".
	$(SWIFT) test --skip-build --no-parallel --disable-xctest
	# The soak test (CONTRIBUTING.md, "Soak test"): 60 s of processes fetching, holding, purging,
	# verifying and being killed on one store; fails on any broken promise. Adds about 70 s (debug build).
	"$$($(SWIFT) build --show-bin-path)/odrbench" soak --seconds 60 --workers 4 --kill
	# Release builds of odr and odrpack install and update a tag of a split catalog within issue
	# 27's metadata targets (scripts/release-smoke.sh): a crash only a release build showed once.
	# Adds about 10 minutes on 2 cores (two release builds).
	SWIFT="$(SWIFT)" scripts/release-smoke.sh

demo: deps
	$(SWIFT) build --product odrpack
	$(SWIFT) build --product odr
	@scripts/demo.sh "$(DEMO_DIR)"

# The C API: the shared library (the SwiftPM product odrc, installed as libodr.so), its header and
# a pkg-config file whose flags set an rpath to the library and the library's own rpath reaches the
# Swift runtime, so `cc game.c $$(pkg-config --cflags --libs odr)` builds a program that runs.
install: deps
	$(SWIFT) build -c $(CONFIG) --product odrc $(ODR_LINK_FLAGS)
	@bin="$$($(SWIFT) build -c $(CONFIG) $(ODR_BIN_FLAGS) --show-bin-path)"; \
	prefix="$$(mkdir -p "$(PREFIX)" && cd "$(PREFIX)" && pwd)"; \
	install -d "$$prefix/lib/pkgconfig" "$$prefix/include"; \
	install -m 755 "$$bin/libodrc.so" "$$prefix/lib/libodr.so.1"; \
	objcopy --only-keep-debug "$$prefix/lib/libodr.so.1" "$$prefix/lib/libodr.so.1.debug"; \
	objcopy --strip-debug --add-gnu-debuglink="$$prefix/lib/libodr.so.1.debug" "$$prefix/lib/libodr.so.1"; \
	ln -sfn libodr.so.1 "$$prefix/lib/libodr.so"; \
	install -m 644 Sources/CODR/include/odr.h "$$prefix/include/odr.h"; \
	version="$$(sed -n 's/^#define ODR_VERSION "\(.*\)"/\1/p' Sources/CODR/include/odr.h)"; \
	sed -e "s|@PREFIX@|$$prefix|" -e "s|@VERSION@|$$version|" scripts/odr.pc.in > "$$prefix/lib/pkgconfig/odr.pc"; \
	echo "installed libodr $$version into $$prefix (PKG_CONFIG_PATH=$$prefix/lib/pkgconfig)"

# `make bundle BUNDLE=...`: what a game ships (docs/C-API.md, "What a shipping game bundles"):
# libodr.so.1 and the Swift runtime libraries it loads, stripped, each finding the others beside
# itself ($$ORIGIN), plus odr.h; prints each file's size and the total. It installs into a scratch
# prefix of its own (BUNDLE_PREFIX), never into PREFIX.
BUNDLE ?= .build/odr-bundle
BUNDLE_PREFIX ?= .build/odr-bundle-install
bundle: deps
	@$(MAKE) --no-print-directory install PREFIX="$(BUNDLE_PREFIX)"
	@scripts/bundle-c.sh "$(BUNDLE_PREFIX)" "$(BUNDLE)"

# Fuzzing (CONTRIBUTING.md, "Fuzzing"): `make fuzz` builds one libFuzzer executable per reader of
# untrusted bytes (Fuzz/Targets/, added to the package only when ODR_FUZZ=1) with address
# sanitizer, then runs each for FUZZ_SECONDS from the seed corpus Fuzz/Corpus/<target>/ (with the
# words of Fuzz/Dictionaries/<target>.dict, if any). New
# inputs go to $(FUZZ_DIR)/corpus/<target>/, crashes and timeouts to $(FUZZ_DIR)/crashes/<target>/.
# `make fuzz FUZZ_TARGETS=journal FUZZ_SECONDS=600` runs one target longer. Leak checking is off:
# Swift keeps enum tags in the spare bits of pointers, which LeakSanitizer cannot follow, so it
# reports objects held by globals as leaked (the memory limits still catch blow-ups: 512 MiB of
# resident memory, 256 MiB in one allocation, so an allocation sized by the input is a finding).
# Swift's own crash handler is off too: under ASan it reported its own reads instead of the trap.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= pack-stream pack-range central-directory manifest-json manifest-compact manifest-compact-file split-manifest tag-bin file-table catalog journal tag-rules response-headers dbus-reply
FUZZ_DIR ?= .build-fuzz
# More libFuzzer flags, e.g. FUZZ_FLAGS="-fork=2 -ignore_crashes=1" to go on after a crash.
FUZZ_FLAGS ?=
FUZZ_BUILD := ODR_FUZZ=1 $(SWIFT) build -c release --scratch-path $(FUZZ_DIR) -Xswiftc -sanitize=fuzzer,address

fuzz-build: deps
	@for t in $(FUZZ_TARGETS); do \
	  $(FUZZ_BUILD) --product fuzz-$$t || exit 1; \
	done

fuzz: fuzz-build
	@bin="$$($(FUZZ_BUILD) --show-bin-path)"; failed=""; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p "$(FUZZ_DIR)/corpus/$$t" "$(FUZZ_DIR)/crashes/$$t" "$(FUZZ_DIR)/logs"; \
	  log="$(FUZZ_DIR)/logs/$$t.log"; \
	  echo "fuzz-$$t: $(FUZZ_SECONDS) s (log $$log)"; \
	  SWIFT_BACKTRACE=enable=no ASAN_OPTIONS=detect_leaks=0 "$$bin/fuzz-$$t" -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=512 -malloc_limit_mb=256 \
	    -detect_leaks=0 -print_final_stats=1 $(FUZZ_FLAGS) \
	    $$(test -f "Fuzz/Dictionaries/$$t.dict" && echo "-dict=Fuzz/Dictionaries/$$t.dict") \
	    -artifact_prefix="$(FUZZ_DIR)/crashes/$$t/" "$(FUZZ_DIR)/corpus/$$t" "Fuzz/Corpus/$$t" > "$$log" 2>&1 \
	    && status=0 || status=$$?; \
	  if [ $$status != 0 ] || [ -n "$$(ls -A "$(FUZZ_DIR)/crashes/$$t")" ]; then failed="$$failed $$t"; fi; \
	  sed -n 's/^stat::\(number_of_executed_units\|average_exec_per_sec\|new_units_added\|peak_rss_mb\): */  \1 /p' "$$log" | awk '!seen[$$0]++' | grep . \
	    || grep -E '^#[0-9]+: cov' "$$log" | tail -n 1; \
	done; \
	echo "new inputs: $(FUZZ_DIR)/corpus/<target>/; crashes and timeouts: $(FUZZ_DIR)/crashes/<target>/"; \
	if [ -n "$$failed" ]; then \
	  echo "FAILED:$$failed. Reproduce: SWIFT_BACKTRACE=enable=no $$bin/fuzz-TARGET FILE; keep FILE in Fuzz/Regressions/TARGET/, then delete it here"; \
	  for t in $$failed; do ls -d "$(FUZZ_DIR)/crashes/$$t/"*; done; exit 1; \
	fi

# Rewrites the seed corpus Fuzz/Corpus/ from catalogs the builder makes now (FuzzRegressionTests).
fuzz-seeds: deps
	rm -rf Fuzz/Corpus
	ODR_FUZZ_WRITE_SEEDS="$(CURDIR)/Fuzz/Corpus" $(SWIFT) test --filter "FuzzRegressionTests/writeSeedCorpus"

bench: deps
	$(SWIFT) run -c release odrbench

clean:
	rm -rf .build
