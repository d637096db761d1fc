#!/usr/bin/env bash
# Times a full build with and without chunking (docs/ODRPACK.md, "Chunking"): the tree ASSETS gets
# an odr.json with limits.chunkThreshold THRESHOLD (bytes; 0 turns chunking off), is built into OUT
# with no cache, and the wall time, peak memory (`/usr/bin/time -v`) and manifest size are printed.
# Run it alternately with 0 and 8388608 on the same tree to compare.
#
#   scripts/chunk-build-bench.sh .build/release/odrpack ASSETS THRESHOLD OUT
set -euo pipefail
odrpack=$1; tree=$2; threshold=$3; out=$4
rm -rf "$out"
printf '{"catalogID":"bench","tags":{"big":["big"],"small":["small"]},"limits":{"chunkThreshold":%s}}' "$threshold" > "$tree/odr.json"
times=$(mktemp)
/usr/bin/time -v "$odrpack" build "$tree" --output "$out" --no-cache > /dev/null 2> "$times"
wall=$(grep "Elapsed (wall" "$times" | awk '{print $NF}')
rss=$(grep "Maximum resident" "$times" | awk '{print $NF}')
rm -f "$times"
echo "threshold=$threshold wall=$wall maxrss_kib=$rss manifest_bytes=$(wc -c < "$out/versions/1.json")"
