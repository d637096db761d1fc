#!/usr/bin/env bash
# A real game's build, as a studio would run it (issue 37): Debian's supertuxkart-data
# (/usr/share/games/supertuxkart/data, 700 MB, 5,253 files; `apt-get install supertuxkart-data`)
# with the rules scripts/stk-rules.py writes from what each track and kart references.
#
# It measures, each against a baseline of the same run:
#   - the first build (empty build cache) against `tar -czhf` of the same tree, run alongside (target <= 0.35x);
#   - a rebuild with nothing changed (the median of three) against the first build (<= 0.03x and <= 1 s);
#   - packs under 64 KiB (<= 5% of packs) and packs per tag at the 95th percentile (<= 16);
#   - what each tag downloads with nothing installed against exact packing (one pack per tag set,
#     `limits.minimumPackSize: 0`, built alongside): <= 1.10x for any tag, <= 1.03x summed;
#   - the metadata a client moves to update an installed track after a one-file change (<= 64 KiB),
#     counted from a plain static server's log, as scripts/split-fetch-scale.sh does;
#   - building with a rules file of 100,000 patterns (the same rules plus generated literal and
#     glob patterns that match nothing) against the same build with the plain rules.
#
#   scripts/stk-build-bench.sh                                   # release builds of odrpack and odr
#   ODRPACK=.build/debug/odrpack ODR=.build/debug/odr scripts/stk-build-bench.sh
#   KEEP=1 WORK=/tmp/stk scripts/stk-build-bench.sh              # keep the copy, catalogs and logs
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/stk-tools.sh
# The catalog clients update from has split metadata (format 3), odrpack's default;
# SPLIT=--whole-manifest for the whole manifest.
SPLIT=${SPLIT:-}
WORK=${WORK:-$(mktemp -d /tmp/odr-stk-bench.XXXXXX)}
mkdir -p "$WORK"
SERVER=
trap '[ -z "$SERVER" ] || kill "$SERVER" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

# A writable copy (links followed, as tar -h and odrpack do), so one file can change later.
rm -rf "$WORK/assets" && cp -rL "$STK" "$WORK/assets"
scripts/stk-rules.py "$WORK/assets" > "$WORK/odr.json"
python3 - "$WORK/odr.json" "$WORK/exact.json" <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))
rules["limits"] = {"minimumPackSize": 0}
json.dump(rules, open(sys.argv[2], "w"))
PY

now() { date +%s.%N; }
timed() {  # out-file command...: runs the command, prints its wall time in seconds
  local out=$1 start
  shift
  start=$(now)
  "$@" > "$out"
  python3 -c "import sys; print('%.3f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$(now)"
}
sync
tar_s=$(timed /dev/null tar -czhf "$WORK/tree.tgz" -C "$WORK/assets" .)
first_s=$(timed "$WORK/first.json" "$ODRPACK" build "$WORK/assets" --rules "$WORK/odr.json" --output "$WORK/catalog" \
  --cache "$WORK/cache.json" $SPLIT --json)
# The median of three rebuilds (one is a few tenths of a second, so one run is noise).
rebuild_s=$(for _ in 1 2 3; do
  timed "$WORK/rebuild.json" "$ODRPACK" build "$WORK/assets" --rules "$WORK/odr.json" --output "$WORK/catalog" \
    --cache "$WORK/cache.json" $SPLIT --json
done | sort -n | sed -n 2p)
"$ODRPACK" build "$WORK/assets" --rules "$WORK/exact.json" --output "$WORK/exact" --cache "$WORK/cache-exact.json" --json > "$WORK/exact-build.json"

# 100,000 patterns: the studio's rules plus literal paths and globs under real folders that match nothing.
python3 - "$WORK/odr.json" "$WORK/big.json" <<'PY'
import json, sys
rules = json.load(open(sys.argv[1]))
names = sorted(rules["tags"])
count = sum(len(rule["include"]) for rule in rules["tags"].values())
i = 0
while count < 100000:
    tag = rules["tags"][names[i % len(names)]]["include"]
    folder = ["textures", "library", "tracks", "karts", "models"][i % 5]
    tag.append(f"{folder}/generated_{i}/missing_{i}.png" if i % 4 else f"{folder}/gen{i}_*.png")
    i += 1
    count += 1
json.dump(rules, open(sys.argv[2], "w"))
PY
big_s=$(timed "$WORK/big-build.json" "$ODRPACK" build "$WORK/assets" --rules "$WORK/big.json" --output "$WORK/big-catalog" \
  --cache "$WORK/cache.json" --json)
plain_s=$(timed "$WORK/plain-build.json" "$ODRPACK" build "$WORK/assets" --rules "$WORK/odr.json" --output "$WORK/plain-catalog" \
  --cache "$WORK/cache.json" --json)

