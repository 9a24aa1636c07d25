"""`kimodo-rig map RIG [--json]`: which bone of a rig plays which part, as `retarget --map` reads it, and
the check's verdict on it: `check: ok`, or the one line naming the part that fails (on stderr, exit 1;
with --json the map is still printed, its "check" the failure line, for the user to edit)."""
from __future__ import annotations

import argparse
import sys

from ..retarget import character
from ..retarget.mapping import CHECK_FIELD, facing_label, parts_by_name
from ..retarget.mapping_check import map_problem_line
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("map", help=VERBS["map"])
    parser.add_argument("rig", help=".glb/.gltf/.vrm/.fbx, .bvh, or a built-in: mannequin, mixamo")
    parser.add_argument("--json", action="store_true", help="print the map as JSON, the form --map reads "
                        "(with the check's verdict under \"check\")")
    parser.set_defaults(run=run_map)


def run_map(args: argparse.Namespace) -> int:
    target = character.load_target(args.rig)
    # Unchecked, so a map the check refutes is still printed for the user to edit and pass with --map.
    hmap = character.map_target(target, checked=False)
    problem = map_problem_line(hmap, "{}: {}".format(args.rig, target.table_label) if target.table_label else args.rig)
    parts = parts_by_name(hmap)
    if args.json:
        # The map even when the check refutes it: the form --map reads, for the user to edit.
        print(character.user_map_json(dict(parts, **{CHECK_FIELD: problem or "ok"})))
    elif not problem:
        origin = target.table_label or "bone names"
        print("{}: {} parts from {}, facing {}".format(args.rig, len(parts), origin, facing_label(hmap.forward)))
        width = max(len(part) for part in parts)
        for part, bone in parts.items():
            print("  {}  {}".format(part.ljust(width), bone))
        print("check: ok")
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0
