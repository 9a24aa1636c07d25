"""What a preview shows, gathered once for the SVG and the HTML: the motion's joints at every frame, the
retargeted character's (when a target is given), headings, foot contacts, constraint markers, and the
health lines `inspect` or `retarget` print."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from .. import naming, skeletons
from ..formats import gltf_document as gd
from ..model import Motion
from ..ops.derived_channels import detect_foot_contacts, root_headings
from ..ops.fk import world_positions
from ..ops.summary import summarize
from ..rotations import Vec3

# A constraint marker on the floor plan: x, y, z, kind, frame.
Marker = Tuple[float, float, float, str, int]

LOG = logging.getLogger("kimodo_rig")

# Tuning constants.
# Opacity (0-1) at or below which a BLEND material counts as unseen: 2% of the colour over the floor is
# nothing a viewer picks out, and a file that sets its alpha this low means the body to be hidden.
UNSEEN_BLEND_ALPHA = 0.02
GLTF_ALPHA_CUTOFF = 0.5  # glTF's default alphaCutoff for MASK (the specification's value)


@dataclass
class PreviewScene:
    motion: Motion
    title: str
    positions: List[List[Vec3]]
    headings: List[Optional[Tuple[float, float]]]  # forward on the floor, (X, Z), per frame
    contacts: Optional[Sequence[float]]  # 4 a frame: left heel, left toe, right heel, right toe
    contacts_from_file: bool
    report_lines: List[str]
    character: Optional[Motion] = None
    character_label: str = ""
    character_positions: List[List[Vec3]] = field(default_factory=list)
    character_glb: bytes = b""
    character_hips: int = 0  # the character's hips joint (on character.skeleton), which the player follows
    invisible_materials: List[int] = field(default_factory=list)  # glTF indices the player draws opaque
    hidden_root_nodes: List[int] = field(default_factory=list)  # glTF nodes above the hips: no body drawn on them
    markers: List[Marker] = field(default_factory=list)
    constrained_frame_kinds: Set[Tuple[int, str]] = field(default_factory=set)

    @property
    def constrained_frames(self) -> Set[int]:
        return {frame for frame, _ in self.constrained_frame_kinds}


def _headings(motion: Motion, positions: List[List[Vec3]]) -> List[Optional[Tuple[float, float]]]:
    if motion.skeleton.name not in skeletons.BUILTIN:
        return [None] * motion.frame_count
    # Kimodo's heading is (cos a, sin a) of the angle whose forward on the floor is (sin a, cos a) in (X, Z).
    return [(sine, cosine) for cosine, sine in root_headings(motion.skeleton, positions)]


def _contacts(motion: Motion, positions: List[List[Vec3]]) -> Tuple[Optional[Sequence[float]], bool]:
    if motion.foot_contacts is not None:
        return motion.foot_contacts, True
    if motion.skeleton.name in skeletons.BUILTIN:
        return detect_foot_contacts(motion.skeleton, positions, motion.fps), False
    return None, False


def _constraint_markers(path: str, motion: Motion) -> Tuple[List[Marker], Set[Tuple[int, str]]]:
    """Markers from a constraints file (Kimodo's or an Animotive request): root waypoints, and the joints
    an entry pins (the hips of a keyframe pose, the hand or foot of an effector), placed by forward
    kinematics of the entry's own pose, or at the request's target position."""
    from ..constraints import read
    from ..constraints.model import entry_poses

    skeleton = motion.skeleton
    markers: List[Marker] = []
    frames: Set[Tuple[int, str]] = set()
    for entry in read(path).entries:
        frames.update((frame, entry.type) for frame in entry.frames)
        if entry.smooth_root and entry.type == "root2d":
            markers.extend((x, 0.0, z, entry.type, frame) for frame, (x, z) in zip(entry.frames, entry.smooth_root))
        elif entry.positions:
            markers.extend((p[0], p[1], p[2], entry.type, frame) for frame, p in zip(entry.frames, entry.positions))
        elif entry.rotations and len(entry.rotations[0]) == skeleton.joint_count:
            names = ["Hips"] if entry.type == "fullbody" else list(entry.base_names())
            joints = [0 if name == "Hips" else skeleton.index(name) for name in names if name == "Hips" or name in skeleton.joint_names]
            for frame, (_, positions) in zip(entry.frames, entry_poses(entry, skeleton)):
                markers.extend((positions[j][0], positions[j][1], positions[j][2], entry.type, frame) for j in joints)
    return markers, frames


def invisible_materials(gltf: Dict[str, Any]) -> List[int]:
    """The materials a mesh primitive uses whose base colour alpha hides it wholly: MASK below its cutoff,
    BLEND at or below UNSEEN_BLEND_ALPHA (a base colour texture's alpha is not read)."""
    used = {primitive["material"] for mesh in gltf.get("meshes", []) for primitive in mesh.get("primitives", [])
            if isinstance(primitive.get("material"), int)}
    found = []
    for index, material in enumerate(gltf.get("materials", [])):
        if index not in used:
            continue
        alpha = material.get("pbrMetallicRoughness", {}).get("baseColorFactor", [1.0] * 4)[3]
        mode = material.get("alphaMode", "OPAQUE")
        if (mode == "MASK" and alpha < material.get("alphaCutoff", GLTF_ALPHA_CUTOFF)) or (
                mode == "BLEND" and alpha <= UNSEEN_BLEND_ALPHA):
            found.append(index)
    return found


def nodes_above(gltf: Dict[str, Any], name: str) -> List[int]:
    """The nodes of the skin's joints above the node called `name` (a rig's root bone above its hips):
    they carry no part of the body, so a mesh drawn on them alone (a box rig's root box) is a stray."""
    joints = {j for skin in gltf.get("skins", []) for j in skin.get("joints", [])}
    nodes = gltf.get("nodes", [])
    start = next((i for i, node in enumerate(nodes) if node.get("name") == name), -1)
    parents = gd.node_parents(gltf)
    above = []
    node = parents[start] if start >= 0 else -1
    while node >= 0:
        if node in joints:
            above.append(node)
        node = parents[node]
    return above


def _invisible_warning(target_spec: str, gltf: Dict[str, Any], materials: Sequence[int]) -> str:
    if not materials:
        return ""
    names = ", ".join(gltf["materials"][i].get("name") or "#{}".format(i) for i in materials)
    if len(materials) == 1:
        return "{}: material {} has alpha 0 with MASK or BLEND (nothing of it is drawn); the preview draws it opaque".format(
            target_spec, names)
    return "{}: materials {} have alpha 0 with MASK or BLEND (nothing of them is drawn); the preview draws them opaque".format(
        target_spec, names)


def _retarget(scene: PreviewScene, source: str, target_spec: str, in_place: bool, map_file: Optional[str],
              output: str) -> None:
    from ..retarget import character, feet
    from ..retarget import output as retarget_output
    from ..retarget.report import format_report

    motion = scene.motion
    target = character.load_target(target_spec)
    # The bone map as `retarget` makes it: the user's --map, else the file's own (VRM) table, else names.
    user_map = character.read_user_map(map_file) if map_file else None
    target_map = character.map_target(target, user_map, map_file or "")
    retargeted, info = feet.retarget_onto(motion, target.skeleton, bind_mesh=character.bind_mesh(target),
                                          in_place=in_place, target_map=target_map, target_name=target_spec,
                                          source_name=source)
    # Self-checked and measured as `retarget` does its file, from the bytes the page embeds: no temporary
    # file (one in the system's temporary folder failed when that folder was cleaned away mid-run).
    scene.character_glb = retarget_output.checked_glb(retargeted, info, target, output)
    report = retarget_output.report_from_glb(scene.character_glb, output, motion, retargeted, info, target)
    scene.character = retargeted
    scene.character_hips = info.target_map.bones["hips"]
    drawn = gd.parse_glb(scene.character_glb, output).gltf
    scene.hidden_root_nodes = nodes_above(drawn, retargeted.skeleton.joint_names[scene.character_hips])
    scene.invisible_materials = invisible_materials(drawn)
    warning = _invisible_warning(target_spec, drawn, scene.invisible_materials)
    if warning:
        LOG.warning(warning)
    scene.character_label = Path(target_spec).stem or target_spec
    scene.character_positions = world_positions(retargeted)
    scene.report_lines = format_report(scene.title, report).splitlines()
    if warning:
        scene.report_lines.append("warning: " + warning)


def build_scene(motion: Motion, source: str, *, target: Optional[str] = None, constraints: Optional[str] = None,
                in_place: bool = False, map_file: Optional[str] = None, output: str = "preview") -> PreviewScene:
    """What a preview shows; `output` is the page or sheet it is for (named by a failed self-check)."""
    positions = world_positions(motion)
    contacts, from_file = _contacts(motion, positions)
    title = naming.clip_stem(motion.prompt, motion.name or Path(source).stem, motion.frame_count)
    scene = PreviewScene(motion, title, positions, _headings(motion, positions), contacts, from_file,
                         summarize(motion).text(Path(source).name).splitlines())
    if constraints:
        scene.markers, scene.constrained_frame_kinds = _constraint_markers(constraints, motion)
    if target:
        _retarget(scene, source, target, in_place, map_file, output)
    return scene
