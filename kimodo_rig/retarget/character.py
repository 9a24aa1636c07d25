"""Retarget targets: a rigged character (.glb/.gltf/.vrm/.fbx with a skin), a .bvh, or a built-in rig.

A skinned glTF's rest is its BIND pose, read from the skin's inverse bind matrices (the node transforms
may hold any frame of any animation) and placed in the scene by the nodes above the skeleton. Positions
are metres as the bones appear in the scene, whatever scale nodes above or inside the armature carry;
rotations are the bind matrices' rotations with scale removed. Childless bones get a tip joint from
their skinned vertices (or Blender's bone axis); a VRM humanoid table is carried for the mapping.
"""
from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import KimodoError
from ..files import read_input
from ..formats import draco
from ..formats import gltf_document as gd
from ..formats.limits import parse_json
from ..model import Skeleton
from ..ops.fk import locals_from_globals, rest_pose, rest_positions
from ..rotations import Quat, Vec3, quat_conjugate, quat_rotate, subtract
from .mapping import CHECK_FIELD, HumanoidMap, finger_part, map_from_parts, map_humanoid
from .soles import BindMesh, foot_carriers
from .solve import working_skeleton

LOG = logging.getLogger("kimodo_rig")
RIGS = Path(__file__).resolve().parent.parent / "rigs"
BUILTIN_TARGETS = {"mannequin": RIGS / "mpfb2_game_engine.glb", "mixamo": RIGS / "mpfb2_mixamo.glb"}
# The largest value a node's place in the scene holds (its world matrix: units, m or cm, and scale): far
# beyond any character, and two multiplied (or squared) stay far from float overflow (1e200 raised
# OverflowError in distances; 1e160 scales made infinities).
MAX_SCENE_VALUE = 1e12


