"""`kimodo-rig glb CLIP...` (and `kimodo_to_glb.py`): Kimodo clip folders -> self-checked .glb files."""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace
TYPE_CHECKING = False  # typing.TYPE_CHECKING; typing itself is not loaded by a glb job (issue 11)
if TYPE_CHECKING:
    import argparse
    from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import naming
from ..files import file_name, write_bytes_atomic
from ..formats import glb, raw
from ..formats.options import WriteOptions
from .arguments import frames_per_second
from .batch import jobs_option, run_batch
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("glb", help=VERBS["glb"])
    add_glb_arguments(parser)


def glb_options() -> Dict[str, Dict[str, Any]]:
    """The options after the clip folders, as argparse's add_argument takes them: one table for argparse
    (add_glb_arguments) and for the reading without it (quick_glb_arguments)."""
    return {
        "-o": dict(dest="output", metavar="FILE", help="output file (one clip only)"),
        "--outdir": dict(metavar="DIR", help="output folder (created if missing)"),
        "--fps": dict(type=frames_per_second, default=30.0, help="frame rate (default 30)"),
        "--names": dict(choices=glb.NAME_STYLES, default="mannequin",
                        help="joint names: mannequin (Unreal names for SMPL-X) or native (default mannequin)"),
        "--jobs": jobs_option(),
    }


def add_glb_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("clips", nargs="+", metavar="CLIP", help="clip folder(s) written by kimodo.cpp")
    for flag, keywords in glb_options().items():
        parser.add_argument(flag, **keywords)
    parser.set_defaults(run=run_glb, prog=parser.prog)  # messages name the command the user typed


def quick_glb_arguments(arguments: Sequence[str], prog: str) -> Optional[SimpleNamespace]:
    """What add_glb_arguments' parser makes of `arguments`, read without argparse for the plain forms a
    user types: every option spelt in full with its value as the next word, and the clip folders in one
    run. None for anything else (help, an unknown or abbreviated option, `--fps=30`, a word beginning
    with "-" or empty, a value its type or choices refuse, no clip, clips on both sides of an option):
    argparse then reads them as before and says what it says. (argparse and the gettext and locale it
    loads are about a twentieth of a one-clip job.)"""
    options = glb_options()
    values = {keywords.get("dest", flag.lstrip("-")): keywords.get("default") for flag, keywords in options.items()}
    clips: List[str] = []
    words = iter(arguments)
    clips_ended = False
    for word in words:
        if word in options:
            value = next(words, None)
            if not value or value.startswith("-"):
                return None
            keywords = options[word]
            try:
                value = keywords["type"](value) if "type" in keywords else value
            except Exception:  # the type's own refusal: argparse shows it
                return None
            if value not in keywords.get("choices", (value,)):
                return None
            values[keywords.get("dest", word.lstrip("-"))] = value
            clips_ended = bool(clips)
        elif not word or word.startswith("-") or clips_ended:
            return None
        else:
            clips.append(word)
    if not clips:
        return None
    return SimpleNamespace(clips=clips, run=run_glb, prog=prog, **values)


def run_glb(args: argparse.Namespace, default_outdir: Optional[str] = None) -> int:
    """Paths by os.path, not pathlib: a .glb job never loads pathlib (see files.file_name)."""
    if args.output and len(args.clips) > 1:
        print("{}: -o names one file; use --outdir for {} clips".format(args.prog, len(args.clips)), file=sys.stderr)
        return 2
    outdir = args.outdir or os.fspath(default_outdir or os.getcwd())
    if not args.output:
        problem = output_folder_problem(outdir)
        if problem:
            print(problem, file=sys.stderr)
            return 1
    taken = set()  # type: set
    options = WriteOptions(names=args.names)

    def finish(task, converted: Tuple[str, bytes, float, str]) -> str:
        stem, data, worst, description = converted
        target = args.output or os.path.join(outdir, naming.unique(stem, taken) + ".glb")
        write_bytes_atomic(target, data)
        return "{}: {}, worst joint disagreement {:.1e} m".format(file_name(target), description, worst)

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


def output_folder_problem(outdir) -> str:
    """Create `outdir` (and its parents) if it does not exist; the one line to show if it cannot be, or
    is not a folder; "" when it is ready."""
    if os.path.isdir(outdir):
        return ""
    if os.path.exists(outdir):
        return "{}: output folder is not a folder".format(outdir)
    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as error:
        return "{}: cannot create output folder ({})".format(outdir, error.strerror or error)
    return ""
