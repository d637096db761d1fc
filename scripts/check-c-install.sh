#!/usr/bin/env bash
# Part of `make test`: installs the C API into a scratch prefix with `make install` (debug build,
# already built by `swift build --build-tests`), then builds the example game with nothing but
# `cc` and `pkg-config`, as a game's build would, and runs it (`--version` links and loads the
# library and the Swift runtime through the rpaths). The header must also compile as C++.
# Playing the levels against a server is CGameTests' part (Tests/ODRCAPITests).
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/c-install
rm -rf "$out"
make --no-print-directory install PREFIX="$out/prefix" CONFIG=debug >"$out.log" 2>&1 || { cat "$out.log"; exit 1; }
export PKG_CONFIG_PATH="$PWD/$out/prefix/lib/pkgconfig"
mkdir -p "$out/bin"
# shellcheck disable=SC2046 # the flags are words
cc -std=c11 -Wall -Wextra -Werror Examples/c-game/game.c $(pkg-config --cflags --libs odr) -o "$out/bin/game"
"$out/bin/game" --version
# shellcheck disable=SC2046
c++ -std=c++11 -Wall -Wextra -Werror -fsyntax-only $(pkg-config --cflags odr) -x c++ - <<'CXX'
#include <odr.h>
int poll_once(odr_manager *manager) {
    odr_event event = ODR_EVENT_INIT;
    return odr_manager_poll_event(manager, &event) == ODR_OK ? static_cast<int>(event.kind) : -1;
}
CXX
echo "C API: installed, built the example with pkg-config and ran it; odr.h compiles as C++"
