#!/usr/bin/env bash
# Part of `make test`, after scripts/check-c-install.sh: plays the example game twice (Examples/c-game,
# built against the bundle a game ships, in a clean folder) through the sample catalog, served by `odrpack serve` in
# another process, under valgrind's memcheck with the Swift runtime's suppressions
# (scripts/valgrind-swift.supp), then built with AddressSanitizer. Fails on any memory error or any
# block definitely lost.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.build/c-install
# The bundle's libraries are stripped: valgrind 3.19 gives up on the DWARF 5 debug information
# Swift 6.3 writes ("unhandled dwarf2 abbrev form code 0x25"), in libodr.so.1.debug as in an
# unstripped library, so stacks show addresses, not names (docs/C-API.md, "Memory checks").
game="$out/clean-game/game"
[ -x "$game" ] || { echo "$game is missing: run scripts/check-c-install.sh first" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind is missing: run make deps (as root) or apt-get install valgrind" >&2; exit 1; }
bin="$(swift build --show-bin-path)"
work="$out/valgrind"
rm -rf "$work" && mkdir -p "$work"
"$bin/odrpack" build SampleAssets --output "$work/catalog" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
"$bin/odrpack" serve "$work/catalog" --port 0 >"$work/serve.out" 2>"$work/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
url=""
for _ in $(seq 1 300); do
    url="$(grep -m1 -o 'http://[^ ]*' "$work/serve.out" || true)"
    [ -n "$url" ] && break
    kill -0 $server 2>/dev/null || { cat "$work/serve.log"; exit 1; }
    sleep 0.1
done
[ -n "$url" ] || { echo "odrpack serve printed no URL" >&2; cat "$work/serve.log"; exit 1; }
if ! valgrind --quiet --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
        --error-exitcode=99 --num-callers=40 --suppressions=scripts/valgrind-swift.supp \
        --log-file="$work/valgrind.log" "$game" "$url" "$work/store" >"$work/game.log" 2>&1; then
    echo "valgrind found errors or leaks in the example game (log $work/valgrind.log):" >&2
    head -80 "$work/valgrind.log" >&2
    tail -5 "$work/game.log" >&2
    exit 1
fi
grep -q "played 5 levels" "$work/game.log" || { echo "the game did not finish under valgrind:" >&2; tail -20 "$work/game.log" >&2; exit 1; }
echo "valgrind: the example game played 5 levels with no memory error and nothing definitely lost"

# The same game built with AddressSanitizer, against the installed library, into a fresh store.
# Leaks are valgrind's part above: LeakSanitizer cannot follow the Swift runtime's tagged pointers.
export PKG_CONFIG_PATH="$PWD/$out/prefix/lib/pkgconfig"
# shellcheck disable=SC2046 # the flags are words
cc -std=c11 -g -fsanitize=address -fno-omit-frame-pointer -Wall -Wextra -Werror Examples/c-game/game.c \
    $(pkg-config --cflags --libs odr) -lpthread -o "$work/game-asan"
if ! ASAN_OPTIONS=detect_leaks=0:abort_on_error=0 SWIFT_BACKTRACE=enable=no \
        "$work/game-asan" "$url" "$work/store-asan" >"$work/game-asan.log" 2>&1; then
    echo "the example game failed under AddressSanitizer:" >&2
    tail -40 "$work/game-asan.log" >&2
    exit 1
fi
grep -q "played 5 levels" "$work/game-asan.log" || { echo "the game did not finish under AddressSanitizer" >&2; exit 1; }
echo "AddressSanitizer: the example game played 5 levels with no report"