@dataclass(frozen=True)
class Target:
    """A target rig: its skeleton at the bind pose, and where it came from. For a glTF target,
    `nodes[j]` is the glTF node of joint j and `scales[j]` the joint's world scale at bind."""

    skeleton: Skeleton
    source: str
    document: Optional[gd.Document] = None
    nodes: Tuple[int, ...] = ()
    scales: Tuple[Vec3, ...] = ()
    skin_to_world: Tuple[float, ...] = (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    humanoid_table: Tuple[Tuple[str, str], ...] = ()  # (canonical part, joint name) the file states (VRM)
    table_label: str = ""  # where that table came from, for messages
    # Tip joints added to the skeleton (after every joint of the file) where a limb bone has no child:
    # (tip name, the bone's name, the tip's position in the bone NODE's own frame, scale included).
    tips: Tuple[Tuple[str, str, Vec3], ...] = ()
    # Joints whose inverse bind matrix did not fit (`_mend_stray_binds`): (node, the mended inverse bind
    # matrix, column-major), for the written file to carry instead.
    mended: Tuple[Tuple[int, Tuple[float, ...]], ...] = ()

    @property
    def has_mesh(self) -> bool:
        gltf = self.document.gltf if self.document else {}
        return any("mesh" in node for node in gltf.get("nodes", []))


def load_target(spec: str) -> Target:
    """A built-in name (mannequin, mixamo), a .glb/.gltf with a skin, or a .bvh."""
    path = BUILTIN_TARGETS.get(spec.lower())
    if path is not None:
        target = read_gltf_target(path)
        return replace(target, source=spec)
    suffix = Path(spec).suffix.lower()
    if suffix in (".glb", ".gltf", ".vrm", ".fbx"):
        return read_gltf_target(spec)
    if suffix == ".bvh":
        from .. import formats

        # A BVH rest has no floor: stand it on y = 0 by its lowest joint, as a character file would be.
        skeleton = formats.read_file(spec).skeleton
        lowest = min(p[1] for p in rest_positions(skeleton))
        root = skeleton.rest_offsets[0]
        offsets = ((root[0], root[1] - lowest, root[2]),) + tuple(skeleton.rest_offsets[1:])
        return Target(Skeleton(skeleton.name, skeleton.joint_names, skeleton.parents, offsets,
                               skeleton.rest_rotations, skeleton.label), spec)
    if not Path(spec).exists():
        raise KimodoError("{}: no such file, and not a built-in target (mannequin, mixamo)".format(spec))
    raise KimodoError("{}: a target must be a .glb/.gltf/.vrm/.fbx with a skin, a .bvh, or mannequin/mixamo".format(spec))


def map_target(target: Target, user_map: Optional[Dict[str, str]] = None, map_source: str = "",
               checked: bool = True) -> HumanoidMap:
    """Which bone plays which part: the user's map when given, else the table the file states (VRM),
    else the rig's shape and names. Every one is checked (`mapping_check.check_map`) unless `checked` is
    False."""
    if user_map is not None:
        source = map_source or "--map"
        hmap = map_from_parts(target.skeleton, user_map, source, checked)
    elif target.humanoid_table:
        source = "{}: {}".format(target.source, target.table_label)
        hmap = map_from_parts(target.skeleton, dict(target.humanoid_table), source, checked)
    else:
        return map_humanoid(target.skeleton, target.source, feet_from_mesh=lambda hmap: _mesh_feet_forward(target, hmap),
                            skinned=skinned_joints(target), checked=checked)
    if checked:  # unchecked (`kimodo-rig map`), the check's own line names what is wrong (map_problem_line)
        working_skeleton(target.skeleton, hmap, source)  # a table whose hips hang below a hand is refused, naming it
    return hmap


def skinned_joints(target: Target) -> Optional[FrozenSet[int]]:
    """The joints that carry vertices: a weight above zero in a skinned mesh, or a mesh hanging rigidly
    under the joint's node (or on it). None for a target without a mesh (nothing to tell deform bones by)."""
    document = target.document
    if document is None or not target.has_mesh:
        return None
    gltf = document.gltf
    joint_of = {node: j for j, node in enumerate(target.nodes)}
    parents = gd.node_parents(gltf)
    found = {joint_of[node] for node, (weight, _) in vertex_weight_by_node(gltf, document).items()
             if weight > 0.0 and node in joint_of}
    for index, node in enumerate(gltf.get("nodes", [])):
        if "mesh" in node and "skin" not in node:
            holder = _holder(index, parents, joint_of)
            if holder >= 0:
                found.add(joint_of[holder])
    return frozenset(found)


def _holder(node: int, parents: Sequence[int], joints: Mapping[int, object]) -> int:
    """The joint node an unskinned mesh on `node` moves with: the node itself when it is a joint (a rigid
    part on its own node), else its nearest joint ancestor; -1 for none."""
    while node >= 0 and node not in joints:
        node = parents[node]
    return node


def _mesh_feet_forward(target: Target, hmap: HumanoidMap) -> Optional[Vec3]:
    return mesh_feet_forward(target.skeleton, bind_mesh(target), hmap)


def mesh_feet_forward(skeleton: Skeleton, mesh: BindMesh, hmap: HumanoidMap) -> Optional[Vec3]:
    """Heel to toe as the feet's mesh has it, for feet whose joints say nothing (no toe joint, no child:
    RobotExpressive's plated feet, a shin's tip with no foot bone): per foot, its joint to the centroid of
    the vertices its bones carry (at least half; where they carry none, from the bone above, which
    carries them: `foot_carriers`; the tip the rig reading added is where they end, at the toe) at bind,
    on the floor plane, both feet averaged; None without such vertices. `mesh`: the character's vertices
    at bind, as the file's (`bind_mesh`) or as the Blender add-on hands them in."""
    positions = rest_positions(skeleton)
    total = [0.0, 0.0]
    for side in ("l", "r"):
        if not hmap.has("foot_" + side):
            continue
        points: List[Vec3] = []
        for top, below in foot_carriers(skeleton, hmap.bones["foot_" + side]):
            points = [p for p, weights in mesh if sum(w for name, w in weights.items() if name in below) >= 0.5]
            if points:
                break
        if not points:
            continue
        start = positions[hmap.anchor("foot_" + side) if top == hmap.bones["foot_" + side] else top]
        dx = sum(p[0] for p in points) / len(points) - start[0]
        dz = sum(p[2] for p in points) / len(points) - start[2]
        size = math.hypot(dx, dz)
        if size > 1e-9:
            total[0] += dx / size
            total[1] += dz / size
    size = math.hypot(*total)
    return (total[0] / size, 0.0, total[1] / size) if size > 1e-6 else None


def read_user_map(path) -> Dict[str, str]:
    """A --map file: a JSON object, canonical part -> bone name (what `kimodo-rig map RIG --json` prints).
    Read as every input is (files.read_input): a FIFO named as the map blocked the run for good."""
    try:
        text = read_input(path).decode("utf-8-sig")  # a byte-order mark (Notepad adds one) is skipped
    except UnicodeDecodeError as error:
        raise KimodoError("{}: not JSON ({})".format(path, error)) from None
    return user_map_from_json(text, str(path))


def user_map_from_json(text: str, source: str) -> Dict[str, str]:
    """A map as JSON text (a --map file's, or the one a Blender armature stores), checked for its shape:
    an object of part -> bone name. Which parts and bones are known is `map_from_parts`'s to say."""
    try:
        record = parse_json(text, source, "the map")  # nesting and integers bounded as every reader's
    except ValueError as error:
        raise KimodoError("{}: not JSON ({})".format(source, error)) from None
    if not isinstance(record, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in record.items()):
        raise KimodoError("{}: a map is a JSON object of part -> bone name, e.g. {{\"hips\": \"Hips\"}}".format(source))
    record.pop(CHECK_FIELD, None)  # the verdict `kimodo-rig map --json` prints beside the parts
    return record


def user_map_json(parts: Dict[str, str]) -> str:
    """A map as `kimodo-rig map RIG --json` prints it and `--map` reads it."""
    return json.dumps(parts, indent=2)


def _vrm_parts(thumbs_from: str) -> Dict[str, str]:
    """VRM humanoid bone -> canonical part. The body names are shared by VRM 0.x and 1.0; thumbs count
    from "Proximal" in 0.x (Proximal, Intermediate, Distal) and from "Metacarpal" in 1.0."""
    parts = {"hips": "hips", "spine": "spine_0", "chest": "spine_1", "upperChest": "spine_2", "neck": "neck_0", "head": "head"}
    for side, s in (("left", "l"), ("right", "r")):
        parts.update({side + "Shoulder": "clavicle_" + s, side + "UpperArm": "upperarm_" + s,
                      side + "LowerArm": "lowerarm_" + s, side + "Hand": "hand_" + s,
                      side + "UpperLeg": "thigh_" + s, side + "LowerLeg": "calf_" + s,
                      side + "Foot": "foot_" + s, side + "Toes": "toe_" + s})
        for finger, ours in (("Thumb", "thumb"), ("Index", "index"), ("Middle", "middle"), ("Ring", "ring"), ("Little", "pinky")):
            if ours == "thumb":
                phalanges = ("Proximal", "Intermediate", "Distal") if thumbs_from == "Proximal" else ("Metacarpal", "Proximal", "Distal")
            else:
                phalanges = ("Proximal", "Intermediate", "Distal")
            for k, phalanx in enumerate(phalanges):
                parts[side + finger + phalanx] = finger_part(ours, k, s)
    return parts


def _vrm_table(gltf: Dict, node_names: Dict[int, str], source: str) -> Tuple[Tuple[Tuple[str, str], ...], str]:
    """(canonical part, joint name) pairs from a VRM humanoid table, and its label; () when none."""
    def member(parent: Dict, path: str, kind: type = dict) -> Any:
        """parent's `path` (the last of its dotted keys), None when absent; of another JSON type, refused."""
        value = parent.get(path.rsplit(".", 1)[-1])
        if value is not None and not isinstance(value, kind):
            raise KimodoError("{}: {} is not a JSON {}".format(source, path, "object" if kind is dict else "list"))
        return value

    extensions = gltf.get("extensions") or {}  # an object (gd.check_structure)
    vrm1 = member(member(extensions, "extensions.VRMC_vrm") or {}, "extensions.VRMC_vrm.humanoid") or {}
    vrm1 = member(vrm1, "extensions.VRMC_vrm.humanoid.humanBones")
    vrm0 = member(member(extensions, "extensions.VRM") or {}, "extensions.VRM.humanoid") or {}
    vrm0 = member(vrm0, "extensions.VRM.humanoid.humanBones", list)
    if isinstance(vrm1, dict):
        pairs = [(bone, (entry or {}).get("node") if isinstance(entry, dict) else None) for bone, entry in vrm1.items()]
        label, thumb_first = "VRM 1.0 humanoid table", "Metacarpal"
    elif isinstance(vrm0, list):
        pairs = [(entry.get("bone"), entry.get("node")) for entry in vrm0 if isinstance(entry, dict)]
        label, thumb_first = "VRM 0.x humanoid table", "Proximal"
    else:
        return (), ""
    table = []
    parts = _vrm_parts(thumb_first)
    for bone, node in pairs:
        part = parts.get(bone) if isinstance(bone, str) else None
        if part is None:
            continue  # eyes, jaw: not driven
        if not isinstance(node, int) or node not in node_names:
            raise KimodoError("{}: {}: {} is node {!r}, not a joint of the skin".format(source, label, bone, node))
        table.append((part, node_names[node]))
    return tuple(table), label


def read_gltf_target(path) -> Target:
    source = str(path)
    if Path(source).suffix.lower() == ".fbx":  # an FBX character, read as the glTF scene it describes
        from ..formats import fbx

        document = fbx.read_document(path)
    else:
        document = gd.read_file(path)
    gltf = document.gltf
    skins = gltf.get("skins") or []
    # The skin with the most joints (characters split into several meshes share one armature); without a
    # skin, a hierarchy of rigid parts (Kenney's characters) whose nodes are the joints.
    skin = max(skins, key=lambda s: len(s.get("joints", []))) if skins else _rigid_parts(gltf, source)
    joints = list(skin.get("joints", []))
    _warn_of_draco(source, gltf)
    node_count = len(gltf.get("nodes", []))
    if not joints or any(not isinstance(n, int) or not 0 <= n < node_count for n in joints):
        raise KimodoError("{}: the skin lists no valid joints".format(source))
    if "inverseBindMatrices" in skin:
        inverse_binds = document.accessor(skin["inverseBindMatrices"])
        if len(inverse_binds) != len(joints):
            raise KimodoError("{}: the skin has {} joints but {} inverse bind matrices".format(source, len(joints), len(inverse_binds)))
        if any(len(matrix) != 16 or not gd.is_finite(matrix) for matrix in inverse_binds):
            raise KimodoError("{}: the skin's inverse bind matrices are not 4x4 matrices of finite numbers".format(source))
        binds = []
        for matrix in inverse_binds:
            try:
                binds.append(gd.invert4(matrix))
            except ValueError:
                raise KimodoError("{}: a skin inverse bind matrix is singular".format(source)) from None
        far = next((k for k, bind in enumerate(binds) if not all(abs(c) <= MAX_SCENE_VALUE for c in bind)), None)
        if far is not None:  # a nearly singular inverse bind: its joint lies where no float32 reaches
            raise KimodoError("{}: the skin's inverse bind matrices place joint {!r} beyond {:g}: not a character".format(
                source, gltf["nodes"][joints[far]].get("name") or joints[far], MAX_SCENE_VALUE))
    else:
        binds = None
    world = gd.world_matrices(gltf, {})
    node_parents = gd.node_parents(gltf)
    beyond = {node for node, matrix in enumerate(world) if not all(abs(c) <= MAX_SCENE_VALUE for c in matrix)}  # and NaN
    if beyond:
        top = min(node for node in beyond if node_parents[node] not in beyond)
        raise KimodoError("{}: node {!r} is placed or scaled beyond {:g} in the scene: not a character".format(
            source, gltf["nodes"][top].get("name") or top, MAX_SCENE_VALUE))
    in_skin = {node: i for i, node in enumerate(joints)}

    def skin_parent(node: int) -> int:
        parent = node_parents[node]
        while parent >= 0 and parent not in in_skin:
            parent = node_parents[parent]
        return in_skin[parent] if parent >= 0 else -1

    parents = [skin_parent(n) for n in joints]
    children = gd.children_of(parents)
    weights: Dict[str, Dict[int, Tuple[float, List[float]]]] = {}

    def carried() -> Dict[int, Tuple[float, List[float]]]:  # read once, and only when a step needs it
        if "by node" not in weights:
            weights["by node"] = vertex_weight_by_node(gltf, document, skin)
        return weights["by node"]

    mended: Tuple[Tuple[int, Tuple[float, ...]], ...] = ()
    if binds is not None:
        mended = tuple((joints[k], tuple(gd.invert4(binds[k])))
                       for k in _mend_stray_binds(gltf, carried, skin, parents, children, binds, source))
    rests = binds
    if rests is None:
        static = gd.world_matrices(gltf, {})
        rests = [static[node] for node in joints]

    def rest_turn(k: int) -> float:  # column-major 4x4s
        return turn_between_deg([[rests[parents[k]][c * 4 + r] for c in range(3)] for r in range(3)],
                                [[rests[k][c * 4 + r] for c in range(3)] for r in range(3)])
    ends = end_bones(parents, children, _carrying_nodes(gltf, carried, joints, node_parents), joints, rest_turn)
    end_parents = {k: parents[k] for k in ends}
    if ends:  # no joints of the skeleton: their nodes ride on their bones in the written file
        children = {p: [k for k in kids if k not in ends] for p, kids in children.items() if p not in ends}
    trees = sorted((gd.subtree(children, root) for root in children.get(-1, [])), key=len, reverse=True)
    order, hung, parents = _character_trees(carried, skin, trees, parents, binds, node_parents)
    if len(trees) > 1:
        meeting = {node_parents[joints[tree[0]]] for tree in [order] + hung}
        if len(meeting) > 1 or -1 in meeting or len(hung) + 1 < LIMB_CHAINS:  # a body of chains is one skeleton
            _warn_of_trees(source, gltf, joints, trees, order, hung, parents)
        order = order + [joint for tree in hung for joint in tree]
    skin_to_world = gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
    if binds is None:
        binds = [world[n] for n in joints]
    else:
        skin_to_world = _skin_to_world(gltf, world, node_parents, joints[order[0]], binds[order[0]])
        binds = [gd.multiply4(skin_to_world, b) for b in binds]
        _warn_if_saved_off_bind(source, gltf, joints, order, world, binds)
    new_index = {old: new for new, old in enumerate(order)}
    positions: List[Vec3] = []
    rotations: List[Quat] = []
    scales: List[Vec3] = []
    for old in order:
        translation, rotation, scale = gd.decompose4(binds[old])
        positions.append(translation)
        rotations.append(rotation)
        scales.append(scale)
    names = []
    seen: Dict[str, int] = {}
    renamed = []
    for old in order:
        name = gltf["nodes"][joints[old]].get("name") or "joint{}".format(old)
        if name in seen:
            renamed.append("{} as {}_{}".format(name, name, joints[old]))
            name = "{}_{}".format(name, joints[old])
        seen[name] = old
        names.append(name)
    if renamed:
        LOG.warning("%s: bone names repeat; the output names the later ones apart: %s%s", source,
                    ", ".join(renamed[:4]), ", ..." if len(renamed) > 4 else "")
    skeleton_parents = tuple(new_index[parents[old]] if parents[old] >= 0 else -1 for old in order)
    offsets, local_rotations = locals_from_globals(skeleton_parents, rotations, positions)
    if not all(gd.is_finite(value) for value in offsets + local_rotations + scales):
        raise KimodoError("{}: the skin's bind pose is not finite numbers (scales or matrices too large?)".format(source))
    tip_records = []
    leaves = {order[k]: k for k in range(len(order)) if k not in set(skeleton_parents)}
    toward: Dict[int, Vec3] = {}  # a bone whose end bones were left out: towards where they start (their mean)
    for parent in sorted(set(end_parents.values())):
        if parent in new_index:
            heads = [gd.decompose4(binds[k])[0] for k, p in end_parents.items() if p == parent]
            toward[new_index[parent]] = tuple(sum(h[i] for h in heads) / len(heads) for i in range(3))
    found = _leaf_tips(document, joints, leaves, positions, [binds[old] for old in order], skin_to_world, toward)
    taken = set(names)
    for k, (tip_world, local) in found.items():
        tip_name = names[k] + "_tip"
        while tip_name in taken:
            tip_name += "_"
        taken.add(tip_name)
        names.append(tip_name)
        skeleton_parents = skeleton_parents + (k,)
        offsets.append(quat_rotate(quat_conjugate(rotations[k]), subtract(tip_world, positions[k])))
        local_rotations.append((0.0, 0.0, 0.0, 1.0))
        tip_records.append((tip_name, names[k], local))
    skeleton = Skeleton(Path(source).stem, tuple(names), skeleton_parents, tuple(offsets), tuple(local_rotations))
    table, label = _vrm_table(gltf, {joints[old]: names[k] for k, old in enumerate(order)}, source)
    return Target(skeleton, source, document, tuple(joints[old] for old in order), tuple(scales), tuple(skin_to_world),
                  table, label, tuple(tip_records), mended)


END_BONE_TURN_MAX_DEG = 0.01  # deg: an end bone rests turned as its bone (Blender's leaf bones: 0.000 in the file, 0.0005 in Blender's float32; a forearm 9.6-43)


def end_bones(parents: Sequence[int], children: Mapping[int, Sequence[int]], carrying: Set[Any],
              keys: Sequence[Any], rest_turn_deg: Callable[[int], float]) -> FrozenSet[int]:
    """The end bones of a skeleton whose mesh says which bones deform: joints with no child that carry no
    vertex, hanging from a bone that does, and resting turned as that bone does (Blender's FBX exporter
    adds a `<bone>_end` at each chain's tip by default, 100 times too long under an armature scaled by
    100; an exporter's tip markers). They mark where a bone ends, often wrongly, and are no limb part,
    extremity or end of a chain: the bone above ends where its vertices reach, as it does without them.
    `carrying`: the keys (`keys[k]` of joint k) that carry vertices; empty (no mesh): nothing tells an end
    bone, none is. `rest_turn_deg(k)`: joint k's rest rotation against its parent's, degrees; a childless
    bone with no vertex turned its own way (a forearm whose mesh the upper arm carries) is a limb's bone.
    The glTF/FBX reader, the Blender add-on (kimodo_rig.retarget.armature) and the Unreal plan leave them
    out of the skeleton the retarget drives."""
    if not carrying:
        return frozenset()
    return frozenset(k for k, parent in enumerate(parents) if parent >= 0 and not children.get(k)
                     and keys[k] not in carrying and keys[parent] in carrying
                     and rest_turn_deg(k) <= END_BONE_TURN_MAX_DEG)


def turn_between_deg(parent: Sequence[Sequence[float]], child: Sequence[Sequence[float]]) -> float:
    """Degrees between two rest orientations given as 3x3 matrices (rows; columns scaled alike or not)."""
    def columns(m):
        cols = [[m[r][c] for r in range(3)] for c in range(3)]
        return [[x / (math.sqrt(sum(v * v for v in col)) or 1.0) for x in col] for col in cols]
    a, b = columns(parent), columns(child)
    trace = sum(sum(a[i][r] * b[i][r] for r in range(3)) for i in range(3))  # trace(A^T B)
    return math.degrees(math.acos(max(-1.0, min(1.0, (trace - 1.0) / 2.0))))


def _carrying_nodes(gltf: Dict, carried: Callable[[], Dict[int, Tuple[float, List[float]]]], joints: Sequence[int],
                    node_parents: Sequence[int]) -> Set[int]:
    """The joint nodes that carry vertices (`skinned_joints` before the skeleton is made): a weight above
    zero in a skinned mesh, or a mesh hanging rigidly on or under the joint's node. Empty without a skinned
    mesh (rigid parts carry their meshes on their own nodes, and every part is one)."""
    found = {node for node, (weight, _) in carried().items() if weight > 0.0}
    if not found:
        return set()
    in_skin = set(joints)
    for index, node in enumerate(gltf.get("nodes", [])):
        if "mesh" in node and "skin" not in node:
            found.add(_holder(index, node_parents, in_skin))
    return found


RIGID_PARTS_MIN = 5  # meshes on separate nodes of one tree: a torso, two arms and two legs at least


def _rigid_parts(gltf: Dict, source: str) -> Dict:
    """A glTF without a skin whose character is rigid parts on a hierarchy of nodes animated by their
    transforms (Kenney's platformer and mini characters: `torso`, `arm-left`, `leg-left` each a mesh on
    its own node): the nodes of the scene tree with the most meshes are the joints, their transforms as
    saved the rest (no inverse bind matrices say otherwise). As a skin {"joints": [...]}; one line when
    there is no such tree (a static prop, a single mesh)."""
    nodes = gltf.get("nodes", [])
    children = gd.children_of(gd.node_parents(gltf))
    best: List[int] = []
    for root in children.get(-1, []):
        tree = gd.subtree(children, root)
        if sum(1 for n in tree if "mesh" in nodes[n]) > sum(1 for n in best if "mesh" in nodes[n]):
            best = tree
    if sum(1 for n in best if "mesh" in nodes[n]) < RIGID_PARTS_MIN:
        raise KimodoError("{}: no skin (skeleton) in this glTF: a target needs a rigged character, or one of rigid "
                          "parts on their own nodes (torso, arms, legs)".format(source))
    return {"joints": [n for n in best if "camera" not in nodes[n]]}


def bind_mesh(target: Target) -> List[Tuple[Vec3, Dict[str, float]]]:
    """Every vertex of the character at bind (world, metres, the glTF frame) with its weights by joint
    name: skinned meshes by their skin (influences outside the skeleton dropped, the rest renormalised),
    meshes that hang rigidly under a joint's node (a robot's plated feet) wholly on that joint. Vertices
    that are nowhere (inf, NaN) are left out. Empty without a mesh."""
    document = target.document
    if document is None or not target.has_mesh:
        return []
    gltf = document.gltf
    skeleton = target.skeleton
    names = skeleton.joint_names
    node_joint: Dict[int, Optional[int]] = {node: j for j, node in enumerate(target.nodes)}
    node_scale = {node: target.scales[j] for j, node in enumerate(target.nodes)}
    rotations, positions = rest_pose(skeleton)

    def bind_world(node: int) -> gd.Matrix4:
        j = node_joint[node]
        return gd.trs_matrix(positions[j], rotations[j], node_scale[node])  # type: ignore[index]

    parents = gd.node_parents(gltf)
    static = gd.world_matrices(gltf, {})
    result: List[Tuple[Vec3, Dict[str, float]]] = []
    for index, node in enumerate(gltf.get("nodes", [])):
        if "mesh" not in node:
            continue
        primitives = gltf["meshes"][node["mesh"]].get("primitives", [])
        if "skin" not in node:
            holder = _holder(index, parents, node_joint)
            if holder < 0:
                continue
            try:
                to_world = gd.multiply4(bind_world(holder), gd.multiply4(gd.invert4(static[holder]), static[index]))
            except ValueError:  # a singular node matrix: that mesh cannot be placed, so it is not a sole
                continue
            for primitive in primitives:
                if "POSITION" in primitive.get("attributes", {}) and not _draco(primitive):
                    placed = (gd.apply4(to_world, v) for v in document.accessor(primitive["attributes"]["POSITION"]))
                    result.extend((p, {names[node_joint[holder]]: 1.0}) for p in placed if gd.is_finite(p))  # type: ignore[misc]
            continue
        skin = gltf["skins"][node["skin"]]
        joints = skin.get("joints", [])
        inverse_binds = document.accessor(skin["inverseBindMatrices"]) if "inverseBindMatrices" in skin else None
        if inverse_binds is not None and (len(inverse_binds) != len(joints) or not all(
                len(m) == 16 and gd.is_finite(m) for m in inverse_binds)):
            continue  # a skin the file gets wrong carries no sole
        # The skin's bind space in the world: the bind world of a joint this skin shares with the body.
        mended = {node for node, _ in target.mended}  # their inverse binds in the file do not fit the others'
        shared = [slot for slot, joint_node in enumerate(joints) if node_joint.get(joint_node) is not None
                  and joint_node not in mended]
        if not shared:
            continue
        to_world = bind_world(joints[shared[0]])
        if inverse_binds:
            to_world = gd.multiply4(to_world, inverse_binds[shared[0]])
        slots = [node_joint.get(n) for n in joints]
        for primitive in primitives:
            attributes = primitive.get("attributes", {})
            if not all(k in attributes for k in ("POSITION", "JOINTS_0", "WEIGHTS_0")) or _draco(primitive):
                continue
            vertices = document.accessor(attributes["POSITION"])
            influences = document.accessor(attributes["JOINTS_0"])
            weights = document.accessor(attributes["WEIGHTS_0"])
            for v, js, ws in zip(vertices, influences, weights):
                terms: Dict[str, float] = {}
                for slot, w in zip(js, ws):
                    slot = int(slot)
                    j = slots[slot] if 0 <= slot < len(slots) else None
                    if w > 0.0 and j is not None:
                        terms[names[j]] = terms.get(names[j], 0.0) + w
                total = sum(terms.values())
                world = gd.apply4(to_world, v)
                if 1e-6 < total < math.inf and gd.is_finite(world):  # a vertex nowhere is no sole
                    result.append((world, {j: w / total for j, w in terms.items()}))
    return result


def _apply(m: Sequence[float], p: Sequence[float]) -> Vec3:
    """A column-major 4x4 matrix applied to a point."""
    return (m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12], m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13],
            m[2] * p[0] + m[6] * p[1] + m[10] * p[2] + m[14])


