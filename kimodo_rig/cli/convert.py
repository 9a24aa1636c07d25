"""`kimodo-rig convert INPUT OUTPUT`: any Kimodo format -> any other."""
from __future__ import annotations

import argparse

from .. import formats
from ..formats import glb
from ..formats.options import WriteOptions
from .arguments import positive_float


def add_parser(commands) -> None:
    convert = commands.add_parser("convert", help="any Kimodo format -> any other")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.add_argument("--format", choices=sorted(formats.FORMATS), help="output format (default: by extension)")
    convert.add_argument("--input-format", choices=sorted(formats.FORMATS), help="input format (default: by extension)")
    convert.add_argument("--fps", type=positive_float, help="frame rate where the input does not carry one")
    convert.add_argument("--rest", choices=("seed", "tpose"), default="seed", help="rest of SOMA BVH output")
    convert.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin", help="joint names in .glb output")
    convert.set_defaults(run=run_convert)


def run_convert(args: argparse.Namespace) -> int:
    motion = formats.read_file(args.input, format=args.input_format, fps=args.fps)
    formats.write_file(motion, args.output, format=args.format, options=WriteOptions(names=args.names, rest=args.rest))
    print("{}: {}, {} joints, {} frames -> {}".format(
        args.input, motion.skeleton.label, motion.joint_count, motion.frame_count, args.output))
    return 0
