#!/usr/bin/env bash
# How much catalog metadata a client moves, with and without split metadata (issue 27), for two
# generated trees: 100,000 files in 10,000 tags (10 files a tag) and 20,000 files in 200 tags (100
# a tag); small text files with deterministic content. For each tree it builds version 1 whole
# (--whole-manifest) and split (odrpack's default), changes one file, builds version 2, and prints:
#   - today's manifest JSON, raw and gzipped;
#   - split: the top manifest, bin and table counts and sizes, all metadata together (target: at
#     most 0.5x today's JSON);
#   - the metadata to install one tag: top + its bin + its packs' tables (target: at most 256 KiB);
#   - the metadata an update of one file moves: new top + changed bins + changed tables (target:
#     at most 64 KiB);
#   - build times without and with split, and the rebuild after the change (and how many metadata
#     files it wrote).
# The bins are parsed here, in Python, from the layout docs/FORMAT.md documents (an independent
# reader of it).
#
#   scripts/metadata-scale.sh                                   # release odrpack, both trees
#   ODRPACK=.build/debug/odrpack CASES=small scripts/metadata-scale.sh
#   WORK=/tmp/meta-scale KEEP=1 scripts/metadata-scale.sh       # keep the trees and catalogs
set -euo pipefail
cd "$(dirname "$0")/.."
ODRPACK=${ODRPACK:-.build/release/odrpack}
WORK=${WORK:-$(mktemp -d /tmp/odr-metadata-scale.XXXXXX)}
CASES=${CASES:-"large small"}
[ -x "$ODRPACK" ] || { echo "no $ODRPACK: run swift build -c release --product odrpack first (or set ODRPACK)"; exit 1; }
ODRPACK=$(realpath "$ODRPACK")
mkdir -p "$WORK"