# The update of one installed track after a one-file change, over a plain static server.
python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$WORK/catalog" > "$WORK/server.out" 2> "$WORK/server.log" &
SERVER=$!
for _ in $(seq 100); do grep -q "port" "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$WORK/server.out" | head -1)
CDN="http://127.0.0.1:$PORT/"
"$ODR" fetch --catalog "$CDN" --store "$WORK/store" track-lighthouse > /dev/null
installed_lines=$(wc -l < "$WORK/server.log")
printf '<?xml version="1.0"?>\n<!-- changed -->\n' >> "$WORK/assets/tracks/lighthouse/materials.xml"
"$ODRPACK" build "$WORK/assets" --rules "$WORK/odr.json" --output "$WORK/catalog" --cache "$WORK/cache.json" $SPLIT --json > "$WORK/update.json"
"$ODR" fetch --catalog "$CDN" --store "$WORK/store" track-lighthouse > /dev/null

python3 - "$WORK" "$tar_s" "$first_s" "$rebuild_s" "$big_s" "$plain_s" "$installed_lines" <<'PY'
import json, os, re, sys
work, tar_s, first_s, rebuild_s, big_s, plain_s, installed_lines = sys.argv[1], *map(float, sys.argv[2:7]), int(sys.argv[7])
first = json.load(open(os.path.join(work, "first.json")))
exact = json.load(open(os.path.join(work, "exact-build.json")))
rules = json.load(open(os.path.join(work, "odr.json")))
big = json.load(open(os.path.join(work, "big.json")))
patterns = lambda r: sum(len(t["include"]) for t in r["tags"].values())
failures = []
def check(label, ok):
    if not ok: failures.append(label)
    return "ok" if ok else "OVER TARGET"
packs = first["packs"]
small = sum(1 for p in packs if p["archiveBytes"] < 65536)
per_tag = sorted(len(t["packs"]) for t in first["tags"])
p95 = per_tag[min(len(per_tag) - 1, round(0.95 * (len(per_tag) - 1)))]
exact_dl = {t["name"]: t["downloadBytes"] for t in exact["tags"]}
ratios = {t["name"]: t["downloadBytes"] / exact_dl[t["name"]] for t in first["tags"] if exact_dl.get(t["name"])}
worst = max(ratios, key=ratios.get)
summed = sum(t["downloadBytes"] for t in first["tags"]) / sum(exact_dl.values())
exact_small = sum(1 for p in exact["packs"] if p["archiveBytes"] < 65536)
exact_per_tag = sorted(len(t["packs"]) for t in exact["tags"])
exact_p95 = exact_per_tag[min(len(exact_per_tag) - 1, round(0.95 * (len(exact_per_tag) - 1)))]
lines = open(os.path.join(work, "server.log")).read().splitlines()[installed_lines:]
meta = 0
for line in lines:
    m = re.search(r'"GET (\S+) HTTP/[\d.]+" 200', line)
    if m and not m.group(1).startswith("/packs/"):
        meta += os.path.getsize(os.path.join(work, "catalog", m.group(1).lstrip("/")))
print(f"== supertuxkart-data: {first['files']} files, {len(first['tags'])} tags, {patterns(rules)} include patterns ==")
print(f"tar -czhf                      {tar_s:8.2f} s")
print(f"first build                    {first_s:8.2f} s   {first_s / tar_s:.3f}x tar (target <= 0.35x) {check('first build', first_s / tar_s <= 0.35)}")
print(f"rebuild, nothing changed       {rebuild_s:8.3f} s   {rebuild_s / first_s:.4f}x first (target <= 0.03x and <= 1 s) {check('rebuild', rebuild_s / first_s <= 0.03 and rebuild_s <= 1)}")
print(f"packs                          {len(packs):8d}     exact packing {len(exact['packs'])}")
print(f"packs under 64 KiB             {small:8d}     {100 * small / len(packs):.1f}% (target <= 5%) {check('small packs', small <= 0.05 * len(packs))}; exact packing {exact_small} ({100 * exact_small / len(exact['packs']):.1f}%)")
print(f"packs per tag, p95 (max)       {p95:8d}     ({per_tag[-1]}) (target <= 16) {check('packs per tag', p95 <= 16)}; exact packing {exact_p95} ({exact_per_tag[-1]})")
print(f"download vs exact, worst tag   {ratios[worst]:8.3f}x    ({worst}) (target <= 1.10x) {check('worst tag', ratios[worst] <= 1.10)}")
print(f"download vs exact, summed      {summed:8.4f}x   (target <= 1.03x) {check('summed', summed <= 1.03)}")
print(f"update metadata, one file      {meta:8d} B   ({meta / 1024:.1f} KiB; target <= 64 KiB) {check('update metadata', meta <= 65536)}")
print(f"{patterns(big)} patterns build  {big_s:8.2f} s   against {plain_s:.2f} s with the {patterns(rules)} patterns (cache warm, new catalog each)")
if failures:
    print("over target: " + ", ".join(failures))
PY
