#!/usr/bin/env bash
# `make bundle`: gathers what a game ships to use libodr on machines without a Swift toolchain
# (docs/C-API.md, "What a shipping game bundles"): from the installed PREFIX, libodr.so.1 (and the
# libodr.so link a build needs) and every library of the Swift toolchain it loads, found with ldd,
# each stripped of symbols nobody links against and given the rpath $ORIGIN so they find each other
# wherever the game puts them; odr.h beside them for the build. Prints each file's size and the total
# (in MiB, and in MB: the 30 MB a game should carry at most, docs/C-API.md).
#
#   scripts/bundle-c.sh PREFIX BUNDLE     # BUNDLE/lib/*.so*, BUNDLE/include/odr.h
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 PREFIX BUNDLE" >&2; exit 2; }
prefix="$(cd "$1" && pwd)"
bundle="$2"
library="$prefix/lib/libodr.so.1"
[ -f "$library" ] || { echo "$library is missing: run make install PREFIX=$1 first" >&2; exit 1; }
for tool in patchelf strip ldd; do
    command -v "$tool" >/dev/null || { echo "$tool is missing: run make deps (as root) or apt-get install patchelf binutils" >&2; exit 1; }
done
swift_bin="$(command -v swift)" || { echo "swift is not on PATH: the bundle copies its runtime libraries" >&2; exit 1; }
toolchain="$(realpath "$(dirname "$(realpath "$swift_bin")")/../lib/swift/linux")"

rm -rf "$bundle"
mkdir -p "$bundle/lib" "$bundle/include"
cp "$library" "$bundle/lib/libodr.so.1"
ln -s libodr.so.1 "$bundle/lib/libodr.so"
cp "$prefix/include/odr.h" "$bundle/include/odr.h"
# The toolchain's libraries libodr loads, directly or through each other (ldd lists them all).
runtime=()
while read -r path; do
    resolved="$(realpath "$path")"
    case "$resolved" in "$toolchain"/*) runtime+=("$resolved") ;; esac
done < <(ldd "$library" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }')
# None for a library linked with the Swift runtime inside it (make install STATIC_STDLIB=1).
for path in "${runtime[@]+"${runtime[@]}"}"; do cp "$path" "$bundle/lib/"; done
for file in "$bundle"/lib/*.so*; do
    [ -L "$file" ] && continue
    chmod u+w "$file"
    strip --strip-unneeded "$file"
    patchelf --set-rpath '$ORIGIN' "$file"
done
echo "bundle in $bundle (link with -L$bundle/lib -lodr -Wl,-rpath,'\$ORIGIN/lib' and ship lib/ beside the game):"
find "$bundle/lib" -type f -printf '%f %s\n' | sort | awk '
    { printf "  %-44s %8.1f MiB\n", $1, $2 / 1048576; total += $2 }
    END { printf "  %-44s %8.1f MiB (%.1f MB, %d bytes)\n", "total", total / 1048576, total / 1000000, total }'

