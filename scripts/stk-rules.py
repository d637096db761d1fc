#!/usr/bin/env python3
"""Writes tag rules for SuperTuxKart's data the way a studio's dependency script would.

Usage: scripts/stk-rules.py [DATA_DIR] > odr.json
DATA_DIR defaults to /usr/share/games/supertuxkart/data (Debian's supertuxkart-data).

One tag per track (`track-<name>`) and per kart (`kart-<name>`), each naming, one pattern per file,
the files it references: every file of its own folder, the library objects its scene places
(`<library name="...">`, followed into their own node.xml), and the textures, models, music and
sounds its XML files and models name that live in the shared folders (`textures/`, `models/`,
`music/`, `sfx/`, `library/`). Names are found by reading the XML files and the strings inside the
binary models (`.spm`, `.b3d`), as the game's loader resolves them: the object's own folder first,
then the shared folders. Everything no tag names goes to `base` ("untagged": "base").
Nothing here knows a particular track: the rules follow from what the files reference.
"""
import json
import os
import re
import sys

DATA = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/games/supertuxkart/data"
SHARED = ["textures", "models", "music", "sfx", "library"]
NAME = re.compile(rb"[A-Za-z0-9_.\-]+\.(?:png|jpg|jpeg|dds|svg|spm|b3d|ogg|music|xml|as)\b", re.IGNORECASE)
LIBRARY = re.compile(rb'<library[^>]*\bname\s*=\s*"([^"]+)"')


def files_below(folder):
    """Every file below `folder` (symbolic links followed), relative to DATA, sorted."""
    found = []
    for root, dirs, names in os.walk(os.path.join(DATA, folder), followlinks=True):
        dirs.sort()
        for name in sorted(names):
            found.append(os.path.relpath(os.path.join(root, name), DATA))
    return found


# The shared folders by file name: the first path (sorted) for each name, as a loader's search
# path finds it.
by_name = {}
for folder in SHARED:
    for path in files_below(folder):
        by_name.setdefault(os.path.basename(path).lower(), path)


def referenced_names(path):
    """The file names a file mentions (XML attributes, strings inside models)."""
    if not re.search(r"\.(xml|spm|b3d|music|as)$", path, re.IGNORECASE):
        return set()
    with open(os.path.join(DATA, path), "rb") as handle:
        data = handle.read()
    return {match.decode("ascii").lower() for match in NAME.findall(data)}


def libraries(path):
    if not path.lower().endswith(".xml"):
        return set()
    with open(os.path.join(DATA, path), "rb") as handle:
        return {match.decode("utf-8", "replace") for match in LIBRARY.findall(handle.read())}


def closure(folder):
    """The files an object folder needs: its own, its library objects', and what they all name."""
    needed = set()
    pending = [folder]
    seen_folders = set()
    while pending:
        current = pending.pop()
        if current in seen_folders or not os.path.isdir(os.path.join(DATA, current)):
            continue
        seen_folders.add(current)
        own = files_below(current)
        own_names = {os.path.basename(path).lower() for path in own}
        needed.update(own)
        scan = list(own)
        scanned = set()
        while scan:
            path = scan.pop()
            if path in scanned:
                continue
            scanned.add(path)
            for library in libraries(path):
                pending.append(os.path.join("library", library))
            for name in referenced_names(path):
                if name in own_names:
                    continue
                shared = by_name.get(name)
                if shared and shared not in needed:
                    needed.add(shared)
                    scan.append(shared)
    return needed


def main():
    tags = {}
    for kind, folder in (("track", "tracks"), ("kart", "karts")):
        for name in sorted(os.listdir(os.path.join(DATA, folder))):
            if not os.path.isdir(os.path.join(DATA, folder, name)):
                continue
            tag = re.sub(r"[^A-Za-z0-9._-]", "_", f"{kind}-{name}")[:128]
            tags[tag] = {"include": sorted(closure(os.path.join(folder, name)))}
    rules = {"untagged": "base", "tags": tags}
    json.dump(rules, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    patterns = sum(len(rule["include"]) for rule in tags.values())
    print(f"{len(tags)} tags, {patterns} include patterns", file=sys.stderr)


if __name__ == "__main__":
    main()
