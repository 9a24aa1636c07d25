"""A Blender-style armature as a retarget target, and a motion as that armature's pose channels, without
bpy (the Blender add-on hands plain numbers in and keys what comes out).

Blender's conventions, stated once:
- Frame: +Z up, -Y forward; a glTF (Y up) point (x, y, z) is Blender's (x, -z, y). The core works in the
  glTF frame: Blender (x, y, z) is (x, z, -y) there (`to_y_up`).
- Matrices are 4x4 rows (`[list(row) for row in matrix]` of a mathutils.Matrix), acting on column vectors.
- `bone.matrix_local`: the bone's rest in armature space, rotation and head, no scale (the bone's Y axis
  runs head to tail). The armature object's `matrix_world` places armature space in the scene.
- Posing: pose_bone.matrix = parent.matrix @ parent.bone.matrix_local^-1 @ bone.matrix_local @ basis
  (the root: bone.matrix_local @ basis), basis = T(location) R(rotation_quaternion, w x y z).

The Skeleton given to the core is the armature's rest in scene metres and the glTF frame, joints parent
before child; each joint's rest rotation is its bone's rest, so the core's global rotations are the bones'
(in the glTF frame) and `pose_channels` turns them back into bases with no per-bone correction. A bone
without a child bone gets a tip joint past it (`tip_points`), as the glTF reader gives a rigged file's
childless bones, so the core reads the same rig from Blender as from its exported file (a foot's tip is
where the rig faces); tips are no bones and get no channels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Set, Tuple

from ..errors import KimodoError
from ..model import Motion, Skeleton
from ..ops.fk import global_rotations_and_positions, locals_from_globals, rest_global_rotations
from ..rotations import (
    IDENTITY,
    Mat3,
    Quat,
    Vec3,
    add,
    matrix_apply,
    matrix_multiply,
    matrix_to_quat,
    matrix_transpose,
    quat_conjugate,
    quat_multiply,
    quat_normalize,
    quat_rotate,
    subtract,
)
from .character import body_and_hangers, end_bones, is_end_name, tip_from_vertices, turn_between_deg

Matrix4 = Sequence[Sequence[float]]
# Blender (x, y, z) -> glTF (x, z, -y): a quarter turn about +X.
TO_Y_UP: Mat3 = ((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.0, -1.0, 0.0))
FROM_Y_UP: Mat3 = matrix_transpose(TO_Y_UP)
UNEVEN_SCALE_TOLERANCE = 1e-4


@dataclass(frozen=True)
class ArmatureBone:
    name: str
    parent: str  # "" for a bone without a parent
    matrix_local: Matrix4
    length: float = 0.0  # `bone.length`: head to tail along the rest's Y axis (armature units); 0: not known


@dataclass(frozen=True)
class Armature:
    """An armature object's rest: its bones and its object's world matrix; `leaf_vertices`, per bone
    without a child bone (end bones aside), the vertices skinned to it at rest ((weight, position), the glTF frame, scene
    metres), from which its tip is found as the glTF reader finds it."""

    name: str
    bones: Tuple[ArmatureBone, ...]
    matrix_world: Matrix4 = ((1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.0, 0.0, 1.0, 0.0), (0.0, 0.0, 0.0, 1.0))
    leaf_vertices: Tuple[Tuple[str, Tuple[Tuple[float, Vec3], ...]], ...] = ()
    # Per bone with skinned vertices: (name, their summed weight, their weighted centre; glTF frame, metres).
    carried: Tuple[Tuple[str, float, Vec3], ...] = ()
    holding: Tuple[str, ...] = ()  # bones a mesh hangs from rigidly (parented to the bone)

    def ordered(self) -> List[ArmatureBone]:
        """Bones parent before child, siblings in the order given; no end bones (`character.end_bones`: a
        bone with no child that carries no vertex, hanging from one that does), as the glTF reader reads
        the file exported from it."""
        by_parent: Dict[str, List[ArmatureBone]] = {}
        ends = self.end_bones()
        names = {bone.name for bone in self.bones}
        for bone in self.bones:
            if bone.name in ends:
                continue
            by_parent.setdefault(bone.parent if bone.parent in names else "", []).append(bone)
        order: List[ArmatureBone] = []
        stack = list(reversed(by_parent.get("", [])))
        while stack:
            bone = stack.pop()
            order.append(bone)
            stack.extend(reversed(by_parent.get(bone.name, [])))
        return order


    def end_bones(self) -> Set[str]:
        names = [bone.name for bone in self.bones]
        index = {name: k for k, name in enumerate(names)}
        parents = [index.get(bone.parent, -1) for bone in self.bones]
        children: Dict[int, List[int]] = {}
        for k, parent in enumerate(parents):
            children.setdefault(parent, []).append(k)
        carrying = {name for name, weight, _ in self.carried if weight > 0.0}
        if carrying:
            carrying.update(self.holding)
        bones = self.bones

        def rest_turn(k: int) -> float:
            return turn_between_deg([row[:3] for row in bones[parents[k]].matrix_local[:3]],
                                    [row[:3] for row in bones[k].matrix_local[:3]])
        return {names[k] for k in end_bones(parents, children, carrying, names, rest_turn)}


@dataclass(frozen=True)
class Placement:
    """The armature object's world matrix split into a uniform scale, a rotation and a translation."""

    scale: float
    rotation: Mat3
    translation: Vec3

    @staticmethod
    def of(armature: Armature) -> "Placement":
        m = armature.matrix_world
        columns = [(m[0][c], m[1][c], m[2][c]) for c in range(3)]
        scales = [math.sqrt(sum(v * v for v in column)) for column in columns]
        if not all(math.isfinite(s) and s > 1e-9 for s in scales):
            raise KimodoError("{}: the armature object's scale is zero or not a number".format(armature.name))
        if max(scales) - min(scales) > UNEVEN_SCALE_TOLERANCE * max(scales):
            raise KimodoError("{}: the armature object is scaled unevenly ({}); apply its scale first (Ctrl+A)".format(
                armature.name, ", ".join("{:.4g}".format(s) for s in scales)))
        rotation = tuple(tuple(m[r][c] / scales[c] for c in range(3)) for r in range(3))
        return Placement(sum(scales) / 3.0, rotation, (m[0][3], m[1][3], m[2][3]))  # type: ignore[arg-type]

    def to_world(self, point: Sequence[float]) -> Vec3:
        p = matrix_apply(self.rotation, point)
        return (p[0] * self.scale + self.translation[0], p[1] * self.scale + self.translation[1],
                p[2] * self.scale + self.translation[2])

    def to_armature(self, point: Sequence[float]) -> Vec3:
        local = subtract(point, self.translation)
        p = matrix_apply(matrix_transpose(self.rotation), local)
        return (p[0] / self.scale, p[1] / self.scale, p[2] / self.scale)


