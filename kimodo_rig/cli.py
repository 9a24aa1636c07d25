"""The desktop command line: `kimodo-rig glb|convert|inspect|retarget`. The only place that prints."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from . import __version__, formats, naming
from .errors import KimodoError
from .formats import glb, limits, raw
from .formats.options import WriteOptions
from .ops.summary import summarize


def _frames_per_second(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("expected a number, got {!r}".format(text))
    if not limits.MIN_FPS <= value <= limits.MAX_FPS:  # what every reader accepts from a file
        raise argparse.ArgumentTypeError("must be {:g} to {:g} frames per second".format(limits.MIN_FPS, limits.MAX_FPS))
    return value


def build_parser(prog: str = "kimodo-rig") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Kimodo motion onto your characters.")
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    glb_parser = commands.add_parser("glb", help="Kimodo clip folders -> self-checked .glb files")
    add_glb_arguments(glb_parser)

    convert = commands.add_parser("convert", help="any Kimodo format -> any other")
    convert.add_argument("input")
    convert.add_argument("output")
    convert.add_argument("--format", choices=sorted(formats.FORMATS), help="output format (default: by extension)")
    convert.add_argument("--input-format", choices=sorted(formats.FORMATS), help="input format (default: by extension)")
    convert.add_argument("--fps", type=_frames_per_second, help="frame rate where the input does not carry one")
    convert.add_argument("--rest", choices=("seed", "tpose"), default="seed", help="rest of SOMA BVH output")
    convert.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin", help="joint names in .glb output")
    convert.set_defaults(run=run_convert)

    inspect = commands.add_parser("inspect", help="what a motion file holds, and its health")
    inspect.add_argument("input")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument("--fps", type=_frames_per_second)
    inspect.set_defaults(run=run_inspect)

    retarget = commands.add_parser("retarget", help="motion onto another humanoid rig")
    retarget.add_argument("input")
    retarget.add_argument("--target", required=True, help=".glb/.gltf, .bvh, or a built-in: mannequin, mixamo")
    retarget.add_argument("-o", "--output", required=True)
    retarget.add_argument("--report", help="also write the report as JSON here")
    retarget.add_argument("--in-place", action="store_true", help="remove horizontal travel")
    retarget.add_argument("--root-motion", choices=("hips", "root"), default="hips")
    retarget.add_argument("--fps", type=_frames_per_second)
    retarget.set_defaults(run=run_retarget)
    return parser


def add_glb_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("clips", nargs="+", metavar="CLIP", help="clip folder(s) written by kimodo.cpp")
    parser.add_argument("-o", dest="output", metavar="FILE", help="output file (one clip only)")
    parser.add_argument("--outdir", metavar="DIR", help="output folder")
    parser.add_argument("--fps", type=_frames_per_second, default=30.0, help="frame rate (default 30)")
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


def run_convert(args: argparse.Namespace) -> int:
    motion = formats.read_file(args.input, format=args.input_format, fps=args.fps)
    formats.write_file(motion, args.output, format=args.format, options=WriteOptions(names=args.names, rest=args.rest))
    print("{}: {}, {} joints, {} frames -> {}".format(
        args.input, motion.skeleton.label, motion.joint_count, motion.frame_count, args.output))
    return 0


def run_inspect(args: argparse.Namespace) -> int:
    summary = summarize(formats.read_file(args.input, fps=args.fps))
    print(json.dumps(summary.as_json()) if args.json else summary.text(args.input))
    return 0


def run_retarget(args: argparse.Namespace) -> int:
    import json

    from . import retarget_output, targets
    from .files import write_bytes_atomic
    from .ops.retarget import retarget
    from .ops.retarget_report import format_report

    retarget_output.check_output_path(args.output)
    motion = formats.read_file(args.input, fps=args.fps)
    target = targets.load_target(args.target)
    retargeted, info = retarget(motion, target.skeleton, in_place=args.in_place, root_motion=args.root_motion,
                                target_name=args.target, source_name=args.input)
    retarget_output.write(retargeted, info, target, args.output)
    report = retarget_output.report_from_output(args.output, motion, retargeted, info)
    if args.report:
        text = json.dumps(report.to_json(), indent=2) + "\n"
        write_bytes_atomic(args.report, text.encode("utf-8"))
    print(format_report(Path(args.output).stem, report))
    return 0


class _StderrWarnings(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        print("warning: " + record.getMessage(), file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None, *, prog: str = "kimodo-rig", default_outdir: Optional[Path] = None) -> int:
    logger = logging.getLogger("kimodo_rig")
    if not logger.handlers:
        logger.addHandler(_StderrWarnings())
        logger.setLevel(logging.WARNING)
    parser = build_parser(prog)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if args.run is run_glb:
            return run_glb(args, default_outdir)
        return args.run(args)
    except KimodoError as error:
        print(str(error), file=sys.stderr)
        return 1


def glb_script_main(argv: Optional[Sequence[str]] = None, default_outdir: Optional[Path] = None) -> int:
    """`python kimodo_to_glb.py CLIP...`: the glb command, writing beside the script by default."""
    parser = argparse.ArgumentParser(prog="kimodo_to_glb.py", description="Kimodo clip folders -> self-checked .glb files")
    add_glb_arguments(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return run_glb(args, default_outdir)
