"""`kimodo-rig preview INPUT [--target RIG [--map BONES.json]] [--constraints FILE.json] -o OUT.svg|OUT.html`."""
from __future__ import annotations

import argparse
from pathlib import Path

from .. import formats
from ..errors import KimodoError
from ..files import write_bytes_atomic
from .arguments import frames_per_second
from . import VERBS

OUTPUTS = (".svg", ".html")


def add_parser(commands) -> None:
    parser = commands.add_parser("preview", help=VERBS["preview"])
    parser.add_argument("input", help="a motion file or clip folder (anything convert reads)")
    parser.add_argument("-o", "--output", required=True, help="OUT.svg (contact sheet) or OUT.html (player)")
    parser.add_argument("--target", help="also show the motion retargeted onto this rig "
                                         "(.glb/.gltf/.vrm/.fbx, .bvh, mannequin, mixamo)")
    parser.add_argument("--map", metavar="BONES.json",
                        help="with --target: which bone plays which part (as `kimodo-rig map RIG --json` prints)")
    parser.add_argument("--constraints", help="Kimodo constraints.json to mark on the sheet")
    parser.add_argument("--in-place", action="store_true", help="with --target: remove horizontal travel")
    parser.add_argument("--fps", type=frames_per_second, help="frame rate where the input does not carry one")
    parser.set_defaults(run=run_preview)


def run_preview(args: argparse.Namespace) -> int:
    from ..preview import html, svg
    from ..preview.scene import build_scene

    extension = Path(args.output).suffix.lower()
    if extension not in OUTPUTS:
        raise KimodoError("{}: preview writes .svg or .html, not {!r}".format(args.output, extension or "(none)"))
    if args.map and not args.target:
        raise KimodoError("{}: --map names the bones of a --target rig; give one".format(args.map))
    motion = formats.read_file(args.input, fps=args.fps)
    scene = build_scene(motion, args.input, target=args.target, constraints=args.constraints, in_place=args.in_place,
                        map_file=args.map, output=args.output)
    data = svg.render(scene) if extension == ".svg" else html.render(scene)
    write_bytes_atomic(args.output, data)
    print("{}: {}, {} joints, {} frames -> {}".format(
        args.input, motion.skeleton.label, motion.joint_count, motion.frame_count, args.output))
    return 0