TIP_PLACE_DIGITS = 5  # decimals of a metre (10 um): vertices this near are one place of the surface, for a tip


def tip_from_vertices(start: Vec3, weighted: Sequence[Tuple[float, Vec3]], toward: Optional[Vec3] = None) -> Optional[Vec3]:
    """Where a childless bone starting at `start` ends, from the vertices skinned to it ((weight, bind
    position) each, world): it runs towards their weighted centroid and ends at the farthest reach along
    that line of those it carries at least half. None with (almost) no vertices. `toward`: where an end
    bone left out of the skeleton starts (`end_bones`): the bone runs towards it instead, as the rig drew it
    (a foot whose mesh hangs behind its ankle still points to its toes), as far as its vertices reach along
    that line (the end bone's place is no measure of length: 100 times too far under an armature scaled by
    100), at least as far as their centroid is. The glTF reader and the
    Blender add-on (kimodo_rig.retarget.armature) both give leaf bones their tips so. Each place counts
    once: a vertex split along a seam (normals, UVs) is one point of the surface, and files split it
    differently (the Quaternius FBX keeps corners apart that its .glb copy merges: tips 5 mm apart)."""
    if sum(w for w, _ in weighted) < 3.0:
        return None
    places: Dict[Tuple[float, ...], Tuple[float, Vec3]] = {}
    for w, p in weighted:
        places.setdefault(tuple(round(c, TIP_PLACE_DIGITS) for c in p), (w, p))
    weighted = list(places.values())
    total = sum(w for w, _ in weighted)
    centroid = tuple(sum(w * p[i] for w, p in weighted) / total for i in range(3))
    direction = subtract(centroid, start)
    size = sum(c * c for c in direction) ** 0.5
    if not size > 1e-6:
        return None
    unit = tuple(c / size for c in direction)
    if toward is not None:
        line = subtract(toward, start)
        drawn = sum(c * c for c in line) ** 0.5
        if drawn > 1e-6:
            unit = tuple(c / drawn for c in line)
    firm = [p for w, p in weighted if w >= 0.5] or [p for _, p in weighted]
    reach = max(sum((p[i] - start[i]) * unit[i] for i in range(3)) for p in firm)
    return (start[0] + unit[0] * max(reach, size), start[1] + unit[1] * max(reach, size), start[2] + unit[2] * max(reach, size))


