"""`kimodo-rig constraints check|extract|convert`: Kimodo constraints files and Animotive requests."""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import constraints as constraints_io, formats
from ..constraints import animotive
from ..constraints.adherence import measure, other_motion_warning
from ..constraints.check import check
from ..constraints.convert import to_animotive, to_kimodo
from ..constraints.extract import KINDS, Selection, extract, parse_frames, tail
from ..constraints.fields import FieldError, load_json
from ..constraints.model import SKELETON_OF_JOINT_COUNT, ConstraintSet, Problem, Request, skeleton_label
from ..errors import KimodoError
from ..formats.limits import whole_number
from ..files import write_bytes_atomic
from .arguments import frames_per_second, positive_float
from . import VERBS

LOG = logging.getLogger("kimodo_rig")
DEFAULT_MODEL = "kimodo-soma-rp"


def add_parser(commands) -> None:
    parser = commands.add_parser("constraints", help=VERBS["constraints"])
    verbs = parser.add_subparsers(dest="constraints_command", metavar="VERB")
    verbs.required = True

    checking = verbs.add_parser("check", help="what a constraints file holds, its problems and (--motion) adherence")
    checking.add_argument("file", help="a Kimodo constraints.json or an Animotive request")
    checking.add_argument("--motion", help="a motion to measure against (anything convert reads)")
    checking.add_argument("--json", action="store_true", help="print JSON")
    checking.add_argument("--fps", type=frames_per_second, help="frame rate where the --motion does not carry one")
    checking.set_defaults(run=run_check)

    extracting = verbs.add_parser("extract", help="the constraints that would ask Kimodo for a motion")
    extracting.add_argument("motion", help="the motion to take the constraints from (anything convert reads)")
    extracting.add_argument("-o", "--output", required=True, help="the constraints file to write (.json)")
    for kind in KINDS:
        extracting.add_argument("--" + kind, metavar="F,F,..." if kind != "root2d" else "F,...|all|every:N",
                                help="frames to pin the {} at".format("whole pose" if kind == "fullbody" else
                                                                      "root on the floor" if kind == "root2d" else kind.replace("-", " ")))
    extracting.add_argument("--start", type=int, default=0, help="the motion frame a generation starts at (default 0)")
    extracting.add_argument("--tail", metavar="N", help="the last N frames as fullbody at frames 0..N-1")
    extracting.add_argument("--format", choices=("kimodo", "animotive"), default="kimodo",
                            help="Kimodo's constraints.json (default) or an Animotive request")
    extracting.add_argument("--fps", type=frames_per_second, help="frame rate where the input does not carry one")
    _request_arguments(extracting)
    extracting.set_defaults(run=run_extract)

    converting = verbs.add_parser("convert", help="Kimodo constraints.json <-> Animotive request")
    converting.add_argument("input", help="a Kimodo constraints.json or an Animotive request")
    converting.add_argument("output", help="the file to write (.json)")
    converting.add_argument("--to", required=True, choices=("kimodo", "animotive"), help="the format to write")
    _request_arguments(converting)
    converting.set_defaults(run=run_convert)


def _request_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prompt", action="append", help="Animotive: a text, once per prompt")
    parser.add_argument("--duration", action="append", type=positive_float, help="Animotive: seconds, once per prompt")
    parser.add_argument("--model", help="Animotive: the model (default {})".format(DEFAULT_MODEL))
    parser.add_argument("--seed", type=int, help="Animotive: the random seed")
    parser.add_argument("--steps", type=int, help="Animotive: diffusion steps (default 100)")
    parser.add_argument("--samples", type=int, help="Animotive: number of samples (default 1)")


# ------------------------------------------------------------------------------------------------ check

def _frames_text(frames: Sequence[int]) -> str:
    ordered = sorted(frames)
    parts: List[str] = []
    run_start = previous = ordered[0]
    for frame in ordered[1:] + [None]:  # type: ignore[operator]
        if frame is not None and frame == previous + 1:
            previous = frame
            continue
        parts.append(str(run_start) if run_start == previous else "{}-{}".format(run_start, previous))
        if frame is not None:
            run_start = previous = frame
    return ", ".join(parts)


