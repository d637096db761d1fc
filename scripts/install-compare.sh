#!/usr/bin/env bash
# Compares the install speed of two revisions of odr against curl, as CONTRIBUTING.md asks for any
# change to the transfer, install or store path (issue 44).
#
#   scripts/install-compare.sh [--runs N] [--mib M] [--file-kib K] [--mixed] [--keep] BASE [OTHER]
#
# BASE and OTHER are git revisions; OTHER defaults to the working tree ("."), built as it is. Either
# may also be a folder holding release builds of odr and odrpack (a copy kept from before a change).
# Each revision other than "." is checked out in a scratch worktree under
# .build/install-compare/<commit> and built there with `swift build -c release` (kept between
# invocations, so a second comparison against the same commit rebuilds nothing). The working tree
# uses the package's own .build.
#
# One catalog is built by BASE's odrpack (the older format, which every later odr reads): one tag,
# `bench`, of M MiB (default 256) of incompressible files of K KiB (default 1024), stored; with
# --mixed, every other file is compressible text instead, which odrpack deflates. nginx
# serves it from a process of its own on 127.0.0.1 (sendfile on, as a CDN edge would). Then, N times
# (default 3), alternating which revision goes first:
#   curl -o of every pack; curl -o + sync of those files;
#   for each revision: odr fetch --no-sync, and odr fetch (default durability: fsync of every file).
# Each line is printed as it is measured, then the best and the median of each, and each odr time
# over curl's (targets: --no-sync <= 1.10x curl -o, default <= 1.15x curl -o + sync), and each
# odr fetch's peak memory (under 64 MiB). A `sync` precedes every timed step.
#
# Not a test: on a noisy 2-core machine only alternating runs of both builds in the same minute
# compare.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

runs=3 mib=256 file_kib=1024 keep=0 mixed=0
revisions=()
while [ $# -gt 0 ]; do
    case "$1" in
        --runs) runs="$2"; shift 2 ;;
        --mib) mib="$2"; shift 2 ;;
        --file-kib) file_kib="$2"; shift 2 ;;
        --keep) keep=1; shift ;;
        --mixed) mixed=1; shift ;;
        -h|--help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "install-compare: unknown option $1 (see --help)" >&2; exit 64 ;;
        *) revisions+=("$1"); shift ;;
    esac
