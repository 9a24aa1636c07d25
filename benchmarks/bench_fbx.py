#!/usr/bin/env python3
"""What `retarget -o walk.fbx` costs against `-o walk.glb` (issue 42: at most 1.5x).

    python3 benchmarks/bench_fbx.py [--repeats 5] [--characters robot,mannequin,dress] [--against DIR]
                                    [--skip-process] [--skip-steps]

Two measurements, each .glb and .fbx alternated so both meet the same load, medians of the repeats after
one untimed warm-up round, ratios from the same session:
- the whole process: `python3 -m kimodo_rig retarget soma_01 --target CHARACTER -o walk.glb` against
  `-o walk.fbx`, CPU seconds (user + system, the children's rusage) of the process as a user runs it
  (Python's bytecode cache allowed): reading, the retarget, writing and the report measured from the
  written file (an .fbx read back by our FBX reader) included. With `--against DIR` (another checkout,
  e.g. `git worktree add /tmp/main main`) the same runs there too, alternated, and this / that per case.
- the steps, in this process after one retarget onto each character (CPU seconds): writing the file alone
  (`retarget.output.write`: the .glb, serialised, parsed back and self-checked; the .fbx, from the same
  scene built in memory), and the output step a user pays (write, then `report_from_output` on the
  written file: an .fbx read back, a .glb's self-check reused); and the clip's box rig (`convert CLIP
  walk.glb` against `walk.fbx`: encode and write). Each write pays what it pays once in a process: the
  .glb self-check's parse and evaluation, cached for the report, are forgotten before each write
  (`character_glb.clear_caches`; without it every .glb write after the first reused the one before's).
Not part of the tests.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLIP = ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt"
RIGS = ROOT / "tests" / "data" / "rigs" / "quaternius"
CHARACTERS = {
    "robot": str(RIGS / "RobotExpressive.glb"),
    "mannequin": "mannequin",
    "dress": str(RIGS / "quaternius_female_dress.glb"),
}
EXTENSIONS = (".glb", ".fbx")
# As a user runs it: Python may write and use its bytecode cache.
USER_ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def process_seconds(tree: Path, argv) -> float:
    """CPU seconds (user + system) of one `python3 -m kimodo_rig ARGV` run in `tree`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([sys.executable, "-m", "kimodo_rig"] + argv, cwd=str(tree), capture_output=True, text=True,
                            env=USER_ENV)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if result.returncode != 0:
        raise SystemExit("{}: {} failed: {}".format(tree, " ".join(argv), result.stderr.strip()[-500:]))
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def whole_processes(characters, trees, repeats: int, folder: Path) -> None:
    print("whole `retarget` process, CPU s (medians of {} alternated runs)".format(repeats))
    medians = {}
    for character in characters:
        times = {(tree, extension): [] for tree in trees for extension in EXTENSIONS}
        for repeat in range(repeats + 1):  # the first round warms up (bytecode cache) and is not counted
            for tree in trees:
                for extension in EXTENSIONS:
                    out = folder / "{}_{}{}".format(character, trees.index(tree), extension)
                    seconds = process_seconds(tree, ["retarget", str(CLIP), "--target", CHARACTERS[character], "-o", str(out)])
                    if repeat:
                        times[(tree, extension)].append(seconds)
        for key, values in times.items():
            medians[(character,) + key] = statistics.median(values)
        for tree in trees:
            glb, fbx = medians[(character, tree, ".glb")], medians[(character, tree, ".fbx")]
            print("  {:10} {:28} .glb {:6.3f}  .fbx {:6.3f}  .fbx / .glb {:.2f}".format(
                character, str(tree)[-28:], glb, fbx, fbx / glb))
        if len(trees) == 2:
            for extension in EXTENSIONS:
                print("  {:10} {} this / that {:.2f}".format(character, extension, medians[(character, trees[0], extension)]
                                                           / medians[(character, trees[1], extension)]))


def cpu(job) -> float:
    start = time.process_time()
    job()
    return time.process_time() - start


def steps(characters, repeats: int, folder: Path) -> None:
    from kimodo_rig import formats
    from kimodo_rig.retarget import character as targets
    from kimodo_rig.retarget import character_glb, feet
    from kimodo_rig.retarget import output as retarget_output

    motion = formats.read_file(CLIP)
    print("steps in one process, CPU s (medians of {} alternated runs)".format(repeats))
    for character in characters:
        target = targets.load_target(CHARACTERS[character])
        retargeted, info = feet.retarget_onto(motion, target.skeleton, bind_mesh=targets.bind_mesh(target),
                                              target_map=targets.map_target(target), target_name=CHARACTERS[character],
                                              source_name=str(CLIP))
        times = {(step, extension): [] for step in ("write", "write + report") for extension in EXTENSIONS}
        for repeat in range(repeats + 1):
            for extension in EXTENSIONS:
                path = folder / ("walk" + extension)
                character_glb.clear_caches()
                written = cpu(lambda: retarget_output.write(retargeted, info, target, path))
                measured = cpu(lambda: retarget_output.report_from_output(path, motion, retargeted, info, target))
                if repeat:
                    times[("write", extension)].append(written)
                    times[("write + report", extension)].append(written + measured)
        for step in ("write", "write + report"):
            glb, fbx = (statistics.median(times[(step, extension)]) for extension in EXTENSIONS)
            print("  {:10} {:15} .glb {:6.3f}  .fbx {:6.3f}  .fbx / .glb {:.2f}".format(character, step, glb, fbx, fbx / glb))
    box = {extension: [] for extension in EXTENSIONS}
    for repeat in range(repeats + 1):
        for extension in EXTENSIONS:
            seconds = cpu(lambda: formats.write_file(motion, folder / ("box" + extension)))
            if repeat:
                box[extension].append(seconds)
    glb, fbx = (statistics.median(box[extension]) for extension in EXTENSIONS)
    print("  {:10} {:15} .glb {:6.3f}  .fbx {:6.3f}  .fbx / .glb {:.2f}".format("box rig", "write", glb, fbx, fbx / glb))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--characters", default=",".join(CHARACTERS), help="comma-separated: " + ", ".join(CHARACTERS))
    parser.add_argument("--against", help="another checkout of kimodo-rig to time beside this one (whole processes)")
    parser.add_argument("--skip-process", action="store_true", help="leave out the whole-process runs")
    parser.add_argument("--skip-steps", action="store_true", help="leave out the in-process steps")
    args = parser.parse_args()
    characters = [name for name in args.characters.split(",") if name]
    unknown = [name for name in characters if name not in CHARACTERS]
    if unknown:
        parser.error("unknown characters: " + ", ".join(unknown))
    trees = [ROOT] + ([Path(args.against).resolve()] if args.against else [])
    print("load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))
    with tempfile.TemporaryDirectory() as name:
        if not args.skip_process:
            whole_processes(characters, trees, args.repeats, Path(name))
        if not args.skip_steps:
            steps(characters, args.repeats, Path(name))
    print("load average {:.1f} {:.1f} {:.1f}".format(*os.getloadavg()))


main()
