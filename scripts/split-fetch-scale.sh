#!/usr/bin/env bash
# How much metadata the runtime downloads from a split catalog (what odrpack build writes by
# default since issue 37; issue 27), counted from the server's request log. nginx (when it is
# installed, in its own process, as a CDN's origin would; SERVER=python for python3 -m http.server)
# serves a generated tree (default 20,000 files in 200 tags, scripts/tagged-tree.py), `odr fetch`
# installs one tag into a new store, then one file of that tag changes, version 2 is built, and
# `odr fetch` of the same tag updates it. For each step it prints the requests by kind and the
# bytes of metadata (catalog.json, versions/<n>.json, meta/*) and of packs the server sent.
#
#   scripts/split-fetch-scale.sh                                  # debug builds, 200 tags x 100 files
#   TAGS=10000 FILES=10 ODRPACK=.build/release/odrpack ODR=.build/release/odr scripts/split-fetch-scale.sh
#   MAX_INSTALL_BYTES=262144 MAX_UPDATE_BYTES=65536 ...              # exit 1 over issue 27's targets
#   SERVER=python ...                                              # python3 -m http.server, not nginx
# With nginx, bytes are the body bytes nginx logged as sent (ranges and 304s included); with
# python's server, a 200's bytes are the file's size and ranges count as 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ODRPACK=$(realpath "${ODRPACK:-.build/debug/odrpack}")
ODR=$(realpath "${ODR:-.build/debug/odr}")
TAGS=${TAGS:-200}
FILES=${FILES:-100}
WORK=${WORK:-$(mktemp -d /tmp/odr-split-fetch.XXXXXX)}
mkdir -p "$WORK"
scripts/tagged-tree.py "$WORK/assets" "$TAGS" "$FILES"
"$ODRPACK" build "$WORK/assets" --output "$WORK/catalog" --json > "$WORK/build-1.json"

SERVER=${SERVER:-$(command -v nginx >/dev/null && echo nginx || echo python)}
if [ "$SERVER" = nginx ]; then
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  chmod 755 "$WORK" # nginx's worker reads the catalog as another user
  mkdir -p "$WORK/nginx/logs"
  cat > "$WORK/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
error_log $WORK/nginx/logs/error.log;
pid $WORK/nginx/nginx.pid;
events { worker_connections 64; }
http {
    log_format bytes '"\$request" \$status \$body_bytes_sent';
    access_log $WORK/server.log bytes;
    types { application/zip zip; application/json json; }
    default_type application/octet-stream;
    server { listen 127.0.0.1:$PORT; root $WORK/catalog; }
}
CONF
  nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf" &
  SERVER_PID=$!
  trap 'kill $SERVER_PID 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
  for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/catalog.json" && break; sleep 0.1; done
  curl -sf -o /dev/null "http://127.0.0.1:$PORT/catalog.json" || { cat "$WORK/nginx/logs/error.log"; exit 1; }
  : > "$WORK/server.log"
else
  python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$WORK/catalog" > "$WORK/server.out" 2> "$WORK/server.log" &
  SERVER_PID=$!
  trap 'kill $SERVER_PID 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
  for _ in $(seq 100); do grep -q "port" "$WORK/server.out" 2>/dev/null && break; sleep 0.1; done
  PORT=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$WORK/server.out" | head -1)
fi
CDN="http://127.0.0.1:$PORT/"
echo "serving with $SERVER at $CDN"

report() {  # step-name [limit]: sums the requests logged since the last report; fails over the limit
  python3 - "$WORK" "$1" "${2:-0}" <<'PY'
import os, re, sys
work, step, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(os.path.join(work, "server.log")).read().splitlines()
done = int(open(os.path.join(work, "reported")).read()) if os.path.exists(os.path.join(work, "reported")) else 0
open(os.path.join(work, "reported"), "w").write(str(len(lines)))
kinds = {}
for line in lines[done:]:
    m = re.search(r'"(GET|HEAD) (\S+) HTTP/[\d.]+" (\d+)(?: (\d+))?', line)
    if not m: continue
    method, path, status = m.group(1), m.group(2), int(m.group(3))
    if m.group(4) is not None:  # nginx: the body bytes it sent
        size = int(m.group(4))
    else:  # python's server: a 200's file size; a byte range of a pack counts as 0
        size = os.path.getsize(os.path.join(work, "catalog", path.lstrip("/"))) if status == 200 and method == "GET" else 0
    kind = "packs" if path.startswith("/packs/") else "meta/*." + path.rsplit(".", 1)[1] if path.startswith("/meta/") else path.split("/")[1] if "/" in path[1:] else path[1:]
    kind = "versions/<n>.json" if kind == "versions" else kind
    n, b = kinds.get(kind, (0, 0))
    kinds[kind] = (n + 1, b + size)
meta = sum(b for k, (n, b) in kinds.items() if k != "packs")
print("%s: metadata %d bytes (%.1f KiB) in %d requests" % (step, meta, meta / 1024, sum(n for k, (n, b) in kinds.items() if k != "packs")))
for k in sorted(kinds):
    print("  %-22s %5d requests %10d bytes" % (k, kinds[k][0], kinds[k][1]))
if limit and meta > limit:
    sys.exit("%s: %d bytes of metadata, over the limit of %d" % (step, meta, limit))
PY
}

"$ODR" fetch --catalog "$CDN" --store "$WORK/store" t00007 > /dev/null
report "first install of one tag (t00007, $TAGS tags x $FILES files)" "${MAX_INSTALL_BYTES:-0}"
printf 't00007 file 1: changed\n' > "$WORK/assets/t00007/f1.txt"
"$ODRPACK" build "$WORK/assets" --output "$WORK/catalog" --json > "$WORK/build-2.json"
"$ODR" fetch --catalog "$CDN" --store "$WORK/store" t00007 > /dev/null
"$ODR" path --catalog "$CDN" --store "$WORK/store" t00007/f1.txt | xargs cat | grep -q "changed"
report "update of one file of it (version 2)" "${MAX_UPDATE_BYTES:-0}"
echo "store's metadata cache: $(ls "$WORK/store/manifests/meta" | wc -l) files, $(du -sb "$WORK/store/manifests/meta" | cut -f1) bytes"