def _cm(value: Optional[float]) -> str:
    return "-" if value is None else "{:.1f}".format(value)


def run_check(args: argparse.Namespace) -> int:
    found = constraints_io.read(args.file)
    motion = formats.read_file(args.motion, fps=args.fps) if args.motion else None
    problems = check(found, motion)
    failed = any(p.severity == "error" for p in problems)
    adherence = []
    if motion is not None and not failed:
        adherence = measure(found, motion)
        warning = other_motion_warning(adherence, motion, args.motion)  # type: ignore[arg-type]
        if warning:
            LOG.warning(warning)
    if args.json:
        names = [SKELETON_OF_JOINT_COUNT[c] for c in found.joint_counts()]
        print(json.dumps({"format": found.format, "skeleton": "+".join(names) or None,
                          "entries": [a.to_json() for a in adherence] if motion is not None and not failed else
                          [{"index": e.index, "type": e.name, "frames": list(e.frames)} for e in found.entries],
                          "problems": [p.to_json() for p in problems]}))
        return 1 if failed else 0
    print(_summary(found))
    if adherence:
        print("adherence of {} ({} frames):".format(args.motion, motion.frame_count))  # type: ignore[union-attr]
        print("  entry  type          frames  position cm mean / max  root cm  heading deg  worst frame")
        for a in adherence:
            print("  {:<5}  {:<12}  {:>6}  {:>11} / {:<8}  {:>7}  {:>11}  {}".format(
                a.index, a.type, len(a.frames), _cm(a.position_error_cm_mean), _cm(a.position_error_cm_max),
                _cm(a.root_error_cm_mean), _cm(a.heading_error_deg_mean), a.worst_frame))
    _print_problems(problems)
    return 1 if failed else 0


def _summary(found: ConstraintSet) -> str:
    kind = "Kimodo constraints.json" if found.format == "kimodo" else "Animotive Kimodo request"
    unreadable = len({p.entry for p in found.problems if p.entry is not None})
    count = len(found.entries) + unreadable
    lines = ["{}: {}, {}, {} {}{}".format(found.path, kind, skeleton_label(found.joint_counts()), count,
                                        "entry" if count == 1 else "entries",
                                        " ({} unreadable)".format(unreadable) if unreadable else "")]
    request = found.request
    if request is not None:
        lines.append("  request  {}, {} prompt(s), {:.2f} s ({} frames), {} sample(s), {} steps, {}".format(
            request.model, len(request.texts), sum(request.durations), request.total_frames, request.num_samples,
            request.diffusion_steps, "no seed" if request.seed is None else "seed {}".format(request.seed)))
    by_type: Dict[str, set] = {}
    for entry in found.entries:
        by_type.setdefault(entry.name, set()).update(entry.frames)
    for name, frames in by_type.items():
        lines.append("  {:<12} {:>3} frame{}: {}".format(name, len(frames), "" if len(frames) == 1 else "s", _frames_text(sorted(frames))))
    return "\n".join(lines)


def _print_problems(problems: Sequence[Problem]) -> None:
    for problem in problems:
        print(problem.line(), file=sys.stderr)


def _first_error(problems: Sequence[Problem], *, show_warnings: bool = True) -> None:
    """Stop at the first error; warnings are shown and the work goes on."""
    for problem in problems:
        if problem.severity == "error":
            raise KimodoError(problem.line())
    if show_warnings:
        _print_problems(problems)


# ---------------------------------------------------------------------------------------------- request

def _meta_beside(path: str) -> Tuple[Optional[Path], Dict[str, Any]]:
    """Kimodo's meta.json next to a constraints file (`text`/`duration` or `texts`/`durations`, seed, ...)."""
    meta = Path(path).with_name("meta.json")
    if not meta.is_file():
        return None, {}
    data = load_json(meta)
    if not isinstance(data, dict):
        raise KimodoError("{}: not a Kimodo meta.json (a JSON object)".format(meta))
    found = dict(data)
    if "text" in found and "texts" not in found:
        found["texts"] = [found["text"]]
    if "duration" in found and "durations" not in found:
        found["durations"] = [found["duration"]]
    return meta, found