now() { date +%s.%N; }
since() { python3 -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(now)"; }

generate() {  # folder tags files-per-tag
  scripts/tagged-tree.py "$@"
}

build() {  # assets catalog cache report-json [flags...]
  local assets=$1 catalog=$2 cache=$3 report=$4
  shift 4
  "$ODRPACK" build "$assets" --output "$catalog" --cache "$cache" --json "$@" > "$report"
}

measure() {  # name tags files-per-tag
  local name=$1 dir="$WORK/$1"
  rm -rf "$dir"
  mkdir -p "$dir"
  generate "$dir/assets" "$2" "$3"
  local start t_whole t_split t_whole2 t_split2
  start=$(now); build "$dir/assets" "$dir/whole" "$dir/cache-whole.json" "$dir/whole-1.json" --whole-manifest; t_whole=$(since "$start")
  start=$(now); build "$dir/assets" "$dir/split" "$dir/cache-split.json" "$dir/split-1.json"; t_split=$(since "$start")
  ls "$dir/split/meta" > "$dir/meta-1.txt"
  printf 't00007 file 1: changed\n' > "$dir/assets/t00007/f1.txt"
  start=$(now); build "$dir/assets" "$dir/whole" "$dir/cache-whole.json" "$dir/whole-2.json" --whole-manifest; t_whole2=$(since "$start")
  start=$(now); build "$dir/assets" "$dir/split" "$dir/cache-split.json" "$dir/split-2.json"; t_split2=$(since "$start")
  python3 - "$dir" "$name" "$2" "$3" "$t_whole" "$t_split" "$t_whole2" "$t_split2" <<'EOF'
import gzip, hashlib, json, os, sys, zlib
d, name, tags, per_tag = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t_whole, t_split, t_whole2, t_split2 = sys.argv[5:9]
KiB = 1024

def inflate(b): return zlib.decompress(b, -15)
class Reader:
    def __init__(self, b): self.b, self.o = b, 0
    def byte(self): self.o += 1; return self.b[self.o - 1]
    def varint(self):
        v = s = 0
        while True:
            c = self.byte(); v |= (c & 0x7F) << s; s += 7
            if c < 0x80: return v
    def raw(self, n): self.o += n; return self.b[self.o - n:self.o]
    def string(self): return self.raw(self.varint()).decode()
    def strings(self): return [self.string() for _ in range(self.varint())]
def parse_bin(data):
    r = Reader(inflate(data))
    assert r.raw(5) == b"ODRB\x01"
    index, count = r.varint(), r.varint()
    packs = []
    for _ in range(r.varint()):
        pid = r.raw(32).hex(); r.strings(); r.varint(); r.varint(); r.varint(); r.strings(); r.strings()
        packs.append((pid, r.raw(32).hex(), r.varint(), r.varint()))
    tags = {}
    for _ in range(r.varint()):
        tag = r.string(); r.raw(8); tags[tag] = [r.varint() for _ in range(r.varint())]; r.varint(); r.varint()
    assert r.o == len(r.b)
    return index, count, packs, tags
def bin_of(tag, count): return int.from_bytes(hashlib.sha256(tag.encode()).digest()[:8], "big") % count
size = lambda p: os.path.getsize(p)
def stats(sizes):
    s = sorted(sizes); return "%d files, %s bytes (min %d, median %d, max %d)" % (len(s), format(sum(s), ","), s[0], s[len(s) // 2], s[-1])

whole = open(os.path.join(d, "whole/versions/1.json"), "rb").read()
whole_gz = len(gzip.compress(whole, 9))
print("== %s: %s files in %s tags (%d a tag)" % (name, format(tags * per_tag, ","), format(tags, ","), per_tag))
print("today's manifest (versions/1.json): %s bytes JSON, %s gzipped" % (format(len(whole), ","), format(whole_gz, ",")))
meta = os.path.join(d, "split/meta")
top1 = json.load(open(os.path.join(d, "split/versions/1.json")))
top1_bytes = size(os.path.join(d, "split/versions/1.json"))
bins = {p["sha256"]: p["size"] for p in top1["bins"]}
parsed = {sha: parse_bin(open(os.path.join(meta, sha + ".tagbin"), "rb").read()) for sha in bins}
tables = {}
for _, _, packs, _ in parsed.values():
    for pid, sha, tsize, files in packs: tables[sha] = tsize
total = top1_bytes + sum(bins.values()) + sum(tables.values())
print("split: top manifest %s bytes; %d bins: %s; tables: %s" % (format(top1_bytes, ","), len(bins), stats(bins.values()), stats(tables.values())))
print("split: all metadata %s bytes = %.3fx today's JSON (target <= 0.5x), %.2fx its gzip" % (format(total, ","), total / len(whole), total / whole_gz))
# The encodings compared: each table and bin as JSON (sorted keys, 2-space indent, as the catalog's
# JSON) gzipped, the compact layout, and the compact layout deflated (what is served).
def jdump(o): return (json.dumps(o, indent=2, sort_keys=True, separators=(",", " : ")) + "\n").encode()
wm = json.loads(whole)
files_by_pack = {}
for f in wm["files"]:
    files_by_pack.setdefault(f["pack"], []).append({k: v for k, v in f.items() if k not in ("pack", "variant")})
pins = {}
for _, _, packs, _ in parsed.values():
    for pid, sha, tsize, nfiles in packs: pins[pid] = {"sha256": sha, "size": tsize, "files": nfiles}
tj = [jdump({"pack": pid, "files": sorted(fl, key=lambda f: f["path"])}) for pid, fl in files_by_pack.items()]
tables_compact = sum(len(inflate(open(os.path.join(meta, sha + ".filetable"), "rb").read())) for sha in tables)
print("tables: JSON %s, JSON+gzip %s, compact %s, compact+deflate (served) %s bytes" % (
    format(sum(map(len, tj)), ","), format(sum(len(gzip.compress(t, 9)) for t in tj), ","), format(tables_compact, ","), format(sum(tables.values()), ",")))
packs_by_id = {p["id"]: dict(p, table=pins[p["id"]]) for p in wm["packs"]}
bj = []
for sha, (index, count, packs, tagmap) in parsed.items():
    bj.append(jdump({"bin": index, "binCount": count, "tags": [t for t in wm["tags"] if t["name"] in tagmap],
                     "packs": [packs_by_id[p[0]] for p in packs]}))
bins_compact = [inflate(open(os.path.join(meta, sha + ".tagbin"), "rb").read()) for sha in bins]
print("bins: JSON %s, JSON+gzip %s, compact %s, compact+deflate (served) %s bytes" % (
    format(sum(map(len, bj)), ","), format(sum(len(gzip.compress(b, 9)) for b in bj), ","), format(sum(map(len, bins_compact)), ","), format(sum(bins.values()), ",")))
# Why two levels: every tag and pack inline in one manifest, with each pack's table pin.
inline = jdump({"tags": wm["tags"], "packs": list(packs_by_id.values())})
allbins = b"".join(bins_compact)
deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
print("one level (every tag and pack inline, with table pins): JSON %s, gzip %s; compact %s, deflated %s bytes" % (
    format(len(inline), ","), format(len(gzip.compress(inline, 9)), ","), format(len(allbins), ","), format(len(deflater.compress(allbins) + deflater.flush()), ",")))
# Installing one tag: the top, its bin, its packs' tables.
worst = 0
for i, (sha, (index, count, packs, tagmap)) in enumerate(sorted(parsed.items(), key=lambda kv: kv[1][0])):
    for tag, positions in tagmap.items():
        assert bin_of(tag, count) == index
        need = top1_bytes + bins[sha] + sum(packs[p][2] for p in positions)
        worst = max(worst, need)
example = "t00007"
ex_bin = [v for v in parsed.items() if v[1][0] == bin_of(example, len(bins))][0]
ex_need = top1_bytes + ex_bin[1][0] * 0 + bins[ex_bin[0]] + sum(ex_bin[1][2][p][2] for p in ex_bin[1][3][example])
print("install one tag (%s): %s bytes = %.1f KiB (top + bin + %d table(s)); worst tag %.1f KiB (target <= 256 KiB)" % (
    example, format(ex_need, ","), ex_need / KiB, len(ex_bin[1][3][example]), worst / KiB))
# Updating: what version 2 pins that version 1 did not.
before = set(open(os.path.join(d, "meta-1.txt")).read().split())
new_files = [f for f in os.listdir(meta) if f not in before and not f.startswith(".")]
top2_bytes = size(os.path.join(d, "split/versions/2.json"))
moved = top2_bytes + sum(size(os.path.join(meta, f)) for f in new_files)
whole2 = size(os.path.join(d, "whole/versions/2.json"))
print("update of one file: %s bytes = %.1f KiB (new top %s + %d new metadata file(s): %s) (target <= 64 KiB); today: %s bytes JSON (%s gzipped)" % (
    format(moved, ","), moved / KiB, format(top2_bytes, ","), len(new_files), ", ".join(sorted(f.split(".")[-1] for f in new_files)),
    format(whole2, ","), format(len(gzip.compress(open(os.path.join(d, "whole/versions/2.json"), "rb").read(), 9)), ",")))
r1 = json.load(open(os.path.join(d, "split-1.json"))); r2 = json.load(open(os.path.join(d, "split-2.json")))
print("build v1: %s s whole, %s s split (%d metadata files written); rebuild after the change: %s s whole, %s s split (%d written, %d reused)" % (
    t_whole, t_split, r1["splitMetadata"]["written"], t_whole2, t_split2, r2["splitMetadata"]["written"], r2["splitMetadata"]["reused"]))
EOF
  [ -n "${KEEP:-}" ] || rm -rf "$dir"
}

for c in $CASES; do
  case $c in
    large) measure large 10000 10 ;;
    small) measure small 200 100 ;;
    *) echo "unknown case $c (large, small)"; exit 1 ;;
  esac
done
[ -n "${KEEP:-}" ] && echo "work folder: $WORK"
exit 0