def _rotation(m: Matrix4) -> Mat3:
    return tuple(tuple(float(m[r][c]) for c in range(3)) for r in range(3))  # type: ignore[return-value]


def _head(m: Matrix4) -> Vec3:
    return (float(m[0][3]), float(m[1][3]), float(m[2][3]))


def skeleton_of(armature: Armature) -> Skeleton:
    """The armature's rest as a Skeleton in the glTF frame, scene metres, joints parent before child."""
    if not armature.bones:
        raise KimodoError("{}: the armature has no bones".format(armature.name))
    placement = Placement.of(armature)
    order = armature.ordered()
    index = {bone.name: i for i, bone in enumerate(order)}
    world_rotations: List[Quat] = []
    world_positions: List[Vec3] = []
    for bone in order:
        values = [c for row in bone.matrix_local for c in row]
        if len(values) != 16 or not all(math.isfinite(float(c)) for c in values):
            raise KimodoError("{}: bone {} has no finite rest matrix".format(armature.name, bone.name))
        blender_world = matrix_multiply(placement.rotation, _rotation(bone.matrix_local))
        world_rotations.append(matrix_to_quat(matrix_multiply(TO_Y_UP, blender_world)))
        world_positions.append(matrix_apply(TO_Y_UP, placement.to_world(_head(bone.matrix_local))))
    parents = tuple(index.get(bone.parent, -1) for bone in order)
    roots = [i for i, p in enumerate(parents) if p < 0]
    if len(roots) > 1:
        parents = _hang_loose_trees(armature, order, parents, roots, world_positions)
    names = [bone.name for bone in order]
    for tip_name, bone_name, point in tip_points(armature):
        parent = index[bone_name]
        names.append(tip_name)
        parents = parents + (parent,)
        world_rotations.append(world_rotations[parent])
        world_positions.append(matrix_apply(TO_Y_UP, placement.to_world(point)))
    offsets, locals_ = locals_from_globals(parents, world_rotations, world_positions)
    return _ordered_skeleton(armature.name, names, parents, offsets, locals_)


