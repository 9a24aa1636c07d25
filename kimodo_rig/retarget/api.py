"""The retarget as front ends other than the command line call it: the clip read as the command line reads
it (any format it reads, FBX included), one options object in, the retargeted Motion and what the
retarget decided out, a bone map a user can edit, and the report measured from poses
the front end samples itself (the Blender add-on reads them back from Blender's evaluated bones).

`retarget_motion` is the only door the Blender add-on uses into the retarget, and it is the same retarget
`kimodo-rig retarget` runs (feet.retarget_onto: the solve, then the floor and the foot lock), so Blender
and the command line put the same motion on a character. The add-on hands in the character's mesh at bind
as plain numbers (`bind_mesh`: positions in the glTF frame, weights by bone name) so the soles are the
mesh's, as the command line reads them from the file.

The bone map is the offline retarget's own: the table `kimodo-rig map RIG --json` prints and
`kimodo-rig retarget --map BONES.json` reads (canonical part -> bone name; a part left out is unmapped), as
JSON text in and out, so a map fixed in Blender is a --map file and the other way round.
"""
from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from .. import formats
from ..model import Motion, Skeleton
from ..rotations import Vec3
from . import feet, output
from .character import mesh_feet_forward, user_map_from_json, user_map_json
from .feet import BindMesh
from .mapping import HumanoidMap, in_printed_order, known_parts, map_from_parts, map_humanoid, parts_by_name
from .report import Report
from .solve import ROOT_MOTION_MODES, RetargetInfo, retarget

PARTS = known_parts()  # every canonical part a map may name, in the order maps are printed
CLIP_FOLDER_FILES = (".f32", ".txt")  # what a kimodo.cpp clip folder holds: picking one picks its folder


def read_motion(path, *, fps: Optional[float] = None) -> Motion:
    """The clip at `path` as `kimodo-rig convert` and `retarget` read it: a clip folder, or a file of any
    format the command line reads (.npz, .bvh, .csv, .glb, .fbx); KimodoError naming it when it is not one."""
    return formats.read_file(path, fps=fps)


def motion_file_patterns() -> str:
    """A file browser's filter for the clips read_motion reads ("*.npz;*.bvh;..."): every extension of
    the command line's formats, and the files of a clip folder."""
    extensions = [extension for module in formats.FORMATS.values() for extension in module.EXTENSIONS]
    return ";".join("*" + extension for extension in dict.fromkeys(extensions + list(CLIP_FOLDER_FILES)))


@dataclass(frozen=True)
class RetargetOptions:
    in_place: bool = False
    root_motion: str = "hips"  # or "root": travel and turning on the bone above the hips
    foot_lock: bool = True
    bone_map: Tuple[Tuple[str, str], ...] = ()  # (part, bone name): the whole map, as --map reads it; () detects

    def __post_init__(self) -> None:
        if self.root_motion not in ROOT_MOTION_MODES:
            raise ValueError("root_motion must be one of " + ", ".join(ROOT_MOTION_MODES))


def detect_bone_map(skeleton: Skeleton, source: str = "", bind_mesh: BindMesh = ()) -> Dict[str, str]:
    """Canonical part -> bone name as the retarget finds it, the table `kimodo-rig map RIG --json` prints
    (KimodoError when no humanoid is found, or the map check refutes the map). `bind_mesh` as
    `retarget_motion` takes it: the mesh tells the mapper what the file's mesh tells it (which bones carry
    vertices: a deform bone from its copies, a head that ends the body; the feet's facing), so a character
    in Blender maps as its exported file does."""
    if not bind_mesh:
        return parts_by_name(map_humanoid(skeleton, source))
    joints = {name: j for j, name in enumerate(skeleton.joint_names)}
    skinned = frozenset(joints[name] for _, weights in bind_mesh for name, weight in weights.items()
                        if weight > 0.0 and name in joints)
    return parts_by_name(map_humanoid(skeleton, source, feet_from_mesh=lambda hmap: mesh_feet_forward(skeleton, bind_mesh, hmap),
                                      skinned=skinned))


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
                    target_name: str = "", source_name: str = "", bind_mesh: BindMesh = ()) -> Tuple[Motion, RetargetInfo]:
    """`motion` on the humanoid `target` as `kimodo-rig retarget` does it, with `options`; `bind_mesh`: the
    character's vertices at bind, ((x, y, z) glTF frame, {bone name: weight}) each (none: soles on the joints)."""
    target_map: Optional[HumanoidMap] = None
    if options.bone_map:
        target_map = humanoid_map(target, dict(options.bone_map), target_name or target.name)
    return feet.retarget_onto(motion, target, bind_mesh=bind_mesh, in_place=options.in_place,
                              root_motion=options.root_motion, foot_lock=options.foot_lock, target_map=target_map,
                              target_name=target_name, source_name=source_name)


def own_skeleton_motion(motion: Motion, options: RetargetOptions = RetargetOptions()) -> Tuple[Motion, RetargetInfo]:
    """`motion` unchanged on its own skeleton (a box rig of it, as step 1's .glb) but for the options:
    in place, the root's horizontal path minus what the retarget's in-place removes; root motion on a
    root bone, the retarget's root track (`info.root_track`, `info.root_bone`). Only the travel is taken
    from the retarget, as a difference, so the pose is Kimodo's own to the last bit (retargeting a G1
    clip onto G1 would drop its hinges that no humanoid part names)."""
    # The solve alone: only its travel is used, and the feet pass moves the hips up and down only.
    moved, info = retarget(motion, motion.skeleton, in_place=options.in_place, root_motion=options.root_motion)
    roots = array(motion.root_positions.typecode, motion.root_positions)
    if options.in_place:
        travelling, _ = retarget(motion, motion.skeleton)
        for frame in range(motion.frame_count):
            for axis in (0, 2):
                at = frame * 3 + axis
                roots[at] += moved.root_positions[at] - travelling.root_positions[at]
    result = Motion(motion.skeleton, motion.local_rotations, roots, motion.fps, motion.foot_contacts, motion.name, motion.prompt)
    return result, info


def report_vertices(info: RetargetInfo, bind_mesh: BindMesh) -> Dict[str, List[int]]:
    """Per side ("l", "r"), the indices into `bind_mesh` of the vertices whose deformed positions the front
    end samples every frame for the report's floor figures (empty without a mesh)."""
    return output.report_vertices(info, bind_mesh)


def report_from_positions(source: Motion, info: RetargetInfo, positions: Sequence[Mapping[str, Vec3]],
                          bind_mesh: BindMesh = (),
                          foot_vertices: Optional[Mapping[str, Sequence[Sequence[Vec3]]]] = None) -> Report:
    """The report measured from per-frame world positions (glTF frame, metres) by joint name of the
    retargeted skeleton (tip joints included: an armature's are `armature.tip_points`), as the front end
    sampled them; with `foot_vertices` (per side, per frame, the deformed positions of
    `report_vertices`' vertices, glTF frame) the floor figures are the mesh's."""
    names = info.target_map.skeleton.joint_names
    return output.report_from_positions(source, info, [[frame.get(name) for name in names] for frame in positions],
                                        bind_mesh, dict(foot_vertices) if foot_vertices is not None else None)
