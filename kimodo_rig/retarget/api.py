"""The retarget as front ends other than the command line call it: one options object in, the retargeted
Motion and what the retarget decided out, a bone map a user can edit, and the report measured from poses
the front end samples itself (the Blender add-on reads them back from Blender's evaluated bones).

`retarget_motion` is the only door the Blender add-on uses into the solve, so the add-on follows the core
as it learns: options the core does not offer yet are passed on once it does (`foot_lock`: the solve grounds
every frame by its lowest toe; when it takes a `foot_lock` keyword, the option reaches it).

The bone map is the offline retarget's own: the table `kimodo-rig map RIG --json` prints and
`kimodo-rig retarget --map BONES.json` reads (canonical part -> bone name; a part left out is unmapped), as
JSON text in and out, so a map fixed in Blender is a --map file and the other way round.
"""
from __future__ import annotations

import inspect
from array import array
from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Sequence, Tuple

from ..model import Motion, Skeleton
from ..rotations import Vec3
from .character import user_map_from_json, user_map_json
from .mapping import HumanoidMap, in_printed_order, known_parts, map_from_parts, map_humanoid, parts_by_name
from . import output
from .report import Report
from .solve import ROOT_MOTION_MODES, RetargetInfo, retarget

PARTS = known_parts()  # every canonical part a map may name, in the order maps are printed


@dataclass(frozen=True)
class RetargetOptions:
    in_place: bool = False
    root_motion: str = "hips"  # or "root": travel and turning on the bone above the hips
    foot_lock: bool = True
    bone_map: Tuple[Tuple[str, str], ...] = ()  # (part, bone name): the whole map, as --map reads it; () detects

    def __post_init__(self) -> None:
        if self.root_motion not in ROOT_MOTION_MODES:
            raise ValueError("root_motion must be one of " + ", ".join(ROOT_MOTION_MODES))


def detect_bone_map(skeleton: Skeleton, source: str = "") -> Dict[str, str]:
    """Canonical part -> bone name as the retarget finds it, the table `kimodo-rig map RIG --json` prints
    (KimodoError when no humanoid is found)."""
    return parts_by_name(map_humanoid(skeleton, source))


def humanoid_map(skeleton: Skeleton, bone_map: Mapping[str, str], source: str = "") -> HumanoidMap:
    """The map `bone_map` states (canonical part -> bone name of `skeleton`), read as `retarget --map`
    reads a file: KimodoError naming `source` for an unknown part or bone, or no two arms and two legs."""
    return map_from_parts(skeleton, dict(bone_map), source or skeleton.name)


def bone_map_from_json(text: str, source: str) -> Dict[str, str]:
    """A bone map from its JSON text (a --map file's contents); KimodoError naming `source` when it is not
    an object of part -> bone name."""
    return user_map_from_json(text, source)


def bone_map_json(bone_map: Mapping[str, str]) -> str:
    """The JSON text of a bone map, parts in the printed order, as `kimodo-rig map RIG --json` prints it."""
    return user_map_json(in_printed_order(dict(bone_map)))


def retarget_motion(motion: Motion, target: Skeleton, options: RetargetOptions = RetargetOptions(), *,
                    target_name: str = "", source_name: str = "") -> Tuple[Motion, RetargetInfo]:
    """`motion` on the humanoid `target` as `kimodo-rig retarget` does it, with `options`."""
    keywords = {}
    if "foot_lock" in inspect.signature(retarget).parameters:
        keywords["foot_lock"] = options.foot_lock
    target_map: Optional[HumanoidMap] = None
    if options.bone_map:
        target_map = humanoid_map(target, dict(options.bone_map), target_name or target.name)
    return retarget(motion, target, in_place=options.in_place, root_motion=options.root_motion,
                    target_map=target_map, target_name=target_name, source_name=source_name, **keywords)


def own_skeleton_motion(motion: Motion, options: RetargetOptions = RetargetOptions()) -> Tuple[Motion, RetargetInfo]:
    """`motion` unchanged on its own skeleton (a box rig of it, as step 1's .glb) but for the options:
    in place, the root's horizontal path minus what the retarget's in-place removes; root motion on a
    root bone, the retarget's root track (`info.root_track`, `info.root_bone`). Only the travel is taken
    from the retarget, as a difference, so the pose is Kimodo's own to the last bit (retargeting a G1
    clip onto G1 would drop its hinges that no humanoid part names)."""
    own = RetargetOptions(options.in_place, options.root_motion, options.foot_lock)
    moved, info = retarget_motion(motion, motion.skeleton, own)
    roots = array(motion.root_positions.typecode, motion.root_positions)
    if options.in_place:
        travelling, _ = retarget_motion(motion, motion.skeleton, RetargetOptions(foot_lock=options.foot_lock))
        for frame in range(motion.frame_count):
            for axis in (0, 2):
                at = frame * 3 + axis
                roots[at] += moved.root_positions[at] - travelling.root_positions[at]
    result = Motion(motion.skeleton, motion.local_rotations, roots, motion.fps, motion.foot_contacts, motion.name, motion.prompt)
    return result, info


def report_from_positions(source: Motion, info: RetargetInfo,
                          positions: Sequence[Mapping[str, Vec3]]) -> Report:
    """The report measured from per-frame world positions (glTF frame, metres) by joint name of the
    retargeted skeleton, as the front end sampled them."""
    names = info.target_map.skeleton.joint_names
    return output.report_from_positions(source, info, [[frame.get(name) for name in names] for frame in positions])