def _hang_loose_trees(armature: Armature, order: Sequence[ArmatureBone], parents: Sequence[int], roots: List[int],
                      positions: Sequence[Vec3]) -> Tuple[int, ...]:
    """Several top bones (a body beside IK controls, poles, prop slots), chosen as the glTF reader chooses
    among a skin's trees (`character.body_and_hangers`): a tree that carries vertices hangs from the body
    bone nearest them, any other from the body's root, so the Skeleton keeps a single root."""
    carried = {name: (weight, tuple(weight * c for c in centre)) for name, weight, centre in armature.carried}
    bounds = roots + [len(order)]  # `order` is depth first: each tree is a run starting at its top bone
    trees = [list(range(bounds[t], bounds[t + 1])) for t in range(len(roots))]
    by_index = {k: carried[order[k].name] for tree in trees for k in tree if order[k].name in carried}
    body, hang = body_and_hangers(trees, by_index, parents, {k: positions[k] for tree in trees for k in tree})
    hung = list(parents)
    for t, tree in enumerate(trees):
        if t != body:
            hung[tree[0]] = hang.get(t, trees[body][0])
    return tuple(hung)


def tip_points(armature: Armature) -> List[Tuple[str, str, Vec3]]:
    """The tip joints the Skeleton gets where a bone has no child bone, as the glTF reader gives them to
    a rigged file's childless bones (a foot's tip is where the rig faces, heel to toe): (tip name
    `<bone>_tip`, the bone, the tip's rest in armature space). A bone with skinned vertices ends where
    they reach (`character.tip_from_vertices`); else at its tail, along its rest's Y axis (the axis
    Blender's glTF exporter keeps and the reader reads back); an end marker (`Foot.L_end`) gets none."""
    placement = Placement.of(armature)
    taken = {bone.name for bone in armature.bones}
    with_children = {bone.parent for bone in armature.ordered()}
    vertices = dict(armature.leaf_vertices)
    ends = armature.end_bones()
    heads: Dict[str, List[Vec3]] = {}  # a bone's end bones (left out): where they start, as the glTF reader has them
    for bone in armature.bones:
        if bone.name in ends:
            heads.setdefault(bone.parent, []).append(matrix_apply(TO_Y_UP, placement.to_world(_head(bone.matrix_local))))
    tips: List[Tuple[str, str, Vec3]] = []
    for bone in armature.ordered():
        if bone.name in with_children:
            continue
        head = matrix_apply(TO_Y_UP, placement.to_world(_head(bone.matrix_local)))
        toward = heads.get(bone.name)
        found = tip_from_vertices(head, vertices.get(bone.name, ()),
                                  None if not toward else tuple(sum(h[i] for h in toward) / len(toward) for i in range(3)))
        if found is not None:
            point = placement.to_armature(matrix_apply(FROM_Y_UP, found))
        elif bone.length > 0.0 and not is_end_name(bone.name):
            # Along the rest's Y axis rather than at `tail_local`: a short bone's tail, in float32 as
            # Blender keeps it, can be a few microradians off the axis its matrix (and an export) has.
            rotation = _rotation(bone.matrix_local)
            point = add(_head(bone.matrix_local), (rotation[0][1] * bone.length, rotation[1][1] * bone.length,
                                                   rotation[2][1] * bone.length))
        else:
            continue
        tip_name = bone.name + "_tip"
        while tip_name in taken:
            tip_name += "_"
        taken.add(tip_name)
        tips.append((tip_name, bone.name, point))
    return tips


