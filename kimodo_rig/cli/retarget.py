"""`kimodo-rig retarget INPUT... --target RIG (-o OUT | --outdir DIR)`: motion onto another humanoid rig."""
from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import re
import sys
from pathlib import Path
from typing import Iterator, Optional

from .. import formats, naming
from ..files import write_bytes_atomic
from ..retarget import character as targets, feet, output as retarget_output
from ..retarget.mapping import HumanoidMap
from ..retarget.report import format_report, report_warnings
from .arguments import frames_per_second
from .batch import add_jobs_argument, run_batch
from .progress import Progress

LOG = logging.getLogger("kimodo_rig")


def add_parser(commands) -> None:
    parser = commands.add_parser("retarget", help="motion onto another humanoid rig")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="clip folder(s) or motion file(s)")
    parser.add_argument("--target", required=True, help=".glb/.gltf/.vrm/.fbx, .bvh, or a built-in: mannequin, mixamo")
    parser.add_argument("-o", "--output", help="output .glb/.fbx/.bvh (one input only)")
    parser.add_argument("--outdir", metavar="DIR", help="output folder: one .glb per input, named after it")
    parser.add_argument("--map", metavar="BONES.json", help="which bone plays which part (as `kimodo-rig map RIG --json` prints)")
    parser.add_argument("--report", help="also write the report as JSON here (one input only)")
    parser.add_argument("--in-place", action="store_true", help="remove horizontal travel")
    parser.add_argument("--root-motion", choices=("hips", "root"), default="hips",
                        help="where the travel goes: on the hips (default) or on the rig's root bone (one is added if it has none)")
    parser.add_argument("--fps", type=frames_per_second, help="frame rate where the input does not carry one")
    parser.add_argument("--no-foot-lock", dest="foot_lock", action="store_false",
                        help="keep the feet as the solve leaves them (they still stand on the floor)")
    add_jobs_argument(parser)
    parser.set_defaults(run=run_retarget, prog=parser.prog)


def run_retarget(args: argparse.Namespace) -> int:
    if len(args.inputs) > 1 and (args.output or args.report):
        print("{}: -o and --report name one file; use --outdir for {} inputs".format(args.prog, len(args.inputs)), file=sys.stderr)
        return 2
    if not args.output and not args.outdir:
        print("{}: give -o FILE (one input) or --outdir DIR".format(args.prog), file=sys.stderr)
        return 2
    if args.output:
        retarget_output.check_output_path(args.output)
    else:
        from .glb import output_folder_problem  # the glb verb's modules load for --outdir only

        problem = output_folder_problem(Path(args.outdir))
        if problem:
            print(problem, file=sys.stderr)
            return 1
    target = targets.load_target(args.target)
    user_map = targets.read_user_map(args.map) if args.map else None
    target_map = targets.map_target(target, user_map, args.map or "")  # once: its warnings print once
    mesh = targets.bind_mesh(target)  # once: where the character's soles are
    if args.output:
        with Progress(Path(args.inputs[0]).name) as progress:
            report = retarget_one(args.inputs[0], Path(args.output), target, target_map, mesh, args, progress)
        print(report)
        return 0
    taken = set()  # type: set
    tasks = [(source, Path(args.outdir) / (naming.unique(_clean(name), taken) + ".glb"))
             for source, name in zip(args.inputs, naming.input_names(args.inputs))]
    failures = run_batch(tasks, _retarget_task, _batch_line, args.jobs, shared=(target, target_map, mesh, args))
    return 1 if failures else 0


def _retarget_task(shared, task) -> str:
    """One input of a batch (in a worker process when there are several jobs): its report."""
    source, output = task
    target, target_map, mesh, args = shared
    return retarget_one(source, output, target, target_map, mesh, args)


def _batch_line(task, report: str) -> str:
    lines = report.splitlines()
    return "{}, {} -> {}".format(lines[0], lines[-1].strip(), task[1])


def _clean(name: str) -> str:
    """An input's name (naming.input_names) as an output name in a batch: only [A-Za-z0-9_-] (never a path)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_") or "clip"


def retarget_one(source: str, output: Path, target: targets.Target, target_map: HumanoidMap,
                 mesh: feet.BindMesh, args: argparse.Namespace, progress: Optional[Progress] = None) -> str:
    """One input onto the target (`mesh`: its vertices at bind), written to `output`; returns the
    printed report. `progress`, when given, is told each stage."""
    with _cycle_collector_paused():
        return _retarget_one(source, output, target, target_map, mesh, args, progress)


@contextlib.contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for one retarget: the run makes hundreds of thousands of lists
    and tuples that never form cycles, and the collector's passes over them were a tenth of its time. What
    cycles the run leaves are collected once the collector is back on (the next clip of a batch)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _retarget_one(source: str, output: Path, target: targets.Target, target_map: HumanoidMap,
                  mesh: feet.BindMesh, args: argparse.Namespace, progress: Optional[Progress] = None) -> str:
    step = progress.step if progress is not None else (lambda stage: None)
    step("reading")
    motion = formats.read_file(source, fps=args.fps)
    step("retargeting {} frames".format(motion.frame_count))
    retargeted, info = feet.retarget_onto(
        motion, target.skeleton, bind_mesh=mesh, in_place=args.in_place, root_motion=args.root_motion,
        foot_lock=args.foot_lock, target_map=target_map, target_name=args.target, source_name=source)
    step("writing")
    retarget_output.write(retargeted, info, target, output)
    step("measuring the written file")
    report = retarget_output.report_from_output(output, motion, retargeted, info, target)
    if args.report:
        text = json.dumps(report.to_json(), indent=2) + "\n"
        write_bytes_atomic(args.report, text.encode("utf-8"))
    problems = report_warnings(report)
    if problems:
        LOG.warning("%s: %s", output.name, "; ".join(problems))
    return format_report(output.stem, report)
