# The two commands of the README: `make demo` and `make test`.
# Both first make sure the C libraries the package links are installed.

SWIFT ?= swift
SHELL := bash
SYSTEM_PACKAGES := libcurl4-openssl-dev libsqlite3-dev zlib1g-dev unzip curl python3
DEMO_DIR ?= .build/demo

.PHONY: all build test demo bench deps clean

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
	set -o pipefail; $(SWIFT) build --build-tests 2>&1 | tee .build/build-tests.log
	@scripts/check-warnings.sh .build/build-tests.log
	$(SWIFT) test --skip-build --parallel --num-workers 2

demo: deps
	$(SWIFT) build --product odrpack
	$(SWIFT) build --product odr
	@scripts/demo.sh "$(DEMO_DIR)"

bench: deps
	$(SWIFT) run -c release odrbench

clean:
	rm -rf .build
