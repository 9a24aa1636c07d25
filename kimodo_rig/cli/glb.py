"""`kimodo-rig glb CLIP...` (and `kimodo_to_glb.py`): Kimodo clip folders -> self-checked .glb files."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from .. import naming
from ..errors import KimodoError
from ..formats import glb, raw
from ..formats.options import WriteOptions
from .arguments import positive_float


def add_parser(commands) -> None:
    parser = commands.add_parser("glb", help="Kimodo clip folders -> self-checked .glb files")
    add_glb_arguments(parser)


def add_glb_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("clips", nargs="+", metavar="CLIP", help="clip folder(s) written by kimodo.cpp")
    parser.add_argument("-o", dest="output", metavar="FILE", help="output file (one clip only)")
    parser.add_argument("--outdir", metavar="DIR", help="output folder")
    parser.add_argument("--fps", type=positive_float, default=30.0, help="frame rate (default 30)")
    parser.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin",
                        help="joint names: mannequin (Unreal names for SMPL-X) or native (default mannequin)")
    parser.set_defaults(run=run_glb, prog=parser.prog)  # messages name the command the user typed


def run_glb(args: argparse.Namespace, default_outdir: Optional[Path] = None) -> int:
    if args.output and len(args.clips) > 1:
        print("{}: -o names one file; use --outdir for {} clips".format(args.prog, len(args.clips)), file=sys.stderr)
        return 2
    outdir = Path(args.outdir) if args.outdir else (default_outdir or Path.cwd())
    if not args.output and not outdir.is_dir():
        problem = "is not a folder" if outdir.exists() else "does not exist"
        print("{}: output folder {}".format(outdir, problem), file=sys.stderr)
        return 1
    taken = set()  # type: set
    failures = 0
    for clip in args.clips:
        try:
            motion = raw.read(clip, fps=args.fps)
            if args.output:
                target = Path(args.output)
            else:
                stem = naming.unique(naming.clip_stem(motion.prompt, motion.name, motion.frame_count), taken)
                target = outdir / (stem + ".glb")
            worst = glb.write(motion, target, WriteOptions(names=args.names))
        except KimodoError as error:
            print(str(error), file=sys.stderr)
            failures += 1
            continue
        print("{}: {}, {} joints, {} frames, worst joint disagreement {:.1e} m".format(
            target.name, motion.skeleton.label, motion.joint_count, motion.frame_count, worst))
    return 1 if failures else 0
