#!/usr/bin/env python3
"""What writing .fbx costs against writing .glb for the same job (issue 42: at most 1.5x for a retarget).

    python3 benchmarks/bench_fbx.py [--repeats 7] [--target tests/data/rigs/quaternius/quaternius_female_dress.glb]

In one process, after one retarget of soma_01 onto the target: writing the file, and the output step a
user pays for each format (write the file, then measure the report from it, as `kimodo-rig retarget -o`
does: an .fbx is read back by our FBX reader for it), .glb and .fbx alternated so both meet the same load; and the box rig of the clip (`convert CLIP walk.glb` against
`walk.fbx`: encode and write). Medians of the repeats (wall seconds) and their ratio. Not part of the tests.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kimodo_rig import formats  # noqa: E402
from kimodo_rig.retarget import character as targets  # noqa: E402
from kimodo_rig.retarget import feet  # noqa: E402
from kimodo_rig.retarget import output as retarget_output  # noqa: E402

CLIP = ROOT / "tests" / "data" / "clips" / "soma_01_single_text_prompt"


def timed(job) -> float:
    start = time.perf_counter()
    job()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--target", default=str(ROOT / "tests" / "data" / "rigs" / "quaternius" / "quaternius_female_dress.glb"))
    args = parser.parse_args()
    motion = formats.read_file(CLIP)
    target = targets.load_target(args.target)
    target_map = targets.map_target(target)
    mesh = targets.bind_mesh(target)
    retargeted, info = feet.retarget_onto(motion, target.skeleton, bind_mesh=mesh, target_map=target_map,
                                          target_name=args.target, source_name=str(CLIP))
    times = {"write .glb": [], "write .fbx": [], "retarget .glb": [], "retarget .fbx": [], "box rig .glb": [],
             "box rig .fbx": []}
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats + 1):  # the first round warms up and is not counted
            for extension in (".glb", ".fbx"):
                path = Path(folder) / ("walk" + extension)

                written = timed(lambda: retarget_output.write(retargeted, info, target, path))
                measured = timed(lambda: retarget_output.report_from_output(path, motion, retargeted, info, target))
                box = timed(lambda: formats.write_file(motion, Path(folder) / ("box" + extension)))
                if repeat:
                    times["write " + extension].append(written)
                    times["retarget " + extension].append(written + measured)
                    times["box rig " + extension].append(box)
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print("{:16} {:8.3f} s".format(name, value))
    print("write:    .fbx / .glb = {:.2f} (goal <= 1.5)".format(medians["write .fbx"] / medians["write .glb"]))
    print("retarget: .fbx / .glb = {:.2f} (write and report)".format(medians["retarget .fbx"] / medians["retarget .glb"]))
    print("box rig:  .fbx / .glb = {:.2f}".format(medians["box rig .fbx"] / medians["box rig .glb"]))


main()