def added_points(armature: Armature, added: Sequence[Tuple[str, str, Sequence[float]]]) -> List[Tuple[str, str, Vec3]]:
    """The joints the retarget added to the skeleton (`RetargetInfo.added_joints`: name, the bone, rest
    point in the glTF frame) as `tip_points` gives tips (rest point in armature space), so a front end
    samples them carried by their bones as it samples the tips."""
    placement = Placement.of(armature)
    return [(name, bone, placement.to_armature(matrix_apply(FROM_Y_UP, point))) for name, bone, point in added]


def _ordered_skeleton(name: str, names: Sequence[str], parents: Sequence[int], offsets, rotations) -> Skeleton:
    """A Skeleton whose joints are re-sorted parent before child (re-parenting loose top bones can put a
    child before its new parent)."""
    children: Dict[int, List[int]] = {}
    for joint, parent in enumerate(parents):
        children.setdefault(parent, []).append(joint)
    order: List[int] = []
    stack = list(children.get(-1, []))  # the one top joint left (the body's root)
    while stack:
        joint = stack.pop()
        order.append(joint)
        stack.extend(reversed(children.get(joint, [])))
    new = {old: i for i, old in enumerate(order)}
    return Skeleton(name, tuple(names[j] for j in order), tuple(new[parents[j]] if parents[j] >= 0 else -1 for j in order),
                    tuple(offsets[j] for j in order), tuple(rotations[j] for j in order))


Pose = Tuple[Quat, Vec3]  # world rotation (xyzw) and position, glTF frame


def world_poses(skeleton: Skeleton, motion: Motion, root_track: Optional[Sequence[Pose]] = None,
                root_bone: Optional[str] = None) -> List[List[Pose]]:
    """Per frame, the world pose of every joint of `skeleton` (the armature's): joints the motion drives
    (matched by name) from its FK, `root_bone` from `root_track` (position, rotation) per frame, the rest
    following their parents at rest. A driven bone turns from its own rest as the motion's joint turns
    from the motion skeleton's rest (the same thing when the motion was retargeted onto `skeleton`; a
    Kimodo motion on a box rig whose bones point at their children rests at identity instead)."""
    driven = {name: j for j, name in enumerate(motion.skeleton.joint_names)}
    globals_, positions = global_rotations_and_positions(motion)
    motion_rest = rest_global_rotations(motion.skeleton)
    bone_rest = rest_global_rotations(skeleton)
    rest_change = {name: quat_multiply(quat_conjugate(motion_rest[driven[name]]), bone_rest[j])
                   for j, name in enumerate(skeleton.joint_names) if name in driven}
    frames: List[List[Pose]] = []
    for frame in range(motion.frame_count):
        poses: List[Pose] = []
        for joint, parent in enumerate(skeleton.parents):
            name = skeleton.joint_names[joint]
            if name in driven:
                source = driven[name]
                rotation = quat_normalize(quat_multiply(globals_[frame][source], rest_change[name]))
                poses.append((rotation, positions[frame][source]))
            elif root_track is not None and name == root_bone:
                position, rotation = root_track[frame]
                poses.append((rotation, position))
            elif parent < 0:
                poses.append((skeleton.rest_rotations[joint], skeleton.rest_offsets[joint]))
            else:
                rotation, position = poses[parent]
                offset = quat_rotate(rotation, skeleton.rest_offsets[joint])
                poses.append((quat_normalize(quat_multiply(rotation, skeleton.rest_rotations[joint])),
                              (position[0] + offset[0], position[1] + offset[1], position[2] + offset[2])))
        frames.append(poses)
    return frames


