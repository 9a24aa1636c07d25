#!/usr/bin/env python3
"""The same motion at another frame rate retargets to the same motion: joints compared at common instants.

    nice python3 benchmarks/bench_frame_rate.py [--clips soma_02,g1_01] [--rates 24,60,120]
                                               [--characters mannequin,robot] [--no-foot-lock]

Each raw clip of tests/data/clips (30 fps, no contacts: the retarget detects them) is resampled with numpy
to each rate (joint rotations slerped, the root's position interpolated linearly between the two nearest
frames) and written as a raw clip folder; the 30 fps clip and each resampled one are retargeted onto each
character through the command line (`--fps`); the written .glb files are read with pygltflib + numpy
(tests/gltf_judge.Glb), and every joint of the character is compared at the instants both rates have a
frame at (24 fps: every 5th frame of 30; 60: every frame; 120: every frame), in cm per 1.7 m of the
character (its height from the report). Prints per pair the mean and worst distance and the joint and time
of the worst. The issue's bar: mean <= 1 cm, worst <= 3 cm per 1.7 m. Needs the test venv's Python.
Not part of the test run.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from gltf_judge import Glb, read_raw_clip, write_raw_clip  # noqa: E402
from leg_figures import slerp  # noqa: E402

CLIPS = ROOT / "tests" / "data" / "clips"
RIGS = ROOT / "tests" / "data" / "rigs"
CHARACTERS = {"mannequin": "mannequin", "mixamo": "mixamo", "robot": str(RIGS / "quaternius" / "RobotExpressive.glb"),
              "dress": str(RIGS / "quaternius" / "quaternius_female_dress.glb")}
SOURCE_FPS = 30


def resample(quats: np.ndarray, roots: np.ndarray, fps: int):
    frames = quats.shape[0]
    duration = (frames - 1) / SOURCE_FPS
    count = int(np.floor(duration * fps + 1e-9)) + 1
    at = np.arange(count) * SOURCE_FPS / fps  # in source frames
    low = np.minimum(np.floor(at).astype(int), frames - 1)
    high = np.minimum(low + 1, frames - 1)
    t = (at - low)[:, None]
    q = slerp(quats[low], quats[high], t[:, :, None].repeat(quats.shape[1], 1))
    r = roots[low] * (1.0 - t) + roots[high] * t
    return q, r


def retarget(clip: Path, fps: int, target: str, out: Path, lock: bool) -> dict:
    report = out.with_suffix(".json")
    command = [sys.executable, "-m", "kimodo_rig", "retarget", str(clip), "--target", target, "-o", str(out),
               "--report", str(report), "--fps", str(fps)] + ([] if lock else ["--no-foot-lock"])
    result = subprocess.run(command, cwd=str(ROOT), capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit("{}: {}".format(" ".join(command), result.stderr.strip()[-400:]))
    return json.loads(report.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", default="soma_02,g1_01")
    parser.add_argument("--rates", default="24,60,120")
    parser.add_argument("--characters", default="mannequin,robot")
    parser.add_argument("--no-foot-lock", action="store_true")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="kimodo_bench_fps_"))
    rates = [int(r) for r in args.rates.split(",")]
    clips = [c for c in sorted(p.name for p in CLIPS.iterdir() if p.is_dir()) if any(c.startswith(x) for x in args.clips.split(","))]
    print("{:<28} {:<10} {:>5} {:>12} {:>12}  {}".format("clip", "character", "fps", "mean cm/1.7m", "worst", "where"))
    for clip in clips:
        joints = 30 if clip.startswith("soma") else 34
        quats, roots = read_raw_clip(CLIPS / clip, joints)
        sources = {SOURCE_FPS: CLIPS / clip}
        for fps in rates:
            q, r = resample(quats, roots, fps)
            sources[fps] = write_raw_clip(folder / "{}_{}".format(clip, fps), q, r)
        for name in args.characters.split(","):
            outputs, height = {}, 170.0
            for fps, source in sources.items():
                out = folder / "{}_{}_{}.glb".format(clip, name, fps)
                report = retarget(source, fps, CHARACTERS[name], out, not args.no_foot_lock)
                if fps == SOURCE_FPS:
                    height = report.get("height_cm") or height
                glb = Glb(out)
                outputs[fps] = (glb.joint_world_positions(), glb.joint_names)
            base, names = outputs[SOURCE_FPS]
            for fps in rates:
                positions, _ = outputs[fps]
                step = Fraction(fps, SOURCE_FPS)  # frames of `fps` per source frame
                every = step.denominator  # source frames between common instants
                source_frames = np.arange(0, base.shape[0], every)
                other_frames = (source_frames * step).astype(int)
                keep = other_frames < positions.shape[0]
                a, b = base[source_frames[keep]], positions[other_frames[keep]]
                distance = np.linalg.norm(a - b, axis=-1) * 100.0 * 170.0 / height
                worst = np.unravel_index(np.argmax(distance), distance.shape)
                print("{:<28} {:<10} {:>5} {:>12.2f} {:>12.2f}  {} at {:.2f} s".format(
                    clip, name, fps, distance.mean(), distance.max(), names[worst[1]],
                    source_frames[keep][worst[0]] / SOURCE_FPS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