done
[ ${#revisions[@]} -ge 1 ] && [ ${#revisions[@]} -le 2 ] || { echo "usage: scripts/install-compare.sh [--runs N] [--mib M] [--file-kib K] BASE [OTHER]" >&2; exit 64; }
[ ${#revisions[@]} -eq 2 ] || revisions+=(".")
for number in "$runs" "$mib" "$file_kib"; do
    [[ "$number" =~ ^[1-9][0-9]*$ ]] || { echo "install-compare: '$number' is not a positive whole number" >&2; exit 64; }
done
for tool in nginx curl python3 /usr/bin/time; do
    command -v "$tool" >/dev/null || { echo "install-compare: $tool is missing (apt-get install nginx curl python3 time)" >&2; exit 69; }
done

scratch="$root/.build/install-compare"
mkdir -p "$scratch"

# Builds odr and odrpack of one revision; prints the folder holding them.
build_revision() {
    local revision="$1" folder commit
    if [ -d "$revision" ] && [ "$revision" != "." ] && [ -x "$revision/odr" ]; then
        (cd "$revision" && pwd)
        return
    fi
    if [ "$revision" = "." ]; then
        swift build -c release --product odr >&2
        swift build -c release --product odrpack >&2
        swift build -c release --show-bin-path
        return
    fi
    commit="$(git rev-parse --verify "$revision^{commit}")"
    folder="$scratch/$commit"
    if [ ! -d "$folder/src" ]; then
        git worktree add --detach "$folder/src" "$commit" >&2
    fi
    (cd "$folder/src" && swift build -c release --product odr >&2 && swift build -c release --product odrpack >&2 \
        && swift build -c release --show-bin-path)
}

labels=() bins=()
for revision in "${revisions[@]}"; do
    if [ "$revision" = "." ]; then label="working-tree"
    elif [ -d "$revision" ] && [ -x "$revision/odr" ]; then label="$(basename "$revision")"
    else label="$(git rev-parse --short "$revision^{commit}")"; fi
    echo "building $label (release) ..." >&2
    bins+=("$(build_revision "$revision" | tail -n 1)")
    labels+=("$label")
done

work="$(mktemp -d "$scratch/run.XXXXXX")"
chmod 755 "$work" # nginx's worker reads the catalog as another user
nginx_pid=""
cleanup() {
    [ -n "$nginx_pid" ] && kill "$nginx_pid" 2>/dev/null || true
    [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT

echo "building a $mib MiB catalog of $file_kib KiB $([ "$mixed" = 1 ] && echo "files, half deflated text," || echo "stored files") with ${labels[0]}'s odrpack ..." >&2
mkdir -p "$work/assets/files"
python3 - "$work/assets/files" "$mib" "$file_kib" "$mixed" <<'PY'
import os, random, sys
folder, mib, kib, mixed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
generator = random.Random(44)
words = [b"level", b"tile", b"enemy", b"spawn", b"door", b"key", b"{", b"}", b":", b"\n", b"0", b"17", b"255"]
for index in range(max(1, mib * 1024 // kib)):
    with open(os.path.join(folder, f"asset-{index:05d}.bin"), "wb") as out:
        if mixed and index % 2 == 0:
            text = bytearray()
            while len(text) < kib * 1024:
                text += generator.choice(words) + b" "
            out.write(bytes(text[:kib * 1024]))
        else:
            out.write(generator.randbytes(kib * 1024))
PY
cat >"$work/assets/odr.json" <<'JSON'
{"catalogID": "compare", "tags": {"bench": {"include": ["files"]}}}
JSON
"${bins[0]}/odrpack" build "$work/assets" --output "$work/catalog" >"$work/build.log" 2>&1 || { cat "$work/build.log" >&2; exit 1; }
rm -rf "$work/assets"

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
mkdir -p "$work/nginx/logs"
cat >"$work/nginx/nginx.conf" <<CONF
daemon off;
worker_processes 1;
error_log $work/nginx/logs/error.log;
pid $work/nginx/nginx.pid;
events { worker_connections 256; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_requests 10000;
    types { application/zip zip; application/json json; }
    default_type application/octet-stream;
    server {
        listen 127.0.0.1:$port;
        root $work/catalog;
    }
}
CONF
nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
nginx_pid=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 100); do curl -sf -o /dev/null "$base/catalog.json" && break; sleep 0.1; done
curl -sf -o /dev/null "$base/catalog.json" || { echo "nginx did not start:" >&2; cat "$work/nginx/logs/error.log" >&2; exit 1; }

packs=()
for pack in "$work"/catalog/packs/*.zip; do packs+=("$(basename "$pack")"); done
bytes="$(du -cb "$work"/catalog/packs/*.zip | tail -n 1 | cut -f1)"
echo "serving ${#packs[@]} packs, $bytes bytes, from nginx at $base" >&2

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
results="$work/results.tsv"
: >"$results"

measure_curl() {
    local folder="$work/curl" arguments=() start end synced
    rm -rf "$folder" && mkdir -p "$folder"
    for pack in "${packs[@]}"; do arguments+=("$base/packs/$pack" -o "$folder/$pack"); done
    sync
    start="$(now)"
    curl -sf "${arguments[@]}"
    end="$(now)"
    sync "$folder"/*.zip
    synced="$(now)"
    printf 'curl\t-o\t%s\t0\n' "$(elapsed "$start" "$end")" >>"$results"
    printf 'curl\t-o + sync\t%s\t0\n' "$(elapsed "$start" "$synced")" >>"$results"
    rm -rf "$folder"
}

measure_odr() {
    local index="$1" mode="$2" store="$work/store" start end memory flags=()
    [ "$mode" = "--no-sync" ] && flags=(--no-sync)
    rm -rf "$store"
    sync
    start="$(now)"
    /usr/bin/time -f '%M' -o "$work/time.out" "${bins[$index]}/odr" fetch --quiet --catalog "$base/" --store "$store" "${flags[@]}" bench
    end="$(now)"
    memory="$(tail -n 1 "$work/time.out")"
    printf '%s\t%s\t%s\t%s\n' "${labels[$index]}" "$mode" "$(elapsed "$start" "$end")" "$memory" >>"$results"
    rm -rf "$store"
}

for run in $(seq 1 "$runs"); do
    order=(0 1)
    [ $((run % 2)) -eq 0 ] && order=(1 0)
    measure_curl
    for index in "${order[@]}"; do
        measure_odr "$index" "--no-sync"
        measure_odr "$index" "default"
    done
    echo "run $run:" >&2
    tail -n 6 "$results" | awk -F'\t' '{ printf "  %-14s %-10s %.3f s%s\n", $1, $2, $3, ($4 > 0 ? sprintf("  (%.1f MiB peak)", $4 / 1024) : "") }' >&2
done

python3 - "$results" "$mixed" "${labels[@]}" <<'PY'
import statistics, sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
mixed = sys.argv[2] == "1"
labels = sys.argv[3:]
times, memory = {}, {}
for who, mode, seconds, kib in rows:
    times.setdefault((who, mode), []).append(float(seconds))
    memory[(who, mode)] = max(memory.get((who, mode), 0), int(kib))
def best(key): return min(times[key])
def median(key): return statistics.median(times[key])
print(f"\n{'':24}{'best':>9}{'median':>9}   runs")
for key in [("curl", "-o"), ("curl", "-o + sync")] + [(label, mode) for label in labels for mode in ("--no-sync", "default")]:
    print(f"{key[0] + ' ' + key[1]:24}{best(key):8.3f}s{median(key):8.3f}s   " + ", ".join(f"{t:.3f}" for t in times[key]))
print()
for label in labels:
    unsynced = best((label, "--no-sync")) / best(("curl", "-o"))
    synced = best((label, "default")) / best(("curl", "-o + sync"))
    peak = max(memory[(label, "--no-sync")], memory[(label, "default")]) / 1024
    # Curl does not inflate: the ratio targets are for stored catalogs; a mixed one compares builds.
    targets = ("", "") if mixed else (" (target <= 1.10x)", " (target <= 1.15x)")
    print(f"{label}: odr fetch --no-sync {unsynced:.2f}x curl -o{targets[0]}; "
          f"odr fetch {synced:.2f}x curl -o + sync{targets[1]}; peak memory {peak:.1f} MiB (target < 64 MiB)")
if len(labels) == 2:
    a, b = labels
    for mode in ("--no-sync", "default"):
        print(f"{b} against {a}, {mode}: best {best((b, mode)) / best((a, mode)):.3f}x, median {median((b, mode)) / median((a, mode)):.3f}x")
PY
