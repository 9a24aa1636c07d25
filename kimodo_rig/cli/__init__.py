"""The desktop command line: `kimodo-rig COMMAND`. The only place that prints.

One module per verb; each has `add_parser(commands)` that registers its sub-command and sets `run`.
A new verb is a new module and one entry in VERBS.
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Optional, Sequence

from .. import __version__
from ..errors import KimodoError
from . import convert, glb, inspect, join, loop, map, preview, retarget, trim

VERBS = (glb, convert, inspect, retarget, map, join, trim, loop, preview)


def build_parser(prog: str = "kimodo-rig") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Kimodo motion onto your characters.")
    parser.add_argument("--version", action="version", version="%(prog)s " + __version__)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    for verb in VERBS:
        verb.add_parser(commands)
    return parser


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
        if args.run is glb.run_glb:
            return glb.run_glb(args, default_outdir)
        return args.run(args)
    except KimodoError as error:
        print(str(error), file=sys.stderr)
        return 1


def glb_script_main(argv: Optional[Sequence[str]] = None, default_outdir: Optional[Path] = None) -> int:
    """`python kimodo_to_glb.py CLIP...`: the glb command, writing beside the script by default."""
    parser = argparse.ArgumentParser(prog="kimodo_to_glb.py", description="Kimodo clip folders -> self-checked .glb files")
    glb.add_glb_arguments(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    return glb.run_glb(args, default_outdir)
