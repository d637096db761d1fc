#!/usr/bin/env bash
# `make demo`: build the sample game's catalog, check it, serve it over a slowed-down loopback
# network, and fetch a level's packs the way a client would, checking them with standard tools.
# (The game-like client of the runtime replaces the curl part once the ResourceRequest API lands.)
set -euo pipefail

out="${1:-.build/demo}"
bin="$(swift build --show-bin-path)"
odrpack="$bin/odrpack"
catalog="$out/catalog"

rm -rf "$out"
mkdir -p "$out"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "Build SampleAssets into a catalog"
"$odrpack" build SampleAssets --output "$catalog"

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

step "Fetch what a request for tag 'level3' needs: catalog.json, the live manifest, its packs"
mkdir -p "$out/client"
curl -fsS "$url/catalog.json" -o "$out/client/catalog.json"
manifest="$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); n=c["distributions"]["live"]; print([v["manifest"] for v in c["versions"] if v["number"]==n][0])' "$out/client/catalog.json")"
curl -fsS "$url/$manifest" -o "$out/client/manifest.json"
packs="$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(" ".join(next(t["packs"] for t in m["tags"] if t["name"]=="level3")))' "$out/client/manifest.json")"
for id in $packs; do
  curl -fsS "$url/packs/$id.zip" -o "$out/client/$id.zip"
  echo "$id.zip: $(stat -c %s "$out/client/$id.zip") bytes, sha256 $(sha256sum "$out/client/$id.zip" | cut -c1-16)..."
  [ "$(sha256sum "$out/client/$id.zip" | cut -d' ' -f1)" = "$id" ] || { echo "hash mismatch for $id"; exit 1; }
  unzip -tq "$out/client/$id.zip"
done

step "Server log"
cat "$out/serve.log"
echo
echo "Demo finished: catalog in $catalog"
