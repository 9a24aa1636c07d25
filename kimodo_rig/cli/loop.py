"""`kimodo-rig loop IN OUT [--min-length S] [--in-place]`: a seamless loop cut where two poses match."""
from __future__ import annotations

import argparse
import math

from .. import formats
from ..ops import timeline
from .arguments import add_output_arguments, non_negative_int, positive_float, write_output
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("loop", help=VERBS["loop"])
    parser.add_argument("input", help="anything `convert` reads")
    parser.add_argument("output", help="any format `convert` writes")
    parser.add_argument("--min-length", type=positive_float, default=timeline.DEFAULT_LOOP_SECONDS, metavar="S",
                        help="shortest loop in seconds (default {:g})".format(timeline.DEFAULT_LOOP_SECONDS))
    parser.add_argument("--blend", type=non_negative_int, metavar="N",
                        help="frames cross-faded at the seam (default: {:.2g} s, {} frames at 30 fps)".format(
                            timeline.DEFAULT_BLEND_S, timeline.default_blend(30.0)))
    parser.add_argument("--in-place", action="store_true", help="take the travel of a cycle out")
    add_output_arguments(parser)
    parser.set_defaults(run=run_loop)


def run_loop(args: argparse.Namespace) -> int:
    motion = formats.read_file(args.input, fps=args.fps)
    loop = timeline.find_loop(motion, min_length_s=args.min_length, blend=args.blend, in_place=args.in_place,
                              source=args.input)
    write_output(loop.motion, args, [args.input])
    travel = math.hypot(loop.cycle.move[0], loop.cycle.move[2])
    print("{}: frames {}..{} of {} ({} frames, {:.2f} s), seam pose error {:.3f} m, velocity error {:.2f} m/s".format(
        args.output, loop.start, loop.end, args.input, loop.motion.frame_count, loop.motion.frame_count / motion.fps,
        loop.pose_error_m, loop.velocity_error_m_s))
    if args.in_place:
        print("  in place: the {:.2f} m and {:.1f} deg a cycle travelled are taken out".format(
            travel, math.degrees(loop.cycle.turn)))
    else:
        print("  root motion: each cycle travels {:.2f} m and turns {:.1f} deg".format(
            travel, math.degrees(loop.cycle.turn)))
    return 0
