#!/usr/bin/env python3
"""How much does `kimodo-rig join` cost over plain conversion?

    python3 benchmarks/bench_timeline.py [--repeats 5] [--format bvh]

In one run, on ten clips cycled from the shared SOMA clips (tests/data/clips): converting each of them
(read, write) against joining all ten with 10-frame blends (read all, place and cross-fade, write one file),
both in this process, alternated, medians of the repeats, and the ratio join / convert. Outputs go to benchmarks/out/
(ignored by git). Not part of the test run.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig import formats  # noqa: E402
from kimodo_rig.ops import timeline  # noqa: E402

CLIPS = ROOT / "tests" / "data" / "clips"
OUT = ROOT / "benchmarks" / "out"
CLIP_COUNT = 10
EXTENSIONS = {"bvh": ".bvh", "kimodo-npz": ".npz", "glb": ".glb", "raw": ""}


def clips():
    soma = sorted(p for p in CLIPS.iterdir() if p.name.startswith("soma"))
    return [soma[i % len(soma)] for i in range(CLIP_COUNT)]


def time_convert(paths, extension: str) -> float:
    started = time.perf_counter()
    for index, path in enumerate(paths):
        formats.write_file(formats.read_file(path), OUT / "convert_{}{}".format(index, extension))
    return time.perf_counter() - started


def time_join(paths, extension: str):
    started = time.perf_counter()
    joined = timeline.join([formats.read_file(path) for path in paths], blend=timeline.default_blend(30.0))
    formats.write_file(joined.motion, OUT / ("joined" + extension))
    return time.perf_counter() - started, joined.motion.frame_count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--format", choices=sorted(EXTENSIONS), default="bvh", help="output format (default bvh)")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    paths = clips()
    extension = EXTENSIONS[args.format]
    converts, joins = [], []
    for _ in range(args.repeats):  # alternated, so a busy machine slows both alike
        converts.append(time_convert(paths, extension))
        seconds, frames = time_join(paths, extension)
        joins.append(seconds)
    convert, join = statistics.median(converts), statistics.median(joins)
    print("{} clips -> {} ({} frames joined), medians of {}".format(len(paths), args.format, frames, args.repeats))
    print("  convert each  {:.2f} s".format(convert))
    print("  join all      {:.2f} s".format(join))
    print("  ratio join / convert  {:.2f}".format(join / convert))
    return 0


if __name__ == "__main__":
    sys.exit(main())
