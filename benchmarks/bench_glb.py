#!/usr/bin/env python3
"""How fast is `kimodo_to_glb.py` against Blender doing the same job from Kimodo's BVH, at every size?

    python3 benchmarks/bench_glb.py [--repeats 7] [--batch 80] [--blender-batch 10] [--scale-repeats 3]

Everything is measured in one run, as a user runs it: whole processes, wall clock, Python's bytecode
cache allowed (one warm-up run each side first), medians of the repeats. Our side runs in a bare venv of
the interpreter running this script (benchmarks/out/venv: no site-packages, as after `pip install
kimodo-rig`), Blender's in the bpy venv that `bash scripts/test.sh` installs (KIMODO_BLENDER_PYTHON, else
the newest blender-* venv under KIMODO_VENVS or .venvs): both the same Python, neither given a head start.

Our run and Blender's alternate, so both meet the same load on a shared machine; ratios are medians of
the pairwise ratios, in wall seconds (the goal's measure) and in CPU seconds (steadier under load).

- one clip: a 121-frame SOMA-77 motion (the first 121 frames of Kimodo's soma_01 export): raw clip ->
  self-checked .glb, against Blender importing Kimodo's BVH of the same 121 frames and exporting a GLB;
- batch: `kimodo_to_glb.py` over --batch clips in one call (every core, the default), against Blender
  converting --blender-batch of them in one process (start-up paid once): clips per second each;
- scale: a 3,025- and a 30,250-frame SOMA-77 clip (soma_01 tiled): time ratio (goal <= 11x) and each
  run's peak memory (resource.getrusage in the converting process) against 4x the input's bytes + 30 MiB.

Prints a table and writes benchmarks/out/bench_glb.json. Not part of the test run.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
import venv
from array import array
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig.formats import raw, read_file  # noqa: E402

REFERENCE = ROOT / "tests" / "data" / "reference"
OUT = ROOT / "benchmarks" / "out"
SOURCE = "soma_01_single_text_prompt"
MIB = 1024 * 1024
# Runs the converter in this process and reports its own peak resident memory (KiB on Linux).
PEAK_PROBE = ("import resource, runpy, sys; sys.argv = sys.argv[1:]; code = 0\n"
              "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
              "except SystemExit as stop:\n    code = stop.code\n"
              "print('peak_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
              "sys.exit(code)\n")


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


def bare_python() -> str:
    """A venv of this interpreter with nothing installed (what a user's `pip install` venv starts as)."""
    folder = OUT / "venv"
    python = folder / "bin" / "python"
    if not python.exists():
        venv.EnvBuilder(with_pip=False, clear=True).create(str(folder))
    return str(python)


def raw_clip(folder: Path, motion, start: int, frames: int) -> Path:
    """A raw clip of `frames` frames from `motion`, starting at `start`, tiled past its end."""
    total, width = motion.frame_count, motion.joint_count * 4
    rotations, roots = array("f"), array("f")
    for frame in ((start + f) % total for f in range(frames)):
        rotations.fromlist(motion.local_rotations[frame * width:(frame + 1) * width].tolist())
        roots.fromlist(motion.root_positions[frame * 3:frame * 3 + 3].tolist())
    if sys.byteorder == "big":
        rotations.byteswap()
        roots.byteswap()
    folder.mkdir(parents=True, exist_ok=True)
    (folder / raw.ROTATIONS_FILE).write_bytes(rotations.tobytes())
    (folder / raw.ROOT_FILE).write_bytes(roots.tobytes())
    return folder


def trimmed_bvh(source: Path, target: Path, start: int, frames: int) -> Path:
    """Kimodo's BVH cut to `frames` frames from `start` (header kept, `Frames:` rewritten)."""
    lines = source.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Frames:"))
    motion = lines[at + 2:]
    picked = [motion[(start + f) % len(motion)] for f in range(frames)]
    target.write_text("\n".join(lines[:at] + ["Frames: {}".format(frames), lines[at + 1]] + picked) + "\n")
    return target


# As a user runs it: Python may write and use its bytecode cache (a shell that turned that off for
# development would otherwise have every run compile kimodo_rig from source).
USER_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run(command):
    """Wall seconds, CPU seconds (the process and every process it waited for) and the result of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=USER_ENV)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        sys.exit("failed: {}\n{}{}".format(" ".join(command), result.stdout[-2000:], result.stderr[-2000:]))
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), result


def alternate(ours, theirs, repeats: int):
    """Our command and Blender's run in turn (one warm-up each first), so that both meet the same load on
    a shared machine: medians of each side's wall and CPU seconds, and the median of the pairwise ratios."""
    run(ours)
    run(theirs)
    pairs = [(run(ours), run(theirs)) for _ in range(repeats)]
    return {
        "kimodo_rig_s": statistics.median(a[0] for a, _ in pairs),
        "blender_s": statistics.median(b[0] for _, b in pairs),
        "kimodo_rig_cpu_s": statistics.median(a[1] for a, _ in pairs),
        "blender_cpu_s": statistics.median(b[1] for _, b in pairs),
        "ratio_of_pairs": statistics.median(b[0] / a[0] for a, b in pairs),
        "cpu_ratio_of_pairs": statistics.median(b[1] / a[1] for a, b in pairs),
    }


def medians(command, repeats: int):
    """Median wall and CPU seconds of `command` over `repeats` runs (after one warm-up), and the last run."""
    run(command)
    runs = [run(command) for _ in range(repeats)]
    return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs), runs[-1][2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="runs per measurement; medians (default 7)")
    parser.add_argument("--batch", type=int, default=80, help="clips in our batch (default 80)")
    parser.add_argument("--blender-batch", type=int, default=10, help="clips in Blender's batch (default 10)")
    parser.add_argument("--scale-repeats", type=int, default=3, help="runs per long clip (default 3)")
    parser.add_argument("--skip-scale", action="store_true", help="only the one clip and the batch")
    args = parser.parse_args()
    blender = blender_python()
    OUT.mkdir(parents=True, exist_ok=True)
    work = OUT / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    ours = bare_python()
    script = str(ROOT / "kimodo_to_glb.py")
    helper = str(Path(__file__).with_name("blender_bvh_to_glb.py"))
    motion = read_file(REFERENCE / (SOURCE + "_somaskel77.npz"))
    bvh = REFERENCE / (SOURCE + ".bvh")
    cores = os.cpu_count()
    results = {"cores": cores, "python": sys.version.split()[0], "repeats": args.repeats,
               "load_average_before": os.getloadavg()}

    # One clip, whole process each side, in turn.
    clip = raw_clip(work / "one" / "clip121", motion, 0, 121)
    one_bvh = trimmed_bvh(bvh, work / "one" / "clip121.bvh", 0, 121)
    one = alternate([ours, script, str(clip), "--outdir", str(work / "one" / "ours")],
                    [blender, helper, str(work / "one"), "1", "30", str(one_bvh)], args.repeats)
    results["one_clip"] = dict(frames=121, joints=77, **one)

    # Batch: clips per second, start-up paid once per call; the ratio is of clips per second.
    clips = [raw_clip(work / "batch" / "in" / "clip{:03d}".format(i), motion, i, 121) for i in range(args.batch)]
    bvhs = [trimmed_bvh(bvh, work / "batch" / "clip{:03d}.bvh".format(i), i, 121) for i in range(args.blender_batch)]
    batch = alternate([ours, script] + [str(c) for c in clips] + ["--outdir", str(work / "batch" / "ours")],
                      [blender, helper, str(work / "batch"), "1", "30"] + [str(b) for b in bvhs], args.repeats)
    share = args.batch / args.blender_batch  # seconds -> clips per second, ours against theirs
    results["batch"] = dict(kimodo_rig_clips=args.batch, blender_clips=args.blender_batch,
                            kimodo_rig_clips_per_s=args.batch / batch["kimodo_rig_s"],
                            blender_clips_per_s=args.blender_batch / batch["blender_s"],
                            kimodo_rig_clips_per_cpu_s=args.batch / batch["kimodo_rig_cpu_s"],
                            blender_clips_per_cpu_s=args.blender_batch / batch["blender_cpu_s"],
                            ratio_of_pairs=batch["ratio_of_pairs"] * share,
                            cpu_ratio_of_pairs=batch["cpu_ratio_of_pairs"] * share,
                            kimodo_rig_s=batch["kimodo_rig_s"], blender_s=batch["blender_s"])

    print("one clip: {:.1f}x (CPU {:.1f}x); batch: {:.1f}x (CPU {:.1f}x)".format(
        results["one_clip"]["ratio_of_pairs"], results["one_clip"]["cpu_ratio_of_pairs"],
        results["batch"]["ratio_of_pairs"], results["batch"]["cpu_ratio_of_pairs"]), file=sys.stderr, flush=True)

    # Scale: 3,025 and 30,250 frames, time and peak memory of the converting process.
    scale = {}
    for frames in () if args.skip_scale else (3025, 30250):
        long_clip = raw_clip(work / "scale" / "clip{}".format(frames), motion, 0, frames)
        input_bytes = sum(p.stat().st_size for p in long_clip.iterdir())
        seconds, cpu, result = medians([ours, "-c", PEAK_PROBE, script, str(long_clip), "--outdir", str(work / "scale")],
                                       args.scale_repeats)
        peak = int(result.stderr.split("peak_kib")[1].split()[0]) * 1024
        scale[frames] = {"seconds": seconds, "cpu_seconds": cpu, "input_bytes": input_bytes, "peak_bytes": peak,
                         "peak_budget_bytes": 4 * input_bytes + 30 * MIB, "line": result.stdout.strip()}
    results["scale"] = {str(k): v for k, v in scale.items()}
    if scale:
        results["scale"]["time_ratio"] = scale[30250]["seconds"] / scale[3025]["seconds"]
        results["scale"]["cpu_time_ratio"] = scale[30250]["cpu_seconds"] / scale[3025]["cpu_seconds"]
    results["load_average_after"] = os.getloadavg()
    (OUT / "bench_glb.json").write_text(json.dumps(results, indent=2) + "\n")

    print("machine: {} cores, Python {}; medians of {} whole-process runs (scale: {}); load average {:.1f} "
          "before, {:.1f} after (1 minute)".format(cores, results["python"], args.repeats, args.scale_repeats,
                                                 results["load_average_before"][0], results["load_average_after"][0]))
    one, batch = results["one_clip"], results["batch"]
    print("one clip (121 frames, SOMA 77): kimodo-rig {:.3f} s, Blender {:.3f} s: {:.1f}x (goal 25x); CPU {:.3f} s "
          "vs {:.3f} s: {:.1f}x".format(one["kimodo_rig_s"], one["blender_s"], one["ratio_of_pairs"],
                                        one["kimodo_rig_cpu_s"], one["blender_cpu_s"], one["cpu_ratio_of_pairs"]))
    print("batch: kimodo-rig {} clips in {:.2f} s = {:.1f} clips/s; Blender {} clips in {:.2f} s = {:.2f} clips/s: "
          "{:.1f}x (goal 50x); per CPU second {:.1f} vs {:.2f} clips: {:.1f}x".format(
              args.batch, batch["kimodo_rig_s"], batch["kimodo_rig_clips_per_s"], args.blender_batch,
              batch["blender_s"], batch["blender_clips_per_s"], batch["ratio_of_pairs"],
              batch["kimodo_rig_clips_per_cpu_s"], batch["blender_clips_per_cpu_s"], batch["cpu_ratio_of_pairs"]))
    for frames, row in scale.items():
        print("scale {:>6} frames: {:.2f} s ({:.2f} s CPU), peak {:.1f} MiB of a {:.1f} MiB budget (input {:.1f} MiB)".format(
            frames, row["seconds"], row["cpu_seconds"], row["peak_bytes"] / MIB, row["peak_budget_bytes"] / MIB,
            row["input_bytes"] / MIB))
    if scale:
        print("scale time ratio 30,250 / 3,025 frames: {:.2f}x, CPU {:.2f}x (goal <= 11x)".format(
            results["scale"]["time_ratio"], results["scale"]["cpu_time_ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