def is_end_name(name: str) -> bool:
    """A bone named as an exporter's end marker (`Foot.L_end`, `Head_nub`, `thumb_tip`): it is a tip
    already, and gets none of its own from its bone axis."""
    return re.search(r"(end|nub|tip)$", name.lower()) is not None


def _leaf_tips(document: gd.Document, joints: List[int], leaves: Dict[int, int], positions: List[Vec3],
               binds: List[gd.Matrix4], skin_to_world: Sequence[float],
               toward: Optional[Mapping[int, Vec3]] = None) -> Dict[int, Tuple[Vec3, Vec3]]:
    """Where each childless bone ends, from the vertices skinned to it: at bind, linear blend skinning
    leaves every vertex where the file stores it (placed by the skin's bind space), so the bone runs from
    its joint towards the weighted centroid of its vertices and ends at their farthest reach along that
    line. A bone with (almost) no vertices lies along its node's +Y where the file says its exporter keeps
    bones so (Blender), and gets nothing otherwise. `leaves`: skin joint slot -> skeleton index;
    `positions`, `binds`: per skeleton index. Returns {skeleton index: (tip world, tip in the bone
    node's frame)}. `toward`: per skeleton index, where its end bones (left out) started (`tip_from_vertices`)."""
    gltf = document.gltf
    toward = toward or {}
    leaf_of_node = {joints[slot]: k for slot, k in leaves.items()}
    samples: Dict[int, List[Tuple[float, Vec3]]] = {}
    for node in gltf.get("nodes", []):
        if "mesh" not in node or "skin" not in node:
            continue
        skin = gltf["skins"][node["skin"]]
        skin_joints = skin.get("joints", [])
        # Joint slot of this skin -> our leaf (skins sharing the armature list the same nodes).
        slots = {slot: leaf_of_node[n] for slot, n in enumerate(skin_joints) if n in leaf_of_node}
        if not slots:
            continue
        for primitive in gltf["meshes"][node["mesh"]].get("primitives", []):
            attributes = primitive.get("attributes", {})
            if "POSITION" not in attributes or "JOINTS_0" not in attributes or "WEIGHTS_0" not in attributes:
                continue
            vertices = document.accessor(attributes["POSITION"])
            joint_sets = document.accessor(attributes["JOINTS_0"])
            weight_sets = document.accessor(attributes["WEIGHTS_0"])
            for vertex, slot_set, weight_set in zip(vertices, joint_sets, weight_sets):
                for slot, weight in zip(slot_set, weight_set):
                    leaf = slots.get(int(slot))
                    if leaf is not None and weight > 0.0:
                        samples.setdefault(leaf, []).append((weight, _apply(skin_to_world, vertex)))
    if not gltf.get("skins"):  # rigid parts: a part's mesh on its own node (or below it) is its vertices
        static = gd.world_matrices(gltf, {})
        parents = gd.node_parents(gltf)
        in_skin = set(joints)
        for index, node in enumerate(gltf.get("nodes", [])):
            holder = _holder(index, parents, in_skin) if "mesh" in node else -1
            if holder not in leaf_of_node:
                continue
            for primitive in gltf["meshes"][node["mesh"]].get("primitives", []):
                if "POSITION" in primitive.get("attributes", {}):
                    samples.setdefault(leaf_of_node[holder], []).extend(
                        (1.0, gd.apply4(static[index], v)) for v in document.accessor(primitive["attributes"]["POSITION"]))
    tips: Dict[int, Tuple[Vec3, Vec3]] = {}
    for leaf in list(samples) + sorted(set(toward) & set(leaves.values()) - set(samples)):
        tip = tip_from_vertices(positions[leaf], samples.get(leaf, ()), toward.get(leaf))
        if tip is None:
            continue
        try:
            local = _apply(gd.invert4(binds[leaf]), tip)
        except ValueError:
            continue
        tips[leaf] = (tip, local)
    if str((gltf.get("asset") or {}).get("generator", "")).startswith("Khronos glTF Blender I/O"):
        # No vertices to go by, but the file says how its bones lie: Blender's exporter keeps each bone
        # along its node's +Y. Its length is not stated; the bone's own offset from its parent stands in.
        for slot, leaf in leaves.items():
            node = gltf["nodes"][joints[slot]]
            if leaf in tips or is_end_name(str(node.get("name", ""))):
                continue
            offset = gd.node_local_matrix(node)[12:15]
            length = sum(c * c for c in offset) ** 0.5
            if length > 1e-9:
                local = (0.0, length, 0.0)
                tips[leaf] = (_apply(binds[leaf], local), local)
    return tips