Channel = Tuple[Vec3, Tuple[float, float, float, float]]  # location, rotation_quaternion (w, x, y, z)


def pose_channels(armature: Armature, skeleton: Skeleton, poses: Sequence[Sequence[Pose]]) -> Dict[str, List[Channel]]:
    """Bone name -> per frame (location, rotation_quaternion w x y z) that put each bone at `poses`
    (world poses of `skeleton`'s joints, glTF frame, as `world_poses` gives). Quaternion signs are kept
    continuous from frame to frame so Blender's per-channel interpolation takes the short way."""
    placement = Placement.of(armature)
    rests = {bone.name: bone for bone in armature.bones}
    # Armature space from the glTF frame: rotation R^-1 C^-1, then (p - t) / s for points.
    to_armature = quat_multiply(quat_conjugate(matrix_to_quat(placement.rotation)), matrix_to_quat(FROM_Y_UP))
    origin = quat_rotate(to_armature, matrix_apply(TO_Y_UP, placement.translation))
    inverse_scale = 1.0 / placement.scale
    # Per bone, its rest in armature space and relative to its Blender parent (the unposed bone's frame
    # is parent pose @ parent rest^-1 @ rest). Only loose top bones were hung from joint 0 in `skeleton`,
    # and those have no Blender parent. Tip joints are no bones: they get no channel.
    rest_rotations, rest_heads, parent_rests = [], [], []
    for name in skeleton.joint_names:
        rest = rests.get(name)
        if rest is None:
            rest_rotations.append(IDENTITY)
            rest_heads.append((0.0, 0.0, 0.0))
            parent_rests.append(None)
            continue
        rotation, head = matrix_to_quat(_rotation(rest.matrix_local)), _head(rest.matrix_local)
        rest_rotations.append(rotation)
        rest_heads.append(head)
        parent = rests.get(rest.parent)
        if parent is None:
            parent_rests.append(None)
            continue
        inverse_parent = quat_conjugate(matrix_to_quat(_rotation(parent.matrix_local)))
        parent_rests.append((quat_multiply(inverse_parent, rotation),
                             quat_rotate(inverse_parent, subtract(head, _head(parent.matrix_local)))))
    channels: Dict[str, List[Channel]] = {name: [] for name in skeleton.joint_names if name in rests}
    previous: List[Optional[Quat]] = [None] * skeleton.joint_count
    for frame_poses in poses:
        pose_rotations: List[Quat] = []
        pose_heads: List[Vec3] = []
        for joint, (rotation, position) in enumerate(frame_poses):
            pose_rotation = quat_multiply(to_armature, rotation)
            moved = quat_rotate(to_armature, position)
            head = ((moved[0] - origin[0]) * inverse_scale, (moved[1] - origin[1]) * inverse_scale,
                    (moved[2] - origin[2]) * inverse_scale)
            pose_rotations.append(pose_rotation)
            pose_heads.append(head)
            if skeleton.joint_names[joint] not in channels:
                continue
            relative = parent_rests[joint]
            if relative is None:
                frame_rotation, frame_head = rest_rotations[joint], rest_heads[joint]
            else:
                parent = skeleton.parents[joint]
                frame_rotation = quat_multiply(pose_rotations[parent], relative[0])
                frame_head = add(quat_rotate(pose_rotations[parent], relative[1]), pose_heads[parent])
            inverse = quat_conjugate(frame_rotation)
            x, y, z, w = quat_normalize(quat_multiply(inverse, pose_rotation))
            last = previous[joint]
            if last is not None and last[0] * x + last[1] * y + last[2] * z + last[3] * w < 0.0:
                x, y, z, w = -x, -y, -z, -w
            previous[joint] = (x, y, z, w)
            channels[skeleton.joint_names[joint]].append((quat_rotate(inverse, subtract(head, frame_head)), (w, x, y, z)))
    return channels
