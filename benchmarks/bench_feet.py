#!/usr/bin/env python3
"""Feet and floor of `kimodo-rig retarget`, every shared clip onto every shared rig, beside Kimodo's own.

    python3 benchmarks/bench_feet.py [--clips soma_01,g1_02] [--rigs mannequin,robot]

Each clip is the demo NPZ of tests/data/npz (it carries Kimodo's own foot contacts); each rig is a shared
character (MPFB2 mannequin and mixamo, the Quaternius robot and dress character) or the CMU BVH skeleton
(BVH output). For each pair the retarget runs with the foot lock and without it (`--no-foot-lock`); the
figures are the report's, measured from the written file:
- skate: planted-foot speed during Kimodo's contacts (heel joint while the heel is in contact, toe point
  while the toe is, steps in contact at both ends), cm a frame, and the same scaled to a 1.7 m character;
- planted: mean height of the planted feet's lowest point above the character's rest floor, cm;
- lowest: the lowest foot point over the clip, from the rest floor, cm;
- limbs: mean cosine of limb directions, source vs character, in the character's facing;
- K-def: the report's Kimodo-definition skate of the locked output (`kimodo_skate_cm_per_frame`: every
  contact frame's step of the ankle or toe, Kimodo's foot_skate_from_pred_contacts), per 1.7 m; K-def own:
  the clip's own (`source_kimodo_skate_cm_per_frame`); ratio: the two (issue 40's bar: at most 1).
Kimodo's own figures come from its NPZ: the same skate of its posed_joints during its own contacts, and
the height of its toe joints while planted (its toe joint stands that far above its sole). Outputs go to
benchmarks/out/ (ignored by git). Not part of the test run.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig import skeletons  # noqa: E402
from kimodo_rig.formats import npy  # noqa: E402

NPZ = ROOT / "tests" / "data" / "npz"
RIGS = ROOT / "tests" / "data" / "rigs"
OUT = ROOT / "benchmarks" / "out"
TARGETS = {
    "mannequin": ("mannequin", ".glb"),
    "mixamo": ("mixamo", ".glb"),
    "robot": (str(RIGS / "quaternius" / "RobotExpressive.glb"), ".glb"),
    "dress": (str(RIGS / "quaternius" / "quaternius_female_dress.glb"), ".glb"),
    "cmu": (str(RIGS / "cmu" / "resources_131_01.bvh"), ".bvh"),
}


def kimodo_own(clip: str):
    """Kimodo's skate (cm a frame) and planted toe height (cm) from its own NPZ."""
    arrays = npy.read_npz(NPZ / clip / "motion.npz", ("posed_joints", "foot_contacts"))
    frames, joints = arrays["posed_joints"].shape[:2]
    posed = arrays["posed_joints"].values
    contacts = arrays["foot_contacts"].values
    record = skeletons.data(skeletons.by_joint_count(joints).name)
    names = record["joint_names"]
    groups = record["semantic_groups"]
    feet = [names.index(n) for n in groups["left_foot_chain"][:2] + groups["right_foot_chain"][:2]]

    def at(t, j):
        base = (t * joints + j) * 3
        return posed[base:base + 3]

    steps, toe_heights = [], []
    for channel, joint in enumerate(feet):
        for t in range(frames - 1):
            if contacts[t * 4 + channel] and contacts[(t + 1) * 4 + channel]:
                steps.append(math.dist(at(t + 1, joint), at(t, joint)))
        toe_heights += [at(t, joint)[1] for t in range(frames) if channel in (1, 3) and contacts[t * 4 + channel]]
    return 100.0 * sum(steps) / len(steps), 100.0 * statistics.median(toe_heights)


def run(clip: str, rig: str, lock: bool):
    spec, extension = TARGETS[rig]
    out = OUT / "feet_{}_{}{}{}".format(clip, rig, "" if lock else "_free", extension)
    report = out.with_suffix(".json")
    command = [sys.executable, "-m", "kimodo_rig", "retarget", str(NPZ / clip / "motion.npz"), "--target", spec,
               "-o", str(out), "--report", str(report)] + ([] if lock else ["--no-foot-lock"])
    result = subprocess.run(command, capture_output=True, text=True, cwd=str(ROOT))
    if result.returncode != 0:
        return None
    return json.loads(report.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clips", default="", help="comma-separated clip name prefixes (default: all)")
    parser.add_argument("--rigs", default=",".join(TARGETS), help="comma-separated: " + ", ".join(TARGETS))
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    clips = sorted(p.name for p in NPZ.iterdir() if p.is_dir())
    if args.clips:
        clips = [c for c in clips if any(c.startswith(prefix) for prefix in args.clips.split(","))]
    rigs = [r for r in args.rigs.split(",") if r]
    header = "{:<31} {:<9} {:>13} {:>13} {:>14} {:>8} {:>8} {:>7} | {:>13} {:>9} | {:>9} {:>9} {:>9}".format(
        "clip", "rig", "skate locked", "(per 1.7 m)", "skate unlocked", "planted", "lowest", "limbs",
        "Kimodo skate", "Kimodo toe", "K-def", "K-def own", "ratio")
    print(header)
    print("-" * len(header))
    locked_scaled, free_scaled, kimodo_skates = [], [], []
    for clip in clips:
        kimodo_skate, kimodo_toe = kimodo_own(clip)
        kimodo_skates.append(kimodo_skate)
        for rig in rigs:
            locked, free = run(clip, rig, True), run(clip, rig, False)
            if locked is None or free is None:
                print("{:<31} {:<9} failed".format(clip, rig))
                continue
            scale = 170.0 / (locked["height_cm"] or 170.0)
            locked_scaled.append(locked["foot_skate_cm_per_frame"] * scale)
            free_scaled.append(free["foot_skate_cm_per_frame"] * scale)
            kimodo_definition = (locked.get("kimodo_skate_cm_per_frame") or 0.0) * scale
            own = locked.get("source_kimodo_skate_cm_per_frame") or 0.0
            print("{:<31} {:<9} {:>13.3f} {:>13.3f} {:>14.3f} {:>8.2f} {:>8.2f} {:>7.4f} | {:>13.3f} {:>9.2f} | {:>9.3f} {:>9.3f} {:>9.2f}".format(
                clip, rig, locked["foot_skate_cm_per_frame"], locked_scaled[-1], free["foot_skate_cm_per_frame"],
                locked["planted_sole_cm"], locked["lowest_toe_cm"], locked["limb_cosine_mean"], kimodo_skate, kimodo_toe,
                kimodo_definition, own, kimodo_definition / own if own else float("nan")))
    if locked_scaled:
        print("median skate per 1.7 m: locked {:.3f}, unlocked {:.3f}, Kimodo's own {:.3f} cm a frame".format(
            statistics.median(locked_scaled), statistics.median(free_scaled), statistics.median(kimodo_skates)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