STRAY_SCALE = 0.01  # relative: a joint's bind scale against its parent's that its node's own scale does not explain


def _mend_stray_binds(gltf: Dict, carried: Callable[[], Dict[int, Tuple[float, List[float]]]], skin: Dict,
                      parents: List[int], children: Dict[int, List[int]], binds: List[gd.Matrix4], source: str) -> List[int]:
    """Joints no vertex follows whose inverse bind matrix does not fit their parent's: THREE.GLTFExporter
    writes the end bones it adds (`Head_end`) from the scene, 100x the scale of the armature-space rest of
    the others, so they stood kilometres off and the written file could not hold them. Such a joint's bind
    rides on its parent's by its node's own transform, as a node outside the skin does; one line names them.
    Returns the skin slots mended."""
    joints = skin.get("joints", [])
    mended = []
    stack = list(children.get(-1, []))
    while stack:  # parents before children, so a child sees its parent's mended bind
        k = stack.pop()
        stack.extend(children.get(k, []))
        if parents[k] < 0:
            continue
        try:
            relative = gd.multiply4(gd.invert4(binds[parents[k]]), binds[k])
        except ValueError:
            continue
        local = gd.node_local_matrix(gltf["nodes"][joints[k]])
        have, want = gd.decompose4(relative)[2], gd.decompose4(local)[2]
        if all(abs(a - b) <= STRAY_SCALE * max(abs(b), 1e-9) for a, b in zip(have, want)):
            continue
        if carried().get(joints[k], (0.0, None))[0] > 0.0:
            continue  # it deforms the mesh: its bind is the mesh's, however odd
        try:
            gd.invert4(local)
        except ValueError:  # a node scaled to zero places no bind (the mended one is inverted for the output)
            raise KimodoError("{}: joint {!r} has a singular transform (zero scale?): it cannot carry the motion".format(
                source, gltf["nodes"][joints[k]].get("name") or joints[k])) from None
        binds[k] = gd.multiply4(binds[parents[k]], local)
        mended.append(k)
    if mended:
        names = [gltf["nodes"][joints[k]].get("name") or "joint{}".format(k) for k in mended]
        LOG.warning("%s: the inverse bind matrices of %s%s do not fit their parents' (an exporter's end bones?): "
                    "they ride on their parents as their nodes place them", source, ", ".join(names[:4]),
                    ", ..." if len(names) > 4 else "")
    return mended


