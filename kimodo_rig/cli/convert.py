"""`kimodo-rig convert INPUT OUTPUT` (or `INPUT... --outdir DIR --format F`): any Kimodo format -> any other."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Tuple

from .. import formats, naming
from ..files import refuse_output_over_input
from ..formats import glb
from ..formats.options import WriteOptions
from .arguments import frames_per_second
from .batch import add_jobs_argument, run_batch
from . import VERBS
from .glb import output_folder_problem


def add_parser(commands) -> None:
    convert = commands.add_parser(
        "convert", help=VERBS["convert"],
        usage="%(prog)s INPUT OUTPUT [options]\n       %(prog)s INPUT... --outdir DIR --format FORMAT [options]")
    convert.add_argument("paths", nargs="+", metavar="PATH", help="INPUT OUTPUT, or the inputs with --outdir")
    convert.add_argument("--outdir", metavar="DIR", help="convert every input into this folder (created if missing), "
                         "named after the input, in --format")
    convert.add_argument("--format", choices=sorted(formats.FORMATS), help="output format (default: by extension)")
    convert.add_argument("--input-format", choices=sorted(formats.FORMATS), help="input format (default: by extension)")
    convert.add_argument("--fps", type=frames_per_second, help="frame rate where the input does not carry one")
    convert.add_argument("--rest", choices=("seed", "tpose"), default="seed", help="rest of SOMA BVH output")
    convert.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin", help="joint names in .glb output")
    add_jobs_argument(convert)
    convert.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    options = WriteOptions(names=args.names, rest=args.rest)
    if args.outdir is None:
        if len(args.paths) != 2:
            print("kimodo-rig convert: give INPUT OUTPUT, or several inputs with --outdir DIR --format FORMAT",
                  file=sys.stderr)
            return 2
        pairs = [(args.paths[0], args.paths[1])]
    else:
        if args.format is None:
            print("kimodo-rig convert: --outdir needs --format (the outputs' format)", file=sys.stderr)
            return 2
        outdir = Path(args.outdir)
        problem = output_folder_problem(outdir)
        if problem:
            print(problem, file=sys.stderr)
            return 1
        extensions = formats.FORMATS[args.format].EXTENSIONS
        taken = set()  # type: set
        pairs = [(path, str(outdir / (naming.unique(naming.sanitise_asset_name(name, fallback="motion"), taken)
                                      + (extensions[0] if extensions else ""))))
                 for path, name in zip(args.paths, naming.input_names(args.paths))]
    tasks = [(source, target, args.input_format, args.format, args.fps, options) for source, target in pairs]
    failures = run_batch(tasks, convert_one, lambda task, line: line, args.jobs)
    return 1 if failures else 0


def convert_one(task: Tuple) -> str:
    """Read one input and write its output (in a worker process for a batch); the line to print."""
    source, target, input_format, output_format, fps, options = task
    motion = formats.read_file(source, format=input_format, fps=fps)
    refuse_output_over_input(target, [source])
    formats.write_file(motion, target, format=output_format, options=options)
    return "{}: {}, {} joints, {} frames -> {}".format(
        source, motion.skeleton.label, motion.joint_count, motion.frame_count, target)
