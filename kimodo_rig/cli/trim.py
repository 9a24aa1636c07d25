"""`kimodo-rig trim IN OUT --start F [--end F]`: a range of frames (end exclusive)."""
from __future__ import annotations

import argparse

from .. import formats
from ..ops import timeline
from .arguments import add_output_arguments, non_negative_int, write_output
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("trim", help=VERBS["trim"])
    parser.add_argument("input", help="anything `convert` reads")
    parser.add_argument("output", help="any format `convert` writes")
    parser.add_argument("--start", type=non_negative_int, required=True, metavar="F", help="first frame kept")
    parser.add_argument("--end", type=non_negative_int, metavar="F", help="first frame dropped (default: the end)")
    add_output_arguments(parser)
    parser.set_defaults(run=run_trim)


def run_trim(args: argparse.Namespace) -> int:
    motion = formats.read_file(args.input, fps=args.fps)
    trimmed = timeline.trim(motion, args.start, args.end, source=args.input)
    write_output(trimmed, args, [args.input])
    print("{}: frames {}..{} of {} ({} frames, {:.2f} s)".format(
        args.output, args.start, args.start + trimmed.frame_count, args.input, trimmed.frame_count, trimmed.duration))
    return 0