def vertex_weight_by_node(gltf: Dict, document: gd.Document, skin: Optional[Dict] = None) -> Dict[int, Tuple[float, List[float]]]:
    """Node -> (the vertex weight the skinned meshes give it, those vertices' weighted sum in `skin`'s
    bind space; meshes of other skins add weight only): which bones deform, and where what they carry lies."""
    carried: Dict[int, Tuple[float, List[float]]] = {}
    nodes = gltf.get("nodes", [])
    skins = gltf.get("skins") or []
    for node in nodes:
        if "mesh" not in node or not isinstance(node.get("skin"), int) or not 0 <= node["skin"] < len(skins):
            continue
        slots = skins[node["skin"]].get("joints", [])
        own = skin is not None and skins[node["skin"]] is skin
        for primitive in gltf["meshes"][node["mesh"]].get("primitives", []):
            attributes = primitive.get("attributes", {})
            points = document.accessor(attributes["POSITION"]) if own and "POSITION" in attributes else None
            for joints_key, weights_key in (("JOINTS_0", "WEIGHTS_0"), ("JOINTS_1", "WEIGHTS_1")):
                if joints_key not in attributes or weights_key not in attributes:
                    continue
                influences = zip(document.accessor(attributes[joints_key]), document.accessor(attributes[weights_key]))
                for vertex, (js, ws) in enumerate(influences):
                    point = points[vertex] if points is not None and vertex < len(points) else None
                    for slot, w in zip(js, ws):
                        slot = int(slot)
                        if not (w > 0.0 and 0 <= slot < len(slots)):
                            continue
                        total, where = carried.setdefault(slots[slot], (0.0, [0.0, 0.0, 0.0]))
                        if point is not None and gd.is_finite(point):
                            for i in range(3):
                                where[i] += w * point[i]
                        carried[slots[slot]] = (total + w, where)
    return carried


def _character_trees(carried: Callable[[], Dict[int, Tuple[float, List[float]]]], skin: Dict, trees: List[List[int]],
                     parents: List[int], binds: Optional[List[gd.Matrix4]],
                     node_parents: Sequence[int] = ()) -> Tuple[List[int], List[List[int]], List[int]]:
    """(the body, the other skinned trees, skin parents with those hung from the body) of a skin whose
    joints form several trees (largest first), by `body_and_hangers`: trees that carry no vertex (poles,
    targets) are helpers left alone. Without a skinned mesh: the largest tree alone. Skinned trees that all
    meet at one node that is no joint (an armature node: Rigify's DEF- chains exported "deform bones
    only" lose their ORG-/MCH- parents) are one skeleton: `chains_at_an_armature` hangs each where the
    parent the export dropped was."""
    if len(trees) < 2:
        return trees[0], [], parents
    joints = skin.get("joints", [])
    by_node = carried()
    by_slot = {k: by_node[joints[k]] for tree in trees for k in tree if joints[k] in by_node}
    at = {k: (binds[k][12], binds[k][13], binds[k][14]) for tree in trees for k in tree} if binds is not None else None
    skinned_trees = [t for t, tree in enumerate(trees) if any(k in by_slot for k in tree)]
    meeting = {node_parents[joints[trees[t][0]]] for t in skinned_trees} if node_parents else set()
    if at is not None and len(skinned_trees) >= LIMB_CHAINS and len(meeting) == 1 and -1 not in meeting:
        # Every limb a chain of its own at the armature: the chains lost their parents in the export (a few
        # loose trees beside a body, feet under controls or a helmet, hang by `body_and_hangers`).
        # A leaf bone (a shoulder whose upper arm was cut off it) runs to twice its vertices' centroid.
        ends = {k: tuple(2.0 * by_slot[k][1][i] / by_slot[k][0] - at[k][i] for i in range(3))
                for t in skinned_trees for k in trees[t] if k in by_slot and by_slot[k][0] > 0.0}
        body, hang = chains_at_an_armature([trees[t] for t in skinned_trees], parents, at, ends)
        parents = list(parents)
        for t, parent in hang.items():
            parents[trees[skinned_trees[t]][0]] = parent
        return trees[skinned_trees[body]], [trees[skinned_trees[t]] for t in hang], parents  # in joining order
    body, hang = body_and_hangers(trees, by_slot, parents, at)
    parents = list(parents)
    for t, parent in hang.items():
        parents[trees[t][0]] = parent
    return trees[body], [trees[t] for t in sorted(hang)], parents


