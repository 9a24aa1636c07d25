"""Blender data in and out: an armature object as kimodo_rig's plain Armature, the box rig, the Action,
and bone positions read back from Blender's own evaluation. Everything here is bpy; the numbers come
from kimodo_rig."""
from array import array
from typing import Dict, List, Sequence

import bpy
from mathutils import Vector

from .kimodo_rig.formats.glb import _bone_boxes as bone_boxes  # step 1's boxes, so the rig looks like its .glb
from .kimodo_rig.model import Skeleton
from .kimodo_rig.ops.fk import rest_positions
from .kimodo_rig.retarget.armature import FROM_Y_UP, TO_Y_UP, Armature, ArmatureBone
from .kimodo_rig.rotations import matrix_apply

BOX_BONE_LENGTH = 0.05  # metres, bones without a child at a distance


def armature_of(obj) -> Armature:
    """The armature's rest as the core reads it: its bones (rest, length), its object's world matrix, and
    the vertices skinned to each bone without a child bone (where the core ends such a bone)."""
    bones = tuple(
        ArmatureBone(bone.name, bone.parent.name if bone.parent else "", tuple(tuple(row) for row in bone.matrix_local),
                     bone.length)
        for bone in obj.data.bones
    )
    leaves, carried = _skinned_vertices(obj)
    holding = tuple(sorted({bone for _, groups, bone in _moved_meshes(obj) if groups is None and bone}))
    return Armature(obj.name, bones, tuple(tuple(row) for row in obj.matrix_world), leaves, carried, holding)


def _skinned_vertices(obj):
    """What the meshes an Armature modifier of `obj` deforms give its bones, by the meshes' own vertex
    group weights: per bone whose child bones carry no vertex (none, or end bones), the (weight, rest
    position in the glTF frame) of every vertex it moves (where the core ends such a bone); per bone,
    (name, summed weight, weighted centre) (which bones the mesh is skinned to, for an armature of
    several top bones)."""
    bone_names = {bone.name for bone in obj.data.bones}
    found, sums = {}, {}
    for mesh_object, groups, _ in _moved_meshes(obj):
        if groups is None:
            continue  # a mesh hanging rigidly from a bone: no skin, as in the file it is exported to
        bone_groups = {index: name for index, name in groups.items() if name in bone_names}
        if not bone_groups:
            continue
        points = _world_points(mesh_object.matrix_world, _coordinates(mesh_object.data))
        for vertex, point in zip(mesh_object.data.vertices, points):
            for name, weight in _file_weights(vertex.groups, bone_groups):
                total = sums.setdefault(name, [0.0, 0.0, 0.0, 0.0])
                total[0] += weight
                for i in range(3):
                    total[i + 1] += weight * point[i]
                found.setdefault(name, []).append((weight, point))  # kept for the ending bones
    carried = tuple((name, w, (x / w, y / w, z / w)) for name, (w, x, y, z) in sums.items())
    ending = {bone.name for bone in obj.data.bones if not any(child.name in sums for child in bone.children)}
    return tuple((name, tuple(samples)) for name, samples in found.items() if name in ending), carried


def _file_weights(groups, bone_groups) -> List[tuple]:
    """A vertex's (bone, weight) as the file exported from it holds them and the command line reads them:
    its four largest bone weights, normalised (glTF's JOINTS_0/WEIGHTS_0, our FBX reader). Raw group weights
    put a leaf bone's tip elsewhere (the Quaternius dress: 0.3-1 mm)."""
    held = sorted(((g.weight, bone_groups[g.group]) for g in groups if g.group in bone_groups and g.weight > 0.0),
                  reverse=True)[:4]
    total = sum(w for w, _ in held)
    return [(name, w / total) for w, name in held] if total > 0.0 else []


def _blender(point) -> tuple:
    return tuple(matrix_apply(FROM_Y_UP, point))


