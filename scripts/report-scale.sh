#!/usr/bin/env bash
# How large `odrpack report --html` pages get, and how long Chromium takes to render them, for two
# big catalogs: the 10,000-tag catalog odrbench request generates (one folder of FILES_PER_TAG
# small text files per tag, one tag each), and a real game's data, Debian's supertuxkart-data
# (/usr/share/games/supertuxkart/data; a tag per kart and per track, the tracks sharing library/
# and textures/, packs split at 64 MiB). Targets (issue 25): each page under 1 MiB and rendered
# in under 2 s.
#
# Render time is the wall time of `chromium --headless --screenshot` on the page (parse, script,
# layout and paint) minus the same on an empty page (the browser's own start), the median of RUNS
# runs; `script` is the page's own performance.now() when its script finished (data-ready).
#
#   scripts/report-scale.sh                         # both catalogs, odrpack from .build/debug
#   ODRPACK=.build/release/odrpack RUNS=5 WORK=/tmp/scale scripts/report-scale.sh
#   SKIP_STK=1 scripts/report-scale.sh              # the generated catalog only
set -euo pipefail
cd "$(dirname "$0")/.."
ODRPACK=${ODRPACK:-.build/debug/odrpack}
WORK=${WORK:-$(mktemp -d /tmp/odr-report-scale.XXXXXX)}
RUNS=${RUNS:-3}
TAGS=${TAGS:-10000}
FILES_PER_TAG=${FILES_PER_TAG:-10}
STK=${STK:-/usr/share/games/supertuxkart/data}
CHROMIUM=${CHROMIUM:-chromium}
mkdir -p "$WORK"
[ -x "$ODRPACK" ] || { echo "no $ODRPACK: run swift build first (or set ODRPACK)"; exit 1; }
command -v "$CHROMIUM" >/dev/null || { echo "no chromium: apt-get install chromium (make deps does)"; exit 1; }

flags=(--headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars --disable-background-networking
       --disable-component-update --proxy-server=127.0.0.1:9 "--host-resolver-rules=MAP * ~NOTFOUND"
       --user-data-dir="$WORK/profile" --window-size=1280,900)

now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }
minus() { python3 -c "import sys; print('%.3f' % (float(sys.argv[1]) - float(sys.argv[2])))" "$1" "$2"; }

# Median wall time in seconds of a screenshot of $1.
render() {
  local times=()
  for _ in $(seq "$RUNS"); do
    local start
    start=$(now)
    "$CHROMIUM" "${flags[@]}" --screenshot="$WORK/shot.png" "file://$1" >/dev/null 2>&1
    times+=("$(since "$start")")
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}

echo '<!DOCTYPE html><html><body></body></html>' > "$WORK/empty.html"
baseline=$(render "$WORK/empty.html")
echo "chromium on an empty page: ${baseline} s (median of $RUNS, subtracted below)"

measure() {  # name page
  local page=$2 bytes total script
  bytes=$(stat -c %s "$page")
  total=$(render "$page")
  script=$("$CHROMIUM" "${flags[@]}" --dump-dom "file://$page" 2>/dev/null | grep -o 'data-ready="[0-9]*"' | head -1 | grep -o '[0-9]*')
  printf '%-28s %8d bytes (%s KiB)  render %.2f s (%.2f s - empty page)  script done at %s ms\n' \
    "$1" "$bytes" "$((bytes / 1024))" "$(minus "$total" "$baseline")" "$total" "${script:-?}"
  [ "$bytes" -lt 1048576 ] || echo "  OVER 1 MiB"
}

# 1. The generated catalog of odrbench request.
gen="$WORK/generated"
if [ ! -f "$gen/catalog/catalog.json" ]; then
  scripts/tagged-tree.py "$gen/assets" "$TAGS" "$FILES_PER_TAG"
  start=$(now)
  "$ODRPACK" build "$gen/assets" --output "$gen/catalog" --no-cache > /dev/null
  echo "built the generated catalog in $(since "$start") s"
fi
start=$(now)
"$ODRPACK" report "$gen/catalog" --html "$gen/report.html" > /dev/null
echo "odrpack report (generated): $(since "$start") s"
measure "generated ($TAGS tags)" "$gen/report.html"

# 2. supertuxkart-data.
if [ -z "${SKIP_STK:-}" ]; then
  if [ ! -d "$STK" ]; then
    echo "no $STK: apt-get install supertuxkart-data (or SKIP_STK=1)"
  else
    stk="$WORK/supertuxkart"
    mkdir -p "$stk"
    if [ ! -f "$stk/catalog/catalog.json" ]; then
      python3 - "$STK" "$stk/odr.json" <<'EOF'
import json, os, sys
data, out = sys.argv[1], sys.argv[2]
tags = {"music": {"include": ["music"], "preservationPriority": 0.3},
        "replays": {"include": ["replay"], "preservationPriority": 0.1}}
for kart in sorted(os.listdir(os.path.join(data, "karts"))):
    tags["kart-" + kart] = {"include": ["karts/" + kart], "preservationPriority": 0.6}
for track in sorted(os.listdir(os.path.join(data, "tracks"))):
    tags["track-" + track] = {"include": ["tracks/" + track, "library", "textures"], "preservationPriority": 0.5}
rules = {"catalogID": "supertuxkart", "tags": tags, "untagged": "base",
         "initialInstall": ["kart-tux"] if "kart-tux" in tags else [],
         "limits": {"packSize": "64 MiB"}}
json.dump(rules, open(out, "w"), indent=1)
EOF
      start=$(now)
      "$ODRPACK" build "$STK" --rules "$stk/odr.json" --output "$stk/catalog" --no-cache | tail -4
      echo "built supertuxkart-data in $(since "$start") s"
    fi
    start=$(now)
    "$ODRPACK" report "$stk/catalog" --html "$stk/report.html" --rules "$stk/odr.json" > /dev/null
    echo "odrpack report (supertuxkart): $(since "$start") s"
    measure "supertuxkart-data" "$stk/report.html"
  fi
fi
echo "work folder: $WORK"
