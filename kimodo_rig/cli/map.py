"""`kimodo-rig map RIG [--json]`: which bone of a rig plays which part, as `retarget --map` reads it."""
from __future__ import annotations

import argparse

from ..retarget import character
from ..retarget.mapping import facing_label, parts_by_name
from . import VERBS


def add_parser(commands) -> None:
    parser = commands.add_parser("map", help=VERBS["map"])
    parser.add_argument("rig", help=".glb/.gltf/.vrm/.fbx, .bvh, or a built-in: mannequin, mixamo")
    parser.add_argument("--json", action="store_true", help="print the map as JSON, the form --map reads")
    parser.set_defaults(run=run_map)


def run_map(args: argparse.Namespace) -> int:
    target = character.load_target(args.rig)
    hmap = character.map_target(target)
    parts = parts_by_name(hmap)
    if args.json:
        print(character.user_map_json(parts))
        return 0
    origin = target.table_label or "bone names"
    print("{}: {} parts from {}, facing {}".format(args.rig, len(parts), origin, facing_label(hmap.forward)))
    width = max(len(part) for part in parts)
    for part, bone in parts.items():
        print("  {}  {}".format(part.ljust(width), bone))
    return 0
