#!/usr/bin/env bash
# `make demo`: build the sample game's catalog, check it, serve it over a slowed-down loopback
# network, and install levels into a store with the runtime, as a game would.
# Then `odr demo` plays levels 1-5 through ResourceRequest, the way a game would, and a small
# catalog with variants shows two devices downloading only their flavour.
set -euo pipefail

out="${1:-.build/demo}"
bin="$(swift build --show-bin-path)"
odrpack="$bin/odrpack"
odr="$bin/odr"
catalog="$out/catalog"

rm -rf "$out"
mkdir -p "$out"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Create the builder's signing key (odrpack key generate)"
keys="$out/keys"
mkdir -p "$keys"
"$odrpack" key generate --output "$keys/release.key"
trust=(--trusted-key "$keys/release.key.pub")

step "Build SampleAssets into a catalog, signed with that key"
"$odrpack" build SampleAssets --output "$catalog" --sign-with "$keys/release.key"

step "Inspect the catalog"
"$odrpack" inspect "$catalog"

step "Verify every pack, entry and reference"
"$odrpack" verify "$catalog"

step "Serve it on loopback with 30 ms latency and 2 MB/s per connection"
"$odrpack" serve "$catalog" --port 0 --latency 30 --rate 2000000 --seed 1 >"$out/serve.out" 2>"$out/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  url="$(grep -m1 -o 'http://[^ ]*' "$out/serve.out" 2>/dev/null || true)"
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "${url:-}" ] || { echo "the server did not start:"; cat "$out/serve.log"; exit 1; }
url="${url%/}"
echo "serving at $url"

step "Install the tutorial and level 1 into a store with the runtime (odr fetch)"
store="$out/store"
"$odr" fetch --catalog "$url" --store "$store" "${trust[@]}" tutorial level1

step "A client that trusts another key refuses the catalog and installs nothing"
"$odrpack" key generate --output "$keys/other.key" >/dev/null
if "$odr" fetch --catalog "$url" --store "$out/other-store" --trusted-key "$keys/other.key.pub" level1 2>"$out/untrusted.txt"; then
  echo "expected the catalog to be refused"; exit 1
fi
cat "$out/untrusted.txt"
grep -q "error\[untrusted-catalog\]" "$out/untrusted.txt" || { echo "expected untrusted-catalog"; exit 1; }

step "The store's gauge (odr status)"
"$odr" status --catalog "$url" --store "$store" "${trust[@]}"

step "Resolve a resource to its installed file (odr path)"
map="$("$odr" path --catalog "$url" --store "$store" "${trust[@]}" Levels/Level1/map.json)"
echo "$map: $(stat -c %s "$map") bytes"

step "Check every installed pack against its manifest (odr verify)"
"$odr" verify --store "$store"

step "Publish version 2 with one changed file in level 3; the update moves only that file"
"$odr" fetch --quiet --catalog "$url" --store "$store" "${trust[@]}" level3
rm -rf "$out/assets-v2"
cp -R SampleAssets "$out/assets-v2"
python3 - "$out/assets-v2/Levels/Level3/map.json" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as f:
    level = json.load(f)
level["revision"] = 2
with open(path, "w") as f:
    json.dump(level, f, indent=2)
PY
"$odrpack" build "$out/assets-v2" --output "$catalog" --no-cache --sign-with "$keys/release.key" >"$out/build-v2.txt"
head -n 1 "$out/build-v2.txt"
"$odr" update --catalog "$url" --store "$store" "${trust[@]}" --dry-run
"$odr" fetch --catalog "$url" --store "$store" "${trust[@]}" level3 | tee "$out/update.txt"
grep -q "level3: 1 of .* files changed" "$out/update.txt" || { echo "expected level3 to update by one file"; exit 1; }

step "A request for a tag the catalog does not have fails with a typed error"
if "$odr" fetch --catalog "$url" --store "$store" "${trust[@]}" level9 2>"$out/error.txt"; then
  echo "expected a failure"; exit 1
