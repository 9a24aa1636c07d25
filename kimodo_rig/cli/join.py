"""`kimodo-rig join A B [C ...] -o OUT [--blend N]`: clips one after another, each placed where the one
before ends and cross-faded with it."""
from __future__ import annotations

import argparse
import math

from .. import formats
from ..ops import timeline
from .arguments import add_output_arguments, non_negative_int, write_output
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("join", help=VERBS["join"])
    parser.add_argument("first", metavar="A", help="anything `convert` reads")
    parser.add_argument("following", nargs="+", metavar="B", help="the clips that follow, in order")
    parser.add_argument("-o", "--output", required=True, help="any format `convert` writes")
    parser.add_argument("--blend", type=non_negative_int, metavar="N",
                        help="frames cross-faded at each seam (default: {:.2g} s, {} frames at 30 fps)".format(
                            timeline.DEFAULT_BLEND_S, timeline.default_blend(30.0)))
    add_output_arguments(parser)
    parser.set_defaults(run=run_join)


def run_join(args: argparse.Namespace) -> int:
    sources = [args.first] + list(args.following)
    motions = [formats.read_file(path, fps=args.fps) for path in sources]
    blend = args.blend if args.blend is not None else timeline.default_blend(motions[0].fps)
    joined = timeline.join(motions, blend=blend, sources=sources)
    motion = joined.motion
    write_output(motion, args, sources)
    print("{}: {} clips, {}, {} joints, {} frames ({:.2f} s at {:g} fps), {}-frame blends".format(
        args.output, len(sources), motion.skeleton.label, motion.joint_count, motion.frame_count, motion.duration,
        motion.fps, blend))
    for source, clip, placement, seam in zip(sources[1:], motions[1:], joined.placements[1:], joined.seams):
        start = clip.root_position(0)
        placed = placement.point(start)
        print("  {} from frame {}: turned {:.1f} deg, its start moved {:.2f} m".format(
            source, seam, math.degrees(placement.turn), math.hypot(placed[0] - start[0], placed[2] - start[2])))
    return 0
