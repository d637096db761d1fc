#!/usr/bin/env bash
# Release builds of odr and odrpack do what the debug builds the tests use do: a split catalog
# (format 3) is built, served by a plain static server, one tag installed and then updated, each
# within issue 27's metadata targets (256 KiB for the install, 64 KiB for the update).
#
# Why: on 2026-11-27 a release build of odr crashed (SIGSEGV copying a task group's results) and,
# built again, lost downloaded metadata, in code whose debug build passed every test. `make test`
# runs this after the tests, so such a difference fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
"$SWIFT" build -c release --product odrpack
"$SWIFT" build -c release --product odr
bin=$("$SWIFT" build -c release --show-bin-path)
MAX_INSTALL_BYTES=262144 MAX_UPDATE_BYTES=65536 ODRPACK="$bin/odrpack" ODR="$bin/odr" scripts/split-fetch-scale.sh
