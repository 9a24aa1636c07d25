"""`kimodo-rig inspect FILE`: what a motion file holds, and its health."""
from __future__ import annotations

import argparse
import json

from .. import formats
from ..ops.summary import summarize
from .arguments import frames_per_second
from . import VERBS


def add_parser(commands) -> None:
    inspect = commands.add_parser("inspect", help=VERBS["inspect"])
    inspect.add_argument("input", help="a motion file or clip folder (anything convert reads), or any rigged .glb/.gltf")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument("--fps", type=frames_per_second, help="frame rate where the input does not carry one")
    inspect.set_defaults(run=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    summary = summarize(formats.read_file(args.input, fps=args.fps))
    print(json.dumps(summary.as_json()) if args.json else summary.text(args.input))
    return 0
