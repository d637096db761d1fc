#!/usr/bin/env python3
"""Writes the tree scripts/chunk-build-bench.sh builds: ROOT/big/data.bin of 256 MiB, random bytes
(`random`, stored in the pack) or lines of random words (`text`, deflated), and ROOT/small/notes.txt.
`game` writes a tree shaped like a game's instead (461 MiB): in ROOT/big, four 64 MiB archives of
random bytes and a 64 MiB text database, which are chunked; in ROOT/small, 1,200 files under the
threshold: 400 random "textures" of 64-512 KiB and 800 text "scripts" of 4-64 KiB.
With `edit`, changes an existing tree as the issue's cases do: 1 MiB inserted at 10% and 4 MiB
overwritten at 60% of a random file; 10 edits of 100 bytes, spread out, in a text file.

    python3 scripts/chunk-tree.py ROOT random|text|game [edit]
"""
import os
import random
import sys

MiB = 1 << 20
root, kind = sys.argv[1], sys.argv[2]
edit = len(sys.argv) > 3 and sys.argv[3] == "edit"
path = os.path.join(root, "big", "data.bin")
r = random.Random(99 if edit else 23)

def text_bytes(size):
    words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(5000)]
    out, n = [], 0
    while n < size:
        block = "".join(" ".join(r.choice(words) for _ in range(r.randint(4, 14))) + "\n" for _ in range(2000)).encode()
        out.append(block)
        n += len(block)
    return b"".join(out)[:size]


if kind == "game":
    if edit:
        sys.exit("the game tree has no edit case")
    os.makedirs(os.path.join(root, "big"), exist_ok=True)
    os.makedirs(os.path.join(root, "small"), exist_ok=True)
    for k in range(4):
        with open(os.path.join(root, "big", f"archive{k}.pak"), "wb") as f:
            for _ in range(64):
                f.write(r.randbytes(MiB))
    open(os.path.join(root, "big", "world.db"), "wb").write(text_bytes(64 * MiB))
    for k in range(400):
        open(os.path.join(root, "small", f"texture{k:03}.ktx"), "wb").write(r.randbytes(r.randint(64, 512) << 10))
    words = text_bytes(4 * MiB)
    for k in range(800):
        start = r.randrange(0, len(words) - (64 << 10))
        open(os.path.join(root, "small", f"script{k:03}.lua"), "wb").write(words[start:start + (r.randint(4, 64) << 10)])
    sys.exit(0)
if edit:
    data = bytearray(open(path, "rb").read())
    if kind == "random":
        p = int(len(data) * 0.6)
        data[p:p + 4 * MiB] = r.randbytes(4 * MiB)
        p = int(len(data) * 0.1)
        data[p:p] = r.randbytes(MiB)
    else:
        for k in range(10):
            q = (k * 2 + 1) * len(data) // 21
            data[q:q + 100] = bytes(r.choice(b"abcdefghij klmnop") for _ in range(100))
    open(path, "wb").write(data)
    sys.exit(0)
os.makedirs(os.path.join(root, "big"), exist_ok=True)
os.makedirs(os.path.join(root, "small"), exist_ok=True)
with open(path, "wb") as f:
    if kind == "random":
        for _ in range(256):
            f.write(r.randbytes(MiB))
    else:
        words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(5000)]
        n = 0
        while n < 256 * MiB:
            block = "".join(" ".join(r.choice(words) for _ in range(r.randint(4, 14))) + "\n" for _ in range(2000)).encode()
            f.write(block)
            n += len(block)
open(os.path.join(root, "small", "notes.txt"), "w").write("notes\n")