def body_and_hangers(trees: Sequence[Sequence[int]], carried: Mapping[int, Tuple[float, Sequence[float]]],
                     parents: Sequence[int], at: Optional[Mapping[int, Vec3]]) -> Tuple[int, Dict[int, int]]:
    """Of joints that form several trees (each depth first, root first), which tree is the character and
    where the others that carry vertices hang: (the body's index, {tree index: the body joint it hangs
    from}). `carried`: joint -> (vertex weight, those vertices' weighted sum). The body is the tree the
    mesh is skinned to most, not the largest: a control rig exported beside the deforming bones outnumbers
    them (Mixamo bones under 35 Ctrl_ bones); without weights the largest. A tree that carries vertices
    (a foot under an IK control, a helmet on a slot bone off the armature) hangs from the body bone
    nearest what it carries (`_nearest_bone`, by the joints' places `at`; the body's root without them),
    as the constraint that held it there did (exporters drop constraints). The glTF reader and the
    Blender add-on (kimodo_rig.retarget.armature) both choose so."""
    weight = [sum(carried[k][0] for k in tree if k in carried) for tree in trees]
    body = max(range(len(trees)), key=lambda t: (weight[t], len(trees[t]), -t))
    hang = {}
    for t, tree in enumerate(trees):
        if t == body or not weight[t] > 0.0:
            continue
        if at is None:
            hang[t] = trees[body][0]
            continue
        centre = tuple(sum(carried[k][1][i] for k in tree if k in carried) / weight[t] for i in range(3))
        hang[t] = _nearest_bone(centre, trees[body], parents, at)  # type: ignore[arg-type]
    return body, hang


LIMB_CHAINS = 5  # skinned chains at one armature node that make a body of chains: a trunk, two arms, two legs
CONNECTED = 0.01  # of the character's height: a chain starting this near a bone's end was connected to it


def chains_at_an_armature(trees: Sequence[Sequence[int]], parents: Sequence[int], at: Mapping[int, Vec3],
                          leaf_ends: Optional[Mapping[int, Vec3]] = None) -> Tuple[int, Dict[int, int]]:
    """Joint chains that all hang off one armature node (each depth first, root first): (the trunk's
    index, {tree index: the joint it hangs from}, in joining order). The trunk is the chain that rises
    most above its own root (the spine: legs run down from theirs, arms sideways); the others join nearest
    first, each from the bone whose end its root joint starts at (Rigify's chains are connected: an upper
    arm starts at its shoulder bone's end), else from the bone of a larger chain passing nearest it (a
    finger from the hand, never from another finger), as the dropped parents held them. `leaf_ends`: where
    a childless bone ends (its joint where not given)."""
    heights = [at[k][1] for tree in trees for k in tree]
    connected = CONNECTED * (max(heights) - min(heights))
    rise = [max(at[k][1] for k in tree) - at[tree[0]][1] for tree in trees]
    body = max(range(len(trees)), key=lambda t: (rise[t], len(trees[t]), -t))
    joined = {body}
    hang: Dict[int, int] = {}
    while len(joined) < len(trees):
        best = None
        for t in range(len(trees)):
            if t in joined:
                continue
            members = [k for j in joined for k in trees[j]]
            end_gap, end_bone = _bone_gap(at[trees[t][0]], members, parents, at, leaf_ends, ends_only=True)
            if end_gap <= connected ** 2:
                candidate = (0, end_gap, t, end_bone)
            else:
                larger = [k for j in joined if len(trees[j]) > len(trees[t]) for k in trees[j]]
                if not larger:
                    continue
                gap, bone = _bone_gap(at[trees[t][0]], larger, parents, at, leaf_ends)
                candidate = (1, gap, t, bone)
            if best is None or candidate < best:
                best = candidate
        if best is None:  # nothing larger joined yet: the nearest bone of any joined chain
            t = min(t for t in range(len(trees)) if t not in joined)
            best = (1, 0.0, t, _bone_gap(at[trees[t][0]], [k for j in joined for k in trees[j]], parents, at, leaf_ends)[1])
        _, _, t, bone = best
        hang[t] = bone
        joined.add(t)
    return body, hang


def _bone_gap(point: Vec3, body: Sequence[int], parents: Sequence[int], at: Mapping[int, Vec3],
              leaf_ends: Optional[Mapping[int, Vec3]] = None, ends_only: bool = False) -> Tuple[float, int]:
    """(squared distance, joint) of the bone of `body` passing nearest `point` (a leaf: its joint alone);
    with `ends_only`, of the bone whose end (a child's joint, a leaf's own place) is nearest."""
    members = set(body)
    below: Dict[int, List[int]] = {}
    for k in body:
        if parents[k] in members:
            below.setdefault(parents[k], []).append(k)
    best = (math.inf, body[0])
    for k in body:
        for end in [at[c] for c in below.get(k, [])] or [(leaf_ends or {}).get(k, at[k])]:
            run = subtract(end, at[k])
            length = sum(c * c for c in run)
            along = 1.0 if ends_only else 0.0 if length < 1e-18 else max(
                0.0, min(1.0, sum((point[i] - at[k][i]) * run[i] for i in range(3)) / length))
            gap = sum((point[i] - at[k][i] - along * run[i]) ** 2 for i in range(3))
            if gap < best[0] - 1e-12:
                best = (gap, k)
    return best