fi
cat "$out/error.txt"

step "Play levels 1-5 like a game: prefetch the next level, urgent when the player waits, purge old levels"
"$odr" demo --catalog "$url" --store "$out/game-store" "${trust[@]}" --cache-budget 1310720 --play-seconds 0.15

step "What purging 200 KB of the game's store would take, and why (odr purge --dry-run)"
"$odr" purge --catalog "$url" --store "$out/game-store" "${trust[@]}" --bytes 200000 --dry-run

step "The game store's installs and purges, newest first (odr log)"
"$odr" log --store "$out/game-store" --limit 8

step "Variants: one catalog, each device downloads only its flavour (odrpack's \"variants\" rules)"
variants="$out/variant-assets"
mkdir -p "$variants/Textures" "$variants/Levels/forest"
cat >"$variants/odr.json" <<'JSON'
{
  "catalogID": "variant-demo",
  "tags": { "forest": { "include": ["Levels/forest/**", "Textures/**"] } },
  "variants": [
    { "axis": "resolution", "values": ["1x", "2x"], "marker": "@", "default": "1x", "files": ["**/*.png"] },
    { "axis": "texture", "values": ["astc", "etc2"], "marker": ".", "files": ["**/*.ktx2"] }
  ]
}
JSON
fill() { head -c "$2" /dev/zero | tr '\0' "$3" >"$variants/$1"; }
fill Levels/forest/map.json 2000 m
fill Textures/tree.png 30000 a          # resolution 1x (the default of an unmarked file beside tree@2x.png)
fill Textures/tree@2x.png 120000 b      # resolution 2x
fill Textures/rock@2x.png 90000 c       # only at 2x
fill Textures/leaf.astc.ktx2 40000 d    # texture astc
fill Textures/leaf.etc2.ktx2 50000 e    # texture etc2
ls "$variants/Textures"
"$odrpack" build "$variants" --output "$out/variant-catalog"

echo
echo "A 1x phone with ETC2 textures (rock.png exists only at 2x, so it has none):"
"$odr" fetch --catalog "$out/variant-catalog" --store "$out/variant-store" --variant resolution=1x --variant texture=etc2 forest
tree="$("$odr" path --catalog "$out/variant-catalog" --store "$out/variant-store" --variant resolution=1x --variant texture=etc2 Textures/tree.png)"
cmp "$tree" "$variants/Textures/tree.png" && echo "Textures/tree.png -> $tree (the 1x file)"

echo
echo "The same store on a 2x tablet with ASTC: the new packs come; the 1x and ETC2 packs stay installed"
echo "until space is needed, and are then the first to go (variant-not-chosen), as the dry run shows:"
"$odr" fetch --catalog "$out/variant-catalog" --store "$out/variant-store" --variant resolution=2x --variant texture=astc forest
tree="$("$odr" path --catalog "$out/variant-catalog" --store "$out/variant-store" --variant resolution=2x --variant texture=astc Textures/tree.png)"
cmp "$tree" "$variants/Textures/tree@2x.png" && echo "Textures/tree.png -> $tree (the 2x file)"
"$odr" purge --catalog "$out/variant-catalog" --store "$out/variant-store" --variant resolution=2x --variant texture=astc --bytes 70000 --dry-run

echo
echo "A value the catalog does not declare is a typed error:"
if "$odr" fetch --catalog "$out/variant-catalog" --store "$out/variant-store" --variant resolution=4x forest 2>"$out/variant-error.txt"; then
  echo "expected a failure"; exit 1
fi
cat "$out/variant-error.txt"
grep -q "error\[invalid-argument\]" "$out/variant-error.txt" || { echo "expected invalid-argument"; exit 1; }

step "Server log (last 15 requests)"
tail -n 15 "$out/serve.log"
echo
echo "Demo finished: catalog in $catalog"
