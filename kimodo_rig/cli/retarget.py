"""`kimodo-rig retarget INPUT --target RIG -o OUT`: motion onto another humanoid rig."""
from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from .. import formats
from ..files import write_bytes_atomic
from ..retarget import character as targets, feet, output as retarget_output
from ..retarget.report import format_report, report_warnings
from .arguments import positive_float

LOG = logging.getLogger("kimodo_rig")


def add_parser(commands) -> None:
    parser = commands.add_parser("retarget", help="motion onto another humanoid rig")
    parser.add_argument("input")
    parser.add_argument("--target", required=True, help=".glb/.gltf, .bvh, or a built-in: mannequin, mixamo")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--report", help="also write the report as JSON here")
    parser.add_argument("--in-place", action="store_true", help="remove horizontal travel")
    parser.add_argument("--root-motion", choices=("hips", "root"), default="hips")
    parser.add_argument("--fps", type=positive_float)
    parser.add_argument("--no-foot-lock", dest="foot_lock", action="store_false",
                        help="keep the feet as the solve leaves them (they still stand on the floor)")
    parser.set_defaults(run=run_retarget)


def run_retarget(args: argparse.Namespace) -> int:
    retarget_output.check_output_path(args.output)
    motion = formats.read_file(args.input, fps=args.fps)
    target = targets.load_target(args.target)
    retargeted, info, treadmill = feet.retarget_onto(
        motion, target, in_place=args.in_place, root_motion=args.root_motion, lock=args.foot_lock,
        target_name=args.target, source_name=args.input)
    retarget_output.write(retargeted, info, target, args.output)
    report = retarget_output.report_from_output(args.output, motion, retargeted, info, target, treadmill=treadmill)
    if args.report:
        text = json.dumps(report.to_json(), indent=2) + "\n"
        write_bytes_atomic(args.report, text.encode("utf-8"))
    print(format_report(Path(args.output).stem, report))
    problems = report_warnings(report)
    if problems:
        LOG.warning("%s: %s", Path(args.output).name, "; ".join(problems))
    return 0
