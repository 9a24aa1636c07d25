#!/usr/bin/env python3
"""How fast is `kimodo-rig glb` against Blender doing the same job from Kimodo's BVH?

    python3 benchmarks/bench_glb.py [--repeats 5]

In one run: every shared clip (tests/data/clips) converted with the self-check (read, encode, read back,
FK compare, atomic write), and, for the clips whose Kimodo BVH export ships in tests/data/reference,
Blender (the bpy venv that `bash scripts/test.sh` installs) importing that BVH and exporting a GLB. Both
are timed inside their own process, so neither pays interpreter or Blender start-up; medians of the
repeats. Outputs go to benchmarks/out/ (ignored by git). Not part of the test run.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig.formats import glb, raw  # noqa: E402
from kimodo_rig.formats.options import WriteOptions  # noqa: E402

CLIPS = ROOT / "tests" / "data" / "clips"
REFERENCE = ROOT / "tests" / "data" / "reference"
OUT = ROOT / "benchmarks" / "out"


def blender_python() -> str:
    """KIMODO_BLENDER_PYTHON, else the newest blender venv under KIMODO_VENVS or .venvs."""
    if os.environ.get("KIMODO_BLENDER_PYTHON"):
        return os.environ["KIMODO_BLENDER_PYTHON"]
    venvs = os.environ.get("KIMODO_VENVS", str(ROOT / ".venvs"))
    found = sorted(glob.glob(os.path.join(venvs, "blender*", "bin", "python")), key=os.path.getmtime)
    if not found:
        sys.exit("no Blender Python (bpy venv) in {}: run `bash scripts/test.sh` once, or set "
                 "KIMODO_BLENDER_PYTHON".format(venvs))
    return found[-1]


def time_ours(clip: Path, repeats: int):
    """Median seconds for one clip folder -> self-checked .glb, and the last result line's numbers."""
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        motion = raw.read(clip)
        worst = glb.write(motion, OUT / (clip.name + ".glb"), WriteOptions())
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), motion.frame_count, worst


def time_blender(python: str, bvhs, repeats: int, fps: float):
    result = subprocess.run(
        [python, str(Path(__file__).with_name("blender_bvh_to_glb.py")), str(OUT), str(repeats), str(fps)]
        + [str(b) for b in bvhs],
        capture_output=True, text=True,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if result.returncode != 0 or not lines:
        sys.exit("Blender failed:\n" + result.stdout[-2000:] + result.stderr[-2000:])
    report = json.loads(lines[-1])
    return report["startup_s"], {name: statistics.median(times) for name, times in report["clips"].items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs per clip; medians are reported (default 5)")
    args = parser.parse_args()
    python = blender_python()  # before timing anything: fail fast without Blender
    OUT.mkdir(parents=True, exist_ok=True)
    clips = sorted(p for p in CLIPS.iterdir() if p.is_dir())
    ours = {clip.name: time_ours(clip, args.repeats) for clip in clips}
    bvhs = [REFERENCE / (clip.name + ".bvh") for clip in clips if (REFERENCE / (clip.name + ".bvh")).is_file()]
    startup, blender = time_blender(python, bvhs, args.repeats, 30.0)

    print("seconds per clip, median of {} runs (kimodo-rig: raw clip -> self-checked .glb; Blender: Kimodo's "
          "BVH -> import -> glTF export)".format(args.repeats))
    print("{:34} {:>6} {:>10} {:>9} {:>8} {:>10}".format("clip", "frames", "kimodo-rig", "Blender", "ratio", "self-check"))
    ratios = []
    for clip in clips:
        seconds, frames, worst = ours[clip.name]
        other = blender.get(clip.name + ".bvh")
        if other is None:
            print("{:34} {:>6} {:>10.3f} {:>9} {:>8} {:>10.1e}".format(clip.name, frames, seconds, "-", "-", worst))
            continue
        ratios.append(other / seconds)
        print("{:34} {:>6} {:>10.3f} {:>9.3f} {:>7.2f}x {:>10.1e}".format(clip.name, frames, seconds, other,
                                                                          other / seconds, worst))
    print("median kimodo-rig seconds per clip (all {}): {:.3f}".format(len(clips), statistics.median(
        v[0] for v in ours.values())))
    if ratios:
        print("median ratio Blender / kimodo-rig over the {} clips with a BVH: {:.2f}x (ratio > 1: kimodo-rig is "
              "faster)".format(len(ratios), statistics.median(ratios)))
    print("Blender's own start-up (import bpy), paid once per process and not counted above: {:.2f} s".format(startup))
    return 0


if __name__ == "__main__":
    sys.exit(main())