def make_box_rig(context, skeleton: Skeleton, name: str, extra_root=None):
    """An armature of `skeleton` (bones from each joint towards its children's mean) and a mesh of one box
    per bone skinned wholly to it, as step 1's .glb holds. `extra_root`: (name, position) of a bone put
    above joint 0 (root motion on a root bone). Returns (armature object, mesh object)."""
    data = bpy.data.armatures.new(name)
    armature = bpy.data.objects.new(name, data)
    context.collection.objects.link(armature)
    world = rest_positions(skeleton)
    previous_active = context.view_layer.objects.active
    context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    edit_bones = []
    if extra_root is not None:
        root = data.edit_bones.new(extra_root[0])
        root.head = _blender(extra_root[1])
        root.tail = _blender((extra_root[1][0], extra_root[1][1] + BOX_BONE_LENGTH, extra_root[1][2]))
    for joint, joint_name in enumerate(skeleton.joint_names):
        bone = data.edit_bones.new(joint_name)
        head = world[joint]
        tips = [world[c] for c in skeleton.children(joint)
                if sum((world[c][i] - head[i]) ** 2 for i in range(3)) > 1e-6]
        if tips:
            tail = tuple(sum(t[i] for t in tips) / len(tips) for i in range(3))
        else:
            tail = (head[0], head[1] + BOX_BONE_LENGTH, head[2])
        bone.head, bone.tail = _blender(head), _blender(tail)
        parent = skeleton.parents[joint]
        if parent >= 0:
            bone.parent = edit_bones[parent]
        elif extra_root is not None:
            bone.parent = data.edit_bones[extra_root[0]]
        edit_bones.append(bone)
    bpy.ops.object.mode_set(mode="OBJECT")
    context.view_layer.objects.active = previous_active

    positions, _normals, joints, _indices = bone_boxes(skeleton)
    mesh = bpy.data.meshes.new(name + "_mesh")
    faces = [tuple(range(base, base + 4)) for base in range(0, len(positions), 4)]
    mesh.from_pydata([_blender(p) for p in positions], [], faces)
    mesh.update()
    mesh_object = bpy.data.objects.new(name + "_mesh", mesh)
    context.collection.objects.link(mesh_object)
    mesh_object.parent = armature
    for joint, joint_name in enumerate(skeleton.joint_names):
        group = mesh_object.vertex_groups.new(name=joint_name)
        group.add([v for v, j in enumerate(joints) if j == joint], 1.0, "REPLACE")
    modifier = mesh_object.modifiers.new("Armature", "ARMATURE")
    modifier.object = armature
    return armature, mesh_object


def _fcurve_maker(obj, action):
    """fcurves.new for the Blender at hand: Action.fcurves up to 4.3, a slot's channelbag from 4.4 on."""
    animation = obj.animation_data_create()
    animation.action = action
    if not hasattr(action, "slots"):
        def legacy(data_path, index, group):
            return action.fcurves.new(data_path, index=index, action_group=group)
        return legacy
    from bpy_extras import anim_utils

    slot = animation.action_slot
    if slot is None:
        slot = action.slots.new(id_type="OBJECT", name=obj.name)
        animation.action_slot = slot
    channelbag = anim_utils.action_ensure_channelbag_for_slot(action, slot)
    groups: Dict[str, object] = {}

    def layered(data_path, index, group):
        fcurve = channelbag.fcurves.new(data_path, index=index)
        if group not in groups:
            groups[group] = channelbag.groups.new(group)
        fcurve.group = groups[group]
        return fcurve
    return layered


def key_action(obj, name: str, channels, first_frame: int):
    """A new Action on `obj` with, per bone, location, rotation_quaternion and scale keys at first_frame,
    first_frame + 1, ... (linear, as glTF samples are). Every channel is keyed, so the Action holds the
    whole pose: NLA strips below it (a character's own clips) cannot move a bone it leaves unkeyed."""
    action = bpy.data.actions.new(name)
    new_fcurve = _fcurve_maker(obj, action)
    for bone_name, frames in channels.items():
        pose_bone = obj.pose.bones[bone_name]
        pose_bone.rotation_mode = "QUATERNION"
        path = 'pose.bones["{}"]'.format(bpy.utils.escape_identifier(bone_name))
        curves = [(path + ".location", i, [p[i] for p, _ in frames]) for i in range(3)]
        curves += [(path + ".rotation_quaternion", i, [q[i] for _, q in frames]) for i in range(4)]
        curves += [(path + ".scale", i, [1.0] * len(frames)) for i in range(3)]
        for data_path, index, values in curves:
            fcurve = new_fcurve(data_path, index, bone_name)
            points = fcurve.keyframe_points
            points.add(len(values))
            points.foreach_set("co", [c for f, v in enumerate(values) for c in (first_frame + f, v)])
            for point in points:
                point.interpolation = "LINEAR"
            fcurve.update()
    return action


def sample_heads(context, obj, frames: Sequence[int], names: Sequence[str], tips=()) -> List[Dict[str, tuple]]:
    """Per scene frame, world bone heads of `names` as Blender evaluates them, in the glTF frame, and
    each of `tips` ((tip name, bone, rest point in armature space): `armature.tip_points`) carried
    rigidly by its bone's evaluated pose."""
    scene = context.scene
    current = scene.frame_current
    bones = obj.pose.bones
    carried = [(name, bone, obj.data.bones[bone].matrix_local.inverted() @ Vector(point)) for name, bone, point in tips]
    samples = []
    for frame in frames:
        scene.frame_set(frame)
        world = obj.matrix_world
        sample = {name: tuple(matrix_apply(TO_Y_UP, tuple(world @ bones[name].head))) for name in names if name in bones}
        for name, bone, local in carried:
            sample[name] = tuple(matrix_apply(TO_Y_UP, tuple(world @ bones[bone].matrix @ local)))
        samples.append(sample)
    scene.frame_set(current)
    return samples