def _nearest_bone(centre: Vec3, body: Sequence[int], parents: Sequence[int], at: Dict[int, Vec3]) -> int:
    """The joint of `body` (depth first, root first) whose bone, from the joint `at` its place to each of
    its children (a leaf: the joint alone), passes nearest `centre`: where a tree of skinned bones off the
    armature (a foot under an IK control, a helmet slot) hangs (`body_and_hangers`)."""
    below: Dict[int, List[int]] = {}
    for k in body:
        below.setdefault(parents[k], []).append(k)

    def gap(start: Vec3, end: Vec3) -> float:
        run = subtract(end, start)
        length = sum(c * c for c in run)
        along = 0.0 if length < 1e-18 else max(0.0, min(1.0, sum((centre[i] - start[i]) * run[i] for i in range(3)) / length))
        return sum((centre[i] - start[i] - along * run[i]) ** 2 for i in range(3))

    # On a tie the later joint (depth first: a leaf's point is also the end of its parent's bone).
    best = (math.inf, 0, body[0])
    for rank, k in enumerate(body):
        ends = [at[c] for c in below.get(k, [])] or [at[k]]
        best = min(best, min((gap(at[k], end), -rank, k) for end in ends))
    return best[2]


_draco = draco.undecodable


def _warn_of_draco(source: str, gltf: Dict) -> None:
    """One line when meshes are Draco-compressed and the optional decoder (DracoPy) is not installed: those
    vertices carry no sole and the feet stand on what else there is (their joints)."""
    meshes = [mesh.get("name") or "mesh{}".format(k) for k, mesh in enumerate(gltf.get("meshes", []))
              if any(_draco(p) for p in mesh.get("primitives", []))]
    if meshes:
        LOG.warning("%s: mesh %s %s Draco-compressed (%s) and the Draco decoder is not installed: feet no other "
                    "mesh carries stand on their joints, not their soles, and may float or sink by the sole's depth; "
                    "install it (%s) or export the character without Draco compression to stand it on its soles",
                    source, ", ".join(meshes[:3]) + (", ..." if len(meshes) > 3 else ""),
                    "is" if len(meshes) == 1 else "are", draco.EXTENSION, draco.INSTALL_HINT)


def _warn_of_trees(source: str, gltf: Dict, joints: List[int], trees: List[List[int]], body: List[int],
                   hung: List[List[int]], parents: Sequence[int]) -> None:
    """One line: which of the skin's separate trees is the character, and what else hangs from it."""
    def name(k: int) -> str:
        return gltf["nodes"][joints[k]].get("name") or "joint{}".format(k)

    which = "the largest" if body is trees[0] else "the one its mesh is skinned to"
    line = "{}: the skin's joints form {} separate trees; {} ({} joints, from {}) is the character".format(
        source, len(trees), which, len(body), name(body[0]))
    if hung:
        line += "; skinned bones off it follow the bone nearest them ({})".format(
            ", ".join("{} from {}".format(name(tree[0]), name(parents[tree[0]])) for tree in hung))
    LOG.warning("%s", line)


def _warn_if_saved_off_bind(source: str, gltf: Dict, joints: List[int], order: List[int], world: List[gd.Matrix4],
                            binds: List[gd.Matrix4]) -> None:
    """One line when the file's nodes stand far from the bind pose (the bind pose is what is used)."""
    heights = [binds[old][13] for old in order]
    size = max(heights) - min(heights)
    offsets = []
    for old in order:
        saved, bind = world[joints[old]], binds[old]
        distance = sum((saved[12 + i] - bind[12 + i]) ** 2 for i in range(3)) ** 0.5
        offsets.append((distance, gltf["nodes"][joints[old]].get("name") or "joint{}".format(old)))
    # The skeleton's root when it moved (the usual case: a saved frame moves the whole body), else the worst joint.
    worst, name = offsets[0] if offsets[0][0] > 0.05 * size else max(offsets)
    if size > 0 and worst > 0.05 * size:
        LOG.warning("%s: saved in another pose than its bind pose (%s %.2f m off its bind place); the bind pose "
                    "(from the inverse bind matrices) is the rest", source, name, worst)


BIND_SPACE_RESCALE = 1.5  # a root whose bind is more than this bigger or smaller than its saved transform: not a pose


def _skin_to_world(gltf: Dict, world: List[gd.Matrix4], node_parents: List[int], root_node: int,
                   root_bind: gd.Matrix4) -> gd.Matrix4:
    """Where the skin's bind space sits in the scene, from the inverse bind matrices and the nodes ABOVE
    the skeleton (never the joints' own saved transforms, which may hold any animation frame).

    Exporters write inverse bind matrices one of two ways: of the joints' scene transforms (Blender,
    three.js: bind space is the scene), or relative to the node holding the skeleton (an armature with a
    scale or an axis change, which then places the bind space in the scene). Both draw the mesh the same
    in the pose the file was saved in, so the root joint's saved transform picks the reading: the one
    whose bind transform of the root joint, relative to its parent, is nearer the saved one. A saved pose
    turns and moves the root joint but does not rescale it or swap its axes, which is what the wrong
    reading would need. A root joint that none of the file's own animations moves is placement, not pose:
    its saved transform places the bind space. Where neither reading gives the root joint its saved size
    (no pose rescales it), the inverse bind matrices carry a transform of their own (gltfpack bakes the
    mesh's dequantization into them) and the root joint's saved transform places the bind space."""
    identity = gd.trs_matrix((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0))
    animations = gltf.get("animations") or []
    keyed = {channel.get("target", {}).get("node") for animation in animations for channel in animation.get("channels", [])}
    if animations and root_node not in keyed:
        # The file's own clips never move the skeleton's root joint: it is a placement node like the ones
        # above it (the robot's root bone stands 2.37 m above its bind place, and its clips play there).
        try:
            return gd.multiply4(world[root_node], gd.invert4(root_bind))
        except ValueError:
            return identity
    parent = node_parents[root_node]
    above = world[parent] if parent >= 0 else identity
    saved = gd.node_local_matrix(gltf["nodes"][root_node])
    try:
        inverse_above = gd.invert4(above)
    except ValueError:
        return identity

    def distance(skin_to_world: gd.Matrix4) -> float:
        local = gd.multiply4(inverse_above, gd.multiply4(skin_to_world, root_bind))
        linear = [(r, c) for r in range(3) for c in range(3)]
        size = sum(saved[c * 4 + r] ** 2 for r, c in linear) ** 0.5 or 1.0
        return sum((local[c * 4 + r] - saved[c * 4 + r]) ** 2 for r, c in linear) ** 0.5 / size

    def rescaled(skin_to_world: gd.Matrix4) -> bool:
        """The root's bind, so read, is at another size than its saved transform: no pose does that."""
        local = gd.multiply4(inverse_above, gd.multiply4(skin_to_world, root_bind))
        sizes = [sum(m[c * 4 + r] ** 2 for r in range(3) for c in range(3)) ** 0.5 for m in (local, saved)]
        return not sizes[1] / BIND_SPACE_RESCALE <= sizes[0] <= sizes[1] * BIND_SPACE_RESCALE

    plain = max(abs(a - b) for a, b in zip(above, identity)) < 1e-9  # nothing above: one reading
    best = identity if plain or distance(identity) <= distance(above) else above
    if rescaled(best):
        # Neither reading: the inverse bind matrices carry a transform of their own (gltfpack bakes the
        # mesh's dequantization into them, 1/16383 of its size), so the root joint's saved transform,
        # which a pose turns and moves but never rescales, places the bind space.
        try:
            return gd.multiply4(world[root_node], gd.invert4(root_bind))
        except ValueError:
            return best
    return best
