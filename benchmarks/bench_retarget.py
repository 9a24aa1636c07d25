#!/usr/bin/env python3
"""CPU seconds of `kimodo-rig retarget` per 10 s of motion, with the foot lock and without, onto each shared
character and onto a ~700-bone one against a ~50-bone one.

    python3 benchmarks/bench_retarget.py [--repeats 3] [--characters mannequin,robot] [--against DIR]
                                         [--skip-big] [--profile CHARACTER] [--solver plan]

The clip: 300 frames (10 s at 30 fps) of Kimodo's own motion with its foot contacts, made once by this
tree's `join` (soma_02 then soma_01, cross-faded) and `trim`; `--clip FILE` uses another. Each run is a
whole `python3 -m kimodo_rig retarget` process, as a user runs it (reading and writing included); its CPU
seconds (user + system, from the children's rusage) are what is timed, median of `--repeats` after one
untimed warm-up run per tree (Python's bytecode cache allowed and written, as a user's install has it),
the runs of a case alternated so both meet the same load on a shared machine. Ratios come from the same session:
- lock / free: the foot lock against `--no-foot-lock` on the same character (the issue's bar: the free
  run at most 25 % faster, i.e. free / lock >= 0.75);
- big / small: the ~700-bone character (tests/rig_variants.rigify_like on the mannequin with mechanism
  bones added, built with numpy + pygltflib: run this with the test venv's Python) against the mannequin
  (53 bones), both with the lock (bar: within 2x);
- x real time: seconds of motion per CPU second (bar: >= 20x, i.e. <= 0.5 CPU s per 10 s);
- with `--against DIR` (another checkout, e.g. `git worktree add /tmp/main main`), every case runs in
  that tree too, alternated with this one, and this / that is printed per case.
`--solver` picks the foot lock's leg solver for every run (KIMODO_LEG_SOLVER: `plan`, issue 40's, or
`layers`); without it, the environment's, else the default (the plan for legs with a knee and a foot, the
layers for a rigid leg). Each table ends with the issue's bars, met or not.
`--profile CHARACTER` runs one locked retarget in this process under cProfile and prints the functions
with the most cumulative and own time (no timings then). Outputs go to benchmarks/out/ (ignored by git).
Not part of the test run.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NPZ = ROOT / "tests" / "data" / "npz"
RIGS = ROOT / "tests" / "data" / "rigs"
OUT = ROOT / "benchmarks" / "out"
CHARACTERS = {
    "mannequin": "mannequin",
    "mixamo": "mixamo",
    "robot": str(RIGS / "quaternius" / "RobotExpressive.glb"),
    "dress": str(RIGS / "quaternius" / "quaternius_female_dress.glb"),
}
BIG_BONES = 700
# The bars: CPU s per 10 s of motion with the lock (20x real time), the free run against the
# locked one (at most 25 % faster), the ~700-bone character against the 53-bone mannequin (within 2x).
LOCK_BAR_S = 0.5
FREE_OVER_LOCK_BAR = 0.75
BIG_OVER_SMALL_BAR = 2.0
# As a user runs it: Python may write and use its bytecode cache (a shell that turned that off for
# itself would time the compiling of every module, every run).
USER_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
CLIP_FRAMES = 300
CLIP_FPS = 30.0


def make_clip(folder: Path) -> Path:
    """300 frames of Kimodo motion with its contacts: soma_02 then soma_01, joined and trimmed."""
    joined, clip = folder / "joined.npz", folder / "clip300.npz"
    if clip.exists():
        return clip
    for argv in (["join", str(NPZ / "soma_02_multi_text_prompt" / "motion.npz"),
                  str(NPZ / "soma_01_single_text_prompt" / "motion.npz"), "-o", str(joined)],
                 ["trim", str(joined), str(clip), "--start", "0", "--end", str(CLIP_FRAMES)]):
        subprocess.run([sys.executable, "-m", "kimodo_rig"] + argv, cwd=str(ROOT), check=True, capture_output=True)
    return clip


def make_big_character(folder: Path) -> Path:
    """The mannequin as a Rigify rig with every bone (rig_variants.rigify_like), then mechanism bones no
    vertex follows added under the skinned ones (in one accessor) until it holds BIG_BONES joints."""
    path = folder / "rigify_{}.glb".format(BIG_BONES)
    if path.exists():
        return path
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np
    import pygltflib
    import rig_variants as rv

    gltf = rv.load(rv.MANNEQUIN)
    rv.rigify_like(gltf)
    skin = gltf.skins[0]
    ibm = rv.read_accessor(gltf, skin.inverseBindMatrices).astype(np.float64)
    joints = list(skin.joints)
    skinned = list(joints)
    added, rows = [], []
    k = 0
    while len(joints) + len(added) < BIG_BONES:
        slot = k % len(skinned)
        parent = skinned[slot]
        gltf.nodes.append(pygltflib.Node(name="MCH-extra.{:03d}".format(k), translation=[0.0, 0.01, 0.0]))
        new = len(gltf.nodes) - 1
        gltf.nodes[parent].children = list(gltf.nodes[parent].children or []) + [new]
        local = np.eye(4)
        local[1, 3] = 0.01
        rows.append(np.linalg.inv(np.linalg.inv(ibm[slot]) @ local))
        added.append(new)
        k += 1
    skin.joints = joints + added
    skin.inverseBindMatrices = rv.add_accessor(gltf, np.concatenate([ibm, np.array(rows)]), "MAT4")
    rv.save(gltf, path)
    return path


def cpu_seconds(tree: Path, argv) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "kimodo_rig"] + argv, cwd=str(tree), capture_output=True, text=True,
                            env=USER_ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit("{}: {} failed: {}".format(tree, " ".join(argv), result.stderr.strip()[-500:]))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def retarget_argv(clip: Path, target: str, out: Path, lock: bool):
    return ["retarget", str(clip), "--target", target, "-o", str(out)] + ([] if lock else ["--no-foot-lock"])


def profile(clip: Path, target: str, out: Path, top: int = 25) -> None:
    sys.path.insert(0, str(ROOT))
    from kimodo_rig.cli import main as cli_main

    profiler = cProfile.Profile()
    profiler.enable()
    cli_main(retarget_argv(clip, target, out, True))
    profiler.disable()
    for order in ("cumulative", "tottime"):
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats(order).print_stats(top)
        print("--- by {} ---".format(order))
        print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:12000])


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--characters", default=",".join(CHARACTERS), help="comma-separated: " + ", ".join(CHARACTERS))
    parser.add_argument("--clip", help="a motion file to use instead of the joined 300-frame clip")
    parser.add_argument("--seconds", type=float, help="the clip's duration (default: 10 s for the joined clip)")
    parser.add_argument("--against", help="another checkout of kimodo-rig to time beside this one (ratios this / that)")
    parser.add_argument("--skip-big", action="store_true", help="leave out the ~700-bone character")
    parser.add_argument("--profile", metavar="CHARACTER", help="profile one locked retarget onto it instead")
    parser.add_argument("--solver", choices=("layers", "plan"), help="KIMODO_LEG_SOLVER for every run (default: the environment's)")
    args = parser.parse_args()
    if args.solver:
        USER_ENV["KIMODO_LEG_SOLVER"] = os.environ["KIMODO_LEG_SOLVER"] = args.solver
    OUT.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.gettempdir()) / "kimodo_bench_retarget"
    folder.mkdir(exist_ok=True)
    clip = Path(args.clip).resolve() if args.clip else make_clip(folder)
    seconds = args.seconds or (CLIP_FRAMES / CLIP_FPS if not args.clip else None)
    if seconds is None:
        raise SystemExit("--clip needs --seconds (the clip's duration)")
    targets = {name: CHARACTERS[name] for name in args.characters.split(",") if name}
    if args.profile:
        target = CHARACTERS.get(args.profile) or (str(make_big_character(folder)) if args.profile == "big" else args.profile)
        profile(clip, target, OUT / "bench_retarget_profile.glb")
        return 0
    if not args.skip_big:
        targets["big{}".format(BIG_BONES)] = str(make_big_character(folder))
    trees = [ROOT] + ([Path(args.against).resolve()] if args.against else [])
    print("clip {} ({:.2f} s), {} repeats, leg solver {}, load {}".format(
        clip.name, seconds, args.repeats, USER_ENV.get("KIMODO_LEG_SOLVER", "default"),
        " ".join("{:.2f}".format(x) for x in os.getloadavg())))
    first = next(iter(targets.values()))
    for tree in trees:  # a warm-up run per tree: its bytecode cache written, as an installed package has it
        cpu_seconds(tree, retarget_argv(clip, first, OUT / "retarget_warm_up.glb", False))
    times = {}  # (tree, name, lock) -> [cpu s]
    for _ in range(args.repeats):
        for name, target in targets.items():
            for lock in (True, False):
                for tree in trees:
                    out = OUT / "retarget_{}_{}{}.glb".format(name, "lock" if lock else "free", "" if tree == ROOT else "_against")
                    times.setdefault((tree, name, lock), []).append(cpu_seconds(tree, retarget_argv(clip, target, out, lock)))
    per10 = {key: statistics.median(value) * 10.0 / seconds for key, value in times.items()}
    for tree in trees:
        print("\n{}".format(tree))
        print("{:<10} {:>14} {:>14} {:>10} {:>12}".format("character", "lock CPU s/10s", "free CPU s/10s",
                                                            "free/lock", "x real time"))
        for name in targets:
            lock, free = per10[(tree, name, True)], per10[(tree, name, False)]
            print("{:<10} {:>14.2f} {:>14.2f} {:>10.2f} {:>12.1f}".format(name, lock, free, free / lock, 10.0 / lock))
        locks = {name: per10[(tree, name, True)] for name in targets}
        ratios = {name: per10[(tree, name, False)] / lock for name, lock in locks.items()}
        big = "big{}".format(BIG_BONES)
        shared = [name for name in targets if name != big] or list(targets)  # the bar is the shared characters'
        worst = max(shared, key=locks.get)
        print("bars: lock <= {:.2f} CPU s per 10 s: {} (worst {} {:.2f}); free / lock >= {:.2f}: {} (least {:.2f})".format(
            LOCK_BAR_S, _met(locks[worst] <= LOCK_BAR_S), worst, locks[worst], FREE_OVER_LOCK_BAR,
            _met(min(ratios.values()) >= FREE_OVER_LOCK_BAR), min(ratios.values())))
        if big in targets and "mannequin" in targets:
            ratio = locks[big] / locks["mannequin"]
            print("big / mannequin (lock): {:.2f} (bar <= {:.1f}: {})".format(ratio, BIG_OVER_SMALL_BAR,
                                                                            _met(ratio <= BIG_OVER_SMALL_BAR)))
    if args.against:
        print("\nthis / against (CPU s):")
        for name in targets:
            print("{:<10} lock {:>6.3f}  free {:>6.3f}".format(
                name, per10[(ROOT, name, True)] / per10[(trees[1], name, True)],
                per10[(ROOT, name, False)] / per10[(trees[1], name, False)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