def remove(objects=(), actions=(), datablocks=()) -> None:
    """Delete what an import made before it failed."""
    for obj in objects:
        if obj is not None:
            bpy.data.objects.remove(obj, do_unlink=True)
    for action in actions:
        if action is not None:
            bpy.data.actions.remove(action)
    for block in datablocks:
        if block is None:
            continue
        if isinstance(block, bpy.types.Armature):
            bpy.data.armatures.remove(block)
        elif isinstance(block, bpy.types.Mesh):
            bpy.data.meshes.remove(block)


def _carrying_bone(mesh_object, obj) -> str:
    """The bone of `obj` that carries `mesh_object` rigidly: the one it, or an object it hangs from (an
    empty grouping a robot's torso plates, as Blender's glTF importer makes them), is parented to; ""
    when none."""
    child, parent = mesh_object, mesh_object.parent
    while parent is not None:
        if parent == obj:
            return child.parent_bone if child.parent_type == "BONE" else ""
        child, parent = parent, parent.parent
    return ""


def _moved_meshes(obj):
    """(mesh object, its vertex groups by index or None, parent bone or "") for every mesh `obj` moves:
    deformed by an Armature modifier on it, or hanging from one of its bones (parented to it, or to an
    object parented to it)."""
    parts = []
    for mesh_object in bpy.context.scene.objects:
        if mesh_object.type != "MESH":
            continue
        if any(m.type == "ARMATURE" and m.object == obj for m in mesh_object.modifiers):
            parts.append((mesh_object, {g.index: g.name for g in mesh_object.vertex_groups}, ""))
            continue
        bone = _carrying_bone(mesh_object, obj)
        if bone:
            parts.append((mesh_object, None, bone))
    return parts


def scale_carrying_meshes(obj):
    """The armature object's own scale (its largest) when it is not 1 and one of its bones carries a mesh
    (parented to the bone); else None."""
    scale = max(abs(s) for s in obj.scale)
    if abs(scale - 1.0) <= 1e-6 or not any(bone for _, _, bone in _moved_meshes(obj)):
        return None
    return scale


def _world_points(matrix, co) -> List[tuple]:
    """Blender points (a flat x, y, z list) through a world matrix, in the glTF frame."""
    m = [list(row) for row in matrix]
    points = []
    for k in range(0, len(co), 3):
        x, y, z = co[k], co[k + 1], co[k + 2]
        bx = m[0][0] * x + m[0][1] * y + m[0][2] * z + m[0][3]
        by = m[1][0] * x + m[1][1] * y + m[1][2] * z + m[1][3]
        bz = m[2][0] * x + m[2][1] * y + m[2][2] * z + m[2][3]
        points.append((bx, bz, -by))  # Blender (x, y, z) is glTF (x, z, -y)
    return points


def _coordinates(mesh) -> array:
    co = array("f", [0.0]) * (len(mesh.vertices) * 3)
    mesh.vertices.foreach_get("co", co)
    return co


def bind_mesh(context, obj):
    """The character's vertices at the armature's rest, as the core's retarget takes them (its soles):
    [((x, y, z) glTF frame, {bone name: weight})], and for each where it is in Blender ((mesh object,
    vertex index)), so the report's points can be sampled later. Meshes parented to a bone are wholly on
    that bone. Empty when the armature moves no mesh (the core then stands it on its joints)."""
    mesh_vertices, where = [], []
    saved = obj.data.pose_position
    obj.data.pose_position = "REST"
    context.view_layer.update()
    try:
        for mesh_object, groups, bone in _moved_meshes(obj):
            points = _world_points(mesh_object.matrix_world, _coordinates(mesh_object.data))
            for vertex, point in zip(mesh_object.data.vertices, points):
                if groups is None:
                    weights = {bone: 1.0}
                else:
                    weights = {groups[g.group]: g.weight for g in vertex.groups if g.group in groups and g.weight > 0.0}
                mesh_vertices.append((point, weights))
                where.append((mesh_object, vertex.index))
    finally:
        obj.data.pose_position = saved
        context.view_layer.update()
    return mesh_vertices, where


def sample_vertices(context, frames: Sequence[int], picks: Dict[str, List[tuple]]) -> Dict[str, List[List[tuple]]]:
    """Per side and scene frame, the deformed world positions (glTF frame) Blender evaluates for the
    picked (mesh object, vertex index) pairs of `bind_mesh`, in their order."""
    scene = context.scene
    current = scene.frame_current
    objects = {mesh_object for side in picks.values() for mesh_object, _ in side}
    samples: Dict[str, List[List[tuple]]] = {side: [] for side in picks}
    for frame in frames:
        scene.frame_set(frame)
        depsgraph = context.evaluated_depsgraph_get()
        deformed = {}
        for mesh_object in objects:
            evaluated = mesh_object.evaluated_get(depsgraph)
            deformed[mesh_object] = (evaluated.matrix_world.copy(), _coordinates(evaluated.to_mesh()))
            evaluated.to_mesh_clear()
        for side, pairs in picks.items():
            samples[side].append([_world_points(deformed[mesh_object][0], deformed[mesh_object][1][3 * index:3 * index + 3])[0]
                                  for mesh_object, index in pairs])
    scene.frame_set(current)
    return samples
