"""How far apart left and right measure, per rig, as segments (joint to joint) and as reaches (each part's
end from the joint both sides hang from), on the rig's own map and on maps one bone off: the numbers of
docs/map-check.md. Run from the repository root:

    python3 benchmarks/mirror_lengths.py mannequin mixamo tests/data/rigs/cmu/resources_131_01.bvh \\
        tests/data/rigs/quaternius/quaternius_female_dress.glb tests/data/rigs/quaternius/RobotExpressive.glb
"""
from __future__ import annotations

import logging
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kimodo_rig.ops.fk import rest_positions  # noqa: E402
from kimodo_rig.retarget.character import load_target, map_target  # noqa: E402
from kimodo_rig.retarget.mapping import map_from_parts, parts_by_name  # noqa: E402

ARM = ["clavicle", "upperarm", "lowerarm", "hand"]
LEG = ["thigh", "calf", "foot", "toe"]
FIRST = {"upperarm": ("clavicle", "upperarm"), "lowerarm": ("clavicle", "upperarm"), "thigh": ("thigh",), "calf": ("thigh",)}


def _ancestors(parents, joint):
    chain = [joint]
    while parents[chain[-1]] >= 0:
        chain.append(parents[chain[-1]])
    return chain


def differences(hmap):
    """{part: (segments' relative difference, reaches' relative difference)}."""
    positions = rest_positions(hmap.skeleton)
    parents = hmap.skeleton.parents
    result = {}
    for part, firsts in FIRST.items():
        segments = [hmap.segment(part + "_" + side, positions) for side in "lr"]
        if None in segments:
            continue
        lengths = [math.sqrt(sum(c * c for c in v)) for v in segments]
        first = next(p for p in firsts if p + "_l" in hmap.bones and p + "_r" in hmap.bones)
        left = _ancestors(parents, hmap.bones[first + "_l"])
        root = next(j for j in _ancestors(parents, hmap.bones[first + "_r"]) if j in left)
        reaches = []
        for side in "lr":
            ends = hmap.ends[part + "_" + side]
            end = [sum(positions[j][i] for j in ends) / len(ends) for i in range(3)]
            reaches.append(math.dist(end, positions[root]))
        result[part] = (abs(lengths[0] - lengths[1]) / max(lengths), abs(reaches[0] - reaches[1]) / max(reaches))
    return result


def shifted(parts, chain, side, up):
    """`parts` with one side's chain mapped one bone up (each part on the bone above it) or down."""
    result = dict(parts)
    bones = [parts.get(p + "_" + side) for p in chain]
    moved = [bones[i - 1] if i else None for i in range(len(chain))] if up else bones[1:] + [None]
    for part, bone in zip(chain, moved):
        if bone is None:
            result.pop(part + "_" + side, None)
        else:
            result[part + "_" + side] = bone
    return result


def main(rigs):
    logging.disable(logging.WARNING)
    for rig in rigs:
        target = load_target(rig)
        hmap = map_target(target, checked=False)
        own = differences(hmap)
        off = []
        for chain, ups in ((ARM, (True, False)), (LEG, (False,))):
            for up in ups:
                for side in "lr":
                    found = differences(map_from_parts(target.skeleton, shifted(parts_by_name(hmap), chain, side, up), rig, False))
                    off.append((max(v[0] for v in found.values()), max(v[1] for v in found.values())))
        print("{:32s} own map: segments {:5.1f} %  reaches {:5.1f} %   one bone off, least: segments {:5.1f} %  "
              "reaches {:5.1f} %".format(Path(rig).name, 100 * max(v[0] for v in own.values()),
                                         100 * max(v[1] for v in own.values()), 100 * min(o[0] for o in off),
                                         100 * min(o[1] for o in off)))


if __name__ == "__main__":
    main(sys.argv[1:])
