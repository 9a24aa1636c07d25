"""`kimodo-rig inspect FILE`: what a motion file holds, and its health."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from .. import formats
from ..ops.summary import summarize, summarize_gltf_rig
from .arguments import frames_per_second
from . import VERBS


def add_parser(commands) -> None:
    inspect = commands.add_parser("inspect", help=VERBS["inspect"])
    inspect.add_argument("input", help="a motion file or clip folder (anything convert reads), or any rigged .glb/.gltf")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument("--fps", type=frames_per_second, help="frame rate where the input does not carry one")
    inspect.set_defaults(run=run_inspect)


GLTF_SUFFIXES = (".glb", ".gltf", ".vrm")


def _holds_kimodo_skeleton(path: str) -> bool:
    """Whether the glTF's skin is one of Kimodo's skeletons (what the .glb reader reads as a motion)."""
    from ..formats import glb, gltf_document as gd

    gltf = gd.read_file(path).gltf
    skins = gltf.get("skins") or []
    if not skins:
        return True  # the motion reader names what is missing
    nodes = gltf.get("nodes", [])
    names = [nodes[n].get("name", "") for n in skins[0].get("joints", []) if isinstance(n, int) and 0 <= n < len(nodes)]
    return glb.is_kimodo_skeleton(names)


def run_inspect(args: argparse.Namespace) -> int:
    if Path(args.input).suffix.lower() in GLTF_SUFFIXES and not _holds_kimodo_skeleton(args.input):
        summary = summarize_gltf_rig(args.input, fps=args.fps)
    else:
        summary = summarize(formats.read_file(args.input, fps=args.fps))
    print(json.dumps(summary.as_json()) if args.json else summary.text(args.input))
    return 0