def _request(args: argparse.Namespace, meta_path: Optional[Path], meta: Dict[str, Any], prompt: str = "",
             duration: Optional[float] = None) -> Request:
    """From --prompt/--duration and the other options, else a meta.json, else the motion's own prompt and
    length; checked as a request's fields are."""
    if args.prompt or args.duration:
        if len(args.prompt or ()) != len(args.duration or ()):
            raise KimodoError("{}: {} --prompt but {} --duration: give one --duration per --prompt".format(
                args.output, len(args.prompt or ()), len(args.duration or ())))
        texts, durations, source = args.prompt, args.duration, args.output
    elif meta:
        texts, durations, source = meta.get("texts"), meta.get("durations"), str(meta_path)
    else:
        texts, durations, source = [prompt] if prompt else None, [duration] if duration else None, args.output
    if not texts or not durations:
        raise KimodoError("{}: an Animotive request needs --prompt TEXT and --duration SECONDS".format(args.output))
    fields = {"texts": texts, "durations": durations,
              "num_samples": args.samples if args.samples is not None else meta.get("num_samples", 1),
              "diffusion_steps": args.steps if args.steps is not None else meta.get("diffusion_steps", 100),
              "seed": args.seed if args.seed is not None else meta.get("seed")}
    try:
        return animotive.parse_request({"model": args.model or DEFAULT_MODEL, "meta": fields})
    except FieldError as error:
        raise KimodoError("{}: {}".format(source, error)) from error


def _write(result: ConstraintSet, output: str, *, show_warnings: bool = True) -> None:
    """Check what is about to be written (a frame beyond the request's duration, ...), named as the output."""
    _first_error(check(dataclasses.replace(result, path=output)), show_warnings=show_warnings)
    write_bytes_atomic(output, constraints_io.encode(result))


# ------------------------------------------------------------------------------------------- extract, convert

def run_extract(args: argparse.Namespace) -> int:
    motion = formats.read_file(args.motion, fps=args.fps)
    if args.tail is not None:
        if any(getattr(args, kind.replace("-", "_")) for kind in KINDS):
            raise KimodoError("{}: --tail writes fullbody frames alone; leave out the other frame options".format(args.motion))
        result = tail(motion, whole_number(args.tail, "--tail", "a number of frames"), args.motion)
    else:
        frames = {kind: parse_frames(getattr(args, kind.replace("-", "_")), "--" + kind, args.start, motion.frame_count, motion.fps)
                  for kind in KINDS if getattr(args, kind.replace("-", "_"))}
        result = extract(motion, Selection(frames, args.start), args.motion)
    if args.format == "animotive":
        # The request lasts as long as the rest of the motion; after --tail the next segment's length is the user's.
        length = None if args.tail is not None else (motion.frame_count - args.start) / motion.fps
        result = to_animotive(result, _request(args, None, {}, motion.prompt, length))
    _write(result, args.output)
    counted: Dict[str, int] = {}
    for entry in result.entries:
        counted[entry.name] = counted.get(entry.name, 0) + len(entry.frames)
    kinds = ", ".join("{} {}".format(n, name) for name, n in counted.items())
    print("{} -> {}: {} ({})".format(args.motion, args.output, kinds, "Kimodo constraints.json" if args.format == "kimodo" else "Animotive request"))
    return 0


def run_convert(args: argparse.Namespace) -> int:
    found = constraints_io.read(args.input)
    _first_error(check(found))
    if args.to == "animotive":
        if found.format == animotive.FORMAT:
            result = found
        else:
            result = to_animotive(found, _request(args, *_meta_beside(args.input)))
    else:
        result = to_kimodo(found) if found.format == animotive.FORMAT else found
    _write(result, args.output, show_warnings=False)  # the input's warnings were shown
    print("{} -> {}: {} {} ({})".format(args.input, args.output, len(result.entries),
                                        "entry" if len(result.entries) == 1 else "entries", result.format))
    return 0
