#!/usr/bin/env bash
# Part of `make test`: installs the C API into a scratch prefix with `make install` (a debug build
# in .build-install, the install's own build folder, so .build keeps what the tests built), then builds the example game with nothing but
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
# The library as a game links it: a versioned SONAME, and only the odr_* functions exported.
# Built without SHARING=1: the share functions are there and say so (ODR_E_UNSUPPORTED).
cc -std=c11 -Wall -Wextra -Werror -x c - $(pkg-config --cflags --libs odr) -o "$out/bin/no-sharing" <<'C'
#include <odr.h>
#include <stdio.h>
int main(void) {
    odr_share *share = NULL;
    odr_status status = odr_manager_start_sharing(NULL, NULL, &share);
    if (status != ODR_E_UNSUPPORTED || share != NULL) {
        fprintf(stderr, "odr_manager_start_sharing without SHARING=1 gave %s, not unsupported\n", odr_status_name(status));
        return 1;
    }
    return 0;
}
C
"$out/bin/no-sharing"
library="$out/prefix/lib/libodr.so.1"
soname="$(readelf -d "$library" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')"
[ "$soname" = "libodr.so.1" ] || { echo "libodr.so.1 has the SONAME '$soname', not libodr.so.1" >&2; exit 1; }
[ "$(readlink "$out/prefix/lib/libodr.so")" = "libodr.so.1" ] || { echo "lib/libodr.so does not link to libodr.so.1" >&2; exit 1; }
[ -s "$out/prefix/lib/libodr.so.1.debug" ] || { echo "make install left no libodr.so.1.debug" >&2; exit 1; }
others="$(readelf --dyn-syms -W "$library" | awk '$7 != "UND" && ($5 == "GLOBAL" || $5 == "WEAK") { print $8 }' | grep -v '^odr_' || true)"
if [ "$(printf '%s' "$others" | grep -c .)" -gt 8 ]; then
    echo "libodr.so.1 exports $(printf '%s\n' "$others" | wc -l) symbols not named odr_* (at most 8):" >&2
    printf '%s\n' "$others" | head -20 >&2
    exit 1
fi
# Built without the FoundationAPI trait: neither the library nor anything it loads is Foundation,
# FoundationInternationalization or ICU (about 40 MB a game would otherwise ship; docs/RUNTIME.md,
# "Foundation and the FoundationAPI trait").
heavy="$(ldd "$library" | awk '{ print $1 }' | grep -E '^(libFoundation\.so|libFoundationInternationalization|lib_FoundationICU|libicu)' || true)"
if [ -n "$heavy" ]; then
    echo "libodr.so.1 loads $(printf '%s' "$heavy" | tr '\n' ' ')- it must need FoundationEssentials only (built with --disable-default-traits?)" >&2
    exit 1
fi
# What a shipping game bundles (make bundle): built and run in a clean folder holding only the
# bundle's files, with no Swift toolchain on any library path.
scripts/bundle-c.sh "$out/prefix" "$out/bundle" >"$out/bundle.log"
clean="$out/clean-game"
rm -rf "$clean" && mkdir -p "$clean" && cp -a "$out/bundle/lib" "$clean/lib"
cc -std=c11 -Wall -Wextra -Werror -I "$out/bundle/include" Examples/c-game/game.c -L "$clean/lib" -lodr \
    -Wl,-rpath,'$ORIGIN/lib' -lpthread -o "$clean/game"
toolchain="$(realpath "$(dirname "$(realpath "$(command -v swift)")")/../lib/swift")"
if env -i ldd "$clean/game" | grep -F "$toolchain"; then
    echo "the bundled game still loads libraries from the toolchain ($toolchain)" >&2
    exit 1
fi
env -i "$clean/game" --version
echo "C API: installed, built the example with pkg-config and ran it; odr.h compiles as C++;" \
     "sharing left out (ODR_E_UNSUPPORTED), SONAME libodr.so.1, only odr_* exported, no Foundation or ICU loaded; the bundle ($(tail -n 1 "$out/bundle.log" | awk '{ print $2, $3 }'), debug build) runs without the toolchain"
