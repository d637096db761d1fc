#!/usr/bin/env python3
"""Generates the sample game's assets: deterministic, standard-library only, under 5 MB.

Run from anywhere:  python3 SampleAssets/generate.py
It rewrites every generated file below SampleAssets/ (odr.json is hand-written).

What it shows (see odr.json and docs/ODRPACK.md):
  - Levels/Level1..5: a JSON map, PNG textures and WAV sounds per level (tags level1..level5);
  - Shared/Forest (levels 1-2), Shared/Caves (levels 3-4), Shared/Castle (levels 4-5): assets shared
    by neighbouring levels, so they land in shared packs tagged e.g. [level1, level2];
  - Tutorial/: the tutorial tag, installed with the app (initialInstall);
  - UI/: base files that no rule tags; "untagged": "base" puts them in the base pack;
  - UI/Sounds/click.wav and Tutorial/click.wav: the same bytes at two paths, stored once;
  - Levels/Level5/Cinematics: enough data to split level5 over the 512 KiB pack limit;
  - Levels/Level1/Source/*.psd: working files the rules exclude.
"""
import json
import math
import os
import random
import struct
import zlib

ROOT = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20240611)


def write(path, data):
    full = os.path.join(ROOT, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)


def png(width, height, seed, noise=0.0):
    """A valid RGB PNG: a smooth pattern (compressible) plus optional noise (not)."""
    local = random.Random(seed)
    phase = local.random() * 6.28
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            base = 128 + 100 * math.sin(x / 7.0 + phase) * math.cos(y / 9.0 - phase)
            jitter = (local.random() - 0.5) * 255 * noise
            value = int(max(0, min(255, base + jitter)))
            row += bytes([value, (value * 3 + seed) % 256, 255 - value])
        rows.append(bytes(row))

    def chunk(kind, payload):
        body = kind + payload
        return struct.pack(">I", len(payload)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def wav(seconds, frequency, seed, rate=22050):
    """A valid 8-bit mono PCM WAV: a decaying tone with a little noise."""
    local = random.Random(seed)
    count = int(seconds * rate)
    samples = bytearray(count)
    for i in range(count):
        t = i / rate
        envelope = math.exp(-2.0 * t / seconds)
        value = 128 + 90 * envelope * math.sin(2 * math.pi * frequency * t) + local.uniform(-6, 6)
        samples[i] = int(max(0, min(255, value)))
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    return (b"RIFF" + struct.pack("<I", 36 + count) + b"WAVE" + b"fmt " + struct.pack("<I", 16) + fmt
            + b"data" + struct.pack("<I", count) + bytes(samples))


def level_map(number):
    local = random.Random(number)
    size = 24 + number * 4
    tiles = ["".join(local.choice(".#~^T") for _ in range(size)) for _ in range(size)]
    enemies = [{"kind": local.choice(["slime", "bat", "knight"]), "x": local.randrange(size),
                "y": local.randrange(size)} for _ in range(number * 3)]
    shared = {1: ["Forest"], 2: ["Forest"], 3: ["Caves"], 4: ["Caves", "Castle"], 5: ["Castle"]}[number]
    document = {"level": number, "name": f"Level {number}", "width": size, "height": size,
                "tiles": tiles, "enemies": enemies, "sharedSets": shared,
                "music": f"Levels/Level{number}/Sounds/theme.wav"}
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode()


def main():
    # Base UI: untagged, so "untagged": "base" puts these in the pack every client installs first.
    write("UI/menu.json", (json.dumps({"buttons": ["Play", "Options", "Quit"], "title": "ODR Quest"},
                                      indent=2, sort_keys=True) + "\n").encode())
    write("UI/Textures/font.png", png(128, 64, 1))
    write("UI/Textures/buttons.png", png(96, 32, 2, noise=0.2))
    click = wav(0.15, 880, 3)
    write("UI/Sounds/click.wav", click)

    # Tutorial: its own tag, installed with the app. click.wav repeats UI's bytes on purpose.
    write("Tutorial/steps.json", (json.dumps({"steps": ["Move with the arrows", "Jump with space",
                                                        "Open chests with E"]}, indent=2) + "\n").encode())
    write("Tutorial/Textures/arrows.png", png(64, 64, 4))
    write("Tutorial/Sounds/voice.wav", wav(1.2, 220, 5))
    write("Tutorial/click.wav", click)

    # Sets shared by neighbouring levels.
    for index, name in enumerate(["Forest", "Caves", "Castle"]):
        write(f"Shared/{name}/Textures/tiles.png", png(128, 128, 10 + index, noise=0.3))
        write(f"Shared/{name}/Textures/props.png", png(96, 96, 20 + index, noise=0.5))
        write(f"Shared/{name}/Sounds/ambience.wav", wav(1.5, 110 + 40 * index, 30 + index))

    for number in range(1, 6):
        folder = f"Levels/Level{number}"
        write(f"{folder}/map.json", level_map(number))
        write(f"{folder}/Textures/background.png", png(160, 120, 100 + number, noise=0.6))
        write(f"{folder}/Textures/sprites.png", png(64, 64, 200 + number, noise=0.4))
        write(f"{folder}/Sounds/theme.wav", wav(1.0 + number * 0.2, 196 + 20 * number, 300 + number))
    # Excluded working files.
    write("Levels/Level1/Source/background.psd", bytes(rng.getrandbits(8) for _ in range(2048)))
    # Level 5's cinematics push its tag set over the 512 KiB pack limit, so it is split in two.
    for part in range(1, 4):
        write(f"Levels/Level5/Cinematics/scene{part}.wav", wav(7.0, 150 + 30 * part, 400 + part))


if __name__ == "__main__":
    main()
