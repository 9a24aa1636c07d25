"""`kimodo-rig glb CLIP...` (and `kimodo_to_glb.py`): Kimodo clip folders -> self-checked .glb files."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    from typing import Optional, Tuple

from .. import naming
from ..files import write_bytes_atomic
from ..formats import glb, raw
from ..formats.options import WriteOptions
from .arguments import frames_per_second
from .batch import add_jobs_argument, run_batch
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("glb", help=VERBS["glb"])
    add_glb_arguments(parser)


def add_glb_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("clips", nargs="+", metavar="CLIP", help="clip folder(s) written by kimodo.cpp")
    parser.add_argument("-o", dest="output", metavar="FILE", help="output file (one clip only)")
    parser.add_argument("--outdir", metavar="DIR", help="output folder (created if missing)")
    parser.add_argument("--fps", type=frames_per_second, default=30.0, help="frame rate (default 30)")
    parser.add_argument("--names", choices=glb.NAME_STYLES, default="mannequin",
                        help="joint names: mannequin (Unreal names for SMPL-X) or native (default mannequin)")
    add_jobs_argument(parser)
    parser.set_defaults(run=run_glb, prog=parser.prog)  # messages name the command the user typed


def run_glb(args: argparse.Namespace, default_outdir: Optional[Path] = None) -> int:
    if args.output and len(args.clips) > 1:
        print("{}: -o names one file; use --outdir for {} clips".format(args.prog, len(args.clips)), file=sys.stderr)
        return 2
    outdir = Path(args.outdir) if args.outdir else (default_outdir or Path.cwd())
    if not args.output:
        problem = output_folder_problem(outdir)
        if problem:
            print(problem, file=sys.stderr)
            return 1
    taken = set()  # type: set
    options = WriteOptions(names=args.names)

    def finish(task, converted: Tuple[str, bytes, float, str]) -> str:
        stem, data, worst, description = converted
        target = Path(args.output) if args.output else outdir / (naming.unique(stem, taken) + ".glb")
        write_bytes_atomic(target, data)
        return "{}: {}, worst joint disagreement {:.1e} m".format(target.name, description, worst)

    tasks = [(clip, args.fps, options, args.output) for clip in args.clips]
    failures = run_batch(tasks, convert_clip, finish, args.jobs)
    return 1 if failures else 0


def convert_clip(task: Tuple[str, float, WriteOptions, Optional[str]]) -> Tuple[str, bytes, float, str]:
    """One clip folder -> (output stem, self-checked GLB bytes, worst disagreement, what it holds). Runs in
    a worker process; the process that started the batch names and writes the file, in input order, so
    names that two clips share get `_2`, `_3` exactly as in one process. (A self-check failure names the
    stem before that suffix.)"""
    clip, fps, options, output = task
    motion = raw.read(clip, fps=fps)
    stem = naming.clip_stem(motion.prompt, motion.name, motion.frame_count)
    data, worst = glb.checked_bytes(motion, output or stem + ".glb", options)
    return stem, data, worst, "{}, {} joints, {} frames".format(motion.skeleton.label, motion.joint_count, motion.frame_count)


def output_folder_problem(outdir: Path) -> str:
    """Create `outdir` (and its parents) if it does not exist; the one line to show if it cannot be, or
    is not a folder; "" when it is ready."""
    if outdir.is_dir():
        return ""
    if outdir.exists():
        return "{}: output folder is not a folder".format(outdir)
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        return "{}: cannot create output folder ({})".format(outdir, error.strerror or error)
    return ""
