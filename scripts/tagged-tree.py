#!/usr/bin/env python3
"""A generated assets folder for scale measurements: TAGS folders t00000, t00001, ... of FILES
small text files each (deterministic content), and an odr.json giving each folder its own tag.

    scripts/tagged-tree.py ROOT TAGS FILES

Used by scripts/report-scale.sh and scripts/metadata-scale.sh (and odrbench request's catalog has
the same shape)."""
import os
import sys

root, tags, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = ["t%05d" % i for i in range(tags)]
for name in names:
    os.makedirs(os.path.join(root, name), exist_ok=True)
    for f in range(files):
        with open(os.path.join(root, name, "f%d.txt" % f), "w") as out:
            out.write(("%s file %d: tile data 0123456789\n" % (name, f)) * 3)
with open(os.path.join(root, "odr.json"), "w") as out:
    out.write('{"tags": {\n' + ",\n".join('"%s": ["%s"]' % (n, n) for n in names) + "\n}}\n")
